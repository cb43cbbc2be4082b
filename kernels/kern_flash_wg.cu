/*
 * kern_flash_wg: the flash attention forward on Hopper's warpgroup MMA
 * (wgmma.mma_async, FlashAttention-3's building block: Shah et al. 2024,
 * arXiv:2407.08608), the contract of kern_flash_fwd (kernels/kern_flash.h)
 * for compute capability 9.0 only: this file is compiled for sm_90a
 * (Makefile: WG_GENCODE), and kern_flash_fwd (kernels/kern_flash.cu)
 * decides whether to call it.
 *
 * A block of WG_NWG warpgroups owns 64 WG_NWG query rows of one head (64
 * per warpgroup) and walks the key tiles of WG_BN keys its rows attend, in
 * the schedule of flash_common.cuh (fl_classify: skipped, full or partial
 * tiles). K and V tiles are double-buffered: every thread copies 16-byte
 * chunks with cp.async into 128-byte-swizzled shared memory. Per tile and
 * warpgroup: S = Q K^T (A = Q and B = K from shared memory), the masked
 * online softmax on S's registers (flash_fwd.cuh, shared with the mma.sync
 * kernel), then O += P V with P from registers (rounded to bf16) and V
 * from shared memory. Two schedules (kern_flash.h: GTPLAN_FLASH wg and
 * wgp): wg_run_serial waits for each product (two barriers a tile);
 * wg_run_pipe issues S_i and P_{i-1} V_{i-1} together and runs S_i's
 * softmax while the latter is in the tensor cores (one barrier a tile).
 * Grid: (query tiles, heads, batch), the last query tiles (the most keys
 * under a causal mask) first.
 *
 * PTX ISA facts relied on (section names of the PTX ISA, "Asynchronous
 * Warpgroup Level Matrix Multiply-Accumulate Instructions"), cross-checked
 * with CUTLASS's cute/arch/mma_sm90_desc.hpp and
 * cute/atom/mma_traits_sm90_gmma.hpp (make_gmma_desc):
 *  - "Warpgroup": 4 contiguous warps, threads 128 k .. 128 k + 127; every
 *    wgmma instruction is .sync.aligned: all 128 threads execute it, in
 *    uniform control flow. wgmma.mma_async needs sm_90a ("Target ISA
 *    notes").
 *  - "Matrix Fragments for wgmma.mma_async.m64nNk16": the accumulator D of
 *    m64nN (f32) is N / 2 registers a thread; warp w of the warpgroup owns
 *    rows 16 w .. 16 w + 15, and within it d[4 i + 0..1] = (row g, columns
 *    8 i + 2 (lane % 4) + 0..1), d[4 i + 2..3] = row g + 8 (g = lane / 4):
 *    mma.m16n8's C layout repeated over N / 8. A from registers (.bf16) is
 *    4 .b32 registers, per warp mma.m16n8k16's A fragment: (g, 2 c..2 c+1),
 *    (g + 8, 2 c..), (g, 2 c + 8..), (g + 8, 2 c + 8..), c = lane % 4 --
 *    fl_acc_to_a's packing of two accumulator n-tiles.
 *  - "Shared Memory Matrix Layout": imm-trans-a/b = 0 is K-major, imm-trans-b
 *    = 1 is N-major for B (legal for .f16/.bf16 only). With the 128-byte
 *    swizzle a pattern is 8 rows of 128 bytes (1024 bytes, 1024-aligned);
 *    16-byte chunk j of row r sits at chunk j ^ (r % 8) -- address bits 4-6
 *    XOR bits 7-9 (CUTLASS Swizzle<3,4,3>). K-major: a row is 64 bf16 of K;
 *    N-major: a row is 64 bf16 of N for one k.
 *  - "Strides": K-major swizzled: the stride byte offset (SBO) is the
 *    distance between 8-row groups along M/N (1024 here: rows of 128 bytes
 *    back to back); the leading byte offset (LBO) is not used when the
 *    instruction's K (16 bf16 = 32 bytes) lies in one 128-byte row (CUTLASS
 *    writes 1, i.e. 16 bytes). The k-th 16-wide slice of a K-major tile
 *    starts 32 (k % 4) bytes into the row of its atom (k / 4): the
 *    hardware applies the swizzle to the final address, so the start may
 *    sit inside the pattern (CUTLASS's DescriptorIterator adds such
 *    offsets to the start address; base offset stays 0 since the start
 *    lies within the pattern's first 128-byte row). MN-major swizzled
 *    (CUTLASS: ((8,n),(8,k)):((1,LBO),(8,SBO)) in 16-byte units): LBO is
 *    the distance between 64-element atoms along N (the V tile's atoms:
 *    WG_BN 128 bytes), SBO the distance between 8-row groups along K
 *    (1024); the k-th slice of 16 keys starts 2048 k bytes in.
 *  - "Matrix Descriptor Format": start address >> 4 in bits 0-13, LBO >> 4
 *    in 16-29, SBO >> 4 in 32-45, base offset in 49-51 (0), layout type in
 *    62-63 (1 = 128-byte swizzle).
 *  - "wgmma.fence": required before the first wgmma.mma_async and between
 *    any other access of a register and a wgmma.mma_async that uses it as
 *    accumulator or A fragment (except accumulators across wgmmas of the
 *    same shape, ordered among themselves); here before every batch, since
 *    the softmax rescales O and writes P between batches.
 *  - "wgmma.commit_group" / "wgmma.wait_group": reading an accumulator or
 *    reusing an A-fragment register before the wait that covers its wgmma
 *    is undefined; groups complete in order, so with S_i then P V
 *    committed, wait_group 1 leaves only the P V in flight (whose O and P
 *    registers the softmax of S_i does not touch), wait_group 0 none.
 *  - "Async Proxy" (Memory Consistency Model, "Proxies"; fence.proxy.async
 *    under "membar/fence"): wgmma reads its shared-memory operands through
 *    the async proxy, while cp.async (non-bulk) and st.shared write
 *    through the generic proxy: fence.proxy.async.shared::cta between them.
 *    Here every thread fences after its cp.async wait and again after the
 *    barrier that makes the tile complete, and after its last wgmma wait
 *    of a tile (before the barrier that lets the next copies overwrite
 *    the buffer).
 * Pitfall avoided: nvcc may move ordinary reads or writes of accumulator
 * variables across the wgmma.wait / wgmma.fence asm statements, which
 * name no register; wg_pin (an empty asm that "modifies" them) fixes each
 * array at the fence and after the wait, as CUTLASS's
 * warpgroup_fence_operand does.
 *
 * kern_flash_wg_probe (kernels/kern_flash.h) runs the same products on
 * given matrices, for the tests to find a layout mistake in isolation.
 */
