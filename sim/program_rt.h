/*
 * program_rt: the collective programs of gtplan-run's decoder
 * (runtime/rt_model.h), so that the simulator plays the run it would make:
 * for `gtplan sim --predict-record` always, and for every call when the
 * config names no model (then the runtime's decoder is the model).
 *
 * The programs are exactly the collectives runtime/rt_train.c issues on one
 * rank for one call, in order, with its labels ("what"), element counts,
 * reductions, element types and group kinds; a collective on a group of
 * one rank is left out, as runtime/coll*.c leave it out (and do not record
 * it). The decoder's shape is the plan's runtime.model; every size comes
 * from base/decoder_sizes.h, which the runtime uses too. The batch is
 * the plan's (the micro batch 1 when unset, as gtplan-run takes it).
 *
 * train (one step, rt_model_train_step): the order runtime/rt_model.h's top
 * comment lists: tokens; per micro-batch the forward (embedding, per layer
 * qkv, its keys' and values' CP exchange, proj, fc1, fc2 with their TP
 * collectives, the output layer, the CE statistics) and the backward
 * (output layer, per layer from the last fc2, fc1, proj, the CP exchange
 * of the keys' and values' gradients, qkv, the embedding); grads,
 * replicated_grads, tp_grads (when
 * TP sums any), loss, the step barrier. With prefetch each GTP all-gather
 * is issued one weight ahead within its pass.
 *
 * get_logprobs (and every other forward-only call): the forward above per
 * micro-batch of the lane's share.
 *
 * The CP exchange is runtime/rt_cp.c's: with cp_comm_type all_gather the
 * keys' and values' all-gathers and their gradients' reduce-scatters; with
 * p2p the ring's send-recv steps (OP_SEND_RECV), C - 1 forward ("<qkv>.kv",
 * keys and values to the next CP rank) and C backward ("<qkv>.dkv", the
 * reversed ring: keys and values, then with them the gradient of the block
 * before, the last step the gradient only).
 *
 * The programs have no compute ops; each op is one of gtplan-run's record
 * lines of the call, except point-to-point ops (OP_P2P, OP_SEND_RECV):
 * one line per direction, the send first (prog_rt_line gives an op's
 * first line, the record's seq counted from the call's first).
 *
 * Ownership: prog_rt_build and prog_rt_build_stage fill the caller's
 * struct prog, which then owns its op array (prog_release() frees it, as
 * program.h says; they release it themselves when they fail). Names
 * returned are static; prog_rt_what writes into the caller's buffer.
 */
#ifndef GTPLAN_PROGRAM_RT_H
#define GTPLAN_PROGRAM_RT_H

#include <stddef.h>
#include <stdio.h>

#include "cfg.h"
#include "decoder_sizes.h"
#include "pp_schedule.h"
#include "plan.h"
#include "program.h"

/* The runtime's label of an op (prog_op.label); the weight-relative ones
 * are "<weight name>.<suffix>". */
enum prog_rt_label {
	PRT_L_NONE,
	PRT_L_WEIGHT,       /* the weight's name: "embedding", "layers.0.qkv" */
	PRT_L_IN,           /* "<w>.in": SP all-gather before a column linear */
	PRT_L_OUT,          /* "<w>.out": after a row-parallel linear */
	PRT_L_DOUT,         /* "<w>.dout": SP all-gather of its gradient */
	PRT_L_DGRAD,        /* "<w>.dgrad": a column linear's input gradient */
	PRT_L_K,            /* "<qkv>.k", "<qkv>.v": the CP all-gathers of */
	PRT_L_V,            /* keys and values */
	PRT_L_DK,           /* "<qkv>.dk", "<qkv>.dv": their gradients' CP */
	PRT_L_DV,           /* reduce-scatters */
	PRT_L_KV,           /* "<qkv>.kv": a forward step of the CP ring */
	PRT_L_DKV,          /* "<qkv>.dkv": a backward step of it */
	PRT_L_TOKENS,       /* "tokens" */
	PRT_L_EMBED_OUT,    /* "embedding.out" */
	PRT_L_EMBED_DOUT,   /* "embedding.dout" */
	PRT_L_OUTPUT_IN,    /* "output.in" */
	PRT_L_CE_MAX,       /* "ce.max" */
	PRT_L_CE_TARGET,    /* "ce.target" */
	PRT_L_CE_SUMEXP,    /* "ce.sumexp" */
	PRT_L_OUTPUT_DGRAD, /* "output.dgrad" */
	PRT_L_GRADS,        /* "grads" */
	PRT_L_REP_GRADS,    /* "replicated_grads" */
	PRT_L_TP_GRADS,     /* "tp_grads" */
	PRT_L_LOSS,         /* "loss" */
	PRT_L_STEP,         /* "step" */
	PRT_L_EMB_GRADS,    /* "embedding_grads": a tied embedding's two
			       pipeline copies */
	PRT_L_LOSS_PP,      /* "loss.pp": the last stage's loss to all */
	PRT_L_P2P,          /* an exchange between stages: "act.mb0", ...
			       (base/pp_schedule.h's pps_label) */
	PRT_L_COUNT
};

