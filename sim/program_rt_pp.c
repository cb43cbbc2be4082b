/*
 * program_rt_pp: the pipeline part of gtplan-run's programs (see
 * program_rt.h): a stage's share of the decoder, the refusals rt_pp.c
 * makes, and the record lines of an exchange (runtime/coll_p2p.c's).
 */
#include "program_rt.h"

#include <stdio.h>
#include <string.h>

/* The plan's split as runtime/rt_pp.c reads it (only with PP > 1). */
static void split_of(const struct plan *p, long long *f, long long *l,
		     int *v)
{
	const struct plan_rt_model *m = &p->runtime.model;

	*f = p->pp > 1 ? m->first_stage_layers : 0;
	*l = p->pp > 1 ? m->last_stage_layers : 0;
	*v = m->virtual_stages > 0 && m->virtual_stages <= PPS_MAX_V ?
	     (int)m->virtual_stages : 1;
}

static int split_ok(const struct plan *p)
{
	long long f, l;
	int v, pp = p->pp > 0 ? (int)p->pp : 1;

	split_of(p, &f, &l, &v);
	for (int q = 0; q < pp; q++)
		if (pps_stage_layers(p->runtime.model.layers, pp, v, f, l, q) <
		    0)
			return 0;
	return 1;
}

void prog_rt_pp_shape(const struct plan *p, long long stage,
		      struct prog_rt_shape *s)
{
	long long L = s->d.layers, f, l, n;
	int v, pp = p->pp > 0 ? (int)p->pp : 1, ok = split_ok(p);

	split_of(p, &f, &l, &v);
	if (stage < 0 || stage >= pp)
		stage = 0;
	if (!ok) { /* refused (prog_rt_pp_applies): even, 1 chunk */
		f = l = 0;
		v = 1;
	}
	s->pp = pp;
	s->stage = (int)stage;
	s->vpp = v;
	s->layers_all = L;
	n = pps_stage_layers(L, pp, v, f, l, (int)stage);
	if (n < 0)
		n = (stage + 1) * L / pp - stage * L / pp;
	s->chunk_layers = n / v;
	for (int c = 0; c < v; c++)
		s->chunk_first[c] = n == s->chunk_layers * v && ok ?
				    pps_chunk_first(L, pp, v, f, l,
						    (int)stage, c) :
				    stage * L / pp;
	s->d.layers = n;
	s->d.skip_pre = stage > 0;
	s->d.skip_post = stage < pp - 1;
}

int prog_rt_pp_applies(const struct plan *p, char *why, size_t len)
{
	const struct plan_rt_model *m = &p->runtime.model;
	long long f, l;
	int v;

	split_of(p, &f, &l, &v);
	if (p->pp <= 1 && v > 1) {
		snprintf(why, len, "GT622: virtual pipeline size %d needs PP "
			 "> 1, and PP is 1; remove "
			 "virtual_pipeline_model_parallel_size", v);
		return 0;
	}
	if (p->pp <= 1)
		return 1;
	if (!split_ok(p)) {
		snprintf(why, len, "GT600: %lld layers do not split over PP "
			 "%lld%s (Megatron's split); use a layer count or "
			 "num_layers_in_first/last_pipeline_stage that "
			 "splits", m->layers, p->pp, v > 1 ?
			 " in whole virtual stages" : "");
		return 0;
	}
	/* V > 1 with micro-batches not a multiple of PP (GT633, an error of
	 * the plan) is played as a forced run plays it: the stages'
	 * exchanges do not pair */
	return 1;
}

void prog_rt_pp_decode(const struct prog_op *op, struct pps_op *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = PPS_XCHG;
	o->peer = op->flags & PROG_TO_NEXT ? PPS_NEXT : PPS_PREV;
	o->send = (op->flags & (PROG_SEND_FWD | PROG_SEND_BWD)) != 0;
	o->recv = (op->flags & (PROG_RECV_FWD | PROG_RECV_BWD)) != 0;
	o->send_chunk = op->weight;
	o->send_mb = op->mb;
	o->recv_chunk = (int)op->root;
	o->recv_mb = op->layer;
}

int prog_rt_pp_write_p2p(FILE *f, const struct plan *p,
			 const struct prog_op *op, long long rank,
			 const char *call, long long step, long long *seq)
{
	const struct lay_group_kind *gk = lay_group_kind_at(op->group);
	long long idx = 0, c[LAY_NAXES], pp = p->pp > 0 ? p->pp : 1, peer;
	struct pps_op o;
	char what[96];

	prog_rt_pp_decode(op, &o);
	pps_label(&o, op->redop ? 2 : 1, what, sizeof(what));
	if (gk)
		lay_group_of(&p->dense, gk->axes, rank, &idx, NULL);
	lay_coords(&p->dense, rank, c);
	peer = o.peer == PPS_NEXT ? (c[LAY_PP] + 1) % pp :
	       (c[LAY_PP] + pp - 1) % pp;
	for (int dir = 0; dir < 2; dir++) {
		long long n = op->amount / 4;

		if (!(dir ? o.recv : o.send))
			continue;
		/* coll.c's record() of a point-to-point line */
		fprintf(f, "{\"bytes\":%lld,\"call\":\"%s\",\"coll\":\"%s\","
			"\"count\":%lld,\"dtype\":\"fp32\",\"group\":\"pp\","
			"\"group_index\":%lld,\"op\":null,\"peer\":%lld,"
			"\"rank\":%lld,\"seq\":%lld,\"step\":%lld,\"what\":"
			"\"%s\"}\n", (long long)op->amount, call,
			dir ? "recv" : "send", n, idx, peer, rank, (*seq)++,
			step, what);
	}
	return ferror(f) ? -1 : 0;
}
