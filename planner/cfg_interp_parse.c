/*
 * cfg_interp_parse: the grammar of values with `${...}`, OmegaConf 2.1+'s
 * (OmegaConfGrammarParser.g4), parsed by recursive descent. The same pass
 * checks the syntax only (ps->eval 0) or evaluates the value (ps->eval 1):
 * keys are looked up (interp_lookup) and resolvers called
 * (interp_call_resolver) as they are read.
 */
#include "cfg_interp_int.h"

#include <stdlib.h>
#include <string.h>

/* Stops the parse with a syntax error at the value being resolved. */
static int ps_syntax(struct ps *ps, const char *what)
{
	struct frame *f = interp_top(ps->c);
	struct diag *d;
	size_t off = (size_t)(ps->p - f->node->text);

	d = interp_report(ps->c, "GT112", "malformed interpolation in '%s': "
			  "%s at offset %zu ('%.12s')", f->node->text, what,
			  off, *ps->p ? ps->p : "end of text");
	diag_hint(d, "write ${path.to.key}, ${.sibling}, ${..parent_key}, "
		  "${resolver:arg,...}; quote an argument that holds special "
		  "characters, and write \\${ for a literal ${");
	ps->st = R_FAIL;
	return -1;
}

int ps_fail(struct ps *ps, int st)
{
	ps->st = st;
	return -1;
}

static void skip_ws(struct ps *ps)
{
	ps->p = past_ws(ps->p);
}

static int ps_enter(struct ps *ps)
{
	if (++ps->nest > CFG_MAX_INTERP_DEPTH) {
		interp_report(ps->c, "GT103", "interpolation nests more than "
			      "%d levels of ${...}, [...] and {...}",
			      CFG_MAX_INTERP_DEPTH);
		return ps_fail(ps, R_FAIL);
	}
	return 0;
}

struct cfg_node *ps_site_node(struct ps *ps, enum cfg_kind k)
{
	struct cfg_node *n = cfg_new(k, interp_top(ps->c)->node->loc);

	if (!n)
		ps->c->oom = 1;
	return n;
}

int ps_own_str(struct ps *ps, struct strbuf *b, struct val *out)
{
	struct cfg_node *n;

	if (b->bad == STRBUF_TOOLONG) {
		strbuf_release(b);
		interp_report(ps->c, "GT103", "interpolation builds a string "
			      "longer than %u bytes", CFG_MAX_INTERP_TEXT);
		return ps_fail(ps, R_FAIL);
	}
	if (!ps->eval) {
		strbuf_release(b);
		return 0;
	}
	if (interp_charge_text(ps->c, b->len)) {
		strbuf_release(b);
		return ps_fail(ps, R_FAIL);
	}
	n = ps_site_node(ps, CFG_STR);
	if (!n || b->bad || !(n->text = strbuf_detach(b))) {
		strbuf_release(b);
		cfg_free(n);
		ps->c->oom = 1;
		return ps_fail(ps, R_FAIL);
	}
	out->n = n;
	out->own = 1;
	return 0;
}

static int parse_interp(struct ps *ps, struct val *out);
static int parse_element(struct ps *ps, struct val *out);

/* Appends str() of an evaluated piece. */
static void sb_val(struct strbuf *b, const struct val *v)
{
	if (v->n)
		py_str(b, v->n, 0);
}

/* A run of backslashes. Before `${` (or, inside quotes, before the quote)
 * 2k+1 of them escape it and leave k; 2k leave k and keep its meaning, and
 * ps->p is left on it. Elsewhere they are literal. */
static void backslashes(struct ps *ps, struct strbuf *b, char quote)
{
	size_t n = 0;
	const char *after;

	while (ps->p[n] == '\\')
		n++;
	after = ps->p + n;
	if ((after[0] == '$' && after[1] == '{') ||
	    (quote && after[0] == quote)) {
		size_t esc = n % 2 ? (after[0] == '$' ? 2 : 1) : 0;

		strbuf_addchars(b, '\\', n / 2);
		strbuf_add(b, after, esc);
		ps->p = after + esc;
		return;
	}
	strbuf_add(b, ps->p, n);
	ps->p = after;
}

