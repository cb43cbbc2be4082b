/*
 * framework: what Megatron, NeMo-RL and vLLM check when a run starts,
 * checked before it starts (docs/design.md §2.8; rules GT600-GT679 in
 * rules.def).
 *
 * framework_check() runs after plan_build() has derived the sizes. It
 * resolves the model shape (model.h: the catalog in data/models.yaml,
 * then gtplan.model) and runs four groups of rules, one file each:
 *   rules_model.c   model shape against the training layout (layers vs PP,
 *                   heads and query groups vs TP, experts vs EP, the padded
 *                   vocabulary), and the Megatron generation backend's
 *                   dedicated inference layout with the same rules
 *   rules_engine.c  the generation engine: vLLM's tensor parallel size
 *                   against heads, KV heads and its padded vocabulary,
 *                   NeMo-RL's vLLM world and multi-node checks
 *   rules_batch.c   couplings (sequence parallel, virtual pipeline, context
 *                   parallel and sequence lengths) and batch arithmetic per
 *                   call (log-prob micro-batches, DPO pairs, micro-batches
 *                   per pipeline step)
 *   rules_state.c   checkpoint keys across expert-parallel peers, the loss
 *                   domain under context parallel, refit of weights held by
 *                   several pipeline stages, expert-parallel groups that
 *                   cross nodes
 * GT680 (collectives some pipeline stages never issue) is the simulator's:
 * sim/stages.c compares the per-stage programs.
 * Every finding names the numbers involved, the framework that enforces
 * the rule, a hint with the nearest valid values, and points at the value
 * that causes it.
 *
 * Ownership: a struct fw borrows the plan, the config and the list; it
 * owns nothing.
 */
#ifndef GTPLAN_FRAMEWORK_H
#define GTPLAN_FRAMEWORK_H

#include "cfg.h"
#include "cfg_keys.h"  /* KEY_MEG, KEY_GEN: the rules' paths */
#include "diag.h"
#include "plan.h"
#include "model.h"

/* Runs every framework rule on a built plan, on the model plan_build
 * resolved (p->model; plan_build reports the model's own findings, GT524
 * for an unknown model and gtplan.model values, just before). Never fails: a rule whose inputs are missing or
 * malformed (the schema's findings) is skipped. */
void framework_check(const struct plan *p, const struct cfg_node *root,
		     struct diag_list *diags);

/* ---- shared by the rules_*.c files ------------------------------------ */


struct fw {
	const struct plan *p;
	const struct cfg_node *root;
	struct diag_list *diags;
	struct model_shape m;   /* m.shape_known: the shape checks can run */
	int megatron;           /* the Megatron backend trains */
	int sequence_parallel;  /* policy.megatron_cfg.sequence_parallel */
	long long vpp;          /* virtual pipeline stages; 0 when off */
	const char *algorithm;  /* "grpo", "dpo", ... from the top sections */
};

/* The value at `path`'s location, or DIAG_NOLOC. */
struct diag_loc fw_loc(const struct fw *f, const char *path);
/* An integer at `path` (1 and *out set), absent or null (0), or another
 * type (-1), as cfg_int. */
int fw_int(const struct fw *f, const char *path, long long *out);
/* A boolean at `path`, `dflt` when absent or of another type. */
int fw_bool(const struct fw *f, const char *path, int dflt);
/* The algorithm generates rollouts (GRPO, PPO, distillation): it refits
 * the generation engine and computes log-probs of the rollout batch. */
int fw_generates(const struct fw *f);

/* A note at the model (gtplan.model or policy.model_name): "NAME " fmt
 * with `a`, then where field `key` comes from ("(config.json PATH:
 * num_attention_heads)"). */
void fw_model_note(const struct fw *f, struct diag *d, const char *key,
		   const char *fmt, long long a);

/* Writes the divisors v of n in [1, max] with keep(v, ctx) true, as
 * "1, 2, 4 or 8" (at most `limit` of them, nearest to `near` first, the
 * lower of two equally near, then sorted), into buf. Every valid size a
 * hint lists divides some count of the model or the cluster, so this
 * enumerates n's divisors (trial division, O(min(sqrt(n), max))) instead
 * of scanning [1, max]. Returns how many it wrote. */
size_t fw_list(char *buf, size_t len, long long near, long long n,
	       long long max, size_t limit,
	       int (*keep)(long long v, const void *ctx), const void *ctx);
/* keep() for fw_list: v divides *(const long long *)ctx. */
int fw_divides(long long v, const void *ctx);

/* Megatron-Bridge's calculate_padded_vocab_size: vocab rounded up to a
 * multiple of divisor x tp. */
long long fw_padded_vocab(long long vocab, long long divisor, long long tp);

/* The model shape rules on one layout (the training layout, or the
 * Megatron generation engine's dedicated one): `who` names it in
 * messages ("Megatron", "the Megatron generation engine's inference
 * layout"); the *_path arguments locate each size (NULL: not set there,
 * the finding points at the model instead). */
struct fw_layout {
	const char *who;
	long long tp, pp, ep, vpp;
	const char *tp_path, *pp_path, *ep_path;
	long long first_stage, last_stage;  /* 0 when unset */
	const char *first_path, *last_path;
};
void fw_shape_rules(struct fw *f, const struct fw_layout *l);

void fw_model_rules(struct fw *f);
void fw_engine_rules(struct fw *f);
void fw_coupling_rules(struct fw *f);
void fw_batch_rules(struct fw *f);
void fw_state_rules(struct fw *f);
/* The config's algorithm from its top-level sections: "grpo", "ppo",
 * "distillation", "off_policy_distillation", "sft", "dpo", "rm", or "". */
const char *fw_algorithm(const struct cfg_node *root);
/* GT529 for each class of checks that a size resolved only at launch
 * (an unresolved ${...}) skips (rules_launch.c); `algorithm` is the
 * config's algorithm section ("" when none). */
void fw_launch_notes(const struct cfg_node *root, int megatron,
		     const char *algorithm, struct diag_list *diags);

#endif
