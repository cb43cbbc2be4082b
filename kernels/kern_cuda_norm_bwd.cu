/*
 * kern_cuda_norm_bwd: the CUDA twin's RMSNorm backward (kern.h:
 * kern_rmsnorm_bwd, kern_rmsnorm_bwd_add), queued on the context's
 * stream; arguments checked by kernels/kern.c. Rows of at least
 * 4 NORM_THREADS - 3 and at most NORM_MAX_H values take the register
 * path of the forward (kernels/kern_cuda_norm.cu's top comment, the
 * layout in kernels/norm_rows.cuh); other rows the two-pass kernels at
 * the end of this file.
 *
 * The backward computes dx and dg in one pass: a block takes a chunk of
 * consecutive rows (norm_bwd_parts: a count fixed by the shape), adds each
 * row's dy x rstd to per-column sums in registers and writes them as one
 * part; the parts are then added to dg in a fixed order, by the last
 * blocks of the same launch (norm_dg_tail) or by a second launch
 * (norm_dg_sum_k: norm_dg_spin says which). dy and x are read once
 * (before: once for dx, once more for dg). Results are the same on every
 * run for a given shape, whichever adds the parts; they differ from the
 * CPU twin's left-to-right sums only by rounding
 * (tests/gpu/test_kernels_gpu.c, tests/gpu/test_kernels_mem_gpu.c).
 */
#include <cuda_runtime.h>

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kern_cuda.h"
#include "norm_rows.cuh"

#define NORM_BWD_ROWS 8 /* rows a backward part, at least */
#define NORM_BWD_PARTS 1024 /* backward parts, at most */
#define DG_LANES 8 /* part sums a column in norm_dg_sum_k */
#define DG_COLS 8 /* columns a block of norm_dg_sum_k */
#define DG_TAIL_COLS (NORM_THREADS / DG_LANES) /* a pass, norm_dg_tail */
#define NORM_DG_SPIN_MAX 64 /* blocks that add the parts in one launch */
#define NORM_DG_SPIN_FLOATS 32768 /* parts' floats each adds, at most */
#define NORM_DG_SPIN_PASSES 4 /* passes of columns each makes, at most */

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return (cudaStream_t)kern_stream(k);
}

static struct cuda_impl *impl_of(struct kern_ctx *k)
{
	return (struct cuda_impl *)k->impl;
}

/* ---- backward ----------------------------------------------------------- */

struct norm_bwd {
	int rows, h, chunk;
	const float *x, *g, *rstd, *dy;
	float *dx, *part;
	uint16_t *dx16; /* set: dx's bf16 bits too (kern_rmsnorm_bwd_add_bf) */
	int spin; /* > 0: the last `spin` blocks add the parts to dg */
	float *dg;
	unsigned int *count; /* the context's counter, 0 between launches */
};

/* One element of dx: s (g dy - x c), its operations spelled out so that
 * no product is fused into a later add (kern_rmsnorm_bwd_add's dx + this
 * must be kern_rmsnorm_bwd's value plus dx, bit for bit: kern.h). */
__device__ __forceinline__ static float dx_of(float s, float g, float dy,
					      float x, float c)
{
	return __fmul_rn(s, __fmaf_rn(-x, c, __fmul_rn(g, dy)));
}

/* dg[i] += the sum of part[p, i] over the parts p, in norm_dg_sum_k's
 * order (lane w adds the parts p = w mod DG_LANES in order of p, then
 * the lanes' sums in order of w; here warp w is lane w): the same bits.
 * Each block counts itself in *count once its part is stored; those
 * holding the last `spin` counts wait for the rest, then share the
 * columns. Waiting blocks hold their SMs, yet at most spin - 1 wait
 * before the last count and norm_dg_spin keeps spin at most half the
 * SMs, so a block not yet counted always finds room (beside another
 * stream's few NCCL blocks too). One counter a context suffices: every
 * launch goes to the context's stream, none overlapping the next (no
 * programmatic dependent launch), and the last waiting block to count
 * a second time sets it back to 0 once no block of this launch reads it.
 * A part's stores reach L2 before its count (__threadfence, as the CUDA
 * samples' threadFenceReduction); the parts are read from L2 (__ldcg). */
