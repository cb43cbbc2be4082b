/*
 * Tests for model: catalog lookup and sanity, parameter counts against the
 * totals the model cards and checkpoints state, and model_resolve's
 * merging of `gtplan.model` and its findings.
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

static const struct model_shape *must_find(const char *name)
{
	const struct model_shape *m = model_catalog_find(name);

	ck_assert_msg(m != NULL, "%s not in the catalog", name);
	return m;
}

/* |got - want| <= 1% of want */
static void near(const char *what, long long got, double want)
{
	double err = ((double)got - want) / want;

	ck_assert_msg(err > -0.01 && err < 0.01, "%s: %lld, want ~%.4g (%.2f%%)",
		      what, got, want, 100.0 * err);
}

static void expect_diag(const struct diag *d, const char *code, int line,
			int col, const char *path)
{
	ck_assert_str_eq(diag_code(d), code);
	ck_assert_int_eq(d->loc.line, line);
	ck_assert_int_eq(d->loc.col, col);
	if (path)
		ck_assert_str_eq(d->path, path);
	else
		ck_assert_ptr_null(d->path);
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
	const struct model_shape *m = must_find("Qwen/Qwen2.5-7B");

	ck_assert_str_eq(m->name, "Qwen/Qwen2.5-7B");
	ck_assert_ptr_eq(model_catalog_find("qwen/qwen2.5-7b"), m);
	ck_assert_ptr_eq(model_catalog_find("QWEN/QWEN2.5-7B"), m);
	ck_assert_str_eq(must_find("META-LLAMA/llama-3.1-8b-instruct")->name,
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
			 must_find("Qwen/Qwen2.5-7B"));
	ck_assert_ptr_eq(model_catalog_find("llama-3.2-1b-instruct"),
			 must_find("meta-llama/Llama-3.2-1B-Instruct"));
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
		must_find(required_names[i]);
}
END_TEST

/* Variants of one checkpoint share its shape; families differ as their
 * config.json files do. */
