/*
 * rt_limits: the plans gtplan-run refuses before it allocates anything,
 * because their memory or work would not survive: a global batch past
 * RT_MAX_GLOBAL_BATCH (each step loops over its micro-batches), sizes
 * whose products leave every machine behind (RT_MAX_ELEMS, which also
 * keeps the runtime's size arithmetic in range), and, on --device cpu, a
 * rank that would need more memory than its share of the host
 * (rt_model_mem's exact bytes: the weights with their gradients and Adam
 * state, the gathered-weight buffers, one micro-batch's activations with
 * its vocab x tokens logits, the pipeline's extra micro-batch slots, and
 * the checkpoint's host copy); on --device cuda, a rank whose device
 * bytes (the same, but the host copy, plus RT_GPU_RESERVE) do not fit in
 * its share of the GPU's free memory. Every refusal is one message with
 * the sizes and the fix.
 */
#ifndef GTPLAN_RT_LIMITS_H
#define GTPLAN_RT_LIMITS_H

#include "rt_model.h"
#include "rt_opts.h"
#include "rt_plan.h"

/* Samples per step: far above Megatron's published global batches (a few
 * thousand sequences), low enough that a step's loop over micro-batches
 * and sample offsets stays bounded. */
#define RT_MAX_GLOBAL_BATCH (1LL << 20)
/* Elements the model's logical weights plus one micro-batch's
 * activations may reach: 2^50 (4 PiB as float32). Under it every product
 * of the runtime's sizes fits in 64 bits with room to spare. */
#define RT_MAX_ELEMS (1LL << 50)
/* The part of the host's memory (over its ranks) a rank may plan for: the
 * rest is for what rt_model_mem does not count, MPI's and OpenBLAS's
 * buffers, kernel scratch and the system (measured: a 1-rank run of 0.58
 * and 1.13 GiB by rt_model_mem peaked 75 and 89 MiB higher). */
#define RT_HOST_SHARE 0.9

/* Device memory a rank keeps free for what rt_model_mem does not count:
 * cuBLASLt's 32 MiB workspace (kernels/kern_gemm_lt.cu), the kernels'
 * scratch (kern_cuda_scratch) and NCCL's buffers of each communicator.
 * An allowance, not a measurement. */
#define RT_GPU_RESERVE (1LL << 30)

/* A rank's bytes by part: rt_model_mem's, plus, with pipeline stages,
 * the extra micro-batch slots (slots - 1 more of one micro-batch's
 * activations, an upper bound for the layers', the head's and the tokens'
 * tables rt_pp_alloc_slots adds) and the stage's send and receive buffers
 * (rt_pp_alloc). total = mm.total + pp. */
struct rt_need {
	struct rt_model_mem mm;
	long long pp, total;
};
void rt_limits_need(const struct rt_shape *s, const struct rt_plan *p,
		    struct rt_need *n);

/* Before rt_model_shape: the global batch (global_batch / micro_batch as
 * rt_model_shape takes them: 0 is the plan's) and the element bound,
 * computed in floating point from the plan's sizes. RT_EPLAN, said once. */
int rt_limits_plan(const struct rt_plan *p, long long global_batch,
		   long long micro_batch);

/* After rt_model_shape, before any allocation: on --device cpu, this
 * rank's bytes (rt_limits_need, plus 3 floats per parameter with --save or
 * --load) within --mem-budget, or RT_HOST_SHARE of the host's memory (its
 * cgroup's limit when lower) over the ranks on this host. Collective over the world
 * (every rank calls it): the lowest rank that needs too much says so;
 * every rank returns RT_EPLAN. Writes a note of rank 0's bytes. */
int rt_limits_memory(const struct rt_shape *s, const struct rt_plan *p,
		     const struct rt_opts *o);

/* On --device cuda, after cudaMemGetInfo and before any allocation: this
 * rank's device bytes (rt_limits_need plus RT_GPU_RESERVE) within its
 * share of GPU `dev` (named `name`): free_b bytes free over the `share`
 * ranks of this host that use it. Refuses (RT_EDEVICE, with every size in
 * the message) unless force, which notes the excess and goes on; else
 * notes the bytes. Per rank, not collective: the caller agrees. */
int rt_limits_gpu(const struct rt_shape *s, const struct rt_plan *p,
		  int force, int dev, const char *name, double free_b,
		  int share);

#endif
