/*
 * simulate: runs every call of the effective call table on a plan and
 * collects one result per call (the driver's dispatch, the data-placement
 * check, then the collectives with NCCL semantics).
 *
 * Ownership: a sim_report owns its call table and results;
 * sim_report_release() frees them. Findings go to the caller's diag_list;
 * each result says which of them are its own.
 */
#ifndef GTPLAN_SIMULATE_H
#define GTPLAN_SIMULATE_H

#include <stdio.h>

#include "cfg.h"
#include "ckpt.h"
#include "cost.h"
#include "stack.h"
#include "dispatch.h"
#include "plan.h"
#include "sim.h"
#include "step_est.h"

struct sim_report {
	struct call_def *calls;       /* the effective table */
	size_t n_calls;
	struct sim_call_result *res;  /* one per simulated call */
	size_t n_res;
	struct model_shape model;
	struct drv_layout dl;
	int ran;                      /* 0: no grid, nothing simulated */
	struct diag_loc where;        /* gtplan.driver_layout, where findings
					 without a place of their own point */
	/* cost.h: the settings the estimates used, one estimate per result
	 * (valid = 0: none), and the train call's memory per stage */
	struct cost_model cost;
	struct cost_call *est;
	struct cost_memory mem;
	/* step_est.h: gtplan-run's train step on the plan (valid = 0: none,
	 * with the reason) */
	struct step_estimate step;
	/* ckpt.h: the checkpoint plan's summary (valid = 0: none) */
	struct ckpt_summary ckpt;
	/* gtplan.stack as read (defaults where the config says nothing) */
	struct stack stack;
};

void sim_report_init(struct sim_report *r);
void sim_report_release(struct sim_report *r);

/* Simulates every call (or only the call named `only`, which must exist:
 * otherwise -2 is returned and nothing is run) for a plan built from
 * `root`. Without a rank grid (p->grid_ok == 0) nothing runs and r->ran
 * stays 0. Then estimates each call that completes (cost.h), the train
 * call's memory per stage, gtplan-run's train step (step_est.h, with
 * gtplan.hardware.gpu's profile of data/hardware.yaml), and checks the
 * layout against the hardware:
 * GT530 (does not fit even optimistically), GT532 (the estimate does not
 * fit), GT531 (a TP group, or a GTP group whose gathers are not hidden,
 * spans NVLink domains). Returns 0, -1 when out of memory, -2 for an
 * unknown `only`. */
int sim_run(const struct plan *p, const struct cfg_node *root,
	    const char *only, struct sim_report *r, struct diag_list *diags);

/* How many results are not SIM_OK. */
size_t sim_not_ok(const struct sim_report *r);

#endif
