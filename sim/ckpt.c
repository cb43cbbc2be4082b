/*
 * ckpt: the checkpoint plan and its validation (see ckpt.h): the dense
 * model's keys, their findings and ckpt_check, which also runs the
 * optimizer (ckpt_opt.c) and expert (ckpt_expert.c) checks and the bytes
 * per rank (ckpt_bytes.c). Entries are ckpt_entry.c's; ckpt_int.h is what
 * the files share.
 */
#include "ckpt_int.h"

#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"
#include "model.h"

/* ---- validation --------------------------------------------------------- */

/* Counting the main replicas of an entry that uses the dp coordinate only
 * through rank_in's zero test (every kind but the data-loader object, whose
 * chunk is the lane) needs only dp 0 and one dp >= 1: the D - 1 ranks of
 * dp >= 1 get the same chunk and all-nonzero-alike replica ids, so each
 * stands for D - 1 of them. This keeps the checkpoint check at 1M ranks
 * within TP x CP x G x 2 visits per item and stage. */
static long long compressed_visits(const struct plan *p)
{
	long long d = p->dense.size[LAY_DP];

	return p->world / p->pp / d * (d > 2 ? 2 : d);
}

/* Visit i of compressed_visits: its coordinates and the ranks it stands
 * for. */
static long long compressed_coords(const struct plan *p, long long st,
				   long long i, long long c[LAY_NAXES])
{
	const struct lay_grid *g = &p->dense;
	long long d = g->size[LAY_DP];

	for (int a = 0; a < LAY_NAXES; a++) {
		long long n = a == LAY_DP && d > 2 ? 2 : g->size[a];

		if (a == LAY_PP)
			continue;
		c[a] = i % n;
		i /= n;
	}
	c[LAY_PP] = st;
	return c[LAY_DP] == 1 && d > 2 ? d - 1 : 1;
}

struct diag_loc ckpt_stack_loc(const struct ckpt_ctx *x, int key)
{
	if (x->s->loc[key].src >= 0)
		return x->s->loc[key];
	return x->p->set.stack_loc;
}

const char *ckpt_why(const struct ckpt_ctx *x, enum ckpt_kind k)
{
	switch (k) {
	case CKPT_NORM:
		return x->s->replica_dp_cp ?
			"their replica ids are elected over the dp_cp group, "
			"which excludes GTP, and GTP is not folded into the TP "
			"slot (gtplan.stack.replica_group: dp_cp)" :
			"their replica ids fold GTP into the TP slot and are "
			"elected over dp_cp";
	case CKPT_RNG:
		return x->s->rng_dp_cp ?
			"its replica id is the rank in the dp_cp group, which "
			"excludes GTP, so the G GTP peers of a (pp, tp) slot "
			"all have replica id 0 (gtplan.stack.rng_state_group: "
			"dp_cp)" :
			"its replica id is the rank in the dp_cp_gtp group";
	default:
		return x->s->writer_dp_cp_gtp ?
			"the writers of GTP-sharded pieces are elected over "
			"dp_cp_gtp, which includes GTP, so only the g = 0 "
			"pieces have replica id 0 (gtplan.stack."
			"sharded_replica_group: dp_cp_gtp)" :
			"their writers are elected over the GTP-excluded dp_cp "
			"group";
	}
}

void ckpt_claimant(struct strbuf *who, long long n, const struct lay_grid *g,
		   const long long c[LAY_NAXES], int expert)
{
	if (n > CKPT_LIST)
		return;
	strbuf_addf(who, expert ? "%srank %lld (etp %lld, ep %lld, egtp %lld, "
		    "edp %lld, pp %lld)" : "%srank %lld (tp %lld, cp %lld, "
		    "gtp %lld, dp %lld, pp %lld)", n > 1 ? ", " : "",
		    lay_rank(g, c), c[LAY_TP], c[expert ? LAY_EP : LAY_CP],
		    c[LAY_GTP], c[LAY_DP], c[LAY_PP]);
}

