/*
 * Tests for diag: sources and lines, adding findings, limits, order, and the
 * exact text, JSON and SARIF outputs.
 */
#include <check.h>
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "diag.h"
#include "version.h"
#include "harness.h"

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	ck_assert_ptr_nonnull(d);
	return d;
}

static int add_text(struct src_set *s, const char *name, const char *text)
{
	return src_add(s, name, xstrdup(text), strlen(text));
}

/* The line `line` of source id as a fresh string, or NULL when none. */
static char *line_of(struct src_set *s, int id, int line)
{
	const char *p;
	size_t n;

	if (src_line(s, id, line, &p, &n) < 0)
		return NULL;
	return strndup(p, n);
}

#define ck_line(s, id, line, want)                          \
	do {                                                \
		char *got_ = line_of(s, id, line);          \
		ck_assert_ptr_nonnull(got_);                \
		ck_assert_str_eq(got_, want);               \
		free(got_);                                 \
	} while (0)

/* What print writes for l, as a fresh NUL-terminated string. */
enum out { OUT_TEXT, OUT_JSON, OUT_SARIF };
static char *render(const struct diag_list *l, enum out how)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	ck_assert_ptr_nonnull(f);
	rc = how == OUT_TEXT ? diag_print_text(f, l, 0)
	   : how == OUT_JSON ? diag_print_json(f, l)
			     : diag_print_sarif(f, l);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(rc, 0);
	return buf;
}

static json_t *render_json(const struct diag_list *l, enum out how)
{
	char *buf = render(l, how);
	json_error_t err;
	json_t *j;
	size_t n = strlen(buf);

	ck_assert_uint_gt(n, 2);
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_int_ne(buf[n - 2], '\n');
	j = json_loads(buf, 0, &err);
	ck_assert_msg(j != NULL, "bad JSON: %s", err.text);
	free(buf);
	return j;
}

/* ---- sources -------------------------------------------------------- */

START_TEST(test_src_lines)
{
	struct src_set s;
	int a, b, c, d, e;

	src_set_init(&s);
	a = add_text(&s, "a.yaml", "one\ntwo\r\nthree\rfour");
	b = add_text(&s, "b.yaml", "x: 1\n");
	c = src_add(&s, "gone.yaml", NULL, 0);
	d = add_text(&s, "u.yaml", "\xEF\xBB\xBF" "k\xC2\x85l\xE2\x80\xA8m\xE2\x80\xA9n");
	e = add_text(&s, SRC_CMDLINE, "a.b=1 +c=2");
	ck_assert_int_eq(a, 0);
	ck_assert_int_eq(e, 4);
	ck_assert_str_eq(src_name(&s, b), "b.yaml");
	ck_assert_ptr_null(src_name(&s, -1));
	ck_assert_ptr_null(src_name(&s, 5));

	ck_line(&s, a, 1, "one");
	ck_line(&s, a, 2, "two");
	ck_line(&s, a, 3, "three");
	ck_line(&s, a, 4, "four");
	ck_assert_ptr_null(line_of(&s, a, 5));
	ck_assert_ptr_null(line_of(&s, a, 0));
	/* The empty rest after a final break is a line (end-of-file marks). */
	ck_line(&s, b, 1, "x: 1");
	ck_line(&s, b, 2, "");
	ck_assert_ptr_null(line_of(&s, b, 3));
	ck_assert_ptr_null(line_of(&s, c, 1));
	/* NEL, LS and PS break lines, as in libyaml; the BOM is not text. */
	ck_line(&s, d, 1, "k");
	ck_line(&s, d, 2, "l");
	ck_line(&s, d, 3, "m");
	ck_line(&s, d, 4, "n");

	ck_assert(src_is_file(&s, a));
	ck_assert(!src_is_file(&s, e));
	ck_assert(!src_is_file(&s, -1));
	src_set_release(&s);
}
END_TEST

