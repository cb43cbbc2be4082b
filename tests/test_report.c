/*
 * The report writers (report/report.h) on a plan and its simulation given
 * apart: the plan JSON's "calls", "memory", "checkpoint" and "stack" come
 * from the sim_report argument (null or empty without one), each call's
 * findings are its own diagnostics, its "diagnostics" are the bytes lint's
 * JSON writes, and `gtplan sim`'s text has one line per call. The JSON is
 * read back with Jansson.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "report.h"
#include "simulate.h"
#include "stack.h"
#include "harness.h"
#include "sim_fixture.h"

/* Llama-3.2-1B, TP 2 and 4 weight shards (G 2) on one node of 8 GPUs,
 * under the driver layout `layout` ("4d" completes; "5d" leaves the GTP
 * peers uncalled, so train and get_logprobs hang). */
static const char *cfg(const char *layout)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "policy:\n"
		 "  model_name: meta-llama/Llama-3.2-1B\n"
		 "  train_global_batch_size: 16\n"
		 "  train_micro_batch_size: 1\n"
		 "  max_total_sequence_length: 1024\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "    tensor_model_parallel_size: 2\n"
		 "    tensor_parallel_num_weight_shards: 4\n"
		 "    pipeline_model_parallel_size: 1\n"
		 "    sequence_parallel: true\n"
		 "cluster:\n"
		 "  num_nodes: 1\n"
		 "  gpus_per_node: 8\n"
		 "gtplan:\n"
		 "  driver_layout: %s\n", layout);
	return buf;
}

/* The plan JSON as a string (heap; free()). */
static char *plan_text(const struct sim_fx *f, const struct sim_report *r)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(plan_write_json(m, &f->plan, r, &f->diags), 0);
	ck_assert_int_eq(fclose(m), 0);
	return buf;
}

static json_t *plan_doc(const struct sim_fx *f, const struct sim_report *r)
{
	char *text = plan_text(f, r);
	json_error_t err;
	json_t *j = json_loads(text, 0, &err);

	ck_assert_msg(j != NULL, "invalid JSON: %s at line %d", err.text,
		      err.line);
	free(text);
	return j;
}

static const char *str_at(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	ck_assert_msg(s != NULL, "\"%s\" is not a string", key);
	return s;
}

static long long int_at(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_integer(v), "\"%s\" is not an integer", key);
	return json_integer_value(v);
}

/* Without a simulation the sim keys are empty, whether the report is NULL
 * or one that never ran: byte for byte the same document. */
START_TEST(without_simulation)
{
	struct sim_fx f;
	struct sim_report none;
	char *a, *b;
	json_t *j;

	ck_assert_int_eq(sim_fx_run(&f, cfg("4d")), 0);
	j = plan_doc(&f, NULL);
	ck_assert(json_is_array(json_object_get(j, "calls")));
	ck_assert_uint_eq(json_array_size(json_object_get(j, "calls")), 0);
	ck_assert(json_is_null(json_object_get(j, "memory")));
	ck_assert(json_is_null(json_object_get(j, "checkpoint")));
	ck_assert(json_is_null(json_object_get(j, "stack")));
	ck_assert_int_eq(int_at(json_object_get(j, "sizes"), "gtp"), 2);
	json_decref(j);

	sim_report_init(&none);
	a = plan_text(&f, NULL);
	b = plan_text(&f, &none);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	sim_report_release(&none);
	sim_fx_release(&f);
}
END_TEST

/* Every simulated call, in order, with the simulator's numbers; the
 * memory, checkpoint and stack summaries from the same report. */
