/*
 * coll_queue: the collectives a rank has enqueued on the device and not yet
 * seen complete, oldest first, at most `cap` of them (the NCCL path,
 * coll_nccl.c). No MPI and no CUDA here: the backend's completion test,
 * the watchdog and the clock come in as callbacks (struct coll_queue_ops),
 * so tests/test_coll_queue.c drives the queue with fake completions and a
 * fake clock.
 *
 * Why: a blocking NCCL collective used to end with the host polling the
 * kernels' stream until it was idle, so the host enqueued nothing while
 * the device drained everything up to the collective, and with TP or GTP
 * collectives in every layer the device idled while the host launched the
 * next kernels. Now the collective returns once enqueued: an event after
 * it marks its end (the backend's event of the queue slot it takes) and
 * it is pushed here with what the watchdog names (struct coll_issued) and
 * when it was issued. The host stops only where it must:
 *  - coll_queue_room on a full queue waits for the oldest entry;
 *  - coll_queue_wait(ticket) waits for one collective (and so for every
 *    one before it: they retire in order) where the host reads a result
 *    or waits for the device anyway: the step's loss download, a dump or
 *    export's download, the run's end (coll.h: coll_wait_last,
 *    coll_finish).
 * Every other collective call polls (coll_queue_poll): the entries found
 * complete retire, oldest first; an entry that completed behind one that
 * has not stays until that one has (in order: the record, the watchdog's
 * numbering and the tickets stay those of issue). Blocked, the host calls
 * ops.serve between polls, so that it keeps answering its peers' watchdog
 * queries (coll_watch_serve), as coll_watch_wait does.
 *
 * The deadline: the oldest pending collective is overdue timeout_s after
 * the moment it could have started: its issue, or the moment its
 * predecessor in the queue was seen complete, whichever is later (`since`).
 * From its issue alone would be wrong: the host runs up to a queue ahead
 * of the device, so a collective issued while the device still works
 * through earlier ones would count their time as its own, and a slow but
 * healthy step would be stopped. With one collective in flight at a time
 * the rule is the synchronous one (the clock starts at the issue: the
 * predecessor was waited for before). A completion is seen at a poll, not
 * when it happened, so the clock may start late, never early: no stop
 * comes before timeout_s of the collective's own time. An overdue entry
 * is reported (ops.report: coll_watch_report, naming its call, step,
 * number and group as the synchronous report does) and the poll or wait
 * returns the report's code (RT_ETIMEOUT). An entry found complete is
 * retired, never reported, however late the poll.
 *
 * The answer to a peer: coll_queue_where describes the oldest collective
 * not yet seen complete, and whether the host is blocked on it.
 *
 * Ownership: the queue owns its entries, copies (the label and the call's
 * name are copied: callers reuse their label buffers, rt_label); ops.arg
 * stays the caller's. coll_queue_release drops pending entries without
 * waiting (teardown after a failure: their device work may never end).
 */
#ifndef GTPLAN_COLL_QUEUE_H
#define GTPLAN_COLL_QUEUE_H

#include <stddef.h>

#include "coll.h"

/* What one collective is, for the record and the watchdog. */
struct call_desc {
	const char *coll, *what, *dtype;
	enum rt_kind k;
	long long count;
	int elem, has_op;
	enum coll_op op;
};

/* Point-to-point (coll_p2p.c): coll "send" or "recv"; the peer's place is
 * c->peer while it is recorded and waited for. */
static inline int coll_is_p2p(const struct call_desc *d)
{
	return d->coll[0] == 's' ? d->coll[1] == 'e' : d->coll[0] == 'r' &&
	       d->coll[1] == 'e' && d->coll[2] == 'c';
}

/* One collective as issued: everything its timeout report and the
 * watchdog's answers name. d.what points at what[] (coll_issued_fix after
 * a copy of the struct). */
struct coll_issued {
	struct call_desc d;
	char what[64], call[64];
	const char *group;      /* the kind's name (rt_kind_name: static) */
	long long group_index;
	long long seq;          /* this rank's collective number, from 0 */
	long long step;
	long long mine;         /* collectives issued on the group with this
				   one (point-to-point: lines with the
				   peer), as the members' answers count */
	int peer;               /* point-to-point: the peer's place */
};

