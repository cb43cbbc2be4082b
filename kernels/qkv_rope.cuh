/*
 * qkv_rope.cuh: what kern_cuda_qkv.cu (kern_rope's rope_k) and
 * kern_cuda_qkv_rope.cu (the fused passes and their table) share: a
 * pair's cos and sin and the turn by them, so that the fused passes hold
 * kern_rope's very values (kern.h: bit for bit the unfused sequence,
 * up to ptxas's contraction: kern_cuda_qkv.cu's top comment).
 */
#ifndef GTPLAN_QKV_ROPE_CUH
#define GTPLAN_QKV_ROPE_CUH

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>

/* Pair i's cos and sin for a row at position p: the angle in double, then
 * its cos and sin rounded to fp32 (kern.h); the sin negated for the
 * inverse. */
__device__ __forceinline__ static void rope_cs(int32_t p, long long i,
					       long long hd, double theta,
					       int inverse, float *c, float *s)
{
	double a = (double)p * pow(theta, -2.0 * (double)i / (double)hd);

	*c = (float)cos(a);
	*s = (float)sin(a);
	if (inverse)
		*s = -*s;
}

/* The pair (x1, x2) turned by the angle whose cos and sin are c, s:
 * y1 = x1 c - x2 s, y2 = x2 c + x1 s. nvcc emits y2 as fma(s, x1, x2 c)
 * in rope_k and as fma(x2, c, x1 s) once inlined into qkv_rope_k, so that
 * form is written out; y1's multiplies and subtraction are left to ptxas
 * in both (the same PTX). */
__device__ __forceinline__ static void rope_turn(float x1, float x2, float c,
						 float s, float *y1, float *y2)
{
	*y1 = x1 * c - x2 * s;
	*y2 = __fmaf_rn(s, x1, x2 * c);
}

#endif
