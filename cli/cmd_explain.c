/*
 * cmd_explain: gtplan explain (cmd.h): a diagnostic code's long story,
 * every code, a stack preset, a config's model shape with where each value
 * comes from, or one rank of a config's plan: its place, coordinates, lane
 * and groups.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "job.h"
#include "layout.h"
#include "model.h"
#include "select.h"
#include "stack.h"

static int explain_code(const char *code)
{
	const struct diag_rule *r = diag_rule_find(code);

	for (size_t i = 0; !r && i < diag_rule_count(); i++)
		if (!strcmp(diag_rule_at(i)->name, code))
			r = diag_rule_at(i);

	if (!r) {
		const struct diag_rule *near = sel_closest(code);

		fprintf(stderr, "gtplan: no diagnostic code or rule name '%s'\n",
			code);
		if (near)
			fprintf(stderr, "hint: did you mean %s (%s)?\n",
				near->code, near->name);
		fprintf(stderr, "hint: `gtplan explain --list` lists every "
			"code\n");
		return CLI_EXIT_USAGE;
	}
	printf("%s %s (%s)\n\n%s\n\n%s\n", r->code, r->name,
	       r->severity == DIAG_ERROR ? "error" :
	       r->severity == DIAG_WARNING ? "warning" : "note",
	       r->summary, r->explanation);
	return CLI_EXIT_CLEAN;
}

static void print_group(const struct lay_grid *g, const struct lay_group_kind *k,
			long long rank)
{
	long long idx, pos, n = lay_group_size(g, k->axes);

	lay_group_of(g, k->axes, rank, &idx, &pos);
	printf("  %-16s #%-6lld rank %lld of %lld: [", k->name, idx, pos, n);
	for (long long i = 0; i < n; i++) {
		if (i == 12 && n > 16) {
			printf(", ... %lld more", n - 13);
			i = n - 1;
		}
		printf("%s%lld", i ? ", " : "",
		       lay_group_member(g, k->axes, idx, i));
	}
	printf("]\n");
}

static int explain_rank(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	const struct plan *pp = &j.plan;
	int rc, lrc;

	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j, o->n_overrides, o->overrides);
	j.proj = o->proj;
	lrc = job_run(&j, o->configs[0], JOB_UPTO_PLAN, NULL, &srcs, &diags);
	rc = cli_report(o, &diags, stderr);
	if (lrc || !pp->grid_ok) {
		rc = cli_error(lrc == 2 ? CLI_EXIT_USAGE : CLI_EXIT_FINDINGS,
			       "no rank grid for '%s'", o->configs[0]);
		goto out;
	}
	if (o->rank >= pp->world) {
		rc = cli_error(CLI_EXIT_USAGE, "rank %lld does not exist: the "
			       "world has %lld ranks (0-%lld)", o->rank,
			       pp->world, pp->world - 1);
		goto out;
	}
	long long c[LAY_NAXES], node, local, idx, lane;
	lay_coords(&pp->dense, o->rank, c);
	plan_rank_place(pp, o->rank, &node, &local);
	lay_group_of(&pp->dense, (1u << LAY_GTP) | (1u << LAY_DP), o->rank, &idx,
		     &lane);
	printf("rank %lld of %lld (%s)\n", o->rank, pp->world, pp->config_name);
	printf("  node %lld, local GPU %lld\n", node, local);
	printf("  tp %lld, cp %lld, gtp %lld, dp_replicate %lld, pp %lld\n",
	       c[LAY_TP], c[LAY_CP], c[LAY_GTP], c[LAY_DP], c[LAY_PP]);
	printf("  lane %lld of %lld (data_parallel index on the driver)\n", lane,
	       pp->lanes);
	if (pp->expert_grid_ok) {
		long long e[LAY_NAXES];

		lay_coords(&pp->expert, o->rank, e);
		printf("  expert grid: etp %lld, ep %lld, egtp %lld, edp %lld\n",
		       e[LAY_TP], e[LAY_EP], e[LAY_GTP], e[LAY_DP]);
	}
	printf("groups (kind, index, rank in group, members):\n");
	for (size_t i = 0; i < lay_group_kind_count(); i++) {
		const struct lay_group_kind *k = lay_group_kind_at(i);

		if (k->expert && !pp->expert_grid_ok)
			continue;
		print_group(k->expert ? &pp->expert : &pp->dense, k, o->rank);
	}
out:
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

/* The model's shape, field by field, with where each value comes from
 * (gtplan.model > config.json > catalog > Megatron's default). */
