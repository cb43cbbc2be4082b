/*
 * rt_model: sizes and refusals, the shard layout, initialisation from the
 * seed, memory, and the gathered dump of the logical weights (see
 * rt_model.h). The train step is in rt_train.c.
 */
#include "rt_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rt_data.h"
#include "rt_err.h"

int rt_kcheck(int kern_rc, const char *call, const char *file, int line)
{
	return rt_error(RT_EKERNEL, "%s:%d: %s: %s", file, line, call,
			kern_error_text(kern_rc));
}

/* ---- sizes ------------------------------------------------------------- */

int rt_model_shape(struct rt_shape *s, const struct rt_plan *p,
		   long long global_batch, long long micro_batch)
{
	const struct rt_settings *rt = &p->rt;
	const struct rt_rank *me = &p->ranks[p->me];

	memset(s, 0, sizeof(*s));
	s->tp = p->size[RT_TP];
	s->cp = p->size[RT_CP];
	s->g = p->size[RT_GTP];
	s->lanes = p->lanes;
	s->t = me->c[RT_TP];
	s->c = me->c[RT_CP];
	s->gr = me->c[RT_GTP];
	s->lane = me->lane;
	if (p->size[RT_PP] > 1)
		return rt_error_once(RT_EPLAN, "pipeline parallelism (PP %d) is "
				     "not run by gtplan-run yet; plan with "
				     "pipeline_model_parallel_size 1",
				     p->size[RT_PP]);
	if (p->ep > 1)
		return rt_error_once(RT_EPLAN, "the runtime model has no "
				     "experts, so EP %d has nothing to split; "
				     "plan with expert_model_parallel_size 1",
				     p->ep);
	s->h = rt->hidden;
	s->ffn = rt->ffn;
	s->layers = rt->layers;
	s->vocab = rt->vocab;
	s->seq_len = rt->seq_len;
	if (s->ffn % s->tp)
		return rt_error_once(RT_EPLAN, "gtplan.runtime.ffn %lld is not "
				     "divisible by TP %d (fc1 is column-"
				     "parallel over TP); use a multiple of %d",
				     s->ffn, s->tp, s->tp);
	if (s->cp > 1 && s->seq_len % (2 * s->cp))
		return rt_error_once(RT_EPLAN, "gtplan.runtime.seq_len %lld does "
				     "not split into 2 x CP = %d chunks (the "
				     "load-balanced CP split); use a multiple "
				     "of %d", s->seq_len, 2 * s->cp,
				     2 * s->cp);
	s->fl = s->ffn / s->tp;
	s->vp = (s->vocab + s->tp - 1) / s->tp * s->tp;
	s->vl = s->vp / s->tp;
	s->vfirst = s->t * s->vl;
	s->vvalid = s->vocab - s->vfirst;
	if (s->vvalid > s->vl)
		s->vvalid = s->vl;
	if (s->vvalid < 0)
		s->vvalid = 0;
	s->local_seq = s->seq_len / s->cp;

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
	s->tokens = s->micro * s->local_seq;
	return 0;
}

/* ---- layout and initial values ---------------------------------------- */

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

/* The shard's values: logical element (lr, lc) of the weight is
 * std x normal(seed, stream, lr x cols + lc); padding is zero. */
static void init_shard(const struct rt_weight *w, int gr, uint64_t seed,
		       float *dst)
{
	for (long long j = 0; j < w->shard; j++) {
		long long i = gr * w->shard + j; /* TP-local row */

		for (long long col = 0; col < w->d1; col++) {
			long long lr = w->row0 + i, lc = w->col0 + col;

			dst[j * w->d1 + col] = i < w->d0_real ?
				(float)(w->std * rt_rand_normal(seed, w->stream,
					(uint64_t)(lr * w->cols + lc))) : 0.0f;
		}
	}
}

