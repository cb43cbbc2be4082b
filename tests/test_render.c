/*
 * render: the figures of NeMo-RL PR #4512's review as DOT golden files
 * (TP 2 / G 3 on 6 GPUs, TP 4 / G 3 on 24 GPUs, the 5-D layout's hang as a
 * call overlay), byte
 * for byte; determinism; the per-node summary of large worlds; NVLink
 * segments; the text grid; the overlay's states from match_call_where();
 * SVG and PNG through Graphviz; the option parsers and the errors.
 *
 * GTPLAN_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "match.h"
#include "plan.h"
#include "render.h"
#include "simulate.h"
#include "harness.h"

/* Graphviz 2.42, pango and fontconfig keep caches they never free; LSan
 * would fail every test that lays a graph out. Our own leaks still show:
 * nothing of gtplan or libcgraph is suppressed. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libgvc.so\nleak:libgvplugin_\nleak:libfontconfig.so\n"
	       "leak:libpango\nleak:libglib-2.0.so\nleak:libgobject-2.0.so\n"
	       "leak:libcairo.so\nleak:libharfbuzz.so\nleak:libfreetype.so\n";
}

const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
	return "print_suppressions=0";
}

#define GOLDEN "tests/golden/"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct plan plan;
	struct sim_report rep;
};

static void sim(struct fx *f, const char *only)
{
	ck_assert(f->plan.grid_ok);
	ck_assert_int_eq(sim_run(&f->plan, f->root, only, &f->rep, &f->diags),
			 0);
	ck_assert(f->rep.ran);
}

static void setup(struct fx *f)
{
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	plan_init(&f->plan);
	sim_report_init(&f->rep);
	f->root = NULL;
}

/* A config file as `gtplan render` loads it, simulated (every call, or
 * only `only`). */
static void load(struct fx *f, const char *path, const char *only)
{
	setup(f);
	ck_assert_int_eq(cfg_load(path, &f->srcs, &f->diags, &f->root), 0);
	ck_assert_int_eq(cfg_resolve(f->root, &f->srcs, &f->diags), 0);
	ck_assert_int_eq(plan_build(&f->plan, f->root, path, &f->diags), 0);
	sim(f, only);
}

/* An inline config: TP, shards, CP, PP, nodes x gpus, extra YAML. */
static void build(struct fx *f, int tp, int shards, int cp, int pp,
		  int nodes, int gpus, const char *extra, const char *only)
{
	char buf[2048];
	char *text;

	snprintf(buf, sizeof(buf),
		 "policy:\n"
		 "  train_global_batch_size: %d\n"
		 "  train_micro_batch_size: 1\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "    tensor_model_parallel_size: %d\n"
		 "    tensor_parallel_num_weight_shards: %d\n"
		 "    context_parallel_size: %d\n"
		 "    pipeline_model_parallel_size: %d\n"
		 "cluster:\n"
		 "  num_nodes: %d\n"
		 "  gpus_per_node: %d\n%s",
		 nodes * gpus, tp, shards, cp, pp, nodes, gpus,
		 extra ? extra : "");
	setup(f);
	text = strdup(buf);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(text), &f->srcs,
					&f->diags, &f->root), 0);
	ck_assert_int_eq(plan_build(&f->plan, f->root, "t.yaml", &f->diags), 0);
	sim(f, only);
}

