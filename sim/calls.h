/*
 * calls: the driver's call table as data (calls.md), plus the rows a config
 * adds or overrides under `gtplan.calls`.
 */
#ifndef GTPLAN_CALLS_H
#define GTPLAN_CALLS_H

#include <stdio.h>

#include "cfg.h"
#include "sim.h"

/* The built-in table, in calls.md order. */
size_t calls_builtin_count(void);
const struct call_def *calls_builtin_at(size_t i);

/* The effective table for a config: the built-in rows, with `gtplan.calls`
 * entries overriding rows of the same name and adding new ones, each
 * validated like NeMo-RL would (unknown axis GT521, axis both sharded and
 * replicated GT522) and beyond (unknown output axis GT523, malformed entry
 * GT520). `five_d` says whether gtp_weight_remat is a valid axis.
 * Returns 0, or -1 when out of memory. *out is heap-allocated (free()). */
int calls_table(const struct cfg_node *root, int five_d,
		struct call_def **out, size_t *n, struct diag_list *diags);

const struct call_def *calls_find(const struct call_def *v, size_t n,
				  const char *name);
const char *calls_program_name(enum call_program p);
const char *calls_dispatch_name(enum call_dispatch d);

/* `gtplan sim --list-calls`: the table as aligned text. */
void calls_print(FILE *f, const struct call_def *v, size_t n, int five_d);

#endif
