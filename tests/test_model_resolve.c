/*
 * Tests for model_resolve: the catalog's shape, `gtplan.model` merged over
 * it field by field, model descriptions without a catalog entry, and the
 * findings for unknown, incomplete and refused values.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfg.h"
#include "diag.h"
#include "diag_fixture.h"
#include "model.h"
#include "model_fixture.h"
#include "harness.h"

/* ---- helpers ---------------------------------------------------------- */

static void expect_diag(const struct diag *d, const char *code, int line,
			int col, const char *path)
{
	ck_assert_str_eq(diag_code(d), code);
	diag_at(d, line, col, path);
}

/* ---- model_resolve ---------------------------------------------------- */

START_TEST(resolve_catalog)
{
	struct model_fx f;

	model_fx_resolve(&f,
			 "policy:\n  model_name: qwen/qwen2.5-7b-instruct\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert_int_eq(f.diags.n, 0);
	ck_assert(f.m.known);
	ck_assert_str_eq(f.m.name, "qwen/qwen2.5-7b-instruct");
	ck_assert_int_eq(f.m.loc.line, 2);
	ck_assert_int_eq(f.m.loc.col, 15);
	ck_assert_int_eq(f.m.hidden_size, 3584);
	ck_assert_int_eq(f.m.kv_channels, 128);  /* filled in */
	ck_assert_int_eq(model_total_params(&f.m),
			 model_total_params(model_fx_find("Qwen/Qwen2.5-7B")));
	model_fx_release(&f);
}
END_TEST

/* Each field of gtplan.model overrides the catalog's, and only that one. */
START_TEST(resolve_overrides)
{
	static const struct {
		const char *key, *value;
		size_t off;
		int is_bool;
		long long want;
	} v[] = {
#define I(k, val, w) { #k, val, offsetof(struct model_shape, k), 0, w }
#define B(k, val, w) { #k, val, offsetof(struct model_shape, k), 1, w }
		I(num_layers, "4", 4),
		I(hidden_size, "7168", 7168),
		I(ffn_hidden_size, "1000", 1000),
		I(num_attention_heads, "56", 56),
		I(num_query_groups, "14", 14),
		I(kv_channels, "64", 64),
		I(vocab_size, "32000", 32000),
		B(share_embeddings_and_output_weights, "true", 1),
		B(add_bias_linear, "true", 1),
		B(add_qkv_bias, "false", 0),
		I(num_moe_experts, "64", 64),
		I(moe_ffn_hidden_size, "512", 512),
		I(moe_router_topk, "6", 6),
		I(mtp_num_layers, "1", 1),
		B(gated_linear_unit, "false", 0),
#undef I
#undef B
	};
	const struct model_shape *cat = model_fx_find("Qwen/Qwen2.5-7B");

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char yaml[256];
		struct model_fx f;
		struct model_shape want = *cat;

		snprintf(yaml, sizeof(yaml),
			 "policy:\n  model_name: Qwen/Qwen2.5-7B\n"
			 "gtplan:\n  model:\n    %s: %s\n", v[i].key,
			 v[i].value);
		model_fx_resolve(&f, yaml);
		ck_assert_msg(f.rc == 0 && f.diags.n == 0 && f.m.known,
			      "%s: rc %d, %zu findings", v[i].key, f.rc,
			      f.diags.n);
		if (v[i].is_bool) {
			ck_assert_int_eq(*(const int *)(const void *)
					 ((const char *)&f.m + v[i].off),
					 v[i].want);
			*(int *)(void *)((char *)&want + v[i].off) =
				(int)v[i].want;
		} else {
			ck_assert_int_eq(*(const long long *)(const void *)
					 ((const char *)&f.m + v[i].off),
					 v[i].want);
			*(long long *)(void *)((char *)&want + v[i].off) =
				v[i].want;
		}
		/* everything else as the catalog has it, defaults filled */
		if (!want.kv_channels)
			want.kv_channels = want.hidden_size /
					   want.num_attention_heads;
		ck_assert_int_eq(f.m.num_layers, want.num_layers);
		ck_assert_int_eq(f.m.hidden_size, want.hidden_size);
		ck_assert_int_eq(f.m.ffn_hidden_size, want.ffn_hidden_size);
		ck_assert_int_eq(f.m.num_attention_heads,
				 want.num_attention_heads);
		ck_assert_int_eq(f.m.num_query_groups, want.num_query_groups);
		ck_assert_int_eq(f.m.kv_channels, want.kv_channels);
		ck_assert_int_eq(f.m.vocab_size, want.vocab_size);
		ck_assert_int_eq(f.m.share_embeddings_and_output_weights,
				 want.share_embeddings_and_output_weights);
		ck_assert_int_eq(f.m.add_bias_linear, want.add_bias_linear);
		ck_assert_int_eq(f.m.add_qkv_bias, want.add_qkv_bias);
		ck_assert_int_eq(f.m.num_moe_experts, want.num_moe_experts);
		ck_assert_int_eq(f.m.mtp_num_layers, want.mtp_num_layers);
		ck_assert_int_eq(f.m.gated_linear_unit,
				 want.gated_linear_unit);
		if (!want.num_moe_experts) {
			ck_assert_int_eq(f.m.moe_ffn_hidden_size,
					 want.moe_ffn_hidden_size);
			ck_assert_int_eq(f.m.moe_router_topk,
					 want.moe_router_topk);
		}
		/* located at the gtplan.model map */
		ck_assert_int_eq(f.m.loc.line, 5);
		ck_assert_int_eq(f.m.loc.col, 5);
		ck_assert_str_eq(f.m.name, "Qwen/Qwen2.5-7B");
		model_fx_release(&f);
	}
}
END_TEST

