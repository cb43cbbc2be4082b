/*
 * lev: git's weighted Damerau-Levenshtein distance (levenshtein.c), kept to
 * three rows of the matrix, and the "did you mean" pick of help.c adapted
 * to config keys: only a unique best candidate within a length-scaled limit
 * is suggested.
 */
#include "levenshtein.h"

#include <stdlib.h>
#include <string.h>

/* Rows for words up to this length live on the stack. */
#define LEV_STACK_ROW 128

int lev_distance(const char *s1, const char *s2, int w, int s, int a, int d)
{
	size_t len1 = strlen(s1), len2 = strlen(s2);
	int stack[3][LEV_STACK_ROW + 1];
	int *heap = NULL, *row0, *row1, *row2, *tmp, r;

	if (len1 > LEV_MAX_WORD || len2 > LEV_MAX_WORD)
		return -1;
	if (len2 <= LEV_STACK_ROW) {
		row0 = stack[0];
		row1 = stack[1];
		row2 = stack[2];
	} else {
		heap = malloc(3 * (len2 + 1) * sizeof(*heap));
		if (!heap)
			return -1;
		row0 = heap;
		row1 = heap + len2 + 1;
		row2 = heap + 2 * (len2 + 1);
	}
	/* row1 is the previous row, row0 the one before it (for swaps). */
	for (size_t j = 0; j <= len2; j++)
		row1[j] = (int)j * a;
	for (size_t i = 0; i < len1; i++) {
		row2[0] = (int)(i + 1) * d;
		for (size_t j = 0; j < len2; j++) {
			/* substitution (or a match) */
			row2[j + 1] = row1[j] + s * (s1[i] != s2[j]);
			/* swap of two adjacent characters */
			if (i > 0 && j > 0 && s1[i - 1] == s2[j] &&
			    s1[i] == s2[j - 1] && row2[j + 1] > row0[j - 1] + w)
				row2[j + 1] = row0[j - 1] + w;
			/* deletion from s1 */
			if (row2[j + 1] > row1[j + 1] + d)
				row2[j + 1] = row1[j + 1] + d;
			/* insertion into s1 */
			if (row2[j + 1] > row2[j] + a)
				row2[j + 1] = row2[j] + a;
		}
		tmp = row0;
		row0 = row1;
		row1 = row2;
		row2 = tmp;
	}
	r = row1[len2];
	free(heap);
	return r;
}

/* A copy of `s` with ASCII case folded and '-' read as '_'; NULL when out
 * of memory or too long. */
static char *fold_key(const char *s)
{
	size_t n = strlen(s);
	char *f;

	if (n > LEV_MAX_WORD)
		return NULL;
	f = malloc(n + 1);
	if (!f)
		return NULL;
	for (size_t i = 0; i <= n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		else if (c == '-')
			c = '_';
		f[i] = c;
	}
	return f;
}

int lev_key_distance(const char *typed, const char *known)
{
	char *a = fold_key(typed), *b = fold_key(known);
	int r = -1;

	if (a && b)
		r = lev_distance(a, b, LEV_SWAP, LEV_SUBST, LEV_ADD, LEV_DEL);
	free(a);
	free(b);
	return r;
}

/*
 * Tuned on the 295 NeMo-RL example configs (tests/schema_corpus_check.py):
 * with this limit none of their keys that the config schema does not
 * declare is taken for a typo (the closest calls, top-level `grpo` against
 * `gtplan` and dtensor_cfg.expert_parallel_size against
 * context_parallel_size, are 3 over the limit), while over 99% of the
 * single dropped, doubled, swapped or wrong letters in a declared key are
 * caught (the rest tie with a sibling key or hit a two-letter key).
 */
int lev_typo_limit(size_t len)
{
	size_t l = len / 3;

	if (l < 3)
		l = 3;
	if (l > 6)
		l = 6;
	/* a one- or two-letter word is not "one typo" from every other */
	if (len && l > len - 1)
		l = len - 1;
	return len ? (int)l : 0;
}

long lev_suggest(const char *typed, const char *const *cands, size_t n,
		 int *dist)
{
	long best = -1;
	int best_d = -1, tie = 0;

	for (size_t i = 0; i < n; i++) {
		int d;

		if (!cands[i])
			continue;
		d = lev_key_distance(typed, cands[i]);
		if (d < 0)
			continue;
		if (best_d < 0 || d < best_d) {
			best = (long)i;
			best_d = d;
			tie = 0;
		} else if (d == best_d && strcmp(cands[i], cands[best])) {
			tie = 1;
		}
	}
	if (dist)
		*dist = best_d;
	if (best < 0 || tie || best_d > lev_typo_limit(strlen(typed)))
		return -1;
	return best;
}