START_TEST(test_src_many_lines)
{
	struct src_set s;
	char *text = malloc(1000 * 8 + 1), *p = text, want[16];

	ck_assert_ptr_nonnull(text);
	for (int i = 1; i <= 1000; i++)
		p += sprintf(p, "l%d\n", i);
	src_set_init(&s);
	ck_assert_int_eq(src_add(&s, "big.yaml", text, (size_t)(p - text)), 0);
	ck_assert_uint_eq(s.v[0].n_lines, 1001);
	for (int i = 1; i <= 1000; i++) {
		snprintf(want, sizeof(want), "l%d", i);
		ck_line(&s, 0, i, want);
	}
	src_set_release(&s);
}
END_TEST

/* ---- adding --------------------------------------------------------- */

START_TEST(test_add_hint_note)
{
	struct src_set s;
	struct diag_list l;
	struct diag *d;
	char *f;

	src_set_init(&s);
	add_text(&s, "t.yaml", "a: 1\n");
	diag_list_init(&l, &s);
	d = diag_add(&l, "gt203", (struct diag_loc){ 0, 1, 1 }, "policy.a",
		     "unknown key '%s'", "a");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_eq(d->rule, diag_rule_find("GT203"));
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	ck_assert_str_eq(d->msg, "unknown key 'a'");
	ck_assert_str_eq(d->path, "policy.a");
	ck_assert_str_eq(diag_code(d), "GT203");
	ck_assert_ptr_null(d->hint);
	diag_hint(d, "first %d", 1);
	diag_hint(d, "did you mean '%s'?", "b");
	ck_assert_str_eq(d->hint, "did you mean 'b'?");
	diag_note(d, DIAG_NOLOC, "n%d", 1);
	diag_note(d, (struct diag_loc){ 0, 1, 4 }, "n%d", 2);
	ck_assert_uint_eq(d->n_notes, 2);
	ck_assert_str_eq(d->notes[1].msg, "n2");
	ck_assert_int_eq(d->notes[1].loc.col, 4);
	diag_hint(NULL, "x");
	diag_note(NULL, DIAG_NOLOC, "x");

	d = diag_add(&l, "GT999", DIAG_NOLOC, NULL, "oops");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_null(d->rule);
	ck_assert_int_eq(d->severity, DIAG_ERROR);
	ck_assert_str_eq(diag_code(d), "GT999");
	ck_assert_ptr_null(d->path);
	ck_assert_str_eq(diag_code(NULL), "?");
	ck_assert_uint_eq(diag_count(&l, DIAG_ERROR), 1);
	ck_assert_uint_eq(diag_count(&l, DIAG_WARNING), 1);
	ck_assert_uint_eq(diag_count(&l, DIAG_NOTE), 0);

	f = diag_fmt("%s-%03d", "x", 7);
	ck_assert_str_eq(f, "x-007");
	free(f);
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

START_TEST(test_limit)
{
	struct diag_list l;
	char *out, *last;

	diag_list_init(&l, NULL);
	for (int i = 0; i < DIAG_MAX_COUNT; i++)
		ck_assert_ptr_nonnull(diag_add(&l, "GT203", DIAG_NOLOC, NULL, "w%d", i));
	ck_assert_ptr_null(diag_add(&l, "GT303", DIAG_NOLOC, NULL, "e"));
	ck_assert_ptr_null(diag_add(&l, "GT303", DIAG_NOLOC, NULL, "e"));
	ck_assert_ptr_null(diag_add(&l, "GT113", DIAG_NOLOC, NULL, "n"));
	ck_assert_uint_eq(l.n, DIAG_MAX_COUNT);
	ck_assert_uint_eq(l.n_dropped, 3);
	/* Dropped errors still count, so the exit status stays right. */
	ck_assert_uint_eq(diag_count(&l, DIAG_ERROR), 2);
	ck_assert_uint_eq(diag_count(&l, DIAG_WARNING), DIAG_MAX_COUNT);
	ck_assert_uint_eq(diag_count(&l, DIAG_NOTE), 1);
	out = render(&l, OUT_TEXT);
	out[strlen(out) - 1] = '\0';
	last = strrchr(out, '\n');
	ck_assert_ptr_nonnull(last);
	ck_assert_str_eq(last, "\ngtplan: 2 errors, 10000 warnings, 1 note "
			       "(3 more diagnostics dropped)");
	free(out);
	diag_list_release(&l);
}
END_TEST

/* ---- order ---------------------------------------------------------- */

START_TEST(test_sort)
{
	struct src_set s;
	struct diag_list l;
	static const char *want[] = { "none1", "none2", "a-1-1", "a-2-3",
				      "a-2-5-GT200", "a-2-5-GT303", "a-2-5-GT303b",
				      "b-1-1" };

	src_set_init(&s);
	add_text(&s, "b.yaml", "x\n");
	add_text(&s, "a.yaml", "x\n");
	diag_list_init(&l, &s);
	diag_add(&l, "GT303", (struct diag_loc){ 1, 2, 5 }, NULL, "a-2-5-GT303");
	diag_add(&l, "GT200", (struct diag_loc){ 0, 1, 1 }, NULL, "b-1-1");
	diag_add(&l, "GT303", DIAG_NOLOC, NULL, "none1");
	diag_add(&l, "GT303", (struct diag_loc){ 1, 2, 5 }, NULL, "a-2-5-GT303b");
	diag_add(&l, "GT200", (struct diag_loc){ 1, 2, 5 }, NULL, "a-2-5-GT200");
	diag_add(&l, "GT200", (struct diag_loc){ 1, 2, 3 }, NULL, "a-2-3");
	diag_add(&l, "GT100", DIAG_NOLOC, NULL, "none2");
	diag_add(&l, "GT303", (struct diag_loc){ 1, 1, 1 }, NULL, "a-1-1");
	diag_sort(&l);
	ck_assert_uint_eq(l.n, 8);
	/* Without a location the code decides: GT100 before GT303. */
	ck_assert_str_eq(l.v[0].msg, "none2");
	ck_assert_str_eq(l.v[1].msg, "none1");
	for (size_t i = 2; i < l.n; i++)
		ck_assert_str_eq(l.v[i].msg, want[i]);
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

/* ---- text ----------------------------------------------------------- */

START_TEST(test_text)
{
	struct src_set s;
	struct diag_list l;
	struct diag *d;
	char *out;

	src_set_init(&s);
	add_text(&s, "cfg/train.yaml",
		 "cluster:\n  num_nodes: 3\npolicy:\n\tmegatron_cfg:\n"
		 "\t\ttensor_model_parallel_size: 4\n\n\n\n\n\n\n\t\tx: 1\n");
	diag_list_init(&l, &s);
	d = diag_add(&l, "GT303", (struct diag_loc){ 0, 12, 3 },
		     "policy.megatron_cfg.x", "24 GPUs are not a multiple of %d", 16);
	diag_hint(d, "use %d nodes", 4);
	diag_note(d, (struct diag_loc){ 0, 2, 14 }, "'num_nodes' set here");
	diag_note(d, DIAG_NOLOC, "M = TP x CP x G x PP");
	diag_add(&l, "GT203", (struct diag_loc){ 0, 5, 3 }, NULL, "unknown key");
	diag_add(&l, "GT113", DIAG_NOLOC, NULL, "HOME is unset");
	diag_sort(&l);
	out = render(&l, OUT_TEXT);
	ck_assert_str_eq(out,
		"gtplan: note[GT113]: HOME is unset\n"
		"cfg/train.yaml:5:3: warning[GT203]: unknown key\n"
		" 5 | \t\ttensor_model_parallel_size: 4\n"
		"   | \t\t^\n"
		"cfg/train.yaml:12:3: error[GT303]: 24 GPUs are not a multiple of 16\n"
		" 12 | \t\tx: 1\n"
		"    | \t\t^\n"
		"    = hint: use 4 nodes\n"
		"cfg/train.yaml:2:14: note: 'num_nodes' set here\n"
		"  2 |   num_nodes: 3\n"
		"    |              ^\n"
		"    = note: M = TP x CP x G x PP\n"
		"gtplan: 1 error, 1 warning, 1 note\n");
	free(out);
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

START_TEST(test_text_edges)
{
	struct src_set s;
	struct diag_list l;
	char *out, *line = malloc(1000 + 1), *want;

	ck_assert_ptr_nonnull(line);
	for (int i = 0; i < 1000; i++)
		line[i] = (char)('a' + i % 26);
	line[1000] = '\0';
	src_set_init(&s);
	add_text(&s, "long.yaml", line);
	add_text(&s, "ctl.yaml", "k: \"\033[31m\xC2\x9B\"\n");
	src_add(&s, "gone.yaml", NULL, 0);
	diag_list_init(&l, &s);
	diag_add(&l, "GT100", (struct diag_loc){ 0, 1, 501 }, NULL, "long");
	diag_add(&l, "GT100", (struct diag_loc){ 1, 1, 4 }, NULL, "bell\a");
	diag_add(&l, "GT104", (struct diag_loc){ 2, 3, 1 }, NULL, "no text");
	diag_add(&l, "GT104", (struct diag_loc){ 2, 0, 0 }, NULL, "no line");
	out = render(&l, OUT_TEXT);
	want = diag_fmt("long.yaml:1:501: error[GT100]: long\n"
			" 1 | ...%.*s...\n"
			"   |    %*s^\n"
			"ctl.yaml:1:4: error[GT100]: bell?\n"
			" 1 | k: \"?[31m?\"\n"
			"   |    ^\n"
			"gone.yaml:3:1: error[GT104]: no text\n"
			"gone.yaml: error[GT104]: no line\n"
			"gtplan: 4 errors, 0 warnings, 0 notes\n",
			DIAG_EXCERPT_MAX, line + 500 - DIAG_EXCERPT_MAX / 2,
			DIAG_EXCERPT_MAX / 2, "");
	ck_assert_str_eq(out, want);
	free(out);
	free(want);
	diag_list_release(&l);

	diag_list_init(&l, &s);
	out = render(&l, OUT_TEXT);
	ck_assert_str_eq(out, "gtplan: no findings\n");
	free(out);
	diag_list_release(&l);
	free(line);
	src_set_release(&s);
}
END_TEST

/* ---- JSON ----------------------------------------------------------- */

START_TEST(test_json)
{
	struct src_set s;
	struct diag_list l;
	struct diag *d;
	json_t *j, *v, *n;

	src_set_init(&s);
	add_text(&s, "t.yaml", "a: 1\n");
	add_text(&s, "\xFF" "bad.yaml", "b: 1\n");
	diag_list_init(&l, &s);
	d = diag_add(&l, "GT301", (struct diag_loc){ 0, 1, 4 }, "a", "bad '%s'", "a");
	diag_hint(d, "set it to 8");
	diag_note(d, (struct diag_loc){ 0, 1, 1 }, "here");
	diag_note(d, DIAG_NOLOC, "free");
	diag_add(&l, "GT999", DIAG_NOLOC, NULL, "unknown");
	diag_add(&l, "GT203", (struct diag_loc){ 1, 1, 1 }, NULL, "w");
	j = render_json(&l, OUT_JSON);

	ck_assert_str_eq(json_string_value(json_object_get(j, "format")),
			 "gtplan-diagnostics/1");
	v = json_object_get(j, "tool");
	ck_assert_str_eq(json_string_value(json_object_get(v, "name")), "gtplan");
	ck_assert_str_eq(json_string_value(json_object_get(v, "version")),
			 GTPLAN_VERSION);
	v = json_object_get(j, "summary");
	ck_assert_int_eq(json_integer_value(json_object_get(v, "errors")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "warnings")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "notes")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "dropped")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "suppressed")), 0);

	v = json_object_get(j, "diagnostics");
	ck_assert_uint_eq(json_array_size(v), 3);
	n = json_array_get(v, 0);
	ck_assert_uint_eq(json_object_size(n), 11);
	ck_assert_uint_eq(json_array_size(json_object_get(n, "configs")), 0);
	ck_assert_str_eq(json_string_value(json_object_get(n, "code")), "GT301");
	ck_assert_str_eq(json_string_value(json_object_get(n, "name")),
			 "shards-not-multiple");
	ck_assert_str_eq(json_string_value(json_object_get(n, "severity")), "error");
	ck_assert_str_eq(json_string_value(json_object_get(n, "file")), "t.yaml");
	ck_assert_int_eq(json_integer_value(json_object_get(n, "line")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(n, "column")), 4);
	ck_assert_str_eq(json_string_value(json_object_get(n, "path")), "a");
	ck_assert_str_eq(json_string_value(json_object_get(n, "message")), "bad 'a'");
	ck_assert_str_eq(json_string_value(json_object_get(n, "hint")), "set it to 8");
	n = json_object_get(n, "notes");
	ck_assert_uint_eq(json_array_size(n), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(n, 0), "file")),
			 "t.yaml");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(n, 0), "column")), 1);
	ck_assert(json_is_null(json_object_get(json_array_get(n, 1), "file")));
	ck_assert(json_is_null(json_object_get(json_array_get(n, 1), "line")));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(n, 1), "message")),
			 "free");

	/* Absent values are null; every key is there. */
	n = json_array_get(v, 1);
	ck_assert_uint_eq(json_object_size(n), 11);
	ck_assert_str_eq(json_string_value(json_object_get(n, "code")), "GT999");
	ck_assert(json_is_null(json_object_get(n, "name")));
	ck_assert(json_is_null(json_object_get(n, "file")));
	ck_assert(json_is_null(json_object_get(n, "column")));
	ck_assert(json_is_null(json_object_get(n, "path")));
	ck_assert(json_is_null(json_object_get(n, "hint")));
	ck_assert_uint_eq(json_array_size(json_object_get(n, "notes")), 0);
	/* Invalid UTF-8 in a name is repaired, not a failed output. */
	n = json_array_get(v, 2);
	ck_assert_str_eq(json_string_value(json_object_get(n, "file")),
			 "\xEF\xBF\xBD" "bad.yaml");
	json_decref(j);
	diag_list_release(&l);

	diag_list_init(&l, &s);
	j = render_json(&l, OUT_JSON);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "diagnostics")), 0);
	json_decref(j);
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

