/*
 * rt_ckpt_cover: the proof that a checkpoint's pieces cover every element
 * of every tensor exactly once (rt_ckpt_index.h's rt_ckpt_index_validate),
 * made on the pieces' rectangles. Its work and memory grow with the
 * number of pieces (a few per tensor: one per writing shard), never with
 * the tensors' elements: rank 0 proves a save and every rank a load, and
 * one mark per element of an 8B model's [128256, 4096] table would be 2
 * GiB and minutes per rank, which no memory limit of rt_limits counts.
 *
 * Per tensor: every piece lies inside [0, rows) x [0, cols); no two pieces
 * share an element; their areas sum to rows x cols. Disjoint pieces inside
 * the tensor whose areas sum to its size cover it exactly once. Overlaps
 * are found by a sweep down the rows: the pieces that hold the current
 * row, kept sorted by first column, are disjoint, so a new piece overlaps
 * one of them exactly when it overlaps a neighbour in that order. For n
 * pieces that is O(n log n) when few hold each row (the shards a save
 * writes), and never more than n moves of 8 bytes per piece holding a row
 * (a sorted array, not a tree: a hostile staircase of 65536 pieces,
 * read_tensors' most for one tensor, took 0.3 s at -O2;
 * tests/test_rt_ckpt.c times a smaller one). A refusal names, as the
 * element-by-element check it replaces did, an element saved twice (the
 * first in row-major order) or else the first saved by none.
 */
#include "rt_ckpt_index.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ckmath.h"
#include "rt_ckpt_int.h"

/* A piece of the tensor being proved: rows [r0, r1), columns [c0, c1),
 * and its index in x->pc (messages name its rank). */
struct rect {
	long long r0, r1, c0, c1, k;
};

static int cmp_ll(long long a, long long b)
{
	return (a > b) - (a < b);
}

/* by first row, then column, then index: a total order, so the proof and
 * its messages do not depend on qsort's handling of ties */
static int by_start(const void *pa, const void *pb)
{
	const struct rect *a = pa, *b = pb;
	int c = cmp_ll(a->r0, b->r0);

	c = c ? c : cmp_ll(a->c0, b->c0);
	return c ? c : cmp_ll(a->k, b->k);
}

/* by the row past the last, then column, then index */
static int by_end(const void *pa, const void *pb)
{
	const struct rect *a = pa, *b = pb;
	int c = cmp_ll(a->r1, b->r1);

	c = c ? c : cmp_ll(a->c0, b->c0);
	return c ? c : cmp_ll(a->k, b->k);
}

static int by_col(const void *pa, const void *pb)
{
	const struct rect *a = pa, *b = pb;
	int c = cmp_ll(a->c0, b->c0);

	return c ? c : cmp_ll(a->k, b->k);
}

/* The pieces that hold the current row: act[0..na) are indices into pc
 * (the pieces by start), sorted by first column. Indices, not rects, so
 * that an insertion moves 8 bytes a piece. */
struct row {
	const struct rect *pc;
	long long *act, na;
};

