/*
 * cfg_override: command-line overrides, applied as NeMo-RL's
 * parse_hydra_overrides() applies them (nemo_rl/utils/config.py): the config
 * is put in struct mode, Hydra's OverridesParser reads each override, and
 * ConfigLoaderImpl._apply_overrides_to_config() applies them in order:
 *
 *   key=v    changes a key that exists (struct mode: a missing key, or one
 *            below a scalar, is an error); a {map} merges into a map, where
 *            new keys are errors too; a [list] replaces a list
 *   +key=v   adds a key, creating the sections on the way (a scalar in the
 *            way becomes a map); an error when the key exists and is not
 *            null, unless v is a map or list, which then merges
 *   ++key=v  adds or changes, merging maps without the struct check
 *   ~key     deletes a key; an error when it is missing or null
 *   ~key=v   deletes it only if its value equals v (1 == 1.0 == true)
 *
 * Values follow Hydra's override grammar (OverrideLexer/Parser.g4): ints,
 * floats, true/false and null in any case, 'quoted' and "quoted" strings,
 * [lists], {dicts}, and unquoted strings that may hold `${...}`; those stay
 * interpolations for cfg_resolve(), which NeMo-RL also runs afterwards.
 *
 * Deliberate differences from Hydra: sweeps (a,b), functions (choice(...),
 * int(...)), config groups (a/b) and packages (key@pkg) are reported as
 * malformed (NeMo-RL has no use for them; Hydra either rejects them there or
 * would add a key literally named "a/b"); ~key=v does not compare against a
 * value that is still an interpolation; deleting through an interpolated
 * section is reported as a missing key.
 */
#include "cfg.h"

#include <stdlib.h>
#include <string.h>

enum op { OP_CHANGE, OP_ADD, OP_FORCE, OP_DEL };

struct octx {
	struct diag_list *diags;
	int src;
	const char *arg;     /* the override being applied */
	size_t col0;         /* its column (code points) on the command line */
	struct diag_loc key; /* where its key starts */
	struct diag_loc val; /* where its value starts */
	int failed;
};

/* Where p (a pointer into the current argument) is on the command line. */
static struct diag_loc loc_at(const struct octx *o, const char *p)
{
	struct diag_loc at = { o->src, 1, (int)o->col0 };

	for (const char *q = o->arg; q < p; q++)
		if (((unsigned char)*q & 0xc0) != 0x80)
			at.col++;
	return at;
}

