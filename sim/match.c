/*
 * match: class-level play of the programs with NCCL semantics, and the
 * findings when they do not complete (see match.h for the argument why
 * playing classes is exact).
 */
#include "match.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classes.h"
#include "stages.h"

#define NGROUPS 32 /* op.group values: layout kinds, PROG_GK_WORLD, ... */
#define NO_CLS UINT32_MAX

enum why { WHY_NONE, WHY_STUCK, WHY_DONE, WHY_MISMATCH, WHY_NEVER };

struct comp {
	struct cls_comp *v;
	size_t n;
};

struct play {
	const struct match_setup *s;
	const struct plan *p;
	struct cls_part cp;
	size_t n;                  /* classes */
	const struct prog **prog;  /* per class; NULL: not called */
	size_t *pc;
	int8_t slot[NGROUPS];      /* group -> column of compi, -1 unused */
	int nslots;
	uint32_t *compi;           /* [cls * nslots + slot] -> comps, NO_CLS */
	struct comp *comps;
	size_t ncomps, capcomps;
	uint32_t *queue;           /* ring of pending classes */
	uint8_t *inq;
	size_t qh, qn;
	int oom;
	/* analysis, per class */
	uint8_t *why;
	uint32_t *inst, *next, *leaf, *root;
	uint8_t *cyc;
};

/* ---- small helpers ---------------------------------------------------- */

static const struct prog_op *cur(const struct play *pl, uint32_t c)
{
	const struct prog *g = pl->prog[c];

	return g && pl->pc[c] < g->n ? &g->ops[pl->pc[c]] : NULL;
}

static unsigned swap_flags(unsigned f)
{
	return (f & PROG_SEND_FWD ? PROG_RECV_FWD : 0) |
	       (f & PROG_RECV_FWD ? PROG_SEND_FWD : 0) |
	       (f & PROG_SEND_BWD ? PROG_RECV_BWD : 0) |
	       (f & PROG_RECV_BWD ? PROG_SEND_BWD : 0);
}

static long long stage_of(const struct play *pl, long long rank)
{
	long long c[LAY_NAXES];

	lay_coords(&pl->p->dense, rank, c);
	return c[LAY_PP];
}

/* The class of the stage an exchange faces; NO_CLS past either end. */
static uint32_t peer(const struct play *pl, uint32_t c,
		     const struct prog_op *op)
{
	long long r = pl->cp.rep[c], s = stage_of(pl, r);
	int fwd = (op->flags & PROG_TO_NEXT) != 0;

	if ((fwd && s + 1 >= pl->p->pp) || (!fwd && s == 0))
		return NO_CLS;
	r += (fwd ? 1 : -1) * pl->p->dense.stride[LAY_PP];
	return pl->cp.colour[r];
}

/* Is class c at an op that completes together with `op`? */
static int ready(const struct play *pl, uint32_t c, const struct prog_op *op)
{
	const struct prog_op *o = cur(pl, c);

	if (!o)
		return 0;
	if (op->kind == OP_P2P)
		return o->kind == OP_P2P && o->flags == swap_flags(op->flags) &&
		       o->amount == op->amount;
	return o->group == op->group && o->kind == op->kind &&
	       o->amount == op->amount && o->root == op->root;
}

/* The composition of class c's group of `group`, shared by every class in
 * it (they are all in groups of that same composition). */
static const struct comp *comp_of(struct play *pl, uint32_t c,
				  unsigned group)
{
	uint32_t *ix;
	struct comp k;

	if (group >= NGROUPS || pl->slot[group] < 0)
		return NULL;
	ix = &pl->compi[(size_t)c * (size_t)pl->nslots +
			(size_t)pl->slot[group]];
	if (*ix != NO_CLS)
		return &pl->comps[*ix];
	if (pl->ncomps == pl->capcomps) {
		size_t cap = pl->capcomps ? pl->capcomps * 2 : 16;
		struct comp *v = realloc(pl->comps, cap * sizeof(*v));

		if (!v)
			goto oom;
		pl->comps = v;
		pl->capcomps = cap;
	}
	if (cls_group_comp(&pl->cp, pl->p, group, pl->cp.rep[c], &k.v, &k.n))
		goto oom;
	pl->comps[pl->ncomps] = k;
	for (size_t i = 0; i < k.n; i++)
		pl->compi[(size_t)k.v[i].cls * (size_t)pl->nslots +
			  (size_t)pl->slot[group]] = (uint32_t)pl->ncomps;
	return &pl->comps[pl->ncomps++];
oom:
	pl->oom = 1;
	return NULL;
}

static void push(struct play *pl, uint32_t c)
{
	if (pl->inq[c])
		return;
	pl->inq[c] = 1;
	pl->queue[(pl->qh + pl->qn++) % pl->n] = c;
}

/* ---- the play --------------------------------------------------------- */

