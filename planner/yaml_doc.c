/*
 * yaml_doc: the planner's data files as libyaml documents (yaml_doc.h).
 */
#include "yaml_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ydoc_load(struct ydoc *d, const char *file, const char *text,
	      size_t len, char *err, size_t elen)
{
	yaml_parser_t parser;
	int ok;

	d->file = file;
	d->err = err;
	d->elen = elen;
	err[0] = '\0';
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, elen, "%s: out of memory", file);
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
				     len);
	ok = yaml_parser_load(&parser, &d->doc);
	if (!ok)
		snprintf(err, elen, "%s:%lu:%lu: %s", file,
			 (unsigned long)parser.problem_mark.line + 1,
			 (unsigned long)parser.problem_mark.column + 1,
			 parser.problem ? parser.problem : "not YAML");
	yaml_parser_delete(&parser);
	return ok ? 0 : -1;
}

void ydoc_release(struct ydoc *d)
{
	yaml_document_delete(&d->doc);
}

int ydoc_fail(struct ydoc *d, const yaml_node_t *n, const char *what,
	      const char *arg)
{
	snprintf(d->err, d->elen, "%s:%lu:%lu: %s%s%s", d->file,
		 n ? (unsigned long)n->start_mark.line + 1 : 0UL,
		 n ? (unsigned long)n->start_mark.column + 1 : 0UL, what,
		 arg ? " " : "", arg ? arg : "");
	return -1;
}

yaml_node_t *ydoc_node(struct ydoc *d, int id)
{
	return yaml_document_get_node(&d->doc, id);
}

yaml_node_t *ydoc_child(struct ydoc *d, const yaml_node_t *map,
			const char *key)
{
	yaml_node_pair_t *p;

	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = map->data.mapping.pairs.start;
	     p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = ydoc_node(d, p->key);

		if (k && k->type == YAML_SCALAR_NODE &&
		    !strcmp((const char *)k->data.scalar.value, key))
			return ydoc_node(d, p->value);
	}
	return NULL;
}

json_t *ydoc_scalar(const yaml_node_t *n)
{
	const char *s = (const char *)n->data.scalar.value;
	char *end;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_string(s);
	if (!strcmp(s, "null") || !strcmp(s, "~") || !*s)
		return json_null();
	if (!strcmp(s, "true") || !strcmp(s, "false"))
		return json_boolean(s[0] == 't');
	if (strspn(s + (*s == '-' || *s == '+'), "0123456789") ==
	    strlen(s + (*s == '-' || *s == '+'))) {
		long long v = strtoll(s, &end, 10);

		return *end ? json_string(s) : json_integer(v);
	}
	if (strpbrk(s, ".eE") && strspn(s, "+-.0123456789eE") == strlen(s)) {
		double v = strtod(s, &end);

		if (!*end && end != s)
			return json_real(v);
	}
	return json_string(s);
}
