/*
 * dispatch_check: the placement check of dispatch.h (disp_check_placement):
 * every data-moving call must put its shards where Megatron's lanes are
 * (docs/notes/dispatch-semantics.md §2), else a finding that names the
 * ranks, their coordinates on both grids, and the cause.
 */
#include "dispatch.h"
#include "dispatch_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"
#include "strbuf.h"

/* ---- the placement check ---------------------------------------------- */

#define DP_KIND ((1u << LAY_GTP) | (1u << LAY_DP)) /* Megatron's lane group */

/* What one rank got: a shard index, or -1 for no data. */
static long long data_of(const struct disp_rank *d)
{
	return d->called && !d->dummy ? d->shard : -1;
}

/* Megatron's coordinates of rank r: "(t=0, c=1, g=0, d=0, p=0)". */
static const char *meg_text(const struct plan *p, long long r, char *buf,
			    size_t len)
{
	long long m[LAY_NAXES];

	lay_coords(&p->dense, r, m);
	snprintf(buf, len, "(t=%lld, c=%lld, g=%lld, d=%lld, p=%lld)",
		 m[LAY_TP], m[LAY_CP], m[LAY_GTP], m[LAY_DP], m[LAY_PP]);
	return buf;
}

/* A lane by the coordinates of one of its ranks: "lane 1 (g=1, d=0)". */
static const char *lane_text(const struct plan *p, long long lane,
			     long long r, char *buf, size_t len)
{
	long long m[LAY_NAXES];

	lay_coords(&p->dense, r, m);
	snprintf(buf, len, "lane %lld (g=%lld, d=%lld)", lane, m[LAY_GTP],
		 m[LAY_DP]);
	return buf;
}

/* Driver coordinates: "(pipeline_parallel=0, data_parallel=1, ...)". */
static const char *drv_text(const struct drv_layout *dl, long long r,
			    char *buf, size_t len)
{
	long long co[AX_N];
	size_t used = 0;

	drv_coords(dl, r, co);
	buf[0] = '\0';
	for (int k = 0; k < dl->n && used < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s=%lld",
					 k ? ", " : "(",
					 drv_axis_name(dl->axis[k]),
					 co[dl->axis[k]]);
	if (used < len)
		snprintf(buf + used, len - used, ")");
	return buf;
}

/* What rank r got, in words: "shard 3", or "no data (never called: ...)". */
static const char *got_text(const struct drv_layout *dl,
			    const struct call_def *c, long long r, char *buf,
			    size_t len)
{
	struct disp_rank d;
	long long co[AX_N];

	drv_coords(dl, r, co);
	disp_decide(dl, c, co, &d);
	if (data_of(&d) >= 0)
		snprintf(buf, len, "shard %lld", d.shard);
	else
		snprintf(buf, len, "no data (%s: its %s coordinate is %lld, "
			 "a free axis of %s)",
			 d.dummy ? "only a dummy call" : "never called",
			 drv_axis_name(d.left_out_by), co[d.left_out_by],
			 c->name);
	return buf;
}

/* One note per example rank: where the driver put it and what followed. */
static void note_rank(struct diag *d, const struct drv_layout *dl,
		      const struct call_def *c, long long r)
{
	char at[256], got[256];

	diag_note(d, DIAG_NOLOC, "the driver places rank %lld at %s, so it "
		  "gets %s", r, drv_text(dl, r, at, sizeof(at)),
		  got_text(dl, c, r, got, sizeof(got)));
}

enum cause { CAUSE_ORDER, CAUSE_CALL, CAUSE_BATCH };

/* Where a finding of this cause points, and its config path. */
static struct diag_loc where(const struct settings_sim *set,
			     const struct call_def *c, enum cause why,
			     const char **path)
{
	const struct set_value *order[] = { &set->rank_order,
					    &set->driver_layout };
	static const char *const order_keys[] = { KEY_RANK_ORDER,
						  KEY_DRIVER_LAYOUT };

	if (why == CAUSE_ORDER) {
		for (size_t i = 0; i < 2; i++)
			if (order[i]->given) {
				*path = order_keys[i];
				return order[i]->loc;
			}
		if (c->loc.src >= 0) {
			*path = KEY_CALLS;
			return c->loc;
		}
		*path = order_keys[0];
		return DIAG_NOLOC;
	}
	if (why == CAUSE_BATCH && c->uses_train_batch) {
		*path = KEY_GLOBAL_BATCH;
		return set->global_batch.loc;
	}
	if (c->loc.src >= 0) {
		*path = KEY_CALLS;
		return c->loc;
	}
	if (why == CAUSE_BATCH) {
		*path = NULL;
		return DIAG_NOLOC;
	}
	*path = KEY_DRIVER_LAYOUT;
	return set->driver_layout.loc;
}

