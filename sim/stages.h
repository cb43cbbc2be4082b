/*
 * stages: collectives that span pipeline stages, checked stage by stage
 * before the play (GT680).
 *
 * Each pipeline stage runs its own program (program.h): stages hold
 * different layers, MTP sits on the last stage, tied embeddings on the
 * first and last. A collective whose group spans stages (the pp group,
 * the model-parallel groups, Megatron's embedding group, the world)
 * completes only if every stage in that group issues it, in the same
 * order and size. stages_check() compares, for each such group kind, the
 * sequence of collectives each member stage issues and reports the first
 * one some stages never issue (or issue with another size), naming the
 * stages on each side. The matcher then shows where the ranks hang.
 *
 * Ownership: reads the programs it is given; keeps nothing.
 */
#ifndef GTPLAN_STAGES_H
#define GTPLAN_STAGES_H

#include <stddef.h>

#include "diag.h"
#include "plan.h"
#include "program.h"

/* progs[s] is stage s's program, s < n (n = PP). Reports at most one
 * GT680 per group kind for call `call`, at o->tracker_loc for the MoE
 * metrics when set, else at o->stages_loc (o may be NULL: no location).
 * Returns how many it reported. */
size_t stages_check(const struct plan *p, const struct prog *progs, size_t n,
		    const char *call, const struct prog_opts *o,
		    struct diag_list *diags);

#endif
