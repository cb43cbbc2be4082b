/*
 * rt_model: gtplan-run's model, a Llama-family decoder sharded exactly as
 * Megatron-core shards it, with GTP on every large weight:
 *
 *   tokens -> embedding (vocab-parallel)
 *   per layer:
 *     x -> RMSNorm -> linear_qkv (column-parallel; Megatron's interleaved
 *          per-query-group rows; optional bias, Qwen2) -> optional QK-norm
 *          (RMSNorm over head_dim, Qwen3) -> RoPE (rotate-half) -> causal
 *          grouped-query attention -> linear_proj (row-parallel)
 *       -> xm = x + that
 *     xm -> RMSNorm -> linear_fc1 ([gate_t; up_t] per TP rank, column-
 *          parallel) -> SwiGLU -> linear_fc2 (row-parallel)
 *       -> x' = xm + that
 *   final RMSNorm -> output layer (vocab-parallel; the embedding when
 *   tied) -> vocab-parallel cross-entropy.
 *
 * The shape comes from the plan's runtime.model (the model the config
 * names, cut to gtplan.runtime.layers, or gtplan.runtime's sizes).
 * base/decoder_sizes.h computes every size of a rank (shared with the
 * simulator's sim/program_rt.c) and says how TP splits each weight.
 * Logical weights are Megatron's global tensors: linear_qkv [(H + 2G) d, h]
 * in the per-group interleaved row order, linear_fc1 [gate; up] [2F, h]
 * (its TP-local tensor is [gate_t; up_t], so TP-local row i of rank t is
 * logical row t F/T + i for i < F/T, else F + t F/T + i - F/T),
 * linear_proj [h, H d], linear_fc2 [h, F], embedding and output [V, h].
 * Vocabulary padding rows are zero and masked out of the softmax (so no
 * result depends on TP; Megatron leaves them in, see kern.h). Each rank
 * keeps GTP shard g of its TP-local tensor of every large weight; the
 * norms, QK norms and qkv biases (the biases TP-split) are GTP-replicated.
 *
 * Collectives of one micro-batch (rt_train.c; "SP" is Megatron's sequence
 * parallelism, policy.megatron_cfg.sequence_parallel; "CP" context
 * parallelism: each rank holds seq_len / C tokens of every sample,
 * Megatron's load-balanced chunks c and 2C-1-c, and attention reads the
 * keys and values of every CP rank (rt_cp.c), by cp_comm_type: p2p, a
 * ring of C - 1 coll_sendrecv steps forward and C backward, or
 * all_gather;
 * N is this rank's micro x seq_len / C rows; groups of one rank issue
 * nothing). Forward:
 *   gtp all-gather embedding; tp embedding.out: all-reduce (N x h), with
 *   SP reduce-scatter (N/T x h received)
 *   per layer l: SP: tp all-gather layers.l.qkv.in (N/T x h sent); gtp
 *     all-gather layers.l.qkv; CP p2p: cp send and recv layers.l.qkv.kv
 *     C - 1 times (2 N x G/T x d each), CP all_gather: cp all-gather
 *     layers.l.qkv.k and layers.l.qkv.v (N x G/T x d sent); gtp
 *     all-gather layers.l.proj; tp layers.l.proj.out all-reduce / SP
 *     reduce-scatter; SP: tp all-gather layers.l.fc1.in; gtp all-gather
 *     layers.l.fc1; gtp all-gather layers.l.fc2; tp layers.l.fc2.out
 *     all-reduce / SP reduce-scatter
 *   SP: tp all-gather output.in; gtp all-gather output (embedding when
 *   tied); tp all-reduce ce.max (max), ce.target, ce.sumexp (N each)
 * Backward:
 *   gtp all-gather output (embedding when tied); tp output.dgrad all-reduce
 *   / SP reduce-scatter; untied: gtp reduce-scatter output
 *   per layer l, last first: SP: tp all-gather layers.l.fc2.dout; gtp
 *     all-gather layers.l.fc2, gtp reduce-scatter layers.l.fc2; gtp
 *     all-gather layers.l.fc1; tp layers.l.fc1.dgrad all-reduce / SP
 *     reduce-scatter; gtp reduce-scatter layers.l.fc1; SP: tp all-gather
 *     layers.l.proj.dout; gtp all-gather layers.l.proj, gtp reduce-scatter
 *     layers.l.proj; CP p2p: cp send and recv layers.l.qkv.dkv C times
 *     (2 N, 4 N, ..., 4 N, 2 N x G/T x d), CP all_gather: cp reduce-scatter
 *     layers.l.qkv.dk and layers.l.qkv.dv; gtp all-gather layers.l.qkv;
 *     tp layers.l.qkv.dgrad all-reduce / SP reduce-scatter; gtp
 *     reduce-scatter layers.l.qkv
 *   SP: tp all-gather embedding.dout; gtp reduce-scatter embedding
 * A train step: tokens (fp64 sum over dp_cp); per micro-batch forward and
 * backward; grads (every shard, sum over dp_cp_replicate); replicated_grads
 * (norms, QK norms, biases: sum over dp_cp); tp_grads (sum over tp of the
 * QK-norm gradients, and with SP the norm gradients:
 * megatron/core/distributed/finalize_model_grads.py, after the data-
 * parallel sync); Adam; loss (fp64 sum over dp_cp); a world barrier.
 * With prefetch (gtplan.runtime.prefetch) each pass's GTP all-gathers run
 * one weight ahead (rt_weights_next), in the same pass order.
 *
 * get_logprobs (rt_infer.c) issues per micro-batch exactly the forward
 * above, then one world gather "logprobs" under the call
 * "get_logprobs.results". Refit export (rt_export.c) and --dump-weights
 * gather every weight (GTP, then TP, by gtplan.stack.refit_gather).
 *
 * Weights start from the seed alone (rt_data's counter-based normals over
 * logical coordinates), so every layout starts from the same logical
 * model: N(0, 0.02) for qkv, fc1, embedding and output, N(0, 0.02 /
 * sqrt(2 L)) for proj and fc2 (Megatron's scaled_init_method_normal), norms
 * 1, biases 0.
 *
 * Pipeline parallelism (rt_pp.c): each stage holds its layers (Megatron's
 * split, base/pp_schedule.h), stage 0 the embedding, the last stage the
 * final norm, the output layer and the loss (tied: its own copy of the
 * embedding, initialised from the same stream, so equal, its gradient
 * summed with stage 0's over the embedding group, "embedding_grads",
 * after the TP sums). Micro-batches run in Megatron's 1F1B or
 * interleaved order; activations go forward and their gradients back by
 * send/recv over pp (Nl x h each, labelled act/grad.mbN, coll.h); the
 * loss reaches every stage by a pp all-reduce ("loss.pp").
 *
 * Not run (refused before any collective, one message with the fix):
 * MoE models, TP above the query groups (Megatron-LM PR #2565's
 * sub-sharding), heads or F not divisible by TP, seq_len not divisible by
 * 2 x CP, SP with tokens not divisible by TP.
 *
 * Ownership: a struct rt_model owns its weights, gradients, optimizer
 * state, buffers and activations (on k's device and on the host);
 * rt_model_release() frees them and is safe on a model whose
 * rt_model_init failed part-way (the caller releases it either way). It
 * borrows the kern_ctx and coll it was given, which must outlive it.
 * rt_head_acts_alloc / rt_layer_acts_alloc fill the given structs,
 * freed by rt_head_acts_free, or with the model (m->la_all).
 */
