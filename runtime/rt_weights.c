/*
 * rt_weights: the GTP side of the model's weights (see rt_model.h): the
 * all-gather of a weight just in time or one ahead (prefetch), the
 * reduce-scatter of its gradient, bf16 rounding, and the gathered dump of
 * every logical tensor (--dump-weights).
 */
#include "rt_model.h"

#include <stdlib.h>
#include <string.h>

#include "rt_err.h"
#include "rt_pp.h"

/* ---- GTP gather and scatter -------------------------------------------- */

int rt_gather_weight_exact(struct rt_model *m, const struct rt_weight *w)
{
	return coll_all_gather(m->c, RT_K_GTP, w->name, m->param + w->off,
			       m->full, w->shard * w->d1);
}

int rt_weights_refresh(struct rt_model *m)
{
	if (m->bf16 && !m->param16_ok)
		KCHECK(kern_to_bf16(m->k, m->n_shard, m->param, m->param16));
	m->param16_ok = m->bf16;
	return 0;
}

/* w's shard as bf16 (rt_weights_refresh). */
static const uint16_t *shard16_of(const struct rt_model *m,
				  const struct rt_weight *w)
{
	return m->param16 + w->off;
}

/* In bf16 runs with one GTP rank the gathered tensor is the shard itself:
 * no gather, no copy (a group of one records nothing either). */
static int gather_is_own(const struct rt_model *m)
{
	return m->bf16 && m->s.g == 1;
}

int rt_gather_weight(struct rt_model *m, const struct rt_weight *w,
		     const uint16_t **full16)
{
	long long n = w->shard * w->d1;

	*full16 = NULL;
	if (!m->bf16)
		return rt_gather_weight_exact(m, w);
	*full16 = gather_is_own(m) ? shard16_of(m, w) : m->full16;
	if (!gather_is_own(m))
		RCHECK(coll_all_gather_bf16(m->c, RT_K_GTP, w->name,
					    shard16_of(m, w), m->full16, n));
	return 0;
}

/* Buffer b (0 or 1) of the prefetch pair. */
static float *full_of(struct rt_model *m, int b)
{
	return b ? m->full_b : m->full;
}

static uint16_t *full16_of(struct rt_model *m, int b)
{
	return b ? m->full16_b : m->full16;
}

static int start_gather(struct rt_model *m, int i)
{
	const struct rt_weight *w = m->seq[i];
	long long n = w->shard * w->d1;
	int b = i % 2;

	if (!m->bf16)
		return coll_all_gather_start(m->c, b, RT_K_GTP, w->name,
					     m->param + w->off, full_of(m, b),
					     n, 4);
	if (gather_is_own(m))
		return 0;
	return coll_all_gather_start(m->c, b, RT_K_GTP, w->name,
				     shard16_of(m, w), full16_of(m, b), n, 2);
}

int rt_weights_begin(struct rt_model *m, int forward, int chunk)
{
	const struct rt_shape *s = &m->s;
	long long L = s->chunk_layers, l0 = chunk * L;
	int head = s->post && chunk == s->vpp - 1, n = 0;

	/* at most 2 + 4 L weights: m->seq's size (rt_model_init) */
	if (forward ? s->pre && chunk == 0 : head)
		m->seq[n++] = forward ? m->emb : m->out;
	for (long long i = 0; i < L; i++) {
		const struct rt_layer *ly = &m->layer[l0 + (forward ? i :
						      L - 1 - i)];

		if (forward) {
			m->seq[n++] = ly->qkv;
			m->seq[n++] = ly->proj;
			m->seq[n++] = ly->fc1;
			m->seq[n++] = ly->fc2;
		} else {
			m->seq[n++] = ly->fc2;
			m->seq[n++] = ly->fc1;
			m->seq[n++] = ly->proj;
			m->seq[n++] = ly->qkv;
		}
	}
	if (forward && head)
		m->seq[n++] = m->out;
	m->seq_n = n;
	m->seq_next = 0;
	if (m->prefetch && n > 0)
		RCHECK(start_gather(m, 0));
	return 0;
}

