/*
 * rules_launch: GT529 notes for sizes whose value is a `${...}` that only
 * the launch resolves (an unset ${oc.env:VAR}, GT113, or a value that
 * refers to one). OmegaConf resolves an interpolation when the value is
 * read (omegaconf/base.py, Container._resolve_with_default), so on the
 * machine that launches the run it becomes a number; here it is text,
 * the checks that need it cannot run, and each class of them says so
 * once, at the first such key, naming the others (no silent skips).
 *
 * The classes and what their keys' absence skips, as the planner reads
 * them: the parallel and cluster sizes make the rank grid (plan.c
 * read_sizes, resources.c), without which nothing about the layout is
 * checked or simulated; the training batch (plan.c read_batches; memory
 * then counts one sample per micro-batch, sim/cost_mem.c); the
 * per-algorithm batches (rules_batch.c); the sequence length and its
 * padding (rules_batch.c; memory then assumes 4096 tokens,
 * sim/program.c); the vLLM sizes (rules_engine.c).
 */
#include <stdio.h>
#include <string.h>

#include "cfg_keys.h"
#include "framework.h"

/* Keys written "ALG.x" are under the algorithm's section (grpo, sft...). */
#define LAUNCH_MAX_KEYS 12

struct launch_class {
	int backend;  /* 0: any; 1: Megatron only; 2: DTensor only */
	const char *what;
	const char *keys[LAUNCH_MAX_KEYS];
};

#define RES KEY_GEN "colocated.resources."
#define VLLM KEY_GEN "vllm_cfg."

static const struct launch_class classes[] = {
	{ 1, "the training layout cannot be planned: the rank grid, the "
	  "world, batch, model-shape, checkpoint and memory checks on it and "
	  "the simulated driver calls are skipped",
	  { KEY_TP, KEY_MEG "context_parallel_size", KEY_PP, KEY_EP, KEY_ETP,
	    KEY_SHARDS, KEY_EXPERT_SHARDS, KEY_CLUSTER "num_nodes",
	    KEY_GPUS_PER_NODE, RES "num_nodes", RES "gpus_per_node" } },
	{ 2, "the training layout cannot be planned: the rank grid, the "
	  "world, batch, model-shape and memory checks on it and the "
	  "simulated driver calls are skipped",
	  { KEY_DTENSOR ".tensor_parallel_size",
	    KEY_DTENSOR ".context_parallel_size", KEY_CLUSTER "num_nodes",
	    KEY_GPUS_PER_NODE, RES "num_nodes", RES "gpus_per_node" } },
	{ 0, "the training batch checks (the global batch over data lanes x "
	  "micro-batch) are skipped",
	  { KEY_POLICY "train_global_batch_size" } },
	{ 0, "the training batch checks are skipped and memory is estimated "
	  "for one sample per micro-batch (a lower bound)",
	  { KEY_POLICY "train_micro_batch_size" } },
	{ 0, "the log-prob and validation batch checks (each batch over data "
	  "lanes x micro-batch) are skipped",
	  { KEY_POLICY "logprob_batch_size", "ALG.num_prompts_per_step",
	    "ALG.num_generations_per_prompt", "ALG.val_global_batch_size",
	    "ALG.val_micro_batch_size" } },
	{ 0, "the sequence alignment checks (padding to the CP and TP factor, "
	  "packing bins) are skipped and memory is estimated for 4096-token "
	  "sequences, gtplan's default, not the launch's",
	  { KEY_POLICY "max_total_sequence_length" } },
	{ 0, "the sequence alignment checks (padding to the CP and TP factor, "
	  "packing bins) are skipped",
	  { KEY_POLICY "make_sequence_length_divisible_by",
	    KEY_POLICY "sequence_packing.train_mb_tokens",
	    KEY_POLICY "sequence_packing.logprob_mb_tokens",
	    KEY_POLICY "dynamic_batching.sequence_length_round" } },
	{ 0, "the generation (vLLM) checks on its parallel sizes are skipped",
	  { VLLM "tensor_parallel_size", VLLM "pipeline_parallel_size",
	    VLLM "expert_parallel_size" } },
};

/* The node at key (ALG. replaced by the algorithm's section) when it holds
 * an interpolation left unresolved; else NULL. */
static const struct cfg_node *launch_value(const struct cfg_node *root,
					   const char *alg, const char *key,
					   char *path, size_t len)
{
	const struct cfg_node *n;

	if (!strncmp(key, "ALG.", 4)) {
		if (!alg || !*alg)
			return NULL;
		snprintf(path, len, "%s.%s", alg, key + 4);
	} else {
		snprintf(path, len, "%s", key);
	}
	n = cfg_path(root, path);
	return n && n->kind == CFG_STR && n->interp && n->text ? n : NULL;
}

/* One class: a note at its first unresolved key, the others noted. */
static void class_note(const struct launch_class *c,
		       const struct cfg_node *root, const char *alg,
		       struct diag_list *diags)
{
	struct diag *d = NULL;
	char path[160], first[160] = "";

	for (size_t i = 0; i < LAUNCH_MAX_KEYS && c->keys[i]; i++) {
		const struct cfg_node *n = launch_value(root, alg, c->keys[i],
							path, sizeof(path));

		if (!n)
			continue;
		if (d) {
			diag_note(d, n->loc, "%s is '%s', also resolved only "
				  "at launch", path, n->text);
			continue;
		}
		snprintf(first, sizeof(first), "%s", path);
		d = diag_add(diags, "GT529", n->loc, first, "%s is '%s', an "
			     "interpolation resolved only at launch, so %s",
			     path, n->text, c->what);
	}
	if (d)
		diag_hint(d, "to run them, lint with the launch's value: "
			  "override the key (%s=N)", first);
}

void fw_launch_notes(const struct cfg_node *root, int megatron,
		     const char *algorithm, struct diag_list *diags)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (!classes[i].backend ||
		    classes[i].backend == (megatron ? 1 : 2))
			class_note(&classes[i], root, algorithm, diags);
}
