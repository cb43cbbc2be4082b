/*
 * schema: a JSON Schema 2020-12 validator for the subset gtplan's schemas
 * use (listed in schema.h), applied to the config tree so that findings keep
 * their file:line:col.
 *
 * A check of one value walks the schema recursively. anyOf/oneOf branches
 * are first tried in "probe" mode (errors counted, nothing reported), then
 * the branch that explains the value best is reported, so a failed
 * `[integer, null]`-style choice gives one message, not one per branch.
 *
 * This file walks maps, lists and combinators; the checks of one value are
 * in schema_value.c, the words of the messages in schema_words.c, loading
 * the schema in schema_load.c.
 */
#include "schema_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "levenshtein.h"

/* build/gen/embedded_schemas.c, generated from schemas/config.schema.json */
extern const char gtplan_config_schema[];
extern const unsigned long gtplan_config_schema_len;

/* ---- validation context ------------------------------------------------ */

static size_t path_push(struct ctx *c, const char *seg)
{
	size_t old = c->plen;
	int n = snprintf(c->path + old, sizeof(c->path) - old, "%s%s",
			 old ? "." : "", seg);

	if (n < 0 || (size_t)n >= sizeof(c->path) - old)
		c->plen = sizeof(c->path) - 1;
	else
		c->plen = old + (size_t)n;
	return old;
}

