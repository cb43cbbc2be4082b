/*
 * render: the Graphviz side (see render.h). Builds the graph with
 * libcgraph, writes it as DOT, or lays it out with dot and draws it with
 * libgvc. Every Graphviz type and call lives in this file.
 *
 * Determinism: cgraph's default ID discipline uses the interned name's
 * address as a named object's ID and orders subgraphs by ID, so cluster
 * order (in the DOT and in the layout) would follow the heap. Our own
 * discipline numbers names in creation order, and everything is created in
 * rank order, so the same plan gives the same DOT byte for byte.
 */
#include "render_int.h"

#include <gvc.h>
#include <stdlib.h>
#include <string.h>

#define DETAIL_ROW 16   /* GPU boxes per row at most */
#define SUMMARY_ROW 8   /* node boxes per row */
#define FONT "Helvetica"

/* ---- names as IDs in creation order ------------------------------------- */

struct gvid {
	Agdisc_t disc;      /* first: cgraph hands it back to id_open */
	Agiddisc_t id;
	Agraph_t *g;        /* the root graph, from id_open */
	char **names;       /* ours (strdup), in creation order */
	char **interned;    /* the same names interned in g (agstrdup) */
	size_t n, cap;
	IDTYPE anon;
};

static void *id_open(Agraph_t *g, Agdisc_t *d)
{
	((struct gvid *)d)->g = g;
	return d;
}

/* Named objects get even IDs 2, 4, ... in creation order; anonymous ones
 * odd IDs (cgraph's own convention). */
static long id_map(void *state, int objtype, char *str, IDTYPE *id,
		   int createflag)
{
	struct gvid *v = state;

	(void)objtype;
	if (!str) {
		*id = v->anon += 2;
		return 1;
	}
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->names[i], str) == 0) {
			*id = 2 * (IDTYPE)(i + 1);
			return 1;
		}
	if (!createflag)
		return 0;
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 256;
		char **nv = realloc(v->names, cap * sizeof(*nv));
		char **ni;

		if (!nv)
			return 0;
		v->names = nv;
		ni = realloc(v->interned, cap * sizeof(*ni));
		if (!ni)
			return 0;
		v->interned = ni;
		v->cap = cap;
	}
	v->interned[v->n] = NULL;
	if (!(v->names[v->n] = strdup(str)))
		return 0;
	*id = 2 * (IDTYPE)++v->n;
	return 1;
}

static long id_alloc(void *state, int objtype, IDTYPE id)
{
	(void)state;
	(void)objtype;
	(void)id;
	return 0;
}

static void id_free(void *state, int objtype, IDTYPE id)
{
	(void)state;
	(void)objtype;
	(void)id; /* names live until the graph closes */
}

/* cgraph treats what print returns as one of its interned strings (it
 * reads the header agstrdup puts before the text, e.g. to tell HTML
 * labels), so the name is handed out interned in the root graph; the
 * interned copies go with the graph at agclose. */
static char *id_print(void *state, int objtype, IDTYPE id)
{
	struct gvid *v = state;
	size_t i = (size_t)(id / 2) - 1;

	(void)objtype;
	if (id % 2 || id / 2 == 0 || id / 2 > v->n)
		return NULL;
	if (!v->interned[i] && v->g)
		v->interned[i] = agstrdup(v->g, v->names[i]);
	return v->interned[i];
}

static void id_close(void *state)
{
	(void)state; /* gvid_release() frees the names, after agclose() */
}

static void id_register(void *state, int objtype, void *obj)
{
	(void)state;
	(void)objtype;
	(void)obj;
}

static void gvid_init(struct gvid *v)
{
	memset(v, 0, sizeof(*v));
	v->anon = 1;
	v->id = (Agiddisc_t){ id_open, id_map, id_alloc, id_free, id_print,
			      id_close, id_register };
	v->disc.mem = &AgMemDisc;
	v->disc.id = &v->id;
	v->disc.io = &AgIoDisc;
}

static void gvid_release(struct gvid *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->names[i]);
	free(v->names);
	free(v->interned);
}

/* ---- Graphviz 2.42 takes char *: the casts live here -------------------- */

static void set(void *obj, const char *name, const char *value)
{
	agsafeset(obj, (char *)name, (char *)value, (char *)"");
}

