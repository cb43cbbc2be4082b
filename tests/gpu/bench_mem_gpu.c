/*
 * bench_mem_gpu: `bench_kernels_gpu mem`: the memory-bound kern_* ops of
 * the bf16 training step (runtime/rt_train.c, rt_step.c, rt_weights.c on
 * one GPU) at the Llama-3.2-1B and Llama-3.1-8B training shapes, through
 * the public kern.h API on a CUDA kern context, in TB/s of the bytes each
 * op must move by its contract.
 *
 * Shapes: T = 4096 tokens; hidden h 2048 / 4096, ffn f 8192 / 14336, 32
 * query heads and 8 key/value heads of hd 64 / 128, vocabulary V = 128256
 * (one TP rank: every column valid). Adam runs over the whole 1B model
 * (1,235,814,400 weights) and over 8 of the 8B model's 32 decoder layers
 * (8 x 218,112,000: the 8B slice's 5.4e9 weights do not fit beside the
 * other buffers).
 *
 * Bytes moved (4-byte floats and ids, 2-byte bf16; one read of each input
 * element and one write of each output element, as the contracts in
 * kernels/kern.h define them, whatever the kernel does beyond that; r:
 * read, w: written, rw: both):
 *   add_rmsnorm_fwd  x, r r; sum, y, y16 w; g r; rstd w  18Th + 4h + 4T
 *   rmsnorm_fwd      x r; y w; g r; rstd w               8Th + 4h + 4T
 *   rmsnorm_bwd      x, dy r; dx w; g, rstd r; dg rw     12Th + 12h + 4T
 *   rmsnorm_bwd_add  as rmsnorm_bwd, dx rw               16Th + 12h + 4T
 *   swiglu_fwd_bf    x [T, 2f] r; y, y16 [T, f] w        14Tf
 *   swiglu_bwd_bf    x [T, 2f], dy r; dx, dx16 [T, 2f] w 24Tf
 *   rope             x [T, heads, hd] rw; pos r          8 T heads hd + 4T
 *   qkv_split/merge  T (q_l + 2 kv_l) r and w            8 T (q_l + 2 kv_l)
 *   round_bf16_copy  x rw; its bits w                    10n
 *   round_bf16       x rw                                8n
 *   to_bf16          x r; bits w                         6n
 *   ce_max           logits r; max w                     4TV + 4T
 *   ce_sumexp        logits, max r; sum w                4TV + 8T
 *   ce_target        targets, a logit a row r; target w  12T
 *   ce_loss          max, sum, target r; loss w          16T
 *   ce_bwd_bf        logits r; dlogits, bits w;
 *                    targets, max, sum r                 10TV + 16T
 *   adam_bf          p, m, v rw; g r; p16 w              30n
 *   zero             w                                   4n
 *   copy             r and w                             8n
 *   embed_fwd        T table rows r; out w; tokens r     8Th + 4T
 *   embed_bwd        dout r; T table rows rw; tokens r   12Th + 4T
 * (the attention backward's cast of dout to bf16 is no kern op: it runs
 * inside kern_attn_bwd_bf, kernels/kern_cuda_fast.cu; to_bf16 at its size,
 * T q_l, times the same work.)
 *
 * Timing: kern's CUDA-event profile (kern_prof_*) around each call, the
 * MEM and COPY classes' device time. Before each call the L2 cache is
 * flushed by a read-only pass over 256 MiB (a kern_gemm with one output
 * row: GEMM class, not counted), queued ahead of the op so the op's start
 * is not a launch gap. One warm-up call, then the median of `iters` calls.
 * The percentage is of MEM_PEAK_TBS, the H200's measured copy rate
 * (docs/runtime-gpu.md); the first line measures kern_copy of 512 MiB
 * here.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_host.h"

#define MEM_PEAK_TBS 4.25
#define MEM_T 4096LL
#define MEM_V 128256LL
#define FLUSH_K 8192LL /* the flush reads FLUSH_K x FLUSH_N floats */
#define FLUSH_N 8192LL
#define FILL_N (1LL << 22) /* random floats tiled over the inputs */

void bench_mem(struct kern_ctx *g, int iters);

struct model {
	const char *name;
	long long h, f, nh, nkv, hd, adam_n;
};

