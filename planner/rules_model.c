/*
 * rules_model: the model's shape against a layout (GT600-GT605), and the
 * entry point that runs every framework rule (see framework.h).
 *
 * Sources (Megatron-LM / Megatron-core, Megatron-Bridge):
 *  - layers per stage: Megatron-LM training/arguments.py ("Number of layers
 *    should be divisible by the pipeline-model-parallel size"); with
 *    num_layers_in_first/last_pipeline_stage, core TransformerConfig
 *    ("Mismatch: N middle layers remaining but M middle PP stages
 *    available", "number of layers at middle stage ... must be divisible
 *    by the middle pipeline model parallel size", the per-stage virtual
 *    pipeline checks). Megatron-core built by Megatron-Bridge without that
 *    validation gives each stage num_layers // PP layers and drops the rest.
 *  - heads: core TransformerConfig ("num_attention_heads (H) must be a
 *    multiple of tensor_model_parallel_size (T)"; "num_query_groups (G)
 *    must be a multiple or divisor of tensor_model_parallel_size (T)",
 *    which older Megatron-core versions required to be a multiple).
 *  - experts: the MoE layer ("Number of experts should be a multiple of
 *    expert model parallel_size"; "num_moe_experts must be non None to use
 *    expert-parallel").
 *  - vocabulary: Megatron-Bridge utils/vocab_utils.py
 *    calculate_padded_vocab_size (NeMo-RL megatron/setup.py calls it).
 */
#include "framework.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llsort.h"
#include "model.h"

/* ---- helpers shared by the rule files ----------------------------------- */

struct diag_loc fw_loc(const struct fw *f, const char *path)
{
	return cfg_loc(f->root, path);
}

int fw_int(const struct fw *f, const char *path, long long *out)
{
	return cfg_int(f->root, path, out);
}

int fw_bool(const struct fw *f, const char *path, int dflt)
{
	int b;

	return cfg_bool(f->root, path, &b) == 1 ? b : dflt;
}

int fw_generates(const struct fw *f)
{
	return !strcmp(f->algorithm, "grpo") || !strcmp(f->algorithm, "ppo") ||
	       !strcmp(f->algorithm, "distillation");
}

int fw_divides(long long v, const void *ctx)
{
	long long n = *(const long long *)ctx;

	return v > 0 && n % v == 0;
}

/* Whether v goes before w among the candidates: nearer to `near` first,
 * the lower of two equally near. */
static int nearer(long long v, long long w, long long near)
{
	long long dv = llabs(v - near), dw = llabs(w - near);

	return dv < dw || (dv == dw && v < w);
}

/* Offers divisor v to the `limit` nearest kept so far (pick[], sorted
 * nearest first, *n of them). */
static void offer(long long *pick, size_t *n, size_t limit, long long v,
		  long long near)
{
	size_t i = *n;

	if (i == limit && !nearer(v, pick[limit - 1], near))
		return;
	if (i == limit)
		i--;
	for (; i > 0 && nearer(v, pick[i - 1], near); i--)
		pick[i] = pick[i - 1];
	pick[i] = v;
	if (*n < limit)
		(*n)++;
}

size_t fw_list(char *buf, size_t len, long long near, long long n,
	       long long max, size_t limit,
	       int (*keep)(long long v, const void *ctx), const void *ctx)
{
	long long pick[16];
	size_t k = 0, used = 0;

	if (limit > 16)
		limit = 16;
	buf[0] = '\0';
	if (near > max)
		near = max;
	if (near < 1)
		near = 1;
	/* Every divisor v of n pairs with n / v, and the smaller of the two
	 * is at most sqrt(n): trial division by d <= sqrt(n) finds them all.
	 * A divisor n / d <= max needs d >= n / max, so when max < sqrt(n)
	 * every wanted divisor is a d itself: stopping at d <= max as well
	 * bounds the work by min(sqrt(n), max), never by scanning up to n. */
	for (long long d = 1; limit && n > 0 && d <= max && d <= n / d; d++) {
		long long e = n / d;

		if (n % d)
			continue;
		if (keep(d, ctx))
			offer(pick, &k, limit, d, near);
		if (e != d && e <= max && keep(e, ctx))
			offer(pick, &k, limit, e, near);
	}
	qsort(pick, k, sizeof(pick[0]), ll_cmp);
	for (size_t i = 0; i < k && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%lld",
					 i == 0 ? "" : i + 1 == k ? " or " : ", ",
					 pick[i]);
	return k;
}

