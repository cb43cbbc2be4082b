/*
 * classes: colour refinement over the plan's group kinds (see classes.h).
 */
#include "classes.h"

#include "program.h"

#include <stdlib.h>
#include <string.h>

/* splitmix64's finaliser: a bijective 64-bit mix. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

int cls_init(struct cls_part *cp, long long world)
{
	memset(cp, 0, sizeof(*cp));
	cp->world = world;
	cp->colour = calloc(world > 0 ? (size_t)world : 1, sizeof(uint32_t));
	return cp->colour ? 0 : -1;
}

void cls_release(struct cls_part *cp)
{
	free(cp->colour);
	free(cp->count);
	free(cp->rep);
	memset(cp, 0, sizeof(*cp));
}

const struct lay_grid *cls_grid(const struct plan *p, unsigned kind)
{
	const struct lay_group_kind *gk = lay_group_kind_at(kind);

	return gk && gk->expert ? &p->expert : &p->dense;
}

/* ---- signatures -> dense ids ------------------------------------------ */

struct idmap {
	uint64_t *key;
	uint32_t *val; /* UINT32_MAX: empty */
	size_t cap, n;
};

static int idmap_init(struct idmap *m, size_t cap)
{
	m->cap = cap;
	m->n = 0;
	m->key = malloc(cap * sizeof(*m->key));
	m->val = malloc(cap * sizeof(*m->val));
	if (!m->key || !m->val)
		return -1;
	memset(m->val, 0xff, cap * sizeof(*m->val));
	return 0;
}