/* One model's buffers (device) and the size of the case being timed. */
struct env {
	struct kern_ctx *k;
	const struct model *m;
	long long T, V, n, heads;
	float *a, *b, *c, *d, *g, *dg, *rs, *mx, *sm, *tg, *loss, *logits;
	float *table, *ap, *ag, *am, *av, *flush_a, *flush_b, *flush_c;
	uint16_t *h16, *l16, *p16;
	int32_t *tok, *pos;
};

typedef int (*mem_fn)(struct env *e);

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int flush_l2(struct env *e)
{
	return kern_gemm(e->k, 0, 0, 1, FLUSH_N, FLUSH_K, 1.0f, e->flush_a,
			 FLUSH_K, e->flush_b, FLUSH_N, 0.0f, e->flush_c,
			 FLUSH_N);
}

/* Median device ms of fn over iters calls, each after an L2 flush. */
static double time_op(struct env *e, mem_fn fn, int iters)
{
	double *t = gh_malloc((size_t)iters * sizeof(double)), med;
	double ms[KERN_PROF_CLASSES];
	long long calls[KERN_PROF_CLASSES];
	int rc = flush_l2(e); /* the warm-up: the flush's first use too */

	if (!rc)
		rc = fn(e);
	if (!rc)
		rc = kern_sync(e->k);
	for (int i = 0; i < iters && !rc; i++) {
		rc = kern_prof_reset(e->k);
		if (!rc)
			rc = flush_l2(e);
		if (!rc)
			rc = fn(e);
		if (!rc)
			rc = kern_prof_read(e->k, ms, calls);
		if (!rc)
			t[i] = ms[KERN_PROF_MEM] + ms[KERN_PROF_COPY];
	}
	if (rc)
		gh_die(rc, "mem benchmark");
	qsort(t, (size_t)iters, sizeof(double), cmp_double);
	med = t[iters / 2];
	free(t);
	return med;
}

static void report_op(struct env *e, const char *op, const char *shape,
		      double bytes, mem_fn fn, int iters)
{
	double ms = time_op(e, fn, iters), tbs = bytes / (ms * 1e-3) * 1e-12;

	printf("mem %-3s %-16s %-26s %8.4f ms %9.1f MB %5.2f TB/s %5.1f%%\n",
	       e->m->name, op, shape, ms, bytes * 1e-6, tbs,
	       100.0 * tbs / MEM_PEAK_TBS);
	fflush(stdout);
}

/* ---- the ops (sizes from e; inputs in a, b, outputs in c, d) ------------ */

static int op_add_norm(struct env *e)
{
	return kern_add_rmsnorm_fwd(e->k, e->T, e->m->h, 1e-5f, e->a, e->b,
				    e->c, e->g, e->d, e->rs, e->h16);
}

static int op_norm(struct env *e)
{
	return kern_rmsnorm_fwd(e->k, e->T, e->m->h, 1e-5f, e->a, e->g, e->c,
				e->rs);
}

static int op_norm_bwd(struct env *e)
{
	return kern_rmsnorm_bwd(e->k, e->T, e->m->h, e->a, e->g, e->rs, e->b,
				e->c, e->dg);
}

static int op_norm_bwd_add(struct env *e)
{
	return kern_rmsnorm_bwd_add(e->k, e->T, e->m->h, e->a, e->g, e->rs,
				    e->b, e->c, e->dg);
}

static int op_swiglu_fwd(struct env *e)
{
	return kern_swiglu_fwd_bf(e->k, e->T, e->m->f, e->a, e->c, e->h16);
}

static int op_swiglu_bwd(struct env *e)
{
	return kern_swiglu_bwd_bf(e->k, e->T, e->m->f, e->a, e->b, e->c,
				  e->h16);
}

static int op_rope(struct env *e)
{
	return kern_rope(e->k, e->T, e->heads, e->m->hd, 500000.0, e->pos, 0,
			 e->c);
}

static int op_qkv_split(struct env *e)
{
	const struct model *m = e->m;

	return kern_qkv_split(e->k, e->T, m->nkv, m->nh / m->nkv * m->hd,
			      m->hd, e->a, e->c, e->d, e->b);
}

