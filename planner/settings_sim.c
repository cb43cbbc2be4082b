/*
 * settings_sim: the simulator's own keys read once, as written
 * (settings_sim.h).
 */
#include "settings_sim.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"

static void value_init(struct set_value *v)
{
	memset(v, 0, sizeof(*v));
	v->kind = CFG_NULL;
	v->loc = v->key_loc = DIAG_NOLOC;
}

/* The value of node n (NULL: unset). */
static void value_of(struct set_value *v, const struct cfg_node *n)
{
	value_init(v);
	if (!n)
		return;
	v->given = 1;
	v->kind = n->kind;
	v->kind_name = cfg_kind_name(n->kind);
	v->text = n->kind == CFG_STR ? n->text : NULL;
	v->b = n->kind == CFG_BOOL ? n->v.b : 0;
	v->loc = n->loc;
	v->key_loc = n->key_loc;
}

static void list_init(struct set_list *l)
{
	memset(l, 0, sizeof(*l));
	value_init(&l->v);
}

/* gtplan.stack's keys, in struct set_stack. */
static const struct {
	const char *path;
	size_t at;
} stack_keys[] = {
#define K(name) { KEY_STACK #name, offsetof(struct set_stack, name) }
	K(preset), K(rng_state_group), K(replica_group), K(refit_gather),
	K(inference_layout_compare), K(batch_split), K(transformer_engine),
	K(megatron_core_gtp_fixes), K(sharded_replica_group),
	K(optimizer_ckpt_format), K(megatron_lm_7162),
#undef K
};

#define N_STACK_KEYS (sizeof(stack_keys) / sizeof(*stack_keys))

_Static_assert(N_STACK_KEYS * sizeof(struct set_value) ==
	       sizeof(struct set_stack), "every gtplan.stack key is read");

static struct set_value *stack_at(struct set_stack *st, size_t k)
{
	return (struct set_value *)((char *)st + stack_keys[k].at);
}

void settings_sim_init(struct settings_sim *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t k = 0; k < N_STACK_KEYS; k++)
		value_init(stack_at(&s->stack, k));
	value_init(&s->calls.list);
	s->calls.unread = DIAG_NOLOC;
	value_init(&s->rank_order);
	value_init(&s->driver_layout);
	value_init(&s->global_batch);
}

void settings_sim_release(struct settings_sim *s)
{
	free(s->calls.v);
	settings_sim_init(s);
}

static void read_stack(struct set_stack *st, const struct cfg_node *root)
{
	for (size_t k = 0; k < N_STACK_KEYS; k++)
		value_of(stack_at(st, k), cfg_path(root, stack_keys[k].path));
}

/* ---- gtplan.calls ------------------------------------------------------ */

/* An entry's list-valued keys, in struct set_call. */
static const struct {
	const char *key;
	size_t at;
} list_keys[] = {
	{ "sharded", offsetof(struct set_call, sharded) },
	{ "replicated", offsetof(struct set_call, replicated) },
	{ "output", offsetof(struct set_call, output) },
	{ "rank0_only", offsetof(struct set_call, rank0_only) },
};

#define N_LIST_KEYS (sizeof(list_keys) / sizeof(*list_keys))

static struct set_list *list_at(struct set_call *c, size_t k)
{
	return (struct set_list *)((char *)c + list_keys[k].at);
}

/* Items of the list-valued keys of map entry e. */
static size_t items_in(const struct cfg_node *e)
{
	size_t n = 0;

	for (size_t k = 0; k < N_LIST_KEYS; k++) {
		const struct cfg_node *v = cfg_get(e, list_keys[k].key);

		if (v && v->kind == CFG_SEQ)
			n += v->n;
	}
	return n;
}

/* Reads entry e into c; its list items go to *items (advanced). */
static void read_entry(struct set_call *c, const struct cfg_node *e,
		       struct set_value **items)
{
	value_of(&c->entry, e);
	value_of(&c->name, NULL);
	value_of(&c->dispatch, NULL);
	value_of(&c->program, NULL);
	value_of(&c->dummy, NULL);
	value_of(&c->moves_data, NULL);
	for (size_t k = 0; k < N_LIST_KEYS; k++)
		list_init(list_at(c, k));
	if (e->kind != CFG_MAP)
		return;
	value_of(&c->name, cfg_get(e, "name"));
	value_of(&c->dispatch, cfg_get(e, "dispatch"));
	value_of(&c->program, cfg_get(e, "program"));
	value_of(&c->dummy, cfg_get(e, "dummy"));
	value_of(&c->moves_data, cfg_get(e, "moves_data"));
	for (size_t k = 0; k < N_LIST_KEYS; k++) {
		const struct cfg_node *v = cfg_get(e, list_keys[k].key);
		struct set_list *l = list_at(c, k);

		value_of(&l->v, v);
		if (!v || v->kind != CFG_SEQ)
			continue;
		l->items = *items;
		l->n = v->n;
		for (size_t i = 0; i < v->n; i++)
			value_of(&(*items)[i], v->kids[i]);
		*items += v->n;
	}
}

static void read_calls(struct set_calls *c, const struct cfg_node *root)
{
	const struct cfg_node *list = cfg_path(root, KEY_CALLS);
	struct set_value *items;
	size_t n_items = 0;

	value_of(&c->list, list);
	if (!list || list->kind != CFG_SEQ || !list->n)
		return;
	c->n_given = list->n;
	c->n = list->n < SET_CALLS_MAX ? list->n : SET_CALLS_MAX;
	if (list->n > SET_CALLS_MAX)
		c->unread = list->kids[SET_CALLS_MAX]->loc;
	for (size_t i = 0; i < c->n; i++)
		if (list->kids[i]->kind == CFG_MAP)
			n_items += items_in(list->kids[i]);
	/* the entries, then every list item of theirs: one block */
	c->v = calloc(1, c->n * sizeof(*c->v) + n_items * sizeof(*items));
	if (!c->v) {
		c->n = 0;
		c->nomem = 1;
		return;
	}
	items = (struct set_value *)(c->v + c->n);
	for (size_t i = 0; i < c->n; i++)
		read_entry(&c->v[i], list->kids[i], &items);
}

void settings_sim_read(struct settings_sim *s, const struct cfg_node *root)
{
	settings_sim_init(s);
	read_stack(&s->stack, root);
	read_calls(&s->calls, root);
	value_of(&s->rank_order, cfg_path(root, KEY_RANK_ORDER));
	value_of(&s->driver_layout, cfg_path(root, KEY_DRIVER_LAYOUT));
	value_of(&s->global_batch, cfg_path(root, KEY_GLOBAL_BATCH));
}
