/*
 * test_flash_gpu: the bf16 flash attention (kernels/kern_flash.cu) against
 * a float64 reference of kern.h's attention contract on the CPU, on random
 * inputs and shapes: odd lengths that are no multiple of any tile, sq != sk,
 * GQA ratios 1, 4 and 8, head dims 64 and 128, and position sets of the
 * runtime's uses (a whole causal sequence, a context-parallel chunk pair,
 * ring blocks with rows that attend nothing, scrambled positions).
 *
 * The reference reads the same bf16 values (as doubles) and computes
 * exactly. Tolerances, normwise relative (||gpu - ref|| / ||ref||):
 *  - o, dq, dk, dv: 1e-2. bf16 keeps 8 significant bits, so one rounding
 *    costs up to 2^-9 = 2e-3 relative; the kernels round P (forward), P and
 *    dS (backward) and o to bf16 once each, and the backward reads the
 *    forward's rounded o; a few such roundings, partly cancelling over the
 *    sums, stay well inside 1e-2 (bf16 operands usually land between
 *    1e-3 and 1e-2 normwise).
 *  - lse: max |gpu - ref| <= 1e-3: it is computed from fp32 scores of exact
 *    bf16 products (error ~hd * 2^-24 |s|) and fp32 exponentials.
 * Every output element is poisoned (NaN) before the forward and must be
 * written; rows that attend no key must give o = 0 and lse = -inf exactly.
 * The gradients start from random values and must equal them plus the
 * gradient (kern_attn_bwd accumulates).
 *
 * The forward runs through every kernel (kern_flash_fwd_with): mma.sync
 * (KERN_FLASH_MMA, whose o and lse the backward reads) and, on a compute
 * capability 9.0 device, wgmma in three schedules (wg, wgp and the
 * warp-specialized ws), each against the reference with the tolerances
 * above, and each wgmma one against mma.sync (ws against wgp too):
 *  - o: normwise 5e-3. Both round P to bf16, but at different running
 *    maxima (key tiles of 64 and 128), and both round o to bf16: where P's
 *    rounding moves an fp32 o across a bf16 rounding boundary the two
 *    differ by one bf16 step, 2^-8 = 3.9e-3 relative; only a few elements
 *    do, so the normwise difference stays below one step.
 *  - lse: |wg - mma| <= 1e-5 max(1, |lse|): the scores are fp32 dot
 *    products summed in another order (~1e-7 relative) and the softmax
 *    sums run in another order with other rescalings (~1e-6 relative),
 *    which the logarithm turns into ~1e-6 absolute; empty rows -inf in
 *    both.
 * kern_flash_fwd under GTPLAN_FLASH=X must give kernel X's bits
 * (X = mma, wg, wgp, ws; mma.sync's where wgmma is not available).
 * Before the attention cases, the wgmma products and the ws backward's
 * machinery are checked alone (tests/gpu/flash_probe_gpu.c); the ws
 * forward's machinery has its own test (tests/gpu/test_flash_ws_gpu.c).
 *
 * The backward runs from the same initial gradients through
 * kern_flash_bwd_with's mma.sync, kern_flash_bwd under GTPLAN_FLASH_BWD=mma
 * and, on compute capability 9.0, kern_flash_bwd_with's wg, wgp and
 * kern_flash_bwd
 * under GTPLAN_FLASH_BWD=wg and wgp (elsewhere kern_flash_bwd's default),
 * each against the reference; the wgmma ones also against mma.sync (dq=,
 * dk=, dv=), normwise 1e-3: both round P and dS to bf16 at the same
 * points (query tiles of 64, key blocks of 128) from the same fp32 values
 * up to summation order (~1e-6 relative), so only an element that close
 * to a bf16 rounding boundary rounds the other way (2^-8), and dq's
 * atomics add in another order: ~1e-4 normwise at most, where a layout
 * mistake errs by the gradient's own size.
 * The warp-specialized backward (kern_flash_bwd_with's ws, and kern_flash_bwd
 * under GTPLAN_FLASH_BWD=ws) runs the same way on
 * compute capability 9.0, against the reference and against mma.sync
 * with the same tolerances: it rounds P and dS to bf16 from the same
 * values, element by element, whatever its query tile (128 at hd 64), and
 * sums dq in yet another order. Each run is followed by
 * kern_flash_ws_bwd_check (a barrier wait that gave up is a failure, and
 * ws is not run again); skipped if one of its probes failed.
 *
 * Prints one line per case and `RESULT passed failed`; exits 1 on a failure,
 * 77 without a GPU. `make test-gpu` runs it.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash_probe_gpu.h"
#include "gpu_host.h"
#include "kern_flash.h"

#define TOL_REL 1e-2
#define TOL_LSE 1e-3
#define TOL_PAIR_O 5e-3
#define TOL_PAIR_LSE 1e-5
#define TOL_PAIR_GRAD 1e-3

static struct kern_ctx G;
static int have_wg; /* the wgmma kernels run on this device */
static int have_ws; /* and the ws backward's probes passed */