static void idmap_release(struct idmap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static uint32_t *idmap_slot(struct idmap *m, uint64_t key)
{
	size_t i = (size_t)(key & (m->cap - 1));

	while (m->val[i] != UINT32_MAX && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	m->key[i] = key;
	return &m->val[i];
}

static int idmap_grow(struct idmap *m)
{
	struct idmap big;

	if (idmap_init(&big, m->cap * 2)) {
		idmap_release(&big);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->val[i] != UINT32_MAX)
			*idmap_slot(&big, m->key[i]) = m->val[i];
	big.n = m->n;
	idmap_release(m);
	*m = big;
	return 0;
}

/* Id of `key`, a new one (n) when first seen. UINT32_MAX when out of
 * memory. */
static uint32_t idmap_get(struct idmap *m, uint64_t key, int *fresh)
{
	uint32_t *v;

	if (m->n * 2 >= m->cap && idmap_grow(m))
		return UINT32_MAX;
	v = idmap_slot(m, key);
	*fresh = *v == UINT32_MAX;
	if (*fresh)
		*v = (uint32_t)m->n++;
	return *v;
}

/* ---- group geometry --------------------------------------------------- */

/* One group kind: the group index and the rank inside the group as dot
 * products of a rank's coordinates (layout.h's enumeration). */
struct kgeo {
	unsigned kind;
	int expert;
	int ordered;       /* pp: the position in the group matters */
	long long umul[LAY_NAXES], mmul[LAY_NAXES];
	long long groups;
	uint64_t *sig;
};

static void kgeo_init(struct kgeo *k, const struct lay_grid *g,
		      unsigned axes)
{
	long long mi = 1, mu = 1;

	for (int i = 0; i < LAY_NAXES; i++) {
		enum lay_axis a = g->order.axis[i];

		k->umul[a] = k->mmul[a] = 0;
		if (axes & (1u << a)) {
			k->mmul[a] = mi;
			mi *= g->size[a];
		} else {
			k->umul[a] = mu;
			mu *= g->size[a];
		}
	}
	k->groups = mu;
}

/* Coordinates of consecutive ranks, without dividing. */
struct odo {
	const struct lay_grid *g;
	long long c[LAY_NAXES];
};

static void odo_start(struct odo *o, const struct lay_grid *g)
{
	o->g = g;
	memset(o->c, 0, sizeof(o->c));
}

static void odo_next(struct odo *o)
{
	for (int i = 0; i < LAY_NAXES; i++) {
		enum lay_axis a = o->g->order.axis[i];

		if (++o->c[a] < o->g->size[a])
			return;
		o->c[a] = 0;
	}
}

static void locate(const struct kgeo *k, const long long *c, long long *idx,
		   long long *rig)
{
	long long x = 0, y = 0;

	for (int a = 0; a < LAY_NAXES; a++) {
		x += c[a] * k->umul[a];
		y += c[a] * k->mmul[a];
	}
	*idx = x;
	*rig = y;
}

/* ---- refinement ------------------------------------------------------- */

/* Renumbers colours 0..n-1 by lowest rank, filling count and rep. */
static int compress(struct cls_part *cp, const uint64_t *h64,
		    const uint32_t *h32, size_t *n_out)
{
	struct idmap m;
	long long *count = NULL, *rep = NULL;
	size_t cap = 0;
	int rc = -1;
	uint64_t last = 0;
	uint32_t id = UINT32_MAX;

	if (idmap_init(&m, 1024))
		goto out;
	for (long long r = 0; r < cp->world; r++) {
		int fresh = 0;
		uint64_t key = h64 ? h64[r] : h32[r];

		/* neighbours mostly share a colour: look up runs once */
		if (id == UINT32_MAX || key != last)
			id = idmap_get(&m, key, &fresh);
		last = key;
		if (id == UINT32_MAX)
			goto out;
		if (fresh) {
			if (id >= cap) {
				size_t nc = cap ? cap * 2 : 64;
				long long *c2 = realloc(count, nc * sizeof(*c2));

				if (!c2)
					goto out;
				count = c2;
				c2 = realloc(rep, nc * sizeof(*c2));
				if (!c2)
					goto out;
				rep = c2;
				cap = nc;
			}
			count[id] = 0;
			rep[id] = r;
		}
		count[id]++;
		cp->colour[r] = id;
	}
	free(cp->count);
	free(cp->rep);
	cp->count = count;
	cp->rep = rep;
	count = rep = NULL;
	*n_out = m.n;
	rc = 0;
out:
	free(count);
	free(rep);
	idmap_release(&m);
	return rc;
}

static int one_round(struct cls_part *cp, struct kgeo *k, size_t nk,
		     const struct plan *p, uint64_t *h)
{
	struct odo od, oe;

	for (size_t j = 0; j < nk; j++)
		memset(k[j].sig, 0, (size_t)k[j].groups * sizeof(uint64_t));
	/* pass 1: each group's signature, the sum of its members' mixes */
	odo_start(&od, &p->dense);
	odo_start(&oe, &p->expert);
	for (long long r = 0; r < cp->world; r++) {
		uint64_t c = cp->colour[r];

		for (size_t j = 0; j < nk; j++) {
			long long idx, rig;

			locate(&k[j], k[j].expert ? oe.c : od.c, &idx, &rig);
			k[j].sig[idx] += mix(k[j].ordered ?
				c ^ ((uint64_t)(rig + 1) << 32) : c);
		}
		odo_next(&od);
		if (p->expert_grid_ok)
			odo_next(&oe);
	}
	/* pass 2: each rank's new signature */
	odo_start(&od, &p->dense);
	odo_start(&oe, &p->expert);
	for (long long r = 0; r < cp->world; r++) {
		uint64_t x = mix(cp->colour[r]);

		for (size_t j = 0; j < nk; j++) {
			long long idx, rig;

			locate(&k[j], k[j].expert ? oe.c : od.c, &idx, &rig);
			x = mix(x ^ (k[j].sig[idx] + k[j].kind));
			if (k[j].ordered)
				x = mix(x ^ ((uint64_t)rig << 40));
		}
		h[r] = x;
		odo_next(&od);
		if (p->expert_grid_ok)
			odo_next(&oe);
	}
	return 0;
}

/* Whether the initial colouring is already equitable because it is a
 * one-to-one function of the pipeline stage, with every rank coloured
 * (called): a group of a kind without the pp axis then holds one stage,
 * so one colour; a group of a kind with it holds every stage alike, and
 * each stage its own colour, so the stage-ordered tuple plus the own
 * stage says nothing the colour does not. This is the common case (the
 * 4-D layout calls everyone), and it saves the O(W x kinds) rounds. */
static int stage_equitable(const struct cls_part *cp, const struct plan *p)
{
	long long pp = p->dense.size[LAY_PP], stride = p->dense.stride[LAY_PP];
	uint32_t *by_stage = calloc((size_t)pp, sizeof(*by_stage));
	int ok = by_stage != NULL;
	long long st = 0, step = 0;

	/* r's stage r / stride % pp, counted along instead of divided */
	for (long long r = 0; ok && r < cp->world; r++) {
		uint32_t c = cp->colour[r];

		if (c == 0 || (by_stage[st] && by_stage[st] != c))
			ok = 0;
		by_stage[st] = c;
		if (++step == stride) {
			step = 0;
			st = st + 1 == pp ? 0 : st + 1;
		}
	}
	for (long long a = 0; ok && a < pp; a++)
		for (long long b = a + 1; ok && b < pp; b++)
			ok = by_stage[a] != by_stage[b];
	free(by_stage);
	return ok;
}

int cls_refine(struct cls_part *cp, const struct plan *p, uint64_t kinds)
{
	struct kgeo k[64];
	size_t nk = 0, n = 0, prev;
	uint64_t *h = NULL;
	int rc = -1;

	for (unsigned i = 0; i < lay_group_kind_count() && i < 64; i++) {
		const struct lay_group_kind *gk = lay_group_kind_at(i);
		const struct lay_grid *g = cls_grid(p, i);

		if (!(kinds & (1ull << i)) || (gk->expert && !p->expert_grid_ok))
			continue;
		/* single ranks tell ranks nothing apart, and neither does
		 * one group of the whole world, unless positions matter */
		if (lay_group_size(g, gk->axes) == 1 ||
		    (lay_group_count(g, gk->axes) == 1 &&
		     strcmp(gk->name, "pp")))
			continue;
		k[nk].kind = i;
		k[nk].expert = gk->expert;
		k[nk].ordered = !strcmp(gk->name, "pp");
		kgeo_init(&k[nk], g, gk->axes);
		k[nk].sig = malloc((size_t)k[nk].groups * sizeof(uint64_t));
		if (!k[nk].sig)
			goto out;
		nk++;
	}
	/* (on the initial colours, where 0 still means "not called") */
	if (p->dense.world == cp->world && stage_equitable(cp, p) &&
	    (!p->expert_grid_ok ||
	     p->expert.stride[LAY_PP] == p->dense.stride[LAY_PP])) {
		/* equitable already: no rounds needed */
		for (size_t j = 0; j < nk; j++)
			free(k[j].sig);
		nk = 0;
	}
	if (compress(cp, NULL, cp->colour, &n))
		goto out;
	h = malloc((cp->world > 0 ? (size_t)cp->world : 1) * sizeof(*h));
	if (!h)
		goto out;
	for (cp->rounds = 0; nk; ) {
		if (cp->rounds == CLS_MAX_ROUNDS)
			goto out;
		cp->rounds++;
		prev = n;
		one_round(cp, k, nk, p, h);
		if (compress(cp, h, NULL, &n))
			goto out;
		/* the new colouring refines the old (the old colour is part
		 * of every signature), so an equal count means no change */
		if (n == prev)
			break;
	}
	cp->n = n;
	rc = 0;
out:
	free(h);
	for (size_t j = 0; j < nk; j++)
		free(k[j].sig);
	return rc;
}

/* ---- compositions ----------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Megatron's embedding group: the first and the last member of rank's pp
 * group (one rank when PP is 1). */
static int embedding_comp(const struct cls_part *cp, const struct plan *p,
			  long long rank, struct cls_comp **out, size_t *n)
{
	const struct lay_group_kind *gk = lay_group_kind_find("pp");
	long long idx, size;
	uint32_t a, b;

	if (!gk)
		return -1;
	size = lay_group_size(&p->dense, gk->axes);
	lay_group_of(&p->dense, gk->axes, rank, &idx, NULL);
	a = cp->colour[lay_group_member(&p->dense, gk->axes, idx, 0)];
	b = cp->colour[lay_group_member(&p->dense, gk->axes, idx, size - 1)];
	*out = malloc(2 * sizeof(**out));
	if (!*out)
		return -1;
	if (size == 1 || a == b) {
		(*out)[0] = (struct cls_comp){ a, size == 1 ? 1 : 2 };
		*n = 1;
	} else {
		(*out)[0] = (struct cls_comp){ a < b ? a : b, 1 };
		(*out)[1] = (struct cls_comp){ a < b ? b : a, 1 };
		*n = 2;
	}
	return 0;
}

int cls_group_comp(const struct cls_part *cp, const struct plan *p,
		   unsigned kind, long long rank, struct cls_comp **out,
		   size_t *n)
{
	const struct lay_group_kind *gk = lay_group_kind_at(kind);
	struct cls_comp *v;
	uint32_t *c;
	long long size, idx;
	size_t m = 0;

	*out = NULL;
	*n = 0;
	if (kind == PROG_GK_EMBEDDING)
		return embedding_comp(cp, p, rank, out, n);
	if (!gk || (gk->expert && !p->expert_grid_ok)) {
		/* the whole world: the class counts */
		v = malloc((cp->n ? cp->n : 1) * sizeof(*v));
		if (!v)
			return -1;
		for (size_t i = 0; i < cp->n; i++)
			v[i] = (struct cls_comp){ (uint32_t)i, cp->count[i] };
		*out = v;
		*n = cp->n;
		return 0;
	}
	size = lay_group_size(cls_grid(p, kind), gk->axes);
	lay_group_of(cls_grid(p, kind), gk->axes, rank, &idx, NULL);
	c = malloc((size_t)size * sizeof(*c));
	v = malloc((size_t)size * sizeof(*v));
	if (!c || !v) {
		free(c);
		free(v);
		return -1;
	}
	for (long long i = 0; i < size; i++)
		c[i] = cp->colour[lay_group_member(cls_grid(p, kind), gk->axes,
						   idx, i)];
	qsort(c, (size_t)size, sizeof(*c), cmp_u32);
	for (long long i = 0; i < size; i++) {
		if (m && v[m - 1].cls == c[i])
			v[m - 1].n++;
		else
			v[m++] = (struct cls_comp){ c[i], 1 };
	}
	free(c);
	*out = v;
	*n = m;
	return 0;
}
