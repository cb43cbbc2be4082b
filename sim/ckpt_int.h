/*
 * ckpt_int: what the files of the ckpt module share (ckpt.h is the public
 * side). Not for other modules: include it only from sim/ckpt*.c.
 *
 * Files: ckpt_entry.c (a rank's entry of a tensor: its chunk, shape and
 * replica id), ckpt.c (the dense checkpoint plan, its findings and
 * ckpt_check), ckpt_opt.c (the optimizer state and its formats),
 * ckpt_expert.c (the experts of MoE layers), ckpt_bytes.c (the writers
 * and what each rank writes and reads, memoised over dp).
 *
 * The small helpers below are static inline: every file gets its own copy,
 * and the per-rank loops at 1M ranks stay free of calls into another file.
 */
#ifndef GTPLAN_CKPT_INT_H
#define GTPLAN_CKPT_INT_H

#include <stddef.h>

#include "ckmath.h"
#include "ckpt.h"
#include "strbuf.h"

#define B(a) (1u << (a))
#define CKPT_LIST 4 /* claimants named in a finding */

/* Each parameter element has OPT_STATES fp32 values in the distributed
 * optimizer: the main param, Adam's exp_avg and exp_avg_sq. The optimizer
 * shards them over the GTP-excluded dp_cp group (the one instance GTP
 * allows), F = CP x D ranks. */
#define OPT_STATES 3
#define OPT_BYTES 4

/* Their key names, in that order (ckpt_opt.c). */
extern const char *const ckpt_opt_state[OPT_STATES];

struct ckpt_item {
	enum ckpt_kind kind;
	char name[96];         /* layer-relative name, or the full key */
	long long rows, cols;
	long long stage;       /* -1: one per layer (and the objects); else
				  the one stage that saves it */
	long long vdiv;        /* CKPT_VOCAB: make_vocab_size_divisible_by */
};

/* One ckpt_check: its inputs, where findings go, and the counters of the
 * key being checked. */
struct ckpt_ctx {
	const struct plan *p;
	const struct cfg_node *root;
	const struct stack *s;
	struct diag_list *diags;
	long long *cnt;        /* per chunk of the current key */
	long long n_cnt;
	enum stack_opt_format opt; /* the optimizer's layout (never UNSET) */
	long long experts;     /* E of each MoE layer; 0: no experts planned */
};

