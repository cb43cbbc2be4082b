/*
 * kern_flash_ws_probe: the warp-specialized forward's machinery alone
 * (kern_flash_ws_probe, kernels/kern_flash.h), for the tests to find a
 * layout or synchronisation mistake in isolation: a TMA tile against the
 * cp.async tile the wgmma descriptors expect, and an mbarrier ring built
 * on the same rules as kernels/kern_flash_ws.cu's (full and empty barrier
 * per stage, phase parities, one empty arrival per consumer warp,
 * setmaxnreg; a copy of the protocol, not the kernel's code). Compiled
 * for sm_90a (Makefile: WG_GENCODE). Every barrier wait here gives up
 * after about a second of clock64 cycles (2^31) and reports it through
 * *status, so that a broken protocol fails the test instead of hanging
 * it.
 */
#include "flash_wgmma.cuh"
#include "flash_tma.cuh"

/* mb_wait that gives up after ~2^31 cycles (about a second at the H200's
 * clocks); 1 when the phase completed. */
static __device__ int probe_wait(uint32_t bar, uint32_t parity)
{
	long long t0 = clock64();

	while (!mb_try(bar, parity))
		if (clock64() - t0 > (1LL << 31))
			return 0;
	return 1;
}

/* op 0: the tile by TMA at the start of shared memory, by wg_load_tile
 * after it, both copied out. One warpgroup. */
template <int D, int R>
__global__ void __launch_bounds__(128, 1)
fl_ws_probe_tile(const __grid_constant__ CUtensorMap tm, const fl_bf16 *x,
		 int n, int heads, int head, int r0, fl_bf16 *out, int *status)
{
	extern __shared__ __align__(1024) unsigned char ps_sm[];
	uint32_t sa = wg_align(ps_sm), sb = sa + R * D * 2, bar = sb + R * D * 2;
	const unsigned char *base = ps_sm + (sa - fl_smem(ps_sm));
	int tid = threadIdx.x, ok = 1;

	if (tid == 0) {
		mb_init(bar, 1);
		mb_init_fence();
	}
	__syncthreads();
	if (tid == 0) {
		mb_expect(bar, R * D * 2);
		for (int a = 0; a < D / 64; a++)
			tma_load4(sa + a * R * 128, &tm, bar, a * 64, head, r0, 1);
	}
	wg_load_tile<R, D, 128>(sb, x + ((long long)n * heads + head) * D,
				(long long)heads * D, r0, n, tid);
	fl_commit();
	fl_wait<0>();
	ok = probe_wait(bar, 0);
	__syncthreads();
	for (int i = tid; i < 2 * R * D / 8; i += 128)
		((uint4 *)out)[i] = ((const uint4 *)base)[i];
	if (!ok)
		*status = 1;
}

/* op 1: tiles of 64 x 64 through a ring of NS stages from a producer
 * thread (warpgroup 0) to two consumer warpgroups (8 warps, each copying
 * rows warp, warp + 8, ... of every tile). */
template <int NS>
__global__ void __launch_bounds__(384, 1)
fl_ws_probe_ring(const __grid_constant__ CUtensorMap tm, int ntiles,
		 int head, fl_bf16 *out, int *status)
{
	extern __shared__ __align__(1024) unsigned char pr_sm[];
	uint32_t ring = wg_align(pr_sm), bar = ring + NS * 8192;
	const unsigned char *base = pr_sm + (ring - fl_smem(pr_sm));
	int tid = threadIdx.x, warp = (tid >> 5) - 4, lane = tid & 31;

	if (tid == 0) {
		for (int st = 0; st < NS; st++) {
			mb_init(bar + 8 * st, 1);
			mb_init(bar + 8 * (NS + st), 8);
		}
		mb_init_fence();
	}
	__syncthreads();
	if (tid < 128) {
		reg_dec<24>();
		for (int i = 0; i < ntiles && tid == 0; i++) {
			int st = i % NS;

			if (!probe_wait(bar + 8 * (NS + st), ((i / NS) & 1) ^ 1)) {
				*status = 1;
				return;
			}
			mb_expect(bar + 8 * st, 8192);
			tma_load4(ring + st * 8192, &tm, bar + 8 * st, 0, head,
				  i * 64, 1);
			if (i % 5 == 3) /* let the consumers catch up */
				__nanosleep(4000);
		}
		return;
	}
	reg_inc<240>();
	for (int i = 0; i < ntiles; i++) {
		int st = i % NS;

		if (!probe_wait(bar + 8 * st, (i / NS) & 1)) {
			*status = 1;
			return;
		}
		for (int r = warp; r < 64; r += 8)
			for (int c = 2 * lane; c < 2 * lane + 2; c++)
				out[((long long)i * 64 + r) * 64 + c] =
					*(const fl_bf16 *)(base + st * 8192 +
							   wg_off(64, r, c));
		if ((i + warp) % 7 == 0) /* let the producer run ahead */
			__nanosleep(3000);
		__syncwarp();
		if (lane == 0)
			mb_arrive(bar + 8 * (NS + st));
	}
}

