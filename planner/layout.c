/*
 * layout: Megatron's rank numbering and process groups, with GTP.
 *
 * Everything here is mixed-radix arithmetic over the six axes of a grid, in
 * the grid's order (leftmost digit least significant). Nothing allocates.
 */
#include "layout.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "errmsg.h"

#define AXIS_BIT(a) (1u << (unsigned)(a))

static const char *const axis_names[LAY_NAXES] = {
	[LAY_TP] = "tp", [LAY_CP] = "cp", [LAY_GTP] = "gtp",
	[LAY_EP] = "ep", [LAY_DP] = "dp", [LAY_PP] = "pp",
};

const char *lay_axis_name(enum lay_axis a)
{
	if ((unsigned)a >= LAY_NAXES)
		return "?";
	return axis_names[a];
}

/* ---- order strings ---------------------------------------------------- */

/* A token as shown in a message: long junk is cut to one readable line. */
#define TOK_FMT "\"%.*s%s\""
#define TOK_ARGS(p, len) \
	(int)((len) > 32 ? 32 : (len)), (p), ((len) > 32 ? "..." : "")

/* Case-insensitive match of token [tok, tok+len) against `name`. */
static int token_is(const char *tok, size_t len, const char *name)
{
	size_t i;

	if (strlen(name) != len)
		return 0;
	for (i = 0; i < len; i++)
		if (tolower((unsigned char)tok[i]) != name[i])
			return 0;
	return 1;
}

static int token_axis(const char *tok, size_t len)
{
	int a;

	if (token_is(tok, len, "gtp_remat"))
		return LAY_GTP;
	for (a = 0; a < LAY_NAXES; a++)
		if (token_is(tok, len, axis_names[a]))
			return a;
	return -1;
}

int lay_order_parse(const char *s, struct lay_order *o, char *err,
		    size_t errlen)
{
	struct lay_order out = { .given = 0 };
	size_t n = 0;
	const char *p = s;
	int a;

	if (!s || !*s) {
		errmsg_set(0, err, errlen,
			"the rank order is empty; write the axes fastest "
			"first, e.g. \"%s\"", LAY_DEFAULT_ORDER);
		return -1;
	}
	for (;;) {
		const char *q = strchr(p, '-');
		size_t len = q ? (size_t)(q - p) : strlen(p);

		if (len == 0) {
			errmsg_set(0, err, errlen,
				"the rank order " TOK_FMT " has an empty token "
				"(two '-' in a row, or a '-' at either end)",
				TOK_ARGS(s, strlen(s)));
			return -1;
		}
		a = token_axis(p, len);
		if (a < 0) {
			errmsg_set(0, err, errlen,
				"unknown token " TOK_FMT " in the rank order; "
				"the tokens are tp, cp, gtp (or gtp_remat), ep, "
				"dp and pp", TOK_ARGS(p, len));
			return -1;
		}
		if (out.given & AXIS_BIT(a)) {
			if (a == LAY_GTP)
				errmsg_set(0, err, errlen,
					"token " TOK_FMT " names gtp a second "
					"time in the rank order (gtp_remat is "
					"another name for gtp)", TOK_ARGS(p, len));
			else
				errmsg_set(0, err, errlen,
					"token " TOK_FMT " appears twice in the "
					"rank order", TOK_ARGS(p, len));
			return -1;
		}
		out.given |= AXIS_BIT(a);
		out.axis[n++] = (enum lay_axis)a;
		if (!q)
			break;
		p = q + 1;
	}
	if (!(out.given & AXIS_BIT(LAY_GTP))) {
		errmsg_set(0, err, errlen,
			"the rank order has no gtp token; it must say where "
			"GTP ranks sit, e.g. \"%s\"", LAY_DEFAULT_ORDER);
		return -1;
	}
	/* Megatron appends each missing axis; their place only matters for
	 * axes of size > 1, which Megatron refuses (see struct lay_order). */
	for (a = 0; a < LAY_NAXES; a++)
		if (!(out.given & AXIS_BIT(a)))
			out.axis[n++] = (enum lay_axis)a;
	*o = out;
	return 0;
}

int lay_order_valid(const struct lay_order *o)
{
	unsigned seen = 0;
	int i;

	for (i = 0; i < LAY_NAXES; i++) {
		if ((unsigned)o->axis[i] >= LAY_NAXES ||
		    (seen & AXIS_BIT(o->axis[i])))
			return 0;
		seen |= AXIS_BIT(o->axis[i]);
	}
	return 1;
}

const char *lay_order_str(const struct lay_order *o, char *buf, size_t len)
{
	size_t at = 0;
	int i;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (i = 0; i < LAY_NAXES; i++) {
		int w = snprintf(buf + at, len - at, "%s%s", i ? "-" : "",
				 lay_axis_name(o->axis[i]));

		if (w < 0 || (size_t)w >= len - at)
			break;
		at += (size_t)w;
	}
	return buf;
}

void lay_order_expert(const struct lay_order *o, struct lay_order *out)
{
	struct lay_order e = { .given = o->given };
	int i, n = 0;

	for (i = 0; i < LAY_NAXES; i++) {
		if (o->axis[i] == LAY_GTP)
			continue;
		e.axis[n++] = o->axis[i];
		if (o->axis[i] == LAY_EP)
			e.axis[n++] = LAY_GTP;
	}
	*out = e;
}

/* ---- grids ------------------------------------------------------------ */

