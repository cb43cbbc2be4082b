/*
 * ckpt_expert: the experts of MoE layers in the checkpoint (docs/design.md
 * §2.6):
 * their weight and optimizer keys, validated on the expert grid, and what a
 * rank writes and reads of them (see ckpt.h).
 */
#include "ckmath.h"
#include "ckpt_int.h"

#include <stdio.h>

#include "model.h"

/* ---- experts (docs/design.md §2.6) ------------------------------------- */

/* Keys. Megatron saves the experts of an MoE layer under one key per
 * weight, decoder.layers.L.mlp.experts.linear_fc1.weight (linear_fc2
 * alike), of logical shape [E, rows, cols]: SequentialMLP's
 * sharded_state_dict (without singleton_local_shards) replaces the
 * local_experts.<local index>. prefix by experts. and prepends the global
 * expert index as axis 0, and TEGroupedLinear keys its weight<i> the same
 * way ("to make keys identical to sequential ones"), so one form serves
 * both and a checkpoint moves between them. The per-expert form
 * (experts.<global index>.) exists only with singleton_local_shards,
 * which NeMo-RL does not set. The replica id's DP slot is the rank in the
 * expert data-parallel group ("replication along DP modulo EP"); the
 * TP and GTP slots of a piece are ckpt_expert_entry_of's.
 *
 * Cost. A piece depends only on the rank's expert-grid coordinates and is
 * the same for its E / EP local experts (expert x = ep * E / EP + j), so
 * chunks are counted per (EP rank, chunk of one expert): O(W / PP) per
 * weight and stage, never per rank x expert. A chunk index k stands for
 * slot k / nch (the EP rank) and chunk k % nch of each of its experts.
 *
 * Optimizer. Megatron keeps expert parameters in their own distributed
 * optimizer (chained after the dense one) sharded over expert DP, so the
 * formats apply with F = the expert grid's GTP-excluded DP group (EDP;
 * the expert grid has no CP) and, for dp_reshardable, one flat key per
 * expert model-parallel rank (etp, ep, egtp, pp): chained_1.optimizer.
 * distributed.dp_group_idx_N.<state>. */

static long long local_experts(const struct ckpt_ctx *x)
{
	return x->experts / x->p->ep;
}

static long long expert_f(const struct plan *p)
{
	return p->expert.size[LAY_CP] * p->expert.size[LAY_DP];
}

static long long expert_dp(const struct plan *p, const long long c[LAY_NAXES])
{
	return rank_in(&p->expert, B(LAY_CP) | B(LAY_DP), c);
}

static void expert_entry(const struct ckpt_ctx *x, const struct ckpt_item *it,
			 const long long c[LAY_NAXES], struct ckpt_entry *e)
{
	ckpt_expert_entry_of(x->p, x->s, it->kind, it->rows, it->cols, 1, c,
			     e);
}

/* The first MoE layer of [first, first + nl) (the key a report names). */
long long ckpt_first_moe(const struct model_shape *m, long long first,
			 long long nl)
{
	for (long long l = first; l < first + nl; l++)
		if (model_moe_layers(m, l, 1))
			return l;
	return first;
}

static const char *why_expert(const struct ckpt_ctx *x, enum ckpt_kind k)
{
	if (k == CKPT_NORM)
		return x->s->replica_dp_cp ?
			"the expert bias is whole on each expert GTP peer and "
			"its replica id is elected over the expert dp group "
			"without folding expert GTP into the TP slot "
			"(gtplan.stack.replica_group: dp_cp)" :
			"its replica id folds expert GTP into the TP slot and "
			"is elected over expert dp";
	return x->s->writer_dp_cp_gtp ?
		"the writers of expert pieces are elected over the expert "
		"data-parallel group with expert GTP (edp_gtp), so only the "
		"egtp = 0 pieces have replica id 0 (gtplan.stack."
		"sharded_replica_group: dp_cp_gtp)" :
		"their writers are elected over the GTP-excluded expert "
		"data-parallel group (edp)";
}

