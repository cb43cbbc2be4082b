/*
 * cfg_override_parse: Hydra's override grammar (OverrideLexer.g4,
 * OverrideParser.g4) for one `key=value` argument: the dotted key, and the
 * value as a config node located on the command line.
 */
#include "cfg_override_int.h"
#include "cfg_interp_lex_int.h"
#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

/* ---- values ------------------------------------------------------------- */

struct vp {
	struct octx *o;
	const char *p;
	int nest;
};

static int vp_error(struct vp *v, const char *what)
{
	struct diag *d = override_error(v->o, "GT120", v->o->val, NULL,
					"malformed value in override '%s': %s "
					"at '%.12s'", v->o->arg, what,
					*v->p ? v->p : "the end");

	diag_hint(d, "values are Hydra's: 4, 1e-5, true, null, text, "
		  "'quoted text', [1,2], {a: 1}; quote a value that holds "
		  "spaces, commas, brackets or parentheses");
	return -1;
}

/* A fresh string node at `at` holding `text`, which it frees; NULL when
 * text is NULL or memory runs out. */
static struct cfg_node *str_node(struct vp *v, const char *at, char *text)
{
	struct cfg_node *n;

	if (!text)
		return NULL;
	n = cfg_new_str(text, override_loc(v->o, at));
	free(text);
	return n;
}

/* 'text' or "text": a backslash escapes the quote; backslashes right before
 * the closing quote are halved. */
static struct cfg_node *vp_quoted(struct vp *v)
{
	const char *at = v->p;
	char q = *v->p++;
	struct strbuf sb = STRBUF_INIT;

	for (;;) {
		size_t n = 0;

		if (!*v->p) {
			strbuf_release(&sb);
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
				strbuf_addch(&sb, '\\');
			v->p += n;
			if (n % 2) {
				strbuf_addch(&sb, q);
				v->p++;
			}
			continue;
		}
		if (n) {
			strbuf_add(&sb, v->p, n);
			v->p += n;
			continue;
		}
		strbuf_addch(&sb, *v->p++);
	}
	return str_node(v, at, strbuf_detach(&sb));
}

/* An unquoted value (or dict key): words, punctuation, escapes, colons,
 * inner blanks and `${...}`. One token keeps its type; several make a
 * string, with escapes undone. Blanks before a delimiter are not part of
 * it. Over 80 lines on purpose: one lexer loop whose branches are the
 * grammar's token kinds (OverrideLexer.g4), in the grammar's order. */
static struct cfg_node *vp_primitive(struct vp *v, int is_key)
{
	const char *at = v->p, *tok = NULL;
	enum cfg_word w = CFG_WORD_NONE;
	size_t ntok = 0, tlen = 0;
	int esc = 0;
	struct strbuf sb = STRBUF_INIT;
	struct cfg_node *n;

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
				strbuf_addch(&sb, p[i]);
		else
			strbuf_add(&sb, p, k);
		if (ntok++ == 0) {
			tok = p;
			tlen = k;
			w = this_w;
			esc = this_esc;
		}
		v->p = p + k;
	}
	if (ntok == 0) {
		strbuf_release(&sb);
		vp_error(v, is_key ? "an empty key" : "an empty value");
		return NULL;
	}
	if (ntok > 1 || esc || w == CFG_WORD_NONE)
		return str_node(v, at, strbuf_detach(&sb));
	strbuf_release(&sb);
	if (!(n = cfg_new(CFG_STR, override_loc(v->o, at))))
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
	strbuf_release(&sb);
	return NULL;
}

static struct cfg_node *vp_element(struct vp *v);

static int vp_enter(struct vp *v)
{
	if (++v->nest > CFG_MAX_DEPTH) {
		override_error(v->o, "GT103", v->o->val, NULL, "override value "
			       "'%s' nests more than %d levels", v->o->arg,
			       CFG_MAX_DEPTH);
		return -1;
	}
	return 0;
}

static struct cfg_node *vp_list(struct vp *v)
{
	struct cfg_node *list = cfg_new(CFG_SEQ, override_loc(v->o, v->p));

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
	struct cfg_node *map = cfg_new(CFG_MAP, override_loc(v->o, v->p));

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
			val->key_loc = override_loc(v->o, kat);
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

struct cfg_node *override_parse_value(struct octx *o, const char *s)
{
	struct vp v = { o, s, 0 };
	struct cfg_node *n;

	if (!*s)
		return cfg_new_str("", override_loc(o, s));
	n = vp_element(&v);
	if (!n) {
		if (!o->failed)
			override_error(o, "GT103", o->val, NULL,
				       "out of memory");
		return NULL;
	}
	v.p = past_ws(v.p);
	if (*v.p == ',') {
		struct diag *d = override_error(o, "GT120", o->val, NULL,
						"override '%s' is a sweep (a "
						"Hydra multirun): NeMo-RL "
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

void override_key_release(struct key *k)
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

/* Why a key cannot go on with c. */
static const char *bad_key_char(char c)
{
	return c == '/' || c == '@'
	       ? "a config group or package (a/b, key@pkg), which NeMo-RL "
		 "does not have"
	       : "a character that cannot be in a key";
}

int override_parse_key(struct octx *o, const char *s, size_t len,
		       struct key *k)
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
			    : bad_key_char(*p);
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
			why = bad_key_char(*q);
			break;
		}
		p = q + 1;
	}
	if (!why && k->n == 1 && k->part[0][0] >= '0' && k->part[0][0] <= '9')
		why = "a key that is only a list index";
	if (!why)
		return 0;
	d = override_error(o, "GT120", o->key, NULL, "malformed key in "
			   "override '%s': %s", o->arg, why);
	diag_hint(d, "keys are dotted paths of letters, digits, '_' and '$' "
		  "(policy.megatron_cfg.tensor_model_parallel_size, "
		  "data.files.0)");
	return -1;
}

char *override_key_path(const struct key *k, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		if (i)
			strbuf_addch(&sb, '.');
		strbuf_addstr(&sb, k->part[i]);
	}
	return strbuf_detach(&sb);
}
