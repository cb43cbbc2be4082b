/*
 * test_kernels_fast_attn_gpu: attention in the CUDA twin's bf16 math mode
 * (kern_set_math; the flash kernels, kernels/kern_flash.h) against the
 * CPU twin and against the flash kernels called directly, on inputs that
 * hold bf16 values (fattn_init). Run by test_fast_kernels
 * (tests/gpu/test_kernels_fast_gpu.c) after the GEMMs, norms and Adam: the
 * fixture's one random state runs on from theirs, so the data depend on
 * that order. Errors are the fixture's normwise max |gpu - cpu| / max
 * |cpu|.
 *
 * Tolerances and why:
 *  - attn_bf16 2e-2 for o, dq, dk, dv (lse 1e-3): the flash kernels round
 *    P, dS and the forward's o to bf16 (FlashAttention-2's precision; the
 *    same bound as tests/gpu/test_flash_gpu.c, here elementwise-max
 *    normwise so twice its 1e-2), the CPU sums in double.
 *  - attn_is_flash 0: the fast path's o and lse equal bit for bit
 *    those of kern_flash_fwd (kernels/kern_flash.h) called directly on the
 *    same bf16 inputs; its dq, dk and dv those of kern_flash_bwd within
 *    1e-5 (sums by atomics: dq always, dk and dv where a sequence's
 *    blocks split each query group's heads, kern_flash_bwd.cu).
 *  - attn_copies 2e-2 (TOL_ATTN, lse 1e-3): kern_attn_fwd_bf / bwd_bf on
 *    the device's bf16 copies (no casts) against the CPU twin's, as
 *    attn_bf16; the o copy the flash forward writes equals the bits of
 *    the widened o (attn_copies_bits 0), as the forward with o NULL
 *    writes them alone, and the backward handed dout's
 *    bf16 bits (dout16) gives dq, dk, dv within 1e-5 of the backward that
 *    casts the fp32 dout (the same operand; the atomics' order differs).
 *  - attn_flash_once 0: a context made under GTPLAN_FLASH=mma (ws) runs
 *    mma.sync (ws) after the variable changes: o and lse the bits of
 *    kern_flash_fwd_with's on the same inputs (a context reads it once,
 *    at kern_init).
 *  - attn_fallback 0: a head dim the flash kernels lack (32) runs the fp32
 *    reference kernels in bf16 mode too, bit for bit.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_fast_gpu_fixture.h"
#include "kern_flash.h"
#include "kern_gpu_fixture.h"

#define TOL_ATTN 2e-2
#define TOL_LSE 1e-3
#define TOL_DQ_ORDER 1e-5

/* batch, sq, nh, nkv, hd; qoff: query positions start at qoff of sk = sq +
 * qoff keys (a context-parallel rank's later chunk reads earlier keys). */
static const long long attn_dims[][6] = {
	{ 1, 128, 4, 1, 64, 0 }, { 2, 200, 8, 2, 128, 0 },
	{ 1, 77, 4, 4, 64, 51 }, { 1, 300, 16, 2, 128, 0 },
};
#define NATTN_FAST (sizeof(attn_dims) / sizeof(attn_dims[0]))

struct fattn {
	struct kern_attn a;
	long long nq, nk, nl;
	float *q, *k, *v, *dout, *g[3]; /* host; g: dq, dk, dv start values */
	int32_t *qpos, *kpos;
	float *d[11]; /* device: q k v dout dq dk dv o lse qpos kpos */
};

