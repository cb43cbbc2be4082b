/*
 * rt_pp: pipeline parallelism (see rt_pp.h, rt_model.h): the stage's
 * layers, and the schedule of base/pp_schedule.h run op by op. A forward
 * of (chunk, micro-batch) works in the micro-batch's slot (rt_model_
 * use_slot: its saved activations stay there until its backward); an
 * exchange sends the chunk output the last forward left in m->pp_out or
 * the input gradient the last backward left in m->a.dx, and receives an
 * input activation straight into the first layer's input of its slot, or
 * an output gradient into m->pp_grad[slot][chunk] (copied to m->a.dx when
 * that backward starts).
 */
#include "rt_pp.h"

#include <stdlib.h>
#include <string.h>

#include "rt_err.h"

/* ---- the split ------------------------------------------------------------ */

static int split_refusal(const struct rt_shape *s, const struct rt_plan *p)
{
	const struct rt_settings *rt = &p->rt;

	return rt_error_once(RT_EPLAN, "GT600: %lld layers do not split over "
			     "PP %d%s%s (Megatron needs the first and last "
			     "stage's layers, if set, and every middle "
			     "stage's equal share to divide by the virtual "
			     "pipeline size %d); use a layer count or "
			     "num_layers_in_first/last_pipeline_stage that "
			     "splits", s->layers_all, s->pp,
			     rt->pp_first || rt->pp_last ?
			     " with the first/last stage sizes set" : "",
			     s->vpp > 1 ? " in whole virtual stages" : "",
			     s->vpp);
}

int rt_pp_shape(struct rt_shape *s, const struct rt_plan *p)
{
	const struct rt_settings *rt = &p->rt;
	long long L = s->layers, n;

	s->pp = p->size[RT_PP];
	s->p = p->ranks[p->me].c[RT_PP];
	s->vpp = rt->vpp > 0 ? (int)rt->vpp : 1;
	s->layers_all = L;
	s->pre = s->p == 0;
	s->post = s->p == s->pp - 1;
	if (s->pp == 1 && s->vpp > 1)
		return rt_error_once(RT_EPLAN, "GT622: virtual pipeline size %d "
				     "needs PP > 1, and PP is 1; remove "
				     "virtual_pipeline_model_parallel_size",
				     s->vpp);
	if (s->vpp > PPS_MAX_V)
		return rt_error_once(RT_EPLAN, "virtual pipeline size %d is "
				     "above gtplan-run's %d", s->vpp,
				     PPS_MAX_V);
	for (int q = 0; q < s->pp; q++)
		if (pps_stage_layers(L, s->pp, s->vpp, s->pp > 1 ?
				     rt->pp_first : 0, s->pp > 1 ?
				     rt->pp_last : 0, q) < 0)
			return split_refusal(s, p);
	/* forced, Megatron's formulas run as they are: the stages' exchanges
	 * do not pair and the watchdog finds where they part */
	if (s->vpp > 1 && s->micro_batches % s->pp && !p->forced)
		return rt_error_once(RT_EPLAN, "GT633: the interleaved schedule "
				     "needs the %lld micro-batches per step to "
				     "be a multiple of PP %d (Megatron-core: "
				     "number of microbatches is not divisible "
				     "by pipeline-model-parallel-size when "
				     "using interleaved schedule); use a global "
				     "batch of a multiple of %lld",
				     s->micro_batches, s->pp,
				     (long long)s->lanes * s->micro * s->pp);
	if (s->vpp > 1 && s->micro_batches % s->pp)
		rt_error_once(RT_EPLAN, "GT633 (forced): %lld micro-batches "
			      "per step under the interleaved schedule of PP "
			      "%d: the stages' exchanges do not pair; the "
			      "run stops where they part", s->micro_batches,
			      s->pp);
	n = pps_stage_layers(L, s->pp, s->vpp, s->pp > 1 ? rt->pp_first : 0,
			     s->pp > 1 ? rt->pp_last : 0, s->p);
	s->layers = n;
	s->chunk_layers = n / s->vpp;
	s->split_first = s->pp > 1 ? rt->pp_first : 0;
	s->split_last = s->pp > 1 ? rt->pp_last : 0;
	for (int v = 0; v < s->vpp; v++)
		s->chunk_first[v] = pps_chunk_first(L, s->pp, s->vpp,
						    s->pp > 1 ? rt->pp_first :
						    0, s->pp > 1 ?
						    rt->pp_last : 0, s->p, v);
	/* 1F1B keeps at most P micro-batches in flight on a stage (W + 1);
	 * the interleaved schedule keeps every one */
	s->slots = s->pp == 1 ? 1 : s->vpp > 1 ? (int)s->micro_batches :
		   (int)(s->micro_batches < s->pp ? s->micro_batches : s->pp);
	return 0;
}

