/*
 * rt_ckpt: sharded checkpoints of the runtime model (see rt_ckpt.h).
 */
#include "rt_ckpt.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rt_err.h"

/* Hostile-input limit: the largest metadata.json --load reads. */
#define CK_MAX_META_BYTES (64LL << 20)
/* Room for one reason in a message. */
#define CK_WHY 512
/* Per tensor, what a rank tells rank 0 of its piece: present, r0, c0, nr,
 * nc, byte offset, checksum; then one trailing slot: its file's bytes, or
 * -1 when it wrote no file. */
#define CK_SLOT 7

/* The arrays a checkpoint holds and their key prefixes. */
enum { CK_PARAM, CK_EXP_AVG, CK_EXP_AVG_SQ, CK_NGROUPS };
static const char *const group_prefix[CK_NGROUPS] = {
	"", "optimizer.state.exp_avg.", "optimizer.state.exp_avg_sq.",
};

/* One logical tensor and this rank's region of it; 1-D tensors have one
 * row. nr = 0: the rank holds no real element of it. */
struct ck_tensor {
	char key[128];
	int ndim, group, writer;
	long long rows, cols;
	long long r0, c0, nr, nc;
	long long off; /* the region's first element in the group's array */
};

struct ck_piece {
	int tensor, file;
	long long r0, c0, nr, nc, byte_off;
	uint64_t hash;
};

struct ck_file {
	char name[32];
	int rank;
	long long bytes;
};

/* A checkpoint's index: the tensors, their pieces (grouped by tensor, in
 * rank order) and the files. */
struct ck_index {
	struct ck_tensor *t;
	int nt, nf;
	long long np;
	struct ck_piece *pc;
	struct ck_file *f;
};

static int fail(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int fail(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, CK_WHY, fmt, ap);
	va_end(ap);
	return -1;
}

/* Every rank's status, so that all stop together (see rt_main's agree). */
static int agree(int rc)
{
	int all = coll_mpi_agree(rc);

	return rc ? rc : all ? RT_EPEER : 0;
}

static uint64_t fnv1a64(const void *data, size_t n)
{
	const unsigned char *b = data;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static const char *byte_order(void)
{
	const uint16_t one = 1;

	return *(const unsigned char *)&one ? "little" : "big";
}

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s/%s", dir, name);
	return s;
}

/* ---- the tensors and this rank's regions --------------------------------- */

static void sharded(struct ck_tensor *t, const struct rt_weight *w, int gr)
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

static void norm(struct ck_tensor *t, long long h, long long off)
{
	t->ndim = 1;
	t->rows = t->nr = 1;
	t->cols = t->nc = h;
	t->off = off;
}

/* The checkpoint's tensors in model order, for each group: embedding, per
 * layer its norm, fc1 and fc2, the final norm. Writers: the main replica
 * (dp_replicate and cp 0) of each shard; one rank for the norms. */
static int ck_tensors(const struct rt_model *m, const struct rt_plan *p,
		      struct ck_tensor **out, int *nt)
{
	const struct rt_shape *s = &m->s;
	const int *c = p->ranks[p->me].c;
	int shard_w = !c[RT_DP] && !c[RT_CP] && !c[RT_PP];
	int norm_w = shard_w && !c[RT_TP] && !c[RT_GTP];
	long long L = s->layers, per = 3 * L + 2, i = 0;
	struct ck_tensor *t = calloc((size_t)(CK_NGROUPS * per), sizeof(*t));

