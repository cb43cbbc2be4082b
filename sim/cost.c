/*
 * cost: settings, group facts and GT531 (see cost.h).
 *
 * Default constants and where they come from (docs/notes/perf-anchors.md):
 *  - 370 GB/s NVLink bus bandwidth per GPU: NCCL's ring all-gather /
 *    reduce-scatter / all-reduce on 8x H100/H200 saturates at 360-370 GB/s
 *    (NVIDIA/nccl-tests#212, #326; NVIDIA/nccl#1455), i.e. the 450 GB/s
 *    per direction of NVLink4 less protocol overhead.
 *  - 48 GB/s network bus bandwidth per GPU: one 400 Gb/s NIC per GPU
 *    (50 GB/s line rate); SimAI's analytical example uses 48.5.
 *  - latency per step of a collective: 1.5 us on NVLink, 5 us across the
 *    network (own estimate: small all-reduces on 8 NVLink GPUs take
 *    5-15 us, NVIDIA/nccl#1259, deepseek-ai/DeepEP#303; a ring of 8 has
 *    14 steps, a tree 6).
 *  - 989 TFLOP/s dense BF16 for H100/H200 SXM (1979 is with 2:4
 *    sparsity), 45% of it achieved: Megatron-LM reports 41-47% MFU on
 *    H100 (its README's performance table).
 *  - 141 GB per GPU: the H200.
 *  - Adam with the distributed optimizer: bf16 params, fp32 grads, fp32
 *    master params and moments, 6 + 12/d bytes per parameter (Megatron
 *    distrib_optimizer docs).
 *  - activations: Korthikanti et al., arXiv 2205.05198, Table 2, with the
 *    MLP's real width (34 = 10 + 8 + 16 for a 4h GELU MLP); logits 4 bytes
 *    each as in Megatron's theoretical_memory_usage.py.
 */
#include "cost.h"

#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"
#include "classes.h"

/* ---- settings ----------------------------------------------------------- */

void cost_settings_init(struct cost_settings *s)
{
	memset(s, 0, sizeof(*s));
	s->intra_gbps = COST_INTRA_GBPS;
	s->inter_gbps = COST_INTER_GBPS;
	s->intra_lat_us = COST_INTRA_LAT_US;
	s->inter_lat_us = COST_INTER_LAT_US;
	s->peak_tflops = COST_PEAK_TFLOPS;
	s->efficiency = COST_EFFICIENCY;
	s->gpu_memory_gb = COST_GPU_MEMORY_GB;
	s->overlap = COST_OVERLAP_GTP;
	s->megatron = 1;
	s->distributed_optimizer = 1;
	s->recompute = COST_RECOMPUTE_NONE;
	s->grad_bytes = 4;
	s->optim_bytes = 12;
	s->optim_on_gpu = 1.0;
	s->vocab_divisor = COST_VOCAB_DIVISOR;
}


void cost_settings_read(struct cost_settings *s, const struct plan *p)
{
	const struct settings *c = &p->set;
	double v;

	s->domain = p->train.gpus_per_node;
	if (c->segment_size)
		s->domain = c->segment_size * p->train.gpus_per_node;
	if (c->nvlink_domain > 0)
		s->domain = c->nvlink_domain;
	if (c->intra_gbps > 0)
		s->intra_gbps = c->intra_gbps;
	if (c->inter_gbps > 0)
		s->inter_gbps = c->inter_gbps;
	if (c->intra_lat_us >= 0)
		s->intra_lat_us = c->intra_lat_us;
	if (c->inter_lat_us >= 0)
		s->inter_lat_us = c->inter_lat_us;
	if (c->peak_tflops > 0)
		s->peak_tflops = c->peak_tflops;
	if (c->compute_efficiency > 0)
		s->efficiency = c->compute_efficiency;
	if (c->overlap_none)
		s->overlap = COST_OVERLAP_NONE;
	if (c->gpu_memory_gb > 0)
		s->gpu_memory_gb = c->gpu_memory_gb;

	/* Megatron's settings, as the planner read them */
	s->megatron = c->megatron;
	if (c->vocab_divisor)
		s->vocab_divisor = c->vocab_divisor;
	s->distributed_optimizer = c->distributed_optimizer;
	if (c->activation_checkpointing)
		s->recompute = c->selective_recompute ?
			       COST_RECOMPUTE_SELECTIVE : COST_RECOMPUTE_FULL;
	s->unfused_attention = c->unfused_attention;
	s->fused_logprobs = c->fused_logprobs;
	s->pairs = c->preference_pairs;
	if (!c->grad_reduce_in_fp32)
		s->grad_bytes = 2;
	if (c->precision_aware_optimizer)
		s->optim_bytes = 4 + (c->exp_avg_half ? 2 : 4) +
			(c->exp_avg_sq_half ? 2 : 4);
	if (c->optimizer_cpu_offload) {
		v = c->offload_fraction;
		s->optim_on_gpu = v < 0 ? 1.0 : v > 1 ? 0.0 : 1.0 - v;
	}
}

