/*
 * cost_mem: what one rank holds while it trains, per pipeline stage, and
 * GT530 / GT532 (see cost.h for the items and cost.c for the sources).
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"
#include "model.h"
#include "program_rt.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* ---- memory ---------------------------------------------------------------- */

void cost_memory_init(struct cost_memory *cm)
{
	memset(cm, 0, sizeof(*cm));
}

void cost_memory_release(struct cost_memory *cm)
{
	free(cm->stages);
	cost_memory_init(cm);
}

const char *cost_mem_item_name(enum cost_mem_item i)
{
	static const char *const names[MEM_ITEMS] = {
		"weights", "gathered_weights", "gradients", "optimizer",
		"activations", "logits",
	};

	return (unsigned)i < MEM_ITEMS ? names[i] : "?";
}

const char *cost_mem_status_name(enum cost_mem_status st)
{
	switch (st) {
	case MEM_FITS: return "fits";
	case MEM_TIGHT: return "tight";
	case MEM_EXCEEDS: return "exceeds";
	case MEM_SKIPPED: break;
	}
	return "skipped";
}

/* Rows of one GTP shard of a TP-local dim 0 (gtp_remat_shard_dim0: padded
 * at the tail to a multiple of pad x G, then split in G). */
static long long shard_rows(long long d0, long long g, int pad)
{
	long long align = (long long)(pad > 0 ? pad : 1) * g;

	return (d0 + (align - d0 % align) % align) / g;
}

/* Elements of one layer's GTP shards on a rank and of their padded TP
 * slices (what a gather rebuilds), dense or expert. */
static void layer_shards(const struct plan *p, const struct model_shape *m,
			 int pad, int expert, double *shard, double *slice)
{
	struct model_weight w[MODEL_MAX_WEIGHTS];
	size_t n = expert ? model_expert_weights(m, w, MODEL_MAX_WEIGHTS) :
			    model_layer_weights(m, w, MODEL_MAX_WEIGHTS);
	int grid = !expert || p->expert_grid_ok;
	long long tp = expert ? (grid ? p->etp : p->tp) : p->tp;
	long long g = expert ? (grid ? p->egtp : 1) : p->gtp;
	long long ep = expert && grid && p->ep > 0 ? p->ep : 1;
	long long local = expert ? m->num_moe_experts / ep : 1;

	*shard = *slice = 0;
	if (local < 1)
		local = 1;
	if (tp < 1)
		tp = 1;
	if (g < 1)
		g = 1;
	for (size_t i = 0; i < n; i++) {
		long long rows = w[i].rows, cols = w[i].cols, d0, d1, s;

		/* the rank's local experts are one grouped tensor */
		if (w[i].split == SPLIT_COLUMN)
			rows *= local;
		else
			cols *= local;
		d0 = w[i].split == SPLIT_COLUMN ? rows / tp : rows;
		d1 = w[i].split == SPLIT_ROW ? cols / tp : cols;
		s = shard_rows(d0, g, pad);
		*shard += (double)s * (double)d1;
		*slice += (double)s * (double)g * (double)d1;
	}
}

/* Korthikanti et al. Table 2, bytes per token x hidden of one layer kept
 * for backward without recompute: 10 (norm inputs, block inputs, dropout
 * masks) stay whole without sequence parallel; attention 8 (+ 5 a s / h
 * for stored scores) and the MLP 2 (fc1 out + activation out) / h split
 * over TP (34 in all for a 4h GELU MLP). */
static double act_coeff(const struct plan *p, const struct model_shape *m,
			const struct cost_settings *s, int sp, double seq)
{
	double h = (double)m->hidden_size, tp = (double)p->tp;
	int moe = m->num_moe_experts > 0;
	double f = (double)(moe ? m->moe_ffn_hidden_size : m->ffn_hidden_size);
	double fout = m->gated_linear_unit ? 2 * f : f;
	double attn = 8, mlp = (2 * fout + 2 * f) / h;
	double mlp_tp = moe && p->expert_grid_ok ? (double)p->etp : tp;

	if (s->unfused_attention && s->recompute != COST_RECOMPUTE_SELECTIVE)
		attn += 5.0 * (double)m->num_attention_heads * seq / h;
	if (moe)
		mlp *= (double)(m->moe_router_topk > 0 ? m->moe_router_topk : 1);
	return (sp ? 10 / tp : 10) + attn / tp + mlp / mlp_tp;
}

