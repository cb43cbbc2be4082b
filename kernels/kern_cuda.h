/*
 * kern_cuda: what the CUDA sources (the .cu files of kernels/) share:
 * launch shapes, block reductions, the CUDACHECK boundary that turns a
 * CUDA error into a KERN_E* value whose message, with its file:line, the
 * caller prints once (kern_error_text), and the other files' members of
 * kern_cuda_ops (each follows the kern.h wrapper of the same name,
 * arguments checked by kern.c). CUDA C++ only: C callers see kern.h.
 *
 * Ownership: as kern.h: the caller owns every device buffer; these
 * functions keep no pointer past the call.
 */
#ifndef GTPLAN_KERN_CUDA_H
#define GTPLAN_KERN_CUDA_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <float.h>

extern "C" {
#include "kern.h"
}

/* A context's CUDA state (kernels/kern_cuda.cu owns it; fast and prof are
 * made at their first use by kernels/kern_cuda_fast.cu and
 * kernels/kern_cuda_prof.cu). */
struct kern_fast;
struct kern_prof;
#define KERN_CUDA_STAGE_SLOTS 8
#define KERN_CUDA_STAGE_BYTES (256u << 10)

struct cuda_impl {
	int dev;
	cudaStream_t stream;
	cublasHandle_t blas;
	struct kern_fast *fast;
	struct kern_prof *prof;
	void *scratch; /* kern_cuda_scratch */
	size_t scratch_cap;
	/* kern_upload of at most KERN_CUDA_STAGE_BYTES: the bytes copied
	 * into slot stage_next of this pinned ring and sent from there
	 * without waiting for the stream; a slot is reused once the event
	 * of its last copy has passed (kernels/kern_cuda.cu cuda_upload) */
	unsigned char *stage;
	cudaEvent_t stage_ev[KERN_CUDA_STAGE_SLOTS];
	int stage_next;
	/* RoPE's cos and sin for positions 0 .. rope_len - 1 at head dim
	 * rope_hd and base rope_theta, made by the first fused qkv pass that
	 * needs them and remade when one needs another (kernels/
	 * kern_cuda_qkv_rope.cu rope_table) */
	float *rope_tab;
	double rope_theta;
	int rope_hd;
	int rope_len;
	unsigned int *counter; /* kern_cuda_counter */
	int sms; /* the GPU's SMs, set with counter */
	/* GTPLAN_NORM_BWD as the context found it at kern_init
	 * (kern_cuda_norm_init: KERN_CUDA_NORM_BWD_*) */
	int norm_bwd;
	/* the flash kernels its bf16 attention runs, as GTPLAN_FLASH and
	 * GTPLAN_FLASH_BWD named them at kern_init (kern_cuda_flash_init:
	 * enum kern_flash_kind, kernels/kern_flash.h) */
	int flash_fwd, flash_bwd;
};

/* kernels/kern_cuda.cu: a scratch buffer of at least `bytes` for one
 * call's temporaries, reused by the next call (stream order keeps them
 * apart); growing it waits for the stream. */
int kern_cuda_scratch(struct cuda_impl *c, size_t bytes, void **out);
/* kernels/kern_cuda.cu: the context's device counter (an unsigned int,
 * zeroed in stream order at the first call, c->sms set with it) for a
 * kernel whose blocks count their arrivals (kernels/kern_cuda_norm_bwd.cu's
 * norm_dg_tail); such a kernel leaves it at 0 when it ends, and two
 * never overlap: all go to the context's one stream. */
int kern_cuda_counter(struct cuda_impl *c, unsigned int **out);

#define KERN_CUDA_THREADS 256
/* Grid cap for grid-stride loops: enough blocks to fill any current GPU. */
#define KERN_CUDA_MAX_BLOCKS 65535LL

/* The KERN_E* value of a CUDA error, its message kept for the caller to
 * print (kern_error_text). */