/* ---- group facts ---------------------------------------------------------- */

static const struct lay_grid *grid_of(const struct plan *p, unsigned group)
{
	const struct lay_group_kind *gk = lay_group_kind_at(group);

	if (!gk || (gk->expert && !p->expert_grid_ok))
		return NULL;
	return gk->expert ? &p->expert : &p->dense;
}

static long long kind_size(const struct plan *p, unsigned group)
{
	const struct lay_grid *g = grid_of(p, group);

	return g ? lay_group_size(g, lay_group_kind_at(group)->axes) : 1;
}

long long cost_group_size(const struct plan *p, unsigned group)
{
	if (group == PROG_GK_WORLD)
		return p->world;
	if (group == PROG_GK_TRAIN_INFER)
		return p->world + (p->colocated ? 0 :
			p->inference.nodes * p->inference.gpus_per_node);
#ifdef PROG_GK_EMBEDDING
	if (group == PROG_GK_EMBEDDING) /* first and last stage */
		return p->pp > 1 ? 2 : 1;
#endif
	return kind_size(p, group);
}

const char *cost_group_label(unsigned group, char *buf, size_t len)
{
	const char *n = prog_group_name(group);
	size_t i;

	if (strlen(n) > 4 || len == 0)
		return n;
	for (i = 0; n[i] && i + 1 < len; i++)
		buf[i] = (char)(n[i] >= 'a' && n[i] <= 'z' ? n[i] - 32 : n[i]);
	buf[i] = '\0';
	return buf;
}

int cost_group_spans(struct cost_model *cm, unsigned group, long long *example)
{
	const struct plan *p = cm->p;
	long long dom = cm->s.domain, n, count;
	const struct lay_grid *g;
	unsigned axes;

	if (example)
		*example = 0;
	if (group >= COST_KINDS)
		return 0;
	if (cm->span[group] >= 0) {
		if (example)
			*example = cm->example[group];
		return cm->span[group];
	}
	cm->span[group] = 0;
	cm->example[group] = 0;
	n = cost_group_size(p, group);
	g = grid_of(p, group);
	if (dom <= 0 || n <= 1) {
		return 0;
	} else if (group == PROG_GK_WORLD || group == PROG_GK_TRAIN_INFER) {
		cm->span[group] = n > dom || (group == PROG_GK_TRAIN_INFER &&
					      n > p->world);
		return cm->span[group];
#ifdef PROG_GK_EMBEDDING
	} else if (group == PROG_GK_EMBEDDING) {
		/* the ends of a pp group */
		cm->span[group] = (signed char)cost_group_spans(cm,
			prog_kind("pp"), example);
		return cm->span[group];
#endif
	} else if (!g) {
		return 0;
	}
	/* Members ascend and every group of a kind has the same offsets, so a
	 * group spans domains exactly when its first and last member lie in
	 * different ones. */
	axes = lay_group_kind_at(group)->axes;
	count = lay_group_count(g, axes);
	long long span = lay_group_member(g, axes, 0, n - 1) -
			 lay_group_member(g, axes, 0, 0);
	for (long long i = 0; i < count; i++) {
		long long first = lay_group_member(g, axes, i, 0);

		if (span >= dom || first / dom != (first + span) / dom) {
			cm->span[group] = 1;
			cm->example[group] = i;
			break;
		}
	}
	if (example)
		*example = cm->example[group];
	return cm->span[group];
}

void cost_model_init(struct cost_model *cm, const struct plan *p,
		     const struct model_shape *m, const struct prog_opts *o,
		     const struct cost_settings *s)
{
	memset(cm, 0, sizeof(*cm));
	cm->p = p;
	cm->known = m && m->known;
	if (cm->known)
		cm->m = *m;
	else
		prog_default_shape(&cm->m);
	if (o)
		cm->o = *o;
	else
		prog_opts_init(&cm->o);
	if (s)
		cm->s = *s;
	else
		cost_settings_init(&cm->s);
	memset(cm->span, -1, sizeof(cm->span));
}

