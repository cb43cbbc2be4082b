/*
 * kern_cuda_fast: the CUDA twin's KERN_MATH_BF16 mode (kernels/kern.h,
 * kern_set_math): kern_gemm on bf16 tensor cores through cuBLASLt
 * (kernels/kern_gemm_lt.h) and kern_attn_fwd/bwd through the flash kernels
 * (kernels/kern_flash.h), behind the fp32 interface of kern.h.
 *
 * The operands arrive as fp32 arrays that hold bf16 values (the runtime
 * rounds every GEMM and attention input, runtime/rt_weights.c rt_bf16), so
 * rounding them to bf16 is exact; a value that is not one is rounded to
 * nearest even, as kern_to_bf16 does. Every call casts its operands
 * afresh (a GEMM's A and B, attention's inputs; not the bf16 copies a
 * caller hands to kern_gemm_bf, which kern_fast_gemm_bf multiplies as
 * they are) into the context's scratch buffer (kern_cuda_scratch,
 * kernels/kern_cuda.h), which grows when a call needs more and is never
 * shrunk; the next call's reuse of it is ordered after this one by the
 * context's stream. Casts use
 * 128-bit loads and stores where the arrays allow. Results stay fp32: the
 * GEMM's C is written (or accumulated, beta) by cuBLASLt's fp32 epilogue,
 * attention's o is widened from the flash kernel's bf16 output (exact) and
 * its gradients accumulate in fp32 (kern_flash.h).
 *
 * cuBLASLt runs untuned (kern_lt_new's tune = 0): the heuristic's first
 * algorithm per shape, so results are bit-reproducible on one GPU and
 * library version. With the environment variable GTPLAN_GEMM_TUNE=1 each
 * shape's algorithm is the fastest of the heuristic's 8, timed at its
 * first call and kept for the run (faster where the heuristic's first is
 * not the best; the choice, and so the rounding, may differ from run to
 * run). Shapes the fast kernels do not take (attention head
 * dims other than 64 and 128, an empty inner dimension) use the fp32
 * reference path. The flash kernels attention runs are those
 * GTPLAN_FLASH and GTPLAN_FLASH_BWD named when the context was made
 * (kern_cuda_flash_init; kernels/kern_flash.h).
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern_cuda.h"

extern "C" {
#include "kern_flash.h"
#include "kern_gemm_lt.h"
}

/* Each piece of the scratch starts on a 256-byte boundary (cuBLASLt's and
 * the flash kernels' widest alignment). */
#define FAST_ALIGN 256
/* Growth granularity: a few sizes cover a model's calls. */
#define FAST_GRAIN (2u << 20)

struct kern_fast {
	struct kern_lt *lt;
};

void kern_fast_free(struct kern_fast *f)
{
	if (!f)
		return;
	kern_lt_free(f->lt);
	free(f);
}

static size_t fast_round(size_t bytes)
{
	return (bytes + FAST_ALIGN - 1) / FAST_ALIGN * FAST_ALIGN;
}

/* The context's fast state, made at its first use. */
static int fast_get(struct cuda_impl *c, struct kern_fast **out)
{
	struct kern_fast *f = c->fast;
	int rc;

	if (!f) {
		f = (struct kern_fast *)calloc(1, sizeof(*f));
		if (!f)
			return KERN_ENOMEM;
		const char *tune = getenv("GTPLAN_GEMM_TUNE");

		rc = kern_lt_new((void *)c->stream, tune && !strcmp(tune, "1"),
				 &f->lt);
		if (rc) {
			free(f);
			return rc;
		}
		c->fast = f;
	}
	*out = f;
	return 0;
}

/* Carves the scratch into `n` pieces of the given element counts (bf16
 * unless marked as floats by `f32`, a bit mask). */
static int fast_carve(struct cuda_impl *c, int n, const long long *cnt,
		      unsigned f32, void **piece)
{
	size_t off[8], total = 0;
	void *ws = NULL;

	for (int i = 0; i < n; i++) {
		off[i] = total;
		total += fast_round((size_t)cnt[i] *
				    ((f32 >> i & 1) ? sizeof(float) :
				     sizeof(uint16_t)));
	}
	KERN_TRY(kern_cuda_scratch(c, (total + FAST_GRAIN - 1) / FAST_GRAIN *
				   FAST_GRAIN, &ws));
	for (int i = 0; i < n; i++)
		piece[i] = (char *)ws + off[i];
	return 0;
}

/* ---- fp32 -> bf16 ------------------------------------------------------- */

/* y[r, c] = bf16(x[r * ld + c]) for a [rows, cols] block, y dense. */
__global__ static void cvt_rows_k(long long rows, long long cols,
				  const float *x, long long ld, uint16_t *y)
{
	GRID_STRIDE(i, rows * cols) {
		long long r = i / cols;
		__nv_bfloat16 b = __float2bfloat16_rn(x[r * ld + i - r * cols]);

		y[i] = *(uint16_t *)&b;
	}
}

static __device__ unsigned int pack2(float lo, float hi)
{
	__nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);

	return *(unsigned int *)&b;
}

