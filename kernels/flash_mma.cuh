/*
 * flash_mma.cuh: the warp-level building blocks of kern_flash.cu, for
 * sm_80 and later: cp.async copies into XOR-swizzled shared-memory tiles,
 * ldmatrix fragment loads, and the m16n8k16 bf16 tensor-core product.
 *
 * Fragment layouts are PTX ISA's ("Matrix Fragments for mma.m16n8k16"):
 * with g = lane / 4 and c = 2 * (lane % 4), the accumulator C[16x8] holds
 * (g, c..c+1) in c[0..1] and (g+8, c..c+1) in c[2..3]; A[16x16] holds
 * (g, c), (g+8, c), (g, c+8), (g+8, c+8) pairs in a[0..3]; B[16x8] holds
 * (k = c..c+1, n = g) in b0 and k + 8 in b1. An accumulator pair covering
 * 16 columns is therefore an A fragment once rounded to bf16, which is how
 * P and dS go from one product into the next without shared memory.
 *
 * Tiles are rows of D bf16 (D / 8 chunks of 16 bytes); chunk j of row r is
 * stored at chunk j ^ (r % 8), so the 8 rows one ldmatrix reads fall in 8
 * different bank groups.
 */
#ifndef GTPLAN_FLASH_MMA_CUH
#define GTPLAN_FLASH_MMA_CUH

#include <cuda_bf16.h>
#include <stdint.h>

typedef __nv_bfloat16 fl_bf16;

static __device__ __forceinline__ uint32_t fl_smem(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

/* Element offset of (row, chunk) in a swizzled tile of rows of D. */
template <int D>
static __device__ __forceinline__ int fl_off(int row, int chunk)
{
	return row * D + ((chunk ^ (row & 7)) << 3);
}

/* 16 bytes global -> shared; valid == 0 writes zeros and reads nothing. */
static __device__ __forceinline__ void fl_cp16(uint32_t dst, const void *src,
					       int valid)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
		     "l"(src), "r"(valid ? 16 : 0));
}

static __device__ __forceinline__ void fl_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::);
}

template <int N>
static __device__ __forceinline__ void fl_wait(void)
{
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* Rows [r0, r0 + R) of a [nrows, ld] bf16 matrix (D values each) into a
 * swizzled tile; rows past nrows become zeros. */
template <int R, int D, int NT>
static __device__ __forceinline__ void fl_load_tile(fl_bf16 *s,
						    const fl_bf16 *g,
						    long long ld, int r0,
						    int nrows, int tid)
{
	constexpr int CPR = D / 8;

#pragma unroll
	for (int i = 0; i < R * CPR / NT; i++) {
		int idx = tid + i * NT, row = idx / CPR, ch = idx % CPR;
		int gr = r0 + row, ok = gr < nrows;
		const fl_bf16 *src = g + (long long)(ok ? gr : 0) * ld + ch * 8;

		fl_cp16(fl_smem(s + fl_off<D>(row, ch)), src, ok);
	}
}

static __device__ __forceinline__ void fl_ldsm(uint32_t r[4], uint32_t addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr));
}

static __device__ __forceinline__ void fl_ldsm_t(uint32_t r[4], uint32_t addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
		     "{%0,%1,%2,%3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr));
}

/* A[16x16] at (m0, k0) of a tile stored [m][k]. */
template <int D>
static __device__ __forceinline__ void fl_frag_a(uint32_t a[4],
						 const fl_bf16 *s, int m0,
						 int k0, int lane)
{
	fl_ldsm(a, fl_smem(s + fl_off<D>(m0 + (lane & 15),
					 (k0 >> 3) + (lane >> 4))));
}

/* A[16x16] at (m0, k0) of a tile stored transposed, [k][m]. */
template <int D>
static __device__ __forceinline__ void fl_frag_a_t(uint32_t a[4],
						   const fl_bf16 *s, int m0,
						   int k0, int lane)
{
	fl_ldsm_t(a, fl_smem(s + fl_off<D>(k0 + (lane & 7) + ((lane >> 4) << 3),
					   (m0 >> 3) + ((lane >> 3) & 1))));
}

/* Two B[16x8] (n0 and n0 + 8, k from k0) of a tile stored [n][k]:
 * b[0..1] for n0, b[2..3] for n0 + 8. */
template <int D>
static __device__ __forceinline__ void fl_frag_b(uint32_t b[4],
						 const fl_bf16 *s, int n0,
						 int k0, int lane)
{
	fl_ldsm(b, fl_smem(s + fl_off<D>(n0 + (lane & 7) + ((lane >> 4) << 3),
					 (k0 >> 3) + ((lane >> 3) & 1))));
}

/* The same from a tile stored [k][n]. */
template <int D>
static __device__ __forceinline__ void fl_frag_b_t(uint32_t b[4],
						   const fl_bf16 *s, int n0,
						   int k0, int lane)
{
	fl_ldsm_t(b, fl_smem(s + fl_off<D>(k0 + (lane & 7) +
					   (((lane >> 3) & 1) << 3),
					   (n0 >> 3) + (lane >> 4))));
}

/* c += a b on the tensor cores, fp32 accumulation. */
static __device__ __forceinline__ void fl_mma(float c[4], const uint32_t a[4],
					      uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
		       "r"(b1));
}

/* lo in the low half: the element of the smaller column. */
static __device__ __forceinline__ uint32_t fl_pack(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);

	return *(uint32_t *)&v;
}

/* Accumulator n-tiles 2j and 2j + 1 (16 columns) as an A fragment. */
static __device__ __forceinline__ void fl_acc_to_a(uint32_t a[4],
						   const float lo[4],
						   const float hi[4])
{
	a[0] = fl_pack(lo[0], lo[1]);
	a[1] = fl_pack(lo[2], lo[3]);
	a[2] = fl_pack(hi[0], hi[1]);
	a[3] = fl_pack(hi[2], hi[3]);
}

static __device__ __forceinline__ float fl_exp2(float x)
{
	float y;

	asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
	return y;
}

/* Min and max of pos[start .. start + len) restricted to indices < n (a
 * NULL pos means pos[i] = i), over the warp; all = no index was cut.
 * No valid index gives mn = INT_MAX, mx = INT_MIN. */
static __device__ __forceinline__ void fl_range(const int32_t *pos, int start,
						int len, int n, int lane,
						int *mn, int *mx, int *all)
{
	int lo = 0x7fffffff, hi = -0x7fffffff - 1;

	for (int i = lane; i < len; i += 32) {
		int idx = start + i;

		if (idx < n) {
			int v = pos ? pos[idx] : idx;

			lo = min(lo, v);
			hi = max(hi, v);
		}
	}
#pragma unroll
	for (int off = 16; off; off >>= 1) {
		lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, off));
		hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, off));
	}
	*mn = lo;
	*mx = hi;
	*all = start + len <= n;
}

#endif
