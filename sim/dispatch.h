/*
 * dispatch: NeMo-RL's driver grid and its dispatch rules (calls.md,
 * notes/dispatch-semantics.md section 2).
 *
 * The policy's NamedSharding is np.arange(W).reshape(...) with named axes:
 *   4-D (NeMo-RL today):  (PP, W/(PP*CP*TP), CP, TP)
 *       pipeline_parallel, data_parallel, context_parallel, tensor_parallel
 *   5-D (the GTP PR):     (PP, D, G, CP, TP)
 *       pipeline_parallel, data_parallel, gtp_weight_remat, context_parallel,
 *       tensor_parallel
 * Worker i is training rank i; its driver coordinates come from the
 * row-major reshape, not from Megatron's rank order (that mismatch is what
 * the placement check finds). Everything here is O(1) per rank.
 */
#ifndef GTPLAN_DISPATCH_H
#define GTPLAN_DISPATCH_H

#include "plan.h"
#include "sim.h"

struct drv_layout {
	int five_d;
	int n;                    /* 4 or 5 axes */
	enum drv_axis axis[AX_N]; /* outermost first, as in reshape() */
	long long size[AX_N];     /* by position */
	long long world;
};

/* The layout the plan's driver_layout asks for ("4d" or "5d"). Requires
 * p->grid_ok. */
void drv_layout_init(struct drv_layout *dl, const struct plan *p);
/* Does the layout have this axis? */
int drv_has_axis(const struct drv_layout *dl, enum drv_axis a);
long long drv_axis_size(const struct drv_layout *dl, enum drv_axis a);
/* Driver coordinates of worker `rank`, indexed by enum drv_axis; -1 for
 * axes the layout does not have. */
void drv_coords(const struct drv_layout *dl, long long rank,
		long long coord[AX_N]);
/* Parses "data_parallel" etc.; AX_N when unknown. */
enum drv_axis drv_axis_parse(const char *name);

/* What the driver does with worker `rank` for call `c` (calls.md rules:
 * free axes, dummy calls, shard nesting in the order of the sharded axes,
 * output_is_replicated, run_rank_0_only_axes). */
void disp_rank(const struct drv_layout *dl, const struct call_def *c,
	       long long rank, struct disp_rank *out);
/* Number of shards a sharded call splits its data into: the product of
 * its sharded axes' sizes (1 for single/multiple calls). */
long long disp_shard_count(const struct drv_layout *dl,
			   const struct call_def *c);

/* The data-placement check for a data-moving sharded call (DESIGN.md 2.3):
 * ranks of one lane (Megatron's dp group) get identical data, distinct
 * lanes distinct data, every lane gets data, the shard count equals the
 * lane count L, and `batch` (0 = unknown) splits evenly (and, for train,
 * into whole micro-batches of `micro`). Findings GT510-GT514 name who got
 * what. Returns the number of errors reported. O(W) time, O(L) memory. */
int disp_check_placement(const struct plan *p, const struct drv_layout *dl,
			 const struct call_def *c, long long batch,
			 long long micro, struct diag_list *diags);

#endif
