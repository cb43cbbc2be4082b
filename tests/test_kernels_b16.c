/*
 * Tests for the vocabulary's bf16 tensors on the CPU (kern.h: the output
 * layer's logits, kern_gemm_bf16 and the cross-entropy pieces
 * kern_ce_*_b16, SwiGLU on linear_fc1's bf16 output, and the lookup
 * kern_embed_fwd_b16): each equals,
 * bit for bit, its fp32 counterpart on the widened values followed by
 * the rounding to bf16 (the CPU has no op of its own: kern.c widens, runs
 * the fp32 op, rounds), with masked columns (nvalid < cols), targets of
 * another rank, the gradient written in place over its logits, and bad
 * arguments refused. The CUDA twin's own kernels are compared with these
 * by tests/gpu/test_kernels_fast_gpu.c.
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

/* n random bf16 values in [-scale, scale), and their widened fp32 values
 * in *wide. */
static uint16_t *bf16_values(long long n, unsigned seed, float scale,
			     float **wide)
{
	uint16_t *h = take((size_t)n * sizeof(uint16_t));

	*wide = take((size_t)n * sizeof(float));
	fill(*wide, n, seed, scale);
	ck_assert_int_eq(kern_round_bf16_copy(&K, n, *wide, h), 0);
	return h;
}

/* C16 = round(op(A) op(B)) from the copies: kern_gemm_bf of the same
 * copies, rounded; the fp32 operands play no part. */
static void gemm_case(int ta, int tb, long long m, long long n, long long kd)
{
	long long lda = (ta ? m : kd) + 2, ldb = (tb ? kd : n) + 1;
	float *af, *bf;
	uint16_t *a = bf16_values((ta ? kd : m) * lda, 41, 1.0f, &af);
	uint16_t *b = bf16_values((tb ? n : kd) * ldb, 42, 1.0f, &bf);
	float *c = take((size_t)(m * n) * sizeof(float));
	uint16_t *want = take((size_t)(m * n) * sizeof(uint16_t));
	uint16_t *got = take((size_t)(m * n) * sizeof(uint16_t));

	ck_assert_int_eq(kern_gemm_bf(&K, ta, tb, m, n, kd, 1.0f, NULL, a, lda,
				      NULL, b, ldb, 0.0f, c, n), 0);
	ck_assert_int_eq(kern_to_bf16(&K, m * n, c, want), 0);
	ck_assert_int_eq(kern_gemm_bf16(&K, ta, tb, m, n, kd, a, lda, b, ldb,
					got), 0);
	ck_assert_int_eq(memcmp(got, want, (size_t)(m * n) * 2), 0);
	free(af); free(bf); free(a); free(b); free(c); free(want); free(got);
}

START_TEST(gemm_bf16_rounds_the_product)
{
	uint16_t x = 0, a[4] = { 0 }, b[4] = { 0 };

	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			gemm_case(ta, tb, 5, 7, 9);
			gemm_case(ta, tb, 17, 3, 40);
		}
	ck_assert_int_eq(kern_gemm_bf16(&K, 0, 0, 2, 2, 2, NULL, 2, &x, 2,
					&x), KERN_EINVAL);
	ck_assert_int_eq(kern_gemm_bf16(&K, 0, 0, 2, 2, 2, &x, 1, &x, 2, &x),
			 KERN_EINVAL); /* lda < kd */
	ck_assert_int_eq(kern_gemm_bf16(&K, 0, 0, 2, 2, 2, a, 2, b, 2, a),
			 KERN_EINVAL); /* C aliasing A */
	ck_assert_int_eq(kern_gemm_bf16(&K, 0, 0, 2, 2, 2, a, 2, b, 2, b),
			 KERN_EINVAL); /* C aliasing B */
	ck_assert_int_eq(kern_gemm_bf16(&K, 0, 0, 0, 2, 2, NULL, 2, NULL, 2,
					NULL), 0);
}
END_TEST