long long fw_padded_vocab(long long vocab, long long divisor, long long tp)
{
	long long m = (divisor > 0 ? divisor : 128) * (tp > 0 ? tp : 1);

	return (vocab + m - 1) / m * m;
}

/* Where a finding about the model points when no layout value is to
 * blame: gtplan.model or policy.model_name. */
void fw_model_note(const struct fw *f, struct diag *d, const char *key,
		   const char *fmt, long long a)
{
	char what[160], from[600];

	snprintf(what, sizeof(what), fmt, a);
	model_origin_text(&f->m, key, from, sizeof(from));
	diag_note(d, f->m.loc, "%s %s (%s: %s)", f->m.name, what, from, key);
}

/* Hint candidates: no size above the training GPUs. */
static long long cap(const struct fw *f, long long n)
{
	return f->p->world > 0 && f->p->world < n ? f->p->world : n;
}

/* ---- layers over pipeline stages (GT600) -------------------------------- */

struct split {
	long long layers, pp, vpp;
};

/* Layers of each middle stage when first/last stages get f and l (0:
 * unset) layers; -1 when they do not split as Megatron requires. */
static long long middle_layers(const struct split *s, long long f, long long l)
{
	long long n = s->layers, st = s->pp;

	if (f) {
		if (f < 1 || (s->vpp && f % s->vpp))
			return -1;
		n -= f;
		st--;
	}
	if (l) {
		if (l < 1 || (s->vpp && l % s->vpp))
			return -1;
		n -= l;
		st--;
	}
	if (n < 0 || (n > 0) != (st > 0) || (st > 0 && n % st))
		return -1;
	if (st > 0 && s->vpp && (n / st) % s->vpp)
		return -1;
	return st > 0 ? n / st : 0;
}

static int pp_fits(long long pp, const void *ctx)
{
	const struct split *s = ctx;
	struct split t = { s->layers, pp, s->vpp };

	return middle_layers(&t, 0, 0) >= 0;
}

#define SPLIT_WINDOW 512

/* An uneven split for s->pp stages: first and last as near as possible to
 * layers / pp. Returns 0 when there is none. */
static int suggest_split(const struct split *s, long long *first,
			 long long *last)
{
	long long best = -1, avg = s->layers / (s->pp > 0 ? s->pp : 1);

	/* within SPLIT_WINDOW layers of the average: every split of a real
	 * model (hundreds of layers), and bounded work for num_layers 2^20 */
	long long lo = avg - SPLIT_WINDOW > 1 ? avg - SPLIT_WINDOW : 1;
	long long hi = avg + SPLIT_WINDOW;

	if (s->pp < 2)
		return 0;
	for (long long f = lo; f < s->layers && f <= hi; f++)
		for (long long l = lo; f + l <= s->layers && l <= hi; l++) {
			long long cost = llabs(f - avg) + llabs(l - avg);

			if (middle_layers(s, f, l) < 0 ||
			    (best >= 0 && cost >= best))
				continue;
			best = cost;
			*first = f;
			*last = l;
		}
	return best >= 0;
}

static void layers_rule(struct fw *f, const struct fw_layout *l)
{
	struct split s = { f->m.num_layers, l->pp, l->vpp };
	const char *at = l->first_stage ? l->first_path :
			 l->last_stage ? l->last_path : l->pp_path;
	char valid[128];
	long long first = 0, last = 0;
	struct diag *d;

	if (l->pp < 1 || middle_layers(&s, l->first_stage, l->last_stage) >= 0)
		return;
	if (l->first_stage || l->last_stage) {
		long long n = s.layers - l->first_stage - l->last_stage;
		long long st = l->pp - (l->first_stage > 0) -
			       (l->last_stage > 0);

		d = diag_add(f->diags, "GT600", fw_loc(f, at), at,
			     "%s: Megatron cannot split %lld layers over PP "
			     "%lld with %lld on the first and %lld on the "
			     "last stage: "
			     "%lld layers remain for %lld middle stage%s%s",
			     l->who, s.layers, l->pp, l->first_stage,
			     l->last_stage, n, st, st == 1 ? "" : "s",
			     l->vpp ? " (each stage's layers must also divide "
				      "by the virtual pipeline size)" : "");
	} else {
		d = diag_add(f->diags, "GT600", fw_loc(f, at), at,
			     "%s: %lld layers do not split over PP %lld "
			     "pipeline stages%s (Megatron-LM refuses it; "
			     "Megatron-core as Megatron-Bridge builds it for "
			     "NeMo-RL gives each stage %lld layers and drops "
			     "%lld)", l->who, s.layers, l->pp,
			     l->vpp ? " of whole virtual stages" : "",
			     s.layers / l->pp, s.layers % l->pp);
	}
	fw_list(valid, sizeof(valid), l->pp, s.layers, cap(f, s.layers), 8,
		pp_fits, &s);
	if (suggest_split(&s, &first, &last))
		diag_hint(d, "use PP %s, or keep PP %lld with "
			  "num_layers_in_first_pipeline_stage: %lld and "
			  "num_layers_in_last_pipeline_stage: %lld", valid,
			  l->pp, first, last);
	else
		diag_hint(d, "use PP %s", valid);
	fw_model_note(f, d, "num_layers", "has %lld layers", s.layers);
}

