/*
 * Planning rules and size derivation: each rule with a config that
 * triggers it and one that does not.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "plan_fixture.h"
#include "report.h"
#include "harness.h"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct plan plan;
};

/* Parses a YAML text and builds its plan; returns plan_build's status. */
static int build(struct fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	plan_init(&f->plan);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	return plan_build(&f->plan, f->root, "t.yaml", &f->diags);
}

static void release(struct fx *f)
{
	plan_release(&f->plan);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

static const struct diag *find(const struct fx *f, const char *code)
{
	for (size_t i = 0; i < f->diags.n; i++)
		if (f->diags.v[i].rule &&
		    strcmp(f->diags.v[i].rule->code, code) == 0)
			return &f->diags.v[i];
	return NULL;
}

#define TP4_S12 "    tensor_model_parallel_size: 4\n" \
		"    tensor_parallel_num_weight_shards: 12\n"

START_TEST(derives_copies_and_lanes)
{
	struct fx f;

	ck_assert_int_eq(build(&f, plan_yaml(TP4_S12, 3, 480, 4, NULL)), 0);
	ck_assert_int_eq(f.diags.n, 0);
	ck_assert(f.plan.grid_ok);
	ck_assert_int_eq(f.plan.world, 24);
	ck_assert_int_eq(f.plan.gtp, 3);
	ck_assert_int_eq(f.plan.shards, 12);
	ck_assert_int_eq(f.plan.model_size, 12);
	ck_assert_int_eq(f.plan.dp_replicate, 2);
	ck_assert_int_eq(f.plan.lanes, 6);
	ck_assert_int_eq(f.plan.edp, 6); /* ETP 4 x EP 1 x EG 1 */
	release(&f);
}
END_TEST

START_TEST(null_shards_mean_gtp_off)
{
	struct fx f;

	ck_assert_int_eq(build(&f, plan_yaml(
		"    tensor_model_parallel_size: 2\n"
		"    tensor_parallel_num_weight_shards: null\n",
		1, 32, 4, NULL)), 0);
	ck_assert_int_eq(f.plan.gtp, 1);
	ck_assert_int_eq(f.plan.shards, 2);
	ck_assert_int_eq(f.plan.dp_replicate, 4);
	ck_assert_int_eq(f.plan.lanes, 4);
	release(&f);
}
END_TEST

START_TEST(expert_grid_has_its_own_gtp)
{
	struct fx f;

	ck_assert_int_eq(build(&f, plan_yaml(
		"    tensor_model_parallel_size: 2\n"
		"    tensor_parallel_num_weight_shards: 4\n"
		"    expert_model_parallel_size: 4\n"
		"    expert_tensor_parallel_size: 1\n"
		"    expert_tensor_parallel_num_weight_shards: 2\n",
		2, 64, 2, NULL)), 0);
	ck_assert_int_eq(f.diags.n, 0);
	ck_assert_int_eq(f.plan.egtp, 2);
	ck_assert_int_eq(f.plan.etp, 1);
	ck_assert_int_eq(f.plan.edp, 2);
	ck_assert(f.plan.expert_grid_ok);
	release(&f);
}
END_TEST

START_TEST(remat_size_set_anywhere)
{
	struct fx f;
	const struct diag *d;

	build(&f, plan_yaml("    tensor_model_parallel_size: 4\n"
			    "    model_overrides:\n"
			    "      gtp_weight_remat_size: 3\n", 3, 48, 2,
			    NULL));
	d = find(&f, "GT300");
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->path,
			 "policy.megatron_cfg.model_overrides.gtp_weight_remat_size");
	ck_assert_int_eq(d->loc.line, 8);
	ck_assert_int_eq(d->loc.col, 7);
	ck_assert_ptr_nonnull(strstr(d->hint, "tensor_parallel_num_weight_shards"));
	release(&f);
}
END_TEST

START_TEST(shards_must_be_multiple_of_tp)
{
	struct fx f;
	const struct diag *d;

	build(&f, plan_yaml("    tensor_model_parallel_size: 4\n"
			    "    tensor_parallel_num_weight_shards: 10\n",
			    3, 48, 2, NULL));
	d = find(&f, "GT301");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->loc.line, 7);
	ck_assert_ptr_nonnull(strstr(d->hint, "8 (GTP 2) or 12 (GTP 3)"));
	ck_assert(!f.plan.grid_ok);
	release(&f);

	build(&f, plan_yaml("    tensor_model_parallel_size: 4\n"
			    "    tensor_parallel_num_weight_shards: 2\n",
			    3, 48, 2, NULL));
	ck_assert_ptr_nonnull(find(&f, "GT301"));
	release(&f);
}
END_TEST