void lay_grid_init(struct lay_grid *g, const struct lay_order *o,
		   const long long size[LAY_NAXES])
{
	long long s = 1;
	int i;

	g->order = *o;
	for (i = 0; i < LAY_NAXES; i++)
		g->size[i] = size[i];
	for (i = 0; i < LAY_NAXES; i++) {
		enum lay_axis a = o->axis[i];

		g->stride[a] = s;
		s *= size[a];
	}
	g->world = s;
}

long long lay_rank(const struct lay_grid *g, const long long coord[LAY_NAXES])
{
	long long r = 0;
	int a;

	for (a = 0; a < LAY_NAXES; a++)
		r += coord[a] * g->stride[a];
	return r;
}

void lay_coords(const struct lay_grid *g, long long rank,
		long long coord[LAY_NAXES])
{
	int a;

	for (a = 0; a < LAY_NAXES; a++)
		coord[a] = (rank / g->stride[a]) % g->size[a];
}

void lay_coords_next(const struct lay_grid *g, long long coord[LAY_NAXES])
{
	for (int i = 0; i < LAY_NAXES; i++) {
		enum lay_axis a = g->order.axis[i];

		if (++coord[a] < g->size[a])
			return;
		coord[a] = 0;
	}
}

/* ---- groups ----------------------------------------------------------- */

#define K(name, axes, expert, meaning) { name, axes, expert, meaning }
#define B(a) AXIS_BIT(LAY_##a)

static const struct lay_group_kind kinds[] = {
	K("tp", B(TP), 0,
	  "tensor parallel: the ranks that split each layer (Megatron tp)"),
	K("cp", B(CP), 0,
	  "context parallel: the ranks that split one sequence (cp)"),
	K("gtp", B(GTP), 0,
	  "GTP weight shards: each holds 1/G of a TP slice and all-gathers "
	  "it (gtp_remat)"),
	K("pp", B(PP), 0, "pipeline stages of one model copy (pp)"),
	K("dp_replicate", B(DP), 0,
	  "model copies: gradient reduction of GTP-sharded weights "
	  "(dp, with_gtp_remat=False)"),
	K("dp", B(GTP) | B(DP), 0,
	  "data lanes: Megatron's default data-parallel group, for batch "
	  "split and loss (gtp_remat-dp)"),
	K("dp_cp", B(GTP) | B(DP) | B(CP), 0,
	  "lanes x context: loss token counts and GTP-replicated gradients "
	  "(gtp_remat-dp-cp)"),
	K("dp_cp_replicate", B(DP) | B(CP), 0,
	  "copies x context: gradient reduction after the GTP "
	  "reduce-scatter (dp-cp)"),
	K("mp", B(TP) | B(PP), 0,
	  "one model copy's TP x PP ranks, GTP excluded (tp-pp)"),
	K("mp_gtp", B(TP) | B(GTP) | B(PP), 0,
	  "Megatron's model-parallel group, GTP included (tp-gtp_remat-pp)"),
	K("ep", B(EP), 1,
	  "expert parallel: the ranks that hold different experts (ep)"),
	K("etp", B(TP), 1, "expert tensor parallel (expert grid tp)"),
	K("egtp", B(GTP), 1,
	  "expert GTP weight shards (expert grid gtp_remat)"),
	K("edp", B(DP), 1, "expert model copies (expert grid dp)"),
	K("edp_gtp", B(GTP) | B(DP), 1,
	  "expert data lanes (expert grid gtp_remat-dp)"),
};

#undef K
#undef B

size_t lay_group_kind_count(void)
{
	return sizeof(kinds) / sizeof(kinds[0]);
}

const struct lay_group_kind *lay_group_kind_at(size_t i)
{
	return i < lay_group_kind_count() ? &kinds[i] : NULL;
}

const struct lay_group_kind *lay_group_kind_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < lay_group_kind_count(); i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

long long lay_group_size(const struct lay_grid *g, unsigned axes)
{
	long long n = 1;
	int a;

	for (a = 0; a < LAY_NAXES; a++)
		if (axes & AXIS_BIT(a))
			n *= g->size[a];
	return n;
}

long long lay_group_count(const struct lay_grid *g, unsigned axes)
{
	return g->world / lay_group_size(g, axes);
}

/* generate_masked_orthogonal_rank_groups: the group index gives the digits
 * of the axes outside the group, the member index those inside it, both
 * with the earliest axis in the order least significant. */
long long lay_group_member(const struct lay_grid *g, unsigned axes,
			   long long index, long long i)
{
	long long r = 0;
	int k;

	for (k = 0; k < LAY_NAXES; k++) {
		enum lay_axis a = g->order.axis[k];
		long long *digits = (axes & AXIS_BIT(a)) ? &i : &index;

		r += (*digits % g->size[a]) * g->stride[a];
		*digits /= g->size[a];
	}
	return r;
}

void lay_group_of_coords(const struct lay_grid *g, unsigned axes,
			 const long long coord[LAY_NAXES], long long *index,
			 long long *rank_in_group)
{
	long long idx = 0, rig = 0, mi = 1, mu = 1;
	int k;

	for (k = 0; k < LAY_NAXES; k++) {
		enum lay_axis a = g->order.axis[k];

		if (axes & AXIS_BIT(a)) {
			rig += coord[a] * mi;
			mi *= g->size[a];
		} else {
			idx += coord[a] * mu;
			mu *= g->size[a];
		}
	}
	if (index)
		*index = idx;
	if (rank_in_group)
		*rank_in_group = rig;
}

void lay_group_of(const struct lay_grid *g, unsigned axes, long long rank,
		  long long *index, long long *rank_in_group)
{
	long long c[LAY_NAXES];

	lay_coords(g, rank, c);
	lay_group_of_coords(g, axes, c, index, rank_in_group);
}