	if (!t)
		return rt_error(RT_ENOMEM, "out of memory");
	for (int g = 0; g < CK_NGROUPS; g++) {
		const char *pre = group_prefix[g];
		long long first = i;

		snprintf(t[i].key, sizeof(t[i].key), "%sembedding.word_"
			 "embeddings.weight", pre);
		sharded(&t[i++], &m->emb, s->gr);
		for (long long l = 0; l < L; l++) {
			snprintf(t[i].key, sizeof(t[i].key), "%sdecoder.layers."
				 "%lld.pre_mlp_layernorm.weight", pre, l);
			norm(&t[i++], s->h, m->norm_off + l * s->h);
			snprintf(t[i].key, sizeof(t[i].key), "%sdecoder.layers."
				 "%lld.mlp.linear_fc1.weight", pre, l);
			sharded(&t[i++], &m->fc1[l], s->gr);
			snprintf(t[i].key, sizeof(t[i].key), "%sdecoder.layers."
				 "%lld.mlp.linear_fc2.weight", pre, l);
			sharded(&t[i++], &m->fc2[l], s->gr);
		}
		snprintf(t[i].key, sizeof(t[i].key), "%sdecoder.final_"
			 "layernorm.weight", pre);
		norm(&t[i++], s->h, m->norm_off + L * s->h);
		for (long long j = first; j < i; j++) {
			t[j].group = g;
			t[j].writer = t[j].ndim == 1 ? norm_w : shard_w;
		}
	}
	*out = t;
	*nt = (int)i;
	return 0;
}

static void index_release(struct ck_index *x)
{
	free(x->t);
	free(x->pc);
	free(x->f);
	memset(x, 0, sizeof(*x));
}

/* "[i, j]" or "[j]" for an element or offset of t. */
static const char *at(const struct ck_tensor *t, long long i, long long j,
		      char *buf, size_t cap)
{
	if (t->ndim == 1)
		snprintf(buf, cap, "[%lld]", j);
	else
		snprintf(buf, cap, "[%lld, %lld]", i, j);
	return buf;
}

/* Proves that the pieces cover every element of every tensor exactly
 * once, as dist_checkpointing's validate_sharding_integrity does: each
 * piece inside its tensor, no element in two pieces, none in none.
 * Returns 0, or -1 with the first finding in why. */
static int validate(const struct ck_index *x, char *why)
{
	long long most = 0, k = 0;
	int *owner = NULL, rc = 0;
	char a[48], b[48], sh[48];

	for (int i = 0; i < x->nt; i++)
		if (x->t[i].rows * x->t[i].cols > most)
			most = x->t[i].rows * x->t[i].cols;
	owner = malloc((size_t)(most > 0 ? most : 1) * sizeof(int));
	if (!owner)
		return fail(why, "out of memory");
	for (int i = 0; i < x->nt && !rc; i++) {
		const struct ck_tensor *t = &x->t[i];
		long long n = t->rows * t->cols, covered = 0;

		for (long long e = 0; e < n; e++)
			owner[e] = -1;
		for (; k < x->np && x->pc[k].tensor == i && !rc; k++) {
			const struct ck_piece *q = &x->pc[k];

			if (q->r0 < 0 || q->c0 < 0 || q->nr < 1 || q->nc < 1 ||
			    q->r0 + q->nr > t->rows || q->c0 + q->nc > t->cols) {
				rc = fail(why, "the piece of %s at %s of shape "
					  "%s (rank %d) is empty or lies outside "
					  "the tensor's shape %s", t->key,
					  at(t, q->r0, q->c0, a, sizeof(a)),
					  at(t, q->nr, q->nc, b, sizeof(b)),
					  x->f[q->file].rank,
					  at(t, t->rows, t->cols, sh, sizeof(sh)));
				break;
			}
			for (long long r = q->r0; r < q->r0 + q->nr && !rc; r++)
				for (long long c = q->c0; c < q->c0 + q->nc;
				     c++) {
					int *o = &owner[r * t->cols + c];

					if (*o >= 0) {
						rc = fail(why, "element %s of %s "
						  "is saved twice, by ranks %d "
						  "and %d: each element needs "
						  "exactly one main replica",
						  at(t, r, c, a, sizeof(a)),
						  t->key,
						  x->f[x->pc[*o].file].rank,
						  x->f[q->file].rank);
						break;
					}
					*o = (int)k;
					covered++;
				}
		}
		for (long long e = 0; e < n && !rc && covered < n; e++)
			if (owner[e] < 0)
				rc = fail(why, "element %s of %s is saved by no "
					  "rank (%lld of %lld elements covered)",
					  at(t, e / t->cols, e % t->cols, a,
					     sizeof(a)), t->key, covered, n);
	}
	if (!rc && k != x->np)
		rc = fail(why, "a piece names no tensor of the model");
	free(owner);
	return rc;
}

