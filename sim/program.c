/*
 * program: per-stage collective programs (DESIGN.md 2.4-2.5).
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
#include "program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "program_rt.h"

void prog_opts_init(struct prog_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->stages_loc = o->tracker_loc = DIAG_NOLOC;
	o->sequence_parallel = 0;
	o->seq_length = 4096;
	o->act_bytes = 2;
	o->grad_bytes = 4;
	o->gtp_pad = 16;
}

void prog_opts_read_framework(struct prog_opts *o, const struct cfg_node *root)
{
	const char *t = NULL;
	long long v;

	if (cfg_int(root, "policy.megatron_cfg.num_layers_in_first_pipeline_stage",
		    &v) == 1 && v > 0)
		o->first_stage_layers = v;
	if (cfg_int(root, "policy.megatron_cfg.num_layers_in_last_pipeline_stage",
		    &v) == 1 && v > 0)
		o->last_stage_layers = v;
	if (cfg_int(root, "policy.megatron_cfg.make_vocab_size_divisible_by",
		    &v) == 1 && v > 0)
		o->vocab_divisor = v;
	o->moe_aux_loss = 1;
	if (cfg_str(root, "policy.megatron_cfg.moe_router_load_balancing_type",
		    &t) == 1 && strcmp(t, "none") == 0)
		o->moe_aux_loss = 0;
	if (cfg_path(root, "policy.megatron_cfg.pipeline_model_parallel_size"))
		o->stages_loc = cfg_path(root, "policy.megatron_cfg."
					 "pipeline_model_parallel_size")->loc;
	if (cfg_path(root, "gtplan.stack.moe_aux_loss_tracker"))
		o->tracker_loc = cfg_path(root,
			"gtplan.stack.moe_aux_loss_tracker")->loc;
	t = NULL;
	if (cfg_str(root, "gtplan.stack.moe_aux_loss_tracker", &t) == 1) {
		if (!strcmp(t, "lazy"))
			o->moe_tracker = TRACKER_LAZY;
		else if (!strcmp(t, "preinit_without_mtp"))
			o->moe_tracker = TRACKER_PREINIT_NO_MTP;
	}
}

void prog_default_shape(struct model_shape *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", "gtplan default shape");
	m->known = 1;
	m->num_layers = 4;
	m->hidden_size = 1024;
	m->ffn_hidden_size = 4096;
	m->num_attention_heads = 16;
	m->num_query_groups = 8;
	m->kv_channels = 64;
	m->vocab_size = 32000;
	m->gated_linear_unit = 1;
	m->loc = DIAG_NOLOC;
}

void prog_init(struct prog *pg)
{
	memset(pg, 0, sizeof(*pg));
	pg->stage = -1;
}

void prog_release(struct prog *pg)
{
	free(pg->ops);
	prog_init(pg);
}

int prog_push(struct prog *pg, const struct prog_op *op)
{
	if (pg->n == pg->cap) {
		size_t cap = pg->cap ? pg->cap * 2 : 64;
		struct prog_op *v;

		if (pg->n >= (size_t)PROG_MAX_OPS)
			return -1;
		if (cap > (size_t)PROG_MAX_OPS)
			cap = (size_t)PROG_MAX_OPS;
		v = realloc(pg->ops, cap * sizeof(*v));
		if (!v)
			return -1;
		pg->ops = v;
		pg->cap = cap;
	}
	pg->ops[pg->n++] = *op;
	return 0;
}

int prog_weight(struct prog *pg, const char *name)
{
	for (size_t i = 0; i < pg->n_weights; i++)
		if (!strcmp(pg->weights[i], name))
			return (int)i;
	if (pg->n_weights == PROG_MAX_WEIGHTS)
		return -1;
	pg->weights[pg->n_weights] = name;
	return (int)pg->n_weights++;
}

unsigned prog_kind(const char *name)
{
	for (size_t i = 0; i < lay_group_kind_count(); i++)
		if (!strcmp(lay_group_kind_at(i)->name, name))
			return (unsigned)i;
	return PROG_GK_NONE;
}

long long prog_microbatches(const struct plan *p, long long micro)
{
	long long n;

	if (micro <= 0)
		micro = p->micro_batch;
	if (p->global_batch <= 0 || micro <= 0 || p->lanes <= 0)
		return 1;
	n = p->global_batch / (p->lanes * micro);
	return n > 0 ? n : 1;
}

/* ---- building --------------------------------------------------------- */

/* One large weight as a rank sees it. */
struct wt {
	int idx;           /* in prog.weights */
	int expert;        /* on the expert grid */
	long long shard;   /* elements of this rank's GTP shard */
	long long tp_local;/* elements of the TP-local (unpadded) tensor */
	long long full;    /* elements of the logical tensor */
	int tp_split;      /* TP splits it */
	int enter;         /* column-parallel: enters its block */
	int mlp;           /* in the MLP block (else attention) */
	int qkv;           /* computes keys and values */
};

