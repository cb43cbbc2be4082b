/*
 * schema_words: values and schemas in plain words, for messages and
 * hints: a value as it is written ("four" quoted, 48.0), what a schema
 * wants ("a positive integer or null"), an example from the schema.
 */
#include "schema_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_STR  48  /* characters of a string value quoted in a message */

/* ---- small text helpers ---------------------------------------------- */

void sch_cat(char *buf, size_t size, const char *fmt, ...)
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

void sch_show_json(char *buf, size_t size, const json_t *j)
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

void sch_show_value(char *buf, size_t size, const struct cfg_node *n)
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

void sch_show_typed(char *buf, size_t size, const struct cfg_node *n)
{
	char v[WORDS - 16];

	sch_show_value(v, sizeof(v), n);
	if (n->kind == CFG_NULL || n->kind == CFG_MAP || n->kind == CFG_SEQ)
		snprintf(buf, size, "%s", v);
	else
		snprintf(buf, size, "%s %s", cfg_kind_name(n->kind), v);
}

void sch_first_sentence(char *buf, size_t size, const char *s)
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
		sch_cat(buf, size, "%s%s", i == 0 ? "" :
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

void sch_number_phrase(char *buf, size_t size, const json_t *sch,
		       const char *type)
{
	const json_t *emin = json_object_get(sch, "exclusiveMinimum");
	const json_t *min = json_object_get(sch, "minimum");
	long long lo, hi;
	int has_lo, has_hi;
	char a[64];

	if (!strcmp(type, "integer")) {
		has_lo = int_bound(sch, 1, &lo);
		has_hi = int_bound(sch, 0, &hi) && hi < SCH_QUIET_MAX;
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
		sch_show_json(a, sizeof(a), min);
		snprintf(buf, size, "a number of at least %s", a);
	} else if (json_is_number(emin)) {
		sch_show_json(a, sizeof(a), emin);
		snprintf(buf, size, "a number above %s", a);
	} else {
		snprintf(buf, size, "a number");
	}
}

static void type_phrase(char *buf, size_t size, const json_t *sch,
			const char *type)
{
	if (!strcmp(type, "integer") || !strcmp(type, "number"))
		sch_number_phrase(buf, size, sch, type);
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
		sch_show_json(buf, sizeof(buf), k);
		ph_add(p, buf);
	} else if (json_is_array(en)) {
		snprintf(buf, sizeof(buf), "one of ");
		json_array_foreach(en, i, e) {
			char v[64];

			sch_show_json(v, sizeof(v), e);
			sch_cat(buf, sizeof(buf), "%s%s", i ? ", " : "", v);
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
		describe(s, sch_resolve_ref(s->root, json_string_value(ref)),
			 p, budget);
	}
}

void sch_want(char *buf, size_t size, const struct schema *s,
	      const json_t *sch)
{
	struct phrases p = { .n = 0 };
	int budget = WALK_BUDGET;

	describe(s, sch, &p, &budget);
	if (!p.n)
		ph_add(&p, "a valid value");
	ph_join(buf, size, &p);
}

int sch_example(const struct ctx *c, const json_t *sch, char *buf,
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
				sch_show_json(buf, size, v);
				return 1;
			}
		}
	return 0;
}