/* ---- save ------------------------------------------------------------- */

static int host_arrays(struct rt_model *m, float *h[CK_NGROUPS], int download)
{
	long long n = m->n_shard + m->n_rep;
	float *dev[CK_NGROUPS] = { m->param, m->adam_m, m->adam_v };

	for (int g = 0; g < CK_NGROUPS; g++) {
		h[g] = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
		if (!h[g])
			return rt_error(RT_ENOMEM, "out of memory");
		if (download)
			KCHECK(kern_download(m->k, h[g], dev[g],
					     (size_t)n * sizeof(float)));
	}
	return 0;
}

/* Writes this rank's pieces to dir/shard-RANK.bin (tmp + rename) and
 * describes them in slots (CK_SLOT per tensor, then the file's bytes). */
static int write_pieces(const char *dir, int rank, const struct ck_tensor *t,
			int nt, float *const h[CK_NGROUPS], long long *slots)
{
	char name[32];
	char *path = NULL, *tmp = NULL;
	FILE *f = NULL;
	long long bytes = 0;
	int rc = 0, any = 0;

	for (int i = 0; i < nt; i++)
		any |= t[i].writer && t[i].nr > 0;
	slots[(long long)nt * CK_SLOT] = -1;
	if (!any)
		return 0;
	snprintf(name, sizeof(name), "shard-%05d.bin", rank);
	path = join(dir, name);
	tmp = path ? malloc(strlen(path) + 5) : NULL;
	if (!tmp) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	snprintf(tmp, strlen(path) + 5, "%s.tmp", path);
	if (!(f = fopen(tmp, "wb"))) {
		rc = rt_error(RT_EIO, "--save: cannot write '%s': %s", tmp,
			      strerror(errno));
		goto out;
	}
	for (int i = 0; i < nt; i++) {
		const float *src = h[t[i].group] + t[i].off;
		long long n = t[i].nr * t[i].nc, *s = slots + i * CK_SLOT;

		if (!t[i].writer || !t[i].nr)
			continue;
		if (fwrite(src, sizeof(float), (size_t)n, f) != (size_t)n) {
			rc = rt_error(RT_EIO, "--save: write error in '%s'",
				      tmp);
			goto out;
		}
		s[0] = 1;
		s[1] = t[i].r0;
		s[2] = t[i].c0;
		s[3] = t[i].nr;
		s[4] = t[i].nc;
		s[5] = bytes;
		s[6] = (long long)fnv1a64(src, (size_t)n * sizeof(float));
		bytes += n * (long long)sizeof(float);
	}
	rc = fclose(f);
	f = NULL;
	if (rc || rename(tmp, path))
		rc = rt_error(RT_EIO, "--save: cannot write '%s': %s", path,
			      strerror(errno));
	slots[(long long)nt * CK_SLOT] = bytes;
out:
	if (f)
		fclose(f);
	free(path);
	free(tmp);
	return rc;
}

/* Rank 0: the index from every rank's slots. */
static int gathered_index(struct ck_index *x, const long long *all,
			  int world, long long per)
{
	const long long nt = x->nt;
	int *file_of = calloc((size_t)world, sizeof(int));

	x->f = calloc((size_t)world, sizeof(*x->f));
	x->pc = calloc((size_t)(world * nt), sizeof(*x->pc));
	if (!file_of || !x->f || !x->pc) {
		free(file_of);
		return rt_error(RT_ENOMEM, "out of memory");
	}
	for (int r = 0; r < world; r++) {
		long long bytes = all[r * per + nt * CK_SLOT];

		file_of[r] = -1;
		if (bytes < 0)
			continue;
		file_of[r] = x->nf;
		snprintf(x->f[x->nf].name, sizeof(x->f[0].name),
			 "shard-%05d.bin", r);
		x->f[x->nf].rank = r;
		x->f[x->nf++].bytes = bytes;
	}
	for (int i = 0; i < nt; i++)
		for (int r = 0; r < world; r++) {
			const long long *s = all + r * per + i * CK_SLOT;
			struct ck_piece *q = &x->pc[x->np];

			if (s[0] != 1 || file_of[r] < 0)
				continue;
			q->tensor = i;
			q->file = file_of[r];
			q->r0 = s[1];
			q->c0 = s[2];
			q->nr = s[3];
			q->nc = s[4];
			q->byte_off = s[5];
			q->hash = (uint64_t)s[6];
			x->np++;
		}
	free(file_of);
	return 0;
}

