/*
 * reshard: can a checkpoint saved under one layout be loaded under another
 * (`gtplan ckpt SAVED LOADED`, issue #4, seed 004)?
 *
 * Both plans must be of the same model (GT730 names the first shape field
 * that differs). For every large weight of a layer (or, without a known
 * shape, a small example column- and row-parallel weight) the saved
 * main-replica pieces (ckpt_entry_of) are laid out in logical coordinates,
 * padding excluded, and their union must cover the logical tensor exactly
 * once; each loading rank's reads are the logical rows and columns of its
 * own piece under the loaded layout, and the saved pieces it intersects
 * are counted (GT732 when coverage fails). A change of driver layout (4d
 * vs 5d) is GT731; a change of TP, G, D or PP is the note GT733 (the
 * optimizer needs the fully_reshardable format). Keys are per global
 * layer, so a PP change moves whole keys between stages.
 */
#ifndef GTPLAN_RESHARD_H
#define GTPLAN_RESHARD_H

#include <stdio.h>

#include "cfg.h"
#include "ckpt.h"
#include "diag.h"
#include "model.h"
#include "plan.h"

#define RESHARD_MAX_WEIGHTS (MODEL_MAX_WEIGHTS > 2 ? MODEL_MAX_WEIGHTS : 2)

/* One weight kind's result. */
struct reshard_weight {
	char name[48];            /* "linear_qkv", or "example_column" */
	enum ckpt_kind kind;      /* CKPT_COLUMN or CKPT_ROW */
	long long rows, cols;     /* logical shape */
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
	int layout_change;        /* TP, G, D or PP differ */
	int reshardable;          /* covered, same model: exit 0 */
};

/* Checks the reshard from plan `ps` (config `rs`) to plan `pl` (config
 * `rl`); both need a rank grid. Reports GT730-GT733 and fills *out.
 * Returns 0, or -1 when out of memory. */
int reshard_check(const struct plan *ps, const struct cfg_node *rs,
		  const struct plan *pl, const struct cfg_node *rl,
		  struct reshard_report *out, struct diag_list *diags);

/* The short text report, one block per weight kind. */
void reshard_print(FILE *f, const struct plan *ps, const struct plan *pl,
		   const struct reshard_report *r);

#endif
