/*
 * render at scale: a fill of its own for every lane past the palette (32
 * lanes), --nodes A-B (which nodes are drawn, in detail or as a summary,
 * and the error with its hint past the plan's nodes), group kinds with no
 * links to draw, the legend's box holding its text by the conservative
 * width estimate (in Graphviz's SVG), and "stuck at" in one span.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_fixture.h"
#include "render_int.h"
#include "harness.h"

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* The distinct values of attribute `attr` ("fillcolor=\"") in s. */
static size_t distinct(const char *s, const char *attr)
{
	char seen[256][16];
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, attr)); p += strlen(attr)) {
		const char *v = p + strlen(attr);
		size_t len = strcspn(v, "\""), i;

		ck_assert_uint_lt(len, sizeof(seen[0]));
		for (i = 0; i < n; i++)
			if (strlen(seen[i]) == len && !strncmp(seen[i], v, len))
				break;
		if (i == n) {
			ck_assert_uint_lt(n, 256);
			memcpy(seen[n], v, len);
			seen[n++][len] = '\0';
		}
	}
	return n;
}

/* The fill of rank r's box in the DOT into buf (16 bytes). */
static void box_fill(const char *dot, int r, char *buf)
{
	char want[32];
	const char *p, *end, *f;

	snprintf(want, sizeof(want), "\tr%d\t[", r);
	p = strstr(dot, want);
	ck_assert_msg(p != NULL, "no box for rank %d", r);
	end = strstr(p, "];");
	f = strstr(p, "fillcolor=\"");
	ck_assert(end && f && f < end);
	f += 11;
	snprintf(buf, 16, "%.*s", (int)strcspn(f, "\""), f);
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- colours --------------------------------------------------------------- */

/* 32 lanes (D 32 of TP 1 on 4 nodes): 32 fills on the boxes, 32 in the
 * legend. */
START_TEST(lanes_get_their_own_fill)
{
	struct fx f;
	struct render_opts o;
	char *dot, err[512], fills[32][16];

	build(&f, 1, 1, 0, 0, 4, 8, NULL, NULL);
	ck_assert_int_eq(f.plan.lanes, 32);
	opts(&o, &f, RENDER_DOT, NULL, NULL);
	dot = draw(&o, &f, NULL, 0, err, sizeof(err));
	for (int r = 0; r < 32; r++) {
		box_fill(dot, r, fills[r]);
		for (int q = 0; q < r; q++)
			ck_assert_msg(strcmp(fills[q], fills[r]) != 0,
				      "lanes of ranks %d and %d share %s", q, r,
				      fills[r]);
	}
	ck_assert_uint_eq(distinct(dot, "BGCOLOR=\"#"), 32);
	ck_assert_ptr_null(strstr(dot, "gradientangle"));
	free(dot);
	release(&f);
}
END_TEST

/* Every value below RENDER_DISTINCT_FILLS has its own colour. */
START_TEST(fills_distinct_for_every_value)
{
	struct render_ctx x;
	char (*v)[8] = calloc(RENDER_DISTINCT_FILLS, sizeof(*v));
	char **sorted = calloc(RENDER_DISTINCT_FILLS, sizeof(*sorted));

	ck_assert(v && sorted);
	memset(&x, 0, sizeof(x));
	x.color = RENDER_BY_LANE;
	for (long long i = 0; i < RENDER_DISTINCT_FILLS; i++) {
		render_fill(&x, i, v[i]);
		ck_assert_uint_eq(strlen(v[i]), 7);
		sorted[i] = v[i];
	}
	qsort(sorted, RENDER_DISTINCT_FILLS, sizeof(*sorted), strcmp_ptr);
	for (size_t i = 1; i < RENDER_DISTINCT_FILLS; i++)
		ck_assert_msg(strcmp(sorted[i - 1], sorted[i]) != 0,
			      "%s twice", sorted[i]);
	free(sorted);
	free(v);
}
END_TEST

/* ---- --nodes ----------------------------------------------------------------- */

START_TEST(nodes_parse)
{
	long long a, b;
	char err[256];

	ck_assert_int_eq(render_nodes_parse("1-2", &a, &b, err, sizeof(err)), 0);
	ck_assert(a == 1 && b == 2);
	ck_assert_int_eq(render_nodes_parse("7", &a, &b, err, sizeof(err)), 0);
	ck_assert(a == 7 && b == 7);
	static const char *const bad[] = { "2-1", "a", "1-", "-1", "1-2x", "",
					   "1--2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ck_assert_int_eq(render_nodes_parse(bad[i], &a, &b, err,
						    sizeof(err)), -1);
		ck_assert_ptr_nonnull(strstr(err, "\nhint: "));
	}
}
END_TEST

