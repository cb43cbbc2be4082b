/*
 * cost: what one rank holds in memory while it trains, and how long each
 * call takes, from the plan, the model shape and the hardware.
 *
 * Memory (training call, per pipeline stage, bytes on one rank):
 *   weights     bf16: each large linear 1/(TP x G), its TP slice padded to
 *               a multiple of pad x G rows (GTPRematConfig); norms, biases
 *               and routers whole; embedding / output layer vocab-parallel
 *               over TP (vocab padded to make_vocab_size_divisible_by x TP)
 *   gathered    the GTP prefetch buffers: two layers' full TP slices
 *   gradients   main grads on the local shard (fp32, bf16 when
 *               grad_reduce_in_fp32 is false)
 *   optimizer   Adam: fp32 master + two moments (12 B/param, 8 with bf16
 *               moments), sharded over dp_cp_replicate (experts: edp) by
 *               the distributed optimizer, less what is offloaded
 *   activations Korthikanti et al. (arXiv 2205.05198) per layer and token:
 *               10 + (8 + 5 a s / h) / TP + MLP / TP bytes x hidden, all
 *               over TP with sequence parallel, tokens = s x micro / CP;
 *               the 5 a s / h of stored attention scores only with unfused
 *               attention (flash / fused attention, Megatron's default,
 *               keeps none); full recompute keeps each layer's input and
 *               one layer's activations; times the micro-batches 1F1B
 *               keeps in flight on the stage (PP - stage)
 *   logits      the last stage's fp32 logits of one micro-batch (none with
 *               use_fused_linear_logprobs)
 * `optimistic` replaces the activations by the layer inputs alone (what
 * even full recompute keeps): a config is reported as not fitting only
 * when that does not fit.
 *
 * Time: alpha-beta per collective with nccl-tests' bus-bandwidth factors,
 * NVLink numbers for a group inside one NVLink domain and network numbers
 * otherwise; compute at a fraction of the peak. The stage programs are
 * played as a discrete-event simulation: stages run in parallel, p2p and
 * groups that span stages synchronise them; a call takes as long as its
 * slowest stage. Times are for the slowest group of each kind.
 *
 * Files: cost.c (settings, groups, GT531), cost_mem.c (memory, GT530,
 * GT532), cost_time.c (collectives, compute, the timeline).
 *
 * Ownership: a cost_memory owns its stage array (cost_memory_release).
 */
#ifndef GTPLAN_COST_H
#define GTPLAN_COST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cfg.h"
#include "plan.h"
#include "program.h"
#include "sim.h"

/* Defaults; cost.c says where each comes from. */
#define COST_INTRA_GBPS     370.0  /* NVLink4 bus bandwidth per GPU, GB/s */
#define COST_INTER_GBPS     48.0   /* 400 Gb/s NIC per GPU, GB/s */
#define COST_INTRA_LAT_US   1.5    /* one step of a collective, NVLink */
#define COST_INTER_LAT_US   5.0    /* one step across the network */
#define COST_PEAK_TFLOPS    989.0  /* H100/H200 SXM dense BF16 */
#define COST_EFFICIENCY     0.45   /* achieved / peak on GEMMs */
#define COST_GPU_MEMORY_GB  141.0  /* H200 */
#define COST_VOCAB_DIVISOR  128    /* make_vocab_size_divisible_by */

enum cost_overlap {
	COST_OVERLAP_NONE,  /* every op on the critical path */
	COST_OVERLAP_GTP,   /* GTP weight gathers and gradient scatters of a
			       layer hide behind the previous layer's compute
			       (Megatron's GTP prefetch); the default */
};

enum cost_recompute { COST_RECOMPUTE_NONE, COST_RECOMPUTE_SELECTIVE,
		      COST_RECOMPUTE_FULL };

