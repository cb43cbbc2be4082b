/*
 * render_info: the facts a picture shows, shared by the Graphviz and the
 * text renderers (see render_int.h), and the option parsers.
 */
#include "render_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"

/* ---- text ------------------------------------------------------------ */

void render_add_html(struct strbuf *b, const char *t)
{
	for (; *t; t++) {
		switch (*t) {
		case '&': strbuf_addstr(b, "&amp;"); break;
		case '<': strbuf_addstr(b, "&lt;"); break;
		case '>': strbuf_addstr(b, "&gt;"); break;
		case '"': strbuf_addstr(b, "&quot;"); break;
		default: strbuf_addch(b, *t); break;
		}
	}
}

/* ---- options ----------------------------------------------------------- */

void render_opts_init(struct render_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->format = RENDER_TEXT;
	o->color = RENDER_BY_AUTO;
	o->node_first = o->node_last = -1;
}

static const char *const color_names[RENDER_BY_COUNT] = {
	"auto", "lane", "gtp", "tp", "cp", "dp", "pp", "node", "call",
};

const char *render_color_name(enum render_color c)
{
	return (unsigned)c < RENDER_BY_COUNT ? color_names[c] : "?";
}

int render_color_parse(const char *s, enum render_color *c, char *err,
		       size_t errlen)
{
	for (int i = 0; i < RENDER_BY_COUNT; i++)
		if (strcmp(s, color_names[i]) == 0) {
			*c = (enum render_color)i;
			return 0;
		}
	snprintf(err, errlen, "unknown colour '%s' (use lane, gtp, tp, cp, "
		 "dp, pp, node or call)", s);
	return -1;
}

static const struct {
	const char *name;
	enum render_format f;
} formats[] = {
	{ "text", RENDER_TEXT }, { "txt", RENDER_TEXT }, { "dot", RENDER_DOT },
	{ "gv", RENDER_DOT }, { "svg", RENDER_SVG }, { "png", RENDER_PNG },
};

int render_format_parse(const char *s, enum render_format *f, char *err,
			size_t errlen)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++)
		if (strcmp(s, formats[i].name) == 0) {
			*f = formats[i].f;
			return 0;
		}
	snprintf(err, errlen, "unknown render format '%s' (use svg, png, dot "
		 "or text)", s);
	return -1;
}

int render_format_from_path(const char *path, enum render_format *f,
			    char *err, size_t errlen)
{
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');

	if (dot && (!slash || dot > slash) &&
	    render_format_parse(dot + 1, f, err, errlen) == 0)
		return 0;
	snprintf(err, errlen, "cannot tell the format from '%s' (name it .svg, "
		 ".png, .dot or .txt, or give --format)", path);
	return -1;
}

int render_groups_parse(const char *s, uint64_t *mask, char *err,
			size_t errlen)
{
	const char *p = s;

	*mask = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		char name[32];
		size_t i, n = lay_group_kind_count();

		if (len == 0 || len >= sizeof(name))
			goto bad;
		memcpy(name, p, len);
		name[len] = 0;
		for (i = 0; i < n; i++)
			if (strcmp(lay_group_kind_at(i)->name, name) == 0)
				break;
		if (i == n)
			goto bad;
		*mask |= 1ull << i;
		p += len + (p[len] == ',');
	}
	if (*mask)
		return 0;
bad: {
		struct strbuf b = STRBUF_INIT;

		for (size_t i = 0; i < lay_group_kind_count(); i++)
			strbuf_addf(&b, "%s%s", i ? ", " : "",
					  lay_group_kind_at(i)->name);
		snprintf(err, errlen, "bad group list '%s' (kinds, comma-"
			 "separated: %s)", s, b.bad ? "?" : b.buf);
		strbuf_release(&b);
	}
	return -1;
}

int render_nodes_parse(const char *s, long long *first, long long *last,
		       char *err, size_t errlen)
{
	char *end;

	*first = *last = -1;
	if (*s >= '0' && *s <= '9') {
		*first = strtoll(s, &end, 10);
		*last = *first;
		if (*end == '-' && end[1] >= '0' && end[1] <= '9')
			*last = strtoll(end + 1, &end, 10);
		if (!*end && *first <= *last && *last < LLONG_MAX)
			return 0;
	}
	snprintf(err, errlen, "bad node range '%s'\nhint: --nodes A-B draws "
		 "nodes A to B (0-based, A <= B), --nodes A node A alone", s);
	return -1;
}