struct bld {
	struct prog *pg;
	const struct plan *p;
	struct model_shape m;
	struct prog_opts o;
	unsigned k_tp, k_cp, k_gtp, k_pp, k_dp, k_dp_cp, k_dpcr, k_mp_gtp;
	unsigned k_ep, k_egtp, k_etp, k_edp;
	struct wt w[PROG_MAX_WEIGHTS];
	size_t n_dense, n_w;  /* attention + dense MLP weights; all */
	int moe;
	/* per layer: MoE (model_layer_kinds); all MoE when moe_uniform */
	unsigned char moe_at[MODEL_TEXT_MAX];
	int moe_uniform;
	long long tokens;     /* tokens of one micro-batch on one CP rank */
	long long layer_flops;
	int err;
};

static long long gsize(const struct bld *b, unsigned k)
{
	const struct lay_group_kind *gk = lay_group_kind_at(k);
	const struct lay_grid *g;

	if (k == PROG_GK_EMBEDDING)
		return b->p->pp > 1 ? 2 : 1;
	if (!gk)
		return 1;
	g = gk->expert ? &b->p->expert : &b->p->dense;
	if (gk->expert && !b->p->expert_grid_ok)
		return 1;
	return lay_group_size(g, gk->axes);
}

/* Appends an op; returns 1 when it was kept. */
static int emit(struct bld *b, unsigned kind, unsigned group,
		enum prog_phase ph, enum prog_what what, int weight,
		long long layer, long long mb, long long amount, unsigned flags)
{
	struct prog_op op = {
		.kind = (uint8_t)kind, .group = (uint8_t)group,
		.phase = (uint8_t)ph, .flags = (uint8_t)flags,
		.weight = (int16_t)weight, .what = (uint16_t)what,
		.layer = (int32_t)layer, .mb = (int32_t)mb, .root = -1,
		.amount = amount,
	};

	if (b->err)
		return 0;
	/* one-member groups are no-ops; WORLD and p2p always run */
	if (kind != OP_COMPUTE && kind != OP_P2P && group < PROG_GK_WORLD &&
	    gsize(b, group) == 1)
		return 0;
	if (prog_push(b->pg, &op)) {
		b->err = 1;
		return 0;
	}
	return 1;
}

static void emit_root(struct bld *b, unsigned group, enum prog_phase ph,
		      enum prog_what what, int weight, long long layer,
		      long long amount, long long root)
{
	if (emit(b, OP_BROADCAST, group, ph, what, weight, layer, -1, amount, 0))
		b->pg->ops[b->pg->n - 1].root = (int32_t)root;
}

/* Elements of one GTP shard of a TP-local tensor [d0, d1]: d0 padded at the
 * tail to a multiple of pad x G, split in G (gtp_remat_shard_dim0). */
static long long gtp_shard(long long d0, long long d1, long long g, int pad)
{
	long long align = (long long)(pad > 0 ? pad : 1) * g;
	long long padlen = (align - d0 % align) % align;

	return (d0 + padlen) / g * d1;
}

static void add_weight(struct bld *b, const char *name, long long rows,
		       long long cols, enum model_split split, int expert)
{
	long long tp = expert ? b->p->etp : b->p->tp;
	long long g = expert ? b->p->egtp : b->p->gtp;
	long long d0 = rows, d1 = cols;
	struct wt *w;
	int idx = prog_weight(b->pg, name);

	if (idx < 0 || b->n_w == PROG_MAX_WEIGHTS)
		return;
	if (split == SPLIT_COLUMN)
		d0 = rows / tp;
	else if (split == SPLIT_ROW)
		d1 = cols / tp;
	w = &b->w[b->n_w++];
	w->idx = idx;
	w->expert = expert;
	w->full = rows * cols;
	w->tp_local = d0 * d1;
	w->shard = gtp_shard(d0, d1, g, b->o.gtp_pad);
	w->tp_split = split != SPLIT_NONE && tp > 1;
	w->enter = split != SPLIT_ROW;
	w->mlp = strstr(name, "fc") != NULL;
	w->qkv = strstr(name, "qkv") != NULL;
}

