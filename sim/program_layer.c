/*
 * program_layer: the ops of a program (docs/design.md §2.4-2.5): one
 * layer, the pipeline schedule, the train tail and the refits.
 *
 * Sources of the order:
 *  - train: NeMo-RL megatron_policy_worker.train(): an all-reduce of the
 *    data size over the data-parallel group (lanes), a world barrier,
 *    process_global_batch()'s all-reduce of the valid sequence and token
 *    counts over the same group, Megatron's 1F1B schedule
 *    (forward_backward_pipelining_without_interleaving; with PP 1 it is
 *    forward_backward_no_pipelining, the same sequence), finalize_model_grads
 *    and the distributed optimizer's step, the model-parallel reductions of
 *    the step status, the loss broadcast from the last stage, the closing
 *    world barrier and the metrics reduction.
 *  - per layer: the GTP all-gather of each large weight before its GEMM
 *    (again in backward), then its gradient's GTP reduce-scatter; TP
 *    all-reduces, or with sequence parallel an all-gather before and a
 *    reduce-scatter after attention and the MLP; a CP all-gather of keys and
 *    values; with experts an EP all-to-all dispatch and combine around the
 *    expert MLP and the expert GTP gathers on the expert grid.
 * A collective whose group has one member is a no-op and is left out.
 */
#include "ckmath.h"
#include "program_int.h"

/* ---- one layer -------------------------------------------------------- */

static int layer_moe(const struct prog_bld *b, long long layer)
{
	if (!b->moe)
		return 0;
	if (b->moe_uniform || layer < 0 || layer >= MODEL_TEXT_MAX)
		return 1;
	return b->moe_at[layer];
}

/* MoE layers among [first, first + n). */
static long long moe_layers(const struct prog_bld *b, long long first,
			    long long n)
{
	long long c = 0;

	for (long long l = first; l < first + n; l++)
		c += layer_moe(b, l);
	return c;
}

static long long act_ag(const struct prog_bld *b) /* SP all-gather sendcount */
{
	return ck_mul_sat(ck_mul_sat(b->tokens / b->p->tp, b->m.hidden_size),
			  b->o.act_bytes);
}

static long long act_full(const struct prog_bld *b)
{
	return ck_mul_sat(ck_mul_sat(b->tokens, b->m.hidden_size),
			  b->o.act_bytes);
}

static long long kv_bytes(const struct prog_bld *b)
{
	long long heads = model_kv_heads(&b->m) / b->p->tp;
	long long kvc = model_head_dim(&b->m);
	long long f[] = { b->tokens, 2, 1, kvc, b->o.act_bytes };

	if (heads < 1)
		heads = 1;
	f[2] = heads;
	return ck_prod_sat(f, 5);
}

static void gtp_gather(struct prog_bld *b, const struct prog_wt *w,
		       enum prog_phase ph, long long layer, long long mb)
{
	prog_emit(b, OP_ALL_GATHER, w->expert ? b->k_egtp : b->k_gtp, ph,
		  W_WEIGHT, w->idx, layer, mb, ck_mul_sat(w->shard, b->o.act_bytes),
		  0);
}

static void gtp_scatter(struct prog_bld *b, const struct prog_wt *w,
			long long layer, long long mb)
{
	prog_emit(b, OP_REDUCE_SCATTER, w->expert ? b->k_egtp : b->k_gtp,
		  PH_BWD, W_WEIGHT, w->idx, layer, mb,
		  ck_mul_sat(w->shard, b->o.grad_bytes), 0);
}

/* The TP collective entering (in = 1) or leaving a block in forward, or
 * its transpose in backward. */
static void tp_coll(struct prog_bld *b, int in, int bwd, long long layer,
		    long long mb, unsigned at)
{
	enum prog_phase ph = bwd ? PH_BWD : PH_FWD;
	enum prog_what what = bwd ? W_ACT_GRAD : W_ACT;

	if (b->o.sequence_parallel) {
		/* fwd: gather in, scatter out; bwd: the transposes */
		unsigned k = (in != bwd) ? OP_ALL_GATHER : OP_REDUCE_SCATTER;

		prog_emit(b, k, b->k_tp, ph, what, -1, layer, mb, act_ag(b),
			  at);
	} else if (in == bwd) {
		/* fwd: all-reduce after the row-parallel output; bwd: after
		 * the column-parallel input's gradient */
		prog_emit(b, OP_ALL_REDUCE, b->k_tp, ph, what, -1, layer, mb,
			  act_full(b), at);
	}
}

/* Bytes one rank sends in each all-to-all of an MoE layer: its tokens,
 * each routed to top-k experts, of the hidden size (its TP part under
 * sequence parallelism). */