/* 4 nodes, nodes 1-2 drawn: ranks 8-23 and their nodes only; links
 * leaving them are not drawn. */
START_TEST(nodes_limit_the_detail)
{
	struct fx f;
	struct render_opts o;
	char *dot, err[512], want[32];

	build(&f, 4, 16, 0, 0, 4, 8, NULL, NULL);
	opts(&o, &f, RENDER_DOT, "gtp", NULL);
	o.node_first = 1;
	o.node_last = 2;
	dot = draw(&o, &f, NULL, 0, err, sizeof(err));
	for (int r = 0; r < 32; r++) {
		snprintf(want, sizeof(want), "\tr%d\t", r);
		ck_assert_msg(!strstr(dot, want) == (r < 8 || r > 23),
			      "rank %d", r);
	}
	ck_assert_ptr_nonnull(strstr(dot, "cluster_n1"));
	ck_assert_ptr_nonnull(strstr(dot, "cluster_n2"));
	ck_assert_ptr_null(strstr(dot, "cluster_n0"));
	ck_assert_ptr_null(strstr(dot, "cluster_n3"));
	ck_assert_ptr_nonnull(strstr(dot, "drawn: nodes 1-2 (ranks 8-23)"));
	/* gtp groups [0 4 8 12], [16 20 24 28], ...: links inside 8-23 */
	ck_assert_ptr_null(strstr(dot, "r4:"));
	ck_assert_ptr_nonnull(strstr(dot, "r8:n -> r12:n"));
	ck_assert_ptr_nonnull(strstr(dot, "r16:n -> r20:n"));
	ck_assert_ptr_null(strstr(dot, "-> r24"));
	free(dot);
	release(&f);
}
END_TEST

/* 64 nodes (512 ranks) are a summary; three of them are few enough for
 * detail; 41 of them are a summary of 41 boxes. */
START_TEST(nodes_choose_summary_or_detail)
{
	struct fx f;
	struct render_opts o;
	char *dot, err[512];

	build(&f, 4, 16, 0, 0, 64, 8, NULL, "train");
	opts(&o, &f, RENDER_DOT, NULL, NULL);
	dot = draw(&o, &f, NULL, 0, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(dot, "\tn63\t"));
	free(dot);
	o.node_first = 10;
	o.node_last = 12;
	dot = draw(&o, &f, NULL, 0, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(dot, "\tr80\t"));
	ck_assert_ptr_nonnull(strstr(dot, "\tr103\t"));
	ck_assert_ptr_null(strstr(dot, "\tr79\t"));
	ck_assert_ptr_null(strstr(dot, "\tr104\t"));
	ck_assert_ptr_null(strstr(dot, "\tn10\t"));
	free(dot);
	o.node_first = 0;
	o.node_last = 40;
	dot = draw(&o, &f, NULL, 0, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(dot, "\tn40\t"));
	ck_assert_ptr_null(strstr(dot, "\tn41\t"));
	ck_assert_ptr_nonnull(strstr(dot, "328 ranks: one box per node"));
	free(dot);
	release(&f);
}
END_TEST