int rt_weights_next(struct rt_model *m, const float **full,
		    const uint16_t **full16)
{
	int i = m->seq_next, b = i % 2;
	const struct rt_weight *w;
	const uint16_t *f16;

	if (i >= m->seq_n)
		return rt_error(RT_EPLAN, "a pass asked for more weights than "
				"it named");
	m->seq_next++;
	w = m->seq[i];
	*full16 = NULL;
	if (!m->prefetch) {
		RCHECK(rt_gather_weight(m, w, &f16));
		*full = m->full;
	} else {
		RCHECK(coll_all_gather_wait(m->c, b));
		f16 = !m->bf16 ? NULL : gather_is_own(m) ? shard16_of(m, w) :
		      full16_of(m, b);
		/* the next weight's gather runs while this one is used: into
		 * the other buffers, which the previous weight's calls,
		 * queued before this point, have finished reading in stream
		 * order (coll_nccl.c's GTP stream waits for them) */
		if (i + 1 < m->seq_n)
			RCHECK(start_gather(m, i + 1));
		*full = full_of(m, b);
	}
	if (f16) {
		*full = NULL;
		*full16 = f16;
	}
	return 0;
}

int rt_bf16(struct rt_model *m, float *x, long long n)
{
	if (m->bf16)
		KCHECK(kern_round_bf16(m->k, n, x));
	return 0;
}

int rt_bf16_copy(struct rt_model *m, float *x, uint16_t *x16, long long n)
{
	if (m->bf16 && x16)
		KCHECK(kern_round_bf16_copy(m->k, n, x, x16));
	else
		RCHECK(rt_bf16(m, x, n));
	return 0;
}

/* Gradients written in place: one GTP rank (rt_grad_out; the weights
 * then have no padding rows, rt_model.c's layout). */
static int grads_in_place(const struct rt_model *m)
{
	return m->s.g == 1;
}

float *rt_grad_out(struct rt_model *m, const struct rt_weight *w,
		   float *beta)
{
	long long i = w - m->w;

	if (grads_in_place(m)) {
		*beta = m->gfirst[i] ? 0.0f : 1.0f;
		m->gfirst[i] = 0;
		return m->grad + w->off;
	}
	*beta = 0.0f;
	return m->gfull;
}

int rt_grads_begin(struct rt_model *m)
{
	long long n = m->n_shard + m->n_rep;
	long long from = grads_in_place(m) ? m->n_shard : 0;

	memset(m->gfirst, grads_in_place(m), (size_t)m->n_w);
	KCHECK(kern_zero(m->k, m->grad + from, (size_t)(n - from) *
			 sizeof(float)));
	return 0;
}

int rt_scatter_grad(struct rt_model *m, const struct rt_weight *w,
		    float *gfull)
{
	if (gfull == m->grad + w->off) /* rt_grad_out: already there */
		return 0;
	KCHECK(kern_zero(m->k, gfull + w->d0 * w->d1,
			 (size_t)(w->pad * w->d1) * sizeof(float)));
	RCHECK(coll_reduce_scatter(m->c, RT_K_GTP, w->name, gfull, m->gshard,
				   w->shard * w->d1));
	KCHECK(kern_axpy(m->k, w->shard * w->d1, 1.0f, m->gshard,
			 m->grad + w->off));
	return 0;
}

/* ---- dump ----------------------------------------------------------------- */

static void write_tensor(FILE *f, const char *name, long long rows,
			 long long cols, const float *v, int *first)
{
	fprintf(f, "%s\n    {\"data\": [", *first ? "" : ",");
	for (long long i = 0; i < rows * cols; i++)
		fprintf(f, "%s%.9g", i ? (i % 8 ? ", " : ",\n      ") : "",
			(double)v[i]);
	fprintf(f, "], \"name\": \"%s\", \"shape\": [%lld, %lld]}", name, rows,
		cols);
	*first = 0;
}

