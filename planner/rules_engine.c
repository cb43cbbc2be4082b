/*
 * rules_engine: the generation engine's layout (GT610-GT616).
 *
 * Sources:
 *  - vLLM config.py ModelConfig.verify_with_parallel_config: "Total number
 *    of attention heads (H) must be divisible by tensor parallel size (T)".
 *  - vLLM model_executor/layers/linear.py QKVParallelLinear: KV heads are
 *    split when TP divides them and replicated when they divide TP
 *    (divide() asserts either way).
 *  - vLLM model_executor/layers/vocab_parallel_embedding.py: the
 *    vocabulary is padded to a multiple of 64 (DEFAULT_VOCAB_PADDING_SIZE)
 *    and then divided over TP (divide() asserts).
 *  - NeMo-RL models/generation/vllm/vllm_generation.py VllmGeneration:
 *    "World size must be a multiple of model parallel size" (TP x PP); TP x
 *    PP above the GPUs of a node takes the cross-node path (one unified
 *    placement group, NCCL_NVLS_ENABLE=0); pipeline_parallel_size > 1
 *    needs async_engine; expert_parallel_size > 1 must be a multiple of TP
 *    (vLLM's EP = DP x TP).
 * The generation engine serves only the algorithms that generate (GRPO,
 * PPO, distillation); a config without an algorithm section is checked
 * when it sets policy.generation. The Megatron backend's layout is
 * rules_model.c's.
 */
#include "framework.h"

#include <stdio.h>
#include <string.h>

#define VLLM KEY_GEN "vllm_cfg."

/* vLLM pads the vocabulary to a multiple of this before splitting it. */
#define VLLM_VOCAB_PADDING 64

struct vllm {
	long long heads, kv, padded_vocab;
	int mla;
};

static int vllm_tp_fits(long long tp, const void *ctx)
{
	const struct vllm *v = ctx;

	return v->heads % tp == 0 && v->padded_vocab % tp == 0 &&
	       (v->mla || v->kv % tp == 0 || tp % v->kv == 0);
}

/* The algorithm generates, or the config has no algorithm section (a
 * fragment, a recipe's policy file): policy.generation, when it is set,
 * is checked then too. */
static int generates(const struct fw *f)
{
	return fw_generates(f) || !f->algorithm[0];
}

/* vLLM's TP against the model (GT610-GT612): every rule it breaks, each
 * with the sizes that satisfy all three. */
static void vllm_shape(struct fw *f, long long tp)
{
	const char *at = VLLM "tensor_parallel_size";
	struct vllm v = {
		f->m.num_attention_heads, f->m.num_query_groups,
		(f->m.vocab_size + VLLM_VOCAB_PADDING - 1) /
		VLLM_VOCAB_PADDING * VLLM_VOCAB_PADDING,
		f->m.multi_latent_attention,
	};
	char valid[128], pad[96];
	struct diag *d;

	/* each rule whose fields the shape gives */
	if (v.heads < 1 || tp < 1)
		return;
	if (v.kv < 1)
		v.kv = v.heads;
	if (f->m.vocab_size < 1)
		v.padded_vocab = tp;  /* no vocabulary rule */
	if (vllm_tp_fits(tp, &v))
		return;
	fw_list(valid, sizeof(valid), tp, v.heads, v.heads, 8, vllm_tp_fits,
		&v);
	if (v.heads % tp) {
		d = diag_add(f->diags, "GT610", fw_loc(f, at), at,
			     "vLLM tensor parallel size %lld must divide the "
			     "%lld attention heads (vLLM: total number of "
			     "attention heads must be divisible by tensor "
			     "parallel size)", tp, v.heads);
		fw_model_note(f, d, "num_attention_heads",
			      "has %lld attention heads", v.heads);
		diag_hint(d, "use policy.generation.vllm_cfg."
			  "tensor_parallel_size %s", valid);
	}
	if (!v.mla && v.kv % tp && tp % v.kv) {
		d = diag_add(f->diags, "GT611", fw_loc(f, at), at,
			     "vLLM tensor parallel size %lld and the %lld KV "
			     "heads neither divide each other (vLLM's "
			     "QKVParallelLinear splits KV heads over TP or "
			     "replicates them TP / KV times)", tp, v.kv);
		fw_model_note(f, d, "num_query_groups", "has %lld KV heads",
			      v.kv);
		diag_hint(d, "use policy.generation.vllm_cfg."
			  "tensor_parallel_size %s", valid);
	}
	if (f->m.vocab_size < 1 || v.padded_vocab % tp == 0)
		return;
	if (v.padded_vocab != f->m.vocab_size)
		snprintf(pad, sizeof(pad), "%lld padded to a multiple of %d",
			 f->m.vocab_size, VLLM_VOCAB_PADDING);
	else
		snprintf(pad, sizeof(pad), "already a multiple of %d",
			 VLLM_VOCAB_PADDING);
	d = diag_add(f->diags, "GT612", fw_loc(f, at), at,
		     "vLLM tensor parallel size %lld must divide its "
		     "vocabulary of %lld rows (%s): %lld / %lld = %.2f rows per "
		     "rank (VocabParallelEmbedding)", tp, v.padded_vocab, pad,
		     v.padded_vocab, tp, (double)v.padded_vocab / (double)tp);
	fw_model_note(f, d, "vocab_size", "has a vocabulary of %lld",
		      f->m.vocab_size);
	diag_hint(d, "use policy.generation.vllm_cfg.tensor_parallel_size %s",
		  valid);
}