/* The layers of `stage` as the programs split them (an empty program
 * only places the stage). */
static long long layers_of(const struct plan *p, const struct model_shape *m,
			   const struct prog_opts *o, long long stage)
{
	struct prog pg;
	long long n;

	if (prog_build(&pg, p, m, PROG_NONE, stage, o)) {
		long long pp = p->pp > 0 ? p->pp : 1;

		return (stage + 1) * m->num_layers / pp -
		       stage * m->num_layers / pp;
	}
	n = pg.n_layers;
	prog_release(&pg);
	return n;
}

/* The logits path on the last stage, per TP slice of the padded
 * vocabulary and CP chunk of the sequence, for the larger of a train and
 * a log-prob micro-batch (they do not overlap). NeMo-RL's
 * DistributedLogprob (nemo_rl/distributed/model_utils.py) keeps the
 * output layer's bf16 logits (2 B per element), casts them to fp32 (4)
 * and subtracts the row maximum into a second fp32 tensor (4) in which
 * the softmax is computed in place; train saves that softmax for backward
 * and turns it into the gradient in place. Peak: 10 B per element, in
 * train and in every log-prob pass (the policy's get_logprobs, the
 * reference policy's, a teacher's top-k), which take logprob_batch_size
 * samples (GRPO, PPO, distillation) or the train micro-batch (DPO's
 * reference pass takes 2 x train_micro_batch_size, as train does). DPO
 * and reward models train chosen and rejected responses of a pair in one
 * micro-batch, so `micro` is already doubled for them. */
static double logits_bytes(const struct prog_opts *o,
			   const struct cost_settings *s, long long micro,
			   double tokens_per_sample, double vocab_slice)
{
	long long lp = o->logprob_micro_batch > 0 && !s->pairs ?
		       o->logprob_micro_batch : micro;

	return 10.0 * (double)(lp > micro ? lp : micro) * tokens_per_sample *
	       vocab_slice;
}

/* One stage's memory; first_layer: the layers of the stages before it
 * (the caller sums ms->layers, so each stage's program is built once). */
