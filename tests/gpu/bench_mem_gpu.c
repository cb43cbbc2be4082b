/*
 * bench_mem_gpu: `bench_kernels_gpu mem`: the memory-bound kern_* ops a
 * bf16 training step calls (runtime/rt_train.c, rt_step.c, rt_weights.c;
 * sim/step_ops.c's C_BF16 rows) on one GPU: TP 1, no sequence or context
 * parallelism, no QK-norm, no bias, one GTP rank, at the Llama-3.2-1B and
 * Llama-3.1-8B training shapes, through the public kern.h API on a CUDA
 * kern context, in TB/s of the bytes each op must move by its contract.
 *
 * Shapes: T = 4096 tokens; hidden h 2048 / 4096, ffn f 8192 / 14336, 32
 * query heads and 8 key/value heads of hd 64 / 128 (q_l = 32 hd = h at
 * both, kv_l = 8 hd, qkv_l = q_l + 2 kv_l), vocabulary V = 128256 (one TP
 * rank: every column valid), 16 / 32 layers. Adam runs over the whole 1B
 * model (1,235,814,400 weights) and over 8 of the 8B model's 32 decoder
 * layers (8 x 218,112,000: the 8B slice's 5.4e9 weights do not fit
 * beside the other buffers).
 *
 * Bytes moved (4-byte floats and ids, 2-byte bf16; one read of each input
 * element and one write of each output element, as the contracts in
 * kernels/kern.h define them, whatever the kernel does beyond that; r:
 * read, w: written, rw: both). The leading term's bytes per element are
 * sim/step_ops.c's for the same op; that table leaves out the per-row
 * terms (rstd, the CE statistics, token ids and positions). In step
 * order (a micro-batch's forward, its backward, then the step's end):
 *   embed_fwd_b16      bf16 table rows r; out w; tokens r   6Th + 4T
 *   copy               [T, h] r, w (embedding.out to x0)    8Th
 *   rmsnorm_fwd        x r; y w; g r; rstd w                8Th + 4h + 4T
 *   round_bf16_copy    y rw; its bits w                     10Th
 *   add_rmsnorm_fwd    x, r r; sum, y16 w (y NULL: only bf16
 *                      GEMMs read it); g r; rstd w          14Th + 4h + 4T
 *   qkv_rope_bf        packed [T, qkv_l] r; q16, k16, v16 w;
 *                      pos r                                6T qkv_l + 4T
 *   swiglu_fwd_b16     x16 [T, 2f] r; y16 [T, f] w          6Tf
 *   ce_max_b16         logits16 r; max w                    2TV + 4T
 *   ce_target_b16      targets, a logit a row r; target w   10T
 *   ce_sumexp_b16      logits16, max r; sum w               2TV + 8T
 *   ce_loss            max, sum, target r; loss w           16T
 *   ce_bwd_b16         logits16 r; d16 w (in place);
 *                      targets, max, sum r                  4TV + 12T
 *   rmsnorm_bwd        x, dy r; dx w; g, rstd r; dg rw      12Th + 12h + 4T
 *   to_bf16            dx [T, h] r; bits w                  6Th
 *   swiglu_bwd_b16     x16 [T, 2f], dy16 [T, f] r;
 *                      dx16 [T, 2f] w                       10Tf
 *   rmsnorm_bwd_add_bf as rmsnorm_bwd, dx rw; dx16 w        18Th + 12h + 4T
 *   qkv_merge_rope_bf  dq, dk, dv r; packed16 w; pos r      6T qkv_l + 4T
 *   embed_bwd          dout r; T table rows rw; tokens r    12Th + 4T
 *   zero               the embedding's gradient [V, h] w
 *                      (untied: 8B only)                    4Vh
 *   zero               the replicated (norm) gradients
 *                      [(2 layers + 1) h] w                 4n
 *   adam_bf            p, m, v rw; g r; p16 w               30n
 * How often: a layer's forward, add_rmsnorm_fwd twice (layer 0's first
 * norm: rmsnorm_fwd and round_bf16_copy instead), qkv_rope_bf,
 * swiglu_fwd_b16; its backward, rmsnorm_bwd_add_bf twice (its dx16 is
 * the next row-parallel backward's GEMM operand), swiglu_bwd_b16,
 * qkv_merge_rope_bf (dq, dk, dv need no zeroing: the flash backward
 * clears them in its dsum pass, kern_attn's overwrite); a micro-batch,
 * the embedding's ops, the copy, the final norm's add_rmsnorm_fwd and
 * rmsnorm_bwd, to_bf16 of the latter's dx (the last layer's linear_fc2
 * backward reads it), the cross-entropy's; a step, the two gradient
 * zeros (the embedding's in its first micro-batch) and Adam.
 * linear_proj's backward writes dout in bf16 alone (kern_gemm_bf16),
 * which the flash backward reads: no cast.
 * Not here: rt_weights_refresh's kern_to_bf16 of the weights, the first
 * step's only (Adam writes the copy after); the tokens' upload and the
 * losses' download (host transfers).
 *
 * Timing: kern's CUDA-event profile (kern_prof_*) around each call, the
 * MEM and COPY classes' device time. Before each call the L2 cache is
 * flushed by a read-only pass over 256 MiB (a kern_gemm with one output
 * row: GEMM class, not counted), queued ahead of the op so the op's start
 * is not a launch gap. One warm-up call, then the median of `iters` calls.
 * The percentage is of MEM_PEAK_TBS, the H200's measured copy rate
 * (docs/runtime-gpu.md); the first line measures kern_copy of 512 MiB
 * here. Then, where the buffers hold it, the rate of a kern_copy that
 * moves the same bytes (half read, half written), timed the same way,
 * and the op's rate as a share of it: a pass of a few MB pays a launch's
 * and a wave's fixed cost that a copy of 512 MiB hides, and a copy of
 * its own size pays it too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_host.h"

#define MEM_PEAK_TBS 4.25
#define MEM_T 4096LL
#define MEM_V 128256LL
#define MEM_THETA 500000.0 /* Llama 3's RoPE base */
#define FLUSH_K 8192LL /* the flush reads FLUSH_K x FLUSH_N floats */
#define FLUSH_N 8192LL
#define FILL_N (1LL << 22) /* random floats tiled over the inputs */