static void fattn_init(struct fattn *f, const long long *dm)
{
	long long sk = dm[1] + dm[5];

	memset(f, 0, sizeof(*f));
	f->a = (struct kern_attn){ dm[0], dm[1], sk, dm[2], dm[3], dm[4],
				   (float)(1.0 / sqrt((double)dm[4])), 0 };
	f->nq = f->a.batch * f->a.sq * f->a.nh * f->a.hd;
	f->nk = f->a.batch * sk * f->a.nkv * f->a.hd;
	f->nl = f->a.batch * f->a.nh * f->a.sq;
	f->q = rnd16(f->nq, 1);
	f->k = rnd16(f->nk, 1);
	f->v = rnd16(f->nk, 1);
	f->dout = rnd16(f->nq, 1);
	f->g[0] = rnd(f->nq, 0.1f);
	f->g[1] = rnd(f->nk, 0.1f);
	f->g[2] = rnd(f->nk, 0.1f);
	f->qpos = xmalloc((size_t)f->a.sq * 4);
	f->kpos = xmalloc((size_t)sk * 4);
	for (long long i = 0; i < f->a.sq; i++)
		f->qpos[i] = (int32_t)(i + dm[5]);
	for (long long i = 0; i < sk; i++)
		f->kpos[i] = (int32_t)i;
	f->d[0] = up(f->q, (size_t)f->nq * 4);
	f->d[1] = up(f->k, (size_t)f->nk * 4);
	f->d[2] = up(f->v, (size_t)f->nk * 4);
	f->d[3] = up(f->dout, (size_t)f->nq * 4);
	f->d[4] = up(f->g[0], (size_t)f->nq * 4);
	f->d[5] = up(f->g[1], (size_t)f->nk * 4);
	f->d[6] = up(f->g[2], (size_t)f->nk * 4);
	f->d[7] = up(f->dout, (size_t)f->nq * 4); /* o, overwritten */
	f->d[8] = up(f->g[0], (size_t)f->nl * 4); /* lse, overwritten */
	f->d[9] = up(f->qpos, (size_t)f->a.sq * 4);
	f->d[10] = up(f->kpos, (size_t)sk * 4);
}

static void fattn_free(struct fattn *f)
{
	for (int i = 0; i < 11; i++)
		drop(f->d[i]);
	free(f->q); free(f->k); free(f->v); free(f->dout);
	free(f->g[0]); free(f->g[1]); free(f->g[2]);
	free(f->qpos); free(f->kpos);
}

/* The fast path on the device (G in bf16 mode) against the CPU. */
static void attn_vs_cpu(struct fattn *f, struct verdict *v,
			struct verdict *vl)
{
	long long n[3] = { f->nq, f->nk, f->nk };
	long long big = f->nq > f->nk ? f->nq : f->nk;
	float *o = xmalloc((size_t)f->nq * 4), *og = xmalloc((size_t)f->nq * 4);
	float *lse = xmalloc((size_t)f->nl * 4);
	float *lg = xmalloc((size_t)f->nl * 4);
	float *g[3], *back = xmalloc((size_t)big * 4);
	const struct kern_attn *a = &f->a;

	for (int i = 0; i < 3; i++)
		g[i] = dup(f->g[i], n[i]);
	see_rc(v, kern_attn_fwd(&C, a, f->q, f->k, f->v, f->qpos, f->kpos, o,
				lse));
	see_rc(v, kern_attn_fwd(&G, a, f->d[0], f->d[1], f->d[2],
				(void *)f->d[9], (void *)f->d[10], f->d[7],
				f->d[8]));
	see_rc(v, down(og, f->d[7], (size_t)f->nq * 4));
	see_rc(v, down(lg, f->d[8], (size_t)f->nl * 4));
	see(v, relerr(og, o, f->nq));
	see(vl, relerr_to(lg, lse, f->nl, 1.0));
	/* the backward from each side's own forward, as the runtime runs */
	see_rc(v, kern_attn_bwd(&C, a, f->q, f->k, f->v, o, lse, f->dout,
				f->qpos, f->kpos, g[0], g[1], g[2]));
	see_rc(v, kern_attn_bwd(&G, a, f->d[0], f->d[1], f->d[2], f->d[7],
				f->d[8], f->d[3], (void *)f->d[9],
				(void *)f->d[10], f->d[4], f->d[5], f->d[6]));
	for (int i = 0; i < 3; i++) {
		see_rc(v, down(back, f->d[4 + i], (size_t)n[i] * 4));
		see(v, relerr(back, g[i], n[i]));
	}
	free(o); free(lse); free(og); free(lg); free(back);
	for (int i = 0; i < 3; i++)
		free(g[i]);
}

/* bf16 copies on the device of n floats at d. */
static uint16_t *dev16(struct verdict *v, const float *d, long long n)
{
	uint16_t *p = NULL;

	see_rc(v, kern_alloc(&G, (size_t)n * 2, (void **)&p));
	if (p)
		see_rc(v, kern_to_bf16(&G, n, d, p));
	return p;
}

