/*
 * test_kernels_b16_gpu: the output layer's bf16 logits on the CUDA twin
 * (kern_gemm_bf16 through cuBLASLt, kernels/kern_cuda_b16.cu's
 * cross-entropy pieces) against the CPU twin (kern.c: the fp32 pieces on
 * the widened values, then the rounding). Linked into test_kernels_gpu.
 *
 * Shapes: a Llama 3 vocabulary row (128256 ids, 8 at a time), a width
 * that is not a multiple of 8 (one value at a time) with masked columns,
 * and a short one whose last chunk of 8 is partly masked; targets in and
 * out of the rank's range; the gradient in place over its logits.
 *
 * Tolerances and why:
 *  - gemm_bf16_out 4e-3 (TOL_BF_OUT): both sides round fp32 sums of exact
 *    products to bf16; the sums' order differs (tensor cores against the
 *    CPU's BLAS), so an element may round the other way (2^-8 relative).
 *  - ce_max_b16, ce_target_b16, embed_fwd_b16 0: the max of, and values
 *    moved from, the same widened values.
 *  - ce_sumexp_b16 1e-3 (TOL_SUM): fp32 sums of up to 128256 terms in a
 *    block's tree order against the CPU's running sum, whose own error
 *    grows with the terms' count (bound n 2^-24 = 7.6e-3 for 128256;
 *    measured 1.1e-4 on an H200), and the device's exponential.
 *  - swiglu_b16 4e-3 (TOL_BF_OUT): rounded to bf16 on both sides (2^-8
 *    relative), the device's expf against the C library's, so a value
 *    within an ulp of a rounding boundary may round the other way.
 *  - ce_bwd_b16 4e-3 (TOL_BF_OUT): as swiglu_b16 (the device's expf in
 *    kern_cuda.h's ce_grad, shared with the fp32 gradient).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_gpu_fixture.h"

#define TOL_BF_OUT 4e-3
#define TOL_SUM 1e-3

/* bf16 bits widened on the host. */
static float *widened(const uint16_t *h, long long n)
{
	float *f = xmalloc((size_t)n * sizeof(float));

	for (long long i = 0; i < n; i++) {
		uint32_t u = (uint32_t)h[i] << 16;

		memcpy(&f[i], &u, sizeof(u));
	}
	return f;
}

/* n random bf16 values in [-scale, scale) (host bits). */
static uint16_t *rnd_bf16(long long n, float scale)
{
	float *x = rnd(n, scale);
	uint16_t *h = xmalloc((size_t)n * sizeof(uint16_t));

	if (kern_to_bf16(&C, n, x, h))
		memset(h, 0, (size_t)n * sizeof(uint16_t));
	free(x);
	return h;
}

/* The device's bf16 d16 against the CPU's c16, both widened. */
static void see_bf16(struct verdict *v, const uint16_t *d16,
		     const uint16_t *c16, long long n)
{
	uint16_t *g = xmalloc((size_t)n * sizeof(uint16_t));
	float *gw, *cw;

	see_rc(v, down(g, d16, (size_t)n * sizeof(uint16_t)));
	gw = widened(g, n);
	cw = widened(c16, n);
	see(v, relerr(gw, cw, n));
	free(g);
	free(gw);
	free(cw);
}

static void see_f32(struct verdict *v, const float *d, const float *c,
		    long long n)
{
	float *g = xmalloc((size_t)n * sizeof(float));

	see_rc(v, down(g, d, (size_t)n * sizeof(float)));
	see(v, relerr(g, c, n));
	free(g);
}

/* C16 = round(A B^T), the output layer's forward shape (m tokens, n ids,
 * kd hidden), and dX = dL W (the backward's first GEMM, bf16 operands). */
