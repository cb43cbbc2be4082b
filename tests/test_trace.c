/*
 * Chrome traces of the simulated calls: valid JSON in the Trace Event
 * Format (checked with Jansson), byte-identical across runs, a track per
 * rank for small worlds and per stage for larger ones, and the caps.
 */
#include <check.h>
#include <glob.h>
#include <jansson.h>
#include <math.h>
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
		if (strcmp(ph, "M") == 0 || strcmp(ph, "i") == 0)
			continue;
		ck_assert_str_eq(ph, "X");
		/* phase blocks are parents, not ops */
		if (strcmp(json_string_value(json_object_get(e, "cat")),
			   "phase") == 0)
			continue;
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

/* Microseconds with three decimals as whole nanoseconds. */
static long long ns_of(json_t *v)
{
	return llround(json_number_value(v) * 1e3);
}

struct span {
	long long pid, tid, from, to;
};

static int span_order(const void *pa, const void *pb)
{
	const struct span *a = pa, *b = pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	return a->to > b->to ? -1 : a->to < b->to; /* parents first */
}

/* Every track's slices nest: two slices of one track are disjoint or one
 * holds the other, in whole nanoseconds as written. Returns how many X
 * events there are. */
static size_t check_nesting(json_t *doc, const char *what)
{
	json_t *ev = json_object_get(doc, "traceEvents"), *e;
	size_t i, n = 0, top;
	struct span *v = calloc(json_array_size(ev) + 1, sizeof(*v));
	struct span *stack = calloc(json_array_size(ev) + 1, sizeof(*v));

	ck_assert(v && stack);
	json_array_foreach(ev, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")), "X"))
			continue;
		v[n].pid = json_integer_value(json_object_get(e, "pid"));
		v[n].tid = json_integer_value(json_object_get(e, "tid"));
		v[n].from = ns_of(json_object_get(e, "ts"));
		v[n].to = v[n].from + ns_of(json_object_get(e, "dur"));
		n++;
	}
	qsort(v, n, sizeof(*v), span_order);
	for (i = 0, top = 0; i < n; i++) {
		if (i && (v[i].pid != v[i - 1].pid || v[i].tid != v[i - 1].tid))
			top = 0;
		while (top && stack[top - 1].to <= v[i].from)
			top--;
		ck_assert_msg(!top || v[i].to <= stack[top - 1].to,
			      "%s: call %lld track %lld: [%lld, %lld) ns "
			      "overlaps [%lld, %lld) without nesting", what,
			      v[i].pid, v[i].tid, v[i].from, v[i].to,
			      stack[top - 1].from, stack[top - 1].to);
		stack[top++] = v[i];
	}
	free(v);
	free(stack);
	return n;
}

/* The event of call pid on track tid (-1: of the call itself) with phase
 * ph whose name starts with `prefix`, or NULL. */
static json_t *find_event(json_t *doc, long long pid, long long tid,
			  const char *ph, const char *prefix)
{
	json_t *ev = json_object_get(doc, "traceEvents"), *e;
	size_t i;

	json_array_foreach(ev, i, e)
		if (json_integer_value(json_object_get(e, "pid")) == pid &&
		    (tid < 0 ? !json_object_get(e, "tid") :
		     json_integer_value(json_object_get(e, "tid")) == tid) &&
		    !strcmp(json_string_value(json_object_get(e, "ph")), ph) &&
		    !strncmp(json_string_value(json_object_get(e, "name")),
			     prefix, strlen(prefix)))
			return e;
	return NULL;
}

/* Op slices (not phase blocks) of call pid on track tid, and the latest
 * end among them (ns). */
static size_t op_slices(json_t *doc, long long pid, long long tid,
			long long *last_end)
{
	json_t *ev = json_object_get(doc, "traceEvents"), *e;
	size_t i, n = 0;

	*last_end = 0;
	json_array_foreach(ev, i, e) {
		long long end;

		if (json_integer_value(json_object_get(e, "pid")) != pid ||
		    json_integer_value(json_object_get(e, "tid")) != tid ||
		    strcmp(json_string_value(json_object_get(e, "ph")), "X") ||
		    !strcmp(json_string_value(json_object_get(e, "cat")),
			    "phase"))
			continue;
		n++;
		end = ns_of(json_object_get(e, "ts")) +
		      ns_of(json_object_get(e, "dur"));
		if (end > *last_end)
			*last_end = end;
	}
	return n;
}

/* Phase blocks hold the ops of one phase of one micro-batch. */
START_TEST(phase_blocks_nest)
{
	struct sim_fx f;
	json_t *doc, *blk;
	char *t;

	run(&f, cfg(4, 12, 2, 6, 12));
	t = trace(&f, NULL, NULL);
	doc = parse(t);
	ck_assert_uint_gt(check_nesting(doc, "pp 2"), 0);
	blk = find_event(doc, 0, 0, "X", "fwd mb0");
	ck_assert_ptr_nonnull(blk);
	ck_assert_str_eq(json_string_value(json_object_get(blk, "cat")),
			 "phase");
	ck_assert_int_gt(json_integer_value(json_object_get(
		json_object_get(blk, "args"), "ops")), 1);
	ck_assert_ptr_nonnull(find_event(doc, 0, 24, "X", "bwd mb0"));
	json_decref(doc);
	free(t);
	sim_fx_release(&f);
}
END_TEST

