/*
 * kern: the device-independent wrappers. They check the arguments every
 * device would refuse the same way, then call the bound implementation, so
 * the CPU and CUDA twins only differ in the math.
 */
#include "kern.h"
#include "kern_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The last recorded error of this thread: its code and text (kern.h). */
static _Thread_local int last_rc;
static _Thread_local char last_text[KERN_ERROR_MAX];

int kern_set_error(int rc, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(last_text, sizeof(last_text), "%s: ",
			 kern_strerror(rc));

	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(last_text))
		vsnprintf(last_text + n, sizeof(last_text) - (size_t)n, fmt,
			  ap);
	va_end(ap);
	last_rc = rc;
	return rc;
}

const char *kern_error_text(int rc)
{
	if (rc == KERN_OK || rc != last_rc)
		return kern_strerror(rc);
	last_rc = KERN_OK; /* read once */
	return last_text;
}

const char *kern_strerror(int code)
{
	switch (code) {
	case KERN_OK:
		return "ok";
#define KERN_MSG(name, val, msg) case name: return msg;
	KERN_ERRORS(KERN_MSG)
#undef KERN_MSG
	}
	return "unknown kernel error";
}

int kern_init(struct kern_ctx *k, enum kern_device device, int threads)
{
	int rc;

	memset(k, 0, sizeof(*k));
	k->device = device;
	switch (device) {
	case KERN_CPU:
		k->ops = &kern_cpu_ops;
		break;
#ifdef KERN_WITH_CUDA
	case KERN_CUDA:
		k->ops = &kern_cuda_ops;
		break;
#endif
	default:
		return KERN_ENODEV;
	}
	rc = k->ops->init(k, threads);
	/* GTPLAN_KERN_PROFILE: profile where the device can (kern_prof_*).
	 * A profile asked for that cannot start fails kern_init, with the
	 * device given back: callers release no context whose kern_init
	 * failed (runtime/rt_main.c). */
	if (!rc && getenv("GTPLAN_KERN_PROFILE") && k->ops->prof_start) {
		rc = kern_prof_start(k);
		if (rc)
			kern_release(k); /* k->prof is 0: prints nothing */
	}
	return rc;
}

/* The profile since its last (re)start on one line of stderr, for
 * GTPLAN_KERN_PROFILE. */
static void prof_print(struct kern_ctx *k)
{
	double ms[KERN_PROF_CLASSES];
	long long calls[KERN_PROF_CLASSES];
	int rc = kern_prof_read(k, ms, calls);

	if (rc) {
		fprintf(stderr, "kern profile: %s\n", kern_strerror(rc));
		return;
	}
	fprintf(stderr, "kern profile:");
	for (int i = 0; i < KERN_PROF_CLASSES; i++)
		fprintf(stderr, "%s %s %.3f ms %lld calls", i ? ";" : "",
			kern_prof_name(i), ms[i], calls[i]);
	fputc('\n', stderr);
	if (k->ops->prof_ops)
		k->ops->prof_ops(k, stderr);
}

void kern_release(struct kern_ctx *k)
{
	if (k->prof)
		prof_print(k);
	if (k->ops)
		k->ops->release(k);
	memset(k, 0, sizeof(*k));
}

const char *kern_device_name(const struct kern_ctx *k)
{
	return k->ops ? k->ops->name : "none";
}

void *kern_stream(struct kern_ctx *k)
{
	return k->ops && k->ops->stream ? k->ops->stream(k) : NULL;
}

int kern_set_math(struct kern_ctx *k, enum kern_math math)
{
	if (math != KERN_MATH_FP32 && math != KERN_MATH_BF16)
		return KERN_EINVAL;
	k->math = math;
	return 0;
}

int kern_prof_start(struct kern_ctx *k)
{
	int rc;

	if (!k->ops->prof_start)
		return KERN_ENODEV;
	rc = k->ops->prof_start(k);
	k->prof = !rc;
	return rc;
}

int kern_prof_reset(struct kern_ctx *k)
{
	return k->prof ? kern_prof_start(k) : 0;
}

int kern_prof_read(struct kern_ctx *k, double ms[KERN_PROF_CLASSES],
		   long long calls[KERN_PROF_CLASSES])
{
	if (!k->prof)
		return KERN_EINVAL;
	return k->ops->prof_read(k, ms, calls);
}

