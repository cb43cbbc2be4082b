/*
 * kern_cuda: the CUDA twin of every kernel (kern.h): cuBLAS (fp32, no TF32)
 * for GEMM and AXPY, simple kernels for the rest, all queued on the
 * context's own stream. Arguments were checked by kern.c. In the bf16
 * math mode (kern_set_math) GEMM and attention go to the tensor-core path
 * of kernels/kern_cuda_fast.cu.
 *
 * Semantics follow kern_cpu.c line for line; what may differ is rounding:
 * row reductions are trees instead of left-to-right sums, and embed_bwd
 * adds with atomicAdd, so a row hit by several tokens sums in any order.
 *
 * Only the .cu files of kernels/ see CUDA's and cuBLAS's types: every
 * failure becomes a KERN_E* value whose message, with its file:line
 * (CUDACHECK in kernels/kern_cuda.h, CUBLASCHECK below), the caller prints
 * once (kern_error_text); never an exit. The decoder's kernels (bias,
 * SwiGLU, attention) live in kernels/kern_cuda_llm.cu, linear_qkv's
 * columns and RoPE in kernels/kern_cuda_qkv.cu and (fused)
 * kern_cuda_qkv_rope.cu, the bf16 conversions in kernels/kern_cuda_bf16.cu,
 * RMSNorm in kernels/kern_cuda_norm.cu (forward) and kern_cuda_norm_bwd.cu,
 * the cross-entropy in kernels/kern_cuda_ce.cu.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern_cuda.h"

static int cublas_fail(cublasStatus_t s, const char *what, const char *file,
		       int line)
{
	return kern_set_error(s == CUBLAS_STATUS_ALLOC_FAILED ? KERN_ENOMEM :
			      KERN_EDEVICE, "%s:%d: %s: %s", file, line, what,
			      cublasGetStatusString(s));
}

#define CUBLASCHECK(cmd)                                                  \
	do {                                                              \
		cublasStatus_t s_ = (cmd);                                \
		if (s_ != CUBLAS_STATUS_SUCCESS)                          \
			return cublas_fail(s_, #cmd, __FILE__, __LINE__); \
	} while (0)

static struct cuda_impl *impl_of(struct kern_ctx *k)
{
	return (struct cuda_impl *)k->impl;
}

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return impl_of(k)->stream;
}

static int fits_int(long long v)
{
	return v >= 0 && v <= 0x7fffffffLL;
}

/* ---- context and memory ------------------------------------------------ */

static void cuda_release(struct kern_ctx *k);
static int cuda_sync(struct kern_ctx *k);

static int cuda_setup(struct cuda_impl *c)
{
	/* The caller picks the GPU (cudaSetDevice) before kern_init. */
	CUDACHECK(cudaGetDevice(&c->dev));
	CUDACHECK(cudaStreamCreateWithFlags(&c->stream,
					    cudaStreamNonBlocking));
	CUBLASCHECK(cublasCreate(&c->blas));
	CUBLASCHECK(cublasSetStream(c->blas, c->stream));
	/* fp32 means fp32: no TF32 tensor cores, whatever the environment. */
	CUBLASCHECK(cublasSetMathMode(c->blas, CUBLAS_PEDANTIC_MATH));
	kern_cuda_norm_init(c);
	kern_cuda_flash_init(c);
	return 0;
}

/* KERN_ENODEV, with the driver's reason kept (kern_error_text), when no
 * GPU is usable; a failure half-way releases what was made. */
static int cuda_init(struct kern_ctx *k, int threads)
{
	struct cuda_impl *c;
	int count = 0, rc;
	cudaError_t e;

	(void)threads;
	e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0) {
		(void)cudaGetLastError();
		return kern_set_error(KERN_ENODEV, "no CUDA device: %s",
				      e != cudaSuccess ? cudaGetErrorString(e) :
				      "no device found");
	}
	c = (struct cuda_impl *)calloc(1, sizeof(*c));
	if (!c)
		return KERN_ENOMEM;
	k->impl = c;
	rc = cuda_setup(c);
	if (rc)
		cuda_release(k);
	return rc;
}

