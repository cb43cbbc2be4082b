/*
 * Interpolation tests: values, substitution, relative keys, the resolvers'
 * results, argument typing, oc.env, escapes and interpolated keys, each
 * checked against what OmegaConf.to_container(resolve=True) gives with
 * NeMo-RL's resolvers (the expected values were taken from OmegaConf 2.2).
 * The errors and limits are in test_cfg_interp_errors.c.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "cfg_interp_fixture.h"
#include "harness.h"

START_TEST(whole_value_takes_type_and_structure)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"i: 4\n"
		"f: 1e-5\n"
		"b: true\n"
		"n: null\n"
		"s: text\n"
		"m:\n"
		"  x: 1\n"
		"  l: [1, two]\n"
		"ri: ${i}\n"
		"rf: ${f}\n"
		"rb: ${b}\n"
		"rn: ${n}\n"
		"rs: ${s}\n"
		"rm: ${m}\n"
		"rl: ${m.l}\n"), 0);
	ck_int(&f, "ri", 4);
	ck_float(&f, "rf", 1e-5);
	ck_kind(&f, "rb", CFG_BOOL);
	ck_assert_int_eq(at(&f, "rb")->v.b, 1);
	ck_kind(&f, "rn", CFG_NULL);
	ck_str(&f, "rs", "text");
	ck_kind(&f, "rm", CFG_MAP);
	ck_int(&f, "rm.x", 1);
	ck_str(&f, "rm.l.1", "two");
	ck_kind(&f, "rl", CFG_SEQ);
	ck_assert_uint_eq(at(&f, "rl")->n, 2);
	/* a deep copy: the original is a different node */
	ck_assert_ptr_ne(at(&f, "rm.x"), at(&f, "m.x"));
	/* the site keeps its marks; origin is where the value was written */
	{
		const struct cfg_node *rm = at(&f, "rm"), *ri = at(&f, "ri");

		ck_assert(rm->resolved && ri->resolved);
		ck_assert(!rm->interp && !ri->interp);
		ck_assert_int_eq(rm->loc.line, 14);
		ck_assert_int_eq(rm->loc.col, 5);
		ck_assert_int_eq(rm->key_loc.col, 1);
		ck_assert_int_eq(rm->origin.line, 7);
		ck_assert_int_eq(ri->origin.line, 1);
		ck_assert_int_eq(ri->origin.col, 4);
		/* the copied members keep their own marks */
		ck_assert_int_eq(at(&f, "rm.x")->loc.line, 7);
		ck_assert_str_eq(rm->key, "rm");
	}
	ck_assert_uint_eq(f.diags.n, 0);
	fx_release(&f);
}
END_TEST

START_TEST(origin_follows_chains)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f, "a: ${b}\nb: ${c}\nc: 7\n"), 0);
	ck_int(&f, "a", 7);
	ck_assert_int_eq(at(&f, "a")->origin.line, 3);
	ck_assert_int_eq(at(&f, "a")->loc.line, 1);
	fx_release(&f);
}
END_TEST

START_TEST(string_substitution_uses_python_str)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"a: 1\n"
		"f: 1e-5\n"
		"g: 3.0\n"
		"h: 1e16\n"
		"i: 0.0001\n"
		"j: -0.0\n"
		"k: 12345678901234567.0\n"
		"t: true\n"
		"n: null\n"
		"m:\n"
		"  x: 1\n"
		"  y: [1, 'q', null, 2.5, \"it's\"]\n"
		"c: x${a}y\n"
		"d: \"${f}|${g}|${h}|${i}|${j}|${k}\"\n"
		"e: \"${t} ${n}\"\n"
		"s: \"s=${m}\"\n"
		"two: ${a}${a}\n"
		"lead: \" ${a}\"\n"
		"dollar: \"$x {y} $ {z} $\"\n"), 0);
	ck_str(&f, "c", "x1y");
	ck_str(&f, "d", "1e-05|3.0|1e+16|0.0001|-0.0|1.2345678901234568e+16");
	ck_str(&f, "e", "True None");
	ck_str(&f, "s", "s={'x': 1, 'y': [1, 'q', None, 2.5, \"it's\"]}");
	ck_str(&f, "two", "11");
	ck_str(&f, "lead", " 1");
	ck_str(&f, "dollar", "$x {y} $ {z} $");
	ck_assert(at(&f, "c")->resolved);
	ck_assert_int_eq(at(&f, "c")->loc.line, 13);
	fx_release(&f);
}
END_TEST

