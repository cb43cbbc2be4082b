/*
 * Tests for plan_json (the plan JSON writer: sorted keys, the plan's fields
 * and every group kind, a plan without a grid, a global batch the lanes do
 * not divide, write errors), its jsonw emitter (format, reals, misuse
 * refused) and plan_rank_place. Layout itself (rank order, coordinates,
 * the group vectors) is tested in tests/test_layout.c.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "layout.h"
#include "plan.h"
#include "report.h"
#include "harness.h"
#include "layout_fixture.h"

/* ---- jsonw ------------------------------------------------------------ */

static char *jw_to_string(void (*fill)(struct jw *), int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct jw *w = malloc(sizeof(*w));

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(w);
	jw_init(w, f);
	fill(w);
	*rc = jw_finish(w);
	free(w);
	fclose(f);
	return buf;
}

static void fill_mixed(struct jw *w)
{
	jw_obj_begin(w, 0);
	jw_key(w, "a");
	jw_arr_begin(w, 0);
	jw_int(w, -9223372036854775807LL - 1);
	jw_arr_begin(w, 1);
	jw_int(w, 0);
	jw_int(w, 10);
	jw_obj_begin(w, 0); /* compact because its parent is */
	jw_key(w, "k");
	jw_null(w);
	jw_obj_end(w);
	jw_arr_end(w);
	jw_arr_begin(w, 0);
	jw_arr_end(w);
	jw_arr_end(w);
	jw_key(w, "b");
	jw_str(w, "q\"\\\n\t\x01 \xc3\xa9 \xff \xed\xa0\x80 \xf0\x9f\x98\x80");
	jw_key(w, "c");
	jw_bool(w, 1);
	jw_key(w, "d");
	jw_obj_begin(w, 0);
	jw_obj_end(w);
	jw_obj_end(w);
}

START_TEST(jsonw_format)
{
	int rc;
	char *s = jw_to_string(fill_mixed, &rc);

	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(s,
		"{\n"
		"  \"a\": [\n"
		"    -9223372036854775808,\n"
		"    [0,10,{\"k\":null}],\n"
		"    []\n"
		"  ],\n"
		"  \"b\": \"q\\\"\\\\\\n\\t\\u0001 \xc3\xa9 \\ufffd "
		"\\ufffd\\ufffd\\ufffd \xf0\x9f\x98\x80\",\n"
		"  \"c\": true,\n"
		"  \"d\": {}\n"
		"}\n");
	free(s);
}
END_TEST

static void fill_reals(struct jw *w)
{
	jw_arr_begin(w, 1);
	jw_real_f(w, 1.5, 3);
	jw_real_f(w, -1e300, 1); /* 304 characters: not cut, not overrun */
	jw_real_g(w, 3e-4, 15);
	jw_real_g(w, 1.0 / 3, 9);
	jw_arr_end(w);
}

START_TEST(jsonw_reals)
{
	int rc;
	char *s = jw_to_string(fill_reals, &rc);
	char big[320];

	snprintf(big, sizeof(big), "%.1f", -1e300);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(strlen(big), 304);
	ck_assert_ptr_nonnull(strstr(s, big));
	ck_assert(!strncmp(s, "[1.500,-1", 9));
	ck_assert_ptr_nonnull(strstr(s, ".0,0.0003,0.333333333]\n"));
	free(s);
}
END_TEST

static void fill_unsorted(struct jw *w)
{
	jw_obj_begin(w, 0);
	jw_key(w, "b");
	jw_int(w, 1);
	jw_key(w, "a");
	jw_int(w, 2);
	jw_obj_end(w);
}

static void fill_unbalanced(struct jw *w)
{
	jw_arr_begin(w, 0);
	jw_obj_end(w);
}

static void fill_no_key(struct jw *w)
{
	jw_obj_begin(w, 0);
	jw_int(w, 1);
	jw_obj_end(w);
}

static void fill_open(struct jw *w)
{
	jw_arr_begin(w, 0);
}

START_TEST(jsonw_misuse)
{
	void (*fills[])(struct jw *) = { fill_unsorted, fill_unbalanced,
					 fill_no_key, fill_open };
	size_t i;

	for (i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) {
		int rc;

		free(jw_to_string(fills[i], &rc));
		ck_assert_msg(rc == -1, "misuse %zu was accepted", i);
	}
}
END_TEST

/* ---- plan_json -------------------------------------------------------- */

static struct diag_rule test_rule = {
	"GT999", "test-rule", DIAG_WARNING, "a test", "a test rule",
};

