/*
 * model: the built-in catalog of model shapes, `gtplan.model`, and
 * parameter counts in Megatron's terms.
 *
 * Counting follows Megatron-core's GPT layer: linear_qkv [(q + 2 kv) *
 * head_dim, hidden] (bias when add_bias_linear or add_qkv_bias),
 * linear_proj [hidden, q * head_dim], linear_fc1 [ffn (x2 when gated),
 * hidden], linear_fc2 [hidden, ffn], two RMSNorm weights per layer, one
 * final norm. An MoE layer replaces the MLP by a router [experts, hidden]
 * and `num_moe_experts` experts of moe_ffn_hidden_size; every layer is an
 * MoE layer then (no dense first layers, no shared experts). Not modelled,
 * all under 0.01% of any catalogued model: Qwen3's q/k norms and Gemma 3's
 * extra post-norms.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "model.h"

/* ---- the catalog ------------------------------------------------------ */

/* Every entry: a shape gtplan knows, with a SwiGLU/GeGLU MLP. */
#define KNOWN .known = 1, .gated_linear_unit = 1, .loc = { .src = -1 }

/* Llama 3.x: Megatron-Bridge models/llama/llama_provider.py
 * (Llama31ModelProvider8B/70B, Llama32ModelProvider1B/3B); vocab_size
 * 128256 and tie_word_embeddings from the HF config.json (Llama 3.2 1B as
 * vendored in kevinstephano/thunder_model_blocks; oumi's recipes
 * llama3_1/llama3_2/llama3_3 README tables). No biases. */
#define LLAMA31_8B KNOWN, .num_layers = 32, .hidden_size = 4096, \
	.ffn_hidden_size = 14336, .num_attention_heads = 32, \
	.num_query_groups = 8, .vocab_size = 128256
#define LLAMA31_70B KNOWN, .num_layers = 80, .hidden_size = 8192, \
	.ffn_hidden_size = 28672, .num_attention_heads = 64, \
	.num_query_groups = 8, .vocab_size = 128256
#define LLAMA32_1B KNOWN, .num_layers = 16, .hidden_size = 2048, \
	.ffn_hidden_size = 8192, .num_attention_heads = 32, \
	.num_query_groups = 8, .vocab_size = 128256, \
	.share_embeddings_and_output_weights = 1
#define LLAMA32_3B KNOWN, .num_layers = 28, .hidden_size = 3072, \
	.ffn_hidden_size = 8192, .num_attention_heads = 24, \
	.num_query_groups = 8, .vocab_size = 128256, \
	.share_embeddings_and_output_weights = 1

/* Qwen2.5: Megatron-Bridge models/qwen/qwen_provider.py
 * (Qwen25ModelProvider500M ... 72B): QKV bias, no other bias; vocab
 * 151936 up to 3B (tied), 152064 from 7B (untied). Qwen2.5-Math-1.5B/7B
 * are Qwen2.5-1.5B/7B trained on (model card: base_model Qwen/Qwen2.5-1.5B)
 * and keep their shapes. */
#define QWEN25 KNOWN, .add_qkv_bias = 1
#define QWEN25_0P5B QWEN25, .num_layers = 24, .hidden_size = 896, \
	.ffn_hidden_size = 4864, .num_attention_heads = 14, \
	.num_query_groups = 2, .vocab_size = 151936, \
	.share_embeddings_and_output_weights = 1
#define QWEN25_1P5B QWEN25, .num_layers = 28, .hidden_size = 1536, \
	.ffn_hidden_size = 8960, .num_attention_heads = 12, \
	.num_query_groups = 2, .vocab_size = 151936, \
	.share_embeddings_and_output_weights = 1
#define QWEN25_3B QWEN25, .num_layers = 36, .hidden_size = 2048, \
	.ffn_hidden_size = 11008, .num_attention_heads = 16, \
	.num_query_groups = 2, .vocab_size = 151936, \
	.share_embeddings_and_output_weights = 1
#define QWEN25_7B QWEN25, .num_layers = 28, .hidden_size = 3584, \
	.ffn_hidden_size = 18944, .num_attention_heads = 28, \
	.num_query_groups = 4, .vocab_size = 152064
#define QWEN25_14B QWEN25, .num_layers = 48, .hidden_size = 5120, \
	.ffn_hidden_size = 13824, .num_attention_heads = 40, \
	.num_query_groups = 8, .vocab_size = 152064