static void setup_weights(struct bld *b)
{
	struct model_weight mw[PROG_MAX_WEIGHTS];
	size_t n = model_layer_weights(&b->m, mw, PROG_MAX_WEIGHTS);
	long long ep = b->p->ep > 0 ? b->p->ep : 1;
	long long local = b->m.num_moe_experts / ep;
	long long topk = b->m.moe_router_topk > 0 ? b->m.moe_router_topk : 1;

	for (size_t i = 0; i < n; i++) {
		add_weight(b, mw[i].name, mw[i].rows, mw[i].cols, mw[i].split, 0);
		b->layer_flops += 2 * mw[i].rows * mw[i].cols;
	}
	b->n_dense = b->n_w;
	if (!b->moe)
		return;
	/* the rank's local experts, gathered as one grouped tensor */
	n = model_expert_weights(&b->m, mw, PROG_MAX_WEIGHTS);
	if (local < 1)
		local = 1;
	for (size_t i = 0; i < n; i++) {
		int col = mw[i].split == SPLIT_COLUMN;

		add_weight(b, mw[i].name, mw[i].rows * (col ? local : 1),
			   mw[i].cols * (col ? 1 : local), mw[i].split, 1);
		b->layer_flops += 2 * topk * mw[i].rows * mw[i].cols;
	}
}

/* ---- one layer -------------------------------------------------------- */

static int layer_moe(const struct bld *b, long long layer)
{
	if (!b->moe)
		return 0;
	if (b->moe_uniform || layer < 0 || layer >= MODEL_TEXT_MAX)
		return 1;
	return b->moe_at[layer];
}

/* MoE layers among [first, first + n). */
static long long moe_layers(const struct bld *b, long long first, long long n)
{
	long long c = 0;

	for (long long l = first; l < first + n; l++)
		c += layer_moe(b, l);
	return c;
}

static long long act_ag(const struct bld *b) /* SP all-gather sendcount */
{
	return b->tokens / b->p->tp * b->m.hidden_size * b->o.act_bytes;
}

static long long act_full(const struct bld *b)
{
	return b->tokens * b->m.hidden_size * b->o.act_bytes;
}

static long long kv_bytes(const struct bld *b)
{
	long long heads = model_kv_heads(&b->m) / b->p->tp;
	long long kvc = model_head_dim(&b->m);

	if (heads < 1)
		heads = 1;
	return b->tokens * 2 * heads * kvc * b->o.act_bytes;
}

static void gtp_gather(struct bld *b, const struct wt *w, enum prog_phase ph,
		       long long layer, long long mb)
{
	emit(b, OP_ALL_GATHER, w->expert ? b->k_egtp : b->k_gtp, ph, W_WEIGHT,
	     w->idx, layer, mb, w->shard * b->o.act_bytes, 0);
}

static void gtp_scatter(struct bld *b, const struct wt *w, long long layer,
			long long mb)
{
	emit(b, OP_REDUCE_SCATTER, w->expert ? b->k_egtp : b->k_gtp, PH_BWD,
	     W_WEIGHT, w->idx, layer, mb, w->shard * b->o.grad_bytes, 0);
}

/* The TP collective entering (in = 1) or leaving a block in forward, or
 * its transpose in backward. */
static void tp_coll(struct bld *b, int in, int bwd, long long layer,
		    long long mb, unsigned at)
{
	enum prog_phase ph = bwd ? PH_BWD : PH_FWD;
	enum prog_what what = bwd ? W_ACT_GRAD : W_ACT;

	if (b->o.sequence_parallel) {
		/* fwd: gather in, scatter out; bwd: the transposes */
		unsigned k = (in != bwd) ? OP_ALL_GATHER : OP_REDUCE_SCATTER;

		emit(b, k, b->k_tp, ph, what, -1, layer, mb, act_ag(b), at);
	} else if (in == bwd) {
		/* fwd: all-reduce after the row-parallel output; bwd: after
		 * the column-parallel input's gradient */
		emit(b, OP_ALL_REDUCE, b->k_tp, ph, what, -1, layer, mb,
		     act_full(b), at);
	}
}

static void moe_fwd(struct bld *b, long long layer, long long mb)
{
	long long topk = b->m.moe_router_topk > 0 ? b->m.moe_router_topk : 1;
	long long a2a = b->tokens * topk * b->m.hidden_size * b->o.act_bytes /
		(b->o.sequence_parallel ? b->p->tp : 1);

	emit(b, OP_ALL_TO_ALL, b->k_ep, PH_FWD, W_DISPATCH, -1, layer, mb, a2a,
	     PROG_AT_MLP);
	for (size_t i = b->n_dense; i < b->n_w; i++)
		gtp_gather(b, &b->w[i], PH_FWD, layer, mb);
	emit(b, OP_ALL_TO_ALL, b->k_ep, PH_FWD, W_COMBINE, -1, layer, mb, a2a,
	     PROG_AT_MLP);
}

static void moe_bwd(struct bld *b, long long layer, long long mb)
{
	long long topk = b->m.moe_router_topk > 0 ? b->m.moe_router_topk : 1;
	long long a2a = b->tokens * topk * b->m.hidden_size * b->o.act_bytes /
		(b->o.sequence_parallel ? b->p->tp : 1);

	emit(b, OP_ALL_TO_ALL, b->k_ep, PH_BWD, W_COMBINE, -1, layer, mb, a2a,
	     PROG_AT_MLP);
	for (size_t i = b->n_w; i-- > b->n_dense;) {
		gtp_gather(b, &b->w[i], PH_BWD, layer, mb);
		gtp_scatter(b, &b->w[i], layer, mb);
	}
	emit(b, OP_ALL_TO_ALL, b->k_ep, PH_BWD, W_DISPATCH, -1, layer, mb, a2a,
	     PROG_AT_MLP);
}

