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
	char name[96];         /* layer-relative name, or the full key */
	long long rows, cols;
	long long stage;       /* -1: one per layer (and the objects); else
				  the one stage that saves it */
	long long vdiv;        /* CKPT_VOCAB: make_vocab_size_divisible_by */
};

/* The entry of item `it` at coord c. */
static void item_entry(const struct plan *p, const struct stack *s,
		       const struct ckpt_item *it, const long long c[LAY_NAXES],
		       struct ckpt_entry *e)
{
	if (it->kind == CKPT_VOCAB)
		ckpt_vocab_entry_of(p, s, it->rows, it->vdiv, it->cols, c, e);
	else
		ckpt_entry_of(p, s, it->kind, it->rows, it->cols, 1, c, e);
}

/* How many keys of tensor item `it` stage st (nl layers) saves: nl for a
 * per-layer tensor, 1 on its own stage for the others. */
static long long mult(const struct ckpt_item *it, long long st, long long nl)
{
	return it->stage < 0 ? nl : it->stage == st;
}

struct ctx {
	const struct plan *p;
	const struct cfg_node *root;
	const struct stack *s;
	struct diag_list *diags;
	long long *cnt;        /* per chunk of the current key */
	long long n_cnt;
	enum stack_opt_format opt; /* the optimizer's layout (never UNSET) */
	long long experts;     /* E of each MoE layer; 0: no experts planned */
};

/* Coordinates of the i-th rank of stage st on grid g (every axis but pp,
 * in the grid's order). */
static void grid_stage_coords(const struct lay_grid *g, long long st,
			      long long i, long long c[LAY_NAXES])
{
	for (int a = 0; a < LAY_NAXES; a++) {
		enum lay_axis ax = g->order.axis[a];

		if (ax == LAY_PP)
			continue;
		c[ax] = i % g->size[ax];
		i /= g->size[ax];
	}
	c[LAY_PP] = st;
}

/* The same on the dense grid. */
static void stage_coords(const struct plan *p, long long st, long long i,
			 long long c[LAY_NAXES])
{
	grid_stage_coords(&p->dense, st, i, c);
}

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
		item_entry(p, x->s, it, c, &e);
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
	item_entry(p, x->s, it, c, &e);
	n = e.frag[0] * e.frag[1];
	if (n > x->n_cnt) {
		long long *v = realloc(x->cnt, (size_t)n * sizeof(*v));

		if (!v)
			return -1;
		x->cnt = v;
		x->n_cnt = n;
	}
	memset(x->cnt, 0, (size_t)n * sizeof(*x->cnt));
	if (it->kind == CKPT_LOADER) {
		for (long long i = 0; i < per; i++) {
			stage_coords(p, st, i, c);
			item_entry(p, x->s, it, c, &e);
			if (e.main)
				x->cnt[chunk_index(&e)]++;
		}
	} else {
		for (long long i = 0, v = compressed_visits(p); i < v; i++) {
			long long w = compressed_coords(p, st, i, c);

			item_entry(p, x->s, it, c, &e);
			if (e.main)
				x->cnt[chunk_index(&e)] += w;
		}
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
				     it->stage < 0 && (nl > 1 || p->pp > 1) ?
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
			     it->stage < 0 && (nl > 1 || p->pp > 1) ?
			     "; the same for every layer" : "");
		diag_hint(d, "elect the writers of GTP-sharded pieces over the "
			  "GTP-excluded dp_cp group (gtplan.stack."
			  "sharded_replica_group: dp_cp) and fold the GTP rank "
			  "into the replica id of GTP-replicated tensors");
	}
	return 0;
}

/* ---- optimizer state (seed 004; notes 1.6, 2.4) ------------------------ */

/* Each parameter element has OPT_STATES fp32 values in the distributed
 * optimizer: the main param, Adam's exp_avg and exp_avg_sq. The optimizer
 * shards them over the GTP-excluded dp_cp group (the one instance GTP
 * allows), F = CP x D ranks. */
