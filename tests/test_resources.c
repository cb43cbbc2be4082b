/*
 * Resource split tests: the training world NeMo-RL's setup() derives for
 * each algorithm (whole cluster, colocated, non-colocated on one node and on
 * several, reward model, on-policy-distillation teachers, distillation,
 * SingleController), and each of NeMo-RL's checks reported as GT309/GT310
 * at the offending value.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "harness.h"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct plan plan;
	const char *yaml; /* the last text derived */
	int rc;
};

static struct fx f;

static void setup(void)
{
	src_set_init(&f.srcs);
	diag_list_init(&f.diags, &f.srcs);
	f.root = NULL;
	plan_init(&f.plan);
}

static void teardown(void)
{
	plan_release(&f.plan);
	cfg_free(f.root);
	diag_list_release(&f.diags);
	src_set_release(&f.srcs);
}

/* Parses `yaml` and derives the resources; returns plan_derive_resources'
 * result. */
static int derive(const char *yaml)
{
	char *text = strdup(yaml);

	ck_assert_ptr_nonnull(text);
	f.yaml = yaml;
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f.srcs,
					&f.diags, &f.root), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	f.rc = plan_derive_resources(&f.plan, f.root, &f.diags);
	return f.rc;
}

static void expect_gpus(const struct plan_gpus *g, long long nodes,
			long long gpus)
{
	ck_assert_int_eq(g->nodes, nodes);
	ck_assert_int_eq(g->gpus_per_node, gpus);
}

/* The 1-based line where `needle` (which starts with a newline) ends up. */
static int line_of(const char *needle)
{
	const char *at = strstr(f.yaml, needle);
	int line = 1;

	ck_assert_ptr_nonnull(at);
	for (const char *c = f.yaml; c <= at; c++)
		line += *c == '\n';
	return line;
}

/* The one finding: its code, config path, and the line of `needle`. */
static void expect_only(const char *code, const char *path, const char *needle)
{
	int line = line_of(needle);

	ck_assert_int_eq(f.rc, -1);
	ck_assert_uint_eq(f.diags.n, 1);
	ck_assert_str_eq(f.diags.v[0].rule->code, code);
	ck_assert_str_eq(f.diags.v[0].path, path);
	ck_assert_int_eq(f.diags.v[0].loc.line, line);
	ck_assert_ptr_nonnull(f.diags.v[0].hint);
}

#define CLUSTER(n, g) "cluster:\n  num_nodes: " #n "\n  gpus_per_node: " #g "\n"
#define NONCOLOC(gpus, nodes) \
	"policy:\n  generation:\n    backend: vllm\n    colocated:\n" \
	"      enabled: false\n      resources:\n" \
	"        gpus_per_node: " #gpus "\n        num_nodes: " #nodes "\n"
#define COLOC "policy:\n  generation:\n    colocated:\n      enabled: true\n"
#define GEN_GPUS "\n        gpus_per_node:"
#define GEN_NODES "\n        num_nodes:"

/* ---- whole cluster ------------------------------------------------- */

START_TEST(sft_trains_on_the_whole_cluster)
{
	ck_assert_int_eq(derive("sft:\n  max_num_steps: 1\n"
				"policy:\n  model_name: m\n" CLUSTER(4, 8)), 0);
	expect_gpus(&f.plan.cluster, 4, 8);
	expect_gpus(&f.plan.train, 4, 8);
	expect_gpus(&f.plan.inference, 0, 0);
	ck_assert_int_eq(f.plan.world, 32);
	ck_assert_int_eq(f.plan.colocated, 1);
}
END_TEST

START_TEST(dpo_ignores_a_generation_section)
{
	ck_assert_int_eq(derive("dpo:\n  max_num_steps: 1\n" NONCOLOC(4, 1)
				CLUSTER(1, 8)), 0);
	ck_assert_int_eq(f.plan.world, 8);
	expect_gpus(&f.plan.inference, 0, 0);
}
END_TEST

START_TEST(off_policy_distillation_shares_the_cluster)
{
	ck_assert_int_eq(derive("distillation:\n  seed: 1\n"
				"teachers:\n  - model_name: t\n" NONCOLOC(4, 1)
				CLUSTER(2, 8)), 0);
	ck_assert_int_eq(f.plan.world, 16);
}
END_TEST

