/*
 * predict: the simulator's prediction of gtplan-run's --record for the
 * train call (`gtplan sim CONFIG --predict-record PREFIX`; docs/design.md
 * §4.6, §5.2).
 *
 * For every training rank r, PREFIX.r holds the collectives r issues in
 * the runtime's train call, one JSON line each in coll.h's Record format,
 * byte for byte what gtplan-run writes: bytes, call ("train"), coll,
 * count, dtype, group, group_index, op, rank, seq (from 0, continuing over
 * the steps), step (from 1), what. Every key of the record is predicted;
 * none is left to the run (gtplan-run records no timings).
 *
 * The prediction follows the simulator's play of the train call: a rank
 * the driver does not call writes an empty file; a rank that the play
 * leaves blocked writes its collectives up to and including the one it
 * waits in (gtplan-run records a collective before waiting in it); the
 * others write `steps` whole steps, or only the first when any rank is
 * left blocked (the run never gets past that step). The run is the plan's:
 * gtplan-run started without --global-batch or --micro-batch, which would
 * change the micro-batches and so the collectives.
 *
 * Ownership: reads the plan, config and report it is given and keeps
 * nothing; the files it writes are closed before it returns.
 */
#ifndef GTPLAN_PREDICT_H
#define GTPLAN_PREDICT_H

#include <stddef.h>

#include "cfg.h"
#include "plan.h"
#include "simulate.h"

/* Hostile-input limits: the most ranks (files) and steps one prediction
 * writes. */
#define PRED_MAX_RANKS 4096
#define PRED_MAX_STEPS 1000

/* Writes PREFIX.<rank> for every rank of p after sim_run() filled r (the
 * train call need not have been among the simulated calls). Returns 0; -2
 * when the prediction is refused: no rank grid, the runtime cannot run the
 * layout with the plan's decoder (runtime.model, the named model or
 * gtplan.runtime's)
 * (prog_rt_applies), the batch does not split as gtplan-run needs, more
 * than PRED_MAX_RANKS ranks or steps outside [1, PRED_MAX_STEPS], no
 * train call; -1 on an I/O error or out of memory. err gets one sentence
 * saying why, with the numbers and the fix. The decoder's shape is the
 * plan's (runtime.model), whether the config names a model or not. */
int pred_write_records(const struct plan *p, const struct sim_report *r,
		       const char *prefix, long long steps, char *err,
		       size_t len);

#endif
