/*
 * cfg_interp: resolves `${...}` in place, as OmegaConf.to_container(cfg,
 * resolve=True) does once NeMo-RL has registered its resolvers
 * (nemo_rl/utils/config.py: add, sub, mul, div and max, each a two-argument
 * Python lambda) next to OmegaConf's own oc.env.
 *
 * The grammar is OmegaConf 2.1+'s (OmegaConfGrammarLexer/Parser.g4): a value
 * that is exactly one `${...}` takes the referenced node's type and structure;
 * anything else is a string in which each interpolation is replaced by
 * Python's str() of its value. Keys are absolute (`a.b`, `a[0]`, `a.0`) or
 * relative to the node's own section (`.x`, and one level up per extra dot).
 * Resolver arguments are typed like OmegaConf does (ints, floats, bools,
 * null, quoted strings, [lists], {dicts}, nested `${...}`, unquoted strings).
 *
 * Every string is parsed twice: once for the syntax only (so a malformed
 * value is reported as such, whatever it refers to), then to evaluate it.
 * Nodes are resolved on demand, depth-first, with the chain of nodes being
 * resolved kept on a stack for cycle detection and for the diagnostics.
 *
 * Deliberate differences from OmegaConf:
 *  - str() of a whole map or list inside a larger string shows its resolved
 *    values (OmegaConf shows the raw `${...}` text of its members), and a
 *    map that refers back to the string being built is a cycle here;
 *  - integers are 64-bit: a result that overflows is an error (GT114);
 *  - `${oc.env:X}` with X unset and no default is left as it is, with a note;
 *  - oc.select, oc.decode, oc.create, oc.deprecated and oc.dict.* are
 *    reported as unsupported (GT112); NeMo-RL's configs do not use them.
 */
#include "cfg.h"
#include "levenshtein.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- strings ------------------------------------------------------------ */

/* A growing string; `bad` is set (and further appends ignored) when memory
 * runs out (1) or the text passes CFG_MAX_INTERP_TEXT (2). */
struct sbuf {
	char *s;
	size_t n, cap;
	int bad;
};

static void sb_addn(struct sbuf *b, const char *s, size_t n)
{
	if (b->bad)
		return;
	if (b->n + n > CFG_MAX_INTERP_TEXT) {
		b->bad = 2;
		return;
	}
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 32;
		char *p;

		while (cap < b->n + n + 1)
			cap *= 2;
		p = realloc(b->s, cap);
		if (!p) {
			b->bad = 1;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->n, s, n);
	b->n += n;
	b->s[b->n] = '\0';
}

static void sb_add(struct sbuf *b, const char *s)
{
	sb_addn(b, s, strlen(s));
}

static void sb_addc(struct sbuf *b, char c)
{
	sb_addn(b, &c, 1);
}

static void sb_repeat(struct sbuf *b, char c, size_t n)
{
	while (n--)
		sb_addc(b, c);
}

/* Hands the text over (never NULL unless bad); the buffer is empty after. */
static char *sb_take(struct sbuf *b)
{
	char *s = b->s;

	if (!s && !b->bad)
		s = calloc(1, 1);
	b->s = NULL;
	b->n = b->cap = 0;
	return s;
}

static void sb_release(struct sbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->n = b->cap = 0;
}

/* Python's repr() of a float: the shortest text that reads back the same,
 * in exponent form when the decimal point is outside (-4, 16]. */
static void py_float(struct sbuf *b, double v)
{
	char e[40], digits[24];
	int prec, exp, nd = 0, point;
	const char *p;

	if (isnan(v)) {
		sb_add(b, "nan");
		return;
	}
	if (isinf(v)) {
		sb_add(b, v < 0 ? "-inf" : "inf");
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec, v);
		if (strtod(e, NULL) == v)
			break;
	}
	p = e;
	if (*p == '-')
		sb_addc(b, *p++);
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	exp = atoi(p + 1);
	point = exp + 1;
	if (point > -4 && point <= 16) {
		if (point <= 0) {
			sb_add(b, "0.");
			sb_repeat(b, '0', (size_t)-point);
			sb_add(b, digits);
		} else if (point >= nd) {
			sb_add(b, digits);
			sb_repeat(b, '0', (size_t)(point - nd));
			sb_add(b, ".0");
		} else {
			sb_addn(b, digits, (size_t)point);
			sb_addc(b, '.');
			sb_add(b, digits + point);
		}
	} else {
		snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+',
			 exp < 0 ? -exp : exp);
		sb_addc(b, digits[0]);
		if (nd > 1) {
			sb_addc(b, '.');
			sb_add(b, digits + 1);
		}
		sb_add(b, e);
	}
}

/* Python's repr() of a str: single quotes unless the text has one and no
 * double quote. */
static void py_repr_str(struct sbuf *b, const char *s)
{
	char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
	char esc[8];

	sb_addc(b, q);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\' || *p == (unsigned char)q) {
			sb_addc(b, '\\');
			sb_addc(b, (char)*p);
		} else if (*p == '\n') {
			sb_add(b, "\\n");
		} else if (*p == '\r') {
			sb_add(b, "\\r");
		} else if (*p == '\t') {
			sb_add(b, "\\t");
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			sb_add(b, esc);
		} else {
			sb_addc(b, (char)*p);
		}
	}
	sb_addc(b, q);
}

/* Python's str() of a value (repr() inside lists and dicts). */
static void py_str(struct sbuf *b, const struct cfg_node *n, int repr)
{
	char num[32];

	switch (n->kind) {
	case CFG_NULL: sb_add(b, "None"); break;
	case CFG_BOOL: sb_add(b, n->v.b ? "True" : "False"); break;
	case CFG_INT:
		snprintf(num, sizeof(num), "%lld", n->v.i);
		sb_add(b, num);
		break;
	case CFG_FLOAT: py_float(b, n->v.f); break;
	case CFG_STR:
		if (repr)
			py_repr_str(b, n->text ? n->text : "");
		else
			sb_add(b, n->text ? n->text : "");
		break;
	case CFG_MAP:
	case CFG_SEQ:
		sb_addc(b, n->kind == CFG_MAP ? '{' : '[');
		for (size_t i = 0; i < n->n && !b->bad; i++) {
			if (i)
				sb_add(b, ", ");
			if (n->kind == CFG_MAP) {
				py_repr_str(b, n->kids[i]->key);
				sb_add(b, ": ");
			}
			py_str(b, n->kids[i], 1);
		}
		sb_addc(b, n->kind == CFG_MAP ? '}' : ']');
		break;
	}
}