#define OPT_STATES 3
#define OPT_BYTES 4
static const char *const opt_state[OPT_STATES] = {
	"fp32_param", "exp_avg", "exp_avg_sq"
};

/* Elements of range i of n elements cut in f equal ranges (the last
 * shorter). */
static long long range_len(long long n, long long f, long long i)
{
	long long sz = (n + f - 1) / f;

	return clamp(n - i * sz, 0, sz);
}

/* The model-space optimizer entry of tensor item `it` at coord c:
 * fully_reshardable keeps the weight's chunk and writer (its main
 * replica), padding excluded; fully_sharded_model_space cuts each piece's
 * elements into F ranges, one per dp_cp rank, a main replica where the
 * model entry is one up to DP (its replica id's DP slot is the range). */
static void opt_entry(const struct ctx *x, const struct ckpt_item *it,
		      const long long c[LAY_NAXES], long long *chunk,
		      long long *nchunks, int *main, long long *elems)
{
	const struct plan *p = x->p;
	long long f = p->cp * p->dp_replicate;
	long long dpcp = rank_in(&p->dense, B(LAY_CP) | B(LAY_DP), c);
	struct ckpt_entry e;

	item_entry(p, x->s, it, c, &e);
	*nchunks = e.frag[0] * e.frag[1];
	*chunk = chunk_index(&e);
	*elems = e.real_rows * e.local[1];
	if (x->opt == STACK_OPT_FULLY_RESHARDABLE) {
		*main = e.main;
		return;
	}
	*nchunks *= f;
	*chunk = *chunk * f + dpcp;
	*main = !e.replica[0] && !e.replica[1];
	*elems = range_len(*elems, f, dpcp);
}

/* The elements of the flat optimizer buffer of the rank at c on a stage
 * of nl layers (dp_reshardable): its local pieces, padding included, as
 * the grad buffer holds them. */
static long long opt_buffer(const struct ctx *x, const struct ckpt_item *it,
			    size_t n_tensors, long long st, long long nl,
			    const long long c[LAY_NAXES])
{
	struct ckpt_entry e;
	long long n = 0;

	for (size_t i = 0; i < n_tensors; i++) {
		item_entry(x->p, x->s, &it[i], c, &e);
		n += mult(&it[i], st, nl) * e.local[0] * e.local[1];
	}
	return n;
}

/* Reports the first bad chunk of an optimizer key (claimed `cnt` times,
 * 0 or more than 1). */
static void opt_report(const struct ctx *x, const char *key, long long chunk,
		       long long nchunks, long long cnt)
{
	struct diag *d;

	if (cnt > 1) {
		d = diag_add(x->diags, "GT710", x->s->loc[STACK_OPT_FORMAT],
			     "gtplan.stack.optimizer_ckpt_format",
			     "optimizer checkpoint chunk %lld of %lld of %s "
			     "claimed %lld times by main replicas (format %s)",
			     chunk, nchunks, key, cnt,
			     stack_opt_format_name(x->opt));
		diag_hint(d, "elect one writer per chunk: the model entry's "
			  "main replica, or one dp_cp rank per range");
	} else {
		d = diag_add(x->diags, "GT711", stack_loc(x, STACK_WRITER),
			     "gtplan.stack.sharded_replica_group",
			     "optimizer checkpoint chunk %lld of %lld of %s is "
			     "never written (format %s): %s", chunk, nchunks,
			     key, stack_opt_format_name(x->opt),
			     why(x, CKPT_COLUMN));
		diag_hint(d, "elect the writers of GTP-sharded pieces over the "
			  "GTP-excluded dp_cp group (gtplan.stack."
			  "sharded_replica_group: dp_cp)");
	}
}

/* Grows x->cnt to n zeroed counters. Returns -1 when out of memory. */
static int counters(struct ctx *x, long long n)
{
	if (n > x->n_cnt) {
		long long *v = realloc(x->cnt, (size_t)n * sizeof(*v));

		if (!v)
			return -1;
		x->cnt = v;
		x->n_cnt = n;
	}
	memset(x->cnt, 0, (size_t)n * sizeof(*x->cnt));
	return 0;
}