static void stage_memory(const struct plan *p, const struct model_shape *m,
			 const struct prog_opts *o,
			 const struct cost_settings *s, long long stage,
			 long long first_layer, struct cost_mem_stage *ms)
{
	long long pp = p->pp > 0 ? p->pp : 1, tp = p->tp > 0 ? p->tp : 1;
	long long div = s->vocab_divisor * tp, h = m->hidden_size;
	long long vpad = (m->vocab_size + div - 1) / div * div;
	double emb = (double)(vpad / tp) * (double)h;
	double dshard, dslice, eshard, eslice;
	double repl = (double)model_layer_replicated_params(m);
	long long layers = layers_of(p, m, o, stage), mtp = m->mtp_num_layers;
	long long moe_layers;
	int first = stage == 0, last = stage == pp - 1;
	int sp = o->sequence_parallel && tp > 1;
	long long micro = (p->micro_batch > 0 ? p->micro_batch : 1) *
			  (s->pairs ? 2 : 1);
	long long mbs = prog_microbatches(p, micro);
	double seq = (double)o->seq_length, cp = p->cp > 0 ? (double)p->cp : 1;
	double tokens = (double)micro * seq / cp, th = tokens * (double)h;
	double pd, pe, ddense, dexp, stored, minimal, work = 0;

	memset(ms, 0, sizeof(*ms));
	layer_shards(p, m, o->gtp_pad, 0, &dshard, &dslice);
	layer_shards(p, m, o->gtp_pad, 1, &eshard, &eslice);
	if (mtp < 0 || !last)
		mtp = 0;
	pd = (double)layers * (dshard + repl);
	/* experts only in the stage's MoE layers (moe_layer_freq, a hybrid
	 * pattern's E layers) and its MTP layers */
	moe_layers = model_moe_layers(m, first_layer, layers);
	pe = (double)(moe_layers + mtp) * eshard;
	if (first)
		pd += emb;
	if (last) {
		if (!m->share_embeddings_and_output_weights || pp > 1)
			pd += emb;  /* output layer (a copy when tied) */
		pd += (double)h; /* final norm */
		/* MTP: layers, eh_proj [h, 2h] column-parallel, three norms */
		pd += (double)mtp * (dshard + repl + 2.0 * h * h / tp + 3.0 * h);
	}
	ddense = s->distributed_optimizer ?
		 (double)cost_group_size(p, prog_kind("dp_cp_replicate")) : 1;
	dexp = s->distributed_optimizer && p->expert_grid_ok ?
	       (double)cost_group_size(p, prog_kind("edp")) : ddense;

	ms->stage = stage;
	ms->layers = layers;
	ms->in_flight = pp - stage < mbs ? pp - stage : mbs;
	ms->params = (long long)(pd + pe);
	ms->item[MEM_WEIGHTS] = 2 * (pd + pe);
	if (layers + mtp > 0)
		ms->item[MEM_GATHERED] = 2.0 * (layers + mtp > 1 ? 2 : 1) *
			((p->gtp > 1 ? dslice : 0) +
			 (p->expert_grid_ok && p->egtp > 1 ? eslice : 0));
	ms->item[MEM_GRADS] = (double)s->grad_bytes * (pd + pe);
	ms->item[MEM_OPTIMIZER] = (double)s->optim_bytes * s->optim_on_gpu *
				  (pd / ddense + pe / dexp);
	/* what each layer keeps per micro-batch in flight */
	minimal = 2 * th / (sp ? (double)tp : 1);
	stored = act_coeff(p, m, s, sp, seq) * th;
	if (s->recompute == COST_RECOMPUTE_FULL) {
		work = stored;  /* one layer rebuilt at a time */
		stored = minimal;
	}
	ms->item[MEM_ACTIVATIONS] = (double)(layers + mtp) *
		(double)ms->in_flight * stored + (layers + mtp ? work : 0);
	if (last && !s->fused_logprobs)
		ms->item[MEM_LOGITS] = logits_bytes(o, s, micro, seq / cp,
						    (double)(vpad / tp));
	for (int i = 0; i < MEM_ITEMS; i++)
		ms->total += ms->item[i];
	ms->optimistic = ms->total - ms->item[MEM_ACTIVATIONS] +
			 (double)(layers + mtp) * (double)ms->in_flight * minimal;
}

/* gtplan-run's own allocation (runtime/rt_model.c, rt_model_init), fp32:
 * params, gradients and Adam's m and v of the local shards and the
 * replicated parameters; one gathered TP-local weight, its gradient, a
 * shard and the embedding's gradient (prefetch and bf16 buffers left
 * out); one micro-batch's activations as rt_model.c's tables list them
 * (per layer x, n1, xm, n2 of the residual rows, n1g and n2g with SP,
 * q, k, v, o, the QK-norm inputs, lse, fc1's output and SwiGLU's, with
 * CP all_gather every rank's keys and values, with the CP ring the last
 * block's; the scratch gradients and the ring's buffers), and the logits
 * of its vocabulary slice. One stage;
 * nothing is recomputed. */
