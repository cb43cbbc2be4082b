/*
 * Tests for the decoder's kernels (kern.h) on the CPU: bias, SwiGLU, RoPE
 * and causal grouped-query attention against direct double evaluations of
 * their formulas written here; the backward kernels against central finite
 * differences of those; attention split into key blocks (a context-parallel
 * ring's steps) against one call over all keys. The CUDA twin is compared
 * with this one by tests/gpu/test_kernels_gpu.c.
 *
 * Tolerances are relative to max(1, |want|) (kern_fixture.h's near). The
 * kernels compute in fp32 with double sums, so a value carries a few fp32
 * roundings (a relative 1e-7 each); finite differences in double with a
 * step of 1e-6 are good to about 1e-9. Wrong math (a missing term, a
 * swapped half, a wrong mask) is off by far more than any bound below.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_fixture.h"
#include "harness.h"

static struct kern_ctx K;

static void setup(void)
{
	ck_assert_int_eq(kern_init(&K, KERN_CPU, 1), 0);
}

static void teardown(void)
{
	kern_release(&K);
}

static double *widen(const float *x, long long n)
{
	double *d = malloc((size_t)n * sizeof(*d));

	ck_assert_ptr_nonnull(d);
	for (long long i = 0; i < n; i++)
		d[i] = x[i];
	return d;
}

/* ---- bias ------------------------------------------------------------- */

START_TEST(bias_both)
{
	enum { ROWS = 5, COLS = 7 };
	float y[ROWS * COLS], b[COLS], db[COLS];
	double want[ROWS * COLS], want_db[COLS];

	fill(y, ROWS * COLS, 1, 2);
	fill(b, COLS, 2, 1);
	for (int c = 0; c < COLS; c++) {
		db[c] = 0.5f; /* accumulates */
		want_db[c] = 0.5;
		for (int r = 0; r < ROWS; r++) {
			want[r * COLS + c] = (double)(y[r * COLS + c] + b[c]);
			want_db[c] += y[r * COLS + c];
		}
	}
	ck_assert_int_eq(kern_bias_grad(&K, ROWS, COLS, y, db), 0);
	near(db, want_db, COLS, 1e-6, "bias grad");
	ck_assert_int_eq(kern_bias_add(&K, ROWS, COLS, b, y), 0);
	near(y, want, ROWS * COLS, 0, "bias add"); /* one fp32 add each */
}
END_TEST

/* ---- SwiGLU ------------------------------------------------------------ */

enum { SR = 3, SF = 6 };

static double silu(double a)
{
	return a / (1 + exp(-a));
}

/* sum(w . silu(gate) up) over x [SR, 2 SF] in double. */
static double swiglu_loss(const double *x, const float *w)
{
	double l = 0;

	for (int r = 0; r < SR; r++)
		for (int i = 0; i < SF; i++)
			l += w[r * SF + i] * silu(x[r * 2 * SF + i]) *
			     x[r * 2 * SF + SF + i];
	return l;
}

START_TEST(swiglu_both)
{
	float x[SR * 2 * SF], y[SR * SF], w[SR * SF], dx[SR * 2 * SF];
	double want[SR * SF], want_dx[SR * 2 * SF], *xd;
	const double eps = 1e-6;

	fill(x, SR * 2 * SF, 3, 6);
	x[0] = -100.0f; /* exp(100) overflows fp32: silu must give -0 */
	x[1] = 100.0f;
	fill(w, SR * SF, 4, 1);
	xd = widen(x, SR * 2 * SF);
	for (int r = 0; r < SR; r++)
		for (int i = 0; i < SF; i++)
			want[r * SF + i] = silu(xd[r * 2 * SF + i]) *
					   xd[r * 2 * SF + SF + i];
	for (int j = 0; j < SR * 2 * SF; j++) {
		double keep = xd[j], up, down;

		xd[j] = keep + eps;
		up = swiglu_loss(xd, w);
		xd[j] = keep - eps;
		down = swiglu_loss(xd, w);
		xd[j] = keep;
		want_dx[j] = (up - down) / (2 * eps);
	}
	ck_assert_int_eq(kern_swiglu_fwd(&K, SR, SF, x, y), 0);
	near(y, want, SR * SF, 1e-6, "swiglu y");
	ck_assert_int_eq(kern_swiglu_bwd(&K, SR, SF, x, w, dx), 0);
	near(dx, want_dx, SR * 2 * SF, 1e-5, "swiglu dx");
	/* the outputs may not alias the inputs */
	ck_assert_int_eq(kern_swiglu_fwd(&K, SR, SF, x, x), KERN_EINVAL);
	ck_assert_int_eq(kern_swiglu_bwd(&K, SR, SF, x, w, x), KERN_EINVAL);
	free(xd);
}
END_TEST

