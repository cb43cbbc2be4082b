/*
 * kern_flash_ws_bwd: the flash attention backward on Hopper, warp-
 * specialized as FlashAttention-3's (Shah et al. 2024, arXiv:2407.08608;
 * hopper/flash_bwd_kernel_sm90.h, mainloop_bwd_sm90_tma_gmma_ws.hpp): the
 * contract of kern_flash_bwd (kernels/kern_flash.h) for compute
 * capability 9.0 only, compiled for sm_90a (Makefile: WG_GENCODE);
 * kern_flash_bwd (kernels/kern_flash_bwd.cu) runs it by default there
 * (GTPLAN_FLASH_BWD=ws).
 *
 * The products are those of the `wg` kernel (kernels/kern_flash_wg_bwd.cu,
 * helpers in kernels/flash_bwd_wgmma.cuh): a block owns WB_BN = 128 key
 * rows of one key/value head, 64 per consumer warpgroup, keeps their dK
 * and dV in registers and walks the query tiles (every query head of the
 * group) that attend one of its keys. Tiles as FlashAttention-3's
 * (hopper/flash_bwd_launch_template.h: two MMA warpgroups, S and dP
 * computed transposed): at hd 128 query tiles of BM = 64 rows (kBlockM
 * 64), dQ split over the head dimension (warpgroup w: columns 64 w ..);
 * at hd 64 BM = 128 (kBlockM 128), dQ split over the query rows
 * (warpgroup w: rows 64 w ..), so that each item does twice the `wg`
 * kernel's work for the same fixed costs and each dq element gets one
 * add per block. What changes from `wg` is who waits for what:
 *  - warpgroup 0 produces: one thread loads K and V once, then each item's
 *    Q and dO tiles with the TMA (tensor maps with the 128-byte swizzle,
 *    flash_bwd_ws.cuh) into a ring of WS_STAGES buffers; two warps write
 *    the rows' base-2 lse, dsum and qpos beside them (bwd_row). A buffer
 *    is "full" (an mbarrier: the TMA's bytes plus 64 thread arrivals) and
 *    later "empty" (one arrival per consumer warp), so loads run ahead of
 *    the products by up to WS_STAGES - 1 items with no block-wide barrier.
 *    It then gives registers back (setmaxnreg: 24 a thread) to the
 *  - consumer warpgroups 1 and 2 (240 registers a thread): per item S^T
 *    and dP^T issued together and waited for, P^T and dS^T, dS^T stored,
 *    dV += P^T dO issued, one barrier among the consumers, then
 *    FlashAttention-3's tail (bwd_step): dQ = dS K issued with dK += dS^T
 *    Q behind it, dQ waited for and sent while dK runs, dK waited for,
 *    and the buffer released (ws_item, ws_tail);
 *  - dQ leaves as a bulk reduction: each consumer warp stores its 16 rows
 *    x 64 columns of scale dS K (fp32) in shared memory and each of 16
 *    lanes adds one row to dq with cp.reduce.async.bulk (.add.f32, 256
 *    bytes: dq's rows are contiguous in the head dimension), instead of
 *    one atomic per element and thread.
 * dS^T is double-buffered (the other warpgroup may still read the last
 * item's while this one writes), dQ's rows are padded to 72 floats (the
 * fragment stores hit 32 distinct banks). dk and dv leave as in the `wg`
 * kernel (bwd_store), dsum is the same pre-pass (flash_bwd.cuh), and the
 * launch has the same grid and head split (fl_bwd_split), so the
 * gradients equal `wg`'s up to fp32 rounding (summation orders).
 *
 * Falls back to `wg` (the same contract) where the ring does not fit the
 * device's shared memory (from about 1.8 million query rows at hd 128,
 * 3.5 million at hd 64, where the tile schedule outgrows the H200's 227
 * KiB) or the driver does not export cuTensorMapEncodeTiled (a CUDA
 * driver older than 12.0).
 *
 * The layout, the loads and the dQ reduction are
 * kernels/flash_bwd_ws_tiles.cuh's, which kernels/kern_flash_ws_bwd_probe.cu
 * runs alone for the tests.
 */
