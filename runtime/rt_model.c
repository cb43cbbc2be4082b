/*
 * rt_model: sizes and refusals, the weight layout, initialisation from the
 * seed, and memory: the activation table that allocation and release
 * share (see rt_model.h). The forward and backward are in rt_train.c, the
 * GTP gathers and the dump in rt_weights.c.
 */
#include "rt_model.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rt_data.h"
#include "rt_err.h"

int rt_kcheck(int kern_rc, const char *call, const char *file, int line)
{
	return rt_error(RT_EKERNEL, "%s:%d: %s: %s", file, line, call,
			kern_strerror(kern_rc));
}

int rt_alloc_f(struct rt_model *m, float **p, long long n)
{
	KCHECK(kern_alloc(m->k, (size_t)(n > 0 ? n : 1) * sizeof(float),
			  (void **)p));
	return 0;
}

/* ---- sizes ------------------------------------------------------------- */

/* What gtplan-run does not run, or a model the layout cannot split. */
static int refuse_layout(const struct rt_plan *p, const struct rt_shape *s)
{
	const struct rt_settings *rt = &p->rt;

	if (p->size[RT_PP] > 1)
		return rt_error_once(RT_EPLAN, "pipeline parallelism (PP %d) is "
				     "not run by gtplan-run yet; plan with "
				     "pipeline_model_parallel_size 1",
				     p->size[RT_PP]);
	if (rt->moe)
		return rt_error_once(RT_EPLAN, "%s is a mixture-of-experts "
				     "model; gtplan-run's decoder is dense "
				     "(no experts, no router): plan a dense "
				     "model", rt->model_name);
	if (p->ep > 1)
		return rt_error_once(RT_EPLAN, "the decoder has no experts, so "
				     "EP %d has nothing to split; plan with "
				     "expert_model_parallel_size 1", p->ep);
	if (s->cp > 1 && s->seq_len % (2 * s->cp))
		return rt_error_once(RT_EPLAN, "seq_len %lld does not split into "
				     "2 x CP = %d chunks (the load-balanced CP "
				     "split); use a multiple of %d", s->seq_len,
				     2 * s->cp, 2 * s->cp);
	if (s->heads % s->kv_heads)
		return rt_error_once(RT_EPLAN, "%s: %lld heads are not a "
				     "multiple of %lld query groups",
				     rt->model_name, s->heads, s->kv_heads);
	if (s->heads % s->tp)
		return rt_error_once(RT_EPLAN, "GT601: TP %d does not divide "
				     "the %lld attention heads of %s; use a TP "
				     "that divides them", s->tp, s->heads,
				     rt->model_name);
	if (s->kv_heads % s->tp)
		return rt_error_once(RT_EPLAN, "GT602: TP %d does not divide "
				     "the %lld query groups of %s (gtplan-run "
				     "splits whole groups; the sub-sharding of "
				     "Megatron-LM PR #2565 for TP above the "
				     "groups is not implemented); use a TP "
				     "that divides %lld", s->tp, s->kv_heads,
				     rt->model_name, s->kv_heads);
	if (s->ffn % s->tp)
		return rt_error_once(RT_EPLAN, "the MLP size %lld of %s is not "
				     "divisible by TP %d (linear_fc1 is "
				     "column-parallel over TP); use a multiple "
				     "of %d", s->ffn, rt->model_name, s->tp,
				     s->tp);
	if (s->hd % 2)
		return rt_error_once(RT_EPLAN, "head_dim %lld of %s is odd; "
				     "rotate-half RoPE needs an even one",
				     s->hd, rt->model_name);
	return 0;
}

