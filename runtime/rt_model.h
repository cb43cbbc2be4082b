/*
 * rt_model: the runtime's byte-level language model, sharded as Megatron
 * shards it with GTP (docs/design.md §2.4, §5.1):
 *
 *   tokens -> embedding E (vocab-parallel over TP)
 *   `layers` x [ x += fc2(GeLU(fc1(RMSNorm(x)))) ]   fc1 column-parallel,
 *                                                     fc2 row-parallel
 *   RMSNorm -> logits = z E^T (tied, vocab-parallel) -> cross-entropy
 *
 * Logical weights: E [V, h], fc1 [ffn, h], fc2 [h, ffn] (rows are outputs),
 * norms [h]. The vocabulary is padded to Vp, a multiple of TP; padded rows
 * are zero and masked out of the softmax, so no result depends on TP. Each
 * rank keeps its TP slice of every large weight (rows t*Vp/TP.. of E, rows
 * t*ffn/TP.. of fc1, columns t*ffn/TP.. of fc2), and of that TP-local
 * tensor [d0, d1] only rows [g*S, (g+1)*S): d0 is padded at the tail to a
 * multiple of RT_GTP_PAD x G (no padding when G = 1) and S = padded d0 / G,
 * as Megatron's gtp_remat_shard_dim0 does. Norms are GTP- and TP-replicated.
 *
 * A train step (rt_train.c): the token count is all-reduced over dp_cp;
 * per micro-batch the forward all-gathers each weight over gtp right before
 * it is used, all-reduces activations over tp after the embedding and fc2,
 * and reduces the CE statistics over tp (max, target logit, sum of exp);
 * the backward all-gathers each weight again, all-reduces fc1's and the
 * output layer's input gradients over tp and reduce-scatters each weight
 * gradient over gtp into the local shard's gradient. After the last
 * micro-batch the shard gradients are all-reduced over dp_cp_replicate and
 * the norm gradients over dp_cp; Adam updates the local shards; the loss is
 * all-reduced over dp_cp; a world barrier ends the step.
 *
 * get_logprobs (rt_infer.c, call "get_logprobs" in --record) issues, per
 * micro-batch of the lane's share, exactly train's forward and nothing
 * else; on each rank, in this order (groups of one rank issue nothing):
 *   gtp  all-gather  embedding     (count: the embedding shard)
 *   tp   all-reduce  embedding.out (sum, micro x local_seq x hidden)
 *   per layer l:
 *     gtp all-gather layers.l.fc1, gtp all-gather layers.l.fc2,
 *     tp  all-reduce layers.l.fc2  (sum, micro x local_seq x hidden)
 *   gtp  all-gather  embedding     (the tied output layer)
 *   tp   all-reduce  ce.max (max), ce.target (sum), ce.sumexp (sum)
 *                                  (micro x local_seq each)
 * No token count, loss or gradient all-reduce and no barrier. After the
 * last micro-batch one world gather of the values to rank 0 (count: micro-
 * batches x micro x local_seq per rank) stands in for the driver's result
 * collection; it is recorded under the call "get_logprobs.results", not
 * "get_logprobs".
 *
 * Refit export (rt_export.c, call "export_hf_weights"): per weight in model
 * order (embedding, then per layer fc1, fc2), by gtplan.stack.refit_gather:
 *   gtp_then_tp: gtp all-gather (the padded TP-local tensor), then tp gather
 *                to place 0 (as rt_model_dump);
 *   tp_then_gtp: tp all-gather of the shard, then gtp gather to place 0;
 *   tp_only:     tp gather of the shard to place 0.
 * Norms need no collective (replicated).
 *
 * Weights start from the seed alone (rt_data's counter-based normals over
 * logical coordinates), so every layout starts from the same logical model.
 */
#ifndef GTPLAN_RT_MODEL_H
#define GTPLAN_RT_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "coll.h"
#include "kern.h"
#include "rt_plan.h"

struct rt_text;

/* GTPRematConfig.pad_for_alignment's default (Megatron). */
#define RT_GTP_PAD 16
#define RT_NORM_EPS 1e-5f
#define RT_ADAM_BETA1 0.9f
#define RT_ADAM_BETA2 0.999f
#define RT_ADAM_EPS 1e-8f
/* Megatron's init_method_std; fc2 is scaled by 1/sqrt(2 layers). */
#define RT_INIT_STD 0.02
/* The most weights a pass uses: 2 a layer and the embedding (twice in a
 * forward). */
#define RT_MAX_SEQ (2 * RT_MAX_LAYERS + 2)

enum rt_split { RT_SPLIT_VOCAB, RT_SPLIT_COLUMN, RT_SPLIT_ROW };

/* One GTP-sharded weight on this rank. */
struct rt_weight {
	char name[48];           /* "embedding", "layers.0.fc1", ... */
	enum rt_split split;
	long long rows, cols;    /* logical */
	long long d0, d1;        /* the TP-local tensor */
	long long d0_real;       /* its rows that are logical rows (vocab
				    padding excluded) */
	long long row0, col0;    /* its offset in the logical tensor */
	long long pad;           /* GTP tail padding rows */
	long long shard;         /* S: rows per GTP shard */
	long long off;           /* the shard's place in param/grad */
	uint64_t stream;         /* init stream */
	double std;
};