/* One piece of a string (quoted or the whole value) into b: a run of
 * backslashes, str() of a `${...}`, or one character. */
static int string_piece(struct ps *ps, struct strbuf *b, char quote)
{
	struct val v = { 0 };

	if (*ps->p == '\\') {
		backslashes(ps, b, quote);
	} else if (ps->p[0] == '$' && ps->p[1] == '{') {
		if (parse_interp(ps, &v))
			return -1;
		sb_val(b, &v);
		val_drop(&v);
	} else {
		strbuf_addch(b, *ps->p++);
	}
	return 0;
}

/* A quoted resolver argument: always a string. */
static int parse_quoted(struct ps *ps, struct val *out)
{
	char q = *ps->p++;
	struct strbuf b = INTERP_TEXT_INIT;

	for (;;) {
		if (!*ps->p) {
			strbuf_release(&b);
			return ps_syntax(ps, "unterminated quoted string");
		}
		if (*ps->p == q) {
			ps->p++;
			break;
		}
		if (string_piece(ps, &b, q)) {
			strbuf_release(&b);
			return -1;
		}
	}
	return ps_own_str(ps, &b, out);
}

/* One token of an unquoted value. */
enum tok { T_TEXT, T_ESC, T_WORD, T_INTERP };
struct token {
	enum tok kind;
	const char *s;
	size_t len;
	enum cfg_word w;
	struct val v; /* T_INTERP */
};

/* Appends the token as it reads inside a longer string; drops its value. */
static void token_text(struct strbuf *b, struct token *t)
{
	if (t->kind == T_INTERP) {
		sb_val(b, &t->v);
		val_drop(&t->v);
	} else if (t->kind == T_ESC) {
		for (size_t i = 1; i < t->len; i += 2)
			strbuf_addch(b, t->s[i]);
	} else {
		strbuf_add(b, t->s, t->len);
	}
}

/* The next token at ps->p, or 0 at the end of the value. */
static int next_token(struct ps *ps, struct token *t, int is_key)
{
	const char *p = ps->p, *q;

	memset(t, 0, sizeof(*t));
	t->s = p;
	if (*p == ' ' || *p == '\t') {
		q = past_ws(p);
		if (!*q || strchr(",]}", *q) || (*q == ':' && is_key))
			return 0; /* blanks before a delimiter belong to it */
		t->len = (size_t)((*q == ':' ? past_ws(q + 1) : q) - p);
	} else if (*p == ':') {
		if (is_key)
			return 0;
		t->len = (size_t)(past_ws(p + 1) - p);
	} else if (!*p || strchr(",]}", *p)) {
		return 0;
	} else if (p[0] == '$' && p[1] == '{' && !is_key) {
		t->kind = T_INTERP;
		if (parse_interp(ps, &t->v))
			return -1;
		t->len = (size_t)(ps->p - p);
		return 1;
	} else if (p[0] == '\\' && is_escapable(p[1])) {
		t->kind = T_ESC;
		while (p[t->len] == '\\' && is_escapable(p[t->len + 1]))
			t->len += 2;
	} else if ((t->len = cfg_lex_word(p, &t->w)) > 0) {
		t->kind = T_WORD;
	} else if (strchr("/-\\+.$%*@?|", *p)) {
		t->len = 1;
	} else {
		return ps_syntax(ps, *p == '\'' || *p == '"'
				 ? "a quote inside an unquoted value"
				 : "a character that must be quoted");
	}
	ps->p = p + t->len;
	return 1;
}

/* An unquoted value (or a dict key): words, punctuation, escapes, colons,
 * inner blanks and `${...}`. One token keeps its type (`4`, `null`, `${x}`);
 * several make a string. */
