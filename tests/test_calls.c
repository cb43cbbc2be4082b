/*
 * The call table: the built-in rows of docs/calls.md §2, gtplan.calls
 * overrides and additions, their validation (GT520-GT523 at the offending
 * node), and the --list-calls text.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "cfg.h"
#include "diag.h"
#include "diag_fixture.h"
#include "dispatch.h"
#include "report.h"
#include "settings.h"
#include "harness.h"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct settings set;
	struct call_def *v;
	size_t n;
};

/* Parses `yaml` and builds the call table for the layout. */
static void load(struct fx *f, const char *yaml, int five_d)
{
	char *text = strdup(yaml);

	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("c.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	settings_read(&f->set, f->root);
	ck_assert_int_eq(calls_table(&f->set.sim.calls, five_d, &f->v, &f->n,
				     &f->diags), 0);
}

static void release(struct fx *f)
{
	free(f->v);
	settings_release(&f->set);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

/* The only finding with `code`, which must be there exactly once. */
static const struct diag *one(const struct fx *f, const char *code)
{
	const struct diag *d = diag_once(&f->diags, code);

	ck_assert_msg(d != NULL, "%s not reported", code);
	return d;
}

static size_t count(const struct fx *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strcmp(diag_code(&f->diags.v[i]), code) == 0;
	return n;
}

static void at(const struct diag *d, int line, int col)
{
	ck_assert_int_ge(d->loc.src, 0);
	ck_assert_int_eq(d->loc.line, line);
	ck_assert_int_eq(d->loc.col, col);
}

static const struct call_def *row(const struct fx *f, const char *name)
{
	const struct call_def *c = calls_find(f->v, f->n, name);

	ck_assert_msg(c != NULL, "no row %s", name);
	return c;
}

#define CTP (AX_BIT(AX_CP) | AX_BIT(AX_TP) | AX_BIT(AX_PP))

START_TEST(builtin_rows_follow_calls_md)
{
	static const struct {
		const char *name;
		enum call_dispatch disp;
		enum call_program prog;
		unsigned rep, out;
		int train;
	} want[] = {
		{ "train", CALL_SHARDED, PROG_TRAIN, CTP, CTP, 1 },
		{ "get_logprobs", CALL_SHARDED, PROG_FORWARD, CTP, CTP, 0 },
		{ "get_reference_policy_logprobs", CALL_SHARDED, PROG_FORWARD,
		  CTP, CTP, 0 },
		{ "get_topk_logits", CALL_SHARDED, PROG_FORWARD, CTP, CTP, 0 },
		{ "get_full_logits_ipc", CALL_SHARDED, PROG_FORWARD, CTP,
		  AX_BIT(AX_PP), 0 },
		{ "score", CALL_SHARDED, PROG_FORWARD, CTP, CTP, 0 },
		{ "generate", CALL_SHARDED, PROG_FORWARD,
		  AX_BIT(AX_TP) | AX_BIT(AX_PP), AX_BIT(AX_TP) | AX_BIT(AX_PP),
		  0 },
		{ "calibrate_qkv_fp8_scales", CALL_SHARDED, PROG_FORWARD, CTP,
		  CTP, 0 },
		{ "sft_v2_train", CALL_SHARDED, PROG_TRAIN, CTP, CTP, 1 },
		{ "prepare_refit_info", CALL_SINGLE, PROG_NONE, 0, 0, 0 },
		{ "stream_weights_via_ipc", CALL_SINGLE, PROG_REFIT_IPC, 0, 0,
		  0 },
		{ "broadcast_weights_for_collective", CALL_SINGLE,
		  PROG_REFIT_BROADCAST, 0, 0, 0 },
		{ "nccl_reshard_refit", CALL_SINGLE, PROG_REFIT_RESHARD, 0, 0,
		  0 },
		{ "save_checkpoint", CALL_SINGLE, PROG_SAVE, 0, 0, 0 },
		{ "load_checkpoint", CALL_SINGLE, PROG_LOAD, 0, 0, 0 },
		{ "offload_before_refit", CALL_SINGLE, PROG_NONE, 0, 0, 0 },
		{ "offload_after_refit", CALL_SINGLE, PROG_NONE, 0, 0, 0 },
		{ "prepare_for_training", CALL_SINGLE, PROG_NONE, 0, 0, 0 },
		{ "init_nccl_reshard_comm_group", CALL_MULTIPLE,
		  PROG_GROUP_INIT, 0, 0, 0 },
	};
	size_t n = sizeof(want) / sizeof(*want);

	ck_assert_uint_eq(calls_builtin_count(), n);
	ck_assert_ptr_null(calls_builtin_at(n));
	for (size_t i = 0; i < n; i++) {
		const struct call_def *c = calls_builtin_at(i);
		int sharded = want[i].disp == CALL_SHARDED;

		ck_assert_str_eq(c->name, want[i].name);
		ck_assert_int_eq(c->dispatch, want[i].disp);
		ck_assert_int_eq(c->program, want[i].prog);
		ck_assert_uint_eq(c->replicated, want[i].rep);
		ck_assert_uint_eq(c->output, want[i].out);
		ck_assert_int_eq(c->uses_train_batch, want[i].train);
		ck_assert_int_eq(c->moves_data, sharded);
		ck_assert_int_eq(c->n_sharded, sharded);
		if (sharded)
			ck_assert_int_eq(c->sharded[0], AX_DP);
		ck_assert_uint_eq(c->rank0_only, 0);
		ck_assert_int_eq(c->dummy, 0);
		ck_assert_int_lt(c->loc.src, 0);
	}
}
END_TEST

START_TEST(sft_v2_train_shards_gtp_in_5d)
{
	struct call_def *v;
	size_t n;
	const struct call_def *sft, *train;

	ck_assert_int_eq(calls_table(NULL, 1, &v, &n, NULL), 0);
	ck_assert_uint_eq(n, calls_builtin_count());
	sft = calls_find(v, n, "sft_v2_train");
	ck_assert_int_eq(sft->n_sharded, 2);
	ck_assert_int_eq(sft->sharded[0], AX_DP);
	ck_assert_int_eq(sft->sharded[1], AX_GTP);
	train = calls_find(v, n, "train");
	ck_assert_int_eq(train->n_sharded, 1); /* still data_parallel only */
	free(v);

	ck_assert_int_eq(calls_table(NULL, 0, &v, &n, NULL), 0);
	sft = calls_find(v, n, "sft_v2_train");
	ck_assert_int_eq(sft->n_sharded, 1);
	ck_assert_int_eq(sft->sharded[0], AX_DP);
	free(v);
}
END_TEST

START_TEST(override_keeps_unnamed_fields)
{
	struct fx f;
	const struct call_def *g;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: generate\n"
		 "      replicated: [context_parallel, tensor_parallel, "
		 "pipeline_parallel]\n", 0);
	ck_assert_uint_eq(f.diags.n, 0);
	ck_assert_uint_eq(f.n, calls_builtin_count());
	g = row(&f, "generate");
	ck_assert_uint_eq(g->replicated, CTP);
	ck_assert_uint_eq(g->output, AX_BIT(AX_TP) | AX_BIT(AX_PP));
	ck_assert_int_eq(g->n_sharded, 1);
	ck_assert_int_eq(g->program, PROG_FORWARD);
	ck_assert_int_eq(g->moves_data, 1);
	ck_assert_int_eq(g->loc.line, 3); /* the entry */
	ck_assert_int_eq(g->loc.col, 7);
	release(&f);
}
END_TEST

START_TEST(sharded_override_replaces_the_list)
{
	struct fx f;
	const struct call_def *s;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: sft_v2_train\n"
		 "      sharded: [data_parallel]\n", 1);
	ck_assert_uint_eq(f.diags.n, 0);
	s = row(&f, "sft_v2_train");
	ck_assert_int_eq(s->n_sharded, 1);
	ck_assert_int_eq(s->sharded[0], AX_DP);
	release(&f);
}
END_TEST

