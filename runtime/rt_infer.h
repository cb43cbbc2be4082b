/*
 * rt_infer: get_logprobs, the call NeMo-RL dispatches to compute the
 * per-token log-probabilities of a batch (gtplan-run --logprobs).
 *
 * The batch is a train step's global batch, split among the lanes as train
 * splits it and run in micro-batches of the micro-batch size; each
 * micro-batch goes through the train forward (rt_forward): the same GTP
 * all-gathers and TP all-reduces, then the vocab-parallel CE reductions over
 * tp (max, target logit, sum of exp). log p(target) = -(log(sum) + max -
 * target) per token. No backward, no token, loss or gradient all-reduce, no
 * barrier: the collective sequence is written out in rt_model.h.
 *
 * Ownership: borrows the model, the plan and the stream f (written, not
 * closed); frees its own buffers before it returns.
 */
#ifndef GTPLAN_RT_INFER_H
#define GTPLAN_RT_INFER_H

#include <stdio.h>

#include "rt_model.h"
#include "rt_plan.h"

/* Runs get_logprobs on the global batch of step `step` (from 1; samples
 * (step - 1) x global_batch ...), gathers every lane's values to world rank
 * 0 in global sample order and writes them there as JSON to f:
 *   {"first_sample": N, "format": "gtplan-logprobs/1",
 *    "logprobs": [[seq_len values] x global_batch], "samples": B,
 *    "seq_len": S, "step": step}
 * with %.9g values (fp32 exactly); value j of sample i is log p(token j + 1
 * of the sample | tokens 0..j). f may be NULL on other ranks. p is the
 * plan the model was built from (rank coordinates). Collective. */
int rt_infer_logprobs(struct rt_model *m, const struct rt_plan *p,
		      long long step, FILE *f);

#endif
