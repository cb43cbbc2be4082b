/*
 * test_kernels_gpu: every CUDA kernel (kernels/kern_cuda.cu) against its
 * CPU twin (kernels/kern_cpu.c) on the same random inputs, a few sizes
 * each, some of them not multiples of the block size.
 *
 * The error of a kernel is the largest, over its outputs and sizes, of
 * max_i |gpu_i - cpu_i| / max_i |cpu_i| (normwise relative: elementwise
 * relative error is meaningless where a value cancels to near zero, as
 * RMSNorm's dx does). Tolerances: 1e-5 elementwise, 1e-4 for reductions and GEMM.
 *
 * The decoder's kernels (bias, SwiGLU, RoPE, attention) are tested by
 * tests/gpu/test_kernels_llm_gpu.c, the bf16 mode by
 * tests/gpu/test_kernels_fast_gpu.c, the vector and scalar paths of the
 * norms and the cross-entropy by tests/gpu/test_kernels_mem_gpu.c,
 * attention's backward overwriting its gradients by
 * tests/gpu/test_kernels_attnw_gpu.c, all linked into the same binary.
 *
 * Prints one line per kernel and `RESULT passed failed skipped`; exits 1 on
 * a failure and 77 (the automake "skipped" code) when there is no GPU.
 * Not part of `make test`: `make test-gpu` builds and runs it.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_gpu_fixture.h"

#define EXIT_SKIP 77

struct kern_ctx C, G;
int n_pass, n_fail;
unsigned seed = 1;

/* ---- memory ------------------------------------------------------------- */

static void test_memory(void)
{
	struct verdict v = { 0, 0 };
	long long n = 1000;
	float *h = rnd(n, 1), *back = xmalloc((size_t)n * sizeof(float));
	float *zero = xmalloc((size_t)n * sizeof(float)), *d, *e = NULL;

	/* alloc gives zeros; upload/copy/download round-trip; zero clears. */
	see_rc(&v, kern_alloc(&G, (size_t)n * sizeof(float), (void **)&e));
	if (!v.rc) {
		see_rc(&v, down(back, e, (size_t)n * sizeof(float)));
		see(&v, relerr(back, zero, n));
		d = up(h, (size_t)n * sizeof(float));
		see_rc(&v, kern_copy(&G, e, d, (size_t)n * sizeof(float)));
		see_rc(&v, down(back, e, (size_t)n * sizeof(float)));
		see(&v, relerr(back, h, n));
		see_rc(&v, kern_zero(&G, e, (size_t)n * sizeof(float)));
		see_rc(&v, down(back, e, (size_t)n * sizeof(float)));
		see(&v, relerr(back, zero, n));
		kern_free(&G, d);
	}
	kern_free(&G, e);
	free(h);
	free(back);
	free(zero);
	report("memory", &v, 0);
}

/* kern_zero on parts of a buffer: a 16-byte aligned range of a multiple
 * of 16 bytes (kernels/kern_cuda_bf16.cu's zero16_k, many blocks) and an
 * unaligned one of 20 bytes (cudaMemsetAsync); the values around them
 * stay. */
static void test_zero_ranges(void)
{
	struct verdict v = { 0, 0 };
	long long n = 300000, a0 = 4, an = 290000, b0 = 295001, bn = 5;
	float *h = rnd(n, 1), *back = xmalloc((size_t)n * sizeof(float));
	float *d = up(h, (size_t)n * sizeof(float));

	see_rc(&v, kern_zero(&G, d + a0, (size_t)an * sizeof(float)));
	see_rc(&v, kern_zero(&G, d + b0, (size_t)bn * sizeof(float)));
	see_rc(&v, down(back, d, (size_t)n * sizeof(float)));
	for (long long i = 0; i < n; i++)
		if ((i >= a0 && i < a0 + an) || (i >= b0 && i < b0 + bn))
			h[i] = 0.0f;
	see(&v, memcmp(back, h, (size_t)n * sizeof(float)) ? INFINITY : 0);
	kern_free(&G, d);
	free(h);
	free(back);
	report("zero_ranges", &v, 0);
}

/* Small uploads go through a ring of 8 pinned slots without waiting for
 * the stream (kernels/kern_cuda.cu cuda_upload): 20 uploads from one host
 * buffer rewritten between them (the ring wraps twice, and a slot reused
 * too early would send a later value), and one upload larger than a slot
 * (the direct path); each destination must hold its own value. */