static json_t *dims(const struct ck_tensor *t, long long i, long long j)
{
	return t->ndim == 1 ? json_pack("[I]", (json_int_t)j) :
	       json_pack("[I, I]", (json_int_t)i, (json_int_t)j);
}

static json_t *meta_json(const struct rt_model *m, const struct rt_plan *p,
			 const struct ck_index *x)
{
	const struct rt_shape *s = &m->s;
	json_t *root, *files, *tensors;
	long long k = 0;

	root = json_pack("{s:s, s:I, s:I, s:s, s:{s:I, s:I, s:I, s:I}, "
			 "s:{s:I, s:I}, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i}, "
			 "s:{s:s, s:I}}",
		"format", RT_CKPT_FORMAT, "step", (json_int_t)m->step,
		"seed", (json_int_t)m->seed, "byte_order", byte_order(),
		"model", "hidden", (json_int_t)s->h, "ffn", (json_int_t)s->ffn,
		"layers", (json_int_t)s->layers, "vocab", (json_int_t)s->vocab,
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
		const struct ck_tensor *t = &x->t[i];
		json_t *pieces = json_array();

		if (json_array_append_new(tensors, json_pack("{s:s, s:o, s:s, "
				"s:o}", "key", t->key, "shape",
				dims(t, t->rows, t->cols), "dtype", "float32",
				"pieces", pieces)))
			goto nomem;
		for (; k < x->np && x->pc[k].tensor == i; k++) {
			const struct ck_piece *q = &x->pc[k];
			char hash[20];

			snprintf(hash, sizeof(hash), "%016llx",
				 (unsigned long long)q->hash);
			if (json_array_append_new(pieces, json_pack("{s:o, s:o, "
					"s:s, s:I, s:s, s:i}", "offset",
					dims(t, q->r0, q->c0), "shape",
					dims(t, q->nr, q->nc), "file",
					x->f[q->file].name, "byte_offset",
					(json_int_t)q->byte_off, "fnv1a64", hash,
					"rank", x->f[q->file].rank)))
				goto nomem;
		}
	}
	return root;
nomem:
	json_decref(root);
	return NULL;
}

/* Rank 0: validates the pieces and writes metadata.json (tmp + rename). */
static int write_meta(const struct rt_model *m, const struct rt_plan *p,
		      const char *dir, struct ck_index *x)
{
	char why[CK_WHY];
	char *path = join(dir, RT_CKPT_META), *tmp = join(dir, RT_CKPT_META
							  ".tmp");
	json_t *root = NULL;
	FILE *f = NULL;
	int rc = 0;

	if (!path || !tmp) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	if (validate(x, why)) {
		rc = rt_error(RT_ECKPT, "--save %s: checkpoint validation: %s; "
			      "no metadata written, so this is no checkpoint",
			      dir, why);
		goto out;
	}
	if (!(root = meta_json(m, p, x))) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	if (!(f = fopen(tmp, "w")) ||
	    json_dumpf(root, f, JSON_INDENT(1) | JSON_SORT_KEYS) ||
	    fputc('\n', f) == EOF) {
		rc = rt_error(RT_EIO, "--save: cannot write '%s': %s", tmp,
			      strerror(errno));
		goto out;
	}
	rc = fclose(f);
	f = NULL;
	if (rc || rename(tmp, path))
		rc = rt_error(RT_EIO, "--save: cannot write '%s': %s", path,
			      strerror(errno));
out:
	if (f)
		fclose(f);
	json_decref(root);
	free(path);
	free(tmp);
	return rc;
}

