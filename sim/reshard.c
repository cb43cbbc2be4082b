/*
 * reshard: checkpoint resharding between two layouts (see reshard.h).
 */
#include "reshard.h"

#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"
#include "llsort.h"
#include "stack.h"

/* A piece in logical coordinates: rows [r0, r1), columns [c0, c1). */
struct rect {
	long long r0, r1, c0, c1;
	int main;  /* a main replica's piece */
};

static long long gcd(long long a, long long b)
{
	while (b) {
		long long t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* One side of the reshard: its plan, stack and vocabulary divisor. */
struct side {
	const struct plan *p;
	struct stack s;
	long long vdiv;  /* make_vocab_size_divisible_by (0: 128) */
};

/* Coordinates of the i-th rank of stage 0 of grid g (every axis but pp). */
static void stage0_coords(const struct lay_grid *g, long long i,
			  long long c[LAY_NAXES])
{
	for (int a = 0; a < LAY_NAXES; a++) {
		enum lay_axis ax = g->order.axis[a];

		if (ax == LAY_PP)
			continue;
		c[ax] = i % g->size[ax];
		i /= g->size[ax];
	}
	c[LAY_PP] = 0;
}

static const struct lay_grid *grid_of(const struct side *sd,
				      const struct reshard_weight *w)
{
	return w->experts ? &sd->p->expert : &sd->p->dense;
}

/* Experts a rank of the expert grid holds (1 for a dense tensor). */
static long long local_n(const struct side *sd, const struct reshard_weight *w)
{
	return w->experts ? w->experts / sd->p->ep : 1;
}

/* The logical rectangle an entry holds; empty (r0 == r1) when all padding. */
static struct rect rect_of(const struct ckpt_entry *e)
{
	struct rect x;
	long long end = e->first_row + e->real_rows;

	x.r0 = e->first_row < e->global[0] ? e->first_row : e->global[0];
	x.r1 = end < e->global[0] ? end : e->global[0];
	if (x.r1 < x.r0)
		x.r1 = x.r0;
	x.c0 = e->chunk[1] * e->local[1];
	x.c1 = x.c0 + e->local[1];
	if (x.c1 > e->global[1])
		x.c1 = e->global[1];
	if (x.c1 < x.c0)
		x.c1 = x.c0;
	return x;
}

static int meets(const struct rect *a, const struct rect *b)
{
	return a->r0 < b->r1 && b->r0 < a->r1 && a->c0 < b->c1 && b->c0 < a->c1;
}

/* The entry of local piece j (a local expert) of the rank at c, its
 * logical rectangle (expert x's rows offset by x * rows) and its chunk
 * index over all experts. */
static void piece(const struct side *sd, const struct reshard_weight *w,
		  const long long c[LAY_NAXES], long long j, struct rect *r,
		  long long *chunk)
{
	long long x = w->experts ? c[LAY_EP] * local_n(sd, w) + j : 0;
	struct ckpt_entry e;

	if (w->experts)
		ckpt_expert_entry_of(sd->p, &sd->s, w->kind, w->rows, w->cols,
				     1, c, &e);
	else if (w->kind == CKPT_VOCAB)
		ckpt_vocab_entry_of(sd->p, &sd->s, w->rows, sd->vdiv, w->cols,
				    c, &e);
	else
		ckpt_entry_of(sd->p, &sd->s, w->kind, w->rows, w->cols, 1, c,
			      &e);
	*r = rect_of(&e);
	r->r0 += x * w->rows;
	r->r1 += x * w->rows;
	*chunk = (x * e.frag[0] + e.chunk[0]) * e.frag[1] + e.chunk[1];
	r->main = e.main;
}

/* The distinct pieces of side sd for weight w (chunk-indexed, so a
 * piece held by several ranks counts once); with main_only, only main
 * replicas, and a second main replica of a chunk is kept as a piece of
 * its own (it overlaps). Returns how many were written to *out
 * (allocated), or -1 when out of memory. */
static long long pieces(const struct side *sd, const struct reshard_weight *w,
			int main_only, struct rect **out)
{
	const struct lay_grid *g = grid_of(sd, w);
	long long per = g->world / sd->p->pp, n, c[LAY_NAXES], k = 0, cap;
	long long nl = local_n(sd, w);
	unsigned char *seen;
	struct rect *v, r;

	/* chunks: at most TP x G per expert (a norm uses chunk 0) */
	n = g->size[LAY_TP] * g->size[LAY_GTP] *
		(w->experts ? w->experts : 1);
	seen = calloc((size_t)n, 1);
	v = calloc((size_t)n, sizeof(*v));
	cap = n;
	if (!seen || !v)
		goto oom;
	for (long long i = 0; i < per; i++) {
		stage0_coords(g, i, c);
		for (long long j = 0; j < nl; j++) {
			long long ci;

			piece(sd, w, c, j, &r, &ci);
			if (main_only && !r.main)
				continue;
			if (ci < 0 || ci >= n)
				continue;
			if (main_only && seen[ci]) { /* a second main replica */
				if (n + k == cap) {
					struct rect *t = realloc(v,
						(size_t)(2 * cap) * sizeof(*v));

					if (!t)
						goto oom;
					v = t;
					cap *= 2;
				}
				v[n + k++] = r;
				continue;
			}
			seen[ci] = 1;
			v[ci] = r;
		}
	}
	free(seen);
	*out = v;
	return n + k;
oom:
	free(seen);
	free(v);
	return -1;
}

/* Coverage of [0, rows x experts) x [0, cols) by the saved pieces:
 * counts gap and overlap elements. Returns -1 when out of memory. */
static int coverage(const struct rect *sv, long long n,
		    struct reshard_weight *w)
{
	long long rows = w->rows * (w->experts ? w->experts : 1);
	size_t nr = 0, nc = 0;
	long long *rb = malloc((size_t)(2 * n + 2) * sizeof(*rb));
	long long *cb = malloc((size_t)(2 * n + 2) * sizeof(*cb));
	long long *cnt = NULL;

	if (!rb || !cb)
		goto oom;
	rb[nr++] = 0;
	rb[nr++] = rows;
	cb[nc++] = 0;
	cb[nc++] = w->cols;
	for (long long i = 0; i < n; i++) {
		if (sv[i].r0 == sv[i].r1 || sv[i].c0 == sv[i].c1)
			continue;
		rb[nr++] = sv[i].r0;
		rb[nr++] = sv[i].r1;
		cb[nc++] = sv[i].c0;
		cb[nc++] = sv[i].c1;
	}
	nr = ll_sort_uniq(rb, nr);
	nc = ll_sort_uniq(cb, nc);
	cnt = calloc(nr * nc, sizeof(*cnt));
	if (!cnt)
		goto oom;
	for (long long i = 0; i < n; i++) {
		if (sv[i].r0 == sv[i].r1 || sv[i].c0 == sv[i].c1)
			continue;
		size_t a0 = ll_lower_bound(rb, nr, sv[i].r0);
		size_t a1 = ll_lower_bound(rb, nr, sv[i].r1);
		size_t b0 = ll_lower_bound(cb, nc, sv[i].c0);
		size_t b1 = ll_lower_bound(cb, nc, sv[i].c1);

		for (size_t a = a0; a < a1; a++)
			for (size_t b = b0; b < b1; b++)
				cnt[a * nc + b]++;
	}
	w->gaps = w->overlaps = 0;
	for (size_t a = 0; a + 1 < nr; a++) {
		if (rb[a + 1] > rows || rb[a] < 0)
			continue;
		for (size_t b = 0; b + 1 < nc; b++) {
			long long area = (rb[a + 1] - rb[a]) *
					 (cb[b + 1] - cb[b]);

			if (cb[b + 1] > w->cols || cb[b] < 0)
				continue;
			if (cnt[a * nc + b] == 0)
				w->gaps += area;
			else if (cnt[a * nc + b] > 1)
				w->overlaps += area;
		}
	}
	w->covered = !w->gaps && !w->overlaps;
	free(rb);
	free(cb);
	free(cnt);
	return 0;
oom:
	free(rb);
	free(cb);
	free(cnt);
	return -1;
}

static long long count_nonempty(const struct rect *v, long long n)
{
	long long k = 0;

	for (long long i = 0; i < n; i++)
		k += v[i].r0 < v[i].r1 && v[i].c0 < v[i].c1;
	return k;
}

static int check_weight(const struct side *ss, const struct side *sl,
			struct reshard_weight *w)
{
	struct rect *sv = NULL, *lv = NULL;
	long long ns = pieces(ss, w, 1, &sv), nl;
	const struct lay_grid *g = grid_of(sl, w);
	long long per = g->world / sl->p->pp, c[LAY_NAXES];
	long long nloc = local_n(sl, w);

	if (ns < 0)
		return -1;
	nl = pieces(sl, w, 0, &lv);
	if (nl < 0 || coverage(sv, ns, w)) {
		free(sv);
		free(lv);
		return -1;
	}
	w->saved_pieces = count_nonempty(sv, ns);
	w->loaded_pieces = count_nonempty(lv, nl);
	w->max_reads = 0;
	w->max_reader = 0;
	for (long long i = 0; i < per; i++) { /* every loading rank reads */
		long long k = 0;

		stage0_coords(g, i, c);
		for (long long j = 0; j < nloc; j++) {
			struct rect need;
			long long ci;

			piece(sl, w, c, j, &need, &ci);
			for (long long q = 0; q < ns; q++)
				k += meets(&need, &sv[q]);
		}
		if (k > w->max_reads) {
			w->max_reads = k;
			w->max_reader = lay_rank(g, c);
		}
	}
	free(sv);
	free(lv);
	return 0;
}

/* GT730: the first shape field that differs, or NULL. */
static const char *model_diff(const struct model_shape *a,
			      const struct model_shape *b, long long *va,
			      long long *vb)
{
#define F(f) do { if (a->f != b->f) { *va = a->f; *vb = b->f; \
	return #f; } } while (0)
	F(known);
	F(num_layers);
	F(hidden_size);
	F(ffn_hidden_size);
	F(num_attention_heads);
	F(num_query_groups);
	F(kv_channels);
	F(vocab_size);
	F(gated_linear_unit);
	F(num_moe_experts);
	F(moe_ffn_hidden_size);
	F(share_embeddings_and_output_weights);
	F(add_bias_linear);
	return NULL;
#undef F
}

static const char *layout_name(const struct plan *p)
{
	return p->driver_layout ? p->driver_layout : "4d";
}

static void add_weight(struct reshard_report *out, const char *name,
		       enum ckpt_kind kind, long long rows, long long cols,
		       long long experts)
{
	struct reshard_weight *w;

	if (out->n >= RESHARD_MAX_WEIGHTS || rows <= 0 || cols <= 0)
		return;
	w = &out->w[out->n++];
	memset(w, 0, sizeof(*w));
	snprintf(w->name, sizeof(w->name), "%s", name);
	w->kind = kind;
	w->rows = rows;
	w->cols = cols;
	w->experts = experts;
}

/* The checkpoint's tensors for model m (known shape; ckpt_tensors), by
 * their model.h names: each layer's linears, the experts' (only where both
 * expert grids exist and EP divides them), the layer's norms, and the
 * tensors saved once. The experts' bias is not in the report: whole on
 * every expert peer, its pieces are those of the norms. */
static void model_weights(const struct side *ss, const struct side *sl,
			  const struct model_shape *m,
			  struct reshard_report *out)
{
	static const enum ckpt_part order[] = { CKPT_PART_LINEAR,
		CKPT_PART_EXPERT, CKPT_PART_NORM, CKPT_PART_FIRST,
		CKPT_PART_LAST };
	struct ckpt_tensor t[CKPT_MAX_TENSORS];
	int experts = ss->p->expert_grid_ok && sl->p->expert_grid_ok &&
		      ss->p->ep > 0 && sl->p->ep > 0 &&
		      m->num_moe_experts % ss->p->ep == 0 &&
		      m->num_moe_experts % sl->p->ep == 0;
	size_t n = ckpt_tensors(m, experts, t);

	for (size_t k = 0; k < sizeof(order) / sizeof(*order); k++)
		for (size_t i = 0; i < n; i++)
			if (t[i].part == order[k])
				add_weight(out, t[i].name, t[i].kind,
					   t[i].rows, t[i].cols,
					   t[i].part == CKPT_PART_EXPERT ?
					   m->num_moe_experts : 0);
}

static long long vocab_divisor(const struct plan *p,
			       const struct model_shape *m)
{
	return p->set.vocab_divisor ? p->set.vocab_divisor :
	       m->make_vocab_size_divisible_by;
}

/* The stack key of the saved side that elects the writers of w. */
static int writer_key(const struct reshard_weight *w)
{
	return w->kind == CKPT_NORM ? STACK_REPLICA : STACK_WRITER;
}

static void report_gap(const struct side *ss, const struct reshard_weight *w,
		       struct diag_list *diags)
{
	int k = writer_key(w);
	struct diag *d = diag_add(diags, "GT732", ss->s.loc[k],
		k == STACK_REPLICA ? "gtplan.stack.replica_group" :
		"gtplan.stack.sharded_replica_group",
		"checkpoint %s [%lld, %lld]%s cannot be resharded: the saved "
		"main-replica pieces leave %lld logical elements uncovered and "
		"hold %lld more than once", w->name,
		w->rows * (w->experts ? w->experts : 1), w->cols,
		w->experts ? " (experts stacked)" : "", w->gaps, w->overlaps);

	diag_hint(d, "save under a stack that elects exactly one writer per "
		  "element: gtplan.stack.%s: %s (such a save also fails "
		  "dist_checkpointing's own validation, GT710/GT711)",
		  k == STACK_REPLICA ? "replica_group" : "sharded_replica_group",
		  k == STACK_REPLICA ? "dp_cp_gtp" : "dp_cp");
}

/* Every size that differs between the layouts, EP and the expert grid
 * included: "TP 2 -> 4, D 1 -> 2, ETP 2 -> 4". */
static void changes(const struct plan *a, const struct plan *b, char *buf,
		    size_t len)
{
	const struct { const char *n; long long x, y; } v[] = {
		{ "TP", a->tp, b->tp }, { "CP", a->cp, b->cp },
		{ "G", a->gtp, b->gtp }, { "D", a->dp_replicate,
		b->dp_replicate }, { "PP", a->pp, b->pp },
		{ "EP", a->ep, b->ep }, { "ETP", a->etp, b->etp },
		{ "EG", a->egtp, b->egtp },
	};
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int n;

		if (v[i].x == v[i].y || at >= len)
			continue;
		n = snprintf(buf + at, len - at, "%s%s %lld -> %lld",
			     at ? ", " : "", v[i].n, v[i].x, v[i].y);
		if (n > 0)
			at += (size_t)n;
	}
	if (!buf[0])
		snprintf(buf, len, "%s", "of the layout");
}

/* GT733-GT735: the optimizer format a layout change needs. An unset
 * format is Megatron's default, dp_reshardable. */
static void check_optimizer(const struct side *ss, const struct side *sl,
			    const struct model_shape *m,
			    struct reshard_report *out,
			    struct diag_list *diags)
{
	const struct plan *a = ss->p, *b = sl->p;
	enum stack_opt_format f = ss->s.opt_format ? ss->s.opt_format :
		sl->s.opt_format;
	struct diag_loc loc = ss->s.opt_format ? ss->s.loc[STACK_OPT_FORMAT] :
		sl->s.loc[STACK_OPT_FORMAT];
	int only_d = a->tp == b->tp && a->cp == b->cp && a->gtp == b->gtp &&
		a->pp == b->pp && a->ep == b->ep && a->etp == b->etp &&
		a->egtp == b->egtp;
	char why[256] = "", moved[256];
	struct diag *d;

	out->opt_format = f;
	out->opt_ok = 1;
	out->opt_needed = !out->layout_change ? 0 : only_d ? 1 : 2;
	if (!ckpt_fully_reshardable_ok(a, &ss->s, m, why, sizeof(why)) ||
	    !ckpt_fully_reshardable_ok(b, &sl->s, m, why, sizeof(why)))
		snprintf(out->opt_why, sizeof(out->opt_why), "%s", why);
	if (f == STACK_OPT_FULLY_RESHARDABLE && out->opt_why[0]) {
		d = diag_add(diags, "GT735", loc,
			     "gtplan.stack.optimizer_ckpt_format",
			     "the optimizer state cannot be saved or loaded "
			     "as fully_reshardable: %s", out->opt_why);
		diag_hint(d, "use a Megatron-LM with PR #7162 and no fused "
			  "projections or native-FP8 weights under GTP, or "
			  "save dp_reshardable and keep TP, G, CP and PP (and "
			  "the expert grid) unchanged");
		out->opt_ok = 0;
	}
	if (!out->opt_needed || f == STACK_OPT_FULLY_RESHARDABLE ||
	    (f == STACK_OPT_DP_RESHARDABLE && out->opt_needed == 1))
		return;
	changes(a, b, moved, sizeof(moved));
	if (f == STACK_OPT_UNSET) {
		/* Megatron's default: dp_reshardable survives D alone */
		if (out->opt_needed == 1)
			return;
		d = diag_add(diags, "GT733", DIAG_NOLOC, NULL,
			     "the optimizer state is saved in Megatron's "
			     "default format, dp_reshardable (gtplan.stack."
			     "optimizer_ckpt_format is not set), which does not "
			     "survive the change %s: only fully_reshardable "
			     "does; the weights reshard", moved);
		diag_hint(d, "%s", out->opt_why[0] ?
			  "keep the save-time layout: this stack cannot use "
			  "fully_reshardable under GTP (GT735)" :
			  "save with --dist-ckpt-optim-fully-reshardable and "
			  "set gtplan.stack.optimizer_ckpt_format: "
			  "fully_reshardable, or keep the save-time layout");
		out->opt_assumed = 1;
		return;
	}
	d = diag_add(diags, "GT734", loc, "gtplan.stack.optimizer_ckpt_format",
		     "the optimizer state was saved as %s, which pins its "
		     "entries to the save-time layout: it does not load after "
		     "the change %s (%s survives it)",
		     stack_opt_format_name(f), moved, out->opt_needed == 1 ?
		     "dp_reshardable or fully_reshardable" :
		     "only fully_reshardable");
	if (out->opt_why[0])
		diag_hint(d, "keep the save-time layout: this stack cannot "
			  "write fully_reshardable (%s)", out->opt_why);
	else
		diag_hint(d, "save with fully_reshardable "
			  "(--dist-ckpt-optim-fully-reshardable; gtplan.stack."
			  "optimizer_ckpt_format: fully_reshardable), or keep "
			  "the save-time layout");
	out->opt_ok = 0;
}

/* The reshard of one model between two layouts with rank grids: each
 * weight's coverage, the driver layout, the optimizer state, and both
 * sides' checkpoint plans (bytes per rank; their findings are lint's). */
static int reshard_sides(struct side *ss, const struct cfg_node *rs,
			 const struct model_shape *ms, struct side *sl,
			 const struct cfg_node *rl,
			 const struct model_shape *ml,
			 struct reshard_report *out, struct diag_list *diags)
{
	const struct plan *ps = ss->p, *pl = sl->p;
	struct diag_list quiet;
	int covered = 1;

	if (ms->known) {
		out->layers = ms->num_layers;
		model_weights(ss, sl, ms, out);
	}
	if (!out->n) { /* a small example: odd rows, so padding shows */
		long long l = ps->tp / gcd(ps->tp, pl->tp) * pl->tp;

		out->example = 1;
		add_weight(out, "example_column", CKPT_COLUMN, 1000, 16 * l, 0);
		add_weight(out, "example_row", CKPT_ROW, 1000, 16 * l, 0);
	}
	for (size_t i = 0; i < out->n; i++) {
		struct reshard_weight *w = &out->w[i];

		if (check_weight(ss, sl, w))
			return -1;
		if (w->covered)
			continue;
		covered = 0;
		report_gap(ss, w, diags);
	}
	if (strcmp(layout_name(ps), layout_name(pl)) != 0) {
		struct diag *d = diag_add(diags, "GT731",
			pl->set.driver_layout_loc,
			"gtplan.driver_layout",
			"saved under the %s driver layout, loaded under %s: the "
			"driver's loader placement check ties a checkpoint to "
			"its layout axes, so a %s save does not resume under %s",
			layout_name(ps), layout_name(pl),
			strcmp(layout_name(ps), "5d") ? "4-D" : "5-D",
			strcmp(layout_name(pl), "5d") ? "4-D" : "5-D");

		diag_hint(d, "keep gtplan.driver_layout the same on both "
			  "sides");
	}
	out->layout_change = ps->tp != pl->tp || ps->cp != pl->cp ||
		ps->gtp != pl->gtp || ps->dp_replicate != pl->dp_replicate ||
		ps->pp != pl->pp || ps->ep != pl->ep || ps->etp != pl->etp ||
		ps->egtp != pl->egtp;
	check_optimizer(ss, sl, ms, out, diags);
	out->reshardable = covered && out->opt_ok;
	/* bytes per rank on both sides; their findings are lint's */
	diag_list_init(&quiet, diags->srcs);
	if (ckpt_check(ps, rs, ms, &ss->s, &out->saved, &quiet) ||
	    ckpt_check(pl, rl, ml, &sl->s, &out->loaded, &quiet)) {
		diag_list_release(&quiet);
		return -1;
	}
	diag_list_release(&quiet);
	return 0;
}

int reshard_check(const struct plan *ps, const struct cfg_node *rs,
		  const struct plan *pl, const struct cfg_node *rl,
		  struct reshard_report *out, struct diag_list *diags)
{
	const struct model_shape *ms = &ps->model, *ml = &pl->model;
	struct side ss, sl;
	struct diag_list quiet;
	const char *f;
	long long va = 0, vb = 0;

	memset(out, 0, sizeof(*out));
	diag_list_init(&quiet, diags->srcs);
	stack_read(&ps->set.sim.stack, &ss.s, &quiet);
	stack_read(&pl->set.sim.stack, &sl.s, &quiet);
	diag_list_release(&quiet);
	ss.p = ps;
	sl.p = pl;
	ss.vdiv = vocab_divisor(ps, ms);
	sl.vdiv = vocab_divisor(pl, ml);

	f = model_diff(ms, ml, &va, &vb);
	if (f) {
		struct diag *d = diag_add(diags, "GT730", DIAG_NOLOC, NULL,
			"the saved and the loaded configs plan different "
			"models: %s is %lld when saved, %lld when loaded", f,
			va, vb);

		diag_hint(d, "a checkpoint reshards across TP, G, D and PP, "
			  "not across model shapes");
		out->model_mismatch = 1;
		return 0;
	}
	if (!ps->grid_ok || !pl->grid_ok || ps->pp <= 0 || pl->pp <= 0)
		return 0;
	return reshard_sides(&ss, rs, ms, &sl, rl, ml, out, diags);
}
