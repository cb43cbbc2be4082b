/*
 * rt_ckpt_index: a checkpoint's index and its metadata.json (see
 * rt_ckpt_index.h); the proof of coverage is rt_ckpt_cover.c's.
 */
#include "rt_ckpt_index.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt_int.h"
#include "rt_err.h"
#include "rt_pp.h"

/* The key prefix of each group. */
static const char *const group_prefix[RT_CKPT_NGROUPS] = {
	"", "optimizer.state.exp_avg.", "optimizer.state.exp_avg_sq.",
};

int rt_ckpt_fail(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, RT_CKPT_WHY, fmt, ap);
	va_end(ap);
	return -1;
}

char *rt_ckpt_index_path(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s/%s", dir, name);
	return s;
}

const char *rt_ckpt_index_byte_order(void)
{
	const uint16_t one = 1;

	return *(const unsigned char *)&one ? "little" : "big";
}

const char *rt_ckpt_index_at(const struct rt_ckpt_tensor *t, long long i,
			     long long j, char *buf, size_t cap)
{
	if (t->ndim == 1)
		snprintf(buf, cap, "[%lld]", j);
	else
		snprintf(buf, cap, "[%lld, %lld]", i, j);
	return buf;
}

/* ---- the tensors and this rank's regions --------------------------------- */

/* The logical region of GTP shard gr of w's TP-local tensor: rows
 * [gr S, (gr+1) S) of it clipped to its real rows (GTP tail padding and
 * vocabulary padding are never saved), at (row0, col0). */
static void sharded(struct rt_ckpt_tensor *t, const struct rt_weight *w, int gr)
{
	long long first = gr * w->shard, n = w->d0_real - first;

	t->ndim = 2;
	t->rows = w->rows;
	t->cols = w->cols;
	t->nr = n < 0 ? 0 : n > w->shard ? w->shard : n;
	t->r0 = w->row0 + first;
	t->c0 = w->col0;
	t->nc = w->d1;
	t->off = w->off;
}

/* linear_fc1's half (0 gate, 1 up) as a tensor [F, h]: the rows of GTP
 * shard gr that fall in the half of the TP-local [gate_t; up_t]. Megatron
 * keeps one key [gate; up] with two fragments per rank
 * (apply_swiglu_sharded_factory); here each rank's region of a tensor is
 * one rectangle, so the halves are two keys. */
static void glu_half(struct rt_ckpt_tensor *t, const struct rt_weight *w,
		     int t_rank, int gr, int half)
{
	long long fl = w->d0 / 2, a = gr * w->shard, b = a + w->shard;
	long long lo = half ? fl : 0, hi = half ? w->d0 : fl;

	a = a > lo ? a : lo;
	b = b < hi ? b : hi;
	t->ndim = 2;
	t->rows = w->rows / 2;
	t->cols = w->cols;
	t->nr = b > a ? b - a : 0;
	t->r0 = (long long)t_rank * fl + (a - lo);
	t->c0 = 0;
	t->nc = w->d1;
	t->off = w->off + (a - gr * w->shard) * w->d1;
}

/* A 1-D replicated tensor of n elements at off; a TP-split one (the qkv
 * bias) is n x TP long and this rank holds its slice t. */
static void vec(struct rt_ckpt_tensor *t, long long n, long long off,
		int tp_split, int tp, int t_rank)
{
	t->ndim = 1;
	t->rows = t->nr = 1;
	t->cols = tp_split ? n * tp : n;
	t->c0 = tp_split ? (long long)t_rank * n : 0;
	t->nc = n;
	t->off = off;
}

/* Writers of each kind of tensor (rt_ckpt_index_init). */
enum { WR_SHARD, WR_REP, WR_TP_SPLIT };

struct adder {
	struct rt_ckpt_tensor *t;
	long long i;
	const char *pre;
	int writer[3];
};

static struct rt_ckpt_tensor *add(struct adder *a, int kind,
				  const char *fmt, long long l)
{
	struct rt_ckpt_tensor *t = &a->t[a->i++];
	char key[96];

	snprintf(key, sizeof(key), fmt, l);
	snprintf(t->key, sizeof(t->key), "%s%s", a->pre, key);
	t->writer = a->writer[kind];
	return t;
}

#define LAYER "decoder.layers.%lld."