/* "(x0-x1, c0) of (E, f0)" for column pieces, "(x0-x1, c0, c1) of (E, f0,
 * f1)" for row pieces: chunk k (slot, chunk) of every local expert of
 * the slot. */
static void expert_chunk_text(const struct ckpt_ctx *x,
			      const struct ckpt_item *it,
			      const struct ckpt_entry *e, long long k,
			      char *buf, size_t len)
{
	long long nch = e->frag[0] * e->frag[1], ci = k % nch;
	long long nloc = local_experts(x), x0 = k / nch * nloc;
	char xs[48];

	if (nloc > 1)
		snprintf(xs, sizeof(xs), "%lld-%lld", x0, x0 + nloc - 1);
	else
		snprintf(xs, sizeof(xs), "%lld", x0);
	if (it->kind == CKPT_ROW)
		snprintf(buf, len, "(%s, %lld, %lld) of (%lld, %lld, %lld)", xs,
			 ci / e->frag[1], ci % e->frag[1], x->experts,
			 e->frag[0], e->frag[1]);
	else
		snprintf(buf, len, "(%s, %lld) of (%lld, %lld)", xs, ci,
			 x->experts, e->frag[0]);
}

/* Lists the ranks of stage st holding chunk `want` (slot * nch + chunk)
 * of expert weight it: only its main replicas with main_only. Returns
 * how many there are. */
static long long expert_claimants(const struct ckpt_ctx *x,
				  const struct ckpt_item *it, long long st,
				  long long want, long long nch, int main_only,
				  struct strbuf *who)
{
	const struct plan *p = x->p;
	long long per = p->expert.world / p->pp, n = 0, c[LAY_NAXES];
	struct ckpt_entry e;

	for (long long i = 0; i < per; i++) {
		grid_stage_coords(&p->expert, st, i, c);
		expert_entry(x, it, c, &e);
		if ((main_only && !e.main) ||
		    c[LAY_EP] * nch + chunk_index(&e) != want)
			continue;
		ckpt_claimant(who, ++n, &p->expert, c, 1);
	}
	ckpt_claimants_end(who, n);
	return n;
}

/* Checks expert weight `it` on stage st (nmoe MoE layers, the first one
 * `layer`): every chunk of every expert claimed by exactly one main
 * replica. Adds the main entries to *shards; reports the first bad chunk
 * when `report`. Returns -1 when out of memory. */
