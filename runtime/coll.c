/*
 * coll: MPI start-up, communicators per plan group and the recorded,
 * optionally timed collectives (see coll.h).
 */
#include "coll.h"
#include "coll_int.h"

#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kern.h"
#include "rt_err.h"

int coll_mpi_fail(int code, const char *call, const char *file, int line)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof(msg), "MPI error %d", code);
	return rt_error(RT_EMPI, "%s:%d: %s: %s", file, line, call, msg);
}

int coll_mpi_init(int *argc, char ***argv, int *rank, int *size)
{
	MPICHECK(MPI_Init(argc, argv));
	MPICHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, rank));
	MPICHECK(MPI_Comm_size(MPI_COMM_WORLD, size));
	return 0;
}

int coll_mpi_agree(int status)
{
	int all = status;

	MPICHECK(MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MIN,
			       MPI_COMM_WORLD));
	return all;
}

int coll_mpi_bcast(void *buf, long long bytes)
{
	char *p = buf;

	/* MPI counts are ints: large buffers go in pieces */
	while (bytes > 0) {
		int n = bytes > (1 << 30) ? 1 << 30 : (int)bytes;

		MPICHECK(MPI_Bcast(p, n, MPI_BYTE, 0, MPI_COMM_WORLD));
		p += n;
		bytes -= n;
	}
	return 0;
}

void coll_mpi_finalize(void)
{
	MPI_Finalize();
}

void coll_mpi_abort(int exit_code)
{
	MPI_Abort(MPI_COMM_WORLD, exit_code);
}

const char *coll_mpi_version(void)
{
	static char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;
	char *nl;

	if (MPI_Get_library_version(v, &len) != MPI_SUCCESS)
		return "MPI";
	nl = strpbrk(v, "\n,");
	if (nl)
		*nl = '\0';
	return v;
}

/* The communicator of one kind: split, then checked against the plan. */
static int build_comm(struct coll *c, const struct rt_plan *p, enum rt_kind k)
{
	const struct rt_group *g = &p->group[k];
	MPI_Group world_grp, grp;
	int n, r, *ranks, *world_ranks, rc = 0;

	if (k == RT_K_WORLD)
		MPICHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c->comm[k]));
	else
		MPICHECK(MPI_Comm_split(MPI_COMM_WORLD, (int)g->index, g->pos,
					&c->comm[k]));
	MPICHECK(MPI_Comm_size(c->comm[k], &n));
	MPICHECK(MPI_Comm_rank(c->comm[k], &r));
	if (n != g->n || r != g->pos)
		return rt_error(RT_EPLAN, "the %s communicator has %d ranks and "
				"puts me at %d; the plan says %d and %d",
				rt_kind_name(k), n, r, g->n, g->pos);
	ranks = malloc(2 * (size_t)n * sizeof(int));
	if (!ranks)
		return rt_error(RT_ENOMEM, "out of memory");
	world_ranks = ranks + n;
	for (int i = 0; i < n; i++)
		ranks[i] = i;
	if (MPI_Comm_group(c->comm[k], &grp) != MPI_SUCCESS ||
	    MPI_Comm_group(MPI_COMM_WORLD, &world_grp) != MPI_SUCCESS) {
		free(ranks);
		return rt_error(RT_EMPI, "MPI_Comm_group failed");
	}
	if (MPI_Group_translate_ranks(grp, n, ranks, world_grp, world_ranks) !=
	    MPI_SUCCESS)
		rc = rt_error(RT_EMPI, "MPI_Group_translate_ranks failed");
	for (int i = 0; !rc && i < n; i++)
		if (world_ranks[i] != g->members[i])
			rc = rt_error(RT_EPLAN, "member %d of my %s "
				      "communicator is rank %d; the plan says "
				      "%d", i, rt_kind_name(k), world_ranks[i],
				      g->members[i]);
	MPI_Group_free(&grp);
	MPI_Group_free(&world_grp);
	free(ranks);
	c->size[k] = n;
	c->rank[k] = r;
	c->index[k] = g->index;
	c->members[k] = g->members;
	return rc;
}

