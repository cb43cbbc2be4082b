/*
 * flash_tma.cuh: Hopper's asynchronous copies and barriers for the
 * warp-specialized forward and backward (kernels/kern_flash_ws.cu,
 * kern_flash_ws_bwd.cu through flash_bwd_ws.cuh): shared-memory
 * mbarriers (init, arrive, arrive with an expected transaction count,
 * wait on a phase parity), TMA tile loads (cp.async.bulk.tensor.4d) that
 * complete on an mbarrier, the warpgroup register reallocation
 * (setmaxnreg), named barriers (bar.sync / bar.arrive with an id), and on
 * the host the tensor map of a [batch, rows, heads, hd] bf16 tensor made
 * by the driver's cuTensorMapEncodeTiled, reached through the runtime's
 * cudaGetDriverEntryPointByVersion so that nothing links libcuda.
 *
 * PTX ISA facts relied on (section names of the PTX ISA; CUTLASS's
 * cutlass/arch/barrier.h, cute/arch/copy_sm90_tma.hpp and
 * cute/arch/copy_sm90_desc.hpp issue the same instructions):
 *  - "mbarrier": a 64-bit object in shared memory with a phase, a pending
 *    arrival count (set by mbarrier.init) and a transaction count. A phase
 *    completes when every expected arrival has happened and the
 *    transaction count is back at zero; the phase then flips and the
 *    arrival count is re-armed. mbarrier.arrive.expect_tx adds bytes to
 *    the transaction count and arrives; complete_tx (by the TMA unit)
 *    subtracts the bytes it wrote.
 *  - "mbarrier.test_wait/mbarrier.try_wait": try_wait.parity P is true once
 *    the phase of parity P has completed; on a fresh barrier (phase 0 in
 *    progress) parity 1 counts as the completed phase before it, so a
 *    producer's first wait on an "empty" barrier with parity 1 passes.
 *    The successful wait has acquire semantics at CTA scope: the data the
 *    completing arrivals (and the async copies) released are visible.
 *  - "mbarrier.init" needs fence.mbarrier_init (".release.cluster", the
 *    only form) before the async proxy (the TMA unit) uses the barrier;
 *    CUTLASS's fence_barrier_init issues the same, then a CTA barrier.
 *  - "cp.async.bulk.tensor": .tile mode copies the box at the given
 *    coordinates (innermost first) into shared memory in the box's order,
 *    dimension 0 fastest; elements out of the tensor's bounds are filled
 *    (zeros with CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) and their bytes still
 *    count towards complete_tx, so a tile past the end completes its
 *    barrier with the full box's bytes (CUTLASS's sm90 mainloops set the
 *    transaction bytes to the whole tile whatever the residue). The
 *    tensor map operand is the generic address of a __grid_constant__
 *    kernel parameter.
 *  - "Tensor-map" / the driver's CUtensorMap (cuda.h,
 *    cuTensorMapEncodeTiled): global address 16-byte aligned, strides
 *    (bytes, dimensions 1..) multiples of 16 below 2^40, box sizes <= 256,
 *    box dimension 0 times the element size a multiple of 16 bytes and,
 *    with CU_TENSOR_MAP_SWIZZLE_128B, at most 128 bytes. The 128-byte
 *    swizzle writes 16-byte chunk j of box row r at chunk j ^ (r % 8)
 *    within 1024-byte aligned 8-row patterns: the layout wg_load_tile
 *    writes by hand (kernels/flash_wgmma.cuh, one 64-column atom per box).
 *  - "setmaxnreg": .inc / .dec, .sync.aligned over a warpgroup, a multiple
 *    of 8 in [24, 256]; .dec releases registers to the CTA's pool that .inc
 *    of other warpgroups takes (FlashAttention-3, hopper/
 *    flash_fwd_kernel_sm90.h: 24 / 240 with two consumer warpgroups,
 *    32 / 160 with three).
 *  - "bar.sync / bar.arrive": barrier ids 0..15 with a thread count (a
 *    multiple of 32); bar.arrive counts its warp without waiting. Id 0 is
 *    __syncthreads'.
 * Only a file compiled for sm_90a includes this one.
 */
#ifndef GTPLAN_FLASH_TMA_CUH
#define GTPLAN_FLASH_TMA_CUH

#include <cuda.h>
#include <cudaTypedefs.h>

#include "flash_common.cuh"

static __device__ __forceinline__ void mb_init(uint32_t bar, int count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar),
		     "r"(count)
		     : "memory");
}

/* Initialised barriers visible to the async proxy; a CTA barrier must
 * follow before anyone uses them. */
static __device__ __forceinline__ void mb_init_fence(void)
{
	asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

static __device__ __forceinline__ void mb_arrive(uint32_t bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar)
		     : "memory");
}