void ckpt_claimants_end(struct strbuf *who, long long n)
{
	if (n > CKPT_LIST)
		strbuf_addf(who, " and %lld more", n - CKPT_LIST);
}

/* Lists the ranks claiming chunk `want` of kind k on stage st. */
static void claimants(const struct ckpt_ctx *x, const struct ckpt_item *it,
		      long long st, long long want, struct strbuf *who)
{
	const struct plan *p = x->p;
	long long per = p->world / p->pp, n = 0, c[LAY_NAXES];
	struct ckpt_entry e;

	for (long long i = 0; i < per; i++) {
		stage_coords(p, st, i, c);
		item_entry(p, x->s, it, c, &e);
		if (e.main && chunk_index(&e) == want)
			ckpt_claimant(who, ++n, &p->dense, c, 0);
	}
	ckpt_claimants_end(who, n);
}

void ckpt_key_of(const struct ckpt_item *it, long long layer, char *buf,
		 size_t len)
{
	if (it->kind == CKPT_RNG || it->kind == CKPT_LOADER || it->stage >= 0)
		snprintf(buf, len, "%s", it->name);
	else
		snprintf(buf, len, "decoder.layers.%lld.%s", layer, it->name);
}

static void chunk_text(const struct ckpt_item *it, const struct ckpt_entry *e,
		       long long ci, char *buf, size_t len)
{
	long long c0 = ci / e->frag[1], c1 = ci % e->frag[1];

	if (it->kind == CKPT_ROW || it->kind == CKPT_RNG)
		snprintf(buf, len, "(%lld, %lld) of (%lld, %lld)", c0, c1,
			 e->frag[0], e->frag[1]);
	else
		snprintf(buf, len, "(%lld) of (%lld)", c0, e->frag[0]);
}

/* Counts the main replicas that save each chunk of item `it` on stage st
 * into x->cnt; *e is left with the last entry visited (its chunk grid is
 * every rank's). Returns the number of chunks, or -1 when out of memory. */
static long long count_claims(struct ckpt_ctx *x, const struct ckpt_item *it,
			      long long st, struct ckpt_entry *e)
{
	const struct plan *p = x->p;
	long long per = p->world / p->pp, c[LAY_NAXES], n;

	stage_coords(p, st, 0, c);
	item_entry(p, x->s, it, c, e);
	n = e->frag[0] * e->frag[1];
	if (ckpt_counters(x, n))
		return -1;
	if (it->kind == CKPT_LOADER) {
		for (long long i = 0; i < per; i++) {
			stage_coords(p, st, i, c);
			item_entry(p, x->s, it, c, e);
			if (e->main)
				x->cnt[chunk_index(e)]++;
		}
	} else {
		for (long long i = 0, v = compressed_visits(p); i < v; i++) {
			long long w = compressed_coords(p, st, i, c);

			item_entry(p, x->s, it, c, e);
			if (e->main)
				x->cnt[chunk_index(e)] += w;
		}
	}
	return n;
}

/* GT710/GT712 (chunk `bad` claimed twice) or GT711 (never written, `never`
 * of the hi - lo chunks) for item `it` of stage st. */