static struct diag *oerr(struct octx *o, const char *code, struct diag_loc at,
			 const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static struct diag *oerr(struct octx *o, const char *code, struct diag_loc at,
			 const char *path, const char *fmt, ...)
{
	struct diag *d;
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = diag_vfmt(fmt, ap);
	va_end(ap);
	d = diag_add(o->diags, code, at, path, "%s",
		     msg ? msg : "out of memory");
	free(msg);
	o->failed = 1;
	return d;
}

/* ---- values: Hydra's override grammar ---------------------------------- */

struct vp {
	struct octx *o;
	const char *p;
	int nest;
};

static const char *past_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static int is_escapable(char c)
{
	return c && strchr("\\()[]{}:=, \t", c) != NULL;
}

static int vp_error(struct vp *v, const char *what)
{
	struct diag *d = oerr(v->o, "GT120", v->o->val, NULL,
			      "malformed value in override '%s': %s at '%.12s'",
			      v->o->arg, what, *v->p ? v->p : "the end");

	diag_hint(d, "values are Hydra's: 4, 1e-5, true, null, text, "
		  "'quoted text', [1,2], {a: 1}; quote a value that holds "
		  "spaces, commas, brackets or parentheses");
	return -1;
}

/* A fresh string node at `at` holding text[0..len). */
static struct cfg_node *str_node(struct vp *v, const char *at, char *text)
{
	struct cfg_node *n;

	if (!text)
		return NULL;
	n = cfg_new_str(text, loc_at(v->o, at));
	free(text);
	return n;
}

/* 'text' or "text": a backslash escapes the quote; backslashes right before
 * the closing quote are halved. */
static struct cfg_node *vp_quoted(struct vp *v)
{
	const char *at = v->p;
	char q = *v->p++, *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (;;) {
		size_t n = 0;

		if (!*v->p) {
			fclose(f);
			free(buf);
			vp_error(v, "an unterminated quoted string");
			return NULL;
		}
		if (*v->p == q) {
			v->p++;
			break;
		}
		while (v->p[n] == '\\')
			n++;
		if (n && v->p[n] == q) {
			for (size_t i = 0; i < n / 2; i++)
				fputc('\\', f);
			v->p += n;
			if (n % 2) {
				fputc(q, f);
				v->p++;
			}
			continue;
		}
		if (n) {
			fwrite(v->p, 1, n, f);
			v->p += n;
			continue;
		}
		fputc(*v->p++, f);
	}
	fclose(f);
	return str_node(v, at, buf);
}

/* An unquoted value (or dict key): words, punctuation, escapes, colons,
 * inner blanks and `${...}`. One token keeps its type; several make a
 * string, with escapes undone. Blanks before a delimiter are not part of
 * it. */
static struct cfg_node *vp_primitive(struct vp *v, int is_key)
{
	const char *at = v->p, *tok = NULL;
	enum cfg_word w = CFG_WORD_NONE;
	size_t ntok = 0, tlen = 0;
	int esc = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct cfg_node *n;

	if (!f)
		return NULL;
	for (;;) {
		const char *p = v->p, *q;
		size_t k = 0;
		int this_esc = 0;
		enum cfg_word this_w = CFG_WORD_NONE;

		if (*p == ' ' || *p == '\t') {
			q = past_ws(p);
			if (!*q || strchr(",]}", *q) || (*q == ':' && is_key))
				break;
			if (*q == '(')
				goto function;
			k = (size_t)((*q == ':' ? past_ws(q + 1) : q) - p);
		} else if (*p == ':') {
			if (is_key)
				break;
			k = (size_t)(past_ws(p + 1) - p);
		} else if (!*p || strchr(",]}", *p)) {
			break;
		} else if (p[0] == '$' && p[1] == '{' && !is_key) {
			k = strcspn(p + 2, "}");
			if (k == 0 || !p[2 + k]) {
				vp_error(v, "an unterminated ${");
				goto fail;
			}
			k += 3;
		} else if (p[0] == '\\' && is_escapable(p[1])) {
			while (p[k] == '\\' && is_escapable(p[k + 1]))
				k += 2;
			this_esc = 1;
		} else if ((k = cfg_lex_word(p, &this_w)) == 0) {
			if (*p == '(')
				goto function;
			if (!strchr("/-\\+.$%*@?|", *p)) {
				vp_error(v, *p == '\'' || *p == '"'
					 ? "a quote inside an unquoted value"
					 : "a character that must be quoted");
				goto fail;
			}
			k = 1;
		} else if (this_w == CFG_WORD_ID && *past_ws(p + k) == '(') {
			v->p = p + k;
			goto function;
		}
		if (this_esc)
			for (size_t i = 1; i < k; i += 2)
				fputc(p[i], f);
		else
			fwrite(p, 1, k, f);
		if (ntok++ == 0) {
			tok = p;
			tlen = k;
			w = this_w;
			esc = this_esc;
		}
		v->p = p + k;
	}
	fclose(f);
	if (ntok == 0) {
		free(buf);
		vp_error(v, is_key ? "an empty key" : "an empty value");
		return NULL;
	}
	if (ntok > 1 || esc || w == CFG_WORD_NONE)
		return str_node(v, at, buf);
	free(buf);
	if (!(n = cfg_new(CFG_STR, loc_at(v->o, at))))
		return NULL;
	if (cfg_word_value(n, w, tok, tlen)) {
		cfg_free(n);
		if (w == CFG_WORD_INT)
			vp_error(v, "an integer that does not fit in 64 bits");
		return NULL;
	}
	return n;
function:
	vp_error(v, "a function call (choice(), range(), int(), ...): "
		 "Hydra's sweeps and casts are not used by NeMo-RL");
fail:
	fclose(f);
	free(buf);
	return NULL;
}

static struct cfg_node *vp_element(struct vp *v);

static int vp_enter(struct vp *v)
{
	if (++v->nest > CFG_MAX_DEPTH) {
		oerr(v->o, "GT103", v->o->val, NULL, "override value '%s' nests "
		     "more than %d levels", v->o->arg, CFG_MAX_DEPTH);
		return -1;
	}
	return 0;
}

static struct cfg_node *vp_list(struct vp *v)
{
	struct cfg_node *list = cfg_new(CFG_SEQ, loc_at(v->o, v->p));

	v->p = past_ws(v->p + 1);
	if (!list || vp_enter(v))
		goto fail;
	if (*past_ws(v->p) == ']') {
		v->p = past_ws(v->p) + 1;
	} else {
		for (;;) {
			struct cfg_node *kid = vp_element(v);

			if (!kid || cfg_append(list, kid))
				goto fail;
			v->p = past_ws(v->p);
			if (*v->p == ']') {
				v->p++;
				break;
			}
			if (*v->p != ',') {
				vp_error(v, "expected ',' or ']'");
				goto fail;
			}
			v->p = past_ws(v->p + 1);
		}
	}
	v->nest--;
	return list;
fail:
	cfg_free(list);
	return NULL;
}

static struct cfg_node *vp_dict(struct vp *v)
{
	struct cfg_node *map = cfg_new(CFG_MAP, loc_at(v->o, v->p));

	v->p = past_ws(v->p + 1);
	if (!map || vp_enter(v))
		goto fail;
	if (*past_ws(v->p) == '}') {
		v->p = past_ws(v->p) + 1;
	} else {
		for (;;) {
			const char *kat = v->p;
			struct cfg_node *key = vp_primitive(v, 1), *val;
			char *name;

			if (!key)
				goto fail;
			name = key->text;
			key->text = NULL;
			cfg_free(key);
			v->p = past_ws(v->p);
			if (*v->p != ':') {
				free(name);
				vp_error(v, "expected ':' after a dict key");
				goto fail;
			}
			v->p = past_ws(v->p + 1);
			val = vp_element(v);
			if (!val || !name) {
				free(name);
				cfg_free(val);
				goto fail;
			}
			val->key_loc = loc_at(v->o, kat);
			if (cfg_map_set(map, name, val)) {
				free(name);
				goto fail;
			}
			free(name);
			v->p = past_ws(v->p);
			if (*v->p == '}') {
				v->p++;
				break;
			}
			if (*v->p != ',') {
				vp_error(v, "expected ',' or '}'");
				goto fail;
			}
			v->p = past_ws(v->p + 1);
		}
	}
	v->nest--;
	return map;
fail:
	cfg_free(map);
	return NULL;
}

static struct cfg_node *vp_element(struct vp *v)
{
	switch (*v->p) {
	case '[': return vp_list(v);
	case '{': return vp_dict(v);
	case '\'':
	case '"': return vp_quoted(v);
	default: return vp_primitive(v, 0);
	}
}

/* The value after '=' (blanks after it skipped): one element, or "" when
 * there is none. NULL after reporting. */
static struct cfg_node *parse_value(struct octx *o, const char *s)
{
	struct vp v = { o, s, 0 };
	struct cfg_node *n;

	if (!*s)
		return cfg_new_str("", loc_at(o, s));
	n = vp_element(&v);
	if (!n) {
		if (!o->failed)
			oerr(o, "GT103", o->val, NULL, "out of memory");
		return NULL;
	}
	v.p = past_ws(v.p);
	if (*v.p == ',') {
		struct diag *d = oerr(o, "GT120", o->val, NULL, "override '%s' is a "
				      "sweep (a Hydra multirun): NeMo-RL "
				      "applies one value", o->arg);

		if (strstr(s, "${"))
			diag_hint(d, "Hydra ends an unquoted ${...} at its first "
				  "'}'; quote a value with nested interpolations: "
				  "key='${mul:${a},2}'");
		else
			diag_hint(d, "write [a,b] for a list, or quote the value "
				  "to keep the commas");
		cfg_free(n);
		return NULL;
	}
	if (*v.p) {
		vp_error(&v, "unexpected text after the value");
		cfg_free(n);
		return NULL;
	}
	return n;
}

/* ---- keys ---------------------------------------------------------------- */

struct key {
	char **part;
	const char **at; /* where each part starts in the argument */
	size_t n;
};

static void key_release(struct key *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->part[i]);
	free(k->part);
	free(k->at);
}

