/*
 * Schema tests: the JSON Schema subset (types, ranges, choices, required,
 * additionalProperties, anyOf/oneOf/allOf/not, $ref, patterns, lists),
 * schema loading errors, hand-built trees and limits. "Did you mean" and
 * the built-in config schema are tested in tests/test_schema_config.c.
 *
 * Schemas are written with single quotes for readability; sq() turns them
 * into JSON. Configs are parsed from YAML text, so locations are real.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "schema.h"
#include "harness.h"
#include "schema_fixture.h"

/* Validates one YAML value (written after "v: ", since a config document
 * is a map) against a schema of its own; the value has no path. */
static int run_v(struct fx *f, const char *schema, const char *value)
{
	size_t len = strlen(value) + 4;
	char *yaml = malloc(len);
	char err[256];

	ck_assert_ptr_nonnull(yaml);
	snprintf(yaml, len, "v: %s", value);
	f->s = load_sq(schema, err, sizeof(err));
	ck_assert_msg(f->s != NULL, "schema does not load: %s", err);
	parse(f, yaml);
	free(yaml);
	f->errs = schema_validate(f->s, cfg_get(f->root, "v"), &f->diags);
	return f->errs;
}

static size_t count(const struct fx *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strcmp(diag_code(&f->diags.v[i]), code) == 0;
	return n;
}

/* EXPECT (tests/schema_fixture.h) for one value. */
#define EXPECT_V(schema, value, errs, findings)                               \
	do {                                                                  \
		struct fx f_;                                                 \
		fx_init(&f_);                                                 \
		ck_assert_int_eq(run_v(&f_, schema, value), errs);            \
		ck_assert_uint_eq(f_.diags.n, findings);                      \
		fx_release(&f_);                                              \
	} while (0)

#define POS_INT "{'type': 'integer', 'minimum': 1}"

/* ---- types -------------------------------------------------------- */

START_TEST(types_follow_yaml_kinds)
{
	struct fx f;
	const struct diag *d;

	EXPECT_V("{'type': 'integer'}", "7\n", 0, 0);
	EXPECT_V("{'type': 'number'}", "7\n", 0, 0);    /* an int is a number */
	EXPECT_V("{'type': 'number'}", "7.5\n", 0, 0);
	/* 7.0 is an integer (JSON Schema 2020-12), with GT206 about its
	 * spelling (tests/test_schema_ints.c); 7.5 is not */
	EXPECT_V("{'type': 'integer'}", "7.0\n", 0, 1);
	EXPECT_V("{'type': 'integer'}", "7.5\n", 1, 1);
	EXPECT_V("{'type': 'string'}", "'7'\n", 0, 0);
	EXPECT_V("{'type': 'boolean'}", "true\n", 0, 0);
	EXPECT_V("{'type': 'null'}", "~\n", 0, 0);
	EXPECT_V("{'type': 'object'}", "{a: 1}\n", 0, 0);
	EXPECT_V("{'type': 'array'}", "[1]\n", 0, 0);
	EXPECT_V("{'type': ['string', 'null']}", "null\n", 0, 0);
	EXPECT_V("{'type': ['string', 'null']}", "3\n", 1, 1);
	EXPECT_V("{'type': 'array'}", "{}\n", 1, 1);

	fx_init(&f);
	ck_assert_int_eq(run(&f, "{'properties': {'a': {'properties': {'n': "
			     POS_INT "}}}}", "a:\n  n: four\n"), 1);
	d = only(&f, "GT200");
	diag_at(d, 2, 6, "a.n");
	ck_assert_str_eq(d->msg, "expected a positive integer, got string "
			 "\"four\"");
	ck_assert_str_eq(d->hint, "use a positive integer");
	fx_release(&f);

	/* a float with a fractional part, and a quoted number */
	fx_init(&f);
	run(&f, "{'properties': {'n': " POS_INT "}}", "n: 48.5\n");
	d = only(&f, "GT200");
	ck_assert_str_eq(d->msg, "expected a positive integer, got number "
			 "48.5");
	ck_assert_str_eq(d->hint, "use a positive integer");
	fx_release(&f);
	fx_init(&f);
	run(&f, "{'properties': {'n': " POS_INT "}}", "n: \"12\"\n");
	ck_assert_ptr_nonnull(strstr(only(&f, "GT200")->hint,
				     "remove the quotes"));
	fx_release(&f);
	fx_init(&f);
	run(&f, "{'properties': {'b': {'type': 'boolean'}}}", "b: 'yes'\n");
	ck_assert_ptr_nonnull(strstr(only(&f, "GT200")->hint,
				     "remove the quotes"));
	fx_release(&f);
	/* a mismatched type stops the other checks of that schema */
	EXPECT_V("{'type': 'integer', 'minimum': 5, 'enum': [7]}", "x\n", 1, 1);
}
END_TEST

