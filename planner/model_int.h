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
/* A local checkpoint path rather than a hub id. */
int model_is_local_path(const char *name);
/* Megatron's --moe-layer-freq text into out[0..layers) (0/1); 0, or -1
 * when malformed or of another length. */
int model_freq_parse(const char *s, long long layers, unsigned char *out);

#endif
