/*
 * norm_rows.cuh: what kern_cuda_norm.cu (the RMSNorm forward) and
 * kern_cuda_norm_bwd.cu (its backward) share: the register path's plan
 * (norm_plan: threads a row, float4s a thread) and its element mapping
 * with 128-bit or scalar accesses (ELEM, ld4, st4, bf4), so that both
 * directions lay a row out alike (kern_cuda_norm.cu's top comment).
 */
#ifndef GTPLAN_NORM_ROWS_CUH
#define GTPLAN_NORM_ROWS_CUH

#include <cuda_runtime.h>

#include <limits.h>
#include <stdint.h>

#include "kern_cuda.h"

#define NORM_THREADS 256 /* threads a row, at most */
#define NORM_MAX_NV 8 /* float4s a thread holds, at most */
#define NORM_MAX_H (4LL * NORM_THREADS * NORM_MAX_NV)

/* ---- float4 access, with the scalar fallback ---------------------------- */

/* The first element of thread t's float4 j. */
#define ELEM(j) (((j) * (int)blockDim.x + (int)threadIdx.x) * 4)

/* p[e .. e+3], zeros past h. VEC: h % 4 == 0 and p 16-byte aligned. */
template <int VEC>
__device__ __forceinline__ static float4 ld4(const float *p, int e, int h)
{
	float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

	if (VEC) {
		if (e < h)
			v = *(const float4 *)(p + e);
		return v;
	}
	if (e < h)
		v.x = p[e];
	if (e + 1 < h)
		v.y = p[e + 1];
	if (e + 2 < h)
		v.z = p[e + 2];
	if (e + 3 < h)
		v.w = p[e + 3];
	return v;
}

template <int VEC>
__device__ __forceinline__ static void st4(float *p, int e, int h, float4 v)
{
	if (VEC) {
		if (e < h)
			*(float4 *)(p + e) = v;
		return;
	}
	if (e < h)
		p[e] = v.x;
	if (e + 1 < h)
		p[e + 1] = v.y;
	if (e + 2 < h)
		p[e + 2] = v.z;
	if (e + 3 < h)
		p[e + 3] = v.w;
}

/* *v rounded to bf16 (bf16_keep), its bits stored at p[e .. e+3]. */
template <int VEC>
__device__ __forceinline__ static void bf4(uint16_t *p, int e, int h,
					   float4 *v)
{
	uint2 b = bf16_pack4(*v); /* bf16_bits' bits, by the hardware */
	unsigned int b0 = b.x & 0xffffu, b1 = b.x >> 16;
	unsigned int b2 = b.y & 0xffffu, b3 = b.y >> 16;

	*v = make_float4(__uint_as_float(b0 << 16), __uint_as_float(b1 << 16),
			 __uint_as_float(b2 << 16), __uint_as_float(b3 << 16));
	if (VEC) {
		if (e < h)
			*(uint2 *)(p + e) = b;
		return;
	}
	if (e < h)
		p[e] = (uint16_t)b0;
	if (e + 1 < h)
		p[e + 1] = (uint16_t)b1;
	if (e + 2 < h)
		p[e + 2] = (uint16_t)b2;
	if (e + 3 < h)
		p[e + 3] = (uint16_t)b3;
}

/* Threads a row (a multiple of 32, at most NORM_THREADS) and float4s a
 * thread (1, 2, 4 or 8: a power of two, the extra ones past h hold
 * zeros, whose squares add nothing) for rows of h on the register path;
 * 0 when it does not take the shape. */
static int norm_plan(long long rows, long long h, int *tpb)
{
	long long n4 = (h + 3) / 4, nv;

	if (h > NORM_MAX_H || rows > INT_MAX)
		return 0;
	*tpb = n4 >= NORM_THREADS ? NORM_THREADS : (int)((n4 + 31) / 32 * 32);
	nv = (n4 + *tpb - 1) / *tpb;
	return nv <= 1 ? 1 : nv <= 2 ? 2 : nv <= 4 ? 4 : 8;
}

#endif
