/*
 * kern: the runtime model's math, behind one interface for every device.
 *
 * A `struct kern_ctx` binds a device's implementation (`struct kern_ops`):
 * kern_cpu_ops (kernels/kern_cpu.c: plain C and OpenBLAS) and kern_cuda_ops
 * (kernels/kern_cuda.cu: cuBLAS and CUDA kernels on the context's own
 * stream, built by `make test-gpu`) fill the same table with the same
 * semantics. Callers use the kern_* wrappers below (kernels/kern.c, and
 * kernels/kern_mixed.c for the bf16 ones, which check the arguments and
 * hold the fallbacks the comments below call kern.c's) and never branch
 * on the device.
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
 *  - The math mode (kern_set_math) may let a device run the GEMMs and the
 *    attention on bf16 tensor cores instead; fp32 (the default) is exact
 *    to the contracts below.
 *
 * Vocab-parallel cross-entropy: a rank holds `cols` logits per row, for the
 * global vocabulary ids [first, first + cols); only the first `nvalid`
 * columns are real entries (the rest pad the vocabulary to a multiple of TP)
 * and are masked out of max, sum and gradient. The caller reduces max (MAX)
 * and target/sum (SUM) over the TP group between the steps:
 *   kern_ce_max -> all-reduce MAX -> kern_ce_target, kern_ce_sumexp
 *   -> all-reduce SUM -> kern_ce_loss, kern_ce_bwd.
 *
 * Ownership: the caller owns the kern_ctx (kern_init/kern_release) and
 * every buffer (kern_alloc/kern_free on the same context); the kernels
 * keep no pointer past the call.
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

/* Errors are reported once, by the caller: the kernels print nothing. A
 * device implementation that fails for a reason the code alone does not
 * say (a CUDA or cuBLAS status, with its file:line) records it with
 * kern_set_error(), which returns rc; kern_error_text(rc) is then
 * "<kern_strerror(rc)>: <that message>", else kern_strerror(rc). The
 * message is kept per thread, with its code, until it is read or another
 * is set; it is at most KERN_ERROR_MAX bytes. */
