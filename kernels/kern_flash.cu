/*
 * kern_flash: FlashAttention-2 forward and backward (kernels/kern_flash.h)
 * with mma.sync m16n8k16 bf16 tensor-core products (kernels/flash_mma.cuh).
 *
 * Forward (this file): a block of 4 warps owns 128 query rows of one head
 * (32 rows a warp, so that each K and V fragment read from shared memory
 * feeds two row tiles' products) and walks the key tiles of 64 rows that
 * its rows attend; K and V tiles are double-buffered with cp.async; the
 * running max and sum are fp32 per row (online softmax in base 2, scores
 * pre-scaled by log2 e; the steps shared with the wgmma forward are in
 * kernels/flash_fwd.cuh). kern_flash_fwd, at the end of this file, picks
 * between this forward and kernels/kern_flash_wg.cu's (GTPLAN_FLASH,
 * FLASH_WG_DEFAULT: kernels/kern_flash.h).
 *
 * Backward (kernels/kern_flash_bwd.cu): a block of BWD_NW warps owns
 * 16 BWD_NW key rows of one key/value head (16 a warp), keeps dK and dV in
 * registers and walks every query tile of 64 rows, of every query head of
 * its group, that attends one of its keys: S^T = K Q^T and dP^T = V dO^T
 * are computed per warp with the keys as rows, so P^T and dS^T are already
 * A fragments for dV += P^T dO and dK += dS^T Q; dS^T goes through shared
 * memory for dQ = dS K, which the warps split (4 row groups x BWD_NW / 4
 * column blocks) and add to dq with fp32 atomics (FlashAttention-2's
 * scheme). dsum = rowsum(dout * o) comes from a first small kernel.
 *
 * The mask is kpos[s] <= qpos[i]. Each warp classifies a (query tile, key
 * tile) pair from the two tiles' position ranges, without shared memory:
 * skipped (no pair attends), full (every pair does: no per-element test)
 * or partial. Rows past sq or sk are loaded as zeros and masked.
 */
#include <stdlib.h>
#include <string.h>

#include "flash_fwd.cuh"

#define FWD_MT 2 /* row tiles of 16 per forward warp */
#ifndef FWD_NT
#define FWD_NT 128
#endif
#define FWD_BM (16 * FWD_MT * FWD_NT / 32)
#ifndef FWD_BN
#define FWD_BN 64
#endif

/* ---- forward ------------------------------------------------------------ */

/* s = Q K^T for the warp's FWD_MT x 16 rows and the tile's 64 keys: each
 * K fragment read from shared memory serves FWD_MT row tiles. */
template <int D>
static __device__ __forceinline__ void
fwd_scores(float s[FWD_MT][FWD_BN / 8][4], const fl_bf16 *sQ,
	   const fl_bf16 *sK, int warp, int lane)
{
#pragma unroll
	for (int mt = 0; mt < FWD_MT; mt++)
#pragma unroll
		for (int nt = 0; nt < FWD_BN / 8; nt++)
			s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] =
				s[mt][nt][3] = 0.0f;
#pragma unroll
	for (int kk = 0; kk < D; kk += 16) {
		uint32_t a[FWD_MT][4];

#pragma unroll
		for (int mt = 0; mt < FWD_MT; mt++)
			fl_frag_a<D>(a[mt], sQ, (warp * FWD_MT + mt) * 16, kk, lane);
#pragma unroll
		for (int np = 0; np < FWD_BN / 16; np++) {
			uint32_t b[4];

			fl_frag_b<D>(b, sK, np * 16, kk, lane);
#pragma unroll
			for (int mt = 0; mt < FWD_MT; mt++) {
				fl_mma(s[mt][2 * np], a[mt], b[0], b[1]);
				fl_mma(s[mt][2 * np + 1], a[mt], b[2], b[3]);
			}
		}
	}
}

/* acc += P V, P taken from the score registers as bf16; each V fragment
 * serves FWD_MT row tiles. */
