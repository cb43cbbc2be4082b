/*
 * coll_p2p: send-recv, the point-to-point exchange of coll.h
 * (coll_sendrecv, coll_sendrecv_start/_wait): on host buffers MPI_Irecv and
 * MPI_Isend on the group's communicator, waited for together; on device
 * buffers staged through host buffers of its own, or over NCCL
 * (coll_nccl.c). One exchange is in flight at a time; it is numbered and
 * recorded when it starts, and its wait answers the watchdog (with
 * --timeout, a peer that never posts its side is reported like a
 * collective that does not complete).
 */
#include "coll.h"
#include "coll_int.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "rt_err.h"

/* One tag for every exchange: an exchange is waited for before the next
 * starts, and MPI keeps the order of messages between two ranks. */
#define P2P_TAG 7201

/* coll_watch_wait's poll of the two requests (arg: MPI_Request[2]). */
static int poll_pair(struct coll *c, const struct call_desc *d, void *arg,
		     int *done)
{
	(void)c;
	(void)d;
	MPICHECK(MPI_Testall(2, (MPI_Request *)arg, done,
			     MPI_STATUSES_IGNORE));
	return 0;
}

static int check_args(const struct coll *c, enum rt_kind k, const char *what,
		      int send_to, long long send_count, int recv_from,
		      long long recv_count)
{
	int n = c->size[k];

	if (c->p2p.active)
		return rt_error(RT_EUSAGE, "send-recv of %s: the one of %s is "
				"still in flight", what, c->p2p.p.d.what);
	if (send_to < -1 || send_to >= n || recv_from < -1 || recv_from >= n)
		return rt_error(RT_EUSAGE, "send-recv of %s: places %d and %d "
				"outside the %s group of %d", what, send_to,
				recv_from, rt_kind_name(k), n);
	if (send_count < 0 || recv_count < 0 || send_count > INT_MAX ||
	    recv_count > INT_MAX)
		return rt_error(RT_EUSAGE, "send-recv of %s: count %lld or %lld "
				"out of MPI's range", what, send_count,
				recv_count);
	if (n == 1 && send_to == 0 && recv_from == 0 &&
	    send_count != recv_count)
		return rt_error(RT_EUSAGE, "send-recv of %s to itself: sends "
				"%lld, receives %lld", what, send_count,
				recv_count);
	return 0;
}

/* A group of one: this rank is its own peer. */
static int self_copy(struct coll *c, const char *what, const float *send,
		     float *recv, long long count)
{
	int krc;

	if (recv == send || count == 0)
		return 0;
	if (!c->dev) {
		memmove(recv, send, (size_t)count * sizeof(float));
		return 0;
	}
	krc = kern_copy(c->dev, recv, send, (size_t)count * sizeof(float));
	return krc ? rt_error(RT_EKERNEL, "send-recv of %s: %s", what,
			      kern_strerror(krc)) : 0;
}

/* Staging: q->hbuf = [send | recv] on the host, send downloaded. */
static int stage_send(struct coll *c, struct coll_p2p_pending *q,
		      const float *send, float *recv)
{
	size_t n = (size_t)(q->p.d.count + q->p.recv_count);
	int krc;

	if (n > q->hcap) {
		float *p = realloc(q->hbuf, n * sizeof(float));

		if (!p)
			return rt_error(RT_ENOMEM, "out of memory for host "
					"staging (%zu floats)", n);
		q->hbuf = p;
		q->hcap = n;
	}
	if (q->p.d.count > 0) {
		krc = kern_download(c->dev, q->hbuf, send,
				    (size_t)q->p.d.count * sizeof(float));
		if (krc)
			return rt_error(RT_EKERNEL, "host staging of %s: %s",
					q->p.d.what, kern_strerror(krc));
	}
	q->recv = recv;
	return 0;
}

int coll_sendrecv_start(struct coll *c, enum rt_kind k, const char *what,
			int send_to, const float *send, long long send_count,
			int recv_from, float *recv, long long recv_count)
{
	struct coll_p2p_pending *q = &c->p2p;
	const float *sb = send;
	float *rb = recv;
	int rc = check_args(c, k, what, send_to, send_count, recv_from,
			    recv_count);

	if (rc)
		return rc;
	snprintf(q->what, sizeof(q->what), "%s", what);
	q->p = (struct p2p_desc){
		.d = { .coll = COLL_SENDRECV, .what = q->what, .dtype = "fp32",
		       .k = k, .count = send_to >= 0 ? send_count : 0,
		       .elem = 4 },
		.send_to = send_to, .recv_from = recv_from,
		.recv_count = recv_from >= 0 ? recv_count : 0,
	};
	q->req[0] = q->req[1] = MPI_REQUEST_NULL;
	q->recv = NULL;
	if (c->size[k] == 1)
		return send_to == 0 && recv_from == 0 ?
		       self_copy(c, what, send, recv, send_count) : 0;
	if ((rc = coll_begin(c, &q->p.d)))
		return rc;
	if (c->nccl) {
		q->active = q->nccl = 1;
		return coll_nccl_sendrecv_start(c, &q->p, send, recv);
	}
	if (c->dev) {
		if ((rc = stage_send(c, q, send, recv)))
			return rc;
		sb = q->hbuf;
		rb = q->hbuf + q->p.d.count;
	}
	if (recv_from >= 0)
		MPICHECK(MPI_Irecv(rb, (int)q->p.recv_count, MPI_FLOAT,
				   recv_from, P2P_TAG, c->comm[k], &q->req[1]));
	if (send_to >= 0)
		MPICHECK(MPI_Isend(sb, (int)q->p.d.count, MPI_FLOAT, send_to,
				   P2P_TAG, c->comm[k], &q->req[0]));
	q->active = 1;
	q->nccl = 0;
	return 0;
}

int coll_sendrecv_wait(struct coll *c)
{
	struct coll_p2p_pending *q = &c->p2p;
	int krc;

	if (!q->active)
		return 0;
	q->active = 0;
	if (q->nccl)
		return coll_nccl_sendrecv_wait(c, &q->p.d);
	if (c->timeout_s > 0) {
		int rc = coll_watch_wait(c, &q->p.d, poll_pair, q->req);

		if (rc)
			return rc;
	} else {
		c->state = COLL_WAITING;
		c->cur = &q->p.d;
		MPICHECK(MPI_Waitall(2, q->req, MPI_STATUSES_IGNORE));
		c->state = COLL_RUNNING;
		c->cur = NULL;
	}
	if (!q->recv || q->p.recv_count == 0)
		return 0;
	krc = kern_upload(c->dev, q->recv, q->hbuf + q->p.d.count,
			  (size_t)q->p.recv_count * sizeof(float));
	return krc ? rt_error(RT_EKERNEL, "host staging of %s: %s", q->p.d.what,
			      kern_strerror(krc)) : 0;
}

int coll_sendrecv(struct coll *c, enum rt_kind k, const char *what,
		  int send_to, const float *send, long long send_count,
		  int recv_from, float *recv, long long recv_count)
{
	int rc = coll_sendrecv_start(c, k, what, send_to, send, send_count,
				     recv_from, recv, recv_count);

	return rc ? rc : coll_sendrecv_wait(c);
}
