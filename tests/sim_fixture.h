/*
 * sim_fixture: a YAML config text through the pipeline `gtplan lint` runs
 * (parse, plan_build, sim_run), for suites that test the rules and the
 * simulator on real configs. The suite checks what it needs of the result
 * (sim_fx_run returns sim_run's status) and calls sim_fx_release.
 */
#ifndef GTPLAN_TEST_SIM_FIXTURE_H
#define GTPLAN_TEST_SIM_FIXTURE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "plan.h"
#include "simulate.h"

struct sim_fx {
	struct src_set srcs;
	struct diag_list diags;
	struct cfg_node *root;
	struct plan plan;
	struct sim_report sim;
};

/* Parses `yaml` as t.yaml (a copy: the config owns it) and builds the plan,
 * both of which must succeed, then simulates every call. */
static inline int sim_fx_run(struct sim_fx *f, const char *yaml)
{
	char *text = strdup(yaml);

	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	plan_init(&f->plan);
	sim_report_init(&f->sim);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(cfg_parse_text("t.yaml", text, strlen(yaml), &f->srcs,
					&f->diags, &f->root), 0);
	ck_assert_int_eq(plan_build(&f->plan, f->root, "t.yaml", &f->diags),
			 0);
	return sim_run(&f->plan, f->root, NULL, &f->sim, &f->diags);
}

static inline void sim_fx_release(struct sim_fx *f)
{
	sim_report_release(&f->sim);
	plan_release(&f->plan);
	cfg_free(f->root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

/* Findings with diagnostic code `code`. */
static inline size_t sim_fx_count(const struct sim_fx *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strcmp(diag_code(&f->diags.v[i]), code) == 0;
	return n;
}

/* The first finding with diagnostic code `code`, or NULL. */
static inline const struct diag *sim_fx_first(const struct sim_fx *f,
					       const char *code)
{
	for (size_t i = 0; i < f->diags.n; i++)
		if (strcmp(diag_code(&f->diags.v[i]), code) == 0)
			return &f->diags.v[i];
	return NULL;
}

#endif