template <int D>
static __device__ __forceinline__ void
fwd_pv(const float s[FWD_MT][FWD_BN / 8][4], float acc[FWD_MT][D / 8][4],
       const fl_bf16 *sV, int lane)
{
#pragma unroll
	for (int j = 0; j < FWD_BN / 16; j++) {
		uint32_t a[FWD_MT][4];

#pragma unroll
		for (int mt = 0; mt < FWD_MT; mt++)
			fl_acc_to_a(a[mt], s[mt][2 * j], s[mt][2 * j + 1]);
#pragma unroll
		for (int dp = 0; dp < D / 16; dp++) {
			uint32_t b[4];

			fl_frag_b_t<D>(b, sV, dp * 16, j * 16, lane);
#pragma unroll
			for (int mt = 0; mt < FWD_MT; mt++) {
				fl_mma(acc[mt][2 * dp], a[mt], b[0], b[1]);
				fl_mma(acc[mt][2 * dp + 1], a[mt], b[2], b[3]);
			}
		}
	}
}

/* K and V tile t into buffer buf. */
template <int D>
static __device__ __forceinline__ void fwd_load_kv(const fl_params &p,
						   fl_bf16 *sK, fl_bf16 *sV,
						   const fl_bf16 *gk,
						   const fl_bf16 *gv, int t,
						   int buf, int tid)
{
	long long ldk = (long long)p.nkv * D;

	fl_load_tile<FWD_BN, D, FWD_NT>(sK + buf * FWD_BN * D, gk, ldk,
					t * FWD_BN, p.sk, tid);
	fl_load_tile<FWD_BN, D, FWD_NT>(sV + buf * FWD_BN * D, gv, ldk,
					t * FWD_BN, p.sk, tid);
}

/* Grid: (query tiles, nh, batch); the last query tiles, which attend the
 * most keys under a causal mask, start first. Warp w owns query rows
 * 16 (FWD_MT w + mt) + 0..15 of the tile for mt < FWD_MT. */
template <int D>
__global__ void __launch_bounds__(FWD_NT, 256 / FWD_NT)
fl_fwd_kernel(const fl_params p)
{
	extern __shared__ __align__(128) unsigned char fl_sm[];
	fl_bf16 *sQ = (fl_bf16 *)fl_sm, *sK = sQ + FWD_BM * D,
		*sV = sK + 2 * FWD_BN * D;
	unsigned char *cls = (unsigned char *)(sV + 2 * FWD_BN * D);
	int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	int h = blockIdx.y, b = blockIdx.z, kvh = h / (p.nh / p.nkv);
	int q0 = (gridDim.x - 1 - blockIdx.x) * FWD_BM;
	int r0 = q0 + warp * 16 * FWD_MT + (lane >> 2);
	int nkt = (p.sk + FWD_BN - 1) / FWD_BN;
	long long koff = ((long long)b * p.sk * p.nkv + kvh) * D;
	const fl_bf16 *gk = p.k + koff, *gv = p.v + koff;
	float acc[FWD_MT][D / 8][4], m[FWD_MT][2], l[FWD_MT][2];
	int qp[FWD_MT][2], qmin, qmax, qall, full, t;

#pragma unroll
	for (int mt = 0; mt < FWD_MT; mt++) {
#pragma unroll
		for (int r = 0; r < 2; r++) {
			int row = r0 + mt * 16 + 8 * r;

			qp[mt][r] = row < p.sq ? fl_pos(p.qpos, row) : INT_MIN;
			m[mt][r] = -INFINITY;
			l[mt][r] = 0.0f;
		}
#pragma unroll
		for (int dt = 0; dt < D / 8; dt++)
			acc[mt][dt][0] = acc[mt][dt][1] = acc[mt][dt][2] =
				acc[mt][dt][3] = 0.0f;
	}
	fl_range(p.qpos, q0, FWD_BM, p.sq, lane, &qmin, &qmax, &qall);
	fl_classify(p.kpos, p.sk, FWD_BN, qmin, qmax, qall, 1, cls, tid, FWD_NT);
	__syncthreads();
	t = fl_next(cls, 0, nkt, nkt, &full);
	if (t < nkt) {
		fl_load_tile<FWD_BM, D, FWD_NT>(
			sQ, p.q + ((long long)b * p.sq * p.nh + h) * D,
			(long long)p.nh * D, q0, p.sq, tid);
		fwd_load_kv<D>(p, sK, sV, gk, gv, t, 0, tid);
		fl_commit();
	}
	for (int buf = 0; t < nkt; buf ^= 1) {
		float s[FWD_MT][FWD_BN / 8][4];
		int fulln, tn = fl_next(cls, t + 1, nkt, nkt, &fulln);

		if (tn < nkt)
			fwd_load_kv<D>(p, sK, sV, gk, gv, tn, buf ^ 1, tid);
		fl_commit();
		fl_wait<1>();
		__syncthreads();
		fwd_scores<D>(s, sQ, sK + buf * FWD_BN * D, warp, lane);
#pragma unroll
		for (int mt = 0; mt < FWD_MT; mt++) {
			fl_fwd_mask<FWD_BN>(s[mt], p, t * FWD_BN, lane, qp[mt],
					    full);
			fl_fwd_softmax<FWD_BN, D>(s[mt], acc[mt], m[mt], l[mt]);
		}
		fwd_pv<D>(s, acc, sV + buf * FWD_BN * D, lane);
		__syncthreads();
		t = tn;
		full = fulln;
	}
#pragma unroll
	for (int mt = 0; mt < FWD_MT; mt++)
		fl_fwd_store<D>(p, acc[mt], m[mt], l[mt], b, h, r0 + mt * 16,
				lane);
}

