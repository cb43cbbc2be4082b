/*
 * Interpolation errors and limits: a relative key above the root, resolver
 * and syntax errors, missing keys with their chain and hints, cycles, and
 * the depth and size limits, each checked against what
 * OmegaConf.to_container(resolve=True) rejects with NeMo-RL's resolvers
 * (OmegaConf 2.2). The values are in test_cfg_interp.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "cfg_interp_fixture.h"
#include "harness.h"

START_TEST(relative_key_above_the_root)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f, "b: 5\na: ${..b}\n"), -1);
	ck_diag(&f, "GT110", 2, 4, "above the root");
	fx_release(&f);
}
END_TEST

START_TEST(resolver_errors)
{
	static const struct {
		const char *yaml, *code, *part;
	} cases[] = {
		{ "a: ${div:1,0}\n", "GT114", "division by zero" },
		{ "a: ${div:1.0,0}\n", "GT114", "float division by zero" },
		{ "a: ${add:1,ab}\n", "GT114", "int + str" },
		{ "a: ${add:null,1}\n", "GT114", "NoneType + int" },
		{ "a: ${mul:ab,1.5}\n", "GT114", "non-int of type 'float'" },
		{ "a: ${max:1,ab}\n", "GT114", "cannot compare str with int" },
		{ "a: ${mul:2,3,}\n", "GT114", "takes 2 arguments, not 3" },
		{ "a: ${mul:2}\n", "GT114", "takes 2 arguments, not 1" },
		{ "a: ${mul:4611686018427387904,4}\n", "GT114", "overflows" },
		{ "a: ${add:99999999999999999999,1}\n", "GT114", "64-bit" },
		{ "a: ${mul:2,${b}}\nb:\n  c: 1\n", "GT114", "int * dict" },
		{ "a: ${oc.env:}\n", "GT114", "not 0 arguments" },
		{ "a: ${oc.env:1}\n", "GT114", "must be a string, not int" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct fx f;

		fx_init(&f);
		ck_assert_int_eq(load(&f, cases[i].yaml), -1);
		ck_diag(&f, cases[i].code, 1, 4, cases[i].part);
		ck_assert_msg(at(&f, "a")->interp, "%s", cases[i].yaml);
		fx_release(&f);
	}
}
END_TEST

START_TEST(unknown_resolver)
{
	struct fx f;
	const struct diag *d;

	fx_init(&f);
	ck_assert_int_eq(load(&f, "x: 1\na: ${foo:1}\nb: ${env:HOME}\n"
			      "c: ${oc.select:x,2}\n"), -1);
	ck_diag(&f, "GT112", 2, 4, "unknown resolver 'foo'");
	d = find(&f, "GT112");
	ck_assert_ptr_nonnull(d->hint);
	ck_assert_ptr_nonnull(strstr(d->hint, "add, sub, mul, div and max"));
	ck_assert_ptr_nonnull(strstr(d->hint, "oc.env"));
	ck_assert_uint_eq(count(&f, "GT112"), 3);
	ck_assert_ptr_nonnull(strstr(f.diags.v[2].msg, "does not evaluate"));
	fx_release(&f);
}
END_TEST

START_TEST(syntax_errors)
{
	static const char *const bad[] = {
		"a: ${}\n", "a: ${a.}\n", "a: ${.}\n", "a: \"${x\"\n",
		"a: ${add:a=b,c}\n", "a: ${add:a(b,c}\n", "a: ${add:'x,c}\n",
		"a: ${a b}\n", "a: ${.x:1}\n", "a: ${add:[1,2}\n",
		"a: \"${add:\\u00e9,c}\"\n", "a: ${add:ab'c',d}\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct fx f;

		fx_init(&f);
		ck_assert_int_eq(load(&f, bad[i]), -1);
		ck_assert_msg(find(&f, "GT112") != NULL, "%s", bad[i]);
		ck_assert_int_eq(find(&f, "GT112")->loc.col, 4);
		ck_assert(at(&f, "a")->interp);
		fx_release(&f);
	}
}
END_TEST

START_TEST(missing_key_names_the_chain)
{
	struct fx f;
	const struct diag *d;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"y: ${x}\n"
		"x: \"${policy.max_total_sequence_lenght}!\"\n"
		"policy:\n"
		"  max_total_sequence_length: 8\n"), -1);
	ck_assert_uint_eq(count(&f, "GT110"), 1);
	ck_diag(&f, "GT110", 2, 5, "'policy.max_total_sequence_lenght'");
	d = find(&f, "GT110");
	ck_assert_ptr_nonnull(strstr(d->msg, "chain: y -> x -> policy."));
	ck_assert_str_eq(d->path, "x");
	ck_assert_uint_eq(d->n_notes, 1);
	ck_assert_int_eq(d->notes[0].loc.line, 1);
	ck_assert_ptr_nonnull(strstr(d->notes[0].msg, "'y' refers to 'x'"));
	ck_assert_ptr_nonnull(d->hint);
	ck_assert_ptr_nonnull(strstr(d->hint,
		"did you mean 'policy.max_total_sequence_length'"));
	ck_assert(at(&f, "y")->interp && at(&f, "x")->interp);
	fx_release(&f);
}
END_TEST

START_TEST(missing_key_hints)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f,
		"gen:\n"
		"  temperature: 1.0\n"
		"  top_p: ${temperature}\n"
		"  z: ${nothing_like_it}\n"
		"  s: ${gen.temperature.x}\n"
		"  l: [1]\n"
		"  i: ${.l.3}\n"), -1);
	ck_assert_uint_eq(count(&f, "GT110"), 4);
	ck_assert_ptr_nonnull(strstr(f.diags.v[0].hint, "${.temperature}"));
	ck_assert_ptr_nonnull(strstr(f.diags.v[1].hint, "check the spelling"));
	ck_assert_ptr_nonnull(strstr(f.diags.v[2].msg, "scalar (number)"));
	ck_assert_ptr_nonnull(strstr(f.diags.v[3].msg, "not an index"));
	fx_release(&f);
}
END_TEST

START_TEST(cycles)
{
	struct fx f;
	const struct diag *d;

	fx_init(&f);
	ck_assert_int_eq(load(&f, "a: ${b}\nb: ${c}\nc: ${a}\nd: ${d}\n"), -1);
	ck_assert_uint_eq(count(&f, "GT111"), 2);
	d = find(&f, "GT111");
	ck_assert_ptr_nonnull(strstr(d->msg, "a -> b -> c -> a"));
	ck_assert_int_eq(d->loc.line, 3); /* where the loop closes */
	ck_assert_uint_eq(d->n_notes, 2);
	ck_assert_ptr_nonnull(strstr(f.diags.v[1].msg, "d -> d"));
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(load(&f, "a:\n  b: ${a}\nc:\n  d: ${..c}\n"), -1);
	ck_assert_uint_eq(count(&f, "GT111"), 2);
	ck_diag(&f, "GT111", 2, 6, "contains this value");
	fx_release(&f);

	fx_init(&f);
	ck_assert_int_eq(load(&f, "a: ${b}\nb:\n  c: ${a}\n"), -1);
	ck_assert(find(&f, "GT111") != NULL);
	fx_release(&f);
}
END_TEST