/* Dense weights in model.h's order (qkv, proj, fc1, fc2): a column-
 * parallel one enters its block, a row-parallel one leaves it. */
static void layer_fwd(struct bld *b, long long layer, long long mb)
{
	for (size_t i = 0; i < b->n_dense; i++) {
		const struct wt *w = &b->w[i];
		unsigned at = w->mlp ? PROG_AT_MLP : 0;

		gtp_gather(b, w, PH_FWD, layer, mb);
		tp_coll(b, w->enter, 0, layer, mb, at);
		if (w->qkv)
			emit(b, OP_ALL_GATHER, b->k_cp, PH_FWD, W_KV, -1, layer,
			     mb, kv_bytes(b), 0);
	}
	if (layer_moe(b, layer))
		moe_fwd(b, layer, mb);
	emit(b, OP_COMPUTE, PROG_GK_NONE, PH_FWD, W_FLOPS, -1, layer, mb,
	     b->layer_flops * b->tokens / (b->p->tp > 0 ? b->p->tp : 1), 0);
}

static void layer_bwd(struct bld *b, long long layer, long long mb)
{
	if (layer_moe(b, layer))
		moe_bwd(b, layer, mb);
	for (size_t i = b->n_dense; i-- > 0;) {
		const struct wt *w = &b->w[i];
		unsigned at = w->mlp ? PROG_AT_MLP : 0;

		gtp_gather(b, w, PH_BWD, layer, mb);
		if (w->qkv)
			emit(b, OP_REDUCE_SCATTER, b->k_cp, PH_BWD, W_KV_GRAD,
			     -1, layer, mb, kv_bytes(b), 0);
		tp_coll(b, w->enter, 1, layer, mb, at);
		gtp_scatter(b, w, layer, mb);
	}
	emit(b, OP_COMPUTE, PROG_GK_NONE, PH_BWD, W_FLOPS, -1, layer, mb,
	     2 * b->layer_flops * b->tokens / (b->p->tp > 0 ? b->p->tp : 1), 0);
}

static void mb_fwd(struct bld *b, long long mb)
{
	for (long long l = 0; l < b->pg->n_layers; l++)
		layer_fwd(b, b->pg->first_layer + l, mb);
}

static void mb_bwd(struct bld *b, long long mb)
{
	for (long long l = b->pg->n_layers; l-- > 0;)
		layer_bwd(b, b->pg->first_layer + l, mb);
}

/* Megatron's p2p_communication calls; the directions a first or last stage
 * lacks are dropped (recv_forward on stage 0 is a no-op). */
static void p2p(struct bld *b, unsigned flags, enum prog_phase ph,
		long long mb)
{
	long long s = b->pg->stage, pp = b->p->pp;
	long long bytes = b->tokens * b->m.hidden_size * b->o.act_bytes /
		(b->o.sequence_parallel ? b->p->tp : 1);

	if (s == 0)
		flags &= ~(PROG_RECV_FWD | PROG_SEND_BWD);
	if (s == pp - 1)
		flags &= ~(PROG_SEND_FWD | PROG_RECV_BWD);
	if (flags)
		emit(b, OP_P2P, b->k_pp, ph, W_ACT, -1, -1, mb, bytes, flags);
}

/* forward_backward_pipelining_without_interleaving (1F1B). */
static void schedule(struct bld *b, int forward_only)
{
	long long m = b->pg->microbatches, s = b->pg->stage, pp = b->p->pp;
	long long warm = pp - s - 1 < m ? pp - s - 1 : m;
	long long rem = m - warm, f = 0, k = 0;

	for (long long i = 0; i < warm; i++, f++) {
		p2p(b, PROG_RECV_FWD, PH_FWD, f);
		mb_fwd(b, f);
		p2p(b, PROG_SEND_FWD, PH_FWD, f);
	}
	if (rem > 0)
		p2p(b, PROG_RECV_FWD, PH_FWD, f);
	for (long long i = 0; i < rem; i++) {
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
	for (long long i = 0; !forward_only && i < warm; i++, k++) {
		p2p(b, PROG_RECV_BWD, PH_BWD, k);
		mb_bwd(b, k);
		p2p(b, PROG_SEND_BWD, PH_BWD, k);
	}
}

/* Elements of one layer's GTP-sharded weights on this rank. */
static long long layer_shard(const struct bld *b, int expert)
{
	long long n = 0;

	for (size_t i = 0; i < b->n_w; i++)
		if (b->w[i].expert == expert)
			n += b->w[i].shard;
	return n;
}

static long long ceil_div(long long a, long long d)
{
	return d > 0 ? (a + d - 1) / d : a;
}

/* finalize_model_grads' _allreduce_embedding_grads: the first and the last
 * stage hold the word embedding (tied output layer, or MTP's copy) and sum
 * its gradients over Megatron's embedding group; the other stages are not
 * in it and issue nothing. */
static void embedding_grads(struct bld *b)
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
	emit(b, OP_ALL_REDUCE, PROG_GK_EMBEDDING, PH_GRAD, W_EMBED_GRADS, -1,
	     -1, -1, rows * b->m.hidden_size * b->o.grad_bytes, 0);
}

