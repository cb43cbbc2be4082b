/*
 * model_catalog: the built-in catalog, data/models.txt embedded at build
 * time and parsed on first use, and which layers of a shape are MoE.
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

/* data/models.txt, embedded at build time (scripts/embed.sh). */
extern const char gtplan_models_txt[];
extern const unsigned long gtplan_models_txt_len;

/* Hostile-input limits of the catalog parser: the data ships with the
 * binary, but a limit still holds it to a fixed footprint. */
#define CATALOG_MAX_SHAPES  128
#define CATALOG_MAX_NAMES   8
#define CATALOG_LINE_MAX    512

struct stanza {
	char id[64];
	char names[CATALOG_MAX_NAMES][128];
	size_t n_names;
	int approximate;
	struct model_shape s;
};

static struct model_shape catalog[MODEL_CATALOG_MAX];
static size_t catalog_n;
static int catalog_loaded;
static char catalog_err[160];

/* A shape's parallel fields are all there. */
static int has_parallel_shape(const struct model_shape *m)
{
	return m->num_layers > 0 && m->hidden_size > 0 &&
	       m->num_attention_heads > 0 && m->vocab_size > 0;
}

/* Sets one field from the data file's text; -1 when the value is bad. */
static int set_field(struct model_shape *m, const struct model_field *f,
		     const char *v)
{
	char *end;
	long long x;

	switch (f->type) {
	case MF_BOOL:
		if (strcmp(v, "true") && strcmp(v, "false"))
			return -1;
		*model_bool_at(m, f) = v[0] == 't';
		return 0;
	case MF_TEXT:
		if (strlen(v) >= MODEL_TEXT_MAX)
			return -1;
		snprintf(model_text_at(m, f), MODEL_TEXT_MAX, "%s", v);
		return 0;
	case MF_REAL: {
		double r = strtod(v, &end);

		if (end == v || *end || !(r > 0))
			return -1;
		*model_real_at(m, f) = r;
		return 0;
	}
	case MF_INT:
		x = strtoll(v, &end, 10);
		if (end == v || *end || x < f->min)
			return -1;
		*model_int_at(m, f) = x;
		return 0;
	}
	return -1;
}

static int catalog_fail(unsigned line, const char *what)
{
	snprintf(catalog_err, sizeof(catalog_err),
		 "data/models.txt:%u: %s", line, what);
	return -1;
}

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

/* Turns a finished stanza into catalog entries, one per name. */
static int stanza_emit(const struct stanza *st, unsigned line)
{
	struct model_shape s = st->s;

	s.loc = DIAG_NOLOC;
	s.shape_known = has_parallel_shape(&s);
	s.known = s.shape_known && s.ffn_hidden_size > 0 && !st->approximate;
	if (st->n_names && !s.shape_known)
		return catalog_fail(line, "a named shape lacks num_layers, "
				    "hidden_size, num_attention_heads or "
				    "vocab_size");
	if (s.known)
		model_fill_defaults(&s);
	else if (!s.num_query_groups)
		s.num_query_groups = s.num_attention_heads;
	for (size_t i = 0; i < st->n_names; i++) {
		if (catalog_n == MODEL_CATALOG_MAX)
			return catalog_fail(line, "too many names");
		catalog[catalog_n] = s;
		snprintf(catalog[catalog_n].name, sizeof(s.name), "%s",
			 st->names[i]);
		catalog_n++;
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcasecmp(((const struct model_shape *)a)->name,
			  ((const struct model_shape *)b)->name);
}

/* One stanza line: a keyword and the rest of the line. */
static int stanza_line(struct stanza *shapes, size_t *n, unsigned line,
		       char *key, char *rest)
{
	struct stanza *st = *n ? &shapes[*n - 1] : NULL;
	const struct model_field *f;

	if (!strcmp(key, "shape")) {
		if (st && stanza_emit(st, line))
			return -1;
		if (*n == CATALOG_MAX_SHAPES || !*rest ||
		    strlen(rest) >= sizeof(st->id))
			return catalog_fail(line, "bad or too many shapes");
		st = &shapes[(*n)++];
		memset(st, 0, sizeof(*st));
		snprintf(st->id, sizeof(st->id), "%s", rest);
		return 0;
	}
	if (!st)
		return catalog_fail(line, "a field before the first shape");
	if (!strcmp(key, "source"))
		return 0;
	if (!strcmp(key, "from")) {
		for (size_t i = 0; i + 1 < *n; i++)
			if (!strcmp(shapes[i].id, rest)) {
				st->s = shapes[i].s;
				st->approximate = shapes[i].approximate;
				return 0;
			}
		return catalog_fail(line, "from names no earlier shape");
	}
	if (!strcmp(key, "names")) {
		for (char *w = strtok(rest, " "); w; w = strtok(NULL, " ")) {
			if (st->n_names == CATALOG_MAX_NAMES ||
			    strlen(w) >= sizeof(st->names[0]))
				return catalog_fail(line, "too many names");
			snprintf(st->names[st->n_names++],
				 sizeof(st->names[0]), "%s", w);
		}
		return 0;
	}
	if (!strcmp(key, "sizes")) {
		if (strcmp(rest, "exact") && strcmp(rest, "approximate"))
			return catalog_fail(line, "sizes is exact or "
					    "approximate");
		st->approximate = rest[0] == 'a';
		return 0;
	}
	f = model_field_find(key);
	if (!f)
		return catalog_fail(line, "unknown field");
	if (set_field(&st->s, f, rest))
		return catalog_fail(line, "bad value");
	return 0;
}

/* Parses the embedded data once. On a malformed line the entries before
 * it stay and model_catalog_error() says where. */
static void catalog_load(void)
{
	static struct stanza shapes[CATALOG_MAX_SHAPES];
	const char *p = gtplan_models_txt, *end = p + gtplan_models_txt_len;
	size_t n = 0;
	unsigned line = 0;
	int rc = 0;

	if (catalog_loaded)
		return;
	catalog_loaded = 1;
	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		char buf[CATALOG_LINE_MAX], *key, *rest;

		line++;
		if (len >= sizeof(buf)) {
			rc = catalog_fail(line, "line too long");
			break;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		p += len + (nl != NULL);
		while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\r'))
			buf[--len] = '\0';
		key = buf + strspn(buf, " \t");
		if (!*key || *key == '#')
			continue;
		rest = key + strcspn(key, " \t");
		if (*rest)
			*rest++ = '\0';
		rest += strspn(rest, " \t");
		rc = stanza_line(shapes, &n, line, key, rest);
	}
	if (!rc && n)
		stanza_emit(&shapes[n - 1], line);
	qsort(catalog, catalog_n, sizeof(catalog[0]), cmp_entry);
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

