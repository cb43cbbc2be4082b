/*
 * kern_attn's overwrite on the CPU (kernels/kern.h): attention's backward
 * with overwrite = 1 must leave in dq, dk, dv exactly, bit for bit, what
 * overwrite = 0 leaves in zeroed buffers, whatever they held before (NaN,
 * 1e30 and -0 planted here), through kern_attn_bwd and kern_attn_bwd_bf,
 * on shapes with query rows that attend no key and keys that no row
 * attends (their gradients must come out 0, not the garbage); overwrite =
 * 0 must still add (the zeroed result plus the start values, in float);
 * and with no query or no key rows, overwrite zeroes the gradients that
 * have elements and accumulate leaves them alone. The CUDA twin is held
 * to the same by tests/gpu/test_kernels_attnw_gpu.c.
 *
 * Positions as NULL (kern.h: 0, 1, 2, ..., what runtime/rt_train.c passes
 * without CP): the forward and the backward give the bits the arrays
 * 0, 1, 2, ... give, and not those of shifted positions.
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

/* NaN, 1e30, -0 and -1e30 in turn: what a stale buffer may hold. */
static void garbage(float *x, long long n)
{
	static const float g[4] = { NAN, 1e30f, -0.0f, -1e30f };

	for (long long i = 0; i < n; i++)
		x[i] = g[i % 4];
}

/* One shape: queries at qpos0 + i, keys at kpos0 + s (causal, so rows
 * before kpos0 attend nothing and keys past the last query are attended
 * by none); bf: through kern_attn_bwd_bf on the inputs' bf16 copies. */
static void check_shape(long long batch, long long sq, long long sk,
			long long nh, long long nkv, long long hd, int qpos0,
			int kpos0, int bf, unsigned seed)
{
	struct kern_attn a = { batch, sq, sk, nh, nkv, hd,
			       (float)(1.0 / sqrt((double)hd)), 0 };
	long long nq = batch * sq * nh * hd, nk = batch * sk * nkv * hd;
	long long nl = batch * nh * sq, n[3] = { nq, nk, nk };
	float *q = take((size_t)nq * 4), *kk = take((size_t)nk * 4);
	float *v = take((size_t)nk * 4), *dout = take((size_t)nq * 4);
	float *o = take((size_t)nq * 4), *lse = take((size_t)nl * 4);
	uint16_t *q16 = take((size_t)nq * 2), *k16 = take((size_t)nk * 2);
	uint16_t *v16 = take((size_t)nk * 2), *o16 = take((size_t)nq * 2);
	int32_t *qpos = take((size_t)sq * 4), *kpos = take((size_t)sk * 4);
	float *want[3], *got[3], *start[3];
	int zeros = 0;

	for (long long i = 0; i < sq; i++)
		qpos[i] = qpos0 + (int32_t)i;
	for (long long s = 0; s < sk; s++)
		kpos[s] = kpos0 + (int32_t)s;
	fill(q, nq, seed, 1.0f);
	fill(kk, nk, seed + 1, 1.0f);
	fill(v, nk, seed + 2, 1.0f);
	fill(dout, nq, seed + 3, 1.0f);
	ck_assert_int_eq(kern_round_bf16_copy(&K, nq, q, q16), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, nk, kk, k16), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, nk, v, v16), 0);
	ck_assert_int_eq(kern_attn_fwd(&K, &a, q, kk, v, qpos, kpos, o, lse),
			 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, nq, o, o16), 0);
	for (int t = 0; t < 3; t++) {
		want[t] = take((size_t)n[t] * 4); /* zeroed */
		got[t] = take((size_t)n[t] * 4);
		start[t] = take((size_t)n[t] * 4);
		garbage(got[t], n[t]);
		fill(start[t], n[t], seed + 4 + (unsigned)t, 0.5f);
	}
	for (int ow = 0; ow < 3; ow++) { /* 0 onto zeros, 1, 0 onto start */
		float **g = ow == 0 ? want : ow == 1 ? got : start;

		a.overwrite = ow == 1;
		if (bf)
			ck_assert_int_eq(kern_attn_bwd_bf(&K, &a, q16, k16,
							  v16, o16, lse, dout,
							  NULL, qpos, kpos,
							  g[0], g[1], g[2]),
					 0);
		else
			ck_assert_int_eq(kern_attn_bwd(&K, &a, q, kk, v, o,
						       lse, dout, qpos, kpos,
						       g[0], g[1], g[2]), 0);
	}
	for (int t = 0; t < 3; t++) {
		float *s0 = take((size_t)n[t] * 4);

		ck_assert_int_eq(memcmp(got[t], want[t], (size_t)n[t] * 4), 0);
		/* overwrite = 0 added: start + the zeroed result, in float */
		fill(s0, n[t], seed + 4 + (unsigned)t, 0.5f);
		for (long long i = 0; i < n[t]; i++) {
			float sum = s0[i] + want[t][i];

			ck_assert_msg(start[t][i] == sum,
				      "gradient %d [%lld]: %.9g, want %.9g",
				      t, i, (double)start[t][i], (double)sum);
			zeros += want[t][i] == 0.0f;
		}
		free(s0);
	}
	/* the shape has rows without keys or keys without rows: some
	 * gradients must have been zeros the garbage could not hide in */
	if (qpos0 < kpos0 || kpos0 + sk > qpos0 + sq)
		ck_assert_int_gt(zeros, 0);
	for (int t = 0; t < 3; t++) {
		free(want[t]);
		free(got[t]);
		free(start[t]);
	}
	free(q); free(kk); free(v); free(dout); free(o); free(lse);
	free(q16); free(k16); free(v16); free(o16); free(qpos); free(kpos);
}