/* ---- host side ---------------------------------------------------------- */

template <int D>
static int fl_fwd_launch(const fl_params &p, cudaStream_t st)
{
	size_t smem = (size_t)(FWD_BM + 4 * FWD_BN) * D * sizeof(fl_bf16) +
		      fl_cls_bytes(p.sk, FWD_BN);
	dim3 grid((p.sq + FWD_BM - 1) / FWD_BM, p.nh, p.batch);

	CUDACHECK(cudaFuncSetAttribute(fl_fwd_kernel<D>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_fwd_kernel<D><<<grid, FWD_NT, smem, st>>>(p);
	CUDACHECK(cudaGetLastError());
	return 0;
}
/* The forward kern_flash_fwd runs unless GTPLAN_FLASH names another
 * (fl_pick): enum kern_flash_kind's number, 3 ws. */
#ifndef FLASH_WG_DEFAULT
#define FLASH_WG_DEFAULT 3
#endif

extern "C" enum kern_flash_kind kern_flash_fwd_pick(void)
{
	return fl_pick(getenv("GTPLAN_FLASH"), FLASH_WG_DEFAULT);
}

extern "C" int kern_flash_fwd_with(enum kern_flash_kind which, void *stream,
				  const struct kern_attn *a,
				  const uint16_t *q, const uint16_t *k,
				  const uint16_t *v, const int32_t *qpos,
				  const int32_t *kpos, uint16_t *o, float *lse)
{
	const char *who = fl_who(which, 0);
	int rc = fl_check(a, who);
	cudaStream_t st = (cudaStream_t)stream;
	fl_params p;

	if (rc)
		return rc;
	if (!q || !k || !v || !o || !lse)
		return kern_set_error(KERN_EINVAL, "%s: NULL tensor", who);
	if (which == KERN_FLASH_AUTO)
		which = kern_flash_fwd_pick();
	if (which != KERN_FLASH_MMA && !fl_wg_supported())
		return kern_set_error(KERN_ENODEV,
				      "%s: needs a compute capability 9.0 GPU "
				      "(sm_90a)", who);
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
	if (which == KERN_FLASH_WS)
		return fl_ws_run(p, (int)a->hd, st);
	if (which != KERN_FLASH_MMA)
		return fl_wg_run(p, (int)a->hd, which == KERN_FLASH_WGP, st);
	return a->hd == 64 ? fl_fwd_launch<64>(p, st) :
			     fl_fwd_launch<128>(p, st);
}

extern "C" int kern_flash_fwd(void *stream, const struct kern_attn *a,
			      const uint16_t *q, const uint16_t *k,
			      const uint16_t *v, const int32_t *qpos,
			      const int32_t *kpos, uint16_t *o, float *lse)
{
	return kern_flash_fwd_with(KERN_FLASH_AUTO, stream, a, q, k, v, qpos,
				   kpos, o, lse);
}
