/*
 * flash_bwd_wgmma.cuh: the wgmma backward's steps (sm_90a only), written
 * for kernels/kern_flash_wg_bwd.cu (every thread loads and computes) and
 * its probes: a block of WB_NWG warpgroups of 64 key rows against query
 * tiles of WB_BM rows keeps the key rows' dK and dV in registers and
 * computes, per warpgroup, S^T and dP^T with the keys as rows, P^T and
 * dS^T from them (the steps of kernels/flash_bwd.cuh's bwd_softmax, split
 * in two so that a product may run between them: wg_bwd's wgp schedule),
 * dS^T into a swizzled shared tile, and dQ = dS K from that tile
 * (wb_dq_mma); the layouts are kern_flash_wg_bwd.cu's top comment's. The
 * warp-specialized backward (kernels/kern_flash_ws_bwd.cu) shares the key
 * tile (WB_BN) and the item's tile addresses (wb_tiles) and has its own
 * steps for its query tiles of any size.
 */
#ifndef GTPLAN_FLASH_BWD_WGMMA_CUH
#define GTPLAN_FLASH_BWD_WGMMA_CUH

#include "flash_bwd.cuh"
#include "flash_wgmma.cuh"

#define WB_NWG 2 /* warpgroups a block */
#define WB_NT (128 * WB_NWG)
#define WB_BN (64 * WB_NWG) /* keys a block */
#define WB_BM FL_BWD_BM	    /* queries an item */

/* A block's shared tiles (shared addresses) and statistics (generic). */
struct wb_tiles {
	uint32_t k, v, q, o, s; /* q, o: the current buffer */
	float *l2, *ds;
	int *qp;
};

/* dS^T (A fragments sf, the thread's key rows `row` and row + 8 of the
 * block) into the swizzled WB_BN x 64 tile at generic address gs. */
static __device__ __forceinline__ void wb_put_ds(unsigned char *gs,
						 const uint32_t sf[4][4],
						 int row, int lane)
{
#pragma unroll
	for (int j = 0; j < 4; j++)
#pragma unroll
		for (int x = 0; x < 4; x++) {
			int r = row + (x & 1) * 8;
			int c = 16 * j + (x >> 1) * 8 + (lane & 3) * 2;

			*(uint32_t *)(gs + wg_off(WB_BN, r, c)) = sf[j][x];
		}
}

/* acc [64 queries x 64] = dS K, waited for; ss is the dS^T tile, sk the
 * K tile (WB_BN rows each, atoms of 64 columns). At hd 128 warpgroup wg
 * takes columns 64 wg .. 64 wg + 63 over all WB_BN keys (wg_tt64 from
 * the K tile's atom wg); at hd 64 it takes all 64 columns over its own 64
 * keys (rows 64 wg ..), and the caller sums the two warpgroups' shares. */
template <int D>
static __device__ __forceinline__ void wb_dq_mma(float acc[8][4],
						 uint32_t ss, uint32_t sk,
						 int wg)
{
	wg_pin<8>(acc);
	wg_fence();
	if (D == 128)
		wg_tt64<WB_BN, WB_BN, WB_BN>(acc, ss, sk + wg * WB_BN * 128);
	else
		wg_tt64<64, WB_BN, WB_BN>(acc, ss + wg * 64 * 128,
					  sk + wg * 64 * 128);
	wg_wait<0>();
	wg_pin<8>(acc);
}

/* bwd_softmax (kernels/flash_bwd.cuh) in its two halves, for
 * wb_item_pipe: P^T into st, then dS^T = P^T (dP^T - dsum) into dp; the
 * same operations, so the same values. */
static __device__ __forceinline__ void wb_p(const fl_params &p,
					    float st[WB_BM / 8][4],
					    const wb_tiles &t, int full,
					    int kp0, int kp1, int lane)
{
#pragma unroll
	for (int nt = 0; nt < WB_BM / 8; nt++)
#pragma unroll
		for (int j = 0; j < 2; j++) {
			int col = nt * 8 + (lane & 3) * 2 + j, qp = t.qp[col];
			float l2 = t.l2[col];
			float p0 = fl_exp2(st[nt][j] * p.scale_log2 - l2);
			float p1 = fl_exp2(st[nt][2 + j] * p.scale_log2 - l2);

			st[nt][j] = !full && kp0 > qp ? 0.0f : p0;
			st[nt][2 + j] = !full && kp1 > qp ? 0.0f : p1;
		}
}

static __device__ __forceinline__ void wb_ds(const float st[WB_BM / 8][4],
					     float dp[WB_BM / 8][4],
					     const wb_tiles &t, int lane)
{
#pragma unroll
	for (int nt = 0; nt < WB_BM / 8; nt++)
#pragma unroll
		for (int j = 0; j < 2; j++) {
			float ds = t.ds[nt * 8 + (lane & 3) * 2 + j];

			dp[nt][j] = st[nt][j] * (dp[nt][j] - ds);
			dp[nt][2 + j] = st[nt][2 + j] * (dp[nt][2 + j] - ds);
		}
}

#endif