#include "flash_fwd.cuh"
#include "flash_wgmma.cuh"

#define WG_NWG 2 /* consumer warpgroups a block */
#define WG_NT (128 * WG_NWG)
#define WG_BM (64 * WG_NWG)
#define WG_BN 128 /* keys a tile */

/* Shared memory: 1024 bytes of slack to align the swizzle patterns, Q,
 * two K and two V tiles, the tile schedule. */
static size_t fl_wg_smem(int d, long long sk)
{
	return 1024 + (size_t)(WG_BM + 4 * WG_BN) * d * sizeof(fl_bf16) +
	       fl_cls_bytes(sk, WG_BN);
}

/* Rows [t WG_BN, (t + 1) WG_BN) of a K or V head (g) into the tile at s. */
template <int D>
static __device__ __forceinline__ void wg_load_kv(const fl_params &p,
						  uint32_t s, const fl_bf16 *g,
						  int t, int tid)
{
	wg_load_tile<WG_BN, D, WG_NT>(s, g, (long long)p.nkv * D, t * WG_BN,
				      p.sk, tid);
}

/* A thread's rows (g and g + 8 of its warp's 16) and its block's tiles. */
template <int D>
struct wg_rows {
	float o[D / 8][4], s[WG_BN / 8][4], m[2], l[2];
	uint32_t pf[WG_BN / 16][4]; /* P of the last tile as A fragments */
	int qp[2];
};

struct wg_tiles {
	uint32_t q, k, v; /* the warpgroup's Q rows, K and V buffer 0 */
	const fl_bf16 *gk, *gv;
	const unsigned char *cls;
	int nkt, tid, lane;
};

#define WG_TILE(D) ((uint32_t)(WG_BN * (D) * sizeof(fl_bf16)))

/* Issues S = Q K^T of the K tile at sk (committed, in flight). */
template <int D>
static __device__ __forceinline__ void wg_issue_s(wg_rows<D> &r,
						  const wg_tiles &w,
						  uint32_t sk)
{
	wg_pin<WG_BN / 8>(r.s);
	wg_fence();
	wg_qk<WG_BN, D, WG_BM>(r.s, w.q, sk);
}

/* Issues O += P V of the V tile at sv with the P of r.pf. */
template <int D>
static __device__ __forceinline__ void wg_issue_pv(wg_rows<D> &r,
						   uint32_t sv)
{
	wg_pin<D / 8>(r.o);
	wg_pin_u32<WG_BN / 16>(r.pf);
	wg_fence();
	wg_pv<D, WG_BN>(r.o, r.pf, sv);
}

