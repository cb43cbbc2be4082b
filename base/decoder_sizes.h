/*
 * decoder_sizes: the sizes of gtplan-run's Llama-family decoder on one rank,
 * header-only, so that the runtime (runtime/rt_model.c) and the simulator's
 * copy of its collectives (sim/program_rt.c) compute them in one place.
 *
 * The decoder (runtime/rt_model.h) has, in model order, the embedding, per
 * layer linear_qkv, linear_proj, linear_fc1, linear_fc2, and the output
 * layer (absent when tied to the embedding). Megatron-core's TP split of
 * each (megatron/core/transformer/attention.py, mlp.py):
 *   linear_qkv  [(H + 2 G) d, h] column-parallel: rank t holds the whole
 *               query groups t G/T .. (t+1) G/T - 1, (H/T + 2 G/T) d rows;
 *   linear_proj [h, H d] row-parallel: columns of query heads t H/T ..;
 *   linear_fc1  [2 F, h] column-parallel, TP-local [gate_t; up_t];
 *   linear_fc2  [h, F] row-parallel: columns t F/T ..;
 *   embedding and output [V, h] vocab-parallel: rows t Vp/T .., V padded
 *               to Vp, a multiple of T.
 * GTP then splits each TP-local tensor [d0, d1] along d0, padded at the
 * tail to a multiple of DSZ_GTP_PAD x G (no padding when G = 1), into G
 * shards of S = padded d0 / G rows (Megatron's gtp_remat_shard_dim0 with
 * GTPRematConfig.pad_for_alignment's default).
 *
 * The replicated parameters (kept whole by GTP) follow the shards in the
 * parameter array, in this order: the QK-norm weights (per layer q then
 * k, d each, when qk_norm), the RMSNorm weights (per layer input then
 * pre-MLP, h each, then the final norm on the last pipeline stage), the
 * linear_qkv biases (per layer
 * its TP slice, when qkv_bias). The first `tp_sum` of them are the ones
 * whose gradients are summed over TP after the data-parallel reduction
 * (megatron/core/distributed/finalize_model_grads.py): the QK norms
 * always, the RMSNorms too with sequence parallelism.
 *
 * Tokens: a micro-batch holds micro x seq_len tokens (micro-major, [b, s]
 * row order); with context parallelism a rank holds seq_len / C of each
 * sample (Megatron's load-balanced chunks c and 2C-1-c of 2C), and its
 * attention reads every rank's keys and values, all-gathered over CP
 * (Megatron's all_gather CP variant); with sequence parallelism each TP
 * rank's residual stream holds a contiguous 1/T of the rank's rows.
 */
#ifndef GTPLAN_DECODER_SIZES_H
#define GTPLAN_DECODER_SIZES_H

#include <string.h>

/* GTPRematConfig.pad_for_alignment's default (Megatron). */
#define DSZ_GTP_PAD 16

/* The large weights of a layer, in forward order. */
enum dsz_weight { DSZ_QKV, DSZ_PROJ, DSZ_FC1, DSZ_FC2, DSZ_PER_LAYER };

/* What sizes the decoder on a rank. */
struct dsz_dims {
	long long h, ffn, layers, heads, kv_heads, head_dim, vocab;
	int tie, qkv_bias, qk_norm, sp;
	long long seq_len, micro;
	int tp, g, cp;
	/* a pipeline stage (base/pp_schedule.h) holds `layers` of the
	 * model's layers and: no embedding (skip_pre: not the first stage),
	 * no final norm and output layer (skip_post: not the last); with a
	 * tied output layer the last stage of a pipeline keeps its own copy
	 * of the embedding (Megatron's shared embedding) */
	int skip_pre, skip_post;
};

