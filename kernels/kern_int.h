/*
 * kern_int: what the wrappers of kernels/kern.c and kernels/kern_mixed.c
 * share, for no other file: the checks of arguments every device refuses
 * alike, the profiler's brackets around a bound op (RUN) and the scratch
 * buffers of the fallbacks.
 */
#ifndef GTPLAN_KERN_INT_H
#define GTPLAN_KERN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "kern.h"

/* The profiler's marks around one call of op (class cls) when it is on
 * (kern_prof_start); kint_mark_end passes rc on. */
int kint_mark_begin(struct kern_ctx *k, int cls, const char *op);
int kint_mark_end(struct kern_ctx *k, int cls, const char *op, int rc);

/* The bound op's call between the profiler's marks; the comma operator
 * orders the begin mark, the call and the end mark. Needs `k`. */
#define RUN(cls, op, ...)                                  \
	(kint_mark_begin(k, KERN_PROF_##cls, #op),         \
	 kint_mark_end(k, KERN_PROF_##cls, #op, k->ops->op(k, __VA_ARGS__)))

/* n elements behind p are usable: n >= 0, and p is set when n > 0. */
#define OK_N(p, n) ((n) >= 0 && ((n) == 0 || (p) != NULL))

/* An op this device's table lacks is KERN_ENODEV, not a crash. */
#define HAS_OP(k, op) ((k)->ops->op != NULL)

/* kern_gemm's sizes and leading dimensions are usable. */
int kint_gemm_dims_ok(int ta, int tb, long long m, long long n,
		      long long kd, long long lda, long long ldb,
		      long long ldc);
/* A cross-entropy piece's shape: nvalid <= cols, logits there. */
int kint_ce_ok(long long rows, long long cols, long long nvalid,
	       const void *logits);
/* a's sizes are usable: nh a multiple of nkv, nothing negative. */
int kint_attn_ok(const struct kern_attn *a);
/* kern_attn_bwd with no query or no key row: nothing to accumulate, but
 * a->overwrite still owes zeros to the gradients that have elements. */
int kint_attn_bwd_empty(struct kern_ctx *k, const struct kern_attn *a,
			float *dq, float *dk, float *dv);

/* Fallbacks where a device lacks a fused or bf16 op compute in a scratch
 * buffer of this context: kint_scratch's n floats, kint_widen's the n
 * values of x16 widened; kint_done frees it after the queued work that
 * reads it (a wait), passing rc on. */
int kint_scratch(struct kern_ctx *k, long long n, float **out);
int kint_widen(struct kern_ctx *k, long long n, const uint16_t *x16,
	       float **out);
int kint_done(struct kern_ctx *k, float *tmp, int rc);

#endif