/* d.what back to the struct's own copy. */
static inline void coll_issued_fix(struct coll_issued *is)
{
	is->d.what = is->what;
}

struct coll_queue_ops {
	/* Sets *done once entry `is` (queue slot `slot`) has completed;
	 * never blocks. Non-zero: a failure (a runtime code), returned. */
	int (*poll)(void *arg, const struct coll_issued *is, int slot,
		    int *done);
	/* Between polls while blocked: answer the peers (never blocks). */
	void (*serve)(void *arg);
	/* `is` is overdue (waited s since it could start): report it and
	 * return the code the wait ends with (RT_ETIMEOUT). */
	int (*report)(void *arg, const struct coll_issued *is, double waited);
	double (*now)(void *arg);
	void *arg;
};

struct coll_queue_entry {
	struct coll_issued is;
	double issued;          /* when it was pushed */
	double since;           /* when it could start: the deadline's origin */
};

struct coll_queue {
	struct coll_queue_ops ops;
	double timeout_s;       /* <= 0: never overdue */
	int cap;                /* 0: no queue (everything is a no-op) */
	int head, n;            /* the ring: n entries from e[head] */
	int blocked;            /* inside coll_queue_wait (for the answers) */
	long long retired;      /* tickets below it have retired */
	struct coll_queue_entry *e;
};

/* The queue's depth under GTPLAN_WATCH=queue, and the most it
 * takes: one event per slot; the host runs at most this many collectives
 * ahead of the device. */
#define COLL_QUEUE_DEPTH 32
#define COLL_QUEUE_MAX 4096

/* GTPLAN_WATCH's value: "queue": COLL_QUEUE_DEPTH; "queue:N" (1 <= N <=
 * COLL_QUEUE_MAX): N; NULL, "" or "sync": 0 (each collective waited for
 * at once: the default until the queue has run on two GPUs,
 * tests/runtime_parity_gpu.sh). Else RT_EUSAGE, said. */
int coll_queue_parse(const char *mode, int *depth);

/* cap 0 leaves q inert. 0 or RT_ENOMEM. */
int coll_queue_init(struct coll_queue *q, int cap, double timeout_s,
		    const struct coll_queue_ops *ops);
/* Frees q; pending entries are dropped, not waited for. */
void coll_queue_release(struct coll_queue *q);

/* Room for one more entry: while the queue is full, waits for its oldest
 * (coll_queue_wait). *slot: the slot the next push takes (its event is
 * the backend's to record before the push). */
int coll_queue_room(struct coll_queue *q, int *slot);
/* After coll_queue_room: appends a copy of is (issued now) and returns
 * its ticket (0, 1, ... in push order). */
long long coll_queue_push(struct coll_queue *q, const struct coll_issued *is);
/* Non-blocking: retires what has completed, oldest first, then reports
 * the oldest if it is overdue. 0, the poll's failure or the report's. */
int coll_queue_poll(struct coll_queue *q);
/* Blocks until ticket has retired (and every one before it), serving
 * between polls; ends early with an overdue oldest entry's report or a
 * poll's failure. A ticket already retired (or none: -1) returns 0. */
int coll_queue_wait(struct coll_queue *q, long long ticket);
/* The last ticket pushed (-1: none). */
long long coll_queue_last(const struct coll_queue *q);
int coll_queue_pending(const struct coll_queue *q);

/* Retires what has completed (never reports), then writes the oldest
 * pending collective into buf: "waiting N s in collective #S of 'CALL'
 * (step T): the COLL of WHAT over GROUP group I, on the device (P pending)"
 * while blocked, else "its collective #S of 'CALL' (step T), the COLL of
 * WHAT over GROUP group I, has not completed on the device after N s (P
 * pending)"; N counts from `since`. Returns the number pending (0: buf
 * is ""). */
int coll_queue_where(struct coll_queue *q, char *buf, size_t len);

#endif
