/*
 * kern_cuda_b16: kernels on the tensors mixed-precision runs hold in bf16
 * alone (kernels/kern.h, the _b16 ops; the GEMMs that write them,
 * kern_gemm_bf16, are kernels/kern_cuda_fast.cu's cuBLASLt with a bf16
 * C): the cross-entropy pieces on bf16 logits, SwiGLU on linear_fc1's
 * bf16 output and its gradient, and the embedding's lookup in the
 * weights' bf16 copy (kern_embed_fwd_b16), which reads the looked-up rows
 * alone instead of widening the whole table.
 *
 * The logits of a Llama vocabulary are the largest tensor of a step
 * (4096 tokens x 128256 ids: 1 GB in bf16, 2 GB in fp32), read by the max
 * and the sum of exponentials and read and written by the gradient; in
 * bf16 each pass moves half the bytes. Rows of a multiple of 8 values
 * from a 16-byte-aligned base are read and written 8 values (16 bytes) at
 * a time, other shapes one value at a time. Every value is widened
 * exactly (bf16 bits << 16), so each piece computes what the fp32 piece
 * computes on the widened logits; the reductions sum in another order
 * than the CPU twin's (a block's tree), as kern_cuda.cu's do.
 */
#include <cuda_runtime.h>

#include <float.h>
#include <limits.h>
#include <stdint.h>

#include "kern_cuda.h"

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return ((struct cuda_impl *)k->impl)->stream;
}

__device__ __forceinline__ static float widen(uint16_t b)
{
	return __uint_as_float((unsigned int)b << 16);
}

/* The 8 values of a 16-byte chunk. */
__device__ __forceinline__ static void widen8(uint4 u, float v[8])
{
	unsigned int w[4] = { u.x, u.y, u.z, u.w };

#pragma unroll
	for (int i = 0; i < 4; i++) {
		v[2 * i] = __uint_as_float(w[i] << 16);
		v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
	}
}

/* Rows are read 8 at a time: cols a multiple of 8, base 16-byte aligned. */
static int vec8(long long cols, const void *p)
{
	return cols % 8 == 0 && (uintptr_t)p % 16 == 0;
}

/* One block per row: the max of its first nvalid values (-FLT_MAX when
 * none), or (SUM) the sum of exp(l - max[r]). */
template <int SUM>
__global__ static void ce_row_k(long long rows, long long cols,
				long long nvalid, int vec, const uint16_t *l16,
				const float *max, float *out)
{
	for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
		const uint16_t *l = l16 + r * cols;
		float acc = SUM ? 0.0f : -FLT_MAX, mr = SUM ? max[r] : 0.0f;
		long long j0 = vec ? nvalid / 8 * 8 : 0;

		for (long long c = threadIdx.x; c < j0 / 8; c += blockDim.x) {
			float v[8];

			widen8(((const uint4 *)l)[c], v);
#pragma unroll
			for (int i = 0; i < 8; i++)
				acc = SUM ? acc + expf(v[i] - mr) :
					    fmaxf(acc, v[i]);
		}
		for (long long j = j0 + threadIdx.x; j < nvalid; j += blockDim.x)
			acc = SUM ? acc + expf(widen(l[j]) - mr) :
				    fmaxf(acc, widen(l[j]));
		acc = SUM ? block_sum(acc) : block_max(acc);
		if (threadIdx.x == 0)
			out[r] = acc;
	}
}

__global__ static void ce_target_b16_k(long long rows, long long cols,
				       long long first, const int32_t *targets,
				       const uint16_t *l16, float *target)
{
	GRID_STRIDE(r, rows) {
		long long j = (long long)targets[r] - first;

		target[r] = j >= 0 && j < cols ? widen(l16[r * cols + j]) :
						 0.0f;
	}
}

#define CE_ROW_BLOCKS 64

