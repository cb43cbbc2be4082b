/*
 * kern_cuda_ce: the CUDA twin's vocab-parallel cross-entropy pieces
 * (kern.h: kern_ce_max, kern_ce_sumexp, kern_ce_target, kern_ce_loss,
 * kern_ce_bwd), queued on the context's stream; arguments checked by
 * kernels/kern.c (bf16 runs' pieces on bf16 logits are
 * kernels/kern_cuda_b16.cu's).
 *
 * The passes over the logits (max, sum of exp, gradient) read them as
 * float4s, CE_UNROLL or CE_BWD_ITEMS of them in flight a thread, where
 * cols is a multiple of 4 and the pointers 16-byte aligned; else one
 * float a thread as before. The gradient's value at
 * each logit is the same expression either way (the same bits); max is
 * exact in any order; sum of exp is a per-thread sum then a block tree,
 * the same order on every run for a given shape (it differs from the CPU
 * twin's left-to-right sum by rounding).
 */
#include <cuda_runtime.h>

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "kern_cuda.h"

#define CE_THREADS 256
#define CE_UNROLL 4 /* float4s in flight a thread: max, sum of exp */
#define CE_BWD_ITEMS 4 /* float4s a thread: gradient */
#define CE_BWD_GRID (1LL << 24) /* grid cap of the gradient (grid stride) */

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return (cudaStream_t)kern_stream(k);
}

/* The 4-wide kernels take rows of cols % 4 == 0 floats (each row then
 * 16-byte aligned when the array is), cols within an int. */
static int ce_vec(long long cols, const void *a, const void *b)
{
	return cols % 4 == 0 && cols <= INT_MAX && (uintptr_t)a % 16 == 0 &&
	       (uintptr_t)b % 16 == 0;
}

/* ---- max and sum of exp: one row a block ------------------------------- */

__device__ __forceinline__ static float max4(float4 v)
{
	return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
}

template <int VEC>
__global__ static void __launch_bounds__(CE_THREADS)
ce_max_k(long long rows, long long cols, long long nvalid,
	 const float *logits, float *max)
{
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *l = logits + r * cols;
		float m = -FLT_MAX;

		if (VEC) {
			const float4 *l4 = (const float4 *)l;
			int n4 = (int)(nvalid / 4), t = threadIdx.x;

			for (int q = t; q < n4; q += CE_UNROLL * CE_THREADS) {
				float4 v[CE_UNROLL];

#pragma unroll
				for (int u = 0; u < CE_UNROLL; u++) {
					int i = q + u * CE_THREADS;

					v[u] = i < n4 ? l4[i] :
					       make_float4(-FLT_MAX, -FLT_MAX,
							   -FLT_MAX, -FLT_MAX);
				}
#pragma unroll
				for (int u = 0; u < CE_UNROLL; u++)
					m = fmaxf(m, max4(v[u]));
			}
			for (int j = 4 * n4 + t; j < nvalid; j += CE_THREADS)
				m = fmaxf(m, l[j]);
		} else {
			for (long long j = threadIdx.x; j < nvalid;
			     j += blockDim.x)
				m = fmaxf(m, l[j]);
		}
		m = block_max(m);
		if (threadIdx.x == 0)
			max[r] = m;
	}
}

__device__ __forceinline__ static float sumexp4(float4 v, float m, float s)
{
	s += expf(v.x - m);
	s += expf(v.y - m);
	s += expf(v.z - m);
	return s + expf(v.w - m);
}

template <int VEC>
__global__ static void __launch_bounds__(CE_THREADS)
ce_sumexp_k(long long rows, long long cols, long long nvalid,
	    const float *logits, const float *max, float *sum)
{
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *l = logits + r * cols;
		float s = 0.0f, mr = max[r];

		if (VEC) {
			const float4 *l4 = (const float4 *)l;
			int n4 = (int)(nvalid / 4), t = threadIdx.x;

			for (int q = t; q < n4; q += CE_UNROLL * CE_THREADS) {
				float4 v[CE_UNROLL];

#pragma unroll
				for (int u = 0; u < CE_UNROLL; u++) {
					int i = q + u * CE_THREADS;

					if (i < n4)
						v[u] = l4[i];
				}
#pragma unroll
				for (int u = 0; u < CE_UNROLL; u++)
					if (q + u * CE_THREADS < n4)
						s = sumexp4(v[u], mr, s);
			}
			for (int j = 4 * n4 + t; j < nvalid; j += CE_THREADS)
				s += expf(l[j] - mr);
		} else {
			for (long long j = threadIdx.x; j < nvalid;
			     j += blockDim.x)
				s += expf(l[j] - mr);
		}
		s = block_sum(s);
		if (threadIdx.x == 0)
			sum[r] = s;
	}
}

int kern_cuda_ce_max(struct kern_ctx *k, long long rows, long long cols,
		     long long nvalid, const float *logits, float *max)
{
	if (ce_vec(cols, logits, logits))
		ce_max_k<1><<<rows_grid(rows), CE_THREADS, 0, stream_of(k)>>>(
			rows, cols, nvalid, logits, max);
	else
		ce_max_k<0><<<rows_grid(rows), CE_THREADS, 0, stream_of(k)>>>(
			rows, cols, nvalid, logits, max);
	LAUNCHCHECK(ce_max_k);
	return 0;
}

