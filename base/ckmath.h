/*
 * ckmath: checked arithmetic on sizes. Every product of sizes that a
 * config sets goes through these, so that a hostile value can never wrap
 * (a wrapped product once turned 2^61 nodes into a "valid" 24-GPU plan).
 *
 * ck_mul/ck_add report overflow (1) and leave the exact result otherwise
 * (GCC and Clang's __builtin_*_overflow). The _sat forms saturate at
 * CK_SAT (LLONG_MAX): for estimates (bytes, flops, times) a saturated
 * value is simply "more than any limit", and every comparison against a
 * limit still says so. Header-only, so gtplan-run can use it too.
 */
#ifndef GTPLAN_CKMATH_H
#define GTPLAN_CKMATH_H

#include <limits.h>

#define CK_SAT LLONG_MAX

/* *out = a * b; 1 when it does not fit in a long long (then *out is
 * CK_SAT or -CK_SAT by the sign of the true result), else 0. */
static inline int ck_mul(long long a, long long b, long long *out)
{
	if (!__builtin_mul_overflow(a, b, out))
		return 0;
	*out = (a < 0) != (b < 0) ? -CK_SAT : CK_SAT;
	return 1;
}

/* *out = a + b; 1 when it does not fit, else 0 (saturated like ck_mul). */
static inline int ck_add(long long a, long long b, long long *out)
{
	if (!__builtin_add_overflow(a, b, out))
		return 0;
	*out = a < 0 ? -CK_SAT : CK_SAT;
	return 1;
}

/* a * b, saturated. */
static inline long long ck_mul_sat(long long a, long long b)
{
	long long r;

	ck_mul(a, b, &r);
	return r;
}

/* a + b, saturated. */
static inline long long ck_add_sat(long long a, long long b)
{
	long long r;

	ck_add(a, b, &r);
	return r;
}

/* The product of n factors, saturated; 1 for n = 0. */
static inline long long ck_prod_sat(const long long *f, int n)
{
	long long r = 1;

	for (int i = 0; i < n; i++)
		r = ck_mul_sat(r, f[i]);
	return r;
}

#endif