/* The gradient of the 8 logits of chunk c (columns 8c ..) of a row. */
__device__ __forceinline__ static uint4 ce_grad8(uint4 u, long long c,
						 long long nvalid, long long t,
						 float mr, float inv,
						 float scale)
{
	float v[8], d[8];

	widen8(u, v);
#pragma unroll
	for (int i = 0; i < 8; i++)
		d[i] = ce_grad(v[i], 8 * c + i, nvalid, t, mr, inv, scale);
	return make_uint4(bf16_pair(d[0], d[1]), bf16_pair(d[2], d[3]),
			  bf16_pair(d[4], d[5]), bf16_pair(d[6], d[7]));
}

/* Grid (column chunks, rows): a thread owns chunks of 8 columns of a row
 * (single columns where rows are not read 8 at a time) and reads only its
 * own values before writing them, so d16 may alias l16. The shapes
 * ce_bwd8_k does not take. */
__global__ static void ce_bwd_b16_k(long long rows, long long cols,
				    long long nvalid, long long first, int vec,
				    const int32_t *targets, const float *max,
				    const float *sum, float scale,
				    const uint16_t *l16, uint16_t *d16)
{
	long long c0 = blockIdx.x * (long long)blockDim.x + threadIdx.x;
	long long step = (long long)gridDim.x * blockDim.x;
	long long chunks = vec ? cols / 8 : cols;

	for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
		long long t = (long long)targets[r] - first;
		float mr = max[r], inv = 1.0f / sum[r];
		const uint16_t *l = l16 + r * cols;
		uint16_t *d = d16 + r * cols;

		for (long long c = c0; c < chunks; c += step) {
			if (vec)
				((uint4 *)d)[c] = ce_grad8(
					((const uint4 *)l)[c], c, nvalid, t,
					mr, inv, scale);
			else
				d[c] = bf16_bits(ce_grad(widen(l[c]), c,
							 nvalid, t, mr, inv,
							 scale));
		}
	}
}

/* The gradient on rows of 8-value chunks: a span is CE_SPAN consecutive
 * chunks of one row (cb spans a row), CE_ITEMS chunks of it a thread; a
 * block walks spans (grid stride, resident_grid's blocks) and loads the
 * next span's chunks and row statistics before it computes and stores
 * the current one, so 2 CE_ITEMS 16-byte loads a thread are in flight
 * while it computes: 3.7 TB/s on the H200 (docs/runtime-gpu.md, third
 * pass), where ce_bwd_b16_k ran at 2.5. What limited the latter, by
 * count (not profiled): one 16-byte load in flight a thread at 48
 * registers (5 blocks of 256 an
 * SM: 20 KB in flight an SM, below the ~30 KB that 4.2 TB/s at ~1 us of
 * latency needs), and about 5 integer instructions a value for the
 * rounding and 64-bit index compares. Here: the hardware's rounding
 * (bf16_pack8), 32-bit indices, and chunks wholly valid and off the
 * target column (all but one or two a row) computed without the
 * compares; the value of each logit is ce_grad's expression, so the bits
 * are ce_bwd_b16_k's. Every chunk is read and then written by one
 * thread, and a thread's loads of the next span touch other chunks than
 * its stores of this one: d16 may alias l16. */
#define CE_THREADS 256
#define CE_ITEMS 4
#define CE_SPAN (CE_THREADS * CE_ITEMS)

struct ce_bwd_args {
	int spans, cb, chunks, nvalid; /* chunks: a row's; nvalid <= cols */
	long long cols, first;
	const int32_t *targets;
	const float *max, *sum;
	float scale;
	const uint16_t *l16;
	uint16_t *d16;
};

/* A span's loads: its chunks and its row's statistics. */
struct ce_span {
	uint4 v[CE_ITEMS];
	long long row;
	int c0, target;
	float mr, sum;
};

