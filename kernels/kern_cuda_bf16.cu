/*
 * kern_cuda_bf16: the CUDA twin's bfloat16 conversions (kern.h's
 * kern_to_bf16, kern_from_bf16, kern_round_bf16), bit for bit as
 * kernels/kern_cpu.c's bf16_of: round to nearest even, NaN kept quiet;
 * and kern_zero. Queued on the context's stream; arguments checked by
 * kern.c.
 */
#include <cuda_runtime.h>

#include <stdint.h>

#include "kern_cuda.h"

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return (cudaStream_t)kern_stream(k);
}


__global__ static void to_bf16_k(long long n, const float *x, uint16_t *y)
{
	GRID_STRIDE(i, n)
		y[i] = bf16_bits(x[i]);
}

__global__ static void from_bf16_k(long long n, const uint16_t *x, float *y)
{
	GRID_STRIDE(i, n)
		y[i] = __uint_as_float((unsigned int)x[i] << 16);
}

__global__ static void round_bf16_k(long long n, float *x)
{
	GRID_STRIDE(i, n)
		x[i] = __uint_as_float((unsigned int)bf16_bits(x[i]) << 16);
}

/* The same four values a float4 (16-byte fp32 and 8-byte bf16 accesses),
 * for arrays whose pointers allow it: the scalar kernels above ran at
 * about half the H200's memory bandwidth. A thread takes BF_ITEMS float4s
 * a grid's width apart, all loaded before any is stored, so that more
 * bytes are in flight than one float4 a thread keeps (the H200 needs
 * about its bandwidth times its latency, some 3 MB, in flight). */
#define BF_ITEMS 2

/* i: a thread's first float4 of a round, w: the grid's width. */
#define GRID_ITEMS(i, w, n)                                               \
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x, \
		       w = (long long)gridDim.x * blockDim.x;              \
	     i < (n); i += BF_ITEMS * w)

__device__ __forceinline__ static float4 widen4(uint2 b)
{
	return make_float4(__uint_as_float(b.x << 16),
			   __uint_as_float(b.x & 0xffff0000u),
			   __uint_as_float(b.y << 16),
			   __uint_as_float(b.y & 0xffff0000u));
}

/* bf16_bits of each value, by the hardware's conversion (kern_cuda.h
 * bf16_pack4: the same bits, NaN included). */
__device__ __forceinline__ static uint2 bits4(float4 v)
{
	return bf16_pack4(v);
}

__global__ static void to_bf16_4k(long long n4, const float4 *x, uint2 *y)
{
	GRID_ITEMS(i, w, n4) {
		float4 v[BF_ITEMS];

#pragma unroll
		for (int u = 0; u < BF_ITEMS; u++)
			if (i + u * w < n4)
				v[u] = x[i + u * w];
#pragma unroll
		for (int u = 0; u < BF_ITEMS; u++)
			if (i + u * w < n4)
				y[i + u * w] = bits4(v[u]);
	}
}

__global__ static void from_bf16_4k(long long n4, const uint2 *x, float4 *y)
{
	GRID_ITEMS(i, w, n4) {
		uint2 v[BF_ITEMS];

#pragma unroll
		for (int u = 0; u < BF_ITEMS; u++)
			if (i + u * w < n4)
				v[u] = x[i + u * w];
#pragma unroll
		for (int u = 0; u < BF_ITEMS; u++)
			if (i + u * w < n4)
				y[i + u * w] = widen4(v[u]);
	}
}

__global__ static void round_bf16_4k(long long n4, float4 *x)
{
	GRID_ITEMS(i, w, n4) {
		float4 v[BF_ITEMS];

#pragma unroll
		for (int u = 0; u < BF_ITEMS; u++)
			if (i + u * w < n4)
				v[u] = x[i + u * w];
#pragma unroll
		for (int u = 0; u < BF_ITEMS; u++)
			if (i + u * w < n4)
				x[i + u * w] = widen4(bits4(v[u]));
	}
}

__global__ static void round_copy_k(long long n, float *x, uint16_t *y)
{
	GRID_STRIDE(i, n) {
		unsigned short b = bf16_bits(x[i]);

		y[i] = b;
		x[i] = __uint_as_float((unsigned int)b << 16);
	}
}

__global__ static void round_copy_4k(long long n4, float4 *x, uint2 *y)
{
	GRID_ITEMS(i, w, n4) {
		float4 v[BF_ITEMS];

#pragma unroll
		for (int u = 0; u < BF_ITEMS; u++)
			if (i + u * w < n4)
				v[u] = x[i + u * w];
#pragma unroll
		for (int u = 0; u < BF_ITEMS; u++) {
			uint2 b;

			if (i + u * w >= n4)
				continue;
			b = bits4(v[u]);
			y[i + u * w] = b;
			x[i + u * w] = widen4(b);
		}
	}
}

/* Blocks for n4 float4s, BF_ITEMS a thread. */
static unsigned blocks4(long long n4)
{
	return blocks_for((n4 + BF_ITEMS - 1) / BF_ITEMS);
}

