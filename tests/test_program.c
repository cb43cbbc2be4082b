/*
 * Collective programs: which ops each stage issues, in which order, on
 * which group, for small layouts.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "program.h"
#include "harness.h"
#include "plan_fixture.h"

static void mkplan(struct plan *p, long long tp, long long cp, long long g,
		   long long pp, long long d, long long gbs, long long mbs)
{
	plan_by_hand(p, tp, cp, g, pp, d, gbs, mbs, "4d");
}

/* Ops of `kind` on group `name` (NULL: any group). */
static size_t count(const struct prog *pg, unsigned kind, const char *name)
{
	unsigned g = name ? prog_kind(name) : PROG_GK_NONE;
	size_t n = 0;

	for (size_t i = 0; i < pg->n; i++)
		if (pg->ops[i].kind == kind && (!name || pg->ops[i].group == g))
			n++;
	return n;
}

static void build(struct prog *pg, const struct plan *p,
		  enum call_program kind, long long stage, int sp)
{
	struct prog_opts o;

	prog_opts_init(&o);
	o.sequence_parallel = sp;
	ck_assert_int_eq(prog_build(pg, p, NULL, kind, stage, &o), 0);
}

START_TEST(microbatches_split_over_lanes)
{
	struct plan p;

	mkplan(&p, 2, 1, 3, 1, 2, 48, 4); /* L = 6: 48 / (6 x 4) = 2 */
	ck_assert_int_eq(prog_microbatches(&p, 0), 2);
	ck_assert_int_eq(prog_microbatches(&p, 8), 1);
	p.global_batch = 0;
	ck_assert_int_eq(prog_microbatches(&p, 0), 1);
	plan_release(&p);
}
END_TEST

/* Default shape: 4 layers of 4 GTP-sharded weights. Each weight is
 * gathered once in forward and once in backward per micro-batch, and its
 * gradient reduce-scattered once. */
START_TEST(gtp_gathers_per_layer_weight_and_microbatch)
{
	struct plan p;
	struct prog pg;

	mkplan(&p, 2, 1, 2, 1, 2, 48, 4); /* L 4, 3 micro-batches */
	build(&pg, &p, PROG_TRAIN, 0, 0);
	ck_assert_int_eq(pg.microbatches, 3);
	ck_assert_int_eq(pg.n_layers, 4);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 4 * 4 * 3 * 2);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "gtp"), 4 * 4 * 3);
	prog_release(&pg);
	build(&pg, &p, PROG_FORWARD, 0, 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 4 * 4 * 3);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "gtp"), 0);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

START_TEST(no_gtp_ops_when_g_is_1)
{
	struct plan p;
	struct prog pg;

	mkplan(&p, 2, 1, 1, 1, 4, 16, 1);
	build(&pg, &p, PROG_TRAIN, 0, 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 0);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "gtp"), 0);
	ck_assert_uint_gt(count(&pg, OP_ALL_REDUCE, "tp"), 0);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

START_TEST(tp_collectives_follow_sequence_parallel)
{
	struct plan p;
	struct prog pg;
	size_t per = 4 * 2; /* layers x micro-batches */

	mkplan(&p, 4, 1, 1, 1, 2, 16, 4); /* L 2: 2 micro-batches */
	build(&pg, &p, PROG_TRAIN, 0, 0);
	/* no SP: an all-reduce after attention and after the MLP, and two
	 * more in backward */
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "tp"), per * 4);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "tp"), 0);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "tp"), 0);
	prog_release(&pg);
	build(&pg, &p, PROG_TRAIN, 0, 1);
	/* SP: gather in, scatter out, and the transposes in backward */
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "tp"), 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "tp"), per * 4);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "tp"), per * 4);
	prog_release(&pg);
	plan_release(&p);

	mkplan(&p, 1, 1, 2, 1, 2, 16, 4);
	build(&pg, &p, PROG_TRAIN, 0, 1);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "tp") +
			  count(&pg, OP_REDUCE_SCATTER, "tp") +
			  count(&pg, OP_ALL_REDUCE, "tp"), 0);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

