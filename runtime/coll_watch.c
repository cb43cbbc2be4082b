/*
 * coll_watch: the watchdog. A collective that has not completed after the
 * timeout asks each member of its group where it is, over a duplicate of
 * the world that only the watchdog uses, and reports who arrived and who
 * did not, with where each of those is: waiting in another collective,
 * computing, never called by the driver, finished, or silent (stopped,
 * dead, or stuck outside a collective).
 *
 * Every rank answers while it waits anywhere (inside a collective, at the
 * end of the run, idle because the driver never called it), so the ranks
 * that did not arrive can say why. A member has arrived when it has issued
 * at least as many collectives on the group as the reporter.
 *
 * On the NCCL path collectives are pending on the device after their call
 * (coll_queue.h): the report of one names it as issued (its number, call,
 * step and count on the group, struct coll_issued), and an answer adds the
 * oldest of the rank's collectives not yet complete on the device (or says
 * the host is blocked on it). A wait here also polls the pending ones: the
 * oldest, older than the collective waited for, is reported first when it
 * is overdue.
 *
 * Messages are small fixed structs of bytes (a homogeneous job is
 * assumed, as MPI_BYTE requires).
 */
#include "coll_int.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_err.h"

enum { TAG_QUERY = 7101, TAG_ANSWER = 7102 };

/* How long the reporter waits for its peers' answers (seconds). */
#define WATCH_ANSWER_S 3.0

struct wd_query {
	int kind;
	long long kseq; /* the reporter's count on the group */
	int p2p;        /* 1: kseq counts the reporter's point-to-point
			   lines with the asked member, who answers with
			   its count with the reporter */
};

struct wd_answer {
	int rank, state;
	long long kseq; /* the member's count on the asked group */
	char where[768];
};

int coll_watch_init(struct coll *c)
{
	c->state = COLL_RUNNING;
	MPICHECK(MPI_Comm_dup(MPI_COMM_WORLD, &c->wd));
	return 0;
}

void coll_watch_release(struct coll *c)
{
	if (c->wd != MPI_COMM_NULL)
		MPI_Comm_free(&c->wd);
}

/* This rank's place, in words: where the host is, and on the NCCL path
 * the oldest of its collectives not yet complete on the device (the one
 * its peers wait with, when they do). */
static void describe(struct coll *c, char *buf, size_t len)
{
	const struct coll_issued *is = &c->cur_is;
	char dev[320];
	int pending = coll_queue_where(&c->q, dev, sizeof(dev));

	if (c->state == COLL_WAITING && c->cur) {
		snprintf(buf, len, "waiting %.0f s in collective #%lld of "
			 "'%s' (step %lld): the %s of %s over %s group %lld%s%s",
			 coll_now() - c->cur_since, is->seq, is->call,
			 is->step, is->d.coll, is->what, is->group,
			 is->group_index, pending ? "; " : "", dev);
		return;
	}
	switch (c->state) {
	case COLL_IDLE:
		snprintf(buf, len, "never called: %s", c->idle_why);
		break;
	case COLL_DONE:
		snprintf(buf, len, "finished its work, waiting for the end "
			 "of the run");
		break;
	default:
		if (pending && c->q.blocked) {
			snprintf(buf, len, "%s", dev);
			break;
		}
		snprintf(buf, len, "computing in '%s' (step %lld) after its "
			 "collective #%lld%s%s", c->call, c->step, c->seq - 1,
			 pending ? "; " : "", dev);
		break;
	}
}

int coll_watch_wait(struct coll *c, const struct call_desc *d,
		    coll_poll_fn poll, void *arg)
{
	double deadline = coll_now() + c->timeout_s;
	int done = 0, rc;

	c->state = COLL_WAITING;
	c->cur = d;
	coll_issued_of(c, d, &c->cur_is);
	c->cur_since = coll_now();
	for (;;) {
		rc = poll(c, d, arg, &done);
		if (rc || done)
			break;
		/* a collective still pending on the device is older than
		 * this one: its deadline comes first (coll_queue.h) */
		if ((rc = coll_queue_poll(&c->q)))
			break;
		coll_watch_serve(c);
		if (c->timeout_s > 0 && coll_now() > deadline) {
			rc = coll_watch_report(c, &c->cur_is);
			break;
		}
		sched_yield();
	}
	c->state = COLL_RUNNING;
	c->cur = NULL;
	return rc;
}

static void queue_serve(void *arg)
{
	coll_watch_serve(arg);
}

static int queue_report(void *arg, const struct coll_issued *is,
			double waited)
{
	(void)waited;
	return coll_watch_report(arg, is);
}

static double queue_now(void *arg)
{
	(void)arg;
	return coll_now();
}

void coll_watch_queue_ops(struct coll *c, struct coll_queue_ops *ops)
{
	ops->serve = queue_serve;
	ops->report = queue_report;
	ops->now = queue_now;
	ops->arg = c;
}

int coll_watch_drain(struct coll *c)
{
	return coll_queue_wait(&c->q, coll_queue_last(&c->q));
}

/* World rank r's place in my group of kind k (-1: not a member). */
static int place_of(const struct coll *c, int k, int r)
{
	for (int i = 0; i < c->size[k]; i++)
		if (c->members[k][i] == r)
			return i;
	return -1;
}

