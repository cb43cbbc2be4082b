/*
 * llsort tests: the comparison at the extremes, sort-uniq, and the lower
 * bound at both ends and between values.
 */
#include <check.h>
#include <limits.h>
#include <stdlib.h>

#include "harness.h"
#include "llsort.h"

START_TEST(cmp_orders_extremes)
{
	long long lo = LLONG_MIN, hi = LLONG_MAX, z = 0;

	ck_assert_int_lt(ll_cmp(&lo, &hi), 0); /* no overflow in x - y */
	ck_assert_int_gt(ll_cmp(&hi, &lo), 0);
	ck_assert_int_eq(ll_cmp(&z, &z), 0);
}
END_TEST

START_TEST(sort_uniq_keeps_each_value_once)
{
	long long v[] = { 5, -1, 5, 3, -1, 9, 3, 3 };
	const long long want[] = { -1, 3, 5, 9 };
	size_t n = ll_sort_uniq(v, sizeof(v) / sizeof(*v));

	ck_assert_uint_eq(n, 4);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(v[i], want[i]);
	ck_assert_uint_eq(ll_sort_uniq(v, 0), 0);
}
END_TEST

START_TEST(lower_bound_finds_the_slot)
{
	const long long v[] = { 2, 4, 4, 8 };

	ck_assert_uint_eq(ll_lower_bound(v, 4, 1), 0);
	ck_assert_uint_eq(ll_lower_bound(v, 4, 2), 0);
	ck_assert_uint_eq(ll_lower_bound(v, 4, 3), 1);
	ck_assert_uint_eq(ll_lower_bound(v, 4, 4), 1);
	ck_assert_uint_eq(ll_lower_bound(v, 4, 8), 3);
	ck_assert_uint_eq(ll_lower_bound(v, 4, 9), 4);
	ck_assert_uint_eq(ll_lower_bound(v, 0, 9), 0);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "cmp", cmp_orders_extremes },
		{ "sort_uniq", sort_uniq_keeps_each_value_once },
		{ "lower_bound", lower_bound_finds_the_slot },
	};

	return RUN_CASES("llsort", cases, 0);
}
