/*
 * rt_cp: context parallelism's attention (CP > 1), both of Megatron's
 * cp_comm_type variants that gtplan-run runs
 * (docs/notes/megatron-transformer.md §4). Each CP rank c holds chunks c
 * and 2C-1-c of every sample (rt_train.c loads them, m->pos gives their
 * positions, m->kpos lists every CP rank's positions in rank order), so
 * its queries need the keys and values of every CP rank; the mask is
 * kern_attn's position test (key position <= query position), whichever
 * rank the keys come from.
 *
 * all_gather: the keys and values of every CP rank all-gathered ("<qkv>.k",
 * "<qkv>.v"), one attention over the whole sequence; the backward
 * reduce-scatters their gradients ("<qkv>.dk", "<qkv>.dv").
 *
 * p2p (Megatron's default; TransformerEngine's AttnFuncWithCPAndKVP2P,
 * transformer_engine/pytorch/attention/dot_product_attention/
 * context_parallel.py): a ring. Forward step i = 0..C-1: this rank holds
 * the keys and values [k | v] of CP rank (c - i) mod C; unless it is the
 * last step it starts the send of that block to c+1 and the receive of the
 * next from c-1 ("<qkv>.kv"), computes the attention of its queries on the
 * block at hand while they travel, merges it into (o, lse) by log-sum-exp
 * (kern_attn_merge), then waits. The backward runs the ring reversed (send
 * to c-1, receive from c+1) over the blocks in the opposite order, rank
 * (c + 1 + i) mod C at step i (the forward's last block first: it is kept,
 * kvlast), carrying with each block the partial gradient [dk | dv] of the
 * block before it, one hop behind ("<qkv>.dkv": step 0 carries only keys
 * and values, the last step only the gradient): a block's gradient
 * gathers the contribution of every rank it passes and ends on its owner
 * at the last step, when this rank's own block is the diagonal. The query
 * gradient accumulates locally.
 *
 * Not done: TE's half-block savings (a block of an earlier rank meets only
 * its first key half, one of a later rank only the second query half):
 * every step computes the whole block pair and the position mask removes
 * what does not attend, so the result is the same with up to twice the
 * attention flops of those steps.
 */
#include "rt_model.h"

#include "rt_err.h"

/* ---- all_gather --------------------------------------------------------- */

/* The all-gather over CP lands rank-major, [C][micro][local_seq]; attention
 * reads sample-major, [micro][C x local_seq]. Copies block (c, b) between
 * the two (to_keys: rank-major -> sample-major). One micro-batch sample: the
 * same layout, no copy. */
static int cp_reorder(struct rt_model *m, float *keys, float *ranks,
		      int to_keys)
{
	const struct rt_shape *s = &m->s;
	long long blk = s->local_seq * s->z.kv_l;

	for (int c = 0; c < s->cp; c++)
		for (long long b = 0; b < s->micro; b++) {
			float *k = keys + (b * s->cp + c) * blk;
			float *r = ranks + (c * s->micro + b) * blk;

			KCHECK(kern_copy(m->k, to_keys ? k : r, to_keys ? r : k,
					 (size_t)blk * sizeof(float)));
		}
	return 0;
}

/* kg, vg = k, v of every CP rank. */
static int cp_gather_kv(struct rt_model *m, long long l)
{
	const struct rt_shape *s = &m->s;
	struct rt_layer_acts *la = &m->la[l];
	long long n = s->tokens * s->z.kv_l;
	char what[64];

	for (int part = 0; part < 2; part++) {
		float *dst = part ? la->vg : la->kg;
		float *via = s->micro > 1 ? m->a.kvtmp : dst;

		rt_label(what, sizeof(what), m->layer[l].qkv->name,
			 part ? "v" : "k");
		RCHECK(coll_all_gather(m->c, RT_K_CP, what,
				       part ? la->v : la->k, via, n));
		if (via != dst)
			RCHECK(cp_reorder(m, dst, via, 1));
	}
	return 0;
}

