/*
 * render_text: the compact terminal grid (`gtplan render --format text`):
 * nodes as rows, GPUs as columns, the chosen coordinate (or, with a call,
 * the shard each rank gets) in each cell, and markers for the call's
 * states. Plain UTF-8, the same bytes for the same input.
 */
#include "render_int.h"

#include <string.h>

#define TEXT_COLS 32     /* GPU columns per line; wider nodes wrap */
#define TEXT_GROUPS 16   /* groups listed per chosen kind */

/* Marker after a cell for the call's state ("" when none). */
static const char *marker(const struct render_ctx *x, enum render_state s)
{
	if (!x->call)
		return "";
	switch (s) {
	case RS_STUCK: return "!";
	case RS_DUMMY: return "d";
	case RS_NEVER: return x->color == RENDER_BY_CALL ? "" : ".";
	default: return "";
	}
}

static void cell(const struct render_ctx *x, long long rank, char *buf,
		 size_t len)
{
	struct render_rank rk;

	render_rank_at(x, rank, &rk);
	if (x->color != RENDER_BY_CALL)
		snprintf(buf, len, "%lld%s", render_value(x, &rk),
			 marker(x, rk.state));
	else if (rk.state == RS_NEVER)
		snprintf(buf, len, ".");
	else if (rk.dr.shard >= 0 && !rk.dr.dummy)
		snprintf(buf, len, "%lld%s", rk.dr.shard, marker(x, rk.state));
	else
		snprintf(buf, len, "+%s", marker(x, rk.state));
}

static const char *cell_name(const struct render_ctx *x)
{
	switch (x->color) {
	case RENDER_BY_CALL: return "the shard each rank gets";
	case RENDER_BY_DP: return "dp (the model copy)";
	case RENDER_BY_PP: return "pp (the pipeline stage)";
	default: return render_color_name(x->color);
	}
}

static void key(const struct render_ctx *x, FILE *f)
{
	fprintf(f, "cell: %s", cell_name(x));
	if (x->call && x->color == RENDER_BY_CALL)
		fprintf(f, "; \"+\" called without a shard, \".\" never called");
	else if (x->call)
		fprintf(f, "; \".\" after it: never called");
	if (x->n_state[RS_DUMMY])
		fprintf(f, "; \"d\": dummy call (no data)");
	if (x->n_state[RS_STUCK])
		fprintf(f, "; \"!\": stuck (below)");
	fprintf(f, "\n");
}

static void groups(const struct render_ctx *x, FILE *f)
{
	for (size_t k = 0; k < lay_group_kind_count(); k++) {
		const struct lay_group_kind *gk = lay_group_kind_at(k);
		const struct lay_grid *g = gk->expert ? &x->p->expert :
					   &x->p->dense;
		long long n, size;

		if (!(x->o->groups >> k & 1))
			continue;
		n = lay_group_count(g, gk->axes);
		size = lay_group_size(g, gk->axes);
		fprintf(f, "%s: %lld groups of %lld ranks:", gk->name, n, size);
		for (long long i = 0; i < n && i < TEXT_GROUPS; i++) {
			fprintf(f, " [");
			for (long long j = 0; j < size; j++) {
				if (j == 8 && size > 10) {
					fprintf(f, " ...");
					j = size - 1;
				}
				fprintf(f, "%s%lld", j ? " " : "",
					lay_group_member(g, gk->axes, i, j));
			}
			fprintf(f, "]");
		}
		if (n > TEXT_GROUPS)
			fprintf(f, " ... %lld more", n - TEXT_GROUPS);
		fprintf(f, "\n");
	}
}

/* The widest cell, so the columns line up. */
static int cell_width(const struct render_ctx *x, long long last)
{
	char buf[48];
	int w = 1;

	for (long long r = x->r_lo; r <= last; r++) {
		cell(x, r, buf, sizeof(buf));
		if ((int)strlen(buf) > w)
			w = (int)strlen(buf);
	}
	snprintf(buf, sizeof(buf), "%lld", x->gpn - 1);
	return (int)strlen(buf) > w ? (int)strlen(buf) : w;
}

static void row(const struct render_ctx *x, FILE *f, long long node, int w,
		int lw)
{
	char buf[48];

	for (long long c0 = 0; c0 < x->gpn; c0 += TEXT_COLS) {
		if (c0 == 0)
			fprintf(f, "node %*lld ", lw, node);
		else
			fprintf(f, "%*s ", lw + 5, "");
		for (long long c = c0; c < c0 + TEXT_COLS && c < x->gpn; c++) {
			long long r = node * x->gpn + c;

			if (r >= x->p->world)
				break;
			if (x->seg && x->seg < x->gpn && c > c0 && c % x->seg == 0)
				fprintf(f, " |");
			cell(x, r, buf, sizeof(buf));
			fprintf(f, " %*s", w, buf);
		}
		fprintf(f, "\n");
	}
}

int render_text(const struct render_ctx *x, FILE *f)
{
	struct strbuf b = STRBUF_INIT;
	long long want = x->n_hi - x->n_lo + 1;
	long long rows = want > RENDER_MAX_NODES ? RENDER_MAX_NODES - 1 : want;
	long long last = (x->n_lo + rows) * x->gpn - 1;
	size_t n = render_title_count(x);
	int w, lw;
	char buf[32];

	for (size_t i = 0; i < n; i++) {
		if (i == 3) { /* the picture's colour key: the cell key here */
			key(x, f);
			continue;
		}
		strbuf_reset(&b);
		render_title_line(x, i, &b);
		fprintf(f, "%s%s\n", x->call && i > 3 && x->n_state[RS_STUCK] &&
			i + x->n_stuck + (x->n_stuck_more > 0) >= n ? "! " : "",
			b.bad ? "" : strbuf_str(&b));
	}
	strbuf_release(&b);
	groups(x, f);
	if (last >= x->p->world)
		last = x->p->world - 1;
	w = cell_width(x, last);
	lw = snprintf(buf, sizeof(buf), "%lld", x->n_hi);
	fprintf(f, "\n%*s", lw + 5, "");
	for (long long c = 0; c < x->gpn && c < TEXT_COLS; c++) {
		if (x->seg && x->seg < x->gpn && c > 0 && c % x->seg == 0)
			fprintf(f, " |");
		fprintf(f, " %*lld", w, c);
	}
	fprintf(f, "  (GPU)\n");
	for (long long node = x->n_lo; node < x->n_lo + rows; node++) {
		if (x->seg > x->gpn && (node % (x->seg / x->gpn) == 0 ||
					node == x->n_lo))
			fprintf(f, "%s-- NVLink segment %lld\n", node > x->n_lo ?
				"\n" : "", node / (x->seg / x->gpn));
		row(x, f, node, w, lw);
	}
	if (rows < want)
		fprintf(f, "... %lld more nodes (ranks %lld-%lld)\n",
			want - rows, (x->n_lo + rows) * x->gpn, x->r_hi);
	return ferror(f) ? -1 : 0;
}
