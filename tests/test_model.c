/*
 * Tests for model: catalog lookup and sanity, and parameter counts against
 * the totals the model cards and checkpoints state. model_resolve's
 * merging of `gtplan.model` and its findings are test_model_resolve.c's.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfg.h"
#include "diag.h"
#include "model.h"
#include "model_fixture.h"
#include "harness.h"

/* ---- helpers ---------------------------------------------------------- */

/* |got - want| <= 1% of want */
static void near(const char *what, long long got, double want)
{
	double err = ((double)got - want) / want;

	ck_assert_msg(err > -0.01 && err < 0.01, "%s: %lld, want ~%.4g (%.2f%%)",
		      what, got, want, 100.0 * err);
}

static const char *const required_names[] = {
	"Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-1.5B", "Qwen/Qwen2.5-3B",
	"Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-14B", "Qwen/Qwen2.5-32B",
	"Qwen/Qwen2.5-72B", "Qwen/Qwen2.5-0.5B-Instruct",
	"Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct",
	"Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-14B-Instruct",
	"Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-72B-Instruct",
	"Qwen/Qwen2.5-Math-1.5B", "Qwen/Qwen2.5-Math-1.5B-Instruct",
	"Qwen/Qwen2.5-Math-7B", "meta-llama/Llama-3.1-8B",
	"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B",
	"meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-1B",
	"meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-3B",
	"meta-llama/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.3-70B-Instruct",
	"Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B", "Qwen/Qwen3-4B", "Qwen/Qwen3-8B",
	"Qwen/Qwen3-14B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B",
	"Qwen/Qwen3-235B-A22B", "google/gemma-3-1b-it", "google/gemma-3-27b-it",
	"mistralai/Mistral-Nemo-Instruct-2407",
};

/* ---- lookup ----------------------------------------------------------- */

START_TEST(lookup_case)
{
	const struct model_shape *m = model_fx_find("Qwen/Qwen2.5-7B");

	ck_assert_str_eq(m->name, "Qwen/Qwen2.5-7B");
	ck_assert_ptr_eq(model_catalog_find("qwen/qwen2.5-7b"), m);
	ck_assert_ptr_eq(model_catalog_find("QWEN/QWEN2.5-7B"), m);
	ck_assert_str_eq(
		model_fx_find("META-LLAMA/llama-3.1-8b-instruct")->name,
		"meta-llama/Llama-3.1-8B-Instruct");
	/* exact names only: no prefix or suffix matches */
	ck_assert_ptr_null(model_catalog_find("Qwen/Qwen2.5-7"));
	ck_assert_ptr_null(model_catalog_find("Qwen/Qwen2.5-7B-Instruct-AWQ"));
	ck_assert_ptr_null(model_catalog_find("Qwen/Qwen2.5-7B "));
}
END_TEST

START_TEST(lookup_prefix)
{
	ck_assert_ptr_eq(model_catalog_find("Qwen2.5-7B"),
			 model_fx_find("Qwen/Qwen2.5-7B"));
	ck_assert_ptr_eq(model_catalog_find("llama-3.2-1b-instruct"),
			 model_fx_find("meta-llama/Llama-3.2-1B-Instruct"));
	/* another org is another model */
	ck_assert_ptr_null(model_catalog_find("unsloth/Qwen2.5-7B"));
	ck_assert_ptr_null(model_catalog_find("/Qwen2.5-7B"));
}
END_TEST

START_TEST(lookup_paths_and_unknown)
{
	static const char *const none[] = {
		"/path/to/model", "/models/Qwen/Qwen2.5-7B", "./Qwen2.5-7B",
		"../Qwen/Qwen2.5-7B", "~/Qwen2.5-7B", "models/Qwen/Qwen2.5-7B",
		"C:\\models\\Qwen2.5-7B", "dummy-model", "acme/Foo-7B", "", "/",
	};

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		ck_assert_msg(model_catalog_find(none[i]) == NULL, "%s found",
			      none[i]);
	ck_assert_ptr_null(model_catalog_find(NULL));
	ck_assert_ptr_null(model_catalog_at(model_catalog_count()));
}
END_TEST

/* ---- the catalog ------------------------------------------------------ */