#ifndef GTPLAN_RT_MODEL_H
#define GTPLAN_RT_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "coll.h"
#include "decoder_sizes.h"
#include "kern.h"
#include "pp_schedule.h"
#include "rt_plan.h"

struct rt_text;

#define RT_GTP_PAD DSZ_GTP_PAD
#define RT_ADAM_BETA1 0.9f
#define RT_ADAM_BETA2 0.999f
#define RT_ADAM_EPS 1e-8f
/* Megatron's init_method_std; proj and fc2 are scaled by 1/sqrt(2 L). */
#define RT_INIT_STD 0.02

enum rt_split { RT_SPLIT_VOCAB, RT_SPLIT_COLUMN, RT_SPLIT_ROW };

/* One GTP-sharded weight on this rank. */
struct rt_weight {
	char name[48];           /* "embedding", "layers.0.qkv", ... */
	enum rt_split split;
	int glu;                 /* linear_fc1: TP-local [gate_t; up_t] */
	long long rows, cols;    /* logical */
	long long d0, d1;        /* the TP-local tensor */
	long long d0_real;       /* its rows that are logical rows (vocab
				    padding excluded) */
	long long row0, col0;    /* its offset in the logical tensor (row0:
				    not for glu, see rt_weight_row) */
	long long pad;           /* GTP tail padding rows */
	long long shard;         /* S: rows per GTP shard */
	long long off;           /* the shard's place in param/grad */
	uint64_t stream;         /* init stream */
	double std;
};