#define QWEN25_32B QWEN25, .num_layers = 64, .hidden_size = 5120, \
	.ffn_hidden_size = 27648, .num_attention_heads = 40, \
	.num_query_groups = 8, .vocab_size = 152064
#define QWEN25_72B QWEN25, .num_layers = 80, .hidden_size = 8192, \
	.ffn_hidden_size = 29568, .num_attention_heads = 64, \
	.num_query_groups = 8, .vocab_size = 152064

/* Qwen3 dense: Megatron-Bridge qwen_provider.py (Qwen3ModelProvider600M
 * ... 32B): head dim 128 whatever hidden / heads is, 8 KV heads, vocab
 * 151936, tied up to 4B. Base and post-trained releases share one
 * config.json shape. */
#define QWEN3 KNOWN, .kv_channels = 128, .num_query_groups = 8, \
	.vocab_size = 151936
#define QWEN3_0P6B QWEN3, .num_layers = 28, .hidden_size = 1024, \
	.ffn_hidden_size = 3072, .num_attention_heads = 16, \
	.share_embeddings_and_output_weights = 1
#define QWEN3_1P7B QWEN3, .num_layers = 28, .hidden_size = 2048, \
	.ffn_hidden_size = 6144, .num_attention_heads = 16, \
	.share_embeddings_and_output_weights = 1
#define QWEN3_4B QWEN3, .num_layers = 36, .hidden_size = 2560, \
	.ffn_hidden_size = 9728, .num_attention_heads = 32, \
	.share_embeddings_and_output_weights = 1
#define QWEN3_8B QWEN3, .num_layers = 36, .hidden_size = 4096, \
	.ffn_hidden_size = 12288, .num_attention_heads = 32
#define QWEN3_14B QWEN3, .num_layers = 40, .hidden_size = 5120, \
	.ffn_hidden_size = 17408, .num_attention_heads = 40
#define QWEN3_32B QWEN3, .num_layers = 64, .hidden_size = 5120, \
	.ffn_hidden_size = 25600, .num_attention_heads = 64

/* Qwen3 MoE: Megatron-Bridge qwen_provider.py (Qwen3MoEModelProvider30B_A3B,
 * 235B_A22B; slime's scripts/models/qwen3-30B-A3B.sh and -235B-A22B.sh
 * pass the same Megatron arguments): 128 experts, top-8, every layer MoE,
 * untied. The 2507 releases of 30B-A3B keep the shape (model card: 48
 * layers, 32/4 heads, 128 experts, 8 active, 30.5B in total). */
#define QWEN3_MOE KNOWN, .kv_channels = 128, .vocab_size = 151936, \
	.num_moe_experts = 128, .moe_router_topk = 8
#define QWEN3_30B_A3B QWEN3_MOE, .num_layers = 48, .hidden_size = 2048, \
	.ffn_hidden_size = 6144, .num_attention_heads = 32, \
	.num_query_groups = 4, .moe_ffn_hidden_size = 768
#define QWEN3_235B_A22B QWEN3_MOE, .num_layers = 94, .hidden_size = 4096, \
	.ffn_hidden_size = 12288, .num_attention_heads = 64, \
	.num_query_groups = 4, .moe_ffn_hidden_size = 1536

/* Gemma 3: Megatron-Bridge models/gemma/gemma3_provider.py
 * (Gemma3ModelProvider1B, 27B): GeGLU, tied. 27B is the language model of
 * the vision-language release; the vision tower is not counted. */
#define GEMMA3_1B KNOWN, .num_layers = 26, .hidden_size = 1152, \
	.ffn_hidden_size = 6912, .num_attention_heads = 4, \
	.num_query_groups = 1, .kv_channels = 256, .vocab_size = 262144, \
	.share_embeddings_and_output_weights = 1
#define GEMMA3_27B KNOWN, .num_layers = 62, .hidden_size = 5376, \
	.ffn_hidden_size = 21504, .num_attention_heads = 32, \
	.num_query_groups = 16, .kv_channels = 128, .vocab_size = 262208, \
	.share_embeddings_and_output_weights = 1

/* Mistral NeMo 12B: config.json of mistralai/Mistral-Nemo-Base-2407 (as
 * vendored in kevinstephano/thunder_model_blocks); the Instruct model card
 * gives the same architecture. */