START_TEST(relative_keys)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"top: 9\n"
		"s:\n"
		"  t: 1\n"
		"  u:\n"
		"    v: 2\n"
		"    w: ${..t}\n"
		"    x: ${.v}\n"
		"    y: ${...top}\n"
		"    z: ${..u.v}\n"
		"l: [10, 20, {a: 3}, '${.0}', '${..top}']\n"
		"a: ${l[1]}\n"
		"b: ${l.0}\n"
		"c: ${l[2].a}\n"
		"d: ${l.2.a}\n"
		"e: ${.top}\n"), 0);
	ck_int(&f, "s.u.w", 1);
	ck_int(&f, "s.u.x", 2);
	ck_int(&f, "s.u.y", 9);
	ck_int(&f, "s.u.z", 2);
	ck_int(&f, "l.3", 10);
	ck_int(&f, "l.4", 9);
	ck_int(&f, "a", 20);
	ck_int(&f, "b", 10);
	ck_int(&f, "c", 3);
	ck_int(&f, "d", 3);
	ck_int(&f, "e", 9);
	fx_release(&f);
}
END_TEST

START_TEST(nested_resolvers)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"policy:\n"
		"  max_total_sequence_length: 1024\n"
		"  train_micro_batch_size: 4\n"
		"  megatron_cfg:\n"
		"    tensor_model_parallel_size: 2\n"
		"  dynamic_batching:\n"
		"    train_mb_tokens: ${mul:${..max_total_sequence_length}, "
		"${..train_micro_batch_size}}\n"
		"  sequence_packing:\n"
		"    x: ${mul:${mul:${policy.megatron_cfg.tensor_model_parallel_"
		"size}, 2}, 4}\n"
		"    y: ${mul:2, ${policy.megatron_cfg.tensor_model_parallel_"
		"size}}\n"
		"  z: ${mul:${mul:${.megatron_cfg.tensor_model_parallel_size}, "
		"2}, 4}\n"
		"  w: ${div:${.train_micro_batch_size}, 2}\n"
		"  m: ${max:${.train_micro_batch_size}, 1}\n"
		"  a: ${add:${.train_micro_batch_size},1}\n"
		"  name: \"run-${.train_micro_batch_size}-${mul:2,3}x\"\n"), 0);
	ck_int(&f, "policy.dynamic_batching.train_mb_tokens", 4096);
	ck_int(&f, "policy.sequence_packing.x", 16);
	ck_int(&f, "policy.sequence_packing.y", 4);
	ck_int(&f, "policy.z", 16);
	ck_float(&f, "policy.w", 2.0);
	ck_int(&f, "policy.m", 4);
	ck_int(&f, "policy.a", 5);
	ck_str(&f, "policy.name", "run-4-6x");
	ck_assert_uint_eq(pending(f.root), 0);
	fx_release(&f);
}
END_TEST

START_TEST(resolver_add)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"a: ${add:1,2}\n"
		"b: ${add:1,2.5}\n"
		"c: ${add:ab,cd}\n"
		"d: ${add:true,1}\n"
		"e: ${add:[1],[2, x]}\n"
		"g: ${add:1_000,1}\n"
		"h: ${add:inf,1}\n"
		"i: ${add:1.5x,y}\n"
		"j: ${add:010,y}\n"
		"k: ${add:0x10,y}\n"
		"l: ${add:a b,c}\n"
		"m: ${add:'x,y',z}\n"), 0);
	ck_int(&f, "a", 3);
	ck_float(&f, "b", 3.5);
	ck_str(&f, "c", "abcd");
	ck_int(&f, "d", 2); /* bool + int is an int in Python */
	ck_kind(&f, "e", CFG_SEQ);
	ck_assert_uint_eq(at(&f, "e")->n, 3);
	ck_str(&f, "e.2", "x");
	ck_int(&f, "g", 1001);
	ck_assert(isinf(at(&f, "h")->v.f));
	ck_str(&f, "i", "1.5xy"); /* several tokens make a string */
	ck_str(&f, "j", "010y");
	ck_str(&f, "k", "0x10y");
	ck_str(&f, "l", "a bc");
	ck_str(&f, "m", "x,yz");
	fx_release(&f);
}
END_TEST

