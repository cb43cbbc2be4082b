/*
 * kern_flash: FlashAttention-2 forward and backward (kernels/kern_flash.h)
 * with mma.sync m16n8k16 bf16 tensor-core products (kernels/flash_mma.cuh).
 *
 * Forward: a block of 8 warps owns 128 query rows of one head (16 rows a
 * warp) and walks the key tiles of 64 rows that its rows attend; K and V
 * tiles are double-buffered with cp.async; the running max and sum are
 * fp32 per row (online softmax in base 2, scores pre-scaled by log2 e).
 *
 * Backward: a block of 8 warps owns 128 key rows of one key/value head
 * (16 a warp), keeps dK and dV in registers and walks every query tile of
 * 64 rows, of every query head of its group, that attends one of its keys:
 * S^T = K Q^T and dP^T = V dO^T are computed per warp with the keys as
 * rows, so P^T and dS^T are already A fragments for dV += P^T dO and
 * dK += dS^T Q; dS^T goes through shared memory for dQ = dS K, which the
 * 8 warps split (4 row groups x 2 column halves) and add to dq with fp32
 * atomics (FlashAttention-2's scheme). dsum = rowsum(dout * o) comes from a
 * first small kernel.
 *
 * The mask is kpos[s] <= qpos[i]. Each warp classifies a (query tile, key
 * tile) pair from the two tiles' position ranges, without shared memory:
 * skipped (no pair attends), full (every pair does: no per-element test)
 * or partial. Rows past sq or sk are loaded as zeros and masked.
 */
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
#define FL_NT 256 /* threads of every attention block: 8 warps */
#define FWD_BM 128
#define FWD_BN 64
#define BWD_BM 64
#define BWD_BN 128

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

static int fl_cuda_fail(cudaError_t e, const char *what, const char *file,
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

/* ---- forward ------------------------------------------------------------ */

/* The first key tile >= t that some row of the query tile attends. */
static __device__ int fwd_next(const fl_params &p, int t, int lane, int qmin,
			       int qmax, int qall, int *full)
{
	int nkt = (p.sk + FWD_BN - 1) / FWD_BN;

	for (; t < nkt; t++) {
		int mn, mx, all, c;

		fl_range(p.kpos, t * FWD_BN, FWD_BN, p.sk, lane, &mn, &mx, &all);
		c = fl_class(qmin, qmax, qall, mn, mx, all);
		if (c != FL_SKIP) {
			*full = c == FL_FULL;
			return t;
		}
	}
	return nkt;
}

/* s = Q K^T for the warp's 16 rows and the tile's 64 keys. */
template <int D>
static __device__ __forceinline__ void fwd_scores(float s[FWD_BN / 8][4],
						  const fl_bf16 *sQ,
						  const fl_bf16 *sK, int warp,
						  int lane)
{
#pragma unroll
	for (int nt = 0; nt < FWD_BN / 8; nt++)
		s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
	for (int kk = 0; kk < D; kk += 16) {
		uint32_t a[4];

		fl_frag_a<D>(a, sQ, warp * 16, kk, lane);
#pragma unroll
		for (int np = 0; np < FWD_BN / 16; np++) {
			uint32_t b[4];

			fl_frag_b<D>(b, sK, np * 16, kk, lane);
			fl_mma(s[2 * np], a, b[0], b[1]);
			fl_mma(s[2 * np + 1], a, b[2], b[3]);
		}
	}
}

/* Scale into base 2; on a partial tile, -inf where kpos > qpos. */
static __device__ __forceinline__ void fwd_mask(float s[FWD_BN / 8][4],
						const fl_params &p, int k0,
						int lane, int qp0, int qp1,
						int full)
{
#pragma unroll
	for (int nt = 0; nt < FWD_BN / 8; nt++) {
#pragma unroll
		for (int j = 0; j < 2; j++) {
			int col = k0 + nt * 8 + (lane & 3) * 2 + j;
			int kp = full ? INT_MIN :
				 col < p.sk ? fl_pos(p.kpos, col) : INT_MAX;

			s[nt][j] = kp <= qp0 ? s[nt][j] * p.scale_log2 :
					       -INFINITY;
			s[nt][2 + j] = kp <= qp1 ?
					       s[nt][2 + j] * p.scale_log2 :
					       -INFINITY;
		}
	}
}

/* Online softmax: new row max m, rescale l and acc, s becomes exp2(s - m).
 * A row with no attended key so far keeps m = -inf and subtracts 0. */
template <int D>
static __device__ __forceinline__ void fwd_softmax(float s[FWD_BN / 8][4],
						   float acc[D / 8][4],
						   float m[2], float l[2])
{
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float mx = m[r], base, corr;

#pragma unroll
		for (int nt = 0; nt < FWD_BN / 8; nt++)
			mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
		base = mx == -INFINITY ? 0.0f : mx;
		corr = fl_exp2(m[r] - base);
		m[r] = mx;
		l[r] *= corr;
#pragma unroll
		for (int dt = 0; dt < D / 8; dt++) {
			acc[dt][2 * r] *= corr;
			acc[dt][2 * r + 1] *= corr;
		}
#pragma unroll
		for (int nt = 0; nt < FWD_BN / 8; nt++) {
			s[nt][2 * r] = fl_exp2(s[nt][2 * r] - base);
			s[nt][2 * r + 1] = fl_exp2(s[nt][2 * r + 1] - base);
			l[r] += s[nt][2 * r] + s[nt][2 * r + 1];
		}
	}
}

