/*
 * Tests for the kernels that serve mixed-precision runs' bf16 copies
 * (kern.h) on the CPU: kern_round_bf16_copy against kern_round_bf16 and
 * kern_to_bf16, kern_gemm_bf against kern_gemm of the copies' values
 * (every transpose, padded leading dimensions, sub-blocks, an fp32 operand
 * absent), a stale copy that must change the product, and Megatron's
 * fused qkv columns split and merged (kern_qkv_split/merge) against the
 * layout written out here; kern_adam_bf against kern_adam then
 * kern_to_bf16, the norms fused with the residual add against their
 * unfused sequences and attention on the copies against the fp32
 * functions of their values, bit for bit. The CUDA twin is compared with
 * this one by tests/gpu/test_kernels_fast_gpu.c.
 *
 * Tolerances: the copies hold exactly the values of their rounded fp32
 * operands, so kern_gemm_bf computes the same sums as kern_gemm of those
 * operands: equal up to the order of fp32 sums (1e-5 relative to max(1,
 * |want|) for inner dimensions up to 40 of values in [-1, 1)); the splits
 * move values and must be exact.
 */
#include <check.h>
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

START_TEST(round_copy_matches)
{
	long long n = 1003;
	float *x = take((size_t)n * sizeof(float));
	float *y = take((size_t)n * sizeof(float));
	uint16_t *c = take((size_t)n * sizeof(uint16_t));
	uint16_t *want = take((size_t)n * sizeof(uint16_t));

	fill(x, n, 7, 3.0f);
	x[5] = NAN;
	x[6] = INFINITY;
	x[7] = 3.4e38f; /* rounds to infinity */
	memcpy(y, x, (size_t)n * sizeof(float));
	ck_assert_int_eq(kern_round_bf16_copy(&K, n, x, c), 0);
	ck_assert_int_eq(kern_round_bf16(&K, n, y), 0);
	ck_assert_int_eq(kern_to_bf16(&K, n, y, want), 0);
	ck_assert_int_eq(memcmp(x, y, (size_t)n * sizeof(float)), 0);
	ck_assert_int_eq(memcmp(c, want, (size_t)n * sizeof(uint16_t)), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, 4, NULL, c), KERN_EINVAL);
	ck_assert_int_eq(kern_round_bf16_copy(&K, 0, NULL, NULL), 0);
	free(x);
	free(y);
	free(c);
	free(want);
}
END_TEST

/* One operand of a GEMM: rows x ld floats rounded to bf16, its copy. */
struct operand {
	float *f;
	uint16_t *h;
};

static struct operand operand(long long rows, long long ld, unsigned seed)
{
	struct operand o = { take((size_t)(rows * ld) * sizeof(float)),
			     take((size_t)(rows * ld) * sizeof(uint16_t)) };

	fill(o.f, rows * ld, seed, 1.0f);
	ck_assert_int_eq(kern_round_bf16_copy(&K, rows * ld, o.f, o.h), 0);
	return o;
}

static void release(struct operand *o)
{
	free(o->f);
	free(o->h);
}

/* kern_gemm_bf with the copies (fp32 operands given or absent) equals
 * kern_gemm of the rounded operands, in each transpose, ld padded by 3. */
static void gemm_case(int ta, int tb, long long m, long long n, long long kd,
		      float beta)
{
	long long lda = (ta ? m : kd) + 3, ldb = (tb ? kd : n) + 3, ldc = n + 1;
	struct operand a = operand(ta ? kd : m, lda, 11);
	struct operand b = operand(tb ? n : kd, ldb, 12);
	float *c = take((size_t)(m * ldc) * sizeof(float));
	float *want = take((size_t)(m * ldc) * sizeof(float));
	double *w = take((size_t)(m * ldc) * sizeof(double));

	for (int absent = 0; absent < 3; absent++) {
		fill(c, m * ldc, 13, 1.0f);
		memcpy(want, c, (size_t)(m * ldc) * sizeof(float));
		ck_assert_int_eq(kern_gemm(&K, ta, tb, m, n, kd, 0.5f, a.f, lda,
					   b.f, ldb, beta, want, ldc), 0);
		ck_assert_int_eq(kern_gemm_bf(&K, ta, tb, m, n, kd, 0.5f,
					      absent == 1 ? NULL : a.f, a.h,
					      lda, absent == 2 ? NULL : b.f,
					      absent == 0 ? NULL : b.h, ldb,
					      beta, c, ldc), 0);
		for (long long i = 0; i < m * ldc; i++)
			w[i] = want[i];
		near(c, w, m * ldc, 1e-5, "gemm_bf");
	}
	release(&a);
	release(&b);
	free(c);
	free(want);
	free(w);
}

