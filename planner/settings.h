/*
 * settings: the NeMo-RL and Megatron settings the simulator and the
 * framework rules need besides the sizes, read from the config once, typed,
 * with Megatron's defaults where the config is silent. plan_build() fills
 * plan.set first of all; the simulator reads plan.set instead of the config
 * tree. It also keeps where the config sets the keys the simulator's
 * findings point at (struct diag_loc, DIAG_NOLOC when unset).
 *
 * A value of the wrong type counts as unset: the schema check reports it.
 *
 * Ownership: a struct settings is the caller's value; its strings are
 * static (model_key) or point into the config tree read (moe_tracker, and
 * those of sim), which must outlive it. settings_release frees what
 * settings_read allocated (sim's gtplan.calls entries).
 */
#ifndef GTPLAN_SETTINGS_H
#define GTPLAN_SETTINGS_H

#include "cfg.h"
#include "diag.h"
#include "settings_sim.h"

struct settings {
	/* Megatron trains: megatron_cfg.enabled is true, or there is no
	 * dtensor_cfg (NeMo-RL's choice of the policy's backend) */
	int megatron;
	/* policy.megatron_cfg. */
	int sequence_parallel;         /* sequence_parallel */
	long long vocab_divisor;       /* make_vocab_size_divisible_by; 0:
					  unset, the model's applies */
	long long first_stage_layers;  /* num_layers_in_first_pipeline_stage */
	long long last_stage_layers;   /* num_layers_in_last_pipeline_stage */
	int moe_aux_loss;              /* 0: moe_router_load_balancing_type
					  is "none" */
	int activation_checkpointing;
	int selective_recompute;       /* recompute_granularity "selective" */
	int unfused_attention;         /* attention_backend unfused or local */
	int fused_logprobs;            /* use_fused_linear_logprobs */
	int grad_reduce_in_fp32;       /* distributed_data_parallel_config.
					  grad_reduce_in_fp32; default true */
	int fp8_param;                 /* fp8_cfg.enabled and fp8_param */
	/* policy.megatron_cfg.optimizer. */
	int distributed_optimizer;     /* use_distributed_optimizer; default
					  true */
	int precision_aware_optimizer; /* use_precision_aware_optimizer */
	int exp_avg_half, exp_avg_sq_half; /* exp_avg(_sq)_dtype 16-bit */
	int optimizer_cpu_offload;     /* optimizer_cpu_offload */
	double offload_fraction;       /* optimizer_offload_fraction; 1.0,
					  Megatron's default, when unset */
	/* policy. */
	long long seq_length;          /* max_total_sequence_length; 0 unset */
	long long logprob_batch;       /* logprob_batch_size; 0 unset */
	int has_generation;            /* policy.generation is set */
	int megatron_generation;       /* policy.generation.backend "megatron" */
	int sequence_packing;          /* sequence_packing.enabled */
	int dynamic_batching;          /* dynamic_batching.enabled */
	/* elsewhere */
	int checkpointing;             /* checkpointing.enabled */
	int preference_pairs;          /* a dpo or rm section: each sample is
					  a chosen/rejected pair, trained in
					  one micro-batch (batches double) */
	long long segment_size;        /* cluster.segment_size; 0 unset */
	/* gtplan.interconnect, gtplan.hardware and gtplan.gpu_memory_gb for
	 * the cost model (sim/cost.h), which keeps its defaults where these
	 * are unset: 0 (latencies: -1, since 0 is a value) */
	long long nvlink_domain;       /* nvlink_domain_size, > 0 */
	double intra_gbps, inter_gbps; /* intra_node_gbps, inter_node_gbps */
	double intra_lat_us, inter_lat_us; /* *_latency_us, >= 0 */
	double peak_tflops;            /* hardware.peak_tflops */
	double compute_efficiency;     /* hardware.compute_efficiency, (0, 1] */
	int overlap_none;              /* hardware.overlap is "none" */
	double gpu_memory_gb;
	/* gtplan.hardware.gpu: the profile of data/hardware.yaml the step
	 * estimate uses; NULL unset (the file's first) */
	const char *hardware_gpu;
	/* the model named: KEY_MODEL_NAME when policy.model_name is set and
	 * not null, else KEY_GTPLAN_MODEL when set, else NULL */
	const char *model_key;
	/* gtplan.stack.moe_aux_loss_tracker; NULL when not a string */
	const char *moe_tracker;
	/* where the config sets them, for findings (DIAG_NOLOC: unset) */
	struct diag_loc pp_loc;            /* pipeline_model_parallel_size */
	struct diag_loc tracker_loc;       /* gtplan.stack.moe_aux_loss_tracker */
	struct diag_loc stack_loc;         /* gtplan.stack */
	struct diag_loc driver_layout_loc; /* gtplan.driver_layout */
	/* ---- the simulator's own keys, as written (settings_sim.h) ---- */
	struct settings_sim sim;
};

/* The settings of an empty config. */
void settings_init(struct settings *s);
/* Reads them from a resolved config into an initialised or released s;
 * never fails (out of memory: sim.calls.nomem). */
void settings_read(struct settings *s, const struct cfg_node *root);
/* Frees what settings_read allocated; s is settings_init's again. */
void settings_release(struct settings *s);

#endif