/* acc += P V, P taken from the score registers as bf16. */
template <int D>
static __device__ __forceinline__ void fwd_pv(const float s[FWD_BN / 8][4],
					      float acc[D / 8][4],
					      const fl_bf16 *sV, int lane)
{
#pragma unroll
	for (int j = 0; j < FWD_BN / 16; j++) {
		uint32_t a[4];

		fl_acc_to_a(a, s[2 * j], s[2 * j + 1]);
#pragma unroll
		for (int dp = 0; dp < D / 16; dp++) {
			uint32_t b[4];

			fl_frag_b_t<D>(b, sV, dp * 16, j * 16, lane);
			fl_mma(acc[2 * dp], a, b[0], b[1]);
			fl_mma(acc[2 * dp + 1], a, b[2], b[3]);
		}
	}
}

template <int D>
static __device__ __forceinline__ void fwd_store(const fl_params &p,
						 float acc[D / 8][4],
						 const float m[2], float l[2],
						 int b, int h, int r0, int lane)
{
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float sum = l[r], inv;
		int row = r0 + 8 * r;
		fl_bf16 *go;

		sum += __shfl_xor_sync(0xffffffffu, sum, 1);
		sum += __shfl_xor_sync(0xffffffffu, sum, 2);
		if (row >= p.sq)
			continue;
		inv = sum > 0.0f ? 1.0f / sum : 0.0f;
		go = p.out + (((long long)b * p.sq + row) * p.nh + h) * D +
		     (lane & 3) * 2;
#pragma unroll
		for (int dt = 0; dt < D / 8; dt++)
			*(uint32_t *)(go + dt * 8) = fl_pack(
				acc[dt][2 * r] * inv, acc[dt][2 * r + 1] * inv);
		if ((lane & 3) == 0)
			p.lse[((long long)b * p.nh + h) * p.sq + row] =
				sum > 0.0f ? (m[r] + log2f(sum)) * FL_LN2 :
					     -INFINITY;
	}
}

/* Grid: (query tiles, nh, batch); the last query tiles, which attend the
 * most keys under a causal mask, start first. */