/* ---- RoPE -------------------------------------------------------------- */

/* Worked by hand with hd = 4, theta = 10000: the frequencies are 1 and
 * 10000^(-1/2) = 0.01. Position 0 is the identity (bit for bit); [1, 1,
 * 0, 0] at position 1 becomes [cos 1, cos 0.01, sin 1, sin 0.01]; [0, 0,
 * 1, 0] at 100 becomes [-sin 100, 0, cos 100, 0]. */
START_TEST(rope_by_hand)
{
	float x[3 * 4] = { 1, 2, 3, 4, 1, 1, 0, 0, 0, 0, 1, 0 };
	int32_t pos[3] = { 0, 1, 100 };
	const double want[3 * 4] = {
		1, 2, 3, 4,
		0.5403023058681398, 0.9999500004166653, 0.8414709848078965,
		0.009999833334166664,
		0.5063656411097588, 0, 0.8623188722876839, 0,
	};

	ck_assert_int_eq(kern_rope(&K, 3, 1, 4, 10000.0, pos, 0, x), 0);
	near(x, want, 4, 0, "rope at 0");
	/* cos and sin are rounded to fp32 (6e-8 below 1) */
	near(x + 4, want + 4, 8, 1e-7, "rope by hand");
	ck_assert_int_eq(kern_rope(&K, 1, 1, 3, 10000.0, pos, 0, x),
			 KERN_EINVAL); /* odd head dim */
}
END_TEST

/* Against Megatron's form (megatron/core/models/common/embeddings/
 * rope_utils.py, _apply_rotary_pos_emb_bshd): x cos(emb) +
 * rotate_half(x) sin(emb), emb = cat(freqs, freqs), rotate_half(x) =
 * cat(-x2, x1), at Llama 3's theta and positions up to 8191; then the
 * inverse brings x back. */
START_TEST(rope_formula_inverse)
{
	enum { RR = 6, RH = 3, RD = 16, N = RR * RH * RD };
	float x[N], x0[N];
	int32_t pos[RR] = { 0, 1, 17, 1000, 4097, 8191 };
	double want[N], back[N];
	const double theta = 500000.0;

	fill(x0, N, 5, 1);
	memcpy(x, x0, sizeof(x));
	for (int r = 0; r < RR; r++)
		for (int h = 0; h < RH; h++)
			for (int d = 0; d < RD; d++) {
				int i = d % (RD / 2), at = (r * RH + h) * RD;
				double e = pos[r] * pow(theta, -2.0 * i / RD);
				double rot = d < RD / 2 ? -x0[at + d + RD / 2]
							: x0[at + d - RD / 2];

				want[at + d] = x0[at + d] * cos(e) + rot * sin(e);
				back[at + d] = x0[at + d];
			}
	ck_assert_int_eq(kern_rope(&K, RR, RH, RD, theta, pos, 0, x), 0);
	/* fp32 cos, sin and products: a few 6e-8 roundings of values <= 1.5 */
	near(x, want, N, 1e-6, "rope");
	ck_assert_int_eq(kern_rope(&K, RR, RH, RD, theta, pos, 1, x), 0);
	near(x, back, N, 1e-6, "rope inverse");
}
END_TEST

/* ---- attention --------------------------------------------------------- */

/* One test shape and its data: q, o, dout [B, sq, nh, hd], k, v [B, sk,
 * nkv, hd], lse [B, nh, sq], positions qpos [sq], kpos [sk]. */