/* ---- SARIF ---------------------------------------------------------- */

START_TEST(test_sarif)
{
	struct src_set s;
	struct diag_list l;
	struct diag *d;
	json_t *j, *run, *rules, *res, *r, *loc;
	size_t i;

	src_set_init(&s);
	add_text(&s, "./cfg/my train.yaml", "a: 1\n");
	add_text(&s, SRC_CMDLINE, "a=2");
	diag_list_init(&l, &s);
	d = diag_add(&l, "GT303", (struct diag_loc){ 0, 1, 4 }, NULL, "world");
	diag_hint(d, "use 16");
	diag_note(d, (struct diag_loc){ 0, 1, 1 }, "set here");
	diag_note(d, (struct diag_loc){ 1, 1, 1 }, "overridden");
	d = diag_add(&l, "GT121", (struct diag_loc){ 1, 1, 1 }, NULL,
		     "no key 'a'");
	ck_assert_int_eq(diag_add_config(d, "cfg/../cfg/./my train.yaml"), 0);
	diag_add(&l, "GT999", DIAG_NOLOC, NULL, "unknown");
	d = diag_add(&l, "GT104", DIAG_NOLOC, NULL, "cannot read 'x.yaml'");
	ck_assert_int_eq(diag_add_config(d, "x.yaml"), 0);
	j = render_json(&l, OUT_SARIF);

	ck_assert_str_eq(json_string_value(json_object_get(j, "version")), "2.1.0");
	ck_assert_str_eq(json_string_value(json_object_get(j, "$schema")),
			 "https://json.schemastore.org/sarif-2.1.0.json");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "runs")), 1);
	run = json_array_get(json_object_get(j, "runs"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(run, "columnKind")),
			 "unicodeCodePoints");
	r = json_object_get(json_object_get(run, "tool"), "driver");
	ck_assert_str_eq(json_string_value(json_object_get(r, "name")), "gtplan");
	ck_assert_str_eq(json_string_value(json_object_get(r, "version")),
			 GTPLAN_VERSION);
	ck_assert_str_eq(json_string_value(json_object_get(r, "informationUri")),
			 GTPLAN_HOME_URL);
	rules = json_object_get(r, "rules");
	ck_assert_uint_eq(json_array_size(rules), diag_rule_count());
	for (i = 0; i < diag_rule_count(); i++) {
		const struct diag_rule *dr = diag_rule_at(i);

		r = json_array_get(rules, i);
		ck_assert_str_eq(json_string_value(json_object_get(r, "id")), dr->code);
		ck_assert_str_eq(json_string_value(json_object_get(r, "name")), dr->name);
		/* helpUri: the rule's anchor on docs/rules.md ("#gt303") */
		ck_assert_str_eq(json_string_value(json_object_get(r, "helpUri")) +
				 strlen(GTPLAN_RULES_URL) + 3, dr->code + 2);
		ck_assert_int_eq(strncmp(json_string_value(json_object_get(
			r, "helpUri")), GTPLAN_RULES_URL "#gt", strlen(
			GTPLAN_RULES_URL) + 3), 0);
		ck_assert_str_eq(json_string_value(json_object_get(
			json_object_get(r, "shortDescription"), "text")), dr->summary);
		ck_assert_str_eq(json_string_value(json_object_get(
			json_object_get(r, "fullDescription"), "text")), dr->summary);
		ck_assert_str_eq(json_string_value(json_object_get(
			json_object_get(r, "help"), "text")), dr->explanation);
		ck_assert_str_eq(json_string_value(json_object_get(
			json_object_get(r, "defaultConfiguration"), "level")),
			diag_severity_name(dr->severity));
	}

	res = json_object_get(run, "results");
	ck_assert_uint_eq(json_array_size(res), 2);
	r = json_array_get(res, 0);
	ck_assert_str_eq(json_string_value(json_object_get(r, "ruleId")), "GT303");
	i = (size_t)json_integer_value(json_object_get(r, "ruleIndex"));
	ck_assert_ptr_eq(diag_rule_at(i), diag_rule_find("GT303"));
	ck_assert_str_eq(json_string_value(json_object_get(r, "level")), "error");
	ck_assert_str_eq(json_string_value(json_object_get(
		json_object_get(r, "message"), "text")), "world Hint: use 16");
	ck_assert_uint_eq(json_array_size(json_object_get(r, "locations")), 1);
	loc = json_object_get(json_array_get(json_object_get(r, "locations"), 0),
			      "physicalLocation");
	ck_assert_str_eq(json_string_value(json_object_get(
		json_object_get(loc, "artifactLocation"), "uri")), "cfg/my%20train.yaml");
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(loc, "region"), "startLine")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(loc, "region"), "startColumn")), 4);
	loc = json_object_get(r, "relatedLocations");
	ck_assert_uint_eq(json_array_size(loc), 2);
	ck_assert_ptr_nonnull(json_object_get(json_array_get(loc, 0), "physicalLocation"));
	ck_assert_ptr_null(json_object_get(json_array_get(loc, 1), "physicalLocation"));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
		json_array_get(loc, 1), "message"), "text")), "overridden");

	/* The command line is not a file: the finding is shown on line 1 of
	 * its config (normalised: no '.' or '..' segment), its place and text
	 * first in the message. */
	r = json_array_get(res, 1);
	ck_assert_str_eq(json_string_value(json_object_get(r, "ruleId")), "GT121");
	loc = json_object_get(json_array_get(json_object_get(r, "locations"), 0),
			      "physicalLocation");
	ck_assert_str_eq(json_string_value(json_object_get(
		json_object_get(loc, "artifactLocation"), "uri")), "cfg/my%20train.yaml");
	ck_assert_int_eq(json_integer_value(json_object_get(
		json_object_get(loc, "region"), "startLine")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(
		json_object_get(r, "message"), "text")),
		"command line:1:1 ('a=2'): no key 'a'");
	ck_assert_ptr_null(json_object_get(r, "relatedLocations"));
	/* Unplaced (no file, no config; or the config unreadable): the
	 * invocation's notifications, and it did not succeed. An unknown code
	 * has no rule to index. */
	r = json_array_get(json_object_get(run, "invocations"), 0);
	ck_assert(json_is_false(json_object_get(r, "executionSuccessful")));
	r = json_object_get(r, "toolExecutionNotifications");
	ck_assert_uint_eq(json_array_size(r), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
		json_array_get(r, 0), "descriptor"), "id")), "GT999");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
		json_array_get(r, 1), "descriptor"), "id")), "GT104");
	json_decref(j);
	diag_list_release(&l);
	src_set_release(&s);
}
END_TEST

