/*
 * schema: a JSON Schema 2020-12 validator for the subset gtplan's schemas
 * use (listed in schema.h), applied to the config tree so that findings keep
 * their file:line:col.
 *
 * A check of one value walks the schema recursively. anyOf/oneOf branches
 * are first tried in "probe" mode (errors counted, nothing reported), then
 * the branch that explains the value best is reported, so a failed
 * `[integer, null]`-style choice gives one message, not one per branch.
 */
#include "schema.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "levenshtein.h"

/* build/gen/embedded_schemas.c, generated from schemas/config.schema.json */
extern const char gtplan_config_schema[];
extern const unsigned long gtplan_config_schema_len;

#define WORDS     512 /* bytes of one phrase built for a message */
#define SHOW_STR  48  /* characters of a string value quoted in a message */
#define MAX_PHRASES 12 /* alternatives listed in "expected A, B or C" */
#define FIT_DEPTH 32  /* $ref hops followed for a description */
#define WALK_BUDGET 256 /* subschemas visited to describe a schema or to
			   see whether a type fits it ($ref cycles end) */

struct pat {
	const char *src; /* borrowed from the schema JSON */
	regex_t re;
};

struct schema {
	json_t *root;
	struct pat *pats;
	size_t n_pats, cap_pats;
};

/* ---- small text helpers ---------------------------------------------- */

/* Appends printf output to buf (NUL-terminated, `size` bytes), cutting it
 * short when full. */
static void cat(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
}

/* `s` in double quotes, control characters shown as '?', cut after
 * SHOW_STR code points. */
static void quote(char *buf, size_t size, const char *s)
{
	size_t o = 0, cps = 0;

	if (size < 8)
		return;
	buf[o++] = '"';
	for (; *s && o + 6 < size; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch & 0xc0) != 0x80 && cps++ == SHOW_STR) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (ch == '"' || ch == '\\')
			buf[o++] = '\\';
		buf[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

/* A JSON value as it would be written in the config. */
static void jshow(char *buf, size_t size, const json_t *j)
{
	char *dump;

	buf[0] = '\0';
	switch (json_typeof(j)) {
	case JSON_STRING:
		quote(buf, size, json_string_value(j));
		break;
	case JSON_INTEGER:
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(j));
		break;
	case JSON_REAL:
		snprintf(buf, size, "%g", json_real_value(j));
		break;
	case JSON_TRUE:
		snprintf(buf, size, "true");
		break;
	case JSON_FALSE:
		snprintf(buf, size, "false");
		break;
	case JSON_NULL:
		snprintf(buf, size, "null");
		break;
	default:
		dump = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		snprintf(buf, size, "%s", dump ? dump : "?");
		free(dump);
	}
}

/* A config value as written ("four" quoted, 48.0, true, null). */
static void nshow(char *buf, size_t size, const struct cfg_node *n)
{
	switch (n->kind) {
	case CFG_STR:
		quote(buf, size, n->text ? n->text : "");
		break;
	case CFG_INT:
		snprintf(buf, size, "%lld", n->v.i);
		break;
	case CFG_FLOAT:
		if (n->text)
			snprintf(buf, size, "%s", n->text);
		else
			snprintf(buf, size, "%g", n->v.f);
		break;
	case CFG_BOOL:
		snprintf(buf, size, "%s", n->v.b ? "true" : "false");
		break;
	case CFG_NULL:
		snprintf(buf, size, "null");
		break;
	case CFG_MAP:
		snprintf(buf, size, "a map");
		break;
	case CFG_SEQ:
		snprintf(buf, size, "a list");
		break;
	}
}

/* "string \"four\"", "integer 0", "null", "a map": what the value is. */
static void ngot(char *buf, size_t size, const struct cfg_node *n)
{
	char v[WORDS - 16];

	nshow(v, sizeof(v), n);
	if (n->kind == CFG_NULL || n->kind == CFG_MAP || n->kind == CFG_SEQ)
		snprintf(buf, size, "%s", v);
	else
		snprintf(buf, size, "%s %s", cfg_kind_name(n->kind), v);
}

