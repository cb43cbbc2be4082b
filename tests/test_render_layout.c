/*
 * render's layout of the grid: large worlds as one box per node (past
 * 256 ranks, or the detail limit an option sets), at most 256 nodes
 * drawn; NVLink segments nested with the nodes, or named where they do
 * not nest, from the option or the config; the text grid by coordinate.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "render_fixture.h"
#include "harness.h"

/* ---- large worlds: one box per node ------------------------------------- */

START_TEST(summary_above_256_ranks)
{
	struct fx f;
	struct render_opts o;
	char *dot;

	build(&f, 8, 32, 1, 2, 40, 8, NULL, NULL); /* 320 ranks */
	opts(&o, &f, RENDER_DOT, NULL, NULL);
	dot = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(dot, "320 ranks: one box per node"));
	ck_assert_ptr_null(strstr(dot, "\tr0\t"));
	ck_assert_ptr_nonnull(strstr(dot, "\tn39\t"));
	ck_assert_ptr_null(strstr(dot, "\tn40\t"));
	/* node 5: ranks 40-47, lane 5; TP stays inside, GTP, PP and lanes
	 * leave it */
	ck_assert_ptr_nonnull(strstr(dot, "<B>node 5</B><BR/>ranks 40-47<BR/>"
				     "lane 5<BR/>t 0-7 · c 0 · g 1<BR/>d 1 · p 0"));
	ck_assert_ptr_nonnull(strstr(dot, "tp 0 · cp 0 · gtp 8 · pp 8 · dp 8"));
	ck_assert_ptr_nonnull(strstr(dot, "lane of each node's first GPU"));
	free(dot);
	/* the legend names at most 32 values */
	o.color = RENDER_BY_NODE;
	dot = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(dot, "and 8 more values"));
	ck_assert_ptr_nonnull(strstr(dot, ">node 31</TD>"));
	ck_assert_ptr_null(strstr(dot, ">node 32</TD>"));
	free(dot);
	/* the detail limit is an option */
	release(&f);
	load(&f, GOLDEN "tp4-g3-24gpu.yaml", NULL);
	opts(&o, &f, RENDER_DOT, NULL, NULL);
	o.max_ranks = 16;
	dot = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(dot, "24 ranks: one box per node"));
	ck_assert_ptr_nonnull(strstr(dot, "lanes 0-1 (2)"));
	free(dot);
	release(&f);
}
END_TEST

START_TEST(summary_draws_at_most_256_nodes)
{
	struct fx f;
	struct render_opts o;
	char *dot, *txt;

	build(&f, 1, 1, 1, 1, 300, 1, NULL, "train");
	opts(&o, &f, RENDER_DOT, NULL, "train");
	dot = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(dot, "\tn254\t"));
	ck_assert_ptr_null(strstr(dot, "\tn255\t"));
	ck_assert_ptr_nonnull(strstr(dot, "45 more nodes<BR/>(ranks 255-299)"));
	ck_assert_ptr_nonnull(strstr(dot, "the first 255 of 300 nodes"));
	ck_assert_ptr_nonnull(strstr(dot, "called 1"));
	free(dot);
	/* the text grid: one row per node, elided the same way */
	opts(&o, &f, RENDER_TEXT, NULL, NULL);
	txt = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(txt, "node 254  254\n"));
	ck_assert_ptr_nonnull(strstr(txt, "... 45 more nodes (ranks 255-299)\n"));
	free(txt);
	release(&f);
}
END_TEST

/* ---- NVLink segments ------------------------------------------------------- */

START_TEST(segments_nest_with_nodes)
{
	struct fx f;
	struct render_opts o;
	char *dot;

	load(&f, GOLDEN "tp4-g3-24gpu.yaml", NULL);
	opts(&o, &f, RENDER_DOT, NULL, NULL);
	o.segment_size = 16; /* cluster.segment_size: 2 nodes */
	dot = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(dot, "subgraph cluster_s1 {"));
	ck_assert_ptr_nonnull(strstr(dot, "NVLink segment 0 (nodes 0-1)"));
	ck_assert_ptr_nonnull(strstr(dot, "NVLink segments of 2 nodes"));
	ck_assert_ptr_null(strstr(dot, "cluster_s2"));
	free(dot);
	o.segment_size = 4; /* NVLink domains of 4 GPUs inside each node */
	dot = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(dot, "subgraph cluster_n2_s1 {"));
	ck_assert_ptr_nonnull(strstr(dot, "NVLink domains of 4 GPUs"));
	free(dot);
	o.segment_size = 12; /* does not nest: named, not drawn */
	dot = render_ok(&o, &f);
	ck_assert_ptr_null(strstr(dot, "NVLink segment 0"));
	ck_assert_ptr_nonnull(strstr(dot, "12 GPUs not drawn"));
	free(dot);
	o.segment_size = 8; /* one node: nothing to add */
	dot = render_ok(&o, &f);
	ck_assert_ptr_null(strstr(dot, "NVLink"));
	free(dot);
	release(&f);
}
END_TEST

START_TEST(segment_size_from_the_config)
{
	struct fx f;
	struct render_opts o;
	char *txt;

	build(&f, 4, 16, 1, 1, 4, 8, "  segment_size: 2\n", NULL);
	opts(&o, &f, RENDER_TEXT, NULL, NULL);
	ck_assert_int_eq(o.segment_size, 16);
	txt = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(txt, "-- NVLink segment 1\nnode 2"));
	free(txt);
	release(&f);
}
END_TEST

/* ---- text ------------------------------------------------------------------- */

START_TEST(text_grid_by_coordinate)
{
	struct fx f;
	struct render_opts o;
	char *txt;

	build(&f, 2, 4, 2, 2, 2, 8, NULL, NULL); /* TP 2 G 2 CP 2 PP 2 */
	opts(&o, &f, RENDER_TEXT, NULL, NULL);
	o.color = RENDER_BY_PP;
	txt = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(txt, "cell: pp (the pipeline stage)\n"));
	ck_assert_ptr_nonnull(strstr(txt, "node 0  0 0 0 0 0 0 0 0\n"
				     "node 1  1 1 1 1 1 1 1 1\n"));
	free(txt);
	o.color = RENDER_BY_CP;
	txt = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(txt, "node 0  0 0 1 1 0 0 1 1\n"));
	free(txt);
	o.color = RENDER_BY_GTP;
	txt = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(txt, "node 0  0 0 0 0 1 1 1 1\n"));
	free(txt);
	release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "summary", summary_above_256_ranks },
		{ "summary_cap", summary_draws_at_most_256_nodes },
		{ "segments", segments_nest_with_nodes },
		{ "segment_cfg", segment_size_from_the_config },
		{ "text", text_grid_by_coordinate },
	};

	return RUN_CASES("render_layout", cases, 60);
}