enum { B = 2 };

struct attn_case {
	struct kern_attn a;
	float *q, *k, *v, *dout;
	int32_t *qpos, *kpos;
};

static long long nq_of(const struct kern_attn *a)
{
	return a->batch * a->sq * a->nh * a->hd;
}

static long long nk_of(const struct kern_attn *a)
{
	return a->batch * a->sk * a->nkv * a->hd;
}

static void *xcalloc(long long n, size_t size)
{
	void *p = calloc((size_t)(n ? n : 1), size);

	ck_assert_ptr_nonnull(p);
	return p;
}

static void case_init(struct attn_case *c, long long nh, long long nkv,
		      long long hd, long long sq, long long sk, unsigned seed)
{
	memset(c, 0, sizeof(*c));
	c->a = (struct kern_attn){ B, sq, sk, nh, nkv, hd,
				   (float)(1.0 / sqrt((double)hd)), 0 };
	c->q = xcalloc(nq_of(&c->a), sizeof(float));
	c->dout = xcalloc(nq_of(&c->a), sizeof(float));
	c->k = xcalloc(nk_of(&c->a), sizeof(float));
	c->v = xcalloc(nk_of(&c->a), sizeof(float));
	c->qpos = xcalloc(sq, sizeof(int32_t));
	c->kpos = xcalloc(sk, sizeof(int32_t));
	fill(c->q, nq_of(&c->a), seed, 1);
	fill(c->k, nk_of(&c->a), seed + 1, 1);
	fill(c->v, nk_of(&c->a), seed + 2, 1);
	fill(c->dout, nq_of(&c->a), seed + 3, 1);
}

static void case_release(struct attn_case *c)
{
	free(c->q);
	free(c->k);
	free(c->v);
	free(c->dout);
	free(c->qpos);
	free(c->kpos);
}

/* The positions context-parallel rank `rank` of `cp` holds of a sequence
 * of s tokens: chunks rank and 2 cp - 1 - rank of 2 cp (Megatron's
 * load-balanced split, megatron/core/utils.py). */
static void cp_positions(int32_t *pos, int s, int cp, int rank)
{
	int len = s / (2 * cp);

	for (int j = 0; j < len; j++) {
		pos[j] = rank * len + j;
		pos[len + j] = (2 * cp - 1 - rank) * len + j;
	}
}

/* The formula, directly: P = exp(scale q.k) / sum over attended keys,
 * o = P v, lse = log sum, in double over double inputs; no key gives
 * o = 0, lse = -inf. Scores stay small here (|q|, |k| <= 1), so no max is
 * subtracted. */
static void attn_ref(const struct kern_attn *a, const double *q,
		     const double *k, const double *v, const int32_t *qpos,
		     const int32_t *kpos, double *o, double *lse)
{
	long long hd = a->hd, group = a->nh / a->nkv;

	for (long long b = 0; b < a->batch; b++)
		for (long long h = 0; h < a->nh; h++)
			for (long long i = 0; i < a->sq; i++) {
				long long at = ((b * a->sq + i) * a->nh + h) * hd;
				double sum = 0;

				for (long long d = 0; d < hd; d++)
					o[at + d] = 0;
				for (long long s = 0; s < a->sk; s++) {
					long long ks = ((b * a->sk + s) * a->nkv +
							h / group) * hd;
					double e = 0;

					if (kpos[s] > qpos[i])
						continue;
					for (long long d = 0; d < hd; d++)
						e += q[at + d] * k[ks + d];
					e = exp(a->scale * e);
					sum += e;
					for (long long d = 0; d < hd; d++)
						o[at + d] += e * v[ks + d];
				}
				for (long long d = 0; sum > 0 && d < hd; d++)
					o[at + d] /= sum;
				lse[(b * a->nh + h) * a->sq + i] =
					sum > 0 ? log(sum) : -INFINITY;
			}
}

/* kern_attn_fwd against attn_ref; returns how many rows attend nothing
 * (checked to give o = 0 and lse = -inf exactly). */