/* Its backward: dk, dv = the sum over CP ranks of their gradients of this
 * rank's keys and values (a reduce-scatter of dkg, dvg). */
static int cp_scatter_dkv(struct rt_model *m, long long l)
{
	const struct rt_shape *s = &m->s;
	struct rt_acts *a = &m->a;
	char what[64];

	for (int part = 0; part < 2; part++) {
		float *src = part ? a->dvg : a->dkg;

		if (s->micro > 1) {
			RCHECK(cp_reorder(m, src, a->kvtmp, 0));
			src = a->kvtmp;
		}
		RCHECK(coll_reduce_scatter(m->c, RT_K_CP, rt_label(what,
					   sizeof(what), m->layer[l].qkv->name,
					   part ? "dv" : "dk"), src,
					   part ? a->dv : a->dk,
					   s->tokens * s->z.kv_l));
	}
	return 0;
}

static int gather_fwd(struct rt_model *m, long long l)
{
	struct rt_layer_acts *la = &m->la[l];
	struct kern_attn at = rt_attn_shape(&m->s, m->s.seq_len);

	RCHECK(cp_gather_kv(m, l));
	KCHECK(kern_attn_fwd(m->k, &at, la->q, la->kg, la->vg, m->qpos,
			     m->kpos, la->o, la->lse));
	return 0;
}

static int gather_bwd(struct rt_model *m, long long l)
{
	const struct rt_shape *s = &m->s;
	struct rt_layer_acts *la = &m->la[l];
	struct rt_acts *a = &m->a;
	struct kern_attn at = rt_attn_shape(s, s->seq_len);
	size_t K = (size_t)(s->z.keys * s->z.kv_l) * sizeof(float);

	KCHECK(kern_zero(m->k, a->dkg, K));
	KCHECK(kern_zero(m->k, a->dvg, K));
	KCHECK(kern_attn_bwd(m->k, &at, la->q, la->kg, la->vg, la->o, la->lse,
			     a->dout, m->qpos, m->kpos, a->dq, a->dkg,
			     a->dvg));
	return cp_scatter_dkv(m, l);
}

/* ---- p2p: the ring ------------------------------------------------------ */

/* The ring's neighbours: c+1 (next) and c-1 (previous), mod C. */
static int next_of(const struct rt_shape *s)
{
	return (s->c + 1) % s->cp;
}

static int prev_of(const struct rt_shape *s)
{
	return (s->c + s->cp - 1) % s->cp;
}

/* Attention of the local queries on block kv ([k | v], n = N kv each) of
 * CP rank r, into (o, lse). */
static int block_fwd(struct rt_model *m, long long l, const float *kv, int r,
		     float *o, float *lse)
{
	const struct rt_shape *s = &m->s;
	struct kern_attn at = rt_attn_shape(s, s->local_seq);
	long long n = s->tokens * s->z.kv_l;

	KCHECK(kern_attn_fwd(m->k, &at, m->la[l].q, kv, kv + n, m->qpos,
			     m->kpos + (long long)r * s->local_seq, o, lse));
	return 0;
}

static int ring_fwd(struct rt_model *m, long long l)
{
	const struct rt_shape *s = &m->s;
	struct rt_layer_acts *la = &m->la[l];
	struct rt_acts *a = &m->a;
	long long n = s->tokens * s->z.kv_l;
	float *buf[2] = { a->ring0, a->ring1 };
	char what[64];

	rt_label(what, sizeof(what), m->layer[l].qkv->name, "kv");
	KCHECK(kern_copy(m->k, buf[0], la->k, (size_t)n * sizeof(float)));
	KCHECK(kern_copy(m->k, buf[0] + n, la->v, (size_t)n * sizeof(float)));
	for (int i = 0; i < s->cp; i++) {
		float *cur = buf[i % 2], *nxt = buf[(i + 1) % 2];
		int r = (s->c - i + s->cp) % s->cp;

		if (i + 1 < s->cp)
			RCHECK(coll_sendrecv_start(m->c, RT_K_CP, what,
						   next_of(s), cur, 2 * n,
						   prev_of(s), nxt, 2 * n));
		if (i == 0) {
			RCHECK(block_fwd(m, l, cur, r, la->o, la->lse));
		} else {
			struct kern_attn at = rt_attn_shape(s, s->local_seq);

			RCHECK(block_fwd(m, l, cur, r, a->o2, a->lse2));
			KCHECK(kern_attn_merge(m->k, &at, la->o, la->lse,
					       a->o2, a->lse2));
		}
		RCHECK(coll_sendrecv_wait(m->c));
		if (i + 1 == s->cp)
			KCHECK(kern_copy(m->k, la->kvlast, cur,
					 (size_t)(2 * n) * sizeof(float)));
	}
	return 0;
}