START_TEST(expert_shards_must_be_multiple_of_etp)
{
	struct fx f;

	build(&f, plan_yaml(TP4_S12
			    "    expert_tensor_parallel_num_weight_shards: 6\n",
			    3, 48, 2, NULL));
	ck_assert_ptr_nonnull(find(&f, "GT302"));
	ck_assert_ptr_null(find(&f, "GT301"));
	release(&f);
}
END_TEST

START_TEST(world_must_divide_by_model_size)
{
	struct fx f;
	const struct diag *d;

	build(&f, plan_yaml("    tensor_model_parallel_size: 4\n"
			    "    tensor_parallel_num_weight_shards: 16\n",
			    3, 48, 2, NULL));
	d = find(&f, "GT303");
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->path, "cluster.num_nodes");
	ck_assert_ptr_nonnull(strstr(d->msg, "TP 4 x CP 1 x G 4 x PP 1 = 16"));
	ck_assert_ptr_nonnull(strstr(d->hint, "16 or 32"));
	ck_assert_int_ge(d->n_notes, 2); /* TP and the shard count, in place */
	ck_assert(!f.plan.grid_ok);
	release(&f);

	build(&f, plan_yaml(TP4_S12, 1, 48, 2, NULL));
	d = find(&f, "GT303");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "fewer than one model copy"));
	release(&f);
}
END_TEST

START_TEST(expert_world_must_divide)
{
	struct fx f;

	build(&f, plan_yaml(TP4_S12 "    expert_model_parallel_size: 5\n",
			    3, 48, 2, NULL));
	ck_assert_ptr_nonnull(find(&f, "GT304"));
	ck_assert(f.plan.grid_ok);
	ck_assert(!f.plan.expert_grid_ok);
	release(&f);
}
END_TEST

START_TEST(gtp_needs_one_optimizer_instance)
{
	struct fx f;
	const char *two = "    distributed_data_parallel_config:\n"
			  "      num_distributed_optimizer_instances: 2\n";
	char meg[512];

	snprintf(meg, sizeof(meg), "%s%s", TP4_S12, two);
	build(&f, plan_yaml(meg, 3, 48, 2, NULL));
	ck_assert_ptr_nonnull(find(&f, "GT305"));
	release(&f);
	/* without GTP, several instances are fine */
	snprintf(meg, sizeof(meg), "    tensor_model_parallel_size: 4\n%s", two);
	build(&f, plan_yaml(meg, 3, 48, 2, NULL));
	ck_assert_ptr_null(find(&f, "GT305"));
	release(&f);
}
END_TEST

START_TEST(gtp_needs_megatron)
{
	struct fx f;
	const char *y =
		"policy:\n"
		"  train_global_batch_size: 48\n"
		"  dtensor_cfg: {enabled: true, tensor_parallel_size: 4}\n"
		"  megatron_cfg:\n"
		"    enabled: false\n"
		"    tensor_model_parallel_size: 4\n"
		"    tensor_parallel_num_weight_shards: 12\n"
		"cluster: {num_nodes: 3, gpus_per_node: 8}\n";

	build(&f, y);
	ck_assert_ptr_nonnull(find(&f, "GT306"));
	ck_assert_int_eq(f.plan.gtp, 1);
	release(&f);
}
END_TEST

START_TEST(rank_order_is_checked)
{
	struct fx f;

	build(&f, plan_yaml(TP4_S12, 3, 48, 2,
			    "gtplan:\n  rank_order: tp-cp-dp-pp\n"));
	ck_assert_ptr_nonnull(find(&f, "GT307"));
	release(&f);
	build(&f, plan_yaml(TP4_S12, 3, 48, 2,
			    "gtplan:\n  rank_order: tp-gtp-cp-ep-dp-pp\n"));
	ck_assert_ptr_null(find(&f, "GT307"));
	release(&f);
}
END_TEST

START_TEST(world_size_limit)
{
	struct fx f;

	build(&f, plan_yaml(TP4_S12, 262144, 48, 2, NULL)); /* 2^21 GPUs */
	ck_assert_ptr_nonnull(find(&f, "GT308"));
	ck_assert(!f.plan.grid_ok);
	release(&f);
}
END_TEST