static int check_fwd(const struct attn_case *c, const char *what)
{
	const struct kern_attn *a = &c->a;
	long long nq = nq_of(a), nl = a->batch * a->nh * a->sq;
	double *qd = widen(c->q, nq), *kd = widen(c->k, nk_of(a));
	double *vd = widen(c->v, nk_of(a)), *wo = xcalloc(nq, sizeof(double));
	double *wl = xcalloc(nl, sizeof(double));
	float *o = xcalloc(nq, sizeof(float)), *lse = xcalloc(nl, sizeof(float));
	int empty = 0;

	attn_ref(a, qd, kd, vd, c->qpos, c->kpos, wo, wl);
	fill(o, nq, 99, 5); /* stale values must be overwritten */
	ck_assert_int_eq(kern_attn_fwd(&K, a, c->q, c->k, c->v, c->qpos,
				       c->kpos, o, lse), 0);
	for (long long r = 0; r < nl; r++)
		if (wl[r] == -INFINITY) {
			ck_assert_msg(lse[r] == -INFINITY, "%s: lse %lld", what, r);
			wl[r] = 0; /* near() cannot take infinities */
			lse[r] = 0;
			empty++;
		}
	/* double sums, one fp32 rounding per output */
	near(o, wo, nq, 1e-6, what);
	near(lse, wl, nl, 1e-6, what);
	free(qd);
	free(kd);
	free(vd);
	free(wo);
	free(wl);
	free(o);
	free(lse);
	return empty;
}

/* Grouped-query shapes (nh / nkv = 1, 2, 4; head dims 8, 16, 64) on a
 * whole causal sequence, on a CP rank's chunk pair against all keys (the
 * all-gather form) and against another rank's chunk pair (a ring step,
 * where some rows attend nothing). */
START_TEST(attn_forward_shapes)
{
	static const long long sh[][3] = { /* nh, nkv, hd */
		{ 2, 2, 8 }, { 4, 2, 16 }, { 8, 2, 64 }, { 4, 1, 64 },
		{ 4, 4, 16 }, { 8, 2, 8 },
	};
	enum { S = 16, CP = 2 };

	for (unsigned t = 0; t < sizeof(sh) / sizeof(sh[0]); t++) {
		struct attn_case c;

		case_init(&c, sh[t][0], sh[t][1], sh[t][2], S, S, 10 + t);
		for (int j = 0; j < S; j++)
			c.qpos[j] = c.kpos[j] = j;
		ck_assert_int_eq(check_fwd(&c, "whole sequence"), 0);
		c.a.sq = S / 2;
		cp_positions(c.qpos, S, CP, 1);
		ck_assert_int_eq(check_fwd(&c, "chunk pair, all keys"), 0);
		c.a.sk = S / 2;
		cp_positions(c.qpos, S, CP, 0);
		cp_positions(c.kpos, S, CP, 1);
		/* rank 0's first chunk [0, 4) sees none of [4, 12) */
		ck_assert_int_eq(check_fwd(&c, "ring step"),
				 B * (int)sh[t][0] * S / 4);
		case_release(&c);
	}
}
END_TEST

/* sum(w . o) of attn_ref over (q, k, v); o and lse are scratch. */
static double attn_loss(const struct kern_attn *a, const double *q,
			const double *k, const double *v, const struct attn_case *c,
			double *o, double *lse)
{
	double l = 0;

	attn_ref(a, q, k, v, c->qpos, c->kpos, o, lse);
	for (long long j = 0; j < nq_of(a); j++)
		l += c->dout[j] * o[j];
	return l;
}

/* d loss / d x for every element of x (one of qd, kd, vd), by central
 * differences; want starts at the value the gradient accumulates onto. */
static void attn_fd(const struct attn_case *c, double *qd, double *kd,
		    double *vd, double *x, long long n, double *want)
{
	const double eps = 1e-6;
	double *o = xcalloc(nq_of(&c->a), sizeof(double));
	double *lse = xcalloc(c->a.batch * c->a.nh * c->a.sq, sizeof(double));

	for (long long j = 0; j < n; j++) {
		double keep = x[j], up, down;

		x[j] = keep + eps;
		up = attn_loss(&c->a, qd, kd, vd, c, o, lse);
		x[j] = keep - eps;
		down = attn_loss(&c->a, qd, kd, vd, c, o, lse);
		x[j] = keep;
		want[j] += (up - down) / (2 * eps);
	}
	free(o);
	free(lse);
}