START_TEST(catalog_sane)
{
	size_t n = model_catalog_count();

	ck_assert_uint_ge(n, sizeof(required_names) / sizeof(required_names[0]));
	for (size_t i = 0; i < n; i++) {
		const struct model_shape *m = model_catalog_at(i);
		const char *slash = strchr(m->name, '/');

		ck_assert_msg(slash && slash != m->name && slash[1] &&
			      !strchr(slash + 1, '/'), "%s: not org/name",
			      m->name);
		ck_assert_ptr_eq(model_catalog_find(m->name), m);
		if (i)
			ck_assert_msg(strcasecmp(model_catalog_at(i - 1)->name,
						 m->name) < 0,
				      "%s: not sorted", m->name);
		/* every entry has its parallel shape; sizes may be approximate
		 * (hybrid, MLA) */
		ck_assert_msg(m->shape_known, "%s", m->name);
		ck_assert_int_lt(m->loc.src, 0);
		ck_assert_msg(m->num_layers > 0 && m->hidden_size > 0 &&
			      m->num_attention_heads > 0 && m->vocab_size > 0,
			      "%s: a size is not positive", m->name);
		ck_assert_msg(m->num_query_groups > 0 &&
			      m->num_attention_heads % m->num_query_groups == 0,
			      "%s: heads %% kv heads", m->name);
		if (m->num_moe_experts) {
			unsigned char moe[MODEL_TEXT_MAX];

			ck_assert_msg(model_layer_kinds(m, moe,
							MODEL_TEXT_MAX) == 0,
				      "%s: MoE layer pattern", m->name);
			ck_assert_msg(model_moe_layers(m, 0, m->num_layers) > 0,
				      "%s: no MoE layer", m->name);
		}
		if (m->hybrid_layer_pattern[0])
			ck_assert_uint_eq(strlen(m->hybrid_layer_pattern),
					  (size_t)m->num_layers);
		if (!m->known)
			continue;
		ck_assert_msg(m->ffn_hidden_size > 0, "%s: ffn", m->name);
		ck_assert_msg(m->kv_channels > 0 ||
			      m->hidden_size % m->num_attention_heads == 0,
			      "%s: hidden %% heads without kv_channels",
			      m->name);
		ck_assert_msg(m->gated_linear_unit, "%s", m->name);
		if (m->num_moe_experts)
			ck_assert_msg(m->moe_ffn_hidden_size > 0 &&
				      m->moe_router_topk > 0 &&
				      m->moe_router_topk <= m->num_moe_experts,
				      "%s: MoE fields", m->name);
		else
			ck_assert_msg(!m->moe_ffn_hidden_size &&
				      !m->moe_router_topk, "%s", m->name);
		/* biases: only gpt-oss among the exact shapes */
		ck_assert_msg(!m->add_bias_linear ||
			      strstr(m->name, "gpt-oss"), "%s", m->name);
	}
	ck_assert_msg(model_catalog_error() == NULL, "%s",
		      model_catalog_error());
	for (size_t i = 0; i < sizeof(required_names) / sizeof(required_names[0]);
	     i++)
		model_fx_find(required_names[i]);
}
END_TEST

/* Variants of one checkpoint share its shape; families differ as their
 * config.json files do. */
