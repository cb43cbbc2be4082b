/*
 * The driver's grid and dispatch rules, and the data-placement check
 * (GT510-GT514): the scenarios of docs/design.md §2.3 (4-D and 5-D layouts,
 * GTP before CP,
 * batches split over copies, generate with CP > 1) and the rules' corners.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "cfg.h"
#include "diag.h"
#include "dispatch.h"
#include "plan.h"
#include "harness.h"

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
 * extra top-level YAML (a gtplan: section). */
static char *cfg(int tp, int cp, int pp, int shards, int nodes, int gbs,
		 int mbs, const char *extra)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf),
		 "policy:\n"
		 "  train_global_batch_size: %d\n"
		 "  train_micro_batch_size: %d\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "    tensor_model_parallel_size: %d\n"
		 "    context_parallel_size: %d\n"
		 "    pipeline_model_parallel_size: %d\n"
		 "    tensor_parallel_num_weight_shards: %d\n"
		 "cluster:\n"
		 "  num_nodes: %d\n"
		 "  gpus_per_node: 8\n"
		 "%s",
		 gbs, mbs, tp, cp, pp, shards, nodes, extra ? extra : "");
	return buf;
}

/* Builds the plan, the driver layout and the call table. */
static void build(struct fx *f, const char *yaml)
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