/* ---- ranges ------------------------------------------------------- */

START_TEST(ranges_name_the_bound)
{
	struct fx f;
	const struct diag *d;

	EXPECT_V("{'minimum': 1}", "1\n", 0, 0);
	EXPECT_V("{'minimum': 1}", "0\n", 1, 1);
	EXPECT_V("{'exclusiveMinimum': 0}", "0\n", 1, 1);
	EXPECT_V("{'exclusiveMinimum': 0}", "0.001\n", 0, 0);
	EXPECT_V("{'maximum': 8}", "8\n", 0, 0);
	EXPECT_V("{'maximum': 8}", "8.5\n", 1, 1);
	EXPECT_V("{'exclusiveMaximum': 8}", "8\n", 1, 1);
	EXPECT_V("{'minimum': 0}", ".nan\n", 1, 1);
	EXPECT_V("{'minimum': 1}", "'0'\n", 0, 0); /* ranges only bind numbers */
	EXPECT_V("{'minimum': 9007199254740993}", "9007199254740992\n", 1, 1);

	fx_init(&f);
	run(&f, "{'properties': {'tp': {'$ref': '#/$defs/p', "
		"'examples': [4]}}, '$defs': {'p': " POS_INT "}}",
	    "tp: 0\n");
	d = only(&f, "GT201");
	diag_at(d, 1, 5, "tp");
	ck_assert_str_eq(d->msg, "must be at least 1, got 0");
	ck_assert_str_eq(d->hint, "use a positive integer such as 4");
	fx_release(&f);

	fx_init(&f);
	run_v(&f, "{'type': 'number', 'exclusiveMinimum': 0}", "-2.5\n");
	d = only(&f, "GT201");
	ck_assert_str_eq(d->msg, "must be greater than 0, got -2.5");
	ck_assert_str_eq(d->hint, "use a positive number");
	fx_release(&f);

	/* multipleOf is a shape constraint */
	EXPECT_V("{'multipleOf': 4}", "12\n", 0, 0);
	EXPECT_V("{'multipleOf': 0.5}", "2.5\n", 0, 0);
	EXPECT_V("{'multipleOf': 0.5}", "2.25\n", 1, 1);
	fx_init(&f);
	run_v(&f, "{'multipleOf': 4}", "10\n");
	d = only(&f, "GT205");
	ck_assert_str_eq(d->msg, "must be a multiple of 4, got 10");
	ck_assert_str_eq(d->hint, "use a multiple of 4 such as 8 or 12");
	fx_release(&f);
}
END_TEST

/* ---- enum and const ----------------------------------------------- */

