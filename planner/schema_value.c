/*
 * schema_value: the checks of one value by itself, each with a finding in
 * plain words and a hint: type (GT200), minimum/maximum (GT201), enum and
 * const (GT202), multipleOf, lengths and pattern (GT205).
 */
#include "schema_int.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "levenshtein.h"

/* ---- does a kind of value fit a schema's type at all? ----------------- */

static int json_fits_kind(const json_t *j, enum cfg_kind k)
{
	switch (json_typeof(j)) {
	case JSON_NULL: return k == CFG_NULL;
	case JSON_TRUE:
	case JSON_FALSE: return k == CFG_BOOL;
	case JSON_INTEGER:
	case JSON_REAL: return k == CFG_INT || k == CFG_FLOAT;
	case JSON_STRING: return k == CFG_STR;
	case JSON_ARRAY: return k == CFG_SEQ;
	case JSON_OBJECT: return k == CFG_MAP;
	}
	return 0;
}

static int type_name_fits(const char *t, enum cfg_kind k)
{
	if (!strcmp(t, "integer"))
		return k == CFG_INT;
	if (!strcmp(t, "number"))
		return k == CFG_INT || k == CFG_FLOAT;
	if (!strcmp(t, "null"))
		return k == CFG_NULL;
	if (!strcmp(t, "boolean"))
		return k == CFG_BOOL;
	if (!strcmp(t, "string"))
		return k == CFG_STR;
	if (!strcmp(t, "object"))
		return k == CFG_MAP;
	return !strcmp(t, "array") && k == CFG_SEQ;
}

int sch_type_fits(const json_t *t, enum cfg_kind k)
{
	json_t *e;
	size_t i;

	if (json_is_string(t))
		return type_name_fits(json_string_value(t), k);
	json_array_foreach(t, i, e)
		if (type_name_fits(json_string_value(e), k))
			return 1;
	return 0;
}

int sch_type_takes(const json_t *t, const struct cfg_node *n)
{
	return sch_type_fits(t, n->kind) ||
	       (sch_integral_float(n) && sch_type_fits(t, CFG_INT));
}

static int fits_walk(const struct schema *s, const json_t *sch,
		     const struct cfg_node *n, int *budget)
{
	const json_t *v;
	json_t *e;
	size_t i;
	int any;

	if (--*budget < 0 || !json_is_object(sch))
		return !json_is_false(sch);
	v = json_object_get(sch, "$ref");
	if (v && !fits_walk(s, sch_resolve_ref(s->root, json_string_value(v)),
			    n, budget))
		return 0;
	v = json_object_get(sch, "type");
	if (v && !sch_type_takes(v, n))
		return 0;
	v = json_object_get(sch, "const");
	if (v && !json_fits_kind(v, n->kind))
		return 0;
	v = json_object_get(sch, "enum");
	if (v) {
		any = 0;
		json_array_foreach(v, i, e)
			any |= json_fits_kind(e, n->kind);
		if (!any)
			return 0;
	}
	for (int w = 0; w < 2; w++) {
		v = json_object_get(sch, w ? "oneOf" : "anyOf");
		if (!v)
			continue;
		any = 0;
		json_array_foreach(v, i, e)
			any |= fits_walk(s, e, n, budget);
		if (!any)
			return 0;
	}
	json_array_foreach(json_object_get(sch, "allOf"), i, e)
		if (!fits_walk(s, e, n, budget))
			return 0;
	return 1;
}

int sch_fits(const struct schema *s, const json_t *sch,
	     const struct cfg_node *n)
{
	int budget = WALK_BUDGET;

	return fits_walk(s, sch, n, &budget);
}

/* ---- findings -------------------------------------------------------- */

