/*
 * ckpt_opt: the optimizer state in the checkpoint (docs/design.md §2.7;
 * docs/notes/megatron-semantics.md §1.6, §2.4): whether the stack can save
 * fully_reshardable, the keys and chunks of each format and what a rank
 * writes of them (see ckpt.h; the experts' own optimizer is
 * ckpt_expert.c's).
 */
#include "ckpt_int.h"

#include <stdlib.h>
#include <string.h>

int ckpt_fully_reshardable_ok(const struct plan *p, const struct stack *s,
			      const struct model_shape *m, char *why,
			      size_t len)
{
	why[0] = '\0';
	if (p->gtp <= 1 && p->egtp <= 1)
		return 1;
	if (!s->mlm_7162) {
		snprintf(why, len, "under GTP (G %lld) a Megatron-LM without PR "
			 "#7162 can neither write nor read it (the save stops "
			 "matching grad-buffer params to their GTP checkpoint "
			 "entries)", p->gtp > 1 ? p->gtp : p->egtp);
		return 0;
	}
	if (p->set.fp8_param) {
		snprintf(why, len, "under GTP Megatron-LM refuses it for "
			 "native-FP8 weights (policy.megatron_cfg.fp8_cfg."
			 "fp8_param: their checkpoint entries are dequantized "
			 "copies)");
		return 0;
	}
	if ((m->known && m->gated_linear_unit) ||
	    strchr(m->hybrid_layer_pattern, 'M')) {
		snprintf(why, len, "under GTP Megatron-LM refuses it for fused "
			 "projections (%s: gathered checkpoint factories)",
			 m->known && m->gated_linear_unit ?
			 "the gated linear_fc1 [gate|up]" :
			 "the SSM in_proj");
		return 0;
	}
	return 1;
}

/* ---- optimizer state (docs/design.md §2.7) ------------------------------ */

const char *const ckpt_opt_state[OPT_STATES] = {
	"fp32_param", "exp_avg", "exp_avg_sq"
};

/* The model-space optimizer entry of tensor item `it` at coord c:
 * fully_reshardable keeps the weight's chunk and writer (its main
 * replica), padding excluded; fully_sharded_model_space cuts each piece's
 * elements into F ranges, one per dp_cp rank, a main replica where the
 * model entry is one up to DP (its replica id's DP slot is the range). */
static void opt_entry(const struct ckpt_ctx *x, const struct ckpt_item *it,
		      const long long c[LAY_NAXES], long long *chunk,
		      long long *nchunks, int *main, long long *elems)
{
	const struct plan *p = x->p;
	long long f = p->cp * p->dp_replicate;
	long long dpcp = rank_in(&p->dense, B(LAY_CP) | B(LAY_DP), c);
	struct ckpt_entry e;

	item_entry(p, x->s, it, c, &e);
	*nchunks = e.frag[0] * e.frag[1];
	*chunk = chunk_index(&e);
	*elems = e.real_rows * e.local[1];
	if (x->opt == STACK_OPT_FULLY_RESHARDABLE) {
		*main = e.main;
		return;
	}
	*nchunks *= f;
	*chunk = *chunk * f + dpcp;
	*main = !e.replica[0] && !e.replica[1];
	*elems = range_len(*elems, f, dpcp);
}

/* The elements of the flat optimizer buffer of the rank at c on a stage
 * of nl layers (dp_reshardable): its local pieces, padding included, as
 * the grad buffer holds them. */
long long ckpt_opt_buffer(const struct ckpt_ctx *x, const struct ckpt_item *it,
			  size_t n_tensors, long long st, long long nl,
			  const long long c[LAY_NAXES])
{
	struct ckpt_entry e;
	long long n = 0;

	for (size_t i = 0; i < n_tensors; i++) {
		item_entry(x->p, x->s, &it[i], c, &e);
		long long f[] = { mult(&it[i], st, nl), e.local[0],
				  e.local[1] };

		n = ck_add_sat(n, ck_prod_sat(f, 3));
	}
	return n;
}

/* Reports the first bad chunk of an optimizer key (claimed `cnt` times,
 * 0 or more than 1). */
