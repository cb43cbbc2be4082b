/*
 * rt_train: one train step of the runtime model: micro-batches of the
 * lane's share of the global batch, forward and backward written by hand
 * with the GTP, TP and data-parallel collectives (see rt_model.h), then
 * Adam on the local shards.
 */
#include "rt_model.h"

#include <string.h>

#include "rt_err.h"
#include "rt_text.h"

/* With CP, the sequence is cut into 2 x CP chunks and rank c keeps chunks
 * c and 2CP-1-c (Megatron's load-balanced split; the model has no
 * attention, so any split gives the same sums). */
int rt_load_micro_batch(struct rt_model *m, long long step, long long mb)
{
	const struct rt_shape *s = &m->s;
	long long first = (step - 1) * s->global_batch +
			  (long long)s->lane * s->per_lane + mb * s->micro;
	long long chunk = s->cp > 1 ? s->seq_len / (2 * s->cp) : s->seq_len;
	long long n = 0;

	for (long long j = 0; j < s->micro; j++) {
		rt_text_sample(m->text, m->seed, first + j, s->seq_len,
			       s->vocab, m->sample);
		for (int part = 0; part < (s->cp > 1 ? 2 : 1); part++) {
			long long c = part ? 2 * s->cp - 1 - s->c : s->c;

			for (long long i = 0; i < chunk; i++, n++) {
				long long pos = (s->cp > 1 ? c * chunk : 0) + i;

				m->h_tokens[n] = m->sample[pos];
				m->h_targets[n] = m->sample[pos + 1];
			}
		}
	}
	KCHECK(kern_upload(m->k, m->tokens, m->h_tokens,
			   (size_t)n * sizeof(int32_t)));
	KCHECK(kern_upload(m->k, m->targets, m->h_targets,
			   (size_t)n * sizeof(int32_t)));
	return 0;
}

static float *norm_w(struct rt_model *m, long long l)
{
	return m->param + m->norm_off + l * m->s.h;
}

static float *norm_g(struct rt_model *m, long long l)
{
	return m->grad + m->norm_off + l * m->s.h;
}

int rt_forward(struct rt_model *m, double *loss_sum)
{
	const struct rt_shape *s = &m->s;
	struct kern_ctx *k = m->k;
	long long T = s->tokens, h = s->h, fl = s->fl, vl = s->vl;
	long long L = s->layers;
	const float *W;

	RCHECK(rt_weights_begin(m, 1));
	/* vocab-parallel embedding: each TP rank looks up its ids */
	RCHECK(rt_weights_next(m, &W));
	KCHECK(kern_embed_fwd(k, T, h, s->vfirst, m->emb.d0_real, W,
			      m->tokens, m->x[0]));
	RCHECK(coll_all_reduce(m->c, RT_K_TP, "embedding.out", m->x[0], T * h,
			       COLL_SUM));
	for (long long l = 0; l < L; l++) {
		KCHECK(kern_rmsnorm_fwd(k, T, h, RT_NORM_EPS, m->x[l],
					norm_w(m, l), m->n[l], m->rstd[l]));
		RCHECK(rt_bf16(m, m->n[l], T * h));
		RCHECK(rt_weights_next(m, &W));
		KCHECK(kern_gemm(k, 0, 1, T, fl, h, 1.0f, m->n[l], h, W,
				 h, 0.0f, m->a[l], fl));
		KCHECK(kern_gelu_fwd(k, T * fl, m->a[l], m->b[l]));
		RCHECK(rt_bf16(m, m->b[l], T * fl));
		RCHECK(rt_weights_next(m, &W));
		KCHECK(kern_gemm(k, 0, 1, T, h, fl, 1.0f, m->b[l], fl, W,
				 fl, 0.0f, m->x[l + 1], h));
		RCHECK(coll_all_reduce(m->c, RT_K_TP, m->fc2[l].name,
				       m->x[l + 1], T * h, COLL_SUM));
		KCHECK(kern_axpy(k, T * h, 1.0f, m->x[l], m->x[l + 1]));
	}
	KCHECK(kern_rmsnorm_fwd(k, T, h, RT_NORM_EPS, m->x[L], norm_w(m, L),
				m->z, m->rstd_f));
	RCHECK(rt_bf16(m, m->z, T * h));
	/* tied output layer and vocab-parallel cross-entropy */
	RCHECK(rt_weights_next(m, &W));
	KCHECK(kern_gemm(k, 0, 1, T, vl, h, 1.0f, m->z, h, W, h, 0.0f,
			 m->logits, vl));
	KCHECK(kern_ce_max(k, T, vl, s->vvalid, m->logits, m->cmax));
	RCHECK(coll_all_reduce(m->c, RT_K_TP, "ce.max", m->cmax, T, COLL_MAX));
	KCHECK(kern_ce_target(k, T, vl, s->vfirst, m->targets, m->logits,
			      m->ctgt));
	RCHECK(coll_all_reduce(m->c, RT_K_TP, "ce.target", m->ctgt, T,
			       COLL_SUM));
	KCHECK(kern_ce_sumexp(k, T, vl, s->vvalid, m->logits, m->cmax,
			      m->csum));
	RCHECK(coll_all_reduce(m->c, RT_K_TP, "ce.sumexp", m->csum, T,
			       COLL_SUM));
	KCHECK(kern_ce_loss(k, T, m->cmax, m->csum, m->ctgt, m->closs));
	KCHECK(kern_download(k, m->h_loss, m->closs, (size_t)T * sizeof(float)));
	for (long long i = 0; i < T; i++)
		*loss_sum += m->h_loss[i];
	return 0;
}