void coll_watch_serve(struct coll *c)
{
	for (;;) {
		struct wd_query q;
		struct wd_answer a;
		MPI_Status st;
		int flag = 0;

		if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_QUERY, c->wd, &flag, &st) !=
		    MPI_SUCCESS || !flag)
			return;
		if (MPI_Recv(&q, (int)sizeof(q), MPI_BYTE, st.MPI_SOURCE,
			     TAG_QUERY, c->wd, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return;
		memset(&a, 0, sizeof(a));
		a.rank = c->me;
		a.state = (int)c->state;
		a.kseq = (unsigned)q.kind < RT_NKINDS ? c->kseq[q.kind] : -1;
		if (q.p2p && a.kseq >= 0)
			a.kseq = coll_p2p_count(c, (enum rt_kind)q.kind,
						place_of(c, q.kind,
							 st.MPI_SOURCE));
		describe(c, a.where, sizeof(a.where));
		/* small enough to go eagerly; the asker is receiving */
		MPI_Send(&a, (int)sizeof(a), MPI_BYTE, st.MPI_SOURCE,
			 TAG_ANSWER, c->wd);
	}
}

/* One member's line of the report (p2p: of a point-to-point line). */
static void member_line(const struct coll *c, long long mine, int p2p,
			int member, const struct wd_answer *a, int *arrived)
{
	if (!a) {
		fprintf(stderr, "gtplan-run: rank %d:   rank %d: no answer "
			"within %.0f s: stopped, dead, or busy outside any "
			"collective\n", c->me, member, WATCH_ANSWER_S);
		return;
	}
	if (a->kseq >= mine) {
		(*arrived)++;
		fprintf(stderr, "gtplan-run: rank %d:   rank %d: arrived (%s)"
			"\n", c->me, member, a->where);
		return;
	}
	fprintf(stderr, "gtplan-run: rank %d:   rank %d: NOT ARRIVED: it has "
		"issued %lld %s, and this one is the %s #%lld; it is %s\n",
		c->me, member, a->kseq, p2p ?
		"point-to-point lines with this rank" :
		"collectives on this group", p2p ? "pair's" : "group's",
		mine - 1, a->where);
}

int coll_watch_report(struct coll *c, const struct coll_issued *is)
{
	/* a send or receive asks its peer only */
	const struct call_desc *d = &is->d;
	int p2p = coll_is_p2p(d);
	int n = p2p ? 1 : c->size[d->k], got = 0, arrived = 1, asked = 0;
	const int *mem = c->members[d->k] + (p2p ? is->peer : 0);
	struct wd_answer *ans = calloc((size_t)n, sizeof(*ans));
	char *have = calloc((size_t)n, 1);
	long long mine = is->mine;
	struct wd_query q = { (int)d->k, mine, p2p };
	double deadline;

	rt_error(RT_ETIMEOUT, "collective #%lld of call '%s' (step %lld), the "
		 "%s of %lld elements of %s over %s group %lld, did not "
		 "complete within %g s (the %s #%lld); asking %s %d where "
		 "%s", is->seq, is->call, is->step, d->coll, d->count,
		 is->what, is->group, is->group_index, c->timeout_s,
		 p2p ? "pair's" : "group's", mine - 1,
		 p2p ? "its peer, rank" : "its members,",
		 p2p ? *mem : n, p2p ? "it is" : "they are");
	if (!ans || !have) {
		free(ans);
		free(have);
		return RT_ETIMEOUT;
	}
	for (int i = 0; i < n; i++)
		if (mem[i] != c->me && MPI_Send(&q, (int)sizeof(q), MPI_BYTE,
						mem[i], TAG_QUERY, c->wd) ==
		    MPI_SUCCESS)
			asked++;
	deadline = coll_now() + WATCH_ANSWER_S;
	while (got < asked && coll_now() < deadline) {
		struct wd_answer a;
		MPI_Status st;
		int flag = 0;

		coll_watch_serve(c); /* others may be asking me */
		if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ANSWER, c->wd, &flag,
			       &st) != MPI_SUCCESS || !flag) {
			sched_yield();
			continue;
		}
		if (MPI_Recv(&a, (int)sizeof(a), MPI_BYTE, st.MPI_SOURCE,
			     TAG_ANSWER, c->wd, MPI_STATUS_IGNORE) !=
		    MPI_SUCCESS)
			break;
		a.where[sizeof(a.where) - 1] = '\0';
		for (int i = 0; i < n; i++)
			if (mem[i] == a.rank && !have[i]) {
				ans[i] = a;
				have[i] = 1;
				got++;
			}
	}
	for (int i = 0, shown = 0; i < n; i++) {
		if (mem[i] == c->me)
			continue;
		/* every member that did not arrive is named; arrivals are
		 * summarised past the first few */
		if (have[i] && ans[i].kseq >= mine &&
		    shown >= COLL_REPORT_MEMBERS) {
			arrived++;
			continue;
		}
		member_line(c, mine, p2p, mem[i], have[i] ? &ans[i] : NULL,
			    &arrived);
		shown++;
	}
	fprintf(stderr, "gtplan-run: rank %d: watchdog: %d of %d members of "
		"%s group %lld arrived (this rank included); %d did not "
		"answer\n", c->me, arrived, n + p2p, is->group,
		is->group_index, asked - got);
	free(ans);
	free(have);
	return RT_ETIMEOUT;
}
