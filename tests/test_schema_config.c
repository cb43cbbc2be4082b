/*
 * Schema tests for what a user sees on a real config: "did you mean" (git's
 * weighted distance, hits and non-hits) and the built-in config schema (a
 * good config, bad values, key descriptions). The JSON Schema subset itself
 * is tested in tests/test_schema.c.
 *
 * Schemas are written with single quotes for readability; sq() turns them
 * into JSON. Configs are parsed from YAML text, so locations are real.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "levenshtein.h"
#include "schema.h"
#include "harness.h"
#include "schema_fixture.h"

/* ---- lev ---------------------------------------------------------- */

START_TEST(lev_uses_gits_weights)
{
	/* swap 0, substitution 2, insertion 1, deletion 3 */
	ck_assert_int_eq(lev_distance("ab", "ab", 0, 2, 1, 3), 0);
	ck_assert_int_eq(lev_distance("ba", "ab", 0, 2, 1, 3), 0);
	ck_assert_int_eq(lev_distance("ac", "abc", 0, 2, 1, 3), 1);
	ck_assert_int_eq(lev_distance("abbc", "abc", 0, 2, 1, 3), 3);
	ck_assert_int_eq(lev_distance("axc", "abc", 0, 2, 1, 3), 2);
	ck_assert_int_eq(lev_distance("", "abc", 0, 2, 1, 3), 3);
	ck_assert_int_eq(lev_distance("abc", "", 0, 2, 1, 3), 9);
	/* unit weights: the classic distance */
	ck_assert_int_eq(lev_distance("kitten", "sitting", 1, 1, 1, 1), 3);
	ck_assert_int_eq(lev_key_distance("Tensor-Model-Parallel-Size",
					  "tensor_model_parallel_size"), 0);
	ck_assert_int_eq(lev_key_distance("tensor_model_paralel_size",
					  "tensor_model_parallel_size"), 1);
	ck_assert_int_eq(lev_typo_limit(0), 0);
	ck_assert_int_eq(lev_typo_limit(1), 0);
	ck_assert_int_eq(lev_typo_limit(2), 1);
	ck_assert_int_eq(lev_typo_limit(4), 3);
	ck_assert_int_eq(lev_typo_limit(12), 4);
	ck_assert_int_eq(lev_typo_limit(40), 6);
}
END_TEST

START_TEST(lev_suggests_a_unique_close_candidate)
{
	const char *c[] = { "num_nodes", "gpus_per_node", NULL, "num_nodes" };
	const char *tie[] = { "first_stage", "fyrst_stage" };
	char big[LEV_MAX_WORD + 2];
	int d;

	ck_assert_int_eq(lev_suggest("num_node", c, 4, &d), 0);
	ck_assert_int_eq(d, 1);
	ck_assert_int_eq(lev_suggest("gpus_per_nodes", c, 4, &d), 1);
	ck_assert_int_eq(d, 3);
	ck_assert_int_eq(lev_suggest("segment_size", c, 4, &d), -1);
	ck_assert_int_gt(d, lev_typo_limit(strlen("segment_size")));
	/* two candidates equally close: no suggestion */
	ck_assert_int_eq(lev_suggest("fxrst_stage", tie, 2, NULL), -1);
	ck_assert_int_eq(lev_suggest("x", c, 0, &d), -1);
	ck_assert_int_eq(d, -1);
	/* over-long words are never compared */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(lev_distance(big, "a", 0, 2, 1, 3), -1);
	ck_assert_int_eq(lev_suggest(big, c, 4, NULL), -1);
}
END_TEST

/* ---- did you mean ----------------------------------------------------- */

START_TEST(did_you_mean_hits_typos)
{
	static const char *typos[] = {
		"tensor_model_paralel_size",  /* dropped letter */
		"tensor_model_parallell_size", /* doubled letter */
		"tensor_model_parallel_szie", /* swapped letters */
		"tensor_modek_parallel_size", /* wrong letter */
		"tensor-model-parallel-size", /* dashes */
		"Tensor_Model_Parallel_Size", /* case */
		"tensor_parallel_size",       /* the DTensor name */
	};
	const char *sch = "{'properties': {'m': {'properties': {"
		"'tensor_model_parallel_size': {}, "
		"'expert_tensor_parallel_size': {}, "
		"'pipeline_model_parallel_size': {}}}}}";

	for (size_t i = 0; i < sizeof(typos) / sizeof(typos[0]); i++) {
		struct fx f;
		char yaml[128], path[64];
		const struct diag *d;

		snprintf(yaml, sizeof(yaml), "m:\n  %s: 2\n", typos[i]);
		snprintf(path, sizeof(path), "m.%s", typos[i]);
		fx_init(&f);
		ck_assert_int_eq(run(&f, sch, yaml), 0);
		d = only(&f, "GT203");
		ck_assert_int_eq(d->severity, DIAG_WARNING);
		diag_at(d, 2, 3, path);
		ck_assert_str_eq(d->hint,
				 "did you mean 'tensor_model_parallel_size'?");
		ck_assert_ptr_nonnull(strstr(d->msg, typos[i]));
		fx_release(&f);
	}
}
END_TEST