#define KERN_ERROR_MAX 512
int kern_set_error(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *kern_error_text(int rc);

enum kern_device { KERN_CPU, KERN_CUDA };

/* How kern_gemm and kern_attn_* multiply. KERN_MATH_FP32: in fp32, as each
 * function's contract says. KERN_MATH_BF16, for mixed-precision runs whose
 * operands already hold bf16 values (the runtime rounds them, rt_bf16):
 * the CUDA twin rounds the operands to bf16 (exact for such values) and
 * multiplies on tensor cores with fp32 accumulation (kernels/kern_gemm_lt.h,
 * kernels/kern_flash.h), so results differ from fp32 by the order of the
 * sums and, in attention, by P and dS rounded to bf16 (FlashAttention-2's
 * precision). Inputs, outputs and every other function stay fp32; the CPU
 * twin ignores the mode. Every call reads its operands as they are when
 * it runs (no bf16 copy outlives the call); the caller that keeps bf16
 * copies of its operands hands them to kern_gemm_bf instead. */
enum kern_math { KERN_MATH_FP32, KERN_MATH_BF16 };

/* Kernel classes of the profile (kern_prof_*). */
enum kern_prof_class {
	KERN_PROF_GEMM,
	KERN_PROF_ATTN,
	KERN_PROF_MEM, /* every other kernel: memory-bound */
	KERN_PROF_COPY, /* copies, zeroing, host transfers */
	KERN_PROF_CLASSES
};

struct kern_ctx;

/* The shape of one causal grouped-query attention (kern_attn_*): `batch`
 * sequences, each with sq query rows and sk key/value rows; nh query heads
 * and nkv key/value heads of hd values each, nh a multiple of nkv, query
 * head j reading key/value head j / (nh / nkv) (Megatron's and Hugging
 * Face's grouping). q and o are [batch, sq, nh, hd], k and v are
 * [batch, sk, nkv, hd], lse is [batch, nh, sq]. `scale` multiplies q.k
 * (1/sqrt(hd) for Llama). `overwrite` (kern_attn_bwd and _bf alone): 0,
 * the default of a zeroed struct, accumulates into dq, dk, dv (a ring adds
 * one key block's share per call); 1 writes them: each gets what its
 * accumulation onto zeroed buffers gives, whatever they held (NaN
 * included), without a zeroing call of the caller's (bit for bit where
 * the sums' order is reproducible: kernels/kern_flash.h on the flash
 * kernels' atomics). */
struct kern_attn {
	long long batch, sq, sk, nh, nkv, hd;
	float scale;
	int overwrite;
};

/* linear_qkv's output columns on their way to attention (kern_qkv_rope_bf,
 * kern_qkv_merge_rope_bf): `rows` token rows of `groups` query groups,
 * each nq query then nk key then nk value values (kern_qkv_split's
 * layout), heads of hd values (nq and nk multiples of hd), RoPE's base
 * theta (kern_rope). pos_end: a bound the caller knows on the rows'
 * positions (pos[r] < pos_end for every row), at most 2^31, or 0 (none
 * given, as a zeroed struct says): the rows stand for it then. It
 * changes no value, only speed: the CUDA twin keeps RoPE's cos and sin
 * for positions 0 .. max(pos_end, rows, 4096) - 1 (within a cap) in a
 * table (kernels/kern_cuda_qkv_rope.cu rope_table) and computes a row's
 * own, more slowly, where its position is past the table; so a
 * context-parallel rank, whose rows reach positions up to the sequence's
 * length, passes that length. */
struct kern_qkv {
	long long rows, groups, nq, nk, hd;
	double theta;
	long long pos_end;
};

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
	int (*rmsnorm_fwd)(struct kern_ctx *k, long long rows, long long h,
			   float eps, const float *x, const float *g, float *y,
			   float *rstd);
	int (*rmsnorm_bwd)(struct kern_ctx *k, long long rows, long long h,
			   const float *x, const float *g, const float *rstd,
			   const float *dy, float *dx, float *dg);
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
	/* optional: kern_adam_bf fused (NULL: kern_adam, then kern_to_bf16) */
	int (*adam_bf)(struct kern_ctx *k, long long n, float lr, float beta1,
		       float beta2, float eps, long long step, float *p,
		       const float *g, float *m, float *v, uint16_t *p16,
		       long long n16);
	int (*to_bf16)(struct kern_ctx *k, long long n, const float *x,
		       uint16_t *y);
	int (*from_bf16)(struct kern_ctx *k, long long n, const uint16_t *x,
			 float *y);
	int (*round_bf16)(struct kern_ctx *k, long long n, float *x);
	int (*round_bf16_copy)(struct kern_ctx *k, long long n, float *x,
			       uint16_t *y);
	/* optional: kern_gemm_bf in KERN_MATH_BF16 (NULL: kern.c widens the
	 * copies and calls gemm) */
	int (*gemm_bf)(struct kern_ctx *k, int ta, int tb, long long m,
		       long long n, long long kd, float alpha, const float *a,
		       const uint16_t *a16, long long lda, const float *b,
		       const uint16_t *b16, long long ldb, float beta,
		       float *c, long long ldc);
	int (*bias_add)(struct kern_ctx *k, long long rows, long long cols,
			const float *b, float *y);
	int (*bias_grad)(struct kern_ctx *k, long long rows, long long cols,
			 const float *dy, float *db);
	int (*swiglu_fwd)(struct kern_ctx *k, long long rows, long long f,
			  const float *x, float *y);
	int (*swiglu_bwd)(struct kern_ctx *k, long long rows, long long f,
			  const float *x, const float *dy, float *dx);
	int (*qkv_split)(struct kern_ctx *k, long long rows, long long groups,
			 long long nq, long long nk, const float *packed,
			 float *q, float *kk, float *v);
	int (*qkv_merge)(struct kern_ctx *k, long long rows, long long groups,
			 long long nq, long long nk, const float *q,
			 const float *kk, const float *v, float *packed);
	int (*qkv_rope_bf)(struct kern_ctx *k, const struct kern_qkv *a,
			   const int32_t *pos, const float *packed, float *q,
			   float *kk, float *v, uint16_t *q16, uint16_t *k16,
			   uint16_t *v16);
	int (*qkv_merge_rope_bf)(struct kern_ctx *k, const struct kern_qkv *a,
				 const int32_t *pos, const float *dq,
				 const float *dk, const float *dv,
				 float *packed, uint16_t *packed16);
	/* optional: the norms fused with the residual add (NULL: kern.c
	 * runs the unfused sequence) */
	int (*add_rmsnorm_fwd)(struct kern_ctx *k, long long rows,
			       long long h, float eps, const float *x,
			       const float *r, float *sum, const float *g,
			       float *y, float *rstd, uint16_t *y16);
	int (*rmsnorm_bwd_add)(struct kern_ctx *k, long long rows,
			       long long h, const float *x, const float *g,
			       const float *rstd, const float *dy, float *dx,
			       float *dg, uint16_t *dx16);
	/* optional: kern_attn_*_bf in KERN_MATH_BF16 where the device's
	 * fast kernels take the shape (they return KERN_ENODEV where not;
	 * kern.c then widens the copies and calls attn_fwd/attn_bwd) */
	int (*attn_fwd_bf)(struct kern_ctx *k, const struct kern_attn *a,
			   const uint16_t *q16, const uint16_t *k16,
			   const uint16_t *v16, const int32_t *qpos,
			   const int32_t *kpos, float *o, uint16_t *o16,
			   float *lse);
	int (*attn_bwd_bf)(struct kern_ctx *k, const struct kern_attn *a,
			   const uint16_t *q16, const uint16_t *k16,
			   const uint16_t *v16, const uint16_t *o16,
			   const float *lse, const float *dout,
			   const uint16_t *dout16, const int32_t *qpos,
			   const int32_t *kpos, float *dq, float *dk,
			   float *dv);
	/* optional: the output layer's bf16 logits and the cross-entropy
	 * on them (NULL: kern.c widens, runs the fp32 op, rounds) */
	int (*gemm_bf16)(struct kern_ctx *k, int ta, int tb, long long m,
			 long long n, long long kd, const uint16_t *a16,
			 long long lda, const uint16_t *b16, long long ldb,
			 uint16_t *c16);
	int (*ce_max_b16)(struct kern_ctx *k, long long rows, long long cols,
			  long long nvalid, const uint16_t *l16, float *max);
	int (*ce_sumexp_b16)(struct kern_ctx *k, long long rows,
			     long long cols, long long nvalid,
			     const uint16_t *l16, const float *max,
			     float *sum);
	int (*ce_target_b16)(struct kern_ctx *k, long long rows,
			     long long cols, long long first,
			     const int32_t *targets, const uint16_t *l16,
			     float *target);
	int (*ce_bwd_b16)(struct kern_ctx *k, long long rows, long long cols,
			  long long nvalid, long long first,
			  const int32_t *targets, const float *max,
			  const float *sum, float scale, const uint16_t *l16,
			  uint16_t *d16);
	int (*swiglu_fwd_b16)(struct kern_ctx *k, long long rows, long long f,
			      const uint16_t *x16, uint16_t *y16);
	int (*swiglu_bwd_b16)(struct kern_ctx *k, long long rows, long long f,
			      const uint16_t *x16, const uint16_t *dy16,
			      uint16_t *dx16);
	int (*embed_fwd_b16)(struct kern_ctx *k, long long n, long long h,
			     long long first, long long rows,
			     const uint16_t *table, const int32_t *tokens,
			     float *out);
	int (*rope)(struct kern_ctx *k, long long rows, long long heads,
		    long long hd, double theta, const int32_t *pos, int inverse,
		    float *x);
	int (*attn_fwd)(struct kern_ctx *k, const struct kern_attn *a,
			const float *q, const float *kk, const float *v,
			const int32_t *qpos, const int32_t *kpos, float *o,
			float *lse);
	int (*attn_merge)(struct kern_ctx *k, const struct kern_attn *a,
			  float *o, float *lse, const float *o2,
			  const float *lse2);
	int (*attn_bwd)(struct kern_ctx *k, const struct kern_attn *a,
			const float *q, const float *kk, const float *v,
			const float *o, const float *lse, const float *dout,
			const int32_t *qpos, const int32_t *kpos, float *dq,
			float *dk, float *dv);
	/* the device's queue (a cudaStream_t); NULL where there is none */
	void *(*stream)(struct kern_ctx *k);
	/* optional: profiling (kern_prof_*); mark brackets one call of a
	 * class and op (the kern_ function's name without kern_; end 0
	 * before it, 1 after it), read writes the device time of every
	 * bracketed call since the start to ms[] and calls[], prof_ops
	 * prints the same per op (one line, after a read) */
	int (*prof_start)(struct kern_ctx *k);
	void (*mark)(struct kern_ctx *k, int cls, const char *op, int end);
	int (*prof_read)(struct kern_ctx *k, double *ms, long long *calls);
	void (*prof_ops)(struct kern_ctx *k, void *file);
};

