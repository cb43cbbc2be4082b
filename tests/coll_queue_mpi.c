/*
 * The watchdog over the NCCL path's pending collectives, without a GPU:
 * two MPI ranks, one TP group of both, issue collectives that coll numbers
 * and records (coll_begin) and that wait in its pending queue
 * (runtime/coll_queue.h) as coll_nccl.c's enqueue puts them there, but
 * completed by a fake device: a rank's collective #0 completes at once,
 * the later ones only when the other rank releases them. Rank 0 (timeout
 * 2 s) waits for its last collective and reports the oldest one that is
 * overdue; rank 1 (no timeout) waits for its own, blocked, answering rank
 * 0's query, until rank 0 releases it. Run by tests/test_coll_queue.c:
 *
 *   mpirun -np 2 coll_queue_mpi missing|arrived
 *
 * missing: rank 0 issues TP a, b, c; rank 1 issues TP a and world w: rank
 * 1 has not arrived at b, and answers that it waits for w on the device.
 * arrived: rank 1 issues TP a, world w, TP b: it has arrived at b (2
 * collectives on the group, as many as b's number there), though rank 0
 * has issued 3 since. Each rank prints "rank R: rc CODE" last.
 *
 * pieces (no watchdog queue: the MPI path on host buffers): an all-reduce
 * of 10 floats that coll_host.c hands MPI in pieces of 3 (coll_mpi_piece),
 * blocking and under the watchdog (--timeout), recorded once each; the
 * sums, the records' count and an MPI count past INT_MAX refused
 * (coll_mpi_count) are printed as "rank R: pieces ..." lines.
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "coll_int.h"
#include "rt_err.h"
#include "rt_plan.h"

#define TAG_RELEASE 7401

static int released;

/* The fake device: #0 at once, the rest once released. */
static int fake_poll(void *arg, const struct coll_issued *is, int slot,
		     int *done)
{
	struct coll *c = arg;
	int flag = 0;

	(void)slot;
	if (!released) {
		MPI_Iprobe(1 - c->me, TAG_RELEASE, MPI_COMM_WORLD, &flag,
			   MPI_STATUS_IGNORE);
		if (flag) {
			MPI_Recv(&released, 1, MPI_INT, 1 - c->me, TAG_RELEASE,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			released = 1;
		}
	}
	*done = is->seq == 0 || released;
	return 0;
}

/* One all-reduce of 10 floats over kind k, as coll_nccl.c's enqueue
 * queues a blocking collective (the event's record left out). */
static int issue(struct coll *c, enum rt_kind k, const char *what)
{
	struct call_desc d = { "all-reduce", what, "fp32", k, 10, 4, 1,
			       COLL_SUM };
	struct coll_issued is;
	int slot, rc;

	if ((rc = coll_begin(c, &d)))
		return rc;
	coll_issued_of(c, &d, &is);
	if ((rc = coll_queue_room(&c->q, &slot)))
		return rc;
	return coll_queue_push(&c->q, &is) < 0 ? RT_EUSAGE : 0;
}

/* World rank me of 2: the TP group and the world are both ranks; every
 * other kind is the rank alone. */
static void two_rank_plan(struct rt_plan *p, int me, int *both, int *self)
{
	memset(p, 0, sizeof(*p));
	p->world = 2;
	p->me = me;
	both[0] = 0, both[1] = 1;
	*self = me;
	for (int k = 0; k < RT_NKINDS; k++) {
		int pair = k == RT_K_TP || k == RT_K_WORLD;

		p->group[k] = (struct rt_group){ pair ? 0 : me, pair ? 2 : 1,
						 pair ? me : 0,
						 pair ? both : self };
	}
}

static int run(struct coll *c, int me, int arrived)
{
	struct coll_queue_ops ops;
	int rc;

	coll_watch_queue_ops(c, &ops);
	ops.poll = fake_poll;
	if ((rc = coll_queue_init(&c->q, 8, c->timeout_s, &ops)))
		return rc;
	coll_set_call(c, "train", 3);
	rc = issue(c, RT_K_TP, "a");
	if (!rc && me == 0)
		rc = issue(c, RT_K_TP, "b");
	if (!rc && me == 0)
		rc = issue(c, RT_K_TP, "c");
	if (!rc && me == 1)
		rc = issue(c, RT_K_WORLD, "w");
	if (!rc && me == 1 && arrived)
		rc = issue(c, RT_K_TP, "b");
	if (!rc)
		rc = coll_wait_last(c);
	if (me == 0) { /* rank 1's device may go on */
		int one = 1;

		MPI_Send(&one, 1, MPI_INT, 1, TAG_RELEASE, MPI_COMM_WORLD);
	}
	return rc;
}

/* MPI's all-reduce calls, counted through MPI's profiling interface
 * (MPI standard, "Profiling Interface": the PMPI_ names reach the
 * library's own). */
static int n_allreduce;

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,
		  MPI_Comm comm)
{
	n_allreduce++;
	return PMPI_Allreduce(s, r, n, t, op, comm);
}

int MPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op,
		   MPI_Comm comm, MPI_Request *req)
{
	n_allreduce++;
	return PMPI_Iallreduce(s, r, n, t, op, comm, req);
}

/* The all-reduce in pieces: "rank R: pieces SUMS OK|BAD, N MPI calls, seq
 * N, big RC". */
static int pieces(struct coll *c, int me)
{
	struct call_desc big = { "all-reduce", "big", "fp32", RT_K_TP,
				 (long long)INT_MAX + 1, 4, 1, COLL_SUM };
	float x[10];
	int ok = 1, rc = 0;

	coll_mpi_piece = 3;
	coll_set_call(c, "train", 1);
	n_allreduce = 0;
	for (int round = 0; round < 2 && !rc; round++) {
		c->timeout_s = round ? 30 : 0;
		for (int i = 0; i < 10; i++)
			x[i] = (float)(i + 100 * me + round);
		rc = coll_all_reduce(c, RT_K_TP, "x", x, 10, COLL_SUM);
		/* ranks 0 and 1: i + round + (i + 100 + round) */
		for (int i = 0; i < 10 && !rc; i++)
			ok &= x[i] == (float)(2 * i + 100 + 2 * round);
	}
	printf("rank %d: pieces sums %s, %d MPI calls, seq %lld, big %d\n",
	       me, ok ? "OK" : "BAD", n_allreduce, c->seq,
	       coll_mpi_count(c, &big, big.count));
	/* coll_begin alone (nothing issued): 2^28 elements over a group of
	 * 8 (TP 8's activations of 32768 tokens x 8192) pass, which MPI's
	 * int once capped at INT_MAX / 8; past 2^50 / 8 they do not */
	c->size[RT_K_CP] = 8;
	{
		struct call_desc act = { "all-reduce", "act", "fp32", RT_K_CP,
					 1LL << 28, 4, 1, COLL_SUM };
		int r1 = coll_begin(c, &act);

		act.count = (1LL << 47) + 1;
		printf("rank %d: begin %d %d\n", me, r1, coll_begin(c, &act));
	}
	c->size[RT_K_CP] = 1;
	return rc;
}

int main(int argc, char **argv)
{
	struct rt_plan p;
	struct coll *c = NULL;
	struct coll_opts o = { 0, NULL };
	int me = 0, size = 0, both[2], self, rc;

	if (coll_mpi_init(&argc, &argv, &me, &size))
		return 2;
	rt_err_set_rank(me);
	if (size != 2 || argc != 2 || (strcmp(argv[1], "missing") &&
				       strcmp(argv[1], "arrived") &&
				       strcmp(argv[1], "pieces"))) {
		fprintf(stderr, "usage: mpirun -np 2 coll_queue_mpi "
			"missing|arrived|pieces\n");
		coll_mpi_finalize();
		return 2;
	}
	two_rank_plan(&p, me, both, &self);
	o.timeout_s = me == 0 ? 2 : 0;
	rc = coll_new(&c, &p, &o);
	if (!rc && !strcmp(argv[1], "pieces"))
		rc = pieces(c, me);
	else if (!rc)
		rc = run(c, me, !strcmp(argv[1], "arrived"));
	fflush(stderr);
	/* both have waited: rank 0's report is out before rank 1 prints */
	MPI_Barrier(MPI_COMM_WORLD);
	printf("rank %d: rc %d\n", me, rc);
	fflush(stdout);
	/* rank 0's b and c never complete: dropped */
	coll_free(c);
	coll_mpi_finalize();
	return 0;
}
