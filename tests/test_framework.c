/*
 * Framework rules (planner/framework.h, GT600-GT680) on the model and the
 * engines: the model's shape against the layout, the generation engine,
 * sequence and context parallelism's couplings, and the model catalog's
 * corpus coverage; each rule with a config that triggers it and one that
 * does not, and the numbers and hints the messages carry. Batches,
 * checkpoints, refit, the loss, memory and stage programs are
 * test_framework_train.c's.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "model.h"
#include "plan.h"
#include "cost.h"
#include "simulate.h"
#include "harness.h"
#include "framework_fixture.h"

/* ---- model shape --------------------------------------------------------- */

START_TEST(layers_over_pp)
{
	pair(cfg(QWEN7, "", "    tensor_model_parallel_size: 2\n"
		 "    pipeline_model_parallel_size: 3\n", 3, 4, ""),
	     cfg(QWEN7, "", "    tensor_model_parallel_size: 2\n"
		 "    pipeline_model_parallel_size: 2\n", 2, 4, ""),
	     "GT600", "pipeline_model_parallel_size: 3",
	     "28 layers do not split over PP 3",
	     "use PP 1, 2, 4 or 7, or keep PP 3 with "
	     "num_layers_in_first_pipeline_stage: 9 and "
	     "num_layers_in_last_pipeline_stage: 9");
	/* an uneven split that adds up is fine; one that does not is not */
	pair(cfg(LLAMA1, "", "    pipeline_model_parallel_size: 4\n"
		 "    num_layers_in_first_pipeline_stage: 5\n"
		 "    num_layers_in_last_pipeline_stage: 4\n", 1, 8, ""),
	     cfg(LLAMA1, "", "    pipeline_model_parallel_size: 4\n"
		 "    num_layers_in_first_pipeline_stage: 6\n"
		 "    num_layers_in_last_pipeline_stage: 4\n", 1, 8, ""),
	     "GT600", "num_layers_in_first_pipeline_stage: 5",
	     "7 layers remain for 2 middle stages", NULL);
	/* a virtual pipeline needs whole virtual stages per stage */
	pair(cfg(LLAMA1, "", "    pipeline_model_parallel_size: 4\n"
		 "    virtual_pipeline_model_parallel_size: 3\n", 1, 8, ""),
	     cfg(LLAMA1, "", "    pipeline_model_parallel_size: 4\n"
		 "    virtual_pipeline_model_parallel_size: 2\n", 1, 8, ""),
	     "GT600", "pipeline_model_parallel_size: 4", "of whole virtual stages",
	     "use PP");
}
END_TEST

START_TEST(heads_over_tp)
{
	pair(cfg(QWEN7, "", "    tensor_model_parallel_size: 8\n", 2, 8, ""),
	     cfg(QWEN7, "", "    tensor_model_parallel_size: 4\n", 2, 8, ""),
	     "GT601", "tensor_model_parallel_size: 8",
	     "TP 8 must divide the 28 attention heads",
	     "use TP 1, 2 or 4");
	/* TP 7 divides the heads but not the 4 query groups, nor they it */
	pair(cfg(QWEN7, "", "    tensor_model_parallel_size: 7\n", 2, 7, ""),
	     cfg(QWEN7, "", "    tensor_model_parallel_size: 2\n", 2, 7, ""),
	     "GT602", "tensor_model_parallel_size: 7", "TP 7 and the 4 query groups",
	     "use TP 1, 2 or 4");
}
END_TEST

/* Megatron-core today accepts TP a multiple of the query groups (they are
 * replicated); multi-latent attention has no query groups at all. */
