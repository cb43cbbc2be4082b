/*
 * coll: MPI for gtplan-run: start-up, one communicator per group kind of the
 * plan, and the collectives the model issues, recorded and timed.
 *
 * MPI stays inside this module: no MPI type or error code passes its
 * boundary (MPICHECK, coll_int.h, turns an MPI error into RT_EMPI with
 * the call, file and line). Every collective takes the group kind it runs over;
 * the communicator is the caller's group of that kind in the plan, built
 * with MPI_Comm_split(color = the group's index, key = the rank's place)
 * and checked against the plan's member list.
 *
 * Semantics hold for every group size; a group of one rank issues nothing
 * (copies stand in for the data movement) and is not recorded, as NCCL
 * programs skip one-rank groups. Counts are elements as NCCL counts them:
 * all-gather and gather take the count each rank sends, reduce-scatter the
 * count each rank receives, all-reduce the buffer's.
 *
 * Record (--record): one JSON line per collective issued, keys sorted:
 * bytes, call, coll ("all-gather", "reduce-scatter", "all-reduce", "gather",
 * "barrier", and "send", "recv" for point-to-point), count, dtype, group
 * (the kind), group_index, op ("sum", "max" or null), peer (point-to-point
 * only: the other member's place in the group), rank, seq (per rank, from
 * 0), step, what (a label).
 * With --timeout each line is flushed before its collective is issued, so
 * the record of a stopped run ends with the collective each rank waits in
 * (on the NCCL path, with the last one it issued: the report names the
 * pending one it waits for).
 *
 * Timeout (--timeout S > 0): each collective is issued non-blocking and
 * polled; one that has not completed after S seconds is reported (rank,
 * call, step, collective number, kind, group) with where each member of
 * its group is (for a send or receive: its peer, which has arrived when
 * it has issued as many point-to-point lines with this rank) (coll_watch.c: arrived, waiting elsewhere, computing, never
 * called, finished, or silent) and returns RT_ETIMEOUT; the caller then
 * aborts the job (coll_mpi_abort).
 *
 * On the NCCL path a collective returns once enqueued on the device and
 * stays pending until a later call sees it complete (coll_queue.h): the
 * host blocks only on a full queue, in coll_wait_last (before it reads a
 * result on the host) and at coll_finish, answering the watchdog as it
 * waits; the timeout applies to the oldest pending collective from the
 * moment it could have started (its issue, or its predecessor's seen
 * completion), and the report names it. The environment's GTPLAN_WATCH
 * picks the behaviour: "queue" (COLL_QUEUE_DEPTH pending), "queue:N", or
 * unset or "sync" (each collective waited for at once: the default until
 * the queue has run on two GPUs).
 * The MPI paths (host buffers, host staging) wait for each collective.
 *
 * Ownership: coll_new hands over a struct coll that coll_free frees
 * (communicators, record file and staging buffers); the plan and the
 * buffers passed to collectives stay the caller's.
 */
#ifndef GTPLAN_COLL_H
#define GTPLAN_COLL_H

#include <stdint.h>

#include "rt_plan.h"

enum coll_op { COLL_SUM, COLL_MAX };

struct coll;

struct coll_opts {
	double timeout_s;        /* <= 0: wait forever */
	const char *record_path; /* NULL: no record; "{rank}" is replaced by
				    the rank, else ".<rank>" is appended */
};

/* MPI start-up with errors returned, not fatal. Sets *rank and *size. */
int coll_mpi_init(int *argc, char ***argv, int *rank, int *size);
/* Every rank passes its status; all get the lowest (0 when all are 0), so
 * that the ranks stop together when one of them failed. */
int coll_mpi_agree(int status);
/* buf (bytes long on every rank) = world rank 0's buf. */
int coll_mpi_bcast(void *buf, long long bytes);
void coll_mpi_finalize(void);
/* Ends every rank of the job (after a failure only some ranks saw). */
void coll_mpi_abort(int exit_code);
/* MPI's library version, one line. */
const char *coll_mpi_version(void);

