/*
 * kern_flash_ws_bwd: the flash attention backward on Hopper, warp-
 * specialized as FlashAttention-3's (Shah et al. 2024, arXiv:2407.08608;
 * hopper/flash_bwd_kernel_sm90.h, mainloop_bwd_sm90_tma_gmma_ws.hpp): the
 * contract of kern_flash_bwd (kernels/kern_flash.h) for compute
 * capability 9.0 only, compiled for sm_90a (Makefile: WG_GENCODE);
 * kern_flash_bwd (kernels/kern_flash_bwd.cu) runs it under
 * GTPLAN_FLASH_BWD=ws or wsp.
 *
 * The tiles and products are those of the `wg` kernel
 * (kernels/kern_flash_wg_bwd.cu, helpers in kernels/flash_bwd_wgmma.cuh):
 * a block owns WB_BN = 128 key rows of one key/value head, 64 per
 * consumer warpgroup, keeps their dK and dV in registers and walks the
 * query tiles of 64 rows (every query head of the group) that attend one
 * of its keys, FlashAttention-3's tile at hd 128 (hopper/
 * flash_bwd_launch_template.h: kBlockM 64, kBlockN 128, two MMA
 * warpgroups, S and dP computed transposed, dQ split over the head
 * dimension). What changes is who waits for what:
 *  - warpgroup 0 produces: one thread loads K and V once, then each item's
 *    Q and dO tiles with the TMA (tensor maps with the 128-byte swizzle,
 *    flash_bwd_ws.cuh) into a ring of WS_STAGES buffers; two warps write
 *    the rows' base-2 lse, dsum and qpos beside them (bwd_row). A buffer
 *    is "full" (an mbarrier: the TMA's bytes plus 64 row arrivals) and
 *    later "empty" (one arrival per consumer warp), so loads run ahead of
 *    the products by up to WS_STAGES - 1 items with no block-wide barrier.
 *    It then gives registers back (setmaxnreg: 24 a thread) to the
 *  - consumer warpgroups 1 and 2 (240 registers a thread): per item S^T
 *    and dP^T issued together, P^T and dS^T (schedule ws: once both are
 *    in; wsp: P^T while dP^T is in the tensor cores, dS^T while dV +=
 *    P^T dO runs), dS^T stored, dV and dK += dS^T Q issued, one barrier
 *    among the consumers (among a warpgroup's threads at hd 64, where dQ
 *    needs only its own keys), dQ = dS K, then the buffer is released;
 *  - dQ leaves as a bulk reduction: each consumer warp stores its 16 rows
 *    of scale dS K (fp32) in shared memory and each of 16 lanes adds one
 *    row to dq with cp.reduce.async.bulk (.add.f32, 256 bytes: dq's rows
 *    are contiguous in the head dimension), instead of one atomic per
 *    element and thread. At hd 128 warpgroup w adds columns 64 w ..
 *    64 w + 63; at hd 64 each adds its keys' share of all 64 columns, so
 *    each dq element gets two adds per block there.
 * dS^T is double-buffered (the other warpgroup may still read the last
 * item's while this one writes), dQ's rows are padded to 72 floats (the
 * fragment stores hit 32 distinct banks). dk and dv leave as in the `wg`
 * kernel (bwd_store), dsum is the same pre-pass (flash_bwd.cuh), and the
 * launch has the same grid and head split (fl_bwd_split), so the
 * gradients equal `wg`'s up to fp32 summation order of dq.
 *
 * Falls back to `wg` (the same contract) where the ring does not fit the
 * device's shared memory (hd 128 from about 1.8 million query rows, where
 * the tile schedule outgrows it) or the driver does not export
 * cuTensorMapEncodeTiled (a CUDA driver older than 12.0).
 *
 * kern_flash_ws_bwd_probe_tma and _dq (kernels/kern_flash.h) run the
 * ring's TMA loads and the dQ bulk reduction alone, through the same
 * functions, for the tests to find a protocol or layout mistake in
 * isolation.
 */
#include "flash_bwd_wgmma.cuh"
#include "flash_bwd_ws.cuh"

/* Set by a barrier wait that gave up (flash_bwd_ws.cuh), read and cleared
 * by kern_flash_ws_bwd_check. */
static __device__ int ws_hung;

static __device__ __forceinline__ void ws_wait(uint32_t bar, int parity)
{
	ws_wait_or_give_up(bar, parity, &ws_hung);
}