int ckpt_check_expert(struct ckpt_ctx *x, const struct ckpt_item *it,
		      long long st, long long layer, long long nmoe, int report,
		      long long *shards)
{
	const struct plan *p = x->p;
	long long per = p->expert.world / p->pp, c[LAY_NAXES], nch, n;
	long long nloc = local_experts(x), bad = -1, never = 0;
	struct ckpt_entry e;

	grid_stage_coords(&p->expert, st, 0, c);
	expert_entry(x, it, c, &e);
	nch = e.frag[0] * e.frag[1];
	n = p->ep * nch;
	if (ckpt_counters(x, n))
		return -1;
	for (long long i = 0; i < per; i++) {
		grid_stage_coords(&p->expert, st, i, c);
		expert_entry(x, it, c, &e);
		if (e.main)
			x->cnt[c[LAY_EP] * nch + chunk_index(&e)]++;
	}
	for (long long k = 0; k < n; k++) {
		*shards += (x->cnt[k] > 0) * nloc * nmoe;
		never += x->cnt[k] == 0;
		if (x->cnt[k] != 1 && bad < 0)
			bad = k;
	}
	if (bad < 0 || !report)
		return 0;

	char key[160], ch[192];
	struct strbuf who = STRBUF_INIT;
	const char *every = nmoe > 1 || p->pp > 1 ?
		"; the same for every MoE layer" : "";
	struct diag *d;

	ckpt_key_of(it, layer, key, sizeof(key));
	expert_chunk_text(x, it, &e, bad, ch, sizeof(ch));
	long long held = expert_claimants(x, it, st, bad, nch,
					  x->cnt[bad] > 1, &who);
	const char *whos = strbuf_str(&who) ? strbuf_str(&who) : "";
	int norm = it->kind == CKPT_NORM;
	int sk = norm ? STACK_REPLICA : STACK_WRITER;
	const char *path = norm ? "gtplan.stack.replica_group" :
		"gtplan.stack.sharded_replica_group";

	if (x->cnt[bad] > 1) {
		d = diag_add(x->diags, "GT710", ckpt_stack_loc(x, sk), path,
			     "checkpoint chunk %s of %s claimed %lld times by "
			     "main replicas (%s): %s%s", ch, key, x->cnt[bad],
			     whos, why_expert(x, it->kind), every);
		if (norm)
			diag_hint(d, "fold the expert GTP rank into the replica "
				  "id: gtplan.stack.replica_group: dp_cp_gtp");
		else
			diag_hint(d, "elect one writer per expert piece over "
				  "the GTP-excluded expert data-parallel group "
				  "(edp): gtplan.stack.sharded_replica_group: "
				  "dp_cp");
	} else {
		d = diag_add(x->diags, "GT711", ckpt_stack_loc(x, sk), path,
			     "checkpoint chunk %s of %s is never written: no "
			     "main replica (replica id all zeros) saves it, "
			     "though %s hold%s it (%lld of the %lld (EP "
			     "rank, piece) pairs have none): %s%s", ch, key,
			     whos, held == 1 ? "s" : "", never, n,
			     why_expert(x, it->kind), every);
		diag_hint(d, "elect the writers of expert pieces over the "
			  "GTP-excluded expert data-parallel group (gtplan."
			  "stack.sharded_replica_group: dp_cp)");
	}
	strbuf_release(&who);
	return 0;
}

/* The model-space optimizer entry of expert weight it at expert-grid
 * coord c (see opt_entry; F = EDP); chunk and nchunks per slot. */
static void expert_opt_entry(const struct ckpt_ctx *x,
			     const struct ckpt_item *it,
			     const long long c[LAY_NAXES], long long *chunk,
			     long long *nchunks, int *main, long long *elems)
{
	long long f = expert_f(x->p), dp = expert_dp(x->p, c);
	struct ckpt_entry e;

	expert_entry(x, it, c, &e);
	*nchunks = e.frag[0] * e.frag[1];
	*chunk = chunk_index(&e);
	*elems = e.real_rows * e.local[1];
	if (x->opt == STACK_OPT_FULLY_RESHARDABLE) {
		*main = e.main;
		return;
	}
	*nchunks *= f;
	*chunk = *chunk * f + dp;
	*main = !e.replica[0] && !e.replica[1];
	*elems = range_len(*elems, f, dp);
}

/* Validates the expert optimizer entries of stage st (nmoe MoE layers,
 * the first `layer`) and counts their keys and main shards. Returns -1
 * when out of memory. */