static void cuda_release(struct kern_ctx *k)
{
	struct cuda_impl *c = impl_of(k);

	if (!c)
		return;
	if (c->stream)
		cudaStreamSynchronize(c->stream);
	kern_fast_free(c->fast);
	kern_cuda_prof_free(c->prof);
	cudaFree(c->scratch);
	cudaFree(c->rope_tab);
	cudaFree(c->counter);
	for (int i = 0; i < KERN_CUDA_STAGE_SLOTS; i++)
		if (c->stage_ev[i])
			cudaEventDestroy(c->stage_ev[i]);
	cudaFreeHost(c->stage);
	if (c->blas)
		cublasDestroy(c->blas);
	if (c->stream) {
		cudaStreamSynchronize(c->stream);
		cudaStreamDestroy(c->stream);
	}
	free(c);
	k->impl = NULL;
}

static int cuda_alloc(struct kern_ctx *k, size_t bytes, void **out)
{
	void *p = NULL;

	int rc;

	CUDACHECK(cudaMalloc(&p, bytes ? bytes : 1));
	rc = kern_cuda_zero(k, p, bytes ? bytes : 1);
	if (!rc)
		rc = cuda_sync(k);
	if (rc) {
		cudaFree(p);
		return rc;
	}
	*out = p;
	return 0;
}

static void cuda_free(struct kern_ctx *k, void *p)
{
	/* cudaFree waits for the device; the stream's work on p is done. */
	cudaStreamSynchronize(stream_of(k));
	cudaFree(p);
}

int kern_cuda_scratch(struct cuda_impl *c, size_t bytes, void **out)
{
	if (bytes > c->scratch_cap) {
		CUDACHECK(cudaStreamSynchronize(c->stream));
		CUDACHECK(cudaFree(c->scratch));
		c->scratch = NULL;
		c->scratch_cap = 0;
		CUDACHECK(cudaMalloc(&c->scratch, bytes));
		c->scratch_cap = bytes;
	}
	*out = c->scratch;
	return 0;
}

int kern_cuda_counter(struct cuda_impl *c, unsigned int **out)
{
	unsigned int *n = NULL;
	cudaError_t e;

	if (!c->counter) {
		CUDACHECK(cudaDeviceGetAttribute(&c->sms,
						 cudaDevAttrMultiProcessorCount,
						 c->dev));
		CUDACHECK(cudaMalloc((void **)&n, sizeof(*n)));
		e = cudaMemsetAsync(n, 0, sizeof(*n), c->stream);
		if (e != cudaSuccess) {
			cudaFree(n);
			return cuda_fail(e, "cudaMemsetAsync", __FILE__,
					 __LINE__);
		}
		c->counter = n;
	}
	*out = c->counter;
	return 0;
}

/* Host transfers finish before returning: the caller may reuse or read the
 * host buffer at once. */
/* The staging ring, made at the first small upload. */
static int stage_setup(struct cuda_impl *c)
{
	CUDACHECK(cudaMallocHost((void **)&c->stage, (size_t)
				 KERN_CUDA_STAGE_SLOTS * KERN_CUDA_STAGE_BYTES));
	for (int i = 0; i < KERN_CUDA_STAGE_SLOTS; i++)
		CUDACHECK(cudaEventCreateWithFlags(&c->stage_ev[i],
						   cudaEventDisableTiming));
	return 0;
}

/* src is free again on return, as on the CPU. A small upload (a
 * micro-batch's tokens, a host-staged collective's share) goes through
 * the pinned ring and does not wait for the stream: the step's queue
 * keeps running while the host loads the next micro-batch. A large one
 * (the weights at start-up, a checkpoint) is copied straight from src
 * and waited for. Either way the copy is ordered on the kernels' stream
 * before everything queued after it (the GTP and p2p streams enter
 * through events recorded on it: runtime/coll_nccl.c). */
