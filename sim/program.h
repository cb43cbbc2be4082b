/*
 * program: the collectives one rank issues for one call, in order
 * (docs/design.md §2.4-2.5, docs/calls.md §5).
 *
 * A program depends on the plan, the model shape, the call's program kind
 * and the rank's pipeline stage only: every rank of one stage runs the same
 * program, so prog_build() takes a stage, not a rank. The order of the
 * collectives never depends on sizes; only their byte counts do, so with an
 * unknown model a small default shape (prog_default_shape) still gives the
 * right order.
 *
 * Ownership: a struct prog owns its op array; prog_release() frees it.
 */
#ifndef GTPLAN_PROGRAM_H
#define GTPLAN_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "sim.h"

enum prog_op_kind {
	OP_ALL_GATHER,
	OP_REDUCE_SCATTER,
	OP_ALL_REDUCE,
	OP_BROADCAST,
	OP_ALL_TO_ALL,
	OP_BARRIER,
	OP_P2P,      /* exchange with the previous or next pipeline stage */
	OP_COMPUTE,  /* local work; amount is flops */
	/* a ring step over `group` (context parallelism's p2p ring): every
	 * member sends `amount` bytes to one neighbour and receives from the
	 * other at once. flags PROG_SEND_FWD | PROG_RECV_FWD: to the next
	 * place, from the previous (mod the group's size); PROG_SEND_BWD |
	 * PROG_RECV_BWD: the reversed ring. Matched like a collective of the
	 * group: every member runs the same ring steps, and a step waits for
	 * both neighbours, so a member that does not come holds up the ring */
	OP_SEND_RECV,
	OP_KIND_COUNT
};

/* Group kinds of an op: 0 .. lay_group_kind_count()-1 are layout.h's kinds
 * (tp, cp, gtp, pp, ...); two more are the simulator's own. */
#define PROG_GK_WORLD       30 /* every training rank */
#define PROG_GK_TRAIN_INFER 31 /* training ranks + the inference engine's */
/* Megatron's embedding group: the first and the last rank of each pp group
 * (tied embeddings and MTP's copy of the embedding). */
#define PROG_GK_EMBEDDING   29
#define PROG_GK_NONE        0xff /* compute ops */

/* P2P flags: what an exchange moves. The stage that sends activations
 * forward is matched by the next stage receiving them, and so on. */
#define PROG_SEND_FWD 1u /* activation to the next stage */
#define PROG_RECV_FWD 2u /* activation from the previous stage */
#define PROG_SEND_BWD 4u /* gradient to the previous stage */
#define PROG_RECV_BWD 8u /* gradient from the next stage */
/* Flags whose peer is the next stage; the others face the previous one. */
#define PROG_TO_NEXT (PROG_SEND_FWD | PROG_RECV_BWD)
/* Other ops: the activation collective belongs to the MLP block (else to
 * attention). */
#define PROG_AT_MLP   16u

enum prog_phase {
	PH_STEP,   /* step bookkeeping around the micro-batches */
	PH_FWD,
	PH_BWD,
	PH_GRAD,   /* gradient reduction after the last micro-batch */
	PH_OPT,    /* optimizer step */
	PH_REFIT,
	PH_SAVE,
	PH_LOAD,
	PH_INIT,
	PH_COUNT
};

/* What an op moves, for its label. */
enum prog_what {
	W_WEIGHT,      /* a weight (gathered) or its gradient (scattered) */
	W_ACT,         /* activations (TP / sequence parallel) */
	W_ACT_GRAD,    /* activation gradients (TP / sequence parallel) */
	W_KV,          /* keys and values (context parallel) */
	W_KV_GRAD,
	W_TOKENS,      /* the loss's valid sequence and token counts */
	W_DATASET,     /* the number of samples in the call's data */
	W_GRADS,       /* weight gradients, data-parallel reduction */
	W_NORM_GRADS,  /* gradients of GTP-replicated params (norms, biases) */
	W_GRAD_NORM,   /* the global gradient norm */
	W_STEP_STATUS, /* update-successful / grad-norm / zero-count reductions */
	W_PARAMS,      /* updated params (distributed optimizer) */
	W_LOSS,        /* loss metrics from the last stage */
	W_METRICS,     /* the step's aggregated metrics */
	W_DISPATCH,    /* MoE tokens to their experts */
	W_COMBINE,     /* MoE expert outputs back */
	W_RNG,         /* RNG states (checkpoint) */
	W_SYNC,        /* barriers */
	W_FLOPS,       /* compute */
	W_EMBED_GRADS, /* the word embedding's gradients (first + last stage) */
	W_MOE_METRICS, /* the MoE auxiliary-loss tracker (per layer, fp32) */
	W_COUNT
};