static long long a2a_bytes(const struct prog_bld *b)
{
	long long topk = b->m.moe_router_topk > 0 ? b->m.moe_router_topk : 1;

	return ck_mul_sat(act_full(b), topk) /
	       (b->o.sequence_parallel ? b->p->tp : 1);
}

static void moe_fwd(struct prog_bld *b, long long layer, long long mb)
{
	long long a2a = a2a_bytes(b);

	prog_emit(b, OP_ALL_TO_ALL, b->k_ep, PH_FWD, W_DISPATCH, -1, layer, mb,
		  a2a, PROG_AT_MLP);
	for (size_t i = b->n_dense; i < b->n_w; i++)
		gtp_gather(b, &b->w[i], PH_FWD, layer, mb);
	prog_emit(b, OP_ALL_TO_ALL, b->k_ep, PH_FWD, W_COMBINE, -1, layer, mb,
		  a2a, PROG_AT_MLP);
}

static void moe_bwd(struct prog_bld *b, long long layer, long long mb)
{
	long long a2a = a2a_bytes(b);

	prog_emit(b, OP_ALL_TO_ALL, b->k_ep, PH_BWD, W_COMBINE, -1, layer, mb,
		  a2a, PROG_AT_MLP);
	for (size_t i = b->n_w; i-- > b->n_dense;) {
		gtp_gather(b, &b->w[i], PH_BWD, layer, mb);
		gtp_scatter(b, &b->w[i], layer, mb);
	}
	prog_emit(b, OP_ALL_TO_ALL, b->k_ep, PH_BWD, W_DISPATCH, -1, layer, mb,
		  a2a, PROG_AT_MLP);
}

/* Dense weights in model.h's order (qkv, proj, fc1, fc2): a column-
 * parallel one enters its block, a row-parallel one leaves it. */
static void layer_fwd(struct prog_bld *b, long long layer, long long mb)
{
	for (size_t i = 0; i < b->n_dense; i++) {
		const struct prog_wt *w = &b->w[i];
		unsigned at = w->mlp ? PROG_AT_MLP : 0;

		gtp_gather(b, w, PH_FWD, layer, mb);
		tp_coll(b, w->enter, 0, layer, mb, at);
		if (w->qkv)
			prog_emit(b, OP_ALL_GATHER, b->k_cp, PH_FWD, W_KV, -1,
				  layer, mb, kv_bytes(b), 0);
	}
	if (layer_moe(b, layer))
		moe_fwd(b, layer, mb);
	prog_emit(b, OP_COMPUTE, PROG_GK_NONE, PH_FWD, W_FLOPS, -1, layer, mb,
		  ck_mul_sat(b->layer_flops, b->tokens) /
		  (b->p->tp > 0 ? b->p->tp : 1), 0);
}

static void layer_bwd(struct prog_bld *b, long long layer, long long mb)
{
	if (layer_moe(b, layer))
		moe_bwd(b, layer, mb);
	for (size_t i = b->n_dense; i-- > 0;) {
		const struct prog_wt *w = &b->w[i];
		unsigned at = w->mlp ? PROG_AT_MLP : 0;

		gtp_gather(b, w, PH_BWD, layer, mb);
		if (w->qkv)
			prog_emit(b, OP_REDUCE_SCATTER, b->k_cp, PH_BWD,
				  W_KV_GRAD, -1, layer, mb, kv_bytes(b), 0);
		tp_coll(b, w->enter, 1, layer, mb, at);
		gtp_scatter(b, w, layer, mb);
	}
	prog_emit(b, OP_COMPUTE, PROG_GK_NONE, PH_BWD, W_FLOPS, -1, layer, mb,
		  ck_mul_sat(ck_mul_sat(2, b->layer_flops), b->tokens) /
		  (b->p->tp > 0 ? b->p->tp : 1), 0);
}

static void mb_fwd(struct prog_bld *b, long long mb)
{
	for (long long l = 0; l < b->pg->n_layers && !b->err; l++)
		layer_fwd(b, b->pg->first_layer + l, mb);
}

static void mb_bwd(struct prog_bld *b, long long mb)
{
	for (long long l = b->pg->n_layers; l-- > 0 && !b->err;)
		layer_bwd(b, b->pg->first_layer + l, mb);
}

/* Megatron's p2p_communication calls; the directions a first or last stage
 * lacks are dropped (recv_forward on stage 0 is a no-op). */