/* The batch: global batch over the lanes, micro-batches of each lane. */
static int shape_batch(struct rt_shape *s, const struct rt_plan *p,
		       long long global_batch, long long micro_batch)
{
	s->global_batch = global_batch > 0 ? global_batch : p->global_batch;
	s->micro = micro_batch > 0 ? micro_batch :
		   p->micro_batch > 0 ? p->micro_batch : 1;
	if (s->global_batch < 1)
		return rt_error_once(RT_EPLAN, "the plan has no global batch "
				     "(policy.train_global_batch_size is "
				     "unset); pass --global-batch N");
	if (s->global_batch % s->lanes)
		return rt_error_once(RT_EPLAN, "the global batch %lld does not "
				     "split over %d lanes (L = D x G); use a "
				     "multiple of %d", s->global_batch,
				     s->lanes, s->lanes);
	s->per_lane = s->global_batch / s->lanes;
	if (s->per_lane % s->micro)
		return rt_error_once(RT_EPLAN, "each lane gets %lld samples, "
				     "not a multiple of the micro batch %lld",
				     s->per_lane, s->micro);
	s->micro_batches = s->per_lane / s->micro;
	if (s->sp && (s->micro * (s->seq_len / s->cp)) % s->tp)
		return rt_error_once(RT_EPLAN, "sequence parallelism splits a "
				     "micro-batch's %lld tokens of this rank "
				     "over TP %d, which does not divide them; "
				     "use a seq_len that TP x CP divides",
				     s->micro * (s->seq_len / s->cp), s->tp);
	return 0;
}

