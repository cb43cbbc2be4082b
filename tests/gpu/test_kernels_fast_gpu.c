/*
 * test_kernels_fast_gpu: the CUDA twin's bf16 math mode (kern_set_math,
 * kernels/kern_cuda_fast.cu) against the CPU twin, on random shapes whose
 * inputs hold bf16 values as the runtime's do (runtime/rt_weights.c
 * rt_bf16). Linked into test_kernels_gpu; errors are the fixture's
 * normwise max |gpu - cpu| / max |cpu|.
 *
 * Tolerances and why:
 *  - gemm_bf16 1e-4 (TOL_RED): a product of two bf16 values is exact in
 *    fp32 and both sides accumulate in fp32 (the CPU in its BLAS's order),
 *    so only the order of the sums differs.
 *  - gemm_rounds: with inputs that are not bf16 values the fast path must
 *    round them (it multiplies on tensor cores): within 1e-4 of the CPU on
 *    the rounded inputs, and further than 1e-4 from the CPU on the exact
 *    ones (one bf16 rounding is up to 2^-9 relative).
 *  - gemm_reuse: consecutive GEMMs that share an operand: 1e-4 as above;
 *    an operand changed between two GEMMs by a kern op (kern_axpy) or as
 *    a GEMM's output must be read anew (no bf16 copy may outlive its call,
 *    kern.h): the product of the new values within 1e-2 (the
 *    output X = A B^T is rounded to bf16 on both sides from fp32 sums whose
 *    order differs, so an element may round the other way: 2^-8), where a
 *    stale copy is off by O(1).
 *  - gemm_copies 1e-4 (TOL_RED): kern_gemm_bf with the device's bf16
 *    copies (kern_round_bf16_copy, bit for bit the CPU's: round_copy 0)
 *    and the fp32 operand absent, against the CPU twin's kern_gemm_bf; a
 *    stale copy must change the device's product (it is what is read).
 *  - adam_bf 1e-5 (TOL_ELEM, as the fp32 Adam's test): kern_adam_bf on
 *    the device against the CPU twin's kern_adam, three steps, n not a
 *    multiple of 4 (the 4-wide kernel and its tail); its copy equals the
 *    bits of the device's own updated weights (adam_bf_bits 0).
 *  - norms_fused 1e-5 (TOL_ELEM; dg 1e-4, TOL_RED: a sum over rows):
 *    kern_add_rmsnorm_fwd (sum, rstd) and kern_rmsnorm_bwd_add (dx
 *    accumulated, dg) against the CPU twin, as the unfused norms' tests;
 *    its y, rounded to bf16 on both sides, 4e-3 (norms_fused_y,
 *    TOL_BF_OUT: both round to bf16, 2^-8 relative, and an fp32 value
 *    within an ulp of a rounding boundary may round the other way where
 *    the device's rstd differs from the CPU's in its last bits); the copy
 *    equals the bits of the device's own y (norms_fused_bits 0).
 *  - qkv_split 0: Megatron's fused qkv columns split and merged, bit for
 *    bit the CPU's (values are moved, not computed); fused with RoPE and
 *    the bf16 copies: tests/gpu/test_kernels_qkv_gpu.c.
 *  - attn_bf16 2e-2 for o, dq, dk, dv (lse 1e-3): the flash kernels round
 *    P, dS and the forward's o to bf16 (FlashAttention-2's precision; the
 *    same bound as tests/gpu/test_flash_gpu.c, here elementwise-max
 *    normwise so twice its 1e-2), the CPU sums in double.
 *  - attn_fast_is_flash 0: the fast path's o and lse equal bit for bit
 *    those of kern_flash_fwd (kernels/kern_flash.h) called directly on the
 *    same bf16 inputs; its dq, dk and dv those of kern_flash_bwd within
 *    1e-5 (sums by atomics: dq always, dk and dv where a sequence's
 *    blocks split each query group's heads, kern_flash_bwd.cu).
 *  - attn_copies 2e-2 (TOL_ATTN, lse 1e-3): kern_attn_fwd_bf / bwd_bf on
 *    the device's bf16 copies (no casts) against the CPU twin's, as
 *    attn_bf16; the o copy the flash forward writes equals the bits of
 *    the widened o (attn_copies_bits 0), as the forward with o NULL
 *    writes them alone, and the backward handed dout's
 *    bf16 bits (dout16) gives dq, dk, dv within 1e-5 of the backward that
 *    casts the fp32 dout (the same operand; the atomics' order differs).
 *  - attn_fallback 0: a head dim the flash kernels lack (32) runs the fp32
 *    reference kernels in bf16 mode too, bit for bit.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_flash.h"
#include "kern_gpu_fixture.h"

#define TOL_ATTN 2e-2
#define TOL_LSE 1e-3
#define TOL_DQ_ORDER 1e-5

/* Rounds to the nearest bf16 value, ties to even (finite inputs). */
static void round_bf16(float *x, long long n)
{
	for (long long i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &x[i], 4);
		u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
		memcpy(&x[i], &u, 4);
	}
}

static float *rnd16(long long n, float scale)
{
	float *v = rnd(n, scale);

	round_bf16(v, n);
	return v;
}

static void drop(void *d)
{
	kern_free(&G, d);
}

/* ---- GEMM ---------------------------------------------------------------- */