/* A finding placed at a gtplan.calls entry in the 5-D layout also points
 * at the layout choice, the other half of the cause. */
static void note_layout(struct diag *d, const struct settings_sim *set,
			const struct drv_layout *dl, const struct call_def *c)
{
	if (dl->five_d && c->loc.src >= 0 && set->driver_layout.given)
		diag_note(d, set->driver_layout.loc, "the GTP PR's 5-D driver "
			  "layout is chosen here");
}

/* The hint for data that does not follow the lanes, derived from the
 * plan's rank order. */
static void hint_order(struct diag *d, const struct plan *p,
		       const struct drv_layout *dl)
{
	char ord[64];
	enum lay_axis early, late;

	lay_order_str(&p->dense.order, ord, sizeof(ord));
	if (drv_order_clash(p, &early, &late))
		diag_hint(d, "the driver numbers workers tensor_parallel and "
			  "context_parallel fastest, then the lanes (%s), then "
			  "pipeline_parallel, but the rank order %s puts %s "
			  "(%lld) before %s (%lld); use gtplan.rank_order: %s, "
			  "or build the driver layout from Megatron's rank "
			  "order", dl->five_d ? "data_parallel x "
			  "gtp_weight_remat" : "data_parallel", ord,
			  lay_axis_name(early), p->dense.size[early],
			  lay_axis_name(late), p->dense.size[late],
			  LAY_DEFAULT_ORDER);
	else
		diag_hint(d, "shard only the axes that index the lanes "
			  "(data_parallel%s) and replicate the others",
			  dl->five_d ? " and gtp_weight_remat" : "");
}

/* The hint for ranks the call leaves out. */
static void hint_left_out(struct diag *d, const struct drv_layout *dl,
			  const struct call_def *c, enum drv_axis a)
{
	if (a == AX_GTP && dl->five_d)
		diag_hint(d, "use gtplan.driver_layout: 4d, whose "
			  "data_parallel axis already counts every lane; the "
			  "5-D layout only feeds calls that shard "
			  "gtp_weight_remat too, as sft_v2_train does");
	else
		diag_hint(d, "add %s to the replicated axes of %s, so that "
			  "every rank of a lane receives the lane's data",
			  drv_axis_name(a), c->name);
}

/* The state of one placement check: O(L) arrays. */
struct scan {
	const struct plan *p;
	const struct drv_layout *dl;
	const struct call_def *c;
	long long lanes, shards;
	long long *lane_rank;  /* first rank of each lane, -1 before */
	long long *lane_data;  /* what that rank got: shard or -1 */
	long long *lane_shard; /* first shard any rank of the lane got, -1 */
	long long *owner;      /* when shards <= lanes: the first lane that got
				  each shard, -1 none, -2 - lane once counted
				  as shared; NULL otherwise */
	unsigned char *split;  /* 1: the lane's ranks got different data */
	long long split_lanes, split_ranks, split_lane, split_r1, split_r2;
	long long shared, share_l1, share_l2, share_shard;
};

/* Rank r, with its Megatron coordinates m and driver coordinates co. */
static void scan_rank(struct scan *s, long long r, const long long *m,
		      const long long *co)
{
	long long lane, data;
	struct disp_rank d;

	lay_group_of_coords(&s->p->dense, DP_KIND, m, NULL, &lane);
	disp_decide(s->dl, s->c, co, &d);
	data = data_of(&d);
	if (s->lane_rank[lane] < 0) {
		s->lane_rank[lane] = r;
		s->lane_data[lane] = data;
	} else if (data != s->lane_data[lane]) {
		s->split_ranks++;
		if (!s->split[lane]) {
			s->split[lane] = 1;
			if (!s->split_lanes++) {
				s->split_lane = lane;
				s->split_r1 = s->lane_rank[lane];
				s->split_r2 = r;
			}
		}
	}
	if (data < 0)
		return;
	if (s->lane_shard[lane] < 0)
		s->lane_shard[lane] = data;
	if (s->owner && data < s->shards) {
		long long o = s->owner[data];

		if (o == -1) {
			s->owner[data] = lane;
		} else if (o >= 0 && o != lane) {
			s->owner[data] = -2 - o;
			if (!s->shared++) {
				s->share_l1 = o;
				s->share_l2 = lane;
				s->share_shard = data;
			}
		}
	}
}