/* One model-parallel size m = TP x PP a world of w GPUs holds. */
static int mp_fits(long long mp, const void *ctx)
{
	return fw_divides(mp, ctx);
}

/* The GPUs vLLM instances are placed on (GT613, GT614). */
static void vllm_world(struct fw *f, long long tp, long long pp)
{
	const struct plan *p = f->p;
	const char *at = VLLM "tensor_parallel_size";
	long long mp = tp * pp, nodes, gpn, world;
	char valid[128];
	struct diag *d;

	if (p->colocated) {
		nodes = p->train.nodes;
		gpn = p->train.gpus_per_node;
	} else {
		nodes = p->inference.nodes;
		gpn = p->inference.gpus_per_node;
	}
	world = nodes * gpn;
	if (world < 1 || gpn < 1)
		return;
	if (world % mp) {
		fw_list(valid, sizeof(valid), mp, world, world, 6, mp_fits,
			&world);
		d = diag_add(f->diags, "GT613", fw_loc(f, at), at,
			     "one vLLM instance takes TP %lld x PP %lld = %lld "
			     "GPUs, which does not divide the %lld GPUs %s "
			     "(%lld node%s x %lld; NeMo-RL: world size must be "
			     "a multiple of model parallel size)", tp, pp, mp,
			     world, p->colocated ? "generation shares with "
			     "training" : "non-colocated generation has",
			     nodes, nodes == 1 ? "" : "s", gpn);
		if (!p->colocated && nodes == 1 && mp > gpn)
			diag_hint(d, "an instance larger than a node needs the "
				  "multi-node path: give generation "
				  "colocated.resources.num_nodes: %lld or "
				  "more, or use TP x PP %s", (mp + gpn - 1) / gpn,
				  valid);
		else
			diag_hint(d, "use vLLM TP x PP %s (divisors of %lld), "
				  "or give generation a multiple of %lld GPUs",
				  valid, world, mp);
		return;
	}
	if (mp <= gpn)
		return;
	d = diag_add(f->diags, "GT614", fw_loc(f, at), at,
		     "one vLLM instance (TP %lld x PP %lld = %lld GPUs) spans "
		     "%lld nodes of %lld GPUs: NeMo-RL takes its cross-node "
		     "path (one placement group over the nodes, "
		     "NCCL_NVLS_ENABLE=0) and the engine's TP collectives "
		     "cross the network", tp, pp, mp, (mp + gpn - 1) / gpn,
		     gpn);
	diag_hint(d, "keep TP x PP within %lld GPUs if the model fits "
		  "(vLLM's pipeline_parallel_size crosses nodes more cheaply "
		  "than its tensor_parallel_size)", gpn);
}

void fw_engine_rules(struct fw *f)
{
	const char *backend = "vllm";
	long long tp = 1, pp = 1, ep = 1;
	struct diag *d;

	if (!generates(f) || !cfg_path(f->root, "policy.generation") ||
	    cfg_path(f->root, "policy.generation")->kind != CFG_MAP)
		return;
	if (cfg_str(f->root, KEY_GEN "backend", &backend) < 0 ||
	    strcmp(backend, "vllm"))
		return;
	if (fw_int(f, VLLM "tensor_parallel_size", &tp) < 0 || tp < 1 ||
	    fw_int(f, VLLM "pipeline_parallel_size", &pp) < 0 || pp < 1 ||
	    fw_int(f, VLLM "expert_parallel_size", &ep) < 0 || ep < 1)
		return;  /* the schema's findings */
	vllm_shape(f, tp);
	vllm_world(f, tp, pp);
	if (pp > 1 && !fw_bool(f, VLLM "async_engine", 0)) {
		const char *at = VLLM "pipeline_parallel_size";

		d = diag_add(f->diags, "GT615", fw_loc(f, at), at,
			     "vLLM pipeline_parallel_size %lld needs the async "
			     "engine (NeMo-RL: when pipeline_parallel_size > "
			     "1, async_engine must be set to True)", pp);
		diag_hint(d, "set policy.generation.vllm_cfg.async_engine: "
			  "true, or pipeline_parallel_size: 1");
		if (cfg_path(f->root, VLLM "async_engine"))
			diag_note(d, fw_loc(f, VLLM "async_engine"),
				  "the async engine is off here");
	}
	if (ep > 1 && ep % tp) {
		const char *at = VLLM "expert_parallel_size";
		long long lo = ep / tp * tp;

		d = diag_add(f->diags, "GT616", fw_loc(f, at), at,
			     "vLLM expert_parallel_size %lld is not a multiple "
			     "of its tensor_parallel_size %lld (NeMo-RL: vLLM's "
			     "EP = DP x TP)", ep, tp);
		if (lo > 0)
			diag_hint(d, "use expert_parallel_size %lld or %lld",
				  lo, lo + tp);
		else
			diag_hint(d, "use expert_parallel_size %lld (= TP), "
				  "or 1", tp);
		diag_note(d, fw_loc(f, VLLM "tensor_parallel_size"),
			  "vLLM's TP is %lld here", tp);
	}
}