/* Backward step i of the reversed ring: what travels (module comment). The
 * block at hand is cur [k | v | dk | dv]; step 0 sends only its keys and
 * values, the last step only the gradient of the block before. */
static int ring_bwd_exchange(struct rt_model *m, const char *what, int i,
			     float *cur, float *nxt)
{
	const struct rt_shape *s = &m->s;
	long long n = s->tokens * s->z.kv_l;
	long long off = i + 1 == s->cp ? 2 * n : 0;
	long long len = i == 0 || i + 1 == s->cp ? 2 * n : 4 * n;

	return coll_sendrecv_start(m->c, RT_K_CP, what, prev_of(s), cur + off,
				   len, next_of(s), nxt + off, len);
}

static int ring_bwd(struct rt_model *m, long long l)
{
	const struct rt_shape *s = &m->s;
	struct rt_layer_acts *la = &m->la[l];
	struct rt_acts *a = &m->a;
	struct kern_attn at = rt_attn_shape(s, s->local_seq);
	long long n = s->tokens * s->z.kv_l;
	float *buf[2] = { a->ring0, a->ring1 };
	char what[64];

	rt_label(what, sizeof(what), m->layer[l].qkv->name, "dkv");
	KCHECK(kern_copy(m->k, buf[0], la->kvlast,
			 (size_t)(2 * n) * sizeof(float)));
	for (int i = 0; i < s->cp; i++) {
		float *cur = buf[i % 2], *nxt = buf[(i + 1) % 2];
		int r = (s->c + 1 + i) % s->cp;

		RCHECK(ring_bwd_exchange(m, what, i, cur, nxt));
		KCHECK(kern_zero(m->k, a->rdkv, (size_t)(2 * n) *
				 sizeof(float)));
		KCHECK(kern_attn_bwd(m->k, &at, la->q, cur, cur + n, la->o,
				     la->lse, a->dout, m->qpos,
				     m->kpos + (long long)r * s->local_seq,
				     a->dq, a->rdkv, a->rdkv + n));
		RCHECK(coll_sendrecv_wait(m->c));
		/* nxt's gradient: block r's, from the ranks before this one
		 * (none at step 0), plus this rank's part */
		if (i == 0)
			KCHECK(kern_copy(m->k, nxt + 2 * n, a->rdkv,
					 (size_t)(2 * n) * sizeof(float)));
		else
			KCHECK(kern_axpy(m->k, 2 * n, 1.0f, a->rdkv,
					 nxt + 2 * n));
	}
	/* the last block was this rank's own: its gradient is complete */
	KCHECK(kern_copy(m->k, a->dk, buf[s->cp % 2] + 2 * n,
			 (size_t)n * sizeof(float)));
	KCHECK(kern_copy(m->k, a->dv, buf[s->cp % 2] + 3 * n,
			 (size_t)n * sizeof(float)));
	return 0;
}

/* ---- entry points (rt_model.h) ------------------------------------------ */

int rt_cp_attn_fwd(struct rt_model *m, long long l)
{
	return m->s.cp_p2p ? ring_fwd(m, l) : gather_fwd(m, l);
}

int rt_cp_attn_bwd(struct rt_model *m, long long l)
{
	return m->s.cp_p2p ? ring_bwd(m, l) : gather_bwd(m, l);
}