__device__ __forceinline__ static void ce_span_load(const ce_bwd_args &a,
						    int b, ce_span *s)
{
	int r = b / a.cb;
	const uint4 *l = (const uint4 *)(a.l16 + (size_t)r * a.cols);

	s->row = r;
	s->c0 = (b - r * a.cb) * CE_SPAN + (int)threadIdx.x;
	s->target = a.targets[r];
	s->mr = a.max[r];
	s->sum = a.sum[r];
#pragma unroll
	for (int u = 0; u < CE_ITEMS; u++)
		s->v[u] = s->c0 + u * CE_THREADS < a.chunks ?
			  l[s->c0 + u * CE_THREADS] : make_uint4(0, 0, 0, 0);
}

__device__ __forceinline__ static void ce_span_store(const ce_bwd_args &a,
						     const ce_span *s)
{
	uint4 *d = (uint4 *)(a.d16 + (size_t)s->row * a.cols);
	long long tl = (long long)s->target - a.first;
	int t = tl >= 0 && tl < a.cols ? (int)tl : -1; /* -1: off the row */
	float inv = 1.0f / s->sum;

#pragma unroll
	for (int u = 0; u < CE_ITEMS; u++) {
		int c = s->c0 + u * CE_THREADS, j = 8 * c;
		float v[8], g[8];

		if (c >= a.chunks)
			continue;
		widen8(s->v[u], v);
		if (j <= a.nvalid - 8 && (unsigned)(t - j) >= 8u) {
#pragma unroll
			for (int i = 0; i < 8; i++) /* ce_grad's, j != t */
				g[i] = a.scale * (expf(v[i] - s->mr) * inv);
		} else {
#pragma unroll
			for (int i = 0; i < 8; i++)
				g[i] = ce_grad(v[i], j + i, a.nvalid, t,
					       s->mr, inv, a.scale);
		}
		d[c] = bf16_pack8(g);
	}
}

__global__ static void __launch_bounds__(CE_THREADS)
ce_bwd8_k(ce_bwd_args a)
{
	ce_span cur, next;
	int b = blockIdx.x;

	if (b >= a.spans)
		return;
	ce_span_load(a, b, &cur);
	for (;; b += gridDim.x) {
		int more = b + (int)gridDim.x < a.spans;

		if (more)
			ce_span_load(a, b + (int)gridDim.x, &next);
		ce_span_store(a, &cur);
		if (!more)
			break;
		cur = next;
	}
}

/* ---- SwiGLU on bf16 ---------------------------------------------------- */

__device__ __forceinline__ static float sig(float a)
{
	return 1.0f / (1.0f + expf(-a));
}

/* y16 = bf16(silu(gate) up) of x16's row [gate | up] (kern.h's
 * kern_swiglu_fwd on the widened values, rounded): 8 values a thread
 * where f is a multiple of 8 and the arrays 16-byte aligned, else one. */
__global__ static void swiglu_fwd_b16_k(long long rows, long long f, int vec,
					const uint16_t *x16, uint16_t *y16)
{
	long long per = vec ? f / 8 : f;

	GRID_STRIDE(idx, rows * per) {
		long long r = idx / per, c = idx - r * per;
		const uint16_t *g = x16 + r * 2 * f, *u = g + f;

		if (vec) {
			float a[8], b[8], y[8];

			widen8(((const uint4 *)g)[c], a);
			widen8(((const uint4 *)u)[c], b);
#pragma unroll
			for (int i = 0; i < 8; i++)
				y[i] = a[i] * sig(a[i]) * b[i];
			((uint4 *)(y16 + r * f))[c] = make_uint4(
				bf16_pair(y[0], y[1]), bf16_pair(y[2], y[3]),
				bf16_pair(y[4], y[5]), bf16_pair(y[6], y[7]));
		} else {
			float a = widen(g[c]);

			y16[r * f + c] = bf16_bits(a * sig(a) * widen(u[c]));
		}
	}
}

