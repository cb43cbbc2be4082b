/*
 * program_rt: gtplan-run's collectives as simulator programs (see
 * program_rt.h; the order is runtime/rt_train.c's, the sizes
 * runtime/rt_model.c's); their names and record lines are
 * program_rt_record.c's.
 */
#include "program_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"

/* Weights of prog.weights, in this order (a layer's by enum dsz_weight,
 * after the two vocabulary ones). */
enum { PRT_W_EMB, PRT_W_OUT, PRT_W_LAYER };

static const char *const weight_names[PRT_W_LAYER + DSZ_PER_LAYER] = {
	"embedding", "output", "qkv", "proj", "fc1", "fc2",
};

void prog_rt_shape(const struct plan *p, struct prog_rt_shape *s)
{
	prog_rt_shape_stage(p, 0, s);
}

void prog_rt_shape_stage(const struct plan *p, long long stage,
			 struct prog_rt_shape *s)
{
	const struct plan_rt_model *m = &p->runtime.model;
	long long lanes = p->lanes > 0 ? p->lanes : 1;

	memset(s, 0, sizeof(*s));
	s->d = (struct dsz_dims){
		.h = m->hidden, .ffn = m->ffn, .layers = m->layers,
		.heads = m->heads, .kv_heads = m->kv_heads > 0 ? m->kv_heads : 1,
		.head_dim = m->head_dim, .vocab = m->vocab,
		.tie = m->tie_embeddings, .qkv_bias = m->qkv_bias,
		.qk_norm = m->qk_norm, .seq_len = p->runtime.seq_len,
		.tp = p->tp > 0 ? (int)p->tp : 1,
		.g = p->gtp > 0 ? (int)p->gtp : 1,
		.cp = p->cp > 0 ? (int)p->cp : 1,
	};
	s->d.sp = m->sequence_parallel && s->d.tp > 1;
	s->bf16 = p->runtime.dtype && !strcmp(p->runtime.dtype, "bf16");
	s->cp_p2p = !strcmp(m->cp_comm_type, "p2p");
	/* gtplan-run: the plan's batch, the micro batch 1 when unset */
	s->global_batch = p->global_batch;
	s->micro = p->micro_batch > 0 ? p->micro_batch : 1;
	s->d.micro = s->micro;
	s->per_lane = s->global_batch / lanes;
	s->micro_batches = s->per_lane / s->micro;
	if (s->micro_batches < 1)
		s->micro_batches = 1;
	prog_rt_pp_shape(p, stage, s);
	dsz_fill(&s->z, &s->d);
}

/* rt_model.c's refuse_layout and shape_batch, as one sentence. */
int prog_rt_applies(const struct plan *p, char *why, size_t len)
{
	const struct plan_rt_model *m = &p->runtime.model;
	long long tp = p->tp > 0 ? p->tp : 1, cp = p->cp > 0 ? p->cp : 1;
	long long micro = p->micro_batch > 0 ? p->micro_batch : 1;

	if (!prog_rt_pp_applies(p, why, len))
		return 0;
	if (m->moe)
		snprintf(why, len, "%s is a mixture-of-experts model; "
			 "gtplan-run's decoder is dense", m->name);
	else if (p->ep > 1)
		snprintf(why, len, "the decoder has no experts, so EP %lld has "
			 "nothing to split; plan with "
			 "expert_model_parallel_size 1", p->ep);
	else if (cp > 1 && strcmp(m->cp_comm_type, "p2p") &&
		 strcmp(m->cp_comm_type, "all_gather"))
		snprintf(why, len, "cp_comm_type '%s' is not run by gtplan-run "
			 "(it runs Megatron's 'p2p' ring and 'all_gather'); set "
			 "policy.megatron_cfg.cp_comm_type to one of them",
			 m->cp_comm_type);
	else if (cp > 1 && p->runtime.seq_len % (2 * cp))
		snprintf(why, len, "gtplan.runtime.seq_len %lld does not split "
			 "into 2 x CP = %lld chunks (the load-balanced CP "
			 "split); use a multiple of %lld", p->runtime.seq_len,
			 2 * cp, 2 * cp);
	else if (m->kv_heads < 1 || m->heads % m->kv_heads ||
		 m->heads % tp || m->kv_heads % tp)
		snprintf(why, len, "TP %lld does not divide the %lld heads and "
			 "%lld query groups of %s", tp, m->heads, m->kv_heads,
			 m->name);
	else if (m->ffn % tp)
		snprintf(why, len, "the MLP size %lld of %s is not divisible by "
			 "TP %lld (linear_fc1 is column-parallel over TP); use "
			 "a multiple of %lld", m->ffn, m->name, tp, tp);
	else if (m->head_dim % 2)
		snprintf(why, len, "head_dim %lld of %s is odd; rotate-half "
			 "RoPE needs an even one", m->head_dim, m->name);
	else if (m->sequence_parallel && tp > 1 &&
		 (micro * (p->runtime.seq_len / cp)) % tp)
		snprintf(why, len, "sequence parallelism splits a micro-batch's "
			 "%lld tokens of a rank over TP %lld, which does not "
			 "divide them", micro * (p->runtime.seq_len / cp), tp);
	else
		return 1;
	return 0;
}

