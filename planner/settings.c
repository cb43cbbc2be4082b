/*
 * settings: the config's settings read once, typed (settings.h).
 */
#include <string.h>

#include "cfg_keys.h"
#include "settings.h"

void settings_init(struct settings *s)
{
	memset(s, 0, sizeof(*s));
	s->megatron = 1;
	s->moe_aux_loss = 1;
	s->grad_reduce_in_fp32 = 1;
	s->distributed_optimizer = 1;
	s->offload_fraction = 1.0;
	s->intra_lat_us = -1;
	s->inter_lat_us = -1;
	s->pp_loc = DIAG_NOLOC;
	s->tracker_loc = DIAG_NOLOC;
	s->stack_loc = DIAG_NOLOC;
	s->driver_layout_loc = DIAG_NOLOC;
	settings_sim_init(&s->sim);
}

/* A boolean at `path`, `dflt` when unset or of another type. */
static int bool_at(const struct cfg_node *root, const char *path, int dflt)
{
	int b = 0;

	return cfg_bool(root, path, &b) == 1 ? b : dflt;
}

/* A positive integer at `path`, else 0. */
static long long positive_at(const struct cfg_node *root, const char *path)
{
	long long v = 0;

	return cfg_int(root, path, &v) == 1 && v > 0 ? v : 0;
}

/* The string at `path` is one of words (NULL-terminated). */
static int str_is(const struct cfg_node *root, const char *path,
		  const char *const *words)
{
	const char *v = NULL;

	if (cfg_str(root, path, &v) != 1)
		return 0;
	for (; *words; words++)
		if (strcmp(v, *words) == 0)
			return 1;
	return 0;
}

/* A 16-bit float dtype ("bf16", "torch.bfloat16", "float16", ...). */
static int half_dtype(const struct cfg_node *root, const char *path)
{
	const char *v = NULL;

	return cfg_str(root, path, &v) == 1 &&
	       (strstr(v, "bfloat16") || strstr(v, "float16") ||
		strstr(v, "bf16") || strstr(v, "fp16"));
}

static void read_optimizer(struct settings *s, const struct cfg_node *root)
{
	s->distributed_optimizer =
		bool_at(root, KEY_MEG_OPT "use_distributed_optimizer", 1);
	s->precision_aware_optimizer =
		bool_at(root, KEY_MEG_OPT "use_precision_aware_optimizer", 0);
	s->exp_avg_half = half_dtype(root, KEY_MEG_OPT "exp_avg_dtype");
	s->exp_avg_sq_half = half_dtype(root, KEY_MEG_OPT "exp_avg_sq_dtype");
	s->optimizer_cpu_offload =
		bool_at(root, KEY_MEG_OPT "optimizer_cpu_offload", 0);
	/* unset: settings_init's 1.0 stays */
	cfg_num(root, KEY_MEG_OPT "optimizer_offload_fraction",
		&s->offload_fraction);
}

/* A number at `path` in (lo, hi] (lo_open) or [lo, hi], else `dflt`. */
static double num_at(const struct cfg_node *root, const char *path,
		     double lo, int lo_open, double hi, double dflt)
{
	double v = 0;

	if (cfg_num(root, path, &v) != 1 || v > hi || v < lo ||
	    (lo_open && v == lo))
		return dflt;
	return v;
}

/* gtplan.interconnect and gtplan.hardware: the cost model's speeds. */
static void read_hardware(struct settings *s, const struct cfg_node *root)
{
	static const char *const none[] = { "none", NULL };
	const char *t = NULL;

	s->nvlink_domain = positive_at(root, KEY_INTERCONNECT
				       "nvlink_domain_size");
	s->intra_gbps = num_at(root, KEY_INTERCONNECT "intra_node_gbps", 0, 1,
			       1e300, 0);
	s->inter_gbps = num_at(root, KEY_INTERCONNECT "inter_node_gbps", 0, 1,
			       1e300, 0);
	s->intra_lat_us = num_at(root, KEY_INTERCONNECT
				 "intra_node_latency_us", 0, 0, 1e300, -1);
	s->inter_lat_us = num_at(root, KEY_INTERCONNECT
				 "inter_node_latency_us", 0, 0, 1e300, -1);
	s->peak_tflops = num_at(root, KEY_HARDWARE "peak_tflops", 0, 1, 1e300,
				0);
	s->compute_efficiency = num_at(root, KEY_HARDWARE "compute_efficiency",
				       0, 1, 1, 0);
	s->overlap_none = str_is(root, KEY_HARDWARE "overlap", none);
	s->gpu_memory_gb = num_at(root, KEY_GPU_MEMORY, 0, 1, 1e300, 0);
	if (cfg_str(root, KEY_HARDWARE "gpu", &t) == 1)
		s->hardware_gpu = t;
}

