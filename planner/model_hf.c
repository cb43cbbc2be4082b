/*
 * model_hf: a model's shape from its Hugging Face config.json, and where
 * that file is (model.h: model_resolve calls both). Part of the model
 * module (model_int.h).
 *
 * Where: gtplan.model.hf_config (a file or the folder that holds it;
 * `--model-config PATH` sets it), else policy.model_name when it is a
 * folder with a config.json, else the local Hugging Face cache for a hub
 * id: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub,
 * models--ORG--NAME/snapshots/REV/config.json with REV the commit
 * refs/main names (else the first snapshot by name, so the choice is
 * deterministic). huggingface_hub's file_download.py lays the cache out
 * so.
 *
 * The catalog (data/models.yaml) is written in the same keys and goes
 * through the same mapping (model_hf_map; model_catalog_load.c).
 *
 * What: the fields Megatron-Bridge's bridges read (megatron/bridge/models/
 * <family>/<family>_bridge.py, provider_bridge), by config.json name:
 *   num_hidden_layers -> num_layers, hidden_size, intermediate_size ->
 *   ffn_hidden_size, num_attention_heads, num_key_value_heads ->
 *   num_query_groups, head_dim -> kv_channels, vocab_size,
 *   tie_word_embeddings -> share_embeddings_and_output_weights,
 *   attention_bias -> add_qkv_bias;
 *   experts: num_experts / num_local_experts / n_routed_experts ->
 *   num_moe_experts, moe_intermediate_size -> moe_ffn_hidden_size (Mixtral,
 *   gpt-oss and MiniMax-M2: intermediate_size), num_experts_per_tok -> moe_router_topk,
 *   first_k_dense_replace -> moe_layer_freq [0]*k+[1]*(L-k),
 *   decoder_sparse_step -> moe_layer_freq k, shared_expert_intermediate_size
 *   or n_shared_experts x moe_intermediate_size ->
 *   moe_shared_expert_intermediate_size (Nemotron-H: that key itself),
 *   num_nextn_predict_layers (Qwen3.5: mtp_num_hidden_layers) ->
 *   mtp_num_layers, kv_lora_rank -> multi_latent_attention,
 *   hybrid_override_pattern -> hybrid_layer_pattern (Nemotron-H).
 * A config.json with a text_config (Gemma 3, Qwen3.5 multimodal
 * checkpoints) is read from there. Per family (the bridges' constants,
 * not in config.json): gated_linear_unit (every family below is SwiGLU or
 * GeGLU), add_qkv_bias for qwen2 / qwen2_moe, add_bias_linear for gpt_oss.
 * Sizes are approximate for families whose layers are not uniform
 * transformer layers: deepseek_v3, glm4_moe_lite and glm_moe_dsa
 * (multi-latent attention), qwen3_next and qwen3_5 (gated delta-net
 * layers), nemotron_h (Mamba), nemotron-nas (blocks of varying width),
 * gemma4_text (two head dims), and any
 * model_type gtplan does not map (its common fields are read; which GLU
 * and biases it has is not known). Not in config.json, so left to
 * Megatron's defaults: make_vocab_size_divisible_by.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cfg_keys.h"
#include "model.h"
#include "model_int.h"

/* Hostile-input limit: a config.json is a few KiB. */
#define HF_MAX_BYTES (1L << 20)

/* ---- where ---------------------------------------------------------------- */

static int is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* PATH, or PATH/config.json when PATH is a folder, into out. */
static int file_or_folder(const char *p, char *out, size_t len)
{
	int n = is_dir(p) ? snprintf(out, len, "%s/config.json", p)
			  : snprintf(out, len, "%s", p);

	return n > 0 && (size_t)n < len && is_file(out);
}