#define WS_NT 384 /* a producer and two consumer warpgroups */
#define WS_STAGES 2
#define WS_DQW 72 /* floats a dQ row in shared memory: 64 + 8 of padding */
#define WS_PROD_REGS 24
#define WS_CONS_REGS 240

/* Shared memory, from a 1024-byte aligned base: K and V (WB_BN rows),
 * WS_STAGES Q and dO tiles, two dS^T tiles, each consumer warpgroup's dQ
 * rows, per stage the rows' l2, dsum and qpos, the barriers (kv, full and
 * empty per stage), the query tiles' classes; 1024 bytes of slack to align
 * the base. */
#define WS_KV(D) ((uint32_t)(WB_BN * (D) * 2))
#define WS_QT(D) ((uint32_t)(WB_BM * (D) * 2))
#define WS_Q(D, s) (2 * WS_KV(D) + (uint32_t)(s) * WS_QT(D))
#define WS_O(D, s) (2 * WS_KV(D) + (uint32_t)(WS_STAGES + (s)) * WS_QT(D))
#define WS_S(D, i) (2 * WS_KV(D) + 2 * WS_STAGES * WS_QT(D) + \
		    (uint32_t)(i) * WB_BN * WB_BM * 2)
#define WS_DQ(D) WS_S(D, 2)
#define WS_ST(D) (WS_DQ(D) + 2 * WB_BM * WS_DQW * 4)
#define WS_BAR(D) (WS_ST(D) + WS_STAGES * 3 * WB_BM * 4)
#define WS_CLS(D) (WS_BAR(D) + 64)

static size_t ws_smem(int d, long long sq)
{
	return 1024 + (d == 64 ? WS_CLS(64) : WS_CLS(128)) +
	       fl_cls_bytes(sq, WB_BM);
}

/* The four tensor maps (ws_map): q and dout [batch, sq, nh, hd] with
 * 64-row boxes, k and v [batch, sk, nkv, hd] with WB_BN-row boxes. */
struct ws_maps {
	CUtensorMap q, o, k, v;
};

/* A block's place: its aligned base (shared and generic), its key tile,
 * group and batch, and its items (fl_next over the classes). */
struct ws_blk {
	uint32_t base;
	unsigned char *gb, *cls;
	int b, g, k0, nqt, grp, nit, it0;
};

/* Barriers: kv (K and V in), full and empty of stage s. */
static __device__ __forceinline__ uint32_t ws_bar(const ws_blk &k, int D,
						  int which)
{
	return k.base + WS_BAR(D) + 8 * which;
}
#define WS_B_KV 0
#define WS_B_FULL(s) (1 + (s))
#define WS_B_EMPTY(s) (1 + WS_STAGES + (s))

/* The tiles and statistics of stage s, dS^T buffer i. */
static __device__ __forceinline__ void ws_at(wb_tiles *t, const ws_blk &k,
					     int D, int s, int i)
{
	float *st = (float *)(k.gb + WS_ST(D)) + s * 3 * WB_BM;

	t->k = k.base;
	t->v = k.base + WS_KV(D);
	t->q = k.base + WS_Q(D, s);
	t->o = k.base + WS_O(D, s);
	t->s = k.base + WS_S(D, i);
	t->l2 = st;
	t->ds = st + WB_BM;
	t->qp = (int *)(st + 2 * WB_BM);
}

/* Rows [r0, r0 + R) of head h, batch b of the tensor behind map m (R the
 * map's box rows) into the swizzled tile at s, D / 64 boxes, completing
 * on barrier bar. */
template <int D, int R>
static __device__ __forceinline__ void ws_load(uint32_t s, const CUtensorMap *m,
					       int h, int r0, int b,
					       uint32_t bar)
{
#pragma unroll
	for (int a = 0; a < D / 64; a++)
		ws_tma4(s + a * R * 128, m, 64 * a, h, r0, b, bar);
}

/* Stage s's Q and dO tiles of query rows q0.., head h, batch b, expected
 * on barrier bar (one arrival, the tiles' bytes). */
template <int D>
static __device__ __forceinline__ void ws_load_qo(const ws_maps &m,
						  uint32_t q, uint32_t o,
						  int h, int q0, int b,
						  uint32_t bar)
{
	ws_arrive_tx(bar, 2 * WS_QT(D));
	ws_load<D, WB_BM>(q, &m.q, h, q0, b, bar);
	ws_load<D, WB_BM>(o, &m.o, h, q0, b, bar);
}

