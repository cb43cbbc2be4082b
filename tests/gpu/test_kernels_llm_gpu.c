/*
 * test_kernels_llm_gpu: the decoder's CUDA kernels (kernels/kern_cuda_llm.cu)
 * against their CPU twins (kernels/kern_cpu.c, kernels/kern_cpu_attn.c) on
 * the same random inputs, judged as in test_kernels_gpu.c (normwise
 * relative error, one line per kernel). Linked into test_kernels_gpu.
 *
 * Tolerances: 1e-5 (TOL_ELEM) for the elementwise kernels and the merge,
 * whose math is the same on both sides up to a few ulps of expf, pow, cos
 * and sin; 1e-4 (TOL_RED) for bias_grad and attention, which sum in fp32
 * on the GPU (attention's online softmax, warp trees) and in double on the
 * CPU, over up to 512 keys.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_gpu_fixture.h"

/* ---- bias, SwiGLU -------------------------------------------------------- */

static const long long ew_shapes[][2] = {
	{ 1, 1 }, { 3, 33 }, { 64, 1000 }, { 4097, 129 },
};
#define NEW (sizeof(ew_shapes) / sizeof(ew_shapes[0]))

static void test_bias(void)
{
	struct verdict va = { 0, 0 }, vg = { 0, 0 };

	for (size_t t = 0; t < NEW; t++) {
		long long rows = ew_shapes[t][0], cols = ew_shapes[t][1];
		long long n = rows * cols;
		float *y = rnd(n, 1), *b = rnd(cols, 1), *db = rnd(cols, 1);
		float *yg = xmalloc((size_t)n * 4), *dbg = xmalloc((size_t)cols * 4);
		float *d_y = up(y, (size_t)n * 4), *d_b = up(b, (size_t)cols * 4);
		float *d_db = up(db, (size_t)cols * 4);

		see_rc(&vg, kern_bias_grad(&C, rows, cols, y, db));
		see_rc(&vg, kern_bias_grad(&G, rows, cols, d_y, d_db));
		see_rc(&vg, down(dbg, d_db, (size_t)cols * 4));
		see(&vg, relerr(dbg, db, cols));
		see_rc(&va, kern_bias_add(&C, rows, cols, b, y));
		see_rc(&va, kern_bias_add(&G, rows, cols, d_b, d_y));
		see_rc(&va, down(yg, d_y, (size_t)n * 4));
		see(&va, relerr(yg, y, n));
		drop(d_y); drop(d_b); drop(d_db);
		free(y); free(b); free(db); free(yg); free(dbg);
	}
	report("bias_add", &va, TOL_ELEM);
	report("bias_grad", &vg, TOL_RED);
}

static void test_swiglu(void)
{
	struct verdict vf = { 0, 0 }, vb = { 0, 0 };

	for (size_t t = 0; t < NEW; t++) {
		long long rows = ew_shapes[t][0], f = ew_shapes[t][1];
		long long n = rows * f;
		float *x = rnd(2 * n, 6), *dy = rnd(n, 1);
		float *y = xmalloc((size_t)n * 4), *dx = xmalloc((size_t)n * 8);
		float *yg = xmalloc((size_t)n * 4), *dxg = xmalloc((size_t)n * 8);
		float *d_x = up(x, (size_t)n * 8), *d_dy = up(dy, (size_t)n * 4);
		float *d_y = up(y, (size_t)n * 4), *d_dx = up(dx, (size_t)n * 8);

		see_rc(&vf, kern_swiglu_fwd(&C, rows, f, x, y));
		see_rc(&vf, kern_swiglu_fwd(&G, rows, f, d_x, d_y));
		see_rc(&vf, down(yg, d_y, (size_t)n * 4));
		see(&vf, relerr(yg, y, n));
		see_rc(&vb, kern_swiglu_bwd(&C, rows, f, x, dy, dx));
		see_rc(&vb, kern_swiglu_bwd(&G, rows, f, d_x, d_dy, d_dx));
		see_rc(&vb, down(dxg, d_dx, (size_t)n * 8));
		see(&vb, relerr(dxg, dx, 2 * n));
		drop(d_x); drop(d_dy); drop(d_y); drop(d_dx);
		free(x); free(dy); free(y); free(dx); free(yg); free(dxg);
	}
	report("swiglu_fwd", &vf, TOL_ELEM);
	report("swiglu_bwd", &vb, TOL_ELEM);
}