/* The logical row of TP-local row i of TP rank t's tensor of w. */
long long rt_weight_row(const struct rt_weight *w, int t, long long i);

/* Sizes one rank works with. */
struct rt_shape {
	struct dsz_sizes z;            /* base/decoder_sizes.h */
	long long h, ffn, fl, layers;  /* fl = ffn / TP */
	long long heads, kv_heads, hd; /* H, query groups, head dim */
	long long vocab, vp, vl;       /* V, padded V, Vp / TP */
	long long vfirst, vvalid;      /* this rank's first id, real ids */
	long long seq_len, local_seq;  /* local_seq = seq_len / CP */
	long long micro, tokens;       /* tokens N = micro x local_seq */
	long long local;               /* residual rows: N / TP with SP */
	long long global_batch, per_lane, micro_batches;
	int tie, qkv_bias, qk_norm, sp;
	int cp_p2p;                    /* CP's keys and values go round a
					  ring (cp_comm_type p2p), else
					  they are all-gathered */
	double theta, norm_eps;        /* RoPE theta, RMSNorm eps (plan) */
	float eps;                     /* norm_eps as the kernels take it */
	int tp, cp, g, lanes;
	int t, c, gr, lane;            /* this rank's coordinates */
	/* the pipeline (rt_pp.c, base/pp_schedule.h): P stages, this rank's
	 * stage p, V virtual stages (1: none). `layers` above is this
	 * stage's, layers_all the model's; chunk v holds the stage's local
	 * layers [v cl, (v+1) cl), cl = chunk_layers, model layers from
	 * chunk_first[v]. pre: the stage holds the embedding (stage 0),
	 * post: the final norm, output layer and loss (stage P - 1). slots:
	 * the micro-batches whose activations the stage keeps at once. */
	int pp, p, vpp, pre, post, slots;
	long long layers_all, chunk_layers;
	long long split_first, split_last; /* the plan's pp_first/last */
	long long chunk_first[PPS_MAX_V];
};

/* One layer's weights and the places of its replicated parameters in
 * param/grad (-1: absent). */
struct rt_layer {
	struct rt_weight *qkv, *proj, *fc1, *fc2;
	long long ln1, ln2, qn, kn, bias;
};

/* A layer's saved activations (the forward writes, the backward reads):
 * [rows, cols] with N = tokens, Nl = local, q = H/T x d, kv = G/T x d,
 * and names as in the top comment. */
struct rt_layer_acts {
	float *x;            /* [Nl, h] the layer's input */
	float *rstd1;        /* [Nl] */
	float *n1;           /* [Nl, h] input_layernorm(x) */
	float *n1g;          /* [N, h] n1 gathered over TP (SP), else n1 */
	/* bf16 runs: the bf16 copies of the GEMM and attention operands
	 * kept for the backward (rt_bf16_copy; NULL in fp32 runs): n1, n1g,
	 * q, k, v, o, n2, n2g, sw */
	uint16_t *n1_16, *n1g16, *q16, *k16, *v16, *o16, *n2_16, *n2g16,
		 *sw16;
	float *qraw, *kraw;  /* [N, q], [N, kv] before QK-norm (qk_norm) */
	float *qrstd, *krstd;/* [N H/T], [N G/T] (qk_norm) */
	float *q, *k, *v;    /* [N, q], [N, kv], [N, kv] as attention reads;
				bf16 runs without QK-norm write them only
				with CP (rt_train.c qkv_fwd: attention reads
				the copies) */
	float *kg, *vg;      /* [micro x seq_len, kv]: k, v of every CP rank
				(CP all_gather), else k, v */
	float *kvlast;       /* [2 N, kv] (CP p2p): k then v of the ring's
				last block, the backward's first */
	float *o;            /* [N, q] attention output */
	float *lse;          /* [micro, H/T, local_seq] */
	float *xm;           /* [Nl, h] x + attention block */
	float *rstd2;        /* [Nl] */
	float *n2;           /* [Nl, h] pre_mlp_layernorm(xm) */
	float *n2g;          /* [N, h] n2 gathered (SP), else n2 */
	float *u;            /* [N, 2 F/T] linear_fc1 output, gate | up */
	float *sw;           /* [N, F/T] SwiGLU(u) */
	/* u and sw are fp32 runs': bf16 runs hold linear_fc1's output in
	 * bf16 alone, u16 (as Megatron-core's bf16 linear_fc1 gives it),
	 * and SwiGLU's in sw16 */
	uint16_t *u16;
};

