/*
 * harness: how every Check suite runs: one tcase per behaviour, each test
 * forked (Check's default, so a crash fails one test, not the suite), a
 * per-test timeout, Check's summary line, and the exit status make test
 * reads.
 */
#ifndef GTPLAN_TEST_HARNESS_H
#define GTPLAN_TEST_HARNESS_H

#include <check.h>
#include <stddef.h>
#include <stdlib.h>

struct test_case {
	const char *name;   /* the tcase: one behaviour */
	const TTest *test;
};

/* Runs the cases as suite `suite_name`; timeout_s <= 0 keeps Check's
 * default (4 s, or CK_DEFAULT_TIMEOUT). setup and teardown (NULL: none)
 * run around each test, inside its fork (Check's checked fixture).
 * Returns EXIT_SUCCESS when every test passed. */
static inline int run_cases_fixture(const char *suite_name,
				    const struct test_case *cases, size_t n,
				    double timeout_s, SFun setup,
				    SFun teardown)
{
	Suite *s = suite_create(suite_name);
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < n; i++) {
		TCase *tc = tcase_create(cases[i].name);

		if (setup || teardown)
			tcase_add_checked_fixture(tc, setup, teardown);
		if (timeout_s > 0)
			tcase_set_timeout(tc, timeout_s);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int run_cases(const char *suite_name,
			    const struct test_case *cases, size_t n,
			    double timeout_s)
{
	return run_cases_fixture(suite_name, cases, n, timeout_s, NULL, NULL);
}

#define N_CASES(cases) (sizeof(cases) / sizeof(*(cases)))
#define RUN_CASES(name, cases, timeout_s) \
	run_cases((name), (cases), N_CASES(cases), (timeout_s))
#define RUN_CASES_FIXTURE(name, cases, timeout_s, setup, teardown) \
	run_cases_fixture((name), (cases), N_CASES(cases), (timeout_s), \
			  (setup), (teardown))

#endif
