/*
 * The dispatch rules' corners, call by call: dummy calls on free axes,
 * single and multiple calls, replicated outputs, GT514 (batch over the
 * weight shards, 4-D and 5-D), which calls the placement check covers, a
 * large world, and disp_returned_count and called_when against disp_rank
 * on every rank. The scenarios of docs/design.md §2.3 are in
 * test_dispatch.c.
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

	return RUN_CASES("dispatch_calls", cases, 0);
}