START_TEST(missing_cluster_keys_report_nothing)
{
	ck_assert_int_eq(derive("grpo:\n  seed: 1\ncluster:\n  num_nodes: 2\n"),
			 -1);
	ck_assert_uint_eq(f.diags.n, 0);
	ck_assert_int_eq(f.plan.world, 0);
}
END_TEST

START_TEST(bad_cluster_values_report_nothing)
{
	ck_assert_int_eq(derive("sft: {}\n" CLUSTER(0, 8)), -1);
	ck_assert_uint_eq(f.diags.n, 0);
}
END_TEST

/* ---- GRPO: colocated and non-colocated ------------------------------ */

START_TEST(colocated_trains_on_every_gpu)
{
	ck_assert_int_eq(derive("grpo: {}\n" COLOC CLUSTER(3, 8)), 0);
	ck_assert_int_eq(f.plan.colocated, 1);
	expect_gpus(&f.plan.train, 3, 8);
	expect_gpus(&f.plan.inference, 0, 0);
	ck_assert_int_eq(f.plan.world, 24);
}
END_TEST

START_TEST(single_node_gives_generation_gpus)
{
	ck_assert_int_eq(derive("grpo: {}\n" NONCOLOC(2, null) CLUSTER(1, 8)),
			 0);
	ck_assert_int_eq(f.plan.colocated, 0);
	expect_gpus(&f.plan.inference, 1, 2);
	expect_gpus(&f.plan.train, 1, 6);
	ck_assert_int_eq(f.plan.world, 6);
}
END_TEST

START_TEST(multi_node_gives_generation_nodes)
{
	ck_assert_int_eq(derive("grpo: {}\n" NONCOLOC(8, 1) CLUSTER(4, 8)), 0);
	expect_gpus(&f.plan.inference, 1, 8);
	expect_gpus(&f.plan.train, 3, 8);
	ck_assert_int_eq(f.plan.world, 24);
}
END_TEST

START_TEST(ppo_uses_grpo_rules)
{
	ck_assert_int_eq(derive("ppo: {}\n" NONCOLOC(4, 2) CLUSTER(10, 4)), 0);
	expect_gpus(&f.plan.train, 8, 4);
}
END_TEST

START_TEST(generation_without_algorithm_is_grpo)
{
	ck_assert_int_eq(derive(NONCOLOC(8, 2) CLUSTER(6, 8)), 0);
	expect_gpus(&f.plan.train, 4, 8);
}
END_TEST

/* ---- reward model -------------------------------------------------- */

#define RM(nodes, gpus) \
	"data:\n  default:\n    env_name: reward_model\n" \
	"env:\n  reward_model:\n    resources:\n" \
	"      gpus_per_node: " #gpus "\n      num_nodes: " #nodes "\n"
#define RM_GPUS "\n      gpus_per_node:"
#define RM_NODES "\n      num_nodes:"

START_TEST(reward_model_shares_a_single_node)
{
	ck_assert_int_eq(derive("grpo: {}\n" RM(1, 1) COLOC CLUSTER(1, 2)), 0);
	expect_gpus(&f.plan.reward, 1, 1);
	expect_gpus(&f.plan.train, 1, 1);
	ck_assert_int_eq(f.plan.world, 1);
}
END_TEST

START_TEST(reward_model_and_generation_on_one_node)
{
	ck_assert_int_eq(derive("grpo: {}\n" RM(1, 1) NONCOLOC(2, 1)
				CLUSTER(1, 8)), 0);
	expect_gpus(&f.plan.inference, 1, 2);
	expect_gpus(&f.plan.train, 1, 5);
}
END_TEST

START_TEST(reward_model_takes_nodes)
{
	ck_assert_int_eq(derive("grpo: {}\n" RM(1, 8) COLOC CLUSTER(3, 8)), 0);
	expect_gpus(&f.plan.train, 2, 8);
}
END_TEST

