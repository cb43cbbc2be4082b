/*
 * The checkpoint plan's optimizer state (sim/ckpt.h) in each of
 * Megatron's formats (dp_reshardable, fully_reshardable,
 * fully_sharded_model_space, and without the distributed optimizer):
 * keys, pieces, bytes and writers, GT711 under the GTP-inclusive writer
 * election and GT735 without Megatron-LM PR #7162.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "ckpt_fixture.h"
#include "harness.h"

/* The optimizer state per format, on TP 2, G 3, D 2 (F = CP x D = 2
 * ranges), 2 layers. Per layer a rank's pieces hold qkv 384 x 768, proj
 * 256 x 384, fc1 1024 x 768, fc2 256 x 1536 and the two norms 768 each;
 * the embedding and the output layer a piece of 5334 x 768 each (32000
 * rows in TP slices of 16000, padded to 16002 for G 3), the final norm
 * 768; 3 fp32 states, 12 bytes per element. */
START_TEST(optimizer_formats)
{
	const long long layer = 384 * 768 + 256 * 384 + 1024 * 768 +
		256 * 1536 + 2 * 768, local = 2 * layer + 2 * 5334 * 768 + 768;
	struct sim_fx f;

	/* dp_reshardable (assumed when unset): a flat key per (t, g) and
	 * state, F chunks; each rank writes half its buffer */
	lint(&f, yaml(2, 1, 3, 1, 2, ""));
	ck_assert_str_eq(f.sim.ckpt.opt_format, "dp_reshardable");
	ck_assert_int_eq(f.sim.ckpt.opt_format_set, 0);
	ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * 6);
	ck_assert_int_eq(f.sim.ckpt.opt_shards, 3 * 6 * 2);
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes, 12 * local / 2);
	ck_assert_int_eq(f.sim.ckpt.writers, 12);
	/* rank 0 also writes its bf16 pieces and the norms */
	ck_assert_int_eq(f.sim.ckpt.max_rank_bytes,
			 12 * local / 2 + 2 * local);
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);

	/* fully_reshardable: the weights' chunks and writers (copy 0) */
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_reshardable\n"));
	ck_assert_str_eq(f.sim.ckpt.opt_format, "fully_reshardable");
	ck_assert_int_eq(f.sim.ckpt.opt_format_set, 1);
	ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * (2 * 6 + 3));
	ck_assert_int_eq(f.sim.ckpt.opt_shards,
			 3 * (2 * (4 * 6 + 2) + 2 * 6 + 1));
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes, 12 * local);
	ck_assert_int_eq(f.sim.ckpt.writers, 6 + 3);
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);

	/* without the distributed optimizer: the same model-space layout */
	const char *y = yaml(2, 1, 3, 1, 2, ""), *at;
	char text[sizeof(buf)];

	at = strstr(y, "  megatron_cfg:\n");
	ck_assert_ptr_nonnull(at);
	snprintf(text, sizeof(text), "%.*s  megatron_cfg:\n    optimizer:\n"
		 "      use_distributed_optimizer: false\n%s", (int)(at - y), y,
		 at + strlen("  megatron_cfg:\n"));
	lint(&f, text);
	ck_assert_str_eq(f.sim.ckpt.opt_format, "not_distributed");
	ck_assert_int_eq(f.sim.ckpt.opt_shards,
			 3 * (2 * (4 * 6 + 2) + 2 * 6 + 1));
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes, 12 * local);
	sim_fx_release(&f);

	/* fully_sharded_model_space: each piece cut in F ranges; norms
	 * written by the (t 0, g 0) ranks of both copies */
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_sharded_model_space\n"));
	ck_assert_str_eq(f.sim.ckpt.opt_format, "fully_sharded_model_space");
	ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * (2 * 6 + 3));
	ck_assert_int_eq(f.sim.ckpt.opt_shards,
			 3 * (2 * (4 * 6 * 2 + 2 * 2) + 2 * 6 * 2 + 2));
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes, 12 * local / 2);
	ck_assert_int_eq(f.sim.ckpt.writers, 12);
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);

	/* validated like the weights: writers elected over dp_cp_gtp leave
	 * the g > 0 chunks of the model-space state unwritten too (one
	 * GT711 per weight and one per its optimizer state), while the
	 * range-cut format does not use the election */
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_reshardable\n"
		      "    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 12);
	ck_assert_ptr_nonnull(strstr(sim_fx_first(&f, "GT711")->msg,
				     "chunk (1) of (6) of decoder.layers.0."
				     "self_attention.linear_qkv.weight"));
	sim_fx_release(&f);
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_sharded_model_space\n"
		      "    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 6);
	sim_fx_release(&f);

	/* the gated fc1 (the test model) is fine for fully_reshardable
	 * without GTP; without Megatron-LM PR #7162 under GTP the save
	 * aborts: GT735 */
	lint(&f, yaml(2, 1, 1, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_reshardable\n"
		      "    megatron_lm_7162: false\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT735"), 0);
	sim_fx_release(&f);
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_reshardable\n"
		      "    megatron_lm_7162: false\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT735"), 1);
	ck_assert_ptr_nonnull(strstr(sim_fx_first(&f, "GT735")->msg,
				     "without PR #7162 can neither write nor "
				     "read it"));
	/* at the format: line 23 of the config */
	ck_assert_int_eq(sim_fx_first(&f, "GT735")->loc.line, 23);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "optimizer", optimizer_formats },
	};

	return RUN_CASES("ckpt_optimizer", cases, 120);
}
