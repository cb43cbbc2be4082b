/*
 * Loader tests: YAML typing and marks, duplicate keys, aliases and merge
 * keys, limits, and NeMo-RL's defaults: inheritance with _override_.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"
#include "diag.h"
#include "cfg_fixture.h"
#include "harness.h"

static int parse(struct cfg_fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	ck_assert_ptr_nonnull(text);
	return cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
			      &f->diags, &f->root);
}

static int has_code(const struct cfg_fx *f, const char *code)
{
	for (size_t i = 0; i < f->diags.n; i++)
		if (f->diags.v[i].rule &&
		    strcmp(f->diags.v[i].rule->code, code) == 0)
			return 1;
	return 0;
}

START_TEST(scalar_types_follow_omegaconf)
{
	struct cfg_fx f;
	long long i;
	int b;
	const char *s;
	struct cfg_node *n;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f,
		"a: 4\nb: '4'\nc: 1e-5\nd: on\ne: null\nf: ~\ng: 0x10\n"
		"h: 010\ni: 1_000\nj: 3.0\nk: .inf\nl: hello\nm: \"${x.y}\"\n"
		"n: False\no: 1.5e3\np: 10:00\nq: 00:03:35:00\nr: 1:75\n"), 0);
	ck_assert_int_eq(cfg_int(f.root, "a", &i), 1);
	ck_assert_int_eq(i, 4);
	ck_assert_int_eq(cfg_str(f.root, "b", &s), 1);
	ck_assert_str_eq(s, "4");
	ck_assert_int_eq(cfg_path(f.root, "c")->kind, CFG_FLOAT);
	ck_assert_double_eq_tol(cfg_path(f.root, "c")->v.f, 1e-5, 1e-12);
	ck_assert_int_eq(cfg_bool(f.root, "d", &b), 1);
	ck_assert_int_eq(b, 1);
	ck_assert_int_eq(cfg_path(f.root, "e")->kind, CFG_NULL);
	ck_assert_int_eq(cfg_path(f.root, "f")->kind, CFG_NULL);
	ck_assert_int_eq(cfg_int(f.root, "g", &i), 1);
	ck_assert_int_eq(i, 16);
	ck_assert_int_eq(cfg_int(f.root, "h", &i), 1);
	ck_assert_int_eq(i, 8);
	ck_assert_int_eq(cfg_int(f.root, "i", &i), 1);
	ck_assert_int_eq(i, 1000);
	/* 3.0 is a float: an integer size must not accept it silently */
	ck_assert_int_eq(cfg_int(f.root, "j", &i), -1);
	ck_assert_int_eq(cfg_path(f.root, "k")->kind, CFG_FLOAT);
	ck_assert_int_eq(cfg_str(f.root, "l", &s), 1);
	n = cfg_path(f.root, "m");
	ck_assert_int_eq(n->kind, CFG_STR);
	ck_assert(n->interp);
	ck_assert_int_eq(cfg_bool(f.root, "n", &b), 1);
	ck_assert_int_eq(b, 0);
	ck_assert_double_eq_tol(cfg_path(f.root, "o")->v.f, 1500.0, 1e-9);
	/* YAML 1.1 base 60, as PyYAML reads it */
	ck_assert_int_eq(cfg_int(f.root, "p", &i), 1);
	ck_assert_int_eq(i, 600);
	ck_assert_int_eq(cfg_str(f.root, "q", &s), 1);
	ck_assert_int_eq(cfg_str(f.root, "r", &s), 1);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(marks_are_one_based_for_keys_and_values)
{
	struct cfg_fx f;
	struct cfg_node *n;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, "policy:\n  megatron_cfg:\n"
			       "    tensor_model_parallel_size:   4\n"), 0);
	n = cfg_path(f.root, "policy.megatron_cfg.tensor_model_parallel_size");
	ck_assert_ptr_nonnull(n);
	ck_assert_int_eq(n->loc.line, 3);
	ck_assert_int_eq(n->loc.col, 35);
	ck_assert_int_eq(n->key_loc.line, 3);
	ck_assert_int_eq(n->key_loc.col, 5);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(loc_and_first_set_point_at_the_key)
{
	static const char *const keys[] = { "a.x", "a.y", "a.z", NULL };
	static const char *const none[] = { "b.x", "b.y", NULL };
	struct cfg_fx f;
	struct diag_loc l;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, "a:\n  y: 1\n  z: 2\n"), 0);
	l = cfg_loc(f.root, "a.z");
	ck_assert_int_eq(l.line, 3);
	ck_assert_int_eq(l.col, 6);
	ck_assert_int_lt(cfg_loc(f.root, "a.x").src, 0);
	ck_assert_int_lt(cfg_loc(f.root, NULL).src, 0);
	ck_assert_str_eq(cfg_first_set(f.root, keys), "a.y");
	ck_assert_str_eq(cfg_first_set(f.root, none), "b.y");
	l = cfg_loc_near(f.root, "a.y"); /* set: its value */
	ck_assert_int_eq(l.line, 2);
	ck_assert_int_eq(l.col, 6);
	l = cfg_loc_near(f.root, "a.q.r"); /* absent: the key of "a" */
	ck_assert_int_eq(l.line, 1);
	ck_assert_int_eq(l.col, 1);
	ck_assert_int_lt(cfg_loc_near(f.root, "b.x").src, 0);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(truthiness_is_pythons)
{
	static const char *const yes[] = { "t", "i", "f", "s", "m", "l" };
	static const char *const no[] = { "T", "I", "F", "S", "M", "L", "n" };
	struct cfg_fx f;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, "t: true\ni: -1\nf: 0.5\ns: x\n"
			       "m: {a: 1}\nl: [0]\nT: false\nI: 0\n"
			       "F: 0.0\nS: ''\nM: {}\nL: []\nn: null\n"), 0);
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		ck_assert_msg(cfg_truthy(cfg_get(f.root, yes[i]), 0), "%s",
			      yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		ck_assert_msg(!cfg_truthy(cfg_get(f.root, no[i]), 1), "%s",
			      no[i]);
	ck_assert_int_eq(cfg_truthy(NULL, 1), 1); /* absent: the default */
	ck_assert_int_eq(cfg_truthy(NULL, 0), 0);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(duplicate_keys_point_at_both)
{
	struct cfg_fx f;
	const struct diag *d;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, "a: 1\nb:\n  c: 2\n  c: 3\n"), -1);
	ck_assert_int_eq(f.diags.n, 1);
	d = &f.diags.v[0];
	ck_assert_str_eq(d->rule->code, "GT101");
	ck_assert_int_eq(d->loc.line, 4);
	ck_assert_int_eq(d->loc.col, 3);
	ck_assert_int_eq(d->n_notes, 1);
	ck_assert_int_eq(d->notes[0].loc.line, 3);
	ck_assert_int_eq(d->notes[0].loc.col, 3);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(aliases_and_merge_keys)
{
	struct cfg_fx f;
	long long i;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f,
		"base: &B {tp: 2, pp: 1, cp: 1}\n"
		"x:\n  <<: *B\n  pp: 4\n"
		"y: *B\n"
		"z:\n  <<: [&C {tp: 8}, *B]\n"), 0);
	ck_assert_int_eq(cfg_int(f.root, "x.tp", &i), 1);
	ck_assert_int_eq(i, 2);
	ck_assert_int_eq(cfg_int(f.root, "x.pp", &i), 1);
	ck_assert_int_eq(i, 4);
	ck_assert_int_eq(cfg_int(f.root, "y.cp", &i), 1);
	/* in a merge list the earlier map wins, as in PyYAML */
	ck_assert_int_eq(cfg_int(f.root, "z.tp", &i), 1);
	ck_assert_int_eq(i, 8);
	ck_assert_ptr_null(cfg_get(cfg_path(f.root, "x"), "<<"));
	/* merged keys come first, explicit keys replace them in place */
	ck_assert_str_eq(cfg_path(f.root, "x")->kids[0]->key, "tp");
	ck_assert_str_eq(cfg_path(f.root, "x")->kids[1]->key, "pp");
	/* an alias is reported where it is used */
	ck_assert_int_eq(cfg_path(f.root, "y")->loc.line, 5);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(alias_cycle_is_refused)
{
	struct cfg_fx f;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, "x: &a [1, *a]\n"), -1);
	ck_assert(has_code(&f, "GT102"));
	cfg_fx_release(&f);
}
END_TEST

