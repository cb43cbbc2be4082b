/*
 * rt_plan: reading and checking the plan JSON (see rt_plan.h).
 */
#include "rt_plan.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "rt_err.h"

#define BIT(a) (1u << (unsigned)(a))

static const struct {
	const char *name;
	unsigned axes;
} kinds[RT_NKINDS] = {
	[RT_K_TP] = { "tp", BIT(RT_TP) },
	[RT_K_CP] = { "cp", BIT(RT_CP) },
	[RT_K_GTP] = { "gtp", BIT(RT_GTP) },
	[RT_K_DP] = { "dp", BIT(RT_GTP) | BIT(RT_DP) },
	[RT_K_DP_CP] = { "dp_cp", BIT(RT_GTP) | BIT(RT_DP) | BIT(RT_CP) },
	[RT_K_DP_CP_REPLICATE] = { "dp_cp_replicate", BIT(RT_DP) | BIT(RT_CP) },
	[RT_K_PP] = { "pp", BIT(RT_PP) },
	[RT_K_EMB] = { "embedding", BIT(RT_PP) },
	[RT_K_WORLD] = { "world", 0 },
};

/* The plan's names of the axes, as keys of a rank object. */
static const char *const axis_key[RT_NAXES] = {
	[RT_TP] = "tp", [RT_CP] = "cp", [RT_GTP] = "gtp",
	[RT_DP] = "dp_replicate", [RT_PP] = "pp",
};

const char *rt_kind_name(enum rt_kind k)
{
	return (unsigned)k < RT_NKINDS ? kinds[k].name : "?";
}

void rt_plan_init(struct rt_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->me = -1;
}

void rt_plan_release(struct rt_plan *p)
{
	free(p->ranks);
	for (int k = 0; k < RT_NKINDS; k++)
		free(p->group[k].members);
	rt_plan_init(p);
}

/* obj[key] as an integer in [min, max]; a null gives *out = 0 when
 * null_ok. Reports and returns RT_EPLAN otherwise. */
static int get_int(const json_t *obj, const char *where, const char *key,
		   long long min, long long max, int null_ok, long long *out)
{
	json_t *v = json_object_get(obj, key);
	char got[32];

	if (v && json_is_null(v) && null_ok) {
		*out = 0;
		return 0;
	}
	if (json_is_integer(v) && json_integer_value(v) >= min &&
	    json_integer_value(v) <= max) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_integer(v))
		snprintf(got, sizeof(got), "%lld",
			 (long long)json_integer_value(v));
	else
		snprintf(got, sizeof(got), "%s", !v ? "missing" :
			 json_is_null(v) ? "null" : "not an integer");
	return rt_error_once(RT_EPLAN, "plan: %s%s%s is %s; want an integer "
			     "in [%lld, %lld]", where, *where ? "." : "", key,
			     got, min, max);
}

static int read_sizes(struct rt_plan *p, const json_t *root)
{
	const json_t *s = json_object_get(root, "sizes");
	long long v, prod = 1;
	int rc;

	if (!json_is_object(s))
		return rt_error_once(RT_EPLAN, "plan: no 'sizes' object");
	if ((rc = get_int(root, "", "world_size", 1, RT_MAX_WORLD, 0, &v)))
		return rc;
	p->world = (int)v;
	for (int a = 0; a < RT_NAXES; a++) {
		if ((rc = get_int(s, "sizes", axis_key[a], 1, RT_MAX_WORLD, 0,
				  &v)))
			return rc;
		p->size[a] = (int)v;
		/* each size <= RT_MAX_WORLD: stop past the world's bound
		 * before five of them overflow */
		prod = prod > RT_MAX_WORLD ? prod : prod * v;
	}
	if ((rc = get_int(s, "sizes", "dp", 1, RT_MAX_WORLD, 0, &v)))
		return rc;
	p->lanes = (int)v;
	if ((rc = get_int(s, "sizes", "ep", 1, RT_MAX_WORLD, 0, &v)))
		return rc;
	p->ep = (int)v;
	if (prod != p->world ||
	    p->lanes != (long long)p->size[RT_GTP] * p->size[RT_DP])
		return rt_error_once(RT_EPLAN, "plan: sizes tp %d x cp %d x gtp "
				     "%d x dp_replicate %d x pp %d do not make "
				     "the world of %d ranks with %d lanes",
				     p->size[RT_TP], p->size[RT_CP],
				     p->size[RT_GTP], p->size[RT_DP],
				     p->size[RT_PP], p->world, p->lanes);
	return 0;
}