/* Warpgroup 0: thread 0 loads K, V and every item's tiles, threads 32 ..
 * 95 the items' row statistics, each into the stage the consumers have
 * released (parity of the stage's round, flipped: the first round finds
 * the stages empty). */
template <int D>
static __device__ __forceinline__ void
ws_produce(const ws_maps &m, const fl_params &p, const ws_blk &k, int tid)
{
	int full, n = 0, r = tid - 32;

	if (tid == 0) {
		ws_arrive_tx(ws_bar(k, D, WS_B_KV), 2 * WS_KV(D));
		ws_load<D, WB_BN>(k.base, &m.k, k.g, k.k0, k.b,
				  ws_bar(k, D, WS_B_KV));
		ws_load<D, WB_BN>(k.base + WS_KV(D), &m.v, k.g, k.k0, k.b,
				  ws_bar(k, D, WS_B_KV));
	} else if (r < 0 || r >= WB_BM) {
		return;
	}
	for (int it = k.it0; it < k.nit;
	     it = fl_next(k.cls, it + 1, k.nit, k.nqt, &full), n++) {
		int s = n % WS_STAGES, h = k.g * k.grp + it / k.nqt;
		int q0 = (it % k.nqt) * WB_BM;
		wb_tiles t;

		ws_wait(ws_bar(k, D, WS_B_EMPTY(s)), ((n / WS_STAGES) & 1) ^ 1);
		ws_at(&t, k, D, s, 0);
		if (tid == 0) {
			ws_load_qo<D>(m, t.q, t.o, h, q0, k.b,
				      ws_bar(k, D, WS_B_FULL(s)));
			continue;
		}
		bwd_row(p, k.b, h, q0 + r, &t.l2[r], &t.ds[r], &t.qp[r]);
		ws_arrive(ws_bar(k, D, WS_B_FULL(s)));
	}
}

/* A consumer thread: its warpgroup (0, 1), warp in it, lane, and the
 * positions of its key rows. */
struct ws_thr {
	int wg, wq, lane, kp0, kp1;
};

/* x, which the compiler must take as unknown: the tile addresses of K
 * and V are the same for every item, and without this ptxas keeps every
 * wgmma descriptor made from them (two registers each, 40 in all at hd
 * 128) live across the item loop, which the consumers' registers cannot
 * afford. */
static __device__ __forceinline__ uint32_t ws_opaque(uint32_t x)
{
	asm volatile("" : "+r"(x));
	return x;
}

/* bwd_softmax (kernels/flash_bwd.cuh), the same operations on the same
 * values, 16 query columns at a time, each pair of n-tiles packed into
 * the A fragments pf (P^T) and sf (dS^T) as soon as it is done, so that
 * st and dp die as pf and sf fill: at hd 128 the consumers' 240 registers
 * hold dK, dV and one set of the three, not all of them (ptxas spilled
 * the unfused order, bwd_softmax then fl_acc_to_a). */
static __device__ __forceinline__ void ws_softmax(const fl_params &p,
						  float st[WB_BM / 8][4],
						  float dp[WB_BM / 8][4],
						  uint32_t pf[WB_BM / 16][4],
						  uint32_t sf[WB_BM / 16][4],
						  const wb_tiles &t, int full,
						  const ws_thr &c)
{
#pragma unroll
	for (int j = 0; j < WB_BM / 16; j++) {
#pragma unroll
		for (int nt = 2 * j; nt < 2 * j + 2; nt++)
#pragma unroll
			for (int x = 0; x < 2; x++) {
				int col = nt * 8 + (c.lane & 3) * 2 + x;
				int qp = t.qp[col];
				float l2 = t.l2[col], ds = t.ds[col];
				float p0 = fl_exp2(st[nt][x] * p.scale_log2 - l2);
				float p1 = fl_exp2(st[nt][2 + x] * p.scale_log2 -
						   l2);

				if (!full && c.kp0 > qp)
					p0 = 0.0f;
				if (!full && c.kp1 > qp)
					p1 = 0.0f;
				st[nt][x] = p0;
				st[nt][2 + x] = p1;
				dp[nt][x] = p0 * (dp[nt][x] - ds);
				dp[nt][2 + x] = p1 * (dp[nt][2 + x] - ds);
			}
		fl_acc_to_a(pf[j], st[2 * j], st[2 * j + 1]);
		fl_acc_to_a(sf[j], dp[2 * j], dp[2 * j + 1]);
	}
}

