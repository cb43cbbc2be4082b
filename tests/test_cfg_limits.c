/*
 * Limits and hostile input, unit by unit: checked arithmetic (ckmath.h),
 * the key index (cfg_keyidx), YAML tags and NUL, parents that are not
 * regular files, a defaults: diamond loaded once, the include and
 * interpolation budgets, and the schema's size limit. The CLI side of the
 * same cases is tests/hostile.sh.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"
#include "ckmath.h"
#include "diag.h"
#include "cfg_fixture.h"
#include "harness.h"
#include "schema.h"

static int parse(struct cfg_fx *f, const char *yaml, size_t len)
{
	char *text = malloc(len + 1);

	ck_assert_ptr_nonnull(text);
	memcpy(text, yaml, len);
	text[len] = '\0';
	return cfg_parse_text("t.yaml", text, len, &f->srcs, &f->diags,
			      &f->root);
}

/* The first finding with `code` whose message has `text`, or NULL. */
static const struct diag *find(const struct cfg_fx *f, const char *code,
			       const char *text)
{
	for (size_t i = 0; i < f->diags.n; i++)
		if (f->diags.v[i].rule &&
		    strcmp(f->diags.v[i].rule->code, code) == 0 &&
		    strstr(f->diags.v[i].msg, text))
			return &f->diags.v[i];
	return NULL;
}

START_TEST(ckmath_detects_every_overflow)
{
	long long r;

	ck_assert_int_eq(ck_mul(1LL << 31, 1LL << 31, &r), 0);
	ck_assert_int_eq(r, 1LL << 62);
	/* the audit's wrap: 2^61 nodes x 8 GPUs */
	ck_assert_int_eq(ck_mul(1LL << 61, 8, &r), 1);
	ck_assert_int_eq(r, CK_SAT);
	ck_assert_int_eq(ck_mul(-(1LL << 62), 4, &r), 1);
	ck_assert_int_eq(r, -CK_SAT);
	ck_assert_int_eq(ck_add(LLONG_MAX, 1, &r), 1);
	ck_assert_int_eq(ck_add(LLONG_MAX - 1, 1, &r), 0);
	ck_assert_int_eq(r, LLONG_MAX);
	ck_assert_int_eq(ck_mul_sat(CK_SAT, 2), CK_SAT);
	ck_assert_int_eq(ck_add_sat(CK_SAT, CK_SAT), CK_SAT);
	/* four sizes at the limit: 2^96 saturates, three fit (2^72 no) */
	long long f[] = { 1LL << 24, 1LL << 24, 1LL << 24, 1LL << 24 };
	ck_assert_int_eq(ck_prod_sat(f, 2), 1LL << 48);
	ck_assert_int_eq(ck_prod_sat(f, 3), CK_SAT);
	ck_assert_int_eq(ck_prod_sat(f, 4), CK_SAT);
	ck_assert_int_eq(ck_prod_sat(f, 0), 1);
}
END_TEST

START_TEST(keyidx_finds_sets_and_grows)
{
	struct cfg_node *map = cfg_new(CFG_MAP, DIAG_NOLOC);
	struct cfg_keyidx x;
	char key[32];

	ck_assert_ptr_nonnull(map);
	ck_assert_int_eq(cfg_keyidx_build(&x, map), 0);
	ck_assert_int_eq(cfg_keyidx_find(&x, map, "a"), -1);
	for (int i = 0; i < 5000; i++) {
		struct cfg_node *v = cfg_new(CFG_INT, DIAG_NOLOC);

		ck_assert_ptr_nonnull(v);
		v->v.i = i;
		snprintf(key, sizeof(key), "k%d", i);
		ck_assert_int_eq(cfg_keyidx_set(&x, map, key, v), 0);
	}
	ck_assert_uint_eq(map->n, 5000);
	ck_assert_int_eq(cfg_keyidx_find(&x, map, "k4321"), 4321);
	/* replacing keeps the place and the order */
	struct cfg_node *v = cfg_new(CFG_INT, DIAG_NOLOC);
	v->v.i = -1;
	ck_assert_int_eq(cfg_keyidx_set(&x, map, "k7", v), 0);
	ck_assert_uint_eq(map->n, 5000);
	ck_assert_int_eq(map->kids[7]->v.i, -1);
	ck_assert_str_eq(map->kids[7]->key, "k7");
	cfg_keyidx_release(&x);
	/* an index built afterwards agrees with cfg_get */
	ck_assert_int_eq(cfg_keyidx_build(&x, map), 0);
	ck_assert_int_eq(cfg_keyidx_find(&x, map, "k4999"), 4999);
	ck_assert_ptr_eq(cfg_get(map, "k4999"), map->kids[4999]);
	ck_assert_int_eq(cfg_keyidx_find(&x, map, "k5000"), -1);
	cfg_keyidx_release(&x);
	cfg_free(map);
}
END_TEST