/* The first sentence of a description, without its final period. */
static void first_sentence(char *buf, size_t size, const char *s)
{
	const char *end = strstr(s, ". ");
	size_t n = end ? (size_t)(end - s) : strlen(s);

	if (n && s[n - 1] == '.')
		n--;
	if (n >= size)
		n = size - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

/* ---- JSON pointers and patterns -------------------------------------- */

/* The schema a local $ref ("#", "#/$defs/x", "#/properties/a~1b") points
 * at, or NULL. */
static const json_t *resolve_ref(const json_t *root, const char *ref)
{
	const json_t *at = root;
	char seg[256];

	if (!ref || ref[0] != '#')
		return NULL;
	ref++;
	if (!*ref)
		return root;
	if (*ref != '/')
		return NULL; /* anchors are not supported */
	while (*ref == '/' && at) {
		size_t n = 0;

		for (ref++; *ref && *ref != '/'; ref++) {
			char ch = *ref;

			if (ch == '~' && (ref[1] == '0' || ref[1] == '1'))
				ch = *++ref == '0' ? '~' : '/';
			if (n + 1 >= sizeof(seg))
				return NULL;
			seg[n++] = ch;
		}
		seg[n] = '\0';
		if (json_is_object(at)) {
			at = json_object_get(at, seg);
		} else if (json_is_array(at)) {
			char *end;
			unsigned long i = strtoul(seg, &end, 10);

			at = (n && !*end) ? json_array_get(at, i) : NULL;
		} else {
			at = NULL;
		}
	}
	return at;
}

static const struct pat *find_pat(const struct schema *s, const char *src)
{
	for (size_t i = 0; i < s->n_pats; i++)
		if (s->pats[i].src == src)
			return &s->pats[i];
	return NULL;
}

/* 1 when the (unanchored) pattern matches text, 0 when not. */
static int pat_match(const struct schema *s, const char *src,
		     const char *text)
{
	const struct pat *p = find_pat(s, src);

	return p && regexec(&p->re, text, 0, NULL, 0) == 0;
}

/* ---- loading: the schema's own check ---------------------------------- */

struct lint {
	struct schema *s;
	char *err;
	size_t errlen;
	char ptr[SCHEMA_MAX_PATH]; /* JSON pointer of the keyword at fault */
};

static int lint_fail(struct lint *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int lint_fail(struct lint *l, const char *fmt, ...)
{
	va_list ap;

	if (l->errlen) {
		snprintf(l->err, l->errlen, "%s: ", l->ptr[0] ? l->ptr : "/");
		va_start(ap, fmt);
		vsnprintf(l->err + strlen(l->err), l->errlen - strlen(l->err),
			  fmt, ap);
		va_end(ap);
	}
	return -1;
}

static size_t ptr_push(struct lint *l, const char *seg)
{
	size_t old = strlen(l->ptr);

	cat(l->ptr, sizeof(l->ptr), "/");
	for (; *seg; seg++) {
		if (*seg == '~')
			cat(l->ptr, sizeof(l->ptr), "~0");
		else if (*seg == '/')
			cat(l->ptr, sizeof(l->ptr), "~1");
		else
			cat(l->ptr, sizeof(l->ptr), "%c", *seg);
	}
	return old;
}

static int add_pat(struct lint *l, const char *src)
{
	struct schema *s = l->s;
	int rc;

	if (find_pat(s, src))
		return 0;
	if (s->n_pats == s->cap_pats) {
		size_t cap = s->cap_pats ? 2 * s->cap_pats : 8;
		struct pat *v = realloc(s->pats, cap * sizeof(*v));

		if (!v)
			return lint_fail(l, "out of memory");
		s->pats = v;
		s->cap_pats = cap;
	}
	rc = regcomp(&s->pats[s->n_pats].re, src, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char why[128];

		regerror(rc, &s->pats[s->n_pats].re, why, sizeof(why));
		return lint_fail(l, "pattern '%s' does not compile: %s", src,
				 why);
	}
	s->pats[s->n_pats++].src = src;
	return 0;
}

static int is_type_name(const json_t *t)
{
	static const char *const names[] = { "null", "boolean", "integer",
		"number", "string", "object", "array", NULL };
	const char *s = json_string_value(t);

	for (size_t i = 0; s && names[i]; i++)
		if (!strcmp(s, names[i]))
			return 1;
	return 0;
}

static int in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return 1;
	return 0;
}

static int lint_schema(struct lint *l, const json_t *sch, int depth);

/* Lints every value of a keyword that holds schemas by name (properties,
 * patternProperties, $defs) or by index (allOf, anyOf, oneOf). */
static int lint_children(struct lint *l, const char *kw, const json_t *v,
			 int depth)
{
	size_t old = ptr_push(l, kw);
	const char *k;
	json_t *sub;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, sub) {
			size_t o = ptr_push(l, k);

			if (!strcmp(kw, "patternProperties") &&
			    add_pat(l, k) < 0)
				return -1;
			if (lint_schema(l, sub, depth + 1) < 0)
				return -1;
			l->ptr[o] = '\0';
		}
	} else {
		json_array_foreach(v, i, sub) {
			char idx[24];
			size_t o;

			snprintf(idx, sizeof(idx), "%zu", i);
			o = ptr_push(l, idx);
			if (lint_schema(l, sub, depth + 1) < 0)
				return -1;
			l->ptr[o] = '\0';
		}
	}
	l->ptr[old] = '\0';
	return 0;
}