static int key_char(char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       c == '$' || (!first && c >= '0' && c <= '9');
}

/* Hydra's key: parts of letters, digits, '_' and '$' (not starting with a
 * digit) or list indices, joined by dots. */
static int parse_key(struct octx *o, const char *s, size_t len, struct key *k)
{
	const char *end = s + len, *p = s;
	struct diag *d;
	const char *why = NULL;

	memset(k, 0, sizeof(*k));
	k->part = calloc(len / 2 + 1, sizeof(*k->part));
	k->at = calloc(len / 2 + 1, sizeof(*k->at));
	if (!k->part || !k->at)
		return -1;
	if (len == 0)
		why = "an empty key";
	while (!why) {
		const char *q = p;

		if (q < end && *q >= '0' && *q <= '9') {
			while (q < end && *q >= '0' && *q <= '9')
				q++;
			if (*p == '0' && q - p > 1)
				why = "a list index with a leading zero";
		} else {
			while (q < end && key_char(*q, q == p))
				q++;
		}
		if (!why && q == p)
			why = p == end || *p == '.' ? "an empty key part"
			    : *p == '/' || *p == '@'
			    ? "a config group or package (a/b, key@pkg), which "
			      "NeMo-RL does not have"
			    : "a character that cannot be in a key";
		if (why)
			break;
		k->at[k->n] = p;
		if (!(k->part[k->n] = strndup(p, (size_t)(q - p))))
			return -1;
		k->n++;
		if (q == end)
			break;
		if (*q != '.') {
			p = q;
			why = *q == '/' || *q == '@'
			    ? "a config group or package (a/b, key@pkg), which "
			      "NeMo-RL does not have"
			    : "a character that cannot be in a key";
			break;
		}
		p = q + 1;
	}
	if (!why && k->n == 1 && k->part[0][0] >= '0' && k->part[0][0] <= '9')
		why = "a key that is only a list index";
	if (!why)
		return 0;
	d = oerr(o, "GT120", o->key, NULL, "malformed key in override '%s': %s",
		 o->arg, why);
	diag_hint(d, "keys are dotted paths of letters, digits, '_' and '$' "
		  "(policy.megatron_cfg.tensor_model_parallel_size, "
		  "data.files.0)");
	return -1;
}