START_TEST(resolver_sub)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f, "a: ${sub:5,7}\nb: ${sub:1.5,1}\n"), 0);
	ck_int(&f, "a", -2);
	ck_float(&f, "b", 0.5);
	fx_release(&f);
}
END_TEST

START_TEST(resolver_mul)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"a: ${mul:2,3}\n"
		"b: ${mul:2, 3.0}\n"
		"c: ${mul:ab,3}\n"
		"d: ${mul:-1,ab}\n"
		"e: ${mul:true,3}\n"
		"g: ${mul:[1,2],2}\n"
		"h: ${mul:2.5,2}\n"
		"i: ${mul:1 2,3}\n"), 0);
	ck_int(&f, "a", 6);
	ck_float(&f, "b", 6.0);
	ck_str(&f, "c", "ababab");
	ck_str(&f, "d", "");
	ck_int(&f, "e", 3);
	ck_assert_uint_eq(at(&f, "g")->n, 4);
	ck_int(&f, "g.2", 1);
	ck_float(&f, "h", 5.0);
	ck_str(&f, "i", "1 21 21 2");
	fx_release(&f);
}
END_TEST

START_TEST(resolver_div_is_true_division)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"a: ${div:6,3}\n"
		"b: ${div:7,2}\n"
		"c: ${div:-7,2}\n"
		"d: ${div:1,3}\n"
		"e: \"=${div:1,3}\"\n"), 0);
	ck_float(&f, "a", 2.0);
	ck_float(&f, "b", 3.5);
	ck_float(&f, "c", -3.5);
	ck_float(&f, "d", 1.0 / 3.0);
	ck_str(&f, "e", "=0.3333333333333333");
	ck_assert_str_eq(at(&f, "a")->text, "2.0"); /* Python's str() */
	fx_release(&f);
}
END_TEST

START_TEST(resolver_max)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"a: ${max:1,1.0}\n"
		"b: ${max:1.0,1}\n"
		"c: ${max:abc,abd}\n"
		"d: ${max:true,1}\n"
		"e: ${max:2,3.5}\n"), 0);
	ck_int(&f, "a", 1);        /* the first of equals wins */
	ck_float(&f, "b", 1.0);
	ck_str(&f, "c", "abd");
	ck_kind(&f, "d", CFG_BOOL);
	ck_float(&f, "e", 3.5);
	fx_release(&f);
}
END_TEST

START_TEST(argument_typing)
{
	struct fx f;

	fx_init(&f);
	setenv("GTPLAN_T_UNSET", "", 1);
	unsetenv("GTPLAN_T_UNSET");
	ck_assert_int_eq(load(&f,
		"a: ${oc.env:GTPLAN_T_UNSET,1_000}\n"
		"b: ${oc.env:GTPLAN_T_UNSET,TRUE}\n"
		"c: ${oc.env:GTPLAN_T_UNSET,NULL}\n"
		"d: ${oc.env:GTPLAN_T_UNSET,.5}\n"
		"e: ${oc.env:GTPLAN_T_UNSET,-inf}\n"
		"f: ${oc.env:GTPLAN_T_UNSET,1.}\n"
		"g: ${oc.env:GTPLAN_T_UNSET,nullx}\n"
		"h: ${oc.env:GTPLAN_T_UNSET,a:b}\n"
		"i: ${oc.env:GTPLAN_T_UNSET,a/b-c.d@e%f*g+h$i?j|k}\n"
		"j: '${oc.env:GTPLAN_T_UNSET,{a: 1, b: [x, ${z}]}}'\n"
		"k: ${oc.env:GTPLAN_T_UNSET,[1,2]}\n"
		"z: 3\n"), 0);
	ck_str(&f, "a", "1000");
	ck_str(&f, "b", "True");
	ck_kind(&f, "c", CFG_NULL);
	ck_str(&f, "d", "0.5");
	ck_str(&f, "e", "-inf");
	ck_str(&f, "f", "1.0");
	ck_str(&f, "g", "nullx");
	ck_str(&f, "h", "a:b");
	ck_str(&f, "i", "a/b-c.d@e%f*g+h$i?j|k");
	ck_str(&f, "j", "{'a': 1, 'b': ['x', 3]}");
	ck_str(&f, "k", "[1, 2]");
	fx_release(&f);
}
END_TEST