/* ---- heads and query groups over TP (GT601, GT602) ---------------------- */

struct heads {
	long long heads, groups;
	int mla;
};

static int tp_fits(long long tp, const void *ctx)
{
	const struct heads *h = ctx;

	return h->heads % tp == 0 &&
	       (h->mla || h->groups % tp == 0 || tp % h->groups == 0);
}

static void heads_rule(struct fw *f, const struct fw_layout *l)
{
	struct heads h = { f->m.num_attention_heads, f->m.num_query_groups,
			   f->m.multi_latent_attention };
	char valid[128];
	struct diag *d;

	if (h.groups < 1)
		h.groups = h.heads;
	if (l->tp < 1 || tp_fits(l->tp, &h))
		return;
	fw_list(valid, sizeof(valid), l->tp, h.heads, cap(f, h.heads), 8,
		tp_fits, &h);
	if (h.heads % l->tp) {
		d = diag_add(f->diags, "GT601", fw_loc(f, l->tp_path),
			     l->tp_path, "%s: TP %lld must divide the %lld "
			     "attention heads (Megatron-core: "
			     "num_attention_heads must be a multiple of "
			     "tensor_model_parallel_size)", l->who, l->tp,
			     h.heads);
		diag_hint(d, "use TP %s", valid);
		fw_model_note(f, d, "num_attention_heads",
			      "has %lld attention heads", h.heads);
		return;
	}
	d = diag_add(f->diags, "GT602", fw_loc(f, l->tp_path), l->tp_path,
		     "%s: TP %lld and the %lld query groups (KV heads) "
		     "neither divide each other (Megatron-core: "
		     "num_query_groups must be a multiple or divisor of "
		     "tensor_model_parallel_size)", l->who, l->tp, h.groups);
	diag_hint(d, "use TP %s", valid);
	fw_model_note(f, d, "num_query_groups", "has %lld query groups",
		      h.groups);
}

/* ---- experts over EP (GT603, GT604) ------------------------------------- */

static void experts_rule(struct fw *f, const struct fw_layout *l)
{
	long long e = f->m.num_moe_experts;
	char valid[128];
	struct diag *d;

	if (l->ep <= 1)
		return;
	if (!e) {
		d = diag_add(f->diags, "GT604", fw_loc(f, l->ep_path),
			     l->ep_path, "%s: EP %lld on a dense model "
			     "(Megatron-core: num_moe_experts must be non None "
			     "to use expert-parallel)", l->who, l->ep);
		diag_hint(d, "set expert_model_parallel_size: 1 (the model "
			  "has no experts), or describe its experts under "
			  "gtplan.model");
		diag_note(d, f->m.loc, "%s is dense (no num_moe_experts)",
			  f->m.name);
		return;
	}
	if (e % l->ep == 0)
		return;
	fw_list(valid, sizeof(valid), l->ep, e, cap(f, e), 8, fw_divides, &e);
	d = diag_add(f->diags, "GT603", fw_loc(f, l->ep_path), l->ep_path,
		     "%s: EP %lld must divide the %lld experts (Megatron: "
		     "the number of experts should be a multiple of expert "
		     "model parallel size; %lld / %lld = %.2f experts per "
		     "rank)", l->who, l->ep, e, e, l->ep,
		     (double)e / (double)l->ep);
	diag_hint(d, "use EP %s", valid);
	fw_model_note(f, d, "num_moe_experts", "has %lld experts per MoE "
		      "layer", e);
}

/* Each rule whose fields the shape gives (gtplan.model may give only
 * some: a config with the heads alone gets the heads checks). */