/* ---- RoPE ---------------------------------------------------------------- */

/* Llama 3's theta, positions up to 128k: large angles on both sides. */
static void test_rope(void)
{
	static const long long sh[][3] = { /* rows, heads, hd */
		{ 1, 1, 2 }, { 5, 3, 16 }, { 64, 4, 64 }, { 257, 8, 128 },
	};
	struct verdict vf = { 0, 0 }, vi = { 0, 0 };

	for (size_t t = 0; t < sizeof(sh) / sizeof(sh[0]); t++) {
		long long rows = sh[t][0], n = rows * sh[t][1] * sh[t][2];
		float *x = rnd(n, 1), *xg = xmalloc((size_t)n * 4);
		int32_t *pos = rnd_ids(rows, 0, 131072);
		float *d_x = up(x, (size_t)n * 4);
		int32_t *d_pos = up(pos, (size_t)rows * 4);

		for (int inv = 0; inv < 2; inv++) {
			struct verdict *v = inv ? &vi : &vf;

			see_rc(v, kern_rope(&C, rows, sh[t][1], sh[t][2],
					    500000.0, pos, inv, x));
			see_rc(v, kern_rope(&G, rows, sh[t][1], sh[t][2],
					    500000.0, d_pos, inv, d_x));
			see_rc(v, down(xg, d_x, (size_t)n * 4));
			see(v, relerr(xg, x, n));
		}
		drop(d_x); drop(d_pos);
		free(x); free(xg); free(pos);
	}
	report("rope", &vf, TOL_ELEM);
	report("rope_inverse", &vi, TOL_ELEM);
}

/* ---- attention ------------------------------------------------------------ */

/* A shape and its positions: cp = 0 is a whole causal sequence of s
 * tokens; else the queries are CP rank qrank's chunk pair (chunks qrank and
 * 2 cp - 1 - qrank of 2 cp) and the keys all s tokens (krank < 0) or rank
 * krank's chunk pair (a ring step; some rows may attend nothing). */
struct attn_shape {
	long long batch, s, nh, nkv, hd;
	int cp, qrank, krank;
};

static const struct attn_shape attn_shapes[] = {
	{ 2, 64, 8, 2, 64, 0, 0, 0 },     { 1, 128, 4, 4, 128, 0, 0, 0 },
	{ 2, 33, 4, 1, 16, 0, 0, 0 },     { 1, 16, 2, 1, 256, 0, 0, 0 },
	{ 2, 64, 8, 2, 8, 2, 1, -1 },     { 2, 64, 8, 2, 128, 2, 0, 1 },
	{ 1, 128, 4, 2, 64, 4, 3, 1 },    { 1, 512, 8, 2, 128, 0, 0, 0 },
};
#define NATTN (sizeof(attn_shapes) / sizeof(attn_shapes[0]))

static void chunk_pair(int32_t *pos, long long s, int cp, int rank)
{
	long long len = s / (2 * cp);

	for (long long j = 0; j < len; j++) {
		pos[j] = (int32_t)(rank * len + j);
		pos[len + j] = (int32_t)((2 * cp - 1 - rank) * len + j);
	}
}

/* The kern_attn and positions (host, xmalloc'd) of a shape. */
static struct kern_attn attn_of(const struct attn_shape *sh, int32_t **qpos,
				int32_t **kpos)
{
	struct kern_attn a = { sh->batch, sh->s, sh->s, sh->nh, sh->nkv,
			       sh->hd, (float)(1.0 / sqrt((double)sh->hd)), 0 };

	if (sh->cp) {
		a.sq = sh->s / sh->cp;
		if (sh->krank >= 0)
			a.sk = sh->s / sh->cp;
	}
	*qpos = xmalloc((size_t)a.sq * 4);
	*kpos = xmalloc((size_t)a.sk * 4);
	for (long long j = 0; j < a.sq; j++)
		(*qpos)[j] = (int32_t)j;
	for (long long j = 0; j < a.sk; j++)
		(*kpos)[j] = (int32_t)j;
	if (sh->cp)
		chunk_pair(*qpos, sh->s, sh->cp, sh->qrank);
	if (sh->cp && sh->krank >= 0)
		chunk_pair(*kpos, sh->s, sh->cp, sh->krank);
	return a;
}

