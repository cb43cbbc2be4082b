/*
 * kern_cuda_llm: the CUDA twin of the decoder's kernels (kern.h): bias,
 * SwiGLU and causal grouped-query attention, queued on the context's
 * stream (kern_stream; linear_qkv's columns and RoPE are
 * kernels/kern_cuda_qkv.cu's, fused in kern_cuda_qkv_rope.cu). These are
 * the simple references that faster kernels are tested against: clarity
 * over speed.
 *
 * Semantics follow kernels/kern_cpu.c and kernels/kern_cpu_attn.c; what may
 * differ is rounding. bias_grad is computed in double as on the CPU;
 * attention works in fp32 with an online softmax (the max and the sums
 * rescaled as keys come, Milakov and Gimelshein, "Online normalizer
 * calculation for softmax", 2018) where the CPU twin sums in double, and
 * its dot products are warp trees.
 *
 * Attention: one warp per query row (forward, dq) or per key row (dk, dv);
 * lane l holds head dims l, l + 32, ... in registers, so hd is at most
 * KERN_CUDA_ATTN_MAX_HD. K and V are read in place by every query head of
 * their group. dk and dv are summed by the key row's own warp over the
 * query heads and rows that attend it: no atomics, so results are
 * reproducible run to run.
 */
#include <cuda_runtime.h>

#include <math.h>

#include "kern_cuda.h"

/* Position i of pos; NULL: i (kernels/kern.h, kern_attn_fwd). */
__device__ __forceinline__ static long long pos_at(const int32_t *pos,
						   long long i)
{
	return pos ? pos[i] : i;
}

/* Head dims per lane, and the largest head dim the warp can hold. */
#define ATTN_PER_LANE 8
#define KERN_CUDA_ATTN_MAX_HD (32 * ATTN_PER_LANE)
/* Warps (query or key rows) per block. */
#define ATTN_WARPS 4

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return (cudaStream_t)kern_stream(k);
}

/* ---- bias --------------------------------------------------------------- */

__global__ static void bias_add_k(long long rows, long long cols,
				  const float *b, float *y)
{
	GRID_STRIDE(i, rows * cols)
		y[i] += b[i % cols];
}

/* One thread per column, summing its rows in order in double, as the CPU
 * twin does. */
__global__ static void bias_grad_k(long long rows, long long cols,
				   const float *dy, float *db)
{
	GRID_STRIDE(c, cols) {
		double s = 0;

		for (long long r = 0; r < rows; r++)
			s += dy[r * cols + c];
		db[c] += (float)s;
	}
}

int kern_cuda_bias_add(struct kern_ctx *k, long long rows, long long cols,
		       const float *b, float *y)
{
	bias_add_k<<<blocks_for(rows * cols), KERN_CUDA_THREADS, 0,
		     stream_of(k)>>>(rows, cols, b, y);
	LAUNCHCHECK(bias_add_k);
	return 0;
}

int kern_cuda_bias_grad(struct kern_ctx *k, long long rows, long long cols,
			const float *dy, float *db)
{
	bias_grad_k<<<blocks_for(cols), KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		rows, cols, dy, db);
	LAUNCHCHECK(bias_grad_k);
	return 0;
}

/* ---- SwiGLU ------------------------------------------------------------- */

__device__ static float sigmoid(float a)
{
	return 1.0f / (1.0f + expf(-a));
}

__global__ static void swiglu_fwd_k(long long rows, long long f,
				    const float *x, float *y)
{
	GRID_STRIDE(idx, rows * f) {
		long long r = idx / f, i = idx - r * f;
		float a = x[r * 2 * f + i];

		y[idx] = a * sigmoid(a) * x[r * 2 * f + f + i];
	}
}

/* silu'(a) = s(a) (1 + a (1 - s(a))), as in the CPU twin. */
__global__ static void swiglu_bwd_k(long long rows, long long f,
				    const float *x, const float *dy, float *dx)
{
	GRID_STRIDE(idx, rows * f) {
		long long r = idx / f, i = idx - r * f;
		float a = x[r * 2 * f + i], up = x[r * 2 * f + f + i];
		float s = sigmoid(a), d = dy[idx];

		dx[r * 2 * f + i] = d * up * s * (1.0f + a * (1.0f - s));
		dx[r * 2 * f + f + i] = d * a * s;
	}
}

