/*
 * Tests for linear_qkv's columns fused with RoPE and the bf16 copies
 * (kern.h kern_qkv_rope_bf, kern_qkv_merge_rope_bf) on the CPU: each
 * against the unfused sequence the runtime ran before them
 * (runtime/rt_train.c: kern_qkv_split, kern_rope on q and k,
 * kern_round_bf16_copy of q, k, v; backward kern_rope inverse,
 * kern_round_bf16, kern_qkv_merge, kern_round_bf16_copy), bit for bit,
 * on random shapes: query groups with 1, 4 and 8 query heads each, head
 * dims 64 and 128 and small odd multiples of 2, odd row counts, positions
 * up to 128k with Llama 3's theta (their bound pos_end given, which
 * changes no value); the fp32 outputs left out (NULL) must not change the
 * copies; the refusals. The CUDA twin is compared with
 * this one by tests/gpu/test_kernels_qkv_gpu.c.
 *
 * Tolerance 0 everywhere: the CPU twin performs the same float operations
 * in the same order as the unfused ops (kernels/kern_cpu.c rope_cs,
 * rope_turn, bf16_of), so the CPU parity runs keep their bits.
 */
#include <check.h>
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

/* A deterministic draw in [0, n). */
static long long draw(unsigned *s, long long n)
{
	*s = *s * 1664525u + 1013904223u;
	return (long long)((*s >> 8) % (unsigned)n);
}

/* One case: the shape, its positions, and the three parts' sizes. */
struct qcase {
	struct kern_qkv a;
	int32_t *pos;
	long long nq, nk, np; /* elements of q, of k (= v), of packed */
};

static void qcase_init(struct qcase *c, unsigned *s, long long ratio,
		       long long hd)
{
	c->a.hd = hd;
	c->a.groups = 1 + draw(s, 3);
	c->a.nq = ratio * hd;
	c->a.nk = (1 + (draw(s, 4) == 0)) * hd; /* now and then 2 kv heads */
	c->a.rows = 2 * draw(s, 9) + 1;
	c->a.theta = draw(s, 2) ? 500000.0 : 10000.0;
	c->a.pos_end = 131072; /* the positions' bound (kern.h) */
	c->pos = take((size_t)c->a.rows * sizeof(int32_t));
	for (long long r = 0; r < c->a.rows; r++)
		c->pos[r] = (int32_t)draw(s, 131072);
	c->nq = c->a.rows * c->a.groups * c->a.nq;
	c->nk = c->a.rows * c->a.groups * c->a.nk;
	c->np = c->nq + 2 * c->nk;
}

/* The shapes the suite runs: every ratio x head dim of the runtime's
 * models, then small random ones (hd 2 to 30). */
#define N_CASES_QKV 12
static void qcase_nth(struct qcase *c, int i)
{
	static const long long ratio[3] = { 1, 4, 8 }, hd[2] = { 64, 128 };
	unsigned s = 7919u * (unsigned)(i + 1);

	if (i < 6)
		qcase_init(c, &s, ratio[i % 3], hd[i / 3]);
	else
		qcase_init(c, &s, 1 + draw(&s, 8), 2 * (1 + draw(&s, 15)));
}

static void qcase_release(struct qcase *c)
{
	free(c->pos);
}

/* The forward as the runtime ran it unfused: split, RoPE, copies. */
static void fwd_unfused(const struct qcase *c, const float *packed,
			float *q, float *kk, float *v, uint16_t *h[3])
{
	const struct kern_qkv *a = &c->a;

	ck_assert_int_eq(kern_qkv_split(&K, a->rows, a->groups, a->nq, a->nk,
					packed, q, kk, v), 0);
	ck_assert_int_eq(kern_rope(&K, a->rows, a->groups * a->nq / a->hd,
				   a->hd, a->theta, c->pos, 0, q), 0);
	ck_assert_int_eq(kern_rope(&K, a->rows, a->groups * a->nk / a->hd,
				   a->hd, a->theta, c->pos, 0, kk), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, c->nq, q, h[0]), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, c->nk, kk, h[1]), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, c->nk, v, h[2]), 0);
}

