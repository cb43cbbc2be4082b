/*
 * kern_mixed: the device-independent wrappers of the mixed-precision
 * (bf16) ops of kernels/kern.h: GEMMs on bf16 copies and into bf16,
 * attention on copies, linear_qkv's fused split with RoPE, the ops on
 * tensors bf16 runs hold in bf16 alone (the _b16 ops), Adam writing the
 * weights' copy, and the bf16 conversions. As kernels/kern.c's: the
 * arguments checked alike for every device, then the bound op, or, where
 * a device lacks it, the fp32 op on widened values (kint_widen).
 */
#include "kern.h"
#include "kern_int.h"

#include <stddef.h>
#include <stdint.h>

/* The bf16 copy of an operand of rows x cols (leading dimension ld)
 * widened into a buffer of this context (*tmp, the same indexing), or
 * *out = x when there is no copy. */
static int widen_operand(struct kern_ctx *k, long long rows, long long cols,
			 long long ld, const float *x, const uint16_t *x16,
			 float **tmp, const float **out)
{
	long long n = rows > 0 ? (rows - 1) * ld + cols : 0;
	int rc;

	*out = x;
	if (!x16)
		return 0;
	if (rows > 1 && (n - cols) / (rows - 1) != ld)
		return KERN_EINVAL;
	rc = kern_alloc(k, (size_t)(n > 0 ? n : 1) * sizeof(float),
			(void **)tmp);
	if (rc)
		return rc;
	*out = *tmp;
	return kern_from_bf16(k, n, x16, *tmp);
}

/* kern_gemm_bf on a device or mode without bf16 operands: the copies
 * widened (exact), then kern_gemm. */
static int gemm_bf_widened(struct kern_ctx *k, int ta, int tb, long long m,
			   long long n, long long kd, float alpha,
			   const float *a, const uint16_t *a16, long long lda,
			   const float *b, const uint16_t *b16, long long ldb,
			   float beta, float *c, long long ldc)
{
	float *ta16 = NULL, *tb16 = NULL;
	const float *wa, *wb;
	int rc = widen_operand(k, ta ? kd : m, ta ? m : kd, lda, a, a16,
			       &ta16, &wa);

	if (!rc)
		rc = widen_operand(k, tb ? n : kd, tb ? kd : n, ldb, b, b16,
				   &tb16, &wb);
	if (!rc)
		rc = kern_gemm(k, ta, tb, m, n, kd, alpha, wa, lda, wb, ldb,
			       beta, c, ldc);
	/* the widened copies stay valid until the queued GEMM has read them */
	if ((ta16 || tb16) && !rc)
		rc = kern_sync(k);
	kern_free(k, ta16);
	kern_free(k, tb16);
	return rc;
}

int kern_gemm_bf(struct kern_ctx *k, int ta, int tb, long long m,
		 long long n, long long kd, float alpha, const float *a,
		 const uint16_t *a16, long long lda, const float *b,
		 const uint16_t *b16, long long ldb, float beta, float *c,
		 long long ldc)
{
	if (!kint_gemm_dims_ok(ta, tb, m, n, kd, lda, ldb, ldc))
		return KERN_EINVAL;
	if (m == 0 || n == 0)
		return 0;
	if (!c || (kd > 0 && ((!a && !a16) || (!b && !b16))) ||
	    (const float *)c == a || (const float *)c == b ||
	    (const void *)c == a16 || (const void *)c == b16)
		return KERN_EINVAL;
	if (!a16 && !b16)
		return kern_gemm(k, ta, tb, m, n, kd, alpha, a, lda, b, ldb,
				 beta, c, ldc);
	if (kd > 0 && k->math == KERN_MATH_BF16 && k->ops->gemm_bf)
		return RUN(GEMM, gemm_bf, ta, tb, m, n, kd, alpha, a, a16, lda,
			   b, b16, ldb, beta, c, ldc);
	return gemm_bf_widened(k, ta, tb, m, n, kd, alpha, a, a16, lda, b, b16,
			       ldb, beta, c, ldc);
}

