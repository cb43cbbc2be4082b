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
 * from shared memory. Grid: (query tiles, heads, batch), the last query
 * tiles (the most keys under a causal mask) first.
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
 *    is undefined; every batch here is committed and waited for (0) before
 *    its registers are touched.
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

/* The first 1024-byte aligned shared address at or after p. */
static __device__ __forceinline__ uint32_t wg_align(const void *p)
{
	return (fl_smem(p) + 1023u) & ~1023u;
}

/* K and V tile t into buffer buf. */
template <int D>
static __device__ __forceinline__ void wg_load_kv(const fl_params &p,
						  uint32_t sK, uint32_t sV,
						  const fl_bf16 *gk,
						  const fl_bf16 *gv, int t,
						  int buf, int tid)
{
	long long ld = (long long)p.nkv * D;
	uint32_t off = (uint32_t)(buf * WG_BN * D * sizeof(fl_bf16));

	wg_load_tile<WG_BN, D, WG_NT>(sK + off, gk, ld, t * WG_BN, p.sk, tid);
	wg_load_tile<WG_BN, D, WG_NT>(sV + off, gv, ld, t * WG_BN, p.sk, tid);
}

template <int NK>
static __device__ __forceinline__ void wg_pin_u32(uint32_t a[NK][4])
{
#pragma unroll
	for (int i = 0; i < NK; i++)
		asm volatile(""
			     : "+r"(a[i][0]), "+r"(a[i][1]), "+r"(a[i][2]),
			       "+r"(a[i][3])
			     :
			     : "memory");
}

/* One key tile for the warpgroup: S = Q K^T, mask, online softmax, then
 * O += P V; on return every wgmma of it has completed. sQ is the
 * warpgroup's first Q row, sK and sV the tile's buffers. */
template <int D>
static __device__ __forceinline__ void
wg_tile(const fl_params &p, float s[WG_BN / 8][4], float o[D / 8][4],
	float m[2], float l[2], const int qp[2], uint32_t sQ, uint32_t sK,
	uint32_t sV, int k0, int full, int lane)
{
	uint32_t pf[WG_BN / 16][4];

	wg_pin<WG_BN / 8>(s);
	wg_fence();
	wg_qk<WG_BN, D, WG_BM>(s, sQ, sK);
	wg_wait<0>();
	wg_pin<WG_BN / 8>(s);
	fl_fwd_mask<WG_BN>(s, p, k0, lane, qp, full);
	fl_fwd_softmax<WG_BN, D>(s, o, m, l);
#pragma unroll
	for (int j = 0; j < WG_BN / 16; j++)
		fl_acc_to_a(pf[j], s[2 * j], s[2 * j + 1]);
	wg_pin<D / 8>(o);
	wg_pin_u32<WG_BN / 16>(pf);
	wg_fence();
	wg_pv<D, WG_BN>(o, pf, sV);
	wg_wait<0>();
	wg_pin<D / 8>(o);
}

/* Warpgroup wg (threads 128 wg ..) owns query rows q0 + 64 wg + 0..63;
 * its warp w rows 16 w + g and 16 w + g + 8 of those (g = lane / 4). */
