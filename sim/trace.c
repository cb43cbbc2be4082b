/*
 * trace: Chrome traces of the simulated calls (see trace.h).
 *
 * Times are written as whole nanoseconds (microseconds with three
 * decimals), each event's end rounded from its own end time and its
 * duration derived from the rounded ends: rounding is monotone, so an
 * event that ends where the next one starts still does after rounding,
 * and a child never outlasts its parent.
 */
#include "trace.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"
#include "trace_int.h"

void trace_opts_init(struct trace_opts *o)
{
	o->rank_tracks = TRACE_RANK_TRACKS;
	o->max_tracks = TRACE_MAX_TRACKS;
	o->max_events = TRACE_MAX_EVENTS;
}

/* ---- collecting the play ------------------------------------------------- */

/* Makes sure stages 0 .. n-1 have a track (at most o->max_tracks). */
static int collect_reserve(struct collect *c, size_t n)
{
	if (n > c->o->max_tracks)
		n = c->o->max_tracks;
	while (c->n < n) {
		struct track *v = realloc(c->t, (c->n + 1) * sizeof(*v));

		if (!v) {
			c->oom = 1;
			return -1;
		}
		memset(&v[c->n], 0, sizeof(*v));
		c->t = v;
		c->n++;
	}
	return 0;
}

static int keep_issue(struct collect *c, struct track *t, double ts)
{
	if (t->n_issue == t->cap_issue) {
		size_t cap = t->cap_issue ? t->cap_issue * 2 : 256;
		double *v = realloc(t->issue, cap * sizeof(*v));

		if (!v) {
			c->oom = 1;
			return -1;
		}
		t->issue = v;
		t->cap_issue = cap;
	}
	t->issue[t->n_issue++] = ts;
	return 0;
}

static int collect_event(void *ctx, const struct cost_event *ev)
{
	struct collect *c = ctx;
	struct track *t;
	struct tev *e;

	if (ev->stage < 0 || (size_t)ev->stage >= c->o->max_tracks)
		return 0;
	if (collect_reserve(c, (size_t)ev->stage + 1))
		return 1;
	t = &c->t[ev->stage];
	if (ev->ts_us + ev->dur_us > t->end)
		t->end = ev->ts_us + ev->dur_us;
	if (c->keep_issue && keep_issue(c, t, ev->ts_us))
		return 1;
	if (t->n == c->o->max_events) {
		t->dropped++;
		return 0;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct tev *v;

		if (cap > c->o->max_events)
			cap = c->o->max_events;
		v = realloc(t->v, cap * sizeof(*v));
		if (!v) {
			c->oom = 1;
			return 1;
		}
		t->v = v;
		t->cap = cap;
	}
	e = &t->v[t->n++];
	e->ts = ev->ts_us;
	e->dur = ev->dur_us;
	e->wait = ev->wait_us;
	e->hidden = ev->hidden_us;
	e->op = *ev->op;
	e->spans = ev->spans;
	e->weight = ev->op->weight >= 0 &&
		    (size_t)ev->op->weight < ev->pg->n_weights ?
		    ev->pg->weights[ev->op->weight] : NULL;
	return 0;
}

static void collect_release(struct collect *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->t[i].v);
		free(c->t[i].issue);
	}
	free(c->t);
	memset(c, 0, sizeof(*c));
}

/* When the track's op `k` was issued: its time when the play got there,
 * else the end of the last op played. */
static double issue_at(const struct track *t, long long k)
{
	if (k >= 0 && (size_t)k < t->n_issue)
		return t->issue[k];
	return t->end;
}

/* ---- writing ------------------------------------------------------------- */

static void real(struct jw *w, const char *key, double v)
{
	jw_key(w, key);
	jw_real_f(w, v, 3);
}

/* Microseconds as whole nanoseconds. */
static long long ns(double us)
{
	return llround(us * 1e3);
}

static void ns_value(struct jw *w, const char *key, long long v)
{
	jw_key(w, key);
	jw_real_f(w, (double)v / 1e3, 3);
}

/* The keys of a complete ("X") event from "dur" on, over [from, to) us. */
static void span_keys(struct jw *w, const char *name, long long pid,
		      long long tid, double from, double to)
{
	long long a = ns(from), b = ns(to);

	ns_value(w, "dur", b > a ? b - a : 0);
	jw_key(w, "name");
	jw_str(w, name);
	jw_key(w, "ph");
	jw_str(w, "X");
	jw_key(w, "pid");
	jw_int(w, pid);
	jw_key(w, "tid");
	jw_int(w, tid);
	ns_value(w, "ts", a);
}