/* After attn_vs_cpu: the fast path's o, lse (d[7], d[8]) and gradients
 * (d[4..6]) against kern_flash_fwd/bwd called directly on the same
 * inputs. */
static void attn_is_flash(struct fattn *f, struct verdict *v)
{
	const struct kern_attn *a = &f->a;
	long long n[3] = { f->nq, f->nk, f->nk };
	const float *src[5] = { f->d[0], f->d[1], f->d[2], f->d[7], f->d[3] };
	long long cnt[5] = { f->nq, f->nk, f->nk, f->nq, f->nq };
	uint16_t *in[5], *o16 = NULL;
	float *of = NULL, *lse = NULL, *dsum = NULL, *dg[3], *x, *y;
	const int32_t *qp = (const int32_t *)f->d[9];
	const int32_t *kp = (const int32_t *)f->d[10];
	void *st = kern_stream(&G);

	for (int i = 0; i < 5; i++)
		in[i] = dev16(v, src[i], cnt[i]);
	see_rc(v, kern_alloc(&G, (size_t)f->nq * 2, (void **)&o16));
	see_rc(v, kern_alloc(&G, (size_t)f->nq * 4, (void **)&of));
	see_rc(v, kern_alloc(&G, (size_t)f->nl * 4, (void **)&lse));
	see_rc(v, kern_alloc(&G, (size_t)f->nl * 4, (void **)&dsum));
	for (int i = 0; i < 3; i++)
		dg[i] = up(f->g[i], (size_t)n[i] * 4);
	if (!v->rc) {
		see_rc(v, kern_flash_fwd(st, a, in[0], in[1], in[2], qp, kp,
					 o16, lse));
		see_rc(v, kern_from_bf16(&G, f->nq, o16, of));
		see(v, same_bits(v, of, f->d[7], (size_t)f->nq * 4));
		see(v, same_bits(v, lse, f->d[8], (size_t)f->nl * 4));
		see_rc(v, kern_flash_bwd(st, a, in[0], in[1], in[2], in[3],
					 f->d[8], in[4], qp, kp, dsum, dg[0],
					 dg[1], dg[2]));
		for (int i = 0; i < 3; i++) {
			x = xmalloc((size_t)n[i] * 4);
			y = xmalloc((size_t)n[i] * 4);
			see_rc(v, down(x, dg[i], (size_t)n[i] * 4));
			see_rc(v, down(y, f->d[4 + i], (size_t)n[i] * 4));
			see(v, relerr(y, x, n[i]) <= TOL_DQ_ORDER ? 0 :
			    INFINITY);
			free(x);
			free(y);
		}
	}
	for (int i = 0; i < 5; i++)
		drop(in[i]);
	for (int i = 0; i < 3; i++)
		drop(dg[i]);
	drop(o16); drop(of); drop(lse); drop(dsum);
}

/* The bf16 forward of a context made under GTPLAN_FLASH=val (restored
 * after) on the bf16 inputs in[3] into o16, lse: 0, or its error. It
 * waits for G's queue before and for its own after. */
static int fwd_made_under(const char *val, const struct kern_attn *a,
			  uint16_t *const in[3], const int32_t *qp,
			  const int32_t *kp, uint16_t *o16, float *lse)
{
	const char *e = getenv("GTPLAN_FLASH");
	char *was = e ? strdup(e) : NULL;
	struct kern_ctx w;
	int rc;

	setenv("GTPLAN_FLASH", val, 1);
	rc = kern_sync(&G);
	if (!rc)
		rc = kern_init(&w, KERN_CUDA, 0);
	/* what the variable says after kern_init must not matter */
	setenv("GTPLAN_FLASH", strcmp(val, "ws") ? "ws" : "mma", 1);
	if (!rc) {
		rc = kern_set_math(&w, KERN_MATH_BF16);
		if (!rc)
			rc = kern_attn_fwd_bf(&w, a, in[0], in[1], in[2], qp,
					      kp, NULL, o16, lse);
		if (!rc)
			rc = kern_sync(&w);
		kern_release(&w);
	}
	if (was)
		setenv("GTPLAN_FLASH", was, 1);
	else
		unsetenv("GTPLAN_FLASH");
	free(was);
	return rc;
}