/* Validates the optimizer entries of stage st (nl layers from `layer`)
 * and counts its keys and main shards (each state alike: x OPT_STATES).
 * Returns -1 when out of memory. */
static int check_opt(struct ctx *x, const struct ckpt_item *it,
		     size_t n_tensors, long long st, long long layer,
		     long long nl, int report, struct ckpt_summary *out)
{
	const struct plan *p = x->p;
	long long per = p->world / p->pp, c[LAY_NAXES];
	long long f = p->cp * p->dp_replicate, n, tg = p->tp * p->gtp;
	long long any = 0;

	for (size_t j = 0; j < n_tensors; j++)
		any += mult(&it[j], st, nl);
	if (!any)
		return 0;
	if (x->opt == STACK_OPT_DP_RESHARDABLE) {
		/* one flat key per model-parallel rank (dp_group_idx = rank in
		 * the tp-gtp-pp group: every GTP peer its own key), F chunks:
		 * the dp_cp ranks */
		if (counters(x, tg * f))
			return -1;
		for (long long i = 0; i < per; i++) {
			stage_coords(p, st, i, c);
			x->cnt[(c[LAY_TP] * p->gtp + c[LAY_GTP]) * f +
			       rank_in(&p->dense, B(LAY_CP) | B(LAY_DP), c)]++;
		}
		out->opt_keys += OPT_STATES * tg;
		for (long long k = 0; k < tg * f; k++) {
			out->opt_shards += OPT_STATES * (x->cnt[k] > 0);
			if (x->cnt[k] != 1 && report && st == 0) {
				char key[128];

				long long mp = k / f; /* t * G + g */

				snprintf(key, sizeof(key), "optimizer."
					 "distributed.dp_group_idx_%lld.%s",
					 mp / p->gtp + p->tp * (mp % p->gtp +
					 p->gtp * st), opt_state[0]);
				opt_report(x, key, k % f, f, x->cnt[k]);
				report = 0;
			}
		}
		return 0;
	}
	for (size_t j = 0; j < n_tensors; j++) {
		long long chunk, elems, m = mult(&it[j], st, nl);
		int main;

		if (!m)
			continue;
		stage_coords(p, st, 0, c);
		opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
		if (counters(x, n))
			return -1;
		for (long long i = 0; i < per; i++) {
			stage_coords(p, st, i, c);
			opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
			if (main)
				x->cnt[chunk]++;
		}
		out->opt_keys += OPT_STATES * m;
		for (long long k = 0, rep = report && (it[j].stage >= 0 ||
						      st == 0); k < n; k++) {
			out->opt_shards += OPT_STATES * m * (x->cnt[k] > 0);
			if (x->cnt[k] != 1 && rep) {
				char key[192], mk[160];

				key_of(&it[j], layer, mk, sizeof(mk));
				snprintf(key, sizeof(key), "optimizer.state.%s.%s",
					 opt_state[0], mk);
				opt_report(x, key, k, n, x->cnt[k]);
				rep = 0;
			}
		}
	}
	return 0;
}

/* The optimizer bytes the rank at c writes on a stage of nl layers. */
static long long opt_bytes(const struct ctx *x, const struct ckpt_item *it,
			   size_t n_tensors, long long st, long long nl,
			   const long long c[LAY_NAXES])
{
	const struct plan *p = x->p;
	long long f = p->cp * p->dp_replicate, b = 0;

	if (x->opt == STACK_OPT_DP_RESHARDABLE)
		return OPT_STATES * OPT_BYTES *
			range_len(opt_buffer(x, it, n_tensors, st, nl, c), f,
				  rank_in(&p->dense, B(LAY_CP) | B(LAY_DP), c));
	for (size_t j = 0; j < n_tensors; j++) {
		long long chunk, n, elems;
		int main;

		opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
		if (main)
			b += OPT_STATES * OPT_BYTES * mult(&it[j], st, nl) *
				elems;
	}
	return b;
}

/* ---- experts (issue #4) ------------------------------------------------- */

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

static long long local_experts(const struct ctx *x)
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