static const char *phase_short(unsigned ph)
{
	static const char *const names[PH_COUNT] = {
		"step", "fwd", "bwd", "grad", "opt", "refit", "save", "load",
		"init",
	};

	return ph < PH_COUNT ? names[ph] : "?";
}

/* "gtp all-gather L3 fwd mb0", "compute L3 bwd mb2", "pp send-fwd mb1" */
static void event_name(const struct prog_op *op, char *buf, size_t len)
{
	size_t at = 0;

#define PUT(...) (at += (size_t)snprintf(buf + at, at < len ? len - at : 0, \
					  __VA_ARGS__))
	if (op->kind == OP_COMPUTE) {
		PUT("compute");
	} else if (op->kind == OP_P2P) {
		static const char *const f[] = { "send-fwd", "recv-fwd",
						 "send-bwd", "recv-bwd" };
		int first = 1;

		PUT("pp");
		for (int i = 0; i < 4; i++)
			if (op->flags & (1u << i)) {
				PUT("%s%s", first ? " " : "+", f[i]);
				first = 0;
			}
	} else {
		PUT("%s %s", prog_group_name(op->group),
		    prog_op_kind_name((enum prog_op_kind)op->kind));
	}
	if (op->layer >= 0)
		PUT(" L%d", (int)op->layer);
	if (op->kind != OP_P2P) /* its direction says it */
		PUT(" %s", phase_short(op->phase));
	if (op->mb >= 0)
		PUT(" mb%d", (int)op->mb);
#undef PUT
}

static void write_event(struct jw *w, long long pid, long long tid,
			const struct tev *e)
{
	char name[128];
	const struct prog_op *op = &e->op;
	int compute = op->kind == OP_COMPUTE;

	event_name(op, name, sizeof(name));
	jw_obj_begin(w, 1);
	jw_key(w, "args");
	jw_obj_begin(w, 1);
	if (compute) {
		real(w, "gflop", (double)op->amount / 1e9);
	} else {
		jw_key(w, "bytes");
		jw_int(w, op->amount);
		if (e->hidden > 0)
			real(w, "hidden_us", e->hidden);
		jw_key(w, "network");
		jw_bool(w, e->spans);
		if (e->wait > 0)
			real(w, "wait_us", e->wait);
		if (e->weight) {
			jw_key(w, "weight");
			jw_str(w, e->weight);
		}
	}
	jw_obj_end(w);
	jw_key(w, "cat");
	jw_str(w, compute ? "compute" : op->kind == OP_P2P ? "p2p" : "comm");
	span_keys(w, name, pid, tid, e->ts, e->ts + e->dur);
	jw_obj_end(w);
}

/* Events a and b belong to one phase block: the same phase of the same
 * micro-batch (pipeline exchanges sit between blocks). */
static int same_block(const struct tev *a, const struct tev *b)
{
	return a->op.kind != OP_P2P && b->op.kind != OP_P2P &&
	       a->op.phase == b->op.phase && a->op.mb == b->op.mb;
}

/* The parent slice of events v[0 .. n-1] (n >= 2): "fwd mb3", "grad". */
static void write_block(struct jw *w, long long pid, long long tid,
			const struct tev *v, size_t n)
{
	char name[48];

	if (v->op.mb >= 0)
		snprintf(name, sizeof(name), "%s mb%d", phase_short(v->op.phase),
			 (int)v->op.mb);
	else
		snprintf(name, sizeof(name), "%s", phase_short(v->op.phase));
	jw_obj_begin(w, 1);
	jw_key(w, "args");
	jw_obj_begin(w, 1);
	jw_key(w, "ops");
	jw_int(w, (long long)n);
	jw_obj_end(w);
	jw_key(w, "cat");
	jw_str(w, "phase");
	span_keys(w, name, pid, tid, v[0].ts, v[n - 1].ts + v[n - 1].dur);
	jw_obj_end(w);
}

