/*
 * kern_cuda_norm: the CUDA twin's RMSNorm forward (kern.h:
 * kern_rmsnorm_fwd, kern_add_rmsnorm_fwd), queued on the context's stream;
 * arguments checked by kernels/kern.c. Its backward (kern_rmsnorm_bwd,
 * kern_rmsnorm_bwd_add) is kernels/kern_cuda_norm_bwd.cu's; both lay a
 * row out as kernels/norm_rows.cuh says.
 *
 * Rows of up to NORM_MAX_H values (the backward: of at least
 * 4 NORM_THREADS - 3) take the register path: a block of
 * norm_plan()'s threads holds a row in registers (NV float4s a thread,
 * elements (j * threads + t) * 4 .. + 3 for thread t, j < NV) between
 * the row's reduction and its writes, so each input is read from memory
 * once. 128-bit loads and stores where h is a multiple of 4 and every
 * pointer is 16-byte aligned (8 for bf16 copies); otherwise the same
 * element mapping with scalar accesses, so both give the same bits for
 * the same h (kern_add_rmsnorm_fwd is bit for bit kern_rmsnorm_fwd of its
 * sum whichever path each call takes). Other rows take the two-pass
 * kernels at the end of this file and of kern_cuda_norm_bwd.cu.
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>

#include "kern_cuda.h"
#include "norm_rows.cuh"

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return (cudaStream_t)kern_stream(k);
}

/* ---- forward ------------------------------------------------------------ */

struct norm_fwd {
	int rows, h;
	float eps;
	const float *x, *r, *g;
	float *sum, *y, *rstd;
	uint16_t *y16;
};

/* One row a block (grid stride past the grid's cap); ADD: the row is
 * x + r, written to sum, first (kern_add_rmsnorm_fwd). Every load of x
 * precedes every store to sum: sum may alias x. */
template <int NV, int VEC, int ADD>
__global__ static void __launch_bounds__(NORM_THREADS)
norm_fwd_k(struct norm_fwd a)
{
	for (int row = blockIdx.x; row < a.rows; row += gridDim.x) {
		size_t o = (size_t)row * a.h;
		float4 v[NV];
		float ss = 0.0f, s;

#pragma unroll
		for (int j = 0; j < NV; j++)
			v[j] = ld4<VEC>(a.x + o, ELEM(j), a.h);
		if (ADD) {
			float4 w[NV];

#pragma unroll
			for (int j = 0; j < NV; j++)
				w[j] = ld4<VEC>(a.r + o, ELEM(j), a.h);
#pragma unroll
			for (int j = 0; j < NV; j++) {
				v[j].x += w[j].x;
				v[j].y += w[j].y;
				v[j].z += w[j].z;
				v[j].w += w[j].w;
				st4<VEC>(a.sum + o, ELEM(j), a.h, v[j]);
			}
		}
#pragma unroll
		for (int j = 0; j < NV; j++) {
			ss = fmaf(v[j].x, v[j].x, ss);
			ss = fmaf(v[j].y, v[j].y, ss);
			ss = fmaf(v[j].z, v[j].z, ss);
			ss = fmaf(v[j].w, v[j].w, ss);
		}
		ss = block_sum(ss);
		s = 1.0f / sqrtf(ss / (float)a.h + a.eps);
		if (threadIdx.x == 0)
			a.rstd[row] = s;
#pragma unroll
		for (int j = 0; j < NV; j++) {
			float4 g = ld4<VEC>(a.g, ELEM(j), a.h);
			float4 t = make_float4(v[j].x * s * g.x, v[j].y * s * g.y,
					       v[j].z * s * g.z, v[j].w * s * g.w);

			if (a.y16)
				bf4<VEC>(a.y16 + o, ELEM(j), a.h, &t);
			if (a.y) /* NULL: the bits alone (kern.h) */
				st4<VEC>(a.y + o, ELEM(j), a.h, t);
		}
	}
}

template <int NV, int VEC>
static void norm_fwd_launch(cudaStream_t st, int tpb, const struct norm_fwd *a)
{
	if (a->r)
		norm_fwd_k<NV, VEC, 1><<<rows_grid(a->rows), tpb, 0, st>>>(*a);
	else
		norm_fwd_k<NV, VEC, 0><<<rows_grid(a->rows), tpb, 0, st>>>(*a);
}

