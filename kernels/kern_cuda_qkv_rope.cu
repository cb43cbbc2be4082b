/*
 * kern_cuda_qkv_rope: linear_qkv's columns, RoPE and the bf16 rounding of
 * mixed-precision runs in one pass each way, the CUDA twin (kern.h:
 * kern_qkv_rope_bf, kern_qkv_merge_rope_bf), queued on the context's
 * stream (kern_stream); the unfused ops they stand for (kern_qkv_split,
 * kern_rope, ...) are kernels/kern_cuda_qkv.cu's, whose top comment says
 * how their values compare. RoPE's cos, sin and turn are the same
 * functions in both (kernels/qkv_rope.cuh).
 *
 * The fused kernels read a row's cos and sin from a table of (position,
 * pair) cached in the context (rope_table): computing a row's table in
 * every block (pos, then pow, cos and sin in double, into shared memory
 * between two barriers) put that latency in every block's path, with
 * only a few blocks resident an SM; with the table these passes went
 * from 2.95 / 2.82 to 3.08 / 3.23 TB/s at the 1B / 8B shapes on an H200
 * (docs/runtime-gpu.md, fourth pass). rope_tab_k fills it once with
 * rope_cs itself (the very bits), keyed by (theta, hd), sized by the
 * call's bound on its positions (kern_qkv's pos_end) or else its rows
 * (pos stays on the device), freed with the context (kern_cuda.cu
 * cuda_release); a row whose position it lacks (negative, or past its
 * length) computes its own as before.
 *
 * The fused kernels: one thread a chunk of 8 pairs (i, i + hd/2) of one
 * head: two 16-byte loads per half, a 16-byte store of the copy per half
 * and, where the fp32 output is wanted, two more; one block a row. Where
 * a row's chunks fit a block (the Llama shapes), qkv_rope8_k, whose
 * threads load their own cos and sin from the table (four 16-byte loads:
 * a position's cos of pairs 0 .. hd/2 - 1, then their sin, then -sin for
 * the backward, rope_tab_k) while their data's loads are in flight; else
 * qkv_rope_k, which copies the row's table into shared memory, and whose
 * scalar variant takes head dims that are not multiples of 16 and arrays
 * that are not 16-byte aligned.
 */
#include <cuda_runtime.h>

#include <limits.h>
#include <math.h>

#include "kern_cuda.h"
#include "qkv_rope.cuh"

static cudaStream_t stream_of(struct kern_ctx *k)
{
	return (cudaStream_t)kern_stream(k);
}

/* ---- the columns, RoPE and the bf16 copies in one pass ------------------ */

/* A fused pass: its shape in heads (qh query and kh key heads a group)
 * and arrays. merge 0 (kern_qkv_rope_bf): packed in, the parts q, k, v
 * out (part[] may be NULL) with their copies part16[]; merge 1
 * (kern_qkv_merge_rope_bf): the parts in, packed (may be NULL) and
 * packed16 out, RoPE inverse. */
struct qkv_rope_args {
	long long rows;
	int groups, qh, kh, hd, merge;
	double theta;
	const int32_t *pos;
	const float *tab; /* rope_table's, tab_len positions (NULL: 0) */
	int tab_len;
	float *packed;
	uint16_t *packed16;
	float *part[3];
	uint16_t *part16[3];
};

/* V consecutive floats in and out (V = 8: two 16-byte accesses). */
template <int V>
__device__ __forceinline__ static void load_v(const float *p, float *x)
{
	if (V == 8) {
		float4 a = ((const float4 *)p)[0], b = ((const float4 *)p)[1];

		x[0] = a.x; x[1] = a.y; x[2] = a.z; x[3] = a.w;
		x[4] = b.x; x[5] = b.y; x[6] = b.z; x[7] = b.w;
	} else {
		for (int j = 0; j < V; j++)
			x[j] = p[j];
	}
}

template <int V>
__device__ __forceinline__ static void store_v(float *p, const float *x)
{
	if (V == 8) {
		((float4 *)p)[0] = make_float4(x[0], x[1], x[2], x[3]);
		((float4 *)p)[1] = make_float4(x[4], x[5], x[6], x[7]);
	} else {
		for (int j = 0; j < V; j++)
			p[j] = x[j];
	}
}

