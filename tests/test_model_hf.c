/*
 * Tests for model resolution from Hugging Face config.json files
 * (planner/model_hf.c): each mapped family's fields, the approximate
 * families, text_config, gtplan.model.hf_config, a local model folder,
 * the hub cache (refs/main), precedence gtplan.model > config.json >
 * catalog with each value's origin, unreadable files (GT526), Hugging
 * Face's older Llama names, GT524's suggestions and a partial shape.
 * The fixtures are tests/configs/hf/ (run from the repository root).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "model.h"
#include "model_fixture.h"
#include "harness.h"

#define HF "tests/configs/hf/"

/* A config naming `name` with gtplan.model.hf_config `path` (NULL: none)
 * and extra gtplan.model lines. */
static const char *cfg(const char *name, const char *path, const char *extra)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf), "policy:\n  model_name: \"%s\"\n%s%s%s%s%s",
		 name, path || extra ? "gtplan:\n  model:\n" : "",
		 path ? "    hf_config: \"" : "", path ? path : "",
		 path ? "\"\n" : "", extra ? extra : "");
	return buf;
}

static size_t count(const struct model_fx *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += !strcmp(diag_code(&f->diags.v[i]), code);
	return n;
}

static const char *origin(const struct model_shape *m, const char *key)
{
	for (size_t i = 0; i < model_field_count(); i++)
		if (!strcmp(model_field_key(i), key))
			return model_origin_name(m->origin[i]);
	ck_abort_msg("no field %s", key);
	return NULL;
}

START_TEST(qwen3_moe)
{
	struct model_fx f;

	model_fx_resolve(&f, cfg("acme/x", HF "qwen3-30b-a3b/config.json",
			     NULL));
	ck_assert_int_eq(f.rc, 0);
	ck_assert(f.m.known && !f.m.approximate);
	ck_assert_int_eq(f.m.num_layers, 48);
	ck_assert_int_eq(f.m.hidden_size, 2048);
	ck_assert_int_eq(f.m.num_attention_heads, 32);
	ck_assert_int_eq(f.m.num_query_groups, 4);
	ck_assert_int_eq(f.m.kv_channels, 128);
	ck_assert_int_eq(f.m.vocab_size, 151936);
	ck_assert_int_eq(f.m.num_moe_experts, 128);
	ck_assert_int_eq(f.m.moe_ffn_hidden_size, 768);
	ck_assert_int_eq(f.m.moe_router_topk, 8);
	ck_assert(f.m.gated_linear_unit);
	ck_assert(!f.m.share_embeddings_and_output_weights);
	/* what gtplan-run's decoder reads: rope_theta (a JSON real),
	 * rms_norm_eps, and Qwen3's QK-norm from the family */
	ck_assert_int_eq(f.m.rotary_base, 1000000);
	ck_assert(f.m.layernorm_epsilon == 1e-6);
	ck_assert(f.m.qk_layernorm);
	ck_assert_str_eq(origin(&f.m, "rotary_base"), "config.json");
	ck_assert_str_eq(origin(&f.m, "num_moe_experts"), "config.json");
	ck_assert_str_eq(f.m.config_json, HF "qwen3-30b-a3b/config.json");
	ck_assert_uint_eq(count(&f, "GT525"), 1);
	ck_assert_uint_eq(count(&f, "GT524"), 0);
	model_fx_release(&f);
}
END_TEST

/* MLA, dense first layers, a shared expert, MTP: mapped, approximate. */
START_TEST(deepseek_v3)
{
	struct model_fx f;

	model_fx_resolve(&f, cfg("acme/x", HF "deepseek-v3", NULL));
	ck_assert_int_eq(f.rc, 0);
	ck_assert(f.m.shape_known && !f.m.known && f.m.approximate);
	ck_assert(f.m.multi_latent_attention);
	ck_assert_int_eq(f.m.num_moe_experts, 256);
	ck_assert_int_eq(f.m.moe_ffn_hidden_size, 2048);
	ck_assert_int_eq(f.m.moe_shared_expert_intermediate_size, 2048);
	ck_assert_int_eq(f.m.mtp_num_layers, 1);
	ck_assert_str_eq(f.m.moe_layer_freq, "[0]*3+[1]*58");
	ck_assert_int_eq(model_moe_layers(&f.m, 0, 61), 58);
	ck_assert_uint_eq(count(&f, "GT525"), 1);
	model_fx_release(&f);
}
END_TEST

