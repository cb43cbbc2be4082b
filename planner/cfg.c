/*
 * cfg: the config tree (see cfg.h). Loading lives in cfg_yaml.c, cfg_file.c,
 * cfg_defaults.c, cfg_override.c and cfg_interp.c.
 */
#include "cfg.h"
#include "ckmath.h"
#include "jsonw.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cfg_node *cfg_new(enum cfg_kind kind, struct diag_loc loc)
{
	struct cfg_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->kind = kind;
	n->loc = loc;
	n->key_loc = loc;
	n->origin = DIAG_NOLOC;
	return n;
}

struct cfg_node *cfg_new_str(const char *s, struct diag_loc loc)
{
	struct cfg_node *n = cfg_new(CFG_STR, loc);

	if (!n)
		return NULL;
	n->text = strdup(s);
	if (!n->text) {
		free(n);
		return NULL;
	}
	n->interp = strstr(s, "${") != NULL;
	return n;
}

void cfg_free(struct cfg_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		cfg_free(n->kids[i]);
	free(n->kids);
	free(n->key);
	free(n->text);
	free(n);
}

size_t cfg_count(const struct cfg_node *n)
{
	size_t c = 1;

	for (size_t i = 0; i < n->n; i++)
		c += cfg_count(n->kids[i]);
	return c;
}

struct cfg_node *cfg_clone(const struct cfg_node *n)
{
	struct cfg_node *c;

	if (!n)
		return NULL;
	c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	*c = *n;
	c->key = NULL;
	c->text = NULL;
	c->kids = NULL;
	c->n = c->cap = 0;
	if ((n->key && !(c->key = strdup(n->key))) ||
	    (n->text && !(c->text = strdup(n->text))))
		goto fail;
	if (n->n) {
		c->kids = calloc(n->n, sizeof(*c->kids));
		if (!c->kids)
			goto fail;
		c->cap = n->n;
		for (size_t i = 0; i < n->n; i++) {
			c->kids[i] = cfg_clone(n->kids[i]);
			if (!c->kids[i])
				goto fail;
			c->n++;
		}
	}
	return c;
fail:
	cfg_free(c);
	return NULL;
}

int cfg_append(struct cfg_node *parent, struct cfg_node *kid)
{
	if (parent->n == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 4;
		struct cfg_node **v = realloc(parent->kids, cap * sizeof(*v));

		if (!v) {
			cfg_free(kid);
			return -1;
		}
		parent->kids = v;
		parent->cap = cap;
	}
	parent->kids[parent->n++] = kid;
	return 0;
}

static long cfg_index_of(const struct cfg_node *map, const char *key)
{
	if (!map || map->kind != CFG_MAP)
		return -1;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->kids[i]->key, key) == 0)
			return (long)i;
	return -1;
}

/* Names val `key` and puts it in map: in place of kids[i] (freed) when
 * i >= 0, appended otherwise. -1 (val freed) when out of memory. */
static int put_kid(struct cfg_node *map, long i, const char *key,
		   struct cfg_node *val)
{
	if (!val->key || strcmp(val->key, key) != 0) {
		char *k = strdup(key);

		if (!k) {
			cfg_free(val);
			return -1;
		}
		free(val->key);
		val->key = k;
	}
	if (i >= 0) {
		cfg_free(map->kids[i]);
		map->kids[i] = val;
		return 0;
	}
	return cfg_append(map, val);
}

int cfg_map_set(struct cfg_node *map, const char *key, struct cfg_node *val)
{
	return put_kid(map, cfg_index_of(map, key), key, val);
}

int cfg_map_del(struct cfg_node *map, const char *key)
{
	long i = cfg_index_of(map, key);

	if (i < 0)
		return 0;
	cfg_free(map->kids[i]);
	memmove(map->kids + i, map->kids + i + 1,
		(map->n - (size_t)i - 1) * sizeof(*map->kids));
	map->n--;
	return 1;
}

/* ---- key index ------------------------------------------------------
 * Open addressing with linear probing on FNV-1a, at most half full. */