static void set_html(void *obj, const char *name, const char *html)
{
	Agraph_t *g = agraphof(obj);
	char *h = agstrdup_html(g, (char *)html);

	agsafeset(obj, (char *)name, h, (char *)"");
	agstrfree(g, h);
}

static void setf(void *obj, const char *name, const char *fmt, long long v)
{
	char buf[64];

	snprintf(buf, sizeof(buf), fmt, v);
	set(obj, name, buf);
}

static Agraph_t *subg(Agraph_t *parent, const char *fmt, long long a,
		      long long b)
{
	char name[96];

	snprintf(name, sizeof(name), fmt, a, b);
	return agsubg(parent, name, 1);
}

static Agedge_t *edge(Agraph_t *g, Agnode_t *t, Agnode_t *h)
{
	return agedge(g, t, h, NULL, 1);
}

static void defaults(Agraph_t *g)
{
	static const char *const gattr[][2] = {
		{ "fontname", FONT }, { "fontsize", "11" }, { "label", "" },
		{ "labelloc", "t" }, { "labeljust", "l" }, { "newrank", "true" },
		{ "nodesep", "0.12" }, { "ranksep", "0.45" }, { "pad", "0.25" },
		{ "bgcolor", "white" }, { "style", "" }, { "color", "" },
		{ "fillcolor", "" }, { "penwidth", "" }, { "rank", "" },
		{ "margin", "" }, { "tooltip", "" },
	};
	static const char *const nattr[][2] = {
		{ "shape", "box" }, { "style", "rounded,filled" },
		{ "fontname", FONT }, { "fontsize", "10" },
		{ "margin", "0.08,0.04" }, { "color", "#444444" },
		{ "fillcolor", "white" }, { "fontcolor", "black" },
		{ "penwidth", "1" }, { "peripheries", "1" },
		{ "label", "\\N" }, { "tooltip", "" },
	};
	static const char *const eattr[][2] = {
		/* arrowhead and arrowtail too: 2.42 draws heads on flat
		 * edges with ports despite dir=none */
		{ "dir", "none" }, { "arrowhead", "none" },
		{ "arrowtail", "none" }, { "style", "" }, { "color", "black" },
		{ "penwidth", "1" }, { "constraint", "true" },
		{ "weight", "1" }, { "tooltip", "" }, { "tailport", "" },
		{ "headport", "" },
	};

	for (size_t i = 0; i < sizeof(gattr) / sizeof(*gattr); i++)
		agattr(g, AGRAPH, (char *)gattr[i][0], (char *)gattr[i][1]);
	for (size_t i = 0; i < sizeof(nattr) / sizeof(*nattr); i++)
		agattr(g, AGNODE, (char *)nattr[i][0], (char *)nattr[i][1]);
	for (size_t i = 0; i < sizeof(eattr) / sizeof(*eattr); i++)
		agattr(g, AGEDGE, (char *)eattr[i][0], (char *)eattr[i][1]);
}

/* ---- boxes ------------------------------------------------------------ */

static void paint(const struct render_ctx *x, Agnode_t *n, long long v)
{
	char fill[8];

	set(n, "fillcolor", render_fill(x, v, fill));
}

/* Borders by the call's state, whatever the fill says. */
static void outline(Agnode_t *n, enum render_state st)
{
	if (st == RS_STUCK) {
		set(n, "color", "#CC3311");
		set(n, "penwidth", "3");
	} else if (st == RS_NEVER) {
		set(n, "color", "#888888");
		set(n, "style", "rounded,filled,dashed");
		set(n, "fontcolor", "#555555");
	}
}

/* ---- the layout of boxes in clusters and rows -------------------------- */

/* Where the next box goes: clusters are opened as the ids change, rows
 * are rank=same subgraphs chained by invisible edges so that dot keeps
 * rank order left to right, top to bottom. */
struct place {
	Agraph_t *g, *outer, *mid, *inner, *rowg;
	long long outer_id, mid_id, inner_id, rows;
	int row_n, row_max;
	Agnode_t *prev, *head;
};

static void place_row(struct place *pl, Agraph_t *container, Agnode_t *n)
{
	if (!pl->rowg || pl->row_n == pl->row_max) {
		pl->rowg = subg(container, "row%lld", pl->rows++, 0);
		set(pl->rowg, "rank", "same");
		pl->row_n = 0;
		if (pl->head) {
			Agedge_t *e = edge(pl->g, pl->head, n);

			set(e, "style", "invis");
			set(e, "weight", "10");
		}
		pl->head = n;
	} else {
		set(edge(pl->g, pl->prev, n), "style", "invis");
	}
	agsubnode(pl->rowg, n, 1);
	pl->row_n++;
	pl->prev = n;
}

