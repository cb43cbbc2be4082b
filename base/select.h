/*
 * select: which findings are reported.
 *
 * A rule selector names rules: a code ("GT670"), a code prefix ("GT6",
 * every GT6xx rule), a rule's name ("world-not-divisible") or "ALL"; case
 * does not matter. A suppression is a selector written somewhere: an inline
 * comment on the offending YAML line,
 *
 *     tensor_model_parallel_size: 4  # gtplan: ignore[GT670, GT614] reason
 *
 * an entry of a list (gtplan.ignore in a config, ignore in a project file,
 * --ignore on the command line). A suppression removes the findings it
 * matches from a diag_list; one that removes nothing is itself reported
 * (GT001 unused-suppression, as ruff's unused-noqa), unless it came from the
 * command line.
 *
 * Scopes: an inline suppression covers one line of one source (findings
 * whose primary location is there); a listed one covers the findings of
 * the jobs that name its scope (an int the caller hands out; -1: every
 * job).
 *
 * Ownership: a sel_set owns its suppressions and their strings; it borrows
 * nothing between calls.
 */
#ifndef GTPLAN_SELECT_H
#define GTPLAN_SELECT_H

#include <stddef.h>

#include "diag.h"

/* Hostile-input limit: at most this many suppressions are kept; further
 * ones are ignored (and reported once as GT002). */
#define SEL_MAX_SUPPRESSIONS 10000

/* 1 when sel names at least one rule (see above), else 0. */
int sel_valid(const char *sel);
/* 1 when sel names d's rule. An unknown code matches ALL only. */
int sel_match(const char *sel, const struct diag *d);
/* The rule whose code or name is nearest to sel (for a hint), or NULL. */
const struct diag_rule *sel_closest(const char *sel);

/* A GT002 finding at loc: `where` ("gtplan.ignore") names no rule, sel,
 * with the closest rule as its hint. */
void sel_say_unknown(struct diag_list *diags, struct diag_loc loc,
		     const char *path, const char *where, const char *sel);

struct sel_supp {
	char *sel;            /* the selector as written */
	struct diag_loc loc;  /* where it is written; DIAG_NOLOC: command line */
	int src, line;        /* inline: the line it covers; src -1: listed */
	int scope;            /* listed: the jobs it covers; -1 every job */
	const char *origin;   /* static words for messages: "gtplan.ignore" */
	size_t used;          /* findings it removed */
	int report_unused;    /* 0 for the command line's */
};

struct sel_set {
	struct sel_supp *v;
	size_t n, cap;
	size_t n_scanned;    /* sources of the src_set scanned for comments */
	size_t n_suppressed; /* findings removed, over every call */
	int full_said;       /* SEL_MAX_SUPPRESSIONS reached and reported */
};

void sel_set_init(struct sel_set *s);
void sel_set_release(struct sel_set *s);

/* Adds a listed suppression of `sel` in `scope` (loc: where it is written).
 * Returns 0, or -1 when out of memory or full. */
int sel_add(struct sel_set *s, const char *sel, struct diag_loc loc,
	    int scope, const char *origin, int report_unused);

/* Reads the inline `# gtplan: ignore[SEL, ...] reason` comments of every
 * source registered since the last call. A '#' starts a comment at the
 * start of a line or after a blank, as in YAML. A selector that names no
 * rule is a GT002 finding in diags. Returns 0, or -1 when out of memory. */
int sel_scan(struct sel_set *s, const struct src_set *srcs,
	     struct diag_list *diags);

/* Removes from l->v[from..] every finding a suppression covers: inline
 * ones on the finding's line, listed ones whose scope is -1 or one of
 * scopes[0..n_scopes). Returns how many were removed. */
size_t sel_suppress(struct sel_set *s, struct diag_list *l, size_t from,
		    const int *scopes, size_t n_scopes);

/* Keeps in l->v[from..] only the findings of severity >= min that one of
 * select[0..n_select) names (every finding when n_select is 0). Returns
 * how many were removed. */
size_t sel_filter(struct diag_list *l, size_t from, char *const *select,
		  size_t n_select, enum diag_severity min);

/* Adds a GT001 finding for every suppression that removed nothing and may
 * be reported. A suppression read more than once (a parent file shared by
 * several configs) counts as used when any copy was, and is reported once.
 * Returns 0, or -1 when out of memory. */
int sel_report_unused(struct sel_set *s, struct diag_list *l);

#endif