/* The same on 16-byte chunks (f % 8 == 0, aligned arrays, rows f / 8
 * below 2^31 chunks): chunk c of y16 (row r = c / per, per = f / 8) from
 * chunks c + r per (gate) and c + (r + 1) per (up) of x16, SW_ITEMS
 * chunks a thread a step, a block walking steps (grid stride,
 * resident_grid's blocks) with the next step's loads issued before the
 * current step's math and stores: 3.7-3.8 TB/s on the H200
 * (docs/runtime-gpu.md, third pass), where swiglu_fwd_b16_k ran at
 * 3.1-3.2. What limited the latter, by count (not profiled): a thread a
 * chunk, each paying a 64-bit division before its
 * loads and exiting after one store (a block's life mostly latency, 32
 * bytes in flight a thread), and the rounding's integer work on top of
 * the exponential and the division of the sigmoid. Here the division is
 * a multiply (kdiv), the rounding the hardware's (bf16_pack8, the same
 * bits), and 4 SW_ITEMS 16-byte loads are in flight a thread. */
#define SW_THREADS 256
#define SW_ITEMS 1
#define SW_SPAN (SW_THREADS * SW_ITEMS)

struct sw_step {
	uint4 g[SW_ITEMS], u[SW_ITEMS];
	unsigned int c0;
};

__device__ __forceinline__ static void sw_load(const uint4 *x, unsigned n,
					       struct kdiv per, unsigned s,
					       struct sw_step *t)
{
	t->c0 = s * SW_SPAN + threadIdx.x;
#pragma unroll
	for (int i = 0; i < SW_ITEMS; i++) {
		unsigned c = t->c0 + i * SW_THREADS;
		unsigned o = c + kdiv_q(c, per) * per.d;

		t->g[i] = c < n ? x[o] : make_uint4(0, 0, 0, 0);
		t->u[i] = c < n ? x[o + per.d] : make_uint4(0, 0, 0, 0);
	}
}

__device__ __forceinline__ static void sw_store(uint4 *y, unsigned n,
						const struct sw_step *t)
{
#pragma unroll
	for (int i = 0; i < SW_ITEMS; i++) {
		unsigned c = t->c0 + i * SW_THREADS;
		float a[8], b[8], v[8];

		if (c >= n)
			continue;
		widen8(t->g[i], a);
		widen8(t->u[i], b);
#pragma unroll
		for (int j = 0; j < 8; j++)
			v[j] = a[j] * sig(a[j]) * b[j];
		y[c] = bf16_pack8(v);
	}
}

__global__ static void __launch_bounds__(SW_THREADS)
swiglu_fwd8_k(unsigned n, struct kdiv per, const uint4 *x, uint4 *y)
{
	unsigned steps = (n + SW_SPAN - 1) / SW_SPAN, s = blockIdx.x;
	struct sw_step cur, next;

	if (s >= steps)
		return;
	sw_load(x, n, per, s, &cur);
	for (;; s += gridDim.x) {
		int more = s + gridDim.x < steps;

		if (more)
			sw_load(x, n, per, s + gridDim.x, &next);
		sw_store(y, n, &cur);
		if (!more)
			break;
		cur = next;
	}
}

/* dx16 [rows, 2f] from dy16 [rows, f]: d gate = dy up silu'(gate),
 * d up = dy silu(gate), silu'(a) = s(a) (1 + a (1 - s(a))), as the CPU
 * twin's kern_swiglu_bwd, each rounded to bf16. */
__device__ __forceinline__ static void swiglu_d(float a, float up, float d,
						float *dg, float *du)
{
	float s = sig(a);

	*dg = d * up * s * (1.0f + a * (1.0f - s));
	*du = d * a * s;
}