#include "flash_bwd_ws_tiles.cuh"

#define WS_NT 384 /* a producer and two consumer warpgroups */
#define WS_PROD_REGS 24
#define WS_CONS_REGS 240

/* Warpgroup 0: thread 0 loads K, V and every item's tiles, threads 32 ..
 * 95 the items' row statistics (rows r and r + 64 at BM 128), each into
 * the stage the consumers have released (parity of the stage's round,
 * flipped: the first round finds the stages empty). */
template <int D, int BM>
static __device__ __forceinline__ void
ws_produce(const ws_maps &m, const fl_params &p, const ws_blk &k, int tid)
{
	int full, n = 0, r = tid - 32;

	if (tid == 0) {
		mb_expect(ws_bar<D, BM>(k, WS_B_KV), 2 * ws_lay<D, BM>::kv);
		ws_load<D, WB_BN>(k.base, &m.k, k.g, k.k0, k.b,
				  ws_bar<D, BM>(k, WS_B_KV));
		ws_load<D, WB_BN>(k.base + ws_lay<D, BM>::kv, &m.v, k.g, k.k0,
				  k.b, ws_bar<D, BM>(k, WS_B_KV));
	} else if (r < 0 || r >= 64) {
		return;
	}
	for (int it = k.it0; it < k.nit;
	     it = ws_next(k.cls, it + 1, k.nit, k.nqt, &full), n++) {
		int s = n % WS_STAGES, h = k.g * k.grp + it / k.nqt;
		int q0 = (it % k.nqt) * BM;
		wb_tiles t;

		ws_wait_lazy(ws_bar<D, BM>(k, WS_B_EMPTY(s)),
			     ((n / WS_STAGES) & 1) ^ 1);
		ws_at<D, BM>(&t, k, s, 0);
		if (tid == 0) {
			ws_load_qo<D, BM>(m, t.q, t.o, h, q0, k.b,
					  ws_bar<D, BM>(k, WS_B_FULL(s)));
			continue;
		}
		bwd_row(p, k.b, h, q0 + r, &t.l2[r], &t.ds[r], &t.qp[r]);
		if (BM == 128)
			bwd_row(p, k.b, h, q0 + r + 64, &t.l2[r + 64],
				&t.ds[r + 64], &t.qp[r + 64]);
		mb_arrive(ws_bar<D, BM>(k, WS_B_FULL(s)));
	}
}

/* A consumer thread: its warpgroup (0, 1), warp in it, lane, and the
 * positions of its key rows. */
struct ws_thr {
	int wg, wq, lane, kp0, kp1;
};

/* The statistics of query columns col / 4 and col / 4 + 1 of a stage
 * (byte offset col, 8-byte aligned: the thread's column pairs start
 * even) at shared address sst: l2, dsum and (unless FULL) qpos, one
 * 64-bit load each. */
template <int FULL>
static __device__ __forceinline__ void ws_stats2(uint32_t sst, int bm,
						 uint32_t col, float l2[2],
						 float ds[2], int qp[2])
{
	ws_ld_f32x2(sst + col, &l2[0], &l2[1]);
	ws_ld_f32x2(sst + 4 * bm + col, &ds[0], &ds[1]);
	if (!FULL)
		ws_ld_s32x2(sst + 8 * bm + col, &qp[0], &qp[1]);
}

/* bwd_softmax (kernels/flash_bwd.cuh), the same operations on the same
 * values, over BM query columns, 16 at a time, each pair of n-tiles
 * packed into the A fragments pf (P^T) and sf (dS^T) as soon as it is
 * done, so that st and dp may die as pf and sf fill. sst: the shared
 * address of the stage's statistics (l2, dsum, qpos; BM each). FULL: the
 * item is a full tile (fl_classify), no key masked: qpos is not read. */