int rt_model_shape(struct rt_shape *s, const struct rt_plan *p,
		   long long global_batch, long long micro_batch)
{
	const struct rt_settings *rt = &p->rt;
	const struct rt_rank *me = &p->ranks[p->me];
	struct dsz_dims d;

	memset(s, 0, sizeof(*s));
	s->tp = p->size[RT_TP];
	s->cp = p->size[RT_CP];
	s->g = p->size[RT_GTP];
	s->lanes = p->lanes;
	s->t = me->c[RT_TP];
	s->c = me->c[RT_CP];
	s->gr = me->c[RT_GTP];
	s->lane = me->lane;
	s->h = rt->hidden;
	s->ffn = rt->ffn;
	s->layers = rt->layers;
	s->heads = rt->heads;
	s->kv_heads = rt->kv_heads;
	s->hd = rt->head_dim;
	s->vocab = rt->vocab;
	s->seq_len = rt->seq_len;
	s->tie = rt->tie;
	s->qkv_bias = rt->qkv_bias;
	s->qk_norm = rt->qk_norm;
	s->sp = rt->sp && s->tp > 1;
	s->theta = rt->rope_theta;
	s->norm_eps = rt->norm_eps;
	s->eps = (float)rt->norm_eps;
	RCHECK(refuse_layout(p, s));
	RCHECK(shape_batch(s, p, global_batch, micro_batch));
	d = (struct dsz_dims){
		.h = s->h, .ffn = s->ffn, .layers = s->layers,
		.heads = s->heads, .kv_heads = s->kv_heads, .head_dim = s->hd,
		.vocab = s->vocab, .tie = s->tie, .qkv_bias = s->qkv_bias,
		.qk_norm = s->qk_norm, .sp = s->sp, .seq_len = s->seq_len,
		.micro = s->micro, .tp = s->tp, .g = s->g, .cp = s->cp,
	};
	dsz_fill(&s->z, &d);
	s->fl = s->z.fl;
	s->vp = s->z.vp;
	s->vl = s->z.vl;
	s->vfirst = s->t * s->vl;
	s->vvalid = s->vocab - s->vfirst;
	if (s->vvalid > s->vl)
		s->vvalid = s->vl;
	if (s->vvalid < 0)
		s->vvalid = 0;
	s->local_seq = s->seq_len / s->cp;
	s->tokens = s->z.tokens;
	s->local = s->z.local;
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
 * 3 + 4 l .. 6 + 4 l in forward order. */
static void layout_weights(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	double std2 = RT_INIT_STD / sqrt(2.0 * (double)s->layers);
	long long off = 0, H = s->heads, G = s->kv_heads, d = s->hd;
	struct rt_weight *w = m->w;
	char name[48];

	set_weight(w++, s, "embedding", RT_SPLIT_VOCAB, s->vocab, s->h, 1,
		   RT_INIT_STD, &off);
	if (!s->tie)
		set_weight(w++, s, "output", RT_SPLIT_VOCAB, s->vocab, s->h, 2,
			   RT_INIT_STD, &off);
	for (long long l = 0; l < s->layers; l++) {
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
	int first = s->tie ? 1 : 2;

	m->emb = &m->w[0];
	m->out = s->tie ? &m->w[0] : &m->w[1];
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
	m->lnf = norm + 2 * s->layers * s->h;
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
	A_NHL,   /* N x H/T */
	A_NKL,   /* N x G/T */
	A_LSE,   /* micro x H/T x local_seq */
	A_KKV,   /* micro x seq_len x kv: every CP rank's keys */
	A_NFC1,  /* N x 2 F/T */
	A_NFL,   /* N x F/T */
	A_NV,    /* N x Vp/T */
	A_N,     /* N */
	A_Q,     /* q */
	A_KV,    /* kv */
};

/* When an entry is allocated; else it aliases `alias` (or stays NULL). */
enum act_when { W_ALL, W_SP, W_QKN, W_BIAS, W_CP, W_CPMB };

struct act_entry {
	const char *name;
	size_t off, alias;
	enum act_size size;
	enum act_when when;
};

#define NONE ((size_t)-1)
#define LA(f, sz, w, al) { #f, offsetof(struct rt_layer_acts, f), al, sz, w }
#define GA(f, sz, w, al) { #f, offsetof(struct rt_acts, f), al, sz, w }

static const struct act_entry layer_table[] = {
	LA(x, A_LH, W_ALL, NONE),
	LA(rstd1, A_L, W_ALL, NONE),
	LA(n1, A_LH, W_ALL, NONE),
	LA(n1g, A_NH, W_SP, offsetof(struct rt_layer_acts, n1)),
	LA(qraw, A_NQ, W_QKN, NONE),
	LA(kraw, A_NKV, W_QKN, NONE),
	LA(qrstd, A_NHL, W_QKN, NONE),
	LA(krstd, A_NKL, W_QKN, NONE),
	LA(q, A_NQ, W_ALL, NONE),
	LA(k, A_NKV, W_ALL, NONE),
	LA(v, A_NKV, W_ALL, NONE),
	LA(kg, A_KKV, W_CP, offsetof(struct rt_layer_acts, k)),
	LA(vg, A_KKV, W_CP, offsetof(struct rt_layer_acts, v)),
	LA(o, A_NQ, W_ALL, NONE),
	LA(lse, A_LSE, W_ALL, NONE),
	LA(xm, A_LH, W_ALL, NONE),
	LA(rstd2, A_L, W_ALL, NONE),
	LA(n2, A_LH, W_ALL, NONE),
	LA(n2g, A_NH, W_SP, offsetof(struct rt_layer_acts, n2)),
	LA(u, A_NFC1, W_ALL, NONE),
	LA(sw, A_NFL, W_ALL, NONE),
};

static const struct act_entry global_table[] = {
	GA(xL, A_LH, W_ALL, NONE),
	GA(rstdf, A_L, W_ALL, NONE),
	GA(z, A_LH, W_ALL, NONE),
	GA(zg, A_NH, W_SP, offsetof(struct rt_acts, z)),
	GA(logits, A_NV, W_ALL, NONE),
	GA(cmax, A_N, W_ALL, NONE),
	GA(csum, A_N, W_ALL, NONE),
	GA(ctgt, A_N, W_ALL, NONE),
	GA(closs, A_N, W_ALL, NONE),
	GA(full_h, A_NH, W_ALL, NONE),
	GA(dx, A_LH, W_ALL, NONE),
	GA(dn, A_LH, W_ALL, NONE),
	GA(dtmp, A_LH, W_ALL, NONE),
	GA(dq, A_NQ, W_ALL, NONE),
	GA(dk, A_NKV, W_ALL, NONE),
	GA(dv, A_NKV, W_ALL, NONE),
	GA(dkg, A_KKV, W_CP, offsetof(struct rt_acts, dk)),
	GA(dvg, A_KKV, W_CP, offsetof(struct rt_acts, dv)),
	GA(kvtmp, A_KKV, W_CPMB, NONE),
	GA(dqraw, A_NQ, W_QKN, NONE),
	GA(dkraw, A_NKV, W_QKN, NONE),
	GA(dout, A_NQ, W_ALL, NONE),
	GA(du, A_NFC1, W_ALL, NONE),
	GA(dsw, A_NFL, W_ALL, NONE),
	GA(bq, A_Q, W_BIAS, NONE),
	GA(bk, A_KV, W_BIAS, NONE),
	GA(bv, A_KV, W_BIAS, NONE),
	GA(dbq, A_Q, W_BIAS, NONE),
	GA(dbk, A_KV, W_BIAS, NONE),
	GA(dbv, A_KV, W_BIAS, NONE),
};

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
	case A_NHL: return N * z->hl;
	case A_NKL: return N * z->kl;
	case A_LSE: return s->micro * z->hl * s->local_seq;
	case A_KKV: return z->keys * z->kv_l;
	case A_NFC1: return N * 2 * z->fl;
	case A_NFL: return N * z->fl;
	case A_NV: return N * z->vl;
	case A_N: return N;
	case A_Q: return z->q_l;
	case A_KV: return z->kv_l;
	}
	return 0;
}