/* One case's host data; f* are the bf16 inputs as floats. */
struct fcase {
	const char *name;
	struct kern_attn a;
	int32_t *qpos, *kpos;
	float *fq, *fk, *fv, *fdo;
	uint16_t *q, *k, *v, *dout;
};

static long long nq(const struct kern_attn *a)
{
	return a->batch * a->sq * a->nh * a->hd;
}

static long long nk(const struct kern_attn *a)
{
	return a->batch * a->sk * a->nkv * a->hd;
}

/* Scores of row (b, i, h) against every key, masked ones -inf; returns
 * the max (-inf when none is attended). */
static double ref_scores(const struct fcase *c, long long b, long long i,
			 long long h, double *s)
{
	const struct kern_attn *a = &c->a;
	long long g = h / (a->nh / a->nkv), hd = a->hd;
	const float *q = c->fq + ((b * a->sq + i) * a->nh + h) * hd;
	double mx = -INFINITY;

	for (long long j = 0; j < a->sk; j++) {
		const float *k = c->fk + ((b * a->sk + j) * a->nkv + g) * hd;
		double d = 0.0;

		if (c->kpos[j] > c->qpos[i]) {
			s[j] = -INFINITY;
			continue;
		}
		for (long long x = 0; x < hd; x++)
			d += (double)q[x] * k[x];
		s[j] = d * a->scale;
		if (s[j] > mx)
			mx = s[j];
	}
	return mx;
}

/* o, lse of kern_attn_fwd's contract in double; p is scratch [sk]. */
static void ref_fwd(const struct fcase *c, double *o, double *lse, double *p)
{
	const struct kern_attn *a = &c->a;
	long long hd = a->hd;

	for (long long b = 0; b < a->batch; b++)
		for (long long i = 0; i < a->sq; i++)
			for (long long h = 0; h < a->nh; h++) {
				long long g = h / (a->nh / a->nkv);
				double mx = ref_scores(c, b, i, h, p), sum = 0.0;
				double *out = o + ((b * a->sq + i) * a->nh + h) * hd;

				for (long long j = 0; j < a->sk; j++)
					sum += p[j] = mx == -INFINITY ? 0.0 : exp(p[j] - mx);
				memset(out, 0, (size_t)hd * sizeof(double));
				for (long long j = 0; j < a->sk && sum > 0.0; j++) {
					const float *v = c->fv + ((b * a->sk + j) * a->nkv + g) * hd;

					for (long long x = 0; x < hd; x++)
						out[x] += p[j] / sum * v[x];
				}
				lse[(b * a->nh + h) * a->sq + i] =
					sum > 0.0 ? mx + log(sum) : -INFINITY;
			}
}

/* Gradients of one row (b, i, h) into dq, dk, dv (double); o and lse are
 * the reference's; p is scratch [sk]. */
