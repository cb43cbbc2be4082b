/*
 * predict: gtplan-run's train record as the simulator plays it (see
 * predict.h).
 */
#include "predict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "match.h"
#include "program_rt.h"

/* Why the runtime would not run this plan's train call; 0 when it would. */
static int refused(const struct plan *p, const struct sim_report *r,
		   long long steps, char *err, size_t len)
{
	char why[256];
	long long micro = p->micro_batch > 0 ? p->micro_batch : 1;

	if (!r->ran || !p->grid_ok) {
		snprintf(err, len, "there is no rank grid to predict for; fix "
			 "the errors first");
		return 1;
	}
	if (!prog_rt_applies(p, why, sizeof(why))) {
		snprintf(err, len, "%s", why);
		return 1;
	}
	if (p->world > PRED_MAX_RANKS) {
		snprintf(err, len, "%lld ranks are more than the %d files a "
			 "prediction writes; predict a smaller world",
			 p->world, PRED_MAX_RANKS);
		return 1;
	}
	if (steps < 1 || steps > PRED_MAX_STEPS) {
		snprintf(err, len, "--steps %lld is outside [1, %d]", steps,
			 PRED_MAX_STEPS);
		return 1;
	}
	if (p->global_batch < 1 || p->global_batch % p->lanes ||
	    (p->global_batch / p->lanes) % micro) {
		snprintf(err, len, "gtplan-run refuses this batch (global "
			 "%lld, micro %lld, %lld lanes): set "
			 "policy.train_global_batch_size to a multiple of "
			 "lanes x micro batch = %lld", p->global_batch, micro,
			 p->lanes, p->lanes * micro);
		return 1;
	}
	if (!calls_find(r->calls, r->n_calls, "train")) {
		snprintf(err, len, "the call table has no 'train' call");
		return 1;
	}
	return 0;
}

/* PREFIX.rank with rank's collectives; n_ops: how many of the first
 * step's (all when the rank is not blocked), steps: how many steps. */
static int write_rank(const struct plan *p, const struct prog *pg,
		      const char *prefix, long long rank, size_t n_ops,
		      long long steps, char *err, size_t len)
{
	char path[4096];
	long long seq = 0;
	FILE *f;
	int rc = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s.%lld", prefix, rank) >=
	    sizeof(path)) {
		snprintf(err, len, "--predict-record: the path is too long");
		return -1;
	}
	f = fopen(path, "w");
	if (!f) {
		snprintf(err, len, "--predict-record: cannot write '%s': %s",
			 path, strerror(errno));
		return -1;
	}
	for (long long s = 1; s <= steps && !rc; s++)
		rc = prog_rt_write_record(f, p, pg, n_ops, rank, "train", s,
					  &seq);
	if (fclose(f) || rc) {
		snprintf(err, len, "--predict-record: write error on '%s'",
			 path);
		return -1;
	}
	return 0;
}

static void release_stages(struct prog *pg, long long n)
{
	for (long long i = 0; pg && i < n; i++)
		prog_release(&pg[i]);
	free(pg);
}

int pred_write_records(const struct plan *p, const struct sim_report *r,
		       const char *prefix, long long steps, char *err,
		       size_t len)
{
	const struct call_def *train;
	struct prog_opts o = r->cost.o;
	struct match_where w;
	struct prog *pg;
	long long pp = p->pp > 0 ? p->pp : 1, built = 0;
	int rc = 0, hangs = 0;

	if (refused(p, r, steps, err, len))
		return -2;
	train = calls_find(r->calls, r->n_calls, "train");
	o.runtime_model = 1;
	/* one program per pipeline stage */
	pg = calloc((size_t)pp, sizeof(*pg));
	while (pg && built < pp &&
	       !prog_rt_build_stage(&pg[built], p, PROG_TRAIN, "train", built))
		built++;
	if (built < pp) {
		release_stages(pg, built);
		snprintf(err, len, "out of memory (or the program is longer "
			 "than %ld ops)", (long)PROG_MAX_OPS);
		return -1;
	}
	/* the play decides who runs and where each rank stops */
	if (match_call_where(p, &r->model, &r->dl, train, &o, &w)) {
		release_stages(pg, pp);
		snprintf(err, len, "out of memory while playing train");
		return -1;
	}
	/* a step that does not complete is the run's last */
	for (size_t k = 0; k < w.n; k++)
		hangs |= w.c[k].blocked;
	if (hangs)
		steps = 1;
	for (long long rank = 0; rank < p->world && !rc; rank++) {
		const struct match_class *mc = &w.c[w.cls[rank]];
		long long c[LAY_NAXES];
		const struct prog *mine;

		lay_coords(&p->dense, rank, c);
		mine = &pg[c[LAY_PP] < pp ? c[LAY_PP] : 0];
		if (!mc->called)
			rc = write_rank(p, mine, prefix, rank, 0, 0, err, len);
		else if (mc->blocked)
			rc = write_rank(p, mine, prefix, rank,
					(size_t)mc->op + 1, 1, err, len);
		else
			rc = write_rank(p, mine, prefix, rank, mine->n, steps,
					err, len);
	}
	match_where_release(&w);
	release_stages(pg, pp);
	return rc;
}
