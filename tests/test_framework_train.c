/*
 * Framework rules (planner/framework.h, GT600-GT680) on a training step:
 * batch arithmetic, checkpoint keys, refit, the loss domain, groups across
 * nodes, the log-probability logits' memory and the pipeline stages'
 * programs; each rule with a config that triggers it and one that does
 * not, and the numbers and hints the messages carry.
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

/* ---- batch arithmetic ---------------------------------------------------- */

START_TEST(logprob_batches)
{
	/* 64 rollouts over 4 lanes: 16 per lane, in micro-batches of 3 */
	pair(cfg(QWEN1, "  logprob_batch_size: 3\n",
		 "    tensor_model_parallel_size: 2\n"
		 "    sequence_parallel: true\n", 1, 8, ""),
	     cfg(QWEN1, "  logprob_batch_size: 4\n",
		 "    tensor_model_parallel_size: 2\n"
		 "    sequence_parallel: true\n", 1, 8, ""),
	     "GT630", "logprob_batch_size: 3",
	     "log-probs of 16 samples in micro-batches of 3",
	     "divides 16");
}
END_TEST

START_TEST(dpo_pairs_note)
{
	const char *dpo = "dpo:\n  max_num_steps: 1\n"
		"policy:\n  model_name: meta-llama/Llama-3.2-1B-Instruct\n"
		"  train_global_batch_size: 12\n  train_micro_batch_size: 1\n"
		"  megatron_cfg:\n    enabled: true\n"
		"cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n";
	struct sim_fx f;
	const struct diag *d;

	lint(&f, dpo);
	d = expect(&f, "GT400", "train_global_batch_size: 12", "global batch 12",
		   NULL);
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg, "2 x 12 = 24 sequences"));
	sim_fx_release(&f);
	/* GRPO: no such note */
	lint(&f, cfg(LLAMA1, "", "", 1, 8, ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT400"), 0);
	sim_fx_release(&f);
}
END_TEST

START_TEST(microbatches_per_pipeline)
{
	/* 64 / (4 lanes x 1) = 16 micro-batches; 1F1B wants >= PP */
	struct sim_fx f;
	const struct diag *d;

	lint(&f, cfg(LLAMA1, "", "    pipeline_model_parallel_size: 4\n"
		     "    tensor_model_parallel_size: 2\n"
		     "    sequence_parallel: true\n", 1, 8, ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT632"), 0);
	sim_fx_release(&f);
	/* 4 micro-batches over 8 stages */
	lint(&f, "policy:\n  model_name: meta-llama/Llama-3.2-1B-Instruct\n"
		 "  train_global_batch_size: 4\n  train_micro_batch_size: 1\n"
		 "  megatron_cfg:\n    enabled: true\n"
		 "    pipeline_model_parallel_size: 8\n"
		 "cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n");
	d = expect(&f, "GT632", "train_global_batch_size: 4",
		   "runs 4 micro-batches per step over PP 8",
		   "at least 8");
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	sim_fx_release(&f);
	/* interleaved: 64 / (2 lanes) = 32 ok; 12 / 2 = 6 not a multiple of 4 */
	pair("policy:\n  model_name: meta-llama/Llama-3.2-1B-Instruct\n"
	     "  train_global_batch_size: 12\n  train_micro_batch_size: 1\n"
	     "  megatron_cfg:\n    enabled: true\n"
	     "    pipeline_model_parallel_size: 4\n"
	     "    virtual_pipeline_model_parallel_size: 2\n"
	     "cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n",
	     "policy:\n  model_name: meta-llama/Llama-3.2-1B-Instruct\n"
	     "  train_global_batch_size: 16\n  train_micro_batch_size: 1\n"
	     "  megatron_cfg:\n    enabled: true\n"
	     "    pipeline_model_parallel_size: 4\n"
	     "    virtual_pipeline_model_parallel_size: 2\n"
	     "cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n",
	     "GT633", "train_global_batch_size: 12",
	     "6 micro-batches per step to be a multiple of PP 4",
	     "8 or 16");
}
END_TEST

/* ---- checkpoints, refit, loss, nodes ------------------------------------- */

START_TEST(expert_checkpoint_keys)
{
	const char *m = "    tensor_model_parallel_size: 2\n"
		"    tensor_parallel_num_weight_shards: 4\n"
		"    expert_model_parallel_size: 8\n"
		"    sequence_parallel: true\n";
	char bad[4096], good[4096];

	snprintf(bad, sizeof(bad), "checkpointing:\n  enabled: true\n%s",
		 cfg("Qwen/Qwen3-30B-A3B", "", m, 2, 8,
		     "gtplan:\n  stack:\n    rng_state_group: dp_cp\n"));
	snprintf(good, sizeof(good), "checkpointing:\n  enabled: true\n%s",
		 cfg("Qwen/Qwen3-30B-A3B", "", m, 2, 8,
		     "gtplan:\n  stack:\n    rng_state_group: dp_cp_gtp\n"));
	pair(bad, good, "GT640", "rng_state_group: dp_cp",
		   "the 2 GTP peers of each rank (ranks "
	     "0, 2 for rng_state/shard_0.0.0_1.2.4)", "dp_cp_gtp");
	m = "    tensor_model_parallel_size: 2\n"
	    "    expert_model_parallel_size: 4\n"
	    "    expert_tensor_parallel_size: 1\n"
	    "    expert_tensor_parallel_num_weight_shards: 2\n"
	    "    sequence_parallel: true\n";
	snprintf(bad, sizeof(bad), "checkpointing:\n  enabled: true\n%s",
		 cfg("openai/gpt-oss-20b", "", m, 1, 8,
		     "gtplan:\n  stack:\n    replica_group: dp_cp\n"));
	snprintf(good, sizeof(good), "checkpointing:\n  enabled: true\n%s",
		 cfg("openai/gpt-oss-20b", "", m, 1, 8, ""));
	pair(bad, good, "GT641", "replica_group: dp_cp",
		   "2 main replicas write each expert "
	     "bias", "replica_group: dp_cp_gtp");
}
END_TEST

#define MTP_MODEL "gtplan:\n  model:\n    num_layers: 8\n" \
	"    hidden_size: 1024\n    ffn_hidden_size: 4096\n" \
	"    num_attention_heads: 16\n    num_query_groups: 8\n" \
	"    vocab_size: 32000\n    mtp_num_layers: 1\n"

START_TEST(refit_shared_weights)
{
	pair(cfg("acme/mtp", VLLM(1, ""), "    pipeline_model_parallel_size: 2\n",
		 1, 8, MTP_MODEL "  stack:\n    refit_shared_weights: "
		 "every_owner\n"),
	     cfg("acme/mtp", VLLM(1, ""), "    pipeline_model_parallel_size: 2\n",
		 1, 8, MTP_MODEL "  stack:\n    refit_shared_weights: "
		 "first_owner\n"),
	     "GT650", "refit_shared_weights: every_owner",
	     "on pipeline stages 0 and 1", "first_owner");
}
END_TEST

START_TEST(loss_domain)
{
	const char *p = "  sequence_packing:\n    enabled: true\n";
	const char *m = "    tensor_model_parallel_size: 2\n"
		"    context_parallel_size: 2\n    sequence_parallel: true\n";
	struct sim_fx f;

	lint(&f, cfg(QWEN1, p, m, 1, 8, "gtplan:\n  stack:\n"
		     "    loss_token_count_group: dp_cp\n"
		     "    grad_reduce_group: dp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT660"), 2);
	expect(&f, "GT660", "loss_token_count_group: dp_cp", "counted 2 times",
		   "dp group");
	sim_fx_release(&f);
	lint(&f, cfg(QWEN1, p, m, 1, 8, "gtplan:\n  stack:\n"
		     "    loss_token_count_group: dp\n"
		     "    grad_reduce_group: dp_cp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT660"), 0);
	sim_fx_release(&f);
	/* without CP the two domains are the lanes either way */
	lint(&f, cfg(QWEN1, "", "", 1, 8, "gtplan:\n  stack:\n"
		     "    loss_token_count_group: dp_cp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT660"), 0);
	sim_fx_release(&f);
}
END_TEST

START_TEST(ep_group_across_nodes)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, cfg("Qwen/Qwen3-30B-A3B", "", "    expert_model_parallel_size: 8\n",
		     2, 4, ""));
	d = expect(&f, "GT670", "expert_model_parallel_size: 8",
		   "ranks 0..7 (8 ranks) spans nodes 0 to "
		   "1", "a divisor of its 4 GPUs");
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	sim_fx_release(&f);
	lint(&f, cfg("Qwen/Qwen3-30B-A3B", "", "    expert_model_parallel_size: 4\n",
		     2, 4, ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT670"), 0);
	sim_fx_release(&f);
}
END_TEST

/* The logits path joins the memory estimate of the last stage
 * (sim/cost_mem.c): 10 B per element of the TP slice of the padded
 * vocabulary (bf16 logits, fp32 copy, fp32 softmax reused as its
 * gradient) for the larger of the train micro-batch and
 * logprob_batch_size. DPO doubles the train micro-batch (pairs). */
START_TEST(logprob_logits_memory)
{
	struct sim_fx f;
	double one, eight, dpo, elems = 4096.0 * 64128;

	lint(&f, cfg(LLAMA1, "  logprob_batch_size: 1\n"
		     "  max_total_sequence_length: 4096\n",
		     "    tensor_model_parallel_size: 2\n"
		     "    sequence_parallel: true\n", 1, 8, ""));
	ck_assert_uint_ge(f.sim.mem.n_stages, 1);
	one = f.sim.mem.stages[0].item[MEM_LOGITS];
	ck_assert(one > elems * 10 * 0.999 && one < elems * 10 * 1.001);
	sim_fx_release(&f);
	lint(&f, cfg(LLAMA1, "  logprob_batch_size: 8\n"
		     "  max_total_sequence_length: 4096\n",
		     "    tensor_model_parallel_size: 2\n"
		     "    sequence_parallel: true\n", 1, 8, ""));
	eight = f.sim.mem.stages[0].item[MEM_LOGITS];
	ck_assert(eight > elems * 80 * 0.999 && eight < elems * 80 * 1.001);
	sim_fx_release(&f);
	lint(&f, cfg(LLAMA1, "  logprob_batch_size: 8\n"
		     "  max_total_sequence_length: 4096\n",
		     "    tensor_model_parallel_size: 2\n"
		     "    sequence_parallel: true\n", 1, 8,
		     "dpo:\n  reference_policy_kl_penalty: 0.05\n"));
	/* pairs: 2 x micro-batch 1 in train; the reference pass takes the
	 * train micro-batch, not logprob_batch_size */
	dpo = f.sim.mem.stages[0].item[MEM_LOGITS];
	ck_assert(dpo > elems * 20 * 0.999 && dpo < elems * 20 * 1.001);
	sim_fx_release(&f);
}
END_TEST

/* ---- stage programs ------------------------------------------------------ */

#define MOE_MODEL(extra) "gtplan:\n  model:\n    num_layers: 8\n" \
	"    hidden_size: 1024\n    ffn_hidden_size: 4096\n" \
	"    num_attention_heads: 16\n    num_query_groups: 8\n" \
	"    vocab_size: 32000\n    num_moe_experts: 8\n" \
	"    moe_layer_freq: \"[0]*4+[1]*4\"\n" extra

START_TEST(stage_collectives)
{
	const char *m = "    pipeline_model_parallel_size: 2\n"
		"    expert_model_parallel_size: 4\n"
		"    moe_router_load_balancing_type: aux_loss\n";
	const char *lazy = MOE_MODEL("  stack:\n"
				     "    moe_aux_loss_tracker: lazy\n");
	const char *pre = MOE_MODEL("  stack:\n"
				    "    moe_aux_loss_tracker: preinit\n");
	struct sim_fx f;
	const struct diag *d;

	/* stage 0 holds the four dense layers: its router records nothing */
	lint(&f, cfg("acme/moe", "", m, 1, 8, lazy));
	d = expect(&f, "GT680", "moe_aux_loss_tracker: lazy",
		   "only stage 1 issues it; stage 0 never "
		   "does", "preinit");
	ck_assert_ptr_nonnull(strstr(d->msg, "MoE auxiliary-loss metrics"));
	ck_assert_uint_ge(sim_fx_count(&f, "GT502") + sim_fx_count(&f, "GT504") +
			  sim_fx_count(&f, "GT501"), 1);
	sim_fx_release(&f);
	lint(&f, cfg("acme/moe", "", m, 1, 8, pre));
	ck_assert_uint_eq(sim_fx_count(&f, "GT680"), 0);
	ck_assert_uint_eq(diag_count(&f.diags, DIAG_ERROR), 0);
	sim_fx_release(&f);
	/* with an MTP layer a tracker sized without it mismatches */
	lint(&f, cfg("acme/moe", "", m, 1, 8, MOE_MODEL(
		"    mtp_num_layers: 1\n  stack:\n"
		"    moe_aux_loss_tracker: preinit_without_mtp\n")));
	expect(&f, "GT680", "moe_aux_loss_tracker: preinit_without_mtp",
		   "stage 0 issues it with 32 bytes", NULL);
	sim_fx_release(&f);
	/* tied embeddings over PP: the first and last stage's embedding
	 * group matches, middle stages are not in it */
	lint(&f, cfg(LLAMA1, "", "    pipeline_model_parallel_size: 4\n", 1, 8,
		     ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT680"), 0);
	ck_assert_uint_eq(diag_count(&f.diags, DIAG_ERROR), 0);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "logprob_batches", logprob_batches },
		{ "dpo_pairs", dpo_pairs_note },
		{ "microbatches_pp", microbatches_per_pipeline },
		{ "ckpt_keys", expert_checkpoint_keys },
		{ "refit_shared", refit_shared_weights },
		{ "loss_domain", loss_domain },
		{ "ep_nodes", ep_group_across_nodes },
		{ "logprob_logits", logprob_logits_memory },
		{ "stage_collectives", stage_collectives },
	};

	return RUN_CASES("framework_train", cases, 60);
}
