/*
 * The checkpoint plan of MoE layers' experts (sim/ckpt.h): keys, pieces,
 * bytes and optimizer state by hand, GT711 for them under a writer
 * election over the GTP-inclusive group and GT710 for their biases
 * without expert GTP in the replica id. Random MoE layouts are
 * test_ckpt.c's.
 */
#include <check.h>
#include <string.h>

#include "ckpt_fixture.h"
#include "harness.h"

/* The experts by hand. Dense part: TP 2, G 1, D 4, 2 layers (16 keys, 23
 * main entries: per layer qkv 2 + proj 2 + 2 norms, embedding 2, output
 * 2, final norm 1, rng 2, loader 4; 6 optimizer keys, 24 shards); rank
 * 0's pieces hold `local` elements (qkv 1152 x 768, proj 768 x 384, two
 * norms per layer; embedding and output 16000 x 768; final norm) and it
 * writes 2 bytes each plus 12 per element of its quarter (F = 4).
 * Experts on EP 2 (4 local experts), ETP etp, expert GTP eg, EDP
 * 8 / (2 etp eg): one key per weight and MoE layer, [8, rows, cols];
 * 8 x etp x eg chunks each; a piece of one expert holds fc1 1024 / (etp
 * eg) x 768 and fc2 768 / eg x 512 / etp; rank 0 (edp 0) is their main
 * replica and writes 2 bytes per element plus 12 per element of its
 * 1 / EDP range of its expert buffer. */
START_TEST(experts_by_hand)
{
	const long long layer = 1152 * 768 + 768 * 384 + 2 * 768,
		local = 2 * layer + 2 * 16000 * 768 + 768;
	static const long long cases[][2] = { { 1, 2 }, { 2, 1 }, { 2, 2 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		long long etp = cases[i][0], eg = cases[i][1];
		long long edp = 8 / (2 * etp * eg);
		long long pe = 1024 / (etp * eg) * 768 + 768 / eg * (512 / etp);
		long long xe = 4 * 2 * pe; /* 4 local experts, 2 layers */
		struct sim_fx f;

		lint(&f, moe_yaml(2, 1, 1, 4, 2, etp, eg, 2, ""));
		ck_assert_uint_eq(count71(&f), 0);
		ck_assert_int_eq(f.sim.ckpt.valid, 1);
		ck_assert_int_eq(f.plan.expert.size[LAY_DP], edp);
		ck_assert_int_eq(f.sim.ckpt.keys, 16 + 2 * 2);
		ck_assert_int_eq(f.sim.ckpt.shards,
				 23 + 2 * 2 * 8 * etp * eg);
		/* dp_reshardable: a flat expert key per (etp, ep, egtp) */
		ck_assert_int_eq(f.sim.ckpt.opt_keys, 6 + 3 * etp * 2 * eg);
		ck_assert_int_eq(f.sim.ckpt.opt_shards,
				 24 + 3 * etp * 2 * eg * edp);
		ck_assert_int_eq(f.sim.ckpt.max_rank_weight_bytes,
				 2 * local + 2 * xe);
		ck_assert_int_eq(f.sim.ckpt.max_rank_bytes,
				 2 * local + 12 * local / 4 +
				 2 * xe + 12 * xe / edp);
		ck_assert_int_eq(f.sim.ckpt.writers, 8);
		sim_fx_release(&f);
	}

	/* offsets on ETP 2, EG 2: expert-grid rank 5 is (etp 1, ep 0, egtp
	 * 1): fc1 chunk 1 * 2 + 1 of 4, rows [768, 1024) of each of experts
	 * 0-3; fc2 chunk (egtp 1, etp 1) of (2, 2), a 384 x 256 piece */
	struct sim_fx f;
	struct stack s;
	struct ckpt_entry e;
	long long c[LAY_NAXES];

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 2, 2, 2, ""));
	stack_init(&s);
	lay_coords(&f.plan.expert, 5, c);
	ck_assert_int_eq(c[LAY_TP], 1);
	ck_assert_int_eq(c[LAY_EP], 0);
	ck_assert_int_eq(c[LAY_GTP], 1);
	ckpt_expert_entry_of(&f.plan, &s, CKPT_COLUMN, 1024, 768, 1, c, &e);
	ck_assert_int_eq(e.frag[0], 4);
	ck_assert_int_eq(e.chunk[0], 3);
	ck_assert_int_eq(e.local[0], 256);
	ck_assert_int_eq(e.first_row, 768);
	ck_assert_int_eq(e.main, 1);
	ckpt_expert_entry_of(&f.plan, &s, CKPT_ROW, 768, 512, 1, c, &e);
	ck_assert_int_eq(e.chunk[0], 1);
	ck_assert_int_eq(e.chunk[1], 1);
	ck_assert_int_eq(e.local[0], 384);
	ck_assert_int_eq(e.local[1], 256);
	sim_fx_release(&f);

	/* fully_reshardable on ETP 1, EG 2: the optimizer state takes the
	 * weights' chunks (11 dense keys and 17 chunks, 4 expert keys and 64
	 * chunks, 3 states each); rank 0 is main for all of its state.
	 * Writers: the dense mains (ranks 0, 1), the loader's lanes (ranks
	 * 0, 2, 4, 6) and the expert mains (edp 0: ranks 0-3). */
	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2, "  stack:\n"
			  "    optimizer_ckpt_format: fully_reshardable\n"));
	ck_assert_uint_eq(count71(&f), 0);
	ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * (11 + 4));
	ck_assert_int_eq(f.sim.ckpt.opt_shards, 3 * (17 + 64));
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes,
			 12 * (local + 4 * 2 * (512 * 768 + 384 * 512)));
	ck_assert_int_eq(f.sim.ckpt.writers, 6);
	sim_fx_release(&f);
}
END_TEST

