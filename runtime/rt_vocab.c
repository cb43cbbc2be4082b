/*
 * rt_vocab: the decoder's two ends, where the vocabulary is (rt_model.h):
 * the vocab-parallel embedding's lookup and its gradient's scatter, and
 * the head: final_layernorm, the output layer, the vocab-parallel
 * cross-entropy's statistics and token losses (kept on the device for the
 * step's end in training, rt_loss_flush) and its backward. bf16 runs hold
 * the logits in bf16 alone (kern_gemm_bf16, kern_ce_*_b16) and look the
 * embedding up in its bf16 copy. The layers between are rt_train.c's.
 */
#include "rt_model.h"

#include "rt_err.h"
#include "rt_train_int.h"

/* The vocab-parallel embedding: each TP rank looks up its ids, the sum
 * over TP (reduce-scattered with SP) is layer 0's input. */
int rt_embed_fwd(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	float *x0 = s->chunk_layers ? m->la[0].x : m->a.xL, *r;
	const float *W;
	const uint16_t *W16;

	/* bf16 runs look up the rows in the table's bf16 copy */
	RCHECK(rt_weights_next(m, &W, &W16));
	if (W16)
		KCHECK(kern_embed_fwd_b16(m->k, s->tokens, s->h, s->vfirst,
					  m->emb->d0_real, W16, m->tokens,
					  m->a.full_h));
	else
		KCHECK(kern_embed_fwd(m->k, s->tokens, s->h, s->vfirst,
				      m->emb->d0_real, W, m->tokens,
				      m->a.full_h));
	RCHECK(rt_tp_reduce(m, "embedding.out", m->a.full_h, x0, &r));
	if (r != x0)
		KCHECK(kern_copy(m->k, x0, r, (size_t)(s->local * s->h) *
				 sizeof(float)));
	return 0;
}

/* final_layernorm (of xL = pb + pr when the last layer's output is
 * pending), the output layer and the vocab-parallel CE statistics (kern.h:
 * max, then target logit and sum of exp, reduced over TP). bf16 runs keep
 * the logits in bf16 alone, as Megatron-core's bf16 output layer gives
 * them to its cross-entropy (kern_gemm_bf16, kern_ce_*_b16). */
int rt_head_fwd(struct rt_model *m, const float *pb, const float *pr,
		    double *loss_sum)
{
	const struct rt_shape *s = &m->s;
	struct rt_acts *a = &m->a;
	struct kern_ctx *k = m->k;
	long long N = s->tokens, h = s->h, vl = s->vl;
	const uint16_t *l16 = a->logits16;
	const float *W;
	const uint16_t *W16;

	RCHECK(rt_norm_in(m, pb, pr, a->xL, m->lnf, a->z, a->rstdf, a->z16));
	RCHECK(rt_tp_gather_in(m, "output.in", a->z, a->zg, a->zg16));
	RCHECK(rt_weights_next(m, &W, &W16));
	if (m->bf16)
		KCHECK(kern_gemm_bf16(k, 0, 1, N, vl, h, a->zg16, h, W16, h,
				      a->logits16));
	else
		KCHECK(kern_gemm(k, 0, 1, N, vl, h, 1.0f, a->zg, h, W, h, 0.0f,
				 a->logits, vl));
	KCHECK(m->bf16 ? kern_ce_max_b16(k, N, vl, s->vvalid, l16, a->cmax) :
	       kern_ce_max(k, N, vl, s->vvalid, a->logits, a->cmax));
	RCHECK(coll_all_reduce(m->c, RT_K_TP, "ce.max", a->cmax, N, COLL_MAX));
	KCHECK(m->bf16 ? kern_ce_target_b16(k, N, vl, s->vfirst, m->targets,
					    l16, a->ctgt) :
	       kern_ce_target(k, N, vl, s->vfirst, m->targets, a->logits,
			      a->ctgt));
	RCHECK(coll_all_reduce(m->c, RT_K_TP, "ce.target", a->ctgt, N,
			       COLL_SUM));
	KCHECK(m->bf16 ? kern_ce_sumexp_b16(k, N, vl, s->vvalid, l16, a->cmax,
					    a->csum) :
	       kern_ce_sumexp(k, N, vl, s->vvalid, a->logits, a->cmax,
			      a->csum));
	RCHECK(coll_all_reduce(m->c, RT_K_TP, "ce.sumexp", a->csum, N,
			       COLL_SUM));
	if (!loss_sum) { /* kept on the device until the step's end */
		if (m->loss_rows >= s->micro_batches)
			return rt_error(RT_EPLAN, "more forwards in the step "
					"than its %lld micro-batches",
					s->micro_batches);
		KCHECK(kern_ce_loss(k, N, a->cmax, a->csum, a->ctgt,
				    m->dloss + m->loss_rows++ * N));
		return 0;
	}
	KCHECK(kern_ce_loss(k, N, a->cmax, a->csum, a->ctgt, a->closs));
	/* the reductions under the watchdog, not in the download's wait */
	RCHECK(coll_wait_last(m->c));
	KCHECK(kern_download(k, m->h_loss, a->closs, (size_t)N *
			     sizeof(float)));
	for (long long i = 0; i < N; i++)
		*loss_sum += m->h_loss[i];
	return 0;
}