static void ref_bwd_row(const struct fcase *c, const double *o,
			const double *lse, long long b, long long i,
			long long h, double *dq, double *dk, double *dv,
			double *p)
{
	const struct kern_attn *a = &c->a;
	long long hd = a->hd, g = h / (a->nh / a->nkv);
	long long qi = ((b * a->sq + i) * a->nh + h) * hd;
	double l = lse[(b * a->nh + h) * a->sq + i], dsum = 0.0;

	if (l == -INFINITY)
		return;
	ref_scores(c, b, i, h, p);
	for (long long x = 0; x < hd; x++)
		dsum += (double)c->fdo[qi + x] * o[qi + x];
	for (long long j = 0; j < a->sk; j++) {
		long long kj = ((b * a->sk + j) * a->nkv + g) * hd;
		double pj = exp(p[j] - l), dp = 0.0, ds;

		if (p[j] == -INFINITY)
			continue;
		for (long long x = 0; x < hd; x++)
			dp += (double)c->fdo[qi + x] * c->fv[kj + x];
		ds = pj * (dp - dsum);
		for (long long x = 0; x < hd; x++) {
			dv[kj + x] += pj * c->fdo[qi + x];
			dq[qi + x] += a->scale * ds * c->fk[kj + x];
			dk[kj + x] += a->scale * ds * c->fq[qi + x];
		}
	}
}

/* The forward's outputs against the reference: o normwise, lse absolute,
 * empty rows exact. */
static void check_fwd(const struct fcase *c, const char *name,
		      const uint16_t *o, const float *lse, const double *ro,
		      const double *rl)
{
	const struct kern_attn *a = &c->a;
	long long n = nq(a), nl = a->batch * a->nh * a->sq;
	double *go = gh_malloc((size_t)n * sizeof(double)), lerr = 0.0;
	int empty_ok = 1;

	for (long long i = 0; i < n; i++)
		go[i] = gh_from_bf16(o[i]);
	for (long long i = 0; i < nl; i++) {
		if (rl[i] == -INFINITY) {
			empty_ok &= lse[i] == -INFINITY;
			continue;
		}
		if (!(fabs(lse[i] - rl[i]) <= lerr))
			lerr = isnan(lse[i]) ? NAN : fabs(lse[i] - rl[i]);
		if (isnan(lerr))
			break;
	}
	for (long long i = 0; i < n; i++)
		if (isnan(go[i]))
			empty_ok = 0;
	tf_check("o", name, gh_relerr(go, ro, n), TOL_REL);
	tf_check("lse", name, lerr, TOL_LSE);
	tf_check("-inf", name, empty_ok ? 0.0 : 1.0, 0.0);
	free(go);
}

/* The wgmma forward's o and lse against the mma.sync forward's. */
static void check_pair(const struct fcase *c, const char *name,
		       const uint16_t *ow, const float *lw,
		       const uint16_t *om, const float *lm)
{
	const struct kern_attn *a = &c->a;
	long long n = nq(a), nl = a->batch * a->nh * a->sq;
	double *gw = gh_malloc((size_t)n * sizeof(double));
	double *gm = gh_malloc((size_t)n * sizeof(double)), lerr = 0.0;

	for (long long i = 0; i < n; i++) {
		gw[i] = gh_from_bf16(ow[i]);
		gm[i] = gh_from_bf16(om[i]);
	}
	for (long long i = 0; i < nl && !isnan(lerr); i++) {
		double e;

		if (lm[i] == -INFINITY || lw[i] == -INFINITY) {
			if (lm[i] != lw[i])
				lerr = NAN;
			continue;
		}
		e = fabs((double)lw[i] - lm[i]) / fmax(1.0, fabs(lm[i]));
		if (!(e <= lerr))
			lerr = isnan(e) ? NAN : e;
	}
	tf_check("o=", name, gh_relerr(gw, gm, n), TOL_PAIR_O);
	tf_check("lse=", name, lerr, TOL_PAIR_LSE);
	free(gw);
	free(gm);
}

/* (gpu - init) against the reference gradient. */
static void check_grad(const char *what, const char *name, const float *gpu,
		       const float *init, const double *ref, long long n)
{
	double *d = gh_malloc((size_t)n * sizeof(double));

	for (long long i = 0; i < n; i++)
		d[i] = (double)gpu[i] - (double)init[i];
	tf_check(what, name, gh_relerr(d, ref, n), TOL_REL);
	free(d);
}

