/*
 * Tests for the model catalog as data (data/models.yaml, read by
 * planner/model_catalog_load.c through model_hf.c's mapping): the embedded
 * file loads; an entry written in YAML and the same fields as a
 * config.json give the same shape (and the catalog's Qwen3-30B-A3B and
 * gpt-oss-20b equal their config.json fixtures in tests/configs/hf/);
 * every family the catalog uses is mapped, with its approximate sizes;
 * and a broken catalog fails with "data/models.yaml:LINE:COL: what".
 * Run from the repository root (the fixtures).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "model_int.h"
#include "harness.h"

#define MAXS 16

/* Every field of a and b is equal, except those named in `skip`
 * (space-separated); known and shape_known too. */
static void assert_same(const struct model_shape *a,
			const struct model_shape *b, const char *skip,
			const char *what)
{
	struct model_shape *x = (struct model_shape *)a;
	struct model_shape *y = (struct model_shape *)b;

	ck_assert_msg(a->known == b->known && a->shape_known == b->shape_known,
		      "%s: known %d/%d, shape_known %d/%d", what, a->known,
		      b->known, a->shape_known, b->shape_known);
	for (size_t i = 0; i < model_n_fields; i++) {
		const struct model_field *f = &model_fields[i];
		char key[64];
		int same;

		snprintf(key, sizeof(key), " %s ", f->key);
		if (skip) {
			char list[256];

			snprintf(list, sizeof(list), " %s ", skip);
			if (strstr(list, key))
				continue;
		}
		if (f->type == MF_TEXT)
			same = !strcmp(model_text_at(x, f), model_text_at(y, f));
		else if (f->type == MF_BOOL)
			same = *model_bool_at(x, f) == *model_bool_at(y, f);
		else if (f->type == MF_REAL)
			same = *model_real_at(x, f) == *model_real_at(y, f);
		else
			same = *model_int_at(x, f) == *model_int_at(y, f);
		ck_assert_msg(same, "%s: field %s differs", what, f->key);
	}
}

/* A config.json read the way model_resolve reads one, finished as a
 * catalog entry is. */
