/*
 * test_kernels_attnw_gpu: kern_attn's overwrite (kernels/kern.h) on the
 * CUDA twin, each backward path through the public calls the runtime
 * makes (runtime/rt_train.c attn_core_bwd). Linked into test_kernels_gpu;
 * tests/test_kernels_attnw.c holds the CPU twin to the same.
 *
 * Per case, from one forward: the backward with overwrite = 0 into zeroed
 * dq, dk, dv (kern_zero) is the reference; with overwrite = 1 into
 * buffers holding NaN, 1e30, -0 and -1e30 in turn it must give the same
 * bits (`overwrite`: 0, or inf at the first difference, NaN included);
 * with overwrite = 0 into random start values (|x| < 0.5) it must give
 * start + reference within 1e-5 normwise (`accumulate`, TOL_ELEM: the
 * sums' order, (x + a) + b against x + (a + b), a few fp32 ulps), where
 * overwriting errs by the start values themselves.
 *
 * Bit for bit holds because every shape here sums each gradient element
 * from at most two fp32 terms onto zero, and two terms add alike in
 * either order: dq gets one add per key block (kern_flash_bwd.cu and
 * kern_flash_wg_bwd.cu's top comments) and sk <= 256 is at most two
 * blocks of 128 keys; dk and dv one per head split (fl_bwd_split, at
 * most the group's nh / nkv <= 2 heads); the reference kernels sum each
 * element in one thread. Larger shapes add in a run-dependent order
 * (kernels/kern_flash.h), so no two runs need agree bit for bit there:
 * at the two 1024-token shapes (8 key blocks; a group of 8 heads split
 * over up to 8 blocks at hd 64) the overwrite must agree with the
 * reference within 1e-5 normwise (TOL_ORDER, as
 * test_kernels_fast_attn_gpu.c's attn_is_flash: fp32 sums in another
 * order), which a value left from the garbage (NaN, 1e30) fails by far.
 *
 * Paths: the flash backward in bf16 math (kern_attn_bwd_bf on the inputs'
 * bf16 copies; dq, dk, dv cleared in its dsum pass, kernels/flash_bwd.cuh
 * fl_bwd_clear) under the build's default (ws on an H200) and under
 * GTPLAN_FLASH_BWD = mma, wg, wgp (mma.sync off compute capability 9.0;
 * each backward on a context made after setting it, since a context
 * reads it once, at kern_init);
 * the fp32 reference kernels (fp32 math, and bf16 math at head dim 96,
 * which widens its copies: kernels/kern_mixed.c), zeroed by kern_cuda_zero
 * first. Shapes: whole causal sequences at hd 64 and 128 (grouped heads,
 * several sequences), and 16 queries at positions 0..15 against 256 keys
 * at 8..263 (rows 0..7 attend nothing, keys past position 15 are
 * attended by none: their gradients must come out 0, not the garbage;
 * the dsum pass's 1024 threads must stride over dk and dv's 16384 16-byte
 * chunks). Then an empty side (sq = 0: kern_flash_bwd's cudaMemsetAsync
 * and kern_attn_bwd_bf's kern_zero) must zero dk and dv (attn_empty).
 *
 * Positions as NULL (kern.h: 0, 1, 2, ..., what runtime/rt_train.c passes
 * without CP): where a case's positions are 0, 1, 2, ... the forward's o
 * and lse and the overwriting backward's gradients with NULL for both
 * must equal those with the arrays (`nullpos`): bit for bit where the
 * case is (the same tiles, masks and sums; the flash kernels only skip
 * reading positions), within the case's tolerance where its sums' order
 * varies from run to run.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_flash.h"
#include "kern_gpu_fixture.h"

#define TOL_ORDER 1e-5

struct wcase {
	const char *name;
	enum kern_math math;
	const char *bwd; /* GTPLAN_FLASH_BWD; NULL: the build's default */
	long long batch, sq, sk, nh, nkv, hd;
	int qpos0, kpos0;
	double tol; /* 0: bit for bit; else normwise (sums' order) */
};