/* V bf16 values out (V = 8: one 16-byte store). */
template <int V>
__device__ __forceinline__ static void store16_v(uint16_t *p,
						 const uint16_t *h)
{
	if (V == 8) {
		*(uint4 *)p = make_uint4((unsigned)h[0] | (unsigned)h[1] << 16,
					 (unsigned)h[2] | (unsigned)h[3] << 16,
					 (unsigned)h[4] | (unsigned)h[5] << 16,
					 (unsigned)h[6] | (unsigned)h[7] << 16);
	} else {
		for (int j = 0; j < V; j++)
			p[j] = h[j];
	}
}

/* Pairs i0 .. i0 + V - 1 of one head (half = hd / 2) from src into dst16
 * and, when set, dst: turned by the row's table cs (cos, then sin) when
 * set, each value rounded to bf16 (kern_round_bf16_copy's bits). */
template <int V>
__device__ __forceinline__ static void head_chunk(const float *src, int half,
						  int i0, const float *cs,
						  float *dst, uint16_t *dst16)
{
	float x1[V], x2[V];
	uint16_t h1[V], h2[V];

	load_v<V>(src + i0, x1);
	load_v<V>(src + half + i0, x2);
#pragma unroll
	for (int j = 0; j < V; j++) {
		float y1 = x1[j], y2 = x2[j];

		if (cs)
			rope_turn(x1[j], x2[j], cs[i0 + j], cs[half + i0 + j],
				  &y1, &y2);
		x1[j] = bf16_keep(y1, &h1[j]);
		x2[j] = bf16_keep(y2, &h2[j]);
	}
	store16_v<V>(dst16 + i0, h1);
	store16_v<V>(dst16 + half + i0, h2);
	if (dst) {
		store_v<V>(dst + i0, x1);
		store_v<V>(dst + half + i0, x2);
	}
}

/* One block a row: its RoPE table (hd floats of dynamic shared memory),
 * then one thread a chunk of V pairs of a head, heads in packed order:
 * query group j's qh query, kh key, kh value heads. */
template <int V>
__global__ static void qkv_rope_k(struct qkv_rope_args a)
{
	extern __shared__ float cs[];
	int half = a.hd / 2, cph = half / V, hpg = a.qh + 2 * a.kh;
	int items = a.groups * hpg * cph;

	for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
		int32_t p = a.pos[r];

		__syncthreads(); /* the previous row's table is read */
		if ((unsigned)p < (unsigned)a.tab_len) {
			const float *pc = a.tab + (long long)p * 3 * half;
			const float *ps = pc + (1 + a.merge) * half;

			for (int i = threadIdx.x; i < half; i += blockDim.x) {
				cs[i] = pc[i];
				cs[half + i] = ps[i];
			}
		} else {
			for (int i = threadIdx.x; i < half; i += blockDim.x)
				rope_cs(p, i, a.hd, a.theta, a.merge, &cs[i],
					&cs[half + i]);
		}
		__syncthreads();
		for (int it = threadIdx.x; it < items; it += blockDim.x) {
			int hh = it / cph, i0 = (it - hh * cph) * V;
			int j = hh / hpg, h = hh - j * hpg;
			int p = h < a.qh ? 0 : h < a.qh + a.kh ? 1 : 2;
			int lh = h - (p ? a.qh + (p - 1) * a.kh : 0);
			long long rj = r * a.groups + j;
			long long off = (rj * (p ? a.kh : a.qh) + lh) * a.hd;
			long long po = (r * a.groups * hpg + hh) * a.hd;
			const float *t = p < 2 ? cs : NULL;
			/* selected, not indexed: a's arrays stay parameters */
			float *pf = p == 0 ? a.part[0] : p == 1 ? a.part[1] :
				    a.part[2];
			uint16_t *ph = p == 0 ? a.part16[0] :
				       p == 1 ? a.part16[1] : a.part16[2];

			if (a.merge)
				head_chunk<V>(pf + off, half, i0, t,
					      a.packed ? a.packed + po : NULL,
					      a.packed16 + po);
			else
				head_chunk<V>(a.packed + po, half, i0, t,
					      pf ? pf + off : NULL, ph + off);
		}
	}
}

/* The largest head dim of the fused kernels (their table in shared
 * memory: 32 KB). */
#define QKV_ROPE_MAX_HD 8192
/* Threads a block at most. */
#define QKV_ROPE_THREADS 512

