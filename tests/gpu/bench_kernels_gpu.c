/*
 * bench_kernels_gpu: time the bf16 building blocks on this GPU and print
 * TFLOP/s per configuration (scripts/bench_kernels_gpu.sh runs it).
 *
 *  - flash attention (kernels/kern_flash.cu), causal, whole sequences:
 *    FLOPs counted as FlashAttention's benchmarks do, causal halved:
 *    forward 4 b nh s^2 hd / 2, backward 2.5 times that, each kernel by
 *    kern_flash_fwd_with / kern_flash_bwd_with. `fwd` is the mma.sync
 *    forward (KERN_FLASH_MMA), `fwd-wg` and `fwd-wgp` the wgmma one in
 *    its two schedules (kernels/kern_flash_wg.cu; n/a off compute
 *    capability 9.0) and `fwd-ws` the warp-specialized TMA one
 *    (kernels/kern_flash_ws.cu), on the same inputs; `bwd` is the
 *    mma.sync backward and `bwd-wg`, `bwd-wgp` the wgmma one in its two
 *    schedules (kernels/kern_flash_wg_bwd.cu; n/a off compute capability
 *    9.0) and `bwd-ws` the warp-specialized one
 *    (kernels/kern_flash_ws_bwd.cu; n/a likewise),
 *    all on the mma.sync forward's o and lse; `fwd-ws-pos` and
 *    `bwd-ws-pos` the ws kernels given the positions 0, 1, 2, ... as
 *    arrays, as gtplan-run's calls give them, where the others pass NULL.
 *  - cuBLASLt GEMMs (kernels/kern_gemm_lt.cu) at the linear layers of
 *    Llama-3.1-8B and Llama-3.2-1B with T tokens: each layer Y = X W^T
 *    (forward, NT, bf16 Y), dX = dY W (NN, bf16) and dW += dY^T X (TN, fp32,
 *    beta = 1 as Megatron's gradient-accumulation fusion does); 2 m n k
 *    FLOPs each.
 * Inputs are random bf16 (never zeros). Each configuration: warm-up, then
 * the median of 7 batches of `iters` launches, timed on the host around a
 * device synchronisation (launch gaps are hidden by the queue).
 *  - mem (tests/gpu/bench_mem_gpu.c, not part of all): the memory-bound
 *    kern_* ops of the bf16 training step at the Llama-3.2-1B and
 *    Llama-3.1-8B shapes, the median of `iters` single calls' device time,
 *    in TB/s of the bytes each op's contract moves.
 *
 *   bench_kernels_gpu [attn|gemm|all|mem] [iters]   (default all 10)
 * Output: one line per configuration, `ms` per call and TFLOP/s (mem:
 * TB/s and % of the H200's copy rate).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_host.h"
#include "kern_flash.h"
#include "kern_gemm_lt.h"

#define BATCHES 7

static struct kern_ctx G;

/* tests/gpu/bench_mem_gpu.c */
void bench_mem(struct kern_ctx *g, int iters);

typedef int (*bench_fn)(void *arg);

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median seconds per call of fn over BATCHES batches of iters calls. */
static double time_median(bench_fn fn, void *arg, int iters)
{
	double t[BATCHES];
	int rc = fn(arg);

	if (!rc)
		rc = kern_sync(&G);
	for (int b = 0; b < BATCHES && !rc; b++) {
		double t0 = gh_now();

		for (int i = 0; i < iters && !rc; i++)
			rc = fn(arg);
		if (!rc)
			rc = kern_sync(&G);
		t[b] = (gh_now() - t0) / iters;
	}
	if (rc)
		gh_die(rc, "benchmark");
	qsort(t, BATCHES, sizeof(double), cmp_double);
	return t[BATCHES / 2];
}

/* Device bf16 buffer of n random values (random bits in [2^-7, 2) with
 * random sign: no zeros, no denormals). */
static uint16_t *dev_rand(long long n)
{
	uint16_t *h = gh_malloc((size_t)n * 2), *d;

	for (long long i = 0; i < n; i++) {
		gh_seed = gh_seed * 1664525u + 1013904223u;
		h[i] = (uint16_t)(((gh_seed >> 16) & 0x807fu) |
				  ((120u + ((gh_seed >> 8) & 7u)) << 7));
	}
	d = gh_dev(&G, h, (size_t)n * 2);
	free(h);
	return d;
}

/* ---- attention ---------------------------------------------------------- */

struct attn_arg {
	struct kern_attn a;
	uint16_t *q, *k, *v, *o, *dout;
	float *lse, *dsum, *dq, *dk, *dv;
	int32_t *pos; /* 0, 1, 2, ...: the positions gtplan-run passes */
	enum kern_flash_kind kind; /* the kernel timed */
	int arrays; /* positions as the arrays pos rather than NULL */
};