/* Scratch sizes: a padded TP-local tensor and a shard. */
static void grow(const struct rt_weight *w, long long *full, long long *shard)
{
	if ((w->d0 + w->pad) * w->d1 > *full)
		*full = (w->d0 + w->pad) * w->d1;
	if (w->shard * w->d1 > *shard)
		*shard = w->shard * w->d1;
}

static int alloc_f(struct rt_model *m, float **p, long long n)
{
	KCHECK(kern_alloc(m->k, (size_t)(n > 0 ? n : 1) * sizeof(float),
			  (void **)p));
	return 0;
}

static int alloc_activations(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	long long T = s->tokens, L = s->layers;

	m->x = calloc((size_t)(L + 1), sizeof(float *));
	m->n = calloc((size_t)L, sizeof(float *));
	m->a = calloc((size_t)L, sizeof(float *));
	m->b = calloc((size_t)L, sizeof(float *));
	m->rstd = calloc((size_t)L, sizeof(float *));
	m->sample = malloc((size_t)(s->seq_len + 1) * sizeof(int32_t));
	m->h_tokens = malloc((size_t)T * sizeof(int32_t));
	m->h_targets = malloc((size_t)T * sizeof(int32_t));
	m->h_loss = malloc((size_t)T * sizeof(float));
	if (!m->x || !m->n || !m->a || !m->b || !m->rstd || !m->sample ||
	    !m->h_tokens || !m->h_targets || !m->h_loss)
		return rt_error(RT_ENOMEM, "out of memory");
	for (long long l = 0; l <= L; l++)
		RCHECK(alloc_f(m, &m->x[l], T * s->h));
	for (long long l = 0; l < L; l++) {
		RCHECK(alloc_f(m, &m->n[l], T * s->h));
		RCHECK(alloc_f(m, &m->a[l], T * s->fl));
		RCHECK(alloc_f(m, &m->b[l], T * s->fl));
		RCHECK(alloc_f(m, &m->rstd[l], T));
	}
	RCHECK(alloc_f(m, &m->z, T * s->h));
	RCHECK(alloc_f(m, &m->rstd_f, T));
	RCHECK(alloc_f(m, &m->logits, T * s->vl));
	RCHECK(alloc_f(m, &m->dx, T * s->h));
	RCHECK(alloc_f(m, &m->dn, T * s->h));
	RCHECK(alloc_f(m, &m->dtmp, T * s->h));
	RCHECK(alloc_f(m, &m->db, T * s->fl));
	RCHECK(alloc_f(m, &m->cmax, T));
	RCHECK(alloc_f(m, &m->csum, T));
	RCHECK(alloc_f(m, &m->ctgt, T));
	RCHECK(alloc_f(m, &m->closs, T));
	KCHECK(kern_alloc(m->k, (size_t)T * sizeof(int32_t),
			  (void **)&m->tokens));
	KCHECK(kern_alloc(m->k, (size_t)T * sizeof(int32_t),
			  (void **)&m->targets));
	return 0;
}

int rt_model_init(struct rt_model *m, const struct rt_plan *p,
		  const struct rt_shape *s, struct kern_ctx *k,
		  struct coll *c)
{
	long long off = 0, full = 0, shard = 0, L = s->layers;
	float *host;
	char name[48];

