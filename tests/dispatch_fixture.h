/*
 * dispatch_fixture: a config's plan, driver layout and call table for the
 * dispatch suites (cfg builds the YAML, build and release the rest), and
 * what they look up: a call, its placement check, the one finding of a code
 * and its location, and Megatron's lane and coordinates of a rank.
 */
#ifndef GTPLAN_TEST_DISPATCH_FIXTURE_H
#define GTPLAN_TEST_DISPATCH_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "cfg.h"
#include "diag.h"
#include "diag_fixture.h"
#include "dispatch.h"
#include "plan.h"
#include "plan_fixture.h"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct plan plan;
	struct drv_layout dl;
	struct call_def *calls;
	size_t n_calls;
};

/* A config: TP, CP, PP, weight shards S, nodes x 8 GPUs, batches, and
 * extra top-level YAML (a gtplan: section); plan_yaml's text. */
static inline char *cfg(int tp, int cp, int pp, int shards, int nodes,
			int gbs, int mbs, const char *extra)
{
	char meg[256];

	snprintf(meg, sizeof(meg),
		 "    tensor_model_parallel_size: %d\n"
		 "    context_parallel_size: %d\n"
		 "    pipeline_model_parallel_size: %d\n"
		 "    tensor_parallel_num_weight_shards: %d\n",
		 tp, cp, pp, shards);
	return plan_yaml(meg, nodes, gbs, mbs, extra);
}

/* Builds the plan, the driver layout and the call table. */
static inline void build(struct fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	plan_init(&f->plan);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	ck_assert_int_eq(plan_build(&f->plan, f->root, "t.yaml", &f->diags),
			 0);
	ck_assert(f->plan.grid_ok);
	drv_layout_init(&f->dl, &f->plan);
	ck_assert_int_eq(calls_table(&f->plan.set.sim.calls, f->dl.five_d,
				     &f->calls, &f->n_calls, &f->diags), 0);
	ck_assert_uint_eq(f->diags.n, 0);
}

static inline void release(struct fx *f)
{
	free(f->calls);
	plan_release(&f->plan);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

static inline const struct call_def *call(const struct fx *f, const char *name)
{
	const struct call_def *c = calls_find(f->calls, f->n_calls, name);

	ck_assert_msg(c != NULL, "no call %s", name);
	return c;
}

/* The placement check of `name` with the plan's own batches. */
static inline int place(struct fx *f, const char *name)
{
	return disp_check_placement(&f->plan, &f->dl, call(f, name),
				    f->plan.global_batch, f->plan.micro_batch,
				    &f->diags);
}

static inline const struct diag *one(const struct fx *f, const char *code)
{
	const struct diag *d = diag_once(&f->diags, code);

	ck_assert_msg(d != NULL, "%s not reported", code);
	return d;
}

static inline void at(const struct diag *d, int line, int col, const char *path)
{
	ck_assert_int_ge(d->loc.src, 0);
	ck_assert_int_eq(d->loc.line, line);
	ck_assert_int_eq(d->loc.col, col);
	ck_assert_str_eq(d->path, path);
}

/* Megatron's lane of rank r (its index in its dp group). */
static inline long long lane_of(const struct plan *p, long long r)
{
	long long idx, lane;

	lay_group_of(&p->dense, (1u << LAY_GTP) | (1u << LAY_DP), r, &idx,
		     &lane);
	return lane;
}

static inline long long meg(const struct plan *p, long long r, enum lay_axis a)
{
	long long c[LAY_NAXES];

	lay_coords(&p->dense, r, c);
	return c[a];
}

#define TP4_G3_D2 cfg(4, 1, 1, 12, 3, 480, 4, NULL)
#define FIVE_D "gtplan:\n  driver_layout: 5d\n"
#define GTP_BEFORE_CP "gtplan:\n  rank_order: tp-gtp-cp-ep-dp-pp\n"

#endif