/* One item for a consumer warpgroup. PIPE 0 ("ws", the `wg` kernel's
 * wb_item order): S^T and dP^T waited for, P^T and dS^T (ws_softmax),
 * dS^T stored, dV += P^T dO and dK += dS^T Q issued. PIPE 1 ("wsp",
 * wb_item_pipe's order): P^T while dP^T is still in the tensor cores, dV
 * issued, dS^T while dV runs, stored, dK issued. Then the barrier among
 * the warpgroups that read dS^T and dQ = dS K, which waits for every
 * product. dS^T is stored before the wgmma that reads sf from registers
 * is issued (reading an A fragment of a wgmma in flight is undefined: PTX
 * ISA "wgmma.mma_async"). dv, dk accumulate in registers, acc gets dS K
 * (unscaled) for ws_dq_out. t points at the item's stage, which is full,
 * and its dS^T buffer, whose generic address is gs. Registers: ptxas fits
 * both orders in 216 a thread at hd 128 and 200 at hd 64 without spills
 * (-Xptxas -v with WS_CONS_REGS lowered). */
template <int D, int PIPE>
static __device__ __forceinline__ void ws_item(const fl_params &p,
					       const wb_tiles &t,
					       const ws_thr &c,
					       float dk[D / 8][4],
					       float dv[D / 8][4],
					       float acc[8][4],
					       unsigned char *gs, int full)
{
	uint32_t sk = ws_opaque(t.k), rows = (uint32_t)c.wg * 64 * 128;
	float st[WB_BM / 8][4], dp[WB_BM / 8][4];
	uint32_t pf[WB_BM / 16][4], sf[WB_BM / 16][4];

#pragma unroll
	for (int nt = 0; nt < WB_BM / 8; nt++)
		for (int x = 0; x < 4; x++)
			st[nt][x] = dp[nt][x] = 0.0f;
	wg_pin<WB_BM / 8>(st);
	wg_pin<WB_BM / 8>(dp);
	wg_fence();
	wg_qk<WB_BM, D, WB_BN>(st, sk + rows, t.q);
	wg_qk<WB_BM, D, WB_BN>(dp, ws_opaque(t.v) + rows, t.o);
	if (PIPE) {
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
		wb_put_ds(gs, sf, c.wg * 64 + c.wq * 16 + (c.lane >> 2),
			  c.lane);
		wg_pin<D / 8>(dk);
		wg_pin_u32<WB_BM / 16>(sf);
		wg_fence();
		wg_pv<D, WB_BM>(dk, sf, t.q);
	} else {
		wg_wait<0>();
		wg_pin<WB_BM / 8>(st);
		wg_pin<WB_BM / 8>(dp);
		ws_softmax(p, st, dp, pf, sf, t, full, c);
		wb_put_ds(gs, sf, c.wg * 64 + c.wq * 16 + (c.lane >> 2),
			  c.lane);
		wg_pin<D / 8>(dv);
		wg_pin<D / 8>(dk);
		wg_pin_u32<WB_BM / 16>(pf);
		wg_pin_u32<WB_BM / 16>(sf);
		wg_fence();
		wg_pv<D, WB_BM>(dv, pf, t.o);
		wg_pv<D, WB_BM>(dk, sf, t.q);
	}
	wg_proxy_fence(); /* dS^T stored, visible to every wgmma */
	if (D == 128)
		ws_sync(1, 2 * 128);
	else
		ws_sync(2 + c.wg, 128);
#pragma unroll
	for (int nt = 0; nt < 8; nt++)
		acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
	wb_dq_mma<D>(acc, t.s, ws_opaque(sk), c.wg);
	wg_pin<D / 8>(dv);
	wg_pin<D / 8>(dk);
	wg_pin_u32<WB_BM / 16>(pf);
	wg_pin_u32<WB_BM / 16>(sf);
}

