/*
 * coll_nccl: the collectives over NCCL, for --device cuda with one GPU per
 * rank (NCCL refuses two ranks of one communicator on one GPU;
 * coll_stage.c keeps MPI with host staging for that case).
 *
 * One world communicator is bootstrapped through MPI (rank 0's unique id,
 * MPI_Bcast), then every group kind of the plan is split from it with
 * ncclCommSplit(color = the group's index, key = the rank's place) and
 * checked against the plan, as the MPI communicators are. Collectives run
 * on the kernels' stream, so they are ordered with the math without extra
 * synchronisation, except the GTP group's: those run on a stream of their
 * own (each communicator keeps to one stream), entered after an event on
 * the kernels' stream and left through an event the kernels' stream waits
 * for, so that a prefetched all-gather (coll_all_gather_start) runs while
 * the kernels compute.
 *
 * No host synchronisation in a step but where the watchdog needs it: a
 * blocking collective returns once enqueued. An event of the pending
 * queue's slot it takes (coll_queue.h: x->ev[slot]) is recorded after it
 * on its stream (the kernels' stream waits for that event when the
 * collective ran on the GTP stream), and it joins the pending queue,
 * polled at every later collective call (coll_begin) and in every wait
 * (coll_watch_wait) with cudaEventQuery, never blocking; the host blocks
 * only on a full queue and where it waits anyway (coll_wait_last before a
 * host read of a result, coll_finish), through the queue's wait, which
 * answers the watchdog between polls and reports the oldest pending
 * collective past the timeout (ncclCommGetAsyncError reports NCCL's own
 * failures). The started ones (prefetch, coll_sendrecv_start) are pending
 * from their start; their waits make the kernels' stream wait for their
 * end, the host does not. The buffers are the device's, ordered on the
 * streams: nothing on the host must outlive the call. That is
 * GTPLAN_WATCH=queue; unset (or "sync") each collective is waited for by
 * polling (its stream, or the GTP group's event), the former behaviour,
 * which stays the default until the queue has run on two GPUs
 * (tests/runtime_parity_gpu.sh runs its NCCL matrix with the queue).
 *
 * Builds without GTPLAN_WITH_NCCL have the same functions, saying that the
 * build has no NCCL.
 */
#include "coll_int.h"

#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "rt_err.h"

#ifdef GTPLAN_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

struct coll_nccl {
	ncclComm_t world;
	ncclComm_t comm[RT_NKINDS]; /* NULL for groups of one */
	cudaStream_t stream;        /* the kernels' */
	cudaStream_t gtp;           /* the GTP group's */
	cudaEvent_t ready;          /* the kernels' work so far */
	cudaEvent_t done[COLL_SLOTS + 1]; /* a GTP collective's end: one per
					     prefetch slot, the last for the
					     synchronous ones */
	cudaStream_t p2p;           /* coll_sendrecv_start's */
	cudaEvent_t p2p_done;       /* the started exchange's end */
	cudaEvent_t *ev;            /* the pending queue's: one per slot */
	int nev;
};

#define RCHECK_NCCL(cmd)                  \
	do {                              \
		int rcn_ = (cmd);         \
		if (rcn_)                 \
			return rcn_;      \
	} while (0)

#define CUDACHECK_RT(cmd, what)                                            \
	do {                                                               \
		cudaError_t ce_ = (cmd);                                   \
		if (ce_ != cudaSuccess)                                    \
			return rt_error(RT_EDEVICE, "%s: %s: %s", what, #cmd, \
					cudaGetErrorString(ce_));          \
	} while (0)

static int nccl_fail(ncclResult_t r, const char *call, const char *file,
		     int line)
{
	return rt_error(RT_EMPI, "%s:%d: %s: %s", file, line, call,
			ncclGetErrorString(r));
}

