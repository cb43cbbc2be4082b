/*
 * sim_text: `gtplan sim`'s table for people (report.h): one line per
 * simulated call, then where the time goes (sim/cost_time.c) and the train
 * call's memory per stage (sim/cost_mem.c).
 */
#include <stdio.h>

#include "calls.h"
#include "report.h"

void sim_print_text(FILE *f, const struct plan *p, const struct sim_report *r)
{
	char t[32];

	if (!r->ran) {
		fprintf(f, "%s: no rank grid, nothing to simulate: fix the "
			"errors first\n", p->config_name);
		return;
	}
	if (r->cost.o.runtime_model)
		fprintf(f, "%s: %lld ranks, driver layout %s, model gtplan-run's "
			"(gtplan.runtime: hidden %lld, ffn %lld, %lld layers, "
			"vocab %lld, seq_len %lld; train and forward calls play "
			"its collectives)\n", p->config_name, p->world,
			p->driver_layout, p->runtime.hidden, p->runtime.ffn,
			p->runtime.layers, p->runtime.vocab, p->runtime.seq_len);
	else
		fprintf(f, "%s: %lld ranks, driver layout %s, model %s%s\n",
			p->config_name, p->world, p->driver_layout,
			r->model.name[0] ? r->model.name : "(none)",
			r->model.known ? "" :
			" (shape unknown: default sizes)");
	fprintf(f, "  %-34s %-8s %-8s %9s %9s %7s %7s %11s %10s\n", "call",
		"dispatch", "status", "called", "w/ data", "kept", "shards",
		"collectives", "estimate");
	for (size_t i = 0; i < r->n_res; i++) {
		const struct sim_call_result *x = &r->res[i];

		fprintf(f, "  %-34s %-8s %-8s %9lld %9lld %7lld %7lld %11lld "
			"%10s\n", x->call->name,
			calls_dispatch_name(x->call->dispatch),
			sim_status_name(x->status), x->invoked, x->with_data,
			x->returned, x->shards, x->n_ops,
			r->est && r->est[i].valid ?
			cost_time_text(r->est[i].total_us, t, sizeof(t)) : "-");
	}
	size_t bad = sim_not_ok(r);
	if (bad)
		fprintf(f, "%zu of %zu calls do not complete cleanly; the "
			"findings say why\n", bad, r->n_res);
	else
		fprintf(f, "all %zu calls complete\n", r->n_res);
	cost_print_times(f, &r->cost, r->res, r->est, r->n_res);
	cost_print_memory(f, &r->cost, &r->mem);
}