static int cuda_upload(struct kern_ctx *k, void *dst, const void *src,
		       size_t n)
{
	struct cuda_impl *c = impl_of(k);
	unsigned char *slot;
	int i;

	if (n > KERN_CUDA_STAGE_BYTES) {
		CUDACHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice,
					  stream_of(k)));
		CUDACHECK(cudaStreamSynchronize(stream_of(k)));
		return 0;
	}
	if (!c->stage)
		KERN_TRY(stage_setup(c));
	i = c->stage_next;
	c->stage_next = (i + 1) % KERN_CUDA_STAGE_SLOTS;
	/* the slot's previous copy has left it (at once, unless the host
	 * is 8 uploads ahead of the device) */
	CUDACHECK(cudaEventSynchronize(c->stage_ev[i]));
	slot = c->stage + (size_t)i * KERN_CUDA_STAGE_BYTES;
	memcpy(slot, src, n);
	CUDACHECK(cudaMemcpyAsync(dst, slot, n, cudaMemcpyHostToDevice,
				  stream_of(k)));
	CUDACHECK(cudaEventRecord(c->stage_ev[i], stream_of(k)));
	return 0;
}

static int cuda_download(struct kern_ctx *k, void *dst, const void *src,
			 size_t n)
{
	CUDACHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost,
				  stream_of(k)));
	CUDACHECK(cudaStreamSynchronize(stream_of(k)));
	return 0;
}

static int cuda_copy(struct kern_ctx *k, void *dst, const void *src,
		     size_t n)
{
	CUDACHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice,
				  stream_of(k)));
	return 0;
}

static void *cuda_stream(struct kern_ctx *k)
{
	return (void *)stream_of(k);
}

static int cuda_sync(struct kern_ctx *k)
{
	CUDACHECK(cudaStreamSynchronize(stream_of(k)));
	return 0;
}

/* ---- BLAS -------------------------------------------------------------- */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same
 * buffers, operands swapped, m and n swapped. */
static int cuda_gemm(struct kern_ctx *k, int ta, int tb, long long m,
		     long long n, long long kd, float alpha, const float *a,
		     long long lda, const float *b, long long ldb, float beta,
		     float *c, long long ldc)
{
	if (!fits_int(m) || !fits_int(n) || !fits_int(kd) || !fits_int(lda) ||
	    !fits_int(ldb) || !fits_int(ldc))
		return KERN_EINVAL;
	if (k->math == KERN_MATH_BF16 && kern_fast_gemm_ok(m, n, kd))
		return kern_fast_gemm(impl_of(k), ta, tb, m, n, kd, alpha, a,
				      lda, b, ldb, beta, c, ldc);
	CUBLASCHECK(cublasSgemm(impl_of(k)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
				ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m,
				(int)kd, &alpha, b, (int)ldb, a, (int)lda,
				&beta, c, (int)ldc));
	return 0;
}

static int cuda_gemm_bf(struct kern_ctx *k, int ta, int tb, long long m,
			long long n, long long kd, float alpha, const float *a,
			const uint16_t *a16, long long lda, const float *b,
			const uint16_t *b16, long long ldb, float beta,
			float *c, long long ldc)
{
	return kern_fast_gemm_bf(impl_of(k), ta, tb, m, n, kd, alpha, a, a16,
				 lda, b, b16, ldb, beta, c, ldc);
}

static int cuda_gemm_bf16(struct kern_ctx *k, int ta, int tb, long long m,
			  long long n, long long kd, const uint16_t *a16,
			  long long lda, const uint16_t *b16, long long ldb,
			  uint16_t *c16)
{
	return kern_fast_gemm_bf16(impl_of(k), ta, tb, m, n, kd, a16, lda,
				   b16, ldb, c16);
}

