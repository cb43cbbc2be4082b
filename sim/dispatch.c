/*
 * dispatch: NeMo-RL's driver grid and its dispatch rules; the check that
 * every data-moving call puts its shards where Megatron's lanes are is
 * dispatch_check.c's.
 *
 * The rules follow RayWorkerGroup (docs/notes/dispatch-semantics.md §2):
 * for each worker the driver walks the layout's axes outermost first; the
 * first free axis (neither sharded nor replicated) with a non-zero
 * coordinate leaves the worker out (or gives it a dummy call); a worker
 * that is in gets data[c[S0]][c[S1]]..., and its result is kept when its
 * coordinate is 0 on every output_is_replicated axis.
 */
#include "dispatch.h"
#include "dispatch_int.h"

#include <stdlib.h>
#include <string.h>


static const char *const axis_names[AX_N] = {
	[AX_PP] = "pipeline_parallel",
	[AX_DP] = "data_parallel",
	[AX_GTP] = "gtp_weight_remat",
	[AX_CP] = "context_parallel",
	[AX_TP] = "tensor_parallel",
};

static const char *const axis_short[AX_N] = {
	[AX_PP] = "pp", [AX_DP] = "dp", [AX_GTP] = "gtp",
	[AX_CP] = "cp", [AX_TP] = "tp",
};

const char *drv_axis_name(enum drv_axis a)
{
	return (unsigned)a < AX_N ? axis_names[a] : "?";
}

const char *drv_axis_short(enum drv_axis a)
{
	return (unsigned)a < AX_N ? axis_short[a] : "?";
}

enum drv_axis drv_axis_parse(const char *name)
{
	for (int a = 0; a < AX_N; a++)
		if (name && strcmp(name, axis_names[a]) == 0)
			return (enum drv_axis)a;
	return AX_N;
}

/* ---- the grid --------------------------------------------------------- */

void drv_layout_init(struct drv_layout *dl, const struct plan *p)
{
	memset(dl, 0, sizeof(*dl));
	dl->world = p->world;
	dl->five_d = p->driver_layout && strcmp(p->driver_layout, "5d") == 0;
	dl->axis[dl->n] = AX_PP;
	dl->size[dl->n++] = p->pp;
	dl->axis[dl->n] = AX_DP;
	if (dl->five_d) {
		/* reshape(PP, D, G, CP, TP) */
		dl->size[dl->n++] = p->dp_replicate;
		dl->axis[dl->n] = AX_GTP;
		dl->size[dl->n++] = p->gtp;
	} else {
		/* reshape(PP, -1, CP, TP): the -1 is W / (PP*CP*TP) = D*G */
		dl->size[dl->n++] = p->world / (p->pp * p->cp * p->tp);
	}
	dl->axis[dl->n] = AX_CP;
	dl->size[dl->n++] = p->cp;
	dl->axis[dl->n] = AX_TP;
	dl->size[dl->n++] = p->tp;
}

static int pos_of(const struct drv_layout *dl, enum drv_axis a)
{
	for (int k = 0; k < dl->n; k++)
		if (dl->axis[k] == a)
			return k;
	return -1;
}

int drv_has_axis(const struct drv_layout *dl, enum drv_axis a)
{
	return pos_of(dl, a) >= 0;
}

long long drv_axis_size(const struct drv_layout *dl, enum drv_axis a)
{
	int k = pos_of(dl, a);

	return k < 0 ? 0 : dl->size[k];
}

void drv_coords(const struct drv_layout *dl, long long rank,
		long long coord[AX_N])
{
	for (int a = 0; a < AX_N; a++)
		coord[a] = -1;
	/* row-major, as numpy's reshape: the last axis varies fastest */
	for (int k = dl->n - 1; k >= 0; k--) {
		coord[dl->axis[k]] = rank % dl->size[k];
		rank /= dl->size[k];
	}
}

void drv_coords_next(const struct drv_layout *dl, long long coord[AX_N])
{
	for (int k = dl->n - 1; k >= 0; k--) {
		if (++coord[dl->axis[k]] < dl->size[k])
			return;
		coord[dl->axis[k]] = 0;
	}
}

/* Where an axis sits in the driver's numbering: tensor_parallel and
 * context_parallel below the lanes, pipeline_parallel above them. */
static const int drv_level[LAY_NAXES] = {
	[LAY_TP] = 0, [LAY_CP] = 0, [LAY_GTP] = 1, [LAY_EP] = -1,
	[LAY_DP] = 1, [LAY_PP] = 2,
};

int drv_order_clash(const struct plan *p, enum lay_axis *early,
		       enum lay_axis *late)
{
	int seen[3] = { -1, -1, -1 };

	for (int k = 0; k < LAY_NAXES; k++) {
		enum lay_axis a = p->dense.order.axis[k];
		int lv = drv_level[a];

		if (lv < 0 || p->dense.size[a] <= 1)
			continue;
		for (int hi = lv + 1; hi < 3; hi++)
			if (seen[hi] >= 0) {
				*early = (enum lay_axis)seen[hi];
				*late = a;
				return 1;
			}
		if (seen[lv] < 0)
			seen[lv] = (int)a;
	}
	return 0;
}

int drv_follows_rank_order(const struct plan *p)
{
	enum lay_axis a, b;

	return !drv_order_clash(p, &a, &b);
}