struct dev {
	uint16_t *q, *k, *v, *o, *dout;
	float *lse, *dsum, *dq, *dk, *dv;
	int32_t *qpos, *kpos;
};

static void dev_free(struct dev *d)
{
	void *all[] = { d->q, d->k, d->v, d->o, d->dout, d->lse, d->dsum,
			d->dq, d->dk, d->dv, d->qpos, d->kpos };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		kern_free(&G, all[i]);
}

/* The forward by kernel kind into NaN-poisoned device buffers *od, *ld
 * (made here), copied back into o and lse. */
static void run_fwd(const struct fcase *c, struct dev *d,
		    enum kern_flash_kind kind, const char *who, uint16_t **od,
		    float **ld, uint16_t *o, float *lse)
{
	const struct kern_attn *a = &c->a;
	long long nl = a->batch * a->nh * a->sq;
	int rc;

	memset(o, 0xff, (size_t)nq(a) * 2); /* NaN poison */
	for (long long i = 0; i < nl; i++)
		lse[i] = NAN;
	*od = gh_dev(&G, o, (size_t)nq(a) * 2);
	*ld = gh_dev(&G, lse, (size_t)nl * sizeof(float));
	rc = kern_flash_fwd_with(kind, kern_stream(&G), a, d->q, d->k, d->v,
				 d->qpos, d->kpos, *od, *ld);
	if (rc)
		gh_die(rc, who);
	gh_down(&G, o, *od, (size_t)nq(a) * 2);
	gh_down(&G, lse, *ld, (size_t)nl * sizeof(float));
}

/* kern_flash_fwd under GTPLAN_FLASH=val must give the bits of o, lse. */
static void check_switch(const struct fcase *c, struct dev *d,
			 const char *val, const uint16_t *o, const float *lse)
{
	const struct kern_attn *a = &c->a;
	size_t no = (size_t)nq(a) * 2;
	size_t nl = (size_t)(a->batch * a->nh * a->sq) * sizeof(float);
	uint16_t *o2 = gh_malloc(no), *od;
	float *l2 = gh_malloc(nl), *ld;
	char name[96];

	setenv("GTPLAN_FLASH", val, 1);
	run_fwd(c, d, KERN_FLASH_AUTO, "kern_flash_fwd", &od, &ld, o2, l2);
	unsetenv("GTPLAN_FLASH");
	snprintf(name, sizeof(name), "%s GTPLAN_FLASH=%s", c->name, val);
	tf_check("bits", name, memcmp(o, o2, no) || memcmp(lse, l2, nl), 0.0);
	kern_free(&G, od);
	kern_free(&G, ld);
	free(o2);
	free(l2);
}

/* The wgmma forwards (kernels/kern_flash.h) as GTPLAN_FLASH names them. */
static const struct {
	const char *name;
	enum kern_flash_kind kind;
} wg_kernels[] = { { "wg", KERN_FLASH_WG }, { "wgp", KERN_FLASH_WGP },
		   { "ws", KERN_FLASH_WS } };

/* The wgmma forwards against the reference and the mma.sync one (om, lm),
 * and the environment switch between them (mma.sync for every value where
 * wgmma is not available); ws also against wgp ("ws~wgp", TOL_PAIR_*:
 * the same tiles, products and maxima; P's exponent is one FFMA there). */
static void run_wg(const struct fcase *c, struct dev *d, const uint16_t *om,
		   const float *lm, const double *ro, const double *rl)
{
	const struct kern_attn *a = &c->a;
	long long nl = a->batch * a->nh * a->sq;
	size_t no = (size_t)nq(a) * 2, nb = (size_t)nl * 4;
	uint16_t *o = gh_malloc(no), *op = gh_malloc(no), *od;
	float *lse = gh_malloc(nb), *lp = gh_malloc(nb), *ld;
	char name[96];

	check_switch(c, d, "mma", om, lm);
	for (size_t i = 0; i < sizeof(wg_kernels) / sizeof(wg_kernels[0]); i++) {
		if (!have_wg) {
			check_switch(c, d, wg_kernels[i].name, om, lm);
			continue;
		}
		snprintf(name, sizeof(name), "%s %s", c->name,
			 wg_kernels[i].name);
		run_fwd(c, d, wg_kernels[i].kind, name, &od, &ld, o, lse);
		check_fwd(c, name, o, lse, ro, rl);
		check_pair(c, name, o, lse, om, lm);
		check_switch(c, d, wg_kernels[i].name, o, lse);
		snprintf(name, sizeof(name), "%s ws~wgp", c->name);
		if (!strcmp(wg_kernels[i].name, "ws"))
			check_pair(c, name, o, lse, op, lp);
		memcpy(op, o, no); memcpy(lp, lse, nb);
		kern_free(&G, od); kern_free(&G, ld);
	}
	free(o); free(lse); free(op); free(lp);
}