static int parse_primitive(struct ps *ps, struct val *out, int is_key)
{
	struct strbuf b = INTERP_TEXT_INIT;
	struct token first = { 0 }, t;
	size_t ntok = 0;
	int r;

	while ((r = next_token(ps, &t, is_key)) > 0) {
		if (ntok == 0) {
			first = t;
		} else {
			if (ntok == 1)
				token_text(&b, &first);
			token_text(&b, &t);
		}
		ntok++;
	}
	if (r < 0 || ntok == 0) {
		if (ntok == 1)
			val_drop(&first.v);
		strbuf_release(&b);
		return r < 0 ? -1 : ps_syntax(ps, is_key ? "expected a key"
					      : "expected a value");
	}
	if (ntok > 1 || first.kind == T_ESC || first.kind == T_TEXT) {
		if (ntok == 1)
			token_text(&b, &first);
		return ps_own_str(ps, &b, out);
	}
	if (first.kind == T_INTERP) {
		*out = first.v;
		return 0;
	}
	if (!ps->eval)
		return 0;
	out->n = ps_site_node(ps, CFG_STR);
	out->own = 1;
	if (out->n && !cfg_word_value(out->n, first.w, first.s, first.len))
		return 0;
	if (out->n && first.w == CFG_WORD_INT) {
		val_drop(out);
		interp_report(ps->c, "GT114", "'%.*s' does not fit in a 64-bit "
			      "integer", (int)first.len, first.s);
		return ps_fail(ps, R_FAIL);
	}
	val_drop(out);
	ps->c->oom = 1;
	return ps_fail(ps, R_FAIL);
}

/* sequence: (element (',' element?)*) | (',' element?)+, up to `close`.
 * Missing elements are empty strings, as OmegaConf 2.1+ reads them. */
static int parse_seq(struct ps *ps, char close, struct vals *out)
{
	int prev_comma = 1, any = 0;

	for (;;) {
		const char *q = past_ws(ps->p);
		struct val v = { 0 };

		if (*q == close) {
			ps->p = q + 1;
			break;
		}
		if (*q == ',') {
			ps->p = past_ws(q + 1);
			if (prev_comma && ps->eval) {
				struct strbuf e = INTERP_TEXT_INIT;

				if (ps_own_str(ps, &e, &v) || vals_push(out, v))
					return ps_fail(ps, R_FAIL);
			}
			prev_comma = any = 1;
			continue;
		}
		if (!prev_comma || !*q)
			return ps_syntax(ps, close == '}' ? "expected ',' or '}'"
					 : "expected ',' or ']'");
		if (parse_element(ps, &v))
			return -1;
		if (ps->eval && vals_push(out, v))
			return ps_fail(ps, R_FAIL);
		prev_comma = 0;
		any = 1;
	}
	if (any && prev_comma && ps->eval) {
		struct strbuf e = INTERP_TEXT_INIT;
		struct val v = { 0 };

		if (ps_own_str(ps, &e, &v) || vals_push(out, v))
			return ps_fail(ps, R_FAIL);
	}
	return 0;
}

/* Moves or copies v into a list or dict being built. */
static int adopt(struct ps *ps, struct cfg_node *into, struct val *v,
		 const char *key)
{
	struct cfg_node *n = v->own ? v->n
				    : interp_copy_counted(ps->c, v->n);

	if (!n)
		return ps_fail(ps, R_FAIL);
	v->n = NULL;
	v->own = 0;
	if (key ? cfg_map_set(into, key, n) : cfg_append(into, n)) {
		ps->c->oom = 1;
		return ps_fail(ps, R_FAIL);
	}
	return 0;
}

static int parse_list(struct ps *ps, struct val *out)
{
	struct vals items = { 0 };
	struct cfg_node *list = NULL;

	ps->p = past_ws(ps->p + 1);
	if (ps_enter(ps) || parse_seq(ps, ']', &items))
		goto fail;
	ps->nest--;
	if (ps->eval) {
		if (!(list = ps_site_node(ps, CFG_SEQ)))
			goto oom;
		for (size_t i = 0; i < items.n; i++)
			if (adopt(ps, list, &items.v[i], NULL))
				goto fail;
		out->n = list;
		out->own = 1;
	}
	vals_release(&items);
	return 0;
oom:
	ps->st = R_FAIL;
fail:
	cfg_free(list);
	vals_release(&items);
	return -1;
}