int sch_type_error(struct ctx *c, const json_t *sch,
		   const struct cfg_node *n)
{
	char w[WORDS], got[WORDS], ex[WORDS];
	struct diag *d;
	int has_ex;

	if (!c->diags)
		return 1;
	sch_want(w, sizeof(w), c->s, sch);
	sch_show_typed(got, sizeof(got), n);
	d = sch_report(c, "GT200", n->loc, n, "expected %s, got %s", w, got);
	has_ex = sch_example(c, sch, ex, sizeof(ex));
	if (n->kind == CFG_STR && n->text) {
		struct cfg_node t = { .kind = CFG_STR };

		cfg_scalar_type(&t, n->text);
		if (t.kind != CFG_STR && t.kind != CFG_NULL &&
		    sch_fits(c->s, sch, &t) && n->resolved &&
		    !memcmp(&n->origin, &n->loc, sizeof(n->loc))) {
			/* a string the interpolation built here, not one
			 * written elsewhere in quotes (that one is noted
			 * where it is): OmegaConf's oc.env, and any text
			 * around a ${...}, give strings */
			diag_hint(d, "the interpolation gives the string "
				  "\"%s\" (${oc.env:...} always gives a "
				  "string, as OmegaConf's does): write %s "
				  "here, or set it with an override: %s=%s",
				  n->text, n->text, c->plen ? c->path : "KEY",
				  n->text);
			return 1;
		}
		if (t.kind != CFG_STR && t.kind != CFG_NULL &&
		    sch_fits(c->s, sch, &t)) {
			diag_hint(d, "remove the quotes: in YAML \"%s\" is a "
				  "string, %s is %s", n->text, n->text,
				  t.kind == CFG_INT ? "an integer" :
				  t.kind == CFG_FLOAT ? "a number" :
				  "a boolean");
			return 1;
		}
	}
	if (json_is_array(json_object_get(sch, "enum")) && !strncmp(w,
			  "one of ", 7))
		diag_hint(d, "choose one of: %s", w + 7);
	else
		diag_hint(d, "use %s%s%s", w, has_ex ? " such as " : "",
			  has_ex ? ex : "");
	return 1;
}

/* -1/0/1 comparing the value with a JSON number; 2 when unordered (NaN). */
static int num_cmp(const struct cfg_node *n, const json_t *j)
{
	double a, b;

	if (n->kind == CFG_INT && json_is_integer(j)) {
		long long x = n->v.i, y = json_integer_value(j);

		return (x > y) - (x < y);
	}
	a = n->kind == CFG_INT ? (double)n->v.i : n->v.f;
	b = json_number_value(j);
	if (isnan(a) || isnan(b))
		return 2;
	return (a > b) - (a < b);
}

/* GT205: n is not a multiple of m (multipleOf); got is n as shown.
 * Returns 1 when reported. */
static int check_multiple(struct ctx *c, const struct cfg_node *n,
			  const json_t *m, const char *got)
{
	double q = (n->kind == CFG_INT ? (double)n->v.i : n->v.f) /
		   json_number_value(m);
	int ints = n->kind == CFG_INT && json_is_integer(m);
	char lim[64];
	struct diag *d;

	if (ints ? n->v.i % json_integer_value(m) == 0 :
		   isfinite(q) && q == floor(q))
		return 0;
	sch_show_json(lim, sizeof(lim), m);
	d = sch_report(c, "GT205", n->loc, n, "must be a multiple of %s, got %s",
		       lim, got);
	if (ints) {
		long long k = json_integer_value(m);
		long long lo = n->v.i / k * k;

		if (n->v.i < 0)
			lo -= k;
		if (lo <= LLONG_MAX - k)
			diag_hint(d, "use a multiple of %s such as %lld or %lld",
				  lim, lo, lo + k);
		else
			diag_hint(d, "use a multiple of %s such as %lld", lim,
				  lo);
	} else {
		diag_hint(d, "use a multiple of %s", lim);
	}
	return 1;
}

int sch_check_number(struct ctx *c, const json_t *sch,
		     const struct cfg_node *n)
{
	static const struct {
		const char *kw, *words;
		int bad_lo, bad_hi; /* num_cmp results in [lo, hi] fail */
	} bounds[] = {
		{ "minimum", "at least", -1, -1 },
		{ "exclusiveMinimum", "greater than", -1, 0 },
		{ "maximum", "at most", 1, 1 },
		{ "exclusiveMaximum", "less than", 0, 1 },
	};
	const json_t *m = json_object_get(sch, "multipleOf");
	char got[64], lim[64], w[WORDS], ex[WORDS];
	const json_t *t = json_object_get(sch, "type");

	sch_show_value(got, sizeof(got), n);
	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		const json_t *b = json_object_get(sch, bounds[i].kw);
		struct diag *d;
		int r;

		if (!b)
			continue;
		r = num_cmp(n, b);
		if (r != 2 && (r < bounds[i].bad_lo || r > bounds[i].bad_hi))
			continue;
		sch_show_json(lim, sizeof(lim), b);
		d = sch_report(c, "GT201", n->loc, n, "must be %s %s, got %s",
			       bounds[i].words, lim, got);
		if (!d)
			return 1;
		if ((n->kind == CFG_INT || sch_integral_float(n)) &&
		    bounds[i].bad_hi == 1 && bounds[i].bad_lo >= 0)
			c->past_max++;
		if (t && sch_type_takes(t, n))
			sch_number_phrase(w, sizeof(w), sch,
					  sch_type_fits(t, CFG_FLOAT)
					  ? "number" : "integer");
		else
			snprintf(w, sizeof(w), "a value %s %s",
				 bounds[i].words, lim);
		if (sch_example(c, sch, ex, sizeof(ex)))
			diag_hint(d, "use %s such as %s", w, ex);
		else
			diag_hint(d, "use %s", w);
		return 1;
	}
	return m ? check_multiple(c, n, m, got) : 0;
}