long long rt_pp_layer(const struct rt_shape *s, long long li)
{
	long long cl = s->chunk_layers > 0 ? s->chunk_layers : 1;

	return s->chunk_first[li / cl] + li % cl;
}

long long rt_pp_local(const struct rt_shape *s, long long l)
{
	for (int v = 0; v < s->vpp; v++)
		if (l >= s->chunk_first[v] &&
		    l < s->chunk_first[v] + s->chunk_layers)
			return v * s->chunk_layers + l - s->chunk_first[v];
	return -1;
}

int rt_pp_owner(const struct rt_shape *s, long long l)
{
	for (int q = 0; q < s->pp; q++) {
		long long cl = pps_stage_layers(s->layers_all, s->pp, s->vpp,
						s->split_first, s->split_last,
						q) / s->vpp;

		for (int v = 0; v < s->vpp; v++) {
			long long f = pps_chunk_first(s->layers_all, s->pp,
						      s->vpp, s->split_first,
						      s->split_last, q, v);

			if (l >= f && l < f + cl)
				return q;
		}
	}
	return -1;
}

/* ---- buffers -------------------------------------------------------------- */

void rt_model_use_slot(struct rt_model *m, int slot)
{
	m->la = m->la_all + (long long)slot * m->s.layers;
	rt_head_acts_use(m, &m->head[slot]);
	m->tokens = m->slot_tokens[slot];
	m->targets = m->slot_targets[slot];
}

int rt_pp_alloc_slots(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	size_t n = (size_t)s->tokens * sizeof(int32_t);

	m->head[0] = m->a;
	m->slot_tokens[0] = m->tokens;
	m->slot_targets[0] = m->targets;
	for (int i = 1; i < s->slots; i++) {
		for (long long l = 0; l < s->layers; l++)
			RCHECK(rt_layer_acts_alloc(m, &m->la_all[i * s->layers +
							       l]));
		RCHECK(rt_head_acts_alloc(m, &m->head[i]));
		KCHECK(kern_alloc(m->k, n, (void **)&m->slot_tokens[i]));
		KCHECK(kern_alloc(m->k, n, (void **)&m->slot_targets[i]));
	}
	return 0;
}

void rt_pp_release_slots(struct rt_model *m)
{
	for (int i = 1; m->head && i < m->s.slots; i++) {
		rt_head_acts_free(m, &m->head[i]);
		if (m->slot_tokens[i])
			kern_free(m->k, m->slot_tokens[i]);
		if (m->slot_targets[i])
			kern_free(m->k, m->slot_targets[i]);
	}
}

int rt_pp_alloc(struct rt_model *m)
{
	const struct rt_shape *s = &m->s;
	long long n = s->local * s->h, k = (long long)s->slots * s->vpp;

	if (s->pp == 1)
		return 0;
	RCHECK(rt_alloc_f(m, &m->pp_out, n));
	m->pp_grad = calloc((size_t)k, sizeof(float *));
	if (!m->pp_grad)
		return rt_error(RT_ENOMEM, "out of memory");
	for (long long i = 0; i < k; i++)
		RCHECK(rt_alloc_f(m, &m->pp_grad[i], n));
	/* built once: a failed build is reported by rt_pp_micro_batches */
	m->pp_ops = malloc((size_t)pps_max_ops(s->vpp, s->micro_batches) *
			   sizeof(*m->pp_ops));
	if (!m->pp_ops)
		return rt_error(RT_ENOMEM, "out of memory");
	m->pp_nops = pps_build(s->pp, s->p, s->vpp, s->micro_batches,
			       m->pp_ops);
	return 0;
}

void rt_pp_release(struct rt_model *m)
{
	long long k = (long long)m->s.slots * m->s.vpp;

	if (m->pp_out)
		kern_free(m->k, m->pp_out);
	for (long long i = 0; m->pp_grad && i < k; i++)
		if (m->pp_grad[i])
			kern_free(m->k, m->pp_grad[i]);
	free(m->pp_grad);
	free(m->pp_ops);
	m->pp_out = NULL;
	m->pp_grad = NULL;
	m->pp_ops = NULL;
}