/* A call that hangs shows each rank's track up to the op it stops in,
 * and there an instant event naming that collective: stage 0 waits in
 * the loss broadcast, stage 1 (whose lazy MoE tracker is not on stage 0)
 * in the auxiliary-loss all-reduce. */
START_TEST(hang_marks_where_ranks_stop)
{
	struct sim_fx f;
	json_t *doc, *e, *args;
	char *t;
	long long end;

	run(&f, "policy:\n  model_name: acme/moe-2b\n"
		"  train_global_batch_size: 16\n  train_micro_batch_size: 1\n"
		"  megatron_cfg:\n    enabled: true\n"
		"    pipeline_model_parallel_size: 2\n"
		"    expert_model_parallel_size: 4\n"
		"    moe_router_load_balancing_type: aux_loss\n"
		"cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n"
		"gtplan:\n  model:\n    num_layers: 8\n    hidden_size: 1024\n"
		"    ffn_hidden_size: 4096\n    num_attention_heads: 16\n"
		"    num_query_groups: 8\n    vocab_size: 32000\n"
		"    num_moe_experts: 8\n    moe_layer_freq: \"[0]*4+[1]*4\"\n"
		"  stack:\n    moe_aux_loss_tracker: lazy\n");
	ck_assert_str_eq(f.sim.res[0].call->name, "train");
	ck_assert_int_ne(f.sim.res[0].status, SIM_OK);
	t = trace(&f, NULL, NULL);
	doc = parse(t);
	check_nesting(doc, "hang");
	for (long long r = 0; r < 8; r++) {
		const char *want = r < 4 ? "stuck in pp broadcast" :
				   "stuck in pp all-reduce";

		e = find_event(doc, 0, r, "i", "stuck in ");
		ck_assert_ptr_nonnull(e);
		ck_assert_str_eq(json_string_value(json_object_get(e, "s")), "t");
		ck_assert_str_eq(json_string_value(json_object_get(e, "cat")),
				 "hang");
		ck_assert_msg(!strncmp(json_string_value(json_object_get(e,
				"name")), want, strlen(want)), "rank %lld: %s",
			      r, json_string_value(json_object_get(e, "name")));
		args = json_object_get(e, "args");
		ck_assert_int_eq(json_integer_value(json_object_get(args,
				 "example_rank")), r);
		ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(
			args, "collective")), r < 4 ? "loss metrics" :
			"auxiliary-loss"));
		/* the track holds exactly the ops before the stop, and they
		 * end no later than the instant */
		ck_assert_uint_eq(op_slices(doc, 0, r, &end),
			(size_t)json_integer_value(json_object_get(args, "op")));
		ck_assert_int_le(end, ns_of(json_object_get(e, "ts")));
	}
	e = find_event(doc, 0, -1, "M", "process_name");
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(
		json_object_get(e, "args"), "name")), "8 ranks stuck"));
	json_decref(doc);
	free(t);
	sim_fx_release(&f);
}
END_TEST

/* Ranks the driver never calls get an instant event and no slices. */
START_TEST(hang_never_called)
{
	struct sim_fx f;
	json_t *doc, *e;
	char *t;
	long long end;

	/* the 5-D driver layout calls only the g = 0 ranks (docs/calls.md
	 * §3); 24 ranks: a track per stage */
	run(&f, "policy:\n  train_global_batch_size: 48\n"
		"  train_micro_batch_size: 4\n"
		"  megatron_cfg:\n    enabled: true\n"
		"    tensor_model_parallel_size: 4\n"
		"    tensor_parallel_num_weight_shards: 12\n"
		"cluster:\n  num_nodes: 3\n  gpus_per_node: 8\n"
		"gtplan:\n  driver_layout: 5d\n");
	ck_assert_int_eq(f.sim.res[0].status, SIM_HANG);
	t = trace(&f, NULL, NULL);
	doc = parse(t);
	e = find_event(doc, 0, 0, "i", "never called");
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(e, "args"), "ranks")), 16);
	e = find_event(doc, 0, 0, "i", "stuck in ");
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(e, "args"), "ranks")), 8);
	ck_assert_uint_eq(op_slices(doc, 0, 0, &end), 0);
	json_decref(doc);
	free(t);
	sim_fx_release(&f);
}
END_TEST

/* No model named: the runtime's decoder (gtplan-run's programs) gives
 * the collectives' slices, and the trace says which shape it used. */