/* A metadata event: process_name / thread_name / *_sort_index. */
static void write_meta(struct jw *w, const char *what, long long pid,
		       long long tid, const char *name, long long index)
{
	jw_obj_begin(w, 1);
	jw_key(w, "args");
	jw_obj_begin(w, 1);
	if (name) {
		jw_key(w, "name");
		jw_str(w, name);
	} else {
		jw_key(w, "sort_index");
		jw_int(w, index);
	}
	jw_obj_end(w);
	jw_key(w, "name");
	jw_str(w, what);
	jw_key(w, "ph");
	jw_str(w, "M");
	jw_key(w, "pid");
	jw_int(w, pid);
	if (tid >= 0) {
		jw_key(w, "tid");
		jw_int(w, tid);
	}
	jw_obj_end(w);
}

/* The "... N more events" slice over [from, to). */
static void write_more(struct jw *w, long long pid, long long tid,
		       long long more, double from, double to)
{
	char name[64];

	snprintf(name, sizeof(name), "... %lld more events", more);
	jw_obj_begin(w, 1);
	jw_key(w, "args");
	jw_obj_begin(w, 1);
	jw_key(w, "dropped");
	jw_int(w, more);
	jw_obj_end(w);
	jw_key(w, "cat");
	jw_str(w, "truncated");
	span_keys(w, name, pid, tid, from, to > from ? to : from);
	jw_obj_end(w);
}

/* One track: thread name and order, the first `limit` ops of its play
 * (LLONG_MAX: all) as slices under their phase blocks, and the "... N
 * more" slice for those past o->max_events. */
static void write_track(struct jw *w, long long pid, long long tid,
			const char *label, const struct track *t,
			long long limit)
{
	long long total, upto, kept;

	write_meta(w, "thread_name", pid, tid, label, 0);
	write_meta(w, "thread_sort_index", pid, tid, NULL, tid);
	if (!t)
		return;
	total = (long long)t->n + t->dropped;
	upto = limit < total ? limit : total;
	kept = upto < (long long)t->n ? upto : (long long)t->n;
	for (long long i = 0, j; i < kept; i = j) {
		for (j = i + 1; j < kept && same_block(&t->v[i], &t->v[j]); j++)
			;
		if (j - i >= 2)
			write_block(w, pid, tid, &t->v[i], (size_t)(j - i));
		for (long long k = i; k < j; k++)
			write_event(w, pid, tid, &t->v[k]);
	}
	if (upto > kept)
		write_more(w, pid, tid, upto - kept, kept ? t->v[kept - 1].ts +
			   t->v[kept - 1].dur : 0, upto < total ?
			   issue_at(t, upto) : t->end);
}

/* An instant ("i") event on a track: where its ranks stop. */
static void write_instant(struct jw *w, long long pid, long long tid,
			  const char *name, double ts,
			  const struct trace_stuck *s, long long ranks)
{
	jw_obj_begin(w, 1);
	jw_key(w, "args");
	jw_obj_begin(w, 1);
	if (s) {
		jw_key(w, "collective");
		jw_str(w, s->mc->label);
		jw_key(w, "example_rank");
		jw_int(w, s->example);
		jw_key(w, "op");
		jw_int(w, s->mc->op);
	}
	jw_key(w, "ranks");
	jw_int(w, ranks);
	jw_obj_end(w);
	jw_key(w, "cat");
	jw_str(w, "hang");
	jw_key(w, "name");
	jw_str(w, name);
	jw_key(w, "ph");
	jw_str(w, "i");
	jw_key(w, "pid");
	jw_int(w, pid);
	jw_key(w, "s");
	jw_str(w, "t");
	jw_key(w, "tid");
	jw_int(w, tid);
	ns_value(w, "ts", ns(ts));
	jw_obj_end(w);
}

/* A track of a call that does not complete: its ops up to the first one
 * a rank of it stops in, then an instant event per op its ranks stop in
 * (naming the collective) and one for ranks the driver never calls. */
static void write_hang_track(struct jw *w, long long pid, long long tid,
			     const char *label, const struct track *t,
			     const struct trace_hang_track *h)
{
	char name[160];
	long long limit = h->first_op >= 0 ? h->first_op :
			  h->done ? LLONG_MAX : 0;

	write_track(w, pid, tid, label, t, limit);
	for (size_t k = 0; k < h->n; k++) {
		const struct trace_stuck *s = &h->s[k];

		snprintf(name, sizeof(name), "stuck in %s %s (op #%lld)",
			 s->mc->group, s->mc->kind, s->mc->op);
		write_instant(w, pid, tid, name, t ? issue_at(t, s->mc->op) : 0,
			      s, s->ranks);
	}
	if (h->more) {
		snprintf(name, sizeof(name), "%lld more ranks stuck at later "
			 "ops", h->more);
		write_instant(w, pid, tid, name, t && h->n ? issue_at(t,
			      h->s[h->n - 1].mc->op) : 0, NULL, h->more);
	}
	if (h->never)
		write_instant(w, pid, tid, "never called by the driver", 0,
			      NULL, h->never);
}

