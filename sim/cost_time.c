/*
 * cost_time: collectives, compute and the stage programs as a timeline
 * (see cost.h; cost.c has the sources of the constants).
 *
 * The play: each stage runs its program in order with a clock; an op on
 * a group inside the stage takes its alpha-beta time; a p2p exchange waits
 * for the neighbouring stage's complementary op; a group with members on
 * every stage (pp, mp, WORLD) waits for all stages. With GTP prefetch a
 * layer's GTP weight gathers and gradient scatters hide behind the compute
 * before them (Megatron's one-layer-ahead all-gather; the scatter deferred
 * by one layer): only the excess is on the critical path. Not modelled:
 * the DP gradient reduction overlapping backward (overlap_grad_reduce),
 * attention's s^2 flops, the optimizer step's memory-bound update.
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

/* ---- collectives and compute ---------------------------------------------- */

static double ceil_log2(long long n)
{
	double k = 0;

	while ((1LL << (long long)k) < n && k < 62)
		k++;
	return k;
}

double cost_coll_us(const struct cost_settings *s, unsigned kind,
		    long long n, long long amount, int spans)
{
	double bw = (spans ? s->inter_gbps : s->intra_gbps) * 1e3; /* B/us */
	double a = spans ? s->inter_lat_us : s->intra_lat_us;
	double nn = (double)n, S = (double)(amount > 0 ? amount : 0);
	double ring, tree;

	if (kind == OP_P2P)
		return a + S / bw;
	if (n <= 1 || kind == OP_COMPUTE)
		return 0;
	switch (kind) {
	case OP_ALL_GATHER:
	case OP_REDUCE_SCATTER:
		/* nccl-tests: S is the whole array, busbw = algbw (n-1)/n */
		return (nn - 1) * a + S * nn * (nn - 1) / nn / bw;
	case OP_ALL_REDUCE:
		ring = 2 * (nn - 1) * a + 2 * (nn - 1) / nn * S / bw;
		tree = 2 * ceil_log2(n) * a + 2 * S / bw;
		return ring < tree ? ring : tree;
	case OP_BARRIER:
		ring = 2 * (nn - 1) * a;
		tree = 2 * ceil_log2(n) * a;
		return ring < tree ? ring : tree;
	case OP_BROADCAST:
		return (nn - 1) * a + S / bw;
	case OP_ALL_TO_ALL:
		return (nn - 1) * a + S * (nn - 1) / nn / bw;
	case OP_SEND_RECV:
		/* S sent one way while as much arrives the other (full
		 * duplex links) */
		return a + S / bw;
	default:
		return 0;
	}
}

double cost_compute_us(const struct cost_settings *s, double flops)
{
	double rate = s->peak_tflops * s->efficiency * 1e6; /* flop/us */

	return rate > 0 ? flops / rate : 0;
}

/* ---- time: the stage programs as a discrete-event simulation -------------- */

struct stage_run {
	const struct prog *pg;
	size_t i;                 /* next op */
	double clk;               /* when the stage is free again */
	double budget;            /* compute a prefetch can still hide behind */
	double compute, comm, wait, hidden, gtp, gtp_exposed;
	double *by;               /* exposed us per (op kind, group) */
	long long *nby;
};

struct play {
	struct cost_model *cm;
	struct stage_run *st;
	long long n;              /* stages played */
	unsigned k_gtp, k_egtp, k_pp;
	double logit_flops;       /* output layer, one micro-batch forward */
	cost_event_fn fn;
	void *ctx;
	int stop;
};

/* A collective on a group with members on every stage. */
static int spans_stages(unsigned group)
{
	const struct lay_group_kind *gk = lay_group_kind_at(group);

	if (group == PROG_GK_WORLD || group == PROG_GK_TRAIN_INFER)
		return 1;
	return gk && (gk->axes & (1u << LAY_PP));
}

static double op_us(struct play *pl, long long stage,
		    const struct prog_op *op, int *spans)
{
	struct cost_model *cm = pl->cm;
	unsigned g = op->kind == OP_P2P ? pl->k_pp : op->group;

	*spans = 0;
	if (op->kind == OP_COMPUTE) {
		double f = (double)op->amount;

		/* full recompute runs each layer's forward again */
		if (op->phase == PH_BWD && cm->s.recompute == COST_RECOMPUTE_FULL)
			f *= 1.5;
		/* the output layer, which the programs leave out */
		if (stage == cm->p->pp - 1 && op->layer == cm->m.num_layers - 1)
			f += (op->phase == PH_BWD ? 2 : 1) * pl->logit_flops;
		return cost_compute_us(&cm->s, f);
	}
	*spans = cost_group_spans(cm, g, NULL);
	return cost_coll_us(&cm->s, op->kind, op->kind == OP_P2P ? 2 :
			    cost_group_size(cm->p, g), op->amount, *spans);
}