static const struct wcase wcases[] = {
	{ "flash", KERN_MATH_BF16, NULL, 2, 200, 200, 4, 2, 64, 0, 0, 0 },
	{ "flash", KERN_MATH_BF16, NULL, 1, 256, 256, 4, 2, 128, 0, 0, 0 },
	{ "flash", KERN_MATH_BF16, NULL, 1, 16, 256, 2, 2, 128, 0, 8, 0 },
	{ "flash", KERN_MATH_BF16, NULL, 1, 1024, 1024, 8, 1, 64, 0, 0,
	  TOL_ORDER },
	{ "flash", KERN_MATH_BF16, NULL, 1, 1024, 1024, 8, 2, 128, 0, 0,
	  TOL_ORDER },
	{ "mma", KERN_MATH_BF16, "mma", 2, 200, 200, 4, 2, 64, 0, 0, 0 },
	{ "mma", KERN_MATH_BF16, "mma", 1, 16, 256, 2, 2, 128, 0, 8, 0 },
	{ "wg", KERN_MATH_BF16, "wg", 1, 130, 130, 4, 2, 128, 0, 0, 0 },
	{ "wgp", KERN_MATH_BF16, "wgp", 2, 100, 100, 4, 2, 64, 0, 0, 0 },
	{ "ref", KERN_MATH_FP32, NULL, 2, 200, 200, 4, 2, 64, 0, 0, 0 },
	{ "ref", KERN_MATH_FP32, NULL, 1, 16, 256, 2, 2, 96, 0, 8, 0 },
	{ "widen", KERN_MATH_BF16, NULL, 1, 40, 60, 4, 2, 96, 0, 8, 0 },
};
#define NW (sizeof(wcases) / sizeof(wcases[0]))

/* NaN, 1e30, -0 and -1e30 in turn: what a stale buffer may hold. */
static float *garbage(long long n)
{
	static const float g[4] = { NAN, 1e30f, -0.0f, -1e30f };
	float *x = xmalloc((size_t)n * 4);

	for (long long i = 0; i < n; i++)
		x[i] = g[i % 4];
	return x;
}

/* A device buffer of n bf16 values: x's, rounded (kern_to_bf16). */
static uint16_t *dev16(struct verdict *v, const float *x, long long n)
{
	uint16_t *p = NULL;

	see_rc(v, kern_alloc(&G, (size_t)n * 2, (void **)&p));
	if (p)
		see_rc(v, kern_to_bf16(&G, n, x, p));
	return p;
}

/* The inputs of a case on the device: fp32 q k v dout o lse, their bf16
 * copies (bf16 math), positions, and one set of gradients; the context
 * the backward runs on. */
struct wdev {
	float *f[6]; /* q k v dout o lse */
	uint16_t *h[5]; /* q k v dout o */
	int32_t *qpos, *kpos;
	float *g[3];
	/* G, or one made after setting the case's GTPLAN_FLASH_BWD: a
	 * context reads it once, at kern_init (kernels/kern_cuda_fast.cu
	 * kern_cuda_flash_init) */
	struct kern_ctx *bk;
};

/* The backward of case c with the given overwrite into d->g, on d->bk;
 * another context than G waits for G's queue before and is waited for
 * after, since the rest of the case runs on G. */
static int backward(const struct wcase *c, struct kern_attn *a,
		    struct wdev *d, int overwrite)
{
	struct kern_ctx *k = d->bk;
	int rc = k == &G ? 0 : kern_sync(&G);

	a->overwrite = overwrite;
	if (rc)
		return rc;
	if (c->math == KERN_MATH_BF16)
		rc = kern_attn_bwd_bf(k, a, d->h[0], d->h[1], d->h[2], d->h[4],
				      d->f[5], NULL, d->h[3], d->qpos, d->kpos,
				      d->g[0], d->g[1], d->g[2]);
	else
		rc = kern_attn_bwd(k, a, d->f[0], d->f[1], d->f[2], d->f[4],
				   d->f[5], d->f[3], d->qpos, d->kpos, d->g[0],
				   d->g[1], d->g[2]);
	return rc || k == &G ? rc : kern_sync(k);
}

/* The forward of case c into d (o's bits or o, and lse). */
static int forward(const struct wcase *c, struct kern_attn *a,
		   struct wdev *d)
{
	if (c->math == KERN_MATH_BF16) /* o's bits, as the runtime keeps */
		return kern_attn_fwd_bf(&G, a, d->h[0], d->h[1], d->h[2],
					d->qpos, d->kpos, NULL, d->h[4],
					d->f[5]);
	return kern_attn_fwd(&G, a, d->f[0], d->f[1], d->f[2], d->qpos,
			     d->kpos, d->f[4], d->f[5]);
}

/* Positions NULL against the arrays of 0, 1, 2, ...: the forward's o and
 * lse, then the overwriting backward's gradients (ovr: with the arrays),
 * the same bits (tol 0) or within tol. */
