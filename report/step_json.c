/*
 * step_json: the plan JSON's "runtime_estimate" (report.h): gtplan-run's
 * train step as the simulator estimates it (sim/step_est.h), per kernel
 * class, for gtplan-run --log to write next to what it measures.
 */
#include "report.h"

#include "jsonw.h"

/* The classes in key order. */
static const enum step_class sorted[STEP_CLASSES] = {
	STEP_ATTN_BWD, STEP_ATTN_FWD, STEP_COMM, STEP_COPY, STEP_ELEMENTWISE,
	STEP_GEMM, STEP_HOST_GAPS, STEP_OPTIMIZER,
};

static void write_classes(struct jw *w, const struct step_estimate *e)
{
	jw_key(w, "classes");
	jw_obj_begin(w, 0);
	for (int i = 0; i < STEP_CLASSES; i++) {
		enum step_class c = sorted[i];

		jw_key(w, step_class_name(c));
		jw_obj_begin(w, 1);
		jw_key(w, "calls");
		jw_int(w, e->w.calls[c]);
		jw_key(w, "time_s");
		jw_real_g(w, e->w.us[c] / 1e6, 9);
		jw_key(w, "work");
		jw_real_g(w, e->w.work[c], 12);
		jw_obj_end(w);
	}
	jw_obj_end(w);
}

void step_write_json(struct jw *w, const struct sim_report *r)
{
	const struct step_estimate *e = r ? &r->step : NULL;

	jw_key(w, "runtime_estimate");
	if (!r || !r->ran) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w, 0);
	if (!e->valid) {
		jw_key(w, "step_s");
		jw_null(w);
		jw_key(w, "why");
		jw_str(w, e->why);
		jw_obj_end(w);
		return;
	}
	write_classes(w, e);
	jw_key(w, "gpu");
	jw_str(w, e->hw.name);
	jw_key(w, "hidden_communication_s");
	jw_real_g(w, e->comm_hidden_us / 1e6, 9);
	jw_key(w, "measured");
	jw_str(w, e->hw.measured);
	jw_key(w, "stage");
	if (e->stage >= 0)
		jw_int(w, e->stage);
	else
		jw_null(w);
	jw_key(w, "step_s");
	jw_real_g(w, e->total_us / 1e6, 9);
	jw_key(w, "why");
	jw_null(w);
	jw_obj_end(w);
}
