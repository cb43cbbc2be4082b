/*
 * kern_flash_wg_bwd: the flash attention backward on Hopper's warpgroup
 * MMA (wgmma.mma_async), the contract of kern_flash_bwd
 * (kernels/kern_flash.h) for compute capability 9.0 only: compiled for
 * sm_90a (Makefile: WG_GENCODE); kern_flash_bwd
 * (kernels/kern_flash_bwd.cu) decides whether to call it.
 *
 * The scheme is the mma.sync backward's (kernels/kern_flash.cu's top
 * comment), with the same tiles: a block of WB_NWG warpgroups owns WB_BN
 * key rows of one key/value head (64 a warpgroup), keeps dK and dV in
 * registers and walks every query tile of FL_BWD_BM rows, of every query
 * head of its group, that attends one of its keys (fl_classify: skipped,
 * full or partial), the Q and dO tiles double-buffered with cp.async in
 * 128-byte-swizzled shared memory. Per item and warpgroup:
 *  - S^T = K Q^T and dP^T = V dO^T with the keys as rows (wg_qk: A = the
 *    warpgroup's K or V rows, B = the Q or dO tile, both K-major), so
 *    that P^T and dS^T (flash_bwd.cuh's bwd_softmax) are accumulator
 *    fragments of the warpgroup's key rows;
 *  - dV += P^T dO and dK += dS^T Q (wg_pv: A = P^T or dS^T from
 *    registers, rounded to bf16; B = the dO or Q tile MN-major);
 *  - dS^T into shared memory (a WB_BN x 64 swizzled tile), then dQ = dS K
 *    (wg_tt64: A = dS, i.e. dS^T read M-major, B = the K tile MN-major),
 *    added to dq with fp32 atomics: at hd 128 warpgroup wg computes
 *    columns 64 wg .. 64 wg + 63 over all WB_BN keys; at hd 64 each
 *    computes its own 64 keys' share of all 64 columns and the two
 *    exchange halves through shared memory (wb_dq_swap). Either way each
 *    dq element gets one atomic add per block, as with mma.sync.
 * Two schedules (kern_flash.h: GTPLAN_FLASH_BWD wg and wgp): wb_item
 * waits for every product before the next step; wb_item_pipe overlaps
 * each softmax step with the product before it.
 * P and dS are rounded to bf16 where the mma.sync kernel rounds them and
 * from the same fp32 values up to summation order, so both kernels'
 * gradients agree to fp32 rounding but for rare bf16 rounding flips.
 * The dsum pre-pass, the head split (fl_bwd_split) and the final dk/dv
 * update are flash_bwd.cuh's, shared with the mma.sync kernel.
 *
 * The PTX ISA facts relied on are listed in kernels/kern_flash_wg.cu's
 * top comment, plus one: "Shared Memory Matrix Layout" allows
 * imm-trans-a = 1 (A M-major) for .f16/.bf16 operands in shared memory,
 * with the same MN-major canonical layout as B (CUTLASS's
 * SM90_64x64x16_F32BF16BF16_SS with GMMA::Major::MN for A): dQ's A is the
 * stored dS^T, keys as rows, 64 queries (M, one 128-byte atom) a row.
 *
 * kern_flash_wg_bwd_probe (kernels/kern_flash.h) runs the warpgroup's
 * three product forms on given matrices, through the same helpers and
 * tile offsets, for the tests to find a layout mistake in isolation.
 */
#include "flash_bwd_wgmma.cuh"

/* Shared memory, from a 1024-byte aligned base: K and V (WB_BN rows each),
 * two Q and two dO tiles, dS^T, at hd 64 wb_dq_swap's floats, then per
 * buffer the rows' base-2 lse,
 * dsum and qpos, then the query tiles' classes; 1024 bytes of slack to
 * align the base. */
