/*
 * test_kernels_mem_gpu: both paths of the CUDA twin's memory-bound kernels
 * that read 128-bit vectors where they can (kernels/kern_cuda_norm.cu,
 * kernels/kern_cuda_norm_bwd.cu, kernels/kern_cuda_ce.cu): every RMSNorm
 * and cross-entropy pass on 16-byte aligned arrays (the vector path where
 * h or cols is a multiple of 4) and on arrays one float (one bf16) past
 * that (the scalar fallback), at row lengths that cover every register
 * layout of the norms (1, 2, 4 and 8 float4s a thread, 32 to 256
 * threads), lengths that are not multiples of 4, one longer than the
 * register path (the two-pass kernels), and rows longer than one block's
 * span of the gradient. Linked into test_kernels_gpu; errors are the
 * fixture's normwise max |gpu - cpu| / max |cpu|.
 *
 * Tolerances and why:
 *  - norm_paths 1e-4 (TOL_RED, as tests/gpu/test_kernels_gpu.c's
 *    rmsnorm_fwd and rmsnorm_bwd): rstd, the dx dot product and dg are sums
 *    in another order than the CPU twin's; dx against max |rstd g dy| (dx
 *    cancels to near zero where h is small, as that test judges it).
 *  - norm_paths_y 2^-7 (TOL_BF_FLIP): y rounded to bf16 on both sides,
 *    a value within an fp32 ulp of a rounding boundary may round the other
 *    way, one bf16 ulp off: 2^-7 of a value at the bottom of its binade
 *    (bf16 keeps 8 significant bits), so up to 2^-7 of the largest value
 *    in the normwise measure (4e-3 held until the tests before this one
 *    drew more random numbers: 6.8e-3 on an H200 with other inputs).
 *  - norm_vec_scalar 0: the vector and the scalar path give the same bits
 *    (the same element a thread, the same sums in the same order).
 *  - norm_fused_bits 0: kern.h's "bit for bit the unfused sequence" on
 *    the device: kern_add_rmsnorm_fwd's y, y16 and rstd equal
 *    kern_rmsnorm_fwd of its sum then kern_round_bf16_copy (run on the other
 *    path's buffers); kern_rmsnorm_bwd_add's dx equals kern_rmsnorm_bwd's
 *    plus the old dx, its dg kern_rmsnorm_bwd's.
 *  - norm_bwd_one_two 0: the backward's dg added by the last blocks of
 *    its launch (GTPLAN_NORM_BWD=one, kernels/kern_cuda_norm_bwd.cu
 *    norm_dg_tail) is the same sum in the same order as by the second
 *    launch (=two) and as the default's: every output the same bits, on
 *    three launches in a row (their arrival counter back at 0 after
 *    each), run twice, each setting on a context made after it (a
 *    context reads it at kern_init); norm_bwd_one_cpu 1e-4 (TOL_RED, as
 *    norm_paths): the one launch's dx, dg against the CPU twin.
 *  - ce_paths 1e-4 (TOL_RED) for max and sum of exp; ce_paths_grad 1e-5
 *    (TOL_ELEM, as test_kernels_gpu.c's ce_bwd) for the gradient, written
 *    in place as fp32 runs write it (kern_ce_bwd: the device's expf
 *    against the C library's); ce_vec_scalar 0: max and the gradient are
 *    the same bits on both paths.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_gpu_fixture.h"

#define TOL_BF_FLIP 7.8125e-3 /* 2^-7: one bf16 ulp, above */

/* A device copy of n bytes of host memory (zeros when h is NULL) placed
 * `off` bytes past an allocation's (aligned) start; *base is what to free. */
static void *up_at(const void *h, size_t n, size_t off, void **base)
{
	char *d = NULL;
	int rc = kern_alloc(&G, n + 16, (void **)&d);

	if (!rc && h)
		rc = kern_upload(&G, d + off, h, n);
	if (rc) {
		fprintf(stderr, "test_kernels_mem_gpu: upload: %s\n",
			kern_error_text(rc));
		exit(1);
	}
	*base = d;
	return d + off;
}