START_TEST(alias_bomb_is_refused)
{
	struct cfg_fx f;
	char yaml[2048];
	size_t used;

	cfg_fx_init(&f);
	/* 10 levels of 10 aliases each: 10^10 nodes if expanded */
	used = (size_t)snprintf(yaml, sizeof(yaml), "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
	for (int i = 1; i < 10; i++) {
		used += (size_t)snprintf(yaml + used, sizeof(yaml) - used,
					 "l%d: &l%d [", i, i);
		for (int j = 0; j < 10; j++)
			used += (size_t)snprintf(yaml + used, sizeof(yaml) - used,
						 "%s*l%d", j ? ", " : "", i - 1);
		used += (size_t)snprintf(yaml + used, sizeof(yaml) - used, "]\n");
	}
	ck_assert_int_eq(parse(&f, yaml), -1);
	ck_assert(has_code(&f, "GT102"));
	cfg_fx_release(&f);
}
END_TEST

START_TEST(depth_and_size_limits)
{
	struct cfg_fx f;
	char *deep = malloc(4 * (CFG_MAX_DEPTH + 2) + 8);
	size_t n = 0;

	cfg_fx_init(&f);
	for (int i = 0; i < CFG_MAX_DEPTH + 1; i++)
		deep[n++] = '[';
	for (int i = 0; i < CFG_MAX_DEPTH + 1; i++)
		deep[n++] = ']';
	deep[n] = '\0';
	ck_assert_int_eq(parse(&f, deep), -1);
	ck_assert(has_code(&f, "GT103"));
	free(deep);

	/* one byte over the file limit */
	char *big = malloc(CFG_MAX_FILE_BYTES + 2);
	memset(big, '#', CFG_MAX_FILE_BYTES + 1);
	big[CFG_MAX_FILE_BYTES + 1] = '\0';
	cfg_free(f.root);
	f.root = NULL;
	ck_assert_int_eq(cfg_parse_text("big.yaml", big, CFG_MAX_FILE_BYTES + 1,
					&f.srcs, &f.diags, &f.root), -1);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(syntax_error_has_location_and_context)
{
	struct cfg_fx f;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, "a:\n  b: [1, 2\nc: 3\n"), -1);
	ck_assert_int_eq(f.diags.n, 1);
	ck_assert_str_eq(f.diags.v[0].rule->code, "GT100");
	ck_assert_int_ge(f.diags.v[0].loc.line, 2);
	ck_assert_int_eq(f.diags.v[0].n_notes, 1); /* "while parsing ..." */
	cfg_fx_release(&f);
}
END_TEST