START_TEST(no_model_runtime_shape)
{
	struct sim_fx f;
	json_t *doc, *shape;
	char *t;

	run(&f, "policy:\n  train_global_batch_size: 16\n"
		"  train_micro_batch_size: 1\n"
		"  megatron_cfg:\n    enabled: true\n"
		"    tensor_model_parallel_size: 2\n"
		"cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n");
	ck_assert(!f.sim.est[0].valid);
	t = trace(&f, NULL, NULL);
	doc = parse(t);
	ck_assert_uint_gt(tally(doc, 0, NULL, 0), 0);
	check_nesting(doc, "runtime");
	shape = json_object_get(json_object_get(doc, "otherData"), "shape");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(shape,
		"source")), "runtime.model"));
	ck_assert_int_eq(json_integer_value(json_object_get(shape,
		"hidden_size")), f.plan.runtime.model.hidden);
	ck_assert(json_is_false(json_object_get(shape, "approximate")));
	json_decref(doc);
	free(t);
	sim_fx_release(&f);
}
END_TEST

/* A model gtplan cannot size: the default shape with the sizes
 * gtplan.model gives (6 layers), marked approximate. */
START_TEST(unknown_model_approximate_shape)
{
	struct sim_fx f;
	json_t *doc, *shape;
	char *t;

	run(&f, "policy:\n  model_name: acme/unknown-7b\n"
		"  train_global_batch_size: 16\n"
		"  train_micro_batch_size: 1\n"
		"  megatron_cfg:\n    enabled: true\n"
		"    tensor_model_parallel_size: 2\n"
		"cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n"
		"gtplan:\n  model:\n    num_layers: 6\n    hidden_size: 2048\n");
	ck_assert(!f.sim.est[0].valid);
	t = trace(&f, NULL, NULL);
	doc = parse(t);
	ck_assert(has_event(doc, "compute L5 fwd mb0"));
	ck_assert(!has_event(doc, "compute L6 fwd mb0"));
	check_nesting(doc, "approximate");
	shape = json_object_get(json_object_get(doc, "otherData"), "shape");
	ck_assert(json_is_true(json_object_get(shape, "approximate")));
	ck_assert_int_eq(json_integer_value(json_object_get(shape,
		"num_layers")), 6);
	ck_assert_int_eq(json_integer_value(json_object_get(shape,
		"hidden_size")), 2048);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(
		json_object_get(find_event(doc, 0, -1, "M", "process_name"),
				"args"), "name")), "approximate shape"));
	json_decref(doc);
	free(t);
	sim_fx_release(&f);
}
END_TEST

/* The config file at path through the pipeline `gtplan sim` runs (its
 * includes and interpolations too). Returns 0 when it simulated. */
static int sim_fx_file(struct sim_fx *f, const char *path)
{
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	plan_init(&f->plan);
	sim_report_init(&f->sim);
	f->root = NULL;
	if (cfg_load(path, &f->srcs, &f->diags, &f->root) ||
	    cfg_resolve(f->root, &f->srcs, &f->diags) ||
	    plan_build(&f->plan, f->root, path, &f->diags) ||
	    sim_run(&f->plan, f->root, NULL, &f->sim, &f->diags))
		return -1;
	return f->sim.ran ? 0 : -1;
}

/* Every example config, and configs that hang: slices nest. */
START_TEST(nesting_on_every_config)
{
	static const char *const globs[] = {
		"examples/*.yaml", "tests/configs/good/*.yaml",
		/* configs whose calls hang or mismatch */
		"tests/configs/bad/driver-layout-5d.yaml",
		"tests/configs/bad/framework-stage-collective-gap.yaml",
	};
	size_t traced = 0;
	struct trace_opts o;

	/* the caps keep it quick; the "... N more" slices must nest too */
	trace_opts_init(&o);
	o.max_events = 300;
	for (size_t g = 0; g < sizeof(globs) / sizeof(*globs); g++) {
		glob_t gl;

		ck_assert_int_eq(glob(globs[g], 0, NULL, &gl), 0);
		for (size_t i = 0; i < gl.gl_pathc; i++) {
			struct sim_fx f;
			json_t *doc;
			char *t;

			if (sim_fx_file(&f, gl.gl_pathv[i])) {
				sim_fx_release(&f);
				continue;
			}
			t = trace(&f, &o, NULL);
			doc = parse(t);
			check_nesting(doc, gl.gl_pathv[i]);
			traced++;
			json_decref(doc);
			free(t);
			sim_fx_release(&f);
		}
		globfree(&gl);
	}
	ck_assert_uint_ge(traced, 9);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "per_rank", valid_json_track_per_rank },
		{ "deterministic", deterministic },
		{ "per_stage", track_per_stage_for_big_worlds },
		{ "capped", capped_events_and_tracks },
		{ "phase_blocks", phase_blocks_nest },
		{ "hang", hang_marks_where_ranks_stop },
		{ "hang_never_called", hang_never_called },
		{ "no_model", no_model_runtime_shape },
		{ "approximate", unknown_model_approximate_shape },
		{ "nesting_everywhere", nesting_on_every_config },
	};

	return RUN_CASES("trace", cases, 60);
}
