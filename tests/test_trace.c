/*
 * Chrome traces of the simulated calls: valid JSON in the Trace Event
 * Format (checked with Jansson), byte-identical across runs, a track per
 * rank for small worlds and per stage for larger ones, and the caps.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "simulate.h"
#include "trace.h"
#include "harness.h"
#include "sim_fixture.h"

/* Llama-3.2-1B (16 layers) with TP, weight shards (0: null), PP on nodes
 * x 8 GPUs, micro-batches of 1. */
static char *cfg(int tp, int shards, int pp, int nodes, int gbs)
{
	static char buf[2048];
	char s[32];

	if (shards)
		snprintf(s, sizeof(s), "%d", shards);
	else
		snprintf(s, sizeof(s), "null");
	snprintf(buf, sizeof(buf),
		 "policy:\n"
		 "  model_name: meta-llama/Llama-3.2-1B\n"
		 "  train_global_batch_size: %d\n"
		 "  train_micro_batch_size: 1\n"
		 "  max_total_sequence_length: 1024\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "    tensor_model_parallel_size: %d\n"
		 "    tensor_parallel_num_weight_shards: %s\n"
		 "    pipeline_model_parallel_size: %d\n"
		 "    sequence_parallel: true\n"
		 "cluster:\n"
		 "  num_nodes: %d\n"
		 "  gpus_per_node: 8\n",
		 gbs, tp, s, pp, nodes);
	return buf;
}

static void run(struct sim_fx *f, const char *yaml)
{
	ck_assert_int_eq(sim_fx_run(f, yaml), 0);
}

/* The trace as a string (heap; free()). */
static char *trace(struct sim_fx *f, const struct trace_opts *o, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(trace_write(m, &f->plan, &f->sim, o), 0);
	ck_assert_int_eq(fclose(m), 0);
	if (len)
		*len = n;
	return buf;
}

static json_t *parse(const char *text)
{
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);

	ck_assert_msg(j != NULL, "invalid JSON: %s at line %d", err.text,
		      err.line);
	return j;
}

/* Checks every event's shape; counts X events of call `pid` (-1: all)
 * per track into per_tid[0 .. n-1] (may be NULL) and returns them all. */
static size_t tally(json_t *doc, long long pid, size_t *per_tid, size_t n)
{
	json_t *ev = json_object_get(doc, "traceEvents"), *e;
	size_t i, all = 0;

	ck_assert(json_is_array(ev));
	if (per_tid)
		memset(per_tid, 0, n * sizeof(*per_tid));
	json_array_foreach(ev, i, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));
		long long tid;

		ck_assert_ptr_nonnull(ph);
		ck_assert(json_is_string(json_object_get(e, "name")));
		ck_assert(json_is_integer(json_object_get(e, "pid")));
		if (strcmp(ph, "M") == 0)
			continue;
		ck_assert_str_eq(ph, "X");
		ck_assert(json_is_number(json_object_get(e, "ts")));
		ck_assert(json_number_value(json_object_get(e, "dur")) >= 0);
		ck_assert(json_is_integer(json_object_get(e, "tid")));
		if (pid >= 0 &&
		    json_integer_value(json_object_get(e, "pid")) != pid)
			continue;
		all++;
		tid = json_integer_value(json_object_get(e, "tid"));
		if (per_tid && tid >= 0 && (size_t)tid < n)
			per_tid[tid]++;
	}
	return all;
}

/* The name of thread `tid` of call `pid`, or NULL. */
static const char *thread_name(json_t *doc, long long pid, long long tid)
{
	json_t *ev = json_object_get(doc, "traceEvents"), *e;
	size_t i;

	json_array_foreach(ev, i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")),
			   "thread_name") == 0 &&
		    json_integer_value(json_object_get(e, "pid")) == pid &&
		    json_integer_value(json_object_get(e, "tid")) == tid)
			return json_string_value(json_object_get(
				json_object_get(e, "args"), "name"));
	return NULL;
}

static int has_event(json_t *doc, const char *name)
{
	json_t *ev = json_object_get(doc, "traceEvents"), *e;
	size_t i;

	json_array_foreach(ev, i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")),
			   name) == 0)
			return 1;
	return 0;
}

START_TEST(valid_json_track_per_rank)
{
	struct sim_fx f;
	json_t *doc;
	char *t;
	size_t per[17];

	/* 16 ranks: TP 4, G 2, D 2, one micro-batch per lane; a track per
	 * rank */
	run(&f, cfg(4, 8, 1, 2, 4));
	t = trace(&f, NULL, NULL);
	doc = parse(t);
	ck_assert_str_eq(json_string_value(json_object_get(doc,
		"displayTimeUnit")), "ms");
	ck_assert_uint_eq(tally(doc, 0, per, 17), 16 * per[0]);
	ck_assert_uint_gt(per[0], 0);
	for (long long r = 0; r < 16; r++) {
		ck_assert_ptr_nonnull(thread_name(doc, 0, r));
		ck_assert_uint_eq(per[r], per[0]);
	}
	ck_assert_ptr_nonnull(strstr(thread_name(doc, 0, 13), "rank 13"));
	ck_assert(has_event(doc, "gtp all-gather L3 fwd mb0"));
	ck_assert(has_event(doc, "compute L3 bwd mb0"));
	ck_assert(has_event(doc, "gtp reduce-scatter L0 bwd mb0"));
	json_decref(doc);
	free(t);
	sim_fx_release(&f);
}
END_TEST