/* One op. 32 bytes, so long programs stay compact. */
struct prog_op {
	uint8_t kind;    /* enum prog_op_kind */
	uint8_t group;   /* layout kind index, PROG_GK_*, PROG_GK_NONE */
	uint8_t phase;   /* enum prog_phase */
	uint8_t flags;   /* P2P: PROG_SEND_FWD ...; 0 otherwise */
	int16_t weight;  /* index into prog.weights, -1 none */
	uint16_t what;   /* enum prog_what */
	int32_t layer;   /* global layer number, -1 none */
	int32_t mb;      /* micro-batch, -1 none */
	int32_t root;    /* broadcast root: rank inside the group; -1 none */
	/* Runtime-model programs (program_rt.h) only, 0 in the others: the
	 * reduction (PROG_REDOP_*), the element type (PROG_DT_*) and
	 * gtplan-run's label of the collective (enum prog_rt_label). They
	 * sit in what would be padding, so an op stays 32 bytes. */
	uint8_t redop;
	uint8_t dtype;
	uint16_t label;
	int64_t amount;  /* bytes per rank as NCCL counts them; flops */
};

_Static_assert(sizeof(struct prog_op) == 32, "prog_op grew");

#define PROG_REDOP_SUM 1
#define PROG_REDOP_MAX 2
#define PROG_DT_FP32 1
#define PROG_DT_FP64 2
#define PROG_DT_NONE 3 /* barriers: nothing moves */
#define PROG_DT_BF16 4

#define PROG_MAX_WEIGHTS 8

/* Hostile-input limit: the most ops one program may have (micro-batches x
 * layers x ops per layer). prog_build fails beyond it. */
#define PROG_MAX_OPS (1L << 22)

struct prog {
	struct prog_op *ops;
	size_t n, cap;
	const char *weights[PROG_MAX_WEIGHTS]; /* weight names (static) */
	size_t n_weights;
	long long stage;       /* pipeline stage it was built for; -1 any */
	long long microbatches;
	long long first_layer, n_layers; /* layers of the stage */
	/* Non-NULL: the program is gtplan-run's runtime model (program_rt.h)
	 * for this runtime call ("train", "get_logprobs"); labels then name
	 * the runtime's collective as its --record does. */
	const char *rt_call;
};

/* Settings a program depends on that the plan does not hold. */
struct prog_opts {
	int sequence_parallel;    /* policy.megatron_cfg.sequence_parallel */
	long long seq_length;     /* tokens per sample (max_total_sequence_length) */
	long long logprob_micro_batch; /* 0: the train micro batch */
	int act_bytes;            /* bytes per activation / weight element (bf16) */
	int grad_bytes;           /* bytes per gradient element (fp32 main grads) */
	int gtp_pad;              /* GTPRematConfig.pad_for_alignment */
	/* Layers of the first / last pipeline stage (Megatron's
	 * num_layers_in_first/last_pipeline_stage); 0: an even split. */
	long long first_stage_layers, last_stage_layers;
	/* The router records auxiliary losses
	 * (moe_router_load_balancing_type is not "none"). */
	int moe_aux_loss;
	/* How the auxiliary-loss tracker is set up before its pp all-reduce
	 * (gtplan.stack.moe_aux_loss_tracker). */
	enum prog_tracker {
		TRACKER_PREINIT,        /* every stage, num_layers + MTP entries
					   (NeMo-RL PR #3419; Megatron today) */
		TRACKER_PREINIT_NO_MTP, /* every stage, but sized num_layers
					   (before Megatron-LM PR #3401) */
		TRACKER_LAZY,           /* only stages whose router recorded a
					   loss (before those fixes) */
	} moe_tracker;
	long long vocab_divisor;  /* make_vocab_size_divisible_by; 0: 128 */
	/* 1: train and forward programs are gtplan-run's runtime model
	 * (program_rt.h) with the plan's gtplan.runtime sizes instead of a
	 * Megatron model; set when the config names no model and the runtime
	 * can run the layout (prog_rt_applies). */
	int runtime_model;
	/* Where findings about the stage programs point (GT680): the
	 * pipeline size, and gtplan.stack.moe_aux_loss_tracker; DIAG_NOLOC
	 * when unset. */
	struct diag_loc stages_loc, tracker_loc;
};