static int open_record(struct coll *c, const char *path)
{
	char buf[4096];
	const char *at = strstr(path, "{rank}");
	int n;

	if (at)
		n = snprintf(buf, sizeof(buf), "%.*s%d%s", (int)(at - path),
			     path, c->me, at + 6);
	else
		n = snprintf(buf, sizeof(buf), "%s.%d", path, c->me);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return rt_error(RT_EUSAGE, "--record: path too long");
	c->rec = fopen(buf, "w");
	if (!c->rec)
		return rt_error(RT_EIO, "--record: cannot write '%s'", buf);
	return 0;
}

int coll_new(struct coll **out, const struct rt_plan *p,
	     const struct coll_opts *o)
{
	struct coll *c = calloc(1, sizeof(*c));
	int rc = 0;

	*out = NULL;
	if (!c)
		return rt_error(RT_ENOMEM, "out of memory");
	for (int k = 0; k < RT_NKINDS; k++)
		c->comm[k] = MPI_COMM_NULL;
	c->wd = MPI_COMM_NULL;
	c->me = p->me;
	c->timeout_s = o ? o->timeout_s : 0;
	c->call = "init";
	for (int k = 0; k < RT_NKINDS && !rc; k++)
		rc = build_comm(c, p, (enum rt_kind)k);
	if (!rc)
		rc = coll_watch_init(c);
	if (!rc && o && o->record_path)
		rc = open_record(c, o->record_path);
	if (rc) {
		coll_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void coll_free(struct coll *c)
{
	if (!c)
		return;
	coll_nccl_free(c);
	coll_watch_release(c);
	for (int k = 0; k < RT_NKINDS; k++)
		if (c->comm[k] != MPI_COMM_NULL)
			MPI_Comm_free(&c->comm[k]);
	if (c->rec)
		fclose(c->rec);
	free(c->hbuf);
	for (int i = 0; i < COLL_SLOTS; i++)
		free(c->pend[i].hbuf);
	free(c);
}

void coll_set_call(struct coll *c, const char *call, long long step)
{
	c->call = call;
	c->step = step;
}

/* The end of the run: every rank meets here, answering the watchdog while
 * it waits (a rank the driver never called waits here from the start). */
static int meet_at_end(struct coll *c)
{
	MPI_Request req;
	int done = 0;

	MPICHECK(MPI_Ibarrier(c->wd, &req));
	for (;;) {
		MPICHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
		if (done)
			return 0;
		coll_watch_serve(c);
		sched_yield();
	}
}

int coll_finish(struct coll *c)
{
	c->state = COLL_DONE;
	return meet_at_end(c);
}

int coll_idle(struct coll *c, const char *why)
{
	c->state = COLL_IDLE;
	snprintf(c->idle_why, sizeof(c->idle_why), "%s", why);
	return meet_at_end(c);
}

int coll_rank(const struct coll *c, enum rt_kind k)
{
	return c->rank[k];
}

/* ---- issuing ------------------------------------------------------------ */

static const char *op_name(enum coll_op op)
{
	return op == COLL_MAX ? "max" : "sum";
}

static int record(struct coll *c, const struct call_desc *d)
{
	if (!c->rec)
		return 0;
	fprintf(c->rec, "{\"bytes\":%lld,\"call\":\"%s\",\"coll\":\"%s\","
		"\"count\":%lld,\"dtype\":\"%s\",\"group\":\"%s\","
		"\"group_index\":%lld,\"op\":%s%s%s,\"rank\":%d,\"seq\":%lld,"
		"\"step\":%lld,\"what\":\"%s\"}\n", d->count * d->elem, c->call,
		d->coll, d->count, d->dtype, rt_kind_name(d->k), c->index[d->k],
		d->has_op ? "\"" : "", d->has_op ? op_name(d->op) : "null",
		d->has_op ? "\"" : "", c->me, c->seq, c->step, d->what);
	if (ferror(c->rec))
		return rt_error(RT_EIO, "--record: write error");
	return 0;
}

double coll_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Polls req until it completes, answering the watchdog's questions;
 * past the timeout, the watchdog reports. */
static int wait_req(struct coll *c, const struct call_desc *d,
		    MPI_Request *req)
{
	double deadline = coll_now() + c->timeout_s;
	int done = 0, rc = 0;

	c->state = COLL_WAITING;
	c->cur = d;
	c->cur_since = coll_now();
	for (;;) {
		MPICHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
		if (done)
			break;
		coll_watch_serve(c);
		if (coll_now() > deadline) {
			rc = coll_watch_report(c, d);
			break;
		}
		sched_yield();
	}
	c->state = COLL_RUNNING;
	c->cur = NULL;
	return rc;
}

/* Checks the count, records the call and numbers it. */
static int begin(struct coll *c, const struct call_desc *d)
{
	int rc;

	if (d->count < 0 || d->count > INT_MAX / (c->size[d->k] > 0 ?
						   c->size[d->k] : 1))
		return rt_error(RT_EMPI, "%s of %lld elements over %s: count "
				"out of MPI's range", d->coll, d->count,
				rt_kind_name(d->k));
	rc = record(c, d);
	c->seq++;
	c->kseq[d->k]++;
	return rc;
}

static MPI_Op mpi_op(enum coll_op op)
{
	return op == COLL_MAX ? MPI_MAX : MPI_SUM;
}

/* elem 4: fp32, elem 2: bf16 (moved as 16-bit words: no arithmetic) */
static int host_all_gather(struct coll *c, enum rt_kind k, const char *what,
			   const void *send, void *recv, long long count,
			   int elem)
{
	struct call_desc d = { "all-gather", what, elem == 2 ? "bf16" : "fp32",
			       k, count, elem, 0, COLL_SUM };
	MPI_Datatype t = elem == 2 ? MPI_UINT16_T : MPI_FLOAT;
	MPI_Request req;
	int rc, n = (int)count;

	if (c->size[k] == 1) {
		if (recv != send)
			memmove(recv, send, (size_t)count * (size_t)elem);
		return 0;
	}
	if ((rc = begin(c, &d)))
		return rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Allgather(send, n, t, recv, n, t, c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Iallgather(send, n, t, recv, n, t, c->comm[k], &req));
	return wait_req(c, &d, &req);
}

static int host_reduce_scatter(struct coll *c, enum rt_kind k, const char *what,
			const float *send, float *recv, long long count)
{
	struct call_desc d = { "reduce-scatter", what, "fp32", k, count, 4, 1,
			       COLL_SUM };
	MPI_Request req;
	int rc, n = (int)count;

	if (c->size[k] == 1) {
		if (recv != send)
			memmove(recv, send, (size_t)count * sizeof(float));
		return 0;
	}
	if ((rc = begin(c, &d)))
		return rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Reduce_scatter_block(send, recv, n, MPI_FLOAT,
						  MPI_SUM, c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Ireduce_scatter_block(send, recv, n, MPI_FLOAT, MPI_SUM,
					   c->comm[k], &req));
	return wait_req(c, &d, &req);
}

static int all_reduce(struct coll *c, struct call_desc *d, void *buf,
		      MPI_Datatype type)
{
	MPI_Request req;
	int rc;

	if (c->size[d->k] == 1)
		return 0;
	if ((rc = begin(c, d)))
		return rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)d->count, type,
				       mpi_op(d->op), c->comm[d->k]));
		return 0;
	}
	MPICHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)d->count, type,
				mpi_op(d->op), c->comm[d->k], &req));
	return wait_req(c, d, &req);
}

