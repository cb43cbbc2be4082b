/*
 * rt_model: the weight layout, initialisation from the seed, and memory:
 * the activation table that allocation and release share (see
 * rt_model.h). The sizes and refusals are in rt_shape.c, the forward and
 * backward in rt_train.c (context parallelism's attention in rt_cp.c),
 * the GTP gathers and the dump in rt_weights.c.
 */
#include "rt_model.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rt_data.h"
#include "rt_err.h"
#include "rt_pp.h"

int rt_kcheck(int kern_rc, const char *call, const char *file, int line)
{
	return rt_error(RT_EKERNEL, "%s:%d: %s: %s", file, line, call,
			kern_error_text(kern_rc));
}

int rt_alloc_f(struct rt_model *m, float **p, long long n)
{
	KCHECK(kern_alloc(m->k, (size_t)(n > 0 ? n : 1) * sizeof(float),
			  (void **)p));
	return 0;
}

/* ---- layout and initial values ---------------------------------------- */

long long rt_weight_row(const struct rt_weight *w, int t, long long i)
{
	long long half = w->d0 / 2;

	if (w->split == RT_SPLIT_ROW)
		return i;
	if (!w->glu)
		return (long long)t * w->d0 + i;
	/* [gate_t; up_t]: gate rows t F/T.., then up rows F + t F/T.. */
	return i < half ? (long long)t * half + i :
	       w->rows / 2 + (long long)t * half + i - half;
}

static void set_weight(struct rt_weight *w, const struct rt_shape *s,
		       const char *name, enum rt_split split, long long rows,
		       long long cols, uint64_t stream, double std,
		       long long *off)
{
	long long align = (long long)RT_GTP_PAD * s->g;

	memset(w, 0, sizeof(*w));
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->split = split;
	w->rows = rows;
	w->cols = cols;
	w->stream = stream;
	w->std = std;
	switch (split) {
	case RT_SPLIT_VOCAB:
		w->d0 = s->vl;
		w->d0_real = s->vvalid;
		w->d1 = cols;
		w->row0 = s->vfirst;
		break;
	case RT_SPLIT_COLUMN:
		w->d0 = w->d0_real = rows / s->tp;
		w->d1 = cols;
		w->row0 = s->t * w->d0;
		break;
	case RT_SPLIT_ROW:
		w->d0 = w->d0_real = rows;
		w->d1 = cols / s->tp;
		w->col0 = s->t * w->d1;
		break;
	}
	/* gtp_remat_shard_dim0: pad to a multiple of pad x G, split in G */
	w->pad = s->g > 1 ? (align - w->d0 % align) % align : 0;
	w->shard = (w->d0 + w->pad) / s->g;
	w->off = *off;
	*off += w->shard * w->d1;
}

/* Init streams: the embedding 1, the output layer 2, layer l's weights
 * 3 + 4 l .. 6 + 4 l in forward order (l the model's index). Under PP the
 * last stage's copy of a tied embedding is "embedding" from stream 1: it
 * starts equal to stage 0's (Megatron zeroes it and all-reduces the pair,
 * megatron/core/models/common/language_module/language_module.py
 * setup_embeddings_and_output_layer: the same values). */
static void layout_weights(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	double std2 = RT_INIT_STD / sqrt(2.0 * (double)s->layers_all);
	long long off = 0, H = s->heads, G = s->kv_heads, d = s->hd;
	struct rt_weight *w = m->w;
	char name[48];

	if (s->pre)
		set_weight(w++, s, "embedding", RT_SPLIT_VOCAB, s->vocab, s->h,
			   1, RT_INIT_STD, &off);
	if (s->post && !(s->tie && s->pre))
		set_weight(w++, s, s->tie ? "embedding" : "output",
			   RT_SPLIT_VOCAB, s->vocab, s->h, s->tie ? 1 : 2,
			   RT_INIT_STD, &off);
	for (long long li = 0; li < s->layers; li++) {
		long long l = rt_pp_layer(s, li);
		uint64_t st = (uint64_t)(3 + 4 * l);

		snprintf(name, sizeof(name), "layers.%lld.qkv", l);
		set_weight(w++, s, name, RT_SPLIT_COLUMN, (H + 2 * G) * d,
			   s->h, st, RT_INIT_STD, &off);
		snprintf(name, sizeof(name), "layers.%lld.proj", l);
		set_weight(w++, s, name, RT_SPLIT_ROW, s->h, H * d, st + 1,
			   std2, &off);
		snprintf(name, sizeof(name), "layers.%lld.fc1", l);
		set_weight(w, s, name, RT_SPLIT_COLUMN, 2 * s->ffn, s->h,
			   st + 2, RT_INIT_STD, &off);
		w++->glu = 1;
		snprintf(name, sizeof(name), "layers.%lld.fc2", l);
		set_weight(w++, s, name, RT_SPLIT_ROW, s->h, s->ffn, st + 3,
			   std2, &off);
	}
	m->n_w = (int)(w - m->w);
	m->n_shard = off;
}

