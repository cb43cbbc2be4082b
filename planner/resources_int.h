/*
 * resources_int: internal, not part of the public API. What resources.c
 * (the split of the cluster) and resources_teachers.c (the on-policy-
 * distillation teachers) share.
 */
#ifndef GTPLAN_RESOURCES_INT_H
#define GTPLAN_RESOURCES_INT_H

#include <stddef.h>

#include "cfg.h"
#include "diag.h"

#define OPD "on_policy_distillation."
#define NCT OPD "non_colocated_teachers."

struct teachers {
	long long nodes;      /* whole nodes the teachers reserve */
	size_t count;         /* teacher groups (distinct checkpoints) */
};

/* Reads the non-colocated OPD teachers and checks them as NeMo-RL does, in
 * document order: with deduplication (the default) the first alias of a
 * checkpoint makes the group and later aliases of it are skipped, overrides
 * and all. Returns 0, -1 after reporting, -2 when out of memory. */
int res_read_teachers(const struct cfg_node *root, long long gpus_per_node,
		      struct teachers *t, struct diag_list *diags);

#endif