START_TEST(did_you_mean_stays_quiet)
{
	struct fx f;
	const struct diag *d;
	const char *sch = "{'properties': {'m': {'properties': {"
		"'tensor_model_parallel_size': {}, "
		"'context_parallel_size': {}, "
		"'num_layers_in_first_pipeline_stage': {}, "
		"'num_layers_in_last_pipeline_stage': {}}}}}";

	/* real NeMo-RL neighbours of declared keys */
	EXPECT(sch, "m:\n  expert_parallel_size: 1\n"
	       "  moe_permute_fusion: true\n  sequence_parallel: false\n"
	       "  pipeline_dtype: bf16\n  num_layers: 4\n", 0, 0);
	/* a tie between two declared keys */
	EXPECT("{'properties': {'abc_x_size': {}, 'abc_y_size': {}}}",
	       "abc_z_size: 1\n", 0, 0);
	/* one- and two-letter keys are nobody's typo */
	EXPECT("{'properties': {'a': {}, 'tp': {}}}", "b: 1\npp: 2\n", 0, 0);
	/* declared keys never warn; no properties: nothing to compare */
	EXPECT(sch, "m:\n  context_parallel_size: 2\n", 0, 0);
	EXPECT("{'type': 'object'}", "tensor_model_paralel_size: 2\n", 0, 0);
	/* only siblings count: the key is right one level down */
	EXPECT(sch, "tensor_model_paralel_size: 2\n", 0, 0);

	/* the intended key is set too (say, by a parent file): a note */
	fx_init(&f);
	run(&f, sch, "m:\n  tensor_model_parallel_size: 1\n"
	    "  tensor_model_paralel_size: 4\n");
	d = only(&f, "GT203");
	diag_at(d, 3, 3, "m.tensor_model_paralel_size");
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_int_eq(d->notes[0].loc.line, 2);
	fx_release(&f);
}
END_TEST

/* ---- the built-in config schema ---------------------------------------- */

static const char good_config[] =
	"policy:\n"
	"  model_name: meta-llama/Llama-3.1-8B-Instruct\n"
	"  train_global_batch_size: 480\n"
	"  train_micro_batch_size: 4\n"
	"  logprob_batch_size: null\n"
	"  logprob_chunk_size: null\n"
	"  max_total_sequence_length: 4096\n"
	"  dtensor_cfg: {enabled: false, expert_parallel_size: 1}\n"
	"  megatron_cfg:\n"
	"    enabled: true\n"
	"    tensor_model_parallel_size: 4\n"
	"    tensor_parallel_num_weight_shards: 12\n"
	"    expert_tensor_parallel_size: null\n"
	"    num_layers_in_first_pipeline_stage: null\n"
	"    moe_permute_fusion: true\n"
	"    optimizer: {use_distributed_optimizer: true, lr: 1.0e-6}\n"
	"    distributed_data_parallel_config:\n"
	"      num_distributed_optimizer_instances: 1\n"
	"  generation:\n"
	"    backend: vllm\n"
	"    colocated: {enabled: true, resources: {gpus_per_node: null, "
	"num_nodes: null}}\n"
	"    vllm_cfg: {tensor_parallel_size: 4, pipeline_parallel_size: 1}\n"
	"checkpointing: {enabled: true, checkpoint_dir: results/x, "
	"save_period: 10}\n"
	"cluster:\n"
	"  num_nodes: 3\n"
	"  gpus_per_node: 8\n"
	"grpo: {num_prompts_per_step: 60}\n"
	"gtplan:\n"
	"  rank_order: tp-cp-gtp-ep-dp-pp\n"
	"  driver_layout: 4d\n"
	"  gpu_memory_gb: 141\n"
	"  model: {num_layers: 32, hidden_size: 4096, num_query_groups: 8}\n"
	"  runtime: {dtype: bf16, lr: 0.001, seed: 0}\n";

