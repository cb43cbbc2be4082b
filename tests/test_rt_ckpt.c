/*
 * The runtime checkpoint's proof of coverage (runtime/rt_ckpt_cover.c's
 * rt_ckpt_index_validate) on indexes made by hand: exact covers pass;
 * pieces that overlap, leave a gap, stick out of their tensor or carry an
 * offset near LLONG_MAX are refused with the message that names the
 * element; random small indexes against an element-by-element count;
 * tensors of 10^12 elements proved from a few pieces (one mark per element
 * would need 4 TB), 65536 pieces of one tensor, the sweep's worst case.
 * And the load's read of a piece in parts (rt_ckpt_piece_copy): the same
 * copy and sum whatever the part's size. The refusals of whole checkpoints
 * on disk (read_piece's bounds too) are tests/runtime_ckpt.sh's.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rt_ckpt_index.h"
#include "rt_ckpt_int.h"

#define MAXT 4
#define MAXF 8

/* An index that owns nothing on the heap but its pieces. */
struct fx {
	struct rt_ckpt_index x;
	struct rt_ckpt_tensor t[MAXT];
	struct rt_ckpt_file f[MAXF];
	long long cap;
	char why[RT_CKPT_WHY];
};

static void fx_init(struct fx *f, long long cap)
{
	memset(f, 0, sizeof(*f));
	f->x.t = f->t;
	f->x.f = f->f;
	f->x.nf = MAXF;
	for (int r = 0; r < MAXF; r++) {
		snprintf(f->f[r].name, sizeof(f->f[r].name), "shard-%05d.bin",
			 r);
		f->f[r].rank = r;
	}
	f->cap = cap;
	f->x.pc = calloc((size_t)cap, sizeof(*f->x.pc));
	ck_assert_ptr_nonnull(f->x.pc);
}

static void fx_release(struct fx *f)
{
	free(f->x.pc);
}

/* Adds a tensor key [rows, cols] (ndim 1: [cols], one row). */
static void tensor(struct fx *f, const char *key, int ndim, long long rows,
		   long long cols)
{
	struct rt_ckpt_tensor *t = &f->t[f->x.nt++];

	ck_assert_int_le(f->x.nt, MAXT);
	snprintf(t->key, sizeof(t->key), "%s", key);
	t->ndim = ndim;
	t->rows = rows;
	t->cols = cols;
}

/* Adds a piece of the last tensor, written by rank. */
static void piece(struct fx *f, int rank, long long r0, long long c0,
		  long long nr, long long nc)
{
	struct rt_ckpt_piece *q = &f->x.pc[f->x.np++];

	ck_assert_int_le(f->x.np, f->cap);
	q->tensor = f->x.nt - 1;
	q->file = rank;
	q->r0 = r0;
	q->c0 = c0;
	q->nr = nr;
	q->nc = nc;
}

/* Adds the tensors and pieces that text spells: a tensor "key ndim rows
 * cols", then each of its pieces "| rank r0 c0 nr nc"; ';' before the
 * next tensor. A case then states only its shapes. */
static void build(struct fx *f, const char *text)
{
	const char *s = text;

	for (;;) {
		char key[32];
		long long v[5];
		int ndim, n = 0;

		s += strspn(s, " ;");
		if (!*s)
			break;
		if (sscanf(s, "%31[a-z] %d %lld %lld%n", key, &ndim, &v[0],
			   &v[1], &n) == 4)
			tensor(f, key, ndim, v[0], v[1]);
		else if (sscanf(s, "| %lld %lld %lld %lld %lld%n", &v[0], &v[1],
				&v[2], &v[3], &v[4], &n) == 5)
			piece(f, (int)v[0], v[1], v[2], v[3], v[4]);
		ck_assert_msg(n > 0, "cannot read '%s' at '%s'", text, s);
		s += n;
	}
}

static int validate(struct fx *f)
{
	f->why[0] = 0;
	return rt_ckpt_index_validate(&f->x, f->why);
}

static void refused(struct fx *f, const char *want)
{
	ck_assert_int_eq(validate(f), -1);
	ck_assert_msg(!strcmp(f->why, want), "got  '%s'\nwant '%s'", f->why,
		      want);
}

