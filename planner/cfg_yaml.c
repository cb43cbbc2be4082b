/*
 * cfg_yaml: one YAML file into a cfg tree, through libyaml's event API.
 *
 * We follow what OmegaConf.load() accepts, since NeMo-RL loads with it:
 * PyYAML's SafeLoader (YAML 1.1 implicit types, merge keys `<<`), plus
 * OmegaConf's own refusal of duplicate keys. Events (not the document API)
 * give every alias its own mark and let us bound alias expansion while
 * parsing: an alias is expanded by copying the anchored node, counted
 * against CFG_MAX_ALIAS_EXPAND; an alias to a node that is still open (it
 * contains itself) is refused.
 */
#include "cfg.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct anchor {
	char *name;
	struct cfg_node *node; /* NULL while the anchored node is open */
};

struct frame {
	struct cfg_node *node;
	char *anchor;          /* anchor of this collection, or NULL */
	struct cfg_node *key;  /* maps: pending key scalar, or NULL */
	int merge_key;         /* maps: the pending key is a plain `<<` */
	struct cfg_node *merges; /* maps: values of `<<` keys, in order */
	struct cfg_keyidx idx; /* maps: the keys so far, for duplicates */
};

struct parser {
	yaml_parser_t yp;
	int src;
	struct diag_list *diags;
	struct frame stack[CFG_MAX_DEPTH + 1];
	int depth;
	struct anchor *anchors;
	size_t n_anchors, cap_anchors;
	size_t nodes, expanded;
	struct cfg_node *root;
	int failed;
};

static struct diag_loc mark_loc(const struct parser *p, yaml_mark_t m)
{
	return (struct diag_loc){ p->src, (int)m.line + 1, (int)m.column + 1 };
}

static size_t count_nodes(const struct cfg_node *n)
{
	size_t c = 1;

	for (size_t i = 0; i < n->n; i++)
		c += count_nodes(n->kids[i]);
	return c;
}

static void fail_oom(struct parser *p)
{
	if (!p->failed)
		diag_add(p->diags, "GT103", DIAG_NOLOC, NULL,
			 "out of memory while loading YAML");
	p->failed = 1;
}

static struct anchor *anchor_find(struct parser *p, const char *name)
{
	/* Latest definition wins, as YAML redefinition allows. */
	for (size_t i = p->n_anchors; i-- > 0;)
		if (strcmp(p->anchors[i].name, name) == 0)
			return &p->anchors[i];
	return NULL;
}

static int anchor_open(struct parser *p, const char *name)
{
	if (p->n_anchors == p->cap_anchors) {
		size_t cap = p->cap_anchors ? 2 * p->cap_anchors : 8;
		struct anchor *v = realloc(p->anchors, cap * sizeof(*v));

		if (!v)
			return -1;
		p->anchors = v;
		p->cap_anchors = cap;
	}
	p->anchors[p->n_anchors].name = strdup(name);
	if (!p->anchors[p->n_anchors].name)
		return -1;
	p->anchors[p->n_anchors].node = NULL;
	p->n_anchors++;
	return 0;
}

/* The anchor keeps its own copy of the finished node: the tree may later
 * replace or free the original (duplicate keys, merge keys). A node
 * closes the latest definition of its name still open: an anchor
 * redefined inside the node it names (`&a [ {k: &a 1} ]`) is another
 * definition, closed first. */
static int anchor_close(struct parser *p, const char *name,
			const struct cfg_node *n)
{
	struct anchor *a = NULL;

	for (size_t i = p->n_anchors; i-- > 0 && !a;)
		if (!p->anchors[i].node && strcmp(p->anchors[i].name, name) == 0)
			a = &p->anchors[i];
	if (!a)
		return 0;
	a->node = cfg_clone(n);
	return a->node ? 0 : -1;
}

static void frame_release(struct frame *f)
{
	free(f->anchor);
	cfg_free(f->key);
	cfg_free(f->merges);
	cfg_keyidx_release(&f->idx);
	memset(f, 0, sizeof(*f));
}

/* Applies PyYAML's merge-key rule to a finished map: the merged maps'
 * entries come first (for a list, earlier maps win), then the explicit
 * keys, which replace merged ones in place. */
