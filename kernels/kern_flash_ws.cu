/*
 * kern_flash_ws: the warp-specialized flash attention forward on Hopper
 * (FlashAttention-3's producer / consumer design: Shah et al. 2024,
 * arXiv:2407.08608, and its hopper/flash_fwd_kernel_sm90.h and
 * hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp), kern_flash_fwd's contract
 * (kernels/kern_flash.h) for compute capability 9.0: compiled for sm_90a
 * (Makefile: WG_GENCODE); kern_flash_fwd (kernels/kern_flash.cu) calls it
 * under GTPLAN_FLASH=ws, kern_flash_fwd_with(KERN_FLASH_WS) always.
 *
 * A block owns BM = 64 NWG query rows of one head: warpgroup 0 is the
 * producer, warpgroups 1 .. NWG the consumers (64 rows each). hd 128: two
 * consumers, hd 64: three (FlashAttention-3's hopper/tile_size.h: 128 x
 * 128 and 192 x 128 tiles with intra-warpgroup overlap); key tiles of 128
 * (WS_BN) either way.
 *  - Producer: setmaxnreg.dec to 24 (32 with three consumers), and one
 *    thread issues every load: the Q tile once, then for each key tile
 *    that the block's rows attend (fl_classify's schedule in shared
 *    memory, as the other forwards) K into stage i % NS of the K ring
 *    and V into the V ring, each by TMA (cp.async.bulk.tensor, 128-byte
 *    swizzle: the layout of wg_load_tile, which the wgmma descriptors of
 *    kernels/flash_wgmma.cuh expect; D / 64 boxes of 64 columns a tile).
 *    Per stage a "full" barrier (the producer's arrive.expect_tx of the
 *    tile's bytes; the TMA's complete_tx finishes it) and an "empty" one
 *    (one arrival per consumer warp once its wgmma reading the stage has
 *    completed); the producer waits "empty" before it overwrites a stage.
 *    TMA rather than cp.async from the producer warpgroup: one thread
 *    issues a whole tile, the swizzle is the hardware's (probed against
 *    wg_load_tile by kern_flash_ws_probe), rows past sq or sk read as
 *    zeros, and the 4-d map (column, head, row, batch) serves GQA without
 *    copying K or V.
 *  - Consumers: setmaxnreg.inc to 240 (160), then per key tile i the
 *    schedule of kern_flash_wg.cu's wg_run_pipe (S_i = Q K_i^T issued with
 *    O += P_{i-1} V_{i-1}, S_i's softmax while the latter runs), plus
 *    FlashAttention-3's inter-warpgroup ping-pong: a consumer issues its
 *    products only in its turn (bar.sync on its named barrier, ids 1 ..
 *    NWG) and hands the turn to the next (bar.arrive on the next one's),
 *    so that one warpgroup's softmax runs while another's products are in
 *    the tensor cores. The turn passes once per key tile and per
 *    consumer; the last consumer hands it to the first except after its
 *    last tile, and the first gets the first turn from the last before the
 *    loop: every barrier sees as many arrivals as syncs (no barrier is
 *    left half arrived when the block exits). Every consumer walks the
 *    same schedule, so the counts match.
 *  - Softmax (ws_softmax): fl_fwd_stats's (kernels/flash_fwd.cuh) in
 *    base 2 with the scale folded into log2(e) and into the exponent's
 *    FFMA, the per-element mask (fl_fwd_mask) only on partial tiles.
 *  - Output: o / l rounded to bf16 into the consumer's own Q rows of
 *    shared memory (no longer read: its last product has completed; a
 *    proxy fence orders the wgmma reads before the generic writes), then
 *    16-byte stores of whole rows; lse as kern_flash_wg.cu.
 * Grid: (query tiles, heads, batch), the last query tiles (the most keys
 * under a causal mask) first. Rings of 2 stages at hd 128 (Q, 2 K and 2 V
 * tiles: 161 KiB of shared memory), 4 at hd 64 (153 KiB). ptxas (CUDA
 * 13.0, -Xptxas -v): 168 registers a thread at launch for hd 128 (128 for
 * hd 64), the rest moved by setmaxnreg, no spills.
 *
 * The kernel needs the tensor maps of cuTensorMapEncodeTiled
 * (kernels/flash_tma.cuh: 16-byte aligned q, k, v, at least one key and
 * one query row, tensors under 2^40 bytes), scale > 0 (ws_softmax) and
 * shared memory for its tile schedule (fl_ws_smem, under the device's
 * opt-in limit up to about 8 million keys at hd 128); where a call fails
 * that, fl_ws_run runs the pipelined wgmma kernel
 * (kern_flash_wg.cu's wgp), which serves every call of the contract.
 *
 * Besides kern_flash_wg.cu's PTX facts (wgmma layouts, fences, proxies)
 * and flash_tma.cuh's (mbarrier, cp.async.bulk.tensor, setmaxnreg, named
 * barriers), this relies on "Asynchronous Warpgroup Level Matrix
 * Multiply-Accumulate Instructions" / "wgmma.wait_group": a consumer warp
 * releases a stage after its wait_group covering the wgmma that read it,
 * and the wgmma (a warpgroup operation) has then finished reading.
 */