/* The hub cache folder, as huggingface_hub's constants.py derives it. */
static int hub_cache(char *out, size_t len)
{
	const char *c = getenv("HF_HUB_CACHE"), *h = getenv("HF_HOME");
	const char *home = getenv("HOME");
	int n;

	if (c && *c)
		n = snprintf(out, len, "%s", c);
	else if (h && *h)
		n = snprintf(out, len, "%s/hub", h);
	else if (home && *home)
		n = snprintf(out, len, "%s/.cache/huggingface/hub", home);
	else
		return 0;
	return n > 0 && (size_t)n < len;
}

/* The snapshot refs/main names, else the first by name. */
static int pick_snapshot(const char *repo, char *rev, size_t len)
{
	char p[1100];
	FILE *fp;
	DIR *d;
	struct dirent *e;

	rev[0] = '\0';
	if (strlen(repo) + 16 > sizeof(p))
		return 0;
	snprintf(p, sizeof(p), "%s/refs/main", repo);
	fp = fopen(p, "r");
	if (fp) {
		if (fgets(rev, (int)len, fp))
			rev[strcspn(rev, "\r\n")] = '\0';
		fclose(fp);
		if (rev[0] && !strchr(rev, '/'))
			return 1;
	}
	rev[0] = '\0';
	snprintf(p, sizeof(p), "%s/snapshots", repo);
	d = opendir(p);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (e->d_name[0] != '.' && n < len &&
		    (!rev[0] || strcmp(e->d_name, rev) < 0))
			memcpy(rev, e->d_name, n + 1);
	}
	closedir(d);
	return rev[0] != '\0';
}

/* A hub id "ORG/NAME" in the cache. */
static int from_cache(const char *name, char *out, size_t len)
{
	char hub[512], repo[1024], rev[128];
	const char *slash = strchr(name, '/');
	int n;

	if (!slash || strchr(slash + 1, '/') || !hub_cache(hub, sizeof(hub)))
		return 0;
	n = snprintf(repo, sizeof(repo), "%s/models--%.*s--%s", hub,
		     (int)(slash - name), name, slash + 1);
	if (n < 0 || (size_t)n >= sizeof(repo) ||
	    !pick_snapshot(repo, rev, sizeof(rev)))
		return 0;
	n = snprintf(out, len, "%s/snapshots/%s/config.json", repo, rev);
	return n > 0 && (size_t)n < len && is_file(out);
}

int model_hf_locate(const struct cfg_node *root, const char *name,
		    char *path, size_t len, const struct cfg_node **named)
{
	const struct cfg_node *n = cfg_path(root, KEY_GTPLAN_MODEL ".hf_config");

	*named = NULL;
	path[0] = '\0';
	if (n && n->kind == CFG_STR && n->text && *n->text) {
		*named = n;
		if (file_or_folder(n->text, path, len))
			return 1;
		snprintf(path, len, "%s", n->text);
		return -1;
	}
	if (!name || !*name)
		return 0;
	if (is_dir(name) && file_or_folder(name, path, len))
		return 1;
	if (from_cache(name, path, len))
		return 1;
	path[0] = '\0';
	return 0;
}

/* ---- what ----------------------------------------------------------------- */

/* An integer field of o (a JSON integer, or a float with no fraction). */
static int get_int(const json_t *o, const char *k, long long *v)
{
	const json_t *x = json_object_get(o, k);

	if (json_is_integer(x)) {
		*v = json_integer_value(x);
		return 1;
	}
	if (json_is_real(x) && json_real_value(x) == (double)(long long)
	    json_real_value(x)) {
		*v = (long long)json_real_value(x);
		return 1;
	}
	return 0;
}

/* Sets field `key` of *m from o[k] when o has it; marks its origin. */
static void take_int(struct model_shape *m, const json_t *o, const char *k,
		     const char *key)
{
	const struct model_field *f = model_field_find(key);
	long long v;

	if (f && get_int(o, k, &v) && v >= f->min && v > 0) {
		*model_int_at(m, f) = v;
		m->origin[f - model_fields] = MODEL_FROM_HF;
	}
}

