/*
 * calls: the driver's call table as data (docs/calls.md §2), plus the rows
 * a config adds or overrides under `gtplan.calls`.
 *
 * Ownership: the built-in rows and the names returned are static;
 * calls_table's *out is the caller's to free() (one block; its strings
 * are static or point into the config, which must outlive it).
 */
#ifndef GTPLAN_CALLS_H
#define GTPLAN_CALLS_H

#include <stdio.h>

#include "settings_sim.h"
#include "sim.h"

/* Hostile-input limit: gtplan.calls entries read (settings_sim.h); more
 * are one GT520. */
#define CALLS_MAX_ROWS SET_CALLS_MAX

/* The built-in table, in the order of docs/calls.md §2, as the 4-D layout
 * sees it. In the 5-D layout sft_v2_train also shards gtp_weight_remat
 * (after data_parallel); calls_table(NULL, 1, ...) gives that table. */
size_t calls_builtin_count(void);
const struct call_def *calls_builtin_at(size_t i);

/* The effective table for a config: the built-in rows, with `gtplan.calls`
 * entries overriding rows of the same name and adding new ones, each
 * validated like NeMo-RL would (unknown axis GT521, axis both sharded and
 * replicated GT522) and beyond (unknown output or rank0_only axis GT523,
 * a warning, as NeMo-RL ignores such names; malformed entry GT520). Each
 * finding points at the offending node. `five_d` says whether
 * gtp_weight_remat is a valid axis.
 *
 * An entry is a map {name, dispatch: sharded|single|multiple, sharded: [],
 * replicated: [], output: [], rank0_only: [], dummy: bool, program:
 * train|forward|refit_ipc|refit_broadcast|refit_reshard|save|load|
 * group_init|none, moves_data: bool}. A built-in name overrides that row
 * field by field (an axis list, null included, replaces the built-in one;
 * null is the empty list, as NeMo-RL's None); a new name adds a row and
 * needs dispatch and program. sharded, replicated, output, dummy and
 * moves_data apply to sharded calls, rank0_only to single and multiple
 * ones. New sharded rows move data unless moves_data says otherwise;
 * uses_train_batch follows program: train. The row's loc is the entry's.
 * An entry with an error is not applied (the built-in row stays); later
 * entries with an earlier entry's name are errors. Unknown keys are the
 * schema's to report. `in` is gtplan.calls as the config writes it
 * (plan.set.sim.calls); NULL gives the built-ins only.
 * Returns 0, or -1 when out of memory (here or when the settings were
 * read). *out is heap-allocated (free()), also on error. */
int calls_table(const struct set_calls *in, int five_d,
		struct call_def **out, size_t *n, struct diag_list *diags);

const struct call_def *calls_find(const struct call_def *v, size_t n,
				  const char *name);
const char *calls_program_name(enum call_program p);
const char *calls_dispatch_name(enum call_dispatch d);

#endif
