/*
 * cmd_plan: gtplan lint, plan and config (cmd.h): the pipeline (job.h) on
 * each config, then its findings, the plan JSON or summary, or the
 * resolved config.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "job.h"
#include "outfile.h"
#include "report.h"

int cmd_lint(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	int io = 0, rc;

	if (!o->n_configs)
		return cli_usage_error("%s", "lint needs at least one CONFIG");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	for (size_t i = 0; i < o->n_configs; i++) {
		struct job j;

		job_init(&j, o->n_overrides, o->overrides);
		if (job_run(&j, o->configs[i], JOB_UPTO_SIM, NULL, &srcs,
			    &diags) == 2)
			io = 1;
		job_release(&j);
	}
	/* Machine formats go to stdout (they are the data); text to stderr. */
	rc = cli_report(o, &diags, o->format == CLI_FMT_TEXT ? stderr : stdout);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return io ? CLI_EXIT_USAGE : rc;
}

int cmd_plan(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	const struct plan *p = &j.plan;
	struct outfile out;
	int rc, lrc;

	if (o->n_configs != 1)
		return cli_usage_error("%s", "plan needs exactly one CONFIG");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j, o->n_overrides, o->overrides);
	lrc = job_run(&j, o->configs[0],
		      o->no_sim ? JOB_UPTO_PLAN : JOB_UPTO_SIM,
		      NULL, &srcs, &diags);
	if (lrc == 2) {
		cli_report(o, &diags, stderr);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	diag_sort(&diags);
	if (outfile_open(&out, o->out)) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	rc = cli_report(o, &diags, stderr);
	if (lrc == 0 && o->summary)
		plan_print_summary(out.f, p);
	else if (lrc == 0 && plan_write_json(out.f, p, &j.sim, &diags)) {
		fprintf(stderr, "gtplan: error writing the plan: %s\n",
			strerror(errno));
		outfile_abort(&out);
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (outfile_commit(&out))
		rc = CLI_EXIT_USAGE;
	else if (lrc == 1)
		rc = CLI_EXIT_FINDINGS;
out:
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

int cmd_config(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	struct outfile out;
	int lrc, rc;

	if (o->n_configs != 1)
		return cli_usage_error("%s", "config needs exactly one CONFIG");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j, o->n_overrides, o->overrides);
	lrc = job_run(&j, o->configs[0], JOB_UPTO_CONFIG, NULL, &srcs, &diags);
	rc = cli_report(o, &diags, stderr);
	if (lrc)
		rc = lrc == 2 ? CLI_EXIT_USAGE : CLI_EXIT_FINDINGS;
	if (j.root && lrc != 2) {
		if (outfile_open(&out, o->out)) {
			rc = CLI_EXIT_USAGE;
		} else if (cfg_write_json(out.f, j.root)) {
			fprintf(stderr, "gtplan: error writing the config\n");
			outfile_abort(&out);
			rc = CLI_EXIT_USAGE;
		} else if (outfile_commit(&out)) {
			rc = CLI_EXIT_USAGE;
		}
	}
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}