START_TEST(reward_model_node_leaves_one_policy_node)
{
	/* N = 2: the reward model takes a node, so generation and training
	 * share the other one, and the reward model's GPUs are not taken. */
	ck_assert_int_eq(derive("grpo: {}\n" RM(1, 8) NONCOLOC(4, null)
				CLUSTER(2, 8)), 0);
	expect_gpus(&f.plan.inference, 1, 4);
	expect_gpus(&f.plan.train, 1, 4);
}
END_TEST

START_TEST(reward_model_found_in_a_dataset_list)
{
	ck_assert_int_eq(derive("grpo: {}\ndata:\n  train:\n  - env_name: math\n"
				"  - env_name: reward_model\nenv:\n  reward_model:\n"
				"    resources: {num_nodes: 1, gpus_per_node: 2}\n"
				COLOC CLUSTER(1, 8)), 0);
	expect_gpus(&f.plan.train, 1, 6);
}
END_TEST

START_TEST(unused_reward_model_takes_nothing)
{
	ck_assert_int_eq(derive("grpo: {}\ndata:\n  default:\n    env_name: math\n"
				"env:\n  reward_model:\n    resources: "
				"{num_nodes: 1, gpus_per_node: 2}\n"
				COLOC CLUSTER(1, 8)), 0);
	expect_gpus(&f.plan.train, 1, 8);
	expect_gpus(&f.plan.reward, 0, 0);
}
END_TEST

/* ---- on-policy-distillation teachers -------------------------------- */

#define OPD_TEACHERS(dedup, nodes, gpus) \
	"on_policy_distillation:\n  enabled: true\n" \
	"  deduplicate_shared_teacher_checkpoints: " #dedup "\n" \
	"  teacher_model_by_agent_name:\n    a: /ckpt/one\n    b: /ckpt/one\n" \
	"    c: /ckpt/two\n  non_colocated_teachers:\n    enabled: true\n" \
	"    default_teacher_cfg:\n      num_nodes: " #nodes "\n" \
	"      gpus_per_node: " #gpus "\n"
#define T_NODES "\n      num_nodes:"
#define T_GPUS "\n      gpus_per_node:"

START_TEST(teachers_take_whole_nodes_per_checkpoint)
{
	ck_assert_int_eq(derive("grpo: {}\n" OPD_TEACHERS(true, 2, 4)
				NONCOLOC(8, 3) CLUSTER(10, 8)), 0);
	expect_gpus(&f.plan.teachers, 4, 8);
	expect_gpus(&f.plan.inference, 3, 8);
	expect_gpus(&f.plan.train, 3, 8);
	ck_assert_int_eq(f.plan.world, 24);
}
END_TEST

START_TEST(teachers_without_deduplication)
{
	ck_assert_int_eq(derive("grpo: {}\n" OPD_TEACHERS(false, 1, 8)
				COLOC CLUSTER(5, 8)), 0);
	expect_gpus(&f.plan.teachers, 3, 8);
	expect_gpus(&f.plan.train, 2, 8);
}
END_TEST

START_TEST(teacher_overrides_and_defaults)
{
	/* a has no num_nodes anywhere (1); c's override gives it 3. */
	ck_assert_int_eq(derive("grpo: {}\non_policy_distillation:\n"
		"  enabled: true\n  teacher_model_by_agent_name:\n"
		"    a: x\n    c: y\n  non_colocated_teachers:\n"
		"    enabled: true\n    default_teacher_cfg:\n"
		"      gpus_per_node: 8\n    teacher_overrides:\n"
		"      c:\n        num_nodes: 3\n" COLOC CLUSTER(6, 8)), 0);
	expect_gpus(&f.plan.teachers, 4, 8);
	expect_gpus(&f.plan.train, 2, 8);
}
END_TEST

START_TEST(disabled_teachers_take_nothing)
{
	ck_assert_int_eq(derive("grpo: {}\non_policy_distillation:\n"
		"  enabled: true\n  teacher_model_by_agent_name: {a: x}\n"
		"  non_colocated_teachers:\n    enabled: false\n"
		COLOC CLUSTER(2, 8)), 0);
	expect_gpus(&f.plan.teachers, 0, 0);
	expect_gpus(&f.plan.train, 2, 8);
}
END_TEST

