/*
 * gtplan.stack (sim/stack.h): defaults, the nemo-rl-pr4512 preset, single
 * keys over it, an unknown preset (GT700), the refit row orders of
 * docs/design.md §2.5 and the refit checks GT701-GT705 on the layouts of
 * NeMo-RL PR #4512's pages (TP 2, G 3, 6 GPUs; TP 4, G 3, 24 GPUs).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "diag_fixture.h"
#include "grid_yaml.h"
#include "plan.h"
#include "simulate.h"
#include "stack.h"
#include "model.h"
#include "harness.h"
#include "sim_fixture.h"

static char buf[4096];

/* Both configs' generation: Megatron's, the refit's target. */
#define GEN_MEGATRON "  generation:\n    backend: megatron\n"

/* TP tp, G g on n GPUs (one node), a model, then `extra` (gtplan: ...). */
static const char *yaml(long long tp, long long g, long long gpus,
			const char *model, const char *extra)
{
	char policy[256];
	struct grid_yaml y = {
		.policy = policy, .batch = gpus / tp, .tp = tp,
		.shards = tp * g, .nodes = gpus > 8 ? gpus / 8 : 1,
		.gpus = gpus > 8 ? 8 : gpus, .tail = extra,
	};

	snprintf(policy, sizeof(policy), "  model_name: %s\n" GEN_MEGATRON,
		 model);
	return grid_yaml_text(buf, sizeof(buf), &y);
}

static void lint(struct sim_fx *f, const char *text)
{
	int rc = sim_fx_run(f, text);

	ck_assert_int_ge(rc, 0);
}

static const struct diag *find(const struct sim_fx *f, const char *code)
{
	return diag_once(&f->diags, code);
}

static size_t count7(const struct sim_fx *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strncmp(diag_code(&f->diags.v[i]), "GT70", 4) == 0;
	return n;
}

