/*
 * render_label: the text of every label in the picture, as Graphviz
 * HTML-like labels (the tags inside <...>, without the outer brackets):
 * GPU boxes, node summaries, the title and the legend. No Graphviz calls
 * here; render.c puts the strings on the graph.
 */
#include "render_int.h"

#include <stdlib.h>
#include <string.h>

#include "llsort.h"

#define LEGEND_MAX 32   /* colour values listed in the legend */
#define LEGEND_PER_COLUMN 8 /* legend entries down one column */
#define STUCK_RED "#CC3311"

/* ---- GPU boxes ----------------------------------------------------------- */

void render_label_gpu(const struct render_ctx *x, const struct render_rank *rk,
		      struct strbuf *b)
{
	strbuf_addf(b, "<B>%lld</B><BR/><FONT POINT-SIZE=\"9\">node %lld "
			  "· GPU %lld</FONT><BR/>t%lld c%lld g%lld d%lld p%lld"
			  "<BR/>lane %lld", rk->rank, rk->node, rk->local,
			  rk->c[LAY_TP], rk->c[LAY_CP], rk->c[LAY_GTP],
			  rk->c[LAY_DP], rk->c[LAY_PP], rk->lane);
	if (!x->call)
		return;
	strbuf_addstr(b, "<BR/>");
	if (rk->state == RS_NEVER) {
		strbuf_addstr(b, "<I>never called</I>");
		return;
	}
	if (rk->dr.dummy)
		strbuf_addstr(b, "<I>dummy call</I>");
	else if (rk->dr.shard >= 0)
		strbuf_addf(b, "<B>shard %lld</B>", rk->dr.shard);
	else
		strbuf_addstr(b, "called");
	if (rk->state == RS_STUCK)
		strbuf_addf(b, "<BR/><B>stuck</B> at op %lld:<BR/><B>%s %s"
				  "</B>", rk->mc->op, rk->mc->group,
				  rk->mc->kind);
}

void render_label_tooltip(const struct render_ctx *x,
			  const struct render_rank *rk, struct strbuf *b)
{
	(void)x;
	strbuf_addf(b, "rank %lld: node %lld, local GPU %lld, (t, c, g, "
			  "d, p) = (%lld, %lld, %lld, %lld, %lld), lane %lld",
			  rk->rank, rk->node, rk->local, rk->c[LAY_TP],
			  rk->c[LAY_CP], rk->c[LAY_GTP], rk->c[LAY_DP],
			  rk->c[LAY_PP], rk->lane);
	if (rk->state == RS_STUCK)
		strbuf_addf(b, "; stuck at op #%lld, %s", rk->mc->op,
				  rk->mc->label);
}

/* ---- node summaries ------------------------------------------------------ */

static void range(struct strbuf *b, long long lo, long long hi)
{
	if (lo == hi)
		strbuf_addf(b, "%lld", lo);
	else
		strbuf_addf(b, "%lld-%lld", lo, hi);
}

/* The kinds whose node-crossing groups a summary box counts: the chosen
 * ones, else the dense kinds that shape a lane (tp, cp, gtp, pp, dp). */
static uint64_t summary_kinds(const struct render_ctx *x)
{
	static const char *const dflt[] = { "tp", "cp", "gtp", "pp", "dp" };
	uint64_t m = x->o->groups;

	for (size_t i = 0; !x->o->groups && i < sizeof(dflt) / sizeof(*dflt);
	     i++)
		for (size_t k = 0; k < lay_group_kind_count(); k++)
			if (strcmp(lay_group_kind_at(k)->name, dflt[i]) == 0)
				m |= 1ull << k;
	return m;
}

/* How many groups of kind k have members on ranks [first, last] and
 * elsewhere. tmp holds last - first + 1 entries. */
static size_t leaving(const struct render_ctx *x, size_t k, long long first,
		      long long last, long long *tmp)
{
	const struct lay_group_kind *gk = lay_group_kind_at(k);
	const struct lay_grid *g = gk->expert ? &x->p->expert : &x->p->dense;
	long long size = lay_group_size(g, gk->axes);
	size_t m = 0;

	for (long long r = first; r <= last; r++) {
		long long idx;

		lay_group_of(g, gk->axes, r, &idx, NULL);
		/* members ascend, so the first and the last say it */
		if (lay_group_member(g, gk->axes, idx, 0) < first ||
		    lay_group_member(g, gk->axes, idx, size - 1) > last)
			tmp[m++] = idx;
	}
	return ll_sort_uniq(tmp, m);
}

