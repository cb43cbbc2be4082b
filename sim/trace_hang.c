/*
 * trace_hang: where the ranks of a call that does not complete stop, per
 * track of its trace (trace_int.h). The matcher's play (match.h) says
 * for every rank class whether the driver calls it and the op it is
 * blocked in; this sums that up per track in one pass over the ranks.
 */
#include <stdlib.h>
#include <string.h>

#include "trace_int.h"

void trace_hang_release(struct trace_hang *h)
{
	match_where_release(&h->w);
	free(h->t);
	memset(h, 0, sizeof(*h));
}

/* Adds rank `rank` of class mc (blocked) to track t: a new op keeps the
 * list sorted by op; past TRACE_MAX_STUCK ops the rank counts as "more". */
static void add_stuck(struct trace_hang_track *t, const struct match_class *mc,
		      long long rank)
{
	size_t i, j;

	t->stuck++;
	if (t->first_op < 0 || mc->op < t->first_op)
		t->first_op = mc->op;
	for (i = 0; i < t->n; i++)
		if (t->s[i].mc->op == mc->op &&
		    strcmp(t->s[i].mc->label, mc->label) == 0) {
			t->s[i].ranks++;
			return; /* ranks ascend: the example stays the lowest */
		}
	if (t->n == TRACE_MAX_STUCK) {
		t->more++;
		return;
	}
	for (i = 0; i < t->n && t->s[i].mc->op <= mc->op; i++)
		;
	for (j = t->n; j > i; j--)
		t->s[j] = t->s[j - 1];
	t->s[i] = (struct trace_stuck){ mc, 1, rank };
	t->n++;
}

int trace_hang_find(struct trace_hang *h, const struct plan *p,
		    const struct sim_report *r, const struct model_shape *m,
		    const struct call_def *c, int per_rank, size_t n_tracks,
		    long long stages)
{
	memset(h, 0, sizeof(*h));
	if (!n_tracks)
		return 0;
	if (match_call_where(p, m, &r->dl, c, &r->cost.o, &h->w))
		return -1;
	h->t = calloc(n_tracks, sizeof(*h->t));
	if (!h->t) {
		trace_hang_release(h);
		return -1;
	}
	h->n = n_tracks;
	for (size_t i = 0; i < n_tracks; i++)
		h->t[i].first_op = -1;
	for (long long rank = 0; rank < p->world; rank++) {
		const struct match_class *mc = &h->w.c[h->w.cls[rank]];
		long long k = 0;
		struct trace_hang_track *t;

		if (per_rank)
			k = rank;
		else if (stages > 1)
			k = rank / p->dense.stride[LAY_PP] % p->dense.size[LAY_PP];
		if (k < 0 || (size_t)k >= n_tracks)
			continue;
		t = &h->t[k];
		if (!mc->called) {
			t->never++;
			h->never++;
		} else if (mc->blocked) {
			add_stuck(t, mc, rank);
			h->stuck++;
		} else {
			t->done++;
		}
	}
	return 0;
}