/* Arrives and adds bytes to the current phase's transaction count. */
static __device__ __forceinline__ void mb_expect(uint32_t bar, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
		     ::"r"(bar), "r"(bytes)
		     : "memory");
}

static __device__ __forceinline__ int mb_try(uint32_t bar, uint32_t parity)
{
	uint32_t ok;

	asm volatile("{\n.reg .pred p;\n"
		     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
		     "selp.u32 %0, 1, 0, p;\n}\n"
		     : "=r"(ok)
		     : "r"(bar), "r"(parity)
		     : "memory");
	return (int)ok;
}

/* Until the phase of this parity has completed. */
static __device__ __forceinline__ void mb_wait(uint32_t bar, uint32_t parity)
{
	while (!mb_try(bar, parity))
		;
}

/* The box of map at (c0 .. c3) into shared memory at dst (1024-byte
 * aligned for the 128-byte swizzle), completing on bar. */
static __device__ __forceinline__ void tma_load4(uint32_t dst,
						 const CUtensorMap *map,
						 uint32_t bar, int c0, int c1,
						 int c2, int c3)
{
	asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile"
		     ".mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
		     "%6}], [%2];\n" ::"r"(dst),
		     "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "r"(c2),
		     "r"(c3)
		     : "memory");
}

static __device__ __forceinline__ void tma_prefetch_map(const CUtensorMap *m)
{
	asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)m)
		     : "memory");
}

template <int N>
static __device__ __forceinline__ void reg_dec(void)
{
	asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N>
static __device__ __forceinline__ void reg_inc(void)
{
	asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

static __device__ __forceinline__ void nb_sync(int id, int n)
{
	asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}

static __device__ __forceinline__ void nb_arrive(int id, int n)
{
	asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}

/* ---- host ---------------------------------------------------------------- */

/* The driver's cuTensorMapEncodeTiled, found once through the runtime (no
 * -lcuda; a race sets the same value twice); 0 where the driver has none
 * (older than CUDA 12.0). */
static PFN_cuTensorMapEncodeTiled_v12000 tma_encode;

static inline int tma_encoder(void)
{
	cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	void *fn = NULL;

	if (tma_encode)
		return 1;
	if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn,
					     12000, cudaEnableDefault,
					     &q) != cudaSuccess ||
	    q != cudaDriverEntryPointSuccess || !fn) {
		(void)cudaGetLastError();
		return 0;
	}
	tma_encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
	return 1;
}

/* The tensor map of a bf16 tensor [n3][n2][n1][hd] (row-major: batch,
 * rows, heads, head dim) read in boxes of 64 values of hd x `rows` rows
 * of one head of one batch entry, 128-byte swizzled, promoted into L2 in
 * l2's lines; out-of-bounds rows read as zeros. Coordinates (innermost
 * first): column, head, row, batch. Returns 0 or KERN_E* with a message
 * naming who. */
static inline int tma_map(CUtensorMap *m, const void *base, long long hd,
			  long long n1, long long n2, long long n3, int rows,
			  CUtensorMapL2promotion l2, const char *who)
{
	cuuint64_t dim[4] = { (cuuint64_t)hd, (cuuint64_t)n1, (cuuint64_t)n2,
			      (cuuint64_t)n3 };
	cuuint64_t stride[3] = { (cuuint64_t)(hd * 2),
				 (cuuint64_t)(hd * n1 * 2),
				 (cuuint64_t)(hd * n1 * n2 * 2) };
	cuuint32_t box[4] = { 64, 1, (cuuint32_t)rows, 1 }, one[4] = { 1, 1, 1, 1 };
	CUresult r;

	if (!tma_encoder())
		return kern_set_error(KERN_ENODEV, "%s: the driver has no "
				      "cuTensorMapEncodeTiled", who);
	r = tma_encode(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, (void *)base,
		       dim, stride, box, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
		       CU_TENSOR_MAP_SWIZZLE_128B, l2,
		       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS)
		return kern_set_error(KERN_EINVAL,
				      "%s: cuTensorMapEncodeTiled failed (CUresult "
				      "%d) for hd %lld, %lld heads, %lld rows, "
				      "batch %lld, box %d rows", who, (int)r, hd,
				      n1, n2, n3, rows);
	return 0;
}

/* Whether tma_map accepts such a tensor (the conditions of its comment;
 * hd is 64 or 128, so the strides are multiples of 16). */
static inline int tma_ok(const void *base, long long n1, long long n2,
			 long long n3)
{
	return base && ((uintptr_t)base & 15) == 0 && n1 >= 1 && n2 >= 1 &&
	       n3 >= 1 && n1 * n2 * n3 * 256 < (1LL << 40);
}

#endif