/* A context reads GTPLAN_FLASH once, at kern_init (kernels/kern_cuda_fast.cu
 * kern_cuda_flash_init): made under mma (ws) and run with the variable
 * naming the other, its forward gives the o and lse bits of
 * kern_flash_fwd_with(KERN_FLASH_MMA) (KERN_FLASH_WS) on the same inputs.
 * Compute capability 9.0 only (ws: KERN_ENODEV elsewhere, where mma.sync
 * always runs). Telling where the two kernels' bits differ on the case,
 * which a note says when they do not. */
static void attn_flash_once(struct fattn *f, struct verdict *v)
{
	static const char *const name[2] = { "mma", "ws" };
	static const enum kern_flash_kind kind[2] = { KERN_FLASH_MMA,
						      KERN_FLASH_WS };
	const struct kern_attn *a = &f->a;
	const float *src[3] = { f->d[0], f->d[1], f->d[2] };
	long long cnt[3] = { f->nq, f->nk, f->nk };
	size_t no = (size_t)f->nq * 2, nl = (size_t)f->nl * 4;
	const int32_t *qp = (const int32_t *)f->d[9];
	const int32_t *kp = (const int32_t *)f->d[10];
	uint16_t *in[3], *o16 = NULL, *o2 = NULL;
	float *lse = NULL, *lse2 = NULL;
	/* per kind: o16's bits and lse's, by the kernel, then the context */
	unsigned char *h[2][2], *x[2] = { xmalloc(no), xmalloc(nl) };
	int rc;

	for (int i = 0; i < 3; i++)
		in[i] = dev16(v, src[i], cnt[i]);
	see_rc(v, kern_alloc(&G, no, (void **)&o16));
	see_rc(v, kern_alloc(&G, no, (void **)&o2));
	see_rc(v, kern_alloc(&G, nl, (void **)&lse));
	see_rc(v, kern_alloc(&G, nl, (void **)&lse2));
	for (int t = 0; t < 2; t++) {
		h[t][0] = xmalloc(no);
		h[t][1] = xmalloc(nl);
	}
	for (int t = 0; t < 2 && !v->rc; t++) {
		rc = kern_flash_fwd_with(kind[t], kern_stream(&G), a, in[0],
					 in[1], in[2], qp, kp, o16, lse);
		if (rc == KERN_ENODEV) /* no wgmma here */
			break;
		see_rc(v, rc);
		see_rc(v, down(h[t][0], o16, no));
		see_rc(v, down(h[t][1], lse, nl));
		see_rc(v, fwd_made_under(name[t], a, in, qp, kp, o2, lse2));
		see_rc(v, down(x[0], o2, no));
		see_rc(v, down(x[1], lse2, nl));
		see(v, memcmp(x[0], h[t][0], no) || memcmp(x[1], h[t][1], nl) ?
			       INFINITY : 0);
		if (t == 1 && !v->rc && !memcmp(h[0][0], h[1][0], no) &&
		    !memcmp(h[0][1], h[1][1], nl))
			printf("  note: attn_flash_once: mma's and ws's bits "
			       "agree at hd %lld, sq %lld: not telling\n",
			       a->hd, a->sq);
	}
	for (int i = 0; i < 3; i++)
		drop(in[i]);
	for (int t = 0; t < 2; t++) {
		free(h[t][0]);
		free(h[t][1]);
	}
	free(x[0]);
	free(x[1]);
	drop(o16); drop(o2); drop(lse); drop(lse2);
}

/* The forward with o NULL writes the same o16 bits (d[3]) alone. */
static double o_alone(const struct kern_attn *a, uint16_t *const d[4],
		      const int32_t *qp, const int32_t *kp, long long nq)
{
	struct verdict w = { 0, 0 };
	uint16_t *e16 = NULL, *h1 = xmalloc((size_t)nq * 2);
	uint16_t *h2 = xmalloc((size_t)nq * 2);
	float *lse = NULL;
	double r;

	see_rc(&w, kern_alloc(&G, (size_t)nq * 2, (void **)&e16));
	see_rc(&w, kern_alloc(&G, (size_t)(a->batch * a->nh * a->sq) * 4,
			      (void **)&lse));
	see_rc(&w, kern_attn_fwd_bf(&G, a, d[0], d[1], d[2], qp, kp, NULL,
				    e16, lse));
	see_rc(&w, down(h1, d[3], (size_t)nq * 2));
	see_rc(&w, down(h2, e16, (size_t)nq * 2));
	r = w.rc || memcmp(h1, h2, (size_t)nq * 2) ? INFINITY : 0;
	drop(e16);
	drop(lse);
	free(h1);
	free(h2);
	return r;
}

