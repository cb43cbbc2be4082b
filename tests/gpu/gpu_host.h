/*
 * gpu_host.h: host-side helpers shared by the bf16 kernel tests and the
 * kernel benchmark (tests/gpu/test_flash_gpu.c, test_gemm_lt_gpu.c,
 * bench_kernels_gpu.c): bf16 rounding, a seeded generator, device buffers
 * through kern.h's CUDA context, and exit codes. Header-only: each program
 * is one translation unit.
 */
#ifndef GTPLAN_GPU_HOST_H
#define GTPLAN_GPU_HOST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kern.h"

#define GH_EXIT_SKIP 77 /* the automake "skipped" code: no GPU */

static unsigned gh_seed = 12345u;

static inline void *gh_malloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr, "out of host memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

/* Nearest bf16, ties to even (kern.h's to_bf16); NaN stays NaN. */
static inline uint16_t gh_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0x7fc0;
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static inline float gh_from_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Uniform in [-1, 1). */
static inline float gh_uniform(void)
{
	gh_seed = gh_seed * 1664525u + 1013904223u;
	return (float)(gh_seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
}

/* n bf16 values, uniform in [-scale, scale) then rounded; f (optional)
 * receives the same values as floats. */
static inline uint16_t *gh_rand_bf16(long long n, float scale, float **f)
{
	uint16_t *h = gh_malloc((size_t)n * 2);

	if (f)
		*f = gh_malloc((size_t)n * sizeof(float));
	for (long long i = 0; i < n; i++) {
		h[i] = gh_to_bf16(scale * gh_uniform());
		if (f)
			(*f)[i] = gh_from_bf16(h[i]);
	}
	return h;
}

static inline void gh_die(int rc, const char *what)
{
	fprintf(stderr, "%s: %s\n", what, kern_error_text(rc));
	exit(2);
}

/* A device buffer holding a copy of host memory (or zeros if src NULL). */
static inline void *gh_dev(struct kern_ctx *g, const void *src, size_t bytes)
{
	void *d = NULL;
	int rc = kern_alloc(g, bytes ? bytes : 16, &d);

	if (!rc && src)
		rc = kern_upload(g, d, src, bytes);
	if (rc)
		gh_die(rc, "device buffer");
	return d;
}

static inline void gh_down(struct kern_ctx *g, void *dst, const void *src,
		    size_t bytes)
{
	int rc = kern_sync(g);

	if (!rc)
		rc = kern_download(g, dst, src, bytes);
	if (rc)
		gh_die(rc, "download");
}

/* CUDA context or exit 77 when there is no GPU. */
static inline void gh_init(struct kern_ctx *g)
{
	int rc = kern_init(g, KERN_CUDA, 0);

	if (rc == KERN_ENODEV) {
		printf("SKIP: no CUDA device\n");
		exit(GH_EXIT_SKIP);
	}
	if (rc)
		gh_die(rc, "kern_init");
}

static inline double gh_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ||x - y|| / ||y|| in double (Frobenius); NaN if either holds a NaN. */
static inline double gh_relerr(const double *x, const double *y, long long n)
{
	double num = 0.0, den = 0.0;

	for (long long i = 0; i < n; i++) {
		double d = x[i] - y[i];

		num += d * d;
		den += y[i] * y[i];
	}
	return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

#endif