static int act_on(const struct rt_shape *s, enum act_when w)
{
	return w == W_ALL || (w == W_SP && s->sp) ||
	       (w == W_QKN && s->qk_norm) || (w == W_BIAS && s->qkv_bias) ||
	       (w == W_CP && s->cp > 1) ||
	       (w == W_CPMB && s->cp > 1 && s->micro > 1);
}

#define SLOT(base, off) ((float **)(void *)((char *)(base) + (off)))

/* Allocates (or aliases) every entry of table t in the struct at base. */
static int acts_alloc(struct rt_model *m, const struct act_entry *t,
		      size_t n, void *base)
{
	for (size_t i = 0; i < n; i++) {
		if (act_on(&m->s, t[i].when))
			RCHECK(rt_alloc_f(m, SLOT(base, t[i].off),
					  act_elems(&m->s, t[i].size)));
		else if (t[i].alias != NONE)
			*SLOT(base, t[i].off) = *SLOT(base, t[i].alias);
	}
	return 0;
}

static void acts_free(struct rt_model *m, const struct act_entry *t,
		      size_t n, void *base)
{
	for (size_t i = 0; i < n; i++)
		if (act_on(&m->s, t[i].when))
			kern_free(m->k, *SLOT(base, t[i].off));
}

#define NTAB(t) (sizeof(t) / sizeof((t)[0]))

/* Token positions (rt_model.h): row r of a micro-batch is token i = r %
 * local_seq of its sample; with CP that is chunk c (first half) or
 * 2C-1-c (second) of 2C. kpos lists every CP rank's in rank order. */
static int32_t row_pos(const struct rt_shape *s, int c, long long i)
{
	long long chunk = s->seq_len / (2 * s->cp);

	if (s->cp == 1)
		return (int32_t)i;
	return (int32_t)(((i / chunk) ? 2 * s->cp - 1 - c : c) * chunk +
			 i % chunk);
}