template <int D>
__global__ void __launch_bounds__(FL_NT, 1) fl_fwd_kernel(const fl_params p)
{
	extern __shared__ __align__(128) unsigned char fl_sm[];
	fl_bf16 *sQ = (fl_bf16 *)fl_sm, *sK = sQ + FWD_BM * D,
		*sV = sK + 2 * FWD_BN * D;
	int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	int h = blockIdx.y, b = blockIdx.z, kvh = h / (p.nh / p.nkv);
	int q0 = (gridDim.x - 1 - blockIdx.x) * FWD_BM;
	int r0 = q0 + warp * 16 + (lane >> 2), nkt = (p.sk + FWD_BN - 1) / FWD_BN;
	int qp0 = r0 < p.sq ? fl_pos(p.qpos, r0) : INT_MIN;
	int qp1 = r0 + 8 < p.sq ? fl_pos(p.qpos, r0 + 8) : INT_MIN;
	long long ldq = (long long)p.nh * D, ldk = (long long)p.nkv * D;
	long long koff = ((long long)b * p.sk * p.nkv + kvh) * D;
	const fl_bf16 *gk = p.k + koff, *gv = p.v + koff;
	float acc[D / 8][4], m[2] = { -INFINITY, -INFINITY }, l[2] = { 0, 0 };
	int qmin, qmax, qall, full, t;

#pragma unroll
	for (int dt = 0; dt < D / 8; dt++)
		acc[dt][0] = acc[dt][1] = acc[dt][2] = acc[dt][3] = 0.0f;
	fl_range(p.qpos, q0, FWD_BM, p.sq, lane, &qmin, &qmax, &qall);
	t = fwd_next(p, 0, lane, qmin, qmax, qall, &full);
	if (t < nkt) {
		fl_load_tile<FWD_BM, D, FL_NT>(
			sQ, p.q + ((long long)b * p.sq * p.nh + h) * D, ldq, q0,
			p.sq, tid);
		fl_load_tile<FWD_BN, D, FL_NT>(sK, gk, ldk, t * FWD_BN, p.sk, tid);
		fl_load_tile<FWD_BN, D, FL_NT>(sV, gv, ldk, t * FWD_BN, p.sk, tid);
		fl_commit();
	}
	for (int buf = 0; t < nkt; buf ^= 1) {
		float s[FWD_BN / 8][4];
		int fulln, tn = fwd_next(p, t + 1, lane, qmin, qmax, qall, &fulln);

		if (tn < nkt) {
			fl_load_tile<FWD_BN, D, FL_NT>(sK + (buf ^ 1) * FWD_BN * D,
						       gk, ldk, tn * FWD_BN, p.sk, tid);
			fl_load_tile<FWD_BN, D, FL_NT>(sV + (buf ^ 1) * FWD_BN * D,
						       gv, ldk, tn * FWD_BN, p.sk, tid);
		}
		fl_commit();
		fl_wait<1>();
		__syncthreads();
		fwd_scores<D>(s, sQ, sK + buf * FWD_BN * D, warp, lane);
		fwd_mask(s, p, t * FWD_BN, lane, qp0, qp1, full);
		fwd_softmax<D>(s, acc, m, l);
		fwd_pv<D>(s, acc, sV + buf * FWD_BN * D, lane);
		__syncthreads();
		t = tn;
		full = fulln;
	}
	fwd_store<D>(p, acc, m, l, b, h, r0, lane);
}

/* ---- backward ----------------------------------------------------------- */

/* dsum[b, h, i] = sum_d dout * o: one warp per row of o. */
template <int D>
__global__ void fl_dsum_kernel(const fl_params p, long long rows)
{
	long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	int lane = threadIdx.x & 31;
	float acc = 0.0f;

	if (w >= rows)
		return;
	for (int i = lane * 2; i < D; i += 64) {
		float2 o = __bfloat1622float2(
			*(const __nv_bfloat162 *)(p.o + w * D + i));
		float2 d = __bfloat1622float2(
			*(const __nv_bfloat162 *)(p.dout + w * D + i));

		acc += o.x * d.x + o.y * d.y;
	}
#pragma unroll
	for (int off = 16; off; off >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, off);
	if (lane == 0) {
		long long bi = w / p.nh, h = w % p.nh;
		long long b = bi / p.sq, i = bi % p.sq;

		p.dsum[(b * p.nh + h) * p.sq + i] = acc;
	}
}