#define NCCLCHECK(cmd)                                                     \
	do {                                                               \
		ncclResult_t nr_ = (cmd);                                  \
		if (nr_ != ncclSuccess)                                    \
			return nccl_fail(nr_, #cmd, __FILE__, __LINE__);   \
	} while (0)

const char *coll_nccl_library(void)
{
	static char v[32];
	int code = 0;

	if (ncclGetVersion(&code) != ncclSuccess)
		return "NCCL";
	/* 2.19 and later: major*10000 + minor*100 + patch */
	snprintf(v, sizeof(v), "NCCL %d.%d.%d", code / 10000,
		 code / 100 % 100, code % 100);
	return v;
}

static int check_comm(const struct coll *c, ncclComm_t comm, enum rt_kind k)
{
	int n = 0, r = 0;

	NCCLCHECK(ncclCommCount(comm, &n));
	NCCLCHECK(ncclCommUserRank(comm, &r));
	if (n != c->size[k] || r != c->rank[k])
		return rt_error(RT_EPLAN, "the NCCL %s communicator has %d "
				"ranks and puts me at %d; the plan says %d and "
				"%d", rt_kind_name(k), n, r, c->size[k],
				c->rank[k]);
	return 0;
}

static int queue_new(struct coll *c, struct coll_nccl *x);

int coll_nccl_new(struct coll *c, struct kern_ctx *dev)
{
	struct coll_nccl *x;
	ncclUniqueId id;
	int world = c->size[RT_K_WORLD], rc = 0, version = 0;

	if (!kern_stream(dev))
		return rt_error(RT_EDEVICE, "NCCL needs the CUDA device");
	/* ncclCommSplit arrived in NCCL 2.18 */
	NCCLCHECK(ncclGetVersion(&version));
	if (version < 21800)
		return rt_error(RT_EDEVICE, "%s is too old: the runtime splits "
				"its communicators with ncclCommSplit (NCCL 2.18 "
				"and later); install a newer NCCL or use --comm "
				"mpi", coll_nccl_library());
	x = calloc(1, sizeof(*x));
	if (!x)
		return rt_error(RT_ENOMEM, "out of memory");
	c->nccl = x;
	x->stream = (cudaStream_t)kern_stream(dev);
	CUDACHECK_RT(cudaStreamCreateWithFlags(&x->gtp, cudaStreamNonBlocking),
		     "NCCL set-up");
	CUDACHECK_RT(cudaEventCreateWithFlags(&x->ready,
					      cudaEventDisableTiming),
		     "NCCL set-up");
	for (int i = 0; i <= COLL_SLOTS; i++)
		CUDACHECK_RT(cudaEventCreateWithFlags(&x->done[i],
						      cudaEventDisableTiming),
			     "NCCL set-up");
	CUDACHECK_RT(cudaStreamCreateWithFlags(&x->p2p, cudaStreamNonBlocking),
		     "NCCL set-up");
	CUDACHECK_RT(cudaEventCreateWithFlags(&x->p2p_done,
					      cudaEventDisableTiming),
		     "NCCL set-up");
	RCHECK_NCCL(queue_new(c, x));
	memset(&id, 0, sizeof(id));
	if (c->me == 0)
		NCCLCHECK(ncclGetUniqueId(&id));
	MPICHECK(MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
	NCCLCHECK(ncclCommInitRank(&x->world, world, id, c->me));
	for (int k = 0; k < RT_NKINDS && !rc; k++) {
		/* every group of a kind has the same size: all ranks split,
		 * or none does */
		if (k == RT_K_EMB && c->size[RT_K_PP] > 1) {
			/* the pipeline's ends split, its middle stages
			 * (groups of one) take no part */
			NCCLCHECK(ncclCommSplit(x->world, c->size[k] > 1 ?
						(int)c->index[k] :
						NCCL_SPLIT_NOCOLOR,
						c->rank[k], &x->comm[k], NULL));
			if (c->size[k] > 1)
				rc = check_comm(c, x->comm[k],
						(enum rt_kind)k);
			continue;
		}
		if (c->size[k] == 1)
			continue;
		if (k == RT_K_WORLD) {
			x->comm[k] = x->world;
		} else {
			NCCLCHECK(ncclCommSplit(x->world, (int)c->index[k],
						c->rank[k], &x->comm[k],
						NULL));
		}
		rc = check_comm(c, x->comm[k], (enum rt_kind)k);
	}
	return rc;
}

void coll_nccl_free(struct coll *c)
{
	struct coll_nccl *x = c->nccl;

	if (!x)
		return;
	/* the queue polls these events: it goes first, its entries dropped */
	coll_queue_release(&c->q);
	for (int k = 0; k < RT_NKINDS; k++)
		if (x->comm[k] && x->comm[k] != x->world)
			ncclCommDestroy(x->comm[k]);
	if (x->world)
		ncclCommDestroy(x->world);
	for (int i = 0; i <= COLL_SLOTS; i++)
		if (x->done[i])
			cudaEventDestroy(x->done[i]);
	if (x->ready)
		cudaEventDestroy(x->ready);
	if (x->p2p_done)
		cudaEventDestroy(x->p2p_done);
	for (int i = 0; i < x->nev; i++)
		if (x->ev[i])
			cudaEventDestroy(x->ev[i]);
	free(x->ev);
	if (x->p2p)
		cudaStreamDestroy(x->p2p);
	if (x->gtp)
		cudaStreamDestroy(x->gtp);
	free(x);
	c->nccl = NULL;
}

/* The stream group kind k's collectives run on. */
static cudaStream_t stream_of_kind(const struct coll_nccl *x, enum rt_kind k)
{
	return k == RT_K_GTP ? x->gtp : x->stream;
}

/* Before a GTP collective: its stream waits for the kernels' work so far
 * (the buffers it reads and overwrites). */
static int enter_gtp(struct coll_nccl *x)
{
	CUDACHECK_RT(cudaEventRecord(x->ready, x->stream), "GTP stream");
	CUDACHECK_RT(cudaStreamWaitEvent(x->gtp, x->ready, 0), "GTP stream");
	return 0;
}

/* After it: event `slot` marks its end (the kernels' stream is made to
 * wait for it when the collective is waited for, not before: a prefetched
 * gather must not hold up the kernels enqueued meanwhile). */
static int leave_gtp(struct coll_nccl *x, int slot)
{
	CUDACHECK_RT(cudaEventRecord(x->done[slot], x->gtp), "GTP stream");
	return 0;
}

/* One poll of collective d given its stream's or event's query e: done,
 * still running, or failed (CUDA's error, or NCCL's own asynchronous
 * one, which ends the wait). */
static int poll_query(struct coll_nccl *x, const struct call_desc *d,
		      cudaError_t e, int *done)
{
	ncclResult_t async = ncclSuccess;

	if (e == cudaSuccess) {
		*done = 1;
		return 0;
	}
	if (e != cudaErrorNotReady)
		return rt_error(RT_EDEVICE, "waiting for the %s of %s over %s: "
				"%s", d->coll, d->what, rt_kind_name(d->k),
				cudaGetErrorString(e));
	if (ncclCommGetAsyncError(x->comm[d->k], &async) == ncclSuccess &&
	    async != ncclSuccess && async != ncclInProgress)
		return nccl_fail(async, d->coll, __FILE__, __LINE__);
	return 0;
}

/* The pending queue's poll of the collective in slot `slot`: its event,
 * and NCCL's asynchronous error (poll_query). */
static int poll_slot(void *arg, const struct coll_issued *is, int slot,
		     int *done)
{
	struct coll *c = arg;

	return poll_query(c->nccl, &is->d, cudaEventQuery(c->nccl->ev[slot]),
			  done);
}

/* The pending queue (coll_queue.h) of the depth GTPLAN_WATCH asks for,
 * with an event per slot; "sync" leaves it out. */
static int queue_new(struct coll *c, struct coll_nccl *x)
{
	struct coll_queue_ops ops;
	int depth, rc;

	if ((rc = coll_queue_parse(getenv("GTPLAN_WATCH"), &depth)))
		return rc;
	if (!depth)
		return 0;
	x->ev = calloc((size_t)depth, sizeof(*x->ev));
	if (!x->ev)
		return rt_error(RT_ENOMEM, "out of memory");
	x->nev = depth;
	for (int i = 0; i < depth; i++)
		CUDACHECK_RT(cudaEventCreateWithFlags(&x->ev[i],
						      cudaEventDisableTiming),
			     "NCCL set-up");
	coll_watch_queue_ops(c, &ops);
	ops.poll = poll_slot;
	return coll_queue_init(&c->q, depth, c->timeout_s, &ops);
}

/* coll_watch_wait's poll of collective d: its stream, or for the GTP
 * group's the event of slot *arg. */
static int poll_done(struct coll *c, const struct call_desc *d, void *arg,
		     int *done)
{
	struct coll_nccl *x = c->nccl;
	int slot = *(const int *)arg;

	return poll_query(x, d, d->k == RT_K_GTP ?
			  cudaEventQuery(x->done[slot]) :
			  cudaStreamQuery(x->stream), done);
}

/* Waits for collective d (its stream, or event `slot` for the GTP
 * group's), answering the watchdog; past the timeout the watchdog
 * reports. */
static int wait_done(struct coll *c, const struct call_desc *d, int slot)
{
	struct coll_nccl *x = c->nccl;
	int rc = coll_watch_wait(c, d, poll_done, &slot);

	if (!rc && d->k == RT_K_GTP)
		CUDACHECK_RT(cudaStreamWaitEvent(x->stream, x->done[slot], 0),
			     "GTP stream");
	return rc;
}

static int wait_stream(struct coll *c, const struct call_desc *d)
{
	return wait_done(c, d, COLL_SLOTS);
}

/* Collective d was enqueued on stream st (the kernels', the GTP group's
 * or the point-to-point one): the event of the queue slot it takes marks
 * its end, and it joins the pending collectives (coll_queue.h); the host
 * goes on. join: the kernels' stream waits for that event (a blocking
 * collective on another stream: the kernels read its result next). */
static int enqueue(struct coll *c, const struct call_desc *d,
		   cudaStream_t st, int join)
{
	struct coll_nccl *x = c->nccl;
	struct coll_issued is;
	int slot, rc;

	coll_issued_of(c, d, &is);
	if ((rc = coll_queue_room(&c->q, &slot)))
		return rc;
	CUDACHECK_RT(cudaEventRecord(x->ev[slot], st), "pending collective");
	if (join)
		CUDACHECK_RT(cudaStreamWaitEvent(x->stream, x->ev[slot], 0),
			     "pending collective");
	coll_queue_push(&c->q, &is);
	return 0;
}

/* The end of a blocking collective d enqueued on st: queued, or with
 * GTPLAN_WATCH=sync waited for at once as before the queue (the stream
 * polled, or the GTP group's event COLL_SLOTS, which the kernels' stream
 * then waits for). */
static int finish(struct coll *c, const struct call_desc *d, cudaStream_t st)
{
	struct coll_nccl *x = c->nccl;

	if (c->q.cap)
		return enqueue(c, d, st, st != x->stream);
	if (st == x->gtp)
		RCHECK_NCCL(leave_gtp(x, COLL_SLOTS));
	return wait_stream(c, d);
}

/* The all-gather of d on its kind's stream (the GTP group's entered
 * after the kernels' work so far). */
static int all_gather_on(struct coll *c, const struct call_desc *d,
			 const void *send, void *recv, cudaStream_t st)
{
	struct coll_nccl *x = c->nccl;

	if (d->k == RT_K_GTP)
		RCHECK_NCCL(enter_gtp(x));
	NCCLCHECK(ncclAllGather(send, recv, (size_t)d->count,
				d->elem == 2 ? ncclBfloat16 : ncclFloat,
				x->comm[d->k], st));
	return 0;
}

/* A prefetch: its end is event `slot` (GTP) and, with the queue, it is
 * pending from now on, so that its deadline runs from its issue. */
int coll_nccl_all_gather_start(struct coll *c, const struct call_desc *d,
			       const void *send, void *recv, int slot)
{
	struct coll_nccl *x = c->nccl;
	cudaStream_t st = stream_of_kind(x, d->k);

	RCHECK_NCCL(all_gather_on(c, d, send, recv, st));
	if (d->k == RT_K_GTP)
		RCHECK_NCCL(leave_gtp(x, slot));
	return c->q.cap ? enqueue(c, d, st, 0) : 0;
}

/* With the queue the host does not wait: the kernels' stream does (for
 * the GTP group's event; another kind's gather ran on the kernels' own
 * stream), and the queue watches the gather since its start. */
int coll_nccl_wait(struct coll *c, const struct call_desc *d, int slot)
{
	struct coll_nccl *x = c->nccl;

	if (!c->q.cap)
		return wait_done(c, d, slot);
	if (d->k == RT_K_GTP)
		CUDACHECK_RT(cudaStreamWaitEvent(x->stream, x->done[slot], 0),
			     "GTP stream");
	return 0;
}

int coll_nccl_all_gather(struct coll *c, const struct call_desc *d,
			 const void *send, void *recv)
{
	cudaStream_t st = stream_of_kind(c->nccl, d->k);

	RCHECK_NCCL(all_gather_on(c, d, send, recv, st));
	return finish(c, d, st);
}

int coll_nccl_reduce_scatter(struct coll *c, const struct call_desc *d,
			     const float *send, float *recv)
{
	struct coll_nccl *x = c->nccl;
	cudaStream_t st = stream_of_kind(x, d->k);

	if (d->k == RT_K_GTP)
		RCHECK_NCCL(enter_gtp(x));
	NCCLCHECK(ncclReduceScatter(send, recv, (size_t)d->count, ncclFloat,
				    ncclSum, x->comm[d->k], st));
	return finish(c, d, st);
}

int coll_nccl_all_reduce(struct coll *c, const struct call_desc *d,
			 float *buf)
{
	struct coll_nccl *x = c->nccl;
	cudaStream_t st = stream_of_kind(x, d->k);

	if (d->k == RT_K_GTP)
		RCHECK_NCCL(enter_gtp(x));
	NCCLCHECK(ncclAllReduce(buf, buf, (size_t)d->count, ncclFloat,
				d->op == COLL_MAX ? ncclMax : ncclSum,
				x->comm[d->k], st));
	return finish(c, d, st);
}

/* NCCL has no gather: the root receives every member's block, in group
 * order, while each member sends its own (one NCCL group call). */
int coll_nccl_gather(struct coll *c, const struct call_desc *d,
		     const float *send, float *recv, int root)
{
	struct coll_nccl *x = c->nccl;
	size_t n = (size_t)d->count;
	int me = c->rank[d->k];

	NCCLCHECK(ncclGroupStart());
	if (me == root) {
		for (int i = 0; i < c->size[d->k]; i++) {
			if (i == me)
				continue;
			NCCLCHECK(ncclRecv(recv + (size_t)i * n, n, ncclFloat,
					   i, x->comm[d->k], x->stream));
		}
	} else {
		NCCLCHECK(ncclSend(send, n, ncclFloat, root, x->comm[d->k],
				   x->stream));
	}
	NCCLCHECK(ncclGroupEnd());
	if (me == root && recv + (size_t)me * n != send &&
	    cudaMemcpyAsync(recv + (size_t)me * n, send, n * sizeof(float),
			    cudaMemcpyDeviceToDevice, x->stream) != cudaSuccess)
		return rt_error(RT_EDEVICE, "gather of %s: device copy failed",
				d->what);
	return finish(c, d, x->stream);
}

/* Both directions in one NCCL group on the kernels' stream (ncclSend
 * and ncclRecv, as Megatron's batch_isend_irecv issues them). */
int coll_nccl_sendrecv(struct coll *c, const struct call_desc *d, int to,
		       const float *send, long long send_count, int from,
		       float *recv, long long recv_count)
{
	struct coll_nccl *x = c->nccl;

	NCCLCHECK(ncclGroupStart());
	if (to >= 0)
		NCCLCHECK(ncclSend(send, (size_t)send_count, ncclFloat, to,
				   x->comm[d->k], x->stream));
	if (from >= 0)
		NCCLCHECK(ncclRecv(recv, (size_t)recv_count, ncclFloat, from,
				   x->comm[d->k], x->stream));
	NCCLCHECK(ncclGroupEnd());
	return finish(c, d, x->stream);
}

/* coll_sendrecv_start: the exchange on a stream of its own, entered after
 * the kernels' work so far (the buffers it reads) and left through
 * p2p_done, which the kernels' stream waits for only when the exchange is
 * waited for: the attention of the block at hand computes while the next
 * one travels (TE's AttnFuncWithCPAndKVP2P overlaps them the same way).
 * With the queue it is pending from its start. */
int coll_nccl_sendrecv_start(struct coll *c, const struct call_desc *d,
			     int to, const float *send, long long send_count,
			     int from, float *recv, long long recv_count)
{
	struct coll_nccl *x = c->nccl;

	CUDACHECK_RT(cudaEventRecord(x->ready, x->stream), "send-recv");
	CUDACHECK_RT(cudaStreamWaitEvent(x->p2p, x->ready, 0), "send-recv");
	NCCLCHECK(ncclGroupStart());
	if (to >= 0)
		NCCLCHECK(ncclSend(send, (size_t)send_count, ncclFloat, to,
				   x->comm[d->k], x->p2p));
	if (from >= 0)
		NCCLCHECK(ncclRecv(recv, (size_t)recv_count, ncclFloat, from,
				   x->comm[d->k], x->p2p));
	NCCLCHECK(ncclGroupEnd());
	CUDACHECK_RT(cudaEventRecord(x->p2p_done, x->p2p), "send-recv");
	return c->q.cap ? enqueue(c, d, x->p2p, 0) : 0;
}

/* coll_watch_wait's poll of the started exchange's end event. */
static int poll_p2p(struct coll *c, const struct call_desc *d, void *arg,
		    int *done)
{
	(void)arg;
	return poll_query(c->nccl, d, cudaEventQuery(c->nccl->p2p_done), done);
}

/* The kernels' stream waits for the exchange's end; without the queue
 * the host first waits for it under the watchdog, as before. */
int coll_nccl_sendrecv_wait(struct coll *c, const struct call_desc *d)
{
	struct coll_nccl *x = c->nccl;
	int rc = c->q.cap ? 0 : coll_watch_wait(c, d, poll_p2p, NULL);

	if (!rc)
		CUDACHECK_RT(cudaStreamWaitEvent(x->stream, x->p2p_done, 0),
			     "send-recv");
	return rc;
}

int coll_nccl_plain(struct coll *c, enum rt_kind k, int reduce_scatter,
		    long long count, const float *send, float *recv,
		    int iters, int sync_each, double *secs)
{
	struct coll_nccl *x = c->nccl;
	double t0;

	cudaStream_t st = stream_of_kind(x, k);

	if (cudaStreamSynchronize(x->stream) != cudaSuccess ||
	    cudaStreamSynchronize(st) != cudaSuccess)
		return rt_error(RT_EDEVICE, "bench: stream synchronisation "
				"failed");
	t0 = coll_now();
	for (int i = 0; i < iters; i++) {
		if (reduce_scatter)
			NCCLCHECK(ncclReduceScatter(send, recv, (size_t)count,
						    ncclFloat, ncclSum,
						    x->comm[k], st));
		else
			NCCLCHECK(ncclAllGather(send, recv, (size_t)count,
						ncclFloat, x->comm[k], st));
		if ((sync_each || i == iters - 1) &&
		    cudaStreamSynchronize(st) != cudaSuccess)
			return rt_error(RT_EDEVICE, "bench: stream "
					"synchronisation failed");
	}
	*secs = coll_now() - t0;
	return 0;
}

#else /* !GTPLAN_WITH_NCCL */

static int no_nccl(void)
{
	return rt_error(RT_EDEVICE, "this build of gtplan-run has no NCCL "
			"(make build/gpu/gtplan-run builds one)");
}

const char *coll_nccl_library(void)
{
	return NULL;
}

int coll_nccl_new(struct coll *c, struct kern_ctx *dev)
{
	(void)c;
	(void)dev;
	return no_nccl();
}

void coll_nccl_free(struct coll *c)
{
	(void)c;
}

int coll_nccl_all_gather(struct coll *c, const struct call_desc *d,
			 const void *send, void *recv)
{
	(void)c, (void)d, (void)send, (void)recv;
	return no_nccl();
}

int coll_nccl_reduce_scatter(struct coll *c, const struct call_desc *d,
			     const float *send, float *recv)
{
	(void)c, (void)d, (void)send, (void)recv;
	return no_nccl();
}

int coll_nccl_all_reduce(struct coll *c, const struct call_desc *d,
			 float *buf)
{
	(void)c, (void)d, (void)buf;
	return no_nccl();
}

int coll_nccl_gather(struct coll *c, const struct call_desc *d,
		     const float *send, float *recv, int root)
{
	(void)c, (void)d, (void)send, (void)recv, (void)root;
	return no_nccl();
}

int coll_nccl_plain(struct coll *c, enum rt_kind k, int reduce_scatter,
		    long long count, const float *send, float *recv,
		    int iters, int sync_each, double *secs)
{
	(void)c, (void)k, (void)reduce_scatter, (void)count, (void)send;
	(void)recv, (void)iters, (void)sync_each, (void)secs;
	return no_nccl();
}

int coll_nccl_all_gather_start(struct coll *c, const struct call_desc *d,
			       const void *send, void *recv, int slot)
{
	(void)c, (void)d, (void)send, (void)recv, (void)slot;
	return no_nccl();
}

int coll_nccl_wait(struct coll *c, const struct call_desc *d, int slot)
{
	(void)c, (void)d, (void)slot;
	return no_nccl();
}

int coll_nccl_sendrecv(struct coll *c, const struct call_desc *d, int to,
		       const float *send, long long send_count, int from,
		       float *recv, long long recv_count)
{
	(void)c, (void)d, (void)to, (void)send, (void)send_count;
	(void)from, (void)recv, (void)recv_count;
	return no_nccl();
}

int coll_nccl_sendrecv_start(struct coll *c, const struct call_desc *d,
			     int to, const float *send, long long send_count,
			     int from, float *recv, long long recv_count)
{
	(void)c, (void)d, (void)to, (void)send, (void)send_count;
	(void)from, (void)recv, (void)recv_count;
	return no_nccl();
}

int coll_nccl_sendrecv_wait(struct coll *c, const struct call_desc *d)
{
	(void)c, (void)d;
	return no_nccl();
}
#endif