/* The backward by kernel kind (tf_bwd) on gradients that start at init
 * (host), results into out (host); device gradients and dsum are made and
 * freed here. */
static void run_bwd(const struct fcase *c, struct dev *d,
		    enum kern_flash_kind kind, const char *who, float *init[3],
		    float *out[3])
{
	const struct kern_attn *a = &c->a;
	long long n[3] = { nq(a), nk(a), nk(a) };
	float **dd[3] = { &d->dq, &d->dk, &d->dv };
	int rc;

	for (int t = 0; t < 3; t++)
		*dd[t] = gh_dev(&G, init[t], (size_t)n[t] * sizeof(float));
	d->dsum = gh_dev(&G, NULL, (size_t)(a->batch * a->nh * a->sq + 1) * 4);
	rc = tf_bwd(kind, kern_stream(&G), a, d->q, d->k, d->v, d->o, d->lse,
		    d->dout, d->qpos, d->kpos, d->dsum, d->dq, d->dk, d->dv);
	if (rc)
		gh_die(rc, who);
	for (int t = 0; t < 3; t++) {
		gh_down(&G, out[t], *dd[t], (size_t)n[t] * sizeof(float));
		kern_free(&G, *dd[t]);
		*dd[t] = NULL;
	}
	kern_free(&G, d->dsum);
	d->dsum = NULL;
}

/* The backward by kind (under GTPLAN_FLASH_BWD=env unless NULL) from init
 * into out, checked as "<case><label>" against the reference gradients
 * ref and, unless NULL, against om: another kernel's from the same init
 * (dq=, dk=, dv=). */
static void bwd_check(const struct fcase *c, struct dev *d,
		      enum kern_flash_kind kind, const char *who,
		      const char *env, const char *label,
		      float *init[3], double *ref[3], float *om[3],
		      float *out[3])
{
	const struct kern_attn *a = &c->a;
	long long n[3] = { nq(a), nk(a), nk(a) };
	static const char *what[3] = { "dq", "dk", "dv" };
	static const char *pair[3] = { "dq=", "dk=", "dv=" };
	char name[96];

	snprintf(name, sizeof(name), "%s%s", c->name, label);
	if (env)
		setenv("GTPLAN_FLASH_BWD", env, 1);
	run_bwd(c, d, kind, who, init, out);
	unsetenv("GTPLAN_FLASH_BWD");
	for (int t = 0; t < 3; t++) {
		double *gw = gh_malloc((size_t)n[t] * sizeof(double));
		double *gm = gh_malloc((size_t)n[t] * sizeof(double));

		check_grad(what[t], name, out[t], init[t], ref[t], n[t]);
		for (long long i = 0; i < n[t] && om; i++) {
			gw[i] = (double)out[t][i] - init[t][i];
			gm[i] = (double)om[t][i] - init[t][i];
		}
		if (om)
			tf_check(pair[t], name, gh_relerr(gw, gm, n[t]),
			      TOL_PAIR_GRAD);
		free(gw); free(gm);
	}
}

