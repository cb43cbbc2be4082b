/*
 * schema_int: internal, not part of the public API. What the parts of the
 * schema checker share:
 *   schema_load.c   loading the schema and its own check; $refs,
 *                   patterns and descriptions
 *   schema_words.c  values and schemas described in words, for messages
 *   schema_value.c  the checks of one value: type, numbers, strings,
 *                   enum and const
 *   schema_ints.c   floats taken as integers: GT206 and settling them
 *   schema.c        validation: maps, lists, combinators, the entry points
 * Every name here starts with `sch_`.
 */
#ifndef GTPLAN_SCHEMA_INT_H
#define GTPLAN_SCHEMA_INT_H

#include <jansson.h>
#include <regex.h>
#include <stddef.h>

#include "schema.h"

#define WORDS     512 /* bytes of one phrase built for a message */
#define MAX_PHRASES 12 /* alternatives listed in "expected A, B or C" */
/* A maximum this large only refuses absurd values (every size's limit,
 * schema.h): messages about the type do not spell it out. */
#define SCH_QUIET_MAX SCHEMA_MAX_SIZE
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

/* The floats one validation took as integers (schema_ints.c). */
struct sch_ints {
	struct sch_int_seen *v;
	size_t n, cap;
	int oom;                 /* a note was lost: the result is unusable */
};

/* One validation (schema.c). */
struct ctx {
	const struct schema *s;
	struct diag_list *diags; /* NULL while probing a branch */
	const json_t *outer;     /* the schema given for this value's key */
	int depth;
	int limit_reported;      /* a cycle or the depth limit, once */
	int past_max;            /* integers reported above their maximum */
	struct sch_ints *ints;   /* where floats taken as integers go, or
				    NULL */
	/* The schemas being applied, innermost last: a schema that comes
	 * back to the same value without reaching into it is a cycle. */
	struct {
		const json_t *sch;
		const struct cfg_node *n;
	} stack[SCHEMA_MAX_DEPTH];
	char path[SCHEMA_MAX_PATH];
	size_t plen;
};

/* ---- schema_load.c -------------------------------------------------- */

/* The schema a local $ref ("#", "#/$defs/x", "#/properties/a~1b") points
 * at, or NULL. */
const json_t *sch_resolve_ref(const json_t *root, const char *ref);
/* 1 when the (unanchored) pattern matches text, 0 when not. */
int sch_pat_match(const struct schema *s, const char *src, const char *text);

/* ---- schema_words.c ------------------------------------------------- */

/* Appends printf output to buf (NUL-terminated, `size` bytes), cutting it
 * short when full. */
void sch_cat(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A JSON value as it would be written in the config. */
void sch_show_json(char *buf, size_t size, const json_t *j);
/* A config value as written ("four" quoted, 48.0, true, null). */
void sch_show_value(char *buf, size_t size, const struct cfg_node *n);
/* "string \"four\"", "integer 0", "null", "a map": what the value is. */
void sch_show_typed(char *buf, size_t size, const struct cfg_node *n);
/* The first sentence of a description, without its final period. */
void sch_first_sentence(char *buf, size_t size, const char *s);
/* "an integer from 1 to 8", "a positive number", ...: what the bounds of
 * sch allow for `type` ("integer" or "number"). */
void sch_number_phrase(char *buf, size_t size, const json_t *sch,
		       const char *type);
/* What the schema wants, in words ("a positive integer or null"). */
void sch_want(char *buf, size_t size, const struct schema *s,
	      const json_t *sch);
/* An example value for hints: the schema's (or its key's) first example,
 * else its default. 1 when there is one. */
int sch_example(const struct ctx *c, const json_t *sch, char *buf,
		size_t size);

/* ---- schema_value.c ------------------------------------------------- */

/* 1 when `type` (a name or a list of names) takes values of kind k. */
int sch_type_fits(const json_t *t, enum cfg_kind k);
/* 1 when `type` takes the value n: its kind fits, or n is a float JSON
 * Schema counts as an integer (sch_integral_float) and `type` takes
 * integers. */
int sch_type_takes(const json_t *t, const struct cfg_node *n);
/* 1 when the value n could satisfy sch as far as types go (type, enum
 * and const members, through $ref and the combinators). */
int sch_fits(const struct schema *s, const json_t *sch,
	     const struct cfg_node *n);
/* GT200: the value's type is not one the schema takes. Returns 1. */
int sch_type_error(struct ctx *c, const json_t *sch,
		   const struct cfg_node *n);
/* Each returns the number of errors of n against sch's keywords for
 * numbers (bounds, multipleOf), strings (lengths, pattern) and for
 * enum and const. */
int sch_check_number(struct ctx *c, const json_t *sch,
		     const struct cfg_node *n);
int sch_check_string(struct ctx *c, const json_t *sch,
		     const struct cfg_node *n);
int sch_check_choice(struct ctx *c, const json_t *sch,
		     const struct cfg_node *n);

/* ---- schema_ints.c -------------------------------------------------- */

/* 1 when n is a float that is an integer for JSON Schema and for gtplan:
 * finite, a zero fractional part, a magnitude of at most 2^53. */
int sch_integral_float(const struct cfg_node *n);
/* Notes that n, a float, passed a schema as an integer (at c's path), when
 * c reports and collects; a lost note sets c->ints->oom. */
void sch_ints_note(struct ctx *c, const struct cfg_node *n);
/* Reports GT206 once per noted value, in the order seen. Returns 0, or -1
 * when a note was lost (out of memory). */
int sch_ints_report(struct sch_ints *x, struct diag_list *diags);
/* Makes every noted node of the tree at root the integer node its value
 * written without the decimal point gives. Returns 0 or -1 (out of
 * memory). */
int sch_ints_settle(struct sch_ints *x, struct cfg_node *root);
void sch_ints_release(struct sch_ints *x);

/* ---- schema.c ------------------------------------------------------- */

/* Reports a finding about the value at the current path; NULL (and
 * nothing reported) while probing. */
struct diag *sch_report(struct ctx *c, const char *code, struct diag_loc loc,
			const struct cfg_node *n, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