/* Runs class a as far as it goes; completes ops other classes wait in. */
static void advance(struct play *pl, uint32_t a)
{
	const struct prog_op *op;

	while ((op = cur(pl, a)) && !pl->oom) {
		if (op->kind == OP_COMPUTE) {
			pl->pc[a]++;
			continue;
		}
		if (op->kind == OP_P2P) {
			uint32_t b = peer(pl, a, op);

			if (b == NO_CLS || !ready(pl, b, op))
				return;
			pl->pc[b]++;
			push(pl, b);
			pl->pc[a]++;
			continue;
		}
		const struct comp *k = comp_of(pl, a, op->group);

		if (!k)
			return;
		for (size_t i = 0; i < k->n; i++)
			if (k->v[i].cls != a && !ready(pl, k->v[i].cls, op))
				return;
		for (size_t i = 0; i < k->n; i++) {
			if (k->v[i].cls == a)
				continue;
			pl->pc[k->v[i].cls]++;
			push(pl, k->v[i].cls);
		}
		pl->pc[a]++;
	}
}

static void play(struct play *pl)
{
	for (uint32_t c = 0; c < pl->n; c++)
		if (pl->prog[c])
			push(pl, c);
	while (pl->qn && !pl->oom) {
		uint32_t c = pl->queue[pl->qh];

		pl->qh = (pl->qh + 1) % pl->n;
		pl->qn--;
		pl->inq[c] = 0;
		advance(pl, c);
	}
}

/* ---- why a class is blocked ------------------------------------------- */

static enum why classify(const struct play *pl, uint32_t b,
			 const struct prog_op *op)
{
	const struct prog_op *o;

	if (b == NO_CLS)
		return WHY_MISMATCH; /* an exchange with no stage there */
	if (!pl->prog[b])
		return WHY_NEVER;
	o = cur(pl, b);
	if (!o)
		return WHY_DONE;
	if (op->kind == OP_P2P) {
		/* facing us: a partial pairing is a mismatch; none at all
		 * (both send first) waits for us: a cycle */
		if (o->kind == OP_P2P && (o->flags & swap_flags(op->flags)))
			return WHY_MISMATCH;
		return WHY_STUCK;
	}
	return o->group == op->group ? WHY_MISMATCH : WHY_STUCK;
}

/* Fills why, inst, next (first stuck waitee) and leaf (first waitee of
 * the root reason) for a blocked class. */
static void diagnose(struct play *pl, uint32_t a)
{
	const struct prog_op *op = cur(pl, a);
	uint32_t first[WHY_NEVER + 1];
	enum why best = WHY_NONE;

	for (int i = 0; i <= WHY_NEVER; i++)
		first[i] = NO_CLS;
	pl->inst[a] = a;
	if (op->kind == OP_P2P) {
		uint32_t b = peer(pl, a, op);
		const struct prog_op *o = b == NO_CLS ? NULL : cur(pl, b);

		best = classify(pl, b, op);
		first[best] = b;
		/* two stages facing each other are one instance */
		if (o && o->kind == OP_P2P && peer(pl, b, o) == a && b < a)
			pl->inst[a] = b;
	} else {
		const struct comp *k = comp_of(pl, a, op->group);

		for (size_t i = 0; k && i < k->n; i++) {
			uint32_t b = k->v[i].cls;
			const struct prog_op *o = cur(pl, b);
			enum why w;

			/* one instance: the classes at an op on this group */
			if (o && o->group == op->group && b < pl->inst[a])
				pl->inst[a] = b;
			if (b == a || ready(pl, b, op))
				continue;
			w = classify(pl, b, op);
			if (first[w] == NO_CLS)
				first[w] = b;
			if (w > best)
				best = w;
		}
	}
	pl->why[a] = (uint8_t)best;
	pl->next[a] = first[WHY_STUCK];
	pl->leaf[a] = best > WHY_STUCK ? first[best] : NO_CLS;
}

/* Follows stuck chains to their roots; marks cycles. root[c] is the root
 * class, or the first class of the cycle the chain ends in. */
static int resolve(struct play *pl)
{
	uint32_t *path = malloc(pl->n * sizeof(*path));
	uint8_t *mark = calloc(pl->n, 1);

	if (!path || !mark) {
		free(path);
		free(mark);
		return -1;
	}
	for (uint32_t a = 0; a < pl->n; a++) {
		size_t len = 0;
		uint32_t x = a, r;

		if (!cur(pl, a) || mark[a])
			continue;
		while (x != NO_CLS && !mark[x] && pl->why[x] == WHY_STUCK) {
			mark[x] = 1;
			path[len++] = x;
			x = pl->next[x];
		}
		if (x != NO_CLS && mark[x] == 1) {
			r = x; /* a cycle: from x to the end of the path */
			for (size_t i = len; i-- > 0;) {
				pl->cyc[path[i]] = 1;
				if (path[i] == x)
					break;
			}
		} else if (x != NO_CLS && mark[x] == 2) {
			r = pl->root[x];
		} else {
			r = x; /* a root (or nothing to wait on) */
			if (x != NO_CLS) {
				mark[x] = 2;
				pl->root[x] = x;
			}
		}
		for (size_t i = 0; i < len; i++) {
			mark[path[i]] = 2;
			pl->root[path[i]] = r;
		}
	}
	free(path);
	free(mark);
	return 0;
}