void bench_mem(struct kern_ctx *g, int iters);

struct model {
	const char *name;
	long long h, f, nh, nkv, hd, layers, adam_n;
	int tied; /* tied embedding: embed_bwd zeroes no gradient */
};

/* One model's buffers (device) and the size of the case being timed. */
struct env {
	struct kern_ctx *k;
	const struct model *m;
	long long T, V, n, ql, kvl, qkvl;
	float *a, *b, *c, *d, *g, *dg, *rs, *mx, *sm, *tg, *loss, *logits;
	float *table, *ap, *ag, *am, *av, *flush_a, *flush_b, *flush_c;
	uint16_t *x16, *dy16, *o16, *l16, *table16, *p16;
	int32_t *tok, *pos;
	long long big; /* floats in each of a, b, c, d */
	size_t cp_bytes; /* op_copy_same's copy */
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

/* A copy of e->cp_bytes from a to d. */
static int op_copy_same(struct env *e)
{
	return kern_copy(e->k, e->d, e->a, e->cp_bytes);
}

static void report_op(struct env *e, const char *op, const char *shape,
		      double bytes, mem_fn fn, int iters)
{
	double ms = time_op(e, fn, iters), tbs = bytes / (ms * 1e-3) * 1e-12;

	printf("mem %-3s %-18s %-21s %8.4f ms %9.1f MB %5.2f TB/s %5.1f%%",
	       e->m->name, op, shape, ms, bytes * 1e-6, tbs,
	       100.0 * tbs / MEM_PEAK_TBS);
	e->cp_bytes = (size_t)(bytes / 2) & ~(size_t)15;
	if (e->cp_bytes && e->cp_bytes <= (size_t)e->big * sizeof(float)) {
		double cms = time_op(e, op_copy_same, iters);
		double ctbs = 2.0 * (double)e->cp_bytes / (cms * 1e-3) * 1e-12;

		printf("  copy %5.2f TB/s %5.1f%%", ctbs, 100.0 * tbs / ctbs);
	}
	putchar('\n');
	fflush(stdout);
}

/* ---- the ops (sizes from e; fp32 inputs in a, b, outputs in c, d) ------- */

static struct kern_qkv qkv_shape(const struct env *e)
{
	const struct model *m = e->m;