/* The first position in w->act whose piece's c0 is not below c0. */
static long long lower(const struct row *w, long long c0)
{
	long long lo = 0, hi = w->na;

	while (lo < hi) {
		long long mid = lo + (hi - lo) / 2;

		if (w->pc[w->act[mid]].c0 < c0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Adds pc[i] to the row's pieces; 1 (and nothing added) when it shares a
 * column with one of them. */
static int put(struct row *w, long long i)
{
	const struct rect *s = &w->pc[i];
	long long p = lower(w, s->c0);

	if ((p > 0 && w->pc[w->act[p - 1]].c1 > s->c0) ||
	    (p < w->na && w->pc[w->act[p]].c0 < s->c1))
		return 1;
	memmove(w->act + p + 1, w->act + p,
		(size_t)(w->na - p) * sizeof(*w->act));
	w->act[p] = i;
	w->na++;
	return 0;
}

/* Removes e, a copy of a piece put added (they are disjoint, so its first
 * column finds it). */
static void drop(struct row *w, const struct rect *e)
{
	long long p = lower(w, e->c0);

	if (p < w->na && w->pc[w->act[p]].k == e->k) {
		memmove(w->act + p, w->act + p + 1,
			(size_t)(w->na - p - 1) * sizeof(*w->act));
		w->na--;
	}
}

/* The first column of [0, cols) that none of the row's pieces (disjoint)
 * holds; -1 when they hold them all. */
static long long first_free(const struct row *w, long long cols)
{
	long long c = 0;

	for (long long i = 0; i < w->na && w->pc[w->act[i]].c0 <= c; i++)
		c = w->pc[w->act[i]].c1;
	return c < cols ? c : -1;
}

/* Row r holds an element of two pieces and no earlier row does: names the
 * row's first such element and the two pieces' ranks (in the metadata's
 * order). scratch holds n rects. */
static int twice(const struct rt_ckpt_index *x, const struct rt_ckpt_tensor *t,
		 const struct rect *pc, long long n, long long r,
		 struct rect *scratch, char *why)
{
	long long m = 0, far = -1, a = -1;
	char at[48];

	for (long long i = 0; i < n; i++)
		if (pc[i].r0 <= r && r < pc[i].r1)
			scratch[m++] = pc[i];
	qsort(scratch, (size_t)m, sizeof(*scratch), by_col);
	/* sorted by first column, the first piece that starts before an
	 * earlier one ends starts the first shared column */
	for (long long i = 0; i < m; i++) {
		const struct rect *s = &scratch[i];

		if (s->c0 < far) {
			long long lo = s->k < a ? s->k : a;
			long long hi = s->k < a ? a : s->k;

			return rt_ckpt_fail(why, "element %s of %s is saved "
				    "twice, by ranks %d and %d: each element "
				    "needs exactly one main replica",
				    rt_ckpt_index_at(t, r, s->c0, at, 48),
				    t->key, x->f[x->pc[lo].file].rank,
				    x->f[x->pc[hi].file].rank);
		}
		if (s->c1 > far) {
			far = s->c1;
			a = s->k;
		}
	}
	return rt_ckpt_fail(why, "two pieces of %s share an element", t->key);
}

/* Pieces [k0, k1) of x, all of tensor t: the proof, with buffers of k1 -
 * k0 entries each. */
static int cover(const struct rt_ckpt_index *x, const struct rt_ckpt_tensor *t,
		 long long k0, long long k1, struct rect *start,
		 struct rect *end, long long *act, char *why)
{
	long long n = k1 - k0, total, area = 0, i = 0, j = 0, r = 0;
	struct row w = { start, act, 0 };
	long long gap_r = -1, gap_c = -1;
	int sums; /* the areas sum to the tensor's size */
	char a[48], b[48], c[48];

	if (ck_mul(t->rows, t->cols, &total))
		return rt_ckpt_fail(why, "tensor %s has more elements than "
			    "fit in 64 bits", t->key);
	for (long long k = k0; k < k1; k++) {
		const struct rt_ckpt_piece *q = &x->pc[k];
		struct rect *s = &start[k - k0];

		/* differences, not sums: hostile offsets cannot wrap */
		if (q->nr < 1 || q->nc < 1 || q->nr > t->rows ||
		    q->nc > t->cols || q->r0 < 0 || q->c0 < 0 ||
		    q->r0 > t->rows - q->nr || q->c0 > t->cols - q->nc)
			return rt_ckpt_fail(why, "the piece of %s at %s of "
				    "shape %s (rank %d) is empty or lies "
				    "outside the tensor's shape %s", t->key,
				    rt_ckpt_index_at(t, q->r0, q->c0, a, 48),
				    rt_ckpt_index_at(t, q->nr, q->nc, b, 48),
				    x->f[q->file].rank,
				    rt_ckpt_index_at(t, t->rows, t->cols, c,
						     48));
		*s = (struct rect){ q->r0, q->r0 + q->nr, q->c0, q->c0 + q->nc,
				    k };
		/* each area is at most total; a sum that overflows counts
		 * an element twice, which the sweep finds */
		ck_add(area, q->nr * q->nc, &area);
	}
	sums = area == total;
	memcpy(end, start, (size_t)n * sizeof(*start));
	qsort(start, (size_t)n, sizeof(*start), by_start);
	qsort(end, (size_t)n, sizeof(*end), by_end);
	/* down the rows where a piece starts or ends (row 0 too): between two
	 * such rows the same pieces hold every row */
	for (;;) {
		long long next = LLONG_MAX;

		while (j < n && end[j].r1 <= r)
			drop(&w, &end[j++]);
		while (i < n && start[i].r0 <= r)
			if (put(&w, i++))
				return twice(x, t, start, n, r, end, why);
		/* a gap starts on such a row: look only when the areas say
		 * there is one, keep the first, and go on for overlaps */
		if (!sums && gap_r < 0 &&
		    (gap_c = first_free(&w, t->cols)) >= 0)
			gap_r = r;
		if (i < n)
			next = start[i].r0;
		if (j < n && end[j].r1 < next)
			next = end[j].r1;
		if (next >= t->rows)
			break;
		r = next;
	}
	if (sums)
		return 0;
	if (gap_r < 0) /* disjoint, inside, not the whole: cannot happen */
		return rt_ckpt_fail(why, "the pieces of %s cover %lld of its "
			    "%lld elements", t->key, area, total);
	return rt_ckpt_fail(why, "element %s of %s is saved by no rank (%lld "
		    "of %lld elements covered)",
		    rt_ckpt_index_at(t, gap_r, gap_c, a, 48), t->key, area,
		    total);
}

int rt_ckpt_index_validate(const struct rt_ckpt_index *x, char *why)
{
	long long most = 1, k = 0, *act;
	struct rect *buf;
	int rc = 0;

	/* pieces come grouped by tensor: the most any tensor has */
	for (long long a = 0, b; a < x->np; a = b) {
		for (b = a + 1; b < x->np && x->pc[b].tensor == x->pc[a].tensor;
		     b++)
			;
		most = b - a > most ? b - a : most;
	}
	buf = malloc(2 * (size_t)most * sizeof(*buf));
	act = malloc((size_t)most * sizeof(*act));
	if (!buf || !act) {
		free(buf);
		free(act);
		return rt_ckpt_fail(why, "out of memory");
	}
	for (int i = 0; i < x->nt && !rc; i++) {
		long long k0 = k;

		while (k < x->np && x->pc[k].tensor == i)
			k++;
		rc = cover(x, &x->t[i], k0, k, buf, buf + most, act, why);
	}
	if (!rc && k != x->np)
		rc = rt_ckpt_fail(why, "a piece names no tensor of the model");
	free(buf);
	free(act);
	return rc;
}
