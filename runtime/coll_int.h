/*
 * coll_int: what the files of the coll module share (coll.c: MPI start-up,
 * communicators, numbering and recording; coll_host.c: the collectives on
 * host buffers; coll_stage.c: those on device buffers and the prefetch
 * slots; coll_watch.c: the watchdog; coll_nccl.c: the NCCL path;
 * coll_queue.c: the NCCL path's pending collectives). Not for use outside
 * runtime/coll*.c.
 */
#ifndef GTPLAN_COLL_INT_H
#define GTPLAN_COLL_INT_H

#include <mpi.h>
#include <stdio.h>

#include "coll.h"
#include "coll_queue.h"

/* An MPI call's status as a runtime code, with the call and its place. */
#define MPICHECK(cmd)                                                        \
	do {                                                                 \
		int mpi_rc_ = (cmd);                                         \
		if (mpi_rc_ != MPI_SUCCESS)                                  \
			return coll_mpi_fail(mpi_rc_, #cmd, __FILE__,        \
					     __LINE__);                      \
	} while (0)

int coll_mpi_fail(int code, const char *call, const char *file, int line);

/* The most members a timeout report lists one by one. */
#define COLL_REPORT_MEMBERS 16

/* Where a rank is, as the watchdog tells its peers. */
enum coll_state {
	COLL_RUNNING, /* computing between collectives */
	COLL_WAITING, /* inside collective `cur` */
	COLL_IDLE,    /* not called: waits for the end of the run */
	COLL_DONE,    /* finished its work: waits for the end of the run */
};

struct coll_nccl;

/* All-gathers started ahead (prefetch) and not yet waited for. */
#define COLL_SLOTS 2

/* One of them. */
struct coll_pending {
	int active, nccl;
	struct call_desc d;
	MPI_Request req;
	void *recv;       /* staged: the device buffer to upload to */
	char *hbuf;       /* staged: send then recv, on the host */
	size_t hcap;
};

struct coll {
	MPI_Comm comm[RT_NKINDS];
	int size[RT_NKINDS], rank[RT_NKINDS];
	long long index[RT_NKINDS];
	const int *members[RT_NKINDS]; /* borrowed from the plan */
	int me;
	double timeout_s;
	FILE *rec;
	const char *call;
	long long step, seq;
	/* collectives issued per kind (this rank's group of the kind) */
	long long kseq[RT_NKINDS];
	/* --device cuda without a device-aware MPI: float collectives take
	 * device pointers and go through these host buffers */
	struct kern_ctx *dev;
	float *hbuf;
	size_t hcap; /* floats in hbuf */
	/* --device cuda with one GPU per rank: the NCCL communicators */
	struct coll_nccl *nccl;
	/* the watchdog: a duplicate of the world for its messages */
	MPI_Comm wd;
	enum coll_state state;
	const struct call_desc *cur; /* valid while COLL_WAITING */
	struct coll_issued cur_is;   /* cur as issued (coll_watch_wait) */
	double cur_since;
	/* the NCCL path's collectives enqueued and not yet seen complete
	 * (coll_queue.h; cap 0: none, each collective waited for at once) */
	struct coll_queue q;
	char idle_why[200];
	struct coll_pending pend[COLL_SLOTS];
	/* point-to-point lines issued per kind with each member (by place;
	 * allocated at the kind's first), as the watchdog compares them */
	long long *p2p_n[RT_NKINDS];
	int peer;  /* the point-to-point line's peer (coll_is_p2p) */
	/* the exchange coll_sendrecv_start started, until its wait */
	struct coll_p2p_pending {
		int active, nccl, peer, n;
		struct call_desc d;   /* the direction the wait names */
		char what[64];        /* d.what's copy */
		MPI_Request r[2];
		float *recv;          /* staged: the device buffer */
		float *hbuf;          /* staged: send then recv, host */
		size_t hcap;          /* floats */
		long long nsend, nrecv;
	} p2p;
};

double coll_now(void);

/* ---- coll.c ---- */
/* Checks d's count against the buffers' range, writes its --record line
 * and numbers it (c->seq, c->kseq); call once per collective issued. */
int coll_begin(struct coll *c, const struct call_desc *d);
/* 0 where `count`, the elements one MPI call of d takes, fits MPI's int
 * counts; else RT_EMPI with what to do. The MPI paths check each count
 * they pass, except the all-reduce's, which goes in pieces that fit. */
int coll_mpi_count(const struct coll *c, const struct call_desc *d,
		   long long count);
/* d, the collective coll_begin numbered last (point-to-point: with peer
 * c->peer), as issued: what the watchdog names. */
void coll_issued_of(const struct coll *c, const struct call_desc *d,
		    struct coll_issued *is);