static const long long gemm_dims[][3] = {
	{ 1, 1, 1 }, { 17, 33, 65 }, { 128, 96, 257 }, { 300, 8, 1000 },
	{ 512, 384, 1024 },
};
#define NGEMM (sizeof(gemm_dims) / sizeof(gemm_dims[0]))

/* One shape and layout t (bit 0: A transposed, 1: B transposed, 2: padded
 * leading dimensions and beta = 0.5). exact: inputs are bf16 values. Writes
 * the error against the CPU on the bf16-rounded inputs and, in *raw,
 * against the CPU on the inputs as given. */
static int gemm_case(const long long *dm, int t, int exact, double *err,
		     double *raw)
{
	long long m = dm[0], n = dm[1], kd = dm[2];
	int ta = t & 1, tb = (t >> 1) & 1, pad = (t >> 2) & 1;
	long long lda = (ta ? m : kd) + pad * 3, ldb = (tb ? kd : n) + pad * 5;
	long long ldc = n + pad * 2, na = (ta ? kd : m) * lda;
	long long nb = (tb ? n : kd) * ldb, nc = m * ldc;
	float alpha = 0.75f, beta = pad ? 0.5f : 0.0f;
	float *a = exact ? rnd16(na, 1) : rnd(na, 1);
	float *b = exact ? rnd16(nb, 1) : rnd(nb, 1), *c = rnd(nc, 1);
	float *a16 = dup(a, na), *b16 = dup(b, nb), *c16 = dup(c, nc);
	float *cg = dup(c, nc), *da = up(a, (size_t)na * 4);
	float *db = up(b, (size_t)nb * 4), *dc = up(c, (size_t)nc * 4);
	int rc;

	round_bf16(a16, na);
	round_bf16(b16, nb);
	rc = kern_gemm(&C, ta, tb, m, n, kd, alpha, a16, lda, b16, ldb, beta,
		       c16, ldc);
	if (!rc)
		rc = kern_gemm(&C, ta, tb, m, n, kd, alpha, a, lda, b, ldb,
			       beta, c, ldc);
	if (!rc)
		rc = kern_gemm(&G, ta, tb, m, n, kd, alpha, da, lda, db, ldb,
			       beta, dc, ldc);
	if (!rc)
		rc = down(cg, dc, (size_t)nc * 4);
	*err = relerr(cg, c16, nc);
	*raw = relerr(cg, c, nc);
	drop(da); drop(db); drop(dc);
	free(a); free(b); free(c); free(a16); free(b16); free(c16); free(cg);
	return rc;
}

static void test_gemm_fast(void)
{
	struct verdict v = { 0, 0 }, vr = { 0, 0 };
	double err, raw, least_raw = INFINITY;

	for (size_t s = 0; s < NGEMM; s++)
		for (int t = 0; t < 8; t++) {
			see_rc(&v, gemm_case(gemm_dims[s], t, 1, &err, &raw));
			see(&v, err);
			see_rc(&vr, gemm_case(gemm_dims[s], t, 0, &err, &raw));
			see(&vr, err);
			if (gemm_dims[s][2] >= 64 && raw < least_raw)
				least_raw = raw;
		}
	report("gemm_bf16", &v, TOL_RED);
	/* the fast path rounded every input: far from the fp32 result */
	printf("gemm_rounds  least error against the unrounded fp32 product "
	       "%.3e (want > %.0e)\n", least_raw, TOL_RED);
	see(&vr, least_raw > TOL_RED ? 0 : INFINITY);
	report("gemm_rounds", &vr, TOL_RED);
}

#define TOL_REUSE_NEW 1e-2

/* C = A B^T on the device (bf16 mode) and on the CPU, A [m, kd], B [n, kd]:
 * the normwise error of the device's C against the CPU's. */
static double nt(struct verdict *v, long long m, long long n, long long kd,
		 const float *a, const float *da, const float *b,
		 const float *db, float *dc)
{
	float *c = xmalloc((size_t)(m * n) * 4);
	float *cg = xmalloc((size_t)(m * n) * 4);
	double e;

	see_rc(v, kern_gemm(&C, 0, 1, m, n, kd, 1.0f, a, kd, b, kd, 0.0f, c,
			    n));
	see_rc(v, kern_gemm(&G, 0, 1, m, n, kd, 1.0f, da, kd, db, kd, 0.0f, dc,
			    n));
	see_rc(v, down(cg, dc, (size_t)(m * n) * 4));
	e = relerr(cg, c, m * n);
	free(c);
	free(cg);
	return e;
}