/* ---- GT531: TP and GTP groups across NVLink domains ------------------------ */

/* "ranks 0, 4, 8 on nodes 0, 1" or "ranks 0-15 on nodes 0, 1" for group
 * `idx` of a layout kind (at most 8 ranks and 8 nodes named). */
static void group_text(const struct plan *p, unsigned kind, long long idx,
		       char *buf, size_t len)
{
	const struct lay_group_kind *gk = lay_group_kind_at(kind);
	const struct lay_grid *g = cls_grid(p, kind);
	long long n = lay_group_size(g, gk->axes), nodes = 0, prev = -1;
	long long first = lay_group_member(g, gk->axes, idx, 0);
	long long last = lay_group_member(g, gk->axes, idx, n - 1);
	size_t at = 0;

#define PUT(...) (at += (size_t)snprintf(buf + at, at < len ? len - at : 0, \
					  __VA_ARGS__))
	if (last - first == n - 1) {
		PUT("ranks %lld-%lld", first, last);
	} else {
		PUT("ranks");
		for (long long i = 0; i < n && i < 8; i++)
			PUT("%s %lld", i ? "," : "",
			    lay_group_member(g, gk->axes, idx, i));
		if (n > 8)
			PUT(", ... (%lld in all)", n);
	}
	PUT(" on nodes");
	for (long long i = 0; i < n; i++) {
		long long node, local;

		plan_rank_place(p, lay_group_member(g, gk->axes, idx, i), &node,
				&local);
		if (node == prev)
			continue;
		if (nodes++ == 8) {
			PUT(", ...");
			break;
		}
		PUT("%s %lld", nodes > 1 ? "," : "", node);
		prev = node;
	}
#undef PUT
}

/* The ranks from the first member of a group of `axis` to the last one's
 * block: the sizes of the axes up to `axis` in the rank order, e.g.
 * "TP x CP x G = 12"; returns that product. */
static long long block_text(const struct lay_grid *g, enum lay_axis axis,
			    int expert, char *buf, size_t len)
{
	static const char *const dense[LAY_NAXES] = { "TP", "CP", "G", "EP",
						       "D", "PP" };
	static const char *const exp[LAY_NAXES] = { "ETP", "CP", "EG", "EP",
						     "EDP", "PP" };
	long long prod = 1;
	size_t at = 0;

	buf[0] = '\0';
	for (int k = 0; k < LAY_NAXES; k++) {
		enum lay_axis a = g->order.axis[k];

		if (g->size[a] > 1 || a == axis) {
			at += (size_t)snprintf(buf + at, at < len ? len - at : 0,
					       "%s%s", prod > 1 || at ? " x " : "",
					       (expert ? exp : dense)[a]);
			prod *= g->size[a];
		}
		if (a == axis)
			break;
	}
	snprintf(buf + (at < len ? at : len - 1), at < len ? len - at : 1,
		 " = %lld", prod);
	return prod;
}


/* The words of one spanning-group finding. */
struct span {
	const char *key;   /* where it points */
	const char *up;    /* the kind, upper case: "TP", "GTP", ... */
	const char *dom;   /* "nodes of 8 GPUs" or "NVLink domains of ..." */
	const char *grp;   /* the group's ranks and nodes */
	const char *block; /* what a group spans in this rank order */
	long long ex;      /* the group's index */
};

/* GT533: GTP groups span domains, their gathers hidden by prefetch (or no
 * estimate to tell): a note, since prefetch is what makes GTP across nodes
 * work. */
static int note_hidden(const struct cfg_node *root, const struct span *sp,
		       const struct cost_call *train, struct diag_list *diags)
{
	struct diag *d = diag_add(diags, "GT533", cfg_loc(root, sp->key),
		sp->key, "%s groups span %s: %s group %lld is %s; its weight "
		"gathers cross the network%s", sp->up, sp->dom, sp->up, sp->ex,
		sp->grp, train->valid ? ", hidden behind compute by prefetch "
		"(estimate)" : "");

	if (!d)
		return -1;
	if (train->valid)
		diag_note(d, DIAG_NOLOC, "%.0f ms of GTP traffic per train "
			  "step, %.0f ms exposed", train->gtp_us / 1e3,
			  train->gtp_exposed_us / 1e3);
	diag_hint(d, "nothing to change while compute hides them; with "
		  "smaller micro-batches or faster GPUs, use nodes whose GPU "
		  "count is a multiple of %s", sp->block);
	return 0;
}

