/*
 * model_catalog: the built-in catalog (data/models.yaml, embedded at build
 * time and read on first use by model_catalog_load.c), the shape fields,
 * and which layers of a shape are MoE.
 * Part of the model module (model.h; model_int.h is its private half).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model.h"
#include "model_int.h"

#define INT_FIELD(k, req, null, lo) \
	{ #k, offsetof(struct model_shape, k), MF_INT, req, null, lo }
#define BOOL_FIELD(k) { #k, offsetof(struct model_shape, k), MF_BOOL, 0, 0, 0 }
#define TEXT_FIELD(k) { #k, offsetof(struct model_shape, k), MF_TEXT, 0, 1, 0 }

const struct model_field model_fields[] = {
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
	INT_FIELD(make_vocab_size_divisible_by, 0, 1, 1),
	INT_FIELD(moe_shared_expert_intermediate_size, 0, 1, 1),
	BOOL_FIELD(multi_latent_attention),
	TEXT_FIELD(moe_layer_freq),
	TEXT_FIELD(hybrid_layer_pattern),
	INT_FIELD(rotary_base, 0, 1, 1),
	{ "layernorm_epsilon", offsetof(struct model_shape, layernorm_epsilon),
	  MF_REAL, 0, 1, 0 },
	BOOL_FIELD(qk_layernorm),
};

const size_t model_n_fields = sizeof(model_fields) / sizeof(model_fields[0]);

const struct model_field *model_field_find(const char *key)
{
	for (size_t i = 0; i < model_n_fields; i++)
		if (!strcmp(model_fields[i].key, key))
			return &model_fields[i];
	return NULL;
}


/* ---- the catalog ------------------------------------------------------ */

/* data/models.yaml, embedded at build time (scripts/embed.sh). */
extern const char gtplan_models_yaml[];
extern const unsigned long gtplan_models_yaml_len;

static struct model_shape catalog[MODEL_CATALOG_MAX];
static size_t catalog_n;
static int catalog_loaded;
static char catalog_err[256];

void model_fill_defaults(struct model_shape *m)
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

int model_catalog_shape(struct model_shape *s, int approximate)
{
	s->loc = DIAG_NOLOC;
	s->approximate = 0;
	s->shape_known = s->num_layers > 0 && s->hidden_size > 0 &&
			 s->num_attention_heads > 0 && s->vocab_size > 0;
	s->known = s->shape_known && s->ffn_hidden_size > 0 && !approximate;
	if (!s->shape_known)
		return -1;
	if (s->known)
		model_fill_defaults(s);
	else if (!s->num_query_groups)
		s->num_query_groups = s->num_attention_heads;
	return 0;
}

/* Parses the embedded data once; on an error the catalog is empty and
 * model_catalog_error() says where. */
static void catalog_load(void)
{
	if (catalog_loaded)
		return;
	catalog_loaded = 1;
	if (model_catalog_parse(gtplan_models_yaml, gtplan_models_yaml_len,
				catalog, MODEL_CATALOG_MAX, &catalog_n,
				catalog_err, sizeof(catalog_err)))
		catalog_n = 0;
}

const char *model_catalog_error(void)
{
	catalog_load();
	return catalog_err[0] ? catalog_err : NULL;
}

size_t model_catalog_count(void)
{
	catalog_load();
	return catalog_n;
}

const struct model_shape *model_catalog_at(size_t i)
{
	catalog_load();
	return i < catalog_n ? &catalog[i] : NULL;
}

/* A local checkpoint rather than a hub id: an absolute, relative, home or
 * Windows path. (Other names with several '/' match nothing either: every
 * catalog name is exactly "org/name".) */
int model_is_local_path(const char *name)
{
	return name[0] == '/' || name[0] == '.' || name[0] == '~' ||
	       strchr(name, '\\') != NULL;
}

static const struct model_shape *find_exact(const char *name)
{
	int bare = strchr(name, '/') == NULL;

	for (size_t i = 0; i < catalog_n; i++) {
		const char *c = catalog[i].name;

		if (bare)
			c = strchr(c, '/') + 1;
		if (strcasecmp(c, name) == 0)
			return &catalog[i];
	}
	return NULL;
}

/* Hugging Face's older names of catalogued models: Meta renamed
 * meta-llama/Meta-Llama-3.1-8B-Instruct to Llama-3.1-8B-Instruct (the hub
 * redirects the old id), so "Meta-" before the name is dropped. */
static const struct model_shape *find_alias(const char *name)
{
	const char *slash = strchr(name, '/');
	const char *bare = slash ? slash + 1 : name;
	char alt[256];
	int n;

	if (strncasecmp(bare, "Meta-Llama-", 11))
		return NULL;
	n = snprintf(alt, sizeof(alt), "%.*s%s", (int)(bare - name), name,
		     bare + 5);
	return n > 0 && (size_t)n < sizeof(alt) ? find_exact(alt) : NULL;
}

const struct model_shape *model_catalog_find(const char *name)
{
	const struct model_shape *m;

	catalog_load();
	if (!name || !*name || model_is_local_path(name))
		return NULL;
	m = find_exact(name);
	return m ? m : find_alias(name);
}

/* ---- fields, for `gtplan explain` ---------------------------------------- */