/* W=24, TP4, CP1, G3, PP1, D2 (examples/default.yaml's sizes). */
static void make_plan(struct plan *p)
{
	long long dense[LAY_NAXES] = { 0 }, expert[LAY_NAXES] = { 0 };
	struct lay_order eo;

	memset(p, 0, sizeof(*p));
	p->config_name = "x.yaml";
	p->cluster = (struct plan_gpus){ 3, 8 };
	p->train = (struct plan_gpus){ 3, 8 };
	p->colocated = 1;
	p->world = 24;
	p->tp = 4, p->cp = 1, p->pp = 1, p->ep = 1, p->etp = 4;
	p->shards = 12, p->expert_shards = 4, p->gtp = 3, p->egtp = 1;
	p->model_size = 12, p->dp_replicate = 2, p->lanes = 6, p->edp = 6;
	p->global_batch = 480, p->micro_batch = 4;
	p->driver_layout = "4d";
	ck_assert_int_eq(lay_order_parse(LAY_DEFAULT_ORDER, &p->order, NULL, 0),
			 0);
	dense[LAY_TP] = 4, dense[LAY_CP] = 1, dense[LAY_GTP] = 3;
	dense[LAY_EP] = 1, dense[LAY_DP] = 2, dense[LAY_PP] = 1;
	lay_grid_init(&p->dense, &p->order, dense);
	lay_order_expert(&p->order, &eo);
	expert[LAY_TP] = 4, expert[LAY_CP] = 1, expert[LAY_GTP] = 1;
	expert[LAY_EP] = 1, expert[LAY_DP] = 6, expert[LAY_PP] = 1;
	lay_grid_init(&p->expert, &eo, expert);
	p->grid_ok = 1;
	p->expert_grid_ok = 1;
}

static char *plan_to_string(const struct plan *p, const struct diag_list *l,
			    size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(plan_write_json(f, p, NULL, l), 0);
	fclose(f);
	return buf;
}

static json_t *parse(const char *s, size_t len)
{
	json_error_t e;
	json_t *j = json_loadb(s, len, 0, &e);

	ck_assert_msg(j != NULL, "invalid JSON at line %d: %s", e.line, e.text);
	return j;
}

/* Jansson keeps keys in document order: check they are sorted. */
static void check_sorted(json_t *j)
{
	const char *key, *prev = NULL;
	json_t *v;
	size_t i;

	if (json_is_object(j)) {
		json_object_foreach(j, key, v) {
			ck_assert_msg(!prev || strcmp(prev, key) < 0,
				      "key %s after %s", key, prev);
			prev = key;
			check_sorted(v);
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			check_sorted(v);
	}
}

static long long geti(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_integer(v), "%s is not an integer", key);
	return json_integer_value(v);
}