static int op_qkv_merge(struct env *e)
{
	const struct model *m = e->m;

	return kern_qkv_merge(e->k, e->T, m->nkv, m->nh / m->nkv * m->hd,
			      m->hd, e->c, e->d, e->b, e->a);
}

static int op_round_copy(struct env *e)
{
	return kern_round_bf16_copy(e->k, e->n, e->c, e->h16);
}

static int op_round(struct env *e)
{
	return kern_round_bf16(e->k, e->n, e->c);
}

static int op_to_bf16(struct env *e)
{
	return kern_to_bf16(e->k, e->n, e->a, e->h16);
}

static int op_ce_max(struct env *e)
{
	return kern_ce_max(e->k, e->T, e->V, e->V, e->logits, e->mx);
}

static int op_ce_sumexp(struct env *e)
{
	return kern_ce_sumexp(e->k, e->T, e->V, e->V, e->logits, e->mx, e->sm);
}

static int op_ce_target(struct env *e)
{
	return kern_ce_target(e->k, e->T, e->V, 0, e->tok, e->logits, e->tg);
}

static int op_ce_loss(struct env *e)
{
	return kern_ce_loss(e->k, e->T, e->mx, e->sm, e->tg, e->loss);
}

/* In place, as the runtime runs it (dlogits = logits). */
static int op_ce_bwd(struct env *e)
{
	return kern_ce_bwd_bf(e->k, e->T, e->V, e->V, 0, e->tok, e->mx, e->sm,
			      1.0f / (float)e->T, e->logits, e->logits, e->l16);
}

static int op_adam(struct env *e)
{
	return kern_adam_bf(e->k, e->n, 1e-4f, 0.9f, 0.95f, 1e-8f, 10, e->ap,
			    e->ag, e->am, e->av, e->p16, e->n);
}

static int op_zero(struct env *e)
{
	return kern_zero(e->k, e->c, (size_t)e->n * sizeof(float));
}

static int op_copy(struct env *e)
{
	return kern_copy(e->k, e->c, e->a, (size_t)e->n * sizeof(float));
}

/* The reference copy: the logits' first n floats to the next n. */
static int op_copy_ref(struct env *e)
{
	return kern_copy(e->k, e->logits + e->n, e->logits,
			 (size_t)e->n * sizeof(float));
}

static int op_embed_fwd(struct env *e)
{
	return kern_embed_fwd(e->k, e->T, e->m->h, 0, e->V, e->table, e->tok,
			      e->c);
}

static int op_embed_bwd(struct env *e)
{
	return kern_embed_bwd(e->k, e->T, e->m->h, 0, e->V, e->a, e->tok,
			      e->table);
}

/* ---- buffers -------------------------------------------------------------- */

static void *dev0(struct env *e, long long bytes)
{
	return gh_dev(e->k, NULL, (size_t)bytes);
}

/* n floats of d from a tiled random pattern in [-scale, scale) (|.| when
 * pos): the kernels' speed does not depend on the values, as long as they
 * are ordinary numbers. */
static void fill(struct env *e, float *d, long long n, float scale, int pos)
{
	float *h = gh_malloc((size_t)FILL_N * sizeof(float));
	int rc = 0;

	for (long long i = 0; i < FILL_N; i++) {
		float v = scale * gh_uniform();

		h[i] = pos && v < 0 ? -v : v;
	}
	for (long long i = 0; i < n && !rc; i += FILL_N) {
		long long c = n - i < FILL_N ? n - i : FILL_N;

		rc = kern_upload(e->k, d + i, h, (size_t)c * sizeof(float));
	}
	free(h);
	if (rc)
		gh_die(rc, "fill");
}

