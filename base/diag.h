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
 *
 * Lines and columns follow libyaml's marks (plus one): a line ends at \n,
 * \r\n, a lone \r, NEL, LS or PS; a column counts code points, a tab as
 * one; a UTF-8 byte-order mark is not part of line 1.
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
	size_t n_lines;      /* the empty rest after a final break is a line */
	size_t *line_marks;  /* private: where every 64th line starts */
};

/* The name of the command-line pseudo-source (overrides joined by spaces).
 * It, "-" (stdin) and any name starting with '<' are not files: SARIF
 * gives findings there no physical location. */
#define SRC_CMDLINE "command line"

struct src_set {
	struct src_file *v;
	size_t n, cap;
};

void src_set_init(struct src_set *s);
void src_set_release(struct src_set *s);
/* Registers a source, taking ownership of `text` (may be NULL). Returns its
 * id (>= 0), or -1 when out of memory (text is freed then). */
int src_add(struct src_set *s, const char *name, char *text, size_t len);
/* NULL when `id` is not a registered source (as for id < 0). */
const char *src_name(const struct src_set *s, int id);
/* 1 when source `id` is a real file (see SRC_CMDLINE), else 0. */
int src_is_file(const struct src_set *s, int id);
/* Points *start at line `line` (1-based) of source `id` and sets *len to its
 * length without the line break. Returns 0, or -1 when there is no such line
 * (or the source has no text). Fast on big files: at most 64 lines are
 * scanned per call. */
int src_line(const struct src_set *s, int id, int line, const char **start,
	     size_t *len);

/* path with "." segments, empty segments and "dir/.." pairs taken out
 * (lexically: "a/b/../c" is "a/c", "./x" is "x"); a fresh string, NULL
 * when out of memory. Leading ".." segments of a relative path stay. A
 * symbolic link before a ".." makes the result name another file: check
 * before using it to open one. */
char *src_path_normal(const char *path);

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

/* "note", "warning" or "error"; the words used in every output format. */
const char *diag_severity_name(enum diag_severity sev);

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
	size_t seq;  /* insertion order, for a stable sort: the position in the
		      * list until a finding is removed (diag_list_keep) */
	char *unknown_code; /* the code as given when rule is NULL (a caller bug) */
	char **configs;  /* the configs it was found for, in order (none: the
			    caller did not say) */
	size_t n_configs;
};

/* The rule code of d ("GT303"), the unknown code it was added with, or "?". */
const char *diag_code(const struct diag *d);

/* Hostile-input limit: at most this many diagnostics are kept; the rest are
 * counted in n_dropped and reported as one line. */
#define DIAG_MAX_COUNT 10000
/* Hostile-input limit: a source line longer than this many code points is
 * shown as a window of this width around the caret, with "..." marks. */
#define DIAG_EXCERPT_MAX 160

struct diag_list {
	struct diag *v;
	size_t n, cap;
	size_t n_dropped;
	size_t next_seq;  /* the seq of the next finding */
	size_t dropped_by_sev[3]; /* n_dropped split by severity */
	size_t n_suppressed; /* removed by suppressions (select.h) */
	/* Text: name the configs a finding was found for when it is not
	 * simply in that config's own file (several configs linted). */
	int show_configs;
	/* SARIF: the configs linted (borrowed), for the run's artifacts. */
	const char *const *targets;
	size_t n_targets;
	const struct src_set *srcs; /* borrowed, for excerpts and names */
};

void diag_list_init(struct diag_list *l, const struct src_set *srcs);
void diag_list_release(struct diag_list *l);

/* Adds a finding of rule `code` (which must be in the table; its default
 * severity is used) at `loc` about config `path` (may be NULL). Returns the
 * new diag so a hint and notes can be attached, or NULL when the list is full
 * or out of memory (the hint/note functions accept NULL and do nothing); such
 * a finding is counted in n_dropped. The pointer is valid until the next
 * diag_add or diag_sort. An unknown code is a bug in the caller: the finding
 * is still kept, as an error with rule NULL and the code in unknown_code. */
struct diag *diag_add(struct diag_list *l, const char *code,
		      struct diag_loc loc, const char *path, const char *fmt,
		      ...) __attribute__((format(printf, 5, 6)));
/* diag_add() with severity `sev` in place of the rule's default, for a rule
 * whose findings differ in weight (GT206: an error where the value reaches
 * Megatron's parallel sizes, a warning elsewhere); a dropped finding is
 * counted under `sev`. */