START_TEST(many_keys_and_one_duplicate)
{
	struct cfg_fx f;
	size_t cap = 60000 * 24, n = 0;
	char *text = malloc(cap);
	const struct diag *d;

	cfg_fx_init(&f);
	for (int i = 0; i < 50000; i++)
		n += (size_t)snprintf(text + n, cap - n, "k%d: %d\n", i, i);
	n += (size_t)snprintf(text + n, cap - n, "k49999: 1\n");
	ck_assert_int_eq(parse(&f, text, n), -1);
	d = find(&f, "GT101", "duplicate key 'k49999'");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->loc.line, 50001);
	ck_assert_int_eq(d->n_notes, 1);
	free(text);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(tags_as_a_safe_loader_reads_them)
{
	struct cfg_fx f;
	static const char ok[] =
		"a: !!float 3\nb: !!int \"12\"\nc: !!str 4\nd: !!null x\n"
		"e: !!map {k: 1}\nf: !!seq [1]\ng: !!bool yes\n";

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, ok, strlen(ok)), 0);
	ck_assert_int_eq(cfg_path(f.root, "a")->kind, CFG_FLOAT);
	ck_assert(cfg_path(f.root, "a")->v.f == 3.0);
	ck_assert_int_eq(cfg_path(f.root, "b")->kind, CFG_INT);
	ck_assert_int_eq(cfg_path(f.root, "b")->v.i, 12);
	ck_assert_int_eq(cfg_path(f.root, "c")->kind, CFG_STR);
	ck_assert_int_eq(cfg_path(f.root, "d")->kind, CFG_NULL);
	ck_assert_int_eq(cfg_path(f.root, "e")->kind, CFG_MAP);
	ck_assert_int_eq(cfg_path(f.root, "g")->kind, CFG_BOOL);
	cfg_free(f.root);
	f.root = NULL;
	ck_assert_int_eq(parse(&f, "a: !!python/object/apply:os.system [ls]\n",
			       40), -1);
	ck_assert_ptr_nonnull(find(&f, "GT100", "on a list"));
	ck_assert_int_eq(parse(&f, "a: !!python/object:x {k: 1}\n", 28), -1);
	ck_assert_ptr_nonnull(find(&f, "GT100", "on a map"));
	ck_assert_int_eq(parse(&f, "a: !!int 3.5\n", 13), -1);
	ck_assert_ptr_nonnull(find(&f, "GT100", "'3.5' is not an integer"));
	ck_assert_int_eq(parse(&f, "a: !!bool 3\n", 12), -1);
	ck_assert_ptr_nonnull(find(&f, "GT100", "'3' is not a boolean"));
	ck_assert_int_eq(parse(&f, "a: !custom x\n", 13), -1);
	ck_assert_ptr_nonnull(find(&f, "GT100", "unsupported YAML tag '!custom'"));
	cfg_fx_release(&f);
}
END_TEST

START_TEST(nul_inside_a_string_is_refused)
{
	struct cfg_fx f;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, "a: \"x\\0y\"\n", 10), -1);
	ck_assert_ptr_nonnull(find(&f, "GT100", "a NUL character"));
	cfg_fx_release(&f);
}
END_TEST