int kern_cuda_ce_sumexp(struct kern_ctx *k, long long rows, long long cols,
			long long nvalid, const float *logits,
			const float *max, float *sum)
{
	if (ce_vec(cols, logits, logits))
		ce_sumexp_k<1><<<rows_grid(rows), CE_THREADS, 0,
				 stream_of(k)>>>(rows, cols, nvalid, logits,
						 max, sum);
	else
		ce_sumexp_k<0><<<rows_grid(rows), CE_THREADS, 0,
				 stream_of(k)>>>(rows, cols, nvalid, logits,
						 max, sum);
	LAUNCHCHECK(ce_sumexp_k);
	return 0;
}

/* ---- target logit and loss: one thread a row ---------------------------- */

__global__ static void ce_target_k(long long rows, long long cols,
				   long long first, const int32_t *targets,
				   const float *logits, float *target)
{
	GRID_STRIDE(r, rows) {
		long long j = (long long)targets[r] - first;

		target[r] = j >= 0 && j < cols ? logits[r * cols + j] : 0.0f;
	}
}

__global__ static void ce_loss_k(long long rows, const float *max,
				 const float *sum, const float *target,
				 float *loss)
{
	GRID_STRIDE(r, rows)
		loss[r] = logf(sum[r]) + max[r] - target[r];
}

int kern_cuda_ce_target(struct kern_ctx *k, long long rows, long long cols,
			long long first, const int32_t *targets,
			const float *logits, float *target)
{
	ce_target_k<<<blocks_for(rows), KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		rows, cols, first, targets, logits, target);
	LAUNCHCHECK(ce_target_k);
	return 0;
}

int kern_cuda_ce_loss(struct kern_ctx *k, long long rows, const float *max,
		      const float *sum, const float *target, float *loss)
{
	ce_loss_k<<<blocks_for(rows), KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		rows, max, sum, target, loss);
	LAUNCHCHECK(ce_loss_k);
	return 0;
}

/* ---- the gradient ------------------------------------------------------- */

/* One thread a logit (any shape); each reads only its own logit, so
 * dlogits may alias logits. */
__global__ static void ce_bwd_k(long long rows, long long cols,
				long long nvalid, long long first,
				const int32_t *targets, const float *max,
				const float *sum, float scale,
				const float *logits, float *dlogits)
{
	GRID_STRIDE(idx, rows * cols) {
		long long r = idx / cols, j = idx - r * cols;

		dlogits[idx] = ce_grad(logits[idx], j, nvalid,
				       (long long)targets[r] - first, max[r],
				       1.0f / sum[r], scale);
	}
}

/* The same, a block taking CE_BWD_ITEMS float4s a thread of one row (cb
 * blocks a row): the row's statistics read once a block, no division a
 * logit. Each thread loads all its logits before it stores any: dlogits
 * may alias logits. */
__global__ static void __launch_bounds__(CE_THREADS)
ce_bwd4_k(long long rows, int cols, long long nvalid, long long first,
	  const int32_t *targets, const float *max, const float *sum,
	  float scale, const float *logits, float *dlogits, int cb)
{
	int n4 = cols / 4;

	for (long long b = blockIdx.x; b < rows * cb; b += gridDim.x) {
		long long r = b / cb, t = (long long)targets[r] - first;
		int q0 = (int)(b - r * cb) * CE_BWD_ITEMS * CE_THREADS +
			 (int)threadIdx.x;
		size_t o = (size_t)r * (size_t)cols;
		const float4 *l4 = (const float4 *)(logits + o);
		float4 *d4 = (float4 *)(dlogits + o), v[CE_BWD_ITEMS];
		float mr = max[r], inv = 1.0f / sum[r];

#pragma unroll
		for (int u = 0; u < CE_BWD_ITEMS; u++)
			if (q0 + u * CE_THREADS < n4)
				v[u] = l4[q0 + u * CE_THREADS];
#pragma unroll
		for (int u = 0; u < CE_BWD_ITEMS; u++) {
			int q = q0 + u * CE_THREADS;
			long long j = 4LL * q;

			if (q >= n4)
				continue;
			d4[q] = make_float4(
				ce_grad(v[u].x, j, nvalid, t, mr, inv, scale),
				ce_grad(v[u].y, j + 1, nvalid, t, mr, inv, scale),
				ce_grad(v[u].z, j + 2, nvalid, t, mr, inv, scale),
				ce_grad(v[u].w, j + 3, nvalid, t, mr, inv, scale));
		}
	}
}

int kern_cuda_ce_bwd(struct kern_ctx *k, long long rows, long long cols,
		     long long nvalid, long long first, const int32_t *targets,
		     const float *max, const float *sum, float scale,
		     const float *logits, float *dlogits)
{
	long long span = (long long)CE_BWD_ITEMS * CE_THREADS, cb, n;

	if (!ce_vec(cols, logits, dlogits) || cols == 0) {
		ce_bwd_k<<<blocks_for(rows * cols), KERN_CUDA_THREADS, 0,
			   stream_of(k)>>>(rows, cols, nvalid, first, targets,
					   max, sum, scale, logits, dlogits);
		LAUNCHCHECK(ce_bwd_k);
		return 0;
	}
	cb = (cols / 4 + span - 1) / span;
	n = rows * cb < CE_BWD_GRID ? rows * cb : CE_BWD_GRID;
	ce_bwd4_k<<<(unsigned)n, CE_THREADS, 0, stream_of(k)>>>(
		rows, (int)cols, nvalid, first, targets, max, sum, scale,
		logits, dlogits, (int)cb);
	LAUNCHCHECK(ce_bwd4_k);
	return 0;
}