static void release(struct fx *f)
{
	free(f->calls);
	plan_release(&f->plan);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

static const struct call_def *call(const struct fx *f, const char *name)
{
	const struct call_def *c = calls_find(f->calls, f->n_calls, name);

	ck_assert_msg(c != NULL, "no call %s", name);
	return c;
}

/* The placement check of `name` with the plan's own batches. */
static int place(struct fx *f, const char *name)
{
	return disp_check_placement(&f->plan, &f->dl, call(f, name),
				    f->plan.global_batch, f->plan.micro_batch,
				    &f->diags);
}

static const struct diag *one(const struct fx *f, const char *code)
{
	const struct diag *d = NULL;

	for (size_t i = 0; i < f->diags.n; i++)
		if (strcmp(diag_code(&f->diags.v[i]), code) == 0) {
			ck_assert_msg(!d, "%s reported twice", code);
			d = &f->diags.v[i];
		}
	ck_assert_msg(d != NULL, "%s not reported", code);
	return d;
}

static void at(const struct diag *d, int line, int col, const char *path)
{
	ck_assert_int_ge(d->loc.src, 0);
	ck_assert_int_eq(d->loc.line, line);
	ck_assert_int_eq(d->loc.col, col);
	ck_assert_str_eq(d->path, path);
}

/* Megatron's lane of rank r (its index in its dp group). */
static long long lane_of(const struct plan *p, long long r)
{
	long long idx, lane;

	lay_group_of(&p->dense, (1u << LAY_GTP) | (1u << LAY_DP), r, &idx,
		     &lane);
	return lane;
}

static long long meg(const struct plan *p, long long r, enum lay_axis a)
{
	long long c[LAY_NAXES];

	lay_coords(&p->dense, r, c);
	return c[a];
}

#define TP4_G3_D2 cfg(4, 1, 1, 12, 3, 480, 4, NULL)
#define FIVE_D "gtplan:\n  driver_layout: 5d\n"

START_TEST(layout_4d)
{
	struct fx f;
	long long c[AX_N];

	build(&f, TP4_G3_D2);
	ck_assert_int_eq(f.dl.five_d, 0);
	ck_assert_int_eq(f.dl.n, 4);
	ck_assert_int_eq(f.dl.axis[0], AX_PP);
	ck_assert_int_eq(f.dl.axis[1], AX_DP);
	ck_assert_int_eq(f.dl.axis[2], AX_CP);
	ck_assert_int_eq(f.dl.axis[3], AX_TP);
	ck_assert_int_eq(f.dl.world, 24);
	/* reshape(PP, -1, CP, TP): data_parallel is L = D x G, not D */
	ck_assert_int_eq(drv_axis_size(&f.dl, AX_DP), 6);
	ck_assert_int_eq(drv_axis_size(&f.dl, AX_TP), 4);
	ck_assert(!drv_has_axis(&f.dl, AX_GTP));
	ck_assert_int_eq(drv_axis_size(&f.dl, AX_GTP), 0);
	drv_coords(&f.dl, 13, c);
	ck_assert_int_eq(c[AX_PP], 0);
	ck_assert_int_eq(c[AX_DP], 3);
	ck_assert_int_eq(c[AX_CP], 0);
	ck_assert_int_eq(c[AX_TP], 1);
	ck_assert_int_eq(c[AX_GTP], -1);
	release(&f);
}
END_TEST

START_TEST(layout_5d)
{
	struct fx f;
	long long c[AX_N], n[AX_N];

	build(&f, cfg(4, 1, 1, 12, 3, 480, 4, FIVE_D));
	ck_assert_int_eq(f.dl.five_d, 1);
	ck_assert_int_eq(f.dl.n, 5);
	ck_assert_int_eq(f.dl.axis[2], AX_GTP);
	ck_assert_int_eq(drv_axis_size(&f.dl, AX_DP), 2);  /* D */
	ck_assert_int_eq(drv_axis_size(&f.dl, AX_GTP), 3); /* G */
	drv_coords(&f.dl, 13, c); /* 13 = ((1 * 3 + 0) * 1 + 0) * 4 + 1 */
	ck_assert_int_eq(c[AX_DP], 1);
	ck_assert_int_eq(c[AX_GTP], 0);
	ck_assert_int_eq(c[AX_TP], 1);
	drv_coords(&f.dl, 23, c);
	ck_assert_int_eq(c[AX_DP], 1);
	ck_assert_int_eq(c[AX_GTP], 2);
	ck_assert_int_eq(c[AX_TP], 3);
	drv_coords(&f.dl, 0, n);
	for (long long r = 0; r < 24; r++, drv_coords_next(&f.dl, n)) {
		drv_coords(&f.dl, r, c);
		ck_assert_mem_eq(n, c, sizeof(c));
	}
	release(&f);
}
END_TEST

START_TEST(coords_are_row_major)
{
	struct fx f;
	long long c[AX_N], n[AX_N];

	/* PP 2, CP 2, TP 2 on 32 GPUs: data_parallel 4 */
	build(&f, cfg(2, 2, 2, 2, 4, 64, 1, NULL));
	ck_assert_int_eq(drv_axis_size(&f.dl, AX_DP), 4);
	drv_coords(&f.dl, 0, n);
	for (long long r = 0; r < 32; r++) {
		drv_coords(&f.dl, r, c);
		ck_assert_int_eq(((c[AX_PP] * 4 + c[AX_DP]) * 2 + c[AX_CP]) * 2 +
				 c[AX_TP], r);
		/* drv_coords_next walks the same, -1 where no axis */
		ck_assert_mem_eq(n, c, sizeof(c));
		drv_coords_next(&f.dl, n);
	}
	drv_coords(&f.dl, 0, c);
	ck_assert_mem_eq(n, c, sizeof(c)); /* wrapped to rank 0 */
	release(&f);
}
END_TEST

START_TEST(axis_names)
{
	for (int a = 0; a < AX_N; a++)
		ck_assert_int_eq(drv_axis_parse(drv_axis_name((enum drv_axis)a)),
				 a);
	ck_assert_int_eq(drv_axis_parse("tensor"), AX_N);
	ck_assert_int_eq(drv_axis_parse(NULL), AX_N);
	ck_assert_str_eq(drv_axis_short(AX_GTP), "gtp");
	ck_assert_str_eq(drv_axis_name(AX_N), "?");
}
END_TEST

/* (i) the default order, 4-D: data_parallel is the lane. */
START_TEST(scenario_i_4d_places_data_by_lane)
{
	struct fx f;
	const struct call_def *train;

	build(&f, TP4_G3_D2);
	train = call(&f, "train");
	ck_assert_int_eq(disp_shard_count(&f.dl, train), 6);
	for (long long r = 0; r < 24; r++) {
		struct disp_rank d;

		disp_rank(&f.dl, train, r, &d);
		ck_assert(d.called);
		ck_assert(!d.dummy);
		ck_assert_int_eq(d.shard, lane_of(&f.plan, r));
		ck_assert_int_eq(d.returned, meg(&f.plan, r, LAY_TP) == 0);
		ck_assert_int_eq(d.left_out_by, AX_N);
	}
	ck_assert_int_eq(place(&f, "train"), 0);
	ck_assert_int_eq(place(&f, "generate"), 0); /* CP 1: nothing free */
	ck_assert_uint_eq(f.diags.n, 0);
	ck_assert(drv_follows_rank_order(&f.plan));
	release(&f);
}
END_TEST

/* (ii) the GTP PR's 5-D layout: train reaches only g = 0. */
START_TEST(scenario_ii_5d_train_skips_gtp_peers)
{
	struct fx f;
	const struct call_def *train;
	const struct diag *d;
	long long called = 0;

	build(&f, cfg(4, 1, 1, 12, 3, 480, 4, FIVE_D));
	train = call(&f, "train");
	ck_assert_int_eq(disp_shard_count(&f.dl, train), 2);
	for (long long r = 0; r < 24; r++) {
		struct disp_rank dr;
		int g = (int)meg(&f.plan, r, LAY_GTP);

		disp_rank(&f.dl, train, r, &dr);
		called += dr.called;
		ck_assert_int_eq(dr.called, g == 0);
		ck_assert_int_eq(dr.left_out_by, g == 0 ? AX_N : AX_GTP);
		ck_assert_int_eq(dr.shard, g == 0 ? meg(&f.plan, r, LAY_DP) :
				 -1);
	}
	ck_assert_int_eq(called, 8);
	ck_assert_int_eq(place(&f, "train"), 2);
	ck_assert_uint_eq(f.diags.n, 2);
	d = one(&f, "GT513");
	at(d, 14, 18, "gtplan.driver_layout");
	ck_assert_str_eq(d->msg, "train: the driver splits the batch into 2 "
			 "shards (data_parallel 2 = D, the model copies) but "
			 "Megatron has 6 lanes (D 2 x G 3)");
	ck_assert_str_eq(d->hint, "use gtplan.driver_layout: 4d, whose "
			 "data_parallel axis has L = 6 entries, or shard "
			 "gtp_weight_remat too");
	d = one(&f, "GT512");
	at(d, 14, 18, "gtplan.driver_layout");
	ck_assert_str_eq(d->msg, "train: lane 1 (g=1, d=0) gets no data: its 4 "
			 "ranks are never called (rank 4 has gtp_weight_remat "
			 "coordinate 1, an axis train neither shards nor "
			 "replicates); 4 of 6 lanes get no data (16 ranks)");
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_str_eq(d->notes[0].msg, "the driver places rank 4 at "
			 "(pipeline_parallel=0, data_parallel=0, "
			 "gtp_weight_remat=1, context_parallel=0, "
			 "tensor_parallel=0)");
	release(&f);
}
END_TEST

/* (ii) sft_v2_train shards (data_parallel, gtp_weight_remat): correct. */
START_TEST(scenario_ii_5d_sft_v2_train_is_correct)
{
	struct fx f;
	const struct call_def *sft;

	build(&f, cfg(4, 1, 1, 12, 3, 480, 4, FIVE_D));
	sft = call(&f, "sft_v2_train");
	ck_assert_int_eq(disp_shard_count(&f.dl, sft), 6);
	for (long long r = 0; r < 24; r++) {
		struct disp_rank d;

		disp_rank(&f.dl, sft, r, &d);
		ck_assert(d.called);
		ck_assert_int_eq(d.shard, meg(&f.plan, r, LAY_DP) * 3 +
				 meg(&f.plan, r, LAY_GTP));
		ck_assert_int_eq(d.shard, lane_of(&f.plan, r));
	}
	ck_assert_int_eq(place(&f, "sft_v2_train"), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	release(&f);
}
END_TEST

#define GTP_BEFORE_CP "gtplan:\n  rank_order: tp-gtp-cp-ep-dp-pp\n"

/* (iii) GTP before CP with CP > 1: the driver's context_parallel index is
 * (r / TP) % CP, Megatron's c is (r / (TP x G)) % CP. */
START_TEST(scenario_iii_gtp_before_cp_splits_lanes)
{
	struct fx f;
	const struct diag *d;

	build(&f, cfg(2, 2, 1, 4, 2, 64, 4, GTP_BEFORE_CP));
	ck_assert_int_eq(f.plan.lanes, 4);
	ck_assert(!drv_follows_rank_order(&f.plan));
	ck_assert_int_eq(place(&f, "train"), 2);
	ck_assert_uint_eq(f.diags.n, 2);
	d = one(&f, "GT510");
	at(d, 14, 15, "gtplan.rank_order");
	ck_assert_str_eq(d->msg, "train: the ranks of lane 0 (g=0, d=0) get "
			 "different data: rank 0 (t=0, c=0, g=0, d=0, p=0) gets "
			 "shard 0, rank 4 (t=0, c=1, g=0, d=0, p=0) gets shard "
			 "1; 4 of 4 lanes are split this way (8 ranks get other "
			 "data than the first rank of their lane)");
	ck_assert_str_eq(d->hint, "the driver numbers workers tensor_parallel "
			 "and context_parallel fastest, then the lanes "
			 "(data_parallel), then pipeline_parallel, but the rank "
			 "order tp-gtp-cp-ep-dp-pp puts gtp (2) before cp (2); "
			 "use gtplan.rank_order: tp-cp-gtp-ep-dp-pp, or build "
			 "the driver layout from Megatron's rank order");
	ck_assert_uint_eq(d->n_notes, 2);
	ck_assert_str_eq(d->notes[1].msg, "the driver places rank 4 at "
			 "(pipeline_parallel=0, data_parallel=1, "
			 "context_parallel=0, tensor_parallel=0), so it gets "
			 "shard 1");
	d = one(&f, "GT511");
	at(d, 14, 15, "gtplan.rank_order");
	ck_assert_str_eq(d->msg, "train: lane 0 (g=0, d=0) and lane 1 (g=1, "
			 "d=0) both get shard 0: rank 0 (t=0, c=0, g=0, d=0, "
			 "p=0) and rank 2 (t=0, c=0, g=1, d=0, p=0); 4 shards "
			 "go to more than one lane");
	ck_assert_str_eq(d->notes[1].msg, "the driver places rank 2 at "
			 "(pipeline_parallel=0, data_parallel=0, "
			 "context_parallel=1, tensor_parallel=0), so it gets "
			 "shard 0");
	release(&f);
}
END_TEST

/* (iv) the same sizes with the default order: every data call is right. */
START_TEST(scenario_iv_default_order_is_correct)
{
	struct fx f;

	build(&f, cfg(2, 2, 1, 4, 2, 64, 4, NULL));
	ck_assert(drv_follows_rank_order(&f.plan));
	for (size_t i = 0; i < f.n_calls; i++) {
		const struct call_def *c = &f.calls[i];

		if (strcmp(c->name, "generate") == 0) /* CP is free there */
			continue;
		ck_assert_int_eq(disp_check_placement(&f.plan, &f.dl, c,
			f.plan.global_batch, f.plan.micro_batch, &f.diags), 0);
	}
	ck_assert_uint_eq(f.diags.n, 0);
	release(&f);
}
END_TEST

/* Other orders: what matters is tp, cp below the lanes below pp. */
START_TEST(other_rank_orders)
{
	struct fx f;
	const struct diag *d;

	/* dp before gtp: the lane is d + D*g, as the driver's index */
	build(&f, cfg(2, 2, 1, 4, 2, 64, 4,
		      "gtplan:\n  rank_order: tp-cp-dp-gtp-ep-pp\n"));
	ck_assert(drv_follows_rank_order(&f.plan));
	ck_assert_int_eq(place(&f, "train"), 0);
	release(&f);

	/* pp before dp */
	build(&f, cfg(2, 1, 2, 4, 2, 64, 4,
		      "gtplan:\n  rank_order: tp-cp-gtp-ep-pp-dp\n"));
	ck_assert(!drv_follows_rank_order(&f.plan));
	ck_assert_int_eq(place(&f, "train"), 2);
	d = one(&f, "GT510");
	ck_assert_ptr_nonnull(strstr(d->hint, "puts pp (2) before dp (2)"));
	one(&f, "GT511");
	release(&f);
}
END_TEST

/* (v) a batch split over the copies instead of the lanes. */
START_TEST(scenario_v_split_over_copies)
{
	struct fx f;
	const struct diag *d;

	build(&f, cfg(4, 1, 1, 12, 3, 480, 4,
		      FIVE_D
		      "  calls:\n"
		      "    - name: sft_v2_train\n"
		      "      sharded: [data_parallel]\n"));
	ck_assert_int_eq(place(&f, "sft_v2_train"), 2);
	d = one(&f, "GT513");
	at(d, 16, 7, "gtplan.calls");
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_int_eq(d->notes[0].loc.line, 14); /* driver_layout: 5d */
	ck_assert_str_eq(d->msg, "sft_v2_train: the driver splits the batch "
			 "into 2 shards (data_parallel 2 = D, the model copies) "
			 "but Megatron has 6 lanes (D 2 x G 3)");
	at(one(&f, "GT512"), 16, 7, "gtplan.calls");
	release(&f);

	/* 4-D: sharding one more axis than the lanes */
	build(&f, cfg(4, 1, 1, 12, 3, 480, 4,
		      "gtplan:\n"
		      "  calls:\n"
		      "    - name: train\n"
		      "      sharded: [data_parallel, tensor_parallel]\n"
		      "      replicated: [context_parallel, "
		      "pipeline_parallel]\n"));
	ck_assert_int_eq(place(&f, "train"), 2);
	d = one(&f, "GT513");
	ck_assert_str_eq(d->msg, "train: the driver splits the batch into 24 "
			 "shards (data_parallel 6 x tensor_parallel 4) but "
			 "Megatron has 6 lanes (D 2 x G 3)");
	d = one(&f, "GT510");
	at(d, 15, 7, "gtplan.calls");
	ck_assert_str_eq(d->hint, "shard only the axes that index the lanes "
			 "(data_parallel) and replicate the others");
	release(&f);
}
END_TEST

/* (vi) generate with CP > 1: context_parallel is free. */
START_TEST(scenario_vi_generate_skips_cp_peers)
{
	struct fx f;
	const struct call_def *gen;
	const struct diag *d;

	build(&f, cfg(2, 2, 1, 4, 2, 64, 4, NULL));
	gen = call(&f, "generate");
	for (long long r = 0; r < 16; r++) {
		struct disp_rank dr;
		int c = (int)meg(&f.plan, r, LAY_CP);

		disp_rank(&f.dl, gen, r, &dr);
		ck_assert_int_eq(dr.called, c == 0);
		ck_assert_int_eq(dr.dummy, 0);
		ck_assert_int_eq(dr.left_out_by, c == 0 ? AX_N : AX_CP);
		ck_assert_int_eq(dr.returned,
				 c == 0 && meg(&f.plan, r, LAY_TP) == 0);
	}
	ck_assert_int_eq(place(&f, "generate"), 1);
	d = one(&f, "GT510");
	ck_assert_int_lt(d->loc.src, 0);
	ck_assert_str_eq(d->path, "gtplan.driver_layout");
	ck_assert_ptr_nonnull(strstr(d->msg, "rank 2 (t=0, c=1, g=0, d=0, p=0) "
				     "gets no data (never called: its "
				     "context_parallel coordinate is 1, a free "
				     "axis of generate)"));
	ck_assert_str_eq(d->hint, "add context_parallel to the replicated axes "
			 "of generate, so that every rank of a lane receives "
			 "the lane's data");
	release(&f);
}
END_TEST

START_TEST(dummy_calls_reach_free_axes_without_data)
{
	struct fx f;
	const struct call_def *gen;

	build(&f, cfg(2, 2, 1, 4, 2, 64, 4,
		      "gtplan:\n"
		      "  calls:\n"
		      "    - name: generate\n"
		      "      dummy: true\n"));
	gen = call(&f, "generate");
	for (long long r = 0; r < 16; r++) {
		struct disp_rank dr;
		int c = (int)meg(&f.plan, r, LAY_CP);

		disp_rank(&f.dl, gen, r, &dr);
		ck_assert(dr.called);
		ck_assert_int_eq(dr.dummy, c != 0);
		ck_assert_int_eq(dr.shard, c ? -1 : lane_of(&f.plan, r));
		ck_assert_int_eq(dr.left_out_by, c ? AX_CP : AX_N);
		if (c)
			ck_assert(!dr.returned);
	}
	ck_assert_int_eq(place(&f, "generate"), 1);
	ck_assert_ptr_nonnull(strstr(one(&f, "GT510")->msg,
				     "only a dummy call"));
	release(&f);
}
END_TEST

START_TEST(single_and_multiple_calls)
{
	struct fx f;
	const struct call_def *save, *init;

	build(&f, cfg(2, 2, 1, 4, 2, 64, 4,
		      "gtplan:\n"
		      "  calls:\n"
		      "    - name: save_checkpoint\n"
		      "      rank0_only: [tensor_parallel]\n"));
	save = call(&f, "save_checkpoint");
	init = call(&f, "init_nccl_reshard_comm_group");
	ck_assert_int_eq(disp_shard_count(&f.dl, save), 1);
	for (long long r = 0; r < 16; r++) {
		struct disp_rank d;
		int t = (int)meg(&f.plan, r, LAY_TP);

		disp_rank(&f.dl, save, r, &d);
		ck_assert_int_eq(d.called, t == 0);
		ck_assert_int_eq(d.returned, d.called);
		ck_assert_int_eq(d.shard, -1);
		ck_assert_int_eq(d.left_out_by, t ? AX_TP : AX_N);
		disp_rank(&f.dl, init, r, &d);
		ck_assert(d.called && d.returned);
	}
	ck_assert_int_eq(place(&f, "save_checkpoint"), 0);
	ck_assert_int_eq(place(&f, "init_nccl_reshard_comm_group"), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	release(&f);
}
END_TEST

START_TEST(output_is_replicated_keeps_coordinate_0)
{
	struct fx f;
	const struct call_def *full, *lp;

	build(&f, cfg(2, 2, 2, 2, 4, 64, 1, NULL));
	full = call(&f, "get_full_logits_ipc");
	lp = call(&f, "get_logprobs");
	for (long long r = 0; r < 32; r++) {
		struct disp_rank d;
		long long co[AX_N];

		drv_coords(&f.dl, r, co);
		disp_rank(&f.dl, full, r, &d);
		ck_assert(d.called);
		ck_assert_int_eq(d.returned, co[AX_PP] == 0);
		disp_rank(&f.dl, lp, r, &d);
		ck_assert_int_eq(d.returned, co[AX_PP] == 0 && co[AX_CP] == 0 &&
				 co[AX_TP] == 0);
	}
	release(&f);
}
END_TEST

START_TEST(GT514_batch_over_shards)
{
	struct fx f;
	const struct diag *d;
	const struct call_def *train;

	build(&f, TP4_G3_D2);
	train = call(&f, "train");
	/* the plan's own batches are GT400/GT401's */
	ck_assert_int_eq(disp_check_placement(&f.plan, &f.dl, train,
					      480, 4, &f.diags), 0);
	ck_assert_int_eq(disp_check_placement(&f.plan, &f.dl, train,
					      100, 4, &f.diags), 1);
	d = one(&f, "GT514");
	at(d, 2, 28, "policy.train_global_batch_size");
	ck_assert_str_eq(d->msg, "train: a batch of 100 samples does not split "
			 "into 6 shards");
	ck_assert_str_eq(d->hint, "use a batch that is a multiple of 6 (96 or "
			 "102)");
	diag_list_release(&f.diags);
	diag_list_init(&f.diags, &f.srcs);
	ck_assert_int_eq(disp_check_placement(&f.plan, &f.dl, train,
					      36, 4, &f.diags), 1);
	ck_assert_str_eq(one(&f, "GT514")->msg, "train: each of the 6 shards "
			 "gets 6 samples, not a multiple of the micro batch 4");
	diag_list_release(&f.diags);
	diag_list_init(&f.diags, &f.srcs);
	/* micro-batches matter for train batches only */
	ck_assert_int_eq(disp_check_placement(&f.plan, &f.dl,
		call(&f, "get_logprobs"), 36, 4, &f.diags), 0);
	ck_assert_int_eq(disp_check_placement(&f.plan, &f.dl,
		call(&f, "get_logprobs"), 3, 0, &f.diags), 1);
	d = one(&f, "GT514");
	ck_assert_int_lt(d->loc.src, 0);
	ck_assert_ptr_null(d->path);
	ck_assert_str_eq(d->hint, "use a batch that is a multiple of 6 (6)");
	release(&f);
}
END_TEST

START_TEST(GT514_in_5d_uses_the_driver_shards)
{
	struct fx f;

	/* shards != L, so even the plan's batches are checked against the
	 * driver's 2 shards */
	build(&f, cfg(4, 1, 1, 12, 3, 480, 4, FIVE_D));
	ck_assert_int_eq(disp_check_placement(&f.plan, &f.dl,
		call(&f, "train"), 7, 1, &f.diags), 3);
	ck_assert_str_eq(one(&f, "GT514")->msg, "train: a batch of 7 samples "
			 "does not split into 2 shards");
	release(&f);
}
END_TEST

START_TEST(only_data_moving_sharded_calls_are_checked)
{
	struct fx f;
	struct plan broken, bare;

	build(&f, cfg(2, 2, 1, 4, 2, 64, 4,
		      GTP_BEFORE_CP
		      "  calls:\n"
		      "    - name: score\n"
		      "      moves_data: false\n"));
	ck_assert_int_eq(place(&f, "score"), 0);
	ck_assert_int_eq(place(&f, "stream_weights_via_ipc"), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	/* no grid, nothing to check */
	broken = f.plan;
	broken.grid_ok = 0;
	ck_assert_int_eq(disp_check_placement(&broken, &f.dl,
		call(&f, "train"), 64, 4, &f.diags), 0);
	/* with none of the keys set the findings carry the key as their
	 * path (bare: f.plan without its settings; it owns nothing) */
	bare = f.plan;
	settings_init(&bare.set);
	ck_assert_int_eq(disp_check_placement(&bare, &f.dl,
		call(&f, "train"), 0, 0, &f.diags), 2);
	ck_assert_int_lt(one(&f, "GT510")->loc.src, 0);
	ck_assert_str_eq(one(&f, "GT510")->path, "gtplan.rank_order");
	release(&f);
}
END_TEST

START_TEST(large_world_is_linear)
{
	struct fx f;

	/* 262144 ranks, 32768 lanes */
	build(&f, cfg(8, 1, 1, 16, 32768, 32768 * 4, 2, NULL));
	ck_assert_int_eq(f.plan.lanes, 131072 / 4);
	ck_assert_int_eq(place(&f, "train"), 0);
	ck_assert_int_eq(place(&f, "get_logprobs"), 0);
	release(&f);
}
END_TEST

/* The O(axes) count of kept results equals disp_rank's, for every call of
 * the table, in both layouts and with CP and PP > 1. */
START_TEST(returned_count_matches_disp_rank)
{
	const char *extra[] = { NULL, "gtplan:\n  driver_layout: 5d\n" };

	for (int e = 0; e < 2; e++) {
		struct fx f;

		build(&f, cfg(2, 2, 2, 6, 6, 48, 2, extra[e]));
		for (size_t i = 0; i < f.n_calls; i++) {
			const struct call_def *c = &f.calls[i];
			long long n = 0;

			for (long long r = 0; r < f.plan.world; r++) {
				struct disp_rank dr;

				disp_rank(&f.dl, c, r, &dr);
				n += dr.returned;
			}
			ck_assert_msg(disp_returned_count(&f.dl, c) == n,
				      "%s (%s): %lld, want %lld", c->name,
				      e ? "5d" : "4d",
				      disp_returned_count(&f.dl, c), n);
		}
		release(&f);
	}
}
END_TEST

/* Whether the ranks called for c are exactly those with 0 on `axes`. */
static int described_by(const struct fx *f, const struct call_def *c,
			unsigned axes)
{
	for (long long r = 0; r < f->plan.world; r++) {
		struct disp_rank dr;
		long long co[LAY_NAXES];
		int zero = 1;

		disp_rank(&f->dl, c, r, &dr);
		lay_coords(&f->plan.dense, r, co);
		for (int a = 0; a < LAY_NAXES; a++)
			if ((axes & (1u << a)) && co[a] != 0)
				zero = 0;
		if (zero != dr.called)
			return 0;
	}
	return 1;
}

/* called_when against every rank: when it answers, exactly the ranks with
 * 0 on its axes are called; when it does not, no set of axes of size > 1
 * describes the called ranks. Layouts: 4-D, 5-D, orders the driver does
 * and does not follow (GTP before CP with G 3 and CP 2 cuts the driver's
 * context_parallel digit across Megatron's). */
START_TEST(called_when_matches_disp_rank)
{
	static const struct {
		int tp, cp, pp, shards, nodes;
		const char *extra;
		int nulls; /* 1: some call has no answer */
	} v[] = {
		{ 2, 2, 2, 6, 6, NULL, 0 },
		{ 2, 2, 2, 6, 6, "gtplan:\n  driver_layout: 5d\n", 0 },
		{ 2, 2, 1, 6, 3, GTP_BEFORE_CP, 1 },
		{ 2, 2, 1, 4, 2, GTP_BEFORE_CP, 0 },
		{ 2, 1, 2, 4, 2, "gtplan:\n  rank_order: tp-cp-gtp-ep-pp-dp\n",
		  0 },
	};
	int five_d_gtp = 0;

	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		struct fx f;
		int nulls = 0;

		build(&f, cfg(v[i].tp, v[i].cp, v[i].pp, v[i].shards,
			      v[i].nodes, 48, 2, v[i].extra));
		for (size_t k = 0; k < f.n_calls; k++) {
			const struct call_def *c = &f.calls[k];
			unsigned axes = 0, any = 0;
			int ok = disp_called_when(&f.dl, c, &f.plan, &axes);

			for (unsigned m = 0; m < (1u << LAY_NAXES) && !any;
			     m++) {
				int big = 1;

				for (int a = 0; a < LAY_NAXES; a++)
					if ((m & (1u << a)) &&
					    f.plan.dense.size[a] < 2)
						big = 0;
				if (big && described_by(&f, c, m))
					any = 1;
			}
			ck_assert_msg(ok == (int)any, "layout %zu, %s: ok %d, "
				      "describable %u", i, c->name, ok, any);
			if (ok)
				ck_assert_msg(described_by(&f, c, axes),
					      "layout %zu, %s", i, c->name);
			nulls += !ok;
			if (i == 1 && !strcmp(c->name, "train"))
				five_d_gtp = axes == 1u << LAY_GTP;
			if (i == 0)
				ck_assert_uint_eq(axes, strcmp(c->name,
					"generate") ? 0 : 1u << LAY_CP);
		}
		ck_assert_int_eq(nulls > 0, v[i].nulls);
		release(&f);
	}
	ck_assert(five_d_gtp);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "layout_4d", layout_4d },
		{ "layout_5d", layout_5d },
		{ "row_major", coords_are_row_major },
		{ "axis_names", axis_names },
		{ "i_4d", scenario_i_4d_places_data_by_lane },
		{ "ii_5d_train", scenario_ii_5d_train_skips_gtp_peers },
		{ "ii_5d_sft_v2", scenario_ii_5d_sft_v2_train_is_correct },
		{ "iii_gtp_before_cp", scenario_iii_gtp_before_cp_splits_lanes },
		{ "iv_default_order", scenario_iv_default_order_is_correct },
		{ "other_orders", other_rank_orders },
		{ "v_copies", scenario_v_split_over_copies },
		{ "vi_generate_cp", scenario_vi_generate_skips_cp_peers },
		{ "dummy", dummy_calls_reach_free_axes_without_data },
		{ "single_multiple", single_and_multiple_calls },
		{ "output", output_is_replicated_keeps_coordinate_0 },
		{ "GT514", GT514_batch_over_shards },
		{ "GT514_5d", GT514_in_5d_uses_the_driver_shards },
		{ "scope", only_data_moving_sharded_calls_are_checked },
		{ "large_world", large_world_is_linear },
		{ "returned_count", returned_count_matches_disp_rank },
		{ "called_when", called_when_matches_disp_rank },
	};

	return RUN_CASES("dispatch", cases, 0);
}