#define MISTRAL_NEMO KNOWN, .num_layers = 40, .hidden_size = 5120, \
	.ffn_hidden_size = 14336, .num_attention_heads = 32, \
	.num_query_groups = 8, .kv_channels = 128, .vocab_size = 131072

/* Sorted by name, case-insensitively (a test checks it). */
static const struct model_shape catalog[] = {
	{ .name = "google/gemma-3-1b-it", GEMMA3_1B },
	{ .name = "google/gemma-3-27b-it", GEMMA3_27B },
	{ .name = "meta-llama/Llama-3.1-70B", LLAMA31_70B },
	{ .name = "meta-llama/Llama-3.1-70B-Instruct", LLAMA31_70B },
	{ .name = "meta-llama/Llama-3.1-8B", LLAMA31_8B },
	{ .name = "meta-llama/Llama-3.1-8B-Instruct", LLAMA31_8B },
	{ .name = "meta-llama/Llama-3.2-1B", LLAMA32_1B },
	{ .name = "meta-llama/Llama-3.2-1B-Instruct", LLAMA32_1B },
	{ .name = "meta-llama/Llama-3.2-3B", LLAMA32_3B },
	{ .name = "meta-llama/Llama-3.2-3B-Instruct", LLAMA32_3B },
	{ .name = "meta-llama/Llama-3.3-70B-Instruct", LLAMA31_70B },
	{ .name = "mistralai/Mistral-Nemo-Base-2407", MISTRAL_NEMO },
	{ .name = "mistralai/Mistral-Nemo-Instruct-2407", MISTRAL_NEMO },
	{ .name = "Qwen/Qwen2.5-0.5B", QWEN25_0P5B },
	{ .name = "Qwen/Qwen2.5-0.5B-Instruct", QWEN25_0P5B },
	{ .name = "Qwen/Qwen2.5-1.5B", QWEN25_1P5B },
	{ .name = "Qwen/Qwen2.5-1.5B-Instruct", QWEN25_1P5B },
	{ .name = "Qwen/Qwen2.5-14B", QWEN25_14B },
	{ .name = "Qwen/Qwen2.5-14B-Instruct", QWEN25_14B },
	{ .name = "Qwen/Qwen2.5-32B", QWEN25_32B },
	{ .name = "Qwen/Qwen2.5-32B-Instruct", QWEN25_32B },
	{ .name = "Qwen/Qwen2.5-3B", QWEN25_3B },
	{ .name = "Qwen/Qwen2.5-3B-Instruct", QWEN25_3B },
	{ .name = "Qwen/Qwen2.5-72B", QWEN25_72B },
	{ .name = "Qwen/Qwen2.5-72B-Instruct", QWEN25_72B },
	{ .name = "Qwen/Qwen2.5-7B", QWEN25_7B },
	{ .name = "Qwen/Qwen2.5-7B-Instruct", QWEN25_7B },
	{ .name = "Qwen/Qwen2.5-Math-1.5B", QWEN25_1P5B },
	{ .name = "Qwen/Qwen2.5-Math-1.5B-Instruct", QWEN25_1P5B },
	{ .name = "Qwen/Qwen2.5-Math-7B", QWEN25_7B },
	{ .name = "Qwen/Qwen2.5-Math-7B-Instruct", QWEN25_7B },
	{ .name = "Qwen/Qwen3-0.6B", QWEN3_0P6B },
	{ .name = "Qwen/Qwen3-0.6B-Base", QWEN3_0P6B },
	{ .name = "Qwen/Qwen3-1.7B", QWEN3_1P7B },
	{ .name = "Qwen/Qwen3-1.7B-Base", QWEN3_1P7B },
	{ .name = "Qwen/Qwen3-14B", QWEN3_14B },
	{ .name = "Qwen/Qwen3-14B-Base", QWEN3_14B },
	{ .name = "Qwen/Qwen3-235B-A22B", QWEN3_235B_A22B },
	{ .name = "Qwen/Qwen3-30B-A3B", QWEN3_30B_A3B },
	{ .name = "Qwen/Qwen3-30B-A3B-Base", QWEN3_30B_A3B },
	{ .name = "Qwen/Qwen3-30B-A3B-Instruct-2507", QWEN3_30B_A3B },
	{ .name = "Qwen/Qwen3-30B-A3B-Thinking-2507", QWEN3_30B_A3B },
	{ .name = "Qwen/Qwen3-32B", QWEN3_32B },
	{ .name = "Qwen/Qwen3-4B", QWEN3_4B },
	{ .name = "Qwen/Qwen3-4B-Base", QWEN3_4B },
	{ .name = "Qwen/Qwen3-8B", QWEN3_8B },
	{ .name = "Qwen/Qwen3-8B-Base", QWEN3_8B },
};

