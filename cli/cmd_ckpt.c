/*
 * cmd_ckpt: gtplan ckpt SAVED LOADED (cmd.h): both configs planned, then
 * the reshard check (sim/reshard.h) and its report (report/ckpt_text.c).
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "job.h"
#include "report.h"

int cmd_ckpt(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job js, jl;
	struct reshard_report r;
	int rc, ls, ll, err = 0;

	if (o->n_configs != 2)
		return cli_usage_error("%s",
				       "ckpt needs SAVED and LOADED configs");
	memset(&r, 0, sizeof(r));
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&js, o->n_overrides, o->overrides);
	js.proj = o->proj;
	job_init(&jl, o->n_overrides, o->overrides);
	jl.proj = o->proj;
	ls = job_run(&js, o->configs[0], JOB_UPTO_PLAN, NULL, &srcs, &diags);
	ll = job_run(&jl, o->configs[1], JOB_UPTO_PLAN, NULL, &srcs, &diags);
	if (!ls && !ll && js.plan.grid_ok && jl.plan.grid_ok)
		err = reshard_check(&js.plan, js.root, &jl.plan, jl.root, &r,
				    &diags);
	rc = cli_report(o, &diags, stderr);
	if (ls == 2 || ll == 2 || err) {
		if (err)
			cli_error(0, "out of memory");
		rc = CLI_EXIT_USAGE;
	} else if (ls || ll || !js.plan.grid_ok || !jl.plan.grid_ok) {
		rc = cli_error(CLI_EXIT_FINDINGS, "no rank grid for '%s'",
			       o->configs[ls || !js.plan.grid_ok ? 0 : 1]);
	} else {
		reshard_print(stdout, &js.plan, &jl.plan, &r);
		if (!r.reshardable)
			rc = CLI_EXIT_FINDINGS;
	}
	job_release(&js);
	job_release(&jl);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}