START_TEST(ppo_has_no_teachers)
{
	ck_assert_int_eq(derive("ppo: {}\n" OPD_TEACHERS(true, 1, 8)
				COLOC CLUSTER(2, 8)), 0);
	expect_gpus(&f.plan.teachers, 0, 0);
	ck_assert_int_eq(f.plan.world, 16);
}
END_TEST

START_TEST(teacher_gpus_must_fit_a_node)
{
	derive("grpo: {}\n" OPD_TEACHERS(true, 1, 8) COLOC CLUSTER(4, 4));
	expect_only("GT310", "on_policy_distillation.non_colocated_teachers."
		    "default_teacher_cfg.gpus_per_node", T_GPUS);
}
END_TEST

START_TEST(teachers_leave_no_policy_nodes)
{
	derive("grpo: {}\n" OPD_TEACHERS(true, 1, 8) COLOC CLUSTER(2, 8));
	expect_only("GT309", "on_policy_distillation.non_colocated_teachers."
		    "default_teacher_cfg.num_nodes", T_NODES);
}
END_TEST

START_TEST(later_aliases_of_a_checkpoint_are_ignored)
{
	/* b shares a's checkpoint: its override never makes a group. */
	ck_assert_int_eq(derive("grpo: {}\non_policy_distillation:\n"
		"  enabled: true\n  teacher_model_by_agent_name:\n"
		"    a: x\n    b: x\n  non_colocated_teachers:\n"
		"    enabled: true\n    teacher_overrides:\n"
		"      b: {num_nodes: 5, gpus_per_node: 64}\n"
		COLOC CLUSTER(4, 8)), 0);
	expect_gpus(&f.plan.teachers, 1, 8);
	expect_gpus(&f.plan.train, 3, 8);
}
END_TEST

START_TEST(teacher_values_must_be_integers)
{
	derive("grpo: {}\n" OPD_TEACHERS(true, "2", 8) COLOC CLUSTER(4, 8));
	expect_only("GT310", "on_policy_distillation.non_colocated_teachers."
		    "default_teacher_cfg", T_NODES);
}
END_TEST

/* ---- distillation and SingleController ------------------------------ */

START_TEST(distillation_single_node)
{
	ck_assert_int_eq(derive("distillation: {}\n" NONCOLOC(4, null)
				CLUSTER(1, 8)), 0);
	expect_gpus(&f.plan.train, 1, 4);
}
END_TEST

START_TEST(distillation_multi_node)
{
	ck_assert_int_eq(derive("distillation: {}\n" NONCOLOC(8, 1)
				CLUSTER(2, 8)), 0);
	expect_gpus(&f.plan.train, 1, 8);
	expect_gpus(&f.plan.inference, 1, 8);
}
END_TEST

START_TEST(distillation_refuses_megatron_generation)
{
	derive("distillation: {}\npolicy:\n  generation:\n    backend: megatron\n"
	       "    colocated:\n      enabled: false\n" CLUSTER(2, 8));
	expect_only("GT310", "policy.generation.backend", "\n    backend:");
}
END_TEST

START_TEST(single_controller_reads_null_nodes_as_one)
{
	ck_assert_int_eq(derive("grpo: {}\nasync_rl: {}\n" NONCOLOC(8, null)
				CLUSTER(4, 8)), 0);
	expect_gpus(&f.plan.inference, 1, 8);
	expect_gpus(&f.plan.train, 3, 8);
}
END_TEST

START_TEST(single_controller_lets_generation_use_part_nodes)
{
	/* GRPO would require gpus_per_node == cluster.gpus_per_node here. */
	ck_assert_int_eq(derive("grpo: {}\nasync_rl: {}\n" NONCOLOC(4, 2)
				CLUSTER(4, 8)), 0);
	expect_gpus(&f.plan.train, 2, 8);
}
END_TEST

START_TEST(single_controller_ignores_the_reward_model)
{
	ck_assert_int_eq(derive("grpo: {}\nasync_rl: {}\n" RM(1, 1) COLOC
				CLUSTER(1, 2)), 0);
	ck_assert_int_eq(f.plan.world, 2);
}
END_TEST

/* ---- NeMo-RL's checks ----------------------------------------------- */