/* The node range of o on a plan of `nodes` nodes; -1 (reason and hint in
 * err) when it goes past them. */
static int node_range(const struct render_opts *o, long long nodes,
		      long long *lo, long long *hi, char *err, size_t errlen)
{
	*lo = 0;
	*hi = nodes - 1;
	if (o->node_last < 0)
		return 0;
	if (o->node_first < 0 || o->node_first > o->node_last ||
	    o->node_last >= nodes) {
		snprintf(err, errlen, "--nodes %lld-%lld: the plan has %lld "
			 "node%s (0-%lld)\nhint: choose nodes between 0 and "
			 "%lld, e.g. --nodes 0-%lld", o->node_first,
			 o->node_last, nodes, nodes == 1 ? "" : "s", nodes - 1,
			 nodes - 1, nodes - 1 < 3 ? nodes - 1 : 3);
		return -1;
	}
	*lo = o->node_first;
	*hi = o->node_last;
	return 0;
}

/* Whether the ranks drawn get one box per node. */
static int is_summary(const struct render_opts *o, long long ranks)
{
	/* the text grid stays one cell per GPU at any size */
	return o->format != RENDER_TEXT &&
	       ranks > (o->max_ranks > 0 ? o->max_ranks : RENDER_MAX_RANKS);
}

/* The chosen kinds that draw no link: every group has one rank, or no
 * group has two members among ranks r_lo .. r_hi (all of them, in the
 * per-node summary, which draws no links). */
static uint64_t unlinked_kinds(const struct render_opts *o,
			       const struct plan *p, long long r_lo,
			       long long r_hi, int summary)
{
	uint64_t m = 0;

	for (size_t k = 0; k < lay_group_kind_count(); k++) {
		const struct lay_group_kind *gk = lay_group_kind_at(k);
		const struct lay_grid *g = gk->expert ? &p->expert : &p->dense;
		long long idx, pos, size;
		int linked = 0;

		if (!(o->groups >> k & 1))
			continue;
		if (gk->expert && !p->expert_grid_ok)
			continue; /* refused by render_ctx_init */
		size = lay_group_size(g, gk->axes);
		for (long long r = r_lo; !summary && size > 1 && r <= r_hi &&
		     !linked; r++) {
			lay_group_of(g, gk->axes, r, &idx, &pos);
			linked = (pos > 0 && lay_group_member(g, gk->axes, idx,
							      pos - 1) >= r_lo) ||
				 (pos + 1 < size && lay_group_member(g, gk->axes,
						idx, pos + 1) <= r_hi);
		}
		if (!linked)
			m |= 1ull << k;
	}
	return m;
}

size_t render_groups_unlinked(const struct render_opts *o,
			      const struct plan *p, char *buf, size_t len)
{
	long long gpn, nodes, lo, hi, r_lo, r_hi;
	uint64_t m;
	size_t n = 0, at = 0;
	char err[256];

	buf[0] = '\0';
	if (!p->grid_ok || !o->groups)
		return 0;
	gpn = p->train.gpus_per_node > 0 ? p->train.gpus_per_node : p->world;
	nodes = (p->world + gpn - 1) / gpn;
	if (node_range(o, nodes, &lo, &hi, err, sizeof(err)))
		return 0;
	r_lo = lo * gpn;
	r_hi = (hi + 1) * gpn - 1 < p->world ? (hi + 1) * gpn - 1 :
	       p->world - 1;
	m = unlinked_kinds(o, p, r_lo, r_hi, is_summary(o, r_hi - r_lo + 1));
	for (size_t k = 0; k < lay_group_kind_count() && at < len; k++)
		if (m >> k & 1)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", n++ ?
					       ", " : "", lay_group_kind_at(k)->name);
	if (n && at < len)
		snprintf(buf + at, len - at, ": no link%s to draw (%s)",
			 n > 1 ? "s" : "", is_summary(o, r_hi - r_lo + 1) ?
			 "the per-node summary counts groups leaving each "
			 "node instead; --nodes A-B draws fewer nodes in "
			 "detail" : "every group has one rank, or no two "
			 "members among the nodes drawn");
	return n;
}

/* ---- the context -------------------------------------------------------- */