/* ---- coll_host.c: MPI on host buffers; groups of one copy ---- */
/* elem 4: fp32, 2: bf16 (moved as 16-bit words) */
int coll_host_all_gather(struct coll *c, enum rt_kind k, const char *what,
			 const void *send, void *recv, long long count,
			 int elem);
int coll_host_reduce_scatter(struct coll *c, enum rt_kind k,
			     const char *what, const float *send, float *recv,
			     long long count);
int coll_host_all_reduce_f(struct coll *c, enum rt_kind k,
			   const char *what, float *buf, long long count,
			   enum coll_op op);
int coll_host_gather(struct coll *c, enum rt_kind k, const char *what,
		     const float *send, float *recv, long long count, int root);
/* The largest piece of an all-reduce handed to MPI in one call: INT_MAX
 * (tests set it smaller to cut small buffers into pieces). */
extern long long coll_mpi_piece;
/* Waits for req under the watchdog (--timeout > 0 only). */
int coll_host_wait(struct coll *c, const struct call_desc *d,
		   MPI_Request *req);

/* ---- coll_p2p.c ---- */
/* How many point-to-point lines this rank issued on kind k with the
 * member at place `peer` (0 before the first). */
long long coll_p2p_count(const struct coll *c, enum rt_kind k, int peer);

/* ---- coll_watch.c ---- */
int coll_watch_init(struct coll *c);
void coll_watch_release(struct coll *c);
/* Answers the peers' pending questions; cheap when there are none. Call
 * it from every loop that waits. */
void coll_watch_serve(struct coll *c);
/* A wait's poll: sets *done once the awaited work has completed; a
 * non-zero return (a runtime code) is a failure and ends the wait. */
typedef int (*coll_poll_fn)(struct coll *c, const struct call_desc *d,
			    void *arg, int *done);
/* Waits for collective d: marks this rank as waiting in it (for its
 * peers' questions), polls until done, answering the watchdog between
 * polls; with c->timeout_s > 0, past the timeout the watchdog reports
 * (RT_ETIMEOUT). The pending queue (c->q) is polled too: its oldest
 * entry, if overdue, is reported instead. Back to running however it
 * ends. */
int coll_watch_wait(struct coll *c, const struct call_desc *d,
		    coll_poll_fn poll, void *arg);
/* Collective `is` has waited c->timeout_s: asks its group's members
 * where they are, prints the report and returns RT_ETIMEOUT. */
int coll_watch_report(struct coll *c, const struct coll_issued *is);
/* The queue's callbacks but the poll: serve and report through the
 * watchdog, the clock coll_now; arg c. */
void coll_watch_queue_ops(struct coll *c, struct coll_queue_ops *ops);
/* Waits under the watchdog for every collective issued so far. */
int coll_watch_drain(struct coll *c);

/* ---- coll_nccl.c (builds with KERN_WITH_CUDA only) ---- */
int coll_nccl_new(struct coll *c, struct kern_ctx *dev);
void coll_nccl_free(struct coll *c);
/* d->elem 4: fp32, 2: bf16. _start enqueues (GTP: on the GTP stream, its
 * end marked by event `slot`), _wait polls it. */
int coll_nccl_all_gather_start(struct coll *c, const struct call_desc *d,
			       const void *send, void *recv, int slot);
int coll_nccl_wait(struct coll *c, const struct call_desc *d, int slot);
int coll_nccl_all_gather(struct coll *c, const struct call_desc *d,
			 const void *send, void *recv);
int coll_nccl_reduce_scatter(struct coll *c, const struct call_desc *d,
			     const float *send, float *recv);
int coll_nccl_all_reduce(struct coll *c, const struct call_desc *d,
			 float *buf);
int coll_nccl_gather(struct coll *c, const struct call_desc *d,
		     const float *send, float *recv, int root);
/* iters plain NCCL collectives on group kind k; sync_each: synchronise
 * after each, else once at the end. *secs: the wall time of all. */
/* to/from: places, -1 leaves that direction out; d names the wait. */
int coll_nccl_sendrecv(struct coll *c, const struct call_desc *d, int to,
		       const float *send, long long send_count, int from,
		       float *recv, long long recv_count);
/* The same started on the point-to-point stream (coll_sendrecv_start);
 * _wait polls its end and makes the kernels' stream wait for it. */
int coll_nccl_sendrecv_start(struct coll *c, const struct call_desc *d,
			     int to, const float *send, long long send_count,
			     int from, float *recv, long long recv_count);
int coll_nccl_sendrecv_wait(struct coll *c, const struct call_desc *d);
int coll_nccl_plain(struct coll *c, enum rt_kind k, int reduce_scatter,
		    long long count, const float *send, float *recv,
		    int iters, int sync_each, double *secs);

#endif