/* Four values a thread (f a multiple of 4 and 16-byte aligned arrays). */
__global__ static void swiglu_fwd4_k(long long rows, long long f4,
				     const float4 *x, float4 *y)
{
	GRID_STRIDE(idx, rows * f4) {
		long long r = idx / f4, i = idx - r * f4;
		float4 a = x[r * 2 * f4 + i], u = x[r * 2 * f4 + f4 + i];

		y[idx] = make_float4(a.x * sigmoid(a.x) * u.x,
				     a.y * sigmoid(a.y) * u.y,
				     a.z * sigmoid(a.z) * u.z,
				     a.w * sigmoid(a.w) * u.w);
	}
}

/* silu'(a) = s(a) (1 + a (1 - s(a))), as in the CPU twin; four values a
 * thread as above. */
__global__ static void swiglu_bwd4_k(long long rows, long long f4,
				     const float4 *x, const float4 *dy,
				     float4 *dx)
{
	GRID_STRIDE(idx, rows * f4) {
		long long r = idx / f4, i = idx - r * f4;
		float4 a = x[r * 2 * f4 + i], u = x[r * 2 * f4 + f4 + i];
		float4 d = dy[idx];
		float av[4] = { a.x, a.y, a.z, a.w }, uv[4] = { u.x, u.y, u.z, u.w };
		float dv[4] = { d.x, d.y, d.z, d.w }, gv[4], wv[4];

#pragma unroll
		for (int j = 0; j < 4; j++) {
			float s = sigmoid(av[j]);

			gv[j] = dv[j] * uv[j] * s * (1.0f + av[j] * (1.0f - s));
			wv[j] = dv[j] * av[j] * s;
		}
		dx[r * 2 * f4 + i] = make_float4(gv[0], gv[1], gv[2], gv[3]);
		dx[r * 2 * f4 + f4 + i] = make_float4(wv[0], wv[1], wv[2],
						      wv[3]);
	}
}