static int check_config(struct fx *f, const char *yaml)
{
	parse(f, yaml);
	f->errs = schema_check_config(f->root, &f->diags);
	return f->errs;
}

START_TEST(config_schema_accepts_a_good_config)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(check_config(&f, good_config), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	fx_release(&f);
}
END_TEST

START_TEST(config_schema_flags_bad_values)
{
	static const struct {
		const char *from, *to, *code, *path;
		int line, col;
	} cases[] = {
		{ "tensor_model_parallel_size: 4", "tensor_model_parallel_size:"
		  " four", "GT200", "policy.megatron_cfg.tensor_model_parallel_"
		  "size", 11, 33 },
		{ "num_nodes: 3", "num_nodes: 0", "GT201", "cluster.num_nodes",
		  25, 14 },
		{ "backend: vllm", "backend: vllmm", "GT202",
		  "policy.generation.backend", 20, 14 },
		{ "tensor_model_parallel_size: 4", "tensor_model_paralel_size:"
		  " 4", "GT203", "policy.megatron_cfg.tensor_model_paralel_"
		  "size", 11, 5 },
		{ "  gpus_per_node: 8\n", "", "GT204", "cluster.gpus_per_node",
		  24, 1 },
		{ "driver_layout: 4d", "driver_layot: 4d", "GT205",
		  "gtplan.driver_layot", 30, 3 },
		{ "rank_order: tp-cp-gtp-ep-dp-pp", "rank_order: 7", "GT200",
		  "gtplan.rank_order", 29, 15 },
		{ "tensor_parallel_num_weight_shards: 12",
		  "tensor_parallel_num_weight_shards: \"12\"", "GT200",
		  "policy.megatron_cfg.tensor_parallel_num_weight_shards", 12,
		  40 },
		{ "dtype: bf16", "dtype: fp16", "GT202", "gtplan.runtime.dtype",
		  33, 20 },
		{ "gpu_memory_gb: 141", "gpu_memory_gb: 0", "GT201",
		  "gtplan.gpu_memory_gb", 31, 18 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *hit = strstr(good_config, cases[i].from);
		char yaml[sizeof(good_config) + 64];
		struct fx f;
		const struct diag *d;

		ck_assert_ptr_nonnull(hit);
		snprintf(yaml, sizeof(yaml), "%.*s%s%s",
			 (int)(hit - good_config), good_config, cases[i].to,
			 hit + strlen(cases[i].from));
		fx_init(&f);
		check_config(&f, yaml);
		d = only(&f, cases[i].code);
		ck_assert_int_eq(f.errs, strcmp(cases[i].code, "GT203") != 0);
		ck_assert_str_eq(d->path, cases[i].path);
		ck_assert_msg(d->loc.line == cases[i].line &&
			      d->loc.col == cases[i].col,
			      "case %zu: at %d:%d, want %d:%d", i, d->loc.line,
			      d->loc.col, cases[i].line, cases[i].col);
		fx_release(&f);
	}
}
END_TEST

START_TEST(config_schema_describes_keys)
{
	char err[256];
	struct schema *s;
	const char *d;

	/* the embedded bytes are schemas/config.schema.json */
	extern const char gtplan_config_schema[];
	extern const unsigned long gtplan_config_schema_len;

	s = schema_load(gtplan_config_schema, gtplan_config_schema_len, err,
			sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	d = schema_description(s, "policy.megatron_cfg."
			       "tensor_parallel_num_weight_shards");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d, "G = S / TP"));
	ck_assert_ptr_nonnull(schema_description(s, "gtplan.calls.0.name"));
	ck_assert_ptr_nonnull(schema_description(s, "cluster"));
	ck_assert_ptr_null(schema_description(s, "policy.no_such_key"));
	ck_assert_ptr_null(schema_description(s, "grpo.num_prompts"));
	schema_free(s);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "lev_weights", lev_uses_gits_weights },
		{ "lev_suggest", lev_suggests_a_unique_close_candidate },
		{ "did_you_mean", did_you_mean_hits_typos },
		{ "did_you_mean_quiet", did_you_mean_stays_quiet },
		{ "config_good", config_schema_accepts_a_good_config },
		{ "config_bad", config_schema_flags_bad_values },
		{ "config_describe", config_schema_describes_keys },
	};

	return RUN_CASES("schema_config", cases, 30);
}