static int lint_keyword(struct lint *l, const char *k, const json_t *v,
			int depth)
{
	static const char *const unsupported[] = { "if", "then", "else",
		"dependentRequired", "dependentSchemas", "propertyNames",
		"prefixItems", "contains", "minContains", "maxContains",
		"uniqueItems", "unevaluatedProperties", "unevaluatedItems",
		"$dynamicRef", "$dynamicAnchor", "$recursiveRef",
		"$recursiveAnchor", "dependencies", NULL };
	static const char *const numbers[] = { "minimum", "maximum",
		"exclusiveMinimum", "exclusiveMaximum", NULL };
	static const char *const counts[] = { "minLength", "maxLength",
		"minItems", "maxItems", "minProperties", "maxProperties",
		NULL };
	static const char *const maps[] = { "properties",
		"patternProperties", "$defs", "definitions", NULL };
	static const char *const lists[] = { "allOf", "anyOf", "oneOf", NULL };
	static const char *const singles[] = { "additionalProperties", "items",
		"not", NULL };
	size_t i;
	json_t *e;

	if (in_list(k, unsupported))
		return lint_fail(l, "keyword '%s' is not supported by gtplan's "
				 "schema checker", k);
	if (!strcmp(k, "type")) {
		if (!json_is_string(v) &&
		    !(json_is_array(v) && json_array_size(v) > 0))
			return lint_fail(l, "'type' must be a type name or a "
					 "non-empty list of them");
		if (json_is_string(v) && !is_type_name(v))
			return lint_fail(l, "unknown type '%s'",
					 json_string_value(v));
		json_array_foreach(v, i, e)
			if (!is_type_name(e))
				return lint_fail(l, "unknown type in 'type'");
		return 0;
	}
	if (!strcmp(k, "enum") && !json_is_array(v))
		return lint_fail(l, "'enum' must be a list");
	if (in_list(k, numbers) && !json_is_number(v))
		return lint_fail(l, "'%s' must be a number", k);
	if (!strcmp(k, "multipleOf") &&
	    !(json_is_number(v) && json_number_value(v) > 0))
		return lint_fail(l, "'multipleOf' must be a number above 0");
	if (in_list(k, counts) &&
	    !(json_is_integer(v) && json_integer_value(v) >= 0))
		return lint_fail(l, "'%s' must be an integer, 0 or more", k);
	if (!strcmp(k, "pattern"))
		return json_is_string(v) ? add_pat(l, json_string_value(v)) :
		       lint_fail(l, "'pattern' must be a string");
	if (!strcmp(k, "required")) {
		if (!json_is_array(v))
			return lint_fail(l, "'required' must be a list");
		json_array_foreach(v, i, e)
			if (!json_is_string(e))
				return lint_fail(l, "'required' must list "
						 "key names");
	}
	if (!strcmp(k, "$ref")) {
		if (!json_is_string(v))
			return lint_fail(l, "'$ref' must be a string");
		if (!resolve_ref(l->s->root, json_string_value(v)))
			return lint_fail(l, "$ref '%s' does not resolve (only "
					 "local JSON pointers such as "
					 "\"#/$defs/name\" are supported)",
					 json_string_value(v));
	}
	if (in_list(k, maps)) {
		if (!json_is_object(v))
			return lint_fail(l, "'%s' must map names to schemas", k);
		return lint_children(l, k, v, depth);
	}
	if (in_list(k, lists)) {
		if (!json_is_array(v) || !json_array_size(v))
			return lint_fail(l, "'%s' must be a non-empty list of "
					 "schemas", k);
		return lint_children(l, k, v, depth);
	}
	if (in_list(k, singles)) {
		size_t old = ptr_push(l, k);

		if (json_is_array(v))
			return lint_fail(l, "'%s' must be one schema", k);
		if (lint_schema(l, v, depth + 1) < 0)
			return -1;
		l->ptr[old] = '\0';
	}
	return 0;
}