/* dq[rows q0 + 16 wq .., head h, batch b; columns c0 .. c0 + 63] +=
 * scale acc, acc being a warp's rows of a warpgroup's m64n64 accumulator
 * (rows 16 wq + lane / 4 and + 8): the warp stores them at shared address
 * sq (generic gq; 16 rows of WS_DQW floats), then lanes 0 .. 15 each add
 * one row with a bulk reduction. Before the stores, the warp's previous
 * reductions must have read their rows. */
template <int D>
static __device__ __forceinline__ void ws_dq_out(const fl_params &p,
						 const float acc[8][4],
						 uint32_t sq, float *gq, int b,
						 int h, int q0, int c0,
						 int lane)
{
	int row = q0 + lane;

	if (lane < 16)
		ws_bulk_wait_read();
	__syncwarp();
#pragma unroll
	for (int nt = 0; nt < 8; nt++)
#pragma unroll
		for (int r = 0; r < 2; r++)
			*(float2 *)(gq + ((lane >> 2) + 8 * r) * WS_DQW + 8 * nt +
				    2 * (lane & 3)) =
				make_float2(p.scale * acc[nt][2 * r],
					    p.scale * acc[nt][2 * r + 1]);
	wg_proxy_fence();
	__syncwarp();
	if (lane < 16 && row < p.sq) {
		ws_reduce_add(p.dq + (((long long)b * p.sq + row) * p.nh + h) *
					     D + c0,
			      sq + lane * WS_DQW * 4, 64 * 4);
		ws_bulk_commit();
	}
}

/* Consumer warpgroups: wait for K and V, then per item for its stage,
 * compute, release the stage (one arrival a warp, after the warp's last
 * read of it), send dQ; finally dk and dv as the `wg` kernel. ct: the
 * thread among the consumers (0 .. 255). */
template <int D, int PIPE>
static __device__ __forceinline__ void
ws_consume(const fl_params &p, const ws_blk &k, int ct, int split)
{
	int lane = ct & 31, kr = k.k0 + (ct >> 5) * 16 + (lane >> 2);
	ws_thr c = { ct >> 7, (ct >> 5) & 3, lane,
		     kr < p.sk ? fl_pos(p.kpos, kr) : INT_MAX,
		     kr + 8 < p.sk ? fl_pos(p.kpos, kr + 8) : INT_MAX };
	uint32_t sq = k.base + WS_DQ(D) + (uint32_t)(ct >> 5) * 16 * WS_DQW * 4;
	float *gq = (float *)(k.gb + WS_DQ(D)) + (ct >> 5) * 16 * WS_DQW;
	float dk[D / 8][4], dv[D / 8][4], acc[8][4];
	int full, n = 0;

	fl_next(k.cls, k.it0, k.nit, k.nqt, &full);
#pragma unroll
	for (int dt = 0; dt < D / 8; dt++)
		for (int x = 0; x < 4; x++)
			dk[dt][x] = dv[dt][x] = 0.0f;
	ws_wait(ws_bar(k, D, WS_B_KV), 0);
	for (int it = k.it0; it < k.nit;
	     it = fl_next(k.cls, it + 1, k.nit, k.nqt, &full), n++) {
		int s = n % WS_STAGES, h = k.g * k.grp + it / k.nqt;
		wb_tiles t;

		ws_at(&t, k, D, s, n & 1);
		ws_wait(ws_bar(k, D, WS_B_FULL(s)), (n / WS_STAGES) & 1);
		ws_item<D, PIPE>(p, t, c, dk, dv, acc, k.gb + WS_S(D, n & 1), full);
		__syncwarp();
		if (lane == 0)
			ws_arrive(ws_bar(k, D, WS_B_EMPTY(s)));
		ws_dq_out<D>(p, acc, sq, gq, k.b, h,
			     (it % k.nqt) * WB_BM + c.wq * 16,
			     D == 128 ? 64 * c.wg : 0, lane);
	}
	bwd_store<D>(p, dk, dv, k.b, k.g, kr, lane, split);
	if (lane < 16)
		ws_bulk_wait();
}

/* Grid: (key tiles, nkv x split, batch), as the `wg` kernel's. Every
 * thread classifies the query tiles and finds the block's first item;
 * thread 0 sets up the barriers; then the warpgroups take their roles. */