template <int VEC>
static int norm_fwd_go(cudaStream_t st, int nv, int tpb,
		       const struct norm_fwd *a)
{
	switch (nv) {
	case 1: norm_fwd_launch<1, VEC>(st, tpb, a); break;
	case 2: norm_fwd_launch<2, VEC>(st, tpb, a); break;
	case 4: norm_fwd_launch<4, VEC>(st, tpb, a); break;
	default: norm_fwd_launch<8, VEC>(st, tpb, a); break;
	}
	LAUNCHCHECK(norm_fwd_k);
	return 0;
}

static int fwd_vec(const struct norm_fwd *a)
{
	return a->h % 4 == 0 && ((uintptr_t)a->x | (uintptr_t)a->g |
				 (uintptr_t)a->y | (uintptr_t)a->r |
				 (uintptr_t)a->sum) % 16 == 0 &&
	       (uintptr_t)a->y16 % 8 == 0;
}

static int two_pass_fwd(struct kern_ctx *k, const struct norm_fwd *a,
			long long rows, long long h);

/* kern_rmsnorm_fwd (r, sum NULL) and kern_add_rmsnorm_fwd. */
static int norm_fwd(struct kern_ctx *k, long long rows, long long h,
		    struct norm_fwd *a)
{
	int tpb = 0, nv = norm_plan(rows, h, &tpb);

	if (!nv)
		return two_pass_fwd(k, a, rows, h);
	a->rows = (int)rows;
	a->h = (int)h;
	return fwd_vec(a) ? norm_fwd_go<1>(stream_of(k), nv, tpb, a) :
			    norm_fwd_go<0>(stream_of(k), nv, tpb, a);
}

int kern_cuda_rmsnorm_fwd(struct kern_ctx *k, long long rows, long long h,
			  float eps, const float *x, const float *g, float *y,
			  float *rstd)
{
	struct norm_fwd a = { 0, 0, eps, x, NULL, g, NULL, y, rstd, NULL };

	return norm_fwd(k, rows, h, &a);
}

int kern_cuda_add_rmsnorm_fwd(struct kern_ctx *k, long long rows,
			      long long h, float eps, const float *x,
			      const float *r, float *sum, const float *g,
			      float *y, float *rstd, uint16_t *y16)
{
	struct norm_fwd a = { 0, 0, eps, x, r, g, sum, y, rstd, y16 };

	return norm_fwd(k, rows, h, &a);
}

/* ---- rows longer than NORM_MAX_H: two passes over global memory --------- */

/* rmsnorm (ADD: of x + r, written to sum first; y16: y rounded, its bits
 * there), one row a block. */
__global__ static void two_pass_fwd_k(long long rows, long long h, float eps,
				      const float *x, const float *r,
				      float *sum, const float *g, float *y,
				      float *rstd, uint16_t *y16)
{
	for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
		const float *xr = x + row * h;
		float *sr = sum ? sum + row * h : NULL;
		float *yr = y ? y + row * h : NULL;
		float ss = 0.0f, s;

		for (long long i = threadIdx.x; i < h; i += blockDim.x) {
			float v = r ? xr[i] + r[row * h + i] : xr[i];

			if (sr)
				sr[i] = v;
			ss += v * v;
		}
		ss = block_sum(ss);
		s = 1.0f / sqrtf(ss / (float)h + eps);
		if (threadIdx.x == 0)
			rstd[row] = s;
		for (long long i = threadIdx.x; i < h; i += blockDim.x) {
			float v = (sr ? sr[i] : xr[i]) * s * g[i];

			v = y16 ? bf16_keep(v, y16 + row * h + i) : v;
			if (yr)
				yr[i] = v;
		}
	}
}

static int two_pass_fwd(struct kern_ctx *k, const struct norm_fwd *a,
			long long rows, long long h)
{
	two_pass_fwd_k<<<rows_grid(rows), KERN_CUDA_THREADS, 0,
			 stream_of(k)>>>(rows, h, a->eps, a->x, a->r, a->sum,
					 a->g, a->y, a->rstd, a->y16);
	LAUNCHCHECK(two_pass_fwd_k);
	return 0;
}