/* The number of 4-byte (2-byte when two) words that differ. */
static double words_differ(const void *a, const void *b, long long n, int two)
{
	long long d = 0;

	for (long long i = 0; i < n; i++)
		d += two ? ((const uint16_t *)a)[i] != ((const uint16_t *)b)[i] :
			   ((const uint32_t *)a)[i] != ((const uint32_t *)b)[i];
	return (double)d;
}

/* ---- RMSNorm ------------------------------------------------------------ */

/* rows, h: h / 4 of 16 (32 threads, 1 float4; the backward two-pass),
 * 250 (256, 1), 512 (256, 2), 1024 (4), 2048 (8); h % 4 != 0 (scalar
 * only); 8200 (two-pass); 300 and 2000 rows: many backward parts, the
 * last one short. */
static const long long norm_dims[][2] = {
	{ 5, 64 }, { 9, 1000 }, { 40, 2048 }, { 21, 4096 }, { 300, 4096 },
	{ 6, 8192 }, { 3, 8190 }, { 4, 2050 }, { 1, 3 }, { 2, 8200 },
	{ 2000, 2048 },
};
#define NNORM (sizeof(norm_dims) / sizeof(norm_dims[0]))

/* Outputs of one device run (host copies), or of the CPU twin. */
struct norm_out {
	float *y, *rs, *sum, *ya, *rsa, *dx, *dg, *dxa, *dga;
	uint16_t *ya16;
};

static void norm_out_init(struct norm_out *o, long long rows, long long h)
{
	size_t n = (size_t)(rows * h) * 4, r = (size_t)rows * 4;

	o->y = xmalloc(n); o->rs = xmalloc(r); o->sum = xmalloc(n);
	o->ya = xmalloc(n); o->rsa = xmalloc(r); o->dx = xmalloc(n);
	o->dg = xmalloc((size_t)h * 4); o->dxa = xmalloc(n);
	o->dga = xmalloc((size_t)h * 4); o->ya16 = xmalloc(n / 2);
}

static void norm_out_free(struct norm_out *o)
{
	free(o->y); free(o->rs); free(o->sum); free(o->ya); free(o->rsa);
	free(o->dx); free(o->dg); free(o->dxa); free(o->dga); free(o->ya16);
}

/* The inputs: x, r, g, dy, the initial dx (of bwd_add) and dg. */
struct norm_in {
	long long rows, h;
	float *x, *r, *g, *dy, *dx0, *dg0;
};

/* Every norm on the CPU twin; the backward passes get the forward's rstd. */
static int norm_cpu(const struct norm_in *in, struct norm_out *o)
{
	long long rows = in->rows, h = in->h, n = rows * h;
	int rc;

	memcpy(o->dg, in->dg0, (size_t)h * 4);
	memcpy(o->dga, in->dg0, (size_t)h * 4);
	memcpy(o->dxa, in->dx0, (size_t)n * 4);
	rc = kern_rmsnorm_fwd(&C, rows, h, 1e-5f, in->x, in->g, o->y, o->rs);
	if (!rc)
		rc = kern_add_rmsnorm_fwd(&C, rows, h, 1e-5f, in->x, in->r,
					  o->sum, in->g, o->ya, o->rsa, o->ya16);
	if (!rc)
		rc = kern_rmsnorm_bwd(&C, rows, h, in->x, in->g, o->rs, in->dy,
				      o->dx, o->dg);
	if (!rc)
		rc = kern_rmsnorm_bwd_add(&C, rows, h, in->x, in->g, o->rs,
					  in->dy, o->dxa, o->dga);
	return rc;
}

/* The same on the device, every array `off` bytes past alignment (bf16:
 * off / 2); the backward passes get the CPU's rstd (cpu_rs). */
