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
 *
 * This file holds the resolution (state, lookups, cycles); the grammar is
 * in cfg_interp_parse.c, Python's semantics and the resolvers in
 * cfg_interp_pyops.c, the words shared with the override grammar in
 * cfg_interp_lex.c.
 */
#include "cfg_interp_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- resolution state ---------------------------------------------------- */

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
	struct strbuf b = INTERP_TEXT_INIT;
	char idx[24];

	for (size_t i = 1; i < c->n; i++) {
		const struct cfg_node *parent = c->v[i - 1];

		if (i > 1)
			strbuf_addch(&b, '.');
		if (parent->kind == CFG_MAP) {
			strbuf_addstr(&b, c->v[i]->key);
		} else {
			size_t k = 0;

			while (k < parent->n && parent->kids[k] != c->v[i])
				k++;
			snprintf(idx, sizeof(idx), "%zu", k);
			strbuf_addstr(&b, idx);
		}
	}
	return strbuf_detach(&b);
}

struct frame *interp_top(struct rctx *c)
{
	return &c->stack[c->depth - 1];
}

/* "a -> b -> c": the paths of the frames from `from` up, then `last`. */
static char *chain_text(struct rctx *c, size_t from, const char *last)
{
	struct strbuf b = INTERP_TEXT_INIT;

	for (size_t i = from; i < c->depth; i++) {
		strbuf_addstr(&b, c->stack[i].path);
		strbuf_addstr(&b, " -> ");
	}
	strbuf_addstr(&b, last);
	return strbuf_detach(&b);
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
	d = diag_add(c->diags, code, at, interp_top(c)->path, "%s",
		     msg ? msg : "out of memory");
	free(msg);
	for (size_t i = 0; i + 1 < c->depth; i++)
		diag_note(d, c->stack[i].node->loc, "'%s' refers to '%s' here",
			  c->stack[i].path, c->stack[i + 1].path);
	return d;
}

struct diag *interp_report(struct rctx *c, const char *code, const char *fmt,
			   ...)
{
	struct diag *d;
	va_list ap;

	va_start(ap, fmt);
	d = report_v(c, interp_top(c)->node->loc, code, fmt, ap);
	va_end(ap);
	return d;
}

/* Where the `${...}` text `ref` is written: found on the value's first
 * source line at or after the value's start, else the value's start. */
