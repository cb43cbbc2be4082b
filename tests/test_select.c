/*
 * Tests for select (base/select.h) and the list operations it rests on
 * (diag_list_keep, diag_merge_same, src_path_normal): selectors, inline
 * comments, suppression scopes, unused suppressions, selection by rule and
 * severity, the suppressions limit.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "harness.h"
#include "select.h"

static int add_text(struct src_set *s, const char *name, const char *text)
{
	char *t = strdup(text);

	ck_assert_ptr_nonnull(t);
	return src_add(s, name, t, strlen(text));
}

static size_t count_code(const struct diag_list *l, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += !strcmp(diag_code(&l->v[i]), code);
	return n;
}

START_TEST(test_selectors)
{
	struct diag_list l;
	struct diag *d;

	diag_list_init(&l, NULL);
	d = diag_add(&l, "GT632", DIAG_NOLOC, NULL, "x");
	ck_assert(sel_valid("GT632") && sel_valid("gt632") && sel_valid("GT6") &&
		  sel_valid("GT") && sel_valid("ALL") && sel_valid("all") &&
		  sel_valid("microbatches-below-pp"));
	ck_assert(!sel_valid("GT6320") && !sel_valid("GT6x") && !sel_valid("") &&
		  !sel_valid(NULL) && !sel_valid("microbatch-below-pp"));
	ck_assert(sel_match("GT632", d) && sel_match("GT63", d) &&
		  sel_match("microbatches-below-pp", d) && sel_match("ALL", d));
	ck_assert(!sel_match("GT3", d) && !sel_match("GT631", d));
	ck_assert_str_eq(sel_closest("microbatch-below-pp")->code, "GT632");
	ck_assert_ptr_null(sel_closest("zzzzzzzzzzzzzzzzzzzzzz"));
	/* an unknown code matches ALL only */
	d = diag_add(&l, "GT999", DIAG_NOLOC, NULL, "y");
	ck_assert(sel_match("ALL", d) && !sel_match("GT9", d));
	diag_list_release(&l);
}
END_TEST

/* Inline comments: where they count, what a '#' inside a word is, and
 * the places of their selectors. */