static void test_gemm_reuse(void)
{
	/* square: X = B1 B1^T below is a valid A */
	const long long m = 64, n = 64, kd = 64;
	struct verdict v = { 0, 0 }, vn = { 0, 0 };
	float *a = rnd16(m * kd, 1), *b1 = rnd16(n * kd, 1);
	float *b2 = rnd16(n * kd, 1), *x = rnd16(m * n, 1);
	float *da = up(a, (size_t)(m * kd) * 4);
	float *da2 = up(a, (size_t)(m * kd) * 4);
	float *db1 = up(b1, (size_t)(n * kd) * 4);
	float *db2 = up(b2, (size_t)(n * kd) * 4);
	float *dc = up(x, (size_t)(m * n) * 4);
	float *dx = up(x, (size_t)(m * n) * 4);

	/* A shared by two calls in a row */
	see(&v, nt(&v, m, n, kd, a, da, b1, db1, dc));
	see(&v, nt(&v, m, n, kd, a, da, b2, db2, dc));
	report("gemm_reuse", &v, TOL_RED);
	/* A changed by a kern op between two calls */
	see(&vn, nt(&vn, m, n, kd, a, da, b1, db1, dc));
	see_rc(&vn, kern_axpy(&G, m * kd, 1.0f, da2, da)); /* A = 2 A */
	for (long long i = 0; i < m * kd; i++)
		a[i] *= 2.0f;
	see(&vn, nt(&vn, m, n, kd, a, da, b1, db1, dc));
	/* X an operand, then overwritten as the output of a GEMM (B1 B1^T),
	 * then read again */
	see_rc(&vn, kern_round_bf16(&G, m * n, dx));
	see(&vn, nt(&vn, m, n, kd, x, dx, b1, db1, dc));
	see_rc(&vn, kern_gemm(&C, 0, 1, m, n, kd, 1.0f, b1, kd, b1, kd, 0.0f, x,
			      n));
	see_rc(&vn, kern_gemm(&G, 0, 1, m, n, kd, 1.0f, db1, kd, db1, kd, 0.0f,
			      dx, n));
	round_bf16(x, m * n);
	see(&vn, nt(&vn, m, n, kd, x, dx, b1, db1, dc));
	report("gemm_reuse_new", &vn, TOL_REUSE_NEW);
	drop(da); drop(da2); drop(db1); drop(db2); drop(dc); drop(dx);
	free(a); free(b1); free(b2); free(x);
}

/* ---- GEMM on bf16 copies (kern_gemm_bf) ---------------------------------- */

/* One shape and layout t (as gemm_case): the device's copies made by
 * kern_round_bf16_copy (checked against the CPU's bits in *vr), the fp32
 * operand A absent on the device, B given; the CPU twin widens its own
 * copies. With `stale`, the device's copy of A has one value changed
 * after rounding: the products must then differ. */
static double copies_case(const long long *dm, int t, int stale,
			  struct verdict *vr, int *rc)
{
	long long m = dm[0], n = dm[1], kd = dm[2];
	int ta = t & 1, tb = (t >> 1) & 1, pad = (t >> 2) & 1;
	long long lda = (ta ? m : kd) + pad * 3, ldb = (tb ? kd : n) + pad * 5;
	long long ldc = n + pad * 2, na = (ta ? kd : m) * lda;
	long long nb = (tb ? n : kd) * ldb, nc = m * ldc;
	float *a = rnd(na, 1), *b = rnd(nb, 1), *c = rnd(nc, 1);
	float *cg = dup(c, nc), *da = up(a, (size_t)na * 4);
	float *db = up(b, (size_t)nb * 4), *dc = up(c, (size_t)nc * 4);
	uint16_t *ha = xmalloc((size_t)na * 2), *hb = xmalloc((size_t)nb * 2);
	uint16_t *ga = xmalloc((size_t)na * 2), *a16 = NULL, *b16 = NULL;
	double e;

	*rc = kern_alloc(&G, (size_t)na * 2, (void **)&a16);
	if (!*rc)
		*rc = kern_alloc(&G, (size_t)nb * 2, (void **)&b16);
	if (!*rc)
		*rc = kern_round_bf16_copy(&C, na, a, ha);
	if (!*rc)
		*rc = kern_round_bf16_copy(&C, nb, b, hb);
	if (!*rc)
		*rc = kern_round_bf16_copy(&G, na, da, a16);
	if (!*rc)
		*rc = kern_round_bf16_copy(&G, nb, db, b16);
	if (!*rc)
		*rc = down(ga, a16, (size_t)na * 2);
	if (!*rc)
		see(vr, memcmp(ga, ha, (size_t)na * 2) ? INFINITY : 0);
	if (!*rc && stale) { /* 10.0 (or -10.0) in place of A[0][0] */
		ga[0] = ga[0] == 0x4120 ? 0xc120 : 0x4120;
		*rc = kern_upload(&G, a16, ga, 2);
	}
	if (!*rc)
		*rc = kern_gemm_bf(&C, ta, tb, m, n, kd, 0.75f, NULL, ha, lda, b,
				   hb, ldb, pad ? 0.5f : 0.0f, c, ldc);
	if (!*rc)
		*rc = kern_gemm_bf(&G, ta, tb, m, n, kd, 0.75f, NULL, a16, lda,
				   db, b16, ldb, pad ? 0.5f : 0.0f, dc, ldc);
	if (!*rc)
		*rc = down(cg, dc, (size_t)nc * 4);
	e = relerr(cg, c, nc);
	drop(da); drop(db); drop(dc); drop(a16); drop(b16);
	free(a); free(b); free(c); free(cg); free(ha); free(hb); free(ga);
	return e;
}

static void test_gemm_copies(void)
{
	struct verdict v = { 0, 0 }, vr = { 0, 0 }, vs = { 0, 0 };
	int rc;

	for (size_t s = 0; s < NGEMM; s++)
		for (int t = 0; t < 8; t++) {
			see(&v, copies_case(gemm_dims[s], t, 0, &vr, &rc));
			see_rc(&v, rc);
			if (gemm_dims[s][2] < 64)
				continue;
			/* a stale copy is read: the product moves */
			see(&vs, copies_case(gemm_dims[s], t, 1, &vr, &rc) >
				 TOL_RED ? 0 : INFINITY);
			see_rc(&vs, rc);
		}
	report("gemm_copies", &v, TOL_RED);
	report("gemm_stale", &vs, 0);
	report("round_copy", &vr, 0);
}