__device__ __forceinline__ static void norm_dg_tail(int h, int spin,
						    const float *part,
						    float *dg,
						    unsigned int *count)
{
	__shared__ unsigned int ticket;
	__shared__ float lane[DG_LANES][DG_TAIL_COLS];
	unsigned int parts = gridDim.x, first = parts - (unsigned int)spin;
	int w = threadIdx.x / DG_TAIL_COLS, l = threadIdx.x % DG_TAIL_COLS;

	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		ticket = atomicAdd(count, 1u);
	__syncthreads();
	if (ticket < first)
		return;
	if (threadIdx.x == 0) {
		while (*(volatile unsigned int *)count < parts)
			__nanosleep(100);
		__threadfence();
		/* a second count: the last waiting block to see them all
		 * leaves the counter at 0 for the next launch */
		if (atomicAdd(count, 1u) == parts + (unsigned int)spin - 1)
			atomicExch(count, 0u);
	}
	__syncthreads();
	for (int c = (int)(ticket - first) * DG_TAIL_COLS; c < h;
	     c += spin * DG_TAIL_COLS) {
		int i = c + l;
		float acc = 0.0f, d = 0.0f;

		if (w == 0 && i < h)
			d = dg[i]; /* in flight with the parts' loads */
		if (i < h)
#pragma unroll 16
			for (int p = w; p < (int)parts; p += DG_LANES)
				acc += __ldcg(part + (size_t)p * h + i);
		lane[w][l] = acc;
		__syncthreads();
		if (w == 0 && i < h) {
			for (int q = 1; q < DG_LANES; q++)
				acc += lane[q][l];
			dg[i] = d + acc;
		}
		__syncthreads(); /* lane[] is read before the next pass */
	}
}

/* dx_i = s (g_i dy_i - x_i s^2 mean_j(g_j dy_j x_j)), as in the CPU twin
 * (ADD: dx_i += that, kern_rmsnorm_bwd_add), for the block's rows
 * [chunk b, chunk (b + 1)); part[b, i] = the sum over them, in row order,
 * of dy_i x_i s. On an H200 the time between the Llama shapes grows at
 * the copy rate (34.3 us at h 2048, 57.7 at h 4096: 101 MB more in 23.4
 * us, 4.3 TB/s); copying the next row into shared memory (cp.async)
 * while a row was computed left both times as they were (34.6, 59.1
 * us), so the ~10 us beyond the bytes is fixed cost, not bytes in
 * flight. */