/* ---- running the schedule ----------------------------------------------- */

static int slot_of(const struct rt_model *m, long long mb)
{
	return (int)(mb % m->s.slots);
}

/* The micro-batch's tokens (stage 0) and targets (the last stage). */
static int load(struct rt_model *m, long long step, int v, long long mb)
{
	const struct rt_shape *s = &m->s;

	if ((s->pre && v == 0) || (s->post && v == s->vpp - 1))
		return rt_load_micro_batch(m, step, mb);
	return 0;
}

static int fwd(struct rt_model *m, long long step, int v, long long mb,
	       double *loss_sum)
{
	rt_model_use_slot(m, slot_of(m, mb));
	RCHECK(load(m, step, v, mb));
	return rt_forward_chunk(m, v, loss_sum);
}

static int bwd(struct rt_model *m, int v, long long mb, float scale)
{
	const struct rt_shape *s = &m->s;
	int slot = slot_of(m, mb);

	rt_model_use_slot(m, slot);
	if (!(s->post && v == s->vpp - 1))
		KCHECK(kern_copy(m->k, m->a.dx, m->pp_grad[slot * s->vpp + v],
				 (size_t)(s->local * s->h) * sizeof(float)));
	return rt_backward_chunk(m, v, scale);
}

/* One exchange with a neighbour (pps_op XCHG). */
static int xchg(struct rt_model *m, const struct pps_op *o)
{
	const struct rt_shape *s = &m->s;
	int peer = o->peer == PPS_NEXT ? (s->p + 1) % s->pp :
		   (s->p + s->pp - 1) % s->pp;
	long long n = s->local * s->h;
	const float *sbuf = o->peer == PPS_NEXT ? m->pp_out : m->a.dx;
	float *rbuf = NULL;
	char what[96];

	if (o->recv && o->peer == PPS_PREV)
		rbuf = m->la_all[slot_of(m, o->recv_mb) * s->layers +
				 o->recv_chunk * s->chunk_layers].x;
	else if (o->recv)
		rbuf = m->pp_grad[slot_of(m, o->recv_mb) * s->vpp +
				  o->recv_chunk];
	/* activations on channel 0, gradients on 1: a next-facing exchange
	 * sends activations and receives gradients, a previous-facing one
	 * the other way round */
	pps_label(o, s->vpp, what, sizeof(what));
	return coll_sendrecv_ch(m->c, RT_K_PP, what, o->send ? peer : -1,
				sbuf, n, o->peer == PPS_PREV, o->recv ? peer :
				-1, rbuf, n, o->peer == PPS_NEXT);
}

int rt_pp_micro_batches(struct rt_model *m, long long step, float scale,
			double *loss_sum)
{
	const struct rt_shape *s = &m->s;

	if (m->pp_nops < 0)
		return rt_error(RT_EPLAN, "no pipeline schedule for PP %d, V "
				"%d, %lld micro-batches", s->pp, s->vpp,
				s->micro_batches);
	for (long long i = 0; i < m->pp_nops; i++) {
		const struct pps_op *o = &m->pp_ops[i];

		if (o->kind == PPS_FWD)
			RCHECK(fwd(m, step, o->chunk, o->mb, loss_sum));
		else if (o->kind == PPS_BWD)
			RCHECK(bwd(m, o->chunk, o->mb, scale));
		else
			RCHECK(xchg(m, o));
	}
	return 0;
}

int rt_pp_forward_only(struct rt_model *m, long long step, long long mb)
{
	const struct rt_shape *s = &m->s;
	double unused = 0;

	for (int v = 0; v < s->vpp; v++) {
		struct pps_op o = { .kind = PPS_XCHG };

		if (!(s->pre && v == 0)) {
			o.peer = PPS_PREV;
			o.recv = 1;
			o.recv_chunk = v;
			o.recv_mb = mb;
			RCHECK(xchg(m, &o));
		}
		RCHECK(fwd(m, step, v, mb, &unused));
		if (!(s->post && v == s->vpp - 1)) {
			o = (struct pps_op){ .kind = PPS_XCHG, .peer = PPS_NEXT,
					     .send = 1, .send_chunk = v,
					     .send_mb = mb };
			RCHECK(xchg(m, &o));
		}
	}
	return 0;
}