/* The rest of a micro-batch's activations and the backward's scratch
 * gradients (one set, reused by every layer). */
struct rt_acts {
	float *xL;           /* [Nl, h] the last layer's output */
	float *rstdf;        /* [Nl] */
	float *z;            /* [Nl, h] final_layernorm(xL) */
	float *zg;           /* [N, h] z gathered (SP), else z */
	float *logits;       /* [N, Vp/T]; the backward's dlogits in place;
				fp32 runs only: bf16 runs hold the logits
				and their gradient in logits16 alone */
	float *qkv;          /* [N, q + 2 kv] linear_qkv's output in its
				weight's row order, then (backward) dq, dk,
				dv merged the same way */
	/* bf16 runs: bf16 copies of z, zg, dlogits, full_h (as a gradient),
	 * du and the merged dq, dk, dv (rt_bf16_copy; NULL in fp32 runs) */
	uint16_t *z16, *zg16, *logits16, *full_h16, *du16, *qkv16;
	float *cmax, *csum, *ctgt, *closs; /* [N] CE statistics */
	float *full_h;       /* [N, h] a full-sequence sum before TP reduces
				it, or a gathered gradient */
	float *dx;           /* [Nl, h] the residual stream's gradient */
	float *dn;           /* [Nl, h] a norm's output gradient */
	float *dtmp;         /* [Nl, h] a norm's input gradient */
	float *dq, *dk, *dv; /* [N, q], [N, kv], [N, kv] */
	float *dkg, *dvg;    /* [micro x seq_len, kv] the gathered keys' and
				values' gradients (CP), else dk, dv */
	float *kvtmp;        /* [micro x seq_len, kv] CP-rank-major staging
				of a gather or scatter (CP all_gather,
				micro > 1) */
	float *ring0, *ring1;/* [4 N, kv] (CP p2p): a block's k, v, dk, dv:
				the one at hand and the one travelling */
	float *rdkv;         /* [2 N, kv] (CP p2p): this rank's part of a
				block's dk then dv */
	float *o2, *lse2;    /* as o, lse (CP p2p): one block's attention */
	float *dqraw, *dkraw;/* the same before QK-norm (qk_norm) */
	float *dout;         /* [N, q] attention output gradient */
	uint16_t *dout16;    /* bf16 runs without CP: dout in bf16 alone,
				as linear_proj's backward writes it and the
				flash backward reads it */
	float *du;           /* [N, 2 F/T] */
	float *dsw;          /* [N, F/T] */
	uint16_t *dsw16;     /* bf16 runs: dsw in bf16 alone (as du in du16;
				du and dsw are fp32 runs') */
};

struct rt_model {
	struct kern_ctx *k;
	struct coll *c;
	struct rt_shape s;
	uint64_t seed;
	double lr;
	int sgd;                     /* 1: plain SGD instead of Adam (set by
					the caller after rt_model_init) */
	int bf16;                    /* gtplan.runtime.dtype bf16: see
					rt_bf16() */
	const struct rt_text *text;  /* the dataset (set by the caller after
					rt_model_init; NULL: synthetic) */
	long long step;              /* optimizer steps done */

	/* the large weights in model order: embedding, output (untied),
	 * then per layer qkv, proj, fc1, fc2 */
	struct rt_weight *w;
	int n_w;
	struct rt_weight *emb, *out; /* out == emb when tied */
	struct rt_layer *layer;
	long long lnf;               /* the final norm in param */
	long long n_shard, n_rep;    /* sharded, then replicated elements */
	long long tp_sum;            /* the replicated prefix summed over TP */
	float *param, *grad, *adam_m, *adam_v;