/* The logical weight from its TP-local tensors, gathered in TP order. */
static void assemble(const struct rt_weight *w, const struct rt_shape *s,
		     const float *tp_parts, float *out)
{
	for (int t = 0; t < s->tp; t++) {
		const float *part = tp_parts + (long long)t * w->d0 * w->d1;
		long long real = w->split == RT_SPLIT_VOCAB ?
				 w->rows - (long long)t * w->d0 : w->d0;

		for (long long i = 0; i < w->d0 && i < real; i++) {
			long long lr = rt_weight_row(w, t, i);
			long long lc = w->split == RT_SPLIT_ROW ?
				       (long long)t * w->d1 : 0;

			memcpy(out + lr * w->cols + lc, part + i * w->d1,
			       (size_t)w->d1 * sizeof(float));
		}
	}
}

struct dump_ctx {
	FILE *f;
	float *parts, *host;
	int first, root;
	int line; /* the rank that assembles its stage's tensors: tp, cp,
		     gtp and dp coordinates 0 (world rank 0 on stage 0) */
};

/* The tensor the owner stage's line rank assembled in d->host is written
 * by world rank 0, which receives it first when another stage holds it
 * (point-to-point over pp). */
static int emit(struct rt_model *m, struct dump_ctx *d, const char *name,
		long long rows, long long cols, int owner)
{
	const struct rt_shape *s = &m->s;
	size_t bytes = (size_t)(rows * cols) * sizeof(float);

	if (s->pp > 1 && owner != 0 && d->line && s->p == owner) {
		KCHECK(kern_upload(m->k, m->gfull, d->host, bytes));
		RCHECK(coll_sendrecv(m->c, RT_K_PP, name, 0, m->gfull,
				     rows * cols, -1, NULL, 0));
	} else if (s->pp > 1 && owner != 0 && d->line && s->p == 0) {
		RCHECK(coll_sendrecv(m->c, RT_K_PP, name, -1, NULL, 0, owner,
				     m->gfull, rows * cols));
		RCHECK(coll_wait_last(m->c));
		KCHECK(kern_download(m->k, d->host, m->gfull, bytes));
	}
	if (d->root)
		write_tensor(d->f, name, rows, cols, d->host, &d->first);
	return 0;
}

/* w's logical tensor, assembled by the line rank of its stage. */
static int dump_weight(struct rt_model *m, const struct rt_weight *w,
		       struct dump_ctx *d)
{
	RCHECK(rt_gather_weight_exact(m, w));
	RCHECK(coll_gather(m->c, RT_K_TP, w->name, m->full, m->gfull,
			   w->d0 * w->d1, 0));
	if (!d->line)
		return 0;
	RCHECK(coll_wait_last(m->c)); /* the gather, under the watchdog */
	KCHECK(kern_download(m->k, d->parts, m->gfull, (size_t)(m->s.tp *
			     w->d0 * w->d1) * sizeof(float)));
	assemble(w, &m->s, d->parts, d->host);
	return 0;
}

/* A replicated parameter of n elements at off (the line rank); the qkv
 * bias is TP-split: gathered over TP first (every rank takes part). */
static int dump_rep(struct rt_model *m, const char *name, long long off,
		    long long n, int tp_split, struct dump_ctx *d)
{
	if (tp_split) {
		RCHECK(coll_gather(m->c, RT_K_TP, name, m->param + off,
				   m->gfull, n, 0));
		n *= m->s.tp;
	}
	if (!d->line)
		return 0;
	RCHECK(coll_wait_last(m->c));
	KCHECK(kern_download(m->k, d->host, tp_split ? m->gfull : m->param +
			     off, (size_t)n * sizeof(float)));
	return 0;
}

/* One tensor of the dump, in model order: a weight (w, or NULL where
 * another stage holds it) or a replicated vector (off). */
struct dump_item {
	char name[64];
	const struct rt_weight *w;
	long long rows, cols, off, n;
	int tp_split, owner;
};

static int dump_item(struct rt_model *m, const struct dump_item *it,
		     struct dump_ctx *d)
{
	if (it->owner == m->s.p && it->w)
		RCHECK(dump_weight(m, it->w, d));
	else if (it->owner == m->s.p)
		RCHECK(dump_rep(m, it->name, it->off, it->n, it->tp_split, d));
	return emit(m, d, it->name, it->rows, it->cols, it->owner);
}