#define WB_KV(D) ((uint32_t)(WB_BN * (D) * 2))
#define WB_QT(D) ((uint32_t)(WB_BM * (D) * 2))
#define WB_S(D) (2 * WB_KV(D) + 4 * WB_QT(D))
#define WB_X(D) (WB_S(D) + (uint32_t)(WB_BN * WB_BM * 2))
#define WB_XB(D) ((uint32_t)((D) == 64 ? 2 * 16 * 128 * 4 : 0))
#define WB_ST(D) (WB_X(D) + WB_XB(D))

static size_t wb_smem(int d, long long sq)
{
	return 1024 + (size_t)(2 * WB_BN + 4 * WB_BM) * d * 2 +
	       (size_t)WB_BN * WB_BM * 2 + (d == 64 ? 2 * 16 * 128 * 4 : 0) +
	       6 * WB_BM * sizeof(float) + fl_cls_bytes(sq, WB_BM);
}

static __device__ __forceinline__ void wb_at(wb_tiles *t, uint32_t base,
					     unsigned char *gb, int D, int buf)
{
	float *st = (float *)(gb + WB_ST(D));

	t->k = base;
	t->v = base + WB_KV(D);
	t->q = base + 2 * WB_KV(D) + buf * WB_QT(D);
	t->o = base + 2 * WB_KV(D) + (2 + buf) * WB_QT(D);
	t->s = base + WB_S(D);
	t->l2 = st + buf * WB_BM;
	t->ds = st + (2 + buf) * WB_BM;
	t->qp = (int *)st + (4 + buf) * WB_BM;
}

/* Query and dout tiles of item `it` (cp.async) into t's buffer. */
template <int D>
static __device__ __forceinline__ void wb_load(const fl_params &p,
					       const wb_tiles &t, int it,
					       int b, int g, int tid)
{
	int nqt = (p.sq + WB_BM - 1) / WB_BM;
	int h = g * (p.nh / p.nkv) + it / nqt;
	long long off = ((long long)b * p.sq * p.nh + h) * D;
	long long ld = (long long)p.nh * D;

	wg_load_tile<WB_BM, D, WB_NT>(t.q, p.q + off, ld, (it % nqt) * WB_BM,
				      p.sq, tid);
	wg_load_tile<WB_BM, D, WB_NT>(t.o, p.dout + off, ld,
				      (it % nqt) * WB_BM, p.sq, tid);
}

/* hd 64: each warpgroup keeps columns 32 wg .. 32 wg + 31 of dS K (its
 * n-tiles 4 wg .. 4 wg + 3, summed with the other warpgroup's, land in
 * acc[0..3]) and hands the other half to the other warpgroup through xs
 * (2 x 16 x 128 floats: sender, value, thread of the warpgroup; threads
 * of the same rank hold the same rows and columns), so that each dq
 * element gets one atomic add per block. Selects rather than indices
 * that depend on wg keep acc in registers. Barrier: the whole block. */
static __device__ __forceinline__ void wb_dq_swap(float acc[8][4],
						  float *xs, int wg, int i)
{
#pragma unroll
	for (int j = 0; j < 16; j++)
		xs[(wg * 16 + j) * 128 + i] =
			wg ? acc[j / 4][j % 4] : acc[4 + j / 4][j % 4];
	__syncthreads();
#pragma unroll
	for (int j = 0; j < 16; j++)
		acc[j / 4][j % 4] = (wg ? acc[4 + j / 4][j % 4] :
					  acc[j / 4][j % 4]) +
				    xs[((1 - wg) * 16 + j) * 128 + i];
}

/* dq[rows of the item] += scale dS K: wq is the warp within the
 * warpgroup (query rows 16 wq + g, + 8); this thread's columns are
 * 64 wg + 8 nt + 2 (lane % 4) at hd 128, 32 wg + ... (nt < 4) at hd 64,
 * in acc[nt]. The dS^T
 * of every warpgroup is in shared memory (barrier done). */