/* rank_order: tokens separated by '-', leftmost fastest; ep is dropped
 * (its size is 1 on the dense grid), gtp_remat is gtp. */
static int read_order(struct rt_plan *p, const json_t *root)
{
	const char *s = json_string_value(json_object_get(root, "rank_order"));
	char buf[128], *tok, *save = NULL;
	unsigned seen = 0;
	int n = 0;

	if (!s || strlen(s) >= sizeof(buf))
		return rt_error_once(RT_EPLAN, "plan: no usable 'rank_order'");
	strcpy(buf, s);
	for (tok = strtok_r(buf, "-", &save); tok;
	     tok = strtok_r(NULL, "-", &save)) {
		int a = -1;

		if (!strcmp(tok, "ep"))
			continue;
		if (!strcmp(tok, "tp"))
			a = RT_TP;
		else if (!strcmp(tok, "cp"))
			a = RT_CP;
		else if (!strcmp(tok, "gtp") || !strcmp(tok, "gtp_remat"))
			a = RT_GTP;
		else if (!strcmp(tok, "dp"))
			a = RT_DP;
		else if (!strcmp(tok, "pp"))
			a = RT_PP;
		if (a < 0 || (seen & BIT(a)))
			return rt_error_once(RT_EPLAN, "plan: rank_order '%s' "
					     "has an unknown or repeated axis "
					     "'%s'", s, tok);
		seen |= BIT(a);
		p->order[n++] = a;
	}
	if (n != RT_NAXES)
		return rt_error_once(RT_EPLAN, "plan: rank_order '%s' does not "
				     "name tp, cp, gtp, dp and pp", s);
	return 0;
}

/* Mixed-radix number of coordinates c on `axes`, earliest axis in the
 * order least significant (Megatron's group enumeration). */
static long long radix(const struct rt_plan *p, const int *c, unsigned axes)
{
	long long v = 0, w = 1;

	for (int i = 0; i < RT_NAXES; i++) {
		int a = p->order[i];

		if (axes & BIT(a)) {
			v += w * c[a];
			w *= p->size[a];
		}
	}
	return v;
}

static int read_ranks(struct rt_plan *p, const json_t *root)
{
	const json_t *arr = json_object_get(root, "ranks");
	const unsigned all = BIT(RT_NAXES) - 1;
	int rc;

	if (!json_is_array(arr) || json_array_size(arr) != (size_t)p->world)
		return rt_error_once(RT_EPLAN, "plan: 'ranks' must list the %d "
				     "ranks of the world", p->world);
	p->ranks = calloc((size_t)p->world, sizeof(*p->ranks));
	if (!p->ranks)
		return rt_error(RT_ENOMEM, "out of memory reading the plan");
	for (int r = 0; r < p->world; r++) {
		const json_t *o = json_array_get(arr, (size_t)r);
		struct rt_rank *rk = &p->ranks[r];
		char where[32];
		long long v;

		snprintf(where, sizeof(where), "ranks[%d]", r);
		if ((rc = get_int(o, where, "rank", r, r, 0, &v)))
			return rc;
		for (int a = 0; a < RT_NAXES; a++) {
			if ((rc = get_int(o, where, axis_key[a], 0,
					  p->size[a] - 1, 0, &v)))
				return rc;
			rk->c[a] = (int)v;
		}
		if ((rc = get_int(o, where, "lane", 0, p->lanes - 1, 0, &v)))
			return rc;
		rk->lane = (int)v;
		if ((rc = get_int(o, where, "node", 0, RT_MAX_WORLD, 0, &v)))
			return rc;
		rk->node = (int)v;
		if ((rc = get_int(o, where, "local_rank", 0, RT_MAX_WORLD, 0,
				  &v)))
			return rc;
		rk->local_rank = (int)v;
		/* the coordinates give the rank under rank_order */
		if (radix(p, rk->c, all) != r)
			return rt_error_once(RT_EPLAN, "plan: rank %d has "
				"coordinates tp %d cp %d gtp %d dp %d pp %d, "
				"which are rank %lld under the rank order",
				r, rk->c[RT_TP], rk->c[RT_CP], rk->c[RT_GTP],
				rk->c[RT_DP], rk->c[RT_PP],
				radix(p, rk->c, all));
	}
	return 0;
}

/* One kind's groups: they partition the world, have the size the kind's
 * axes give, and rank `me`'s group is the one its coordinates name. */
