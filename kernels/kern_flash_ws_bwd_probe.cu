/*
 * kern_flash_ws_bwd_probe: the warp-specialized flash backward's machinery
 * alone (kern_flash_ws_bwd_probe_tma and _dq, kernels/kern_flash.h), for
 * tests/gpu/flash_probe_gpu.c to find a protocol or layout mistake in
 * isolation: the TMA loads of a stage into the two-stage ring (the
 * kernel's layout and load functions; its own arrival counts, a producer
 * thread and one consumer warpgroup), and the dQ bulk reduction, through
 * the functions of kernels/flash_bwd_ws_tiles.cuh that
 * kernels/kern_flash_ws_bwd.cu runs.
 * sm_90a only (Makefile: WG_GENCODE). Each entry point waits for its
 * kernel and reports a barrier wait that gave up.
 */
#include "flash_bwd_ws_tiles.cuh"

#define WS_PROBE_ITEMS 6

/* Items n = 0 .. WS_PROBE_ITEMS - 1: query rows BM (n / 2) .. of batch
 * n % 2, head h, loaded by thread 0 with ws_load_qo (the tensor behind
 * m.q and m.o) into stage n % WS_STAGES as the producer does, copied out
 * unswizzled by warpgroup 1 (out[n][0]: the Q slot, out[n][1]: the dO
 * slot), then released with one arrival per warp, as the consumers do. */
template <int D, int BM>
__global__ void __launch_bounds__(256, 1)
fl_ws_probe_tma_kernel(const __grid_constant__ ws_maps m, int h,
		       fl_bf16 *out)
{
	extern __shared__ __align__(1024) unsigned char ws_sm[];
	int tid = threadIdx.x, ct = tid - 128;
	ws_blk k = {};

	k.base = wg_align(ws_sm);
	k.gb = ws_sm + (k.base - fl_smem(ws_sm));
	if (tid == 0) {
		for (int s = 0; s < WS_STAGES; s++) {
			mb_init(ws_bar<D, BM>(k, WS_B_FULL(s)), 1);
			mb_init(ws_bar<D, BM>(k, WS_B_EMPTY(s)), 4);
		}
		mb_init_fence();
	}
	__syncthreads();
	for (int n = 0; n < WS_PROBE_ITEMS && (tid == 0 || ct >= 0); n++) {
		int s = n % WS_STAGES, ph = (n / WS_STAGES) & 1;
		wb_tiles t;

		ws_at<D, BM>(&t, k, s, 0);
		if (tid == 0) {
			ws_wait(ws_bar<D, BM>(k, WS_B_EMPTY(s)), ph ^ 1);
			ws_load_qo<D, BM>(m, t.q, t.o, h, BM * (n / 2), n % 2,
					  ws_bar<D, BM>(k, WS_B_FULL(s)));
			continue;
		}
		ws_wait(ws_bar<D, BM>(k, WS_B_FULL(s)), ph);
		for (int i = ct; i < 2 * BM * D; i += 128) {
			int slot = i / (BM * D), r = i / D % BM, c = i % D;
			uint32_t at = (slot ? t.o : t.q) - k.base;
			const unsigned char *tile = k.gb + at;

			out[((n * 2 + slot) * BM + r) * D + c] =
				*(const fl_bf16 *)(tile + wg_off(BM, r, c));
		}
		__syncwarp();
		if ((ct & 31) == 0)
			mb_arrive(ws_bar<D, BM>(k, WS_B_EMPTY(s)));
	}
}

/* The probe's dS K value at query row r, column c (kernels/kern_flash.h). */
static __device__ __forceinline__ float ws_probe_val(int r, int c)
{
	return (float)((r * 7 + c * 13) % 29 - 14);
}

/* Two items (query rows 0 .. 63, 64 .. 127) of one consumer warpgroup's
 * dQ through ws_dq_out, acc holding ws_probe_val in the accumulator
 * layout; columns from 64 at hd 128 (the second warpgroup's), 0 at 64. */
