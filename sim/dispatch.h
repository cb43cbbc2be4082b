/*
 * dispatch: NeMo-RL's driver grid and its dispatch rules (docs/calls.md §1,
 * docs/notes/dispatch-semantics.md §2).
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
 *
 * Ownership: a struct drv_layout is the caller's value (no release); the
 * functions read the plan and allocate nothing that outlives a call.
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
/* Advances coord (drv_coords of some rank) to the next rank's, without
 * dividing: for loops over every worker. Axes the layout does not have
 * stay -1; the last rank wraps to rank 0. */
void drv_coords_next(const struct drv_layout *dl, long long coord[AX_N]);
/* Parses "data_parallel" etc.; AX_N when unknown. drv_axis_name (sim.h)
 * is the inverse; drv_axis_short gives "pp", "dp", "gtp", "cp", "tp". */
enum drv_axis drv_axis_parse(const char *name);
const char *drv_axis_short(enum drv_axis a);
/* 1 when the driver's numbering can follow Megatron's lanes for this
 * plan: among the dense axes of size > 1, Megatron's order puts tp and cp
 * before gtp and dp, and those before pp (the driver numbers
 * tensor_parallel and context_parallel fastest, then the lanes, then
 * pipeline_parallel). Used for hints; the placement check itself looks at
 * every rank. */
int drv_follows_rank_order(const struct plan *p);

/* What the driver does with worker `rank` for call `c` (docs/calls.md §1:
 * free axes, dummy calls, shard nesting in the order of the sharded axes,
 * output_is_replicated, run_rank_0_only_axes). */
void disp_rank(const struct drv_layout *dl, const struct call_def *c,
	       long long rank, struct disp_rank *out);
/* disp_rank from driver coordinates already computed (drv_coords, or
 * drv_coords_next in a loop over every worker). */
void disp_decide(const struct drv_layout *dl, const struct call_def *c,
		 const long long co[AX_N], struct disp_rank *out);
/* How many workers' results the driver keeps for call `c`: the count of
 * ranks disp_rank() marks returned, in O(axes). */
long long disp_returned_count(const struct drv_layout *dl,
			      const struct call_def *c);
/* The ranks the driver calls for `c` (dummy calls included), in
 * Megatron's coordinates: sets *axes (bit 1u << lay_axis) to the axes
 * whose coordinate must be 0 for a rank to be called, and returns 1 when
 * exactly the ranks with 0 on those axes are called; returns 0 when no set
 * of axes says it (the driver's axes cut across Megatron's, as with a rank
 * order the driver does not follow). Derived by probing disp_rank() with
 * the rank at index 1 of each axis, and checked by comparing which digits
 * of the rank number the two descriptions require to be 0. O(axes). */
int disp_called_when(const struct drv_layout *dl, const struct call_def *c,
		     const struct plan *p, unsigned *axes);
/* Number of shards a sharded call splits its data into: the product of
 * its sharded axes' sizes (1 for single/multiple calls). */
long long disp_shard_count(const struct drv_layout *dl,
			   const struct call_def *c);

/* The data-placement check for a data-moving sharded call (docs/design.md
 * §2.3):
 * ranks of one lane (Megatron's dp group: the lane's TP, CP and PP peers)
 * get identical data (GT510), distinct lanes distinct data (GT511), every
 * lane gets data (GT512), the shard count equals the lane count L (GT513),
 * and `batch` (0 = unknown) splits evenly over the shards (and, for calls
 * with uses_train_batch, into whole micro-batches of `micro`; 0 = unknown)
 * (GT514). Each kind is reported at most once per call, naming one example
 * (ranks with Megatron's (t, c, g, d, p), what they got, and the driver
 * coordinates that produced it) and counting the rest. GT514 is skipped
 * when it would repeat plan_build's GT400/GT401 (shards == L and the
 * batches are the plan's own).
 *
 * Locations: the keys of the config the plan was built from
 * (p->set.sim), only to point findings at one:
 *   GT510 among called ranks, GT511: gtplan.rank_order, else
 *     gtplan.driver_layout, else the call's gtplan.calls entry;
 *   GT510 for ranks left out, GT512, GT513: the call's gtplan.calls entry,
 *     else gtplan.driver_layout;
 *   GT514: policy.train_global_batch_size (train batches), else the call's
 *     entry.
 * A key that is not in the config gives DIAG_NOLOC with that key as the
 * path ("gtplan.rank_order", "gtplan.driver_layout").
 * Does nothing (returns 0) unless p->grid_ok and c is a sharded call that
 * moves data. Returns the number of errors reported, or -1 when out of
 * memory. O(W) time, O(L) memory. */
int disp_check_placement(const struct plan *p, const struct drv_layout *dl,
			 const struct call_def *c, long long batch,
			 long long micro, struct diag_list *diags);

#endif