/* Builds the communicators of every kind in p (p->me is this rank) and
 * opens the record. Returns 0 or a negative RT_E* code. */
int coll_new(struct coll **out, const struct rt_plan *p,
	     const struct coll_opts *o);
void coll_free(struct coll *c);

/* The call and step the next collectives belong to (records, reports).
 * `call` must stay valid until the next coll_set_call. */
void coll_set_call(struct coll *c, const char *call, long long step);

/* The end of the run: every rank calls one of these last; it returns when
 * all have. coll_idle() is for a rank the driver does not call: it waits
 * from the start, and the watchdog tells peers that wait for it `why`. */
int coll_finish(struct coll *c);
int coll_idle(struct coll *c, const char *why);

/* Waits, answering the watchdog (and stopped by it past --timeout), until
 * the last collective this rank issued has completed on the device, and
 * so every one before it. On the NCCL path a collective returns once
 * enqueued (coll_queue.h): call this before the host reads a result of a
 * collective (a reduced loss, a gathered tensor downloaded) or otherwise
 * blocks on the device, so that a collective that never completes is
 * reported, not waited for in a device synchronisation. Elsewhere
 * collectives have completed on return and this returns 0 at once. */
int coll_wait_last(struct coll *c);

/* This rank's place in its group of kind k. */
int coll_rank(const struct coll *c, enum rt_kind k);

/* recv = the members' `send` blocks of `count` floats, in group order. */
int coll_all_gather(struct coll *c, enum rt_kind k, const char *what,
		    const float *send, float *recv, long long count);
/* The same for bf16 words (the GTP all-gather of bf16 weights), recorded
 * with dtype "bf16". */
int coll_all_gather_bf16(struct coll *c, enum rt_kind k, const char *what,
			 const uint16_t *send, uint16_t *recv,
			 long long count);
/* Prefetch: starts the all-gather of `count` elements per member (elem 4:
 * fp32, 2: bf16) into recv and returns; coll_all_gather_wait(c, slot)
 * finishes it, and recv may be read only after that (send must stay as it
 * is until then). slot (0 or 1) names it: one in flight per slot. It is
 * recorded when it starts, so the record keeps the order of issue. On the
 * NCCL path the GTP group's collectives run on a stream of their own, so
 * a started gather proceeds while the kernels compute. */
int coll_all_gather_start(struct coll *c, int slot, enum rt_kind k,
			  const char *what, const void *send, void *recv,
			  long long count, int elem);
int coll_all_gather_wait(struct coll *c, int slot);
/* recv = block `rank` of the sum over members of send (n x count). */
int coll_reduce_scatter(struct coll *c, enum rt_kind k, const char *what,
			const float *send, float *recv, long long count);
/* buf = op over members of buf, in place. */
int coll_all_reduce(struct coll *c, enum rt_kind k, const char *what,
		    float *buf, long long count, enum coll_op op);
int coll_all_reduce_d(struct coll *c, enum rt_kind k, const char *what,
		      double *buf, long long count, enum coll_op op);
/* recv (on the member at place root only) = the members' send blocks. */
int coll_gather(struct coll *c, enum rt_kind k, const char *what,
		const float *send, float *recv, long long count, int root);
/* The same for host integers (never staged): recv (root only) = the
 * members' `count` long longs, in group order. */
int coll_gather_i64(struct coll *c, enum rt_kind k, const char *what,
		    const long long *send, long long *recv, long long count,
		    int root);