/* Rank 0, before any rank writes: the directory exists and holds no
 * metadata, so that a save stopped part-way leaves no checkpoint. */
static int prepare_dir(const char *dir)
{
	char *meta = join(dir, RT_CKPT_META);
	struct stat st;
	int rc = 0;

	if (!meta)
		return rt_error(RT_ENOMEM, "out of memory");
	if (mkdir(dir, 0777) && errno != EEXIST)
		rc = rt_error(RT_EIO, "--save: cannot create directory '%s': "
			      "%s", dir, strerror(errno));
	else if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		rc = rt_error(RT_EIO, "--save: '%s' is not a directory", dir);
	else if (remove(meta) && errno != ENOENT)
		rc = rt_error(RT_EIO, "--save: cannot remove the old '%s': %s",
			      meta, strerror(errno));
	free(meta);
	return rc;
}

int rt_ckpt_save(struct rt_model *m, const struct rt_plan *p,
		 const char *dir)
{
	struct ck_index x;
	float *h[CK_NGROUPS] = { NULL, NULL, NULL };
	long long *mine = NULL, *all = NULL, per;
	int rank = coll_rank(m->c, RT_K_WORLD), rc;

	memset(&x, 0, sizeof(x));
	coll_set_call(m->c, "save", m->step);
	rc = ck_tensors(m, p, &x.t, &x.nt);
	if (!rc && rank == 0)
		rc = prepare_dir(dir);
	if ((rc = agree(rc)))
		goto out;
	per = (long long)x.nt * CK_SLOT + 1;
	mine = calloc((size_t)per, sizeof(long long));
	if (rank == 0)
		all = calloc((size_t)(per * p->world), sizeof(long long));
	if (!mine || (rank == 0 && !all))
		rc = rt_error(RT_ENOMEM, "out of memory");
	if (!rc)
		rc = host_arrays(m, h, 1);
	if (!rc)
		rc = write_pieces(dir, rank, x.t, x.nt, h, mine);
	if ((rc = agree(rc)))
		goto out;
	rc = coll_gather_i64(m->c, RT_K_WORLD, "ckpt.pieces", mine, all, per,
			     0);
	if (!rc && rank == 0)
		rc = gathered_index(&x, all, p->world, per);
	if (!rc && rank == 0)
		rc = write_meta(m, p, dir, &x);
	if (!(rc = agree(rc)))
		rt_note("checkpoint of step %lld saved to %s (%d files, %lld "
			"pieces)", m->step, dir, x.nf, x.np);
out:
	for (int g = 0; g < CK_NGROUPS; g++)
		free(h[g]);
	free(mine);
	free(all);
	index_release(&x);
	return rc;
}

/* ---- load --------------------------------------------------------------- */

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