/* NeMo-RL's get_moe_metrics (Megatron's reduce_aux_losses_tracker_across_
 * ranks): one fp32 value per layer and MTP layer, all-reduced over the
 * pipeline group. A stage whose router never recorded a loss has no entry
 * unless the tracker is pre-initialised (opts.moe_tracker). */
static void moe_metrics(struct bld *b)
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
	emit(b, OP_ALL_REDUCE, b->k_pp, PH_STEP, W_MOE_METRICS, -1, -1, -1,
	     n * 4, 0);
}

static void train_tail(struct bld *b)
{
	long long dpcr = gsize(b, b->k_dpcr), edp = gsize(b, b->k_edp);
	long long first = b->pg->first_layer, n = b->pg->n_layers;
	long long norms = model_layer_replicated_params(&b->m) * n;

	/* finalize_model_grads: the DP reduction of each layer strictly after
	 * its GTP reduce-scatters, which the backward pass issued above */
	for (long long l = n; l-- > 0;) {
		emit(b, OP_REDUCE_SCATTER, b->k_dpcr, PH_GRAD, W_GRADS, -1,
		     first + l, -1,
		     ceil_div(layer_shard(b, 0), dpcr) * b->o.grad_bytes, 0);
		if (b->moe)
			emit(b, OP_REDUCE_SCATTER, b->k_edp, PH_GRAD, W_GRADS,
			     -1, first + l, -1,
			     ceil_div(layer_shard(b, 1), edp) * b->o.grad_bytes,
			     PROG_AT_MLP);
	}
	if (n)
		emit(b, OP_ALL_REDUCE, b->k_dp_cp, PH_GRAD, W_NORM_GRADS, -1, -1,
		     -1, norms * b->o.grad_bytes, 0);
	embedding_grads(b);
	/* optimizer.step(): clip by the global norm, then the distributed
	 * optimizer's param all-gather */
	emit(b, OP_ALL_REDUCE, b->k_mp_gtp, PH_OPT, W_GRAD_NORM, -1, -1, -1, 4,
	     0);
	for (long long l = 0; l < n; l++) {
		emit(b, OP_ALL_GATHER, b->k_dpcr, PH_OPT, W_PARAMS, -1, first + l,
		     -1, ceil_div(layer_shard(b, 0), dpcr) * b->o.act_bytes, 0);
		if (b->moe)
			emit(b, OP_ALL_GATHER, b->k_edp, PH_OPT, W_PARAMS, -1,
			     first + l, -1,
			     ceil_div(layer_shard(b, 1), edp) * b->o.act_bytes,
			     PROG_AT_MLP);
	}
	/* update_successful (logical and), grad_norm, num_zeros (max) */
	for (int i = 0; i < 3; i++)
		emit(b, OP_ALL_REDUCE, b->k_mp_gtp, PH_OPT, W_STEP_STATUS, -1, -1,
		     -1, 4, 0);
	moe_metrics(b);
	if (b->p->pp > 1)
		emit_root(b, b->k_pp, PH_STEP, W_LOSS, -1, -1,
			  64 * b->pg->microbatches, b->p->pp - 1);
	emit(b, OP_BARRIER, PROG_GK_WORLD, PH_STEP, W_SYNC, -1, -1, -1, 0, 0);
	emit(b, OP_ALL_REDUCE, b->k_dp, PH_STEP, W_METRICS, -1, -1, -1, 8, 0);
}

static void refit(struct bld *b, int tp_gather)
{
	for (long long l = 0; l < b->pg->n_layers; l++) {
		for (size_t i = 0; i < b->n_w; i++) {
			const struct wt *w = &b->w[i];
			long long layer = b->pg->first_layer + l;

			/* GTP first (rebuilds the TP slice), then TP */
			gtp_gather(b, w, PH_REFIT, layer, -1);
			if (tp_gather && w->tp_split)
				emit(b, OP_ALL_GATHER,
				     w->expert ? b->k_etp : b->k_tp, PH_REFIT,
				     W_WEIGHT, w->idx, layer, -1,
				     w->tp_local * b->o.act_bytes, 0);
		}
	}
}

