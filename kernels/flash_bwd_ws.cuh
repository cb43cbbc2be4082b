/*
 * flash_bwd_ws.cuh: the Hopper asynchronous machinery of the
 * warp-specialized flash backward (kernels/kern_flash_ws_bwd.cu, sm_90a
 * only): shared-memory barriers (mbarrier) for a producer/consumer ring,
 * tensor-map (TMA) tile loads that complete on such a barrier, bulk
 * reduce-adds from shared to global memory, named barriers and the
 * warpgroup register hand-over (setmaxnreg); on the host, the tensor
 * maps (cuTensorMapEncodeTiled, found through the runtime's
 * cudaGetDriverEntryPointByVersion: no -lcuda).
 *
 * PTX ISA facts relied on (section names of the PTX ISA; cross-checked
 * with CUTLASS's cute/arch/copy_sm90_tma.hpp, cutlass/arch/barrier.h and
 * libcu++'s cuda::ptx wrappers of the same instructions):
 *  - "mbarrier": a 64-bit object in shared memory (8-byte aligned) with an
 *    expected arrival count (mbarrier.init) and a phase; a phase completes
 *    when that many arrivals and every pending transaction byte have come
 *    in, and the next begins. mbarrier.arrive has .release, and
 *    mbarrier.try_wait .acquire semantics at CTA scope by default, so
 *    ordinary shared-memory writes before an arrive are visible to the
 *    threads whose wait returns for that phase. try_wait.parity P returns
 *    true once the phase of parity P has completed; before any phase has
 *    completed, the wait for parity 1 returns at once (the "previous"
 *    phase counts as complete), which is how a producer starts on an
 *    empty ring.
 *  - "mbarrier.expect_tx" / arrive.expect_tx: adds bytes to the phase's
 *    pending transaction count; cp.async.bulk.tensor with
 *    .mbarrier::complete_tx::bytes subtracts the bytes it writes (the
 *    whole box, including the zeros written for rows out of the tensor).
 *  - "cp.async.bulk.tensor": a box of a tensor described by a CUtensorMap
 *    (cuTensorMapEncodeTiled) copied by the TMA unit; coordinates are
 *    innermost-first. With CU_TENSOR_MAP_SWIZZLE_128B and a 128-byte box
 *    row, row r of the box lands at 128 r with its 16-byte chunk j at
 *    j ^ (r % 8) of a 1024-byte aligned destination: exactly
 *    kernels/flash_wgmma.cuh's swizzled atom (wg_off). Its writes go
 *    through the async proxy, which wgmma reads through, so no proxy
 *    fence stands between the barrier wait and the wgmma.
 *  - "cp.reduce.async.bulk": .global.shared::cta.bulk_group.add.f32 adds
 *    `size` bytes (a multiple of 16; both addresses 16-byte aligned) of
 *    fp32 from shared memory to global memory, element by element, as
 *    one asynchronous operation; cp.async.bulk.commit_group closes the
 *    executing thread's group and cp.async.bulk.wait_group.read N waits
 *    until at most N of its groups still read their source (wait_group
 *    N: until they are complete). It reads shared memory through the
 *    async proxy: the threads that wrote the source with st.shared fence
 *    (fence.proxy.async.shared::cta) before the barrier that lets the
 *    issuing thread go.
 *  - "bar.sync" with a barrier id and a thread count: a barrier among
 *    that many threads (whole warps), id 0 being __syncthreads's;
 *    "bar.arrive" counts the executing warp without waiting.
 *  - "setmaxnreg": executed by every warp of a warpgroup, moves the
 *    per-thread register limit down (.dec, registers back to the CTA's
 *    pool) or up (.inc, blocks until the pool has them); counts are
 *    multiples of 8 in 24..256. ptxas allocates the code after it within
 *    the new limit.
 */
#ifndef GTPLAN_FLASH_BWD_WS_CUH
#define GTPLAN_FLASH_BWD_WS_CUH

#include <cudaTypedefs.h>
#include <stdint.h>

#include "kern_cuda.h"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "flash_bwd_ws.cuh needs -gencode arch=compute_90a,code=sm_90a"
#endif

/* A barrier wait that has not returned after this many SM cycles (about
 * two seconds at the H200's clocks) gives up: it sets ws_hung and
 * returns, and every later wait that would block returns at once, so a
 * protocol mistake ends the launch with wrong numbers and ws_hung set
 * (ws_hung_check; kern_flash_ws_bwd_check, kernels/kern_flash.h) instead
 * of hanging it.
 * Not __trap: ptxas (CUDA 13.0) then stops granting the consumers the
 * registers of setmaxnreg and spills 400 bytes a thread at hd 128. */