int rt_loss_flush(struct rt_model *m, double *loss_sum)
{
	long long n = m->loss_rows * m->s.tokens;

	m->loss_rows = 0;
	/* the step's collectives complete under the watchdog first: the
	 * download below waits for the device */
	RCHECK(coll_wait_last(m->c));
	if (n == 0)
		return 0;
	KCHECK(kern_download(m->k, m->h_loss, m->dloss, (size_t)n *
			     sizeof(float)));
	for (long long i = 0; i < n; i++)
		*loss_sum += m->h_loss[i];
	return 0;
}

/* Where the gradient of the embedding table w (this stage's copy: the
 * lookup's, and the output layer's when tied) is summed: straight into
 * w's shard gradient where rt_grad_out allows it (*beta = 1), else
 * m->gemb (*beta = 0), which rt_embed_bwd scatters. */
static float *emb_grad(struct rt_model *m, const struct rt_weight *w,
		       float *beta)
{
	float *g = rt_grad_out(m, w, beta);

	if (g != m->gfull)
		return g;
	*beta = 0.0f;
	return m->gemb;
}

/* CE, the output layer and final_layernorm: leaves dL/dxL in a->dx. The
 * output layer's gradient goes to m->gemb when tied (the embedding's
 * scatter sends both), else it is scattered now. */
int rt_head_bwd(struct rt_model *m, float scale)
{
	const struct rt_shape *s = &m->s;
	struct rt_acts *a = &m->a;
	struct kern_ctx *k = m->k;
	long long N = s->tokens, h = s->h, vl = s->vl;
	float *dlogits = a->logits, *r; /* in place (bf16: in logits16) */
	float beta = 0.0f;
	float *gout = s->tie ? emb_grad(m, m->out, &beta) :
		      rt_grad_out(m, m->out, &beta);
	const float *W;
	const uint16_t *W16;

	if (m->bf16)
		KCHECK(kern_ce_bwd_b16(k, N, vl, s->vvalid, s->vfirst,
				       m->targets, a->cmax, a->csum, scale,
				       a->logits16, a->logits16));
	else
		KCHECK(kern_ce_bwd(k, N, vl, s->vvalid, s->vfirst, m->targets,
				   a->cmax, a->csum, scale, a->logits,
				   dlogits));
	RCHECK(rt_weights_next(m, &W, &W16));
	KCHECK(kern_gemm_bf(k, 0, 0, N, h, vl, 1.0f, dlogits, a->logits16, vl,
			    W, W16, h, 0.0f, a->full_h, h));
	KCHECK(kern_gemm_bf(k, 1, 0, vl, h, N, 1.0f, dlogits, a->logits16, vl,
			    a->zg, a->zg16, h, beta, gout, h));
	RCHECK(rt_tp_reduce(m, "output.dgrad", a->full_h, a->dn, &r));
	if (!s->tie || !s->pre) /* untied, or the last stage's copy of the
				   embedding: nothing else adds to it */
		RCHECK(rt_scatter_grad(m, m->out, gout));
	KCHECK(kern_rmsnorm_bwd(k, s->local, h, a->xL, P(m, m->lnf), a->rstdf,
				r, a->dx, G(m, m->lnf)));
	return 0;
}

/* The embedding's gradient: the lookup's (all N rows) plus, tied, the
 * output layer's, in one scatter. */
int rt_embed_bwd(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	struct rt_weight *e = m->emb;
	const float *dfull = m->a.dx;
	float beta, *ge = emb_grad(m, e, &beta);

	/* the lookup's scatter adds: its buffer starts from zero unless the
	 * tied output layer wrote it (gemb), or this step wrote it already
	 * (in place: beta 1) */
	if ((ge == m->gemb && (!s->tie || !s->post)) ||
	    (ge != m->gemb && beta == 0.0f))
		KCHECK(kern_zero(m->k, ge, (size_t)((e->d0 + e->pad) * e->d1) *
				 sizeof(float)));
	/* the backward of embedding.out's reduce-scatter (no GEMM reads it:
	 * not rounded) */
	if (s->sp) {
		RCHECK(coll_all_gather(m->c, RT_K_TP, "embedding.dout",
				       m->a.dx, m->a.full_h, s->local * s->h));
		dfull = m->a.full_h;
	}
	KCHECK(kern_embed_bwd(m->k, s->tokens, s->h, s->vfirst, e->d0_real,
			      dfull, m->tokens, ge));
	return rt_scatter_grad(m, e, ge);
}
