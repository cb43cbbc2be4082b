/*
 * The driver's grid and the data-placement check (GT510-GT514) on the
 * scenarios of docs/design.md §2.3: 4-D and 5-D layouts, GTP before CP,
 * other rank orders, batches split over copies, generate with CP > 1.
 * The dispatch rules' corners are in test_dispatch_calls.c.
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
#include "dispatch_fixture.h"
#include "harness.h"

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
	};

	return RUN_CASES("dispatch", cases, 0);
}