START_TEST(gemm_bf_every_transpose)
{
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			gemm_case(ta, tb, 5, 7, 9, 0.0f);
			gemm_case(ta, tb, 17, 3, 40, 1.0f);
		}
}
END_TEST

/* The copy is what is multiplied: a copy that is not its operand's
 * rounding (stale) changes the product; a sub-block (an offset into both
 * arrays) reads only its own elements. */
START_TEST(gemm_bf_reads_the_copy)
{
	long long m = 4, n = 6, kd = 8;
	struct operand a = operand(m, kd, 21), b = operand(kd, n, 22);
	float *c = take((size_t)(m * n) * sizeof(float));
	float *d = take((size_t)(m * n) * sizeof(float));
	double diff = 0;

	ck_assert_int_eq(kern_gemm_bf(&K, 0, 0, m, n, kd, 1.0f, a.f, a.h, kd,
				      b.f, b.h, n, 0.0f, c, n), 0);
	a.h[3] ^= 0x0080; /* one bf16 value changed in its exponent */
	ck_assert_int_eq(kern_gemm_bf(&K, 0, 0, m, n, kd, 1.0f, a.f, a.h, kd,
				      b.f, b.h, n, 0.0f, d, n), 0);
	for (long long i = 0; i < m * n; i++)
		diff += fabs((double)c[i] - d[i]);
	ck_assert_msg(diff > 1e-3, "a stale copy changed nothing");
	/* rows 1..2 of a as a 2 x kd block: kern_gemm's rows 1..2 */
	a.h[3] ^= 0x0080;
	ck_assert_int_eq(kern_gemm_bf(&K, 0, 0, 2, n, kd, 1.0f, NULL,
				      a.h + kd, kd, NULL, b.h, n, 0.0f, d, n),
			 0);
	for (long long i = 0; i < 2 * n; i++)
		ck_assert_float_eq_tol(d[i], c[n + i], 1e-5f);
	/* an operand with neither array */
	ck_assert_int_eq(kern_gemm_bf(&K, 0, 0, m, n, kd, 1.0f, NULL, NULL, kd,
				      b.f, b.h, n, 0.0f, c, n), KERN_EINVAL);
	/* C aliasing an operand or its copy (kern.h: outputs never alias
	 * inputs) */
	ck_assert_int_eq(kern_gemm_bf(&K, 0, 0, m, n, kd, 1.0f, a.f, a.h, kd,
				      b.f, b.h, n, 0.0f, a.f, n), KERN_EINVAL);
	ck_assert_int_eq(kern_gemm_bf(&K, 0, 0, m, n, kd, 1.0f, a.f, a.h, kd,
				      b.f, b.h, n, 0.0f, b.f, n), KERN_EINVAL);
	ck_assert_int_eq(kern_gemm_bf(&K, 0, 0, m, n, kd, 1.0f, NULL, a.h, kd,
				      b.f, NULL, n, 0.0f, (float *)a.h, n),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_gemm_bf(&K, 0, 0, m, n, kd, 1.0f, a.f, NULL, kd,
				      NULL, b.h, n, 0.0f, (float *)b.h, n),
			 KERN_EINVAL);
	release(&a);
	release(&b);
	free(c);
	free(d);
}
END_TEST

/* kern_qkv_split against the layout written out: per row, per group, nq
 * query values, nk key values, nk value values; merge inverts it. */