/* The fused pass on 16-byte chunks where a row's chunks fit a block
 * (items <= QKV_ROPE_THREADS, hd <= QR_MAX_HD): qkv_rope_k's one block a
 * row (grid stride past the grid's cap), thread t item t of it (its
 * part, head and offsets fixed for the launch). Each thread issues its
 * item's four 16-byte loads first, then reads the row's position and,
 * for a query or key head, its 8 pairs' cos and sin from the context's
 * table (rope_table: four more 16-byte loads, L2-resident), so no thread
 * waits for a barrier or for the double math of the others. A row whose
 * position the table lacks (negative, or past its length) takes the
 * fallback: the block computes the row's table into shared memory (pos,
 * then pow, cos and sin in double by the first hd / 2 threads) between
 * two barriers, as every row did before the table; the branch is the
 * same for the whole block (one row, one position). Bytes in flight: 64
 * a thread from the block's start, 12 KB a block of 192 threads at the
 * 1B shape (48 heads of 4 chunks a row at hd 64), 24 KB one of 384 at
 * the 8B shape; at QR_REGS registers a thread 4 and 2 blocks an SM,
 * about 48 KB an SM either way (4.2 TB/s at ~1 us of latency needs ~32
 * KB an SM), with T blocks queued behind them. Resident blocks walking
 * rows, two in flight through cp.async (an earlier version), ran slower
 * on an H200 (2.1 and 2.3 TB/s against qkv_rope_k's 2.5 and 2.4,
 * bench_kernels_gpu mem). The values are rope_cs's (the table's are,
 * bit for bit: the same function on the same arguments) and rope_turn's,
 * rounded as bf16_keep (bf16_pack8: the same bits), so the same as
 * qkv_rope_k's
 * unless ptxas contracts rope_turn's y1 differently here
 * (tests/gpu/test_kernels_qkv_gpu.c counts such values). */
#define QR_MAX_HD 512 /* larger head dims keep qkv_rope_k, tested so */
/* ptxas spilled 16 to 40 bytes a thread at 64 registers (the table's 16
 * values held beside the data's 16), none at 80: 4 blocks of 192
 * threads an SM, 2 of 384, 1 of QKV_ROPE_THREADS. Built with 64, the
 * passes ran 2.66 / 2.81 TB/s at the 1B / 8B shapes on an H200 against
 * 80's 3.08 / 3.23 (bench_kernels_gpu mem, one machine). */
#ifndef QR_REGS
#define QR_REGS 80
#endif

template <int MERGE>
struct qr_item {
	const float *src;
	float *dst;
	uint16_t *dst16;
	int sstride, dstride; /* a row's floats in src, in dst */
	int i0, turn;
};

/* Item t's arrays at row 0 and their row strides (qkv_rope_k's
 * offsets). */
template <int MERGE>
__device__ static void qr_item_init(const struct qkv_rope_args &a, int t,
				    struct qr_item<MERGE> *q)
{
	int half = a.hd / 2, cph = half / 8, hpg = a.qh + 2 * a.kh;
	int hh = t / cph, j = hh / hpg, h = hh - j * hpg;
	int p = h < a.qh ? 0 : h < a.qh + a.kh ? 1 : 2;
	int nh = p ? a.kh : a.qh, lh = h - (p ? a.qh + (p - 1) * a.kh : 0);
	long long prow = (long long)a.groups * nh * a.hd;
	long long prow_p = (long long)a.groups * hpg * a.hd;
	long long off = ((long long)j * nh + lh) * a.hd;
	long long po = (long long)hh * a.hd;
	float *pf = p == 0 ? a.part[0] : p == 1 ? a.part[1] : a.part[2];
	uint16_t *ph = p == 0 ? a.part16[0] : p == 1 ? a.part16[1] :
		       a.part16[2];

	q->i0 = (t - hh * cph) * 8;
	q->turn = p < 2;
	if (MERGE) {
		q->src = pf + off;
		q->sstride = prow;
		q->dst = a.packed ? a.packed + po : NULL;
		q->dst16 = a.packed16 + po;
		q->dstride = prow_p;
	} else {
		q->src = a.packed + po;
		q->sstride = prow_p;
		q->dst = pf ? pf + off : NULL;
		q->dst16 = ph + off;
		q->dstride = prow;
	}
}

/* Row r's 4 chunks of the item: pairs i0 .. i0 + 7, then i0 + half .. */
template <int MERGE>
__device__ __forceinline__ static void qr_load(const struct qr_item<MERGE> &q,
					       int half, long long r,
					       float4 *v)
{
	const float *p = q.src + r * q.sstride + q.i0;

	v[0] = *(const float4 *)p;
	v[1] = *(const float4 *)(p + 4);
	v[2] = *(const float4 *)(p + half);
	v[3] = *(const float4 *)(p + half + 4);
}

