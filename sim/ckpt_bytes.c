/*
 * ckpt_bytes: the writers of a stage and what each rank writes and reads
 * (weights, optimizer state, the experts' through ckpt_expert.c), the dense
 * part memoised over the ranks that differ only in dp (see ckpt_int.h).
 */
#include "ckmath.h"
#include "ckpt_int.h"

#include <stdlib.h>
#include <string.h>

/* k pieces of rows x cols bf16 elements, in bytes (saturated). */
static long long piece_bytes(long long k, long long rows, long long cols)
{
	long long f[] = { k, rows, cols, 2 };

	return ck_prod_sat(f, 4);
}

/* ---- bytes per rank ------------------------------------------------------ */

/* What one rank of a stage writes and reads of the model's tensors, and its
 * flat optimizer buffer (dp_reshardable's range of it is the caller's: it
 * depends on the rank's dp_cp position), or its optimizer bytes in the
 * other formats. */
struct rank_bytes {
	int valid, writes;
	long long bytes, read, buf, ob;
};

/* A rank's entries depend on its dp coordinate only through rank_in's zero
 * test, so ranks that differ only in dp >= 1 write and read alike: the
 * bytes are kept per (coordinates but dp and pp, dp > 0), which turns the
 * per-rank pass at 1M ranks from W/PP x keys entries into TP x CP x G x 2
 * x keys. Not for fully_sharded_model_space, whose optimizer ranges are cut
 * along dp too (the memo then keeps only the model's bytes). */
struct ckpt_bytes_memo {
	struct rank_bytes *v;
	long long n;
	int opt_too;
};

struct ckpt_bytes_memo *ckpt_memo_new(const struct plan *p,
				      enum stack_opt_format opt)
{
	struct ckpt_bytes_memo *m = calloc(1, sizeof(*m));
	long long d = p->dense.size[LAY_DP];

	if (!m)
		return NULL;
	m->n = p->world / p->pp / (d > 0 ? d : 1) * 2;
	m->v = calloc((size_t)m->n, sizeof(*m->v));
	m->opt_too = opt != STACK_OPT_FULLY_SHARDED_MODEL_SPACE;
	if (!m->v) {
		free(m);
		return NULL;
	}
	return m;
}

void ckpt_memo_clear(struct ckpt_bytes_memo *m)
{
	if (m)
		memset(m->v, 0, (size_t)m->n * sizeof(*m->v));
}

void ckpt_memo_free(struct ckpt_bytes_memo *m)
{
	if (m)
		free(m->v);
	free(m);
}

static struct rank_bytes *memo_slot(const struct plan *p,
					 struct ckpt_bytes_memo *m,
					 const long long c[LAY_NAXES])
{
	long long i = 0;

	for (int a = 0; a < LAY_NAXES; a++)
		if (a != LAY_DP && a != LAY_PP)
			i = i * p->dense.size[a] + c[a];
	i = i * 2 + (c[LAY_DP] > 0);
	return i < m->n ? &m->v[i] : NULL;
}

static void rank_bytes_of(const struct ckpt_ctx *x,
			  struct ckpt_bytes_memo *memo,
			  const struct ckpt_item *it, size_t n,
			  size_t n_tensors, long long st, long long nl,
			  const long long c[LAY_NAXES], struct rank_bytes *out)
{
	struct rank_bytes *slot = memo ? memo_slot(x->p, memo, c) : NULL;
	struct ckpt_entry e;

	if (slot && slot->valid) {
		*out = *slot;
		if (!memo->opt_too)
			out->ob = ckpt_opt_bytes(x, it, n_tensors, st, nl, c);
		return;
	}
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		long long k = i < n_tensors ? mult(&it[i], st, nl) : 1;

		item_entry(x->p, x->s, &it[i], c, &e);
		if (i < n_tensors)
			out->read = ck_add_sat(out->read,
					       piece_bytes(k, e.real_rows,
							   e.local[1]));
		if (!e.main || !k || (it[i].kind == CKPT_LOADER && st))
			continue;
		out->writes = 1;
		if (i < n_tensors)
			out->bytes = ck_add_sat(out->bytes,
						piece_bytes(k, e.real_rows,
							    e.local[1]));
	}
	out->buf = ckpt_opt_buffer(x, it, n_tensors, st, nl, c);
	out->ob = x->opt == STACK_OPT_DP_RESHARDABLE ? 0 :
		ckpt_opt_bytes(x, it, n_tensors, st, nl, c);
	out->valid = 1;
	if (slot)
		*slot = *out;
}

/* The writers and the bytes per rank of stage st (nl layers, nmoe of them
 * MoE, whose experts are ex): counts the ranks that write in
 * out->writers and raises out's max_rank_* bytes. memo: NULL, or the
 * stage's memo of the dense bytes (the caller clears it between stages). */
void ckpt_stage_bytes(const struct ckpt_ctx *x, struct ckpt_bytes_memo *memo,
		      const struct ckpt_item *it, size_t n, size_t n_tensors,
		      const struct ckpt_item *ex, size_t n_ex, long long st,
		      long long nl, long long nmoe, int dist,
		      struct ckpt_summary *out)
{
	const struct plan *p = x->p;
	long long per = p->world / p->pp, c[LAY_NAXES];

	for (long long r = 0; r < per; r++) {
		struct rank_bytes rbs;
		long long ob, rb, bytes;
		int writes;

		stage_coords(p, st, r, c);
		rank_bytes_of(x, nmoe ? NULL : memo, it, n, n_tensors, st,
			      nl, c, &rbs);
		bytes = rbs.bytes;
		rb = rbs.read;
		writes = rbs.writes;
		ob = x->opt == STACK_OPT_DP_RESHARDABLE ?
			ck_mul_sat(OPT_STATES * OPT_BYTES, range_len(rbs.buf,
			p->cp * p->dp_replicate, rank_in(&p->dense,
			B(LAY_CP) | B(LAY_DP), c))) : rbs.ob;
		if (nmoe) { /* the same rank on the expert grid */
			long long ce[LAY_NAXES];

			lay_coords(&p->expert, lay_rank(&p->dense, c),
				   ce);
			ckpt_expert_bytes(x, ex, n_ex, nmoe, dist, ce,
					  &bytes, &ob, &rb, &writes);
		}
		/* dp_reshardable: every rank saves its flat range */
		if (ob > 0 || (x->opt == STACK_OPT_DP_RESHARDABLE &&
			       rbs.buf > 0))
			writes = 1;
		rb = ck_add_sat(rb, ck_mul_sat(OPT_STATES * OPT_BYTES,
			dist ? range_len(rbs.buf, p->cp * p->dp_replicate,
			rank_in(&p->dense, B(LAY_CP) | B(LAY_DP), c)) :
			rbs.buf));
		if (rb > out->max_rank_read_bytes)
			out->max_rank_read_bytes = rb;
		out->writers += writes;
		if (ob > out->max_rank_opt_bytes)
			out->max_rank_opt_bytes = ob;
		if (bytes > out->max_rank_weight_bytes)
			out->max_rank_weight_bytes = bytes;
		if (ck_add_sat(bytes, ob) > out->max_rank_bytes)
			out->max_rank_bytes = ck_add_sat(bytes, ob);
	}
}