static void refit_broadcast(struct bld *b)
{
	/* Every rank takes part in every broadcast, whichever stage owns the
	 * layer, so the broadcasts cover the whole model in the same order. */
	for (long long l = 0; l < b->m.num_layers; l++)
		for (size_t i = 0; i < b->n_w; i++)
			emit_root(b, PROG_GK_TRAIN_INFER, PH_REFIT, W_WEIGHT,
				  b->w[i].idx, l, b->w[i].full * b->o.act_bytes,
				  0);
}

static void setup(struct bld *b, struct prog *pg, const struct plan *p,
		  const struct model_shape *m, const struct prog_opts *o)
{
	memset(b, 0, sizeof(*b));
	b->pg = pg;
	b->p = p;
	if (m && m->known) {
		b->m = *m;
	} else {
		prog_default_shape(&b->m);
		/* approximate sizes: the default's, with the model's layer
		 * structure (which layers are MoE, MTP, tied embeddings) */
		if (m && m->shape_known) {
			b->m.num_layers = m->num_layers;
			b->m.vocab_size = m->vocab_size;
			b->m.num_moe_experts = m->num_moe_experts;
			b->m.moe_ffn_hidden_size = b->m.ffn_hidden_size;
			b->m.moe_router_topk = m->moe_router_topk > 0 ?
				m->moe_router_topk : 2;
			b->m.mtp_num_layers = m->mtp_num_layers;
			b->m.share_embeddings_and_output_weights =
				m->share_embeddings_and_output_weights;
			b->m.make_vocab_size_divisible_by =
				m->make_vocab_size_divisible_by;
			memcpy(b->m.moe_layer_freq, m->moe_layer_freq,
			       sizeof(m->moe_layer_freq));
			memcpy(b->m.hybrid_layer_pattern,
			       m->hybrid_layer_pattern,
			       sizeof(m->hybrid_layer_pattern));
		}
	}
	if (o)
		b->o = *o;
	else
		prog_opts_init(&b->o);
	if (b->o.act_bytes <= 0)
		b->o.act_bytes = 2;
	if (b->o.grad_bytes <= 0)
		b->o.grad_bytes = 4;
	if (b->o.seq_length <= 0)
		b->o.seq_length = 4096;
	b->k_tp = prog_kind("tp");
	b->k_cp = prog_kind("cp");
	b->k_gtp = prog_kind("gtp");
	b->k_pp = prog_kind("pp");
	b->k_dp = prog_kind("dp");
	b->k_dp_cp = prog_kind("dp_cp");
	b->k_dpcr = prog_kind("dp_cp_replicate");
	b->k_mp_gtp = prog_kind("mp_gtp");
	b->k_ep = prog_kind("ep");
	b->k_egtp = prog_kind("egtp");
	b->k_etp = prog_kind("etp");
	b->k_edp = prog_kind("edp");
	b->moe = b->m.num_moe_experts > 0 && p->expert_grid_ok;
	b->moe_uniform = model_layer_kinds(&b->m, b->moe_at, MODEL_TEXT_MAX) != 0;
}

/* The layers of `stage`: Megatron's uneven split when the options give the
 * first / last stage's layers and the rest split evenly over the middle
 * stages; otherwise stage * L / PP (the even split, also the fallback
 * for a split Megatron refuses, GT600). */
static void stage_layers(const struct bld *b, long long pp, long long stage,
			 long long *first, long long *n)
{
	long long L = b->m.num_layers, f = b->o.first_stage_layers;
	long long l = b->o.last_stage_layers, mid = L, st = pp;

	if (pp > 1 && (f > 0 || l > 0)) {
		if (f > 0) {
			mid -= f;
			st--;
		}
		if (l > 0) {
			mid -= l;
			st--;
		}
		if (mid >= 0 && (mid > 0) == (st > 0) && (!st || mid % st == 0)) {
			long long each = st ? mid / st : 0;

			if (stage == 0 && f > 0) {
				*first = 0;
				*n = f;
			} else if (stage == pp - 1 && l > 0) {
				*first = L - l;
				*n = l;
			} else {
				*first = (f > 0 ? f : 0) +
					 (stage - (f > 0)) * each;
				*n = each;
			}
			return;
		}
	}
	*first = stage * L / pp;
	*n = (stage + 1) * L / pp - *first;
}

