/*
 * ckpt: the checkpoint plan and its validation (docs/design.md §2.6-2.7,
 * docs/notes/megatron-semantics.md §2.3-3.5).
 *
 * Every rank saves sharded entries: each large weight of each of its
 * layers (a GTP piece: column-parallel chunk t*G + g of TP*G on axis 0;
 * row-parallel chunk g of G on axis 0 and t of TP on axis 1), the
 * GTP-replicated norms, the vocab-parallel embedding (first stage), the
 * untied output layer and the final norm (last stage), the optimizer
 * state of all of them (see ckpt_check), the RNG state ShardedObject
 * keyed (pp, tp), the data-loader state per lane, and the experts of each
 * MoE layer (one key per expert weight, [E, rows, cols], as Megatron's
 * grouped and sequential experts save them; pieces and writers on the
 * expert grid, see ckpt_expert_entry_of). Entries depend only on a rank's
 * class (its coordinates; an expert piece is the same for all E / EP
 * local experts), so nothing is listed per rank or per expert:
 * validation walks each
 * pipeline stage's ranks once per entry kind, O(W) in all, and checks as
 * dist_checkpointing does that every chunk of every key is claimed by
 * exactly one main replica (replica id all zeros) and object keys are
 * unique: GT710 (chunk claimed twice), GT711 (chunk never written), GT712
 * (duplicate object key). Padding never enters checkpoint coordinates.
 *
 * Ownership: plain values; the checkpoint functions allocate only inside
 * a call and free before they return. A struct ckpt_summary's opt_format
 * is a static string; a struct ckpt_tensor's name is static.
 */
#ifndef GTPLAN_CKPT_H
#define GTPLAN_CKPT_H

#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "sim.h"
#include "stack.h"

/* The entry kinds of one layer / of the run. */
enum ckpt_kind {
	CKPT_COLUMN,   /* column-parallel GTP weight */
	CKPT_ROW,      /* row-parallel GTP weight */
	CKPT_NORM,     /* GTP-replicated (norms) */
	CKPT_VOCAB,    /* vocab-parallel embedding / output layer */
	CKPT_RNG,      /* rng_state ShardedObject, keyed (pp, tp) */
	CKPT_LOADER,   /* data-loader state, one object per lane */
	CKPT_NKINDS
};

/* One sharded entry as a rank would save it (2-D; objects use axis 0). */
struct ckpt_entry {
	long long global[2];  /* logical global shape (unpadded) */
	long long frag[2];    /* the chunk grid (axis fragmentations) */
	long long chunk[2];   /* this rank's chunk offset in the grid */
	long long local[2];   /* local shape (padded piece) */
	long long first_row, real_rows; /* logical rows the piece holds */
	long long replica[3]; /* (PP, TP-slot, DP) */
	int main;             /* replica id all zeros */
};

/* The entry of kind `k` (a weight [rows, cols] for COLUMN/ROW/NORM, cols
 * ignored for NORM; rows and cols ignored for RNG/LOADER) that the rank
 * at `coord` (lay_coords on the dense grid) saves under stack s. Rows of
 * a TP slice are padded to a multiple of G * pad (pad >= 1) before GTP
 * splits them, as Megatron's padded sharding does; the padded rows are
 * not logical (real_rows counts the others). */
void ckpt_entry_of(const struct plan *p, const struct stack *s,
		   enum ckpt_kind k, long long rows, long long cols,
		   long long pad, const long long coord[LAY_NAXES],
		   struct ckpt_entry *e);

/* The same on the expert grid (p->expert: TP is ETP, GTP is EG, DP is
 * EDP; the writer is elected over expert DP) for one expert's COLUMN or
 * ROW weight; coord is on the expert grid. */
void ckpt_expert_entry_of(const struct plan *p, const struct stack *s,
			  enum ckpt_kind k, long long rows, long long cols,
			  long long pad, const long long coord[LAY_NAXES],
			  struct ckpt_entry *e);

/* Megatron's padded vocabulary: vocab rounded up to a multiple of
 * divisor (make_vocab_size_divisible_by; <= 0: 128) x tp. */
long long ckpt_padded_vocab(long long vocab, long long divisor, long long tp);

/* The vocab-parallel embedding (or untied output layer) [vocab, hidden]:
 * TP slice t holds padded / TP rows of the padded vocabulary, GTP-split
 * like a column-parallel weight (chunk t*G + g of TP*G); rows at or past
 * `vocab` are padding and never logical (real_rows excludes them). */
void ckpt_vocab_entry_of(const struct plan *p, const struct stack *s,
			 long long vocab, long long divisor, long long hidden,
			 const long long coord[LAY_NAXES],
			 struct ckpt_entry *e);

/* Whether stack s can write and read the fully_reshardable optimizer
 * format on plan p for model m (docs/design.md §2.7): without GTP (G and
 * EG 1) always; under GTP not without Megatron-LM PR #7162
 * (megatron_lm_7162: false), and even with it not for fused projections
 * (gated fc1, an SSM in_proj: hybrid_layer_pattern with 'M') or native
 * FP8 weights (policy.megatron_cfg.fp8_cfg.fp8_param, p->set.fp8_param).
 * Returns 1 when it can, else 0 with the reason in why. */
