/*
 * flash_common.cuh: what kern_flash.cu (forward, the public entry points)
 * and kern_flash_bwd.cu (backward) share: the launch parameters, the mask
 * classification of a pair of tiles, argument checks and error reporting.
 */
#ifndef GTPLAN_FLASH_COMMON_CUH
#define GTPLAN_FLASH_COMMON_CUH

#include <cuda_runtime.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "flash_mma.cuh"

extern "C" {
#include "kern_flash.h"
}

#define FL_LOG2E 1.4426950408889634f
#define FL_LN2 0.6931471805599453f

enum { FL_SKIP, FL_PART, FL_FULL };

struct fl_params {
	const fl_bf16 *q, *k, *v, *o, *dout;
	fl_bf16 *out;
	const float *lse_in;
	float *lse, *dsum, *dq, *dk, *dv;
	const int32_t *qpos, *kpos;
	int batch, sq, sk, nh, nkv;
	float scale, scale_log2;
};

static inline int fl_cuda_fail(cudaError_t e, const char *what, const char *file,
			int line)
{
	fprintf(stderr, "kern_flash: %s:%d: %s: %s\n", file, line, what,
		cudaGetErrorString(e));
	return e == cudaErrorMemoryAllocation ? KERN_ENOMEM : KERN_EDEVICE;
}

#define FL_CHECK(cmd)                                                      \
	do {                                                               \
		cudaError_t e_ = (cmd);                                    \
		if (e_ != cudaSuccess)                                     \
			return fl_cuda_fail(e_, #cmd, __FILE__, __LINE__); \
	} while (0)

static __device__ __forceinline__ int fl_pos(const int32_t *pos, int i)
{
	return pos ? pos[i] : i;
}

/* q side [qmin, qmax] (qall: no row cut), key side likewise. */
static __device__ __forceinline__ int fl_class(int qmin, int qmax, int qall,
					       int kmin, int kmax, int kall)
{
	if (kmin > qmax)
		return FL_SKIP;
	return qall && kall && kmax <= qmin ? FL_FULL : FL_PART;
}


static inline int fl_check(const struct kern_attn *a, const char *who)
{
	const char *why = NULL;

	if (!a)
		why = "no shape";
	else if (a->batch < 1 || a->sq < 0 || a->sk < 0 || a->nh < 1 ||
		 a->nkv < 1 || a->nh % a->nkv)
		why = "batch, nh, nkv must be >= 1, sq, sk >= 0, nh a multiple of nkv";
	else if (a->hd != 64 && a->hd != 128)
		why = "hd must be 64 or 128";
	else if (a->batch > 65535 || a->nh > 65535 || a->sq > INT_MAX / 2 ||
		 a->sk > INT_MAX / 2 ||
		 a->batch * a->sq * a->nh > LLONG_MAX / 256 ||
		 a->batch * a->sk * a->nkv > LLONG_MAX / 256)
		why = "shape too large";
	else if (!isfinite(a->scale))
		why = "scale must be finite";
	if (!why)
		return 0;
	fprintf(stderr, "kern_flash: %s: %s\n", who, why);
	return KERN_EINVAL;
}

static inline fl_params fl_make(const struct kern_attn *a)
{
	fl_params p = {};

	p.batch = (int)a->batch;
	p.sq = (int)a->sq;
	p.sk = (int)a->sk;
	p.nh = (int)a->nh;
	p.nkv = (int)a->nkv;
	p.scale = a->scale;
	p.scale_log2 = a->scale * FL_LOG2E;
	return p;
}

/* kern_flash_bwd.cu: dsum, then the backward kernel for head dim hd. */
int fl_bwd_run(const fl_params &p, int hd, cudaStream_t st);

#endif