/* The next work item >= it (item = head of the group * nqt + query tile)
 * whose query tile attends one of the block's keys. */
static __device__ int bwd_next(const fl_params &p, int it, int lane, int kmin,
			       int kmax, int kall, int *full)
{
	int nqt = (p.sq + BWD_BM - 1) / BWD_BM, nit = nqt * (p.nh / p.nkv);

	for (; it < nit; it++) {
		int mn, mx, all, c;

		fl_range(p.qpos, (it % nqt) * BWD_BM, BWD_BM, p.sq, lane, &mn,
			 &mx, &all);
		c = fl_class(mn, mx, all, kmin, kmax, kall);
		if (c != FL_SKIP) {
			*full = c == FL_FULL;
			return it;
		}
	}
	return nit;
}

/* One query row's statistics: lse in base 2 (+inf where the row attends
 * nothing or is past sq, so that exp2(s - lse) = 0), dsum and qpos. */
static __device__ __forceinline__ void bwd_row(const fl_params &p, int b,
					       int h, int row, float *l2,
					       float *ds, int *qp)
{
	long long i = ((long long)b * p.nh + h) * p.sq + row;
	float lse;

	if (row >= p.sq) {
		*l2 = INFINITY;
		*ds = 0.0f;
		*qp = INT_MIN;
		return;
	}
	lse = p.lse_in[i];
	*l2 = lse == -INFINITY ? INFINITY : lse * FL_LOG2E;
	*ds = p.dsum[i];
	*qp = fl_pos(p.qpos, row);
}

struct bwd_smem {
	fl_bf16 *k, *v, *q, *o, *s;
	float *l2, *ds;
	int *qp;
};

/* out[16 keys x 64 queries] = X_w Y^T for the warp's 16 rows of X (K or V)
 * and the query tile's rows of Y (Q or dO). */
template <int D>
static __device__ __forceinline__ void bwd_rows_t(float out[BWD_BM / 8][4],
						  const fl_bf16 *sX,
						  const fl_bf16 *sY, int warp,
						  int lane)
{
#pragma unroll
	for (int nt = 0; nt < BWD_BM / 8; nt++)
		out[nt][0] = out[nt][1] = out[nt][2] = out[nt][3] = 0.0f;
#pragma unroll
	for (int kk = 0; kk < D; kk += 16) {
		uint32_t a[4];

		fl_frag_a<D>(a, sX, warp * 16, kk, lane);
#pragma unroll
		for (int np = 0; np < BWD_BM / 16; np++) {
			uint32_t b[4];

			fl_frag_b<D>(b, sY, np * 16, kk, lane);
			fl_mma(out[2 * np], a, b[0], b[1]);
			fl_mma(out[2 * np + 1], a, b[2], b[3]);
		}
	}
}

/* acc[16 keys x D] += X^T Y, X^T (16 keys x 64 queries) in registers, Y
 * the query tile (Q or dO) in shared memory. */
template <int D>
static __device__ __forceinline__ void bwd_acc(float acc[D / 8][4],
					       const float x[BWD_BM / 8][4],
					       const fl_bf16 *sY, int lane)
{
#pragma unroll
	for (int j = 0; j < BWD_BM / 16; j++) {
		uint32_t a[4];

		fl_acc_to_a(a, x[2 * j], x[2 * j + 1]);
#pragma unroll
		for (int dp = 0; dp < D / 16; dp++) {
			uint32_t b[4];

			fl_frag_b_t<D>(b, sY, dp * 16, j * 16, lane);
			fl_mma(acc[2 * dp], a, b[0], b[1]);
			fl_mma(acc[2 * dp + 1], a, b[2], b[3]);
		}
	}
}