template <int BM, int FULL>
static __device__ __forceinline__ void ws_softmax(const fl_params &p,
						  float st[BM / 8][4],
						  float dp[BM / 8][4],
						  uint32_t pf[BM / 16][4],
						  uint32_t sf[BM / 16][4],
						  uint32_t sst,
						  const ws_thr &c)
{
	int c4 = (c.lane & 3) * 2;

#pragma unroll
	for (int j = 0; j < BM / 16; j++) {
#pragma unroll
		for (int nt = 2 * j; nt < 2 * j + 2; nt++) {
			float l2v[2], dsv[2];
			int qpv[2];

			ws_stats2<FULL>(sst, BM, 4 * (nt * 8 + c4), l2v, dsv,
					qpv);
#pragma unroll
			for (int x = 0; x < 2; x++) {
				float sl = p.scale_log2, l2 = l2v[x];
				float ds = dsv[x];
				float p0 = fl_exp2(st[nt][x] * sl - l2);
				float p1 = fl_exp2(st[nt][2 + x] * sl - l2);

				if (!FULL) {
					p0 = c.kp0 > qpv[x] ? 0.0f : p0;
					p1 = c.kp1 > qpv[x] ? 0.0f : p1;
				}
				st[nt][x] = p0;
				st[nt][2 + x] = p1;
				dp[nt][x] = p0 * (dp[nt][x] - ds);
				dp[nt][2 + x] = p1 * (dp[nt][2 + x] - ds);
			}
		}
		fl_acc_to_a(pf[j], st[2 * j], st[2 * j + 1]);
		fl_acc_to_a(sf[j], dp[2 * j], dp[2 * j + 1]);
	}
}

/* dS^T (A fragments sf: the thread's key rows `row` and row + 8, BM
 * query columns) into the swizzled WB_BN x BM tile at shared address ss:
 * wb_put_ds for any BM. */
template <int BM>
static __device__ __forceinline__ void ws_put_ds(uint32_t ss,
						 const uint32_t sf[BM / 16][4],
						 int row, int lane)
{
#pragma unroll
	for (int j = 0; j < BM / 16; j++)
#pragma unroll
		for (int x = 0; x < 4; x++) {
			int r = row + (x & 1) * 8;
			int c = 16 * j + (x >> 1) * 8 + (lane & 3) * 2;

			ws_st_b32(ss + wg_off(WB_BN, r, c), sf[j][x]);
		}
}

/* Where a warp's share of dQ goes (ws_dq_out's arguments): its shared
 * staging rows sq, batch b, head h, query rows q0 .., columns c0 ... */
struct ws_dqo {
	uint32_t sq;
	int b, h, q0, c0;
};

/* acc [64 x 64] = this warpgroup's share of dS K over all WB_BN keys,
 * issued and committed, not waited for: at BM 128 (hd 64) query rows 64
 * wg .. (A: atom wg of the dS^T tile, M-major; B: the K tile), at BM 64
 * (hd 128) columns 64 wg .. (A: the dS^T tile M-major; B: the K tile's
 * columns 64 wg ..). */
template <int BM>
static __device__ __forceinline__ void ws_dq_issue(float acc[8][4],
						   uint32_t ss, uint32_t sk,
						   int wg)
{
	if (BM == 64)
		wg_tt64<WB_BN, WB_BN, WB_BN>(acc, ss, sk + wg * WB_BN * 128);
	else
		wg_tt64<WB_BN, WB_BN, WB_BN>(acc, ss + wg * WB_BN * 128, sk);
}

/* The end of an item (after the barrier among the consumers; dV issued,
 * dK not): dQ = dS K issued, then dK +=
 * dS^T Q (sf) behind it; dV and dQ waited for (wgmma groups complete in
 * order: PTX ISA "wgmma.wait_group"); dQ sent (ws_dq_out: the shared
 * staging, the bulk reduction) while dK is still in the tensor cores;
 * then dK waited for, so that the stage's Q tile (dK's B) may be
 * released. sf stays untouched until then (an A fragment of a wgmma in
 * flight). FlashAttention-3's order (hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp,
 * bwd_step: dQ's gemm with wg_wait 1, dK's, dQ to shared memory, then
 * warpgroup_wait<0> and the release of Q). */