static void run_case(struct fcase *c)
{
	const struct kern_attn *a = &c->a;
	long long n = nq(a), m = nk(a), nl = a->batch * a->nh * a->sq;
	double *ro = gh_malloc((size_t)n * 8), *rl = gh_malloc((size_t)nl * 8);
	double *rq = gh_malloc((size_t)n * 8), *rk = gh_malloc((size_t)m * 8);
	double *rv = gh_malloc((size_t)m * 8), *p = gh_malloc((size_t)(a->sk + 1) * 8);
	uint16_t *o = gh_malloc((size_t)n * 2);
	float *lse = gh_malloc((size_t)nl * 4), *init[3], *om[3], *out[3];
	double *ref[3] = { rq, rk, rv };
	long long ng[3] = { n, m, m };
	struct dev d;

	c->q = gh_rand_bf16(n, 1.7f, &c->fq);
	c->k = gh_rand_bf16(m, 1.7f, &c->fk);
	c->v = gh_rand_bf16(m, 1.7f, &c->fv);
	c->dout = gh_rand_bf16(n, 1.0f, &c->fdo);
	memset(&d, 0, sizeof(d));
	d.q = gh_dev(&G, c->q, (size_t)n * 2);
	d.k = gh_dev(&G, c->k, (size_t)m * 2);
	d.v = gh_dev(&G, c->v, (size_t)m * 2);
	d.dout = gh_dev(&G, c->dout, (size_t)n * 2);
	d.qpos = gh_dev(&G, c->qpos, (size_t)(a->sq + 1) * 4);
	d.kpos = gh_dev(&G, c->kpos, (size_t)(a->sk + 1) * 4);
	run_fwd(c, &d, KERN_FLASH_MMA, "kern_flash_fwd_with(mma)", &d.o,
		&d.lse, o, lse);
	ref_fwd(c, ro, rl, p);
	check_fwd(c, c->name, o, lse, ro, rl);
	run_wg(c, &d, o, lse, ro, rl);
	for (int t = 0; t < 3; t++) {
		init[t] = gh_malloc((size_t)ng[t] * sizeof(float));
		om[t] = gh_malloc((size_t)ng[t] * sizeof(float));
		out[t] = gh_malloc((size_t)ng[t] * sizeof(float));
		for (long long i = 0; i < ng[t]; i++)
			init[t][i] = gh_uniform();
	}
	for (long long b = 0; b < a->batch; b++)
		for (long long i = 0; i < a->sq; i++)
			for (long long h = 0; h < a->nh; h++)
				ref_bwd_row(c, ro, rl, b, i, h, rq, rk, rv, p);
	bwd_check(c, &d, KERN_FLASH_MMA, "kern_flash_bwd_with(mma)", NULL, "",
		  init, ref, NULL, om);
	bwd_check(c, &d, KERN_FLASH_AUTO, "kern_flash_bwd", "mma",
		  " GTPLAN_FLASH_BWD=mma", init, ref, NULL, out);
	for (int i = 0; i < 2 && have_wg; i++) {
		bwd_check(c, &d, i ? KERN_FLASH_WGP : KERN_FLASH_WG,
			  "kern_flash_bwd_with(wg(p))", NULL,
			  i ? " bwd-wgp" : " bwd-wg", init, ref, om, out);
		bwd_check(c, &d, KERN_FLASH_AUTO, "kern_flash_bwd",
			  i ? "wgp" : "wg", i ? " GTPLAN_FLASH_BWD=wgp" :
			  " GTPLAN_FLASH_BWD=wg", init, ref, NULL, out);
	}
	if (have_ws && !tf_ws_broken)
		bwd_check(c, &d, KERN_FLASH_WS, "kern_flash_bwd_with(ws)", NULL,
			  " bwd-ws", init, ref, om, out);
	if (have_ws && !tf_ws_broken)
		bwd_check(c, &d, KERN_FLASH_AUTO, "kern_flash_bwd", "ws",
			  " GTPLAN_FLASH_BWD=ws", init, ref, om, out);
	if (!have_wg) {
		bwd_check(c, &d, KERN_FLASH_AUTO, "kern_flash_bwd", NULL,
			  " default", init, ref, NULL, out);
	}
	for (int t = 0; t < 3; t++) {
		free(init[t]); free(om[t]); free(out[t]);
	}
	dev_free(&d);
	{
		void *host[] = { c->q, c->k, c->v, c->dout, c->fq, c->fk,
				 c->fv, c->fdo, ro, rl, rq, rk, rv, p, o, lse };

		for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
			free(host[i]);
	}
}