static void null_positions(const struct wcase *c, struct kern_attn *a,
			   struct wdev *d, const long long n[3],
			   float *const ovr[3], struct verdict *v)
{
	long long nq = c->batch * c->sq * c->nh * c->hd;
	long long nl = c->batch * c->nh * c->sq;
	size_t ob = (size_t)nq * (c->math == KERN_MATH_BF16 ? 2 : 4);
	unsigned char *o1 = xmalloc(ob), *o2 = xmalloc(ob);
	float *l1 = xmalloc((size_t)nl * 4), *l2 = xmalloc((size_t)nl * 4);
	void *od = c->math == KERN_MATH_BF16 ? (void *)d->h[4] :
					      (void *)d->f[4];
	int32_t *qp = d->qpos, *kp = d->kpos;

	see_rc(v, down(o1, od, ob));
	see_rc(v, down(l1, d->f[5], (size_t)nl * 4));
	d->qpos = d->kpos = NULL;
	see_rc(v, forward(c, a, d));
	see_rc(v, down(o2, od, ob));
	see_rc(v, down(l2, d->f[5], (size_t)nl * 4));
	see(v, memcmp(o1, o2, ob) || memcmp(l1, l2, (size_t)nl * 4) ?
		       INFINITY : 0);
	see_rc(v, backward(c, a, d, 1));
	d->qpos = qp;
	d->kpos = kp;
	for (int t = 0; t < 3; t++) {
		float *g = xmalloc((size_t)n[t] * 4);

		see_rc(v, down(g, d->g[t], (size_t)n[t] * 4));
		if (c->tol > 0)
			see(v, relerr(g, ovr[t], n[t]));
		else
			see(v, memcmp(g, ovr[t], (size_t)n[t] * 4) ?
				       INFINITY : 0);
		free(g);
	}
	free(o1);
	free(o2);
	free(l1);
	free(l2);
}

static void run_case(const struct wcase *c, struct verdict *vw,
		     struct verdict *va, struct verdict *vp)
{
	struct kern_attn a = { c->batch, c->sq, c->sk, c->nh, c->nkv, c->hd,
			       (float)(1.0 / sqrt((double)c->hd)), 0 };
	long long nq = c->batch * c->sq * c->nh * c->hd;
	long long nk = c->batch * c->sk * c->nkv * c->hd;
	long long nl = c->batch * c->nh * c->sq, n[3] = { nq, nk, nk };
	long long cnt[6] = { nq, nk, nk, nq, nq, nl };
	int32_t *qpos = xmalloc((size_t)c->sq * 4);
	int32_t *kpos = xmalloc((size_t)c->sk * 4);
	float *want[3], *got[3], *start[3];
	struct kern_ctx bk;
	struct wdev d;

	memset(&d, 0, sizeof(d));
	d.bk = &G;
	for (long long i = 0; i < c->sq; i++)
		qpos[i] = c->qpos0 + (int32_t)i;
	for (long long s = 0; s < c->sk; s++)
		kpos[s] = c->kpos0 + (int32_t)s;
	d.qpos = up(qpos, (size_t)c->sq * 4);
	d.kpos = up(kpos, (size_t)c->sk * 4);
	for (int i = 0; i < 6; i++) {
		float *x = rnd(cnt[i], 1); /* o and lse: overwritten */

		d.f[i] = up(x, (size_t)cnt[i] * 4);
		free(x);
	}
	for (int i = 0; i < 5; i++)
		d.h[i] = dev16(vw, d.f[i], cnt[i]);
	for (int t = 0; t < 3; t++) {
		want[t] = xmalloc((size_t)n[t] * 4);
		got[t] = xmalloc((size_t)n[t] * 4);
		start[t] = rnd(n[t], 0.5f);
		see_rc(vw, kern_alloc(&G, (size_t)n[t] * 4, (void **)&d.g[t]));
	}
	if (c->bwd) {
		int rc;

		setenv("GTPLAN_FLASH_BWD", c->bwd, 1);
		rc = kern_init(&bk, KERN_CUDA, 0);
		see_rc(vw, rc);
		if (!rc) {
			d.bk = &bk;
			see_rc(vw, kern_set_math(&bk, c->math));
		}
	}
	see_rc(vw, kern_set_math(&G, c->math));
	if (vw->rc)
		goto out;
	see_rc(vw, forward(c, &a, &d));
	/* the reference: accumulate onto zeros */
	for (int t = 0; t < 3; t++)
		see_rc(vw, kern_zero(&G, d.g[t], (size_t)n[t] * 4));
	see_rc(vw, backward(c, &a, &d, 0));
	for (int t = 0; t < 3; t++)
		see_rc(vw, down(want[t], d.g[t], (size_t)n[t] * 4));
	/* overwrite onto garbage: the same bits */
	for (int t = 0; t < 3; t++) {
		float *x = garbage(n[t]);

		see_rc(vw, kern_upload(&G, d.g[t], x, (size_t)n[t] * 4));
		free(x);
	}
	see_rc(vw, backward(c, &a, &d, 1));
	for (int t = 0; t < 3; t++) {
		see_rc(vw, down(got[t], d.g[t], (size_t)n[t] * 4));
		if (c->tol > 0) /* NaN or 1e30 left over: inf or 1e30 */
			see(vw, relerr(got[t], want[t], n[t]));
		else
			see(vw, memcmp(got[t], want[t], (size_t)n[t] * 4) ?
					INFINITY : 0);
	}
	if (c->qpos0 == 0 && c->kpos0 == 0)
		null_positions(c, &a, &d, n, got, vp);
	/* accumulate onto start values: start + the reference */
	for (int t = 0; t < 3; t++)
		see_rc(va, kern_upload(&G, d.g[t], start[t],
				       (size_t)n[t] * 4));
	see_rc(va, backward(c, &a, &d, 0));
	for (int t = 0; t < 3; t++) {
		see_rc(va, down(got[t], d.g[t], (size_t)n[t] * 4));
		for (long long i = 0; i < n[t]; i++)
			want[t][i] += start[t][i];
		see(va, relerr(got[t], want[t], n[t]));
	}
out:
	unsetenv("GTPLAN_FLASH_BWD");
	if (d.bk != &G)
		kern_release(d.bk);
	see_rc(vw, kern_set_math(&G, KERN_MATH_FP32));
	for (int t = 0; t < 3; t++) {
		drop(d.g[t]);
		free(want[t]);
		free(got[t]);
		free(start[t]);
	}
	for (int i = 0; i < 6; i++)
		drop(d.f[i]);
	for (int i = 0; i < 5; i++)
		drop(d.h[i]);
	drop(d.qpos);
	drop(d.kpos);
	free(qpos);
	free(kpos);
}