static int lint_schema(struct lint *l, const json_t *sch, int depth)
{
	const char *k;
	json_t *v;

	if (depth > SCHEMA_MAX_DEPTH)
		return lint_fail(l, "the schema nests deeper than %d levels",
				 SCHEMA_MAX_DEPTH);
	if (json_is_boolean(sch))
		return 0;
	if (!json_is_object(sch))
		return lint_fail(l, "a schema must be an object or a boolean");
	json_object_foreach((json_t *)sch, k, v)
		if (lint_keyword(l, k, v, depth) < 0)
			return -1;
	return 0;
}

struct schema *schema_load(const char *text, size_t len, char *err,
			   size_t errlen)
{
	struct schema *s = calloc(1, sizeof(*s));
	struct lint l = { .s = s, .err = err, .errlen = errlen };
	json_error_t jerr;

	if (errlen)
		err[0] = '\0';
	if (!s) {
		lint_fail(&l, "out of memory");
		return NULL;
	}
	s->root = json_loadb(text, len, JSON_REJECT_DUPLICATES |
				     JSON_DECODE_ANY, &jerr);
	if (!s->root) {
		if (errlen)
			snprintf(err, errlen, "line %d column %d: %s", jerr.line,
				 jerr.column, jerr.text);
		schema_free(s);
		return NULL;
	}
	if (lint_schema(&l, s->root, 0) < 0) {
		schema_free(s);
		return NULL;
	}
	return s;
}

void schema_free(struct schema *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_pats; i++)
		regfree(&s->pats[i].re);
	free(s->pats);
	json_decref(s->root);
	free(s);
}

/* ---- validation context ------------------------------------------------ */

struct ctx {
	const struct schema *s;
	struct diag_list *diags; /* NULL while probing a branch */
	const json_t *outer;     /* the schema given for this value's key */
	int depth;
	int limit_reported;      /* a cycle or the depth limit, once */
	/* The schemas being applied, innermost last: a schema that comes
	 * back to the same value without reaching into it is a cycle. */
	struct {
		const json_t *sch;
		const struct cfg_node *n;
	} stack[SCHEMA_MAX_DEPTH];
	char path[SCHEMA_MAX_PATH];
	size_t plen;
};

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

/* Reports a finding about the value at the current path; NULL (and
 * nothing reported) while probing. */
static struct diag *report(struct ctx *c, const char *code,
			   struct diag_loc loc, const struct cfg_node *n,
			   const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static struct diag *report(struct ctx *c, const char *code,
			   struct diag_loc loc, const struct cfg_node *n,
			   const char *fmt, ...)
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

/* ---- describing schemas in words ---------------------------------------- */

struct phrases {
	char v[MAX_PHRASES][160];
	int n;
};

static void ph_add(struct phrases *p, const char *s)
{
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->v[i], s))
			return;
	if (p->n < MAX_PHRASES)
		snprintf(p->v[p->n++], sizeof(p->v[0]), "%s", s);
}

/* "a, b or c" */
static void ph_join(char *buf, size_t size, const struct phrases *p)
{
	buf[0] = '\0';
	for (int i = 0; i < p->n; i++)
		cat(buf, size, "%s%s", i == 0 ? "" :
		    i == p->n - 1 ? " or " : ", ", p->v[i]);
}

/* An integral bound from minimum/exclusiveMinimum (lower) or
 * maximum/exclusiveMaximum; 1 when there is one. */
static int int_bound(const json_t *sch, int lower, long long *out)
{
	const json_t *inc = json_object_get(sch, lower ? "minimum" : "maximum");
	const json_t *exc = json_object_get(sch, lower ? "exclusiveMinimum" :
					    "exclusiveMaximum");
	double v;

	if (json_is_number(inc)) {
		v = lower ? ceil(json_number_value(inc)) :
		    floor(json_number_value(inc));
	} else if (json_is_number(exc)) {
		v = json_number_value(exc);
		v = lower ? floor(v) + 1 : ceil(v) - 1;
	} else {
		return 0;
	}
	if (!(v > -9e18 && v < 9e18))
		return 0;
	*out = (long long)v;
	return 1;
}