static void cluster_style(Agraph_t *c, const char *color, const char *fill)
{
	set(c, "style", "rounded,filled");
	set(c, "color", color);
	set(c, "fillcolor", fill);
}

static Agraph_t *outer_cluster(const struct render_ctx *x, struct place *pl,
			       long long node)
{
	long long per = x->seg / x->gpn, id, last;
	char lab[96];

	if (x->seg <= x->gpn)
		return pl->g;
	id = node / per;
	if (id != pl->outer_id) {
		pl->outer = subg(pl->g, "cluster_s%lld", id, 0);
		pl->outer_id = id;
		last = id * per + per - 1 < x->nodes ? id * per + per - 1 :
		       x->nodes - 1;
		if (last > id * per)
			snprintf(lab, sizeof(lab), "NVLink segment %lld (nodes "
				 "%lld-%lld)", id, id * per, last);
		else
			snprintf(lab, sizeof(lab), "NVLink segment %lld (node "
				 "%lld)", id, id * per);
		set(pl->outer, "label", lab);
		cluster_style(pl->outer, "#4477AA", "#F5F8FC");
		pl->rowg = NULL;
	}
	return pl->outer;
}

static Agnode_t *detail_box(const struct render_ctx *x, struct place *pl,
			    long long rank, struct strbuf *b)
{
	struct render_rank rk;
	Agraph_t *where;
	Agnode_t *n;
	char name[32];

	render_rank_at(x, rank, &rk);
	where = outer_cluster(x, pl, rk.node);
	if (rk.node != pl->mid_id) {
		pl->mid = subg(where, "cluster_n%lld", rk.node, 0);
		pl->mid_id = rk.node;
		pl->inner_id = -1;
		setf(pl->mid, "label", "node %lld", rk.node);
		cluster_style(pl->mid, "#999999", "#FAFAFA");
		pl->rowg = NULL;
	}
	where = pl->mid;
	/* NVLink domains inside a node get rows of their own: dot 2.42 lays
	 * sibling clusters of one rank out right to left */
	if (x->seg && x->seg < x->gpn) {
		if (rk.local / x->seg != pl->inner_id) {
			pl->inner_id = rk.local / x->seg;
			pl->inner = subg(pl->mid, "cluster_n%lld_s%lld", rk.node,
					 pl->inner_id);
			setf(pl->inner, "label", "NVLink %lld", pl->inner_id);
			cluster_style(pl->inner, "#4477AA", "#F5F8FC");
			pl->rowg = NULL;
		}
		where = pl->inner;
	}
	snprintf(name, sizeof(name), "r%lld", rank);
	n = agnode(where, name, 1);
	place_row(pl, where, n);
	strbuf_reset(b);
	render_label_gpu(x, &rk, b);
	set_html(n, "label", strbuf_str(b));
	strbuf_reset(b);
	render_label_tooltip(x, &rk, b);
	set(n, "tooltip", strbuf_str(b));
	strbuf_reset(b);
	paint(x, n, render_value(x, &rk));
	if (x->call)
		outline(n, rk.state);
	return n;
}

/* The row a GPU box is in: rows never span a node, or an NVLink domain
 * inside one (detail_box). */
static long long row_of(const struct render_ctx *x, long long rank)
{
	long long per = x->seg && x->seg < x->gpn ? x->seg : x->gpn;

	return rank / per * ((per + DETAIL_ROW - 1) / DETAIL_ROW) +
	       rank % per / DETAIL_ROW;
}

/* A link from GPU t to GPU h (t < h): over the top within a row, from
 * the bottom of one to the top of the other across rows. */
static Agedge_t *link(const struct render_ctx *x, Agraph_t *g, long long t,
		      long long h)
{
	char a[32], c[32];
	Agedge_t *e;

	snprintf(a, sizeof(a), "r%lld", t);
	snprintf(c, sizeof(c), "r%lld", h);
	e = edge(g, agnode(g, a, 0), agnode(g, c, 0));
	set(e, "tailport", row_of(x, t) == row_of(x, h) ? "n" : "s");
	set(e, "headport", "n");
	return e;
}

