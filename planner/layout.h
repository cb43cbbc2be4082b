/*
 * layout: Megatron's rank numbering and process groups, with GTP.
 *
 * Megatron numbers ranks by an order string whose leftmost token varies
 * fastest (RankGenerator). gtplan's dense order has the tokens tp, cp, gtp,
 * ep, dp, pp (`gtp_remat` is accepted for gtp); the default is
 * "tp-cp-gtp-ep-dp-pp" (the order since Megatron-LM PR #6868), so
 *     rank = t + TP*(c + CP*(g + G*(d + D*p))).
 * The expert grid uses the same order with gtp moved right after ep (as
 * Megatron's _inject_gtp_remat_axis(order, after="ep")), with cp = 1:
 *     rank = et + ETP*(e + EP*(eg + EG*(ed + EDP*p))) for the default order.
 *
 * Groups follow generate_masked_orthogonal_rank_groups: for a group kind (a
 * set of axes), groups are listed by the mixed-radix number of the other
 * axes' coordinates (earliest axis in the order least significant), and ranks
 * inside a group by the group's own axes' coordinates (earliest least
 * significant), which makes each list ascending.
 *
 * Nothing here allocates per rank: ranks and groups are computed on demand,
 * so a 1M-rank world costs O(1) memory.
 *
 * Ownership: a struct lay_grid and struct lay_order are the caller's
 * values (no heap inside, no release); the group kinds and names returned
 * are static tables; lay_order_str writes into the caller's buffer.
 */
#ifndef GTPLAN_LAYOUT_H
#define GTPLAN_LAYOUT_H

#include <stddef.h>

enum lay_axis { LAY_TP, LAY_CP, LAY_GTP, LAY_EP, LAY_DP, LAY_PP, LAY_NAXES };

/* Axes in order-string order, leftmost (fastest) first; all six present.
 * `given` has bit (1u << axis) for each axis the order string named; the
 * others were appended by lay_order_parse. Megatron appends a missing axis
 * only when its size is 1 and refuses one of another size, so a caller can
 * check given against the sizes. Orders built by hand may leave it 0. */
struct lay_order {
	enum lay_axis axis[LAY_NAXES];
	unsigned given;
};

#define LAY_DEFAULT_ORDER "tp-cp-gtp-ep-dp-pp"

/* Parses an order string. Tokens are separated by '-'; each of tp, cp, gtp
 * (or gtp_remat), ep, dp, pp may appear once; gtp must appear; missing
 * tokens other than gtp are appended at the end (Megatron appends missing
 * size-1 axes). Returns 0, or -1 with a plain-words reason in err. */
int lay_order_parse(const char *s, struct lay_order *o, char *err,
		    size_t errlen);
/* Canonical text of an order ("tp-cp-gtp-ep-dp-pp"); writes into buf. */
const char *lay_order_str(const struct lay_order *o, char *buf, size_t len);
/* The expert grid's order: `o` with gtp moved right after ep. */
void lay_order_expert(const struct lay_order *o, struct lay_order *out);
const char *lay_axis_name(enum lay_axis a);
/* 1 when every axis appears exactly once in o (a parsed order always does;
 * a zero-initialised one does not). */
int lay_order_valid(const struct lay_order *o);

/* One grid: a size per axis and the order. */
struct lay_grid {
	struct lay_order order;
	long long size[LAY_NAXES];
	long long world; /* product of sizes */
	long long stride[LAY_NAXES]; /* filled by lay_grid_init */
};

/* Fills strides and world. Sizes must be >= 1. */
void lay_grid_init(struct lay_grid *g, const struct lay_order *o,
		   const long long size[LAY_NAXES]);
long long lay_rank(const struct lay_grid *g, const long long coord[LAY_NAXES]);
void lay_coords(const struct lay_grid *g, long long rank,
		long long coord[LAY_NAXES]);
/* Advances coord (lay_coords of some rank) to the next rank's without
 * dividing, for loops over every rank; the last rank wraps to rank 0. */
void lay_coords_next(const struct lay_grid *g, long long coord[LAY_NAXES]);

/* A group kind: a set of axes on the dense or the expert grid. */
struct lay_group_kind {
	const char *name;      /* "tp", "dp_cp", "egtp", ... */
	unsigned axes;         /* bit (1u << lay_axis) per axis */
	int expert;            /* 1: on the expert grid */
	const char *meaning;   /* one line, for explain and docs */
};

/* The group kinds of the plan, in a fixed order:
 * tp, cp, gtp, pp, dp_replicate, dp, dp_cp, dp_cp_replicate, mp, mp_gtp,
 * ep, etp, egtp, edp, edp_gtp. */
size_t lay_group_kind_count(void);
const struct lay_group_kind *lay_group_kind_at(size_t i);
const struct lay_group_kind *lay_group_kind_find(const char *name);

/* Number of groups of a kind and their size on grid g. */
long long lay_group_count(const struct lay_grid *g, unsigned axes);
long long lay_group_size(const struct lay_grid *g, unsigned axes);
/* Member `i` (0-based, ascending) of group `index`. */
long long lay_group_member(const struct lay_grid *g, unsigned axes,
			   long long index, long long i);
/* Which group of this kind `rank` is in, and its rank inside it. */
void lay_group_of(const struct lay_grid *g, unsigned axes, long long rank,
		  long long *index, long long *rank_in_group);
/* The same from a rank's coordinates (lay_coords), without dividing again. */
void lay_group_of_coords(const struct lay_grid *g, unsigned axes,
			 const long long coord[LAY_NAXES], long long *index,
			 long long *rank_in_group);

#endif