template <int D>
__global__ void __launch_bounds__(128, 1)
fl_ws_probe_dq_kernel(const fl_params p, int h)
{
	typedef ws_lay<D, ws_bm(D)> L;
	extern __shared__ __align__(1024) unsigned char ws_sm[];
	uint32_t base = wg_align(ws_sm);
	int tid = threadIdx.x, wq = tid >> 5, lane = tid & 31;
	uint32_t sq = base + L::dq + (uint32_t)wq * 16 * WS_DQW * 4;
	float acc[8][4];

	for (int n = 0; n < 2; n++) {
		for (int nt = 0; nt < 8; nt++)
			for (int x = 0; x < 4; x++)
				acc[nt][x] = ws_probe_val(
					64 * n + 16 * wq + (lane >> 2) +
						8 * (x >> 1),
					8 * nt + 2 * (lane & 3) + (x & 1));
		ws_dq_out<D>(p, acc, sq, 0, h, 64 * n + 16 * wq,
			     D == 128 ? 64 : 0, lane);
	}
	if (lane < 16)
		ws_bulk_wait();
}

template <int D>
static int ws_probe_tma(cudaStream_t st, int rows, int nh, int h,
			const uint16_t *src, uint16_t *out)
{
	constexpr int BM = ws_bm(D);
	ws_maps m;
	int rc = tma_map(&m.q, src, D, nh, rows, 2, BM,
			     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "fl_ws_bwd");

	if (!rc)
		rc = tma_map(&m.o, src, D, nh, rows, 2, BM,
			     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, "fl_ws_bwd");
	if (!rc)
		rc = ws_launch(fl_ws_probe_tma_kernel<D, BM>, dim3(1), 256,
			       ws_smem<D, BM>(0), st, m, h, (fl_bf16 *)out);
	return rc ? rc : ws_hung_check(st, "kern_flash_ws_bwd_probe_tma");
}

extern "C" int kern_flash_ws_bwd_probe_tma(void *stream, int hd, int rows,
					   int nh, int h, const uint16_t *src,
					   uint16_t *out)
{
	cudaStream_t st = (cudaStream_t)stream;

	if (!src || !out || (hd != 64 && hd != 128) ||
	    rows <= 2 * ws_bm(hd) || nh < 1 || h < 0 || h >= nh)
		return kern_set_error(KERN_EINVAL,
				      "kern_flash_ws_bwd_probe_tma: NULL tensor "
				      "or hd %d rows %d nh %d h %d out of range",
				      hd, rows, nh, h);
	if (!fl_wg_supported() || !tma_encoder())
		return kern_set_error(KERN_ENODEV,
				      "kern_flash_ws_bwd_probe_tma: needs a "
				      "compute capability 9.0 GPU (sm_90a) and "
				      "a CUDA 12 driver");
	return hd == 64 ? ws_probe_tma<64>(st, rows, nh, h, src, out) :
			  ws_probe_tma<128>(st, rows, nh, h, src, out);
}

extern "C" int kern_flash_ws_bwd_probe_dq(void *stream, int hd, int sq,
					  int nh, int h, float scale,
					  float *dq)
{
	cudaStream_t st = (cudaStream_t)stream;
	fl_params p = {};
	int rc;

	if (!dq || (hd != 64 && hd != 128) || sq < 1 || nh < 1 || h < 0 ||
	    h >= nh)
		return kern_set_error(KERN_EINVAL,
				      "kern_flash_ws_bwd_probe_dq: NULL dq or "
				      "hd %d sq %d nh %d h %d out of range", hd,
				      sq, nh, h);
	if (!fl_wg_supported())
		return kern_set_error(KERN_ENODEV,
				      "kern_flash_ws_bwd_probe_dq: needs a "
				      "compute capability 9.0 GPU (sm_90a)");
	p.batch = 1;
	p.sq = sq;
	p.nh = nh;
	p.scale = scale;
	p.dq = dq;
	rc = hd == 64 ? ws_launch(fl_ws_probe_dq_kernel<64>, dim3(1), 128,
				  ws_smem<64, ws_bm(64)>(0), st, p, h) :
			ws_launch(fl_ws_probe_dq_kernel<128>, dim3(1), 128,
				  ws_smem<128, ws_bm(128)>(0), st, p, h);
	return rc ? rc : ws_hung_check(st, "kern_flash_ws_bwd_probe_dq");
}