__global__ static void swiglu_bwd_b16_k(long long rows, long long f, int vec,
					const uint16_t *x16,
					const uint16_t *dy16, uint16_t *dx16)
{
	long long per = vec ? f / 8 : f;

	GRID_STRIDE(idx, rows * per) {
		long long r = idx / per, c = idx - r * per;
		const uint16_t *g = x16 + r * 2 * f, *u = g + f;
		uint16_t *dg = dx16 + r * 2 * f, *du = dg + f;

		if (vec) {
			float a[8], b[8], d[8], og[8], ou[8];

			widen8(((const uint4 *)g)[c], a);
			widen8(((const uint4 *)u)[c], b);
			widen8(((const uint4 *)(dy16 + r * f))[c], d);
#pragma unroll
			for (int i = 0; i < 8; i++)
				swiglu_d(a[i], b[i], d[i], &og[i], &ou[i]);
			((uint4 *)dg)[c] = bf16_pack8(og);
			((uint4 *)du)[c] = bf16_pack8(ou);
		} else {
			float og, ou;

			swiglu_d(widen(g[c]), widen(u[c]), widen(dy16[r * f + c]),
				 &og, &ou);
			dg[c] = bf16_bits(og);
			du[c] = bf16_bits(ou);
		}
	}
}

static int vec8_all(long long f, const void *a, const void *b,
		    const void *c)
{
	return vec8(f, a) && vec8(f, b) && (!c || vec8(f, c));
}

int kern_cuda_swiglu_fwd_b16(struct kern_ctx *k, long long rows, long long f,
			     const uint16_t *x16, uint16_t *y16)
{
	int vec = vec8_all(f, x16, y16, NULL);
	long long n = rows * (vec ? f / 8 : f);
	unsigned g = 1;

	if (n == 0)
		return 0;
	if (vec && n + SW_SPAN <= INT_MAX) {
		KERN_TRY(resident_grid(swiglu_fwd8_k, SW_THREADS, 0,
				       (n + SW_SPAN - 1) / SW_SPAN, &g));
		swiglu_fwd8_k<<<g, SW_THREADS, 0, stream_of(k)>>>(
			(unsigned)n, kdiv_init((unsigned)(f / 8)),
			(const uint4 *)x16, (uint4 *)y16);
		LAUNCHCHECK(swiglu_fwd8_k);
		return 0;
	}
	swiglu_fwd_b16_k<<<blocks_for(n), KERN_CUDA_THREADS, 0,
			   stream_of(k)>>>(rows, f, vec, x16, y16);
	LAUNCHCHECK(swiglu_fwd_b16_k);
	return 0;
}

int kern_cuda_swiglu_bwd_b16(struct kern_ctx *k, long long rows, long long f,
			     const uint16_t *x16, const uint16_t *dy16,
			     uint16_t *dx16)
{
	int vec = vec8_all(f, x16, dy16, dx16);

	swiglu_bwd_b16_k<<<blocks_for(rows * (vec ? f / 8 : f)),
			   KERN_CUDA_THREADS, 0, stream_of(k)>>>(rows, f, vec,
								 x16, dy16,
								 dx16);
	LAUNCHCHECK(swiglu_bwd_b16_k);
	return 0;
}

/* ---- the embedding ------------------------------------------------------ */

/* out[i] = the widened row tokens[i] - first of the table, or zeros for
 * an id of another rank (embed_fwd_k's contract on a bf16 table): one
 * thread per 8 values where rows allow, else per value. Measured on an
 * H200 (bench_kernels_gpu mem, T 4096): 17.2 us at h 2048, 29.6 us at h
 * 4096, so the 50 MB more of the larger shape took 12.4 us (4.1 TB/s,
 * the copy rate) and the rest, ~5 us, is fixed: the launch, and a
 * token's load before its row's. Resident blocks that walked token rows
 * with the next row's loads in flight ran slower (22.2 and 45.9 us). */
__global__ static void embed_fwd_b16_k(long long n, long long h,
				       long long first, long long rows,
				       int vec, const uint16_t *table,
				       const int32_t *tokens, float *out)
{
	long long per = vec ? h / 8 : h;

	GRID_STRIDE(idx, n * per) {
		long long i = idx / per, c = idx - i * per;
		long long r = (long long)tokens[i] - first;
		int own = r >= 0 && r < rows;

		if (vec) {
			float v[8] = { 0 };
			float4 *o = (float4 *)(out + i * h) + 2 * c;

			if (own)
				widen8(((const uint4 *)(table + r * h))[c], v);
			o[0] = make_float4(v[0], v[1], v[2], v[3]);
			o[1] = make_float4(v[4], v[5], v[6], v[7]);
		} else {
			out[i * h + c] = own ? widen(table[r * h + c]) : 0.0f;
		}
	}
}

