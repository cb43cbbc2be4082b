/*
 * coll: MPI start-up, the communicators per plan group, and what every
 * collective shares: its number and its --record line (see coll.h). The
 * collectives themselves: coll_host.c (MPI on host buffers), coll_stage.c
 * (device buffers: host staging, NCCL, the prefetch slots).
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
#include "rt_limits.h"

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
	/* a middle stage's embedding group is itself alone: a colour of its
	 * own, past every pipeline's */
	int color = k == RT_K_EMB && g->n == 1 ? p->world + p->me :
		    (int)g->index;

	if (k == RT_K_WORLD)
		MPICHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c->comm[k]));
	else
		MPICHECK(MPI_Comm_split(MPI_COMM_WORLD, color, g->pos,
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
	/* drops the pending collectives (coll_queue_release) before the
	 * events they are polled with: after a failure their device work
	 * may never end, and a finished run has drained them */
	coll_nccl_free(c);
	coll_watch_release(c);
	for (int k = 0; k < RT_NKINDS; k++)
		if (c->comm[k] != MPI_COMM_NULL)
			MPI_Comm_free(&c->comm[k]);
	if (c->rec)
		fclose(c->rec);
	free(c->hbuf);
	free(c->p2p.hbuf);
	for (int k = 0; k < RT_NKINDS; k++)
		free(c->p2p_n[k]);
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
	int rc = coll_watch_drain(c);

	if (rc)
		return rc;
	c->state = COLL_DONE;
	return meet_at_end(c);
}

int coll_wait_last(struct coll *c)
{
	return coll_watch_drain(c);
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

/* ---- issuing: numbering and recording ---------------------------------- */

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
		"\"group_index\":%lld,\"op\":%s%s%s,", d->count * d->elem, c->call,
		d->coll, d->count, d->dtype, rt_kind_name(d->k), c->index[d->k],
		d->has_op ? "\"" : "", d->has_op ? op_name(d->op) : "null",
		d->has_op ? "\"" : "");
	/* point-to-point lines name the other member (its place) */
	if (coll_is_p2p(d))
		fprintf(c->rec, "\"peer\":%d,", c->peer);
	fprintf(c->rec, "\"rank\":%d,\"seq\":%lld,\"step\":%lld,\"what\":"
		"\"%s\"}\n", c->me, c->seq, c->step, d->what);
	/* with --timeout a run may be stopped (MPI_Abort) while this rank
	 * waits: the record must then already hold the collective it waits
	 * in, so each line goes out before the collective is issued */
	if (c->timeout_s > 0)
		fflush(c->rec);
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

void coll_issued_of(const struct coll *c, const struct call_desc *d,
		    struct coll_issued *is)
{
	int p2p = coll_is_p2p(d);

	memset(is, 0, sizeof(*is));
	is->d = *d;
	snprintf(is->what, sizeof(is->what), "%s", d->what);
	snprintf(is->call, sizeof(is->call), "%s", c->call);
	coll_issued_fix(is);
	is->group = rt_kind_name(d->k);
	is->group_index = c->index[d->k];
	is->seq = c->seq - 1;
	is->step = c->step;
	is->peer = p2p ? c->peer : -1;
	is->mine = p2p ? coll_p2p_count(c, d->k, c->peer) : c->kseq[d->k];
}

/* Checks the count, records the call and numbers it. The count only has
 * to keep the buffers' sizes (count x group x 8 bytes) far from
 * overflow here: NCCL takes 64-bit counts, and the MPI paths check
 * MPI's int where they pass it (coll_mpi_count). */
int coll_begin(struct coll *c, const struct call_desc *d)
{
	int rc;

	/* every collective call polls the pending ones first: those found
	 * complete retire, an overdue one is reported (coll_queue.h) */
	if ((rc = coll_queue_poll(&c->q)))
		return rc;
	if (d->count < 0 || d->count > RT_MAX_ELEMS / (c->size[d->k] > 0 ?
							c->size[d->k] : 1))
		return rt_error(RT_EMPI, "%s of %lld elements over %s: count "
				"out of gtplan-run's range (2^50 elements a "
				"group)", d->coll, d->count,
				rt_kind_name(d->k));
	rc = record(c, d);
	c->seq++;
	c->kseq[d->k]++;
	return rc;
}

int coll_mpi_count(const struct coll *c, const struct call_desc *d,
		   long long count)
{
	if (count <= INT_MAX)
		return 0;
	return rt_error(RT_EMPI, "%s '%s' over %s passes MPI %lld elements "
			"in one call, past its int counts (%d)%s", d->coll,
			d->what, rt_kind_name(d->k), count, INT_MAX,
			c->dev ? ": give each rank a GPU of its own, where "
			"the collectives go over NCCL's 64-bit counts" :
			": split the work over more ranks of that group");
}
