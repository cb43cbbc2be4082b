/*
 * trace: Chrome traces of the simulated calls (see trace.h).
 */
#include "trace.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "jsonw.h"
#include "program.h"

void trace_opts_init(struct trace_opts *o)
{
	o->rank_tracks = TRACE_RANK_TRACKS;
	o->max_tracks = TRACE_MAX_TRACKS;
	o->max_events = TRACE_MAX_EVENTS;
}

/* One kept event: the op (copied; the programs are gone when we write)
 * and its times. */
struct tev {
	double ts, dur, wait, hidden;
	struct prog_op op;
	const char *weight;   /* static name, or NULL */
	int spans;
};

/* The events of one stage. */
struct track {
	struct tev *v;
	size_t n, cap;
	long long dropped;
	double end;           /* end of its last event, kept or not */
};

struct collect {
	const struct trace_opts *o;
	struct track *t;
	size_t n;             /* stages kept (at most o->max_tracks) */
	int oom;
};

static int collect_event(void *ctx, const struct cost_event *ev)
{
	struct collect *c = ctx;
	struct track *t;
	struct tev *e;

	if (ev->stage < 0 || (size_t)ev->stage >= c->o->max_tracks)
		return 0;
	while ((size_t)ev->stage >= c->n) {
		struct track *v = realloc(c->t, (c->n + 1) * sizeof(*v));

		if (!v) {
			c->oom = 1;
			return 1;
		}
		memset(&v[c->n], 0, sizeof(*v));
		c->t = v;
		c->n++;
	}
	t = &c->t[ev->stage];
	if (ev->ts_us + ev->dur_us > t->end)
		t->end = ev->ts_us + ev->dur_us;
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
	for (size_t i = 0; i < c->n; i++)
		free(c->t[i].v);
	free(c->t);
	memset(c, 0, sizeof(*c));
}

/* ---- writing ------------------------------------------------------------- */

static void real(struct jw *w, const char *key, double v)
{
	jw_key(w, key);
	jw_real_f(w, v, 3);
}

/* The keys between "dur" and "ts" of a complete ("X") event. */
static void span_keys(struct jw *w, const char *name, long long pid,
		      long long tid)
{
	jw_key(w, "name");
	jw_str(w, name);
	jw_key(w, "ph");
	jw_str(w, "X");
	jw_key(w, "pid");
	jw_int(w, pid);
	jw_key(w, "tid");
	jw_int(w, tid);
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
	real(w, "dur", e->dur);
	span_keys(w, name, pid, tid);
	real(w, "ts", e->ts);
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

/* One track: thread name and order, its events, the "... N more" event. */
static void write_track(struct jw *w, long long pid, long long tid,
			const char *label, const struct track *t)
{
	write_meta(w, "thread_name", pid, tid, label, 0);
	write_meta(w, "thread_sort_index", pid, tid, NULL, tid);
	for (size_t i = 0; t && i < t->n; i++)
		write_event(w, pid, tid, &t->v[i]);
	if (t && t->dropped) {
		char name[64];
		double from = t->n ? t->v[t->n - 1].ts + t->v[t->n - 1].dur : 0;

		snprintf(name, sizeof(name), "... %lld more events",
			 t->dropped);
		jw_obj_begin(w, 1);
		jw_key(w, "args");
		jw_obj_begin(w, 1);
		jw_key(w, "dropped");
		jw_int(w, t->dropped);
		jw_obj_end(w);
		jw_key(w, "cat");
		jw_str(w, "truncated");
		real(w, "dur", t->end > from ? t->end - from : 0);
		span_keys(w, name, pid, tid);
		real(w, "ts", from);
		jw_obj_end(w);
	}
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

static void write_call(struct jw *w, const struct plan *p, long long pid,
		       const struct sim_call_result *res,
		       const struct cost_call *est, const struct collect *c,
		       const struct trace_opts *o)
{
	char label[192];
	long long stages = (long long)c->n;

	if (est && est->valid && c->n == o->max_tracks &&
	    p->world > o->rank_tracks && p->pp > (long long)c->n)
		snprintf(label, sizeof(label), "%s (%.3f ms; tracks for the "
			 "first %zu of %lld stages)", res->call->name,
			 est->total_us / 1e3, c->n, p->pp);
	else if (est && est->valid)
		snprintf(label, sizeof(label), "%s (%.3f ms)", res->call->name,
			 est->total_us / 1e3);
	else
		snprintf(label, sizeof(label), "%s (no estimate)",
			 res->call->name);
	write_meta(w, "process_name", pid, -1, label, 0);
	write_meta(w, "process_sort_index", pid, -1, NULL, pid);
	if (!est || !est->valid || !stages)
		return;
	if (p->world <= o->rank_tracks) {
		for (long long r = 0; r < p->world && (size_t)r < o->max_tracks;
		     r++) {
			long long coord[LAY_NAXES], node, local;
			long long s = 0;

			lay_coords(&p->dense, r, coord);
			if (stages > 1)
				s = coord[LAY_PP];
			plan_rank_place(p, r, &node, &local);
			snprintf(label, sizeof(label), "rank %lld (node %lld, "
				 "GPU %lld, stage %lld)", r, node, local,
				 coord[LAY_PP]);
			write_track(w, pid, r, label,
				    s < stages ? &c->t[s] : NULL);
		}
		return;
	}
	for (long long s = 0; s < stages; s++) {
		stage_label(p, s, stages, label, sizeof(label));
		write_track(w, pid, stages > 1 ? s * p->dense.stride[LAY_PP] :
			    0, label, &c->t[s]);
	}
}

int trace_write(FILE *f, const struct plan *p, struct sim_report *r,
		const struct trace_opts *o)
{
	struct trace_opts dflt;
	struct jw *w = malloc(sizeof(*w));
	int rc = 0;

	if (!w)
		return -1;
	if (!o) {
		trace_opts_init(&dflt);
		o = &dflt;
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
		  "their hidden time in args.hidden_us");
	jw_obj_end(w);
	jw_key(w, "traceEvents");
	jw_arr_begin(w, 0);
	for (size_t i = 0; r->ran && i < r->n_res && !rc; i++) {
		struct collect c = { .o = o };
		struct cost_call cc;
		const struct cost_call *est = r->est ? &r->est[i] : NULL;

		if (est && est->valid &&
		    cost_call_time(&r->cost, r->res[i].call->program, &cc,
				   collect_event, &c))
			rc = -1;
		if (c.oom)
			rc = -1;
		if (!rc)
			write_call(w, p, (long long)i, &r->res[i], est, &c, o);
		collect_release(&c);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	if (jw_finish(w))
		rc = -1;
	free(w);
	return rc;
}