/* Sets real field `key` from the number o[k] (> 0) when o has it. */
static void take_real(struct model_shape *m, const json_t *o, const char *k,
		      const char *key)
{
	const struct model_field *f = model_field_find(key);
	const json_t *x = json_object_get(o, k);

	if (f && json_is_number(x) && json_number_value(x) > 0) {
		*model_real_at(m, f) = json_number_value(x);
		m->origin[f - model_fields] = MODEL_FROM_HF;
	}
}

static void take_bool(struct model_shape *m, const char *key, int v)
{
	const struct model_field *f = model_field_find(key);

	if (!f)
		return;
	*model_bool_at(m, f) = v != 0;
	m->origin[f - model_fields] = MODEL_FROM_HF;
}

static void take_text(struct model_shape *m, const char *key, const char *v)
{
	const struct model_field *f = model_field_find(key);

	if (!f || strlen(v) >= MODEL_TEXT_MAX)
		return;
	snprintf(model_text_at(m, f), MODEL_TEXT_MAX, "%s", v);
	m->origin[f - model_fields] = MODEL_FROM_HF;
}

/* The families gtplan maps, with what the bridges add to config.json.
 * moe_ffn_is_ffn: the experts' width is intermediate_size (Mixtral,
 * gpt-oss, MiniMax-M2: one FFN size, no moe_intermediate_size). */
struct hf_family {
	const char *type;   /* config.json model_type */
	int glu, qkv_bias, bias_linear, approximate, moe_ffn_is_ffn;
};

/* Beyond the bridges named above: nemotron-nas (Llama-3.3-Nemotron-Super,
 * DeciLM blocks of varying width: megatron/bridge/models/llama_nemotron/),
 * gemma4_text (sliding and global layers of different head dims:
 * transformers models/gemma4/configuration_gemma4.py), minimax_m2
 * (Mixtral-like experts: megatron/bridge/models/minimax_m2/), glm4_moe_lite
 * (GLM-4.7-Flash, DeepSeek-V3 layers) and glm_moe_dsa (GLM-5, DeepSeek
 * sparse attention: megatron/bridge/models/glm/). */
static const struct hf_family families[] = {
	{ "llama", 1, 0, 0, 0, 0 },      { "mistral", 1, 0, 0, 0, 0 },
	{ "qwen2", 1, 1, 0, 0, 0 },      { "qwen3", 1, 0, 0, 0, 0 },
	{ "qwen2_moe", 1, 1, 0, 0, 0 },  { "qwen3_moe", 1, 0, 0, 0, 0 },
	{ "qwen3_next", 1, 0, 0, 1, 0 }, { "qwen3_5", 1, 0, 0, 1, 0 },
	{ "qwen3_5_moe", 1, 0, 0, 1, 0 }, { "qwen3_5_text", 1, 0, 0, 1, 0 },
	{ "qwen3_5_moe_text", 1, 0, 0, 1, 0 },
	{ "deepseek_v3", 1, 0, 0, 1, 0 }, { "gpt_oss", 1, 1, 1, 0, 1 },
	{ "gemma2", 1, 0, 0, 0, 0 },     { "gemma3", 1, 0, 0, 0, 0 },
	{ "gemma3_text", 1, 0, 0, 0, 0 }, { "glm4_moe", 1, 0, 0, 0, 0 },
	{ "mixtral", 1, 0, 0, 0, 1 },    { "nemotron_h", 0, 0, 0, 1, 0 },
	{ "nemotron-nas", 1, 0, 0, 1, 0 }, { "gemma4_text", 1, 0, 0, 1, 0 },
	{ "minimax_m2", 1, 0, 0, 0, 1 }, { "glm4_moe_lite", 1, 0, 0, 1, 0 },
	{ "glm_moe_dsa", 1, 0, 0, 1, 0 },
};

static const struct hf_family *family_of(const char *type)
{
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (!strcmp(families[i].type, type))
			return &families[i];
	return NULL;
}