#include "flash_fwd.cuh"
#include "flash_wgmma.cuh"
#include "flash_tma.cuh"

#define WS_BN 128 /* keys a tile */

/* Consumer warpgroups, ring stages, producer and consumer registers. */
template <int D>
struct ws_cfg;
template <>
struct ws_cfg<128> {
	enum { NWG = 2, NS = 2, RP = 24, RC = 240 };
};
template <>
struct ws_cfg<64> {
	enum { NWG = 3, NS = 4, RP = 32, RC = 160 };
};

#define WS_BM(D) (64 * ws_cfg<D>::NWG)
#define WS_NT(D) (128 * (ws_cfg<D>::NWG + 1))
#define WS_TILE(D) ((uint32_t)(WS_BN * (D) * sizeof(fl_bf16)))

/* Shared memory: 1024 bytes of slack for the swizzle alignment, Q, the K
 * and V rings, the barriers (Q, then full K, empty K, full V, empty V per
 * stage), the tile schedule. */
static size_t fl_ws_smem(int d, int ns, int bm, long long sk)
{
	return 1024 + (size_t)bm * d * 2 + 2 * (size_t)ns * WS_BN * d * 2 +
	       8 * (1 + 4 * (size_t)ns) + fl_cls_bytes(sk, WS_BN);
}

struct ws_smem {
	unsigned char *base; /* generic address of q */
	uint32_t q, k, v, bar;
	const unsigned char *cls;
};

template <int D>
static __device__ __forceinline__ ws_smem ws_layout(unsigned char *sm)
{
	constexpr int NS = ws_cfg<D>::NS;
	ws_smem s;

	s.q = wg_align(sm);
	s.base = sm + (s.q - fl_smem(sm));
	s.k = s.q + WS_BM(D) * D * 2;
	s.v = s.k + NS * WS_TILE(D);
	s.bar = s.v + NS * WS_TILE(D);
	s.cls = s.base + (s.bar + 8 * (1 + 4 * NS) - s.q);
	return s;
}

/* Barrier addresses: kind 0 full K, 1 empty K, 2 full V, 3 empty V. */
template <int D>
static __device__ __forceinline__ uint32_t ws_bar(const ws_smem &s, int kind,
						  int st)
{
	return s.bar + 8 * (1 + kind * ws_cfg<D>::NS + st);
}

