/*
 * simulate: every call of the table on one plan (see simulate.h).
 */
#include "simulate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "cfg_keys.h"
#include "match.h"
#include "model.h"
#include "program.h"
#include "program_rt.h"
#include "stack.h"

const char *sim_status_name(enum sim_status s)
{
	switch (s) {
	case SIM_OK: return "ok";
	case SIM_HANG: return "hang";
	case SIM_MISMATCH: return "mismatch";
	case SIM_ERROR: return "error";
	}
	return "error";
}

void sim_report_init(struct sim_report *r)
{
	memset(r, 0, sizeof(*r));
}

void sim_report_release(struct sim_report *r)
{
	free(r->calls);
	free(r->res);
	free(r->est);
	cost_memory_release(&r->mem);
	memset(r, 0, sizeof(*r));
}

/* The program options from the plan and its settings (settings.h). */
static void read_prog_opts(const struct plan *p, struct prog_opts *o)
{
	char why[256];

	prog_opts_init(o);
	/* no model named: the runtime's model is the model, where gtplan-run
	 * can run the layout (else the generic default shape stands in) */
	o->runtime_model = !prog_rt_model_key(&p->set) &&
			   prog_rt_applies(p, why, sizeof(why));
	o->sequence_parallel = p->set.sequence_parallel;
	if (p->set.seq_length)
		o->seq_length = p->set.seq_length;
	if (p->set.logprob_batch)
		o->logprob_micro_batch = p->set.logprob_batch;
	prog_opts_read_framework(o, &p->set);
}

/* Two calls the driver dispatches the same way and whose workers run the
 * same program get the same data and the same collectives: everything but
 * which results are kept (output_is_replicated) is equal. */
static int same_play(const struct call_def *a, const struct call_def *b)
{
	if (a->dispatch != b->dispatch || a->n_sharded != b->n_sharded ||
	    a->replicated != b->replicated || a->rank0_only != b->rank0_only ||
	    a->dummy != b->dummy || a->program != b->program ||
	    a->moves_data != b->moves_data ||
	    a->uses_train_batch != b->uses_train_batch)
		return 0;
	for (int i = 0; i < a->n_sharded; i++)
		if (a->sharded[i] != b->sharded[i])
			return 0;
	return 1;
}

/* A call that plays like an earlier one takes its result (and shares its
 * findings) instead of reporting them again; only the kept results are
 * counted anew. The earlier call's first finding says so. */
static void reuse(const struct sim_report *r, const struct sim_call_result *e,
		  const struct call_def *c, struct sim_call_result *res,
		  struct diag_list *diags)
{
	*res = *e;
	res->call = c;
	res->returned = disp_returned_count(&r->dl, c);
	if (e->n_diags)
		diag_note(&diags->v[e->first_diag], DIAG_NOLOC,
			  "%s is dispatched and runs the same way: the same "
			  "applies to it", c->name);
}

static int run_one(const struct plan *p, const struct prog_opts *o,
		   struct sim_report *r, const struct call_def *c,
		   struct sim_call_result *res, struct diag_list *diags)
{
	size_t before = diags->n;
	int placement = 0;

	memset(res, 0, sizeof(*res));
	/* The data goes where Megatron expects it, or nothing else matters. */
	if (c->dispatch == CALL_SHARDED && c->moves_data) {
		placement = disp_check_placement(p, &r->dl, c,
			c->uses_train_batch ? p->global_batch : 0,
			c->uses_train_batch ? p->micro_batch : 0, diags);
		if (placement < 0)
			return -1;
	}
	size_t at = diags->n;
	if (match_call(p, &r->model, &r->dl, c, o, res, diags) &&
	    res->status == SIM_ERROR && diags->n == at) {
		long long mb = prog_microbatches(p, p->micro_batch);
		struct diag *d = diag_add(diags, "GT505", r->where, NULL,
			"%s was not simulated: its program would exceed %ld "
			"operations (%lld micro-batches per lane)", c->name,
			(long)PROG_MAX_OPS, mb);

		if (!d)
			return -1;
		diag_hint(d, "check the batch sizes; a lane runs global batch "
			  "/ (lanes x micro batch) micro-batches");
	}
	/* Findings about the layout point at the layout setting, if any. */
	for (size_t i = at; i < diags->n; i++)
		if (diags->v[i].loc.src < 0)
			diags->v[i].loc = r->where;
	res->call = c;
	res->shards = disp_shard_count(&r->dl, c);
	res->called_when_ok = disp_called_when(&r->dl, c, p,
					       &res->called_when);
	if (placement > 0 && res->status == SIM_OK)
		res->status = SIM_ERROR;
	res->first_diag = before;
	res->n_diags = diags->n - before;
	return 0;
}

/* Whether a built-in call is made at all for this config: the Megatron
 * policy's own generate only with the megatron generation backend, each
 * refit path only with the placement that uses it. Rows a config adds or
 * overrides always run. */