static void expert_entry(const struct ctx *x, const struct ckpt_item *it,
			 const long long c[LAY_NAXES], struct ckpt_entry *e)
{
	ckpt_expert_entry_of(x->p, x->s, it->kind, it->rows, it->cols, 1, c,
			     e);
}

/* The first MoE layer of [first, first + nl) (the key a report names). */
static long long first_moe(const struct model_shape *m, long long first,
			   long long nl)
{
	for (long long l = first; l < first + nl; l++)
		if (model_moe_layers(m, l, 1))
			return l;
	return first;
}

static const char *why_expert(const struct ctx *x, enum ckpt_kind k)
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
static void expert_chunk_text(const struct ctx *x, const struct ckpt_item *it,
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
static long long expert_claimants(const struct ctx *x, const struct ckpt_item *it,
			     long long st, long long want, long long nch,
			     int main_only, char *buf, size_t len)
{
	const struct plan *p = x->p;
	long long per = p->expert.world / p->pp, n = 0, c[LAY_NAXES];
	struct ckpt_entry e;
	size_t at = 0;

	buf[0] = 0;
	for (long long i = 0; i < per; i++) {
		grid_stage_coords(&p->expert, st, i, c);
		expert_entry(x, it, c, &e);
		if ((main_only && !e.main) ||
		    c[LAY_EP] * nch + chunk_index(&e) != want)
			continue;
		if (n++ < CKPT_LIST && at < len)
			at += (size_t)snprintf(buf + at, len - at,
				"%srank %lld (etp %lld, ep %lld, egtp %lld, edp "
				"%lld, pp %lld)", n > 1 ? ", " : "",
				lay_rank(&p->expert, c), c[LAY_TP], c[LAY_EP],
				c[LAY_GTP], c[LAY_DP], c[LAY_PP]);
	}
	if (n > CKPT_LIST && at < len)
		snprintf(buf + at, len - at, " and %lld more", n - CKPT_LIST);
	return n;
}

/* Checks expert weight `it` on stage st (nmoe MoE layers, the first one
 * `layer`): every chunk of every expert claimed by exactly one main
 * replica. Adds the main entries to *shards; reports the first bad chunk
 * when `report`. Returns -1 when out of memory. */
static int check_expert(struct ctx *x, const struct ckpt_item *it,
			long long st, long long layer, long long nmoe,
			int report, long long *shards)
{
	const struct plan *p = x->p;
	long long per = p->expert.world / p->pp, c[LAY_NAXES], nch, n;
	long long nloc = local_experts(x), bad = -1, never = 0;
	struct ckpt_entry e;

	grid_stage_coords(&p->expert, st, 0, c);
	expert_entry(x, it, c, &e);
	nch = e.frag[0] * e.frag[1];
	n = p->ep * nch;
	if (counters(x, n))
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

	char key[160], ch[192], who[512];
	const char *every = nmoe > 1 || p->pp > 1 ?
		"; the same for every MoE layer" : "";
	struct diag *d;

	key_of(it, layer, key, sizeof(key));
	expert_chunk_text(x, it, &e, bad, ch, sizeof(ch));
	long long held = expert_claimants(x, it, st, bad, nch,
					  x->cnt[bad] > 1, who, sizeof(who));
	int norm = it->kind == CKPT_NORM;
	int sk = norm ? STACK_REPLICA : STACK_WRITER;
	const char *path = norm ? "gtplan.stack.replica_group" :
		"gtplan.stack.sharded_replica_group";

	if (x->cnt[bad] > 1) {
		d = diag_add(x->diags, "GT710", stack_loc(x, sk), path,
			     "checkpoint chunk %s of %s claimed %lld times by "
			     "main replicas (%s): %s%s", ch, key, x->cnt[bad],
			     who, why_expert(x, it->kind), every);
		if (norm)
			diag_hint(d, "fold the expert GTP rank into the replica "
				  "id: gtplan.stack.replica_group: dp_cp_gtp");
		else
			diag_hint(d, "elect one writer per expert piece over "
				  "the GTP-excluded expert data-parallel group "
				  "(edp): gtplan.stack.sharded_replica_group: "
				  "dp_cp");
	} else {
		d = diag_add(x->diags, "GT711", stack_loc(x, sk), path,
			     "checkpoint chunk %s of %s is never written: no "
			     "main replica (replica id all zeros) saves it, "
			     "though %s hold%s it (%lld of the %lld (EP "
			     "rank, piece) pairs have none): %s%s", ch, key,
			     who, held == 1 ? "s" : "", never, n,
			     why_expert(x, it->kind), every);
		diag_hint(d, "elect the writers of expert pieces over the "
			  "GTP-excluded expert data-parallel group (gtplan."
			  "stack.sharded_replica_group: dp_cp)");
	}
	return 0;
}

/* The model-space optimizer entry of expert weight it at expert-grid
 * coord c (see opt_entry; F = EDP); chunk and nchunks per slot. */
static void expert_opt_entry(const struct ctx *x, const struct ckpt_item *it,
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
static int check_expert_opt(struct ctx *x, const struct ckpt_item *it,
			    size_t n_ex, long long st, long long layer,
			    long long nmoe, int report,
			    struct ckpt_summary *out)
{
	const struct plan *p = x->p;
	long long per = p->expert.world / p->pp, c[LAY_NAXES], n;
	long long f = expert_f(p), nloc = local_experts(x);

	if (!nmoe || !n_ex)
		return 0;
	if (x->opt == STACK_OPT_DP_RESHARDABLE) {
		long long nmp = per / f; /* ETP x EP x EG flat keys */

		if (counters(x, nmp * f))
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
					 k / f + nmp * st, opt_state[0]);
				opt_report(x, key, k % f, f, x->cnt[k]);
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
		if (counters(x, p->ep * n))
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

				key_of(&it[j], layer, mk, sizeof(mk));
				snprintf(key, sizeof(key), "optimizer.state.%s.%s",
					 opt_state[0], mk);
				/* the chunk of the slot's first expert */
				opt_report(x, key, k / n * nloc * n + k % n,
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
static void expert_bytes(const struct ctx *x, const struct ckpt_item *it,
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
		el = e.real_rows * e.local[1];
		*read += k * el * 2;
		buf += k * e.local[0] * e.local[1];
		if (e.main) {
			*weight += k * el * 2;
			*writes = 1;
		}
		if (x->opt == STACK_OPT_DP_RESHARDABLE)
			continue;
		expert_opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
		if (main)
			ob += OPT_STATES * OPT_BYTES * k * elems;
	}
	if (x->opt == STACK_OPT_DP_RESHARDABLE)
		ob = OPT_STATES * OPT_BYTES * range_len(buf, f, dp);
	if (ob > 0 || (x->opt == STACK_OPT_DP_RESHARDABLE && buf > 0))
		*writes = 1; /* dp_reshardable: every rank saves its range */
	*opt += ob;
	*read += OPT_STATES * OPT_BYTES * (dist ? range_len(buf, f, dp) : buf);
}

/* ---- bytes per rank ------------------------------------------------------ */

/* What one rank of a stage writes and reads of the model's tensors, and its
 * flat optimizer buffer (dp_reshardable's range of it is the caller's: it
 * depends on the rank's dp_cp position), or its optimizer bytes in the
 * other formats. */
struct rank_bytes {
	int valid, writes;
	long long bytes, read, buf, ob;
};

/* A rank's entries depend on its dp coordinate only through rank_in's zero
 * test, so ranks that differ only in dp >= 1 write and read alike: the
 * bytes are kept per (coordinates but dp and pp, dp > 0), which turns the
 * per-rank pass at 1M ranks from W/PP x keys entries into TP x CP x G x 2
 * x keys. Not for fully_sharded_model_space, whose optimizer ranges are cut
 * along dp too (the memo then keeps only the model's bytes). */
struct bytes_memo {
	struct rank_bytes *v;
	long long n;
	int opt_too;
};

static struct bytes_memo *memo_new(const struct plan *p,
				   enum stack_opt_format opt)
{
	struct bytes_memo *m = calloc(1, sizeof(*m));
	long long d = p->dense.size[LAY_DP];

	if (!m)
		return NULL;
	m->n = p->world / p->pp / (d > 0 ? d : 1) * 2;
	m->v = calloc((size_t)m->n, sizeof(*m->v));
	m->opt_too = opt != STACK_OPT_FULLY_SHARDED_MODEL_SPACE;
	if (!m->v) {
		free(m);
		return NULL;
	}
	return m;
}

static void memo_clear(struct bytes_memo *m)
{
	if (m)
		memset(m->v, 0, (size_t)m->n * sizeof(*m->v));
}

static void memo_free(struct bytes_memo *m)
{
	if (m)
		free(m->v);
	free(m);
}

static struct rank_bytes *memo_slot(const struct plan *p,
				    struct bytes_memo *m,
				    const long long c[LAY_NAXES])
{
	long long i = 0;

	for (int a = 0; a < LAY_NAXES; a++)
		if (a != LAY_DP && a != LAY_PP)
			i = i * p->dense.size[a] + c[a];
	i = i * 2 + (c[LAY_DP] > 0);
	return i < m->n ? &m->v[i] : NULL;
}

static void rank_bytes_of(const struct ctx *x, struct bytes_memo *memo,
			  const struct ckpt_item *it, size_t n,
			  size_t n_tensors, long long st, long long nl,
			  const long long c[LAY_NAXES], struct rank_bytes *out)
{
	struct rank_bytes *slot = memo ? memo_slot(x->p, memo, c) : NULL;
	struct ckpt_entry e;

	if (slot && slot->valid) {
		*out = *slot;
		if (!memo->opt_too)
			out->ob = opt_bytes(x, it, n_tensors, st, nl, c);
		return;
	}
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		long long k = i < n_tensors ? mult(&it[i], st, nl) : 1;

		item_entry(x->p, x->s, &it[i], c, &e);
		if (i < n_tensors)
			out->read += k * e.real_rows * e.local[1] * 2;
		if (!e.main || !k || (it[i].kind == CKPT_LOADER && st))
			continue;
		out->writes = 1;
		if (i < n_tensors)
			out->bytes += k * e.real_rows * e.local[1] * 2;
	}
	out->buf = opt_buffer(x, it, n_tensors, st, nl, c);
	out->ob = x->opt == STACK_OPT_DP_RESHARDABLE ? 0 :
		opt_bytes(x, it, n_tensors, st, nl, c);
	out->valid = 1;
	if (slot)
		*slot = *out;
}

int ckpt_check(const struct plan *p, const struct cfg_node *root,
	       const struct model_shape *m, struct ckpt_summary *out,
	       struct diag_list *diags)
{
	struct ckpt_item it[MODEL_MAX_WEIGHTS + 8];
	struct model_weight w[MODEL_MAX_WEIGHTS];
	struct stack s;
	struct diag_list quiet;
	size_t n = 0, nw = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(it, 0, sizeof(it));
	for (size_t i = 0; i < sizeof(it) / sizeof(*it); i++)
		it[i].stage = -1;
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
		/* once per model: the vocab-parallel embedding on the first
		 * stage, the untied output layer and the final norm on the
		 * last */
		long long vdiv = 0;

		if (cfg_int(root, "policy.megatron_cfg."
			    "make_vocab_size_divisible_by", &vdiv) != 1 ||
		    vdiv <= 0)
			vdiv = m->make_vocab_size_divisible_by;
		it[n] = (struct ckpt_item){ CKPT_VOCAB,
			"embedding.word_embeddings.weight", m->vocab_size,
			m->hidden_size, 0, vdiv };
		n++;
		if (!m->share_embeddings_and_output_weights) {
			it[n] = (struct ckpt_item){ CKPT_VOCAB,
				"output_layer.weight", m->vocab_size,
				m->hidden_size, p->pp - 1, vdiv };
			n++;
		}
		it[n] = (struct ckpt_item){ CKPT_NORM,
			"decoder.final_layernorm.weight", m->hidden_size, 1,
			p->pp - 1, 0 };
		n++;
	}
	size_t n_tensors = n, n_layer = 0, n_ex = 0;
	struct ckpt_item ex[MODEL_MAX_WEIGHTS];

	/* the experts of every MoE layer, where the expert grid exists and
	 * EP divides them (as gtplan ckpt, sim/reshard.c, plans them) */
	memset(ex, 0, sizeof(ex));
	if (layers > 0 && m->num_moe_experts > 0 && p->expert_grid_ok &&
	    p->ep > 0 && m->num_moe_experts % p->ep == 0 &&
	    p->expert.world == p->world) {
		nw = model_expert_weights(m, w, MODEL_MAX_WEIGHTS);
		for (size_t i = 0; i < nw; i++) {
			if (w[i].split == SPLIT_NONE)
				continue;
			ex[n_ex].kind = w[i].split == SPLIT_COLUMN ?
				CKPT_COLUMN : CKPT_ROW;
			/* "experts.linear_fc1" -> mlp.experts.linear_fc1 */
			snprintf(ex[n_ex].name, sizeof(ex[n_ex].name),
				 "mlp.%s.weight", w[i].name);
			ex[n_ex].rows = w[i].rows;
			ex[n_ex].cols = w[i].cols;
			ex[n_ex].stage = -1;
			n_ex++;
		}
		/* the row-parallel experts' bias [E, hidden] is whole on
		 * every ETP and expert GTP peer (a GTP-replicated tensor,
		 * elected like the norms: gtplan.stack.replica_group); fc1's
		 * ETP-split bias is left out, as the dense linears' biases
		 * are */
		if (n_ex && m->add_bias_linear) {
			ex[n_ex] = (struct ckpt_item){ CKPT_NORM,
				"mlp.experts.linear_fc2.bias", m->hidden_size,
				1, -1, 0 };
			n_ex++;
		}
	}

	for (size_t i = 0; i < n_tensors; i++)
		n_layer += it[i].stage < 0;

	it[n].kind = CKPT_RNG;
	snprintf(it[n].name, sizeof(it[n].name), "rng_state");
	it[n].rows = it[n].cols = 0;
	n++;
	it[n].kind = CKPT_LOADER;
	snprintf(it[n].name, sizeof(it[n].name), "dataloader_state");
	it[n].rows = it[n].cols = 0;
	n++;

	struct ctx x = { p, root, &s, diags, NULL, 0, s.opt_format, 0 };
	long long per = p->world / p->pp, c[LAY_NAXES], first = 0;
	int dist = 1;

	/* the optimizer's layout: Megatron's default dp_reshardable when
	 * not said; without the distributed optimizer every rank keeps the
	 * whole state of its pieces, saved in model space under the model's
	 * replica ids, as fully_reshardable is */
	if (x.opt == STACK_OPT_UNSET)
		x.opt = STACK_OPT_DP_RESHARDABLE;
	x.experts = n_ex ? m->num_moe_experts : 0;
	if (cfg_bool(root, "policy.megatron_cfg.optimizer."
		     "use_distributed_optimizer", &dist) == 1 && !dist)
		x.opt = STACK_OPT_FULLY_RESHARDABLE;
	out->opt_format = dist ? stack_opt_format_name(x.opt) :
		"not_distributed";
	out->opt_format_set = s.opt_format != STACK_OPT_UNSET;
	struct bytes_memo *memo = memo_new(p, x.opt);

	if (!memo)
		return -1;
	/* the save itself aborts when the stack cannot write the format */
	char why_not[256];

	if (on && dist && s.opt_format == STACK_OPT_FULLY_RESHARDABLE &&
	    !ckpt_fully_reshardable_ok(p, &s, m, root, why_not,
				       sizeof(why_not))) {
		struct diag *d = diag_add(diags, "GT735",
			s.loc[STACK_OPT_FORMAT],
			"gtplan.stack.optimizer_ckpt_format",
			"the optimizer state cannot be saved as "
			"fully_reshardable: %s", why_not);

		diag_hint(d, "save dp_reshardable (gtplan.stack."
			  "optimizer_ckpt_format: dp_reshardable), or use a "
			  "Megatron-LM with PR #7162 and no fused projections "
			  "or native-FP8 weights under GTP");
	}
	out->keys = layers * (long long)n_layer + (long long)(n_tensors -
		n_layer) + 1 + p->lanes;
	if (n_ex)
		out->keys += (long long)n_ex * model_moe_layers(m, 0, layers);
	int xrep = on; /* experts are reported on their first stage */
	for (long long st = 0; st < p->pp && rc == 0; st++) {
		long long nl = layers / p->pp + (st < layers % p->pp);

		for (size_t i = 0; i < n && rc == 0; i++) {
			if (i < n_tensors && !mult(&it[i], st, nl))
				continue;
			/* each item is reported once: on stage 0. With
			 * EP > 1 Megatron keys the RNG state (pp, tp, dp_cp
			 * rank), replica id 0: the framework rule GT640
			 * reports that form of the collision. */
			int report = on && (st == 0 || it[i].stage >= 0) &&
				!(it[i].kind == CKPT_RNG && p->ep > 1);

			rc = check_item(&x, &it[i], st, first, i < n_tensors ?
					mult(&it[i], st, nl) : nl, report,
					&out->shards);
		}
		if (rc == 0)
			rc = check_opt(&x, it, n_tensors, st, first, nl, on,
				       out);
		long long nmoe = n_ex ? model_moe_layers(m, first, nl) : 0;
		long long xl = nmoe ? first_moe(m, first, nl) : first;

		for (size_t i = 0; i < n_ex && nmoe && rc == 0; i++)
			rc = check_expert(&x, &ex[i], st, xl, nmoe, xrep,
					  &out->shards);
		if (rc == 0)
			rc = check_expert_opt(&x, ex, n_ex, st, xl, nmoe, xrep,
					      out);
		if (nmoe)
			xrep = 0;
		/* writers and bytes per rank */
		for (long long r = 0; r < per && rc == 0; r++) {
			struct rank_bytes rbs;
			long long ob, rb, bytes;
			int writes;

			stage_coords(p, st, r, c);
			rank_bytes_of(&x, nmoe ? NULL : memo, it, n, n_tensors,
				      st, nl, c, &rbs);
			bytes = rbs.bytes;
			rb = rbs.read;
			writes = rbs.writes;
			ob = x.opt == STACK_OPT_DP_RESHARDABLE ?
				OPT_STATES * OPT_BYTES * range_len(rbs.buf,
				p->cp * p->dp_replicate, rank_in(&p->dense,
				B(LAY_CP) | B(LAY_DP), c)) : rbs.ob;
			if (nmoe) { /* the same rank on the expert grid */
				long long ce[LAY_NAXES];

				lay_coords(&p->expert, lay_rank(&p->dense, c),
					   ce);
				expert_bytes(&x, ex, n_ex, nmoe, dist, ce,
					     &bytes, &ob, &rb, &writes);
			}
			/* dp_reshardable: every rank saves its flat range */
			if (ob > 0 || (x.opt == STACK_OPT_DP_RESHARDABLE &&
				       rbs.buf > 0))
				writes = 1;
			rb += OPT_STATES * OPT_BYTES * (dist ? range_len(rbs.buf,
				p->cp * p->dp_replicate, rank_in(&p->dense,
				B(LAY_CP) | B(LAY_DP), c)) : rbs.buf);
			if (rb > out->max_rank_read_bytes)
				out->max_rank_read_bytes = rb;
			out->writers += writes;
			if (ob > out->max_rank_opt_bytes)
				out->max_rank_opt_bytes = ob;
			if (bytes > out->max_rank_weight_bytes)
				out->max_rank_weight_bytes = bytes;
			if (bytes + ob > out->max_rank_bytes)
				out->max_rank_bytes = bytes + ob;
		}
		memo_clear(memo);
		first += nl;
	}
	free(x.cnt);
	memo_free(memo);
	out->valid = rc == 0;
	return rc;
}