const char *kern_prof_name(int cls)
{
	static const char *const names[KERN_PROF_CLASSES] = {
		"gemm", "attention", "memory-bound", "copy",
	};

	return cls >= 0 && cls < KERN_PROF_CLASSES ? names[cls] : "?";
}

int kint_mark_begin(struct kern_ctx *k, int cls, const char *op)
{
	if (k->prof)
		k->ops->mark(k, cls, op, 0);
	return 0;
}

int kint_mark_end(struct kern_ctx *k, int cls, const char *op, int rc)
{
	if (k->prof)
		k->ops->mark(k, cls, op, 1);
	return rc;
}

int kern_alloc(struct kern_ctx *k, size_t bytes, void **out)
{
	if (!out)
		return KERN_EINVAL;
	*out = NULL;
	return k->ops->alloc(k, bytes, out);
}

void kern_free(struct kern_ctx *k, void *p)
{
	if (p)
		k->ops->free(k, p);
}

int kint_scratch(struct kern_ctx *k, long long n, float **out)
{
	return kern_alloc(k, (size_t)(n > 0 ? n : 1) * sizeof(float),
			  (void **)out);
}

int kint_widen(struct kern_ctx *k, long long n, const uint16_t *x16,
	       float **out)
{
	int rc = kint_scratch(k, n, out);

	return rc ? rc : kern_from_bf16(k, n, x16, *out);
}

int kint_done(struct kern_ctx *k, float *tmp, int rc)
{
	if (!rc)
		rc = kern_sync(k);
	kern_free(k, tmp);
	return rc;
}

int kern_upload(struct kern_ctx *k, void *dst, const void *src, size_t n)
{
	if (n && (!dst || !src))
		return KERN_EINVAL;
	return n ? RUN(COPY, upload, dst, src, n) : 0;
}

int kern_download(struct kern_ctx *k, void *dst, const void *src, size_t n)
{
	if (n && (!dst || !src))
		return KERN_EINVAL;
	return n ? RUN(COPY, download, dst, src, n) : 0;
}

int kern_copy(struct kern_ctx *k, void *dst, const void *src, size_t n)
{
	if (n && (!dst || !src))
		return KERN_EINVAL;
	return n && dst != src ? RUN(COPY, copy, dst, src, n) : 0;
}

int kern_zero(struct kern_ctx *k, void *p, size_t bytes)
{
	if (bytes && !p)
		return KERN_EINVAL;
	return bytes ? RUN(COPY, zero, p, bytes) : 0;
}

int kern_sync(struct kern_ctx *k)
{
	return k->ops->sync(k);
}

/* A GEMM's sizes and leading dimensions are usable (row-major: each
 * operand's leading dimension at least its stored row length). */
int kint_gemm_dims_ok(int ta, int tb, long long m, long long n,
			long long kd, long long lda, long long ldb,
			long long ldc)
{
	long long arow = ta ? m : kd, brow = tb ? kd : n;

	return m >= 0 && n >= 0 && kd >= 0 && lda >= (arow > 1 ? arow : 1) &&
	       ldb >= (brow > 1 ? brow : 1) && ldc >= (n > 1 ? n : 1);
}

int kern_gemm(struct kern_ctx *k, int ta, int tb, long long m, long long n,
	      long long kd, float alpha, const float *a, long long lda,
	      const float *b, long long ldb, float beta, float *c,
	      long long ldc)
{
	if (!kint_gemm_dims_ok(ta, tb, m, n, kd, lda, ldb, ldc))
		return KERN_EINVAL;
	if (m == 0 || n == 0)
		return 0;
	if (!c || (kd > 0 && (!a || !b)) || (const float *)c == a ||
	    (const float *)c == b)
		return KERN_EINVAL;
	return RUN(GEMM, gemm, ta, tb, m, n, kd, alpha, a, lda, b, ldb, beta, c,
		   ldc);
}

int kern_axpy(struct kern_ctx *k, long long n, float alpha, const float *x,
	      float *y)
{
	if (!OK_N(x, n) || !OK_N(y, n))
		return KERN_EINVAL;
	return n ? RUN(MEM, axpy, n, alpha, x, y) : 0;
}

