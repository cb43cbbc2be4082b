/*
 * render_int: what the Graphviz and the text renderers share (render.h is
 * the public side). render_info.c computes every fact a picture shows:
 * per rank (place, coordinates, lane, the call's dispatch and where the
 * rank stopped), colours and legends, and the title lines; render.c and
 * render_text.c only lay them out.
 */
#ifndef GTPLAN_RENDER_INT_H
#define GTPLAN_RENDER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "match.h"
#include "render.h"
#include "strbuf.h"

/* Appends text escaped for Graphviz HTML-like labels (& < > "). */
void render_add_html(struct strbuf *b, const char *text);

/* Where a rank is in the overlaid call. */
enum render_state {
	RS_CALLED,   /* called with data; its program completes */
	RS_DUMMY,    /* called without data (a dummy call to a free axis) */
	RS_STUCK,    /* called; blocked in a collective when the play ends */
	RS_NEVER,    /* the driver never calls it */
	RS_COUNT
};

struct render_rank {
	long long rank, node, local, lane;
	long long c[LAY_NAXES];       /* Megatron's dense coordinates */
	struct disp_rank dr;          /* the call's dispatch (with a call) */
	enum render_state state;      /* with a call */
	const struct match_class *mc; /* RS_STUCK: where */
};

/* Distinct ops ranks are stuck in, for titles and legends. */
#define RENDER_MAX_STUCK 3

struct render_stuck {
	const struct match_class *mc;
	long long ranks;
};

struct render_ctx {
	const struct render_opts *o;
	const struct plan *p;
	const struct sim_report *r;   /* NULL when no simulation is shown */
	enum render_color color;      /* resolved (never AUTO) */
	const struct sim_call_result *call; /* the overlay; NULL */
	struct match_where where;     /* with a call, when it could be played */
	int have_where;
	long long gpn, nodes;         /* GPUs per node, nodes */
	long long seg;                /* GPUs per NVLink segment, 0 none */
	long long seg_skipped;        /* the sim's domain, when it does not
					 nest with the nodes */
	int summary;                  /* one box per node */
	/* the nodes and ranks drawn (render_opts.node_first/last) */
	long long n_lo, n_hi, r_lo, r_hi;
	int partial;                  /* not every node is drawn */
	uint64_t unlinked;            /* chosen kinds with no link drawn */
	/* with a call: rank counts by state, distinct stuck ops */
	long long n_state[RS_COUNT];
	struct render_stuck stuck[RENDER_MAX_STUCK];
	size_t n_stuck, n_stuck_more;
};

int render_ctx_init(struct render_ctx *x, const struct render_opts *o,
		    const struct plan *p, const struct sim_report *r,
		    char *err, size_t errlen);
void render_ctx_release(struct render_ctx *x);

void render_rank_at(const struct render_ctx *x, long long rank,
		    struct render_rank *out);
/* The value rank rk is coloured by (a coordinate, its node, or its
 * enum render_state). */
long long render_value(const struct render_ctx *x,
		       const struct render_rank *rk);
/* "lane 3", "node 1", "never called": a value as the legend names it. */
void render_value_text(const struct render_ctx *x, long long v,
		       struct strbuf *b);

/* A fill colour "#RRGGBB" for a value into buf (8 bytes at least): the
 * palette by value, then generated pastels, every value its own colour
 * (for values 0 .. RENDER_DISTINCT_FILLS - 1); or the state colours.
 * Returns buf. */
#define RENDER_DISTINCT_FILLS (8 + 4096)
const char *render_fill(const struct render_ctx *x, long long v, char *buf);
/* A conservative width in points of text (UTF-8, no markup) in the
 * picture's font at `pt` points: Helvetica's widths by character class,
 * bold wider, and a margin for the wider sans fonts a viewer may put in
 * its place. */
double render_text_width(const char *text, double pt, int bold);
/* The colour group kind i's links are drawn in, and their line style. */
const char *render_group_color(size_t kind);
const char *render_group_style(size_t kind);

/* The title, one line per call, in plain UTF-8 text (escape it for HTML).
 * Returns the number of lines; line i (0 ..) goes to b. */
size_t render_title_count(const struct render_ctx *x);
void render_title_line(const struct render_ctx *x, size_t i, struct strbuf *b);
/* "tp, gtp" for the group kinds of mask `kinds` ("" none). */
void render_groups_text(struct strbuf *b, uint64_t kinds);

/* Labels (render_label.c): Graphviz HTML-like label text, appended to b.
 * render_label_node() returns the value the node's box is coloured by and
 * the worst state of its ranks (stuck, never called, dummy, called; with
 * a call); tmp holds gpn entries. render_label_legend() sorts v. */
void render_label_gpu(const struct render_ctx *x, const struct render_rank *rk,
		      struct strbuf *b);
void render_label_tooltip(const struct render_ctx *x,
			  const struct render_rank *rk, struct strbuf *b);
long long render_label_node(const struct render_ctx *x, long long node,
			    long long *tmp, struct strbuf *b,
			    enum render_state *worst);
void render_label_more(const struct render_ctx *x, long long drawn,
		       struct strbuf *b);
void render_label_title(const struct render_ctx *x, struct strbuf *b);
void render_label_legend(const struct render_ctx *x, long long *v, size_t nv,
			 struct strbuf *b);

/* The text grid (render_text.c). Returns 0, or -1 on a write error. */
int render_text(const struct render_ctx *x, FILE *out);

#endif