START_TEST(depth_limit)
{
	struct fx f;
	char *yaml = malloc(100 * 32), *p = yaml;
	const struct diag *d;

	ck_assert_ptr_nonnull(yaml);
	for (int i = 0; i < CFG_MAX_INTERP_DEPTH + 5; i++)
		p += sprintf(p, "k%d: ${k%d}\n", i, i + 1);
	sprintf(p, "k%d: 1\n", CFG_MAX_INTERP_DEPTH + 5);
	fx_init(&f);
	ck_assert_int_eq(load(&f, yaml), -1);
	d = find(&f, "GT103");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "deeper than 64"));
	fx_release(&f);
	/* exactly at the limit is fine */
	p = yaml;
	for (int i = 0; i < CFG_MAX_INTERP_DEPTH - 1; i++)
		p += sprintf(p, "k%d: ${k%d}\n", i, i + 1);
	sprintf(p, "k%d: 1\n", CFG_MAX_INTERP_DEPTH - 1);
	fx_init(&f);
	ck_assert_int_eq(load(&f, yaml), 0);
	ck_int(&f, "k0", 1);
	fx_release(&f);
	free(yaml);
}
END_TEST

START_TEST(size_limits)
{
	struct fx f;

	fx_init(&f);
	ck_assert_int_eq(load(&f, "a: ${mul:abcd,100000000}\n"), -1);
	ck_diag(&f, "GT103", 1, 4, "longer than");
	fx_release(&f);

	/* brackets and ${ nest at most CFG_MAX_INTERP_DEPTH deep */
	{
		char yaml[4 * CFG_MAX_INTERP_DEPTH + 32], *p = yaml;

		p += sprintf(p, "a: '${add:");
		for (int i = 0; i < CFG_MAX_INTERP_DEPTH; i++)
			*p++ = '[';
		for (int i = 0; i < CFG_MAX_INTERP_DEPTH; i++)
			*p++ = ']';
		sprintf(p, ",[]}'\n");
		fx_init(&f);
		ck_assert_int_eq(load(&f, yaml), -1);
		ck_diag(&f, "GT103", 1, 4, "nests more than 64 levels");
		fx_release(&f);
	}

	/* each level doubles the copies: 2^40 nodes unless capped */
	{
		char *yaml = malloc(64 * 48), *p = yaml;

		ck_assert_ptr_nonnull(yaml);
		p += sprintf(p, "l0: [1, 1]\n");
		for (int i = 1; i <= 40; i++)
			p += sprintf(p, "l%d: ['${l%d}', '${l%d}']\n", i, i - 1,
				     i - 1);
		fx_init(&f);
		ck_assert_int_eq(load(&f, yaml), -1);
		ck_assert(find(&f, "GT103") != NULL);
		fx_release(&f);
		free(yaml);
	}
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "above_root", relative_key_above_the_root },
		{ "resolver_errors", resolver_errors },
		{ "unknown_resolver", unknown_resolver },
		{ "syntax", syntax_errors },
		{ "missing_chain", missing_key_names_the_chain },
		{ "missing_hints", missing_key_hints },
		{ "cycles", cycles },
		{ "depth_limit", depth_limit },
		{ "size_limits", size_limits },
	};

	return RUN_CASES("cfg_interp_errors", cases, 30);
}
