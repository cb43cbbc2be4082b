/*
 * flash_wgmma.cuh: Hopper warpgroup MMA (wgmma.mma_async, sm_90a only) for
 * kernels/kern_flash_wg.cu: shared-memory matrix descriptors, the fences,
 * m64nNk16 bf16 products with fp32 accumulators (N = 64, 128; A from shared
 * memory or from registers), tiles stored in 128-byte swizzle atoms, and
 * the two products of the forward (S = Q K^T, O += P V) built from them.
 * The PTX ISA facts these rely on are listed in kern_flash_wg.cu's top
 * comment; only a file compiled for sm_90a may include this one.
 *
 * A tile of R rows of W bf16 (W a multiple of 64) is stored as W / 64
 * atoms side by side, each R rows of 128 bytes, atom a at byte a R 128 of
 * the tile (1024-byte aligned): 16-byte chunk j (0..7) of row r of an atom
 * sits at chunk j ^ (r % 8), which is the 128-byte swizzle that wgmma
 * undoes on the address bits (bits 4-6 XOR bits 7-9).
 */
#ifndef GTPLAN_FLASH_WGMMA_CUH
#define GTPLAN_FLASH_WGMMA_CUH

#include "flash_mma.cuh"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "flash_wgmma.cuh needs -gencode arch=compute_90a,code=sm_90a"
/* d [64 x 64] = A B over K: A^T and B MN-major in shared memory, rows
 * = the K dimension: A^T is K rows of 64 (the M dimension) at sa, B K
 * rows of 64 columns (N) at sb, each inside a swizzled tile whose atoms
 * are RA (RB) rows tall and 1024-byte aligned. As wg_pv's B: slice k
 * starts 16 k rows (2048 k bytes) in, SBO = 1024 (8 rows of K), LBO =
 * the atom stride along M or N (unused: 64 values are one atom).
 * Issued and committed, not waited for. */
template <int K, int RA, int RB>
static __device__ __forceinline__ void wg_tt64(float d[8][4], uint32_t sa,
					       uint32_t sb)
{
#pragma unroll
	for (int k = 0; k < K / 16; k++)
		wg_mma_ss_tt64(d, wg_desc(sa + k * 2048, RA * 128, 1024),
			       wg_desc(sb + k * 2048, RB * 128, 1024), k > 0);
	wg_commit();
}

#endif

/* The first 1024-byte aligned shared address at or after p. */
static __device__ __forceinline__ uint32_t wg_align(const void *p)
{
	return (fl_smem(p) + 1023u) & ~1023u;
}

/* Byte offset of element (r, c) in a swizzled tile of R rows. */
static __device__ __forceinline__ uint32_t wg_off(int R, int r, int c)
{
	return (uint32_t)((c >> 6) * R * 128 + r * 128 +
			  ((((c >> 3) & 7) ^ (r & 7)) << 4) + (c & 7) * 2);
}

/* Rows [r0, r0 + R) of a [nrows, ld] bf16 matrix (W values each, 16-byte
 * aligned rows) into the swizzled tile at shared address s, by the NT
 * threads of the block (cp.async, 16 bytes a thread a step); rows past
 * nrows become zeros. */
template <int R, int W, int NT>
static __device__ __forceinline__ void wg_load_tile(uint32_t s,
						    const fl_bf16 *g,
						    long long ld, int r0,
						    int nrows, int tid)
{
	constexpr int CPR = W / 8;

	static_assert(R * CPR % NT == 0, "tile not a multiple of the block");
#pragma unroll
	for (int i = 0; i < R * CPR / NT; i++) {
		int idx = tid + i * NT, row = idx / CPR, ch = idx % CPR;
		int gr = r0 + row, ok = gr < nrows;
		const fl_bf16 *src = g + (long long)(ok ? gr : 0) * ld + ch * 8;

		fl_cp16(s + wg_off(R, row, ch * 8), src, ok);
	}
}

/* A shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"):
 * start address, leading and stride byte offsets, each >> 4 in 14 bits
 * (bits 0-13, 16-29, 32-45), base offset 0 (bits 49-51: every start used
 * here lies within the first 128-byte row of a 1024-byte aligned swizzle
 * pattern), layout type 1 = 128-byte swizzle (bits 62-63). */