/* S of key tile t is complete in r.s: mask and softmax statistics (corr
 * as fl_fwd_stats); touches neither r.o nor r.pf, which a P V may still
 * be using. */
template <int D>
static __device__ __forceinline__ void wg_softmax(wg_rows<D> &r,
						  const fl_params &p, int t,
						  int full, int lane,
						  float corr[2])
{
	wg_pin<WG_BN / 8>(r.s);
	fl_fwd_mask<WG_BN>(r.s, p, t * WG_BN, lane, r.qp, full);
	fl_fwd_stats<WG_BN>(r.s, r.m, r.l, corr);
}

/* P (r.s after wg_softmax) as bf16 A fragments into r.pf. */
template <int D>
static __device__ __forceinline__ void wg_make_p(wg_rows<D> &r)
{
#pragma unroll
	for (int j = 0; j < WG_BN / 16; j++)
		fl_acc_to_a(r.pf[j], r.s[2 * j], r.s[2 * j + 1]);
}

/* Every thread's copies complete and visible to every warpgroup's
 * wgmma; also orders the wgmma reads before it ahead of copies after. */
static __device__ __forceinline__ void wg_tile_barrier(void)
{
	fl_wait<0>();
	wg_proxy_fence();
	__syncthreads();
	wg_proxy_fence();
}

/* The simple schedule: per tile, S (waited for), softmax, P V (waited
 * for); K and V tile t + 1 load into the other buffer meanwhile. On
 * entry Q and tile t (buffer 0) are being copied. */
template <int D>
static __device__ void wg_run_serial(wg_rows<D> &r, const fl_params &p,
				     const wg_tiles &w, int t, int full)
{
	for (int buf = 0; t < w.nkt; buf ^= 1) {
		uint32_t off = buf * WG_TILE(D), nxt = (buf ^ 1) * WG_TILE(D);
		int fulln, tn = fl_next(w.cls, t + 1, w.nkt, w.nkt, &fulln);
		float corr[2];

		if (tn < w.nkt) {
			wg_load_kv<D>(p, w.k + nxt, w.gk, tn, w.tid);
			wg_load_kv<D>(p, w.v + nxt, w.gv, tn, w.tid);
		}
		fl_commit();
		fl_wait<1>();
		wg_proxy_fence();
		__syncthreads();
		wg_proxy_fence();
		wg_issue_s<D>(r, w, w.k + off);
		wg_wait<0>();
		wg_softmax<D>(r, p, t, full, w.lane, corr);
		fl_fwd_rescale<D>(r.o, corr);
		wg_make_p<D>(r);
		wg_issue_pv<D>(r, w.v + off);
		wg_wait<0>();
		wg_pin<D / 8>(r.o);
		wg_proxy_fence();
		__syncthreads();
		t = tn;
		full = fulln;
	}
}

/* FlashAttention-3's intra-warpgroup overlap: step i issues S_i = Q K_i^T
 * and then O += P_{i-1} V_{i-1}; S_i's softmax runs while P_{i-1} V_{i-1}
 * is in the tensor cores, and O is rescaled once that has completed
 * (O then holds every earlier tile relative to the old max, so one
 * rescale still suffices). Buffers by step parity: at step i, K_{i+1}
 * goes where K_{i-1} was (S_{i-1} waited for in step i - 1) and V_i where
 * V_{i-2} was (its P V waited for in step i - 1); the step's one barrier,
 * after the copies of step i - 1, stands between. On entry Q and K of
 * tile t (buffer 0) are being copied. */
template <int D>
static __device__ void wg_run_pipe(wg_rows<D> &r, const fl_params &p,
				   const wg_tiles &w, int t, int full)
{
	for (int i = 0; t < w.nkt; i++) {
		uint32_t cur = (i & 1) * WG_TILE(D), prev = cur ^ WG_TILE(D);
		int fulln, tn = fl_next(w.cls, t + 1, w.nkt, w.nkt, &fulln);
		float corr[2];

		wg_tile_barrier(); /* K_i, V_{i-1} in */
		if (tn < w.nkt)
			wg_load_kv<D>(p, w.k + prev, w.gk, tn, w.tid);
		wg_load_kv<D>(p, w.v + cur, w.gv, t, w.tid);
		fl_commit();
		wg_issue_s<D>(r, w, w.k + cur);
		if (i) {
			wg_issue_pv<D>(r, w.v + prev);
			wg_wait<1>(); /* S_i; P_{i-1} V_{i-1} may run on */
		} else {
			wg_wait<0>();
		}
		wg_softmax<D>(r, p, t, full, w.lane, corr);
		wg_wait<0>();
		wg_pin<D / 8>(r.o);
		wg_pin_u32<WG_BN / 16>(r.pf);
		fl_fwd_rescale<D>(r.o, corr);
		wg_make_p<D>(r);
		if (tn >= w.nkt) { /* the last P V */
			wg_tile_barrier();
			wg_issue_pv<D>(r, w.v + cur);
			wg_wait<0>();
			wg_pin<D / 8>(r.o);
		}
		t = tn;
		full = fulln;
	}
}