/* The producer thread: Q, then K and V of every scheduled key tile. */
template <int D>
static __device__ void ws_produce(const ws_smem &s, const CUtensorMap *tq,
				  const CUtensorMap *tk, const CUtensorMap *tv,
				  int q0, int h, int kvh, int b, int nkt)
{
	constexpr int NS = ws_cfg<D>::NS, BM = WS_BM(D);
	int full, t = fl_next(s.cls, 0, nkt, nkt, &full);

	if (t >= nkt)
		return;
	mb_expect(s.bar, BM * D * 2);
#pragma unroll
	for (int a = 0; a < D / 64; a++)
		tma_load4(s.q + a * BM * 128, tq, s.bar, a * 64, h, q0, b);
	for (int i = 0; t < nkt; i++, t = fl_next(s.cls, t + 1, nkt, nkt, &full)) {
		int st = i % NS;
		uint32_t ph = ((i / NS) & 1) ^ 1, off = st * WS_TILE(D);

		mb_wait(ws_bar<D>(s, 1, st), ph);
		mb_expect(ws_bar<D>(s, 0, st), WS_TILE(D));
#pragma unroll
		for (int a = 0; a < D / 64; a++)
			tma_load4(s.k + off + a * WS_BN * 128, tk,
				  ws_bar<D>(s, 0, st), a * 64, kvh, t * WS_BN, b);
		mb_wait(ws_bar<D>(s, 3, st), ph);
		mb_expect(ws_bar<D>(s, 2, st), WS_TILE(D));
#pragma unroll
		for (int a = 0; a < D / 64; a++)
			tma_load4(s.v + off + a * WS_BN * 128, tv,
				  ws_bar<D>(s, 2, st), a * 64, kvh, t * WS_BN, b);
	}
}

/* A consumer thread's rows (g and g + 8 of its warp's 16). */
template <int D>
struct ws_rows {
	float o[D / 8][4], s[WS_BN / 8][4], m[2], l[2];
	uint32_t pf[WS_BN / 16][4]; /* P of the last tile as A fragments */
	int qp[2];
};

/* O += P V with the P of r.pf and the V stage at sv; waited for, stage
 * released by this warp. */
template <int D>
static __device__ __forceinline__ void ws_last_pv(ws_rows<D> &r, uint32_t sv,
						  uint32_t empty, int lane)
{
	wg_pin<D / 8>(r.o);
	wg_pin_u32<WS_BN / 16>(r.pf);
	wg_fence();
	wg_pv<D, WS_BN>(r.o, r.pf, sv);
	wg_wait<0>();
	wg_pin<D / 8>(r.o);
	if (lane == 0)
		mb_arrive(empty);
}

/* Consumer c hands the turn to the next one (top comment); the last
 * consumer not after its last tile (more: a key tile follows). */
template <int NWG>
static __device__ __forceinline__ void ws_pass(int c, int more)
{
	if (NWG > 1 && (c < NWG - 1 || more))
		nb_arrive(1 + (c + 1) % NWG, 256);
}

/* S_i's online softmax: fl_fwd_mask and fl_fwd_stats's arithmetic with
 * the scale folded into the exponent, one FFMA and one ex2 a score (as
 * FlashAttention-3's softmax): p = exp2(s sl - m), m the running row max
 * of s sl (base 2, as fl_fwd_stats keeps it), sl = scale log2(e) > 0
 * (fl_ws_run's condition), so max(s) sl = max(s sl) and a masked -inf
 * stays -inf. The per-element mask runs on partial tiles only (full is
 * the same for the whole warpgroup). corr as fl_fwd_stats. */
template <int D>
static __device__ __forceinline__ void ws_softmax(ws_rows<D> &r,
						  const fl_params &p, int k0,
						  int lane, int full,
						  float corr[2])
{
	const float sl = p.scale_log2;

	if (!full)
		fl_fwd_mask<WS_BN, 0>(r.s, p, k0, lane, r.qp, 0);
#pragma unroll
	for (int x = 0; x < 2; x++) {
		float mx = -INFINITY, base;

#pragma unroll
		for (int nt = 0; nt < WS_BN / 8; nt++)
			mx = fmaxf(mx, fmaxf(r.s[nt][2 * x], r.s[nt][2 * x + 1]));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
		mx = fmaxf(r.m[x], mx * sl);
		base = mx == -INFINITY ? 0.0f : mx;
		corr[x] = fl_exp2(r.m[x] - base);
		r.m[x] = mx;
		r.l[x] *= corr[x];
#pragma unroll
		for (int nt = 0; nt < WS_BN / 8; nt++)
#pragma unroll
			for (int j = 0; j < 2; j++) {
				float e = fl_exp2(fmaf(r.s[nt][2 * x + j], sl, -base));

				r.s[nt][2 * x + j] = e;
				r.l[x] += e;
			}
	}
}

