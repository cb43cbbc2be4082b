/*
 * Tests for layout: rank order strings, rank <-> coordinates, and
 * Megatron's groups (the kinds table, group_of against the groups).
 * The plan JSON writer and its jsonw emitter are tested in
 * tests/test_layout_plan_json.c.
 *
 * The group vectors are those of docs/notes/megatron-semantics.md
 * §1.7 and §6, computed there by running Megatron-LM's own
 * generate_masked_orthogonal_rank_groups; lists the notes elide with "..."
 * are written out in full from the closed-form rank formula.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "harness.h"
#include "layout_fixture.h"

#define SEED LAY_DEFAULT_ORDER     /* Megatron-LM PR #6868's order */
#define SNAP "tp-gtp-cp-ep-dp-pp"  /* Megatron-LM d98e8a64 */

/* ---- helpers ---------------------------------------------------------- */

static void make_grid(struct lay_grid *g, const char *order, long long tp,
		      long long cp, long long gtp, long long ep, long long dp,
		      long long pp)
{
	struct lay_order o;
	char err[256];
	long long size[LAY_NAXES];

	ck_assert_msg(lay_order_parse(order, &o, err, sizeof(err)) == 0,
		      "%s: %s", order, err);
	size[LAY_TP] = tp;
	size[LAY_CP] = cp;
	size[LAY_GTP] = gtp;
	size[LAY_EP] = ep;
	size[LAY_DP] = dp;
	size[LAY_PP] = pp;
	lay_grid_init(g, &o, size);
}

static unsigned kind_axes(const char *name)
{
	const struct lay_group_kind *k = lay_group_kind_find(name);

	ck_assert_msg(k != NULL, "no group kind %s", name);
	return k->axes;
}

struct vec {
	const char *kind;
	const char *want;
};

static void expect_groups(const struct lay_grid *g, const struct vec *v,
			  size_t n, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char *got = groups_str(g, kind_axes(v[i].kind));

		ck_assert_msg(strcmp(got, v[i].want) == 0,
			      "%s %s:\n got  %s\n want %s", what, v[i].kind,
			      got, v[i].want);
		free(got);
	}
}

#define NVEC(a) (sizeof(a) / sizeof((a)[0]))

static const char singles16[] =
	"[[0],[1],[2],[3],[4],[5],[6],[7],[8],[9],[10],[11],[12],[13],[14],"
	"[15]]";
static const char singles24[] =
	"[[0],[1],[2],[3],[4],[5],[6],[7],[8],[9],[10],[11],[12],[13],[14],"
	"[15],[16],[17],[18],[19],[20],[21],[22],[23]]";

/* ---- order strings ---------------------------------------------------- */

static const char *order_text(const char *s)
{
	static char buf[64];
	struct lay_order o;
	char err[256];

	ck_assert_msg(lay_order_parse(s, &o, err, sizeof(err)) == 0, "%s: %s",
		      s, err);
	ck_assert(lay_order_valid(&o));
	return lay_order_str(&o, buf, sizeof(buf));
}

START_TEST(order_valid)
{
	struct lay_order o;

	ck_assert_str_eq(order_text(SEED), SEED);
	ck_assert_str_eq(order_text(SNAP), SNAP);
	ck_assert_str_eq(order_text("pp-dp-ep-gtp-cp-tp"), "pp-dp-ep-gtp-cp-tp");
	ck_assert_int_eq(lay_order_parse(SEED, &o, NULL, 0), 0);
	ck_assert_int_eq(o.axis[0], LAY_TP);
	ck_assert_int_eq(o.axis[2], LAY_GTP);
	ck_assert_int_eq(o.axis[5], LAY_PP);
	ck_assert_uint_eq(o.given, (1u << LAY_NAXES) - 1);
}
END_TEST

START_TEST(order_aliases)
{
	ck_assert_str_eq(order_text("tp-cp-gtp_remat-ep-dp-pp"), SEED);
	ck_assert_str_eq(order_text("tp-gtp_remat-cp-ep-dp-pp"), SNAP);
	/* Megatron lower-cases the order before reading it. */
	ck_assert_str_eq(order_text("TP-CP-GTP_REMAT-EP-DP-PP"), SEED);
}
END_TEST