static int attn_fwd(void *p)
{
	struct attn_arg *x = p;
	const int32_t *pos = x->arrays ? x->pos : NULL;

	return kern_flash_fwd_with(x->kind, kern_stream(&G), &x->a, x->q, x->k,
				   x->v, pos, pos, x->o, x->lse);
}

static int attn_bwd(void *p)
{
	struct attn_arg *x = p;
	const int32_t *pos = x->arrays ? x->pos : NULL;

	return kern_flash_bwd_with(x->kind, kern_stream(&G), &x->a, x->q, x->k,
				   x->v, x->o, x->lse, x->dout, pos, pos,
				   x->dsum, x->dq, x->dk, x->dv);
}

/* Prints " label ms TFLOP/s" of kernel `kind` (bwd: the backward;
 * arrays: positions as arrays), or " label n/a" where the device has none
 * (a wgmma kernel off compute capability 9.0); after the ws backward,
 * kern_flash_ws_bwd_check: a barrier wait that gave up (wrong results,
 * so a meaningless time) is printed. */
static void bench_kind(const char *label, enum kern_flash_kind kind, int bwd,
		       int arrays, struct attn_arg *x, double flop, int iters)
{
	bench_fn fn = bwd ? attn_bwd : attn_fwd;
	double t;
	int rc;

	x->kind = kind;
	x->arrays = arrays;
	if (fn(x) == KERN_ENODEV) {
		printf("  %s n/a", label);
		return;
	}
	t = time_median(fn, x, iters);
	printf("  %s %7.3f ms %6.1f TFLOP/s", label, t * 1e3, flop / t * 1e-12);
	if (!bwd || kind != KERN_FLASH_WS)
		return;
	rc = kern_flash_ws_bwd_check(kern_stream(&G));
	if (rc)
		printf(" (%s)", kern_error_text(rc));
}

static void bench_attn_one(const char *name, long long b, long long s,
			   long long nh, long long nkv, long long hd, int iters)
{
	struct attn_arg x;
	long long nq = b * s * nh * hd, nk = b * s * nkv * hd;
	double flop = 4.0 * b * nh * (double)s * s * hd / 2.0, tf, tb;
	int32_t *h = gh_malloc((size_t)s * sizeof(int32_t));

	memset(&x, 0, sizeof(x));
	x.a.batch = b;
	x.a.sq = x.a.sk = s;
	x.a.nh = nh;
	x.a.nkv = nkv;
	x.a.hd = hd;
	x.a.scale = 1.0f / sqrtf((float)hd);
	x.q = dev_rand(nq);
	x.k = dev_rand(nk);
	x.v = dev_rand(nk);
	x.dout = dev_rand(nq);
	x.o = gh_dev(&G, NULL, (size_t)nq * 2);
	x.lse = gh_dev(&G, NULL, (size_t)(b * nh * s) * 4);
	x.dsum = gh_dev(&G, NULL, (size_t)(b * nh * s) * 4);
	x.dq = gh_dev(&G, NULL, (size_t)nq * 4);
	x.dk = gh_dev(&G, NULL, (size_t)nk * 4);
	x.dv = gh_dev(&G, NULL, (size_t)nk * 4);
	for (long long i = 0; i < s; i++)
		h[i] = (int32_t)i;
	x.pos = gh_dev(&G, h, (size_t)s * sizeof(int32_t));
	free(h);
	x.kind = KERN_FLASH_MMA;
	tf = time_median(attn_fwd, &x, iters);
	tb = time_median(attn_bwd, &x, iters);
	printf("attn %-4s b%lld s%-5lld h%lld/%lld hd%-3lld "
	       "fwd %7.3f ms %6.1f TFLOP/s  bwd %7.3f ms %6.1f TFLOP/s",
	       name, b, s, nh, nkv, hd, tf * 1e3, flop / tf * 1e-12, tb * 1e3,
	       2.5 * flop / tb * 1e-12);
	bench_kind("bwd-wg", KERN_FLASH_WG, 1, 0, &x, 2.5 * flop, iters);
	bench_kind("bwd-wgp", KERN_FLASH_WGP, 1, 0, &x, 2.5 * flop, iters);
	bench_kind("bwd-ws", KERN_FLASH_WS, 1, 0, &x, 2.5 * flop, iters);
	bench_kind("fwd-wg", KERN_FLASH_WG, 0, 0, &x, flop, iters);
	bench_kind("fwd-wgp", KERN_FLASH_WGP, 0, 0, &x, flop, iters);
	bench_kind("fwd-ws", KERN_FLASH_WS, 0, 0, &x, flop, iters);
	bench_kind("fwd-ws-pos", KERN_FLASH_WS, 0, 1, &x, flop, iters);
	bench_kind("bwd-ws-pos", KERN_FLASH_WS, 1, 1, &x, 2.5 * flop, iters);
	printf("\n");
	fflush(stdout);
	kern_free(&G, x.q); kern_free(&G, x.k); kern_free(&G, x.v);
	kern_free(&G, x.o); kern_free(&G, x.dout); kern_free(&G, x.lse);
	kern_free(&G, x.dsum); kern_free(&G, x.dq); kern_free(&G, x.dk);
	kern_free(&G, x.dv); kern_free(&G, x.pos);
}