/* Expert GTP and a writer election over the GTP-inclusive group: only
 * the egtp = 0 pieces of each expert have a main replica: GT711 for
 * fc1 and fc2 naming the key, the experts and the ranks that hold the
 * lost piece; the optimizer's model-space state alike. */
START_TEST(GT711_experts)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2, "  stack:\n"
			  "    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 2);
	ck_assert_uint_eq(sim_fx_count(&f, "GT710") + sim_fx_count(&f, "GT712"), 0);
	d = sim_fx_first(&f, "GT711");
	ck_assert_ptr_nonnull(strstr(d->msg, "checkpoint chunk (0-3, 1) of "
				     "(8, 2) of decoder.layers.0.mlp.experts."
				     "linear_fc1.weight is never written"));
	ck_assert_ptr_nonnull(strstr(d->msg, "rank 2 (etp 0, ep 0, egtp 1, "
				     "edp 0, pp 0), rank 6 (etp 0, ep 0, egtp "
				     "1, edp 1, pp 0) hold it"));
	ck_assert_ptr_nonnull(strstr(d->msg, "(2 of the 4 (EP rank, piece) "
				     "pairs have none)"));
	ck_assert_ptr_nonnull(strstr(d->hint, "sharded_replica_group: dp_cp"));
	ck_assert_int_ge(d->loc.src, 0);
	ck_assert_int_eq(f.sim.ckpt.shards, 23 + 2 * 2 * 8 * 1);
	sim_fx_release(&f);

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2, "  stack:\n"
			  "    sharded_replica_group: dp_cp_gtp\n"
			  "    optimizer_ckpt_format: fully_reshardable\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 4);
	int opt = 0;

	for (size_t i = 0; i < f.diags.n; i++)
		opt += strstr(f.diags.v[i].msg, "optimizer checkpoint chunk 1 "
			      "of 16 of optimizer.state.fp32_param.decoder."
			      "layers.0.mlp.experts.linear_fc1.weight is "
			      "never written") != NULL;
	ck_assert_int_eq(opt, 1);
	sim_fx_release(&f);

	/* without expert GTP the two groups coincide */
	lint(&f, moe_yaml(2, 1, 1, 4, 2, 2, 1, 2, "  stack:\n"
			  "    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);
}
END_TEST

/* The experts' fc2 bias is whole on every expert GTP peer: elected over
 * a group without expert GTP (replica_group: dp_cp) its EG = 2 peers
 * both save it: GT710 naming the key and both ranks (the framework's
 * GT641 says the same before launch). With the default stack it is one
 * more valid key per MoE layer. */
START_TEST(GT710_expert_bias)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2,
			  "    add_bias_linear: true\n"
			  "  stack:\n    replica_group: dp_cp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT710"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT711") + sim_fx_count(&f, "GT712"), 0);
	ck_assert_uint_eq(sim_fx_count(&f, "GT641"), 1);
	d = sim_fx_first(&f, "GT710");
	ck_assert_ptr_nonnull(strstr(d->msg, "checkpoint chunk (0-3, 0) of "
				     "(8, 1) of decoder.layers.0.mlp.experts."
				     "linear_fc2.bias claimed 2 times by main "
				     "replicas (rank 0 (etp 0, ep 0, egtp 0, "
				     "edp 0, pp 0), rank 2 (etp 0, ep 0, egtp "
				     "1, edp 0, pp 0))"));
	ck_assert_ptr_nonnull(strstr(d->msg, "replica_group: dp_cp"));
	ck_assert_ptr_nonnull(strstr(d->hint, "replica_group: dp_cp_gtp"));
	sim_fx_release(&f);

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2,
			  "    add_bias_linear: true\n"));
	ck_assert_uint_eq(count71(&f), 0);
	ck_assert_int_eq(f.sim.ckpt.keys, 16 + 2 * 3);
	/* 8 experts x 1 chunk per layer */
	ck_assert_int_eq(f.sim.ckpt.shards, 23 + 2 * (2 * 8 * 2 + 8));
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "experts", experts_by_hand },
		{ "GT711_experts", GT711_experts },
		{ "GT710_experts", GT710_expert_bias },
	};

	return RUN_CASES("ckpt_experts", cases, 120);
}