static void p2p(struct prog_bld *b, unsigned flags, enum prog_phase ph,
		long long mb)
{
	long long s = b->pg->stage, pp = b->p->pp;
	long long bytes = act_full(b) /
		(b->o.sequence_parallel ? b->p->tp : 1);

	if (s == 0)
		flags &= ~(PROG_RECV_FWD | PROG_SEND_BWD);
	if (s == pp - 1)
		flags &= ~(PROG_SEND_FWD | PROG_RECV_BWD);
	if (flags)
		prog_emit(b, OP_P2P, b->k_pp, ph, W_ACT, -1, -1, mb, bytes,
			  flags);
}

/* forward_backward_pipelining_without_interleaving (1F1B). */
void prog_schedule(struct prog_bld *b, int forward_only)
{
	long long m = b->pg->microbatches, s = b->pg->stage, pp = b->p->pp;
	long long warm = pp - s - 1 < m ? pp - s - 1 : m;
	long long rem = m - warm, f = 0, k = 0;

	for (long long i = 0; i < warm && !b->err; i++, f++) {
		p2p(b, PROG_RECV_FWD, PH_FWD, f);
		mb_fwd(b, f);
		p2p(b, PROG_SEND_FWD, PH_FWD, f);
	}
	if (rem > 0)
		p2p(b, PROG_RECV_FWD, PH_FWD, f);
	for (long long i = 0; i < rem && !b->err; i++) {
		int last = i == rem - 1;

		mb_fwd(b, f);
		if (forward_only) {
			p2p(b, PROG_SEND_FWD, PH_FWD, f);
			if (!last)
				p2p(b, PROG_RECV_FWD, PH_FWD, f + 1);
			f++;
			continue;
		}
		p2p(b, PROG_SEND_FWD | PROG_RECV_BWD, PH_FWD, f);
		f++;
		mb_bwd(b, k);
		if (last)
			p2p(b, PROG_SEND_BWD, PH_BWD, k);
		else
			p2p(b, PROG_SEND_BWD | PROG_RECV_FWD, PH_BWD, k);
		k++;
	}
	for (long long i = 0; !forward_only && i < warm && !b->err; i++, k++) {
		p2p(b, PROG_RECV_BWD, PH_BWD, k);
		mb_bwd(b, k);
		p2p(b, PROG_SEND_BWD, PH_BWD, k);
	}
}

/* Elements of one layer's GTP-sharded weights on this rank. */
static long long layer_shard(const struct prog_bld *b, int expert)
{
	long long n = 0;

	for (size_t i = 0; i < b->n_w; i++)
		if (b->w[i].expert == expert)
			n = ck_add_sat(n, b->w[i].shard);
	return n;
}

static long long ceil_div(long long a, long long d)
{
	return d > 0 ? a / d + (a % d != 0) : a;
}

/* finalize_model_grads' _allreduce_embedding_grads: the first and the last
 * stage hold the word embedding (tied output layer, or MTP's copy) and sum
 * its gradients over Megatron's embedding group; the other stages are not
 * in it and issue nothing. */
static void embedding_grads(struct prog_bld *b)
{
	long long s = b->pg->stage, pp = b->p->pp, tp = b->p->tp > 0 ? b->p->tp : 1;
	long long div = b->o.vocab_divisor > 0 ? b->o.vocab_divisor :
		b->m.make_vocab_size_divisible_by > 0 ?
		b->m.make_vocab_size_divisible_by : 128;
	long long rows = (b->m.vocab_size + div * tp - 1) / (div * tp) * div;

	if (pp < 2 || (s != 0 && s != pp - 1) ||
	    (!b->m.share_embeddings_and_output_weights &&
	     b->m.mtp_num_layers <= 0))
		return;
	prog_emit(b, OP_ALL_REDUCE, PROG_GK_EMBEDDING, PH_GRAD, W_EMBED_GRADS,
		  -1, -1, -1, ck_mul_sat(ck_mul_sat(rows, b->m.hidden_size),
					 b->o.grad_bytes), 0);
}

/* NeMo-RL's get_moe_metrics (Megatron's reduce_aux_losses_tracker_across_
 * ranks): one fp32 value per layer and MTP layer, all-reduced over the
 * pipeline group. A stage whose router never recorded a loss has no entry
 * unless the tracker is pre-initialised (opts.moe_tracker). */
static void moe_metrics(struct prog_bld *b)
{
	long long s = b->pg->stage, mtp = b->m.mtp_num_layers > 0 ?
		b->m.mtp_num_layers : 0;
	int recorded = b->o.moe_aux_loss &&
		(moe_layers(b, b->pg->first_layer, b->pg->n_layers) > 0 ||
		 (s == b->p->pp - 1 && mtp > 0));
	long long n = b->m.num_layers + mtp;

	if (!b->moe)
		return;
	if (!recorded) {
		if (b->o.moe_tracker == TRACKER_LAZY)
			return;
		if (b->o.moe_tracker == TRACKER_PREINIT_NO_MTP)
			n = b->m.num_layers;
	}
	prog_emit(b, OP_ALL_REDUCE, b->k_pp, PH_STEP, W_MOE_METRICS, -1, -1, -1,
		  n * 4, 0);
}

