/*
 * kern_fast_gpu_fixture: what the bf16 math mode's test (tests/gpu/
 * test_kernels_fast_gpu.c: the GEMMs, Adam, the fused norms, the qkv
 * split; tests/gpu/test_kernels_fast_attn_gpu.c: attention) shares:
 * random data that hold bf16 values, as the runtime's inputs do, and
 * the check that bf16 copies hold the bits of their floats.
 */
#ifndef GTPLAN_TEST_KERN_FAST_GPU_FIXTURE_H
#define GTPLAN_TEST_KERN_FAST_GPU_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_gpu_fixture.h"

/* tests/gpu/test_kernels_fast_attn_gpu.c: attention in the bf16 mode, run
 * by test_fast_kernels after the rest, in the mode it set; math_rc is
 * that kern_set_math's status, judged with attn_bf16. */
void test_fast_attn_kernels(int math_rc);

/* Rounds to the nearest bf16 value, ties to even (finite inputs). */
static inline void round_bf16(float *x, long long n)
{
	for (long long i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &x[i], 4);
		u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
		memcpy(&x[i], &u, 4);
	}
}

/* rnd's values rounded to bf16. */
static inline float *rnd16(long long n, float scale)
{
	float *v = rnd(n, scale);

	round_bf16(v, n);
	return v;
}

/* 0 when the n bf16 bits at device h are those of the n floats at device
 * y (each float a bf16 value). */
static inline double bits_of(struct verdict *v, const float *y,
			     const uint16_t *h, long long n)
{
	float *x = xmalloc((size_t)n * 4);
	uint16_t *b = xmalloc((size_t)n * 2), *w = xmalloc((size_t)n * 2);
	double r;

	see_rc(v, down(x, y, (size_t)n * 4));
	see_rc(v, down(b, h, (size_t)n * 2));
	see_rc(v, kern_to_bf16(&C, n, x, w));
	r = memcmp(b, w, (size_t)n * 2) ? INFINITY : 0;
	free(x);
	free(b);
	free(w);
	return r;
}

#endif