template <int NV, int VEC, int ADD>
__global__ static void __launch_bounds__(NORM_THREADS)
norm_bwd_k(struct norm_bwd a)
{
	int r0 = blockIdx.x * a.chunk, r1 = min(r0 + a.chunk, a.rows);
	float4 acc[NV];

#pragma unroll
	for (int j = 0; j < NV; j++)
		acc[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	for (int row = r0; row < r1; row++) {
		size_t o = (size_t)row * a.h;
		float4 xv[NV], dv[NV], pv[NV];
		float s = a.rstd[row], dot = 0.0f, c;

#pragma unroll
		for (int j = 0; j < NV; j++) {
			xv[j] = ld4<VEC>(a.x + o, ELEM(j), a.h);
			dv[j] = ld4<VEC>(a.dy + o, ELEM(j), a.h);
			if (ADD) /* with the others: one wait a row */
				pv[j] = ld4<VEC>(a.dx + o, ELEM(j), a.h);
		}
#pragma unroll
		for (int j = 0; j < NV; j++) {
			float4 g = ld4<VEC>(a.g, ELEM(j), a.h);

			dot = fmaf(g.x * dv[j].x, xv[j].x, dot);
			dot = fmaf(g.y * dv[j].y, xv[j].y, dot);
			dot = fmaf(g.z * dv[j].z, xv[j].z, dot);
			dot = fmaf(g.w * dv[j].w, xv[j].w, dot);
			acc[j].x = fmaf(dv[j].x * xv[j].x, s, acc[j].x);
			acc[j].y = fmaf(dv[j].y * xv[j].y, s, acc[j].y);
			acc[j].z = fmaf(dv[j].z * xv[j].z, s, acc[j].z);
			acc[j].w = fmaf(dv[j].w * xv[j].w, s, acc[j].w);
		}
		dot = block_sum(dot);
		c = s * s * dot / (float)a.h;
#pragma unroll
		for (int j = 0; j < NV; j++) {
			float4 g = ld4<VEC>(a.g, ELEM(j), a.h), d;

			d = make_float4(dx_of(s, g.x, dv[j].x, xv[j].x, c),
					dx_of(s, g.y, dv[j].y, xv[j].y, c),
					dx_of(s, g.z, dv[j].z, xv[j].z, c),
					dx_of(s, g.w, dv[j].w, xv[j].w, c));
			if (ADD)
				d = make_float4(pv[j].x + d.x, pv[j].y + d.y,
						pv[j].z + d.z, pv[j].w + d.w);
			st4<VEC>(a.dx + o, ELEM(j), a.h, d);
			if (a.dx16) { /* the bits; dx keeps its fp32 value */
				float4 t = d;

				bf4<VEC>(a.dx16 + o, ELEM(j), a.h, &t);
			}
		}
	}
#pragma unroll
	for (int j = 0; j < NV; j++)
		st4<VEC>(a.part + (size_t)blockIdx.x * a.h, ELEM(j), a.h, acc[j]);
	if (a.spin)
		norm_dg_tail(a.h, a.spin, a.part, a.dg, a.count);
}

/* dg[i] += the sum of part[p, i] over p < parts: a block takes DG_COLS
 * columns, its lane w (DG_COLS threads) adds the parts p = w mod
 * DG_LANES in order of p, then the lanes' sums are added in order of w.
 * The same order on every run: the parts are not added in order of p
 * (as the CPU twin's rows), so the rounding differs from it. DG_COLS 8
 * (32-byte rows of a part): h / 8 blocks, 256 at h 2048 (32 columns a
 * block left 64 blocks, half the SMs, to read the parts' 4 MB). */
__global__ static void __launch_bounds__(DG_COLS * DG_LANES)
norm_dg_sum_k(int h, int parts, const float *part, float *dg)
{
	__shared__ float lane[DG_LANES][DG_COLS];
	int w = threadIdx.x / DG_COLS, l = threadIdx.x % DG_COLS;
	int i = blockIdx.x * DG_COLS + l;
	float acc = 0.0f;

	if (i < h)
#pragma unroll 16 /* loads ahead of the adds that wait for them */
		for (int p = w; p < parts; p += DG_LANES)
			acc += part[(size_t)p * h + i];
	lane[w][l] = acc;
	__syncthreads();
	if (w == 0 && i < h) {
		for (int q = 1; q < DG_LANES; q++)
			acc += lane[q][l];
		dg[i] += acc;
	}
}

/* Parts of at least NORM_BWD_ROWS rows (times nv / 2 for nv > 2: those
 * blocks hold more registers, fewer fit an SM at once, and fewer longer
 * parts then run in one wave: 256 blocks of 16 rows for h = 4096 and 4096
 * rows), at most NORM_BWD_PARTS; the rows of a part in *chunk. A function
 * of the shape only: the order of dg's sums is too. */
static int norm_bwd_parts(long long rows, int nv, int *chunk)
{
	long long least = (long long)NORM_BWD_ROWS * (nv > 2 ? nv / 2 : 1);
	long long parts = (rows + least - 1) / least, c;

	if (parts > NORM_BWD_PARTS)
		parts = NORM_BWD_PARTS;
	c = (rows + parts - 1) / parts;
	*chunk = (int)c;
	return (int)((rows + c - 1) / c);
}

template <int NV, int VEC>
static void norm_bwd_launch(cudaStream_t st, int parts, int tpb, int add,
			    const struct norm_bwd *a)
{
	if (add)
		norm_bwd_k<NV, VEC, 1><<<parts, tpb, 0, st>>>(*a);
	else
		norm_bwd_k<NV, VEC, 0><<<parts, tpb, 0, st>>>(*a);
}

template <int VEC>
static int norm_bwd_go(cudaStream_t st, int nv, int parts, int tpb, int add,
		       const struct norm_bwd *a)
{
	switch (nv) {
	case 1: norm_bwd_launch<1, VEC>(st, parts, tpb, add, a); break;
	case 2: norm_bwd_launch<2, VEC>(st, parts, tpb, add, a); break;
	case 4: norm_bwd_launch<4, VEC>(st, parts, tpb, add, a); break;
	default: norm_bwd_launch<8, VEC>(st, parts, tpb, add, a); break;
	}
	LAUNCHCHECK(norm_bwd_k);
	return 0;
}

static int two_pass_bwd(struct kern_ctx *k, long long rows, long long h,
			const float *x, const float *g, const float *rstd,
			const float *dy, float *dx, float *dg, int add);

/* Once per context (kern_cuda.h): a backward call costs no getenv. */
void kern_cuda_norm_init(struct cuda_impl *c)
{
	const char *e = getenv("GTPLAN_NORM_BWD");

	c->norm_bwd = !e ? KERN_CUDA_NORM_BWD_RULE :
		      !strcmp(e, "one") ? KERN_CUDA_NORM_BWD_ONE :
		      !strcmp(e, "two") ? KERN_CUDA_NORM_BWD_TWO :
		      KERN_CUDA_NORM_BWD_RULE;
}

/* How many of norm_bwd_k's last blocks add its parts to dg (norm_dg_tail);
 * 0: norm_dg_sum_k does, a launch of its own. GTPLAN_NORM_BWD=two takes
 * the two launches, =one the one launch at every shape (c->norm_bwd,
 * kern_cuda_norm_init; tests/gpu/test_kernels_mem_gpu.c compares their
 * bits); unset, the rule: at most NORM_DG_SPIN_MAX blocks, half the
 * SMs (norm_dg_tail's bound), the parts and the column passes, and one
 * launch only while none of them adds more than NORM_DG_SPIN_FLOATS (128
 * KB) in at most NORM_DG_SPIN_PASSES passes. Reckoned, not measured: an
 * SM reads L2 at some 50-100 GB/s, so 1.3-2.6 us, and each pass waits
 * for its loads (16 a thread in flight) and a barrier, about the second
 * launch's gap plus its own read, which takes every column at once; past
 * that the few adding SMs, the rest idle, would cost more than the
 * launch saved. 4096 rows of 2048 (512 parts) or 4096 (256) give 64
 * blocks of 16K floats, 1 and 2 passes; 1024 parts of 8192, the most,
 * 128K floats, and 512 rows of 8192, 16 passes: two launches. The
 * limits are reckoned; the gain was measured at 4096 x 2048 on an H200
 * (bench_kernels_gpu mem, one machine): rmsnorm_bwd 3.03 TB/s in one
 * launch against 2.97 in two, rmsnorm_bwd_add_bf 3.32 against 3.29. */
static int norm_dg_spin(struct cuda_impl *c, int parts, long long h)
{
	long long n = NORM_DG_SPIN_MAX, passes = (h + DG_TAIL_COLS - 1) /
						  DG_TAIL_COLS;

	if (c->norm_bwd == KERN_CUDA_NORM_BWD_TWO)
		return 0;
	n = c->sms / 2 < n ? c->sms / 2 : n;
	n = parts < n ? parts : n;
	n = passes < n ? passes : n;
	n = n < 1 ? 1 : n;
	if (c->norm_bwd != KERN_CUDA_NORM_BWD_ONE &&
	    ((long long)parts * h > n * NORM_DG_SPIN_FLOATS ||
	     passes > n * NORM_DG_SPIN_PASSES))
		return 0;
	return (int)n;
}

static int norm_bwd(struct kern_ctx *k, long long rows, long long h,
		    const float *x, const float *g, const float *rstd,
		    const float *dy, float *dx, float *dg, int add,
		    uint16_t *dx16)
{
	int tpb = 0, nv = norm_plan(rows, h, &tpb), parts, vec;
	struct norm_bwd a = { (int)rows, (int)h, 0, x, g, rstd, dy, dx, NULL,
			      dx16, 0, dg, NULL };

	/* Rows shorter than a full block (QK-norm's head dims) would leave
	 * each block's chunk of rows to a warp or two: their many rows go
	 * one a block to the two-pass kernels instead (dx16 by a pass of
	 * its own there). */
	if (!nv || tpb < NORM_THREADS) {
		KERN_TRY(two_pass_bwd(k, rows, h, x, g, rstd, dy, dx, dg,
				      add));
		return dx16 ? kern_cuda_to_bf16(k, rows * h, dx, dx16) : 0;
	}
	parts = norm_bwd_parts(rows, nv, &a.chunk);
	KERN_TRY(kern_cuda_scratch(impl_of(k), (size_t)parts * (size_t)h *
				   sizeof(float), (void **)&a.part));
	KERN_TRY(kern_cuda_counter(impl_of(k), &a.count));
	a.spin = norm_dg_spin(impl_of(k), parts, h);
	vec = h % 4 == 0 && ((uintptr_t)x | (uintptr_t)g | (uintptr_t)dy |
			     (uintptr_t)dx) % 16 == 0 &&
	      (uintptr_t)dx16 % 8 == 0;
	KERN_TRY(vec ? norm_bwd_go<1>(stream_of(k), nv, parts, tpb, add, &a) :
		       norm_bwd_go<0>(stream_of(k), nv, parts, tpb, add, &a));
	if (a.spin)
		return 0;
	norm_dg_sum_k<<<(unsigned)((h + DG_COLS - 1) / DG_COLS),
			DG_COLS * DG_LANES, 0,
			stream_of(k)>>>((int)h, parts, a.part, dg);
	LAUNCHCHECK(norm_dg_sum_k);
	return 0;
}

int kern_cuda_rmsnorm_bwd(struct kern_ctx *k, long long rows, long long h,
			  const float *x, const float *g, const float *rstd,
			  const float *dy, float *dx, float *dg)
{
	return norm_bwd(k, rows, h, x, g, rstd, dy, dx, dg, 0, NULL);
}

int kern_cuda_rmsnorm_bwd_add(struct kern_ctx *k, long long rows,
			      long long h, const float *x, const float *g,
			      const float *rstd, const float *dy, float *dx,
			      float *dg, uint16_t *dx16)
{
	return norm_bwd(k, rows, h, x, g, rstd, dy, dx, dg, 1, dx16);
}

/* ---- rows longer than NORM_MAX_H: two passes over global memory --------- */

/* dx (ADD: dx +=) one row a block, as norm_bwd_k. */
__global__ static void two_pass_dx_k(long long rows, long long h,
				     const float *x, const float *g,
				     const float *rstd, const float *dy,
				     float *dx, int add)
{
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const float *xr = x + r * h, *dyr = dy + r * h;
		float *dxr = dx + r * h, s = rstd[r], dot = 0.0f, c;

		for (long long i = threadIdx.x; i < h; i += blockDim.x)
			dot += g[i] * dyr[i] * xr[i];
		dot = block_sum(dot);
		c = s * s * dot / (float)h;
		for (long long i = threadIdx.x; i < h; i += blockDim.x) {
			float d = dx_of(s, g[i], dyr[i], xr[i], c);

			dxr[i] = add ? dxr[i] + d : d;
		}
	}
}

