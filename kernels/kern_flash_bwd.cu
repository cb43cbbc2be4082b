/*
 * kern_flash_bwd: the backward of kernels/kern_flash.cu (kern_flash_bwd in
 * kernels/kern_flash.h); the scheme is described at the top of that file.
 * kern_flash_bwd, at the end of this file, picks between this kernel and
 * the wgmma ones of kernels/kern_flash_wg_bwd.cu and
 * kernels/kern_flash_ws_bwd.cu (GTPLAN_FLASH_BWD, FLASH_WG_BWD_DEFAULT:
 * kernels/kern_flash.h).
 */
#include <stdlib.h>
#include <string.h>

#include "flash_bwd.cuh"

#ifndef BWD_NW
#define BWD_NW 8 /* backward warps, 16 keys each: 4 or 8 */
#endif
#define BWD_NT (32 * BWD_NW)
#define BWD_BM FL_BWD_BM
#define BWD_BN (16 * BWD_NW)
#define BWD_DW (D * 4 / BWD_NW) /* dq columns per warp */

/* ---- backward ----------------------------------------------------------- */

struct bwd_smem {
	fl_bf16 *k, *v, *q, *o, *s;
	float *l2, *ds;
	int *qp;
	unsigned char *cls; /* the query tiles' classes */
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

/* dq[rows of the tile] += scale dS K: warp w takes query rows
 * 16 (w % 4) .. + 16 and BWD_DW columns from (w / 4) BWD_DW. */
template <int D>
static __device__ __forceinline__ void bwd_dq(const fl_params &p,
					      const bwd_smem &sm, int b, int h,
					      int q0, int warp, int lane)
{
	int qg = warp & 3, dh = warp >> 2;
	float acc[BWD_DW / 8][4];

#pragma unroll
	for (int nt = 0; nt < BWD_DW / 8; nt++)
		acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#pragma unroll
	for (int kc = 0; kc < BWD_BN; kc += 16) {
		uint32_t a[4];

		fl_frag_a_t<BWD_BM>(a, sm.s, qg * 16, kc, lane);
#pragma unroll
		for (int dp = 0; dp < BWD_DW / 16; dp++) {
			uint32_t bb[4];

			fl_frag_b_t<D>(bb, sm.k, dh * BWD_DW + dp * 16, kc, lane);
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
		    dh * BWD_DW + (lane & 3) * 2;
#pragma unroll
		for (int nt = 0; nt < BWD_DW / 8; nt++)
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
	bwd_softmax(p, pt, dp, sm.l2, sm.ds, sm.qp, full, kp0, kp1, lane);
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

	fl_load_tile<BWD_BM, D, BWD_NT>(sq_base, p.q + off, ld,
				       (it % nqt) * BWD_BM, p.sq, tid);
	fl_load_tile<BWD_BM, D, BWD_NT>(so_base, p.dout + off, ld,
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
	sm->cls = (unsigned char *)((int *)(sm->s + BWD_BN * BWD_BM) + 6 * BWD_BM);
}

/* Grid: (key tiles, nkv x split, batch); the first key tiles, attended by
 * the most queries under a causal mask, start first. A block takes the
 * query tiles of its group's query heads (items head x query tile), or
 * with split > 1 those of its share of the heads: more blocks when one
 * sequence alone would leave the GPU's SMs idle (fl_bwd_split). */
template <int D>
__global__ void __launch_bounds__(BWD_NT, 8 / BWD_NW)
fl_bwd_kernel(const fl_params p, int split)
{
	extern __shared__ __align__(128) unsigned char fl_sm[];
	int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
	int g = blockIdx.y / split, part = blockIdx.y % split;
	int b = blockIdx.z, k0 = blockIdx.x * BWD_BN;
	int nqt = (p.sq + BWD_BM - 1) / BWD_BM, grp = p.nh / p.nkv;
	int nit = nqt * (grp * (part + 1) / split);
	int kr = k0 + warp * 16 + (lane >> 2);
	int kp0 = kr < p.sk ? fl_pos(p.kpos, kr) : INT_MAX;
	int kp1 = kr + 8 < p.sk ? fl_pos(p.kpos, kr + 8) : INT_MAX;
	long long koff = ((long long)b * p.sk * p.nkv + g) * D;
	float dk[D / 8][4], dv[D / 8][4];
	int kmin, kmax, kall, full, it;
	bwd_smem sm;

	fl_range(p.kpos, k0, BWD_BN, p.sk, lane, &kmin, &kmax, &kall);
	bwd_smem_at(&sm, fl_sm, D, 0);
	fl_classify(p.qpos, p.sq, BWD_BM, kmin, kmax, kall, 0, sm.cls, tid,
		    BWD_NT);
	__syncthreads();
	it = fl_next(sm.cls, nqt * (grp * part / split), nit, nqt, &full);
	if (it >= nit)
		return;
#pragma unroll
	for (int dt = 0; dt < D / 8; dt++) {
		dk[dt][0] = dk[dt][1] = dk[dt][2] = dk[dt][3] = 0.0f;
		dv[dt][0] = dv[dt][1] = dv[dt][2] = dv[dt][3] = 0.0f;
	}
	fl_load_tile<BWD_BN, D, BWD_NT>(sm.k, p.k + koff, (long long)p.nkv * D,
				       k0, p.sk, tid);
	fl_load_tile<BWD_BN, D, BWD_NT>(sm.v, p.v + koff, (long long)p.nkv * D,
				       k0, p.sk, tid);
	bwd_load<D>(p, sm.q, sm.o, it, b, g, tid);
	fl_commit();
	if (tid < BWD_BM)
		bwd_row(p, b, g * grp + it / nqt, (it % nqt) * BWD_BM + tid,
			&sm.l2[tid], &sm.ds[tid], &sm.qp[tid]);
	for (int buf = 0; it < nit; buf ^= 1) {
		int fulln, itn = fl_next(sm.cls, it + 1, nit, nqt, &fulln);
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
	bwd_store<D>(p, dk, dv, b, g, kr, lane, split);
}

template <int D>
static int fl_bwd_launch(const fl_params &p, cudaStream_t st)
{
	size_t smem = (size_t)(2 * BWD_BN + 4 * BWD_BM) * D * sizeof(fl_bf16) +
		      (size_t)BWD_BN * BWD_BM * sizeof(fl_bf16) +
		      6 * BWD_BM * sizeof(float) + fl_cls_bytes(p.sq, BWD_BM);
	long long kt = (p.sk + BWD_BN - 1) / BWD_BN;
	int split = fl_bwd_split(p, kt * p.nkv * p.batch);
	dim3 grid((unsigned)kt, (unsigned)(p.nkv * split), p.batch);
	int rc = fl_dsum_launch<D>(p, st);

	if (rc)
		return rc;
	CUDACHECK(cudaFuncSetAttribute(fl_bwd_kernel<D>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_bwd_kernel<D><<<grid, BWD_NT, smem, st>>>(p, split);
	CUDACHECK(cudaGetLastError());
	return 0;
}

/* The backward kern_flash_bwd runs unless GTPLAN_FLASH_BWD names another
 * (fl_pick): enum kern_flash_kind's number, 3 ws. */
#ifndef FLASH_WG_BWD_DEFAULT
#define FLASH_WG_BWD_DEFAULT 3
#endif

extern "C" enum kern_flash_kind kern_flash_bwd_pick(void)
{
	return fl_pick(getenv("GTPLAN_FLASH_BWD"), FLASH_WG_BWD_DEFAULT);
}

/* kern_attn's overwrite without a dsum pass to clear the gradients (no
 * query or no key rows): whichever of dq, dk, dv has elements zeroed. */
static int fl_bwd_zero(const struct kern_attn *a, float *dq, float *dk,
		       float *dv, cudaStream_t st)
{
	size_t nq = (size_t)(a->batch * a->sq * a->nh * a->hd) * sizeof(float);
	size_t nk = (size_t)(a->batch * a->sk * a->nkv * a->hd) *
		    sizeof(float);

	CUDACHECK(cudaMemsetAsync(dq, 0, nq, st));
	CUDACHECK(cudaMemsetAsync(dk, 0, nk, st));
	CUDACHECK(cudaMemsetAsync(dv, 0, nk, st));
	return 0;
}

extern "C" int kern_flash_bwd_with(enum kern_flash_kind which, void *stream,
				  const struct kern_attn *a,
				  const uint16_t *q, const uint16_t *k,
				  const uint16_t *v, const uint16_t *o,
				  const float *lse, const uint16_t *dout,
				  const int32_t *qpos, const int32_t *kpos,
				  float *dsum, float *dq, float *dk, float *dv)
{
	const char *who = fl_who(which, 1);
	int rc = fl_check(a, who);
	cudaStream_t st = (cudaStream_t)stream;
	fl_params p;

	if (rc)
		return rc;
	if (!q || !k || !v || !o || !lse || !dout || !dsum || !dq || !dk ||
	    !dv)
		return kern_set_error(KERN_EINVAL, "%s: NULL tensor", who);
	if (which == KERN_FLASH_AUTO)
		which = kern_flash_bwd_pick();
	if (which != KERN_FLASH_MMA && !fl_wg_supported())
		return kern_set_error(KERN_ENODEV,
				      "%s: needs a compute capability 9.0 GPU "
				      "(sm_90a)", who);
	if (a->overwrite && (a->sq == 0 || a->sk == 0))
		return fl_bwd_zero(a, dq, dk, dv, st); /* no dsum pass runs */
	if (a->sq == 0 || a->sk == 0)
		return 0;
	p = fl_make(a);
	p.zero = a->overwrite != 0; /* the dsum pass clears them */
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
	if (which == KERN_FLASH_WS)
		return fl_ws_bwd_run(p, (int)a->hd, st);
	if (which != KERN_FLASH_MMA)
		return fl_wg_bwd_run(p, (int)a->hd, which == KERN_FLASH_WGP,
				     st);
	return a->hd == 64 ? fl_bwd_launch<64>(p, st) :
			     fl_bwd_launch<128>(p, st);
}

extern "C" int kern_flash_bwd(void *stream, const struct kern_attn *a,
			      const uint16_t *q, const uint16_t *k,
			      const uint16_t *v, const uint16_t *o,
			      const float *lse, const uint16_t *dout,
			      const int32_t *qpos, const int32_t *kpos,
			      float *dsum, float *dq, float *dk, float *dv)
{
	return kern_flash_bwd_with(KERN_FLASH_AUTO, stream, a, q, k, v, o, lse,
				   dout, qpos, kpos, dsum, dq, dk, dv);
}