START_TEST(top_level_must_be_a_map)
{
	struct cfg_fx f;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, "- a\n- b\n"), -1);
	ck_assert(has_code(&f, "GT100"));
	cfg_free(f.root);
	f.root = NULL;
	ck_assert_int_eq(parse(&f, "# only a comment\n"), 0);
	ck_assert_int_eq(f.root->kind, CFG_MAP);
	ck_assert_int_eq(f.root->n, 0);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(defaults_depth_first_later_wins)
{
	struct cfg_fx f;
	long long i;
	const char *top;
	struct cfg_node *n;

	cfg_fx_init(&f);
	cfg_fx_put(&f, "base/grand.yaml",
		   "a: {x: 1, y: 1, z: 1}\nlist: [1, 2, 3]\n");
	cfg_fx_put(&f, "base/p1.yaml", "defaults: grand.yaml\na: {y: 2}\n");
	cfg_fx_put(&f, "p2.yaml", "a: {z: 3}\nlist: [9]\n");
	top = cfg_fx_put(&f, "child.yaml",
		  "defaults:\n  - base/p1.yaml\n  - p2.yaml\na:\n  w: 4\n");
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	ck_assert_int_eq(f.diags.n, 0);
	ck_assert_int_eq(cfg_int(f.root, "a.x", &i), 1);
	ck_assert_int_eq(i, 1);
	ck_assert_int_eq(cfg_int(f.root, "a.y", &i), 1);
	ck_assert_int_eq(i, 2);
	ck_assert_int_eq(cfg_int(f.root, "a.z", &i), 1);
	ck_assert_int_eq(i, 3);
	ck_assert_int_eq(cfg_int(f.root, "a.w", &i), 1);
	/* lists replace, they do not merge */
	ck_assert_int_eq(cfg_path(f.root, "list")->n, 1);
	ck_assert_ptr_null(cfg_get(f.root, "defaults"));
	/* a value keeps the place it was written, in the parent file */
	n = cfg_path(f.root, "a.x");
	ck_assert_str_eq(src_name(&f.srcs, n->loc.src) +
			 strlen(src_name(&f.srcs, n->loc.src)) - 15,
			 "base/grand.yaml");
	ck_assert_int_eq(n->loc.line, 1);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(override_marker_replaces_section)
{
	struct cfg_fx f;
	long long i;
	const char *top;

	cfg_fx_init(&f);
	cfg_fx_put(&f, "parent.yaml", "data: {a: 1, b: 2}\nkeep: {x: 1}\n");
	top = cfg_fx_put(&f, "child.yaml",
		  "defaults: parent.yaml\ndata:\n  _override_: true\n  c: 3\n"
		  "keep: {y: 2}\n");
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	ck_assert_ptr_null(cfg_path(f.root, "data.a"));
	ck_assert_int_eq(cfg_int(f.root, "data.c", &i), 1);
	ck_assert_ptr_null(cfg_path(f.root, "data._override_"));
	ck_assert_int_eq(cfg_int(f.root, "keep.x", &i), 1);
	ck_assert_int_eq(cfg_int(f.root, "keep.y", &i), 1);
	/* NeMo-RL pops the inherited section, so the replacement goes last */
	ck_assert_str_eq(f.root->kids[f.root->n - 1]->key, "data");
	ck_assert_int_eq(f.diags.n, 0);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(nested_override_marker_only_warns)
{
	struct cfg_fx f;
	long long i;
	const char *top;

	cfg_fx_init(&f);
	cfg_fx_put(&f, "parent.yaml", "policy:\n  meg: {a: 1, b: 2}\n");
	top = cfg_fx_put(&f, "child.yaml",
			 "defaults: parent.yaml\npolicy:\n  meg:\n"
			 "    _override_: true\n    c: 3\n");
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	/* merged, not replaced, and the marker stays: as NeMo-RL does */
	ck_assert_int_eq(cfg_int(f.root, "policy.meg.a", &i), 1);
	ck_assert_int_eq(cfg_int(f.root, "policy.meg.c", &i), 1);
	ck_assert_ptr_nonnull(cfg_path(f.root, "policy.meg._override_"));
	ck_assert(has_code(&f, "GT109"));
	ck_assert_int_eq(f.diags.v[0].loc.line, 4);
	ck_assert_int_eq(f.diags.v[0].loc.col, 5);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(truthy_override_marker_warns)
{
	struct cfg_fx f;
	const char *top;

	cfg_fx_init(&f);
	cfg_fx_put(&f, "parent.yaml", "data: {a: 1}\n");
	top = cfg_fx_put(&f, "child.yaml", "defaults: parent.yaml\ndata:\n"
			 "  _override_: 'no'\n  c: 3\n");
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	/* a non-empty string is true in Python: the section is replaced */
	ck_assert_ptr_null(cfg_path(f.root, "data.a"));
	ck_assert(has_code(&f, "GT108"));
	cfg_fx_release(&f);
}
END_TEST

START_TEST(missing_parent_names_the_chain)
{
	struct cfg_fx f;
	const char *top;
	const struct diag *d;

	cfg_fx_init(&f);
	cfg_fx_put(&f, "mid.yaml", "defaults: nowhere.yaml\nx: 1\n");
	top = cfg_fx_put(&f, "top.yaml", "defaults: mid.yaml\ny: 2\n");
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	ck_assert_int_eq(f.diags.n, 1);
	d = &f.diags.v[0];
	ck_assert_str_eq(d->rule->code, "GT105");
	ck_assert_int_eq(d->loc.line, 1);
	ck_assert_int_eq(d->loc.col, 11);
	ck_assert_ptr_nonnull(strstr(src_name(&f.srcs, d->loc.src), "mid.yaml"));
	ck_assert_int_eq(d->n_notes, 1); /* mid.yaml is included from top.yaml */
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg, "mid.yaml"));
	cfg_fx_release(&f);
}
END_TEST

START_TEST(include_cycle_is_an_error)
{
	struct cfg_fx f;
	const char *top;

	cfg_fx_init(&f);
	cfg_fx_put(&f, "a.yaml", "defaults: b.yaml\n");
	cfg_fx_put(&f, "b.yaml", "defaults: [c.yaml]\n");
	top = cfg_fx_put(&f, "c.yaml", "defaults: a.yaml\n");
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	ck_assert(has_code(&f, "GT106"));
	ck_assert_int_eq(f.diags.v[0].n_notes, 2);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(bad_defaults_entry)
{
	struct cfg_fx f;
	const char *top;

	cfg_fx_init(&f);
	top = cfg_fx_put(&f, "x.yaml", "defaults:\n  - optimizer: adam\n");
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	ck_assert(has_code(&f, "GT107"));
	cfg_fx_release(&f);
}
END_TEST

START_TEST(unreadable_top_level_file)
{
	struct cfg_fx f;

	cfg_fx_init(&f);
	ck_assert_int_eq(cfg_load("/nonexistent/x.yaml", &f.srcs, &f.diags,
				  &f.root), -1);
	ck_assert(has_code(&f, "GT104"));
	cfg_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "scalar_types", scalar_types_follow_omegaconf },
		{ "marks", marks_are_one_based_for_keys_and_values },
		{ "cfg_loc", loc_and_first_set_point_at_the_key },
		{ "truthy", truthiness_is_pythons },
		{ "duplicates", duplicate_keys_point_at_both },
		{ "aliases", aliases_and_merge_keys },
		{ "alias_cycle", alias_cycle_is_refused },
		{ "alias_bomb", alias_bomb_is_refused },
		{ "limits", depth_and_size_limits },
		{ "syntax", syntax_error_has_location_and_context },
		{ "top_level", top_level_must_be_a_map },
		{ "defaults", defaults_depth_first_later_wins },
		{ "override_marker", override_marker_replaces_section },
		{ "nested_marker", nested_override_marker_only_warns },
		{ "truthy_marker", truthy_override_marker_warns },
		{ "missing_parent", missing_parent_names_the_chain },
		{ "include_cycle", include_cycle_is_an_error },
		{ "bad_defaults", bad_defaults_entry },
		{ "unreadable", unreadable_top_level_file },
	};

	return RUN_CASES("cfg_load", cases, 30);
}
