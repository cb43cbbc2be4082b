/*
 * Floats the schema takes as integers (planner/schema_ints.c, GT206): 2.0
 * where an integer goes is valid (JSON Schema 2020-12), reported once for
 * its spelling (an error for Megatron's parallel sizes, a warning for
 * NeMo-RL's other integers, a note for gtplan's own keys), and settled to
 * the integer before planning, so that the plan and every other finding
 * are those of `2`. Fractional and huge floats stay type errors (GT200), a
 * value with another error gets that error alone, and `gtplan config`'s
 * check leaves the tree as written.
 *
 * Each lint here runs what `gtplan lint` runs (cli/job.c): parse, resolve,
 * schema_settle_config, plan_build, sim_run; the plan JSON and the
 * findings are compared with those of the same config written with
 * integers.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cfg_keys.h"
#include "diag.h"
#include "plan.h"
#include "report.h"
#include "schema.h"
#include "simulate.h"
#include "diag_fixture.h"
#include "harness.h"

/* gtplan's bundled example (examples/default.yaml: GRPO, Llama-3.1-8B,
 * TP 4 x GTP 3 on 3 nodes of 8) with five values to fill in: TP, PP, the
 * expert TP, the global batch and vLLM's TP. */
static const char tmpl[] =
	"policy:\n"
	"  model_name: meta-llama/Llama-3.1-8B-Instruct\n"
	"  train_global_batch_size: %s\n"
	"  train_micro_batch_size: 4\n"
	"  logprob_batch_size: 4\n"
	"  max_total_sequence_length: 4096\n"
	"  dtensor_cfg: {enabled: false}\n"
	"  megatron_cfg:\n"
	"    enabled: true\n"
	"    tensor_model_parallel_size: %s\n"
	"    tensor_parallel_num_weight_shards: 12\n"
	"    context_parallel_size: 1\n"
	"    pipeline_model_parallel_size: %s\n"
	"    expert_model_parallel_size: 1\n"
	"    expert_tensor_parallel_size: %s\n"
	"    sequence_parallel: true\n"
	"    optimizer: {use_distributed_optimizer: true}\n"
	"    distributed_data_parallel_config:\n"
	"      num_distributed_optimizer_instances: 1\n"
	"  generation:\n"
	"    backend: vllm\n"
	"    colocated: {enabled: true}\n"
	"    vllm_cfg: {tensor_parallel_size: %s, pipeline_parallel_size: 1}\n"
	"grpo: {num_prompts_per_step: 60, num_generations_per_prompt: 8}\n"
	"checkpointing: {enabled: true, checkpoint_dir: results/x, "
	"save_period: 10}\n"
	"cluster: {num_nodes: 3, gpus_per_node: 8}\n"
	"gtplan: {rank_order: tp-cp-gtp-ep-dp-pp, driver_layout: 4d}\n";

/* The template's values, integers as the example writes them. */
struct vals {
	const char *gbs, *tp, *pp, *etp, *vllm_tp;
};
static const struct vals ints = { "480", "4", "1", "null", "4" };

struct lint {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct plan plan;
	struct sim_report sim;
	int schema_errs, past_max, planned;
	char *plan_json; /* the plan without its findings */
	size_t plan_len;
};

/* Lints `yaml` as t.yaml the way `gtplan lint` does (cli/job.c). */
static void lint_text(struct lint *l, const char *yaml)
{
	char *text = strdup(yaml);
	FILE *f;

	memset(l, 0, sizeof(*l));
	src_set_init(&l->srcs);
	diag_list_init(&l->diags, &l->srcs);
	plan_init(&l->plan);
	sim_report_init(&l->sim);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml),
					&l->srcs, &l->diags, &l->root), 0);
	ck_assert_int_eq(cfg_resolve(l->root, &l->srcs, &l->diags), 0);
	l->schema_errs = schema_settle_config(l->root, &l->diags,
					      &l->past_max);
	ck_assert_int_ge(l->schema_errs, 0);
	if (l->past_max || plan_build(&l->plan, l->root, "t.yaml", &l->diags))
		return;
	ck_assert_int_ge(sim_run(&l->plan, l->root, NULL, &l->sim,
				 &l->diags), 0);
	l->planned = 1;
	f = open_memstream(&l->plan_json, &l->plan_len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(plan_write_json(f, &l->plan, &l->sim, NULL), 0);
	ck_assert_int_eq(fclose(f), 0);
}

