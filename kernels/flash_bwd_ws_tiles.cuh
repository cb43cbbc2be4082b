/*
 * flash_bwd_ws_tiles.cuh: the shared-memory layout, the TMA loads and the
 * dQ bulk reduction of the warp-specialized flash backward
 * (kernels/kern_flash_ws_bwd.cu, whose top comment describes the scheme),
 * shared with its probes (kernels/kern_flash_ws_bwd_probe.cu), which run
 * these same functions alone. sm_90a only.
 *
 * A block owns WB_BN = 128 key rows; an item is a query tile of BM rows
 * (64, or 128 at hd 64); D is the head dimension. Tiles are
 * kernels/flash_wgmma.cuh's swizzled atoms, which the TMA's 128-byte
 * swizzle writes directly (kernels/flash_bwd_ws.cuh's top comment).
 */
#ifndef GTPLAN_FLASH_BWD_WS_TILES_CUH
#define GTPLAN_FLASH_BWD_WS_TILES_CUH

#include "flash_bwd_wgmma.cuh"
#include "flash_bwd_ws.cuh"

#define WS_STAGES 2
#define WS_DQW 72 /* floats a dQ row in shared memory: 64 + 8 of padding */

/* Query rows an item of the ws backward: 128 at hd 64, 64 at hd 128
 * (kernels/kern_flash_ws_bwd.cu's top comment). */
static __host__ __device__ constexpr int ws_bm(int d)
{
	return d == 64 ? 128 : 64;
}

/* Byte offsets from the block's 1024-byte aligned base: K and V (WB_BN
 * rows), WS_STAGES Q and dO tiles, two dS^T tiles (WB_BN x BM), the 128
 * query rows of dQ of the consumer warps (16 a warp, WS_DQW floats a
 * row: the fragment stores then hit 32 distinct banks), per stage the
 * rows' l2, dsum and qpos, the barriers (kv, then full and empty per
 * stage), the query tiles' classes. */
template <int D, int BM>
struct ws_lay {
	static constexpr uint32_t kv = WB_BN * D * 2, qt = BM * D * 2;
	static constexpr uint32_t q = 2 * kv, o = q + WS_STAGES * qt;
	static constexpr uint32_t ss = WB_BN * BM * 2, s = o + WS_STAGES * qt;
	static constexpr uint32_t dq = s + 2 * ss;
	static constexpr uint32_t st = dq + 2 * 64 * WS_DQW * 4;
	static constexpr uint32_t bar = st + WS_STAGES * 3 * BM * 4;
	static constexpr uint32_t cls = bar + 64;
};

/* Dynamic shared memory of a block: the layout, the classes of sq query
 * rows in tiles of BM, 1024 bytes of slack to align the base. */
template <int D, int BM>
static size_t ws_smem(long long sq)
{
	return 1024 + ws_lay<D, BM>::cls + fl_cls_bytes(sq, BM);
}

/* The four tensor maps (ws_map): q and dout [batch, sq, nh, hd] with
 * BM-row boxes, k and v [batch, sk, nkv, hd] with WB_BN-row boxes. */
struct ws_maps {
	CUtensorMap q, o, k, v;
};

/* A block's place: its aligned base (shared and generic), its key tile,
 * group and batch, and its items (ws_next over the classes at shared
 * address cls). */
struct ws_blk {
	uint32_t base, cls;
	unsigned char *gb;
	int b, g, k0, nqt, grp, nit, it0;
};

/* fl_next (kernels/flash_common.cuh) reading the classes by shared
 * address: the first item >= it of n that is not skipped, n if none. */
static __device__ __forceinline__ int ws_next(uint32_t cls, int it, int n,
					      int period, int *full)
{
	for (; it < n; it++) {
		int c = ws_ld_u8(cls + it % period);

		if (c != FL_SKIP) {
			*full = c == FL_FULL;
			return it;
		}
	}
	return n;
}

#define WS_B_KV 0
#define WS_B_FULL(s) (1 + (s))
#define WS_B_EMPTY(s) (1 + WS_STAGES + (s))

/* Barrier `which` (WS_B_*). */
template <int D, int BM>
static __device__ __forceinline__ uint32_t ws_bar(const ws_blk &k, int which)
{
	return k.base + ws_lay<D, BM>::bar + 8 * which;
}

/* The tiles and statistics of stage s, dS^T buffer i. */
template <int D, int BM>
static __device__ __forceinline__ void ws_at(wb_tiles *t, const ws_blk &k,
					     int s, int i)
{
	typedef ws_lay<D, BM> L;
	float *st = (float *)(k.gb + L::st) + s * 3 * BM;

	t->k = k.base;
	t->v = k.base + L::kv;
	t->q = k.base + L::q + s * L::qt;
	t->o = k.base + L::o + s * L::qt;
	t->s = k.base + L::s + i * L::ss;
	t->l2 = st;
	t->ds = st + BM;
	t->qp = (int *)(st + 2 * BM);
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
		tma_load4(s + a * R * 128, m, bar, 64 * a, h, r0, b);
}

/* A stage's Q and dO tiles (shared q, o) of query rows q0.., head h,
 * batch b, expected on barrier bar (one arrival, the tiles' bytes). */
template <int D, int BM>
static __device__ __forceinline__ void ws_load_qo(const ws_maps &m,
						  uint32_t q, uint32_t o,
						  int h, int q0, int b,
						  uint32_t bar)
{
	mb_expect(bar, 2 * ws_lay<D, BM>::qt);
	ws_load<D, BM>(q, &m.q, h, q0, b, bar);
	ws_load<D, BM>(o, &m.o, h, q0, b, bar);
}

/* dq[rows q0 .. q0 + 15, head h, batch b; columns c0 .. c0 + 63] +=
 * scale acc, acc being a warp's rows of a warpgroup's m64n64 accumulator
 * (rows lane / 4 and + 8 of the warp's 16): the warp stores them at
 * shared address sq (16 rows of WS_DQW floats), then lanes 0 .. 15 each
 * add one row (256 bytes) with a bulk reduction. Before the stores, the
 * warp's previous reductions must have read their rows. */
template <int D>
static __device__ __forceinline__ void ws_dq_out(const fl_params &p,
						 const float acc[8][4],
						 uint32_t sq, int b, int h,
						 int q0, int c0, int lane)
{
	int row = q0 + lane;

	if (lane < 16)
		ws_bulk_wait_read();
	__syncwarp();
#pragma unroll
	for (int nt = 0; nt < 8; nt++)
#pragma unroll
		for (int r = 0; r < 2; r++)
			ws_st_f32x2(sq + 4 * (((lane >> 2) + 8 * r) * WS_DQW +
					      8 * nt + 2 * (lane & 3)),
				    p.scale * acc[nt][2 * r],
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

/* kern<<<grid, nt, smem, st>>>(args...), after allowing it smem bytes of
 * dynamic shared memory and clearing ws_abort (flash_bwd_ws.cuh) in the
 * stream's order. */
template <typename... P, typename... A>
static int ws_launch(void (*kern)(P...), dim3 grid, int nt, size_t smem,
		     cudaStream_t st, A... args)
{
	static void *abort_flag;

	if (!abort_flag)
		CUDACHECK(cudaGetSymbolAddress(&abort_flag, ws_abort));
	CUDACHECK(cudaMemsetAsync(abort_flag, 0, sizeof(int), st));
	CUDACHECK(cudaFuncSetAttribute(kern,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	kern<<<grid, nt, smem, st>>>(args...);
	CUDACHECK(cudaGetLastError());
	return 0;
}

#endif