static void number_phrase(char *buf, size_t size, const json_t *sch,
			  const char *type)
{
	const json_t *emin = json_object_get(sch, "exclusiveMinimum");
	const json_t *min = json_object_get(sch, "minimum");
	long long lo, hi;
	int has_lo, has_hi;
	char a[64];

	if (!strcmp(type, "integer")) {
		has_lo = int_bound(sch, 1, &lo);
		has_hi = int_bound(sch, 0, &hi);
		if (has_lo && has_hi)
			snprintf(buf, size, "an integer from %lld to %lld", lo,
				 hi);
		else if (has_lo && lo == 1)
			snprintf(buf, size, "a positive integer");
		else if (has_lo && lo == 0)
			snprintf(buf, size, "a non-negative integer");
		else if (has_lo)
			snprintf(buf, size, "an integer of at least %lld", lo);
		else if (has_hi)
			snprintf(buf, size, "an integer of at most %lld", hi);
		else
			snprintf(buf, size, "an integer");
		return;
	}
	if (json_is_number(emin) && json_number_value(emin) == 0) {
		snprintf(buf, size, "a positive number");
	} else if (json_is_number(min) && json_number_value(min) == 0) {
		snprintf(buf, size, "a non-negative number");
	} else if (json_is_number(min)) {
		jshow(a, sizeof(a), min);
		snprintf(buf, size, "a number of at least %s", a);
	} else if (json_is_number(emin)) {
		jshow(a, sizeof(a), emin);
		snprintf(buf, size, "a number above %s", a);
	} else {
		snprintf(buf, size, "a number");
	}
}

static void type_phrase(char *buf, size_t size, const json_t *sch,
			const char *type)
{
	if (!strcmp(type, "integer") || !strcmp(type, "number"))
		number_phrase(buf, size, sch, type);
	else if (!strcmp(type, "boolean"))
		snprintf(buf, size, "true or false");
	else if (!strcmp(type, "null"))
		snprintf(buf, size, "null");
	else if (!strcmp(type, "string"))
		snprintf(buf, size, "a string");
	else if (!strcmp(type, "object"))
		snprintf(buf, size, "a map");
	else
		snprintf(buf, size, "a list");
}

static void describe(const struct schema *s, const json_t *sch,
		     struct phrases *p, int *budget)
{
	const json_t *t = json_object_get(sch, "type");
	const json_t *en = json_object_get(sch, "enum");
	const json_t *k = json_object_get(sch, "const");
	const json_t *any = json_object_get(sch, "anyOf");
	const json_t *ref = json_object_get(sch, "$ref");
	char buf[160];
	json_t *e;
	size_t i;

	if (--*budget < 0 || !json_is_object(sch))
		return;
	if (!any)
		any = json_object_get(sch, "oneOf");
	if (k) {
		jshow(buf, sizeof(buf), k);
		ph_add(p, buf);
	} else if (json_is_array(en)) {
		snprintf(buf, sizeof(buf), "one of ");
		json_array_foreach(en, i, e) {
			char v[64];

			jshow(v, sizeof(v), e);
			cat(buf, sizeof(buf), "%s%s", i ? ", " : "", v);
		}
		ph_add(p, buf);
	} else if (json_is_string(t)) {
		type_phrase(buf, sizeof(buf), sch, json_string_value(t));
		ph_add(p, buf);
	} else if (json_is_array(t)) {
		json_array_foreach(t, i, e) {
			type_phrase(buf, sizeof(buf), sch,
				    json_string_value(e));
			ph_add(p, buf);
		}
	} else if (json_is_array(any)) {
		json_array_foreach(any, i, e)
			describe(s, e, p, budget);
	} else if (json_is_string(ref)) {
		describe(s, resolve_ref(s->root, json_string_value(ref)), p,
			 budget);
	}
}

/* What the schema wants, in words ("a positive integer or null"). */
static void want(char *buf, size_t size, const struct schema *s,
		 const json_t *sch)
{
	struct phrases p = { .n = 0 };
	int budget = WALK_BUDGET;

	describe(s, sch, &p, &budget);
	if (!p.n)
		ph_add(&p, "a valid value");
	ph_join(buf, size, &p);
}

/* An example value for hints: the schema's (or its key's) first example,
 * else its default. */