static int host_all_reduce_f(struct coll *c, enum rt_kind k,
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

static int host_gather(struct coll *c, enum rt_kind k, const char *what,
		const float *send, float *recv, long long count, int root)
{
	struct call_desc d = { "gather", what, "fp32", k, count, 4, 0,
			       COLL_SUM };
	MPI_Request req;
	int rc, n = (int)count;

	if (c->size[k] == 1) {
		if (recv != send)
			memmove(recv, send, (size_t)count * sizeof(float));
		return 0;
	}
	if ((rc = begin(c, &d)))
		return rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Gather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT,
				    root, c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Igather(send, n, MPI_FLOAT, recv, n, MPI_FLOAT, root,
			     c->comm[k], &req));
	return wait_req(c, &d, &req);
}

int coll_gather_i64(struct coll *c, enum rt_kind k, const char *what,
		    const long long *send, long long *recv, long long count,
		    int root)
{
	struct call_desc d = { "gather", what, "int64", k, count, 8, 0,
			       COLL_SUM };
	MPI_Request req;
	int rc, n = (int)count;

	if (c->size[k] == 1) {
		if (recv != send)
			memmove(recv, send, (size_t)count * sizeof(*send));
		return 0;
	}
	if ((rc = begin(c, &d)))
		return rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Gather(send, n, MPI_LONG_LONG, recv, n,
				    MPI_LONG_LONG, root, c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Igather(send, n, MPI_LONG_LONG, recv, n, MPI_LONG_LONG,
			     root, c->comm[k], &req));
	return wait_req(c, &d, &req);
}

