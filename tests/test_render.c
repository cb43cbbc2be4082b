/*
 * render: the figures of NeMo-RL PR #4512's review as DOT golden files
 * (TP 2 / G 3 on 6 GPUs, TP 4 / G 3 on 24 GPUs, the 5-D layout's hang as a
 * call overlay), byte for byte; determinism; SVG and PNG through
 * Graphviz; the option parsers and the errors. The overlay's states are
 * test_render_overlay.c's, large worlds, NVLink segments and the text
 * grid test_render_layout.c's; render_fixture.h holds what they share.
 *
 * GTPLAN_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render_fixture.h"
#include "harness.h"

static char *slurp(const char *path)
{
	FILE *in = fopen(path, "rb");
	char *buf;
	long n;

	if (!in)
		return NULL;
	fseek(in, 0, SEEK_END);
	n = ftell(in);
	rewind(in);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, in), (size_t)n);
	buf[n] = 0;
	fclose(in);
	return buf;
}

/* Compares with the golden file byte for byte (or rewrites it). */
static void golden(const char *got, const char *name)
{
	char path[256];
	char *want;

	snprintf(path, sizeof(path), GOLDEN "%s", name);
	if (getenv("GTPLAN_UPDATE_GOLDEN")) {
		FILE *out = fopen(path, "wb");

		ck_assert_ptr_nonnull(out);
		fputs(got, out);
		fclose(out);
		return;
	}
	want = slurp(path);
	ck_assert_msg(want != NULL, "no golden file %s", path);
	if (strcmp(want, got) != 0) {
		size_t i = 0;

		while (want[i] && want[i] == got[i])
			i++;
		ck_abort_msg("%s differs at byte %zu: want \"%.60s\", got "
			     "\"%.60s\"", path, i, want + i, got + i);
	}
	free(want);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* ---- golden files: the figures of NeMo-RL PR #4512's review ------------- */

START_TEST(golden_tp2_g3_6gpu)
{
	struct fx f;
	struct render_opts o;
	char *dot;

	load(&f, GOLDEN "tp2-g3-6gpu.yaml", NULL);
	opts(&o, &f, RENDER_DOT, "gtp,tp", NULL);
	dot = render_ok(&o, &f);
	golden(dot, "tp2-g3-6gpu.dot");
	/* TP 2, G 3: GTP groups {0,2,4} {1,3,5}, TP groups {0,1} {2,3} {4,5} */
	ck_assert_ptr_nonnull(strstr(dot, "tooltip=\"gtp group 0: 0 2 4\""));
	ck_assert_ptr_nonnull(strstr(dot, "tooltip=\"gtp group 1: 1 3 5\""));
	ck_assert_ptr_nonnull(strstr(dot, "tooltip=\"tp group 2: 4 5\""));
	ck_assert_ptr_nonnull(strstr(dot, "t1 c0 g2 d0 p0<BR/>lane 2"));
	ck_assert_uint_eq(count(dot, "subgraph cluster_"), 1);
	free(dot);
	release(&f);
}
END_TEST

START_TEST(golden_tp4_g3_24gpu)
{
	struct fx f;
	struct render_opts o;
	char *dot, *txt;

	load(&f, GOLDEN "tp4-g3-24gpu.yaml", NULL);
	opts(&o, &f, RENDER_DOT, "gtp", NULL);
	dot = render_ok(&o, &f);
	golden(dot, "tp4-g3-24gpu.dot");
	/* TP 4, G 3, D 2: rank = t + 4(g + 3d); GPU (d, g) in lane 3d + g */
	ck_assert_ptr_nonnull(strstr(dot, "tooltip=\"gtp group 4: 12 16 20\""));
	ck_assert_ptr_nonnull(strstr(dot, "<B>13</B><BR/><FONT POINT-SIZE=\"9\">"
				     "node 1 · GPU 5</FONT><BR/>t1 c0 g0 d1 p0"
				     "<BR/>lane 3"));
	ck_assert_uint_eq(count(dot, "subgraph cluster_n"), 3);
	/* 8 groups x 2 links */
	ck_assert_uint_eq(count(dot, "tooltip=\"gtp group"), 16);
	free(dot);
	opts(&o, &f, RENDER_TEXT, "gtp,tp", NULL);
	txt = render_ok(&o, &f);
	golden(txt, "tp4-g3-24gpu.txt");
	ck_assert_ptr_nonnull(strstr(txt, "node 1  2 2 2 2 3 3 3 3\n"));
	free(txt);
	release(&f);
}
END_TEST

START_TEST(golden_5d_hang)
{
	struct fx f;
	struct render_opts o;
	char *dot, *txt;

	load(&f, GOLDEN "tp4-g3-24gpu-5d.yaml", "get_logprobs");
	opts(&o, &f, RENDER_DOT, "gtp", "get_logprobs");
	dot = render_ok(&o, &f);
	golden(dot, "tp4-g3-24gpu-5d-get_logprobs.dot");
	/* only the g = 0 GPUs are called; they wait in the GTP all-gather
	 * (the config names no model, so the model is gtplan-run's, whose
	 * forward starts with the embedding's gather) */
	ck_assert_uint_eq(count(dot, "<I>never called</I>"), 16);
	ck_assert_uint_eq(count(dot, "<B>stuck at op #0:</B><BR/><B>gtp "
				"all-gather</B>"), 8);
	ck_assert_ptr_nonnull(strstr(dot, "8 stuck at op #0: the GTP all-gather"
				     " &quot;embedding&quot;"));
	ck_assert_ptr_nonnull(strstr(dot, "get_logprobs (sharded over "
				     "data_parallel): hang"));
	ck_assert_ptr_nonnull(strstr(dot, "<B>12</B>"));
	ck_assert_ptr_nonnull(strstr(dot, "<B>shard 1</B>"));
	free(dot);
	opts(&o, &f, RENDER_TEXT, NULL, "get_logprobs");
	txt = render_ok(&o, &f);
	golden(txt, "tp4-g3-24gpu-5d-get_logprobs.txt");
	ck_assert_ptr_nonnull(strstr(txt, "node 0  0! 0! 0! 0!  .  .  .  .\n"));
	ck_assert_ptr_nonnull(strstr(txt, "node 1   .  .  .  . 1! 1! 1! 1!\n"));
	free(txt);
	release(&f);
}
END_TEST

/* ---- determinism -------------------------------------------------------- */

START_TEST(dot_is_deterministic)
{
	struct fx f, g;
	struct render_opts o;
	char *a, *b;
	void *noise[64];

	load(&f, GOLDEN "tp4-g3-24gpu.yaml", NULL);
	opts(&o, &f, RENDER_DOT, "gtp,tp,dp", NULL);
	a = render_ok(&o, &f);
	/* a different heap: cluster order must not follow addresses */
	for (int i = 0; i < 64; i++)
		noise[i] = malloc((size_t)(17 * i + 5));
	load(&g, GOLDEN "tp4-g3-24gpu.yaml", NULL);
	opts(&o, &g, RENDER_DOT, "gtp,tp,dp", NULL);
	b = render_ok(&o, &g);
	ck_assert_str_eq(a, b);
	for (int i = 0; i < 64; i++)
		free(noise[i]);
	/* clusters, rows and nodes come in rank order */
	ck_assert(strstr(a, "cluster_n0") < strstr(a, "cluster_n1"));
	ck_assert(strstr(a, "cluster_n1") < strstr(a, "cluster_n2"));
	ck_assert(strstr(a, "\tr8\t") < strstr(a, "\tr9\t"));
	/* no absolute paths, no dates */
	ck_assert_ptr_null(strstr(a, "tests/golden"));
	free(a);
	free(b);
	release(&f);
	release(&g);
}
END_TEST

/* ---- Graphviz's output ------------------------------------------------------ */

/* One picture per test: Graphviz 2.42's pango plugin keeps a pointer to
 * the previous graph's font name, so a second layout in one process reads
 * freed memory (gtplan draws once per run; Check forks each test). */
START_TEST(svg_has_every_rank)
{
	struct fx f;
	struct render_opts o;
	char *svg, err[512] = "";
	size_t n;

	load(&f, GOLDEN "tp4-g3-24gpu-5d.yaml", "get_logprobs");
	opts(&o, &f, RENDER_SVG, "gtp", "get_logprobs");
	svg = draw(&o, &f, &n, 0, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(svg, "<svg"));
	ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
	for (int r = 0; r < 24; r++) {
		char want[32];

		snprintf(want, sizeof(want), "<title>r%d</title>", r);
		ck_assert_msg(strstr(svg, want), "no box for rank %d", r);
	}
	ck_assert_ptr_nonnull(strstr(svg, "never called"));
	ck_assert_ptr_null(strstr(svg, "tests/golden")); /* no paths */
	free(svg);
	release(&f);
}
END_TEST

START_TEST(png_is_a_png)
{
	struct fx f;
	struct render_opts o;
	char *png, err[512] = "";
	size_t n;

	build(&f, 8, 32, 1, 2, 40, 8, "  segment_size: 2\n", "train");
	opts(&o, &f, RENDER_PNG, NULL, "train");
	png = draw(&o, &f, &n, 0, err, sizeof(err));
	ck_assert_uint_gt(n, 1000);
	ck_assert_int_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
	free(png);
	release(&f);
}
END_TEST

/* ---- options and errors ------------------------------------------------------ */

START_TEST(option_parsers)
{
	enum render_format fm;
	enum render_color c;
	uint64_t m;
	char err[256];

	ck_assert_int_eq(render_format_from_path("out/grid.svg", &fm, err,
						 sizeof(err)), 0);
	ck_assert_int_eq(fm, RENDER_SVG);
	ck_assert_int_eq(render_format_from_path("g.gv", &fm, err, sizeof(err)),
			 0);
	ck_assert_int_eq(fm, RENDER_DOT);
	ck_assert_int_eq(render_format_from_path("g.png", &fm, err, sizeof(err)),
			 0);
	ck_assert_int_eq(fm, RENDER_PNG);
	ck_assert_int_eq(render_format_from_path("a.b/grid", &fm, err,
						 sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "--format"));
	ck_assert_int_eq(render_format_parse("pdf", &fm, err, sizeof(err)), -1);
	ck_assert_int_eq(render_color_parse("gtp", &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c, RENDER_BY_GTP);
	ck_assert_int_eq(render_color_parse("always", &c, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "lane"));
	ck_assert_int_eq(render_groups_parse("gtp,tp", &m, err, sizeof(err)), 0);
	ck_assert_uint_eq(m, (1u << 0) | (1u << 2)); /* tp, gtp: kinds 0, 2 */
	ck_assert_int_eq(render_groups_parse("gtp,,tp", &m, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(render_groups_parse("lanes", &m, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "dp_cp"));
	ck_assert_int_eq(render_groups_parse("", &m, err, sizeof(err)), -1);
}
END_TEST

START_TEST(errors)
{
	struct fx f;
	struct render_opts o;
	char err[256] = "";
	char *out;

	load(&f, GOLDEN "tp2-g3-6gpu.yaml", NULL);
	opts(&o, &f, RENDER_DOT, NULL, "no_such_call");
	out = draw(&o, &f, NULL, -1, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(err, "'no_such_call' was not simulated"));
	free(out);
	opts(&o, &f, RENDER_DOT, NULL, NULL);
	o.color = RENDER_BY_CALL;
	out = draw(&o, &f, NULL, -1, err, sizeof(err));
	ck_assert_ptr_nonnull(strstr(err, "--call"));
	free(out);
	/* without a simulation there is nothing to overlay */
	opts(&o, &f, RENDER_TEXT, NULL, "train");
	{
		char *buf = NULL;
		size_t n = 0;
		FILE *m = open_memstream(&buf, &n);

		ck_assert_int_eq(render_run(&o, &f.plan, NULL, m, err,
					    sizeof(err)), -1);
		fclose(m);
		free(buf);
	}
	release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "golden_tp2_g3", golden_tp2_g3_6gpu },
		{ "golden_tp4_g3", golden_tp4_g3_24gpu },
		{ "golden_5d_hang", golden_5d_hang },
		{ "deterministic", dot_is_deterministic },
		{ "svg", svg_has_every_rank },
		{ "png", png_is_a_png },
		{ "options", option_parsers },
		{ "errors", errors },
	};

	return RUN_CASES("render", cases, 60);
}