static void test_gemm_bf16(void)
{
	static const long long dims[][3] = {
		{ 64, 1000, 256 }, { 17, 33, 65 }, { 128, 4096, 512 },
	};
	struct verdict v = { 0, 0 };

	for (size_t s = 0; s < sizeof(dims) / sizeof(dims[0]); s++) {
		long long m = dims[s][0], n = dims[s][1], kd = dims[s][2];
		uint16_t *a = rnd_bf16(m * kd, 1), *b = rnd_bf16(n * kd, 1);
		uint16_t *c = xmalloc((size_t)(m * n) * 2), *dc = NULL;
		uint16_t *da = up(a, (size_t)(m * kd) * 2);
		uint16_t *db = up(b, (size_t)(n * kd) * 2);

		see_rc(&v, kern_gemm_bf16(&C, 0, 1, m, n, kd, a, kd, b, kd, c));
		see_rc(&v, kern_alloc(&G, (size_t)(m * n) * 2, (void **)&dc));
		see_rc(&v, kern_gemm_bf16(&G, 0, 1, m, n, kd, da, kd, db, kd,
					  dc));
		see_bf16(&v, dc, c, m * n);
		kern_free(&G, da);
		kern_free(&G, db);
		kern_free(&G, dc);
		free(a);
		free(b);
		free(c);
	}
	report("gemm_bf16_out", &v, TOL_BF_OUT);
}

static void test_ce_b16(void)
{
	/* rows, cols, nvalid; 600 x 8200: more spans of the 16-byte
	 * gradient (kern_cuda_b16.cu ce_bwd8_k) than an H200 holds blocks,
	 * so blocks walk several, a row's last span part full */
	static const long long dims[][3] = {
		{ 16, 128256, 128256 }, { 37, 1001, 990 }, { 5, 24, 20 },
		{ 600, 8200, 8190 },
	};
	struct verdict vm = { 0, 0 }, vt = { 0, 0 }, vs = { 0, 0 };
	struct verdict vb = { 0, 0 };

	for (size_t s = 0; s < sizeof(dims) / sizeof(dims[0]); s++) {
		long long r = dims[s][0], c = dims[s][1], nv = dims[s][2];
		long long first = 7;
		uint16_t *l = rnd_bf16(r * c, 8);
		uint16_t *cd = xmalloc((size_t)(r * c) * 2);
		float *mx = xmalloc((size_t)r * 4), *sm = xmalloc((size_t)r * 4);
		float *tg = xmalloc((size_t)r * 4);
		int32_t *t = rnd_ids(r, 0, (int32_t)(c + 2 * first));
		uint16_t *dl = up(l, (size_t)(r * c) * 2);
		int32_t *dt = up(t, (size_t)r * 4);
		float *dmx = NULL, *dsm = NULL, *dtg = NULL;

		see_rc(&vm, kern_alloc(&G, (size_t)r * 4, (void **)&dmx));
		see_rc(&vm, kern_alloc(&G, (size_t)r * 4, (void **)&dsm));
		see_rc(&vm, kern_alloc(&G, (size_t)r * 4, (void **)&dtg));
		see_rc(&vm, kern_ce_max_b16(&C, r, c, nv, l, mx));
		see_rc(&vm, kern_ce_max_b16(&G, r, c, nv, dl, dmx));
		see_f32(&vm, dmx, mx, r);
		see_rc(&vt, kern_ce_target_b16(&C, r, c, first, t, l, tg));
		see_rc(&vt, kern_ce_target_b16(&G, r, c, first, dt, dl, dtg));
		see_f32(&vt, dtg, tg, r);
		/* the sums and the gradient from the same max on both sides */
		see_rc(&vs, kern_upload(&G, dmx, mx, (size_t)r * 4));
		see_rc(&vs, kern_ce_sumexp_b16(&C, r, c, nv, l, mx, sm));
		see_rc(&vs, kern_ce_sumexp_b16(&G, r, c, nv, dl, dmx, dsm));
		see_f32(&vs, dsm, sm, r);
		see_rc(&vb, kern_upload(&G, dsm, sm, (size_t)r * 4));
		see_rc(&vb, kern_ce_bwd_b16(&C, r, c, nv, first, t, mx, sm,
					    0.5f, l, cd));
		see_rc(&vb, kern_ce_bwd_b16(&G, r, c, nv, first, dt, dmx, dsm,
					    0.5f, dl, dl)); /* in place */
		see_bf16(&vb, dl, cd, r * c);
		kern_free(&G, dl);
		kern_free(&G, dt);
		kern_free(&G, dmx);
		kern_free(&G, dsm);
		kern_free(&G, dtg);
		free(l); free(cd); free(mx); free(sm); free(tg); free(t);
	}
	report("ce_max_b16", &vm, 0);
	report("ce_target_b16", &vt, 0);
	report("ce_sumexp_b16", &vs, TOL_SUM);
	report("ce_bwd_b16", &vb, TOL_BF_OUT);
}

