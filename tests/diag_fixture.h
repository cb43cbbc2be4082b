/*
 * diag_fixture: the finding of one code in a suite's diagnostics, for the
 * suites that expect a rule to fire once (or not at all).
 */
#ifndef GTPLAN_TEST_DIAG_FIXTURE_H
#define GTPLAN_TEST_DIAG_FIXTURE_H

#include <check.h>
#include <string.h>

#include "diag.h"

/* The finding with `code` in l, NULL where there is none; a second one
 * fails the test (a rule reports a mistake once). */
static inline const struct diag *diag_once(const struct diag_list *l,
					   const char *code)
{
	const struct diag *d = NULL;

	for (size_t i = 0; i < l->n; i++)
		if (strcmp(diag_code(&l->v[i]), code) == 0) {
			ck_assert_msg(!d, "%s reported twice", code);
			d = &l->v[i];
		}
	return d;
}

#endif
