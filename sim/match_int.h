/*
 * match_int: what the files of the match module share (match.h is the
 * public side). Not for other modules: include it only from sim/match*.c.
 *
 * Files: match.c (the play of the classes, why a blocked class is blocked,
 * and match_run), match_report.c (the findings when a call does not
 * complete), match_call.c (match_call and match_call_where: the driver and
 * the stage programs).
 *
 * The small helpers below are static inline: every file gets its own copy,
 * and the play's inner loop at 1M ranks stays free of calls into another
 * file.
 */
#ifndef GTPLAN_MATCH_INT_H
#define GTPLAN_MATCH_INT_H

#include <stdint.h>
#include <stdlib.h>

#include "classes.h"
#include "match.h"

#define MATCH_NGROUPS 32 /* op.group values: layout kinds, PROG_GK_WORLD, ... */
#define MATCH_NO_CLS UINT32_MAX

enum match_why { WHY_NONE, WHY_STUCK, WHY_DONE, WHY_MISMATCH, WHY_NEVER };

struct match_comp {
	struct cls_comp *v;
	size_t n;
};

struct match_play {
	const struct match_setup *s;
	const struct plan *p;
	struct cls_part cp;
	size_t n;                  /* classes */
	const struct prog **prog;  /* per class; NULL: not called */
	size_t *pc;
	int8_t slot[MATCH_NGROUPS]; /* group -> column of compi, -1 unused */
	int nslots;
	uint32_t *compi;           /* [cls * nslots + slot] -> comps, or
				      MATCH_NO_CLS */
	struct match_comp *comps;
	size_t ncomps, capcomps;
	uint32_t *queue;           /* ring of pending classes */
	uint8_t *inq;
	size_t qh, qn;
	int oom;
	/* analysis, per class */
	uint8_t *why;
	uint32_t *inst, *next, *leaf, *root;
	uint8_t *cyc;
};

/* ---- small helpers ---------------------------------------------------- */

static inline const struct prog_op *match_cur(const struct match_play *pl,
					      uint32_t c)
{
	const struct prog *g = pl->prog[c];

	return g && pl->pc[c] < g->n ? &g->ops[pl->pc[c]] : NULL;
}

static inline unsigned match_swap_flags(unsigned f)
{
	return (f & PROG_SEND_FWD ? PROG_RECV_FWD : 0) |
	       (f & PROG_RECV_FWD ? PROG_SEND_FWD : 0) |
	       (f & PROG_SEND_BWD ? PROG_RECV_BWD : 0) |
	       (f & PROG_RECV_BWD ? PROG_SEND_BWD : 0);
}

static inline long long match_stage_of(const struct match_play *pl,
				       long long rank)
{
	long long c[LAY_NAXES];

	lay_coords(&pl->p->dense, rank, c);
	return c[LAY_PP];
}

/* The class of the stage an exchange faces; MATCH_NO_CLS past either end,
 * except in gtplan-run's programs (rt_call set), whose interleaved
 * schedule is a ring (the last stage's next is stage 0). */
static inline uint32_t match_peer(const struct match_play *pl, uint32_t c,
				  const struct prog_op *op)
{
	long long r = pl->cp.rep[c], s = match_stage_of(pl, r);
	long long pp = pl->p->pp, to;
	int fwd = (op->flags & PROG_TO_NEXT) != 0;
	int ring = pl->prog[c] && pl->prog[c]->rt_call && pp > 1;

	if (!ring && ((fwd && s + 1 >= pp) || (!fwd && s == 0)))
		return MATCH_NO_CLS;
	to = ((fwd ? s + 1 : s - 1) % pp + pp) % pp;
	r += (to - s) * pl->p->dense.stride[LAY_PP];
	return pl->cp.colour[r];
}

/* Is class c at an op that completes together with `op`? */
static inline int match_ready(const struct match_play *pl, uint32_t c,
			      const struct prog_op *op)
{
	const struct prog_op *o = match_cur(pl, c);

	if (!o)
		return 0;
	if (op->kind == OP_P2P)
		return o->kind == OP_P2P &&
		       o->flags == match_swap_flags(op->flags) &&
		       o->amount == op->amount;
	return o->group == op->group && o->kind == op->kind &&
	       o->amount == op->amount && o->root == op->root;
}

/* The composition of class c's group of `group`, shared by every class in
 * it (they are all in groups of that same composition). */
static inline const struct match_comp *match_comp_of(struct match_play *pl,
						     uint32_t c,
						     unsigned group)
{
	uint32_t *ix;
	struct match_comp k;

	if (group >= MATCH_NGROUPS || pl->slot[group] < 0)
		return NULL;
	ix = &pl->compi[(size_t)c * (size_t)pl->nslots +
			(size_t)pl->slot[group]];
	if (*ix != MATCH_NO_CLS)
		return &pl->comps[*ix];
	if (pl->ncomps == pl->capcomps) {
		size_t cap = pl->capcomps ? pl->capcomps * 2 : 16;
		struct match_comp *v = realloc(pl->comps, cap * sizeof(*v));

		if (!v)
			goto oom;
		pl->comps = v;
		pl->capcomps = cap;
	}
	if (cls_group_comp(&pl->cp, pl->p, group, pl->cp.rep[c], &k.v, &k.n))
		goto oom;
	pl->comps[pl->ncomps] = k;
	for (size_t i = 0; i < k.n; i++)
		pl->compi[(size_t)k.v[i].cls * (size_t)pl->nslots +
			  (size_t)pl->slot[group]] = (uint32_t)pl->ncomps;
	return &pl->comps[pl->ncomps++];
oom:
	pl->oom = 1;
	return NULL;
}

/* ---- why a class is blocked ------------------------------------------- */

static inline enum match_why match_classify(const struct match_play *pl,
					    uint32_t b,
					    const struct prog_op *op)
{
	const struct prog_op *o;

	if (b == MATCH_NO_CLS)
		return WHY_MISMATCH; /* an exchange with no stage there */
	if (!pl->prog[b])
		return WHY_NEVER;
	o = match_cur(pl, b);
	if (!o)
		return WHY_DONE;
	if (op->kind == OP_P2P) {
		/* facing us: a partial pairing is a mismatch; none at all
		 * (both send first) waits for us: a cycle */
		if (o->kind == OP_P2P &&
		    (o->flags & match_swap_flags(op->flags)))
			return WHY_MISMATCH;
		return WHY_STUCK;
	}
	return o->group == op->group ? WHY_MISMATCH : WHY_STUCK;
}


/* ---- shared between the files ------------------------------------------ */

/* Sets up the play of s (match.c): classes, their programs and the state;
 * adds the rank counts to res. Returns 0, or -1 (release it either way). */
int match_play_setup(struct match_play *pl, const struct match_setup *s,
		     struct sim_call_result *res);
/* Plays until nothing advances (match.c); pl->oom on allocation failure. */
void match_play_run(struct match_play *pl);
void match_play_release(struct match_play *pl);

/* Emits the findings (match_report.c); returns the call's status. */
enum sim_status match_report(struct match_play *pl, struct diag_list *diags);

#endif