START_TEST(qkv_split_merge)
{
	long long rows = 3, groups = 4, nq = 6, nk = 2, gw = nq + 2 * nk;
	long long n = rows * groups * gw;
	float *p = take((size_t)n * sizeof(float));
	float *back = take((size_t)n * sizeof(float));
	float *q = take((size_t)(rows * groups * nq) * sizeof(float));
	float *kk = take((size_t)(rows * groups * nk) * sizeof(float));
	float *v = take((size_t)(rows * groups * nk) * sizeof(float));

	for (long long i = 0; i < n; i++)
		p[i] = (float)i;
	ck_assert_int_eq(kern_qkv_split(&K, rows, groups, nq, nk, p, q, kk, v),
			 0);
	for (long long r = 0; r < rows; r++)
		for (long long j = 0; j < groups; j++) {
			long long base = (r * groups + j) * gw;

			for (long long c = 0; c < nq; c++)
				ck_assert_float_eq(q[(r * groups + j) * nq + c],
						   (float)(base + c));
			for (long long c = 0; c < nk; c++) {
				ck_assert_float_eq(kk[(r * groups + j) * nk + c],
						   (float)(base + nq + c));
				ck_assert_float_eq(v[(r * groups + j) * nk + c],
						   (float)(base + nq + nk + c));
			}
		}
	ck_assert_int_eq(kern_qkv_merge(&K, rows, groups, nq, nk, q, kk, v,
					back), 0);
	ck_assert_int_eq(memcmp(p, back, (size_t)n * sizeof(float)), 0);
	ck_assert_int_eq(kern_qkv_split(&K, rows, 0, nq, nk, p, q, kk, v),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_qkv_split(&K, rows, groups, nq, nk, p, p, kk, v),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_qkv_merge(&K, 0, groups, nq, nk, NULL, NULL,
					NULL, NULL), 0);
	free(p);
	free(back);
	free(q);
	free(kk);
	free(v);
}
END_TEST

/* kern_adam_bf equals kern_adam, then kern_to_bf16 of the first n16
 * values, bit for bit; n16 out of range is refused. */
START_TEST(adam_bf_copy)
{
	long long n = 37, n16 = 30;
	float *p[2], *g = take((size_t)n * 4), *mo[2], *vo[2];
	uint16_t *h = take((size_t)n * 2), *w = take((size_t)n * 2);

	fill(g, n, 41, 1.0f);
	for (int i = 0; i < 2; i++) {
		p[i] = take((size_t)n * 4);
		mo[i] = take((size_t)n * 4);
		vo[i] = take((size_t)n * 4);
		fill(p[i], n, 42, 1.0f);
	}
	for (long long step = 1; step <= 3; step++) {
		ck_assert_int_eq(kern_adam_bf(&K, n, 0.01f, 0.9f, 0.95f, 1e-8f,
					      step, p[0], g, mo[0], vo[0], h,
					      n16), 0);
		ck_assert_int_eq(kern_adam(&K, n, 0.01f, 0.9f, 0.95f, 1e-8f,
					   step, p[1], g, mo[1], vo[1]), 0);
	}
	ck_assert_int_eq(kern_to_bf16(&K, n16, p[1], w), 0);
	ck_assert_int_eq(memcmp(p[0], p[1], (size_t)n * 4), 0);
	ck_assert_int_eq(memcmp(mo[0], mo[1], (size_t)n * 4), 0);
	ck_assert_int_eq(memcmp(h, w, (size_t)n16 * 2), 0);
	ck_assert_int_eq(kern_adam_bf(&K, n, 0.01f, 0.9f, 0.95f, 1e-8f, 1,
				      p[0], g, mo[0], vo[0], h, n + 1),
			 KERN_EINVAL);
	for (int i = 0; i < 2; i++) {
		free(p[i]);
		free(mo[i]);
		free(vo[i]);
	}
	free(g);
	free(h);
	free(w);
}
END_TEST

/* The fused norms equal their unfused sequences bit for bit:
 * kern_add_rmsnorm_fwd = copy, axpy, kern_rmsnorm_fwd, kern_round_bf16_copy;
 * kern_rmsnorm_bwd_add = kern_rmsnorm_bwd into a scratch, then axpy. */