/* The ranks of pipeline stage `s`, in words. */
static void stage_label(const struct plan *p, long long s, long long stages,
			char *buf, size_t len)
{
	long long per = p->world / (stages > 0 ? stages : 1);
	long long stride = stages > 1 ? p->dense.stride[LAY_PP] : 0;
	long long rep = s * stride;

	if (stages <= 1)
		snprintf(buf, len, "rank 0 stands for all %lld ranks (ranks "
			 "0-%lld)", p->world, p->world - 1);
	else if (stride * stages == p->world)
		snprintf(buf, len, "rank %lld stands for the %lld ranks of "
			 "pipeline stage %lld (ranks %lld-%lld)", rep, per, s,
			 rep, rep + per - 1);
	else
		snprintf(buf, len, "rank %lld stands for the %lld ranks of "
			 "pipeline stage %lld (every rank whose pp coordinate "
			 "is %lld)", rep, per, s, s);
}

/* One call as the trace shows it: its play, and for a call that does
 * not complete where its ranks stop. */
struct call_view {
	long long pid;
	const struct sim_call_result *res;
	const struct cost_call *est;   /* valid = 0: no estimate */
	const struct collect *c;
	const struct trace_hang *hang; /* NULL: the call completes */
	int approximate;               /* the estimate's shape is */
};

static void process_label(const struct plan *p, const struct call_view *v,
			  const struct trace_opts *o, char *buf, size_t len)
{
	const char *name = v->res->call->name;
	size_t at;

	if (v->hang) {
		snprintf(buf, len, "%s (%s: %lld ranks stuck, %lld never called;"
			 " instant events mark where)", name,
			 sim_status_name(v->res->status), v->hang->stuck,
			 v->hang->never);
		return;
	}
	if (!v->est->valid) {
		snprintf(buf, len, "%s (no estimate)", name);
		return;
	}
	at = (size_t)snprintf(buf, len, "%s (%.3f ms%s", name,
			      v->est->total_us / 1e3, v->approximate ?
			      ", approximate shape" : "");
	if (at < len && v->c->n == o->max_tracks &&
	    p->world > o->rank_tracks && p->pp > (long long)v->c->n)
		at += (size_t)snprintf(buf + at, len - at, "; tracks for the "
				       "first %zu of %lld stages", v->c->n,
				       p->pp);
	if (at < len)
		snprintf(buf + at, len - at, ")");
}

/* A track per rank (small worlds). */
static void rank_tracks(struct jw *w, const struct plan *p,
			const struct call_view *v, const struct trace_opts *o)
{
	long long stages = (long long)v->c->n;
	char label[192];

	for (long long r = 0; r < p->world && (size_t)r < o->max_tracks; r++) {
		long long coord[LAY_NAXES], node, local, s = 0;
		const struct track *t;

		lay_coords(&p->dense, r, coord);
		if (stages > 1)
			s = coord[LAY_PP];
		plan_rank_place(p, r, &node, &local);
		snprintf(label, sizeof(label), "rank %lld (node %lld, GPU %lld, "
			 "stage %lld)", r, node, local, coord[LAY_PP]);
		t = s < stages ? &v->c->t[s] : NULL;
		if (v->hang && (size_t)r < v->hang->n)
			write_hang_track(w, v->pid, r, label, t,
					 &v->hang->t[r]);
		else
			write_track(w, v->pid, r, label, t, LLONG_MAX);
	}
}

static void write_call(struct jw *w, const struct plan *p,
		       const struct call_view *v, const struct trace_opts *o)
{
	char label[256];
	long long stages = (long long)v->c->n;

	process_label(p, v, o, label, sizeof(label));
	write_meta(w, "process_name", v->pid, -1, label, 0);
	write_meta(w, "process_sort_index", v->pid, -1, NULL, v->pid);
	if ((!v->est->valid && !v->hang) || !stages)
		return;
	if (p->world <= o->rank_tracks) {
		rank_tracks(w, p, v, o);
		return;
	}
	for (long long s = 0; s < stages; s++) {
		long long tid = stages > 1 ? s * p->dense.stride[LAY_PP] : 0;

		stage_label(p, s, stages, label, sizeof(label));
		if (v->hang && (size_t)s < v->hang->n)
			write_hang_track(w, v->pid, tid, label, &v->c->t[s],
					 &v->hang->t[s]);
		else
			write_track(w, v->pid, tid, label, &v->c->t[s],
				    LLONG_MAX);
	}
}