static void path_pop(struct ctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

struct diag *sch_report(struct ctx *c, const char *code, struct diag_loc loc,
			const struct cfg_node *n, const char *fmt, ...)
{
	struct diag *d;
	va_list ap;
	char *msg;

	if (!c->diags)
		return NULL;
	va_start(ap, fmt);
	msg = diag_vfmt(fmt, ap);
	va_end(ap);
	if (!msg)
		return NULL;
	d = diag_add(c->diags, code, loc, c->plen ? c->path : NULL, "%s", msg);
	free(msg);
	if (n && n->resolved && n->origin.src >= 0 &&
	    memcmp(&n->origin, &n->loc, sizeof(n->loc)))
		diag_note(d, n->origin, "the value comes from here");
	return d;
}

/* ---- maps, lists and combinators --------------------------------------- */

static int check(struct ctx *c, const json_t *sch, const struct cfg_node *n);

/* Checks a value under a key or index: the path grows by `seg`, and hints
 * take examples from `sch`. */
static int check_child(struct ctx *c, const json_t *sch, const char *seg,
		       const struct cfg_node *n)
{
	const json_t *outer = c->outer;
	size_t old = path_push(c, seg);
	int errs;

	c->outer = sch;
	errs = check(c, sch, n);
	c->outer = outer;
	path_pop(c, old);
	return errs;
}

/* Names of the properties a map schema declares (borrowed), or NULL. */
static const char **prop_names(const json_t *props, size_t *n)
{
	const char **v, *k;
	json_t *sub;

	*n = 0;
	if (!json_object_size(props))
		return NULL;
	v = malloc(json_object_size(props) * sizeof(*v));
	if (!v)
		return NULL;
	json_object_foreach((json_t *)props, k, sub)
		v[(*n)++] = k;
	return v;
}

/* A key the schema does not declare. Closed maps (additionalProperties
 * false) reject it (GT205); open ones warn only when it is one typo away
 * from a declared key (GT203). */
static int unknown_key(struct ctx *c, const json_t *props, int closed,
		       const struct cfg_node *map, const struct cfg_node *kid)
{
	size_t nn, old;
	const char **names = prop_names(props, &nn);
	long best = names ? lev_suggest(kid->key, names, nn, NULL) : -1;
	char list[WORDS] = "", where[SCHEMA_MAX_PATH + 8];
	struct diag *d;
	int errs = 0;

	if (!closed && best < 0)
		goto out;
	if (c->plen)
		snprintf(where, sizeof(where), "in '%s'", c->path);
	else
		snprintf(where, sizeof(where), "at the top level");
	old = path_push(c, kid->key);
	if (closed) {
		d = sch_report(c, "GT205", kid->key_loc, NULL, "unknown key "
			       "'%s' %s", kid->key, where);
		errs = 1;
	} else {
		d = sch_report(c, "GT203", kid->key_loc, NULL,
			       "unknown key '%s'", kid->key);
	}
	path_pop(c, old);
	if (best >= 0) {
		const struct cfg_node *real = cfg_get(map, names[best]);

		diag_hint(d, "did you mean '%s'?", names[best]);
		if (real)
			diag_note(d, real->key_loc, "'%s' is set here",
				  names[best]);
	} else if (nn) {
		for (size_t i = 0; i < nn; i++)
			sch_cat(list, sizeof(list), "%s%s", i ? ", " : "",
				names[i]);
		diag_hint(d, "the keys allowed %s are: %s", where, list);
	} else {
		diag_hint(d, "remove it: no keys are allowed %s", where);
	}
out:
	free(names);
	return errs;
}

static int check_required(struct ctx *c, const json_t *sch,
			  const struct cfg_node *n)
{
	const json_t *props = json_object_get(sch, "properties");
	const char *where = c->plen ? c->path : NULL;
	char in[SCHEMA_MAX_PATH + 16] = "", ex[WORDS], about[WORDS] = "";
	json_t *e;
	size_t i;
	int errs = 0;

	if (where)
		snprintf(in, sizeof(in), " in '%s'", where);
	json_array_foreach(json_object_get(sch, "required"), i, e) {
		const char *key = json_string_value(e);
		const json_t *sub = json_object_get(props, key);
		const json_t *desc = json_object_get(sub, "description");
		const json_t *outer = c->outer;
		struct diag *d;
		size_t old;
		int has_ex;

		if (cfg_get(n, key))
			continue;
		errs++;
		c->outer = sub;
		has_ex = sub && sch_example(c, sub, ex, sizeof(ex));
		c->outer = outer;
		if (json_is_string(desc)) {
			char s[WORDS - 8];

			sch_first_sentence(s, sizeof(s),
					   json_string_value(desc));
			snprintf(about, sizeof(about), " (%s)", s);
		}
		old = path_push(c, key);
		d = sch_report(c, "GT204", n->key_loc, NULL,
			       "missing required key '%s'%s", key, in);
		path_pop(c, old);
		if (where)
			diag_hint(d, "add '%s: %s' under '%s'%s", key,
				  has_ex ? ex : "...", where, about);
		else
			diag_hint(d, "add '%s:' at the top level%s", key,
				  about);
	}
	return errs;
}

static int check_count(struct ctx *c, const json_t *sch,
		       const struct cfg_node *n, const char *lo_kw,
		       const char *hi_kw, const char *what)
{
	const json_t *lo = json_object_get(sch, lo_kw);
	const json_t *hi = json_object_get(sch, hi_kw);
	struct diag *d;

	if (lo && (long long)n->n < json_integer_value(lo)) {
		d = sch_report(c, "GT205", n->loc, n, "must have at least %"
			       JSON_INTEGER_FORMAT " %s, got %zu",
			       json_integer_value(lo), what, n->n);
		diag_hint(d, "add %s", what);
		return 1;
	}
	if (hi && (long long)n->n > json_integer_value(hi)) {
		d = sch_report(c, "GT205", n->loc, n, "must have at most %"
			       JSON_INTEGER_FORMAT " %s, got %zu",
			       json_integer_value(hi), what, n->n);
		diag_hint(d, "remove %s", what);
		return 1;
	}
	return 0;
}

static int check_map(struct ctx *c, const json_t *sch,
		     const struct cfg_node *n)
{
	const json_t *props = json_object_get(sch, "properties");
	const json_t *pprops = json_object_get(sch, "patternProperties");
	const json_t *addl = json_object_get(sch, "additionalProperties");
	int errs = check_required(c, sch, n);

	errs += check_count(c, sch, n, "minProperties", "maxProperties",
			    "keys");
	for (size_t i = 0; i < n->n; i++) {
		const struct cfg_node *kid = n->kids[i];
		const json_t *sub = json_object_get(props, kid->key);
		int matched = sub != NULL;
		const char *pk;
		json_t *ps;

		if (!kid->key)
			continue;
		if (sub)
			errs += check_child(c, sub, kid->key, kid);
		json_object_foreach((json_t *)pprops, pk, ps)
			if (sch_pat_match(c->s, pk, kid->key)) {
				matched = 1;
				errs += check_child(c, ps, kid->key, kid);
			}
		if (matched)
			continue;
		if (json_is_false(addl) || (!addl && props) ||
		    json_is_true(addl))
			errs += unknown_key(c, props, json_is_false(addl), n,
					    kid);
		else if (addl)
			errs += check_child(c, addl, kid->key, kid);
	}
	return errs;
}

static int check_list(struct ctx *c, const json_t *sch,
		      const struct cfg_node *n)
{
	const json_t *items = json_object_get(sch, "items");
	int errs = check_count(c, sch, n, "minItems", "maxItems", "items");

	for (size_t i = 0; items && i < n->n; i++) {
		char idx[24];

		snprintf(idx, sizeof(idx), "%zu", i);
		errs += check_child(c, items, idx, n->kids[i]);
	}
	return errs;
}

/* anyOf (one = 0) or oneOf (one = 1). */
static int check_choices(struct ctx *c, const json_t *sch, const json_t *arr,
			 const struct cfg_node *n, int one)
{
	struct diag_list *saved = c->diags;
	long first = -1, second = -1, best = -1;
	int best_errs = 0, n_fit = 0;
	json_t *b;
	size_t i;

	c->diags = NULL;
	json_array_foreach(arr, i, b) {
		int e = check(c, b, n);

		if (e == 0) {
			if (first < 0)
				first = (long)i;
			else if (second < 0)
				second = (long)i;
		} else if (sch_fits(c->s, b, n)) {
			n_fit++;
			if (best < 0 || e < best_errs) {
				best = (long)i;
				best_errs = e;
			}
		}
	}
	c->diags = saved;
	if (first >= 0 && (!one || second < 0)) {
		/* valid: report what the matching branch warns about */
		if (c->diags)
			check(c, json_array_get(arr, (size_t)first), n);
		return 0;
	}
	if (first >= 0) {
		char w[WORDS];
		struct diag *d;

		sch_want(w, sizeof(w), c->s, sch);
		d = sch_report(c, "GT205", n->loc, n, "matches more than one "
			       "of the allowed forms (%ld and %ld of %s)",
			       first + 1, second + 1, w);
		diag_hint(d, "change the value so that exactly one form fits");
		return 1;
	}
	if (!n_fit)
		return sch_type_error(c, sch, n);
	return c->diags ? check(c, json_array_get(arr, (size_t)best), n) :
	       best_errs;
}

static int check_logic(struct ctx *c, const json_t *sch,
		       const struct cfg_node *n)
{
	const json_t *not = json_object_get(sch, "not");
	const json_t *v;
	int errs = 0;
	json_t *b;
	size_t i;

	json_array_foreach(json_object_get(sch, "allOf"), i, b)
		errs += check(c, b, n);
	if ((v = json_object_get(sch, "anyOf")))
		errs += check_choices(c, sch, v, n, 0);
	if ((v = json_object_get(sch, "oneOf")))
		errs += check_choices(c, sch, v, n, 1);
	if (not) {
		struct diag_list *saved = c->diags;
		int e;

		c->diags = NULL;
		e = check(c, not, n);
		c->diags = saved;
		if (!e) {
			char w[WORDS], got[WORDS];
			struct diag *d;

			sch_want(w, sizeof(w), c->s, not);
			sch_show_value(got, sizeof(got), n);
			d = sch_report(c, "GT205", n->loc, n, "must not be %s, "
				       "got %s", w, got);
			diag_hint(d, "use a different value");
			errs++;
		}
	}
	return errs;
}

static int check_here(struct ctx *c, const json_t *sch,
		      const struct cfg_node *n)
{
	const json_t *ref = json_object_get(sch, "$ref");
	const json_t *type = json_object_get(sch, "type");
	int errs = 0, as_int;

	if (ref)
		errs += check(c, sch_resolve_ref(c->s->root,
						 json_string_value(ref)), n);
	if (type && !sch_type_takes(type, n))
		return errs + sch_type_error(c, sch, n);
	/* 2.0 where an integer goes: valid (JSON Schema), and GT206 once the
	 * value passes this schema's other checks */
	as_int = type && !sch_type_fits(type, n->kind);
	errs += sch_check_choice(c, sch, n);
	switch (n->kind) {
	case CFG_INT:
	case CFG_FLOAT:
		errs += sch_check_number(c, sch, n);
		break;
	case CFG_STR:
		errs += sch_check_string(c, sch, n);
		break;
	case CFG_MAP:
		errs += check_map(c, sch, n);
		break;
	case CFG_SEQ:
		errs += check_list(c, sch, n);
		break;
	default:
		break;
	}
	errs += check_logic(c, sch, n);
	if (as_int && !errs)
		sch_ints_note(c, n);
	return errs;
}

/* 1 when sch is already being applied to n: only the top entries can be
 * about n, since reaching into a value pushes its children above it. */
static int on_stack(const struct ctx *c, const json_t *sch,
		    const struct cfg_node *n)
{
	for (int i = c->depth - 1; i >= 0 && c->stack[i].n == n; i--)
		if (c->stack[i].sch == sch)
			return 1;
	return 0;
}

/* The number of errors `n` has against `sch` (reported unless probing). */
static int check(struct ctx *c, const json_t *sch, const struct cfg_node *n)
{
	int errs;

	if (!sch || json_is_true(sch))
		return 0;
	if (json_is_false(sch)) {
		struct diag *d = sch_report(c, "GT205", n->loc, n, "no value "
					    "is allowed here");

		diag_hint(d, "remove it");
		return 1;
	}
	/* An unresolved ${...} (say, an unset ${oc.env:X}): its value is not
	 * known here, so there is nothing to check. */
	if (n->kind == CFG_STR && n->interp)
		return 0;
	if (c->depth >= SCHEMA_MAX_DEPTH || on_stack(c, sch, n)) {
		if (c->diags && !c->limit_reported) {
			struct diag *d = c->depth >= SCHEMA_MAX_DEPTH ?
				sch_report(c, "GT205", n->loc, n, "the schema "
					   "nests deeper than %d levels here",
					   SCHEMA_MAX_DEPTH) :
				sch_report(c, "GT205", n->loc, n, "the schema "
					   "refers back to itself here without "
					   "reaching into the value");

			diag_hint(d, "the schema has a $ref cycle or is too "
				  "deep; fix the schema");
			c->limit_reported = 1;
		}
		return 1;
	}
	c->stack[c->depth].sch = sch;
	c->stack[c->depth].n = n;
	c->depth++;
	errs = check_here(c, sch, n);
	c->depth--;
	return errs;
}

/* ---- entry points ------------------------------------------------------ */

static int validate(const struct schema *s, const struct cfg_node *root,
		    struct diag_list *diags, int *past_max,
		    struct sch_ints *ints)
{
	struct ctx c = { .s = s, .diags = diags, .outer = s->root,
			 .ints = ints };
	int errs;

	if (!root)
		return 0;
	errs = check(&c, s->root, root);
	if (past_max)
		*past_max = c.past_max;
	if (ints && diags && sch_ints_report(ints, diags)) {
		fprintf(stderr, "gtplan: out of memory while checking the "
			"config's integers\n");
		return -1;
	}
	return errs;
}

int schema_validate(const struct schema *s, const struct cfg_node *root,
		    struct diag_list *diags)
{
	struct sch_ints ints = { 0 };
	int errs = validate(s, root, diags, NULL, &ints);

	sch_ints_release(&ints);
	return errs;
}

/* The built-in schema's check of root; settles the floats it takes as
 * integers when `settle` is given (the same tree as root). */
static int check_config(const struct cfg_node *root, struct cfg_node *settle,
			struct diag_list *diags, int *past_max)
{
	char err[256];
	struct schema *s = schema_load(gtplan_config_schema,
				       gtplan_config_schema_len, err,
				       sizeof(err));
	struct sch_ints ints = { 0 };
	int errs;

	*past_max = 0;
	if (!s) {
		fprintf(stderr, "gtplan: the built-in config schema is broken: "
			"%s\n", err);
		return -1;
	}
	errs = validate(s, root, diags, past_max, &ints);
	if (errs >= 0 && settle && sch_ints_settle(&ints, settle)) {
		fprintf(stderr, "gtplan: out of memory while settling the "
			"config's integers\n");
		errs = -1;
	}
	sch_ints_release(&ints);
	schema_free(s);
	return errs;
}

int schema_check_config_limits(const struct cfg_node *root,
			       struct diag_list *diags, int *past_max)
{
	return check_config(root, NULL, diags, past_max);
}

int schema_settle_config(struct cfg_node *root, struct diag_list *diags,
			 int *past_max)
{
	return check_config(root, root, diags, past_max);
}

int schema_check_config(const struct cfg_node *root, struct diag_list *diags)
{
	int past_max;

	return schema_check_config_limits(root, diags, &past_max);
}