START_TEST(nemotron_h_gpt_oss_gemma3)
{
	struct model_fx f;

	model_fx_resolve(&f, cfg("acme/x", HF "nemotron-h", NULL));
	ck_assert(f.m.shape_known && f.m.approximate);
	ck_assert_int_eq((long long)strlen(f.m.hybrid_layer_pattern), 52);
	ck_assert(!f.m.gated_linear_unit);  /* squared ReLU */
	model_fx_release(&f);

	model_fx_resolve(&f, cfg("acme/x", HF "gpt-oss", NULL));
	ck_assert(f.m.known);
	ck_assert_int_eq(f.m.num_moe_experts, 32);
	ck_assert_int_eq(f.m.moe_ffn_hidden_size, 2880);
	ck_assert_int_eq(f.m.moe_router_topk, 4);
	ck_assert_int_eq(f.m.kv_channels, 64);
	ck_assert(f.m.add_qkv_bias && f.m.add_bias_linear);
	model_fx_release(&f);

	/* the text model of a multimodal checkpoint; tie_word_embeddings
	 * absent: PretrainedConfig's default, tied */
	model_fx_resolve(&f, cfg("acme/x", HF "gemma3-mm", NULL));
	ck_assert(f.m.known);
	ck_assert_int_eq(f.m.num_layers, 62);
	ck_assert_int_eq(f.m.vocab_size, 262208);
	ck_assert_int_eq(f.m.num_query_groups, 16);
	ck_assert(f.m.share_embeddings_and_output_weights);
	ck_assert_int_eq(f.m.num_moe_experts, 0);
	model_fx_release(&f);
}
END_TEST

/* A model_type gtplan does not map: common fields, approximate, said. */
START_TEST(unmapped_family)
{
	struct model_fx f;
	const struct diag *d = NULL;

	model_fx_resolve(&f, cfg("acme/x", HF "unmapped", NULL));
	ck_assert(f.m.shape_known && !f.m.known && f.m.approximate);
	ck_assert_int_eq(f.m.num_layers, 20);
	for (size_t i = 0; i < f.diags.n; i++)
		if (!strcmp(diag_code(&f.diags.v[i]), "GT525"))
			d = &f.diags.v[i];
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_ge(d->n_notes, 1);
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg, "not a family gtplan "
				     "maps"));
	model_fx_release(&f);
}
END_TEST

/* policy.model_name a folder with a config.json; the hub cache. */
START_TEST(folder_and_cache)
{
	struct model_fx f;

	model_fx_resolve(&f, cfg(HF "llama-local", NULL, NULL));
	ck_assert_int_eq(f.rc, 0);
	ck_assert(f.m.known);
	ck_assert_int_eq(f.m.num_layers, 30);
	ck_assert_int_eq(f.m.kv_channels, 128);
	ck_assert_str_eq(origin(&f.m, "kv_channels"), "default");
	ck_assert(f.m.share_embeddings_and_output_weights);
	model_fx_release(&f);

	ck_assert_int_eq(setenv("HF_HUB_CACHE", HF "cache", 1), 0);
	model_fx_resolve(&f, cfg("acme/Tiny-Llama-8L", NULL, NULL));
	ck_assert(f.m.known);
	/* refs/main names ffff0000; the first snapshot by name, 0123abcd,
	 * has 99 layers */
	ck_assert_int_eq(f.m.num_layers, 8);
	ck_assert_ptr_nonnull(strstr(f.m.config_json, "ffff0000"));
	model_fx_release(&f);
	/* not cached: GT524, which names the cache */
	model_fx_resolve(&f, cfg("acme/Not-Cached", NULL, NULL));
	ck_assert(!f.m.shape_known);
	ck_assert_uint_eq(count(&f, "GT524"), 1);
	ck_assert_ptr_nonnull(strstr(f.diags.v[0].msg, "Hugging Face cache"));
	model_fx_release(&f);
	ck_assert_int_eq(unsetenv("HF_HUB_CACHE"), 0);
}
END_TEST

/* gtplan.model > config.json > catalog, each value's origin kept;
 * config.json speaks for what it leaves out (no experts: dense). */