START_TEST(cp_gathers_keys_and_values)
{
	struct plan p;
	struct prog pg;

	mkplan(&p, 1, 2, 1, 1, 2, 8, 1); /* L 2: 4 micro-batches */
	build(&pg, &p, PROG_TRAIN, 0, 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "cp"), 4 * 4);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "cp"), 4 * 4);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* NeMo-RL's train: the data size and token counts are all-reduced over
 * the lanes (Megatron's default data-parallel group) around a world
 * barrier, before any micro-batch; it ends with a barrier. */
START_TEST(train_starts_with_token_counts_and_ends_with_barrier)
{
	struct plan p;
	struct prog pg;
	unsigned dp = prog_kind("dp");
	char lab[256];

	mkplan(&p, 2, 1, 2, 1, 2, 16, 1);
	build(&pg, &p, PROG_TRAIN, 0, 0);
	ck_assert_uint_eq(pg.ops[0].kind, OP_ALL_REDUCE);
	ck_assert_uint_eq(pg.ops[0].group, dp);
	ck_assert_uint_eq(pg.ops[0].what, W_DATASET);
	ck_assert_uint_eq(pg.ops[1].kind, OP_BARRIER);
	ck_assert_uint_eq(pg.ops[1].group, PROG_GK_WORLD);
	ck_assert_uint_eq(pg.ops[2].group, dp);
	ck_assert_uint_eq(pg.ops[2].what, W_TOKENS);
	ck_assert_uint_eq(pg.ops[3].group, prog_kind("gtp"));
	ck_assert_str_eq(prog_op_label(&pg, &pg.ops[3], lab, sizeof(lab)),
			 "the GTP all-gather of layer 0's linear_qkv weight "
			 "(forward, micro-batch 0)");
	ck_assert_uint_eq(pg.ops[pg.n - 2].kind, OP_BARRIER);
	ck_assert_uint_eq(pg.ops[pg.n - 2].group, PROG_GK_WORLD);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* Each layer's DP reduction comes after every GTP reduce-scatter of that
 * layer; GTP-replicated gradients reduce over dp_cp. */
START_TEST(dp_reduction_after_gtp_reduce_scatter)
{
	struct plan p;
	struct prog pg;
	unsigned gtp = prog_kind("gtp"), dpcr = prog_kind("dp_cp_replicate");

	mkplan(&p, 2, 2, 2, 1, 2, 16, 1);
	build(&pg, &p, PROG_TRAIN, 0, 0);
	for (int layer = 0; layer < 4; layer++) {
		size_t last_rs = 0, red = 0;

		for (size_t i = 0; i < pg.n; i++) {
			const struct prog_op *op = &pg.ops[i];

			if (op->layer != layer)
				continue;
			if (op->group == gtp && op->kind == OP_REDUCE_SCATTER)
				last_rs = i;
			if (op->group == dpcr && op->kind == OP_REDUCE_SCATTER)
				red = i;
		}
		ck_assert_uint_gt(red, 0);
		ck_assert_uint_gt(red, last_rs);
	}
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "dp_cp"), 1);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "dp_cp_replicate"), 4);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* The k-th exchange stage s has with s+1 is the complement of the k-th
 * one stage s+1 has with s (1F1B's combined p2p calls). */
START_TEST(one_f_one_b_pairs_every_exchange)
{
	static const long long mbs[] = { 1, 2, 3, 6, 9 };

	for (size_t t = 0; t < sizeof(mbs) / sizeof(*mbs); t++) {
		struct plan p;
		struct prog pg[4];

		mkplan(&p, 1, 1, 1, 4, 1, mbs[t], 1);
		for (int s = 0; s < 4; s++)
			build(&pg[s], &p, PROG_TRAIN, s, 0);
		for (int s = 0; s < 3; s++) {
			size_t i = 0, j = 0, pairs = 0, sends = 0;

			for (;;) {
				while (i < pg[s].n && !(pg[s].ops[i].kind ==
				       OP_P2P && pg[s].ops[i].flags & PROG_TO_NEXT))
					i++;
				while (j < pg[s + 1].n && !(pg[s + 1].ops[j].kind ==
				       OP_P2P && !(pg[s + 1].ops[j].flags &
						   PROG_TO_NEXT)))
					j++;
				if (i == pg[s].n || j == pg[s + 1].n)
					break;
				unsigned a = pg[s].ops[i].flags;
				unsigned b = pg[s + 1].ops[j].flags;

				ck_assert_uint_eq(!!(a & PROG_SEND_FWD),
						  !!(b & PROG_RECV_FWD));
				ck_assert_uint_eq(!!(a & PROG_RECV_BWD),
						  !!(b & PROG_SEND_BWD));
				sends += !!(a & PROG_SEND_FWD);
				pairs++;
				i++;
				j++;
			}
			ck_assert_uint_eq(i, pg[s].n);
			ck_assert_uint_eq(j, pg[s + 1].n);
			ck_assert_uint_eq(sends, (size_t)mbs[t]);
			ck_assert_uint_ge(pairs, (size_t)mbs[t]);
		}
		/* stage 0 receives nothing forward; the last sends nothing */
		for (size_t i = 0; i < pg[0].n; i++)
			ck_assert(!(pg[0].ops[i].flags & PROG_RECV_FWD) ||
				  pg[0].ops[i].kind != OP_P2P);
		for (int s = 0; s < 4; s++)
			prog_release(&pg[s]);
		plan_release(&p);
	}
}
END_TEST

START_TEST(forward_only_sends_activations)
{
	struct plan p;
	struct prog pg;

	mkplan(&p, 1, 1, 2, 2, 1, 8, 1); /* L 2: 4 micro-batches */
	build(&pg, &p, PROG_FORWARD, 1, 0);
	for (size_t i = 0; i < pg.n; i++)
		if (pg.ops[i].kind == OP_P2P)
			ck_assert_uint_eq(pg.ops[i].flags, PROG_RECV_FWD);
	ck_assert_uint_eq(count(&pg, OP_P2P, "pp"), 4);
	ck_assert_int_eq(pg.first_layer, 2);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* Refit rebuilds each weight GTP first, then TP. */
START_TEST(refit_gathers_gtp_then_tp)
{
	struct plan p;
	struct prog pg;
	unsigned gtp = prog_kind("gtp"), tp = prog_kind("tp");

	mkplan(&p, 2, 1, 3, 1, 1, 0, 0);
	build(&pg, &p, PROG_REFIT_IPC, 0, 0);
	ck_assert_uint_eq(pg.n, 4 * 4 * 2);
	for (size_t i = 0; i < pg.n; i += 2) {
		ck_assert_uint_eq(pg.ops[i].group, gtp);
		ck_assert_uint_eq(pg.ops[i + 1].group, tp);
		ck_assert_int_eq(pg.ops[i].weight, pg.ops[i + 1].weight);
		ck_assert_int_eq(pg.ops[i].layer, pg.ops[i + 1].layer);
		ck_assert_uint_eq(pg.ops[i].kind, OP_ALL_GATHER);
		ck_assert_uint_eq(pg.ops[i + 1].kind, OP_ALL_GATHER);
	}
	ck_assert_uint_eq(count(&pg, OP_P2P, NULL) + count(&pg, OP_BARRIER,
							    NULL), 0);
	prog_release(&pg);
	build(&pg, &p, PROG_REFIT_RESHARD, 0, 0);
	ck_assert_uint_eq(pg.n, 4 * 4);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 16);
	prog_release(&pg);
	build(&pg, &p, PROG_REFIT_BROADCAST, 0, 0);
	ck_assert_uint_eq(count(&pg, OP_BROADCAST, NULL), 16);
	ck_assert_uint_eq(pg.ops[pg.n - 1].group, PROG_GK_TRAIN_INFER);
	ck_assert_int_eq(pg.ops[pg.n - 1].root, 0);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* Save gathers RNG states over dp_cp, which includes the GTP axis. */
START_TEST(save_gathers_rng_over_dp_cp_with_gtp)
{
	struct plan p;
	struct prog pg;
	const struct lay_group_kind *gk;

	mkplan(&p, 2, 1, 2, 1, 2, 0, 0);
	build(&pg, &p, PROG_SAVE, 0, 0);
	ck_assert_uint_eq(pg.n, 2);
	ck_assert_uint_eq(pg.ops[0].kind, OP_ALL_GATHER);
	gk = lay_group_kind_at(pg.ops[0].group);
	ck_assert_ptr_nonnull(gk);
	ck_assert_str_eq(gk->name, "dp_cp");
	ck_assert(gk->axes & (1u << LAY_GTP));
	ck_assert_uint_eq(pg.ops[0].what, W_RNG);
	ck_assert_uint_eq(pg.ops[1].kind, OP_BARRIER);
	prog_release(&pg);
	build(&pg, &p, PROG_LOAD, 0, 0);
	ck_assert_uint_eq(pg.n, 1);
	prog_release(&pg);
	build(&pg, &p, PROG_GROUP_INIT, 0, 0);
	ck_assert_uint_eq(pg.n, 1);
	ck_assert_uint_eq(pg.ops[0].group, PROG_GK_WORLD);
	prog_release(&pg);
	build(&pg, &p, PROG_NONE, 0, 0);
	ck_assert_uint_eq(pg.n, 0);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

START_TEST(experts_dispatch_over_ep_and_gather_over_egtp)
{
	struct plan p;
	struct prog pg;
	struct model_shape m;
	long long size[LAY_NAXES];
	struct lay_order eo;

	mkplan(&p, 1, 1, 1, 1, 8, 8, 1); /* L 8: 1 micro-batch */
	p.ep = 2;
	p.etp = 1;
	p.egtp = 2;
	p.edp = 2;
	lay_order_expert(&p.order, &eo);
	size[LAY_TP] = 1;
	size[LAY_CP] = 1;
	size[LAY_EP] = 2;
	size[LAY_GTP] = 2;
	size[LAY_DP] = 2;
	size[LAY_PP] = 1;
	lay_grid_init(&p.expert, &eo, size);
	prog_default_shape(&m);
	m.num_moe_experts = 4;
	m.moe_ffn_hidden_size = 512;
	m.moe_router_topk = 2;
	ck_assert_int_eq(prog_build(&pg, &p, &m, PROG_TRAIN, 0, NULL), 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_TO_ALL, "ep"), 4 * 4);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "egtp"), 4 * 2 * 2);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "egtp"), 4 * 2);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "edp"), 4);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 0);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

