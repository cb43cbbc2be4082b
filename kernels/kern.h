/*
 * kern: the runtime model's math, behind one interface for every device.
 *
 * A `struct kern_ctx` binds a device's implementation (`struct kern_ops`):
 * kern_cpu_ops (kernels/kern_cpu.c: plain C and OpenBLAS) today; a CUDA
 * twin (cuBLAS and hand-written kernels, one stream per context) fills the
 * same table with the same semantics. Callers use the kern_* wrappers below
 * and never branch on the device.
 *
 * Contracts shared by every function:
 *  - Pointers are device pointers of the context's device (host memory for
 *    the CPU); kern_upload/kern_download cross the host boundary.
 *  - Matrices are row-major and dense unless a leading dimension is given;
 *    sizes are element counts (long long), never bytes, except for the
 *    memory functions.
 *  - Outputs never alias inputs unless the function says so. "Accumulates"
 *    means out += ..., "writes" means out = ....
 *  - Every function returns 0 or a negative KERN_E* code; a device error is
 *    reported once, as a value, never by exiting. The CPU twin only fails on
 *    invalid arguments or allocation.
 *  - Work is done in fp32; the CE statistics are per row.
 *
 * Vocab-parallel cross-entropy: a rank holds `cols` logits per row, for the
 * global vocabulary ids [first, first + cols); only the first `nvalid`
 * columns are real entries (the rest pad the vocabulary to a multiple of TP)
 * and are masked out of max, sum and gradient. The caller reduces max (MAX)
 * and target/sum (SUM) over the TP group between the steps:
 *   kern_ce_max -> all-reduce MAX -> kern_ce_target, kern_ce_sumexp
 *   -> all-reduce SUM -> kern_ce_loss, kern_ce_bwd.
 */
#ifndef GTPLAN_KERN_H
#define GTPLAN_KERN_H

#include <stddef.h>
#include <stdint.h>

#define KERN_ERRORS(X)                                      \
	X(KERN_EINVAL, -1, "invalid kernel argument")       \
	X(KERN_ENOMEM, -2, "out of device memory")          \
	X(KERN_EDEVICE, -3, "device error")                 \
	X(KERN_ENODEV, -4, "device not available in this build")

enum kern_error {
	KERN_OK = 0,
#define KERN_ENUM(name, val, msg) name = val,
	KERN_ERRORS(KERN_ENUM)
#undef KERN_ENUM
};

const char *kern_strerror(int code);

enum kern_device { KERN_CPU, KERN_CUDA };

struct kern_ctx;

/* One device's implementation; every member follows the wrapper of the
 * same name below. */