void prog_train_tail(struct prog_bld *b)
{
	long long dpcr = prog_gsize(b, b->k_dpcr),
		  edp = prog_gsize(b, b->k_edp);
	long long first = b->pg->first_layer, n = b->pg->n_layers;
	long long norms = ck_mul_sat(model_layer_replicated_params(&b->m), n);

	/* finalize_model_grads: the DP reduction of each layer strictly after
	 * its GTP reduce-scatters, which the backward pass issued above */
	for (long long l = n; l-- > 0;) {
		prog_emit(b, OP_REDUCE_SCATTER, b->k_dpcr, PH_GRAD, W_GRADS, -1,
			  first + l, -1,
			  ck_mul_sat(ceil_div(layer_shard(b, 0), dpcr),
				     b->o.grad_bytes),
			  0);
		if (b->moe)
			prog_emit(b, OP_REDUCE_SCATTER, b->k_edp, PH_GRAD,
				  W_GRADS, -1, first + l, -1,
				  ck_mul_sat(ceil_div(layer_shard(b, 1), edp),
					     b->o.grad_bytes), PROG_AT_MLP);
	}
	if (n)
		prog_emit(b, OP_ALL_REDUCE, b->k_dp_cp, PH_GRAD, W_NORM_GRADS,
			  -1, -1, -1, ck_mul_sat(norms, b->o.grad_bytes), 0);
	embedding_grads(b);
	/* optimizer.step(): clip by the global norm, then the distributed
	 * optimizer's param all-gather */
	prog_emit(b, OP_ALL_REDUCE, b->k_mp_gtp, PH_OPT, W_GRAD_NORM, -1, -1,
		  -1, 4, 0);
	for (long long l = 0; l < n; l++) {
		prog_emit(b, OP_ALL_GATHER, b->k_dpcr, PH_OPT, W_PARAMS, -1,
			  first + l, -1,
			  ck_mul_sat(ceil_div(layer_shard(b, 0), dpcr),
				     b->o.act_bytes),
			  0);
		if (b->moe)
			prog_emit(b, OP_ALL_GATHER, b->k_edp, PH_OPT, W_PARAMS,
				  -1, first + l, -1,
				  ck_mul_sat(ceil_div(layer_shard(b, 1), edp),
					     b->o.act_bytes), PROG_AT_MLP);
	}
	/* update_successful (logical and), grad_norm, num_zeros (max) */
	for (int i = 0; i < 3; i++)
		prog_emit(b, OP_ALL_REDUCE, b->k_mp_gtp, PH_OPT, W_STEP_STATUS,
			  -1, -1, -1, 4, 0);
	moe_metrics(b);
	if (b->p->pp > 1)
		prog_emit_root(b, b->k_pp, PH_STEP, W_LOSS, -1, -1,
			       64 * b->pg->microbatches, b->p->pp - 1);
	prog_emit(b, OP_BARRIER, PROG_GK_WORLD, PH_STEP, W_SYNC, -1, -1, -1, 0,
		  0);
	prog_emit(b, OP_ALL_REDUCE, b->k_dp, PH_STEP, W_METRICS, -1, -1, -1, 8,
		  0);
}

void prog_refit(struct prog_bld *b, int tp_gather)
{
	for (long long l = 0; l < b->pg->n_layers; l++) {
		for (size_t i = 0; i < b->n_w; i++) {
			const struct prog_wt *w = &b->w[i];
			long long layer = b->pg->first_layer + l;

			/* GTP first (rebuilds the TP slice), then TP */
			gtp_gather(b, w, PH_REFIT, layer, -1);
			if (tp_gather && w->tp_split)
				prog_emit(b, OP_ALL_GATHER,
					  w->expert ? b->k_etp : b->k_tp,
					  PH_REFIT, W_WEIGHT, w->idx, layer, -1,
					  ck_mul_sat(w->tp_local, b->o.act_bytes), 0);
		}
	}
}

void prog_refit_broadcast(struct prog_bld *b)
{
	/* Every rank takes part in every broadcast, whichever stage owns the
	 * layer, so the broadcasts cover the whole model in the same order. */
	for (long long l = 0; l < b->m.num_layers; l++)
		for (size_t i = 0; i < b->n_w; i++)
			prog_emit_root(b, PROG_GK_TRAIN_INFER, PH_REFIT,
				       W_WEIGHT, b->w[i].idx, l,
				       ck_mul_sat(b->w[i].full, b->o.act_bytes), 0);
}