const char *prog_rt_model_key(const struct settings *s)
{
	return s->model_key;
}

/* ---- building ----------------------------------------------------------- */

/* One weight a pass uses: which (PRT_W_*), and its layer (-1: none). */
struct use {
	int w;
	long long layer;
};

struct rbld {
	struct prog *pg;
	const struct plan *p;
	struct prog_rt_shape s;
	unsigned k_tp, k_cp, k_gtp, k_dp_cp, k_dpcr, k_pp;
	int err;
	/* the pass being built: its weights in order of use, the next one,
	 * and whether gathers run one ahead (runtime.prefetch) */
	struct use *seq;
	long long n, next;
	enum prog_phase ph;
	long long mb;
	int prefetch;
};

static long long group_size(const struct rbld *b, unsigned group)
{
	const struct lay_group_kind *gk = lay_group_kind_at(group);

	if (group == PROG_GK_WORLD)
		return b->p->world;
	if (group == PROG_GK_EMBEDDING) /* first and last stage */
		return b->s.pp > 1 && (!b->s.d.skip_pre ||
				       !b->s.d.skip_post) ? 2 : 1;
	return gk ? lay_group_size(&b->p->dense, gk->axes) : 1;
}

/* Appends one collective; runtime/coll*.c issue nothing on a group of one. */
static void rop(struct rbld *b, unsigned kind, unsigned group,
		enum prog_what what, int weight, long long layer,
		long long count, unsigned dtype, unsigned redop,
		enum prog_rt_label label)
{
	long long elem = dtype == PROG_DT_FP64 ? 8 :
			 dtype == PROG_DT_FP32 ? 4 :
			 dtype == PROG_DT_BF16 ? 2 : 0;
	struct prog_op op = {
		.kind = (uint8_t)kind, .group = (uint8_t)group,
		.phase = (uint8_t)b->ph, .weight = (int16_t)weight,
		.what = (uint16_t)what, .layer = (int32_t)layer,
		.mb = (int32_t)b->mb, .root = -1, .redop = (uint8_t)redop,
		.dtype = (uint8_t)dtype, .label = (uint16_t)label,
		.amount = count * elem,
	};

	if (b->err || group_size(b, group) <= 1)
		return;
	if (prog_push(b->pg, &op))
		b->err = 1;
}

static long long shard_of(const struct rbld *b, int w)
{
	return w < PRT_W_LAYER ? b->s.z.shard_emb :
	       b->s.z.shard[w - PRT_W_LAYER];
}

/* rt_gather_weight: the GTP all-gather of weight w. */
static void gather(struct rbld *b, int w, long long layer)
{
	rop(b, OP_ALL_GATHER, b->k_gtp, W_WEIGHT, w, layer, shard_of(b, w),
	    b->s.bf16 ? PROG_DT_BF16 : PROG_DT_FP32, 0, PRT_L_WEIGHT);
}

/* rt_weights_begin: a pass of b->n weights (b->seq) starts; with prefetch
 * the first one's gather is issued now. */
static void pass_begin(struct rbld *b, enum prog_phase ph)
{
	b->ph = ph;
	b->next = 0;
	if (b->prefetch && b->n > 0)
		gather(b, b->seq[0].w, b->seq[0].layer);
}

/* rt_weights_next: the pass uses its next weight (w of layer); just in
 * time its gather is issued now, with prefetch the next one's is (the
 * runtime starts it once this one has arrived). */
