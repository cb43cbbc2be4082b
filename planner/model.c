/*
 * model: `gtplan.model` over the catalog (model_catalog.c), and parameter
 * counts in Megatron's terms.
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
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfg_keys.h"
#include "model.h"
#include "levenshtein.h"
#include "model_int.h"

/* ---- gtplan.model ----------------------------------------------------- */

/* What the hint asks for when there is no shape at all. */
#define NEEDED_FIELDS "num_layers, hidden_size, ffn_hidden_size, " \
	"num_attention_heads, num_query_groups, vocab_size (and kv_channels " \
	"when the head dim is not hidden_size / num_attention_heads)"

/* The same, with the config.json names a user copies the values from. */
#define NEEDED_HOWTO "describe it under gtplan.model: " NEEDED_FIELDS \
	"; from the model's config.json: num_layers = num_hidden_layers, " \
	"ffn_hidden_size = intermediate_size, num_query_groups = " \
	"num_key_value_heads, kv_channels = head_dim"

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
	m->origin[f - model_fields] = MODEL_FROM_GTPLAN;
	char path[64];
	const char *want = f->type == MF_BOOL ? "a boolean"
			   : f->type == MF_TEXT ? "a string or null"
			   : f->type == MF_REAL ? "a positive number or null"
			   : f->nullable ? "an integer or null" : "an integer";

	if (n->kind == CFG_NULL && f->nullable) {
		m->origin[f - model_fields] = MODEL_FROM_NONE;
		if (f->type == MF_TEXT)
			model_text_at(m, f)[0] = '\0';
		else if (f->type == MF_REAL)
			*model_real_at(m, f) = 0;
		else
			*model_int_at(m, f) = 0;
		return 0;
	}
	if (n->interp)
		return -1;
	if (f->type == MF_BOOL && n->kind == CFG_BOOL) {
		*model_bool_at(m, f) = n->v.b != 0;
		return 0;
	}
	if (f->type == MF_TEXT && (n->kind == CFG_STR || n->kind == CFG_INT) &&
	    n->text && strlen(n->text) < MODEL_TEXT_MAX) {
		snprintf(model_text_at(m, f), MODEL_TEXT_MAX, "%s", n->text);
		return 0;
	}
	if (f->type == MF_REAL && (n->kind == CFG_FLOAT ||
				   n->kind == CFG_INT)) {
		double r = n->kind == CFG_FLOAT ? n->v.f : (double)n->v.i;

		if (r > 0) {
			*model_real_at(m, f) = r;
			return 0;
		}
	}
	if (f->type == MF_INT && n->kind == CFG_INT) {
		if (n->v.i < f->min) {
			struct diag *d = diag_add(diags, "GT201", n->loc,
				field_path(path, sizeof(path), f->key),
				"%s must be at least %lld, got %lld", f->key,
				f->min, n->v.i);
			diag_hint(d, "gtplan.model takes Megatron's "
				  "TransformerConfig values");
			return -1;
		}
		*model_int_at(m, f) = n->v.i;
		return 0;
	}
	diag_hint(diag_add(diags, "GT200", n->loc,
			   field_path(path, sizeof(path), f->key),
			   "%s must be %s, got %s", f->key, want,
			   cfg_kind_name(n->kind)),
		  f->type == MF_BOOL ? "write true or false" :
		  f->type == MF_TEXT ? "write Megatron's text, e.g. "
				      "[0]*3+[1]*58 (at most 191 characters)"
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
	for (size_t i = 0; i < model_n_fields; i++) {
		const struct cfg_node *n = cfg_get(desc, model_fields[i].key);

		if (n && apply_field(&model_fields[i], n, m, diags))
			rc = -1;
	}
	return rc;
}

/* The required fields *m lacks, comma-separated, into buf; 0 if none.
 * shape_only: only those the parallel shape needs (not ffn_hidden_size). */