/* The experts: counts, sizes, which layers, shared experts. */
static void read_experts(struct model_shape *m, const json_t *o,
			 const struct hf_family *fam)
{
	long long e = 0, k = 0, layers = m->num_layers, v;
	char freq[MODEL_TEXT_MAX];

	take_int(m, o, "num_experts", "num_moe_experts");
	take_int(m, o, "num_local_experts", "num_moe_experts");
	take_int(m, o, "n_routed_experts", "num_moe_experts");
	if (!m->num_moe_experts || m->origin[model_field_find(
		    "num_moe_experts") - model_fields] != MODEL_FROM_HF)
		return;
	take_int(m, o, "num_experts_per_tok", "moe_router_topk");
	take_int(m, o, "experts_per_token", "moe_router_topk");
	if (fam && fam->moe_ffn_is_ffn)
		take_int(m, o, "intermediate_size", "moe_ffn_hidden_size");
	else
		take_int(m, o, "moe_intermediate_size", "moe_ffn_hidden_size");
	take_int(m, o, "shared_expert_intermediate_size",
		 "moe_shared_expert_intermediate_size");
	/* Nemotron-H's name for it (transformers models/nemotron_h/
	 * configuration_nemotron_h.py) */
	take_int(m, o, "moe_shared_expert_intermediate_size",
		 "moe_shared_expert_intermediate_size");
	if (get_int(o, "n_shared_experts", &v) && v > 0 &&
	    get_int(o, "moe_intermediate_size", &e) && e > 0) {
		const struct model_field *f = model_field_find(
			"moe_shared_expert_intermediate_size");

		*model_int_at(m, f) = v * e;
		m->origin[f - model_fields] = MODEL_FROM_HF;
	}
	freq[0] = '\0';
	if (get_int(o, "first_k_dense_replace", &k) && k > 0 && k < layers)
		snprintf(freq, sizeof(freq), "[0]*%lld+[1]*%lld", k,
			 layers - k);
	else if (get_int(o, "decoder_sparse_step", &k) && k > 1)
		snprintf(freq, sizeof(freq), "%lld", k);
	if (freq[0])
		take_text(m, "moe_layer_freq", freq);
}

/* The fields every family shares, from one config object. */
static void read_common(struct model_shape *m, const json_t *o)
{
	const json_t *t = json_object_get(o, "tie_word_embeddings");
	const json_t *b = json_object_get(o, "attention_bias");
	const json_t *p = json_object_get(o, "hybrid_override_pattern");

	take_int(m, o, "num_hidden_layers", "num_layers");
	take_int(m, o, "hidden_size", "hidden_size");
	take_int(m, o, "intermediate_size", "ffn_hidden_size");
	take_int(m, o, "num_attention_heads", "num_attention_heads");
	take_int(m, o, "num_key_value_heads", "num_query_groups");
	take_int(m, o, "head_dim", "kv_channels");
	take_int(m, o, "vocab_size", "vocab_size");
	take_int(m, o, "num_nextn_predict_layers", "mtp_num_layers");
	/* Qwen3.5's name for it (its text_config) */
	take_int(m, o, "mtp_num_hidden_layers", "mtp_num_layers");
	/* RoPE base and norm epsilon, as Megatron-Bridge maps them
	 * (rope_theta -> rotary_base, rms_norm_eps -> layernorm_epsilon;
	 * transformers 5 moves rope_theta into rope_parameters) */
	take_int(m, o, "rope_theta", "rotary_base");
	if (json_is_object(json_object_get(o, "rope_parameters")))
		take_int(m, json_object_get(o, "rope_parameters"), "rope_theta",
			 "rotary_base");
	take_real(m, o, "rms_norm_eps", "layernorm_epsilon");
	/* absent: PretrainedConfig's default, tied (transformers
	 * configuration_utils.py) */
	take_bool(m, "share_embeddings_and_output_weights",
		  !json_is_boolean(t) || json_is_true(t));
	if (json_is_boolean(b) && json_is_true(b))
		take_bool(m, "add_qkv_bias", 1);
	if (json_is_string(json_object_get(o, "kv_lora_rank")) ||
	    json_is_integer(json_object_get(o, "kv_lora_rank")))
		take_bool(m, "multi_latent_attention", 1);
	if (json_is_string(p))
		take_text(m, "hybrid_layer_pattern", json_string_value(p));
}