/* A stack read from `text` (a whole config). */
static int read_stack(const char *text, struct stack *s, size_t *n_diags)
{
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct settings set;
	char *t = strdup(text);
	int rc;

	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	ck_assert_int_eq(cfg_parse_text("s.yaml", t, strlen(text), &srcs,
					&diags, &root), 0);
	settings_read(&set, root);
	rc = stack_read(&set.sim.stack, s, &diags);
	*n_diags = diags.n;
	if (diags.n)
		ck_assert_str_eq(diag_code(&diags.v[0]), "GT700");
	/* s->transformer_engine points into root: copy */
	if (s->transformer_engine)
		s->transformer_engine =
			!strcmp(s->transformer_engine, "2.14.1") ? "2.14.1" :
			!strcmp(s->transformer_engine, "2.19.0") ? "2.19.0" :
			"other";
	settings_release(&set);
	cfg_free(root);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

START_TEST(defaults_are_correct)
{
	struct stack s;
	size_t n;

	ck_assert_int_eq(read_stack("a: 1\n", &s, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(s.preset);
	ck_assert_int_eq(s.rng_dp_cp, 0);
	ck_assert_int_eq(s.replica_dp_cp, 0);
	ck_assert_int_eq(s.refit_gather, STACK_GATHER_GTP_THEN_TP);
	ck_assert_int_eq(s.compare_without_shards, 0);
	ck_assert_int_eq(s.batch_copies, 0);
	ck_assert_ptr_null(s.transformer_engine);
	ck_assert_int_eq(s.mcore_gtp_fixes, 1);
	ck_assert_int_eq(s.writer_dp_cp_gtp, 0);
	ck_assert_int_eq(s.opt_format, STACK_OPT_UNSET);
	ck_assert_int_eq(s.mlm_7162, 1);
	ck_assert_str_eq(stack_opt_format_name(s.opt_format),
			 "dp_reshardable");
}
END_TEST

/* The checkpoint keys: the writer group, the optimizer format and
 * Megatron-LM PR #7162; a preset leaves them (and their places) alone. */
START_TEST(checkpoint_keys)
{
	struct stack s;
	size_t n;

	ck_assert_int_eq(read_stack("gtplan:\n  stack:\n"
				    "    sharded_replica_group: dp_cp_gtp\n"
				    "    optimizer_ckpt_format: "
				    "fully_sharded_model_space\n"
				    "    megatron_lm_7162: false\n", &s, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(s.writer_dp_cp_gtp, 1);
	ck_assert_int_eq(s.opt_format, STACK_OPT_FULLY_SHARDED_MODEL_SPACE);
	ck_assert_int_eq(s.mlm_7162, 0);
	ck_assert_int_eq(s.loc[STACK_WRITER].line, 3);
	ck_assert_int_eq(s.loc[STACK_OPT_FORMAT].line, 4);
	ck_assert_int_eq(s.loc[STACK_7162].line, 5);
	ck_assert_int_eq(read_stack("gtplan:\n  stack:\n"
				    "    optimizer_ckpt_format: fully_reshardable\n"
				    "    preset: nemo-rl-pr4512\n", &s, &n), 0);
	ck_assert_int_eq(s.opt_format, STACK_OPT_FULLY_RESHARDABLE);
	ck_assert_str_eq(stack_opt_format_name(s.opt_format),
			 "fully_reshardable");
	ck_assert_int_eq(s.mlm_7162, 1);
	ck_assert_int_lt(s.loc[STACK_7162].src, 0);
	ck_assert_int_lt(s.loc[STACK_WRITER].src, 0);
	ck_assert_int_eq(s.loc[STACK_RNG].line, 4); /* the preset's */
}
END_TEST

START_TEST(preset_and_override)
{
	struct stack s;
	size_t n;

	ck_assert_int_eq(read_stack("gtplan:\n  stack:\n    preset: "
				    "nemo-rl-pr4512\n", &s, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(s.rng_dp_cp, 1);
	ck_assert_int_eq(s.replica_dp_cp, 1);
	ck_assert_int_eq(s.refit_gather, STACK_GATHER_TP_ONLY);
	ck_assert_int_eq(s.compare_without_shards, 1);
	ck_assert_str_eq(s.transformer_engine, "2.14.1");
	ck_assert_int_eq(s.mcore_gtp_fixes, 0);
	ck_assert_int_eq(s.loc[STACK_GATHER].line, 3);
	/* single keys override it */
	ck_assert_int_eq(read_stack("gtplan:\n  stack:\n    preset: "
				    "nemo-rl-pr4512\n    refit_gather: "
				    "gtp_then_tp\n    rng_state_group: dp_cp_gtp\n"
				    "    transformer_engine: \"2.19.0\"\n",
				    &s, &n), 0);
	ck_assert_int_eq(s.refit_gather, STACK_GATHER_GTP_THEN_TP);
	ck_assert_int_eq(s.loc[STACK_GATHER].line, 4);
	ck_assert_int_eq(s.rng_dp_cp, 0);
	ck_assert_str_eq(s.transformer_engine, "2.19.0");
	ck_assert_int_eq(s.compare_without_shards, 1); /* still the preset's */
	ck_assert_int_eq(s.mcore_gtp_fixes, 0);
}
END_TEST

START_TEST(unknown_preset)
{
	struct sim_fx f;
	struct stack s;
	size_t n;
	const struct diag *d;

	ck_assert_int_eq(read_stack("gtplan:\n  stack:\n    preset: nemo\n",
				    &s, &n), -1);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(s.refit_gather, STACK_GATHER_GTP_THEN_TP);
	lint(&f, yaml(2, 3, 6, "Qwen/Qwen3-0.6B",
		      "gtplan:\n  stack:\n    preset: nemo\n"));
	d = find(&f, "GT700");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "'nemo'"));
	ck_assert_ptr_nonnull(strstr(d->hint, "nemo-rl-pr4512"));
	ck_assert_uint_eq(count7(&f), 1);
	sim_fx_release(&f);
	ck_assert_int_eq(stack_explain_preset(stdout, "nemo"), -1);
	ck_assert_uint_eq(stack_preset_count(), 1);
	ck_assert_str_eq(stack_preset_name(0), "nemo-rl-pr4512");
}
END_TEST

START_TEST(row_orders_of_seed_000)
{
	long long r[24], want_tg[24], n;
	/* TP=2, G=3, 24 rows: 0-3, 12-15, 4-7, 16-19, 8-11, 20-23 */
	const long long runs[6] = { 0, 12, 4, 16, 8, 20 };

	for (int i = 0; i < 24; i++)
		want_tg[i] = runs[i / 4] + i % 4;
	n = stack_refit_rows(STACK_GATHER_TP_THEN_GTP, 2, 3, 24, r, 24);
	ck_assert_int_eq(n, 24);
	for (int i = 0; i < 24; i++)
		ck_assert_int_eq(r[i], want_tg[i]);
	n = stack_refit_rows(STACK_GATHER_GTP_THEN_TP, 2, 3, 24, r, 24);
	ck_assert_int_eq(n, 24);
	for (int i = 0; i < 24; i++)
		ck_assert_int_eq(r[i], i);
	/* TP only, rank 0: rows 0-3 + 12-15 = [8, k] */
	n = stack_refit_rows(STACK_GATHER_TP_ONLY, 2, 3, 24, r, 24);
	ck_assert_int_eq(n, 8);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(r[i], i < 4 ? i : 12 + i - 4);
	/* max bounds the writes */
	r[2] = -7;
	ck_assert_int_eq(stack_refit_rows(STACK_GATHER_GTP_THEN_TP, 2, 3, 24,
					  r, 2), 24);
	ck_assert_int_eq(r[2], -7);
}
END_TEST

START_TEST(te_versions)
{
	ck_assert_int_eq(stack_te_supports_gtp("2.14.1"), 0);
	ck_assert_int_eq(stack_te_supports_gtp("2.19.0.dev0"), 1);
	ck_assert_int_eq(stack_te_supports_gtp("2.19"), 1);
	ck_assert_int_eq(stack_te_supports_gtp("3.0"), 1);
	ck_assert_int_eq(stack_te_supports_gtp("1.99"), 0);
	ck_assert_int_eq(stack_te_supports_gtp("latest"), -1);
	ck_assert_int_eq(stack_te_supports_gtp(NULL), -1);
}
END_TEST

/* Fires with `extra` on NeMo-RL PR #4512's two layouts, not with G = 1 or
 * with the correct value; the message holds `text`. */
static void fires(const char *code, const char *model, const char *bad,
		  const char *good, const char *text)
{
	const long long lay[2][3] = { { 2, 3, 6 }, { 4, 3, 24 } };
	struct sim_fx f;
	const struct diag *d;

	for (int i = 0; i < 2; i++) {
		lint(&f, yaml(lay[i][0], lay[i][1], lay[i][2], model, bad));
		d = find(&f, code);
		ck_assert_msg(d != NULL, "%s not reported", code);
		ck_assert_int_eq(d->severity, DIAG_ERROR);
		ck_assert_ptr_nonnull(d->hint);
		if (i == 0 && text)
			ck_assert_msg(strstr(d->msg, text), "%s: '%s' not in "
				      "'%s'", code, text, d->msg);
		sim_fx_release(&f);
		lint(&f, yaml(lay[i][0], lay[i][1], lay[i][2], model, good));
		ck_assert_uint_eq(count7(&f), 0);
		sim_fx_release(&f);
		/* G = 1: no GTP, nothing to say */
		lint(&f, yaml(lay[i][0], 1, lay[i][2], model, bad));
		ck_assert_uint_eq(count7(&f), 0);
		sim_fx_release(&f);
	}
}

#define STACK(kv) "gtplan:\n  stack:\n    " kv "\n"

START_TEST(GT701_tp_only)
{
	fires("GT701", "Qwen/Qwen3-0.6B", STACK("refit_gather: tp_only"),
	      STACK("refit_gather: gtp_then_tp"),
	      "linear_fc1 comes back [2048, k] (rows 0-1023, 3072-4095) "
	      "instead of [6144, k]");
}
END_TEST

START_TEST(GT702_tp_then_gtp)
{
	fires("GT702", "Qwen/Qwen3-0.6B", STACK("refit_gather: tp_then_gtp"),
	      "", "rows 0-1023, 3072-4095, 1024-2047, 4096-5119, ... instead "
	      "of 0-6143");
}
END_TEST

START_TEST(GT702_unknown_shape_uses_the_example)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, yaml(2, 3, 6, "my/unknown-model",
		      STACK("refit_gather: tp_then_gtp")));
	d = find(&f, "GT702");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "rows 0-3, 12-15, 4-7, 16-19, "
				     "... instead of 0-23"));
	sim_fx_release(&f);
}
END_TEST

START_TEST(GT703_silent_skip)
{
	fires("GT703", "Qwen/Qwen3-0.6B",
	      STACK("inference_layout_compare: without_shards"),
	      STACK("inference_layout_compare: with_shards"), "TP 2 x GTP 3");
}
END_TEST

START_TEST(GT704_te_floor)
{
	fires("GT704", "Qwen/Qwen3-0.6B",
	      STACK("transformer_engine: \"2.14.1\""),
	      STACK("transformer_engine: \"2.19.0\""), "TypeError");
}
END_TEST

START_TEST(GT705_bias_sizing)
{
	fires("GT705", "Qwen/Qwen2.5-0.5B",
	      STACK("megatron_core_gtp_fixes: false"),
	      STACK("megatron_core_gtp_fixes: true"), "add_qkv_bias");
}
END_TEST

START_TEST(preset_fires_its_traps)
{
	struct sim_fx f;

	lint(&f, yaml(2, 3, 6, "Qwen/Qwen2.5-0.5B",
		      STACK("preset: nemo-rl-pr4512")));
	ck_assert_ptr_nonnull(find(&f, "GT701"));
	ck_assert_ptr_nonnull(find(&f, "GT703"));
	ck_assert_ptr_nonnull(find(&f, "GT704"));
	ck_assert_ptr_nonnull(find(&f, "GT705"));
	ck_assert_uint_eq(count7(&f), 4);
	sim_fx_release(&f);
}
END_TEST

/* GT7xx findings (GT70x, GT71x, GT72x). */
static size_t count7x(const struct sim_fx *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strncmp(diag_code(&f->diags.v[i]), "GT70", 4) == 0 ||
		     strncmp(diag_code(&f->diags.v[i]), "GT72", 4) == 0;
	return n;
}

START_TEST(GT720_batch_split_over_copies)
{
	struct sim_fx f;
	const struct diag *d;

	/* TP 4, G 3, 24 GPUs, D 2, L 6 (docs/design.md §2.1) */
	lint(&f, yaml(4, 3, 24, "Qwen/Qwen3-0.6B", STACK("batch_split: copies")));
	d = find(&f, "GT720");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->severity, DIAG_ERROR);
	ck_assert_ptr_nonnull(d->hint);
	ck_assert_int_eq(d->loc.line, 16);
	ck_assert_msg(strstr(d->msg, "D = 2 copies instead of the L = 6 lanes "
			     "(D 2 x G 3): each lane trains 6 / 2 = 3 samples "
			     "instead of 6 / 6 = 1, 3 times"), "%s", d->msg);
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg, "3 times too large"));
	ck_assert_uint_eq(count7x(&f), 1);
	sim_fx_release(&f);
	/* TP 2, G 3, 6 GPUs: D 1, L 3 */
	lint(&f, yaml(2, 3, 6, "Qwen/Qwen3-0.6B", STACK("batch_split: copies")));
	d = find(&f, "GT720");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "3 / 1 = 3 samples instead of "
				     "3 / 3 = 1"));
	sim_fx_release(&f);
	/* lanes: nothing; G = 1: D == L, nothing */
	lint(&f, yaml(2, 3, 6, "Qwen/Qwen3-0.6B", STACK("batch_split: lanes")));
	ck_assert_uint_eq(count7x(&f), 0);
	sim_fx_release(&f);
	lint(&f, yaml(4, 1, 24, "Qwen/Qwen3-0.6B", STACK("batch_split: copies")));
	ck_assert_ptr_null(find(&f, "GT720"));
	ck_assert_uint_eq(count7x(&f), 0);
	sim_fx_release(&f);
}
END_TEST

