/*
 * diag_fixture: the finding of one code in a suite's diagnostics, for the
 * suites that expect a rule to fire once (or not at all), and where a
 * finding stands.
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

/* d stands at line:col of its file, under the schema path `path` (NULL:
 * none). */
static inline void diag_at(const struct diag *d, int line, int col,
			   const char *path)
{
	ck_assert_int_eq(d->loc.line, line);
	ck_assert_int_eq(d->loc.col, col);
	if (path)
		ck_assert_str_eq(d->path, path);
	else
		ck_assert_ptr_null(d->path);
}

#endif
