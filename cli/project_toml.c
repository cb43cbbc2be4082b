/*
 * project_toml: the [tool.gtplan] table of a pyproject.toml (project.h).
 *
 * The subset of TOML 1.0 a table of settings needs: `key = value` lines
 * with bare or quoted keys, or dotted bare keys one level deep
 * (`hardware.peak_tflops = 989`), basic strings ("..." with \" \\ \n \t
 * escapes), literal strings ('...'), booleans, integers, floats, and
 * arrays of those that may span lines (trailing comma and comments
 * allowed). Sub-tables [tool.gtplan.NAME] (the hardware defaults) become
 * maps under NAME. The table ends at the next other [header]. A value of
 * another TOML type (a date, an inline table, a multi-line string) is
 * GT003: gtplan's settings have none.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "project.h"

struct toml_rd {
	const struct src_set *srcs;
	int id;
	int line;            /* 1-based number of the current line */
	const char *p, *end; /* the rest of the current line */
	const char *start;   /* the current line's start */
	struct diag_list *diags;
};

static struct diag_loc here(const struct toml_rd *r)
{
	int col = 1;

	for (const char *q = r->start; q < r->p; q++)
		col += ((unsigned char)*q & 0xC0) != 0x80;
	return (struct diag_loc){ r->id, r->line, col };
}

static int fail(struct toml_rd *r, const char *what)
{
	struct diag *d = diag_add(r->diags, "GT003", here(r), NULL,
				  "[tool.gtplan]: %s", what);

	diag_hint(d, "gtplan reads strings, booleans, numbers and arrays "
		  "of them there, and [tool.gtplan.NAME] tables (TOML)");
	return -1;
}

static void skip_blank(struct toml_rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
		r->p++;
	if (r->p < r->end && *r->p == '#')
		r->p = r->end;
}

/* Moves to the next line; 0 at the end of the source. */
static int next_line(struct toml_rd *r)
{
	size_t len;

	if (src_line(r->srcs, r->id, r->line + 1, &r->start, &len))
		return 0;
	r->line++;
	r->p = r->start;
	r->end = r->start + len;
	return 1;
}

/* A string at r->p ('"' or '\''); *out a fresh copy. */
static int read_string(struct toml_rd *r, char **out)
{
	char q = *r->p++, *o = malloc((size_t)(r->end - r->p) + 1);

	if (!(*out = o))
		return -1;
	while (r->p < r->end && *r->p != q) {
		char c = *r->p++;

		if (c == '\\' && q == '"' && r->p < r->end) {
			c = *r->p++;
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
			if (!strchr("\"\\\n\t", c))
				return fail(r, "an escape gtplan does not read");
		}
		*o++ = c;
	}
	*o = '\0';
	if (r->p == r->end)
		return fail(r, "a string that does not end on its line");
	r->p++;
	return 0;
}

static struct cfg_node *read_value(struct toml_rd *r);

/* A TOML float as gtplan's settings write one: digits, a fraction and/or
 * an exponent (no underscores, inf or nan). */
static int is_float(const char *s)
{
	char *end;

	if (!strpbrk(s, ".eE") || strchr(s, '_') || strchr(s, ':') ||
	    !isdigit((unsigned char)s[*s == '-' || *s == '+']))
		return 0;
	strtod(s, &end);
	return *end == '\0';
}

/* An array at r->p ('['), over as many lines as it takes. */
static struct cfg_node *read_array(struct toml_rd *r)
{
	struct cfg_node *a = cfg_new(CFG_SEQ, here(r)), *v;

	if (!a)
		return NULL;
	r->p++;
	for (;;) {
		skip_blank(r);
		if (r->p == r->end) {
			if (!next_line(r))
				break;
			continue;
		}
		if (*r->p == ']') {
			r->p++;
			return a;
		}
		if (!(v = read_value(r)) || cfg_append(a, v))
			goto fail;
		skip_blank(r);
		if (r->p < r->end && *r->p == ',')
			r->p++;
		else if (r->p < r->end && *r->p != ']')
			break;
	}
	fail(r, "an array that does not end");
fail:
	cfg_free(a);
	return NULL;
}

static struct cfg_node *read_value(struct toml_rd *r)
{
	struct diag_loc loc = here(r);
	struct cfg_node *n;
	const char *w = r->p;
	char *s;

	if (r->p < r->end && *r->p == '[')
		return read_array(r);
	if (r->p < r->end && (*r->p == '"' || *r->p == '\'')) {
		if (r->end - r->p >= 3 && r->p[1] == r->p[0] && r->p[2] == r->p[0]) {
			fail(r, "a multi-line string");
			return NULL;
		}
		if (read_string(r, &s))
			return NULL;
		n = cfg_new_str(s, loc);
		free(s);
		return n;
	}
	while (r->p < r->end && (isalnum((unsigned char)*r->p) ||
				 strchr("+-_.:", *r->p)))
		r->p++;
	if (!(s = strndup(w, (size_t)(r->p - w))))
		return NULL;
	n = cfg_new(CFG_NULL, loc);
	if (n && !strcmp(s, "true"))
		n->kind = CFG_BOOL, n->v.b = 1;
	else if (n && !strcmp(s, "false"))
		n->kind = CFG_BOOL, n->v.b = 0;
	else if (n && *s && strspn(s + (*s == '-' || *s == '+'), "0123456789_") ==
			 strlen(s + (*s == '-' || *s == '+')))
		n->kind = CFG_INT, n->v.i = strtoll(s, NULL, 10);
	else if (n && is_float(s))
		n->kind = CFG_FLOAT, n->v.f = strtod(s, NULL);
	else if (n) {
		cfg_free(n);
		n = NULL;
		r->p = w;
		fail(r, "a value of a type gtplan's settings do not have");
	}
	if (n)
		n->text = s;
	else
		free(s);
	return n;
}

