/*
 * render: pictures of the rank grid (`gtplan render`).
 *
 * One box per training GPU, in a cluster per node (and per NVLink segment
 * when cluster.segment_size is given), in rank order; each box shows the
 * global rank, the node's local GPU, Megatron's coordinates (t, c, g, d, p)
 * and the lane. Boxes are coloured by one coordinate (colour-blind-safe
 * palette, then distinct generated pastels, with a legend); chosen group
 * kinds are drawn as links between their members (the picture says when
 * a kind has none to draw); one simulated call can be laid over the grid
 * (who is called, with which shard, who never is, who is stuck and on
 * which collective). Worlds above RENDER_MAX_RANKS draw one box per node
 * with a summary instead, and say so; --nodes A-B draws only those nodes
 * (in detail when their ranks are few enough).
 *
 * Formats: DOT (the graph gtplan builds, before layout), SVG and PNG (laid
 * out and drawn by Graphviz's libraries; nothing is run), and a compact
 * text grid for terminals. Same input, byte-identical DOT and text; the
 * SVG differs only in what Graphviz itself embeds (its version, font
 * metrics of the machine).
 *
 * Graphviz types never leave render.c.
 *
 * Ownership: a struct render_opts is the caller's value with no release;
 * render_run writes to the caller's stream (not closed) and frees its
 * Graphviz graph before it returns; err is the caller's buffer.
 */
#ifndef GTPLAN_RENDER_H
#define GTPLAN_RENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan.h"
#include "program.h"
#include "simulate.h"

/* Above this many ranks the picture has one box per node. */
#define RENDER_MAX_RANKS 256
/* Hostile-input limit: node boxes (or text rows) drawn; the rest are
 * summed up in one closing box (or line). */
#define RENDER_MAX_NODES 256

enum render_format { RENDER_TEXT, RENDER_DOT, RENDER_SVG, RENDER_PNG };

/* What the boxes are coloured by. RENDER_BY_CALL needs a call. */
enum render_color {
	RENDER_BY_AUTO,  /* lane; the call's states with --call */
	RENDER_BY_LANE,
	RENDER_BY_GTP,
	RENDER_BY_TP,
	RENDER_BY_CP,
	RENDER_BY_DP,    /* the model copy (dp_replicate coordinate) */
	RENDER_BY_PP,
	RENDER_BY_NODE,
	RENDER_BY_CALL,  /* called / stuck / never called */
	RENDER_BY_COUNT
};

struct render_opts {
	enum render_format format;
	enum render_color color;
	uint64_t groups;        /* bit i: draw lay_group_kind_at(i) */
	const char *call;       /* overlay this simulated call; NULL none */
	/* The settings the simulator built the call's programs with (NULL:
	 * prog_opts_init()); only the stuck ops' labels depend on them. */
	const struct prog_opts *prog;
	/* GPUs per NVLink segment, 0 none. A multiple of the GPUs per node
	 * draws a cluster of nodes, a divisor clusters inside each node;
	 * anything else is only named in the title. */
	long long segment_size;
	long long max_ranks;    /* detail up to this world; 0 RENDER_MAX_RANKS */
	/* The nodes drawn, first .. last (--nodes A-B); last < 0: all. The
	 * ranks of the chosen nodes decide between detail and summary. */
	long long node_first, node_last;
};

void render_opts_init(struct render_opts *o);

/* Option values. Each returns 0, or -1 with a plain-words reason in err
 * (naming the accepted values). */
int render_format_parse(const char *s, enum render_format *f, char *err,
			size_t errlen);
/* The format an output file name asks for (".svg", ".dot"/".gv", ".png",
 * ".txt"); -1 (and a reason) when the extension says nothing. */
int render_format_from_path(const char *path, enum render_format *f,
			    char *err, size_t errlen);
int render_color_parse(const char *s, enum render_color *c, char *err,
		       size_t errlen);
/* A comma-separated list of group kinds ("gtp,tp"; layout.h's names). */
int render_groups_parse(const char *s, uint64_t *mask, char *err,
			size_t errlen);
const char *render_color_name(enum render_color c);
/* A node range, "A-B" or "A" (decimal, A <= B). Returns 0, or -1 with
 * the reason and a hint in err. */
int render_nodes_parse(const char *s, long long *first, long long *last,
		       char *err, size_t errlen);
/* The chosen group kinds of o that draw no link on plan p, in words
 * ("pp: every group has one rank"; the per-node summary draws none),
 * into buf. Returns how many kinds that is (0: buf ""). */
size_t render_groups_unlinked(const struct render_opts *o,
			      const struct plan *p, char *buf, size_t len);

/* Draws plan p (p->grid_ok required) to `out` in o->format. `r` is the
 * simulator's report (NULL or !r->ran: no simulation shown); with o->call
 * it must hold that call's result. Returns 0, or -1 with the reason in err
 * (unsimulated call, --color call without a call, expert groups without
 * an expert grid, nodes past the plan's, Graphviz missing its dot layout
 * or the format's plugin, a write error, out of memory); a reason may
 * carry a second line "hint: ...". */
int render_run(const struct render_opts *o, const struct plan *p,
	       const struct sim_report *r, FILE *out, char *err,
	       size_t errlen);

#endif
