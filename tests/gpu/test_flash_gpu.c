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
 * Prints one line per case and `RESULT passed failed`; exits 1 on a failure,
 * 77 without a GPU. `make test-gpu` runs it.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_host.h"
#include "kern_flash.h"

#define TOL_REL 1e-2
#define TOL_LSE 1e-3

static struct kern_ctx G;
static int n_pass, n_fail;

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

static void check(const char *what, const char *name, double err, double tol)
{
	int ok = err <= tol; /* NaN fails */

	printf("%-4s %-34s %-4s err %.3e (tol %.0e)\n", ok ? "ok" : "FAIL",
	       name, what, err, tol);
	ok ? n_pass++ : n_fail++;
}

/* The forward's outputs against the reference: o normwise, lse absolute,
 * empty rows exact. */
static void check_fwd(const struct fcase *c, const uint16_t *o,
		      const float *lse, const double *ro, const double *rl)
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
	check("o", c->name, gh_relerr(go, ro, n), TOL_REL);
	check("lse", c->name, lerr, TOL_LSE);
	check("-inf", c->name, empty_ok ? 0.0 : 1.0, 0.0);
	free(go);
}

/* (gpu - init) against the reference gradient. */
static void check_grad(const char *what, const char *name, const float *gpu,
		       const float *init, const double *ref, long long n)
{
	double *d = gh_malloc((size_t)n * sizeof(double));

	for (long long i = 0; i < n; i++)
		d[i] = (double)gpu[i] - (double)init[i];
	check(what, name, gh_relerr(d, ref, n), TOL_REL);
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

static void run_fwd(const struct fcase *c, struct dev *d, uint16_t *o,
		    float *lse)
{
	const struct kern_attn *a = &c->a;
	long long nl = a->batch * a->nh * a->sq;
	int rc;

	memset(o, 0xff, (size_t)nq(a) * 2); /* NaN poison */
	for (long long i = 0; i < nl; i++)
		lse[i] = NAN;
	d->o = gh_dev(&G, o, (size_t)nq(a) * 2);
	d->lse = gh_dev(&G, lse, (size_t)nl * sizeof(float));
	rc = kern_flash_fwd(kern_stream(&G), a, d->q, d->k, d->v, d->qpos,
			    d->kpos, d->o, d->lse);
	if (rc)
		gh_die(rc, "kern_flash_fwd");
	gh_down(&G, o, d->o, (size_t)nq(a) * 2);
	gh_down(&G, lse, d->lse, (size_t)nl * sizeof(float));
}

static void run_bwd(const struct fcase *c, struct dev *d, float *init[3],
		    float *out[3])
{
	const struct kern_attn *a = &c->a;
	long long n[3] = { nq(a), nk(a), nk(a) };
	float **dd[3] = { &d->dq, &d->dk, &d->dv };
	int rc;

	for (int t = 0; t < 3; t++) {
		init[t] = gh_malloc((size_t)n[t] * sizeof(float));
		out[t] = gh_malloc((size_t)n[t] * sizeof(float));
		for (long long i = 0; i < n[t]; i++)
			init[t][i] = gh_uniform();
		*dd[t] = gh_dev(&G, init[t], (size_t)n[t] * sizeof(float));
	}
	d->dsum = gh_dev(&G, NULL, (size_t)(a->batch * a->nh * a->sq + 1) * 4);
	rc = kern_flash_bwd(kern_stream(&G), a, d->q, d->k, d->v, d->o, d->lse,
			    d->dout, d->qpos, d->kpos, d->dsum, d->dq, d->dk,
			    d->dv);
	if (rc)
		gh_die(rc, "kern_flash_bwd");
	for (int t = 0; t < 3; t++)
		gh_down(&G, out[t], *dd[t], (size_t)n[t] * sizeof(float));
}

static void run_case(struct fcase *c)
{
	const struct kern_attn *a = &c->a;
	long long n = nq(a), m = nk(a), nl = a->batch * a->nh * a->sq;
	double *ro = gh_malloc((size_t)n * 8), *rl = gh_malloc((size_t)nl * 8);
	double *rq = gh_malloc((size_t)n * 8), *rk = gh_malloc((size_t)m * 8);
	double *rv = gh_malloc((size_t)m * 8), *p = gh_malloc((size_t)(a->sk + 1) * 8);
	uint16_t *o = gh_malloc((size_t)n * 2);
	float *lse = gh_malloc((size_t)nl * 4), *init[3], *out[3];
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
	run_fwd(c, &d, o, lse);
	ref_fwd(c, ro, rl, p);
	check_fwd(c, o, lse, ro, rl);
	run_bwd(c, &d, init, out);
	for (long long b = 0; b < a->batch; b++)
		for (long long i = 0; i < a->sq; i++)
			for (long long h = 0; h < a->nh; h++)
				ref_bwd_row(c, ro, rl, b, i, h, rq, rk, rv, p);
	check_grad("dq", c->name, out[0], init[0], rq, n);
	check_grad("dk", c->name, out[1], init[1], rk, m);
	check_grad("dv", c->name, out[2], init[2], rv, m);
	for (int t = 0; t < 3; t++) {
		free(init[t]);
		free(out[t]);
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
	printf("RESULT %d %d\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
