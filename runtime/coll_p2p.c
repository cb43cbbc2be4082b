/*
 * coll_p2p: point-to-point between two members of a group (coll.h's
 * coll_sendrecv): the pipeline's activations and their gradients, a
 * ring's hops. Both directions of a call are in flight together, as
 * Megatron's batch_isend_irecv puts them
 * (megatron/core/pipeline_parallel/p2p_communication.py), so two members
 * that send to each other at once do not deadlock. On host buffers: MPI
 * Isend/Irecv on the kind's communicator; on device buffers: NCCL's
 * ncclSend/ncclRecv in one group (coll_nccl.c), or host staging around
 * MPI. Every direction is one --record line (coll "send" or "recv", with
 * the peer's place) and counts toward the watchdog's per-peer tally
 * (coll_p2p_count), which tells a peer that never posted the matching
 * receive or send from one that did. Where both directions face one peer
 * the pair first checks that their calls mirror each other (pair_check).
 * coll_sendrecv_start posts a call's directions and returns (one started
 * call at a time, c->p2p, on channel 0), coll_sendrecv_wait finishes it.
 */
#include "coll.h"
#include "coll_int.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "rt_err.h"

/* The messages of a channel travel under one tag: MPI keeps the order of
 * messages between two ranks on one communicator, and peers issue in the
 * same order (coll.h). The pair check's messages have a tag of their
 * own. */
#define P2P_TAG 7201 /* + the channel, 0 .. COLL_P2P_CHANNELS */
#define P2P_CHECK_TAG 7300

long long coll_p2p_count(const struct coll *c, enum rt_kind k, int peer)
{
	if ((unsigned)k >= RT_NKINDS || !c->p2p_n[k] || peer < 0 ||
	    peer >= c->size[k])
		return 0;
	return c->p2p_n[k][peer];
}

/* Records one direction and counts it with its peer (place `peer`). */
static int begin_dir(struct coll *c, const struct call_desc *d, int peer)
{
	enum rt_kind k = d->k;

	if (!c->p2p_n[k]) {
		c->p2p_n[k] = calloc((size_t)c->size[k], sizeof(long long));
		if (!c->p2p_n[k])
			return rt_error(RT_ENOMEM, "out of memory");
	}
	c->p2p_n[k][peer]++;
	c->peer = peer;
	return coll_begin(c, d);
}

struct p2p_reqs {
	MPI_Request r[2];
	int n;
};

/* coll_watch_wait's poll of the call's requests. */
static int poll_reqs(struct coll *c, const struct call_desc *d, void *arg,
		     int *done)
{
	struct p2p_reqs *q = arg;

	(void)c;
	(void)d;
	MPICHECK(MPI_Testall(q->n, q->r, done, MPI_STATUSES_IGNORE));
	return 0;
}

/* What one call moves: per direction (0 send, 1 receive) the peer's
 * place (-1: none), the count and the channel. */
struct p2p_call {
	int peer[2], ch[2];
	long long n[2];
};

/* MPI on host buffers; d is the direction the wait names. */
static int host_sendrecv(struct coll *c, const struct call_desc *d,
			 const struct p2p_call *pc, const float *send,
			 float *recv)
{
	int to = pc->peer[0], from = pc->peer[1];
	long long send_count = pc->n[0], recv_count = pc->n[1];
	struct p2p_reqs q = { .n = 0 };
	MPI_Comm comm = c->comm[d->k];
	int rc;

	if ((rc = coll_mpi_count(c, d, to >= 0 ? send_count : 0)) ||
	    (rc = coll_mpi_count(c, d, from >= 0 ? recv_count : 0)))
		return rc;

	if (to >= 0)
		MPICHECK(MPI_Isend(send, (int)send_count, MPI_FLOAT, to,
				   P2P_TAG + pc->ch[0], comm, &q.r[q.n++]));
	if (from >= 0)
		MPICHECK(MPI_Irecv(recv, (int)recv_count, MPI_FLOAT, from,
				   P2P_TAG + pc->ch[1], comm, &q.r[q.n++]));
	if (c->timeout_s > 0)
		return coll_watch_wait(c, d, poll_reqs, &q);
	c->state = COLL_WAITING;
	c->cur = d;
	c->cur_since = coll_now();
	rc = MPI_Waitall(q.n, q.r, MPI_STATUSES_IGNORE);
	c->state = COLL_RUNNING;
	c->cur = NULL;
	MPICHECK(rc);
	return 0;
}