static int apply_merges(struct parser *p, struct frame *f)
{
	struct cfg_node *map = f->node, *merged;
	struct cfg_node **explicit = map->kids;
	size_t n_explicit = map->n;
	struct cfg_keyidx mi = { 0 }, xi = { 0 };
	int moved = 0; /* map's entries now live in explicit[] */

	merged = cfg_new(CFG_MAP, map->loc);
	if (!merged)
		return -1;
	for (size_t m = f->merges->n; m-- > 0;) {
		struct cfg_node *src = f->merges->kids[m];
		struct cfg_node *list[1] = { src };
		struct cfg_node **maps = list;
		size_t n_maps = 1;

		if (src->kind == CFG_SEQ) {
			maps = src->kids;
			n_maps = src->n;
		}
		for (size_t j = n_maps; j-- > 0;) {
			if (maps[j]->kind != CFG_MAP) {
				struct diag *d = diag_add(p->diags, "GT100",
					maps[j]->loc, NULL,
					"a merge key '<<' needs a mapping or a "
					"list of mappings, not a %s",
					cfg_kind_name(maps[j]->kind));
				diag_hint(d, "write '<<: *anchor' where the "
					  "anchor names a mapping");
				cfg_keyidx_release(&mi);
				cfg_free(merged);
				return 1;
			}
			for (size_t k = 0; k < maps[j]->n; k++) {
				struct cfg_node *c = cfg_clone(maps[j]->kids[k]);

				if (!c || cfg_keyidx_set(&mi, merged, c->key, c))
					goto oom;
			}
		}
	}
	map->kids = NULL;
	map->n = map->cap = 0;
	moved = 1;
	for (size_t i = 0; i < merged->n; i++) {
		struct cfg_node *kid = merged->kids[i];

		merged->kids[i] = NULL;
		if (cfg_keyidx_set(&xi, map, kid->key, kid))
			goto oom;
	}
	for (size_t i = 0; i < n_explicit; i++) {
		struct cfg_node *kid = explicit[i];

		explicit[i] = NULL;
		if (cfg_keyidx_set(&xi, map, kid->key, kid))
			goto oom;
	}
	free(explicit);
	cfg_keyidx_release(&mi);
	cfg_keyidx_release(&xi);
	cfg_free(merged);
	return 0;
oom:
	if (!moved) { /* failed while merging: the map is untouched */
		cfg_keyidx_release(&mi);
		cfg_free(merged);
		return -1;
	}
	for (size_t i = 0; i < n_explicit; i++)
		cfg_free(explicit[i]);
	free(explicit);
	cfg_keyidx_release(&mi);
	cfg_keyidx_release(&xi);
	cfg_free(merged);
	return -1;
}

/* Adds a finished value to the open collection (or makes it the root). */
static int attach(struct parser *p, struct cfg_node *val)
{
	struct frame *f;

	if (p->depth == 0) {
		if (p->root) {
			diag_add(p->diags, "GT100", val->loc, NULL,
				 "more than one YAML document in a config file");
			cfg_free(val);
			return 1;
		}
		p->root = val;
		return 0;
	}
	f = &p->stack[p->depth - 1];
	if (f->node->kind == CFG_SEQ)
		return cfg_append(f->node, val);
	if (!f->key) {
		/* val is a key */
		if (val->kind == CFG_MAP || val->kind == CFG_SEQ) {
			struct diag *d = diag_add(p->diags, "GT100", val->loc,
				NULL, "a mapping key must be a plain value, "
				"not a %s", cfg_kind_name(val->kind));
			diag_hint(d, "config keys are names such as "
				  "'tensor_model_parallel_size'");
			cfg_free(val);
			return 1;
		}
		f->key = val;
		return 0;
	}
	/* val is the value for f->key */
	if (f->merge_key) {
		cfg_free(f->key);
		f->key = NULL;
		f->merge_key = 0;
		if (!f->merges && !(f->merges = cfg_new(CFG_SEQ, val->loc))) {
			cfg_free(val);
			return -1;
		}
		return cfg_append(f->merges, val);
	}
	const char *k = f->key->text ? f->key->text : "null";
	long at = cfg_keyidx_find(&f->idx, f->node, k);
	struct cfg_node *prev = at >= 0 ? f->node->kids[at] : NULL;

	if (prev) {
		struct diag *d = diag_add(p->diags, "GT101", f->key->loc, NULL,
					  "duplicate key '%s'", k);
		diag_note(d, prev->key_loc, "'%s' is first defined here", k);
		diag_hint(d, "delete one of the two; OmegaConf refuses "
			  "duplicate keys");
		p->failed = 1;
	}
	val->key_loc = f->key->loc;
	if (cfg_keyidx_set(&f->idx, f->node, k, val)) {
		cfg_free(f->key);
		f->key = NULL;
		return -1;
	}
	cfg_free(f->key);
	f->key = NULL;
	return 0;
}