/* The key tiles of consumer c (rows sq of the Q tile): FlashAttention-3's
 * intra-warpgroup overlap inside the inter-warpgroup ping-pong (top
 * comment). */
template <int D>
static __device__ void ws_consume(ws_rows<D> &r, const fl_params &p,
				  const ws_smem &s, uint32_t sq, int c,
				  int nkt, int lane)
{
	constexpr int NWG = ws_cfg<D>::NWG, NS = ws_cfg<D>::NS;
	int full, t = fl_next(s.cls, 0, nkt, nkt, &full);

	if (t >= nkt)
		return;
	if (NWG > 1 && c == NWG - 1)
		nb_arrive(1, 256); /* consumer 0 has the first turn */
	mb_wait(s.bar, 0);
	for (int i = 0; t < nkt; i++) {
		int st = i % NS, sp = (i + NS - 1) % NS, fulln;
		int tn = fl_next(s.cls, t + 1, nkt, nkt, &fulln);
		uint32_t ph = (i / NS) & 1, php = ((i - 1) / NS) & 1;
		float corr[2];

		mb_wait(ws_bar<D>(s, 0, st), ph);
		if (i)
			mb_wait(ws_bar<D>(s, 2, sp), php);
		if (NWG > 1)
			nb_sync(1 + c, 256);
		wg_pin<WS_BN / 8>(r.s);
		wg_fence();
		wg_qk<WS_BN, D, WS_BM(D)>(r.s, sq, s.k + st * WS_TILE(D));
		/* the turn passes between issue and wait (FlashAttention-3's
		 * order), in both branches: with one pass between two
		 * `if (i)` ptxas (CUDA 13.0) serialises the wgmma (C7514) */
		if (i) {
			wg_pin<D / 8>(r.o);
			wg_pin_u32<WS_BN / 16>(r.pf);
			wg_fence();
			wg_pv<D, WS_BN>(r.o, r.pf, s.v + sp * WS_TILE(D));
			ws_pass<NWG>(c, tn < nkt);
			wg_wait<1>(); /* S_i; P_{i-1} V_{i-1} may run on */
		} else {
			ws_pass<NWG>(c, tn < nkt);
			wg_wait<0>();
		}
		wg_pin<WS_BN / 8>(r.s);
		if (lane == 0)
			mb_arrive(ws_bar<D>(s, 1, st));
		ws_softmax<D>(r, p, t * WS_BN, lane, full, corr);
		wg_wait<0>();
		wg_pin<D / 8>(r.o);
		wg_pin_u32<WS_BN / 16>(r.pf);
		if (i && lane == 0)
			mb_arrive(ws_bar<D>(s, 3, sp));
		fl_fwd_rescale<D>(r.o, corr);
#pragma unroll
		for (int j = 0; j < WS_BN / 16; j++)
			fl_acc_to_a(r.pf[j], r.s[2 * j], r.s[2 * j + 1]);
		if (tn >= nkt) {
			mb_wait(ws_bar<D>(s, 2, st), ph);
			ws_last_pv<D>(r, s.v + st * WS_TILE(D),
				      ws_bar<D>(s, 3, st), lane);
		}
		t = tn;
		full = fulln;
	}
}

/* o = O / l as bf16 through the consumer's Q rows (row0: its first query
 * row, tc its thread 0..127) with 16-byte row stores; lse per row. */