START_TEST(gtp_shard_bytes_pad_the_tp_slice)
{
	struct plan p;
	struct prog pg;
	struct model_shape m;
	struct prog_opts o;

	/* linear_qkv of the default shape: (16 + 2 x 8) x 64 = 2048 rows x
	 * 1024; TP 2: 1024 rows; G 3, pad 16: padded to 1056, 352 rows */
	mkplan(&p, 2, 1, 3, 1, 1, 0, 0);
	prog_default_shape(&m);
	prog_opts_init(&o);
	ck_assert_int_eq(prog_build(&pg, &p, &m, PROG_REFIT_IPC, 0, &o), 0);
	ck_assert_int_eq(pg.ops[0].amount, 352LL * 1024 * 2);
	ck_assert_int_eq(pg.ops[1].amount, 1024LL * 1024 * 2);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "microbatches", microbatches_split_over_lanes },
		{ "gtp_counts", gtp_gathers_per_layer_weight_and_microbatch },
		{ "gtp_off", no_gtp_ops_when_g_is_1 },
		{ "tp_sp", tp_collectives_follow_sequence_parallel },
		{ "cp_kv", cp_gathers_keys_and_values },
		{ "train_order", train_starts_with_token_counts_and_ends_with_barrier },
		{ "grad_order", dp_reduction_after_gtp_reduce_scatter },
		{ "1f1b", one_f_one_b_pairs_every_exchange },
		{ "forward", forward_only_sends_activations },
		{ "refit", refit_gathers_gtp_then_tp },
		{ "save", save_gathers_rng_over_dp_cp_with_gtp },
		{ "experts", experts_dispatch_over_ep_and_gather_over_egtp },
		{ "bytes", gtp_shard_bytes_pad_the_tp_slice },
	};

	return RUN_CASES("program", cases, 0);
}