/* A scalar with an explicit tag, typed as PyYAML's SafeLoader constructs
 * it: !!float makes an integer a float (`!!float 3` is 3.0), a text the
 * tag cannot read is an error, as in PyYAML. Returns 0, or 1 (reported). */
static int tagged_scalar(struct parser *p, struct cfg_node *n, const char *tag)
{
	static const struct {
		const char *tag;
		enum cfg_kind kind;
	} tags[] = {
		{ YAML_NULL_TAG, CFG_NULL }, { YAML_BOOL_TAG, CFG_BOOL },
		{ YAML_INT_TAG, CFG_INT }, { YAML_FLOAT_TAG, CFG_FLOAT },
	};
	struct diag *d;

	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		if (strcmp(tag, tags[i].tag) != 0)
			continue;
		cfg_scalar_type(n, n->text);
		if (tags[i].kind == CFG_NULL) {
			n->kind = CFG_NULL; /* PyYAML: any text is None */
			return 0;
		}
		if (tags[i].kind == CFG_FLOAT && n->kind == CFG_INT) {
			n->kind = CFG_FLOAT;
			n->v.f = (double)n->v.i;
			return 0;
		}
		if (n->kind == tags[i].kind)
			return 0;
		d = diag_add(p->diags, "GT100", n->loc, NULL,
			     "'%s' is not %s %s, as its tag '%s' says",
			     n->text, tags[i].kind == CFG_INT ? "an" : "a",
			     cfg_kind_name(tags[i].kind), tag);
		diag_hint(d, "remove the tag, or write a value of that type");
		return 1;
	}
	d = diag_add(p->diags, "GT100", n->loc, NULL,
		     "unsupported YAML tag '%s'", tag);
	diag_hint(d, "NeMo-RL loads YAML with a safe loader, which refuses "
		  "tags other than the standard ones; remove it");
	return 1;
}

static struct cfg_node *scalar_node(struct parser *p, const yaml_event_t *e)
{
	const char *text = (const char *)e->data.scalar.value;
	const char *tag = (const char *)e->data.scalar.tag;
	struct cfg_node *n = cfg_new(CFG_STR, mark_loc(p, e->start_mark));

	if (!n)
		return NULL;
	n->text = strdup(text);
	if (!n->text) {
		free(n);
		return NULL;
	}
	if (memchr(text, '\0', e->data.scalar.length)) {
		struct diag *d = diag_add(p->diags, "GT100", n->loc, NULL,
			"a NUL character (\\0) inside a string");
		diag_hint(d, "config values are text; remove the \\0 escape");
		p->failed = 1;
	} else if (tag && strcmp(tag, YAML_STR_TAG) != 0 &&
		   strcmp(tag, "!") != 0) {
		if (tagged_scalar(p, n, tag))
			p->failed = 1;
	} else if (!tag && e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		cfg_scalar_type(n, text);
	} else {
		n->interp = strstr(text, "${") != NULL;
	}
	return n;
}

static int on_alias(struct parser *p, const yaml_event_t *e)
{
	const char *name = (const char *)e->data.alias.anchor;
	struct anchor *a = anchor_find(p, name);
	struct diag_loc loc = mark_loc(p, e->start_mark);
	struct cfg_node *copy;
	size_t size;

	if (!a) { /* libyaml reports undefined aliases itself; be safe */
		diag_add(p->diags, "GT100", loc, NULL,
			 "alias '*%s' names no anchor", name);
		return 1;
	}
	if (!a->node) {
		struct diag *d = diag_add(p->diags, "GT102", loc, NULL,
			"alias '*%s' refers to a node that contains it", name);
		diag_hint(d, "an alias inside its own anchored node never "
			  "ends; copy the values instead");
		return 1;
	}
	size = count_nodes(a->node);
	p->expanded += size;
	if (p->expanded > CFG_MAX_ALIAS_EXPAND) {
		struct diag *d = diag_add(p->diags, "GT102", loc, NULL,
			"aliases expand to more than %d nodes",
			CFG_MAX_ALIAS_EXPAND);
		diag_hint(d, "nested aliases multiply (a 'billion laughs'); "
			  "write the values out or use ${...} interpolation");
		return 1;
	}
	copy = cfg_clone(a->node);
	if (!copy)
		return -1;
	copy->loc = loc;
	copy->key_loc = loc;
	copy->origin = a->node->loc;
	p->nodes += size;
	return attach(p, copy);
}

