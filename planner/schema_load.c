/*
 * schema_load: the schema itself. Loading checks that it uses only the
 * keywords schema.h lists, with well-formed values, that every $ref
 * resolves and that every pattern compiles; after that the checker can
 * follow $refs and match patterns without checking again.
 */
#include "schema_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIT_DEPTH 32  /* $ref hops followed for a description */

/* ---- JSON pointers and patterns -------------------------------------- */

const json_t *sch_resolve_ref(const json_t *root, const char *ref)
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

int sch_pat_match(const struct schema *s, const char *src, const char *text)
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

	sch_cat(l->ptr, sizeof(l->ptr), "/");
	for (; *seg; seg++) {
		if (*seg == '~')
			sch_cat(l->ptr, sizeof(l->ptr), "~0");
		else if (*seg == '/')
			sch_cat(l->ptr, sizeof(l->ptr), "~1");
		else
			sch_cat(l->ptr, sizeof(l->ptr), "%c", *seg);
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

/* Checks keyword k (value v) of a schema: refuses what gtplan's checker
 * does not support and values of the wrong form, and descends into
 * subschemas. Over 80 lines on purpose: one check per keyword family, read
 * as a table of JSON Schema's keywords. */
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
		if (!sch_resolve_ref(l->s->root, json_string_value(v)))
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

/* 1 when b is {"$ref": one of the editor-only forms (schema.h)}. */
static int editor_only(const json_t *b)
{
	const char *ref = json_string_value(json_object_get(b, "$ref"));

	return json_object_size(b) == 1 && ref &&
	       (!strcmp(ref, SCHEMA_INTERPOLATION) ||
		!strcmp(ref, SCHEMA_CHILD_RECIPE));
}

/* src's keywords into dst where dst has none; maps merge deeply. */
static void merge_into(json_t *dst, json_t *src, int depth)
{
	const char *k;
	json_t *v;

	json_object_foreach(src, k, v) {
		json_t *d = json_object_get(dst, k);

		if (json_is_object(d) && json_is_object(v) &&
		    depth < SCHEMA_MAX_DEPTH)
			merge_into(d, v, depth + 1);
		else if (!d)
			json_object_set(dst, k, v);
	}
}

/* The editor-only anyOf branches out (schema.h): a schema whose anyOf
 * keeps one branch becomes that branch merged into it, as it would be
 * written for resolved configs only, so that findings read the same. */
static void drop_editor_forms(json_t *j, int depth)
{
	const char *k;
	json_t *v, *any;

	if (depth > SCHEMA_MAX_DEPTH)
		return;
	if (json_is_array(j)) {
		for (size_t i = 0; i < json_array_size(j); i++)
			drop_editor_forms(json_array_get(j, i), depth + 1);
		return;
	}
	if (!json_is_object(j))
		return;
	any = json_object_get(j, "anyOf");
	for (size_t i = 0; json_is_array(any) && i < json_array_size(any);)
		if (editor_only(json_array_get(any, i)))
			json_array_remove(any, i);
		else
			i++;
	if (json_is_array(any) && json_array_size(any) == 1) {
		json_t *only = json_incref(json_array_get(any, 0));

		json_object_del(j, "anyOf");
		if (json_is_object(only))
			merge_into(j, only, depth);
		json_decref(only);
	}
	json_object_foreach(j, k, v)
		drop_editor_forms(v, depth + 1);
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
	drop_editor_forms(s->root, 0);
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

/* ---- descriptions ------------------------------------------------------ */

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
			sch = sch_resolve_ref(s->root, json_string_value(ref));
		next = json_object_get(json_object_get(sch, "properties"), seg);
		json_object_foreach(json_object_get(sch, "patternProperties"),
				    pk, ps)
			if (!next && sch_pat_match(s, pk, seg))
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
		sch = sch_resolve_ref(s->root, json_string_value(
				      json_object_get(sch, "$ref")));
	}
	return NULL;
}