static void report_item(struct ckpt_ctx *x, const struct ckpt_item *it,
			long long st, long long layer, long long nl,
			const struct ckpt_entry *e, long long bad,
			long long never, long long chunks)
{
	const struct plan *p = x->p;
	int object = it->kind == CKPT_RNG || it->kind == CKPT_LOADER;
	char key[160], ch[64];
	struct strbuf who = STRBUF_INIT;
	struct diag *d;
	int k = it->kind == CKPT_RNG ? STACK_RNG :
		it->kind == CKPT_NORM ? STACK_REPLICA : STACK_WRITER;
	const char *path = it->kind == CKPT_RNG ?
		"gtplan.stack.rng_state_group" : it->kind == CKPT_NORM ?
		"gtplan.stack.replica_group" :
		"gtplan.stack.sharded_replica_group";
	const char *every = it->stage < 0 && (nl > 1 || p->pp > 1) ?
			    "; the same for every layer" : "";

	ckpt_key_of(it, layer, key, sizeof(key));
	chunk_text(it, e, bad, ch, sizeof(ch));
	if (x->cnt[bad] > 1) {
		claimants(x, it, st, bad, &who);
		if (object)
			d = diag_add(x->diags, "GT712", ckpt_stack_loc(x, k),
				     path, "duplicate checkpoint object key "
				     "%s/shard_%lld.%lld_%lld.%lld: %lld main "
				     "replicas save it (%s): %s", key,
				     bad / e->frag[1], bad % e->frag[1],
				     e->frag[0], e->frag[1], x->cnt[bad],
				     strbuf_str(&who) ? strbuf_str(&who) : "",
				     ckpt_why(x, it->kind));
		else
			d = diag_add(x->diags, "GT710", ckpt_stack_loc(x, k),
				     path, "checkpoint chunk %s of %s claimed "
				     "%lld times by main replicas (%s): %s%s",
				     ch, key, x->cnt[bad],
				     strbuf_str(&who) ? strbuf_str(&who) : "",
				     ckpt_why(x, it->kind), every);
		diag_hint(d, "elect the main replica over a group that "
			  "includes GTP: gtplan.stack.%s: dp_cp_gtp",
			  it->kind == CKPT_RNG ? "rng_state_group" :
			  "replica_group");
		strbuf_release(&who);
		return;
	}
	d = diag_add(x->diags, "GT711", ckpt_stack_loc(x, k), path,
		     "checkpoint %s %s of %s is never written: no main "
		     "replica (replica id all zeros) saves it (%lld of the "
		     "%lld chunks have none): %s%s", object ? "object" : "chunk",
		     ch, key, never, chunks, ckpt_why(x, it->kind), every);
	diag_hint(d, "elect the writers of GTP-sharded pieces over the "
		  "GTP-excluded dp_cp group (gtplan.stack."
		  "sharded_replica_group: dp_cp) and fold the GTP rank "
		  "into the replica id of GTP-replicated tensors");
}

/* Checks one item on stage st (first layer `layer`, `nl` layers alike):
 * counts main replicas per chunk and reports the first bad chunk. Adds
 * this stage's main entries to *shards; reports only when `report`.
 * Returns -1 when out of memory. */
static int check_item(struct ckpt_ctx *x, const struct ckpt_item *it,
		      long long st, long long layer, long long nl, int report,
		      long long *shards)
{
	const struct plan *p = x->p;
	int object = it->kind == CKPT_RNG || it->kind == CKPT_LOADER;
	long long n, bad = -1, twice = 0, never = 0, lo = 0, hi;
	struct ckpt_entry e;

	if ((n = count_claims(x, it, st, &e)) < 0)
		return -1;
	hi = n;
	if (it->kind == CKPT_RNG) { /* this stage's row of the (pp, tp) grid */
		lo = st * p->tp;
		hi = lo + p->tp;
	} else if (it->kind == CKPT_LOADER && st) {
		lo = hi = 0; /* saved by stage 0 */
	}
	for (long long i = lo; i < hi; i++) {
		*shards += (x->cnt[i] > 0 ? 1 : 0) * (object ? 1 : nl);
		if (x->cnt[i] > 1 && !twice++ && bad < 0)
			bad = i;
		if (x->cnt[i] == 0 && !never++ && bad < 0)
			bad = i;
	}
	if (bad >= 0 && report)
		report_item(x, it, st, layer, nl, &e, bad, never, hi - lo);
	return 0;
}

/* The items of one checkpoint: the model's tensors (it[0..n_tensors), of
 * which n_layer per layer) then its objects (to n), and the experts'. */
struct items {
	struct ckpt_item it[MODEL_MAX_WEIGHTS + 8];
	size_t n, n_tensors, n_layer;
	struct ckpt_item ex[MODEL_MAX_WEIGHTS];
	size_t n_ex;
};