START_TEST(new_rows_are_added)
{
	struct fx f;
	const struct call_def *c;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: my_train\n"
		 "      dispatch: sharded\n"
		 "      program: train\n"
		 "      sharded: [data_parallel, context_parallel]\n"
		 "      replicated: null\n"
		 "      output: [tensor_parallel]\n"
		 "      dummy: true\n"
		 "    - name: my_refit\n"
		 "      dispatch: single\n"
		 "      program: refit_broadcast\n"
		 "      rank0_only: [tensor_parallel, pipeline_parallel]\n"
		 "    - name: quiet\n"
		 "      dispatch: sharded\n"
		 "      program: forward\n"
		 "      moves_data: false\n", 0);
	ck_assert_uint_eq(f.diags.n, 0);
	ck_assert_uint_eq(f.n, calls_builtin_count() + 3);
	c = row(&f, "my_train");
	ck_assert_int_eq(c->dispatch, CALL_SHARDED);
	ck_assert_int_eq(c->n_sharded, 2);
	ck_assert_int_eq(c->sharded[0], AX_DP);
	ck_assert_int_eq(c->sharded[1], AX_CP);
	ck_assert_uint_eq(c->replicated, 0);
	ck_assert_uint_eq(c->output, AX_BIT(AX_TP));
	ck_assert_int_eq(c->dummy, 1);
	ck_assert_int_eq(c->moves_data, 1);
	ck_assert_int_eq(c->uses_train_batch, 1);
	ck_assert_int_eq(c->loc.line, 3);
	c = row(&f, "my_refit");
	ck_assert_int_eq(c->dispatch, CALL_SINGLE);
	ck_assert_int_eq(c->program, PROG_REFIT_BROADCAST);
	ck_assert_uint_eq(c->rank0_only, AX_BIT(AX_TP) | AX_BIT(AX_PP));
	ck_assert_int_eq(c->moves_data, 0);
	c = row(&f, "quiet");
	ck_assert_int_eq(c->moves_data, 0);
	ck_assert_int_eq(c->uses_train_batch, 0);
	release(&f);
}
END_TEST

