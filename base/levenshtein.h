/*
 * lev: weighted Damerau-Levenshtein distance, as git's levenshtein.c, and
 * the "did you mean" pick built on it.
 *
 * lev_distance(s1, s2, w, s, a, d) is the cheapest way to turn s1 into s2
 * with swaps of two adjacent characters (cost w), substitutions (s),
 * insertions (a: a character added to s1) and deletions (d: a character of
 * s1 dropped). git's help.c uses w=0, s=2, a=1, d=3 for unknown commands:
 * forgetting a letter is the most common typo, typing an extra one less so.
 *
 * Ownership: the words are the caller's and only read; nothing is kept or
 * handed out (lev_suggest returns an index into cands).
 */
#ifndef GTPLAN_LEVENSHTEIN_H
#define GTPLAN_LEVENSHTEIN_H

#include <stddef.h>

/* git's weights for "did you mean" (help.c). */
#define LEV_SWAP  0
#define LEV_SUBST 2
#define LEV_ADD   1
#define LEV_DEL   3

/* Hostile-input limit: words longer than this are never compared (the
 * matrix rows are sized by the second word). */
#define LEV_MAX_WORD 1024

/* The weighted distance from s1 to s2 (bytes, case-sensitive). Returns -1
 * when a word is longer than LEV_MAX_WORD or memory runs out. */
int lev_distance(const char *s1, const char *s2, int w, int s, int a, int d);

/* lev_distance with git's weights, after folding case and '-' to '_' in
 * both words (so `Tensor-Model-Parallel-Size` is 0 away from
 * `tensor_model_parallel_size`). */
int lev_key_distance(const char *typed, const char *known);

/* The largest key distance still treated as a typo of a `len`-byte word:
 * a third of its length, at least 3 (one doubled letter) and at most 6,
 * but below the length itself (so 0 for one letter, 1 for two). */
int lev_typo_limit(size_t len);

/* Index of the candidate closest to `typed` by lev_key_distance, or -1 when
 * there is none, when two candidates tie for the best distance, or when the
 * best is over lev_typo_limit(strlen(typed)). NULL entries are skipped.
 * *dist (may be NULL) receives the best distance, or -1. */
long lev_suggest(const char *typed, const char *const *cands, size_t n,
		 int *dist);

#endif