static int norm_gpu(const struct norm_in *in, const float *cpu_rs,
		    size_t off, struct norm_out *o)
{
	long long rows = in->rows, h = in->h;
	size_t n = (size_t)(rows * h) * 4, r = (size_t)rows * 4;
	size_t hb = (size_t)h * 4;
	void *b[14];
	float *x = up_at(in->x, n, off, &b[0]), *rr = up_at(in->r, n, off, &b[1]);
	float *g = up_at(in->g, hb, off, &b[2]), *dy = up_at(in->dy, n, off, &b[3]);
	float *y = up_at(NULL, n, off, &b[4]), *rs = up_at(NULL, r, off, &b[5]);
	float *sum = up_at(NULL, n, off, &b[6]), *ya = up_at(NULL, n, off, &b[7]);
	float *rsa = up_at(NULL, r, off, &b[8]), *dx = up_at(NULL, n, off, &b[9]);
	float *dg = up_at(in->dg0, hb, off, &b[10]);
	float *dxa = up_at(in->dx0, n, off, &b[11]);
	float *dga = up_at(in->dg0, hb, off, &b[12]);
	uint16_t *ya16 = up_at(NULL, n / 2, off / 2, &b[13]);
	int rc = kern_rmsnorm_fwd(&G, rows, h, 1e-5f, x, g, y, rs);

	if (!rc)
		rc = kern_add_rmsnorm_fwd(&G, rows, h, 1e-5f, x, rr, sum, g, ya,
					  rsa, ya16);
	if (!rc)
		rc = down(o->rs, rs, r);
	if (!rc)
		rc = kern_upload(&G, rs, cpu_rs, r);
	if (!rc)
		rc = kern_rmsnorm_bwd(&G, rows, h, x, g, rs, dy, dx, dg);
	if (!rc)
		rc = kern_rmsnorm_bwd_add(&G, rows, h, x, g, rs, dy, dxa, dga);
	if (!rc)
		rc = down(o->y, y, n);
	if (!rc)
		rc = down(o->sum, sum, n);
	if (!rc)
		rc = down(o->ya, ya, n);
	if (!rc)
		rc = down(o->ya16, ya16, n / 2);
	if (!rc)
		rc = down(o->rsa, rsa, r);
	if (!rc)
		rc = down(o->dx, dx, n);
	if (!rc)
		rc = down(o->dg, dg, hb);
	if (!rc)
		rc = down(o->dxa, dxa, n);
	if (!rc)
		rc = down(o->dga, dga, hb);
	for (int i = 0; i < 14; i++)
		kern_free(&G, b[i]);
	return rc;
}

/* kern_rmsnorm_fwd of the device's sum then kern_round_bf16_copy, on
 * arrays `off` bytes past alignment: y (rounded), y16 and rstd. */
static int norm_unfused(long long rows, long long h, const float *sum,
			const float *gh, size_t off, float *y, uint16_t *y16,
			float *rs)
{
	size_t n = (size_t)(rows * h) * 4, r = (size_t)rows * 4;
	void *b[5];
	float *ds = up_at(sum, n, off, &b[0]);
	float *g = up_at(gh, (size_t)h * 4, off, &b[1]);
	float *dy = up_at(NULL, n, off, &b[2]), *drs = up_at(NULL, r, off, &b[3]);
	uint16_t *d16 = up_at(NULL, n / 2, off / 2, &b[4]);
	int rc = kern_rmsnorm_fwd(&G, rows, h, 1e-5f, ds, g, dy, drs);

	if (!rc)
		rc = kern_round_bf16_copy(&G, rows * h, dy, d16);
	if (!rc)
		rc = down(y, dy, n);
	if (!rc)
		rc = down(y16, d16, n / 2);
	if (!rc)
		rc = down(rs, drs, r);
	for (int i = 0; i < 5; i++)
		kern_free(&G, b[i]);
	return rc;
}

/* Max |rstd g dy| over the rows: the scale dx is judged against. */
static double dx_scale(const struct norm_in *in, const float *rs)
{
	double den = 0;

	for (long long i = 0; i < in->rows * in->h; i++) {
		double t = fabs((double)rs[i / in->h] * in->g[i % in->h] *
				in->dy[i]);

		den = t > den ? t : den;
	}
	return den;
}

struct norm_verdicts {
	struct verdict cpu, y, paths, fused;
};