START_TEST(switching_dispatch_clears_sharded_fields)
{
	struct fx f;
	const struct call_def *c;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: score\n"
		 "      dispatch: single\n"
		 "      rank0_only: [pipeline_parallel]\n", 0);
	ck_assert_uint_eq(f.diags.n, 0);
	c = row(&f, "score");
	ck_assert_int_eq(c->dispatch, CALL_SINGLE);
	ck_assert_int_eq(c->n_sharded, 0);
	ck_assert_uint_eq(c->replicated, 0);
	ck_assert_int_eq(c->moves_data, 0);
	ck_assert_uint_eq(c->rank0_only, AX_BIT(AX_PP));
	release(&f);
}
END_TEST

START_TEST(GT521_unknown_axis)
{
	struct fx f;
	const struct diag *d;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: train\n"
		 "      sharded: [data_paralel]\n", 0);
	d = one(&f, "GT521");
	at(d, 4, 17);
	ck_assert_str_eq(d->path, "gtplan.calls.0.sharded.0");
	ck_assert_str_eq(d->msg, "call 'train': sharded axis 'data_paralel' "
			 "is not an axis of the 4-D driver layout");
	ck_assert_ptr_nonnull(strstr(d->hint, "did you mean 'data_parallel'?"));
	ck_assert_ptr_nonnull(strstr(d->hint, "pipeline_parallel, "
				     "data_parallel, context_parallel, "
				     "tensor_parallel"));
	ck_assert_ptr_null(strstr(d->hint, "gtp_weight_remat"));
	/* the entry is not applied */
	ck_assert_int_eq(row(&f, "train")->n_sharded, 1);
	ck_assert_int_eq(row(&f, "train")->sharded[0], AX_DP);
	release(&f);
}
END_TEST