/* dout handed as its bf16 bits (dout NULL) gives the flash backward the
 * operand the fp32 dout's cast gives it: dq, dk, dv within the atomics'
 * order (1e-5 of their scale, as attn_is_flash). dg holds the fp32
 * dout's results; vb collects. */
static void attn_dout16(struct fattn *f, const struct kern_attn *a,
			uint16_t *const d[4], const float *dlse,
			const int32_t *qp, const int32_t *kp, float *const dg[3],
			const long long n[3], struct verdict *vb)
{
	long long nq = f->nq;
	float *x = xmalloc((size_t)nq * 4), *y;
	uint16_t *h16 = xmalloc((size_t)nq * 2), *d16 = NULL;
	float *eg[3] = { NULL, NULL, NULL };

	see_rc(vb, kern_to_bf16(&C, nq, f->dout, h16));
	d16 = up(h16, (size_t)nq * 2);
	for (int i = 0; i < 3; i++)
		see_rc(vb, kern_alloc(&G, (size_t)n[i] * 4, (void **)&eg[i]));
	see_rc(vb, kern_attn_bwd_bf(&G, a, d[0], d[1], d[2], d[3], dlse, NULL,
				    d16, qp, kp, eg[0], eg[1], eg[2]));
	for (int i = 0; i < 3; i++) {
		y = xmalloc((size_t)n[i] * 4);
		free(x);
		x = xmalloc((size_t)n[i] * 4);
		see_rc(vb, down(x, eg[i], (size_t)n[i] * 4));
		see_rc(vb, down(y, dg[i], (size_t)n[i] * 4));
		see(vb, relerr(x, y, n[i]) > 1e-5 ? INFINITY : 0);
		free(y);
		drop(eg[i]);
	}
	drop(d16);
	free(h16);
	free(x);
}

/* kern_attn_fwd_bf / bwd_bf: the device on its copies against the CPU
 * twin on its own (f's inputs hold bf16 values: fattn_init). */
static void attn_copies(struct fattn *f, struct verdict *v,
			struct verdict *vl, struct verdict *vb)
{
	const struct kern_attn *a = &f->a;
	long long n[4] = { f->nq, f->nk, f->nk, f->nq };
	uint16_t *h[4], *d[4];
	float *o = xmalloc((size_t)f->nq * 4), *lse = xmalloc((size_t)f->nl * 4);
	float *g[3], *dg[3], *x;
	float *dof = NULL, *dlse = NULL;
	const int32_t *qp = (const int32_t *)f->d[9];
	const int32_t *kp = (const int32_t *)f->d[10];
	const float *src[3] = { f->q, f->k, f->v };

