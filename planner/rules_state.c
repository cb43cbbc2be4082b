/*
 * rules_state: checkpoint keys under expert parallelism (GT640-GT642),
 * the loss domain under context parallelism (GT660), refit of a weight
 * that several pipeline stages hold (GT650), and expert-parallel groups
 * that cross nodes (GT670; sim/cost.c's GT531 covers TP and GTP).
 *
 * Sources:
 *  - Megatron-LM training/checkpointing.py get_rng_state: with EP > 1 the
 *    RNG state is a ShardedObject of global shape (PP, TP, dp_cp size) at
 *    offset (pp, tp, dp_cp rank) with replica_id 0 on every rank (without
 *    EP it is keyed (pp, tp) with the dp_cp rank as replica id);
 *    dist_checkpointing/validation.py refuses duplicate keys ("Duplicate
 *    ShardedObject keys"). Before Megatron-LM PR #6858, get_rng_state
 *    passed replica_id = dp_cp rank under EP too, so the EP ranks of a
 *    (pp, tp) slot shared one key and resumed on EP rank 0's stream. ProcessGroupCollection.use_mpu_process_groups
 *    gives dp_cp without GTP (docs/notes/megatron-semantics.md §1.6).
 *  - GTP's make_sharded_tensors_for_checkpoint_with_gtp_remat: tensors
 *    GTP keeps whole need the GTP rank folded into their replica id, or
 *    every GTP peer is a main replica.
 *  - Megatron-Bridge model_bridge.py: build_conversion_tasks drops the
 *    output layer of tied embeddings; an MTP block's copy of the embedding
 *    on the last stage makes "Tensor exists on more than one PP rank"
 *    (Megatron-Bridge PRs #2799, #3428; NeMo-RL issue #2471: refit fails
 *    with "Object present on multiple PP ranks").
 *  - NeMo-RL models/megatron/data.py process_global_batch: the loss's
 *    token count is summed over the data-parallel group; CP ranks of a lane
 *    count the same (unsplit) sequences, and the gradients of a lane's CP
 *    ranks are summed by the dp_cp reduction.
 */
#include "framework.h"

#include <stdio.h>
#include <string.h>

#include "layout.h"


/* A gtplan.stack setting, or `dflt`. */
static const char *stack(const struct fw *f, const char *key,
			 const char *dflt)
{
	char path[96];
	const char *v = NULL;

	snprintf(path, sizeof(path), KEY_STACK "%s", key);
	return cfg_str(f->root, path, &v) == 1 ? v : dflt;
}

/* ---- checkpoint keys ---------------------------------------------------- */

/* The GTP peers of rank 0, as "0, 4, 8" (up to 4 of them). */
static void gtp_peers(const struct plan *p, const struct lay_grid *g,
		      unsigned gtp_axes, char *buf, size_t len)
{
	long long n = lay_group_size(g, gtp_axes);
	size_t used = 0;

	buf[0] = '\0';
	for (long long i = 0; i < n && i < 4 && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%lld",
					 i ? ", " : "",
					 lay_group_member(g, gtp_axes, 0, i));
	if (n > 4 && used < len)
		snprintf(buf + used, len - used, ", ...");
	(void)p;
}

static void rng_rule(struct fw *f)
{
	const struct plan *p = f->p;
	const char *group = stack(f, "rng_state_group", "dp_cp_gtp");
	const char *at = KEY_STACK "rng_state_group";
	char peers[64];
	struct diag *d;

	if (!f->megatron || !p->set.checkpointing || p->ep < 2 || p->gtp < 2 ||
	    !p->grid_ok || strcmp(group, "dp_cp"))
		return;
	gtp_peers(p, &p->dense, 1u << LAY_GTP, peers, sizeof(peers));
	d = diag_add(f->diags, "GT640", fw_loc(f, at), at,
		     "with EP %lld Megatron keys the RNG-state checkpoint "
		     "object by (pp, tp, dp_cp rank) with replica 0 on every "
		     "rank; the stack's dp_cp group leaves GTP out, so the %lld "
		     "GTP peers of each rank (ranks %s for rng_state/"
		     "shard_0.0.0_%lld.%lld.%lld) claim one key and the save "
		     "fails Megatron's validation (Duplicate ShardedObject "
		     "keys)", p->ep, p->gtp, peers, p->pp, p->tp,
		     p->dp_replicate * p->cp);
	diag_hint(d, "use a stack whose RNG-state group includes GTP "
		  "(gtplan.stack.rng_state_group: dp_cp_gtp), or turn GTP off "
		  "(tensor_parallel_num_weight_shards: null)");
	diag_note(d, fw_loc(f, KEY_EP),
		  "EP is %lld here", p->ep);
}

