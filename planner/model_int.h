/*
 * model_int: what the two halves of the model module share (model.c:
 * gtplan.model and parameter counts; model_catalog.c: the catalog). Not
 * for other modules.
 */
#ifndef GTPLAN_MODEL_INT_H
#define GTPLAN_MODEL_INT_H

#include <stddef.h>

#include "model.h"

/* The fields the data file (and gtplan.model) may set, by Megatron's
 * name. `required` ones make sizes known; a nullable one set to null in
 * gtplan.model goes back to its default. */
enum model_field_type { MF_INT, MF_BOOL, MF_TEXT, MF_REAL };


struct model_field {
	const char *key;
	size_t off;
	enum model_field_type type;
	int required;
	int nullable;
	long long min;
};

extern const struct model_field model_fields[];
extern const size_t model_n_fields;
/* The field named `key`, or NULL. */
const struct model_field *model_field_find(const char *key);

static inline long long *model_int_at(struct model_shape *m,
				      const struct model_field *f)
{
	return (long long *)(void *)((char *)m + f->off);
}

static inline int *model_bool_at(struct model_shape *m,
				 const struct model_field *f)
{
	return (int *)(void *)((char *)m + f->off);
}

static inline double *model_real_at(struct model_shape *m,
				    const struct model_field *f)
{
	return (double *)(void *)((char *)m + f->off);
}

static inline char *model_text_at(struct model_shape *m,
				  const struct model_field *f)
{
	return (char *)m + f->off;
}

/* Megatron's TransformerConfig defaults for what is left unset
 * (num_query_groups, kv_channels, and the MoE sizes of an MoE model). */
void model_fill_defaults(struct model_shape *m);
/* Finishes a catalog entry mapped from its config.json: no location,
 * shape_known / known (known: uniform layers, approximate == 0, with an
 * FFN size), Megatron's defaults for a known shape, else query groups =
 * heads. -1 when the parallel shape (layers, hidden, heads, vocabulary)
 * is incomplete. */
int model_catalog_shape(struct model_shape *s, int approximate);
/* data/models.yaml's text into out[0..*n) (at most max shapes, one per
 * name, sorted by name case-insensitively). 0, or -1 with
 * "data/models.yaml:LINE:COL: what" in err and *n = 0. */
int model_catalog_parse(const char *text, size_t len, struct model_shape *out,
			size_t max, size_t *n, char *err, size_t elen);
/* A local checkpoint path rather than a hub id. */
int model_is_local_path(const char *name);
/* Megatron's --moe-layer-freq text into out[0..layers) (0/1); 0, or -1
 * when malformed or of another length. */
int model_freq_parse(const char *s, long long layers, unsigned char *out);

/* ---- config.json (model_hf.c) ---------------------------------------- */

/* The config.json for the config: gtplan.model.hf_config (a file or its
 * folder), else policy.model_name as a folder, else the Hugging Face
 * cache's snapshot of the hub id `name`. Returns 1 and the file in path;
 * 0 when there is none; -1 when hf_config names a file that does not
 * exist (path: as written, *named: its node). *named is the hf_config
 * node whenever the config sets one. */
int model_hf_locate(const struct cfg_node *root, const char *name,
		    char *path, size_t len, const struct cfg_node **named);

struct model_hf_info {
	char model_type[48];  /* config.json's model_type ("" when absent) */
	int mapped;           /* a family gtplan maps (model_hf.c) */
	int approximate;      /* its layers are not uniform transformer ones */
	int text_config;      /* read from the "text_config" object */
};

/* The one mapping from config.json's fields to Megatron's (model_hf.c's
 * comment lists it), for a model's own config.json and the catalog's
 * entries alike: sets the fields the JSON object j gives over *m (origin
 * MODEL_FROM_HF) and fills *info. */
struct json_t;
void model_hf_map(const struct json_t *j, struct model_shape *m,
		  struct model_hf_info *info);
/* The config.json keys model_hf_map reads (and "architectures"),
 * NULL-terminated. */
extern const char *const model_hf_keys[];

/* model_hf_map over the config.json at path. Returns 0, or -1 with err set when it cannot be read or parsed (a
 * missing file, not JSON, over 1 MiB, not an object). */
int model_hf_read(const char *path, struct model_shape *m,
		  struct model_hf_info *info, char *err, size_t elen);

/* Locates and reads the config's config.json over *m (model_resolve's
 * step between the catalog and gtplan.model), reporting GT525 (read:
 * from where, what it does not say) or GT526 (named but unreadable).
 * Returns 0 when there is none, 1 when read, 2 when read and its sizes
 * are approximate, -1 on GT526. */
int model_hf_apply(const struct cfg_node *root, const char *name,
		   const struct cfg_node *name_node, struct model_shape *m,
		   struct diag_list *diags);

#endif