/* kern_attn_*_bf on the flash kernels; KERN_ENODEV for a shape they do
 * not take (kern.c then widens the copies for the reference kernels). */
static int cuda_attn_fwd_bf(struct kern_ctx *k, const struct kern_attn *a,
			    const uint16_t *q16, const uint16_t *k16,
			    const uint16_t *v16, const int32_t *qpos,
			    const int32_t *kpos, float *o, uint16_t *o16,
			    float *lse)
{
	if (!kern_fast_attn_ok(a))
		return KERN_ENODEV;
	return kern_fast_attn_fwd_bf(impl_of(k), a, NULL, q16, NULL, k16, NULL,
				     v16, qpos, kpos, o, o16, lse);
}

static int cuda_attn_bwd_bf(struct kern_ctx *k, const struct kern_attn *a,
			    const uint16_t *q16, const uint16_t *k16,
			    const uint16_t *v16, const uint16_t *o16,
			    const float *lse, const float *dout,
			    const uint16_t *dout16, const int32_t *qpos,
			    const int32_t *kpos, float *dq, float *dk,
			    float *dv)
{
	const float *src[5] = { NULL, NULL, NULL, NULL, dout };
	const uint16_t *in16[5] = { q16, k16, v16, o16, dout16 };

	if (!kern_fast_attn_ok(a))
		return KERN_ENODEV;
	return kern_fast_attn_bwd_bf(impl_of(k), a, src, in16, lse, qpos,
				     kpos, dq, dk, dv);
}

static int cuda_axpy(struct kern_ctx *k, long long n, float alpha,
		     const float *x, float *y)
{
	if (!fits_int(n))
		return KERN_EINVAL;
	CUBLASCHECK(cublasSaxpy(impl_of(k)->blas, (int)n, &alpha, x, 1, y, 1));
	return 0;
}

/* ---- embedding ---------------------------------------------------------- */

__global__ static void embed_fwd_k(long long n, long long h, long long first,
				   long long rows, const float *table,
				   const int32_t *tokens, float *out)
{
	GRID_STRIDE(idx, n * h) {
		long long i = idx / h, j = idx - i * h;
		long long row = (long long)tokens[i] - first;

		out[idx] = row >= 0 && row < rows ? table[row * h + j] : 0.0f;
	}
}

__global__ static void embed_bwd_k(long long n, long long h, long long first,
				   long long rows, const float *dout,
				   const int32_t *tokens, float *dtable)
{
	GRID_STRIDE(idx, n * h) {
		long long i = idx / h, j = idx - i * h;
		long long row = (long long)tokens[i] - first;

		if (row >= 0 && row < rows)
			atomicAdd(&dtable[row * h + j], dout[idx]);
	}
}

/* The same, one token's row a block as float4s (h % 4 == 0, 16-byte
 * aligned arrays): no division a value, 128-bit accesses. */
__global__ static void embed_fwd4_k(long long n, int h4, long long first,
				    long long rows, const float4 *table,
				    const int32_t *tokens, float4 *out)
{
	for (long long i = blockIdx.x; i < n; i += gridDim.x) {
		long long row = (long long)tokens[i] - first;
		int in = row >= 0 && row < rows;

		for (int j = threadIdx.x; j < h4; j += blockDim.x)
			out[i * h4 + j] = in ? table[row * h4 + j] :
				make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	}
}

/* On an H200 (bench_kernels_gpu mem, T 4096): 30.8 us at h 2048, 60.1
 * at h 4096, so 101 MB more in 29.3 us (3.4 TB/s between the shapes,
 * ~1.5 us fixed): the rate, not a fixed cost, holds it under the copy
 * rate. Resident blocks walking token rows with the next row's dout
 * loads in flight ran no faster (31.5 and 61.2 us), so the loads in
 * flight do not set it; the adds' read-modify-writes of table rows that
 * miss in L2 may (not profiled). */
