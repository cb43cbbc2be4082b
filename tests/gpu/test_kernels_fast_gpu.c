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
 *
 * Attention in the same mode, with its tolerances, is
 * tests/gpu/test_kernels_fast_attn_gpu.c's; kern_fast_gpu_fixture.h holds
 * what both use.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_fast_gpu_fixture.h"
#include "kern_gpu_fixture.h"

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

void test_fast_kernels(void)
{
	int rc = kern_set_math(&G, KERN_MATH_BF16);

	test_gemm_fast();
	test_gemm_reuse();
	test_gemm_copies();
	test_qkv_split();
	test_qkv_kernels();
	test_adam_bf();
	test_norms_fused();
	test_fast_attn_kernels(rc);
	/* back to fp32 for the tests that follow */
	kern_set_math(&G, KERN_MATH_FP32);
}