static size_t key_hash(const char *s)
{
	unsigned long long h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

static int keyidx_grow(struct cfg_keyidx *x, const struct cfg_node *map)
{
	size_t cap = x->cap ? 2 * x->cap : 64;
	size_t *v = calloc(cap, sizeof(*v));

	if (!v)
		return -1;
	for (size_t i = 0; i < x->cap; i++) {
		size_t h;

		if (!x->slot[i])
			continue;
		h = key_hash(map->kids[x->slot[i] - 1]->key) & (cap - 1);
		while (v[h])
			h = (h + 1) & (cap - 1);
		v[h] = x->slot[i];
	}
	free(x->slot);
	x->slot = v;
	x->cap = cap;
	return 0;
}

int cfg_keyidx_add(struct cfg_keyidx *x, const struct cfg_node *map,
		   size_t pos)
{
	size_t h;

	if (2 * (x->n + 1) > x->cap && keyidx_grow(x, map))
		return -1;
	h = key_hash(map->kids[pos]->key) & (x->cap - 1);
	while (x->slot[h])
		h = (h + 1) & (x->cap - 1);
	x->slot[h] = pos + 1;
	x->n++;
	return 0;
}

int cfg_keyidx_build(struct cfg_keyidx *x, const struct cfg_node *map)
{
	memset(x, 0, sizeof(*x));
	if (!map || map->kind != CFG_MAP)
		return 0;
	for (size_t i = 0; i < map->n; i++)
		if (cfg_keyidx_find(x, map, map->kids[i]->key) < 0 &&
		    cfg_keyidx_add(x, map, i))
			return -1;
	return 0;
}

long cfg_keyidx_find(const struct cfg_keyidx *x, const struct cfg_node *map,
		     const char *key)
{
	size_t h;

	if (!x->cap)
		return -1;
	for (h = key_hash(key) & (x->cap - 1); x->slot[h];
	     h = (h + 1) & (x->cap - 1))
		if (strcmp(map->kids[x->slot[h] - 1]->key, key) == 0)
			return (long)(x->slot[h] - 1);
	return -1;
}

void cfg_keyidx_release(struct cfg_keyidx *x)
{
	free(x->slot);
	memset(x, 0, sizeof(*x));
}

int cfg_keyidx_set(struct cfg_keyidx *x, struct cfg_node *map,
		   const char *key, struct cfg_node *val)
{
	long i = cfg_keyidx_find(x, map, key);

	if (put_kid(map, i, key, val))
		return -1;
	return i >= 0 ? 0 : cfg_keyidx_add(x, map, map->n - 1);
}

struct cfg_node *cfg_get(const struct cfg_node *map, const char *key)
{
	long i = cfg_index_of(map, key);

	return i < 0 ? NULL : map->kids[i];
}

struct cfg_node *cfg_path(const struct cfg_node *root, const char *dotted)
{
	const struct cfg_node *n = root;
	char part[256];

	while (n && *dotted) {
		const char *dot = strchr(dotted, '.');
		size_t len = dot ? (size_t)(dot - dotted) : strlen(dotted);

		if (len >= sizeof(part))
			return NULL;
		memcpy(part, dotted, len);
		part[len] = '\0';
		if (n->kind == CFG_MAP) {
			n = cfg_get(n, part);
		} else if (n->kind == CFG_SEQ) {
			char *end;
			unsigned long idx = strtoul(part, &end, 10);

			if (!len || *end || idx >= n->n)
				return NULL;
			n = n->kids[idx];
		} else {
			return NULL;
		}
		dotted += len + (dot != NULL);
	}
	return (struct cfg_node *)n;
}

struct diag_loc cfg_loc(const struct cfg_node *root, const char *dotted)
{
	const struct cfg_node *n = dotted ? cfg_path(root, dotted) : NULL;

	return n ? n->loc : DIAG_NOLOC;
}

struct diag_loc cfg_loc_near(const struct cfg_node *root, const char *dotted)
{
	char buf[256];
	size_t len = strlen(dotted);

	if (len >= sizeof(buf))
		return DIAG_NOLOC;
	memcpy(buf, dotted, len + 1);
	for (int up = 0;; up = 1) {
		const struct cfg_node *n = cfg_path(root, buf);
		char *dot;

		if (n)
			return up ? n->key_loc : n->loc;
		dot = strrchr(buf, '.');
		if (!dot)
			return DIAG_NOLOC;
		*dot = '\0';
	}
}

int cfg_truthy(const struct cfg_node *n, int dflt)
{
	if (!n)
		return dflt;
	switch (n->kind) {
	case CFG_NULL: return 0;
	case CFG_BOOL: return n->v.b != 0;
	case CFG_INT: return n->v.i != 0;
	case CFG_FLOAT: return n->v.f != 0;
	case CFG_STR: return n->text && n->text[0];
	case CFG_MAP:
	case CFG_SEQ: return n->n > 0;
	}
	return dflt;
}

const char *cfg_first_set(const struct cfg_node *root,
			  const char *const *paths)
{
	size_t i;

	for (i = 0; paths[i + 1] && !cfg_path(root, paths[i]); i++)
		;
	return paths[i];
}

int cfg_int(const struct cfg_node *root, const char *dotted, long long *out)
{
	const struct cfg_node *n = cfg_path(root, dotted);

	if (!n || n->kind == CFG_NULL)
		return 0;
	if (n->kind != CFG_INT)
		return -1;
	*out = n->v.i;
	return 1;
}

int cfg_num(const struct cfg_node *root, const char *dotted, double *out)
{
	const struct cfg_node *n = cfg_path(root, dotted);

	if (!n || n->kind == CFG_NULL)
		return 0;
	if (n->kind == CFG_INT)
		*out = (double)n->v.i;
	else if (n->kind == CFG_FLOAT)
		*out = n->v.f;
	else
		return -1;
	return 1;
}

int cfg_bool(const struct cfg_node *root, const char *dotted, int *out)
{
	const struct cfg_node *n = cfg_path(root, dotted);

	if (!n || n->kind == CFG_NULL)
		return 0;
	if (n->kind != CFG_BOOL)
		return -1;
	*out = n->v.b;
	return 1;
}

int cfg_str(const struct cfg_node *root, const char *dotted, const char **out)
{
	const struct cfg_node *n = cfg_path(root, dotted);

	if (!n || n->kind == CFG_NULL)
		return 0;
	if (n->kind != CFG_STR)
		return -1;
	*out = n->text;
	return 1;
}

const char *cfg_kind_name(enum cfg_kind k)
{
	switch (k) {
	case CFG_NULL: return "null";
	case CFG_BOOL: return "boolean";
	case CFG_INT: return "integer";
	case CFG_FLOAT: return "number";
	case CFG_STR: return "string";
	case CFG_MAP: return "map";
	case CFG_SEQ: return "list";
	}
	return "?";
}

/* ---- scalar resolution ----------------------------------------------
 * OmegaConf loads YAML with PyYAML's SafeLoader (YAML 1.1 implicit types,
 * timestamps removed) plus a float resolver that also takes 1e-5 and 1e5.
 * We follow that, so `on` is a boolean and `010` is octal 8, as in NeMo-RL. */

static int one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (strcmp(s, *words) == 0)
			return 1;
	return 0;
}

