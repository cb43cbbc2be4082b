/*
 * The config's settings read once (planner/settings.h): Megatron's
 * defaults for an empty config, every field from a config that sets it, a
 * value of the wrong type taken as unset, and plan_build filling plan.set
 * for the simulator.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cfg_keys.h"
#include "diag.h"
#include "plan.h"
#include "settings.h"
#include "harness.h"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct settings s;
};

static void read_yaml(struct fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	ck_assert_ptr_nonnull(text);
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	settings_read(&f->s, f->root);
}

static void release(struct fx *f)
{
	settings_release(&f->s);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

/* Nothing set: what Megatron and NeMo-RL do by default. */
START_TEST(defaults)
{
	struct fx f;
	struct settings init;

	read_yaml(&f, "policy:\n  model_name: x\n");
	ck_assert_int_eq(f.s.megatron, 1);      /* no dtensor_cfg */
	ck_assert_int_eq(f.s.distributed_optimizer, 1);
	ck_assert_int_eq(f.s.grad_reduce_in_fp32, 1);
	ck_assert_int_eq(f.s.moe_aux_loss, 1);
	ck_assert(f.s.offload_fraction == 1.0);
	ck_assert_int_eq(f.s.sequence_parallel, 0);
	ck_assert_int_eq(f.s.vocab_divisor, 0);
	ck_assert_int_eq(f.s.seq_length, 0);
	ck_assert_int_eq(f.s.has_generation, 0);
	ck_assert_int_eq(f.s.checkpointing, 0);
	ck_assert_str_eq(f.s.model_key, KEY_MODEL_NAME);
	ck_assert_int_eq(f.s.pp_loc.src, -1);
	ck_assert_int_eq(f.s.driver_layout_loc.src, -1);
	settings_init(&init);
	f.s.model_key = NULL;
	ck_assert_int_eq(memcmp(&init, &f.s, sizeof(init)), 0);
	release(&f);
}
END_TEST

START_TEST(every_field)
{
	struct fx f;

	read_yaml(&f,
		"policy:\n"
		"  max_total_sequence_length: 2048\n"
		"  logprob_batch_size: 3\n"
		"  dtensor_cfg: {enabled: false}\n"
		"  generation: {backend: megatron}\n"
		"  sequence_packing: {enabled: true}\n"
		"  dynamic_batching: {enabled: true}\n"
		"  megatron_cfg:\n"
		"    enabled: true\n"
		"    sequence_parallel: true\n"
		"    make_vocab_size_divisible_by: 64\n"
		"    num_layers_in_first_pipeline_stage: 3\n"
		"    num_layers_in_last_pipeline_stage: 5\n"
		"    moe_router_load_balancing_type: none\n"
		"    activation_checkpointing: true\n"
		"    recompute_granularity: selective\n"
		"    attention_backend: local\n"
		"    use_fused_linear_logprobs: true\n"
		"    distributed_data_parallel_config:\n"
		"      grad_reduce_in_fp32: false\n"
		"    fp8_cfg: {enabled: true, fp8_param: true}\n"
		"    optimizer:\n"
		"      use_distributed_optimizer: false\n"
		"      use_precision_aware_optimizer: true\n"
		"      exp_avg_dtype: torch.bfloat16\n"
		"      exp_avg_sq_dtype: float32\n"
		"      optimizer_cpu_offload: true\n"
		"      optimizer_offload_fraction: 0.25\n"
		"checkpointing: {enabled: true}\n"
		"cluster: {segment_size: 2}\n");
	ck_assert_int_eq(f.s.megatron, 1);
	ck_assert_int_eq(f.s.sequence_parallel, 1);
	ck_assert_int_eq(f.s.vocab_divisor, 64);
	ck_assert_int_eq(f.s.first_stage_layers, 3);
	ck_assert_int_eq(f.s.last_stage_layers, 5);
	ck_assert_int_eq(f.s.moe_aux_loss, 0);
	ck_assert_int_eq(f.s.activation_checkpointing, 1);
	ck_assert_int_eq(f.s.selective_recompute, 1);
	ck_assert_int_eq(f.s.unfused_attention, 1);
	ck_assert_int_eq(f.s.fused_logprobs, 1);
	ck_assert_int_eq(f.s.grad_reduce_in_fp32, 0);
	ck_assert_int_eq(f.s.fp8_param, 1);
	ck_assert_int_eq(f.s.distributed_optimizer, 0);
	ck_assert_int_eq(f.s.precision_aware_optimizer, 1);
	ck_assert_int_eq(f.s.exp_avg_half, 1);
	ck_assert_int_eq(f.s.exp_avg_sq_half, 0);
	ck_assert_int_eq(f.s.optimizer_cpu_offload, 1);
	ck_assert(f.s.offload_fraction == 0.25);
	ck_assert_int_eq(f.s.seq_length, 2048);
	ck_assert_int_eq(f.s.logprob_batch, 3);
	ck_assert_int_eq(f.s.has_generation, 1);
	ck_assert_int_eq(f.s.megatron_generation, 1);
	ck_assert_int_eq(f.s.sequence_packing, 1);
	ck_assert_int_eq(f.s.dynamic_batching, 1);
	ck_assert_int_eq(f.s.checkpointing, 1);
	ck_assert_int_eq(f.s.segment_size, 2);
	release(&f);
}
END_TEST