START_TEST(oc_env_set)
{
	struct fx f;

	fx_init(&f);
	setenv("GTPLAN_T_HOME", "/data", 1);
	setenv("GTPLAN_T_NUM", "5", 1);
	ck_assert_int_eq(load(&f,
		"a: ${oc.env:GTPLAN_T_HOME}\n"
		"b: \"${oc.env:GTPLAN_T_HOME}/gym_venvs\"\n"
		"c: ${oc.env:GTPLAN_T_NUM}\n"
		"d: ${mul:${oc.env:GTPLAN_T_NUM},2}\n"
		"e: ${oc.env:'GTPLAN_T_HOME',x}\n"), 0);
	ck_str(&f, "a", "/data");
	ck_str(&f, "b", "/data/gym_venvs");
	ck_str(&f, "c", "5"); /* oc.env gives strings */
	ck_str(&f, "d", "55");
	ck_str(&f, "e", "/data");
	fx_release(&f);
}
END_TEST

START_TEST(oc_env_unset_is_left_with_a_note)
{
	struct fx f;
	const struct diag *d;

	fx_init(&f);
	unsetenv("GTPLAN_T_NOPE");
	ck_assert_int_eq(load(&f,
		"b: \"${oc.env:GTPLAN_T_NOPE}/gym_venvs\"\n"
		"c: ${b}\n"
		"d: x${b}\n"
		"e: ${oc.env:GTPLAN_T_NOPE,null}\n"
		"g: ${oc.env:GTPLAN_T_NOPE,5}\n"), 0);
	ck_assert_uint_eq(count(&f, "GT113"), 1);
	d = find(&f, "GT113");
	ck_assert_int_eq(d->severity, DIAG_NOTE);
	ck_assert_int_eq(d->loc.line, 1);
	ck_assert_int_eq(d->loc.col, 5); /* at the ${, inside the quotes */
	ck_assert_ptr_nonnull(strstr(d->msg, "GTPLAN_T_NOPE"));
	ck_str(&f, "b", "${oc.env:GTPLAN_T_NOPE}/gym_venvs");
	ck_assert(at(&f, "b")->interp);
	ck_assert(at(&f, "c")->interp); /* depends on it: left as well */
	ck_assert(at(&f, "d")->interp);
	ck_kind(&f, "e", CFG_NULL);
	ck_str(&f, "g", "5");
	ck_assert_uint_eq(diag_count(&f.diags, DIAG_ERROR), 0);
	fx_release(&f);
}
END_TEST

START_TEST(escapes)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"c: 1\n"
		"a: \\${x}\n"
		"b: \\\\${c}\n"
		"d: a\\b\n"
		"e: \\\\\\${c}\n"
		"g: ${add:a\\,b,c}\n"
		"h: ${add:a\\ ,c}\n"
		"i: ${add:'it\\'s',c}\n"
		"j: '${add:\"\\\"\",b}'\n"
		"k: \"\\\\\\\\${c}\"\n"
		"m: \\${oc.env:NOPE_GTPLAN,${c}}\n"
		"l: ${a}\n"), 0);
	ck_str(&f, "a", "${x}");
	ck_assert(!at(&f, "a")->interp);
	ck_str(&f, "b", "\\1");
	ck_str(&f, "d", "a\\b");
	ck_str(&f, "e", "\\${c}");
	ck_str(&f, "g", "a,bc");
	ck_str(&f, "h", "a c");
	ck_str(&f, "i", "it'sc");
	ck_str(&f, "j", "\"b");
	ck_str(&f, "k", "\\1");
	ck_str(&f, "l", "${x}"); /* a literal is not resolved again */
	ck_str(&f, "m", "${oc.env:NOPE_GTPLAN,1}");
	ck_assert_uint_eq(pending(f.root), 0);
	fx_release(&f);
}
END_TEST