START_TEST(calls_from_the_report)
{
	struct sim_fx f;
	const struct sim_report *r = &f.sim;
	const json_t *calls, *mem, *ck, *st;
	json_t *j;
	size_t timed = 0;

	ck_assert_int_eq(sim_fx_run(&f, cfg("4d")), 0);
	ck_assert_uint_gt(r->n_res, 1);
	j = plan_doc(&f, r);
	calls = json_object_get(j, "calls");
	ck_assert_uint_eq(json_array_size(calls), r->n_res);
	for (size_t i = 0; i < r->n_res; i++) {
		const json_t *c = json_array_get(calls, i);
		const struct sim_call_result *x = &r->res[i];
		const json_t *est = json_object_get(c, "estimate_ms");

		ck_assert_str_eq(str_at(c, "name"), x->call->name);
		ck_assert_str_eq(str_at(c, "status"),
				 sim_status_name(x->status));
		ck_assert_str_eq(str_at(c, "dispatch"),
				 calls_dispatch_name(x->call->dispatch));
		ck_assert_str_eq(str_at(c, "program"),
				 calls_program_name(x->call->program));
		ck_assert_int_eq(int_at(c, "invoked"), x->invoked);
		ck_assert_int_eq(int_at(c, "with_data"), x->with_data);
		ck_assert_int_eq(int_at(c, "returned"), x->returned);
		ck_assert_int_eq(int_at(c, "shards"), x->shards);
		ck_assert_int_eq(int_at(c, "collectives"), x->n_ops);
		if (!r->est[i].valid) {
			ck_assert(json_is_null(est));
			continue;
		}
		/* written with three decimals (plan_json.c's write_real):
		 * within half of the last one */
		ck_assert(json_is_number(est));
		ck_assert_double_eq_tol(json_number_value(est),
					r->est[i].total_us / 1e3, 5e-4 + 1e-9);
		timed++;
	}
	ck_assert_uint_gt(timed, 0);  /* some estimate was compared */
	ck_assert_str_eq(str_at(json_array_get(calls, 0), "status"), "ok");

	mem = json_object_get(j, "memory");
	ck_assert(json_is_object(mem));
	ck_assert_str_eq(str_at(mem, "status"),
			 cost_mem_status_name(r->mem.status));
	ck_assert_uint_eq(json_array_size(json_object_get(mem, "stages")),
			  r->mem.n_stages);
	ck_assert_uint_gt(r->mem.n_stages, 0);
	ck_assert_int_eq(int_at(json_array_get(json_object_get(mem, "stages"),
					       0), "total"),
			 (long long)r->mem.stages[0].total);

	ck = json_object_get(j, "checkpoint");
	ck_assert(r->ckpt.valid);
	ck_assert_int_eq(int_at(ck, "keys"), r->ckpt.keys);
	ck_assert_int_eq(int_at(ck, "writers"), r->ckpt.writers);

	st = json_object_get(j, "stack");
	ck_assert_str_eq(str_at(st, "refit_gather"),
			 stack_gather_name(r->stack.refit_gather));
	json_decref(j);
	sim_fx_release(&f);
}
END_TEST

/* A hanging call lists exactly its own findings: the diagnostics the
 * simulator reported for it (first_diag, n_diags), in order. */
START_TEST(findings_per_call)
{
	struct sim_fx f;
	const struct sim_report *r = &f.sim;
	const json_t *calls;
	json_t *j;
	size_t hangs = 0;

	ck_assert_int_eq(sim_fx_run(&f, cfg("5d")), 0);
	j = plan_doc(&f, r);
	calls = json_object_get(j, "calls");
	for (size_t i = 0; i < r->n_res; i++) {
		const struct sim_call_result *x = &r->res[i];
		const json_t *fs = json_object_get(json_array_get(calls, i),
						   "findings");

		ck_assert_uint_eq(json_array_size(fs), x->n_diags);
		for (size_t k = 0; k < x->n_diags; k++) {
			const struct diag *d = &f.diags.v[x->first_diag + k];
			const json_t *o = json_array_get(fs, k);

			ck_assert_str_eq(str_at(o, "code"), diag_code(d));
			ck_assert_str_eq(str_at(o, "message"), d->msg);
		}
		if (x->status == SIM_HANG) {
			ck_assert_uint_gt(x->n_diags, 0);
			hangs++;
		}
	}
	ck_assert_uint_ge(hangs, 2); /* train and get_logprobs at least */
	json_decref(j);
	sim_fx_release(&f);
}
END_TEST

/* `gtplan sim`'s table: a line per call with its name and status, then
 * the count of calls that do not complete. */