START_TEST(GT521_gtp_axis_only_in_5d)
{
	static const char *yaml =
		"gtplan:\n"
		"  calls:\n"
		"    - name: get_logprobs\n"
		"      replicated: [gtp_weight_remat, context_parallel,\n"
		"                   tensor_parallel, pipeline_parallel]\n";
	struct fx f;
	const struct diag *d;

	load(&f, yaml, 0);
	d = one(&f, "GT521");
	at(d, 4, 20);
	ck_assert_ptr_nonnull(strstr(d->hint, "5-D layout"));
	ck_assert_ptr_nonnull(strstr(d->hint, "gtplan.driver_layout: 5d"));
	release(&f);

	load(&f, yaml, 1);
	ck_assert_uint_eq(f.diags.n, 0);
	ck_assert_uint_eq(row(&f, "get_logprobs")->replicated,
			  CTP | AX_BIT(AX_GTP));
	release(&f);
}
END_TEST

START_TEST(GT522_sharded_and_replicated)
{
	struct fx f;
	const struct diag *d;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: mine\n"
		 "      dispatch: sharded\n"
		 "      program: forward\n"
		 "      sharded: [data_parallel, tensor_parallel]\n"
		 "      replicated: [context_parallel, tensor_parallel]\n", 0);
	d = one(&f, "GT522");
	at(d, 7, 38);
	ck_assert_str_eq(d->msg, "call 'mine': axis 'tensor_parallel' is both "
			 "sharded and replicated");
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_int_eq(d->notes[0].loc.line, 6);
	ck_assert_int_eq(d->notes[0].loc.col, 32);
	ck_assert_ptr_null(calls_find(f.v, f.n, "mine"));
	release(&f);

	/* against the built-in sharded list */
	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: train\n"
		 "      replicated: [data_parallel]\n", 0);
	d = one(&f, "GT522");
	at(d, 4, 20);
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg, "built-in train shards"));
	release(&f);
}
END_TEST

START_TEST(GT523_unknown_output_axis_is_a_warning)
{
	struct fx f;
	const struct diag *d;
	const struct call_def *c;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: score\n"
		 "      output: [context_parallel, tensor_paralel]\n"
		 "    - name: save_checkpoint\n"
		 "      rank0_only: [pipline_parallel]\n", 0);
	ck_assert_uint_eq(count(&f, "GT523"), 2);
	ck_assert_uint_eq(diag_count(&f.diags, DIAG_ERROR), 0);
	d = &f.diags.v[0];
	ck_assert_str_eq(diag_code(d), "GT523");
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	at(d, 4, 34);
	ck_assert_ptr_nonnull(strstr(d->hint, "did you mean "
				     "'tensor_parallel'?"));
	at(&f.diags.v[1], 6, 20);
	/* applied without the unknown name, as NeMo-RL ignores it */
	c = row(&f, "score");
	ck_assert_uint_eq(c->output, AX_BIT(AX_CP));
	ck_assert_uint_eq(row(&f, "save_checkpoint")->rank0_only, 0);
	release(&f);
}
END_TEST

START_TEST(GT520_new_row_needs_dispatch_and_program)
{
	struct fx f;
	const struct diag *d;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: rollout\n"
		 "      program: forward\n", 0);
	d = one(&f, "GT520");
	at(d, 3, 13);
	ck_assert_str_eq(d->msg, "call 'rollout' is not a built-in call and "
			 "has no dispatch");
	ck_assert_ptr_nonnull(d->hint);
	ck_assert_ptr_null(calls_find(f.v, f.n, "rollout"));
	release(&f);

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: rollout\n"
		 "      dispatch: sharded\n", 0);
	d = one(&f, "GT520");
	ck_assert_str_eq(d->msg, "call 'rollout' is not a built-in call and "
			 "has no program");
	release(&f);
}
END_TEST

START_TEST(GT520_unknown_values)
{
	struct fx f;
	const struct diag *d;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: train\n"
		 "      dispatch: shard\n"
		 "    - name: score\n"
		 "      program: refit\n", 0);
	ck_assert_uint_eq(count(&f, "GT520"), 2);
	d = &f.diags.v[0];
	at(d, 4, 17);
	ck_assert_str_eq(d->msg, "call 'train': unknown dispatch 'shard'");
	ck_assert_str_eq(d->hint, "did you mean 'sharded'? use sharded, "
			 "single or multiple");
	d = &f.diags.v[1];
	at(d, 6, 16);
	ck_assert_ptr_nonnull(strstr(d->hint, "refit_ipc, refit_broadcast"));
	ck_assert_int_eq(row(&f, "train")->dispatch, CALL_SHARDED);
	release(&f);
}
END_TEST