static int read_kind(struct rt_plan *p, const json_t *groups, enum rt_kind k,
		     unsigned char *seen)
{
	const char *name = kinds[k].name;
	unsigned axes = kinds[k].axes, rest = (BIT(RT_NAXES) - 1) & ~axes;
	const json_t *list = json_object_get(groups, name);
	const struct rt_rank *me = &p->ranks[p->me];
	struct rt_group *mine = &p->group[k];
	long long size = 1, count;
	size_t i, j;

	for (int a = 0; a < RT_NAXES; a++)
		if (axes & BIT(a))
			size *= p->size[a];
	count = p->world / size;
	if (!json_is_array(list) || json_array_size(list) != (size_t)count)
		return rt_error_once(RT_EPLAN, "plan: groups.%s must hold %lld "
				     "groups of %lld ranks", name, count, size);
	memset(seen, 0, (size_t)p->world);
	for (i = 0; i < (size_t)count; i++) {
		const json_t *g = json_array_get(list, i);
		int has_me = 0;

		if (!json_is_array(g) || json_array_size(g) != (size_t)size)
			return rt_error_once(RT_EPLAN, "plan: groups.%s[%zu] "
					     "does not have %lld ranks", name, i,
					     size);
		for (j = 0; j < (size_t)size; j++) {
			json_t *v = json_array_get(g, j);
			long long r = json_integer_value(v);

			if (!json_is_integer(v) || r < 0 || r >= p->world ||
			    seen[r]++)
				return rt_error_once(RT_EPLAN, "plan: groups.%s"
					"[%zu] has a rank that is not in the "
					"world or is listed twice", name, i);
			has_me |= r == p->me;
		}
		if (!has_me)
			continue;
		mine->index = (long long)i;
		mine->n = (int)size;
		mine->members = malloc((size_t)size * sizeof(int));
		if (!mine->members)
			return rt_error(RT_ENOMEM, "out of memory");
		for (j = 0; j < (size_t)size; j++)
			mine->members[j] = (int)json_integer_value(
				json_array_get(g, j));
	}
	/* each member shares my coordinates off the kind's axes and sits at
	 * the place its own coordinates on them give */
	if (mine->index != radix(p, me->c, rest))
		return rt_error(RT_EPLAN, "plan: my %s group is number %lld, "
				"but my coordinates say %lld", name,
				mine->index, radix(p, me->c, rest));
	for (j = 0; j < (size_t)size; j++) {
		const struct rt_rank *m = &p->ranks[mine->members[j]];

		for (int a = 0; a < RT_NAXES; a++)
			if (!(axes & BIT(a)) && m->c[a] != me->c[a])
				return rt_error(RT_EPLAN, "plan: rank %d is in "
					"my %s group but its %s coordinate is "
					"%d, mine is %d", mine->members[j],
					name, axis_key[a], m->c[a], me->c[a]);
		if (radix(p, m->c, axes) != (long long)j)
			return rt_error(RT_EPLAN, "plan: rank %d is at place "
					"%zu of my %s group, its coordinates "
					"say %lld", mine->members[j], j, name,
					radix(p, m->c, axes));
		if (mine->members[j] == p->me)
			mine->pos = (int)j;
	}
	return 0;
}

/* Megatron's embedding group (megatron/core/parallel_state.py): the first
 * and the last rank of my pipeline, numbered as the pipeline; a middle
 * stage (and every rank when PP is 1) is alone in its own. */
static int embedding_group(struct rt_plan *p)
{
	const struct rt_group *pp = &p->group[RT_K_PP];
	struct rt_group *e = &p->group[RT_K_EMB];
	int end = pp->pos == 0 || pp->pos == pp->n - 1;

	e->index = pp->index;
	e->n = pp->n > 1 && end ? 2 : 1;
	e->pos = e->n == 2 && pp->pos ? 1 : 0;
	e->members = malloc(2 * sizeof(int));
	if (!e->members)
		return rt_error(RT_ENOMEM, "out of memory");
	e->members[0] = e->n == 2 ? pp->members[0] : p->me;
	e->members[1] = pp->members[pp->n - 1];
	return 0;
}

