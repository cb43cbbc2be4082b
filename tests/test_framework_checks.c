/*
 * Tests for the framework checks of real runs' failures: NeMo-RL's
 * packed-sequence pad factor (GT625) and the bins against it (GT623),
 * validation batches of SFT, DPO and reward models (GT631), log-prob
 * batches of PPO (GT630), every broken vLLM rule and vLLM checks without
 * an algorithm section (GT610-GT612), one root cause one error (a refused
 * TP gives no findings computed from its default), the expert-parallel
 * RNG-state key shared without Megatron-LM PR #6858 (GT642), the notes
 * for skipped classes of checks (GT529), and approximate shapes' memory
 * estimate (a warning, never GT530).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "sim_fixture.h"

/* Plans and simulates a YAML text as `gtplan lint` does. */
static void lint(struct sim_fx *f, const char *yaml)
{
	ck_assert_int_ge(sim_fx_run(f, yaml), 0);
}

/* The first finding with `code` (the test fails without one). */
static const struct diag *find(const struct sim_fx *f, const char *code)
{
	const struct diag *d = sim_fx_first(f, code);

	ck_assert_msg(d != NULL, "no %s", code);
	return d;
}

/* A Llama-3.2-1B GRPO config on 1 node of 8: `policy` lines (indented 2),
 * `meg` under megatron_cfg (indented 4) and top-level `top`. */
static const char *cfg(const char *policy, const char *meg, const char *top)
{
	static char buf[2][4096];
	static int k;

	k ^= 1;
	snprintf(buf[k], sizeof(buf[k]),
		 "%s"
		 "policy:\n"
		 "  model_name: meta-llama/Llama-3.2-1B-Instruct\n"
		 "  train_global_batch_size: 64\n"
		 "  train_micro_batch_size: 1\n"
		 "%s"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "%s"
		 "cluster:\n"
		 "  num_nodes: 1\n"
		 "  gpus_per_node: 8\n", top, policy, meg);
	return buf[k];
}

#define PACKED "  max_total_sequence_length: 4096\n" \
	"  sequence_packing:\n    enabled: true\n    train_mb_tokens: 8192\n"

/* minimum_pad_factor: 2 x CP, TP with sequence parallel, both. */
START_TEST(packed_pad_factor)
{
	static const struct {
		const char *msl, *meg;
		int want;
	} v[] = {
		{ "4", "    context_parallel_size: 2\n", 0 },
		{ "2", "    context_parallel_size: 2\n", 1 },
		{ "2", "    tensor_model_parallel_size: 2\n"
		       "    sequence_parallel: true\n", 0 },
		{ "2", "    tensor_model_parallel_size: 4\n"
		       "    sequence_parallel: true\n", 1 },
		{ "1", "    tensor_model_parallel_size: 2\n", 0 },  /* no SP */
		{ "8", "    tensor_model_parallel_size: 2\n"
		       "    context_parallel_size: 2\n"
		       "    sequence_parallel: true\n", 0 },
		{ "4", "    tensor_model_parallel_size: 2\n"
		       "    context_parallel_size: 2\n"
		       "    sequence_parallel: true\n", 1 },
	};
	char pol[256];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct sim_fx f;

		snprintf(pol, sizeof(pol), PACKED
			 "  make_sequence_length_divisible_by: %s\n", v[i].msl);
		lint(&f, cfg(pol, v[i].meg, ""));
		ck_assert_msg(sim_fx_count(&f, "GT625") == (size_t)v[i].want,
			      "case %zu: %zu GT625", i,
			      sim_fx_count(&f, "GT625"));
		if (v[i].want)
			ck_assert_ptr_nonnull(strstr(find(&f, "GT625")->msg,
				"is not a multiple of minimum_pad_factor"));
		sim_fx_release(&f);
	}
}
END_TEST

