/*
 * program_rt: gtplan-run's collectives as simulator programs (see
 * program_rt.h; the order is runtime/rt_train.c's, the sizes
 * runtime/rt_model.c's).
 */
#include "program_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"

/* GTPRematConfig.pad_for_alignment's default, as runtime/rt_model.h's
 * RT_GTP_PAD. */
#define PRT_GTP_PAD 16

/* Weights of prog.weights, in this order. */
enum { PRT_W_EMB, PRT_W_FC1, PRT_W_FC2 };

long long prog_rt_shard(long long d0, long long d1, long long g)
{
	long long align = PRT_GTP_PAD * g, pad;

	if (g <= 1)
		return d0 * d1;
	pad = (align - d0 % align) % align;
	return (d0 + pad) / g * d1;
}

void prog_rt_shape(const struct plan *p, struct prog_rt_shape *s)
{
	const struct plan_runtime *rt = &p->runtime;
	long long tp = p->tp > 0 ? p->tp : 1, cp = p->cp > 0 ? p->cp : 1;
	long long g = p->gtp > 0 ? p->gtp : 1;
	long long lanes = p->lanes > 0 ? p->lanes : 1;

	memset(s, 0, sizeof(*s));
	s->h = rt->hidden;
	s->ffn = rt->ffn;
	s->layers = rt->layers;
	s->vocab = rt->vocab;
	s->seq_len = rt->seq_len;
	s->bf16 = rt->dtype && !strcmp(rt->dtype, "bf16");
	s->fl = s->ffn / tp;
	s->vp = (s->vocab + tp - 1) / tp * tp;
	s->vl = s->vp / tp;
	s->local_seq = s->seq_len / cp;
	/* gtplan-run: the plan's batch, the micro batch 1 when unset */
	s->global_batch = p->global_batch;
	s->micro = p->micro_batch > 0 ? p->micro_batch : 1;
	s->per_lane = s->global_batch / lanes;
	s->micro_batches = s->per_lane / s->micro;
	if (s->micro_batches < 1)
		s->micro_batches = 1;
	s->tokens = s->micro * s->local_seq;
	s->shard_emb = prog_rt_shard(s->vl, s->h, g);
	s->shard_fc1 = prog_rt_shard(s->fl, s->h, g);
	s->shard_fc2 = prog_rt_shard(s->h, s->fl, g);
	s->n_shard = s->shard_emb + s->layers * (s->shard_fc1 + s->shard_fc2);
	s->n_rep = (s->layers + 1) * s->h;
}

int prog_rt_applies(const struct plan *p, char *why, size_t len)
{
	const struct plan_runtime *rt = &p->runtime;

	if (p->pp > 1)
		snprintf(why, len, "gtplan-run does not run pipeline "
			 "parallelism (PP %lld) yet; plan with "
			 "pipeline_model_parallel_size 1", p->pp);
	else if (p->ep > 1)
		snprintf(why, len, "the runtime model has no experts, so EP "
			 "%lld has nothing to split; plan with "
			 "expert_model_parallel_size 1", p->ep);
	else if (p->tp > 0 && rt->ffn % p->tp)
		snprintf(why, len, "gtplan.runtime.ffn %lld is not divisible "
			 "by TP %lld (fc1 is column-parallel over TP); use a "
			 "multiple of %lld", rt->ffn, p->tp, p->tp);
	else if (p->cp > 1 && rt->seq_len % (2 * p->cp))
		snprintf(why, len, "gtplan.runtime.seq_len %lld does not split "
			 "into 2 x CP = %lld chunks (the load-balanced CP "
			 "split); use a multiple of %lld", rt->seq_len,
			 2 * p->cp, 2 * p->cp);
	else
		return 1;
	return 0;
}

const char *prog_rt_model_key(const struct cfg_node *root)
{
	const struct cfg_node *n = cfg_path(root, KEY_MODEL_NAME);

	if (n && n->kind != CFG_NULL)
		return KEY_MODEL_NAME;
	if (cfg_path(root, KEY_GTPLAN_MODEL))
		return KEY_GTPLAN_MODEL;
	return NULL;
}

/* ---- building ----------------------------------------------------------- */

/* One weight a pass uses: which, and its layer (-1: the embedding). */
struct use {
	int w;
	long long layer;
};

struct rbld {
	struct prog *pg;
	const struct plan *p;
	struct prog_rt_shape s;
	unsigned k_tp, k_gtp, k_dp_cp, k_dpcr;
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
	return gk ? lay_group_size(&b->p->dense, gk->axes) : 1;
}