/* Links between the members of each group of the chosen kinds, where
 * both ends are drawn. */
static void group_links(const struct render_ctx *x, Agraph_t *g,
			struct strbuf *b)
{
	for (size_t k = 0; k < lay_group_kind_count(); k++) {
		const struct lay_group_kind *gk = lay_group_kind_at(k);
		const struct lay_grid *grid = gk->expert ? &x->p->expert :
					      &x->p->dense;
		long long n, size;

		if (!(x->o->groups >> k & 1))
			continue;
		n = lay_group_count(grid, gk->axes);
		size = lay_group_size(grid, gk->axes);
		for (long long i = 0; i < n && size > 1; i++) {
			strbuf_reset(b);
			strbuf_addf(b, "%s group %lld:", gk->name, i);
			for (long long j = 0; j < size && j < 32; j++)
				strbuf_addf(b, " %lld", lay_group_member(
						  grid, gk->axes, i, j));
			if (size > 32)
				strbuf_addf(b, " ... (%lld ranks)", size);
			for (long long j = 0; j + 1 < size; j++) {
				long long t = lay_group_member(grid, gk->axes, i, j);
				long long h = lay_group_member(grid, gk->axes, i,
							       j + 1);
				Agedge_t *e;

				if (t < x->r_lo || h > x->r_hi)
					continue;
				e = link(x, g, t, h);

				set(e, "constraint", "false");
				set(e, "color", render_group_color(k));
				set(e, "style", render_group_style(k));
				set(e, "penwidth", "2");
				set(e, "tooltip", strbuf_str(b));
			}
		}
	}
}

/* ---- one box per node (large worlds) ------------------------------------ */

static int summary_boxes(const struct render_ctx *x, struct place *pl,
			 long long *values, size_t *nv, struct strbuf *b)
{
	long long want = x->n_hi - x->n_lo + 1;
	long long drawn = want > RENDER_MAX_NODES ? RENDER_MAX_NODES - 1 : want;
	long long *tmp = malloc((size_t)x->gpn * sizeof(*tmp));
	Agraph_t *where = pl->g;

	if (!tmp)
		return -1;
	for (long long node = x->n_lo; node < x->n_lo + drawn; node++) {
		Agnode_t *n;
		long long v;
		enum render_state worst;
		char name[32];

		where = outer_cluster(x, pl, node);
		snprintf(name, sizeof(name), "n%lld", node);
		n = agnode(where, name, 1);
		place_row(pl, where, n);
		strbuf_reset(b);
		v = render_label_node(x, node, tmp, b, &worst);
		set_html(n, "label", strbuf_str(b));
		paint(x, n, v);
		if (x->call)
			outline(n, worst);
		values[(*nv)++] = v;
	}
	free(tmp);
	if (drawn < want) {
		Agnode_t *n = agnode(where, "more", 1);

		place_row(pl, where, n);
		strbuf_reset(b);
		render_label_more(x, drawn, b);
		set_html(n, "label", strbuf_str(b));
		set(n, "style", "rounded,dashed");
	}
	return 0;
}

/* ---- title and legend -------------------------------------------------- */

static void legend(const struct render_ctx *x, struct place *pl,
		   long long *v, size_t nv, struct strbuf *b)
{
	Agnode_t *node;
	Agedge_t *e;

	strbuf_reset(b);
	render_label_legend(x, v, nv, b);
	node = agnode(pl->g, "legend", 1);
	set(node, "shape", "plain");
	set(node, "style", "");
	set(node, "peripheries", "0");
	set_html(node, "label", strbuf_str(b));
	e = edge(pl->g, pl->head, node);
	set(e, "style", "invis");
	set(e, "weight", "10");
}

/* ---- the graph, and Graphviz's output ------------------------------- */

static char gv_msg[512];
static size_t gv_msg_n;

/* cgraph calls this with pieces of a message; the first line is kept. */
static int gv_error(char *s)
{
	for (; *s && gv_msg_n + 1 < sizeof(gv_msg); s++) {
		if (*s == '\n' && gv_msg_n)
			gv_msg_n = sizeof(gv_msg) - 1;
		else if (*s != '\n')
			gv_msg[gv_msg_n++] = *s;
	}
	gv_msg[gv_msg_n < sizeof(gv_msg) ? gv_msg_n : sizeof(gv_msg) - 1] = 0;
	return 0;
}