struct diag *diag_add_sev(struct diag_list *l, enum diag_severity sev,
			  const char *code, struct diag_loc loc,
			  const char *path, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* Sets (or replaces) the hint of d. */
void diag_hint(struct diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends a note at `loc` (DIAG_NOLOC for none) to d. */
void diag_note(struct diag *d, struct diag_loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Keeps the findings of l->v[from..] for which keep(d, ctx) returns nonzero,
 * in order, and frees the others; seq numbers stay (later findings get
 * higher ones). Returns how many were removed. */
size_t diag_list_keep(struct diag_list *l, size_t from,
		      int (*keep)(const struct diag *d, void *ctx), void *ctx);

/* Records that d was found for `config` (once; d may be NULL). Returns
 * 0, or -1 when out of memory. */
int diag_add_config(struct diag *d, const char *config);
/* After diag_sort: a finding equal to an earlier one (same rule,
 * severity, place, path, message, hint and notes), as a parent file shared
 * by several configs gives, is merged into it: the earlier one gets its
 * configs. Returns how many were merged away. */
size_t diag_merge_same(struct diag_list *l);

/* Findings of severity `sev`, dropped ones included, so that an exit status
 * computed from it is right even past DIAG_MAX_COUNT. */
size_t diag_count(const struct diag_list *l, enum diag_severity sev);
/* Sorts by (source name, line, col, code, insertion order); findings without
 * a location come first. The outputs print in list order: sort first. */
void diag_sort(struct diag_list *l);

/* Output. Each returns 0, or -1 on a write error (or out of memory). The
 * output depends only on the list's content and order.
 *
 * Text (for people; control characters in input shown as '?'):
 *   train.yaml:12:5: error[GT303]: message
 *    12 |     tensor_model_parallel_size: 4
 *       |     ^
 *       = hint: hint
 *   train.yaml:3:1: note: note with a location
 *     3 | cluster:
 *       | ^
 *       = note: note without a location
 *   gtplan: 1 error, 0 warnings, 0 notes (2 more diagnostics dropped)
 * and " (N suppressed)" at the end when suppressions removed findings.
 * One gutter width per finding (its widest line number); the caret padding
 * copies the line's tabs. `gtplan: error[CODE]: message` when there is no
 * location, `file: ...` or `file:line: ...` when line or column is 0; no
 * excerpt when the source has no such line. The summary is `gtplan: no
 * findings` for an empty list. ANSI colors only when `color`.
 *
 * JSON (for tools), sorted keys, two-space indent, one final newline:
 *   {"format": "gtplan-diagnostics/1",
 *    "tool": {"name": "gtplan", "version": GTPLAN_VERSION},
 *    "diagnostics": [{"code", "name", "severity", "file", "line", "column",
 *                     "path", "message", "hint", "configs" (the configs it
 *                     was found for: diag_add_config),
 *                     "notes": [{"file", "line", "column", "message"}]}],
 *    "summary": {"errors", "warnings", "notes", "dropped", "suppressed"}}
 * Every key is always present; an absent value is null (name for an unknown
 * code, file/line/column without a location, line/column <= 0, path, hint).
 * "file" is the source name as given, "command line" included. The summary
 * counts are diag_count()'s (dropped findings included).
 *
 * SARIF 2.1.0 (for GitHub code scanning), sorted keys, one run: tool.driver
 * {name, version, rules[]: every row of the table, in table order}, columnKind
 * "unicodeCodePoints", results[] {ruleId, ruleIndex (absent for an unknown
 * code), level, message.text ("message Hint: hint"), locations[0]
 * .physicalLocation {artifactLocation.uri, region {startLine, startColumn}},
 * relatedLocations[] (one per note: message.text and, when in a file,
 * physicalLocation)}. Only real files (src_is_file) get a physicalLocation;
 * the uri is the name as given minus leading "./", percent-encoded. */
int diag_print_text(FILE *f, const struct diag_list *l, int color);
/* For CI systems (diag_ci.c); no summary line in any of them.
 *
 * Concise, one line per finding (line breaks in the message as spaces):
 *   train.yaml:12:5: error[GT303] message
 * GitHub Actions workflow commands, which annotate the file's line:
 *   ::error file=train.yaml,line=12,col=5,title=GT303 world-not-divisible::message%0Ahint: hint
 * (notice for notes; no file= for the command line, whose place starts the
 * message then; data and properties escaped as actions/toolkit does).
 * JUnit XML: one testsuite, one testcase per finding (classname the file,
 * name "CODE file:line:col"), a <failure> for errors and warnings, the
 * note's text as <system-out>; a clean list is one passing testcase. */
int diag_print_concise(FILE *f, const struct diag_list *l);
int diag_print_github(FILE *f, const struct diag_list *l);
int diag_print_junit(FILE *f, const struct diag_list *l);
/* The text format without its closing summary line (gtplan -q). */
int diag_print_text_findings(FILE *f, const struct diag_list *l, int color);
int diag_print_json(FILE *f, const struct diag_list *l);
int diag_print_sarif(FILE *f, const struct diag_list *l);

struct jw;
/* Finding d of l as one object of the JSON format above, written at w's
 * place (an array's next item): the one writer of findings as JSON, which
 * diag_print_json and the plan JSON (report/plan_json.c) share. The plan
 * JSON's findings leave "configs" out (with_configs 0). Errors are w's
 * (jw_finish). */
void diag_write_json(struct jw *w, const struct diag_list *l,
		     const struct diag *d, int with_configs);

/* printf into a fresh heap string; NULL when out of memory. */
char *diag_vfmt(const char *fmt, va_list ap);
char *diag_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
