/*
 * Tests for the notes on sizes resolved only at launch
 * (planner/rules_launch.c): a parallel or cluster size, the training
 * batch, the per-algorithm batches, the sequence length and the vLLM
 * sizes given by an unset ${oc.env:...} each get one GT529 naming the
 * checks skipped, at the first such key with the others noted; a value
 * that resolves here, a key of another backend or of another algorithm
 * gets none. Configs are resolved as `gtplan lint` resolves them, with
 * environment variables that no one sets (GTPLAN_TEST_LAUNCH_*).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"
#include "harness.h"
#include "sim_fixture.h"

/* sim_fx_run with the interpolations resolved (cfg_resolve) first, as
 * `gtplan lint` runs it. */
static void lint(struct sim_fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	plan_init(&f->plan);
	sim_report_init(&f->sim);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	ck_assert_int_eq(cfg_resolve(f->root, &f->srcs, &f->diags), 0);
	/* without the cluster's size there is no plan to simulate (-1) */
	if (plan_build(&f->plan, f->root, "t.yaml", &f->diags) == 0)
		ck_assert_int_ge(sim_run(&f->plan, f->root, NULL, &f->sim,
					 &f->diags), 0);
}

/* The GT529 whose path is `path`, or NULL. */
static const struct diag *note_at(const struct sim_fx *f, const char *path)
{
	for (size_t i = 0; i < f->diags.n; i++) {
		const struct diag *d = &f->diags.v[i];

		if (!strcmp(diag_code(d), "GT529") && d->path &&
		    !strcmp(d->path, path))
			return d;
	}
	return NULL;
}

#define ENV(x) "${oc.env:GTPLAN_TEST_LAUNCH_" x "}"

/* A Llama-3.2-1B GRPO config on 1 node of 8, its values replaceable. */
static const char *cfg(const char *tp, const char *nodes, const char *gbs,
		       const char *mbs, const char *extra)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf),
		 "grpo:\n  num_prompts_per_step: 16\n"
		 "  num_generations_per_prompt: 8\n"
		 "policy:\n"
		 "  model_name: meta-llama/Llama-3.2-1B-Instruct\n"
		 "  train_global_batch_size: %s\n"
		 "  train_micro_batch_size: %s\n"
		 "%s"
		 "  megatron_cfg:\n    enabled: true\n"
		 "    tensor_model_parallel_size: %s\n"
		 "cluster:\n  num_nodes: %s\n  gpus_per_node: 8\n",
		 gbs, mbs, extra, tp, nodes);
	return buf;
}

START_TEST(layout_sizes)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, cfg(ENV("TP"), ENV("NODES"), "64", "1", ""));
	ck_assert_uint_eq(sim_fx_count(&f, "GT529"), 1);
	d = note_at(&f, KEY_TP);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "is '" ENV("TP") "', an "
				     "interpolation resolved only at launch, "
				     "so the training layout cannot be "
				     "planned"));
	ck_assert_ptr_nonnull(strstr(d->msg, "simulated driver calls"));
	/* the other key of the class is named, where it is written */
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg, "cluster.num_nodes"));
	ck_assert_int_eq(d->notes[0].loc.line, 12);
	ck_assert_ptr_nonnull(strstr(d->hint, KEY_TP "=N"));
	/* the GT113 notes of the loader stay; nothing else is found */
	ck_assert_uint_eq(sim_fx_count(&f, "GT113"), 2);
	ck_assert_uint_eq(f.diags.n, 3);
	ck_assert(!f.plan.grid_ok);
	sim_fx_release(&f);

	/* the cluster alone: the same class, at num_nodes */
	lint(&f, cfg("1", ENV("NODES"), "64", "1", ""));
	ck_assert_ptr_nonnull(note_at(&f, "cluster.num_nodes"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT529"), 1);
	sim_fx_release(&f);
}
END_TEST

START_TEST(batch_and_sequence)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, cfg("2", "1", ENV("GBS"), ENV("MBS"),
		     "  logprob_batch_size: " ENV("LP") "\n"
		     "  max_total_sequence_length: " ENV("SEQ") "\n"
		     "  make_sequence_length_divisible_by: " ENV("PAD") "\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT529"), 5);
	d = note_at(&f, "policy.train_global_batch_size");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "the training batch checks"));
	d = note_at(&f, "policy.train_micro_batch_size");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "one sample per micro-batch"));
	d = note_at(&f, "policy.logprob_batch_size");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "log-prob and validation batch"));
	d = note_at(&f, "policy.max_total_sequence_length");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "4096-token sequences"));
	d = note_at(&f, "policy.make_sequence_length_divisible_by");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "sequence alignment checks"));
	/* the layout is planned: these sizes do not stop it */
	ck_assert(f.plan.grid_ok);
	sim_fx_release(&f);

}
END_TEST