/* Completes the current op of stage s, which waited `wait` us for others
 * and then took `dur` us. */
static void complete(struct play *pl, long long s, double wait, double dur,
		     int spans)
{
	struct stage_run *x = &pl->st[s];
	const struct prog_op *op = &x->pg->ops[x->i++];
	double hidden = 0, shown;
	unsigned g = op->kind == OP_P2P ? pl->k_pp : op->group;

	if (op->kind == OP_COMPUTE) {
		x->compute += dur;
		x->budget = dur;
	} else if ((g == pl->k_gtp || g == pl->k_egtp) &&
		   op->what == W_WEIGHT &&
		   (op->phase == PH_FWD || op->phase == PH_BWD)) {
		hidden = dur < x->budget ? dur : x->budget;
		x->budget -= hidden;
		x->gtp += dur;
		x->gtp_exposed += dur - hidden;
		if (pl->cm->s.overlap == COST_OVERLAP_NONE)
			hidden = 0;
	}
	shown = dur - hidden;
	if (op->kind != OP_COMPUTE) {
		x->comm += shown;
		x->hidden += hidden;
		if (g < COST_KINDS && op->kind < OP_KIND_COUNT) {
			x->by[op->kind * COST_KINDS + g] += shown;
			x->nby[op->kind * COST_KINDS + g]++;
		}
	}
	x->wait += wait;
	if (pl->fn && !pl->stop) {
		struct cost_event ev = {
			.stage = s, .pg = x->pg, .op = op, .ts_us = x->clk,
			.dur_us = wait + shown, .wait_us = wait,
			.hidden_us = hidden, .bytes = op->amount, .spans = spans,
		};

		pl->stop = pl->fn(pl->ctx, &ev) != 0;
	}
	x->clk += wait + shown;
}

static const struct prog_op *cur(const struct play *pl, long long s)
{
	const struct stage_run *x = &pl->st[s];

	return x->i < x->pg->n ? &x->pg->ops[x->i] : NULL;
}

/* Runs stage s until it must wait for another stage; returns ops done. */
static long long advance(struct play *pl, long long s)
{
	long long done = 0;
	const struct prog_op *op;
	int spans;

	while (!pl->stop && (op = cur(pl, s)) != NULL) {
		double d = op_us(pl, s, op, &spans);

		if (op->kind == OP_P2P && pl->n > 1) {
			long long q = s + (op->flags & PROG_TO_NEXT ? 1 : -1);
			const struct prog_op *po;
			double t0;

			if (q < 0 || q >= pl->n || !(po = cur(pl, q)) ||
			    po->kind != OP_P2P ||
			    q + (po->flags & PROG_TO_NEXT ? 1 : -1) != s)
				return done;
			t0 = pl->st[s].clk > pl->st[q].clk ? pl->st[s].clk :
							      pl->st[q].clk;
			complete(pl, s, t0 - pl->st[s].clk, d, spans);
			complete(pl, q, t0 - pl->st[q].clk, d, spans);
		} else if (op->kind != OP_COMPUTE && op->kind != OP_P2P &&
			   pl->n > 1 && spans_stages(op->group)) {
			double t0 = 0;

			for (long long t = 0; t < pl->n; t++) {
				const struct prog_op *o = cur(pl, t);

				if (!o || o->kind == OP_COMPUTE ||
				    o->kind == OP_P2P || !spans_stages(o->group))
					return done;
				if (pl->st[t].clk > t0)
					t0 = pl->st[t].clk;
			}
			for (long long t = 0; t < pl->n; t++)
				complete(pl, t, t0 - pl->st[t].clk, d, spans);
		} else {
			complete(pl, s, 0, d, spans);
		}
		done++;
	}
	return done;
}