START_TEST(plan_json_write)
{
	struct plan p;
	struct diag d[2];
	struct diag_note notes[2];
	struct src_file file = { .name = "cfg/x.yaml" };
	struct src_set srcs = { .v = &file, .n = 1, .cap = 1 };
	struct diag_list l;
	char *a, *b, *got;
	size_t alen, blen, i;
	json_t *j, *sizes, *r13, *groups;
	const char *line13 =
		"\n    {\"cp\":0,\"dp_replicate\":1,\"edp\":3,\"egtp\":0,"
		"\"ep\":0,\"etp\":1,\"gtp\":0,\"lane\":3,\"local_rank\":5,"
		"\"node\":1,\"pp\":0,\"rank\":13,\"tp\":1},\n";

	make_plan(&p);
	memset(d, 0, sizeof(d));
	memset(&l, 0, sizeof(l));
	memset(notes, 0, sizeof(notes));
	notes[0].loc = (struct diag_loc){ 0, 2, 1 };
	notes[0].msg = "set here";
	notes[1].loc = DIAG_NOLOC;
	notes[1].msg = "no location";
	d[0].rule = &test_rule;
	d[0].severity = DIAG_WARNING;
	d[0].loc = (struct diag_loc){ 0, 3, 7 };
	d[0].path = "policy.x";
	d[0].msg = "line one\nwith \"quotes\"";
	d[0].notes = notes;
	d[0].n_notes = 2;
	d[1].rule = &test_rule;
	d[1].severity = DIAG_ERROR;
	d[1].loc = DIAG_NOLOC;
	d[1].msg = "no path";
	d[1].hint = "a hint";
	l.v = d;
	l.n = 2;
	l.srcs = &srcs;

	a = plan_to_string(&p, &l, &alen);
	b = plan_to_string(&p, &l, &blen);
	ck_assert_uint_eq(alen, blen);
	ck_assert(memcmp(a, b, alen) == 0);
	ck_assert(alen > 0 && a[alen - 1] == '\n' && a[alen - 2] == '}');
	ck_assert_msg(strstr(a, line13) != NULL, "rank 13 is not one line");
	ck_assert(strstr(a, "\n      [0,4,8],\n") != NULL);

	j = parse(a, alen);
	check_sorted(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "format")),
			 "gtplan-plan/1");
	ck_assert_str_eq(json_string_value(json_object_get(j, "config")),
			 "x.yaml");
	ck_assert_str_eq(json_string_value(json_object_get(j, "rank_order")),
			 LAY_DEFAULT_ORDER);
	ck_assert_str_eq(json_string_value(json_object_get(j,
			 "expert_rank_order")), "tp-cp-ep-gtp-dp-pp");
	ck_assert_str_eq(json_string_value(json_object_get(j, "driver_layout")),
			 "4d");
	ck_assert_int_eq(geti(j, "world_size"), 24);

	sizes = json_object_get(j, "sizes");
	ck_assert_int_eq(geti(sizes, "tp"), 4);
	ck_assert_int_eq(geti(sizes, "gtp"), 3);
	ck_assert_int_eq(geti(sizes, "dp_replicate"), 2);
	ck_assert_int_eq(geti(sizes, "dp"), 6);
	ck_assert_int_eq(geti(sizes, "model_size"), 12);
	ck_assert_int_eq(geti(sizes, "shards"), 12);
	ck_assert_int_eq(geti(sizes, "edp"), 6);
	ck_assert_int_eq(json_object_size(sizes), 13);

	ck_assert_int_eq(geti(json_object_get(j, "batch"), "per_lane"), 80);
	ck_assert_int_eq(geti(json_object_get(j, "batch"),
			      "micro_batches_per_lane"), 20);
	ck_assert(json_is_true(json_object_get(json_object_get(j, "resources"),
					       "colocated")));

	ck_assert_uint_eq(json_array_size(json_object_get(j, "ranks")), 24);
	r13 = json_array_get(json_object_get(j, "ranks"), 13);
	ck_assert_int_eq(geti(r13, "rank"), 13);
	ck_assert_int_eq(geti(r13, "tp"), 1);
	ck_assert_int_eq(geti(r13, "gtp"), 0);
	ck_assert_int_eq(geti(r13, "dp_replicate"), 1);
	ck_assert_int_eq(geti(r13, "lane"), 3);
	ck_assert_int_eq(geti(r13, "node"), 1);
	ck_assert_int_eq(geti(r13, "local_rank"), 5);
	ck_assert_int_eq(geti(r13, "edp"), 3);
	ck_assert_int_eq(json_object_size(r13), 13);

	groups = json_object_get(j, "groups");
	ck_assert_uint_eq(json_object_size(groups), lay_group_kind_count());
	got = json_dumps(json_object_get(groups, "gtp"), JSON_COMPACT);
	ck_assert_str_eq(got, GTP_6_1);
	free(got);
	/* Every kind as layout computes it (checks the writer's odometers). */
	for (i = 0; i < lay_group_kind_count(); i++) {
		const struct lay_group_kind *k = lay_group_kind_at(i);
		char *want = groups_str(k->expert ? &p.expert : &p.dense,
					k->axes);

		got = json_dumps(json_object_get(groups, k->name), JSON_COMPACT);
		ck_assert_msg(got && strcmp(got, want) == 0, "%s: %s vs %s",
			      k->name, got, want);
		free(got);
		free(want);
	}

	ck_assert_uint_eq(json_array_size(json_object_get(j, "diagnostics")),
			  2);
	{
		json_t *d0 = json_array_get(json_object_get(j, "diagnostics"), 0);
		json_t *d1 = json_array_get(json_object_get(j, "diagnostics"), 1);

		ck_assert_str_eq(json_string_value(json_object_get(d0, "code")),
				 "GT999");
		ck_assert_str_eq(json_string_value(json_object_get(d0,
				 "severity")), "warning");
		ck_assert_str_eq(json_string_value(json_object_get(d0,
				 "message")), "line one\nwith \"quotes\"");
		json_t *n0 = json_array_get(json_object_get(d0, "notes"), 0);
		json_t *n1 = json_array_get(json_object_get(d0, "notes"), 1);

		ck_assert_str_eq(json_string_value(json_object_get(d0, "file")),
				 "cfg/x.yaml");
		ck_assert_int_eq(geti(d0, "line"), 3);
		ck_assert_int_eq(geti(d0, "column"), 7);
		ck_assert(json_is_null(json_object_get(d0, "hint")));
		ck_assert_int_eq(geti(n0, "line"), 2);
		ck_assert_str_eq(json_string_value(json_object_get(n0,
				 "message")), "set here");
		ck_assert(json_is_null(json_object_get(n1, "file")));
		ck_assert(json_is_null(json_object_get(n1, "column")));
		ck_assert(json_is_null(json_object_get(d1, "file")));
		ck_assert(json_is_null(json_object_get(d1, "line")));
		ck_assert(json_is_null(json_object_get(d1, "path")));
		ck_assert_str_eq(json_string_value(json_object_get(d1, "hint")),
				 "a hint");
		ck_assert_uint_eq(json_array_size(json_object_get(d1, "notes")),
				  0);
		ck_assert_uint_eq(json_object_size(d0), 10);
	}
	json_decref(j);
	free(a);
	free(b);
}
END_TEST