static void runtime_memory(const struct plan *p, struct cost_mem_stage *ms)
{
	struct prog_rt_shape r;
	const struct dsz_sizes *z;
	double n, full = 0, shard = 0, N, Nl, h, L, layer, glob, K, lse;
	double cp_layer = 0, cp_glob = 0;
	long long g = p->gtp > 0 ? p->gtp : 1;

	prog_rt_shape(p, &r);
	z = &r.z;
	n = (double)(z->n_shard + z->n_rep);
	N = (double)z->tokens;
	Nl = (double)z->local;
	h = (double)r.d.h;
	L = (double)r.d.layers;
	K = (double)(z->keys * z->kv_l); /* every CP rank's keys (CP) */
	lse = (double)(r.micro * z->hl * (r.d.seq_len / r.d.cp));
	if (r.d.cp > 1 && r.cp_p2p) {
		/* kvlast; ring0, ring1, rdkv, o2, lse2 (rt_model.c) */
		cp_layer = 2 * N * (double)z->kv_l;
		cp_glob = 10 * N * (double)z->kv_l + N * (double)z->q_l + lse;
	} else if (r.d.cp > 1) {
		/* kg, vg; dkg, dvg and with micro-batches kvtmp */
		cp_layer = 2 * K;
		cp_glob = (r.micro > 1 ? 3 : 2) * K;
	}
	for (int w = 0; w < DSZ_PER_LAYER; w++)
		if ((double)z->shard[w] > shard)
			shard = (double)z->shard[w];
	if ((double)z->shard_emb > shard)
		shard = (double)z->shard_emb;
	full = shard * (double)g;
	layer = 4 * Nl * h + 2 * Nl + (r.d.sp ? 2 * N * h : 0) +
		2 * N * (double)(z->q_l + z->kv_l) +
		(r.d.qk_norm ? N * (double)(z->q_l + z->kv_l + z->hl +
					     z->kl) : 0) +
		lse + 3 * N * (double)z->fl + cp_layer;
	glob = 5 * Nl * h + Nl + N * h + (r.d.sp ? N * h : 0) + 4 * N +
	       2 * N * (double)(z->q_l + z->kv_l) + 3 * N * (double)z->fl +
	       cp_glob;
	memset(ms, 0, sizeof(*ms));
	ms->layers = r.d.layers;
	ms->in_flight = 1;
	ms->params = (long long)n;
	ms->item[MEM_WEIGHTS] = 4.0 * n;
	ms->item[MEM_GRADS] = 4.0 * n;
	ms->item[MEM_OPTIMIZER] = 8.0 * n;
	ms->item[MEM_GATHERED] = 4.0 * (2 * full + shard +
					(double)z->shard_emb * (double)g);
	ms->item[MEM_ACTIVATIONS] = 4.0 * (L * layer + glob) + 4.0 * (3 * N);
	ms->item[MEM_LOGITS] = 4.0 * N * (double)z->vl;
	for (int i = 0; i < MEM_ITEMS; i++)
		ms->total += ms->item[i];
	ms->optimistic = ms->total;
}

int cost_memory(const struct plan *p, const struct model_shape *m,
		const struct prog_opts *o, const struct cost_settings *s,
		struct cost_memory *out)
{
	struct prog_opts dflt;
	struct model_shape approx;
	long long pp = p->pp > 0 ? p->pp : 1;
	int over = 0, tight = 0;

	cost_memory_init(out);
	out->capacity = s->gpu_memory_gb * GIB;
	if (o && o->runtime_model && p->grid_ok) {
		out->stages = calloc(1, sizeof(*out->stages));
		if (!out->stages)
			return -1;
		out->n_stages = 1;
		runtime_memory(p, &out->stages[0]);
		out->status = out->stages[0].total > out->capacity ?
			      MEM_EXCEEDS : MEM_FITS;
		return 0;
	}
	if (m && !m->known && m->shape_known &&
	    (m->ffn_hidden_size > 0 || m->moe_ffn_hidden_size > 0)) {
		/* approximate sizes: uniform layers of the given sizes (an
		 * MoE model's dense MLP, when not given, as an expert's) */
		approx = *m;
		approx.known = 1;
		if (!approx.ffn_hidden_size)
			approx.ffn_hidden_size = approx.moe_ffn_hidden_size;
		if (approx.num_moe_experts && !approx.moe_ffn_hidden_size)
			approx.moe_ffn_hidden_size = approx.ffn_hidden_size;
		if (approx.num_moe_experts && !approx.moe_router_topk)
			approx.moe_router_topk = 2;
		if (!approx.kv_channels)
			approx.kv_channels = model_head_dim(m);
		m = &approx;
		out->approximate = 1;
	}
	if (!m || !m->known) {
		out->skipped = "the model's shape is unknown";
		return 0;
	}
	if (!s->megatron) {
		out->skipped = "the DTensor backend trains; gtplan models "
			       "Megatron's memory only";
		return 0;
	}
	if (!p->grid_ok) {
		out->skipped = "there is no rank grid";
		return 0;
	}
	if (!o) {
		prog_opts_init(&dflt);
		o = &dflt;
	}
	out->stages = calloc((size_t)pp, sizeof(*out->stages));
	if (!out->stages)
		return -1;
	out->n_stages = (size_t)pp;
	for (long long st = 0, first_layer = 0; st < pp; st++) {
		struct cost_mem_stage *ms = &out->stages[st];

		stage_memory(p, m, o, s, st, first_layer, ms);
		first_layer += ms->layers;
		if (ms->total > out->stages[out->worst].total)
			out->worst = (size_t)st;
		over |= ms->optimistic > out->capacity;
		tight |= ms->total > out->capacity;
	}
	out->status = over ? MEM_EXCEEDS : tight ? MEM_TIGHT : MEM_FITS;
	return 0;
}