extern const struct kern_ops kern_cpu_ops;
/* Defined by kernels/kern_cuda.cu, in builds with KERN_WITH_CUDA only. */
extern const struct kern_ops kern_cuda_ops;

struct kern_ctx {
	enum kern_device device;
	const struct kern_ops *ops;
	void *impl; /* the device's own state (stream, handles); NULL on CPU */
	enum kern_math math;
	int prof; /* profiling is on */
};

/* Binds k to `device`. threads > 0 sets the CPU BLAS thread count (ignored
 * on GPUs); 0 keeps the library's setting. KERN_ENODEV when this build has
 * no implementation for the device. kern_release() undoes it; a kern_init
 * that fails has released what it made. */
int kern_init(struct kern_ctx *k, enum kern_device device, int threads);
void kern_release(struct kern_ctx *k);
const char *kern_device_name(const struct kern_ctx *k);
/* The queue the device's work runs on (a cudaStream_t on CUDA), for
 * libraries that must order their work with it (NCCL); NULL on the CPU. */
void *kern_stream(struct kern_ctx *k);

/* Sets the math mode (enum kern_math); KERN_EINVAL for an unknown one. */
int kern_set_math(struct kern_ctx *k, enum kern_math math);

/* Device-time profile by kernel class (enum kern_prof_class), from events
 * around every call: kern_prof_start turns it on (KERN_ENODEV on a device
 * without one: the CPU), kern_prof_read waits for the queued work and
 * writes each class's summed milliseconds and call count since the start.
 * Time between calls (host gaps, work of other libraries such as NCCL) is
 * in no class. Costs two event records a call. */