START_TEST(norms_fused)
{
	long long rows = 6, h = 10, n = rows * h;
	float *x = take((size_t)n * 4), *r = take((size_t)n * 4);
	float *g = take((size_t)h * 4), *sum = take((size_t)n * 4);
	float *y = take((size_t)n * 4), *ws = take((size_t)n * 4);
	float *wy = take((size_t)n * 4), *rs = take((size_t)rows * 4);
	float *wr = take((size_t)rows * 4), *dx = take((size_t)n * 4);
	float *wdx = take((size_t)n * 4), *t = take((size_t)n * 4);
	float *dg = take((size_t)h * 4), *wdg = take((size_t)h * 4);
	uint16_t *y16 = take((size_t)n * 2), *w16 = take((size_t)n * 2);

	fill(x, n, 51, 2.0f);
	fill(r, n, 52, 1.0f);
	fill(g, h, 53, 1.0f);
	ck_assert_int_eq(kern_add_rmsnorm_fwd(&K, rows, h, 1e-5f, x, r, sum, g,
					      y, rs, y16), 0);
	memcpy(ws, x, (size_t)n * 4);
	ck_assert_int_eq(kern_axpy(&K, n, 1.0f, r, ws), 0);
	ck_assert_int_eq(kern_rmsnorm_fwd(&K, rows, h, 1e-5f, ws, g, wy, wr),
			 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, n, wy, w16), 0);
	ck_assert_int_eq(memcmp(sum, ws, (size_t)n * 4), 0);
	ck_assert_int_eq(memcmp(y, wy, (size_t)n * 4), 0);
	ck_assert_int_eq(memcmp(rs, wr, (size_t)rows * 4), 0);
	ck_assert_int_eq(memcmp(y16, w16, (size_t)n * 2), 0);
	/* y NULL: the bits alone, the same */
	memset(y16, 0, (size_t)n * 2);
	ck_assert_int_eq(kern_add_rmsnorm_fwd(&K, rows, h, 1e-5f, x, r, sum, g,
					      NULL, rs, y16), 0);
	ck_assert_int_eq(memcmp(y16, w16, (size_t)n * 2), 0);
	ck_assert_int_eq(memcmp(sum, ws, (size_t)n * 4), 0);
	ck_assert_int_eq(kern_add_rmsnorm_fwd(&K, rows, h, 1e-5f, x, r, sum, g,
					      NULL, rs, NULL), KERN_EINVAL);
	/* the backward, accumulating */
	fill(dx, n, 54, 1.0f);
	memcpy(wdx, dx, (size_t)n * 4);
	ck_assert_int_eq(kern_rmsnorm_bwd_add(&K, rows, h, sum, g, rs, r, dx,
					      dg), 0);
	ck_assert_int_eq(kern_rmsnorm_bwd(&K, rows, h, sum, g, rs, r, t, wdg),
			 0);
	ck_assert_int_eq(kern_axpy(&K, n, 1.0f, t, wdx), 0);
	ck_assert_int_eq(memcmp(dx, wdx, (size_t)n * 4), 0);
	ck_assert_int_eq(memcmp(dg, wdg, (size_t)h * 4), 0);
	/* the _bf twin: the same, and dx's bits (dx not rounded) */
	ck_assert_int_eq(kern_rmsnorm_bwd_add_bf(&K, rows, h, sum, g, rs, r, dx,
						 dg, y16), 0);
	ck_assert_int_eq(kern_rmsnorm_bwd_add(&K, rows, h, sum, g, rs, r, wdx,
					      wdg), 0);
	ck_assert_int_eq(memcmp(dx, wdx, (size_t)n * 4), 0);
	ck_assert_int_eq(memcmp(dg, wdg, (size_t)h * 4), 0);
	ck_assert_int_eq(kern_to_bf16(&K, n, wdx, w16), 0);
	ck_assert_int_eq(memcmp(y16, w16, (size_t)n * 2), 0);
	ck_assert_int_eq(kern_rmsnorm_bwd_add_bf(&K, rows, h, sum, g, rs, r, dx,
						 dg, NULL), KERN_EINVAL);
	ck_assert_int_eq(kern_rmsnorm_bwd_add(&K, rows, h, sum, g, rs, r, r,
					      dg), KERN_EINVAL);
	ck_assert_int_eq(kern_add_rmsnorm_fwd(&K, rows, h, 1e-5f, x, r, r, g,
					      y, rs, NULL), KERN_EINVAL);
	free(x); free(r); free(g); free(sum); free(y); free(ws); free(wy);
	free(rs); free(wr); free(dx); free(wdx); free(t); free(dg); free(wdg);
	free(y16); free(w16);
}
END_TEST