START_TEST(precedence)
{
	struct model_fx f;
	char from[600];

	model_fx_resolve(&f, cfg("Qwen/Qwen3-30B-A3B", HF "llama-local",
			"    num_layers: 32\n"));
	ck_assert_int_eq(f.rc, 0);
	ck_assert_int_eq(f.m.num_layers, 32);
	ck_assert_str_eq(origin(&f.m, "num_layers"), "gtplan.model");
	ck_assert_int_eq(f.m.hidden_size, 3072);
	ck_assert_str_eq(origin(&f.m, "hidden_size"), "config.json");
	ck_assert_int_eq(f.m.num_moe_experts, 0);
	model_origin_text(&f.m, "hidden_size", from, sizeof(from));
	ck_assert_str_eq(from, HF "llama-local/config.json");
	model_fx_release(&f);

	model_fx_resolve(&f, cfg("Qwen/Qwen3-30B-A3B", NULL, NULL));
	ck_assert_str_eq(origin(&f.m, "num_moe_experts"), "catalog");
	model_origin_text(&f.m, "num_moe_experts", from, sizeof(from));
	ck_assert_str_eq(from, "gtplan's catalog");
	model_fx_release(&f);
}
END_TEST

START_TEST(unreadable)
{
	struct model_fx f;

	model_fx_resolve(&f, cfg("acme/x", HF "broken", NULL));
	ck_assert_int_eq(f.rc, -1);
	ck_assert(!f.m.shape_known);
	ck_assert_uint_eq(count(&f, "GT526"), 1);
	model_fx_release(&f);
	model_fx_resolve(&f, cfg("acme/x", HF "no-such-model", NULL));
	ck_assert_int_eq(f.rc, -1);
	ck_assert_uint_eq(count(&f, "GT526"), 1);
	ck_assert_ptr_nonnull(strstr(f.diags.v[0].msg, "no config.json"));
	model_fx_release(&f);
}
END_TEST

/* Meta-Llama-3.1-8B-Instruct is Llama-3.1-8B-Instruct's older name. */
START_TEST(aliases_and_suggestions)
{
	struct model_fx f;
	const struct diag *d;

	ck_assert_ptr_eq(model_catalog_find("meta-llama/Meta-Llama-3.1-8B-"
					    "Instruct"),
			 model_catalog_find("meta-llama/Llama-3.1-8B-Instruct"));
	ck_assert_ptr_nonnull(model_catalog_find("Meta-Llama-3.1-70B"));
	ck_assert_ptr_null(model_catalog_find("meta-llama/Meta-Llama-9-1B"));

	model_fx_resolve(&f, cfg("Qwen/Qwen2.5-7B-Instrut", NULL, NULL));
	ck_assert_uint_eq(f.diags.n, 1);
	d = &f.diags.v[0];
	ck_assert_str_eq(diag_code(d), "GT524");
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg,
				     "did you mean Qwen/Qwen2.5-7B-Instruct"));
	model_fx_release(&f);
	/* nothing near: no suggestion */
	model_fx_resolve(&f, cfg("zzz/qqqqqqqqqqqqqqqqqqqqqqqq", NULL, NULL));
	ck_assert_uint_eq(f.diags.v[0].n_notes, 0);
	model_fx_release(&f);
}
END_TEST

/* Only the heads: the heads fields are kept for their checks. */
START_TEST(partial_shape)
{
	struct model_fx f;

	model_fx_resolve(&f, "policy:\n  model_name: acme/y\n"
		"gtplan:\n  model:\n"
		"    num_attention_heads: 12\n");
	ck_assert_int_eq(f.rc, 0);
	ck_assert(!f.m.shape_known);
	ck_assert_int_eq(f.m.num_attention_heads, 12);
	ck_assert_uint_eq(count(&f, "GT524"), 1);
	ck_assert_ptr_nonnull(strstr(f.diags.v[0].msg, "those it allows run: "
				     "heads and query groups vs TP"));
	model_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "qwen3_moe", qwen3_moe },
		{ "deepseek_v3", deepseek_v3 },
		{ "nemotron_h_gpt_oss_gemma3", nemotron_h_gpt_oss_gemma3 },
		{ "unmapped_family", unmapped_family },
		{ "folder_and_cache", folder_and_cache },
		{ "precedence", precedence },
		{ "unreadable", unreadable },
		{ "aliases_and_suggestions", aliases_and_suggestions },
		{ "partial_shape", partial_shape },
	};

	return RUN_CASES("model_hf", cases, 0);
}
