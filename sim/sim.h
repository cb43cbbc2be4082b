/*
 * sim: the shared vocabulary of the simulator.
 *
 * The simulator plays what NeMo-RL's driver and Megatron's workers would do
 * for each call type, on the plan's rank grid (docs/design.md §3.3):
 *   calls.c      the call table (data) and `gtplan.calls` rows from a config
 *   dispatch.c   the driver's named grid (4-D or the GTP PR's 5-D), who is
 *                called, which data shard each gets, whose result is kept,
 *                and the data-placement check (dispatch_check.c)
 *   program.c    the collective program each called rank runs for a call
 *                (program_build.c and program_layer.c build it)
 *   program_rt.c the same for gtplan-run's own model (no model named)
 *   predict.c    gtplan-run's --record of the train call, as predicted
 *   stages.c     collectives that span pipeline stages, stage by stage
 *   classes.c    ranks that behave alike (colour refinement), played once
 *   match.c      NCCL-semantics matching of those programs: completes, hangs
 *                (never called / stuck earlier / wait-for cycle) or
 *                mismatches (match_report.c: the findings; match_call.c: a
 *                driver call, for pictures)
 *   simulate.c   runs every call and collects the results
 *   ckpt.c       the checkpoint plan and its validation (ckpt_tensor.c,
 *                ckpt_entry.c, ckpt_bytes.c, ckpt_opt.c, ckpt_expert.c)
 *   reshard.c    whether a checkpoint resumes under another layout
 *   stack.c      gtplan.stack and the refit checks
 *   cost.c       memory and time estimates (cost_mem.c, cost_time.c)
 *   trace.c      the simulated timeline as a Chrome trace
 * This header holds the types those modules share. Each module has its own
 * header for its functions.
 *
 * Ownership: the types here are values; who allocates and frees them is
 * said where they are filled (simulate.h, program.h, match.h, cost.h).
 */
#ifndef GTPLAN_SIM_H
#define GTPLAN_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "model.h"  /* struct model_shape: the planner's */

/* ---- the driver's grid ----------------------------------------------- */

/* Axes of NeMo-RL's NamedSharding for the policy workers. */
enum drv_axis {
	AX_PP,   /* "pipeline_parallel" */
	AX_DP,   /* "data_parallel" */
	AX_GTP,  /* "gtp_weight_remat" (the GTP PR's 5-D layout only) */
	AX_CP,   /* "context_parallel" */
	AX_TP,   /* "tensor_parallel" */
	AX_N
};

#define AX_BIT(a) (1u << (a))

/* ---- the call table --------------------------------------------------- */

enum call_dispatch {
	CALL_SHARDED,  /* run_all_workers_sharded_data */
	CALL_SINGLE,   /* run_all_workers_single_data */
	CALL_MULTIPLE, /* run_all_workers_multiple_data */
};

/* What a called worker runs (program.c builds the collectives). */
enum call_program {
	PROG_NONE,             /* no collectives (offload, prepare_refit_info) */
	PROG_TRAIN,            /* fwd+bwd per micro-batch, grad reduction, barrier */
	PROG_FORWARD,          /* fwd only: logprobs, score, top-k ... */
	PROG_REFIT_IPC,        /* per weight: GTP gather, TP gather, local handoff */
	PROG_REFIT_BROADCAST,  /* per weight: GTP, TP gather; broadcast from rank 0 */
	PROG_REFIT_RESHARD,    /* per weight: GTP gather, ship local slices */
	PROG_SAVE,             /* RNG all-gather, sharded writes, barrier */
	PROG_LOAD,             /* sharded reads, barrier */
	PROG_GROUP_INIT,       /* communicator creation over all workers */
	PROG_COUNT
};

#define CALL_NAME_MAX 64

struct call_def {
	char name[CALL_NAME_MAX];
	enum call_dispatch dispatch;
	/* sharded: in_sharded_axes in their order (the data nests in it) */
	enum drv_axis sharded[AX_N];
	int n_sharded;
	unsigned replicated; /* AX_BIT mask: replicate_on_axes */
	unsigned output;     /* AX_BIT mask: output_is_replicated */
	unsigned rank0_only; /* single/multiple: run_rank_0_only_axes */
	int dummy;           /* make_dummy_calls_to_free_axes */
	enum call_program program;
	int moves_data;      /* the call splits a batch over its shards */
	int uses_train_batch;/* the batch is the global train batch (train) */
	struct diag_loc loc; /* where a config defined it; DIAG_NOLOC if built in */
};

/* ---- dispatch results ------------------------------------------------- */

/* What the driver does with one worker (= one training rank) for a call. */
struct disp_rank {
	int called;      /* the worker's method runs */
	int dummy;       /* called with no data (dummy call to a free axis) */
	long long shard; /* flattened index into the nested shard list, -1 none */
	int returned;    /* the driver keeps this worker's result */
	/* the first free axis with a non-zero coordinate, when not called
	 * (or called as a dummy): why the rule left it out; AX_N otherwise */
	enum drv_axis left_out_by;
};

/* ---- results of one call ---------------------------------------------- */

enum sim_status { SIM_OK, SIM_HANG, SIM_MISMATCH, SIM_ERROR };

struct sim_call_result {
	const struct call_def *call;
	enum sim_status status;
	long long invoked;      /* workers called (dummies included) */
	long long with_data;    /* workers called with a data shard */
	long long returned;     /* workers whose result the driver keeps */
	long long shards;       /* shards the driver's data is split into */
	long long n_ops;        /* collectives in the longest program */
	/* The ranks the driver calls are those whose Megatron coordinate is
	 * 0 on each axis of called_when (bit 1u << lay_axis), when
	 * called_when_ok; otherwise no set of axes says who is called
	 * (disp_called_when). */
	int called_when_ok;
	unsigned called_when;
	size_t first_diag;      /* this call's findings: diags->v[first_diag..] */
	size_t n_diags;
};

const char *sim_status_name(enum sim_status s);
const char *drv_axis_name(enum drv_axis a);

#endif