static size_t utf8_count(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

int sch_check_string(struct ctx *c, const json_t *sch,
		     const struct cfg_node *n)
{
	const char *text = n->text ? n->text : "";
	const json_t *lo = json_object_get(sch, "minLength");
	const json_t *hi = json_object_get(sch, "maxLength");
	const json_t *pat = json_object_get(sch, "pattern");
	size_t len = utf8_count(text);
	char got[WORDS], ex[WORDS];
	struct diag *d;

	sch_show_value(got, sizeof(got), n);
	if (lo && len < (size_t)json_integer_value(lo)) {
		d = sch_report(c, "GT205", n->loc, n, "%s is %zu characters "
			       "long; at least %" JSON_INTEGER_FORMAT " are "
			       "needed", got, len, json_integer_value(lo));
		diag_hint(d, "use a longer value");
		return 1;
	}
	if (hi && len > (size_t)json_integer_value(hi)) {
		d = sch_report(c, "GT205", n->loc, n, "%s is %zu characters "
			       "long; at most %" JSON_INTEGER_FORMAT " are "
			       "allowed", got, len, json_integer_value(hi));
		diag_hint(d, "use a shorter value");
		return 1;
	}
	if (pat && !sch_pat_match(c->s, json_string_value(pat), text)) {
		d = sch_report(c, "GT205", n->loc, n, "%s does not match the "
			       "pattern %s", got, json_string_value(pat));
		if (sch_example(c, sch, ex, sizeof(ex)))
			diag_hint(d, "write it like %s", ex);
		else
			diag_hint(d, "use a value that matches %s",
				  json_string_value(pat));
		return 1;
	}
	return 0;
}

/* 1 when the config value equals the JSON value (numbers by value). */
static int node_equals(const struct cfg_node *n, const json_t *j)
{
	const char *k;
	json_t *v;
	size_t i;

	switch (n->kind) {
	case CFG_NULL: return json_is_null(j);
	case CFG_BOOL: return json_is_boolean(j) && !n->v.b == !json_is_true(j);
	case CFG_INT:
	case CFG_FLOAT: return json_is_number(j) && num_cmp(n, j) == 0;
	case CFG_STR: return json_is_string(j) &&
			     !strcmp(n->text ? n->text : "",
				     json_string_value(j));
	case CFG_SEQ:
		if (!json_is_array(j) || json_array_size(j) != n->n)
			return 0;
		json_array_foreach(j, i, v)
			if (!node_equals(n->kids[i], v))
				return 0;
		return 1;
	case CFG_MAP:
		if (!json_is_object(j) || json_object_size(j) != n->n)
			return 0;
		json_object_foreach((json_t *)j, k, v) {
			const struct cfg_node *kid = cfg_get(n, k);

			if (!kid || !node_equals(kid, v))
				return 0;
		}
		return 1;
	}
	return 0;
}

int sch_check_choice(struct ctx *c, const json_t *sch,
		     const struct cfg_node *n)
{
	const json_t *k = json_object_get(sch, "const");
	const json_t *en = json_object_get(sch, "enum");
	char got[WORDS], list[WORDS] = "";
	const char *names[MAX_PHRASES * 4];
	size_t i, nn = 0;
	struct diag *d;
	json_t *e;
	long best;

	sch_show_value(got, sizeof(got), n);
	if (k && !node_equals(n, k)) {
		sch_show_json(list, sizeof(list), k);
		d = sch_report(c, "GT202", n->loc, n, "must be %s, got %s",
			       list, got);
		diag_hint(d, "use %s", list);
		return 1;
	}
	if (!en)
		return 0;
	json_array_foreach(en, i, e) {
		char v[64];

		if (node_equals(n, e))
			return 0;
		sch_show_json(v, sizeof(v), e);
		sch_cat(list, sizeof(list), "%s%s", i ? ", " : "", v);
		if (json_is_string(e) && nn < sizeof(names) / sizeof(names[0]))
			names[nn++] = json_string_value(e);
	}
	d = sch_report(c, "GT202", n->loc, n, "%s is not one of the allowed "
		       "values", got);
	best = n->kind == CFG_STR && n->text ?
	       lev_suggest(n->text, names, nn, NULL) : -1;
	if (best >= 0)
		diag_hint(d, "did you mean \"%s\"? choose one of: %s",
			  names[best], list);
	else
		diag_hint(d, "choose one of: %s", list);
	return 1;
}