/* GT642: without Megatron-LM PR #6858, one RNG state per (pp, tp) slot
 * with the dp_cp rank as replica id, GTP or not; under EP the dp_cp
 * group holds EP ranks whose expert-parallel RNG streams differ. */
static void rng_6858_rule(struct fw *f)
{
	const struct plan *p = f->p;
	const char *at = KEY_STACK "megatron_lm_6858";
	struct diag *d;

	if (!f->megatron || !p->set.checkpointing || p->ep < 2 ||
	    fw_bool(f, at, 1))
		return;
	d = diag_add(f->diags, "GT642", fw_loc(f, at), at,
		     "with EP %lld, Megatron-LM without PR #6858 saves the RNG "
		     "state once per (pp, tp) slot with the dp_cp rank as "
		     "replica id: the %lld expert-parallel ranks of a slot "
		     "share one key although each seeds its own expert-parallel "
		     "stream (seed + 1024 + 100 x ep_rank + etp_rank), so after "
		     "a resume every EP rank above 0 draws EP rank 0's router "
		     "noise and expert dropout", p->ep, p->ep);
	diag_hint(d, "use a Megatron-LM with PR #6858 (gtplan.stack."
		  "megatron_lm_6858: true), or resume with EP 1");
	diag_note(d, fw_loc(f, KEY_EP), "EP is %lld here", p->ep);
}

static void expert_replica_rule(struct fw *f)
{
	const struct plan *p = f->p;
	const char *group = stack(f, "replica_group", "dp_cp_gtp");
	const char *at = KEY_STACK "replica_group";
	char peers[64];
	struct diag *d;

	if (!f->megatron || !p->set.checkpointing || p->egtp < 2 ||
	    !p->expert_grid_ok || strcmp(group, "dp_cp") ||
	    !f->m.shape_known || !f->m.num_moe_experts ||
	    !f->m.add_bias_linear)
		return;
	gtp_peers(p, &p->expert, 1u << LAY_GTP, peers, sizeof(peers));
	d = diag_add(f->diags, "GT641", fw_loc(f, at), at,
		     "the experts' biases are whole on each of the %lld expert "
		     "GTP peers (ranks %s), and the stack elects their main "
		     "replica over a group without expert GTP: %lld main "
		     "replicas write each expert bias and Megatron's "
		     "validation refuses the save (Invalid access pattern)",
		     p->egtp, peers, p->egtp);
	diag_hint(d, "use a stack that folds the GTP rank into the replica "
		  "id (gtplan.stack.replica_group: dp_cp_gtp), or "
		  "expert_tensor_parallel_num_weight_shards: null");
	diag_note(d, f->m.loc, "%s has linear biases in its %lld experts",
		  f->m.name, f->m.num_moe_experts);
}

/* ---- refit -------------------------------------------------------------- */

static void refit_rule(struct fw *f)
{
	const struct plan *p = f->p;
	const char *how = stack(f, "refit_shared_weights", "first_owner");
	const char *at = KEY_STACK "refit_shared_weights";
	struct diag *d;

	if (!f->megatron || p->pp < 2 || !f->m.shape_known ||
	    f->m.mtp_num_layers < 1 || strcmp(how, "every_owner") ||
	    !fw_generates(f))
		return;
	d = diag_add(f->diags, "GT650", fw_loc(f, at), at,
		     "the word embedding is on pipeline stages 0 and %lld (the "
		     "MTP layer%s on the last stage share%s it), and this stack "
		     "exports a weight from every stage that holds it: refit "
		     "stops with 'Object present on multiple PP ranks' "
		     "(NeMo-RL issue #2471)", p->pp - 1,
		     f->m.mtp_num_layers > 1 ? "s" : "",
		     f->m.mtp_num_layers > 1 ? "" : "s");
	diag_hint(d, "use a Megatron-Bridge whose export takes each shared "
		  "tensor from its first owner (PR #3428; "
		  "gtplan.stack.refit_shared_weights: first_owner), or PP 1");
	diag_note(d, f->m.loc, "%s has %lld MTP layer%s", f->m.name,
		  f->m.mtp_num_layers, f->m.mtp_num_layers > 1 ? "s" : "");
	diag_note(d, fw_loc(f, KEY_PP),
		  "PP is %lld here", p->pp);
}