	memset(m, 0, sizeof(*m));
	m->k = k;
	m->c = c;
	m->s = *s;
	m->seed = (uint64_t)p->rt.seed;
	m->lr = p->rt.lr;
	m->fc1 = calloc((size_t)L, sizeof(*m->fc1));
	m->fc2 = calloc((size_t)L, sizeof(*m->fc2));
	if (!m->fc1 || !m->fc2)
		return rt_error(RT_ENOMEM, "out of memory");
	set_weight(&m->emb, s, "embedding", RT_SPLIT_VOCAB, s->vocab, s->h, 1,
		   RT_INIT_STD, &off);
	for (long long l = 0; l < L; l++) {
		snprintf(name, sizeof(name), "layers.%lld.fc1", l);
		set_weight(&m->fc1[l], s, name, RT_SPLIT_COLUMN, s->ffn, s->h,
			   (uint64_t)(2 + 2 * l), RT_INIT_STD, &off);
		snprintf(name, sizeof(name), "layers.%lld.fc2", l);
		set_weight(&m->fc2[l], s, name, RT_SPLIT_ROW, s->h, s->ffn,
			   (uint64_t)(3 + 2 * l),
			   RT_INIT_STD / sqrt(2.0 * (double)L), &off);
	}
	m->n_shard = off;
	m->norm_off = off;
	m->n_rep = (L + 1) * s->h;
	grow(&m->emb, &full, &shard);
	for (long long l = 0; l < L; l++) {
		grow(&m->fc1[l], &full, &shard);
		grow(&m->fc2[l], &full, &shard);
	}
	m->full_n = full;
	RCHECK(alloc_f(m, &m->param, m->n_shard + m->n_rep));
	RCHECK(alloc_f(m, &m->grad, m->n_shard + m->n_rep));
	RCHECK(alloc_f(m, &m->adam_m, m->n_shard + m->n_rep));
	RCHECK(alloc_f(m, &m->adam_v, m->n_shard + m->n_rep));
	RCHECK(alloc_f(m, &m->full, full));
	RCHECK(alloc_f(m, &m->gfull, full));
	RCHECK(alloc_f(m, &m->gshard, shard));
	RCHECK(alloc_f(m, &m->gemb, (m->emb.d0 + m->emb.pad) * m->emb.d1));
	m->bf16 = p->rt.bf16;
	if (m->bf16) {
		KCHECK(kern_alloc(k, (size_t)(shard > 0 ? shard : 1) *
				  sizeof(uint16_t), (void **)&m->shard16));
		KCHECK(kern_alloc(k, (size_t)(full > 0 ? full : 1) *
				  sizeof(uint16_t), (void **)&m->full16));
	}
	m->prefetch = p->rt.prefetch;
	if (m->prefetch) {
		RCHECK(alloc_f(m, &m->full_b, full));
		if (m->bf16) {
			KCHECK(kern_alloc(k, (size_t)(shard > 0 ? shard : 1) *
					  sizeof(uint16_t),
					  (void **)&m->shard16_b));
			KCHECK(kern_alloc(k, (size_t)(full > 0 ? full : 1) *
					  sizeof(uint16_t),
					  (void **)&m->full16_b));
		}
	}
	RCHECK(alloc_activations(m));

	/* initial values, built on the host and uploaded */
	host = malloc((size_t)(m->n_shard + m->n_rep) * sizeof(float));
	if (!host)
		return rt_error(RT_ENOMEM, "out of memory");
	init_shard(&m->emb, s->gr, m->seed, host + m->emb.off);
	for (long long l = 0; l < L; l++) {
		init_shard(&m->fc1[l], s->gr, m->seed, host + m->fc1[l].off);
		init_shard(&m->fc2[l], s->gr, m->seed, host + m->fc2[l].off);
	}
	for (long long i = 0; i < m->n_rep; i++)
		host[m->n_shard + i] = 1.0f;
	{
		int rc = kern_upload(k, m->param, host, (size_t)(m->n_shard +
					m->n_rep) * sizeof(float));

		free(host);
		KCHECK(rc);
	}
	return 0;
}