template <int D>
static __device__ void ws_store(const fl_params &p, ws_rows<D> &r,
				const ws_smem &s, int c, int b, int h,
				int row0, int tc)
{
	constexpr int BM = WS_BM(D), CH = D / 8;
	int lane = tc & 31, wr = c * 64 + (tc >> 5) * 16 + (lane >> 2);

	wg_proxy_fence();
#pragma unroll
	for (int x = 0; x < 2; x++) {
		float sum = r.l[x], inv;
		int row = row0 + (tc >> 5) * 16 + (lane >> 2) + 8 * x;

		sum += __shfl_xor_sync(0xffffffffu, sum, 1);
		sum += __shfl_xor_sync(0xffffffffu, sum, 2);
		inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
		for (int dt = 0; dt < D / 8; dt++)
			*(uint32_t *)(s.base + wg_off(BM, wr + 8 * x,
						      dt * 8 + 2 * (lane & 3))) =
				fl_pack(r.o[dt][2 * x] * inv,
					r.o[dt][2 * x + 1] * inv);
		if ((lane & 3) == 0 && row < p.sq)
			p.lse[((long long)b * p.nh + h) * p.sq + row] =
				sum > 0.0f ? (r.m[x] + log2f(sum)) * FL_LN2 :
					     -INFINITY;
	}
	nb_sync(1 + ws_cfg<D>::NWG + c, 128);
#pragma unroll
	for (int j = 0; j < 64 * CH / 128; j++) {
		int idx = tc + 128 * j, row = idx / CH, ch = idx % CH;

		if (row0 + row < p.sq)
			*(uint4 *)(p.out +
				   (((long long)b * p.sq + row0 + row) * p.nh + h) * D +
				   ch * 8) = *(const uint4 *)(s.base +
							      wg_off(BM, c * 64 + row,
								     ch * 8));
	}
}

/* Consumer c of the block at query row q0; tc its thread 0..127. */
template <int D>
static __device__ void ws_consumer(const fl_params &p, const ws_smem &s,
				   int c, int q0, int b, int h, int nkt,
				   int tc)
{
	int lane = tc & 31, row0 = q0 + c * 64;
	int r0 = row0 + (tc >> 5) * 16 + (lane >> 2);
	ws_rows<D> r;

#pragma unroll
	for (int i = 0; i < 2; i++) {
		int row = r0 + 8 * i;

		r.qp[i] = row < p.sq ? fl_pos(p.qpos, row) : INT_MIN;
		r.m[i] = -INFINITY;
		r.l[i] = 0.0f;
	}
#pragma unroll
	for (int dt = 0; dt < D / 8; dt++)
		r.o[dt][0] = r.o[dt][1] = r.o[dt][2] = r.o[dt][3] = 0.0f;
#pragma unroll
	for (int nt = 0; nt < WS_BN / 8; nt++)
		r.s[nt][0] = r.s[nt][1] = r.s[nt][2] = r.s[nt][3] = 0.0f;
#pragma unroll
	for (int j = 0; j < WS_BN / 16; j++)
		r.pf[j][0] = r.pf[j][1] = r.pf[j][2] = r.pf[j][3] = 0u;
	ws_consume<D>(r, p, s, s.q + c * 64 * 128, c, nkt, lane);
	ws_store<D>(p, r, s, c, b, h, row0, tc);
}