void fw_shape_rules(struct fw *f, const struct fw_layout *l)
{
	if (f->m.num_layers > 0)
		layers_rule(f, l);
	if (f->m.num_attention_heads > 0)
		heads_rule(f, l);
	if (f->m.shape_known || f->m.num_moe_experts > 0)
		experts_rule(f, l);
}

/* ---- the vocabulary Megatron pads (GT605) ------------------------------- */

static long long vocab_divisor(const struct fw *f)
{
	if (f->p->set.vocab_divisor)
		return f->p->set.vocab_divisor;
	return f->m.make_vocab_size_divisible_by > 0 ?
	       f->m.make_vocab_size_divisible_by : 128;
}

static void vocab_rule(struct fw *f)
{
	long long div = vocab_divisor(f), tp = f->p->tp;
	long long padded = fw_padded_vocab(f->m.vocab_size, div, tp);
	const char *at = KEY_TP;
	struct diag *d;

	if (padded == f->m.vocab_size)
		return;
	d = diag_add(f->diags, "GT605", fw_loc(f, at), at,
		     "Megatron pads the vocabulary of %lld to %lld rows (a "
		     "multiple of make_vocab_size_divisible_by %lld x TP "
		     "%lld): %lld per TP rank in the embedding, the output "
		     "layer and every logits tensor", f->m.vocab_size, padded,
		     div, tp, padded / tp);
	diag_hint(d, "nothing to change: refit and Hugging Face export drop "
		  "the %lld padding rows; a checkpoint resumed with another "
		  "TP is re-padded", padded - f->m.vocab_size);
	fw_model_note(f, d, "vocab_size", "has a vocabulary of %lld",
		      f->m.vocab_size);
}

/* ---- the training layout and the Megatron generation layout ------------- */

void fw_model_rules(struct fw *f)
{
	const struct plan *p = f->p;
	long long first = 0, last = 0, v;
	struct fw_layout l = {
		.who = "the training model", .tp = p->tp, .pp = p->pp, .ep = p->ep,
		.vpp = f->vpp,
		.tp_path = KEY_TP,
		.pp_path = KEY_PP,
		.ep_path = KEY_EP,
		.first_path = KEY_MEG "num_layers_in_first_pipeline_stage",
		.last_path = KEY_MEG "num_layers_in_last_pipeline_stage",
	};
	const char *backend = NULL;

	if (!f->megatron)
		return;
	if (fw_int(f, l.first_path, &first) == 1 && p->pp > 1)
		l.first_stage = first;
	if (fw_int(f, l.last_path, &last) == 1 && p->pp > 1)
		l.last_stage = last;
	fw_shape_rules(f, &l);
	if (f->m.vocab_size > 0)
		vocab_rule(f);

	/* The Megatron generation backend builds a dedicated inference model
	 * when mcore_generation_config changes the layout; NeMo-RL merges
	 * the block over megatron_cfg, so unset sizes are the training's. */
	if (cfg_str(f->root, KEY_GEN "backend", &backend) != 1 ||
	    strcmp(backend, "megatron"))
		return;
	struct fw_layout g = {
		.who = "the Megatron generation engine's inference model",
		.tp = p->tp, .pp = p->pp, .ep = p->ep,
		.tp_path = KEY_GEN "mcore_generation_config."
			   "tensor_model_parallel_size",
		.pp_path = KEY_GEN "mcore_generation_config."
			   "pipeline_model_parallel_size",
		.ep_path = KEY_GEN "mcore_generation_config."
			   "expert_model_parallel_size",
	};
	if (fw_int(f, g.tp_path, &v) == 1 && v > 0)
		g.tp = v;
	if (fw_int(f, g.pp_path, &v) == 1 && v > 0)
		g.pp = v;
	if (fw_int(f, g.ep_path, &v) == 1 && v > 0)
		g.ep = v;
	if (g.tp == p->tp && g.pp == p->pp && g.ep == p->ep)
		return;  /* the training layout: reported above */
	/* sizes it inherits point at the training value */
	if (g.tp == p->tp && !cfg_path(f->root, g.tp_path))
		g.tp_path = l.tp_path;
	if (g.pp == p->pp && !cfg_path(f->root, g.pp_path))
		g.pp_path = l.pp_path;
	if (g.ep == p->ep && !cfg_path(f->root, g.ep_path))
		g.ep_path = l.ep_path;
	fw_shape_rules(f, &g);
}

/* ---- the entry point ---------------------------------------------------- */

/* Which entry point runs the config, from its top-level sections (as
 * tests/corpus_setup.py's algorithm()). */