/* The cos and sin of the item's pairs i0 .. i0 + 7 from the planes of a
 * position's cos (pc) and sin (ps, -sin for the inverse) of rope_table's
 * (LDG: by __ldg) or of the fallback's shared table: four 16-byte loads
 * into tv (cos, cos, sin, sin). */
template <int LDG>
__device__ __forceinline__ static void qr_cs(const float *pc, const float *ps,
					     int i0, float4 *tv)
{
	const float4 *c = (const float4 *)(pc + i0);
	const float4 *s = (const float4 *)(ps + i0);

	if (LDG) {
		tv[0] = __ldg(c);
		tv[1] = __ldg(c + 1);
		tv[2] = __ldg(s);
		tv[3] = __ldg(s + 1);
	} else {
		tv[0] = c[0];
		tv[1] = c[1];
		tv[2] = s[0];
		tv[3] = s[1];
	}
}

/* The item of row r (v: qr_load's), turned where it is a query or key
 * head by the row's cos and sin tv (qr_cs's), rounded (bf16_keep's bits),
 * stored. */
template <int MERGE>
__device__ __forceinline__ static void qr_store(const struct qr_item<MERGE> &q,
						int half, long long r,
						const float4 *tv,
						const float4 *v)
{
	float *d = q.dst ? q.dst + r * q.dstride + q.i0 : NULL;
	uint16_t *d16 = q.dst16 + r * q.dstride + q.i0;
	float x1[8], x2[8];
	uint4 b1, b2;

	x1[0] = v[0].x; x1[1] = v[0].y; x1[2] = v[0].z; x1[3] = v[0].w;
	x1[4] = v[1].x; x1[5] = v[1].y; x1[6] = v[1].z; x1[7] = v[1].w;
	x2[0] = v[2].x; x2[1] = v[2].y; x2[2] = v[2].z; x2[3] = v[2].w;
	x2[4] = v[3].x; x2[5] = v[3].y; x2[6] = v[3].z; x2[7] = v[3].w;
	if (q.turn) {
		float c[8] = { tv[0].x, tv[0].y, tv[0].z, tv[0].w,
			       tv[1].x, tv[1].y, tv[1].z, tv[1].w };
		float sn[8] = { tv[2].x, tv[2].y, tv[2].z, tv[2].w,
				tv[3].x, tv[3].y, tv[3].z, tv[3].w };

#pragma unroll
		for (int j = 0; j < 8; j++)
			rope_turn(x1[j], x2[j], c[j], sn[j], &x1[j],
				  &x2[j]);
	}
	b1 = bf16_pack8(x1);
	b2 = bf16_pack8(x2);
	*(uint4 *)d16 = b1;
	*(uint4 *)(d16 + half) = b2;
	if (d) {
		unsigned int w1[4] = { b1.x, b1.y, b1.z, b1.w };
		unsigned int w2[4] = { b2.x, b2.y, b2.z, b2.w };

#pragma unroll
		for (int j = 0; j < 4; j++) {
			x1[2 * j] = __uint_as_float(w1[j] << 16);
			x1[2 * j + 1] = __uint_as_float(w1[j] & 0xffff0000u);
			x2[2 * j] = __uint_as_float(w2[j] << 16);
			x2[2 * j + 1] = __uint_as_float(w2[j] & 0xffff0000u);
		}
		store_v<8>(d, x1);
		store_v<8>(d + half, x2);
	}
}

/* Dynamic shared memory: the fallback's table of a row, hd floats (cos,
 * then sin). */
template <int MERGE>
__global__ static void __maxnreg__(QR_REGS)
qkv_rope8_k(struct qkv_rope_args a)
{
	extern __shared__ float cs[];
	int half = a.hd / 2, t = threadIdx.x;
	int on = t < a.groups * (a.qh + 2 * a.kh) * (half / 8);
	struct qr_item<MERGE> q;

	if (on)
		qr_item_init<MERGE>(a, t, &q);
	for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
		float4 v[4], tv[4];
		int32_t p;

		if (on) /* in flight while the row's cos and sin come */
			qr_load<MERGE>(q, half, r, v);
		p = a.pos[r]; /* the same for the whole block */
		if ((unsigned)p < (unsigned)a.tab_len) {
			const float *pc = a.tab + (long long)p * 3 * half;

			if (on && q.turn)
				qr_cs<1>(pc, pc + (1 + MERGE) * half, q.i0,
					 tv);
		} else {
			__syncthreads(); /* the last fallback row's is read */
			for (int i = t; i < half; i += blockDim.x)
				rope_cs(p, i, a.hd, a.theta, MERGE, &cs[i],
					&cs[half + i]);
			__syncthreads();
			if (on && q.turn)
				qr_cs<0>(cs, cs + half, q.i0, tv);
		}
		if (on)
			qr_store<MERGE>(q, half, r, tv, v);
	}
}