int kern_cuda_embed_fwd_b16(struct kern_ctx *k, long long n, long long h,
			    long long first, long long rows,
			    const uint16_t *table, const int32_t *tokens,
			    float *out)
{
	int vec = vec8(h, table) && (uintptr_t)out % 16 == 0;

	embed_fwd_b16_k<<<blocks_for(n * (vec ? h / 8 : h)), KERN_CUDA_THREADS,
			  0, stream_of(k)>>>(n, h, first, rows, vec, table,
					     tokens, out);
	LAUNCHCHECK(embed_fwd_b16_k);
	return 0;
}

int kern_cuda_ce_max_b16(struct kern_ctx *k, long long rows, long long cols,
			 long long nvalid, const uint16_t *l16, float *max)
{
	ce_row_k<0><<<rows_grid(rows), KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		rows, cols, nvalid, vec8(cols, l16), l16, NULL, max);
	LAUNCHCHECK(ce_row_k);
	return 0;
}

int kern_cuda_ce_sumexp_b16(struct kern_ctx *k, long long rows,
			    long long cols, long long nvalid,
			    const uint16_t *l16, const float *max, float *sum)
{
	ce_row_k<1><<<rows_grid(rows), KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		rows, cols, nvalid, vec8(cols, l16), l16, max, sum);
	LAUNCHCHECK(ce_row_k);
	return 0;
}

int kern_cuda_ce_target_b16(struct kern_ctx *k, long long rows,
			    long long cols, long long first,
			    const int32_t *targets, const uint16_t *l16,
			    float *target)
{
	ce_target_b16_k<<<blocks_for(rows), KERN_CUDA_THREADS, 0,
			  stream_of(k)>>>(rows, cols, first, targets, l16,
					  target);
	LAUNCHCHECK(ce_target_b16_k);
	return 0;
}

int kern_cuda_ce_bwd_b16(struct kern_ctx *k, long long rows, long long cols,
			 long long nvalid, long long first,
			 const int32_t *targets, const float *max,
			 const float *sum, float scale, const uint16_t *l16,
			 uint16_t *d16)
{
	int vec = vec8(cols, l16) && vec8(cols, d16);
	long long chunks = vec ? cols / 8 : cols;
	long long cb = (chunks + CE_SPAN - 1) / CE_SPAN;
	/* the other shapes: at most CE_ROW_BLOCKS rows of blocks, each
	 * walking rows */
	dim3 grid(blocks_for(chunks),
		  (unsigned)(rows < CE_ROW_BLOCKS ? rows : CE_ROW_BLOCKS));
	unsigned g8 = 1;

	if (chunks == 0 || rows == 0)
		return 0;
	if (vec && rows * cb <= INT_MAX / 2 && cols <= INT_MAX) {
		ce_bwd_args a = { (int)(rows * cb), (int)cb, (int)chunks,
				  (int)(nvalid < cols ? nvalid : cols), cols,
				  first, targets, max, sum, scale, l16, d16 };

		KERN_TRY(resident_grid(ce_bwd8_k, CE_THREADS, 0, rows * cb,
				       &g8));
		ce_bwd8_k<<<g8, CE_THREADS, 0, stream_of(k)>>>(a);
		LAUNCHCHECK(ce_bwd8_k);
		return 0;
	}
	ce_bwd_b16_k<<<grid, KERN_CUDA_THREADS, 0, stream_of(k)>>>(
		rows, cols, nvalid, first, vec, targets, max, sum, scale, l16,
		d16);
	LAUNCHCHECK(ce_bwd_b16_k);
	return 0;
}