static int parse_dict(struct ps *ps, struct val *out)
{
	struct cfg_node *map = NULL;
	struct val k = { 0 }, v = { 0 };
	struct strbuf key = INTERP_TEXT_INIT;

	ps->p = past_ws(ps->p + 1);
	if (ps_enter(ps))
		return -1;
	if (ps->eval && !(map = ps_site_node(ps, CFG_MAP)))
		return ps_fail(ps, R_FAIL);
	if (*past_ws(ps->p) == '}') {
		ps->p = past_ws(ps->p) + 1;
	} else {
		for (;;) {
			if (parse_primitive(ps, &k, 1))
				goto fail;
			skip_ws(ps);
			if (*ps->p != ':') {
				ps_syntax(ps, "expected ':' after a dict key");
				goto fail;
			}
			ps->p = past_ws(ps->p + 1);
			if (parse_element(ps, &v))
				goto fail;
			if (ps->eval) {
				sb_val(&key, &k);
				if (key.bad || adopt(ps, map, &v, key.buf ? key.buf : ""))
					goto fail;
				strbuf_release(&key);
			}
			val_drop(&k);
			skip_ws(ps);
			if (*ps->p == '}') {
				ps->p++;
				break;
			}
			if (*ps->p != ',') {
				ps_syntax(ps, "expected ',' or '}' in a dict");
				goto fail;
			}
			ps->p = past_ws(ps->p + 1);
		}
	}
	ps->nest--;
	out->n = map;
	out->own = map != NULL;
	return 0;
fail:
	if (ps->st == R_OK)
		ps->st = R_FAIL;
	strbuf_release(&key);
	val_drop(&k);
	val_drop(&v);
	cfg_free(map);
	return -1;
}

static int parse_element(struct ps *ps, struct val *out)
{
	switch (*ps->p) {
	case '[': return parse_list(ps, out);
	case '{': return parse_dict(ps, out);
	case '\'':
	case '"': return parse_quoted(ps, out);
	default: return parse_primitive(ps, out, 0);
	}
}

struct parts {
	char **v;
	size_t n, cap;
	int all_id; /* every part is an identifier (a resolver name) */
};

static void parts_release(struct parts *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		free(ks->v[i]);
	free(ks->v);
}

static int parts_push(struct parts *ks, const char *s, size_t n)
{
	char *k;

	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 8;
		char **v = realloc(ks->v, cap * sizeof(*v));

		if (!v)
			return -1;
		ks->v = v;
		ks->cap = cap;
	}
	if (!(k = strndup(s, n)))
		return -1;
	ks->v[ks->n++] = k;
	return 0;
}

/* One key part: a run of key characters, or a `${...}` giving a string
 * (split at dots, as OmegaConf joins the key before splitting it). */
static int parse_part(struct ps *ps, struct parts *ks)
{
	size_t n = 0;

	if (ps->p[0] == '$' && ps->p[1] == '{') {
		struct val v = { 0 };
		const char *s;

		if (parse_interp(ps, &v))
			return -1;
		if (!ps->eval)
			return 0;
		if (v.n->kind != CFG_STR) {
			interp_report(ps->c, "GT112", "an interpolation used "
				      "as a key gives %s, not a string",
				      cfg_kind_name(v.n->kind));
			val_drop(&v);
			return ps_fail(ps, R_FAIL);
		}
		for (s = v.n->text;; s += n + 1) {
			n = strcspn(s, ".");
			if (parts_push(ks, s, n)) {
				val_drop(&v);
				ps->c->oom = 1;
				return ps_fail(ps, R_FAIL);
			}
			if (!s[n])
				break;
		}
		val_drop(&v);
		return 0;
	}
	while (ps->p[n] && !strchr("\\{}()[]:. \t'\"", ps->p[n]))
		n++;
	if (n == 0)
		return ps_syntax(ps, "expected a key");
	if (!(is_alpha(ps->p[0]) || ps->p[0] == '_'))
		ks->all_id = 0;
	for (size_t i = 1; i < n; i++)
		if (!is_alpha(ps->p[i]) && !is_digit(ps->p[i]) &&
		    !strchr("_-", ps->p[i]))
			ks->all_id = 0;
	if (parts_push(ks, ps->p, n)) {
		ps->c->oom = 1;
		return ps_fail(ps, R_FAIL);
	}
	ps->p += n;
	return 0;
}