template <int D>
static __device__ __forceinline__ void wb_dq(const fl_params &p, uint32_t ss,
					     uint32_t sk, float *xs, int b,
					     int h, int q0, int wg, int wq,
					     int lane)
{
	constexpr int NT = D == 128 ? 8 : 4;
	int c0 = D == 128 ? 64 * wg : 32 * wg;
	float acc[8][4];

#pragma unroll
	for (int nt = 0; nt < 8; nt++)
		acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
	wb_dq_mma<D>(acc, ss, sk, wg);
	if (D == 64)
		wb_dq_swap(acc, xs, wg, wq * 32 + lane);
#pragma unroll
	for (int r = 0; r < 2; r++) {
		int row = q0 + wq * 16 + (lane >> 2) + 8 * r;
		float *g;

		if (row >= p.sq)
			continue;
		g = p.dq + (((long long)b * p.sq + row) * p.nh + h) * D + c0 +
		    (lane & 3) * 2;
#pragma unroll
		for (int nt = 0; nt < NT; nt++)
			atomicAdd((float2 *)(g + nt * 8),
				  make_float2(p.scale * acc[nt][2 * r],
					      p.scale * acc[nt][2 * r + 1]));
	}
}

/* What a thread needs of its block for one item. */
struct wb_ctx {
	unsigned char *gb; /* generic address of the aligned base */
	int wg, wq, lane, kp0, kp1;
};

/* One query tile against the warpgroup's keys: dv, dk in registers, dq by
 * atomics; t points at the item's buffer, which is complete. */
template <int D>
static __device__ __forceinline__ void wb_item(const fl_params &p,
					       const wb_tiles &t,
					       const wb_ctx &c,
					       float dk[D / 8][4],
					       float dv[D / 8][4], int full,
					       int b, int h, int q0)
{
	uint32_t rows = (uint32_t)c.wg * 64 * 128; /* the warpgroup's keys */
	float st[WB_BM / 8][4], dp[WB_BM / 8][4];
	uint32_t pf[WB_BM / 16][4], sf[WB_BM / 16][4];

#pragma unroll
	for (int nt = 0; nt < WB_BM / 8; nt++)
		for (int x = 0; x < 4; x++)
			st[nt][x] = dp[nt][x] = 0.0f;
	wg_pin<WB_BM / 8>(st);
	wg_pin<WB_BM / 8>(dp);
	wg_fence();
	wg_qk<WB_BM, D, WB_BN>(st, t.k + rows, t.q);
	wg_qk<WB_BM, D, WB_BN>(dp, t.v + rows, t.o);
	wg_wait<0>();
	wg_pin<WB_BM / 8>(st);
	wg_pin<WB_BM / 8>(dp);
	bwd_softmax(p, st, dp, t.l2, t.ds, t.qp, full, c.kp0, c.kp1, c.lane);
#pragma unroll
	for (int j = 0; j < WB_BM / 16; j++) {
		fl_acc_to_a(pf[j], st[2 * j], st[2 * j + 1]);
		fl_acc_to_a(sf[j], dp[2 * j], dp[2 * j + 1]);
	}
	wb_put_ds(c.gb + WB_S(D), sf, c.wg * 64 + c.wq * 16 + (c.lane >> 2),
		  c.lane);
	wg_pin<D / 8>(dv);
	wg_pin<D / 8>(dk);
	wg_pin_u32<WB_BM / 16>(pf);
	wg_pin_u32<WB_BM / 16>(sf);
	wg_fence();
	wg_pv<D, WB_BM>(dv, pf, t.o);
	wg_pv<D, WB_BM>(dk, sf, t.q);
	wg_wait<0>();
	wg_pin<D / 8>(dv);
	wg_pin<D / 8>(dk);
	wg_pin_u32<WB_BM / 16>(pf);
	wg_pin_u32<WB_BM / 16>(sf);
	wg_proxy_fence(); /* dS^T stored, visible to every wgmma */
	__syncthreads();
	wg_proxy_fence();
	wb_dq<D>(p, t.s, t.k, (float *)(c.gb + WB_X(D)), b, h, q0, c.wg,
		 c.wq, c.lane);
}