/* Both directions face one peer: the two first swap what each sends and
 * receives (counts, -1 for none) and each checks that the other mirrors
 * it, so that exchanges that do not pair (a pipeline schedule the stages
 * disagree on) stop here, named, instead of moving data of the same size
 * into the wrong place. Its two messages are not recorded. */
static int pair_check(struct coll *c, const struct call_desc *d, int peer,
		      const struct p2p_call *pc)
{
	long long sent = pc->peer[0] >= 0 ? pc->n[0] : -1;
	long long received = pc->peer[1] >= 0 ? pc->n[1] : -1;
	long long mine[4] = { sent, pc->ch[0], received, pc->ch[1] };
	long long theirs[4] = { -2, -2, -2, -2 };
	struct p2p_reqs q = { .n = 2 };
	MPI_Comm comm = c->comm[d->k];
	int rc = 0;

	MPICHECK(MPI_Isend(mine, 4, MPI_LONG_LONG, peer, P2P_CHECK_TAG, comm,
			   &q.r[0]));
	MPICHECK(MPI_Irecv(theirs, 4, MPI_LONG_LONG, peer, P2P_CHECK_TAG,
			   comm, &q.r[1]));
	if (c->timeout_s > 0) {
		rc = coll_watch_wait(c, d, poll_reqs, &q);
	} else {
		c->state = COLL_WAITING;
		c->cur = d;
		c->cur_since = coll_now();
		rc = MPI_Waitall(2, q.r, MPI_STATUSES_IGNORE);
		c->state = COLL_RUNNING;
		c->cur = NULL;
		MPICHECK(rc);
	}
	/* a direction that is absent has no channel */
	if (rc || (theirs[0] == received && theirs[2] == sent &&
		   (received < 0 || theirs[1] == pc->ch[1]) &&
		   (sent < 0 || theirs[3] == pc->ch[0])))
		return rc;
	return rt_error(RT_EPLAN, "point-to-point #%lld of call '%s' (step "
			"%lld), %s over %s group %lld: its peer (place %d, "
			"rank %d) does not mirror it: this rank sends %lld "
			"elements on channel %d and receives %lld on %d, the "
			"peer sends %lld on %lld and receives %lld on %lld (-1: "
			"nothing); the members' exchanges do not pair",
			c->seq - 1, c->call, c->step, d->what,
			rt_kind_name(d->k), c->index[d->k], peer,
			c->members[d->k][peer], sent, pc->ch[0], received,
			pc->ch[1], theirs[0], theirs[1], theirs[2], theirs[3]);
}

/* Device buffers without NCCL: through host copies. */
static int staged_sendrecv(struct coll *c, const struct call_desc *d,
			   const struct p2p_call *pc, const float *send,
			   float *recv)
{
	size_t ns = pc->peer[0] >= 0 ? (size_t)pc->n[0] : 0;
	size_t nr = pc->peer[1] >= 0 ? (size_t)pc->n[1] : 0;
	float *h = malloc((ns + nr + 1) * sizeof(float));
	int rc = 0, krc = 0;

	if (!h)
		return rt_error(RT_ENOMEM, "out of memory for host staging");
	if (ns)
		krc = kern_download(c->dev, h, send, ns * sizeof(float));
	if (!krc)
		rc = host_sendrecv(c, d, pc, h, h + ns);
	if (!krc && !rc && nr)
		krc = kern_upload(c->dev, recv, h + ns, nr * sizeof(float));
	free(h);
	if (krc)
		return rt_error(RT_EKERNEL, "host staging of %s: %s", d->what,
				kern_error_text(krc));
	return rc;
}

