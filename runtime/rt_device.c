/*
 * rt_device: the checks before any work, the GPU of each rank and the
 * --comm choice (see rt_device.h).
 */
#include "rt_device.h"

#include <string.h>

#include "coll.h"
#include "rt_err.h"
#include "rt_limits.h"

/* What the plan and the options allow before any work starts. */
int rt_device_preflight(const struct rt_opts *o, const struct rt_plan *p)
{
	if (p->n_errors && !o->force)
		return rt_error_once(RT_EPLAN, "the plan has %d error%s (first: "
				     "%s); fix the config, or pass --force to "
				     "run it anyway", p->n_errors,
				     p->n_errors > 1 ? "s" : "", p->first_error);
#ifndef KERN_WITH_CUDA
	if (!strcmp(o->device, "cuda"))
		return rt_error_once(RT_EDEVICE, "--device cuda: this build of "
				     "gtplan-run has no CUDA path (make "
				     "build/gpu/gtplan-run builds one); run "
				     "with --device cpu");
#endif
	return 0;
}

#ifdef KERN_WITH_CUDA
#include <cuda_runtime.h>

/* This build's device code: sm_90 and compute_90 PTX (Makefile GENCODE). */
#define BUILD_CC_MAJOR 9

/* Binds this rank to GPU local_rank % device_count, before kern_init, and
 * checks what the GPU must offer: the build's compute capability and,
 * unless forced, the runtime's own bytes for shape s (rt_limits_gpu)
 * within the free memory this rank's share of the GPU has. */
int rt_device_select_gpu(struct rt_device *d, const struct rt_plan *p,
			 const struct rt_shape *s, int force)
{
	int local = 0, nlocal = 1, n = 0, dev, share, rc;
	struct cudaDeviceProp prop;
	size_t free_b = 0, total_b = 0;
	cudaError_t e;

	if ((rc = coll_local_rank(&local, &nlocal)))
		return rc;
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n < 1)
		return rt_error(RT_EDEVICE, "--device cuda: no CUDA device "
				"(%s)", e != cudaSuccess ? cudaGetErrorString(e)
				: "device count 0");
	dev = local % n;
	e = cudaSetDevice(dev);
	if (e != cudaSuccess)
		return rt_error(RT_EDEVICE, "--device cuda: cudaSetDevice(%d): "
				"%s", dev, cudaGetErrorString(e));
	d->gpu_count = n;
	d->host_ranks = nlocal;
	e = cudaGetDeviceProperties(&prop, dev);
	if (e != cudaSuccess)
		return rt_error(RT_EDEVICE, "--device cuda: GPU %d: %s", dev,
				cudaGetErrorString(e));
	if (prop.major < BUILD_CC_MAJOR)
		return rt_error(RT_EDEVICE, "GPU %d (%s) has compute capability "
				"%d.%d; this build carries code for %d.0 and "
				"newer only: rebuild with make build/gpu/gtplan-"
				"run GENCODE='-gencode arch=compute_%d%d,code="
				"sm_%d%d'", dev, prop.name, prop.major,
				prop.minor, BUILD_CC_MAJOR, prop.major,
				prop.minor, prop.major, prop.minor);
	e = cudaMemGetInfo(&free_b, &total_b);
	if (e != cudaSuccess)
		return rt_error(RT_EDEVICE, "--device cuda: GPU %d: %s", dev,
				cudaGetErrorString(e));
	/* ranks on this host that share GPU dev */
	share = nlocal / n + (dev < nlocal % n);
	return rt_limits_gpu(s, p, force, dev, prop.name, (double)free_b,
			     share);
}
#else
int rt_device_select_gpu(struct rt_device *d, const struct rt_plan *p,
			 const struct rt_shape *s, int force)
{
	(void)d;
	(void)p;
	(void)s;
	(void)force;
	return rt_error(RT_EDEVICE, "--device cuda: no CUDA path in this "
			"build");
}
#endif

/* --comm: NCCL where every rank of every host has a GPU of its own (all
 * ranks must agree: the NCCL set-up is collective), else MPI with host
 * staging. Sets *nccl. */
int rt_device_pick_comm(const struct rt_device *d, const char *want,
			int *nccl)
{
	int gpu_count = d->gpu_count, host_ranks = d->host_ranks;
	int own = host_ranks <= gpu_count;
	int all_own = coll_mpi_agree(own ? 0 : -1) == 0;
	int built = coll_nccl_library() != NULL;

	*nccl = 0;
	if (!strcmp(want, "mpi"))
		return 0;
	if (!strcmp(want, "nccl") && !built)
		return rt_error_once(RT_EDEVICE, "--comm nccl: this build has "
				     "no NCCL (make build/gpu/gtplan-run)");
	if (!strcmp(want, "nccl") && !all_own)
		return rt_error(RT_EDEVICE, "--comm nccl: %d ranks share %d "
				"GPU%s on this host, and NCCL refuses two ranks "
				"of one communicator on one GPU; start at most "
				"%d ranks per host, or use --comm mpi",
				host_ranks, gpu_count, gpu_count > 1 ? "s" : "",
				gpu_count);
	*nccl = built && all_own;
	return 0;
}
