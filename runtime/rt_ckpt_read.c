/*
 * rt_ckpt_read: metadata.json read back into a struct rt_ckpt_index and
 * checked against the model and plan of this run (rt_ckpt_index.h's
 * rt_ckpt_index_load); rt_ckpt_index.c builds and writes it,
 * rt_ckpt_cover.c proves it.
 */
#include "rt_ckpt_index.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_ckpt_dir.h"
#include "rt_ckpt_int.h"
#include "rt_err.h"

/* ---- reading ------------------------------------------------------------ */

/* obj[key] as an integer in [min, max]. */
static int jint(const json_t *obj, const char *key, long long min,
		long long max, long long *out, char *why)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		return rt_ckpt_fail(why, "'%s' is %s; want an integer in [%lld, %lld]",
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
		return rt_ckpt_fail(why, "%s of a piece of %s is not a list of %zu "
			    "integers", what, t->key, n);
	for (size_t d = 0; d < n; d++) {
		json_t *v = json_array_get(a, d);
		long long *out = n == 1 || d == 1 ? j : i;

		if (!json_is_integer(v))
			return rt_ckpt_fail(why, "%s of a piece of %s is not a list of "
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
		return rt_ckpt_fail(why, "'files' is not a list of at most %d files",
			    RT_MAX_WORLD);
	x->f = calloc(n ? n : 1, sizeof(*x->f));
	if (!x->f)
		return rt_ckpt_fail(why, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *o = json_array_get(a, i);
		const char *name = json_string_value(json_object_get(o,
								     "name"));
		long long rank;

		if (!name || !*name || strlen(name) >= sizeof(x->f[0].name) ||
		    strchr(name, '/') || name[0] == '.')
			return rt_ckpt_fail(why, "file %zu has no plain name", i);
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
		return rt_ckpt_fail(why, "a piece of %s names file '%s', which is not "
			    "in 'files'", t->key, file ? file : "(none)");
	/* bounded here, so that offset + shape (at most twice a tensor's
	 * side) cannot wrap in anything that reads the piece */
	if (q->r0 < 0 || q->c0 < 0 || q->r0 >= t->rows || q->c0 >= t->cols) {
		char at[48], want[48];

		return rt_ckpt_fail(why, "a piece of %s in %s has offset %s, "
			    "outside the tensor's shape %s", t->key, file,
			    rt_ckpt_index_at(t, q->r0, q->c0, at, 48),
			    rt_ckpt_index_at(t, t->rows, t->cols, want, 48));
	}
	if (q->nr < 0 || q->nc < 0 || q->nr > t->rows || q->nc > t->cols ||
	    q->byte_off + q->nr * q->nc * 4 > x->f[q->file].bytes)
		return rt_ckpt_fail(why, "a piece of %s lies past the end of %s (%lld "
			    "bytes)", t->key, file, x->f[q->file].bytes);
	errno = 0;
	q->hash = hash ? strtoull(hash, &end, 16) : 0;
	if (!hash || strlen(hash) != 16 || errno || *end)
		return rt_ckpt_fail(why, "a piece of %s has no 16-digit fnv1a64",
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
		return rt_ckpt_fail(why, "'tensors' is not a list of the model's %d "
			    "tensors", x->nt);
	for (size_t i = 0; i < n; i++)
		total += json_array_size(json_object_get(json_array_get(a, i),
							 "pieces"));
	x->pc = calloc(total ? total : 1, sizeof(*x->pc));
	if (!x->pc)
		return rt_ckpt_fail(why, "out of memory");
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
			return rt_ckpt_fail(why, "no tensor %s", t->key);
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
			return rt_ckpt_fail(why, "tensor %s is not float32 of shape %s "
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
		return rt_ckpt_fail(why, "out of memory");
	if (stat(path, &st)) {
		*missing = 1;
		rc = rt_ckpt_fail(why, "%s: %s", path, strerror(errno));
	} else if (!(f = rt_ckpt_dir_open_regular(path, how, sizeof(how)))) {
		rc = rt_ckpt_fail(why, "%s: %s", path, how);
	} else if (st.st_size > RT_CKPT_MAX_META_BYTES) {
		rc = rt_ckpt_fail(why, "%s is %lld bytes, more than the %lld a "
			  "checkpoint of gtplan-run needs", path,
			  (long long)st.st_size, RT_CKPT_MAX_META_BYTES);
	} else if (!(*out = json_loadf(f, JSON_REJECT_DUPLICATES, &je))) {
		rc = rt_ckpt_fail(why, "%s:%d: not valid JSON (%s): truncated or "
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