template <int D>
__global__ void __launch_bounds__(WG_NT, 1) fl_wg_kernel(const fl_params p)
{
	extern __shared__ __align__(1024) unsigned char wg_sm[];
	uint32_t sQ = wg_align(wg_sm);
	uint32_t sK = sQ + WG_BM * D * sizeof(fl_bf16);
	uint32_t sV = sK + 2 * WG_BN * D * sizeof(fl_bf16);
	unsigned char *cls = wg_sm + (sV + 2 * WG_BN * D * sizeof(fl_bf16) -
				      fl_smem(wg_sm));
	int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
	int h = blockIdx.y, b = blockIdx.z, kvh = h / (p.nh / p.nkv);
	int q0 = (gridDim.x - 1 - blockIdx.x) * WG_BM;
	int r0 = q0 + wg * 64 + ((tid >> 5) & 3) * 16 + (lane >> 2);
	int nkt = (p.sk + WG_BN - 1) / WG_BN;
	long long koff = ((long long)b * p.sk * p.nkv + kvh) * D;
	const fl_bf16 *gk = p.k + koff, *gv = p.v + koff;
	uint32_t sQw = sQ + wg * 64 * 128;
	float o[D / 8][4], s[WG_BN / 8][4], m[2], l[2];
	int qp[2], qmin, qmax, qall, full, t;

#pragma unroll
	for (int r = 0; r < 2; r++) {
		int row = r0 + 8 * r;

		qp[r] = row < p.sq ? fl_pos(p.qpos, row) : INT_MIN;
		m[r] = -INFINITY;
		l[r] = 0.0f;
	}
#pragma unroll
	for (int dt = 0; dt < D / 8; dt++)
		o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
#pragma unroll
	for (int nt = 0; nt < WG_BN / 8; nt++)
		s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
	fl_range(p.qpos, q0, WG_BM, p.sq, lane, &qmin, &qmax, &qall);
	fl_classify(p.kpos, p.sk, WG_BN, qmin, qmax, qall, 1, cls, tid, WG_NT);
	__syncthreads();
	t = fl_next(cls, 0, nkt, nkt, &full);
	if (t < nkt) {
		wg_load_tile<WG_BM, D, WG_NT>(
			sQ, p.q + ((long long)b * p.sq * p.nh + h) * D,
			(long long)p.nh * D, q0, p.sq, tid);
		wg_load_kv<D>(p, sK, sV, gk, gv, t, 0, tid);
		fl_commit();
	}
	for (int buf = 0; t < nkt; buf ^= 1) {
		uint32_t off = (uint32_t)(buf * WG_BN * D * sizeof(fl_bf16));
		int fulln, tn = fl_next(cls, t + 1, nkt, nkt, &fulln);

		if (tn < nkt)
			wg_load_kv<D>(p, sK, sV, gk, gv, tn, buf ^ 1, tid);
		fl_commit();
		fl_wait<1>();
		wg_proxy_fence();
		__syncthreads();
		wg_proxy_fence();
		wg_tile<D>(p, s, o, m, l, qp, sQw, sK + off, sV + off,
			   t * WG_BN, full, lane);
		wg_proxy_fence();
		__syncthreads();
		t = tn;
		full = fulln;
	}
	fl_fwd_store<D>(p, o, m, l, b, h, r0, lane);
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
			int rr = row + (x & 1) * 8, cc = 16 * k + 2 * c + (x >> 1) * 8;
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

template <int D>
static int fl_wg_launch(const fl_params &p, cudaStream_t st)
{
	size_t smem = fl_wg_smem(D, p.sk);
	dim3 grid((p.sq + WG_BM - 1) / WG_BM, p.nh, p.batch);

	CUDACHECK(cudaFuncSetAttribute(fl_wg_kernel<D>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      (int)smem));
	fl_wg_kernel<D><<<grid, WG_NT, smem, st>>>(p);
	CUDACHECK(cudaGetLastError());
	return 0;
}

int fl_wg_run(const fl_params &p, int hd, cudaStream_t st)
{
	return hd == 64 ? fl_wg_launch<64>(p, st) : fl_wg_launch<128>(p, st);
}

extern "C" int kern_flash_wg_probe(void *stream, int op, int n, int k,
				   const uint16_t *a, const uint16_t *b,
				   float *d)
{
	cudaStream_t st = (cudaStream_t)stream;
	int key = (op << 16) | (n << 8) | k;

	if (!a || !b || !d)
		return kern_set_error(KERN_EINVAL,
				      "kern_flash_wg_probe: NULL matrix");
	if (!fl_wg_supported())
		return kern_set_error(KERN_ENODEV,
				      "kern_flash_wg_probe: needs a compute "
				      "capability 9.0 GPU (sm_90a)");
	switch (key) {
	case (0 << 16) | (64 << 8) | 16: return fl_wg_probe_launch<64, 16, 0>(a, b, d, st);
	case (0 << 16) | (128 << 8) | 64: return fl_wg_probe_launch<128, 64, 0>(a, b, d, st);
	case (0 << 16) | (128 << 8) | 128: return fl_wg_probe_launch<128, 128, 0>(a, b, d, st);
	case (1 << 16) | (64 << 8) | 16: return fl_wg_probe_launch<64, 16, 1>(a, b, d, st);
	case (1 << 16) | (64 << 8) | 128: return fl_wg_probe_launch<64, 128, 1>(a, b, d, st);
	case (1 << 16) | (128 << 8) | 128: return fl_wg_probe_launch<128, 128, 1>(a, b, d, st);
	}
	return kern_set_error(KERN_EINVAL,
			      "kern_flash_wg_probe: op %d n %d k %d is not built "
			      "(op 0: n64 k16, n128 k64, n128 k128; op 1: n64 "
			      "k16, n64 k128, n128 k128)", op, n, k);
}