#define TOL_BF_OUT 4e-3

/* 0 when the n bf16 bits at device h are those of the n floats at device
 * y (each float a bf16 value). */
static double bits_of(struct verdict *v, const float *y, const uint16_t *h,
		      long long n)
{
	float *x = xmalloc((size_t)n * 4);
	uint16_t *b = xmalloc((size_t)n * 2), *w = xmalloc((size_t)n * 2);
	double r;

	see_rc(v, down(x, y, (size_t)n * 4));
	see_rc(v, down(b, h, (size_t)n * 2));
	see_rc(v, kern_to_bf16(&C, n, x, w));
	r = memcmp(b, w, (size_t)n * 2) ? INFINITY : 0;
	free(x);
	free(b);
	free(w);
	return r;
}

static void test_adam_bf(void)
{
	const long long n = 100003, n16 = 99001;
	struct verdict v = { 0, 0 }, vb = { 0, 0 };
	float *p = rnd(n, 1), *g = rnd(n, 1), *m = rnd(n, 1), *w = rnd(n, 1);
	float *dp, *dg, *dm, *dw, *gp = xmalloc((size_t)n * 4);
	uint16_t *h = NULL;

	for (long long i = 0; i < n; i++)
		w[i] = fabsf(w[i]);
	dp = up(p, (size_t)n * 4);
	dg = up(g, (size_t)n * 4);
	dm = up(m, (size_t)n * 4);
	dw = up(w, (size_t)n * 4);
	see_rc(&v, kern_alloc(&G, (size_t)n16 * 2, (void **)&h));
	for (long long step = 1; step <= 3; step++) {
		see_rc(&v, kern_adam(&C, n, 1e-3f, 0.9f, 0.95f, 1e-8f, step, p,
				     g, m, w));
		see_rc(&v, kern_adam_bf(&G, n, 1e-3f, 0.9f, 0.95f, 1e-8f, step,
					dp, dg, dm, dw, h, n16));
	}
	see_rc(&v, down(gp, dp, (size_t)n * 4));
	see(&v, relerr(gp, p, n));
	see(&vb, bits_of(&vb, dp, h, n16));
	report("adam_bf", &v, TOL_ELEM);
	report("adam_bf_bits", &vb, 0);
	drop(dp); drop(dg); drop(dm); drop(dw); drop(h);
	free(p); free(g); free(m); free(w); free(gp);
}

static void test_norms_fused(void)
{
	static const long long dims[][2] = { { 1, 1 }, { 33, 100 },
					     { 300, 2048 } };
	struct verdict v = { 0, 0 }, vg = { 0, 0 }, vb = { 0, 0 };
	struct verdict vy = { 0, 0 };

	for (size_t t = 0; t < sizeof(dims) / sizeof(dims[0]); t++) {
		long long rows = dims[t][0], h = dims[t][1], n = rows * h;
		float *x = rnd(n, 2), *r = rnd(n, 1), *g = rnd(h, 1);
		float *dx = rnd(n, 1), *dg = rnd(h, 1);
		float *sum = xmalloc((size_t)n * 4), *y = xmalloc((size_t)n * 4);
		float *rs = xmalloc((size_t)rows * 4), *hx = xmalloc((size_t)n * 4);
		float *hg = xmalloc((size_t)h * 4);
		uint16_t *hy = xmalloc((size_t)n * 2), *y16 = NULL, *z16 = NULL;
		uint16_t *hz = xmalloc((size_t)n * 2);
		float *d[9] = { up(x, (size_t)n * 4), up(r, (size_t)n * 4),
				up(g, (size_t)h * 4), up(dx, (size_t)n * 4),
				up(dg, (size_t)h * 4), NULL, NULL, NULL, NULL };

		for (int i = 5; i < 8; i++)
			see_rc(&v, kern_alloc(&G, (size_t)n * 4, (void **)&d[i]));
		see_rc(&v, kern_alloc(&G, (size_t)n * 2, (void **)&y16));
		see_rc(&v, kern_alloc(&G, (size_t)n * 2, (void **)&z16));
		see_rc(&v, kern_add_rmsnorm_fwd(&C, rows, h, 1e-5f, x, r, sum,
						g, y, rs, hy));
		/* y NULL: the same bits alone */
		see_rc(&vb, kern_add_rmsnorm_fwd(&G, rows, h, 1e-5f, d[0], d[1],
						 d[5], d[2], NULL, d[7], z16));
		see_rc(&v, kern_add_rmsnorm_fwd(&G, rows, h, 1e-5f, d[0], d[1],
						d[5], d[2], d[6], d[7], y16));
		see_rc(&vb, down(hy, y16, (size_t)n * 2));
		see_rc(&vb, down(hz, z16, (size_t)n * 2));
		see(&vb, memcmp(hy, hz, (size_t)n * 2) ? INFINITY : 0);
		see_rc(&v, kern_rmsnorm_bwd_add(&C, rows, h, sum, g, rs, r, dx,
						dg));
		/* the _bf twin: dx's bits in z16 as the device rounds them */
		see_rc(&v, kern_rmsnorm_bwd_add_bf(&G, rows, h, d[5], d[2], d[7],
						   d[1], d[3], d[4], z16));
		see(&vb, bits_of(&vb, d[3], z16, n));
		see_rc(&v, down(hx, d[5], (size_t)n * 4));
		see(&v, relerr(hx, sum, n));
		see_rc(&vy, down(hx, d[6], (size_t)n * 4));
		see(&vy, relerr(hx, y, n));
		see(&vb, bits_of(&vb, d[6], y16, n));
		see_rc(&v, down(hx, d[7], (size_t)rows * 4));
		see(&v, relerr(hx, rs, rows));
		see_rc(&v, down(hx, d[3], (size_t)n * 4));
		see(&v, relerr(hx, dx, n));
		see_rc(&vg, down(hg, d[4], (size_t)h * 4));
		see(&vg, relerr(hg, dg, h));
		for (int i = 0; i < 8; i++)
			drop(d[i]);
		drop(y16);
		drop(z16);
		free(x); free(r); free(g); free(dx); free(dg); free(sum);
		free(y); free(rs); free(hx); free(hg); free(hy); free(hz);
	}
	report("norms_fused", &v, TOL_ELEM);
	report("norms_fused_y", &vy, TOL_BF_OUT);
	report("norms_fused_dg", &vg, TOL_RED);
	report("norms_fused_bits", &vb, 0);
}