START_TEST(deterministic)
{
	struct sim_fx a, b;
	char *ta, *tb;
	size_t na, nb;

	run(&a, cfg(4, 12, 2, 6, 12));
	run(&b, cfg(4, 12, 2, 6, 12));
	ta = trace(&a, NULL, &na);
	tb = trace(&b, NULL, &nb);
	ck_assert_uint_eq(na, nb);
	ck_assert(memcmp(ta, tb, na) == 0);
	free(ta);
	free(tb);
	/* and again from the same report */
	ta = trace(&a, NULL, &na);
	ck_assert_uint_eq(na, nb);
	free(ta);
	sim_fx_release(&a);
	sim_fx_release(&b);
}
END_TEST

/* 48 ranks, PP 2: a track per stage under its lowest rank. */
START_TEST(track_per_stage_for_big_worlds)
{
	struct sim_fx f;
	json_t *doc;
	char *t;
	const char *name;

	run(&f, cfg(4, 12, 2, 6, 12));
	ck_assert_int_eq(f.plan.world, 48);
	t = trace(&f, NULL, NULL);
	doc = parse(t);
	name = thread_name(doc, 0, 24);
	ck_assert_ptr_nonnull(name);
	ck_assert_ptr_nonnull(strstr(name, "stands for the 24 ranks of "
				     "pipeline stage 1 (ranks 24-47)"));
	ck_assert_ptr_nonnull(thread_name(doc, 0, 0));
	ck_assert_ptr_null(thread_name(doc, 0, 1));
	ck_assert(has_event(doc, "pp send-fwd mb0"));
	ck_assert(has_event(doc, "pp send-fwd+recv-bwd mb1"));
	json_decref(doc);
	free(t);
	sim_fx_release(&f);
}
END_TEST

START_TEST(capped_events_and_tracks)
{
	struct sim_fx f;
	struct trace_opts o;
	json_t *full, *cut, *ev, *e;
	char *t1, *t2;
	size_t all, i, markers = 0, per[25];

	run(&f, cfg(4, 12, 2, 6, 12));
	trace_opts_init(&o);
	ck_assert_uint_eq(o.max_events, 20000);
	ck_assert_uint_eq(o.max_tracks, 64);
	t1 = trace(&f, NULL, NULL);
	full = parse(t1);
	tally(full, 0, per, 25);
	all = per[0];
	ck_assert_uint_gt(all, 11);
	o.max_events = 10;
	o.max_tracks = 1;
	t2 = trace(&f, &o, NULL);
	cut = parse(t2);
	/* 10 events and the marker on the one track left */
	tally(cut, 0, per, 25);
	ck_assert_uint_eq(per[0], 11);
	ck_assert_uint_eq(per[24], 0);
	ev = json_object_get(cut, "traceEvents");
	json_array_foreach(ev, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (strncmp(n, "... ", 4) != 0 ||
		    json_integer_value(json_object_get(e, "pid")) != 0)
			continue;
		markers++;
		ck_assert_int_eq(json_integer_value(json_object_get(
			json_object_get(e, "args"), "dropped")),
			(long long)all - 10);
	}
	ck_assert_uint_eq(markers, 1);
	/* the process says that stage 1 has no track */
	json_array_foreach(ev, i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")),
			   "process_name") == 0 &&
		    json_integer_value(json_object_get(e, "pid")) == 0)
			ck_assert_ptr_nonnull(strstr(json_string_value(
				json_object_get(json_object_get(e, "args"),
						"name")),
				"tracks for the first 1 of 2 stages"));
	json_decref(full);
	json_decref(cut);
	free(t1);
	free(t2);
	sim_fx_release(&f);
}
END_TEST

/* A call without an estimate has a named process and no tracks. */
START_TEST(no_estimate_no_tracks)
{
	struct sim_fx f;
	json_t *doc;
	char *t;

	run(&f, "policy:\n  train_global_batch_size: 16\n"
		"  train_micro_batch_size: 1\n"
		"  megatron_cfg:\n    enabled: true\n"
		"    tensor_model_parallel_size: 2\n"
		"cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n");
	t = trace(&f, NULL, NULL);
	doc = parse(t);
	ck_assert_uint_eq(tally(doc, -1, NULL, 0), 0);
	ck_assert(json_array_size(json_object_get(doc, "traceEvents")) > 0);
	json_decref(doc);
	free(t);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "per_rank", valid_json_track_per_rank },
		{ "deterministic", deterministic },
		{ "per_stage", track_per_stage_for_big_worlds },
		{ "capped", capped_events_and_tracks },
		{ "no_estimate", no_estimate_no_tracks },
	};

	return RUN_CASES("trace", cases, 60);
}