static inline int cuda_fail(cudaError_t e, const char *what, const char *file,
			    int line)
{
	return kern_set_error(e == cudaErrorMemoryAllocation ? KERN_ENOMEM :
			      KERN_EDEVICE, "%s:%d: %s: %s (%s)", file, line,
			      what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#define CUDACHECK(cmd)                                                  \
	do {                                                            \
		cudaError_t e_ = (cmd);                                 \
		if (e_ != cudaSuccess)                                  \
			return cuda_fail(e_, #cmd, __FILE__, __LINE__); \
	} while (0)

/* Passes a KERN_E* code on. */
#define KERN_TRY(cmd)                   \
	do {                            \
		int rc_ = (cmd);        \
		if (rc_)                \
			return rc_;     \
	} while (0)

/* After a launch: configuration errors show up here, faults at the next
 * synchronising call. */
#define LAUNCHCHECK(name) CUDACHECK(cudaGetLastError())

#define GRID_STRIDE(i, n)                                                  \
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; \
	     i < (n); i += (long long)gridDim.x * blockDim.x)

/* Blocks of KERN_CUDA_THREADS for n grid-stride items. */
static inline unsigned blocks_for(long long n)
{
	long long b = (n + KERN_CUDA_THREADS - 1) / KERN_CUDA_THREADS;

	return (unsigned)(b < 1 ? 1 : b > KERN_CUDA_MAX_BLOCKS ?
			  KERN_CUDA_MAX_BLOCKS : b);
}

/* One block per row, rows past the cap taken by grid stride. */
static inline unsigned rows_grid(long long rows)
{
	return (unsigned)(rows < KERN_CUDA_MAX_BLOCKS ? rows :
			  KERN_CUDA_MAX_BLOCKS);
}

/* bf16 bits of f, bit for bit as kernels/kern_cpu.c's bf16_of: round to
 * nearest even, NaN kept quiet. */
__device__ __forceinline__ static unsigned short bf16_bits(float f)
{
	unsigned int u = __float_as_uint(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (unsigned short)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (unsigned short)(u >> 16);
}

__device__ __forceinline__ static unsigned int bf16_pair(float lo, float hi)
{
	return (unsigned int)bf16_bits(lo) | (unsigned int)bf16_bits(hi) << 16;
}

/* f rounded to bf16 (its bits widened back), and the bits in *h when h is
 * set: the kernels that write a bf16 copy of their output beside it
 * (kern_add_rmsnorm_fwd's y16, kern_qkv_rope_bf's copies). */
__device__ __forceinline__ static float bf16_keep(float f, uint16_t *h)
{
	unsigned short b = bf16_bits(f);

	if (h)
		*h = b;
	return __uint_as_float((unsigned int)b << 16);
}

/* bf16_pair's bits from the hardware's round-to-nearest-even conversion
 * (cvt.rn.bf16x2.f32: one instruction for two values, where bf16_bits
 * takes about five integer ones a value): the same bits for every value
 * but NaN, which it makes canonical; bf16_pack8/4 take bf16_pair for a
 * chunk holding a NaN, so theirs are bf16_bits' in every case. */
__device__ __forceinline__ static unsigned int bf16_pair_rn(float lo, float hi)
{
	unsigned int r;

	asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}

/* The bits of v[0 .. 7] (v[0] lowest), bit for bit bf16_bits'. */
__device__ __forceinline__ static uint4 bf16_pack8(const float v[8])
{
	int nan = 0;

#pragma unroll
	for (int i = 0; i < 8; i++)
		nan |= isnan(v[i]);
	if (nan)
		return make_uint4(bf16_pair(v[0], v[1]), bf16_pair(v[2], v[3]),
				  bf16_pair(v[4], v[5]), bf16_pair(v[6], v[7]));
	return make_uint4(bf16_pair_rn(v[0], v[1]), bf16_pair_rn(v[2], v[3]),
			  bf16_pair_rn(v[4], v[5]), bf16_pair_rn(v[6], v[7]));
}

__device__ __forceinline__ static uint2 bf16_pack4(float4 v)
{
	if (isnan(v.x) || isnan(v.y) || isnan(v.z) || isnan(v.w))
		return make_uint2(bf16_pair(v.x, v.y), bf16_pair(v.z, v.w));
	return make_uint2(bf16_pair_rn(v.x, v.y), bf16_pair_rn(v.z, v.w));
}

/* Division by a divisor fixed for a launch, as a multiply and a shift
 * (Granlund and Montgomery, "Division by invariant integers using
 * multiplication", PLDI 1994; CUTLASS's FastDivmod): q = n / d for
 * 0 <= n, d < 2^31. kdiv_init on the host, kdiv_q on the device. */
struct kdiv {
	unsigned int d, mul, shr;
};

static inline struct kdiv kdiv_init(unsigned int d)
{
	struct kdiv k = { d, 0, 0 };
	unsigned int l = 0;

	while ((1u << l) < d) /* ceil(log2 d) */
		l++;
	if (d > 1) {
		k.mul = (unsigned int)(((1ULL << (31 + l)) + d - 1) / d);
		k.shr = l - 1;
	}
	return k;
}

__device__ __forceinline__ static unsigned int kdiv_q(unsigned int n,
						      struct kdiv k)
{
	return k.d == 1 ? n : __umulhi(n, k.mul) >> k.shr;
}

/* Blocks of `threads` (and `smem` bytes of dynamic shared memory) for a
 * grid-stride kernel that keeps the device full, no more than the work
 * needs: the kernel's resident blocks an SM times the SMs, at most
 * `want`, at least 1. The device's count is asked once per (device,
 * kernel, threads, smem), so that a launch costs one cudaGetDevice, not
 * three queries. The table is not locked: the grid only sizes a
 * grid-stride loop, which is right for any grid, so a race between two
 * threads' first launches costs speed at most. */
template <typename K>
static int resident_grid(K kernel, int threads, size_t smem, long long want,
			 unsigned *grid)
{
	static struct {
		const void *k;
		int dev, threads;
		size_t smem;
		long long g;
	} seen[8];
	static int n;
	int dev = 0, sms = 0, per = 0;
	long long g = 0;

	CUDACHECK(cudaGetDevice(&dev));
	for (int i = 0; i < n && !g; i++)
		if (seen[i].k == (const void *)kernel && seen[i].dev == dev &&
		    seen[i].threads == threads && seen[i].smem == smem)
			g = seen[i].g;
	if (!g) {
		CUDACHECK(cudaDeviceGetAttribute(&sms,
						 cudaDevAttrMultiProcessorCount,
						 dev));
		CUDACHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
			&per, kernel, threads, smem));
		g = (long long)sms * (per < 1 ? 1 : per);
		if (n < 8) {
			seen[n].k = (const void *)kernel;
			seen[n].dev = dev;
			seen[n].threads = threads;
			seen[n].smem = smem;
			seen[n].g = g;
			n++;
		}
	}
	g = want < g ? want : g;
	*grid = (unsigned)(g < 1 ? 1 : g);
	return 0;
}

/* The cross-entropy gradient at logit j (kernels/kern_cuda_ce.cu on fp32
 * logits, kern_cuda_b16.cu on bf16): scale (softmax - onehot), the
 * softmax exp(l - mr) * inv from the row's max mr and 1 / sum, t the
 * row's target column; 0 for a masked column (j >= nvalid). */
__device__ __forceinline__ static float ce_grad(float l, long long j,
						long long nvalid, long long t,
						float mr, float inv,
						float scale)
{
	float p;

	if (j >= nvalid)
		return 0.0f;
	p = expf(l - mr) * inv;
	return scale * (j == t ? p - 1.0f : p);
}

/* Every thread of the block gets the block's sum (or max). Needs
 * blockDim.x a multiple of 32, at most 1024. */
__device__ __forceinline__ static float block_sum(float v)
{
	__shared__ float part[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads(); /* part[] may still be read by a previous call */
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x >> 5) ? part[lane] : 0.0f;
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ static float block_max(float v)
{
	__shared__ float part[32];
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	__syncthreads();
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	v = lane < (int)(blockDim.x >> 5) ? part[lane] : -FLT_MAX;
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* kernels/kern_cuda_llm.cu */
int kern_cuda_bias_add(struct kern_ctx *k, long long rows, long long cols,
		       const float *b, float *y);
int kern_cuda_bias_grad(struct kern_ctx *k, long long rows, long long cols,
			const float *dy, float *db);
int kern_cuda_swiglu_fwd(struct kern_ctx *k, long long rows, long long f,
			 const float *x, float *y);
int kern_cuda_swiglu_bwd(struct kern_ctx *k, long long rows, long long f,
			 const float *x, const float *dy, float *dx);
int kern_cuda_attn_fwd(struct kern_ctx *k, const struct kern_attn *a,
		       const float *q, const float *kk, const float *v,
		       const int32_t *qpos, const int32_t *kpos, float *o,
		       float *lse);
int kern_cuda_attn_merge(struct kern_ctx *k, const struct kern_attn *a,
			 float *o, float *lse, const float *o2,
			 const float *lse2);
int kern_cuda_attn_bwd(struct kern_ctx *k, const struct kern_attn *a,
		       const float *q, const float *kk, const float *v,
		       const float *o, const float *lse, const float *dout,
		       const int32_t *qpos, const int32_t *kpos, float *dq,
		       float *dk, float *dv);

/* kernels/kern_cuda_qkv.cu */
int kern_cuda_qkv_split(struct kern_ctx *k, long long rows, long long groups,
			long long nq, long long nk, const float *packed,
			float *q, float *kk, float *v);
int kern_cuda_qkv_merge(struct kern_ctx *k, long long rows, long long groups,
			long long nq, long long nk, const float *q,
			const float *kk, const float *v, float *packed);
int kern_cuda_rope(struct kern_ctx *k, long long rows, long long heads,
		   long long hd, double theta, const int32_t *pos, int inverse,
		   float *x);
/* kernels/kern_cuda_qkv_rope.cu */
int kern_cuda_qkv_rope_bf(struct kern_ctx *k, const struct kern_qkv *a,
			  const int32_t *pos, const float *packed, float *q,
			  float *kk, float *v, uint16_t *q16, uint16_t *k16,
			  uint16_t *v16);
int kern_cuda_qkv_merge_rope_bf(struct kern_ctx *k, const struct kern_qkv *a,
				const int32_t *pos, const float *dq,
				const float *dk, const float *dv, float *packed,
				uint16_t *packed16);

/* kernels/kern_cuda_b16.cu */
int kern_cuda_swiglu_fwd_b16(struct kern_ctx *k, long long rows, long long f,
			     const uint16_t *x16, uint16_t *y16);
int kern_cuda_swiglu_bwd_b16(struct kern_ctx *k, long long rows, long long f,
			     const uint16_t *x16, const uint16_t *dy16,
			     uint16_t *dx16);
int kern_cuda_embed_fwd_b16(struct kern_ctx *k, long long n, long long h,
			    long long first, long long rows,
			    const uint16_t *table, const int32_t *tokens,
			    float *out);
int kern_cuda_ce_max_b16(struct kern_ctx *k, long long rows, long long cols,
			 long long nvalid, const uint16_t *l16, float *max);
int kern_cuda_ce_sumexp_b16(struct kern_ctx *k, long long rows,
			    long long cols, long long nvalid,
			    const uint16_t *l16, const float *max, float *sum);
int kern_cuda_ce_target_b16(struct kern_ctx *k, long long rows,
			    long long cols, long long first,
			    const int32_t *targets, const uint16_t *l16,
			    float *target);
int kern_cuda_ce_bwd_b16(struct kern_ctx *k, long long rows, long long cols,
			 long long nvalid, long long first,
			 const int32_t *targets, const float *max,
			 const float *sum, float scale, const uint16_t *l16,
			 uint16_t *d16);

/* kernels/kern_cuda_norm.cu */
int kern_cuda_rmsnorm_fwd(struct kern_ctx *k, long long rows, long long h,
			  float eps, const float *x, const float *g, float *y,
			  float *rstd);
int kern_cuda_add_rmsnorm_fwd(struct kern_ctx *k, long long rows,
			      long long h, float eps, const float *x,
			      const float *r, float *sum, const float *g,
			      float *y, float *rstd, uint16_t *y16);
/* kernels/kern_cuda_norm_bwd.cu */
/* How the backward adds dg's parts (norm_dg_spin): by its rule, in the
 * launch's last blocks at every shape, or by a second launch. */
enum {
	KERN_CUDA_NORM_BWD_RULE,
	KERN_CUDA_NORM_BWD_ONE,
	KERN_CUDA_NORM_BWD_TWO,
};
/* c->norm_bwd from GTPLAN_NORM_BWD (=one, =two; unset or else the rule),
 * read once per context (kernels/kern_cuda.cu cuda_setup) rather than at
 * every backward: a test or a benchmark that sets it makes its context
 * after. */
void kern_cuda_norm_init(struct cuda_impl *c);
int kern_cuda_rmsnorm_bwd(struct kern_ctx *k, long long rows, long long h,
			  const float *x, const float *g, const float *rstd,
			  const float *dy, float *dx, float *dg);
int kern_cuda_rmsnorm_bwd_add(struct kern_ctx *k, long long rows,
			      long long h, const float *x, const float *g,
			      const float *rstd, const float *dy, float *dx,
			      float *dg, uint16_t *dx16);

/* kernels/kern_cuda_ce.cu */
int kern_cuda_ce_max(struct kern_ctx *k, long long rows, long long cols,
		     long long nvalid, const float *logits, float *max);
int kern_cuda_ce_sumexp(struct kern_ctx *k, long long rows, long long cols,
			long long nvalid, const float *logits,
			const float *max, float *sum);
int kern_cuda_ce_target(struct kern_ctx *k, long long rows, long long cols,
			long long first, const int32_t *targets,
			const float *logits, float *target);
int kern_cuda_ce_loss(struct kern_ctx *k, long long rows, const float *max,
		      const float *sum, const float *target, float *loss);
int kern_cuda_ce_bwd(struct kern_ctx *k, long long rows, long long cols,
		     long long nvalid, long long first, const int32_t *targets,
		     const float *max, const float *sum, float scale,
		     const float *logits, float *dlogits);

/* kernels/kern_cuda_bf16.cu */
int kern_cuda_to_bf16(struct kern_ctx *k, long long n, const float *x,
		      uint16_t *y);
int kern_cuda_from_bf16(struct kern_ctx *k, long long n, const uint16_t *x,
			float *y);
int kern_cuda_round_bf16(struct kern_ctx *k, long long n, float *x);
int kern_cuda_round_bf16_copy(struct kern_ctx *k, long long n, float *x,
			      uint16_t *y);
/* kern_zero: 16-byte stores where p and bytes allow, cudaMemsetAsync
 * else. */
int kern_cuda_zero(struct kern_ctx *k, void *p, size_t bytes);
/* kern_cuda_from_bf16 on a stream, for callers without a kern_ctx
 * (kernels/kern_cuda_fast.cu). */
int kern_cuda_widen_bf16(cudaStream_t s, long long n, const uint16_t *x,
			 float *y);

/* kernels/kern_cuda_fast.cu: the KERN_MATH_BF16 mode (kern_set_math).
 * The _ok tests say which shapes it takes; the others use the fp32
 * reference kernels. */
int kern_fast_gemm_ok(long long m, long long n, long long kd);
int kern_fast_gemm(struct cuda_impl *c, int ta, int tb, long long m,
		   long long n, long long kd, float alpha, const float *a,
		   long long lda, const float *b, long long ldb, float beta,
		   float *cc, long long ldc);
/* The same with bf16 copies of the operands where given (kern_gemm_bf):
 * those are multiplied as they are, the others cast. */
int kern_fast_gemm_bf(struct cuda_impl *c, int ta, int tb, long long m,
		      long long n, long long kd, float alpha, const float *a,
		      const uint16_t *a16, long long lda, const float *b,
		      const uint16_t *b16, long long ldb, float beta,
		      float *cc, long long ldc);
/* kern_gemm_bf16: C16 = op(A) op(B) rounded to bf16 by cuBLASLt's
 * epilogue, from the copies alone. */
int kern_fast_gemm_bf16(struct cuda_impl *c, int ta, int tb, long long m,
			long long n, long long kd, const uint16_t *a16,
			long long lda, const uint16_t *b16, long long ldb,
			uint16_t *c16);
int kern_fast_attn_ok(const struct kern_attn *a);
int kern_fast_attn_fwd(struct cuda_impl *c, const struct kern_attn *a,
		       const float *q, const float *kk, const float *v,
		       const int32_t *qpos, const int32_t *kpos, float *o,
		       float *lse);
int kern_fast_attn_bwd(struct cuda_impl *c, const struct kern_attn *a,
		       const float *q, const float *kk, const float *v,
		       const float *o, const float *lse, const float *dout,
		       const int32_t *qpos, const int32_t *kpos, float *dq,
		       float *dk, float *dv);
/* The same on bf16 copies where given (kern_attn_fwd_bf/bwd_bf): those
 * go to the flash kernels as they are, the others are cast; o16, when
 * set, receives the flash forward's output (o widened from it). The
 * backward's inputs in order q, k, v, o (src, in16). */
int kern_fast_attn_fwd_bf(struct cuda_impl *c, const struct kern_attn *a,
			  const float *q, const uint16_t *q16, const float *kk,
			  const uint16_t *k16, const float *v,
			  const uint16_t *v16, const int32_t *qpos,
			  const int32_t *kpos, float *o, uint16_t *o16,
			  float *lse);
/* src and in16: q, k, v, o and dout, each as its bf16 bits where in16
 * has them, else cast from src. */
int kern_fast_attn_bwd_bf(struct cuda_impl *c, const struct kern_attn *a,
			  const float *const src[5],
			  const uint16_t *const in16[5], const float *lse,
			  const int32_t *qpos, const int32_t *kpos, float *dq,
			  float *dk, float *dv);
void kern_fast_free(struct kern_fast *f);
/* c->flash_fwd and c->flash_bwd (kern_flash_fwd_pick, _bwd_pick), read
 * once per context (kernels/kern_cuda.cu cuda_setup) rather than at every
 * attention call: a test or a benchmark that sets GTPLAN_FLASH or
 * GTPLAN_FLASH_BWD makes its context after. */
void kern_cuda_flash_init(struct cuda_impl *c);

/* kernels/kern_cuda_prof.cu: kern_prof_* (kern.h) on CUDA events. */
int kern_cuda_prof_start(struct kern_ctx *k);
void kern_cuda_prof_mark(struct kern_ctx *k, int cls, const char *op,
			 int end);
void kern_cuda_prof_ops(struct kern_ctx *k, void *file);
/* The same bracket from inside a call (a no-op unless profiling). */
void kern_cuda_prof_note(struct cuda_impl *c, int cls, const char *op,
			 int end);
/* The GEMM shape of the innermost open bracket (kern_cuda_fast.cu, before
 * its cuBLASLt call): the profile sums its time per shape as well
 * (kern_cuda_prof_ops prints them); c32: C in fp32, acc: beta != 0. */
void kern_cuda_prof_gemm(struct cuda_impl *c, int ta, int tb, long long m,
			 long long n, long long kd, int c32, int acc);
int kern_cuda_prof_read(struct kern_ctx *k, double *ms, long long *calls);
void kern_cuda_prof_free(struct kern_prof *p);

#endif