template <int MERGE>
static int qkv_rope8_go(struct kern_ctx *k, const struct qkv_rope_args *a,
			int threads)
{
	qkv_rope8_k<MERGE><<<rows_grid(a->rows), (unsigned)threads,
			     (size_t)a->hd * sizeof(float),
			     stream_of(k)>>>(*a);
	LAUNCHCHECK(qkv_rope8_k);
	return 0;
}

/* ---- RoPE's table for the fused passes --------------------------------- */

/* Positions a table holds at least, and its bytes at most (positions past
 * the cap take the fallback): 4096 positions of hd 128 are 3 MB (a pass
 * reads 2 of them), 64 MB holds 87381. Head dims past QR_MAX_HD have no
 * table (their rows would be 6 KB and more). Under context parallelism a
 * rank's rows (micro-batch x local_seq) reach positions up to seq_len - 1
 * (runtime/rt_model.c rt_row_pos), more than the rows: the runtime
 * passes seq_len as pos_end (runtime/rt_train.c qkv_shape), else rows
 * past max(rows, ROPE_TAB_MIN) would take the fallback. */
#ifndef ROPE_TAB_MIN
#define ROPE_TAB_MIN 4096
#endif
#define ROPE_TAB_BYTES (64LL << 20)

/* Row p of the table, three planes of hd / 2 floats: rope_cs's cos of
 * pairs 0 .. hd/2 - 1 at position p, their sin, then their sin negated
 * (rope_cs's inverse, the backward's). The negated plane keeps the turn
 * as it was: a negation in the kernel is folded by NVVM into y1's
 * arithmetic (x1 c - x2 (-s) became fma(x1, c, x2 s) in qkv_rope8_k's
 * PTX), which may round unlike ptxas's contraction of the mul, mul, sub
 * that a loaded -sin leaves (rope_turn). 12 bytes a pair, but a pass
 * reads two planes. */
__global__ static void rope_tab_k(long long n, int hd, double theta,
				  float *tab)
{
	int half = hd / 2;

	GRID_STRIDE(idx, n * half) {
		long long p = idx / half;
		int i = (int)(idx - p * half);
		float *row = tab + p * 3 * half, c, s;

		rope_cs((int32_t)p, i, hd, theta, 0, &c, &s);
		row[i] = c;
		row[half + i] = s;
		row[2 * half + i] = -s;
	}
}

/* The context's table for (theta, hd) covering at least positions 0 ..
 * max(npos, ROPE_TAB_MIN) - 1 (a power of two, within ROPE_TAB_BYTES)
 * into *tab, *len: made at the first call, remade in place (stream
 * order: the passes queued before read the old values) for another theta
 * or hd, grown for more positions. The host does not see pos: npos is
 * the caller's bound on them (kern_qkv's pos_end) or else the rows;
 * rows past the table compute their own (rope_cs). NULL and 0 past
 * QR_MAX_HD. */
