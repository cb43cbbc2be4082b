/*
 * llsort: sorting and searching arrays of long long (see llsort.h).
 */
#include "llsort.h"

#include <stdlib.h>

int ll_cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

size_t ll_sort_uniq(long long *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), ll_cmp);
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

size_t ll_lower_bound(const long long *v, size_t n, long long x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
