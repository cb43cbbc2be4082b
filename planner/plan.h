/*
 * plan: from a resolved config to sizes, resources and the rank grid.
 *
 * plan_build() reads the config tree (after cfg_load/cfg_override/
 * cfg_resolve and the schema check), derives every size (docs/design.md §2.1),
 * the GPUs that train versus serve inference (NeMo-RL's GRPO resource
 * split), and checks the planning rules, reporting findings into diags.
 * The rank table and the groups are not stored: layout.h computes them on
 * demand from the two grids.
 *
 * Ownership: a plan owns its strings; plan_release() frees them.
 */
#ifndef GTPLAN_PLAN_H
#define GTPLAN_PLAN_H

#include "cfg.h"
#include "diag.h"
#include "layout.h"
#include "model.h"
#include "settings.h"

/* Hostile-input limit: the largest world gtplan plans. The simulator
 * visits every rank of the world a few times per call (the dispatch, the
 * colour refinement of sim/classes.c, the placement and checkpoint
 * checks), so its time is linear in the world. Measured on an idle core
 * of a 2-core machine (CPU time, release build; scripts/bench.sh's
 * layout, with CP 2, PP 4, other rank orders or the 5-D driver layout):
 * 2^20 ranks lint in 0.2 to 0.4 s, 2^24 ranks in 4 to 6.5 s with up to
 * 250 MiB, and several times that on a loaded machine, past "any config
 * within the limits finishes in seconds" (README "Limits"). 2^20 GPUs is
 * also far above any cluster Megatron has been run on. */
#define PLAN_MAX_WORLD (1LL << 20)

/* A set of GPUs: `nodes` nodes of `gpus_per_node` GPUs. */
struct plan_gpus {
	long long nodes;
	long long gpus_per_node;
};

/* The decoder gtplan-run trains (the plan JSON's "runtime"."model"): the
 * model the config names (catalog or gtplan.model), cut to
 * gtplan.runtime.layers when that is set, else gtplan.runtime's sizes
 * with the PLAN_RT_* attention defaults below. moe: the named model has
 * experts (gtplan-run refuses it). */
struct plan_rt_model {
	char name[128];
	long long hidden, ffn, layers, heads, kv_heads, head_dim, vocab;
	int tie_embeddings, qkv_bias, qk_norm, moe, sequence_parallel;
	double rope_theta, norm_eps;
	/* policy.megatron_cfg.cp_comm_type as written ("p2p", Megatron's
	 * default, when unset); gtplan-run runs "p2p" and "all_gather" */
	char cp_comm_type[16];
	/* the pipeline split (Megatron's num_layers_in_first_pipeline_stage,
	 * ..._last_..., virtual_pipeline_model_parallel_size); 0: unset */
	long long first_stage_layers, last_stage_layers, virtual_stages;
};

#define PLAN_RT_HEADS      4
#define PLAN_RT_KV_HEADS   4
#define PLAN_RT_ROPE_THETA 10000.0
#define PLAN_RT_NORM_EPS   1e-5

/* gtplan.runtime: the small model and run settings gtplan-run reads from
 * the plan JSON's "runtime" object. Absent keys take the defaults of
 * plan_build (PLAN_RT_* below); dtype points at a static "fp32" or "bf16". */
struct plan_runtime {
	long long hidden, ffn, layers, seq_len, vocab, seed, steps;
	double lr;
	const char *dtype;
	int prefetch; /* gather the next weight while this one is used */
	struct plan_rt_model model;
};

#define PLAN_RT_HIDDEN  128
#define PLAN_RT_FFN     512
#define PLAN_RT_LAYERS  2
#define PLAN_RT_SEQ_LEN 128
#define PLAN_RT_VOCAB   256
#define PLAN_RT_SEED    1234
#define PLAN_RT_STEPS   5
#define PLAN_RT_LR      1e-3

struct plan {
	char *config_name;       /* as given on the command line */

	/* cluster */
	struct plan_gpus cluster;   /* cluster.num_nodes x cluster.gpus_per_node */
	struct plan_gpus train;     /* the GPUs the policy trains on */
	struct plan_gpus inference; /* non-colocated generation; 0 when colocated */
	struct plan_gpus reward;    /* non-colocated reward model; 0 if none */
	struct plan_gpus teachers;  /* non-colocated distillation teachers */
	int colocated;              /* generation shares the training GPUs */
	long long world;            /* training ranks = train.nodes*gpus_per_node */

	/* parallel sizes (docs/design.md §2.1) */
	long long tp, cp, pp, ep, etp;
	long long shards, expert_shards; /* S and ES after null -> TP / ETP */
	long long gtp, egtp;             /* G = S/TP, EG = ES/ETP */
	long long model_size;            /* M = TP*CP*G*PP */
	long long dp_replicate;          /* D = W/M (copies) */
	long long lanes;                 /* L = D*G */
	long long edp;                   /* expert replicate DP */

	/* batches */
	long long global_batch, micro_batch; /* 0 when unset */

	struct plan_runtime runtime; /* gtplan.runtime with defaults */

	char *driver_layout;  /* "4d" (default) or "5d" */
	struct lay_order order;
	struct lay_grid dense, expert;
	/* 1 when the sizes are consistent, so ranks and groups exist; 0 when a
	 * rule failed that leaves no grid (e.g. world not divisible by M). */
	int grid_ok;
	int expert_grid_ok;
	/* 1 when the schema refused a parallel size (TP 4.0, "4", 0): the
	 * sizes above hold defaults in its place, so the framework rules that
	 * judge the layout are skipped (the schema's error is the finding). */
	int sizes_refused;

	struct settings set; /* the config's other settings (settings.h) */
	/* The config's model, resolved once by plan_build for the framework
	 * rules, runtime.model and the simulator; model_rc is model_resolve's
	 * return (-1: refused values). Set only when plan_build returns 0. */
	struct model_shape model;
	int model_rc;
};

void plan_init(struct plan *p);
void plan_release(struct plan *p);

/* Derives the plan from a resolved config and checks the rules. Returns 0
 * when it could build a plan (findings may still have been reported),
 * -1 when the config is too broken to say anything (errors reported). */
int plan_build(struct plan *p, const struct cfg_node *root,
	       const char *config_name, struct diag_list *diags);

/* Fills cluster, train, inference, reward, teachers, colocated and world
 * from the config the way NeMo-RL's GRPO setup splits the cluster
 * (planner/resources.c). Reports NeMo-RL's own resource checks as GT309 /
 * GT310. Returns 0, or -1 when no training world can be derived. */
int plan_derive_resources(struct plan *p, const struct cfg_node *root,
			  struct diag_list *diags);

/* Node and local GPU of training rank r. */
void plan_rank_place(const struct plan *p, long long r, long long *node,
		     long long *local);

#endif
