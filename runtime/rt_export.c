/*
 * rt_export: refit export as safetensors (see rt_export.h).
 */
#include "rt_export.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_err.h"

static const char *const gather_names[] = {
	[RT_GATHER_GTP_THEN_TP] = "gtp_then_tp",
	[RT_GATHER_TP_THEN_GTP] = "tp_then_gtp",
	[RT_GATHER_TP_ONLY] = "tp_only",
};

int rt_gather_parse(const char *name, enum rt_gather *out)
{
	for (size_t i = 0; i < sizeof(gather_names) / sizeof(*gather_names);
	     i++)
		if (name && !strcmp(name, gather_names[i])) {
			*out = (enum rt_gather)i;
			return 0;
		}
	return -1;
}

const char *rt_gather_name(enum rt_gather g)
{
	return gather_names[g];
}

/* One exported tensor on rank 0. */
struct tensor {
	char name[96];
	int ndim;
	long long shape[2];
	float *data;
};

/* Scratch for one weight: two device buffers and a host one, each
 * TP x the largest padded TP-local tensor. */
struct scratch {
	float *a, *b, *host;
	long long n;
};

/* Logical rows of shard (t, g) of w: its rows [g S, (g+1) S) of TP slice
 * t's TP-local tensor that are not padding (GTP tail or vocabulary). */
static long long shard_rows(const struct rt_weight *w,
			    const struct rt_shape *s, long long t, long long g)
{
	long long real = w->d0, r;

	if (w->split == RT_SPLIT_VOCAB) {
		real = s->vocab - t * s->vl;
		real = real < 0 ? 0 : real > s->vl ? s->vl : real;
	}
	r = real - g * w->shard;
	return r < 0 ? 0 : r > w->shard ? w->shard : r;
}

/* Gathers w's shards in order `how`; on rank 0, sc->host then holds
 * *n blocks of S x d1, block k being shard (pt[k], pg[k]). */
static int gather_shards(struct rt_model *m, const struct rt_weight *w,
			 enum rt_gather how, struct scratch *sc, int *n,
			 int *pt, int *pg)
{
	const struct rt_shape *s = &m->s;
	long long blk = w->shard * w->d1;
	const float *mine = m->param + w->off;
	int k = 0;

	switch (how) {
	case RT_GATHER_GTP_THEN_TP:
		RCHECK(coll_all_gather(m->c, RT_K_GTP, w->name, mine, sc->a,
				       blk));
		RCHECK(coll_gather(m->c, RT_K_TP, w->name, sc->a, sc->b,
				   s->g * blk, 0));
		for (int t = 0; t < s->tp; t++)
			for (int g = 0; g < s->g; g++, k++)
				pt[k] = t, pg[k] = g;
		break;
	case RT_GATHER_TP_THEN_GTP:
		RCHECK(coll_all_gather(m->c, RT_K_TP, w->name, mine, sc->a,
				       blk));
		RCHECK(coll_gather(m->c, RT_K_GTP, w->name, sc->a, sc->b,
				   s->tp * blk, 0));
		for (int g = 0; g < s->g; g++)
			for (int t = 0; t < s->tp; t++, k++)
				pt[k] = t, pg[k] = g;
		break;
	case RT_GATHER_TP_ONLY:
		RCHECK(coll_gather(m->c, RT_K_TP, w->name, mine, sc->b, blk,
				   0));
		for (int t = 0; t < s->tp; t++, k++)
			pt[k] = t, pg[k] = s->gr;
		break;
	}
	*n = k;
	if (coll_rank(m->c, RT_K_WORLD) == 0)
		KCHECK(kern_download(m->k, sc->host, sc->b, (size_t)(k * blk) *
				     sizeof(float)));
	return 0;
}

/* Rank 0: the weight as the gather order rebuilds it. A column-parallel
 * or vocab weight's blocks are whole logical rows, appended in gather
 * order; a row-parallel weight's block (t, g) holds columns t d1.. of its
 * rows g S.., so the blocks land in place whatever the order. */
static int export_weight(struct rt_model *m, const struct rt_weight *w,
			 enum rt_gather how, struct scratch *sc,
			 struct tensor *out)
{
	const struct rt_shape *s = &m->s;
	int n, *t_of = NULL, *g_of = NULL;
	long long rows = 0;
	int rc;

	t_of = malloc((size_t)(s->tp * s->g) * sizeof(int));
	g_of = malloc((size_t)(s->tp * s->g) * sizeof(int));
	if (!t_of || !g_of) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	rc = gather_shards(m, w, how, sc, &n, t_of, g_of);
	if (rc || coll_rank(m->c, RT_K_WORLD) != 0)
		goto out;
	out->data = calloc((size_t)(w->rows * w->cols), sizeof(float));
	if (!out->data) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < n; k++) {
		const float *blk = sc->host + k * w->shard * w->d1;
		long long real = shard_rows(w, s, t_of[k], g_of[k]);

		for (long long j = 0; j < real; j++) {
			long long r = w->split == RT_SPLIT_ROW ?
				      g_of[k] * w->shard + j : rows;
			long long c0 = w->split == RT_SPLIT_ROW ?
				       t_of[k] * w->d1 : 0;

			memcpy(out->data + r * w->cols + c0, blk + j * w->d1,
			       (size_t)w->d1 * sizeof(float));
			if (r + 1 > rows)
				rows = r + 1;
		}
	}
	out->ndim = 2;
	out->shape[0] = rows;
	out->shape[1] = w->cols;
out:
	free(t_of);
	free(g_of);
	return rc;
}