/* P^T = exp2(scale_log2 s - lse2), 0 where masked; then
 * dS^T = P^T (dP^T - dsum) into dp. */
static __device__ __forceinline__ void bwd_softmax(const fl_params &p,
						   float pt[BWD_BM / 8][4],
						   float dp[BWD_BM / 8][4],
						   const bwd_smem &sm, int full,
						   int kp0, int kp1, int lane)
{
#pragma unroll
	for (int nt = 0; nt < BWD_BM / 8; nt++) {
#pragma unroll
		for (int j = 0; j < 2; j++) {
			int col = nt * 8 + (lane & 3) * 2 + j, qp = sm.qp[col];
			float l2 = sm.l2[col], ds = sm.ds[col];
			float p0 = fl_exp2(pt[nt][j] * p.scale_log2 - l2);
			float p1 = fl_exp2(pt[nt][2 + j] * p.scale_log2 - l2);

			if (!full && kp0 > qp)
				p0 = 0.0f;
			if (!full && kp1 > qp)
				p1 = 0.0f;
			pt[nt][j] = p0;
			pt[nt][2 + j] = p1;
			dp[nt][j] = p0 * (dp[nt][j] - ds);
			dp[nt][2 + j] = p1 * (dp[nt][2 + j] - ds);
		}
	}
}

/* dq[rows of the tile] += scale dS K: warp w takes query rows
 * 16 (w % 4) .. + 16 and columns (w / 4) D/2 .. + D/2. */
template <int D>
static __device__ __forceinline__ void bwd_dq(const fl_params &p,
					      const bwd_smem &sm, int b, int h,
					      int q0, int warp, int lane)
{
	int qg = warp & 3, dh = warp >> 2;
	float acc[D / 16][4];

#pragma unroll
	for (int nt = 0; nt < D / 16; nt++)
		acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#pragma unroll
	for (int kc = 0; kc < BWD_BN; kc += 16) {
		uint32_t a[4];

		fl_frag_a_t<BWD_BM>(a, sm.s, qg * 16, kc, lane);
#pragma unroll
		for (int dp = 0; dp < D / 32; dp++) {
			uint32_t bb[4];

			fl_frag_b_t<D>(bb, sm.k, dh * (D / 2) + dp * 16, kc, lane);
			fl_mma(acc[2 * dp], a, bb[0], bb[1]);
			fl_mma(acc[2 * dp + 1], a, bb[2], bb[3]);
		}
	}
#pragma unroll
	for (int r = 0; r < 2; r++) {
		int row = q0 + qg * 16 + (lane >> 2) + 8 * r;
		float *g;

		if (row >= p.sq)
			continue;
		g = p.dq + (((long long)b * p.sq + row) * p.nh + h) * D +
		    dh * (D / 2) + (lane & 3) * 2;
#pragma unroll
		for (int nt = 0; nt < D / 16; nt++)
			atomicAdd((float2 *)(g + nt * 8),
				  make_float2(p.scale * acc[nt][2 * r],
					      p.scale * acc[nt][2 * r + 1]));
	}
}

/* One query tile against the block's keys: dv, dk in registers, dq by
 * atomics. sm.q, sm.o, sm.l2, sm.ds, sm.qp point at the current buffer. */
