/*
 * plan_fixture: a struct plan built by hand from its sizes (no config), the
 * way plan_build() derives it for the default rank order and ETP = TP,
 * EP = EG = 1, for suites that test code below the planner (programs,
 * matching). Suites that need the rules build plans from YAML instead,
 * most from plan_yaml's text (test_plan.c, dispatch_fixture.h).
 */
#ifndef GTPLAN_TEST_PLAN_FIXTURE_H
#define GTPLAN_TEST_PLAN_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "plan.h"

/* TP x CP x G x PP x D ranks; driver layout "4d" or "5d". */
static inline void plan_by_hand(struct plan *p, long long tp, long long cp,
				long long g, long long pp, long long d,
				long long gbs, long long mbs,
				const char *layout)
{
	long long size[LAY_NAXES];
	char err[128];
	struct lay_order eo;

	plan_init(p);
	p->tp = tp;
	p->cp = cp;
	p->gtp = g;
	p->pp = pp;
	p->dp_replicate = d;
	p->ep = p->egtp = 1;
	p->etp = tp;
	p->shards = tp * g;
	p->expert_shards = tp;
	p->model_size = tp * cp * g * pp;
	p->world = p->model_size * d;
	p->lanes = d * g;
	p->global_batch = gbs;
	p->micro_batch = mbs;
	p->driver_layout = strdup(layout);
	ck_assert_int_eq(lay_order_parse(LAY_DEFAULT_ORDER, &p->order, err,
					 sizeof(err)), 0);
	size[LAY_TP] = tp;
	size[LAY_CP] = cp;
	size[LAY_GTP] = g;
	size[LAY_EP] = 1;
	size[LAY_DP] = d;
	size[LAY_PP] = pp;
	lay_grid_init(&p->dense, &p->order, size);
	p->grid_ok = 1;
	p->edp = p->world / (tp * pp);
	lay_order_expert(&p->order, &eo);
	size[LAY_CP] = 1;
	size[LAY_GTP] = 1;
	size[LAY_DP] = p->edp;
	lay_grid_init(&p->expert, &eo, size);
	p->expert_grid_ok = 1;
}

/* A config with Megatron enabled: `meg` (its megatron_cfg lines, indented
 * 4), nodes x 8 GPUs, the global and micro batch, then `extra` (top-level
 * YAML, NULL: none). The text is in a static buffer: one at a time. */
static inline char *plan_yaml(const char *meg, int nodes, int gbs, int mbs,
			      const char *extra)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf),
		 "policy:\n"
		 "  train_global_batch_size: %d\n"
		 "  train_micro_batch_size: %d\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "%s"
		 "cluster:\n"
		 "  num_nodes: %d\n"
		 "  gpus_per_node: 8\n"
		 "%s",
		 gbs, mbs, meg, nodes, extra ? extra : "");
	return buf;
}

#endif