/* Copies s without '_' into buf; 0 when it does not fit. */
static int strip_underscores(const char *s, char *buf, size_t len)
{
	size_t j = 0;

	for (; *s; s++) {
		if (*s == '_')
			continue;
		if (j + 1 >= len)
			return 0;
		buf[j++] = *s;
	}
	buf[j] = '\0';
	return 1;
}

static int all_of(const char *s, const char *set)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr(set, *s))
			return 0;
	return 1;
}

/* YAML 1.1 base 60: [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+, e.g. 10:00 = 600. */
static int parse_sexagesimal(const char *s, long long *out)
{
	const char *p = s;
	long long v = 0;
	int neg = 0;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (*p < '1' || *p > '9')
		return 0;
	/* a value past 64 bits is not an int here (as in parse_int) */
	for (; isdigit((unsigned char)*p) || *p == '_'; p++)
		if (*p != '_' && (ck_mul(v, 10, &v) || ck_add(v, *p - '0', &v)))
			return 0;
	if (*p != ':')
		return 0;
	while (*p == ':') {
		int d = 0, n = 0;

		for (p++; isdigit((unsigned char)*p) && n < 2; p++, n++)
			d = d * 10 + (*p - '0');
		if (!n || (n == 2 && p[-2] > '5') || ck_mul(v, 60, &v) ||
		    ck_add(v, d, &v))
			return 0;
	}
	if (*p)
		return 0;
	*out = neg ? -v : v;
	return 1;
}

static int parse_int(const char *s, long long *out)
{
	char buf[128];
	const char *p = s;
	int neg = 0, base = 10;
	char *end;

	if (strchr(s, ':'))
		return parse_sexagesimal(s, out);
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!*p)
		return 0;
	if (p[0] == '0' && p[1] == 'b') {
		if (!all_of(p + 2, "01_"))
			return 0;
		base = 2;
		p += 2;
	} else if (p[0] == '0' && p[1] == 'x') {
		if (!all_of(p + 2, "0123456789abcdefABCDEF_"))
			return 0;
		base = 16;
		p += 2;
	} else if (p[0] == '0' && p[1]) {
		if (!all_of(p + 1, "01234567_"))
			return 0;
		base = 8;
		p += 1;
	} else {
		if (!isdigit((unsigned char)p[0]) || !all_of(p, "0123456789_"))
			return 0;
	}
	if (!strip_underscores(p, buf, sizeof(buf)) || !buf[0])
		return 0;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, base);
	if (errno || *end || v > (unsigned long long)LLONG_MAX + neg)
		return 0;
	*out = neg ? (long long)(0 - v) : (long long)v;
	return 1;
}