	/* scratch: one gathered TP-local weight, its gradient, one shard, and
	 * the embedding's TP-local gradient of a micro-batch */
	float *full, *gfull, *gshard, *gemb;
	uint16_t *param16;           /* bf16: the sharded weights (n_shard)
					rounded (rt_weights_refresh) */
	int param16_ok;              /* param16 holds param's values: set by
					the refresh and by Adam's update,
					which writes it; cleared by every
					other writer of param (init, --load,
					SGD) */
	uint16_t *full16;            /* bf16: one gathered tensor (gtp > 1) */
	/* prefetch (runtime.prefetch): the second buffers of each, and the
	 * pass being gathered: its weights in order of use, the next one */
	int prefetch;
	float *full_b;
	uint16_t *full16_b;
	const struct rt_weight **seq;
	int seq_n, seq_next;
	long long full_n;            /* elements of full */
	unsigned char *gfirst;       /* per weight (m->w's order): its
					gradient's first write this step is
					still to come (rt_grad_out) */

	struct rt_layer_acts *la;    /* per layer */
	struct rt_acts a;
	int32_t *tokens, *targets;   /* device: [N] */
	int32_t *pos;                /* device: [N] each row's position */
	int32_t *qpos;               /* device: [local_seq] a sample's rows'
					positions (the first local_seq of
					pos) */
	int32_t *kpos;               /* device: [seq_len] the gathered keys'
					positions, CP rank by CP rank */
	int32_t *sample;             /* host: one sample's tokens */
	int32_t *h_tokens, *h_targets;
	float *h_loss;               /* host: [micro_batches, N] */
	/* A training step's token losses stay on the device until its end
	 * (rt_forward with loss_sum NULL, rt_loss_flush): dloss
	 * [micro_batches, N], written by rt_head_fwd (rt_vocab.c) in the
	 * order of its calls, loss_rows of them so far. */
	float *dloss;
	long long loss_rows;

	/* PP (rt_pp.c): per slot (rt_model_use_slot) the layers' saved
	 * activations, the head's (struct rt_acts' per-micro-batch part) and
	 * the micro-batch's tokens and targets; a chunk's output to send
	 * and, per slot and chunk, a received output gradient; this
	 * stage's schedule (the same every step; pp_nops < 0: none) */
	struct rt_layer_acts *la_all;
	struct rt_acts *head;
	int32_t **slot_tokens, **slot_targets;
	float *pp_out, **pp_grad;
	struct pps_op *pp_ops;
	long long pp_nops;
};

/* Checks that the plan's layout can split the model and sets s; every
 * refusal is one message naming the size and the fix. RT_EPLAN on refusal.
 * global_batch / micro_batch: 0 takes the plan's. */
int rt_model_shape(struct rt_shape *s, const struct rt_plan *p,
		   long long global_batch, long long micro_batch);

/* What rt_model_init allocates for shape s, in bytes, before it does:
 * the parameters with their gradients and Adam's m and v, the buffers of
 * gathered weights, and the activations of one micro-batch (saved per
 * layer and scratch, device and host), of which the logits [N, Vp/T]. s
 * must hold sizes whose products fit (rt_limits_plan). */
struct rt_model_mem {
	long long state, scratch, acts, logits, total;
};
void rt_model_mem(const struct rt_shape *s, int bf16, int prefetch,
		  struct rt_model_mem *mem);

/* Lays out the shards, allocates on k's device and initialises from the
 * seed. Returns 0 or a negative RT_E* code. */
int rt_model_init(struct rt_model *m, const struct rt_plan *p,
		  const struct rt_shape *s, struct kern_ctx *k,
		  struct coll *c);
void rt_model_release(struct rt_model *m);

/* One optimizer step on the global batch of step `step` (from 1). Sets
 * *loss to the mean token loss of the batch (before the update) and
 * *tokens to the global token count. Collective. */
int rt_model_train_step(struct rt_model *m, long long step, double *loss,
			long long *tokens);

/* Gathers every full logical weight (GTP first, then TP, padding
 * stripped) and, on world rank 0, writes them as JSON to f ("gtplan-
 * weights/2": tensors in model order with Megatron's names, each with
 * name, shape and data as %.9g, which gives fp32 back exactly). f may be
 * NULL on other ranks. Collective. */
int rt_model_dump(struct rt_model *m, FILE *f);

/* ---- internals shared by the runtime's model files -------------------- */

/* Loads micro-batch `mb` of this rank's lane's share of the global batch of
 * step `step` (samples (step-1) x global_batch + lane x per_lane + mb x
 * micro ...) into m->tokens and m->targets. */
int rt_load_micro_batch(struct rt_model *m, long long step, long long mb);
/* The position in its sample of row i (< local_seq) of CP rank c's
 * share: Megatron's load-balanced split gives rank c chunks c (first
 * half) and 2C-1-c (second) of 2C; without CP, i. */