template <int D>
static __device__ __forceinline__ void bwd_item(const fl_params &p,
						const bwd_smem &sm,
						float dk[D / 8][4],
						float dv[D / 8][4], int full,
						int kp0, int kp1, int b, int h,
						int q0, int warp, int lane)
{
	float pt[BWD_BM / 8][4], dp[BWD_BM / 8][4];

	bwd_rows_t<D>(pt, sm.k, sm.q, warp, lane);
	bwd_rows_t<D>(dp, sm.v, sm.o, warp, lane);
	bwd_softmax(p, pt, dp, sm, full, kp0, kp1, lane);
	bwd_acc<D>(dv, pt, sm.o, lane);
	bwd_acc<D>(dk, dp, sm.q, lane);
#pragma unroll
	for (int nt = 0; nt < BWD_BM / 8; nt++) {
#pragma unroll
		for (int r = 0; r < 2; r++) {
			int row = warp * 16 + (lane >> 2) + 8 * r;

			*(uint32_t *)(sm.s + fl_off<BWD_BM>(row, nt) +
				      (lane & 3) * 2) =
				fl_pack(dp[nt][2 * r], dp[nt][2 * r + 1]);
		}
	}
	__syncthreads();
	bwd_dq<D>(p, sm, b, h, q0, warp, lane);
}

/* dk += scale acc_k, dv += acc_v for the warp's rows (the block owns them:
 * no other block writes these rows in this launch). */
template <int D>
static __device__ __forceinline__ void bwd_store(const fl_params &p,
						 float dk[D / 8][4],
						 float dv[D / 8][4], int b,
						 int g, int kr, int lane)
{
#pragma unroll
	for (int r = 0; r < 2; r++) {
		int row = kr + 8 * r;
		long long off;

		if (row >= p.sk)
			continue;
		off = (((long long)b * p.sk + row) * p.nkv + g) * D + (lane & 3) * 2;
#pragma unroll
		for (int dt = 0; dt < D / 8; dt++) {
			float2 *xk = (float2 *)(p.dk + off + dt * 8);
			float2 *xv = (float2 *)(p.dv + off + dt * 8);
			float2 vk = *xk, vv = *xv;

			vk.x += p.scale * dk[dt][2 * r];
			vk.y += p.scale * dk[dt][2 * r + 1];
			vv.x += dv[dt][2 * r];
			vv.y += dv[dt][2 * r + 1];
			*xk = vk;
			*xv = vv;
		}
	}
}

/* Query and dout tiles of item `it` (cp.async) into buffer `buf`. */
template <int D>
static __device__ __forceinline__ void bwd_load(const fl_params &p,
						fl_bf16 *sq_base,
						fl_bf16 *so_base, int it,
						int b, int g, int tid)
{
	int nqt = (p.sq + BWD_BM - 1) / BWD_BM;
	int h = g * (p.nh / p.nkv) + it / nqt;
	long long off = ((long long)b * p.sq * p.nh + h) * D;
	long long ld = (long long)p.nh * D;

	fl_load_tile<BWD_BM, D, FL_NT>(sq_base, p.q + off, ld,
				       (it % nqt) * BWD_BM, p.sq, tid);
	fl_load_tile<BWD_BM, D, FL_NT>(so_base, p.dout + off, ld,
				       (it % nqt) * BWD_BM, p.sq, tid);
}

static __device__ __forceinline__ void bwd_smem_at(bwd_smem *sm,
						   unsigned char *base, int D,
						   int buf)
{
	fl_bf16 *t = (fl_bf16 *)base;

	sm->k = t;
	sm->v = t + BWD_BN * D;
	sm->q = t + 2 * BWD_BN * D + buf * BWD_BM * D;
	sm->o = t + 2 * BWD_BN * D + 2 * BWD_BM * D + buf * BWD_BM * D;
	sm->s = t + 2 * BWD_BN * D + 4 * BWD_BM * D;
	sm->l2 = (float *)(sm->s + BWD_BN * BWD_BM) + buf * BWD_BM;
	sm->ds = (float *)(sm->s + BWD_BN * BWD_BM) + (2 + buf) * BWD_BM;
	sm->qp = (int *)(sm->s + BWD_BN * BWD_BM) + (4 + buf) * BWD_BM;
}

/* Grid: (key tiles, nkv, batch); the first key tiles, attended by the most
 * queries under a causal mask, start first. */
