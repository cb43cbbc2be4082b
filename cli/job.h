/*
 * job: one config's way through gtplan's pipeline, as every command runs
 * it: cfg_load -> cfg_override -> cfg_resolve -> schema -> plan_build ->
 * sim_run, stopping at the stage the command needs. The plan and the
 * simulation stay apart; the report writers (report/report.h) take both.
 *
 * Ownership: a job owns its config tree, plan and sim report; job_release
 * frees them all. It borrows the
 * overrides (they must outlive it), the src_set and the diag_list.
 */
#ifndef GTPLAN_JOB_H
#define GTPLAN_JOB_H

#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "project.h"
#include "simulate.h"

/* How far job_run goes. */
enum job_stage { JOB_UPTO_CONFIG, JOB_UPTO_PLAN, JOB_UPTO_SIM };

struct job {
	int n_overrides;          /* applied to the config, in order */
	char *const *overrides;
	struct cfg_node *root;    /* the resolved config (NULL before) */
	struct plan plan;
	struct sim_report sim;    /* sim.ran 0: not simulated */
	struct proj_state *proj;  /* borrowed; NULL: every finding is kept */
	int as_written;           /* 1: floats the schema takes as integers
				     (2.0, GT206) stay floats, for a
				     command that prints the tree (gtplan
				     config); 0: they become integers */
};

/* A job with nothing run yet; overrides are Hydra's words (cfg.h). */
void job_init(struct job *j, int n_overrides, char *const *overrides);
void job_release(struct job *j);

/* The pipeline on the config at path up to `upto`; sim simulates every
 * call, or only the call named `only` when it is not NULL. Findings go to
 * diags (seq numbers are positions in the list until it is sorted).
 * Returns 0 when it got as far as asked (findings may exist), 1 when the
 * config could not get there, 2 on an I/O problem with the config file
 * itself, an unknown call or no memory (these last two said on stderr).
 * Every finding it adds names `path` as its config (diag_add_config).
 * With j->proj set, the job's findings are then selected (project.h). */
int job_run(struct job *j, const char *path, enum job_stage upto,
	    const char *only, struct src_set *srcs, struct diag_list *diags);

#endif