static int build(const struct render_ctx *x, Agraph_t *g, struct strbuf *b)
{
	struct place pl = { .g = g, .outer_id = -1, .mid_id = -1,
			    .inner_id = -1 };
	size_t cap = (size_t)(x->summary ? RENDER_MAX_NODES : x->p->world);
	long long *values = malloc(cap * sizeof(*values));
	size_t nv = 0;

	if (!values)
		return -1;
	defaults(g);
	strbuf_reset(b);
	render_label_title(x, b);
	set_html(g, "label", strbuf_str(b));
	pl.row_max = x->summary ? SUMMARY_ROW : DETAIL_ROW;
	if (x->summary) {
		if (summary_boxes(x, &pl, values, &nv, b)) {
			free(values);
			return -1;
		}
	} else {
		for (long long r = x->r_lo; r <= x->r_hi; r++) {
			struct render_rank rk;

			detail_box(x, &pl, r, b);
			render_rank_at(x, r, &rk);
			values[nv++] = render_value(x, &rk);
		}
		group_links(x, g, b);
	}
	legend(x, &pl, values, nv, b);
	free(values);
	return b->bad ? -1 : 0;
}

static int draw(Agraph_t *g, enum render_format f, FILE *out, char *err,
		size_t errlen)
{
	const char *fmt = f == RENDER_PNG ? "png" : "svg";
	GVC_t *gvc = gvContext();
	int rc = -1;

	if (!gvc) {
		snprintf(err, errlen, "cannot start Graphviz (out of memory)");
		return -1;
	}
	if (gvLayout(gvc, g, "dot") != 0) {
		snprintf(err, errlen, "Graphviz cannot lay the graph out with "
			 "dot (%s); its plugin configuration may be missing: "
			 "run `dot -c` as root", gv_msg[0] ? gv_msg : "no reason "
			 "given");
		goto out;
	}
	if (gvRender(gvc, g, fmt, out) != 0)
		snprintf(err, errlen, "Graphviz cannot draw %s (%s); its plugin "
			 "configuration may be missing: run `dot -c` as root",
			 fmt, gv_msg[0] ? gv_msg : "no reason given");
	else
		rc = 0;
	gvFreeLayout(gvc, g);
out:
	/* the count of errors Graphviz reported on the way */
	if (gvFreeContext(gvc) > 0 && rc == 0) {
		snprintf(err, errlen, "Graphviz reported an error: %s",
			 gv_msg[0] ? gv_msg : "no reason given");
		rc = -1;
	}
	return rc;
}

static int render_graph(const struct render_ctx *x, FILE *out, char *err,
			size_t errlen)
{
	struct gvid ids;
	struct strbuf b = STRBUF_INIT;
	agusererrf old;
	Agraph_t *g;
	int rc = -1;

	gv_msg_n = 0;
	gv_msg[0] = 0;
	old = agseterrf(gv_error);
	gvid_init(&ids);
	g = agopen((char *)"gtplan", Agdirected, &ids.disc);
	if (!g || build(x, g, &b)) {
		snprintf(err, errlen, "out of memory while building the graph");
	} else if (x->o->format == RENDER_DOT) {
		rc = agwrite(g, out) == EOF ? -1 : 0;
		if (rc)
			snprintf(err, errlen, "error writing the DOT output");
	} else {
		rc = draw(g, x->o->format, out, err, errlen);
	}
	if (g)
		agclose(g);
	gvid_release(&ids);
	strbuf_release(&b);
	agseterrf(old);
	return rc;
}

int render_run(const struct render_opts *o, const struct plan *p,
	       const struct sim_report *r, FILE *out, char *err,
	       size_t errlen)
{
	struct render_ctx x;
	int rc;

	if (render_ctx_init(&x, o, p, r, err, errlen)) {
		render_ctx_release(&x);
		return -1;
	}
	if (o->format == RENDER_TEXT) {
		rc = render_text(&x, out);
		if (rc)
			snprintf(err, errlen, "error writing the text grid");
	} else {
		rc = render_graph(&x, out, err, errlen);
	}
	render_ctx_release(&x);
	if (!rc && ferror(out)) {
		snprintf(err, errlen, "write error");
		rc = -1;
	}
	return rc;
}