int coll_barrier(struct coll *c, enum rt_kind k, const char *what);
/* Point-to-point over this rank's group of kind k, both directions in
 * flight together (Megatron's batch_isend_irecv; on NCCL ncclSend and
 * ncclRecv in one group call): sends send_count floats of send to the
 * member at place `to` and receives recv_count floats into recv from the
 * member at place `from`; -1 for to or from leaves that direction out.
 * Returns when both have completed. Recorded as one line per direction,
 * the send first (coll "send" or "recv", peer = to or from). Messages
 * between two members match in the order they are issued, so peers must
 * issue theirs in the same order. When both directions face one peer (or
 * there is one direction), the two calls must mirror each other (what one
 * sends the other receives, as many elements): the pair checks that
 * first, with two small unrecorded messages, and a call that does not
 * pair returns RT_EPLAN naming both sides, moving nothing. A group of one has no peer. Device
 * pointers as the other float collectives (staging, NCCL). */
int coll_sendrecv(struct coll *c, enum rt_kind k, const char *what, int to,
		  const float *send, long long send_count, int from,
		  float *recv, long long recv_count);
/* The same with a channel per direction (0 .. COLL_P2P_CHANNELS; plain
 * coll_sendrecv is channel 0 both ways): a message matches only a receive
 * of its own channel, and the pair check wants what one side sends on a
 * channel to be what the other receives on it (the pipeline: activations
 * on one channel, gradients on another, rt_pp.c). */
#define COLL_P2P_CHANNELS 7
int coll_sendrecv_ch(struct coll *c, enum rt_kind k, const char *what,
		     int to, const float *send, long long send_count,
		     int send_ch, int from, float *recv, long long recv_count,
		     int recv_ch);
/* The same started: returns once both directions are posted (recorded,
 * and paired where coll_sendrecv pairs them), on the NCCL path enqueued
 * on a stream of their own, so that they travel while the kernels compute
 * (a context-parallel ring computes one block while the next one
 * travels); coll_sendrecv_wait() finishes them, and only then may recv be
 * read or send be changed. One started exchange at a time; its wait
 * answers the watchdog like coll_sendrecv's. */
int coll_sendrecv_start(struct coll *c, enum rt_kind k, const char *what,
			int to, const float *send, long long send_count,
			int from, float *recv, long long recv_count);
int coll_sendrecv_wait(struct coll *c);

/* --device cuda with MPI host staging: after this, the float collectives
 * above take device pointers of dev (kern_download to a host buffer, the
 * MPI collective, kern_upload); a group of one copies on the device. The
 * fp64 all-reduce and the barrier stay on the host. dev must outlive c. */
struct kern_ctx;
void coll_set_staging(struct coll *c, struct kern_ctx *dev);
/* --device cuda with one GPU per rank: the float collectives above run
 * over NCCL on dev's stream (device pointers), one NCCL communicator per
 * group kind split from a world communicator bootstrapped through MPI;
 * the fp64 all-reduce and the barrier stay on MPI. Collective over the
 * world. RT_EDEVICE in a build without NCCL. */
int coll_use_nccl(struct coll *c, struct kern_ctx *dev);
/* "NCCL 2.28.9", or NULL in a build without NCCL. */
const char *coll_nccl_library(void);
/* --bench-comm: `iters` all-gathers (reduce_scatter 0) or reduce-scatters
 * (1) of `count` elements per rank over this rank's group of kind k, on
 * the NCCL path, timed three ways (seconds per collective): through this
 * module (recorded, waited for and watched as the runtime's own are), as
 * plain NCCL calls each followed by a stream synchronisation, and as plain
 * NCCL calls enqueued back to back with one synchronisation at the end (as
 * nccl-tests times them). Buffers are device pointers: send holds count
 * (all-gather) or n x count (reduce-scatter) floats, recv the other.
 * Collective over the group. RT_EDEVICE without the NCCL path. */
struct coll_bench {
	double runtime_s, plain_s, pipelined_s;
};
int coll_bench_run(struct coll *c, enum rt_kind k, int reduce_scatter,
		   long long count, float *send, float *recv, int iters,
		   struct coll_bench *out);
/* This rank's place among the ranks of its host, and their number. */
int coll_local_rank(int *local, int *nlocal);

#endif