/* gtplan's own keys the simulator reads, and where findings point. */
static void read_gtplan(struct settings *s, const struct cfg_node *root)
{
	const struct cfg_node *n = cfg_path(root, KEY_MODEL_NAME);
	const char *t = NULL;

	if (n && n->kind != CFG_NULL)
		s->model_key = KEY_MODEL_NAME;
	else if (cfg_path(root, KEY_GTPLAN_MODEL))
		s->model_key = KEY_GTPLAN_MODEL;
	if (cfg_str(root, KEY_STACK "moe_aux_loss_tracker", &t) == 1)
		s->moe_tracker = t;
	s->pp_loc = cfg_loc(root, KEY_PP);
	s->tracker_loc = cfg_loc(root, KEY_STACK "moe_aux_loss_tracker");
	s->stack_loc = cfg_loc(root, KEY_STACK_CFG);
	s->driver_layout_loc = cfg_loc(root, KEY_DRIVER_LAYOUT);
}

static int is_map(const struct cfg_node *root, const char *path)
{
	const struct cfg_node *n = cfg_path(root, path);

	return n && n->kind == CFG_MAP;
}

void settings_read(struct settings *s, const struct cfg_node *root)
{
	static const char *const none[] = { "none", NULL };
	static const char *const selective[] = { "selective", NULL };
	static const char *const unfused[] = { "unfused", "local", NULL };
	static const char *const megatron[] = { "megatron", NULL };

	settings_init(s);
	s->megatron = bool_at(root, KEY_MEG_ENABLED, 0) ||
		      !cfg_path(root, KEY_DTENSOR);
	s->sequence_parallel = bool_at(root, KEY_SEQ_PARALLEL, 0);
	s->vocab_divisor = positive_at(root, KEY_VOCAB_DIVISOR);
	s->first_stage_layers =
		positive_at(root, KEY_MEG "num_layers_in_first_pipeline_stage");
	s->last_stage_layers =
		positive_at(root, KEY_MEG "num_layers_in_last_pipeline_stage");
	s->moe_aux_loss =
		!str_is(root, KEY_MEG "moe_router_load_balancing_type", none);
	s->activation_checkpointing =
		bool_at(root, KEY_MEG "activation_checkpointing", 0);
	s->selective_recompute =
		str_is(root, KEY_MEG "recompute_granularity", selective);
	s->unfused_attention =
		str_is(root, KEY_MEG "attention_backend", unfused);
	s->fused_logprobs = bool_at(root, KEY_MEG "use_fused_linear_logprobs", 0);
	s->grad_reduce_in_fp32 = bool_at(root, KEY_MEG
		"distributed_data_parallel_config.grad_reduce_in_fp32", 1);
	s->fp8_param = bool_at(root, KEY_MEG "fp8_cfg.enabled", 0) &&
		       bool_at(root, KEY_MEG "fp8_cfg.fp8_param", 0);
	read_optimizer(s, root);
	s->seq_length = positive_at(root, KEY_POLICY "max_total_sequence_length");
	s->logprob_batch = positive_at(root, KEY_POLICY "logprob_batch_size");
	s->has_generation = cfg_path(root, KEY_GEN_CFG) != NULL;
	s->megatron_generation = str_is(root, KEY_GEN_BACKEND, megatron);
	s->sequence_packing =
		bool_at(root, KEY_POLICY "sequence_packing.enabled", 0);
	s->dynamic_batching =
		bool_at(root, KEY_POLICY "dynamic_batching.enabled", 0);
	s->checkpointing = bool_at(root, "checkpointing.enabled", 0);
	s->preference_pairs = is_map(root, "dpo") || is_map(root, "rm");
	s->segment_size = positive_at(root, KEY_CLUSTER "segment_size");
	read_hardware(s, root);
	read_gtplan(s, root);
	settings_sim_read(&s->sim, root);
}

/* ---- the simulator's own keys (settings_sim.c) ------------------------- */

void settings_release(struct settings *s)
{
	settings_sim_release(&s->sim);
	settings_init(s);
}