/* Positions: `first` + i, or two runs (a context-parallel rank's chunks
 * i and 2cp-1-i: [lo, lo + n/2) and [hi, hi + n - n/2)). */
static int32_t *pos_run(long long n, int32_t first)
{
	int32_t *p = gh_malloc((size_t)(n + 1) * 4);

	for (long long i = 0; i < n; i++)
		p[i] = first + (int32_t)i;
	return p;
}

static int32_t *pos_two(long long n, int32_t lo, int32_t hi)
{
	int32_t *p = gh_malloc((size_t)(n + 1) * 4);

	for (long long i = 0; i < n; i++)
		p[i] = i < n / 2 ? lo + (int32_t)i : hi + (int32_t)(i - n / 2);
	return p;
}

/* Random positions in [0, range), any order, repeats allowed. */
static int32_t *pos_rand(long long n, int32_t range)
{
	int32_t *p = gh_malloc((size_t)(n + 1) * 4);

	for (long long i = 0; i < n; i++)
		p[i] = (int32_t)((gh_uniform() + 1.0f) * 0.5f * (float)range);
	return p;
}

static void one(const char *name, long long batch, long long sq,
		long long sk, long long nh, long long nkv, long long hd,
		int32_t *qpos, int32_t *kpos)
{
	struct fcase c;

	memset(&c, 0, sizeof(c));
	c.name = name;
	c.a.batch = batch;
	c.a.sq = sq;
	c.a.sk = sk;
	c.a.nh = nh;
	c.a.nkv = nkv;
	c.a.hd = hd;
	c.a.scale = (float)(1.0 / sqrt((double)hd));
	c.qpos = qpos;
	c.kpos = kpos;
	run_case(&c);
	free(qpos);
	free(kpos);
}

int main(void)
{
	gh_init(&G);
	have_wg = tf_probe_wg(&G);
	have_ws = have_wg && tf_probe_ws(&G);
	/* whole causal sequences: odd lengths, GQA 1, 4, 8, both head dims */
	one("causal-77-mha-hd64", 2, 77, 77, 4, 4, 64,
	    pos_run(77, 0), pos_run(77, 0));
	one("causal-200-gqa4-hd128", 1, 200, 200, 8, 2, 128,
	    pos_run(200, 0), pos_run(200, 0));
	one("causal-257-gqa8-hd64", 2, 257, 257, 8, 1, 64,
	    pos_run(257, 0), pos_run(257, 0));
	one("causal-1000-mha-hd128", 1, 1000, 1000, 2, 2, 128,
	    pos_run(1000, 0), pos_run(1000, 0));
	one("causal-333-gqa4-hd64", 1, 333, 333, 4, 1, 64,
	    pos_run(333, 0), pos_run(333, 0));
	/* a CP rank's chunk pair (cp = 2, 512 tokens: chunks 0 and 3) */
	one("cp-pair-256-gqa4-hd128", 1, 256, 256, 4, 1, 128,
	    pos_two(256, 0, 384), pos_two(256, 0, 384));
	/* ring blocks: queries of chunks 1, 2 against keys of chunks 0, 3 */
	one("ring-block-hd128", 2, 256, 256, 8, 1, 128,
	    pos_two(256, 128, 256), pos_two(256, 0, 384));
	/* rows before every key: o = 0, lse = -inf */
	one("ring-empty-rows-hd64", 1, 150, 190, 4, 4, 64,
	    pos_run(150, 0), pos_run(190, 100));
	/* one query row, decode-like; keys in a later block */
	one("single-row-hd128", 3, 1, 300, 8, 8, 128,
	    pos_run(1, 299), pos_run(300, 0));
	one("scrambled-gqa8-hd128", 1, 180, 210, 8, 1, 128,
	    pos_rand(180, 200), pos_rand(210, 200));
	one("scrambled-gqa4-hd64", 2, 99, 130, 8, 2, 64,
	    pos_rand(99, 120), pos_rand(130, 120));
	kern_release(&G);
	printf("RESULT %d %d\n", tf_pass, tf_fail);
	return tf_fail ? 1 : 0;
}
