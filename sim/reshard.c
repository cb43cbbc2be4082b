/*
 * reshard: checkpoint resharding between two layouts (see reshard.h).
 */
#include "reshard.h"

#include <stdlib.h>
#include <string.h>

#include "stack.h"

/* A piece in logical coordinates: rows [r0, r1), columns [c0, c1). */
struct rect {
	long long r0, r1, c0, c1;
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

/* Coordinates of the i-th rank of stage 0 (every axis but pp). */
static void stage0_coords(const struct plan *p, long long i,
			  long long c[LAY_NAXES])
{
	for (int a = 0; a < LAY_NAXES; a++) {
		enum lay_axis ax = p->dense.order.axis[a];

		if (ax == LAY_PP)
			continue;
		c[ax] = i % p->dense.size[ax];
		i /= p->dense.size[ax];
	}
	c[LAY_PP] = 0;
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

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static size_t uniq(long long *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), cmp_ll);
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

static size_t find(const long long *v, size_t n, long long x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The distinct main pieces of plan p for weight w (chunk-indexed, so a
 * piece saved by several stages' ranks counts once). Returns how many
 * were written to *out (allocated), or -1 when out of memory. */
static long long pieces(const struct plan *p, const struct stack *s,
			const struct reshard_weight *w, int main_only,
			struct rect **out)
{
	long long per = p->world / p->pp, n, c[LAY_NAXES], k = 0;
	struct ckpt_entry e;
	unsigned char *seen;
	struct rect *v;

	stage0_coords(p, 0, c);
	ckpt_entry_of(p, s, w->kind, w->rows, w->cols, 1, c, &e);
	n = e.frag[0] * e.frag[1];
	seen = calloc((size_t)n, 1);
	v = calloc((size_t)n, sizeof(*v));
	if (!seen || !v) {
		free(seen);
		free(v);
		return -1;
	}
	for (long long i = 0; i < per; i++) {
		long long ci;

		stage0_coords(p, i, c);
		ckpt_entry_of(p, s, w->kind, w->rows, w->cols, 1, c, &e);
		ci = e.chunk[0] * e.frag[1] + e.chunk[1];
		if (main_only && !e.main)
			continue;
		if (main_only && seen[ci]) { /* a second main replica */
			v = realloc(v, (size_t)(n + k + 1) * sizeof(*v));
			if (!v) {
				free(seen);
				return -1;
			}
			v[n + k] = rect_of(&e);
			k++;
			continue;
		}
		seen[ci] = 1;
		v[ci] = rect_of(&e);
	}
	free(seen);
	*out = v;
	return n + k;
}

/* Coverage of [0, rows) x [0, cols) by the saved pieces: counts gap and
 * overlap elements. Returns -1 when out of memory. */
static int coverage(const struct rect *sv, long long n,
		    struct reshard_weight *w)
{
	size_t nr = 0, nc = 0;
	long long *rb = malloc((size_t)(2 * n + 2) * sizeof(*rb));
	long long *cb = malloc((size_t)(2 * n + 2) * sizeof(*cb));
	long long *cnt = NULL;

	if (!rb || !cb)
		goto oom;
	rb[nr++] = 0;
	rb[nr++] = w->rows;
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
	nr = uniq(rb, nr);
	nc = uniq(cb, nc);
	cnt = calloc(nr * nc, sizeof(*cnt));
	if (!cnt)
		goto oom;
	for (long long i = 0; i < n; i++) {
		if (sv[i].r0 == sv[i].r1 || sv[i].c0 == sv[i].c1)
			continue;
		size_t a0 = find(rb, nr, sv[i].r0), a1 = find(rb, nr, sv[i].r1);
		size_t b0 = find(cb, nc, sv[i].c0), b1 = find(cb, nc, sv[i].c1);

		for (size_t a = a0; a < a1; a++)
			for (size_t b = b0; b < b1; b++)
				cnt[a * nc + b]++;
	}
	w->gaps = w->overlaps = 0;
	for (size_t a = 0; a + 1 < nr; a++) {
		if (rb[a + 1] > w->rows || rb[a] < 0)
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

static int check_weight(const struct plan *ps, const struct stack *ss,
			const struct plan *pl, const struct stack *sl,
			struct reshard_weight *w)
{
	struct rect *sv = NULL, *lv = NULL;
	long long ns = pieces(ps, ss, w, 1, &sv), nl;
	long long per = pl->world / pl->pp, c[LAY_NAXES];
	struct ckpt_entry e;

	if (ns < 0)
		return -1;
	nl = pieces(pl, sl, w, 0, &lv);
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
		struct rect need;
		long long k = 0;

		stage0_coords(pl, i, c);
		ckpt_entry_of(pl, sl, w->kind, w->rows, w->cols, 1, c, &e);
		need = rect_of(&e);
		for (long long j = 0; j < ns; j++)
			k += meets(&need, &sv[j]);
		if (k > w->max_reads) {
			w->max_reads = k;
			w->max_reader = lay_rank(&pl->dense, c);
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

static struct diag_loc loc_of(const struct cfg_node *root, const char *path)
{
	const struct cfg_node *n = cfg_path(root, path);

	return n ? n->loc : DIAG_NOLOC;
}

static const char *layout_name(const struct plan *p)
{
	return p->driver_layout ? p->driver_layout : "4d";
}

int reshard_check(const struct plan *ps, const struct cfg_node *rs,
		  const struct plan *pl, const struct cfg_node *rl,
		  struct reshard_report *out, struct diag_list *diags)
{
	struct model_shape ms, ml;
	struct model_weight mw[MODEL_MAX_WEIGHTS];
	struct stack ss, sl;
	struct diag_list quiet;
	const char *f;
	long long va = 0, vb = 0;
	size_t nw = 0;

	memset(out, 0, sizeof(*out));
	memset(&ms, 0, sizeof(ms));
	memset(&ml, 0, sizeof(ml));
	diag_list_init(&quiet, diags->srcs);
	model_resolve(rs, &ms, &quiet);
	model_resolve(rl, &ml, &quiet);
	stack_read(rs, &ss, &quiet);
	stack_read(rl, &sl, &quiet);
	diag_list_release(&quiet);

	f = model_diff(&ms, &ml, &va, &vb);
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
	if (ms.known) {
		out->layers = ms.num_layers;
		nw = model_layer_weights(&ms, mw, MODEL_MAX_WEIGHTS);
	}
	for (size_t i = 0; i < nw && out->n < RESHARD_MAX_WEIGHTS; i++) {
		struct reshard_weight *w = &out->w[out->n];

		if (mw[i].split == SPLIT_NONE)
			continue;
		snprintf(w->name, sizeof(w->name), "%s", mw[i].name);
		w->kind = mw[i].split == SPLIT_COLUMN ? CKPT_COLUMN : CKPT_ROW;
		w->rows = mw[i].rows;
		w->cols = mw[i].cols;
		out->n++;
	}
	if (!out->n) { /* a small example: odd rows, so padding shows */
		long long l = ps->tp / gcd(ps->tp, pl->tp) * pl->tp;

		out->example = 1;
		for (int k = 0; k < 2; k++) {
			struct reshard_weight *w = &out->w[out->n++];

			snprintf(w->name, sizeof(w->name), "%s",
				 k ? "example_row" : "example_column");
			w->kind = k ? CKPT_ROW : CKPT_COLUMN;
			w->rows = 1000;
			w->cols = 16 * l;
		}
	}
	out->reshardable = 1;
	for (size_t i = 0; i < out->n; i++) {
		struct reshard_weight *w = &out->w[i];

		if (check_weight(ps, &ss, pl, &sl, w))
			return -1;
		if (w->covered)
			continue;
		out->reshardable = 0;
		diag_add(diags, "GT732", DIAG_NOLOC, NULL,
			 "checkpoint %s [%lld, %lld] cannot be resharded: "
			 "the saved main-replica pieces leave %lld logical "
			 "elements uncovered and hold %lld more than once",
			 w->name, w->rows, w->cols, w->gaps, w->overlaps);
	}
	if (strcmp(layout_name(ps), layout_name(pl)) != 0) {
		struct diag *d = diag_add(diags, "GT731",
			loc_of(rl, "gtplan.driver_layout"),
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
	out->layout_change = ps->tp != pl->tp || ps->gtp != pl->gtp ||
		ps->dp_replicate != pl->dp_replicate || ps->pp != pl->pp;
	if (out->layout_change)
		diag_add(diags, "GT733", DIAG_NOLOC, NULL,
			 "a layout change (TP %lld -> %lld, G %lld -> %lld, "
			 "D %lld -> %lld, PP %lld -> %lld) needs the "
			 "fully_reshardable optimizer format (seed 004)",
			 ps->tp, pl->tp, ps->gtp, pl->gtp, ps->dp_replicate,
			 pl->dp_replicate, ps->pp, pl->pp);
	return 0;
}

void reshard_print(FILE *f, const struct plan *ps, const struct plan *pl,
		   const struct reshard_report *r)
{
	fprintf(f, "saved:  TP %lld, G %lld, D %lld, PP %lld, %s (%lld "
		"ranks)\n", ps->tp, ps->gtp, ps->dp_replicate, ps->pp,
		layout_name(ps), ps->world);
	fprintf(f, "loaded: TP %lld, G %lld, D %lld, PP %lld, %s (%lld "
		"ranks)\n", pl->tp, pl->gtp, pl->dp_replicate, pl->pp,
		layout_name(pl), pl->world);
	if (r->example)
		fprintf(f, "model shape unknown: example weights\n");
	else if (r->layers && ps->pp != pl->pp)
		fprintf(f, "%lld layers, keyed by global layer: PP %lld -> "
			"%lld moves whole keys between stages\n", r->layers,
			ps->pp, pl->pp);
	for (size_t i = 0; i < r->n; i++) {
		const struct reshard_weight *w = &r->w[i];

		fprintf(f, "  %-22s %-6s [%lld, %lld]: saved pieces %lld, "
			"loaded pieces %lld, reads per loading rank max %lld "
			"(rank %lld): %s\n", w->name,
			w->kind == CKPT_COLUMN ? "column" : "row", w->rows,
			w->cols, w->saved_pieces, w->loaded_pieces,
			w->max_reads, w->max_reader,
			w->covered ? "covered exactly once" : "NOT covered");
	}
	fprintf(f, "%s\n", r->reshardable ? "reshardable" :
		r->model_mismatch ? "not reshardable: different models" :
		"not reshardable");
}