/* ---- words shared with cfg_override.c ------------------------------------ */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* DIGIT ('_'? DIGIT)* */
static size_t lex_digits(const char *s)
{
	size_t i;

	if (!is_digit(s[0]))
		return 0;
	for (i = 1;;) {
		if (is_digit(s[i]))
			i++;
		else if (s[i] == '_' && is_digit(s[i + 1]))
			i += 2;
		else
			return i;
	}
}

/* INT_UNSIGNED: '0' | [1-9] ('_'? DIGIT)* */
static size_t lex_uint(const char *s)
{
	if (s[0] == '0')
		return 1;
	return s[0] >= '1' && s[0] <= '9' ? lex_digits(s) : 0;
}

static size_t lex_exponent(const char *s)
{
	size_t i = 1, d;

	if (s[0] != 'e' && s[0] != 'E')
		return 0;
	if (s[i] == '+' || s[i] == '-')
		i++;
	d = lex_digits(s + i);
	return d ? i + d : 0;
}

static int word_is(const char *s, const char *w)
{
	for (; *w; s++, w++)
		if ((*s | 0x20) != *w)
			return 0;
	return 1;
}

static size_t lex_float(const char *s)
{
	size_t i = (s[0] == '+' || s[0] == '-'), u, point = 0, mant, e;

	if (word_is(s + i, "inf") || word_is(s + i, "nan"))
		return i + 3;
	u = lex_uint(s + i);
	if (u && s[i + u] == '.')
		point = u + 1 + lex_digits(s + i + u + 1);
	else if (!u && s[i] == '.' && lex_digits(s + i + 1))
		point = 1 + lex_digits(s + i + 1);
	mant = point ? point : u;
	e = mant ? lex_exponent(s + i + mant) : 0;
	if (e)
		return i + mant + e;
	return point ? i + point : 0;
}

size_t cfg_lex_word(const char *s, enum cfg_word *w)
{
	size_t sign = (s[0] == '+' || s[0] == '-'), len[6] = { 0 }, best = 0;

	len[CFG_WORD_FLOAT] = lex_float(s);
	if (lex_uint(s + sign))
		len[CFG_WORD_INT] = sign + lex_uint(s + sign);
	if (word_is(s, "true"))
		len[CFG_WORD_BOOL] = 4;
	else if (word_is(s, "false"))
		len[CFG_WORD_BOOL] = 5;
	if (word_is(s, "null"))
		len[CFG_WORD_NULL] = 4;
	if (is_alpha(s[0]) || s[0] == '_') {
		size_t i = 1;

		while (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '_' ||
		       s[i] == '-')
			i++;
		len[CFG_WORD_ID] = i;
	}
	*w = CFG_WORD_NONE;
	for (int k = CFG_WORD_FLOAT; k <= CFG_WORD_ID; k++)
		if (len[k] > best) {
			best = len[k];
			*w = (enum cfg_word)k;
		}
	return best;
}

int cfg_word_value(struct cfg_node *n, enum cfg_word w, const char *s,
		   size_t len)
{
	char *text = strndup(s, len), *num, *end;
	size_t j = 0;
	int rc = 0;

	if (!text)
		return -1;
	free(n->text);
	n->text = text;
	n->interp = 0;
	switch (w) {
	case CFG_WORD_INT:
	case CFG_WORD_FLOAT:
		num = malloc(len + 1);
		if (!num)
			return -1;
		for (size_t i = 0; i < len; i++)
			if (s[i] != '_')
				num[j++] = s[i];
		num[j] = '\0';
		errno = 0;
		if (w == CFG_WORD_INT) {
			n->kind = CFG_INT;
			n->v.i = strtoll(num, &end, 10);
			rc = errno ? -1 : 0;
		} else {
			n->kind = CFG_FLOAT;
			n->v.f = strtod(num, &end);
		}
		free(num);
		return rc;
	case CFG_WORD_BOOL:
		n->kind = CFG_BOOL;
		n->v.b = (s[0] | 0x20) == 't';
		return 0;
	case CFG_WORD_NULL:
		n->kind = CFG_NULL;
		return 0;
	default:
		n->kind = CFG_STR;
		return 0;
	}
}

const char *cfg_closest_key(const struct cfg_node *map, const char *key)
{
	const char **keys;
	long best;

	if (!map || map->kind != CFG_MAP || !map->n)
		return NULL;
	keys = malloc(map->n * sizeof(*keys));
	if (!keys)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		keys[i] = map->kids[i]->key;
	best = lev_suggest(key, keys, map->n, NULL);
	free(keys);
	return best < 0 ? NULL : map->kids[best]->key;
}

/* ---- resolution state ---------------------------------------------------- */

/* Outcome of resolving something, worst last. R_ENV: it depends on an unset
 * environment variable (left as it is, with a note at the oc.env site). */
enum { R_OK, R_ENV, R_FAIL };

/* A set of nodes (open addressing on the pointer). */
struct pset {
	const void **v;
	size_t n, cap;
};

static size_t pset_slot(const struct pset *s, const void *p)
{
	uintptr_t h = (uintptr_t)p;

	h ^= h >> 17;
	h *= (uintptr_t)0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1))
		if (!s->v[i] || s->v[i] == p)
			return i;
}

static int pset_has(const struct pset *s, const void *p)
{
	return s->cap && s->v[pset_slot(s, p)] == p;
}

static int pset_add(struct pset *s, const void *p)
{
	if (2 * (s->n + 1) > s->cap) {
		struct pset g = { NULL, 0, s->cap ? 2 * s->cap : 64 };

		g.v = calloc(g.cap, sizeof(*g.v));
		if (!g.v)
			return -1;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i])
				g.v[pset_slot(&g, s->v[i])] = s->v[i];
		g.n = s->n;
		free(s->v);
		*s = g;
	}
	if (!s->v[pset_slot(s, p)]) {
		s->v[pset_slot(s, p)] = p;
		s->n++;
	}
	return 0;
}