/* kern_qkv_split and kern_qkv_merge against the CPU twin, bit for bit. */
static void test_qkv_split(void)
{
	static const long long dims[][4] = {
		{ 1, 1, 1, 1 }, { 37, 3, 8, 4 }, { 300, 8, 512, 128 },
	};
	struct verdict v = { 0, 0 };

	for (size_t s = 0; s < sizeof(dims) / sizeof(dims[0]); s++) {
		long long r = dims[s][0], g = dims[s][1], nq = dims[s][2];
		long long nk = dims[s][3], np = r * g * (nq + 2 * nk);
		long long cnt[3] = { r * g * nq, r * g * nk, r * g * nk };
		float *p = rnd(np, 1), *h[3], *d[3], *dp = up(p, (size_t)np * 4);
		float *back = xmalloc((size_t)np * 4), *dback = NULL;

		for (int i = 0; i < 3; i++) {
			h[i] = xmalloc((size_t)cnt[i] * 4);
			d[i] = up(h[i], (size_t)cnt[i] * 4);
		}
		see_rc(&v, kern_alloc(&G, (size_t)np * 4, (void **)&dback));
		see_rc(&v, kern_qkv_split(&C, r, g, nq, nk, p, h[0], h[1], h[2]));
		see_rc(&v, kern_qkv_split(&G, r, g, nq, nk, dp, d[0], d[1],
					  d[2]));
		see_rc(&v, kern_qkv_merge(&G, r, g, nq, nk, d[0], d[1], d[2],
					  dback));
		for (int i = 0; i < 3 && !v.rc; i++) {
			float *x = xmalloc((size_t)cnt[i] * 4);

			see_rc(&v, down(x, d[i], (size_t)cnt[i] * 4));
			see(&v, memcmp(x, h[i], (size_t)cnt[i] * 4) ? INFINITY :
			    0);
			free(x);
		}
		see_rc(&v, down(back, dback, (size_t)np * 4));
		see(&v, memcmp(back, p, (size_t)np * 4) ? INFINITY : 0);
		for (int i = 0; i < 3; i++) {
			free(h[i]);
			drop(d[i]);
		}
		free(p);
		free(back);
		drop(dp);
		drop(dback);
	}
	report("qkv_split", &v, 0);
}

/* ---- attention ----------------------------------------------------------- */

/* batch, sq, nh, nkv, hd; qoff: query positions start at qoff of sk = sq +
 * qoff keys (a context-parallel rank's later chunk reads earlier keys). */
static const long long attn_dims[][6] = {
	{ 1, 128, 4, 1, 64, 0 }, { 2, 200, 8, 2, 128, 0 },
	{ 1, 77, 4, 4, 64, 51 }, { 1, 300, 16, 2, 128, 0 },
};
#define NATTN_FAST (sizeof(attn_dims) / sizeof(attn_dims[0]))

struct fattn {
	struct kern_attn a;
	long long nq, nk, nl;
	float *q, *k, *v, *dout, *g[3]; /* host; g: dq, dk, dv start values */
	int32_t *qpos, *kpos;
	float *d[11]; /* device: q k v dout dq dk dv o lse qpos kpos */
};

static void fattn_init(struct fattn *f, const long long *dm)
{
	long long sk = dm[1] + dm[5];

	memset(f, 0, sizeof(*f));
	f->a = (struct kern_attn){ dm[0], dm[1], sk, dm[2], dm[3], dm[4],
				   (float)(1.0 / sqrt((double)dm[4])), 0 };
	f->nq = f->a.batch * f->a.sq * f->a.nh * f->a.hd;
	f->nk = f->a.batch * sk * f->a.nkv * f->a.hd;
	f->nl = f->a.batch * f->a.nh * f->a.sq;
	f->q = rnd16(f->nq, 1);
	f->k = rnd16(f->nk, 1);
	f->v = rnd16(f->nk, 1);
	f->dout = rnd16(f->nq, 1);
	f->g[0] = rnd(f->nq, 0.1f);
	f->g[1] = rnd(f->nk, 0.1f);
	f->g[2] = rnd(f->nk, 0.1f);
	f->qpos = xmalloc((size_t)f->a.sq * 4);
	f->kpos = xmalloc((size_t)sk * 4);
	for (long long i = 0; i < f->a.sq; i++)
		f->qpos[i] = (int32_t)(i + dm[5]);
	for (long long i = 0; i < sk; i++)
		f->kpos[i] = (int32_t)i;
	f->d[0] = up(f->q, (size_t)f->nq * 4);
	f->d[1] = up(f->k, (size_t)f->nk * 4);
	f->d[2] = up(f->v, (size_t)f->nk * 4);
	f->d[3] = up(f->dout, (size_t)f->nq * 4);
	f->d[4] = up(f->g[0], (size_t)f->nq * 4);
	f->d[5] = up(f->g[1], (size_t)f->nk * 4);
	f->d[6] = up(f->g[2], (size_t)f->nk * 4);
	f->d[7] = up(f->dout, (size_t)f->nq * 4); /* o, overwritten */
	f->d[8] = up(f->g[0], (size_t)f->nl * 4); /* lse, overwritten */
	f->d[9] = up(f->qpos, (size_t)f->a.sq * 4);
	f->d[10] = up(f->kpos, (size_t)sk * 4);
}