/* Loads the file; NULL with err set when it cannot be read or parsed. */
static json_t *load(const char *path, char *err, size_t elen)
{
	struct stat st;
	json_error_t je;
	json_t *j;

	if (stat(path, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, elen, "cannot read %s: %s", path,
			 strerror(errno ? errno : ENOENT));
		return NULL;
	}
	if (st.st_size > HF_MAX_BYTES) {
		snprintf(err, elen, "%s is larger than %ld bytes, not a "
			 "config.json", path, HF_MAX_BYTES);
		return NULL;
	}
	j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		snprintf(err, elen, "%s:%d:%d: %s", path, je.line, je.column,
			 je.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		snprintf(err, elen, "%s is not a JSON object", path);
		json_decref(j);
		return NULL;
	}
	return j;
}

/* The config.json keys model_map reads (model_int.h), for the catalog's
 * check that none of its keys is misspelt; "architectures" is read by no
 * one but names the class, as in every config.json. */
const char *const model_hf_keys[] = {
	"architectures", "model_type", "text_config",
	"num_hidden_layers", "hidden_size", "intermediate_size",
	"num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
	"num_nextn_predict_layers", "mtp_num_hidden_layers", "rope_theta",
	"rope_parameters", "rms_norm_eps", "tie_word_embeddings",
	"attention_bias", "kv_lora_rank", "hybrid_override_pattern",
	"num_experts", "num_local_experts", "n_routed_experts",
	"num_experts_per_tok", "experts_per_token", "moe_intermediate_size",
	"shared_expert_intermediate_size",
	"moe_shared_expert_intermediate_size", "n_shared_experts",
	"first_k_dense_replace", "decoder_sparse_step", NULL,
};

void model_hf_map(const json_t *j, struct model_shape *m,
		  struct model_hf_info *info)
{
	const json_t *o = j;
	const struct hf_family *fam;
	const char *type, *top;

	memset(info, 0, sizeof(*info));
	if (!json_object_get(o, "num_hidden_layers") &&
	    json_is_object(json_object_get(o, "text_config"))) {
		o = json_object_get(j, "text_config");
		info->text_config = 1;
	}
	type = json_string_value(json_object_get(o, "model_type"));
	if (!type)
		type = json_string_value(json_object_get(j, "model_type"));
	snprintf(info->model_type, sizeof(info->model_type), "%s",
		 type ? type : "");
	fam = family_of(info->model_type);
	top = json_string_value(json_object_get(j, "model_type"));
	if (!fam && top)
		fam = family_of(top);
	read_common(m, o);
	read_experts(m, o, fam);
	info->mapped = fam != NULL;
	/* dense first layers and shared experts are not uniform layers */
	info->approximate = !fam || fam->approximate || m->moe_layer_freq[0] ||
			    m->moe_shared_expert_intermediate_size > 0;
	if (fam) {
		take_bool(m, "gated_linear_unit", fam->glu);
		if (fam->qkv_bias)
			take_bool(m, "add_qkv_bias", 1);
		if (fam->bias_linear)
			take_bool(m, "add_bias_linear", 1);
		/* Qwen3's q_norm / k_norm: Megatron-Bridge's qwen3 bridges
		 * set qk_layernorm (src/megatron/bridge/models/qwen/) */
		if (!strncmp(fam->type, "qwen3", 5))
			take_bool(m, "qk_layernorm", 1);
	}
}

int model_hf_read(const char *path, struct model_shape *m,
		  struct model_hf_info *info, char *err, size_t elen)
{
	json_t *j;

	memset(info, 0, sizeof(*info));
	j = load(path, err, elen);
	if (!j)
		return -1;
	model_hf_map(j, m, info);
	json_decref(j);
	return 0;
}

