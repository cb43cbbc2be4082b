/*
 * llsort: sorting and searching arrays of long long, the comparison and
 * uniq helpers the planner, the simulator and the renderer share.
 *
 * Ownership: every function works in place on the caller's array and
 * allocates nothing.
 */
#ifndef GTPLAN_LLSORT_H
#define GTPLAN_LLSORT_H

#include <stddef.h>

/* qsort's comparison of two long longs: ascending, without overflow. */
int ll_cmp(const void *a, const void *b);
/* Sorts v ascending and drops repeats; returns how many values remain
 * (they are v[0..return)). */
size_t ll_sort_uniq(long long *v, size_t n);
/* The first index of the sorted v whose value is not below x (n when every
 * value is below): where x is, or would be inserted. */
size_t ll_lower_bound(const long long *v, size_t n, long long x);

#endif