/* A point-to-point call's peers are -1 (none) or other members of k's
 * group, its channels 0 .. COLL_P2P_CHANNELS. */
static int check_call(const struct coll *c, enum rt_kind k, const char *what,
		      const struct p2p_call *pc)
{
	int to = pc->peer[0], from = pc->peer[1];

	if ((unsigned)k < RT_NKINDS && to < c->size[k] &&
	    from < c->size[k] && to != c->rank[k] && from != c->rank[k] &&
	    pc->ch[0] >= 0 && pc->ch[1] >= 0 &&
	    pc->ch[0] <= COLL_P2P_CHANNELS && pc->ch[1] <= COLL_P2P_CHANNELS)
		return 0;
	return rt_error(RT_EUSAGE, "point-to-point %s over %s: peers %d and "
			"%d are not other members of a group of %d", what,
			rt_kind_name(k), to, from,
			(unsigned)k < RT_NKINDS ? c->size[k] : 0);
}

int coll_sendrecv(struct coll *c, enum rt_kind k, const char *what, int to,
		  const float *send, long long send_count, int from,
		  float *recv, long long recv_count)
{
	return coll_sendrecv_ch(c, k, what, to, send, send_count, 0, from,
				recv, recv_count, 0);
}

int coll_sendrecv_ch(struct coll *c, enum rt_kind k, const char *what,
		     int to, const float *send, long long send_count,
		     int send_ch, int from, float *recv, long long recv_count,
		     int recv_ch)
{
	struct p2p_call pc = { { to, from }, { send_ch, recv_ch },
			       { send_count, recv_count } };
	struct call_desc ds = { "send", what, "fp32", k, send_count, 4, 0,
				COLL_SUM };
	struct call_desc dr = { "recv", what, "fp32", k, recv_count, 4, 0,
				COLL_SUM };
	const struct call_desc *wait_on = from >= 0 ? &dr : &ds;
	int rc;

	if ((rc = check_call(c, k, what, &pc)))
		return rc;
	if (to < 0 && from < 0)
		return 0;
	if (to >= 0 && (rc = begin_dir(c, &ds, to)))
		return rc;
	if (from >= 0 && (rc = begin_dir(c, &dr, from)))
		return rc;
	c->peer = from >= 0 ? from : to; /* the one the wait names */
	if ((to < 0 || from < 0 || to == from) &&
	    (rc = pair_check(c, wait_on, c->peer, &pc)))
		return rc;
	if (c->nccl)
		return coll_nccl_sendrecv(c, wait_on, to, send, send_count,
					  from, recv, recv_count);
	if (c->dev)
		return staged_sendrecv(c, wait_on, &pc, send, recv);
	return host_sendrecv(c, wait_on, &pc, send, recv);
}

/* ---- started exchanges (coll_sendrecv_start / _wait) --------------------- */

/* coll_sendrecv_start up to the data: checks, records each direction
 * (the send first), pairs where coll_sendrecv_ch pairs; q->d becomes the
 * direction the wait names. Returns 1 when there is nothing to move. */
static int open_started(struct coll *c, struct coll_p2p_pending *q,
			enum rt_kind k, const struct p2p_call *pc)
{
	struct call_desc ds = { "send", q->what, "fp32", k, pc->n[0], 4, 0,
				COLL_SUM };
	struct call_desc dr = { "recv", q->what, "fp32", k, pc->n[1], 4, 0,
				COLL_SUM };
	int to = pc->peer[0], from = pc->peer[1], rc;

	if ((rc = check_call(c, k, q->what, pc)))
		return rc;
	if (to < 0 && from < 0)
		return 1;
	if (to >= 0 && (rc = begin_dir(c, &ds, to)))
		return rc;
	if (from >= 0 && (rc = begin_dir(c, &dr, from)))
		return rc;
	q->d = from >= 0 ? dr : ds;
	q->peer = c->peer = from >= 0 ? from : to;
	if (to < 0 || from < 0 || to == from)
		return pair_check(c, &q->d, q->peer, pc);
	return 0;
}

/* Staging of a started exchange: q->hbuf = [send | recv] on the host,
 * send downloaded; *sb, *rb point into it. */