static int read_groups(struct rt_plan *p, const json_t *root)
{
	const json_t *groups = json_object_get(root, "groups");
	unsigned char *seen;
	int rc = 0;

	if (!json_is_object(groups))
		return rt_error_once(RT_EPLAN, "plan: no 'groups' object");
	seen = malloc((size_t)p->world);
	if (!seen)
		return rt_error(RT_ENOMEM, "out of memory");
	for (int k = 0; k < RT_K_EMB && !rc; k++)
		rc = read_kind(p, groups, (enum rt_kind)k, seen);
	free(seen);
	if (rc || (rc = embedding_group(p)))
		return rc;
	p->group[RT_K_WORLD].n = p->world;
	p->group[RT_K_WORLD].pos = p->me;
	p->group[RT_K_WORLD].members = malloc((size_t)p->world * sizeof(int));
	if (!p->group[RT_K_WORLD].members)
		return rt_error(RT_ENOMEM, "out of memory");
	for (int r = 0; r < p->world; r++)
		p->group[RT_K_WORLD].members[r] = r;
	if (p->ranks[p->me].lane != p->group[RT_K_DP].pos)
		return rt_error(RT_EPLAN, "plan: my lane is %d, but I am at "
				"place %d of my dp group",
				p->ranks[p->me].lane, p->group[RT_K_DP].pos);
	return 0;
}

/* obj[key] as a boolean into *out; RT_EPLAN when it is not one. */
static int get_bool(const json_t *obj, const char *key, int *out)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_boolean(v))
		return rt_error_once(RT_EPLAN, "plan: runtime.model.%s must be "
				     "true or false", key);
	*out = json_is_true(v);
	return 0;
}

/* runtime.model: the decoder's shape (replaces runtime's sizes). */
static int read_model(struct rt_settings *s, const json_t *o)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	const char *cpc = json_string_value(json_object_get(o,
							    "cp_comm_type"));
	const json_t *th = json_object_get(o, "rope_theta");
	const json_t *eps = json_object_get(o, "norm_eps");
	int rc;

	if (!json_is_object(o))
		return rt_error_once(RT_EPLAN, "plan: no 'runtime.model' object "
				     "(a plan from an older gtplan?); plan the "
				     "config again");
	if ((rc = get_int(o, "runtime.model", "hidden", 1, 1 << 20, 0,
			  &s->hidden)) ||
	    (rc = get_int(o, "runtime.model", "ffn", 1, 1 << 22, 0, &s->ffn)) ||
	    (rc = get_int(o, "runtime.model", "layers", 1, RT_MAX_LAYERS, 0,
			  &s->layers)) ||
	    (rc = get_int(o, "runtime.model", "vocab", 1, 1 << 24, 0,
			  &s->vocab)) ||
	    (rc = get_int(o, "runtime.model", "heads", 1, 1 << 16, 0,
			  &s->heads)) ||
	    (rc = get_int(o, "runtime.model", "kv_heads", 1, 1 << 16, 0,
			  &s->kv_heads)) ||
	    (rc = get_int(o, "runtime.model", "head_dim", 1, 1 << 16, 0,
			  &s->head_dim)) ||
	    (rc = get_bool(o, "tie_embeddings", &s->tie)) ||
	    (rc = get_bool(o, "qkv_bias", &s->qkv_bias)) ||
	    (rc = get_bool(o, "qk_norm", &s->qk_norm)) ||
	    (rc = get_bool(o, "moe", &s->moe)) ||
	    (rc = get_bool(o, "sequence_parallel", &s->sp)))
		return rc;
	/* the pipeline split: null (or absent, an older plan) is unset */
	for (int i = 0; i < 3; i++) {
		static const char *const key[3] = {
			"pp_first_layers", "pp_last_layers",
			"pp_virtual_stages",
		};
		long long *dst[3] = { &s->pp_first, &s->pp_last, &s->vpp };

		*dst[i] = 0;
		if (json_object_get(o, key[i]) &&
		    (rc = get_int(o, "runtime.model", key[i], 1,
				  RT_MAX_LAYERS, 1, dst[i])))
			return rc;
	}
	if (!json_is_number(th) || !(json_number_value(th) > 0) ||
	    !json_is_number(eps) || !(json_number_value(eps) > 0))
		return rt_error_once(RT_EPLAN, "plan: runtime.model.rope_theta "
				     "and norm_eps must be positive numbers");
	if (!cpc)
		return rt_error_once(RT_EPLAN, "plan: runtime.model.cp_comm_type "
				     "must be a string (a plan from an older "
				     "gtplan?); plan the config again");
	snprintf(s->cp_comm, sizeof(s->cp_comm), "%s", cpc);
	s->rope_theta = json_number_value(th);
	s->norm_eps = json_number_value(eps);
	snprintf(s->model_name, sizeof(s->model_name), "%s",
		 name ? name : "?");
	return 0;
}