static size_t missing_fields(struct model_shape *m, int shape_only, char *buf,
			     size_t len)
{
	size_t n = 0, used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < model_n_fields; i++) {
		if (!model_fields[i].required || *model_int_at(m, &model_fields[i]) > 0 ||
		    (shape_only && !strcmp(model_fields[i].key, "ffn_hidden_size")))
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 n ? ", " : "", model_fields[i].key);
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
	if (m->hybrid_layer_pattern[0] &&
	    (long long)strlen(m->hybrid_layer_pattern) != m->num_layers) {
		n = blame(desc, "hybrid_layer_pattern", "num_layers");
		diag_hint(diag_add(diags, "GT205", n->loc, "gtplan.model",
				   "hybrid_layer_pattern has %zu layers, "
				   "num_layers is %lld",
				   strlen(m->hybrid_layer_pattern),
				   m->num_layers),
			  "one character per layer: M Mamba, * attention, "
			  "- MLP, E MoE");
		rc = -1;
	} else if (!m->hybrid_layer_pattern[0] && m->moe_layer_freq[0]) {
		unsigned char moe[MODEL_TEXT_MAX];

		if (m->num_layers > MODEL_TEXT_MAX ||
		    model_freq_parse(m->moe_layer_freq, m->num_layers, moe)) {
			n = blame(desc, "moe_layer_freq", "num_layers");
			diag_hint(diag_add(diags, "GT205", n->loc,
					   "gtplan.model", "moe_layer_freq "
					   "'%s' does not give one entry per "
					   "layer of %lld", m->moe_layer_freq,
					   m->num_layers),
				  "Megatron's forms: an integer k (every "
				  "k-th layer), or [0]*3+[1]*58");
			rc = -1;
		}
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

/* What is skipped without a shape, for GT524's message. */
#define SKIPPED "shape-dependent checks are skipped (layers vs PP, heads " \
	"and query groups vs TP and vLLM's TP, experts vs EP, vocabulary " \
	"padding, stage collectives, collective sizes and memory)"

/* A Hugging Face hub id as the catalog keys them: "org/name" or a bare
 * "name", of letters, digits, '-', '_' and '.'. Anything else in
 * policy.model_name without a second '/' (spaces, a URL, angle brackets)
 * is a placeholder for a name the user was to fill in. */
static int is_hub_id(const char *name)
{
	for (const char *c = name; *c; c++)
		if (!(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z') &&
		    !(*c >= '0' && *c <= '9') && *c != '-' && *c != '_' &&
		    *c != '.' && *c != '/')
			return 0;
	return name[0] != '/' && name[strlen(name) - 1] != '/';
}

/* A relative checkpoint path such as models/Qwen/Qwen2.5-7B: more than
 * the one '/' of a hub id. */
static int is_relative_path(const char *name)
{
	const char *slash = strchr(name, '/');

	return slash && strchr(slash + 1, '/') && !strchr(name, ' ') &&
	       !strstr(name, "://");
}

/* The shape checks that still run on a partial shape, for GT524. */
static void partial_checks(const struct model_shape *m, char *buf,
			   size_t len)
{
	snprintf(buf, len, "%s%s%s%s", m->num_layers > 0 ?
		 ", layers vs PP" : "", m->num_attention_heads > 0 ?
		 ", heads and query groups vs TP and vLLM's TP" : "",
		 m->num_moe_experts > 0 ? ", experts vs EP" : "",
		 m->vocab_size > 0 ? ", the vocabulary's padding" : "");
}

/* GT524's "did you mean": the nearest catalog names, or NULL. */
static void suggest_names(struct diag *d, const char *name)
{
	const char *best[3] = { NULL, NULL, NULL };
	int dist[3] = { 0, 0, 0 };
	const char *bare = strchr(name, '/') ? strchr(name, '/') + 1 : name;
	int limit = lev_typo_limit(strlen(bare)) + 4;

	for (size_t i = 0; i < model_catalog_count(); i++) {
		const char *c = model_catalog_at(i)->name;
		const char *cb = strchr(c, '/') ? strchr(c, '/') + 1 : c;
		int k = lev_key_distance(bare, cb);

		if (k < 0 || k > limit)
			continue;
		for (int j = 0; j < 3; j++)
			if (!best[j] || k < dist[j]) {
				for (int t = 2; t > j; t--) {
					best[t] = best[t - 1];
					dist[t] = dist[t - 1];
				}
				best[j] = c;
				dist[j] = k;
				break;
			}
	}
	if (best[0])
		diag_note(d, DIAG_NOLOC, "did you mean %s%s%s%s%s?", best[0],
			  best[1] ? (best[2] ? ", " : " or ") : "",
			  best[1] ? best[1] : "", best[2] ? " or " : "",
			  best[2] ? best[2] : "");
}

/* GT524 for a model name without gtplan.model: why the name gives no
 * shape (a checkpoint path, an interpolation left for launch time, a
 * placeholder, or a hub id the catalog lacks), which checks are skipped
 * and how to describe the model. */
static void warn_unknown_name(const char *name,
			      const struct cfg_node *name_node,
			      struct diag_list *diags)
{
	int interp = name_node->interp || strstr(name, "${") != NULL;
	int local = !interp && (model_is_local_path(name) ||
				is_relative_path(name));
	int placeholder = !interp && !local && !is_hub_id(name);
	struct diag *d;

	d = diag_add(diags, "GT524", name_node->loc, "policy.model_name",
		     interp ? "model_name '%s' is an interpolation resolved "
			      "only at launch, so gtplan cannot look the model "
			      "up; " SKIPPED
		     : local ? "model '%s' is a local path without a "
			       "config.json gtplan can read, so " SKIPPED
		     : placeholder ? "model_name '%s' is not a Hugging Face "
				     "model id (a placeholder to fill in?), so "
				     "gtplan cannot look the model up; " SKIPPED
		     : "model '%s' is not in gtplan's catalog nor in the "
		       "local Hugging Face cache; " SKIPPED, name);
	diag_hint(d, NEEDED_HOWTO "; or point gtplan.model.hf_config (or "
		  "--model-config) at its config.json");
	if (!interp && !local && !placeholder)
		suggest_names(d, name);
}

/* GT524: the shape stays unknown, or partly known. */
static void warn_unknown(const char *name, const struct cfg_node *name_node,
			 const struct cfg_node *desc,
			 const struct model_shape *m, const char *missing,
			 int shape, struct diag_list *diags)
{
	char runs[160], what[320];
	struct diag *d;

	if (name && !desc) {
		warn_unknown_name(name, name_node, diags);
		return;
	}
	partial_checks(m, runs, sizeof(runs));
	if (shape)
		snprintf(what, sizeof(what), "%s", "collective sizes and "
			 "memory use gtplan's default shape (the shape checks "
			 "still run)");
	else if (runs[0])
		snprintf(what, sizeof(what), "the checks that need them are "
			 "skipped (collective sizes and memory among them); "
			 "those it allows run: %s", runs + 2);
	else
		snprintf(what, sizeof(what), "%s", SKIPPED);
	if (name) {
		d = diag_add(diags, "GT524", name_node->loc, "policy.model_name",
			     "model '%s' is not in gtplan's catalog and "
			     "gtplan.model lacks %s; %s", name, missing, what);
		diag_note(d, desc->loc, "gtplan.model is here");
	} else {
		d = diag_add(diags, "GT524", desc->loc, "gtplan.model",
			     "gtplan.model lacks %s; %s", missing, what);
	}
	diag_hint(d, "add to gtplan.model: %s", missing);
}

/* Marks every field set in *m that has no origin yet as `o`. */
static void mark_origins(struct model_shape *m, enum model_origin o)
{
	for (size_t i = 0; i < model_n_fields; i++) {
		const struct model_field *f = &model_fields[i];
		int set = f->type == MF_TEXT ? model_text_at(m, f)[0] != '\0'
			  : f->type == MF_BOOL ? 1 : *model_int_at(m, f) != 0;

		if (set && !m->origin[i])
			m->origin[i] = (unsigned char)o;
	}
}

/* The catalog's entry (or an empty shape), then config.json over it.
 * Returns the approximate flag (0/1), or -1 on GT526. */
static int resolve_base(const struct cfg_node *root, const char *name,
			const struct cfg_node *name_node,
			struct model_shape *m, struct diag_list *diags)
{
	const struct model_shape *cat = model_catalog_find(name);
	int approximate = cat && !cat->known, hf;

	if (cat) {
		*m = *cat;
		memset(m->origin, 0, sizeof(m->origin));
		mark_origins(m, MODEL_FROM_CATALOG);
	}
	m->approximate = 0;
	m->config_json[0] = '\0';
	snprintf(m->name, sizeof(m->name), "%s", name ? name : "gtplan.model");
	hf = model_hf_apply(root, name, name_node, m, diags);
	if (hf < 0)
		return -1;
	if (hf > 0)
		approximate = hf == 2;
	if (!cat && !m->origin[model_field_find("gated_linear_unit") -
			       model_fields]) {
		m->gated_linear_unit = 1;  /* as every catalogued family */
		m->origin[model_field_find("gated_linear_unit") -
			  model_fields] = MODEL_FROM_DEFAULT;
	}
	return approximate;
}

int model_resolve(const struct cfg_node *root, struct model_shape *m,
		  struct diag_list *diags)
{
	const struct cfg_node *name_node = cfg_path(root, KEY_MODEL_NAME);
	const struct cfg_node *desc = cfg_path(root, KEY_GTPLAN_MODEL);
	const char *name = NULL;
	char missing[256];
	int rc = 0, approximate;

	memset(m, 0, sizeof(*m));
	m->loc = DIAG_NOLOC;
	if (name_node && name_node->kind == CFG_STR && name_node->text &&
	    *name_node->text)
		name = name_node->text;
	if (desc && desc->kind == CFG_NULL)
		desc = NULL;
	if (!name && !desc)
		return 0;

	approximate = resolve_base(root, name, name_node, m, diags);
	if (approximate < 0) {
		approximate = 0;
		rc = -1;
	}
	m->loc = desc ? desc->loc : name_node->loc;
	m->known = m->shape_known = 0;

	if (desc && apply_desc(desc, m, diags))
		rc = -1;
	if (missing_fields(m, 1, missing, sizeof(missing))) {
		/* name everything a full description needs */
		missing_fields(m, 0, missing, sizeof(missing));
		if (!rc)
			warn_unknown(name, name_node, desc, m, missing, 0,
				     diags);
		return rc;
	}
	if (rc || (desc && check_combinations(m, desc, diags)))
		return -1;
	m->shape_known = 1;
	/* sizes: uniform transformer layers with every size given */
	if (m->hybrid_layer_pattern[0] || m->multi_latent_attention)
		approximate = 1;
	m->approximate = approximate;
	if (missing_fields(m, 0, missing, sizeof(missing))) {
		if (!approximate)
			warn_unknown(name, name_node, desc, m, missing, 1,
				     diags);
		if (!m->num_query_groups)
			m->num_query_groups = m->num_attention_heads;
		mark_origins(m, MODEL_FROM_DEFAULT);
		return 0;
	}
	model_fill_defaults(m);
	mark_origins(m, MODEL_FROM_DEFAULT);
	m->known = !approximate;
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