/* wb_item with the products overlapped ("wgp"): S^T and dP^T are issued
 * together; P^T is computed once S^T is in (wait_group 1: dP^T may run
 * on) and dV += P^T dO issued; dS^T once dP^T is in (dV may run on), dK
 * += dS^T Q issued; the dS^T barrier and dQ's issue then overlap dK, and
 * dQ's wait covers all. Groups complete in order (kernels/kern_flash_wg.cu's
 * top comment); pf and sf stay pinned until that last wait, since wgmma
 * reads them while in flight. */
template <int D>
static __device__ __forceinline__ void wb_item_pipe(const fl_params &p,
						    const wb_tiles &t,
						    const wb_ctx &c,
						    float dk[D / 8][4],
						    float dv[D / 8][4],
						    int full, int b, int h,
						    int q0)
{
	uint32_t rows = (uint32_t)c.wg * 64 * 128; /* the warpgroup's keys */
	float st[WB_BM / 8][4], dp[WB_BM / 8][4];
	uint32_t pf[WB_BM / 16][4], sf[WB_BM / 16][4];

#pragma unroll
	for (int nt = 0; nt < WB_BM / 8; nt++)
		for (int x = 0; x < 4; x++)
			st[nt][x] = dp[nt][x] = 0.0f;
	wg_pin<WB_BM / 8>(st);
	wg_pin<WB_BM / 8>(dp);
	wg_fence();
	wg_qk<WB_BM, D, WB_BN>(st, t.k + rows, t.q);
	wg_qk<WB_BM, D, WB_BN>(dp, t.v + rows, t.o);
	wg_wait<1>(); /* S^T */
	wg_pin<WB_BM / 8>(st);
	wb_p(p, st, t, full, c.kp0, c.kp1, c.lane);
#pragma unroll
	for (int j = 0; j < WB_BM / 16; j++)
		fl_acc_to_a(pf[j], st[2 * j], st[2 * j + 1]);
	wg_pin<D / 8>(dv);
	wg_pin_u32<WB_BM / 16>(pf);
	wg_fence();
	wg_pv<D, WB_BM>(dv, pf, t.o);
	wg_wait<1>(); /* dP^T; dV may run on */
	wg_pin<WB_BM / 8>(dp);
	wb_ds(st, dp, t, c.lane);
#pragma unroll
	for (int j = 0; j < WB_BM / 16; j++)
		fl_acc_to_a(sf[j], dp[2 * j], dp[2 * j + 1]);
	wb_put_ds(c.gb + WB_S(D), sf, c.wg * 64 + c.wq * 16 + (c.lane >> 2),
		  c.lane);
	wg_pin<D / 8>(dk);
	wg_pin_u32<WB_BM / 16>(sf);
	wg_fence();
	wg_pv<D, WB_BM>(dk, sf, t.q);
	wg_proxy_fence(); /* dS^T stored, visible to every wgmma */
	__syncthreads();
	wg_proxy_fence();
	wb_dq<D>(p, t.s, t.k, (float *)(c.gb + WB_X(D)), b, h, q0, c.wg,
		 c.wq, c.lane);
	wg_pin<D / 8>(dv);
	wg_pin<D / 8>(dk);
	wg_pin_u32<WB_BM / 16>(pf);
	wg_pin_u32<WB_BM / 16>(sf);
}

/* Every thread's copies complete and visible to every warpgroup's wgmma;
 * also orders the wgmma reads before it ahead of copies after. */
static __device__ __forceinline__ void wb_tile_barrier(void)
{
	fl_wait<1>();
	wg_proxy_fence();
	__syncthreads();
	wg_proxy_fence();
}

/* Grid: (key tiles, nkv x split, batch), as fl_bwd_kernel's
 * (kernels/kern_flash_bwd.cu). Warpgroup wg owns key rows k0 + 64 wg +
 * 0..63; its warp wq rows 16 wq + g and + 8 of those (g = lane / 4).
 * Loop as fl_bwd_kernel's: item it + 1's tiles load while item it runs.
 * PIPE picks wb_item_pipe over wb_item. */