static int read_runtime(struct rt_plan *p, const json_t *root)
{
	const json_t *o = json_object_get(root, "runtime");
	struct rt_settings *s = &p->rt;
	const json_t *lr;
	const char *dtype;
	int rc;

	if (!json_is_object(o))
		return rt_error_once(RT_EPLAN, "plan: no 'runtime' object (a "
				     "plan from an older gtplan?); plan the "
				     "config again");
	if ((rc = get_int(o, "runtime", "hidden", 1, 1 << 20, 0, &s->hidden)) ||
	    (rc = get_int(o, "runtime", "ffn", 1, 1 << 22, 0, &s->ffn)) ||
	    (rc = get_int(o, "runtime", "layers", 1, RT_MAX_LAYERS, 0,
			  &s->layers)) ||
	    (rc = get_int(o, "runtime", "seq_len", 1, 1 << 22, 0,
			  &s->seq_len)) ||
	    (rc = get_int(o, "runtime", "vocab", 1, 1 << 24, 0, &s->vocab)) ||
	    (rc = get_int(o, "runtime", "seed", 0, 0x7fffffffffffffffLL, 0,
			  &s->seed)) ||
	    (rc = get_int(o, "runtime", "steps", 1, 1 << 30, 0, &s->steps)))
		return rc;
	if ((rc = read_model(s, json_object_get(o, "model"))))
		return rc;
	lr = json_object_get(o, "lr");
	if (!json_is_number(lr) || !(json_number_value(lr) > 0))
		return rt_error_once(RT_EPLAN, "plan: runtime.lr must be a "
				     "positive number");
	s->lr = json_number_value(lr);
	dtype = json_string_value(json_object_get(o, "dtype"));
	if (!dtype || (strcmp(dtype, "fp32") && strcmp(dtype, "bf16")))
		return rt_error_once(RT_EPLAN, "plan: runtime.dtype must be "
				     "fp32 or bf16");
	s->bf16 = !strcmp(dtype, "bf16");
	/* absent in plans of older gtplans: gathered just in time */
	s->prefetch = json_is_true(json_object_get(o, "prefetch"));
	return 0;
}

/* The optional "stack" object (gtplan.stack, when the plan carries it):
 * only refit_gather matters to the runtime (--export). */
static int read_stack(struct rt_plan *p, const json_t *root)
{
	const json_t *o = json_object_get(root, "stack");
	const json_t *v = json_object_get(o, "refit_gather");
	const char *g = json_string_value(v);

	if (!o || !v)
		return 0;
	if (!g || (strcmp(g, "gtp_then_tp") && strcmp(g, "tp_then_gtp") &&
		   strcmp(g, "tp_only")))
		return rt_error_once(RT_EPLAN, "plan: stack.refit_gather must "
				     "be gtp_then_tp, tp_then_gtp or tp_only");
	snprintf(p->refit_gather, sizeof(p->refit_gather), "%s", g);
	return 0;
}

static int read_batch_and_diags(struct rt_plan *p, const json_t *root)
{
	const json_t *b = json_object_get(root, "batch");
	const json_t *d = json_object_get(root, "diagnostics");
	size_t i;
	int rc;

	if (!json_is_object(b))
		return rt_error_once(RT_EPLAN, "plan: no 'batch' object");
	if ((rc = get_int(b, "batch", "global", 1, 1LL << 40, 1,
			  &p->global_batch)) ||
	    (rc = get_int(b, "batch", "micro", 1, 1LL << 40, 1,
			  &p->micro_batch)))
		return rc;
	for (i = 0; json_is_array(d) && i < json_array_size(d); i++) {
		const json_t *x = json_array_get(d, i);
		const char *sev = json_string_value(json_object_get(x,
								    "severity"));

		if (!sev || strcmp(sev, "error"))
			continue;
		if (!p->n_errors++)
			snprintf(p->first_error, sizeof(p->first_error),
				 "%s: %s", json_string_value(
				 json_object_get(x, "code")) ?
				 json_string_value(json_object_get(x, "code")) :
				 "?", json_string_value(json_object_get(
				 x, "message")) ? json_string_value(
				 json_object_get(x, "message")) : "");
	}
	return 0;
}

/* memory.stages[].total: the largest. */
static void read_memory(struct rt_plan *p, const json_t *root)
{
	const json_t *st = json_object_get(json_object_get(root, "memory"),
					   "stages");

	p->mem_per_rank = 0;
	for (size_t i = 0; json_is_array(st) && i < json_array_size(st); i++) {
		json_int_t t = json_integer_value(json_object_get(
			json_array_get(st, i), "total"));

		if (t > p->mem_per_rank)
			p->mem_per_rank = t;
	}
}