static __device__ __forceinline__ uint64_t wg_desc(uint32_t addr,
						   uint32_t lbo, uint32_t sbo)
{
	return (uint64_t)((addr & 0x3ffff) >> 4) |
	       (uint64_t)((lbo & 0x3ffff) >> 4) << 16 |
	       (uint64_t)((sbo & 0x3ffff) >> 4) << 32 | 1ull << 62;
}

/* wgmma.fence: orders this thread's earlier register writes (accumulators,
 * A fragments) before the wgmma.mma_async that follow. */
static __device__ __forceinline__ void wg_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

static __device__ __forceinline__ void wg_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N>
static __device__ __forceinline__ void wg_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Generic-proxy writes to shared memory (st.shared, cp.async) made visible
 * to the async proxy that wgmma reads through (PTX ISA "Async Proxy"). */
static __device__ __forceinline__ void wg_proxy_fence(void)
{
	asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* Pins an accumulator array at this point of the program: the compiler may
 * neither move reads of it above (after a wg_wait) nor writes of it below
 * (before a wgmma); the registers themselves are ptxas's business. */
template <int NT8>
static __device__ __forceinline__ void wg_pin(float d[NT8][4])
{
#pragma unroll
	for (int i = 0; i < NT8; i++)
		asm volatile(""
			     : "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]),
			       "+f"(d[i][3])
			     :
			     : "memory");
}

/* wg_pin for A fragments in registers (NK fragments of 4). */
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

#define WG_D32 "{"                                      \
	"%0, %1, %2, %3, %4, %5, %6, %7, "              \
	"%8, %9, %10, %11, %12, %13, %14, %15, "        \
	"%16, %17, %18, %19, %20, %21, %22, %23, "      \
	"%24, %25, %26, %27, %28, %29, %30, %31}"
#define WG_D64 "{"                                      \
	"%0, %1, %2, %3, %4, %5, %6, %7, "              \
	"%8, %9, %10, %11, %12, %13, %14, %15, "        \
	"%16, %17, %18, %19, %20, %21, %22, %23, "      \
	"%24, %25, %26, %27, %28, %29, %30, %31, "      \
	"%32, %33, %34, %35, %36, %37, %38, %39, "      \
	"%40, %41, %42, %43, %44, %45, %46, %47, "      \
	"%48, %49, %50, %51, %52, %53, %54, %55, "      \
	"%56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_Q(i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define WG_OUT32 WG_Q(0), WG_Q(1), WG_Q(2), WG_Q(3), WG_Q(4), WG_Q(5), \
	WG_Q(6), WG_Q(7)
#define WG_OUT64 WG_OUT32, WG_Q(8), WG_Q(9), WG_Q(10), WG_Q(11), WG_Q(12), \
	WG_Q(13), WG_Q(14), WG_Q(15)

/* d = A B (+ d when acc != 0) for the warpgroup, A [64 x 16] and B
 * [16 x N] both K-major in shared memory (descriptors da, db; scale 1,
 * no transposes). d is [N / 8][4]: mma.m16n8's C layout per n-tile. */
template <int N>
static __device__ void wg_mma_ss(float d[N / 8][4], uint64_t da, uint64_t db,
				 int acc);

template <>
__device__ __forceinline__ void wg_mma_ss<64>(float d[8][4], uint64_t da,
					      uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
		     WG_D32 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
		     : WG_OUT32
		     : "l"(da), "l"(db), "r"(acc));
}

template <>
__device__ __forceinline__ void wg_mma_ss<128>(float d[16][4], uint64_t da,
					       uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
		     WG_D64 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
		     : WG_OUT64
		     : "l"(da), "l"(db), "r"(acc));
}

/* d = A B (+ d when acc != 0) for the warpgroup, A [64 x 16] from
 * registers (a[0..3]: this thread's mma.m16n8k16 A fragment of its warp's
 * 16 rows), B [16 x N] MN-major in shared memory (imm-trans-b = 1). */
template <int N>
static __device__ void wg_mma_rs(float d[N / 8][4], const uint32_t a[4],
				 uint64_t db, int acc);