START_TEST(nested_interpolation_in_keys)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"k: y\n"
		"kk: x.y\n"
		"x:\n"
		"  y: 7\n"
		"a: ${x.${k}}\n"
		"b: ${${kk}}\n"
		"c: ${ x.y }\n"
		"d: ${mul :2,3 }\n"), 0);
	ck_int(&f, "a", 7);
	ck_int(&f, "b", 7);
	ck_int(&f, "c", 7);
	ck_int(&f, "d", 6);
	fx_release(&f);
}
END_TEST

START_TEST(resolved_tree_has_no_interpolations)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"a: ${b}\n"
		"b:\n"
		"  c: ${d}\n"
		"  e: ${.c}\n"
		"  l: ['${...d}', \"x${d}\"]\n"
		"d: 4\n"), 0);
	ck_assert_uint_eq(pending(f.root), 0);
	ck_int(&f, "a.c", 4);
	ck_int(&f, "a.e", 4);
	ck_int(&f, "a.l.0", 4);
	ck_str(&f, "a.l.1", "x4");
	/* resolving again changes nothing */
	ck_assert_int_eq(cfg_resolve(f.root, &f.srcs, &f.diags), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	fx_release(&f);
}
END_TEST

START_TEST(shared_word_helpers)
{
	enum cfg_word w;
	struct cfg_node *n = cfg_new(CFG_STR, DIAG_NOLOC);

	ck_assert_uint_eq(cfg_lex_word("1e-5,", &w), 4);
	ck_assert_int_eq(w, CFG_WORD_FLOAT);
	ck_assert_uint_eq(cfg_lex_word("010", &w), 1);
	ck_assert_int_eq(w, CFG_WORD_INT);
	ck_assert_uint_eq(cfg_lex_word("true_x", &w), 6);
	ck_assert_int_eq(w, CFG_WORD_ID);
	ck_assert_uint_eq(cfg_lex_word("TRUE", &w), 4);
	ck_assert_int_eq(w, CFG_WORD_BOOL);
	ck_assert_uint_eq(cfg_lex_word("-inf", &w), 4);
	ck_assert_int_eq(w, CFG_WORD_FLOAT);
	ck_assert_uint_eq(cfg_lex_word("00.5", &w), 1);
	ck_assert_uint_eq(cfg_lex_word("/x", &w), 0);
	ck_assert_int_eq(cfg_word_value(n, CFG_WORD_INT, "1_000", 5), 0);
	ck_assert_int_eq(n->v.i, 1000);
	ck_assert_int_eq(cfg_word_value(n, CFG_WORD_INT,
					"99999999999999999999", 20), -1);
	ck_assert_ptr_null(cfg_closest_key(NULL, "x"));
	cfg_free(n);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "whole_value", whole_value_takes_type_and_structure },
		{ "origin_chain", origin_follows_chains },
		{ "string_subst", string_substitution_uses_python_str },
		{ "relative", relative_keys },
		{ "nested", nested_resolvers },
		{ "add", resolver_add },
		{ "sub", resolver_sub },
		{ "mul", resolver_mul },
		{ "div", resolver_div_is_true_division },
		{ "max", resolver_max },
		{ "arg_typing", argument_typing },
		{ "env_set", oc_env_set },
		{ "env_unset", oc_env_unset_is_left_with_a_note },
		{ "escapes", escapes },
		{ "key_interp", nested_interpolation_in_keys },
		{ "no_leftovers", resolved_tree_has_no_interpolations },
		{ "words", shared_word_helpers },
	};

	return RUN_CASES("cfg_interp", cases, 30);
}