START_TEST(fwd_is_unfused)
{
	for (int i = 0; i < N_CASES_QKV; i++) {
		struct qcase c;
		float *p, *f[3], *w[3];
		uint16_t *h[3], *wh[3];
		long long n[3];

		qcase_nth(&c, i);
		n[0] = c.nq;
		n[1] = n[2] = c.nk;
		p = take((size_t)c.np * 4);
		fill(p, c.np, 100 + (unsigned)i, 3.0f);
		for (int j = 0; j < 3; j++) {
			f[j] = take((size_t)n[j] * 4);
			w[j] = take((size_t)n[j] * 4);
			h[j] = take((size_t)n[j] * 2);
			wh[j] = take((size_t)n[j] * 2);
		}
		fwd_unfused(&c, p, w[0], w[1], w[2], wh);
		ck_assert_int_eq(kern_qkv_rope_bf(&K, &c.a, c.pos, p, f[0],
						  f[1], f[2], h[0], h[1], h[2]),
				 0);
		for (int j = 0; j < 3; j++) {
			ck_assert_msg(!memcmp(f[j], w[j], (size_t)n[j] * 4),
				      "case %d part %d: fp32", i, j);
			ck_assert_msg(!memcmp(h[j], wh[j], (size_t)n[j] * 2),
				      "case %d part %d: copy", i, j);
			memset(h[j], 0, (size_t)n[j] * 2);
		}
		/* the fp32 outputs left out: the same copies */
		ck_assert_int_eq(kern_qkv_rope_bf(&K, &c.a, c.pos, p, NULL,
						  NULL, NULL, h[0], h[1], h[2]),
				 0);
		for (int j = 0; j < 3; j++) {
			ck_assert_msg(!memcmp(h[j], wh[j], (size_t)n[j] * 2),
				      "case %d part %d: copy alone", i, j);
			free(f[j]); free(w[j]); free(h[j]); free(wh[j]);
		}
		free(p);
		qcase_release(&c);
	}
}
END_TEST

/* The backward as the runtime ran it unfused, on copies of dq, dk, dv:
 * RoPE inverse, rounding, merge, the merged copy. */
static void bwd_unfused(const struct qcase *c, float *const d[3],
			float *packed, uint16_t *packed16)
{
	const struct kern_qkv *a = &c->a;

	ck_assert_int_eq(kern_rope(&K, a->rows, a->groups * a->nq / a->hd,
				   a->hd, a->theta, c->pos, 1, d[0]), 0);
	ck_assert_int_eq(kern_rope(&K, a->rows, a->groups * a->nk / a->hd,
				   a->hd, a->theta, c->pos, 1, d[1]), 0);
	ck_assert_int_eq(kern_round_bf16(&K, c->nq, d[0]), 0);
	ck_assert_int_eq(kern_round_bf16(&K, c->nk, d[1]), 0);
	ck_assert_int_eq(kern_round_bf16(&K, c->nk, d[2]), 0);
	ck_assert_int_eq(kern_qkv_merge(&K, a->rows, a->groups, a->nq, a->nk,
					d[0], d[1], d[2], packed), 0);
	ck_assert_int_eq(kern_round_bf16_copy(&K, c->np, packed, packed16), 0);
}

START_TEST(bwd_is_unfused)
{
	for (int i = 0; i < N_CASES_QKV; i++) {
		struct qcase c;
		float *d[3], *u[3], *p, *wp;
		uint16_t *h, *wh;
		long long n[3];

		qcase_nth(&c, i);
		n[0] = c.nq;
		n[1] = n[2] = c.nk;
		for (int j = 0; j < 3; j++) {
			d[j] = take((size_t)n[j] * 4);
			fill(d[j], n[j], 200 + 3 * (unsigned)i + (unsigned)j,
			     0.5f);
			u[j] = take((size_t)n[j] * 4);
			memcpy(u[j], d[j], (size_t)n[j] * 4);
		}
		p = take((size_t)c.np * 4);
		wp = take((size_t)c.np * 4);
		h = take((size_t)c.np * 2);
		wh = take((size_t)c.np * 2);
		ck_assert_int_eq(kern_qkv_merge_rope_bf(&K, &c.a, c.pos, d[0],
							d[1], d[2], p, h), 0);
		bwd_unfused(&c, u, wp, wh);
		ck_assert_msg(!memcmp(p, wp, (size_t)c.np * 4), "case %d", i);
		ck_assert_msg(!memcmp(h, wh, (size_t)c.np * 2), "case %d", i);
		/* the inputs are left as they are */
		for (int j = 0; j < 3; j++) {
			fill(u[j], n[j], 200 + 3 * (unsigned)i + (unsigned)j,
			     0.5f);
			ck_assert(!memcmp(u[j], d[j], (size_t)n[j] * 4));
		}
		memset(h, 0, (size_t)c.np * 2);
		ck_assert_int_eq(kern_qkv_merge_rope_bf(&K, &c.a, c.pos, d[0],
							d[1], d[2], NULL, h),
				 0);
		ck_assert_msg(!memcmp(h, wh, (size_t)c.np * 2), "case %d", i);
		for (int j = 0; j < 3; j++) {
			free(d[j]);
			free(u[j]);
		}
		free(p); free(wp); free(h); free(wh);
		qcase_release(&c);
	}
}
END_TEST