#define CATALOG_N (sizeof(catalog) / sizeof(catalog[0]))

size_t model_catalog_count(void)
{
	return CATALOG_N;
}

const struct model_shape *model_catalog_at(size_t i)
{
	return i < CATALOG_N ? &catalog[i] : NULL;
}

/* A local checkpoint rather than a hub id: an absolute, relative, home or
 * Windows path. (Other names with several '/' match nothing either: every
 * catalog name is exactly "org/name".) */
static int is_local_path(const char *name)
{
	return name[0] == '/' || name[0] == '.' || name[0] == '~' ||
	       strchr(name, '\\') != NULL;
}

const struct model_shape *model_catalog_find(const char *name)
{
	int bare;

	if (!name || !*name || is_local_path(name))
		return NULL;
	bare = strchr(name, '/') == NULL;
	for (size_t i = 0; i < CATALOG_N; i++) {
		const char *c = catalog[i].name;

		if (bare)
			c = strchr(c, '/') + 1;
		if (strcasecmp(c, name) == 0)
			return &catalog[i];
	}
	return NULL;
}

/* ---- gtplan.model ----------------------------------------------------- */

/* The fields `gtplan.model` may set, with Megatron's names. `required`
 * ones make a shape known; a nullable one set to null goes back to its
 * default (num_query_groups: heads; kv_channels: hidden / heads;
 * num_moe_experts: dense; mtp_num_layers: none). */
struct model_field {
	const char *key;
	size_t off;
	int is_bool;
	int required;
	int nullable;
	long long min;
};