static void use(struct rbld *b, int w, long long layer)
{
	long long i = b->next++;

	if (i >= b->n || b->seq[i].w != w || b->seq[i].layer != layer) {
		b->err = 1;
		return;
	}
	if (!b->prefetch)
		gather(b, w, layer);
	else if (i + 1 < b->n)
		gather(b, b->seq[i + 1].w, b->seq[i + 1].layer);
}

/* The weights of a forward (fwd 1) or a backward, as runtime/rt_weights.c
 * orders them (rt_weights_begin). */
static void pass_weights(struct rbld *b, int fwd, int v)
{
	static const int bwd_order[DSZ_PER_LAYER] = {
		DSZ_FC2, DSZ_FC1, DSZ_PROJ, DSZ_QKV,
	};
	int out = b->s.d.tie ? PRT_W_EMB : PRT_W_OUT;
	long long n = 0, L = b->s.chunk_layers, l0 = b->s.chunk_first[v];
	int pre = !b->s.d.skip_pre && v == 0;
	int head = !b->s.d.skip_post && v == b->s.vpp - 1;

	if (fwd ? pre : head)
		b->seq[n++] = (struct use){ fwd ? PRT_W_EMB : out, -1 };
	for (long long i = 0; i < L; i++)
		for (int j = 0; j < DSZ_PER_LAYER; j++)
			b->seq[n++] = (struct use){
				PRT_W_LAYER + (fwd ? j : bwd_order[j]),
				l0 + (fwd ? i : L - 1 - i) };
	if (fwd && head)
		b->seq[n++] = (struct use){ out, -1 };
	b->n = n;
}

/* rt_scatter_grad: the GTP reduce-scatter of w's gradient. */
static void scatter(struct rbld *b, int w, long long layer)
{
	rop(b, OP_REDUCE_SCATTER, b->k_gtp, W_WEIGHT, w, layer,
	    shard_of(b, w), PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_WEIGHT);
}

/* rt_train.c's rt_tp_gather_in / the SP all-gather of a gradient: local
 * rows of h over TP, only with SP. */
static void tp_gather(struct rbld *b, enum prog_what what, int w,
		      long long layer, enum prog_rt_label label)
{
	if (b->s.d.sp)
		rop(b, OP_ALL_GATHER, b->k_tp, what, w, layer,
		    b->s.z.local * b->s.d.h, PROG_DT_FP32, 0, label);
}

/* rt_train.c's rt_tp_reduce: all-reduce of N x h, or with SP the reduce-
 * scatter to local x h. */
static void tp_reduce(struct rbld *b, enum prog_what what, int w,
		      long long layer, enum prog_rt_label label)
{
	long long h = b->s.d.h;

	if (b->s.d.sp)
		rop(b, OP_REDUCE_SCATTER, b->k_tp, what, w, layer,
		    b->s.z.local * h, PROG_DT_FP32, PROG_REDOP_SUM, label);
	else
		rop(b, OP_ALL_REDUCE, b->k_tp, what, w, layer,
		    b->s.z.tokens * h, PROG_DT_FP32, PROG_REDOP_SUM, label);
}

/* One step of rt_cp.c's ring: `count` floats each way, forward (to the
 * next CP rank) or reversed. */
static void ring_step(struct rbld *b, long long layer, int fwd,
		      long long count)
{
	struct prog_op *op;
	size_t n = b->pg->n;

	rop(b, OP_SEND_RECV, b->k_cp, fwd ? W_KV : W_KV_GRAD,
	    PRT_W_LAYER + DSZ_QKV, layer, count, PROG_DT_FP32, 0,
	    fwd ? PRT_L_KV : PRT_L_DKV);
	if (b->pg->n == n)
		return;
	op = &b->pg->ops[n];
	op->flags = fwd ? PROG_SEND_FWD | PROG_RECV_FWD :
		    PROG_SEND_BWD | PROG_RECV_BWD;
}

/* rt_cp.c's ring_fwd and ring_bwd: C - 1 forward steps of keys and values
 * (2 N kv); C backward steps, the first of keys and values, the middle
 * ones of them and a gradient (4 N kv), the last of a gradient. */
static void cp_ring(struct rbld *b, long long layer, int fwd)
{
	long long n = b->s.z.tokens * b->s.z.kv_l, C = b->s.d.cp;

	for (long long i = 0; i < (fwd ? C - 1 : C); i++)
		ring_step(b, layer, fwd, fwd || i == 0 || i + 1 == C ? 2 * n :
			  4 * n);
}

