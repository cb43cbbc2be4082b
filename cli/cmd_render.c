/*
 * cmd_render: gtplan render (cmd.h): the plan, and the simulator's view
 * of one call, as a picture (render.h draws it).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "job.h"
#include "outfile.h"
#include "render.h"

int cmd_render(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	struct render_opts ro;
	char err[512];
	const char *path = o->out && strcmp(o->out, "-") != 0 ? o->out : NULL;
	struct outfile out;
	int rc, lrc;

	if (o->n_configs != 1)
		return cli_usage_error("%s", "render needs exactly one CONFIG");
	render_opts_init(&ro);
	ro.call = o->call;
	if (o->render_format ? render_format_parse(o->render_format, &ro.format,
						   err, sizeof(err)) :
	    path ? render_format_from_path(path, &ro.format, err,
					   sizeof(err)) : 0)
		return cli_usage_error("%s", err);
	if (o->render_color && render_color_parse(o->render_color, &ro.color,
						  err, sizeof(err)))
		return cli_usage_error("%s", err);
	if (o->render_groups && render_groups_parse(o->render_groups,
						    &ro.groups, err,
						    sizeof(err)))
		return cli_usage_error("%s", err);
	if (o->render_nodes && render_nodes_parse(o->render_nodes,
						  &ro.node_first, &ro.node_last,
						  err, sizeof(err)))
		return cli_usage_error("%s", err);
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j, o->n_overrides, o->overrides);
	j.proj = o->proj;
	lrc = job_run(&j, o->configs[0], JOB_UPTO_SIM, o->call, &srcs, &diags);
	rc = cli_report(o, &diags, stderr);
	if (lrc == 2) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	if (lrc || !j.plan.grid_ok) {
		rc = cli_error(CLI_EXIT_FINDINGS, "no rank grid for '%s': "
			       "nothing to draw", o->configs[0]);
		goto out;
	}
	/* the simulator's program settings and NVLink domain (cost.h:
	 * cluster.segment_size nodes, gtplan.interconnect.nvlink_domain_size
	 * GPUs; one node unless set) */
	ro.prog = &j.sim.cost.o;
	ro.segment_size = j.sim.cost.s.domain;
	/* --groups that draw nothing are said, not silently dropped */
	if (render_groups_unlinked(&ro, &j.plan, err, sizeof(err)))
		fprintf(stderr, "gtplan: note: --groups %s\n", err);
	if (outfile_open(&out, path)) {
		rc = CLI_EXIT_USAGE;
		goto out;
	}
	/* a failed picture is never published: PATH keeps what it had */
	if (render_run(&ro, &j.plan, &j.sim, out.f, err, sizeof(err))) {
		rc = cli_error(CLI_EXIT_USAGE, "%s", err);
		outfile_abort(&out);
	} else if (outfile_commit(&out)) {
		rc = CLI_EXIT_USAGE;
	}
out:
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}
