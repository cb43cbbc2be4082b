/*
 * rt_export: refit export as safetensors (see rt_export.h).
 */
#include "rt_export.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_err.h"
#include "strbuf.h"

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
	if (coll_rank(m->c, RT_K_WORLD) != 0)
		return 0;
	RCHECK(coll_wait_last(m->c)); /* the gathers, under the watchdog */
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

/* Rank 0: a replicated parameter (no collective) as a 1-D tensor; a
 * TP-split one (the qkv bias) is gathered over TP first (every rank). */
static int export_vec(struct rt_model *m, long long off, long long n,
		      int tp_split, struct scratch *sc, struct tensor *out)
{
	int root = coll_rank(m->c, RT_K_WORLD) == 0;
	const float *src = m->param + off;

	if (tp_split) {
		RCHECK(coll_gather(m->c, RT_K_TP, "qkv_bias", src, sc->b, n,
				   0));
		src = sc->b;
		n *= m->s.tp;
	}
	if (!root)
		return 0;
	RCHECK(coll_wait_last(m->c)); /* the gather, under the watchdog */
	out->data = malloc((size_t)n * sizeof(float));
	if (!out->data)
		return rt_error(RT_ENOMEM, "out of memory");
	KCHECK(kern_download(m->k, out->data, src, (size_t)n * sizeof(float)));
	out->ndim = 1;
	out->shape[0] = n;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tensor *)a)->name,
		      ((const struct tensor *)b)->name);
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
	struct strbuf h = STRBUF_INIT;
	unsigned char len[8], le[4];
	long long off = 0;
	int rc = 0;

	qsort(ts, (size_t)n, sizeof(*ts), by_name);
	strbuf_addf(&h, "{\"__metadata__\":{\"format\":\"pt\","
		    "\"gtplan.refit_gather\":\"%s\"}", rt_gather_name(how));
	for (int i = 0; i < n; i++) {
		long long bytes = (long long)sizeof(float) * ts[i].shape[0] *
				  (ts[i].ndim > 1 ? ts[i].shape[1] : 1);

		strbuf_addf(&h, ",\"%s\":{\"data_offsets\":[%lld,%lld],"
			    "\"dtype\":\"F32\",\"shape\":[%lld", ts[i].name,
			    off, off + bytes, ts[i].shape[0]);
		if (ts[i].ndim > 1)
			strbuf_addf(&h, ",%lld", ts[i].shape[1]);
		strbuf_addstr(&h, "]}");
		off += bytes;
	}
	strbuf_addch(&h, '}');
	strbuf_addchars(&h, ' ', (8 - h.len % 8) % 8);
	if (h.bad) {
		strbuf_release(&h);
		return rt_error(RT_ENOMEM, "out of memory");
	}
	put_u64le(len, (uint64_t)h.len);
	fwrite(len, 1, 8, f);
	fwrite(h.buf, 1, h.len, f);
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
	strbuf_release(&h);
	return rc;
}

/* ---- Megatron -> Hugging Face ------------------------------------------- */

/* The tensors of the export, built on rank 0 in model order. */
struct tlist {
	struct tensor *t;
	int n, cap;
};

static struct tensor *tl_add(struct tlist *l, const char *fmt, long long i)
{
	struct tensor *t = &l->t[l->n++];

	snprintf(t->name, sizeof(t->name), fmt, i);
	return t;
}

/* Appends *from under a new name; *from gives up its data. */
static void tl_move(struct tlist *l, const char *fmt, long long i,
		    struct tensor *from)
{
	struct tensor *t = tl_add(l, fmt, i);

	t->ndim = from->ndim;
	t->shape[0] = from->shape[0];
	t->shape[1] = from->shape[1];
	t->data = from->data;
	from->data = NULL;
}

/* A new tensor of `rows` rows taken from src's rows [first, first + n)
 * of `cols` each, appended at row `at` of dst (allocated on first use). */
static int take_rows(struct tensor *dst, long long rows, long long cols,
		     const float *src, long long first, long long n,
		     long long at)
{
	if (!dst->data) {
		dst->data = calloc((size_t)(rows * cols), sizeof(float));
		if (!dst->data)
			return rt_error(RT_ENOMEM, "out of memory");
		dst->ndim = cols > 1 || rows > 1 ? 2 : 1;
		dst->shape[0] = rows;
		dst->shape[1] = cols;
	}
	memcpy(dst->data + at * cols, src + first * cols,
	       (size_t)(n * cols) * sizeof(float));
	return 0;
}

/* Megatron-Bridge's split_qkv_weights (param_mapping.py): the fused
 * [(H + 2G) d, cols] in per-group interleaved order into q [H d], k [G d],
 * v [G d]. cols 1: the bias, as 1-D tensors. */
static int split_qkv(const struct rt_shape *s, const struct tensor *fused,
		     struct tensor *q, struct tensor *k, struct tensor *v)
{
	long long G = s->kv_heads, d = s->hd, r = s->heads / G;
	long long cols = fused->ndim > 1 ? fused->shape[1] : 1;