static int on_open(struct parser *p, const yaml_event_t *e, enum cfg_kind k)
{
	const yaml_char_t *anchor = k == CFG_MAP ?
		e->data.mapping_start.anchor : e->data.sequence_start.anchor;
	struct diag_loc loc = mark_loc(p, e->start_mark);
	struct frame *f;

	const char *tag = (const char *)(k == CFG_MAP ?
		e->data.mapping_start.tag : e->data.sequence_start.tag);

	if (tag && strcmp(tag, "!") != 0 &&
	    strcmp(tag, k == CFG_MAP ? YAML_MAP_TAG : YAML_SEQ_TAG) != 0) {
		struct diag *d = diag_add(p->diags, "GT100", loc, NULL,
			"unsupported YAML tag '%s' on a %s", tag,
			cfg_kind_name(k));
		diag_hint(d, "NeMo-RL loads YAML with a safe loader, which "
			  "refuses it (such tags build Python objects); "
			  "remove the tag");
		return 1;
	}
	if (p->depth >= CFG_MAX_DEPTH) {
		struct diag *d = diag_add(p->diags, "GT103", loc, NULL,
			"nesting deeper than %d levels", CFG_MAX_DEPTH);
		diag_hint(d, "a training config nests a few levels; check "
			  "that this is the right file");
		return 1;
	}
	f = &p->stack[p->depth];
	memset(f, 0, sizeof(*f));
	f->node = cfg_new(k, loc);
	if (!f->node)
		return -1;
	if (anchor) {
		f->anchor = strdup((const char *)anchor);
		if (!f->anchor || anchor_open(p, f->anchor)) {
			frame_release(f);
			cfg_free(f->node);
			return -1;
		}
	}
	p->depth++;
	p->nodes++;
	return 0;
}

static int on_close(struct parser *p)
{
	struct frame *f = &p->stack[--p->depth];
	struct cfg_node *n = f->node;
	int rc = 0;

	if (f->merges)
		rc = apply_merges(p, f);
	if (!rc && f->anchor && anchor_close(p, f->anchor, n))
		rc = -1;
	f->node = NULL;
	frame_release(f);
	if (rc) {
		cfg_free(n);
		return rc;
	}
	return attach(p, n);
}

static int on_event(struct parser *p, const yaml_event_t *e)
{
	struct cfg_node *n;

	switch (e->type) {
	case YAML_SCALAR_EVENT:
		n = scalar_node(p, e);
		if (!n)
			return -1;
		p->nodes++;
		if (e->data.scalar.anchor) {
			if (anchor_open(p, (const char *)e->data.scalar.anchor)) {
				cfg_free(n);
				return -1;
			}
			if (anchor_close(p, (const char *)e->data.scalar.anchor,
					 n)) {
				cfg_free(n);
				return -1;
			}
		}
		if (p->depth && p->stack[p->depth - 1].node->kind == CFG_MAP &&
		    !p->stack[p->depth - 1].key &&
		    e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    strcmp(n->text, "<<") == 0)
			p->stack[p->depth - 1].merge_key = 1;
		return attach(p, n);
	case YAML_ALIAS_EVENT:
		return on_alias(p, e);
	case YAML_MAPPING_START_EVENT:
		return on_open(p, e, CFG_MAP);
	case YAML_SEQUENCE_START_EVENT:
		return on_open(p, e, CFG_SEQ);
	case YAML_MAPPING_END_EVENT:
	case YAML_SEQUENCE_END_EVENT:
		return on_close(p);
	default:
		return 0;
	}
}