/* rt_cp.c: the CP exchange of layer `layer`'s keys and values: the ring
 * (p2p), or (all_gather) cp_gather_kv's all-gathers of keys, then values
 * (N x G/T x d each), and cp_scatter_dkv's reduce-scatters. */
static void cp_kv(struct rbld *b, long long layer, int fwd)
{
	long long n = b->s.z.tokens * b->s.z.kv_l;
	int w = PRT_W_LAYER + DSZ_QKV;

	if (b->s.cp_p2p) {
		cp_ring(b, layer, fwd);
		return;
	}
	if (fwd) {
		rop(b, OP_ALL_GATHER, b->k_cp, W_KV, w, layer, n, PROG_DT_FP32,
		    0, PRT_L_K);
		rop(b, OP_ALL_GATHER, b->k_cp, W_KV, w, layer, n, PROG_DT_FP32,
		    0, PRT_L_V);
		return;
	}
	rop(b, OP_REDUCE_SCATTER, b->k_cp, W_KV_GRAD, w, layer, n,
	    PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_DK);
	rop(b, OP_REDUCE_SCATTER, b->k_cp, W_KV_GRAD, w, layer, n,
	    PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_DV);
}

static void tp_stat(struct rbld *b, unsigned redop, enum prog_rt_label l)
{
	rop(b, OP_ALL_REDUCE, b->k_tp, W_LOSS, -1, -1, b->s.z.tokens,
	    PROG_DT_FP32, redop, l);
}

/* rt_train.c: rt_forward_chunk() of chunk v (the whole model with PP 1) */
static void forward(struct rbld *b, int v)
{
	int out = b->s.d.tie ? PRT_W_EMB : PRT_W_OUT;
	long long l0 = b->s.chunk_first[v], l1 = l0 + b->s.chunk_layers;

	pass_weights(b, 1, v);
	pass_begin(b, PH_FWD);
	if (!b->s.d.skip_pre && v == 0) {
		use(b, PRT_W_EMB, -1);
		tp_reduce(b, W_ACT, -1, -1, PRT_L_EMBED_OUT);
	}
	for (long long l = l0; l < l1 && !b->err; l++) {
		int w = PRT_W_LAYER;

		tp_gather(b, W_ACT, w + DSZ_QKV, l, PRT_L_IN);
		use(b, w + DSZ_QKV, l);
		cp_kv(b, l, 1);
		use(b, w + DSZ_PROJ, l);
		tp_reduce(b, W_ACT, w + DSZ_PROJ, l, PRT_L_OUT);
		tp_gather(b, W_ACT, w + DSZ_FC1, l, PRT_L_IN);
		use(b, w + DSZ_FC1, l);
		use(b, w + DSZ_FC2, l);
		tp_reduce(b, W_ACT, w + DSZ_FC2, l, PRT_L_OUT);
	}
	if (b->s.d.skip_post || v != b->s.vpp - 1)
		return;
	tp_gather(b, W_ACT, -1, -1, PRT_L_OUTPUT_IN);
	use(b, out, -1);
	tp_stat(b, PROG_REDOP_MAX, PRT_L_CE_MAX);
	tp_stat(b, PROG_REDOP_SUM, PRT_L_CE_TARGET);
	tp_stat(b, PROG_REDOP_SUM, PRT_L_CE_SUMEXP);
}

/* rt_train.c: mlp_block_bwd() and attn_block_bwd() of layer l */
static void layer_backward(struct rbld *b, long long l)
{
	int w = PRT_W_LAYER;

	tp_gather(b, W_ACT_GRAD, w + DSZ_FC2, l, PRT_L_DOUT);
	use(b, w + DSZ_FC2, l);
	scatter(b, w + DSZ_FC2, l);
	use(b, w + DSZ_FC1, l);
	tp_reduce(b, W_ACT_GRAD, w + DSZ_FC1, l, PRT_L_DGRAD);
	scatter(b, w + DSZ_FC1, l);
	tp_gather(b, W_ACT_GRAD, w + DSZ_PROJ, l, PRT_L_DOUT);
	use(b, w + DSZ_PROJ, l);
	scatter(b, w + DSZ_PROJ, l);
	cp_kv(b, l, 0);
	use(b, w + DSZ_QKV, l);
	tp_reduce(b, W_ACT_GRAD, w + DSZ_QKV, l, PRT_L_DGRAD);
	scatter(b, w + DSZ_QKV, l);
}