int coll_barrier(struct coll *c, enum rt_kind k, const char *what)
{
	struct call_desc d = { "barrier", what, "none", k, 0, 0, 0, COLL_SUM };
	MPI_Request req;
	int rc;

	if (c->size[k] == 1)
		return 0;
	if ((rc = begin(c, &d)))
		return rc;
	if (c->timeout_s <= 0) {
		MPICHECK(MPI_Barrier(c->comm[k]));
		return 0;
	}
	MPICHECK(MPI_Ibarrier(c->comm[k], &req));
	return wait_req(c, &d, &req);
}

#define RCHECK_COLL(cmd)              \
	do {                          \
		int rcc_ = (cmd);     \
		if (rcc_)             \
			return rcc_;  \
	} while (0)

/* ---- host staging for device buffers (--device cuda) --------------------- */

int coll_local_rank(int *local, int *nlocal)
{
	MPI_Comm node;

	MPICHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
				     MPI_INFO_NULL, &node));
	MPICHECK(MPI_Comm_rank(node, local));
	MPICHECK(MPI_Comm_size(node, nlocal));
	MPI_Comm_free(&node);
	return 0;
}

void coll_set_staging(struct coll *c, struct kern_ctx *dev)
{
	c->dev = dev;
}

int coll_use_nccl(struct coll *c, struct kern_ctx *dev)
{
	int rc;

	c->dev = dev;
	rc = coll_nccl_new(c, dev);
	if (rc)
		coll_nccl_free(c);
	return rc;
}

int coll_bench_run(struct coll *c, enum rt_kind k, int reduce_scatter,
		   long long count, float *send, float *recv, int iters,
		   struct coll_bench *out)
{
	double t0, secs;
	int rc;

	if (!c->nccl)
		return rt_error(RT_EDEVICE, "--bench-comm measures the NCCL "
				"path: run with --device cuda and one GPU per "
				"rank");
	if (iters < 1)
		return rt_error(RT_EUSAGE, "--bench-comm needs 1 or more "
				"iterations");
	t0 = coll_now();
	for (int i = 0; i < iters; i++) {
		rc = reduce_scatter ?
		     coll_reduce_scatter(c, k, "bench", send, recv, count) :
		     coll_all_gather(c, k, "bench", send, recv, count);
		if (rc)
			return rc;
	}
	out->runtime_s = (coll_now() - t0) / iters;
	RCHECK_COLL(coll_nccl_plain(c, k, reduce_scatter, count, send, recv,
				    iters, 1, &secs));
	out->plain_s = secs / iters;
	RCHECK_COLL(coll_nccl_plain(c, k, reduce_scatter, count, send, recv,
				    iters, 0, &secs));
	out->pipelined_s = secs / iters;
	return 0;
}

const char *coll_nccl_library(void)
{
	return coll_nccl_version();
}

/* c->hbuf with room for n floats. */
static int host_room(struct coll *c, size_t n)
{
	float *p;

	if (n <= c->hcap)
		return 0;
	p = realloc(c->hbuf, n * sizeof(float));
	if (!p)
		return rt_error(RT_ENOMEM, "out of memory for host staging "
				"(%zu floats)", n);
	c->hbuf = p;
	c->hcap = n;
	return 0;
}

static int kern_fail(int krc, const char *what)
{
	return rt_error(RT_EKERNEL, "host staging of %s: %s", what,
			kern_strerror(krc));
}

#define SKCHECK(cmd, what)                        \
	do {                                      \
		int skc_ = (cmd);                 \
		if (skc_)                         \
			return kern_fail(skc_, what); \
	} while (0)