START_TEST(GT520_wrong_types)
{
	struct fx f;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: train\n"
		 "      sharded: data_parallel\n"
		 "      dummy: yes please\n"
		 "    - name: score\n"
		 "      replicated: [tensor_parallel, 3]\n"
		 "      moves_data: 1\n"
		 "    - name: 7\n"
		 "    - dispatch: single\n"
		 "    - just a string\n", 0);
	ck_assert_uint_eq(count(&f, "GT520"), 7);
	at(&f.diags.v[0], 4, 16);
	ck_assert_str_eq(f.diags.v[0].msg, "call 'train': sharded is a string, "
			 "not a list of axis names");
	at(&f.diags.v[1], 5, 14);
	ck_assert_str_eq(f.diags.v[1].msg, "call 'train': dummy is a string, "
			 "not a boolean");
	at(&f.diags.v[2], 7, 37);
	at(&f.diags.v[3], 8, 19);
	at(&f.diags.v[4], 9, 13);
	ck_assert_str_eq(f.diags.v[4].msg, "the call name is an integer, not a "
			 "string");
	at(&f.diags.v[5], 10, 7);
	ck_assert_str_eq(f.diags.v[5].msg, "gtplan.calls.3 has no name");
	at(&f.diags.v[6], 11, 7);
	ck_assert_str_eq(f.diags.v[6].msg, "gtplan.calls entry 4 is a string, "
			 "not a map");
	for (size_t i = 0; i < f.diags.n; i++)
		ck_assert_ptr_nonnull(f.diags.v[i].hint);
	release(&f);

	load(&f, "gtplan:\n"
		 "  calls: {name: train}\n", 0);
	at(one(&f, "GT520"), 2, 10);
	ck_assert_uint_eq(f.n, calls_builtin_count());
	release(&f);
}
END_TEST

START_TEST(GT520_fields_of_the_other_dispatch)
{
	struct fx f;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: save_checkpoint\n"
		 "      sharded: [data_parallel]\n"
		 "      dummy: true\n"
		 "    - name: train\n"
		 "      rank0_only: [tensor_parallel]\n"
		 "    - name: load_checkpoint\n"
		 "      sharded: []\n"
		 "      moves_data: false\n", 0);
	ck_assert_uint_eq(count(&f, "GT520"), 3);
	at(&f.diags.v[0], 4, 7);
	ck_assert_str_eq(f.diags.v[0].msg, "call 'save_checkpoint': sharded "
			 "applies to sharded calls only");
	at(&f.diags.v[1], 5, 7);
	at(&f.diags.v[2], 7, 7);
	ck_assert_str_eq(f.diags.v[2].msg, "call 'train': rank0_only applies "
			 "to single and multiple calls only");
	release(&f);
}
END_TEST

START_TEST(GT520_duplicates)
{
	struct fx f;
	const struct diag *d;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: train\n"
		 "      output: [tensor_parallel]\n"
		 "    - name: train\n"
		 "      output: [pipeline_parallel]\n"
		 "    - name: mine\n"
		 "      dispatch: sharded\n"
		 "      program: forward\n"
		 "      sharded: [data_parallel, data_parallel]\n", 0);
	ck_assert_uint_eq(count(&f, "GT520"), 2);
	d = &f.diags.v[0];
	at(d, 5, 13);
	ck_assert_str_eq(d->msg, "call 'train' is defined twice in "
			 "gtplan.calls");
	ck_assert_int_eq(d->notes[0].loc.line, 3);
	ck_assert_uint_eq(row(&f, "train")->output, AX_BIT(AX_TP));
	at(&f.diags.v[1], 10, 32);
	release(&f);
}
END_TEST