/* The dotted path of the first n parts. */
static char *key_path(const struct key *k, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? "." : "", k->part[i]);
	fclose(f);
	return buf;
}

/* ---- applying ------------------------------------------------------------ */

/* parent[part] (a map key or a list index); NULL when absent. */
static struct cfg_node *child(const struct cfg_node *parent, const char *part,
			      size_t *idx)
{
	if (parent->kind == CFG_MAP)
		return cfg_get(parent, part);
	if (parent->kind == CFG_SEQ && part[0] >= '0' && part[0] <= '9') {
		char *end;
		unsigned long i = strtoul(part, &end, 10);

		if (!*end && i < parent->n) {
			*idx = i;
			return parent->kids[i];
		}
	}
	return NULL;
}

static int is_container(const struct cfg_node *n)
{
	return n && (n->kind == CFG_MAP || n->kind == CFG_SEQ);
}

/* Python's == between a parsed value and a config value. */
static int py_equal(const struct cfg_node *a, const struct cfg_node *b)
{
	int na = a->kind == CFG_BOOL || a->kind == CFG_INT ||
		 a->kind == CFG_FLOAT;
	int nb = b->kind == CFG_BOOL || b->kind == CFG_INT ||
		 b->kind == CFG_FLOAT;

	if (na && nb) {
		if (a->kind != CFG_FLOAT && b->kind != CFG_FLOAT)
			return (a->kind == CFG_BOOL ? a->v.b : a->v.i) ==
			       (b->kind == CFG_BOOL ? b->v.b : b->v.i);
		return (a->kind == CFG_FLOAT ? a->v.f
			: (double)(a->kind == CFG_BOOL ? a->v.b : a->v.i)) ==
		       (b->kind == CFG_FLOAT ? b->v.f
			: (double)(b->kind == CFG_BOOL ? b->v.b : b->v.i));
	}
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case CFG_NULL: return 1;
	case CFG_STR: return strcmp(a->text, b->text) == 0;
	case CFG_SEQ:
		if (a->n != b->n)
			return 0;
		for (size_t i = 0; i < a->n; i++)
			if (!py_equal(a->kids[i], b->kids[i]))
				return 0;
		return 1;
	case CFG_MAP:
		if (a->n != b->n)
			return 0;
		for (size_t i = 0; i < a->n; i++) {
			const struct cfg_node *o = cfg_get(b, a->kids[i]->key);

			if (!o || !py_equal(a->kids[i], o))
				return 0;
		}
		return 1;
	default:
		return 0;
	}
}