static const struct sim_call_result *find_call(const struct sim_report *r,
					       const char *name)
{
	for (size_t i = 0; r && i < r->n_res; i++)
		if (strcmp(r->res[i].call->name, name) == 0)
			return &r->res[i];
	return NULL;
}

/* Counts ranks by state and keeps the distinct stuck ops. */
static void tally_states(struct render_ctx *x)
{
	for (long long rank = 0; rank < x->p->world; rank++) {
		struct render_rank rk;
		size_t i;

		render_rank_at(x, rank, &rk);
		x->n_state[rk.state]++;
		if (rk.state != RS_STUCK)
			continue;
		for (i = 0; i < x->n_stuck; i++)
			if (x->stuck[i].mc->op == rk.mc->op &&
			    strcmp(x->stuck[i].mc->label, rk.mc->label) == 0)
				break;
		if (i < x->n_stuck) {
			x->stuck[i].ranks++;
		} else if (x->n_stuck < RENDER_MAX_STUCK) {
			x->stuck[x->n_stuck].mc = rk.mc;
			x->stuck[x->n_stuck++].ranks = 1;
		} else {
			x->n_stuck_more++;
		}
	}
}

int render_ctx_init(struct render_ctx *x, const struct render_opts *o,
		    const struct plan *p, const struct sim_report *r,
		    char *err, size_t errlen)
{
	memset(x, 0, sizeof(*x));
	x->o = o;
	x->p = p;
	x->r = r && r->ran ? r : NULL;
	if (!p->grid_ok) {
		snprintf(err, errlen, "'%s' has no rank grid to draw: fix its "
			 "errors first", p->config_name);
		return -1;
	}
	x->gpn = p->train.gpus_per_node > 0 ? p->train.gpus_per_node : p->world;
	x->nodes = (p->world + x->gpn - 1) / x->gpn;
	if (node_range(o, x->nodes, &x->n_lo, &x->n_hi, err, errlen))
		return -1;
	x->partial = x->n_lo > 0 || x->n_hi < x->nodes - 1;
	x->r_lo = x->n_lo * x->gpn;
	x->r_hi = (x->n_hi + 1) * x->gpn - 1 < p->world ?
		  (x->n_hi + 1) * x->gpn - 1 : p->world - 1;
	x->summary = is_summary(o, x->r_hi - x->r_lo + 1);
	/* NVLink segments that do not nest with the nodes are named in the
	 * title, not drawn */
	x->seg = o->segment_size > 0 ? o->segment_size : 0;
	if (x->seg == x->gpn) {
		x->seg = 0;
	} else if (x->seg && x->gpn % x->seg != 0 && x->seg % x->gpn != 0) {
		x->seg_skipped = x->seg;
		x->seg = 0;
	}
	for (size_t i = 0; i < lay_group_kind_count(); i++)
		if ((o->groups >> i & 1) && lay_group_kind_at(i)->expert &&
		    !p->expert_grid_ok) {
			snprintf(err, errlen, "group kind '%s' is on the expert "
				 "grid, which this plan does not have",
				 lay_group_kind_at(i)->name);
			return -1;
		}
	x->unlinked = unlinked_kinds(o, p, x->r_lo, x->r_hi, x->summary);
	x->color = o->color;
	if (x->color == RENDER_BY_AUTO)
		x->color = o->call ? RENDER_BY_CALL : RENDER_BY_LANE;
	if (x->color == RENDER_BY_CALL && !o->call) {
		snprintf(err, errlen, "--color call needs --call NAME");
		return -1;
	}
	if (!o->call)
		return 0;
	x->call = find_call(x->r, o->call);
	if (!x->call) {
		snprintf(err, errlen, "call '%s' was not simulated for '%s'",
			 o->call, p->config_name);
		return -1;
	}
	/* The play again, to see where each rank stopped; it fails only
	 * where the simulator's did (program too long), and then the
	 * picture shows the dispatch alone. */
	x->have_where = match_call_where(p, &x->r->model, &x->r->dl,
					 x->call->call, o->prog, &x->where) == 0;
	tally_states(x);
	return 0;
}

void render_ctx_release(struct render_ctx *x)
{
	if (x->have_where)
		match_where_release(&x->where);
	x->have_where = 0;
}

void render_rank_at(const struct render_ctx *x, long long rank,
		    struct render_rank *rk)
{
	const struct plan *p = x->p;
	long long idx;