/* ---- the dispatch rule ------------------------------------------------ */

static unsigned sharded_mask(const struct call_def *c)
{
	unsigned m = 0;

	for (int i = 0; i < c->n_sharded; i++)
		m |= AX_BIT(c->sharded[i]);
	return m;
}

void disp_decide(const struct drv_layout *dl, const struct call_def *c,
		   const long long co[AX_N], struct disp_rank *out)
{
	unsigned fixed;

	out->called = 1;
	out->dummy = 0;
	out->shard = -1;
	out->returned = 1;
	out->left_out_by = AX_N;
	if (c->dispatch != CALL_SHARDED) {
		for (int k = 0; k < dl->n; k++) {
			enum drv_axis a = dl->axis[k];

			if ((c->rank0_only & AX_BIT(a)) && co[a] != 0) {
				out->called = out->returned = 0;
				out->left_out_by = a;
				return;
			}
		}
		return;
	}
	fixed = sharded_mask(c) | c->replicated;
	for (int k = 0; k < dl->n; k++) {
		enum drv_axis a = dl->axis[k];

		if (!(fixed & AX_BIT(a)) && co[a] != 0) {
			out->called = out->dummy = c->dummy ? 1 : 0;
			out->returned = 0;
			out->left_out_by = a;
			return;
		}
	}
	out->shard = 0;
	for (int i = 0; i < c->n_sharded; i++) {
		int k = pos_of(dl, c->sharded[i]);

		if (k >= 0)
			out->shard = out->shard * dl->size[k] + co[c->sharded[i]];
	}
	for (int k = 0; k < dl->n; k++)
		if ((c->output & AX_BIT(dl->axis[k])) && co[dl->axis[k]] != 0)
			out->returned = 0;
}

void disp_rank(const struct drv_layout *dl, const struct call_def *c,
	       long long rank, struct disp_rank *out)
{
	long long co[AX_N];

	drv_coords(dl, rank, co);
	disp_decide(dl, c, co, out);
}

long long disp_returned_count(const struct drv_layout *dl,
			      const struct call_def *c)
{
	unsigned fixed = c->dispatch == CALL_SHARDED ?
		sharded_mask(c) | c->replicated : ~0u;
	unsigned must_be_zero = c->dispatch == CALL_SHARDED ?
		~fixed | c->output : c->rank0_only;
	long long n = 1;

	for (int k = 0; k < dl->n; k++)
		if (!(must_be_zero & AX_BIT(dl->axis[k])))
			n *= dl->size[k];
	return n;
}

/* ---- which ranks are called, in Megatron's coordinates ---------------- */

/* A run of digits of the rank's mixed-radix number: positional values
 * [lo, hi). "These digits are all 0" is (rank / lo) % (hi / lo) == 0. */
struct digits {
	long long lo, hi;
};

static int digits_cmp(const void *a, const void *b)
{
	const struct digits *x = a, *y = b;

	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Sorts v and merges adjacent runs in place; returns the new count. */
static int digits_merge(struct digits *v, int n)
{
	int m = 0;

	qsort(v, (size_t)n, sizeof(*v), digits_cmp);
	for (int i = 0; i < n; i++) {
		if (m && v[m - 1].hi == v[i].lo)
			v[m - 1].hi = v[i].hi;
		else
			v[m++] = v[i];
	}
	return m;
}

static int probe_called(const struct drv_layout *dl, const struct call_def *c,
			long long rank)
{
	struct disp_rank d;

	disp_rank(dl, c, rank, &d);
	return d.called;
}

int disp_called_when(const struct drv_layout *dl, const struct call_def *c,
		     const struct plan *p, unsigned *axes)
{
	struct digits drv[AX_N], meg[LAY_NAXES];
	int nd = 0, nm = 0;
	long long stride = 1;

	*axes = 0;
	/* the driver axes the call restricts to index 0: probed with the
	 * worker at index 1 there and 0 elsewhere */
	for (int k = dl->n - 1; k >= 0; k--) {
		if (dl->size[k] > 1 && stride < dl->world &&
		    !probe_called(dl, c, stride))
			drv[nd++] = (struct digits){ stride,
						     stride * dl->size[k] };
		stride *= dl->size[k];
	}
	/* Megatron's axes whose index-1 rank is left out: the candidates */
	for (int a = 0; a < LAY_NAXES; a++) {
		long long st = p->dense.stride[a], n = p->dense.size[a];

		if (n > 1 && !probe_called(dl, c, st)) {
			meg[nm++] = (struct digits){ st, st * n };
			*axes |= 1u << a;
		}
	}
	/* the same digits must be zero, or the candidates do not describe
	 * the called ranks (the driver's axes cut across Megatron's) */
	nd = digits_merge(drv, nd);
	nm = digits_merge(meg, nm);
	if (nd != nm)
		return 0;
	for (int i = 0; i < nd; i++)
		if (drv[i].lo != meg[i].lo || drv[i].hi != meg[i].hi)
			return 0;
	return 1;
}

long long disp_shard_count(const struct drv_layout *dl,
			   const struct call_def *c)
{
	long long n = 1;

	if (c->dispatch != CALL_SHARDED)
		return 1;
	for (int i = 0; i < c->n_sharded; i++) {
		int k = pos_of(dl, c->sharded[i]);

		if (k >= 0)
			n *= dl->size[k];
	}
	return n;
}
