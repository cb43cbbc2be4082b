/*
 * rt_shape: the sizes of a rank (rt_model_shape, see rt_model.h) and the
 * refusals of what gtplan-run does not run, each one message with the
 * size and the fix, before any collective.
 */
#include "rt_model.h"

#include <string.h>

#include "rt_err.h"
#include "rt_pp.h"

/* What gtplan-run does not run, or a model the layout cannot split. */
static int refuse_layout(const struct rt_plan *p, const struct rt_shape *s)
{
	const struct rt_settings *rt = &p->rt;

	if (rt->moe)
		return rt_error_once(RT_EPLAN, "%s is a mixture-of-experts "
				     "model; gtplan-run's decoder is dense "
				     "(no experts, no router): plan a dense "
				     "model", rt->model_name);
	if (p->ep > 1)
		return rt_error_once(RT_EPLAN, "the decoder has no experts, so "
				     "EP %d has nothing to split; plan with "
				     "expert_model_parallel_size 1", p->ep);
	if (s->cp > 1 && s->seq_len % (2 * s->cp))
		return rt_error_once(RT_EPLAN, "seq_len %lld does not split into "
				     "2 x CP = %d chunks (the load-balanced CP "
				     "split); use a multiple of %d", s->seq_len,
				     2 * s->cp, 2 * s->cp);
	if (s->cp > 1 && strcmp(rt->cp_comm, "p2p") &&
	    strcmp(rt->cp_comm, "all_gather"))
		return rt_error_once(RT_EPLAN, "cp_comm_type '%s' is not run "
				     "by gtplan-run (it runs Megatron's 'p2p' "
				     "ring and 'all_gather'); set policy."
				     "megatron_cfg.cp_comm_type to one of them",
				     rt->cp_comm);
	if (s->heads % s->kv_heads)
		return rt_error_once(RT_EPLAN, "%s: %lld heads are not a "
				     "multiple of %lld query groups",
				     rt->model_name, s->heads, s->kv_heads);
	if (s->heads % s->tp)
		return rt_error_once(RT_EPLAN, "GT601: TP %d does not divide "
				     "the %lld attention heads of %s; use a TP "
				     "that divides them", s->tp, s->heads,
				     rt->model_name);
	if (s->kv_heads % s->tp)
		return rt_error_once(RT_EPLAN, "GT602: TP %d does not divide "
				     "the %lld query groups of %s (gtplan-run "
				     "splits whole groups; the sub-sharding of "
				     "Megatron-LM PR #2565 for TP above the "
				     "groups is not implemented); use a TP "
				     "that divides %lld", s->tp, s->kv_heads,
				     rt->model_name, s->kv_heads);
	if (s->ffn % s->tp)
		return rt_error_once(RT_EPLAN, "the MLP size %lld of %s is not "
				     "divisible by TP %d (linear_fc1 is "
				     "column-parallel over TP); use a multiple "
				     "of %d", s->ffn, rt->model_name, s->tp,
				     s->tp);
	if (s->hd % 2)
		return rt_error_once(RT_EPLAN, "head_dim %lld of %s is odd; "
				     "rotate-half RoPE needs an even one",
				     s->hd, rt->model_name);
	return 0;
}

/* The batch: global batch over the lanes, micro-batches of each lane. */
static int shape_batch(struct rt_shape *s, const struct rt_plan *p,
		       long long global_batch, long long micro_batch)
{
	s->global_batch = global_batch > 0 ? global_batch : p->global_batch;
	s->micro = micro_batch > 0 ? micro_batch :
		   p->micro_batch > 0 ? p->micro_batch : 1;
	if (s->global_batch < 1)
		return rt_error_once(RT_EPLAN, "the plan has no global batch "
				     "(policy.train_global_batch_size is "
				     "unset); pass --global-batch N");
	if (s->global_batch % s->lanes)
		return rt_error_once(RT_EPLAN, "the global batch %lld does not "
				     "split over %d lanes (L = D x G); use a "
				     "multiple of %d", s->global_batch,
				     s->lanes, s->lanes);
	s->per_lane = s->global_batch / s->lanes;
	if (s->per_lane % s->micro)
		return rt_error_once(RT_EPLAN, "each lane gets %lld samples, "
				     "not a multiple of the micro batch %lld",
				     s->per_lane, s->micro);
	s->micro_batches = s->per_lane / s->micro;
	if (s->sp && (s->micro * (s->seq_len / s->cp)) % s->tp)
		return rt_error_once(RT_EPLAN, "sequence parallelism splits a "
				     "micro-batch's %lld tokens of this rank "
				     "over TP %d, which does not divide them; "
				     "use a seq_len that TP x CP divides",
				     s->micro * (s->seq_len / s->cp), s->tp);
	return 0;
}

int rt_model_shape(struct rt_shape *s, const struct rt_plan *p,
		   long long global_batch, long long micro_batch)
{
	const struct rt_settings *rt = &p->rt;
	const struct rt_rank *me = &p->ranks[p->me];
	struct dsz_dims d;

	memset(s, 0, sizeof(*s));
	s->tp = p->size[RT_TP];
	s->cp = p->size[RT_CP];
	s->g = p->size[RT_GTP];
	s->lanes = p->lanes;
	s->t = me->c[RT_TP];
	s->c = me->c[RT_CP];
	s->gr = me->c[RT_GTP];
	s->lane = me->lane;
	s->h = rt->hidden;
	s->ffn = rt->ffn;
	s->layers = rt->layers;
	s->heads = rt->heads;
	s->kv_heads = rt->kv_heads;
	s->hd = rt->head_dim;
	s->vocab = rt->vocab;
	s->seq_len = rt->seq_len;
	s->tie = rt->tie;
	s->qkv_bias = rt->qkv_bias;
	s->qk_norm = rt->qk_norm;
	s->sp = rt->sp && s->tp > 1;
	s->cp_p2p = !strcmp(rt->cp_comm, "p2p");
	s->theta = rt->rope_theta;
	s->norm_eps = rt->norm_eps;
	s->eps = (float)rt->norm_eps;
	RCHECK(refuse_layout(p, s));
	RCHECK(shape_batch(s, p, global_batch, micro_batch));
	RCHECK(rt_pp_shape(s, p));
	d = (struct dsz_dims){
		.h = s->h, .ffn = s->ffn, .layers = s->layers,
		.heads = s->heads, .kv_heads = s->kv_heads, .head_dim = s->hd,
		.vocab = s->vocab, .tie = s->tie, .qkv_bias = s->qkv_bias,
		.qk_norm = s->qk_norm, .sp = s->sp, .seq_len = s->seq_len,
		.micro = s->micro, .tp = s->tp, .g = s->g, .cp = s->cp,
		.skip_pre = !s->pre, .skip_post = !s->post,
	};
	dsz_fill(&s->z, &d);
	s->fl = s->z.fl;
	s->vp = s->z.vp;
	s->vl = s->z.vl;
	s->vfirst = s->t * s->vl;
	s->vvalid = s->vocab - s->vfirst;
	if (s->vvalid > s->vl)
		s->vvalid = s->vl;
	if (s->vvalid < 0)
		s->vvalid = 0;
	s->local_seq = s->seq_len / s->cp;
	s->tokens = s->z.tokens;
	s->local = s->z.local;
	return 0;
}