/* part[p, i] = the sum of dy x rstd over part p's rows, one thread a
 * column; the parts then go to norm_dg_sum_k. */
__global__ static void two_pass_dg_k(long long rows, long long h,
				     long long chunk, const float *x,
				     const float *rstd, const float *dy,
				     float *part)
{
	long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	long long r0 = blockIdx.y * chunk, r1 = min(r0 + chunk, rows);
	float acc = 0.0f;

	if (i >= h)
		return;
	for (long long r = r0; r < r1; r++)
		acc += dy[r * h + i] * x[r * h + i] * rstd[r];
	part[blockIdx.y * h + i] = acc;
}

static int two_pass_bwd(struct kern_ctx *k, long long rows, long long h,
			const float *x, const float *g, const float *rstd,
			const float *dy, float *dx, float *dg, int add)
{
	long long parts = (rows + 31) / 32, chunk;
	float *part;

	if (parts > 256)
		parts = 256;
	chunk = (rows + parts - 1) / parts;
	parts = (rows + chunk - 1) / chunk;
	if (h > INT_MAX)
		return KERN_EINVAL;
	KERN_TRY(kern_cuda_scratch(impl_of(k), (size_t)(parts * h) *
				   sizeof(float), (void **)&part));
	two_pass_dg_k<<<dim3((unsigned)((h + KERN_CUDA_THREADS - 1) /
				      KERN_CUDA_THREADS), (unsigned)parts),
			KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		rows, h, chunk, x, rstd, dy, part);
	LAUNCHCHECK(two_pass_dg_k);
	norm_dg_sum_k<<<(unsigned)((h + DG_COLS - 1) / DG_COLS),
			DG_COLS * DG_LANES, 0,
			stream_of(k)>>>((int)h, (int)parts, part, dg);
	LAUNCHCHECK(norm_dg_sum_k);
	two_pass_dx_k<<<rows_grid(rows), KERN_CUDA_THREADS, 0,
			stream_of(k)>>>(rows, h, x, g, rstd, dy, dx, add);
	LAUNCHCHECK(two_pass_dx_k);
	return 0;
}