START_TEST(enum_and_const_list_the_choices)
{
	struct fx f;
	const struct diag *d;

	EXPECT_V("{'enum': ['4d', '5d']}", "4d\n", 0, 0);
	EXPECT_V("{'enum': [1, 'x', null]}", "1.0\n", 0, 0); /* 1 == 1.0 */
	EXPECT_V("{'enum': [1, 'x', null]}", "~\n", 0, 0);
	EXPECT_V("{'enum': [[1, 2], {'a': true}]}", "{a: true}\n", 0, 0);
	EXPECT_V("{'enum': [[1, 2], {'a': true}]}", "[1, 3]\n", 1, 1);
	EXPECT_V("{'const': 'tp'}", "tp\n", 0, 0);

	fx_init(&f);
	run(&f, "{'properties': {'layout': {'enum': ['4d', '5d']}}}",
	    "layout: 3d\n");
	d = only(&f, "GT202");
	diag_at(d, 1, 9, "layout");
	ck_assert_str_eq(d->msg, "\"3d\" is not one of the allowed values");
	ck_assert_str_eq(d->hint, "choose one of: \"4d\", \"5d\"");
	fx_release(&f);

	fx_init(&f);
	run_v(&f, "{'enum': ['vllm', 'megatron', 'sglang']}", "sglnag\n");
	ck_assert_str_eq(only(&f, "GT202")->hint, "did you mean \"sglang\"? "
			 "choose one of: \"vllm\", \"megatron\", \"sglang\"");
	fx_release(&f);

	/* a value of another type: a type finding that still lists them */
	fx_init(&f);
	run(&f, "{'properties': {'layout': {'type': 'string', 'enum': ['4d', "
		"'5d'], 'default': '4d'}}}", "layout: 4\n");
	d = only(&f, "GT200");
	ck_assert_str_eq(d->msg, "expected one of \"4d\", \"5d\", got integer "
			 "4");
	ck_assert_str_eq(d->hint, "choose one of: \"4d\", \"5d\"");
	fx_release(&f);

	fx_init(&f);
	run_v(&f, "{'const': 2}", "3\n");
	ck_assert_str_eq(only(&f, "GT202")->msg, "must be 2, got 3");
	fx_release(&f);
}
END_TEST

/* ---- required ----------------------------------------------------- */

START_TEST(required_points_at_the_map)
{
	struct fx f;
	const struct diag *d;
	const char *sch = "{'required': ['cluster'], 'properties': {"
		"'cluster': {'required': ['num_nodes', 'gpus_per_node'], "
		"'properties': {'gpus_per_node': {'description': 'GPUs on "
		"each node. More text.', 'examples': [8]}}}}}";

	fx_init(&f);
	ck_assert_int_eq(run(&f, sch, "x: 1\ncluster:\n  num_nodes: 2\n"), 1);
	d = only(&f, "GT204");
	diag_at(d, 2, 1, "cluster.gpus_per_node");
	ck_assert_str_eq(d->msg, "missing required key 'gpus_per_node' in "
			 "'cluster'");
	ck_assert_str_eq(d->hint, "add 'gpus_per_node: 8' under 'cluster' "
			 "(GPUs on each node)");
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(run(&f, sch, "x: 1\n"), 1);
	d = only(&f, "GT204");
	ck_assert_str_eq(d->path, "cluster");
	ck_assert_str_eq(d->msg, "missing required key 'cluster'");
	fx_release(&f);

	/* both missing: two findings; a null value counts as present */
	EXPECT(sch, "cluster: {}\n", 2, 2);
	EXPECT(sch, "cluster: {num_nodes: ~, gpus_per_node: ~}\n", 0, 0);
}
END_TEST

/* ---- additionalProperties and patternProperties ------------------- */