static char rbuf[4096];

/* TP tp, CP cp, G g, PP pp, D d; nodes of 8 GPUs or one node of all. */
static const char *ryaml(long long tp, long long cp, long long g,
			 long long pp, long long d, int eight,
			 const char *extra)
{
	long long w = tp * cp * g * pp * d;
	struct grid_yaml y = {
		.policy = "  model_name: Qwen/Qwen3-0.6B\n" GEN_MEGATRON,
		.batch = d * g * pp, .tp = tp, .cp = cp, .pp = pp,
		.shards = tp * g, .nodes = eight ? w / 8 : 1,
		.gpus = eight ? 8 : w, .tail = extra,
	};

	return grid_yaml_text(rbuf, sizeof(rbuf), &y);
}

START_TEST(random_layouts_default_stack)
{
	static const long long tps[] = { 1, 2, 4 }, cps[] = { 1, 2 },
		gs[] = { 1, 2, 3 }, pps[] = { 1, 2 }, ds[] = { 1, 2, 3 };
	unsigned seed = 20261129;

	for (int it = 0; it < 60; it++) {
		long long tp, cp, g, pp, d, w;
		int eight;
		struct sim_fx f;
		struct model_weight wt[MODEL_MAX_WEIGHTS];
		size_t nw, checked = 0;
		const struct diag *dg;

		seed = seed * 1103515245u + 12345u;
		tp = tps[(seed >> 8) % 3];
		cp = cps[(seed >> 12) % 2];
		g = gs[(seed >> 14) % 3];
		pp = pps[(seed >> 18) % 2];
		d = ds[(seed >> 20) % 3];
		w = tp * cp * g * pp * d;
		eight = w % 8 == 0 && (seed >> 24) % 2;

		/* default stack: no GT70x / GT72x */
		lint(&f, ryaml(tp, cp, g, pp, d, eight, ""));
		ck_assert_msg(f.plan.grid_ok, "TP %lld CP %lld G %lld PP %lld "
			      "D %lld: grid", tp, cp, g, pp, d);
		ck_assert_int_eq(f.plan.lanes, d * g);
		ck_assert_msg(count7x(&f) == 0, "TP %lld CP %lld G %lld PP %lld "
			      "D %lld: %s", tp, cp, g, pp, d,
			      f.diags.n ? f.diags.v[0].msg : "");
		/* the default gather order rebuilds rows 0..R-1 */
		nw = model_layer_weights(&f.sim.model, wt, MODEL_MAX_WEIGHTS);
		for (size_t i = 0; i < nw; i++) {
			long long *r, n;

			if (wt[i].rows % (tp * g))
				continue;
			r = malloc(sizeof(*r) * (size_t)wt[i].rows);
			ck_assert_ptr_nonnull(r);
			n = stack_refit_rows(STACK_GATHER_GTP_THEN_TP, tp, g,
					     wt[i].rows, r, wt[i].rows);
			ck_assert_int_eq(n, wt[i].rows);
			for (long long k = 0; k < n; k++)
				ck_assert_int_eq(r[k], k);
			/* TP 1: tp_then_gtp is the same order */
			if (tp == 1) {
				n = stack_refit_rows(STACK_GATHER_TP_THEN_GTP,
						     tp, g, wt[i].rows, r,
						     wt[i].rows);
				for (long long k = 0; k < n; k++)
					ck_assert_int_eq(r[k], k);
			}
			free(r);
			checked++;
		}
		ck_assert_uint_gt(checked, 0);
		sim_fx_release(&f);

		/* tp_then_gtp: GT702 exactly when G > 1 and TP > 1 */
		lint(&f, ryaml(tp, cp, g, pp, d, eight,
			       STACK("refit_gather: tp_then_gtp")));
		dg = find(&f, "GT702");
		ck_assert_msg((dg != NULL) == (g > 1 && tp > 1), "TP %lld G "
			      "%lld: GT702 %s", tp, g, dg ? "fired" : "missing");
		ck_assert_uint_eq(count7x(&f), g > 1 && tp > 1);
		sim_fx_release(&f);
	}
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "defaults", defaults_are_correct },
		{ "checkpoint_keys", checkpoint_keys },
		{ "preset", preset_and_override },
		{ "unknown_preset", unknown_preset },
		{ "rows", row_orders_of_seed_000 },
		{ "te", te_versions },
		{ "GT701", GT701_tp_only },
		{ "GT702", GT702_tp_then_gtp },
		{ "GT702_example", GT702_unknown_shape_uses_the_example },
		{ "GT703", GT703_silent_skip },
		{ "GT704", GT704_te_floor },
		{ "GT705", GT705_bias_sizing },
		{ "preset_traps", preset_fires_its_traps },
		{ "GT720", GT720_batch_split_over_copies },
		{ "random_layouts", random_layouts_default_stack },
	};

	return RUN_CASES("stack", cases, 60);
}