START_TEST(single_node_needs_generation_gpus)
{
	derive("grpo: {}\n" NONCOLOC(null, 1) CLUSTER(1, 8));
	expect_only("GT310", "policy.generation.colocated.resources.gpus_per_node",
		    GEN_GPUS);
}
END_TEST

START_TEST(schema_typed_values_are_left_to_the_schema)
{
	/* 0 and "2" break the schema (GT201, GT200); nothing more here. */
	ck_assert_int_eq(derive("grpo: {}\n" NONCOLOC(0, 1) CLUSTER(1, 8)), -1);
	ck_assert_uint_eq(f.diags.n, 0);
}
END_TEST

START_TEST(single_node_generation_uses_that_node)
{
	derive("grpo: {}\n" NONCOLOC(2, 2) CLUSTER(1, 8));
	expect_only("GT310", "policy.generation.colocated.resources.num_nodes",
		    GEN_NODES);
}
END_TEST

START_TEST(single_node_generation_leaves_gpus)
{
	derive("grpo: {}\n" NONCOLOC(8, 1) CLUSTER(1, 8));
	expect_only("GT309", "policy.generation.colocated.resources.gpus_per_node",
		    GEN_GPUS);
	ck_assert_uint_eq(f.diags.v[0].n_notes, 1);
	ck_assert_int_eq(f.diags.v[0].notes[0].loc.line,
			 line_of("\n  gpus_per_node:"));
	ck_assert_ptr_nonnull(strstr(f.diags.v[0].msg, "8"));
}
END_TEST

START_TEST(single_node_reward_model_and_generation_leave_gpus)
{
	derive("grpo: {}\n" RM(1, 2) NONCOLOC(6, 1) CLUSTER(1, 8));
	ck_assert_int_eq(f.rc, -1);
	ck_assert_str_eq(f.diags.v[0].rule->code, "GT309");
	ck_assert_ptr_nonnull(strstr(f.diags.v[0].msg, "reward model"));
}
END_TEST

START_TEST(multi_node_needs_generation_nodes)
{
	derive("grpo: {}\n" NONCOLOC(8, null) CLUSTER(2, 8));
	expect_only("GT310", "policy.generation.colocated.resources.num_nodes",
		    GEN_NODES);
}
END_TEST

START_TEST(multi_node_generation_uses_whole_nodes)
{
	derive("grpo: {}\n" NONCOLOC(4, 1) CLUSTER(2, 8));
	expect_only("GT310", "policy.generation.colocated.resources.gpus_per_node",
		    GEN_GPUS);
}
END_TEST

START_TEST(multi_node_generation_leaves_nodes)
{
	derive("grpo: {}\n" NONCOLOC(8, 2) CLUSTER(2, 8));
	expect_only("GT309", "policy.generation.colocated.resources.num_nodes",
		    GEN_NODES);
}
END_TEST

START_TEST(reward_model_leaves_policy_nodes)
{
	derive("grpo: {}\n" RM(2, 8) COLOC CLUSTER(2, 8));
	expect_only("GT309", "env.reward_model.resources.num_nodes", RM_NODES);
}
END_TEST

START_TEST(reward_model_leaves_policy_gpus)
{
	derive("grpo: {}\n" RM(1, 2) COLOC CLUSTER(1, 2));
	expect_only("GT309", "env.reward_model.resources.gpus_per_node",
		    RM_GPUS);
}
END_TEST

START_TEST(reward_model_needs_resources)
{
	derive("grpo: {}\ndata:\n  train:\n    env_name: reward_model\n"
	       "env:\n  reward_model:\n    model_name: rm\n" COLOC CLUSTER(1, 8));
	expect_only("GT310", "env.reward_model.resources", "\n  reward_model:");
	ck_assert_int_eq(f.diags.v[0].notes[0].loc.line,
			 line_of("\n    env_name:"));
}
END_TEST

START_TEST(schema_typed_strings_are_left_to_the_schema)
{
	ck_assert_int_eq(derive("grpo: {}\n" NONCOLOC("2", 1) CLUSTER(1, 8)), -1);
	ck_assert_uint_eq(f.diags.n, 0);
}
END_TEST

START_TEST(reward_model_values_must_be_integers)
{
	derive("grpo: {}\n" RM(1, "1") COLOC CLUSTER(1, 8));
	expect_only("GT310", "env.reward_model.resources.gpus_per_node", RM_GPUS);
}
END_TEST

