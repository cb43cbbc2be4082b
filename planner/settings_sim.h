/*
 * settings_sim: the config's keys whose meaning only the simulator knows,
 * read once with the other settings (settings_read fills plan.set.sim):
 * gtplan.stack (sim/stack.c), gtplan.calls (sim/calls.c), and the keys
 * the placement check's findings point at (sim/dispatch_check.c). Each is
 * kept as written, a struct set_value: whether it is set, its kind, its
 * text or truth, and where its value and key are, so that the simulator
 * judges the values and reports its findings at their places without the
 * config tree. Nothing is judged here and nothing is reported.
 *
 * Ownership: a struct settings_sim is part of its struct settings; its
 * strings point into the config tree read, which must outlive it; the
 * gtplan.calls entries (calls.v) are one heap block, freed by
 * settings_sim_release (settings_release).
 */
#ifndef GTPLAN_SETTINGS_SIM_H
#define GTPLAN_SETTINGS_SIM_H

#include <stddef.h>

#include "cfg.h"
#include "diag.h"

/* Hostile-input limit: gtplan.calls entries read (sim/calls.c reports
 * the rest as one GT520). */
#define SET_CALLS_MAX 256

/* A value as the config writes it. Unset: given 0, kind CFG_NULL, text
 * NULL, locations DIAG_NOLOC. */
struct set_value {
	int given;               /* the key is there (a null value included) */
	enum cfg_kind kind;
	const char *kind_name;   /* "integer", "list", ... (cfg_kind_name) */
	const char *text;        /* CFG_STR: the string; else NULL */
	int b;                   /* CFG_BOOL: the value; else 0 */
	struct diag_loc loc;     /* where the value starts */
	struct diag_loc key_loc; /* where its key is (= loc for list items) */
};

/* A value that may be a list: its items when it is one. */
struct set_list {
	struct set_value v;
	size_t n;
	const struct set_value *items; /* into calls.v's block */
};

/* gtplan.stack's keys (docs/design.md §2.9, sim/stack.h). */
struct set_stack {
	struct set_value preset;
	struct set_value rng_state_group, replica_group, refit_gather;
	struct set_value inference_layout_compare, batch_split;
	struct set_value transformer_engine, megatron_core_gtp_fixes;
	struct set_value sharded_replica_group, optimizer_ckpt_format;
	struct set_value megatron_lm_7162;
};

/* One gtplan.calls entry (sim/calls.h says what each key means); the
 * keys are read only when the entry is a map. */
struct set_call {
	struct set_value entry; /* the entry itself */
	struct set_value name, dispatch, program, dummy, moves_data;
	struct set_list sharded, replicated, output, rank0_only;
};

struct set_calls {
	struct set_value list;    /* gtplan.calls itself */
	size_t n_given;           /* its entries, when a list */
	size_t n;                 /* entries read: min(n_given, SET_CALLS_MAX) */
	struct set_call *v;       /* the n entries, then their list items */
	struct diag_loc unread;   /* where entry SET_CALLS_MAX starts */
	int nomem;                /* the entries could not be kept */
};

struct settings_sim {
	struct set_stack stack;
	struct set_calls calls;
	/* where the placement check's findings point */
	struct set_value rank_order;    /* gtplan.rank_order */
	struct set_value driver_layout; /* gtplan.driver_layout */
	struct set_value global_batch;  /* policy.train_global_batch_size */
};

/* Everything unset; owns nothing. */
void settings_sim_init(struct settings_sim *s);
/* Reads them from a resolved config (s is initialised first). Out of
 * memory leaves calls empty with calls.nomem set. */
void settings_sim_read(struct settings_sim *s, const struct cfg_node *root);
/* Frees the entries; s is unset again. */
void settings_sim_release(struct settings_sim *s);

#endif
