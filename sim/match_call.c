/*
 * match_call: the driver's call as a match: the programs of its stages,
 * the ranks that run them, and the state after the play for pictures.
 */
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "match_int.h"
#include "stages.h"

/* ---- match_call: the driver and the stage programs --------------------- */

struct call_ctx {
	const struct plan *p;
	const struct drv_layout *dl;
	const struct call_def *c;
	int per_stage;
	/* rank `next`'s driver coordinates and pipeline stage (`step`: its
	 * place in the run of stride[LAY_PP] ranks of one stage): the setup
	 * asks for every rank in order, and these advance without dividing */
	long long next, co[AX_N], stage, step;
};

static void call_ctx_init(struct call_ctx *x, const struct plan *p,
			  const struct drv_layout *dl,
			  const struct call_def *c)
{
	memset(x, 0, sizeof(*x));
	x->p = p;
	x->dl = dl;
	x->c = c;
	x->per_stage = 1;
	if (p->grid_ok) /* else dl is not set up, and no rank is asked */
		drv_coords(dl, 0, x->co);
}

static int call_rank_prog(void *ctx, long long rank, struct disp_rank *dr)
{
	struct call_ctx *x = ctx;
	const struct lay_grid *g = &x->p->dense;
	long long stage;

	if (rank != x->next) {
		disp_rank(x->dl, x->c, rank, dr);
		stage = rank / g->stride[LAY_PP] % g->size[LAY_PP];
	} else {
		disp_decide(x->dl, x->c, x->co, dr);
		stage = x->stage;
		x->next = rank + 1 < x->dl->world ? rank + 1 : 0;
		drv_coords_next(x->dl, x->co);
		if (++x->step == g->stride[LAY_PP]) {
			x->step = 0;
			if (++x->stage == g->size[LAY_PP])
				x->stage = 0;
		}
	}
	if (!dr->called)
		return -1;
	return x->per_stage ? (int)stage : 0;
}

/* The programs of call c, one per pipeline stage when they differ by
 * stage (x->per_stage), else one, handed to the play s. *progs is
 * heap-allocated; release each of the *n built and free it, also on
 * error. Returns 0, or -1 (also without a rank grid, and when they would
 * hold more than PROG_MAX_OPS ops in all). */
static int call_progs(const struct plan *p, const struct model_shape *m,
		      const struct call_def *c, const struct prog_opts *o,
		      struct call_ctx *x, struct match_setup *s,
		      struct prog **progs, size_t *n)
{
	size_t want;

	if (!p->grid_ok)
		return -1;
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
	/* the stages' programs together stay within PROG_MAX_OPS too, so
	 * that PP in the millions is refused, not built */
	for (size_t total = 0; *n < want; ++*n) {
		if (prog_build(&(*progs)[*n], p, m, c->program, (long long)*n,
			       o))
			return -1;
		total += (*progs)[*n].n;
		if (total > (size_t)PROG_MAX_OPS) {
			++*n;
			return -1;
		}
	}
	s->progs = *progs;
	s->n_progs = *n;
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
	struct call_ctx x;
	struct match_setup s = {
		.p = p, .call = c->name, .loc = c->loc, .rank_prog =
		call_rank_prog, .ctx = &x, .dl = dl, .def = c,
	};
	struct prog *progs = NULL;
	size_t n = 0;
	int rc = -1;

	call_ctx_init(&x, p, dl, c);
	res->call = c;
	res->status = SIM_ERROR;
	res->first_diag = diags->n;
	res->n_diags = 0;
	res->shards = p->grid_ok ? disp_shard_count(dl, c) : 0;
	if (call_progs(p, m, c, o, &x, &s, &progs, &n))
		goto out;
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
	struct call_ctx x;
	struct match_setup s = {
		.p = p, .call = c->name, .loc = c->loc, .rank_prog =
		call_rank_prog, .ctx = &x, .dl = dl, .def = c,
	};
	struct sim_call_result res;
	struct prog *progs = NULL;
	struct match_play pl;
	size_t n = 0;
	int rc = -1, played = 0;

	call_ctx_init(&x, p, dl, c);
	memset(w, 0, sizeof(*w));
	memset(&res, 0, sizeof(res));
	if (call_progs(p, m, c, o, &x, &s, &progs, &n))
		goto out;
	played = 1;
	if (match_play_setup(&pl, &s, &res))
		goto out;
	match_play_run(&pl);
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
		const struct prog_op *op = match_cur(&pl, k);

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
		match_play_release(&pl);
	if (rc)
		match_where_release(w);
	free_progs(progs, n);
	return rc;
}
