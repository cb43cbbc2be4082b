/*
 * model: model shapes for the simulator's collective sizes, memory and
 * cost: a built-in catalog keyed by policy.model_name (Hugging Face names),
 * and `gtplan.model` with Megatron's field names, which overrides the
 * catalog field by field (or describes a model the catalog lacks).
 */
#ifndef GTPLAN_MODEL_H
#define GTPLAN_MODEL_H

#include "cfg.h"
#include "sim.h"

/* Fills *m for the config. An unknown model without a complete
 * gtplan.model is a GT524 warning and m->known = 0. Returns 0, or -1 on a
 * malformed gtplan.model (reported). */
int model_resolve(const struct cfg_node *root, struct model_shape *m,
		  struct diag_list *diags);

/* Catalog lookup by name (case-insensitive; an "org/" prefix is optional).
 * NULL when absent. */
const struct model_shape *model_catalog_find(const char *name);
size_t model_catalog_count(void);
const struct model_shape *model_catalog_at(size_t i);

/* Parameter counts (elements) of the full, unsharded model. */
long long model_layer_params(const struct model_shape *m);   /* one layer */
long long model_embedding_params(const struct model_shape *m);
long long model_total_params(const struct model_shape *m);

/* The large linear weights of one transformer layer, as Megatron names
 * them, with their logical [rows, cols] and how TP splits them. */
enum model_split { SPLIT_COLUMN, SPLIT_ROW, SPLIT_NONE };
struct model_weight {
	const char *name;      /* "linear_qkv", "linear_proj", "linear_fc1", "linear_fc2" */
	long long rows, cols;  /* out_features, in_features */
	enum model_split split;
};
/* Writes up to `max` weights of one (dense) layer; returns how many. */
size_t model_layer_weights(const struct model_shape *m,
			   struct model_weight *w, size_t max);

#endif