#define INT_FIELD(k, req, null, lo) \
	{ #k, offsetof(struct model_shape, k), 0, req, null, lo }
#define BOOL_FIELD(k) { #k, offsetof(struct model_shape, k), 1, 0, 0, 0 }

static const struct model_field fields[] = {
	INT_FIELD(num_layers, 1, 0, 1),
	INT_FIELD(hidden_size, 1, 0, 1),
	INT_FIELD(ffn_hidden_size, 1, 0, 1),
	INT_FIELD(num_attention_heads, 1, 0, 1),
	INT_FIELD(num_query_groups, 0, 1, 1),
	INT_FIELD(kv_channels, 0, 1, 1),
	INT_FIELD(vocab_size, 1, 0, 1),
	BOOL_FIELD(share_embeddings_and_output_weights),
	BOOL_FIELD(add_bias_linear),
	BOOL_FIELD(add_qkv_bias),
	INT_FIELD(num_moe_experts, 0, 1, 1),
	INT_FIELD(moe_ffn_hidden_size, 0, 1, 1),
	INT_FIELD(moe_router_topk, 0, 1, 1),
	INT_FIELD(mtp_num_layers, 0, 1, 0),
	BOOL_FIELD(gated_linear_unit),
};

#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

/* What the hint asks for when there is no shape at all. */
#define NEEDED_FIELDS "num_layers, hidden_size, ffn_hidden_size, " \
	"num_attention_heads, num_query_groups, vocab_size (and kv_channels " \
	"when the head dim is not hidden_size / num_attention_heads)"

static long long *int_at(struct model_shape *m, const struct model_field *f)
{
	return (long long *)(void *)((char *)m + f->off);
}

static int *bool_at(struct model_shape *m, const struct model_field *f)
{
	return (int *)(void *)((char *)m + f->off);
}

static char *field_path(char *buf, size_t len, const char *key)
{
	snprintf(buf, len, "gtplan.model.%s", key);
	return buf;
}

/* Applies one gtplan.model entry to *m. Returns 0, or -1 when the value
 * has the wrong type or range (reported; an unresolved `${...}` was
 * reported by cfg_resolve already). */
static int apply_field(const struct model_field *f, const struct cfg_node *n,
		       struct model_shape *m, struct diag_list *diags)
{
	char path[64];
	const char *want = f->is_bool ? "a boolean"
			   : f->nullable ? "an integer or null" : "an integer";

	if (n->kind == CFG_NULL && f->nullable) {
		*int_at(m, f) = 0;
		return 0;
	}
	if (n->interp)
		return -1;
	if (f->is_bool && n->kind == CFG_BOOL) {
		*bool_at(m, f) = n->v.b != 0;
		return 0;
	}
	if (!f->is_bool && n->kind == CFG_INT) {
		if (n->v.i < f->min) {
			struct diag *d = diag_add(diags, "GT201", n->loc,
				field_path(path, sizeof(path), f->key),
				"%s must be at least %lld, got %lld", f->key,
				f->min, n->v.i);
			diag_hint(d, "gtplan.model takes Megatron's "
				  "TransformerConfig values");
			return -1;
		}
		*int_at(m, f) = n->v.i;
		return 0;
	}
	diag_hint(diag_add(diags, "GT200", n->loc,
			   field_path(path, sizeof(path), f->key),
			   "%s must be %s, got %s", f->key, want,
			   cfg_kind_name(n->kind)),
		  f->is_bool ? "write true or false"
			     : "write the number without quotes");
	return -1;
}

/* Applies every field the map sets; -1 when any was refused. */
static int apply_desc(const struct cfg_node *desc, struct model_shape *m,
		      struct diag_list *diags)
{
	int rc = 0;

	if (desc->kind != CFG_MAP) {
		if (!desc->interp)
			diag_hint(diag_add(diags, "GT200", desc->loc,
					   "gtplan.model",
					   "gtplan.model must be a map, got %s",
					   cfg_kind_name(desc->kind)),
				  "describe the model with Megatron's field "
				  "names: " NEEDED_FIELDS);
		return -1;
	}
	for (size_t i = 0; i < N_FIELDS; i++) {
		const struct cfg_node *n = cfg_get(desc, fields[i].key);

		if (n && apply_field(&fields[i], n, m, diags))
			rc = -1;
	}
	return rc;
}

/* The required fields *m lacks, comma-separated, into buf; 0 if none. */
static size_t missing_fields(struct model_shape *m, char *buf, size_t len)
{
	size_t n = 0, used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < N_FIELDS; i++) {
		if (!fields[i].required || *int_at(m, &fields[i]) > 0)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 n ? ", " : "", fields[i].key);
		if (used >= len)
			used = len - 1;
		n++;
	}
	return n;
}

/* Where to point at a bad combination: the first of `keys` that
 * gtplan.model sets, else the map itself. */
static const struct cfg_node *blame(const struct cfg_node *desc,
				    const char *k1, const char *k2)
{
	const struct cfg_node *n = cfg_get(desc, k1);

	if (!n && k2)
		n = cfg_get(desc, k2);
	return n ? n : desc;
}

/* Checks what the schema cannot: combinations. Only a gtplan.model can
 * break them (every catalog entry is tested). Returns 0 or -1 (reported). */
static int check_combinations(const struct model_shape *m,
			      const struct cfg_node *desc,
			      struct diag_list *diags)
{
	const struct cfg_node *n;
	long long kv = model_kv_heads(m);
	int rc = 0;

	if (m->num_attention_heads % kv) {
		n = blame(desc, "num_query_groups", "num_attention_heads");
		diag_hint(diag_add(diags, "GT205", n->loc, "gtplan.model",
				   "num_attention_heads (%lld) is not a "
				   "multiple of num_query_groups (%lld)",
				   m->num_attention_heads, kv),
			  "each key/value head serves a whole number of "
			  "query heads");
		rc = -1;
	}
	if (!m->kv_channels && m->hidden_size % m->num_attention_heads) {
		n = blame(desc, "hidden_size", "num_attention_heads");
		diag_hint(diag_add(diags, "GT205", n->loc, "gtplan.model",
				   "hidden_size (%lld) is not a multiple of "
				   "num_attention_heads (%lld)",
				   m->hidden_size, m->num_attention_heads),
			  "set gtplan.model.kv_channels to the head dim "
			  "(head_dim in the Hugging Face config.json)");
		rc = -1;
	}
	if (m->num_moe_experts && m->moe_router_topk > m->num_moe_experts) {
		n = blame(desc, "moe_router_topk", "num_moe_experts");
		diag_hint(diag_add(diags, "GT205", n->loc, "gtplan.model",
				   "moe_router_topk (%lld) exceeds "
				   "num_moe_experts (%lld)", m->moe_router_topk,
				   m->num_moe_experts),
			  "each token is routed to top-k of the experts");
		rc = -1;
	}
	return rc;
}

