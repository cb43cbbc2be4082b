/*
 * calls_text: `gtplan sim --list-calls` (report.h): the effective call
 * table (sim/calls.h) as aligned text, one row per call.
 */
#include <stdio.h>
#include <string.h>

#include "calls.h"
#include "dispatch.h"
#include "report.h"

/* Short axis names of a mask, in layout order: "pp,cp,tp", or "-". */
static const char *mask_text(unsigned mask, char *buf, size_t len)
{
	static const enum drv_axis order[AX_N] = { AX_PP, AX_DP, AX_GTP,
						   AX_CP, AX_TP };
	size_t used = 0;

	snprintf(buf, len, "-");
	for (int k = 0; k < AX_N && used < len; k++)
		if (mask & AX_BIT(order[k]))
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? "," : "",
						 drv_axis_short(order[k]));
	return buf;
}

/* Room for a name, " *", and the widest axis lists. */
#define CELL (CALL_NAME_MAX + 16)

/* The six columns of one row. */
static void row_cells(const struct call_def *c, char cell[6][CELL])
{
	size_t used = 0;

	snprintf(cell[0], CELL, "%s%s", c->name, c->loc.src >= 0 ? " *" : "");
	snprintf(cell[1], CELL, "%s", calls_dispatch_name(c->dispatch));
	if (c->dispatch == CALL_SHARDED) {
		snprintf(cell[2], CELL, "-");
		for (int i = 0; i < c->n_sharded && used < CELL; i++)
			used += (size_t)snprintf(cell[2] + used, CELL - used,
						 "%s%s", i ? "," : "",
						 drv_axis_short(c->sharded[i]));
		mask_text(c->replicated, cell[3], CELL);
		mask_text(c->output, cell[4], CELL);
		if (c->dummy) {
			size_t l = strlen(cell[3]);

			snprintf(cell[3] + l, CELL - l, " (dummy calls)");
		}
	} else {
		snprintf(cell[2], CELL, "%s", c->dispatch == CALL_MULTIPLE ?
			 "per worker" : "-");
		if (c->rank0_only) {
			char m[32];

			snprintf(cell[3], CELL, "rank 0 of %s",
				 mask_text(c->rank0_only, m, sizeof(m)));
		} else {
			snprintf(cell[3], CELL, "all");
		}
		snprintf(cell[4], CELL, "all called");
	}
	snprintf(cell[5], CELL, "%s", calls_program_name(c->program));
}

void calls_print(FILE *f, const struct call_def *v, size_t n, int five_d)
{
	static const char *const head[6] = { "call", "dispatch", "sharded",
		"replicated", "output", "program" };
	char cell[6][CELL];
	int w[6], custom = 0;

	for (int k = 0; k < 6; k++)
		w[k] = (int)strlen(head[k]);
	for (size_t i = 0; i < n; i++) {
		row_cells(&v[i], cell);
		custom |= v[i].loc.src >= 0;
		for (int k = 0; k < 6; k++)
			if ((int)strlen(cell[k]) > w[k])
				w[k] = (int)strlen(cell[k]);
	}
	fprintf(f, "driver layout %s: %s\n", five_d ? "5-D" : "4-D",
		five_d ? "pp = pipeline_parallel, dp = data_parallel (D), "
			 "gtp = gtp_weight_remat (G), cp = context_parallel, "
			 "tp = tensor_parallel" :
			 "pp = pipeline_parallel, dp = data_parallel (the "
			 "lanes, D x G), cp = context_parallel, tp = "
			 "tensor_parallel");
	for (int k = 0; k < 6; k++)
		fprintf(f, "%-*s%s", k < 5 ? w[k] : 0, head[k],
			k < 5 ? "  " : "\n");
	for (size_t i = 0; i < n; i++) {
		row_cells(&v[i], cell);
		for (int k = 0; k < 6; k++)
			fprintf(f, "%-*s%s", k < 5 ? w[k] : 0, cell[k],
				k < 5 ? "  " : "\n");
	}
	if (custom)
		fprintf(f, "* defined or overridden in gtplan.calls\n");
}