/* The layers' weights and replicated parameters (decoder_sizes.h's
 * order: QK norms, norms, biases). */
static void layout_layers(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	const struct dsz_sizes *z = &s->z;
	long long qk = m->n_shard, norm = qk + z->n_qk;
	long long bias = norm + z->n_norm;
	int first = s->pre && s->post && s->tie ? 1 : s->pre + s->post;

	m->emb = s->pre ? &m->w[0] : NULL;
	m->out = !s->post ? NULL : s->tie && s->pre ? &m->w[0] :
		 &m->w[s->pre];
	for (long long l = 0; l < s->layers; l++) {
		struct rt_layer *ly = &m->layer[l];

		ly->qkv = &m->w[first + 4 * l];
		ly->proj = ly->qkv + 1;
		ly->fc1 = ly->qkv + 2;
		ly->fc2 = ly->qkv + 3;
		ly->qn = s->qk_norm ? qk + 2 * l * s->hd : -1;
		ly->kn = s->qk_norm ? ly->qn + s->hd : -1;
		ly->ln1 = norm + 2 * l * s->h;
		ly->ln2 = ly->ln1 + s->h;
		ly->bias = s->qkv_bias ? bias + l * z->qkv_l : -1;
	}
	m->lnf = s->post ? norm + 2 * s->layers * s->h : -1;
	m->n_rep = z->n_rep;
	m->tp_sum = z->tp_sum;
}

/* The shard's values: logical element (lr, lc) of the weight is
 * std x normal(seed, stream, lr x cols + lc); padding is zero. */
static void init_shard(const struct rt_weight *w, const struct rt_shape *s,
		       uint64_t seed, float *dst)
{
	/* rows are independent (counter-based values): threads where the
	 * build has OpenMP (the GPU build: billions of weights) */
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
	for (long long j = 0; j < w->shard; j++) {
		long long i = s->gr * w->shard + j; /* TP-local row */
		long long lr = i < w->d0_real ? rt_weight_row(w, s->t, i) : 0;

		for (long long col = 0; col < w->d1; col++) {
			long long lc = w->col0 + col;

			dst[j * w->d1 + col] = i < w->d0_real ?
				(float)(w->std * rt_rand_normal(seed, w->stream,
					(uint64_t)(lr * w->cols + lc))) : 0.0f;
		}
	}
}

static int init_values(struct rt_model *m)
{
	long long n = m->n_shard + m->n_rep;
	float *host = calloc((size_t)n, sizeof(float));
	int rc;

	if (!host)
		return rt_error(RT_ENOMEM, "out of memory");
	for (int i = 0; i < m->n_w; i++)
		init_shard(&m->w[i], &m->s, m->seed, host + m->w[i].off);
	/* QK norms and norms 1, biases 0 */
	for (long long i = m->n_shard; i < m->n_shard + m->s.z.n_qk +
	     m->s.z.n_norm; i++)
		host[i] = 1.0f;
	rc = kern_upload(m->k, m->param, host, (size_t)n * sizeof(float));
	free(host);
	KCHECK(rc);
	return 0;
}

/* ---- memory -------------------------------------------------------------- */

/* Sizes of the activation table: rows x cols, from the shape. */
enum act_size {
	A_LH,    /* Nl x h */
	A_L,     /* Nl */
	A_NH,    /* N x h */
	A_NQ,    /* N x q */
	A_NKV,   /* N x kv */
	A_NQKV,  /* N x (q + 2 kv) */
	A_NHL,   /* N x H/T */
	A_NKL,   /* N x G/T */
	A_LSE,   /* micro x H/T x local_seq */
	A_KKV,   /* micro x seq_len x kv: every CP rank's keys */
	A_KV2,   /* 2 N x kv: keys and values */
	A_KV4,   /* 4 N x kv: keys, values and their gradients */
	A_NFC1,  /* N x 2 F/T */
	A_NFL,   /* N x F/T */
	A_NV,    /* N x Vp/T */
	A_N,     /* N */
};