START_TEST(catalog_families)
{
	const struct model_shape *a = model_fx_find("Qwen/Qwen2.5-Math-7B");
	const struct model_shape *b = model_fx_find("Qwen/Qwen2.5-7B-Instruct");

	ck_assert_int_eq(a->vocab_size, 152064);
	ck_assert(memcmp(&a->known, &b->known, sizeof(*a) -
			 offsetof(struct model_shape, known)) == 0);
	ck_assert(model_fx_find("Qwen/Qwen2.5-1.5B")->add_qkv_bias);
	ck_assert(model_fx_find("Qwen/Qwen2.5-1.5B")->share_embeddings_and_output_weights);
	ck_assert(!model_fx_find("Qwen/Qwen2.5-7B")->share_embeddings_and_output_weights);
	ck_assert(!model_fx_find("Qwen/Qwen3-8B")->add_qkv_bias);
	ck_assert(model_fx_find("Qwen/Qwen3-4B")->share_embeddings_and_output_weights);
	ck_assert(!model_fx_find("Qwen/Qwen3-8B")->share_embeddings_and_output_weights);
	ck_assert_int_eq(model_fx_find("Qwen/Qwen3-0.6B")->kv_channels, 128);
	ck_assert_int_eq(model_fx_find("meta-llama/Llama-3.2-3B")->vocab_size, 128256);
	ck_assert(model_fx_find("meta-llama/Llama-3.2-3B")->share_embeddings_and_output_weights);
	ck_assert(!model_fx_find("meta-llama/Llama-3.3-70B-Instruct")->share_embeddings_and_output_weights);
	a = model_fx_find("Qwen/Qwen3-30B-A3B");
	ck_assert_int_eq(a->num_moe_experts, 128);
	ck_assert_int_eq(a->moe_router_topk, 8);
	ck_assert_int_eq(a->moe_ffn_hidden_size, 768);
	ck_assert_int_eq(a->num_query_groups, 4);
	/* Qwen3-Omni's thinker: the same MoE shape, the Omni vocabulary */
	b = model_fx_find("Qwen/Qwen3-Omni-30B-A3B-Instruct");
	ck_assert_int_eq(b->num_layers, 48);
	ck_assert_int_eq(b->num_moe_experts, a->num_moe_experts);
	ck_assert_int_eq(b->moe_ffn_hidden_size, a->moe_ffn_hidden_size);
	ck_assert_int_eq(b->vocab_size, 152064);
}
END_TEST

/* The entries added from the Hugging Face configs, Megatron-Bridge and
 * slime: their numbers, and which are exact. */
START_TEST(catalog_new_entries)
{
	const struct model_shape *m;

	/* dense, uniform: exact */
	m = model_fx_find("mistralai/Mistral-Medium-3.5-128B");
	ck_assert(m->known);
	ck_assert_int_eq(m->num_layers, 88);
	ck_assert_int_eq(m->hidden_size, 12288);
	ck_assert_int_eq(m->ffn_hidden_size, 28672);
	ck_assert_int_eq(m->num_attention_heads, 96);
	ck_assert_int_eq(m->num_query_groups, 8);
	ck_assert_int_eq(m->kv_channels, 128);
	ck_assert_int_eq(m->vocab_size, 131072);
	m = model_fx_find("allenai/Llama-3.1-Tulu-3-8B-SFT");
	ck_assert(m->known);
	ck_assert_int_eq(m->vocab_size, 128264);
	ck_assert_int_eq(m->ffn_hidden_size, 14336);
	/* MoE in every layer, no shared expert, MTP not built: exact */
	m = model_fx_find("MiniMaxAI/MiniMax-M2.7");
	ck_assert(m->known);
	ck_assert_int_eq(m->num_layers, 62);
	ck_assert_int_eq(m->num_attention_heads, 48);
	ck_assert_int_eq(m->num_query_groups, 8);
	ck_assert_int_eq(m->num_moe_experts, 256);
	ck_assert_int_eq(m->moe_router_topk, 8);
	ck_assert_int_eq(m->moe_ffn_hidden_size, 1536);
	ck_assert_int_eq(m->vocab_size, 200064);
	ck_assert_int_eq(m->mtp_num_layers, 0);
	ck_assert_int_eq(model_moe_layers(m, 0, 62), 62);
	/* Gemma 4: sliding and global layers differ, so approximate; the
	 * sliding layers' head dim and KV heads, tied 262144 vocabulary */
	m = model_fx_find("google/gemma-4-31B-it");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 60);
	ck_assert_int_eq(m->hidden_size, 5376);
	ck_assert_int_eq(m->num_attention_heads, 32);
	ck_assert_int_eq(m->num_query_groups, 16);
	ck_assert_int_eq(m->kv_channels, 256);
	ck_assert_int_eq(m->vocab_size, 262144);
	ck_assert(m->share_embeddings_and_output_weights);
	m = model_fx_find("google/gemma-4-26B-A4B-it");
	ck_assert_int_eq(m->num_layers, 30);
	ck_assert_int_eq(m->num_moe_experts, 128);
	ck_assert_int_eq(m->moe_ffn_hidden_size, 704);
	ck_assert_int_eq(m->moe_shared_expert_intermediate_size, 2112);
	ck_assert_int_eq(model_moe_layers(m, 0, 30), 30);
	ck_assert_int_eq(model_fx_find("google/gemma-4-E2B-it")->num_query_groups, 1);
	ck_assert_int_eq(model_fx_find("google/gemma-4-E4B-it")->num_layers,
			 42);
	/* Qwen3.5: gated delta net layers, approximate */
	m = model_fx_find("Qwen/Qwen3.5-35B-A3B-Base");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 40);
	ck_assert_int_eq(m->num_query_groups, 2);
	ck_assert_int_eq(m->num_moe_experts, 256);
	ck_assert_int_eq(m->vocab_size, 248320);
	ck_assert_int_eq(m->mtp_num_layers, 1);
	m = model_fx_find("Qwen/Qwen3.5-9B-Base");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 32);
	ck_assert_int_eq(m->num_query_groups, 4);
	ck_assert_int_eq(m->kv_channels, 256);
	ck_assert_int_eq(m->num_moe_experts, 0);
	ck_assert_int_eq(model_fx_find("Qwen/Qwen3.5-397B-A17B")->kv_channels,
			 256);
	/* GLM-5.1: three dense layers, then MoE; one MTP layer */
	m = model_fx_find("zai-org/GLM-5.1");
	ck_assert(m->shape_known && !m->known && m->multi_latent_attention);
	ck_assert_int_eq(m->num_layers, 78);
	ck_assert_int_eq(model_moe_layers(m, 0, 78), 75);
	ck_assert_int_eq(model_moe_layers(m, 0, 3), 0);
	ck_assert_int_eq(m->mtp_num_layers, 1);
	/* Nemotron 3.5 Lightning: Nemotron 3 Nano's layers and one MTP layer */
	m = model_fx_find("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 52);
	ck_assert_int_eq(model_moe_layers(m, 0, 52), 23);
	ck_assert_int_eq(m->num_moe_experts, 128);
	ck_assert_int_eq(m->moe_router_topk, 6);
	ck_assert_int_eq(m->moe_shared_expert_intermediate_size, 3712);
	ck_assert_int_eq(m->num_query_groups, 2);
	ck_assert_int_eq(m->mtp_num_layers, 1);
	m = model_fx_find("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16");
	ck_assert_int_eq(m->mtp_num_layers, 0);
	/* Llama-Nemotron Super: heterogeneous blocks, the parallel shape only */
	m = model_fx_find("nvidia/Llama-3_3-Nemotron-Super-49B-v1_5");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 80);
	ck_assert_int_eq(m->num_attention_heads, 64);
	ck_assert_int_eq(m->num_query_groups, 8);
	ck_assert_int_eq(m->vocab_size, 128256);
}
END_TEST

