/*
 * stack: gtplan.stack, the behaviours of the software stack being planned
 * for (docs/design.md §2.9), with the correct behaviour as the
 * default; a preset sets known stacks at once and single keys override it.
 * Also the refit checks (GT701-GT705) the simulator runs on a plan.
 *
 * Ownership: a struct stack is the caller's value with no release; its
 * preset name is static, its transformer_engine points into the config
 * tree read (through plan.set), which must outlive it; names returned are
 * static.
 */
#ifndef GTPLAN_STACK_H
#define GTPLAN_STACK_H

#include <stdio.h>

#include "diag.h"
#include "plan.h"
#include "settings_sim.h"
#include "sim.h"

enum stack_gather {
	STACK_GATHER_GTP_THEN_TP, /* correct: rows 0..R-1 */
	STACK_GATHER_TP_ONLY,     /* [R/G, k] */
	STACK_GATHER_TP_THEN_GTP  /* all rows, wrong order (column-parallel) */
};

enum stack_key {
	STACK_RNG, STACK_REPLICA, STACK_GATHER, STACK_COMPARE, STACK_BATCH,
	STACK_TE, STACK_FIXES, STACK_WRITER, STACK_OPT_FORMAT, STACK_7162,
	STACK_NKEYS
};

/* gtplan.stack.optimizer_ckpt_format (docs/design.md §2.7). UNSET: not
 * said; the checkpoint plan then lays the optimizer state out as
 * Megatron's default (dp_reshardable: --dist-ckpt-optim-fully-reshardable
 * off) but a layout change is only a note, since the run may set the flag. */
enum stack_opt_format {
	STACK_OPT_UNSET,
	STACK_OPT_DP_RESHARDABLE,
	STACK_OPT_FULLY_RESHARDABLE,
	STACK_OPT_FULLY_SHARDED_MODEL_SPACE
};

struct stack {
	const char *preset;            /* NULL: none (points into the config) */
	int rng_dp_cp;                 /* rng_state_group: dp_cp */
	int replica_dp_cp;             /* replica_group: dp_cp */
	enum stack_gather refit_gather;
	int compare_without_shards;    /* inference_layout_compare */
	int batch_copies;              /* batch_split: copies */
	const char *transformer_engine;/* NULL: unknown */
	int mcore_gtp_fixes;
	/* sharded_replica_group: dp_cp_gtp (the writer of GTP-sharded
	 * weights elected over the GTP-inclusive group: only g = 0 pieces
	 * have a main replica; docs/notes/megatron-semantics.md §2.4) */
	int writer_dp_cp_gtp;
	enum stack_opt_format opt_format;
	int mlm_7162;                  /* megatron_lm_7162 (default true) */
	/* where each value comes from: its key's value, else the preset's
	 * value, else DIAG_NOLOC (the default) */
	struct diag_loc loc[STACK_NKEYS];
};

/* The defaults (every behaviour correct, TE unknown). */
void stack_init(struct stack *s);

/* Judges gtplan.stack as the config writes it (in: plan.set.sim.stack;
 * preset first, then single keys; a value of another type counts as
 * unset, the schema reports it). An unknown preset is a GT700 error at its
 * value (hint: the presets) and -1 is returned; *s then holds the defaults
 * overridden by the single keys. */
int stack_read(const struct set_stack *in, struct stack *s,
	       struct diag_list *diags);

/* "gtp_then_tp", "tp_only" or "tp_then_gtp". */
const char *stack_gather_name(enum stack_gather g);

/* "dp_reshardable", ... ("dp_reshardable" for UNSET: Megatron's default). */
const char *stack_opt_format_name(enum stack_opt_format f);

/* Presets. */
size_t stack_preset_count(void);
const char *stack_preset_name(size_t i);
/* Applies preset `name` to s (locations: loc); -1 when unknown. */
int stack_apply_preset(struct stack *s, const char *name, struct diag_loc loc);
/* `gtplan explain preset NAME`: what it sets and why. -1 (nothing
 * printed) when unknown. */
int stack_explain_preset(FILE *f, const char *name);

/* The rows a gather order rebuilds of a column-parallel weight of `rows`
 * rows (rows % (tp * g) == 0), as rank (t = 0, g = 0) sees it: writes the
 * first min(max, n) row indices to out and returns n (rows, or rows / g
 * for tp_only). */
long long stack_refit_rows(enum stack_gather how, long long tp, long long g,
			   long long rows, long long *out, long long max);

/* 1: version >= 2.19, 0: older, -1: not a version. */
int stack_te_supports_gtp(const char *version);

/* The stack's findings on a plan with model m (m may have known = 0):
 * GT701 (refit: wrong shape), GT702 (refit: wrong order), GT703 (refit
 * silently skipped), GT704 (TransformerEngine too old for GTP), GT705
 * (Megatron-core without the GTP fixes), GT720 (batch split over copies
 * instead of lanes; its note: the loss trap), and GT700. Only GT700 fires
 * when G == 1. Returns 0, or -1 when out of memory. */
int stack_check(const struct plan *p, const struct model_shape *m,
		struct diag_list *diags);

#endif
