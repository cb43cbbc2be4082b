/*
 * schema_fixture: what the schema suites share (tests/test_schema.c,
 * tests/test_schema_config.c): a YAML tree, its findings and a schema in
 * one struct fx; schemas written with single quotes (sq() turns them into
 * JSON); validation of YAML text, parsed so that locations are real; and
 * the checks on the one finding expected.
 */
#ifndef GTPLAN_TEST_SCHEMA_FIXTURE_H
#define GTPLAN_TEST_SCHEMA_FIXTURE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "diag_fixture.h"
#include "schema.h"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct schema *s;
	int errs;
};

static inline void fx_init(struct fx *f)
{
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	f->root = NULL;
	f->s = NULL;
	f->errs = 0;
}

static inline void fx_release(struct fx *f)
{
	schema_free(f->s);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

/* JSON text from single-quoted JSON. */
static inline char *sq(const char *text)
{
	char *j = strdup(text);

	ck_assert_ptr_nonnull(j);
	for (char *p = j; *p; p++)
		if (*p == '\'')
			*p = '"';
	return j;
}

static inline struct schema *load_sq(const char *text, char *err,
				      size_t errlen)
{
	char *j = sq(text);
	struct schema *s = schema_load(j, strlen(j), err, errlen);

	free(j);
	return s;
}

static inline void parse(struct fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	ck_assert_uint_eq(f->diags.n, 0);
}

/* Validates YAML text against a single-quoted schema; returns the errors. */
static inline int run(struct fx *f, const char *schema, const char *yaml)
{
	char err[256];

	f->s = load_sq(schema, err, sizeof(err));
	ck_assert_msg(f->s != NULL, "schema does not load: %s", err);
	parse(f, yaml);
	f->errs = schema_validate(f->s, f->root, &f->diags);
	return f->errs;
}

/* The only finding; fails unless there is exactly one, of `code`. */
static inline const struct diag *only(const struct fx *f, const char *code)
{
	ck_assert_msg(f->diags.n == 1, "%zu findings, want 1 %s", f->diags.n,
		      code);
	ck_assert_str_eq(diag_code(&f->diags.v[0]), code);
	ck_assert_ptr_nonnull(f->diags.v[0].hint);
	return &f->diags.v[0];
}

/* Runs one schema on one YAML and expects `errs` errors and
 * `findings` findings. */
#define EXPECT(schema, yaml, errs, findings)                                  \
	do {                                                                  \
		struct fx f_;                                                 \
		fx_init(&f_);                                                 \
		ck_assert_int_eq(run(&f_, schema, yaml), errs);               \
		ck_assert_uint_eq(f_.diags.n, findings);                      \
		fx_release(&f_);                                              \
	} while (0)

#endif