static void env_init(struct env *e, struct kern_ctx *k, const struct model *m)
{
	long long T = MEM_T, V = MEM_V, big = T * 2 * m->f;
	int32_t *h = gh_malloc((size_t)T * sizeof(int32_t));

	memset(e, 0, sizeof(*e));
	e->k = k;
	e->m = m;
	e->T = T;
	e->V = V;
	e->a = dev0(e, big * 4);
	e->b = dev0(e, big * 4);
	e->c = dev0(e, big * 4);
	e->d = dev0(e, big * 4);
	e->h16 = dev0(e, big * 2);
	e->g = dev0(e, m->h * 4);
	e->dg = dev0(e, m->h * 4);
	e->rs = dev0(e, T * 4);
	e->mx = dev0(e, T * 4);
	e->sm = dev0(e, T * 4);
	e->tg = dev0(e, T * 4);
	e->loss = dev0(e, T * 4);
	e->logits = dev0(e, T * V * 4);
	e->l16 = dev0(e, T * V * 2);
	e->table = dev0(e, V * m->h * 4);
	e->flush_a = dev0(e, FLUSH_K * 4);
	e->flush_b = dev0(e, FLUSH_K * FLUSH_N * 4);
	e->flush_c = dev0(e, FLUSH_N * 4);
	fill(e, e->a, big, 2, 0);
	fill(e, e->b, big, 1, 0);
	fill(e, e->c, big, 1, 0);
	fill(e, e->d, big, 1, 0);
	fill(e, e->g, m->h, 1, 0);
	fill(e, e->logits, T * V, 8, 0);
	fill(e, e->table, V * m->h, 1, 0);
	fill(e, e->flush_b, FLUSH_K * FLUSH_N, 1, 0);
	for (long long i = 0; i < T; i++) {
		gh_seed = gh_seed * 1664525u + 1013904223u;
		h[i] = (int32_t)((gh_seed >> 8) % (unsigned)V);
	}
	e->tok = gh_dev(k, h, (size_t)T * sizeof(int32_t));
	for (long long i = 0; i < T; i++)
		h[i] = (int32_t)i;
	e->pos = gh_dev(k, h, (size_t)T * sizeof(int32_t));
	free(h);
}

static void env_release(struct env *e)
{
	void *p[] = { e->a, e->b, e->c, e->d, e->h16, e->g, e->dg, e->rs,
		      e->mx, e->sm, e->tg, e->loss, e->logits, e->l16,
		      e->table, e->flush_a, e->flush_b, e->flush_c, e->tok,
		      e->pos };

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		kern_free(e->k, p[i]);
}

/* ---- the cases ------------------------------------------------------------ */

static void bench_norms(struct env *e, int iters)
{
	long long T = e->T, h = e->m->h;
	double th = (double)T * h;
	char s[64];

	snprintf(s, sizeof(s), "T%lld h%lld", T, h);
	report_op(e, "add_rmsnorm_fwd", s, 18 * th + 4.0 * h + 4.0 * T,
		  op_add_norm, iters);
	report_op(e, "rmsnorm_fwd", s, 8 * th + 4.0 * h + 4.0 * T, op_norm,
		  iters);
	report_op(e, "rmsnorm_bwd", s, 12 * th + 12.0 * h + 4.0 * T,
		  op_norm_bwd, iters);
	report_op(e, "rmsnorm_bwd_add", s, 16 * th + 12.0 * h + 4.0 * T,
		  op_norm_bwd_add, iters);
}

static void bench_mlp_attn(struct env *e, int iters)
{
	const struct model *m = e->m;
	long long T = e->T, ql = m->nh * m->hd, kvl = m->nkv * m->hd;
	double tf = (double)T * m->f;
	char s[64];

	snprintf(s, sizeof(s), "T%lld f%lld", T, m->f);
	report_op(e, "swiglu_fwd_bf", s, 14 * tf, op_swiglu_fwd, iters);
	report_op(e, "swiglu_bwd_bf", s, 24 * tf, op_swiglu_bwd, iters);
	e->heads = m->nh;
	snprintf(s, sizeof(s), "q T%lld x %lld x %lld", T, m->nh, m->hd);
	report_op(e, "rope", s, 8.0 * T * ql + 4.0 * T, op_rope, iters);
	e->heads = m->nkv;
	snprintf(s, sizeof(s), "k T%lld x %lld x %lld", T, m->nkv, m->hd);
	report_op(e, "rope", s, 8.0 * T * kvl + 4.0 * T, op_rope, iters);
	snprintf(s, sizeof(s), "T%lld g%lld %lld+2x%lld", T, m->nkv,
		 ql / m->nkv, m->hd);
	report_op(e, "qkv_split", s, 8.0 * T * (ql + 2 * kvl), op_qkv_split,
		  iters);
	report_op(e, "qkv_merge", s, 8.0 * T * (ql + 2 * kvl), op_qkv_merge,
		  iters);
}