static void test_upload_ring(void)
{
	enum { UPLOADS = 20 };
	struct verdict v = { 0, 0 };
	long long n = 3000, big = 100000;
	float *h = xmalloc((size_t)big * sizeof(float));
	float *back = xmalloc((size_t)big * sizeof(float));
	float *d[UPLOADS + 1] = { NULL };

	for (int u = 0; u <= UPLOADS; u++)
		see_rc(&v, kern_alloc(&G, (size_t)big * sizeof(float),
				      (void **)&d[u]));
	for (int u = 0; !v.rc && u <= UPLOADS; u++) {
		long long len = u < UPLOADS ? n : big;

		for (long long i = 0; i < len; i++)
			h[i] = (float)(u * 100000 + i);
		see_rc(&v, kern_upload(&G, d[u], h, (size_t)len *
				       sizeof(float)));
	}
	for (int u = 0; !v.rc && u <= UPLOADS; u++) {
		long long len = u < UPLOADS ? n : big;

		see_rc(&v, down(back, d[u], (size_t)len * sizeof(float)));
		for (long long i = 0; i < len; i++)
			h[i] = (float)(u * 100000 + i);
		see(&v, relerr(back, h, len));
	}
	for (int u = 0; u <= UPLOADS; u++)
		kern_free(&G, d[u]);
	free(h);
	free(back);
	report("upload ring", &v, 0);
}

/* ---- BLAS --------------------------------------------------------------- */

static void test_gemm(void)
{
	static const long long dims[][3] = {
		{ 1, 1, 1 }, { 17, 33, 65 }, { 128, 96, 257 }, { 300, 5, 1000 },
	};
	struct verdict v = { 0, 0 };

	for (size_t s = 0; s < sizeof(dims) / sizeof(dims[0]); s++)
		for (int t = 0; t < 8; t++) {
			long long m = dims[s][0], n = dims[s][1], kd = dims[s][2];
			int ta = t & 1, tb = (t >> 1) & 1, pad = (t >> 2) & 1;
			long long lda = (ta ? m : kd) + pad * 3;
			long long ldb = (tb ? kd : n) + pad * 5;
			long long ldc = n + pad * 2;
			long long na = (ta ? kd : m) * lda;
			long long nb = (tb ? n : kd) * ldb, nc = m * ldc;
			float alpha = 0.75f, beta = pad ? 0.5f : 0.0f;
			float *a = rnd(na, 1), *b = rnd(nb, 1), *c = rnd(nc, 1);
			float *cg = dup(c, nc);
			float *da = up(a, (size_t)na * 4), *db = up(b, (size_t)nb * 4);
			float *dc = up(c, (size_t)nc * 4);

			see_rc(&v, kern_gemm(&C, ta, tb, m, n, kd, alpha, a, lda,
					     b, ldb, beta, c, ldc));
			see_rc(&v, kern_gemm(&G, ta, tb, m, n, kd, alpha, da, lda,
					     db, ldb, beta, dc, ldc));
			see_rc(&v, down(cg, dc, (size_t)nc * 4));
			see(&v, relerr(cg, c, nc));
			kern_free(&G, da);
			kern_free(&G, db);
			kern_free(&G, dc);
			free(a);
			free(b);
			free(c);
			free(cg);
		}
	report("gemm", &v, TOL_RED);
}

static const long long lens[] = { 1, 255, 256, 1000, 100003 };
#define NLENS (sizeof(lens) / sizeof(lens[0]))

static void test_axpy(void)
{
	struct verdict va = { 0, 0 };

	for (size_t s = 0; s < NLENS; s++) {
		long long n = lens[s];
		float *x = rnd(n, 1), *y = rnd(n, 1), *yg = dup(y, n);
		float *dx = up(x, (size_t)n * 4), *dy = up(y, (size_t)n * 4);

		see_rc(&va, kern_axpy(&C, n, -0.3f, x, y));
		see_rc(&va, kern_axpy(&G, n, -0.3f, dx, dy));
		see_rc(&va, down(yg, dy, (size_t)n * 4));
		see(&va, relerr(yg, y, n));
		kern_free(&G, dx);
		kern_free(&G, dy);
		free(x);
		free(y);
		free(yg);
	}
	report("axpy", &va, TOL_ELEM);
}

/* ---- RMSNorm ------------------------------------------------------------ */

