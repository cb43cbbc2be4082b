/*
 * test_gemm_lt_gpu: kern_lt_gemm (kernels/kern_gemm_lt.cu) against a
 * float64 GEMM on the CPU of the same bf16 operands, in every transpose,
 * with fp32 and bf16 C, beta 0 and not, with and without the bias epilogue,
 * padded leading dimensions and sizes that are no multiple of any tile.
 *
 * Tolerances, normwise relative (||gpu - ref|| / ||ref||):
 *  - fp32 C: 1e-4. The bf16 products are exact in fp32, so the error is
 *    fp32 summation (about sqrt(kd) 2^-24 relative) plus the rounding of a
 *    split-K reduction; 1e-4 leaves two orders of margin and still fails a
 *    wrong transpose, a dropped beta or bias by far.
 *  - bf16 C: 4e-3. The final rounding to bf16 costs up to 2^-9 relative per
 *    element, and with beta != 0 the bf16 C read back is itself rounded.
 * Each shape runs twice through one handle (the second call reuses the
 * cached plan) and once through a tuning handle; all must agree.
 *
 * Prints one line per case and `RESULT passed failed`; exits 1 on a failure,
 * 77 without a GPU. `make test-gpu` runs it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_host.h"
#include "kern_gemm_lt.h"

#define TOL_F32 1e-4
#define TOL_BF16 4e-3

static struct kern_ctx G;
static struct kern_lt *LT, *TUNED;
static int n_pass, n_fail;

struct gcase {
	int ta, tb, bias;
	long long m, n, kd, pad;
	float alpha, beta;
	enum kern_lt_type ct;
};

/* C = alpha op(A) op(B) + beta C0 + bias, every value as the GPU sees it
 * (bf16 C0 and bias rounded first). */
static void ref_gemm(const struct gcase *g, const float *a, long long lda,
		     const float *b, long long ldb, const double *c0,
		     const double *bias, long long ldc, double *c)
{
	for (long long i = 0; i < g->m; i++)
		for (long long j = 0; j < g->n; j++) {
			double s = 0.0;

			for (long long x = 0; x < g->kd; x++) {
				double av = g->ta ? a[x * lda + i] : a[i * lda + x];
				double bv = g->tb ? b[j * ldb + x] : b[x * ldb + j];

				s += av * bv;
			}
			c[i * ldc + j] = g->alpha * s + g->beta * c0[i * ldc + j] +
					 (bias ? bias[j] : 0.0);
		}
}

/* Host C (fp32 or bf16 bits) <-> doubles. */
static void c_to_double(enum kern_lt_type ct, const void *c, double *d,
			long long n)
{
	for (long long i = 0; i < n; i++)
		d[i] = ct == KERN_LT_F32 ? ((const float *)c)[i] :
					   gh_from_bf16(((const uint16_t *)c)[i]);
}

/* Random C0 or bias in C's type, and its values as doubles. */
static void *rand_c(enum kern_lt_type ct, long long n, double *d)
{
	size_t esz = ct == KERN_LT_F32 ? 4 : 2;
	void *c = gh_malloc((size_t)n * esz);

	for (long long i = 0; i < n; i++) {
		float v = gh_uniform();

		if (ct == KERN_LT_F32)
			((float *)c)[i] = v;
		else
			((uint16_t *)c)[i] = gh_to_bf16(v);
	}
	c_to_double(ct, c, d, n);
	return c;
}

/* Runs the case through `lt` and returns the normwise error over the
 * m x n entries (the padding columns must stay as they were). */
static double run_one(struct kern_lt *lt, const struct gcase *g,
		      const uint16_t *da, long long lda, const uint16_t *db,
		      long long ldb, const void *c0, const void *dbias,
		      const double *ref, const double *c0d)
{
	long long ldc = g->n + g->pad, nc = g->m * ldc;
	size_t esz = g->ct == KERN_LT_F32 ? 4 : 2;
	void *dc = gh_dev(&G, c0, (size_t)nc * esz), *hc = gh_malloc((size_t)nc * esz);
	double *got = gh_malloc((size_t)nc * 8), *want = gh_malloc((size_t)nc * 8);
	double err;
	int rc;

	rc = kern_lt_gemm(lt, g->ta, g->tb, g->m, g->n, g->kd, g->alpha, da,
			  lda, db, ldb, g->beta, dc, g->ct, ldc, dbias);
	if (rc)
		gh_die(rc, "kern_lt_gemm");
	gh_down(&G, hc, dc, (size_t)nc * esz);
	c_to_double(g->ct, hc, got, nc);
	memcpy(want, ref, (size_t)nc * 8);
	for (long long i = 0; i < g->m; i++)
		for (long long j = g->n; j < ldc; j++)
			want[i * ldc + j] = c0d[i * ldc + j];
	err = gh_relerr(got, want, nc);
	kern_free(&G, dc);
	free(hc);
	free(got);
	free(want);
	return err;
}

