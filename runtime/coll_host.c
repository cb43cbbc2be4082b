/*
 * coll_host: the collectives on host buffers, over MPI (see coll.h): fp32
 * and bf16 all-gathers, reduce-scatter, all-reduce, gather, barrier.
 * Without --timeout they block in MPI; with it they are issued non-blocking
 * and polled under the watchdog (coll_watch_wait).
 */
#include "coll.h"
#include "coll_int.h"

#include <limits.h>
#include <mpi.h>
#include <string.h>

#include "rt_err.h"

/* coll_watch_wait's poll of an MPI request (arg). */
static int poll_req(struct coll *c, const struct call_desc *d, void *arg,
		    int *done)
{
	MPI_Request *req = arg;

	(void)c;
	(void)d;
	MPICHECK(MPI_Test(req, done, MPI_STATUS_IGNORE));
	return 0;
}

int coll_host_wait(struct coll *c, const struct call_desc *d,
		   MPI_Request *req)
{
	return coll_watch_wait(c, d, poll_req, req);
}

static MPI_Op mpi_op(enum coll_op op)
{
	return op == COLL_MAX ? MPI_MAX : MPI_SUM;
}

/* A group of one: send is copied to recv and 1 returned (nothing to
 * communicate). Else the collective begins: 0, or its error (d->count,
 * each member's elements, is what the call passes MPI). */
static int begin_or_copy(struct coll *c, const struct call_desc *d,
			 const void *send, void *recv)
{
	int rc;

	if (c->size[d->k] == 1) {
		if (recv != send)
			memmove(recv, send, (size_t)d->count * (size_t)d->elem);
		return 1;
	}
	if ((rc = coll_mpi_count(c, d, d->count)))
		return rc;
	return coll_begin(c, d);
}

/* The all-reduce goes to MPI in pieces of at most this many elements
 * (MPI's counts are int; the sums are element by element, so pieces
 * give the same values as one call). */
long long coll_mpi_piece = INT_MAX;

/* elem 4: fp32, elem 2: bf16 (moved as 16-bit words: no arithmetic) */
int coll_host_all_gather(struct coll *c, enum rt_kind k, const char *what,
			 const void *send, void *recv, long long count,
			 int elem)
{
	struct call_desc d = { "all-gather", what, elem == 2 ? "bf16" : "fp32",
			       k, count, elem, 0, COLL_SUM };
	MPI_Datatype t = elem == 2 ? MPI_UINT16_T : MPI_FLOAT;
	MPI_Request req;
	int rc, n = (int)count;

	if ((rc = begin_or_copy(c, &d, send, recv)))
		return rc > 0 ? 0 : rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Allgather(send, n, t, recv, n, t, c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Iallgather(send, n, t, recv, n, t, c->comm[k], &req));
	return coll_host_wait(c, &d, &req);
}

int coll_host_reduce_scatter(struct coll *c, enum rt_kind k,
			     const char *what, const float *send, float *recv,
			     long long count)
{
	struct call_desc d = { "reduce-scatter", what, "fp32", k, count, 4, 1,
			       COLL_SUM };
	MPI_Request req;
	int rc, n = (int)count;

	if ((rc = begin_or_copy(c, &d, send, recv)))
		return rc > 0 ? 0 : rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT,
						  MPI_SUM, c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Ireduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM,
					   c->comm[k], &req));
	return coll_host_wait(c, &d, &req);
}

static int all_reduce(struct coll *c, struct call_desc *d, void *buf,
		      MPI_Datatype type)
{
	long long piece = coll_mpi_piece < INT_MAX && coll_mpi_piece > 0 ?
			  coll_mpi_piece : INT_MAX;
	MPI_Request req;
	int rc;

	if (c->size[d->k] == 1)
		return 0;
	if ((rc = coll_begin(c, d)))
		return rc;
	/* one record, as many MPI calls as pieces: every member cuts the
	 * same count at the same places */
	for (long long at = 0; at < d->count; at += piece) {
		int n = (int)(d->count - at < piece ? d->count - at : piece);
		char *p = (char *)buf + at * d->elem;

		if (c->timeout_s <= 0) {
			MPICHECK(MPI_Allreduce(MPI_IN_PLACE, p, n, type,
					       mpi_op(d->op), c->comm[d->k]));
			continue;
		}
		MPICHECK(MPI_Iallreduce(MPI_IN_PLACE, p, n, type,
					mpi_op(d->op), c->comm[d->k], &req));
		if ((rc = coll_host_wait(c, d, &req)))
			return rc;
	}
	return 0;
}

int coll_host_all_reduce_f(struct coll *c, enum rt_kind k,
			   const char *what, float *buf, long long count,
			   enum coll_op op)
{
	struct call_desc d = { "all-reduce", what, "fp32", k, count, 4, 1, op };

	return all_reduce(c, &d, buf, MPI_FLOAT);
}

int coll_all_reduce_d(struct coll *c, enum rt_kind k, const char *what,
		      double *buf, long long count, enum coll_op op)
{
	struct call_desc d = { "all-reduce", what, "fp64", k, count, 8, 1, op };

	return all_reduce(c, &d, buf, MPI_DOUBLE);
}

int coll_host_gather(struct coll *c, enum rt_kind k, const char *what,
		     const float *send, float *recv, long long count, int root)
{
	struct call_desc d = { "gather", what, "fp32", k, count, 4, 0,
			       COLL_SUM };
	MPI_Request req;
	int rc, n = (int)count;

	if ((rc = begin_or_copy(c, &d, send, recv)))
		return rc > 0 ? 0 : rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Gather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT,
				    root, c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Igather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, root,
			     c->comm[k], &req));
	return coll_host_wait(c, &d, &req);
}

int coll_gather_i64(struct coll *c, enum rt_kind k, const char *what,
		    const long long *send, long long *recv, long long count,
		    int root)
{
	struct call_desc d = { "gather", what, "int64", k, count, 8, 0,
			       COLL_SUM };
	MPI_Request req;
	int rc, n = (int)count;

	if ((rc = begin_or_copy(c, &d, send, recv)))
		return rc > 0 ? 0 : rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Gather(send, n, MPI_LONG_LONG, recv, n,
				    MPI_LONG_LONG, root, c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Igather(send, n, MPI_LONG_LONG, recv, n, MPI_LONG_LONG,
			     root, c->comm[k], &req));
	return coll_host_wait(c, &d, &req);
}

int coll_barrier(struct coll *c, enum rt_kind k, const char *what)
{
	struct call_desc d = { "barrier", what, "none", k, 0, 0, 0, COLL_SUM };
	MPI_Request req;
	int rc;

	if (c->size[k] == 1)
		return 0;
	if ((rc = coll_begin(c, &d)))
		return rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Barrier(c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Ibarrier(c->comm[k], &req));
	return coll_host_wait(c, &d, &req);
}