static const long long shapes[][2] = {
	{ 1, 1 }, { 3, 33 }, { 7, 256 }, { 64, 1000 }, { 129, 4097 },
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

static void test_rmsnorm(void)
{
	struct verdict vf = { 0, 0 }, vb = { 0, 0 };

	for (size_t s = 0; s < NSHAPES; s++) {
		long long rows = shapes[s][0], h = shapes[s][1], n = rows * h;
		float *x = rnd(n, 2), *g = rnd(h, 1), *dy = rnd(n, 1);
		float *dg = rnd(h, 1), *y = xmalloc((size_t)n * 4);
		float *rs = xmalloc((size_t)rows * 4), *dx = xmalloc((size_t)n * 4);
		float *yg = xmalloc((size_t)n * 4), *rsg = xmalloc((size_t)rows * 4);
		float *dxg = xmalloc((size_t)n * 4), *dgg = xmalloc((size_t)h * 4);
		float *d_x = up(x, (size_t)n * 4), *d_g = up(g, (size_t)h * 4);
		float *d_dy = up(dy, (size_t)n * 4), *d_dg = up(dg, (size_t)h * 4);
		float *d_y = up(y, (size_t)n * 4), *d_rs = up(rs, (size_t)rows * 4);
		float *d_dx = up(dx, (size_t)n * 4);

		see_rc(&vf, kern_rmsnorm_fwd(&C, rows, h, 1e-5f, x, g, y, rs));
		see_rc(&vf, kern_rmsnorm_fwd(&G, rows, h, 1e-5f, d_x, d_g, d_y,
					     d_rs));
		see_rc(&vf, down(yg, d_y, (size_t)n * 4));
		see_rc(&vf, down(rsg, d_rs, (size_t)rows * 4));
		see(&vf, relerr(yg, y, n));
		see(&vf, relerr(rsg, rs, rows));
		/* the backward pass gets the CPU's rstd on both sides */
		see_rc(&vb, kern_upload(&G, d_rs, rs, (size_t)rows * 4));
		see_rc(&vb, kern_rmsnorm_bwd(&C, rows, h, x, g, rs, dy, dx, dg));
		see_rc(&vb, kern_rmsnorm_bwd(&G, rows, h, d_x, d_g, d_rs, d_dy,
					     d_dx, d_dg));
		see_rc(&vb, down(dxg, d_dx, (size_t)n * 4));
		see_rc(&vb, down(dgg, d_dg, (size_t)h * 4));
		/* dx = s (g dy - x c) cancels to ~eps when h is small:
		 * judge it against the size of s g dy */
		{
			double den = 0;

			for (long long i = 0; i < n; i++) {
				double t = fabs((double)rs[i / h] * g[i % h] *
						dy[i]);

				den = t > den ? t : den;
			}
			see(&vb, relerr_to(dxg, dx, n, den));
		}
		see(&vb, relerr(dgg, dg, h));
		kern_free(&G, d_x);
		kern_free(&G, d_g);
		kern_free(&G, d_dy);
		kern_free(&G, d_dg);
		kern_free(&G, d_y);
		kern_free(&G, d_rs);
		kern_free(&G, d_dx);
		free(x); free(g); free(dy); free(dg); free(y); free(rs);
		free(dx); free(yg); free(rsg); free(dxg); free(dgg);
	}
	report("rmsnorm_fwd", &vf, TOL_RED);
	report("rmsnorm_bwd", &vb, TOL_RED);
}

/* ---- cross-entropy ------------------------------------------------------ */

/* rows, cols, nvalid, first: padded and unpadded blocks, rows without any
 * valid column, targets inside and outside this rank's ids. */
static const long long ce_shapes[][4] = {
	{ 1, 1, 1, 0 }, { 5, 128, 128, 128 }, { 33, 130, 127, 130 },
	{ 70, 1000, 999, 0 }, { 9, 300, 0, 600 }, { 257, 4099, 4000, 4099 },
};

static void test_ce(void)
{
	struct verdict vm = { 0, 0 }, vs = { 0, 0 }, vt = { 0, 0 };
	struct verdict vl = { 0, 0 }, vb = { 0, 0 };

	for (size_t s = 0; s < sizeof(ce_shapes) / sizeof(ce_shapes[0]); s++) {
		long long rows = ce_shapes[s][0], cols = ce_shapes[s][1];
		long long nvalid = ce_shapes[s][2], first = ce_shapes[s][3];
		long long n = rows * cols;
		size_t rb = (size_t)rows * 4, nb = (size_t)n * 4;
		float *l = rnd(n, 8), *mx = xmalloc(rb), *sm = xmalloc(rb);
		float *tg = xmalloc(rb), *ls = xmalloc(rb), *dl = xmalloc(nb);
		float *o = xmalloc(nb);
		int32_t *t = rnd_ids(rows, 0,
				     (int32_t)(first + cols + cols / 2 + 1));
		float *d_l = up(l, nb), *d_mx = up(mx, rb), *d_sm = up(sm, rb);
		float *d_tg = up(tg, rb), *d_ls = up(ls, rb);
		int32_t *d_t = up(t, (size_t)rows * 4);

		/* Each step on the GPU reads the CPU's results of the steps
		 * before, so each kernel is judged alone. */
		see_rc(&vm, kern_ce_max(&C, rows, cols, nvalid, l, mx));
		see_rc(&vm, kern_ce_max(&G, rows, cols, nvalid, d_l, d_mx));
		see_rc(&vm, down(o, d_mx, rb));
		see(&vm, relerr(o, mx, rows));
		see_rc(&vs, kern_upload(&G, d_mx, mx, rb));
		if (nvalid > 0) { /* sumexp over nothing is 0 on both */
			see_rc(&vs, kern_ce_sumexp(&C, rows, cols, nvalid, l,
						   mx, sm));
			see_rc(&vs, kern_ce_sumexp(&G, rows, cols, nvalid, d_l,
						   d_mx, d_sm));
			see_rc(&vs, down(o, d_sm, rb));
			see(&vs, relerr(o, sm, rows));
			see_rc(&vs, kern_upload(&G, d_sm, sm, rb));
		}
		see_rc(&vt, kern_ce_target(&C, rows, cols, first, t, l, tg));
		see_rc(&vt, kern_ce_target(&G, rows, cols, first, d_t, d_l,
					   d_tg));
		see_rc(&vt, down(o, d_tg, rb));
		see(&vt, relerr(o, tg, rows));
		see_rc(&vt, kern_upload(&G, d_tg, tg, rb));
		if (nvalid > 0) {
			see_rc(&vl, kern_ce_loss(&C, rows, mx, sm, tg, ls));
			see_rc(&vl, kern_ce_loss(&G, rows, d_mx, d_sm, d_tg,
						 d_ls));
			see_rc(&vl, down(o, d_ls, rb));
			see(&vl, relerr(o, ls, rows));
			/* dlogits aliases logits, as the contract allows */
			see_rc(&vb, kern_ce_bwd(&C, rows, cols, nvalid, first,
						t, mx, sm, 0.25f, l, l));
			see_rc(&vb, kern_ce_bwd(&G, rows, cols, nvalid, first,
						d_t, d_mx, d_sm, 0.25f, d_l,
						d_l));
			see_rc(&vb, down(o, d_l, nb));
			see(&vb, relerr(o, l, n));
		}
		kern_free(&G, d_l); kern_free(&G, d_mx); kern_free(&G, d_sm);
		kern_free(&G, d_tg); kern_free(&G, d_ls); kern_free(&G, d_t);
		free(l); free(mx); free(sm); free(tg); free(ls); free(dl);
		free(o); free(t);
	}
	report("ce_max", &vm, TOL_RED);
	report("ce_sumexp", &vs, TOL_RED);
	report("ce_target", &vt, TOL_ELEM);
	report("ce_loss", &vl, TOL_ELEM);
	report("ce_bwd", &vb, TOL_ELEM);
}

/* ---- embedding ---------------------------------------------------------- */

/* n tokens, h, first, rows of the table; ids drawn from [0, first + rows
 * + 10), so some fall outside this rank's rows. The last three: rows of
 * 512, 1024 and 1025 float4s, more tokens than rows (repeated ids). */
static const long long emb_shapes[][4] = {
	{ 1, 1, 0, 1 }, { 37, 33, 0, 256 }, { 500, 64, 128, 128 },
	{ 1000, 257, 50, 7 }, { 3000, 2048, 10, 1000 }, { 900, 4096, 0, 200 },
	{ 1500, 4100, 0, 300 },
};

static void test_embed(void)
{
	struct verdict vf = { 0, 0 }, vb = { 0, 0 };

	for (size_t s = 0; s < sizeof(emb_shapes) / sizeof(emb_shapes[0]); s++) {
		long long n = emb_shapes[s][0], h = emb_shapes[s][1];
		long long first = emb_shapes[s][2], rows = emb_shapes[s][3];
		size_t tb = (size_t)(rows * h) * 4, ob = (size_t)(n * h) * 4;
		float *tab = rnd(rows * h, 1), *dout = rnd(n * h, 1);
		float *out = xmalloc(ob), *o = xmalloc(ob > tb ? ob : tb);
		int32_t *t = rnd_ids(n, 0, (int32_t)(first + rows + 10));
		float *d_tab = up(tab, tb), *d_dout = up(dout, ob);
		float *d_out = up(out, ob);
		int32_t *d_t = up(t, (size_t)n * 4);

		see_rc(&vf, kern_embed_fwd(&C, n, h, first, rows, tab, t, out));
		see_rc(&vf, kern_embed_fwd(&G, n, h, first, rows, d_tab, d_t,
					   d_out));
		see_rc(&vf, down(o, d_out, ob));
		see(&vf, relerr(o, out, n * h));
		/* accumulates into a non-zero table */
		see_rc(&vb, kern_embed_bwd(&C, n, h, first, rows, dout, t, tab));
		see_rc(&vb, kern_embed_bwd(&G, n, h, first, rows, d_dout, d_t,
					   d_tab));
		see_rc(&vb, down(o, d_tab, tb));
		see(&vb, relerr(o, tab, rows * h));
		kern_free(&G, d_tab); kern_free(&G, d_dout);
		kern_free(&G, d_out); kern_free(&G, d_t);
		free(tab); free(dout); free(out); free(o); free(t);
	}
	report("embed_fwd", &vf, TOL_ELEM);
	/* atomicAdd sums repeated ids in any order */
	report("embed_bwd", &vb, TOL_RED);
}

/* ---- optimisers --------------------------------------------------------- */

static void test_optim(void)
{
	struct verdict va = { 0, 0 }, vs = { 0, 0 };

	for (size_t s = 0; s < NLENS; s++) {
		long long n = lens[s];
		size_t b = (size_t)n * 4;
		float *p = rnd(n, 1), *g = rnd(n, 0.1f), *m = rnd(n, 0.01f);
		float *v = rnd(n, 0.01f), *o = xmalloc(b);
		float *d_p, *d_g = up(g, b), *d_m, *d_v;

		for (long long i = 0; i < n; i++)
			v[i] = fabsf(v[i]); /* a second moment is >= 0 */
		d_p = up(p, b);
		d_m = up(m, b);
		d_v = up(v, b);
		/* three steps, bias correction changing each */
		for (long long step = 1; step <= 3; step++) {
			see_rc(&va, kern_adam(&C, n, 1e-3f, 0.9f, 0.999f, 1e-8f,
					      step, p, g, m, v));
			see_rc(&va, kern_adam(&G, n, 1e-3f, 0.9f, 0.999f, 1e-8f,
					      step, d_p, d_g, d_m, d_v));
		}
		see_rc(&va, down(o, d_p, b));
		see(&va, relerr(o, p, n));
		see_rc(&va, down(o, d_m, b));
		see(&va, relerr(o, m, n));
		see_rc(&va, down(o, d_v, b));
		see(&va, relerr(o, v, n));
		see_rc(&vs, kern_upload(&G, d_p, p, b));
		see_rc(&vs, kern_sgd(&C, n, 0.05f, p, g));
		see_rc(&vs, kern_sgd(&G, n, 0.05f, d_p, d_g));
		see_rc(&vs, down(o, d_p, b));
		see(&vs, relerr(o, p, n));
		kern_free(&G, d_p); kern_free(&G, d_g);
		kern_free(&G, d_m); kern_free(&G, d_v);
		free(p); free(g); free(m); free(v); free(o);
	}
	report("adam", &va, TOL_ELEM);
	report("sgd", &vs, TOL_ELEM);
}

/* bf16 conversions: bit for bit the CPU twin's, on random floats of every
 * magnitude plus the special values. */
static void test_bf16(void)
{
	struct verdict v = { 0, 0 };
	long long n = 100003;
	size_t b4 = (size_t)n * 4, b2 = (size_t)n * 2;
	uint32_t *bits = xmalloc(b4);
	uint16_t *yc = xmalloc(b2), *yg = xmalloc(b2), *d_y;
	float *x = xmalloc(b4), *rc_ = xmalloc(b4), *rg = xmalloc(b4);
	float *d_x, *d_r;
	long long diff = 0;

	for (long long i = 0; i < n; i++)
		bits[i] = (uint32_t)rand_r(&seed) * 2654435761u ^
			  (uint32_t)rand_r(&seed);
	bits[0] = 0x7f7fffffu;
	bits[1] = 0x7f800001u;
	bits[2] = 0x3f808000u;
	memcpy(x, bits, b4);
	memcpy(rc_, bits, b4);
	d_x = up(x, b4);
	d_r = up(x, b4);
	see_rc(&v, kern_alloc(&G, b2, (void **)&d_y));
	see_rc(&v, kern_to_bf16(&C, n, x, yc));
	see_rc(&v, kern_to_bf16(&G, n, d_x, d_y));
	see_rc(&v, down(yg, d_y, b2));
	see_rc(&v, kern_round_bf16(&C, n, rc_));
	see_rc(&v, kern_round_bf16(&G, n, d_r));
	see_rc(&v, down(rg, d_r, b4));
	for (long long i = 0; i < n; i++)
		diff += yc[i] != yg[i] || memcmp(&rc_[i], &rg[i], 4) != 0;
	see(&v, (double)diff);
	kern_free(&G, d_x); kern_free(&G, d_r); kern_free(&G, d_y);
	free(bits); free(yc); free(yg); free(x); free(rc_); free(rg);
	report("bf16", &v, 0);
}

/* The profile's pool of event pairs (kernels/kern_cuda_prof.cu) drains
 * only between outermost brackets: under one bracket left open (as an
 * error between a cast's marks once left it, kernels/kern_cuda_fast.cu),
 * more pairs than the pool holds (PROF_PAIRS, 4096) must stop the profile,
 * KERN_EINVAL at kern_prof_read, not run past the pool's arrays; a restart
 * clears that and profiles again. On a context of its own, since the
 * profile and its brackets are the context's. */
static void test_prof_pool(void)
{
	struct verdict v = { 0, 0 };
	double ms[KERN_PROF_CLASSES];
	long long calls[KERN_PROF_CLASSES];
	struct kern_ctx p;
	void *d = NULL;
	int rc = kern_init(&p, KERN_CUDA, 0);

	see_rc(&v, rc);
	if (rc)
		goto out;
	see_rc(&v, kern_prof_start(&p));
	if (!v.rc) {
		p.ops->mark(&p, KERN_PROF_GEMM, "prof_outer", 0);
		for (int i = 0; i < 5000; i++) {
			p.ops->mark(&p, KERN_PROF_MEM, "prof_inner", 0);
			p.ops->mark(&p, KERN_PROF_MEM, "prof_inner", 1);
		}
		p.ops->mark(&p, KERN_PROF_GEMM, "prof_outer", 1);
		rc = kern_prof_read(&p, ms, calls);
		see(&v, rc == KERN_EINVAL ? 0 : INFINITY);
		see_rc(&v, kern_prof_reset(&p));
		see_rc(&v, kern_alloc(&p, 4096, &d));
		see_rc(&v, kern_zero(&p, d, 4096));
		see_rc(&v, kern_prof_read(&p, ms, calls));
		if (!v.rc)
			see(&v, calls[KERN_PROF_COPY] == 1 &&
					calls[KERN_PROF_MEM] == 0 ? 0 :
				INFINITY);
		kern_free(&p, d);
	}
	kern_release(&p); /* prints the restarted profile on stderr */
out:
	report("prof_pool", &v, 0);
}

int main(void)
{
	int rc = kern_init(&G, KERN_CUDA, 0);

	if (rc == KERN_ENODEV) {
		printf("test_kernels_gpu: no CUDA device; skipping\n");
		printf("RESULT 0 0 1\n");
		return EXIT_SKIP;
	}
	if (rc) {
		fprintf(stderr, "test_kernels_gpu: cuda init: %s\n",
			kern_error_text(rc));
		return 1;
	}
	rc = kern_init(&C, KERN_CPU, 1);
	if (rc) {
		fprintf(stderr, "test_kernels_gpu: cpu init: %s\n",
			kern_strerror(rc));
		return 1;
	}
	test_memory();
	test_zero_ranges();
	test_upload_ring();
	test_gemm();
	test_axpy();
	test_rmsnorm();
	test_ce();
	test_embed();
	test_optim();
	test_bf16();
	test_prof_pool();
	test_llm_kernels();
	test_fast_kernels();
	test_b16_kernels();
	test_mem_kernels();
	test_attnw_kernels();
	kern_release(&C);
	kern_release(&G);
	printf("RESULT %d %d 0\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