/* When an entry is allocated; else it aliases `alias` (or stays NULL).
 * W_QKV32: attention's fp32 q, k, v, which bf16 runs write only on the
 * unfused path (QK-norm) or for CP's kernels (rt_train.c qkv_fwd);
 * W_O32: its fp32 o, which bf16 runs write only for CP (the GEMMs and
 * the flash backward read o16); W_N32: the norms' fp32 outputs n1, n2,
 * which bf16 runs write only with SP (its all-gather moves fp32;
 * rt_train.c rt_norm_in writes y's bf16 bits alone otherwise). */
enum act_when { W_ALL, W_SP, W_QKN, W_AG, W_AGMB, W_P2P, W_QKV32, W_O32,
		W_N32 };

/* bf: BF_COPY, a bf16 tensor (2 bytes an element) allocated in bf16 runs
 * only: a bf16 copy (rt_bf16_copy) of the entry before it, or a tensor
 * bf16 runs hold in bf16 alone (u16, dsw16); BF_NONE, fp32 values that
 * bf16 runs keep in bf16 alone (the logits: rt_vocab.c rt_head_fwd; u, sw,
 * du, dsw: the MLP), allocated in fp32 runs only; 0, in every run. */
enum { BF_COPY = 1, BF_NONE = 2 };
struct act_entry {
	const char *name;
	size_t off, alias;
	enum act_size size;
	enum act_when when;
	int bf;
};