/* A fused qkv pass's shape is usable: kern_qkv's sizes, whole heads,
 * RoPE's base, the bound on its positions and the positions of its rows
 * (pos may be device memory, so its values go unchecked: a position at
 * or past pos_end breaks the caller's promise, which costs speed, not
 * correctness: kern.h). */
static int qkv_rope_ok(const struct kern_qkv *a, const int32_t *pos)
{
	return a && a->rows >= 0 && a->groups >= 1 && a->hd >= 2 &&
	       a->hd % 2 == 0 && a->nq >= a->hd && a->nq % a->hd == 0 &&
	       a->nk >= a->hd && a->nk % a->hd == 0 && a->theta > 0 &&
	       a->pos_end >= 0 && a->pos_end <= (1LL << 31) &&
	       OK_N(pos, a->rows);
}

/* No two of n arrays are the same (NULL ones aside). */
static int apart(const void *const *p, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (p[i] && p[i] == p[j])
				return 0;
	return 1;
}

int kern_qkv_rope_bf(struct kern_ctx *k, const struct kern_qkv *a,
		     const int32_t *pos, const float *packed, float *q,
		     float *kk, float *v, uint16_t *q16, uint16_t *k16,
		     uint16_t *v16)
{
	const void *all[7] = { packed, q, kk, v, q16, k16, v16 };

	if (!qkv_rope_ok(a, pos))
		return KERN_EINVAL;
	if (!a->rows)
		return 0;
	if (!packed || !q16 || !k16 || !v16 || !apart(all, 7))
		return KERN_EINVAL;
	return HAS_OP(k, qkv_rope_bf) ? RUN(MEM, qkv_rope_bf, a, pos, packed,
					    q, kk, v, q16, k16,
					    v16) : KERN_ENODEV;
}

int kern_qkv_merge_rope_bf(struct kern_ctx *k, const struct kern_qkv *a,
			   const int32_t *pos, const float *dq,
			   const float *dk, const float *dv, float *packed,
			   uint16_t *packed16)
{
	const void *all[5] = { dq, dk, dv, packed, packed16 };

	if (!qkv_rope_ok(a, pos))
		return KERN_EINVAL;
	if (!a->rows)
		return 0;
	if (!dq || !dk || !dv || !packed16 || !apart(all, 5))
		return KERN_EINVAL;
	return HAS_OP(k, qkv_merge_rope_bf) ? RUN(MEM, qkv_merge_rope_bf, a,
						  pos, dq, dk, dv, packed,
						  packed16) : KERN_ENODEV;
}

/* ---- tensors held in bf16 alone (the _b16 ops) -------------------------- */

int kern_gemm_bf16(struct kern_ctx *k, int ta, int tb, long long m,
		   long long n, long long kd, const uint16_t *a16,
		   long long lda, const uint16_t *b16, long long ldb,
		   uint16_t *c16)
{
	float *c = NULL;
	int rc;

	if (!kint_gemm_dims_ok(ta, tb, m, n, kd, lda, ldb, n))
		return KERN_EINVAL;
	if (m == 0 || n == 0)
		return 0;
	if (!c16 || (kd > 0 && (!a16 || !b16)) ||
	    (const uint16_t *)c16 == a16 || (const uint16_t *)c16 == b16)
		return KERN_EINVAL;
	if (kd > 0 && k->math == KERN_MATH_BF16 && HAS_OP(k, gemm_bf16))
		return RUN(GEMM, gemm_bf16, ta, tb, m, n, kd, a16, lda, b16,
			   ldb, c16);
	rc = kern_alloc(k, (size_t)(m * n) * sizeof(float), (void **)&c);
	if (rc)
		return rc;
	rc = kern_gemm_bf(k, ta, tb, m, n, kd, 1.0f, NULL, a16, lda, NULL, b16,
			  ldb, 0.0f, c, n);
	if (!rc)
		rc = kern_to_bf16(k, m * n, c, c16);
	return kint_done(k, c, rc);
}

