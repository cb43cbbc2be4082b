/*
 * sim_text: `gtplan sim`'s table for people (report.h): one line per
 * simulated call, then where the time goes, gtplan-run's train step
 * (sim/step_est.h) and the train call's memory per stage, as the cost
 * model (sim/cost.h) estimated them.
 */
#include <stdio.h>

#include "calls.h"
#include "report.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Where the time of each kind of call goes (the first call of each
 * program kind; the others with the same program play alike). */
static void print_times(FILE *f, const struct cost_model *cm,
			const struct sim_call_result *res,
			const struct cost_call *est, size_t n)
{
	const struct cost_settings *s = &cm->s;
	unsigned seen = 0;
	char a[32], b[32], c[32], d[32], e[32], g[16];

	if (cm->o.runtime_model) {
		fprintf(f, "time: gtplan-run's model: its train step below "
			"(the calls' collectives alone are not a time)\n");
		return;
	}
	if (!cm->known) {
		fprintf(f, "time: no estimate: the model's shape is unknown\n");
		return;
	}
	fprintf(f, "estimated time (%s; compute at %.0f%% of %.0f TFLOP/s; "
		"%.0f GB/s inside an NVLink domain of %lld GPUs, %.1f GB/s "
		"across):\n", s->overlap == COST_OVERLAP_GTP ?
		"GTP gathers overlap the previous layer's compute" :
		"no overlap", s->efficiency * 100, s->peak_tflops,
		s->intra_gbps, s->domain, s->inter_gbps);
	for (size_t i = 0; est && i < n; i++) {
		const struct cost_call *x = &est[i];
		unsigned bit = 1u << res[i].call->program;

		if (!x->valid || x->total_us <= 0 || (seen & bit))
			continue;
		seen |= bit;
		fprintf(f, "  %-30s %10s", res[i].call->name,
			cost_time_text(x->total_us, a, sizeof(a)));
		if (x->stage >= 0)
			fprintf(f, " (stage %lld)", x->stage);
		fprintf(f, ": compute %s, communication %s, waiting %s",
			cost_time_text(x->compute_us, b, sizeof(b)),
			cost_time_text(x->comm_us, c, sizeof(c)),
			cost_time_text(x->wait_us, d, sizeof(d)));
		if (x->hidden_us > 0)
			fprintf(f, ", %s of GTP traffic hidden",
				cost_time_text(x->hidden_us, e, sizeof(e)));
		if (x->top_us > 0)
			fprintf(f, "; most: %s %s x%lld, %s%s",
				cost_group_label(x->top_kind == OP_P2P ?
					    prog_kind("pp") : x->top_group, g,
					    sizeof(g)),
				prog_op_kind_name((enum prog_op_kind)x->top_kind),
				x->top_ops, cost_time_text(x->top_us, e, sizeof(e)),
				x->top_spans ? " (across domains)" : "");
		fprintf(f, "\n");
	}
}

/* gtplan-run's train step (sim/step_est.h), class by class. */
static void print_step(FILE *f, const struct step_estimate *e)
{
	char t[32];

	if (!e->valid) {
		fprintf(f, "gtplan-run's train step: no estimate: %s\n", e->why);
		return;
	}
	fprintf(f, "gtplan-run's train step (estimate; profile %s: %s):"
		" %s", e->hw.name, e->hw.measured,
		cost_time_text(e->total_us, t, sizeof(t)));
	if (e->stage >= 0)
		fprintf(f, " (stage %lld)", e->stage);
	fprintf(f, "\n");
	for (int c = 0; c < STEP_CLASSES; c++) {
		int flops = c <= STEP_ATTN_BWD;

		fprintf(f, "  %-14s %10s %9lld calls", step_class_name(c),
			cost_time_text(e->w.us[c], t, sizeof(t)),
			e->w.calls[c]);
		if (c == STEP_HOST_GAPS)
			fprintf(f, " (kernels issued)");
		else if (e->w.work[c] > 0)
			fprintf(f, " %10.3f %s", e->w.work[c] /
				(flops ? 1e12 : 1e9), flops ? "TFLOP" : "GB");
		if (c == STEP_COMM && e->comm_hidden_us > 0)
			fprintf(f, " (%s of GTP gathers hidden by prefetch)",
				cost_time_text(e->comm_hidden_us, t,
					       sizeof(t)));
		fprintf(f, "\n");
	}
}

static void print_stage(FILE *f, const struct cost_mem_stage *m)
{
	fprintf(f, "  %5lld %6lld %7.1fM", m->stage, m->layers,
		(double)m->params / 1e6);
	for (int i = 0; i < MEM_ITEMS; i++)
		fprintf(f, " %9.2f", m->item[i] / GIB);
	fprintf(f, " %9.2f %10.2f\n", m->total / GIB, m->optimistic / GIB);
}

/* The memory table per stage and the assumptions behind it. */
static void print_memory(FILE *f, const struct cost_model *cm,
			 const struct cost_memory *mem)
{
	const struct cost_settings *s = &cm->s;
	static const char *const rc[] = { "no recompute", "selective "
		"recompute", "full recompute (layer inputs kept)" };

	if (mem->status == MEM_SKIPPED) {
		fprintf(f, "memory: not estimated: %s\n",
			mem->skipped ? mem->skipped : "nothing to estimate");
		return;
	}
	fprintf(f, "memory per GPU while training (GiB; the estimate %s the "
		"%.0f GiB of a GPU%s):\n", mem->status == MEM_FITS ? "fits in" :
		"exceeds", mem->capacity / GIB, mem->approximate ?
		"; the model's sizes are approximate" : "");
	fprintf(f, "  %5s %6s %8s %9s %9s %9s %9s %9s %9s %9s %10s\n", "stage",
		"layers", "params", "weights", "gathered", "grads", "optimizer",
		"activation", "logits", "total", "optimistic");
	for (size_t i = 0; i < mem->n_stages; i++) {
		/* many stages: the first four, the largest, the last */
		if (mem->n_stages > 8 && i >= 4 && i != mem->worst &&
		    i + 1 != mem->n_stages) {
			if (i == 4)
				fprintf(f, "  ...\n");
			continue;
		}
		print_stage(f, &mem->stages[i]);
	}
	if (cm->o.runtime_model) {
		fprintf(f, "  gtplan-run's model: fp32 weights, gradients and "
			"Adam state of the local shards (not distributed), one "
			"gathered weight, one micro-batch's activations\n");
		return;
	}
	fprintf(f, "  bf16 weights, %s main grads, optimizer %d B/param over "
		"%lld rank%s%s; activations: %s, %s, %s attention; 1F1B keeps "
		"PP - stage micro-batches in flight\n",
		s->grad_bytes == 4 ? "fp32" : "bf16", s->optim_bytes,
		s->distributed_optimizer ?
		cost_group_size(cm->p, prog_kind("dp_cp_replicate")) : 1,
		s->distributed_optimizer ? "s (distributed optimizer)" :
		" (not distributed)", s->optim_on_gpu < 1 ? ", partly on the "
		"CPU" : "", rc[s->recompute], cm->o.sequence_parallel ?
		"sequence parallel" : "no sequence parallel",
		s->unfused_attention ? "unfused" : "flash");
}

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
	print_times(f, &r->cost, r->res, r->est, r->n_res);
	print_step(f, &r->step);
	print_memory(f, &r->cost, &r->mem);
}