/* The DTensor backend; values of the wrong type or out of range count as
 * unset (the schema reports them); fp8_param needs fp8_cfg.enabled. */
START_TEST(unset_and_wrong_types)
{
	struct fx f;

	read_yaml(&f,
		"policy:\n"
		"  max_total_sequence_length: -4\n"
		"  dtensor_cfg: {enabled: true}\n"
		"  generation: {backend: vllm}\n"
		"  sequence_packing: {enabled: 'yes'}\n"
		"  megatron_cfg:\n"
		"    enabled: false\n"
		"    sequence_parallel: 'yes'\n"
		"    make_vocab_size_divisible_by: 0\n"
		"    fp8_cfg: {enabled: false, fp8_param: true}\n"
		"    optimizer:\n"
		"      use_distributed_optimizer: 1\n"
		"      optimizer_offload_fraction: half\n");
	ck_assert_int_eq(f.s.megatron, 0);
	ck_assert_int_eq(f.s.sequence_parallel, 0);
	ck_assert_int_eq(f.s.vocab_divisor, 0);
	ck_assert_int_eq(f.s.seq_length, 0);
	ck_assert_int_eq(f.s.fp8_param, 0);
	ck_assert_int_eq(f.s.distributed_optimizer, 1);
	ck_assert(f.s.offload_fraction == 1.0);
	ck_assert_int_eq(f.s.has_generation, 1);
	ck_assert_int_eq(f.s.megatron_generation, 0);
	ck_assert_int_eq(f.s.sequence_packing, 0);
	ck_assert_int_eq(f.s.dynamic_batching, 0);
	release(&f);
}
END_TEST

/* gtplan's own keys the simulator needs, and where they are set: line
 * numbers are 1-based lines of the YAML text below. */
START_TEST(gtplan_keys)
{
	struct fx f;

	read_yaml(&f,
		"policy:\n"
		"  model_name: null\n"
		"  megatron_cfg:\n"
		"    pipeline_model_parallel_size: 2\n"
		"gtplan:\n"
		"  model: {num_layers: 2}\n"
		"  driver_layout: 5d\n"
		"  stack:\n"
		"    moe_aux_loss_tracker: lazy\n");
	ck_assert_str_eq(f.s.model_key, KEY_GTPLAN_MODEL);
	ck_assert_str_eq(f.s.moe_tracker, "lazy");
	ck_assert_int_eq(f.s.pp_loc.line, 4);
	ck_assert_int_eq(f.s.driver_layout_loc.line, 7);
	ck_assert_int_eq(f.s.tracker_loc.line, 9);
	ck_assert_int_eq(f.s.stack_loc.line, 9);  /* the mapping's value */
	release(&f);
	read_yaml(&f, "policy:\n  model_name: null\n"
		      "gtplan: {stack: {moe_aux_loss_tracker: 3}}\n");
	ck_assert_ptr_null(f.s.model_key);
	ck_assert_ptr_null(f.s.moe_tracker);
	ck_assert_int_eq(f.s.tracker_loc.line, 3);
	ck_assert_int_eq(f.s.pp_loc.src, -1);
	release(&f);
}
END_TEST

/* The simulator's own keys are kept as written, each with its kind and
 * place (lines and columns 1-based in the YAML text below), for
 * sim/stack.c and sim/calls.c to judge. */
