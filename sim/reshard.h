/*
 * reshard: can a checkpoint saved under one layout be loaded under another
 * (`gtplan ckpt SAVED LOADED`; docs/design.md §2.6-2.7)?
 *
 * Both plans must be of the same model (GT730 names the first shape field
 * that differs). Every tensor kind of the checkpoint is checked: each
 * layer's large weights (column- and row-parallel GTP pieces), its
 * GTP-replicated norms, every expert's weights on the expert grid (EP
 * places whole experts, ETP and EG split each one; experts are stacked
 * along the rows in logical coordinates), the vocab-parallel embedding and
 * untied output layer (the padded vocabulary rows are outside logical
 * coordinates) and the final norm; without a known shape, a small example
 * column- and row-parallel weight. The saved main-replica pieces
 * (ckpt_entry_of and friends) are laid out in logical coordinates,
 * padding excluded, and their union must cover the logical tensor exactly
 * once; each loading rank's reads are the logical rows and columns of its
 * own pieces under the loaded layout, and the saved pieces they intersect
 * are counted. GT732 when coverage fails (a saved stack that elects no
 * writer or several for some elements). A change of driver layout (4d vs
 * 5d) is GT731. A layout change needs an optimizer format that survives
 * it (docs/design.md §2.7): fully_reshardable for any change,
 * dp_reshardable for a change of D alone; another format set in gtplan.stack.
 * optimizer_ckpt_format is GT734, an unset one the note GT733; a
 * fully_reshardable format the stack cannot write or read under GTP is
 * GT735. Keys are per global layer, so a PP change moves whole keys
 * between stages.
 *
 * Ownership: a struct reshard_report is the caller's value with no heap
 * inside (no release); reshard_check reads both plans and configs and
 * keeps nothing.
 */
#ifndef GTPLAN_RESHARD_H
#define GTPLAN_RESHARD_H

#include <stdio.h>

#include "cfg.h"
#include "ckpt.h"
#include "diag.h"
#include "model.h"
#include "plan.h"
#include "stack.h"

/* layer weights, their 2 norms, expert weights, embedding, output layer,
 * final norm */
#define RESHARD_MAX_WEIGHTS (2 * MODEL_MAX_WEIGHTS + 6)

/* One weight kind's result. */
struct reshard_weight {
	char name[48];            /* "linear_qkv", "experts.linear_fc1",
				     "embedding.word_embeddings", ... or
				     "example_column" */
	enum ckpt_kind kind;      /* CKPT_COLUMN, ROW, NORM or VOCAB */
	long long rows, cols;     /* logical shape (of one expert) */
	long long experts;        /* experts stacked along the rows (on the
				     expert grid); 0: a dense-grid tensor */
	long long saved_pieces;   /* distinct main pieces saved */
	long long loaded_pieces;  /* distinct pieces the loaded layout holds */
	long long max_reads;      /* most saved pieces one loading rank reads */
	long long max_reader;     /* a loading rank that reads max_reads */
	long long gaps, overlaps; /* logical elements held 0 / >1 times */
	int covered;              /* 1: exactly once everywhere */
};

struct reshard_report {
	int example;              /* 1: no known shape, example weights */
	size_t n;
	struct reshard_weight w[RESHARD_MAX_WEIGHTS];
	long long layers;         /* 0 when unknown */
	int model_mismatch;       /* GT730 reported */
	int layout_change;        /* TP, CP, G, D, PP or the expert grid
				     differ */
	enum stack_opt_format opt_format; /* the saved format (UNSET: not
					     said) */
	int opt_needed;           /* 0: none (no change), 1: dp_reshardable
				     or better (D alone changed), 2:
				     fully_reshardable */
	int opt_ok;               /* the optimizer state reshards (GT734 and
				     GT735 not reported) */
	int opt_assumed;          /* the format is not set and Megatron's
				     default, dp_reshardable, does not
				     survive the change (GT733) */
	char opt_why[256];        /* why the stack cannot use
				     fully_reshardable, or "" */
	int reshardable;          /* covered, same model, optimizer ok:
				     exit 0 */
	/* the checkpoint plans of both sides (ckpt_check; findings not
	 * reported here): keys, writers, bytes per rank */
	struct ckpt_summary saved, loaded;
};

/* Checks the reshard from plan `ps` (config `rs`) to plan `pl` (config
 * `rl`), both built by plan_build (their models are ps->model and
 * pl->model); both need a rank grid. Reports GT730-GT735 and fills *out.
 * Returns 0, or -1 when out of memory. */
int reshard_check(const struct plan *ps, const struct cfg_node *rs,
		  const struct plan *pl, const struct cfg_node *rl,
		  struct reshard_report *out, struct diag_list *diags);

#endif
