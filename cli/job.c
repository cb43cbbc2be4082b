/*
 * job: one config through the pipeline (job.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "job.h"
#include "schema.h"

void job_init(struct job *j, int n_overrides, char *const *overrides)
{
	j->n_overrides = n_overrides;
	j->overrides = overrides;
	j->root = NULL;
	j->proj = NULL;
	j->as_written = 0;
	plan_init(&j->plan);
	sim_report_init(&j->sim);
}

void job_release(struct job *j)
{
	plan_release(&j->plan);
	sim_report_release(&j->sim);
	cfg_free(j->root);
	j->root = NULL;
}

static int job_pipeline(struct job *j, const char *path, enum job_stage upto,
			const char *only, struct src_set *srcs,
			struct diag_list *diags)
{
	size_t before = diags->n;
	int past_max = 0;

	if (cfg_load(path, srcs, diags, &j->root)) {
		for (size_t i = before; i < diags->n; i++)
			if (diags->v[i].rule &&
			    strcmp(diags->v[i].rule->code, "GT104") == 0 &&
			    diags->v[i].loc.src < 0)
				return 2;
		return 1;
	}
	if (j->n_overrides &&
	    cfg_override(j->root, j->n_overrides, j->overrides, srcs, diags))
		return 1;
	if (cfg_resolve(j->root, srcs, diags))
		return 1;
	/* the project file's hardware defaults, where the config is silent
	 * (`gtplan config` shows the config as written) */
	if (j->proj && upto != JOB_UPTO_CONFIG &&
	    proj_apply_defaults(j->proj, path, j->root, srcs, diags))
		return cli_error(2, "out of memory while reading the project "
				 "file");
	/* a float the schema takes as an integer (2.0, GT206) is planned
	 * as that integer; `gtplan config` shows the value as written */
	if ((j->as_written ?
	     schema_check_config_limits(j->root, diags, &past_max) :
	     schema_settle_config(j->root, diags, &past_max)) < 0)
		return 1;
	/* A size past its maximum (GT201 at its key) is not planned: no
	 * product of sizes is computed from it (schema.h). */
	if (past_max && upto != JOB_UPTO_CONFIG)
		return 1;
	if (upto == JOB_UPTO_CONFIG)
		return 0;
	if (plan_build(&j->plan, j->root, path, diags))
		return 1;
	if (upto == JOB_UPTO_PLAN)
		return 0;
	/* Seq numbers are positions in the list until it is sorted. */
	switch (sim_run(&j->plan, j->root, only, &j->sim, diags)) {
	case 0:
		break;
	case -2:
		return cli_error(2, "no call '%s' in the call table\n"
				 "hint: `gtplan sim CONFIG --list-calls` lists "
				 "them", only);
	default:
		return cli_error(2, "out of memory while simulating");
	}
	return 0;
}

int job_run(struct job *j, const char *path, enum job_stage upto,
	    const char *only, struct src_set *srcs, struct diag_list *diags)
{
	size_t before = diags->n, mine;
	int rc;

	/* the project file's own findings name no config */
	if (j->proj && proj_read(j->proj, path, srcs, diags)) {
		fprintf(stderr, "gtplan: out of memory\n");
		return 2;
	}
	mine = diags->n;
	rc = job_pipeline(j, path, upto, only, srcs, diags);
	for (size_t i = mine; i < diags->n; i++)
		if (diag_add_config(&diags->v[i], path)) {
			fprintf(stderr, "gtplan: out of memory\n");
			return 2;
		}

	if (j->proj && proj_filter_job(j->proj, path, j->root, srcs, diags,
				       before)) {
		fprintf(stderr, "gtplan: out of memory while selecting findings\n");
		return 2;
	}
	return rc;
}