/* runtime_estimate: the step and its classes' seconds. */
static void read_estimate(struct rt_plan *p, const json_t *root)
{
	const json_t *e = json_object_get(root, "runtime_estimate");
	const json_t *step = json_object_get(e, "step_s");
	const json_t *v;
	const char *key;
	struct rt_estimate *x = &p->est;

	memset(x, 0, sizeof(*x));
	if (!json_is_number(step) || json_number_value(step) < 0)
		return;
	x->valid = 1;
	x->step_s = json_number_value(step);
	json_object_foreach((json_t *)json_object_get(e, "classes"), key, v) {
		const json_t *t = json_object_get(v, "time_s");

		if (x->n == RT_EST_CLASSES || !json_is_number(t))
			continue;
		snprintf(x->name[x->n], sizeof(x->name[0]), "%s", key);
		x->s[x->n++] = json_number_value(t);
	}
}

/* Whether the driver calls this rank for call `name`: calls[].called_when
 * maps axes to the coordinate a called rank has (the 5-D driver layout
 * calls only index 0 of an axis the call neither shards nor replicates). */
static int read_called(const struct rt_plan *p, const json_t *root,
		       const char *name, char *why, size_t len)
{
	const json_t *calls = json_object_get(root, "calls");
	const struct rt_rank *r = &p->ranks[p->me];

	for (size_t i = 0; json_is_array(calls) && i < json_array_size(calls);
	     i++) {
		const json_t *x = json_array_get(calls, i);
		const json_t *when = json_object_get(x, "called_when");
		const char *key;
		json_t *v;

		if (!json_is_string(json_object_get(x, "name")) ||
		    strcmp(json_string_value(json_object_get(x, "name")), name))
			continue;
		json_object_foreach((json_t *)when, key, v) {
			int a = -1;

			for (int j = 0; j < RT_NAXES; j++)
				if (!strcmp(key, axis_key[j]))
					a = j;
			if (!strcmp(key, "dp"))
				a = RT_DP;
			if (a < 0 || !json_is_integer(v))
				continue;
			if (r->c[a] != json_integer_value(v)) {
				snprintf(why, len, "the driver calls '%s' only "
					 "where %s = %lld, and this rank has "
					 "%s = %d (plan calls[].called_when)",
					 name, key,
					 (long long)json_integer_value(v), key,
					 r->c[a]);
				return 0;
			}
		}
		return 1;
	}
	return 1;
}

int rt_plan_load(struct rt_plan *p, const char *path, int me, int world)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	const char *fmt;
	int rc;

	if (!root && jerr.line < 1)
		return rt_error_once(RT_EIO, "%s", jerr.text);
	if (!root)
		return rt_error_once(RT_EIO, "%s:%d:%d: %s", path, jerr.line,
				     jerr.column, jerr.text);
	fmt = json_string_value(json_object_get(root, "format"));
	if (!fmt || strcmp(fmt, "gtplan-plan/1")) {
		rc = rt_error_once(RT_EPLAN, "%s: not a gtplan plan (format "
				   "'%s', want 'gtplan-plan/1')", path,
				   fmt ? fmt : "none");
		goto out;
	}
	if ((rc = read_sizes(p, root)) || (rc = read_order(p, root)) ||
	    (rc = read_runtime(p, root)) || (rc = read_stack(p, root)) ||
	    (rc = read_batch_and_diags(p, root)))
		goto out;
	if (world != p->world) {
		rc = rt_error_once(RT_EWORLD, "%s is a plan for %d ranks, but "
				   "MPI started %d; run it with mpirun -np %d",
				   path, p->world, world, p->world);
		goto out;
	}
	if (me < 0 || me >= world) {
		rc = rt_error(RT_EUSAGE, "rank %d is not in a world of %d",
			      me, world);
		goto out;
	}
	p->me = me;
	if ((rc = read_ranks(p, root)) || (rc = read_groups(p, root)))
		goto out;
	read_memory(p, root);
	read_estimate(p, root);
	p->train_called = read_called(p, root, "train", p->train_why,
				      sizeof(p->train_why));
	p->logprobs_called = read_called(p, root, "get_logprobs",
					 p->logprobs_why,
					 sizeof(p->logprobs_why));
out:
	json_decref(root);
	return rc;
}
