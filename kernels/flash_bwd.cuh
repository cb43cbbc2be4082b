/*
 * flash_bwd.cuh: the per-thread steps of the flash backward that do not
 * depend on how the products were multiplied, shared by the mma.sync
 * kernel (kernels/kern_flash_bwd.cu) and the wgmma kernel
 * (kernels/kern_flash_wg_bwd.cu): the dsum pre-pass, a query row's
 * statistics, P^T and dS^T from S^T and dP^T, the final dk/dv update, and
 * the head split of a launch (fl_bwd_split).
 *
 * Both see 16 key rows per warp in mma.m16n8's C layout against a query
 * tile of FL_BWD_BM columns (kernels/flash_mma.cuh: with g = lane / 4 the
 * thread holds key rows g and g + 8, query columns 8 t + 2 (lane % 4) +
 * 0..1 of n-tile t); wgmma's m64nN accumulator is that layout per warp of
 * the warpgroup (kernels/flash_fwd.cuh's top comment), so the same code
 * serves both.
 */
#ifndef GTPLAN_FLASH_BWD_CUH
#define GTPLAN_FLASH_BWD_CUH

#include "flash_common.cuh"

#define FL_BWD_BM 64 /* query rows a backward item */

/* dq, dk and dv zeroed (kern_attn's overwrite) by the n threads of the
 * dsum pass, thread t storing 16 bytes at t, t + n, ...: the main kernel
 * only adds to them and runs after this pass on the same stream.
 * FlashAttention-2 and -3 clear their fp32 dq accumulator in the same
 * pre-pass (Clear_dQaccum in csrc/flash_attn/src/ and hopper/
 * flash_bwd_preprocess_kernel.h of Dao-AILab/flash-attention); here dk
 * and dv accumulate too, so all three are cleared, which spares the
 * caller three launches of a zeroing kernel whose fixed cost its 8 to
 * 34 MB do not cover (docs/runtime-gpu.md, memory-bound kernels). Sizes
 * are multiples of 4 floats (D is); the pointers are 16-byte aligned
 * (kernels/kern_flash.h). */
template <int D>
static __device__ __forceinline__ void fl_bwd_clear(const fl_params &p,
						    long long t, long long n)
{
	const float4 z = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	long long nq = (long long)p.batch * p.sq * p.nh * (D / 4);
	long long nk = (long long)p.batch * p.sk * p.nkv * (D / 4);

	for (long long i = t; i < nq; i += n)
		((float4 *)p.dq)[i] = z;
	for (long long i = t; i < nk; i += n) {
		((float4 *)p.dk)[i] = z;
		((float4 *)p.dv)[i] = z;
	}
}

/* dsum[b, h, i] = sum_d dout * o: one warp per row of o; with p.zero
 * every thread first clears its share of dq, dk, dv (fl_bwd_clear). */
template <int D>
static __global__ void fl_dsum_kernel(const fl_params p, long long rows)
{
	long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long w = t >> 5;
	int lane = threadIdx.x & 31;
	float acc = 0.0f;

	if (p.zero)
		fl_bwd_clear<D>(p, t, (long long)gridDim.x * blockDim.x);
	if (w >= rows)
		return;
	for (int i = lane * 2; i < D; i += 64) {
		float2 o = __bfloat1622float2(
			*(const __nv_bfloat162 *)(p.o + w * D + i));
		float2 d = __bfloat1622float2(
			*(const __nv_bfloat162 *)(p.dout + w * D + i));

		acc += o.x * d.x + o.y * d.y;
	}
#pragma unroll
	for (int off = 16; off; off >>= 1)
		acc += __shfl_xor_sync(0xffffffffu, acc, off);
	if (lane == 0) {
		long long bi = w / p.nh, h = w % p.nh;
		long long b = bi / p.sq, i = bi % p.sq;

		p.dsum[(b * p.nh + h) * p.sq + i] = acc;
	}
}

/* The dsum pre-pass on stream st (with p.zero, dq, dk, dv cleared in
 * it). */
template <int D>
static int fl_dsum_launch(const fl_params &p, cudaStream_t st)
{
	long long rows = (long long)p.batch * p.sq * p.nh;

	fl_dsum_kernel<D><<<(unsigned)((rows + 7) / 8), 256, 0, st>>>(p, rows);
	CUDACHECK(cudaGetLastError());
	return 0;
}

/* One query row's statistics: lse in base 2 (+inf where the row attends
 * nothing or is past sq, so that exp2(s - lse) = 0), dsum and qpos. */
