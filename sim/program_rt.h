/*
 * program_rt: the collective programs of gtplan-run's runtime model
 * (runtime/rt_model.h), so that the simulator reasons about the model the
 * runtime trains when the config names no model (docs/design.md §5).
 *
 * The programs are exactly the collectives runtime/rt_train.c issues on one
 * rank for one call, in order, with its labels ("what"), element counts,
 * reductions, element types and group kinds; a collective on a group of
 * one rank is left out, as runtime/coll*.c leave it out (and does not record it).
 * The sizes come from the plan: gtplan.runtime (hidden, ffn, layers,
 * seq_len, vocab, padded to a multiple of TP) and the batch (global batch,
 * micro batch; 1 when unset, as gtplan-run takes it).
 *
 * train (one step, rt_model_train_step):
 *   tokens: all-reduce (fp64, 1, sum) over dp_cp
 *   per micro-batch, forward:
 *     embedding: all-gather over gtp (the padded GTP shard)
 *     embedding.out: all-reduce over tp (T x h)
 *     per layer l: layers.l.fc1, layers.l.fc2 all-gathers over gtp,
 *       layers.l.fc2 all-reduce over tp (T x h)
 *     embedding: all-gather over gtp (the tied output layer)
 *     ce.max (max), ce.target, ce.sumexp: all-reduces over tp (T)
 *   per micro-batch, backward:
 *     embedding: all-gather over gtp; output.dgrad: all-reduce over tp
 *     per layer, last first: layers.l.fc2 all-gather and reduce-scatter
 *       over gtp; layers.l.fc1 all-gather over gtp, all-reduce over tp,
 *       reduce-scatter over gtp
 *     embedding: reduce-scatter over gtp
 *   grads: all-reduce over dp_cp_replicate (every local shard)
 *   norm_grads: all-reduce over dp_cp ((layers + 1) x h)
 *   loss: all-reduce (fp64, 1, sum) over dp_cp
 *   step: barrier over the world
 * T = micro batch x seq_len / CP tokens. A GTP shard of a TP-local tensor
 * [d0, d1] has S x d1 elements, S = d0 padded at the tail to a multiple of
 * 16 x G (no padding when G = 1), divided by G (gtp_remat_shard_dim0).
 *
 * get_logprobs (and every other forward-only call): ASSUMPTION, to be
 * aligned with the runtime's get_logprobs when it lands: the forward part
 * of train above over the same micro-batches of the lane's share (the
 * train micro batch), CE reductions included (log-probabilities need the
 * target logit and the log-sum-exp), without tokens, gradients, loss and
 * the closing barrier.
 *
 * The programs have no compute ops, so op i of a program is gtplan-run's
 * collective i of the call (its record's seq, counted from the call's
 * first collective).
 */
#ifndef GTPLAN_PROGRAM_RT_H
#define GTPLAN_PROGRAM_RT_H

#include <stddef.h>
#include <stdio.h>

#include "cfg.h"
#include "plan.h"
#include "program.h"

/* The runtime's label of an op (prog_op.label). */
enum prog_rt_label {
	PRT_L_NONE,
	PRT_L_WEIGHT,       /* the weight's name: "embedding", "layers.0.fc1" */
	PRT_L_TOKENS,       /* "tokens" */
	PRT_L_EMBED_OUT,    /* "embedding.out" */
	PRT_L_FC2_OUT,      /* "layers.<l>.fc2": the row-parallel output */
	PRT_L_CE_MAX,       /* "ce.max" */
	PRT_L_CE_TARGET,    /* "ce.target" */
	PRT_L_CE_SUMEXP,    /* "ce.sumexp" */
	PRT_L_OUTPUT_DGRAD, /* "output.dgrad" */
	PRT_L_FC1_DGRAD,    /* "layers.<l>.fc1": fc1's input gradient */
	PRT_L_GRADS,        /* "grads" */
	PRT_L_NORM_GRADS,   /* "norm_grads" */
	PRT_L_LOSS,         /* "loss" */
	PRT_L_STEP,         /* "step" */
	PRT_L_COUNT
};