/* The fuzzer's first find: a base-60 integer past 64 bits wrapped. */
START_TEST(sexagesimal_past_64_bits_is_text)
{
	struct cfg_fx f;
	static const char yaml[] = "a: 153722867280912930:59\n"
		"b: 4444444444444444444444:10\nc: 1:30\n";

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, yaml, strlen(yaml)), 0);
	ck_assert_int_eq(cfg_path(f.root, "a")->kind, CFG_STR);
	ck_assert_int_eq(cfg_path(f.root, "b")->kind, CFG_STR);
	ck_assert_int_eq(cfg_path(f.root, "c")->kind, CFG_INT);
	ck_assert_int_eq(cfg_path(f.root, "c")->v.i, 90);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(parents_must_be_regular_files)
{
	struct cfg_fx f;
	char fifo[128], dir[128], l1[128], l2[128];
	const char *top;

	cfg_fx_init(&f);
	snprintf(fifo, sizeof(fifo), "%s/fifo.yaml", f.dir);
	snprintf(dir, sizeof(dir), "%s/dir.yaml", f.dir);
	snprintf(l1, sizeof(l1), "%s/l1.yaml", f.dir);
	snprintf(l2, sizeof(l2), "%s/l2.yaml", f.dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(symlink("l2.yaml", l1), 0);
	ck_assert_int_eq(symlink("l1.yaml", l2), 0);
	/* no writer ever opens the FIFO: reading it would wait forever */
	top = cfg_fx_put(&f, "top.yaml",
			 "defaults: [fifo.yaml, dir.yaml, l1.yaml]\n"
			 "a: 1\n");
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	ck_assert_ptr_nonnull(find(&f, "GT104", "it is a FIFO"));
	ck_assert_ptr_nonnull(find(&f, "GT104", "it is a directory"));
	ck_assert_ptr_nonnull(find(&f, "GT104", "a loop of symbolic links"));
	ck_assert_ptr_nonnull(cfg_get(f.root, "a"));
	cfg_fx_release(&f);
}
END_TEST

START_TEST(a_diamond_loads_each_file_once)
{
	struct cfg_fx f;
	char name[32], text[96];
	const char *top = NULL;
	long long v;

	cfg_fx_init(&f);
	/* f0 includes f1 twice, f1 includes f2 twice, ...: 2^20 loads if
	 * each inclusion read its file again */
	for (int i = 20; i >= 0; i--) {
		snprintf(name, sizeof(name), "f%d.yaml", i);
		if (i == 20)
			snprintf(text, sizeof(text), "k20: 20\n");
		else
			snprintf(text, sizeof(text), "defaults: [f%d.yaml, "
				 "f%d.yaml]\nk%d: %d\n", i + 1, i + 1, i, i);
		top = cfg_fx_put(&f, name, text);
	}
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	ck_assert_uint_eq(f.diags.n, 0);
	ck_assert_uint_eq(f.srcs.n, 21); /* each file read once */
	ck_assert_int_eq(cfg_int(f.root, "k20", &v), 1);
	ck_assert_int_eq(v, 20);
	ck_assert_uint_eq(f.root->n, 21);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(include_and_interpolation_budgets)
{
	struct cfg_fx f;
	size_t cap = (CFG_MAX_INCLUDES + 10) * 16, n = 0;
	char *text = malloc(cap);
	const char *top;

	cfg_fx_init(&f);
	cfg_fx_put(&f, "one.yaml", "a: 1\n");
	n += (size_t)snprintf(text, cap, "defaults:\n");
	for (int i = 0; i <= CFG_MAX_INCLUDES; i++)
		n += (size_t)snprintf(text + n, cap - n, "- one.yaml\n");
	top = cfg_fx_put(&f, "many.yaml", text);
	ck_assert_int_eq(cfg_load(top, &f.srcs, &f.diags, &f.root), 0);
	ck_assert_ptr_nonnull(find(&f, "GT103", "1000 defaults: entries"));
	free(text);
	cfg_fx_release(&f);

	/* 80 references to a 1 MiB string: 80 MiB of text */
	cfg_fx_init(&f);
	cap = (1u << 20) + 80 * 24;
	text = malloc(cap);
	n = (size_t)snprintf(text, cap, "big: \"");
	memset(text + n, 'x', (1u << 20) - 64);
	n += (1u << 20) - 64;
	n += (size_t)snprintf(text + n, cap - n, "\"\n");
	for (int i = 0; i < 80; i++)
		n += (size_t)snprintf(text + n, cap - n, "k%d: ${big}\n", i);
	ck_assert_int_eq(parse(&f, text, n), 0);
	ck_assert_int_eq(cfg_resolve(f.root, &f.srcs, &f.diags), -1);
	ck_assert_ptr_nonnull(find(&f, "GT103", "bytes of text in all"));
	free(text);
	cfg_fx_release(&f);
}
END_TEST

START_TEST(sizes_past_the_world_limit)
{
	struct cfg_fx f;
	static const char yaml[] =
		"cluster: {num_nodes: 2305843009213693952, gpus_per_node: 8}\n"
		"policy:\n  megatron_cfg: {context_parallel_size: 1048576}\n";
	int past = -1;

	cfg_fx_init(&f);
	ck_assert_int_eq(parse(&f, yaml, strlen(yaml)), 0);
	ck_assert_int_ge(schema_check_config_limits(f.root, &f.diags, &past),
			 1);
	ck_assert_int_eq(past, 1); /* 2^20 itself is allowed */
	const struct diag *d = find(&f, "GT201", "at most 1048576");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->loc.line, 1);
	ck_assert_int_eq(d->loc.col, 22);
	cfg_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "ckmath", ckmath_detects_every_overflow },
		{ "keyidx", keyidx_finds_sets_and_grows },
		{ "many_keys", many_keys_and_one_duplicate },
		{ "tags", tags_as_a_safe_loader_reads_them },
		{ "nul", nul_inside_a_string_is_refused },
		{ "sexagesimal", sexagesimal_past_64_bits_is_text },
		{ "not_regular", parents_must_be_regular_files },
		{ "diamond", a_diamond_loads_each_file_once },
		{ "budgets", include_and_interpolation_budgets },
		{ "world_limit", sizes_past_the_world_limit },
	};

	return RUN_CASES("cfg_limits", cases, 30);
}
