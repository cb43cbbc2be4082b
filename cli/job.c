/*
 * job: one config through the pipeline, and the simulator's results
 * handed to the plan (job.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "job.h"
#include "schema.h"
#include "stack.h"

void job_init(struct job *j, int n_overrides, char *const *overrides)
{
	j->n_overrides = n_overrides;
	j->overrides = overrides;
	j->root = NULL;
	plan_init(&j->plan);
	sim_report_init(&j->sim);
	j->calls = NULL;
	j->mem_stages = NULL;
}

void job_release(struct job *j)
{
	plan_release(&j->plan);
	sim_report_release(&j->sim);
	free(j->calls);
	free(j->mem_stages);
	cfg_free(j->root);
	j->root = NULL;
}

/* The train call's memory estimate, as plain numbers for the plan. */
static int job_fill_memory(struct job *j)
{
	const struct cost_memory *m = &j->sim.mem;

	if (!j->sim.ran)
		return 0;
	j->mem.status = cost_mem_status_name(m->status);
	j->mem.skipped = m->status == MEM_SKIPPED ? m->skipped : NULL;
	j->mem.capacity = (long long)m->capacity;
	if (m->n_stages) {
		j->mem_stages = calloc(m->n_stages, sizeof(*j->mem_stages));
		if (!j->mem_stages)
			return -1;
	}
	for (size_t i = 0; i < m->n_stages; i++) {
		const struct cost_mem_stage *s = &m->stages[i];
		struct plan_memory_stage *d = &j->mem_stages[i];

		d->stage = s->stage;
		d->layers = s->layers;
		d->in_flight = s->in_flight;
		d->params = s->params;
		d->weights = (long long)s->item[MEM_WEIGHTS];
		d->gathered_weights = (long long)s->item[MEM_GATHERED];
		d->gradients = (long long)s->item[MEM_GRADS];
		d->optimizer = (long long)s->item[MEM_OPTIMIZER];
		d->activations = (long long)s->item[MEM_ACTIVATIONS];
		d->logits = (long long)s->item[MEM_LOGITS];
		d->total = (long long)s->total;
		d->optimistic = (long long)s->optimistic;
	}
	j->mem.stages = j->mem_stages;
	j->mem.n_stages = m->n_stages;
	j->plan.memory = &j->mem;
	return 0;
}

/* Hands the simulator's results to the plan, for its JSON. */
static int job_fill_calls(struct job *j)
{
	const struct sim_report *r = &j->sim;

	if (job_fill_memory(j))
		return -1;
	if (!r->n_res)
		return 0;
	j->calls = calloc(r->n_res, sizeof(*j->calls));
	if (!j->calls)
		return -1;
	for (size_t i = 0; i < r->n_res; i++) {
		const struct sim_call_result *x = &r->res[i];
		struct plan_call *c = &j->calls[i];

		c->name = x->call->name;
		c->dispatch = calls_dispatch_name(x->call->dispatch);
		c->program = calls_program_name(x->call->program);
		c->status = sim_status_name(x->status);
		c->invoked = x->invoked;
		c->with_data = x->with_data;
		c->returned = x->returned;
		c->shards = x->shards;
		c->collectives = x->n_ops;
		c->has_called_when = x->called_when_ok;
		c->called_when = x->called_when;
		c->first_seq = x->first_diag;
		c->n_seq = x->n_diags;
		c->has_estimate = r->est && r->est[i].valid;
		c->estimate_ms = c->has_estimate ? r->est[i].total_us / 1e3 : 0;
	}
	j->plan.calls = j->calls;
	j->plan.n_calls = r->n_res;
	j->plan.has_checkpoint = r->ckpt.valid;
	j->plan.ckpt_keys = r->ckpt.keys;
	j->plan.ckpt_shards = r->ckpt.shards;
	j->plan.ckpt_writers = r->ckpt.writers;
	j->plan.ckpt_max_rank_bytes = r->ckpt.max_rank_bytes;
	j->plan.ckpt_opt_format = r->ckpt.opt_format;
	j->plan.ckpt_opt_assumed = !r->ckpt.opt_format_set;
	j->plan.ckpt_opt_keys = r->ckpt.opt_keys;
	j->plan.ckpt_opt_shards = r->ckpt.opt_shards;
	j->plan.ckpt_opt_max_rank_bytes = r->ckpt.max_rank_opt_bytes;
	j->plan.stack_preset = r->stack.preset;
	j->plan.stack_refit_gather = stack_gather_name(r->stack.refit_gather);
	return 0;
}

int job_run(struct job *j, const char *path, enum job_stage upto,
	    const char *only, struct src_set *srcs, struct diag_list *diags)
{
	size_t before = diags->n;

	if (cfg_load(path, srcs, diags, &j->root)) {
		for (size_t i = before; i < diags->n; i++)
			if (diags->v[i].rule &&
			    strcmp(diags->v[i].rule->code, "GT104") == 0 &&
			    diags->v[i].loc.src < 0)
				return 2;
		return 1;
	}
	if (j->n_overrides &&
	    cfg_override(j->root, j->n_overrides, j->overrides, srcs, diags))
		return 1;
	if (cfg_resolve(j->root, srcs, diags))
		return 1;
	if (schema_check_config(j->root, diags) < 0)
		return 1;
	if (upto == JOB_UPTO_CONFIG)
		return 0;
	if (plan_build(&j->plan, j->root, path, diags))
		return 1;
	if (upto == JOB_UPTO_PLAN)
		return 0;
	/* Seq numbers are positions in the list until it is sorted. */
	switch (sim_run(&j->plan, j->root, only, &j->sim, diags)) {
	case 0:
		break;
	case -2:
		fprintf(stderr, "gtplan: no call '%s' in the call table\n"
			"hint: `gtplan sim CONFIG --list-calls` lists them\n",
			only);
		return 2;
	default:
		fprintf(stderr, "gtplan: out of memory while simulating\n");
		return 2;
	}
	return job_fill_calls(j) ? 2 : 0;
}
