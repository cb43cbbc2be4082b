/*
 * rt_device: where gtplan-run's math and collectives run: the checks
 * before any work, the GPU of each rank (--device cuda) and the choice of
 * its collectives (--comm).
 *
 * Ownership: a struct rt_device is the caller's value with no release;
 * the options and the plan are only read.
 */
#ifndef GTPLAN_RT_DEVICE_H
#define GTPLAN_RT_DEVICE_H

#include "rt_model.h"
#include "rt_opts.h"
#include "rt_plan.h"

/* --device cuda on this rank's host: its GPUs and the ranks sharing them
 * (set by rt_device_select_gpu; 0 until then). */
struct rt_device {
	int gpu_count, host_ranks;
};

/* What the plan and the options allow before any work starts: a plan with
 * errors needs --force (RT_EPLAN); --device cuda needs a build with CUDA
 * (RT_EDEVICE). Said once (rt_error_once): every rank sees the same. */
int rt_device_preflight(const struct rt_opts *o, const struct rt_plan *p);

/* Binds this rank to GPU local_rank % device_count, before kern_init, and
 * checks what the GPU must offer: the build's compute capability and,
 * unless force, the runtime's own bytes for shape s (rt_limits_gpu: every
 * buffer rt_model_init will allocate, and a reserve) within the free
 * memory this rank's share of the GPU has (RT_EDEVICE). Fills d. Builds
 * without CUDA refuse (RT_EDEVICE). */
int rt_device_select_gpu(struct rt_device *d, const struct rt_plan *p,
			 const struct rt_shape *s, int force);

/* --comm want (auto, nccl or mpi) on the GPUs of d: *nccl 1 for NCCL
 * where every rank of every host has a GPU of its own, else 0 (MPI with
 * host staging). Collective: every rank calls it (coll_mpi_agree).
 * RT_EDEVICE when nccl is wanted and cannot be had. */
int rt_device_pick_comm(const struct rt_device *d, const char *want,
			int *nccl);

#endif