static void fattn_free(struct fattn *f)
{
	for (int i = 0; i < 11; i++)
		drop(f->d[i]);
	free(f->q); free(f->k); free(f->v); free(f->dout);
	free(f->g[0]); free(f->g[1]); free(f->g[2]);
	free(f->qpos); free(f->kpos);
}

/* The fast path on the device (G in bf16 mode) against the CPU. */
static void attn_vs_cpu(struct fattn *f, struct verdict *v,
			struct verdict *vl)
{
	long long n[3] = { f->nq, f->nk, f->nk };
	long long big = f->nq > f->nk ? f->nq : f->nk;
	float *o = xmalloc((size_t)f->nq * 4), *og = xmalloc((size_t)f->nq * 4);
	float *lse = xmalloc((size_t)f->nl * 4);
	float *lg = xmalloc((size_t)f->nl * 4);
	float *g[3], *back = xmalloc((size_t)big * 4);
	const struct kern_attn *a = &f->a;

	for (int i = 0; i < 3; i++)
		g[i] = dup(f->g[i], n[i]);
	see_rc(v, kern_attn_fwd(&C, a, f->q, f->k, f->v, f->qpos, f->kpos, o,
				lse));
	see_rc(v, kern_attn_fwd(&G, a, f->d[0], f->d[1], f->d[2],
				(void *)f->d[9], (void *)f->d[10], f->d[7],
				f->d[8]));
	see_rc(v, down(og, f->d[7], (size_t)f->nq * 4));
	see_rc(v, down(lg, f->d[8], (size_t)f->nl * 4));
	see(v, relerr(og, o, f->nq));
	see(vl, relerr_to(lg, lse, f->nl, 1.0));
	/* the backward from each side's own forward, as the runtime runs */
	see_rc(v, kern_attn_bwd(&C, a, f->q, f->k, f->v, o, lse, f->dout,
				f->qpos, f->kpos, g[0], g[1], g[2]));
	see_rc(v, kern_attn_bwd(&G, a, f->d[0], f->d[1], f->d[2], f->d[7],
				f->d[8], f->d[3], (void *)f->d[9],
				(void *)f->d[10], f->d[4], f->d[5], f->d[6]));
	for (int i = 0; i < 3; i++) {
		see_rc(v, down(back, f->d[4 + i], (size_t)n[i] * 4));
		see(v, relerr(back, g[i], n[i]));
	}
	free(o); free(lse); free(og); free(lg); free(back);
	for (int i = 0; i < 3; i++)
		free(g[i]);
}

/* bf16 copies on the device of n floats at d. */
static uint16_t *dev16(struct verdict *v, const float *d, long long n)
{
	uint16_t *p = NULL;

	see_rc(v, kern_alloc(&G, (size_t)n * 2, (void **)&p));
	if (p)
		see_rc(v, kern_to_bf16(&G, n, d, p));
	return p;
}

/* 0 when n floats at device pointers d and e are the same bits. */
static double same(struct verdict *v, const float *d, const float *e,
		   long long n)
{
	float *x = xmalloc((size_t)n * 4), *y = xmalloc((size_t)n * 4);
	double r;

	see_rc(v, down(x, d, (size_t)n * 4));
	see_rc(v, down(y, e, (size_t)n * 4));
	r = memcmp(x, y, (size_t)n * 4) ? INFINITY : 0;
	free(x);
	free(y);
	return r;
}

/* After attn_vs_cpu: the fast path's o, lse (d[7], d[8]) and gradients
 * (d[4..6]) against kern_flash_fwd/bwd called directly on the same
 * inputs. */