struct cost_settings {
	/* hardware: gtplan.interconnect, gtplan.hardware, gtplan.gpu_memory_gb */
	double intra_gbps, inter_gbps;     /* bus bandwidth per GPU, GB/s */
	double intra_lat_us, inter_lat_us; /* per step of a collective */
	long long domain;   /* GPUs per NVLink domain; <= 0: one domain */
	double peak_tflops, efficiency;
	double gpu_memory_gb;              /* GiB, as nvidia-smi counts */
	enum cost_overlap overlap;
	/* training settings: policy.megatron_cfg */
	int megatron;               /* the Megatron backend trains */
	int distributed_optimizer;  /* default true */
	enum cost_recompute recompute;
	int unfused_attention;      /* attention_backend unfused / local:
				       the attention scores are stored */
	int fused_logprobs;         /* use_fused_linear_logprobs: no logits */
	int pairs;                  /* DPO / reward model: micro-batches of
				       chosen and rejected, 2 x micro */
	int grad_bytes;             /* main grads: 4, or 2 */
	int optim_bytes;            /* per param: 12, or 8 with bf16 moments */
	double optim_on_gpu;        /* fraction of optimizer state on the GPU */
	long long vocab_divisor;
};

/* The defaults above: Megatron with the distributed optimizer, no
 * recompute, flash attention, fp32 grads, Adam 12 B/param on the GPU. */
void cost_settings_init(struct cost_settings *s);
/* Reads the plan's settings (p->set, planner/settings.h) over the
 * defaults: gtplan.interconnect (*_gbps, *_latency_us,
 * nvlink_domain_size), cluster.segment_size (an NVLink domain of that
 * many nodes), gtplan.hardware (peak_tflops, compute_efficiency,
 * overlap), gtplan.gpu_memory_gb, and the Megatron settings the memory
 * model uses. The default domain is one node of the training GPUs
 * (p->train.gpus_per_node). */
void cost_settings_read(struct cost_settings *s, const struct plan *p);

/* ---- memory ------------------------------------------------------------ */

enum cost_mem_item {
	MEM_WEIGHTS, MEM_GATHERED, MEM_GRADS, MEM_OPTIMIZER, MEM_ACTIVATIONS,
	MEM_LOGITS, MEM_ITEMS
};

struct cost_mem_stage {
	long long stage, layers;
	long long in_flight;     /* micro-batches whose activations are kept */
	long long params;        /* parameter elements the rank keeps */
	double item[MEM_ITEMS];  /* bytes */
	double total;            /* sum of the items */
	double optimistic;       /* activations as layer inputs only */
};

enum cost_mem_status { MEM_SKIPPED, MEM_FITS, MEM_TIGHT, MEM_EXCEEDS };

struct cost_memory {
	enum cost_mem_status status;
	const char *skipped;     /* why, when skipped (static text) */
	double capacity;         /* bytes */
	struct cost_mem_stage *stages;
	size_t n_stages;
	size_t worst;            /* stage with the largest total */
	int approximate;         /* the model's sizes are approximate
				    (model_shape.approximate) */
};

void cost_memory_init(struct cost_memory *cm);
void cost_memory_release(struct cost_memory *cm);
/* Fills *out for the train call of plan p (grid_ok required). With
 * o->runtime_model, one stage of gtplan-run's own fp32 allocation (m is
 * not used). Otherwise skipped
 * (status MEM_SKIPPED, no stages) when the model shape is unknown or the
 * Megatron backend does not train. status: FITS when every stage's total
 * fits, TIGHT when some total does not but every optimistic estimate
 * does, EXCEEDS when some optimistic estimate does not. Returns 0, or -1
 * when out of memory. */
int cost_memory(const struct plan *p, const struct model_shape *m,
		const struct prog_opts *o, const struct cost_settings *s,
		struct cost_memory *out);
const char *cost_mem_item_name(enum cost_mem_item i); /* "weights" ... */
const char *cost_mem_status_name(enum cost_mem_status st); /* "fits" ... */

/* ---- time --------------------------------------------------------------- */

#define COST_KINDS 64   /* group numbers cached: layout kinds, PROG_GK_* */

/* What the time model needs, once per plan; crossing facts are computed
 * on first use. Borrows p (and copies the rest). */
struct cost_model {
	const struct plan *p;
	struct model_shape m;      /* the shape programs are built with */
	int known;                 /* the real shape is known */
	struct prog_opts o;
	struct cost_settings s;
	signed char span[COST_KINDS];  /* -1 not yet, 0 inside a domain,
					  1 some group spans domains */
	long long example[COST_KINDS]; /* such a group's index */
};