int kern_prof_start(struct kern_ctx *k);
/* Restarts a running profile from zero (a no-op when none runs): the
 * runtime calls it after its first train step, whose first calls include
 * one-time work (module loading, cuBLASLt plans, scratch growth). With the
 * environment variable GTPLAN_KERN_PROFILE set, kern_init starts the
 * profile and kern_release prints it on stderr: one line per class
 * ("kern profile: gemm 1.234 ms 56 calls; ...") and one per op
 * ("kern profile ops: ..."). */
int kern_prof_reset(struct kern_ctx *k);
int kern_prof_read(struct kern_ctx *k, double ms[KERN_PROF_CLASSES],
		   long long calls[KERN_PROF_CLASSES]);
const char *kern_prof_name(int cls);

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
/* kern_gemm with bf16 copies of its operands, for mixed-precision runs
 * that keep them (the runtime's activations and gathered weights): a16
 * (b16), when not NULL, holds the bf16 bits of a (b) element for element,
 * at the same indices and leading dimension (as kern_round_bf16_copy or
 * kern_to_bf16 wrote them), and a (b) may then be NULL. Every device
 * computes from the copy where one is given: the CUDA twin in
 * KERN_MATH_BF16 multiplies it on tensor cores as it is (kern_gemm casts
 * its operands afresh on every call), every other device and mode widens
 * it first. A copy that is not its operand's rounding (a stale one) so
 * gives the same wrong product on the CPU as on a GPU, where the CPU
 * tests see it. */