START_TEST(batch_splits_over_lanes_not_copies)
{
	struct fx f;
	const struct diag *d;

	/* 8 = 2 copies x 4 would be right for D, wrong for L = 6 */
	build(&f, plan_yaml(TP4_S12, 3, 8, 4, NULL));
	d = find(&f, "GT400");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "6 data lanes"));
	ck_assert_ptr_nonnull(strstr(d->hint, "6 or 12"));
	release(&f);

	build(&f, plan_yaml(TP4_S12, 3, 48, 3, NULL));
	ck_assert_ptr_null(find(&f, "GT400"));
	d = find(&f, "GT401");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->hint, "36 or 54"));
	release(&f);

	build(&f, plan_yaml(TP4_S12, 3, 48, 2, NULL));
	ck_assert_int_eq(f.diags.n, 0);
	release(&f);
}
END_TEST

START_TEST(rank_placement_follows_gpus_per_node)
{
	struct fx f;
	long long node, local;

	ck_assert_int_eq(build(&f, plan_yaml(TP4_S12, 3, 480, 4, NULL)), 0);
	plan_rank_place(&f.plan, 13, &node, &local);
	ck_assert_int_eq(node, 1);
	ck_assert_int_eq(local, 5);
	release(&f);
}
END_TEST

/* gtplan.runtime: defaults when absent, values when set (an integer lr
 * too), and the plan JSON's "runtime" object. */
START_TEST(runtime_settings)
{
	struct fx f;
	char json[1 << 16];
	size_t n;
	FILE *tmp;

	ck_assert_int_eq(build(&f, plan_yaml(TP4_S12, 3, 480, 4, NULL)), 0);
	ck_assert_int_eq(f.plan.runtime.hidden, PLAN_RT_HIDDEN);
	ck_assert_int_eq(f.plan.runtime.vocab, PLAN_RT_VOCAB);
	ck_assert(f.plan.runtime.lr == PLAN_RT_LR);
	ck_assert_str_eq(f.plan.runtime.dtype, "fp32");
	release(&f);

	ck_assert_int_eq(build(&f, plan_yaml(TP4_S12, 3, 480, 4,
		"gtplan:\n  runtime:\n    hidden: 40\n    lr: 2\n"
		"    dtype: bf16\n    seed: 0\n")), 0);
	ck_assert_int_eq(f.plan.runtime.hidden, 40);
	ck_assert_int_eq(f.plan.runtime.ffn, PLAN_RT_FFN);
	ck_assert_int_eq(f.plan.runtime.seed, 0);
	ck_assert(f.plan.runtime.lr == 2.0);
	ck_assert_str_eq(f.plan.runtime.dtype, "bf16");
	release(&f);

	ck_assert_int_eq(build(&f, plan_yaml(TP4_S12, 3, 480, 4,
		"gtplan:\n  runtime:\n    lr: 0.003\n    steps: 9\n")), 0);
	tmp = tmpfile();
	ck_assert_ptr_nonnull(tmp);
	ck_assert_int_eq(plan_write_json(tmp, &f.plan, NULL, &f.diags), 0);
	rewind(tmp);
	n = fread(json, 1, sizeof(json) - 1, tmp);
	json[n] = '\0';
	fclose(tmp);
	ck_assert_ptr_nonnull(strstr(json, "\"runtime\": {\n    \"dtype\": "
					   "\"fp32\",\n    \"ffn\": 512,"));
	ck_assert_ptr_nonnull(strstr(json, "\"lr\": 0.003,\n"));
	ck_assert_ptr_nonnull(strstr(json, "\"steps\": 9,\n"));
	release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "derive", derives_copies_and_lanes },
		{ "gtp_off", null_shards_mean_gtp_off },
		{ "expert_grid", expert_grid_has_its_own_gtp },
		{ "GT300", remat_size_set_anywhere },
		{ "GT301", shards_must_be_multiple_of_tp },
		{ "GT302", expert_shards_must_be_multiple_of_etp },
		{ "GT303", world_must_divide_by_model_size },
		{ "GT304", expert_world_must_divide },
		{ "GT305", gtp_needs_one_optimizer_instance },
		{ "GT306", gtp_needs_megatron },
		{ "GT307", rank_order_is_checked },
		{ "GT308", world_size_limit },
		{ "GT400_401", batch_splits_over_lanes_not_copies },
		{ "placement", rank_placement_follows_gpus_per_node },
		{ "runtime", runtime_settings },
	};

	return RUN_CASES("plan", cases, 0);
}