/* Every piece on bf16 logits against the fp32 piece on their widened
 * values: rows 6 of 11 columns, the last 2 masked (nvalid 9), targets in
 * and out of this rank's range [first, first + 11). */
START_TEST(ce_pieces_on_bf16_logits)
{
	enum { R = 6, V = 11, NV = 9, FIRST = 3 };
	float *l, mx[R], sm[R], tg[R], wmx[R], wsm[R], wtg[R];
	uint16_t *l16 = bf16_values(R * V, 43, 6.0f, &l);
	uint16_t *d16 = take(R * V * sizeof(uint16_t));
	uint16_t *w16 = take(R * V * sizeof(uint16_t));
	float *dl = take(R * V * sizeof(float));
	int32_t t[R] = { 3, 5, 11, 2, 40, 13 };

	ck_assert_int_eq(kern_ce_max_b16(&K, R, V, NV, l16, mx), 0);
	ck_assert_int_eq(kern_ce_max(&K, R, V, NV, l, wmx), 0);
	ck_assert_int_eq(memcmp(mx, wmx, sizeof(mx)), 0);
	ck_assert_int_eq(kern_ce_sumexp_b16(&K, R, V, NV, l16, mx, sm), 0);
	ck_assert_int_eq(kern_ce_sumexp(&K, R, V, NV, l, wmx, wsm), 0);
	ck_assert_int_eq(memcmp(sm, wsm, sizeof(sm)), 0);
	ck_assert_int_eq(kern_ce_target_b16(&K, R, V, FIRST, t, l16, tg), 0);
	ck_assert_int_eq(kern_ce_target(&K, R, V, FIRST, t, l, wtg), 0);
	ck_assert_int_eq(memcmp(tg, wtg, sizeof(tg)), 0);
	ck_assert(tg[3] == 0.0f && tg[4] == 0.0f && tg[0] != 0.0f);
	ck_assert_int_eq(kern_ce_bwd_b16(&K, R, V, NV, FIRST, t, mx, sm, 0.25f,
					 l16, d16), 0);
	ck_assert_int_eq(kern_ce_bwd(&K, R, V, NV, FIRST, t, wmx, wsm, 0.25f, l,
				     dl), 0);
	ck_assert_int_eq(kern_to_bf16(&K, R * V, dl, w16), 0);
	ck_assert_int_eq(memcmp(d16, w16, R * V * sizeof(uint16_t)), 0);
	/* in place over the logits, as the runtime runs it */
	ck_assert_int_eq(kern_ce_bwd_b16(&K, R, V, NV, FIRST, t, mx, sm, 0.25f,
					 l16, l16), 0);
	ck_assert_int_eq(memcmp(l16, w16, R * V * sizeof(uint16_t)), 0);
	ck_assert_int_eq(l16[V - 1], 0); /* a masked column's gradient */
	free(l); free(l16); free(d16); free(w16); free(dl);
}
END_TEST