START_TEST(exact_covers_pass)
{
	struct fx f;

	fx_init(&f, 32);
	build(&f,
	      /* row bands out of order, as rank 0 gathers them */
	      "bands 2 12 8 | 2 6 0 3 8 | 0 0 0 3 8 | 3 9 0 3 8 | 1 3 0 3 8;"
	      /* an uneven 3 x 2 grid */
	      "grid 2 12 8 | 0 0 0 5 3 | 1 0 3 5 5 | 2 5 0 4 3 | 3 5 3 4 5"
	      " | 4 9 0 3 3 | 5 9 3 3 5;"
	      /* bricks: no two pieces start on the same column of every
	       * row */
	      "bricks 2 4 6 | 0 0 0 2 4 | 1 0 4 3 2 | 2 2 0 2 1 | 3 2 1 2 3"
	      " | 4 3 4 1 2;"
	      /* a 1-D tensor: one row */
	      "vec 1 1 10 | 0 0 4 1 6 | 1 0 0 1 4");
	ck_assert_int_eq(validate(&f), 0);
	fx_release(&f);
}
END_TEST

/* An index (build()'s text) and the message that refuses it. */
struct refusal {
	const char *index;
	const char *want;
};

static void all_refused(const struct refusal *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fx f;

		fx_init(&f, 8);
		build(&f, c[i].index);
		refused(&f, c[i].want);
		fx_release(&f);
	}
}

#define TWICE ": each element needs exactly one main replica"

