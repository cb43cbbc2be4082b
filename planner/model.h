/*
 * model: model shapes, for the framework rules (framework.h) and the
 * simulator's collective sizes, memory and cost: a built-in catalog keyed by policy.model_name (Hugging Face names),
 * and `gtplan.model` with Megatron's field names, which overrides the
 * catalog field by field (or describes a model the catalog lacks).
 *
 * Ownership: a struct model_shape is the caller's value with nothing to
 * release (fixed arrays only); model_resolve copies what it reads from
 * the config. The catalog's shapes, names and messages returned are
 * static; model_field_value writes into the caller's buffer.
 */
#ifndef GTPLAN_MODEL_H
#define GTPLAN_MODEL_H

#include "cfg.h"
#include "diag.h"

/* ---- model shape ------------------------------------------------------ */

/* Longest moe_layer_freq / hybrid_layer_pattern text a shape holds. */
#define MODEL_TEXT_MAX 192
/* At least the number of fields gtplan.model and the catalog know. */
#define MODEL_MAX_FIELDS 32

struct model_shape {
	char name[128];        /* policy.model_name, or "gtplan.model" */
	int known;             /* 0: no shape; checks that need it are skipped */
	long long num_layers;
	long long hidden_size;
	long long ffn_hidden_size;
	long long num_attention_heads;
	long long num_query_groups;  /* KV heads */
	long long kv_channels;       /* head dim; 0 = hidden / heads */
	long long vocab_size;
	int share_embeddings_and_output_weights;
	int add_bias_linear;
	int add_qkv_bias;
	long long num_moe_experts;   /* 0: dense */
	long long moe_ffn_hidden_size;
	long long moe_router_topk;
	long long mtp_num_layers;
	int gated_linear_unit;       /* SwiGLU: fc1 is [gate|up], 2 x ffn rows */
	/* The parallel shape is known: num_layers, hidden_size,
	 * num_attention_heads, num_query_groups and vocab_size are set, so
	 * every framework shape check runs. `known` above says more: the
	 * layers are uniform transformer layers whose sizes gtplan computes.
	 * Catalog entries marked `sizes approximate` (hybrid Mamba, multi-
	 * latent attention, gated delta net) have shape_known without known. */
	int shape_known;
	long long make_vocab_size_divisible_by;        /* 0: Megatron's 128 */
	long long moe_shared_expert_intermediate_size; /* 0: no shared expert */
	int multi_latent_attention;  /* MLA: no query groups to split */
	/* Megatron's --moe-layer-freq as written ("1", "[0]*3+[1]*58"); ""
	 * means every layer is MoE when num_moe_experts is set. */
	char moe_layer_freq[MODEL_TEXT_MAX];
	/* Megatron's hybrid layer pattern, one character per layer (M Mamba,
	 * '*' attention, '-' MLP, E MoE); "" for a GPT model. */
	char hybrid_layer_pattern[MODEL_TEXT_MAX];
	/* What gtplan-run's decoder needs beyond the parallel shape (0 when
	 * unset: Megatron's defaults, rotary_base 10000 and
	 * layernorm_epsilon 1e-5, stand in). */
	long long rotary_base;       /* RoPE theta (HF rope_theta) */
	double layernorm_epsilon;    /* RMSNorm eps (HF rms_norm_eps) */
	int qk_layernorm;            /* QK-norm (Qwen3) */
	struct diag_loc loc;         /* where it was named or described */
	/* Where each field's value came from, by model_field_key()'s index
	 * (enum model_origin); MODEL_FROM_NONE when unset. */
	unsigned char origin[MODEL_MAX_FIELDS];
	/* The Hugging Face config.json read for this shape, "" when none. */
	char config_json[512];
	/* The sizes are estimates: the layers are not uniform transformer
	 * layers (hybrid, multi-latent attention, gated delta net, dense
	 * first layers, shared experts) or the family is not mapped. */
	int approximate;
};

/* Where a shape's value comes from, lowest precedence first. */
enum model_origin {
	MODEL_FROM_NONE, MODEL_FROM_CATALOG, MODEL_FROM_HF,
	MODEL_FROM_GTPLAN, MODEL_FROM_DEFAULT,
};

/* Fills *m for the config: the catalog entry for policy.model_name (if
 * any), then every field `gtplan.model` sets, by Megatron's name (each
 * overrides the catalog's; null on a nullable field restores its
 * default). m->name is policy.model_name as written, or "gtplan.model";
 * m->loc is the gtplan.model map when there is one, else the
 * policy.model_name value.
 *
 * shape_known = 1 when num_layers, hidden_size, num_attention_heads and
 * vocab_size are set (the framework shape checks need no more); known = 1
 * when ffn_hidden_size is set too and the shape has uniform transformer
 * layers (no hybrid_layer_pattern, no multi_latent_attention, not a
 * catalog entry with approximate sizes); then num_query_groups
 * (default: heads) and kv_channels (default: hidden / heads) are filled
 * in, and for an MoE model moe_ffn_hidden_size (default: ffn_hidden_size)
 * and moe_router_topk (default: 2), as Megatron's TransformerConfig does.
 * A model described only by gtplan.model has gated_linear_unit = true
 * (every catalogued family is SwiGLU/GeGLU), no biases and untied
 * embeddings unless it says otherwise.
 *
 * No model_name and no gtplan.model: nothing is reported, known = 0. An
 * unknown model (or local path) without a complete gtplan.model is a GT524
 * warning at the model_name value (at gtplan.model when there is no name),
 * known = 0, and 0 is returned. A gtplan.model value of the wrong type
 * (GT200) or range (GT201), or a combination Megatron would refuse (GT205:
 * heads not a multiple of num_query_groups, hidden not a multiple of heads
 * without kv_channels, top-k above the expert count), is reported; then
 * known = 0 and -1 is returned. */