/* Warpgroup wg (threads 128 wg ..) owns query rows q0 + 64 wg + 0..63;
 * its warp w rows 16 w + g and 16 w + g + 8 of those (g = lane / 4).
 * PIPE picks wg_run_pipe over wg_run_serial. */
template <int D, int PIPE>
__global__ void __launch_bounds__(WG_NT, 1) fl_wg_kernel(const fl_params p)
{
	extern __shared__ __align__(1024) unsigned char wg_sm[];
	uint32_t sQ = wg_align(wg_sm), sK = sQ + WG_BM * D * sizeof(fl_bf16);
	uint32_t sV = sK + 2 * WG_TILE(D);
	int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
	int h = blockIdx.y, b = blockIdx.z, kvh = h / (p.nh / p.nkv);
	int q0 = (gridDim.x - 1 - blockIdx.x) * WG_BM;
	int r0 = q0 + wg * 64 + ((tid >> 5) & 3) * 16 + (lane >> 2);
	long long koff = ((long long)b * p.sk * p.nkv + kvh) * D;
	unsigned char *cls = wg_sm + (sV + 2 * WG_TILE(D) - fl_smem(wg_sm));
	wg_tiles w = { sQ + wg * 64 * 128, sK, sV, p.k + koff, p.v + koff,
		       cls, (p.sk + WG_BN - 1) / WG_BN, tid, lane };
	wg_rows<D> r;
	int qmin, qmax, qall, full, t;

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
	for (int nt = 0; nt < WG_BN / 8; nt++)
		r.s[nt][0] = r.s[nt][1] = r.s[nt][2] = r.s[nt][3] = 0.0f;
	fl_range(p.qpos, q0, WG_BM, p.sq, lane, &qmin, &qmax, &qall);
	fl_classify(p.kpos, p.sk, WG_BN, qmin, qmax, qall, 1, cls, tid, WG_NT);
	__syncthreads();
	t = fl_next(cls, 0, w.nkt, w.nkt, &full);
	if (t < w.nkt) {
		wg_load_tile<WG_BM, D, WG_NT>(
			sQ, p.q + ((long long)b * p.sq * p.nh + h) * D,
			(long long)p.nh * D, q0, p.sq, tid);
		wg_load_kv<D>(p, sK, w.gk, t, tid);
		if (!PIPE)
			wg_load_kv<D>(p, sV, w.gv, t, tid);
		fl_commit();
		if (PIPE)
			wg_run_pipe<D>(r, p, w, t, full);
		else
			wg_run_serial<D>(r, p, w, t, full);
	}
	fl_fwd_store<D>(p, r.o, r.m, r.l, b, h, r0, lane);
}

/* ---- the products alone, for the tests --------------------------------- */

/* d [64 x N] = a [64 x K] b, b given as [N][K] (op 0: A and B from shared
 * memory, K-major) or [K][N] (op 1: A from registers, B MN-major), through
 * wg_qk and wg_pv as the kernel calls them. Matrices are row-major bf16;
 * shared tiles are filled element by element through wg_off. One
 * warpgroup. */
