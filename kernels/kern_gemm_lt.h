/*
 * kern_gemm_lt: bf16 GEMMs on tensor cores through cuBLASLt, with
 * kern_gemm's row-major semantics (kernels/kern.h):
 *
 *   C[m,n] = alpha op(A)[m,kd] op(B)[kd,n] + beta C (+ bias[n])
 *
 * A and B are bf16 (raw bits), the products are accumulated in fp32, and C
 * is fp32 or bf16. op(X) is X^T when its flag is set (X stored [kd,m] or
 * [n,kd]); leading dimensions are in elements. The optional bias (one value
 * per output column, of C's type) is added by cuBLASLt's epilogue after
 * alpha and beta: C = alpha op(A) op(B) + beta C + bias.
 *
 * A handle owns a cuBLASLt handle, a 32 MiB workspace and a cache of plans:
 * the first call of a shape (transposes, sizes, leading dimensions, C's
 * type, bias or not, the operands' alignment) asks cuBLASLt's heuristic for
 * up to 8 algorithms and keeps the first; with `tune`, it times each of
 * them on the call's operands (one warm-up and 3 timed runs into a scratch
 * C, so the caller's C is written once) and keeps the fastest. Timing makes
 * the choice, and so the rounding of C, depend on the run; tune = 0 keeps
 * results bit-reproducible on one GPU and library version.
 *
 * Pointers are device pointers. Work is queued on the handle's stream and
 * not waited for (except the timing of a new shape). A handle serves one
 * thread at a time. Functions return 0 or a negative KERN_E* code
 * (kernels/kern.h) whose reason the caller prints (kern_error_text);
 * nothing is printed here.
 */
#ifndef GTPLAN_KERN_GEMM_LT_H
#define GTPLAN_KERN_GEMM_LT_H

#include <stdint.h>

#include "kern.h"

enum kern_lt_type { KERN_LT_F32, KERN_LT_BF16 };

struct kern_lt;

/* stream: a cudaStream_t (NULL: the legacy default stream). */
int kern_lt_new(void *stream, int tune, struct kern_lt **out);
void kern_lt_free(struct kern_lt *lt);

int kern_lt_gemm(struct kern_lt *lt, int ta, int tb, long long m,
		 long long n, long long kd, float alpha, const uint16_t *a,
		 long long lda, const uint16_t *b, long long ldb, float beta,
		 void *c, enum kern_lt_type ctype, long long ldc,
		 const void *bias);

/* The number of shapes planned so far (each planned once). */
int kern_lt_plans(const struct kern_lt *lt);

#endif