/* Model layer l, held here as local layer li (PP: rt_pp.c). */
static void add_layer(struct adder *a, const struct rt_model *m,
		      long long li, long long l)
{
	const struct rt_shape *s = &m->s;
	const struct rt_layer *ly = &m->layer[li];

	vec(add(a, WR_REP, LAYER "self_attention.linear_qkv.layer_norm_weight",
		l), s->h, ly->ln1, 0, s->tp, s->t);
	sharded(add(a, WR_SHARD, LAYER "self_attention.linear_qkv.weight", l),
		ly->qkv, s->gr);
	if (ly->bias >= 0)
		vec(add(a, WR_TP_SPLIT, LAYER "self_attention.linear_qkv.bias",
			l), s->z.qkv_l, ly->bias, 1, s->tp, s->t);
	if (ly->qn >= 0) {
		vec(add(a, WR_REP, LAYER "self_attention.q_layernorm.weight",
			l), s->hd, ly->qn, 0, s->tp, s->t);
		vec(add(a, WR_REP, LAYER "self_attention.k_layernorm.weight",
			l), s->hd, ly->kn, 0, s->tp, s->t);
	}
	sharded(add(a, WR_SHARD, LAYER "self_attention.linear_proj.weight", l),
		ly->proj, s->gr);
	vec(add(a, WR_REP, LAYER "mlp.linear_fc1.layer_norm_weight", l), s->h,
	    ly->ln2, 0, s->tp, s->t);
	glu_half(add(a, WR_SHARD, LAYER "mlp.linear_fc1.gate.weight", l),
		 ly->fc1, s->t, s->gr, 0);
	glu_half(add(a, WR_SHARD, LAYER "mlp.linear_fc1.up.weight", l),
		 ly->fc1, s->t, s->gr, 1);
	sharded(add(a, WR_SHARD, LAYER "mlp.linear_fc2.weight", l), ly->fc2,
		s->gr);
}

/* At most this many tensors per layer (qkv norm, qkv, bias, q and k norm,
 * proj, fc1 norm, gate, up, fc2). */
#define PER_LAYER 10

/* Entries [from, a->i) are another stage's tensors: keys, shapes only. */
static void elsewhere(struct adder *a, long long from)
{
	for (long long j = from; j < a->i; j++) {
		a->t[j].nr = a->t[j].nc = a->t[j].off = 0;
		a->t[j].writer = 0;
	}
}

/* A [V, h] tensor: w's region, or (w NULL) another stage's; the last
 * stage's tied copy is loaded, never written (stage 0 writes it). */
static void vocab_tensor(struct adder *a, const struct rt_model *m,
			 const char *key, const struct rt_weight *w)
{
	struct rt_ckpt_tensor *t = add(a, WR_SHARD, key, 0);

	if (w) {
		sharded(t, w, m->s.gr);
		t->writer = w == m->emb || !m->s.tie ? t->writer : 0;
		return;
	}
	t->ndim = 2;
	t->rows = m->s.vocab;
	t->cols = m->s.h;
	elsewhere(a, a->i - 1);
}

int rt_ckpt_index_init(struct rt_ckpt_index *x, const struct rt_model *m,
		       const struct rt_plan *p)
{
	const struct rt_shape *s = &m->s;
	const int *c = p->ranks[p->me].c;
	int shard_w = !c[RT_DP] && !c[RT_CP];
	long long per = PER_LAYER * s->layers_all + 3;
	struct adder a = {
		calloc((size_t)(RT_CKPT_NGROUPS * per), sizeof(*a.t)), 0, "",
		{ shard_w, shard_w && !c[RT_TP] && !c[RT_GTP],
		  shard_w && !c[RT_GTP] },
	};

	if (!a.t)
		return rt_error(RT_ENOMEM, "out of memory");
	for (int g = 0; g < RT_CKPT_NGROUPS; g++) {
		long long first = a.i;

		a.pre = group_prefix[g];
		vocab_tensor(&a, m, "embedding.word_embeddings.weight",
			     m->emb ? m->emb : s->tie ? m->out : NULL);
		for (long long l = 0, at = 0; l < s->layers_all; l++) {
			at = a.i; /* another stage's: local layer 0's shapes */
			add_layer(&a, m, rt_pp_local(s, l) >= 0 ?
				  rt_pp_local(s, l) : 0, l);
			if (rt_pp_local(s, l) < 0)
				elsewhere(&a, at);
		}
		vec(add(&a, WR_REP, "decoder.final_layernorm.weight", 0), s->h,
		    m->lnf, 0, s->tp, s->t);
		if (!s->post)
			elsewhere(&a, a.i - 1);
		if (!s->tie)
			vocab_tensor(&a, m, "output_layer.weight", m->out);
		for (long long j = first; j < a.i; j++)
			a.t[j].group = g;
	}
	memset(x, 0, sizeof(*x));
	x->t = a.t;
	x->nt = (int)a.i;
	return 0;
}

