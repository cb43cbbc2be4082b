/*
 * rt_pp: gtplan-run's pipeline parallelism (see rt_model.h): the layer
 * split of a stage, the buffers a stage adds, and the train step's and
 * get_logprobs' micro-batches run in the schedule base/pp_schedule.h
 * builds (the simulator plays the same list, sim/program_rt_pp.c).
 */
#ifndef GTPLAN_RT_PP_H
#define GTPLAN_RT_PP_H

#include "rt_model.h"
#include "rt_plan.h"

/* Sets s's pipeline fields from the plan (s->layers becomes this stage's
 * layers) after the batch is known; RT_EPLAN with Megatron's rule code
 * when the layers do not split (GT600) or the interleaved schedule's
 * micro-batches are not a multiple of PP (GT633). */
int rt_pp_shape(struct rt_shape *s, const struct rt_plan *p);
/* The model index of this stage's local layer li. */
long long rt_pp_layer(const struct rt_shape *s, long long li);
/* This stage's local index of model layer l, or -1. */
long long rt_pp_local(const struct rt_shape *s, long long l);
/* The stage that holds model layer l. */
int rt_pp_owner(const struct rt_shape *s, long long l);

/* Slots 1 .. s.slots - 1 of the micro-batches' activations, tokens and
 * targets (slot 0 is the model's own buffers; rt_model_use_slot). */
int rt_pp_alloc_slots(struct rt_model *m);
void rt_pp_release_slots(struct rt_model *m);
/* The chunk output and received gradients (PP > 1; nothing otherwise). */
int rt_pp_alloc(struct rt_model *m);
void rt_pp_release(struct rt_model *m);

/* A train step's micro-batches in schedule order: forwards, backwards
 * (the loss scaled by `scale`), the activations and gradients between
 * stages; the last stage adds its token losses to *loss_sum, or with
 * loss_sum NULL leaves them on the device (rt_forward). Collective over
 * the pipeline. */
int rt_pp_micro_batches(struct rt_model *m, long long step, float scale,
			double *loss_sum);
/* get_logprobs' forward of micro-batch mb through the pipeline: every
 * chunk in order, activations passed on; the last stage leaves the token
 * losses in m->h_loss. */
int rt_pp_forward_only(struct rt_model *m, long long step, long long mb);

#endif
