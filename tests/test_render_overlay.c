/*
 * render's call overlay: the state of every rank from match_call_where()
 * on the 5-D layout's hang (who waits in which collective, who is never
 * called) and on the 4-D layout's call that completes, and that call's
 * overlay drawn (every lane its own shard; the state as borders).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"
#include "render_fixture.h"
#include "harness.h"

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

int main(void)
{
	const struct test_case cases[] = {
		{ "where_5d", where_5d_matches_the_findings },
		{ "where_4d", where_4d_completes },
		{ "overlay_4d", overlay_4d_shards_are_lanes },
	};

	return RUN_CASES("render_overlay", cases, 60);
}