START_TEST(additional_properties_close_or_check_a_map)
{
	struct fx f;
	const struct diag *d;
	const char *closed = "{'properties': {'g': {'additionalProperties': "
		"false, 'properties': {'rank_order': {}, 'driver_layout': "
		"{}}}}}";

	fx_init(&f);
	ck_assert_int_eq(run(&f, closed, "g:\n  rank_ordr: tp\n"), 1);
	d = only(&f, "GT205");
	diag_at(d, 2, 3, "g.rank_ordr");
	ck_assert_str_eq(d->msg, "unknown key 'rank_ordr' in 'g'");
	ck_assert_str_eq(d->hint, "did you mean 'rank_order'?");
	fx_release(&f);

	/* far from every key: the hint lists them */
	fx_init(&f);
	run(&f, closed, "g:\n  colour: red\n");
	ck_assert_str_eq(only(&f, "GT205")->hint,
			 "the keys allowed in 'g' are: rank_order, "
			 "driver_layout");
	fx_release(&f);
	fx_init(&f);
	run(&f, "{'additionalProperties': false}", "a: 1\n");
	ck_assert_str_eq(only(&f, "GT205")->msg,
			 "unknown key 'a' at the top level");
	ck_assert_str_eq(only(&f, "GT205")->hint,
			 "remove it: no keys are allowed at the top level");
	fx_release(&f);

	/* a schema for the other keys */
	EXPECT("{'properties': {'a': {}}, 'additionalProperties': "
	       "{'type': 'integer'}}", "a: x\nb: 1\nc: 2\n", 0, 0);
	fx_init(&f);
	run(&f, "{'properties': {'a': {}}, 'additionalProperties': "
		"{'type': 'integer'}}", "a: x\nb: 1\nc: two\n");
	diag_at(only(&f, "GT200"), 3, 4, "c");
	fx_release(&f);

	/* patternProperties match unanchored and take the key out of the
	 * unknown ones */
	EXPECT("{'patternProperties': {'^x_': {'type': 'integer'}}, "
	       "'additionalProperties': false}", "x_a: 1\nx_b: 2\n", 0, 0);
	EXPECT("{'patternProperties': {'^x_': {'type': 'integer'}}, "
	       "'additionalProperties': false}", "x_a: s\ny: 2\n", 2, 2);
	EXPECT_V("{'minProperties': 1, 'maxProperties': 2}", "{}\n", 1, 1);
	EXPECT_V("{'minProperties': 1, 'maxProperties': 2}", "{a: 1, b: 2, c: "
	       "3}\n", 1, 1);
}
END_TEST

/* ---- anyOf / oneOf / allOf / not ---------------------------------- */

START_TEST(choices_report_one_finding)
{
	struct fx f;
	const struct diag *d;
	const char *any = "{'properties': {'s': {'anyOf': [" POS_INT ", "
		"{'type': 'null'}], 'examples': [12]}}}";

	EXPECT(any, "s: 12\n", 0, 0);
	EXPECT(any, "s: null\n", 0, 0);

	fx_init(&f);
	ck_assert_int_eq(run(&f, any, "s: four\n"), 1);
	d = only(&f, "GT200");
	diag_at(d, 1, 4, "s");
	ck_assert_str_eq(d->msg, "expected a positive integer or null, got "
			 "string \"four\"");
	ck_assert_str_eq(d->hint, "use a positive integer or null such as 12");
	fx_release(&f);

	/* the type fits one branch: that branch's finding */
	fx_init(&f);
	ck_assert_int_eq(run(&f, any, "s: 0\n"), 1);
	ck_assert_str_eq(only(&f, "GT201")->msg, "must be at least 1, got 0");
	fx_release(&f);

	/* the same through a type list */
	fx_init(&f);
	run_v(&f, "{'type': ['integer', 'null'], 'minimum': 1}", "true\n");
	ck_assert_str_eq(only(&f, "GT200")->msg, "expected a positive integer "
			 "or null, got boolean true");
	fx_release(&f);

	/* oneOf: exactly one */
	EXPECT_V("{'oneOf': [{'type': 'integer'}, {'type': 'string'}]}", "3\n",
	       0, 0);
	fx_init(&f);
	run_v(&f, "{'oneOf': [{'type': 'integer'}, {'minimum': 0}]}", "3\n");
	ck_assert_ptr_nonnull(strstr(only(&f, "GT205")->msg,
				     "more than one of the allowed forms"));
	fx_release(&f);

	/* allOf: every branch; not: the branch must fail */
	EXPECT_V("{'allOf': [{'minimum': 2}, {'maximum': 1}]}", "5\n", 1, 1);
	EXPECT_V("{'allOf': [{'minimum': 2}, {'multipleOf': 2}]}", "1\n", 2, 2);
	EXPECT_V("{'not': {'type': 'string'}}", "5\n", 0, 0);
	fx_init(&f);
	run_v(&f, "{'not': {'const': 'gtp_weight_remat_size'}}",
	    "gtp_weight_remat_size\n");
	only(&f, "GT205");
	fx_release(&f);

	/* a warning inside the branch that matched is reported once */
	fx_init(&f);
	ck_assert_int_eq(run(&f, "{'anyOf': [{'type': 'integer'}, "
			     "{'properties': {'num_nodes': {}}}]}",
			     "num_node: 1\n"), 0);
	only(&f, "GT203");
	fx_release(&f);
}
END_TEST