/* A whole causal sequence (grouped heads); queries 0..11 against keys at
 * 4..27 (rows 0..3 attend nothing, keys past position 11 no row); a CP
 * ring step's shape (keys of a later block: every row attends them). */
START_TEST(overwrite_equals_zeroed)
{
	for (int bf = 0; bf < 2; bf++) {
		check_shape(2, 9, 9, 4, 2, 8, 0, 0, bf, 70);
		check_shape(1, 12, 24, 2, 1, 16, 0, 4, bf, 71);
		check_shape(2, 6, 6, 3, 3, 4, 6, 0, bf, 72);
	}
}
END_TEST

/* No query rows or no key rows: overwrite zeroes the other side's
 * gradients (every element), accumulate returns with them as they were. */
START_TEST(overwrite_empty_sides)
{
	float dq[2 * 3 * 2 * 4], dk[2 * 5 * 1 * 4], dv[2 * 5 * 1 * 4];
	float x[64] = { 0 };
	int32_t p[8] = { 0 };
	struct kern_attn a = { 2, 0, 5, 2, 1, 4, 0.5f, 1 };

	garbage(dk, 40);
	garbage(dv, 40);
	ck_assert_int_eq(kern_attn_bwd(&K, &a, NULL, x, x, NULL, NULL, NULL,
				       NULL, p, NULL, dk, dv), 0);
	for (int i = 0; i < 40; i++)
		ck_assert(dk[i] == 0.0f && dv[i] == 0.0f && !signbit(dk[i]) &&
			  !signbit(dv[i]));
	a.sq = 3;
	a.sk = 0;
	garbage(dq, 48);
	ck_assert_int_eq(kern_attn_bwd_bf(&K, &a, (const uint16_t *)x, NULL,
					  NULL, (const uint16_t *)x, x, x,
					  NULL, p, NULL, dq, NULL, NULL), 0);
	for (int i = 0; i < 48; i++)
		ck_assert(dq[i] == 0.0f && !signbit(dq[i]));
	a.overwrite = 0;
	garbage(dq, 48);
	ck_assert_int_eq(kern_attn_bwd(&K, &a, x, NULL, NULL, x, x, x, p,
				       NULL, dq, NULL, NULL), 0);
	ck_assert(isnan(dq[0]) && dq[1] == 1e30f);
}
END_TEST

/* The forward (o, lse) and the overwriting backward (dq, dk, dv) of one
 * causal shape with positions qp, kp (NULL allowed) into out: o, lse,
 * dq, dk, dv one after the other. */
static void attn_run(const struct kern_attn *a0, const int32_t *qp,
		     const int32_t *kp, unsigned seed, float *out)
{
	struct kern_attn a = *a0;
	long long nq = a.batch * a.sq * a.nh * a.hd;
	long long nk = a.batch * a.sk * a.nkv * a.hd;
	long long nl = a.batch * a.nh * a.sq;
	float *q = take((size_t)nq * 4), *kk = take((size_t)nk * 4);
	float *v = take((size_t)nk * 4), *dout = take((size_t)nq * 4);
	float *o = out, *lse = o + nq, *dq = lse + nl, *dk = dq + nq;
	float *dv = dk + nk;

	fill(q, nq, seed, 1.0f);
	fill(kk, nk, seed + 1, 1.0f);
	fill(v, nk, seed + 2, 1.0f);
	fill(dout, nq, seed + 3, 1.0f);
	ck_assert_int_eq(kern_attn_fwd(&K, &a, q, kk, v, qp, kp, o, lse), 0);
	a.overwrite = 1;
	ck_assert_int_eq(kern_attn_bwd(&K, &a, q, kk, v, o, lse, dout, qp, kp,
				       dq, dk, dv), 0);
	free(q); free(kk); free(v); free(dout);
}

START_TEST(null_positions_are_0_1_2)
{
	struct kern_attn a = { 2, 10, 10, 4, 2, 8, 0.35f, 0 };
	long long n = 2 * (2 * 10 * 4 * 8) + 2 * 4 * 10 + 2 * (2 * 10 * 2 * 8);
	float *x = take((size_t)n * 4), *y = take((size_t)n * 4);
	float *z = take((size_t)n * 4);
	int32_t pos[10], shifted[10];

	for (int i = 0; i < 10; i++) {
		pos[i] = i;
		shifted[i] = i + 3;
	}
	attn_run(&a, pos, pos, 90, x);
	attn_run(&a, NULL, NULL, 90, y);
	ck_assert_int_eq(memcmp(x, y, (size_t)n * 4), 0);
	attn_run(&a, pos, NULL, 90, y); /* one side NULL */
	ck_assert_int_eq(memcmp(x, y, (size_t)n * 4), 0);
	attn_run(&a, pos, shifted, 90, z); /* NULL is not "no mask" */
	ck_assert_int_ne(memcmp(x, z, (size_t)n * 4), 0);
	free(x);
	free(y);
	free(z);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "overwrite_equals_zeroed", overwrite_equals_zeroed },
		{ "overwrite_empty_sides", overwrite_empty_sides },
		{ "null_positions_are_0_1_2", null_positions_are_0_1_2 },
	};

	return RUN_CASES_FIXTURE("kernels_attnw", cases, 60, setup, teardown);
}
