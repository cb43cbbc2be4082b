/*
 * model_fixture: a YAML config text parsed (with no finding) and its model
 * resolved by model_resolve(), for the suites of planner/model.c and
 * planner/model_hf.c. The suite checks the shape (m), model_resolve's
 * status (rc) and the findings, then calls model_fx_release.
 */
#ifndef GTPLAN_TEST_MODEL_FIXTURE_H
#define GTPLAN_TEST_MODEL_FIXTURE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "model.h"

struct model_fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct model_shape m;
	int rc;
};

/* Parses `yaml` as t.yaml (a copy: the config owns it), which must give no
 * finding, and resolves its model into f->m. */
static inline void model_fx_resolve(struct model_fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	ck_assert_int_eq(f->diags.n, 0);
	f->rc = model_resolve(f->root, &f->m, &f->diags);
}

/* The catalog's entry for `name`; the test fails when there is none. */
static inline const struct model_shape *model_fx_find(const char *name)
{
	const struct model_shape *m = model_catalog_find(name);

	ck_assert_msg(m != NULL, "%s not in the catalog", name);
	return m;
}

static inline void model_fx_release(struct model_fx *f)
{
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

#endif