template <int D>
__global__ void __launch_bounds__(WS_NT(D), 1)
fl_ws_kernel(const fl_params p, const __grid_constant__ CUtensorMap tq,
	     const __grid_constant__ CUtensorMap tk,
	     const __grid_constant__ CUtensorMap tv)
{
	constexpr int NS = ws_cfg<D>::NS, NWG = ws_cfg<D>::NWG;
	extern __shared__ __align__(1024) unsigned char ws_sm[];
	ws_smem s = ws_layout<D>(ws_sm);
	int tid = threadIdx.x, lane = tid & 31;
	/* warp-uniform as far as the compiler can tell (CUTLASS's
	 * canonical_warp_group_idx): ptxas serialises wgmma in code it
	 * believes divergent */
	int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
	int nkt = (p.sk + WS_BN - 1) / WS_BN, qmin, qmax, qall;
	int t, h, b, kvh, q0;

	fl_block_lpt(&t, &h, &b); /* the last query tiles first, grid-wide */
	kvh = h / (p.nh / p.nkv);
	q0 = (gridDim.x - 1 - t) * WS_BM(D);

	if (tid == 0) {
		tma_prefetch_map(&tq);
		tma_prefetch_map(&tk);
		tma_prefetch_map(&tv);
		mb_init(s.bar, 1);
		for (int st = 0; st < NS; st++) {
			mb_init(ws_bar<D>(s, 0, st), 1);
			mb_init(ws_bar<D>(s, 1, st), 4 * NWG);
			mb_init(ws_bar<D>(s, 2, st), 1);
			mb_init(ws_bar<D>(s, 3, st), 4 * NWG);
		}
		mb_init_fence();
	}
	fl_range(p.qpos, q0, WS_BM(D), p.sq, lane, &qmin, &qmax, &qall);
	/* the producer warpgroup alone classifies: with every thread in
	 * fl_classify's loop ptxas (CUDA 13.0) reports wgmma serialised
	 * "due to ... WG.AR in divergent path" (C7520) for this kernel */
	if (wg == 0)
		fl_classify(p.kpos, p.sk, WS_BN, qmin, qmax, qall, 1,
			    (unsigned char *)s.cls, tid, 128);
	__syncthreads();
	if (wg == 0) {
		reg_dec<ws_cfg<D>::RP>();
		if (tid == 0)
			ws_produce<D>(s, &tq, &tk, &tv, q0, h, kvh, b, nkt);
		return;
	}
	reg_inc<ws_cfg<D>::RC>();
	/* tc: the thread within its consumer warpgroup (0..127); ws_consumer
	 * and ws_store derive the warp's rows from tc >> 5 */
	ws_consumer<D>(p, s, wg - 1, q0, b, h, nkt, tid & 127);
}

/* ---- host side ---------------------------------------------------------- */

template <int D>
static int fl_ws_launch(const fl_params &p, cudaStream_t st)
{
	constexpr int BM = WS_BM(D);
	size_t smem = fl_ws_smem(D, ws_cfg<D>::NS, BM, p.sk);
	dim3 grid((p.sq + BM - 1) / BM, p.nh, p.batch);
	CUtensorMap tq, tk, tv;
	int rc;

	if ((rc = tma_map(&tq, p.q, D, p.nh, p.sq, p.batch, BM,
			    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, "fl_ws")) ||
	    (rc = tma_map(&tk, p.k, D, p.nkv, p.sk, p.batch, WS_BN,
			    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, "fl_ws")) ||
	    (rc = tma_map(&tv, p.v, D, p.nkv, p.sk, p.batch, WS_BN,
			    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, "fl_ws")))
		return rc;
	CUDACHECK(cudaFuncSetAttribute(fl_ws_kernel<D>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_ws_kernel<D><<<grid, WS_NT(D), smem, st>>>(p, tq, tk, tv);
	CUDACHECK(cudaGetLastError());
	return 0;
}

/* The TMA path where the driver encodes tensor maps, tma_map takes q, k
 * and v, scale > 0 (ws_softmax) and the block's shared memory fits the
 * device (the tile schedule grows with sk: past about 8 million keys at
 * hd 128); else kern_flash_wg.cu's pipelined kernel (top comment). */
int fl_ws_run(const fl_params &p, int hd, cudaStream_t st)
{
	size_t smem = hd == 64 ?
		fl_ws_smem(64, ws_cfg<64>::NS, WS_BM(64), p.sk) :
		fl_ws_smem(128, ws_cfg<128>::NS, WS_BM(128), p.sk);

	if (!(p.scale > 0.0f) || !tma_encoder() || smem > fl_smem_optin() ||
	    !tma_ok(p.q, p.nh, p.sq, p.batch) ||
	    !tma_ok(p.k, p.nkv, p.sk, p.batch) ||
	    !tma_ok(p.v, p.nkv, p.sk, p.batch))
		return fl_wg_run(p, hd, 1, st);
	return hd == 64 ? fl_ws_launch<64>(p, st) : fl_ws_launch<128>(p, st);
}