/* The 4-wide kernels take f % 4 == 0 with 16-byte aligned arrays. */
static int swiglu_vec(long long f, const void *a, const void *b,
		      const void *c)
{
	return f % 4 == 0 && (uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0 &&
	       (uintptr_t)c % 16 == 0;
}

int kern_cuda_swiglu_fwd(struct kern_ctx *k, long long rows, long long f,
			 const float *x, float *y)
{
	if (swiglu_vec(f, x, y, y)) {
		swiglu_fwd4_k<<<blocks_for(rows * f / 4), KERN_CUDA_THREADS, 0,
				stream_of(k)>>>(rows, f / 4, (const float4 *)x,
						(float4 *)y);
		LAUNCHCHECK(swiglu_fwd4_k);
		return 0;
	}
	swiglu_fwd_k<<<blocks_for(rows * f), KERN_CUDA_THREADS, 0,
		       stream_of(k)>>>(rows, f, x, y);
	LAUNCHCHECK(swiglu_fwd_k);
	return 0;
}

int kern_cuda_swiglu_bwd(struct kern_ctx *k, long long rows, long long f,
			 const float *x, const float *dy, float *dx)
{
	if (swiglu_vec(f, x, dy, dx)) {
		swiglu_bwd4_k<<<blocks_for(rows * f / 4), KERN_CUDA_THREADS, 0,
				stream_of(k)>>>(rows, f / 4, (const float4 *)x,
						(const float4 *)dy,
						(float4 *)dx);
		LAUNCHCHECK(swiglu_bwd4_k);
		return 0;
	}
	swiglu_bwd_k<<<blocks_for(rows * f), KERN_CUDA_THREADS, 0,
		       stream_of(k)>>>(rows, f, x, dy, dx);
	LAUNCHCHECK(swiglu_bwd_k);
	return 0;
}

/* ---- attention: warp helpers -------------------------------------------- */

/* Query rows are numbered as lse is laid out, r = (b nh + h) sq + i; key
 * rows as r = (b nkv + g) sk + s. Each warp takes rows by grid stride. */
#define WARP_ROWS(r, n)                                                    \
	for (long long r = (long long)blockIdx.x * ATTN_WARPS +            \
			   (threadIdx.x >> 5);                             \
	     r < (n); r += (long long)gridDim.x * ATTN_WARPS)

static unsigned warps_grid(long long rows)
{
	long long b = (rows + ATTN_WARPS - 1) / ATTN_WARPS;

	return (unsigned)(b < 1 ? 1 : b > KERN_CUDA_MAX_BLOCKS ?
			  KERN_CUDA_MAX_BLOCKS : b);
}

/* Every lane gets the warp's sum. */
__device__ __forceinline__ static float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* Where query row i of head h of sequence b starts in q, o, dout. */
__device__ __forceinline__ static long long qoff(const struct kern_attn &a,
						 long long b, long long i,
						 long long h)
{
	return ((b * a.sq + i) * a.nh + h) * a.hd;
}

/* Where key row s of key/value head g of sequence b starts in k, v. */
__device__ __forceinline__ static long long koff(const struct kern_attn &a,
						 long long b, long long s,
						 long long g)
{
	return ((b * a.sk + s) * a.nkv + g) * a.hd;
}

/* The lane's head dims (lane + 32 j) of `row` into r, 0 past hd. */
__device__ __forceinline__ static void lane_load(float *r, const float *row,
						 long long hd, int lane)
{
#pragma unroll
	for (int j = 0; j < ATTN_PER_LANE; j++) {
		long long d = lane + 32 * j;

		r[j] = d < hd ? row[d] : 0.0f;
	}
}

/* The warp's dot product of the lane-held r with `row`. */
__device__ __forceinline__ static float lane_dot(const float *r,
						 const float *row, long long hd,
						 int lane)
{
	float s = 0.0f;

#pragma unroll
	for (int j = 0; j < ATTN_PER_LANE; j++) {
		long long d = lane + 32 * j;

		if (d < hd)
			s += r[j] * row[d];
	}
	return warp_sum(s);
}

/* The warp's dot product of two rows in memory. */
__device__ __forceinline__ static float row_dot(const float *x,
						const float *y, long long hd,
						int lane)
{
	float s = 0.0f;

	for (long long d = lane; d < hd; d += 32)
		s += x[d] * y[d];
	return warp_sum(s);
}

/* r += w row on the lane's dims. */
__device__ __forceinline__ static void lane_axpy(float *r, float w,
						 const float *row, long long hd,
						 int lane)
{
#pragma unroll
	for (int j = 0; j < ATTN_PER_LANE; j++) {
		long long d = lane + 32 * j;

		if (d < hd)
			r[j] += w * row[d];
	}
}

/* row += r on the lane's dims. */
__device__ __forceinline__ static void lane_add(float *row, const float *r,
						long long hd, int lane)
{
#pragma unroll
	for (int j = 0; j < ATTN_PER_LANE; j++) {
		long long d = lane + 32 * j;

		if (d < hd)
			row[d] += r[j];
	}
}

/* 0, or KERN_EINVAL (its message kept) when the head dim is too large. */
static int attn_fits(const struct kern_attn *a)
{
	if (a->hd <= KERN_CUDA_ATTN_MAX_HD)
		return 0;
	return kern_set_error(KERN_EINVAL, "attention head dim %lld is over "
			      "the %d the reference kernels hold", a->hd,
			      KERN_CUDA_ATTN_MAX_HD);
}

/* ---- attention: forward and merge --------------------------------------- */

/* One warp per query row: online softmax over the attended keys. */
__global__ static void attn_fwd_k(struct kern_attn a, const float *q,
				  const float *kk, const float *v,
				  const int32_t *qpos, const int32_t *kpos,
				  float *o, float *lse)
{
	int lane = threadIdx.x & 31;
	long long group = a.nh / a.nkv;

	WARP_ROWS(r, a.batch * a.nh * a.sq) {
		long long i = r % a.sq, h = (r / a.sq) % a.nh;
		long long b = r / (a.sq * a.nh), at = qoff(a, b, i, h);
		float qr[ATTN_PER_LANE], acc[ATTN_PER_LANE] = { 0 };
		float m = -INFINITY, l = 0.0f;

		lane_load(qr, q + at, a.hd, lane);
		for (long long s = 0; s < a.sk; s++) {
			long long ks = koff(a, b, s, h / group);
			float sc, p;

			if (pos_at(kpos, s) > pos_at(qpos, i))
				continue;
			sc = a.scale * lane_dot(qr, kk + ks, a.hd, lane);
			if (sc > m) { /* rescale what came before */
				float c = expf(m - sc);

				l *= c;
#pragma unroll
				for (int j = 0; j < ATTN_PER_LANE; j++)
					acc[j] *= c;
				m = sc;
			}
			p = expf(sc - m);
			l += p;
			lane_axpy(acc, p, v + ks, a.hd, lane);
		}
#pragma unroll
		for (int j = 0; j < ATTN_PER_LANE; j++) {
			long long d = lane + 32 * j;

			if (d < a.hd)
				o[at + d] = l > 0.0f ? acc[j] / l : 0.0f;
		}
		if (lane == 0)
			lse[r] = l > 0.0f ? m + logf(l) : -INFINITY;
	}
}

int kern_cuda_attn_fwd(struct kern_ctx *k, const struct kern_attn *a,
		       const float *q, const float *kk, const float *v,
		       const int32_t *qpos, const int32_t *kpos, float *o,
		       float *lse)
{
	if (k->math == KERN_MATH_BF16 && kern_fast_attn_ok(a))
		return kern_fast_attn_fwd((struct cuda_impl *)k->impl, a, q, kk,
					  v, qpos, kpos, o, lse);
	if (attn_fits(a))
		return KERN_EINVAL;
	attn_fwd_k<<<warps_grid(a->batch * a->nh * a->sq), 32 * ATTN_WARPS, 0,
		     stream_of(k)>>>(*a, q, kk, v, qpos, kpos, o, lse);
	LAUNCHCHECK(attn_fwd_k);
	return 0;
}

/* One thread per query row, in double as the CPU twin:
 * lse' = max + log1p(exp(min - max)); a -inf side contributes nothing. */
__global__ static void attn_merge_k(struct kern_attn a, float *o, float *lse,
				    const float *o2, const float *lse2)
{
	GRID_STRIDE(r, a.batch * a.nh * a.sq) {
		long long i = r % a.sq, h = (r / a.sq) % a.nh;
		long long at = qoff(a, r / (a.sq * a.nh), i, h);
		double l1 = lse[r], l2 = lse2[r], hi, l, w1, w2;

		if (l2 == -INFINITY)
			continue;
		hi = l1 > l2 ? l1 : l2;
		l = hi + log1p(exp((l1 > l2 ? l2 : l1) - hi));
		w1 = exp(l1 - l);
		w2 = exp(l2 - l);
		for (long long d = 0; d < a.hd; d++)
			o[at + d] = (float)(w1 * o[at + d] + w2 * o2[at + d]);
		lse[r] = (float)l;
	}
}

int kern_cuda_attn_merge(struct kern_ctx *k, const struct kern_attn *a,
			 float *o, float *lse, const float *o2,
			 const float *lse2)
{
	attn_merge_k<<<blocks_for(a->batch * a->nh * a->sq), KERN_CUDA_THREADS,
		       0, stream_of(k)>>>(*a, o, lse, o2, lse2);
	LAUNCHCHECK(attn_merge_k);
	return 0;
}

/* ---- attention: backward ------------------------------------------------ */

/* One warp per query row with a finite lse: dq += scale sum over attended
 * keys of P (dout.v - D) k, D = dout.o. */
__global__ static void attn_dq_k(struct kern_attn a, const float *q,
				 const float *kk, const float *v,
				 const float *o, const float *lse,
				 const float *dout, const int32_t *qpos,
				 const int32_t *kpos, float *dq)
{
	int lane = threadIdx.x & 31;
	long long group = a.nh / a.nkv;

	WARP_ROWS(r, a.batch * a.nh * a.sq) {
		long long i = r % a.sq, h = (r / a.sq) % a.nh;
		long long b = r / (a.sq * a.nh), at = qoff(a, b, i, h);
		float qr[ATTN_PER_LANE], dr[ATTN_PER_LANE];
		float acc[ATTN_PER_LANE] = { 0 }, l = lse[r], dsum;

		if (l == -INFINITY) /* attended nothing: no gradient */
			continue;
		lane_load(qr, q + at, a.hd, lane);
		lane_load(dr, dout + at, a.hd, lane);
		dsum = lane_dot(dr, o + at, a.hd, lane);
		for (long long s = 0; s < a.sk; s++) {
			long long ks = koff(a, b, s, h / group);
			float p, ds;

			if (pos_at(kpos, s) > pos_at(qpos, i))
				continue;
			p = expf(a.scale * lane_dot(qr, kk + ks, a.hd, lane) - l);
			ds = p * (lane_dot(dr, v + ks, a.hd, lane) - dsum);
			lane_axpy(acc, a.scale * ds, kk + ks, a.hd, lane);
		}
		lane_add(dq + at, acc, a.hd, lane);
	}
}

/* One warp per key row: dv += sum of P dout, dk += scale sum of
 * P (dout.v - D) q over the query heads of its group and the query rows
 * that attend it. */
__global__ static void attn_dkv_k(struct kern_attn a, const float *q,
				  const float *kk, const float *v,
				  const float *o, const float *lse,
				  const float *dout, const int32_t *qpos,
				  const int32_t *kpos, float *dk, float *dv)
{
	int lane = threadIdx.x & 31;
	long long group = a.nh / a.nkv;

	WARP_ROWS(r, a.batch * a.nkv * a.sk) {
		long long s = r % a.sk, g = (r / a.sk) % a.nkv;
		long long b = r / (a.sk * a.nkv), ks = koff(a, b, s, g);
		float kr[ATTN_PER_LANE], vr[ATTN_PER_LANE];
		float dka[ATTN_PER_LANE] = { 0 }, dva[ATTN_PER_LANE] = { 0 };

		lane_load(kr, kk + ks, a.hd, lane);
		lane_load(vr, v + ks, a.hd, lane);
		for (long long h = g * group; h < (g + 1) * group; h++)
			for (long long i = 0; i < a.sq; i++) {
				long long at = qoff(a, b, i, h);
				float l = lse[(b * a.nh + h) * a.sq + i], p, ds;

				if (pos_at(kpos, s) > pos_at(qpos, i) ||
				    l == -INFINITY)
					continue;
				p = expf(a.scale * lane_dot(kr, q + at, a.hd,
							    lane) - l);
				ds = p * (lane_dot(vr, dout + at, a.hd, lane) -
					  row_dot(dout + at, o + at, a.hd, lane));
				lane_axpy(dva, p, dout + at, a.hd, lane);
				lane_axpy(dka, a.scale * ds, q + at, a.hd, lane);
			}
		lane_add(dk + ks, dka, a.hd, lane);
		lane_add(dv + ks, dva, a.hd, lane);
	}
}

int kern_cuda_attn_bwd(struct kern_ctx *k, const struct kern_attn *a,
		       const float *q, const float *kk, const float *v,
		       const float *o, const float *lse, const float *dout,
		       const int32_t *qpos, const int32_t *kpos, float *dq,
		       float *dk, float *dv)
{
	if (k->math == KERN_MATH_BF16 && kern_fast_attn_ok(a))
		return kern_fast_attn_bwd((struct cuda_impl *)k->impl, a, q, kk,
					  v, o, lse, dout, qpos, kpos, dq, dk,
					  dv);
	if (attn_fits(a))
		return KERN_EINVAL;
	if (a->overwrite) { /* the kernels below add, and skip what they can */
		size_t f = sizeof(float);
		size_t nq = (size_t)(a->batch * a->sq * a->nh * a->hd) * f;
		size_t nk = (size_t)(a->batch * a->sk * a->nkv * a->hd) * f;

		KERN_TRY(kern_cuda_zero(k, dq, nq));
		KERN_TRY(kern_cuda_zero(k, dk, nk));
		KERN_TRY(kern_cuda_zero(k, dv, nk));
	}
	attn_dq_k<<<warps_grid(a->batch * a->nh * a->sq), 32 * ATTN_WARPS, 0,
		    stream_of(k)>>>(*a, q, kk, v, o, lse, dout, qpos, kpos, dq);
	LAUNCHCHECK(attn_dq_k);
	attn_dkv_k<<<warps_grid(a->batch * a->nkv * a->sk), 32 * ATTN_WARPS, 0,
		     stream_of(k)>>>(*a, q, kk, v, o, lse, dout, qpos, kpos, dk,
				     dv);
	LAUNCHCHECK(attn_dkv_k);
	return 0;
}