template <int D, int BM>
static __device__ __forceinline__ void ws_tail(const fl_params &p,
					       const wb_tiles &t,
					       const ws_thr &c,
					       float dk[D / 8][4],
					       uint32_t sf[BM / 16][4],
					       float acc[8][4],
					       const ws_dqo &o)
{
#pragma unroll
	for (int nt = 0; nt < 8; nt++)
		acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
	wg_pin<8>(acc);
	wg_pin<D / 8>(dk);
	wg_pin_u32<BM / 16>(sf);
	wg_fence();
	ws_dq_issue<BM>(acc, t.s, t.k, c.wg);
	wg_pv<D, BM>(dk, sf, t.q);
	wg_wait<1>(); /* dV, dQ; dK runs on */
	wg_pin<8>(acc);
	ws_dq_out<D>(p, acc, o.sq, o.b, o.h, o.q0, o.c0, c.lane);
	__syncwarp();
	wg_wait<0>();
	wg_pin<D / 8>(dk);
	wg_pin_u32<BM / 16>(sf);
}

/* One item for a consumer warpgroup: S^T and dP^T issued together and
 * waited for, P^T and dS^T (ws_softmax), dS^T stored, dV += P^T dO
 * issued; the barrier among the consumers (each warpgroup's dQ reads both
 * halves of dS^T); then ws_tail: dQ issued, dK += dS^T Q behind it, dQ
 * sent to o while dK runs. Measured on the H200 (bench_kernels_gpu attn,
 * 8B b4 s4096 hd 128, causal): 354 TFLOP/s against 342 with dK issued
 * before the barrier and dQ waited for with it, and against 333-343 for
 * the orders tried beside it (the softmax of each item overlapped with
 * its products as wb_item_pipe does; warpgroup 1's first products
 * issued after warpgroup 0's through a named barrier).
 * dS^T is stored before the wgmma that reads sf from registers is issued
 * (reading an A fragment of a wgmma in flight is undefined: PTX ISA
 * "wgmma.mma_async"). dv, dk accumulate in registers, acc gets dS K
 * (unscaled) for ws_dq_out. t points at the item's stage, which is full
 * (its statistics at shared address sst), and its dS^T buffer. Registers
 * (-Xptxas -v, CUDA 13.0, WS_CONS_REGS lowered to find the need): no
 * spills at 240; at 232 hd 128 fits, hd 64 with its 128-query tiles
 * spills. */
template <int D, int BM>
static __device__ __forceinline__ void ws_item(const fl_params &p,
					       const wb_tiles &t,
					       const ws_thr &c,
					       float dk[D / 8][4],
					       float dv[D / 8][4],
					       float acc[8][4], uint32_t sst,
					       int full, const ws_dqo &o)
{
	uint32_t rows = (uint32_t)c.wg * 64 * 128; /* the warpgroup's keys */
	int row = c.wg * 64 + c.wq * 16 + (c.lane >> 2);
	float st[BM / 8][4], dp[BM / 8][4];
	uint32_t pf[BM / 16][4], sf[BM / 16][4];

#pragma unroll
	for (int nt = 0; nt < BM / 8; nt++)
		for (int x = 0; x < 4; x++)
			st[nt][x] = dp[nt][x] = 0.0f;
	wg_pin<BM / 8>(st);
	wg_pin<BM / 8>(dp);
	wg_fence();
	wg_qk<BM, D, WB_BN>(st, t.k + rows, t.q);
	wg_qk<BM, D, WB_BN>(dp, t.v + rows, t.o);
	wg_wait<0>();
	wg_pin<BM / 8>(st);
	wg_pin<BM / 8>(dp);
	if (full)
		ws_softmax<BM, 1>(p, st, dp, pf, sf, sst, c);
	else
		ws_softmax<BM, 0>(p, st, dp, pf, sf, sst, c);
	ws_put_ds<BM>(t.s, sf, row, c.lane);
	wg_pin<D / 8>(dv);
	wg_pin_u32<BM / 16>(pf);
	wg_pin_u32<BM / 16>(sf);
	wg_fence();
	wg_pv<D, BM>(dv, pf, t.o);
	wg_proxy_fence(); /* dS^T stored, visible to every wgmma */
	nb_sync(1, 2 * 128);
	ws_tail<D, BM>(p, t, c, dk, sf, acc, o);
	wg_pin<D / 8>(dv);
	wg_pin<D / 8>(dk);
	wg_pin_u32<BM / 16>(pf);
	wg_pin_u32<BM / 16>(sf);
}