/* ---- the loss domain ---------------------------------------------------- */

static void loss_rule(struct fw *f)
{
	const struct plan *p = f->p;
	const char *tok = stack(f, "loss_token_count_group", "dp");
	const char *grad = stack(f, "grad_reduce_group", "dp_cp");
	struct diag *d;

	if (!f->megatron || p->cp < 2 || !p->grid_ok)
		return;
	if (!strcmp(tok, "dp_cp")) {
		const char *at = KEY_STACK "loss_token_count_group";

		d = diag_add(f->diags, "GT660", fw_loc(f, at), at,
			     "the loss normaliser sums token counts over lanes "
			     "x CP (%lld x %lld = %lld ranks), but the %lld CP "
			     "ranks of a lane count the same sequences: every "
			     "token is counted %lld times and the loss and its "
			     "gradient come out %lld times too small", p->lanes,
			     p->cp, p->lanes * p->cp, p->cp, p->cp, p->cp);
		diag_hint(d, "sum the token counts over the lanes only (the dp "
			  "group, gtplan.stack.loss_token_count_group: dp), as "
			  "the gradient reduction covers lanes x CP once");
	}
	if (!strcmp(grad, "dp")) {
		const char *at = KEY_STACK "grad_reduce_group";

		d = diag_add(f->diags, "GT660", fw_loc(f, at), at,
			     "the gradient reduction covers the %lld lanes but "
			     "not CP %lld: each CP rank holds the gradient of "
			     "its own part of the tokens, so without the CP sum "
			     "the loss normalised over all %lld lanes' tokens "
			     "gets 1/%lld of its gradient and the CP copies of "
			     "the weights drift apart", p->lanes, p->cp,
			     p->lanes, p->cp);
		diag_hint(d, "reduce gradients over lanes x CP (dp_cp, "
			  "gtplan.stack.grad_reduce_group: dp_cp)");
	}
}

/* ---- groups across nodes ------------------------------------------------ */

/* The first group of `kind` whose members sit on two nodes; -1 when none
 * does. Members are ascending and ranks fill nodes in order, so the first
 * and last member tell. */
static long long spanning_group(const struct plan *p, const struct lay_grid *g,
				unsigned axes, long long *n0, long long *n1)
{
	long long count = lay_group_count(g, axes), size = lay_group_size(g, axes);

	for (long long i = 0; i < count; i++) {
		long long a = lay_group_member(g, axes, i, 0);
		long long b = lay_group_member(g, axes, i, size - 1), la, lb;

		plan_rank_place(p, a, n0, &la);
		plan_rank_place(p, b, n1, &lb);
		if (*n0 != *n1)
			return i;
	}
	return -1;
}

static void node_rule(struct fw *f, const char *kind, const char *what,
		      const char *path, const char *hint_sizes)
{
	const struct plan *p = f->p;
	const struct lay_group_kind *gk = lay_group_kind_find(kind);
	const struct lay_grid *g;
	long long idx, n0, n1, size;
	struct diag *d;

	if (!gk || (gk->expert && !p->expert_grid_ok))
		return;
	g = gk->expert ? &p->expert : &p->dense;
	size = lay_group_size(g, gk->axes);
	if (size < 2)
		return;
	idx = spanning_group(p, g, gk->axes, &n0, &n1);
	if (idx < 0)
		return;
	d = diag_add(f->diags, "GT670", fw_loc(f, path), path,
		     "the %s group of ranks %lld..%lld (%lld ranks) spans nodes "
		     "%lld to %lld (%lld GPUs each): its %s cross the network "
		     "instead of NVLink", kind,
		     lay_group_member(g, gk->axes, idx, 0),
		     lay_group_member(g, gk->axes, idx, size - 1), size, n0,
		     n1, p->train.gpus_per_node, what);
	diag_hint(d, "keep %s within one node (a divisor of its %lld GPUs)",
		  hint_sizes, p->train.gpus_per_node);
}

void fw_state_rules(struct fw *f)
{
	rng_rule(f);
	rng_6858_rule(f);
	expert_replica_rule(f);
	refit_rule(f);
	loss_rule(f);
	if (!f->p->grid_ok || f->p->train.gpus_per_node < 1)
		return;
	if (f->megatron && f->p->ep > 1)
		node_rule(f, "ep", "MoE token all-to-alls",
			  KEY_EP,
			  "ETP x EP");
}