__global__ static void embed_bwd4_k(long long n, int h4, long long first,
				    long long rows, const float4 *dout,
				    const int32_t *tokens, float4 *dtable)
{
	for (long long i = blockIdx.x; i < n; i += gridDim.x) {
		long long row = (long long)tokens[i] - first;

		if (row < 0 || row >= rows)
			continue;
		for (int j = threadIdx.x; j < h4; j += blockDim.x) {
			float4 d = dout[i * h4 + j];
			float4 *t = &dtable[row * h4 + j];
#if __CUDA_ARCH__ >= 900
			atomicAdd(t, d); /* four float adds, each atomic */
#else
			atomicAdd(&t->x, d.x);
			atomicAdd(&t->y, d.y);
			atomicAdd(&t->z, d.z);
			atomicAdd(&t->w, d.w);
#endif
		}
	}
}

/* The row kernels take h % 4 == 0, h / 4 within an int, 16-byte aligned
 * arrays. */
static int embed_vec(long long h, const void *a, const void *b)
{
	return h % 4 == 0 && h / 4 <= 0x7fffffffLL &&
	       ((uintptr_t)a | (uintptr_t)b) % 16 == 0;
}

static int cuda_embed_fwd(struct kern_ctx *k, long long n, long long h,
			  long long first, long long rows, const float *table,
			  const int32_t *tokens, float *out)
{
	if (embed_vec(h, table, out)) {
		embed_fwd4_k<<<rows_grid(n), KERN_CUDA_THREADS, 0,
			       stream_of(k)>>>(n, (int)(h / 4), first, rows,
					       (const float4 *)table, tokens,
					       (float4 *)out);
		LAUNCHCHECK(embed_fwd4_k);
		return 0;
	}
	embed_fwd_k<<<blocks_for(n * h), KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		n, h, first, rows, table, tokens, out);
	LAUNCHCHECK(embed_fwd_k);
	return 0;
}

static int cuda_embed_bwd(struct kern_ctx *k, long long n, long long h,
			  long long first, long long rows, const float *dout,
			  const int32_t *tokens, float *dtable)
{
	if (embed_vec(h, dout, dtable)) {
		embed_bwd4_k<<<rows_grid(n), KERN_CUDA_THREADS, 0,
			       stream_of(k)>>>(n, (int)(h / 4), first, rows,
					       (const float4 *)dout, tokens,
					       (float4 *)dtable);
		LAUNCHCHECK(embed_bwd4_k);
		return 0;
	}
	embed_bwd_k<<<blocks_for(n * h), KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		n, h, first, rows, dout, tokens, dtable);
	LAUNCHCHECK(embed_bwd_k);
	return 0;
}

/* ---- optimisers --------------------------------------------------------- */

/* Adam (kern.h) four values a thread (16-byte aligned arrays), writing
 * the bf16 bits of the updated p below n16 (kern_adam_bf): one 8-byte
 * store of the four (bf16_pack4, bf16_bits' bits) where p16 is 8-byte
 * aligned (pack) and all four are below n16, else one 2-byte store a
 * value. Four 2-byte stores a thread, at a stride of 8 bytes across the
 * warp, ran 3.90 / 3.88 TB/s at the 1B / 8B benchmark shapes on an H200
 * where the one store runs 4.03 / 4.02 (bench_kernels_gpu mem, the same
 * machine, twice each; its 512 MiB copy: 4.21 TB/s). */