void rt_model_release(struct rt_model *m)
{
	float **bufs[] = {
		&m->param, &m->grad, &m->adam_m, &m->adam_v, &m->full,
		&m->gfull, &m->gshard, &m->gemb, &m->z, &m->rstd_f, &m->logits,
		&m->dx, &m->dn, &m->dtmp, &m->db, &m->cmax, &m->csum, &m->ctgt,
		&m->closs,
	};

	if (!m->k)
		return;
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		kern_free(m->k, *bufs[i]);
	for (long long l = 0; m->x && l <= m->s.layers; l++)
		kern_free(m->k, m->x[l]);
	for (long long l = 0; l < m->s.layers; l++) {
		if (m->n)
			kern_free(m->k, m->n[l]);
		if (m->a)
			kern_free(m->k, m->a[l]);
		if (m->b)
			kern_free(m->k, m->b[l]);
		if (m->rstd)
			kern_free(m->k, m->rstd[l]);
	}
	kern_free(m->k, m->tokens);
	kern_free(m->k, m->targets);
	kern_free(m->k, m->shard16);
	kern_free(m->k, m->full16);
	kern_free(m->k, m->full_b);
	kern_free(m->k, m->shard16_b);
	kern_free(m->k, m->full16_b);
	free(m->x);
	free(m->n);
	free(m->a);
	free(m->b);
	free(m->rstd);
	free(m->fc1);
	free(m->fc2);
	free(m->sample);
	free(m->h_tokens);
	free(m->h_targets);
	free(m->h_loss);
	memset(m, 0, sizeof(*m));
}

/* ---- GTP gather and scatter -------------------------------------------- */

int rt_gather_weight_exact(struct rt_model *m, const struct rt_weight *w)
{
	return coll_all_gather(m->c, RT_K_GTP, w->name, m->param + w->off,
			       m->full, w->shard * w->d1);
}

int rt_gather_weight(struct rt_model *m, const struct rt_weight *w)
{
	long long n = w->shard * w->d1;

	if (!m->bf16)
		return rt_gather_weight_exact(m, w);
	KCHECK(kern_to_bf16(m->k, n, m->param + w->off, m->shard16));
	RCHECK(coll_all_gather_bf16(m->c, RT_K_GTP, w->name, m->shard16,
				    m->full16, n));
	KCHECK(kern_from_bf16(m->k, n * m->s.g, m->full16, m->full));
	return 0;
}

/* Buffer b (0 or 1) of the prefetch pair. */
static float *full_of(struct rt_model *m, int b)
{
	return b ? m->full_b : m->full;
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
	{
		uint16_t *s16 = b ? m->shard16_b : m->shard16;
		uint16_t *f16 = b ? m->full16_b : m->full16;

		KCHECK(kern_to_bf16(m->k, n, m->param + w->off, s16));
		return coll_all_gather_start(m->c, b, RT_K_GTP, w->name, s16,
					     f16, n, 2);
	}
}

int rt_weights_begin(struct rt_model *m, int forward)
{
	long long L = m->s.layers;
	int n = 0;

	/* L <= RT_MAX_LAYERS (rt_plan), so the pass fits in RT_MAX_SEQ */
	m->seq[n++] = &m->emb;
	for (long long i = 0; i < L; i++) {
		long long l = forward ? i : L - 1 - i;

		m->seq[n++] = forward ? &m->fc1[l] : &m->fc2[l];
		m->seq[n++] = forward ? &m->fc2[l] : &m->fc1[l];
	}
	if (forward)
		m->seq[n++] = &m->emb;
	m->seq_n = n;
	m->seq_next = 0;
	if (m->prefetch)
		RCHECK(start_gather(m, 0));
	return 0;
}

int rt_weights_next(struct rt_model *m, const float **full)
{
	int i = m->seq_next, b = i % 2;
	const struct rt_weight *w;

	if (i >= m->seq_n)
		return rt_error(RT_EPLAN, "a pass asked for more weights than "
				"it named");
	m->seq_next++;
	w = m->seq[i];
	if (!m->prefetch) {
		RCHECK(rt_gather_weight(m, w));
		*full = m->full;
		return 0;
	}
	RCHECK(coll_all_gather_wait(m->c, b));
	if (m->bf16)
		KCHECK(kern_from_bf16(m->k, w->shard * w->d1 * m->s.g,
				      b ? m->full16_b : m->full16,
				      full_of(m, b)));
	/* the next weight's gather runs while this one is used */
	if (i + 1 < m->seq_n)
		RCHECK(start_gather(m, i + 1));
	*full = full_of(m, b);
	return 0;
}