template <int D, int PIPE>
__global__ void __launch_bounds__(WB_NT, 1)
fl_wg_bwd_kernel(const fl_params p, int split)
{
	extern __shared__ __align__(1024) unsigned char wg_sm[];
	uint32_t base = wg_align(wg_sm);
	unsigned char *gb = wg_sm + (base - fl_smem(wg_sm));
	unsigned char *cls = gb + WB_ST(D) + 6 * WB_BM * sizeof(float);
	int tid = threadIdx.x, lane = tid & 31;
	int g = blockIdx.y / split, part = blockIdx.y % split;
	int b = blockIdx.z, k0 = blockIdx.x * WB_BN;
	int nqt = (p.sq + WB_BM - 1) / WB_BM, grp = p.nh / p.nkv;
	int nit = nqt * (grp * (part + 1) / split);
	int kr = k0 + (tid >> 5) * 16 + (lane >> 2);
	long long koff = ((long long)b * p.sk * p.nkv + g) * D;
	wb_ctx c = { gb, tid >> 7, (tid >> 5) & 3, lane,
		     kr < p.sk ? fl_pos(p.kpos, kr) : INT_MAX,
		     kr + 8 < p.sk ? fl_pos(p.kpos, kr + 8) : INT_MAX };
	float dk[D / 8][4], dv[D / 8][4];
	int kmin, kmax, kall, full, it;
	wb_tiles t, nx;

	fl_range(p.kpos, k0, WB_BN, p.sk, lane, &kmin, &kmax, &kall);
	fl_classify(p.qpos, p.sq, WB_BM, kmin, kmax, kall, 0, cls, tid, WB_NT);
	__syncthreads();
	it = fl_next(cls, nqt * (grp * part / split), nit, nqt, &full);
	if (it >= nit)
		return;
#pragma unroll
	for (int dt = 0; dt < D / 8; dt++)
		for (int x = 0; x < 4; x++)
			dk[dt][x] = dv[dt][x] = 0.0f;
	wb_at(&t, base, gb, D, 0);
	wg_load_tile<WB_BN, D, WB_NT>(t.k, p.k + koff, (long long)p.nkv * D,
				      k0, p.sk, tid);
	wg_load_tile<WB_BN, D, WB_NT>(t.v, p.v + koff, (long long)p.nkv * D,
				      k0, p.sk, tid);
	wb_load<D>(p, t, it, b, g, tid);
	fl_commit();
	if (tid < WB_BM)
		bwd_row(p, b, g * grp + it / nqt, (it % nqt) * WB_BM + tid,
			&t.l2[tid], &t.ds[tid], &t.qp[tid]);
	for (int buf = 0; it < nit; buf ^= 1) {
		int fulln, itn = fl_next(cls, it + 1, nit, nqt, &fulln);
		float nl2 = 0.0f, nds = 0.0f;
		int nqp = 0;

		wb_at(&t, base, gb, D, buf);
		wb_at(&nx, base, gb, D, buf ^ 1);
		if (itn < nit) {
			wb_load<D>(p, nx, itn, b, g, tid);
			if (tid < WB_BM)
				bwd_row(p, b, g * grp + itn / nqt,
					(itn % nqt) * WB_BM + tid, &nl2, &nds,
					&nqp);
		}
		fl_commit();
		wb_tile_barrier();
		if (PIPE)
			wb_item_pipe<D>(p, t, c, dk, dv, full, b,
					g * grp + it / nqt, (it % nqt) * WB_BM);
		else
			wb_item<D>(p, t, c, dk, dv, full, b, g * grp + it / nqt,
				   (it % nqt) * WB_BM);
		if (itn < nit && tid < WB_BM) {
			nx.l2[tid] = nl2;
			nx.ds[tid] = nds;
			nx.qp[tid] = nqp;
		}
		wg_proxy_fence();
		__syncthreads();
		it = itn;
		full = fulln;
	}
	bwd_store<D>(p, dk, dv, b, g, kr, lane, split);
}