__global__ static void adam4_k(long long n4, float lr, float beta1,
			       float beta2, float eps, float bc1, float bc2,
			       float4 *p, const float4 *g, float4 *m, float4 *v,
			       uint16_t *p16, long long n16, int pack)
{
	GRID_STRIDE(i, n4) {
		float4 g4 = g[i], m4 = m[i], v4 = v[i], p4 = p[i];
		float gv[4] = { g4.x, g4.y, g4.z, g4.w };
		float mv[4] = { m4.x, m4.y, m4.z, m4.w };
		float vv[4] = { v4.x, v4.y, v4.z, v4.w };
		float pv[4] = { p4.x, p4.y, p4.z, p4.w };

#pragma unroll
		for (int j = 0; j < 4; j++) {
			mv[j] = beta1 * mv[j] + (1.0f - beta1) * gv[j];
			vv[j] = beta2 * vv[j] + (1.0f - beta2) * gv[j] * gv[j];
			pv[j] -= lr * (mv[j] / bc1) / (sqrtf(vv[j] / bc2) + eps);
		}
		m[i] = make_float4(mv[0], mv[1], mv[2], mv[3]);
		v[i] = make_float4(vv[0], vv[1], vv[2], vv[3]);
		p[i] = make_float4(pv[0], pv[1], pv[2], pv[3]);
		if (pack && 4 * i + 3 < n16)
			*(uint2 *)(p16 + 4 * i) = bf16_pack4(
				make_float4(pv[0], pv[1], pv[2], pv[3]));
		else
#pragma unroll
			for (int j = 0; j < 4; j++)
				if (4 * i + j < n16)
					p16[4 * i + j] = bf16_bits(pv[j]);
	}
}

/* The tail (or unaligned arrays) one value a thread, from value `off`. */
__global__ static void adam_bf_k(long long n, long long off, float lr,
				 float beta1, float beta2, float eps, float bc1,
				 float bc2, float *p, const float *g, float *m,
				 float *v, uint16_t *p16, long long n16)
{
	GRID_STRIDE(j, n - off) {
		long long i = off + j;
		float gi = g[i];
		float mi = beta1 * m[i] + (1.0f - beta1) * gi;
		float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;

		m[i] = mi;
		v[i] = vi;
		p[i] -= lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
		if (i < n16)
			p16[i] = bf16_bits(p[i]);
	}
}

__global__ static void sgd_k(long long n, float lr, float *p, const float *g)
{
	GRID_STRIDE(i, n)
		p[i] -= lr * g[i];
}

static int cuda_adam_bf(struct kern_ctx *k, long long n, float lr,
			float beta1, float beta2, float eps, long long step,
			float *p, const float *g, float *m, float *v,
			uint16_t *p16, long long n16)
{
	/* Bias corrections on the host in double, as the CPU twin does. */
	float bc1 = (float)(1.0 - pow(beta1, (double)step));
	float bc2 = (float)(1.0 - pow(beta2, (double)step));
	int al = (uintptr_t)p % 16 == 0 && (uintptr_t)g % 16 == 0 &&
		 (uintptr_t)m % 16 == 0 && (uintptr_t)v % 16 == 0;
	long long n4 = al ? n / 4 : 0;

	if (n4) {
		adam4_k<<<blocks_for(n4), KERN_CUDA_THREADS, 0,
			  stream_of(k)>>>(n4, lr, beta1, beta2, eps, bc1, bc2,
					  (float4 *)p, (const float4 *)g,
					  (float4 *)m, (float4 *)v, p16, n16,
					  p16 && (uintptr_t)p16 % 8 == 0);
		LAUNCHCHECK(adam4_k);
	}
	if (n > 4 * n4) {
		adam_bf_k<<<blocks_for(n - 4 * n4), KERN_CUDA_THREADS, 0,
			    stream_of(k)>>>(n, 4 * n4, lr, beta1, beta2, eps,
					    bc1, bc2, p, g, m, v, p16, n16);
		LAUNCHCHECK(adam_bf_k);
	}
	return 0;
}

static int cuda_adam(struct kern_ctx *k, long long n, float lr, float beta1,
		     float beta2, float eps, long long step, float *p,
		     const float *g, float *m, float *v)
{
	return cuda_adam_bf(k, n, lr, beta1, beta2, eps, step, p, g, m, v, NULL,
			    0);
}