static void lint(struct lint *l, struct vals v)
{
	char yaml[sizeof(tmpl) + 256];

	snprintf(yaml, sizeof(yaml), tmpl, v.gbs, v.tp, v.pp, v.etp,
		 v.vllm_tp);
	lint_text(l, yaml);
}

static void lint_release(struct lint *l)
{
	free(l->plan_json);
	sim_report_release(&l->sim);
	plan_release(&l->plan);
	cfg_free(l->root);
	diag_list_release(&l->diags);
	src_set_release(&l->srcs);
}

static size_t count(const struct lint *l, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < l->diags.n; i++)
		n += strcmp(diag_code(&l->diags.v[i]), code) == 0;
	return n;
}

/* The only finding of `code` (the test fails unless there is one). */
static const struct diag *one(const struct lint *l, const char *code)
{
	const struct diag *d = NULL;

	ck_assert_msg(count(l, code) == 1, "%zu %s findings, want 1",
		      count(l, code), code);
	for (size_t i = 0; i < l->diags.n; i++)
		if (strcmp(diag_code(&l->diags.v[i]), code) == 0)
			d = &l->diags.v[i];
	return d;
}

/* The findings of a and b other than GT206 are the same: code, severity,
 * place, path, message and hint, in order. */
static size_t skip_gt206(const struct lint *l, size_t i)
{
	while (i < l->diags.n && !strcmp(diag_code(&l->diags.v[i]), "GT206"))
		i++;
	return i;
}

static void same_findings(const struct lint *a, const struct lint *b)
{
	size_t i = skip_gt206(a, 0), j = skip_gt206(b, 0);

	for (; i < a->diags.n && j < b->diags.n;
	     i = skip_gt206(a, i + 1), j = skip_gt206(b, j + 1)) {
		const struct diag *x = &a->diags.v[i], *y = &b->diags.v[j];

		ck_assert_str_eq(diag_code(x), diag_code(y));
		ck_assert_int_eq(x->severity, y->severity);
		ck_assert_int_eq(x->loc.line, y->loc.line);
		ck_assert_int_eq(x->loc.col, y->loc.col);
		ck_assert_str_eq(x->path ? x->path : "", y->path ? y->path : "");
		ck_assert_str_eq(x->msg, y->msg);
		ck_assert_str_eq(x->hint ? x->hint : "", y->hint ? y->hint : "");
	}
	ck_assert_uint_eq(i, a->diags.n);
	ck_assert_uint_eq(j, b->diags.n);
}

/* a's config with one value written as a float lints as b's: the same
 * plan, byte for byte, and the same other findings. */
static void same_as_ints(const struct lint *a)
{
	struct lint b;

	lint(&b, ints);
	ck_assert(a->planned && b.planned);
	ck_assert_uint_eq(a->plan_len, b.plan_len);
	ck_assert_int_eq(memcmp(a->plan_json, b.plan_json, b.plan_len), 0);
	ck_assert_uint_eq(count(&b, "GT206"), 0);
	same_findings(a, &b);
	lint_release(&b);
}

/* ---- Megatron's sizes: an error, planned as the integer ---------------- */