/* The lookup in a bf16 table: rows moved and widened, so exactly the
 * CPU's (8 values a thread where h allows, one where not; h 2048 and
 * 4096 as the Llama shapes, 4104 a multiple of 8 past them). */
static void test_embed_b16(void)
{
	static const long long dims[][3] = { /* n, h, rows */
		{ 4096, 2048, 1000 }, { 33, 20, 50 }, { 7, 13, 9 },
		{ 2000, 4096, 100 }, { 300, 4104, 64 },
	};
	struct verdict v = { 0, 0 };

	for (size_t s = 0; s < sizeof(dims) / sizeof(dims[0]); s++) {
		long long n = dims[s][0], h = dims[s][1], rows = dims[s][2];
		long long first = 5;
		uint16_t *t = rnd_bf16(rows * h, 2);
		int32_t *tok = rnd_ids(n, 0, (int32_t)(rows + 2 * first));
		float *c = xmalloc((size_t)(n * h) * 4), *dout = NULL;
		uint16_t *dt = up(t, (size_t)(rows * h) * 2);
		int32_t *dtok = up(tok, (size_t)n * 4);

		see_rc(&v, kern_alloc(&G, (size_t)(n * h) * 4, (void **)&dout));
		see_rc(&v, kern_embed_fwd_b16(&C, n, h, first, rows, t, tok, c));
		see_rc(&v, kern_embed_fwd_b16(&G, n, h, first, rows, dt, dtok,
					      dout));
		see_f32(&v, dout, c, n * h);
		kern_free(&G, dt);
		kern_free(&G, dtok);
		kern_free(&G, dout);
		free(t);
		free(tok);
		free(c);
	}
	report("embed_fwd_b16", &v, 0);
}

/* SwiGLU on bf16, f a multiple of 8 (8 values a thread) and not; 3001 x
 * 1032: rows of 129 chunks (kern_cuda_b16.cu swiglu_fwd8_k's row by
 * kdiv) and more steps than an H200 holds blocks, so blocks walk
 * several. */
static void test_swiglu_b16(void)
{
	static const long long dims[][2] = { { 300, 512 }, { 37, 64 },
					     { 5, 7 }, { 3001, 1032 } };
	struct verdict v = { 0, 0 };

	for (size_t s = 0; s < sizeof(dims) / sizeof(dims[0]); s++) {
		long long r = dims[s][0], f = dims[s][1];
		uint16_t *x = rnd_bf16(r * 2 * f, 3), *dy = rnd_bf16(r * f, 1);
		uint16_t *y = xmalloc((size_t)(r * f) * 2);
		uint16_t *dx = xmalloc((size_t)(r * 2 * f) * 2);
		uint16_t *gx = up(x, (size_t)(r * 2 * f) * 2);
		uint16_t *gdy = up(dy, (size_t)(r * f) * 2);
		uint16_t *gy = NULL, *gdx = NULL;

		see_rc(&v, kern_alloc(&G, (size_t)(r * f) * 2, (void **)&gy));
		see_rc(&v, kern_alloc(&G, (size_t)(r * 2 * f) * 2,
				      (void **)&gdx));
		see_rc(&v, kern_swiglu_fwd_b16(&C, r, f, x, y));
		see_rc(&v, kern_swiglu_fwd_b16(&G, r, f, gx, gy));
		see_bf16(&v, gy, y, r * f);
		see_rc(&v, kern_swiglu_bwd_b16(&C, r, f, x, dy, dx));
		see_rc(&v, kern_swiglu_bwd_b16(&G, r, f, gx, gdy, gdx));
		see_bf16(&v, gdx, dx, r * 2 * f);
		kern_free(&G, gx);
		kern_free(&G, gdy);
		kern_free(&G, gy);
		kern_free(&G, gdx);
		free(x);
		free(dy);
		free(y);
		free(dx);
	}
	report("swiglu_b16", &v, TOL_BF_OUT);
}

void test_b16_kernels(void)
{
	struct verdict v = { 0, 0 };

	see_rc(&v, kern_set_math(&G, KERN_MATH_BF16));
	test_gemm_bf16();
	test_ce_b16();
	test_embed_b16();
	test_swiglu_b16();
	see_rc(&v, kern_set_math(&G, KERN_MATH_FP32));
	report("b16_math_mode", &v, 0);
}
