/*
 * select: rule selectors, suppressions and the findings they remove
 * (select.h).
 */
#include "select.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "levenshtein.h"

/* ---- selectors ------------------------------------------------------ */

/* 1 when sel is "GT" and digits and a prefix of code (both case-folded). */
static int code_prefix(const char *sel, const char *code)
{
	size_t n = strlen(sel);

	if (n < 2 || strncasecmp(sel, "GT", 2) != 0)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (!isdigit((unsigned char)sel[i]))
			return 0;
	return strncasecmp(sel, code, n) == 0;
}

static int rule_matches(const char *sel, const struct diag_rule *r)
{
	return !strcasecmp(sel, "ALL") || code_prefix(sel, r->code) ||
	       !strcasecmp(sel, r->name);
}

int sel_valid(const char *sel)
{
	if (!sel || !*sel)
		return 0;
	for (size_t i = 0; i < diag_rule_count(); i++)
		if (rule_matches(sel, diag_rule_at(i)))
			return 1;
	return 0;
}

int sel_match(const char *sel, const struct diag *d)
{
	if (!d->rule)
		return !strcasecmp(sel, "ALL");
	return rule_matches(sel, d->rule);
}

const struct diag_rule *sel_closest(const char *sel)
{
	size_t n = diag_rule_count();
	const char **cands = calloc(2 * n, sizeof(*cands));
	const struct diag_rule *r = NULL;
	long k;

	if (!cands)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		cands[2 * i] = diag_rule_at(i)->code;
		cands[2 * i + 1] = diag_rule_at(i)->name;
	}
	if ((k = lev_suggest(sel, cands, 2 * n, NULL)) >= 0)
		r = diag_rule_at((size_t)k / 2);
	free(cands);
	return r;
}

/* ---- the set -------------------------------------------------------- */

void sel_set_init(struct sel_set *s)
{
	memset(s, 0, sizeof(*s));
}

void sel_set_release(struct sel_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].sel);
	free(s->v);
	sel_set_init(s);
}

static struct sel_supp *sel_push(struct sel_set *s, const char *sel,
				 size_t len)
{
	struct sel_supp *e;

	if (s->n >= SEL_MAX_SUPPRESSIONS)
		return NULL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct sel_supp *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	e = &s->v[s->n];
	memset(e, 0, sizeof(*e));
	if (!(e->sel = strndup(sel, len)))
		return NULL;
	e->src = -1;
	e->scope = -1;
	e->report_unused = 1;
	s->n++;
	return e;
}

int sel_add(struct sel_set *s, const char *sel, struct diag_loc loc,
	    int scope, const char *origin, int report_unused)
{
	struct sel_supp *e = sel_push(s, sel, strlen(sel));

	if (!e)
		return -1;
	e->loc = loc;
	e->scope = scope;
	e->origin = origin;
	e->report_unused = report_unused;
	return 0;
}

/* ---- inline comments ------------------------------------------------ */

/* Code points in p[0..n) (UTF-8 continuation bytes do not count). */
static int cols(const char *p, size_t n)
{
	int c = 0;

	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)p[i] & 0xC0) != 0x80;
	return c;
}

void sel_say_unknown(struct diag_list *diags, struct diag_loc loc,
		     const char *path, const char *where, const char *sel)
{
	const struct diag_rule *r = sel_closest(sel);
	struct diag *d = diag_add(diags, "GT002", loc, path,
				  "%s names no rule: '%s'", where, sel);

	if (r)
		diag_hint(d, "did you mean %s (%s)?", r->code, r->name);
	else
		diag_hint(d, "use a code (GT670), a code prefix (GT6), a rule "
			  "name or ALL; `gtplan explain --list` lists them");
}

/* The selectors of `ignore[...]` at p (line[0..len) holds it) become
 * inline suppressions of line `no` of source id. */
static int scan_list(struct sel_set *s, struct diag_list *diags, int id,
		     int no, const char *line, const char *p, const char *end)
{
	while (p < end && *p != ']') {
		const char *w;
		struct sel_supp *e;
		struct diag_loc loc;

		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		for (w = p; p < end && !strchr(" \t,]", *p); p++)
			;
		if (p == w)
			continue;
		loc = (struct diag_loc){ id, no, 1 + cols(line, (size_t)(w - line)) };
		if (!(e = sel_push(s, w, (size_t)(p - w))))
			return -1;
		e->loc = loc;
		e->src = id;
		e->line = no;
		e->origin = "inline";
		if (!sel_valid(e->sel)) {
			/* GT002 says it; it is no suppression (nor unused) */
			sel_say_unknown(diags, loc, NULL, "the suppression",
					e->sel);
			free(e->sel);
			s->n--;
		}
	}
	return 0;
}

/* The inline suppressions of one line (line[0..len), number no). */
static int scan_line(struct sel_set *s, struct diag_list *diags, int id,
		     int no, const char *line, size_t len)
{
	static const char tag[] = "gtplan:";
	const char *end = line + len, *p;

	for (p = line; p < end; p++) {
		const char *q = p + 1;

		if (*p != '#' || (p > line && p[-1] != ' ' && p[-1] != '\t'))
			continue;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if ((size_t)(end - q) < sizeof(tag) - 1 ||
		    memcmp(q, tag, sizeof(tag) - 1))
			continue;
		for (q += sizeof(tag) - 1; q < end && (*q == ' ' || *q == '\t');)
			q++;
		if ((size_t)(end - q) < 7 || memcmp(q, "ignore[", 7))
			continue;
		return scan_list(s, diags, id, no, line, q + 7, end);
	}
	return 0;
}

