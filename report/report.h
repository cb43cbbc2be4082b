/*
 * report: the plan and the simulator's results written out, for programs
 * and for people:
 *   plan_json.c     the plan JSON ("gtplan-plan/1", schemas/plan.schema.json)
 *   step_json.c     its "runtime_estimate": gtplan-run's step, estimated
 *   plan_summary.c  `gtplan plan --summary`
 *   sim_text.c      `gtplan sim`'s table of calls, times and memory
 *   calls_text.c    `gtplan sim --list-calls`: the call table
 *   ckpt_text.c     `gtplan ckpt`: the reshard report
 * (render.h draws the rank grid; base/diag.h prints the findings as text,
 * JSON or SARIF.) The plan and the simulation come as separate arguments:
 * the planner's struct plan knows nothing of the simulator.
 *
 * Ownership: the writers borrow everything they are given.
 */
#ifndef GTPLAN_REPORT_H
#define GTPLAN_REPORT_H

#include <stdio.h>

#include "diag.h"
#include "calls.h"
#include "plan.h"
#include "reshard.h"
#include "simulate.h"

/* Writes the plan JSON with sorted keys and a trailing newline, the
 * diagnostics (diags, NULL for none) included. `sim` is the simulation of
 * this plan, or NULL when it was not simulated: then "calls" is [] and
 * "memory", "checkpoint" and "stack" are null, as they are when the
 * simulator ran no call. Streams ranks and groups, so memory stays O(1)
 * in the world size. Returns 0, or -1 on a write error. */
int plan_write_json(FILE *f, const struct plan *p, const struct sim_report *sim,
		    const struct diag_list *diags);

struct jw;
/* The plan JSON's "runtime_estimate" key and value: null when the
 * simulator did not run, {"step_s": null, "why": ...} without an
 * estimate, else the step, its classes (calls, time_s, work: FLOPs or
 * bytes), the profile and the hidden communication (sim/step_est.h). */
void step_write_json(struct jw *w, const struct sim_report *r);

/* Writes `gtplan plan --summary`'s few lines for people: sizes, lanes,
 * batch split, rank order, group counts and the first ranks' (at most four
 * nodes') coordinates. Needs only the fields plan_build filled. */
void plan_print_summary(FILE *f, const struct plan *p);

/* The per-call table for `gtplan sim`: one line per call with its
 * dispatch, status, workers called / with data / kept, shards,
 * collectives and estimated time; then where the time goes and the train
 * call's memory per stage. */
void sim_print_text(FILE *f, const struct plan *p, const struct sim_report *r);

/* `gtplan sim --list-calls`: the call table v[0..n) as aligned text, for
 * the 4-D or the 5-D (five_d) driver layout; rows a config defined or
 * overrode are marked. */
void calls_print(FILE *f, const struct call_def *v, size_t n, int five_d);

/* `gtplan ckpt`: the reshard from plan ps to plan pl, one line per weight
 * kind, then the optimizer, the sizes and the verdict. */
void reshard_print(FILE *f, const struct plan *ps, const struct plan *pl,
		   const struct reshard_report *r);

#endif