/* kern_attn_fwd_bf / bwd_bf on the CPU: kern_attn_fwd / bwd of the
 * copies' values (o then rounded with its copy), bit for bit; a stale
 * copy changes the result. */
START_TEST(attn_bf_copies)
{
	struct kern_attn a = { 1, 5, 5, 4, 2, 4, 0.5f, 0 };
	long long nq = 5 * 4 * 4, nk = 5 * 2 * 4, nl = 4 * 5;
	float *q = take((size_t)nq * 4), *kk = take((size_t)nk * 4);
	float *v = take((size_t)nk * 4), *o = take((size_t)nq * 4);
	float *wo = take((size_t)nq * 4), *lse = take((size_t)nl * 4);
	float *wl = take((size_t)nl * 4), *dout = take((size_t)nq * 4);
	float *g[3], *wg[3];
	uint16_t *q16 = take((size_t)nq * 2), *k16 = take((size_t)nk * 2);
	uint16_t *v16 = take((size_t)nk * 2), *o16 = take((size_t)nq * 2);
	uint16_t *w16 = take((size_t)nq * 2);
	int32_t pos[5] = { 0, 1, 2, 3, 4 };
	long long n[3] = { nq, nk, nk };

	fill(q, nq, 61, 1.0f);
	fill(kk, nk, 62, 1.0f);
	fill(v, nk, 63, 1.0f);
	fill(dout, nq, 64, 1.0f);
	ck_assert_int_eq(kern_round_bf16_copy(&K, nq, q, q16), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, nk, kk, k16), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, nk, v, v16), 0);
	ck_assert_int_eq(kern_attn_fwd_bf(&K, &a, q16, k16, v16, pos, pos, o,
					  o16, lse), 0);
	ck_assert_int_eq(kern_attn_fwd(&K, &a, q, kk, v, pos, pos, wo, wl), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, nq, wo, w16), 0);
	ck_assert_int_eq(memcmp(o, wo, (size_t)nq * 4), 0);
	ck_assert_int_eq(memcmp(o16, w16, (size_t)nq * 2), 0);
	ck_assert_int_eq(memcmp(lse, wl, (size_t)nl * 4), 0);
	/* o NULL: the same bits alone */
	memset(o16, 0, (size_t)nq * 2);
	ck_assert_int_eq(kern_attn_fwd_bf(&K, &a, q16, k16, v16, pos, pos, NULL,
					  o16, lse), 0);
	ck_assert_int_eq(memcmp(o16, w16, (size_t)nq * 2), 0);
	for (int i = 0; i < 3; i++) {
		g[i] = take((size_t)n[i] * 4);
		wg[i] = take((size_t)n[i] * 4);
	}
	ck_assert_int_eq(kern_attn_bwd_bf(&K, &a, q16, k16, v16, o16, lse,
					  dout, NULL, pos, pos, g[0], g[1],
					  g[2]), 0);
	ck_assert_int_eq(kern_attn_bwd(&K, &a, q, kk, v, wo, wl, dout, pos,
				       pos, wg[0], wg[1], wg[2]), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(memcmp(g[i], wg[i], (size_t)n[i] * 4), 0);
	/* dout's bf16 bits instead (dout NULL): the rounded dout's result */
	ck_assert_int_eq(kern_round_bf16_copy(&K, nq, dout, w16), 0);
	ck_assert_int_eq(kern_attn_bwd_bf(&K, &a, q16, k16, v16, o16, lse,
					  NULL, w16, pos, pos, g[0], g[1],
					  g[2]), 0);
	ck_assert_int_eq(kern_attn_bwd(&K, &a, q, kk, v, wo, wl, dout, pos,
				       pos, wg[0], wg[1], wg[2]), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(memcmp(g[i], wg[i], (size_t)n[i] * 4), 0);
	ck_assert_int_eq(kern_attn_bwd_bf(&K, &a, q16, k16, v16, o16, lse,
					  NULL, NULL, pos, pos, g[0], g[1],
					  g[2]), KERN_EINVAL);
	/* a stale key copy: another output */
	k16[0] ^= 0x4000;
	ck_assert_int_eq(kern_attn_fwd_bf(&K, &a, q16, k16, v16, pos, pos, o,
					  o16, lse), 0);
	ck_assert_int_ne(memcmp(o, wo, (size_t)nq * 4), 0);
	ck_assert_int_eq(kern_attn_fwd_bf(&K, &a, NULL, k16, v16, pos, pos, o,
					  o16, lse), KERN_EINVAL);
	for (int i = 0; i < 3; i++) {
		free(g[i]);
		free(wg[i]);
	}
	free(q); free(kk); free(v); free(o); free(wo); free(lse); free(wl);
	free(dout); free(q16); free(k16); free(v16); free(o16); free(w16);
}
END_TEST

/* A device whose fast attention declines a call with a reason (as the
 * flash kernels do, kern_set_error(KERN_ENODEV, ...)): kern_attn_fwd_bf
 * runs the fallback and succeeds, and the reason does not stay behind to
 * be printed with a later KERN_ENODEV that has none (kern_error_text). */
static int declining_attn_fwd_bf(struct kern_ctx *k, const struct kern_attn *a,
				 const uint16_t *q16, const uint16_t *k16,
				 const uint16_t *v16, const int32_t *qpos,
				 const int32_t *kpos, float *o, uint16_t *o16,
				 float *lse)
{
	(void)k, (void)a, (void)q16, (void)k16, (void)v16, (void)qpos;
	(void)kpos, (void)o, (void)o16, (void)lse;
	return kern_set_error(KERN_ENODEV, "declined: not this shape");
}

START_TEST(attn_bf_decline_leaves_no_reason)
{
	struct kern_attn a = { 1, 3, 3, 2, 1, 4, 0.5f, 0 };
	struct kern_ops ops = *K.ops;
	const struct kern_ops *cpu = K.ops;
	float q[24], kk[12], v[12], o[24], lse[6];
	uint16_t q16[24], k16[12], v16[12], o16[24];

	fill(q, 24, 71, 1.0f);
	fill(kk, 12, 72, 1.0f);
	fill(v, 12, 73, 1.0f);
	ck_assert_int_eq(kern_round_bf16_copy(&K, 24, q, q16), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, 12, kk, k16), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, 12, v, v16), 0);
	ops.attn_fwd_bf = declining_attn_fwd_bf;
	K.ops = &ops;
	K.math = KERN_MATH_BF16;
	ck_assert_int_eq(kern_attn_fwd_bf(&K, &a, q16, k16, v16, NULL, NULL, o,
					  o16, lse), 0);
	K.ops = cpu;
	K.math = KERN_MATH_FP32;
	ck_assert_str_eq(kern_error_text(KERN_ENODEV),
			 kern_strerror(KERN_ENODEV));
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "round_copy_matches", round_copy_matches },
		{ "gemm_bf_every_transpose", gemm_bf_every_transpose },
		{ "gemm_bf_reads_the_copy", gemm_bf_reads_the_copy },
		{ "qkv_split_merge", qkv_split_merge },
		{ "adam_bf_copy", adam_bf_copy },
		{ "norms_fused", norms_fused },
		{ "attn_bf_copies", attn_bf_copies },
		{ "attn_bf_decline", attn_bf_decline_leaves_no_reason },
	};

	return RUN_CASES_FIXTURE("kernels_bf", cases, 60, setup, teardown);
}