/* The items of the checkpoint of m (layers > 0: its tensors, ckpt.h): the
 * experts where the expert grid exists and EP divides them (as gtplan
 * ckpt, sim/reshard.c, plans them). Each layer's tensors, the objects and
 * the experts have stage -1; the embedding is saved on the first stage,
 * the output layer and the final norm on the last. */
static void items_of(const struct plan *p, const struct model_shape *m,
		     long long layers, struct items *v)
{
	struct ckpt_tensor t[CKPT_MAX_TENSORS];
	int experts = m->num_moe_experts > 0 && p->expert_grid_ok &&
		      p->ep > 0 && m->num_moe_experts % p->ep == 0 &&
		      p->expert.world == p->world;
	size_t nt = layers > 0 ? ckpt_tensors(m, experts, t) : 0;
	long long vdiv = p->set.vocab_divisor ? p->set.vocab_divisor :
			 m->make_vocab_size_divisible_by;
	static const struct { enum ckpt_kind kind; const char *name; } obj[] = {
		{ CKPT_RNG, "rng_state" }, { CKPT_LOADER, "dataloader_state" },
	};

	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < nt; i++) {
		int expert = t[i].part == CKPT_PART_EXPERT ||
			     t[i].part == CKPT_PART_EXPERT_BIAS;
		struct ckpt_item *e = expert ? &v->ex[v->n_ex++] :
				      &v->it[v->n++];

		e->kind = t[i].kind;
		snprintf(e->name, sizeof(e->name), "%s", t[i].key);
		e->rows = t[i].rows;
		e->cols = t[i].cols;
		e->stage = t[i].part == CKPT_PART_FIRST ? 0 :
			   t[i].part == CKPT_PART_LAST ? p->pp - 1 : -1;
		e->vdiv = t[i].kind == CKPT_VOCAB ? vdiv : 0;
		v->n_layer += !expert && e->stage < 0;
	}
	v->n_tensors = v->n;
	for (size_t i = 0; i < 2; i++, v->n++) {
		v->it[v->n].kind = obj[i].kind;
		snprintf(v->it[v->n].name, sizeof(v->it[v->n].name), "%s",
			 obj[i].name);
		v->it[v->n].stage = -1;
	}
}

/* The optimizer's layout: Megatron's default dp_reshardable when not
 * said; without the distributed optimizer every rank keeps the whole state
 * of its pieces, saved in model space under the model's replica ids, as
 * fully_reshardable is. Returns whether the optimizer is distributed. */
static int opt_layout(const struct plan *p, const struct stack *s,
		      struct ckpt_ctx *x, struct ckpt_summary *out)
{
	int dist = p->set.distributed_optimizer;

	if (x->opt == STACK_OPT_UNSET)
		x->opt = STACK_OPT_DP_RESHARDABLE;
	if (!dist)
		x->opt = STACK_OPT_FULLY_RESHARDABLE;
	out->opt_format = dist ? stack_opt_format_name(x->opt) :
		"not_distributed";
	out->opt_format_set = s->opt_format != STACK_OPT_UNSET;
	return dist;
}

/* GT735: the save itself aborts when the stack cannot write the format. */
static void check_opt_format(const struct plan *p, const struct stack *s,
			     const struct model_shape *m,
			     struct diag_list *diags)
{
	char why_not[256];
	struct diag *d;

	if (s->opt_format != STACK_OPT_FULLY_RESHARDABLE ||
	    ckpt_fully_reshardable_ok(p, s, m, why_not, sizeof(why_not)))
		return;
	d = diag_add(diags, "GT735", s->loc[STACK_OPT_FORMAT],
		     "gtplan.stack.optimizer_ckpt_format",
		     "the optimizer state cannot be saved as "
		     "fully_reshardable: %s", why_not);
	diag_hint(d, "save dp_reshardable (gtplan.stack."
		  "optimizer_ckpt_format: dp_reshardable), or use a "
		  "Megatron-LM with PR #7162 and no fused projections "
		  "or native-FP8 weights under GTP");
}