/* ---- GT530, GT532 ----------------------------------------------------------- */

/* "optimizer 98.3 GiB, gradients 32.8 GiB, weights 16.4 GiB" */
static void biggest(const struct cost_mem_stage *ms, int optimistic,
		    char *buf, size_t len)
{
	int used[MEM_ITEMS] = { 0 };
	size_t at = 0;

	for (int n = 0; n < 3; n++) {
		int best = -1;
		double bv = 0;

		for (int i = 0; i < MEM_ITEMS; i++) {
			double v = ms->item[i];

			if (i == MEM_ACTIVATIONS && optimistic)
				v -= ms->total - ms->optimistic;
			if (!used[i] && v > bv) {
				bv = v;
				best = i;
			}
		}
		if (best < 0 || bv < 0.05 * GIB)
			break;
		used[best] = 1;
		at += (size_t)snprintf(buf + at, at < len ? len - at : 0,
				       "%s%s %.1f GiB", n ? ", " : "",
				       cost_mem_item_name(
					       (enum cost_mem_item)best), bv / GIB);
	}
}

int cost_check_memory(const struct cost_memory *mem,
		      const struct cost_settings *s,
		      const struct cfg_node *root, struct diag_list *diags)
{
	static const char *const keys[] = { KEY_SHARDS, KEY_TP,
					    KEY_MODEL_NAME, NULL };
	const struct cost_mem_stage *ms;
	const char *key = cfg_first_set(root, keys);
	char what[160];
	struct diag *d;
	size_t worst = mem->worst;
	int hard;

	if (mem->status != MEM_EXCEEDS && mem->status != MEM_TIGHT)
		return 0;
	/* approximate sizes never make an error: at most "may not fit" */
	hard = mem->status == MEM_EXCEEDS && !mem->approximate;
	if (mem->status == MEM_EXCEEDS)
		for (size_t i = 0; i < mem->n_stages; i++)
			if (mem->stages[i].optimistic >
			    mem->stages[worst].optimistic)
				worst = i;
	ms = &mem->stages[worst];
	biggest(ms, mem->status == MEM_EXCEEDS, what, sizeof(what));
	if (hard) {
		d = diag_add(diags, "GT530", cfg_loc(root, key), key,
			"training needs at least %.1f GiB per GPU on pipeline "
			"stage %lld, more than the %.0f GiB a GPU has, even "
			"with activations cut to the layer inputs: %s "
			"(estimate)", ms->optimistic / GIB, ms->stage,
			mem->capacity / GIB, what);
		if (d)
			diag_hint(d, "shard the model over more GPUs: a larger "
				  "tensor_parallel_num_weight_shards (GTP size "
				  "G), TP or PP%s; then activation recompute "
				  "or a smaller micro batch for activations",
				  s->distributed_optimizer ? "" :
				  ", and use_distributed_optimizer: true");
	} else {
		d = diag_add(diags, "GT532", cfg_loc(root, key), key,
			"training may not fit in GPU memory: the estimate is "
			"%.1f GiB per GPU on pipeline stage %lld, above the "
			"%.0f GiB a GPU has: %s; with activation recompute it "
			"would be %.1f GiB%s", ms->total / GIB, ms->stage,
			mem->capacity / GIB, what, ms->optimistic / GIB,
			mem->approximate ? " (the model's sizes are "
			"approximate: its layers are estimated as uniform "
			"transformer layers)" : "");
		if (d)
			diag_hint(d, "set policy.megatron_cfg."
				  "activation_checkpointing: true, use a "
				  "smaller micro batch, sequence parallel or "
				  "CP, or a larger GTP size G, TP or PP");
	}
	if (!d)
		return -1;
	if (cfg_path(root, KEY_GPU_MEMORY))
		diag_note(d, cfg_loc(root, KEY_GPU_MEMORY),
			  "the GPU memory is set here");
	else
		diag_note(d, DIAG_NOLOC, "gtplan.gpu_memory_gb is %.0f (an "
			  "H200) unless the config sets it",
			  COST_GPU_MEMORY_GB);
	return 0;
}