static int explain_model(const struct cli_opts *o)
{
	struct src_set srcs;
	struct diag_list diags, quiet;
	struct model_shape m;
	struct job j;
	int rc, lrc;

	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	diag_list_init(&quiet, &srcs);
	job_init(&j, o->n_overrides, o->overrides);
	lrc = job_run(&j, o->configs[0], JOB_UPTO_CONFIG, NULL, &srcs, &diags);
	rc = cli_report(o, &diags, stderr);
	if (lrc || !j.root) {
		rc = lrc == 2 ? CLI_EXIT_USAGE : CLI_EXIT_FINDINGS;
		goto out;
	}
	/* its findings are lint's; here only the values */
	model_resolve(j.root, &m, &quiet);
	if (!m.name[0]) {
		printf("model: none (no policy.model_name, no gtplan.model)\n");
		goto out;
	}
	printf("model %s (%s)\n", m.name, o->configs[0]);
	printf("  shape %s%s\n", m.known ? "known" : m.shape_known ?
	       "known, sizes approximate" : "partly known or unknown",
	       m.config_json[0] ? ", config.json read" : "");
	if (m.config_json[0])
		printf("  config.json %s\n", m.config_json);
	for (size_t i = 0; i < model_field_count(); i++) {
		char v[MODEL_TEXT_MAX];

		model_field_value(&m, i, v, sizeof(v));
		if (!v[0])
			continue;
		printf("  %-38s %-12s %s\n", model_field_key(i), v,
		       model_origin_name(m.origin[i]));
	}
out:
	job_release(&j);
	diag_list_release(&quiet);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;

}

/* docs/rules.md: every rule under a heading of its code, so that GitHub's
 * anchor for it is the code in lower case (SARIF's helpUri, version.h). */
static int explain_markdown(void)
{
	printf("# gtplan's rules\n\n"
	       "Every finding gtplan reports has one of these codes. This page is\n"
	       "written by `gtplan explain --list --markdown` (scripts/docs.sh);\n"
	       "`gtplan explain CODE` prints the same story. Choose which are\n"
	       "reported with `--ignore`, `--select`, `--min-severity`, a\n"
	       "`# gtplan: ignore[CODE] reason` comment, `gtplan.ignore` or a\n"
	       "project file (`gtplan help lint`).\n");
	for (size_t i = 0; i < diag_rule_count(); i++) {
		const struct diag_rule *r = diag_rule_at(i);

		printf("\n## %s\n\n`%s` (%s): %s\n\n%s\n", r->code, r->name,
		       diag_severity_name(r->severity), r->summary,
		       r->explanation);
	}
	return ferror(stdout) ? CLI_EXIT_USAGE : CLI_EXIT_CLEAN;
}

int cmd_explain(const struct cli_opts *o)
{
	if ((o->summary & 2) && !o->n_configs)
		return explain_markdown();
	if (o->summary && !o->n_configs) { /* --list */
		for (size_t i = 0; i < diag_rule_count(); i++) {
			const struct diag_rule *r = diag_rule_at(i);

			printf("%s  %-30s %s\n", r->code, r->name, r->summary);
		}
		return CLI_EXIT_CLEAN;
	}
	if (o->have_rank) {
		if (o->n_configs != 1)
			return cli_usage_error("%s", "explain --rank needs "
					       "one CONFIG");
		return explain_rank(o);
	}
	if (o->n_configs == 2 && strcmp(o->configs[0], "preset") == 0) {
		if (stack_explain_preset(stdout, o->configs[1]) == 0)
			return CLI_EXIT_CLEAN;
		for (size_t i = 0; i < stack_preset_count(); i++)
			fprintf(stderr, "%s%s", i ? ", " : "gtplan: presets: ",
				stack_preset_name(i));
		fprintf(stderr, "\n");
		return cli_usage_error("unknown stack preset '%s'",
				       o->configs[1]);
	}
	if (o->n_configs == 1 && !diag_rule_find(o->configs[0]) &&
	    access(o->configs[0], F_OK) == 0)
		return explain_model(o);
	if (o->n_configs != 1 || o->n_overrides)
		return cli_usage_error("%s", "explain needs a CODE, a CONFIG "
				       "(its model), or a CONFIG with --rank N");
	return explain_code(o->configs[0]);
}