/* SwiGLU on bf16: kern_swiglu_fwd / bwd on the widened values, rounded. */
START_TEST(swiglu_b16_rounds_the_plain_op)
{
	enum { R = 5, F = 7 };
	float *x, *dy, y[R * F], dx[R * 2 * F];
	uint16_t *x16 = bf16_values(R * 2 * F, 45, 3.0f, &x);
	uint16_t *dy16 = bf16_values(R * F, 46, 1.0f, &dy);
	uint16_t y16[R * F], w16[R * 2 * F], dx16[R * 2 * F];

	ck_assert_int_eq(kern_swiglu_fwd_b16(&K, R, F, x16, y16), 0);
	ck_assert_int_eq(kern_swiglu_fwd(&K, R, F, x, y), 0);
	ck_assert_int_eq(kern_to_bf16(&K, R * F, y, w16), 0);
	ck_assert_int_eq(memcmp(y16, w16, sizeof(y16)), 0);
	ck_assert_int_eq(kern_swiglu_bwd_b16(&K, R, F, x16, dy16, dx16), 0);
	ck_assert_int_eq(kern_swiglu_bwd(&K, R, F, x, dy, dx), 0);
	ck_assert_int_eq(kern_to_bf16(&K, R * 2 * F, dx, w16), 0);
	ck_assert_int_eq(memcmp(dx16, w16, sizeof(dx16)), 0);
	ck_assert_int_eq(kern_swiglu_fwd_b16(&K, R, 0, x16, y16), KERN_EINVAL);
	ck_assert_int_eq(kern_swiglu_bwd_b16(&K, R, F, x16, NULL, dx16),
			 KERN_EINVAL);
	/* the outputs may not alias the inputs, as kern_swiglu_fwd/bwd's */
	ck_assert_int_eq(kern_swiglu_fwd_b16(&K, R, F, x16, x16), KERN_EINVAL);
	ck_assert_int_eq(kern_swiglu_bwd_b16(&K, R, F, x16, dy16, x16),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_swiglu_bwd_b16(&K, R, F, dx16, dy16, dy16),
			 KERN_EINVAL);
	free(x);
	free(dy);
	free(x16);
	free(dy16);
}
END_TEST

/* The lookup in the table's bf16 copy: the widened rows of kern_embed_fwd
 * on the widened table, ids of another rank giving zeros. */
START_TEST(embed_fwd_b16_looks_up_rows)
{
	enum { ROWS = 9, H = 12, N = 7, FIRST = 4 };
	float *t, out[N * H], want[N * H];
	uint16_t *t16 = bf16_values(ROWS * H, 44, 2.0f, &t);
	int32_t tok[N] = { 4, 12, 3, 13, 8, 4, 100 };

	memset(out, 0xff, sizeof(out));
	ck_assert_int_eq(kern_embed_fwd_b16(&K, N, H, FIRST, ROWS, t16, tok,
					    out), 0);
	ck_assert_int_eq(kern_embed_fwd(&K, N, H, FIRST, ROWS, t, tok, want),
			 0);
	ck_assert_int_eq(memcmp(out, want, sizeof(out)), 0);
	ck_assert(out[2 * H] == 0.0f && out[1 * H] != 0.0f);
	ck_assert_int_eq(kern_embed_fwd_b16(&K, N, H, FIRST, ROWS, NULL, tok,
					    out), KERN_EINVAL);
	free(t);
	free(t16);
}
END_TEST

START_TEST(ce_b16_refuses_bad_arguments)
{
	uint16_t l16[4] = { 0 };
	float v[2];
	int32_t t[2] = { 0, 1 };

	ck_assert_int_eq(kern_ce_max_b16(&K, 2, 2, 3, l16, v), KERN_EINVAL);
	ck_assert_int_eq(kern_ce_max_b16(&K, 2, 2, 2, NULL, v), KERN_EINVAL);
	ck_assert_int_eq(kern_ce_sumexp_b16(&K, 2, 2, 2, l16, NULL, v),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_ce_target_b16(&K, 2, 2, -1, t, l16, v),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_ce_bwd_b16(&K, 2, 2, 2, 0, t, v, v, 1.0f, l16,
					 NULL), KERN_EINVAL);
	ck_assert_int_eq(kern_ce_max_b16(&K, 0, 2, 2, NULL, NULL), 0);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "gemm_bf16_rounds_the_product", gemm_bf16_rounds_the_product },
		{ "ce_pieces_on_bf16_logits", ce_pieces_on_bf16_logits },
		{ "embed_fwd_b16_looks_up_rows", embed_fwd_b16_looks_up_rows },
		{ "swiglu_b16_rounds_the_plain_op",
		  swiglu_b16_rounds_the_plain_op },
		{ "ce_b16_refuses_bad_arguments", ce_b16_refuses_bad_arguments },
	};

	return RUN_CASES_FIXTURE("kernels_b16", cases, 60, setup, teardown);
}
