/*
 * program_build: prog_build, a stage's program of one call: the builder's
 * setup, the rank's view of the large weights, and the stage's layers.
 */
#include <string.h>

#include "ckmath.h"
#include "program_int.h"
#include "program_rt.h"

/* ---- building --------------------------------------------------------- */

/* Elements of one GTP shard of a TP-local tensor [d0, d1]: d0 padded at the
 * tail to a multiple of pad x G, split in G (gtp_remat_shard_dim0). */
static long long gtp_shard(long long d0, long long d1, long long g, int pad)
{
	long long align = (long long)(pad > 0 ? pad : 1) * g;
	long long padlen = (align - d0 % align) % align;

	return ck_mul_sat((d0 + padlen) / g, d1);
}

static void add_weight(struct prog_bld *b, const char *name, long long rows,
		       long long cols, enum model_split split, int expert)
{
	long long tp = expert ? b->p->etp : b->p->tp;
	long long g = expert ? b->p->egtp : b->p->gtp;
	long long d0 = rows, d1 = cols;
	struct prog_wt *w;
	int idx = prog_weight(b->pg, name);

	if (idx < 0 || b->n_w == PROG_MAX_WEIGHTS)
		return;
	if (split == SPLIT_COLUMN)
		d0 = rows / tp;
	else if (split == SPLIT_ROW)
		d1 = cols / tp;
	w = &b->w[b->n_w++];
	w->idx = idx;
	w->expert = expert;
	w->full = ck_mul_sat(rows, cols);
	w->tp_local = ck_mul_sat(d0, d1);
	w->shard = gtp_shard(d0, d1, g, b->o.gtp_pad);
	w->tp_split = split != SPLIT_NONE && tp > 1;
	w->enter = split != SPLIT_ROW;
	w->mlp = strstr(name, "fc") != NULL;
	w->qkv = strstr(name, "qkv") != NULL;
}

static void setup_weights(struct prog_bld *b)
{
	struct model_weight mw[PROG_MAX_WEIGHTS];
	size_t n = model_layer_weights(&b->m, mw, PROG_MAX_WEIGHTS);
	long long ep = b->p->ep > 0 ? b->p->ep : 1;
	long long local = b->m.num_moe_experts / ep;
	long long topk = b->m.moe_router_topk > 0 ? b->m.moe_router_topk : 1;

	for (size_t i = 0; i < n; i++) {
		add_weight(b, mw[i].name, mw[i].rows, mw[i].cols, mw[i].split, 0);
		b->layer_flops = ck_add_sat(b->layer_flops,
			ck_mul_sat(2 * mw[i].rows, mw[i].cols));
	}
	b->n_dense = b->n_w;
	if (!b->moe)
		return;
	/* the rank's local experts, gathered as one grouped tensor */
	n = model_expert_weights(&b->m, mw, PROG_MAX_WEIGHTS);
	if (local < 1)
		local = 1;
	for (size_t i = 0; i < n; i++) {
		int col = mw[i].split == SPLIT_COLUMN;

		long long f[] = { 2, topk, mw[i].rows, mw[i].cols };

		add_weight(b, mw[i].name,
			   ck_mul_sat(mw[i].rows, col ? local : 1),
			   ck_mul_sat(mw[i].cols, col ? 1 : local),
			   mw[i].split, 1);
		b->layer_flops = ck_add_sat(b->layer_flops, ck_prod_sat(f, 4));
	}
}

static void setup(struct prog_bld *b, struct prog *pg, const struct plan *p,
		  const struct model_shape *m, const struct prog_opts *o)
{
	memset(b, 0, sizeof(*b));
	b->pg = pg;
	b->p = p;
	if (m && m->known) {
		b->m = *m;
	} else {
		prog_default_shape(&b->m);
		/* approximate sizes: the default's, with the model's layer
		 * structure (which layers are MoE, MTP, tied embeddings) */
		if (m && m->shape_known) {
			b->m.num_layers = m->num_layers;
			b->m.vocab_size = m->vocab_size;
			b->m.num_moe_experts = m->num_moe_experts;
			b->m.moe_ffn_hidden_size = b->m.ffn_hidden_size;
			b->m.moe_router_topk = m->moe_router_topk > 0 ?
				m->moe_router_topk : 2;
			b->m.mtp_num_layers = m->mtp_num_layers;
			b->m.share_embeddings_and_output_weights =
				m->share_embeddings_and_output_weights;
			b->m.make_vocab_size_divisible_by =
				m->make_vocab_size_divisible_by;
			memcpy(b->m.moe_layer_freq, m->moe_layer_freq,
			       sizeof(m->moe_layer_freq));
			memcpy(b->m.hybrid_layer_pattern,
			       m->hybrid_layer_pattern,
			       sizeof(m->hybrid_layer_pattern));
		}
	}
	if (o)
		b->o = *o;
	else
		prog_opts_init(&b->o);
	if (b->o.act_bytes <= 0)
		b->o.act_bytes = 2;
	if (b->o.grad_bytes <= 0)
		b->o.grad_bytes = 4;
	if (b->o.seq_length <= 0)
		b->o.seq_length = 4096;
	b->k_tp = prog_kind("tp");
	b->k_cp = prog_kind("cp");
	b->k_gtp = prog_kind("gtp");
	b->k_pp = prog_kind("pp");
	b->k_dp = prog_kind("dp");
	b->k_dp_cp = prog_kind("dp_cp");
	b->k_dpcr = prog_kind("dp_cp_replicate");
	b->k_mp_gtp = prog_kind("mp_gtp");
	b->k_ep = prog_kind("ep");
	b->k_egtp = prog_kind("egtp");
	b->k_etp = prog_kind("etp");
	b->k_edp = prog_kind("edp");
	b->moe = b->m.num_moe_experts > 0 && p->expert_grid_ok;
	b->moe_uniform = model_layer_kinds(&b->m, b->moe_at, MODEL_TEXT_MAX) != 0;
}