/* How many stage programs call kind `kind` plays (cost_time.c and
 * match_call.c build one per pipeline stage for these kinds). */
static long long stage_programs(enum call_program kind, const struct plan *p)
{
	int per_stage = kind == PROG_TRAIN || kind == PROG_FORWARD ||
			kind == PROG_REFIT_IPC || kind == PROG_REFIT_BROADCAST ||
			kind == PROG_REFIT_RESHARD;

	return per_stage && p->pp > 1 ? p->pp : 1;
}

/* Plays result i with cm and writes it. Returns 0, or -1 when out of
 * memory. */
static int trace_call(struct jw *w, const struct plan *p, struct sim_report *r,
		      size_t i, struct cost_model *cm,
		      const struct trace_shape *sh, const struct trace_opts *o)
{
	const struct sim_call_result *res = &r->res[i];
	struct collect c = { .o = o };
	struct cost_call cc;
	struct trace_hang h;
	struct call_view v = { .pid = (long long)i, .res = res, .est = &cc,
			       .c = &c, .approximate = sh->approximate };
	int stuck = res->status == SIM_HANG || res->status == SIM_MISMATCH;
	int rc = 0;

	memset(&cc, 0, sizeof(cc));
	memset(&h, 0, sizeof(h));
	c.keep_issue = stuck;
	if ((res->status == SIM_OK || stuck) &&
	    cost_call_time(cm, res->call->program, &cc, collect_event, &c))
		cc.valid = 0; /* stopped, or the stages never meet */
	if (stuck && !c.oom) {
		long long stages = stage_programs(res->call->program, p);
		int per_rank = p->world <= o->rank_tracks;
		size_t n = per_rank ? (size_t)p->world : (size_t)stages;

		if (n > o->max_tracks)
			n = o->max_tracks;
		/* a call the matcher cannot replay shows no stops */
		if (!collect_reserve(&c, (size_t)stages) &&
		    !trace_hang_find(&h, p, r, &cm->m, res->call, per_rank, n,
				     stages))
			v.hang = &h;
	}
	if (c.oom)
		rc = -1;
	else
		write_call(w, p, &v, o);
	trace_hang_release(&h);
	collect_release(&c);
	return rc;
}

int trace_write(FILE *f, const struct plan *p, struct sim_report *r,
		const struct trace_opts *o)
{
	struct trace_opts dflt;
	struct trace_shape sh;
	struct cost_model local, *cm = &r->cost;
	struct jw *w = malloc(sizeof(*w));
	int rc = 0;

	if (!w)
		return -1;
	if (!o) {
		trace_opts_init(&dflt);
		o = &dflt;
	}
	trace_shape_pick(p, r, &sh);
	if (!r->cost.known) {
		cost_model_init(&local, p, &sh.m, &r->cost.o, &r->cost.s);
		cm = &local;
	}
	jw_init(w, f);
	jw_obj_begin(w, 0);
	jw_key(w, "displayTimeUnit");
	jw_str(w, "ms");
	jw_key(w, "otherData");
	jw_obj_begin(w, 0);
	jw_key(w, "config");
	jw_str(w, p->config_name);
	jw_key(w, "model");
	jw_str(w, r->model.name[0] ? r->model.name : NULL);
	jw_key(w, "note");
	jw_str(w, "gtplan's cost model: every rank of a pipeline stage has "
		  "the same timeline; GTP gathers hidden behind compute show "
		  "their hidden time in args.hidden_us; a call that does not "
		  "complete shows its tracks up to where their ranks stop, "
		  "marked by instant events naming the collective");
	jw_key(w, "shape");
	trace_shape_write(w, &sh);
	jw_obj_end(w);
	jw_key(w, "traceEvents");
	jw_arr_begin(w, 0);
	for (size_t i = 0; r->ran && i < r->n_res && !rc; i++)
		rc = trace_call(w, p, r, i, cm, &sh, o);
	jw_arr_end(w);
	jw_obj_end(w);
	if (jw_finish(w))
		rc = -1;
	free(w);
	return rc;
}
