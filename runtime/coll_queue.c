/*
 * coll_queue: the pending collectives of the NCCL path, bounded, retired
 * in order, with the deadline of the oldest (the design: coll_queue.h).
 */
#include "coll_queue.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_err.h"

int coll_queue_parse(const char *mode, int *depth)
{
	char *end;
	long n;

	if (!strcmp(mode ? mode : "", "queue")) {
		*depth = COLL_QUEUE_DEPTH;
		return 0;
	}
	if (!mode || !*mode || !strcmp(mode, "sync")) {
		*depth = 0;
		return 0;
	}
	if (!strncmp(mode, "queue:", 6)) {
		n = strtol(mode + 6, &end, 10);
		if (end != mode + 6 && !*end && n >= 1 && n <= COLL_QUEUE_MAX) {
			*depth = (int)n;
			return 0;
		}
	}
	return rt_error(RT_EUSAGE, "GTPLAN_WATCH='%s': want 'sync', 'queue' "
			"or 'queue:N' with 1 <= N <= %d", mode, COLL_QUEUE_MAX);
}

int coll_queue_init(struct coll_queue *q, int cap, double timeout_s,
		    const struct coll_queue_ops *ops)
{
	memset(q, 0, sizeof(*q));
	if (cap <= 0)
		return 0;
	q->e = calloc((size_t)cap, sizeof(*q->e));
	if (!q->e)
		return rt_error(RT_ENOMEM, "out of memory for the pending "
				"collectives");
	q->ops = *ops;
	q->cap = cap;
	q->timeout_s = timeout_s;
	return 0;
}

void coll_queue_release(struct coll_queue *q)
{
	free(q->e);
	memset(q, 0, sizeof(*q));
}

static struct coll_queue_entry *oldest(struct coll_queue *q)
{
	return q->n ? &q->e[q->head] : NULL;
}

/* Retires the entries found complete, oldest first; the next one's clock
 * starts when its predecessor was seen complete (coll_queue.h). */
static int retire(struct coll_queue *q)
{
	struct coll_queue_entry *e;
	int done, rc;

	while ((e = oldest(q))) {
		double t;

		done = 0;
		rc = q->ops.poll(q->ops.arg, &e->is, q->head, &done);
		if (rc)
			return rc;
		if (!done)
			return 0;
		t = q->ops.now(q->ops.arg);
		q->head = (q->head + 1) % q->cap;
		q->n--;
		q->retired++;
		if ((e = oldest(q)))
			e->since = t > e->issued ? t : e->issued;
	}
	return 0;
}

int coll_queue_poll(struct coll_queue *q)
{
	struct coll_queue_entry *e;
	struct coll_issued is;
	double waited;
	int rc;

	if (!q->cap)
		return 0;
	if ((rc = retire(q)))
		return rc;
	e = oldest(q);
	if (!e || q->timeout_s <= 0)
		return 0;
	waited = q->ops.now(q->ops.arg) - e->since;
	if (waited <= q->timeout_s)
		return 0;
	/* a copy: the report answers queries, which may retire entries */
	is = e->is;
	coll_issued_fix(&is);
	return q->ops.report(q->ops.arg, &is, waited);
}

int coll_queue_wait(struct coll_queue *q, long long ticket)
{
	int rc = 0;

	if (!q->cap)
		return 0;
	q->blocked = 1;
	while (ticket >= q->retired) {
		if ((rc = coll_queue_poll(q)) || ticket < q->retired)
			break;
		q->ops.serve(q->ops.arg);
		sched_yield();
	}
	q->blocked = 0;
	return rc;
}

int coll_queue_room(struct coll_queue *q, int *slot)
{
	int rc;

	*slot = 0;
	if (!q->cap)
		return rt_error(RT_EUSAGE, "no queue of pending collectives");
	if (q->n == q->cap && (rc = coll_queue_wait(q, q->retired)))
		return rc;
	*slot = (q->head + q->n) % q->cap;
	return 0;
}

long long coll_queue_push(struct coll_queue *q, const struct coll_issued *is)
{
	struct coll_queue_entry *e;

	if (!q->cap || q->n == q->cap)
		return -1; /* coll_queue_room first */
	e = &q->e[(q->head + q->n) % q->cap];
	e->is = *is;
	coll_issued_fix(&e->is);
	e->issued = q->ops.now(q->ops.arg);
	/* first in line: nothing ahead of it to wait for */
	e->since = e->issued;
	q->n++;
	return q->retired + q->n - 1;
}

long long coll_queue_last(const struct coll_queue *q)
{
	return q->retired + q->n - 1;
}

int coll_queue_pending(const struct coll_queue *q)
{
	return q->n;
}

int coll_queue_where(struct coll_queue *q, char *buf, size_t len)
{
	const struct coll_queue_entry *e;
	const struct coll_issued *is;
	double s;

	if (len)
		buf[0] = '\0';
	if (!q->cap)
		return 0;
	/* a failing poll (said by the backend) leaves the entries as they
	 * are: still pending; the wait that polls next returns it */
	(void)retire(q);
	if (!(e = oldest(q)))
		return 0;
	is = &e->is;
	s = q->ops.now(q->ops.arg) - e->since;
	if (q->blocked)
		snprintf(buf, len, "waiting %.0f s in collective #%lld of '%s' "
			 "(step %lld): the %s of %s over %s group %lld, on the "
			 "device (%d pending)", s, is->seq, is->call, is->step,
			 is->d.coll, is->what, is->group, is->group_index,
			 q->n);
	else
		snprintf(buf, len, "its collective #%lld of '%s' (step %lld), "
			 "the %s of %s over %s group %lld, has not completed on "
			 "the device after %.0f s (%d pending)", is->seq,
			 is->call, is->step, is->d.coll, is->what, is->group,
			 is->group_index, s, q->n);
	return q->n;
}