START_TEST(resolve_null_restores_default)
{
	struct model_fx f;

	model_fx_resolve(&f, "policy:\n  model_name: Qwen/Qwen3-30B-A3B\n"
		    "gtplan:\n  model:\n    num_moe_experts: null\n"
		    "    num_query_groups: null\n    kv_channels: ~\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert_int_eq(f.diags.n, 0);
	ck_assert(f.m.known);
	ck_assert_int_eq(f.m.num_moe_experts, 0);
	ck_assert_int_eq(f.m.num_query_groups, 32);
	ck_assert_int_eq(f.m.kv_channels, 2048 / 32);
	/* dense now: the MLP is linear_fc1/linear_fc2 of ffn_hidden_size */
	ck_assert_uint_eq(model_layer_weights(&f.m, (struct model_weight[4]){ 0 },
					      4), 4);
	model_fx_release(&f);
}
END_TEST

START_TEST(resolve_moe_defaults)
{
	struct model_fx f;

	model_fx_resolve(&f, "gtplan:\n  model:\n    num_layers: 2\n"
		    "    hidden_size: 64\n"
		    "    ffn_hidden_size: 128\n    num_attention_heads: 4\n"
		    "    vocab_size: 1000\n    num_moe_experts: 8\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert_int_eq(f.diags.n, 0);
	ck_assert(f.m.known);
	ck_assert_int_eq(f.m.moe_ffn_hidden_size, 128);
	ck_assert_int_eq(f.m.moe_router_topk, 2);
	model_fx_release(&f);
}
END_TEST

START_TEST(resolve_unknown_warns)
{
	struct model_fx f;
	const struct diag *d;

	model_fx_resolve(&f, "policy:\n  model_name: acme/Foo-7B\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert(!f.m.known);
	ck_assert_str_eq(f.m.name, "acme/Foo-7B");
	ck_assert_uint_eq(f.diags.n, 1);
	d = &f.diags.v[0];
	expect_diag(d, "GT524", 2, 15, "policy.model_name");
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	ck_assert_ptr_nonnull(strstr(d->msg, "'acme/Foo-7B'"));
	ck_assert_ptr_nonnull(d->hint);
	ck_assert_ptr_nonnull(strstr(d->hint, "gtplan.model"));
	ck_assert_ptr_nonnull(strstr(d->hint, "num_layers, hidden_size, "
				     "ffn_hidden_size, num_attention_heads, "
				     "num_query_groups, vocab_size"));
	model_fx_release(&f);

	model_fx_resolve(&f,
			 "policy:\n  model_name: \"/path/to/hf_checkpoint\"\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert_uint_eq(f.diags.n, 1);
	expect_diag(&f.diags.v[0], "GT524", 2, 15, "policy.model_name");
	ck_assert_ptr_nonnull(strstr(f.diags.v[0].msg, "local path"));
	model_fx_release(&f);
}
END_TEST

/* GT524 says why a name gives no shape, which checks are skipped and how
 * to describe the model, for each kind of name the corpus holds. */
START_TEST(resolve_unknown_kinds)
{
	static const struct {
		const char *yaml, *why;
	} v[] = {
		{ "policy:\n  model_name: \"Follow instructions in "
		  "https://github.com/NVIDIA-NeMo/RL/blob/main/docs/guides/"
		  "deepseek.md\"\n", "not a Hugging Face model id" },
		{ "policy:\n  model_name: \"<your model>\"\n",
		  "not a Hugging Face model id" },
		{ "policy:\n  model_name: models/Qwen/Qwen2.5-7B\n",
		  "local path" },
		{ "policy:\n  model_name: \"${oc.env:MODEL}\"\n",
		  "interpolation resolved only at launch" },
		{ "policy:\n  model_name: ~/ckpt/hf\n", "local path" },
		{ "policy:\n  model_name: acme/Foo-7B.v2_x\n",
		  "not in gtplan's catalog" },
		{ "policy:\n  model_name: your-model\n",
		  "not in gtplan's catalog" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct model_fx f;
		const struct diag *d;

		model_fx_resolve(&f, v[i].yaml);
		ck_assert_int_eq(f.rc, 0);
		ck_assert(!f.m.shape_known);
		ck_assert_uint_eq(f.diags.n, 1);
		d = &f.diags.v[0];
		expect_diag(d, "GT524", 2, 15, "policy.model_name");
		ck_assert_msg(strstr(d->msg, v[i].why), "%zu: %s", i, d->msg);
		ck_assert_ptr_nonnull(strstr(d->msg, "heads and query groups "
					     "vs TP"));
		ck_assert_ptr_nonnull(strstr(d->hint, "gtplan.model"));
		ck_assert_ptr_nonnull(strstr(d->hint, "num_query_groups = "
					     "num_key_value_heads"));
		model_fx_release(&f);
	}
}
END_TEST

START_TEST(resolve_incomplete_desc)
{
	struct model_fx f;
	const struct diag *d;

	model_fx_resolve(&f, "policy:\n  model_name: acme/Foo-7B\n"
		    "gtplan:\n  model:\n    num_layers: 32\n"
		    "    hidden_size: 4096\n    num_attention_heads: 32\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert(!f.m.known);
	ck_assert_uint_eq(f.diags.n, 1);
	d = &f.diags.v[0];
	expect_diag(d, "GT524", 2, 15, "policy.model_name");
	ck_assert_ptr_nonnull(strstr(d->msg, "ffn_hidden_size, vocab_size"));
	ck_assert_ptr_nonnull(strstr(d->hint, "ffn_hidden_size, vocab_size"));
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_int_eq(d->notes[0].loc.line, 5);
	model_fx_release(&f);

	/* no model name: at gtplan.model */
	model_fx_resolve(&f, "gtplan:\n  model:\n    num_layers: 32\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert(!f.m.known);
	ck_assert_uint_eq(f.diags.n, 1);
	expect_diag(&f.diags.v[0], "GT524", 3, 5, "gtplan.model");
	ck_assert_ptr_nonnull(strstr(f.diags.v[0].hint, "hidden_size, "
				     "ffn_hidden_size, num_attention_heads, "
				     "vocab_size"));
	model_fx_release(&f);
}
END_TEST

START_TEST(resolve_complete_desc)
{
	struct model_fx f;

	model_fx_resolve(&f, "policy:\n  model_name: acme/Foo-7B\n"
		    "gtplan:\n  model:\n    num_layers: 32\n"
		    "    hidden_size: 4096\n    ffn_hidden_size: 14336\n"
		    "    num_attention_heads: 32\n    num_query_groups: 8\n"
		    "    vocab_size: 128256\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert_int_eq(f.diags.n, 0);
	ck_assert(f.m.known);
	ck_assert_str_eq(f.m.name, "acme/Foo-7B");
	ck_assert_int_eq(f.m.loc.line, 5);
	ck_assert_int_eq(f.m.kv_channels, 128);
	ck_assert(f.m.gated_linear_unit);
	ck_assert(!f.m.share_embeddings_and_output_weights);
	ck_assert(!f.m.add_bias_linear && !f.m.add_qkv_bias);
	/* the Llama-3.1-8B shape, described by hand */
	ck_assert_int_eq(model_total_params(&f.m), 8030261248LL);
	model_fx_release(&f);

	/* no model name at all */
	model_fx_resolve(&f, "gtplan:\n  model:\n    num_layers: 2\n"
		    "    hidden_size: 64\n"
		    "    ffn_hidden_size: 128\n    num_attention_heads: 4\n"
		    "    vocab_size: 1000\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert_int_eq(f.diags.n, 0);
	ck_assert(f.m.known);
	ck_assert_str_eq(f.m.name, "gtplan.model");
	ck_assert_int_eq(f.m.num_query_groups, 4);
	ck_assert_int_eq(f.m.kv_channels, 16);
	model_fx_release(&f);
}
END_TEST

START_TEST(resolve_nothing)
{
	static const char *const yaml[] = {
		"",  /* an empty file: no tree at all */
		"cluster:\n  num_nodes: 1\n",
		"policy:\n  model_name: null\n",
		"policy:\n  model_name: \"\"\ngtplan:\n  model: null\n",
	};

	for (size_t i = 0; i < sizeof(yaml) / sizeof(yaml[0]); i++) {
		struct model_fx f;

		model_fx_resolve(&f, yaml[i]);
		ck_assert_int_eq(f.rc, 0);
		ck_assert_int_eq(f.diags.n, 0);
		ck_assert(!f.m.known);
		ck_assert_int_lt(f.m.loc.src, 0);
		model_fx_release(&f);
	}
}
END_TEST

START_TEST(resolve_bad_values)
{
	static const struct {
		const char *desc, *code, *path;
		int line, col;
	} v[] = {
		{ "    num_layers: \"32\"\n", "GT200", "gtplan.model.num_layers",
		  5, 17 },
		{ "    add_qkv_bias: 1\n", "GT200", "gtplan.model.add_qkv_bias",
		  5, 19 },
		{ "    num_query_groups: 2.5\n", "GT200",
		  "gtplan.model.num_query_groups", 5, 23 },
		{ "    hidden_size: 0\n", "GT201", "gtplan.model.hidden_size",
		  5, 18 },
		{ "    mtp_num_layers: -1\n", "GT201",
		  "gtplan.model.mtp_num_layers", 5, 21 },
		{ "    num_query_groups: 5\n", "GT205", "gtplan.model", 5, 23 },
		{ "    hidden_size: 3000\n    num_attention_heads: 7\n"
		  "    num_query_groups: 7\n    kv_channels: null\n",
		  "GT205", "gtplan.model", 5, 18 },
		{ "    moe_router_topk: 9\n    num_moe_experts: 8\n", "GT205",
		  "gtplan.model", 5, 22 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char yaml[512];
		struct model_fx f;

		snprintf(yaml, sizeof(yaml),
			 "policy:\n  model_name: Qwen/Qwen2.5-7B\n"
			 "gtplan:\n  model:\n%s", v[i].desc);
		model_fx_resolve(&f, yaml);
		ck_assert_msg(f.rc == -1, "%s: rc %d", v[i].desc, f.rc);
		ck_assert(!f.m.known);
		ck_assert_msg(f.diags.n == 1, "%s: %zu findings", v[i].desc,
			      f.diags.n);
		expect_diag(&f.diags.v[0], v[i].code, v[i].line, v[i].col,
			    v[i].path);
		ck_assert_ptr_nonnull(f.diags.v[0].hint);
		model_fx_release(&f);
	}
}
END_TEST

START_TEST(resolve_desc_not_a_map)
{
	struct model_fx f;

	model_fx_resolve(&f, "policy:\n  model_name: Qwen/Qwen2.5-7B\n"
		    "gtplan:\n  model: [1, 2]\n");
	ck_assert_int_eq(f.rc, -1);
	ck_assert(!f.m.known);
	ck_assert_uint_eq(f.diags.n, 1);
	expect_diag(&f.diags.v[0], "GT200", 4, 10, "gtplan.model");
	model_fx_release(&f);
}
END_TEST

/* ---- suite ------------------------------------------------------------ */

int main(void)
{
	const struct test_case cases[] = {
		{ "resolve_catalog", resolve_catalog },
		{ "resolve_overrides", resolve_overrides },
		{ "resolve_null_restores_default", resolve_null_restores_default },
		{ "resolve_moe_defaults", resolve_moe_defaults },
		{ "resolve_unknown_warns", resolve_unknown_warns },
		{ "resolve_unknown_kinds", resolve_unknown_kinds },
		{ "resolve_incomplete_desc", resolve_incomplete_desc },
		{ "resolve_complete_desc", resolve_complete_desc },
		{ "resolve_nothing", resolve_nothing },
		{ "resolve_bad_values", resolve_bad_values },
		{ "resolve_desc_not_a_map", resolve_desc_not_a_map },
	};

	return RUN_CASES("model_resolve", cases, 0);
}