template <int D>
__global__ void __launch_bounds__(FL_NT, 1) fl_bwd_kernel(const fl_params p)
{
	extern __shared__ __align__(128) unsigned char fl_sm[];
	int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	int g = blockIdx.y, b = blockIdx.z, k0 = blockIdx.x * BWD_BN;
	int nqt = (p.sq + BWD_BM - 1) / BWD_BM, grp = p.nh / p.nkv;
	int nit = nqt * grp, kr = k0 + warp * 16 + (lane >> 2);
	int kp0 = kr < p.sk ? fl_pos(p.kpos, kr) : INT_MAX;
	int kp1 = kr + 8 < p.sk ? fl_pos(p.kpos, kr + 8) : INT_MAX;
	long long koff = ((long long)b * p.sk * p.nkv + g) * D;
	float dk[D / 8][4], dv[D / 8][4];
	int kmin, kmax, kall, full, it;
	bwd_smem sm;

	fl_range(p.kpos, k0, BWD_BN, p.sk, lane, &kmin, &kmax, &kall);
	it = bwd_next(p, 0, lane, kmin, kmax, kall, &full);
	if (it >= nit)
		return;
#pragma unroll
	for (int dt = 0; dt < D / 8; dt++) {
		dk[dt][0] = dk[dt][1] = dk[dt][2] = dk[dt][3] = 0.0f;
		dv[dt][0] = dv[dt][1] = dv[dt][2] = dv[dt][3] = 0.0f;
	}
	bwd_smem_at(&sm, fl_sm, D, 0);
	fl_load_tile<BWD_BN, D, FL_NT>(sm.k, p.k + koff, (long long)p.nkv * D,
				       k0, p.sk, tid);
	fl_load_tile<BWD_BN, D, FL_NT>(sm.v, p.v + koff, (long long)p.nkv * D,
				       k0, p.sk, tid);
	bwd_load<D>(p, sm.q, sm.o, it, b, g, tid);
	fl_commit();
	if (tid < BWD_BM)
		bwd_row(p, b, g * grp + it / nqt, (it % nqt) * BWD_BM + tid,
			&sm.l2[tid], &sm.ds[tid], &sm.qp[tid]);
	for (int buf = 0; it < nit; buf ^= 1) {
		int fulln, itn = bwd_next(p, it + 1, lane, kmin, kmax, kall, &fulln);
		float nl2 = 0.0f, nds = 0.0f;
		int nqp = 0;
		bwd_smem nx;

		bwd_smem_at(&sm, fl_sm, D, buf);
		bwd_smem_at(&nx, fl_sm, D, buf ^ 1);
		if (itn < nit) {
			bwd_load<D>(p, nx.q, nx.o, itn, b, g, tid);
			if (tid < BWD_BM)
				bwd_row(p, b, g * grp + itn / nqt,
					(itn % nqt) * BWD_BM + tid, &nl2, &nds,
					&nqp);
		}
		fl_commit();
		fl_wait<1>();
		__syncthreads();
		bwd_item<D>(p, sm, dk, dv, full, kp0, kp1, b, g * grp + it / nqt,
			    (it % nqt) * BWD_BM, warp, lane);
		if (itn < nit && tid < BWD_BM) {
			nx.l2[tid] = nl2;
			nx.ds[tid] = nds;
			nx.qp[tid] = nqp;
		}
		__syncthreads();
		it = itn;
		full = fulln;
	}
	bwd_store<D>(p, dk, dv, b, g, kr, lane);
}

/* ---- host side ---------------------------------------------------------- */

static int fl_check(const struct kern_attn *a, const char *who)
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

static fl_params fl_make(const struct kern_attn *a)
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