/* Megatron's TransformerConfig defaults for what is left unset. */
static void fill_defaults(struct model_shape *m)
{
	if (!m->num_query_groups)
		m->num_query_groups = m->num_attention_heads;
	if (!m->kv_channels && m->num_attention_heads)
		m->kv_channels = m->hidden_size / m->num_attention_heads;
	if (m->num_moe_experts) {
		if (!m->moe_ffn_hidden_size)
			m->moe_ffn_hidden_size = m->ffn_hidden_size;
		if (!m->moe_router_topk)
			m->moe_router_topk = 2;
	}
}

/* GT524: the shape stays unknown. */
static void warn_unknown(const char *name, const struct cfg_node *name_node,
			 const struct cfg_node *desc, const char *missing,
			 struct diag_list *diags)
{
	struct diag *d;

	if (name && !desc) {
		d = diag_add(diags, "GT524", name_node->loc, "policy.model_name",
			     is_local_path(name)
			     ? "model '%s' is a local path; gtplan does not "
			       "read checkpoints, so shape-dependent checks are "
			       "skipped"
			     : "model '%s' is not in gtplan's catalog; "
			       "shape-dependent checks are skipped", name);
		diag_hint(d, "describe it under gtplan.model: " NEEDED_FIELDS);
		return;
	}
	if (name) {
		d = diag_add(diags, "GT524", name_node->loc, "policy.model_name",
			     "model '%s' is not in gtplan's catalog and "
			     "gtplan.model lacks %s; shape-dependent checks are "
			     "skipped", name, missing);
		diag_note(d, desc->loc, "gtplan.model is here");
	} else {
		d = diag_add(diags, "GT524", desc->loc, "gtplan.model",
			     "gtplan.model lacks %s; shape-dependent checks are "
			     "skipped", missing);
	}
	diag_hint(d, "add to gtplan.model: %s", missing);
}

int model_resolve(const struct cfg_node *root, struct model_shape *m,
		  struct diag_list *diags)
{
	const struct cfg_node *name_node = cfg_path(root, "policy.model_name");
	const struct cfg_node *desc = cfg_path(root, "gtplan.model");
	const struct model_shape *cat = NULL;
	const char *name = NULL;
	char missing[256];
	int rc = 0;

	memset(m, 0, sizeof(*m));
	m->loc = DIAG_NOLOC;
	if (name_node && name_node->kind == CFG_STR && name_node->text &&
	    *name_node->text)
		name = name_node->text;
	if (desc && desc->kind == CFG_NULL)
		desc = NULL;
	if (!name && !desc)
		return 0;

	cat = model_catalog_find(name);
	if (cat)
		*m = *cat;
	else
		m->gated_linear_unit = 1;  /* as every catalogued family */
	snprintf(m->name, sizeof(m->name), "%s", name ? name : "gtplan.model");
	m->loc = desc ? desc->loc : name_node->loc;
	m->known = 0;

	if (desc && apply_desc(desc, m, diags))
		rc = -1;
	if (missing_fields(m, missing, sizeof(missing))) {
		if (!rc)
			warn_unknown(name, name_node, desc, missing, diags);
		return rc;
	}
	if (rc || (desc && check_combinations(m, desc, diags)))
		return -1;
	fill_defaults(m);
	m->known = 1;
	return 0;
}

/* ---- parameter counts ------------------------------------------------- */

long long model_head_dim(const struct model_shape *m)
{
	if (m->kv_channels > 0)
		return m->kv_channels;
	return m->num_attention_heads > 0
	       ? m->hidden_size / m->num_attention_heads : 0;
}

long long model_kv_heads(const struct model_shape *m)
{
	return m->num_query_groups > 0 ? m->num_query_groups
				       : m->num_attention_heads;
}

static long long glu(const struct model_shape *m)
{
	return m->gated_linear_unit ? 2 : 1;
}

