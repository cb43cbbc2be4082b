/*
 * trace_int: what trace.c (the events and the document),
 * trace_shape.c (the model shape a trace is played with) and
 * trace_hang.c (where the ranks of a call that does not complete stop)
 * share. trace.h is the public side.
 *
 * Ownership: a struct collect owns its tracks and their arrays
 * (collect_release); a struct trace_hang owns its match_where and its
 * track array (trace_hang_release). A trace_shape is a value.
 */
#ifndef GTPLAN_TRACE_INT_H
#define GTPLAN_TRACE_INT_H

#include <stddef.h>

#include "cost.h"
#include "jsonw.h"
#include "match.h"
#include "trace.h"

/* ---- the events of a play (trace.c) -------------------------------------- */

/* One kept event: the op (copied; the programs are gone when we write)
 * and its times. */
struct tev {
	double ts, dur, wait, hidden;
	struct prog_op op;
	const char *weight;   /* static name, or NULL */
	int spans;
};

/* The events of one stage. The i-th event of a stage is its program's op
 * i: the play completes a stage's ops in program order. */
struct track {
	struct tev *v;
	size_t n, cap;
	long long dropped;
	double end;           /* end of its last event, kept or not */
	/* with keep_issue: when op i was issued, for every op played */
	double *issue;
	size_t n_issue, cap_issue;
};

struct collect {
	const struct trace_opts *o;
	struct track *t;
	size_t n;             /* stages kept (at most o->max_tracks) */
	int keep_issue;       /* record every op's issue time */
	int oom;
};

/* ---- the shape (trace_shape.c) ------------------------------------------- */

struct trace_shape {
	struct model_shape m; /* known = 1: the programs are built with it */
	const char *source;   /* where it comes from, in words (static) */
	int approximate;      /* sizes are estimates or stand-ins */
};

/* The shape the trace plays the calls with: the config's model when the
 * simulator knew it; else gtplan-run's decoder (runtime.model) when the
 * runtime's programs stand for the model; else the catalog's or
 * gtplan.model's approximate sizes as uniform layers; else gtplan's
 * default shape with every size gtplan.model does give. */
void trace_shape_pick(const struct plan *p, const struct sim_report *r,
		      struct trace_shape *ts);
/* The "shape" object of the trace's otherData (keys sorted). */
void trace_shape_write(struct jw *w, const struct trace_shape *ts);

/* ---- calls that do not complete (trace_hang.c) ---------------------------- */

/* Distinct stuck ops named per track. */
#define TRACE_MAX_STUCK 4

struct trace_stuck {
	const struct match_class *mc; /* where (label, kind, group, op) */
	long long ranks;              /* the track's ranks stuck there */
	long long example;            /* the lowest of them */
};

/* The ranks a track stands for, after the play of the call. */
struct trace_hang_track {
	struct trace_stuck s[TRACE_MAX_STUCK]; /* by op, ascending */
	size_t n;
	long long more;       /* ranks stuck at other ops */
	long long stuck, never, done; /* ranks stuck, never called, done */
	long long first_op;   /* the earliest op a rank stops at; -1 none */
};

struct trace_hang {
	struct match_where w;
	struct trace_hang_track *t;
	size_t n;             /* tracks */
	long long stuck, never; /* ranks, over all tracks */
};

/* Replays call c as the simulator's matcher does (match_call_where, with
 * shape m and the simulator's program options) and sums up, per track,
 * where its ranks stop. Tracks: one per rank (per_rank; ranks 0 ..
 * n_tracks-1) or one per pipeline stage (stages > 1: the rank's pp
 * coordinate; else every rank on track 0). Returns 0, or -1 when out of
 * memory or the call cannot be played (h is then empty). */
int trace_hang_find(struct trace_hang *h, const struct plan *p,
		    const struct sim_report *r, const struct model_shape *m,
		    const struct call_def *c, int per_rank, size_t n_tracks,
		    long long stages);
void trace_hang_release(struct trace_hang *h);

#endif