/* ---- parameter counts ------------------------------------------------- */

START_TEST(param_totals)
{
	static const struct {
		const char *name;
		double total;
	} v[] = {
		/* safetensors totals / model cards */
		{ "meta-llama/Llama-3.1-8B", 8.03e9 },
		{ "meta-llama/Llama-3.1-70B", 70.55e9 },
		{ "meta-llama/Llama-3.2-1B", 1.24e9 },
		{ "meta-llama/Llama-3.2-3B", 3.21e9 },
		{ "Qwen/Qwen2.5-0.5B", 0.49e9 },
		{ "Qwen/Qwen2.5-1.5B", 1.54e9 },
		{ "Qwen/Qwen2.5-7B", 7.61e9 },
		{ "Qwen/Qwen2.5-32B", 32.5e9 },
		{ "Qwen/Qwen2.5-72B", 72.7e9 },
		{ "Qwen/Qwen3-0.6B", 0.6e9 },
		{ "Qwen/Qwen3-8B", 8.2e9 },
		{ "Qwen/Qwen3-32B", 32.8e9 },
		{ "Qwen/Qwen3-30B-A3B", 30.5e9 },
		{ "Qwen/Qwen3-235B-A22B", 235e9 },
		{ "google/gemma-3-1b-it", 1.0e9 },
		{ "mistralai/Mistral-Nemo-Instruct-2407", 12.2e9 },
		{ "MiniMaxAI/MiniMax-M2.7", 229e9 },
		{ "allenai/Llama-3.1-Tulu-3-8B", 8.03e9 },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		near(v[i].name, model_total_params(model_fx_find(v[i].name)),
		     v[i].total);
	/* exact: Llama-3.1-8B's safetensors hold 8,030,261,248 elements */
	ck_assert_int_eq(model_total_params(model_fx_find("meta-llama/Llama-3.1-8B")),
			 8030261248LL);
	/* model cards' non-embedding counts */
	near("Qwen2.5-7B non-embedding",
	     28 * model_layer_params(model_fx_find("Qwen/Qwen2.5-7B")), 6.53e9);
	near("Qwen2.5-0.5B non-embedding",
	     24 * model_layer_params(model_fx_find("Qwen/Qwen2.5-0.5B")),
	     0.36e9);
	near("Qwen3-0.6B non-embedding",
	     28 * model_layer_params(model_fx_find("Qwen/Qwen3-0.6B")), 0.44e9);
	near("Qwen3-30B-A3B non-embedding",
	     48 * model_layer_params(model_fx_find("Qwen/Qwen3-30B-A3B")),
	     29.9e9);
}
END_TEST

START_TEST(param_embedding_and_mtp)
{
	struct model_shape m = *model_fx_find("Qwen/Qwen2.5-7B");
	long long e = 152064LL * 3584;

	ck_assert_int_eq(model_embedding_params(&m), 2 * e);
	m.share_embeddings_and_output_weights = 1;
	ck_assert_int_eq(model_embedding_params(&m), e);
	ck_assert_int_eq(model_mtp_params(&m), 0);
	m.mtp_num_layers = 2;
	ck_assert_int_eq(model_mtp_params(&m),
			 2 * (model_layer_params(&m) + 2LL * 3584 * 3584 +
			      3 * 3584));
	ck_assert_int_eq(model_total_params(&m),
			 28 * model_layer_params(&m) + e + 3584 +
			 model_mtp_params(&m));
	m.known = 0;
	ck_assert_int_eq(model_total_params(&m), 0);
	ck_assert_int_eq(model_layer_params(&m), 0);
	ck_assert_int_eq(model_embedding_params(&m), 0);
}
END_TEST

/* The parts add up, biases included. */
START_TEST(param_parts)
{
	struct model_shape m = *model_fx_find("Qwen/Qwen2.5-7B");
	struct model_weight w[MODEL_MAX_WEIGHTS];
	size_t n = model_layer_weights(&m, w, MODEL_MAX_WEIGHTS);
	long long sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += w[i].rows * w[i].cols;
	/* two norms + the QKV bias */
	ck_assert_int_eq(model_layer_replicated_params(&m), 2 * 3584 + 4608);
	ck_assert_int_eq(model_layer_params(&m),
			 sum + model_layer_replicated_params(&m));
	m.add_bias_linear = 1;
	ck_assert_int_eq(model_layer_replicated_params(&m),
			 2 * 3584 + 4608 + 3584 + 2 * 18944 + 3584);
	m.add_qkv_bias = 0;  /* add_bias_linear alone also biases QKV */
	ck_assert_int_eq(model_layer_replicated_params(&m),
			 2 * 3584 + 4608 + 3584 + 2 * 18944 + 3584);
	m.gated_linear_unit = 0;
	ck_assert_int_eq(model_layer_params(&m),
			 4608LL * 3584 + 3584LL * 3584 + 2 * 18944LL * 3584 +
			 2 * 3584 + 4608 + 3584 + 18944 + 3584);

	m = *model_fx_find("Qwen/Qwen3-30B-A3B");
	ck_assert_int_eq(model_layer_expert_params(&m),
			 128LL * (2 * 768 * 2048 + 2048 * 768));
	ck_assert_int_eq(model_layer_replicated_params(&m),
			 2 * 2048 + 128 * 2048);
	ck_assert_int_eq(model_layer_params(&m),
			 (32 + 8) * 128LL * 2048 + 2048LL * 32 * 128 +
			 model_layer_replicated_params(&m) +
			 model_layer_expert_params(&m));
	m.add_bias_linear = 1;
	ck_assert_int_eq(model_layer_expert_params(&m),
			 128LL * (2 * 768 * 2048 + 2048 * 768 + 2 * 768 + 2048));
}
END_TEST

START_TEST(layer_weights_dense)
{
	struct model_weight w[MODEL_MAX_WEIGHTS];
	const struct model_shape *m = model_fx_find("meta-llama/Llama-3.1-8B");

	ck_assert_uint_eq(model_layer_weights(m, w, MODEL_MAX_WEIGHTS), 4);
	ck_assert_str_eq(w[0].name, "linear_qkv");
	ck_assert_int_eq(w[0].rows, (32 + 2 * 8) * 128);
	ck_assert_int_eq(w[0].cols, 4096);
	ck_assert_int_eq(w[0].split, SPLIT_COLUMN);
	ck_assert_str_eq(w[1].name, "linear_proj");
	ck_assert_int_eq(w[1].rows, 4096);
	ck_assert_int_eq(w[1].cols, 4096);
	ck_assert_int_eq(w[1].split, SPLIT_ROW);
	ck_assert_str_eq(w[2].name, "linear_fc1");
	ck_assert_int_eq(w[2].rows, 2 * 14336);
	ck_assert_int_eq(w[2].cols, 4096);
	ck_assert_int_eq(w[2].split, SPLIT_COLUMN);
	ck_assert_str_eq(w[3].name, "linear_fc2");
	ck_assert_int_eq(w[3].rows, 4096);
	ck_assert_int_eq(w[3].cols, 14336);
	ck_assert_int_eq(w[3].split, SPLIT_ROW);
	ck_assert_uint_eq(model_expert_weights(m, w, MODEL_MAX_WEIGHTS), 0);

	/* kv_channels: Qwen3-0.6B's heads x head dim (2048) is not hidden */
	m = model_fx_find("Qwen/Qwen3-0.6B");
	ck_assert_int_eq(model_head_dim(m), 128);
	ck_assert_int_eq(model_kv_heads(m), 8);
	ck_assert_uint_eq(model_layer_weights(m, w, MODEL_MAX_WEIGHTS), 4);
	ck_assert_int_eq(w[0].rows, (16 + 2 * 8) * 128);
	ck_assert_int_eq(w[0].cols, 1024);
	ck_assert_int_eq(w[1].rows, 1024);
	ck_assert_int_eq(w[1].cols, 16 * 128);

	/* truncation: as many as fit */
	memset(w, 0, sizeof(w));
	ck_assert_uint_eq(model_layer_weights(m, w, 2), 2);
	ck_assert_ptr_null(w[2].name);
	ck_assert_uint_eq(model_layer_weights(m, NULL, 0), 0);
}
END_TEST

START_TEST(layer_weights_moe)
{
	struct model_weight w[MODEL_MAX_WEIGHTS];
	const struct model_shape *m = model_fx_find("Qwen/Qwen3-30B-A3B");

	ck_assert_uint_eq(model_layer_weights(m, w, MODEL_MAX_WEIGHTS), 2);
	ck_assert_str_eq(w[0].name, "linear_qkv");
	ck_assert_int_eq(w[0].rows, (32 + 2 * 4) * 128);
	ck_assert_int_eq(w[0].cols, 2048);
	ck_assert_str_eq(w[1].name, "linear_proj");
	ck_assert_int_eq(w[1].rows, 2048);
	ck_assert_int_eq(w[1].cols, 32 * 128);
	ck_assert_uint_eq(model_expert_weights(m, w, MODEL_MAX_WEIGHTS), 2);
	ck_assert_str_eq(w[0].name, "experts.linear_fc1");
	ck_assert_int_eq(w[0].rows, 2 * 768);
	ck_assert_int_eq(w[0].cols, 2048);
	ck_assert_int_eq(w[0].split, SPLIT_COLUMN);
	ck_assert_str_eq(w[1].name, "experts.linear_fc2");
	ck_assert_int_eq(w[1].rows, 2048);
	ck_assert_int_eq(w[1].cols, 768);
	ck_assert_int_eq(w[1].split, SPLIT_ROW);
}
END_TEST

/* ---- suite ------------------------------------------------------------ */

int main(void)
{
	const struct test_case cases[] = {
		{ "lookup_case", lookup_case },
		{ "lookup_prefix", lookup_prefix },
		{ "lookup_paths_and_unknown", lookup_paths_and_unknown },
		{ "catalog_sane", catalog_sane },
		{ "catalog_families", catalog_families },
		{ "catalog_new_entries", catalog_new_entries },
		{ "param_totals", param_totals },
		{ "param_embedding_and_mtp", param_embedding_and_mtp },
		{ "param_parts", param_parts },
		{ "layer_weights_dense", layer_weights_dense },
		{ "layer_weights_moe", layer_weights_moe },
	};

	return RUN_CASES("model", cases, 0);
}