static __device__ __forceinline__ void bwd_row(const fl_params &p, int b,
					       int h, int row, float *l2,
					       float *ds, int *qp)
{
	long long i = ((long long)b * p.nh + h) * p.sq + row;
	float lse;

	if (row >= p.sq) {
		*l2 = INFINITY;
		*ds = 0.0f;
		*qp = INT_MIN;
		return;
	}
	lse = p.lse_in[i];
	*l2 = lse == -INFINITY ? INFINITY : lse * FL_LOG2E;
	*ds = p.dsum[i];
	*qp = fl_pos(p.qpos, row);
}

/* P^T = exp2(scale_log2 s - lse2), 0 where masked (kp0, kp1: the
 * positions of the thread's key rows; l2, ds, qp: the query tile's rows
 * as bwd_row gives them); then dS^T = P^T (dP^T - dsum) into dp. */
static __device__ __forceinline__ void bwd_softmax(const fl_params &p,
						   float pt[FL_BWD_BM / 8][4],
						   float dp[FL_BWD_BM / 8][4],
						   const float *sl2,
						   const float *sds,
						   const int *sqp, int full,
						   int kp0, int kp1, int lane)
{
#pragma unroll
	for (int nt = 0; nt < FL_BWD_BM / 8; nt++) {
#pragma unroll
		for (int j = 0; j < 2; j++) {
			int col = nt * 8 + (lane & 3) * 2 + j, qp = sqp[col];
			float l2 = sl2[col], ds = sds[col];
			float p0 = fl_exp2(pt[nt][j] * p.scale_log2 - l2);
			float p1 = fl_exp2(pt[nt][2 + j] * p.scale_log2 - l2);

			if (!full && kp0 > qp)
				p0 = 0.0f;
			if (!full && kp1 > qp)
				p1 = 0.0f;
			pt[nt][j] = p0;
			pt[nt][2 + j] = p1;
			dp[nt][j] = p0 * (dp[nt][j] - ds);
			dp[nt][2 + j] = p1 * (dp[nt][2 + j] - ds);
		}
	}
}

/* dk += scale acc_k, dv += acc_v for the thread's key rows kr and kr + 8
 * of kv head g: a plain add where the block owns the rows (one block per
 * key tile and query group), an atomic one where the group's query heads
 * are split over `split` blocks (fl_bwd_split). */
template <int D>
static __device__ __forceinline__ void bwd_store(const fl_params &p,
						 float dk[D / 8][4],
						 float dv[D / 8][4], int b,
						 int g, int kr, int lane,
						 int split)
{
#pragma unroll
	for (int r = 0; r < 2; r++) {
		int row = kr + 8 * r;
		long long off;

		if (row >= p.sk)
			continue;
		off = (((long long)b * p.sk + row) * p.nkv + g) * D + (lane & 3) * 2;
#pragma unroll
		for (int dt = 0; dt < D / 8; dt++) {
			float2 *xk = (float2 *)(p.dk + off + dt * 8);
			float2 *xv = (float2 *)(p.dv + off + dt * 8);
			float2 vk, vv;

			if (split > 1) {
				atomicAdd(xk, make_float2(
					p.scale * dk[dt][2 * r],
					p.scale * dk[dt][2 * r + 1]));
				atomicAdd(xv, make_float2(dv[dt][2 * r],
							  dv[dt][2 * r + 1]));
				continue;
			}
			vk = *xk;
			vv = *xv;
			vk.x += p.scale * dk[dt][2 * r];
			vk.y += p.scale * dk[dt][2 * r + 1];
			vv.x += dv[dt][2 * r];
			vv.y += dv[dt][2 * r + 1];
			*xk = vk;
			*xv = vv;
		}
	}
}

/* The blocks a group's query heads are split over: 1 (each block owns its
 * key rows, no atomics) when the launch has blocks for 4 waves of the
 * GPU's SMs at one block per SM; else enough to get there, up to one per
 * query head (a single sequence: 512 blocks for Llama-3.2-1B's 8 groups
 * and 4096 keys, against the H200's 132 SMs). */
static inline int fl_bwd_split(const fl_params &p, long long blocks)
{
	int grp = (int)(p.nh / p.nkv), split = 1, dev = 0, sms = 1;

	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
				   dev) != cudaSuccess)
		sms = 1;
	while (split < grp && blocks * split < 4LL * sms)
		split *= 2;
	return split < grp ? split : grp;
}

#endif