/* rt_train.c: rt_backward_chunk() of chunk v; the last stage's copy of
 * a tied embedding scatters its gradient after output.dgrad */
static void backward(struct rbld *b, int v)
{
	int out = b->s.d.tie ? PRT_W_EMB : PRT_W_OUT;
	long long l0 = b->s.chunk_first[v], l1 = l0 + b->s.chunk_layers;

	pass_weights(b, 0, v);
	pass_begin(b, PH_BWD);
	if (!b->s.d.skip_post && v == b->s.vpp - 1) {
		use(b, out, -1);
		tp_reduce(b, W_ACT_GRAD, -1, -1, PRT_L_OUTPUT_DGRAD);
		if (!b->s.d.tie)
			scatter(b, PRT_W_OUT, -1);
		else if (b->s.d.skip_pre)
			scatter(b, PRT_W_EMB, -1);
	}
	for (long long l = l1; l-- > l0 && !b->err;)
		layer_backward(b, l);
	if (b->s.d.skip_pre || v != 0)
		return;
	tp_gather(b, W_ACT_GRAD, -1, -1, PRT_L_EMBED_DOUT);
	scatter(b, PRT_W_EMB, -1);
}

/* One exchange of the schedule (rt_pp.c's xchg): the op carries its
 * parts in flags and their chunks and micro-batches in weight / mb (sent)
 * and root / layer (received), for its label. */
static void exchange(struct rbld *b, const struct pps_op *o)
{
	int next = o->peer == PPS_NEXT;
	unsigned flags = (o->send ? (next ? PROG_SEND_FWD : PROG_SEND_BWD) :
			  0) | (o->recv ? (next ? PROG_RECV_BWD :
					   PROG_RECV_FWD) : 0);
	struct prog_op op = {
		.kind = OP_P2P, .group = (uint8_t)b->k_pp,
		.phase = (uint8_t)b->ph, .flags = (uint8_t)flags,
		.weight = (int16_t)o->send_chunk, .what = W_ACT,
		.layer = (int32_t)o->recv_mb, .mb = (int32_t)o->send_mb,
		.root = o->recv_chunk, .dtype = PROG_DT_FP32,
		.label = PRT_L_P2P, .redop = (uint8_t)(b->s.vpp > 1),
		.amount = b->s.z.local * b->s.d.h * 4,
	};

	if (!b->err && prog_push(b->pg, &op))
		b->err = 1;
}

/* rt_pp.c: the train step's micro-batches in schedule order. */
static void pipeline(struct rbld *b)
{
	const struct prog_rt_shape *s = &b->s;
	struct pps_op *ops = malloc((size_t)pps_max_ops(s->vpp,
				    s->micro_batches) * sizeof(*ops));
	long long n = ops ? pps_build(s->pp, s->stage, s->vpp,
				      s->micro_batches, ops) : -1;

	for (long long i = 0; i < n && !b->err; i++) {
		b->mb = ops[i].kind == PPS_XCHG ? -1 : ops[i].mb;
		if (ops[i].kind == PPS_FWD)
			forward(b, ops[i].chunk);
		else if (ops[i].kind == PPS_BWD)
			backward(b, ops[i].chunk);
		else
			exchange(b, &ops[i]);
	}
	if (n < 0)
		b->err = 1;
	free(ops);
}