START_TEST(sim_keys_as_written)
{
	const struct set_call *c;
	struct fx f;

	read_yaml(&f,
		"policy:\n"
		"  train_global_batch_size: 8\n"
		"gtplan:\n"
		"  rank_order: tp-cp-gtp-ep-dp-pp\n"
		"  stack:\n"
		"    preset: nemo-rl-pr4512\n"
		"    transformer_engine: null\n"
		"    megatron_lm_7162: false\n"
		"    refit_gather: 3\n"
		"  calls:\n"
		"    - 7\n"
		"    - name: train\n"
		"      sharded: [data_parallel, 2]\n"
		"      replicated: null\n"
		"      dummy: true\n");
	ck_assert_int_eq(f.s.sim.stack.preset.kind, CFG_STR);
	ck_assert_str_eq(f.s.sim.stack.preset.text, "nemo-rl-pr4512");
	ck_assert_int_eq(f.s.sim.stack.preset.loc.line, 6);
	ck_assert_int_eq(f.s.sim.stack.preset.loc.col, 13);
	ck_assert_int_eq(f.s.sim.stack.transformer_engine.given, 1);
	ck_assert_int_eq(f.s.sim.stack.transformer_engine.kind, CFG_NULL);
	ck_assert_ptr_null(f.s.sim.stack.transformer_engine.text);
	ck_assert_int_eq(f.s.sim.stack.megatron_lm_7162.kind, CFG_BOOL);
	ck_assert_int_eq(f.s.sim.stack.megatron_lm_7162.b, 0);
	ck_assert_int_eq(f.s.sim.stack.refit_gather.kind, CFG_INT);
	ck_assert_str_eq(f.s.sim.stack.refit_gather.kind_name, "integer");
	ck_assert_ptr_null(f.s.sim.stack.refit_gather.text);
	ck_assert_int_eq(f.s.sim.stack.batch_split.given, 0);
	ck_assert_int_eq(f.s.sim.stack.batch_split.loc.src, -1);
	ck_assert_int_eq(f.s.sim.rank_order.loc.line, 4);
	ck_assert_int_eq(f.s.sim.global_batch.loc.line, 2);
	ck_assert_int_eq(f.s.sim.driver_layout.given, 0);

	ck_assert_int_eq(f.s.sim.calls.list.kind, CFG_SEQ);
	ck_assert_uint_eq(f.s.sim.calls.n_given, 2);
	ck_assert_uint_eq(f.s.sim.calls.n, 2);
	ck_assert_int_eq(f.s.sim.calls.unread.src, -1);
	c = &f.s.sim.calls.v[0];
	ck_assert_int_eq(c->entry.kind, CFG_INT);
	ck_assert_int_eq(c->name.given, 0);  /* not a map: no keys */
	c = &f.s.sim.calls.v[1];
	ck_assert_int_eq(c->entry.kind, CFG_MAP);
	ck_assert_int_eq(c->entry.loc.line, 12);
	ck_assert_str_eq(c->name.text, "train");
	ck_assert_int_eq(c->dummy.b, 1);
	ck_assert_int_eq(c->dummy.key_loc.line, 15);
	ck_assert_int_eq(c->dummy.key_loc.col, 7);
	ck_assert_int_eq(c->dummy.loc.col, 14);
	ck_assert_int_eq(c->dispatch.given, 0);
	ck_assert_uint_eq(c->sharded.n, 2);
	ck_assert_str_eq(c->sharded.items[0].text, "data_parallel");
	ck_assert_int_eq(c->sharded.items[1].kind, CFG_INT);
	ck_assert_int_eq(c->sharded.items[1].loc.col, 32);
	ck_assert_int_eq(c->replicated.v.given, 1);
	ck_assert_int_eq(c->replicated.v.kind, CFG_NULL);
	ck_assert_uint_eq(c->replicated.n, 0);
	ck_assert_int_eq(c->output.v.given, 0);
	release(&f);
}
END_TEST

/* Past SET_CALLS_MAX entries only the first are kept, and where the first
 * one left out starts; not a list: nothing kept. */