START_TEST(refusals)
{
	struct kern_qkv a = { 3, 2, 8, 4, 4, 10000.0, 3 }, b;
	int32_t pos[3] = { 0, 1, 2 };
	float p[3 * 2 * 16], q[48], kk[24], v[24];
	uint16_t q16[48], k16[24], v16[24], p16[96];

	fill(p, 96, 5, 1.0f);
	ck_assert_int_eq(kern_qkv_rope_bf(&K, &a, pos, p, q, kk, v, q16, k16,
					  v16), 0);
	b = a;
	b.hd = 3; /* odd */
	ck_assert_int_eq(kern_qkv_rope_bf(&K, &b, pos, p, q, kk, v, q16, k16,
					  v16), KERN_EINVAL);
	b = a;
	b.nq = 6; /* not whole heads */
	ck_assert_int_eq(kern_qkv_rope_bf(&K, &b, pos, p, q, kk, v, q16, k16,
					  v16), KERN_EINVAL);
	b = a;
	b.theta = 0;
	ck_assert_int_eq(kern_qkv_merge_rope_bf(&K, &b, pos, q, kk, v, p, p16),
			 KERN_EINVAL);
	b = a;
	b.pos_end = -1;
	ck_assert_int_eq(kern_qkv_rope_bf(&K, &b, pos, p, q, kk, v, q16, k16,
					  v16), KERN_EINVAL);
	b.pos_end = (1LL << 31) + 1; /* past every int32_t position */
	ck_assert_int_eq(kern_qkv_merge_rope_bf(&K, &b, pos, q, kk, v, p, p16),
			 KERN_EINVAL);
	b.pos_end = 1LL << 31;
	ck_assert_int_eq(kern_qkv_merge_rope_bf(&K, &b, pos, q, kk, v, p, p16),
			 0);
	ck_assert_int_eq(kern_qkv_rope_bf(&K, &a, NULL, p, q, kk, v, q16, k16,
					  v16), KERN_EINVAL);
	ck_assert_int_eq(kern_qkv_rope_bf(&K, &a, pos, p, p, kk, v, q16, k16,
					  v16), KERN_EINVAL);
	ck_assert_int_eq(kern_qkv_rope_bf(&K, &a, pos, p, q, kk, v, q16, NULL,
					  v16), KERN_EINVAL);
	ck_assert_int_eq(kern_qkv_merge_rope_bf(&K, &a, pos, q, kk, v, p,
						NULL), KERN_EINVAL);
	ck_assert_int_eq(kern_qkv_merge_rope_bf(&K, &a, pos, q, q, v, p, p16),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_qkv_merge_rope_bf(&K, NULL, pos, q, kk, v, p,
						p16), KERN_EINVAL);
	b = a;
	b.rows = 0; /* nothing to do */
	ck_assert_int_eq(kern_qkv_rope_bf(&K, &b, NULL, NULL, NULL, NULL, NULL,
					  NULL, NULL, NULL), 0);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "fwd_is_unfused", fwd_is_unfused },
		{ "bwd_is_unfused", bwd_is_unfused },
		{ "refusals", refusals },
	};

	return RUN_CASES_FIXTURE("kernels_qkv", cases, 60, setup, teardown);
}
