/*
 * The NCCL path's pending collectives (runtime/coll_queue.c) on the CPU:
 * a fake backend whose collective #i completes when the fake clock
 * reaches done_at[i], a fake clock that the host's waiting advances
 * (each serve, as the watchdog's answering between polls, moves it by
 * `tick`), and a report that remembers what it named. Covers in-order
 * retirement, a full queue blocking until its oldest completes, the
 * timeout naming the oldest pending collective, the deadline rule (from
 * the issue or the predecessor's seen completion, whichever is later),
 * waiting for one collective, teardown with pending entries, the answer
 * to a peer's query, and GTPLAN_WATCH's values. Then the watchdog over the
 * queue across two MPI ranks (tests/coll_queue_mpi.c under mpirun): the
 * report names the oldest overdue collective as issued, and the peer's
 * answer says whether it arrived (by its count on the group) and which of
 * its own collectives it waits for on the device.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_queue.h"
#include "harness.h"
#include "rt_err.h"

#define NCOLL 16
#define NEVER 1e30

struct fake {
	double t, tick;
	double done_at[NCOLL];
	int polls, serves, reports, fail_at; /* fail_at: poll of that seq fails */
	struct coll_issued named;
	double waited;
	int retired_order[NCOLL], nretired;
	char seen_where[512]; /* coll_queue_where from inside a serve */
	struct coll_queue *q;
};

static int fake_poll(void *arg, const struct coll_issued *is, int slot,
		     int *done)
{
	struct fake *f = arg;

	(void)slot;
	f->polls++;
	if (is->seq == f->fail_at)
		return RT_EDEVICE;
	*done = f->t >= f->done_at[is->seq];
	if (*done)
		f->retired_order[f->nretired++] = (int)is->seq;
	return 0;
}

static void fake_serve(void *arg)
{
	struct fake *f = arg;

	f->serves++;
	if (f->q && f->serves == 1)
		coll_queue_where(f->q, f->seen_where, sizeof(f->seen_where));
	f->t += f->tick;
}

static int fake_report(void *arg, const struct coll_issued *is, double waited)
{
	struct fake *f = arg;

	f->reports++;
	f->named = *is;
	coll_issued_fix(&f->named);
	f->waited = waited;
	return RT_ETIMEOUT;
}

static double fake_now(void *arg)
{
	return ((struct fake *)arg)->t;
}

static void fake_init(struct fake *f, struct coll_queue *q, int cap,
		      double timeout_s)
{
	struct coll_queue_ops ops = { fake_poll, fake_serve, fake_report,
				      fake_now, f };

	memset(f, 0, sizeof(*f));
	f->tick = 1;
	f->fail_at = -1;
	for (int i = 0; i < NCOLL; i++)
		f->done_at[i] = NEVER;
	ck_assert_int_eq(coll_queue_init(q, cap, timeout_s, &ops), 0);
}

/* Collective #seq: the all-reduce of `what` over dp_cp group 1, the
 * group's #seq, in call 'train' step 3. */
static void issue(struct coll_queue *q, long long seq, const char *what)
{
	struct coll_issued is;
	int slot = -1;

	memset(&is, 0, sizeof(is));
	is.d = (struct call_desc){ "all-reduce", NULL, "fp32", RT_K_DP_CP, 10,
				   4, 1, COLL_SUM };
	snprintf(is.what, sizeof(is.what), "%s", what);
	snprintf(is.call, sizeof(is.call), "train");
	coll_issued_fix(&is);
	is.group = "dp_cp";
	is.group_index = 1;
	is.seq = seq;
	is.step = 3;
	is.mine = seq + 1;
	is.peer = -1;
	ck_assert_int_eq(coll_queue_room(q, &slot), 0);
	ck_assert_int_eq(slot, (int)(seq % q->cap));
	ck_assert_int_eq(coll_queue_push(q, &is), seq);
}

