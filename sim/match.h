/*
 * match: plays every rank's program with NCCL semantics and explains what
 * does not complete.
 *
 * Each rank runs its program in order and blocks in each op until it is
 * matched: a collective on group X completes when every member of the
 * rank's X group has it as its current op, with the same kind, byte count
 * and root; a p2p exchange completes when the neighbouring stage's current
 * op is the complementary exchange (what one sends the other receives).
 * Outcomes per call: ok, hang (members never called GT500, stuck at an
 * earlier op GT501, finished early GT504, a wait-for cycle GT503) or
 * mismatch GT502. Each finding names the call, the op (its index and
 * label), the group kind with an example group, who arrived and who is
 * missing and why.
 *
 * Scale: ranks are folded into classes (classes.h) and one program per
 * class is played. By induction over completed ops, all members of a class
 * always stand at the same op: an op is enabled for one member exactly when
 * it is enabled for all, because every member's group holds the same
 * multiset of classes (for pp the same stage-ordered tuple), and all of a
 * class advance together. Blocking in-order matching is monotone (an
 * enabled op stays enabled until it completes), so the order in which
 * enabled ops complete does not change the outcome; the class-level play is
 * therefore exactly the rank-level one. Cost: O(W x kinds) for the classes
 * plus O(ops x classes in a group) for the play.
 */
#ifndef GTPLAN_MATCH_H
#define GTPLAN_MATCH_H

#include "dispatch.h"
#include "plan.h"
#include "program.h"
#include "sim.h"

/* Findings per call: root causes (GT500/502/503/504) and ops blocked
 * behind them (GT501). */
#define MATCH_MAX_ROOTS   3
#define MATCH_MAX_DERIVED 2

/* The low-level entry: who runs which program is the caller's. */
struct match_setup {
	const struct plan *p;      /* grid_ok required */
	const char *call;          /* the call's name, for messages */
	struct diag_loc loc;       /* where findings point (DIAG_NOLOC) */
	const struct prog *progs;  /* programs by id */
	size_t n_progs;
	/* The program id (0 .. n_progs-1) rank `rank` runs, or -1 when the
	 * driver does not call it. Fills *dr: called, dummy, shard,
	 * returned, and left_out_by (why it was not called; AX_N unknown).
	 * A dummy call runs the program like any other (the point of dummy
	 * calls is to let the collectives match). Ranks of one pp group with
	 * different stage programs must get different ids. */
	int (*rank_prog)(void *ctx, long long rank, struct disp_rank *dr);
	void *ctx;
	/* For driver coordinates and dispatch rules in messages; NULL: not
	 * shown. */
	const struct drv_layout *dl;
	const struct call_def *def;
};

/* Plays the programs. Fills res->status, invoked, with_data, returned,
 * n_ops, first_diag and n_diags (res->call and shards are the caller's);
 * findings go to diags. Returns 0, or -1 when out of memory (res->status
 * SIM_ERROR). */
int match_run(const struct match_setup *s, struct sim_call_result *res,
	      struct diag_list *diags);

/* The whole thing for one call of the table: programs from prog_build()
 * per pipeline stage (o NULL: prog_opts_init), dispatch by disp_rank().
 * Fills every field of res. Returns 0, or -1 (res->status SIM_ERROR) when
 * out of memory, the program is too long or the plan has no grid. */
int match_call(const struct plan *p, const struct model_shape *m,
	       const struct drv_layout *dl, const struct call_def *c,
	       const struct prog_opts *o, struct sim_call_result *res,
	       struct diag_list *diags);

/* ---- where each rank stands: a query for pictures ---------------------- */

/* One rank class after the play of a call. */
struct match_class {
	int called;          /* 0: the driver never calls these ranks */
	int blocked;         /* called, and did not finish the program */
	long long op;        /* the op it is blocked in (index); -1 */
	const char *kind;    /* that op's kind ("all-gather", "p2p"); NULL */
	const char *group;   /* its group kind ("gtp", "WORLD"); NULL */
	char label[192];     /* prog_op_label() of that op; "" */
};

/* Every rank's class and every class's state. Ownership: match_where_release()
 * frees the arrays. */
struct match_where {
	long long world;
	uint32_t *cls;           /* per rank: index into c */
	struct match_class *c;
	size_t n;                /* classes */
};

/* Plays call `c` exactly as match_call() does (same programs, same
 * dispatch, so the same outcome) but reports nothing: it records where each
 * rank class stopped. O(W) memory for the rank -> class map. Returns 0,
 * or -1 (w empty) when out of memory, the program is too long or the plan
 * has no grid. */
int match_call_where(const struct plan *p, const struct model_shape *m,
		     const struct drv_layout *dl, const struct call_def *c,
		     const struct prog_opts *o, struct match_where *w);
void match_where_release(struct match_where *w);

#endif