START_TEST(non_colocated_ppo_needs_vllm)
{
	derive("ppo: {}\npolicy:\n  generation:\n    backend: sglang\n"
	       "    colocated:\n      enabled: false\n" CLUSTER(2, 8));
	expect_only("GT310", "policy.generation.backend", "\n    backend:");
}
END_TEST

START_TEST(single_controller_needs_generation_gpus)
{
	derive("grpo: {}\nasync_rl: {}\n" NONCOLOC(null, 2) CLUSTER(4, 8));
	expect_only("GT310", "policy.generation.colocated.resources.gpus_per_node",
		    GEN_GPUS);
}
END_TEST

START_TEST(single_controller_generation_leaves_nodes)
{
	derive("grpo: {}\nasync_rl: {}\n" NONCOLOC(8, 4) CLUSTER(4, 8));
	expect_only("GT309", "policy.generation.colocated.resources.num_nodes",
		    GEN_NODES);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "whole_cluster", sft_trains_on_the_whole_cluster },
		{ "whole_cluster", dpo_ignores_a_generation_section },
		{ "whole_cluster", off_policy_distillation_shares_the_cluster },
		{ "whole_cluster", missing_cluster_keys_report_nothing },
		{ "whole_cluster", bad_cluster_values_report_nothing },
		{ "grpo_split", colocated_trains_on_every_gpu },
		{ "grpo_split", single_node_gives_generation_gpus },
		{ "grpo_split", multi_node_gives_generation_nodes },
		{ "grpo_split", ppo_uses_grpo_rules },
		{ "grpo_split", generation_without_algorithm_is_grpo },
		{ "reward_model", reward_model_shares_a_single_node },
		{ "reward_model", reward_model_and_generation_on_one_node },
		{ "reward_model", reward_model_takes_nodes },
		{ "reward_model", reward_model_node_leaves_one_policy_node },
		{ "reward_model", reward_model_found_in_a_dataset_list },
		{ "reward_model", unused_reward_model_takes_nothing },
		{ "teachers", teachers_take_whole_nodes_per_checkpoint },
		{ "teachers", teachers_without_deduplication },
		{ "teachers", teacher_overrides_and_defaults },
		{ "teachers", disabled_teachers_take_nothing },
		{ "teachers", ppo_has_no_teachers },
		{ "teachers", teacher_gpus_must_fit_a_node },
		{ "teachers", teachers_leave_no_policy_nodes },
		{ "teachers", later_aliases_of_a_checkpoint_are_ignored },
		{ "teachers", teacher_values_must_be_integers },
		{ "distillation_and_single_controller", distillation_single_node },
		{ "distillation_and_single_controller", distillation_multi_node },
		{ "distillation_and_single_controller", distillation_refuses_megatron_generation },
		{ "distillation_and_single_controller", single_controller_reads_null_nodes_as_one },
		{ "distillation_and_single_controller", single_controller_lets_generation_use_part_nodes },
		{ "distillation_and_single_controller", single_controller_ignores_the_reward_model },
		{ "checks", single_node_needs_generation_gpus },
		{ "checks", schema_typed_values_are_left_to_the_schema },
		{ "checks", single_node_generation_uses_that_node },
		{ "checks", single_node_generation_leaves_gpus },
		{ "checks", single_node_reward_model_and_generation_leave_gpus },
		{ "checks", multi_node_needs_generation_nodes },
		{ "checks", multi_node_generation_uses_whole_nodes },
		{ "checks", multi_node_generation_leaves_nodes },
		{ "checks", reward_model_leaves_policy_nodes },
		{ "checks", reward_model_leaves_policy_gpus },
		{ "checks", reward_model_needs_resources },
		{ "checks", schema_typed_strings_are_left_to_the_schema },
		{ "checks", reward_model_values_must_be_integers },
		{ "checks", non_colocated_ppo_needs_vllm },
		{ "checks", single_controller_needs_generation_gpus },
		{ "checks", single_controller_generation_leaves_nodes },
	};

	return RUN_CASES_FIXTURE("resources", cases, 0, setup, teardown);
}