int kern_ce_max_b16(struct kern_ctx *k, long long rows, long long cols,
		    long long nvalid, const uint16_t *l16, float *max)
{
	float *l = NULL;
	int rc;

	if (!kint_ce_ok(rows, cols, nvalid, l16) || !OK_N(max, rows))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	if (HAS_OP(k, ce_max_b16))
		return RUN(MEM, ce_max_b16, rows, cols, nvalid, l16, max);
	rc = kint_widen(k, rows * cols, l16, &l);
	if (!rc)
		rc = kern_ce_max(k, rows, cols, nvalid, l, max);
	return kint_done(k, l, rc);
}

int kern_ce_sumexp_b16(struct kern_ctx *k, long long rows, long long cols,
		       long long nvalid, const uint16_t *l16, const float *max,
		       float *sum)
{
	float *l = NULL;
	int rc;

	if (!kint_ce_ok(rows, cols, nvalid, l16) || !OK_N(max, rows) ||
	    !OK_N(sum, rows))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	if (HAS_OP(k, ce_sumexp_b16))
		return RUN(MEM, ce_sumexp_b16, rows, cols, nvalid, l16, max,
			   sum);
	rc = kint_widen(k, rows * cols, l16, &l);
	if (!rc)
		rc = kern_ce_sumexp(k, rows, cols, nvalid, l, max, sum);
	return kint_done(k, l, rc);
}

int kern_ce_target_b16(struct kern_ctx *k, long long rows, long long cols,
		       long long first, const int32_t *targets,
		       const uint16_t *l16, float *target)
{
	float *l = NULL;
	int rc;

	if (rows < 0 || cols < 0 || first < 0 || !OK_N(l16, rows * cols) ||
	    !OK_N(targets, rows) || !OK_N(target, rows))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	if (HAS_OP(k, ce_target_b16))
		return RUN(MEM, ce_target_b16, rows, cols, first, targets, l16,
			   target);
	rc = kint_widen(k, rows * cols, l16, &l);
	if (!rc)
		rc = kern_ce_target(k, rows, cols, first, targets, l, target);
	return kint_done(k, l, rc);
}

int kern_ce_bwd_b16(struct kern_ctx *k, long long rows, long long cols,
		    long long nvalid, long long first, const int32_t *targets,
		    const float *max, const float *sum, float scale,
		    const uint16_t *l16, uint16_t *d16)
{
	float *l = NULL;
	int rc;

	if (!kint_ce_ok(rows, cols, nvalid, l16) || first < 0 ||
	    !OK_N(targets, rows) || !OK_N(max, rows) || !OK_N(sum, rows) ||
	    !OK_N(d16, rows * cols))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	if (HAS_OP(k, ce_bwd_b16))
		return RUN(MEM, ce_bwd_b16, rows, cols, nvalid, first, targets,
			   max, sum, scale, l16, d16);
	rc = kint_widen(k, rows * cols, l16, &l);
	if (!rc)
		rc = kern_ce_bwd(k, rows, cols, nvalid, first, targets, max,
				 sum, scale, l, l);
	if (!rc)
		rc = kern_to_bf16(k, rows * cols, l, d16);
	return kint_done(k, l, rc);
}

int kern_swiglu_fwd_b16(struct kern_ctx *k, long long rows, long long f,
			const uint16_t *x16, uint16_t *y16)
{
	float *x = NULL; /* [rows, 2f] widened, then y [rows, f] */
	long long n = rows * 2 * f;
	int rc;

	if (rows < 0 || f < 1 || !OK_N(x16, rows) || !OK_N(y16, rows) ||
	    (rows && (const uint16_t *)y16 == x16))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	if (HAS_OP(k, swiglu_fwd_b16))
		return RUN(MEM, swiglu_fwd_b16, rows, f, x16, y16);
	rc = kint_scratch(k, n + rows * f, &x);
	if (!rc)
		rc = kern_from_bf16(k, n, x16, x);
	if (!rc)
		rc = kern_swiglu_fwd(k, rows, f, x, x + n);
	if (!rc)
		rc = kern_to_bf16(k, rows * f, x + n, y16);
	return kint_done(k, x, rc);
}