struct kern_ops {
	const char *name;
	int (*init)(struct kern_ctx *k, int threads);
	void (*release)(struct kern_ctx *k);
	int (*alloc)(struct kern_ctx *k, size_t bytes, void **out);
	void (*free)(struct kern_ctx *k, void *p);
	int (*upload)(struct kern_ctx *k, void *dst, const void *src, size_t n);
	int (*download)(struct kern_ctx *k, void *dst, const void *src, size_t n);
	int (*copy)(struct kern_ctx *k, void *dst, const void *src, size_t n);
	int (*zero)(struct kern_ctx *k, void *p, size_t bytes);
	int (*sync)(struct kern_ctx *k);
	int (*gemm)(struct kern_ctx *k, int ta, int tb, long long m, long long n,
		    long long kd, float alpha, const float *a, long long lda,
		    const float *b, long long ldb, float beta, float *c,
		    long long ldc);
	int (*axpy)(struct kern_ctx *k, long long n, float alpha, const float *x,
		    float *y);
	int (*scale)(struct kern_ctx *k, long long n, float alpha, float *x);
	int (*rmsnorm_fwd)(struct kern_ctx *k, long long rows, long long h,
			   float eps, const float *x, const float *g, float *y,
			   float *rstd);
	int (*rmsnorm_bwd)(struct kern_ctx *k, long long rows, long long h,
			   const float *x, const float *g, const float *rstd,
			   const float *dy, float *dx, float *dg);
	int (*gelu_fwd)(struct kern_ctx *k, long long n, const float *x,
			float *y);
	int (*gelu_bwd)(struct kern_ctx *k, long long n, const float *x,
			const float *dy, float *dx);
	int (*ce_max)(struct kern_ctx *k, long long rows, long long cols,
		      long long nvalid, const float *logits, float *max);
	int (*ce_sumexp)(struct kern_ctx *k, long long rows, long long cols,
			 long long nvalid, const float *logits, const float *max,
			 float *sum);
	int (*ce_target)(struct kern_ctx *k, long long rows, long long cols,
			 long long first, const int32_t *targets,
			 const float *logits, float *target);
	int (*ce_loss)(struct kern_ctx *k, long long rows, const float *max,
		       const float *sum, const float *target, float *loss);
	int (*ce_bwd)(struct kern_ctx *k, long long rows, long long cols,
		      long long nvalid, long long first, const int32_t *targets,
		      const float *max, const float *sum, float scale,
		      const float *logits, float *dlogits);
	int (*embed_fwd)(struct kern_ctx *k, long long n, long long h,
			 long long first, long long rows, const float *table,
			 const int32_t *tokens, float *out);
	int (*embed_bwd)(struct kern_ctx *k, long long n, long long h,
			 long long first, long long rows, const float *dout,
			 const int32_t *tokens, float *dtable);
	int (*adam)(struct kern_ctx *k, long long n, float lr, float beta1,
		    float beta2, float eps, long long step, float *p,
		    const float *g, float *m, float *v);
	int (*sgd)(struct kern_ctx *k, long long n, float lr, float *p,
		   const float *g);
	int (*to_bf16)(struct kern_ctx *k, long long n, const float *x,
		       uint16_t *y);
	int (*from_bf16)(struct kern_ctx *k, long long n, const uint16_t *x,
			 float *y);
	int (*round_bf16)(struct kern_ctx *k, long long n, float *x);
	/* the device's queue (a cudaStream_t); NULL where there is none */
	void *(*stream)(struct kern_ctx *k);
};

extern const struct kern_ops kern_cpu_ops;
/* Defined by kernels/kern_cuda.cu, in builds with KERN_WITH_CUDA only. */
extern const struct kern_ops kern_cuda_ops;

struct kern_ctx {
	enum kern_device device;
	const struct kern_ops *ops;
	void *impl; /* the device's own state (stream, handles); NULL on CPU */
};

/* Binds k to `device`. threads > 0 sets the CPU BLAS thread count (ignored
 * on GPUs); 0 keeps the library's setting. KERN_ENODEV when this build has
 * no implementation for the device. kern_release() undoes it. */
int kern_init(struct kern_ctx *k, enum kern_device device, int threads);
void kern_release(struct kern_ctx *k);
const char *kern_device_name(const struct kern_ctx *k);
/* The queue the device's work runs on (a cudaStream_t on CUDA), for
 * libraries that must order their work with it (NCCL); NULL on the CPU. */
void *kern_stream(struct kern_ctx *k);

/* Memory. kern_alloc returns zeroed memory aligned for any element type. */
int kern_alloc(struct kern_ctx *k, size_t bytes, void **out);
void kern_free(struct kern_ctx *k, void *p);
int kern_upload(struct kern_ctx *k, void *dst, const void *src, size_t bytes);
int kern_download(struct kern_ctx *k, void *dst, const void *src,
		  size_t bytes);
int kern_copy(struct kern_ctx *k, void *dst, const void *src, size_t bytes);
int kern_zero(struct kern_ctx *k, void *p, size_t bytes);
/* Waits for the device's queued work (a no-op on the CPU). */
int kern_sync(struct kern_ctx *k);

/* C[m,n] = alpha * op(A)[m,kd] op(B)[kd,n] + beta * C, row-major; op(X) is
 * X^T when its flag is set (then X is stored [kd,m] or [n,kd]). */
int kern_gemm(struct kern_ctx *k, int ta, int tb, long long m, long long n,
	      long long kd, float alpha, const float *a, long long lda,
	      const float *b, long long ldb, float beta, float *c,
	      long long ldc);
/* y += alpha * x. */
int kern_axpy(struct kern_ctx *k, long long n, float alpha, const float *x,
	      float *y);