/* Model layer l's tensors (dump order), held here when li >= 0. */
static int dump_layer(struct rt_model *m, long long l, struct dump_ctx *d)
{
	const struct rt_shape *s = &m->s;
	long long li = rt_pp_local(s, l), H = s->heads, G = s->kv_heads;
	const struct rt_layer *ly = li >= 0 ? &m->layer[li] : NULL;
	int q = rt_pp_owner(s, l);
	struct dump_item it[] = {
		{ "input_norm", NULL, 1, s->h, ly ? ly->ln1 : 0, s->h, 0, q },
		{ "qkv", ly ? ly->qkv : NULL, (H + 2 * G) * s->hd, s->h, 0, 0,
		  0, q },
		{ "qkv_bias", NULL, 1, s->z.qkv_l * s->tp, ly ? ly->bias : 0,
		  s->z.qkv_l, 1, s->qkv_bias ? q : -1 },
		{ "q_norm", NULL, 1, s->hd, ly ? ly->qn : 0, s->hd, 0,
		  s->qk_norm ? q : -1 },
		{ "k_norm", NULL, 1, s->hd, ly ? ly->kn : 0, s->hd, 0,
		  s->qk_norm ? q : -1 },
		{ "proj", ly ? ly->proj : NULL, s->h, H * s->hd, 0, 0, 0, q },
		{ "mlp_norm", NULL, 1, s->h, ly ? ly->ln2 : 0, s->h, 0, q },
		{ "fc1", ly ? ly->fc1 : NULL, 2 * s->ffn, s->h, 0, 0, 0, q },
		{ "fc2", ly ? ly->fc2 : NULL, s->h, s->ffn, 0, 0, 0, q },
	};

	for (size_t i = 0; i < sizeof(it) / sizeof(it[0]); i++) {
		char full[64];

		if (it[i].owner < 0)
			continue;
		snprintf(full, sizeof(full), "layers.%lld.%.24s", l,
			 it[i].name);
		memcpy(it[i].name, full, sizeof(full));
		RCHECK(dump_item(m, &it[i], d));
	}
	return 0;
}

int rt_model_dump(struct rt_model *m, FILE *f)
{
	const struct rt_shape *s = &m->s;
	/* the TP gather lands in gfull, so it must hold TP TP-local tensors
	 * (or the TP-gathered bias) */
	long long most = s->tp * m->full_n;
	struct dump_ctx d = { f, NULL, NULL, 1,
			      coll_rank(m->c, RT_K_WORLD) == 0,
			      !s->t && !s->c && !s->lane };
	struct dump_item emb = { "embedding", m->emb, s->vocab, s->h, 0, 0, 0,
				 0 };
	struct dump_item lnf = { "final_norm", NULL, 1, s->h, m->lnf, s->h, 0,
				 s->pp - 1 };
	struct dump_item out = { "output", m->out, s->vocab, s->h, 0, 0, 0,
				 s->pp - 1 };
	int rc = 0;

	coll_set_call(m->c, "dump", m->step);
	kern_free(m->k, m->gfull);
	m->gfull = NULL;
	RCHECK(rt_alloc_f(m, &m->gfull, most));
	d.parts = malloc((size_t)most * sizeof(float));
	d.host = malloc((size_t)most * sizeof(float));
	if (!d.parts || !d.host) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	if (d.root)
		fprintf(f, "{\"format\": \"gtplan-weights/2\", \"tensors\": [");
	rc = dump_item(m, &emb, &d);
	for (long long l = 0; !rc && l < s->layers_all; l++)
		rc = dump_layer(m, l, &d);
	if (!rc)
		rc = dump_item(m, &lnf, &d);
	if (!rc && !s->tie)
		rc = dump_item(m, &out, &d);
	if (!rc && d.root) {
		fprintf(f, "\n]}\n");
		if (fflush(f) || ferror(f))
			rc = rt_error(RT_EIO, "write error in the weight dump");
	}
out:
	free(d.parts);
	free(d.host);
	return rc;
}