/* OmegaConf's merge of src into dst (both containers), consuming src's
 * entries: maps merge key by key, anything else replaces. In struct mode a
 * key dst does not have is an error. */
static int merge(struct octx *o, struct cfg_node *dst, struct cfg_node *src,
		 const char *path, int strict)
{
	if (dst->kind != src->kind) {
		struct diag *d = oerr(o, "GT120", o->val, path, "override '%s' "
				      "merges a %s into the %s '%s'", o->arg,
				      cfg_kind_name(src->kind),
				      cfg_kind_name(dst->kind), path);

		diag_hint(d, "delete it first (~%s) and add it again (+%s=...)",
			  path, path);
		return -1;
	}
	if (dst->kind == CFG_SEQ) { /* a list replaces the list */
		for (size_t i = 0; i < dst->n; i++)
			cfg_free(dst->kids[i]);
		free(dst->kids);
		dst->kids = src->kids;
		dst->n = src->n;
		dst->cap = src->cap;
		src->kids = NULL;
		src->n = src->cap = 0;
		dst->loc = src->loc;
		return 0;
	}
	for (size_t i = 0; i < src->n; i++) {
		struct cfg_node *s = src->kids[i], *d = cfg_get(dst, s->key);
		char *sub = diag_fmt("%s.%s", path, s->key);
		int rc = 0;

		if (!sub)
			return -1;
		if (!d && strict) {
			struct diag *e = oerr(o, "GT121", o->val, sub, "override "
					      "'%s' adds '%s', which is not in "
					      "the config", o->arg, sub);
			const char *close = cfg_closest_key(dst, s->key);

			if (close)
				diag_hint(e, "did you mean '%s.%s'? (++%s adds "
					  "new keys)", path, close,
					  o->arg[0] == '+' ? o->arg + 1 : o->arg);
			else
				diag_hint(e, "use ++%s to add new keys",
					  o->arg[0] == '+' ? o->arg + 1 : o->arg);
			rc = -1;
		} else if (is_container(d) && is_container(s)) {
			rc = merge(o, d, s, sub, strict);
		} else {
			src->kids[i] = NULL;
			rc = cfg_map_set(dst, s->key, s);
		}
		free(sub);
		if (rc)
			return -1;
	}
	return 0;
}

/* Puts val at parent[part] (slot idx for a list), merging into an existing
 * map or list. Takes ownership of val. */
static int put(struct octx *o, struct cfg_node *parent, const char *part,
	       size_t idx, struct cfg_node *val, const char *path, int strict)
{
	struct cfg_node *old = parent->kind == CFG_SEQ ? parent->kids[idx]
			       : cfg_get(parent, part);
	int rc;

	if (is_container(old) && is_container(val)) {
		rc = merge(o, old, val, path, strict);
		cfg_free(val);
		return rc;
	}
	if (parent->kind == CFG_SEQ) {
		cfg_free(parent->kids[idx]);
		parent->kids[idx] = val;
		return 0;
	}
	return cfg_map_set(parent, part, val);
}

