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
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "simulate.h"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct plan plan;
	struct sim_report sim;
};

/* Plans and simulates a YAML text as `gtplan lint` does. */
static void lint(struct fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	plan_init(&f->plan);
	sim_report_init(&f->sim);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	ck_assert_int_eq(plan_build(&f->plan, f->root, "t.yaml", &f->diags), 0);
	ck_assert_int_ge(sim_run(&f->plan, f->root, NULL, &f->sim, &f->diags),
			 0);
}

static void release(struct fx *f)
{
	sim_report_release(&f->sim);
	plan_release(&f->plan);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

static size_t count(const struct fx *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strcmp(diag_code(&f->diags.v[i]), code) == 0;
	return n;
}

static const struct diag *find(const struct fx *f, const char *code)
{
	for (size_t i = 0; i < f->diags.n; i++)
		if (strcmp(diag_code(&f->diags.v[i]), code) == 0)
			return &f->diags.v[i];
	ck_abort_msg("no %s", code);
	return NULL;
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
		struct fx f;

		snprintf(pol, sizeof(pol), PACKED
			 "  make_sequence_length_divisible_by: %s\n", v[i].msl);
		lint(&f, cfg(pol, v[i].meg, ""));
		ck_assert_msg(count(&f, "GT625") == (size_t)v[i].want,
			      "case %zu: %zu GT625", i, count(&f, "GT625"));
		if (v[i].want)
			ck_assert_ptr_nonnull(strstr(find(&f, "GT625")->msg,
				"is not a multiple of minimum_pad_factor"));
		release(&f);
	}
}
END_TEST

/* The bins against what NeMo-RL pads to; unset multiple: not judged. */
START_TEST(packed_bins)
{
	struct fx f;

	lint(&f, cfg("  max_total_sequence_length: 4097\n"
		     "  make_sequence_length_divisible_by: 8\n"
		     "  sequence_packing:\n    enabled: true\n"
		     "    train_mb_tokens: 4100\n",
		     "    tensor_model_parallel_size: 2\n"
		     "    context_parallel_size: 2\n"
		     "    sequence_parallel: true\n", ""));
	ck_assert_uint_eq(count(&f, "GT623"), 1);
	ck_assert_ptr_nonnull(strstr(find(&f, "GT623")->msg, "padded to "
				     "4104"));
	release(&f);
	lint(&f, cfg(PACKED, "    context_parallel_size: 2\n", ""));
	ck_assert_uint_eq(count(&f, "GT625"), 0);
	release(&f);
}
END_TEST

#define SFT(g, m) "sft:\n  val_global_batch_size: " g \
	"\n  val_micro_batch_size: " m "\n"
#define DPO(g, m) "dpo:\n  val_global_batch_size: " g \
	"\n  val_micro_batch_size: " m "\n"

START_TEST(validation_batches)
{
	struct fx f;

	lint(&f, cfg("", "", SFT("20", "1")));   /* 20 over 8 lanes */
	ck_assert_uint_eq(count(&f, "GT631"), 1);
	ck_assert_ptr_nonnull(strstr(find(&f, "GT631")->msg,
				     "not a multiple of shards (8)"));
	release(&f);
	lint(&f, cfg("", "", SFT("24", "2")));   /* 3 per lane, mbs 2 */
	ck_assert_uint_eq(count(&f, "GT631"), 1);
	release(&f);
	lint(&f, cfg("", "", SFT("32", "2")));
	ck_assert_uint_eq(count(&f, "GT631"), 0);
	release(&f);
	/* DPO doubles both: 2 x 16 = 32 over 8 = 4, micro 2 x 1: fine ... */
	lint(&f, cfg("", "", DPO("16", "1")));
	ck_assert_uint_eq(count(&f, "GT631"), 0);
	release(&f);
	/* ... 2 x 12 / 8 = 3 in micro-batches of 2 x 2 = 4: none computed */
	lint(&f, cfg("", "", DPO("12", "2")));
	ck_assert_uint_eq(count(&f, "GT631"), 1);
	release(&f);
}
END_TEST

