/*
 * fw_list tests: the valid-value suggestions of the shape rules
 * (planner/rules_model.c) come from the divisors of a count. They must
 * list what scanning every value in [1, max] outward from `near` listed
 * (checked against that scan, kept here as the oracle, on every count up
 * to 1500), and do it in bounded time for big primes, highly composite
 * counts and counts past the world limit.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "harness.h"

/* The scan the divisor enumeration replaces: nearest first from `near`
 * clamped into [1, max], the lower of two equally near first. */
static void scan_list(char *buf, size_t len, long long near, long long max,
		      size_t limit, int (*keep)(long long, const void *),
		      const void *ctx)
{
	long long pick[16], t;
	size_t n = 0, used = 0;

	buf[0] = '\0';
	near = near > max ? max : near;
	near = near < 1 ? 1 : near;
	for (long long d = 0; n < limit && (near - d >= 1 || near + d <= max);
	     d++) {
		if (near - d >= 1 && near - d <= max && keep(near - d, ctx))
			pick[n++] = near - d;
		if (d && n < limit && near + d <= max && keep(near + d, ctx))
			pick[n++] = near + d;
	}
	for (size_t i = 1; i < n; i++) /* insertion sort: n <= 16 */
		for (size_t j = i; j > 0 && pick[j - 1] > pick[j]; j--) {
			t = pick[j];
			pick[j] = pick[j - 1];
			pick[j - 1] = t;
		}
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%lld",
					 i == 0 ? "" : i + 1 == n ? " or " : ", ",
					 pick[i]);
}

/* Divides n and is even or 1: a keep() stricter than divisibility, as
 * the heads and vLLM rules are. */
static int even_divisor(long long v, const void *ctx)
{
	return fw_divides(v, ctx) && (v == 1 || v % 2 == 0);
}

START_TEST(same_as_the_scan)
{
	char got[256], want[256];
	const long long nears[] = { -3, 1, 2, 7, 16, 100, 999, 5000 };
	const size_t limits[] = { 1, 6, 8 };
	int checked = 0;

	for (long long n = 1; n <= 1500; n++)
		for (size_t i = 0; i < sizeof(nears) / sizeof(*nears); i++)
			for (size_t j = 0; j < 3; j++) {
				long long max = (n * (long long)(j + 1)) / 3;
				int (*keep)(long long, const void *) =
					j == 1 ? even_divisor : fw_divides;

				fw_list(got, sizeof(got), nears[i], n, max,
					limits[j], keep, &n);
				scan_list(want, sizeof(want), nears[i], max,
					  limits[j], keep, &n);
				ck_assert_str_eq(got, want);
				checked++;
			}
	ck_assert_int_eq(checked, 1500 * 8 * 3);
}
END_TEST

START_TEST(big_primes)
{
	char buf[128];
	long long p = 16777213; /* the largest prime below 2^24 */

	ck_assert_uint_eq(fw_list(buf, sizeof(buf), 7, p, p, 8, fw_divides,
				  &p), 2);
	ck_assert_str_eq(buf, "1 or 16777213");
	/* capped below the prime: 1 alone */
	ck_assert_uint_eq(fw_list(buf, sizeof(buf), 7, p, 1 << 20, 8,
				  fw_divides, &p), 1);
	ck_assert_str_eq(buf, "1");
	/* (2^31 - 1)^2, far past the world limit: trial division stops at
	 * the cap 2^24, not at sqrt(n) = 2^31 - 1 or n */
	p = 2147483647LL * 2147483647LL;
	ck_assert_uint_eq(fw_list(buf, sizeof(buf), 1 << 20, p, 1 << 24, 8,
				  fw_divides, &p), 1);
	ck_assert_str_eq(buf, "1");
}
END_TEST

START_TEST(highly_composite)
{
	char buf[160];
	long long n = 8648640; /* 448 divisors, the most of any n < 2^24 */

	ck_assert_uint_eq(fw_list(buf, sizeof(buf), 100, n, n, 8, fw_divides,
				  &n), 8);
	ck_assert_str_eq(buf, "90, 91, 96, 99, 104, 105, 108 or 110");
	/* nearest to a large value: the big cofactors n / d */
	fw_list(buf, sizeof(buf), 5000000, n, n, 8, fw_divides, &n);
	ck_assert_str_eq(buf, "1081080, 1235520, 1441440, 1729728, 2162160, "
			 "2882880, 4324320 or 8648640");
	/* near past the cap: clamped to it */
	fw_list(buf, sizeof(buf), 1000, n, 1024, 6, fw_divides, &n);
	ck_assert_str_eq(buf, "936, 945, 960, 990, 1001 or 1008");
	n = 720720;
	fw_list(buf, sizeof(buf), 12, n, 16, 8, fw_divides, &n);
	ck_assert_str_eq(buf, "8, 9, 10, 11, 12, 13, 14 or 15");
}
END_TEST

START_TEST(nothing_to_list)
{
	char buf[64] = "stale";
	long long n = 12;

	ck_assert_uint_eq(fw_list(buf, sizeof(buf), 4, n, 0, 8, fw_divides,
				  &n), 0);
	ck_assert_str_eq(buf, "");
	n = 0;
	ck_assert_uint_eq(fw_list(buf, sizeof(buf), 4, n, 8, 8, fw_divides,
				  &n), 0);
	ck_assert_str_eq(buf, "");
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "same_as_the_scan", same_as_the_scan },
		{ "big_primes", big_primes },
		{ "highly_composite", highly_composite },
		{ "nothing_to_list", nothing_to_list },
	};

	return RUN_CASES("fw_list", cases, 0);
}
