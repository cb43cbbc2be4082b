/*
 * classes: ranks that behave alike, found by colour refinement.
 *
 * The matcher must not play a million programs rank by rank. Ranks that
 * run the same program, in groups whose members run the same programs, in
 * groups whose ... behave identically under NCCL matching. Colour
 * refinement (1-dimensional Weisfeiler-Leman) finds the coarsest such
 * partition, an equitable partition of the ranks:
 *   colour_0(r)   = the caller's initial colour (program, stage, called)
 *   colour_i+1(r) = (colour_i(r), for each group kind k:
 *                    the multiset of colour_i over r's k-group, and for the
 *                    pp kind the stage-ordered tuple plus r's own stage)
 * until a round adds no colour. Each round is O(W x kinds) time with a
 * running mixed-radix odometer over both grids (no divisions), and O(W)
 * memory: one uint32 colour per rank plus one 64-bit signature per group.
 * Groups are never stored. Multisets are hashed as sums of 64-bit mixes;
 * two different multisets collide with probability about 2^-64.
 *
 * Ownership: a cls_part owns its arrays; cls_release() frees them.
 */
#ifndef GTPLAN_CLASSES_H
#define GTPLAN_CLASSES_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* Hostile-input limit: refinement rounds before giving up. */
#define CLS_MAX_ROUNDS 256

struct cls_part {
	uint32_t *colour;   /* per rank; after cls_refine the class 0..n-1 */
	long long world;
	size_t n;           /* classes */
	long long *count;   /* members of each class */
	long long *rep;     /* lowest rank of each class */
	int rounds;         /* refinement rounds run */
};

/* Allocates the colour array of p->world ranks (zeroed): the caller
 * writes the initial colours into cp->colour. Returns 0, or -1 when out
 * of memory. */
int cls_init(struct cls_part *cp, long long world);
void cls_release(struct cls_part *cp);

/* Refines the colours over the layout group kinds in `kinds` (bit k =
 * lay_group_kind_at(k); expert kinds need p->expert_grid_ok) until stable,
 * then numbers the classes 0..n-1 in order of their lowest rank. Returns
 * 0, or -1 when out of memory or past CLS_MAX_ROUNDS. */
int cls_refine(struct cls_part *cp, const struct plan *p, uint64_t kinds);

/* The classes of one group, with how many members each has there. */
struct cls_comp {
	uint32_t cls;
	long long n;
};

/* The composition of `rank`'s group of layout kind `kind` (sorted by
 * class), or of the whole world when kind is not a layout kind. *out is
 * heap-allocated (free()). Returns 0, or -1 when out of memory. */
int cls_group_comp(const struct cls_part *cp, const struct plan *p,
		   unsigned kind, long long rank, struct cls_comp **out,
		   size_t *n);

/* The grid a layout group kind lives on. */
const struct lay_grid *cls_grid(const struct plan *p, unsigned kind);

#endif
