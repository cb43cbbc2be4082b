/*
 * cfg_fixture: the loader's inputs for suites of planner/cfg*.c: a source
 * set, a diagnostic list, the parsed root (NULL until the suite parses)
 * and a fresh temporary folder for files that a config includes, removed
 * by cfg_fx_release. The suite parses (cfg_parse_text or cfg_load) itself.
 */
#ifndef GTPLAN_TEST_CFG_FIXTURE_H
#define GTPLAN_TEST_CFG_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cfg.h"
#include "diag.h"

struct cfg_fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	char dir[64];
};

static inline void cfg_fx_init(struct cfg_fx *f)
{
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	f->root = NULL;
	strcpy(f->dir, "/tmp/gtplan-cfg-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
}

static inline void cfg_fx_release(struct cfg_fx *f)
{
	char cmd[128];

	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Writes dir/name (its one-level subfolder made when named) and returns
 * the full path in a static buffer. */
static inline const char *cfg_fx_put(struct cfg_fx *f, const char *name,
				     const char *text)
{
	static char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	if (strchr(name, '/')) {
		char sub[256];

		snprintf(sub, sizeof(sub), "%s/%.*s", f->dir,
			 (int)(strrchr(name, '/') - name), name);
		mkdir(sub, 0700);
	}
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(text, fp);
	ck_assert_int_eq(fclose(fp), 0);
	return path;
}

#endif