#define WS_HANG_CYCLES (1LL << 32)

static __device__ __forceinline__ void ws_bar_init(uint32_t bar, int count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar),
		     "r"(count)
		     : "memory");
}

/* Makes the barrier inits visible (to the async proxy too) before the
 * __syncthreads that follows them. */
static __device__ __forceinline__ void ws_bar_init_fence(void)
{
	asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

static __device__ __forceinline__ void ws_arrive(uint32_t bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar)
		     : "memory");
}

/* One arrival that also expects `bytes` of transactions this phase. */
static __device__ __forceinline__ void ws_arrive_tx(uint32_t bar,
						    uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
		     ::"r"(bar), "r"(bytes)
		     : "memory");
}

static __device__ __forceinline__ int ws_try(uint32_t bar, int parity)
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

/* Set by a barrier wait that gave up; each file that includes this
 * header has its own, read and cleared by ws_hung_check. */
static __device__ int ws_hung;

/* Waits until the phase of the given parity has completed, or gives up
 * (ws_hung). */
static __device__ __forceinline__ void ws_wait(uint32_t bar, int parity)
{
	volatile int *hung = &ws_hung;
	long long t0;

	if (ws_try(bar, parity))
		return;
	t0 = clock64();
	while (!ws_try(bar, parity) && !*hung)
		if (clock64() - t0 > WS_HANG_CYCLES)
			*hung = 1;
}

/* ws_wait that reads the give-up flag (a global load) and the clock only
 * every 64th failed try, for the ws backward's schedules ws2, ws2p and
 * ws2t (kernels/kern_flash_ws_bwd.cu, ws_item's flag 2):
 * ws_wait's flag load on every try keeps each spinning warp (the
 * producer's, waiting for a stage to empty, most of the time) stalled on
 * a global load, which ncu then reports as the kernel's L1TEX scoreboard
 * stall. The same give-up rule, some tries later. */
static __device__ __forceinline__ void ws_wait_lazy(uint32_t bar, int parity)
{
	volatile int *hung = &ws_hung;
	long long t0;
	unsigned n = 0;

	if (ws_try(bar, parity))
		return;
	t0 = clock64();
	while (!ws_try(bar, parity))
		if ((++n & 63) == 0 &&
		    (*hung || clock64() - t0 > WS_HANG_CYCLES)) {
			*hung = 1;
			return;
		}
}

/* ws_wait, or ws_wait_lazy where LAZY. */
template <int LAZY>
static __device__ __forceinline__ void ws_wait_t(uint32_t bar, int parity)
{
	if (LAZY)
		ws_wait_lazy(bar, parity);
	else
		ws_wait(bar, parity);
}

/* The box at innermost-first coordinates (c0, c1, c2, c3) of the tensor
 * map at generic address map into shared memory at dst (1024-byte
 * aligned for the 128-byte swizzle), completing on barrier bar. */
static __device__ __forceinline__ void ws_tma4(uint32_t dst, const void *map,
					       int c0, int c1, int c2, int c3,
					       uint32_t bar)
{
	asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global."
		     "mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
		     "[%6];\n" ::"r"(dst),
		     "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
		     : "memory");
}

/* g[0 .. bytes / 4) += the floats at shared address src, asynchronously,
 * in the executing thread's current bulk group. */
static __device__ __forceinline__ void ws_reduce_add(float *g, uint32_t src,
						     uint32_t bytes)
{
	asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 "
		     "[%0], [%1], %2;\n" ::"l"(g),
		     "r"(src), "r"(bytes)
		     : "memory");
}

static __device__ __forceinline__ void ws_bulk_commit(void)
{
	asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/* The thread's bulk groups no longer read shared memory. */
static __device__ __forceinline__ void ws_bulk_wait_read(void)
{
	asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

/* The thread's bulk groups are complete. */
static __device__ __forceinline__ void ws_bulk_wait(void)
{
	asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

/* Shared-memory loads and stores by 32-bit shared address, which cost one
 * register where a generic pointer costs two (volatile: kept in program
 * order with the barrier waits and wgmma around them). */
static __device__ __forceinline__ float ws_ld_f32(uint32_t a)
{
	float v;

	asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(a));
	return v;
}

static __device__ __forceinline__ int ws_ld_s32(uint32_t a)
{
	int v;

	asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(a));
	return v;
}

/* Two consecutive values at a (8-byte aligned). */
static __device__ __forceinline__ void ws_ld_f32x2(uint32_t a, float *x,
						   float *y)
{
	asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n"
		     : "=f"(*x), "=f"(*y)
		     : "r"(a));
}