static int stage_start(struct coll *c, struct coll_p2p_pending *q,
		       const float *send, float **sb, float **rb)
{
	size_t n = (size_t)(q->nsend + q->nrecv);
	int krc = 0;

	if (n + 1 > q->hcap) {
		float *p = realloc(q->hbuf, (n + 1) * sizeof(float));

		if (!p)
			return rt_error(RT_ENOMEM, "out of memory for host "
					"staging (%zu floats)", n);
		q->hbuf = p;
		q->hcap = n + 1;
	}
	if (q->nsend > 0)
		krc = kern_download(c->dev, q->hbuf, send,
				    (size_t)q->nsend * sizeof(float));
	if (krc)
		return rt_error(RT_EKERNEL, "host staging of %s: %s", q->what,
				kern_error_text(krc));
	*sb = q->hbuf;
	*rb = q->hbuf + q->nsend;
	return 0;
}

int coll_sendrecv_start(struct coll *c, enum rt_kind k, const char *what,
			int to, const float *send, long long send_count,
			int from, float *recv, long long recv_count)
{
	struct coll_p2p_pending *q = &c->p2p;
	struct p2p_call pc = { { to, from }, { 0, 0 },
			       { send_count, recv_count } };
	float *sb = (float *)send, *rb = recv;
	int rc;

	if (q->active)
		return rt_error(RT_EUSAGE, "point-to-point %s started while %s "
				"is in flight", what, q->what);
	snprintf(q->what, sizeof(q->what), "%s", what);
	if ((rc = open_started(c, q, k, &pc)))
		return rc > 0 ? 0 : rc;
	q->nsend = to >= 0 ? send_count : 0;
	q->nrecv = from >= 0 ? recv_count : 0;
	q->recv = NULL;
	q->n = 0;
	if (c->nccl) {
		q->active = q->nccl = 1;
		return coll_nccl_sendrecv_start(c, &q->d, to, send, send_count,
						from, recv, recv_count);
	}
	if ((rc = coll_mpi_count(c, &q->d, q->nsend)) ||
	    (rc = coll_mpi_count(c, &q->d, q->nrecv)))
		return rc;
	if (c->dev) {
		if ((rc = stage_start(c, q, send, &sb, &rb)))
			return rc;
		q->recv = recv;
	}
	if (to >= 0)
		MPICHECK(MPI_Isend(sb, (int)send_count, MPI_FLOAT, to, P2P_TAG,
				   c->comm[k], &q->r[q->n++]));
	if (from >= 0)
		MPICHECK(MPI_Irecv(rb, (int)recv_count, MPI_FLOAT, from,
				   P2P_TAG, c->comm[k], &q->r[q->n++]));
	q->active = 1;
	q->nccl = 0;
	return 0;
}

int coll_sendrecv_wait(struct coll *c)
{
	struct coll_p2p_pending *q = &c->p2p;
	struct p2p_reqs reqs;
	int rc, krc;

	if (!q->active)
		return 0;
	q->active = 0;
	c->peer = q->peer;
	if (q->nccl)
		return coll_nccl_sendrecv_wait(c, &q->d);
	reqs.n = q->n;
	memcpy(reqs.r, q->r, sizeof(reqs.r));
	if (c->timeout_s > 0) {
		if ((rc = coll_watch_wait(c, &q->d, poll_reqs, &reqs)))
			return rc;
	} else {
		c->state = COLL_WAITING;
		c->cur = &q->d;
		c->cur_since = coll_now();
		rc = MPI_Waitall(reqs.n, reqs.r, MPI_STATUSES_IGNORE);
		c->state = COLL_RUNNING;
		c->cur = NULL;
		MPICHECK(rc);
	}
	if (!q->recv || q->nrecv == 0)
		return 0;
	krc = kern_upload(c->dev, q->recv, q->hbuf + q->nsend,
			  (size_t)q->nrecv * sizeof(float));
	return krc ? rt_error(RT_EKERNEL, "host staging of %s: %s", q->what,
			      kern_error_text(krc)) : 0;
}