static int upload_positions(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	long long N = s->tokens, n = N > s->seq_len ? N : s->seq_len;
	int32_t *h = malloc((size_t)n * sizeof(int32_t));
	int krc;

	if (!h)
		return rt_error(RT_ENOMEM, "out of memory");
	for (long long r = 0; r < N; r++)
		h[r] = row_pos(s, s->c, r % s->local_seq);
	krc = kern_upload(m->k, m->pos, h, (size_t)N * sizeof(int32_t));
	if (!krc)
		krc = kern_upload(m->k, m->qpos, h, (size_t)s->local_seq *
				  sizeof(int32_t));
	for (long long k = 0; k < s->seq_len; k++)
		h[k] = row_pos(s, (int)(k / s->local_seq), k % s->local_seq);
	if (!krc)
		krc = kern_upload(m->k, m->kpos, h, (size_t)s->seq_len *
				  sizeof(int32_t));
	free(h);
	KCHECK(krc);
	return 0;
}

static int alloc_activations(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	long long N = s->tokens;

	m->la = calloc((size_t)s->layers, sizeof(*m->la));
	m->sample = malloc((size_t)(s->seq_len + 1) * sizeof(int32_t));
	m->h_tokens = malloc((size_t)N * sizeof(int32_t));
	m->h_targets = malloc((size_t)N * sizeof(int32_t));
	m->h_loss = malloc((size_t)N * sizeof(float));
	if (!m->la || !m->sample || !m->h_tokens || !m->h_targets ||
	    !m->h_loss)
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
	KCHECK(kern_alloc(m->k, (size_t)s->local_seq * sizeof(int32_t),
			  (void **)&m->qpos));
	KCHECK(kern_alloc(m->k, (size_t)s->seq_len * sizeof(int32_t),
			  (void **)&m->kpos));
	return upload_positions(m);
}

/* Scratch: the largest padded TP-local tensor and shard of any weight. */
static int alloc_scratch(struct rt_model *m, const struct rt_plan *p)
{
	long long full = 0, shard = 0;
	const struct rt_weight *e = m->emb;

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
	RCHECK(rt_alloc_f(m, &m->gemb, (e->d0 + e->pad) * e->d1));
	m->bf16 = p->rt.bf16;
	/* bf16 runs multiply on tensor cores where the device has them */
	KCHECK(kern_set_math(m->k, m->bf16 ? KERN_MATH_BF16 :
			     KERN_MATH_FP32));
	m->prefetch = p->rt.prefetch;
	if (m->prefetch)
		RCHECK(rt_alloc_f(m, &m->full_b, full));
	for (int b = 0; b < (m->prefetch ? 2 : 1) && m->bf16; b++) {
		KCHECK(kern_alloc(m->k, (size_t)(shard > 0 ? shard : 1) *
				  sizeof(uint16_t), (void **)(b ? &m->shard16_b :
				  &m->shard16)));
		KCHECK(kern_alloc(m->k, (size_t)(full > 0 ? full : 1) *
				  sizeof(uint16_t), (void **)(b ? &m->full16_b :
				  &m->full16)));
	}
	return 0;
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
	if (!m->w || !m->layer || !m->seq)
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
	return init_values(m);
}

void rt_model_release(struct rt_model *m)
{
	float *bufs[] = {
		m->param, m->grad, m->adam_m, m->adam_v, m->full, m->gfull,
		m->gshard, m->gemb, m->full_b,
	};
	void *other[] = {
		m->tokens, m->targets, m->pos, m->qpos, m->kpos, m->shard16,
		m->full16, m->shard16_b, m->full16_b,
	};

	if (!m->k)
		return;
	for (size_t i = 0; i < NTAB(bufs); i++)
		kern_free(m->k, bufs[i]);
	for (size_t i = 0; i < NTAB(other); i++)
		kern_free(m->k, other[i]);
	for (long long l = 0; m->la && l < m->s.layers; l++)
		acts_free(m, layer_table, NTAB(layer_table), &m->la[l]);
	acts_free(m, global_table, NTAB(global_table), &m->a);
	free(m->la);
	free(m->w);
	free(m->layer);
	free(m->seq);
	free(m->sample);
	free(m->h_tokens);
	free(m->h_targets);
	free(m->h_loss);
	memset(m, 0, sizeof(*m));
}