struct dsz_sizes {
	long long hl, kl;        /* query heads, query groups per TP rank */
	long long qkv_l, q_l;    /* linear_qkv rows, query rows per TP rank */
	long long kv_l;          /* key (= value) rows per TP rank */
	long long fl;            /* F / T */
	long long vp, vl;        /* padded vocabulary, Vp / T */
	long long tokens;        /* N: a micro-batch's tokens on the rank
				    (micro x seq_len / C) */
	long long keys;          /* micro x seq_len: the keys attention reads */
	long long local;         /* the residual stream's rows: N / T with
				    sequence parallelism, else N */
	/* TP-local tensor [d0, d1] and GTP shard elements of each large
	 * weight: per layer by enum dsz_weight, then the embedding (and the
	 * output layer, the same sizes) */
	long long d0[DSZ_PER_LAYER], d1[DSZ_PER_LAYER], shard[DSZ_PER_LAYER];
	long long emb_d0, emb_d1, shard_emb;
	long long n_shard;       /* sharded parameter elements of the rank */
	long long n_qk, n_norm, n_bias; /* replicated, by kind */
	long long n_rep, tp_sum; /* all replicated; the TP-summed prefix */
};

/* Elements of one GTP shard of a TP-local [d0, d1] over g ranks. */
static inline long long dsz_shard(long long d0, long long d1, long long g)
{
	long long align = DSZ_GTP_PAD * g;

	if (g <= 1)
		return d0 * d1;
	return (d0 + (align - d0 % align) % align) / g * d1;
}

/* Fills s; the divisibility the runtime requires (heads and query groups
 * by TP, F by TP, seq_len by 2 C, tokens by TP with sequence
 * parallelism) is the caller's
 * to check: sizes that do not divide are rounded down here. */
static inline void dsz_fill(struct dsz_sizes *s, const struct dsz_dims *d)
{
	long long tp = d->tp > 0 ? d->tp : 1, g = d->g > 0 ? d->g : 1;
	long long cp = d->cp > 0 ? d->cp : 1;
	long long L = d->layers;

	memset(s, 0, sizeof(*s));
	s->hl = d->heads / tp;
	s->kl = d->kv_heads / tp;
	s->q_l = s->hl * d->head_dim;
	s->kv_l = s->kl * d->head_dim;
	s->qkv_l = s->q_l + 2 * s->kv_l;
	s->fl = d->ffn / tp;
	s->vp = (d->vocab + tp - 1) / tp * tp;
	s->vl = s->vp / tp;
	s->tokens = d->micro * (d->seq_len / cp);
	s->keys = d->micro * d->seq_len;
	s->local = d->sp ? s->tokens / tp : s->tokens;
	s->d0[DSZ_QKV] = s->qkv_l;
	s->d1[DSZ_QKV] = d->h;
	s->d0[DSZ_PROJ] = d->h;
	s->d1[DSZ_PROJ] = s->q_l;
	s->d0[DSZ_FC1] = 2 * s->fl;
	s->d1[DSZ_FC1] = d->h;
	s->d0[DSZ_FC2] = d->h;
	s->d1[DSZ_FC2] = s->fl;
	for (int w = 0; w < DSZ_PER_LAYER; w++)
		s->shard[w] = dsz_shard(s->d0[w], s->d1[w], g);
	s->emb_d0 = s->vl;
	s->emb_d1 = d->h;
	s->shard_emb = dsz_shard(s->vl, d->h, g);
	s->n_shard = s->shard_emb * (!d->skip_pre && !d->skip_post ?
				     (d->tie ? 1 : 2) :
				     !d->skip_pre + !d->skip_post);
	for (int w = 0; w < DSZ_PER_LAYER; w++)
		s->n_shard += L * s->shard[w];
	s->n_qk = d->qk_norm ? 2 * L * d->head_dim : 0;
	s->n_norm = (2 * L + !d->skip_post) * d->h;
	s->n_bias = d->qkv_bias ? L * s->qkv_l : 0;
	s->n_rep = s->n_qk + s->n_norm + s->n_bias;
	s->tp_sum = tp > 1 ? s->n_qk + (d->sp ? s->n_norm : 0) : 0;
}

#endif
