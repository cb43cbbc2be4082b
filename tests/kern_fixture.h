/*
 * kern_fixture: what the kernels' Check suites (tests/test_kernels*.c)
 * share: zeroed buffers, deterministic data and an elementwise comparison
 * with a double reference.
 */
#ifndef GTPLAN_TEST_KERN_FIXTURE_H
#define GTPLAN_TEST_KERN_FIXTURE_H

#include <check.h>
#include <math.h>
#include <stdlib.h>

/* bytes of zeroed memory (at least 1), or the test fails. */
static inline void *take(size_t bytes)
{
	void *p = calloc(1, bytes > 0 ? bytes : 1);

	ck_assert_ptr_nonnull(p);
	return p;
}

/* Deterministic values in [-scale, scale). */
static inline void fill(float *v, long long n, unsigned seed, float scale)
{
	unsigned s = seed * 2654435761u + 12345u;

	for (long long i = 0; i < n; i++) {
		s = s * 1664525u + 1013904223u;
		v[i] = scale * ((float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f);
	}
}

/* |got - want| <= tol * max(1, |want|), elementwise. */
static inline void near(const float *got, const double *want, long long n,
			double tol, const char *what)
{
	for (long long i = 0; i < n; i++) {
		double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;

		ck_assert_msg(fabs(got[i] - want[i]) <= tol * scale,
			      "%s[%lld]: got %.9g, want %.9g", what, i,
			      (double)got[i], want[i]);
	}
}

#endif