static void bench_attn(int iters)
{
	bench_attn_one("8B", 4, 4096, 32, 8, 128, iters);
	bench_attn_one("8B", 1, 4096, 32, 8, 128, iters);
	bench_attn_one("8B", 2, 8192, 32, 8, 128, iters);
	bench_attn_one("mha", 4, 4096, 16, 16, 128, iters);
	bench_attn_one("1B", 4, 4096, 32, 8, 64, iters);
	bench_attn_one("1B", 1, 4096, 32, 8, 64, iters);
	bench_attn_one("1B", 2, 8192, 32, 8, 64, iters);
}

/* ---- GEMMs -------------------------------------------------------------- */

struct gemm_arg {
	struct kern_lt *lt;
	int ta, tb;
	long long m, n, k;
	float beta;
	enum kern_lt_type ct;
	uint16_t *a, *b;
	void *c;
};

static int gemm_run(void *p)
{
	struct gemm_arg *g = p;

	return kern_lt_gemm(g->lt, g->ta, g->tb, g->m, g->n, g->k, 1.0f, g->a,
			    g->ta ? g->m : g->k, g->b, g->tb ? g->k : g->n,
			    g->beta, g->c, g->ct, g->n, NULL);
}

struct linear {
	const char *name;
	long long in, out;
};

/* Forward, dX and dW of one linear layer at T tokens. */
static void bench_linear(struct gemm_arg *g, const char *model,
			 const struct linear *l, long long t, int iters)
{
	static const char *what[3] = { "fwd  Y=XW^T", "dX=dY W", "dW+=dY^T X" };
	long long mnk[3][3] = { { t, l->out, l->in }, { t, l->in, l->out },
				{ l->out, l->in, t } };
	int tr[3][2] = { { 0, 1 }, { 0, 0 }, { 1, 0 } };

	for (int i = 0; i < 3; i++) {
		double sec;

		g->ta = tr[i][0];
		g->tb = tr[i][1];
		g->m = mnk[i][0];
		g->n = mnk[i][1];
		g->k = mnk[i][2];
		g->ct = i == 2 ? KERN_LT_F32 : KERN_LT_BF16;
		g->beta = i == 2 ? 1.0f : 0.0f;
		sec = time_median(gemm_run, g, iters);
		printf("gemm %-3s %-5s T%-5lld %-11s %5lld x %5lld x %5lld %s "
		       "%7.3f ms %6.1f TFLOP/s\n",
		       model, l->name, t, what[i], g->m, g->n, g->k,
		       i == 2 ? "f32 " : "bf16", sec * 1e3,
		       2.0 * g->m * g->n * g->k / sec * 1e-12);
		fflush(stdout);
	}
}

static void bench_gemm(int iters)
{
	static const struct linear l8[] = { { "qkv", 4096, 6144 },
					    { "proj", 4096, 4096 },
					    { "fc1", 4096, 2 * 14336 },
					    { "fc2", 14336, 4096 } };
	static const struct linear l1[] = { { "qkv", 2048, 3072 },
					    { "proj", 2048, 2048 },
					    { "fc1", 2048, 2 * 8192 },
					    { "fc2", 8192, 2048 } };
	long long most = 8192LL * 2 * 14336; /* the largest operand */
	struct gemm_arg g;
	int rc;

	memset(&g, 0, sizeof(g));
	rc = kern_lt_new(kern_stream(&G), 1, &g.lt);
	if (rc)
		gh_die(rc, "kern_lt_new");
	g.a = dev_rand(most);
	g.b = dev_rand(most);
	g.c = gh_dev(&G, NULL, (size_t)most * 4);
	for (long long t = 4096; t <= 8192; t *= 2) {
		for (int i = 0; i < 4; i++)
			bench_linear(&g, "8B", &l8[i], t, iters);
		for (int i = 0; i < 4; i++)
			bench_linear(&g, "1B", &l1[i], t, iters);
	}
	kern_free(&G, g.a);
	kern_free(&G, g.b);
	kern_free(&G, g.c);
	kern_lt_free(g.lt);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int iters = argc > 2 ? atoi(argv[2]) : 10;

	if (iters < 1 || (strcmp(what, "attn") && strcmp(what, "gemm") &&
			  strcmp(what, "all") && strcmp(what, "mem"))) {
		fprintf(stderr, "usage: bench_kernels_gpu "
			"[attn|gemm|all|mem] [iters]\n");
		return 2;
	}
	gh_init(&G);
	if (!strcmp(what, "mem"))
		bench_mem(&G, iters);
	else if (strcmp(what, "gemm"))
		bench_attn(iters);
	if (!strcmp(what, "gemm") || !strcmp(what, "all"))
		bench_gemm(iters);
	kern_release(&G);
	return 0;
}