/* GT511 when there are more shards than lanes (GT513 rejects that layout
 * anyway): lanes whose first shards coincide, found by sorting L pairs. */
struct lane_shard {
	long long shard, lane;
};

static int cmp_lane_shard(const void *a, const void *b)
{
	const struct lane_shard *x = a, *y = b;

	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return (x->lane > y->lane) - (x->lane < y->lane);
}

static int shared_by_sort(struct scan *s)
{
	struct lane_shard *v = malloc((size_t)s->lanes * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -1;
	for (long long l = 0; l < s->lanes; l++)
		if (s->lane_shard[l] >= 0)
			v[n++] = (struct lane_shard){ s->lane_shard[l], l };
	qsort(v, n, sizeof(*v), cmp_lane_shard);
	for (size_t i = 1; i < n; i++) {
		if (v[i].shard != v[i - 1].shard)
			continue;
		if (!s->shared++) {
			s->share_l1 = v[i - 1].lane;
			s->share_l2 = v[i].lane;
			s->share_shard = v[i].shard;
		}
		while (i + 1 < n && v[i + 1].shard == v[i].shard)
			i++;
	}
	free(v);
	return 0;
}

/* A rank of `lane` that got `shard` (the lane's first rank if none). */
static long long rank_with(const struct scan *s, long long lane,
			   long long shard)
{
	long long groups = lay_group_count(&s->p->dense, DP_KIND);

	for (long long g = 0; g < groups; g++) {
		long long r = lay_group_member(&s->p->dense, DP_KIND, g, lane);
		struct disp_rank d;

		disp_rank(s->dl, s->c, r, &d);
		if (data_of(&d) == shard)
			return r;
	}
	return s->lane_rank[lane];
}

static int report_split(const struct scan *s, struct diag_list *diags)
{
	char lt[96], m1[96], m2[96], g1[256], g2[256];
	struct disp_rank d1, d2;
	const char *path;
	struct diag_loc at;
	struct diag *d;
	enum drv_axis out_by;

	disp_rank(s->dl, s->c, s->split_r1, &d1);
	disp_rank(s->dl, s->c, s->split_r2, &d2);
	out_by = data_of(&d1) < 0 ? d1.left_out_by :
		 data_of(&d2) < 0 ? d2.left_out_by : AX_N;
	at = where(&s->p->set.sim, s->c, out_by == AX_N ? CAUSE_ORDER : CAUSE_CALL,
		   &path);
	d = diag_add(diags, "GT510", at, path,
		     "%s: the ranks of %s get different data: rank %lld %s "
		     "gets %s, rank %lld %s gets %s; %lld of %lld lanes are "
		     "split this way (%lld ranks get other data than the "
		     "first rank of their lane)",
		     s->c->name,
		     lane_text(s->p, s->split_lane, s->split_r1, lt, sizeof(lt)),
		     s->split_r1, meg_text(s->p, s->split_r1, m1, sizeof(m1)),
		     got_text(s->dl, s->c, s->split_r1, g1, sizeof(g1)),
		     s->split_r2, meg_text(s->p, s->split_r2, m2, sizeof(m2)),
		     got_text(s->dl, s->c, s->split_r2, g2, sizeof(g2)),
		     s->split_lanes, s->lanes, s->split_ranks);
	if (out_by == AX_N)
		hint_order(d, s->p, s->dl);
	else
		hint_left_out(d, s->dl, s->c, out_by);
	note_rank(d, s->dl, s->c, s->split_r1);
	note_rank(d, s->dl, s->c, s->split_r2);
	return 1;
}

static int report_shared(const struct scan *s, struct diag_list *diags)
{
	long long r1 = rank_with(s, s->share_l1, s->share_shard);
	long long r2 = rank_with(s, s->share_l2, s->share_shard);
	char l1[96], l2[96], m1[96], m2[96];
	const char *path;
	struct diag_loc at = where(&s->p->set.sim, s->c, CAUSE_ORDER, &path);
	struct diag *d;

	d = diag_add(diags, "GT511", at, path,
		     "%s: %s and %s both get shard %lld: rank %lld %s and "
		     "rank %lld %s; %lld shard%s go%s to more than one lane",
		     s->c->name,
		     lane_text(s->p, s->share_l1, r1, l1, sizeof(l1)),
		     lane_text(s->p, s->share_l2, r2, l2, sizeof(l2)),
		     s->share_shard, r1, meg_text(s->p, r1, m1, sizeof(m1)),
		     r2, meg_text(s->p, r2, m2, sizeof(m2)), s->shared,
		     s->shared == 1 ? "" : "s", s->shared == 1 ? "es" : "");
	hint_order(d, s->p, s->dl);
	note_rank(d, s->dl, s->c, r1);
	note_rank(d, s->dl, s->c, r2);
	return 1;
}

static int report_no_data(const struct scan *s, struct diag_list *diags)
{
	long long empty = 0, first = -1, r, co[AX_N];
	long long per_lane = s->p->world / s->lanes;
	struct disp_rank dr;
	char lt[96], at_txt[256];
	const char *path;
	struct diag_loc at = where(&s->p->set.sim, s->c, CAUSE_CALL, &path);
	struct diag *d;

	for (long long l = 0; l < s->lanes; l++)
		if (s->lane_shard[l] < 0 && !empty++)
			first = l;
	if (!empty)
		return 0;
	r = s->lane_rank[first];
	drv_coords(s->dl, r, co);
	disp_decide(s->dl, s->c, co, &dr);
	if (dr.left_out_by == AX_N) /* cannot happen: no data means left out */
		dr.left_out_by = AX_DP;
	d = diag_add(diags, "GT512", at, path,
		     "%s: %s gets no data: its %lld ranks are %s (rank %lld "
		     "has %s coordinate %lld, an axis %s neither shards nor "
		     "replicates); %lld of %lld lanes get no data (%lld ranks)",
		     s->c->name, lane_text(s->p, first, r, lt, sizeof(lt)),
		     per_lane, dr.dummy ? "called only as dummies (data=None)" :
		     "never called", r, drv_axis_name(dr.left_out_by),
		     co[dr.left_out_by], s->c->name, empty, s->lanes,
		     empty * per_lane);
	hint_left_out(d, s->dl, s->c, dr.left_out_by);
	diag_note(d, DIAG_NOLOC, "the driver places rank %lld at %s", r,
		  drv_text(s->dl, r, at_txt, sizeof(at_txt)));
	note_layout(d, &s->p->set.sim, s->dl, s->c);
	return 1;
}

static int report_count(const struct scan *s, struct diag_list *diags)
{
	struct strbuf axes = STRBUF_INIT;
	const char *path;
	struct diag_loc at;
	struct diag *d;
	int has_gtp = 0, has_dp = 0;

	if (s->shards == s->lanes)
		return 0;
	for (int i = 0; i < s->c->n_sharded; i++) {
		enum drv_axis a = s->c->sharded[i];

		if (!drv_has_axis(s->dl, a))
			continue;
		has_gtp |= a == AX_GTP;
		has_dp |= a == AX_DP;
		strbuf_addf(&axes, "%s%s %lld", axes.len ? " x " : "",
			    drv_axis_name(a), drv_axis_size(s->dl, a));
	}
	if (!axes.len)
		strbuf_addstr(&axes, "no sharded axis");
	else if (s->shards == s->p->dp_replicate && s->p->gtp > 1)
		strbuf_addstr(&axes, " = D, the model copies");
	at = where(&s->p->set.sim, s->c, CAUSE_CALL, &path);
	d = diag_add(diags, "GT513", at, path,
		     "%s: the driver splits the batch into %lld shard%s (%s) "
		     "but Megatron has %lld lanes (D %lld x G %lld)",
		     s->c->name, s->shards, s->shards == 1 ? "" : "s",
		     axes.bad ? "" : strbuf_str(&axes), s->lanes,
		     s->p->dp_replicate, s->p->gtp);
	strbuf_release(&axes);
	if (s->dl->five_d && has_dp && !has_gtp)
		diag_hint(d, "use gtplan.driver_layout: 4d, whose data_parallel "
			  "axis has L = %lld entries, or shard gtp_weight_remat "
			  "too", s->lanes);
	else
		diag_hint(d, "shard over the axes that index the lanes, whose "
			  "sizes multiply to L = %lld: data_parallel in the 4-D "
			  "layout, data_parallel and gtp_weight_remat in the "
			  "5-D one", s->lanes);
	note_layout(d, &s->p->set.sim, s->dl, s->c);
	return 1;
}

static int report_batch(const struct scan *s, long long batch,
			long long micro, struct diag_list *diags)
{
	const struct plan *p = s->p;
	const char *path;
	struct diag_loc at;
	struct diag *d;
	int train = s->c->uses_train_batch && micro > 0;

	if (batch <= 0)
		return 0;
	/* plan_build's GT400/GT401 already cover the plan's own batches */
	if (s->shards == p->lanes && batch == p->global_batch &&
	    (!train || micro == p->micro_batch))
		return 0;
	at = where(&s->p->set.sim, s->c, CAUSE_BATCH, &path);
	if (batch % s->shards) {
		d = diag_add(diags, "GT514", at, path,
			     "%s: a batch of %lld samples does not split into "
			     "%lld shards", s->c->name, batch, s->shards);
		long long lo = batch / s->shards * s->shards;
		long long hi = lo + s->shards;

		if (lo)
			diag_hint(d, "use a batch that is a multiple of %lld "
				  "(%lld or %lld)", s->shards, lo, hi);
		else
			diag_hint(d, "use a batch that is a multiple of %lld "
				  "(%lld)", s->shards, hi);
		return 1;
	}
	if (train && (batch / s->shards) % micro) {
		long long step = s->shards * micro;

		d = diag_add(diags, "GT514", at, path,
			     "%s: each of the %lld shards gets %lld samples, "
			     "not a multiple of the micro batch %lld",
			     s->c->name, s->shards, batch / s->shards, micro);
		diag_hint(d, "use a batch that is a multiple of %lld (shards "
			  "%lld x micro batch %lld)", step, s->shards, micro);
		return 1;
	}
	return 0;
}

static void scan_release(struct scan *s)
{
	free(s->lane_rank);
	free(s->lane_data);
	free(s->lane_shard);
	free(s->owner);
	free(s->split);
}

int disp_check_placement(const struct plan *p, const struct drv_layout *dl,
			 const struct call_def *c, long long batch,
			 long long micro, struct diag_list *diags)
{
	struct scan s;
	long long m[LAY_NAXES], co[AX_N];
	size_t L;
	int errors = -1;

	if (!p->grid_ok || c->dispatch != CALL_SHARDED || !c->moves_data ||
	    p->lanes < 1)
		return 0;
	memset(&s, 0, sizeof(s));
	s.p = p;
	s.dl = dl;
	s.c = c;
	s.lanes = p->lanes;
	s.shards = disp_shard_count(dl, c);
	L = (size_t)s.lanes;
	s.lane_rank = malloc(L * sizeof(*s.lane_rank));
	s.lane_data = malloc(L * sizeof(*s.lane_data));
	s.lane_shard = malloc(L * sizeof(*s.lane_shard));
	s.split = calloc(L, 1);
	if (s.shards <= s.lanes)
		s.owner = malloc((size_t)s.shards * sizeof(*s.owner));
	if (!s.lane_rank || !s.lane_data || !s.lane_shard || !s.split ||
	    (s.shards <= s.lanes && !s.owner))
		goto out;
	for (size_t l = 0; l < L; l++)
		s.lane_rank[l] = s.lane_shard[l] = -1;
	for (long long i = 0; s.owner && i < s.shards; i++)
		s.owner[i] = -1;
	/* both coordinates advance rank by rank: no division per rank */
	lay_coords(&p->dense, 0, m);
	drv_coords(dl, 0, co);
	for (long long r = 0; r < p->world; r++) {
		scan_rank(&s, r, m, co);
		lay_coords_next(&p->dense, m);
		drv_coords_next(dl, co);
	}
	if (!s.owner && shared_by_sort(&s))
		goto out;

	errors = 0;
	if (s.split_lanes)
		errors += report_split(&s, diags);
	if (s.shared)
		errors += report_shared(&s, diags);
	errors += report_no_data(&s, diags);
	errors += report_count(&s, diags);
	errors += report_batch(&s, batch, micro, diags);
out:
	scan_release(&s);
	return errors;
}