int32_t rt_row_pos(const struct rt_shape *s, int c, long long i);
/* The forward of the loaded micro-batch (collectives: see the top of this
 * file); leaves each token's loss -log p(target) in m->h_loss (host, in
 * m->tokens' order) and adds their sum to *loss_sum. With loss_sum NULL
 * (a train step) the losses stay on the device, no wait, for
 * rt_loss_flush. Collective. */
int rt_forward(struct rt_model *m, double *loss_sum);
/* The losses the step's forwards left on the device (loss_sum NULL):
 * downloaded into m->h_loss in one copy, their sum added to *loss_sum in
 * the order rt_forward would have added them (micro-batch, then token):
 * the same double to the bit. The step's one wait for the device. */
int rt_loss_flush(struct rt_model *m, double *loss_sum);

/* Pipeline chunks (rt_pp.c runs them in schedule order). The forward of
 * chunk v of the loaded micro-batch: the embedding first on stage 0's
 * chunk 0, else the input is already in m->la[v cl].x; its output goes to
 * m->a.xL then the head (loss added to *loss_sum) on the last stage's
 * last chunk, else to m->pp_out. The backward: the head's on the last
 * chunk of the last stage, else the output gradient is in m->a.dx; the
 * input gradient is left in m->a.dx (the embedding's backward on stage
 * 0's chunk 0). With PP 1, chunk 0 is the whole model (rt_forward).
 * Collective. */
int rt_forward_chunk(struct rt_model *m, int v, double *loss_sum);
int rt_backward_chunk(struct rt_model *m, int v, float scale);
/* Points m->la, the head's activations, m->tokens and m->targets at
 * micro-batch slot `slot` (0 .. s.slots - 1; rt_pp.c). */
void rt_model_use_slot(struct rt_model *m, int slot);
/* The activations a micro-batch keeps from forward to backward, for the
 * slots (rt_pp.c): the head's part of struct rt_acts (allocated into h,
 * freed, or pointed m->a at) and one layer's. */
int rt_head_acts_alloc(struct rt_model *m, struct rt_acts *h);
void rt_head_acts_free(struct rt_model *m, struct rt_acts *h);
void rt_head_acts_use(struct rt_model *m, const struct rt_acts *h);
int rt_layer_acts_alloc(struct rt_model *m, struct rt_layer_acts *la);

/* m->full = w's TP-local tensor [d0 + pad, d1] (all-gather over gtp), as
 * the math uses it: in bf16 runs the shard's bf16 copy (m->param16) is
 * gathered as bf16 (half the bytes) into m->full16 (with one GTP rank it
 * is the tensor already), *full16 set to it, the fp32 master shard staying
 * as it is. */
int rt_gather_weight(struct rt_model *m, const struct rt_weight *w,
		     const uint16_t **full16);
/* bf16 runs: m->param16 = the sharded weights rounded to bf16, what the
 * GTP gathers send (and, with one GTP rank, what the GEMMs read as it
 * is). The weights change only in the optimizer step (Adam writes
 * param16 as it updates: kern_adam_bf) and on init and load, so a call
 * (train step, get_logprobs) refreshes it at its start unless
 * m->param16_ok says it holds the weights already. A no-op in fp32
 * runs. */
int rt_weights_refresh(struct rt_model *m);
/* The same in fp32 always: the master weights (dump, export). */
int rt_gather_weight_exact(struct rt_model *m, const struct rt_weight *w);
/* A pass uses its weights in a fixed order (the top of this file): a
 * forward (forward = 1) the embedding, each layer's qkv, proj, fc1, fc2,
 * the output layer; a backward the output layer, then each layer's fc2,
 * fc1, proj, qkv from the last layer down. Under PP a pass is one chunk's
 * (rt_forward_chunk): the embedding on stage 0's chunk 0 only, the output
 * layer on the last stage's last chunk only. It gets each with
 * rt_weights_next(), which returns the TP-local tensor as the math uses it
 * (rt_gather_weight): in fp32 runs *full (*full16 NULL); in bf16 runs the
 * gathered bf16 tensor as *full16 (*full NULL: kern_gemm_bf and
 * kern_embed_fwd_b16 read it as it is). Just in time (prefetch off), each is gathered when
 * it is asked for; with prefetch rt_weights_begin starts the first, and
 * each rt_weights_next, once its weight has arrived, starts the gather of
 * the one after, into the other buffer, so that it runs while this one is
 * used. */