static void run_case(const struct gcase *g)
{
	long long ar = g->ta ? g->kd : g->m, ac = g->ta ? g->m : g->kd;
	long long br = g->tb ? g->n : g->kd, bc = g->tb ? g->kd : g->n;
	long long lda = ac + g->pad, ldb = bc + g->pad, ldc = g->n + g->pad;
	double *c0d = gh_malloc((size_t)(g->m * ldc) * 8);
	double *bd = gh_malloc((size_t)g->n * 8);
	double *ref = gh_malloc((size_t)(g->m * ldc) * 8);
	float *fa, *fb;
	uint16_t *a = gh_rand_bf16(ar * lda, 1.0f, &fa);
	uint16_t *b = gh_rand_bf16(br * ldb, 1.0f, &fb);
	void *c0 = rand_c(g->ct, g->m * ldc, c0d), *bias = rand_c(g->ct, g->n, bd);
	size_t esz = g->ct == KERN_LT_F32 ? 4 : 2;
	void *da = gh_dev(&G, a, (size_t)(ar * lda) * 2);
	void *db = gh_dev(&G, b, (size_t)(br * ldb) * 2);
	void *dbias = g->bias ? gh_dev(&G, bias, (size_t)g->n * esz) : NULL;
	double tol = g->ct == KERN_LT_F32 ? TOL_F32 : TOL_BF16, e[3];
	char name[96];

	ref_gemm(g, fa, lda, fb, ldb, c0d, g->bias ? bd : NULL, ldc, ref);
	e[0] = run_one(LT, g, da, lda, db, ldb, c0, dbias, ref, c0d);
	e[1] = run_one(LT, g, da, lda, db, ldb, c0, dbias, ref, c0d);
	e[2] = run_one(TUNED, g, da, lda, db, ldb, c0, dbias, ref, c0d);
	snprintf(name, sizeof(name), "%s%s %lldx%lldx%lld pad%lld %s b%.1f%s",
		 g->ta ? "T" : "N", g->tb ? "T" : "N", g->m, g->n, g->kd, g->pad,
		 g->ct == KERN_LT_F32 ? "f32" : "bf16", g->beta,
		 g->bias ? " bias" : "");
	for (int i = 0; i < 3; i++) {
		int ok = e[i] <= tol;

		printf("%-4s %-44s %s err %.3e (tol %.0e)\n", ok ? "ok" : "FAIL",
		       name, i == 0 ? "new " : i == 1 ? "again" : "tuned", e[i], tol);
		ok ? n_pass++ : n_fail++;
	}
	kern_free(&G, da);
	kern_free(&G, db);
	if (dbias)
		kern_free(&G, dbias);
	{
		void *host[] = { a, b, fa, fb, c0, bias, c0d, bd, ref };

		for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
			free(host[i]);
	}
}

int main(void)
{
	static const struct gcase cases[] = {
		{ 0, 0, 0, 1, 1, 1, 0, 1.0f, 0.0f, KERN_LT_F32 },
		{ 0, 1, 0, 77, 129, 200, 0, 1.0f, 0.0f, KERN_LT_F32 },
		{ 1, 0, 0, 130, 96, 257, 8, 0.5f, 1.0f, KERN_LT_F32 },
		{ 1, 1, 1, 64, 200, 136, 0, 1.0f, 0.0f, KERN_LT_F32 },
		{ 0, 0, 1, 256, 512, 1024, 0, 1.0f, 0.5f, KERN_LT_F32 },
		{ 0, 1, 1, 300, 136, 64, 8, 1.0f, 0.0f, KERN_LT_BF16 },
		{ 0, 0, 0, 513, 264, 320, 0, 2.0f, 0.0f, KERN_LT_BF16 },
		{ 1, 0, 0, 128, 384, 777, 0, 1.0f, 1.0f, KERN_LT_BF16 },
		{ 1, 1, 0, 33, 17, 45, 3, 1.0f, 0.0f, KERN_LT_BF16 },
		{ 0, 1, 0, 1024, 1536, 512, 0, 1.0f, 0.0f, KERN_LT_BF16 },
	};
	int rc;

	gh_init(&G);
	rc = kern_lt_new(kern_stream(&G), 0, &LT);
	if (!rc)
		rc = kern_lt_new(kern_stream(&G), 1, &TUNED);
	if (rc)
		gh_die(rc, "kern_lt_new");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	/* each shape planned once per handle, the repeat from the cache */
	printf("%-4s plans cached %d (want %zu)\n",
	       kern_lt_plans(LT) == (int)(sizeof(cases) / sizeof(cases[0])) ?
		       "ok" : "FAIL",
	       kern_lt_plans(LT), sizeof(cases) / sizeof(cases[0]));
	kern_lt_plans(LT) == (int)(sizeof(cases) / sizeof(cases[0])) ? n_pass++ :
									n_fail++;
	kern_lt_free(LT);
	kern_lt_free(TUNED);
	kern_release(&G);
	printf("RESULT %d %d\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