static int cuda_sgd(struct kern_ctx *k, long long n, float lr, float *p,
		    const float *g)
{
	sgd_k<<<blocks_for(n), KERN_CUDA_THREADS, 0, stream_of(k)>>>(n, lr, p,
								     g);
	LAUNCHCHECK(sgd_k);
	return 0;
}

static struct kern_ops make_ops(void)
{
	struct kern_ops o = {};

	o.name = "cuda";
	o.init = cuda_init;
	o.release = cuda_release;
	o.alloc = cuda_alloc;
	o.free = cuda_free;
	o.upload = cuda_upload;
	o.download = cuda_download;
	o.copy = cuda_copy;
	o.zero = kern_cuda_zero;
	o.sync = cuda_sync;
	o.gemm = cuda_gemm;
	o.axpy = cuda_axpy;
	o.rmsnorm_fwd = kern_cuda_rmsnorm_fwd;
	o.rmsnorm_bwd = kern_cuda_rmsnorm_bwd;
	o.ce_max = kern_cuda_ce_max;
	o.ce_sumexp = kern_cuda_ce_sumexp;
	o.ce_target = kern_cuda_ce_target;
	o.ce_loss = kern_cuda_ce_loss;
	o.ce_bwd = kern_cuda_ce_bwd;
	o.add_rmsnorm_fwd = kern_cuda_add_rmsnorm_fwd;
	o.rmsnorm_bwd_add = kern_cuda_rmsnorm_bwd_add;
	o.embed_fwd = cuda_embed_fwd;
	o.embed_bwd = cuda_embed_bwd;
	o.adam = cuda_adam;
	o.adam_bf = cuda_adam_bf;
	o.sgd = cuda_sgd;
	o.stream = cuda_stream;
	o.to_bf16 = kern_cuda_to_bf16;
	o.from_bf16 = kern_cuda_from_bf16;
	o.round_bf16 = kern_cuda_round_bf16;
	o.round_bf16_copy = kern_cuda_round_bf16_copy;
	o.gemm_bf = cuda_gemm_bf;
	o.gemm_bf16 = cuda_gemm_bf16;
	o.ce_max_b16 = kern_cuda_ce_max_b16;
	o.ce_sumexp_b16 = kern_cuda_ce_sumexp_b16;
	o.ce_target_b16 = kern_cuda_ce_target_b16;
	o.ce_bwd_b16 = kern_cuda_ce_bwd_b16;
	o.embed_fwd_b16 = kern_cuda_embed_fwd_b16;
	o.swiglu_fwd_b16 = kern_cuda_swiglu_fwd_b16;
	o.swiglu_bwd_b16 = kern_cuda_swiglu_bwd_b16;
	o.attn_fwd_bf = cuda_attn_fwd_bf;
	o.attn_bwd_bf = cuda_attn_bwd_bf;
	o.bias_add = kern_cuda_bias_add;
	o.bias_grad = kern_cuda_bias_grad;
	o.qkv_split = kern_cuda_qkv_split;
	o.qkv_merge = kern_cuda_qkv_merge;
	o.qkv_rope_bf = kern_cuda_qkv_rope_bf;
	o.qkv_merge_rope_bf = kern_cuda_qkv_merge_rope_bf;
	o.swiglu_fwd = kern_cuda_swiglu_fwd;
	o.swiglu_bwd = kern_cuda_swiglu_bwd;
	o.rope = kern_cuda_rope;
	o.attn_fwd = kern_cuda_attn_fwd;
	o.attn_merge = kern_cuda_attn_merge;
	o.attn_bwd = kern_cuda_attn_bwd;
	o.prof_start = kern_cuda_prof_start;
	o.mark = kern_cuda_prof_mark;
	o.prof_read = kern_cuda_prof_read;
	o.prof_ops = kern_cuda_prof_ops;
	return o;
}

extern "C" const struct kern_ops kern_cuda_ops = make_ops();