static int rope_table(struct kern_ctx *k, double theta, int hd,
		      long long npos, const float **tab, int *len)
{
	struct cuda_impl *c = (struct cuda_impl *)k->impl;
	long long w = 3 * (long long)(hd / 2); /* floats a position */
	long long cap = ROPE_TAB_BYTES / (w * (long long)sizeof(float));
	long long n = ROPE_TAB_MIN;

	*tab = NULL;
	*len = 0;
	if (hd > QR_MAX_HD)
		return 0;
	while (n < npos && n < cap)
		n *= 2;
	n = n < cap ? n : cap;
	if (c->rope_tab && c->rope_hd == hd && c->rope_theta == theta &&
	    c->rope_len >= n) {
		*tab = c->rope_tab;
		*len = c->rope_len;
		return 0;
	}
	if (!c->rope_tab ||
	    (long long)c->rope_len * 3 * (c->rope_hd / 2) < n * w) {
		/* the passes queued before may still read the old one */
		CUDACHECK(cudaStreamSynchronize(c->stream));
		CUDACHECK(cudaFree(c->rope_tab));
		c->rope_tab = NULL;
		c->rope_len = 0;
		CUDACHECK(cudaMalloc(&c->rope_tab, (size_t)(n * w) *
				     sizeof(float)));
	}
	c->rope_len = 0; /* no table until this one is queued */
	rope_tab_k<<<blocks_for(n * (hd / 2)), KERN_CUDA_THREADS, 0,
		     c->stream>>>(n, hd, theta, c->rope_tab);
	LAUNCHCHECK(rope_tab_k);
	c->rope_theta = theta;
	c->rope_hd = hd;
	c->rope_len = (int)n;
	*tab = c->rope_tab;
	*len = c->rope_len;
	return 0;
}

static int aligned16(const void *p)
{
	return (uintptr_t)p % 16 == 0;
}

static int qkv_rope8_run(struct kern_ctx *k, const struct qkv_rope_args *a,
			 int threads)
{
	return a->merge ? qkv_rope8_go<1>(k, a, threads) :
			  qkv_rope8_go<0>(k, a, threads);
}

static int qkv_rope_run(struct kern_ctx *k, const struct kern_qkv *s,
			struct qkv_rope_args *a)
{
	long long hpg = (s->nq + 2 * s->nk) / s->hd, row = s->groups * hpg *
			s->hd;
	int vec = s->hd % 16 == 0 && aligned16(a->packed) &&
		  aligned16(a->packed16);
	long long items, threads;
	size_t smem = (size_t)s->hd * sizeof(float);
	unsigned grid = rows_grid(s->rows);

	if (s->hd > QKV_ROPE_MAX_HD || row > INT_MAX)
		return kern_set_error(KERN_EINVAL, "qkv_rope: head dim %lld or "
				      "row of %lld values too large", s->hd,
				      row);
	for (int i = 0; i < 3; i++)
		vec = vec && aligned16(a->part[i]) && aligned16(a->part16[i]);
	a->rows = s->rows;
	a->groups = (int)s->groups;
	a->qh = (int)(s->nq / s->hd);
	a->kh = (int)(s->nk / s->hd);
	a->hd = (int)s->hd;
	a->theta = s->theta;
	KERN_TRY(rope_table(k, s->theta, a->hd,
			    s->pos_end > s->rows ? s->pos_end : s->rows,
			    &a->tab, &a->tab_len));
	items = row / 2 / (vec ? 8 : 1);
	threads = items < QKV_ROPE_THREADS ? (items + 31) / 32 * 32 :
		  QKV_ROPE_THREADS;
	if (vec && items <= QKV_ROPE_THREADS && s->hd <= QR_MAX_HD)
		return qkv_rope8_run(k, a, (int)threads);
	if (vec)
		qkv_rope_k<8><<<grid, (unsigned)threads, smem,
				stream_of(k)>>>(*a);
	else
		qkv_rope_k<1><<<grid, (unsigned)threads, smem,
				stream_of(k)>>>(*a);
	LAUNCHCHECK(qkv_rope_k);
	return 0;
}

int kern_cuda_qkv_rope_bf(struct kern_ctx *k, const struct kern_qkv *s,
			  const int32_t *pos, const float *packed, float *q,
			  float *kk, float *v, uint16_t *q16, uint16_t *k16,
			  uint16_t *v16)
{
	struct qkv_rope_args a = {};

	a.merge = 0;
	a.pos = pos;
	a.packed = (float *)packed;
	a.part[0] = q;
	a.part[1] = kk;
	a.part[2] = v;
	a.part16[0] = q16;
	a.part16[1] = k16;
	a.part16[2] = v16;
	return qkv_rope_run(k, s, &a);
}

int kern_cuda_qkv_merge_rope_bf(struct kern_ctx *k, const struct kern_qkv *s,
				const int32_t *pos, const float *dq,
				const float *dk, const float *dv, float *packed,
				uint16_t *packed16)
{
	struct qkv_rope_args a = {};

	a.merge = 1;
	a.pos = pos;
	a.packed = packed;
	a.packed16 = packed16;
	a.part[0] = (float *)dq;
	a.part[1] = (float *)dk;
	a.part[2] = (float *)dv;
	return qkv_rope_run(k, s, &a);
}