/* A group of one: a device copy (memmove semantics are not needed: the
 * runtime never passes overlapping distinct buffers). */
static int dev_copy(struct coll *c, const char *what, float *dst,
		    const float *src, long long count)
{
	if (dst != src && count > 0)
		SKCHECK(kern_copy(c->dev, dst, src,
				  (size_t)count * sizeof(float)), what);
	return 0;
}

static int all_gather(struct coll *c, enum rt_kind k, const char *what,
		      const void *send, void *recv, long long count, int elem)
{
	size_t n = (size_t)count * (size_t)elem, g = (size_t)c->size[k];
	char *hs, *hr;

	if (!c->dev)
		return host_all_gather(c, k, what, send, recv, count, elem);
	if (g == 1) {
		if (recv != send && n > 0)
			SKCHECK(kern_copy(c->dev, recv, send, n), what);
		return 0;
	}
	if (c->nccl) {
		struct call_desc d = { "all-gather", what,
				       elem == 2 ? "bf16" : "fp32", k, count,
				       elem, 0, COLL_SUM };

		RCHECK_COLL(begin(c, &d));
		return coll_nccl_all_gather(c, &d, send, recv);
	}
	/* host_room counts floats */
	RCHECK_COLL(host_room(c, (n + g * n + sizeof(float) - 1) /
				 sizeof(float)));
	hs = (char *)c->hbuf;
	hr = hs + n;
	SKCHECK(kern_download(c->dev, hs, send, n), what);
	RCHECK_COLL(host_all_gather(c, k, what, hs, hr, count, elem));
	SKCHECK(kern_upload(c->dev, recv, hr, g * n), what);
	return 0;
}

int coll_all_gather(struct coll *c, enum rt_kind k, const char *what,
		    const float *send, float *recv, long long count)
{
	return all_gather(c, k, what, send, recv, count, 4);
}

int coll_all_gather_start(struct coll *c, int slot, enum rt_kind k,
			  const char *what, const void *send, void *recv,
			  long long count, int elem)
{
	struct coll_pending *q;
	size_t n = (size_t)count * (size_t)elem, g;
	MPI_Datatype t = elem == 2 ? MPI_UINT16_T : MPI_FLOAT;
	const void *sb = send;
	void *rb = recv;

	if (slot < 0 || slot >= COLL_SLOTS || c->pend[slot].active ||
	    (elem != 2 && elem != 4))
		return rt_error(RT_EUSAGE, "all-gather of %s: slot %d is busy "
				"or out of range", what, slot);
	q = &c->pend[slot];
	g = (size_t)c->size[k];
	q->d = (struct call_desc){ "all-gather", what,
				   elem == 2 ? "bf16" : "fp32", k, count, elem,
				   0, COLL_SUM };
	q->recv = NULL;
	if (g == 1) { /* nothing to wait for, nothing recorded */
		if (recv != send && n > 0 && c->dev)
			SKCHECK(kern_copy(c->dev, recv, send, n), what);
		else if (recv != send && n > 0)
			memmove(recv, send, n);
		return 0;
	}
	RCHECK_COLL(begin(c, &q->d));
	if (c->nccl) {
		q->active = q->nccl = 1;
		return coll_nccl_all_gather_start(c, &q->d, send, recv, slot);
	}
	if (c->dev) { /* staged through this slot's own host buffers */
		if (q->hcap < n + g * n) {
			char *p = realloc(q->hbuf, n + g * n);

			if (!p)
				return rt_error(RT_ENOMEM, "out of memory for "
						"host staging");
			q->hbuf = p;
			q->hcap = n + g * n;
		}
		SKCHECK(kern_download(c->dev, q->hbuf, send, n), what);
		sb = q->hbuf;
		rb = q->hbuf + n;
		q->recv = recv;
	}
	MPICHECK(MPI_Iallgather(sb, (int)count, t, rb, (int)count, t,
				c->comm[k], &q->req));
	q->active = 1;
	q->nccl = 0;
	return 0;
}

