/*
 * step_est: the simulator's estimate of one gtplan-run train step on one
 * rank, per kernel class, from the decoder's shapes (program_rt.h's
 * prog_rt_shape, base/decoder_sizes.h), a hardware profile
 * (planner/hardware.h, data/hardware.yaml) and the cost model's
 * collectives (cost.h).
 *
 *   GEMM        every GEMM's 2 m n k FLOPs / (bf16 peak x GEMM efficiency)
 *               + a fixed device time per GEMM call
 *   attention   causal FLOPs (forward 4 b h s^2 d / 2 per layer, backward
 *               2.5 times that) / the profile's TFLOP/s at the head dim,
 *               forward and backward apart
 *   elementwise the bytes each memory-bound kernel moves / (HBM bandwidth
 *               x efficiency) + a fixed device time per kernel; copies
 *               and the optimizer (Adam) the same with their own
 *               efficiencies
 *   communication every collective of the runtime's train program
 *               (program_rt.h) at the cost model's alpha-beta time, all
 *               exposed (each runs on the kernels' stream, between the
 *               math that makes its input and the math that reads its
 *               output: runtime/coll_nccl.c), except the GTP
 *               weight all-gathers under prefetch: each hides behind the
 *               compute between the previous weight's use and its own, as
 *               runtime/rt_weights.c issues it
 *   host gaps   the host's time to issue the step's kernels beyond the
 *               device's time to run them (0 when the device is the
 *               bottleneck)
 * The list of kernels a step runs, in runtime/rt_train.c's order, is one
 * table (sim/step_ops.c). Pipeline parallelism: each stage's micro-batch
 * time times (micro-batches + (P - 1) / V) for the 1F1B bubble, the
 * slowest stage's. Not modelled: CP's attention exchange beyond its
 * collectives (rt_cp.c's merge passes), overlap of anything but the GTP
 * prefetch, host staging when ranks share a GPU.
 *
 * Ownership: a struct step_estimate is a value; nothing to release.
 */
#ifndef GTPLAN_STEP_EST_H
#define GTPLAN_STEP_EST_H

#include <stddef.h>

#include "cost.h"
#include "hardware.h"
#include "plan.h"
#include "program_rt.h"

enum step_class {
	STEP_GEMM,
	STEP_ATTN_FWD,
	STEP_ATTN_BWD,
	STEP_ELEMENTWISE,  /* memory-bound kernels other than the two below */
	STEP_COPY,         /* device copies and zeroing */
	STEP_OPTIMIZER,    /* Adam over the rank's parameters */
	STEP_COMM,         /* exposed communication */
	STEP_HOST_GAPS,
	STEP_CLASSES
};

/* What one rank does per class in one step: its time and work (FLOPs for
 * GEMM and attention, bytes for the memory classes and communication). */
struct step_work {
	double us[STEP_CLASSES];
	double work[STEP_CLASSES];
	long long calls[STEP_CLASSES];
};

struct step_estimate {
	int valid;
	char why[256];             /* why there is no estimate */
	struct hw_profile hw;      /* the profile used */
	double total_us;           /* the step */
	struct step_work w;        /* of the slowest stage */
	double comm_hidden_us;     /* GTP gathers hidden by prefetch */
	long long stage;           /* the slowest stage */
	long long kernels;         /* kernel calls of that stage's step */
};

/* "gemm", "attention_fwd", ... as the plan JSON names the classes. */
const char *step_class_name(enum step_class c);

/* Estimates plan p's train step with profile hw and the cost model cm
 * (cm->p == p; its settings give the collectives' speed and whether
 * GTP gathers overlap). Without an estimate (no rank grid, a layout the
 * runtime refuses, an fp32 run: the profile measures the bf16 path)
 * out->valid = 0 and out->why says why. Returns 0, or -1 when out of
 * memory. */
int step_estimate(const struct plan *p, struct cost_model *cm,
		  const struct hw_profile *hw, struct step_estimate *out);

/* ---- step_ops.c: the runtime's kernels, as a table ---- */

/* A walk of one stage's step: the shape, the profile, the totals so far
 * and the GTP prefetch's bookkeeping. */
struct step_walk {
	const struct prog_rt_shape *s;
	const struct hw_profile *hw;
	struct cost_model *cm;
	int prefetch;              /* gtplan.runtime.prefetch */
	struct step_work mb;       /* one micro-batch (forward + backward) */
	struct step_work once;     /* per step: the start and the optimizer */
	struct step_work *into;    /* where the rows go now */
	double seg_us;             /* compute since the last weight use */
	int first_use;             /* the next use is its pass's first */
	int pending;               /* a block's output is not yet added to the
				      residual stream: the next norm adds it
				      (runtime/rt_train.c rt_norm_in) */
	double gtp_us, gtp_hidden_us; /* one micro-batch's GTP gathers */
	long long params;          /* the rank's parameter elements */
};

/* Plays one micro-batch (every chunk of the stage, forward then
 * backward) into w->mb and the step's start and end into w->once. */
void step_ops_walk(struct step_walk *w);

#endif