int ckpt_fully_reshardable_ok(const struct plan *p, const struct stack *s,
			      const struct model_shape *m, char *why,
			      size_t len);

/* Where a tensor of the checkpoint lives. */
enum ckpt_part {
	CKPT_PART_LINEAR,      /* a split linear of every layer */
	CKPT_PART_NORM,        /* a norm of every layer */
	CKPT_PART_EXPERT,      /* a split linear of every MoE layer's experts
				  (one expert's shape) */
	CKPT_PART_EXPERT_BIAS, /* the experts' linear_fc2 bias [E, hidden] */
	CKPT_PART_FIRST,       /* once per model, on the first stage */
	CKPT_PART_LAST,        /* once per model, on the last stage */
};

/* One tensor of a Megatron checkpoint: the list both the checkpoint check
 * (ckpt_check) and resharding (reshard.h) walk. */
struct ckpt_tensor {
	enum ckpt_part part;
	enum ckpt_kind kind;   /* COLUMN, ROW, NORM or VOCAB */
	const char *name;      /* model.h's name: "linear_qkv",
				  "experts.linear_fc1", "input_layernorm",
				  "embedding.word_embeddings", ... (static) */
	char key[48];          /* the key in the layer or the model:
				  "self_attention.linear_qkv.weight" */
	long long rows, cols;
};

/* The most tensors ckpt_tensors() lists: a layer's linears and 2 norms,
 * the experts' linears and bias, embedding, output layer, final norm. */
#define CKPT_MAX_TENSORS (2 * MODEL_MAX_WEIGHTS + 6)

/* Fills v (room for CKPT_MAX_TENSORS) with model m's tensors, in this
 * order: each layer's split linears and its two norms, then (experts != 0)
 * the experts' linears and, when m adds linear biases, linear_fc2's bias
 * (fc1's ETP-split bias is left out, as the dense linears' biases are),
 * then the vocab-parallel embedding, the untied output layer and the final
 * norm. Returns the count: 0 for an unknown shape. */
size_t ckpt_tensors(const struct model_shape *m, int experts,
		    struct ckpt_tensor *v);

/* The `checkpoint` summary of the plan JSON. */
struct ckpt_summary {
	int valid;            /* 0: not computed (no grid) */
	long long keys;       /* distinct model and object keys */
	long long shards;     /* their entries saved by main replicas */
	long long writers;    /* ranks that save at least one main entry
				 (optimizer entries included) */
	long long max_rank_bytes; /* most bytes one rank writes: bf16
				     weight pieces + fp32 optimizer state
				     (objects not counted) */
	long long max_rank_weight_bytes; /* of which weights, at most */
	/* the most bytes one rank reads when it loads this layout: all its
	 * weight pieces (replicas read too, padding excluded) and the
	 * optimizer state of its own parameters (its dp_cp range of the
	 * flat buffer; all of it without the distributed optimizer) */
	long long max_rank_read_bytes;
	/* the optimizer state: its layout ("dp_reshardable",
	 * "fully_reshardable", "fully_sharded_model_space", or
	 * "not_distributed": model space, the model's writers), whether
	 * gtplan.stack.optimizer_ckpt_format said it, its keys (per state:
	 * fp32_param, exp_avg, exp_avg_sq), main entries and the most bytes
	 * one rank writes */
	const char *opt_format;
	int opt_format_set;
	long long opt_keys, opt_shards, max_rank_opt_bytes;
};

/* Builds the checkpoint plan of p for model m (known = 0: the weights and
 * the optimizer state are left out, the objects are still checked) and
 * the stack gtplan.stack of root, validates it (the optimizer state's
 * entries too: in the layout of gtplan.stack.optimizer_ckpt_format,
 * dp_reshardable when unset: one flat key per model-parallel rank
 * (t, g, pp) and state, cut in CP x D ranges over the GTP-excluded dp_cp
 * group; fully_reshardable: the weights' chunks and writers in logical
 * coordinates; fully_sharded_model_space: each piece's elements cut in
 * CP x D ranges; the experts' state alike over expert DP, with its own
 * flat key per expert model-parallel rank (etp, ep, egtp, pp)). Experts
 * are planned when the expert grid exists and EP divides E, on the MoE
 * layers of each stage (model_moe_layers); the summary counts them in
 * keys, shards, writers and bytes per rank. Reports GT710-GT712 (for
 * experts naming the key, the experts and the ranks) and GT735 (a
 * fully_reshardable
 * format the stack cannot save) (only when
 * checkpointing.enabled is true, as the framework's GT640 does; the RNG
 * key under EP > 1 is GT640's) and fills *out. s: the config's
 * gtplan.stack (stack_read; its findings are stack_check's). Returns 0, or
 * -1 when out of memory. */
int ckpt_check(const struct plan *p, const struct cfg_node *root,
	       const struct model_shape *m, const struct stack *s,
	       struct ckpt_summary *out, struct diag_list *diags);

#endif