long long render_label_node(const struct render_ctx *x, long long node,
			    long long *tmp, struct strbuf *b,
			    enum render_state *worst)
{
	long long first = node * x->gpn, last = first + x->gpn - 1;
	long long lo[LAY_NAXES], hi[LAY_NAXES], st[RS_COUNT] = { 0 };
	struct render_rank rk;
	long long value = 0, called;
	size_t n = 0;
	uint64_t kinds = summary_kinds(x);

	if (last >= x->p->world)
		last = x->p->world - 1;
	for (long long r = first; r <= last; r++) {
		render_rank_at(x, r, &rk);
		for (int a = 0; a < LAY_NAXES; a++) {
			if (r == first || rk.c[a] < lo[a])
				lo[a] = rk.c[a];
			if (r == first || rk.c[a] > hi[a])
				hi[a] = rk.c[a];
		}
		if (r == first)
			value = render_value(x, &rk);
		st[rk.state]++;
		tmp[n++] = rk.lane;
	}
	n = ll_sort_uniq(tmp, n);
	strbuf_addf(b, "<B>node %lld</B><BR/>ranks ", node);
	range(b, first, last);
	strbuf_addf(b, "<BR/>lane%s ", n == 1 ? "" : "s");
	range(b, tmp[0], tmp[n - 1]);
	if (n > 1)
		strbuf_addf(b, " (%zu)", n);
	strbuf_addstr(b, "<BR/>t ");
	range(b, lo[LAY_TP], hi[LAY_TP]);
	strbuf_addstr(b, " · c ");
	range(b, lo[LAY_CP], hi[LAY_CP]);
	strbuf_addstr(b, " · g ");
	range(b, lo[LAY_GTP], hi[LAY_GTP]);
	strbuf_addstr(b, "<BR/>d ");
	range(b, lo[LAY_DP], hi[LAY_DP]);
	strbuf_addstr(b, " · p ");
	range(b, lo[LAY_PP], hi[LAY_PP]);
	if (x->seg && x->seg < x->gpn)
		strbuf_addf(b, "<BR/>%lld NVLink segments of %lld",
				  x->gpn / x->seg, x->seg);
	strbuf_addf(b, "<BR/><FONT POINT-SIZE=\"9\">groups leaving the "
			  "node:<BR/>");
	for (size_t k = 0, shown = 0; k < lay_group_kind_count(); k++)
		if (kinds >> k & 1)
			strbuf_addf(b, "%s%s %zu", shown++ ? " · " : "",
					  lay_group_kind_at(k)->name,
					  leaving(x, k, first, last, tmp));
	strbuf_addstr(b, "</FONT>");
	*worst = st[RS_STUCK] ? RS_STUCK : st[RS_NEVER] ? RS_NEVER :
		 st[RS_DUMMY] ? RS_DUMMY : RS_CALLED;
	if (!x->call)
		return value;
	called = st[RS_CALLED] + st[RS_DUMMY] + st[RS_STUCK];
	strbuf_addstr(b, "<BR/>");
	if (called)
		strbuf_addf(b, "called %lld", called);
	if (st[RS_NEVER])
		strbuf_addf(b, "%s<I>never called %lld</I>",
				  called ? " · " : "", st[RS_NEVER]);
	if (st[RS_STUCK])
		strbuf_addf(b, "<BR/><B>stuck %lld</B>", st[RS_STUCK]);
	return x->color == RENDER_BY_CALL ? *worst : value;
}

void render_label_more(const struct render_ctx *x, long long drawn,
		       struct strbuf *b)
{
	strbuf_addf(b, "%lld more nodes<BR/>(ranks %lld-%lld)<BR/>not "
			  "drawn", x->nodes - drawn, drawn * x->gpn,
			  x->p->world - 1);
}

/* ---- title and legend ----------------------------------------------------- */

void render_label_title(const struct render_ctx *x, struct strbuf *b)
{
	struct strbuf line = STRBUF_INIT;
	size_t n = render_title_count(x);
	size_t stuck = x->call ? x->n_stuck + (x->n_stuck_more > 0) : 0;

	for (size_t i = 0; i < n; i++) {
		const char *open = "", *close = "";

		strbuf_reset(&line);
		render_title_line(x, i, &line);
		if (i == 0) {
			open = "<FONT POINT-SIZE=\"15\"><B>";
			close = "</B></FONT>";
		} else if (x->call && i >= n - stuck) {
			open = "<FONT COLOR=\"" STUCK_RED "\">";
			close = "</FONT>";
		} else if (x->call && i == n - stuck - 1) {
			open = "<B>";
			close = "</B>";
		}
		strbuf_addf(b, "%s", open);
		render_add_html(b, line.bad ? "" : strbuf_str(&line));
		strbuf_addf(b, "%s<BR ALIGN=\"LEFT\"/>", close);
	}
	if (line.bad)
		b->bad = line.bad;
	strbuf_release(&line);
}

