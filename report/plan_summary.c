/*
 * plan_summary: the plan in a few lines for people (`gtplan plan
 * --summary`): the world, the model copy, the data lanes, the batch split,
 * the rank order, the group counts and the first ranks' coordinates.
 */
#include <string.h>

#include "report.h"

void plan_print_summary(FILE *f, const struct plan *p)
{
	fprintf(f, "%s: %lld training GPUs (%lld nodes x %lld)", p->config_name,
		p->world, p->train.nodes, p->train.gpus_per_node);
	if (p->world != p->cluster.nodes * p->cluster.gpus_per_node)
		fprintf(f, " of a %lld-GPU cluster",
			p->cluster.nodes * p->cluster.gpus_per_node);
	fprintf(f, "\n");
	if (!p->grid_ok) {
		fprintf(f, "  no rank grid: fix the errors above first\n");
		return;
	}
	fprintf(f, "  model copy  TP %lld x CP %lld x GTP %lld x PP %lld = %lld GPUs"
		" (each weight in %lld shards)\n", p->tp, p->cp, p->gtp, p->pp,
		p->model_size, p->shards);
	fprintf(f, "  data        %lld model copies (D) x GTP %lld = %lld data "
		"lanes (L)\n", p->dp_replicate, p->gtp, p->lanes);
	if (p->ep > 1 || p->egtp > 1 || p->etp != p->tp)
		fprintf(f, "  experts     ETP %lld x EP %lld x EGTP %lld x PP %lld, "
			"expert DP %lld\n", p->etp, p->ep, p->egtp, p->pp,
			p->expert_grid_ok ? p->edp : 0);
	if (p->global_batch && p->global_batch % p->lanes == 0) {
		long long per = p->global_batch / p->lanes;

		fprintf(f, "  batch       %lld = %lld lanes x %lld samples",
			p->global_batch, p->lanes, per);
		if (p->micro_batch && per % p->micro_batch == 0)
			fprintf(f, " = %lld micro-batches of %lld per lane",
				per / p->micro_batch, p->micro_batch);
		fprintf(f, "\n");
	}
	char ord[64];
	fprintf(f, "  rank order  %s, driver layout %s\n",
		lay_order_str(&p->order, ord, sizeof(ord)), p->driver_layout);
	fprintf(f, "  groups     ");
	for (size_t i = 0; i < lay_group_kind_count(); i++) {
		const struct lay_group_kind *k = lay_group_kind_at(i);
		const struct lay_grid *g = k->expert ? &p->expert : &p->dense;

		if (k->expert && !p->expert_grid_ok)
			continue;
		if (strcmp(k->name, "tp") && strcmp(k->name, "gtp") &&
		    strcmp(k->name, "dp") && strcmp(k->name, "dp_replicate") &&
		    strcmp(k->name, "pp") && strcmp(k->name, "cp"))
			continue;
		fprintf(f, " %s %lldx%lld", k->name,
			lay_group_count(g, k->axes), lay_group_size(g, k->axes));
	}
	fprintf(f, "  (groups x ranks)\n");
	/* The first lane's first model copy, for a feel of the numbering. */
	long long show = p->world < 4 * p->train.gpus_per_node ?
		p->world : 4 * p->train.gpus_per_node;
	fprintf(f, "  rank -> (t,c,g,d,p) lane, first %lld ranks:\n", show);
	for (long long r = 0; r < show; r++) {
		long long c[LAY_NAXES], node, local, idx, lane;

		lay_coords(&p->dense, r, c);
		plan_rank_place(p, r, &node, &local);
		lay_group_of(&p->dense, (1u << LAY_GTP) | (1u << LAY_DP), r,
			     &idx, &lane);
		if (local == 0)
			fprintf(f, "    node %lld:", node);
		fprintf(f, " %lld(%lld,%lld,%lld,%lld,%lld)L%lld", r, c[LAY_TP],
			c[LAY_CP], c[LAY_GTP], c[LAY_DP], c[LAY_PP], lane);
		if (local == p->train.gpus_per_node - 1 || r == show - 1)
			fprintf(f, "\n");
		else if (local % 4 == 3)
			fprintf(f, "\n           ");
	}
}
