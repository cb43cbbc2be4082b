/*
 * diag: the rule table and the list of diagnostics. Sources are in
 * source.c; the three output formats, documented once in diag.h, in
 * diag_text.c (text for people) and diag_json.c (JSON for tools, SARIF
 * for code scanning).
 */
#include "diag.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- rules ---------------------------------------------------------- */

static const struct diag_rule rules[] = {
#define RULE(code, name, sev, summary, explanation) \
	{ code, name, sev, summary, explanation },
#include "rules.def"
#undef RULE
};

const struct diag_rule *diag_rule_find(const char *code)
{
	for (size_t i = 0; code && i < diag_rule_count(); i++)
		if (!strcasecmp(rules[i].code, code))
			return &rules[i];
	return NULL;
}

size_t diag_rule_count(void)
{
	return sizeof(rules) / sizeof(rules[0]);
}

const struct diag_rule *diag_rule_at(size_t i)
{
	return i < diag_rule_count() ? &rules[i] : NULL;
}

const char *diag_severity_name(enum diag_severity sev)
{
	switch (sev) {
	case DIAG_NOTE:
		return "note";
	case DIAG_WARNING:
		return "warning";
	default:
		return "error";
	}
}

/* ---- diagnostics ---------------------------------------------------- */

char *diag_vfmt(const char *fmt, va_list ap)
{
	va_list cp;
	char *s;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0 || !(s = malloc((size_t)n + 1)))
		return NULL;
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

char *diag_fmt(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = diag_vfmt(fmt, ap);
	va_end(ap);
	return s;
}

void diag_list_init(struct diag_list *l, const struct src_set *srcs)
{
	memset(l, 0, sizeof(*l));
	l->srcs = srcs;
}

static void diag_release(struct diag *d)
{
	for (size_t i = 0; i < d->n_notes; i++)
		free(d->notes[i].msg);
	free(d->notes);
	free(d->path);
	free(d->msg);
	free(d->hint);
	free(d->unknown_code);
	for (size_t i = 0; i < d->n_configs; i++)
		free(d->configs[i]);
	free(d->configs);
}

void diag_list_release(struct diag_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		diag_release(&l->v[i]);
	free(l->v);
	diag_list_init(l, NULL);
}

/* diag_add() with the severity given (sev < 0: the rule's default). */
static struct diag *add_v(struct diag_list *l, const char *code, int sev_in,
			  struct diag_loc loc, const char *path,
			  const char *fmt, va_list ap)
{
	const struct diag_rule *rule = diag_rule_find(code);
	enum diag_severity sev = sev_in >= 0 ? (enum diag_severity)sev_in :
				 rule ? rule->severity : DIAG_ERROR;
	struct diag *d;

	if (l->n >= DIAG_MAX_COUNT)
		goto drop;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct diag *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			goto drop;
		l->v = v;
		l->cap = cap;
	}
	d = &l->v[l->n];
	memset(d, 0, sizeof(*d));
	d->rule = rule;
	d->severity = sev;
	d->loc = loc;
	d->seq = l->next_seq++;
	d->msg = diag_vfmt(fmt, ap);
	if (!d->msg || (path && !(d->path = strdup(path))) ||
	    (!rule && !(d->unknown_code = strdup(code ? code : "(null)")))) {
		diag_release(d);
		goto drop;
	}
	l->n++;
	return d;
drop:
	l->n_dropped++;
	l->dropped_by_sev[sev]++;
	return NULL;
}

struct diag *diag_add(struct diag_list *l, const char *code,
		      struct diag_loc loc, const char *path, const char *fmt,
		      ...)
{
	struct diag *d;
	va_list ap;

	va_start(ap, fmt);
	d = add_v(l, code, -1, loc, path, fmt, ap);
	va_end(ap);
	return d;
}

struct diag *diag_add_sev(struct diag_list *l, enum diag_severity sev,
			  const char *code, struct diag_loc loc,
			  const char *path, const char *fmt, ...)
{
	struct diag *d;
	va_list ap;

	va_start(ap, fmt);
	d = add_v(l, code, (int)sev, loc, path, fmt, ap);
	va_end(ap);
	return d;
}

size_t diag_list_keep(struct diag_list *l, size_t from,
		      int (*keep)(const struct diag *d, void *ctx), void *ctx)
{
	size_t o = from, removed;

	for (size_t i = from; i < l->n; i++) {
		if (!keep(&l->v[i], ctx)) {
			diag_release(&l->v[i]);
			continue;
		}
		if (o != i)
			l->v[o] = l->v[i];
		o++;
	}
	removed = l->n - o;
	l->n = o;
	return removed;
}