/* The nodes from the root down to one node. */
struct chain {
	struct cfg_node **v;
	size_t n, cap;
};

static int chain_push(struct chain *c, struct cfg_node *n)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct cfg_node **v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -1;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = n;
	return 0;
}

/* The path of the last node ("a.b.0.c"); cfg_path() reads it back. */
static char *chain_path(const struct chain *c)
{
	struct sbuf b = { 0 };
	char idx[24];

	for (size_t i = 1; i < c->n; i++) {
		const struct cfg_node *parent = c->v[i - 1];

		if (i > 1)
			sb_addc(&b, '.');
		if (parent->kind == CFG_MAP) {
			sb_add(&b, c->v[i]->key);
		} else {
			size_t k = 0;

			while (k < parent->n && parent->kids[k] != c->v[i])
				k++;
			snprintf(idx, sizeof(idx), "%zu", k);
			sb_add(&b, idx);
		}
	}
	return sb_take(&b);
}

/* One node being resolved. */
struct frame {
	struct cfg_node *node;
	struct chain chain; /* root .. node */
	char *path;
};

struct rctx {
	struct cfg_node *root;
	const struct src_set *srcs;
	struct diag_list *diags;
	struct pset failed;  /* resolution failed; the error is reported */
	struct pset envleft; /* left as it is: an unset variable */
	struct frame stack[CFG_MAX_INTERP_DEPTH];
	size_t depth;
	size_t copied; /* nodes created by resolution, against CFG_MAX_NODES */
	int errors;    /* an error was reported (the list may drop it) */
	int oom;
};

static struct frame *top(struct rctx *c)
{
	return &c->stack[c->depth - 1];
}

/* "a -> b -> c": the paths of the frames from `from` up, then `last`. */
static char *chain_text(struct rctx *c, size_t from, const char *last)
{
	struct sbuf b = { 0 };

	for (size_t i = from; i < c->depth; i++) {
		sb_add(&b, c->stack[i].path);
		sb_add(&b, " -> ");
	}
	sb_add(&b, last);
	return sb_take(&b);
}

/* Adds a finding at `at` (in the value being resolved), with a note at each
 * earlier link of the chain of references that led to it. */
static struct diag *report_v(struct rctx *c, struct diag_loc at,
			     const char *code, const char *fmt, va_list ap)
{
	struct diag *d;
	char *msg = diag_vfmt(fmt, ap);

	if (strcmp(code, "GT113") != 0)
		c->errors = 1;
	d = diag_add(c->diags, code, at, top(c)->path, "%s",
		     msg ? msg : "out of memory");
	free(msg);
	for (size_t i = 0; i + 1 < c->depth; i++)
		diag_note(d, c->stack[i].node->loc, "'%s' refers to '%s' here",
			  c->stack[i].path, c->stack[i + 1].path);
	return d;
}

static struct diag *report(struct rctx *c, const char *code, const char *fmt,
			   ...) __attribute__((format(printf, 3, 4)));
static struct diag *report(struct rctx *c, const char *code, const char *fmt,
			   ...)
{
	struct diag *d;
	va_list ap;

	va_start(ap, fmt);
	d = report_v(c, top(c)->node->loc, code, fmt, ap);
	va_end(ap);
	return d;
}

/* Where the `${...}` text `ref` is written: found on the value's first
 * source line at or after the value's start, else the value's start. */
static struct diag_loc site(struct rctx *c, const char *ref, size_t len)
{
	struct diag_loc at = top(c)->node->loc;
	const char *line, *p, *end;
	size_t n;

	if (!c->srcs || at.src < 0 ||
	    src_line(c->srcs, at.src, at.line, &line, &n) < 0)
		return at;
	end = line + n;
	p = line;
	for (int col = 1; p < end && col < at.col; col++)
		while (++p < end && ((unsigned char)*p & 0xc0) == 0x80)
			;
	for (const char *q = p; q + len <= end; q++)
		if (memcmp(q, ref, len) == 0) {
			for (; p < q; p++)
				if (((unsigned char)*p & 0xc0) != 0x80)
					at.col++;
			break;
		}
	return at;
}