START_TEST(catalog_families)
{
	const struct model_shape *a = must_find("Qwen/Qwen2.5-Math-7B");
	const struct model_shape *b = must_find("Qwen/Qwen2.5-7B-Instruct");

	ck_assert_int_eq(a->vocab_size, 152064);
	ck_assert(memcmp(&a->known, &b->known, sizeof(*a) -
			 offsetof(struct model_shape, known)) == 0);
	ck_assert(must_find("Qwen/Qwen2.5-1.5B")->add_qkv_bias);
	ck_assert(must_find("Qwen/Qwen2.5-1.5B")->share_embeddings_and_output_weights);
	ck_assert(!must_find("Qwen/Qwen2.5-7B")->share_embeddings_and_output_weights);
	ck_assert(!must_find("Qwen/Qwen3-8B")->add_qkv_bias);
	ck_assert(must_find("Qwen/Qwen3-4B")->share_embeddings_and_output_weights);
	ck_assert(!must_find("Qwen/Qwen3-8B")->share_embeddings_and_output_weights);
	ck_assert_int_eq(must_find("Qwen/Qwen3-0.6B")->kv_channels, 128);
	ck_assert_int_eq(must_find("meta-llama/Llama-3.2-3B")->vocab_size, 128256);
	ck_assert(must_find("meta-llama/Llama-3.2-3B")->share_embeddings_and_output_weights);
	ck_assert(!must_find("meta-llama/Llama-3.3-70B-Instruct")->share_embeddings_and_output_weights);
	a = must_find("Qwen/Qwen3-30B-A3B");
	ck_assert_int_eq(a->num_moe_experts, 128);
	ck_assert_int_eq(a->moe_router_topk, 8);
	ck_assert_int_eq(a->moe_ffn_hidden_size, 768);
	ck_assert_int_eq(a->num_query_groups, 4);
	/* Qwen3-Omni's thinker: the same MoE shape, the Omni vocabulary */
	b = must_find("Qwen/Qwen3-Omni-30B-A3B-Instruct");
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
	m = must_find("mistralai/Mistral-Medium-3.5-128B");
	ck_assert(m->known);
	ck_assert_int_eq(m->num_layers, 88);
	ck_assert_int_eq(m->hidden_size, 12288);
	ck_assert_int_eq(m->ffn_hidden_size, 28672);
	ck_assert_int_eq(m->num_attention_heads, 96);
	ck_assert_int_eq(m->num_query_groups, 8);
	ck_assert_int_eq(m->kv_channels, 128);
	ck_assert_int_eq(m->vocab_size, 131072);
	m = must_find("allenai/Llama-3.1-Tulu-3-8B-SFT");
	ck_assert(m->known);
	ck_assert_int_eq(m->vocab_size, 128264);
	ck_assert_int_eq(m->ffn_hidden_size, 14336);
	/* MoE in every layer, no shared expert, MTP not built: exact */
	m = must_find("MiniMaxAI/MiniMax-M2.7");
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
	m = must_find("google/gemma-4-31B-it");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 60);
	ck_assert_int_eq(m->hidden_size, 5376);
	ck_assert_int_eq(m->num_attention_heads, 32);
	ck_assert_int_eq(m->num_query_groups, 16);
	ck_assert_int_eq(m->kv_channels, 256);
	ck_assert_int_eq(m->vocab_size, 262144);
	ck_assert(m->share_embeddings_and_output_weights);
	m = must_find("google/gemma-4-26B-A4B-it");
	ck_assert_int_eq(m->num_layers, 30);
	ck_assert_int_eq(m->num_moe_experts, 128);
	ck_assert_int_eq(m->moe_ffn_hidden_size, 704);
	ck_assert_int_eq(m->moe_shared_expert_intermediate_size, 2112);
	ck_assert_int_eq(model_moe_layers(m, 0, 30), 30);
	ck_assert_int_eq(must_find("google/gemma-4-E2B-it")->num_query_groups, 1);
	ck_assert_int_eq(must_find("google/gemma-4-E4B-it")->num_layers, 42);
	/* Qwen3.5: gated delta net layers, approximate */
	m = must_find("Qwen/Qwen3.5-35B-A3B-Base");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 40);
	ck_assert_int_eq(m->num_query_groups, 2);
	ck_assert_int_eq(m->num_moe_experts, 256);
	ck_assert_int_eq(m->vocab_size, 248320);
	ck_assert_int_eq(m->mtp_num_layers, 1);
	m = must_find("Qwen/Qwen3.5-9B-Base");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 32);
	ck_assert_int_eq(m->num_query_groups, 4);
	ck_assert_int_eq(m->kv_channels, 256);
	ck_assert_int_eq(m->num_moe_experts, 0);
	ck_assert_int_eq(must_find("Qwen/Qwen3.5-397B-A17B")->kv_channels, 256);
	/* GLM-5.1: three dense layers, then MoE; one MTP layer */
	m = must_find("zai-org/GLM-5.1");
	ck_assert(m->shape_known && !m->known && m->multi_latent_attention);
	ck_assert_int_eq(m->num_layers, 78);
	ck_assert_int_eq(model_moe_layers(m, 0, 78), 75);
	ck_assert_int_eq(model_moe_layers(m, 0, 3), 0);
	ck_assert_int_eq(m->mtp_num_layers, 1);
	/* Nemotron 3.5 Lightning: Nemotron 3 Nano's layers and one MTP layer */
	m = must_find("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16");
	ck_assert(m->shape_known && !m->known);
	ck_assert_int_eq(m->num_layers, 52);
	ck_assert_int_eq(model_moe_layers(m, 0, 52), 23);
	ck_assert_int_eq(m->num_moe_experts, 128);
	ck_assert_int_eq(m->moe_router_topk, 6);
	ck_assert_int_eq(m->moe_shared_expert_intermediate_size, 3712);
	ck_assert_int_eq(m->num_query_groups, 2);
	ck_assert_int_eq(m->mtp_num_layers, 1);
	ck_assert_int_eq(must_find("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
			 ->mtp_num_layers, 0);
	/* Llama-Nemotron Super: heterogeneous blocks, the parallel shape only */
	m = must_find("nvidia/Llama-3_3-Nemotron-Super-49B-v1_5");
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
		near(v[i].name, model_total_params(must_find(v[i].name)),
		     v[i].total);
	/* exact: Llama-3.1-8B's safetensors hold 8,030,261,248 elements */
	ck_assert_int_eq(model_total_params(must_find("meta-llama/Llama-3.1-8B")),
			 8030261248LL);
	/* model cards' non-embedding counts */
	near("Qwen2.5-7B non-embedding",
	     28 * model_layer_params(must_find("Qwen/Qwen2.5-7B")), 6.53e9);
	near("Qwen2.5-0.5B non-embedding",
	     24 * model_layer_params(must_find("Qwen/Qwen2.5-0.5B")), 0.36e9);
	near("Qwen3-0.6B non-embedding",
	     28 * model_layer_params(must_find("Qwen/Qwen3-0.6B")), 0.44e9);
	near("Qwen3-30B-A3B non-embedding",
	     48 * model_layer_params(must_find("Qwen/Qwen3-30B-A3B")), 29.9e9);
}
END_TEST

START_TEST(param_embedding_and_mtp)
{
	struct model_shape m = *must_find("Qwen/Qwen2.5-7B");
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
	struct model_shape m = *must_find("Qwen/Qwen2.5-7B");
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

	m = *must_find("Qwen/Qwen3-30B-A3B");
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
	const struct model_shape *m = must_find("meta-llama/Llama-3.1-8B");

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
	m = must_find("Qwen/Qwen3-0.6B");
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
	const struct model_shape *m = must_find("Qwen/Qwen3-30B-A3B");

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
			 model_total_params(must_find("Qwen/Qwen2.5-7B")));
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
	const struct model_shape *cat = must_find("Qwen/Qwen2.5-7B");

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

	return RUN_CASES("model", cases, 0);
}