int rt_bf16(struct rt_model *m, float *x, long long n)
{
	if (m->bf16)
		KCHECK(kern_round_bf16(m->k, n, x));
	return 0;
}

int rt_scatter_grad(struct rt_model *m, const struct rt_weight *w,
		    float *gfull)
{
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

		for (long long i = 0; i < w->d0; i++) {
			long long lr = w->split == RT_SPLIT_ROW ? i :
				       (long long)t * w->d0 + i;
			long long lc = w->split == RT_SPLIT_ROW ?
				       (long long)t * w->d1 : 0;

			if (lr >= w->rows) /* vocab padding */
				continue;
			memcpy(out + lr * w->cols + lc, part + i * w->d1,
			       (size_t)w->d1 * sizeof(float));
		}
	}
}

static int dump_weight(struct rt_model *m, const struct rt_weight *w,
		       FILE *f, float *parts, float *host, int *first)
{
	int root = coll_rank(m->c, RT_K_WORLD) == 0;

	RCHECK(rt_gather_weight_exact(m, w));
	RCHECK(coll_gather(m->c, RT_K_TP, w->name, m->full, m->gfull,
			   w->d0 * w->d1, 0));
	if (!root)
		return 0;
	KCHECK(kern_download(m->k, parts, m->gfull, (size_t)(m->s.tp *
			     w->d0 * w->d1) * sizeof(float)));
	assemble(w, &m->s, parts, host);
	write_tensor(f, w->name, w->rows, w->cols, host, first);
	return 0;
}

int rt_model_dump(struct rt_model *m, FILE *f)
{
	const struct rt_shape *s = &m->s;
	long long most = 0, L = s->layers;
	float *parts = NULL, *host = NULL;
	int first = 1, rc = 0, root = coll_rank(m->c, RT_K_WORLD) == 0;
	char name[48];

	coll_set_call(m->c, "dump", m->step);
	/* the TP gather lands in gfull, so it must hold TP TP-local tensors */
	most = m->full_n;
	if (s->vp * s->h > most)
		most = s->vp * s->h;
	if (s->ffn * s->h > most)
		most = s->ffn * s->h;
	kern_free(m->k, m->gfull);
	m->gfull = NULL;
	RCHECK(alloc_f(m, &m->gfull, most));
	parts = malloc((size_t)most * sizeof(float));
	host = malloc((size_t)most * sizeof(float));
	if (!parts || !host) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	if (root)
		fprintf(f, "{\"format\": \"gtplan-weights/1\", \"tensors\": [");
	rc = dump_weight(m, &m->emb, f, parts, host, &first);
	for (long long l = 0; !rc && l <= L; l++) {
		if (root) {
			int krc = kern_download(m->k, host, m->param +
				m->norm_off + l * s->h,
				(size_t)s->h * sizeof(float));

			if (krc) {
				rc = rt_kcheck(krc, "kern_download", __FILE__,
					       __LINE__);
				break;
			}
			if (l < L)
				snprintf(name, sizeof(name),
					 "layers.%lld.norm", l);
			else
				snprintf(name, sizeof(name), "final_norm");
			write_tensor(f, name, 1, s->h, host, &first);
		}
		if (l == L)
			break;
		rc = dump_weight(m, &m->fc1[l], f, parts, host, &first);
		if (!rc)
			rc = dump_weight(m, &m->fc2[l], f, parts, host, &first);
	}
	if (!rc && root) {
		fprintf(f, "\n]}\n");
		if (fflush(f) || ferror(f))
			rc = rt_error(RT_EIO, "write error in the weight dump");
	}
out:
	free(parts);
	free(host);
	return rc;
}
