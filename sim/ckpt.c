/*
 * ckpt: the checkpoint plan and its validation (see ckpt.h).
 */
#include "ckpt.h"

#include <stdlib.h>
#include <string.h>

#include "model.h"

#define B(a) (1u << (a))
#define CKPT_LIST 4 /* claimants named in a finding */

static long long round_up(long long x, long long m)
{
	return m > 0 ? (x + m - 1) / m * m : x;
}

static long long clamp(long long x, long long lo, long long hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

static long long rank_in(const struct lay_grid *grid, unsigned axes,
			 const long long coord[LAY_NAXES])
{
	long long idx, in;

	lay_group_of_coords(grid, axes, coord, &idx, &in);
	return in;
}

/* The entry on `grid` (the dense grid, or the expert grid whose TP, GTP
 * and DP axes are ETP, EG and EDP). `slice`: the rows of one TP slice of
 * a column-parallel weight (0: rows / TP rounded up; the vocabulary's
 * padded / TP). */
static void entry_on(const struct plan *p, const struct lay_grid *grid,
		     const struct stack *s, enum ckpt_kind k, long long rows,
		     long long cols, long long pad, long long slice,
		     const long long coord[LAY_NAXES], struct ckpt_entry *e)
{
	long long tp = grid->size[LAY_TP], g = grid->size[LAY_GTP];
	long long t = coord[LAY_TP], gi = coord[LAY_GTP];
	long long dp_cp = rank_in(grid, B(LAY_CP) | B(LAY_DP), coord);
	/* the writer of a GTP-sharded piece: elected over the GTP-excluded
	 * dp_cp group (notes 2.4), or wrongly over dp_cp_gtp */
	long long writer = s->writer_dp_cp_gtp ?
		rank_in(grid, B(LAY_CP) | B(LAY_DP) | B(LAY_GTP), coord) :
		dp_cp;
	long long l, lp, sz;

	memset(e, 0, sizeof(*e));
	if (g < 1)
		g = 1;
	if (pad < 1)
		pad = 1;
	e->frag[0] = e->frag[1] = 1;
	switch (k) {
	case CKPT_COLUMN: /* (0, t*G + g, TP*G) */
	case CKPT_VOCAB:
		l = slice > 0 ? slice : (rows + tp - 1) / tp;
		lp = round_up(l, g * pad);
		sz = lp / g;
		e->global[0] = rows;
		e->global[1] = cols;
		e->frag[0] = tp * g;
		e->chunk[0] = t * g + gi;
		e->local[0] = sz;
		e->local[1] = cols;
		e->first_row = t * l + gi * sz;
		e->real_rows = clamp(l - gi * sz, 0, sz);
		/* rows past the logical end (the padded vocabulary) */
		e->real_rows = clamp(rows - e->first_row, 0, e->real_rows);
		e->replica[2] = writer;
		break;
	case CKPT_ROW: /* (0, g, G) and (1, t, TP) */
		lp = round_up(rows, g * pad);
		sz = lp / g;
		e->global[0] = rows;
		e->global[1] = cols;
		e->frag[0] = g;
		e->frag[1] = tp;
		e->chunk[0] = gi;
		e->chunk[1] = t;
		e->local[0] = sz;
		e->local[1] = cols / tp;
		e->first_row = gi * sz;
		e->real_rows = clamp(rows - gi * sz, 0, sz);
		e->replica[2] = writer;
		break;
	case CKPT_NORM:
		e->global[0] = e->local[0] = rows;
		e->global[1] = e->local[1] = 1;
		e->real_rows = rows;
		if (s->replica_dp_cp) { /* vanilla: (0, t, GTP-excluded dp_cp) */
			e->replica[1] = t;
			e->replica[2] = dp_cp;
		} else { /* g folded into the TP slot */
			e->replica[1] = t * g + gi;
			e->replica[2] = dp_cp;
		}
		break;
	case CKPT_RNG: /* (pp, tp) object, replica = dp_cp rank */
		e->global[0] = e->frag[0] = p->pp;
		e->global[1] = e->frag[1] = tp;
		e->chunk[0] = coord[LAY_PP];
		e->chunk[1] = t;
		e->local[0] = e->local[1] = 1;
		e->replica[2] = s->rng_dp_cp ? dp_cp :
			rank_in(grid, B(LAY_CP) | B(LAY_DP) | B(LAY_GTP), coord);
		break;
	case CKPT_LOADER: /* one object per lane, saved by its first rank */
		e->global[0] = e->frag[0] = p->lanes;
		e->chunk[0] = rank_in(grid, B(LAY_GTP) | B(LAY_DP), coord);
		e->local[0] = e->local[1] = 1;
		e->global[1] = 1;
		e->replica[0] = coord[LAY_PP];
		e->replica[1] = t;
		e->replica[2] = coord[LAY_CP];
		break;
	default:
		break;
	}
	e->main = !e->replica[0] && !e->replica[1] && !e->replica[2];
}

void ckpt_entry_of(const struct plan *p, const struct stack *s,
		   enum ckpt_kind k, long long rows, long long cols,
		   long long pad, const long long coord[LAY_NAXES],
		   struct ckpt_entry *e)
{
	entry_on(p, &p->dense, s, k, rows, cols, pad, 0, coord, e);
}

void ckpt_expert_entry_of(const struct plan *p, const struct stack *s,
			  enum ckpt_kind k, long long rows, long long cols,
			  long long pad, const long long coord[LAY_NAXES],
			  struct ckpt_entry *e)
{
	entry_on(p, &p->expert, s, k, rows, cols, pad, 0, coord, e);
}

long long ckpt_padded_vocab(long long vocab, long long divisor, long long tp)
{
	return round_up(vocab, (divisor > 0 ? divisor : 128) * tp);
}

void ckpt_vocab_entry_of(const struct plan *p, const struct stack *s,
			 long long vocab, long long divisor, long long hidden,
			 const long long coord[LAY_NAXES],
			 struct ckpt_entry *e)
{
	entry_on(p, &p->dense, s, CKPT_VOCAB, vocab, hidden, 1,
		 ckpt_padded_vocab(vocab, divisor, p->tp) / p->tp, coord, e);
}

int ckpt_fully_reshardable_ok(const struct plan *p, const struct stack *s,
			      const struct model_shape *m,
			      const struct cfg_node *root, char *why,
			      size_t len)
{
	int on = 0, fp8 = 0;

	why[0] = '\0';
	if (p->gtp <= 1 && p->egtp <= 1)
		return 1;
	if (!s->mlm_7162) {
		snprintf(why, len, "under GTP (G %lld) a Megatron-LM without PR "
			 "#7162 can neither write nor read it (the save stops "
			 "matching grad-buffer params to their GTP checkpoint "
			 "entries)", p->gtp > 1 ? p->gtp : p->egtp);
		return 0;
	}
	if (cfg_bool(root, "policy.megatron_cfg.fp8_cfg.enabled", &on) == 1 &&
	    on && cfg_bool(root, "policy.megatron_cfg.fp8_cfg.fp8_param",
			   &fp8) == 1 && fp8) {
		snprintf(why, len, "under GTP Megatron-LM refuses it for "
			 "native-FP8 weights (policy.megatron_cfg.fp8_cfg."
			 "fp8_param: their checkpoint entries are dequantized "
			 "copies)");
		return 0;
	}
	if ((m->known && m->gated_linear_unit) ||
	    strchr(m->hybrid_layer_pattern, 'M')) {
		snprintf(why, len, "under GTP Megatron-LM refuses it for fused "
			 "projections (%s: gathered checkpoint factories)",
			 m->known && m->gated_linear_unit ?
			 "the gated linear_fc1 [gate|up]" :
			 "the SSM in_proj");
		return 0;
	}
	return 1;
}

/* ---- validation --------------------------------------------------------- */

struct ckpt_item {
	enum ckpt_kind kind;
	char name[96];         /* layer-relative name, or the object key */
	long long rows, cols;
};

struct ctx {
	const struct plan *p;
	const struct cfg_node *root;
	const struct stack *s;
	struct diag_list *diags;
	long long *cnt;        /* per chunk of the current key */
	long long n_cnt;
};

/* Coordinates of the i-th rank of stage st (every axis but pp, in the
 * grid's order). */
static void stage_coords(const struct plan *p, long long st, long long i,
			 long long c[LAY_NAXES])
{
	for (int a = 0; a < LAY_NAXES; a++) {
		enum lay_axis ax = p->dense.order.axis[a];

		if (ax == LAY_PP)
			continue;
		c[ax] = i % p->dense.size[ax];
		i /= p->dense.size[ax];
	}
	c[LAY_PP] = st;
}

static long long chunk_index(const struct ckpt_entry *e)
{
	return e->chunk[0] * e->frag[1] + e->chunk[1];
}

static struct diag_loc stack_loc(const struct ctx *x, int key)
{
	const struct cfg_node *n;

	if (x->s->loc[key].src >= 0)
		return x->s->loc[key];
	n = cfg_path(x->root, "gtplan.stack");
	return n ? n->loc : DIAG_NOLOC;
}

static const char *why(const struct ctx *x, enum ckpt_kind k)
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

/* Lists the ranks claiming chunk `want` of kind k on stage st. */
static void claimants(const struct ctx *x, const struct ckpt_item *it,
		      long long st, long long want, char *buf, size_t len)
{
	const struct plan *p = x->p;
	long long per = p->world / p->pp, n = 0, c[LAY_NAXES];
	struct ckpt_entry e;
	size_t at = 0;

	buf[0] = 0;
	for (long long i = 0; i < per; i++) {
		stage_coords(p, st, i, c);
		ckpt_entry_of(p, x->s, it->kind, it->rows, it->cols, 1, c, &e);
		if (!e.main || chunk_index(&e) != want)
			continue;
		if (n++ < CKPT_LIST && at < len)
			at += (size_t)snprintf(buf + at, len - at,
				"%srank %lld (tp %lld, cp %lld, gtp %lld, dp "
				"%lld, pp %lld)", n > 1 ? ", " : "",
				lay_rank(&p->dense, c), c[LAY_TP], c[LAY_CP],
				c[LAY_GTP], c[LAY_DP], c[LAY_PP]);
	}
	if (n > CKPT_LIST && at < len)
		snprintf(buf + at, len - at, " and %lld more", n - CKPT_LIST);
}

static void key_of(const struct ckpt_item *it, long long layer, char *buf,
		   size_t len)
{
	if (it->kind == CKPT_RNG || it->kind == CKPT_LOADER)
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

/* Checks one item on stage st (first layer `layer`, `nl` layers alike):
 * counts main replicas per chunk and reports the first bad chunk. Adds
 * this stage's main entries to *shards; reports only when `report`. Returns -1 when out of memory. */
static int check_item(struct ctx *x, const struct ckpt_item *it, long long st,
		      long long layer, long long nl, int report,
		      long long *shards)
{
	const struct plan *p = x->p;
	long long per = p->world / p->pp, c[LAY_NAXES], n, bad = -1;
	long long twice = 0, never = 0;
	struct ckpt_entry e;

	stage_coords(p, st, 0, c);
	ckpt_entry_of(p, x->s, it->kind, it->rows, it->cols, 1, c, &e);
	n = e.frag[0] * e.frag[1];
	if (n > x->n_cnt) {
		long long *v = realloc(x->cnt, (size_t)n * sizeof(*v));

		if (!v)
			return -1;
		x->cnt = v;
		x->n_cnt = n;
	}
	memset(x->cnt, 0, (size_t)n * sizeof(*x->cnt));
	for (long long i = 0; i < per; i++) {
		stage_coords(p, st, i, c);
		ckpt_entry_of(p, x->s, it->kind, it->rows, it->cols, 1, c, &e);
		if (e.main)
			x->cnt[chunk_index(&e)]++;
	}
	int object = it->kind == CKPT_RNG || it->kind == CKPT_LOADER;
	long long lo = 0, hi = n;

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
	if (bad < 0 || !report)
		return 0;

	char key[160], ch[64], who[512];
	struct diag *d;
	int k = it->kind == CKPT_RNG ? STACK_RNG :
		it->kind == CKPT_NORM ? STACK_REPLICA : STACK_WRITER;
	const char *path = it->kind == CKPT_RNG ?
		"gtplan.stack.rng_state_group" : it->kind == CKPT_NORM ?
		"gtplan.stack.replica_group" :
		"gtplan.stack.sharded_replica_group";

	key_of(it, layer, key, sizeof(key));
	chunk_text(it, &e, bad, ch, sizeof(ch));
	if (x->cnt[bad] > 1) {
		claimants(x, it, st, bad, who, sizeof(who));
		if (object)
			d = diag_add(x->diags, "GT712", stack_loc(x, k), path,
				     "duplicate checkpoint object key %s/shard_"
				     "%lld.%lld_%lld.%lld: %lld main replicas "
				     "save it (%s): %s", key, bad / e.frag[1],
				     bad % e.frag[1], e.frag[0], e.frag[1],
				     x->cnt[bad], who, why(x, it->kind));
		else
			d = diag_add(x->diags, "GT710", stack_loc(x, k), path,
				     "checkpoint chunk %s of %s claimed %lld "
				     "times by main replicas (%s): %s%s", ch,
				     key, x->cnt[bad], who, why(x, it->kind),
				     nl > 1 || p->pp > 1 ?
				     "; the same for every layer" : "");
		diag_hint(d, "elect the main replica over a group that "
			  "includes GTP: gtplan.stack.%s: dp_cp_gtp",
			  it->kind == CKPT_RNG ? "rng_state_group" :
			  "replica_group");
	} else {
		d = diag_add(x->diags, "GT711", stack_loc(x, k), path,
			     "checkpoint %s %s of %s is never written: no "
			     "main replica (replica id all zeros) saves it "
			     "(%lld of the %lld chunks have none): %s%s",
			     object ? "object" : "chunk", ch, key, never,
			     hi - lo, why(x, it->kind),
			     nl > 1 || p->pp > 1 ?
			     "; the same for every layer" : "");
		diag_hint(d, "elect the writers of GTP-sharded pieces over the "
			  "GTP-excluded dp_cp group (gtplan.stack."
			  "sharded_replica_group: dp_cp) and fold the GTP rank "
			  "into the replica id of GTP-replicated tensors");
	}
	return 0;
}

int ckpt_check(const struct plan *p, const struct cfg_node *root,
	       const struct model_shape *m, struct ckpt_summary *out,
	       struct diag_list *diags)
{
	struct ckpt_item it[MODEL_MAX_WEIGHTS + 4];
	struct model_weight w[MODEL_MAX_WEIGHTS];
	struct stack s;
	struct diag_list quiet;
	size_t n = 0, nw = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!p->grid_ok || p->world <= 0 || p->pp <= 0)
		return 0;
	diag_list_init(&quiet, diags->srcs);
	stack_read(root, &s, &quiet);
	diag_list_release(&quiet);

	long long layers = m->known ? m->num_layers : 0;
	int on = 0;

	/* Findings only when the run saves checkpoints (as GT640 does); the
	 * summary is computed either way. */
	if (cfg_bool(root, "checkpointing.enabled", &on) != 1)
		on = 0;

	if (layers > 0)
		nw = model_layer_weights(m, w, MODEL_MAX_WEIGHTS);
	for (size_t i = 0; i < nw; i++) {
		if (w[i].split == SPLIT_NONE)
			continue;
		it[n].kind = w[i].split == SPLIT_COLUMN ? CKPT_COLUMN : CKPT_ROW;
		snprintf(it[n].name, sizeof(it[n].name), "%s%s.weight",
			 strcmp(w[i].name, "linear_qkv") == 0 ||
			 strcmp(w[i].name, "linear_proj") == 0 ?
			 "self_attention." : "mlp.", w[i].name);
		it[n].rows = w[i].rows;
		it[n].cols = w[i].cols;
		n++;
	}
	if (nw) {
		static const char *const norms[] = {
			"input_layernorm.weight", "pre_mlp_layernorm.weight"
		};
		for (size_t i = 0; i < 2; i++, n++) {
			it[n].kind = CKPT_NORM;
			snprintf(it[n].name, sizeof(it[n].name), "%s", norms[i]);
			it[n].rows = m->hidden_size;
			it[n].cols = 1;
		}
	}
	size_t n_tensors = n;

	it[n].kind = CKPT_RNG;
	snprintf(it[n].name, sizeof(it[n].name), "rng_state");
	it[n].rows = it[n].cols = 0;
	n++;
	it[n].kind = CKPT_LOADER;
	snprintf(it[n].name, sizeof(it[n].name), "dataloader_state");
	it[n].rows = it[n].cols = 0;
	n++;

	struct ctx x = { p, root, &s, diags, NULL, 0 };
	long long per = p->world / p->pp, c[LAY_NAXES], first = 0;

	out->keys = layers * (long long)n_tensors + 1 + p->lanes;
	for (long long st = 0; st < p->pp && rc == 0; st++) {
		long long nl = layers / p->pp + (st < layers % p->pp);

		for (size_t i = 0; i < n && rc == 0; i++) {
			if (i < n_tensors && nl == 0)
				continue;
			/* each item is reported once: on stage 0. With
			 * EP > 1 Megatron keys the RNG state (pp, tp, dp_cp
			 * rank), replica id 0: the framework rule GT640
			 * reports that form of the collision. */
			int report = on && st == 0 &&
				!(it[i].kind == CKPT_RNG && p->ep > 1);

			rc = check_item(&x, &it[i], st, first, nl, report,
					&out->shards);
		}
		/* writers and bytes per rank */
		for (long long r = 0; r < per && rc == 0; r++) {
			long long bytes = 0;
			int writes = 0;
			struct ckpt_entry e;

			stage_coords(p, st, r, c);
			for (size_t i = 0; i < n; i++) {
				ckpt_entry_of(p, &s, it[i].kind, it[i].rows,
					      it[i].cols, 1, c, &e);
				if (!e.main ||
				    (it[i].kind == CKPT_LOADER && st) ||
				    (i < n_tensors && nl == 0))
					continue;
				writes = 1;
				if (i < n_tensors)
					bytes += nl * e.real_rows * e.local[1] * 2;
			}
			out->writers += writes;
			if (bytes > out->max_rank_bytes)
				out->max_rank_bytes = bytes;
		}
		first += nl;
	}
	free(x.cnt);
	out->valid = rc == 0;
	return rc;
}