int model_resolve(const struct cfg_node *root, struct model_shape *m,
		  struct diag_list *diags);

/* The catalog is data/models.yaml, embedded into the binary at build time
 * and read with libyaml on first use (see that file for its format and
 * sources): each entry is a Hugging Face config.json, mapped as
 * model_hf.c maps a model's own.
 * Entries are sorted by name, case-insensitively. An entry has
 * shape_known = 1; known = 1 unless the mapping finds its sizes
 * approximate (its family's layers are not uniform, dense first layers,
 * shared experts; then the shape checks run but collective sizes use the
 * default shape).
 * Hostile-input limit: at most MODEL_CATALOG_MAX names. */
#define MODEL_CATALOG_MAX 256

/* Catalog lookup by name (case-insensitive; an "org/" prefix is optional;
 * Hugging Face's older "Meta-Llama-..." names find their entry). NULL
 * when absent. */
const struct model_shape *model_catalog_find(const char *name);
size_t model_catalog_count(void);
const struct model_shape *model_catalog_at(size_t i);
/* NULL when the embedded data parsed cleanly, else "data/models.yaml:LINE:
 * COL: what" (a build with a broken data file; the tests check it). */
const char *model_catalog_error(void);

/* The shape's fields by Megatron's name, for `gtplan explain`: how many,
 * the i-th's name, its value as text ("" when unset) and its origin's
 * name ("catalog", "config.json", "gtplan.model", "default", "unset"). */
size_t model_field_count(void);
const char *model_field_key(size_t i);
void model_field_value(const struct model_shape *m, size_t i, char *buf,
		       size_t len);
const char *model_origin_name(int origin);
/* Where field `key` of *m comes from, for a diagnostic's note: "gtplan's
 * catalog", the config.json's path, "gtplan.model", "Megatron's default"
 * or "not given". */
void model_origin_text(const struct model_shape *m, const char *key,
		       char *buf, size_t len);

/* Per layer, whether it is an MoE layer: from hybrid_layer_pattern ('E'),
 * else moe_layer_freq (Megatron's integer or list form), else every layer
 * of an MoE model. Fills moe[0..num_layers) and returns 0, or -1 when
 * num_layers exceeds `max` or the pattern does not fit num_layers. */
int model_layer_kinds(const struct model_shape *m, unsigned char *moe,
		      long long max);
/* MoE layers among layers [first, first + n). */
long long model_moe_layers(const struct model_shape *m, long long first,
			   long long n);

/* The large linear weights of one transformer layer, as Megatron names
 * them, with their logical [rows, cols] and how TP splits them. */
enum model_split { SPLIT_COLUMN, SPLIT_ROW, SPLIT_NONE };
struct model_weight {
	const char *name;      /* "linear_qkv", "linear_proj", "linear_fc1",
				  "linear_fc2", "experts.linear_fc1", ... */
	long long rows, cols;  /* out_features, in_features */
	enum model_split split;
};
/* Enough room for either list below. */
#define MODEL_MAX_WEIGHTS 4

/* Writes up to `max` of the layer's TP-grid weights: linear_qkv
 * [(heads + 2 kv_heads) * head_dim, hidden] column, linear_proj [hidden,
 * heads * head_dim] row, and for a dense model linear_fc1 [ffn (x2 when
 * gated), hidden] column and linear_fc2 [hidden, ffn] row (an MoE layer's
 * MLP is its experts, below). Returns how many were written; 0 when the
 * shape is unknown. */
size_t model_layer_weights(const struct model_shape *m,
			   struct model_weight *w, size_t max);

/* The same for ONE expert of an MoE layer, on the expert grid (ETP splits
 * them): "experts.linear_fc1" [moe_ffn (x2 when gated), hidden] column and
 * "experts.linear_fc2" [hidden, moe_ffn] row. Every layer of an MoE model
 * has num_moe_experts of them. 0 for a dense or unknown model. */
size_t model_expert_weights(const struct model_shape *m,
			    struct model_weight *w, size_t max);

/* Head dim (kv_channels, else hidden / heads) and KV heads
 * (num_query_groups, else heads); usable on catalog entries as they are. */
long long model_head_dim(const struct model_shape *m);
long long model_kv_heads(const struct model_shape *m);

/* Parameter counts (elements) of the full, unsharded model; 0 when the
 * shape is unknown. One layer = its model_layer_weights() + its replicated
 * params + its expert params. */
long long model_layer_params(const struct model_shape *m);
/* Of one layer: the tensors GTP keeps whole (norms, biases of the TP-grid
 * linears, the MoE router). */
long long model_layer_replicated_params(const struct model_shape *m);
/* Of one layer: all experts' weights and biases (0 when dense). */
long long model_layer_expert_params(const struct model_shape *m);
/* Input embedding, plus the output layer when untied. */
long long model_embedding_params(const struct model_shape *m);
/* Multi-token-prediction layers (each: a transformer layer, eh_proj
 * [hidden, 2 hidden], three norms; embedding and output shared). */
long long model_mtp_params(const struct model_shape *m);
/* layers x layer + embedding (+ output) + final norm + MTP. */
long long model_total_params(const struct model_shape *m);

#endif