START_TEST(query_groups_replicated_and_mla)
{
	struct sim_fx f;

	lint(&f, cfg(QWEN1, "", "    tensor_model_parallel_size: 4\n"
		     "    sequence_parallel: true\n", 1, 8, ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT602"), 0);
	sim_fx_release(&f);
	lint(&f, cfg("moonshotai/Moonlight-16B-A3B-Instruct", "",
		     "    tensor_model_parallel_size: 8\n"
		     "    sequence_parallel: true\n", 1, 8, ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT601") +
			  sim_fx_count(&f, "GT602"), 0);
	sim_fx_release(&f);
}
END_TEST

START_TEST(experts_over_ep)
{
	pair(cfg("Qwen/Qwen3-30B-A3B", "", "    expert_model_parallel_size: 6\n",
		 3, 4, ""),
	     cfg("Qwen/Qwen3-30B-A3B", "", "    expert_model_parallel_size: 4\n",
		 3, 4, ""),
	     "GT603", "expert_model_parallel_size: 6",
	     "EP 6 must divide the 128 experts",
	     "use EP 1, 2, 4 or 8");
	pair(cfg(LLAMA1, "", "    expert_model_parallel_size: 2\n", 1, 8, ""),
	     cfg(LLAMA1, "", "    expert_model_parallel_size: 1\n", 1, 8, ""),
	     "GT604", "expert_model_parallel_size: 2", "EP 2 on a dense model",
	     "expert_model_parallel");
}
END_TEST

START_TEST(vocab_padded)
{
	struct sim_fx f;
	const struct diag *d;

	/* 128256 = 128 x 1002: TP 4 pads it to a multiple of 512 */
	lint(&f, cfg(LLAMA1, "", "    tensor_model_parallel_size: 4\n"
		     "    sequence_parallel: true\n", 1, 8, ""));
	d = expect(&f, "GT605", "tensor_model_parallel_size: 4",
		   "of 128256 to 128512 rows", NULL);
	ck_assert_int_eq(d->severity, DIAG_NOTE);
	sim_fx_release(&f);
	lint(&f, cfg(LLAMA1, "", "    tensor_model_parallel_size: 2\n"
		     "    sequence_parallel: true\n", 1, 8, ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT605"), 0);
	sim_fx_release(&f);
	/* the divisor set in the config wins */
	lint(&f, cfg(LLAMA1, "", "    tensor_model_parallel_size: 2\n"
		     "    sequence_parallel: true\n"
		     "    make_vocab_size_divisible_by: 1280\n", 1, 8, ""));
	expect(&f, "GT605", "tensor_model_parallel_size: 2", "to 130560 rows", NULL);
	sim_fx_release(&f);
}
END_TEST

/* The Megatron generation engine's own layout follows the same rules. */
START_TEST(megatron_generation_layout)
{
	const char *bad = cfg(QWEN7, "  generation:\n    backend: megatron\n"
		"    mcore_generation_config:\n"
		"      tensor_model_parallel_size: 8\n", "", 1, 8, "");
	const char *good = cfg(QWEN7, "  generation:\n    backend: megatron\n"
		"    mcore_generation_config:\n"
		"      tensor_model_parallel_size: 4\n", "", 1, 8, "");

	pair(bad, good, "GT601", "      tensor_model_parallel_size: 8",
		   "inference model: TP 8", NULL);
}
END_TEST

/* ---- the generation engine --------------------------------------------- */

START_TEST(vllm_shape)
{
	pair(cfg(QWEN7, VLLM(8, ""), "", 1, 8, ""),
	     cfg(QWEN7, VLLM(4, ""), "", 1, 8, ""),
	     "GT610", "tensor_parallel_size: 8",
	     "8 must divide the 28 attention heads",
	     "tensor_parallel_size 1, 2 or 4");
	pair(cfg(QWEN7, VLLM(7, ""), "", 1, 7, ""),
	     cfg(QWEN7, VLLM(1, ""), "", 1, 7, ""),
	     "GT611", "tensor_parallel_size: 7", "7 and the 4 KV heads", NULL);
	/* 12 heads and 2 KV heads fit TP 6, the vocabulary does not */
	pair(cfg(QWEN1, VLLM(6, ""), "", 1, 6, ""),
	     cfg(QWEN1, VLLM(2, ""), "", 1, 6, ""),
	     "GT612", "tensor_parallel_size: 6", "vocabulary of 151936 rows",
	     "1, 2 or 4");
}
END_TEST

#define NONCOLOC(tp) "  generation:\n    backend: vllm\n" \
	"    colocated:\n      enabled: false\n" \
	"      resources:\n        num_nodes: 1\n        gpus_per_node: 8\n" \
	"    vllm_cfg:\n      tensor_parallel_size: " #tp "\n"

START_TEST(vllm_world_and_nodes)
{
	struct sim_fx f;
	const struct diag *d;

	/* non-colocated on one node cannot hold TP 16: the multi-node path */
	pair(cfg(LLAMA1, NONCOLOC(16), "", 2, 8, ""),
	     cfg(LLAMA1, NONCOLOC(8), "", 2, 8, ""),
	     "GT613", "tensor_parallel_size: 16",
	     "16 GPUs, which does not divide the 8 GPUs",
	     "colocated.resources.num_nodes: 2");
	/* colocated: 6 GPUs do not hold instances of 4 */
	pair(cfg(QWEN1, VLLM(4, ""), "", 1, 6, ""),
	     cfg(QWEN1, VLLM(2, ""), "", 1, 6, ""),
	     "GT613", "tensor_parallel_size: 4", "TP 4 x PP 1 = 4 GPUs",
	     "1, 2, 3 or 6");
	/* colocated TP 16 over 2 nodes of 8: the cross-node path warns */
	lint(&f, cfg("meta-llama/Llama-3.1-70B-Instruct", VLLM(16, ""),
		     "    tensor_model_parallel_size: 8\n"
		     "    sequence_parallel: true\n", 2, 8, ""));
	d = expect(&f, "GT614", "tensor_parallel_size: 16", "spans 2 nodes of 8 GPUs",
		   "within 8 GPUs");
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	sim_fx_release(&f);
	lint(&f, cfg("meta-llama/Llama-3.1-70B-Instruct", VLLM(8, ""),
		     "    tensor_model_parallel_size: 8\n"
		     "    sequence_parallel: true\n", 2, 8, ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT614") +
			  sim_fx_count(&f, "GT613"), 0);
	sim_fx_release(&f);
}
END_TEST

START_TEST(vllm_async_and_ep)
{
	pair(cfg(LLAMA1, VLLM(2, "      pipeline_parallel_size: 2\n"), "", 1, 8,
		 ""),
	     cfg(LLAMA1, VLLM(2, "      pipeline_parallel_size: 2\n"
			      "      async_engine: true\n"), "", 1, 8, ""),
	     "GT615", "pipeline_parallel_size: 2",
	     "pipeline_parallel_size 2 needs the async",
	     "async_engine: true");
	pair(cfg("Qwen/Qwen3-30B-A3B", VLLM(2, "      expert_parallel_size: 3\n"),
		 "    expert_model_parallel_size: 8\n"
		 "    tensor_model_parallel_size: 1\n", 1, 8, ""),
	     cfg("Qwen/Qwen3-30B-A3B", VLLM(2, "      expert_parallel_size: 4\n"),
		 "    expert_model_parallel_size: 8\n"
		 "    tensor_model_parallel_size: 1\n", 1, 8, ""),
	     "GT616", "expert_parallel_size: 3",
	     "expert_parallel_size 3 is not a multiple",
	     "use expert_parallel_size 2 or 4");
}
END_TEST

/* ---- couplings ----------------------------------------------------------- */

START_TEST(sequence_parallel_couplings)
{
	struct sim_fx f;

	/* a config that does not say: NeMo-RL reads the key, skip */
	lint(&f, cfg("Qwen/Qwen3-30B-A3B", "",
		     "    tensor_model_parallel_size: 2\n"
		     "    expert_model_parallel_size: 4\n", 1, 8, ""));
	ck_assert_int_eq(sim_fx_count(&f, "GT620"), 0);
	sim_fx_release(&f);
	pair(cfg("Qwen/Qwen3-30B-A3B", "", "    tensor_model_parallel_size: 2\n"
		 "    expert_model_parallel_size: 4\n"
		 "    sequence_parallel: false\n", 1, 8, ""),
	     cfg("Qwen/Qwen3-30B-A3B", "", "    tensor_model_parallel_size: 2\n"
		 "    expert_model_parallel_size: 4\n"
		 "    sequence_parallel: true\n", 1, 8, ""),
	     "GT620", "sequence_parallel: false",
	     "EP 4 with TP 2 needs sequence_parallel",
	     "sequence_parallel: true");
	pair(cfg(QWEN1, "", "    sequence_parallel: true\n", 1, 8, ""),
	     cfg(QWEN1, "", "    sequence_parallel: false\n", 1, 8, ""),
	     "GT621", "sequence_parallel: true", "needs TP > 1",
	     "sequence_parallel: false");
	pair(cfg(QWEN1, "", "    virtual_pipeline_model_parallel_size: 2\n",
		 1, 8, ""),
	     cfg(QWEN1, "", "    virtual_pipeline_model_parallel_size: null\n",
		 1, 8, ""),
	     "GT622", "virtual_pipeline_model_parallel_size: 2",
	     "virtual pipeline size 2 needs PP > 1", NULL);
}
END_TEST

START_TEST(context_parallel_and_lengths)
{
	struct sim_fx f;

	/* a config that does not say: NeMo-RL reads the key, skip */
	lint(&f, cfg(QWEN1, "", "    context_parallel_size: 2\n", 1, 8, ""));
	ck_assert_int_eq(sim_fx_count(&f, "GT624"), 0);
	sim_fx_release(&f);
	pair(cfg(QWEN1, "  sequence_packing:\n    enabled: false\n",
		 "    context_parallel_size: 2\n", 1, 8, ""),
	     cfg(QWEN1, "  sequence_packing:\n    enabled: true\n",
		 "    context_parallel_size: 2\n", 1, 8, ""),
	     "GT624", "context_parallel_size: 2",
	     "context parallel size 2 needs sequence packing",
	     "sequence_packing.enabled: true");
	/* unpacked: padding to 2 tokens cannot feed sequence parallel TP 4 */
	pair(cfg(QWEN1, "  make_sequence_length_divisible_by: 2\n",
		 "    tensor_model_parallel_size: 4\n"
		 "    sequence_parallel: true\n", 1, 8, ""),
	     cfg(QWEN1, "  make_sequence_length_divisible_by: 8\n",
		 "    tensor_model_parallel_size: 4\n"
		 "    sequence_parallel: true\n", 1, 8, ""),
	     "GT623", "make_sequence_length_divisible_by: 2",
	     "padded to a multiple of 2 tokens",
	     "make_sequence_length_divisible_by to 4");
	/* packed: the longest sequence, padded to 2 x CP x TP, must fit */
	pair(cfg(QWEN1, "  max_total_sequence_length: 4097\n"
		 "  sequence_packing:\n    enabled: true\n"
		 "    train_mb_tokens: 4097\n",
		 "    tensor_model_parallel_size: 2\n"
		 "    context_parallel_size: 2\n"
		 "    sequence_parallel: true\n", 1, 8, ""),
	     cfg(QWEN1, "  max_total_sequence_length: 4097\n"
		 "  sequence_packing:\n    enabled: true\n"
		 "    train_mb_tokens: 4104\n",
		 "    tensor_model_parallel_size: 2\n"
		 "    context_parallel_size: 2\n"
		 "    sequence_parallel: true\n", 1, 8, ""),
	     "GT623", "train_mb_tokens: 4097", "padded to 4104",
	     "train_mb_tokens to 4104");
}
END_TEST

/* ---- the model catalog --------------------------------------------------- */

/* The corpus's model names the catalog must know (tests/corpus.sh lists
 * the rest, unknown ones included). */
START_TEST(catalog_corpus_names)
{
	static const char *const names[] = {
		"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-Base-BF16",
		"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
		"nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16",
		"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
		"nvidia/NVIDIA-Nemotron-Nano-9B-v2",
		"nvidia/NVIDIA-Nemotron-Nano-12B-v2",
		"moonshotai/Moonlight-16B-A3B-Instruct",
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
		"Qwen/Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-Omni-3B",
		"Qwen/Qwen2.5-Omni-7B", "Qwen/Qwen3.5-397B-A17B",
		"openai/gpt-oss-20b", "zai-org/GLM-4.7-Flash",
		"google/gemma-4-E2B-it", "google/gemma-4-E4B-it",
		"google/gemma-4-31B-it", "google/gemma-4-26B-A4B-it",
		"Qwen/Qwen3.5-35B-A3B-Base", "Qwen/Qwen3.5-9B-Base",
		"Qwen/Qwen3-Omni-30B-A3B-Instruct", "zai-org/GLM-5.1",
		"MiniMaxAI/MiniMax-M2.7", "mistralai/Mistral-Medium-3.5-128B",
		"nvidia/Llama-3_3-Nemotron-Super-49B-v1_5",
		"allenai/Llama-3.1-Tulu-3-8B-SFT",
		"nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16",
	};

	ck_assert_ptr_null(model_catalog_error());
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(model_catalog_find(names[i]) &&
			      model_catalog_find(names[i])->shape_known,
			      "%s", names[i]);
	/* hybrid: the pattern decides which layers are MoE */
	const struct model_shape *m =
		model_catalog_find("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16");
	ck_assert_int_eq(m->num_layers, 52);
	ck_assert_int_eq(model_moe_layers(m, 0, 52), 23);
	ck_assert_int_eq(model_moe_layers(m, 0, 1), 0);
	ck_assert(!m->known);
	m = model_catalog_find("moonshotai/Moonlight-16B-A3B-Instruct");
	ck_assert_int_eq(model_moe_layers(m, 0, 27), 26);
	ck_assert_int_eq(m->make_vocab_size_divisible_by, 1280);
}
END_TEST

/* An unknown model says which checks it skips. */
START_TEST(unknown_model_says_what_is_skipped)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, cfg("acme/Unknown-7B", "", "    tensor_model_parallel_size: 3\n",
		     1, 3, ""));
	d = expect(&f, "GT524", "model_name: acme", "heads and query groups vs TP",
		   NULL);
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	ck_assert_uint_eq(sim_fx_count(&f, "GT601"), 0);
	/* not again by the sim */
	ck_assert_uint_eq(sim_fx_count(&f, "GT524"), 1);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "layers_over_pp", layers_over_pp },
		{ "heads_over_tp", heads_over_tp },
		{ "query_groups", query_groups_replicated_and_mla },
		{ "experts_over_ep", experts_over_ep },
		{ "vocab_padded", vocab_padded },
		{ "megatron_generation", megatron_generation_layout },
		{ "vllm_shape", vllm_shape },
		{ "vllm_world", vllm_world_and_nodes },
		{ "vllm_async_ep", vllm_async_and_ep },
		{ "sp_couplings", sequence_parallel_couplings },
		{ "cp_lengths", context_parallel_and_lengths },
		{ "catalog_corpus", catalog_corpus_names },
		{ "unknown_model", unknown_model_says_what_is_skipped },
	};

	return RUN_CASES("framework", cases, 60);
}