/* The bins against what NeMo-RL pads to; unset multiple: not judged. */
START_TEST(packed_bins)
{
	struct sim_fx f;

	lint(&f, cfg("  max_total_sequence_length: 4097\n"
		     "  make_sequence_length_divisible_by: 8\n"
		     "  sequence_packing:\n    enabled: true\n"
		     "    train_mb_tokens: 4100\n",
		     "    tensor_model_parallel_size: 2\n"
		     "    context_parallel_size: 2\n"
		     "    sequence_parallel: true\n", ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT623"), 1);
	ck_assert_ptr_nonnull(strstr(find(&f, "GT623")->msg, "padded to "
				     "4104"));
	sim_fx_release(&f);
	lint(&f, cfg(PACKED, "    context_parallel_size: 2\n", ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT625"), 0);
	sim_fx_release(&f);
}
END_TEST

#define SFT(g, m) "sft:\n  val_global_batch_size: " g \
	"\n  val_micro_batch_size: " m "\n"
#define DPO(g, m) "dpo:\n  val_global_batch_size: " g \
	"\n  val_micro_batch_size: " m "\n"

START_TEST(validation_batches)
{
	struct sim_fx f;

	lint(&f, cfg("", "", SFT("20", "1")));   /* 20 over 8 lanes */
	ck_assert_uint_eq(sim_fx_count(&f, "GT631"), 1);
	ck_assert_ptr_nonnull(strstr(find(&f, "GT631")->msg,
				     "not a multiple of shards (8)"));
	sim_fx_release(&f);
	lint(&f, cfg("", "", SFT("24", "2")));   /* 3 per lane, mbs 2 */
	ck_assert_uint_eq(sim_fx_count(&f, "GT631"), 1);
	sim_fx_release(&f);
	lint(&f, cfg("", "", SFT("32", "2")));
	ck_assert_uint_eq(sim_fx_count(&f, "GT631"), 0);
	sim_fx_release(&f);
	/* DPO doubles both: 2 x 16 = 32 over 8 = 4, micro 2 x 1: fine ... */
	lint(&f, cfg("", "", DPO("16", "1")));
	ck_assert_uint_eq(sim_fx_count(&f, "GT631"), 0);
	sim_fx_release(&f);
	/* ... 2 x 12 / 8 = 3 in micro-batches of 2 x 2 = 4: none computed */
	lint(&f, cfg("", "", DPO("12", "2")));
	ck_assert_uint_eq(sim_fx_count(&f, "GT631"), 1);
	sim_fx_release(&f);
}
END_TEST

START_TEST(ppo_logprob_batches)
{
	struct sim_fx f;

	lint(&f, cfg("  logprob_batch_size: 3\n", "",
		     "ppo:\n  num_prompts_per_step: 8\n"
		     "  num_generations_per_prompt: 4\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT630"), 1);  /* 4 per lane, by 3 */
	sim_fx_release(&f);
}
END_TEST

/* vLLM TP 3 on Gemma 3 27B breaks all three rules; no algorithm section
 * and policy.generation set: checked all the same. */
START_TEST(vllm_every_rule)
{
	struct sim_fx f;

	lint(&f, "policy:\n  model_name: google/gemma-3-27b-it\n"
	     "  train_global_batch_size: 60\n  train_micro_batch_size: 1\n"
	     "  logprob_batch_size: 2\n"
	     "  megatron_cfg:\n    enabled: true\n"
	     "    tensor_model_parallel_size: 2\n"
	     "    sequence_parallel: true\n"
	     "    activation_checkpointing: true\n"
	     "  generation:\n    backend: vllm\n    vllm_cfg:\n"
	     "      tensor_parallel_size: 3\n"
	     "cluster:\n  num_nodes: 1\n  gpus_per_node: 6\n");
	ck_assert_uint_eq(sim_fx_count(&f, "GT610"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT611"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT612"), 1);
	/* the skipped per-algorithm checks (logprob_batch_size is set) are
	 * said */
	ck_assert_uint_eq(sim_fx_count(&f, "GT529"), 1);
	ck_assert_ptr_nonnull(strstr(find(&f, "GT529")->msg, "the generation "
				     "(vLLM) checks run"));
	sim_fx_release(&f);
}
END_TEST

/* TP "4" is the schema's (GT200); nothing is judged with TP 1. */
START_TEST(refused_size_one_error)
{
	struct sim_fx f;

	lint(&f, cfg("", "    tensor_model_parallel_size: \"4\"\n"
		     "    sequence_parallel: true\n", ""));
	ck_assert(f.plan.sizes_refused);
	ck_assert_uint_eq(sim_fx_count(&f, "GT621"), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	sim_fx_release(&f);
	lint(&f, cfg("", "    tensor_model_parallel_size: 1\n"
		     "    sequence_parallel: true\n", ""));
	ck_assert(!f.plan.sizes_refused);
	ck_assert_uint_eq(sim_fx_count(&f, "GT621"), 1);
	sim_fx_release(&f);
}
END_TEST

START_TEST(ep_rng_without_6858)
{
	static const char *moe =
		"policy:\n  model_name: Qwen/Qwen3-30B-A3B\n"
		"  train_global_batch_size: 64\n  train_micro_batch_size: 1\n"
		"  megatron_cfg:\n    enabled: true\n"
		"    expert_model_parallel_size: 4\n"
		"checkpointing:\n  enabled: true\n"
		"cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n";
	char buf[1024];
	struct sim_fx f;

	snprintf(buf, sizeof(buf), "%sgtplan:\n  stack:\n"
		 "    megatron_lm_6858: false\n", moe);
	lint(&f, buf);
	ck_assert_uint_eq(sim_fx_count(&f, "GT642"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT640"), 0);  /* no GTP */
	sim_fx_release(&f);
	lint(&f, moe);
	ck_assert_uint_eq(sim_fx_count(&f, "GT642"), 0);
	sim_fx_release(&f);
}
END_TEST

/* Approximate sizes: estimated (marked), a warning at most. */
START_TEST(approximate_memory)
{
	struct sim_fx f;

	lint(&f, "grpo:\n  num_prompts_per_step: 8\n"
	     "  num_generations_per_prompt: 8\n"
	     "policy:\n  model_name: Qwen/Qwen3.5-35B-A3B\n"
	     "  train_global_batch_size: 64\n  train_micro_batch_size: 1\n"
	     "  max_total_sequence_length: 4096\n"
	     "  megatron_cfg:\n    enabled: true\n"
	     "cluster:\n  num_nodes: 1\n  gpus_per_node: 1\n");
	ck_assert(f.sim.mem.approximate);
	ck_assert_uint_ge(f.sim.mem.n_stages, 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT530"), 0);
	ck_assert_uint_eq(sim_fx_count(&f, "GT532"), 1);
	ck_assert_ptr_nonnull(strstr(find(&f, "GT532")->msg, "approximate"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT529"), 1);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "packed_pad_factor", packed_pad_factor },
		{ "packed_bins", packed_bins },
		{ "validation_batches", validation_batches },
		{ "ppo_logprob_batches", ppo_logprob_batches },
		{ "vllm_every_rule", vllm_every_rule },
		{ "refused_size_one_error", refused_size_one_error },
		{ "ep_rng_without_6858", ep_rng_without_6858 },
		{ "approximate_memory", approximate_memory },
	};

	return RUN_CASES("framework_checks", cases, 60);
}