/* Backward of one micro-batch; the loss is the token sum x `scale`. */
static int backward(struct rt_model *m, float scale)
{
	const struct rt_shape *s = &m->s;
	struct kern_ctx *k = m->k;
	long long T = s->tokens, h = s->h, fl = s->fl, vl = s->vl;
	long long L = s->layers;
	float *dlogits = m->logits; /* in place */
	const float *W;

	KCHECK(kern_ce_bwd(k, T, vl, s->vvalid, s->vfirst, m->targets,
			   m->cmax, m->csum, scale, m->logits, dlogits));
	RCHECK(rt_bf16(m, dlogits, T * vl));
	RCHECK(rt_weights_begin(m, 0));
	RCHECK(rt_weights_next(m, &W));
	/* dz = dlogits E (summed over the vocab slices), dE = dlogits^T z */
	KCHECK(kern_gemm(k, 0, 0, T, h, vl, 1.0f, dlogits, vl, W, h,
			 0.0f, m->dtmp, h));
	KCHECK(kern_gemm(k, 1, 0, vl, h, T, 1.0f, dlogits, vl, m->z, h, 0.0f,
			 m->gemb, h));
	RCHECK(coll_all_reduce(m->c, RT_K_TP, "output.dgrad", m->dtmp, T * h,
			       COLL_SUM));
	KCHECK(kern_rmsnorm_bwd(k, T, h, m->x[L], norm_w(m, L), m->rstd_f,
				m->dtmp, m->dx, norm_g(m, L)));
	for (long long l = L; l-- > 0;) {
		/* fc2 (row-parallel): its output gradient is dx itself */
		RCHECK(rt_bf16(m, m->dx, T * h));
		RCHECK(rt_weights_next(m, &W));
		KCHECK(kern_gemm(k, 0, 0, T, fl, h, 1.0f, m->dx, h, W,
				 fl, 0.0f, m->db, fl));
		KCHECK(kern_gemm(k, 1, 0, h, fl, T, 1.0f, m->dx, h, m->b[l],
				 fl, 0.0f, m->gfull, fl));
		RCHECK(rt_scatter_grad(m, &m->fc2[l], m->gfull));
		KCHECK(kern_gelu_bwd(k, T * fl, m->a[l], m->db, m->db));
		RCHECK(rt_bf16(m, m->db, T * fl));
		/* fc1 (column-parallel): input gradient summed over TP */
		RCHECK(rt_weights_next(m, &W));
		KCHECK(kern_gemm(k, 0, 0, T, h, fl, 1.0f, m->db, fl, W,
				 h, 0.0f, m->dn, h));
		KCHECK(kern_gemm(k, 1, 0, fl, h, T, 1.0f, m->db, fl, m->n[l],
				 h, 0.0f, m->gfull, h));
		RCHECK(coll_all_reduce(m->c, RT_K_TP, m->fc1[l].name, m->dn,
				       T * h, COLL_SUM));
		RCHECK(rt_scatter_grad(m, &m->fc1[l], m->gfull));
		KCHECK(kern_rmsnorm_bwd(k, T, h, m->x[l], norm_w(m, l),
					m->rstd[l], m->dn, m->dtmp,
					norm_g(m, l)));
		KCHECK(kern_axpy(k, T * h, 1.0f, m->dtmp, m->dx));
	}
	/* the embedding's gradient: output layer + lookup, one scatter */
	KCHECK(kern_embed_bwd(k, T, h, s->vfirst, m->emb.d0_real, m->dx,
			      m->tokens, m->gemb));
	return rt_scatter_grad(m, &m->emb, m->gemb);
}

int rt_model_train_step(struct rt_model *m, long long step, double *loss,
			long long *tokens)
{
	const struct rt_shape *s = &m->s;
	long long n = m->n_shard + m->n_rep;
	double count[1], sum[1] = { 0 };

	coll_set_call(m->c, "train", step);
	KCHECK(kern_zero(m->k, m->grad, (size_t)n * sizeof(float)));
	/* the loss's token count over the lanes (and CP ranks) */
	count[0] = (double)(s->micro_batches * s->tokens);
	RCHECK(coll_all_reduce_d(m->c, RT_K_DP_CP, "tokens", count, 1,
				 COLL_SUM));
	if (count[0] != (double)(s->global_batch * s->seq_len))
		return rt_error(RT_EPLAN, "the lanes hold %.0f tokens, the "
				"global batch has %lld", count[0],
				s->global_batch * s->seq_len);
	for (long long mb = 0; mb < s->micro_batches; mb++) {
		RCHECK(rt_load_micro_batch(m, step, mb));
		RCHECK(rt_forward(m, sum));
		RCHECK(backward(m, (float)(1.0 / count[0])));
	}
	/* after the GTP reduce-scatters: shards over dp_cp_replicate, the
	 * GTP-replicated norms over dp_cp */
	RCHECK(coll_all_reduce(m->c, RT_K_DP_CP_REPLICATE, "grads", m->grad,
			       m->n_shard, COLL_SUM));
	RCHECK(coll_all_reduce(m->c, RT_K_DP_CP, "norm_grads",
			       m->grad + m->n_shard, m->n_rep, COLL_SUM));
	if (m->sgd)
		KCHECK(kern_sgd(m->k, n, (float)m->lr, m->param, m->grad));
	else
		KCHECK(kern_adam(m->k, n, (float)m->lr, RT_ADAM_BETA1,
				 RT_ADAM_BETA2, RT_ADAM_EPS, step, m->param,
				 m->grad, m->adam_m, m->adam_v));
	m->step = step;
	RCHECK(coll_all_reduce_d(m->c, RT_K_DP_CP, "loss", sum, 1, COLL_SUM));
	RCHECK(coll_barrier(m->c, RT_K_WORLD, "step"));
	*loss = sum[0] / count[0];
	*tokens = (long long)count[0];
	return 0;
}
