/*
 * cfg_interp_fixture: the interpolation suites' source set, diagnostics and
 * parsed root, a loader that parses and resolves a YAML text, and the
 * assertions on resolved values (ck_int, ck_float, ck_str, ck_kind) and on
 * findings (ck_diag) they share.
 */
#ifndef GTPLAN_TEST_CFG_INTERP_FIXTURE_H
#define GTPLAN_TEST_CFG_INTERP_FIXTURE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
};

static inline void fx_init(struct fx *f)
{
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	f->root = NULL;
}

static inline void fx_release(struct fx *f)
{
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

/* Parses yaml (which must be valid) and resolves it; cfg_resolve's result. */
static inline int load(struct fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml),
					&f->srcs, &f->diags, &f->root), 0);
	ck_assert_ptr_nonnull(f->root);
	return cfg_resolve(f->root, &f->srcs, &f->diags);
}

static inline const struct diag *find(const struct fx *f, const char *code)
{
	for (size_t i = 0; i < f->diags.n; i++)
		if (strcmp(diag_code(&f->diags.v[i]), code) == 0)
			return &f->diags.v[i];
	return NULL;
}

static inline size_t count(const struct fx *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strcmp(diag_code(&f->diags.v[i]), code) == 0;
	return n;
}

static inline const struct cfg_node *at(const struct fx *f, const char *path)
{
	const struct cfg_node *n = cfg_path(f->root, path);

	ck_assert_msg(n != NULL, "no node at '%s'", path);
	return n;
}

#define ck_int(fx_, path, want)                                           \
	do {                                                            \
		const struct cfg_node *n_ = at(fx_, path);                \
		ck_assert_msg(n_->kind == CFG_INT, "%s: %s, not int",   \
			      path, cfg_kind_name(n_->kind));           \
		ck_assert_int_eq(n_->v.i, want);                        \
	} while (0)

#define ck_float(fx_, path, want)                                         \
	do {                                                            \
		const struct cfg_node *n_ = at(fx_, path);                \
		ck_assert_msg(n_->kind == CFG_FLOAT, "%s: %s, not float", \
			      path, cfg_kind_name(n_->kind));           \
		ck_assert_double_eq(n_->v.f, want);                     \
	} while (0)

#define ck_str(fx_, path, want)                                           \
	do {                                                            \
		const struct cfg_node *n_ = at(fx_, path);                \
		ck_assert_msg(n_->kind == CFG_STR, "%s: %s, not str",   \
			      path, cfg_kind_name(n_->kind));           \
		ck_assert_str_eq(n_->text, want);                       \
	} while (0)

#define ck_kind(fx_, path, k) ck_assert_int_eq(at(fx_, path)->kind, k)

/* Asserts a finding of `code` at line:col whose message contains `part`. */
static inline void ck_diag(const struct fx *f, const char *code, int line,
			   int col, const char *part)
{
	const struct diag *d = find(f, code);

	ck_assert_msg(d != NULL, "no %s", code);
	ck_assert_int_eq(d->loc.line, line);
	ck_assert_int_eq(d->loc.col, col);
	ck_assert_msg(strstr(d->msg, part), "'%s' not in '%s'", part, d->msg);
}

/* No node is left with an interpolation, except those allowed. */
static inline size_t pending(const struct cfg_node *n)
{
	size_t k = n->interp;

	for (size_t i = 0; i < n->n; i++)
		k += pending(n->kids[i]);
	return k;
}

#endif