/* The number of leading values the 4-wide kernels take: all but the
 * tail when the fp32 side is 16-byte and the bf16 side 8-byte aligned,
 * else none. */
static long long vec4_of(long long n, const void *f32, const void *b16)
{
	return (uintptr_t)f32 % 16 || (uintptr_t)b16 % 8 ? 0 : n / 4 * 4;
}

int kern_cuda_to_bf16(struct kern_ctx *k, long long n, const float *x,
		      uint16_t *y)
{
	long long v = vec4_of(n, x, y);

	if (v) {
		to_bf16_4k<<<blocks4(v / 4), KERN_CUDA_THREADS, 0,
			     stream_of(k)>>>(v / 4, (const float4 *)x,
					     (uint2 *)y);
		LAUNCHCHECK(to_bf16_4k);
	}
	if (n > v) {
		to_bf16_k<<<blocks_for(n - v), KERN_CUDA_THREADS, 0,
			    stream_of(k)>>>(n - v, x + v, y + v);
		LAUNCHCHECK(to_bf16_k);
	}
	return 0;
}

int kern_cuda_widen_bf16(cudaStream_t s, long long n, const uint16_t *x,
			 float *y)
{
	long long v = vec4_of(n, y, x);

	if (v) {
		from_bf16_4k<<<blocks4(v / 4), KERN_CUDA_THREADS, 0, s>>>(
			v / 4, (const uint2 *)x, (float4 *)y);
		LAUNCHCHECK(from_bf16_4k);
	}
	if (n > v) {
		from_bf16_k<<<blocks_for(n - v), KERN_CUDA_THREADS, 0, s>>>(
			n - v, x + v, y + v);
		LAUNCHCHECK(from_bf16_k);
	}
	return 0;
}

int kern_cuda_from_bf16(struct kern_ctx *k, long long n, const uint16_t *x,
			float *y)
{
	return kern_cuda_widen_bf16(stream_of(k), n, x, y);
}

int kern_cuda_round_bf16(struct kern_ctx *k, long long n, float *x)
{
	long long v = vec4_of(n, x, NULL);

	if (v) {
		round_bf16_4k<<<blocks4(v / 4), KERN_CUDA_THREADS, 0,
				stream_of(k)>>>(v / 4, (float4 *)x);
		LAUNCHCHECK(round_bf16_4k);
	}
	if (n > v) {
		round_bf16_k<<<blocks_for(n - v), KERN_CUDA_THREADS, 0,
			       stream_of(k)>>>(n - v, x + v);
		LAUNCHCHECK(round_bf16_k);
	}
	return 0;
}

int kern_cuda_round_bf16_copy(struct kern_ctx *k, long long n, float *x,
			      uint16_t *y)
{
	long long v = vec4_of(n, x, y);

	if (v) {
		round_copy_4k<<<blocks4(v / 4), KERN_CUDA_THREADS, 0,
				stream_of(k)>>>(v / 4, (float4 *)x,
						(uint2 *)y);
		LAUNCHCHECK(round_copy_4k);
	}
	if (n > v) {
		round_copy_k<<<blocks_for(n - v), KERN_CUDA_THREADS, 0,
			       stream_of(k)>>>(n - v, x + v, y + v);
		LAUNCHCHECK(round_copy_k);
	}
	return 0;
}

/* ---- kern_zero ---------------------------------------------------------- */

/* 16-byte stores, ZERO_ITEMS a thread a block's width apart: a buffer of
 * attention's gradients (8 MB at the 1B shape) in one wave of blocks.
 * On an H200 (bench_kernels_gpu mem) it ran as cudaMemsetAsync did: 1.70
 * and 2.45 TB/s on 8.4 and 16.8 MB (1.67, 2.39 before), 4.9 and 6.9 us,
 * so the second 8.4 MB took 2 us (4.4 TB/s) and ~3 us a call is fixed:
 * the launch, which neither shortens; 4.61 TB/s on 2.1 GB (4.54). */
#define ZERO_ITEMS 4

__global__ static void zero16_k(long long n16, uint4 *p)
{
	long long w = blockDim.x, i = blockIdx.x * w * ZERO_ITEMS + threadIdx.x;

#pragma unroll
	for (int u = 0; u < ZERO_ITEMS; u++)
		if (i + u * w < n16)
			p[i + u * w] = make_uint4(0, 0, 0, 0);
}

int kern_cuda_zero(struct kern_ctx *k, void *p, size_t bytes)
{
	long long n16 = (long long)(bytes / 16);
	long long span = (long long)KERN_CUDA_THREADS * ZERO_ITEMS;
	long long b = (n16 + span - 1) / span;

	if ((uintptr_t)p % 16 || bytes % 16 || b > 0x7fffffffLL) {
		CUDACHECK(cudaMemsetAsync(p, 0, bytes, stream_of(k)));
		return 0;
	}
	zero16_k<<<(unsigned)b, KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		n16, (uint4 *)p);
	LAUNCHCHECK(zero16_k);
	return 0;
}