START_TEST(plan_json_no_grid)
{
	struct plan p;
	char *a;
	size_t alen;
	json_t *j, *sizes, *batch;

	make_plan(&p);
	p.grid_ok = 0;
	p.expert_grid_ok = 0;
	p.driver_layout = NULL;
	memset(&p.order, 0, sizeof(p.order)); /* never parsed */
	a = plan_to_string(&p, NULL, &alen);
	ck_assert(strstr(a, "\"ranks\": [],\n") != NULL);
	ck_assert(strstr(a, "\"groups\": {},\n") != NULL);
	j = parse(a, alen);
	check_sorted(j);
	sizes = json_object_get(j, "sizes");
	ck_assert(json_is_null(json_object_get(sizes, "dp")));
	ck_assert(json_is_null(json_object_get(sizes, "dp_replicate")));
	ck_assert(json_is_null(json_object_get(sizes, "edp")));
	ck_assert_int_eq(geti(sizes, "tp"), 4);
	batch = json_object_get(j, "batch");
	ck_assert(json_is_null(json_object_get(batch, "per_lane")));
	ck_assert_int_eq(geti(batch, "global"), 480);
	ck_assert(json_is_null(json_object_get(j, "rank_order")));
	ck_assert(json_is_null(json_object_get(j, "driver_layout")));
	ck_assert_uint_eq(json_array_size(json_object_get(j, "diagnostics")),
			  0);
	json_decref(j);
	free(a);
}
END_TEST

START_TEST(plan_json_batch_not_whole)
{
	struct plan p;
	char *a;
	size_t alen;
	json_t *j, *batch;

	make_plan(&p);
	p.global_batch = 512; /* 512 / 6 lanes is not whole */
	p.micro_batch = 0;    /* unset */
	a = plan_to_string(&p, NULL, &alen);
	j = parse(a, alen);
	batch = json_object_get(j, "batch");
	ck_assert_int_eq(geti(batch, "global"), 512);
	ck_assert(json_is_null(json_object_get(batch, "micro")));
	ck_assert(json_is_null(json_object_get(batch, "per_lane")));
	ck_assert(json_is_null(json_object_get(batch,
					       "micro_batches_per_lane")));
	json_decref(j);
	free(a);

	p.global_batch = 480;
	p.micro_batch = 7; /* 80 per lane, not a multiple of 7 */
	a = plan_to_string(&p, NULL, &alen);
	j = parse(a, alen);
	batch = json_object_get(j, "batch");
	ck_assert_int_eq(geti(batch, "per_lane"), 80);
	ck_assert(json_is_null(json_object_get(batch,
					       "micro_batches_per_lane")));
	json_decref(j);
	free(a);
}
END_TEST

START_TEST(plan_json_write_error)
{
	struct plan p;
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		return; /* no /dev/full on this system */
	make_plan(&p);
	ck_assert_int_eq(plan_write_json(f, &p, NULL, NULL), -1);
	fclose(f);
}
END_TEST

START_TEST(plan_rank_place_nodes)
{
	struct plan p;
	long long node, local;

	make_plan(&p);
	plan_rank_place(&p, 13, &node, &local);
	ck_assert_int_eq(node, 1);
	ck_assert_int_eq(local, 5);
	plan_rank_place(&p, 23, &node, &local);
	ck_assert_int_eq(node, 2);
	ck_assert_int_eq(local, 7);
	p.train.gpus_per_node = 0;
	plan_rank_place(&p, 23, &node, &local);
	ck_assert_int_eq(node, 0);
	ck_assert_int_eq(local, 23);
}
END_TEST

/* ---- suite ------------------------------------------------------------ */

int main(void)
{
	const struct test_case cases[] = {
		{ "jsonw_format", jsonw_format },
		{ "jsonw_reals", jsonw_reals },
		{ "jsonw_misuse", jsonw_misuse },
		{ "plan_json_write", plan_json_write },
		{ "plan_json_no_grid", plan_json_no_grid },
		{ "plan_json_batch_not_whole", plan_json_batch_not_whole },
		{ "plan_json_write_error", plan_json_write_error },
		{ "plan_rank_place_nodes", plan_rank_place_nodes },
	};

	return RUN_CASES("layout_plan_json", cases, 0);
}