	for (long long g = 0; g < G; g++) {
		long long base = g * (r + 2) * d;

		RCHECK(take_rows(q, s->heads * d, cols, fused->data, base,
				 r * d, g * r * d));
		RCHECK(take_rows(k, G * d, cols, fused->data, base + r * d, d,
				 g * d));
		RCHECK(take_rows(v, G * d, cols, fused->data,
				 base + (r + 1) * d, d, g * d));
	}
	if (cols == 1)
		q->ndim = k->ndim = v->ndim = 1;
	return 0;
}

/* Megatron-Bridge's GatedMLPMapping.megatron_to_hf: the TP concatenation
 * of [gate_t; up_t] back to gate [F, h] and up [F, h]. */
static int split_glu(const struct rt_shape *s, const struct tensor *fused,
		     struct tensor *gate, struct tensor *up)
{
	long long fl = s->fl, h = fused->shape[1];

	for (int t = 0; t < s->tp; t++) {
		RCHECK(take_rows(gate, s->ffn, h, fused->data, 2 * t * fl, fl,
				 t * fl));
		RCHECK(take_rows(up, s->ffn, h, fused->data, (2 * t + 1) * fl,
				 fl, t * fl));
	}
	return 0;
}

#define HFL "model.layers.%lld."

/* linear_qkv and its bias as q/k/v_proj. A gather that does not rebuild
 * every row (tp_only) keeps the fused tensor as "qkv_proj" (vLLM's fused
 * name): its rows cannot be split by group. */
static int export_qkv(struct rt_model *m, long long l, enum rt_gather how,
		      struct scratch *sc, struct tlist *tl, int root)
{
	const struct rt_layer *ly = &m->layer[l];
	struct tensor fused = { "", 0, { 0, 0 }, NULL };
	int rc = export_weight(m, ly->qkv, how, sc, &fused);

	if (!rc && root && fused.shape[0] == ly->qkv->rows)
		rc = split_qkv(&m->s, &fused, tl_add(tl, HFL "self_attn.q_proj."
			       "weight", l), tl_add(tl, HFL "self_attn.k_proj."
			       "weight", l), tl_add(tl, HFL "self_attn.v_proj."
			       "weight", l));
	else if (!rc && root)
		tl_move(tl, HFL "self_attn.qkv_proj.weight", l, &fused);
	free(fused.data);
	fused.data = NULL;
	if (rc || ly->bias < 0)
		return rc;
	rc = export_vec(m, ly->bias, m->s.z.qkv_l, 1, sc, &fused);
	if (!rc && root)
		rc = split_qkv(&m->s, &fused, tl_add(tl, HFL "self_attn.q_proj."
			       "bias", l), tl_add(tl, HFL "self_attn.k_proj."
			       "bias", l), tl_add(tl, HFL "self_attn.v_proj."
			       "bias", l));
	free(fused.data);
	return rc;
}

/* linear_fc1 as gate_proj and up_proj ("gate_up_proj" when incomplete). */
static int export_fc1(struct rt_model *m, long long l, enum rt_gather how,
		      struct scratch *sc, struct tlist *tl, int root)
{
	const struct rt_weight *w = m->layer[l].fc1;
	struct tensor fused = { "", 0, { 0, 0 }, NULL };
	int rc = export_weight(m, w, how, sc, &fused);

	if (!rc && root && fused.shape[0] == w->rows)
		rc = split_glu(&m->s, &fused, tl_add(tl, HFL "mlp.gate_proj."
			       "weight", l), tl_add(tl, HFL "mlp.up_proj."
			       "weight", l));
	else if (!rc && root)
		tl_move(tl, HFL "mlp.gate_up_proj.weight", l, &fused);
	free(fused.data);
	return rc;
}

static int export_layer(struct rt_model *m, long long l, enum rt_gather how,
			struct scratch *sc, struct tlist *tl, int root)
{
	const struct rt_layer *ly = &m->layer[l];
	struct tensor dummy = { "", 0, { 0, 0 }, NULL };
	long long h = m->s.h;

	RCHECK(export_vec(m, ly->ln1, h, 0, sc, root ? tl_add(tl, HFL
			  "input_layernorm.weight", l) : &dummy));
	RCHECK(export_qkv(m, l, how, sc, tl, root));
	if (ly->qn >= 0) {
		RCHECK(export_vec(m, ly->qn, m->s.hd, 0, sc, root ? tl_add(tl,
				  HFL "self_attn.q_norm.weight", l) : &dummy));
		RCHECK(export_vec(m, ly->kn, m->s.hd, 0, sc, root ? tl_add(tl,
				  HFL "self_attn.k_norm.weight", l) : &dummy));
	}
	RCHECK(export_weight(m, ly->proj, how, sc, root ? tl_add(tl, HFL
			     "self_attn.o_proj.weight", l) : &dummy));
	RCHECK(export_vec(m, ly->ln2, h, 0, sc, root ? tl_add(tl, HFL
			  "post_attention_layernorm.weight", l) : &dummy));
	RCHECK(export_fc1(m, l, how, sc, tl, root));
	return export_weight(m, ly->fc2, how, sc, root ? tl_add(tl, HFL
			     "mlp.down_proj.weight", l) : &dummy);
}