void rt_ckpt_index_release(struct rt_ckpt_index *x)
{
	free(x->t);
	free(x->pc);
	free(x->f);
	memset(x, 0, sizeof(*x));
}

/* ---- writing ------------------------------------------------------------ */

static json_t *dims(const struct rt_ckpt_tensor *t, long long i, long long j)
{
	return t->ndim == 1 ? json_pack("[I]", (json_int_t)j) :
	       json_pack("[I, I]", (json_int_t)i, (json_int_t)j);
}

static json_t *meta_json(const struct rt_model *m, const struct rt_plan *p,
			 const struct rt_ckpt_index *x)
{
	const struct rt_shape *s = &m->s;
	json_t *root, *files, *tensors;
	long long k = 0;

	root = json_pack("{s:s, s:I, s:I, s:s, s:{s:I, s:I, s:I, s:I}, "
			 "s:{s:I, s:I}, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i}, "
			 "s:{s:s, s:I}}",
		"format", RT_CKPT_FORMAT, "step", (json_int_t)m->step,
		"seed", (json_int_t)m->seed,
		"byte_order", rt_ckpt_index_byte_order(),
		"model", "hidden", (json_int_t)s->h, "ffn", (json_int_t)s->ffn,
		"layers", (json_int_t)s->layers_all, "vocab",
		(json_int_t)s->vocab,
		"data", "seq_len", (json_int_t)s->seq_len, "global_batch",
		(json_int_t)s->global_batch,
		"layout", "world", p->world, "tp", s->tp, "cp", s->cp, "gtp",
		s->g, "dp_replicate", p->size[RT_DP], "pp", p->size[RT_PP],
		"lanes", s->lanes,
		"optimizer", "name", m->sgd ? "sgd" : "adam", "step",
		(json_int_t)m->step);
	files = json_array();
	tensors = json_array();
	if (!root || !files || !tensors ||
	    json_object_set_new(root, "files", files) ||
	    json_object_set_new(root, "tensors", tensors))
		goto nomem;
	for (int i = 0; i < x->nf; i++)
		if (json_array_append_new(files, json_pack("{s:s, s:i, s:I}",
				"name", x->f[i].name, "rank", x->f[i].rank,
				"bytes", (json_int_t)x->f[i].bytes)))
			goto nomem;
	for (int i = 0; i < x->nt; i++) {
		const struct rt_ckpt_tensor *t = &x->t[i];
		json_t *pieces = json_array();

		if (json_array_append_new(tensors, json_pack("{s:s, s:o, s:s, "
				"s:o}", "key", t->key, "shape",
				dims(t, t->rows, t->cols), "dtype", "float32",
				"pieces", pieces)))
			goto nomem;
		for (; k < x->np && x->pc[k].tensor == i; k++) {
			const struct rt_ckpt_piece *q = &x->pc[k];
			char hash[20];

			snprintf(hash, sizeof(hash), "%016llx",
				 (unsigned long long)q->hash);
			if (json_array_append_new(pieces, json_pack("{s:o, "
					"s:o, s:s, s:I, s:s, s:i}", "offset",
					dims(t, q->r0, q->c0), "shape",
					dims(t, q->nr, q->nc), "file",
					x->f[q->file].name, "byte_offset",
					(json_int_t)q->byte_off, "fnv1a64",
					hash, "rank", x->f[q->file].rank)))
				goto nomem;
		}
	}
	return root;
nomem:
	json_decref(root);
	return NULL;
}

int rt_ckpt_index_dump(const struct rt_ckpt_index *x, const struct rt_model *m,
		       const struct rt_plan *p, FILE *f)
{
	json_t *root = meta_json(m, p, x);
	int rc = root ? json_dumpf(root, f, JSON_INDENT(1) | JSON_SORT_KEYS) :
		 -1;

	json_decref(root);
	if (!rc && fputc('\n', f) == EOF)
		rc = -1;
	return rc;
}
