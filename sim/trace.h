/*
 * trace: the cost model's simulated timeline of every call as a Chrome
 * trace (the Trace Event Format, for chrome://tracing or ui.perfetto.dev):
 *   {"displayTimeUnit": "ms", "otherData": {...}, "traceEvents": [...]}
 * one process per call (pid = the call's index in the simulator's results,
 * named by a process_name event), one track per rank (tid = the rank) with
 * its compute and collectives as "X" complete events, ts and dur in
 * microseconds (whole nanoseconds: three decimals), named like "gtp
 * all-gather L3 fwd mb0", under a parent slice per phase of a
 * micro-batch ("fwd mb0", cat "phase"); ends are rounded, not durations,
 * so slices nest as they do before rounding.
 *
 * A call that does not complete (hang, mismatch) shows each track's ops
 * up to the first op one of its ranks stops in, then an instant ("i",
 * cat "hang") event per op its ranks stop in, named "stuck in gtp
 * all-gather (op #12)" with the collective in args, and one for ranks
 * the driver never calls (match.h's play of the call).
 *
 * Without a model shape the simulator can size, the calls are played
 * with the best shape the plan has (trace_int.h: runtime.model, the
 * catalog's or gtplan.model's sizes, gtplan's default shape);
 * otherData.shape says which, and whether its sizes are approximate.
 *
 * The cost model times pipeline stages, not ranks: every rank of a stage
 * has the same timeline. Worlds of at most TRACE_RANK_TRACKS ranks get a
 * track per rank; larger ones a track per stage, under its lowest rank,
 * whose thread_name says which ranks it stands for; at most
 * TRACE_MAX_TRACKS tracks per call. A track keeps its first
 * TRACE_MAX_EVENTS events, then one "... N more events" event spans the
 * rest of its timeline. Keys are sorted and reals have fixed precision:
 * the same input gives the same bytes.
 *
 * Ownership: writes to the caller's stream (it neither closes nor keeps
 * it); r's caches fill in and stay the report's (sim_report_release frees
 * them).
 */
#ifndef GTPLAN_TRACE_H
#define GTPLAN_TRACE_H

#include <stddef.h>
#include <stdio.h>

#include "plan.h"
#include "simulate.h"

#define TRACE_RANK_TRACKS 16
#define TRACE_MAX_TRACKS  64
#define TRACE_MAX_EVENTS  20000

struct trace_opts {
	long long rank_tracks; /* worlds up to this size: a track per rank */
	size_t max_tracks;     /* per call */
	size_t max_events;     /* per track, before the "... N more" event */
};

/* TRACE_RANK_TRACKS, TRACE_MAX_TRACKS, TRACE_MAX_EVENTS. */
void trace_opts_init(struct trace_opts *o);

/* Writes the trace of every simulated call of r (sim_run on p) to f.
 * Calls the cost model cannot play (an error, a program too long) get a
 * named process and no tracks. `o` NULL: trace_opts_init. Replays each
 * call's programs, and the matcher's play of each call that does not
 * complete (r->cost's caches fill in). Returns 0, or -1 on a write error
 * or when out of memory. */
int trace_write(FILE *f, const struct plan *p, struct sim_report *r,
		const struct trace_opts *o);

#endif