/* The runtime model's sizes on a plan, as rt_model_shape() derives them. */
struct prog_rt_shape {
	long long h, ffn, fl, layers;     /* fl = ffn / TP */
	long long vocab, vp, vl;          /* V, V padded to TP, Vp / TP */
	long long seq_len, local_seq;     /* local_seq = seq_len / CP */
	long long global_batch, micro, per_lane, micro_batches;
	long long tokens;                 /* T = micro x local_seq */
	/* elements of one GTP shard (S x d1) of each weight */
	long long shard_emb, shard_fc1, shard_fc2;
	long long n_shard, n_rep;         /* the grads and norm_grads counts */
	int bf16;                         /* dtype bf16: weights gathered as
					     bf16 (gradients stay fp32) */
};

/* Fills s from p->runtime and the plan's sizes and batch. Never fails:
 * sizes the runtime refuses are rounded down; prog_rt_applies says
 * whether it would refuse. */
void prog_rt_shape(const struct plan *p, struct prog_rt_shape *s);

/* Elements of one GTP shard of a TP-local tensor [d0, d1] on G ranks
 * (gtp_remat_shard_dim0 with the runtime's alignment of 16 x G). */
long long prog_rt_shard(long long d0, long long d1, long long g);

/* 1 when gtplan-run would run the plan's layout with its model (the
 * refusals of rt_model_shape that depend on the layout: PP 1, EP 1, ffn
 * divisible by TP, seq_len by 2 x CP when CP > 1); else 0 with the
 * reason in why (one sentence with the numbers and the fix). The batch
 * is not checked here (GT400/GT401 report it). */
int prog_rt_applies(const struct plan *p, char *why, size_t len);

/* The key by which the config names a model for the simulator to reason
 * about ("policy.model_name" when set and not null, else "gtplan.model"
 * when present), or NULL when it names none: then the runtime model is
 * the model (docs/design.md §5.1). */
const char *prog_rt_model_key(const struct cfg_node *root);

/* Builds the runtime program of `kind` (PROG_TRAIN or PROG_FORWARD; any
 * other kind gives an empty program) on plan p, named after call
 * `rt_call` (static storage). Returns 0, or -1 when out of memory or past
 * PROG_MAX_OPS (pg is then released). */
int prog_rt_build(struct prog *pg, const struct plan *p,
		  enum call_program kind, const char *rt_call);

/* gtplan-run's "what" of an op of a runtime program ("layers.1.fc2",
 * "ce.max"). Returns buf. */
char *prog_rt_what(const struct prog *pg, const struct prog_op *op,
		   char *buf, size_t len);
/* The runtime's names: "all-gather", ...; "sum" / "max" / NULL; "fp32",
 * "fp64", "none"; the group kind as the plan names it ("world" for every
 * training rank). */
const char *prog_rt_coll_name(const struct prog_op *op);
const char *prog_rt_op_name(const struct prog_op *op);
const char *prog_rt_dtype_name(const struct prog_op *op);
const char *prog_rt_group_name(const struct prog_op *op);
/* Elements of the op as runtime/coll*.c count them (all-gather: sent per rank,
 * reduce-scatter: received per rank, all-reduce: the buffer). */
long long prog_rt_count(const struct prog_op *op);

/* Writes ops [0, n) of pg as rank `rank` of p would record them (coll.h's
 * Record: one JSON line each, keys sorted, the same bytes gtplan-run
 * writes), for call `call` at step `step`, numbering them from *seq on
 * (*seq advances). Returns 0, or -1 on a write error. */
int prog_rt_write_record(FILE *f, const struct plan *p,
			 const struct prog *pg, size_t n, long long rank,
			 const char *call, long long step, long long *seq);

#endif