/* Rank 0: a norm (replicated: no collective) as a 1-D tensor. */
static int export_norm(struct rt_model *m, long long l, struct tensor *out)
{
	long long h = m->s.h;

	out->data = malloc((size_t)h * sizeof(float));
	if (!out->data)
		return rt_error(RT_ENOMEM, "out of memory");
	KCHECK(kern_download(m->k, out->data, m->param + m->norm_off + l * h,
			     (size_t)h * sizeof(float)));
	out->ndim = 1;
	out->shape[0] = h;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tensor *)a)->name,
		      ((const struct tensor *)b)->name);
}

/* A growing string for the header. */
struct buf {
	char *s;
	size_t n, cap;
};

static int buf_add(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int buf_add(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (len < 0)
		return -1;
	if (b->n + (size_t)len + 1 > b->cap) {
		size_t cap = (b->n + (size_t)len + 1) * 2;
		char *s = realloc(b->s, cap);

		if (!s)
			return -1;
		b->s = s;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	b->n += (size_t)len;
	return 0;
}

static void put_u64le(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Rank 0: the safetensors file of ts (sorted here). */
static int write_safetensors(FILE *f, struct tensor *ts, int n,
			     enum rt_gather how)
{
	struct buf h = { NULL, 0, 0 };
	unsigned char len[8], le[4];
	long long off = 0;
	int rc = 0;

	qsort(ts, (size_t)n, sizeof(*ts), by_name);
	if (buf_add(&h, "{\"__metadata__\":{\"format\":\"pt\","
		    "\"gtplan.refit_gather\":\"%s\"}", rt_gather_name(how)))
		goto nomem;
	for (int i = 0; i < n; i++) {
		long long bytes = (long long)sizeof(float) * ts[i].shape[0] *
				  (ts[i].ndim > 1 ? ts[i].shape[1] : 1);

		if (buf_add(&h, ",\"%s\":{\"data_offsets\":[%lld,%lld],"
			    "\"dtype\":\"F32\",\"shape\":[%lld", ts[i].name,
			    off, off + bytes, ts[i].shape[0]) ||
		    (ts[i].ndim > 1 && buf_add(&h, ",%lld", ts[i].shape[1])) ||
		    buf_add(&h, "]}"))
			goto nomem;
		off += bytes;
	}
	if (buf_add(&h, "}"))
		goto nomem;
	while (h.n % 8)
		if (buf_add(&h, " "))
			goto nomem;
	put_u64le(len, (uint64_t)h.n);
	fwrite(len, 1, 8, f);
	fwrite(h.s, 1, h.n, f);
	for (int i = 0; i < n; i++) {
		long long cnt = ts[i].shape[0] * (ts[i].ndim > 1 ?
						  ts[i].shape[1] : 1);

		for (long long j = 0; j < cnt; j++) {
			uint32_t u;

			memcpy(&u, &ts[i].data[j], sizeof(u));
			for (int b = 0; b < 4; b++)
				le[b] = (unsigned char)(u >> (8 * b));
			fwrite(le, 1, 4, f);
		}
	}
	if (fflush(f) || ferror(f))
		rc = rt_error(RT_EIO, "--export: write error");
	free(h.s);
	return rc;
nomem:
	free(h.s);
	return rt_error(RT_ENOMEM, "out of memory");
}

int rt_export_write(struct rt_model *m, enum rt_gather how, FILE *f)
{
	const struct rt_shape *s = &m->s;
	long long L = s->layers;
	int n = (int)(3 * L + 2), k = 0, rc = 0, krc = 0;
	int root = coll_rank(m->c, RT_K_WORLD) == 0;
	struct tensor *ts = calloc((size_t)n, sizeof(*ts));
	struct scratch sc = { NULL, NULL, NULL, s->tp * m->full_n };

	coll_set_call(m->c, "export_hf_weights", m->step);
	sc.host = malloc((size_t)sc.n * sizeof(float));
	if (!ts || !sc.host) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	krc = kern_alloc(m->k, (size_t)sc.n * sizeof(float), (void **)&sc.a);
	if (!krc)
		krc = kern_alloc(m->k, (size_t)sc.n * sizeof(float),
				 (void **)&sc.b);
	if (krc) {
		rc = rt_kcheck(krc, "kern_alloc", __FILE__, __LINE__);
		goto out;
	}
	snprintf(ts[k].name, sizeof(ts[k].name), "model.embed_tokens.weight");
	rc = export_weight(m, &m->emb, how, &sc, &ts[k++]);
	for (long long l = 0; !rc && l < L; l++) {
		snprintf(ts[k].name, sizeof(ts[k].name),
			 "model.layers.%lld.post_attention_layernorm.weight", l);
		rc = root ? export_norm(m, l, &ts[k]) : 0;
		k++;
		snprintf(ts[k].name, sizeof(ts[k].name),
			 "model.layers.%lld.mlp.up_proj.weight", l);
		if (!rc)
			rc = export_weight(m, &m->fc1[l], how, &sc, &ts[k]);
		k++;
		snprintf(ts[k].name, sizeof(ts[k].name),
			 "model.layers.%lld.mlp.down_proj.weight", l);
		if (!rc)
			rc = export_weight(m, &m->fc2[l], how, &sc, &ts[k]);
		k++;
	}
	snprintf(ts[k].name, sizeof(ts[k].name), "model.norm.weight");
	if (!rc && root)
		rc = export_norm(m, L, &ts[k]);
	if (!rc && root)
		rc = write_safetensors(f, ts, n, how);
out:
	for (int i = 0; ts && i < n; i++)
		free(ts[i].data);
	free(ts);
	free(sc.host);
	if (sc.a)
		kern_free(m->k, sc.a);
	if (sc.b)
		kern_free(m->k, sc.b);
	return rc;
}