template <int D, int R>
static int probe_tile(const CUtensorMap &tm, const uint16_t *x, int n,
		      int heads, int head, int r0, uint16_t *out, int *status,
		      cudaStream_t st)
{
	int smem = 1024 + 2 * R * D * 2 + 8;

	CUDACHECK(cudaFuncSetAttribute(fl_ws_probe_tile<D, R>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      smem));
	fl_ws_probe_tile<D, R><<<1, 128, smem, st>>>(
		tm, (const fl_bf16 *)x, n, heads, head, r0, (fl_bf16 *)out,
		status);
	CUDACHECK(cudaGetLastError());
	return 0;
}

template <int NS>
static int probe_ring(const CUtensorMap &tm, int ntiles, int head,
		      uint16_t *out, int *status, cudaStream_t st)
{
	int smem = 1024 + NS * 8192 + 16 * NS;

	CUDACHECK(cudaFuncSetAttribute(fl_ws_probe_ring<NS>,
				      cudaFuncAttributeMaxDynamicSharedMemorySize,
				      smem));
	fl_ws_probe_ring<NS><<<1, 384, smem, st>>>(tm, ntiles, head,
						   (fl_bf16 *)out, status);
	CUDACHECK(cudaGetLastError());
	return 0;
}

static const char *probe_bad(int op, int hd, int rows, int n, int heads,
			     int head, int r0)
{
	if (n < 1 || heads < 1 || head < 0 || head >= heads || r0 < 0)
		return "n, heads >= 1, 0 <= head < heads, r0 >= 0";
	if (op == 0 && !((hd == 64 && (rows == 128 || rows == 192)) ||
			 (hd == 128 && rows == 128)))
		return "op 0 is built for (hd, rows) = (64, 128), (64, 192), "
		       "(128, 128)";
	if (op == 1 && (hd != 64 || (rows != 2 && rows != 4) || n % 64))
		return "op 1 needs hd 64, rows (stages) 2 or 4, n a multiple "
		       "of 64";
	if (op != 0 && op != 1)
		return "op must be 0 or 1";
	return NULL;
}

extern "C" int kern_flash_ws_probe(void *stream, int op, int hd, int rows,
				   int n, int heads, int head, int r0,
				   const uint16_t *x, uint16_t *out,
				   int *status)
{
	cudaStream_t st = (cudaStream_t)stream;
	const char *why = probe_bad(op, hd, rows, n, heads, head, r0);
	CUtensorMap tm;
	int rc;

	if (why)
		return kern_set_error(KERN_EINVAL, "kern_flash_ws_probe: %s", why);
	if (!x || !out || !status)
		return kern_set_error(KERN_EINVAL,
				      "kern_flash_ws_probe: NULL pointer");
	if (!fl_wg_supported())
		return kern_set_error(KERN_ENODEV,
				      "kern_flash_ws_probe: needs a compute "
				      "capability 9.0 GPU (sm_90a)");
	rc = tma_map(&tm, x, hd, heads, n, 2, op ? 64 : rows,
		     CU_TENSOR_MAP_L2_PROMOTION_L2_128B, "kern_flash_ws_probe");
	if (rc)
		return rc;
	if (op == 1)
		return rows == 2 ? probe_ring<2>(tm, n / 64, head, out, status, st) :
				   probe_ring<4>(tm, n / 64, head, out, status, st);
	if (hd == 128)
		return probe_tile<128, 128>(tm, x, n, heads, head, r0, out,
					    status, st);
	return rows == 128 ? probe_tile<64, 128>(tm, x, n, heads, head, r0, out,
						  status, st) :
			     probe_tile<64, 192>(tm, x, n, heads, head, r0, out,
						  status, st);
}