START_TEST(row_limit)
{
	size_t n = CALLS_MAX_ROWS + 5, len = 0, cap = 64 + n * 64;
	char *yaml = malloc(cap);
	struct fx f;
	const struct diag *d;

	ck_assert_ptr_nonnull(yaml);
	len += (size_t)snprintf(yaml + len, cap - len, "gtplan:\n  calls:\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(yaml + len, cap - len,
					"    - {name: c%zu, dispatch: single, "
					"program: none}\n", i);
	load(&f, yaml, 0);
	free(yaml);
	d = one(&f, "GT520");
	at(d, 3 + CALLS_MAX_ROWS, 7);
	ck_assert_uint_eq(f.n, calls_builtin_count() + CALLS_MAX_ROWS);
	release(&f);
}
END_TEST

START_TEST(list_calls_is_aligned)
{
	struct fx f;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char *head, *train, *line;

	load(&f, "gtplan:\n"
		 "  calls:\n"
		 "    - name: save_checkpoint\n"
		 "      rank0_only: [tensor_parallel]\n", 1);
	ck_assert_ptr_nonnull(m);
	calls_print(m, f.v, f.n, 1);
	fclose(m);
	ck_assert_ptr_nonnull(strstr(buf, "driver layout 5-D"));
	head = strstr(buf, "\ncall ");
	ck_assert_ptr_nonnull(head);
	head++;
	train = strstr(buf, "\ntrain ");
	ck_assert_ptr_nonnull(train);
	train++;
	/* every column starts where its header does */
	ck_assert_int_eq(strstr(head, "dispatch") - head,
			 strstr(train, "sharded") - train);
	ck_assert_int_eq(strstr(head, "program") - head,
			 strstr(train, "train\n") - train);
	line = strstr(buf, "\nsft_v2_train ");
	ck_assert_ptr_nonnull(line);
	ck_assert_ptr_nonnull(strstr(line, " dp,gtp "));
	line = strstr(buf, "\nsave_checkpoint *");
	ck_assert_ptr_nonnull(line);
	ck_assert_ptr_nonnull(strstr(line, "rank 0 of tp"));
	ck_assert_ptr_nonnull(strstr(buf, "* defined or overridden in "
				     "gtplan.calls\n"));
	line = strstr(buf, "\ngenerate ");
	ck_assert_ptr_nonnull(strstr(line, " pp,tp "));
	free(buf);
	release(&f);
}
END_TEST

START_TEST(names_and_lookup)
{
	ck_assert_str_eq(calls_dispatch_name(CALL_MULTIPLE), "multiple");
	ck_assert_str_eq(calls_program_name(PROG_REFIT_RESHARD),
			 "refit_reshard");
	ck_assert_str_eq(calls_program_name(PROG_COUNT), "?");
	ck_assert_int_eq(drv_axis_parse("gtp_weight_remat"), AX_GTP);
	ck_assert_int_eq(drv_axis_parse("dp"), AX_N);
	ck_assert_str_eq(drv_axis_name(AX_CP), "context_parallel");
	ck_assert_ptr_null(calls_find(calls_builtin_at(0), 1, "score"));
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "builtin", builtin_rows_follow_calls_md },
		{ "sft_v2_5d", sft_v2_train_shards_gtp_in_5d },
		{ "override", override_keeps_unnamed_fields },
		{ "override_sharded", sharded_override_replaces_the_list },
		{ "new_rows", new_rows_are_added },
		{ "switch_dispatch", switching_dispatch_clears_sharded_fields },
		{ "GT521", GT521_unknown_axis },
		{ "GT521_gtp", GT521_gtp_axis_only_in_5d },
		{ "GT522", GT522_sharded_and_replicated },
		{ "GT523", GT523_unknown_output_axis_is_a_warning },
		{ "GT520_missing", GT520_new_row_needs_dispatch_and_program },
		{ "GT520_values", GT520_unknown_values },
		{ "GT520_types", GT520_wrong_types },
		{ "GT520_dispatch_fields", GT520_fields_of_the_other_dispatch },
		{ "GT520_duplicates", GT520_duplicates },
		{ "limit", row_limit },
		{ "list", list_calls_is_aligned },
		{ "names", names_and_lookup },
	};

	return RUN_CASES("calls", cases, 0);
}