int kern_rmsnorm_fwd(struct kern_ctx *k, long long rows, long long h,
		     float eps, const float *x, const float *g, float *y,
		     float *rstd)
{
	if (rows < 0 || h < 1 || !OK_N(g, h) || !OK_N(x, rows) ||
	    !OK_N(y, rows) || !OK_N(rstd, rows) || !(eps >= 0))
		return KERN_EINVAL;
	return rows ? RUN(MEM, rmsnorm_fwd, rows, h, eps, x, g, y, rstd) : 0;
}

int kern_rmsnorm_bwd(struct kern_ctx *k, long long rows, long long h,
		     const float *x, const float *g, const float *rstd,
		     const float *dy, float *dx, float *dg)
{
	if (rows < 0 || h < 1 || !OK_N(g, h) || !OK_N(dg, h) ||
	    !OK_N(x, rows) || !OK_N(rstd, rows) || !OK_N(dy, rows) ||
	    !OK_N(dx, rows) ||
	    (rows && ((const float *)dx == dy || (const float *)dx == x)))
		return KERN_EINVAL;
	return rows ? RUN(MEM, rmsnorm_bwd, rows, h, x, g, rstd, dy, dx,
			  dg) : 0;
}

int kern_add_rmsnorm_fwd(struct kern_ctx *k, long long rows, long long h,
			 float eps, const float *x, const float *r, float *sum,
			 const float *g, float *y, float *rstd, uint16_t *y16)
{
	int rc;

	float *tmp = NULL;

	if (rows < 0 || h < 1 || !OK_N(g, h) || !OK_N(x, rows) ||
	    !OK_N(r, rows) || !OK_N(sum, rows) ||
	    !(y16 ? OK_N(y16, rows) : OK_N(y, rows)) ||
	    !OK_N(rstd, rows) || !(eps >= 0) ||
	    (rows && ((const float *)sum == r || (const float *)y == x ||
		      y == sum || (const float *)y == r)))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	if (k->ops->add_rmsnorm_fwd)
		return RUN(MEM, add_rmsnorm_fwd, rows, h, eps, x, r, sum, g, y,
			   rstd, y16);
	rc = y ? 0 : kint_scratch(k, rows * h, &tmp);
	if (!rc)
		rc = kern_copy(k, sum, x, (size_t)(rows * h) * sizeof(float));
	if (!rc)
		rc = kern_axpy(k, rows * h, 1.0f, r, sum);
	if (!rc)
		rc = kern_rmsnorm_fwd(k, rows, h, eps, sum, g, y ? y : tmp,
				      rstd);
	if (!rc && y16)
		rc = kern_round_bf16_copy(k, rows * h, y ? y : tmp, y16);
	return tmp ? kint_done(k, tmp, rc) : rc;
}

/* kern_rmsnorm_bwd_add and (dx16 set) its _bf twin. */
static int norm_bwd_add(struct kern_ctx *k, long long rows, long long h,
			const float *x, const float *g, const float *rstd,
			const float *dy, float *dx, float *dg, uint16_t *dx16)
{
	float *tmp = NULL;
	int rc;

	if (rows < 0 || h < 1 || !OK_N(g, h) || !OK_N(dg, h) ||
	    !OK_N(x, rows) || !OK_N(rstd, rows) || !OK_N(dy, rows) ||
	    !OK_N(dx, rows) ||
	    (rows && ((const float *)dx == dy || (const float *)dx == x)))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	if (k->ops->rmsnorm_bwd_add)
		return RUN(MEM, rmsnorm_bwd_add, rows, h, x, g, rstd, dy, dx,
			   dg, dx16);
	rc = kint_scratch(k, rows * h, &tmp);
	if (!rc)
		rc = kern_rmsnorm_bwd(k, rows, h, x, g, rstd, dy, tmp, dg);
	if (!rc)
		rc = kern_axpy(k, rows * h, 1.0f, tmp, dx);
	if (!rc && dx16)
		rc = kern_to_bf16(k, rows * h, dx, dx16);
	return kint_done(k, tmp, rc); /* tmp is read by the queued axpy */
}