/* The layers of `stage`: Megatron's uneven split when the options give the
 * first / last stage's layers and the rest split evenly over the middle
 * stages; otherwise stage * L / PP (the even split, also the fallback
 * for a split Megatron refuses, GT600). */
static void stage_layers(const struct prog_bld *b, long long pp,
			 long long stage, long long *first, long long *n)
{
	long long L = b->m.num_layers, f = b->o.first_stage_layers;
	long long l = b->o.last_stage_layers, mid = L, st = pp;

	if (pp > 1 && (f > 0 || l > 0)) {
		if (f > 0) {
			mid -= f;
			st--;
		}
		if (l > 0) {
			mid -= l;
			st--;
		}
		if (mid >= 0 && (mid > 0) == (st > 0) && (!st || mid % st == 0)) {
			long long each = st ? mid / st : 0;

			if (stage == 0 && f > 0) {
				*first = 0;
				*n = f;
			} else if (stage == pp - 1 && l > 0) {
				*first = L - l;
				*n = l;
			} else {
				*first = (f > 0 ? f : 0) +
					 (stage - (f > 0)) * each;
				*n = each;
			}
			return;
		}
	}
	*first = stage * L / pp;
	*n = (stage + 1) * L / pp - *first;
}

int prog_build(struct prog *pg, const struct plan *p,
	       const struct model_shape *m, enum call_program kind,
	       long long stage, const struct prog_opts *o)
{
	struct prog_bld b;
	long long micro = p->micro_batch > 0 ? p->micro_batch : 1;
	long long pp = p->pp > 0 ? p->pp : 1;

	if (o && o->runtime_model &&
	    (kind == PROG_TRAIN || kind == PROG_FORWARD))
		return prog_rt_build_stage(pg, p, kind, kind == PROG_TRAIN ?
					   "train" : "get_logprobs", stage);
	prog_init(pg);
	setup(&b, pg, p, m, o);
	if (stage < 0 || stage >= pp)
		stage = 0;
	pg->stage = stage;
	stage_layers(&b, pp, stage, &pg->first_layer, &pg->n_layers);
	if (kind == PROG_FORWARD && b.o.logprob_micro_batch > 0)
		micro = b.o.logprob_micro_batch;
	pg->microbatches = prog_microbatches(p, micro);
	/* Every micro-batch runs every layer of the stage (refit: every
	 * layer once), one op at least: past PROG_MAX_OPS the program is
	 * refused before it is built, so the work stays bounded whatever the
	 * batch or the layer count. */
	if (kind != PROG_SAVE && kind != PROG_LOAD &&
	    kind != PROG_GROUP_INIT &&
	    ck_mul_sat(kind == PROG_TRAIN || kind == PROG_FORWARD ?
		       pg->microbatches : 1,
		       pg->n_layers > 0 ? pg->n_layers : 1) > PROG_MAX_OPS) {
		prog_release(pg);
		return -1;
	}
	b.tokens = ck_mul_sat(micro, b.o.seq_length) /
		   (p->cp > 0 ? p->cp : 1);
	if (b.tokens < 1)
		b.tokens = 1;
	setup_weights(&b);

	switch (kind) {
	case PROG_TRAIN:
		prog_emit(&b, OP_ALL_REDUCE, b.k_dp, PH_STEP, W_DATASET, -1, -1,
			  -1, 8, 0);
		prog_emit(&b, OP_BARRIER, PROG_GK_WORLD, PH_STEP, W_SYNC, -1,
			  -1, -1, 0, 0);
		prog_emit(&b, OP_ALL_REDUCE, b.k_dp, PH_STEP, W_TOKENS, -1, -1,
			  -1, 8, 0);
		prog_schedule(&b, 0);
		prog_train_tail(&b);
		break;
	case PROG_FORWARD:
		prog_schedule(&b, 1);
		break;
	case PROG_REFIT_IPC:
		prog_refit(&b, 1);
		break;
	case PROG_REFIT_BROADCAST:
		prog_refit(&b, 1);
		prog_refit_broadcast(&b);
		break;
	case PROG_REFIT_RESHARD:
		prog_refit(&b, 0);
		break;
	case PROG_SAVE:
		prog_emit(&b, OP_ALL_GATHER, b.k_dp_cp, PH_SAVE, W_RNG, -1, -1,
			  -1, 5072, 0);
		prog_emit(&b, OP_BARRIER, PROG_GK_WORLD, PH_SAVE, W_SYNC, -1,
			  -1, -1, 0, 0);
		break;
	case PROG_LOAD:
		prog_emit(&b, OP_BARRIER, PROG_GK_WORLD, PH_LOAD, W_SYNC, -1,
			  -1, -1, 0, 0);
		break;
	case PROG_GROUP_INIT:
		prog_emit(&b, OP_BARRIER, PROG_GK_WORLD, PH_INIT, W_SYNC, -1,
			  -1, -1, 0, 0);
		break;
	case PROG_NONE:
	case PROG_COUNT:
		break;
	}
	if (b.err) {
		prog_release(pg);
		return -1;
	}
	return 0;
}