static int call_applies(const struct call_def *c, const struct plan *p)
{
	int has_gen = p->set.has_generation;

	if (c->loc.src >= 0)
		return 1;
	/* The policy's own generate runs on the training model only with the
	 * megatron backend and no dedicated inference model; NeMo-RL pins the
	 * inference model to CP 1, so CP > 1 always gets a dedicated one
	 * (dedicated_inference_megatron_cfg) and this call is not made. */
	if (strcmp(c->name, "generate") == 0)
		return p->set.megatron_generation && p->cp == 1;
	if (strcmp(c->name, "stream_weights_via_ipc") == 0)
		return !has_gen || p->colocated;
	if (strcmp(c->name, "broadcast_weights_for_collective") == 0)
		return !has_gen || !p->colocated;
	return 1;
}

/* ---- estimates and the hardware checks ---------------------------------- */

/* gtplan-run's train step with the configured profile (the built-in
 * default when gtplan.hardware.gpu is unset). */
static int step_of(const struct plan *p, struct sim_report *r)
{
	const char *gpu = p->set.hardware_gpu ? p->set.hardware_gpu :
			  hw_profile_default_name();
	struct hw_profile hw;
	char err[200];

	if (hw_profile_builtin(gpu, &hw, err, sizeof(err))) {
		memset(&r->step, 0, sizeof(r->step));
		snprintf(r->step.why, sizeof(r->step.why), "%s", err);
		return 0;
	}
	return step_estimate(p, &r->cost, &hw, &r->step);
}

/* Times every call that completes (a call that plays like an earlier one
 * takes its estimate), the train call's memory and gtplan-run's step. */
static int estimate(const struct plan *p, const struct prog_opts *o,
		    struct sim_report *r, const size_t *from)
{
	struct cost_settings cs;

	cost_settings_init(&cs);
	cost_settings_read(&cs, p);
	cost_model_init(&r->cost, p, &r->model, o, &cs);
	r->est = calloc(r->n_res + 1, sizeof(*r->est));
	if (!r->est)
		return -1;
	for (size_t i = 0; i < r->n_res; i++) {
		if (from[i] != i) {
			r->est[i] = r->est[from[i]];
			continue;
		}
		if (r->res[i].status == SIM_OK &&
		    cost_call_time(&r->cost, r->res[i].call->program,
				   &r->est[i], NULL, NULL))
			r->est[i].valid = 0; /* out of memory or too long */
	}
	if (step_of(p, r))
		return -1;
	return cost_memory(p, &r->model, o, &cs, &r->mem);
}

/* The layout against the hardware: GT531, then GT530 / GT532. */
static int check_hardware(const struct cfg_node *root, struct sim_report *r,
			  struct diag_list *diags)
{
	const struct cost_call *train = NULL;

	for (size_t i = 0; i < r->n_res && !train; i++)
		if (r->res[i].call->program == PROG_TRAIN && r->est[i].valid)
			train = &r->est[i];
	if (cost_check_spans(&r->cost, root, train, diags))
		return -1;
	return cost_check_memory(&r->mem, &r->cost.s, root, diags);
}

int sim_run(const struct plan *p, const struct cfg_node *root,
	    const char *only, struct sim_report *r, struct diag_list *diags)
{
	struct prog_opts o;
	size_t n_run = 0, *from;
	int rc;

	if (!p->grid_ok)
		return 0;
	drv_layout_init(&r->dl, p);
	r->where = p->set.driver_layout_loc;
	if (calls_table(&p->set.sim.calls, r->dl.five_d, &r->calls,
			&r->n_calls, diags))
		return -1;
	if (only && !calls_find(r->calls, r->n_calls, only))
		return -2;
	/* plan_build reported the model's findings, and stack_check
	 * reports the stack's */
	struct diag_list quiet;

	r->model = p->model;
	if (p->model_rc < 0)
		r->model.known = 0;
	diag_list_init(&quiet, diags->srcs);
	stack_read(&p->set.sim.stack, &r->stack, &quiet);
	diag_list_release(&quiet);
	read_prog_opts(p, &o);
	r->res = calloc(r->n_calls, sizeof(*r->res));
	from = calloc(r->n_calls + 1, sizeof(*from));
	if (!r->res || !from) {
		free(from);
		return -1;
	}
	for (size_t i = 0; i < r->n_calls; i++) {
		const struct call_def *c = &r->calls[i];

		size_t k;

		if (only ? strcmp(c->name, only) != 0 :
			   !call_applies(c, p))
			continue;
		for (k = 0; k < n_run && !same_play(r->res[k].call, c); k++)
			;
		from[n_run] = k < n_run ? from[k] : n_run;
		if (k < n_run)
			reuse(r, &r->res[k], c, &r->res[n_run], diags);
		else if (run_one(p, &o, r, c, &r->res[n_run], diags)) {
			free(from);
			return -1;
		}
		n_run++;
	}
	r->n_res = n_run;
	r->ran = 1;
	rc = estimate(p, &o, r, from);
	free(from);
	if (rc == 0)
		rc = check_hardware(root, r, diags);
	if (rc == 0)
		rc = stack_check(p, &r->model, diags);
	if (rc == 0)
		rc = ckpt_check(p, root, &r->model, &r->stack, &r->ckpt,
				diags);
	return rc;
}

size_t sim_not_ok(const struct sim_report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_res; i++)
		n += r->res[i].status != SIM_OK;
	return n;
}