/* The device's outputs a (aligned) and b (off by one) against the CPU's
 * c and each other; the fused ops against the unfused ones. */
static void norm_judge(const struct norm_in *in, const struct norm_out *c,
		       const struct norm_out *a, const struct norm_out *b,
		       struct norm_verdicts *v)
{
	long long rows = in->rows, h = in->h, n = rows * h;
	double den = dx_scale(in, c->rs);
	float *uy = xmalloc((size_t)n * 4), *urs = xmalloc((size_t)rows * 4);
	uint16_t *u16 = xmalloc((size_t)n * 2);
	const struct norm_out *o[2] = { a, b };

	for (int i = 0; i < 2; i++) {
		see(&v->cpu, relerr(o[i]->y, c->y, n));
		see(&v->cpu, relerr(o[i]->rs, c->rs, rows));
		see(&v->cpu, relerr(o[i]->sum, c->sum, n));
		see(&v->cpu, relerr(o[i]->rsa, c->rsa, rows));
		see(&v->cpu, relerr_to(o[i]->dx, c->dx, n, den));
		see(&v->cpu, relerr_to(o[i]->dxa, c->dxa, n, den));
		see(&v->cpu, relerr(o[i]->dg, c->dg, h));
		see(&v->cpu, relerr(o[i]->dga, c->dga, h));
		see(&v->y, relerr(o[i]->ya, c->ya, n));
	}
	see(&v->paths, words_differ(a->y, b->y, n, 0) +
		       words_differ(a->rs, b->rs, rows, 0) +
		       words_differ(a->sum, b->sum, n, 0) +
		       words_differ(a->ya, b->ya, n, 0) +
		       words_differ(a->ya16, b->ya16, n, 1) +
		       words_differ(a->rsa, b->rsa, rows, 0) +
		       words_differ(a->dx, b->dx, n, 0) +
		       words_differ(a->dg, b->dg, h, 0) +
		       words_differ(a->dxa, b->dxa, n, 0) +
		       words_differ(a->dga, b->dga, h, 0));
	/* the unfused sequence on the other path's buffers */
	see_rc(&v->fused, norm_unfused(rows, h, a->sum, in->g, 4, uy, u16, urs));
	see(&v->fused, words_differ(uy, a->ya, n, 0) +
		       words_differ(u16, a->ya16, n, 1) +
		       words_differ(urs, a->rsa, rows, 0));
	for (long long i = 0; i < n; i++)
		uy[i] = in->dx0[i] + a->dx[i];
	see(&v->fused, words_differ(uy, a->dxa, n, 0) +
		       words_differ(a->dg, a->dga, h, 0));
	free(uy); free(urs); free(u16);
}

static void test_norm_paths(void)
{
	struct norm_verdicts v;

	memset(&v, 0, sizeof(v));
	for (size_t s = 0; s < NNORM; s++) {
		struct norm_in in = { norm_dims[s][0], norm_dims[s][1], NULL,
				      NULL, NULL, NULL, NULL, NULL };
		long long n = in.rows * in.h;
		struct norm_out c, a, b;

		in.x = rnd(n, 2);
		in.r = rnd(n, 1);
		in.g = rnd(in.h, 1);
		in.dy = rnd(n, 1);
		in.dx0 = rnd(n, 1);
		in.dg0 = rnd(in.h, 1);
		norm_out_init(&c, in.rows, in.h);
		norm_out_init(&a, in.rows, in.h);
		norm_out_init(&b, in.rows, in.h);
		see_rc(&v.cpu, norm_cpu(&in, &c));
		see_rc(&v.cpu, norm_gpu(&in, c.rs, 0, &a));
		see_rc(&v.paths, norm_gpu(&in, c.rs, 4, &b));
		norm_judge(&in, &c, &a, &b, &v);
		norm_out_free(&c);
		norm_out_free(&a);
		norm_out_free(&b);
		free(in.x); free(in.r); free(in.g); free(in.dy); free(in.dx0);
		free(in.dg0);
	}
	report("norm_paths", &v.cpu, TOL_RED);
	report("norm_paths_y", &v.y, TOL_BF_FLIP);
	report("norm_vec_scalar", &v.paths, 0);
	report("norm_fused_bits", &v.fused, 0);
}

