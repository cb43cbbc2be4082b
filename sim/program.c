/*
 * program: per-stage collective programs (docs/design.md §2.4-2.5): the
 * options, a program's lifecycle, queries and names. prog_build is in
 * program_build.c, the ops it emits in program_layer.c (see program_int.h).
 */
#include "program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"
#include "program_int.h"
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

void prog_opts_read_framework(struct prog_opts *o, const struct settings *s)
{
	if (s->first_stage_layers)
		o->first_stage_layers = s->first_stage_layers;
	if (s->last_stage_layers)
		o->last_stage_layers = s->last_stage_layers;
	if (s->vocab_divisor)
		o->vocab_divisor = s->vocab_divisor;
	o->moe_aux_loss = s->moe_aux_loss;
	o->stages_loc = s->pp_loc;
	o->tracker_loc = s->tracker_loc;
	if (s->moe_tracker && !strcmp(s->moe_tracker, "lazy"))
		o->moe_tracker = TRACKER_LAZY;
	else if (s->moe_tracker &&
		 !strcmp(s->moe_tracker, "preinit_without_mtp"))
		o->moe_tracker = TRACKER_PREINIT_NO_MTP;
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
		"ring send-recv",
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
			 when, (long)prog_rt_line(pg, (size_t)(op - pg->ops)),
			 pg->rt_call);
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