START_TEST(sim_text_table)
{
	struct sim_fx f;
	char *buf = NULL, line[160];
	size_t n = 0;
	FILE *m;

	ck_assert_int_eq(sim_fx_run(&f, cfg("5d")), 0);
	m = open_memstream(&buf, &n);
	ck_assert_ptr_nonnull(m);
	sim_print_text(m, &f.plan, &f.sim);
	ck_assert_int_eq(fclose(m), 0);
	ck_assert_ptr_nonnull(strstr(buf, "t.yaml: 8 ranks, driver layout 5d, "
					  "model meta-llama/Llama-3.2-1B\n"));
	for (size_t i = 0; i < f.sim.n_res; i++) {
		const struct sim_call_result *x = &f.sim.res[i];

		snprintf(line, sizeof(line), "\n  %-34s %-8s %-8s ",
			 x->call->name, calls_dispatch_name(x->call->dispatch),
			 sim_status_name(x->status));
		ck_assert_msg(strstr(buf, line) != NULL, "no line '%s'", line);
	}
	snprintf(line, sizeof(line), "\n%zu of %zu calls do not complete "
		 "cleanly", sim_not_ok(&f.sim), f.sim.n_res);
	ck_assert_uint_gt(sim_not_ok(&f.sim), 0);
	ck_assert_ptr_nonnull(strstr(buf, line));
	free(buf);
	sim_fx_release(&f);
}
END_TEST

/* The "diagnostics" array of a JSON document (from its key to the
 * array's closing line at the root's indent), without "configs" lines
 * (heap; free()). */
static char *diag_array(const char *doc)
{
	const char *a = strstr(doc, "\n  \"diagnostics\": [");
	const char *b = a ? strstr(a, "\n  ],\n") : NULL;
	char *out, *o;

	ck_assert_ptr_nonnull(b);
	out = o = calloc(1, (size_t)(b - a) + 1);
	ck_assert_ptr_nonnull(out);
	for (const char *l = a; l < b;) {
		const char *e = strchr(l + 1, '\n');

		if (!e || e > b)
			e = b;
		if (!strstr(l, "\"configs\": []") ||
		    strstr(l, "\"configs\": []") > e) {
			memcpy(o, l, (size_t)(e - l));
			o += e - l;
		}
		l = e;
	}
	return out;
}

/* The plan JSON's findings and `gtplan lint --format json`'s are one
 * writer's bytes (but for lint's "configs"), escapes included: a control
 * character, a non-ASCII letter and a byte that is not UTF-8 in the
 * messages (the two writers once escaped them differently). */
START_TEST(findings_as_lint_writes_them)
{
	struct sim_fx f;
	char *plan, *lint = NULL, *pa, *la;
	size_t n = 0;
	FILE *m;
	char yaml[2048];

	snprintf(yaml, sizeof(yaml), "%s  stack:\n    preset: \"a\\x1bb\\u00e9\"\n",
		 cfg("4d"));
	ck_assert_int_ge(sim_fx_run(&f, yaml), 0);
	ck_assert_ptr_nonnull(sim_fx_first(&f, "GT700"));
	diag_note(diag_add(&f.diags, "GT520", DIAG_NOLOC, NULL, "bad \xff byte"),
		  f.diags.v[0].loc, "a note \x01 here");
	diag_sort(&f.diags);
	plan = plan_text(&f, &f.sim);
	m = open_memstream(&lint, &n);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(diag_print_json(m, &f.diags), 0);
	ck_assert_int_eq(fclose(m), 0);
	pa = diag_array(plan);
	la = diag_array(lint);
	ck_assert_str_eq(pa, la);
	ck_assert_ptr_nonnull(strstr(pa, "unknown stack preset 'a\\u001bb\xc3\xa9'"));
	ck_assert_ptr_nonnull(strstr(pa, "bad \\ufffd byte"));
	ck_assert_ptr_nonnull(strstr(pa, "a note \\u0001 here"));
	free(pa);
	free(la);
	free(plan);
	free(lint);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "without_simulation", without_simulation },
		{ "calls", calls_from_the_report },
		{ "findings", findings_per_call },
		{ "sim_text", sim_text_table },
		{ "findings_json", findings_as_lint_writes_them },
	};

	return RUN_CASES("report", cases, 60);
}