START_TEST(megatron_size_is_an_error_planned_as_its_integer)
{
	/* every spelling YAML reads as a float (cfg_scalar_type) */
	static const char *const tp4[] = { "4.0", "4.", "+4.0", "4e0", "40e-1",
					    "4.000", "0.4e1", ".4e1" };

	for (size_t i = 0; i < sizeof(tp4) / sizeof(*tp4); i++) {
		struct vals v = ints;
		struct lint l;
		const struct diag *d;
		const struct cfg_node *n;

		v.tp = tp4[i];
		lint(&l, v);
		ck_assert_int_eq(l.schema_errs, 0);
		ck_assert_uint_eq(count(&l, "GT200"), 0);
		d = one(&l, "GT206");
		ck_assert_int_eq(d->severity, DIAG_ERROR);
		ck_assert_str_eq(d->path, KEY_TP);
		ck_assert_int_eq(d->loc.line, 10);
		ck_assert_int_eq(d->loc.col, 33);
		ck_assert_ptr_nonnull(strstr(d->msg, "gtplan plans with 4, but "
					     "Megatron-core gets 4.0"));
		ck_assert_ptr_nonnull(strstr(d->msg, tp4[i]));
		ck_assert_ptr_nonnull(strstr(d->hint, "write 4:"));
		ck_assert_ptr_nonnull(strstr(d->hint, "range()"));
		/* settled: the node `4` gives */
		n = cfg_path(l.root, KEY_TP);
		ck_assert_int_eq(n->kind, CFG_INT);
		ck_assert_int_eq(n->v.i, 4);
		ck_assert_str_eq(n->text, "4");
		ck_assert_int_eq(l.plan.tp, 4);
		same_as_ints(&l);
		lint_release(&l);
	}
}
END_TEST

/* PP and the expert TP (integer-or-null: an anyOf) are Megatron's too;
 * a float from an interpolation counts as one written by hand. */
START_TEST(every_megatron_size_and_interpolations)
{
	struct vals v = ints;
	struct lint l;
	const struct diag *d;

	v.pp = "1.0";
	v.etp = "4.0";
	lint(&l, v);
	ck_assert_uint_eq(count(&l, "GT206"), 2);
	for (size_t i = 0; i < l.diags.n; i++)
		if (!strcmp(diag_code(&l.diags.v[i]), "GT206"))
			ck_assert_int_eq(l.diags.v[i].severity, DIAG_ERROR);
	ck_assert_int_eq(cfg_path(l.root, KEY_ETP)->kind, CFG_INT);
	lint_release(&l);

	/* NeMo-RL's div resolver is Python's /: a float */
	v = ints;
	v.pp = "${div:4,4}";
	lint(&l, v);
	d = one(&l, "GT206");
	ck_assert_str_eq(d->path, KEY_PP);
	ck_assert_ptr_nonnull(strstr(d->msg, "1.0 is a float"));
	ck_assert_int_eq(cfg_path(l.root, KEY_PP)->kind, CFG_INT);
	same_as_ints(&l);
	lint_release(&l);
}
END_TEST

/* ---- NeMo-RL's other integers: a warning; gtplan's own: a note ---------- */

START_TEST(other_keys_warn_and_plan_the_same)
{
	struct vals v = ints;
	struct lint l;
	const struct diag *d;

	v.vllm_tp = "4.0";
	lint(&l, v);
	d = one(&l, "GT206");
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	ck_assert_str_eq(d->path, KEY_GEN "vllm_cfg.tensor_parallel_size");
	ck_assert_ptr_nonnull(strstr(d->hint, "pydantic"));
	same_as_ints(&l);
	lint_release(&l);

	v = ints;
	v.gbs = "480.0";
	lint(&l, v);
	d = one(&l, "GT206");
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	ck_assert_str_eq(d->path, KEY_GLOBAL_BATCH);
	ck_assert_str_eq(d->msg, "480.0 is a float: gtplan reads it as 480, "
			 "but NeMo-RL's Python code gets 480.0");
	ck_assert_ptr_nonnull(strstr(d->hint, "in arithmetic it passes"));
	same_as_ints(&l);
	lint_release(&l);
}
END_TEST

