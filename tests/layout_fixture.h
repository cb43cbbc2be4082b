/*
 * layout_fixture: helpers the layout suites share (tests/test_layout.c,
 * tests/test_layout_plan_json.c): a rank grid's groups printed as the
 * nested lists docs/notes/megatron-semantics.md writes them in, and the
 * GTP groups of its §6.1 (W 24, TP 4, CP 1, G 3, PP 1, either order).
 */
#ifndef GTPLAN_TEST_LAYOUT_FIXTURE_H
#define GTPLAN_TEST_LAYOUT_FIXTURE_H

#include <check.h>
#include <stdio.h>

#include "layout.h"

/* docs/notes/megatron-semantics.md §6.1's GTP groups. */
#define GTP_6_1 "[[0,4,8],[1,5,9],[2,6,10],[3,7,11],[12,16,20],[13,17,21]," \
		"[14,18,22],[15,19,23]]"

/* The groups of `axes` as "[[0,1],[2,3]]"; the caller frees it. */
static inline char *groups_str(const struct lay_grid *g, unsigned axes)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	long long n = lay_group_count(g, axes), size = lay_group_size(g, axes);
	long long i, j;

	ck_assert_ptr_nonnull(f);
	fputc('[', f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s[", i ? "," : "");
		for (j = 0; j < size; j++)
			fprintf(f, "%s%lld", j ? "," : "",
				lay_group_member(g, axes, i, j));
		fputc(']', f);
	}
	fputc(']', f);
	fclose(f);
	return buf;
}

#endif