	memset(rk, 0, sizeof(*rk));
	rk->rank = rank;
	plan_rank_place(p, rank, &rk->node, &rk->local);
	lay_coords(&p->dense, rank, rk->c);
	lay_group_of_coords(&p->dense, (1u << LAY_GTP) | (1u << LAY_DP),
			    rk->c, &idx, &rk->lane);
	rk->dr.shard = -1;
	rk->dr.left_out_by = AX_N;
	rk->state = RS_NEVER;
	if (!x->call)
		return;
	disp_rank(&x->r->dl, x->call->call, rank, &rk->dr);
	if (!rk->dr.called)
		return;
	rk->state = rk->dr.dummy ? RS_DUMMY : RS_CALLED;
	if (x->have_where) {
		const struct match_class *mc = &x->where.c[x->where.cls[rank]];

		if (mc->blocked) {
			rk->state = RS_STUCK;
			rk->mc = mc;
		}
	}
}

long long render_value(const struct render_ctx *x,
		       const struct render_rank *rk)
{
	switch (x->color) {
	case RENDER_BY_GTP: return rk->c[LAY_GTP];
	case RENDER_BY_TP: return rk->c[LAY_TP];
	case RENDER_BY_CP: return rk->c[LAY_CP];
	case RENDER_BY_DP: return rk->c[LAY_DP];
	case RENDER_BY_PP: return rk->c[LAY_PP];
	case RENDER_BY_NODE: return rk->node;
	case RENDER_BY_CALL: return rk->state;
	default: return rk->lane;
	}
}

static const char *const state_text[RS_COUNT] = {
	[RS_CALLED] = "called, completes",
	[RS_DUMMY] = "dummy call (no data)",
	[RS_STUCK] = "stuck in a collective",
	[RS_NEVER] = "never called",
};

void render_value_text(const struct render_ctx *x, long long v,
		       struct strbuf *b)
{
	static const char *const what[RENDER_BY_COUNT] = {
		"lane", "lane", "gtp", "tp", "cp", "copy", "stage", "node", "",
	};

	if (x->color == RENDER_BY_CALL && v >= 0 && v < RS_COUNT)
		strbuf_addf(b, "%s", v == RS_CALLED && !x->have_where ?
				  "called" : state_text[v]);
	else
		strbuf_addf(b, "%s %lld", what[x->color], v);
}

/* Paul Tol's "light" scheme (colour-blind safe, made for labelled
 * fills), pale grey left out: it is the never-called grey. */
static const char *const palette[] = {
	"#77AADD", "#EE8866", "#EEDD88", "#FFAABB", "#99DDFF", "#44BB99",
	"#BBCC33", "#AAAA00",
};
#define NPAL (sizeof(palette) / sizeof(*palette))

static const char *const state_fill[RS_COUNT] = {
	[RS_CALLED] = "#99DDFF", [RS_DUMMY] = "#EEDD88",
	[RS_STUCK] = "#EE8866", [RS_NEVER] = "#F4F4F4",
};

/* Past the palette: a lattice of 16 levels per channel from 0x80 to 0xF8
 * (light enough for black text; no palette colour is on it), value k at
 * lattice point k x 1877 mod 4096 so that neighbours differ in every
 * channel. An odd multiplier permutes 0 .. 4095: each value its own
 * colour. */
#define LATTICE 4096
#define LATTICE_STEP 1877

const char *render_fill(const struct render_ctx *x, long long v, char *buf)
{
	long long i;

	if (x->color == RENDER_BY_CALL)
		return strcpy(buf, state_fill[v >= 0 && v < RS_COUNT ? v :
					      RS_NEVER]);
	if (v < 0)
		v = 0;
	if (v < (long long)NPAL)
		return strcpy(buf, palette[v]);
	i = (v - (long long)NPAL) % LATTICE * LATTICE_STEP % LATTICE;
	snprintf(buf, 8, "#%02X%02X%02X", (unsigned)(0x80 + 8 * (i & 15)),
		 (unsigned)(0x80 + 8 * (i >> 4 & 15)),
		 (unsigned)(0x80 + 8 * (i >> 8 & 15)));
	return buf;
}

/* Group links: Paul Tol's "bright" scheme (dark enough on the fills),
 * and a line style per kind so that print in grey still tells them apart. */
