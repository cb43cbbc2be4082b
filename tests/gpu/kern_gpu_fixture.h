/*
 * kern_gpu_fixture: what the CUDA kernels' test (tests/gpu/test_kernels_gpu.c
 * with tests/gpu/test_kernels_llm_gpu.c, one binary) shares: the two
 * contexts, random data, device copies and their free, the normwise
 * relative error, the bitwise compare of two device arrays and the
 * one-line verdict per kernel (test_kernels_gpu.c's top says how
 * kernels are judged).
 */
#ifndef GTPLAN_TEST_KERN_GPU_FIXTURE_H
#define GTPLAN_TEST_KERN_GPU_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"

#define TOL_ELEM 1e-5
#define TOL_RED 1e-4

/* Defined by test_kernels_gpu.c: the CPU and CUDA contexts, the verdicts
 * so far and the random state. */
extern struct kern_ctx C, G;
extern int n_pass, n_fail;
extern unsigned seed;

/* tests/gpu/test_kernels_llm_gpu.c: bias, SwiGLU, RoPE, attention. */
void test_llm_kernels(void);
/* tests/gpu/test_kernels_fast_gpu.c: the bf16 math mode (its attention in
 * tests/gpu/test_kernels_fast_attn_gpu.c, run by it). */
void test_fast_kernels(void);
/* tests/gpu/test_kernels_b16_gpu.c: the tensors bf16 runs hold in bf16 alone. */
void test_b16_kernels(void);
/* tests/gpu/test_kernels_qkv_gpu.c: linear_qkv's columns fused with
 * RoPE and the bf16 copies (run by test_fast_kernels). */
void test_qkv_kernels(void);
/* tests/gpu/test_kernels_mem_gpu.c: the vector and scalar paths of the
 * norms and the cross-entropy. */
void test_mem_kernels(void);
/* tests/gpu/test_kernels_attnw_gpu.c: attention's backward overwriting
 * its gradients (kern_attn's overwrite) on every backward path. */
void test_attnw_kernels(void);

static inline void *xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr, "test_kernels_gpu: out of host memory\n");
		exit(2);
	}
	return p;
}

/* Values in [-scale, scale). */
static inline float *rnd(long long n, float scale)
{
	float *v = xmalloc((size_t)n * sizeof(float));

	for (long long i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		v[i] = scale * ((float)(seed >> 8) / (float)(1u << 24) * 2.0f -
				1.0f);
	}
	return v;
}

static inline int32_t *rnd_ids(long long n, int32_t lo, int32_t hi)
{
	int32_t *v = xmalloc((size_t)n * sizeof(int32_t));

	for (long long i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		v[i] = lo + (int32_t)((seed >> 8) % (unsigned)(hi - lo));
	}
	return v;
}

static inline float *dup(const float *v, long long n)
{
	float *d = xmalloc((size_t)n * sizeof(float));

	memcpy(d, v, (size_t)n * sizeof(float));
	return d;
}

/* A device copy of n bytes of host memory; aborts the run on failure,
 * since every later check would fail with it. */
static inline void *up(const void *h, size_t n)
{
	void *d = NULL;
	int rc = kern_alloc(&G, n, &d);

	if (!rc)
		rc = kern_upload(&G, d, h, n);
	if (rc) {
		fprintf(stderr, "test_kernels_gpu: upload: %s\n",
			kern_error_text(rc));
		exit(1);
	}
	return d;
}

static inline int down(void *h, const void *d, size_t n)
{
	int rc = kern_sync(&G);

	return rc ? rc : kern_download(&G, h, d, n);
}

/* As relerr below, but against a given scale: for outputs that are a
 * difference of larger terms, where max|cpu| says nothing of the rounding. */
static inline double relerr_to(const float *gpu, const float *cpu,
				long long n, double den)
{
	double num = 0;

	for (long long i = 0; i < n; i++) {
		double d = fabs((double)gpu[i] - (double)cpu[i]);

		if (!(d <= num))
			num = isnan(d) ? INFINITY : d;
	}
	return den > 0 ? num / den : num;
}

static inline double relerr(const float *gpu, const float *cpu, long long n)
{
	double num = 0, den = 0;

	for (long long i = 0; i < n; i++) {
		double d = fabs((double)gpu[i] - (double)cpu[i]);

		if (!(d <= num)) /* NaN counts as failure */
			num = isnan(d) ? INFINITY : d;
		if (fabs((double)cpu[i]) > den)
			den = fabs((double)cpu[i]);
	}
	return den > 0 ? num / den : num;
}

/* One kernel's verdict over all its sizes. rc: the first error seen. */
struct verdict {
	double err;
	int rc;
};

static inline void see(struct verdict *v, double e)
{
	if (!(e <= v->err))
		v->err = isnan(e) ? INFINITY : e;
}

static inline void see_rc(struct verdict *v, int rc)
{
	if (rc && !v->rc)
		v->rc = rc;
}

/* 0 when the n bytes at device pointers a and b are the same bits,
 * INFINITY else (see() it into a verdict of tolerance 0). */
static inline double same_bits(struct verdict *v, const void *a,
			       const void *b, size_t n)
{
	void *x = xmalloc(n), *y = xmalloc(n);
	double r;

	see_rc(v, down(x, a, n));
	see_rc(v, down(y, b, n));
	r = memcmp(x, y, n) ? INFINITY : 0;
	free(x);
	free(y);
	return r;
}

/* Frees G's device memory. */
static inline void drop(void *d)
{
	kern_free(&G, d);
}

static inline void report(const char *name, const struct verdict *v,
			  double tol)
{
	int ok = !v->rc && v->err <= tol;

	if (v->rc)
		printf("%-12s error: %s  FAIL\n", name, kern_error_text(v->rc));
	else
		printf("%-12s max_rel %.3e  tol %.0e  %s\n", name, v->err, tol,
		       ok ? "PASS" : "FAIL");
	fflush(stdout);
	ok ? n_pass++ : n_fail++;
}

#endif
