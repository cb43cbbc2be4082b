/*
 * ckpt_entry: a rank's checkpoint entry of one tensor (its chunk, local
 * shape, logical rows and replica id) on the dense or the expert grid (see
 * ckpt.h).
 */
#include "ckpt_int.h"

#include <string.h>

static long long round_up(long long x, long long m)
{
	return m > 0 ? (x + m - 1) / m * m : x;
}

/* The entry on `grid` (the dense grid, or the expert grid whose TP, GTP
 * and DP axes are ETP, EG and EDP). `slice`: the rows of one TP slice of
 * a column-parallel weight (0: rows / TP rounded up; the vocabulary's
 * padded / TP). Over 80 lines on purpose: one case per entry kind, each
 * that kind's sharded layout, kept in one switch so the kinds read side by
 * side. */
static void entry_on(const struct plan *p, const struct lay_grid *grid,
		     const struct stack *s, enum ckpt_kind k, long long rows,
		     long long cols, long long pad, long long slice,
		     const long long coord[LAY_NAXES], struct ckpt_entry *e)
{
	long long tp = grid->size[LAY_TP], g = grid->size[LAY_GTP];
	long long t = coord[LAY_TP], gi = coord[LAY_GTP];
	long long dp_cp = rank_in(grid, B(LAY_CP) | B(LAY_DP), coord);
	/* the writer of a GTP-sharded piece: elected over the GTP-excluded
	 * dp_cp group (docs/notes/megatron-semantics.md §2.4), or wrongly
	 * over dp_cp_gtp */
	long long writer = s->writer_dp_cp_gtp ?
		rank_in(grid, B(LAY_CP) | B(LAY_DP) | B(LAY_GTP), coord) :
		dp_cp;
	long long l, lp, sz;

	memset(e, 0, sizeof(*e));
	if (g < 1)
		g = 1;
	if (pad < 1)
		pad = 1;
	e->frag[0] = e->frag[1] = 1;
	switch (k) {
	case CKPT_COLUMN: /* (0, t*G + g, TP*G) */
	case CKPT_VOCAB:
		l = slice > 0 ? slice : (rows + tp - 1) / tp;
		lp = round_up(l, g * pad);
		sz = lp / g;
		e->global[0] = rows;
		e->global[1] = cols;
		e->frag[0] = tp * g;
		e->chunk[0] = t * g + gi;
		e->local[0] = sz;
		e->local[1] = cols;
		e->first_row = t * l + gi * sz;
		e->real_rows = clamp(l - gi * sz, 0, sz);
		/* rows past the logical end (the padded vocabulary) */
		e->real_rows = clamp(rows - e->first_row, 0, e->real_rows);
		e->replica[2] = writer;
		break;
	case CKPT_ROW: /* (0, g, G) and (1, t, TP) */
		lp = round_up(rows, g * pad);
		sz = lp / g;
		e->global[0] = rows;
		e->global[1] = cols;
		e->frag[0] = g;
		e->frag[1] = tp;
		e->chunk[0] = gi;
		e->chunk[1] = t;
		e->local[0] = sz;
		e->local[1] = cols / tp;
		e->first_row = gi * sz;
		e->real_rows = clamp(rows - gi * sz, 0, sz);
		e->replica[2] = writer;
		break;
	case CKPT_NORM:
		e->global[0] = e->local[0] = rows;
		e->global[1] = e->local[1] = 1;
		e->real_rows = rows;
		if (s->replica_dp_cp) { /* vanilla: (0, t, GTP-excluded dp_cp) */
			e->replica[1] = t;
			e->replica[2] = dp_cp;
		} else { /* g folded into the TP slot */
			e->replica[1] = t * g + gi;
			e->replica[2] = dp_cp;
		}
		break;
	case CKPT_RNG: /* (pp, tp) object, replica = dp_cp rank */
		e->global[0] = e->frag[0] = p->pp;
		e->global[1] = e->frag[1] = tp;
		e->chunk[0] = coord[LAY_PP];
		e->chunk[1] = t;
		e->local[0] = e->local[1] = 1;
		e->replica[2] = s->rng_dp_cp ? dp_cp :
			rank_in(grid, B(LAY_CP) | B(LAY_DP) | B(LAY_GTP), coord);
		break;
	case CKPT_LOADER: /* one object per lane, saved by its first rank */
		e->global[0] = e->frag[0] = p->lanes;
		e->chunk[0] = rank_in(grid, B(LAY_GTP) | B(LAY_DP), coord);
		e->local[0] = e->local[1] = 1;
		e->global[1] = 1;
		e->replica[0] = coord[LAY_PP];
		e->replica[1] = t;
		e->replica[2] = coord[LAY_CP];
		break;
	default:
		break;
	}
	e->main = !e->replica[0] && !e->replica[1] && !e->replica[2];
}

void ckpt_entry_of(const struct plan *p, const struct stack *s,
		   enum ckpt_kind k, long long rows, long long cols,
		   long long pad, const long long coord[LAY_NAXES],
		   struct ckpt_entry *e)
{
	entry_on(p, &p->dense, s, k, rows, cols, pad, 0, coord, e);
}

void ckpt_expert_entry_of(const struct plan *p, const struct stack *s,
			  enum ckpt_kind k, long long rows, long long cols,
			  long long pad, const long long coord[LAY_NAXES],
			  struct ckpt_entry *e)
{
	entry_on(p, &p->expert, s, k, rows, cols, pad, 0, coord, e);
}

long long ckpt_padded_vocab(long long vocab, long long divisor, long long tp)
{
	return round_up(vocab, (divisor > 0 ? divisor : 128) * tp);
}

void ckpt_vocab_entry_of(const struct plan *p, const struct stack *s,
			 long long vocab, long long divisor, long long hidden,
			 const long long coord[LAY_NAXES],
			 struct ckpt_entry *e)
{
	entry_on(p, &p->dense, s, CKPT_VOCAB, vocab, hidden, 1,
		 ckpt_padded_vocab(vocab, divisor, p->tp) / p->tp, coord, e);
}