int prog_build(struct prog *pg, const struct plan *p,
	       const struct model_shape *m, enum call_program kind,
	       long long stage, const struct prog_opts *o)
{
	struct bld b;
	long long micro = p->micro_batch > 0 ? p->micro_batch : 1;
	long long pp = p->pp > 0 ? p->pp : 1;

	if (o && o->runtime_model &&
	    (kind == PROG_TRAIN || kind == PROG_FORWARD))
		return prog_rt_build(pg, p, kind, kind == PROG_TRAIN ? "train" :
				     "get_logprobs");
	prog_init(pg);
	setup(&b, pg, p, m, o);
	if (stage < 0 || stage >= pp)
		stage = 0;
	pg->stage = stage;
	stage_layers(&b, pp, stage, &pg->first_layer, &pg->n_layers);
	if (kind == PROG_FORWARD && b.o.logprob_micro_batch > 0)
		micro = b.o.logprob_micro_batch;
	pg->microbatches = prog_microbatches(p, micro);
	b.tokens = micro * b.o.seq_length / (p->cp > 0 ? p->cp : 1);
	if (b.tokens < 1)
		b.tokens = 1;
	setup_weights(&b);

	switch (kind) {
	case PROG_TRAIN:
		emit(&b, OP_ALL_REDUCE, b.k_dp, PH_STEP, W_DATASET, -1, -1, -1,
		     8, 0);
		emit(&b, OP_BARRIER, PROG_GK_WORLD, PH_STEP, W_SYNC, -1, -1, -1,
		     0, 0);
		emit(&b, OP_ALL_REDUCE, b.k_dp, PH_STEP, W_TOKENS, -1, -1, -1,
		     8, 0);
		schedule(&b, 0);
		train_tail(&b);
		break;
	case PROG_FORWARD:
		schedule(&b, 1);
		break;
	case PROG_REFIT_IPC:
		refit(&b, 1);
		break;
	case PROG_REFIT_BROADCAST:
		refit(&b, 1);
		refit_broadcast(&b);
		break;
	case PROG_REFIT_RESHARD:
		refit(&b, 0);
		break;
	case PROG_SAVE:
		emit(&b, OP_ALL_GATHER, b.k_dp_cp, PH_SAVE, W_RNG, -1, -1, -1,
		     5072, 0);
		emit(&b, OP_BARRIER, PROG_GK_WORLD, PH_SAVE, W_SYNC, -1, -1, -1,
		     0, 0);
		break;
	case PROG_LOAD:
		emit(&b, OP_BARRIER, PROG_GK_WORLD, PH_LOAD, W_SYNC, -1, -1, -1,
		     0, 0);
		break;
	case PROG_GROUP_INIT:
		emit(&b, OP_BARRIER, PROG_GK_WORLD, PH_INIT, W_SYNC, -1, -1, -1,
		     0, 0);
		break;
	case PROG_NONE:
	case PROG_COUNT:
		break;
	}
	if (b.err) {
		prog_release(pg);
		return -1;
	}
	return 0;
}

/* ---- queries and names ------------------------------------------------ */

uint64_t prog_groups_used(const struct prog *pg)
{
	uint64_t used = 0;

	for (size_t i = 0; i < pg->n; i++)
		if (pg->ops[i].group < 64)
			used |= 1ull << pg->ops[i].group;
	return used;
}

size_t prog_collectives(const struct prog *pg)
{
	size_t n = 0;

	for (size_t i = 0; i < pg->n; i++)
		n += pg->ops[i].kind != OP_COMPUTE;
	return n;
}

const char *prog_op_kind_name(enum prog_op_kind k)
{
	static const char *const names[OP_KIND_COUNT] = {
		"all-gather", "reduce-scatter", "all-reduce", "broadcast",
		"all-to-all", "barrier", "p2p exchange", "compute",
	};

	return (unsigned)k < OP_KIND_COUNT ? names[k] : "?";
}

const char *prog_group_name(unsigned group)
{
	const struct lay_group_kind *gk = lay_group_kind_at(group);

	if (group == PROG_GK_WORLD)
		return "WORLD";
	if (group == PROG_GK_TRAIN_INFER)
		return "train+inference";
	if (group == PROG_GK_EMBEDDING)
		return "embedding";
	return gk ? gk->name : "none";
}

const char *prog_phase_name(enum prog_phase ph)
{
	static const char *const names[PH_COUNT] = {
		"step", "forward", "backward", "gradient reduction",
		"optimizer", "refit", "save", "load", "init",
	};

	return (unsigned)ph < PH_COUNT ? names[ph] : "?";
}

/* Short group names as people write them: TP, CP, GTP, PP, EP; the rest
 * as layout names them. */
static const char *group_shown(unsigned group, char *buf, size_t len)
{
	const char *n = prog_group_name(group);

	if (!strcmp(n, "tp") || !strcmp(n, "cp") || !strcmp(n, "gtp") ||
	    !strcmp(n, "pp") || !strcmp(n, "ep") || !strcmp(n, "egtp") ||
	    !strcmp(n, "etp")) {
		size_t i;

		for (i = 0; n[i] && i + 1 < len; i++)
			buf[i] = (char)(n[i] - 'a' + 'A');
		buf[i] = '\0';
		return buf;
	}
	return n;
}

