/*
 * kern_cuda_qkv: linear_qkv's columns on their way to attention and back,
 * the CUDA twin (kern.h), one pass an op: Megatron's fused qkv columns
 * split and merged (kern_qkv_split/merge) and rotate-half RoPE
 * (kern_rope), queued on the context's stream (kern_stream). Both fused
 * with the bf16 rounding of mixed-precision runs in one pass each way
 * (kern_qkv_rope_bf, kern_qkv_merge_rope_bf) live in
 * kernels/kern_cuda_qkv_rope.cu; the two share RoPE's cos, sin and turn
 * (kernels/qkv_rope.cuh).
 *
 * RoPE's angle, cos and sin are computed in double and rounded to fp32 as
 * on the CPU (kernels/kern_cpu.c rope_cs; the device's pow, cos and sin
 * may differ from the C library's by an ulp). rope_k computes them per
 * (row, pair) and turns every head of the row. The fused kernels turn
 * each head with the same rope_cs values and rope_turn. ptxas may
 * contract a multiply and an add into an FMA differently in each kernel
 * (the Makefile keeps nvcc's default --fmad=true), so a fused value may
 * differ from kern_rope's in its last bit
 * (tests/gpu/test_kernels_qkv_gpu.c).
 */
#include <cuda_runtime.h>

#include "kern_cuda.h"
#include "qkv_rope.cuh"

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return (cudaStream_t)kern_stream(k);
}

/* ---- the fused qkv columns ---------------------------------------------- */

/* One thread a packed value: row r, group j, column c of the group's
 * nq + 2 nk (kern.h); merge copies the other way. I: the index type (32
 * bits where the sizes allow: the divisions are most of the work). */
template <typename I>
__global__ static void qkv_move_k(I n, I gw, I nq, I nk, float *packed,
				  float *q, float *kk, float *v, int merge)
{
	for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n;
	     i += (I)gridDim.x * blockDim.x) {
		I rg = i / gw, c = i - rg * gw;
		float *x = c < nq ? q + rg * nq + c :
			   c < nq + nk ? kk + rg * nk + c - nq :
			   v + rg * nk + c - nq - nk;

		if (merge)
			packed[i] = *x;
		else
			*x = packed[i];
	}
}

static int qkv_move(struct kern_ctx *k, long long rows, long long groups,
		    long long nq, long long nk, float *packed, float *q,
		    float *kk, float *v, int merge)
{
	long long gw = nq + 2 * nk, n = rows * groups * gw;

	if (n < (1LL << 31))
		qkv_move_k<unsigned><<<blocks_for(n), KERN_CUDA_THREADS, 0,
				       stream_of(k)>>>(
			(unsigned)n, (unsigned)gw, (unsigned)nq, (unsigned)nk,
			packed, q, kk, v, merge);
	else
		qkv_move_k<long long><<<blocks_for(n), KERN_CUDA_THREADS, 0,
					stream_of(k)>>>(
			n, gw, nq, nk, packed, q, kk, v, merge);
	LAUNCHCHECK(qkv_move_k);
	return 0;
}

int kern_cuda_qkv_split(struct kern_ctx *k, long long rows, long long groups,
			long long nq, long long nk, const float *packed,
			float *q, float *kk, float *v)
{
	return qkv_move(k, rows, groups, nq, nk, (float *)packed, q, kk, v, 0);
}

int kern_cuda_qkv_merge(struct kern_ctx *k, long long rows, long long groups,
			long long nq, long long nk, const float *q,
			const float *kk, const float *v, float *packed)
{
	return qkv_move(k, rows, groups, nq, nk, packed, (float *)q,
			(float *)kk, (float *)v, 1);
}

/* ---- RoPE --------------------------------------------------------------- */

/* One thread per (row, pair i): the angle, cos and sin, then every head
 * of the row turned by it. */
__global__ static void rope_k(long long rows, long long heads, long long hd,
			      double theta, const int32_t *pos, int inverse,
			      float *x)
{
	long long half = hd / 2;

	GRID_STRIDE(idx, rows * half) {
		long long r = idx / half, i = idx - r * half;
		float c, s;

		rope_cs(pos[r], i, hd, theta, inverse, &c, &s);
		for (long long h = 0; h < heads; h++) {
			float *v = x + (r * heads + h) * hd;
			float x1 = v[i], x2 = v[i + half];

			rope_turn(x1, x2, c, s, &v[i], &v[i + half]);
		}
	}
}

int kern_cuda_rope(struct kern_ctx *k, long long rows, long long heads,
		   long long hd, double theta, const int32_t *pos, int inverse,
		   float *x)
{
	rope_k<<<blocks_for(rows * (hd / 2)), KERN_CUDA_THREADS, 0,
		 stream_of(k)>>>(rows, heads, hd, theta, pos, inverse, x);
	LAUNCHCHECK(rope_k);
	return 0;
}
