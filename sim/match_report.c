/*
 * match_report: the findings when a call does not complete (GT500-GT504):
 * the root causes first, then wait-for cycles, then the ops that wait
 * behind them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match_int.h"
#include "strbuf.h"

/* ---- findings ---------------------------------------------------------- */

/* A finding's text: what was written, or what fits when memory ran out. */
static const char *text(const struct strbuf *s)
{
	return s->buf ? s->buf : "";
}

/* "1 was" / "2 were": the verb for a count. */
static const char *pl_s(long long n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void rank_desc(const struct match_play *pl, long long r, struct strbuf *s)
{
	long long c[LAY_NAXES];

	lay_coords(&pl->p->dense, r, c);
	strbuf_addf(s, "rank %lld (t%lld c%lld g%lld d%lld p%lld)", r, c[LAY_TP],
	   c[LAY_CP], c[LAY_GTP], c[LAY_DP], c[LAY_PP]);
}

static void bytes_desc(long long b, struct strbuf *s)
{
	if (b < 1024)
		strbuf_addf(s, "%lld bytes", b);
	else if (b < 1024 * 1024)
		strbuf_addf(s, "%.1f KiB", (double)b / 1024);
	else if (b < 1024LL * 1024 * 1024)
		strbuf_addf(s, "%.2f MiB", (double)b / (1024 * 1024));
	else
		strbuf_addf(s, "%.2f GiB", (double)b / (1024.0 * 1024 * 1024));
}

static void group_desc(const struct match_play *pl, unsigned group, long long r,
		       struct strbuf *s)
{
	const struct lay_group_kind *gk = lay_group_kind_at(group);
	long long idx, size;

	if (!gk) {
		strbuf_addf(s, "%s (all %lld training ranks%s)", prog_group_name(group),
		   pl->p->world, group == PROG_GK_TRAIN_INFER ?
		   " and the inference engine" : "");
		return;
	}
	size = lay_group_size(cls_grid(pl->p, group), gk->axes);
	lay_group_of(cls_grid(pl->p, group), gk->axes, r, &idx, NULL);
	strbuf_addf(s, "%s groups such as [", gk->name);
	for (long long i = 0; i < size; i++) {
		if (size > 8 && i == 4) {
			strbuf_addf(s, ", ...");
			i = size - 1;
		}
		strbuf_addf(s, "%s%lld", i ? ", " : "",
		   lay_group_member(cls_grid(pl->p, group), gk->axes, idx, i));
	}
	strbuf_addf(s, "]");
	if (size > 8)
		strbuf_addf(s, " (%lld ranks)", size);
}

/* Up to `max` ranks of r's group of `group` whose class is wanted. */
static size_t pick(const struct match_play *pl, unsigned group, long long r,
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

static void examples(const struct match_play *pl, unsigned group, long long r,
		     const uint8_t *want, struct strbuf *s, long long *first)
{
	long long ex[4];
	size_t n = pick(pl, group, r, want, ex, 4);

	for (size_t i = 0; i < n && i < 3; i++) {
		strbuf_addf(s, "%s", i ? ", " : "");
		rank_desc(pl, ex[i], s);
	}
	if (n > 3)
		strbuf_addf(s, ", ...");
	if (first)
		*first = n ? ex[0] : -1;
}

static void op_desc(const struct match_play *pl, uint32_t c, struct strbuf *s)
{
	char lab[256];
	const struct prog_op *op = match_cur(pl, c);

	strbuf_addf(s, "op #%zu, %s", pl->pc[c],
	   prog_op_label(pl->prog[c], op, lab, sizeof(lab)));
}

/* Why the driver left rank m out (appended to s), and the hint that goes
 * with it (into h). */
static void never_why(const struct match_play *pl, long long m, struct strbuf *s,
		      struct strbuf *h)
{
	struct disp_rank dr = { .left_out_by = AX_N, .shard = -1 };
	long long co[AX_N];
	const char *ax;

	pl->s->rank_prog(pl->s->ctx, m, &dr);
	if (dr.left_out_by == AX_N || !pl->s->dl) {
		strbuf_addf(s, "the driver does not call them");
		strbuf_addf(h, "every member of a group must run the call");
		return;
	}
	ax = drv_axis_name(dr.left_out_by);
	drv_coords(pl->s->dl, m, co);
	if (pl->s->def && pl->s->def->dispatch != CALL_SHARDED)
		strbuf_addf(s, "the driver calls %s only at index 0 of '%s', one of its "
		   "run_rank_0_only_axes, and rank %lld is at index %lld there",
		   pl->s->call, ax, m, co[dr.left_out_by]);
	else
		strbuf_addf(s, "the driver calls %s only at index 0 of '%s', which the "
		   "call neither shards nor replicates, and rank %lld is at "
		   "index %lld there", pl->s->call, ax, m, co[dr.left_out_by]);
	if (dr.left_out_by == AX_GTP)
		strbuf_addf(h, "keep the 4-D driver layout (gtplan.driver_layout: 4d): "
		   "its data_parallel axis already counts every lane as d x G "
		   "+ g, so a call that shards data_parallel reaches every GPU");
	else
		strbuf_addf(h, "shard or replicate '%s' in %s (or make dummy calls to "
		   "free axes) so that every member of the group runs it", ax,
		   pl->s->call);
}

/* The first GTP all-gather after the op class a hangs in, when it would
 * wait for never-called ranks too. */
static void gtp_note(struct match_play *pl, uint32_t a, struct diag *d)
{
	const struct prog *g = pl->prog[a];
	unsigned gtp = prog_kind("gtp");
	size_t save = pl->pc[a];

	if (match_cur(pl, a)->group == gtp)
		return;
	for (size_t i = save + 1; i < g->n; i++) {
		const struct match_comp *k;
		long long called = 0, all = 0;
		struct strbuf s = STRBUF_INIT;

		if (g->ops[i].group != gtp || g->ops[i].kind != OP_ALL_GATHER)
			continue;
		k = match_comp_of(pl, a, gtp);
		for (size_t j = 0; k && j < k->n; j++) {
			all += k->v[j].n;
			called += pl->prog[k->v[j].cls] ? k->v[j].n : 0;
		}
		if (!k || called == all)
			return;
		pl->pc[a] = i;
		op_desc(pl, a, &s);
		pl->pc[a] = save;
		strbuf_addf(&s, ", would wait for never-called ranks too: ");
		group_desc(pl, gtp, pl->cp.rep[a], &s);
		diag_note(d, DIAG_NOLOC, "past it, %s; %lld of the %lld members "
			  "of each such group %s called", text(&s), called,
			  all, called == 1 ? "is" : "are");
		strbuf_release(&s);
		return;
	}
}

/* Counts of one blocked collective: arrived, and by why. */
struct tally {
	long long all, arrived, per_group, arrived_group;
	long long by[WHY_NEVER + 1];
};

static void tally(struct match_play *pl, uint32_t a, const struct match_comp *k,
		  uint8_t *want_arr, uint8_t *want_why, enum match_why w,
		  struct tally *t)
{
	const struct prog_op *op = match_cur(pl, a);

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; k && i < k->n; i++) {
		uint32_t b = k->v[i].cls;
		long long cnt = pl->cp.count[b];

		t->all += cnt;
		t->per_group += k->v[i].n;
		if (b == a || match_ready(pl, b, op)) {
			want_arr[b] = 1;
			t->arrived += cnt;
			t->arrived_group += k->v[i].n;
		} else {
			enum match_why x = match_classify(pl, b, op);

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

static void report_collective(struct match_play *pl, uint32_t a,
			      struct diag_list *diags, uint8_t *wa,
			      uint8_t *ww)
{
	const struct prog_op *op = match_cur(pl, a);
	const struct match_comp *k = match_comp_of(pl, a, op->group);
	enum match_why w = (enum match_why)pl->why[a];
	struct strbuf s = STRBUF_INIT, h = STRBUF_INIT;
	struct tally t;
	struct diag *d;
	long long miss = -1, r = pl->cp.rep[a];

	memset(wa, 0, pl->n);
	memset(ww, 0, pl->n);
	tally(pl, a, k, wa, ww, w, &t);
	strbuf_addf(&s, "%s %s at ", pl->s->call, w == WHY_MISMATCH ?
	   "issues mismatched collectives" : "hangs");
	op_desc(pl, a, &s);
	strbuf_addf(&s, ", ");
	bytes_desc(op->amount, &s);
	strbuf_addf(&s, " per rank, over ");
	group_desc(pl, op->group, r, &s);
	strbuf_addf(&s, ": %lld of their %lld ranks arrived (", t.arrived, t.all);
	examples(pl, op->group, r, wa, &s, NULL);
	if (w == WHY_NEVER) {
		strbuf_addf(&s, "); %lld %s never called (", t.by[WHY_NEVER],
		   pl_s(t.by[WHY_NEVER], "was", "were"));
		examples(pl, op->group, r, ww, &s, &miss);
		strbuf_addf(&s, "): ");
	} else if (w == WHY_DONE) {
		strbuf_addf(&s, "); %lld had already finished the call (",
		   t.by[WHY_DONE]);
		examples(pl, op->group, r, ww, &s, &miss);
		strbuf_addf(&s, ") after %zu op%s", pl->prog[pl->leaf[a]]->n,
		   pl_s((long long)pl->prog[pl->leaf[a]]->n, "", "s"));
	} else {
		uint32_t b = pl->leaf[a];

		strbuf_addf(&s, "); %lld %s a different op there instead (",
		   t.by[WHY_MISMATCH], pl_s(t.by[WHY_MISMATCH], "issues",
					    "issue"));
		examples(pl, op->group, r, ww, &s, &miss);
		strbuf_addf(&s, "): ");
		op_desc(pl, b, &s);
		strbuf_addf(&s, ", ");
		bytes_desc(match_cur(pl, b)->amount, &s);
		strbuf_addf(&s, " per rank");
	}
	if (w == WHY_NEVER && miss >= 0)
		never_why(pl, miss, &s, &h);
	d = diag_add(diags, root_code[w], pl->s->loc, NULL, "%s", text(&s));
	if (h.len)
		diag_hint(d, "%s", text(&h));
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
	strbuf_release(&s);
	strbuf_release(&h);
}

static void report_p2p(struct match_play *pl, uint32_t a,
		       struct diag_list *diags)
{
	const struct prog_op *op = match_cur(pl, a);
	uint32_t b = match_peer(pl, a, op);
	long long ra = pl->cp.rep[a];
	struct strbuf s = STRBUF_INIT, h = STRBUF_INIT;
	enum match_why w = (enum match_why)pl->why[a];
	struct diag *d;

	strbuf_addf(&s, "%s %s: ", pl->s->call, w == WHY_MISMATCH ?
	   "issues p2p exchanges that do not pair" : "hangs");
	rank_desc(pl, ra, &s);
	strbuf_addf(&s, " (stage %lld) is at ", match_stage_of(pl, ra));
	op_desc(pl, a, &s);
	if (b == MATCH_NO_CLS) {
		strbuf_addf(&s, ", but there is no such stage");
	} else if (w == WHY_NEVER) {
		strbuf_addf(&s, ", and its peer ");
		rank_desc(pl, pl->cp.rep[b], &s);
		strbuf_addf(&s, " was never called: ");
	} else if (w == WHY_DONE) {
		strbuf_addf(&s, ", but its peer ");
		rank_desc(pl, pl->cp.rep[b], &s);
		strbuf_addf(&s, " had already finished the call after %zu op%s",
		   pl->prog[b]->n, pl_s((long long)pl->prog[b]->n, "", "s"));
	} else {
		strbuf_addf(&s, ", while its peer ");
		rank_desc(pl, pl->cp.rep[b], &s);
		strbuf_addf(&s, " is at ");
		op_desc(pl, b, &s);
	}
	if (w == WHY_NEVER)
		never_why(pl, pl->cp.rep[b], &s, &h);
	d = diag_add(diags, root_code[w], pl->s->loc, NULL, "%s", text(&s));
	if (h.len)
		diag_hint(d, "%s", text(&h));
	else if (w == WHY_DONE)
		diag_hint(d, "the stages' programs differ in length (micro-"
			  "batches or layers); both stages must run the same "
			  "number of exchanges");
	else if (w != WHY_NEVER)
		diag_hint(d, "each exchange must meet its complement on the "
			  "neighbouring stage (a send forward meets a receive "
			  "forward), in the same order on both stages");
	strbuf_release(&s);
	strbuf_release(&h);
}

static void report_cycle(struct match_play *pl, uint32_t a,
			 struct diag_list *diags)
{
	struct strbuf s = STRBUF_INIT;
	struct diag *d;
	uint32_t x = a;
	int links = 0;

	strbuf_addf(&s, "%s deadlocks in a wait-for cycle: ", pl->s->call);
	do {
		strbuf_addf(&s, "%s", links ? ", which waits for " : "");
		rank_desc(pl, pl->cp.rep[x], &s);
		strbuf_addf(&s, " at ");
		op_desc(pl, x, &s);
		x = pl->next[x];
	} while (x != a && x != MATCH_NO_CLS && ++links < 4);
	strbuf_addf(&s, ", which waits for ");
	rank_desc(pl, pl->cp.rep[x], &s);
	d = diag_add(diags, "GT503", pl->s->loc, NULL, "%s", text(&s));
	diag_hint(d, "order the exchanges so that every send meets a receive "
		  "that is posted in the same order (Megatron batches "
		  "send_forward_recv_backward into one grouped call)");
	strbuf_release(&s);
}

static void report_derived(struct match_play *pl, uint32_t a,
			   struct diag_list *diags, uint8_t *wa, uint8_t *ww)
{
	const struct prog_op *op = match_cur(pl, a);
	uint32_t b = pl->next[a], r = pl->root[a];
	struct strbuf s = STRBUF_INIT;
	struct tally t = { .by = { 0 } };
	struct diag *d;
	long long ra = pl->cp.rep[a];

	memset(wa, 0, pl->n);
	memset(ww, 0, pl->n);
	strbuf_addf(&s, "%s hangs at ", pl->s->call);
	op_desc(pl, a, &s);
	if (op->kind == OP_P2P) {
		strbuf_addf(&s, " on ");
		rank_desc(pl, ra, &s);
		strbuf_addf(&s, ": its peer ");
	} else {
		tally(pl, a, match_comp_of(pl, a, op->group), wa, ww, WHY_STUCK,
		      &t);
		strbuf_addf(&s, ", over ");
		group_desc(pl, op->group, ra, &s);
		strbuf_addf(&s, ": %lld of their %lld ranks arrived (", t.arrived, t.all);
		examples(pl, op->group, ra, wa, &s, NULL);
		strbuf_addf(&s, "); %lld %s stuck at an earlier op, e.g. ",
		   t.by[WHY_STUCK], pl_s(t.by[WHY_STUCK], "is", "are"));
	}
	rank_desc(pl, pl->cp.rep[b], &s);
	strbuf_addf(&s, " at ");
	op_desc(pl, b, &s);
	if (r != MATCH_NO_CLS && pl->cyc[r]) {
		strbuf_addf(&s, "; the chain ends in a wait-for cycle (GT503)");
	} else if (r == b) {
		strbuf_addf(&s, ", which cannot complete (%s)", root_code[pl->why[r]]);
	} else if (r != MATCH_NO_CLS) {
		strbuf_addf(&s, "; the chain ends at ");
		rank_desc(pl, pl->cp.rep[r], &s);
		strbuf_addf(&s, " at ");
		op_desc(pl, r, &s);
		strbuf_addf(&s, " (%s)", root_code[pl->why[r]]);
	}
	d = diag_add(diags, "GT501", pl->s->loc, NULL, "%s", text(&s));
	diag_hint(d, "fix the op the chain ends at; this one then completes");
	strbuf_release(&s);
}

/* Emits the findings; returns the call's status. */
enum sim_status match_report(struct match_play *pl, struct diag_list *diags)
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
		if (!match_cur(pl, a))
			continue;
		if (pl->why[a] == WHY_MISMATCH)
			st = SIM_MISMATCH;
		if (pl->why[a] == WHY_STUCK || pl->inst[a] != a)
			continue;
		if (roots++ >= MATCH_MAX_ROOTS)
			continue;
		if (match_cur(pl, a)->kind == OP_P2P)
			report_p2p(pl, a, diags);
		else
			report_collective(pl, a, diags, wa, ww);
	}
	for (uint32_t a = 0; a < pl->n; a++) {
		uint32_t r = pl->root[a];

		if (!match_cur(pl, a) || !pl->cyc[a] || r == MATCH_NO_CLS ||
		    seen[r])
			continue;
		seen[r] = 1;
		if (roots++ < MATCH_MAX_ROOTS)
			report_cycle(pl, r, diags);
	}
	for (uint32_t a = 0; a < pl->n; a++) {
		if (!match_cur(pl, a) || pl->why[a] != WHY_STUCK ||
		    pl->cyc[a] ||
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