/* kern_attn_bwd (after kern_attn_fwd) against finite differences of the
 * formula, accumulating onto 0.25. */
static void check_bwd_fd(const struct attn_case *c)
{
	const struct kern_attn *a = &c->a;
	long long nq = nq_of(a), nk = nk_of(a), nl = a->batch * a->nh * a->sq;
	double *qd = widen(c->q, nq), *kd = widen(c->k, nk);
	double *vd = widen(c->v, nk), *want[3];
	float *o = xcalloc(nq, sizeof(float)), *lse = xcalloc(nl, sizeof(float));
	float *g[3] = { xcalloc(nq, sizeof(float)), xcalloc(nk, sizeof(float)),
			xcalloc(nk, sizeof(float)) };
	long long n[3] = { nq, nk, nk };

	for (int t = 0; t < 3; t++) {
		want[t] = xcalloc(n[t], sizeof(double));
		for (long long j = 0; j < n[t]; j++) {
			g[t][j] = 0.25f;
			want[t][j] = 0.25;
		}
	}
	attn_fd(c, qd, kd, vd, qd, nq, want[0]);
	attn_fd(c, qd, kd, vd, kd, nk, want[1]);
	attn_fd(c, qd, kd, vd, vd, nk, want[2]);
	ck_assert_int_eq(kern_attn_fwd(&K, a, c->q, c->k, c->v, c->qpos,
				       c->kpos, o, lse), 0);
	ck_assert_int_eq(kern_attn_bwd(&K, a, c->q, c->k, c->v, o, lse,
				       c->dout, c->qpos, c->kpos, g[0], g[1],
				       g[2]), 0);
	/* P from the fp32 lse and o: a relative 1e-6 at worst */
	near(g[0], want[0], nq, 1e-5, "attn dq");
	near(g[1], want[1], nk, 1e-5, "attn dk");
	near(g[2], want[2], nk, 1e-5, "attn dv");
	for (int t = 0; t < 3; t++) {
		free(g[t]);
		free(want[t]);
	}
	free(qd);
	free(kd);
	free(vd);
	free(o);
	free(lse);
}

/* A whole causal sequence (MHA); a CP chunk pair against keys of which its
 * first chunk sees none (those rows have no gradient); a chunk pair
 * against all keys with 4 query heads per key/value head. */
START_TEST(attn_backward_fd)
{
	struct attn_case c;

	case_init(&c, 2, 2, 8, 6, 6, 30);
	for (int j = 0; j < 6; j++)
		c.qpos[j] = c.kpos[j] = j;
	check_bwd_fd(&c);
	case_release(&c);

	case_init(&c, 4, 2, 8, 4, 6, 31);
	cp_positions(c.qpos, 8, 2, 0); /* 0 1 6 7 */
	for (int j = 0; j < 6; j++)
		c.kpos[j] = 2 + j;
	check_bwd_fd(&c);
	case_release(&c);

	case_init(&c, 4, 1, 16, 4, 8, 32);
	cp_positions(c.qpos, 8, 2, 1); /* 2 3 4 5 */
	for (int j = 0; j < 8; j++)
		c.kpos[j] = j;
	check_bwd_fd(&c);
	case_release(&c);
}
END_TEST

/* ---- attention over key blocks (a CP ring) ----------------------------- */

enum { RS = 16, RCP = 2, RQ = RS / RCP, RK = RS / RCP };

/* Rows `rows` [n] of every sequence of x [B, sk, nkv, hd] into out. */
static void pick(const struct kern_attn *a, const float *x,
		 const int32_t *rows, int n, float *out)
{
	long long w = a->nkv * a->hd;

	for (long long b = 0; b < a->batch; b++)
		for (int j = 0; j < n; j++)
			memcpy(out + (b * n + j) * w,
			       x + (b * a->sk + rows[j]) * w,
			       (size_t)w * sizeof(float));
}