static void attn_is_flash(struct fattn *f, struct verdict *v)
{
	const struct kern_attn *a = &f->a;
	long long n[3] = { f->nq, f->nk, f->nk };
	const float *src[5] = { f->d[0], f->d[1], f->d[2], f->d[7], f->d[3] };
	long long cnt[5] = { f->nq, f->nk, f->nk, f->nq, f->nq };
	uint16_t *in[5], *o16 = NULL;
	float *of = NULL, *lse = NULL, *dsum = NULL, *dg[3], *x, *y;
	const int32_t *qp = (const int32_t *)f->d[9];
	const int32_t *kp = (const int32_t *)f->d[10];
	void *st = kern_stream(&G);

	for (int i = 0; i < 5; i++)
		in[i] = dev16(v, src[i], cnt[i]);
	see_rc(v, kern_alloc(&G, (size_t)f->nq * 2, (void **)&o16));
	see_rc(v, kern_alloc(&G, (size_t)f->nq * 4, (void **)&of));
	see_rc(v, kern_alloc(&G, (size_t)f->nl * 4, (void **)&lse));
	see_rc(v, kern_alloc(&G, (size_t)f->nl * 4, (void **)&dsum));
	for (int i = 0; i < 3; i++)
		dg[i] = up(f->g[i], (size_t)n[i] * 4);
	if (!v->rc) {
		see_rc(v, kern_flash_fwd(st, a, in[0], in[1], in[2], qp, kp,
					 o16, lse));
		see_rc(v, kern_from_bf16(&G, f->nq, o16, of));
		see(v, same(v, of, f->d[7], f->nq));
		see(v, same(v, lse, f->d[8], f->nl));
		see_rc(v, kern_flash_bwd(st, a, in[0], in[1], in[2], in[3],
					 f->d[8], in[4], qp, kp, dsum, dg[0],
					 dg[1], dg[2]));
		for (int i = 0; i < 3; i++) {
			x = xmalloc((size_t)n[i] * 4);
			y = xmalloc((size_t)n[i] * 4);
			see_rc(v, down(x, dg[i], (size_t)n[i] * 4));
			see_rc(v, down(y, f->d[4 + i], (size_t)n[i] * 4));
			see(v, relerr(y, x, n[i]) <= TOL_DQ_ORDER ? 0 :
			    INFINITY);
			free(x);
			free(y);
		}
	}
	for (int i = 0; i < 5; i++)
		drop(in[i]);
	for (int i = 0; i < 3; i++)
		drop(dg[i]);
	drop(o16); drop(of); drop(lse); drop(dsum);
}

/* kern_attn_fwd_bf / bwd_bf: the device on its copies against the CPU
 * twin on its own (f's inputs hold bf16 values: fattn_init). */
/* The forward with o NULL writes the same o16 bits (d[3]) alone. */
static double o_alone(const struct kern_attn *a, uint16_t *const d[4],
		      const int32_t *qp, const int32_t *kp, long long nq)
{
	struct verdict w = { 0, 0 };
	uint16_t *e16 = NULL, *h1 = xmalloc((size_t)nq * 2);
	uint16_t *h2 = xmalloc((size_t)nq * 2);
	float *lse = NULL;
	double r;

	see_rc(&w, kern_alloc(&G, (size_t)nq * 2, (void **)&e16));
	see_rc(&w, kern_alloc(&G, (size_t)(a->batch * a->nh * a->sq) * 4,
			      (void **)&lse));
	see_rc(&w, kern_attn_fwd_bf(&G, a, d[0], d[1], d[2], qp, kp, NULL,
				    e16, lse));
	see_rc(&w, down(h1, d[3], (size_t)nq * 2));
	see_rc(&w, down(h2, e16, (size_t)nq * 2));
	r = w.rc || memcmp(h1, h2, (size_t)nq * 2) ? INFINITY : 0;
	drop(e16);
	drop(lse);
	free(h1);
	free(h2);
	return r;
}

/* dout handed as its bf16 bits (dout NULL) gives the flash backward the
 * operand the fp32 dout's cast gives it: dq, dk, dv within the atomics'
 * order (1e-5 of their scale, as attn_is_flash). dg holds the fp32
 * dout's results; vb collects. */
static void attn_dout16(struct fattn *f, const struct kern_attn *a,
			uint16_t *const d[4], const float *dlse,
			const int32_t *qp, const int32_t *kp, float *const dg[3],
			const long long n[3], struct verdict *vb)
{
	long long nq = f->nq;
	float *x = xmalloc((size_t)nq * 4), *y;
	uint16_t *h16 = xmalloc((size_t)nq * 2), *d16 = NULL;
	float *eg[3] = { NULL, NULL, NULL };

	see_rc(vb, kern_to_bf16(&C, nq, f->dout, h16));
	d16 = up(h16, (size_t)nq * 2);
	for (int i = 0; i < 3; i++)
		see_rc(vb, kern_alloc(&G, (size_t)n[i] * 4, (void **)&eg[i]));
	see_rc(vb, kern_attn_bwd_bf(&G, a, d[0], d[1], d[2], d[3], dlse, NULL,
				    d16, qp, kp, eg[0], eg[1], eg[2]));
	for (int i = 0; i < 3; i++) {
		y = xmalloc((size_t)n[i] * 4);
		free(x);
		x = xmalloc((size_t)n[i] * 4);
		see_rc(vb, down(x, eg[i], (size_t)n[i] * 4));
		see_rc(vb, down(y, dg[i], (size_t)n[i] * 4));
		see(vb, relerr(x, y, n[i]) > 1e-5 ? INFINITY : 0);
		free(y);
		drop(eg[i]);
	}
	drop(d16);
	free(h16);
	free(x);
}

static void attn_copies(struct fattn *f, struct verdict *v,
			struct verdict *vl, struct verdict *vb)
{
	const struct kern_attn *a = &f->a;
	long long n[4] = { f->nq, f->nk, f->nk, f->nq };
	uint16_t *h[4], *d[4];
	float *o = xmalloc((size_t)f->nq * 4), *lse = xmalloc((size_t)f->nl * 4);
	float *g[3], *dg[3], *x;
	float *dof = NULL, *dlse = NULL;
	const int32_t *qp = (const int32_t *)f->d[9];
	const int32_t *kp = (const int32_t *)f->d[10];
	const float *src[3] = { f->q, f->k, f->v };