/* Sizes one rank works with. */
struct rt_shape {
	long long h, ffn, fl, layers;  /* fl = ffn / TP */
	long long vocab, vp, vl;       /* V, padded V, Vp / TP */
	long long vfirst, vvalid;      /* this rank's first id, real ids */
	long long seq_len, local_seq;  /* local_seq = seq_len / CP */
	long long micro, tokens;       /* tokens = micro x local_seq */
	long long global_batch, per_lane, micro_batches;
	int tp, cp, g, lanes;
	int t, c, gr, lane;            /* this rank's coordinates */
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

	struct rt_weight emb;
	struct rt_weight *fc1, *fc2; /* per layer */
	long long n_shard, n_rep;    /* sharded, then replicated elements */
	long long norm_off;          /* first norm in param (layer l at
					norm_off + l h; the final one last) */
	float *param, *grad, *adam_m, *adam_v;

	/* scratch: one gathered TP-local weight, its gradient, one shard, and
	 * the embedding's TP-local gradient of a micro-batch */
	float *full, *gfull, *gshard, *gemb;
	uint16_t *shard16, *full16;  /* bf16: one shard, one gathered tensor */
	/* prefetch (runtime.prefetch): the second buffers of each, and the
	 * pass being gathered: its weights in order of use, the next one */
	int prefetch;
	float *full_b;
	uint16_t *shard16_b, *full16_b;
	const struct rt_weight *seq[RT_MAX_SEQ];
	int seq_n, seq_next;
	long long full_n;            /* elements of full */
	/* activations of one micro-batch, x[0..layers] */
	float **x, **n, **a, **b, **rstd;
	float *z, *rstd_f, *logits, *dx, *dn, *dtmp, *db;
	float *cmax, *csum, *ctgt, *closs;
	int32_t *tokens, *targets;   /* device copies */
	int32_t *sample;             /* host: one sample's tokens */
	int32_t *h_tokens, *h_targets;
	float *h_loss;
};

/* Checks that the plan's layout can split the model and sets m->s; every
 * refusal is one message naming the size and the fix. RT_EPLAN on refusal.
 * global_batch / micro_batch: 0 takes the plan's. */
int rt_model_shape(struct rt_shape *s, const struct rt_plan *p,
		   long long global_batch, long long micro_batch);

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
 * weights/1": tensors in model order, each with name, shape and data as
 * %.9g, which gives fp32 back exactly). f may be NULL on other ranks.
 * Collective. */
int rt_model_dump(struct rt_model *m, FILE *f);

/* ---- internals shared by rt_model.c, rt_train.c, rt_infer.c, rt_export.c */

/* Loads micro-batch `mb` of this rank's lane's share of the global batch of
 * step `step` (samples (step-1) x global_batch + lane x per_lane + mb x
 * micro ...) into m->tokens and m->targets: this CP rank's chunks. */
int rt_load_micro_batch(struct rt_model *m, long long step, long long mb);
/* The forward of the loaded micro-batch (collectives: see the top of this
 * file); leaves each token's loss -log p(target) in m->h_loss (host, in
 * m->tokens' order) and adds their sum to *loss_sum. Collective. */
int rt_forward(struct rt_model *m, double *loss_sum);

/* m->full = w's TP-local tensor [d0 + pad, d1] (all-gather over gtp), as
 * the math uses it: in bf16 runs the shard is rounded to bf16 and gathered
 * as bf16 (half the bytes), the fp32 master shard staying as it is. */
int rt_gather_weight(struct rt_model *m, const struct rt_weight *w);
/* The same in fp32 always: the master weights (dump, export). */
int rt_gather_weight_exact(struct rt_model *m, const struct rt_weight *w);
/* A pass uses its weights in a fixed order: a forward (forward = 1) the
 * embedding, each layer's fc1 and fc2, the embedding again (the tied
 * output layer); a backward the embedding, then each layer's fc2 and fc1
 * from the last layer down. It gets each with rt_weights_next(), which
 * returns the TP-local tensor as the math uses it (rt_gather_weight). Just
 * in time (prefetch off), each is gathered when it is asked for; with
 * prefetch rt_weights_begin starts the first, and each rt_weights_next,
 * once its weight has arrived, starts the gather of the one after, into
 * the other buffer, so that it runs while this one is used. */
int rt_weights_begin(struct rt_model *m, int forward);
int rt_weights_next(struct rt_model *m, const float **full);

/* Mixed precision as Megatron's bf16 runs have it, with fp32 storage: in a
 * bf16 run every GEMM operand is a bf16 value (weights as gathered, and
 * the activations and gradients that feed a GEMM, rounded in place by
 * this call), products accumulate in fp32, the cross-entropy, norms,
 * residual sums, gradient reductions and Adam stay fp32 (the gradient
 * reduce-scatter too: grad_reduce_in_fp32). A no-op in fp32 runs. */
int rt_bf16(struct rt_model *m, float *x, long long n);
/* Reduce-scatters the TP-local gradient gfull [d0 + pad, d1] over gtp and
 * adds this rank's block to w's shard gradient. Zeroes gfull's padding
 * rows first (the caller wrote rows [0, d0)). */
int rt_scatter_grad(struct rt_model *m, const struct rt_weight *w,
		    float *gfull);
/* A kernel status as a runtime code, reported with the call's place. */
int rt_kcheck(int kern_rc, const char *call, const char *file, int line);

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
