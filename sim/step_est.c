/*
 * step_est: a gtplan-run train step, per kernel class (step_est.h): the
 * kernels from step_ops.c's table, the collectives from the runtime's own
 * train program (program_rt.h) at the cost model's speed, the stages of a
 * pipeline, host gaps.
 */
#include "step_est.h"

#include <stdio.h>
#include <string.h>

const char *step_class_name(enum step_class c)
{
	static const char *const names[STEP_CLASSES] = {
		"gemm", "attention_fwd", "attention_bwd", "elementwise",
		"copy", "optimizer", "communication", "host_gaps",
	};

	return c < STEP_CLASSES ? names[c] : "?";
}

/* The GTP weight all-gathers are the walk's (step_ops.c: with their
 * prefetch overlap); every other collective of the program is exposed. */
static int walk_owns(const struct prog_op *op, unsigned k_gtp)
{
	return op->kind == OP_ALL_GATHER && op->group == k_gtp &&
	       op->label == PRT_L_WEIGHT;
}

/* The collectives of stage st's train program into w (per step).
 * Returns 0, or -1 when the program cannot be built (out of memory or
 * too long). */
static int program_comm(const struct plan *p, struct cost_model *cm,
			long long st, struct step_work *w)
{
	unsigned k_gtp = prog_kind("gtp"), k_pp = prog_kind("pp");
	struct prog pg;

	memset(&pg, 0, sizeof(pg));
	if (prog_rt_build_stage(&pg, p, PROG_TRAIN, "train", st))
		return -1;
	for (size_t i = 0; i < pg.n; i++) {
		const struct prog_op *op = &pg.ops[i];
		int p2p = op->kind == OP_P2P || op->kind == OP_SEND_RECV;
		unsigned g = p2p ? k_pp : op->group;

		if (walk_owns(op, k_gtp))
			continue;
		w->us[STEP_COMM] += cost_coll_us(&cm->s, op->kind,
			p2p ? 2 : cost_group_size(p, g), op->amount,
			cost_group_spans(cm, g, NULL));
		w->work[STEP_COMM] += (double)op->amount;
		w->calls[STEP_COMM]++;
	}
	prog_release(&pg);
	return 0;
}

/* Stage st's step: `slots` micro-batch times (the micro-batches and the
 * pipeline's bubble) plus the step's start and end and the program's
 * collectives; host gaps where issuing the kernels takes longer than
 * running them. */
static int stage_step(const struct plan *p, struct cost_model *cm,
		      const struct hw_profile *hw, long long st,
		      struct step_estimate *e)
{
	struct prog_rt_shape s;
	struct step_walk w;
	double slots, device = 0, host;
	long long kernels = 0;
	int vpp;

	prog_rt_shape_stage(p, st, &s);
	memset(&w, 0, sizeof(w));
	w.s = &s;
	w.hw = hw;
	w.cm = cm;
	w.prefetch = p->runtime.prefetch;
	step_ops_walk(&w);
	if (program_comm(p, cm, st, &w.once))
		return -1;
	vpp = s.vpp > 0 ? s.vpp : 1;
	slots = (double)s.micro_batches +
		(double)(s.pp > 1 ? s.pp - 1 : 0) / vpp;
	memset(&e->w, 0, sizeof(e->w));
	for (int c = 0; c < STEP_HOST_GAPS; c++) {
		e->w.us[c] = slots * w.mb.us[c] + w.once.us[c];
		e->w.work[c] = (double)s.micro_batches * w.mb.work[c] +
			       w.once.work[c];
		e->w.calls[c] = s.micro_batches * w.mb.calls[c] +
				w.once.calls[c];
		if (c != STEP_COMM) {
			device += e->w.us[c];
			kernels += e->w.calls[c];
		}
	}
	host = (double)kernels * hw->launch_us;
	e->w.us[STEP_HOST_GAPS] = host > device ? host - device : 0;
	e->w.calls[STEP_HOST_GAPS] = kernels;
	e->kernels = kernels;
	e->comm_hidden_us = (double)s.micro_batches * w.gtp_hidden_us;
	e->total_us = 0;
	for (int c = 0; c < STEP_CLASSES; c++)
		e->total_us += e->w.us[c];
	return 0;
}

/* Why the runtime's step has no estimate here; 0 when it has one. */
static int refused(const struct plan *p, struct step_estimate *out)
{
	char why[200];

	if (!p->grid_ok) {
		snprintf(out->why, sizeof(out->why), "there is no rank grid");
		return 1;
	}
	if (!prog_rt_applies(p, why, sizeof(why))) {
		snprintf(out->why, sizeof(out->why), "gtplan-run refuses the "
			 "layout: %s", why);
		return 1;
	}
	if (!p->runtime.dtype || strcmp(p->runtime.dtype, "bf16")) {
		snprintf(out->why, sizeof(out->why), "gtplan.runtime.dtype is "
			 "fp32; the hardware profile measures the bf16 path "
			 "(tensor-core GEMMs, flash attention)");
		return 1;
	}
	return 0;
}

int step_estimate(const struct plan *p, struct cost_model *cm,
		  const struct hw_profile *hw, struct step_estimate *out)
{
	long long pp = p->pp > 0 ? p->pp : 1;
	struct step_estimate e;

	memset(out, 0, sizeof(*out));
	out->hw = *hw;
	out->stage = -1;
	if (refused(p, out))
		return 0;
	for (long long st = 0; st < pp; st++) {
		memset(&e, 0, sizeof(e));
		if (stage_step(p, cm, hw, st, &e)) {
			snprintf(out->why, sizeof(out->why), "the train program "
				 "of stage %lld could not be built (too many "
				 "collectives, or out of memory)", st);
			return 0;
		}
		if (st == 0 || e.total_us > out->total_us) {
			out->w = e.w;
			out->total_us = e.total_us;
			out->comm_hidden_us = e.comm_hidden_us;
			out->kernels = e.kernels;
			out->stage = pp > 1 ? st : -1;
		}
	}
	out->valid = 1;
	return 0;
}