	return (struct kern_qkv){
		.rows = e->T, .groups = m->nkv, .nq = m->nh / m->nkv * m->hd,
		.nk = m->hd, .hd = m->hd, .theta = MEM_THETA,
	};
}

static int op_embed_fwd(struct env *e)
{
	return kern_embed_fwd_b16(e->k, e->T, e->m->h, 0, e->V, e->table16,
				  e->tok, e->c);
}

static int op_copy(struct env *e)
{
	return kern_copy(e->k, e->c, e->a, (size_t)e->n * sizeof(float));
}

static int op_norm(struct env *e)
{
	return kern_rmsnorm_fwd(e->k, e->T, e->m->h, 1e-5f, e->a, e->g, e->c,
				e->rs);
}

static int op_round_copy(struct env *e)
{
	return kern_round_bf16_copy(e->k, e->n, e->c, e->o16);
}

static int op_add_norm(struct env *e)
{
	return kern_add_rmsnorm_fwd(e->k, e->T, e->m->h, 1e-5f, e->a, e->b,
				    e->c, e->g, NULL, e->rs, e->o16);
}

/* q16, k16, v16 one after another in o16 (no fp32 q, k, v: no CP). */
static int op_qkv_rope(struct env *e)
{
	struct kern_qkv a = qkv_shape(e);
	uint16_t *q16 = e->o16, *k16 = q16 + e->T * e->ql;

	return kern_qkv_rope_bf(e->k, &a, e->pos, e->a, NULL, NULL, NULL, q16,
				k16, k16 + e->T * e->kvl);
}

static int op_swiglu_fwd(struct env *e)
{
	return kern_swiglu_fwd_b16(e->k, e->T, e->m->f, e->x16, e->o16);
}

static int op_ce_max(struct env *e)
{
	return kern_ce_max_b16(e->k, e->T, e->V, e->V, e->l16, e->mx);
}

static int op_ce_target(struct env *e)
{
	return kern_ce_target_b16(e->k, e->T, e->V, 0, e->tok, e->l16, e->tg);
}

static int op_ce_sumexp(struct env *e)
{
	return kern_ce_sumexp_b16(e->k, e->T, e->V, e->V, e->l16, e->mx,
				  e->sm);
}

static int op_ce_loss(struct env *e)
{
	return kern_ce_loss(e->k, e->T, e->mx, e->sm, e->tg, e->loss);
}

/* In place, as head_bwd runs it (d16 = logits16). */
static int op_ce_bwd(struct env *e)
{
	return kern_ce_bwd_b16(e->k, e->T, e->V, e->V, 0, e->tok, e->mx,
			       e->sm, 1.0f / (float)e->T, e->l16, e->l16);
}

static int op_norm_bwd(struct env *e)
{
	return kern_rmsnorm_bwd(e->k, e->T, e->m->h, e->a, e->g, e->rs, e->b,
				e->c, e->dg);
}

static int op_to_bf16(struct env *e)
{
	return kern_to_bf16(e->k, e->n, e->a, e->o16);
}

static int op_swiglu_bwd(struct env *e)
{
	return kern_swiglu_bwd_b16(e->k, e->T, e->m->f, e->x16, e->dy16,
				   e->o16);
}

static int op_norm_bwd_add(struct env *e)
{
	return kern_rmsnorm_bwd_add_bf(e->k, e->T, e->m->h, e->a, e->g, e->rs,
				       e->b, e->c, e->dg, e->o16);
}

static int op_zero(struct env *e)
{
	return kern_zero(e->k, e->c, (size_t)e->n * sizeof(float));
}

/* dq, dk, dv in a, b, c; packed16 only (no bias gradient reads fp32). */
static int op_qkv_merge(struct env *e)
{
	struct kern_qkv a = qkv_shape(e);

	return kern_qkv_merge_rope_bf(e->k, &a, e->pos, e->a, e->b, e->c,
				      NULL, e->o16);
}

static int op_embed_bwd(struct env *e)
{
	return kern_embed_bwd(e->k, e->T, e->m->h, 0, e->V, e->a, e->tok,
			      e->table);
}

static int op_zero_table(struct env *e)
{
	return kern_zero(e->k, e->table, (size_t)(e->V * e->m->h) *
			 sizeof(float));
}

static int op_adam(struct env *e)
{
	return kern_adam_bf(e->k, e->n, 1e-4f, 0.9f, 0.95f, 1e-8f, 10, e->ap,
			    e->ag, e->am, e->av, e->p16, e->n);
}

/* The reference copy: the logits' first n floats to the next n. */
static int op_copy_ref(struct env *e)
{
	return kern_copy(e->k, e->logits + e->n, e->logits,
			 (size_t)e->n * sizeof(float));
}

/* ---- buffers ------------------------------------------------------------ */

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

/* d16 = the bf16 rounding of n random floats in [-scale, scale), through
 * the fp32 scratch `via`. */
static void fill16(struct env *e, uint16_t *d16, float *via, long long n,
		   float scale)
{
	int rc;

	fill(e, via, n, scale, 0);
	rc = kern_to_bf16(e->k, n, via, d16);
	if (rc)
		gh_die(rc, "fill16");
}

static void env_alloc(struct env *e)
{
	const struct model *m = e->m;
	long long T = e->T, V = e->V, big = T * 2 * m->f;

	e->a = dev0(e, big * 4);
	e->b = dev0(e, big * 4);
	e->c = dev0(e, big * 4);
	e->d = dev0(e, big * 4);
	e->x16 = dev0(e, big * 2);
	e->dy16 = dev0(e, big * 2);
	e->o16 = dev0(e, big * 2);
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
	e->table16 = dev0(e, V * m->h * 2);
	e->flush_a = dev0(e, FLUSH_K * 4);
	e->flush_b = dev0(e, FLUSH_K * FLUSH_N * 4);
	e->flush_c = dev0(e, FLUSH_N * 4);
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
	e->big = big;
	e->ql = m->nh * m->hd;
	e->kvl = m->nkv * m->hd;
	e->qkvl = e->ql + 2 * e->kvl;
	env_alloc(e);
	fill16(e, e->x16, e->d, big, 2);
	fill16(e, e->dy16, e->d, big, 1);
	fill(e, e->a, big, 2, 0);
	fill(e, e->b, big, 1, 0);
	fill(e, e->c, big, 1, 0);
	fill(e, e->d, big, 1, 0);
	fill(e, e->g, m->h, 1, 0);
	fill16(e, e->l16, e->logits, T * V, 8);
	fill16(e, e->table16, e->table, V * m->h, 1);
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
	void *p[] = { e->a, e->b, e->c, e->d, e->x16, e->dy16, e->o16, e->g,
		      e->dg, e->rs, e->mx, e->sm, e->tg, e->loss, e->logits,
		      e->l16, e->table, e->table16, e->flush_a, e->flush_b,
		      e->flush_c, e->tok, e->pos };

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		kern_free(e->k, p[i]);
}

/* ---- the cases, in step order ------------------------------------------- */

/* A micro-batch's forward: the embedding, the norms, linear_qkv's
 * columns to attention's copies, SwiGLU, the head's cross-entropy. */
static void bench_fwd(struct env *e, int iters)
{
	long long T = e->T, h = e->m->h, V = e->V;
	double th = (double)T * h, tv = (double)T * V;
	char s[64], sh[64];

	snprintf(sh, sizeof(sh), "T%lld h%lld", T, h);
	e->n = T * h;
	report_op(e, "embed_fwd_b16", sh, 6 * th + 4.0 * T, op_embed_fwd,
		  iters);
	report_op(e, "copy", sh, 8 * th, op_copy, iters);
	report_op(e, "rmsnorm_fwd", sh, 8 * th + 4.0 * h + 4.0 * T, op_norm,
		  iters);
	report_op(e, "round_bf16_copy", sh, 10 * th, op_round_copy, iters);
	report_op(e, "add_rmsnorm_fwd", sh, 14 * th + 4.0 * h + 4.0 * T,
		  op_add_norm, iters);
	snprintf(s, sizeof(s), "T%lld qkv%lld hd%lld", T, e->qkvl, e->m->hd);
	report_op(e, "qkv_rope_bf", s, 6.0 * T * e->qkvl + 4.0 * T,
		  op_qkv_rope, iters);
	snprintf(s, sizeof(s), "T%lld f%lld", T, e->m->f);
	report_op(e, "swiglu_fwd_b16", s, 6.0 * T * e->m->f, op_swiglu_fwd,
		  iters);
	snprintf(s, sizeof(s), "T%lld V%lld", T, V);
	report_op(e, "ce_max_b16", s, 2 * tv + 4.0 * T, op_ce_max, iters);
	report_op(e, "ce_target_b16", s, 10.0 * T, op_ce_target, iters);
	report_op(e, "ce_sumexp_b16", s, 2 * tv + 8.0 * T, op_ce_sumexp,
		  iters);
	report_op(e, "ce_loss", s, 16.0 * T, op_ce_loss, iters);
}

/* Its backward: the cross-entropy gradient, the norms, the gradients'
 * bf16 copies, SwiGLU, dq, dk, dv merged into linear_qkv's, the
 * embedding. */
static void bench_bwd(struct env *e, int iters)
{
	long long T = e->T, h = e->m->h, V = e->V;
	double th = (double)T * h;
	char s[64], sh[64];

	snprintf(s, sizeof(s), "T%lld V%lld", T, V);
	report_op(e, "ce_bwd_b16", s, 4.0 * T * V + 12.0 * T, op_ce_bwd,
		  iters);
	snprintf(sh, sizeof(sh), "T%lld h%lld", T, h);
	e->n = T * h;
	report_op(e, "rmsnorm_bwd", sh, 12 * th + 12.0 * h + 4.0 * T,
		  op_norm_bwd, iters);
	report_op(e, "to_bf16", sh, 6 * th, op_to_bf16, iters);
	snprintf(s, sizeof(s), "T%lld f%lld", T, e->m->f);
	report_op(e, "swiglu_bwd_b16", s, 10.0 * T * e->m->f, op_swiglu_bwd,
		  iters);
	report_op(e, "rmsnorm_bwd_add_bf", sh, 18 * th + 12.0 * h + 4.0 * T,
		  op_norm_bwd_add, iters);
	snprintf(s, sizeof(s), "T%lld qkv%lld hd%lld", T, e->qkvl, e->m->hd);
	report_op(e, "qkv_merge_rope_bf", s, 6.0 * T * e->qkvl + 4.0 * T,
		  op_qkv_merge, iters);
	snprintf(s, sizeof(s), "T%lld h%lld V%lld", T, h, V);
	report_op(e, "embed_bwd", s, 12 * th + 4.0 * T, op_embed_bwd, iters);
	if (!e->m->tied) {
		snprintf(s, sizeof(s), "emb grad n%lld", V * h);
		report_op(e, "zero", s, 4.0 * V * h, op_zero_table, iters);
	}
}

/* The step's ends: the replicated gradients zeroed (rt_grads_begin), Adam
 * with the weights' bf16 copy (finish_grads). */
static void bench_step(struct env *e, int iters)
{
	long long n = e->m->adam_n;
	char s[64];

	e->n = (2 * e->m->layers + 1) * e->m->h;
	snprintf(s, sizeof(s), "rep grads n%lld", e->n);
	report_op(e, "zero", s, 4.0 * e->n, op_zero, iters);
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
		{ "1B", 2048, 8192, 32, 8, 64, 16, 1235814400LL, 1 },
		{ "8B", 4096, 14336, 32, 8, 128, 32, 8LL * 218112000LL, 0 },
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
		bench_fwd(&e, iters);
		bench_bwd(&e, iters);
		bench_step(&e, iters);
		env_release(&e);
	}
}