/* ---- $ref ---------------------------------------------------------- */

START_TEST(refs_follow_local_pointers)
{
	struct fx f;

	EXPECT_V("{'$ref': '#/$defs/p', '$defs': {'p': " POS_INT "}}", "3\n",
	       0, 0);
	EXPECT_V("{'$ref': '#/$defs/p', '$defs': {'p': " POS_INT "}}", "0\n",
	       1, 1);
	/* ~1 is '/', ~0 is '~' in a pointer; arrays by index */
	EXPECT_V("{'$ref': '#/$defs/a~1b~0c', '$defs': {'a/b~c': "
	       "{'type': 'string'}}}", "1\n", 1, 1);
	EXPECT_V("{'$ref': '#/allOf/1', 'allOf': [{}, {'type': 'string'}]}",
	       "1\n", 2, 2);
	/* a recursive schema over a recursive value */
	EXPECT("{'type': 'object', 'additionalProperties': {'$ref': '#'}}",
	       "a: {b: {c: {}}}\n", 0, 0);
	EXPECT("{'type': 'object', 'additionalProperties': {'$ref': '#'}}",
	       "a: {b: {c: 1}}\n", 1, 1);

	/* a $ref cycle that never reaches into the value is found, with one
	 * finding */
	fx_init(&f);
	ck_assert_int_eq(run_v(&f, "{'$ref': '#/$defs/a', '$defs': {'a': "
			     "{'$ref': '#/$defs/b'}, 'b': {'$ref': "
			     "'#/$defs/a'}}}", "1\n"), 1);
	ck_assert_ptr_nonnull(strstr(only(&f, "GT205")->msg,
				     "refers back to itself"));
	fx_release(&f);

	/* an anyOf of cycles: every probe stops too, quickly */
	fx_init(&f);
	ck_assert_int_ge(run_v(&f, "{'anyOf': [{'$ref': '#'}, {'$ref': '#'}, "
			     "{'$ref': '#'}]}", "{a: [1, 2]}\n"), 1);
	ck_assert_uint_eq(count(&f, "GT205"), 1);
	fx_release(&f);
}
END_TEST

/* ---- strings -------------------------------------------------------- */

START_TEST(patterns_are_unanchored_posix)
{
	struct fx f;
	const struct diag *d;
	const char *order = "{'properties': {'rank_order': {'type': 'string', "
		"'pattern': '^(tp|cp|gtp|gtp_remat|ep|dp|pp)"
		"(-(tp|cp|gtp|gtp_remat|ep|dp|pp))*$', 'examples': "
		"['tp-cp-gtp-ep-dp-pp']}}}";

	EXPECT_V("{'pattern': 'b+'}", "abbc\n", 0, 0);
	EXPECT_V("{'pattern': '^b+$'}", "abbc\n", 1, 1);
	EXPECT(order, "rank_order: tp-gtp_remat-cp-ep-dp-pp\n", 0, 0);
	EXPECT(order, "rank_order: tp-cp-gtp-ep-dp-pp\n", 0, 0);
	fx_init(&f);
	run(&f, order, "rank_order: tp-xx-dp\n");
	d = only(&f, "GT205");
	diag_at(d, 1, 13, "rank_order");
	ck_assert_ptr_nonnull(strstr(d->msg, "\"tp-xx-dp\" does not match"));
	ck_assert_str_eq(d->hint, "write it like \"tp-cp-gtp-ep-dp-pp\"");
	fx_release(&f);
	EXPECT(order, "rank_order: tp,cp\n", 1, 1);

	/* lengths count code points, not bytes */
	EXPECT_V("{'minLength': 2, 'maxLength': 3}", "\"\xc3\xa9\xc3\xa9\"\n",
	       0, 0);
	EXPECT_V("{'minLength': 2}", "\"\xc3\xa9\"\n", 1, 1);
	EXPECT_V("{'maxLength': 3}", "abcd\n", 1, 1);
}
END_TEST