static int example(const struct ctx *c, const json_t *sch, char *buf,
		   size_t size)
{
	const json_t *from[2] = { sch, c->outer };

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 2; i++) {
			const json_t *v;

			if (!json_is_object(from[i]))
				continue;
			v = pass == 0 ?
			    json_array_get(json_object_get(from[i], "examples"),
					   0) :
			    json_object_get(from[i], "default");
			if (v && !json_is_null(v)) {
				jshow(buf, size, v);
				return 1;
			}
		}
	return 0;
}

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

static int type_fits(const json_t *t, enum cfg_kind k)
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

static int fits_walk(const struct schema *s, const json_t *sch,
		     enum cfg_kind k, int *budget)
{
	const json_t *v;
	json_t *e;
	size_t i;
	int any;

	if (--*budget < 0 || !json_is_object(sch))
		return !json_is_false(sch);
	v = json_object_get(sch, "$ref");
	if (v && !fits_walk(s, resolve_ref(s->root, json_string_value(v)), k,
			    budget))
		return 0;
	v = json_object_get(sch, "type");
	if (v && !type_fits(v, k))
		return 0;
	v = json_object_get(sch, "const");
	if (v && !json_fits_kind(v, k))
		return 0;
	v = json_object_get(sch, "enum");
	if (v) {
		any = 0;
		json_array_foreach(v, i, e)
			any |= json_fits_kind(e, k);
		if (!any)
			return 0;
	}
	for (int w = 0; w < 2; w++) {
		v = json_object_get(sch, w ? "oneOf" : "anyOf");
		if (!v)
			continue;
		any = 0;
		json_array_foreach(v, i, e)
			any |= fits_walk(s, e, k, budget);
		if (!any)
			return 0;
	}
	json_array_foreach(json_object_get(sch, "allOf"), i, e)
		if (!fits_walk(s, e, k, budget))
			return 0;
	return 1;
}

/* 1 when a value of kind k could satisfy sch as far as types go (type,
 * enum and const members, through $ref and the combinators). */
static int fits(const struct schema *s, const json_t *sch, enum cfg_kind k)
{
	int budget = WALK_BUDGET;

	return fits_walk(s, sch, k, &budget);
}

/* ---- findings -------------------------------------------------------- */