START_TEST(test_inline)
{
	struct src_set s;
	struct diag_list l;
	struct sel_set ss;
	int id;

	src_set_init(&s);
	diag_list_init(&l, &s);
	sel_set_init(&ss);
	id = add_text(&s, "a.yaml",
		      "a: 1  # gtplan: ignore[GT632, GT605] reason here\n"
		      "b: x#gtplan: ignore[GT303]\n"
		      "#gtplan:ignore[GT4]\n"
		      "c: 2  # gtplan: ignore[GT63x]\n"
		      "d: 3  # a comment # gtplan: ignore[GT1,]\n");
	add_text(&s, SRC_CMDLINE, "x=1 # gtplan: ignore[GT5]");
	ck_assert_int_eq(sel_scan(&ss, &s, &l), 0);
	ck_assert_uint_eq(ss.n, 4);
	ck_assert_str_eq(ss.v[0].sel, "GT632");
	ck_assert_int_eq(ss.v[0].line, 1);
	ck_assert_int_eq(ss.v[0].loc.col, 24);
	ck_assert_str_eq(ss.v[1].sel, "GT605");
	ck_assert_int_eq(ss.v[1].loc.col, 31);
	ck_assert_str_eq(ss.v[2].sel, "GT4");
	ck_assert_int_eq(ss.v[2].line, 3);
	ck_assert_str_eq(ss.v[3].sel, "GT1");
	ck_assert_int_eq(ss.v[3].line, 5);
	/* GT63x names no rule: GT002 at its place, and no suppression */
	ck_assert_uint_eq(l.n, 1);
	ck_assert_str_eq(diag_code(&l.v[0]), "GT002");
	ck_assert_int_eq(l.v[0].loc.line, 4);
	ck_assert_int_eq(l.v[0].loc.col, 24);
	/* a second scan reads nothing again */
	ck_assert_int_eq(sel_scan(&ss, &s, &l), 0);
	ck_assert_uint_eq(ss.n, 4);
	(void)id;
	sel_set_release(&ss);
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

/* Suppression by line and by scope, the used counts, GT001 for the rest,
 * the command line's never reported, and a shared file read twice. */
START_TEST(test_suppress_and_unused)
{
	struct src_set s;
	struct diag_list l;
	struct sel_set ss;
	int a, a2, scopes[1] = { 7 };

	src_set_init(&s);
	diag_list_init(&l, &s);
	sel_set_init(&ss);
	a = add_text(&s, "p.yaml", "a: 1  # gtplan: ignore[GT632]\nb: 2\n");
	a2 = add_text(&s, "p.yaml", "a: 1  # gtplan: ignore[GT632]\nb: 2\n");
	ck_assert_int_eq(sel_scan(&ss, &s, &l), 0);
	ck_assert_int_eq(sel_add(&ss, "GT303", (struct diag_loc){ a, 2, 4 }, 7,
				 "gtplan.ignore", 1), 0);
	ck_assert_int_eq(sel_add(&ss, "GT5", DIAG_NOLOC, -1, "--ignore", 0), 0);
	ck_assert_int_eq(sel_add(&ss, "GT400", (struct diag_loc){ a, 2, 10 }, 8,
				 "gtplan.ignore", 1), 0);
	diag_add(&l, "GT632", (struct diag_loc){ a, 1, 4 }, NULL, "on the line");
	diag_add(&l, "GT632", (struct diag_loc){ a, 2, 4 }, NULL, "next line");
	diag_add(&l, "GT303", (struct diag_loc){ a, 2, 4 }, NULL, "scope 7");
	diag_add(&l, "GT400", (struct diag_loc){ a, 2, 4 }, NULL, "scope 8");
	diag_add(&l, "GT500", DIAG_NOLOC, NULL, "everywhere");
	ck_assert_uint_eq(sel_suppress(&ss, &l, 0, scopes, 1), 3);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(l.v[0].msg, "next line");
	ck_assert_str_eq(l.v[1].msg, "scope 8");
	ck_assert_uint_eq(l.n_suppressed, 3);
	/* seq numbers stay, and the next finding gets a fresh one */
	ck_assert_uint_eq(l.v[1].seq, 3);
	ck_assert_uint_eq(diag_add(&l, "GT100", DIAG_NOLOC, NULL, "z")->seq, 5);
	/* unused: the GT400 of scope 8 (never applied); the inline GT632 of
	 * the second copy of p.yaml counts as used through the first */
	ck_assert_int_eq(sel_report_unused(&ss, &l), 0);
	ck_assert_uint_eq(count_code(&l, "GT001"), 1);
	ck_assert_int_eq(l.v[l.n - 1].loc.col, 10);
	(void)a2;
	sel_set_release(&ss);
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

START_TEST(test_filter)
{
	struct diag_list l;
	char *sel[] = { "GT6", "world-not-divisible" };

	diag_list_init(&l, NULL);
	diag_add(&l, "GT632", DIAG_NOLOC, NULL, "warning");
	diag_add(&l, "GT605", DIAG_NOLOC, NULL, "note");
	diag_add(&l, "GT303", DIAG_NOLOC, NULL, "error");
	diag_add(&l, "GT400", DIAG_NOLOC, NULL, "error, not selected");
	ck_assert_uint_eq(sel_filter(&l, 0, NULL, 0, DIAG_NOTE), 0);
	ck_assert_uint_eq(sel_filter(&l, 0, sel, 2, DIAG_WARNING), 2);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(diag_code(&l.v[0]), "GT632");
	ck_assert_str_eq(diag_code(&l.v[1]), "GT303");
	/* from: the findings before it are not touched */
	ck_assert_uint_eq(sel_filter(&l, 1, NULL, 0, DIAG_ERROR), 0);
	ck_assert_uint_eq(sel_filter(&l, 0, NULL, 0, DIAG_ERROR), 1);
	ck_assert_uint_eq(l.n, 1);
	diag_list_release(&l);
}
END_TEST

/* Identical findings from several configs merge, different ones stay. */
START_TEST(test_merge_same)
{
	struct src_set s;
	struct diag_list l;
	struct diag *d;
	int p;

	src_set_init(&s);
	diag_list_init(&l, &s);
	p = add_text(&s, "parent.yaml", "a: 1\n");
	add_text(&s, "parent.yaml", "a: 1\n");
	for (int k = 0; k < 2; k++) {
		d = diag_add(&l, "GT632", (struct diag_loc){ p + k, 1, 4 }, "a",
			     "same");
		diag_hint(d, "h");
		diag_note(d, DIAG_NOLOC, "n");
		ck_assert_int_eq(diag_add_config(d, k ? "b.yaml" : "a.yaml"), 0);
		ck_assert_int_eq(diag_add_config(d, k ? "b.yaml" : "a.yaml"), 0);
		d = diag_add(&l, "GT632", (struct diag_loc){ p + k, 1, 4 }, "a",
			     k ? "differs b" : "differs a");
		diag_add_config(d, k ? "b.yaml" : "a.yaml");
	}
	diag_sort(&l);
	ck_assert_uint_eq(diag_merge_same(&l), 1);
	ck_assert_uint_eq(l.n, 3);
	for (size_t i = 0; i < l.n; i++)
		if (!strcmp(l.v[i].msg, "same")) {
			ck_assert_uint_eq(l.v[i].n_configs, 2);
			ck_assert_str_eq(l.v[i].configs[0], "a.yaml");
			ck_assert_str_eq(l.v[i].configs[1], "b.yaml");
		} else {
			ck_assert_uint_eq(l.v[i].n_configs, 1);
		}
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

START_TEST(test_path_normal)
{
	static const char *const cases[][2] = {
		{ "a/b/../c", "a/c" }, { "./x.yaml", "x.yaml" },
		{ "a/./b//c", "a/b/c" }, { "../x", "../x" },
		{ "../../a/../b", "../../b" }, { "a/../../b", "../b" },
		{ "/a/../b", "/b" }, { "/..", "/" }, { "a/..", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *n = src_path_normal(cases[i][0]);

		ck_assert_ptr_nonnull(n);
		ck_assert_msg(!strcmp(n, cases[i][1]), "%s: got '%s', want '%s'",
			      cases[i][0], n, cases[i][1]);
		free(n);
	}
}
END_TEST

/* Hostile input: more inline suppressions than SEL_MAX_SUPPRESSIONS are
 * ignored past the limit, said once. */
START_TEST(test_limit)
{
	struct src_set s;
	struct diag_list l;
	struct sel_set ss;
	size_t n = SEL_MAX_SUPPRESSIONS + 5, len = 0;
	char *text = malloc(n * 32);

	ck_assert_ptr_nonnull(text);
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "a%zu: 1 # gtplan: ignore[GT1]\n", i);
	src_set_init(&s);
	diag_list_init(&l, &s);
	sel_set_init(&ss);
	ck_assert_int_ge(src_add(&s, "big.yaml", text, len), 0);
	ck_assert_int_eq(sel_scan(&ss, &s, &l), 0);
	ck_assert_uint_eq(ss.n, SEL_MAX_SUPPRESSIONS);
	ck_assert_uint_eq(count_code(&l, "GT002"), 1);
	sel_set_release(&ss);
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "selectors", test_selectors },
		{ "inline", test_inline },
		{ "suppress_and_unused", test_suppress_and_unused },
		{ "filter", test_filter },
		{ "merge_same", test_merge_same },
		{ "path_normal", test_path_normal },
		{ "limit", test_limit },
	};

	return run_cases("select", cases, sizeof(cases) / sizeof(*cases), 0);
}
