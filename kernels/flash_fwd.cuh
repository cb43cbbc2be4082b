/*
 * flash_fwd.cuh: the per-thread steps of the flash forward that do not
 * depend on how the scores were multiplied, shared by the mma.sync kernel
 * (kernels/kern_flash.cu) and the wgmma kernel (kernels/kern_flash_wg.cu).
 *
 * Both see a row tile of 16 query rows per warp in mma.m16n8's C layout
 * (kernels/flash_mma.cuh): with g = lane / 4, the thread holds rows g and
 * g + 8, columns 8 t + 2 (lane % 4) + 0..1 of n-tile t in s[t][0..1] (row
 * g) and s[t][2..3] (row g + 8). wgmma's m64nN accumulator is that layout
 * per warp of the warpgroup, repeated over N / 8 (PTX ISA, "Register
 * Fragments and Shared Memory Matrix Layouts" of wgmma: "Matrix
 * Fragments for wgmma.m64nNk16", accumulator D), so the same code serves
 * both.
 */
#ifndef GTPLAN_FLASH_FWD_CUH
#define GTPLAN_FLASH_FWD_CUH

#include "flash_common.cuh"

/* Scale into base 2 (SCALE = 0: leave the scores as they are); on a
 * partial tile, -inf where kpos > qpos (qp: the positions of the thread's
 * rows g and g + 8; a row past sq has INT_MIN). k0 is the tile's first
 * key, BN its width. */
template <int BN, int SCALE = 1>
static __device__ __forceinline__ void fl_fwd_mask(float s[BN / 8][4],
						   const fl_params &p, int k0,
						   int lane, const int qp[2],
						   int full)
{
	const float sl = SCALE ? p.scale_log2 : 1.0f;

#pragma unroll
	for (int nt = 0; nt < BN / 8; nt++) {
#pragma unroll
		for (int j = 0; j < 2; j++) {
			int col = k0 + nt * 8 + (lane & 3) * 2 + j;
			int kp = full ? INT_MIN :
				 col < p.sk ? fl_pos(p.kpos, col) : INT_MAX;

			s[nt][j] = kp <= qp[0] ? s[nt][j] * sl : -INFINITY;
			s[nt][2 + j] = kp <= qp[1] ? s[nt][2 + j] * sl :
						     -INFINITY;
		}
	}
}

/* Online softmax statistics of one row tile: new row max m, l rescaled
 * and grown, s becomes exp2(s - m); corr[r] is the factor by which row r's
 * earlier accumulator must be scaled (fl_fwd_rescale), left to the caller
 * so that the wgmma kernel may apply it once its accumulator is no longer
 * in flight. A row with no attended key so far keeps m = -inf and
 * subtracts 0. */
template <int BN>
static __device__ __forceinline__ void fl_fwd_stats(float s[BN / 8][4],
						    float m[2], float l[2],
						    float corr[2])
{
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float mx = m[r], base;

#pragma unroll
		for (int nt = 0; nt < BN / 8; nt++)
			mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
		mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
		base = mx == -INFINITY ? 0.0f : mx;
		corr[r] = fl_exp2(m[r] - base);
		m[r] = mx;
		l[r] *= corr[r];
#pragma unroll
		for (int nt = 0; nt < BN / 8; nt++) {
			s[nt][2 * r] = fl_exp2(s[nt][2 * r] - base);
			s[nt][2 * r + 1] = fl_exp2(s[nt][2 * r + 1] - base);
			l[r] += s[nt][2 * r] + s[nt][2 * r + 1];
		}
	}
}

template <int D>
static __device__ __forceinline__ void fl_fwd_rescale(float acc[D / 8][4],
						      const float corr[2])
{
#pragma unroll
	for (int dt = 0; dt < D / 8; dt++) {
		acc[dt][0] *= corr[0];
		acc[dt][1] *= corr[0];
		acc[dt][2] *= corr[1];
		acc[dt][3] *= corr[1];
	}
}

/* The online softmax of one row tile, accumulator rescaled. */
template <int BN, int D>
static __device__ __forceinline__ void fl_fwd_softmax(float s[BN / 8][4],
						      float acc[D / 8][4],
						      float m[2], float l[2])
{
	float corr[2];

	fl_fwd_stats<BN>(s, m, l, corr);
	fl_fwd_rescale<D>(acc, corr);
}

/* o = acc / l and lse of one row tile (rows r0 and r0 + 8 of the thread). */
template <int D>
static __device__ __forceinline__ void fl_fwd_store(const fl_params &p,
						    float acc[D / 8][4],
						    const float m[2],
						    const float l[2], int b,
						    int h, int r0, int lane)
{
#pragma unroll
	for (int r = 0; r < 2; r++) {
		float sum = l[r], inv;
		int row = r0 + 8 * r;
		fl_bf16 *go;

		sum += __shfl_xor_sync(0xffffffffu, sum, 1);
		sum += __shfl_xor_sync(0xffffffffu, sum, 2);
		if (row >= p.sq)
			continue;
		inv = sum > 0.0f ? 1.0f / sum : 0.0f;
		go = p.out + (((long long)b * p.sq + row) * p.nh + h) * D +
		     (lane & 3) * 2;
#pragma unroll
		for (int dt = 0; dt < D / 8; dt++)
			*(uint32_t *)(go + dt * 8) = fl_pack(
				acc[dt][2 * r] * inv, acc[dt][2 * r + 1] * inv);
		if ((lane & 3) == 0)
			p.lse[((long long)b * p.nh + h) * p.sq + row] =
				sum > 0.0f ? (m[r] + log2f(sum)) * FL_LN2 :
					     -INFINITY;
	}
}

#endif