/* One key block: the keys CP rank `rank` holds, their K, V and the
 * outputs of attention of the queries against them alone. */
struct block {
	struct kern_attn a;
	int32_t kpos[RK];
	float *k, *v, *o, *lse, *dk, *dv;
};

static void block_init(struct block *bl, const struct attn_case *c, int rank)
{
	long long nk = c->a.batch * RK * c->a.nkv * c->a.hd;
	long long nq = nq_of(&c->a), nl = c->a.batch * c->a.nh * c->a.sq;

	bl->a = c->a;
	bl->a.sk = RK;
	cp_positions(bl->kpos, RS, RCP, rank);
	bl->k = xcalloc(nk, sizeof(float));
	bl->v = xcalloc(nk, sizeof(float));
	bl->dk = xcalloc(nk, sizeof(float));
	bl->dv = xcalloc(nk, sizeof(float));
	bl->o = xcalloc(nq, sizeof(float));
	bl->lse = xcalloc(nl, sizeof(float));
	/* the full keys sit in position order: row s holds position s */
	pick(&c->a, c->k, bl->kpos, RK, bl->k);
	pick(&c->a, c->v, bl->kpos, RK, bl->v);
	ck_assert_int_eq(kern_attn_fwd(&K, &bl->a, c->q, bl->k, bl->v, c->qpos,
				       bl->kpos, bl->o, bl->lse), 0);
}

static void block_release(struct block *bl)
{
	free(bl->k);
	free(bl->v);
	free(bl->dk);
	free(bl->dv);
	free(bl->o);
	free(bl->lse);
}

/* Merging block `from` into a copy of block `into` gives (o, lse) of one
 * call over all keys. */
static void check_merge(const struct attn_case *c, const struct block *into,
			const struct block *from, const float *o,
			const float *lse)
{
	long long nq = nq_of(&c->a), nl = c->a.batch * c->a.nh * c->a.sq;
	float *mo = xcalloc(nq, sizeof(float)), *ml = xcalloc(nl, sizeof(float));
	double *wo = widen(o, nq), *wl = widen(lse, nl);

	memcpy(mo, into->o, (size_t)nq * sizeof(float));
	memcpy(ml, into->lse, (size_t)nl * sizeof(float));
	ck_assert_int_eq(kern_attn_merge(&K, &c->a, mo, ml, from->o,
					 from->lse), 0);
	/* the weights in double, a few fp32 roundings of values <= 1 */
	near(mo, wo, nq, 1e-6, "merged o");
	near(ml, wl, nl, 1e-6, "merged lse");
	free(mo);
	free(ml);
	free(wo);
	free(wl);
}

/* Each block's backward with the final (o, lse): dq summed over the
 * blocks, and each block's dk, dv, equal the one-call backward's. */
static void check_bwd_blocks(const struct attn_case *c, struct block *bl,
			     const float *o, const float *lse)
{
	long long nq = nq_of(&c->a), nk = nk_of(&c->a), nb = nk / RCP;
	float *dq = xcalloc(nq, sizeof(float)), *bq = xcalloc(nq, sizeof(float));
	float *dk = xcalloc(nk, sizeof(float)), *dv = xcalloc(nk, sizeof(float));
	float *part = xcalloc(nb, sizeof(float));
	double *w;

	ck_assert_int_eq(kern_attn_bwd(&K, &c->a, c->q, c->k, c->v, o, lse,
				       c->dout, c->qpos, c->kpos, dq, dk, dv),
			 0);
	for (int r = 0; r < RCP; r++)
		ck_assert_int_eq(kern_attn_bwd(&K, &bl[r].a, c->q, bl[r].k,
					       bl[r].v, o, lse, c->dout,
					       c->qpos, bl[r].kpos, bq,
					       bl[r].dk, bl[r].dv), 0);
	/* dq: two fp32 partial sums added instead of one double sum */
	w = widen(dq, nq);
	near(bq, w, nq, 1e-6, "dq over blocks");
	free(w);
	for (int r = 0; r < RCP; r++) {
		pick(&c->a, dk, bl[r].kpos, RK, part);
		w = widen(part, nb);
		near(bl[r].dk, w, nb, 1e-6, "dk of a block");
		free(w);
		pick(&c->a, dv, bl[r].kpos, RK, part);
		w = widen(part, nb);
		near(bl[r].dv, w, nb, 1e-6, "dv of a block");
		free(w);
	}
	free(dq);
	free(bq);
	free(dk);
	free(dv);
	free(part);
}