static void release(struct fx *f)
{
	sim_report_release(&f->rep);
	plan_release(&f->plan);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

/* The options `gtplan render` passes: the simulator's program settings
 * and NVLink domain. */
static void opts(struct render_opts *o, const struct fx *f,
		 enum render_format fmt, const char *groups, const char *call)
{
	char err[256];

	render_opts_init(o);
	o->format = fmt;
	o->call = call;
	o->prog = &f->rep.cost.o;
	o->segment_size = f->rep.cost.s.domain;
	if (groups)
		ck_assert_int_eq(render_groups_parse(groups, &o->groups, err,
						     sizeof(err)), 0);
}

/* Renders into a heap string (free()). */
static char *draw(const struct render_opts *o, const struct fx *f,
		  size_t *len, int want_rc, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	int rc;

	ck_assert_ptr_nonnull(m);
	rc = render_run(o, &f->plan, &f->rep, m, err, errlen);
	fclose(m);
	ck_assert_msg(rc == want_rc, "render_run gave %d (%s)", rc, err);
	if (len)
		*len = n;
	return buf;
}

static char *render_ok(const struct render_opts *o, const struct fx *f)
{
	char err[512] = "";

	return draw(o, f, NULL, 0, err, sizeof(err));
}

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

/* ---- the overlay's states ---------------------------------------------------- */

START_TEST(where_5d_matches_the_findings)
{
	struct fx f;
	struct match_where w;
	const struct sim_call_result *res;
	long long stuck = 0, never = 0;

	load(&f, GOLDEN "tp4-g3-24gpu-5d.yaml", "get_logprobs");
	res = &f.rep.res[0];
	ck_assert_int_eq(res->status, SIM_HANG);
	ck_assert_int_eq(match_call_where(&f.plan, &f.rep.model, &f.rep.dl,
					  res->call, &f.rep.cost.o, &w), 0);
	ck_assert_int_eq(w.world, 24);
	for (long long r = 0; r < 24; r++) {
		const struct match_class *c = &w.c[w.cls[r]];
		long long g = (r / 4) % 3;

		ck_assert_int_eq(c->called, g == 0);
		ck_assert_int_eq(c->blocked, g == 0);
		if (g == 0) {
			ck_assert_int_eq(c->op, 0);
			ck_assert_str_eq(c->group, "gtp");
			ck_assert_str_eq(c->kind, "all-gather");
			ck_assert_ptr_nonnull(strstr(c->label, "GTP all-gather"));
			stuck++;
		} else {
			ck_assert_int_eq(c->op, -1);
			never++;
		}
	}
	ck_assert_int_eq(stuck, res->invoked);
	ck_assert_int_eq(never, 16);
	match_where_release(&w);
	release(&f);
}
END_TEST

START_TEST(where_4d_completes)
{
	struct fx f;
	struct match_where w;

	load(&f, GOLDEN "tp4-g3-24gpu.yaml", "get_logprobs");
	ck_assert_int_eq(f.rep.res[0].status, SIM_OK);
	ck_assert_int_eq(match_call_where(&f.plan, &f.rep.model, &f.rep.dl,
					  f.rep.res[0].call, NULL, &w), 0);
	for (size_t k = 0; k < w.n; k++) {
		ck_assert(w.c[k].called);
		ck_assert(!w.c[k].blocked);
		ck_assert_str_eq(w.c[k].label, "");
	}
	match_where_release(&w);
	release(&f);
}
END_TEST

START_TEST(overlay_4d_shards_are_lanes)
{
	struct fx f;
	struct render_opts o;
	char *txt;

	load(&f, GOLDEN "tp4-g3-24gpu.yaml", "get_logprobs");
	opts(&o, &f, RENDER_TEXT, NULL, "get_logprobs");
	txt = render_ok(&o, &f);
	/* every lane its own shard; no markers */
	ck_assert_ptr_nonnull(strstr(txt, "node 2  4 4 4 4 5 5 5 5\n"));
	ck_assert_ptr_nonnull(strstr(txt, ": ok · 24 of 24 ranks called, 6 "
				     "shards\n"));
	ck_assert_ptr_null(strstr(txt, "!"));
	free(txt);
	/* colour by lane, state as borders */
	opts(&o, &f, RENDER_DOT, NULL, "get_logprobs");
	o.color = RENDER_BY_LANE;
	txt = render_ok(&o, &f);
	ck_assert_ptr_nonnull(strstr(txt, "thick red border"));
	ck_assert_ptr_null(strstr(txt, "penwidth=3"));
	free(txt);
	release(&f);
}
END_TEST

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
		{ "where_5d", where_5d_matches_the_findings },
		{ "where_4d", where_4d_completes },
		{ "overlay_4d", overlay_4d_shards_are_lanes },
		{ "summary", summary_above_256_ranks },
		{ "summary_cap", summary_draws_at_most_256_nodes },
		{ "segments", segments_nest_with_nodes },
		{ "segment_cfg", segment_size_from_the_config },
		{ "text", text_grid_by_coordinate },
		{ "svg", svg_has_every_rank },
		{ "png", png_is_a_png },
		{ "options", option_parsers },
		{ "errors", errors },
	};

	return RUN_CASES("render", cases, 60);
}
