/*
 * cmd_run: gtplan run (cmd.h): plans as gtplan plan does, then launches
 * gtplan-run on the plan (launch.h).
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "job.h"
#include "launch.h"
#include "report.h"

/* gtplan run's plan file, written by launch_plan. */
struct run_plan {
	const struct plan *plan;
	const struct sim_report *sim;
	const struct diag_list *diags;
};

static int write_run_plan(FILE *f, void *arg)
{
	const struct run_plan *r = arg;

	return plan_write_json(f, r->plan, r->sim, r->diags);
}

int cmd_run(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	struct run_plan rp = { &j.plan, &j.sim, &diags };
	struct launch_opts lo = o->run;
	size_t n_err;
	char err[1024];
	int rc, lrc;

	if (o->n_configs != 1)
		return cli_usage_error("%s", "run needs exactly one CONFIG");
	if (o->out && !strcmp(o->out, "-"))
		return cli_usage_error("%s", "run -o needs a file name");
	lo.plan_out = o->out;
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j, o->n_overrides, o->overrides);
	j.proj = o->proj;
	lrc = job_run(&j, o->configs[0], JOB_UPTO_SIM, NULL, &srcs, &diags);
	rc = cli_report(o, &diags, stderr);
	n_err = diag_count(&diags, DIAG_ERROR);
	lo.nodes = j.plan.train.nodes; /* srun, sbatch, the hostfile */
	lo.per_node = j.plan.train.gpus_per_node;
	if (lrc == 2) {
		rc = CLI_EXIT_USAGE;
	} else if (lrc || !j.plan.grid_ok) {
		rc = cli_error(CLI_EXIT_FINDINGS, "no rank grid for '%s': "
			       "nothing to run", o->configs[0]);
	} else if (rc && !lo.force) {
		cli_error(0, "not running '%s': the plan has %zu error%s%s; "
			  "fix the config, or pass --force to run it anyway",
			  o->configs[0], n_err, n_err == 1 ? "" : "s",
			  n_err ? "" : " and warnings count (--strict)");
	} else if ((rc = launch_plan(&lo, j.plan.world, write_run_plan, &rp,
				     stdout, err, sizeof(err)))) {
		cli_error(0, "%s", err);
	}
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}