START_TEST(gtplan_keys_are_a_note)
{
	struct lint l;
	const struct diag *d;

	lint_text(&l, "cluster: {num_nodes: 1, gpus_per_node: 8}\n"
		  "gtplan:\n  interconnect: {nvlink_domain_size: 8.0}\n"
		  "  runtime: {seed: 9007199254740992.0}\n");
	ck_assert_uint_eq(count(&l, "GT206"), 2);
	for (size_t i = 0; i < l.diags.n; i++) {
		d = &l.diags.v[i];
		if (!strcmp(diag_code(d), "GT206"))
			ck_assert_int_eq(d->severity, DIAG_NOTE);
	}
	/* 2^53, the largest float that still holds every integer below it */
	ck_assert_int_eq(cfg_path(l.root, "gtplan.runtime.seed")->v.i,
			 9007199254740992LL);
	lint_release(&l);
}
END_TEST

/* ---- what stays refused ------------------------------------------------- */

START_TEST(fractional_and_huge_floats_stay_type_errors)
{
	static const char *const bad[] = { "4.5", "1e20", "9007199254740994.0",
					    ".inf", ".nan" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct vals v = ints;
		struct lint l;

		v.tp = bad[i];
		lint(&l, v);
		ck_assert_int_eq(l.schema_errs, 1);
		ck_assert_ptr_nonnull(strstr(one(&l, "GT200")->msg,
					     "expected a positive integer, got "
					     "number"));
		ck_assert_uint_eq(count(&l, "GT206"), 0);
		/* not settled: the plan holds no TP the user did not write */
		ck_assert_int_eq(cfg_path(l.root, KEY_TP)->kind, CFG_FLOAT);
		ck_assert(l.plan.sizes_refused);
		lint_release(&l);
	}
}
END_TEST

/* A float that is an integer but breaks a bound gets that finding alone;
 * one past the maximum stops planning, as an integer does (schema.h). */
START_TEST(another_error_is_the_only_finding)
{
	struct vals v = ints;
	struct lint l;

	v.tp = "0.0";
	lint(&l, v);
	ck_assert_str_eq(one(&l, "GT201")->msg, "must be at least 1, got 0.0");
	ck_assert_uint_eq(count(&l, "GT206"), 0);
	ck_assert_uint_eq(count(&l, "GT200"), 0);
	ck_assert_int_eq(cfg_path(l.root, KEY_TP)->kind, CFG_FLOAT);
	lint_release(&l);

	v.tp = "1e15";
	lint(&l, v);
	ck_assert_str_eq(one(&l, "GT201")->msg, "must be at most 1048576, got "
			 "1e15");
	ck_assert_int_eq(l.past_max, 1);
	ck_assert(!l.planned);
	ck_assert_uint_eq(count(&l, "GT206"), 0);
	lint_release(&l);
}
END_TEST

/* ---- once per value; `gtplan config` settles nothing --------------------- */

START_TEST(one_finding_per_value)
{
	static const char schema[] =
		"{\"properties\": {\"a\": {\"allOf\": [{\"type\": \"integer\"},"
		" {\"type\": [\"integer\", \"null\"], \"minimum\": 1}]}},"
		" \"patternProperties\": {\"^a$\": {\"type\": \"integer\"}},"
		" \"additionalProperties\": {\"type\": \"integer\"}}";
	const char yaml[] = "a: 3.0\nb: [1]\nc: 5.0\n";
	char err[256], *text = strdup(yaml);
	struct schema *s = schema_load(schema, strlen(schema), err,
				       sizeof(err));
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;

	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_ptr_nonnull(text);
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &srcs,
					&diags, &root), 0);
	/* b is a list, not an integer: one error; a and c are integers */
	ck_assert_int_eq(schema_validate(s, root, &diags), 1);
	ck_assert_uint_eq(diags.n, 3);
	ck_assert_str_eq(diag_code(&diags.v[0]), "GT200");
	ck_assert_str_eq(diag_code(&diags.v[1]), "GT206");
	ck_assert_str_eq(diags.v[1].path, "a");
	ck_assert_str_eq(diag_code(&diags.v[2]), "GT206");
	ck_assert_str_eq(diags.v[2].path, "c");
	ck_assert_int_eq(diags.v[2].severity, DIAG_WARNING);
	/* validation never changes the tree */
	ck_assert_int_eq(cfg_get(root, "a")->kind, CFG_FLOAT);
	cfg_free(root);
	diag_list_release(&diags);
	src_set_release(&srcs);
	schema_free(s);
}
END_TEST