int kern_gemm_bf(struct kern_ctx *k, int ta, int tb, long long m,
		 long long n, long long kd, float alpha, const float *a,
		 const uint16_t *a16, long long lda, const float *b,
		 const uint16_t *b16, long long ldb, float beta, float *c,
		 long long ldc);
/* y += alpha * x. */
int kern_axpy(struct kern_ctx *k, long long n, float alpha, const float *x,
	      float *y);

/* RMSNorm over rows of h: rstd[r] = 1/sqrt(mean(x[r]^2) + eps),
 * y = x * rstd * g. Writes y and rstd. */
int kern_rmsnorm_fwd(struct kern_ctx *k, long long rows, long long h,
		     float eps, const float *x, const float *g, float *y,
		     float *rstd);
/* Its gradient: writes dx, accumulates dg (summed over rows). */
int kern_rmsnorm_bwd(struct kern_ctx *k, long long rows, long long h,
		     const float *x, const float *g, const float *rstd,
		     const float *dy, float *dx, float *dg);

/* The residual add and the next norm in one pass (a pre-norm block's
 * "sum = x + r; y = RMSNorm(sum)"): writes sum = x + r, then y and rstd
 * as kern_rmsnorm_fwd of sum, and, when y16 is set, y rounded to bf16 in
 * place with its bits in y16 (kern_round_bf16_copy); bit for bit the
 * unfused sequence. sum may alias x. With y16 set, y may be NULL: the
 * bits alone (a bf16 run whose y feeds only bf16 GEMMs). */
int kern_add_rmsnorm_fwd(struct kern_ctx *k, long long rows, long long h,
			 float eps, const float *x, const float *r, float *sum,
			 const float *g, float *y, float *rstd,
			 uint16_t *y16);
/* kern_rmsnorm_bwd whose input gradient is added to dx (dx += ...: the
 * residual branch's gradient), bit for bit kern_rmsnorm_bwd into a
 * scratch then kern_axpy; accumulates dg. dx may not alias dy or x. */
/* kern_rmsnorm_bwd_add, then dx16 = the bf16 bits of the new dx
 * (kern_to_bf16; dx itself is not rounded), in one pass where the device
 * fuses them: the bf16 operand of the GEMMs that read the residual's
 * gradient next (runtime/rt_train.c tp_grad_in). */
int kern_rmsnorm_bwd_add_bf(struct kern_ctx *k, long long rows, long long h,
			    const float *x, const float *g, const float *rstd,
			    const float *dy, float *dx, float *dg,
			    uint16_t *dx16);
int kern_rmsnorm_bwd_add(struct kern_ctx *k, long long rows, long long h,
			 const float *x, const float *g, const float *rstd,
			 const float *dy, float *dx, float *dg);

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

/* y[r, c] += b[c] for y [rows, cols]. */
int kern_bias_add(struct kern_ctx *k, long long rows, long long cols,
		  const float *b, float *y);
/* db[c] += sum over r of dy[r, c]. */
int kern_bias_grad(struct kern_ctx *k, long long rows, long long cols,
		   const float *dy, float *db);

/* SwiGLU over x [rows, 2f] whose first f columns are the gate and last f
 * the up projection (Megatron's linear_fc1 output on one TP rank):
 * swiglu_fwd writes y [rows, f], y = silu(gate) * up with
 * silu(a) = a / (1 + exp(-a)); swiglu_bwd writes dx [rows, 2f] from
 * dy [rows, f]: d gate = dy * up * silu'(gate), d up = dy * silu(gate). */