const char *fw_algorithm(const struct cfg_node *root)
{
	static const char *const names[] = { "grpo", "ppo", "distillation",
					     "sft", "dpo", "rm" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct cfg_node *n = cfg_path(root, names[i]);
		const struct cfg_node *t = cfg_path(root, "teachers");

		if (!n || n->kind != CFG_MAP)
			continue;
		/* off-policy distillation: teachers only, nothing generates */
		if (i == 2 && t && t->kind == CFG_SEQ)
			return "off_policy_distillation";
		return names[i];
	}
	return "";
}

/* GT529: a class of checks is skipped, and why (no silent skips). */
static void skipped_notes(struct fw *f)
{
	const struct plan *p = f->p;
	struct diag *d;

	/* no algorithm section: the log-prob batch check has no rollout
	 * size (and whether batches are DPO pairs is unknown) */
	if (!f->algorithm[0] && p->grid_ok &&
	    cfg_path(f->root, "policy.logprob_batch_size")) {
		d = diag_add(f->diags, "GT529", fw_loc(f, "policy."
			     "logprob_batch_size"), "policy.logprob_batch_size",
			     "the config has no algorithm section (grpo, ppo, "
			     "distillation, sft, dpo or rm), so the checks "
			     "each algorithm adds are skipped: log-prob "
			     "micro-batches against the rollout size, "
			     "validation batches, and the doubled batches of "
			     "DPO and reward-model pairs%s",
			     cfg_path(f->root, KEY_GEN_CFG) ?
			     "; the generation (vLLM) checks run" : "");
		diag_hint(d, "lint the full recipe (the file with the "
			  "algorithm's section) to get them");
	}
	if (f->m.shape_known && !f->m.known && !f->m.config_json[0]) {
		d = diag_add(f->diags, "GT529", f->m.loc, KEY_MODEL_NAME,
			     "%s's layers are not uniform transformer layers "
			     "(%s), so its sizes are approximate: the shape "
			     "checks run, collective sizes use gtplan's default "
			     "shape and memory is estimated from uniform layers "
			     "(never an error)", f->m.name,
			     f->m.hybrid_layer_pattern[0] ? "a hybrid layer "
			     "pattern" : f->m.multi_latent_attention ?
			     "multi-latent attention" : "gtplan's catalog marks "
			     "them approximate");
		diag_hint(d, "describe the model's sizes under gtplan.model "
			  "for exact collective sizes");
	}
	if (f->megatron && p->grid_ok && (p->ep > 1 || p->gtp > 1 ||
					   p->egtp > 1) &&
	    !p->set.checkpointing &&
	    cfg_path(f->root, KEY_CKPT "enabled")) {
		d = diag_add(f->diags, "GT529",
			     fw_loc(f, "checkpointing.enabled"),
			     "checkpointing.enabled", "checkpointing is off, "
			     "so the checkpoint checks (who writes each key, "
			     "RNG-state and replica keys under %s) are skipped",
			     p->ep > 1 ? "expert parallelism" : "GTP");
		diag_hint(d, "enable checkpointing (or lint the config that "
			  "does) to check what a save would write");
	}
}

void framework_check(const struct plan *p, const struct cfg_node *root,
		     struct diag_list *diags)
{
	struct fw f;
	long long v;

	memset(&f, 0, sizeof(f));
	f.p = p;
	f.root = root;
	f.diags = diags;
	f.algorithm = fw_algorithm(root);
	if (p->model_rc < 0) {
		/* refused values: no rule judges them */
		memcpy(f.m.name, p->model.name, sizeof(f.m.name));
		f.m.loc = p->model.loc;
	} else {
		f.m = p->model;
	}
	f.megatron = p->set.megatron;
	f.sequence_parallel = f.megatron && p->set.sequence_parallel;
	if (f.megatron &&
	    fw_int(&f, KEY_MEG "virtual_pipeline_model_parallel_size",
		   &v) == 1 && v > 0)
		f.vpp = v;
	if (p->tp < 1 || p->pp < 1 || p->cp < 1)
		return;  /* sizes the schema refused */
	fw_engine_rules(&f);
	/* one root cause, one error: the rules below would judge the
	 * default that stands in for a refused size */
	if (p->sizes_refused)
		return;
	fw_model_rules(&f);
	fw_coupling_rules(&f);
	fw_batch_rules(&f);
	fw_state_rules(&f);
	skipped_notes(&f);
}