template <int D, int PIPE>
static int fl_wg_bwd_launch(const fl_params &p, cudaStream_t st)
{
	size_t smem = wb_smem(D, p.sq);
	long long kt = (p.sk + WB_BN - 1) / WB_BN;
	int split = fl_bwd_split(p, kt * p.nkv * p.batch);
	dim3 grid((unsigned)kt, (unsigned)(p.nkv * split), p.batch);
	int rc = fl_dsum_launch<D>(p, st);

	if (rc)
		return rc;
	CUDACHECK(cudaFuncSetAttribute(fl_wg_bwd_kernel<D, PIPE>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_wg_bwd_kernel<D, PIPE><<<grid, WB_NT, smem, st>>>(p, split);
	CUDACHECK(cudaGetLastError());
	return 0;
}

int fl_wg_bwd_run(const fl_params &p, int hd, int pipe, cudaStream_t st)
{
	if (hd == 64)
		return pipe ? fl_wg_bwd_launch<64, 1>(p, st) :
			      fl_wg_bwd_launch<64, 0>(p, st);
	return pipe ? fl_wg_bwd_launch<128, 1>(p, st) :
		      fl_wg_bwd_launch<128, 0>(p, st);
}

/* ---- the products alone, for the tests --------------------------------- */

/* The block (rows r0 .., columns c0 ..) of the swizzled tile at generic
 * address t (R rows, W columns) = M (rows x cols), M = src (row-major) or,
 * with tr, src^T (src is [cols][rows]); every other element 0. */
static __device__ void wbp_fill(unsigned char *t, int R, int W, int r0,
				int c0, const fl_bf16 *src, int rows, int cols,
				int tr, int tid)
{
	for (int i = tid; i < R * W; i += 128) {
		int r = i / W, col = i % W, m = r - r0, n = col - c0;
		int in = m >= 0 && m < rows && n >= 0 && n < cols;
		fl_bf16 v = __float2bfloat16(0.0f);

		if (in)
			v = tr ? src[n * rows + m] : src[m * cols + n];
		*(fl_bf16 *)(t + wg_off(R, r, col)) = v;
	}
}

/* d [64 x N] = a [64 x K] b as warpgroup 1 of a block computes it (the
 * rows 64 .. 127 of the WB_BN-row K, V and dS^T tiles):
 *  OP 0: S^T = K Q^T: a = K rows into rows 64.. of a WB_BN x K tile, b
 *        given as [N][K] (Q, N = 64) in a 64-row tile; wg_qk.
 *  OP 1: dV += P^T dO: a from registers, b [K = 64][N] (dO) MN-major;
 *        wg_pv.
 *  OP 2: dQ = dS K at hd 64: a^T into rows 64.. of the WB_BN x 64 dS^T
 *        tile, b [K = 64][N = 64] into rows 64.. of a WB_BN x 64 K tile;
 *        wb_dq_mma<64>.
 *  OP 3: dQ = dS K at hd 128: a^T [K = WB_BN][64] is the whole dS^T
 *        tile, b [K][N = 64] columns 64.. of a WB_BN x 128 K tile;
 *        wb_dq_mma<128>.
 * One warpgroup (128 threads). */
template <int OP, int N, int K>
__global__ void __launch_bounds__(128, 1)
fl_wgb_probe_kernel(const fl_bf16 *a, const fl_bf16 *b, float *d)
{
	extern __shared__ __align__(1024) unsigned char wg_sm[];
	uint32_t sA = wg_align(wg_sm), sB = sA + WB_BN * 128 * 2;
	unsigned char *gA = wg_sm + (sA - fl_smem(wg_sm));
	unsigned char *gB = gA + (sB - sA);
	int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, c = lane & 3;
	int row = (tid >> 5) * 16 + g;
	float acc[N / 8][4];
	uint32_t pf[K / 16][4];

	if (OP == 0) {
		wbp_fill(gA, WB_BN, K, 64, 0, a, 64, K, 0, tid);
		wbp_fill(gB, 64, K, 0, 0, b, N, K, 0, tid);
	} else if (OP == 1) {
		wbp_fill(gB, K, N, 0, 0, b, K, N, 0, tid);
	} else if (OP == 2) {
		wbp_fill(gA, WB_BN, 64, 64, 0, a, K, 64, 1, tid);
		wbp_fill(gB, WB_BN, 64, 64, 0, b, K, N, 0, tid);
	} else {
		wbp_fill(gA, WB_BN, 64, 0, 0, a, K, 64, 1, tid);
		wbp_fill(gB, WB_BN, 128, 0, 64, b, K, N, 0, tid);
	}
	for (int k = 0; k < K / 16; k++)
		for (int x = 0; x < 4; x++) {
			int rr = row + (x & 1) * 8;
			int cc = 16 * k + 2 * c + (x >> 1) * 8;
			__nv_bfloat162 v2 = __halves2bfloat162(a[rr * K + cc],
							       a[rr * K + cc + 1]);

			pf[k][x] = *(uint32_t *)&v2;
		}
	for (int nt = 0; nt < N / 8; nt++)
		acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
	wg_proxy_fence();
	__syncthreads();
	wg_proxy_fence();
	if (OP >= 2) {
		wb_dq_mma<OP == 2 ? 64 : 128>(acc, sA, sB, 1);
	} else {
		wg_pin<N / 8>(acc);
		wg_pin_u32<K / 16>(pf);
		wg_fence();
		if (OP == 1)
			wg_pv<N, K>(acc, pf, sB);
		else
			wg_qk<N, K, WB_BN>(acc, sA + 64 * 128, sB);
		wg_wait<0>();
		wg_pin<N / 8>(acc);
	}
	for (int nt = 0; nt < N / 8; nt++)
		for (int x = 0; x < 4; x++)
			d[(row + (x >> 1) * 8) * N + nt * 8 + 2 * c + (x & 1)] =
				acc[nt][x];
}

template <int OP, int N, int K>
static int fl_wgb_probe_launch(const void *a, const void *b, float *d,
			       cudaStream_t st)
{
	int smem = 1024 + 2 * WB_BN * 128 * 2;

	CUDACHECK(cudaFuncSetAttribute(fl_wgb_probe_kernel<OP, N, K>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      smem));
	fl_wgb_probe_kernel<OP, N, K><<<1, 128, smem, st>>>(
		(const fl_bf16 *)a, (const fl_bf16 *)b, d);
	CUDACHECK(cudaGetLastError());
	return 0;
}

extern "C" int kern_flash_wg_bwd_probe(void *stream, int op, int n, int k,
				       const uint16_t *a, const uint16_t *b,
				       float *d)
{
	cudaStream_t st = (cudaStream_t)stream;

	if (!a || !b || !d)
		return kern_set_error(KERN_EINVAL,
				      "kern_flash_wg_bwd_probe: NULL matrix");
	if (!fl_wg_supported())
		return kern_set_error(KERN_ENODEV,
				      "kern_flash_wg_bwd_probe: needs a compute "
				      "capability 9.0 GPU (sm_90a)");
	if (op == 0 && n == 64 && k == 64)
		return fl_wgb_probe_launch<0, 64, 64>(a, b, d, st);
	if (op == 0 && n == 64 && k == 128)
		return fl_wgb_probe_launch<0, 64, 128>(a, b, d, st);
	if (op == 1 && n == 64 && k == 64)
		return fl_wgb_probe_launch<1, 64, 64>(a, b, d, st);
	if (op == 1 && n == 128 && k == 64)
		return fl_wgb_probe_launch<1, 128, 64>(a, b, d, st);
	if (op == 2 && n == 64 && k == 64)
		return fl_wgb_probe_launch<2, 64, 64>(a, b, d, st);
	if (op == 3 && n == 64 && k == 128)
		return fl_wgb_probe_launch<3, 64, 128>(a, b, d, st);
	return kern_set_error(KERN_EINVAL,
			      "kern_flash_wg_bwd_probe: op %d n %d k %d is not "
			      "built (op 0: n64 k64, n64 k128; op 1: n64 k64, "
			      "n128 k64; op 2: n64 k64; op 3: n64 k128)", op, n,
			      k);
}