START_TEST(sim_calls_limit)
{
	size_t n = SET_CALLS_MAX + 3, cap = 32 + n * 24, len;
	char *yaml = malloc(cap);
	struct fx f;

	ck_assert_ptr_nonnull(yaml);
	len = (size_t)snprintf(yaml, cap, "gtplan:\n  calls:\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(yaml + len, cap - len,
					"    - {name: c%zu}\n", i);
	read_yaml(&f, yaml);
	free(yaml);
	ck_assert_uint_eq(f.s.sim.calls.n_given, n);
	ck_assert_uint_eq(f.s.sim.calls.n, SET_CALLS_MAX);
	ck_assert_int_eq(f.s.sim.calls.unread.line, 3 + SET_CALLS_MAX);
	ck_assert_str_eq(f.s.sim.calls.v[SET_CALLS_MAX - 1].name.text,
			 "c255");
	release(&f);
	read_yaml(&f, "gtplan: {calls: {name: train}}\n");
	ck_assert_int_eq(f.s.sim.calls.list.kind, CFG_MAP);
	ck_assert_uint_eq(f.s.sim.calls.n, 0);
	ck_assert_ptr_null(f.s.sim.calls.v);
	release(&f);
}
END_TEST

/* gtplan.interconnect and gtplan.hardware for the cost model: unset
 * values keep the markers (0, latencies -1: 0 is a latency), values out
 * of range count as unset. */
START_TEST(hardware_keys)
{
	struct fx f;

	read_yaml(&f, "policy:\n  model_name: x\n");
	ck_assert(f.s.intra_gbps == 0 && f.s.peak_tflops == 0);
	ck_assert(f.s.intra_lat_us == -1 && f.s.inter_lat_us == -1);
	ck_assert_ptr_null(f.s.hardware_gpu);
	release(&f);
	read_yaml(&f,
		"gtplan:\n"
		"  interconnect: {intra_node_gbps: 300, inter_node_gbps: 25,\n"
		"                 intra_node_latency_us: 0,\n"
		"                 inter_node_latency_us: 7, nvlink_domain_size: 72}\n"
		"  hardware: {peak_tflops: 2250, compute_efficiency: 0.5,\n"
		"             overlap: none, gpu: b200}\n"
		"  gpu_memory_gb: 180\n");
	ck_assert(f.s.intra_gbps == 300 && f.s.inter_gbps == 25);
	ck_assert(f.s.intra_lat_us == 0 && f.s.inter_lat_us == 7);
	ck_assert_int_eq(f.s.nvlink_domain, 72);
	ck_assert(f.s.peak_tflops == 2250 && f.s.compute_efficiency == 0.5);
	ck_assert_int_eq(f.s.overlap_none, 1);
	ck_assert(f.s.gpu_memory_gb == 180);
	ck_assert_str_eq(f.s.hardware_gpu, "b200");
	release(&f);
	read_yaml(&f, "gtplan:\n  hardware: {compute_efficiency: 1.5, "
		      "overlap: gtp_prefetch}\n"
		      "  interconnect: {intra_node_latency_us: -1}\n");
	ck_assert(f.s.compute_efficiency == 0 && f.s.intra_lat_us == -1);
	ck_assert_int_eq(f.s.overlap_none, 0);
	release(&f);
}
END_TEST

/* plan_build reads them first; plan_release leaves an empty plan's. */
START_TEST(plan_holds_them)
{
	struct fx f;
	struct plan p;
	struct settings init;

	read_yaml(&f,
		"policy:\n"
		"  train_global_batch_size: 8\n"
		"  train_micro_batch_size: 1\n"
		"  megatron_cfg:\n"
		"    enabled: true\n"
		"    tensor_model_parallel_size: 2\n"
		"    make_vocab_size_divisible_by: 32\n"
		"cluster: {num_nodes: 1, gpus_per_node: 8}\n");
	plan_init(&p);
	settings_init(&init);
	ck_assert_int_eq(memcmp(&init, &p.set, sizeof(init)), 0);
	ck_assert_int_eq(plan_build(&p, f.root, "t.yaml", &f.diags), 0);
	ck_assert_int_eq(memcmp(&f.s, &p.set, sizeof(f.s)), 0);
	ck_assert_int_eq(p.set.vocab_divisor, 32);
	plan_release(&p);
	ck_assert_int_eq(memcmp(&init, &p.set, sizeof(init)), 0);
	release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "defaults", defaults },
		{ "every_field", every_field },
		{ "unset", unset_and_wrong_types },
		{ "gtplan", gtplan_keys },
		{ "hardware", hardware_keys },
		{ "plan", plan_holds_them },
		{ "sim_keys", sim_keys_as_written },
		{ "sim_calls_limit", sim_calls_limit },
	};

	return RUN_CASES("settings", cases, 0);
}