/* The conversions at the sizes the step runs them: q (T q_l), k and v
 * (T kv_l), the hidden state (T h). */
static void bench_bf16(struct env *e, int iters)
{
	const struct model *m = e->m;
	long long sz[3] = { e->T * m->nh * m->hd, e->T * m->nkv * m->hd,
			    e->T * m->h };
	const char *what[3] = { "q", "kv", "hidden" };
	char s[64];

	for (int i = 0; i < 3; i++) {
		e->n = sz[i];
		snprintf(s, sizeof(s), "%s n%lld", what[i], e->n);
		report_op(e, "round_bf16_copy", s, 10.0 * e->n, op_round_copy,
			  iters);
		report_op(e, "round_bf16", s, 8.0 * e->n, op_round, iters);
		report_op(e, "to_bf16", s, 6.0 * e->n, op_to_bf16, iters);
		report_op(e, "zero", s, 4.0 * e->n, op_zero, iters);
		report_op(e, "copy", s, 8.0 * e->n, op_copy, iters);
	}
}

static void bench_ce_embed(struct env *e, int iters)
{
	long long T = e->T, V = e->V, h = e->m->h;
	double tv = (double)T * V;
	char s[64];

	snprintf(s, sizeof(s), "T%lld V%lld", T, V);
	report_op(e, "ce_max", s, 4 * tv + 4.0 * T, op_ce_max, iters);
	report_op(e, "ce_sumexp", s, 4 * tv + 8.0 * T, op_ce_sumexp, iters);
	report_op(e, "ce_target", s, 12.0 * T, op_ce_target, iters);
	report_op(e, "ce_loss", s, 16.0 * T, op_ce_loss, iters);
	report_op(e, "ce_bwd_bf", s, 10 * tv + 16.0 * T, op_ce_bwd, iters);
	snprintf(s, sizeof(s), "T%lld h%lld V%lld", T, h, V);
	report_op(e, "embed_fwd", s, 8.0 * T * h + 4.0 * T, op_embed_fwd,
		  iters);
	report_op(e, "embed_bwd", s, 12.0 * T * h + 4.0 * T, op_embed_bwd,
		  iters);
}

static void bench_adam(struct env *e, int iters)
{
	long long n = e->m->adam_n;
	char s[64];

	e->n = n;
	e->ap = dev0(e, n * 4);
	e->ag = dev0(e, n * 4);
	e->am = dev0(e, n * 4);
	e->av = dev0(e, n * 4);
	e->p16 = dev0(e, n * 2);
	fill(e, e->ap, n, 1, 0);
	fill(e, e->ag, n, 1e-3f, 0);
	fill(e, e->am, n, 1e-3f, 0);
	fill(e, e->av, n, 1e-6f, 1);
	snprintf(s, sizeof(s), "n%lld", n);
	report_op(e, "adam_bf", s, 30.0 * n, op_adam, iters);
	kern_free(e->k, e->ap);
	kern_free(e->k, e->ag);
	kern_free(e->k, e->am);
	kern_free(e->k, e->av);
	kern_free(e->k, e->p16);
}

void bench_mem(struct kern_ctx *g, int iters)
{
	static const struct model models[2] = {
		{ "1B", 2048, 8192, 32, 8, 64, 1235814400LL },
		{ "8B", 4096, 14336, 32, 8, 128, 8LL * 218112000LL },
	};
	int rc = kern_prof_start(g);

	if (rc)
		gh_die(rc, "kern_prof_start");
	for (int i = 0; i < 2; i++) {
		struct env e;
		char s[64];

		env_init(&e, g, &models[i]);
		if (i == 0) { /* the reference: a plain copy of 512 MiB */
			e.n = 1LL << 27;
			snprintf(s, sizeof(s), "n%lld (512 MiB)", e.n);
			report_op(&e, "copy", s, 8.0 * e.n, op_copy_ref, iters);
		}
		bench_norms(&e, iters);
		bench_mlp_attn(&e, iters);
		bench_bf16(&e, iters);
		bench_ce_embed(&e, iters);
		bench_adam(&e, iters);
		env_release(&e);
	}
}