int ckpt_check_expert_opt(struct ckpt_ctx *x, const struct ckpt_item *it,
			  size_t n_ex, long long st, long long layer,
			  long long nmoe, int report, struct ckpt_summary *out)
{
	const struct plan *p = x->p;
	long long per = p->expert.world / p->pp, c[LAY_NAXES], n;
	long long f = expert_f(p), nloc = local_experts(x);

	if (!nmoe || !n_ex)
		return 0;
	if (x->opt == STACK_OPT_DP_RESHARDABLE) {
		long long nmp = per / f; /* ETP x EP x EG flat keys */

		if (ckpt_counters(x, nmp * f))
			return -1;
		for (long long i = 0; i < per; i++) {
			grid_stage_coords(&p->expert, st, i, c);
			x->cnt[rank_in(&p->expert, B(LAY_TP) | B(LAY_EP) |
				       B(LAY_GTP), c) * f + expert_dp(p, c)]++;
		}
		out->opt_keys += OPT_STATES * nmp;
		for (long long k = 0; k < nmp * f; k++) {
			out->opt_shards += OPT_STATES * (x->cnt[k] > 0);
			if (x->cnt[k] != 1 && report) {
				char key[128];

				snprintf(key, sizeof(key), "chained_1.optimizer."
					 "distributed.dp_group_idx_%lld.%s",
					 k / f + nmp * st, ckpt_opt_state[0]);
				ckpt_opt_report(x, key, k % f, f, x->cnt[k]);
				report = 0;
			}
		}
		return 0;
	}
	for (size_t j = 0; j < n_ex; j++) {
		long long chunk, elems;
		int main, rep = report;

		grid_stage_coords(&p->expert, st, 0, c);
		expert_opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
		if (ckpt_counters(x, p->ep * n))
			return -1;
		for (long long i = 0; i < per; i++) {
			grid_stage_coords(&p->expert, st, i, c);
			expert_opt_entry(x, &it[j], c, &chunk, &n, &main,
					 &elems);
			if (main)
				x->cnt[c[LAY_EP] * n + chunk]++;
		}
		out->opt_keys += OPT_STATES * nmoe;
		for (long long k = 0; k < p->ep * n; k++) {
			out->opt_shards += OPT_STATES * nmoe * nloc *
				(x->cnt[k] > 0);
			if (x->cnt[k] != 1 && rep) {
				char key[192], mk[160];

				ckpt_key_of(&it[j], layer, mk, sizeof(mk));
				snprintf(key, sizeof(key), "optimizer.state.%s.%s",
					 ckpt_opt_state[0], mk);
				/* the chunk of the slot's first expert */
				ckpt_opt_report(x, key,
						k / n * nloc * n + k % n,
						x->experts * n, x->cnt[k]);
				rep = 0;
			}
		}
	}
	return 0;
}

/* What the rank at expert-grid coord c saves and reads of its experts on
 * a stage of nmoe MoE layers: adds its main weight bytes to *weight, its
 * optimizer bytes to *opt and its read bytes to *read; sets *writes when
 * it saves anything. */
void ckpt_expert_bytes(const struct ckpt_ctx *x, const struct ckpt_item *it,
		       size_t n_ex, long long nmoe, int dist,
		       const long long c[LAY_NAXES], long long *weight,
		       long long *opt, long long *read, int *writes)
{
	const struct plan *p = x->p;
	long long k = nmoe * local_experts(x), f = expert_f(p);
	long long dp = expert_dp(p, c), buf = 0, ob = 0;
	struct ckpt_entry e;

	if (!k)
		return;
	for (size_t j = 0; j < n_ex; j++) {
		long long el, chunk, n, elems;
		int main;

		expert_entry(x, &it[j], c, &e);
		el = ck_mul_sat(e.real_rows, e.local[1]);
		*read = ck_add_sat(*read, ck_mul_sat(ck_mul_sat(k, el), 2));
		buf = ck_add_sat(buf, ck_mul_sat(k, ck_mul_sat(e.local[0],
							    e.local[1])));
		if (e.main) {
			*weight = ck_add_sat(*weight,
					     ck_mul_sat(ck_mul_sat(k, el), 2));
			*writes = 1;
		}
		if (x->opt == STACK_OPT_DP_RESHARDABLE)
			continue;
		expert_opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
		if (main)
			ob = ck_add_sat(ob, ck_mul_sat(OPT_STATES * OPT_BYTES,
							ck_mul_sat(k, elems)));
	}
	if (x->opt == STACK_OPT_DP_RESHARDABLE)
		ob = ck_mul_sat(OPT_STATES * OPT_BYTES, range_len(buf, f, dp));
	if (ob > 0 || (x->opt == STACK_OPT_DP_RESHARDABLE && buf > 0))
		*writes = 1; /* dp_reshardable: every rank saves its range */
	*opt = ck_add_sat(*opt, ob);
	*read = ck_add_sat(*read, ck_mul_sat(OPT_STATES * OPT_BYTES,
			   dist ? range_len(buf, f, dp) : buf));
}

