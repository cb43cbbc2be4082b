/*
 * cfg_interp_int: internal, not part of the public API. What the three
 * parts of cfg_resolve() share:
 *   cfg_interp.c        resolution state, lookups, cycles, cfg_resolve()
 *   cfg_interp_parse.c  the grammar of `${...}` values
 *   cfg_interp_pyops.c  Python's str()/repr() and NeMo-RL's resolvers
 * (cfg_interp_lex.c holds the words shared with the override grammar).
 * Names: `interp_` for the resolver's own functions; the `py_`,
 * `val_`/`vals_` and `ps_` families each work on their struct.
 */
#ifndef GTPLAN_CFG_INTERP_INT_H
#define GTPLAN_CFG_INTERP_INT_H

#include <stddef.h>

#include "cfg.h"
#include "cfg_interp_lex_int.h"
#include "cfg_interp_pyops_int.h"

/* ---- resolution state (cfg_interp.c) ------------------------------------ */

/* Outcome of resolving something, worst last. R_ENV: it depends on an unset
 * environment variable (left as it is, with a note at the oc.env site). */
enum { R_OK, R_ENV, R_FAIL };

/* A set of nodes (open addressing on the pointer). */
struct pset {
	const void **v;
	size_t n, cap;
};

/* The nodes from the root down to one node. */
struct chain {
	struct cfg_node **v;
	size_t n, cap;
};

/* One node being resolved. */
struct frame {
	struct cfg_node *node;
	struct chain chain; /* root .. node */
	char *path;
};

struct rctx {
	struct cfg_node *root;
	const struct src_set *srcs;
	struct diag_list *diags;
	struct pset failed;  /* resolution failed; the error is reported */
	struct pset envleft; /* left as it is: an unset variable */
	struct frame stack[CFG_MAX_INTERP_DEPTH];
	size_t depth;
	size_t copied; /* nodes created by resolution, against CFG_MAX_NODES */
	size_t text;   /* bytes of strings built or copied by resolution,
			  against CFG_MAX_INTERP_TOTAL */
	int errors;    /* an error was reported (the list may drop it) */
	int oom;
};

/* The node being resolved now. */
struct frame *interp_top(struct rctx *c);

/* Adds a finding at the value being resolved, with a note at each earlier
 * link of the chain of references that led to it. */
struct diag *interp_report(struct rctx *c, const char *code, const char *fmt,
			   ...) __attribute__((format(printf, 3, 4)));
/* The same, at the `${...}` text `ref` (len bytes) where it is written. */
struct diag *interp_report_ref(struct rctx *c, const char *ref, size_t len,
			       const char *code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* ---- values (cfg_interp.c) ---------------------------------------------- */

/* An evaluated piece: a node of the tree (borrowed) or a fresh one (own).
 * While only the syntax is checked, n is NULL. */
struct val {
	struct cfg_node *n;
	int own;
};

void val_drop(struct val *v);

struct vals {
	struct val *v;
	size_t n, cap;
};

void vals_release(struct vals *vs);
/* Appends v; on failure drops it and returns -1. */
int vals_push(struct vals *vs, struct val v);

/* A deep copy counted against CFG_MAX_NODES (so that `${a}` lists of
 * `${a}` lists cannot blow up); NULL after reporting. */
struct cfg_node *interp_copy_counted(struct rctx *c, const struct cfg_node *n);

/* Counts `bytes` of text that resolution builds or copies against
 * CFG_MAX_INTERP_TOTAL. Returns 0, or -1 after reporting GT103 once. */
int interp_charge_text(struct rctx *c, size_t bytes);

/* ---- the parser (cfg_interp_parse.c) ------------------------------------ */

struct ps {
	struct rctx *c;
	const char *p;
	int eval; /* 0: check the syntax only */
	int nest; /* ${, [ and { nesting */
	int st;   /* R_OK while parsing goes on */
};

/* Stops the parse with outcome st; returns -1. */
int ps_fail(struct ps *ps, int st);
/* A fresh node at the interpolation site. */
struct cfg_node *ps_site_node(struct ps *ps, enum cfg_kind k);
/* Makes the text of b (which it releases) a fresh string value in *out;
 * while only the syntax is checked, nothing. Returns 0 or ps_fail(). */
int ps_own_str(struct ps *ps, struct strbuf *b, struct val *out);

/* Parses the text of n, a string with `${...}`: only its syntax (eval 0)
 * or for its value (eval 1), into *out. Returns an outcome (R_OK, ...). */
int interp_parse(struct rctx *c, struct cfg_node *n, int eval,
		 struct val *out);

/* ---- what the parser calls ---------------------------------------------- */

/* Finds the node `${ndots parts}` names from the node being resolved,
 * resolving what it passes through, and the target itself
 * (cfg_interp.c). */
int interp_lookup(struct ps *ps, size_t ndots, char **parts, size_t nparts,
		  const char *ref, size_t ref_len, struct val *out);
/* Calls resolver `name` (oc.env, add, sub, mul, div, max) on args
 * (cfg_interp_pyops.c). */
int interp_call_resolver(struct ps *ps, const char *name, struct vals *args,
			 const char *ref, size_t ref_len, struct val *out);

#endif