size_t model_field_count(void)
{
	return model_n_fields;
}

const char *model_field_key(size_t i)
{
	return i < model_n_fields ? model_fields[i].key : NULL;
}

void model_field_value(const struct model_shape *m, size_t i, char *buf,
		       size_t len)
{
	const struct model_field *f = &model_fields[i];
	struct model_shape *w = (struct model_shape *)(uintptr_t)m;

	buf[0] = '\0';
	if (i >= model_n_fields || !m->origin[i])
		return;
	/* a field type not listed here prints nothing rather than a
	 * misread value */
	if (f->type == MF_TEXT)
		snprintf(buf, len, "%s", model_text_at(w, f));
	else if (f->type == MF_BOOL)
		snprintf(buf, len, "%s", *model_bool_at(w, f) ? "true" :
			 "false");
	else if (f->type == MF_INT)
		snprintf(buf, len, "%lld", *model_int_at(w, f));
	else if (f->type == MF_REAL)
		snprintf(buf, len, "%.17g", *model_real_at(w, f));
}

void model_origin_text(const struct model_shape *m, const char *key,
		       char *buf, size_t len)
{
	const struct model_field *f = model_field_find(key);
	int o = f ? m->origin[f - model_fields] : MODEL_FROM_NONE;

	switch (o) {
	case MODEL_FROM_CATALOG:
		snprintf(buf, len, "%s", "gtplan's catalog");
		break;
	case MODEL_FROM_HF:
		snprintf(buf, len, "%s", m->config_json);
		break;
	case MODEL_FROM_GTPLAN:
		snprintf(buf, len, "%s", "gtplan.model");
		break;
	case MODEL_FROM_DEFAULT:
		snprintf(buf, len, "%s", "Megatron's default");
		break;
	default:
		snprintf(buf, len, "%s", "not given");
	}
}

const char *model_origin_name(int origin)
{
	switch (origin) {
	case MODEL_FROM_CATALOG: return "catalog";
	case MODEL_FROM_HF: return "config.json";
	case MODEL_FROM_GTPLAN: return "gtplan.model";
	case MODEL_FROM_DEFAULT: return "default";
	}
	return "unset";
}

/* ---- layers ----------------------------------------------------------- */

/* Megatron's --moe-layer-freq: an integer k (layer i is MoE when i % k ==
 * 0) or a list written as terms "[a]*n" or "[a,b,...]" joined by '+'.
 * Fills out[0..layers) with 0/1 and returns 0, or -1 when the text is
 * malformed or the list's length is not `layers`. */
int model_freq_parse(const char *s, long long layers, unsigned char *out)
{
	long long n = 0;
	char *end;

	if (!*s) {
		memset(out, 1, (size_t)layers);
		return 0;
	}
	if (*s != '[' && *s != '(') {
		long long k = strtoll(s, &end, 10);

		if (end == s || *end || k < 1)
			return -1;
		for (long long i = 0; i < layers; i++)
			out[i] = i % k == 0;
		return 0;
	}
	if (*s == '(') /* Megatron accepts the list in parentheses */
		s++;
	while (*s == '[') {
		unsigned char term[MODEL_TEXT_MAX];
		long long t = 0, rep = 1;

		s++;
		for (;;) {
			long long v = strtoll(s, &end, 10);

			if (end == s || (v != 0 && v != 1) || t == MODEL_TEXT_MAX)
				return -1;
			term[t++] = (unsigned char)v;
			s = end + strspn(end, " ");
			if (*s == ']')
				break;
			if (*s != ',')
				return -1;
			s++;
			s += strspn(s, " ");
		}
		s++;
		if (*s == '*') {
			rep = strtoll(s + 1, &end, 10);
			if (end == s + 1 || rep < 0)
				return -1;
			s = end;
		}
		for (long long r = 0; r < rep; r++)
			for (long long i = 0; i < t; i++) {
				if (n == layers)
					return -1;
				out[n++] = term[i];
			}
		if (*s == '+')
			s++;
	}
	if (*s == ')')
		s++;
	return *s || n != layers ? -1 : 0;
}

int model_layer_kinds(const struct model_shape *m, unsigned char *moe,
		      long long max)
{
	long long L = m->num_layers;

	if (L < 1 || L > max)
		return -1;
	if (m->hybrid_layer_pattern[0]) {
		if ((long long)strlen(m->hybrid_layer_pattern) != L)
			return -1;
		for (long long i = 0; i < L; i++)
			moe[i] = m->hybrid_layer_pattern[i] == 'E';
		return 0;
	}
	if (!m->num_moe_experts) {
		memset(moe, 0, (size_t)L);
		return 0;
	}
	return model_freq_parse(m->moe_layer_freq, L, moe);
}

long long model_moe_layers(const struct model_shape *m, long long first,
			   long long n)
{
	unsigned char moe[MODEL_TEXT_MAX];
	long long c = 0;

	if (model_layer_kinds(m, moe, MODEL_TEXT_MAX)) {
		/* more layers than a pattern holds: uniform */
		return m->num_moe_experts ? n : 0;
	}
	for (long long i = first; i < first + n && i < m->num_layers; i++)
		c += moe[i];
	return c;
}