START_TEST(order_appends_missing)
{
	struct lay_order o;

	ck_assert_str_eq(order_text("tp-gtp"), "tp-gtp-cp-ep-dp-pp");
	ck_assert_str_eq(order_text("gtp"), "gtp-tp-cp-ep-dp-pp");
	ck_assert_str_eq(order_text("tp-cp-gtp-dp-pp"), "tp-cp-gtp-dp-pp-ep");
	ck_assert_str_eq(order_text("tp-cp-gtp-ep-pp-dp"), "tp-cp-gtp-ep-pp-dp");
	ck_assert_int_eq(lay_order_parse("tp-gtp-dp", &o, NULL, 0), 0);
	ck_assert_uint_eq(o.given, (1u << LAY_TP) | (1u << LAY_GTP) |
					   (1u << LAY_DP));
}
END_TEST

static void expect_parse_error(const char *s, const char *words)
{
	struct lay_order o, before;
	char err[256] = "";

	memset(&o, 0x5a, sizeof(o));
	before = o;
	ck_assert_msg(lay_order_parse(s, &o, err, sizeof(err)) == -1,
		      "\"%s\" was accepted", s ? s : "(null)");
	ck_assert_msg(strstr(err, words) != NULL, "\"%s\": reason \"%s\" "
		      "lacks \"%s\"", s ? s : "(null)", err, words);
	ck_assert_msg(memcmp(&o, &before, sizeof(o)) == 0,
		      "a failed parse changed the order");
}