/* -inf (rows that attend nothing) must sit in the same places; they are
 * then zeroed on both sides for relerr. Returns 1 on a mismatch. */
static int match_empty(float *gl, float *cl, long long n)
{
	int bad = 0;

	for (long long i = 0; i < n; i++) {
		if ((gl[i] == -INFINITY) != (cl[i] == -INFINITY))
			bad = 1;
		if (cl[i] == -INFINITY)
			cl[i] = 0.0f;
		if (gl[i] == -INFINITY)
			gl[i] = 0.0f;
	}
	return bad;
}

/* Device copies of one shape's inputs. */
struct attn_dev {
	float *q, *k, *v, *o, *lse, *dout, *dq, *dk, *dv;
	int32_t *qpos, *kpos;
};

static void attn_dev_free(struct attn_dev *d)
{
	drop(d->q); drop(d->k); drop(d->v); drop(d->o); drop(d->lse);
	drop(d->dout); drop(d->dq); drop(d->dk); drop(d->dv);
	drop(d->qpos); drop(d->kpos);
}

/* One shape: the forward on both sides, then the backward on both from the
 * CPU's o and lse, accumulating onto the same random dq, dk, dv. */
static void attn_case(const struct attn_shape *sh, struct verdict *vf,
		      struct verdict *vb)
{
	int32_t *qpos, *kpos;
	struct kern_attn a = attn_of(sh, &qpos, &kpos);
	long long nq = a.batch * a.sq * a.nh * a.hd;
	long long nk = a.batch * a.sk * a.nkv * a.hd, nl = a.batch * a.nh * a.sq;
	float *q = rnd(nq, 1), *k = rnd(nk, 1), *v = rnd(nk, 1);
	float *dout = rnd(nq, 1), *dq = rnd(nq, 0.1f), *dk = rnd(nk, 0.1f);
	float *dv = rnd(nk, 0.1f), *o = xmalloc((size_t)nq * 4);
	float *lse = xmalloc((size_t)nl * 4), *og = xmalloc((size_t)nq * 4);
	float *lg = xmalloc((size_t)nl * 4), *lc = xmalloc((size_t)nl * 4);
	float *gq = xmalloc((size_t)nq * 4), *gk = xmalloc((size_t)nk * 4);
	float *gv = xmalloc((size_t)nk * 4);
	struct attn_dev d = {
		up(q, (size_t)nq * 4), up(k, (size_t)nk * 4),
		up(v, (size_t)nk * 4), up(o, (size_t)nq * 4),
		up(lse, (size_t)nl * 4), up(dout, (size_t)nq * 4),
		up(dq, (size_t)nq * 4), up(dk, (size_t)nk * 4),
		up(dv, (size_t)nk * 4), up(qpos, (size_t)a.sq * 4),
		up(kpos, (size_t)a.sk * 4),
	};

	see_rc(vf, kern_attn_fwd(&C, &a, q, k, v, qpos, kpos, o, lse));
	see_rc(vf, kern_attn_fwd(&G, &a, d.q, d.k, d.v, d.qpos, d.kpos, d.o,
				 d.lse));
	see_rc(vf, down(og, d.o, (size_t)nq * 4));
	see_rc(vf, down(lg, d.lse, (size_t)nl * 4));
	memcpy(lc, lse, (size_t)nl * 4);
	see(vf, match_empty(lg, lc, nl) ? INFINITY : relerr(lg, lc, nl));
	see(vf, relerr(og, o, nq));

	see_rc(vb, kern_upload(&G, d.o, o, (size_t)nq * 4));
	see_rc(vb, kern_upload(&G, d.lse, lse, (size_t)nl * 4));
	see_rc(vb, kern_attn_bwd(&C, &a, q, k, v, o, lse, dout, qpos, kpos, dq,
				 dk, dv));
	see_rc(vb, kern_attn_bwd(&G, &a, d.q, d.k, d.v, d.o, d.lse, d.dout,
				 d.qpos, d.kpos, d.dq, d.dk, d.dv));
	see_rc(vb, down(gq, d.dq, (size_t)nq * 4));
	see_rc(vb, down(gk, d.dk, (size_t)nk * 4));
	see_rc(vb, down(gv, d.dv, (size_t)nk * 4));
	see(vb, relerr(gq, dq, nq));
	see(vb, relerr(gk, dk, nk));
	see(vb, relerr(gv, dv, nk));