/* One legend entry: a swatch and its name, two cells. */
static void swatch(const struct render_ctx *x, long long v, struct strbuf *b)
{
	int pattern;
	const char *fill = render_fill(x, v, &pattern);
	int stuck = x->color == RENDER_BY_CALL && v == RS_STUCK;
	int never = x->color == RENDER_BY_CALL && v == RS_NEVER;

	strbuf_addf(b, "<TD BORDER=\"%d\" COLOR=\"%s\" BGCOLOR=\"%s%s\" "
			  "WIDTH=\"16\" HEIGHT=\"14\" FIXEDSIZE=\"TRUE\"%s%s></TD>"
			  "<TD ALIGN=\"LEFT\">",
			  pattern & 2 || stuck ? 3 : 1, stuck ? STUCK_RED :
			  never ? "#888888" : "#444444", fill,
			  pattern & 1 ? ":white" : "",
			  pattern & 1 ? " GRADIENTANGLE=\"270\"" : "",
			  never ? " STYLE=\"dashed\"" : "");
	render_value_text(x, v, b);
	strbuf_addstr(b, "</TD>");
}

/* A text row over the legend's full width. */
static void wide_row(struct strbuf *b, int cols, const char *fmt, const char *s)
{
	strbuf_addf(b, "<TR><TD COLSPAN=\"%d\" ALIGN=\"LEFT\">", cols);
	strbuf_addf(b, fmt, s);
	strbuf_addstr(b, "</TD></TR>");
}

/* The legend is one table of swatch and name cells, LEGEND_PER_COLUMN
 * entries down each pair of columns: every row has the same cells, so no
 * column is stretched by a wide one. */
void render_label_legend(const struct render_ctx *x, long long *v, size_t nv,
			 struct strbuf *b)
{
	size_t n = ll_sort_uniq(v, nv), shown = n > LEGEND_MAX ? LEGEND_MAX : n;
	size_t pairs = (shown + LEGEND_PER_COLUMN - 1) / LEGEND_PER_COLUMN;
	size_t rows = pairs ? (shown + pairs - 1) / pairs : 0;
	int cols = 2 * (int)(pairs ? pairs : 1);
	char what[96];

	strbuf_addf(b, "<TABLE BORDER=\"1\" COLOR=\"#999999\" STYLE="
			  "\"ROUNDED\" CELLBORDER=\"0\" CELLSPACING=\"3\" "
			  "CELLPADDING=\"2\">");
	if (x->color == RENDER_BY_CALL)
		snprintf(what, sizeof(what), "the call's view%s", x->summary ?
			 " (the worst state on the node)" : "");
	else
		snprintf(what, sizeof(what), "%s%s", render_color_name(x->color),
			 x->summary ? " of each node's first GPU" : "");
	wide_row(b, cols, "<B>colour: %s</B>", what);
	for (size_t r = 0; r < rows; r++) {
		strbuf_addstr(b, "<TR>");
		for (size_t c = 0; c < pairs; c++) {
			if (c * rows + r < shown)
				swatch(x, v[c * rows + r], b);
			else
				strbuf_addstr(b, "<TD></TD><TD></TD>");
		}
		strbuf_addstr(b, "</TR>");
	}
	if (shown < n) {
		snprintf(what, sizeof(what), "%zu", n - shown);
		wide_row(b, cols, "and %s more values: the boxes name each",
			 what);
	}
	if (x->call && x->color != RENDER_BY_CALL)
		wide_row(b, cols, "%s", "<FONT COLOR=\"" STUCK_RED "\">thick red "
			 "border: stuck in a collective</FONT><BR ALIGN=\"LEFT\""
			 "/>dashed border: never called<BR ALIGN=\"LEFT\"/>");
	for (size_t k = 0; !x->summary && k < lay_group_kind_count(); k++) {
		if (!(x->o->groups >> k & 1))
			continue;
		strbuf_addf(b, "<TR><TD BGCOLOR=\"%s\" WIDTH=\"16\" HEIGHT="
				  "\"3\" CELLPADDING=\"0\" FIXEDSIZE=\"TRUE\"></TD>"
				  "<TD ALIGN=\"LEFT\" COLSPAN=\"%d\">%s groups (%s "
				  "line): members linked in rank order</TD></TR>",
				  render_group_color(k), cols - 1,
				  lay_group_kind_at(k)->name,
				  render_group_style(k));
	}
	strbuf_addstr(b, "</TABLE>");
}