/* A dense block (ld = cols) as one array, eight values a thread: two
 * 16-byte loads, one 16-byte store, no index division (a per-element
 * 64-bit division held the row-wise kernel to ~1.6 TB/s on an H200). */
__global__ static void cvt_flat8_k(long long n8, const float4 *x, uint4 *y)
{
	GRID_STRIDE(i, n8) {
		float4 a = x[2 * i], b = x[2 * i + 1];

		y[i] = make_uint4(pack2(a.x, a.y), pack2(a.z, a.w),
				  pack2(b.x, b.y), pack2(b.z, b.w));
	}
}

static int to_bf16_rows(cudaStream_t s, long long rows, long long cols,
			const float *x, long long ld, uint16_t *y)
{
	long long n = rows * cols, v = 0;

	if ((ld == cols || rows == 1) && (uintptr_t)x % 16 == 0 &&
	    (uintptr_t)y % 16 == 0)
		v = n / 8 * 8;
	if (v) {
		cvt_flat8_k<<<blocks_for(v / 8), KERN_CUDA_THREADS, 0, s>>>(
			v / 8, (const float4 *)x, (uint4 *)y);
		LAUNCHCHECK(cvt_flat8_k);
		if (n > v) { /* the tail of a dense block: one short row */
			cvt_rows_k<<<1, KERN_CUDA_THREADS, 0, s>>>(
				1, n - v, x + v, n - v, y + v);
			LAUNCHCHECK(cvt_rows_k);
		}
		return 0;
	}
	cvt_rows_k<<<blocks_for(n), KERN_CUDA_THREADS, 0, s>>>(rows, cols, x,
							       ld, y);
	LAUNCHCHECK(cvt_rows_k);
	return 0;
}

/* ---- GEMM --------------------------------------------------------------- */

int kern_fast_gemm_ok(long long m, long long n, long long kd)
{
	return m > 0 && n > 0 && kd > 0;
}

/* kern_gemm's contract (kernels/kern.h) on tensor cores: A and B as bf16
 * copies (dense: their leading dimensions become their row lengths), C
 * fp32 with alpha and beta. */
int kern_fast_gemm(struct cuda_impl *c, int ta, int tb, long long m,
		   long long n, long long kd, float alpha, const float *a,
		   long long lda, const float *b, long long ldb, float beta,
		   float *cc, long long ldc)
{
	return kern_fast_gemm_bf(c, ta, tb, m, n, kd, alpha, a, NULL, lda, b,
				 NULL, ldb, beta, cc, ldc);
}

int kern_fast_gemm_bf(struct cuda_impl *c, int ta, int tb, long long m,
		      long long n, long long kd, float alpha, const float *a,
		      const uint16_t *a16, long long lda, const float *b,
		      const uint16_t *b16, long long ldb, float beta,
		      float *cc, long long ldc)
{
	long long ar = ta ? kd : m, ac = ta ? m : kd;
	long long br = tb ? n : kd, bc = tb ? kd : n;
	long long cnt[2] = { a16 ? 0 : ar * ac, b16 ? 0 : br * bc };
	struct kern_fast *f;
	void *p[2];
	int rc = 0;

	KERN_TRY(fast_get(c, &f));
	if (!a16 || !b16) {
		KERN_TRY(fast_carve(c, 2, cnt, 0, p));
		/* the profile's bracket closes on an error too: one left
		 * open would keep its pool from draining */
		kern_cuda_prof_note(c, KERN_PROF_MEM, "gemm_cast", 0);
		if (!a16)
			rc = to_bf16_rows(c->stream, ar, ac, a, lda,
					  (uint16_t *)p[0]);
		if (!rc && !b16)
			rc = to_bf16_rows(c->stream, br, bc, b, ldb,
					  (uint16_t *)p[1]);
		kern_cuda_prof_note(c, KERN_PROF_MEM, "gemm_cast", 1);
		if (rc)
			return rc;
	}
	kern_cuda_prof_gemm(c, ta, tb, m, n, kd, 1, beta != 0.0f);
	return kern_lt_gemm(f->lt, ta, tb, m, n, kd, alpha,
			    a16 ? a16 : (const uint16_t *)p[0], a16 ? lda : ac,
			    b16 ? b16 : (const uint16_t *)p[1], b16 ? ldb : bc,
			    beta, cc, KERN_LT_F32, ldc, NULL);
}

int kern_fast_gemm_bf16(struct cuda_impl *c, int ta, int tb, long long m,
			long long n, long long kd, const uint16_t *a16,
			long long lda, const uint16_t *b16, long long ldb,
			uint16_t *c16)
{
	struct kern_fast *f;

	KERN_TRY(fast_get(c, &f));
	kern_cuda_prof_gemm(c, ta, tb, m, n, kd, 0, 0);
	return kern_lt_gemm(f->lt, ta, tb, m, n, kd, 1.0f, a16, lda, b16, ldb,
			    0.0f, c16, KERN_LT_BF16, n, NULL);
}

/* ---- attention ---------------------------------------------------------- */