	for (int i = 0; i < 3; i++) {
		h[i] = xmalloc((size_t)n[i] * 2);
		see_rc(v, kern_to_bf16(&C, n[i], src[i], h[i]));
		d[i] = dev16(v, f->d[i], n[i]);
		g[i] = xmalloc((size_t)n[i] * 4);
		dg[i] = NULL;
		see_rc(v, kern_alloc(&G, (size_t)n[i] * 4, (void **)&dg[i]));
	}
	h[3] = xmalloc((size_t)f->nq * 2);
	see_rc(v, kern_alloc(&G, (size_t)f->nq * 2, (void **)&d[3]));
	see_rc(v, kern_alloc(&G, (size_t)f->nq * 4, (void **)&dof));
	see_rc(v, kern_alloc(&G, (size_t)f->nl * 4, (void **)&dlse));
	if (!v->rc) {
		see_rc(v, kern_attn_fwd_bf(&C, a, h[0], h[1], h[2], f->qpos,
					   f->kpos, o, h[3], lse));
		see_rc(v, kern_attn_fwd_bf(&G, a, d[0], d[1], d[2], qp, kp, dof,
					   d[3], dlse));
		x = xmalloc((size_t)f->nq * 4);
		see_rc(v, down(x, dof, (size_t)f->nq * 4));
		see(v, relerr(x, o, f->nq));
		see(vb, bits_of(vb, dof, d[3], f->nq));
		see(vb, o_alone(a, d, qp, kp, f->nq));
		free(x);
		x = xmalloc((size_t)f->nl * 4);
		see_rc(vl, down(x, dlse, (size_t)f->nl * 4));
		see(vl, relerr(x, lse, f->nl));
		free(x);
		see_rc(v, kern_attn_bwd_bf(&C, a, h[0], h[1], h[2], h[3], lse,
					   f->dout, NULL, f->qpos, f->kpos,
					   g[0], g[1], g[2]));
		see_rc(v, kern_attn_bwd_bf(&G, a, d[0], d[1], d[2], d[3], dlse,
					   f->d[3], NULL, qp, kp, dg[0], dg[1],
					   dg[2]));
		for (int i = 0; i < 3; i++) {
			x = xmalloc((size_t)n[i] * 4);
			see_rc(v, down(x, dg[i], (size_t)n[i] * 4));
			see(v, relerr(x, g[i], n[i]));
			free(x);
		}
		attn_dout16(f, a, d, dlse, qp, kp, dg, n, vb);
	}
	for (int i = 0; i < 4; i++) {
		free(h[i]);
		drop(d[i]);
	}
	for (int i = 0; i < 3; i++) {
		free(g[i]);
		drop(dg[i]);
	}
	drop(dof);
	drop(dlse);
	free(o);
	free(lse);
}

/* Head dim 32 (no flash kernel): the bf16 mode runs the fp32 reference
 * kernels, bit for bit. */
static void attn_fallback(struct verdict *v)
{
	static const long long dm[6] = { 1, 40, 2, 1, 32, 0 };
	struct fattn f, r;
	unsigned s0 = seed;

	fattn_init(&f, dm);
	seed = s0;
	fattn_init(&r, dm);
	see_rc(v, kern_set_math(&G, KERN_MATH_FP32));
	see_rc(v, kern_attn_fwd(&G, &r.a, r.d[0], r.d[1], r.d[2],
				(void *)r.d[9], (void *)r.d[10], r.d[7],
				r.d[8]));
	see_rc(v, kern_set_math(&G, KERN_MATH_BF16));
	see_rc(v, kern_attn_fwd(&G, &f.a, f.d[0], f.d[1], f.d[2],
				(void *)f.d[9], (void *)f.d[10], f.d[7],
				f.d[8]));
	see(v, same(v, f.d[7], r.d[7], f.nq));
	see(v, same(v, f.d[8], r.d[8], f.nl));
	fattn_free(&f);
	fattn_free(&r);
}

void test_fast_kernels(void)
{
	struct verdict vo = { 0, 0 }, vl = { 0, 0 }, vx = { 0, 0 };
	struct verdict vf = { 0, 0 }, vc = { 0, 0 }, vcl = { 0, 0 };
	struct verdict vcb = { 0, 0 };
	struct fattn f;

	see_rc(&vo, kern_set_math(&G, KERN_MATH_BF16));
	test_gemm_fast();
	test_gemm_reuse();
	test_gemm_copies();
	test_qkv_split();
	test_qkv_kernels();
	test_adam_bf();
	test_norms_fused();
	for (size_t t = 0; t < NATTN_FAST; t++) {
		fattn_init(&f, attn_dims[t]);
		attn_vs_cpu(&f, &vo, &vl);
		attn_is_flash(&f, &vx);
		attn_copies(&f, &vc, &vcl, &vcb);
		fattn_free(&f);
	}
	report("attn_bf16", &vo, TOL_ATTN);
	report("attn_bf16_lse", &vl, TOL_LSE);
	report("attn_is_flash", &vx, 0);
	report("attn_copies", &vc, TOL_ATTN);
	report("attn_copies_lse", &vcl, TOL_LSE);
	report("attn_copies_bits", &vcb, 0);
	attn_fallback(&vf);
	report("attn_fallback", &vf, 0);
	see_rc(&vf, kern_set_math(&G, KERN_MATH_FP32));
}