int sel_scan(struct sel_set *s, const struct src_set *srcs,
	     struct diag_list *diags)
{
	for (; s->n_scanned < srcs->n; s->n_scanned++) {
		const struct src_file *f = &srcs->v[s->n_scanned];
		int id = (int)s->n_scanned;

		if (!f->text || !src_is_file(srcs, id) ||
		    !strstr(f->text, "gtplan:"))
			continue;
		for (size_t no = 1; no <= f->n_lines; no++) {
			const char *line;
			size_t len;

			if (src_line(srcs, id, (int)no, &line, &len) == 0 &&
			    memchr(line, '#', len) &&
			    scan_line(s, diags, id, (int)no, line, len))
				goto full;
		}
	}
	return 0;
full:
	s->n_scanned++;
	if (s->n < SEL_MAX_SUPPRESSIONS)
		return -1;
	if (!s->full_said)
		diag_add(diags, "GT002", DIAG_NOLOC, NULL,
			 "more than %d suppressions: the rest are ignored",
			 SEL_MAX_SUPPRESSIONS);
	s->full_said = 1;
	return 0;
}

/* ---- removing findings ---------------------------------------------- */

struct supp_ctx {
	struct sel_set *s;
	const int *scopes;
	size_t n_scopes;
};

static int in_scope(const struct supp_ctx *c, int scope)
{
	if (scope < 0)
		return 1;
	for (size_t i = 0; i < c->n_scopes; i++)
		if (c->scopes[i] == scope)
			return 1;
	return 0;
}

/* Every suppression that covers d is marked used (so that one of two
 * overlapping suppressions is not reported as unused). */
static int keep_unsuppressed(const struct diag *d, void *ctx)
{
	struct supp_ctx *c = ctx;
	int hit = 0;

	for (size_t i = 0; i < c->s->n; i++) {
		struct sel_supp *e = &c->s->v[i];

		if (e->src >= 0 ? (e->src != d->loc.src ||
				   e->line != d->loc.line) :
				  !in_scope(c, e->scope))
			continue;
		if (sel_match(e->sel, d)) {
			e->used++;
			hit = 1;
		}
	}
	return !hit;
}

size_t sel_suppress(struct sel_set *s, struct diag_list *l, size_t from,
		    const int *scopes, size_t n_scopes)
{
	struct supp_ctx c = { s, scopes, n_scopes };
	size_t n;

	if (!s->n)
		return 0;
	n = diag_list_keep(l, from, keep_unsuppressed, &c);
	s->n_suppressed += n;
	l->n_suppressed += n;
	return n;
}

struct filter_ctx {
	char *const *select;
	size_t n_select;
	enum diag_severity min;
};

static int keep_selected(const struct diag *d, void *ctx)
{
	const struct filter_ctx *c = ctx;

	if (d->severity < c->min)
		return 0;
	for (size_t i = 0; i < c->n_select; i++)
		if (sel_match(c->select[i], d))
			return 1;
	return c->n_select == 0;
}

size_t sel_filter(struct diag_list *l, size_t from, char *const *select,
		  size_t n_select, enum diag_severity min)
{
	struct filter_ctx c = { select, n_select, min };

	if (!n_select && min == DIAG_NOTE)
		return 0;
	return diag_list_keep(l, from, keep_selected, &c);
}

/* ---- unused suppressions -------------------------------------------- */

/* A suppression and its file's name, for sorting. */
struct supp_ref {
	const char *name;
	struct sel_supp *e;
};

/* The same suppression read twice (a parent file shared by several
 * configs) has the same file name, place and selector. */
static int supp_cmp(const void *x, const void *y)
{
	const struct supp_ref *a = x, *b = y;
	int c;

	if ((c = strcmp(a->name, b->name)))
		return c;
	if (a->e->loc.line != b->e->loc.line)
		return a->e->loc.line < b->e->loc.line ? -1 : 1;
	if (a->e->loc.col != b->e->loc.col)
		return a->e->loc.col < b->e->loc.col ? -1 : 1;
	return strcmp(a->e->sel, b->e->sel);
}

static void say_unused(struct diag_list *l, const struct sel_supp *e)
{
	struct diag *d;

	if (e->src >= 0)
		d = diag_add(l, "GT001", e->loc, NULL, "the inline suppression "
			     "of %s matches no finding on this line", e->sel);
	else
		d = diag_add(l, "GT001", e->loc, NULL, "%s suppresses %s, but "
			     "no such finding was reported", e->origin, e->sel);
	diag_hint(d, "delete it: a stale suppression would hide a new "
		  "finding later");
}

int sel_report_unused(struct sel_set *s, struct diag_list *l)
{
	struct supp_ref *v = malloc((s->n ? s->n : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		const char *name = src_name(l->srcs, s->v[i].loc.src);

		if (s->v[i].report_unused)
			v[n++] = (struct supp_ref){ name ? name : "", &s->v[i] };
	}
	qsort(v, n, sizeof(*v), supp_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		size_t used = 0;

		for (j = i; j < n && !supp_cmp(&v[i], &v[j]); j++)
			used += v[j].e->used;
		if (!used)
			say_unused(l, v[i].e);
	}
	free(v);
	return 0;
}