static void missing(struct octx *o, const struct key *k, size_t i,
		    const struct cfg_node *parent, const char *code,
		    const char *fmt)
{
	char *path = key_path(k, i + 1), *sec = key_path(k, i);
	const char *close = cfg_closest_key(parent, k->part[i]);
	struct diag *d;

	d = oerr(o, code, o->key, path, fmt, o->arg, path ? path : "");
	if (close && strcmp(code, "GT121") == 0)
		diag_hint(d, "did you mean '%s%s%s'? (or +%s to add a new key)",
			  sec && *sec ? sec : "", sec && *sec ? "." : "",
			  close, o->arg);
	else if (close)
		diag_hint(d, "did you mean '%s%s%s'?", sec && *sec ? sec : "",
			  sec && *sec ? "." : "", close);
	else if (parent->kind == CFG_SEQ)
		diag_hint(d, "the list has %zu items; an override can change "
			  "one, not add one", parent->n);
	else if (strcmp(code, "GT121") == 0)
		diag_hint(d, "+%s adds it; check the spelling if it should "
			  "already be there", o->arg);
	else
		diag_hint(d, "there is nothing to delete; `gtplan config "
			  "CONFIG` prints the keys the config has");
	free(path);
	free(sec);
}

static void apply(struct octx *o, struct cfg_node *root, enum op op,
		  const struct key *k, struct cfg_node *val)
{
	struct cfg_node *parent = root, *old;
	char *path = key_path(k, k->n);
	size_t idx = 0, last = k->n - 1;

	for (size_t i = 0; i < last; i++) {
		struct cfg_node *next = child(parent, k->part[i], &idx);

		if (is_container(next)) {
			parent = next;
			continue;
		}
		if (next && (op == OP_CHANGE || op == OP_DEL)) {
			char *sec = key_path(k, i + 1);

			oerr(o, op == OP_DEL ? "GT123" : "GT121", o->key, path,
			     "override '%s' %s '%s', but '%s' is %s %s, not a "
			     "map", o->arg, op == OP_DEL ? "deletes" : "changes",
			     path, sec ? sec : "",
			     next->kind == CFG_INT ? "an" : "a",
			     cfg_kind_name(next->kind));
			free(sec);
			goto out;
		}
		if (op == OP_CHANGE || op == OP_DEL || parent->kind != CFG_MAP) {
			missing(o, k, next ? i + 1 : i, next ? next : parent,
				op == OP_DEL ? "GT123" : "GT121",
				op == OP_DEL ? "override '%s' deletes '%s', which "
					       "does not exist"
					     : "override '%s' changes '%s', which "
					       "is not in the config");
			goto out;
		}
		/* + and ++ create the section (replacing a scalar) */
		next = cfg_new(CFG_MAP, loc_at(o, k->at[i]));
		if (!next || cfg_map_set(parent, k->part[i], next))
			goto oom;
		parent = next;
	}
	old = child(parent, k->part[last], &idx);
	if (!old && (op == OP_CHANGE || op == OP_DEL || parent->kind == CFG_SEQ)) {
		missing(o, k, last, parent, op == OP_DEL ? "GT123" : "GT121",
			op == OP_DEL ? "override '%s' deletes '%s', which does "
				       "not exist"
			: parent->kind == CFG_SEQ
			? "override '%s' sets '%s', which is not an item of "
			  "the list"
			: "override '%s' changes '%s', which is not in the "
			  "config");
		goto out;
	}
	switch (op) {
	case OP_DEL:
		if (old->kind == CFG_NULL) {
			diag_hint(oerr(o, "GT123", o->key, path, "override '%s' "
				       "deletes '%s', which is null (Hydra "
				       "treats it as missing)", o->arg, path),
				  "drop the override: a null key is as good as "
				  "absent");
		} else if (val && val->kind != CFG_NULL && !old->interp &&
			   !py_equal(val, old)) {
			diag_hint(oerr(o, "GT123", o->val, path, "override "
				       "'%s' deletes '%s' only if it is '%s', "
				       "but it is %s", o->arg, path,
				       strchr(o->arg, '=') + 1, old->text ?
				       old->text : cfg_kind_name(old->kind)),
				  "write ~%s without a value to delete it "
				  "whatever it is", path);
		} else if (parent->kind == CFG_SEQ) {
			diag_hint(oerr(o, "GT123", o->key, path, "override "
				       "'%s' deletes a list item; Hydra can only "
				       "delete keys", o->arg),
				  "set the whole list instead: %.*s=[...]",
				  (int)(strrchr(path, '.') ? strrchr(path, '.') -
					path : (long)strlen(path)), path);
		} else {
			cfg_map_del(parent, k->part[last]);
		}
		goto out;
	case OP_ADD:
		if (old && old->kind != CFG_NULL && !is_container(val)) {
			struct diag *d = oerr(o, "GT122", o->key, path,
				"override '%s' adds '%s', which already exists",
				o->arg, path);

			diag_hint(d, "drop the '+' to change it (%s), or use "
				  "++ to add or change", o->arg + 1);
			goto out;
		}
		break;
	default:
		break;
	}
	val->key_loc = o->key;
	if (put(o, parent, k->part[last], idx, val, path ? path : "",
		op == OP_CHANGE) && !o->failed)
		goto oom;
	val = NULL;
	goto out;
oom:
	oerr(o, "GT103", o->key, path, "out of memory");
out:
	cfg_free(val);
	free(path);
}