/* `${` [.]* key (.key | [key])* `}`  or  `${` name `:` args `}` */
static int parse_interp(struct ps *ps, struct val *out)
{
	const char *start = ps->p;
	struct parts ks = { NULL, 0, 0, 1 };
	struct vals args = { 0 };
	struct strbuf name = INTERP_TEXT_INIT;
	size_t ndots = 0;
	int brackets = 0, rc = -1;

	ps->p += 2;
	if (ps_enter(ps))
		return -1;
	skip_ws(ps);
	while (*ps->p == '.')
		ndots++, ps->p++;
	for (int first = 1;; first = 0) {
		int bracket = *ps->p == '[';

		if (!first && !bracket && *ps->p != '.')
			break;
		if (!first || bracket)
			ps->p++;
		if (parse_part(ps, &ks))
			goto out;
		if (bracket) {
			if (*ps->p != ']') {
				ps_syntax(ps, "expected ']'");
				goto out;
			}
			ps->p++;
			brackets = 1;
		}
	}
	skip_ws(ps);
	if (*ps->p == '}') {
		ps->p++;
		ps->nest--;
		rc = ps->eval ? interp_lookup(ps, ndots, ks.v, ks.n, start,
					      (size_t)(ps->p - start), out)
			      : 0;
		goto out;
	}
	if (*ps->p != ':') {
		ps_syntax(ps, "expected '}'");
		goto out;
	}
	if (ndots || brackets || !ks.all_id) {
		ps_syntax(ps, "a resolver name is identifiers joined by dots");
		goto out;
	}
	for (size_t i = 0; i < ks.n; i++) {
		if (i)
			strbuf_addch(&name, '.');
		strbuf_addstr(&name, ks.v[i]);
	}
	ps->p = past_ws(ps->p + 1);
	if (parse_seq(ps, '}', &args))
		goto out;
	ps->nest--;
	rc = 0;
	if (ps->eval && !name.bad)
		rc = interp_call_resolver(ps, name.buf ? name.buf : "", &args,
					  start, (size_t)(ps->p - start), out);
out:
	if (name.bad && ps->st == R_OK) {
		ps->c->oom = 1;
		ps->st = R_FAIL;
		rc = -1;
	}
	strbuf_release(&name);
	vals_release(&args);
	parts_release(&ks);
	return rc;
}

/* The whole value: one `${...}` keeps the value's type; else a string. */
static int parse_top(struct ps *ps, struct val *out)
{
	struct strbuf b = INTERP_TEXT_INIT;
	struct val v = { 0 };

	if (ps->p[0] == '$' && ps->p[1] == '{') {
		if (parse_interp(ps, &v))
			return -1;
		if (!*ps->p) {
			*out = v;
			return 0;
		}
		sb_val(&b, &v);
		val_drop(&v);
	}
	while (*ps->p) {
		if (string_piece(ps, &b, 0)) {
			strbuf_release(&b);
			return -1;
		}
	}
	return ps_own_str(ps, &b, out);
}

int interp_parse(struct rctx *c, struct cfg_node *n, int eval,
		 struct val *out)
{
	struct ps ps = { c, n->text, eval, 0, R_OK };

	return parse_top(&ps, out) ? (ps.st == R_OK ? R_FAIL : ps.st) : R_OK;
}