/* x *= alpha. */
int kern_scale(struct kern_ctx *k, long long n, float alpha, float *x);

/* RMSNorm over rows of h: rstd[r] = 1/sqrt(mean(x[r]^2) + eps),
 * y = x * rstd * g. Writes y and rstd. */
int kern_rmsnorm_fwd(struct kern_ctx *k, long long rows, long long h,
		     float eps, const float *x, const float *g, float *y,
		     float *rstd);
/* Its gradient: writes dx, accumulates dg (summed over rows). */
int kern_rmsnorm_bwd(struct kern_ctx *k, long long rows, long long h,
		     const float *x, const float *g, const float *rstd,
		     const float *dy, float *dx, float *dg);

/* Exact GeLU, y = x/2 (1 + erf(x/sqrt 2)); y may alias x. */
int kern_gelu_fwd(struct kern_ctx *k, long long n, const float *x, float *y);
/* dx = dy * GeLU'(x); dx may alias dy. */
int kern_gelu_bwd(struct kern_ctx *k, long long n, const float *x,
		  const float *dy, float *dx);

/* Vocab-parallel cross-entropy pieces (see the top of this file). logits
 * is [rows, cols]. ce_max writes the max of the valid columns per row
 * (-FLT_MAX when none); ce_sumexp writes sum(exp(l - max)) over valid
 * columns; ce_target writes logits[r, targets[r] - first] when the target
 * is one of this rank's ids, else 0; ce_loss writes log(sum) + max - target;
 * ce_bwd writes scale * (softmax - onehot) for valid columns and 0 for
 * masked ones (dlogits may alias logits). */
int kern_ce_max(struct kern_ctx *k, long long rows, long long cols,
		long long nvalid, const float *logits, float *max);
int kern_ce_sumexp(struct kern_ctx *k, long long rows, long long cols,
		   long long nvalid, const float *logits, const float *max,
		   float *sum);
int kern_ce_target(struct kern_ctx *k, long long rows, long long cols,
		   long long first, const int32_t *targets,
		   const float *logits, float *target);
int kern_ce_loss(struct kern_ctx *k, long long rows, const float *max,
		 const float *sum, const float *target, float *loss);
int kern_ce_bwd(struct kern_ctx *k, long long rows, long long cols,
		long long nvalid, long long first, const int32_t *targets,
		const float *max, const float *sum, float scale,
		const float *logits, float *dlogits);

/* Vocab-parallel embedding: table holds `rows` rows of h for the ids
 * [first, first + rows). embed_fwd writes out[i] = table[tokens[i] - first]
 * for the ids it holds and zeros for the others (the caller sums over TP);
 * embed_bwd accumulates dout[i] into dtable[tokens[i] - first] for the same
 * ids, in token order. */
int kern_embed_fwd(struct kern_ctx *k, long long n, long long h,
		   long long first, long long rows, const float *table,
		   const int32_t *tokens, float *out);
int kern_embed_bwd(struct kern_ctx *k, long long n, long long h,
		   long long first, long long rows, const float *dout,
		   const int32_t *tokens, float *dtable);

/* bfloat16, bit for bit alike on every device: to_bf16 rounds each float
 * to the nearest bf16 (ties to even; NaN stays a quiet NaN) and writes its
 * 16 bits; from_bf16 widens them back exactly; round_bf16 does both in
 * place, leaving floats that bf16 represents exactly. */
int kern_to_bf16(struct kern_ctx *k, long long n, const float *x,
		 uint16_t *y);
int kern_from_bf16(struct kern_ctx *k, long long n, const uint16_t *x,
		   float *y);
int kern_round_bf16(struct kern_ctx *k, long long n, float *x);

/* Adam with bias correction, no weight decay; step counts from 1:
 * m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
 * p -= lr * (m / (1-b1^step)) / (sqrt(v / (1-b2^step)) + eps). */
int kern_adam(struct kern_ctx *k, long long n, float lr, float beta1,
	      float beta2, float eps, long long step, float *p, const float *g,
	      float *m, float *v);
/* p -= lr * g. */
int kern_sgd(struct kern_ctx *k, long long n, float lr, float *p,
	     const float *g);

#endif