/* One override: [~|+|++]key[=value]. */
static void override_one(struct octx *o, struct cfg_node *root)
{
	const char *s = o->arg, *eq, *v;
	enum op op = OP_CHANGE;
	struct cfg_node *val = NULL;
	struct key k;

	if (s[0] == '~')
		op = OP_DEL, s++;
	else if (s[0] == '+' && s[1] == '+')
		op = OP_FORCE, s += 2;
	else if (s[0] == '+')
		op = OP_ADD, s++;
	eq = strchr(s, '=');
	if (!eq && op != OP_DEL) {
		struct diag *d = oerr(o, "GT120", loc_at(o, o->arg), NULL,
				      "override '%s' has no '='", o->arg);

		diag_hint(d, "write key=value to change a key, +key=value to "
			  "add one, ~key to delete one");
		return;
	}
	o->key = loc_at(o, s);
	if (parse_key(o, s, eq ? (size_t)(eq - s) : strlen(s), &k))
		goto out;
	if (eq) {
		v = eq + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		o->val = loc_at(o, v);
		if (!(val = parse_value(o, v)))
			goto out;
	}
	apply(o, root, op, &k, val);
	val = NULL;
out:
	cfg_free(val);
	key_release(&k);
}

int cfg_override(struct cfg_node *root, int argc, char *const argv[],
		 struct src_set *srcs, struct diag_list *diags)
{
	struct octx o = { diags, -1, NULL, 1, DIAG_NOLOC, DIAG_NOLOC, 0 };
	size_t len = 0;
	char *line;
	int any = 0;

	if (argc <= 0)
		return 0;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (!(line = malloc(len)))
		return -1;
	len = 0;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (i)
			line[len++] = ' ';
		memcpy(line + len, argv[i], n);
		for (size_t j = len; j < len + n; j++)
			if (line[j] == '\n' || line[j] == '\r')
				line[j] = ' '; /* keep it one line */
		len += n;
	}
	line[len] = '\0';
	if ((o.src = src_add(srcs, SRC_CMDLINE, line, len)) < 0)
		return -1;
	for (int i = 0; i < argc; i++) {
		o.arg = argv[i];
		o.failed = 0;
		override_one(&o, root);
		any |= o.failed;
		o.col0 += 1; /* the joining space */
		for (const char *p = argv[i]; *p; p++)
			if (((unsigned char)*p & 0xc0) != 0x80)
				o.col0++;
	}
	return any ? -1 : 0;
}