int kern_rmsnorm_bwd_add(struct kern_ctx *k, long long rows, long long h,
			 const float *x, const float *g, const float *rstd,
			 const float *dy, float *dx, float *dg)
{
	return norm_bwd_add(k, rows, h, x, g, rstd, dy, dx, dg, NULL);
}

int kern_rmsnorm_bwd_add_bf(struct kern_ctx *k, long long rows, long long h,
			    const float *x, const float *g, const float *rstd,
			    const float *dy, float *dx, float *dg,
			    uint16_t *dx16)
{
	if (!OK_N(dx16, rows))
		return KERN_EINVAL;
	return norm_bwd_add(k, rows, h, x, g, rstd, dy, dx, dg, dx16);
}

/* A [rows, cols] logit block with nvalid <= cols real columns. */
int kint_ce_ok(long long rows, long long cols, long long nvalid,
		 const void *logits)
{
	return rows >= 0 && cols >= 0 && nvalid >= 0 && nvalid <= cols &&
	       OK_N(logits, rows * cols);
}

int kern_ce_max(struct kern_ctx *k, long long rows, long long cols,
		long long nvalid, const float *logits, float *max)
{
	if (!kint_ce_ok(rows, cols, nvalid, logits) || !OK_N(max, rows))
		return KERN_EINVAL;
	return rows ? RUN(MEM, ce_max, rows, cols, nvalid, logits, max) : 0;
}

int kern_ce_sumexp(struct kern_ctx *k, long long rows, long long cols,
		   long long nvalid, const float *logits, const float *max,
		   float *sum)
{
	if (!kint_ce_ok(rows, cols, nvalid, logits) || !OK_N(max, rows) ||
	    !OK_N(sum, rows))
		return KERN_EINVAL;
	return rows ? RUN(MEM, ce_sumexp, rows, cols, nvalid, logits, max,
			  sum) : 0;
}

int kern_ce_target(struct kern_ctx *k, long long rows, long long cols,
		   long long first, const int32_t *targets,
		   const float *logits, float *target)
{
	if (!kint_ce_ok(rows, cols, cols, logits) || first < 0 ||
	    !OK_N(targets, rows) || !OK_N(target, rows))
		return KERN_EINVAL;
	return rows ? RUN(MEM, ce_target, rows, cols, first, targets, logits,
			  target) : 0;
}

int kern_ce_loss(struct kern_ctx *k, long long rows, const float *max,
		 const float *sum, const float *target, float *loss)
{
	if (rows < 0 || !OK_N(max, rows) || !OK_N(sum, rows) ||
	    !OK_N(target, rows) || !OK_N(loss, rows))
		return KERN_EINVAL;
	return rows ? RUN(MEM, ce_loss, rows, max, sum, target, loss) : 0;
}

int kern_ce_bwd(struct kern_ctx *k, long long rows, long long cols,
		long long nvalid, long long first, const int32_t *targets,
		const float *max, const float *sum, float scale,
		const float *logits, float *dlogits)
{
	if (!kint_ce_ok(rows, cols, nvalid, logits) || first < 0 ||
	    !OK_N(targets, rows) || !OK_N(max, rows) || !OK_N(sum, rows) ||
	    !OK_N(dlogits, rows * cols))
		return KERN_EINVAL;
	return rows ? RUN(MEM, ce_bwd, rows, cols, nvalid, first, targets, max,
			  sum, scale, logits, dlogits) : 0;
}

int kern_bias_add(struct kern_ctx *k, long long rows, long long cols,
		  const float *b, float *y)
{
	if (rows < 0 || cols < 1 || !OK_N(b, cols) || !OK_N(y, rows))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	return HAS_OP(k, bias_add) ? RUN(MEM, bias_add, rows, cols, b,
					 y) : KERN_ENODEV;
}

int kern_bias_grad(struct kern_ctx *k, long long rows, long long cols,
		   const float *dy, float *db)
{
	if (rows < 0 || cols < 1 || !OK_N(db, cols) || !OK_N(dy, rows))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	return HAS_OP(k, bias_grad) ? RUN(MEM, bias_grad, rows, cols, dy,
					  db) : KERN_ENODEV;
}