/* Consumer warpgroups: wait for K and V, then per item for its stage,
 * compute, release the stage (one arrival a warp, after the warp's last
 * read of it), send dQ (the warp's 16 rows of its warpgroup's 64 x 64
 * share); finally dk and dv as the `wg` kernel. ct: the thread among the
 * consumers (0 .. 255). */
template <int D, int BM>
static __device__ __forceinline__ void
ws_consume(const fl_params &p, const ws_blk &k, int ct, int split)
{
	typedef ws_lay<D, BM> L;
	int lane = ct & 31, kr = k.k0 + (ct >> 5) * 16 + (lane >> 2);
	ws_thr c = { ct >> 7, (ct >> 5) & 3, lane,
		     kr < p.sk ? fl_pos(p.kpos, kr) : INT_MAX,
		     kr + 8 < p.sk ? fl_pos(p.kpos, kr + 8) : INT_MAX };
	uint32_t sq = k.base + L::dq + (uint32_t)(ct >> 5) * 16 * WS_DQW * 4;
	int qw = (BM == 128 ? 64 * c.wg : 0) + 16 * c.wq;
	float dk[D / 8][4], dv[D / 8][4], acc[8][4];
	int full, n = 0;

	ws_next(k.cls, k.it0, k.nit, k.nqt, &full);
#pragma unroll
	for (int dt = 0; dt < D / 8; dt++)
		for (int x = 0; x < 4; x++)
			dk[dt][x] = dv[dt][x] = 0.0f;
	ws_wait_lazy(ws_bar<D, BM>(k, WS_B_KV), 0);
	for (int it = k.it0; it < k.nit;
	     it = ws_next(k.cls, it + 1, k.nit, k.nqt, &full), n++) {
		int s = n % WS_STAGES, h = k.g * k.grp + it / k.nqt;
		ws_dqo o = { sq, k.b, h, (it % k.nqt) * BM + qw,
			     D == 128 ? 64 * c.wg : 0 };
		wb_tiles t;

		ws_at<D, BM>(&t, k, s, n & 1);
		ws_wait_lazy(ws_bar<D, BM>(k, WS_B_FULL(s)),
			     (n / WS_STAGES) & 1);
		ws_item<D, BM>(p, t, c, dk, dv, acc,
			       k.base + L::st + s * 3 * BM * 4, full, o);
		__syncwarp();
		if (lane == 0)
			mb_arrive(ws_bar<D, BM>(k, WS_B_EMPTY(s)));
	}
	if (ws_aborted()) /* a wait gave up: these sums are wrong */
#pragma unroll
		for (int dt = 0; dt < D / 8; dt++)
			for (int x = 0; x < 4; x++)
				dk[dt][x] = dv[dt][x] = __int_as_float(0x7fc00000);
	bwd_store<D>(p, dk, dv, k.b, k.g, kr, lane, split);
	if (lane < 16)
		ws_bulk_wait();
}

/* Grid: (key tiles, nkv x split, batch), as the `wg` kernel's. Every
 * thread classifies the query tiles and finds the block's first item;
 * thread 0 sets up the barriers; then the warpgroups take their roles
 * (the role test goes through a shuffle so that ptxas sees it uniform
 * over each warp, as FlashAttention-3's canonical_warp_group_idx). */
