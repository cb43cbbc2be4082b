/*
 * rt_plan: the plan JSON (gtplan-plan/1) as gtplan-run needs it, read with
 * Jansson and checked before anything runs.
 *
 * rt_plan_load() reads the sizes, the rank table, the runtime settings and,
 * for one rank (the caller's), its group of every kind the runtime uses.
 * It checks what the runtime relies on: the rank table is complete and each
 * rank's coordinates give its rank under the plan's rank_order; every group
 * kind partitions the world; the caller's group of each kind is exactly the
 * ranks that share its coordinates off the kind's axes, listed in Megatron's
 * order (docs/design.md §2.2), at the index its coordinates give; its lane
 * is its place in its dp group. Any mismatch is RT_EPLAN with one message.
 *
 * Ownership: a struct rt_plan owns its arrays; rt_plan_release() frees them.
 */
#ifndef GTPLAN_RT_PLAN_H
#define GTPLAN_RT_PLAN_H

/* Dense axes; RT_DP is the replicate axis (Megatron's dp with GTP off). */
enum rt_axis { RT_TP, RT_CP, RT_GTP, RT_DP, RT_PP, RT_NAXES };

/* The group kinds the runtime builds communicators for, plus the world. */
enum rt_kind {
	RT_K_TP,
	RT_K_CP,
	RT_K_GTP,
	RT_K_DP,              /* gtp + dp: the lane group */
	RT_K_DP_CP,           /* gtp + dp + cp */
	RT_K_DP_CP_REPLICATE, /* dp + cp */
	RT_K_PP,              /* the pipeline: point-to-point between stages */
	RT_K_EMB,             /* Megatron's embedding group: the first and the
				 last rank of the pipeline (one rank when PP
				 is 1; a middle stage's is itself alone); not
				 in the plan, derived from pp */
	RT_K_WORLD,
	RT_NKINDS
};

/* Hostile-input limits: the largest world gtplan-run starts, the most
 * layers its model has. */
#define RT_MAX_WORLD 65536
#define RT_MAX_LAYERS 4096

struct rt_rank {
	int c[RT_NAXES];
	int lane;
	int node, local_rank;
};

/* A rank's group of one kind. */
struct rt_group {
	long long index;  /* the group's index in the plan's list of the kind */
	int n;            /* members */
	int pos;          /* the rank's place among them */
	int *members;     /* world ranks, ascending */
};

/* gtplan.runtime (the plan JSON's "runtime" object); the model's sizes
 * are runtime.model's (the decoder the config names, or gtplan.runtime's
 * sizes). */
struct rt_settings {
	long long hidden, ffn, layers, seq_len, vocab, seed, steps;
	long long heads, kv_heads, head_dim;
	int tie, qkv_bias, qk_norm, moe, sp;
	double rope_theta, norm_eps;
	char cp_comm[16];  /* runtime.model.cp_comm_type */
	/* the pipeline split: layers of the first and last stage, virtual
	 * stages (0: unset; Megatron's even split, no interleaving) */
	long long pp_first, pp_last, vpp;
	char model_name[128];
	double lr;
	int bf16;
	int prefetch; /* runtime.prefetch: GTP gathers one weight ahead */
};

/* The plan's estimate of this run's train step (runtime_estimate, made by
 * gtplan sim: sim/step_est.h): the step and its kernel classes in the
 * plan's (sorted) order; valid 0 when the plan has none. */
#define RT_EST_CLASSES 8
struct rt_estimate {
	int valid;
	double step_s;
	int n;
	char name[RT_EST_CLASSES][24];
	double s[RT_EST_CLASSES];
};

struct rt_plan {
	int world;
	int size[RT_NAXES];
	int lanes;                  /* sizes.dp = D x G */
	int ep;
	int order[RT_NAXES];        /* axes in rank_order order, fastest first */
	struct rt_rank *ranks;      /* world entries */
	int me;                     /* the rank whose groups were read */
	struct rt_group group[RT_NKINDS];
	long long global_batch, micro_batch; /* 0 when null in the plan */
	struct rt_settings rt;
	long long mem_per_rank;     /* the plan's memory estimate of one rank
				       (largest stage), 0 when skipped */
	struct rt_estimate est;     /* the plan's step-time estimate */
	/* calls the driver does not make on this rank (plan calls[].
	 * called_when; every call is made where the plan says nothing) */
	int train_called, logprobs_called;
	char train_why[160], logprobs_why[160];
	char refit_gather[16];      /* stack.refit_gather when the plan has
				       it (gtplan.stack), else "" */
	int n_errors;               /* error diagnostics in the plan */
	int forced;                 /* --force (set by the caller): run what
				       the plan's errors forbid where the
				       runtime can (GT633's schedule) */
	char first_error[256];      /* the first one's "CODE: message" */
};

void rt_plan_init(struct rt_plan *p);
void rt_plan_release(struct rt_plan *p);

/* Reads and checks the plan at `path` for world rank `me` of an MPI world
 * of `world` ranks. Returns 0, RT_EIO (unreadable, not JSON), RT_EWORLD
 * (the plan is for another world size) or RT_EPLAN. Findings every rank
 * makes alike are printed by rank 0 only; the others by the rank. */
int rt_plan_load(struct rt_plan *p, const char *path, int me, int world);

const char *rt_kind_name(enum rt_kind k);

#endif