template <int D>
static int fl_fwd_launch(const fl_params &p, cudaStream_t st)
{
	size_t smem = (size_t)(FWD_BM + 4 * FWD_BN) * D * sizeof(fl_bf16);
	dim3 grid((p.sq + FWD_BM - 1) / FWD_BM, p.nh, p.batch);

	FL_CHECK(cudaFuncSetAttribute(fl_fwd_kernel<D>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_fwd_kernel<D><<<grid, FL_NT, smem, st>>>(p);
	FL_CHECK(cudaGetLastError());
	return 0;
}

template <int D>
static int fl_bwd_launch(const fl_params &p, cudaStream_t st)
{
	size_t smem = (size_t)(2 * BWD_BN + 4 * BWD_BM) * D * sizeof(fl_bf16) +
		      (size_t)BWD_BN * BWD_BM * sizeof(fl_bf16) +
		      6 * BWD_BM * sizeof(float);
	long long rows = (long long)p.batch * p.sq * p.nh;
	dim3 grid((p.sk + BWD_BN - 1) / BWD_BN, p.nkv, p.batch);

	fl_dsum_kernel<D><<<(unsigned)((rows + 7) / 8), 256, 0, st>>>(p, rows);
	FL_CHECK(cudaGetLastError());
	FL_CHECK(cudaFuncSetAttribute(fl_bwd_kernel<D>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_bwd_kernel<D><<<grid, FL_NT, smem, st>>>(p);
	FL_CHECK(cudaGetLastError());
	return 0;
}

extern "C" int kern_flash_fwd(void *stream, const struct kern_attn *a,
			      const uint16_t *q, const uint16_t *k,
			      const uint16_t *v, const int32_t *qpos,
			      const int32_t *kpos, uint16_t *o, float *lse)
{
	int rc = fl_check(a, "kern_flash_fwd");
	fl_params p;

	if (rc)
		return rc;
	if (!q || !k || !v || !o || !lse) {
		fprintf(stderr, "kern_flash: kern_flash_fwd: NULL tensor\n");
		return KERN_EINVAL;
	}
	if (a->sq == 0)
		return 0;
	p = fl_make(a);
	p.q = (const fl_bf16 *)q;
	p.k = (const fl_bf16 *)k;
	p.v = (const fl_bf16 *)v;
	p.out = (fl_bf16 *)o;
	p.lse = lse;
	p.qpos = qpos;
	p.kpos = kpos;
	return a->hd == 64 ? fl_fwd_launch<64>(p, (cudaStream_t)stream) :
			     fl_fwd_launch<128>(p, (cudaStream_t)stream);
}

extern "C" int kern_flash_bwd(void *stream, const struct kern_attn *a,
			      const uint16_t *q, const uint16_t *k,
			      const uint16_t *v, const uint16_t *o,
			      const float *lse, const uint16_t *dout,
			      const int32_t *qpos, const int32_t *kpos,
			      float *dsum, float *dq, float *dk, float *dv)
{
	int rc = fl_check(a, "kern_flash_bwd");
	fl_params p;

	if (rc)
		return rc;
	if (!q || !k || !v || !o || !lse || !dout || !dsum || !dq || !dk ||
	    !dv) {
		fprintf(stderr, "kern_flash: kern_flash_bwd: NULL tensor\n");
		return KERN_EINVAL;
	}
	if (a->sq == 0 || a->sk == 0)
		return 0;
	p = fl_make(a);
	p.q = (const fl_bf16 *)q;
	p.k = (const fl_bf16 *)k;
	p.v = (const fl_bf16 *)v;
	p.o = (const fl_bf16 *)o;
	p.dout = (const fl_bf16 *)dout;
	p.lse_in = lse;
	p.dsum = dsum;
	p.dq = dq;
	p.dk = dk;
	p.dv = dv;
	p.qpos = qpos;
	p.kpos = kpos;
	return a->hd == 64 ? fl_bwd_launch<64>(p, (cudaStream_t)stream) :
			     fl_bwd_launch<128>(p, (cudaStream_t)stream);
}
