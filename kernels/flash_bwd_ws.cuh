/*
 * flash_bwd_ws.cuh: the Hopper asynchronous machinery of the
 * warp-specialized flash backward (kernels/kern_flash_ws_bwd.cu, sm_90a
 * only) beyond the forward's: barrier waits that give up instead of
 * hanging, bulk reduce-adds from shared to global memory, shared-memory
 * accesses by 32-bit address, and on the host the check of the give-up
 * flag.
 *
 * The mbarriers, TMA tile loads, named barriers and setmaxnreg are
 * kernels/flash_tma.cuh's (shared with the forward, which states the PTX
 * ISA facts they rely on); this file adds the waits that give up, the
 * bulk reductions and shared-memory accesses by 32-bit address. PTX ISA
 * facts relied on besides (cross-checked with CUTLASS's
 * cute/arch/copy_sm90_tma.hpp and libcu++'s cuda::ptx wrappers):
 *  - "mbarrier": mbarrier.arrive has .release, and mbarrier.try_wait
 *    .acquire semantics at CTA scope by default, so ordinary
 *    shared-memory writes before an arrive are visible to the threads
 *    whose wait returns for that phase (the row statistics the producer's
 *    warps write beside the TMA's tiles).
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
 */
#ifndef GTPLAN_FLASH_BWD_WS_CUH
#define GTPLAN_FLASH_BWD_WS_CUH

#include <stdint.h>

#include "flash_tma.cuh"
#include "kern_cuda.h"

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "flash_bwd_ws.cuh needs -gencode arch=compute_90a,code=sm_90a"
#endif

/* A barrier wait that has not returned after this many SM cycles (about
 * two seconds at the H200's clocks) gives up instead of hanging: it sets
 * ws_hung and returns, and every later wait of the launch that would
 * block returns at once. A protocol mistake (or a stall of seconds) so
 * ends the launch with ws_hung set (ws_hung_check; kern_flash_ws_bwd_check,
 * kernels/kern_flash.h) and the backward's dk and dv poisoned with NaN
 * (kernels/kern_flash_ws_bwd.cu ws_consume): a training run stops at its
 * non-finite loss (runtime/rt_main.c) rather than going on with wrong
 * gradients.
 * Not __trap: ptxas (CUDA 13.0) then stops granting the consumers the
 * registers of setmaxnreg and spills 400 bytes a thread at hd 128. */
#define WS_HANG_CYCLES (1LL << 32)

/* Set by a barrier wait that gave up (each file that includes this header
 * has its own pair): ws_hung for good, until ws_hung_check reads and
 * clears it; ws_abort for the launch (ws_launch clears it before each), so
 * that the launch's other waits give up at once and the next launch's
 * waits start afresh. */
static __device__ int ws_hung, ws_abort;

static __device__ __forceinline__ void ws_give_up(void)
{
	*(volatile int *)&ws_abort = 1;
	*(volatile int *)&ws_hung = 1;
}

/* Whether a wait of this launch gave up. */
static __device__ __forceinline__ int ws_aborted(void)
{
	return *(volatile int *)&ws_abort;
}

/* Waits until the phase of the given parity has completed, or gives up
 * (ws_give_up). */
static __device__ __forceinline__ void ws_wait(uint32_t bar, int parity)
{
	long long t0;

	if (mb_try(bar, (uint32_t)parity))
		return;
	t0 = clock64();
	while (!mb_try(bar, (uint32_t)parity) && !ws_aborted())
		if (clock64() - t0 > WS_HANG_CYCLES)
			ws_give_up();
}

/* ws_wait that reads the give-up flag (a global load) and the clock only
 * every 64th failed try, for the ws backward (kernels/kern_flash_ws_bwd.cu;
 * the probes keep ws_wait): ws_wait's flag load on every try keeps each
 * spinning warp (the producer's, waiting for a stage to empty, most of
 * the time) stalled on a global load: by a count of those warps' cycles,
 * most of the L1TEX scoreboard stall ncu reported for the kernel before
 * this wait (not profiled again since). The same give-up rule, some
 * tries later. */
static __device__ __forceinline__ void ws_wait_lazy(uint32_t bar, int parity)
{
	long long t0;
	unsigned n = 0;

	if (mb_try(bar, (uint32_t)parity))
		return;
	t0 = clock64();
	while (!mb_try(bar, (uint32_t)parity))
		if ((++n & 63) == 0 &&
		    (ws_aborted() || clock64() - t0 > WS_HANG_CYCLES)) {
			ws_give_up();
			return;
		}
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

/* ---- host: the give-up flag ----------------------------------------------- */

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

#endif