int kern_swiglu_fwd(struct kern_ctx *k, long long rows, long long f,
		    const float *x, float *y);
int kern_swiglu_bwd(struct kern_ctx *k, long long rows, long long f,
		    const float *x, const float *dy, float *dx);

/* The output layer in mixed-precision runs, as Megatron-core runs it: its
 * logits are the bf16 product of the bf16 output layer (c16, dense [m, n],
 * op(A) op(B) rounded to bf16 from the operands' bf16 copies, as
 * kern_gemm_bf reads them), and the cross-entropy widens them to fp32
 * (megatron/core/tensor_parallel/cross_entropy.py, calculate_logits_max:
 * vocab_parallel_logits.float()). Each _b16 piece is the kern_ce_ piece of
 * the same name on the widened logits l16; ce_bwd_b16 writes the gradient
 * rounded to bf16 into d16, which may alias l16. Devices without their own
 * op widen into a scratch buffer, run the fp32 op and round (kern.c), so
 * the CPU twin is the fp32 pieces exactly. */
int kern_gemm_bf16(struct kern_ctx *k, int ta, int tb, long long m,
		   long long n, long long kd, const uint16_t *a16,
		   long long lda, const uint16_t *b16, long long ldb,
		   uint16_t *c16);
int kern_ce_max_b16(struct kern_ctx *k, long long rows, long long cols,
		    long long nvalid, const uint16_t *l16, float *max);
int kern_ce_sumexp_b16(struct kern_ctx *k, long long rows, long long cols,
		       long long nvalid, const uint16_t *l16, const float *max,
		       float *sum);
int kern_ce_target_b16(struct kern_ctx *k, long long rows, long long cols,
		       long long first, const int32_t *targets,
		       const uint16_t *l16, float *target);
int kern_ce_bwd_b16(struct kern_ctx *k, long long rows, long long cols,
		    long long nvalid, long long first, const int32_t *targets,
		    const float *max, const float *sum, float scale,
		    const uint16_t *l16, uint16_t *d16);
/* SwiGLU on linear_fc1's bf16 output x16 [rows, 2f] (bf16 runs hold it in
 * bf16 alone, as Megatron-core's bf16 linear_fc1 gives it): y16 [rows, f]
 * and dx16 [rows, 2f] are kern_swiglu_fwd's and kern_swiglu_bwd's on the
 * widened x16 and dy16, rounded to bf16. */
int kern_swiglu_fwd_b16(struct kern_ctx *k, long long rows, long long f,
			const uint16_t *x16, uint16_t *y16);
int kern_swiglu_bwd_b16(struct kern_ctx *k, long long rows, long long f,
			const uint16_t *x16, const uint16_t *dy16,
			uint16_t *dx16);
/* kern_embed_fwd on the table's bf16 copy (table16 [rows, h]): out gets
 * the widened rows, fp32 as kern_embed_fwd writes them. */
int kern_embed_fwd_b16(struct kern_ctx *k, long long n, long long h,
		       long long first, long long rows,
		       const uint16_t *table16, const int32_t *tokens,
		       float *out);

/* Megatron's fused query-key-value columns (linear_qkv's output,
 * megatron/core/transformer/attention.py get_query_key_value_tensors): a
 * row of packed [rows, groups (nq + 2 nk)] holds, query group by query
 * group, nq query values, nk key values, then nk value values.
 * kern_qkv_split writes q [rows, groups nq], k and v [rows, groups nk]
 * from it (group j at columns j nq, j nk); kern_qkv_merge writes packed
 * from them. No output aliases an input. */
int kern_qkv_split(struct kern_ctx *k, long long rows, long long groups,
		   long long nq, long long nk, const float *packed, float *q,
		   float *kk, float *v);
int kern_qkv_merge(struct kern_ctx *k, long long rows, long long groups,
		   long long nq, long long nk, const float *q,
		   const float *kk, const float *v, float *packed);

