/*
 * match: class-level play of the programs with NCCL semantics, and the
 * findings when they do not complete (see match.h for the argument why
 * playing classes is exact).
 *
 * This file: the play, why a blocked class is blocked, and match_run;
 * match_int.h names the module's other files.
 */
#include "match.h"

#include <stdlib.h>
#include <string.h>

#include "match_int.h"

/* ---- small helpers ---------------------------------------------------- */

static void push(struct match_play *pl, uint32_t c)
{
	if (pl->inq[c])
		return;
	pl->inq[c] = 1;
	pl->queue[(pl->qh + pl->qn++) % pl->n] = c;
}

/* ---- the play --------------------------------------------------------- */

/* Runs class a as far as it goes; completes ops other classes wait in. */
static void advance(struct match_play *pl, uint32_t a)
{
	const struct prog_op *op;

	while ((op = match_cur(pl, a)) && !pl->oom) {
		if (op->kind == OP_COMPUTE) {
			pl->pc[a]++;
			continue;
		}
		if (op->kind == OP_P2P) {
			uint32_t b = match_peer(pl, a, op);

			if (b == MATCH_NO_CLS || !match_ready(pl, b, op))
				return;
			pl->pc[b]++;
			push(pl, b);
			pl->pc[a]++;
			continue;
		}
		const struct match_comp *k = match_comp_of(pl, a, op->group);

		if (!k)
			return;
		for (size_t i = 0; i < k->n; i++)
			if (k->v[i].cls != a &&
			    !match_ready(pl, k->v[i].cls, op))
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

void match_play_run(struct match_play *pl)
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

/* Fills why, inst, next (first stuck waitee) and leaf (first waitee of
 * the root reason) for a blocked class. */
static void diagnose(struct match_play *pl, uint32_t a)
{
	const struct prog_op *op = match_cur(pl, a);
	uint32_t first[WHY_NEVER + 1];
	enum match_why best = WHY_NONE;

	for (int i = 0; i <= WHY_NEVER; i++)
		first[i] = MATCH_NO_CLS;
	pl->inst[a] = a;
	if (op->kind == OP_P2P) {
		uint32_t b = match_peer(pl, a, op);
		const struct prog_op *o = b == MATCH_NO_CLS ? NULL :
			match_cur(pl, b);

		best = match_classify(pl, b, op);
		first[best] = b;
		/* two stages facing each other are one instance */
		if (o && o->kind == OP_P2P && match_peer(pl, b, o) == a &&
		    b < a)
			pl->inst[a] = b;
	} else {
		const struct match_comp *k = match_comp_of(pl, a, op->group);

		for (size_t i = 0; k && i < k->n; i++) {
			uint32_t b = k->v[i].cls;
			const struct prog_op *o = match_cur(pl, b);
			enum match_why w;

			/* one instance: the classes at an op on this group */
			if (o && o->group == op->group && b < pl->inst[a])
				pl->inst[a] = b;
			if (b == a || match_ready(pl, b, op))
				continue;
			w = match_classify(pl, b, op);
			if (first[w] == MATCH_NO_CLS)
				first[w] = b;
			if (w > best)
				best = w;
		}
	}
	pl->why[a] = (uint8_t)best;
	pl->next[a] = first[WHY_STUCK];
	pl->leaf[a] = best > WHY_STUCK ? first[best] : MATCH_NO_CLS;
}

/* Follows stuck chains to their roots; marks cycles. root[c] is the root
 * class, or the first class of the cycle the chain ends in. */
static int resolve(struct match_play *pl)
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

		if (!match_cur(pl, a) || mark[a])
			continue;
		while (x != MATCH_NO_CLS && !mark[x] &&
		       pl->why[x] == WHY_STUCK) {
			mark[x] = 1;
			path[len++] = x;
			x = pl->next[x];
		}
		if (x != MATCH_NO_CLS && mark[x] == 1) {
			r = x; /* a cycle: from x to the end of the path */
			for (size_t i = len; i-- > 0;) {
				pl->cyc[path[i]] = 1;
				if (path[i] == x)
					break;
			}
		} else if (x != MATCH_NO_CLS && mark[x] == 2) {
			r = pl->root[x];
		} else {
			r = x; /* a root (or nothing to wait on) */
			if (x != MATCH_NO_CLS) {
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

/* ---- entry points ------------------------------------------------------ */

int match_play_setup(struct match_play *pl, const struct match_setup *s,
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
	for (unsigned g = 0; g < MATCH_NGROUPS; g++)
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
		pl->inst[c] = pl->next[c] = pl->leaf[c] = pl->root[c] =
			MATCH_NO_CLS;
	}
	return 0;
}

void match_play_release(struct match_play *pl)
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
	struct match_play pl;
	int rc = -1, blocked = 0;

	res->status = SIM_ERROR;
	res->invoked = res->with_data = res->returned = res->n_ops = 0;
	res->first_diag = diags->n;
	res->n_diags = 0;
	if (!s->p->grid_ok)
		return -1;
	if (match_play_setup(&pl, s, res))
		goto out;
	match_play_run(&pl);
	if (pl.oom)
		goto out;
	for (uint32_t c = 0; c < pl.n; c++)
		if (match_cur(&pl, c)) {
			diagnose(&pl, c);
			blocked = 1;
		}
	if (pl.oom || (blocked && resolve(&pl)))
		goto out;
	res->status = blocked ? match_report(&pl, diags) : SIM_OK;
	res->n_diags = diags->n - res->first_diag;
	rc = 0;
out:
	match_play_release(&pl);
	return rc;
}
