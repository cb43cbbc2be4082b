/*
 * render_fixture: what the render suites (test_render.c: the golden
 * figures, determinism, Graphviz's output, options and errors;
 * test_render_overlay.c: a call's overlay; test_render_layout.c: large
 * worlds, NVLink segments, the text grid; test_render_scale.c: many
 * lanes, --nodes, the legend) share: LSan's suppressions for
 * Graphviz, a config loaded or built inline and simulated as `gtplan
 * render` does, the options it passes, and the rendering into a string.
 * Include it once per suite: it defines LSan's two hooks.
 */
#ifndef GTPLAN_TEST_RENDER_FIXTURE_H
#define GTPLAN_TEST_RENDER_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "grid_yaml.h"
#include "plan.h"
#include "render.h"
#include "simulate.h"

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

/* Simulates every call, or only `only`; the grid must be valid. */
static inline void sim(struct fx *f, const char *only)
{
	ck_assert(f->plan.grid_ok);
	ck_assert_int_eq(sim_run(&f->plan, f->root, only, &f->rep, &f->diags),
			 0);
	ck_assert(f->rep.ran);
}

/* An empty fixture, as release() takes it (load and build fill it). */
static inline void fx_init(struct fx *f)
{
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	plan_init(&f->plan);
	sim_report_init(&f->rep);
	f->root = NULL;
}

/* A config file as `gtplan render` loads it, simulated (every call, or
 * only `only`). */
static inline void load(struct fx *f, const char *path, const char *only)
{
	fx_init(f);
	ck_assert_int_eq(cfg_load(path, &f->srcs, &f->diags, &f->root), 0);
	ck_assert_int_eq(cfg_resolve(f->root, &f->srcs, &f->diags), 0);
	ck_assert_int_eq(plan_build(&f->plan, f->root, path, &f->diags), 0);
	sim(f, only);
}

/* An inline config: TP, shards, CP, PP (0: not set), nodes x gpus,
 * extra YAML. */
static inline void build(struct fx *f, int tp, int shards, int cp, int pp,
			 int nodes, int gpus, const char *extra,
			 const char *only)
{
	char buf[2048];
	char *text;
	struct grid_yaml y = {
		.batch = nodes * gpus, .tp = tp, .cp = cp, .pp = pp,
		.shards = shards, .nodes = nodes, .gpus = gpus, .tail = extra,
	};

	grid_yaml_text(buf, sizeof(buf), &y);
	fx_init(f);
	text = strdup(buf);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(text), &f->srcs,
					&f->diags, &f->root), 0);
	ck_assert_int_eq(plan_build(&f->plan, f->root, "t.yaml", &f->diags), 0);
	sim(f, only);
}

static inline void release(struct fx *f)
{
	sim_report_release(&f->rep);
	plan_release(&f->plan);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

/* The options `gtplan render` passes: the simulator's program settings
 * and NVLink domain. */
static inline void opts(struct render_opts *o, const struct fx *f,
			enum render_format fmt, const char *groups,
			const char *call)
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
static inline char *draw(const struct render_opts *o, const struct fx *f,
			 size_t *len, int want_rc, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	int rc;

	ck_assert_ptr_nonnull(m);
	err[0] = '\0';
	rc = render_run(o, &f->plan, &f->rep, m, err, errlen);
	fclose(m);
	ck_assert_msg(rc == want_rc, "render_run gave %d (%s)", rc, err);
	if (len)
		*len = n;
	return buf;
}

/* Renders what must render (render_run 0). */
static inline char *render_ok(const struct render_opts *o,
			      const struct fx *f)
{
	char err[512] = "";

	return draw(o, f, NULL, 0, err, sizeof(err));
}

#endif