	for (int i = 0; i < 3; i++) {
		h[i] = xmalloc((size_t)n[i] * 2);
		see_rc(v, kern_to_bf16(&C, n[i], src[i], h[i]));
		d[i] = dev16(v, f->d[i], n[i]);
		g[i] = xmalloc((size_t)n[i] * 4);
		dg[i] = NULL;
		see_rc(v, kern_alloc(&G, (size_t)n[i] * 4, (void **)&dg[i]));
	}
	h[3] = xmalloc((size_t)f->nq * 2);
	see_rc(v, kern_alloc(&G, (size_t)f->nq * 2, (void **)&d[3]));
	see_rc(v, kern_alloc(&G, (size_t)f->nq * 4, (void **)&dof));
	see_rc(v, kern_alloc(&G, (size_t)f->nl * 4, (void **)&dlse));
	if (!v->rc) {
		see_rc(v, kern_attn_fwd_bf(&C, a, h[0], h[1], h[2], f->qpos,
					   f->kpos, o, h[3], lse));
		see_rc(v, kern_attn_fwd_bf(&G, a, d[0], d[1], d[2], qp, kp, dof,
					   d[3], dlse));
		x = xmalloc((size_t)f->nq * 4);
		see_rc(v, down(x, dof, (size_t)f->nq * 4));
		see(v, relerr(x, o, f->nq));
		see(vb, bits_of(vb, dof, d[3], f->nq));
		see(vb, o_alone(a, d, qp, kp, f->nq));
		free(x);
		x = xmalloc((size_t)f->nl * 4);
		see_rc(vl, down(x, dlse, (size_t)f->nl * 4));
		see(vl, relerr(x, lse, f->nl));
		free(x);
		see_rc(v, kern_attn_bwd_bf(&C, a, h[0], h[1], h[2], h[3], lse,
					   f->dout, NULL, f->qpos, f->kpos,
					   g[0], g[1], g[2]));
		see_rc(v, kern_attn_bwd_bf(&G, a, d[0], d[1], d[2], d[3], dlse,
					   f->d[3], NULL, qp, kp, dg[0], dg[1],
					   dg[2]));
		for (int i = 0; i < 3; i++) {
			x = xmalloc((size_t)n[i] * 4);
			see_rc(v, down(x, dg[i], (size_t)n[i] * 4));
			see(v, relerr(x, g[i], n[i]));
			free(x);
		}
		attn_dout16(f, a, d, dlse, qp, kp, dg, n, vb);
	}
	for (int i = 0; i < 4; i++) {
		free(h[i]);
		drop(d[i]);
	}
	for (int i = 0; i < 3; i++) {
		free(g[i]);
		drop(dg[i]);
	}
	drop(dof);
	drop(dlse);
	free(o);
	free(lse);
}

/* Head dim 32 (no flash kernel): the bf16 mode runs the fp32 reference
 * kernels, bit for bit. */
static void attn_fallback(struct verdict *v)
{
	static const long long dm[6] = { 1, 40, 2, 1, 32, 0 };
	struct fattn f, r;
	unsigned s0 = seed;

	fattn_init(&f, dm);
	seed = s0;
	fattn_init(&r, dm);
	see_rc(v, kern_set_math(&G, KERN_MATH_FP32));
	see_rc(v, kern_attn_fwd(&G, &r.a, r.d[0], r.d[1], r.d[2],
				(void *)r.d[9], (void *)r.d[10], r.d[7],
				r.d[8]));
	see_rc(v, kern_set_math(&G, KERN_MATH_BF16));
	see_rc(v, kern_attn_fwd(&G, &f.a, f.d[0], f.d[1], f.d[2],
				(void *)f.d[9], (void *)f.d[10], f.d[7],
				f.d[8]));
	see(v, same_bits(v, f.d[7], r.d[7], (size_t)f.nq * 4));
	see(v, same_bits(v, f.d[8], r.d[8], (size_t)f.nl * 4));
	fattn_free(&f);
	fattn_free(&r);
}

void test_fast_attn_kernels(int math_rc)
{
	struct verdict vo = { 0, 0 }, vl = { 0, 0 }, vx = { 0, 0 };
	struct verdict vf = { 0, 0 }, vc = { 0, 0 }, vcl = { 0, 0 };
	struct verdict vcb = { 0, 0 }, vn = { 0, 0 };
	struct fattn f;

	see_rc(&vo, math_rc);
	for (size_t t = 0; t < NATTN_FAST; t++) {
		fattn_init(&f, attn_dims[t]);
		attn_vs_cpu(&f, &vo, &vl);
		attn_is_flash(&f, &vx);
		attn_copies(&f, &vc, &vcl, &vcb);
		attn_flash_once(&f, &vn);
		fattn_free(&f);
	}
	report("attn_bf16", &vo, TOL_ATTN);
	report("attn_bf16_lse", &vl, TOL_LSE);
	report("attn_is_flash", &vx, 0);
	report("attn_copies", &vc, TOL_ATTN);
	report("attn_copies_lse", &vcl, TOL_LSE);
	report("attn_copies_bits", &vcb, 0);
	report("attn_flash_once", &vn, 0);
	attn_fallback(&vf);
	report("attn_fallback", &vf, 0);
}