template <int D>
__global__ void __launch_bounds__(WS_NT, 1)
fl_ws_bwd_kernel(const __grid_constant__ ws_maps m, const fl_params p,
		 int split)
{
	constexpr int BM = ws_bm(D);
	extern __shared__ __align__(1024) unsigned char ws_sm[];
	int tid = threadIdx.x, part, kmin, kmax, kall, t, y;
	int full;
	ws_blk k;

	fl_block_lpt(&t, &y, &k.b); /* the first key tiles (the most query
				       tiles under a causal mask) first */
	part = y % split;
	k.base = wg_align(ws_sm);
	k.gb = ws_sm + (k.base - fl_smem(ws_sm));
	k.cls = k.base + ws_lay<D, BM>::cls;
	k.g = y / split;
	k.k0 = t * WB_BN;
	k.nqt = (p.sq + BM - 1) / BM;
	k.grp = p.nh / p.nkv;
	k.nit = k.nqt * (k.grp * (part + 1) / split);
	fl_range(p.kpos, k.k0, WB_BN, p.sk, tid & 31, &kmin, &kmax, &kall);
	fl_classify(p.qpos, p.sq, BM, kmin, kmax, kall, 0,
		    k.gb + ws_lay<D, BM>::cls, tid, WS_NT);
	if (tid == 0) {
		mb_init(ws_bar<D, BM>(k, WS_B_KV), 1);
		for (int s = 0; s < WS_STAGES; s++) {
			mb_init(ws_bar<D, BM>(k, WS_B_FULL(s)), 1 + 64);
			mb_init(ws_bar<D, BM>(k, WS_B_EMPTY(s)), 8);
		}
		mb_init_fence();
	}
	__syncthreads();
	k.it0 = ws_next(k.cls, k.nqt * (k.grp * part / split), k.nit, k.nqt,
			&full);
	if (k.it0 >= k.nit)
		return;
	if (__shfl_sync(0xffffffffu, tid / 128, 0) == 0) {
		reg_dec<WS_PROD_REGS>();
		ws_produce<D, BM>(m, p, k, tid);
		return;
	}
	reg_inc<WS_CONS_REGS>();
	ws_consume<D, BM>(p, k, tid - 128, split);
}

/* ---- host ---------------------------------------------------------------- */

/* dsum, then the kernel; 1 (nothing queued) where the ring does not fit
 * the device's shared memory. */
template <int D>
static int fl_ws_bwd_launch(const fl_params &p, cudaStream_t st)
{
	constexpr int BM = ws_bm(D);
	size_t smem = ws_smem<D, BM>(p.sq);
	long long kt = (p.sk + WB_BN - 1) / WB_BN;
	int split = fl_bwd_split(p, kt * p.nkv * p.batch);
	dim3 grid((unsigned)kt, (unsigned)(p.nkv * split), p.batch);
	ws_maps m;
	int rc;

	if (smem > fl_smem_optin())
		return 1;
	rc = tma_map(&m.q, p.q, D, p.nh, p.sq, p.batch, BM,
			     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "fl_ws_bwd");
	if (!rc)
		rc = tma_map(&m.o, p.dout, D, p.nh, p.sq, p.batch, BM,
			     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "fl_ws_bwd");
	if (!rc)
		rc = tma_map(&m.k, p.k, D, p.nkv, p.sk, p.batch, WB_BN,
			     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "fl_ws_bwd");
	if (!rc)
		rc = tma_map(&m.v, p.v, D, p.nkv, p.sk, p.batch, WB_BN,
			     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "fl_ws_bwd");
	if (!rc)
		rc = fl_dsum_launch<D>(p, st);
	if (rc)
		return rc;
	return ws_launch(fl_ws_bwd_kernel<D>, grid, WS_NT, smem, st, m,
			 p, split);
}

int fl_ws_bwd_run(const fl_params &p, int hd, cudaStream_t st)
{
	int rc = 1;

	if (tma_encoder() && hd == 64)
		rc = fl_ws_bwd_launch<64>(p, st);
	else if (tma_encoder())
		rc = fl_ws_bwd_launch<128>(p, st);
	return rc == 1 ? fl_wg_bwd_run(p, hd, 0, st) : rc;
}

extern "C" int kern_flash_ws_bwd_check(void *stream)
{
	return ws_hung_check((cudaStream_t)stream, "kern_flash_bwd_with(ws)");
}