static size_t put(struct model_weight *w, size_t max, size_t n,
		  struct model_weight v)
{
	if (n < max)
		w[n] = v;
	return n + 1;
}

size_t model_layer_weights(const struct model_shape *m,
			   struct model_weight *w, size_t max)
{
	long long hd = model_head_dim(m), h = m->hidden_size;
	long long q = m->num_attention_heads * hd, kv = model_kv_heads(m) * hd;
	size_t n = 0;

	if (!m->known)
		return 0;
	n = put(w, max, n, (struct model_weight){ "linear_qkv", q + 2 * kv, h,
						  SPLIT_COLUMN });
	n = put(w, max, n, (struct model_weight){ "linear_proj", h, q,
						  SPLIT_ROW });
	if (!m->num_moe_experts) {
		n = put(w, max, n, (struct model_weight){ "linear_fc1",
			glu(m) * m->ffn_hidden_size, h, SPLIT_COLUMN });
		n = put(w, max, n, (struct model_weight){ "linear_fc2", h,
			m->ffn_hidden_size, SPLIT_ROW });
	}
	return n < max ? n : max;
}

size_t model_expert_weights(const struct model_shape *m,
			    struct model_weight *w, size_t max)
{
	long long h = m->hidden_size, f = m->moe_ffn_hidden_size;
	size_t n = 0;

	if (!m->known || !m->num_moe_experts)
		return 0;
	n = put(w, max, n, (struct model_weight){ "experts.linear_fc1",
						  glu(m) * f, h,
						  SPLIT_COLUMN });
	n = put(w, max, n, (struct model_weight){ "experts.linear_fc2", h, f,
						  SPLIT_ROW });
	return n < max ? n : max;
}

static long long weights_sum(const struct model_weight *w, size_t n)
{
	long long s = 0;

	for (size_t i = 0; i < n; i++)
		s += w[i].rows * w[i].cols;
	return s;
}

long long model_layer_replicated_params(const struct model_shape *m)
{
	long long h = m->hidden_size, hd = model_head_dim(m);
	long long s = 2 * h;  /* input_layernorm, pre_mlp_layernorm */

	if (!m->known)
		return 0;
	if (m->add_bias_linear || m->add_qkv_bias)
		s += (m->num_attention_heads + 2 * model_kv_heads(m)) * hd;
	if (m->add_bias_linear)
		s += h;  /* linear_proj */
	if (m->num_moe_experts)
		s += m->num_moe_experts * h;  /* router */
	else if (m->add_bias_linear)
		s += glu(m) * m->ffn_hidden_size + h;
	return s;
}

long long model_layer_expert_params(const struct model_shape *m)
{
	struct model_weight w[MODEL_MAX_WEIGHTS];
	size_t n = model_expert_weights(m, w, MODEL_MAX_WEIGHTS);
	long long one = weights_sum(w, n);

	if (!n)
		return 0;
	if (m->add_bias_linear)
		one += glu(m) * m->moe_ffn_hidden_size + m->hidden_size;
	return m->num_moe_experts * one;
}

long long model_layer_params(const struct model_shape *m)
{
	struct model_weight w[MODEL_MAX_WEIGHTS];
	size_t n = model_layer_weights(m, w, MODEL_MAX_WEIGHTS);

	if (!n)
		return 0;
	return weights_sum(w, n) + model_layer_replicated_params(m) +
	       model_layer_expert_params(m);
}

long long model_embedding_params(const struct model_shape *m)
{
	long long e = m->vocab_size * m->hidden_size;

	if (!m->known)
		return 0;
	return m->share_embeddings_and_output_weights ? e : 2 * e;
}

long long model_mtp_params(const struct model_shape *m)
{
	long long h = m->hidden_size;

	if (!m->known || m->mtp_num_layers <= 0)
		return 0;
	/* enorm, hnorm, eh_proj [h, 2h], a transformer layer, final norm;
	 * the embedding and output layer are the main model's */
	return m->mtp_num_layers *
	       (model_layer_params(m) + 2 * h * h + 3 * h);
}

long long model_total_params(const struct model_shape *m)
{
	if (!m->known)
		return 0;
	return m->num_layers * model_layer_params(m) +
	       model_embedding_params(m) + m->hidden_size /* final norm */ +
	       model_mtp_params(m);
}