/* ---- findings ---------------------------------------------------------- */

struct sbuf {
	char b[4096];
	size_t n;
};

static void sb(struct sbuf *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (s->n + 1 >= sizeof(s->b))
		return;
	va_start(ap, fmt);
	w = vsnprintf(s->b + s->n, sizeof(s->b) - s->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		s->n += (size_t)w < sizeof(s->b) - s->n ? (size_t)w :
			sizeof(s->b) - s->n - 1;
}

/* "1 was" / "2 were": the verb for a count. */
static const char *pl_s(long long n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void rank_desc(const struct play *pl, long long r, struct sbuf *s)
{
	long long c[LAY_NAXES];

	lay_coords(&pl->p->dense, r, c);
	sb(s, "rank %lld (t%lld c%lld g%lld d%lld p%lld)", r, c[LAY_TP],
	   c[LAY_CP], c[LAY_GTP], c[LAY_DP], c[LAY_PP]);
}

static void bytes_desc(long long b, struct sbuf *s)
{
	if (b < 1024)
		sb(s, "%lld bytes", b);
	else if (b < 1024 * 1024)
		sb(s, "%.1f KiB", (double)b / 1024);
	else if (b < 1024LL * 1024 * 1024)
		sb(s, "%.2f MiB", (double)b / (1024 * 1024));
	else
		sb(s, "%.2f GiB", (double)b / (1024.0 * 1024 * 1024));
}

static void group_desc(const struct play *pl, unsigned group, long long r,
		       struct sbuf *s)
{
	const struct lay_group_kind *gk = lay_group_kind_at(group);
	long long idx, size;

	if (!gk) {
		sb(s, "%s (all %lld training ranks%s)", prog_group_name(group),
		   pl->p->world, group == PROG_GK_TRAIN_INFER ?
		   " and the inference engine" : "");
		return;
	}
	size = lay_group_size(cls_grid(pl->p, group), gk->axes);
	lay_group_of(cls_grid(pl->p, group), gk->axes, r, &idx, NULL);
	sb(s, "%s groups such as [", gk->name);
	for (long long i = 0; i < size; i++) {
		if (size > 8 && i == 4) {
			sb(s, ", ...");
			i = size - 1;
		}
		sb(s, "%s%lld", i ? ", " : "",
		   lay_group_member(cls_grid(pl->p, group), gk->axes, idx, i));
	}
	sb(s, "]");
	if (size > 8)
		sb(s, " (%lld ranks)", size);
}

/* Up to `max` ranks of r's group of `group` whose class is wanted. */
static size_t pick(const struct play *pl, unsigned group, long long r,
		   const uint8_t *want, long long *out, size_t max)
{
	const struct lay_group_kind *gk = lay_group_kind_at(group);
	long long idx = 0, size = pl->p->world;
	size_t n = 0;

	if (gk) {
		size = lay_group_size(cls_grid(pl->p, group), gk->axes);
		lay_group_of(cls_grid(pl->p, group), gk->axes, r, &idx, NULL);
	}
	for (long long i = 0; i < size && n < max; i++) {
		long long m = gk ? lay_group_member(cls_grid(pl->p, group),
						    gk->axes, idx, i) : i;

		if (want[pl->cp.colour[m]])
			out[n++] = m;
	}
	return n;
}

static void examples(const struct play *pl, unsigned group, long long r,
		     const uint8_t *want, struct sbuf *s, long long *first)
{
	long long ex[4];
	size_t n = pick(pl, group, r, want, ex, 4);

	for (size_t i = 0; i < n && i < 3; i++) {
		sb(s, "%s", i ? ", " : "");
		rank_desc(pl, ex[i], s);
	}
	if (n > 3)
		sb(s, ", ...");
	if (first)
		*first = n ? ex[0] : -1;
}

static void op_desc(const struct play *pl, uint32_t c, struct sbuf *s)
{
	char lab[256];
	const struct prog_op *op = cur(pl, c);

	sb(s, "op #%zu, %s", pl->pc[c],
	   prog_op_label(pl->prog[c], op, lab, sizeof(lab)));
}

/* Why the driver left rank m out (appended to s), and the hint that goes
 * with it (into h). */
static void never_why(const struct play *pl, long long m, struct sbuf *s,
		      struct sbuf *h)
{
	struct disp_rank dr = { .left_out_by = AX_N, .shard = -1 };
	long long co[AX_N];
	const char *ax;

	pl->s->rank_prog(pl->s->ctx, m, &dr);
	if (dr.left_out_by == AX_N || !pl->s->dl) {
		sb(s, "the driver does not call them");
		sb(h, "every member of a group must run the call");
		return;
	}
	ax = drv_axis_name(dr.left_out_by);
	drv_coords(pl->s->dl, m, co);
	if (pl->s->def && pl->s->def->dispatch != CALL_SHARDED)
		sb(s, "the driver calls %s only at index 0 of '%s', one of its "
		   "run_rank_0_only_axes, and rank %lld is at index %lld there",
		   pl->s->call, ax, m, co[dr.left_out_by]);
	else
		sb(s, "the driver calls %s only at index 0 of '%s', which the "
		   "call neither shards nor replicates, and rank %lld is at "
		   "index %lld there", pl->s->call, ax, m, co[dr.left_out_by]);
	if (dr.left_out_by == AX_GTP)
		sb(h, "keep the 4-D driver layout (gtplan.driver_layout: 4d): "
		   "its data_parallel axis already counts every lane as d x G "
		   "+ g, so a call that shards data_parallel reaches every GPU");
	else
		sb(h, "shard or replicate '%s' in %s (or make dummy calls to "
		   "free axes) so that every member of the group runs it", ax,
		   pl->s->call);
}

/* The first GTP all-gather after the op class a hangs in, when it would
 * wait for never-called ranks too. */
static void gtp_note(struct play *pl, uint32_t a, struct diag *d)
{
	const struct prog *g = pl->prog[a];
	unsigned gtp = prog_kind("gtp");
	size_t save = pl->pc[a];

	if (cur(pl, a)->group == gtp)
		return;
	for (size_t i = save + 1; i < g->n; i++) {
		const struct comp *k;
		long long called = 0, all = 0;
		struct sbuf s = { .n = 0 };

		if (g->ops[i].group != gtp || g->ops[i].kind != OP_ALL_GATHER)
			continue;
		k = comp_of(pl, a, gtp);
		for (size_t j = 0; k && j < k->n; j++) {
			all += k->v[j].n;
			called += pl->prog[k->v[j].cls] ? k->v[j].n : 0;
		}
		if (!k || called == all)
			return;
		pl->pc[a] = i;
		op_desc(pl, a, &s);
		pl->pc[a] = save;
		sb(&s, ", would wait for never-called ranks too: ");
		group_desc(pl, gtp, pl->cp.rep[a], &s);
		diag_note(d, DIAG_NOLOC, "past it, %s; %lld of the %lld members "
			  "of each such group %s called", s.b, called, all,
			  called == 1 ? "is" : "are");
		return;
	}
}

/* Counts of one blocked collective: arrived, and by why. */
struct tally {
	long long all, arrived, per_group, arrived_group;
	long long by[WHY_NEVER + 1];
};

static void tally(struct play *pl, uint32_t a, const struct comp *k,
		  uint8_t *want_arr, uint8_t *want_why, enum why w,
		  struct tally *t)
{
	const struct prog_op *op = cur(pl, a);

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; k && i < k->n; i++) {
		uint32_t b = k->v[i].cls;
		long long cnt = pl->cp.count[b];

		t->all += cnt;
		t->per_group += k->v[i].n;
		if (b == a || ready(pl, b, op)) {
			want_arr[b] = 1;
			t->arrived += cnt;
			t->arrived_group += k->v[i].n;
		} else {
			enum why x = classify(pl, b, op);

			t->by[x] += cnt;
			if (x == w)
				want_why[b] = 1;
		}
	}
}

static const char *const root_code[WHY_NEVER + 1] = {
	[WHY_NONE] = "GT501", [WHY_STUCK] = "GT501", [WHY_DONE] = "GT504",
	[WHY_MISMATCH] = "GT502", [WHY_NEVER] = "GT500",
};

static void report_collective(struct play *pl, uint32_t a,
			      struct diag_list *diags, uint8_t *wa,
			      uint8_t *ww)
{
	const struct prog_op *op = cur(pl, a);
	const struct comp *k = comp_of(pl, a, op->group);
	enum why w = (enum why)pl->why[a];
	struct sbuf s = { .n = 0 }, h = { .n = 0 };
	struct tally t;
	struct diag *d;
	long long miss = -1, r = pl->cp.rep[a];

	memset(wa, 0, pl->n);
	memset(ww, 0, pl->n);
	tally(pl, a, k, wa, ww, w, &t);
	sb(&s, "%s %s at ", pl->s->call, w == WHY_MISMATCH ?
	   "issues mismatched collectives" : "hangs");
	op_desc(pl, a, &s);
	sb(&s, ", ");
	bytes_desc(op->amount, &s);
	sb(&s, " per rank, over ");
	group_desc(pl, op->group, r, &s);
	sb(&s, ": %lld of their %lld ranks arrived (", t.arrived, t.all);
	examples(pl, op->group, r, wa, &s, NULL);
	if (w == WHY_NEVER) {
		sb(&s, "); %lld %s never called (", t.by[WHY_NEVER],
		   pl_s(t.by[WHY_NEVER], "was", "were"));
		examples(pl, op->group, r, ww, &s, &miss);
		sb(&s, "): ");
	} else if (w == WHY_DONE) {
		sb(&s, "); %lld had already finished the call (",
		   t.by[WHY_DONE]);
		examples(pl, op->group, r, ww, &s, &miss);
		sb(&s, ") after %zu op%s", pl->prog[pl->leaf[a]]->n,
		   pl_s((long long)pl->prog[pl->leaf[a]]->n, "", "s"));
	} else {
		uint32_t b = pl->leaf[a];

		sb(&s, "); %lld %s a different op there instead (",
		   t.by[WHY_MISMATCH], pl_s(t.by[WHY_MISMATCH], "issues",
					    "issue"));
		examples(pl, op->group, r, ww, &s, &miss);
		sb(&s, "): ");
		op_desc(pl, b, &s);
		sb(&s, ", ");
		bytes_desc(cur(pl, b)->amount, &s);
		sb(&s, " per rank");
	}
	if (w == WHY_NEVER && miss >= 0)
		never_why(pl, miss, &s, &h);
	d = diag_add(diags, root_code[w], pl->s->loc, NULL, "%s", s.b);
	if (h.n)
		diag_hint(d, "%s", h.b);
	else if (w == WHY_DONE)
		diag_hint(d, "the members' programs differ in length (micro-"
			  "batches or layers per stage); every member of a "
			  "group must issue the same collectives");
	else if (w == WHY_MISMATCH)
		diag_hint(d, "NCCL matches the n-th op on a communicator across "
			  "its members: kind, size and root must agree");
	diag_note(d, DIAG_NOLOC, "each such group has %lld members; %lld "
		  "arrive%s", t.per_group, t.arrived_group,
		  t.arrived_group == 1 ? "s" : "");
	if (w == WHY_NEVER)
		gtp_note(pl, a, d);
}

static void report_p2p(struct play *pl, uint32_t a, struct diag_list *diags)
{
	const struct prog_op *op = cur(pl, a);
	uint32_t b = peer(pl, a, op);
	long long ra = pl->cp.rep[a];
	struct sbuf s = { .n = 0 }, h = { .n = 0 };
	enum why w = (enum why)pl->why[a];
	struct diag *d;

	sb(&s, "%s %s: ", pl->s->call, w == WHY_MISMATCH ?
	   "issues p2p exchanges that do not pair" : "hangs");
	rank_desc(pl, ra, &s);
	sb(&s, " (stage %lld) is at ", stage_of(pl, ra));
	op_desc(pl, a, &s);
	if (b == NO_CLS) {
		sb(&s, ", but there is no such stage");
	} else if (w == WHY_NEVER) {
		sb(&s, ", and its peer ");
		rank_desc(pl, pl->cp.rep[b], &s);
		sb(&s, " was never called: ");
	} else if (w == WHY_DONE) {
		sb(&s, ", but its peer ");
		rank_desc(pl, pl->cp.rep[b], &s);
		sb(&s, " had already finished the call after %zu op%s",
		   pl->prog[b]->n, pl_s((long long)pl->prog[b]->n, "", "s"));
	} else {
		sb(&s, ", while its peer ");
		rank_desc(pl, pl->cp.rep[b], &s);
		sb(&s, " is at ");
		op_desc(pl, b, &s);
	}
	if (w == WHY_NEVER)
		never_why(pl, pl->cp.rep[b], &s, &h);
	d = diag_add(diags, root_code[w], pl->s->loc, NULL, "%s", s.b);
	if (h.n)
		diag_hint(d, "%s", h.b);
	else if (w == WHY_DONE)
		diag_hint(d, "the stages' programs differ in length (micro-"
			  "batches or layers); both stages must run the same "
			  "number of exchanges");
	else if (w != WHY_NEVER)
		diag_hint(d, "each exchange must meet its complement on the "
			  "neighbouring stage (a send forward meets a receive "
			  "forward), in the same order on both stages");
}

static void report_cycle(struct play *pl, uint32_t a, struct diag_list *diags)
{
	struct sbuf s = { .n = 0 };
	struct diag *d;
	uint32_t x = a;
	int links = 0;

	sb(&s, "%s deadlocks in a wait-for cycle: ", pl->s->call);
	do {
		sb(&s, "%s", links ? ", which waits for " : "");
		rank_desc(pl, pl->cp.rep[x], &s);
		sb(&s, " at ");
		op_desc(pl, x, &s);
		x = pl->next[x];
	} while (x != a && x != NO_CLS && ++links < 4);
	sb(&s, ", which waits for ");
	rank_desc(pl, pl->cp.rep[x], &s);
	d = diag_add(diags, "GT503", pl->s->loc, NULL, "%s", s.b);
	diag_hint(d, "order the exchanges so that every send meets a receive "
		  "that is posted in the same order (Megatron batches "
		  "send_forward_recv_backward into one grouped call)");
}

static void report_derived(struct play *pl, uint32_t a,
			   struct diag_list *diags, uint8_t *wa, uint8_t *ww)
{
	const struct prog_op *op = cur(pl, a);
	uint32_t b = pl->next[a], r = pl->root[a];
	struct sbuf s = { .n = 0 };
	struct tally t = { .by = { 0 } };
	struct diag *d;
	long long ra = pl->cp.rep[a];

	memset(wa, 0, pl->n);
	memset(ww, 0, pl->n);
	sb(&s, "%s hangs at ", pl->s->call);
	op_desc(pl, a, &s);
	if (op->kind == OP_P2P) {
		sb(&s, " on ");
		rank_desc(pl, ra, &s);
		sb(&s, ": its peer ");
	} else {
		tally(pl, a, comp_of(pl, a, op->group), wa, ww, WHY_STUCK, &t);
		sb(&s, ", over ");
		group_desc(pl, op->group, ra, &s);
		sb(&s, ": %lld of their %lld ranks arrived (", t.arrived, t.all);
		examples(pl, op->group, ra, wa, &s, NULL);
		sb(&s, "); %lld %s stuck at an earlier op, e.g. ",
		   t.by[WHY_STUCK], pl_s(t.by[WHY_STUCK], "is", "are"));
	}
	rank_desc(pl, pl->cp.rep[b], &s);
	sb(&s, " at ");
	op_desc(pl, b, &s);
	if (r != NO_CLS && pl->cyc[r]) {
		sb(&s, "; the chain ends in a wait-for cycle (GT503)");
	} else if (r == b) {
		sb(&s, ", which cannot complete (%s)", root_code[pl->why[r]]);
	} else if (r != NO_CLS) {
		sb(&s, "; the chain ends at ");
		rank_desc(pl, pl->cp.rep[r], &s);
		sb(&s, " at ");
		op_desc(pl, r, &s);
		sb(&s, " (%s)", root_code[pl->why[r]]);
	}
	d = diag_add(diags, "GT501", pl->s->loc, NULL, "%s", s.b);
	diag_hint(d, "fix the op the chain ends at; this one then completes");
}

/* Emits the findings; returns the call's status. */
static enum sim_status report(struct play *pl, struct diag_list *diags)
{
	uint8_t *wa = calloc(pl->n, 1), *ww = calloc(pl->n, 1);
	uint8_t *seen = calloc(pl->n, 1);
	enum sim_status st = SIM_HANG;
	size_t roots = 0, derived = 0, more = 0;
	struct diag *last = NULL;

	if (!wa || !ww || !seen) {
		st = SIM_ERROR;
		goto out;
	}
	for (uint32_t a = 0; a < pl->n; a++) {
		if (!cur(pl, a))
			continue;
		if (pl->why[a] == WHY_MISMATCH)
			st = SIM_MISMATCH;
		if (pl->why[a] == WHY_STUCK || pl->inst[a] != a)
			continue;
		if (roots++ >= MATCH_MAX_ROOTS)
			continue;
		if (cur(pl, a)->kind == OP_P2P)
			report_p2p(pl, a, diags);
		else
			report_collective(pl, a, diags, wa, ww);
	}
	for (uint32_t a = 0; a < pl->n; a++) {
		uint32_t r = pl->root[a];

		if (!cur(pl, a) || !pl->cyc[a] || r == NO_CLS || seen[r])
			continue;
		seen[r] = 1;
		if (roots++ < MATCH_MAX_ROOTS)
			report_cycle(pl, r, diags);
	}
	for (uint32_t a = 0; a < pl->n; a++) {
		if (!cur(pl, a) || pl->why[a] != WHY_STUCK || pl->cyc[a] ||
		    pl->inst[a] != a)
			continue;
		if (derived++ >= MATCH_MAX_DERIVED) {
			more++;
			continue;
		}
		report_derived(pl, a, diags, wa, ww);
		last = diags->n ? &diags->v[diags->n - 1] : NULL;
	}
	if (last && more)
		diag_note(last, DIAG_NOLOC, "%zu more op%s wait%s behind the same "
			  "causes", more, more == 1 ? "" : "s",
			  more == 1 ? "s" : "");
out:
	free(wa);
	free(ww);
	free(seen);
	return st;
}

/* ---- entry points ------------------------------------------------------ */

static int setup_play(struct play *pl, const struct match_setup *s,
		      struct sim_call_result *res)
{
	uint64_t used = 0;
	size_t nl = lay_group_kind_count();

	memset(pl, 0, sizeof(*pl));
	pl->s = s;
	pl->p = s->p;
	if (cls_init(&pl->cp, s->p->world))
		return -1;
	for (long long r = 0; r < s->p->world; r++) {
		struct disp_rank dr = { .left_out_by = AX_N, .shard = -1 };
		int id = s->rank_prog(s->ctx, r, &dr);

		if (id >= (int)s->n_progs)
			id = -1;
		pl->cp.colour[r] = (uint32_t)(id + 1);
		res->invoked += dr.called;
		res->with_data += dr.called && !dr.dummy;
		res->returned += dr.returned;
	}
	for (size_t i = 0; i < s->n_progs; i++) {
		long long nc = (long long)prog_collectives(&s->progs[i]);

		used |= prog_groups_used(&s->progs[i]);
		if (nc > res->n_ops)
			res->n_ops = nc;
	}
	if (cls_refine(&pl->cp, s->p, used & ((1ull << nl) - 1)))
		return -1;
	pl->n = pl->cp.n;
	memset(pl->slot, -1, sizeof(pl->slot));
	for (unsigned g = 0; g < NGROUPS; g++)
		if (used & (1ull << g))
			pl->slot[g] = (int8_t)pl->nslots++;
	pl->prog = calloc(pl->n, sizeof(*pl->prog));
	pl->pc = calloc(pl->n, sizeof(*pl->pc));
	pl->compi = malloc(pl->n * (size_t)(pl->nslots ? pl->nslots : 1) *
			   sizeof(*pl->compi));
	pl->queue = malloc(pl->n * sizeof(*pl->queue));
	pl->inq = calloc(pl->n, 1);
	pl->why = calloc(pl->n, 1);
	pl->cyc = calloc(pl->n, 1);
	pl->inst = malloc(pl->n * sizeof(uint32_t));
	pl->next = malloc(pl->n * sizeof(uint32_t));
	pl->leaf = malloc(pl->n * sizeof(uint32_t));
	pl->root = malloc(pl->n * sizeof(uint32_t));
	if (!pl->prog || !pl->pc || !pl->compi || !pl->queue || !pl->inq ||
	    !pl->why || !pl->cyc || !pl->inst || !pl->next || !pl->leaf ||
	    !pl->root)
		return -1;
	memset(pl->compi, 0xff, pl->n * (size_t)(pl->nslots ? pl->nslots : 1) *
	       sizeof(*pl->compi));
	for (uint32_t c = 0; c < pl->n; c++) {
		struct disp_rank dr = { .left_out_by = AX_N, .shard = -1 };
		int id = s->rank_prog(s->ctx, pl->cp.rep[c], &dr);

		pl->prog[c] = id >= 0 && (size_t)id < s->n_progs ?
			&s->progs[id] : NULL;
		pl->inst[c] = pl->next[c] = pl->leaf[c] = pl->root[c] = NO_CLS;
	}
	return 0;
}

static void release_play(struct play *pl)
{
	for (size_t i = 0; i < pl->ncomps; i++)
		free(pl->comps[i].v);
	free(pl->comps);
	free(pl->prog);
	free(pl->pc);
	free(pl->compi);
	free(pl->queue);
	free(pl->inq);
	free(pl->why);
	free(pl->cyc);
	free(pl->inst);
	free(pl->next);
	free(pl->leaf);
	free(pl->root);
	cls_release(&pl->cp);
}

int match_run(const struct match_setup *s, struct sim_call_result *res,
	      struct diag_list *diags)
{
	struct play pl;
	int rc = -1, blocked = 0;

	res->status = SIM_ERROR;
	res->invoked = res->with_data = res->returned = res->n_ops = 0;
	res->first_diag = diags->n;
	res->n_diags = 0;
	if (!s->p->grid_ok)
		return -1;
	if (setup_play(&pl, s, res))
		goto out;
	play(&pl);
	if (pl.oom)
		goto out;
	for (uint32_t c = 0; c < pl.n; c++)
		if (cur(&pl, c)) {
			diagnose(&pl, c);
			blocked = 1;
		}
	if (pl.oom || (blocked && resolve(&pl)))
		goto out;
	res->status = blocked ? report(&pl, diags) : SIM_OK;
	res->n_diags = diags->n - res->first_diag;
	rc = 0;
out:
	release_play(&pl);
	return rc;
}

/* ---- match_call: the driver and the stage programs --------------------- */

struct call_ctx {
	const struct plan *p;
	const struct drv_layout *dl;
	const struct call_def *c;
	int per_stage;
};

static int call_rank_prog(void *ctx, long long rank, struct disp_rank *dr)
{
	const struct call_ctx *x = ctx;

	disp_rank(x->dl, x->c, rank, dr);
	if (!dr->called)
		return -1;
	if (!x->per_stage)
		return 0;
	return (int)((rank / x->p->dense.stride[LAY_PP]) % x->p->dense.size[LAY_PP]);
}

/* The programs of call c, one per pipeline stage when they differ by
 * stage (x->per_stage), else one. *progs is heap-allocated; release each
 * of the *n built and free it, also on error. Returns 0, or -1. */
static int call_progs(const struct plan *p, const struct model_shape *m,
		      const struct call_def *c, const struct prog_opts *o,
		      struct call_ctx *x, struct prog **progs, size_t *n)
{
	size_t want;

	/* only these programs differ by pipeline stage */
	x->per_stage = c->program == PROG_TRAIN || c->program == PROG_FORWARD ||
		       c->program == PROG_REFIT_IPC ||
		       c->program == PROG_REFIT_BROADCAST ||
		       c->program == PROG_REFIT_RESHARD;
	want = (size_t)(x->per_stage ? p->pp : 1);
	*n = 0;
	*progs = calloc(want, sizeof(**progs));
	if (!*progs)
		return -1;
	for (; *n < want; ++*n)
		if (prog_build(&(*progs)[*n], p, m, c->program, (long long)*n,
			       o))
			return -1;
	return 0;
}

static void free_progs(struct prog *progs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		prog_release(&progs[i]);
	free(progs);
}

int match_call(const struct plan *p, const struct model_shape *m,
	       const struct drv_layout *dl, const struct call_def *c,
	       const struct prog_opts *o, struct sim_call_result *res,
	       struct diag_list *diags)
{
	struct call_ctx x = { p, dl, c, 1 };
	struct match_setup s = {
		.p = p, .call = c->name, .loc = c->loc, .rank_prog =
		call_rank_prog, .ctx = &x, .dl = dl, .def = c,
	};
	struct prog *progs = NULL;
	size_t n = 0;
	int rc = -1;

	res->call = c;
	res->status = SIM_ERROR;
	res->first_diag = diags->n;
	res->n_diags = 0;
	res->shards = p->grid_ok ? disp_shard_count(dl, c) : 0;
	if (!p->grid_ok)
		return -1;
	if (call_progs(p, m, c, o, &x, &progs, &n))
		goto out;
	s.progs = progs;
	s.n_progs = n;
	if (x.per_stage)
		stages_check(p, progs, n, c->name, o, diags);
	rc = match_run(&s, res, diags);
out:
	free_progs(progs, n);
	return rc;
}

/* ---- match_call_where: the state after the play, for pictures ---------- */

void match_where_release(struct match_where *w)
{
	free(w->cls);
	free(w->c);
	memset(w, 0, sizeof(*w));
}

int match_call_where(const struct plan *p, const struct model_shape *m,
		     const struct drv_layout *dl, const struct call_def *c,
		     const struct prog_opts *o, struct match_where *w)
{
	struct call_ctx x = { p, dl, c, 1 };
	struct match_setup s = {
		.p = p, .call = c->name, .loc = c->loc, .rank_prog =
		call_rank_prog, .ctx = &x, .dl = dl, .def = c,
	};
	struct sim_call_result res;
	struct prog *progs = NULL;
	struct play pl;
	size_t n = 0;
	int rc = -1, played = 0;

	memset(w, 0, sizeof(*w));
	memset(&res, 0, sizeof(res));
	if (!p->grid_ok)
		return -1;
	if (call_progs(p, m, c, o, &x, &progs, &n))
		goto out;
	s.progs = progs;
	s.n_progs = n;
	played = 1;
	if (setup_play(&pl, &s, &res))
		goto out;
	play(&pl);
	if (pl.oom)
		goto out;
	w->c = calloc(pl.n ? pl.n : 1, sizeof(*w->c));
	if (!w->c)
		goto out;
	/* the rank -> class map is the partition's colour array: take it */
	w->cls = pl.cp.colour;
	pl.cp.colour = NULL;
	w->world = p->world;
	w->n = pl.n;
	for (uint32_t k = 0; k < pl.n; k++) {
		struct match_class *mc = &w->c[k];
		const struct prog_op *op = cur(&pl, k);

		mc->called = pl.prog[k] != NULL;
		mc->op = -1;
		if (!op)
			continue;
		mc->blocked = 1;
		mc->op = (long long)pl.pc[k];
		mc->kind = op->kind == OP_P2P ? "p2p" :
			   prog_op_kind_name((enum prog_op_kind)op->kind);
		mc->group = op->kind == OP_P2P ? "pp" : prog_group_name(op->group);
		prog_op_label(pl.prog[k], op, mc->label, sizeof(mc->label));
	}
	rc = 0;
out:
	if (played)
		release_play(&pl);
	if (rc)
		match_where_release(w);
	free_progs(progs, n);
	return rc;
}