template <int N, int K, int OP>
__global__ void __launch_bounds__(128, 1)
fl_wg_probe_kernel(const fl_bf16 *a, const fl_bf16 *b, float *d)
{
	constexpr int KW = K < 64 ? 64 : K, BR = OP ? K : N;
	constexpr int BW = OP ? N : KW, BC = OP ? N : K;
	extern __shared__ __align__(1024) unsigned char wg_sm[];
	uint32_t sA = wg_align(wg_sm), sB = sA + 64 * KW * 2;
	unsigned char *base = wg_sm + (sA - fl_smem(wg_sm));
	int tid = threadIdx.x, lane = tid & 31, g = lane >> 2, c = lane & 3;
	int row = (tid >> 5) * 16 + g;
	float acc[N / 8][4];
	uint32_t pf[K / 16][4];

	for (int i = tid; i < 64 * KW + BR * BW; i += 128) {
		int in_a = i < 64 * KW, j = in_a ? i : i - 64 * KW;
		int w = in_a ? KW : BW, r = j / w, col = j % w;
		int cols = in_a ? K : BC;
		fl_bf16 v = col < cols ? (in_a ? a : b)[r * cols + col] :
					 __float2bfloat16(0.0f);

		*(fl_bf16 *)(base + (in_a ? 0 : sB - sA) +
			     wg_off(in_a ? 64 : BR, r, col)) = v;
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
	wg_pin<N / 8>(acc);
	wg_pin_u32<K / 16>(pf);
	wg_fence();
	if (OP)
		wg_pv<N, K>(acc, pf, sB);
	else
		wg_qk<N, K, 64>(acc, sA, sB);
	wg_wait<0>();
	wg_pin<N / 8>(acc);
	for (int nt = 0; nt < N / 8; nt++)
		for (int x = 0; x < 4; x++)
			d[(row + (x >> 1) * 8) * N + nt * 8 + 2 * c + (x & 1)] =
				acc[nt][x];
}

template <int N, int K, int OP>
static int fl_wg_probe_launch(const void *a, const void *b, float *d,
			      cudaStream_t st)
{
	int smem = 1024 + 64 * (K < 64 ? 64 : K) * 2 +
		   (OP ? K * N : N * (K < 64 ? 64 : K)) * 2;

	CUDACHECK(cudaFuncSetAttribute(fl_wg_probe_kernel<N, K, OP>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      smem));
	fl_wg_probe_kernel<N, K, OP><<<1, 128, smem, st>>>(
		(const fl_bf16 *)a, (const fl_bf16 *)b, d);
	CUDACHECK(cudaGetLastError());
	return 0;
}

/* ---- host side ---------------------------------------------------------- */

int fl_wg_supported(void)
{
	int dev, major, minor;

	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
				   dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
				   dev) != cudaSuccess)
		return 0;
	return major == 9 && minor == 0;
}

template <int D, int PIPE>
static int fl_wg_launch(const fl_params &p, cudaStream_t st)
{
	size_t smem = fl_wg_smem(D, p.sk);
	dim3 grid((p.sq + WG_BM - 1) / WG_BM, p.nh, p.batch);

	CUDACHECK(cudaFuncSetAttribute(fl_wg_kernel<D, PIPE>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_wg_kernel<D, PIPE><<<grid, WG_NT, smem, st>>>(p);
	CUDACHECK(cudaGetLastError());
	return 0;
}

int fl_wg_run(const fl_params &p, int hd, int pipe, cudaStream_t st)
{
	if (hd == 64)
		return pipe ? fl_wg_launch<64, 1>(p, st) :
			      fl_wg_launch<64, 0>(p, st);
	return pipe ? fl_wg_launch<128, 1>(p, st) : fl_wg_launch<128, 0>(p, st);
}

extern "C" int kern_flash_wg_probe(void *stream, int op, int n, int k,
				   const uint16_t *a, const uint16_t *b,
				   float *d)
{
	cudaStream_t st = (cudaStream_t)stream;

	if (!a || !b || !d)
		return kern_set_error(KERN_EINVAL,
				      "kern_flash_wg_probe: NULL matrix");
	if (!fl_wg_supported())
		return kern_set_error(KERN_ENODEV,
				      "kern_flash_wg_probe: needs a compute "
				      "capability 9.0 GPU (sm_90a)");
	if (op == 0 && n == 64 && k == 16)
		return fl_wg_probe_launch<64, 16, 0>(a, b, d, st);
	if (op == 0 && n == 128 && k == 64)
		return fl_wg_probe_launch<128, 64, 0>(a, b, d, st);
	if (op == 0 && n == 128 && k == 128)
		return fl_wg_probe_launch<128, 128, 0>(a, b, d, st);
	if (op == 1 && n == 64 && k == 16)
		return fl_wg_probe_launch<64, 16, 1>(a, b, d, st);
	if (op == 1 && n == 64 && k == 128)
		return fl_wg_probe_launch<64, 128, 1>(a, b, d, st);
	if (op == 1 && n == 128 && k == 128)
		return fl_wg_probe_launch<128, 128, 1>(a, b, d, st);
	return kern_set_error(KERN_EINVAL,
			      "kern_flash_wg_probe: op %d n %d k %d is not built "
			      "(op 0: n64 k16, n128 k64, n128 k128; op 1: n64 "
			      "k16, n64 k128, n128 k128)", op, n, k);
}
