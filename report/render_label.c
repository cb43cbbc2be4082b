/*
 * render_label: the text of every label in the picture, as Graphviz
 * HTML-like labels (the tags inside <...>, without the outer brackets):
 * GPU boxes, node summaries, the title and the legend. No Graphviz calls
 * here; render.c puts the strings on the graph.
 */
#include "render_int.h"

#include <math.h>
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
	/* one font per line: a viewer whose font is wider than Graphviz's
	 * measure would run a bold word into the plain one after it */
	if (rk->state == RS_STUCK)
		strbuf_addf(b, "<BR/><B>stuck at op #%lld:</B><BR/><B>%s %s"
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
			  "drawn", x->n_hi - x->n_lo + 1 - drawn,
			  (x->n_lo + drawn) * x->gpn, x->r_hi);
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

/* ---- text widths ------------------------------------------------------- */

/* Helvetica's advance widths (its AFM, in 1/1000 em) by character class:
 * the legend sizes its cells with them, so that its box holds its text
 * whatever font the viewer draws it in (WIDTH_MARGIN: DejaVu Sans and
 * Liberation Sans, the usual stand-ins, are up to ~15% wider). */
#define WIDTH_MARGIN 1.2
#define BOLD_FACTOR 1.08

static int char_width(unsigned char c)
{
	if (c >= 0x80)
		return 1000;               /* a code point: counted once below */
	if (strchr("ijl'|", c))
		return 222;
	if (strchr(" .,:;!ftI/[]()-r", c))
		return 333;
	if (strchr("mw", c))
		return 833;
	if (strchr("MW", c))
		return 944;
	if (c >= 'A' && c <= 'Z')
		return 722;
	return 556;                        /* lower case, digits, the rest */
}

double render_text_width(const char *text, double pt, int bold)
{
	double w = 0;

	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if ((*p & 0xC0) != 0x80)   /* not a continuation byte */
			w += char_width(*p);
	return w / 1000.0 * pt * (bold ? BOLD_FACTOR : 1.0) * WIDTH_MARGIN;
}

/* ---- the legend ------------------------------------------------------- */

#define LEGEND_PT 10.0   /* the node font size (render.c) */
#define LEGEND_PAD 2     /* CELLPADDING */

/* A left-aligned text cell at least as wide as each of its lines
 * (`lines`: plain text, '\n' between lines) by render_text_width;
 * `html` is what it shows. */
static void text_cell(struct strbuf *b, int colspan, const char *lines,
		      int bold, const char *html)
{
	double w = 0;
	char line[256];

	for (const char *p = lines, *q; *p; p = *q ? q + 1 : q) {
		size_t n;
		double lw;

		q = p + strcspn(p, "\n");
		n = (size_t)(q - p) < sizeof(line) ? (size_t)(q - p) :
		    sizeof(line) - 1;
		memcpy(line, p, n);
		line[n] = '\0';
		lw = render_text_width(line, LEGEND_PT, bold);
		if (lw > w)
			w = lw;
	}
	strbuf_addf(b, "<TD ALIGN=\"LEFT\" WIDTH=\"%d\"", (int)ceil(w) + 2 *
			  LEGEND_PAD + 1);
	if (colspan > 1)
		strbuf_addf(b, " COLSPAN=\"%d\"", colspan);
	strbuf_addf(b, ">%s</TD>", html);
}

/* One legend entry: a swatch and its name, two cells. */
static void swatch(const struct render_ctx *x, long long v, struct strbuf *b)
{
	char fill[8];
	int stuck = x->color == RENDER_BY_CALL && v == RS_STUCK;
	int never = x->color == RENDER_BY_CALL && v == RS_NEVER;
	struct strbuf name = STRBUF_INIT;

	strbuf_addf(b, "<TD BORDER=\"%d\" COLOR=\"%s\" BGCOLOR=\"%s\" "
			  "WIDTH=\"16\" HEIGHT=\"14\" FIXEDSIZE=\"TRUE\"%s></TD>",
			  stuck ? 3 : 1, stuck ? STUCK_RED : never ? "#888888" :
			  "#444444", render_fill(x, v, fill),
			  never ? " STYLE=\"dashed\"" : "");
	render_value_text(x, v, &name);
	text_cell(b, 1, name.bad ? "" : strbuf_str(&name), 0,
		  name.bad ? "" : strbuf_str(&name));
	if (name.bad)
		b->bad = name.bad;
	strbuf_release(&name);
}

/* A text row over the legend's full width. */
static void wide_row(struct strbuf *b, int cols, const char *lines, int bold,
		     const char *html)
{
	strbuf_addstr(b, "<TR>");
	text_cell(b, cols, lines, bold, html);
	strbuf_addstr(b, "</TR>");
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
	char what[96], line[192], html[224];

	strbuf_addf(b, "<TABLE BORDER=\"1\" COLOR=\"#999999\" STYLE="
			  "\"ROUNDED\" CELLBORDER=\"0\" CELLSPACING=\"3\" "
			  "CELLPADDING=\"2\">");
	if (x->color == RENDER_BY_CALL)
		snprintf(what, sizeof(what), "the call's view%s", x->summary ?
			 " (the worst state on the node)" : "");
	else
		snprintf(what, sizeof(what), "%s%s", render_color_name(x->color),
			 x->summary ? " of each node's first GPU" : "");
	snprintf(line, sizeof(line), "colour: %s", what);
	snprintf(html, sizeof(html), "<B>%s</B>", line);
	wide_row(b, cols, line, 1, html);
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
		snprintf(line, sizeof(line), "and %zu more values: the boxes "
			 "name each", n - shown);
		wide_row(b, cols, line, 0, line);
	}
	if (x->call && x->color != RENDER_BY_CALL)
		wide_row(b, cols, "thick red border: stuck in a collective\n"
			 "dashed border: never called", 0, "<FONT COLOR=\""
			 STUCK_RED "\">thick red border: stuck in a collective"
			 "</FONT><BR ALIGN=\"LEFT\"/>dashed border: never called"
			 "<BR ALIGN=\"LEFT\"/>");
	for (size_t k = 0; !x->summary && k < lay_group_kind_count(); k++) {
		if (!(x->o->groups >> k & 1))
			continue;
		snprintf(line, sizeof(line), "%s groups (%s line): %s",
			 lay_group_kind_at(k)->name, render_group_style(k),
			 x->unlinked >> k & 1 ? "no links to draw (one rank "
			 "each, or none among the nodes drawn)" :
			 "members linked in rank order");
		strbuf_addf(b, "<TR><TD BGCOLOR=\"%s\" WIDTH=\"16\" HEIGHT="
				  "\"3\" CELLPADDING=\"0\" FIXEDSIZE=\"TRUE\">"
				  "</TD>", render_group_color(k));
		text_cell(b, cols - 1, line, 0, line);
		strbuf_addstr(b, "</TR>");
	}
	strbuf_addstr(b, "</TABLE>");
}