/* ---- lists ---------------------------------------------------------- */

START_TEST(items_have_index_paths)
{
	struct fx f;

	EXPECT_V("{'items': {'type': 'integer'}, 'minItems': 1}", "[1, 2]\n", 0,
	       0);
	EXPECT_V("{'items': {'type': 'integer'}, 'minItems': 1}", "[]\n", 1, 1);
	EXPECT_V("{'maxItems': 1}", "[1, 2]\n", 1, 1);
	fx_init(&f);
	run(&f, "{'properties': {'calls': {'items': {'required': ['name'], "
		"'properties': {'name': {'type': 'string'}}}}}}",
	    "calls:\n  - name: train\n  - name: 3\n  - {}\n");
	ck_assert_uint_eq(f.diags.n, 2);
	diag_at(&f.diags.v[0], 3, 11, "calls.1.name");
	diag_at(&f.diags.v[1], 4, 5, "calls.2.name");
	fx_release(&f);
}
END_TEST

/* ---- loading the schema ------------------------------------------------ */

START_TEST(bad_schemas_are_refused)
{
	static const struct {
		const char *schema, *why;
	} bad[] = {
		{ "{'type': ", "line 1" },
		{ "{'a': 1, 'a': 2}", "duplicate" },
		{ "{'if': {}}", "'if' is not supported" },
		{ "{'properties': {'x': {'uniqueItems': true}}}",
		  "/properties/x: keyword 'uniqueItems'" },
		{ "{'$ref': '#/$defs/none'}", "does not resolve" },
		{ "{'$ref': 'other.json#/a'}", "does not resolve" },
		{ "{'pattern': '('}", "does not compile" },
		{ "{'patternProperties': {'[': {}}}", "does not compile" },
		{ "{'type': 'int'}", "unknown type" },
		{ "{'type': []}", "'type' must be" },
		{ "{'minimum': '1'}", "'minimum' must be a number" },
		{ "{'multipleOf': 0}", "above 0" },
		{ "{'minLength': -1}", "0 or more" },
		{ "{'required': [1]}", "key names" },
		{ "{'items': [{}]}", "'items' must be one schema" },
		{ "{'anyOf': []}", "non-empty list" },
		{ "{'properties': {'a': 3}}", "/properties/a: a schema must" },
		{ "[]", "a schema must be an object" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "unset";
		struct schema *s = load_sq(bad[i].schema, err, sizeof(err));

		ck_assert_msg(s == NULL, "loaded %s", bad[i].schema);
		ck_assert_msg(strstr(err, bad[i].why) != NULL,
			      "%s: got '%s', want '%s'", bad[i].schema, err,
			      bad[i].why);
	}
	/* err may be omitted; booleans are schemas */
	ck_assert_ptr_null(load_sq("{'if': {}}", NULL, 0));
	schema_free(load_sq("true", NULL, 0));
	EXPECT_V("false", "1\n", 1, 1);
	EXPECT("{'properties': {'a': false}}", "a: 1\nb: 2\n", 1, 1);
	schema_free(NULL);
}
END_TEST

/* ---- the tree itself ------------------------------------------------- */

START_TEST(hand_built_trees_and_interpolations)
{
	struct diag_loc l1 = { 0, 3, 5 }, l2 = { 0, 9, 7 };
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root, *v, *s;
	struct schema *sch;

	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	ck_assert_int_ge(src_add(&srcs, "h.yaml", NULL, 0), 0);
	sch = load_sq("{'properties': {'a': " POS_INT ", 'b': " POS_INT "}}",
		      NULL, 0);
	ck_assert_ptr_nonnull(sch);
	root = cfg_new(CFG_MAP, l1);
	/* a: 0, resolved from an interpolation written elsewhere */
	v = cfg_new(CFG_INT, l1);
	v->v.i = 0;
	v->resolved = 1;
	v->origin = l2;
	ck_assert_int_eq(cfg_map_set(root, "a", v), 0);
	/* b: "${oc.env:UNSET}" left unresolved: not checked */
	s = cfg_new_str("${oc.env:UNSET}", l1);
	s->interp = 1;
	ck_assert_int_eq(cfg_map_set(root, "b", s), 0);

	ck_assert_int_eq(schema_validate(sch, root, &diags), 1);
	ck_assert_uint_eq(diags.n, 1);
	ck_assert_str_eq(diag_code(&diags.v[0]), "GT201");
	ck_assert_int_eq(diags.v[0].loc.line, 3);
	ck_assert_uint_eq(diags.v[0].n_notes, 1);
	ck_assert_int_eq(diags.v[0].notes[0].loc.line, 9);
	ck_assert_str_eq(diags.v[0].notes[0].msg, "the value comes from here");
	ck_assert_int_eq(schema_validate(sch, NULL, &diags), 0);

	schema_free(sch);
	cfg_free(root);
	diag_list_release(&diags);
	src_set_release(&srcs);
}
END_TEST

START_TEST(deep_values_and_long_paths)
{
	struct fx f;
	char *yaml = malloc(60 * 200), *p = yaml;

	ck_assert_ptr_nonnull(yaml);
	/* 60 nested maps with 60-byte keys: the path is cut, not overrun */
	for (int i = 0; i < 60; i++)
		p += sprintf(p, "%*s%060d:\n", 2 * i, "", i);
	sprintf(p, "%*sx: 1\n", 120, "");
	fx_init(&f);
	ck_assert_int_eq(run(&f, "{'additionalProperties': {'$ref': '#'}, "
			     "'type': 'object'}", yaml), 1);
	ck_assert_str_eq(diag_code(&f.diags.v[0]), "GT200");
	ck_assert_uint_lt(strlen(f.diags.v[0].path), SCHEMA_MAX_PATH);
	fx_release(&f);
	free(yaml);

	/* a chain of distinct $refs longer than SCHEMA_MAX_DEPTH stops there */
	yaml = malloc(64 * (SCHEMA_MAX_DEPTH + 50));
	ck_assert_ptr_nonnull(yaml);
	p = yaml + sprintf(yaml, "{'$ref': '#/$defs/d0', '$defs': {");
	for (int i = 0; i < SCHEMA_MAX_DEPTH + 20; i++)
		p += sprintf(p, "'d%d': {'$ref': '#/$defs/d%d'}, ", i, i + 1);
	sprintf(p, "'d%d': {'type': 'integer'}}}", SCHEMA_MAX_DEPTH + 20);
	fx_init(&f);
	ck_assert_int_eq(run_v(&f, yaml, "1\n"), 1);
	ck_assert_ptr_nonnull(strstr(only(&f, "GT205")->msg, "nests deeper "
				     "than"));
	fx_release(&f);
	free(yaml);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "types", types_follow_yaml_kinds },
		{ "ranges", ranges_name_the_bound },
		{ "enum", enum_and_const_list_the_choices },
		{ "required", required_points_at_the_map },
		{ "additional", additional_properties_close_or_check_a_map },
		{ "choices", choices_report_one_finding },
		{ "refs", refs_follow_local_pointers },
		{ "patterns", patterns_are_unanchored_posix },
		{ "items", items_have_index_paths },
		{ "bad_schemas", bad_schemas_are_refused },
		{ "tree", hand_built_trees_and_interpolations },
		{ "limits", deep_values_and_long_paths },
	};

	return RUN_CASES("schema", cases, 30);
}