int kern_swiglu_fwd(struct kern_ctx *k, long long rows, long long f,
		    const float *x, float *y)
{
	if (rows < 0 || f < 1 || !OK_N(x, rows) || !OK_N(y, rows) ||
	    (rows && (const float *)y == x))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	return HAS_OP(k, swiglu_fwd) ? RUN(MEM, swiglu_fwd, rows, f, x,
					   y) : KERN_ENODEV;
}

int kern_swiglu_bwd(struct kern_ctx *k, long long rows, long long f,
		    const float *x, const float *dy, float *dx)
{
	if (rows < 0 || f < 1 || !OK_N(x, rows) || !OK_N(dy, rows) ||
	    !OK_N(dx, rows) || (rows && ((const float *)dx == x ||
					 (const float *)dx == dy)))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	return HAS_OP(k, swiglu_bwd) ? RUN(MEM, swiglu_bwd, rows, f, x, dy,
					   dx) : KERN_ENODEV;
}

/* A qkv split or merge's arguments are usable: sizes, arrays set where
 * there are rows, the packed array apart from the parts. */
static int qkv_ok(long long rows, long long groups, long long nq,
		  long long nk, const float *packed, const float *q,
		  const float *kk, const float *v)
{
	return rows >= 0 && groups >= 1 && nq >= 1 && nk >= 1 &&
	       OK_N(packed, rows) && OK_N(q, rows) && OK_N(kk, rows) &&
	       OK_N(v, rows) &&
	       (!rows || (packed != q && packed != kk && packed != v));
}

int kern_qkv_split(struct kern_ctx *k, long long rows, long long groups,
		   long long nq, long long nk, const float *packed, float *q,
		   float *kk, float *v)
{
	if (!qkv_ok(rows, groups, nq, nk, packed, q, kk, v))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	return HAS_OP(k, qkv_split) ? RUN(MEM, qkv_split, rows, groups, nq, nk,
					  packed, q, kk, v) : KERN_ENODEV;
}

int kern_qkv_merge(struct kern_ctx *k, long long rows, long long groups,
		   long long nq, long long nk, const float *q,
		   const float *kk, const float *v, float *packed)
{
	if (!qkv_ok(rows, groups, nq, nk, packed, q, kk, v))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	return HAS_OP(k, qkv_merge) ? RUN(MEM, qkv_merge, rows, groups, nq, nk,
					  q, kk, v, packed) : KERN_ENODEV;
}

int kern_rope(struct kern_ctx *k, long long rows, long long heads,
	      long long hd, double theta, const int32_t *pos, int inverse,
	      float *x)
{
	if (rows < 0 || heads < 1 || hd < 2 || hd % 2 || !(theta > 0) ||
	    !OK_N(pos, rows) || !OK_N(x, rows))
		return KERN_EINVAL;
	if (!rows)
		return 0;
	return HAS_OP(k, rope) ? RUN(MEM, rope, rows, heads, hd, theta, pos,
				     inverse != 0, x) : KERN_ENODEV;
}

/* a's sizes are usable: nh a multiple of nkv, nothing negative. */
int kint_attn_ok(const struct kern_attn *a)
{
	return a && a->batch >= 0 && a->sq >= 0 && a->sk >= 0 && a->nkv >= 1 &&
	       a->nh >= a->nkv && a->nh % a->nkv == 0 && a->hd >= 1 &&
	       a->scale == a->scale;
}

int kint_attn_bwd_empty(struct kern_ctx *k, const struct kern_attn *a,
			float *dq, float *dk, float *dv)
{
	size_t nq = (size_t)(a->batch * a->sq * a->nh * a->hd) * sizeof(float);
	size_t nk = (size_t)(a->batch * a->sk * a->nkv * a->hd) *
		    sizeof(float);
	int rc;

	if (!a->overwrite)
		return 0;
	rc = kern_zero(k, dq, nq);
	if (!rc)
		rc = kern_zero(k, dk, nk);
	return rc ? rc : kern_zero(k, dv, nk);
}