/* Past the plan's nodes: an error naming them, with a hint. */
START_TEST(nodes_past_the_plan)
{
	struct fx f;
	struct render_opts o;
	char *out, err[512];

	build(&f, 4, 12, 0, 0, 3, 8, NULL, "train");
	opts(&o, &f, RENDER_TEXT, NULL, NULL);
	o.node_first = 1;
	o.node_last = 5;
	out = draw(&o, &f, NULL, -1, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(err, "--nodes 1-5: the plan has 3 nodes "
				     "(0-2)"));
	ck_assert_ptr_nonnull(strstr(err, "\nhint: choose nodes between 0 "
				     "and 2"));
	free(out);
	o.node_first = 2;
	o.node_last = 2;
	out = draw(&o, &f, NULL, 0, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(out, "\nnode 2 "));
	ck_assert_ptr_null(strstr(out, "\nnode 1 "));
	free(out);
	release(&f);
}
END_TEST

/* ---- groups with nothing to link ------------------------------------------ */

START_TEST(groups_without_links_are_said)
{
	struct fx f;
	struct render_opts o;
	char *dot, err[512], note[256];

	build(&f, 4, 12, 0, 0, 3, 8, NULL, "train");
	/* PP 1: every pp group is one rank */
	opts(&o, &f, RENDER_DOT, "gtp,pp", NULL);
	ck_assert_uint_eq(render_groups_unlinked(&o, &f.plan, note,
						 sizeof(note)), 1);
	ck_assert_ptr_nonnull(strstr(note, "pp: no link to draw"));
	dot = draw(&o, &f, NULL, 0, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(dot, "lines: gtp groups"));
	ck_assert_ptr_nonnull(strstr(dot, "no links to draw for pp"));
	ck_assert_ptr_nonnull(strstr(dot, "pp groups (dotted line): no links "
				     "to draw"));
	free(dot);
	/* node 2 alone: gtp group [12 16 20] still links 16 and 20 */
	o.node_first = o.node_last = 2;
	ck_assert_uint_eq(render_groups_unlinked(&o, &f.plan, note,
						 sizeof(note)), 1);
	o.groups = 0;
	ck_assert_uint_eq(render_groups_unlinked(&o, &f.plan, note,
						 sizeof(note)), 0);
	ck_assert_str_eq(note, "");
	release(&f);
	/* the per-node summary draws no links at all */
	build(&f, 4, 16, 0, 0, 64, 8, NULL, "train");
	opts(&o, &f, RENDER_DOT, "gtp", NULL);
	ck_assert_uint_eq(render_groups_unlinked(&o, &f.plan, note,
						 sizeof(note)), 1);
	ck_assert_ptr_nonnull(strstr(note, "per-node summary"));
	release(&f);
}
END_TEST

/* ---- Graphviz's SVG: the legend and the stuck ranks ---------------------- */

/* The number at *p (advancing it). */
static double num(const char **p)
{
	char *end;
	double v = strtod(*p, &end);

	*p = end;
	return v;
}

/* The text of an SVG <text> element, entities decoded, into buf. */
static void svg_text(const char *from, const char *to, char *buf, size_t len)
{
	size_t n = 0;

	while (from < to && n + 1 < len) {
		if (*from == '&') {
			const char *semi = strchr(from, ';');

			if (!strncmp(from, "&#", 2))
				buf[n++] = (char)strtol(from + 2, NULL, 10);
			else if (!strncmp(from, "&amp;", 5))
				buf[n++] = '&';
			else if (!strncmp(from, "&lt;", 4))
				buf[n++] = '<';
			else if (!strncmp(from, "&gt;", 4))
				buf[n++] = '>';
			else
				buf[n++] = '"';
			from = semi ? semi + 1 : to;
			continue;
		}
		buf[n++] = *from++;
	}
	buf[n] = '\0';
}

/* The legend's box (its outer rounded border, in grey) holds each
 * of its texts from its x to x + render_text_width(text). SVG coordinates
 * are written with two decimals: 0.01 pt of slack. */