static void report_parser_error(struct parser *p)
{
	yaml_parser_t *yp = &p->yp;
	struct diag *d;

	if (yp->error == YAML_MEMORY_ERROR) {
		fail_oom(p);
		return;
	}
	if (yp->error == YAML_READER_ERROR) {
		d = diag_add(p->diags, "GT100",
			     (struct diag_loc){ p->src, 1, 1 }, NULL,
			     "cannot read YAML: %s at byte %zu",
			     yp->problem ? yp->problem : "reader error",
			     yp->problem_offset);
		diag_hint(d, "config files must be UTF-8 text");
		return;
	}
	d = diag_add(p->diags, "GT100", mark_loc(p, yp->problem_mark), NULL,
		     "invalid YAML: %s", yp->problem ? yp->problem : "error");
	if (yp->context)
		diag_note(d, mark_loc(p, yp->context_mark), "%s", yp->context);
	diag_hint(d, "look just before this point for an unclosed bracket "
		  "or quote, a tab in the indentation, or a misaligned key");
}

static void parser_release(struct parser *p)
{
	while (p->depth > 0) {
		struct frame *f = &p->stack[--p->depth];

		cfg_free(f->node);
		frame_release(f);
	}
	for (size_t i = 0; i < p->n_anchors; i++) {
		free(p->anchors[i].name);
		cfg_free(p->anchors[i].node);
	}
	free(p->anchors);
	yaml_parser_delete(&p->yp);
}

static int parse_source(int src, struct src_set *srcs, struct diag_list *diags,
			struct cfg_node **out)
{
	const struct src_file *sf = &srcs->v[src];
	struct parser p;
	int rc = 0, done = 0;

	*out = NULL;
	memset(&p, 0, sizeof(p));
	p.src = src;
	p.diags = diags;
	if (!yaml_parser_initialize(&p.yp)) {
		diag_add(diags, "GT103", DIAG_NOLOC, NULL, "out of memory");
		return -1;
	}
	yaml_parser_set_input_string(&p.yp, (const unsigned char *)sf->text,
				     sf->len);
	while (!done) {
		yaml_event_t e;

		if (!yaml_parser_parse(&p.yp, &e)) {
			report_parser_error(&p);
			rc = -1;
			break;
		}
		done = e.type == YAML_STREAM_END_EVENT;
		rc = on_event(&p, &e);
		yaml_event_delete(&e);
		if (rc < 0)
			fail_oom(&p);
		if (rc)
			break;
		if (p.nodes > CFG_MAX_NODES) {
			diag_add(diags, "GT103", (struct diag_loc){ src, 1, 1 },
				 NULL, "more than %d YAML nodes in one file",
				 CFG_MAX_NODES);
			rc = 1;
			break;
		}
	}
	if (!rc && p.failed)
		rc = 1;
	if (!rc && p.root && p.root->kind != CFG_MAP &&
	    p.root->kind != CFG_NULL) {
		struct diag *d = diag_add(diags, "GT100", p.root->loc, NULL,
			"the top level of a config must be a mapping, not a %s",
			cfg_kind_name(p.root->kind));
		diag_hint(d, "a NeMo-RL config starts with sections such as "
			  "'policy:' and 'cluster:'");
		rc = 1;
	}
	if (rc) {
		cfg_free(p.root);
		p.root = NULL;
	} else if (!p.root || p.root->kind == CFG_NULL) {
		/* An empty file loads as an empty config, as in OmegaConf. */
		cfg_free(p.root);
		p.root = cfg_new(CFG_MAP, (struct diag_loc){ src, 1, 1 });
		if (!p.root)
			rc = -1;
	}
	*out = p.root;
	parser_release(&p);
	return rc ? -1 : 0;
}

int cfg_parse_text(const char *name, char *text, size_t len,
		   struct src_set *srcs, struct diag_list *diags,
		   struct cfg_node **out)
{
	int src;

	*out = NULL;
	if (len > CFG_MAX_FILE_BYTES) {
		struct diag *d = diag_add(diags, "GT103", DIAG_NOLOC, name,
			"'%s' is %zu bytes, more than the %u-byte limit", name,
			len, CFG_MAX_FILE_BYTES);
		diag_hint(d, "check that this is a config file");
		free(text);
		return -1;
	}
	src = src_add(srcs, name, text, len);
	if (src < 0) {
		diag_add(diags, "GT103", DIAG_NOLOC, NULL, "out of memory");
		return -1;
	}
	return parse_source(src, srcs, diags, out);
}