START_TEST(config_check_leaves_the_value_as_written)
{
	char yaml[sizeof(tmpl) + 256];
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	const struct cfg_node *n;
	int past_max;

	snprintf(yaml, sizeof(yaml), tmpl, "480", "4.0", "1", "null", "4");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	ck_assert_int_eq(cfg_parse_text("t.yaml", strdup(yaml), strlen(yaml),
					&srcs, &diags, &root), 0);
	ck_assert_int_eq(schema_check_config_limits(root, &diags, &past_max),
			 0);
	ck_assert_uint_eq(diags.n, 1);
	ck_assert_str_eq(diag_code(&diags.v[0]), "GT206");
	n = cfg_path(root, KEY_TP);
	ck_assert_int_eq(n->kind, CFG_FLOAT);
	ck_assert_str_eq(n->text, "4.0");
	cfg_free(root);
	diag_list_release(&diags);
	src_set_release(&srcs);
}
END_TEST

/* A number the interpolation builds as a string (oc.env's value, text
 * around a ${...}) stays a type error, with a hint that names the
 * interpolation, not quotes the file does not have; a quoted number that
 * a ${...} refers to keeps the quotes' hint and the note of where it is. */
START_TEST(interpolated_strings_are_not_quotes)
{
	static const char *const built[] = { "${oc.env:GTPLAN_T_TP}",
					      "\"${oc.env:GTPLAN_T_TP}\"",
					      "\"${cluster.num_nodes}1\"" };
	struct vals v = ints;
	struct lint l;
	const struct diag *d;

	ck_assert_int_eq(setenv("GTPLAN_T_TP", "4", 1), 0);
	for (size_t i = 0; i < sizeof(built) / sizeof(*built); i++) {
		v.tp = built[i];
		lint(&l, v);
		ck_assert_int_eq(l.schema_errs, 1);
		d = diag_once(&l.diags, "GT200");
		ck_assert_ptr_nonnull(strstr(d->hint, "the interpolation "
					     "gives the string"));
		ck_assert_ptr_nonnull(strstr(d->hint, "set it with an "
					     "override: " KEY_TP "="));
		ck_assert_ptr_null(strstr(d->hint, "remove the quotes"));
		lint_release(&l);
	}
	v.tp = "${gtplan.tp}";
	{
		char yaml[sizeof(tmpl) + 256];
		size_t n;

		n = (size_t)snprintf(yaml, sizeof(yaml), tmpl, v.gbs, v.tp,
				     v.pp, v.etp, v.vllm_tp);
		snprintf(yaml + n - 2, sizeof(yaml) - n + 2, ", tp: \"4\"}\n");
		lint_text(&l, yaml);
	}
	d = diag_once(&l.diags, "GT200");
	ck_assert_ptr_nonnull(strstr(d->hint, "remove the quotes"));
	ck_assert_uint_eq(d->n_notes, 1);
	lint_release(&l);
	unsetenv("GTPLAN_T_TP");
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "megatron_error", megatron_size_is_an_error_planned_as_its_integer },
		{ "megatron_sizes", every_megatron_size_and_interpolations },
		{ "other_keys", other_keys_warn_and_plan_the_same },
		{ "gtplan_keys", gtplan_keys_are_a_note },
		{ "refused", fractional_and_huge_floats_stay_type_errors },
		{ "interp_strings", interpolated_strings_are_not_quotes },
		{ "other_error", another_error_is_the_only_finding },
		{ "once", one_finding_per_value },
		{ "config", config_check_leaves_the_value_as_written },
	};

	return RUN_CASES("schema_ints", cases, 60);
}