/* The decoder's sizes on a plan, as rt_model_shape() derives them. */
struct prog_rt_shape {
	struct dsz_dims d;
	struct dsz_sizes z;               /* base/decoder_sizes.h */
	long long global_batch, micro, per_lane, micro_batches;
	int bf16;                         /* dtype bf16: weights gathered as
					     bf16 (gradients stay fp32) */
	int cp_p2p;                       /* cp_comm_type p2p: the CP ring */
	/* the pipeline stage (base/pp_schedule.h; d.layers is the stage's
	 * layers, d.skip_pre / skip_post its ends): P, the stage, V, its
	 * layers per chunk and each chunk's first model layer */
	int pp, stage, vpp;
	long long layers_all, chunk_layers;
	long long chunk_first[PPS_MAX_V];
};

/* Fills s from p->runtime.model and the plan's sizes and batch. Never
 * fails: sizes the runtime refuses are rounded down; prog_rt_applies
 * says whether it would refuse. */
void prog_rt_shape(const struct plan *p, struct prog_rt_shape *s);
/* The same for pipeline stage `stage` (prog_rt_shape is stage 0's). */
void prog_rt_shape_stage(const struct plan *p, long long stage,
			 struct prog_rt_shape *s);

/* 1 when gtplan-run would run the plan's layout with its decoder (the
 * refusals of rt_model_shape: a pipeline split Megatron makes (GT600),
 * EP 1, a dense model, heads and query
 * groups and F divisible by TP, an even head_dim, seq_len by 2 x CP, SP
 * tokens divisible by TP); else 0 with the reason in why (one sentence with the
 * numbers and the fix). The batch is not checked here (GT400/GT401 report
 * it). */
int prog_rt_applies(const struct plan *p, char *why, size_t len);

/* The key by which the config names a model for the simulator to reason
 * about ("policy.model_name" when set and not null, else "gtplan.model"
 * when present), or NULL when it names none: then the runtime's decoder
 * (gtplan.runtime's sizes) is the model (docs/design.md §5.1). Read from
 * the plan's settings (settings.h). */
const char *prog_rt_model_key(const struct settings *s);

/* Builds the runtime program of `kind` (PROG_TRAIN or PROG_FORWARD; any
 * other kind gives an empty program) on plan p, named after call
 * `rt_call` (static storage). Returns 0, or -1 when out of memory or past
 * PROG_MAX_OPS (pg is then released). */
int prog_rt_build(struct prog *pg, const struct plan *p,
		  enum call_program kind, const char *rt_call);
/* The same for the ranks of pipeline stage `stage` (prog_rt_build is
 * stage 0's): with PP the train call plays base/pp_schedule.h's schedule
 * (chunk forwards and backwards, P2P exchanges in its order), the tied
 * embedding's "embedding_grads" and "loss.pp"; forward-only calls run
 * each micro-batch's chunks in order with an exchange around each. */
int prog_rt_build_stage(struct prog *pg, const struct plan *p,
			enum call_program kind, const char *rt_call,
			long long stage);

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
/* The record line (from 0 at the call's first) of op i of pg. */
long long prog_rt_line(const struct prog *pg, size_t i);

/* Writes ops [0, n) of pg as rank `rank` of p would record them (coll.h's
 * Record: one JSON line each, keys sorted, the same bytes gtplan-run
 * writes), for call `call` at step `step`, numbering them from *seq on
 * (*seq advances). Returns 0, or -1 on a write error. */
int prog_rt_write_record(FILE *f, const struct plan *p,
			 const struct prog *pg, size_t n, long long rank,
			 const char *call, long long step, long long *seq);

/* ---- program_rt_pp.c: the pipeline's part ---- */
/* s's pipeline fields and d.layers / skip_pre / skip_post for stage
 * `stage` (rt_pp_shape's split; an invalid split falls back to the even
 * one, prog_rt_pp_applies says so). */
void prog_rt_pp_shape(const struct plan *p, long long stage,
		      struct prog_rt_shape *s);
/* 0 with the reason when gtplan-run refuses the plan's pipeline (GT600:
 * the layers do not split; GT622: virtual stages without PP); else 1 (a
 * GT633 plan, which gtplan-run runs under --force, included). */
int prog_rt_pp_applies(const struct plan *p, char *why, size_t len);
/* An exchange op's parts back as base/pp_schedule.h's op. */
void prog_rt_pp_decode(const struct prog_op *op, struct pps_op *o);
/* Its record lines (coll_sendrecv: "send" then "recv", each with the
 * peer's place in the pp group). Returns 0, or -1 on a write error. */
int prog_rt_pp_write_p2p(FILE *f, const struct plan *p,
			 const struct prog_op *op, long long rank,
			 const char *call, long long step, long long *seq);

#endif