static void check_legend(const char *svg)
{
	const char *g = strstr(svg, "<title>legend</title>"), *end, *p;
	double lo = 1e9, hi = -1e9;
	size_t texts = 0;

	ck_assert_ptr_nonnull(g);
	end = strstr(g, "</g>");
	ck_assert_ptr_nonnull(end);
	p = strstr(g, "stroke=\"#999999\"");
	ck_assert_msg(p && p < end, "no legend border");
	/* a <path d="..."> (rounded) or a <polygon points="..."> */
	if (strstr(p, " d=\"") && strstr(p, " d=\"") < strstr(p, "/>"))
		p = strstr(p, " d=\"") + 4;
	else
		p = strstr(p, "points=\"") + 8;
	for (; *p != '"';) {
		double x;

		while (*p && *p != '"' && !(*p == '-' || *p == '.' ||
					    (*p >= '0' && *p <= '9')))
			p++;
		if (*p == '"')
			break;
		x = num(&p);
		if (*p == ',') {
			p++;
			num(&p);
		}
		if (x < lo)
			lo = x;
		if (x > hi)
			hi = x;
	}
	ck_assert(hi > lo);
	for (p = strstr(g, "<text "); p && p < end; p = strstr(p + 1, "<text ")) {
		const char *gt = strchr(p, '>'), *close = strstr(p, "</text>");
		const char *xs = strstr(p, " x=\""), *fs = strstr(p, "font-size=\"");
		int bold = strstr(p, "font-weight=\"bold\"") &&
			   strstr(p, "font-weight=\"bold\"") < gt;
		char text[512];
		double x, w;

		ck_assert(xs && xs < gt && fs && fs < gt && close);
		ck_assert_ptr_nonnull(strstr(p, "text-anchor=\"start\""));
		xs += 4;
		fs += 11;
		x = num(&xs);
		svg_text(gt + 1, close, text, sizeof(text));
		w = render_text_width(text, num(&fs), bold);
		ck_assert_msg(x >= lo - 0.01 && x + w <= hi + 0.01,
			      "legend text '%s' [%.2f, %.2f] leaves its box "
			      "[%.2f, %.2f]", text, x, x + w, lo, hi);
		texts++;
	}
	ck_assert_uint_ge(texts, 4);
}

/* One picture per test (test_render.c says why). */
START_TEST(legend_holds_its_text)
{
	struct fx f;
	struct render_opts o;
	char *svg, err[512];

	build(&f, 4, 12, 0, 0, 3, 8, NULL, "train");
	opts(&o, &f, RENDER_SVG, "tp,gtp,pp", NULL);
	svg = draw(&o, &f, NULL, 0, err, sizeof(err));
	check_legend(svg);
	free(svg);
	release(&f);
}
END_TEST

/* A call overlay: the legend's two-line row too, and "stuck at op #0:"
 * is one text, not a bold word and a plain one that a wider font would
 * run together. */
START_TEST(stuck_in_one_span)
{
	struct fx f;
	struct render_opts o;
	char *svg, err[512];

	build(&f, 4, 12, 0, 0, 3, 8, "gtplan:\n  driver_layout: 5d\n",
	      "get_logprobs");
	opts(&o, &f, RENDER_SVG, NULL, NULL);
	o.call = "get_logprobs";
	o.color = RENDER_BY_LANE;
	svg = draw(&o, &f, NULL, 0, err, sizeof(err));
	ck_assert_uint_eq(count(svg, ">stuck at op #0:</text>"), 8);
	ck_assert_ptr_null(strstr(svg, "\"> at op"));
	check_legend(svg);
	free(svg);
	release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "lanes_own_fill", lanes_get_their_own_fill },
		{ "fills_distinct", fills_distinct_for_every_value },
		{ "nodes_parse", nodes_parse },
		{ "nodes_detail", nodes_limit_the_detail },
		{ "nodes_summary", nodes_choose_summary_or_detail },
		{ "nodes_past", nodes_past_the_plan },
		{ "unlinked", groups_without_links_are_said },
		{ "legend", legend_holds_its_text },
		{ "stuck_span", stuck_in_one_span },
	};

	return RUN_CASES("render_scale", cases, 120);
}