int kern_attn_fwd(struct kern_ctx *k, const struct kern_attn *a,
		  const float *q, const float *kk, const float *v,
		  const int32_t *qpos, const int32_t *kpos, float *o,
		  float *lse)
{
	long long nq, nk;

	if (!kint_attn_ok(a))
		return KERN_EINVAL;
	nq = a->batch * a->sq;
	nk = a->batch * a->sk;
	if (!OK_N(q, nq) || !OK_N(o, nq) || !OK_N(lse, nq) || !OK_N(kk, nk) ||
	    !OK_N(v, nk))
		return KERN_EINVAL;
	if (!nq)
		return 0;
	return HAS_OP(k, attn_fwd) ? RUN(ATTN, attn_fwd, a, q, kk, v, qpos,
					 kpos, o, lse) : KERN_ENODEV;
}

int kern_attn_merge(struct kern_ctx *k, const struct kern_attn *a, float *o,
		    float *lse, const float *o2, const float *lse2)
{
	long long nq;

	if (!kint_attn_ok(a))
		return KERN_EINVAL;
	nq = a->batch * a->sq;
	if (!OK_N(o, nq) || !OK_N(lse, nq) || !OK_N(o2, nq) || !OK_N(lse2, nq))
		return KERN_EINVAL;
	if (!nq)
		return 0;
	return HAS_OP(k, attn_merge) ? RUN(ATTN, attn_merge, a, o, lse, o2,
					   lse2) : KERN_ENODEV;
}

int kern_attn_bwd(struct kern_ctx *k, const struct kern_attn *a,
		  const float *q, const float *kk, const float *v,
		  const float *o, const float *lse, const float *dout,
		  const int32_t *qpos, const int32_t *kpos, float *dq,
		  float *dk, float *dv)
{
	long long nq, nk;

	if (!kint_attn_ok(a))
		return KERN_EINVAL;
	nq = a->batch * a->sq;
	nk = a->batch * a->sk;
	if (!OK_N(q, nq) || !OK_N(o, nq) || !OK_N(lse, nq) ||
	    !OK_N(dout, nq) || !OK_N(dq, nq) || !OK_N(kk, nk) ||
	    !OK_N(v, nk) || !OK_N(dk, nk) || !OK_N(dv, nk))
		return KERN_EINVAL;
	if (!nq || !nk)
		return kint_attn_bwd_empty(k, a, dq, dk, dv);
	return HAS_OP(k, attn_bwd) ? RUN(ATTN, attn_bwd, a, q, kk, v, o, lse,
					 dout, qpos, kpos, dq, dk,
					 dv) : KERN_ENODEV;
}

int kern_embed_fwd(struct kern_ctx *k, long long n, long long h,
		   long long first, long long rows, const float *table,
		   const int32_t *tokens, float *out)
{
	if (n < 0 || h < 1 || first < 0 || !OK_N(table, rows) ||
	    !OK_N(tokens, n) || !OK_N(out, n))
		return KERN_EINVAL;
	return n ? RUN(MEM, embed_fwd, n, h, first, rows, table, tokens,
		       out) : 0;
}

int kern_embed_bwd(struct kern_ctx *k, long long n, long long h,
		   long long first, long long rows, const float *dout,
		   const int32_t *tokens, float *dtable)
{
	if (n < 0 || h < 1 || first < 0 || !OK_N(dtable, rows) ||
	    !OK_N(tokens, n) || !OK_N(dout, n))
		return KERN_EINVAL;
	return n ? RUN(MEM, embed_bwd, n, h, first, rows, dout, tokens,
		       dtable) : 0;
}

int kern_adam(struct kern_ctx *k, long long n, float lr, float beta1,
	      float beta2, float eps, long long step, float *p, const float *g,
	      float *m, float *v)
{
	if (!OK_N(p, n) || !OK_N(g, n) || !OK_N(m, n) || !OK_N(v, n) ||
	    step < 1 || !(beta1 >= 0 && beta1 < 1) ||
	    !(beta2 >= 0 && beta2 < 1) || !(eps > 0))
		return KERN_EINVAL;
	return n ? RUN(MEM, adam, n, lr, beta1, beta2, eps, step, p, g, m,
		       v) : 0;
}

int kern_sgd(struct kern_ctx *k, long long n, float lr, float *p,
	     const float *g)
{
	if (!OK_N(p, n) || !OK_N(g, n))
		return KERN_EINVAL;
	return n ? RUN(MEM, sgd, n, lr, p, g) : 0;
}