/* ---- into model_resolve ---------------------------------------------------- */

static struct diag_loc named_loc(const struct cfg_node *n)
{
	return n ? n->loc : DIAG_NOLOC;
}

/* GT525: where the shape came from and what config.json does not say. */
static void report_read(const struct model_shape *m,
			const struct model_hf_info *info,
			struct diag_loc at, const char *key,
			struct diag_list *diags)
{
	struct diag *d;

	d = diag_add(diags, "GT525", at, key, "the shape of %s is read from "
		     "%s (model_type '%s'%s)", m->name, m->config_json,
		     info->model_type[0] ? info->model_type : "not given",
		     info->text_config ? ", its text_config" : "");
	diag_hint(d, "gtplan.model's fields override config.json's; `gtplan "
		  "explain CONFIG` lists each value and where it comes from");
	if (!info->mapped)
		diag_note(d, DIAG_NOLOC, "model_type '%s' is not a family "
			  "gtplan maps: its common fields were read, whether "
			  "its MLP is gated and which linears have biases is "
			  "not known (a gated MLP without biases is assumed), "
			  "so sizes and memory are approximate",
			  info->model_type);
	else if (info->approximate)
		diag_note(d, DIAG_NOLOC, "its layers are not uniform "
			  "transformer layers (%s): every shape check runs, "
			  "sizes and memory are approximate",
			  m->hybrid_layer_pattern[0] ? "a hybrid layer pattern"
			  : m->multi_latent_attention ? "multi-latent attention"
			  : m->moe_layer_freq[0] ? "dense and MoE layers"
			  : m->moe_shared_expert_intermediate_size ?
			  "shared experts" : "linear-attention layers");
	if (!m->make_vocab_size_divisible_by)
		diag_note(d, DIAG_NOLOC, "config.json does not give "
			  "make_vocab_size_divisible_by: Megatron's 128 applies "
			  "unless policy.megatron_cfg sets it");
}

int model_hf_apply(const struct cfg_node *root, const char *name,
		   const struct cfg_node *name_node, struct model_shape *m,
		   struct diag_list *diags)
{
	const struct cfg_node *named;
	struct model_hf_info info;
	char path[sizeof(m->config_json)], err[640];
	struct diag_loc at = named_loc(name_node);
	int rc = model_hf_locate(root, name, path, sizeof(path), &named);
	struct diag *d;

	if (rc == 0)
		return 0;
	if (named)
		at = named->loc;
	/* config.json speaks for every field it can give, absent ones
	 * included (no num_experts: dense); the catalog keeps the rest */
	for (size_t i = 0; rc > 0 && i < model_n_fields; i++) {
		const struct model_field *f = &model_fields[i];

		if (!strcmp(f->key, "make_vocab_size_divisible_by"))
			continue;
		if (f->type == MF_TEXT)
			model_text_at(m, f)[0] = '\0';
		else if (f->type == MF_BOOL)
			*model_bool_at(m, f) = 0;
		else
			*model_int_at(m, f) = 0;
		m->origin[i] = MODEL_FROM_NONE;
	}
	if (rc < 0 || model_hf_read(path, m, &info, err, sizeof(err))) {
		if (rc < 0)
			snprintf(err, sizeof(err), "no config.json at %s",
				 path);
		d = diag_add(diags, "GT526", at, named ? KEY_GTPLAN_MODEL
			     ".hf_config" : KEY_MODEL_NAME, "%s", err);
		diag_hint(d, "name a Hugging Face config.json (or the folder "
			  "with one) in gtplan.model.hf_config, or describe "
			  "the model under gtplan.model");
		return -1;
	}
	snprintf(m->config_json, sizeof(m->config_json), "%s", path);
	report_read(m, &info, at, named ? KEY_GTPLAN_MODEL ".hf_config" :
		    KEY_MODEL_NAME, diags);
	return info.approximate ? 2 : 1;
}