/* Hugging Face's config.json for the export (transformers'
 * LlamaConfig / Qwen2Config / Qwen3Config field names). */
static int write_config(const struct rt_model *m, const char *dir)
{
	const struct rt_shape *s = &m->s;
	const char *arch = s->qk_norm ? "Qwen3ForCausalLM" :
			   s->qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM";
	const char *type = s->qk_norm ? "qwen3" : s->qkv_bias ? "qwen2" :
			   "llama";
	char *path = malloc(strlen(dir) + 16);
	FILE *f;
	int rc = 0;

	if (!path)
		return rt_error(RT_ENOMEM, "out of memory");
	if (s->qk_norm && s->qkv_bias)
		rt_note("--export: transformers has no class with QK-norm and a "
			"bias on q, k and v only; config.json says %s, which "
			"does not read the biases model.safetensors holds", arch);
	sprintf(path, "%s/config.json", dir);
	f = fopen(path, "w");
	if (!f) {
		rc = rt_error(RT_EIO, "--export: cannot write '%s'", path);
		free(path);
		return rc;
	}
	fprintf(f, "{\n  \"architectures\": [\"%s\"],\n  \"attention_bias\": "
		"%s,\n  \"head_dim\": %lld,\n  \"hidden_act\": \"silu\",\n  "
		"\"hidden_size\": %lld,\n  \"intermediate_size\": %lld,\n  "
		"\"max_position_embeddings\": %lld,\n  \"mlp_bias\": false,\n"
		"  \"model_type\": \"%s\",\n  \"num_attention_heads\": %lld,\n"
		"  \"num_hidden_layers\": %lld,\n  \"num_key_value_heads\": "
		"%lld,\n  \"rms_norm_eps\": %.9g,\n  \"rope_theta\": %.9g,\n  "
		"\"tie_word_embeddings\": %s,\n  \"torch_dtype\": \"float32\","
		"\n  \"vocab_size\": %lld\n}\n", arch, s->qkv_bias &&
		!s->qk_norm ? "true" : "false", s->hd, s->h, s->ffn,
		s->seq_len, type, s->heads, s->layers, s->kv_heads,
		s->norm_eps, s->theta, s->tie ? "true" : "false", s->vocab);
	if (fclose(f))
		rc = rt_error(RT_EIO, "--export: write error on '%s'", path);
	free(path);
	return rc;
}

int rt_export_write(struct rt_model *m, enum rt_gather how, FILE *f,
		    const char *dir)
{
	const struct rt_shape *s = &m->s;
	int root = coll_rank(m->c, RT_K_WORLD) == 0, rc = 0, krc;
	struct tlist tl = { calloc((size_t)(14 * s->layers + 3),
				   sizeof(struct tensor)), 0, 0 };
	struct scratch sc = { NULL, NULL, NULL, s->tp * m->full_n };
	struct tensor dummy = { "", 0, { 0, 0 }, NULL };

	if (s->pp > 1) {
		free(tl.t);
		return rt_error(RT_EUSAGE, "--export gathers the model on "
				     "one pipeline: PP %d splits it over "
				     "stages, which the export does not "
				     "collect; export from a PP 1 run (--load "
				     "reshards a PP checkpoint to it)", s->pp);
	}
	coll_set_call(m->c, "export_hf_weights", m->step);
	sc.host = malloc((size_t)sc.n * sizeof(float));
	if (!tl.t || !sc.host) {
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
	rc = export_weight(m, m->emb, how, &sc, root ? tl_add(&tl,
			   "model.embed_tokens.weight", 0) : &dummy);
	for (long long l = 0; !rc && l < s->layers; l++)
		rc = export_layer(m, l, how, &sc, &tl, root);
	if (!rc)
		rc = export_vec(m, m->lnf, s->h, 0, &sc, root ? tl_add(&tl,
				"model.norm.weight", 0) : &dummy);
	if (!rc && !s->tie)
		rc = export_weight(m, m->out, how, &sc, root ? tl_add(&tl,
				   "lm_head.weight", 0) : &dummy);
	if (!rc && root)
		rc = write_safetensors(f, tl.t, tl.n, how);
	if (!rc && root && dir)
		rc = write_config(m, dir);
	if (!rc) /* the gathers under the watchdog, before kern_free's wait */
		rc = coll_wait_last(m->c);
out:
	for (int i = 0; tl.t && i < tl.n; i++)
		free(tl.t[i].data);
	free(tl.t);
	free(dummy.data);
	free(sc.host);
	if (sc.a)
		kern_free(m->k, sc.a);
	if (sc.b)
		kern_free(m->k, sc.b);
	return rc;
}