/* GT200: the value's type is not one the schema takes. */
static int type_error(struct ctx *c, const json_t *sch,
		      const struct cfg_node *n)
{
	char w[WORDS], got[WORDS], ex[WORDS];
	struct diag *d;
	int has_ex;

	if (!c->diags)
		return 1;
	want(w, sizeof(w), c->s, sch);
	ngot(got, sizeof(got), n);
	d = report(c, "GT200", n->loc, n, "expected %s, got %s", w, got);
	has_ex = example(c, sch, ex, sizeof(ex));
	if (n->kind == CFG_STR && n->text) {
		struct cfg_node t = { .kind = CFG_STR };

		cfg_scalar_type(&t, n->text);
		if (t.kind != CFG_STR && t.kind != CFG_NULL &&
		    fits(c->s, sch, t.kind)) {
			diag_hint(d, "remove the quotes: in YAML \"%s\" is a "
				  "string, %s is %s", n->text, n->text,
				  t.kind == CFG_INT ? "an integer" :
				  t.kind == CFG_FLOAT ? "a number" :
				  "a boolean");
			return 1;
		}
	}
	if (n->kind == CFG_FLOAT && isfinite(n->v.f) &&
	    n->v.f == floor(n->v.f) && fabs(n->v.f) < 9e18 &&
	    fits(c->s, sch, CFG_INT)) {
		diag_hint(d, "write %lld without the decimal point: %s is a "
			  "float, not an integer", (long long)n->v.f,
			  n->text ? n->text : "the value");
		return 1;
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

static int check_number(struct ctx *c, const json_t *sch,
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

	nshow(got, sizeof(got), n);
	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		const json_t *b = json_object_get(sch, bounds[i].kw);
		struct diag *d;
		int r;

		if (!b)
			continue;
		r = num_cmp(n, b);
		if (r != 2 && (r < bounds[i].bad_lo || r > bounds[i].bad_hi))
			continue;
		jshow(lim, sizeof(lim), b);
		d = report(c, "GT201", n->loc, n, "must be %s %s, got %s",
			   bounds[i].words, lim, got);
		if (!d)
			return 1;
		if (t && type_fits(t, n->kind))
			number_phrase(w, sizeof(w), sch,
				      type_fits(t, CFG_FLOAT) ? "number" :
				      "integer");
		else
			snprintf(w, sizeof(w), "a value %s %s",
				 bounds[i].words, lim);
		if (example(c, sch, ex, sizeof(ex)))
			diag_hint(d, "use %s such as %s", w, ex);
		else
			diag_hint(d, "use %s", w);
		return 1;
	}
	if (m) {
		double q = (n->kind == CFG_INT ? (double)n->v.i : n->v.f) /
			   json_number_value(m);
		int bad;

		if (n->kind == CFG_INT && json_is_integer(m))
			bad = n->v.i % json_integer_value(m) != 0;
		else
			bad = !isfinite(q) || q != floor(q);
		if (bad) {
			struct diag *d;

			jshow(lim, sizeof(lim), m);
			d = report(c, "GT205", n->loc, n,
				   "must be a multiple of %s, got %s", lim, got);
			if (n->kind == CFG_INT && json_is_integer(m)) {
				long long k = json_integer_value(m);
				long long lo = n->v.i / k * k;

				if (n->v.i < 0)
					lo -= k;
				if (lo <= LLONG_MAX - k)
					diag_hint(d, "use a multiple of %s such "
						  "as %lld or %lld", lim, lo,
						  lo + k);
				else
					diag_hint(d, "use a multiple of %s such "
						  "as %lld", lim, lo);
			} else {
				diag_hint(d, "use a multiple of %s", lim);
			}
			return 1;
		}
	}
	return 0;
}

static size_t utf8_count(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static int check_string(struct ctx *c, const json_t *sch,
			const struct cfg_node *n)
{
	const char *text = n->text ? n->text : "";
	const json_t *lo = json_object_get(sch, "minLength");
	const json_t *hi = json_object_get(sch, "maxLength");
	const json_t *pat = json_object_get(sch, "pattern");
	size_t len = utf8_count(text);
	char got[WORDS], ex[WORDS];
	struct diag *d;

	nshow(got, sizeof(got), n);
	if (lo && len < (size_t)json_integer_value(lo)) {
		d = report(c, "GT205", n->loc, n, "%s is %zu characters long; "
			   "at least %" JSON_INTEGER_FORMAT " are needed", got,
			   len, json_integer_value(lo));
		diag_hint(d, "use a longer value");
		return 1;
	}
	if (hi && len > (size_t)json_integer_value(hi)) {
		d = report(c, "GT205", n->loc, n, "%s is %zu characters long; "
			   "at most %" JSON_INTEGER_FORMAT " are allowed", got,
			   len, json_integer_value(hi));
		diag_hint(d, "use a shorter value");
		return 1;
	}
	if (pat && !pat_match(c->s, json_string_value(pat), text)) {
		d = report(c, "GT205", n->loc, n, "%s does not match the "
			   "pattern %s", got, json_string_value(pat));
		if (example(c, sch, ex, sizeof(ex)))
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

static int check_choice(struct ctx *c, const json_t *sch,
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

	nshow(got, sizeof(got), n);
	if (k && !node_equals(n, k)) {
		jshow(list, sizeof(list), k);
		d = report(c, "GT202", n->loc, n, "must be %s, got %s", list,
			   got);
		diag_hint(d, "use %s", list);
		return 1;
	}
	if (!en)
		return 0;
	json_array_foreach(en, i, e) {
		char v[64];

		if (node_equals(n, e))
			return 0;
		jshow(v, sizeof(v), e);
		cat(list, sizeof(list), "%s%s", i ? ", " : "", v);
		if (json_is_string(e) && nn < sizeof(names) / sizeof(names[0]))
			names[nn++] = json_string_value(e);
	}
	d = report(c, "GT202", n->loc, n, "%s is not one of the allowed "
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
		d = report(c, "GT205", kid->key_loc, NULL, "unknown key '%s' "
			   "%s", kid->key, where);
		errs = 1;
	} else {
		d = report(c, "GT203", kid->key_loc, NULL, "unknown key '%s'",
			   kid->key);
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
			cat(list, sizeof(list), "%s%s", i ? ", " : "",
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
		has_ex = sub && example(c, sub, ex, sizeof(ex));
		c->outer = outer;
		if (json_is_string(desc)) {
			char s[WORDS - 8];

			first_sentence(s, sizeof(s), json_string_value(desc));
			snprintf(about, sizeof(about), " (%s)", s);
		}
		old = path_push(c, key);
		d = report(c, "GT204", n->key_loc, NULL,
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
		d = report(c, "GT205", n->loc, n, "must have at least %"
			   JSON_INTEGER_FORMAT " %s, got %zu",
			   json_integer_value(lo), what, n->n);
		diag_hint(d, "add %s", what);
		return 1;
	}
	if (hi && (long long)n->n > json_integer_value(hi)) {
		d = report(c, "GT205", n->loc, n, "must have at most %"
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
			if (pat_match(c->s, pk, kid->key)) {
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
		} else if (fits(c->s, b, n->kind)) {
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

		want(w, sizeof(w), c->s, sch);
		d = report(c, "GT205", n->loc, n, "matches more than one of "
			   "the allowed forms (%ld and %ld of %s)", first + 1,
			   second + 1, w);
		diag_hint(d, "change the value so that exactly one form fits");
		return 1;
	}
	if (!n_fit)
		return type_error(c, sch, n);
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

			want(w, sizeof(w), c->s, not);
			nshow(got, sizeof(got), n);
			d = report(c, "GT205", n->loc, n, "must not be %s, got "
				   "%s", w, got);
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
	int errs = 0;

	if (ref)
		errs += check(c, resolve_ref(c->s->root,
					     json_string_value(ref)), n);
	if (type && !type_fits(type, n->kind))
		return errs + type_error(c, sch, n);
	errs += check_choice(c, sch, n);
	switch (n->kind) {
	case CFG_INT:
	case CFG_FLOAT:
		errs += check_number(c, sch, n);
		break;
	case CFG_STR:
		errs += check_string(c, sch, n);
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
	return errs + check_logic(c, sch, n);
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
		struct diag *d = report(c, "GT205", n->loc, n, "no value is "
					"allowed here");

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
				report(c, "GT205", n->loc, n, "the schema nests "
				       "deeper than %d levels here",
				       SCHEMA_MAX_DEPTH) :
				report(c, "GT205", n->loc, n, "the schema refers "
				       "back to itself here without reaching "
				       "into the value");

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

int schema_validate(const struct schema *s, const struct cfg_node *root,
		    struct diag_list *diags)
{
	struct ctx c = { .s = s, .diags = diags, .outer = s->root };

	if (!root)
		return 0;
	return check(&c, s->root, root);
}

int schema_check_config(const struct cfg_node *root, struct diag_list *diags)
{
	char err[256];
	struct schema *s = schema_load(gtplan_config_schema,
				       gtplan_config_schema_len, err,
				       sizeof(err));
	int errs;

	if (!s) {
		fprintf(stderr, "gtplan: the built-in config schema is broken: "
			"%s\n", err);
		return -1;
	}
	errs = schema_validate(s, root, diags);
	schema_free(s);
	return errs;
}

const char *schema_description(const struct schema *s, const char *dotted)
{
	const json_t *sch = s->root;
	char seg[256];

	while (sch && *dotted) {
		const char *dot = strchr(dotted, '.');
		size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
		const json_t *next, *ref;
		const char *pk;
		json_t *ps;
		int hops = 0;

		if (n >= sizeof(seg))
			return NULL;
		memcpy(seg, dotted, n);
		seg[n] = '\0';
		dotted += n + (dot != NULL);
		while ((ref = json_object_get(sch, "$ref")) &&
		       !json_object_get(sch, "properties") &&
		       !json_object_get(sch, "items") && hops++ < FIT_DEPTH)
			sch = resolve_ref(s->root, json_string_value(ref));
		next = json_object_get(json_object_get(sch, "properties"), seg);
		json_object_foreach(json_object_get(sch, "patternProperties"),
				    pk, ps)
			if (!next && pat_match(s, pk, seg))
				next = ps;
		if (!next && seg[0] >= '0' && seg[0] <= '9')
			next = json_object_get(sch, "items");
		if (!next && json_is_object(json_object_get(sch,
					    "additionalProperties")))
			next = json_object_get(sch, "additionalProperties");
		sch = next;
	}
	for (int hops = 0; sch && hops < FIT_DEPTH; hops++) {
		const json_t *d = json_object_get(sch, "description");

		if (json_is_string(d))
			return json_string_value(d);
		sch = resolve_ref(s->root, json_string_value(
				  json_object_get(sch, "$ref")));
	}
	return NULL;
}