START_TEST(ppo_logprob_batches)
{
	struct fx f;

	lint(&f, cfg("  logprob_batch_size: 3\n", "",
		     "ppo:\n  num_prompts_per_step: 8\n"
		     "  num_generations_per_prompt: 4\n"));
	ck_assert_uint_eq(count(&f, "GT630"), 1);  /* 4 per lane, by 3 */
	release(&f);
}
END_TEST

/* vLLM TP 3 on Gemma 3 27B breaks all three rules; no algorithm section
 * and policy.generation set: checked all the same. */
START_TEST(vllm_every_rule)
{
	struct fx f;

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
	ck_assert_uint_eq(count(&f, "GT610"), 1);
	ck_assert_uint_eq(count(&f, "GT611"), 1);
	ck_assert_uint_eq(count(&f, "GT612"), 1);
	/* the skipped per-algorithm checks (logprob_batch_size is set) are
	 * said */
	ck_assert_uint_eq(count(&f, "GT529"), 1);
	ck_assert_ptr_nonnull(strstr(find(&f, "GT529")->msg, "the generation "
				     "(vLLM) checks run"));
	release(&f);
}
END_TEST

/* TP 4.0 is the schema's (GT200); nothing is judged with TP 1. */
START_TEST(refused_size_one_error)
{
	struct fx f;

	lint(&f, cfg("", "    tensor_model_parallel_size: 4.0\n"
		     "    sequence_parallel: true\n", ""));
	ck_assert(f.plan.sizes_refused);
	ck_assert_uint_eq(count(&f, "GT621"), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	release(&f);
	lint(&f, cfg("", "    tensor_model_parallel_size: 1\n"
		     "    sequence_parallel: true\n", ""));
	ck_assert(!f.plan.sizes_refused);
	ck_assert_uint_eq(count(&f, "GT621"), 1);
	release(&f);
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
	struct fx f;

	snprintf(buf, sizeof(buf), "%sgtplan:\n  stack:\n"
		 "    megatron_lm_6858: false\n", moe);
	lint(&f, buf);
	ck_assert_uint_eq(count(&f, "GT642"), 1);
	ck_assert_uint_eq(count(&f, "GT640"), 0);  /* no GTP */
	release(&f);
	lint(&f, moe);
	ck_assert_uint_eq(count(&f, "GT642"), 0);
	release(&f);
}
END_TEST

/* Approximate sizes: estimated (marked), a warning at most. */
START_TEST(approximate_memory)
{
	struct fx f;

	lint(&f, "grpo:\n  num_prompts_per_step: 8\n"
	     "  num_generations_per_prompt: 8\n"
	     "policy:\n  model_name: Qwen/Qwen3.5-35B-A3B\n"
	     "  train_global_batch_size: 64\n  train_micro_batch_size: 1\n"
	     "  max_total_sequence_length: 4096\n"
	     "  megatron_cfg:\n    enabled: true\n"
	     "cluster:\n  num_nodes: 1\n  gpus_per_node: 1\n");
	ck_assert(f.sim.mem.approximate);
	ck_assert_uint_ge(f.sim.mem.n_stages, 1);
	ck_assert_uint_eq(count(&f, "GT530"), 0);
	ck_assert_uint_eq(count(&f, "GT532"), 1);
	ck_assert_ptr_nonnull(strstr(find(&f, "GT532")->msg, "approximate"));
	ck_assert_uint_eq(count(&f, "GT529"), 1);
	release(&f);
}
END_TEST

static void add(Suite *s, const char *name, const TTest *t)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

int main(void)
{
	Suite *s = suite_create("framework_checks");
	SRunner *sr;
	int failed;

	add(s, "packed_pad_factor", packed_pad_factor);
	add(s, "packed_bins", packed_bins);
	add(s, "validation_batches", validation_batches);
	add(s, "ppo_logprob_batches", ppo_logprob_batches);
	add(s, "vllm_every_rule", vllm_every_rule);
	add(s, "refused_size_one_error", refused_size_one_error);
	add(s, "ep_rng_without_6858", ep_rng_without_6858);
	add(s, "approximate_memory", approximate_memory);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