/* linear_qkv's columns to attention's bf16 operands in one pass, for
 * mixed-precision runs without QK-norm (shape: struct kern_qkv): bit for
 * bit kern_qkv_split of packed into (q, kk, v), kern_rope (pos, forward)
 * of q over its groups nq / hd heads and of kk over its groups nk / hd,
 * then kern_round_bf16_copy of q into q16, kk into k16 and v into v16. q,
 * kk and v may each be NULL: that fp32 output is then not written (its
 * copy is). kern_qkv_merge_rope_bf is its backward: kern_rope (inverse)
 * of dq and dk, kern_round_bf16 of dq, dk and dv, kern_qkv_merge into
 * packed, then kern_round_bf16_copy of packed into packed16 (packed may
 * be NULL: not written); dq, dk and dv are left as they are. No output
 * aliases an input. */
int kern_qkv_rope_bf(struct kern_ctx *k, const struct kern_qkv *a,
		     const int32_t *pos, const float *packed, float *q,
		     float *kk, float *v, uint16_t *q16, uint16_t *k16,
		     uint16_t *v16);
int kern_qkv_merge_rope_bf(struct kern_ctx *k, const struct kern_qkv *a,
			   const int32_t *pos, const float *dq,
			   const float *dk, const float *dv, float *packed,
			   uint16_t *packed16);

/* Rotary position embedding in place on x [rows, heads, hd] (hd even),
 * rotate-half form (Megatron's default and Hugging Face Llama's): row r is
 * at position pos[r]; for i < hd/2, with angle a = pos[r] *
 * theta^(-2i/hd) (the frequency computed in double, then the angle's cos
 * and sin), the pair (x_i, x_{i+hd/2}) becomes
 * (x_i cos a - x_{i+hd/2} sin a, x_{i+hd/2} cos a + x_i sin a).
 * inverse = 1 rotates by -a: the backward of the forward rotation. */
int kern_rope(struct kern_ctx *k, long long rows, long long heads,
	      long long hd, double theta, const int32_t *pos, int inverse,
	      float *x);

/* Causal grouped-query attention (shape: struct kern_attn). Query row i
 * attends key row s of the same sequence iff kpos[s] <= qpos[i]; qpos [sq]
 * and kpos [sk] are token positions shared by every sequence, so the same
 * call serves a whole sequence, a context-parallel chunk pair, or one key
 * block of a ring. A NULL qpos or kpos stands for positions 0, 1, 2, ...
 * (a whole sequence): the same result as those arrays, and the flash
 * kernels then know each tile's mask without reading positions (on an
 * H200 the forward 12-27% and the backward up to 9% faster at the
 * benchmark's shapes, docs/runtime-gpu.md). attn_fwd writes o
 * (softmax(scale q k^T) v over the attended keys) and lse (the natural
 * log of the softmax's denominator, including the max: log sum
 * exp(scale q.k)); a row that attends no key gets o = 0 and lse =
 * -INFINITY. K and V are never copied per query head. */
int kern_attn_fwd(struct kern_ctx *k, const struct kern_attn *a,
		  const float *q, const float *kk, const float *v,
		  const int32_t *qpos, const int32_t *kpos, float *o,
		  float *lse);
/* Combines a partial result of other key blocks into (o, lse), as a ring
 * does: lse' = log(exp(lse) + exp(lse2)), o' = o exp(lse - lse') +
 * o2 exp(lse2 - lse'); -INFINITY terms contribute nothing. */
int kern_attn_merge(struct kern_ctx *k, const struct kern_attn *a, float *o,
		    float *lse, const float *o2, const float *lse2);