static void read_json(const char *path, struct model_shape *m)
{
	struct model_hf_info info;
	char err[256];

	memset(m, 0, sizeof(*m));
	ck_assert_msg(model_hf_read(path, m, &info, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_msg(info.mapped, "%s: not mapped", path);
	ck_assert_int_eq(model_catalog_shape(m, info.approximate), 0);
	memset(m->origin, 0, sizeof(m->origin));
}

START_TEST(embedded_loads)
{
	ck_assert_msg(model_catalog_error() == NULL,
		      "the embedded catalog is broken: %s",
		      model_catalog_error());
	ck_assert_uint_ge(model_catalog_count(), 80);
}
END_TEST

/* The entry written in YAML (bases, a merge key, an anchored entry reused)
 * and the same fields as a config.json file: the one mapping gives the
 * same shape, name aside. */
START_TEST(entry_round_trips)
{
	static const char yaml[] =
		"bases:\n"
		"  moe: &moe\n"
		"    architectures: [DeepseekV3ForCausalLM]\n"
		"    model_type: deepseek_v3\n"
		"    tie_word_embeddings: false\n"
		"models:\n"
		"  - names: [acme/MoE-1]\n"
		"    make_vocab_size_divisible_by: 1280\n"
		"    config:\n"
		"      <<: *moe\n"
		"      num_hidden_layers: 12\n"
		"      hidden_size: 1024\n"
		"      intermediate_size: 4096\n"
		"      num_attention_heads: 16\n"
		"      kv_lora_rank: 512\n"
		"      vocab_size: 32000\n"
		"      n_routed_experts: 64\n"
		"      num_experts_per_tok: 6\n"
		"      moe_intermediate_size: 512\n"
		"      n_shared_experts: 2\n"
		"      first_k_dense_replace: 2\n"
		"      rope_theta: 10000\n"
		"      rms_norm_eps: 1e-6\n";
	static const char json[] =
		"{\"architectures\": [\"DeepseekV3ForCausalLM\"],\n"
		" \"model_type\": \"deepseek_v3\", \"tie_word_embeddings\": false,\n"
		" \"num_hidden_layers\": 12, \"hidden_size\": 1024,\n"
		" \"intermediate_size\": 4096, \"num_attention_heads\": 16,\n"
		" \"kv_lora_rank\": 512, \"vocab_size\": 32000,\n"
		" \"n_routed_experts\": 64, \"num_experts_per_tok\": 6,\n"
		" \"moe_intermediate_size\": 512, \"n_shared_experts\": 2,\n"
		" \"first_k_dense_replace\": 2, \"rope_theta\": 10000,\n"
		" \"rms_norm_eps\": 1e-6}\n";
	struct model_shape out[MAXS], j;
	char err[256], path[] = "/tmp/gtplan-catalog-XXXXXX";
	size_t n;
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, json, sizeof(json) - 1),
			 (ssize_t)(sizeof(json) - 1));
	close(fd);
	ck_assert_msg(model_catalog_parse(yaml, sizeof(yaml) - 1, out, MAXS,
					  &n, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(out[0].name, "acme/MoE-1");
	read_json(path, &j);
	unlink(path);
	/* config.json has no make_vocab_size_divisible_by */
	ck_assert_int_eq(out[0].make_vocab_size_divisible_by, 1280);
	assert_same(&out[0], &j, "make_vocab_size_divisible_by", "round trip");
	/* and the mapping did its work: not merely two empty shapes */
	ck_assert_int_eq(out[0].num_layers, 12);
	ck_assert_int_eq(out[0].num_moe_experts, 64);
	ck_assert_int_eq(out[0].moe_shared_expert_intermediate_size, 1024);
	ck_assert_str_eq(out[0].moe_layer_freq, "[0]*2+[1]*10");
	ck_assert(out[0].multi_latent_attention && out[0].gated_linear_unit);
	ck_assert(!out[0].share_embeddings_and_output_weights);
	ck_assert(out[0].layernorm_epsilon == 1e-6);
	ck_assert(!out[0].known && out[0].shape_known); /* approximate */
}
END_TEST

/* The catalog's entries against real config.json files of the same models
 * (tests/configs/hf/): equal field by field, except what the entry leaves
 * out and the fixture gives. */
START_TEST(catalog_equals_config_json)
{
	static const struct {
		const char *name, *fixture, *skip;
	} pairs[] = {
		/* the catalog's Qwen3 MoE entries give no rope_theta /
		 * rms_norm_eps */
		{ "Qwen/Qwen3-30B-A3B", "tests/configs/hf/qwen3-30b-a3b/"
		  "config.json", "rotary_base layernorm_epsilon" },
		{ "openai/gpt-oss-20b", "tests/configs/hf/gpt-oss/config.json",
		  NULL },
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		const struct model_shape *c = model_catalog_find(pairs[i].name);
		struct model_shape m;

		ck_assert_ptr_nonnull(c);
		read_json(pairs[i].fixture, &m);
		assert_same(c, &m, pairs[i].skip, pairs[i].name);
	}
	/* the mapping's family constants reach the catalog */
	ck_assert(model_catalog_find("Qwen/Qwen3-30B-A3B")->qk_layernorm);
	ck_assert(model_catalog_find("openai/gpt-oss-20b")->add_qkv_bias);
}
END_TEST

/* Every family the catalog uses is one the mapping knows, with its
 * constants and its exact or approximate sizes (the loader refuses an
 * unmapped one: bad_catalogs). */
START_TEST(families_map)
{
	static const struct {
		const char *name;
		int known, glu;
	} want[] = {
		{ "meta-llama/Llama-3.1-8B", 1, 1 },
		{ "nvidia/Llama-3_3-Nemotron-Super-49B-v1", 0, 1 },
		{ "Qwen/Qwen2.5-7B", 1, 1 },
		{ "Qwen/Qwen3.5-9B", 0, 1 },
		{ "google/gemma-3-27b-it", 1, 1 },
		{ "google/gemma-4-31B", 0, 1 },
		{ "mistralai/Mistral-Nemo-Base-2407", 1, 1 },
		{ "openai/gpt-oss-20b", 1, 1 },
		{ "MiniMaxAI/MiniMax-M2.7", 1, 1 },
		{ "moonshotai/Moonlight-16B-A3B", 0, 1 },
		{ "zai-org/GLM-4.7-Flash", 0, 1 },
		{ "zai-org/GLM-5", 0, 1 },
		{ "nvidia/NVIDIA-Nemotron-Nano-9B-v2", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct model_shape *m = model_catalog_find(want[i].name);

		ck_assert_msg(m != NULL, "%s", want[i].name);
		ck_assert_msg(m->known == want[i].known &&
			      m->gated_linear_unit == want[i].glu,
			      "%s: known %d glu %d", want[i].name, m->known,
			      m->gated_linear_unit);
	}
	/* MiniMax-M2's experts are intermediate_size wide (no
	 * moe_intermediate_size), Nemotron-H's shared expert has its own key,
	 * Qwen3.5's MTP layers too */
	ck_assert_int_eq(model_catalog_find("MiniMaxAI/MiniMax-M2.7")->
			 moe_ffn_hidden_size, 1536);
	ck_assert_int_eq(model_catalog_find("nvidia/NVIDIA-Nemotron-3-Nano-"
					    "30B-A3B-BF16")->
			 moe_shared_expert_intermediate_size, 3712);
	ck_assert_int_eq(model_catalog_find("Qwen/Qwen3.5-397B-A17B")->
			 mtp_num_layers, 1);
	ck_assert_int_eq(model_catalog_find("moonshotai/Moonlight-16B-A3B")->
			 make_vocab_size_divisible_by, 1280);
}
END_TEST

#define ENTRY(cfg) \
	"models:\n  - names: [acme/X]\n    config:\n      model_type: llama\n" \
	"      num_hidden_layers: 2\n      hidden_size: 64\n" \
	"      num_attention_heads: 4\n      vocab_size: 100\n" cfg

/* A broken catalog: refused whole, with the place and the reason. */
START_TEST(bad_catalogs)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "models: [\n", ":2:1: did not find expected node content" },
		{ ENTRY("      num_hiden_layers: 3\n"),
		  ":4:7: config.json key not read by planner/model_hf.c: "
		  "num_hiden_layers" },
		{ "models:\n  - names: [acme/X]\n    config:\n"
		  "      model_type: falcon\n      num_hidden_layers: 2\n",
		  ":4:7: model_type is not a family planner/model_hf.c maps: "
		  "falcon" },
		{ "models:\n  - names: [acme/X]\n    config:\n"
		  "      model_type: llama\n      hidden_size: 64\n",
		  ":4:7: an entry lacks num_hidden_layers" },
		{ ENTRY("  - names: [ACME/x]\n    config: {model_type: llama,"
			" num_hidden_layers: 2, hidden_size: 64,"
			" num_attention_heads: 4, vocab_size: 100}\n"),
		  ":2:3: a name is listed twice: ACME/x" },
		{ "models:\n  - names: [X]\n    config: {model_type: llama,"
		  " num_hidden_layers: 2, hidden_size: 64,"
		  " num_attention_heads: 4, vocab_size: 100}\n",
		  ":2:12: a name is not a hub id ORG/NAME: X" },
		{ "models:\n  - config: {model_type: llama}\n",
		  ":2:5: an entry has names, config" },
		{ "models:\n  - names: [acme/X]\n    source: here\n"
		  "    config: {model_type: llama}\n",
		  ":2:5: an entry has names, config" },
		{ "shapes: []\n", ":1:1: the catalog is a mapping of models" },
		{ "models:\n  - names: [acme/X]\n    config:\n      <<: 3\n",
		  ":4:11: a merge key '<<' needs a mapping" },
		{ ENTRY("      hidden_size: 32\n"), ":9:7: duplicate key "
		  "hidden_size" },
		{ "models:\n  - names: [acme/X]\n"
		  "    make_vocab_size_divisible_by: 0\n"
		  "    config: {model_type: llama}\n",
		  ":3:35: make_vocab_size_divisible_by is a positive integer" },
	};
	struct model_shape out[MAXS];
	char err[256];
	size_t n;

	/* the template itself is good */
	ck_assert_msg(model_catalog_parse(ENTRY(""), sizeof(ENTRY("")) - 1,
					  out, MAXS, &n, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(n, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 99;
		ck_assert_int_eq(model_catalog_parse(bad[i].text,
						     strlen(bad[i].text), out,
						     MAXS, &n, err,
						     sizeof(err)), -1);
		ck_assert_uint_eq(n, 0);
		ck_assert_msg(!strncmp(err, "data/models.yaml:", 17) &&
			      strstr(err, bad[i].want), "case %zu: got '%s', "
			      "want '%s'", i, err, bad[i].want);
	}
	/* more names than the caller holds */
	ck_assert_int_eq(model_catalog_parse(ENTRY(""), sizeof(ENTRY("")) - 1,
					     out, 0, &n, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "more names than the catalog "
				     "holds"));
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "embedded_loads", embedded_loads },
		{ "entry_round_trips", entry_round_trips },
		{ "catalog_equals_config_json", catalog_equals_config_json },
		{ "families_map", families_map },
		{ "bad_catalogs", bad_catalogs },
	};

	return RUN_CASES("model_catalog", cases, 0);
}
