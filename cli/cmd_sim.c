/*
 * cmd_sim: gtplan sim (cmd.h): the call table, or every call simulated,
 * and what it writes besides: the Chrome trace (--trace) and gtplan-run's
 * predicted records (--predict-record).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "cmd.h"
#include "job.h"
#include "outfile.h"
#include "predict.h"
#include "report.h"
#include "settings.h"
#include "trace.h"

/* sim --trace FILE ('-': stdout), through outfile.h. Returns 0, or -1
 * after saying why. */
static int write_trace(const char *path, struct job *j)
{
	struct outfile out;

	if (outfile_open(&out, path))
		return -1;
	if (trace_write(out.f, &j->plan, &j->sim, NULL)) {
		cli_error(0, "error writing the trace '%s'%s%s", path,
			  errno ? ": " : "", errno ? strerror(errno) : "");
		outfile_abort(&out);
		return -1;
	}
	return outfile_commit(&out);
}

int cmd_sim(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	int rc, lrc;

	if (o->n_configs != 1)
		return cli_usage_error("%s", "sim needs exactly one CONFIG");
	if (o->steps && !o->predict)
		return cli_usage_error("%s",
				       "--steps goes with --predict-record");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j, o->n_overrides, o->overrides);
	j.proj = o->proj;
	if (o->list_calls) {
		/* the table as this config makes it (gtplan.calls included) */
		lrc = job_run(&j, o->configs[0], JOB_UPTO_PLAN, NULL, &srcs,
			      &diags);
		struct call_def *v = NULL;
		struct settings set;
		size_t n = 0;
		int five = j.plan.driver_layout &&
			   strcmp(j.plan.driver_layout, "5d") == 0;

		rc = cli_report(o, &diags, stderr);
		/* from the config itself: the plan may not have been built */
		settings_init(&set);
		if (lrc != 2 && j.root) {
			settings_read(&set, j.root);
			if (calls_table(&set.sim.calls, five, &v, &n,
					&diags) == 0)
				calls_print(stdout, v, n, five);
		}
		settings_release(&set);
		free(v);
		rc = lrc == 2 ? CLI_EXIT_USAGE : rc;
		goto out;
	}
	lrc = job_run(&j, o->configs[0], JOB_UPTO_SIM, o->call, &srcs, &diags);
	if (lrc == 0 && o->predict) {
		char err[512];
		int prc = pred_write_records(&j.plan, &j.sim,
					     o->predict, o->steps ? o->steps : 1,
					     err, sizeof(err));

		if (prc) {
			cli_error(0, "--predict-record: %s", err);
			if (prc == -2)
				fprintf(stderr, "Try 'gtplan help sim'.\n");
			rc = CLI_EXIT_USAGE;
			goto out;
		}
	}
	/* the trace on stdout is the data then */
	if (lrc == 0 && o->format == CLI_FMT_TEXT &&
	    !(o->trace && strcmp(o->trace, "-") == 0))
		sim_print_text(stdout, &j.plan, &j.sim);
	rc = cli_report(o, &diags, o->format == CLI_FMT_TEXT ? stderr : stdout);
	if (lrc)
		rc = lrc == 2 ? CLI_EXIT_USAGE : CLI_EXIT_FINDINGS;
	else if (sim_not_ok(&j.sim) || !j.sim.ran)
		rc = CLI_EXIT_FINDINGS;
	if (lrc == 0 && o->trace && write_trace(o->trace, &j))
		rc = CLI_EXIT_USAGE;
out:
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}