int rt_weights_begin(struct rt_model *m, int forward, int chunk);
int rt_weights_next(struct rt_model *m, const float **full,
		    const uint16_t **full16);

/* Mixed precision as Megatron's bf16 runs have it, with fp32 storage: in a
 * bf16 run every GEMM operand is a bf16 value (weights as gathered, and
 * the activations and gradients that feed a GEMM, rounded in place by
 * this call, by rt_bf16_copy, or by their producer: kern_add_rmsnorm_fwd,
 * kern_rmsnorm_bwd_add_bf, kern_qkv_rope_bf, kern_qkv_merge_rope_bf,
 * kern_attn_fwd_bf),
 * products accumulate in fp32, the cross-entropy, norms, attention's
 * softmax, residual sums, gradient reductions and Adam stay fp32 (the
 * gradient reduce-scatter too: grad_reduce_in_fp32). The GEMMs read the
 * bf16 copies (kern_gemm_bf) that rt_bf16_copy and those producers
 * write beside the fp32 values: struct rt_layer_acts' and rt_acts' *16
 * members, each written in the same pass as its rounding and read until
 * the value changes (or hold tensors that bf16 runs keep in bf16 alone:
 * the _b16 ops' and kern_gemm_bf16's). A no-op in fp32 runs. */
int rt_bf16(struct rt_model *m, float *x, long long n);
/* rt_bf16 that also writes the rounded values' bf16 bits to x16 (when not
 * NULL), the copy kern_gemm_bf multiplies; the caller passes the copy
 * with x to every GEMM that reads x until x changes. */
int rt_bf16_copy(struct rt_model *m, float *x, uint16_t *x16, long long n);
/* Where the GEMMs of w's gradient write it: with one GTP rank, straight
 * into w's shard gradient (the reduce-scatter would be a copy, and the add
 * after it is the GEMM's), setting it (*beta = 0) at the step's first
 * write and adding to it (*beta = 1) after; else m->gfull (*beta = 0).
 * rt_scatter_grad then does the rest. A caller whose first write adds
 * (a scatter-add) zeroes the gradient itself when *beta is 0. */
float *rt_grad_out(struct rt_model *m, const struct rt_weight *w,
		   float *beta);
/* A train step's start: zeroes the gradients that are not written whole
 * by rt_grad_out's first write (all of them with GTP > 1; else the
 * replicated parameters') and arms those first writes. */
int rt_grads_begin(struct rt_model *m);
/* Reduce-scatters the TP-local gradient gfull [d0 + pad, d1] over gtp and
 * adds this rank's block to w's shard gradient. Zeroes gfull's padding
 * rows first (the caller wrote rows [0, d0)). Nothing to do when gfull is
 * rt_grad_out's shard gradient. */
int rt_scatter_grad(struct rt_model *m, const struct rt_weight *w,
		    float *gfull);
/* Context parallelism's attention of layer l (rt_cp.c; CP > 1 only), the
 * cp_comm_type's collectives included. Forward: la->o, la->lse from
 * la->q and the keys and values of every CP rank. Backward: accumulates
 * into a->dq (zeroed by the caller) and sets a->dk, a->dv to the gradient
 * of this rank's keys and values summed over the CP ranks. */
int rt_cp_attn_fwd(struct rt_model *m, long long l);
int rt_cp_attn_bwd(struct rt_model *m, long long l);
/* rt_train.c's helpers that rt_cp.c shares: attention of the local
 * queries on sk key rows a sample, and a collective's label "w.sfx" in
 * buf (returned). */
struct kern_attn rt_attn_shape(const struct rt_shape *s, long long sk);
const char *rt_label(char *buf, size_t n, const char *w, const char *sfx);
/* A kernel status as a runtime code, reported with the call's place. */
int rt_kcheck(int kern_rc, const char *call, const char *file, int line);
/* Device memory of n floats (at least one), zeroed. */
int rt_alloc_f(struct rt_model *m, float **p, long long n);

#define KCHECK(cmd)                                                       \
	do {                                                              \
		int kc_ = (cmd);                                          \
		if (kc_)                                                  \
			return rt_kcheck(kc_, #cmd, __FILE__, __LINE__);  \
	} while (0)
#define RCHECK(cmd)                       \
	do {                              \
		int rc_ = (cmd);          \
		if (rc_)                  \
			return rc_;       \
	} while (0)

#endif