/* The backward for one key block, given the final o and lse over all key
 * blocks (so a ring calls it once per block with the same o, lse, dout):
 * with P = exp(scale q k^T - lse) on attended pairs and
 * D = rowsum(dout * o), accumulates dv += P^T dout, dq += scale (P *
 * (dout v^T - D)) k, dk += scale (P * (dout v^T - D))^T q; dk and dv sum
 * over the query heads of each group. With a->overwrite set, dq, dk and
 * dv start from zero instead (= rather than +=; every element written,
 * rows that attend nothing and keys no row attends get 0): the flash
 * kernels clear them in their dsum pre-pass, the others zero them first
 * (kernels/kern_flash.h), so a caller with one key block needs no zeroing
 * of its own. */
int kern_attn_bwd(struct kern_ctx *k, const struct kern_attn *a,
		  const float *q, const float *kk, const float *v,
		  const float *o, const float *lse, const float *dout,
		  const int32_t *qpos, const int32_t *kpos, float *dq,
		  float *dk, float *dv);

/* Attention on the bf16 copies of its inputs (as kern_gemm_bf's: the
 * bits of bf16 values, written beside them by kern_round_bf16_copy):
 * kern_attn_fwd_bf computes kern_attn_fwd of the copies' values and
 * writes o rounded to bf16 with its bits in o16 (o may be NULL: the bits
 * alone); kern_attn_bwd_bf is
 * kern_attn_bwd of the copies' values (dout as given, or, where dout16 is
 * set, its bf16 bits: dout may then be NULL). The CUDA twin in
 * KERN_MATH_BF16 hands the copies to the flash kernels as they are (no
 * cast) and the flash forward writes o16 itself; elsewhere the copies are
 * widened first, so a stale copy shows on every device. */
int kern_attn_fwd_bf(struct kern_ctx *k, const struct kern_attn *a,
		     const uint16_t *q16, const uint16_t *k16,
		     const uint16_t *v16, const int32_t *qpos,
		     const int32_t *kpos, float *o, uint16_t *o16,
		     float *lse);
int kern_attn_bwd_bf(struct kern_ctx *k, const struct kern_attn *a,
		     const uint16_t *q16, const uint16_t *k16,
		     const uint16_t *v16, const uint16_t *o16,
		     const float *lse, const float *dout,
		     const uint16_t *dout16, const int32_t *qpos,
		     const int32_t *kpos, float *dq, float *dk, float *dv);

/* bfloat16, bit for bit alike on every device: to_bf16 rounds each float
 * to the nearest bf16 (ties to even; NaN stays a quiet NaN) and writes its
 * 16 bits; from_bf16 widens them back exactly; round_bf16 does both in
 * place, leaving floats that bf16 represents exactly. */
int kern_to_bf16(struct kern_ctx *k, long long n, const float *x,
		 uint16_t *y);
int kern_from_bf16(struct kern_ctx *k, long long n, const uint16_t *x,
		   float *y);
int kern_round_bf16(struct kern_ctx *k, long long n, float *x);
/* kern_round_bf16 of x that also writes the rounded values' bits to y (as
 * kern_to_bf16 of the result would), in one pass. */
int kern_round_bf16_copy(struct kern_ctx *k, long long n, float *x,
			 uint16_t *y);

/* Adam with bias correction, no weight decay; step counts from 1:
 * m = b1 m + (1-b1) g, v = b2 v + (1-b2) g^2,
 * p -= lr * (m / (1-b1^step)) / (sqrt(v / (1-b2^step)) + eps). */
int kern_adam(struct kern_ctx *k, long long n, float lr, float beta1,
	      float beta2, float eps, long long step, float *p, const float *g,
	      float *m, float *v);
/* kern_adam that also writes the bf16 rounding of the first n16 updated
 * values of p to p16 (kern_to_bf16's bits; 0 <= n16 <= n): the bf16 copy
 * of the weights a mixed-precision run multiplies, in the optimizer's
 * pass. */
int kern_adam_bf(struct kern_ctx *k, long long n, float lr, float beta1,
		 float beta2, float eps, long long step, float *p,
		 const float *g, float *m, float *v, uint16_t *p16,
		 long long n16);
/* p -= lr * g. */
int kern_sgd(struct kern_ctx *k, long long n, float lr, float *p,
	     const float *g);

#endif