static void summarise(const struct play *pl, struct cost_call *out)
{
	const struct stage_run *x;
	long long best = 0;

	for (long long s = 1; s < pl->n; s++)
		if (pl->st[s].clk > pl->st[best].clk)
			best = s;
	/* stages that end together (a closing barrier): the one that waited
	 * least is the bottleneck */
	for (long long s = 0; s < pl->n; s++)
		if (pl->st[s].clk >= pl->st[best].clk * (1 - 1e-9) &&
		    pl->st[s].wait < pl->st[best].wait)
			best = s;
	x = &pl->st[best];
	out->valid = 1;
	out->stage = pl->n > 1 ? best : -1;
	out->total_us = x->clk;
	out->compute_us = x->compute;
	out->comm_us = x->comm;
	out->wait_us = x->wait;
	out->hidden_us = x->hidden;
	out->gtp_us = x->gtp;
	out->gtp_exposed_us = x->gtp_exposed;
	for (unsigned k = 0; k < OP_KIND_COUNT; k++)
		for (unsigned g = 0; g < COST_KINDS; g++) {
			double v = x->by[k * COST_KINDS + g];

			if (v > out->top_us) {
				out->top_us = v;
				out->top_kind = k;
				out->top_group = g;
				out->top_ops = x->nby[k * COST_KINDS + g];
			}
		}
	if (out->top_us > 0)
		out->top_spans = out->top_kind == OP_P2P ?
			cost_group_spans(pl->cm, pl->k_pp, NULL) :
			cost_group_spans(pl->cm, out->top_group, NULL);
}

int cost_call_time(struct cost_model *cm, enum call_program kind,
		   struct cost_call *out, cost_event_fn fn, void *ctx)
{
	const struct plan *p = cm->p;
	int per_stage = kind == PROG_TRAIN || kind == PROG_FORWARD ||
			kind == PROG_REFIT_IPC || kind == PROG_REFIT_BROADCAST ||
			kind == PROG_REFIT_RESHARD;
	long long n = per_stage && p->pp > 1 ? p->pp : 1, built = 0;
	long long micro = p->micro_batch > 0 ? p->micro_batch : 1;
	long long tp = p->tp > 0 ? p->tp : 1, cp = p->cp > 0 ? p->cp : 1;
	long long div = cm->s.vocab_divisor * tp;
	long long vpad = (cm->m.vocab_size + div - 1) / div * div;
	struct play pl = { .cm = cm, .n = n, .fn = fn, .ctx = ctx };
	struct prog *progs = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->stage = -1;
	if (!cm->known || !p->grid_ok)
		return 0;
	if (kind == PROG_FORWARD && cm->o.logprob_micro_batch > 0)
		micro = cm->o.logprob_micro_batch;
	pl.logit_flops = 2.0 * (double)(vpad / tp) * (double)cm->m.hidden_size *
			 (double)micro * (double)cm->o.seq_length / (double)cp;
	pl.k_gtp = prog_kind("gtp");
	pl.k_egtp = prog_kind("egtp");
	pl.k_pp = prog_kind("pp");
	progs = calloc((size_t)n, sizeof(*progs));
	pl.st = calloc((size_t)n, sizeof(*pl.st));
	if (!progs || !pl.st)
		goto out;
	for (; built < n; built++) {
		struct stage_run *x = &pl.st[built];

		if (prog_build(&progs[built], p, &cm->m, kind, built, &cm->o))
			goto out;
		x->pg = &progs[built];
		x->by = calloc(OP_KIND_COUNT * COST_KINDS, sizeof(*x->by));
		x->nby = calloc(OP_KIND_COUNT * COST_KINDS, sizeof(*x->nby));
		if (!x->by || !x->nby) {
			built++;
			goto out;
		}
	}
	for (;;) {
		long long moved = 0, left = 0;

		for (long long s = 0; s < n; s++)
			moved += advance(&pl, s);
		for (long long s = 0; s < n; s++)
			left += cur(&pl, s) != NULL;
		if (pl.stop || !left || !moved)
			break;
	}
	rc = 0;
	for (long long s = 0; s < n; s++)
		if (cur(&pl, s))
			rc = -1;  /* stopped, or the stages never meet */
	if (rc == 0)
		summarise(&pl, out);
out:
	for (long long s = 0; s < built; s++) {
		prog_release(&progs[s]);
		if (pl.st) {
			free(pl.st[s].by);
			free(pl.st[s].nby);
		}
	}
	free(progs);
	free(pl.st);
	return rc;
}

/* ---- text ------------------------------------------------------------------ */

/* "9.21 s", "41.3 ms", "12 us" */
const char *cost_time_text(double us, char *buf, size_t len)
{
	if (us >= 1e6)
		snprintf(buf, len, "%.2f s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, len, "%.1f ms", us / 1e3);
	else
		snprintf(buf, len, "%.0f us", us);
	return buf;
}