template <>
__device__ __forceinline__ void wg_mma_rs<64>(float d[8][4],
					      const uint32_t a[4], uint64_t db,
					      int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
		     WG_D32 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
		     : WG_OUT32
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db),
		       "r"(acc));
}

template <>
__device__ __forceinline__ void wg_mma_rs<128>(float d[16][4],
					       const uint32_t a[4], uint64_t db,
					       int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
		     WG_D64 ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
		     : WG_OUT64
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db),
		       "r"(acc));
}

/* d = A B (+ d when acc != 0) for the warpgroup, A [64 x 16] M-major and
 * B [16 x 64] N-major, both in shared memory (imm-trans-a = imm-trans-b =
 * 1: PTX ISA "Shared Memory Matrix Layout" allows either transpose for
 * .f16/.bf16 operands in shared memory). */
static __device__ __forceinline__ void wg_mma_ss_tt64(float d[8][4],
						      uint64_t da, uint64_t db,
						      int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
		     WG_D32 ", %32, %33, p, 1, 1, 1, 1;\n}\n"
		     : WG_OUT32
		     : "l"(da), "l"(db), "r"(acc));
}

/* S [64 x N] = A B^T over K: A is rows [0, 64) of the swizzled tile at sa
 * (RA rows), B the swizzled tile at sb (N rows), both K-major with K
 * columns. Slice k (16 columns) starts 32 k bytes into atom k / 4
 * (a 128-byte atom row holds 4 slices); SBO = 1024 bytes, the 8-row
 * stride; LBO is unused by K-major swizzled layouts (16, as CUTLASS
 * writes it). Issued and committed, not waited for. */
template <int N, int K, int RA>
static __device__ __forceinline__ void wg_qk(float d[N / 8][4], uint32_t sa,
					     uint32_t sb)
{
#pragma unroll
	for (int k = 0; k < K / 16; k++) {
		uint32_t ka = (k >> 2) * RA * 128 + (k & 3) * 32;
		uint32_t kb = (k >> 2) * N * 128 + (k & 3) * 32;

		wg_mma_ss<N>(d, wg_desc(sa + ka, 16, 1024),
			     wg_desc(sb + kb, 16, 1024), k > 0);
	}
	wg_commit();
}

/* O [64 x N] += P V over K keys: P from registers (p[k]: the A fragment of
 * keys 16 k .. 16 k + 15), V the swizzled tile at sv, K rows (keys) of N
 * columns, MN-major: slice k starts at row 16 k (2048 k bytes, a whole
 * number of 8-row patterns); SBO = 1024, the stride of 8 keys; LBO = the
 * stride between the 64-column atoms along N, K 128 bytes. Issued and
 * committed, not waited for. */
template <int N, int K>
static __device__ __forceinline__ void wg_pv(float d[N / 8][4],
					     const uint32_t p[K / 16][4],
					     uint32_t sv)
{
#pragma unroll
	for (int k = 0; k < K / 16; k++)
		wg_mma_rs<N>(d, p[k], wg_desc(sv + k * 2048, K * 128, 1024), 1);
	wg_commit();
}

/* d [64 x 64] = A B over K: A^T and B MN-major in shared memory, rows
 * = the K dimension: A^T is K rows of 64 (the M dimension) at sa, B K
 * rows of 64 columns (N) at sb, each inside a swizzled tile whose atoms
 * are RA (RB) rows tall and 1024-byte aligned. As wg_pv's B: slice k
 * starts 16 k rows (2048 k bytes) in, SBO = 1024 (8 rows of K), LBO =
 * the atom stride along M or N (unused: 64 values are one atom).
 * Issued and committed, not waited for. */
template <int K, int RA, int RB>
static __device__ __forceinline__ void wg_tt64(float d[8][4], uint32_t sa,
					       uint32_t sb)
{
#pragma unroll
	for (int k = 0; k < K / 16; k++)
		wg_mma_ss_tt64(d, wg_desc(sa + k * 2048, RA * 128, 1024),
			       wg_desc(sb + k * 2048, RB * 128, 1024), k > 0);
	wg_commit();
}

#endif
