/*
 * model_catalog_load: data/models.yaml (the model catalog) into shapes.
 * Part of the model module (model_int.h declares model_catalog_parse;
 * model_catalog.c calls it on the embedded text on first use).
 *
 * libyaml's document API loads the text; each entry's `config` (a
 * Hugging Face config.json written in YAML) becomes a JSON object and
 * goes through model_hf_map, the mapping a model's own config.json takes,
 * so the catalog has no field language of its own. Scalars are typed as
 * YAML's core schema does for plain (unquoted) text: null, true/false,
 * integers, reals; anything quoted is a string. YAML's merge key `<<`
 * (a mapping or a list of them, explicit keys winning) carries the
 * shared fields of `bases` into entries, as PyYAML's loader does.
 *
 * The data ships with the binary, so a malformed file is a defect of the
 * build: tests/test_model.c fails with model_catalog_error()'s message.
 * The limits below still hold the parser to a fixed footprint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "model.h"
#include "model_int.h"
#include "yaml_doc.h"

#define CATALOG_MAX_DEPTH 16   /* nesting, aliases included */
#define CATALOG_MAX_NAMES 8    /* hub names of one entry */

static json_t *convert(struct ydoc *l, const yaml_node_t *n, int depth);

/* Merges the mapping(s) `<<` names into obj, keys obj sets winning. */
static int merge(struct ydoc *l, json_t *obj, const yaml_node_t *v, int depth)
{
	yaml_node_item_t *it;

	if (v->type == YAML_SEQUENCE_NODE) {
		for (it = v->data.sequence.items.start;
		     it < v->data.sequence.items.top; it++)
			if (merge(l, obj, ydoc_node(l, *it), depth))
				return -1;
		return 0;
	}
	if (v->type != YAML_MAPPING_NODE)
		return ydoc_fail(l, v, "a merge key '<<' needs a mapping", NULL);
	{
		json_t *m = convert(l, v, depth + 1);
		int rc;

		if (!m)
			return -1;
		rc = json_object_update_missing(obj, m);
		json_decref(m);
		return rc ? ydoc_fail(l, v, "out of memory", NULL) : 0;
	}
}

/* A mapping's explicit keys first (no duplicates), then its merges. */
static json_t *mapping(struct ydoc *l, const yaml_node_t *n, int depth)
{
	json_t *obj = json_object();
	yaml_node_pair_t *p;

	if (!obj)
		return ydoc_fail(l, n, "out of memory", NULL), NULL;
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = ydoc_node(l, p->key);
		yaml_node_t *v = ydoc_node(l, p->value);
		const char *key;
		json_t *jv;

		if (!k || k->type != YAML_SCALAR_NODE) {
			ydoc_fail(l, k ? k : n, "a key must be text", NULL);
			goto fail;
		}
		key = (const char *)k->data.scalar.value;
		if (k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    !strcmp(key, "<<"))
			continue;
		if (json_object_get(obj, key)) {
			ydoc_fail(l, k, "duplicate key", key);
			goto fail;
		}
		jv = convert(l, v, depth + 1);
		if (!jv || json_object_set_new(obj, key, jv))
			goto fail;
	}
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = ydoc_node(l, p->key);

		if (k->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    !strcmp((const char *)k->data.scalar.value, "<<") &&
		    merge(l, obj, ydoc_node(l, p->value), depth))
			goto fail;
	}
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

/* The YAML node as JSON; NULL with the error set. */
static json_t *convert(struct ydoc *l, const yaml_node_t *n, int depth)
{
	json_t *arr;
	yaml_node_item_t *it;

	if (!n)
		return ydoc_fail(l, NULL, "a node is missing", NULL), NULL;
	if (depth > CATALOG_MAX_DEPTH)
		return ydoc_fail(l, n, "nested too deep", NULL), NULL;
	if (n->type == YAML_SCALAR_NODE)
		return ydoc_scalar(n);
	if (n->type == YAML_MAPPING_NODE)
		return mapping(l, n, depth);
	arr = json_array();
	if (!arr)
		return ydoc_fail(l, n, "out of memory", NULL), NULL;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top;
	     it++) {
		json_t *v = convert(l, ydoc_node(l, *it),
				    depth + 1);

		if (!v || json_array_append_new(arr, v)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* Every key of an entry's config is one the mapping reads. */
static int check_keys(struct ydoc *l, const yaml_node_t *at,
		      const json_t *config)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)config, key, v) {
		size_t i = 0;

		while (model_hf_keys[i] && strcmp(model_hf_keys[i], key))
			i++;
		if (!model_hf_keys[i])
			return ydoc_fail(l, at, "config.json key not read by "
				          "planner/model_hf.c:", key);
	}
	return 0;
}