	attn_dev_free(&d);
	free(q); free(k); free(v); free(dout); free(dq); free(dk); free(dv);
	free(o); free(lse); free(og); free(lg); free(lc); free(gq); free(gk);
	free(gv); free(qpos); free(kpos);
}

/* A row whose lse is -inf has o = 0 (kern.h). */
static void zero_empty(const struct kern_attn *a, float *o, const float *lse)
{
	for (long long b = 0; b < a->batch; b++)
		for (long long i = 0; i < a->sq; i++)
			for (long long h = 0; h < a->nh; h++)
				if (lse[(b * a->nh + h) * a->sq + i] == -INFINITY)
					memset(o + ((b * a->sq + i) * a->nh + h) *
						       a->hd,
					       0, (size_t)a->hd * 4);
}

/* Random partial results, with -inf (no key attended) on either side, on
 * both and on neither. */
static void test_attn_merge(struct verdict *v)
{
	struct kern_attn a = { 2, 37, 37, 4, 2, 64, 0.125f, 0 };
	long long nq = a.batch * a.sq * a.nh * a.hd, nl = a.batch * a.nh * a.sq;
	float *o = rnd(nq, 1), *o2 = rnd(nq, 1), *l = rnd(nl, 3);
	float *l2 = rnd(nl, 3), *og = xmalloc((size_t)nq * 4);
	float *lg = xmalloc((size_t)nl * 4), *d_o, *d_l, *d_o2, *d_l2;

	for (long long i = 0; i < nl; i++) {
		if (i % 7 == 0)
			l[i] = -INFINITY;
		if (i % 5 == 0)
			l2[i] = -INFINITY;
	}
	zero_empty(&a, o, l);
	zero_empty(&a, o2, l2);
	d_o = up(o, (size_t)nq * 4);
	d_l = up(l, (size_t)nl * 4);
	d_o2 = up(o2, (size_t)nq * 4);
	d_l2 = up(l2, (size_t)nl * 4);
	see_rc(v, kern_attn_merge(&C, &a, o, l, o2, l2));
	see_rc(v, kern_attn_merge(&G, &a, d_o, d_l, d_o2, d_l2));
	see_rc(v, down(og, d_o, (size_t)nq * 4));
	see_rc(v, down(lg, d_l, (size_t)nl * 4));
	see(v, match_empty(lg, l, nl) ? INFINITY : relerr(lg, l, nl));
	see(v, relerr(og, o, nq));
	drop(d_o); drop(d_l); drop(d_o2); drop(d_l2);
	free(o); free(o2); free(l); free(l2); free(og); free(lg);
}

/* A head dim over what the reference kernels hold is refused, not run. */
static void test_attn_limits(struct verdict *v)
{
	struct kern_attn a = { 1, 1, 1, 1, 1, 264, 1.0f, 0 };
	void *d = NULL, *p = NULL;

	see_rc(v, kern_alloc(&G, 264 * 4, &d));
	see_rc(v, kern_alloc(&G, 4, &p));
	if (!v->rc) {
		see(v, kern_attn_fwd(&G, &a, d, d, d, p, p, d, d) !=
		       KERN_EINVAL);
		see(v, kern_attn_bwd(&G, &a, d, d, d, d, d, d, p, p, d, d, d) !=
		       KERN_EINVAL);
	}
	drop(d);
	drop(p);
}

void test_llm_kernels(void)
{
	struct verdict vf = { 0, 0 }, vb = { 0, 0 }, vm = { 0, 0 };
	struct verdict vl = { 0, 0 };

	test_bias();
	test_swiglu();
	test_rope();
	for (size_t t = 0; t < NATTN; t++)
		attn_case(&attn_shapes[t], &vf, &vb);
	report("attn_fwd", &vf, TOL_RED);
	report("attn_bwd", &vb, TOL_RED);
	test_attn_merge(&vm);
	report("attn_merge", &vm, TOL_ELEM);
	test_attn_limits(&vl);
	report("attn_limits", &vl, 0);
}
