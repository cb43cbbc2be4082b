/*
 * rt_train_int: what runtime/rt_train.c (the layers) and runtime/rt_vocab.c
 * (the embedding and the head at the vocabulary's two ends) share, for no
 * other file: the TP mappings around a linear, the norm with the pending
 * residual add, and the ends' passes that rt_train.c's chunks call.
 */
#ifndef GTPLAN_RT_TRAIN_INT_H
#define GTPLAN_RT_TRAIN_INT_H

#include "rt_model.h"

/* Parameters and gradients by their place (rt_layer). */
#define P(m, off) ((m)->param + (off))
#define G(m, off) ((m)->grad + (off))

/* Before a column-parallel linear: local [Nl, h] all-gathered over TP
 * into full (SP; what names the collective) with full16 its bf16 copy in
 * bf16 runs; without SP nothing (full aliases local). */
int rt_tp_gather_in(struct rt_model *m, const char *what,
		    const float *local, float *full, uint16_t *full16);
/* After a row-parallel linear: full's partial sums all-reduced (no SP,
 * *out = full) or reduce-scattered into local (SP, *out = local). */
int rt_tp_reduce(struct rt_model *m, const char *what, float *full,
		 float *local, float **out);
/* A pre-norm with the pending residual add in its pass (pr set: x = pb +
 * pr written first), y's bf16 copy y16 in bf16 runs (rt_train.c). */
int rt_norm_in(struct rt_model *m, const float *pb, const float *pr,
	       float *x, long long g, float *y, float *rstd, uint16_t *y16);

/* runtime/rt_vocab.c: the embedding's lookup (layer 0's input), the head
 * (final norm of xL = pb + pr, output layer, cross-entropy statistics,
 * the token losses), and their backwards (the head's leaves dL/dxL in
 * m->a.dx; the embedding's scatters the table's gradient). */
int rt_embed_fwd(struct rt_model *m);
int rt_head_fwd(struct rt_model *m, const float *pb, const float *pr,
		double *loss_sum);
int rt_head_bwd(struct rt_model *m, float scale);
int rt_embed_bwd(struct rt_model *m);

#endif