void ckpt_opt_report(const struct ckpt_ctx *x, const char *key, long long chunk,
		     long long nchunks, long long cnt)
{
	struct diag *d;

	if (cnt > 1) {
		d = diag_add(x->diags, "GT710", x->s->loc[STACK_OPT_FORMAT],
			     "gtplan.stack.optimizer_ckpt_format",
			     "optimizer checkpoint chunk %lld of %lld of %s "
			     "claimed %lld times by main replicas (format %s)",
			     chunk, nchunks, key, cnt,
			     stack_opt_format_name(x->opt));
		diag_hint(d, "elect one writer per chunk: the model entry's "
			  "main replica, or one dp_cp rank per range");
	} else {
		d = diag_add(x->diags, "GT711", ckpt_stack_loc(x, STACK_WRITER),
			     "gtplan.stack.sharded_replica_group",
			     "optimizer checkpoint chunk %lld of %lld of %s is "
			     "never written (format %s): %s", chunk, nchunks,
			     key, stack_opt_format_name(x->opt),
			     ckpt_why(x, CKPT_COLUMN));
		diag_hint(d, "elect the writers of GTP-sharded pieces over the "
			  "GTP-excluded dp_cp group (gtplan.stack."
			  "sharded_replica_group: dp_cp)");
	}
}

/* Grows x->cnt to n zeroed counters. Returns -1 when out of memory. */
int ckpt_counters(struct ckpt_ctx *x, long long n)
{
	if (n > x->n_cnt) {
		long long *v = realloc(x->cnt, (size_t)n * sizeof(*v));

		if (!v)
			return -1;
		x->cnt = v;
		x->n_cnt = n;
	}
	memset(x->cnt, 0, (size_t)n * sizeof(*x->cnt));
	return 0;
}

/* Validates the optimizer entries of stage st (nl layers from `layer`)
 * and counts its keys and main shards (each state alike: x OPT_STATES).
 * Returns -1 when out of memory. */
int ckpt_check_opt(struct ckpt_ctx *x, const struct ckpt_item *it,
		   size_t n_tensors, long long st, long long layer,
		   long long nl, int report, struct ckpt_summary *out)
{
	const struct plan *p = x->p;
	long long per = p->world / p->pp, c[LAY_NAXES];
	long long f = p->cp * p->dp_replicate, n, tg = p->tp * p->gtp;
	long long any = 0;

	for (size_t j = 0; j < n_tensors; j++)
		any += mult(&it[j], st, nl);
	if (!any)
		return 0;
	if (x->opt == STACK_OPT_DP_RESHARDABLE) {
		/* one flat key per model-parallel rank (dp_group_idx = rank in
		 * the tp-gtp-pp group: every GTP peer its own key), F chunks:
		 * the dp_cp ranks. The chunk of rank (t, g, cp, dp) is
		 * ((t G + g) F + its dp_cp rank): a one-to-one map, so every
		 * chunk has exactly one writer whatever the stack, and there
		 * is nothing to count or report. */
		out->opt_keys += OPT_STATES * tg;
		out->opt_shards += OPT_STATES * tg * f;
		return 0;
	}
	for (size_t j = 0; j < n_tensors; j++) {
		long long chunk, elems, m = mult(&it[j], st, nl);
		int main;

		if (!m)
			continue;
		stage_coords(p, st, 0, c);
		opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
		if (ckpt_counters(x, n))
			return -1;
		for (long long i = 0; i < per; i++) {
			stage_coords(p, st, i, c);
			opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
			if (main)
				x->cnt[chunk]++;
		}
		out->opt_keys += OPT_STATES * m;
		for (long long k = 0, rep = report && (it[j].stage >= 0 ||
						      st == 0); k < n; k++) {
			out->opt_shards += OPT_STATES * m * (x->cnt[k] > 0);
			if (x->cnt[k] != 1 && rep) {
				char key[192], mk[160];

				ckpt_key_of(&it[j], layer, mk, sizeof(mk));
				snprintf(key, sizeof(key), "optimizer.state.%s.%s",
					 ckpt_opt_state[0], mk);
				ckpt_opt_report(x, key, k, n, x->cnt[k]);
				rep = 0;
			}
		}
	}
	return 0;
}

/* The optimizer bytes the rank at c writes on a stage of nl layers. */
long long ckpt_opt_bytes(const struct ckpt_ctx *x, const struct ckpt_item *it,
			 size_t n_tensors, long long st, long long nl,
			 const long long c[LAY_NAXES])
{
	const struct plan *p = x->p;
	long long f = p->cp * p->dp_replicate, b = 0;

	if (x->opt == STACK_OPT_DP_RESHARDABLE)
		return OPT_STATES * OPT_BYTES *
			range_len(ckpt_opt_buffer(x, it, n_tensors, st, nl, c),
				  f, rank_in(&p->dense, B(LAY_CP) | B(LAY_DP),
					     c));
	for (size_t j = 0; j < n_tensors; j++) {
		long long chunk, n, elems;
		int main;

		opt_entry(x, &it[j], c, &chunk, &n, &main, &elems);
		if (main)
			b += OPT_STATES * OPT_BYTES * mult(&it[j], st, nl) *
				elems;
	}
	return b;
}