/* Digits with underscores, first one a digit. */
static const char *scan_digits(const char *p, int need_first)
{
	if (need_first && !isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p) || *p == '_')
		p++;
	return p;
}

static const char *scan_exp(const char *p)
{
	if (*p != 'e' && *p != 'E')
		return p;
	p++;
	if (*p == '+' || *p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p))
		p++;
	return p;
}

static int parse_float(const char *s, double *out)
{
	static const char *const infs[] = { ".inf", ".Inf", ".INF", NULL };
	static const char *const nans[] = { ".nan", ".NaN", ".NAN", NULL };
	const char *p = s;
	char buf[128];
	int neg = 0;

	if (one_of(s, nans)) {
		*out = NAN;
		return 1;
	}
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (one_of(p, infs)) {
		*out = neg ? -INFINITY : INFINITY;
		return 1;
	}
	if (*p == '.') {
		/* \.[0-9_]+ (exp)?, only unsigned in PyYAML */
		const char *q = scan_digits(p + 1, 1);

		if (!q || s != p || !(q = scan_exp(q)) || *q)
			return 0;
	} else {
		const char *q = scan_digits(p, 1);

		if (!q)
			return 0;
		if (*q == '.') {
			q = scan_digits(q + 1, 0);
			q = scan_exp(q);
		} else if (*q == 'e' || *q == 'E') {
			q = scan_exp(q);
		} else {
			return 0;
		}
		if (!q || *q)
			return 0;
	}
	if (!strip_underscores(s, buf, sizeof(buf)))
		return 0;
	*out = strtod(buf, NULL);
	return 1;
}

void cfg_scalar_type(struct cfg_node *n, const char *text)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL",
					      NULL };
	static const char *const trues[] = { "true", "True", "TRUE", "yes",
					      "Yes", "YES", "on", "On", "ON",
					      NULL };
	static const char *const falses[] = { "false", "False", "FALSE", "no",
					       "No", "NO", "off", "Off", "OFF",
					       NULL };

	n->interp = 0;
	if (one_of(text, nulls)) {
		n->kind = CFG_NULL;
	} else if (one_of(text, trues)) {
		n->kind = CFG_BOOL;
		n->v.b = 1;
	} else if (one_of(text, falses)) {
		n->kind = CFG_BOOL;
		n->v.b = 0;
	} else if (parse_int(text, &n->v.i)) {
		n->kind = CFG_INT;
	} else if (parse_float(text, &n->v.f)) {
		n->kind = CFG_FLOAT;
	} else {
		n->kind = CFG_STR;
		n->interp = strstr(text, "${") != NULL;
	}
}

/* ---- JSON output ----------------------------------------------------
 * Through the project's one JSON writer (jsonw.c: escapes, invalid UTF-8
 * replaced), keys in document order as OmegaConf keeps them. */

/* Shortest text that reads back as the same double, always with a '.' or
 * an exponent so that a reader sees a float; Infinity and NaN as Python's
 * json module writes them. */
static void json_float(struct jw *w, double v)
{
	char buf[64];

	if (isnan(v) || isinf(v)) {
		snprintf(buf, sizeof(buf), "%s",
			 isnan(v) ? "NaN" : v < 0 ? "-Infinity" : "Infinity");
	} else {
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(buf, sizeof(buf), "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
		if (!strpbrk(buf, ".eE"))
			strcat(buf, ".0");
	}
	jw_item(w);
	jw_raw(w, buf, strlen(buf));
}

static void json_node(struct jw *w, const struct cfg_node *n)
{
	switch (n->kind) {
	case CFG_NULL: jw_null(w); break;
	case CFG_BOOL: jw_bool(w, n->v.b); break;
	case CFG_INT: jw_int(w, n->v.i); break;
	case CFG_FLOAT: json_float(w, n->v.f); break;
	case CFG_STR: jw_str(w, n->text ? n->text : ""); break;
	case CFG_MAP:
	case CFG_SEQ:
		if (n->kind == CFG_MAP)
			jw_obj_begin(w, 0);
		else
			jw_arr_begin(w, 0);
		for (size_t i = 0; i < n->n; i++) {
			if (n->kind == CFG_MAP)
				jw_key_in_order(w, n->kids[i]->key);
			json_node(w, n->kids[i]);
		}
		if (n->kind == CFG_MAP)
			jw_obj_end(w);
		else
			jw_arr_end(w);
		break;
	}
}

int cfg_write_json(FILE *f, const struct cfg_node *root)
{
	struct jw *w = malloc(sizeof(*w)); /* ~64 KiB: not on the stack */
	int rc;

	if (!w)
		return -1;
	jw_init(w, f);
	json_node(w, root);
	rc = jw_finish(w);
	free(w);
	return rc;
}