int coll_all_gather_wait(struct coll *c, int slot)
{
	struct coll_pending *q;
	size_t n;

	if (slot < 0 || slot >= COLL_SLOTS)
		return rt_error(RT_EUSAGE, "all-gather slot %d is out of range",
				slot);
	q = &c->pend[slot];
	if (!q->active)
		return 0;
	q->active = 0;
	if (q->nccl)
		return coll_nccl_wait(c, &q->d, slot);
	if (c->timeout_s > 0) {
		RCHECK_COLL(wait_req(c, &q->d, &q->req));
	} else {
		c->state = COLL_WAITING;
		c->cur = &q->d;
		MPICHECK(MPI_Wait(&q->req, MPI_STATUS_IGNORE));
		c->state = COLL_RUNNING;
		c->cur = NULL;
	}
	n = (size_t)q->d.count * (size_t)q->d.elem;
	if (q->recv)
		SKCHECK(kern_upload(c->dev, q->recv, q->hbuf + n,
				    (size_t)c->size[q->d.k] * n), q->d.what);
	return 0;
}

int coll_all_gather_bf16(struct coll *c, enum rt_kind k, const char *what,
			 const uint16_t *send, uint16_t *recv,
			 long long count)
{
	return all_gather(c, k, what, send, recv, count, 2);
}

int coll_reduce_scatter(struct coll *c, enum rt_kind k, const char *what,
			const float *send, float *recv, long long count)
{
	size_t n = (size_t)count, g = (size_t)c->size[k];
	float *hs, *hr;

	if (!c->dev)
		return host_reduce_scatter(c, k, what, send, recv, count);
	if (g == 1)
		return dev_copy(c, what, recv, send, count);
	if (c->nccl) {
		struct call_desc d = { "reduce-scatter", what, "fp32", k, count,
				       4, 1, COLL_SUM };

		RCHECK_COLL(begin(c, &d));
		return coll_nccl_reduce_scatter(c, &d, send, recv);
	}
	RCHECK_COLL(host_room(c, g * n + n));
	hs = c->hbuf;
	hr = c->hbuf + g * n;
	SKCHECK(kern_download(c->dev, hs, send, g * n * sizeof(float)), what);
	RCHECK_COLL(host_reduce_scatter(c, k, what, hs, hr, count));
	SKCHECK(kern_upload(c->dev, recv, hr, n * sizeof(float)), what);
	return 0;
}

int coll_all_reduce(struct coll *c, enum rt_kind k, const char *what,
		    float *buf, long long count, enum coll_op op)
{
	size_t n = (size_t)count;

	if (!c->dev || c->size[k] == 1)
		return host_all_reduce_f(c, k, what, buf, count, op);
	if (c->nccl) {
		struct call_desc d = { "all-reduce", what, "fp32", k, count, 4,
				       1, op };

		RCHECK_COLL(begin(c, &d));
		return coll_nccl_all_reduce(c, &d, buf);
	}
	RCHECK_COLL(host_room(c, n));
	SKCHECK(kern_download(c->dev, c->hbuf, buf, n * sizeof(float)), what);
	RCHECK_COLL(host_all_reduce_f(c, k, what, c->hbuf, count, op));
	SKCHECK(kern_upload(c->dev, buf, c->hbuf, n * sizeof(float)), what);
	return 0;
}

int coll_gather(struct coll *c, enum rt_kind k, const char *what,
		const float *send, float *recv, long long count, int root)
{
	size_t n = (size_t)count, g = (size_t)c->size[k];
	float *hs, *hr;

	if (!c->dev)
		return host_gather(c, k, what, send, recv, count, root);
	if (g == 1)
		return dev_copy(c, what, recv, send, count);
	if (c->nccl) {
		struct call_desc d = { "gather", what, "fp32", k, count, 4, 0,
				       COLL_SUM };

		RCHECK_COLL(begin(c, &d));
		return coll_nccl_gather(c, &d, send, recv, root);
	}
	RCHECK_COLL(host_room(c, n + g * n));
	hs = c->hbuf;
	hr = c->hbuf + n;
	SKCHECK(kern_download(c->dev, hs, send, n * sizeof(float)), what);
	RCHECK_COLL(host_gather(c, k, what, hs, hr, count, root));
	if (c->rank[k] == root)
		SKCHECK(kern_upload(c->dev, recv, hr, g * n * sizeof(float)),
			what);
	return 0;
}