static __device__ __forceinline__ void ws_ld_s32x2(uint32_t a, int *x, int *y)
{
	asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];\n"
		     : "=r"(*x), "=r"(*y)
		     : "r"(a));
}

static __device__ __forceinline__ int ws_ld_u8(uint32_t a)
{
	uint32_t v;

	asm volatile("ld.shared.u8 %0, [%1];\n" : "=r"(v) : "r"(a));
	return (int)v;
}

static __device__ __forceinline__ void ws_st_b32(uint32_t a, uint32_t v)
{
	asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
}

static __device__ __forceinline__ void ws_st_f32x2(uint32_t a, float x,
						   float y)
{
	asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(a), "f"(x),
		     "f"(y)
		     : "memory");
}

/* Named barrier `id` (1..15) among n threads (a multiple of 32). */
static __device__ __forceinline__ void ws_sync(int id, int n)
{
	asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}

/* The executing warp counted at named barrier `id` of n threads, without
 * waiting (bar.arrive): the other side waits with ws_sync. */
static __device__ __forceinline__ void ws_sync_arrive(int id, int n)
{
	asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}

/* ---- host: the give-up flag, tensor maps -------------------------------- */

/* Waits for stream st; KERN_EDEVICE (naming who) if a barrier wait of
 * this file's kernels gave up since the last call, clearing the flag. */
static int ws_hung_check(cudaStream_t st, const char *who)
{
	int hung = 0, zero = 0;

	CUDACHECK(cudaStreamSynchronize(st));
	CUDACHECK(cudaMemcpyFromSymbol(&hung, ws_hung, sizeof(int)));
	if (!hung)
		return 0;
	CUDACHECK(cudaMemcpyToSymbol(ws_hung, &zero, sizeof(int)));
	return kern_set_error(KERN_EDEVICE,
			      "%s: a barrier wait gave up after 2^32 cycles "
			      "(a producer/consumer protocol mistake); the "
			      "results are wrong", who);
}

/* The driver's cuTensorMapEncodeTiled once found (set once; a race sets
 * it to the same value). */
static PFN_cuTensorMapEncodeTiled_v12000 ws_encode;

/* The driver's cuTensorMapEncodeTiled, through the runtime (no -lcuda);
 * 0 where the driver has none. */
static int ws_encoder(void)
{
	cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	void *fn = NULL;

	if (ws_encode)
		return 1;
	if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn,
					     12000, cudaEnableDefault,
					     &q) != cudaSuccess ||
	    q != cudaDriverEntryPointSuccess || !fn) {
		(void)cudaGetLastError();
		return 0;
	}
	ws_encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
	return 1;
}

/* m = the bf16 tensor [batch, rows, heads, d] at base, boxes of 64
 * columns x box rows of one head, 128-byte swizzle, zeros past the rows. */
static int ws_map(CUtensorMap *m, const void *base, int d, long long rows,
		  int heads, int batch, int box)
{
	cuuint64_t dim[4] = { (cuuint64_t)d, (cuuint64_t)heads,
			      (cuuint64_t)rows, (cuuint64_t)batch };
	cuuint64_t str[3] = { (cuuint64_t)d * 2, (cuuint64_t)heads * d * 2,
			      (cuuint64_t)rows * heads * d * 2 };
	cuuint32_t boxd[4] = { 64, 1, (cuuint32_t)box, 1 };
	cuuint32_t es[4] = { 1, 1, 1, 1 };
	CUresult r = ws_encode(m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4,
			       (void *)base, dim, str, boxd, es,
			       CU_TENSOR_MAP_INTERLEAVE_NONE,
			       CU_TENSOR_MAP_SWIZZLE_128B,
			       CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
			       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);

	if (r != CUDA_SUCCESS)
		return kern_set_error(KERN_EDEVICE,
				      "cuTensorMapEncodeTiled failed (CUresult "
				      "%d) for [%d, %lld, %d, %d] with %d-row "
				      "boxes", (int)r, batch, rows, heads, d,
				      box);
	return 0;
}

template <int N>
static __device__ __forceinline__ void ws_regs_dec(void)
{
	asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N>
static __device__ __forceinline__ void ws_regs_inc(void)
{
	asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

#endif