static inline long long clamp(long long x, long long lo, long long hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

static inline long long rank_in(const struct lay_grid *grid, unsigned axes,
				const long long coord[LAY_NAXES])
{
	long long idx, in;

	lay_group_of_coords(grid, axes, coord, &idx, &in);
	return in;
}

/* Elements of range i of n elements cut in f equal ranges (the last
 * shorter). */
static inline long long range_len(long long n, long long f, long long i)
{
	long long sz = n / f + (n % f != 0);

	return clamp(n - ck_mul_sat(i, sz), 0, sz);
}

static inline long long chunk_index(const struct ckpt_entry *e)
{
	return e->chunk[0] * e->frag[1] + e->chunk[1];
}

/* The entry of item `it` at coord c. */
static inline void item_entry(const struct plan *p, const struct stack *s,
			      const struct ckpt_item *it,
			      const long long c[LAY_NAXES],
			      struct ckpt_entry *e)
{
	if (it->kind == CKPT_VOCAB)
		ckpt_vocab_entry_of(p, s, it->rows, it->vdiv, it->cols, c, e);
	else
		ckpt_entry_of(p, s, it->kind, it->rows, it->cols, 1, c, e);
}

/* How many keys of tensor item `it` stage st (nl layers) saves: nl for a
 * per-layer tensor, 1 on its own stage for the others. */
static inline long long mult(const struct ckpt_item *it, long long st,
			     long long nl)
{
	return it->stage < 0 ? nl : it->stage == st;
}

/* Coordinates of the i-th rank of stage st on grid g (every axis but pp,
 * in the grid's order). The size is read once: a caller's g may alias c
 * in the compiler's view, and this runs per rank (one division, not two). */
static inline void grid_stage_coords(const struct lay_grid *g, long long st,
				     long long i, long long c[LAY_NAXES])
{
	for (int a = 0; a < LAY_NAXES; a++) {
		enum lay_axis ax = g->order.axis[a];
		long long n;

		if (ax == LAY_PP)
			continue;
		n = g->size[ax];
		c[ax] = i % n;
		i /= n;
	}
	c[LAY_PP] = st;
}

/* The same on the dense grid. */
static inline void stage_coords(const struct plan *p, long long st,
				long long i, long long c[LAY_NAXES])
{
	grid_stage_coords(&p->dense, st, i, c);
}

/* ---- ckpt.c: findings ---------------------------------------------------- */

/* Where a finding about gtplan.stack key `key` points. */
/* Names claimant number n (1-based, counting every one) of a chunk in
 * *who: the first CKPT_LIST by rank and coordinates on grid g (the expert
 * grid's names when expert), then " and N more" from ckpt_claimants_end
 * with the total. */
void ckpt_claimant(struct strbuf *who, long long n, const struct lay_grid *g,
		   const long long c[LAY_NAXES], int expert);
void ckpt_claimants_end(struct strbuf *who, long long n);

struct diag_loc ckpt_stack_loc(const struct ckpt_ctx *x, int key);
/* Why the stack elects the main replicas of kind k as it does. */
const char *ckpt_why(const struct ckpt_ctx *x, enum ckpt_kind k);
/* The checkpoint key of item `it` in layer `layer`. */
void ckpt_key_of(const struct ckpt_item *it, long long layer, char *buf,
		 size_t len);

/* ---- ckpt_opt.c: the optimizer state ------------------------------------- */

int ckpt_counters(struct ckpt_ctx *x, long long n);
void ckpt_opt_report(const struct ckpt_ctx *x, const char *key,
		     long long chunk, long long nchunks, long long cnt);
int ckpt_check_opt(struct ckpt_ctx *x, const struct ckpt_item *it,
		   size_t n_tensors, long long st, long long layer,
		   long long nl, int report, struct ckpt_summary *out);
long long ckpt_opt_buffer(const struct ckpt_ctx *x,
			  const struct ckpt_item *it, size_t n_tensors,
			  long long st, long long nl,
			  const long long c[LAY_NAXES]);
long long ckpt_opt_bytes(const struct ckpt_ctx *x, const struct ckpt_item *it,
			 size_t n_tensors, long long st, long long nl,
			 const long long c[LAY_NAXES]);

/* ---- ckpt_expert.c: the experts ------------------------------------------ */

long long ckpt_first_moe(const struct model_shape *m, long long first,
			 long long nl);
int ckpt_check_expert(struct ckpt_ctx *x, const struct ckpt_item *it,
		      long long st, long long layer, long long nmoe,
		      int report, long long *shards);
int ckpt_check_expert_opt(struct ckpt_ctx *x, const struct ckpt_item *it,
			  size_t n_ex, long long st, long long layer,
			  long long nmoe, int report,
			  struct ckpt_summary *out);
void ckpt_expert_bytes(const struct ckpt_ctx *x, const struct ckpt_item *it,
		       size_t n_ex, long long nmoe, int dist,
		       const long long c[LAY_NAXES], long long *weight,
		       long long *opt, long long *read, int *writes);

/* ---- ckpt_bytes.c: bytes per rank ---------------------------------------- */

struct ckpt_bytes_memo;

/* NULL when out of memory. */
struct ckpt_bytes_memo *ckpt_memo_new(const struct plan *p,
				      enum stack_opt_format opt);
void ckpt_memo_clear(struct ckpt_bytes_memo *m);
void ckpt_memo_free(struct ckpt_bytes_memo *m);
/* Counts the writers of stage st and raises the max_rank_* bytes of out. */
void ckpt_stage_bytes(const struct ckpt_ctx *x, struct ckpt_bytes_memo *memo,
		      const struct ckpt_item *it, size_t n, size_t n_tensors,
		      const struct ckpt_item *ex, size_t n_ex, long long st,
		      long long nl, long long nmoe, int dist,
		      struct ckpt_summary *out);

#endif