/* Appends one collective; runtime/coll*.c issue nothing on a group of one. */
static void rop(struct rbld *b, unsigned kind, unsigned group,
		enum prog_phase ph, enum prog_what what, int weight,
		long long layer, long long mb, long long count, unsigned dtype,
		unsigned redop, enum prog_rt_label label)
{
	long long elem = dtype == PROG_DT_FP64 ? 8 :
			 dtype == PROG_DT_FP32 ? 4 :
			 dtype == PROG_DT_BF16 ? 2 : 0;
	struct prog_op op = {
		.kind = (uint8_t)kind, .group = (uint8_t)group,
		.phase = (uint8_t)ph, .weight = (int16_t)weight,
		.what = (uint16_t)what, .layer = (int32_t)layer,
		.mb = (int32_t)mb, .root = -1, .redop = (uint8_t)redop,
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
	return w == PRT_W_EMB ? b->s.shard_emb :
	       w == PRT_W_FC1 ? b->s.shard_fc1 : b->s.shard_fc2;
}

/* rt_gather_weight: the GTP all-gather of weight w (layer -1: embedding). */
static void gather(struct rbld *b, int w, long long layer, long long mb,
		   enum prog_phase ph)
{
	rop(b, OP_ALL_GATHER, b->k_gtp, ph, W_WEIGHT, w, layer, mb,
	    shard_of(b, w), b->s.bf16 ? PROG_DT_BF16 : PROG_DT_FP32, 0,
	    PRT_L_WEIGHT);
}

/* rt_weights_begin: a pass of b->n weights (b->seq) starts; with prefetch
 * the first one's gather is issued now. */
static void pass_begin(struct rbld *b, enum prog_phase ph, long long mb)
{
	b->ph = ph;
	b->mb = mb;
	b->next = 0;
	if (b->prefetch && b->n > 0)
		gather(b, b->seq[0].w, b->seq[0].layer, mb, ph);
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
		gather(b, w, layer, b->mb, b->ph);
	else if (i + 1 < b->n)
		gather(b, b->seq[i + 1].w, b->seq[i + 1].layer, b->mb, b->ph);
}

/* The weights of a forward (fwd 1) or a backward, as runtime/rt_model.c orders
 * them (rt_weights_begin). */
static void pass_weights(struct rbld *b, int fwd)
{
	long long n = 0, L = b->s.layers;

	b->seq[n++] = (struct use){ PRT_W_EMB, -1 };
	if (fwd) {
		for (long long l = 0; l < L; l++) {
			b->seq[n++] = (struct use){ PRT_W_FC1, l };
			b->seq[n++] = (struct use){ PRT_W_FC2, l };
		}
		b->seq[n++] = (struct use){ PRT_W_EMB, -1 };
	} else {
		for (long long l = L; l-- > 0;) {
			b->seq[n++] = (struct use){ PRT_W_FC2, l };
			b->seq[n++] = (struct use){ PRT_W_FC1, l };
		}
	}
	b->n = n;
}

/* rt_scatter_grad: the GTP reduce-scatter of w's gradient. */
static void scatter(struct rbld *b, int w, long long layer, long long mb)
{
	rop(b, OP_REDUCE_SCATTER, b->k_gtp, PH_BWD, W_WEIGHT, w, layer, mb,
	    shard_of(b, w), PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_WEIGHT);
}

static void tp_sum(struct rbld *b, enum prog_phase ph, enum prog_what what,
		   long long layer, long long mb, long long count,
		   enum prog_rt_label label)
{
	rop(b, OP_ALL_REDUCE, b->k_tp, ph, what, -1, layer, mb, count,
	    PROG_DT_FP32, PROG_REDOP_SUM, label);
}

/* rt_train.c: forward() */
static void forward(struct rbld *b, long long mb)
{
	long long T = b->s.tokens, th = b->s.tokens * b->s.h;

	pass_weights(b, 1);
	pass_begin(b, PH_FWD, mb);
	use(b, PRT_W_EMB, -1);
	tp_sum(b, PH_FWD, W_ACT, -1, mb, th, PRT_L_EMBED_OUT);
	for (long long l = 0; l < b->s.layers && !b->err; l++) {
		use(b, PRT_W_FC1, l);
		use(b, PRT_W_FC2, l);
		tp_sum(b, PH_FWD, W_ACT, l, mb, th, PRT_L_FC2_OUT);
	}
	use(b, PRT_W_EMB, -1);
	rop(b, OP_ALL_REDUCE, b->k_tp, PH_FWD, W_LOSS, -1, -1, mb, T,
	    PROG_DT_FP32, PROG_REDOP_MAX, PRT_L_CE_MAX);
	tp_sum(b, PH_FWD, W_LOSS, -1, mb, T, PRT_L_CE_TARGET);
	tp_sum(b, PH_FWD, W_LOSS, -1, mb, T, PRT_L_CE_SUMEXP);
}

/* rt_train.c: backward() */
static void backward(struct rbld *b, long long mb)
{
	long long th = b->s.tokens * b->s.h;

	pass_weights(b, 0);
	pass_begin(b, PH_BWD, mb);
	use(b, PRT_W_EMB, -1);
	tp_sum(b, PH_BWD, W_ACT_GRAD, -1, mb, th, PRT_L_OUTPUT_DGRAD);
	for (long long l = b->s.layers; l-- > 0 && !b->err;) {
		use(b, PRT_W_FC2, l);
		scatter(b, PRT_W_FC2, l, mb);
		use(b, PRT_W_FC1, l);
		tp_sum(b, PH_BWD, W_ACT_GRAD, l, mb, th, PRT_L_FC1_DGRAD);
		scatter(b, PRT_W_FC1, l, mb);
	}
	scatter(b, PRT_W_EMB, -1, mb);
}

/* rt_train.c: rt_model_train_step() */
static void train(struct rbld *b)
{
	rop(b, OP_ALL_REDUCE, b->k_dp_cp, PH_STEP, W_TOKENS, -1, -1, -1, 1,
	    PROG_DT_FP64, PROG_REDOP_SUM, PRT_L_TOKENS);
	for (long long mb = 0; mb < b->s.micro_batches && !b->err; mb++) {
		forward(b, mb);
		backward(b, mb);
	}
	rop(b, OP_ALL_REDUCE, b->k_dpcr, PH_GRAD, W_GRADS, -1, -1, -1,
	    b->s.n_shard, PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_GRADS);
	rop(b, OP_ALL_REDUCE, b->k_dp_cp, PH_GRAD, W_NORM_GRADS, -1, -1, -1,
	    b->s.n_rep, PROG_DT_FP32, PROG_REDOP_SUM, PRT_L_NORM_GRADS);
	rop(b, OP_ALL_REDUCE, b->k_dp_cp, PH_STEP, W_LOSS, -1, -1, -1, 1,
	    PROG_DT_FP64, PROG_REDOP_SUM, PRT_L_LOSS);
	rop(b, OP_BARRIER, PROG_GK_WORLD, PH_STEP, W_SYNC, -1, -1, -1, 0,
	    PROG_DT_NONE, 0, PRT_L_STEP);
}

int prog_rt_build(struct prog *pg, const struct plan *p,
		  enum call_program kind, const char *rt_call)
{
	struct rbld b;

	prog_init(pg);
	memset(&b, 0, sizeof(b));
	b.pg = pg;
	b.p = p;
	prog_rt_shape(p, &b.s);
	b.k_tp = prog_kind("tp");
	b.k_gtp = prog_kind("gtp");
	b.k_dp_cp = prog_kind("dp_cp");
	b.k_dpcr = prog_kind("dp_cp_replicate");
	b.prefetch = p->runtime.prefetch;
	b.seq = calloc((size_t)(2 * (b.s.layers > 0 ? b.s.layers : 0) + 2),
		       sizeof(*b.seq));
	if (!b.seq)
		b.err = 1;
	pg->stage = 0;
	pg->rt_call = rt_call;
	pg->microbatches = b.s.micro_batches;
	pg->first_layer = 0;
	pg->n_layers = b.s.layers;
	if (prog_weight(pg, "embedding") != PRT_W_EMB ||
	    prog_weight(pg, "fc1") != PRT_W_FC1 ||
	    prog_weight(pg, "fc2") != PRT_W_FC2)
		b.err = 1;
	if (kind == PROG_TRAIN) {
		train(&b);
	} else if (kind == PROG_FORWARD) {
		for (long long mb = 0; mb < b.s.micro_batches && !b.err;
		     mb++)
			forward(&b, mb);
	}
	free(b.seq);
	if (b.err) {
		prog_release(pg);
		return -1;
	}
	return 0;
}

/* ---- names and the record ---------------------------------------------- */

char *prog_rt_what(const struct prog *pg, const struct prog_op *op,
		   char *buf, size_t len)
{
	static const char *const fixed[PRT_L_COUNT] = {
		[PRT_L_TOKENS] = "tokens", [PRT_L_EMBED_OUT] = "embedding.out",
		[PRT_L_CE_MAX] = "ce.max", [PRT_L_CE_TARGET] = "ce.target",
		[PRT_L_CE_SUMEXP] = "ce.sumexp",
		[PRT_L_OUTPUT_DGRAD] = "output.dgrad", [PRT_L_GRADS] = "grads",
		[PRT_L_NORM_GRADS] = "norm_grads", [PRT_L_LOSS] = "loss",
		[PRT_L_STEP] = "step",
	};
	const char *wn = op->weight >= 0 && (size_t)op->weight < pg->n_weights ?
			 pg->weights[op->weight] : "?";

	switch (op->label) {
	case PRT_L_WEIGHT:
		if (op->layer < 0)
			snprintf(buf, len, "%s", wn);
		else
			snprintf(buf, len, "layers.%d.%s", (int)op->layer, wn);
		break;
	case PRT_L_FC2_OUT:
		snprintf(buf, len, "layers.%d.fc2", (int)op->layer);
		break;
	case PRT_L_FC1_DGRAD:
		snprintf(buf, len, "layers.%d.fc1", (int)op->layer);
		break;
	default:
		snprintf(buf, len, "%s", op->label < PRT_L_COUNT &&
			 fixed[op->label] ? fixed[op->label] : "?");
	}
	return buf;
}

const char *prog_rt_coll_name(const struct prog_op *op)
{
	switch (op->kind) {
	case OP_ALL_GATHER: return "all-gather";
	case OP_REDUCE_SCATTER: return "reduce-scatter";
	case OP_ALL_REDUCE: return "all-reduce";
	case OP_BARRIER: return "barrier";
	default: return "?";
	}
}

const char *prog_rt_op_name(const struct prog_op *op)
{
	return op->redop == PROG_REDOP_SUM ? "sum" :
	       op->redop == PROG_REDOP_MAX ? "max" : NULL;
}

const char *prog_rt_dtype_name(const struct prog_op *op)
{
	return op->dtype == PROG_DT_FP64 ? "fp64" :
	       op->dtype == PROG_DT_FP32 ? "fp32" :
	       op->dtype == PROG_DT_BF16 ? "bf16" : "none";
}

const char *prog_rt_group_name(const struct prog_op *op)
{
	return op->group == PROG_GK_WORLD ? "world" :
	       prog_group_name(op->group);
}

long long prog_rt_count(const struct prog_op *op)
{
	long long elem = op->dtype == PROG_DT_FP64 ? 8 :
			 op->dtype == PROG_DT_FP32 ? 4 :
			 op->dtype == PROG_DT_BF16 ? 2 : 0;

	return elem ? (long long)op->amount / elem : 0;
}

int prog_rt_write_record(FILE *f, const struct plan *p,
			 const struct prog *pg, size_t n, long long rank,
			 const char *call, long long step, long long *seq)
{
	char what[64];

	for (size_t i = 0; i < n && i < pg->n; i++) {
		const struct prog_op *op = &pg->ops[i];
		const struct lay_group_kind *gk = lay_group_kind_at(op->group);
		const char *rop_name = prog_rt_op_name(op);
		long long idx = 0;

		if (op->group != PROG_GK_WORLD && gk)
			lay_group_of(&p->dense, gk->axes, rank, &idx, NULL);
		/* coll.c's record(), byte for byte */
		fprintf(f, "{\"bytes\":%lld,\"call\":\"%s\",\"coll\":\"%s\","
			"\"count\":%lld,\"dtype\":\"%s\",\"group\":\"%s\","
			"\"group_index\":%lld,\"op\":%s%s%s,\"rank\":%lld,"
			"\"seq\":%lld,\"step\":%lld,\"what\":\"%s\"}\n",
			(long long)op->amount, call, prog_rt_coll_name(op),
			prog_rt_count(op), prog_rt_dtype_name(op),
			prog_rt_group_name(op), idx, rop_name ? "\"" : "",
			rop_name ? rop_name : "null", rop_name ? "\"" : "",
			rank, (*seq)++, step, prog_rt_what(pg, op, what,
							  sizeof(what)));
	}
	return ferror(f) ? -1 : 0;
}