/* For each CP rank's queries (RCP = 2 over RS = 16 tokens), the keys split
 * into the two ranks' chunk pairs, merged both ways round (rank 0's first
 * chunk attends nothing of rank 1's keys: a -inf side). */
START_TEST(attn_key_blocks)
{
	static const long long sh[][3] = {
		{ 2, 2, 8 }, { 4, 2, 16 }, { 8, 2, 64 }, { 4, 1, 16 },
	};

	for (unsigned t = 0; t < sizeof(sh) / sizeof(sh[0]); t++)
		for (int rank = 0; rank < RCP; rank++) {
			struct attn_case c;
			struct block bl[RCP];
			long long nq, nl;
			float *o, *lse;

			case_init(&c, sh[t][0], sh[t][1], sh[t][2], RQ, RS,
				  40 + t);
			nq = nq_of(&c.a);
			nl = c.a.batch * c.a.nh * c.a.sq;
			cp_positions(c.qpos, RS, RCP, rank);
			for (int j = 0; j < RS; j++)
				c.kpos[j] = j;
			o = xcalloc(nq, sizeof(float));
			lse = xcalloc(nl, sizeof(float));
			ck_assert_int_eq(kern_attn_fwd(&K, &c.a, c.q, c.k, c.v,
						       c.qpos, c.kpos, o, lse),
					 0);
			for (int r = 0; r < RCP; r++)
				block_init(&bl[r], &c, r);
			check_merge(&c, &bl[0], &bl[1], o, lse);
			check_merge(&c, &bl[1], &bl[0], o, lse);
			check_bwd_blocks(&c, bl, o, lse);
			for (int r = 0; r < RCP; r++)
				block_release(&bl[r]);
			free(o);
			free(lse);
			case_release(&c);
		}
}
END_TEST

START_TEST(attn_errors)
{
	struct kern_attn a = { 1, 1, 1, 3, 2, 4, 0.5f, 0 }; /* 3 % 2 != 0 */
	float x[12] = { 0 };
	int32_t p[1] = { 0 };

	ck_assert_int_eq(kern_attn_fwd(&K, &a, x, x, x, p, p, x, x),
			 KERN_EINVAL);
	a.nh = 2;
	a.hd = 0;
	ck_assert_int_eq(kern_attn_fwd(&K, &a, x, x, x, p, p, x, x),
			 KERN_EINVAL);
	a.hd = 4;
	ck_assert_int_eq(kern_attn_fwd(&K, &a, NULL, x, x, p, p, x, x),
			 KERN_EINVAL);
	/* NULL positions are 0, 1, 2, ... (kern.h), not an error */
	ck_assert_int_eq(kern_attn_fwd(&K, &a, x, x, x, NULL, p, x, x), 0);
	/* no query rows: nothing to do */
	a.sq = 0;
	ck_assert_int_eq(kern_attn_fwd(&K, &a, NULL, x, x, NULL, p, NULL,
				       NULL), 0);
}
END_TEST

/* ---- suite -------------------------------------------------------------- */

int main(void)
{
	const struct test_case cases[] = {
		{ "bias_both", bias_both },
		{ "swiglu_both", swiglu_both },
		{ "rope_by_hand", rope_by_hand },
		{ "rope_formula_inverse", rope_formula_inverse },
		{ "attn_forward_shapes", attn_forward_shapes },
		{ "attn_backward_fd", attn_backward_fd },
		{ "attn_key_blocks", attn_key_blocks },
		{ "attn_errors", attn_errors },
	};

	return RUN_CASES_FIXTURE("kernels_llm", cases, 60, setup, teardown);
}