int diag_add_config(struct diag *d, const char *config)
{
	char **v;

	if (!d || !config)
		return 0;
	for (size_t i = 0; i < d->n_configs; i++)
		if (!strcmp(d->configs[i], config))
			return 0;
	if (!(v = realloc(d->configs, (d->n_configs + 1) * sizeof(*v))))
		return -1;
	d->configs = v;
	if (!(v[d->n_configs] = strdup(config)))
		return -1;
	d->n_configs++;
	return 0;
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int loc_eq(const struct src_set *s, struct diag_loc a,
		  struct diag_loc b)
{
	return str_eq(src_name(s, a.src), src_name(s, b.src)) &&
	       a.line == b.line && a.col == b.col;
}

static int diag_same(const struct src_set *s, const struct diag *a,
		     const struct diag *b)
{
	if (a->severity != b->severity || strcmp(diag_code(a), diag_code(b)) ||
	    !loc_eq(s, a->loc, b->loc) || !str_eq(a->path, b->path) ||
	    !str_eq(a->msg, b->msg) || !str_eq(a->hint, b->hint) ||
	    a->n_notes != b->n_notes)
		return 0;
	for (size_t i = 0; i < a->n_notes; i++)
		if (!loc_eq(s, a->notes[i].loc, b->notes[i].loc) ||
		    !str_eq(a->notes[i].msg, b->notes[i].msg))
			return 0;
	return 1;
}

/* Sorted, findings at one place are neighbours: d is compared with the
 * kept ones at its place, just before it. */
size_t diag_merge_same(struct diag_list *l)
{
	size_t o = 0, n0 = l->n;

	for (size_t i = 0; i < l->n; i++) {
		struct diag *d = &l->v[i], *e = NULL;

		for (size_t k = o; k-- > 0 &&
				   loc_eq(l->srcs, l->v[k].loc, d->loc);)
			if (diag_same(l->srcs, &l->v[k], d)) {
				e = &l->v[k];
				break;
			}
		if (e) {
			/* out of memory: the merged finding names fewer
			 * configs, nothing worse */
			for (size_t j = 0; j < d->n_configs; j++)
				diag_add_config(e, d->configs[j]);
			diag_release(d);
			continue;
		}
		if (o != i)
			l->v[o] = *d;
		o++;
	}
	l->n = o;
	return n0 - o;
}

void diag_hint(struct diag *d, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (!d)
		return;
	va_start(ap, fmt);
	s = diag_vfmt(fmt, ap);
	va_end(ap);
	if (!s)
		return;
	free(d->hint);
	d->hint = s;
}

void diag_note(struct diag *d, struct diag_loc loc, const char *fmt, ...)
{
	struct diag_note *v;
	va_list ap;
	char *s;

	if (!d)
		return;
	va_start(ap, fmt);
	s = diag_vfmt(fmt, ap);
	va_end(ap);
	if (!s || !(v = realloc(d->notes, (d->n_notes + 1) * sizeof(*v)))) {
		free(s);
		return;
	}
	d->notes = v;
	v[d->n_notes].loc = loc;
	v[d->n_notes++].msg = s;
}

const char *diag_code(const struct diag *d)
{
	if (d && d->rule)
		return d->rule->code;
	return d && d->unknown_code ? d->unknown_code : "?";
}

size_t diag_count(const struct diag_list *l, enum diag_severity sev)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += l->v[i].severity == sev;
	if ((unsigned)sev < 3)
		n += l->dropped_by_sev[sev];
	return n;
}

static int diag_cmp(const struct src_set *s, const struct diag *a,
		    const struct diag *b)
{
	const char *na = src_name(s, a->loc.src), *nb = src_name(s, b->loc.src);
	int c;

	if ((a->loc.src >= 0) != (b->loc.src >= 0))
		return a->loc.src >= 0 ? 1 : -1;
	if ((c = strcmp(na ? na : "", nb ? nb : "")))
		return c;
	if (a->loc.line != b->loc.line)
		return a->loc.line < b->loc.line ? -1 : 1;
	if (a->loc.col != b->loc.col)
		return a->loc.col < b->loc.col ? -1 : 1;
	if ((c = strcmp(diag_code(a), diag_code(b))))
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void diag_swap(struct diag *a, struct diag *b)
{
	struct diag t = *a;

	*a = *b;
	*b = t;
}

static void sift_down(const struct src_set *s, struct diag *v, size_t i,
		      size_t n)
{
	for (size_t c; (c = 2 * i + 1) < n; i = c) {
		if (c + 1 < n && diag_cmp(s, &v[c], &v[c + 1]) < 0)
			c++;
		if (diag_cmp(s, &v[i], &v[c]) >= 0)
			return;
		diag_swap(&v[i], &v[c]);
	}
}

/* Heapsort: it needs no memory (so it cannot fail) and takes the source
 * set as context, which qsort cannot. seq makes the order total, so the
 * result is the stable order even though heapsort is not stable. */
void diag_sort(struct diag_list *l)
{
	for (size_t i = l->n / 2; i-- > 0;)
		sift_down(l->srcs, l->v, i, l->n);
	for (size_t n = l->n; n-- > 1;) {
		diag_swap(&l->v[0], &l->v[n]);
		sift_down(l->srcs, l->v, 0, n);
	}
}