const char *render_group_color(size_t kind)
{
	/* by kind: tp blue, cp green, gtp purple, pp orange, dp_replicate
	 * grey, dp teal, ...; red is kept for stuck ranks */
	static const char *const c[] = {
		"#4477AA", "#228833", "#AA3377", "#EE7733", "#666666",
		"#009988", "#0077BB", "#EE3377",
	};

	return c[kind % (sizeof(c) / sizeof(*c))];
}

const char *render_group_style(size_t kind)
{
	static const char *const s[] = { "solid", "dashed", "bold", "dotted" };

	return s[kind % 4];
}

void render_groups_text(struct strbuf *b, uint64_t kinds)
{
	int first = 1;

	for (size_t i = 0; i < lay_group_kind_count(); i++)
		if (kinds >> i & 1) {
			strbuf_addf(b, "%s%s", first ? "" : ", ",
					  lay_group_kind_at(i)->name);
			first = 0;
		}
}

/* ---- the title ------------------------------------------------------------ */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "config";
}

enum { T_WORLD, T_SIZES, T_ORDER, T_KEY, T_SUMMARY, T_CALL, T_STUCK };

/* Which kind of line title line i is. */
static int title_kind(const struct render_ctx *x, size_t i)
{
	if (i < T_SUMMARY)
		return (int)i;
	i -= T_SUMMARY;
	if (x->summary && i-- == 0)
		return T_SUMMARY;
	return i == 0 ? T_CALL : T_STUCK;
}

size_t render_title_count(const struct render_ctx *x)
{
	return T_SUMMARY + (size_t)x->summary +
	       (x->call ? 1 + x->n_stuck + (x->n_stuck_more > 0) : 0);
}

static void sim_summary(const struct render_ctx *x, struct strbuf *b)
{
	size_t bad = 0, shown = 0;

	if (!x->r || !x->r->n_res || x->call)
		return;
	bad = sim_not_ok(x->r);
	if (!bad) {
		strbuf_addf(b, " · sim: all %zu calls complete",
				  x->r->n_res);
		return;
	}
	strbuf_addf(b, " · sim: %zu of %zu calls fail (", bad,
			  x->r->n_res);
	for (size_t i = 0; i < x->r->n_res; i++) {
		const struct sim_call_result *c = &x->r->res[i];

		if (c->status == SIM_OK)
			continue;
		if (shown++ == 2) {
			strbuf_addstr(b, ", ...");
			break;
		}
		strbuf_addf(b, "%s%s %s", shown > 1 ? ", " : "",
				  c->call->name, sim_status_name(c->status));
	}
	strbuf_addstr(b, "); --call NAME shows one");
}

static void call_line(const struct render_ctx *x, struct strbuf *b)
{
	const struct call_def *c = x->call->call;

	strbuf_addf(b, "call %s (%s", c->name,
			  calls_dispatch_name(c->dispatch));
	for (int i = 0; i < c->n_sharded; i++)
		strbuf_addf(b, "%s%s", i ? " x " : " over ",
				  drv_axis_name(c->sharded[i]));
	strbuf_addf(b, "): %s · %lld of %lld ranks called",
			  sim_status_name(x->call->status),
			  x->n_state[RS_CALLED] + x->n_state[RS_DUMMY] +
			  x->n_state[RS_STUCK], x->p->world);
	if (x->call->shards > 1)
		strbuf_addf(b, ", %lld shards", x->call->shards);
	if (x->n_state[RS_DUMMY])
		strbuf_addf(b, ", %lld without data",
				  x->n_state[RS_DUMMY]);
	if (x->n_state[RS_NEVER])
		strbuf_addf(b, ", %lld never called", x->n_state[RS_NEVER]);
	if (x->n_state[RS_STUCK])
		strbuf_addf(b, ", %lld stuck", x->n_state[RS_STUCK]);
	if (!x->have_where)
		strbuf_addstr(b, " (collectives not played)");
	if (x->call->status == SIM_ERROR)
		strbuf_addstr(b, " (the findings say why)");
}

/* The first title line: the config, the GPUs, the segments, the nodes
 * drawn. */