/* ---- the backward's dg: one launch or two ------------------------------- */

/* rows, h: one part (1 and 8 rows: one block adds its own part), two
 * parts of 1000 columns (both blocks wait; a pass of columns cut
 * short), the Llama-3.2-1B shape (512 parts, 64 adding blocks), the most
 * parts (1024, the last one short), and h % 4 != 0 (the scalar path,
 * 32 parts of 4098, several passes a block). */
static const long long bwd_dims[][2] = {
	{ 1, 1024 }, { 8, 2048 }, { 9, 1000 }, { 4096, 2048 }, { 8191, 1024 },
	{ 1000, 4098 },
};
#define NBWD (sizeof(bwd_dims) / sizeof(bwd_dims[0]))

/* The backward's outputs: kern_rmsnorm_bwd's (dx, dg), then
 * kern_rmsnorm_bwd_add_bf's (dxa, dga, d16), then kern_rmsnorm_bwd's again
 * (dx2, dg2), from dx0 and dg0 each. */
struct bwd_out {
	float *dx, *dg, *dxa, *dga, *dx2, *dg2;
	uint16_t *d16;
};

static void bwd_out_init(struct bwd_out *o, long long rows, long long h)
{
	size_t n = (size_t)(rows * h) * 4;

	o->dx = xmalloc(n); o->dxa = xmalloc(n); o->dx2 = xmalloc(n);
	o->dg = xmalloc((size_t)h * 4); o->dga = xmalloc((size_t)h * 4);
	o->dg2 = xmalloc((size_t)h * 4); o->d16 = xmalloc(n / 2);
}

static void bwd_out_free(struct bwd_out *o)
{
	free(o->dx); free(o->dg); free(o->dxa); free(o->dga); free(o->dx2);
	free(o->dg2); free(o->d16);
}

/* The three calls in a row on the device (no wait between them) under
 * GTPLAN_NORM_BWD=env, unset when env is NULL (restored after), on a
 * context made after setting it: a context reads it once, at kern_init
 * (kernels/kern_cuda_norm_bwd.cu kern_cuda_norm_init). That context
 * computes on G's arrays, each context's queue waited for before the
 * other's reads. */
static int bwd_gpu(const struct norm_in *in, const float *rs,
		   const char *env, struct bwd_out *o)
{
	long long rows = in->rows, h = in->h;
	size_t n = (size_t)(rows * h) * 4, hb = (size_t)h * 4;
	const char *was = getenv("GTPLAN_NORM_BWD");
	char *keep = was ? strdup(was) : NULL;
	float *x = up(in->x, n), *g = up(in->g, hb), *dy = up(in->dy, n);
	float *drs = up(rs, (size_t)rows * 4), *dx = up(in->dx0, n);
	float *dg = up(in->dg0, hb), *dxa = up(in->dx0, n);
	float *dga = up(in->dg0, hb), *dx2 = up(in->dx0, n);
	float *dg2 = up(in->dg0, hb);
	uint16_t *d16 = up(in->dx0, n / 2); /* any bits: overwritten */
	struct kern_ctx ctx;
	int rc;

	if (env)
		setenv("GTPLAN_NORM_BWD", env, 1);
	else
		unsetenv("GTPLAN_NORM_BWD");
	rc = kern_sync(&G);
	if (!rc)
		rc = kern_init(&ctx, KERN_CUDA, 0);
	if (!rc) {
		rc = kern_rmsnorm_bwd(&ctx, rows, h, x, g, drs, dy, dx, dg);
		if (!rc)
			rc = kern_rmsnorm_bwd_add_bf(&ctx, rows, h, x, g, drs,
						     dy, dxa, dga, d16);
		if (!rc)
			rc = kern_rmsnorm_bwd(&ctx, rows, h, x, g, drs, dy,
					      dx2, dg2);
		if (!rc)
			rc = kern_sync(&ctx);
		kern_release(&ctx);
	}
	if (keep)
		setenv("GTPLAN_NORM_BWD", keep, 1);
	else
		unsetenv("GTPLAN_NORM_BWD");
	free(keep);
	{
		void *host[7] = { o->dx, o->dg, o->dxa, o->dga, o->d16, o->dx2,
				  o->dg2 };
		const void *dev[7] = { dx, dg, dxa, dga, d16, dx2, dg2 };
		size_t bytes[7] = { n, hb, n, hb, n / 2, n, hb };

		for (int i = 0; i < 7 && !rc; i++)
			rc = down(host[i], dev[i], bytes[i]);
	}
	kern_free(&G, x); kern_free(&G, g); kern_free(&G, dy);
	kern_free(&G, drs); kern_free(&G, dx); kern_free(&G, dg);
	kern_free(&G, dxa); kern_free(&G, dga); kern_free(&G, dx2);
	kern_free(&G, dg2); kern_free(&G, d16);
	return rc;
}