/* A bare key at r->p; a fresh copy, or NULL (said, or out of memory). */
static char *bare_key(struct toml_rd *r)
{
	const char *w = r->p;

	while (r->p < r->end && (isalnum((unsigned char)*r->p) ||
				 *r->p == '_' || *r->p == '-'))
		r->p++;
	if (r->p == w) {
		fail(r, "a line that is not `key = value`");
		return NULL;
	}
	return strndup(w, (size_t)(r->p - w));
}

/* map[name] as a map, made when absent; NULL (said) when name holds a
 * value, or out of memory. */
static struct cfg_node *sub_map(struct toml_rd *r, struct cfg_node *map,
				const char *name, struct diag_loc loc)
{
	struct cfg_node *m = cfg_get(map, name);

	if (m) {
		if (m->kind != CFG_MAP)
			fail(r, "a key defined twice");
		return m->kind == CFG_MAP ? m : NULL;
	}
	if (!(m = cfg_new(CFG_MAP, loc)) || !(m->key = strdup(name)) ||
	    cfg_append(map, m)) {
		cfg_free(m);
		return NULL;
	}
	return cfg_get(map, name);
}

/* `key = value` (or `table.key = value`) at r->p into map; 0, or -1
 * (said). */
static int read_pair(struct toml_rd *r, struct cfg_node *map)
{
	struct diag_loc kloc = here(r);
	struct cfg_node *v;
	char *key;

	if (*r->p == '"' || *r->p == '\'') {
		if (read_string(r, &key))
			return -1;
	} else if (!(key = bare_key(r))) {
		return -1;
	}
	if (r->p < r->end && *r->p == '.') {
		struct cfg_node *m = sub_map(r, map, key, kloc);

		free(key);
		r->p++;
		if (!m || !(key = bare_key(r)))
			return -1;
		map = m;
	}
	skip_blank(r);
	if (r->p == r->end || *r->p != '=') {
		free(key);
		return fail(r, "a line that is not `key = value`");
	}
	r->p++;
	skip_blank(r);
	if (!(v = read_value(r))) {
		free(key);
		return -1;
	}
	v->key_loc = kloc;
	skip_blank(r);
	if (r->p != r->end) {
		free(key);
		cfg_free(v);
		return fail(r, "more after the value");
	}
	if (cfg_get(map, key)) {
		free(key);
		cfg_free(v);
		r->p = r->start;
		return fail(r, "a key defined twice");
	}
	v->key = key;
	return cfg_append(map, v);
}

/* The header line at r: 0 when it is not ours, 1 for [tool.gtplan], 2
 * for [tool.gtplan.NAME] (NAME into name). Blanks are allowed. */
static int our_header(struct toml_rd *r, char *name, size_t len)
{
	char text[128];
	size_t n = 0, k;

	for (const char *p = r->p; p < r->end && *p != '#'; p++)
		if (*p != ' ' && *p != '\t' && n + 1 < sizeof(text))
			text[n++] = *p;
	text[n] = '\0';
	if (!strcmp(text, "[tool.gtplan]"))
		return 1;
	if (strncmp(text, "[tool.gtplan.", 13) || text[n - 1] != ']')
		return 0;
	k = strspn(text + 13, "abcdefghijklmnopqrstuvwxyz"
		   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
	if (k == 0 || 13 + k != n - 1 || k >= len)
		return 0;
	memcpy(name, text + 13, k);
	name[k] = '\0';
	return 2;
}

int proj_toml_table(const struct src_set *srcs, int id,
		    struct diag_list *diags, struct cfg_node **out)
{
	struct toml_rd r = { srcs, id, 0, NULL, NULL, NULL, diags };
	struct cfg_node *into = NULL;
	char name[64];

	*out = NULL;
	while (next_line(&r)) {
		int h;

		skip_blank(&r);
		if (r.p == r.end)
			continue;
		if (*r.p != '[') {
			if (into && read_pair(&r, into))
				goto fail;
			continue;
		}
		into = NULL;
		if (!(h = our_header(&r, name, sizeof(name))))
			continue;
		if (!*out && !(*out = cfg_new(CFG_MAP, here(&r))))
			return -1;
		into = h == 1 ? *out : sub_map(&r, *out, name, here(&r));
		if (!into)
			goto fail;
	}
	return 0;
fail:
	cfg_free(*out);
	*out = NULL;
	return -1;
}