static struct diag_loc site(struct rctx *c, const char *ref, size_t len)
{
	struct diag_loc at = interp_top(c)->node->loc;
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

struct diag *interp_report_ref(struct rctx *c, const char *ref, size_t len,
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

void val_drop(struct val *v)
{
	if (v->own)
		cfg_free(v->n);
	v->n = NULL;
	v->own = 0;
}

void vals_release(struct vals *vs)
{
	for (size_t i = 0; i < vs->n; i++)
		val_drop(&vs->v[i]);
	free(vs->v);
	vs->v = NULL;
	vs->n = vs->cap = 0;
}

int vals_push(struct vals *vs, struct val v)
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

int interp_charge_text(struct rctx *c, size_t bytes)
{
	if (c->text + bytes <= CFG_MAX_INTERP_TOTAL) {
		c->text += bytes;
		return 0;
	}
	if (c->text <= CFG_MAX_INTERP_TOTAL) {
		struct diag *d = interp_report(c, "GT103", "interpolations "
			"build more than %u bytes of text in all",
			CFG_MAX_INTERP_TOTAL);

		if (d)
			diag_hint(d, "a config refers to a long value over and "
				  "over; refer to it once, or shorten it");
		c->text = (size_t)CFG_MAX_INTERP_TOTAL + 1;
	}
	return -1;
}

/* Bytes of text in the subtree at n. */
static size_t count_text(const struct cfg_node *n)
{
	size_t t = n->text ? strlen(n->text) : 0;

	for (size_t i = 0; i < n->n; i++)
		t += count_text(n->kids[i]);
	return t;
}

struct cfg_node *interp_copy_counted(struct rctx *c, const struct cfg_node *n)
{
	size_t k = count_nodes(n);
	struct cfg_node *copy;

	if (c->copied + k > CFG_MAX_NODES) {
		interp_report(c, "GT103", "interpolations copy more than %d "
			      "nodes", CFG_MAX_NODES);
		return NULL;
	}
	if (interp_charge_text(c, count_text(n)))
		return NULL;
	copy = cfg_clone(n);
	if (!copy) {
		c->oom = 1;
		return NULL;
	}
	c->copied += k;
	return copy;
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
	const struct chain *own = &interp_top(c)->chain;
	const char *close = cfg_closest_key(sec, part);
	struct diag *d;

	full = diag_fmt("%s%s%s", where && *where ? where : "",
			where && *where ? "." : "", part);
	text = chain_text(c, 0, full ? full : part);
	if (c->depth > 1)
		d = interp_report_ref(c, ref, ref_len, "GT110", "'%.*s' refers "
				      "to '%s', which %s (chain: %s)",
				      (int)ref_len, ref, full ? full : part,
				      what, text ? text : "");
	else
		d = interp_report_ref(c, ref, ref_len, "GT110", "'%.*s' refers "
				      "to '%s', which %s", (int)ref_len, ref,
				      full ? full : part, what);
	if (close)
		diag_hint(d, "did you mean '%s%s%s'?",
			  where && *where ? where : "",
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

/* The child `part` of the last node of ch (a key of a map, an index of a
 * list), or NULL after reporting that it does not exist. */
static struct cfg_node *child_of(struct ps *ps, const struct chain *ch,
				 const char *part, const char *ref,
				 size_t ref_len)
{
	struct cfg_node *cur = ch->v[ch->n - 1], *next = NULL;

	if (cur->kind == CFG_MAP) {
		next = cfg_get(cur, part);
	} else if (cur->kind == CFG_SEQ) {
		char *end;
		unsigned long k = strtoul(part, &end, 10);

		if (is_digit(part[0]) && !*end && k < cur->n)
			next = cur->kids[k];
	} else {
		char *p = chain_path(ch);
		char *what = diag_fmt("does not exist: '%s' is a scalar (%s), "
				      "not a map or list", p ? p : "",
				      cfg_kind_name(cur->kind));

		report_missing(ps, ch, part, ref, ref_len,
			       what ? what : "does not exist");
		free(what);
		free(p);
		return NULL;
	}
	if (!next)
		report_missing(ps, ch, part, ref, ref_len,
			       cur->kind == CFG_SEQ ?
			       "is not an index of the list" :
			       "does not exist");
	return next;
}

/* Finds the node `${ndots parts}` names from the node being resolved,
 * resolving what it passes through, and the target itself. */
int interp_lookup(struct ps *ps, size_t ndots, char **parts, size_t nparts,
		  const char *ref, size_t ref_len, struct val *out)
{
	struct rctx *c = ps->c;
	const struct chain *own = &interp_top(c)->chain;
	struct chain ch = { 0 };
	struct cfg_node *t;
	int st = R_OK;

	if (ndots >= own->n) {
		struct diag *d = interp_report_ref(c, ref, ref_len, "GT110",
			"'%.*s' goes %zu levels up from '%s', above the root",
			(int)ref_len, ref, ndots - 1, interp_top(c)->path);
		diag_hint(d, "one dot is the node's own section, each further "
			  "dot one section up");
		return ps_fail(ps, R_FAIL);
	}
	for (size_t i = 0; i < (ndots ? own->n - ndots : 1); i++)
		if (chain_push(&ch, own->v[i]))
			goto oom;
	for (size_t i = 0; i < nparts; i++) {
		struct cfg_node *cur = ch.v[ch.n - 1], *next;

		if (is_pending(cur) && (st = resolve_node(c, &ch)) != R_OK)
			goto out;
		if (!(next = child_of(ps, &ch, parts[i], ref, ref_len))) {
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
			struct diag *d = interp_report_ref(c, ref, ref_len,
				"GT111", "'%.*s' refers to '%s', which "
				"contains this value", (int)ref_len, ref,
				p && *p ? p : "the root");

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
		if (!(t = interp_copy_counted(c, t)))
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
			struct diag *d = interp_report(c, "GT111",
				"interpolations form a cycle: %s",
				text ? text : "");

			diag_hint(d, "one of these values must be written out");
			free(text);
			free(p);
			return R_FAIL;
		}
	if (c->depth == CFG_MAX_INTERP_DEPTH) {
		char *p = chain_path(ch);
		struct diag *d = interp_report(c, "GT103", "interpolation "
			"chain is deeper than %d levels (from '%s' to '%s')",
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
	st = interp_parse(c, n, 0, &v);
	if (st == R_OK)
		st = interp_parse(c, n, 1, &v);
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