int kern_swiglu_bwd_b16(struct kern_ctx *k, long long rows, long long f,
			const uint16_t *x16, const uint16_t *dy16,
			uint16_t *dx16)
{
	float *x = NULL; /* [rows, 2f] x, [rows, f] dy, [rows, 2f] dx */
	long long n = rows * 2 * f, m = rows * f;
	int rc;

	if (rows < 0 || f < 1 || !OK_N(x16, rows) || !OK_N(dy16, rows) ||
	    !OK_N(dx16, rows) || (rows && ((const uint16_t *)dx16 == x16 ||
					   (const uint16_t *)dx16 == dy16)))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	if (HAS_OP(k, swiglu_bwd_b16))
		return RUN(MEM, swiglu_bwd_b16, rows, f, x16, dy16, dx16);
	rc = kint_scratch(k, 2 * n + m, &x);
	if (!rc)
		rc = kern_from_bf16(k, n, x16, x);
	if (!rc)
		rc = kern_from_bf16(k, m, dy16, x + n);
	if (!rc)
		rc = kern_swiglu_bwd(k, rows, f, x, x + n, x + n + m);
	if (!rc)
		rc = kern_to_bf16(k, n, x + n + m, dx16);
	return kint_done(k, x, rc);
}

int kern_embed_fwd_b16(struct kern_ctx *k, long long n, long long h,
		       long long first, long long rows,
		       const uint16_t *table16, const int32_t *tokens,
		       float *out)
{
	float *t = NULL;
	int rc;

	if (n < 0 || h < 1 || first < 0 || rows < 0 ||
	    !OK_N(table16, rows * h) || !OK_N(tokens, n) || !OK_N(out, n * h))
		return KERN_EINVAL;
	if (!n)
		return 0;
	if (HAS_OP(k, embed_fwd_b16))
		return RUN(MEM, embed_fwd_b16, n, h, first, rows, table16,
			   tokens, out);
	rc = kint_widen(k, rows * h, table16, &t);
	if (!rc)
		rc = kern_embed_fwd(k, n, h, first, rows, t, tokens, out);
	return kint_done(k, t, rc);
}

int kern_attn_fwd_bf(struct kern_ctx *k, const struct kern_attn *a,
		     const uint16_t *q16, const uint16_t *k16,
		     const uint16_t *v16, const int32_t *qpos,
		     const int32_t *kpos, float *o, uint16_t *o16,
		     float *lse)
{
	long long nq, nk;
	float *w[4] = { NULL, NULL, NULL, NULL };
	int rc;

	if (!kint_attn_ok(a))
		return KERN_EINVAL;
	nq = a->batch * a->sq * a->nh * a->hd;
	nk = a->batch * a->sk * a->nkv * a->hd;
	if (!OK_N(q16, nq) || !OK_N(o16, nq) || !OK_N(k16, nk) ||
	    !OK_N(v16, nk))
		return KERN_EINVAL;
	if (!nq)
		return 0;
	if (k->math == KERN_MATH_BF16 && HAS_OP(k, attn_fwd_bf)) {
		rc = RUN(ATTN, attn_fwd_bf, a, q16, k16, v16, qpos, kpos, o,
			 o16, lse);
		if (rc != KERN_ENODEV)
			return rc;
		/* the reason the fast kernel declined is not this call's
		 * error: read it, or a later KERN_ENODEV without a message
		 * of its own would print it (kern_error_text) */
		(void)kern_error_text(rc);
	}
	rc = kint_widen(k, nq, q16, &w[0]);
	if (!rc)
		rc = kint_widen(k, nk, k16, &w[1]);
	if (!rc)
		rc = kint_widen(k, nk, v16, &w[2]);
	if (!rc && !o) /* the bits alone: o in a scratch */
		rc = kint_scratch(k, nq, &w[3]);
	if (!rc)
		rc = kern_attn_fwd(k, a, w[0], w[1], w[2], qpos, kpos,
				   o ? o : w[3], lse);
	if (!rc)
		rc = kern_round_bf16_copy(k, nq, o ? o : w[3], o16);
	if (!rc)
		rc = kern_sync(k); /* the widened inputs are read by then */
	for (int i = 0; i < 4; i++)
		kern_free(k, w[i]);
	return rc;
}