/* One shape per hub name of jn into out[*n ...], each a copy of *s. */
static int add_names(struct ydoc *l, const yaml_node_t *at, const json_t *jn,
		     const struct model_shape *s, struct model_shape *out,
		     size_t max, size_t *n)
{
	size_t i, k = 0;
	json_t *v;

	json_array_foreach((json_t *)jn, i, v) {
		const char *name = json_string_value(v);
		const char *slash = name ? strchr(name, '/') : NULL;

		if (!slash || slash == name || !slash[1] ||
		    strchr(slash + 1, '/') || strlen(name) >= sizeof(s->name))
			return ydoc_fail(l, at, "a name is not a hub id ORG/NAME:",
				          name ? name : "(not text)");
		if (*n + k == max)
			return ydoc_fail(l, at, "more names than the catalog "
				          "holds", NULL);
		out[*n + k] = *s;
		snprintf(out[*n + k].name, sizeof(s->name), "%s", name);
		k++;
	}
	*n += k;
	return 0;
}

/* One entry of `models` into out[*n ...], one shape per name. */
static int entry(struct ydoc *l, const yaml_node_t *e,
		 struct model_shape *out, size_t max, size_t *n)
{
	yaml_node_t *names = ydoc_child(l, e, "names");
	yaml_node_t *cfg = ydoc_child(l, e, "config");
	yaml_node_t *pad = ydoc_child(l, e, "make_vocab_size_divisible_by");
	struct model_hf_info info;
	struct model_shape s;
	json_t *config = NULL, *jn = NULL, *jpad = NULL;
	int rc = -1;

	if (e->type != YAML_MAPPING_NODE ||
	    e->data.mapping.pairs.top - e->data.mapping.pairs.start !=
	    2 + (pad != NULL) || !names || !cfg)
		return ydoc_fail(l, e, "an entry has names, config and "
			          "optionally make_vocab_size_divisible_by, "
			          "nothing else", NULL);
	config = convert(l, cfg, 1);
	jn = config ? convert(l, names, 1) : NULL;
	jpad = jn && pad ? convert(l, pad, 1) : NULL;
	if (!jn || (pad && !jpad))
		goto out;
	if (!json_is_object(config) || check_keys(l, cfg, config)) {
		if (!json_is_object(config))
			ydoc_fail(l, cfg, "config is a mapping", NULL);
		goto out;
	}
	if (pad && (!json_is_integer(jpad) || json_integer_value(jpad) < 1)) {
		ydoc_fail(l, pad, "make_vocab_size_divisible_by is a positive "
			   "integer", NULL);
		goto out;
	}
	if (!json_is_array(jn) || !json_array_size(jn) ||
	    json_array_size(jn) > CATALOG_MAX_NAMES) {
		ydoc_fail(l, names, "names is a list of 1 to 8 hub names", NULL);
		goto out;
	}
	memset(&s, 0, sizeof(s));
	model_hf_map(config, &s, &info);
	if (!info.mapped) {
		ydoc_fail(l, cfg, "model_type is not a family planner/model_hf.c "
			"maps:", info.model_type[0] ? info.model_type : "none");
		goto out;
	}
	if (jpad)
		s.make_vocab_size_divisible_by = json_integer_value(jpad);
	memset(s.origin, 0, sizeof(s.origin));
	if (model_catalog_shape(&s, info.approximate)) {
		ydoc_fail(l, cfg, "an entry lacks num_hidden_layers, hidden_size, "
			   "num_attention_heads or vocab_size", NULL);
		goto out;
	}
	if (add_names(l, names, jn, &s, out, max, n))
		goto out;
	rc = 0;
out:
	json_decref(config);
	json_decref(jn);
	json_decref(jpad);
	return rc;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcasecmp(((const struct model_shape *)a)->name,
			  ((const struct model_shape *)b)->name);
}

/* The top level: `bases` (anchors only) and `models` (the entries). */
static int document(struct ydoc *l, struct model_shape *out, size_t max,
		    size_t *n)
{
	yaml_node_t *root = yaml_document_get_root_node(&l->doc);
	yaml_node_t *models = ydoc_child(l, root, "models");
	yaml_node_t *bases = ydoc_child(l, root, "bases");
	yaml_node_item_t *it;

	if (!root || root->type != YAML_MAPPING_NODE ||
	    root->data.mapping.pairs.top - root->data.mapping.pairs.start !=
	    1 + (bases != NULL) || !models ||
	    models->type != YAML_SEQUENCE_NODE)
		return ydoc_fail(l, root, "the catalog is a mapping of models "
			          "(a list) and optionally bases", NULL);
	if (bases && bases->type != YAML_MAPPING_NODE)
		return ydoc_fail(l, bases, "bases is a mapping", NULL);
	for (it = models->data.sequence.items.start;
	     it < models->data.sequence.items.top; it++)
		if (entry(l, ydoc_node(l, *it), out, max, n))
			return -1;
	for (size_t i = 1; i < *n; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcasecmp(out[i].name, out[j].name))
				return ydoc_fail(l, models, "a name is listed "
					          "twice:", out[i].name);
	qsort(out, *n, sizeof(out[0]), cmp_entry);
	return 0;
}

int model_catalog_parse(const char *text, size_t len, struct model_shape *out,
			size_t max, size_t *n, char *err, size_t elen)
{
	struct ydoc l;
	int rc;

	*n = 0;
	if (ydoc_load(&l, "data/models.yaml", text, len, err, elen))
		return -1;
	rc = document(&l, out, max, n);
	if (rc)
		*n = 0;
	ydoc_release(&l);
	return rc;
}