/* Once per context (kern_cuda.h): an attention call costs no getenv. */
void kern_cuda_flash_init(struct cuda_impl *c)
{
	c->flash_fwd = kern_flash_fwd_pick();
	c->flash_bwd = kern_flash_bwd_pick();
}

int kern_fast_attn_ok(const struct kern_attn *a)
{
	return (a->hd == 64 || a->hd == 128) && a->batch >= 1 &&
	       a->batch <= 65535 && a->nh <= 65535 && a->sq <= (1LL << 22) &&
	       a->sk <= (1LL << 22);
}

int kern_fast_attn_fwd(struct cuda_impl *c, const struct kern_attn *a,
		       const float *q, const float *kk, const float *v,
		       const int32_t *qpos, const int32_t *kpos, float *o,
		       float *lse)
{
	return kern_fast_attn_fwd_bf(c, a, q, NULL, kk, NULL, v, NULL, qpos,
				     kpos, o, NULL, lse);
}

int kern_fast_attn_fwd_bf(struct cuda_impl *c, const struct kern_attn *a,
			  const float *q, const uint16_t *q16, const float *kk,
			  const uint16_t *k16, const float *v,
			  const uint16_t *v16, const int32_t *qpos,
			  const int32_t *kpos, float *o, uint16_t *o16,
			  float *lse)
{
	long long nq = a->batch * a->sq * a->nh * a->hd;
	long long nk = a->batch * a->sk * a->nkv * a->hd;
	long long cnt[4] = { q16 ? 0 : nq, k16 ? 0 : nk, v16 ? 0 : nk,
			     o16 ? 0 : nq };
	const float *src[3] = { q, kk, v };
	const uint16_t *in[3] = { q16, k16, v16 };
	void *p[4];
	int rc = 0;

	KERN_TRY(fast_carve(c, 4, cnt, 0, p));
	kern_cuda_prof_note(c, KERN_PROF_MEM, "attn_cast", 0);
	for (int i = 0; i < 3 && !rc; i++)
		if (!in[i]) {
			rc = to_bf16_rows(c->stream, 1, cnt[i], src[i], cnt[i],
					  (uint16_t *)p[i]);
			in[i] = (const uint16_t *)p[i];
		}
	kern_cuda_prof_note(c, KERN_PROF_MEM, "attn_cast", 1); /* on rc too */
	if (rc)
		return rc;
	if (!o16)
		o16 = (uint16_t *)p[3];
	KERN_TRY(kern_flash_fwd_with((enum kern_flash_kind)c->flash_fwd,
				     (void *)c->stream, a, in[0], in[1], in[2],
				     qpos, kpos, o16, lse));
	return o ? kern_cuda_widen_bf16(c->stream, nq, o16, o) : 0;
}

int kern_fast_attn_bwd(struct cuda_impl *c, const struct kern_attn *a,
		       const float *q, const float *kk, const float *v,
		       const float *o, const float *lse, const float *dout,
		       const int32_t *qpos, const int32_t *kpos, float *dq,
		       float *dk, float *dv)
{
	const float *src[5] = { q, kk, v, o, dout };
	const uint16_t *none[5] = { NULL, NULL, NULL, NULL, NULL };

	return kern_fast_attn_bwd_bf(c, a, src, none, lse, qpos, kpos, dq, dk,
				     dv);
}

int kern_fast_attn_bwd_bf(struct cuda_impl *c, const struct kern_attn *a,
			  const float *const src[5],
			  const uint16_t *const in16[5], const float *lse,
			  const int32_t *qpos, const int32_t *kpos, float *dq,
			  float *dk, float *dv)
{
	long long nq = a->batch * a->sq * a->nh * a->hd;
	long long nk = a->batch * a->sk * a->nkv * a->hd;
	long long n[5] = { nq, nk, nk, nq, nq };
	long long cnt[6];
	const uint16_t *in[5];
	void *p[6];
	int cast = 0, rc = 0;

	for (int i = 0; i < 5; i++) {
		in[i] = in16[i];
		cnt[i] = in[i] ? 0 : n[i];
		cast |= !in[i];
	}
	cnt[5] = a->batch * a->nh * a->sq;
	KERN_TRY(fast_carve(c, 6, cnt, 1u << 5, p));
	if (cast)
		kern_cuda_prof_note(c, KERN_PROF_MEM, "attn_cast", 0);
	for (int i = 0; i < 5 && !rc; i++)
		if (!in[i]) {
			rc = to_bf16_rows(c->stream, 1, n[i], src[i], n[i],
					  (uint16_t *)p[i]);
			in[i] = (const uint16_t *)p[i];
		}
	if (cast) /* on rc too */
		kern_cuda_prof_note(c, KERN_PROF_MEM, "attn_cast", 1);
	if (rc)
		return rc;
	return kern_flash_bwd_with((enum kern_flash_kind)c->flash_bwd,
				   (void *)c->stream, a, in[0], in[1], in[2],
				   in[3], lse, in[4], qpos, kpos, (float *)p[5],
				   dq, dk, dv);
}