static int jdims(const json_t *a, const struct ck_tensor *t, long long *i,
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

static int read_files(struct ck_index *x, const json_t *root, char *why)
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
		const char *name = json_string_value(json_object_get(o, "name"));
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

static int find_file(const struct ck_index *x, const char *name)
{
	for (int i = 0; name && i < x->nf; i++)
		if (!strcmp(x->f[i].name, name))
			return i;
	return -1;
}

/* One piece of tensor t (index ti) from its JSON object. */
static int read_piece(struct ck_index *x, int ti, const json_t *o, char *why)
{
	const struct ck_tensor *t = &x->t[ti];
	struct ck_piece *q = &x->pc[x->np];
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
static int read_tensors(struct ck_index *x, const json_t *root, char *why)
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
		const struct ck_tensor *t = &x->t[ti];
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
		at(t, t->rows, t->cols, want, sizeof(want));
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
	char *path = join(dir, RT_CKPT_META);
	struct stat st;
	json_error_t je;
	int rc = 0;

	*out = NULL;
	if (!path)
		return fail(why, "out of memory");
	if (stat(path, &st)) {
		*missing = 1;
		rc = fail(why, "%s: %s", path, strerror(errno));
	} else if (st.st_size > CK_MAX_META_BYTES) {
		rc = fail(why, "%s is %lld bytes, more than the %lld a "
			  "checkpoint of gtplan-run needs", path,
			  (long long)st.st_size, CK_MAX_META_BYTES);
	} else if (!(*out = json_load_file(path, JSON_REJECT_DUPLICATES,
					   &je))) {
		rc = fail(why, "%s:%d: not valid JSON (%s): truncated or "
			  "damaged", path, je.line, je.text);
	}
	free(path);
	return rc;
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
	char why[CK_WHY];
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
					     "%s; the metadata is damaged: save "
					     "again", dir, RT_CKPT_META, in, why);
	}
	if (!order || strcmp(order, byte_order()))
		return rt_error_once(RT_ECKPT, "--load %s: the pieces are in "
				     "%s-endian byte order, this host is %s-"
				     "endian: load it on a host like the one "
				     "that saved it", dir, order ? order : "?",
				     byte_order());
	if (v[0] != s->h || v[1] != s->ffn || v[2] != s->layers ||
	    v[3] != s->vocab)
		return rt_error_once(RT_ECKPT, "--load %s: the checkpoint's "
				     "model is hidden %lld, ffn %lld, %lld "
				     "layers, vocab %lld; the plan's is hidden "
				     "%lld, ffn %lld, %lld layers, vocab %lld: "
				     "load it with a plan of the checkpoint's "
				     "gtplan.runtime sizes", dir, v[0], v[1],
				     v[2], v[3], s->h, s->ffn, s->layers,
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

/* Copies into t's region (in dst) the part that piece q covers, read from
 * its file (opened once, its size checked) and checked against its sum. */
static int read_overlap(const char *dir, const struct ck_index *x,
			const struct ck_piece *q, const struct ck_tensor *t,
			FILE **fp, float *dst, long long *covered)
{
	const struct ck_file *cf = &x->f[q->file];
	long long r_lo = q->r0 > t->r0 ? q->r0 : t->r0;
	long long r_hi = q->r0 + q->nr < t->r0 + t->nr ? q->r0 + q->nr :
			 t->r0 + t->nr;
	long long c_lo = q->c0 > t->c0 ? q->c0 : t->c0;
	long long c_hi = q->c0 + q->nc < t->c0 + t->nc ? q->c0 + q->nc :
			 t->c0 + t->nc;
	size_t n = (size_t)(q->nr * q->nc);
	float *buf;
	uint64_t sum;
	char a[48];

	if (r_lo >= r_hi || c_lo >= c_hi)
		return 0;
	if (!fp[q->file]) {
		char *path = join(dir, cf->name);
		long size = -1;

		if (!path)
			return rt_error(RT_ENOMEM, "out of memory");
		fp[q->file] = fopen(path, "rb");
		free(path);
		if (!fp[q->file])
			return rt_error(RT_ECKPT, "--load %s: piece file %s: "
					"%s: the checkpoint is incomplete; copy "
					"every file of the save, or save again",
					dir, cf->name, strerror(errno));
		if (!fseek(fp[q->file], 0, SEEK_END))
			size = ftell(fp[q->file]);
		if (size != cf->bytes)
			return rt_error(RT_ECKPT, "--load %s: piece file %s is "
					"%ld bytes, %s says %lld: truncated or "
					"replaced; save again", dir, cf->name,
					size, RT_CKPT_META, cf->bytes);
	}
	if (!(buf = malloc(n * sizeof(float))))
		return rt_error(RT_ENOMEM, "out of memory");
	if (fseek(fp[q->file], (long)q->byte_off, SEEK_SET) ||
	    fread(buf, sizeof(float), n, fp[q->file]) != n) {
		free(buf);
		return rt_error(RT_ECKPT, "--load %s: cannot read the piece of "
				"%s at byte %lld of %s", dir, t->key,
				q->byte_off, cf->name);
	}
	sum = fnv1a64(buf, n * sizeof(float));
	if (sum != q->hash) {
		free(buf);
		return rt_error(RT_ECKPT, "--load %s: the piece of %s at %s in "
				"%s (byte %lld) has checksum %016llx, %s says "
				"%016llx: the file is corrupt; save again", dir,
				t->key, at(t, q->r0, q->c0, a, sizeof(a)),
				cf->name, q->byte_off, (unsigned long long)sum,
				RT_CKPT_META, (unsigned long long)q->hash);
	}
	for (long long r = r_lo; r < r_hi; r++)
		memcpy(dst + (r - t->r0) * t->nc + (c_lo - t->c0),
		       buf + (r - q->r0) * q->nc + (c_lo - q->c0),
		       (size_t)(c_hi - c_lo) * sizeof(float));
	*covered += (r_hi - r_lo) * (c_hi - c_lo);
	free(buf);
	return 0;
}

/* This rank's regions of every tensor from the pieces that overlap them. */
static int fill(const char *dir, const struct ck_index *x,
		float *h[CK_NGROUPS])
{
	FILE **fp = calloc((size_t)(x->nf ? x->nf : 1), sizeof(FILE *));
	long long k = 0;
	int rc = 0;

	if (!fp)
		return rt_error(RT_ENOMEM, "out of memory");
	for (int i = 0; i < x->nt && !rc; i++) {
		const struct ck_tensor *t = &x->t[i];
		long long covered = 0;

		for (; k < x->np && x->pc[k].tensor == i && !rc; k++)
			rc = read_overlap(dir, x, &x->pc[k], t, fp,
					  h[t->group] + t->off, &covered);
		if (!rc && covered != t->nr * t->nc)
			rc = rt_error(RT_ECKPT, "--load %s: the pieces of %s "
				      "cover %lld of this rank's %lld elements",
				      dir, t->key, covered, t->nr * t->nc);
	}
	for (int i = 0; i < x->nf; i++)
		if (fp[i])
			fclose(fp[i]);
	free(fp);
	return rc;
}

int rt_ckpt_load(struct rt_model *m, const struct rt_plan *p,
		 const char *dir)
{
	struct ck_index x;
	float *h[CK_NGROUPS] = { NULL, NULL, NULL };
	float *dev[CK_NGROUPS] = { m->param, m->adam_m, m->adam_v };
	size_t bytes = (size_t)(m->n_shard + m->n_rep) * sizeof(float);
	json_t *root = NULL;
	char why[CK_WHY];
	long long step = 0;
	int rc, missing = 0;

	memset(&x, 0, sizeof(x));
	rc = ck_tensors(m, p, &x.t, &x.nt);
	if (!rc && read_meta(dir, &root, why, &missing))
		rc = missing ?
		     rt_error_once(RT_EIO, "--load %s: no checkpoint there "
				   "(%s); a save that stopped part-way leaves "
				   "none: load a directory that --save "
				   "completed", dir, why) :
		     rt_error_once(RT_ECKPT, "--load %s: %s; save again", dir,
				   why);
	if (!rc)
		rc = check_header(m, root, dir, &step);
	if (!rc && (read_files(&x, root, why) || read_tensors(&x, root, why) ||
		    validate(&x, why)))
		rc = rt_error_once(RT_ECKPT, "--load %s: %s: %s; the metadata "
				   "is damaged: save again", dir, RT_CKPT_META,
				   why);
	if (!rc)
		rc = host_arrays(m, h, 0);
	if (!rc)
		rc = fill(dir, &x, h);
	for (int g = 0; g < CK_NGROUPS && !rc; g++)
		if (kern_upload(m->k, dev[g], h[g], bytes))
			rc = rt_error(RT_EKERNEL, "--load: cannot upload the "
				      "checkpoint's values");
	if (!rc)
		m->step = step;
	rc = agree(rc);
	json_decref(root);
	for (int g = 0; g < CK_NGROUPS; g++)
		free(h[g]);
	index_release(&x);
	return rc;
}
