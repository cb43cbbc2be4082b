/*
 * ckpt_text: `gtplan ckpt`'s report (report.h): both layouts, each weight
 * kind's pieces and coverage, the optimizer format the change needs, the
 * checkpoint's sizes, and the verdict, from sim/reshard.h's report.
 */
#include <stdio.h>

#include "report.h"
#include "reshard.h"
#include "stack.h"

static const char *layout_name(const struct plan *p)
{
	return p->driver_layout ? p->driver_layout : "4d";
}

static const char *kind_name(enum ckpt_kind k)
{
	switch (k) {
	case CKPT_COLUMN:
		return "column";
	case CKPT_ROW:
		return "row";
	case CKPT_NORM:
		return "norm";
	case CKPT_VOCAB:
		return "vocab";
	default:
		return "object";
	}
}

void reshard_print(FILE *f, const struct plan *ps, const struct plan *pl,
		   const struct reshard_report *r)
{
	fprintf(f, "saved:  TP %lld, CP %lld, G %lld, D %lld, PP %lld, EP "
		"%lld, ETP %lld, EG %lld, %s (%lld ranks)\n", ps->tp, ps->cp,
		ps->gtp, ps->dp_replicate, ps->pp, ps->ep, ps->etp, ps->egtp,
		layout_name(ps), ps->world);
	fprintf(f, "loaded: TP %lld, CP %lld, G %lld, D %lld, PP %lld, EP "
		"%lld, ETP %lld, EG %lld, %s (%lld ranks)\n", pl->tp, pl->cp,
		pl->gtp, pl->dp_replicate, pl->pp, pl->ep, pl->etp, pl->egtp,
		layout_name(pl), pl->world);
	if (r->example)
		fprintf(f, "model shape unknown: example weights\n");
	else if (r->layers && ps->pp != pl->pp)
		fprintf(f, "%lld layers, keyed by global layer: PP %lld -> "
			"%lld moves whole keys between stages\n", r->layers,
			ps->pp, pl->pp);
	for (size_t i = 0; i < r->n; i++) {
		const struct reshard_weight *w = &r->w[i];
		char shape[64];

		if (w->experts)
			snprintf(shape, sizeof(shape), "%lld x [%lld, %lld]",
				 w->experts, w->rows, w->cols);
		else
			snprintf(shape, sizeof(shape), "[%lld, %lld]", w->rows,
				 w->cols);
		fprintf(f, "  %-26s %-6s %s: saved pieces %lld, loaded pieces "
			"%lld, reads per loading rank max %lld (rank %lld): "
			"%s\n", w->name, kind_name(w->kind), shape,
			w->saved_pieces, w->loaded_pieces, w->max_reads,
			w->max_reader, w->covered ? "covered exactly once" :
			"NOT covered");
	}
	if (!r->model_mismatch)
		fprintf(f, "optimizer: saved as %s%s; the change needs %s; "
			"fully_reshardable %s%s\n",
			stack_opt_format_name(r->opt_format),
			r->opt_format ? "" : " (assumed: Megatron's default; "
			"gtplan.stack.optimizer_ckpt_format unset)",
			r->opt_needed == 2 ? "fully_reshardable" :
			r->opt_needed == 1 ? "dp_reshardable or fully_reshardable" :
			"any format (no layout change)",
			r->opt_why[0] ? "cannot be used: " : "can be written and "
			"read by this stack", r->opt_why);
	if (r->saved.valid && r->loaded.valid) {
		fprintf(f, "saved checkpoint: %lld keys + %lld optimizer keys "
			"(%s), %lld writers; one rank writes at most %lld "
			"bytes (weights at most %lld, optimizer at most %lld)\n",
			r->saved.keys, r->saved.opt_keys, r->saved.opt_format,
			r->saved.writers, r->saved.max_rank_bytes,
			r->saved.max_rank_weight_bytes,
			r->saved.max_rank_opt_bytes);
		fprintf(f, "loading: one rank reads at most %lld bytes "
			"(all its weight pieces and its optimizer range)\n",
			r->loaded.max_rank_read_bytes);
		fprintf(f, "objects: rng_state, one per (pp, tp) slot (%lld "
			"saved, %lld loaded); dataloader_state, one per lane "
			"(%lld saved, %lld loaded); their sizes are not "
			"modelled\n", ps->pp * ps->tp, pl->pp * pl->tp,
			ps->lanes, pl->lanes);
	}
	if (r->reshardable && r->opt_assumed)
		fprintf(f, "weights reshardable; optimizer state not "
			"reshardable in Megatron's default format "
			"(dp_reshardable, assumed: gtplan.stack."
			"optimizer_ckpt_format unset)\n");
	else if (r->reshardable)
		fprintf(f, "reshardable: weights and optimizer state (%s)\n",
			stack_opt_format_name(r->opt_format));
	else
		fprintf(f, "%s\n", r->model_mismatch ?
			"not reshardable: different models" : !r->opt_ok ?
			"not reshardable: optimizer state (the weights "
			"reshard)" : "not reshardable: weights");
}