static const char *what_text(const struct prog *pg, const struct prog_op *op,
			     char *buf, size_t len)
{
	const char *wn = op->weight >= 0 && (size_t)op->weight < pg->n_weights ?
		pg->weights[op->weight] : "?";
	const char *blk = op->flags & PROG_AT_MLP ? "MLP" : "attention";

	switch (op->what) {
	case W_WEIGHT:
		snprintf(buf, len, "layer %d's %s weight%s", (int)op->layer, wn,
			 op->kind == OP_REDUCE_SCATTER ? " gradient" : "");
		break;
	case W_ACT:
		snprintf(buf, len, "layer %d's %s activations", (int)op->layer,
			 blk);
		break;
	case W_ACT_GRAD:
		snprintf(buf, len, "layer %d's %s activation gradients",
			 (int)op->layer, blk);
		break;
	case W_KV:
		snprintf(buf, len, "layer %d's keys and values", (int)op->layer);
		break;
	case W_KV_GRAD:
		snprintf(buf, len, "layer %d's key and value gradients",
			 (int)op->layer);
		break;
	case W_GRADS:
		snprintf(buf, len, "layer %d's %sweight gradients",
			 (int)op->layer, op->flags & PROG_AT_MLP ? "expert " : "");
		break;
	case W_PARAMS:
		snprintf(buf, len, "layer %d's updated %sparameters",
			 (int)op->layer, op->flags & PROG_AT_MLP ? "expert " : "");
		break;
	case W_DISPATCH:
		snprintf(buf, len, "layer %d's MoE token dispatch",
			 (int)op->layer);
		break;
	case W_COMBINE:
		snprintf(buf, len, "layer %d's MoE expert outputs",
			 (int)op->layer);
		break;
	default: {
		static const char *const fixed[W_COUNT] = {
			[W_TOKENS] = "the loss's valid sequence and token counts",
			[W_DATASET] = "the data size",
			[W_NORM_GRADS] = "the GTP-replicated parameters' "
					 "gradients (norms, biases)",
			[W_GRAD_NORM] = "the gradient norm",
			[W_STEP_STATUS] = "the step status",
			[W_LOSS] = "the loss metrics",
			[W_METRICS] = "the step's metrics",
			[W_RNG] = "the RNG states",
			[W_SYNC] = "",
			[W_FLOPS] = "",
			[W_EMBED_GRADS] = "the word embedding's gradients",
			[W_MOE_METRICS] = "the MoE auxiliary-loss metrics",
		};
		const char *t = op->what < W_COUNT && fixed[op->what] ?
			fixed[op->what] : "?";

		snprintf(buf, len, "%s", t);
	}
	}
	return buf;
}

char *prog_op_label(const struct prog *pg, const struct prog_op *op,
		    char *buf, size_t len)
{
	char what[160], gbuf[16], when[64];
	const char *ph = prog_phase_name((enum prog_phase)op->phase);

	if (op->mb >= 0)
		snprintf(when, sizeof(when), "%s, micro-batch %d", ph,
			 (int)op->mb);
	else
		snprintf(when, sizeof(when), "%s", ph);
	if (op->kind == OP_COMPUTE) {
		snprintf(buf, len, "the compute of layer %d (%s)", (int)op->layer,
			 when);
		return buf;
	}
	if (op->kind == OP_P2P) {
		unsigned f = op->flags;

		snprintf(buf, len, "the p2p exchange with the %s stage (%s%s%s%s"
			 "; %s)", f & PROG_TO_NEXT ? "next" : "previous",
			 f & PROG_SEND_FWD ? "send activation" : "",
			 f & PROG_RECV_FWD ? "receive activation" : "",
			 (f & (PROG_SEND_FWD | PROG_RECV_FWD)) &&
			 (f & (PROG_SEND_BWD | PROG_RECV_BWD)) ? ", " : "",
			 f & PROG_SEND_BWD ? "send gradient" :
			 f & PROG_RECV_BWD ? "receive gradient" : "", when);
		return buf;
	}
	if (pg->rt_call) {
		/* the runtime's own name of the collective and its number */
		prog_rt_what(pg, op, what, sizeof(what));
		snprintf(buf, len, "the %s %s \"%s\" (%s; gtplan-run's "
			 "collective #%ld of %s)",
			 group_shown(op->group, gbuf, sizeof(gbuf)),
			 prog_op_kind_name((enum prog_op_kind)op->kind), what,
			 when, (long)(op - pg->ops), pg->rt_call);
		return buf;
	}
	what_text(pg, op, what, sizeof(what));
	if (op->kind == OP_BARRIER)
		snprintf(buf, len, "the %s barrier (%s)",
			 group_shown(op->group, gbuf, sizeof(gbuf)), when);
	else
		snprintf(buf, len, "the %s %s of %s (%s)",
			 group_shown(op->group, gbuf, sizeof(gbuf)),
			 prog_op_kind_name((enum prog_op_kind)op->kind), what,
			 when);
	return buf;
}