/* GT531: TP-like groups (gtp: GTP-like ones whose gathers are exposed)
 * span domains. */
static int report_span(const struct cfg_node *root, const struct span *sp,
		       int gtp, const struct cost_call *train,
		       long long domain, struct diag_list *diags)
{
	struct diag *d;

	if (!gtp)
		d = diag_add(diags, "GT531", cfg_loc(root, sp->key), sp->key,
			"%s groups span %s: %s group %lld is %s; its "
			"collectives, on the critical path of every layer, run "
			"at network speed", sp->up, sp->dom, sp->up, sp->ex,
			sp->grp);
	else
		d = diag_add(diags, "GT531", cfg_loc(root, sp->key), sp->key,
			"%s groups span %s and their weight gathers are not "
			"hidden behind compute: %s group %lld is %s; %.0f of "
			"%.0f ms of GTP traffic per train step is exposed "
			"(estimate)", sp->up, sp->dom, sp->up, sp->ex, sp->grp,
			train->gtp_exposed_us / 1e3, train->gtp_us / 1e3);
	if (!d)
		return -1;
	if (gtp)
		diag_hint(d, "use nodes whose GPU count is a multiple of %s "
			  "(what a group spans in this rank order), a smaller "
			  "weight-shard count, or larger micro-batches so that "
			  "compute hides the gathers", sp->block);
	else
		diag_hint(d, "keep %s within a node: %s <= %lld, tp (then "
			  "gtp) fastest in gtplan.rank_order, and nodes whose "
			  "GPU count is a multiple of %s; grow GTP or PP "
			  "instead", sp->up, sp->up, domain, sp->block);
	diag_note(d, cfg_loc(root, KEY_GPUS_PER_NODE),
		  "GPUs per node are set here");
	return 0;
}

int cost_check_spans(struct cost_model *cm, const struct cfg_node *root,
		     const struct cost_call *train, struct diag_list *diags)
{
	static const char *const kinds[] = { "tp", "etp", "gtp", "egtp" };
	/* where each finding points: the first of these the config sets */
	static const char *const keys[][4] = {
		{ KEY_TP, KEY_GPUS_PER_NODE, NULL },
		{ KEY_ETP, KEY_TP, KEY_GPUS_PER_NODE, NULL },
		{ KEY_SHARDS, KEY_TP, KEY_GPUS_PER_NODE, NULL },
		{ KEY_EXPERT_SHARDS, KEY_EP, KEY_GPUS_PER_NODE, NULL },
	};
	const struct plan *p = cm->p;
	struct cost_call own;
	int fired[2] = { 0, 0 };
	char grp[256], dom[64], up[16], block[96];
	struct span sp = { NULL, up, dom, grp, block, 0 };

	if (cm->s.domain == p->train.gpus_per_node)
		snprintf(dom, sizeof(dom), "nodes of %lld GPUs", cm->s.domain);
	else
		snprintf(dom, sizeof(dom), "NVLink domains of %lld GPUs",
			 cm->s.domain);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
		unsigned kind = prog_kind(kinds[k]);
		int gtp = k >= 2, expert = k == 1 || k == 3, rc;

		sp.key = cfg_first_set(root, keys[k]);
		block_text(cls_grid(p, kind), gtp ? LAY_GTP : LAY_TP, expert,
			   block, sizeof(block));
		if (kind == PROG_GK_NONE || fired[gtp] ||
		    !cost_group_spans(cm, kind, &sp.ex))
			continue;
		if (gtp && !train) {
			if (cost_call_time(cm, PROG_TRAIN, &own, NULL, NULL))
				own.valid = 0;
			train = &own;
		}
		group_text(p, kind, sp.ex, grp, sizeof(grp));
		cost_group_label(kind, up, sizeof(up));
		if (gtp && (!train->valid ||
			    train->gtp_exposed_us <= 0.05 * train->total_us))
			rc = note_hidden(root, &sp, train, diags);
		else
			rc = report_span(root, &sp, gtp, train, cm->s.domain,
					 diags);
		if (rc)
			return -1;
		fired[gtp] = 1;
	}
	return 0;
}
