/*
 * rt_ckpt_index: a checkpoint's index, its proof of coverage and its
 * metadata.json (see rt_ckpt_index.h).
 */
#include "rt_ckpt_index.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_ckpt_dir.h"
#include "rt_err.h"
#include "rt_pp.h"

/* The key prefix of each group. */
static const char *const group_prefix[RT_CKPT_NGROUPS] = {
	"", "optimizer.state.exp_avg.", "optimizer.state.exp_avg_sq.",
};

static int fail(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail(char *why, const char *fmt, ...)
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

/* ---- coverage ----------------------------------------------------------- */

/* Marks piece k's elements in owner (one int per element of its tensor,
 * -1 when free); -1 with why when the piece leaves its tensor or claims an
 * element another piece has. */
static int claim(const struct rt_ckpt_index *x, long long k, int *owner,
		 long long *covered, char *why)
{
	const struct rt_ckpt_piece *q = &x->pc[k];
	const struct rt_ckpt_tensor *t = &x->t[q->tensor];
	char a[48], b[48], c[48];

	if (q->r0 < 0 || q->c0 < 0 || q->nr < 1 || q->nc < 1 ||
	    q->r0 + q->nr > t->rows || q->c0 + q->nc > t->cols)
		return fail(why, "the piece of %s at %s of shape %s (rank %d) "
			    "is empty or lies outside the tensor's shape %s",
			    t->key, rt_ckpt_index_at(t, q->r0, q->c0, a, 48),
			    rt_ckpt_index_at(t, q->nr, q->nc, b, 48),
			    x->f[q->file].rank,
			    rt_ckpt_index_at(t, t->rows, t->cols, c, 48));
	for (long long r = q->r0; r < q->r0 + q->nr; r++)
		for (long long col = q->c0; col < q->c0 + q->nc; col++) {
			int *o = &owner[r * t->cols + col];

			if (*o >= 0)
				return fail(why, "element %s of %s is saved "
					    "twice, by ranks %d and %d: each "
					    "element needs exactly one main "
					    "replica", rt_ckpt_index_at(t, r,
					    col, a, 48), t->key,
					    x->f[x->pc[*o].file].rank,
					    x->f[q->file].rank);
			*o = (int)k;
			(*covered)++;
		}
	return 0;
}

int rt_ckpt_index_validate(const struct rt_ckpt_index *x, char *why)
{
	long long most = 1, k = 0;
	int *owner, rc = 0;
	char a[48];

	for (int i = 0; i < x->nt; i++)
		if (x->t[i].rows * x->t[i].cols > most)
			most = x->t[i].rows * x->t[i].cols;
	if (!(owner = malloc((size_t)most * sizeof(int))))
		return fail(why, "out of memory");
	for (int i = 0; i < x->nt && !rc; i++) {
		const struct rt_ckpt_tensor *t = &x->t[i];
		long long n = t->rows * t->cols, covered = 0;

		for (long long e = 0; e < n; e++)
			owner[e] = -1;
		for (; k < x->np && x->pc[k].tensor == i && !rc; k++)
			rc = claim(x, k, owner, &covered, why);
		for (long long e = 0; e < n && !rc && covered < n; e++)
			if (owner[e] < 0)
				rc = fail(why, "element %s of %s is saved by "
					  "no rank (%lld of %lld elements "
					  "covered)",
					  rt_ckpt_index_at(t, e / t->cols,
							   e % t->cols, a, 48),
					  t->key, covered, n);
	}
	if (!rc && k != x->np)
		rc = fail(why, "a piece names no tensor of the model");
	free(owner);
	return rc;
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

/* ---- reading ------------------------------------------------------------ */

/* obj[key] as an integer in [min, max]. */
static int jint(const json_t *obj, const char *key, long long min,
		long long max, long long *out, char *why)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		return fail(why, "'%s' is %s; want an integer in [%lld, %lld]",
			    key, v ? "out of range or not an integer" :
			    "missing", min, max);
	*out = json_integer_value(v);
	return 0;
}

static int jdims(const json_t *a, const struct rt_ckpt_tensor *t, long long *i,
		 long long *j, const char *what, char *why)
{
	size_t n = (size_t)t->ndim;

	if (!json_is_array(a) || json_array_size(a) != n)
		return fail(why, "%s of a piece of %s is not a list of %zu "
			    "integers", what, t->key, n);
	for (size_t d = 0; d < n; d++) {
		json_t *v = json_array_get(a, d);
		long long *out = n == 1 || d == 1 ? j : i;

		if (!json_is_integer(v))
			return fail(why, "%s of a piece of %s is not a list of "
				    "%zu integers", what, t->key, n);
		*out = json_integer_value(v);
	}
	if (n == 1) /* a 1-D tensor is one row: offset row 0, shape 1 row */
		*i = !strcmp(what, "shape");
	return 0;
}

static int read_files(struct rt_ckpt_index *x, const json_t *root, char *why)
{
	const json_t *a = json_object_get(root, "files");
	size_t n = json_array_size(a);

	if (!json_is_array(a) || n > RT_MAX_WORLD)
		return fail(why, "'files' is not a list of at most %d files",
			    RT_MAX_WORLD);
	x->f = calloc(n ? n : 1, sizeof(*x->f));
	if (!x->f)
		return fail(why, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *o = json_array_get(a, i);
		const char *name = json_string_value(json_object_get(o,
								     "name"));
		long long rank;

		if (!name || !*name || strlen(name) >= sizeof(x->f[0].name) ||
		    strchr(name, '/') || name[0] == '.')
			return fail(why, "file %zu has no plain name", i);
		snprintf(x->f[i].name, sizeof(x->f[i].name), "%s", name);
		if (jint(o, "bytes", 0, (long long)1 << 50, &x->f[i].bytes,
			 why) || jint(o, "rank", 0, RT_MAX_WORLD, &rank, why))
			return -1;
		x->f[i].rank = (int)rank;
		x->nf++;
	}
	return 0;
}

static int find_file(const struct rt_ckpt_index *x, const char *name)
{
	for (int i = 0; name && i < x->nf; i++)
		if (!strcmp(x->f[i].name, name))
			return i;
	return -1;
}

/* One piece of tensor t (index ti) from its JSON object. */
static int read_piece(struct rt_ckpt_index *x, int ti, const json_t *o,
		      char *why)
{
	const struct rt_ckpt_tensor *t = &x->t[ti];
	struct rt_ckpt_piece *q = &x->pc[x->np];
	const char *hash = json_string_value(json_object_get(o, "fnv1a64"));
	const char *file = json_string_value(json_object_get(o, "file"));
	char *end = NULL;

	q->tensor = ti;
	if (jdims(json_object_get(o, "offset"), t, &q->r0, &q->c0, "offset",
		  why) ||
	    jdims(json_object_get(o, "shape"), t, &q->nr, &q->nc, "shape",
		  why) ||
	    jint(o, "byte_offset", 0, (long long)1 << 50, &q->byte_off, why))
		return -1;
	if ((q->file = find_file(x, file)) < 0)
		return fail(why, "a piece of %s names file '%s', which is not "
			    "in 'files'", t->key, file ? file : "(none)");
	if (q->nr < 0 || q->nc < 0 || q->nr > t->rows || q->nc > t->cols ||
	    q->byte_off + q->nr * q->nc * 4 > x->f[q->file].bytes)
		return fail(why, "a piece of %s lies past the end of %s (%lld "
			    "bytes)", t->key, file, x->f[q->file].bytes);
	errno = 0;
	q->hash = hash ? strtoull(hash, &end, 16) : 0;
	if (!hash || strlen(hash) != 16 || errno || *end)
		return fail(why, "a piece of %s has no 16-digit fnv1a64",
			    t->key);
	x->np++;
	return 0;
}

/* The tensors and their pieces, matched by key to the model's. */
static int read_tensors(struct rt_ckpt_index *x, const json_t *root, char *why)
{
	const json_t *a = json_object_get(root, "tensors");
	size_t n = json_array_size(a), total = 0;
	char want[48];

	/* n tensors and each of the model's keys among them: no key twice */
	if (!json_is_array(a) || n != (size_t)x->nt)
		return fail(why, "'tensors' is not a list of the model's %d "
			    "tensors", x->nt);
	for (size_t i = 0; i < n; i++)
		total += json_array_size(json_object_get(json_array_get(a, i),
							 "pieces"));
	x->pc = calloc(total ? total : 1, sizeof(*x->pc));
	if (!x->pc)
		return fail(why, "out of memory");
	/* pieces grouped by tensor, in the model's order */
	for (int ti = 0; ti < x->nt; ti++) {
		const struct rt_ckpt_tensor *t = &x->t[ti];
		const json_t *o = NULL, *shape, *pieces;

		for (size_t i = 0; i < n && !o; i++) {
			const char *key = json_string_value(json_object_get(
				json_array_get(a, i), "key"));

			if (key && !strcmp(key, t->key))
				o = json_array_get(a, i);
		}
		if (!o)
			return fail(why, "no tensor %s", t->key);
		shape = json_object_get(o, "shape");
		pieces = json_object_get(o, "pieces");
		rt_ckpt_index_at(t, t->rows, t->cols, want, sizeof(want));
		if (json_array_size(shape) != (size_t)t->ndim ||
		    json_integer_value(json_array_get(shape, 0)) !=
		    (t->ndim == 1 ? t->cols : t->rows) ||
		    (t->ndim == 2 && json_integer_value(json_array_get(shape,
							1)) != t->cols) ||
		    strcmp(json_string_value(json_object_get(o, "dtype")) ?
			   json_string_value(json_object_get(o, "dtype")) : "",
			   "float32") || !json_is_array(pieces) ||
		    json_array_size(pieces) > RT_MAX_WORLD)
			return fail(why, "tensor %s is not float32 of shape %s "
				    "with at most %d pieces", t->key, want,
				    RT_MAX_WORLD);
		for (size_t i = 0; i < json_array_size(pieces); i++)
			if (read_piece(x, ti, json_array_get(pieces, i), why))
				return -1;
	}
	return 0;
}

/* metadata.json, parsed, and the checks every rank makes alike. */
static int read_meta(const char *dir, json_t **out, char *why, int *missing)
{
	char *path = rt_ckpt_index_path(dir, RT_CKPT_META), how[128];
	struct stat st;
	json_error_t je;
	FILE *f = NULL;
	int rc = 0;

	*out = NULL;
	if (!path)
		return fail(why, "out of memory");
	if (stat(path, &st)) {
		*missing = 1;
		rc = fail(why, "%s: %s", path, strerror(errno));
	} else if (!(f = rt_ckpt_dir_open_regular(path, how, sizeof(how)))) {
		rc = fail(why, "%s: %s", path, how);
	} else if (st.st_size > RT_CKPT_MAX_META_BYTES) {
		rc = fail(why, "%s is %lld bytes, more than the %lld a "
			  "checkpoint of gtplan-run needs", path,
			  (long long)st.st_size, RT_CKPT_MAX_META_BYTES);
	} else if (!(*out = json_loadf(f, JSON_REJECT_DUPLICATES, &je))) {
		rc = fail(why, "%s:%d: not valid JSON (%s): truncated or "
			  "damaged", path, je.line, je.text);
	}
	if (f)
		fclose(f);
	free(path);
	return rc;
}

/* The optimizer block: present, the run's optimizer, its step the
 * checkpoint's (Adam's bias correction counts from it). */
static int check_optimizer(const struct rt_model *m, const json_t *root,
			   const char *dir, long long step)
{
	const json_t *o = json_object_get(root, "optimizer");
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *want = m->sgd ? "sgd" : "adam";
	char why[RT_CKPT_WHY] = "is missing";
	long long n = -1;

	if (o && (!name || (strcmp(name, "adam") && strcmp(name, "sgd"))))
		snprintf(why, sizeof(why), "names no optimizer (adam, sgd)");
	else if (o && !jint(o, "step", 0, (long long)1 << 53, &n, why))
		snprintf(why, sizeof(why), "counts %lld steps, the checkpoint "
			 "is of step %lld", n, step);
	if (!o || n != step)
		return rt_error_once(RT_ECKPT, "--load %s: %s: the optimizer "
				     "block %s: the metadata is damaged or "
				     "mixed from two saves; save again", dir,
				     RT_CKPT_META, why);
	if (strcmp(name, want))
		return rt_error_once(RT_ECKPT, "--load %s: the checkpoint's "
				     "optimizer is %s, this run's is %s: its "
				     "state (Adam's m and v, the step) would "
				     "not continue the training; run with "
				     "--optimizer %s", dir, name, want, name);
	return 0;
}

/* The header against the model: format, sizes, data settings. Sets *step
 * and writes a note of the layout. RT_ECKPT reported once on refusal. */
static int check_header(const struct rt_model *m, const json_t *root,
			const char *dir, long long *step)
{
	const struct rt_shape *s = &m->s;
	const json_t *model = json_object_get(root, "model");
	const json_t *data = json_object_get(root, "data");
	const json_t *lay = json_object_get(root, "layout");
	const char *fmt = json_string_value(json_object_get(root, "format"));
	const char *order = json_string_value(json_object_get(root,
							      "byte_order"));
	long long v[13];
	char why[RT_CKPT_WHY];
	static const char *const names[] = {
		"hidden", "ffn", "layers", "vocab", "seq_len", "global_batch",
		"world", "tp", "cp", "gtp", "dp_replicate", "seed", "step",
	};

	if (!fmt || strcmp(fmt, RT_CKPT_FORMAT))
		return rt_error_once(RT_ECKPT, "--load %s: format '%s'; this "
				     "gtplan-run reads %s only: save the "
				     "checkpoint again with it", dir,
				     fmt ? fmt : "(none)", RT_CKPT_FORMAT);
	for (int i = 0; i < 13; i++) {
		const json_t *o = i < 4 ? model : i < 6 ? data : i < 11 ? lay :
				  root;
		const char *in = i < 4 ? "model" : i < 6 ? "data" : i < 11 ?
				 "layout" : "the top level";

		if (jint(o, names[i], i < 11 ? 1 : i == 11 ? LLONG_MIN : 0,
			 i == 11 ? LLONG_MAX : (long long)1 << 53, &v[i], why))
			return rt_error_once(RT_ECKPT, "--load %s: %s: in %s, "
					     "%s; the metadata is damaged: "
					     "save again", dir, RT_CKPT_META,
					     in, why);
	}
	if (!order || strcmp(order, rt_ckpt_index_byte_order()))
		return rt_error_once(RT_ECKPT, "--load %s: the pieces are in "
				     "%s-endian byte order, this host is %s-"
				     "endian: load it on a host like the one "
				     "that saved it", dir, order ? order : "?",
				     rt_ckpt_index_byte_order());
	if (v[0] != s->h || v[1] != s->ffn || v[2] != s->layers_all ||
	    v[3] != s->vocab)
		return rt_error_once(RT_ECKPT, "--load %s: the checkpoint's "
				     "model is hidden %lld, ffn %lld, %lld "
				     "layers, vocab %lld; the plan's is hidden "
				     "%lld, ffn %lld, %lld layers, vocab %lld: "
				     "load it with a plan of the checkpoint's "
				     "gtplan.runtime sizes", dir, v[0], v[1],
				     v[2], v[3], s->h, s->ffn, s->layers_all,
				     s->vocab);
	if (v[11] != (long long)m->seed || v[4] != s->seq_len ||
	    v[5] != s->global_batch)
		return rt_error_once(RT_ECKPT, "--load %s: the checkpoint was "
				     "trained with seed %lld, seq_len %lld, "
				     "global batch %lld; this run has seed "
				     "%lld, seq_len %lld, global batch %lld, "
				     "so its data would not continue where "
				     "the checkpoint stopped: set "
				     "gtplan.runtime.seed, gtplan.runtime."
				     "seq_len and the global batch to the "
				     "checkpoint's", dir, v[11], v[4], v[5],
				     (long long)m->seed, s->seq_len,
				     s->global_batch);
	*step = v[12];
	rt_note("--load %s: step %lld, saved on %lld ranks = TP %lld x CP "
		"%lld x GTP %lld x DP %lld", dir, v[12], v[6], v[7], v[8], v[9],
		v[10]);
	return 0;
}

int rt_ckpt_index_load(struct rt_ckpt_index *x, const struct rt_model *m,
		       const char *dir, long long *step)
{
	json_t *root = NULL;
	char why[RT_CKPT_WHY];
	int rc = 0, missing = 0;

	if (read_meta(dir, &root, why, &missing))
		rc = missing ?
		     rt_error_once(RT_EIO, "--load %s: no checkpoint there "
				   "(%s); a save that stopped part-way leaves "
				   "none: load a directory that --save "
				   "completed", dir, why) :
		     rt_error_once(RT_ECKPT, "--load %s: %s; save again", dir,
				   why);
	if (!rc)
		rc = check_header(m, root, dir, step);
	if (!rc)
		rc = check_optimizer(m, root, dir, *step);
	if (!rc && (read_files(x, root, why) || read_tensors(x, root, why) ||
		    rt_ckpt_index_validate(x, why)))
		rc = rt_error_once(RT_ECKPT, "--load %s: %s: %s; the metadata "
				   "is damaged: save again", dir, RT_CKPT_META,
				   why);
	json_decref(root);
	return rc;
}
