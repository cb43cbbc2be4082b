/*
 * program_int: what the files of the program module share (program.h is
 * the public side). Not for other modules: include it only from
 * sim/program*.c.
 *
 * Files: program.c (options, the program's lifecycle, queries and names),
 * program_build.c (prog_build: the builder's setup, the weights, the
 * stage's layers), program_layer.c (the ops of one layer, the pipeline
 * schedule, the train tail and the refits).
 *
 * The builder's helpers below are static inline: every file gets its own
 * copy, and emitting an op stays free of calls into another file.
 */
#ifndef GTPLAN_PROGRAM_INT_H
#define GTPLAN_PROGRAM_INT_H

#include "model.h"
#include "program.h"

/* One large weight as a rank sees it. */
struct prog_wt {
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

struct prog_bld {
	struct prog *pg;
	const struct plan *p;
	struct model_shape m;
	struct prog_opts o;
	unsigned k_tp, k_cp, k_gtp, k_pp, k_dp, k_dp_cp, k_dpcr, k_mp_gtp;
	unsigned k_ep, k_egtp, k_etp, k_edp;
	struct prog_wt w[PROG_MAX_WEIGHTS];
	size_t n_dense, n_w;  /* attention + dense MLP weights; all */
	int moe;
	/* per layer: MoE (model_layer_kinds); all MoE when moe_uniform */
	unsigned char moe_at[MODEL_TEXT_MAX];
	int moe_uniform;
	long long tokens;     /* tokens of one micro-batch on one CP rank */
	long long layer_flops;
	int err;
};

static inline long long prog_gsize(const struct prog_bld *b, unsigned k)
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
static inline int prog_emit(struct prog_bld *b, unsigned kind, unsigned group,
			    enum prog_phase ph, enum prog_what what, int weight,
			    long long layer, long long mb, long long amount,
			    unsigned flags)
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
	    prog_gsize(b, group) == 1)
		return 0;
	if (prog_push(b->pg, &op)) {
		b->err = 1;
		return 0;
	}
	return 1;
}

static inline void prog_emit_root(struct prog_bld *b, unsigned group,
				  enum prog_phase ph, enum prog_what what,
				  int weight, long long layer,
				  long long amount, long long root)
{
	if (prog_emit(b, OP_BROADCAST, group, ph, what, weight, layer, -1,
		      amount, 0))
		b->pg->ops[b->pg->n - 1].root = (int32_t)root;
}

/* ---- shared between the files ------------------------------------------ */

/* The pipeline schedule of the stage's micro-batches (program_layer.c);
 * forward_only: no backward (get_logprobs). */
void prog_schedule(struct prog_bld *b, int forward_only);
/* After the schedule: gradients, the optimizer step, the loss and the
 * metrics (program_layer.c). */
void prog_train_tail(struct prog_bld *b);
/* The refit's gathers of the stage's weights (program_layer.c);
 * tp_gather: also the TP all-gather of TP-split weights. */
void prog_refit(struct prog_bld *b, int tp_gather);
/* The refit's broadcasts of every layer to the inference engine
 * (program_layer.c). */
void prog_refit_broadcast(struct prog_bld *b);

#endif
