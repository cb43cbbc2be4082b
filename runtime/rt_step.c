/*
 * rt_step: one optimizer step of the decoder (rt_model.h): the token
 * count, the micro-batches (in order, or under PP in the pipeline's
 * schedule, rt_pp.c), the gradient reductions in finalize_model_grads's
 * order, the optimizer, the loss. The forward and backward are
 * rt_train.c's.
 */
#include "rt_model.h"

#include "rt_err.h"
#include "rt_pp.h"

/* After the micro-batches: the data-parallel reductions, then the TP sum
 * of the replicated gradients that differ over TP (finalize_model_grads's
 * order), then the optimizer. */
static int finish_grads(struct rt_model *m, long long step)
{
	long long n = m->n_shard + m->n_rep;

	RCHECK(coll_all_reduce(m->c, RT_K_DP_CP_REPLICATE, "grads", m->grad,
			       m->n_shard, COLL_SUM));
	RCHECK(coll_all_reduce(m->c, RT_K_DP_CP, "replicated_grads",
			       m->grad + m->n_shard, m->n_rep, COLL_SUM));
	if (m->tp_sum > 0)
		RCHECK(coll_all_reduce(m->c, RT_K_TP, "tp_grads",
				       m->grad + m->n_shard, m->tp_sum,
				       COLL_SUM));
	/* the two copies of a tied embedding (first and last stage) sum
	 * their gradients (finalize_model_grads, _allreduce_word_embedding_
	 * grads); a group of one issues nothing */
	if (m->s.tie && (m->s.pre || m->s.post)) {
		const struct rt_weight *e = m->s.pre ? m->emb : m->out;

		RCHECK(coll_all_reduce(m->c, RT_K_EMB, "embedding_grads",
				       m->grad + e->off, e->shard * e->d1,
				       COLL_SUM));
	}
	/* Adam writes the weights' bf16 copy as it updates them
	 * (rt_weights_refresh) */
	if (m->sgd)
		KCHECK(kern_sgd(m->k, n, (float)m->lr, m->param, m->grad));
	else
		KCHECK(kern_adam_bf(m->k, n, (float)m->lr, RT_ADAM_BETA1,
				    RT_ADAM_BETA2, RT_ADAM_EPS, step, m->param,
				    m->grad, m->adam_m, m->adam_v, m->param16,
				    m->bf16 ? m->n_shard : 0));
	m->param16_ok = m->bf16 && !m->sgd;
	return 0;
}

int rt_model_train_step(struct rt_model *m, long long step, double *loss,
			long long *tokens)
{
	const struct rt_shape *s = &m->s;
	double count[1], sum[1] = { 0 };

	coll_set_call(m->c, "train", step);
	m->loss_rows = 0; /* the forwards leave the losses on the device */
	RCHECK(rt_weights_refresh(m));
	RCHECK(rt_grads_begin(m));
	/* the loss's token count over the lanes */
	count[0] = (double)(s->micro_batches * s->tokens);
	RCHECK(coll_all_reduce_d(m->c, RT_K_DP_CP, "tokens", count, 1,
				 COLL_SUM));
	if (count[0] != (double)(s->global_batch * s->seq_len))
		return rt_error(RT_EPLAN, "the lanes hold %.0f tokens, the "
				"global batch has %lld", count[0],
				s->global_batch * s->seq_len);
	if (s->pp > 1)
		RCHECK(rt_pp_micro_batches(m, step, (float)(1.0 / count[0]),
					   NULL));
	for (long long mb = 0; s->pp == 1 && mb < s->micro_batches; mb++) {
		RCHECK(rt_load_micro_batch(m, step, mb));
		RCHECK(rt_forward(m, NULL));
		RCHECK(rt_backward_chunk(m, 0, (float)(1.0 / count[0])));
	}
	RCHECK(finish_grads(m, step));
	RCHECK(rt_loss_flush(m, sum)); /* the step's one wait */
	m->step = step;
	RCHECK(coll_all_reduce_d(m->c, RT_K_DP_CP, "loss", sum, 1, COLL_SUM));
	/* the loss is the last stage's: every stage gets it (the others add
	 * 0) */
	RCHECK(coll_all_reduce_d(m->c, RT_K_PP, "loss.pp", sum, 1, COLL_SUM));
	RCHECK(coll_barrier(m->c, RT_K_WORLD, "step"));
	*loss = sum[0] / count[0];
	*tokens = (long long)count[0];
	return 0;
}
