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
#include "lint_files.h"
#include "outfile.h"
#include "report.h"

int cmd_lint(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct lint_files files = { 0 };
	char err[512];
	int io = 0, rc;

	if (!o->n_configs)
		return cli_usage_error("%s", "lint needs at least one CONFIG");
	if (lint_files_add(&files, o->configs, o->n_configs, err, sizeof(err))) {
		lint_files_release(&files);
		return cli_usage_error("%s", err);
	}
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	for (size_t i = 0; i < files.n; i++) {
		struct job j;

		job_init(&j, o->n_overrides, o->overrides);
		j.proj = o->proj;
		if (job_run(&j, files.v[i], JOB_UPTO_SIM, NULL, &srcs,
			    &diags) == 2)
			io = 1;
		job_release(&j);
	}
	diags.targets = (const char *const *)files.v;
	diags.n_targets = files.n;
	diags.show_configs = files.n > 1;
	/* Machine formats go to stdout (they are the data); text to stderr. */
	rc = cli_report(o, &diags, o->format == CLI_FMT_TEXT ? stderr : stdout);
	diag_list_release(&diags);
	src_set_release(&srcs);
	lint_files_release(&files);
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
	j.proj = o->proj;
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
		rc = cli_error(CLI_EXIT_USAGE, "error writing the plan: %s",
			       strerror(errno));
		outfile_abort(&out);
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
	j.proj = o->proj;
	j.as_written = 1;
	lrc = job_run(&j, o->configs[0], JOB_UPTO_CONFIG, NULL, &srcs, &diags);
	rc = cli_report(o, &diags, stderr);
	if (lrc)
		rc = lrc == 2 ? CLI_EXIT_USAGE : CLI_EXIT_FINDINGS;
	if (j.root && lrc != 2) {
		if (outfile_open(&out, o->out)) {
			rc = CLI_EXIT_USAGE;
		} else if (cfg_write_json(out.f, j.root)) {
			rc = cli_error(CLI_EXIT_USAGE,
				       "error writing the config");
			outfile_abort(&out);
		} else if (outfile_commit(&out)) {
			rc = CLI_EXIT_USAGE;
		}
	}
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}