START_TEST(order_errors)
{
	char small[8];
	struct lay_order o;
	char long_tok[200];

	expect_parse_error("", "empty");
	expect_parse_error(NULL, "empty");
	expect_parse_error("tp--gtp", "empty token");
	expect_parse_error("tp-gtp-", "empty token");
	expect_parse_error("-tp-gtp", "empty token");
	expect_parse_error("tp-cp-ep-dp-pp", "no gtp");
	expect_parse_error("tp-gtp-tp", "\"tp\" appears twice");
	expect_parse_error("tp-gtp-gtp_remat", "gtp_remat is another name");
	expect_parse_error("tp-gtp-xp", "unknown token \"xp\"");
	expect_parse_error("tp-gtp-dp ", "unknown token \"dp \"");
	expect_parse_error("tp_gtp", "unknown token");
	/* A long junk token is cut in the message. */
	memset(long_tok, 'x', sizeof(long_tok) - 1);
	long_tok[sizeof(long_tok) - 1] = '\0';
	expect_parse_error(long_tok, "xxx...\"");
	/* A short error buffer is truncated, never overrun. */
	ck_assert_int_eq(lay_order_parse("zz-gtp", &o, small, sizeof(small)),
			 -1);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

START_TEST(order_expert)
{
	struct lay_order o, e;
	char buf[64];

	ck_assert_int_eq(lay_order_parse(SEED, &o, NULL, 0), 0);
	lay_order_expert(&o, &e);
	ck_assert_str_eq(lay_order_str(&e, buf, sizeof(buf)),
			 "tp-cp-ep-gtp-dp-pp");
	ck_assert_int_eq(lay_order_parse(SNAP, &o, NULL, 0), 0);
	lay_order_expert(&o, &e);
	ck_assert_str_eq(lay_order_str(&e, buf, sizeof(buf)),
			 "tp-cp-ep-gtp-dp-pp");
	ck_assert_int_eq(lay_order_parse("tp-cp-gtp-ep-pp-dp", &o, NULL, 0), 0);
	lay_order_expert(&o, &e);
	ck_assert_str_eq(lay_order_str(&e, buf, sizeof(buf)),
			 "tp-cp-ep-gtp-pp-dp");
	ck_assert_int_eq(lay_order_parse("ep-gtp-tp", &o, NULL, 0), 0);
	lay_order_expert(&o, &e);
	ck_assert_str_eq(lay_order_str(&e, buf, sizeof(buf)),
			 "ep-gtp-tp-cp-dp-pp");
	memset(&o, 0, sizeof(o));
	ck_assert(!lay_order_valid(&o));
}
END_TEST

/* ---- rank <-> coordinates --------------------------------------------- */

START_TEST(coords_round_trip)
{
	static const char *orders[] = { SEED, SNAP, "pp-dp-ep-gtp-cp-tp",
					"dp-tp-gtp" };
	static const long long sizes[][LAY_NAXES] = {
		{ 4, 1, 3, 1, 2, 1 }, { 2, 2, 2, 1, 2, 2 },
		{ 3, 2, 5, 2, 1, 2 }, { 1, 1, 1, 1, 1, 1 },
		{ 2, 3, 2, 1, 2, 2 },
	};
	size_t i, j;

	for (i = 0; i < NVEC(orders); i++) {
		for (j = 0; j < NVEC(sizes); j++) {
			const long long *s = sizes[j];
			struct lay_grid g;
			long long r, c[LAY_NAXES], n[LAY_NAXES], bad;

			make_grid(&g, orders[i], s[0], s[1], s[2], s[3], s[4],
				  s[5]);
			ck_assert_int_eq(g.world, s[0] * s[1] * s[2] * s[3] *
							  s[4] * s[5]);
			lay_coords(&g, 0, n);
			for (r = 0, bad = 0; r < g.world; r++) {
				int a;

				lay_coords(&g, r, c);
				for (a = 0; a < LAY_NAXES; a++)
					bad += c[a] < 0 || c[a] >= g.size[a] ||
					       n[a] != c[a]; /* the odometer */
				bad += lay_rank(&g, c) != r;
				lay_coords_next(&g, n);
			}
			/* past the last rank: rank 0 again */
			bad += lay_rank(&g, n) != 0;
			ck_assert_msg(bad == 0, "%s: %lld bad ranks",
				      orders[i], bad);
		}
	}
}
END_TEST

START_TEST(coords_formula)
{
	struct lay_grid g;
	long long c[LAY_NAXES], r, bad = 0;

	/* rank = t + TP*(c + CP*(g + G*(d + D*p))), TP 2 CP 3 G 2 D 2. */
	make_grid(&g, SEED, 2, 3, 2, 1, 2, 2);
	for (r = 0; r < g.world; r++) {
		lay_coords(&g, r, c);
		bad += c[LAY_TP] + 2 * (c[LAY_CP] + 3 * (c[LAY_GTP] + 2 *
			(c[LAY_DP] + 2 * c[LAY_PP]))) != r;
		bad += c[LAY_TP] != r % 2 || c[LAY_CP] != (r / 2) % 3 ||
		       c[LAY_EP] != 0;
	}
	/* Snapshot: rank = t + TP*(g + G*(c + CP*(d + D*p))). */
	make_grid(&g, SNAP, 2, 3, 2, 1, 2, 2);
	for (r = 0; r < g.world; r++) {
		lay_coords(&g, r, c);
		bad += c[LAY_TP] + 2 * (c[LAY_GTP] + 2 * (c[LAY_CP] + 3 *
			(c[LAY_DP] + 2 * c[LAY_PP]))) != r;
		bad += c[LAY_GTP] != (r / 2) % 2 || c[LAY_CP] != (r / 4) % 3;
	}
	ck_assert_int_eq(bad, 0);
}
END_TEST

/* ---- worked vectors (notes section 6 and 1.7) ------------------------- */

static const struct vec v61[] = {
	{ "tp", "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15],"
		"[16,17,18,19],[20,21,22,23]]" },
	{ "gtp", GTP_6_1 },
	{ "dp_replicate", "[[0,12],[1,13],[2,14],[3,15],[4,16],[5,17],[6,18],"
			  "[7,19],[8,20],[9,21],[10,22],[11,23]]" },
	{ "dp", "[[0,4,8,12,16,20],[1,5,9,13,17,21],[2,6,10,14,18,22],"
		"[3,7,11,15,19,23]]" },
	{ "dp_cp", "[[0,4,8,12,16,20],[1,5,9,13,17,21],[2,6,10,14,18,22],"
		   "[3,7,11,15,19,23]]" },
	{ "dp_cp_replicate", "[[0,12],[1,13],[2,14],[3,15],[4,16],[5,17],"
			     "[6,18],[7,19],[8,20],[9,21],[10,22],[11,23]]" },
	{ "cp", singles24 },
	{ "pp", singles24 },
	{ "mp_gtp", "[[0,1,2,3,4,5,6,7,8,9,10,11],"
		    "[12,13,14,15,16,17,18,19,20,21,22,23]]" },
	{ "mp", "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15],"
		"[16,17,18,19],[20,21,22,23]]" },
};

START_TEST(vector_6_1)
{
	static const char *orders[] = { SEED, SNAP };
	size_t i;

	for (i = 0; i < 2; i++) {
		struct lay_grid g;
		long long r;

		make_grid(&g, orders[i], 4, 1, 3, 1, 2, 1);
		ck_assert_int_eq(g.world, 24);
		expect_groups(&g, v61, NVEC(v61), orders[i]);
		/* The per-rank table: DP rank d, lane g + 3d, GTP rank g. */
		for (r = 0; r < 24; r++) {
			long long gg = (r / 4) % 3, d = r / 12, idx, rig;

			lay_group_of(&g, kind_axes("dp_replicate"), r, &idx, &rig);
			ck_assert_int_eq(rig, d);
			lay_group_of(&g, kind_axes("dp"), r, &idx, &rig);
			ck_assert_int_eq(rig, gg + 3 * d);
			lay_group_of(&g, kind_axes("gtp"), r, &idx, &rig);
			ck_assert_int_eq(rig, gg);
		}
	}
}
END_TEST

static const struct vec v62a[] = {
	{ "tp", "[[0,1],[2,3],[4,5],[6,7],[8,9],[10,11],[12,13],[14,15]]" },
	{ "cp", "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]" },
	{ "gtp", "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],[11,15]]" },
	{ "dp_replicate", singles16 },
	{ "dp", "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],[11,15]]" },
	{ "dp_cp_replicate",
	  "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]" },
	{ "dp_cp", "[[0,2,4,6],[1,3,5,7],[8,10,12,14],[9,11,13,15]]" },
	{ "pp", "[[0,8],[1,9],[2,10],[3,11],[4,12],[5,13],[6,14],[7,15]]" },
	{ "mp_gtp", "[[0,1,4,5,8,9,12,13],[2,3,6,7,10,11,14,15]]" },
	{ "mp", "[[0,1,8,9],[2,3,10,11],[4,5,12,13],[6,7,14,15]]" },
};

START_TEST(vector_6_2a)
{
	struct lay_grid g;
	long long idx, rig;

	make_grid(&g, SEED, 2, 2, 2, 1, 1, 2);
	expect_groups(&g, v62a, NVEC(v62a), "6.2a");
	/* r6 = (t0,c1,g1,p0): lane 1, dp_cp_replicate 1, dp_cp 3. */
	lay_group_of(&g, kind_axes("dp"), 6, &idx, &rig);
	ck_assert_int_eq(rig, 1);
	lay_group_of(&g, kind_axes("dp_cp_replicate"), 6, &idx, &rig);
	ck_assert_int_eq(rig, 1);
	lay_group_of(&g, kind_axes("dp_cp"), 6, &idx, &rig);
	ck_assert_int_eq(rig, 3);
	lay_group_of(&g, kind_axes("dp_replicate"), 6, &idx, &rig);
	ck_assert_int_eq(rig, 0);
}
END_TEST

static const struct vec v62b[] = {
	{ "tp", "[[0,1],[2,3],[4,5],[6,7],[8,9],[10,11],[12,13],[14,15]]" },
	{ "gtp", "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]" },
	{ "cp", "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],[11,15]]" },
	{ "dp_replicate", singles16 },
	{ "dp", "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]" },
	{ "dp_cp", "[[0,2,4,6],[1,3,5,7],[8,10,12,14],[9,11,13,15]]" },
	{ "pp", "[[0,8],[1,9],[2,10],[3,11],[4,12],[5,13],[6,14],[7,15]]" },
	{ "mp_gtp", "[[0,1,2,3,8,9,10,11],[4,5,6,7,12,13,14,15]]" },
};

START_TEST(vector_6_2b)
{
	struct lay_grid g;
	long long r, idx, rig;

	make_grid(&g, SNAP, 2, 2, 2, 1, 1, 2);
	expect_groups(&g, v62b, NVEC(v62b), "6.2b");
	/* Same dp_cp sets as 6.2a, but the group rank is g + 2c. */
	for (r = 0; r < 16; r++) {
		long long gg = (r / 2) % 2, c = (r / 4) % 2;

		lay_group_of(&g, kind_axes("dp_cp"), r, &idx, &rig);
		ck_assert_int_eq(rig, gg + 2 * c);
	}
}
END_TEST

static const struct vec v63_seed[] = {
	{ "tp", "[[0,1],[2,3],[4,5],[6,7],[8,9],[10,11],[12,13],[14,15],"
		"[16,17],[18,19],[20,21],[22,23],[24,25],[26,27],[28,29],"
		"[30,31]]" },
	{ "cp", "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15],"
		"[16,18],[17,19],[20,22],[21,23],[24,26],[25,27],[28,30],"
		"[29,31]]" },
	{ "gtp", "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],[11,15],"
		 "[16,20],[17,21],[18,22],[19,23],[24,28],[25,29],[26,30],"
		 "[27,31]]" },
	{ "dp_replicate", "[[0,8],[1,9],[2,10],[3,11],[4,12],[5,13],[6,14],"
			  "[7,15],[16,24],[17,25],[18,26],[19,27],[20,28],"
			  "[21,29],[22,30],[23,31]]" },
	{ "dp", "[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15],"
		"[16,20,24,28],[17,21,25,29],[18,22,26,30],[19,23,27,31]]" },
	{ "dp_cp_replicate", "[[0,2,8,10],[1,3,9,11],[4,6,12,14],[5,7,13,15],"
			     "[16,18,24,26],[17,19,25,27],[20,22,28,30],"
			     "[21,23,29,31]]" },
	{ "dp_cp", "[[0,2,4,6,8,10,12,14],[1,3,5,7,9,11,13,15],"
		   "[16,18,20,22,24,26,28,30],[17,19,21,23,25,27,29,31]]" },
	{ "pp", "[[0,16],[1,17],[2,18],[3,19],[4,20],[5,21],[6,22],[7,23],"
		"[8,24],[9,25],[10,26],[11,27],[12,28],[13,29],[14,30],"
		"[15,31]]" },
	{ "mp_gtp", "[[0,1,4,5,16,17,20,21],[2,3,6,7,18,19,22,23],"
		    "[8,9,12,13,24,25,28,29],[10,11,14,15,26,27,30,31]]" },
};

/* 6.3 under the snapshot order, rank = t + 2g + 4c + 8d + 16p. */
static const struct vec v63_snap[] = {
	{ "cp", "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],[11,15],"
		"[16,20],[17,21],[18,22],[19,23],[24,28],[25,29],[26,30],"
		"[27,31]]" },
	{ "gtp", "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15],"
		 "[16,18],[17,19],[20,22],[21,23],[24,26],[25,27],[28,30],"
		 "[29,31]]" },
	{ "dp", "[[0,2,8,10],[1,3,9,11],[4,6,12,14],[5,7,13,15],"
		"[16,18,24,26],[17,19,25,27],[20,22,28,30],[21,23,29,31]]" },
	{ "dp_cp_replicate", "[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15],"
			     "[16,20,24,28],[17,21,25,29],[18,22,26,30],"
			     "[19,23,27,31]]" },
	{ "dp_cp", "[[0,2,4,6,8,10,12,14],[1,3,5,7,9,11,13,15],"
		   "[16,18,20,22,24,26,28,30],[17,19,21,23,25,27,29,31]]" },
	{ "mp_gtp", "[[0,1,2,3,16,17,18,19],[4,5,6,7,20,21,22,23],"
		    "[8,9,10,11,24,25,26,27],[12,13,14,15,28,29,30,31]]" },
};

START_TEST(vector_6_3)
{
	struct lay_grid g;
	long long idx, rig;

	make_grid(&g, SEED, 2, 2, 2, 1, 2, 2);
	expect_groups(&g, v63_seed, NVEC(v63_seed), "6.3 seed");
	/* r12 = (t0,c0,g1,d1): lane 3, dp_cp 6; r14: lane 3, dp_cp 7. */
	lay_group_of(&g, kind_axes("dp"), 12, &idx, &rig);
	ck_assert_int_eq(rig, 3);
	lay_group_of(&g, kind_axes("dp_cp"), 12, &idx, &rig);
	ck_assert_int_eq(rig, 6);
	lay_group_of(&g, kind_axes("dp"), 14, &idx, &rig);
	ck_assert_int_eq(rig, 3);
	lay_group_of(&g, kind_axes("dp_cp"), 14, &idx, &rig);
	ck_assert_int_eq(rig, 7);

	make_grid(&g, SNAP, 2, 2, 2, 1, 2, 2);
	expect_groups(&g, v63_snap, NVEC(v63_snap), "6.3 snapshot");
	/* Lanes are still g + G*d; dp_cp rank is g + 2(c + 2d). */
	lay_group_of(&g, kind_axes("dp"), 10, &idx, &rig); /* t0 g1 c0 d1 */
	ck_assert_int_eq(rig, 3);
	lay_group_of(&g, kind_axes("dp_cp"), 14, &idx, &rig); /* g1 c1 d1 */
	ck_assert_int_eq(rig, 7);
}
END_TEST

static const struct vec v17[] = {
	{ "ep", "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]" },
	{ "egtp", "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],[11,15]]" },
	{ "edp", "[[0,8],[1,9],[2,10],[3,11],[4,12],[5,13],[6,14],[7,15]]" },
	{ "edp_gtp", "[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]]" },
	{ "etp", singles16 },
};

START_TEST(vector_expert_1_7)
{
	static const char *orders[] = { SEED, SNAP };
	size_t i;

	/* W=16, ETP=1, EP=4, EG=2, PP=1, so EDP=2. */
	for (i = 0; i < 2; i++) {
		struct lay_order o, e;
		struct lay_grid g;
		long long size[LAY_NAXES] = { 0 };
		unsigned tp_ep_gtp_pp = (1u << LAY_TP) | (1u << LAY_EP) |
					(1u << LAY_GTP) | (1u << LAY_PP);
		char *got;

		ck_assert_int_eq(lay_order_parse(orders[i], &o, NULL, 0), 0);
		lay_order_expert(&o, &e);
		size[LAY_TP] = 1, size[LAY_CP] = 1, size[LAY_EP] = 4;
		size[LAY_GTP] = 2, size[LAY_DP] = 2, size[LAY_PP] = 1;
		lay_grid_init(&g, &e, size);
		ck_assert(lay_group_kind_find("ep")->expert);
		expect_groups(&g, v17, NVEC(v17), orders[i]);
		got = groups_str(&g, tp_ep_gtp_pp);
		ck_assert_str_eq(got, "[[0,1,2,3,4,5,6,7],"
				      "[8,9,10,11,12,13,14,15]]");
		free(got);
	}
}
END_TEST

/* ---- group kinds and consistency -------------------------------------- */

START_TEST(group_kinds_table)
{
	static const char *names[] = {
		"tp", "cp", "gtp", "pp", "dp_replicate", "dp", "dp_cp",
		"dp_cp_replicate", "mp", "mp_gtp", "ep", "etp", "egtp", "edp",
		"edp_gtp",
	};
	size_t i;

	ck_assert_uint_eq(lay_group_kind_count(), NVEC(names));
	for (i = 0; i < NVEC(names); i++) {
		const struct lay_group_kind *k = lay_group_kind_at(i);

		ck_assert_str_eq(k->name, names[i]);
		ck_assert_ptr_eq(lay_group_kind_find(names[i]), k);
		ck_assert_int_eq(k->expert, i >= 10);
		ck_assert(k->meaning && *k->meaning);
	}
	ck_assert_ptr_null(lay_group_kind_at(NVEC(names)));
	ck_assert_ptr_null(lay_group_kind_find("dp_lane"));
	ck_assert_uint_eq(kind_axes("dp_cp"), (1u << LAY_GTP) |
						     (1u << LAY_DP) |
						     (1u << LAY_CP));
	ck_assert_uint_eq(kind_axes("mp_gtp"), (1u << LAY_TP) |
						      (1u << LAY_GTP) |
						      (1u << LAY_PP));
}
END_TEST

/* For every axis subset: each rank is member(index_of(r), rank_in_group),
 * groups are ascending, and the groups of a kind partition the world.
 * Check's assertions are slow (each one reports a location), so the loops
 * only count and the verdict is one assertion per grid. */
static void check_consistency(const struct lay_grid *g, const char *what)
{
	unsigned axes, bad_axes = 0;
	unsigned char *seen = calloc((size_t)g->world, 1);
	long long bad = 0, bad_rank = -1;

	ck_assert_ptr_nonnull(seen);
	for (axes = 0; axes < (1u << LAY_NAXES); axes++) {
		long long n = lay_group_count(g, axes);
		long long size = lay_group_size(g, axes), r, i, j, prev;
		long long before = bad;

		bad += n * size != g->world;
		memset(seen, 0, (size_t)g->world);
		for (r = 0; r < g->world; r++) {
			long long idx, rig, c[LAY_NAXES], idx2, rig2;

			lay_group_of(g, axes, r, &idx, &rig);
			lay_coords(g, r, c);
			lay_group_of_coords(g, axes, c, &idx2, &rig2);
			if (idx < 0 || idx >= n || rig < 0 || rig >= size ||
			    lay_group_member(g, axes, idx, rig) != r ||
			    idx2 != idx || rig2 != rig) {
				bad++;
				bad_rank = r;
			}
		}
		for (i = 0; i < n; i++) {
			for (j = 0, prev = -1; j < size; j++) {
				long long m = lay_group_member(g, axes, i, j);

				if (m <= prev || m >= g->world || seen[m])
					bad++;
				else
					seen[m] = 1;
				prev = m;
			}
		}
		if (bad != before)
			bad_axes = axes;
	}
	free(seen);
	ck_assert_msg(bad == 0, "%s: %lld inconsistencies (axes 0x%x, rank %lld)",
		      what, bad, bad_axes, bad_rank);
}

START_TEST(group_of_consistency)
{
	static const char *orders[] = { SEED, SNAP, "pp-dp-ep-gtp-cp-tp",
					"gtp-dp-tp", "tp-cp-gtp-ep-pp-dp" };
	static const long long sizes[][LAY_NAXES] = {
		{ 4, 1, 3, 1, 2, 1 }, { 2, 2, 2, 1, 2, 2 },
		{ 3, 2, 5, 1, 2, 2 }, { 1, 3, 2, 2, 3, 1 },
		{ 5, 1, 1, 3, 2, 3 }, { 2, 2, 3, 2, 2, 2 },
	};
	size_t i, j;

	for (i = 0; i < NVEC(orders); i++) {
		for (j = 0; j < NVEC(sizes); j++) {
			const long long *s = sizes[j];
			struct lay_grid g;

			make_grid(&g, orders[i], s[0], s[1], s[2], s[3], s[4],
				  s[5]);
			check_consistency(&g, orders[i]);
		}
	}
}
END_TEST

/* ---- suite ------------------------------------------------------------ */

int main(void)
{
	const struct test_case cases[] = {
		{ "order_valid", order_valid },
		{ "order_aliases", order_aliases },
		{ "order_appends_missing", order_appends_missing },
		{ "order_errors", order_errors },
		{ "order_expert", order_expert },
		{ "coords_round_trip", coords_round_trip },
		{ "coords_formula", coords_formula },
		{ "vector_6_1", vector_6_1 },
		{ "vector_6_2a", vector_6_2a },
		{ "vector_6_2b", vector_6_2b },
		{ "vector_6_3", vector_6_3 },
		{ "vector_expert_1_7", vector_expert_1_7 },
		{ "group_kinds_table", group_kinds_table },
		{ "group_of_consistency", group_of_consistency },
	};

	return RUN_CASES("layout", cases, 0);
}