/* One pipeline stage st (nl layers from `first`): its model items, the
 * optimizer's, the experts' (*xrep: report them, on their first stage),
 * then writers and bytes per rank. Findings only with `on`. */
static int check_stage(struct ckpt_ctx *x, const struct model_shape *m,
		       const struct items *v, struct ckpt_bytes_memo *memo,
		       long long st, long long first, long long nl, int on,
		       int dist, int *xrep, struct ckpt_summary *out)
{
	const struct plan *p = x->p;
	long long nmoe = v->n_ex ? model_moe_layers(m, first, nl) : 0;
	long long xl = nmoe ? ckpt_first_moe(m, first, nl) : first;
	int rc = 0;

	for (size_t i = 0; i < v->n && rc == 0; i++) {
		const struct ckpt_item *it = &v->it[i];

		if (i < v->n_tensors && !mult(it, st, nl))
			continue;
		/* each item is reported once: on stage 0. With EP > 1
		 * Megatron keys the RNG state (pp, tp, dp_cp rank), replica
		 * id 0: the framework rule GT640 reports that form of the
		 * collision. */
		int report = on && (st == 0 || it->stage >= 0) &&
			!(it->kind == CKPT_RNG && p->ep > 1);

		rc = check_item(x, it, st, first, i < v->n_tensors ?
				mult(it, st, nl) : nl, report, &out->shards);
	}
	if (rc == 0)
		rc = ckpt_check_opt(x, v->it, v->n_tensors, st, first, nl, on,
				    out);
	for (size_t i = 0; i < v->n_ex && nmoe && rc == 0; i++)
		rc = ckpt_check_expert(x, &v->ex[i], st, xl, nmoe, *xrep,
				       &out->shards);
	if (rc == 0)
		rc = ckpt_check_expert_opt(x, v->ex, v->n_ex, st, xl, nmoe,
					   *xrep, out);
	if (nmoe)
		*xrep = 0;
	if (rc == 0)
		ckpt_stage_bytes(x, memo, v->it, v->n, v->n_tensors, v->ex,
				 v->n_ex, st, nl, nmoe, dist, out);
	return rc;
}

int ckpt_check(const struct plan *p, const struct cfg_node *root,
	       const struct model_shape *m, const struct stack *s,
	       struct ckpt_summary *out, struct diag_list *diags)
{
	struct items v;
	struct ckpt_bytes_memo *memo;
	long long layers = m->known ? m->num_layers : 0, first = 0;
	/* Findings only when the run saves checkpoints (as GT640 does); the
	 * summary is computed either way. */
	int on = p->set.checkpointing, dist, xrep = on, rc = 0;

	memset(out, 0, sizeof(*out));
	if (!p->grid_ok || p->world <= 0 || p->pp <= 0)
		return 0;
	items_of(p, m, layers, &v);

	struct ckpt_ctx x = { p, root, s, diags, NULL, 0, s->opt_format, 0 };

	x.experts = v.n_ex ? m->num_moe_experts : 0;
	dist = opt_layout(p, s, &x, out);
	if (!(memo = ckpt_memo_new(p, x.opt)))
		return -1;
	if (on && dist)
		check_opt_format(p, s, m, diags);
	out->keys = layers * (long long)v.n_layer +
		    (long long)(v.n_tensors - v.n_layer) + 1 + p->lanes;
	if (v.n_ex)
		out->keys += (long long)v.n_ex * model_moe_layers(m, 0, layers);
	for (long long st = 0; st < p->pp && rc == 0; st++) {
		long long nl = layers / p->pp + (st < layers % p->pp);

		rc = check_stage(&x, m, &v, memo, st, first, nl, on, dist,
				 &xrep, out);
		ckpt_memo_clear(memo);
		first += nl;
	}
	free(x.cnt);
	ckpt_memo_free(memo);
	out->valid = rc == 0;
	return rc;
}