/* dk and dv (n floats each, read through y) hold zeros alone. */
static void see_zeros(struct verdict *v, const float *dk, const float *dv,
		      long long n, float *y)
{
	const float *d[2] = { dk, dv };

	for (int t = 0; t < 2; t++) {
		see_rc(v, down(y, d[t], (size_t)n * 4));
		for (long long i = 0; i < n; i++)
			see(v, y[i] == 0.0f ? 0 : INFINITY);
	}
}

/* No query rows: nothing to add, but overwrite still zeroes dk and dv,
 * in kern_flash_bwd (called directly) and in kern_attn_bwd_bf. */
static void test_empty(struct verdict *v)
{
	struct kern_attn a = { 1, 0, 64, 2, 2, 64, 0.125f, 1 };
	long long nk = 64 * 2 * 64;
	float *x = garbage(nk), *y = xmalloc((size_t)nk * 4);
	float *dk = up(x, (size_t)nk * 4), *dv = up(x, (size_t)nk * 4);
	uint16_t *h = up(x, (size_t)nk * 2);
	float *f = up(x, (size_t)nk * 4);

	see_rc(v, kern_flash_bwd(kern_stream(&G), &a, h, h, h, h, f, h, NULL,
				 NULL, f, f, dk, dv));
	see_zeros(v, dk, dv, nk, y);
	see_rc(v, kern_upload(&G, dk, x, (size_t)nk * 4));
	see_rc(v, kern_upload(&G, dv, x, (size_t)nk * 4));
	see_rc(v, kern_set_math(&G, KERN_MATH_BF16));
	see_rc(v, kern_attn_bwd_bf(&G, &a, h, h, h, h, f, NULL, h, NULL,
				   (const int32_t *)f, f, dk, dv));
	see_rc(v, kern_set_math(&G, KERN_MATH_FP32));
	see_zeros(v, dk, dv, nk, y);
	drop(dk); drop(dv); drop(h); drop(f);
	free(x);
	free(y);
}

void test_attnw_kernels(void)
{
	struct verdict ve = { 0, 0 };

	for (size_t t = 0; t < NW; t++) {
		const struct wcase *c = &wcases[t];
		struct verdict vw = { 0, 0 }, va = { 0, 0 }, vp = { 0, 0 };
		char name[64];

		run_case(c, &vw, &va, &vp);
		snprintf(name, sizeof(name),
			 "attnw_%s hd%lld %lldx%lld overwrite", c->name,
			 c->hd, c->sq, c->sk);
		report(name, &vw, c->tol);
		snprintf(name, sizeof(name),
			 "attnw_%s hd%lld %lldx%lld accumulate", c->name,
			 c->hd, c->sq, c->sk);
		report(name, &va, TOL_ELEM);
		if (c->qpos0 || c->kpos0)
			continue;
		snprintf(name, sizeof(name),
			 "attnw_%s hd%lld %lldx%lld nullpos", c->name,
			 c->hd, c->sq, c->sk);
		report(name, &vp, c->tol);
	}
	test_empty(&ve);
	report("attn_empty", &ve, 0);
}