/* Words of a that differ from the reference t (each of the three calls
 * against t's first: the same inputs). */
static double bwd_differ(const struct bwd_out *a, const struct bwd_out *t,
			 long long n, long long h)
{
	return words_differ(a->dx, t->dx, n, 0) +
	       words_differ(a->dg, t->dg, h, 0) +
	       words_differ(a->dxa, t->dxa, n, 0) +
	       words_differ(a->dga, t->dga, h, 0) +
	       words_differ(a->d16, t->d16, n, 1) +
	       words_differ(a->dx2, t->dx, n, 0) +
	       words_differ(a->dg2, t->dg, h, 0);
}

static void test_norm_bwd_one(void)
{
	struct verdict vb = { 0, 0 }, vc = { 0, 0 };
	static const char *const env[3] = { "one", "one", NULL };

	for (size_t s = 0; s < NBWD; s++) {
		struct norm_in in = { bwd_dims[s][0], bwd_dims[s][1], NULL,
				      NULL, NULL, NULL, NULL, NULL };
		long long n = in.rows * in.h;
		float *y = xmalloc((size_t)n * 4), *rs;
		float *cdx = xmalloc((size_t)n * 4), *cdg;
		struct bwd_out t, a;
		double den;

		in.x = rnd(n, 2);
		in.g = rnd(in.h, 1);
		in.dy = rnd(n, 1);
		in.dx0 = rnd(n, 1);
		in.dg0 = rnd(in.h, 1);
		rs = xmalloc((size_t)in.rows * 4);
		cdg = dup(in.dg0, in.h);
		see_rc(&vc, kern_rmsnorm_fwd(&C, in.rows, in.h, 1e-5f, in.x,
					     in.g, y, rs));
		see_rc(&vc, kern_rmsnorm_bwd(&C, in.rows, in.h, in.x, in.g, rs,
					     in.dy, cdx, cdg));
		den = dx_scale(&in, rs);
		bwd_out_init(&t, in.rows, in.h);
		bwd_out_init(&a, in.rows, in.h);
		see_rc(&vb, bwd_gpu(&in, rs, "two", &t));
		for (int e = 0; e < 3; e++) {
			see_rc(&vb, bwd_gpu(&in, rs, env[e], &a));
			see(&vb, bwd_differ(&a, &t, n, in.h));
			if (e)
				continue;
			see(&vc, relerr_to(a.dx, cdx, n, den));
			see(&vc, relerr(a.dg, cdg, in.h));
		}
		bwd_out_free(&t);
		bwd_out_free(&a);
		free(in.x); free(in.g); free(in.dy); free(in.dx0);
		free(in.dg0); free(y); free(rs); free(cdx); free(cdg);
	}
	report("norm_bwd_one_two", &vb, 0);
	report("norm_bwd_one_cpu", &vc, TOL_RED);
}

/* ---- cross-entropy ------------------------------------------------------ */

/* rows, cols, nvalid, first: a masked tail inside a float4, rows longer
 * than a gradient block's 4096 logits, a row of one float4. */