/* rt_train.c: rt_model_train_step() and finish_grads() */
static void train(struct rbld *b)
{
	const struct dsz_sizes *z = &b->s.z;

	b->ph = PH_STEP;
	b->mb = -1;
	rop(b, OP_ALL_REDUCE, b->k_dp_cp, W_TOKENS, -1, -1, 1, PROG_DT_FP64,
	    PROG_REDOP_SUM, PRT_L_TOKENS);
	if (b->s.pp > 1)
		pipeline(b);
	for (long long mb = 0; b->s.pp == 1 && mb < b->s.micro_batches &&
	     !b->err; mb++) {
		b->mb = mb;
		forward(b, 0);
		backward(b, 0);
	}
	b->ph = PH_GRAD;
	b->mb = -1;
	rop(b, OP_ALL_REDUCE, b->k_dpcr, W_GRADS, -1, -1, z->n_shard,
	    PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_GRADS);
	rop(b, OP_ALL_REDUCE, b->k_dp_cp, W_NORM_GRADS, -1, -1, z->n_rep,
	    PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_REP_GRADS);
	if (z->tp_sum > 0)
		rop(b, OP_ALL_REDUCE, b->k_tp, W_NORM_GRADS, -1, -1,
		    z->tp_sum, PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_TP_GRADS);
	if (b->s.d.tie && b->s.pp > 1 &&
	    (!b->s.d.skip_pre || !b->s.d.skip_post))
		rop(b, OP_ALL_REDUCE, PROG_GK_EMBEDDING, W_EMBED_GRADS, -1, -1,
		    z->shard_emb, PROG_DT_FP32, PROG_REDOP_SUM,
		    PRT_L_EMB_GRADS);
	b->ph = PH_STEP;
	rop(b, OP_ALL_REDUCE, b->k_dp_cp, W_LOSS, -1, -1, 1, PROG_DT_FP64,
	    PROG_REDOP_SUM, PRT_L_LOSS);
	rop(b, OP_ALL_REDUCE, b->k_pp, W_LOSS, -1, -1, 1, PROG_DT_FP64,
	    PROG_REDOP_SUM, PRT_L_LOSS_PP);
	rop(b, OP_BARRIER, PROG_GK_WORLD, W_SYNC, -1, -1, 0, PROG_DT_NONE, 0,
	    PRT_L_STEP);
}

int prog_rt_build(struct prog *pg, const struct plan *p,
		  enum call_program kind, const char *rt_call)
{
	return prog_rt_build_stage(pg, p, kind, rt_call, 0);
}

/* A forward-only call's micro-batch mb (rt_pp_forward_only). */
static void forward_only(struct rbld *b, long long mb)
{
	const struct prog_rt_shape *s = &b->s;

	b->mb = mb;
	for (int v = 0; v < s->vpp && !b->err; v++) {
		struct pps_op o = { .kind = PPS_XCHG, .peer = PPS_PREV,
				    .recv = 1, .recv_chunk = v,
				    .recv_mb = mb };

		if (s->pp > 1 && (s->d.skip_pre || v > 0))
			exchange(b, &o);
		forward(b, v);
		o = (struct pps_op){ .kind = PPS_XCHG, .peer = PPS_NEXT,
				     .send = 1, .send_chunk = v,
				     .send_mb = mb };
		if (s->pp > 1 && (s->d.skip_post || v < s->vpp - 1))
			exchange(b, &o);
	}
}

int prog_rt_build_stage(struct prog *pg, const struct plan *p,
			enum call_program kind, const char *rt_call,
			long long stage)
{
	struct rbld b;
	long long L;

	prog_init(pg);
	memset(&b, 0, sizeof(b));
	b.pg = pg;
	b.p = p;
	prog_rt_shape_stage(p, stage, &b.s);
	L = b.s.d.layers > 0 ? b.s.d.layers : 0;
	b.k_tp = prog_kind("tp");
	b.k_cp = prog_kind("cp");
	b.k_gtp = prog_kind("gtp");
	b.k_dp_cp = prog_kind("dp_cp");
	b.k_dpcr = prog_kind("dp_cp_replicate");
	b.k_pp = prog_kind("pp");
	b.prefetch = p->runtime.prefetch;
	b.seq = calloc((size_t)(DSZ_PER_LAYER * L + 2), sizeof(*b.seq));
	if (!b.seq)
		b.err = 1;
	pg->stage = stage;
	pg->rt_call = rt_call;
	pg->microbatches = b.s.micro_batches;
	pg->first_layer = b.s.chunk_first[0];
	pg->n_layers = L;
	for (int w = 0; w < PRT_W_LAYER + DSZ_PER_LAYER; w++)
		if (prog_weight(pg, weight_names[w]) != w)
			b.err = 1;
	if (kind == PROG_TRAIN) {
		train(&b);
	} else if (kind == PROG_FORWARD) {
		for (long long mb = 0; mb < b.s.micro_batches && !b.err;
		     mb++)
			forward_only(&b, mb);
	}
	free(b.seq);
	if (b.err) {
		prog_release(pg);
		return -1;
	}
	return 0;
}