/* Keys of the algorithm's section count under that algorithm only. */
START_TEST(algorithm_keys)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, "sft:\n  val_global_batch_size: " ENV("VGBS") "\n"
	     "  val_micro_batch_size: " ENV("VMBS") "\n"
	     "grpo_unused:\n  num_prompts_per_step: " ENV("NP") "\n"
	     "policy:\n  model_name: meta-llama/Llama-3.2-1B-Instruct\n"
	     "  train_global_batch_size: 64\n  train_micro_batch_size: 1\n"
	     "  megatron_cfg:\n    enabled: true\n"
	     "cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n");
	ck_assert_uint_eq(sim_fx_count(&f, "GT529"), 1);
	d = note_at(&f, "sft.val_global_batch_size");
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg,
				     "sft.val_micro_batch_size"));
	sim_fx_release(&f);
}
END_TEST

/* The backend decides which parallel sizes count; vLLM's own. */
START_TEST(backends_and_vllm)
{
	struct sim_fx f;

	/* DTensor: its sizes make the layout, Megatron's are unread */
	lint(&f, "policy:\n  model_name: meta-llama/Llama-3.2-1B-Instruct\n"
	     "  train_global_batch_size: 64\n  train_micro_batch_size: 1\n"
	     "  dtensor_cfg:\n    enabled: true\n"
	     "    tensor_parallel_size: " ENV("DTP") "\n"
	     "  megatron_cfg:\n    enabled: false\n"
	     "    tensor_model_parallel_size: " ENV("TP") "\n"
	     "  generation:\n    backend: vllm\n    vllm_cfg:\n"
	     "      tensor_parallel_size: " ENV("VTP") "\n"
	     "cluster:\n  num_nodes: 1\n  gpus_per_node: 8\n");
	ck_assert_uint_eq(sim_fx_count(&f, "GT529"), 2);
	ck_assert_ptr_nonnull(note_at(&f, KEY_DTENSOR ".tensor_parallel_size"));
	ck_assert_ptr_null(note_at(&f, KEY_TP));
	ck_assert_ptr_nonnull(strstr(note_at(&f, "policy.generation.vllm_cfg."
					     "tensor_parallel_size")->msg,
				     "the generation (vLLM) checks"));
	sim_fx_release(&f);
}
END_TEST

/* What resolves here (NeMo-RL's resolvers, a reference) is a value like
 * any other: no note. */
START_TEST(resolved_values_are_silent)
{
	struct sim_fx f;

	lint(&f, cfg("${mul:1,2}", "1", "${mul:32,2}",
		     "${policy.logprob_batch_size}",
		     "  logprob_batch_size: 1\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT529"), 0);
	ck_assert(f.plan.grid_ok);
	ck_assert_int_eq(f.plan.tp, 2);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "layout_sizes", layout_sizes },
		{ "batch_and_sequence", batch_and_sequence },
		{ "algorithm_keys", algorithm_keys },
		{ "backends_and_vllm", backends_and_vllm },
		{ "resolved_values_are_silent", resolved_values_are_silent },
	};

	return RUN_CASES("launch_notes", cases, 0);
}