/* Megatron's defaults: no sequence parallel, 4096 tokens, bf16 weights,
 * fp32 gradients, GTP alignment 16. */
void prog_opts_init(struct prog_opts *o);
/* Sets the options the framework rules share with the programs, from the
 * plan's settings (settings.h): num_layers_in_first/last_pipeline_stage
 * (with PP > 1), whether the MoE router records auxiliary losses
 * (moe_router_load_balancing_type other than "none"; Megatron's default
 * aux_loss when unset) and make_vocab_size_divisible_by; and
 * gtplan.stack.moe_aux_loss_tracker and where it and
 * pipeline_model_parallel_size are set. Values of the wrong type keep the
 * defaults (the schema reports them). */
void prog_opts_read_framework(struct prog_opts *o, const struct settings *s);

/* The shape used when the model is unknown: 4 layers, hidden 1024, FFN
 * 4096 (SwiGLU), 16 heads, 8 KV heads, vocab 32000, dense. Collective
 * order does not depend on it; byte counts are then only indicative. */
void prog_default_shape(struct model_shape *m);

void prog_init(struct prog *pg);
void prog_release(struct prog *pg);
/* Appends an op (for hand-built programs in tests, too). Returns 0, or -1
 * when out of memory or past PROG_MAX_OPS. */
int prog_push(struct prog *pg, const struct prog_op *op);
/* Registers a weight name (static storage) and returns its index, reusing
 * an equal name; -1 when the table is full. */
int prog_weight(struct prog *pg, const char *name);

/* Micro-batches each lane runs: global_batch / (L x micro batch), at least
 * 1 (and 1 when the batch is unset). `micro` 0 means p->micro_batch. */
long long prog_microbatches(const struct plan *p, long long micro);

/* Builds the program of `kind` for the ranks of pipeline stage `stage`
 * (0 .. PP-1). `m` NULL or !m->known: prog_default_shape(). `o` NULL:
 * prog_opts_init(). With o->runtime_model, PROG_TRAIN and PROG_FORWARD
 * are prog_rt_build()'s runtime programs instead (m is then unused).
 * Requires p->grid_ok. Returns 0, or -1 when out of memory or past
 * PROG_MAX_OPS (pg is then released). */
int prog_build(struct prog *pg, const struct plan *p,
	       const struct model_shape *m, enum call_program kind,
	       long long stage, const struct prog_opts *o);

/* Bitmask of the group kinds the program's ops use (bit = group number;
 * p2p ops count as layout's "pp" kind). */
uint64_t prog_groups_used(const struct prog *pg);
/* Collectives (ops other than compute). */
size_t prog_collectives(const struct prog *pg);

/* Names for messages. */
const char *prog_op_kind_name(enum prog_op_kind k);  /* "all-gather" */
const char *prog_group_name(unsigned group);         /* "gtp", "WORLD" */
const char *prog_phase_name(enum prog_phase ph);     /* "forward" */
/* "the GTP all-gather of layer 0's linear_qkv weight (forward,
 * micro-batch 0)". Returns buf. */
char *prog_op_label(const struct prog *pg, const struct prog_op *op,
		    char *buf, size_t len);
/* Index of the layout kind named `name` ("gtp", "dp_cp", ...), or
 * PROG_GK_NONE when there is none. */
unsigned prog_kind(const char *name);

#endif