#define NONE ((size_t)-1)
#define LA(f, sz, w, al) \
	{ #f, offsetof(struct rt_layer_acts, f), al, sz, w, 0 }
#define GA(f, sz, w, al) \
	{ #f, offsetof(struct rt_acts, f), al, sz, w, 0 }
#define LB(f, sz, w, al) \
	{ #f, offsetof(struct rt_layer_acts, f), al, sz, w, BF_COPY }
#define GB(f, sz, w, al) \
	{ #f, offsetof(struct rt_acts, f), al, sz, w, BF_COPY }
#define LF(f, sz, w, al) \
	{ #f, offsetof(struct rt_layer_acts, f), al, sz, w, BF_NONE }
#define GF(f, sz, w, al) \
	{ #f, offsetof(struct rt_acts, f), al, sz, w, BF_NONE }

static const struct act_entry layer_table[] = {
	LA(x, A_LH, W_ALL, NONE),
	LA(rstd1, A_L, W_ALL, NONE),
	LA(n1, A_LH, W_N32, NONE),
	LB(n1_16, A_LH, W_ALL, NONE),
	LA(n1g, A_NH, W_SP, offsetof(struct rt_layer_acts, n1)),
	LB(n1g16, A_NH, W_SP, offsetof(struct rt_layer_acts, n1_16)),
	LA(qraw, A_NQ, W_QKN, NONE),
	LA(kraw, A_NKV, W_QKN, NONE),
	LA(qrstd, A_NHL, W_QKN, NONE),
	LA(krstd, A_NKL, W_QKN, NONE),
	LA(q, A_NQ, W_QKV32, NONE),
	LA(k, A_NKV, W_QKV32, NONE),
	LA(v, A_NKV, W_QKV32, NONE),
	LB(q16, A_NQ, W_ALL, NONE),
	LB(k16, A_NKV, W_ALL, NONE),
	LB(v16, A_NKV, W_ALL, NONE),
	LA(kg, A_KKV, W_AG, offsetof(struct rt_layer_acts, k)),
	LA(vg, A_KKV, W_AG, offsetof(struct rt_layer_acts, v)),
	LA(kvlast, A_KV2, W_P2P, NONE),
	LA(o, A_NQ, W_O32, NONE),
	LB(o16, A_NQ, W_ALL, NONE),
	LA(lse, A_LSE, W_ALL, NONE),
	LA(xm, A_LH, W_ALL, NONE),
	LA(rstd2, A_L, W_ALL, NONE),
	LA(n2, A_LH, W_N32, NONE),
	LB(n2_16, A_LH, W_ALL, NONE),
	LA(n2g, A_NH, W_SP, offsetof(struct rt_layer_acts, n2)),
	LB(n2g16, A_NH, W_SP, offsetof(struct rt_layer_acts, n2_16)),
	LF(u, A_NFC1, W_ALL, NONE),
	LB(u16, A_NFC1, W_ALL, NONE),
	LF(sw, A_NFL, W_ALL, NONE),
	LB(sw16, A_NFL, W_ALL, NONE),
};

/* Its first HEAD_N entries are the head's part, which a micro-batch keeps
 * from its forward to its backward: one copy per PP slot. */
#define HEAD_N 9
static const struct act_entry global_table[] = {
	GA(xL, A_LH, W_ALL, NONE),
	GA(rstdf, A_L, W_ALL, NONE),
	GA(z, A_LH, W_ALL, NONE),
	GB(z16, A_LH, W_ALL, NONE),
	GA(zg, A_NH, W_SP, offsetof(struct rt_acts, z)),
	GB(zg16, A_NH, W_SP, offsetof(struct rt_acts, z16)),
	GF(logits, A_NV, W_ALL, NONE),
	GA(cmax, A_N, W_ALL, NONE),
	GA(csum, A_N, W_ALL, NONE),
	/* HEAD_N */
	GB(logits16, A_NV, W_ALL, NONE),
	GA(ctgt, A_N, W_ALL, NONE),
	GA(closs, A_N, W_ALL, NONE),
	GA(full_h, A_NH, W_ALL, NONE),
	GB(full_h16, A_NH, W_ALL, NONE),
	GA(qkv, A_NQKV, W_ALL, NONE),
	GB(qkv16, A_NQKV, W_ALL, NONE),
	GA(dx, A_LH, W_ALL, NONE),
	GA(dn, A_LH, W_ALL, NONE),
	GA(dtmp, A_LH, W_ALL, NONE),
	GA(dq, A_NQ, W_ALL, NONE),
	GA(dk, A_NKV, W_ALL, NONE),
	GA(dv, A_NKV, W_ALL, NONE),
	GA(dkg, A_KKV, W_AG, offsetof(struct rt_acts, dk)),
	GA(dvg, A_KKV, W_AG, offsetof(struct rt_acts, dv)),
	GA(kvtmp, A_KKV, W_AGMB, NONE),
	GA(ring0, A_KV4, W_P2P, NONE),
	GA(ring1, A_KV4, W_P2P, NONE),
	GA(rdkv, A_KV2, W_P2P, NONE),
	GA(o2, A_NQ, W_P2P, NONE),
	GA(lse2, A_LSE, W_P2P, NONE),
	GA(dqraw, A_NQ, W_QKN, NONE),
	GA(dkraw, A_NKV, W_QKN, NONE),
	GA(dout, A_NQ, W_ALL, NONE),
	GB(dout16, A_NQ, W_ALL, NONE),
	GF(du, A_NFC1, W_ALL, NONE),
	GB(du16, A_NFC1, W_ALL, NONE),
	GF(dsw, A_NFL, W_ALL, NONE),
	GB(dsw16, A_NFL, W_ALL, NONE),
};
_Static_assert(HEAD_N <= sizeof(global_table) / sizeof(global_table[0]),
	       "the head's entries are global_table's first HEAD_N");


static long long act_elems(const struct rt_shape *s, enum act_size sz)
{
	long long N = s->tokens, Nl = s->local;
	const struct dsz_sizes *z = &s->z;

	switch (sz) {
	case A_LH: return Nl * s->h;
	case A_L: return Nl;
	case A_NH: return N * s->h;
	case A_NQ: return N * z->q_l;
	case A_NKV: return N * z->kv_l;
	case A_NQKV: return N * z->qkv_l;
	case A_NHL: return N * z->hl;
	case A_NKL: return N * z->kl;
	case A_LSE: return s->micro * z->hl * s->local_seq;
	case A_KKV: return z->keys * z->kv_l;
	case A_KV2: return 2 * N * z->kv_l;
	case A_KV4: return 4 * N * z->kv_l;
	case A_NFC1: return N * 2 * z->fl;
	case A_NFL: return N * z->fl;
	case A_NV: return N * z->vl;
	case A_N: return N;
	}
	return 0;
}

static int act_when_on(const struct rt_shape *s, enum act_when w)
{
	return w == W_ALL || (w == W_SP && s->sp) ||
	       (w == W_QKN && s->qk_norm) ||
	       (w == W_AG && s->cp > 1 && !s->cp_p2p) ||
	       (w == W_AGMB && s->cp > 1 && !s->cp_p2p && s->micro > 1) ||
	       (w == W_P2P && s->cp > 1 && s->cp_p2p);
}

/* Entry e is allocated in a run of shape s (bf16: a bf16 run). */
static int act_on(const struct rt_shape *s, int bf16,
		  const struct act_entry *e)
{
	if (e->when == W_QKV32)
		return !bf16 || s->qk_norm || s->cp > 1;
	if (e->when == W_O32)
		return !bf16 || s->cp > 1;
	if (e->when == W_N32)
		return !bf16 || s->sp;
	return act_when_on(s, e->when) &&
	       (e->bf == 0 || (e->bf == BF_COPY && bf16) ||
		(e->bf == BF_NONE && !bf16));
}

/* Its bytes. */
static long long act_bytes(const struct rt_shape *s,
			   const struct act_entry *e)
{
	long long n = act_elems(s, e->size);

	return (e->bf == BF_COPY ? 2 : 4) * (n > 0 ? n : 1);
}

#define SLOT(base, off) ((void **)(void *)((char *)(base) + (off)))

/* Allocates (or aliases) every entry of table t in the struct at base. */
static int acts_alloc(struct rt_model *m, const struct act_entry *t,
		      size_t n, void *base)
{
	for (size_t i = 0; i < n; i++) {
		if (act_on(&m->s, m->bf16, &t[i]))
			KCHECK(kern_alloc(m->k, (size_t)act_bytes(&m->s, &t[i]),
					  SLOT(base, t[i].off)));
		else if (t[i].alias != NONE)
			*SLOT(base, t[i].off) = *SLOT(base, t[i].alias);
	}
	return 0;
}

static void acts_free(struct rt_model *m, const struct act_entry *t,
		      size_t n, void *base)
{
	for (size_t i = 0; i < n; i++)
		if (act_on(&m->s, m->bf16, &t[i]))
			kern_free(m->k, *SLOT(base, t[i].off));
}

#define NTAB(t) (sizeof(t) / sizeof((t)[0]))

int32_t rt_row_pos(const struct rt_shape *s, int c, long long i)
{
	long long chunk = s->seq_len / (2 * s->cp);

	if (s->cp == 1)
		return (int32_t)i;
	return (int32_t)(((i / chunk) ? 2 * s->cp - 1 - c : c) * chunk +
			 i % chunk);
}

/* Token positions (rt_model.h): row r of a micro-batch is token r %
 * local_seq of its sample's share (rt_row_pos). kpos lists every CP
 * rank's in rank order. */
static int upload_positions(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	long long N = s->tokens, n = N > s->seq_len ? N : s->seq_len;
	int32_t *h = malloc((size_t)n * sizeof(int32_t));
	int krc;

	if (!h)
		return rt_error(RT_ENOMEM, "out of memory");
	for (long long r = 0; r < N; r++)
		h[r] = rt_row_pos(s, s->c, r % s->local_seq);
	krc = kern_upload(m->k, m->pos, h, (size_t)N * sizeof(int32_t));
	if (!krc)
		krc = kern_upload(m->k, m->qpos, h, (size_t)s->local_seq *
				  sizeof(int32_t));
	for (long long k = 0; k < s->seq_len; k++)
		h[k] = rt_row_pos(s, (int)(k / s->local_seq), k % s->local_seq);
	if (!krc)
		krc = kern_upload(m->k, m->kpos, h, (size_t)s->seq_len *
				  sizeof(int32_t));
	free(h);
	KCHECK(krc);
	return 0;
}

int rt_head_acts_alloc(struct rt_model *m, struct rt_acts *h)
{
	return acts_alloc(m, global_table, HEAD_N, h);
}

void rt_head_acts_free(struct rt_model *m, struct rt_acts *h)
{
	acts_free(m, global_table, HEAD_N, h);
}

void rt_head_acts_use(struct rt_model *m, const struct rt_acts *h)
{
	for (size_t i = 0; i < HEAD_N; i++)
		*SLOT(&m->a, global_table[i].off) =
			*SLOT((void *)h, global_table[i].off);
}

int rt_layer_acts_alloc(struct rt_model *m, struct rt_layer_acts *la)
{
	return acts_alloc(m, layer_table, NTAB(layer_table), la);
}

static int alloc_activations(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	long long N = s->tokens;

	m->la_all = calloc((size_t)(s->layers * s->slots), sizeof(*m->la));
	m->head = calloc((size_t)s->slots, sizeof(*m->head));
	m->slot_tokens = calloc((size_t)s->slots, sizeof(int32_t *));
	m->slot_targets = calloc((size_t)s->slots, sizeof(int32_t *));
	m->la = m->la_all;
	m->sample = malloc((size_t)(s->seq_len + 1) * sizeof(int32_t));
	m->h_tokens = malloc((size_t)N * sizeof(int32_t));
	m->h_targets = malloc((size_t)N * sizeof(int32_t));
	m->h_loss = malloc((size_t)(N * s->micro_batches) * sizeof(float));
	if (!m->la || !m->head || !m->slot_tokens || !m->slot_targets ||
	    !m->sample || !m->h_tokens || !m->h_targets || !m->h_loss)
		return rt_error(RT_ENOMEM, "out of memory");
	for (long long l = 0; l < s->layers; l++)
		RCHECK(acts_alloc(m, layer_table, NTAB(layer_table),
				  &m->la[l]));
	RCHECK(acts_alloc(m, global_table, NTAB(global_table), &m->a));
	KCHECK(kern_alloc(m->k, (size_t)N * sizeof(int32_t),
			  (void **)&m->tokens));
	KCHECK(kern_alloc(m->k, (size_t)N * sizeof(int32_t),
			  (void **)&m->targets));
	KCHECK(kern_alloc(m->k, (size_t)N * sizeof(int32_t), (void **)&m->pos));
	KCHECK(kern_alloc(m->k, (size_t)(N * s->micro_batches) * sizeof(float),
			  (void **)&m->dloss));
	KCHECK(kern_alloc(m->k, (size_t)s->local_seq * sizeof(int32_t),
			  (void **)&m->qpos));
	KCHECK(kern_alloc(m->k, (size_t)s->seq_len * sizeof(int32_t),
			  (void **)&m->kpos));
	RCHECK(rt_pp_alloc_slots(m));
	return upload_positions(m);
}

/* Scratch: the largest padded TP-local tensor and shard of any weight. */
static int alloc_scratch(struct rt_model *m, const struct rt_plan *p)
{
	long long full = 0, shard = 0;
	const struct rt_weight *e = m->emb ? m->emb : m->out;

	for (int i = 0; i < m->n_w; i++) {
		const struct rt_weight *w = &m->w[i];

		if ((w->d0 + w->pad) * w->d1 > full)
			full = (w->d0 + w->pad) * w->d1;
		if (w->shard * w->d1 > shard)
			shard = w->shard * w->d1;
	}
	m->full_n = full;
	RCHECK(rt_alloc_f(m, &m->full, full));
	RCHECK(rt_alloc_f(m, &m->gfull, full));
	RCHECK(rt_alloc_f(m, &m->gshard, shard));
	RCHECK(rt_alloc_f(m, &m->gemb, e ? (e->d0 + e->pad) * e->d1 : 1));
	m->bf16 = p->rt.bf16;
	/* bf16 runs multiply on tensor cores where the device has them */
	KCHECK(kern_set_math(m->k, m->bf16 ? KERN_MATH_BF16 :
			     KERN_MATH_FP32));
	m->prefetch = p->rt.prefetch;
	if (m->prefetch)
		RCHECK(rt_alloc_f(m, &m->full_b, full));
	if (m->bf16)
		KCHECK(kern_alloc(m->k, (size_t)(m->n_shard > 0 ? m->n_shard :
				  1) * sizeof(uint16_t),
				  (void **)&m->param16));
	for (int b = 0; b < (m->prefetch ? 2 : 1) && m->bf16 && m->s.g > 1;
	     b++)
		KCHECK(kern_alloc(m->k, (size_t)(full > 0 ? full : 1) *
				  sizeof(uint16_t), (void **)(b ? &m->full16_b :
				  &m->full16)));
	return 0;
}

/* rt_alloc_f's floats for n (at least one). */
static long long floats(long long n)
{
	return n > 0 ? n : 1;
}

static long long table_bytes(const struct rt_shape *s, int bf16,
			     const struct act_entry *t, size_t n)
{
	long long b = 0;

	for (size_t i = 0; i < n; i++)
		if (act_on(s, bf16, &t[i]))
			b += act_bytes(s, &t[i]);
	return b;
}

/* Mirrors rt_model_init: alloc_scratch's largest padded TP-local tensor
 * (g x its shard) and shard, alloc_activations' tables and int32 arrays,
 * the host's token arrays. */
void rt_model_mem(const struct rt_shape *s, int bf16, int prefetch,
		  struct rt_model_mem *mem)
{
	const struct dsz_sizes *z = &s->z;
	long long shard = z->shard_emb, N = s->tokens, full, n16;

	for (int w = 0; w < DSZ_PER_LAYER; w++)
		if (z->shard[w] > shard)
			shard = z->shard[w];
	full = shard * s->g;
	n16 = s->g > 1 ? (prefetch ? 2 : 1) * floats(full) : 0;
	mem->state = 4 * 4 * floats(z->n_shard + z->n_rep) +
		     (bf16 ? 2 * floats(z->n_shard) : 0);
	mem->scratch = 4 * ((2 + !!prefetch) * floats(full) + floats(shard) +
			    floats(z->shard_emb * s->g)) + (bf16 ? 2 * n16 : 0);
	mem->logits = (bf16 ? 2 : 4) * N * z->vl;
	mem->acts = s->layers * table_bytes(s, bf16, layer_table,
					    NTAB(layer_table)) +
		    table_bytes(s, bf16, global_table, NTAB(global_table)) +
		    4 * (3 * N + s->local_seq + s->seq_len) +
		    4 * (s->seq_len + 1 + 3 * N);
	mem->total = mem->state + mem->scratch + mem->acts;
}

int rt_model_init(struct rt_model *m, const struct rt_plan *p,
		  const struct rt_shape *s, struct kern_ctx *k,
		  struct coll *c)
{
	long long L = s->layers, n;

	memset(m, 0, sizeof(*m));
	m->k = k;
	m->c = c;
	m->s = *s;
	m->seed = (uint64_t)p->rt.seed;
	m->lr = p->rt.lr;
	m->w = calloc((size_t)(2 + DSZ_PER_LAYER * L), sizeof(*m->w));
	m->layer = calloc((size_t)L, sizeof(*m->layer));
	m->seq = calloc((size_t)(2 + DSZ_PER_LAYER * L), sizeof(*m->seq));
	m->gfirst = calloc((size_t)(2 + DSZ_PER_LAYER * L), 1);
	if (!m->w || !m->layer || !m->seq || !m->gfirst)
		return rt_error(RT_ENOMEM, "out of memory");
	layout_weights(m);
	layout_layers(m);
	n = m->n_shard + m->n_rep;
	RCHECK(rt_alloc_f(m, &m->param, n));
	RCHECK(rt_alloc_f(m, &m->grad, n));
	RCHECK(rt_alloc_f(m, &m->adam_m, n));
	RCHECK(rt_alloc_f(m, &m->adam_v, n));
	RCHECK(alloc_scratch(m, p));
	RCHECK(alloc_activations(m));
	RCHECK(rt_pp_alloc(m));
	return init_values(m);
}

static void release_bufs(struct rt_model *m)
{
	float *bufs[] = {
		m->param, m->grad, m->adam_m, m->adam_v, m->full, m->gfull,
		m->gshard, m->gemb, m->full_b,
	};
	void *other[] = {
		m->tokens, m->targets, m->pos, m->qpos, m->kpos, m->param16,
		m->full16, m->full16_b, m->dloss,
	};

	for (size_t i = 0; i < NTAB(bufs); i++)
		kern_free(m->k, bufs[i]);
	for (size_t i = 0; i < NTAB(other); i++)
		kern_free(m->k, other[i]);
}

void rt_model_release(struct rt_model *m)
{
	if (!m->k)
		return;
	if (m->slot_tokens && m->slot_tokens[0]) /* slot 0: m's own */
		rt_model_use_slot(m, 0);
	release_bufs(m);
	rt_pp_release_slots(m);
	for (long long l = 0; m->la_all && l < m->s.layers * m->s.slots; l++)
		acts_free(m, layer_table, NTAB(layer_table), &m->la_all[l]);
	acts_free(m, global_table, NTAB(global_table), &m->a);
	rt_pp_release(m);
	free(m->la_all);
	free(m->head);
	free(m->slot_tokens);
	free(m->slot_targets);
	free(m->w);
	free(m->layer);
	free(m->seq);
	free(m->gfirst);
	free(m->sample);
	free(m->h_tokens);
	free(m->h_targets);
	free(m->h_loss);
	memset(m, 0, sizeof(*m));
}
