/*
 * diag: sources, locations and diagnostics.
 *
 * Every finding gtplan reports is a `struct diag`: a stable rule code, a
 * severity, a location (`src:line:col`, 1-based), the config path it concerns,
 * a plain-words message, a hint, and optional notes at other locations.
 * This module owns every output format (text with source excerpt and caret,
 * JSON, SARIF 2.1.0); nothing else prints diagnostics.
 *
 * Ownership: a diag_list owns its diagnostics and every string in them.
 * A src_set owns the text of every source it registered. Functions that
 * return `const char *` return borrowed pointers.
 */
#ifndef GTPLAN_DIAG_H
#define GTPLAN_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* ---- sources -------------------------------------------------------- */

/* One input text a location can point into: a YAML file, or the command
 * line (all overrides joined by single spaces, as one line). */
struct src_file {
	char *name;   /* as given by the user (relative paths stay relative) */
	char *text;   /* NUL-terminated; may be NULL when unreadable */
	size_t len;
};

struct src_set {
	struct src_file *v;
	size_t n, cap;
};

void src_set_init(struct src_set *s);
void src_set_release(struct src_set *s);
/* Registers a source, taking ownership of `text` (may be NULL). Returns its
 * id (>= 0), or -1 when out of memory (text is freed then). */
int src_add(struct src_set *s, const char *name, char *text, size_t len);
const char *src_name(const struct src_set *s, int id);
/* Points *start at line `line` (1-based) of source `id` and sets *len to its
 * length without the newline. Returns 0, or -1 when there is no such line. */
int src_line(const struct src_set *s, int id, int line, const char **start,
	     size_t *len);

/* ---- locations ------------------------------------------------------ */

/* src < 0 means "no location" (a finding about the whole config). */
struct diag_loc {
	int src;
	int line; /* 1-based */
	int col;  /* 1-based, in code points; a tab counts as one */
};

#define DIAG_NOLOC ((struct diag_loc){ -1, 0, 0 })

/* ---- rules ---------------------------------------------------------- */

enum diag_severity { DIAG_NOTE = 0, DIAG_WARNING = 1, DIAG_ERROR = 2 };

/* The rule table: one row per stable code (see rules.def). */
struct diag_rule {
	const char *code;        /* "GT301" */
	const char *name;        /* "world-not-divisible" */
	enum diag_severity severity;
	const char *summary;     /* one line, for SARIF shortDescription */
	const char *explanation; /* the long story, for `gtplan explain CODE` */
};

/* NULL when no rule has this code (case-insensitive). */
const struct diag_rule *diag_rule_find(const char *code);
size_t diag_rule_count(void);
const struct diag_rule *diag_rule_at(size_t i);

/* ---- diagnostics ---------------------------------------------------- */

struct diag_note {
	struct diag_loc loc;
	char *msg;
};

struct diag {
	const struct diag_rule *rule;
	enum diag_severity severity;
	struct diag_loc loc;
	char *path;  /* config path the finding concerns ("policy.x.y"), or NULL */
	char *msg;
	char *hint;  /* NULL when there is none */
	struct diag_note *notes;
	size_t n_notes;
	size_t seq;  /* insertion order, for a stable sort */
};

/* Hostile-input limit: at most this many diagnostics are kept; the rest are
 * counted in n_dropped and reported as one line. */
#define DIAG_MAX_COUNT 10000

struct diag_list {
	struct diag *v;
	size_t n, cap;
	size_t n_dropped;
	const struct src_set *srcs; /* borrowed, for excerpts and names */
};

void diag_list_init(struct diag_list *l, const struct src_set *srcs);
void diag_list_release(struct diag_list *l);

/* Adds a finding of rule `code` (which must be in the table; its default
 * severity is used) at `loc` about config `path` (may be NULL). Returns the
 * new diag so a hint and notes can be attached, or NULL when the list is full
 * or out of memory (the hint/note functions accept NULL and do nothing). */
struct diag *diag_add(struct diag_list *l, const char *code,
		      struct diag_loc loc, const char *path, const char *fmt,
		      ...) __attribute__((format(printf, 5, 6)));
void diag_hint(struct diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void diag_note(struct diag *d, struct diag_loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

size_t diag_count(const struct diag_list *l, enum diag_severity sev);
/* Sorts by (source name, line, col, code, insertion order). */
void diag_sort(struct diag_list *l);

/* Output. Each returns 0, or -1 on a write error.
 * Text: `file:line:col: error[CODE]: message`, the source line, a caret,
 * `hint: ...`, notes, then a summary line ("2 errors, 1 warning").
 * JSON: {"format":"gtplan-diagnostics/1", "diagnostics":[...], "summary":{}}.
 * SARIF: 2.1.0 with rules, results and physical locations. */
int diag_print_text(FILE *f, const struct diag_list *l, int color);
int diag_print_json(FILE *f, const struct diag_list *l);
int diag_print_sarif(FILE *f, const struct diag_list *l);

/* printf into a fresh heap string; NULL when out of memory. */
char *diag_vfmt(const char *fmt, va_list ap);
char *diag_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
