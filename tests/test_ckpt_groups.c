/*
 * The checkpoint plan's replica groups (sim/ckpt.h): GT710 / GT712 from
 * the settings of NeMo-RL PR #4512's stack (replica_group and
 * rng_state_group: dp_cp), and GT711 from a writer election over the
 * GTP-inclusive group (sharded_replica_group: dp_cp_gtp), on dense
 * layouts; the experts' alike are test_ckpt_experts.c's.
 */
#include <check.h>
#include <string.h>

#include "ckpt_fixture.h"
#include "harness.h"

/* TP 2, G 3 with rng_state_group: dp_cp: the 3 GTP peers of each TP rank
 * claim one rng_state key. */
START_TEST(GT712_rng_state_group)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, yaml(2, 1, 3, 1, 1,
		      "  stack:\n    rng_state_group: dp_cp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT712"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT710"), 0);
	d = sim_fx_first(&f, "GT712");
	ck_assert_ptr_nonnull(strstr(d->msg, "rng_state/shard_0.0_1.2"));
	ck_assert_ptr_nonnull(strstr(d->msg, "3 main replicas"));
	ck_assert_ptr_nonnull(strstr(d->msg, "rank 2 (tp 0, cp 0, gtp 1"));
	ck_assert_ptr_nonnull(strstr(d->msg, "rank 4 (tp 0, cp 0, gtp 2"));
	ck_assert_ptr_nonnull(strstr(d->msg, "dp_cp group"));
	sim_fx_release(&f);
	/* no checkpoints saved: nothing to report, the summary stays */
	lint(&f, strstr(yaml(2, 1, 3, 1, 1,
			     "  stack:\n    rng_state_group: dp_cp\n"),
			"policy:"));
	ck_assert_uint_eq(count71(&f), 0);
	ck_assert_int_eq(f.sim.ckpt.valid, 1);
	sim_fx_release(&f);
	/* GTP off: no collision */
	lint(&f, yaml(2, 1, 1, 1, 3,
		      "  stack:\n    rng_state_group: dp_cp\n"));
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);
}
END_TEST

/* replica_group: dp_cp: G main replicas for each norm. */
START_TEST(GT710_replica_group)
{
	struct sim_fx f;
	const struct diag *d;
	struct stack s;
	struct ckpt_entry e;
	int mains = 0;

	lint(&f, yaml(2, 1, 3, 1, 1, "  stack:\n    replica_group: dp_cp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT710"), 3); /* the three norms */
	ck_assert_uint_eq(sim_fx_count(&f, "GT712"), 0);
	d = sim_fx_first(&f, "GT710");
	ck_assert_ptr_nonnull(strstr(d->msg,
				     "decoder.layers.0.input_layernorm.weight"));
	ck_assert_ptr_nonnull(strstr(d->msg, "claimed 3 times"));
	ck_assert_ptr_nonnull(strstr(d->msg, "replica_group: dp_cp"));
	stack_init(&s);
	s.replica_dp_cp = 1;
	for (long long r = 0; r < 6; r++) {
		entry(&f, &s, r, CKPT_NORM, 768, 1, 1, &e);
		mains += e.main;
	}
	ck_assert_int_eq(mains, 3);
	/* sharded weights are unaffected */
	entry(&f, &s, 5, CKPT_COLUMN, 12, 4, 1, &e);
	ck_assert_int_eq(e.main, 1);
	sim_fx_release(&f);
}
END_TEST

/* sharded_replica_group: dp_cp_gtp: the writers of GTP-sharded pieces
 * are elected over the GTP-inclusive group, so only g = 0 pieces have a
 * main replica (docs/notes/megatron-semantics.md §2.4): GT711 for each of
 * the 6 sharded weights.
 * Without GTP the two groups coincide: nothing to report. */
START_TEST(GT711_sharded_replica_group)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, yaml(2, 1, 3, 1, 2,
		      "  stack:\n    sharded_replica_group: dp_cp_gtp\n"));
	/* 4 layer weights, the embedding and the output layer */
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 6);
	ck_assert_uint_eq(sim_fx_count(&f, "GT710") + sim_fx_count(&f, "GT712"), 0);
	d = sim_fx_first(&f, "GT711");
	ck_assert_ptr_nonnull(strstr(d->msg, "checkpoint chunk (1) of (6) of "
				     "decoder.layers.0.self_attention."
				     "linear_qkv.weight is never written"));
	ck_assert_ptr_nonnull(strstr(d->msg, "(4 of the 6 chunks have none)"));
	ck_assert_ptr_nonnull(strstr(d->msg, "sharded_replica_group: "
				     "dp_cp_gtp"));
	ck_assert_int_ge(d->loc.src, 0); /* at the stack key */
	ck_assert_ptr_nonnull(strstr(d->hint, "sharded_replica_group: dp_cp"));
	/* row-parallel: the first chunk with g > 0 is (1, 0) of (3, 2) */
	int row = 0;

	for (size_t i = 0; i < f.diags.n; i++)
		row += strcmp(diag_code(&f.diags.v[i]), "GT711") == 0 &&
		       strstr(f.diags.v[i].msg, "chunk (1, 0) of (3, 2) of "
			      "decoder.layers.0.self_attention.linear_proj") &&
		       strstr(f.diags.v[i].msg, "(4 of the 6 chunks");
	ck_assert_int_eq(row, 1);
	sim_fx_release(&f);

	lint(&f, yaml(2, 1, 1, 1, 3,
		      "  stack:\n    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "GT712", GT712_rng_state_group },
		{ "GT710", GT710_replica_group },
		{ "GT711", GT711_sharded_replica_group },
	};

	return RUN_CASES("ckpt_groups", cases, 120);
}