static struct diag *report_ref(struct rctx *c, const char *ref, size_t len,
			       const char *code, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static struct diag *report_ref(struct rctx *c, const char *ref, size_t len,
			       const char *code, const char *fmt, ...)
{
	struct diag *d;
	va_list ap;

	va_start(ap, fmt);
	d = report_v(c, site(c, ref, len), code, fmt, ap);
	va_end(ap);
	return d;
}

static int is_pending(const struct cfg_node *n)
{
	return n->kind == CFG_STR && n->interp;
}

static size_t count_nodes(const struct cfg_node *n)
{
	size_t k = 1;

	for (size_t i = 0; i < n->n; i++)
		k += count_nodes(n->kids[i]);
	return k;
}

/* ---- values -------------------------------------------------------------- */

/* An evaluated piece: a node of the tree (borrowed) or a fresh one (own).
 * While only the syntax is checked, n is NULL. */
struct val {
	struct cfg_node *n;
	int own;
};

static void val_drop(struct val *v)
{
	if (v->own)
		cfg_free(v->n);
	v->n = NULL;
	v->own = 0;
}

struct vals {
	struct val *v;
	size_t n, cap;
};

static void vals_release(struct vals *vs)
{
	for (size_t i = 0; i < vs->n; i++)
		val_drop(&vs->v[i]);
	free(vs->v);
	vs->v = NULL;
	vs->n = vs->cap = 0;
}

static int vals_push(struct vals *vs, struct val v)
{
	if (vs->n == vs->cap) {
		size_t cap = vs->cap ? 2 * vs->cap : 4;
		struct val *p = realloc(vs->v, cap * sizeof(*p));

		if (!p) {
			val_drop(&v);
			return -1;
		}
		vs->v = p;
		vs->cap = cap;
	}
	vs->v[vs->n++] = v;
	return 0;
}

/* A deep copy counted against CFG_MAX_NODES (so that `${a}` lists of
 * `${a}` lists cannot blow up); NULL after reporting. */
static struct cfg_node *copy_counted(struct rctx *c, const struct cfg_node *n)
{
	size_t k = count_nodes(n);
	struct cfg_node *copy;

	if (c->copied + k > CFG_MAX_NODES) {
		report(c, "GT103", "interpolations copy more than %d nodes",
		       CFG_MAX_NODES);
		return NULL;
	}
	copy = cfg_clone(n);
	if (!copy) {
		c->oom = 1;
		return NULL;
	}
	c->copied += k;
	return copy;
}

/* ---- the parser ---------------------------------------------------------- */

struct ps {
	struct rctx *c;
	const char *p;
	int eval; /* 0: check the syntax only */
	int nest; /* ${, [ and { nesting */
	int st;   /* R_OK while parsing goes on */
};

/* Stops the parse with a syntax error at the value being resolved. */
static int ps_syntax(struct ps *ps, const char *what)
{
	struct frame *f = top(ps->c);
	struct diag *d;
	size_t off = (size_t)(ps->p - f->node->text);

	d = report(ps->c, "GT112", "malformed interpolation in '%s': %s at "
		   "offset %zu ('%.12s')", f->node->text, what, off,
		   *ps->p ? ps->p : "end of text");
	diag_hint(d, "write ${path.to.key}, ${.sibling}, ${..parent_key}, "
		  "${resolver:arg,...}; quote an argument that holds special "
		  "characters, and write \\${ for a literal ${");
	ps->st = R_FAIL;
	return -1;
}

static int ps_fail(struct ps *ps, int st)
{
	ps->st = st;
	return -1;
}

static void skip_ws(struct ps *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
}

static const char *past_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static int ps_enter(struct ps *ps)
{
	if (++ps->nest > CFG_MAX_INTERP_DEPTH) {
		report(ps->c, "GT103", "interpolation nests more than %d levels "
		       "of ${...}, [...] and {...}", CFG_MAX_INTERP_DEPTH);
		return ps_fail(ps, R_FAIL);
	}
	return 0;
}

/* A fresh node at the interpolation site. */
static struct cfg_node *site_node(struct ps *ps, enum cfg_kind k)
{
	struct cfg_node *n = cfg_new(k, top(ps->c)->node->loc);

	if (!n)
		ps->c->oom = 1;
	return n;
}

static int own_str(struct ps *ps, struct sbuf *b, struct val *out)
{
	struct cfg_node *n;

	if (b->bad == 2) {
		sb_release(b);
		report(ps->c, "GT103", "interpolation builds a string longer "
		       "than %u bytes", CFG_MAX_INTERP_TEXT);
		return ps_fail(ps, R_FAIL);
	}
	if (!ps->eval) {
		sb_release(b);
		return 0;
	}
	n = site_node(ps, CFG_STR);
	if (!n || b->bad || !(n->text = sb_take(b))) {
		sb_release(b);
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
static int lookup(struct ps *ps, size_t ndots, char **parts, size_t n,
		  const char *ref, size_t ref_len, struct val *out);
static int call_resolver(struct ps *ps, const char *name, struct vals *args,
			 const char *ref, size_t ref_len, struct val *out);

/* Appends str() of an evaluated piece. */
static void sb_val(struct sbuf *b, const struct val *v)
{
	if (v->n)
		py_str(b, v->n, 0);
}

/* A run of backslashes. Before `${` (or, inside quotes, before the quote)
 * 2k+1 of them escape it and leave k; 2k leave k and keep its meaning, and
 * ps->p is left on it. Elsewhere they are literal. */
static void backslashes(struct ps *ps, struct sbuf *b, char quote)
{
	size_t n = 0;
	const char *after;

	while (ps->p[n] == '\\')
		n++;
	after = ps->p + n;
	if ((after[0] == '$' && after[1] == '{') ||
	    (quote && after[0] == quote)) {
		size_t esc = n % 2 ? (after[0] == '$' ? 2 : 1) : 0;

		sb_repeat(b, '\\', n / 2);
		sb_addn(b, after, esc);
		ps->p = after + esc;
		return;
	}
	sb_addn(b, ps->p, n);
	ps->p = after;
}

/* A quoted resolver argument: always a string. */
static int parse_quoted(struct ps *ps, struct val *out)
{
	char q = *ps->p++;
	struct sbuf b = { 0 };
	struct val v = { 0 };

	for (;;) {
		if (!*ps->p) {
			sb_release(&b);
			return ps_syntax(ps, "unterminated quoted string");
		}
		if (*ps->p == q) {
			ps->p++;
			break;
		}
		if (*ps->p == '\\') {
			backslashes(ps, &b, q);
		} else if (ps->p[0] == '$' && ps->p[1] == '{') {
			if (parse_interp(ps, &v)) {
				sb_release(&b);
				return -1;
			}
			sb_val(&b, &v);
			val_drop(&v);
		} else {
			sb_addc(&b, *ps->p++);
		}
	}
	return own_str(ps, &b, out);
}

static int is_escapable(char c)
{
	return c && strchr("\\()[]{}:=, \t", c) != NULL;
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
static void token_text(struct sbuf *b, struct token *t)
{
	if (t->kind == T_INTERP) {
		sb_val(b, &t->v);
		val_drop(&t->v);
	} else if (t->kind == T_ESC) {
		for (size_t i = 1; i < t->len; i += 2)
			sb_addc(b, t->s[i]);
	} else {
		sb_addn(b, t->s, t->len);
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
	struct sbuf b = { 0 };
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
		sb_release(&b);
		return r < 0 ? -1 : ps_syntax(ps, is_key ? "expected a key"
					      : "expected a value");
	}
	if (ntok > 1 || first.kind == T_ESC || first.kind == T_TEXT) {
		if (ntok == 1)
			token_text(&b, &first);
		return own_str(ps, &b, out);
	}
	if (first.kind == T_INTERP) {
		*out = first.v;
		return 0;
	}
	if (!ps->eval)
		return 0;
	out->n = site_node(ps, CFG_STR);
	out->own = 1;
	if (out->n && !cfg_word_value(out->n, first.w, first.s, first.len))
		return 0;
	if (out->n && first.w == CFG_WORD_INT) {
		val_drop(out);
		report(ps->c, "GT114", "'%.*s' does not fit in a 64-bit integer",
		       (int)first.len, first.s);
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
				struct sbuf e = { 0 };

				if (own_str(ps, &e, &v) || vals_push(out, v))
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
		struct sbuf e = { 0 };
		struct val v = { 0 };

		if (own_str(ps, &e, &v) || vals_push(out, v))
			return ps_fail(ps, R_FAIL);
	}
	return 0;
}

/* Moves or copies v into a list or dict being built. */
static int adopt(struct ps *ps, struct cfg_node *into, struct val *v,
		 const char *key)
{
	struct cfg_node *n = v->own ? v->n : copy_counted(ps->c, v->n);

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
		if (!(list = site_node(ps, CFG_SEQ)))
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
	struct sbuf key = { 0 };

	ps->p = past_ws(ps->p + 1);
	if (ps_enter(ps))
		return -1;
	if (ps->eval && !(map = site_node(ps, CFG_MAP)))
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
				if (key.bad || adopt(ps, map, &v, key.s ? key.s : ""))
					goto fail;
				sb_release(&key);
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
	sb_release(&key);
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
			report(ps->c, "GT112", "an interpolation used as a key "
			       "gives %s, not a string",
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
	struct sbuf name = { 0 };
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
		rc = ps->eval ? lookup(ps, ndots, ks.v, ks.n, start,
				       (size_t)(ps->p - start), out) : 0;
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
			sb_addc(&name, '.');
		sb_add(&name, ks.v[i]);
	}
	ps->p = past_ws(ps->p + 1);
	if (parse_seq(ps, '}', &args))
		goto out;
	ps->nest--;
	rc = 0;
	if (ps->eval && !name.bad)
		rc = call_resolver(ps, name.s ? name.s : "", &args, start,
				   (size_t)(ps->p - start), out);
out:
	if (name.bad && ps->st == R_OK) {
		ps->c->oom = 1;
		ps->st = R_FAIL;
		rc = -1;
	}
	sb_release(&name);
	vals_release(&args);
	parts_release(&ks);
	return rc;
}

/* The whole value: one `${...}` keeps the value's type; else a string. */
static int parse_top(struct ps *ps, struct val *out)
{
	struct sbuf b = { 0 };
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
		if (*ps->p == '\\') {
			backslashes(ps, &b, 0);
		} else if (ps->p[0] == '$' && ps->p[1] == '{') {
			if (parse_interp(ps, &v)) {
				sb_release(&b);
				return -1;
			}
			sb_val(&b, &v);
			val_drop(&v);
		} else {
			sb_addc(&b, *ps->p++);
		}
	}
	return own_str(ps, &b, out);
}

/* ---- resolvers ----------------------------------------------------------- */

static const char *py_type(const struct cfg_node *n)
{
	static const char *const names[] = {
		[CFG_NULL] = "NoneType", [CFG_BOOL] = "bool", [CFG_INT] = "int",
		[CFG_FLOAT] = "float", [CFG_STR] = "str", [CFG_MAP] = "dict",
		[CFG_SEQ] = "list",
	};
	return names[n->kind];
}

static int is_num(const struct cfg_node *n)
{
	return n->kind == CFG_BOOL || n->kind == CFG_INT ||
	       n->kind == CFG_FLOAT;
}

static int is_intlike(const struct cfg_node *n)
{
	return n->kind == CFG_BOOL || n->kind == CFG_INT;
}

static long long as_int(const struct cfg_node *n)
{
	return n->kind == CFG_BOOL ? n->v.b : n->v.i;
}

static double as_float(const struct cfg_node *n)
{
	return n->kind == CFG_FLOAT ? n->v.f : (double)as_int(n);
}

/* A fresh number at the site, its text as Python's str() writes it. */
static struct cfg_node *new_number(struct ps *ps, int is_float, long long i,
				   double f)
{
	struct cfg_node *n = site_node(ps, is_float ? CFG_FLOAT : CFG_INT);
	struct sbuf b = { 0 };

	if (!n)
		return NULL;
	if (is_float)
		n->v.f = f;
	else
		n->v.i = i;
	py_str(&b, n, 0);
	if (!(n->text = sb_take(&b))) {
		cfg_free(n);
		ps->c->oom = 1;
		return NULL;
	}
	return n;
}

/* s * k for a string or list, as Python repeats sequences. */
static struct cfg_node *repeat(struct ps *ps, const struct cfg_node *s,
			       long long k, const char *ref, size_t ref_len)
{
	struct cfg_node *n;

	if (k < 0)
		k = 0;
	if (s->kind == CFG_STR) {
		struct sbuf b = { 0 };
		size_t len = strlen(s->text);

		if (len && (unsigned long long)k > CFG_MAX_INTERP_TEXT / len)
			b.bad = 2;
		for (long long i = 0; i < k && !b.bad; i++)
			sb_addn(&b, s->text, len);
		{
			struct val v = { 0 };

			if (own_str(ps, &b, &v))
				return NULL;
			return v.n;
		}
	}
	if (s->n && (unsigned long long)k > CFG_MAX_NODES / s->n) {
		report_ref(ps->c, ref, ref_len, "GT103", "'%.*s' builds a list of more than %d "
		       "items", (int)ref_len, ref, CFG_MAX_NODES);
		return NULL;
	}
	if (!(n = site_node(ps, CFG_SEQ)))
		return NULL;
	for (long long i = 0; i < k; i++)
		for (size_t j = 0; j < s->n; j++) {
			struct cfg_node *kid = copy_counted(ps->c, s->kids[j]);

			if (!kid || cfg_append(n, kid)) {
				cfg_free(n);
				return NULL;
			}
		}
	return n;
}

/* Python's a + b, a - b, a * b, a / b and max(a, b) for NeMo-RL's lambdas.
 * Returns the result, or NULL with *why set (a TypeError-like text). */
static struct cfg_node *arith(struct ps *ps, char op, const struct cfg_node *a,
			      const struct cfg_node *b, const char **why,
			      const char *ref, size_t ref_len)
{
	long long r = 0;

	*why = NULL;
	if (is_num(a) && is_num(b)) {
		int fl = a->kind == CFG_FLOAT || b->kind == CFG_FLOAT;
		long long x = as_int(a), y = as_int(b);
		double fx = as_float(a), fy = as_float(b);

		switch (op) {
		case '+':
			if (!fl && __builtin_add_overflow(x, y, &r))
				goto overflow;
			return new_number(ps, fl, r, fx + fy);
		case '-':
			if (!fl && __builtin_sub_overflow(x, y, &r))
				goto overflow;
			return new_number(ps, fl, r, fx - fy);
		case '*':
			if (!fl && __builtin_mul_overflow(x, y, &r))
				goto overflow;
			return new_number(ps, fl, r, fx * fy);
		case '/':
			if (fy == 0) {
				*why = fl ? "float division by zero"
					  : "division by zero";
				return NULL;
			}
			return new_number(ps, 1, 0, fx / fy);
		}
	}
	if (op == '+' && a->kind == b->kind &&
	    (a->kind == CFG_STR || a->kind == CFG_SEQ)) {
		struct cfg_node *n;

		if (a->kind == CFG_STR) {
			struct sbuf s = { 0 };
			struct val v = { 0 };

			sb_add(&s, a->text);
			sb_add(&s, b->text);
			return own_str(ps, &s, &v) ? NULL : v.n;
		}
		if (!(n = site_node(ps, CFG_SEQ)))
			return NULL;
		for (size_t i = 0; i < a->n + b->n; i++) {
			const struct cfg_node *src = i < a->n ? a->kids[i]
						     : b->kids[i - a->n];
			struct cfg_node *kid = copy_counted(ps->c, src);

			if (!kid || cfg_append(n, kid)) {
				cfg_free(n);
				return NULL;
			}
		}
		return n;
	}
	if (op == '*' && (a->kind == CFG_STR || a->kind == CFG_SEQ) &&
	    is_intlike(b))
		return repeat(ps, a, as_int(b), ref, ref_len);
	if (op == '*' && (b->kind == CFG_STR || b->kind == CFG_SEQ) &&
	    is_intlike(a))
		return repeat(ps, b, as_int(a), ref, ref_len);
	if (op == '*' && (a->kind == CFG_STR || a->kind == CFG_SEQ ||
			  b->kind == CFG_STR || b->kind == CFG_SEQ) &&
	    (a->kind == CFG_FLOAT || b->kind == CFG_FLOAT)) {
		*why = "can't multiply sequence by non-int of type 'float'";
		return NULL;
	}
	*why = "unsupported operand types";
	return NULL;
overflow:
	report_ref(ps->c, ref, ref_len, "GT114", "'%.*s' overflows a 64-bit integer (Python "
	       "would switch to a big integer)", (int)ref_len, ref);
	return NULL;
}

/* b > a, as Python compares numbers and strings; -1 when it cannot. */
static int greater(const struct cfg_node *b, const struct cfg_node *a)
{
	if (is_intlike(a) && is_intlike(b))
		return as_int(b) > as_int(a);
	if (is_num(a) && is_num(b))
		return as_float(b) > as_float(a);
	if (a->kind == CFG_STR && b->kind == CFG_STR)
		return strcmp(b->text, a->text) > 0;
	return -1;
}

static const char *const known_resolvers =
	"NeMo-RL registers add, sub, mul, div and max; OmegaConf provides "
	"oc.env";

static int call_env(struct ps *ps, struct vals *args, const char *ref,
		    size_t ref_len, struct val *out)
{
	const char *value;
	struct diag *d;

	if (args->n < 1 || args->n > 2) {
		d = report_ref(ps->c, ref, ref_len, "GT114", "'%.*s': oc.env takes a variable "
			   "name and an optional default, not %zu arguments",
			   (int)ref_len, ref, args->n);
		diag_hint(d, "write ${oc.env:VAR} or ${oc.env:VAR,default}");
		return ps_fail(ps, R_FAIL);
	}
	if (args->v[0].n->kind != CFG_STR) {
		report_ref(ps->c, ref, ref_len, "GT114", "'%.*s': the variable name must be a "
		       "string, not %s", (int)ref_len, ref,
		       py_type(args->v[0].n));
		return ps_fail(ps, R_FAIL);
	}
	value = getenv(args->v[0].n->text);
	if (!value && args->n == 2 && args->v[1].n->kind == CFG_NULL) {
		out->n = site_node(ps, CFG_NULL);
		out->own = 1;
		return out->n ? 0 : ps_fail(ps, R_FAIL);
	}
	if (value || args->n == 2) {
		/* oc.env gives strings: the value, or str(default) */
		struct sbuf b = { 0 };

		if (value)
			sb_add(&b, value);
		else
			py_str(&b, args->v[1].n, 0);
		return own_str(ps, &b, out);
	}
	d = report_ref(ps->c, ref, ref_len, "GT113", "environment variable '%s' is not set "
		   "here; '%.*s' is left unresolved", args->v[0].n->text,
		   (int)ref_len, ref);
	diag_hint(d, "set %s where the run is launched, or give a default: "
		  "${oc.env:%s,default}", args->v[0].n->text,
		  args->v[0].n->text);
	return ps_fail(ps, R_ENV);
}

static int call_resolver(struct ps *ps, const char *name, struct vals *args,
			 const char *ref, size_t ref_len, struct val *out)
{
	static const char *const ops[] = { "add", "sub", "mul", "div", "max" };
	static const char opc[] = "+-*/m";
	const struct cfg_node *a, *b;
	struct cfg_node *res = NULL;
	const char *why = NULL;
	struct diag *d;
	int op = -1;

	if (strcmp(name, "oc.env") == 0)
		return call_env(ps, args, ref, ref_len, out);
	for (int i = 0; i < 5; i++)
		if (strcmp(name, ops[i]) == 0)
			op = i;
	if (op < 0) {
		d = report_ref(ps->c, ref, ref_len, "GT112", strncmp(name, "oc.", 3) == 0
			   ? "gtplan does not evaluate OmegaConf's resolver "
			     "'%s' (in '%.*s')"
			   : "unknown resolver '%s' in '%.*s'", name,
			   (int)ref_len, ref);
		diag_hint(d, "%s", known_resolvers);
		return ps_fail(ps, R_FAIL);
	}
	if (args->n != 2) {
		d = report_ref(ps->c, ref, ref_len, "GT114", "'%.*s': %s takes 2 arguments, not "
			   "%zu", (int)ref_len, ref, name, args->n);
		diag_hint(d, "write ${%s:x,y}; a trailing comma adds an empty "
			  "argument", name);
		return ps_fail(ps, R_FAIL);
	}
	a = args->v[0].n;
	b = args->v[1].n;
	if (opc[op] == 'm') {
		int gt = greater(b, a);
		struct val *win;

		if (gt < 0) {
			report_ref(ps->c, ref, ref_len, "GT114", "'%.*s': cannot compare %s with %s",
			       (int)ref_len, ref, py_type(b), py_type(a));
			return ps_fail(ps, R_FAIL);
		}
		win = &args->v[gt];
		*out = *win;
		win->n = NULL;
		win->own = 0;
		return 0;
	}
	res = arith(ps, opc[op], a, b, &why, ref, ref_len);
	if (res) {
		out->n = res;
		out->own = 1;
		return 0;
	}
	if (why) {
		d = report_ref(ps->c, ref, ref_len, "GT114", "'%.*s': %s (%s %c %s in Python)",
			   (int)ref_len, ref, why, py_type(a), opc[op],
			   py_type(b));
		diag_hint(d, "add, sub, mul, div and max take two numbers; mul "
			  "also repeats a string or list by an integer; div "
			  "always gives a float");
	}
	return ps_fail(ps, R_FAIL);
}

/* ---- lookups ------------------------------------------------------------- */

static int resolve_node(struct rctx *c, const struct chain *ch);
static int resolve_tree(struct rctx *c, struct chain *ch);

/* A missing key: the message names the chain; the hint suggests a close key
 * of the section it was looked up in, or the same key nearer the node. */
static void report_missing(struct ps *ps, const struct chain *found,
			   const char *part, const char *ref, size_t ref_len,
			   const char *what)
{
	struct rctx *c = ps->c;
	char *where = chain_path(found), *full, *text;
	const struct cfg_node *sec = found->v[found->n - 1];
	const struct chain *own = &top(c)->chain;
	const char *close = cfg_closest_key(sec, part);
	struct diag *d;

	full = diag_fmt("%s%s%s", where && *where ? where : "",
			where && *where ? "." : "", part);
	text = chain_text(c, 0, full ? full : part);
	if (c->depth > 1)
		d = report_ref(c, ref, ref_len, "GT110", "'%.*s' refers to '%s', which %s "
			   "(chain: %s)", (int)ref_len, ref, full ? full : part,
			   what, text ? text : "");
	else
		d = report_ref(c, ref, ref_len, "GT110", "'%.*s' refers to '%s', which %s",
			   (int)ref_len, ref, full ? full : part, what);
	if (close)
		diag_hint(d, "did you mean '%s%s%s'?", where && *where ? where : "",
			  where && *where ? "." : "", close);
	else if (found->n == 1 && own->n >= 2 &&
		 cfg_get(own->v[own->n - 2], part))
		diag_hint(d, "'%s' is a sibling: write ${.%s} (keys without a "
			  "leading '.' start at the root)", part, part);
	else
		diag_hint(d, "check the spelling; ${a.b} starts at the root, "
			  "${.x} is a key of the same section and ${..x} one "
			  "section up");
	free(text);
	free(full);
	free(where);
}

/* Finds the node `${ndots parts}` names from the node being resolved,
 * resolving what it passes through, and the target itself. */
static int lookup(struct ps *ps, size_t ndots, char **parts, size_t nparts,
		  const char *ref, size_t ref_len, struct val *out)
{
	struct rctx *c = ps->c;
	const struct chain *own = &top(c)->chain;
	struct chain ch = { 0 };
	struct cfg_node *t;
	int st = R_OK;

	if (ndots >= own->n) {
		struct diag *d = report_ref(c, ref, ref_len, "GT110", "'%.*s' goes %zu levels up "
					"from '%s', above the root", (int)ref_len,
					ref, ndots - 1, top(c)->path);
		diag_hint(d, "one dot is the node's own section, each further "
			  "dot one section up");
		return ps_fail(ps, R_FAIL);
	}
	for (size_t i = 0; i < (ndots ? own->n - ndots : 1); i++)
		if (chain_push(&ch, own->v[i]))
			goto oom;
	for (size_t i = 0; i < nparts; i++) {
		struct cfg_node *cur = ch.v[ch.n - 1], *next = NULL;

		if (is_pending(cur) && (st = resolve_node(c, &ch)) != R_OK)
			goto out;
		if (cur->kind == CFG_MAP) {
			next = cfg_get(cur, parts[i]);
		} else if (cur->kind == CFG_SEQ) {
			char *end;
			unsigned long k = strtoul(parts[i], &end, 10);

			if (is_digit(parts[i][0]) && !*end && k < cur->n)
				next = cur->kids[k];
		} else {
			char *p = chain_path(&ch);
			char *what = diag_fmt("does not exist: '%s' is a "
					      "scalar (%s), not a map or list",
					      p ? p : "",
					      cfg_kind_name(cur->kind));

			report_missing(ps, &ch, parts[i], ref, ref_len,
				       what ? what : "does not exist");
			free(what);
			free(p);
			st = R_FAIL;
			goto out;
		}
		if (!next) {
			report_missing(ps, &ch, parts[i], ref, ref_len,
				       cur->kind == CFG_SEQ
				       ? "is not an index of the list"
				       : "does not exist");
			st = R_FAIL;
			goto out;
		}
		if (chain_push(&ch, next))
			goto oom;
	}
	t = ch.v[ch.n - 1];
	for (size_t i = 0; i + 1 < own->n; i++)
		if (own->v[i] == t) {
			char *p = chain_path(&ch);
			struct diag *d = report_ref(c, ref, ref_len, "GT111", "'%.*s' refers to "
				"'%s', which contains this value", (int)ref_len,
				ref, p && *p ? p : "the root");

			diag_hint(d, "a value cannot be defined by the section "
				  "it belongs to");
			free(p);
			st = R_FAIL;
			goto out;
		}
	if (is_pending(t))
		st = resolve_node(c, &ch);
	else if ((t->kind == CFG_MAP || t->kind == CFG_SEQ) &&
		 resolve_tree(c, &ch) == R_FAIL)
		st = R_FAIL;
	if (st == R_OK) {
		out->n = t;
		out->own = 0;
	}
out:
	free(ch.v);
	return st == R_OK ? 0 : ps_fail(ps, st);
oom:
	free(ch.v);
	c->oom = 1;
	return ps_fail(ps, R_FAIL);
}

/* ---- resolving nodes ----------------------------------------------------- */

/* Gives n the value v: a map or list is copied (marks kept), n keeps its
 * key and locations and remembers where the value came from. */
static int assign(struct rctx *c, struct cfg_node *n, struct val *v)
{
	struct cfg_node *t = v->n;
	struct diag_loc origin = n->loc;

	if (!v->own) {
		origin = t->resolved ? t->origin : t->loc;
		if (!(t = copy_counted(c, t)))
			return -1;
	}
	v->n = NULL;
	v->own = 0;
	free(n->text);
	n->kind = t->kind;
	n->v = t->v;
	n->text = t->text;
	n->kids = t->kids;
	n->n = t->n;
	n->cap = t->cap;
	t->text = NULL;
	t->kids = NULL;
	t->n = t->cap = 0;
	cfg_free(t);
	n->interp = 0;
	n->resolved = 1;
	n->origin = origin;
	return 0;
}

static int run_parser(struct rctx *c, struct cfg_node *n, int eval,
		      struct val *out)
{
	struct ps ps = { c, n->text, eval, 0, R_OK };

	return parse_top(&ps, out) ? (ps.st == R_OK ? R_FAIL : ps.st) : R_OK;
}

/* Resolves the node at the end of ch, once. */
static int resolve_node(struct rctx *c, const struct chain *ch)
{
	struct cfg_node *n = ch->v[ch->n - 1];
	struct frame *f;
	struct val v = { 0 };
	int st;

	if (!is_pending(n))
		return R_OK;
	if (pset_has(&c->failed, n))
		return R_FAIL;
	if (pset_has(&c->envleft, n))
		return R_ENV;
	for (size_t i = 0; i + 1 < ch->n; i++)
		if (ch->v[i]->resolved)
			return R_ENV; /* an unset variable inside a copy */
	for (size_t i = 0; i < c->depth; i++)
		if (c->stack[i].node == n) {
			char *p = chain_path(ch), *text = chain_text(c, i, p);
			struct diag *d = report(c, "GT111", "interpolations "
				"form a cycle: %s", text ? text : "");

			diag_hint(d, "one of these values must be written out");
			free(text);
			free(p);
			return R_FAIL;
		}
	if (c->depth == CFG_MAX_INTERP_DEPTH) {
		char *p = chain_path(ch);
		struct diag *d = report(c, "GT103", "interpolation chain is "
			"deeper than %d levels (from '%s' to '%s')",
			CFG_MAX_INTERP_DEPTH, c->stack[0].path, p ? p : "");

		diag_hint(d, "a chain this long is almost certainly generated; "
			  "write some of the values out");
		free(p);
		pset_add(&c->failed, n);
		return R_FAIL;
	}
	f = &c->stack[c->depth];
	memset(f, 0, sizeof(*f));
	f->node = n;
	for (size_t i = 0; i < ch->n; i++)
		if (chain_push(&f->chain, ch->v[i]))
			c->oom = 1;
	f->path = chain_path(ch);
	if (c->oom || !f->path) {
		free(f->chain.v);
		free(f->path);
		c->oom = 1;
		return R_FAIL;
	}
	c->depth++;
	st = run_parser(c, n, 0, &v);
	if (st == R_OK)
		st = run_parser(c, n, 1, &v);
	if (st == R_OK && assign(c, n, &v))
		st = R_FAIL;
	val_drop(&v);
	c->depth--;
	free(f->chain.v);
	free(f->path);
	if (st != R_OK &&
	    pset_add(st == R_FAIL ? &c->failed : &c->envleft, n))
		c->oom = 1;
	return st;
}

/* Resolves everything under the node at the end of ch; the worst outcome. */
static int resolve_tree(struct rctx *c, struct chain *ch)
{
	struct cfg_node *n = ch->v[ch->n - 1];
	int worst = R_OK, st = R_OK;

	if (n->resolved) /* a copy of values resolved before */
		return R_OK;
	for (size_t i = 0; i < n->n && !c->oom; i++) {
		struct cfg_node *kid = n->kids[i];

		if (chain_push(ch, kid)) {
			c->oom = 1;
			break;
		}
		if (is_pending(kid))
			st = resolve_node(c, ch);
		else if (kid->kind == CFG_MAP || kid->kind == CFG_SEQ)
			st = resolve_tree(c, ch);
		else
			st = R_OK;
		ch->n--;
		if (st > worst)
			worst = st;
	}
	return c->oom ? R_FAIL : worst;
}

int cfg_resolve(struct cfg_node *root, struct src_set *srcs,
		struct diag_list *diags)
{
	struct rctx c;
	struct chain ch = { 0 };

	if (!root)
		return 0;
	memset(&c, 0, sizeof(c));
	c.root = root;
	c.srcs = srcs;
	c.diags = diags;
	if (chain_push(&ch, root))
		c.oom = 1;
	else
		resolve_tree(&c, &ch);
	if (c.oom)
		diag_add(diags, "GT103", root->loc, NULL,
			 "out of memory while resolving interpolations");
	free(ch.v);
	free(c.failed.v);
	free(c.envleft.v);
	return c.errors || c.oom ? -1 : 0;
}