static const long long ce_dims[][4] = {
	{ 37, 1024, 1021, 0 }, { 5, 8196, 8196, 8196 }, { 3, 20000, 19999, 0 },
	{ 64, 4, 3, 4 },
};
#define NCE (sizeof(ce_dims) / sizeof(ce_dims[0]))

/* max, sum (from the CPU's max) and the gradient in place (from the
 * CPU's max and sum) on the device, arrays `off` bytes past alignment. */
static int ce_gpu(const long long *dm, const float *l, const int32_t *t,
		  const float *cmx, const float *csm, size_t off, float *mx,
		  float *sm, float *dl)
{
	long long rows = dm[0], cols = dm[1], nvalid = dm[2], first = dm[3];
	size_t nb = (size_t)(rows * cols) * 4, rb = (size_t)rows * 4;
	void *b[5];
	float *dlg = up_at(l, nb, off, &b[0]), *dmx = up_at(NULL, rb, off, &b[1]);
	float *dsm = up_at(NULL, rb, off, &b[2]);
	int32_t *dt = up_at(t, rb, 0, &b[3]);
	float *dcm = up_at(cmx, rb, 0, &b[4]);
	int rc = kern_ce_max(&G, rows, cols, nvalid, dlg, dmx);

	if (!rc)
		rc = down(mx, dmx, rb);
	if (!rc)
		rc = kern_ce_sumexp(&G, rows, cols, nvalid, dlg, dcm, dsm);
	if (!rc)
		rc = down(sm, dsm, rb);
	if (!rc)
		rc = kern_upload(&G, dsm, csm, rb);
	if (!rc)
		rc = kern_ce_bwd(&G, rows, cols, nvalid, first, dt, dcm, dsm,
				 0.5f, dlg, dlg);
	if (!rc)
		rc = down(dl, dlg, nb);
	for (int i = 0; i < 5; i++)
		kern_free(&G, b[i]);
	return rc;
}

static void test_ce_paths(void)
{
	struct verdict vc = { 0, 0 }, vg = { 0, 0 }, vp = { 0, 0 };

	for (size_t s = 0; s < NCE; s++) {
		long long rows = ce_dims[s][0], cols = ce_dims[s][1];
		long long nvalid = ce_dims[s][2], first = ce_dims[s][3];
		long long n = rows * cols;
		size_t rb = (size_t)rows * 4;
		float *l = rnd(n, 8), *cl = dup(l, n), *mx = xmalloc(rb);
		float *sm = xmalloc(rb), *m[2], *su[2], *dl[2];
		int32_t *t = rnd_ids(rows, 0, (int32_t)(first + cols +
							cols / 2 + 1));

		see_rc(&vc, kern_ce_max(&C, rows, cols, nvalid, l, mx));
		see_rc(&vc, kern_ce_sumexp(&C, rows, cols, nvalid, l, mx, sm));
		see_rc(&vc, kern_ce_bwd(&C, rows, cols, nvalid, first, t, mx,
					sm, 0.5f, cl, cl));
		for (int i = 0; i < 2; i++) {
			m[i] = xmalloc(rb);
			su[i] = xmalloc(rb);
			dl[i] = xmalloc((size_t)n * 4);
			see_rc(i ? &vp : &vc,
			       ce_gpu(ce_dims[s], l, t, mx, sm, (size_t)i * 4,
				      m[i], su[i], dl[i]));
			see(&vc, relerr(m[i], mx, rows));
			see(&vc, relerr(su[i], sm, rows));
			see(&vg, relerr(dl[i], cl, n));
		}
		see(&vp, words_differ(m[0], m[1], rows, 0) +
			 words_differ(dl[0], dl[1], n, 0));
		for (int i = 0; i < 2; i++) {
			free(m[i]); free(su[i]); free(dl[i]);
		}
		free(l); free(cl); free(mx); free(sm); free(t);
	}
	report("ce_paths", &vc, TOL_RED);
	report("ce_paths_grad", &vg, TOL_ELEM);
	report("ce_vec_scalar", &vp, 0);
}

void test_mem_kernels(void)
{
	test_norm_paths();
	test_norm_bwd_one();
	test_ce_paths();
}