int kern_attn_bwd_bf(struct kern_ctx *k, const struct kern_attn *a,
		     const uint16_t *q16, const uint16_t *k16,
		     const uint16_t *v16, const uint16_t *o16,
		     const float *lse, const float *dout,
		     const uint16_t *dout16, const int32_t *qpos,
		     const int32_t *kpos, float *dq, float *dk, float *dv)
{
	long long nq, nk;
	float *w[5] = { NULL, NULL, NULL, NULL, NULL };
	int rc;

	if (!kint_attn_ok(a))
		return KERN_EINVAL;
	nq = a->batch * a->sq * a->nh * a->hd;
	nk = a->batch * a->sk * a->nkv * a->hd;
	if (!OK_N(q16, nq) || !OK_N(o16, nq) || !OK_N(k16, nk) ||
	    !OK_N(v16, nk) || !(dout16 ? OK_N(dout16, nq) : OK_N(dout, nq)))
		return KERN_EINVAL;
	if (!nq || !nk)
		return kint_attn_bwd_empty(k, a, dq, dk, dv);
	if (k->math == KERN_MATH_BF16 && HAS_OP(k, attn_bwd_bf)) {
		rc = RUN(ATTN, attn_bwd_bf, a, q16, k16, v16, o16, lse, dout,
			 dout16, qpos, kpos, dq, dk, dv);
		if (rc != KERN_ENODEV)
			return rc;
		/* the reason the fast kernel declined is not this call's
		 * error: read it, or a later KERN_ENODEV without a message
		 * of its own would print it (kern_error_text) */
		(void)kern_error_text(rc);
	}
	rc = kint_widen(k, nq, q16, &w[0]);
	if (!rc)
		rc = kint_widen(k, nk, k16, &w[1]);
	if (!rc)
		rc = kint_widen(k, nk, v16, &w[2]);
	if (!rc)
		rc = kint_widen(k, nq, o16, &w[3]);
	if (!rc && dout16)
		rc = kint_widen(k, nq, dout16, &w[4]);
	if (!rc)
		rc = kern_attn_bwd(k, a, w[0], w[1], w[2], w[3], lse,
				   dout16 ? w[4] : dout, qpos, kpos, dq, dk,
				   dv);
	if (!rc)
		rc = kern_sync(k);
	for (int i = 0; i < 5; i++)
		kern_free(k, w[i]);
	return rc;
}

int kern_adam_bf(struct kern_ctx *k, long long n, float lr, float beta1,
		 float beta2, float eps, long long step, float *p,
		 const float *g, float *m, float *v, uint16_t *p16,
		 long long n16)
{
	int rc;

	if (n16 < 0 || n16 > n || !OK_N(p16, n16))
		return KERN_EINVAL;
	if (n16 > 0 && HAS_OP(k, adam_bf) && OK_N(p, n) && OK_N(g, n) &&
	    OK_N(m, n) && OK_N(v, n) && step >= 1 &&
	    beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && eps > 0)
		return RUN(MEM, adam_bf, n, lr, beta1, beta2, eps, step, p, g,
			   m, v, p16, n16);
	rc = kern_adam(k, n, lr, beta1, beta2, eps, step, p, g, m, v);
	return rc ? rc : kern_to_bf16(k, n16, p, p16);
}

int kern_to_bf16(struct kern_ctx *k, long long n, const float *x,
		 uint16_t *y)
{
	if (!OK_N(x, n) || !OK_N(y, n))
		return KERN_EINVAL;
	return n ? RUN(MEM, to_bf16, n, x, y) : 0;
}

int kern_from_bf16(struct kern_ctx *k, long long n, const uint16_t *x,
		   float *y)
{
	if (!OK_N(x, n) || !OK_N(y, n))
		return KERN_EINVAL;
	return n ? RUN(MEM, from_bf16, n, x, y) : 0;
}

int kern_round_bf16(struct kern_ctx *k, long long n, float *x)
{
	if (!OK_N(x, n))
		return KERN_EINVAL;
	return n ? RUN(MEM, round_bf16, n, x) : 0;
}

int kern_round_bf16_copy(struct kern_ctx *k, long long n, float *x,
			 uint16_t *y)
{
	if (!OK_N(x, n) || !OK_N(y, n))
		return KERN_EINVAL;
	return n ? RUN(MEM, round_bf16_copy, n, x, y) : 0;
}