START_TEST(overlaps_refused)
{
	static const struct refusal c[] = {
		/* rank 1's band starts a row early */
		{ "w 2 12 8 | 0 0 0 3 8 | 1 2 0 4 8 | 2 6 0 6 8",
		  "element [2, 0] of w is saved twice, by ranks 0 and 1"
		  TWICE },
		/* columns: the first shared column of the first shared row,
		 * the ranks in the metadata's order */
		{ "w 2 12 8 | 1 0 4 12 4 | 0 0 0 12 5",
		  "element [0, 4] of w is saved twice, by ranks 1 and 0"
		  TWICE },
		/* a piece listed twice (tests/runtime_ckpt.sh's "covered
		 * twice") */
		{ "w 2 4 4 | 0 0 0 2 4 | 1 2 0 2 4 | 0 0 0 2 4",
		  "element [0, 0] of w is saved twice, by ranks 0 and 0"
		  TWICE },
		/* one piece inside another, met after rows of clean pieces;
		 * a gap in an earlier row too: the overlap is said */
		{ "w 2 10 10 | 0 0 0 2 10 | 1 3 0 7 5 | 2 3 5 7 5 | 3 6 7 2 1",
		  "element [6, 7] of w is saved twice, by ranks 2 and 3"
		  TWICE },
		/* 1-D */
		{ "v 1 1 10 | 0 0 0 1 6 | 1 0 5 1 5",
		  "element [5] of v is saved twice, by ranks 0 and 1" TWICE },
	};

	all_refused(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

START_TEST(gaps_refused)
{
	static const struct refusal c[] = {
		/* a band dropped (tests/runtime_ckpt.sh's "coverage gap") */
		{ "w 2 12 8 | 0 0 0 3 8 | 2 6 0 6 8",
		  "element [3, 0] of w is saved by no rank (72 of 96 elements "
		  "covered)" },
		/* a grid's cell: its first column */
		{ "w 2 12 8 | 0 0 0 5 8 | 1 5 0 4 3 | 2 9 0 3 8",
		  "element [5, 3] of w is saved by no rank (76 of 96 elements "
		  "covered)" },
		/* only the last element */
		{ "w 2 4 4 | 0 0 0 3 4 | 1 3 0 1 3",
		  "element [3, 3] of w is saved by no rank (15 of 16 elements "
		  "covered)" },
		/* the first row, where no piece starts */
		{ "w 2 4 4 | 0 1 0 3 4",
		  "element [0, 0] of w is saved by no rank (12 of 16 elements "
		  "covered)" },
		/* no piece at all, after a tensor that is whole */
		{ "a 1 1 4 | 0 0 0 1 4; b 1 1 4",
		  "element [0] of b is saved by no rank (0 of 4 elements "
		  "covered)" },
	};

	all_refused(c, sizeof(c) / sizeof(c[0]));
}
END_TEST

START_TEST(outside_refused)
{
	struct fx f;
	/* rank 1's piece and where the message puts it */
	struct { long long r0, c0, nr, nc; const char *at; } c[] = {
		{ 10, 0, 4, 8, "at [10, 0] of shape [4, 8]" },
		{ 0, 1, 12, 8, "at [0, 1] of shape [12, 8]" },
		{ -3, 0, 3, 8, "at [-3, 0] of shape [3, 8]" },
		{ 3, 0, 0, 8, "at [3, 0] of shape [0, 8]" },
		/* offset + shape would wrap past LLONG_MAX */
		{ 0x7ffffffffffffffeLL, 0, 4, 8,
		  "at [9223372036854775806, 0] of shape [4, 8]" },
		{ 0, 0x7fffffffffffffffLL, 12, 8,
		  "at [0, 9223372036854775807] of shape [12, 8]" },
		{ 0, 0, 0x7fffffffffffffffLL, 0x7fffffffffffffffLL,
		  "at [0, 0] of shape [9223372036854775807, "
		  "9223372036854775807]" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char want[RT_CKPT_WHY];

		snprintf(want, sizeof(want), "the piece of w %s (rank 1) is "
			 "empty or lies outside the tensor's shape [12, 8]",
			 c[i].at);
		fx_init(&f, 4);
		build(&f, "w 2 12 8 | 0 0 0 3 8");
		piece(&f, 1, c[i].r0, c[i].c0, c[i].nr, c[i].nc);
		refused(&f, want);
		fx_release(&f);
	}
}
END_TEST

/* A rank's whole shard of a model far past any host's memory: the proof
 * looks at the pieces only (one int per element would be 4 TB: the
 * allocation fails, under ASan too, and so would the test). */
START_TEST(huge_tensors_by_their_pieces)
{
	const long long R = 1000000, C = 1000000;
	struct fx f;

	fx_init(&f, 16);
	tensor(&f, "big", 2, R, C);
	for (int b = 0; b < 4; b++) /* 4 row bands x 2 column halves */
		for (int h = 0; h < 2; h++)
			piece(&f, 2 * b + h, b * R / 4, h * C / 2, R / 4,
			      C / 2);
	ck_assert_int_eq(validate(&f), 0);
	fx_release(&f);
	/* its last row missing, one row shared */
	fx_init(&f, 16);
	tensor(&f, "big", 2, R, 100000);
	piece(&f, 0, 0, 0, R / 2, 100000);
	piece(&f, 1, R / 2, 0, R / 2 - 1, 100000);
	refused(&f, "element [999999, 0] of big is saved by no rank "
		"(99999900000 of 100000000000 elements covered)");
	f.x.pc[1].r0--;
	refused(&f, "element [499999, 0] of big is saved twice, by ranks 0 and "
		"1: each element needs exactly one main replica");
	fx_release(&f);
}
END_TEST

/* RT_MAX_WORLD pieces of one tensor (read_tensors' limit), listed last
 * first; and a staircase of 4096 column strips (16.7M elements) whose
 * every new piece goes first among the row's pieces, the sweep's worst
 * case (a move of 8 bytes per piece of the row). The check's 60 s hold
 * the proof to the pieces, not the elements. */
START_TEST(many_pieces)
{
	const long long n = 65536, s = 4096;
	struct fx f;

	fx_init(&f, n + 2 * s);
	tensor(&f, "bands", 2, n * 1000, 64);
	for (long long i = n - 1; i >= 0; i--)
		piece(&f, (int)(i % MAXF), i * 1000, 0, 1000, 64);
	ck_assert_int_eq(validate(&f), 0);
	/* a staircase: column strip i from row i down, each a new first
	 * column; then the rest of each column above the stair */
	tensor(&f, "stairs", 2, s, s);
	for (long long i = 0; i < s; i++)
		piece(&f, 0, i, s - 1 - i, s - i, 1);
	for (long long i = 0; i < s - 1; i++)
		piece(&f, 1, 0, s - 2 - i, i + 1, 1);
	ck_assert_int_eq(validate(&f), 0);
	fx_release(&f);
}
END_TEST

/* ---- random small indexes against an element-by-element count ---------- */

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static long long rnd(long long n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (long long)(rng % (unsigned long long)n);
}

/* Splits [r0, r0 + nr) x [c0, c0 + nc) into pieces, guillotine style. */
static void split(struct fx *f, long long r0, long long c0, long long nr,
		  long long nc, int depth)
{
	if (depth > 3 || rnd(3) == 0 || (nr < 2 && nc < 2)) {
		piece(f, (int)rnd(MAXF), r0, c0, nr, nc);
		return;
	}
	if (nr >= 2 && (nc < 2 || rnd(2))) {
		long long a = 1 + rnd(nr - 1);

		split(f, r0, c0, a, nc, depth + 1);
		split(f, r0 + a, c0, nr - a, nc, depth + 1);
	} else {
		long long a = 1 + rnd(nc - 1);

		split(f, r0, c0, nr, a, depth + 1);
		split(f, r0, c0 + a, nr, nc - a, depth + 1);
	}
}

/* What the element-by-element check said, in its words. */
static void expected(const struct fx *f, char *want)
{
	const struct rt_ckpt_tensor *t = &f->t[0];
	long long cnt[8][8] = { { 0 } }, covered = 0;
	char a[48], b[48], c[48];

	want[0] = 0;
	for (long long k = 0; k < f->x.np; k++) {
		const struct rt_ckpt_piece *q = &f->x.pc[k];

		if (q->r0 < 0 || q->c0 < 0 || q->nr < 1 || q->nc < 1 ||
		    q->r0 + q->nr > t->rows || q->c0 + q->nc > t->cols) {
			snprintf(want, RT_CKPT_WHY, "the piece of %s at %s of "
				 "shape %s (rank %d) is empty or lies outside "
				 "the tensor's shape %s", t->key,
				 rt_ckpt_index_at(t, q->r0, q->c0, a, 48),
				 rt_ckpt_index_at(t, q->nr, q->nc, b, 48),
				 f->f[q->file].rank,
				 rt_ckpt_index_at(t, t->rows, t->cols, c, 48));
			return;
		}
		for (long long r = q->r0; r < q->r0 + q->nr; r++)
			for (long long j = q->c0; j < q->c0 + q->nc; j++)
				covered += !cnt[r][j]++;
	}
	for (long long r = 0; r < t->rows; r++)
		for (long long j = 0; j < t->cols; j++)
			if (cnt[r][j] > 1) {
				snprintf(want, RT_CKPT_WHY, "element %s of %s "
					 "is saved twice", rt_ckpt_index_at(t,
					 r, j, a, 48), t->key);
				return;
			}
	for (long long r = 0; r < t->rows; r++)
		for (long long j = 0; j < t->cols; j++)
			if (!cnt[r][j]) {
				snprintf(want, RT_CKPT_WHY, "element %s of %s "
					 "is saved by no rank (%lld of %lld "
					 "elements covered)",
					 rt_ckpt_index_at(t, r, j, a, 48),
					 t->key, covered, t->rows * t->cols);
				return;
			}
}

START_TEST(random_against_element_count)
{
	int refusals = 0;

	for (int it = 0; it < 20000; it++) {
		struct fx f;
		char want[RT_CKPT_WHY];
		long long rows = 1 + rnd(8), cols = 1 + rnd(8);

		fx_init(&f, 64);
		tensor(&f, "w", 2, rows, cols);
		split(&f, 0, 0, rows, cols, 0);
		/* then most of the time one damage: a piece moved, grown,
		 * shrunk, dropped or repeated */
		if (rnd(5)) {
			struct rt_ckpt_piece *q = &f.x.pc[rnd(f.x.np)];

			switch (rnd(5)) {
			case 0:
				q->r0 += rnd(5) - 2;
				q->c0 += rnd(5) - 2;
				break;
			case 1:
				q->nr += rnd(3);
				q->nc += rnd(3);
				break;
			case 2:
				q->nr -= rnd(2);
				q->nc -= rnd(2);
				break;
			case 3:
				*q = f.x.pc[--f.x.np];
				break;
			default:
				f.x.pc[f.x.np++] = *q;
			}
		}
		/* in any order */
		for (long long k = f.x.np - 1; k > 0; k--) {
			long long j = rnd(k + 1);
			struct rt_ckpt_piece tmp = f.x.pc[k];

			f.x.pc[k] = f.x.pc[j];
			f.x.pc[j] = tmp;
		}
		expected(&f, want);
		if (!want[0]) {
			ck_assert_msg(validate(&f) == 0, "%s", f.why);
		} else {
			ck_assert_int_eq(validate(&f), -1);
			ck_assert_msg(!strncmp(f.why, want, strlen(want)),
				      "got  '%s'\nwant '%s'", f.why, want);
			refusals++;
		}
		fx_release(&f);
	}
	/* both verdicts are common */
	ck_assert_int_gt(refusals, 5000);
	ck_assert_int_lt(refusals, 15000);
}
END_TEST

/* ---- the load's read of a piece in parts -------------------------------- */

static uint64_t fnv(const void *data, size_t n)
{
	const unsigned char *b = data;
	uint64_t h = RT_CKPT_FNV_OFFSET;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Random pieces and regions of a [9, 7] tensor, each piece read in parts
 * of 1, 2, 3, 5, 7, 64 floats from a file where it starts at byte 12:
 * the region holds exactly the overlap's values (the rest untouched), the
 * sum is the whole piece's; a file one float short is a short read. */
START_TEST(piece_read_in_parts)
{
	static const long long chunks[] = { 1, 2, 3, 5, 7, 64 };
	const long long R = 9, C = 7;

	for (int it = 0; it < 2000; it++) {
		struct rt_ckpt_piece q = { 0 };
		struct rt_ckpt_tensor t = { .rows = R, .cols = C };
		float val[63], buf[64], dst[63], pad[3] = { 0 };
		uint64_t sum;
		FILE *f = tmpfile();
		long long n;

		ck_assert_ptr_nonnull(f);
		q.r0 = rnd(R);
		q.c0 = rnd(C);
		q.nr = 1 + rnd(R - q.r0);
		q.nc = 1 + rnd(C - q.c0);
		t.r0 = rnd(R);
		t.c0 = rnd(C);
		t.nr = 1 + rnd(R - t.r0);
		t.nc = 1 + rnd(C - t.c0);
		n = q.nr * q.nc;
		for (long long e = 0; e < n; e++) /* [i, j] holds 100 i + j */
			val[e] = (float)(100 * (q.r0 + e / q.nc) + q.c0 +
					 e % q.nc);
		ck_assert_uint_eq(fwrite(pad, sizeof(float), 3, f), 3);
		ck_assert_uint_eq(fwrite(val, sizeof(float), (size_t)n, f),
				  (size_t)n);
		for (size_t c = 0; c < sizeof(chunks) / sizeof(*chunks); c++) {
			for (long long e = 0; e < t.nr * t.nc; e++)
				dst[e] = -1;
			sum = RT_CKPT_FNV_OFFSET;
			ck_assert_int_eq(fseek(f, 12, SEEK_SET), 0);
			ck_assert_int_eq(rt_ckpt_piece_copy(f, &q, &t, buf,
					 chunks[c], dst, &sum), 0);
			ck_assert(sum == fnv(val, (size_t)n * sizeof(float)));
			for (long long e = 0; e < t.nr * t.nc; e++) {
				long long i = t.r0 + e / t.nc;
				long long j = t.c0 + e % t.nc;
				int in = i >= q.r0 && i < q.r0 + q.nr &&
					 j >= q.c0 && j < q.c0 + q.nc;
				float want = in ? (float)(100 * i + j) : -1;

				ck_assert_msg(dst[e] == want, "part %lld: "
					      "[%lld, %lld] is %g, want %g",
					      chunks[c], i, j, dst[e], want);
			}
		}
		/* one float short */
		sum = RT_CKPT_FNV_OFFSET;
		ck_assert_int_eq(fseek(f, 16, SEEK_SET), 0);
		ck_assert_int_eq(rt_ckpt_piece_copy(f, &q, &t, buf, 2, dst,
						    &sum), -1);
		fclose(f);
	}
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "exact_covers", exact_covers_pass },
		{ "overlaps", overlaps_refused },
		{ "gaps", gaps_refused },
		{ "outside", outside_refused },
		{ "huge_tensors", huge_tensors_by_their_pieces },
		{ "many_pieces", many_pieces },
		{ "random", random_against_element_count },
		{ "piece_read", piece_read_in_parts },
	};

	return RUN_CASES("rt_ckpt", cases, 60);
}