template <int D, int PIPE>
__global__ void __launch_bounds__(WS_NT, 1)
fl_ws_bwd_kernel(const __grid_constant__ ws_maps m, const fl_params p,
		 int split)
{
	extern __shared__ __align__(1024) unsigned char ws_sm[];
	int tid = threadIdx.x, part = blockIdx.y % split, kmin, kmax, kall;
	int full;
	ws_blk k;

	k.base = wg_align(ws_sm);
	k.gb = ws_sm + (k.base - fl_smem(ws_sm));
	k.cls = k.gb + WS_CLS(D);
	k.b = blockIdx.z;
	k.g = blockIdx.y / split;
	k.k0 = blockIdx.x * WB_BN;
	k.nqt = (p.sq + WB_BM - 1) / WB_BM;
	k.grp = p.nh / p.nkv;
	k.nit = k.nqt * (k.grp * (part + 1) / split);
	fl_range(p.kpos, k.k0, WB_BN, p.sk, tid & 31, &kmin, &kmax, &kall);
	fl_classify(p.qpos, p.sq, WB_BM, kmin, kmax, kall, 0, k.cls, tid,
		    WS_NT);
	if (tid == 0) {
		ws_bar_init(ws_bar(k, D, WS_B_KV), 1);
		for (int s = 0; s < WS_STAGES; s++) {
			ws_bar_init(ws_bar(k, D, WS_B_FULL(s)), 1 + WB_BM);
			ws_bar_init(ws_bar(k, D, WS_B_EMPTY(s)), 8);
		}
		ws_bar_init_fence();
	}
	__syncthreads();
	k.it0 = fl_next(k.cls, k.nqt * (k.grp * part / split), k.nit, k.nqt,
			&full);
	if (k.it0 >= k.nit)
		return;
	if (__shfl_sync(0xffffffffu, tid / 128, 0) == 0) {
		ws_regs_dec<WS_PROD_REGS>();
		ws_produce<D>(m, p, k, tid);
		return;
	}
	ws_regs_inc<WS_CONS_REGS>();
	ws_consume<D, PIPE>(p, k, tid - 128, split);
}

/* ---- host: tensor maps, launch ------------------------------------------ */

static int ws_maps_make(ws_maps *m, const fl_params &p, int d)
{
	int rc = ws_map(&m->q, p.q, d, p.sq, p.nh, p.batch, WB_BM);

	if (!rc)
		rc = ws_map(&m->o, p.dout, d, p.sq, p.nh, p.batch, WB_BM);
	if (!rc)
		rc = ws_map(&m->k, p.k, d, p.sk, p.nkv, p.batch, WB_BN);
	if (!rc)
		rc = ws_map(&m->v, p.v, d, p.sk, p.nkv, p.batch, WB_BN);
	return rc;
}

/* The device's shared memory a block may opt into. */
static int ws_smem_max(void)
{
	int dev = 0, mx = 0;

	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&mx, cudaDevAttrMaxSharedMemoryPerBlockOptin,
				   dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return mx;
}