void cost_model_init(struct cost_model *cm, const struct plan *p,
		     const struct model_shape *m, const struct prog_opts *o,
		     const struct cost_settings *s);

/* Whether some group of kind `group` (a layout kind, PROG_GK_WORLD or
 * PROG_GK_TRAIN_INFER) has members in two NVLink domains; *example (may be
 * NULL) gets that group's index (layout kinds). O(groups of the kind) the
 * first time, stopping at the first such group. */
int cost_group_spans(struct cost_model *cm, unsigned group,
		     long long *example);
/* Members of a group of kind `group` (a layout kind, PROG_GK_WORLD or
 * PROG_GK_TRAIN_INFER; 1 for others). */
long long cost_group_size(const struct plan *p, unsigned group);
/* How people write a group kind: "TP", "GTP", "EP" ...; longer names as
 * layout.h has them ("dp_cp_replicate", "WORLD"). Returns buf or a static
 * name. */
const char *cost_group_label(unsigned group, char *buf, size_t len);

/* Microseconds one collective op takes on a group of n ranks moving
 * `amount` bytes per rank as program.h counts them, over links inside
 * (spans = 0) or across NVLink domains. All-reduce: the faster of ring and
 * tree. Pure; for tests. */
double cost_coll_us(const struct cost_settings *s, unsigned kind,
		    long long n, long long amount, int spans);
/* Microseconds of `flops` at the settings' achieved rate. */
double cost_compute_us(const struct cost_settings *s, double flops);

/* One op on the timeline of a stage, for traces. */
struct cost_event {
	long long stage;
	const struct prog *pg;
	const struct prog_op *op;
	double ts_us;      /* when the stage issued it */
	double dur_us;     /* until it completed on the stage's timeline */
	double wait_us;    /* of dur_us, waiting for other stages */
	double hidden_us;  /* overlapped with compute (not in dur_us) */
	long long bytes;   /* the op's amount */
	int spans;         /* its group spans NVLink domains */
};
/* Return 0 to go on, nonzero to stop (then cost_call_time returns -1). */
typedef int (*cost_event_fn)(void *ctx, const struct cost_event *ev);

/* One call's estimate. */
struct cost_call {
	int valid;          /* 0: no estimate */
	double total_us;    /* the slowest stage's end */
	long long stage;    /* that stage */
	double compute_us, comm_us, wait_us, hidden_us; /* on that stage */
	/* the collective (op kind, group kind) with the most exposed time on
	 * that stage */
	unsigned top_kind, top_group;
	double top_us;
	long long top_ops;
	int top_spans;
	/* GTP weight traffic on that stage: all of it, and what prefetch
	 * does not hide */
	double gtp_us, gtp_exposed_us;
};

/* Plays program kind `kind` (per stage where it differs by stage) and
 * fills *out. Without a known model shape out->valid = 0. `fn` (may be
 * NULL) gets every op of every stage in timeline order per stage. Returns
 * 0, or -1 when out of memory, a program is too long, or fn stopped it
 * (out->valid = 0). */
int cost_call_time(struct cost_model *cm, enum call_program kind,
		   struct cost_call *out, cost_event_fn fn, void *ctx);

/* ---- findings and text ----------------------------------------------- */

/* GT531: a TP (or expert TP) group spans NVLink domains; a GTP (or expert
 * GTP) group does and its weight traffic is exposed for more than 5% of
 * the train step by `train` (the train call's estimate; NULL: computed
 * here when needed; no estimate: no GTP finding). Findings point at the
 * parallel size in the config. Returns 0, or -1 when out of memory. */
int cost_check_spans(struct cost_model *cm, const struct cfg_node *root,
		     const struct cost_call *train, struct diag_list *diags);
/* GT530 when mem->status is MEM_EXCEEDS, GT532 when MEM_TIGHT, naming the
 * stage, the biggest items and what to change. Returns 0, or -1 when out
 * of memory. */
int cost_check_memory(const struct cost_memory *mem,
		      const struct cost_settings *s,
		      const struct cfg_node *root, struct diag_list *diags);

/* "9.21 s", "41.3 ms", "12 us"; returns buf. */
const char *cost_time_text(double us, char *buf, size_t len);

#endif