START_TEST(retires_in_order)
{
	struct coll_queue q;
	struct fake f;

	fake_init(&f, &q, 8, 0);
	f.done_at[0] = 5, f.done_at[1] = 1, f.done_at[2] = 2;
	issue(&q, 0, "a");
	issue(&q, 1, "b");
	issue(&q, 2, "c");
	f.t = 3; /* #1 and #2 are done, #0 is not: nothing retires */
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	ck_assert_int_eq(coll_queue_pending(&q), 3);
	ck_assert_int_eq(f.nretired, 0);
	f.t = 5;
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	ck_assert_int_eq(coll_queue_pending(&q), 0);
	ck_assert_int_eq(f.nretired, 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(f.retired_order[i], i);
	/* tickets go on from where they were; the ring wraps */
	ck_assert_int_eq(coll_queue_last(&q), 2);
	for (int i = 3; i < 12; i++) {
		f.done_at[i] = 0;
		issue(&q, i, "d");
		ck_assert_int_eq(coll_queue_poll(&q), 0);
	}
	ck_assert_int_eq(coll_queue_pending(&q), 0);
	ck_assert_int_eq(f.serves, 0); /* nothing ever blocked */
	coll_queue_release(&q);
}
END_TEST

START_TEST(full_queue_waits_for_the_oldest)
{
	struct coll_queue q;
	struct fake f;
	int slot = -1;

	fake_init(&f, &q, 2, 0);
	f.done_at[0] = 10, f.done_at[1] = 20;
	issue(&q, 0, "a");
	issue(&q, 1, "b");
	/* full: room waits (serving: the clock moves 1 s a serve) until #0
	 * completes at t = 10, and not for #1 */
	ck_assert_int_eq(coll_queue_room(&q, &slot), 0);
	ck_assert_double_eq(f.t, 10);
	ck_assert_int_eq(f.serves, 10);
	ck_assert_int_eq(coll_queue_pending(&q), 1);
	ck_assert_int_eq(slot, 0); /* #0's slot, free again */
	issue(&q, 2, "c");
	ck_assert_int_eq(coll_queue_pending(&q), 2);
	ck_assert_int_eq(q.blocked, 0);
	coll_queue_release(&q);
}
END_TEST

START_TEST(timeout_names_the_oldest)
{
	struct coll_queue q;
	struct fake f;

	fake_init(&f, &q, 4, 5);
	issue(&q, 0, "grads");
	f.t = 1;
	issue(&q, 1, "replicated_grads");
	/* waiting for the last: #0 never completes, #1 neither */
	ck_assert_int_eq(coll_queue_wait(&q, coll_queue_last(&q)),
			 RT_ETIMEOUT);
	ck_assert_int_eq(f.reports, 1);
	ck_assert_int_eq(f.named.seq, 0);
	ck_assert_str_eq(f.named.what, "grads");
	ck_assert_str_eq(f.named.d.what, "grads");
	ck_assert_str_eq(f.named.call, "train");
	ck_assert_str_eq(f.named.group, "dp_cp");
	ck_assert_int_eq(f.named.group_index, 1);
	ck_assert_int_eq(f.named.step, 3);
	ck_assert_int_eq(f.named.mine, 1);
	/* reported at the first poll past 5 s: t = 6 */
	ck_assert_double_eq(f.waited, 6);
	ck_assert_int_eq(q.blocked, 0);
	coll_queue_release(&q);
}
END_TEST

START_TEST(deadline_from_issue_or_predecessor)
{
	struct coll_queue q;
	struct fake f;

	fake_init(&f, &q, 4, 5);
	f.done_at[0] = 8;
	issue(&q, 0, "a"); /* at t = 0, first in line: its clock runs */
	f.t = 1;
	issue(&q, 1, "b"); /* behind #0: its clock waits for #0 */
	f.t = 4;
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	/* #0 is done at 8 (8 s after its issue: its own deadline passed at
	 * 5, but a completed entry retires, never reported) */
	f.t = 9;
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	ck_assert_int_eq(coll_queue_pending(&q), 1);
	/* #1 was issued 13 s ago, but could start only at 9 (when #0 was
	 * seen complete): 4 s, not overdue */
	f.t = 13;
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	ck_assert_int_eq(f.reports, 0);
	f.t = 14.5;
	ck_assert_int_eq(coll_queue_poll(&q), RT_ETIMEOUT);
	ck_assert_int_eq(f.reports, 1);
	ck_assert_int_eq(f.named.seq, 1);
	ck_assert_double_eq(f.waited, 5.5);
	/* first in line at its issue: the clock runs from the issue */
	f.done_at[1] = 0;
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	f.t = 20;
	issue(&q, 2, "c");
	f.t = 25;
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	f.t = 25.5;
	ck_assert_int_eq(coll_queue_poll(&q), RT_ETIMEOUT);
	ck_assert_int_eq(f.named.seq, 2);
	ck_assert_double_eq(f.waited, 5.5);
	coll_queue_release(&q);
}
END_TEST

START_TEST(waits_for_this_one)
{
	struct coll_queue q;
	struct fake f;

	fake_init(&f, &q, 8, 0);
	f.done_at[0] = 3, f.done_at[1] = 6, f.done_at[2] = 100;
	issue(&q, 0, "a");
	issue(&q, 1, "b");
	issue(&q, 2, "c");
	ck_assert_int_eq(coll_queue_wait(&q, 1), 0);
	ck_assert_double_eq(f.t, 6); /* #1's completion, not #2's */
	ck_assert_int_eq(coll_queue_pending(&q), 1);
	ck_assert_int_eq(f.reports, 0);
	/* a ticket already retired, or none, returns at once */
	f.serves = 0;
	ck_assert_int_eq(coll_queue_wait(&q, 0), 0);
	ck_assert_int_eq(coll_queue_wait(&q, -1), 0);
	ck_assert_int_eq(f.serves, 0);
	/* a failing poll ends the wait with its code */
	f.fail_at = 2;
	ck_assert_int_eq(coll_queue_wait(&q, 2), RT_EDEVICE);
	ck_assert_int_eq(coll_queue_pending(&q), 1);
	coll_queue_release(&q);
}
END_TEST

START_TEST(teardown_drops_pending)
{
	struct coll_queue q;
	struct fake f;
	int polls;

	fake_init(&f, &q, 4, 5);
	issue(&q, 0, "a");
	issue(&q, 1, "b");
	issue(&q, 2, "c");
	polls = f.polls;
	/* nothing completes: release neither polls, waits nor reports (ASan
	 * checks that it frees) */
	coll_queue_release(&q);
	ck_assert_int_eq(f.polls, polls);
	ck_assert_int_eq(f.serves, 0);
	ck_assert_int_eq(f.reports, 0);
	ck_assert_int_eq(q.cap, 0);
	ck_assert_ptr_null(q.e);
	/* released (or never made: cap 0), everything is a no-op */
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	ck_assert_int_eq(coll_queue_wait(&q, 5), 0);
	ck_assert_int_eq(coll_queue_pending(&q), 0);
	coll_queue_release(&q);
}
END_TEST

START_TEST(answers_with_the_oldest_incomplete)
{
	struct coll_queue q;
	struct fake f;
	char where[512], label[64];

	fake_init(&f, &q, 4, 0);
	ck_assert_int_eq(coll_queue_where(&q, where, sizeof(where)), 0);
	ck_assert_str_eq(where, "");
	f.done_at[0] = 2;
	issue(&q, 0, "grads");
	/* the caller's label buffer is reused at once (rt_label) */
	snprintf(label, sizeof(label), "tp_grads");
	issue(&q, 1, label);
	snprintf(label, sizeof(label), "overwritten");
	f.t = 2; /* a poll sees #0 complete: #1's clock starts */
	ck_assert_int_eq(coll_queue_poll(&q), 0);
	f.t = 9;
	ck_assert_int_eq(coll_queue_where(&q, where, sizeof(where)), 1);
	ck_assert_str_eq(where, "its collective #1 of 'train' (step 3), the "
			 "all-reduce of tp_grads over dp_cp group 1, has not "
			 "completed on the device after 7 s (1 pending)");
	/* blocked on it, the answer says so (a serve answers from inside
	 * the wait) */
	f.q = &q;
	f.done_at[1] = 11;
	ck_assert_int_eq(coll_queue_wait(&q, 1), 0);
	ck_assert_str_eq(f.seen_where, "waiting 7 s in collective #1 of "
			 "'train' (step 3): the all-reduce of tp_grads over "
			 "dp_cp group 1, on the device (1 pending)");
	/* an entry completed but not yet retired is not named */
	f.done_at[2] = 0;
	issue(&q, 2, "x");
	ck_assert_int_eq(coll_queue_where(&q, where, sizeof(where)), 0);
	ck_assert_str_eq(where, "");
	coll_queue_release(&q);
}
END_TEST

START_TEST(watch_modes)
{
	int d = -1;

	ck_assert_int_eq(coll_queue_parse(NULL, &d), 0);
	ck_assert_int_eq(d, 0);
	d = -1;
	ck_assert_int_eq(coll_queue_parse("", &d), 0);
	ck_assert_int_eq(d, 0);
	ck_assert_int_eq(coll_queue_parse("queue", &d), 0);
	ck_assert_int_eq(d, COLL_QUEUE_DEPTH);
	ck_assert_int_eq(coll_queue_parse("sync", &d), 0);
	ck_assert_int_eq(d, 0);
	ck_assert_int_eq(coll_queue_parse("queue:1", &d), 0);
	ck_assert_int_eq(d, 1);
	ck_assert_int_eq(coll_queue_parse("queue:4096", &d), 0);
	ck_assert_int_eq(d, 4096);
	d = 7;
	ck_assert_int_eq(coll_queue_parse("queue:0", &d), RT_EUSAGE);
	ck_assert_int_eq(coll_queue_parse("queue:4097", &d), RT_EUSAGE);
	ck_assert_int_eq(coll_queue_parse("queue:", &d), RT_EUSAGE);
	ck_assert_int_eq(coll_queue_parse("queue:8x", &d), RT_EUSAGE);
	ck_assert_int_eq(coll_queue_parse("async", &d), RT_EUSAGE);
	ck_assert_int_eq(d, 7);
}
END_TEST

/* Runs tests/coll_queue_mpi.c's scenario on 2 ranks; its output (stdout
 * and stderr) in out. 0: ran, 1: no mpirun here. */
static int mpi_scenario(const char *scenario, char *out, size_t len)
{
	char cmd[512], path[] = "/tmp/gtplan-cq-XXXXXX";
	int fd = mkstemp(path), rc;
	FILE *f;
	size_t n;

	ck_assert_int_ge(fd, 0);
	close(fd);
	if (system("command -v mpirun >/dev/null 2>&1")) {
		unlink(path);
		fprintf(stderr, "SKIP: the watchdog over two MPI ranks (%s): "
			"no mpirun here\n", scenario);
		return 1;
	}
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	snprintf(cmd, sizeof(cmd), "timeout 60 mpirun --oversubscribe "
		 "--bind-to none -np 2 build/rel/tests/coll_queue_mpi %s "
		 ">%s 2>&1", scenario, path);
	rc = system(cmd);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	fclose(f);
	unlink(path);
	ck_assert_msg(rc == 0, "mpirun failed: %s", out);
	return 0;
}

#define REPORT "gtplan-run: rank 0: error: collective #1 of call 'train' " \
	"(step 3), the all-reduce of 10 elements of b over tp group 0, did " \
	"not complete within 2 s (the group's #1)"

START_TEST(mpi_report_not_arrived)
{
	static char out[16384];

	if (mpi_scenario("missing", out, sizeof(out)))
		return; /* no MPI: tests/runtime_lib.sh skips likewise */
	ck_assert_msg(strstr(out, REPORT), "%s", out);
	ck_assert_msg(strstr(out, "rank 1: NOT ARRIVED: it has issued 1 "
			     "collectives on this group, and this one is the "
			     "group's #1; it is waiting "), "%s", out);
	ck_assert_msg(strstr(out, " s in collective #1 of 'train' (step 3): "
			     "the all-reduce of w over world group 0, on the "
			     "device (1 pending)"), "%s", out);
	ck_assert_msg(strstr(out, "watchdog: 1 of 2 members of tp group 0 "
			     "arrived (this rank included); 0 did not "
			     "answer"), "%s", out);
	ck_assert_msg(strstr(out, "rank 0: rc -8"), "%s", out);
	ck_assert_msg(strstr(out, "rank 1: rc 0"), "%s", out);
}
END_TEST

START_TEST(mpi_report_arrived)
{
	static char out[16384];

	if (mpi_scenario("arrived", out, sizeof(out)))
		return;
	/* b, not c issued after it, and its count on the group then (2),
	 * which rank 1 has reached */
	ck_assert_msg(strstr(out, REPORT), "%s", out);
	ck_assert_msg(strstr(out, "rank 1: arrived (waiting "), "%s", out);
	ck_assert_msg(strstr(out, "on the device (2 pending))"), "%s", out);
	ck_assert_msg(strstr(out, "watchdog: 2 of 2 members of tp group 0 "
			     "arrived"), "%s", out);
	ck_assert_msg(!strstr(out, "NOT ARRIVED"), "%s", out);
	ck_assert_msg(strstr(out, "rank 0: rc -8"), "%s", out);
}
END_TEST

/* The MPI path's all-reduce cut into pieces that fit MPI's int counts
 * (runtime/coll_host.c): the same sums, one record a call; a count past
 * INT_MAX refused where MPI would take it whole (coll_mpi_count). */
START_TEST(mpi_all_reduce_in_pieces)
{
	static char out[16384];

	if (mpi_scenario("pieces", out, sizeof(out)))
		return;
	for (int r = 0; r < 2; r++) {
		char want[64];

		/* 10 floats in pieces of 3: 4 MPI calls a collective */
		snprintf(want, sizeof(want), "rank %d: pieces sums OK, 8 MPI "
			 "calls, seq 2, big -5", r);
		ck_assert_msg(strstr(out, want), "%s", out);
		snprintf(want, sizeof(want), "rank %d: begin 0 -5", r);
		ck_assert_msg(strstr(out, want), "%s", out);
	}
	ck_assert_msg(strstr(out, "all-reduce 'big' over tp passes MPI "
			     "2147483648 elements in one call, past its int "
			     "counts (2147483647): split the work"), "%s", out);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "in_order", retires_in_order },
		{ "full", full_queue_waits_for_the_oldest },
		{ "timeout", timeout_names_the_oldest },
		{ "deadline", deadline_from_issue_or_predecessor },
		{ "wait_one", waits_for_this_one },
		{ "teardown", teardown_drops_pending },
		{ "answer", answers_with_the_oldest_incomplete },
		{ "modes", watch_modes },
		{ "mpi_not_arrived", mpi_report_not_arrived },
		{ "mpi_arrived", mpi_report_arrived },
		{ "mpi_pieces", mpi_all_reduce_in_pieces },
	};

	return RUN_CASES("coll_queue", cases, 90);
}