template <int D, int PIPE>
static int fl_ws_bwd_launch(const fl_params &p, const ws_maps &m,
			    size_t smem, cudaStream_t st)
{
	long long kt = (p.sk + WB_BN - 1) / WB_BN;
	int split = fl_bwd_split(p, kt * p.nkv * p.batch);
	dim3 grid((unsigned)kt, (unsigned)(p.nkv * split), p.batch);
	int rc = fl_dsum_launch<D>(p, st);

	if (rc)
		return rc;
	CUDACHECK(cudaFuncSetAttribute(fl_ws_bwd_kernel<D, PIPE>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_ws_bwd_kernel<D, PIPE><<<grid, WS_NT, smem, st>>>(m, p, split);
	CUDACHECK(cudaGetLastError());
	return 0;
}

int fl_ws_bwd_run(const fl_params &p, int hd, int pipe, cudaStream_t st)
{
	size_t smem = ws_smem(hd, p.sq);
	ws_maps m;
	int rc;

	if (!ws_encoder() || smem > (size_t)ws_smem_max())
		return fl_wg_bwd_run(p, hd, 0, st);
	rc = ws_maps_make(&m, p, hd);
	if (rc)
		return rc;
	if (hd == 64)
		return pipe ? fl_ws_bwd_launch<64, 1>(p, m, smem, st) :
			      fl_ws_bwd_launch<64, 0>(p, m, smem, st);
	return pipe ? fl_ws_bwd_launch<128, 1>(p, m, smem, st) :
		      fl_ws_bwd_launch<128, 0>(p, m, smem, st);
}

extern "C" int kern_flash_ws_bwd_check(void *stream)
{
	int hung = 0, zero = 0;

	CUDACHECK(cudaStreamSynchronize((cudaStream_t)stream));
	CUDACHECK(cudaMemcpyFromSymbol(&hung, ws_hung, sizeof(int)));
	if (!hung)
		return 0;
	CUDACHECK(cudaMemcpyToSymbol(ws_hung, &zero, sizeof(int)));
	return kern_set_error(KERN_EDEVICE,
			      "kern_flash_ws_bwd: a barrier wait gave up after "
			      "2^32 cycles (a producer/consumer protocol "
			      "mistake); the results are wrong");
}

/* ---- the ring and the dQ reduction alone, for the tests ----------------- */

#define WS_PROBE_ITEMS 6

/* Items n = 0 .. WS_PROBE_ITEMS - 1: query rows 64 (n / 2) .. of batch
 * n % 2, head h, loaded by thread 0 with ws_load_qo (the tensor behind
 * m.q and m.o) into stage n % WS_STAGES as the producer does, copied out
 * unswizzled by warpgroup 1 (out[n][0]: the Q slot, out[n][1]: the dO
 * slot), then released with one arrival per warp, as the consumers do. */
template <int D>
__global__ void __launch_bounds__(256, 1)
fl_ws_probe_tma_kernel(const __grid_constant__ ws_maps m, int h,
		       fl_bf16 *out)
{
	extern __shared__ __align__(1024) unsigned char ws_sm[];
	int tid = threadIdx.x, ct = tid - 128;
	ws_blk k = {};

	k.base = wg_align(ws_sm);
	k.gb = ws_sm + (k.base - fl_smem(ws_sm));
	if (tid == 0) {
		for (int s = 0; s < WS_STAGES; s++) {
			ws_bar_init(ws_bar(k, D, WS_B_FULL(s)), 1);
			ws_bar_init(ws_bar(k, D, WS_B_EMPTY(s)), 4);
		}
		ws_bar_init_fence();
	}
	__syncthreads();
	for (int n = 0; n < WS_PROBE_ITEMS && (tid == 0 || ct >= 0); n++) {
		int s = n % WS_STAGES, ph = (n / WS_STAGES) & 1;
		wb_tiles t;

		ws_at(&t, k, D, s, 0);
		if (tid == 0) {
			ws_wait(ws_bar(k, D, WS_B_EMPTY(s)), ph ^ 1);
			ws_load_qo<D>(m, t.q, t.o, h, 64 * (n / 2), n % 2,
				      ws_bar(k, D, WS_B_FULL(s)));
			continue;
		}
		ws_wait(ws_bar(k, D, WS_B_FULL(s)), ph);
		for (int i = ct; i < 2 * WB_BM * D; i += 128) {
			int slot = i / (WB_BM * D), r = i / D % WB_BM, c = i % D;
			uint32_t at = slot ? WS_O(D, s) : WS_Q(D, s);

			out[((n * 2 + slot) * WB_BM + r) * D + c] =
				*(const fl_bf16 *)(k.gb + at + wg_off(WB_BM, r, c));
		}
		__syncwarp();
		if ((ct & 31) == 0)
			ws_arrive(ws_bar(k, D, WS_B_EMPTY(s)));
	}
}

/* The probe's dS K value at query row r, column c (kernels/kern_flash.h). */
static __device__ __forceinline__ float ws_probe_val(int r, int c)
{
	return (float)((r * 7 + c * 13) % 29 - 14);
}

/* Two items (query rows 0 .. 63, 64 .. 127) of one consumer warpgroup's
 * dQ through ws_dq_out, acc holding ws_probe_val in the accumulator
 * layout; columns from 64 at hd 128 (the second warpgroup's), 0 at 64. */
template <int D>
__global__ void __launch_bounds__(128, 1)
fl_ws_probe_dq_kernel(const fl_params p, int h)
{
	extern __shared__ __align__(1024) unsigned char ws_sm[];
	uint32_t base = wg_align(ws_sm);
	unsigned char *gb = ws_sm + (base - fl_smem(ws_sm));
	int tid = threadIdx.x, wq = tid >> 5, lane = tid & 31;
	uint32_t sq = base + WS_DQ(D) + (uint32_t)wq * 16 * WS_DQW * 4;
	float *gq = (float *)(gb + WS_DQ(D)) + wq * 16 * WS_DQW, acc[8][4];

	for (int n = 0; n < 2; n++) {
		for (int nt = 0; nt < 8; nt++)
			for (int x = 0; x < 4; x++)
				acc[nt][x] = ws_probe_val(
					64 * n + 16 * wq + (lane >> 2) +
						8 * (x >> 1),
					8 * nt + 2 * (lane & 3) + (x & 1));
		ws_dq_out<D>(p, acc, sq, gq, 0, h, 64 * n + 16 * wq,
			     D == 128 ? 64 : 0, lane);
	}
	if (lane < 16)
		ws_bulk_wait();
}

extern "C" int kern_flash_ws_bwd_probe_tma(void *stream, int hd, int rows,
					   int nh, int h, const uint16_t *src,
					   uint16_t *out)
{
	cudaStream_t st = (cudaStream_t)stream;
	size_t smem = ws_smem(hd, 0);
	ws_maps m;
	int rc;

	if (!src || !out || (hd != 64 && hd != 128) || rows <= 128 ||
	    nh < 1 || h < 0 || h >= nh)
		return kern_set_error(KERN_EINVAL,
				      "kern_flash_ws_bwd_probe_tma: NULL tensor "
				      "or hd %d rows %d nh %d h %d out of range",
				      hd, rows, nh, h);
	if (!fl_wg_supported() || !ws_encoder())
		return kern_set_error(KERN_ENODEV,
				      "kern_flash_ws_bwd_probe_tma: needs a "
				      "compute capability 9.0 GPU (sm_90a) and "
				      "a CUDA 12 driver");
	rc = ws_map(&m.q, src, hd, rows, nh, 2, WB_BM);
	if (!rc)
		rc = ws_map(&m.o, src, hd, rows, nh, 2, WB_BM);
	if (rc)
		return rc;
	if (hd == 64) {
		CUDACHECK(cudaFuncSetAttribute(fl_ws_probe_tma_kernel<64>,
				cudaFuncAttributeMaxDynamicSharedMemorySize,
				(int)smem));
		fl_ws_probe_tma_kernel<64><<<1, 256, smem, st>>>(
			m, h, (fl_bf16 *)out);
	} else {
		CUDACHECK(cudaFuncSetAttribute(fl_ws_probe_tma_kernel<128>,
				cudaFuncAttributeMaxDynamicSharedMemorySize,
				(int)smem));
		fl_ws_probe_tma_kernel<128><<<1, 256, smem, st>>>(
			m, h, (fl_bf16 *)out);
	}
	CUDACHECK(cudaGetLastError());
	return 0;
}

extern "C" int kern_flash_ws_bwd_probe_dq(void *stream, int hd, int sq,
					  int nh, int h, float scale,
					  float *dq)
{
	cudaStream_t st = (cudaStream_t)stream;
	size_t smem = ws_smem(hd, 0);
	fl_params p = {};

	if (!dq || (hd != 64 && hd != 128) || sq < 1 || nh < 1 || h < 0 ||
	    h >= nh)
		return kern_set_error(KERN_EINVAL,
				      "kern_flash_ws_bwd_probe_dq: NULL dq or "
				      "hd %d sq %d nh %d h %d out of range", hd,
				      sq, nh, h);
	if (!fl_wg_supported())
		return kern_set_error(KERN_ENODEV,
				      "kern_flash_ws_bwd_probe_dq: needs a "
				      "compute capability 9.0 GPU (sm_90a)");
	p.batch = 1;
	p.sq = sq;
	p.nh = nh;
	p.scale = scale;
	p.dq = dq;
	if (hd == 64) {
		CUDACHECK(cudaFuncSetAttribute(fl_ws_probe_dq_kernel<64>,
				cudaFuncAttributeMaxDynamicSharedMemorySize,
				(int)smem));
		fl_ws_probe_dq_kernel<64><<<1, 128, smem, st>>>(p, h);
	} else {
		CUDACHECK(cudaFuncSetAttribute(fl_ws_probe_dq_kernel<128>,
				cudaFuncAttributeMaxDynamicSharedMemorySize,
				(int)smem));
		fl_ws_probe_dq_kernel<128><<<1, 128, smem, st>>>(p, h);
	}
	CUDACHECK(cudaGetLastError());
	return 0;
}