/* ---- rules ---------------------------------------------------------- */

START_TEST(test_rule_lookup)
{
	ck_assert_ptr_nonnull(diag_rule_find("GT303"));
	ck_assert_ptr_eq(diag_rule_find("gt303"), diag_rule_find("GT303"));
	ck_assert_str_eq(diag_rule_find("gT303")->name, "world-not-divisible");
	ck_assert_ptr_null(diag_rule_find("GT3030"));
	ck_assert_ptr_null(diag_rule_find(""));
	ck_assert_ptr_null(diag_rule_find(NULL));
	ck_assert_ptr_null(diag_rule_at(diag_rule_count()));
	ck_assert_str_eq(diag_severity_name(DIAG_NOTE), "note");
	ck_assert_str_eq(diag_severity_name(DIAG_WARNING), "warning");
	ck_assert_str_eq(diag_severity_name(DIAG_ERROR), "error");
}
END_TEST

static int kebab(const char *s)
{
	if (!islower((unsigned char)*s))
		return 0;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) ||
		      (*s == '-' && s[1] && s[1] != '-')))
			return 0;
	return 1;
}

START_TEST(test_rule_table)
{
	size_t n = diag_rule_count();

	ck_assert_uint_gt(n, 0);
	for (size_t i = 0; i < n; i++) {
		const struct diag_rule *r = diag_rule_at(i);

		ck_assert_msg(strlen(r->code) == 5 && !strncmp(r->code, "GT", 2) &&
			      isdigit((unsigned char)r->code[2]) &&
			      isdigit((unsigned char)r->code[3]) &&
			      isdigit((unsigned char)r->code[4]),
			      "bad code '%s'", r->code);
		ck_assert_msg(kebab(r->name), "'%s' is not kebab-case", r->name);
		ck_assert_msg(r->summary[0] && r->explanation[0], "%s: empty text",
			      r->code);
		ck_assert_msg(!strchr(r->summary, '\n'), "%s: summary is not one line",
			      r->code);
		ck_assert(r->severity >= DIAG_NOTE && r->severity <= DIAG_ERROR);
		ck_assert_ptr_eq(diag_rule_find(r->code), r);
		for (size_t k = 0; k < i; k++) {
			ck_assert_msg(strcasecmp(diag_rule_at(k)->code, r->code),
				      "duplicate code %s", r->code);
			ck_assert_msg(strcmp(diag_rule_at(k)->name, r->name),
				      "duplicate name %s", r->name);
		}
	}
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "src_lines", test_src_lines },
		{ "src_many_lines", test_src_many_lines },
		{ "add_hint_note", test_add_hint_note },
		{ "limit", test_limit },
		{ "sort", test_sort },
		{ "text", test_text },
		{ "text_edges", test_text_edges },
		{ "json", test_json },
		{ "sarif", test_sarif },
		{ "rule_lookup", test_rule_lookup },
		{ "rule_table", test_rule_table },
	};

	return RUN_CASES("diag", cases, 0);
}