static void world_line(const struct render_ctx *x, struct strbuf *b)
{
	const struct plan *p = x->p;

	strbuf_addf(b, "%s: %lld GPUs, %lld node%s x %lld",
			  base_name(p->config_name), p->world, x->nodes,
			  x->nodes == 1 ? "" : "s", x->gpn);
	if (p->world != p->cluster.nodes * p->cluster.gpus_per_node)
		strbuf_addf(b, " (training part of a %lld-GPU "
				  "cluster)", p->cluster.nodes *
				  p->cluster.gpus_per_node);
	if (x->seg > x->gpn)
		strbuf_addf(b, ", NVLink segments of %lld nodes",
				  x->seg / x->gpn);
	else if (x->seg && x->seg < x->gpn)
		strbuf_addf(b, ", NVLink domains of %lld GPUs",
				  x->seg);
	if (x->seg_skipped)
		strbuf_addf(b, " (NVLink domains of %lld GPUs not "
				  "drawn: they do not nest with the "
				  "nodes)", x->seg_skipped);
	if (x->partial && x->n_lo == x->n_hi)
		strbuf_addf(b, "; drawn: node %lld (ranks %lld-%lld)",
				  x->n_lo, x->r_lo, x->r_hi);
	else if (x->partial)
		strbuf_addf(b, "; drawn: nodes %lld-%lld (ranks "
				  "%lld-%lld)", x->n_lo, x->n_hi, x->r_lo,
				  x->r_hi);
}

void render_title_line(const struct render_ctx *x, size_t i, struct strbuf *b)
{
	const struct plan *p = x->p;
	char ord[64];

	switch (title_kind(x, i)) {
	case T_WORLD:
		world_line(x, b);
		break;
	case T_SIZES:
		strbuf_addf(b, "TP %lld · CP %lld · GTP %lld (%lld weight "
				  "shards) · PP %lld · D %lld model cop%s · L "
				  "%lld lane%s", p->tp, p->cp, p->gtp, p->shards,
				  p->pp, p->dp_replicate,
				  p->dp_replicate == 1 ? "y" : "ies", p->lanes,
				  p->lanes == 1 ? "" : "s");
		if (p->ep > 1 || p->egtp > 1 || p->etp != p->tp)
			strbuf_addf(b, " · ETP %lld · EP %lld · EGTP %lld",
					  p->etp, p->ep, p->egtp);
		break;
	case T_ORDER:
		strbuf_addf(b, "rank order %s · driver layout %s",
				  lay_order_str(&p->order, ord, sizeof(ord)),
				  p->driver_layout ? p->driver_layout : "4d");
		sim_summary(x, b);
		break;
	case T_KEY:
		strbuf_addf(b, "colour: %s", x->color == RENDER_BY_CALL ?
				  "the call's view" :
				  render_color_name(x->color));
		if (x->o->groups & ~x->unlinked) {
			strbuf_addstr(b, " · lines: ");
			render_groups_text(b, x->o->groups & ~x->unlinked);
			strbuf_addstr(b, " groups, members in rank order");
		}
		if (x->unlinked) {
			strbuf_addstr(b, " · no links to draw for ");
			render_groups_text(b, x->unlinked);
			strbuf_addstr(b, x->summary ? " (one box per node)" :
				      " (groups of one rank, or none among the "
				      "nodes drawn)");
		}
		break;
	case T_SUMMARY:
		strbuf_addf(b, "%lld ranks: one box per node (details "
				  "above %lld ranks would not be legible; "
				  "--nodes A-B draws fewer nodes)",
				  x->r_hi - x->r_lo + 1, x->o->max_ranks > 0 ?
				  x->o->max_ranks : (long long)RENDER_MAX_RANKS);
		if (x->n_hi - x->n_lo + 1 > RENDER_MAX_NODES)
			strbuf_addf(b, "; the first %d of %lld nodes are "
					  "drawn", RENDER_MAX_NODES - 1,
					  x->n_hi - x->n_lo + 1);
		break;
	case T_CALL:
		call_line(x, b);
		break;
	default: {
		size_t k = i - (T_SUMMARY + (size_t)x->summary + 1);

		if (k >= x->n_stuck) {
			strbuf_addf(b, "and %zu ranks stuck elsewhere",
					  x->n_stuck_more);
			break;
		}
		strbuf_addf(b, "%lld stuck at op #%lld: %s",
				  x->stuck[k].ranks, x->stuck[k].mc->op,
				  x->stuck[k].mc->label);
	}
	}
}
