/*
 * diag: sources, the rule table, diagnostics, and their three output
 * formats (text for people, JSON for tools, SARIF for code scanning).
 * The formats are documented once, in diag.h.
 */
#include "diag.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "version.h"

/* Every SRC_LINE_STRIDE-th line start is remembered (see src_file). */
#define SRC_LINE_STRIDE 64
#define SARIF_SCHEMA "https://json.schemastore.org/sarif-2.1.0.json"

/* ---- sources -------------------------------------------------------- */

void src_set_init(struct src_set *s)
{
	memset(s, 0, sizeof(*s));
}

void src_set_release(struct src_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].name);
		free(s->v[i].text);
		free(s->v[i].line_marks);
	}
	free(s->v);
	src_set_init(s);
}

/* Length of the line break at p, 0 when there is none. The breaks are
 * libyaml's, since the locations we show come from its marks. */
static size_t brk_len(const unsigned char *p, const unsigned char *end)
{
	size_t left = (size_t)(end - p);

	if (p[0] == '\n')
		return 1;
	if (p[0] == '\r')
		return left > 1 && p[1] == '\n' ? 2 : 1;
	if (p[0] == 0xC2 && left > 1 && p[1] == 0x85)
		return 2; /* NEL */
	if (p[0] == 0xE2 && left > 2 && p[1] == 0x80 &&
	    (p[2] == 0xA8 || p[2] == 0xA9))
		return 3; /* LS, PS */
	return 0;
}

/* The first line break at or after p (end when none); its length in *k. */
static const unsigned char *next_brk(const unsigned char *p,
				     const unsigned char *end, size_t *k)
{
	for (; p < end; p++)
		if ((*k = brk_len(p, end)))
			return p;
	*k = 0;
	return end;
}

/* Counts the lines of f and remembers where every SRC_LINE_STRIDE-th one
 * starts. Returns 0, or -1 when out of memory. */
static int src_index(struct src_file *f)
{
	const unsigned char *t = (const unsigned char *)f->text, *p = t, *end;
	size_t n = 0, cap = 0, k;
	size_t *v;

	if (!t)
		return 0;
	end = t + f->len;
	for (;;) {
		if (f->n_lines % SRC_LINE_STRIDE == 0) {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				v = realloc(f->line_marks, cap * sizeof(*v));
				if (!v)
					return -1;
				f->line_marks = v;
			}
			f->line_marks[n++] = (size_t)(p - t);
		}
		f->n_lines++;
		p = next_brk(p, end, &k);
		if (p == end)
			return 0;
		p += k;
	}
}

int src_add(struct src_set *s, const char *name, char *text, size_t len)
{
	struct src_file *f;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct src_file *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			goto fail;
		s->v = v;
		s->cap = cap;
	}
	f = &s->v[s->n];
	memset(f, 0, sizeof(*f));
	f->text = text;
	f->len = text ? len : 0;
	f->name = strdup(name ? name : "");
	if (!f->name || src_index(f) < 0) {
		free(f->name);
		free(f->line_marks);
		goto fail;
	}
	return (int)s->n++;
fail:
	free(text);
	return -1;
}

const char *src_name(const struct src_set *s, int id)
{
	if (!s || id < 0 || (size_t)id >= s->n)
		return NULL;
	return s->v[id].name;
}

int src_is_file(const struct src_set *s, int id)
{
	const char *name = src_name(s, id);

	return name && name[0] && name[0] != '<' && strcmp(name, SRC_CMDLINE);
}

int src_line(const struct src_set *s, int id, int line, const char **start,
	     size_t *len)
{
	const struct src_file *f;
	const unsigned char *t, *p, *q, *end;
	size_t k, skip;

	if (!src_name(s, id) || line < 1)
		return -1;
	f = &s->v[id];
	if (!f->text || (size_t)line > f->n_lines)
		return -1;
	t = (const unsigned char *)f->text;
	end = t + f->len;
	p = t + f->line_marks[(size_t)(line - 1) / SRC_LINE_STRIDE];
	for (skip = (size_t)(line - 1) % SRC_LINE_STRIDE; skip; skip--)
		p = next_brk(p, end, &k) + k;
	q = next_brk(p, end, &k);
	if (line == 1 && q - p >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
		p += 3;
	*start = (const char *)p;
	*len = (size_t)(q - p);
	return 0;
}

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
}

void diag_list_release(struct diag_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		diag_release(&l->v[i]);
	free(l->v);
	diag_list_init(l, NULL);
}

struct diag *diag_add(struct diag_list *l, const char *code,
		      struct diag_loc loc, const char *path, const char *fmt,
		      ...)
{
	const struct diag_rule *rule = diag_rule_find(code);
	enum diag_severity sev = rule ? rule->severity : DIAG_ERROR;
	struct diag *d;
	va_list ap;

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
	d->seq = l->n;
	va_start(ap, fmt);
	d->msg = diag_vfmt(fmt, ap);
	va_end(ap);
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

/* ---- text ----------------------------------------------------------- */

#define ANSI_RESET "\033[0m"
#define ANSI_BOLD "\033[1m"

static const char *sev_color(enum diag_severity sev, int color)
{
	if (!color)
		return "";
	if (sev == DIAG_ERROR)
		return "\033[1;31m";
	return sev == DIAG_WARNING ? "\033[1;35m" : "\033[1;36m";
}

/* Writes n bytes of s with C0, DEL and C1 control characters shown as '?'
 * (hostile input must not drive the terminal); '\n' is kept when keep_nl.
 * Each replaced character is one column wide, so carets stay aligned. */
static void put_clean(FILE *f, const char *s, size_t n, int keep_nl)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n; i++) {
		int c = p[i];

		if (c == 0xC2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9F) {
			c = '?';
			i++;
		} else if ((c < 0x20 && c != '\t' && !(keep_nl && c == '\n')) ||
			   c == 0x7F) {
			c = '?';
		}
		fputc(c, f);
	}
}

/* "file:line:col", "file:line" or "file"; "gtplan" without a location. */
static void put_where(FILE *f, const struct src_set *s, struct diag_loc loc,
		      int color)
{
	const char *name = src_name(s, loc.src);

	fputs(color ? ANSI_BOLD : "", f);
	if (!name) {
		fputs("gtplan", f);
	} else {
		put_clean(f, name, strlen(name), 0);
		if (loc.line > 0)
			fprintf(f, ":%d", loc.line);
		if (loc.line > 0 && loc.col > 0)
			fprintf(f, ":%d", loc.col);
	}
	fputs(color ? ANSI_RESET : "", f);
}

static const char *cp_next(const char *p, const char *end)
{
	for (p++; p < end && ((unsigned char)*p & 0xC0) == 0x80; p++)
		;
	return p;
}

static const char *cp_skip(const char *p, const char *end, size_t n)
{
	for (; n && p < end; n--)
		p = cp_next(p, end);
	return p;
}

/* The number of digits an excerpt of loc needs in the gutter; 0 when it
 * has no excerpt. */
static int gutter_digits(const struct src_set *s, struct diag_loc loc)
{
	const char *p;
	size_t n;
	int w = 1;

	if (src_line(s, loc.src, loc.line, &p, &n) < 0)
		return 0;
	for (int v = loc.line; v >= 10; v /= 10)
		w++;
	return w;
}

/* The source line of loc, then a caret under its column (when it has one).
 * A line longer than DIAG_EXCERPT_MAX code points is cut to a window around
 * the caret. The caret padding copies the line's tabs, so it lines up. */
static void put_excerpt(FILE *f, const struct src_set *s, struct diag_loc loc,
			int w, const char *color)
{
	const char *p, *end, *a, *b, *q;
	size_t n, total = 0, from = 0, col;

	if (src_line(s, loc.src, loc.line, &p, &n) < 0)
		return;
	end = p + n;
	for (q = p; q < end; q = cp_next(q, end))
		total++;
	col = loc.col > 0 ? (size_t)loc.col - 1 : 0;
	if (col > total)
		col = total;
	if (total > DIAG_EXCERPT_MAX) {
		from = col > DIAG_EXCERPT_MAX / 2 ? col - DIAG_EXCERPT_MAX / 2 : 0;
		if (from > total - DIAG_EXCERPT_MAX)
			from = total - DIAG_EXCERPT_MAX;
	}
	a = cp_skip(p, end, from);
	b = cp_skip(a, end, DIAG_EXCERPT_MAX);
	fprintf(f, " %*d |", w, loc.line);
	if (a < b || from)
		fprintf(f, " %s", from ? "..." : "");
	put_clean(f, a, (size_t)(b - a), 0);
	fputs(b < end ? "...\n" : "\n", f);
	if (loc.col < 1)
		return;
	fprintf(f, " %*s | %s", w, "", from ? "   " : "");
	for (q = a; from < col; from++) {
		fputc(q < b && *q == '\t' ? '\t' : ' ', f);
		q = q < b ? cp_next(q, b) : q;
	}
	fprintf(f, "%s^%s\n", color, *color ? ANSI_RESET : "");
}

static void put_diag(FILE *f, const struct src_set *s, const struct diag *d,
		     int color)
{
	const char *sc = sev_color(d->severity, color);
	int w = gutter_digits(s, d->loc);

	for (size_t i = 0; i < d->n_notes; i++) {
		int nw = gutter_digits(s, d->notes[i].loc);

		w = nw > w ? nw : w;
	}
	w = w ? w : 1;
	put_where(f, s, d->loc, color);
	fprintf(f, ": %s%s[%s]%s: ", sc, diag_severity_name(d->severity),
		diag_code(d), color ? ANSI_RESET : "");
	put_clean(f, d->msg, strlen(d->msg), 1);
	fputc('\n', f);
	put_excerpt(f, s, d->loc, w, sc);
	if (d->hint) {
		fprintf(f, "%*s= %shint%s: ", w + 2, "", color ? ANSI_BOLD : "",
			color ? ANSI_RESET : "");
		put_clean(f, d->hint, strlen(d->hint), 1);
		fputc('\n', f);
	}
	sc = sev_color(DIAG_NOTE, color);
	for (size_t i = 0; i < d->n_notes; i++) {
		const struct diag_note *n = &d->notes[i];

		if (src_name(s, n->loc.src)) {
			put_where(f, s, n->loc, color);
			fputs(": ", f);
		} else {
			fprintf(f, "%*s= ", w + 2, "");
		}
		fprintf(f, "%snote%s: ", sc, color ? ANSI_RESET : "");
		put_clean(f, n->msg, strlen(n->msg), 1);
		fputc('\n', f);
		put_excerpt(f, s, n->loc, w, sc);
	}
}

static void put_count(FILE *f, const char *sep, size_t n, const char *what)
{
	fprintf(f, "%s%zu %s%s", sep, n, what, n == 1 ? "" : "s");
}

int diag_print_text(FILE *f, const struct diag_list *l, int color)
{
	size_t e = diag_count(l, DIAG_ERROR), w = diag_count(l, DIAG_WARNING);
	size_t n = diag_count(l, DIAG_NOTE);

	for (size_t i = 0; i < l->n; i++)
		put_diag(f, l->srcs, &l->v[i], color);
	if (!e && !w && !n) {
		fputs("gtplan: no findings\n", f);
	} else {
		put_count(f, "gtplan: ", e, "error");
		put_count(f, ", ", w, "warning");
		put_count(f, ", ", n, "note");
		if (l->n_dropped)
			fprintf(f, " (%zu more diagnostic%s dropped)",
				l->n_dropped, l->n_dropped == 1 ? "" : "s");
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}

/* ---- JSON and SARIF ------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (NUL-terminated), 0 if invalid. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		n = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		n = 3, lo = p[0] == 0xE0 ? 0xA0 : lo, hi = p[0] == 0xED ? 0x9F : hi;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		n = 4, lo = p[0] == 0xF0 ? 0x90 : lo, hi = p[0] == 0xF4 ? 0x8F : hi;
	else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return n;
}

/* A JSON string of s (null for NULL). Invalid UTF-8, as a file name or an
 * override from argv may hold, becomes U+FFFD: Jansson refuses it. */
static json_t *jstr(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	json_t *j;
	char *fix, *o;

	if (!s)
		return json_null();
	if ((j = json_string(s)))
		return j;
	if (!(fix = o = malloc(3 * strlen(s) + 1)))
		return NULL;
	while (*p) {
		size_t k = utf8_len(p);

		if (k) {
			memcpy(o, p, k);
			o += k;
			p += k;
		} else {
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3;
			p++;
		}
	}
	*o = '\0';
	j = json_string(fix);
	free(fix);
	return j;
}

/* {key: v}, taking v; NULL when v is NULL or out of memory. (json_pack's
 * "o" would leak v on failure in some Jansson versions.) */
static json_t *jwrap(const char *key, json_t *v)
{
	json_t *o = json_object();

	if (json_object_set_new(o, key, v)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *jpos(int v)
{
	return v > 0 ? json_integer(v) : json_null();
}

/* Sets file, line and column of o from loc; all null without a location.
 * Like every json_object_set_new, returns nonzero on failure. */
static int json_set_loc(json_t *o, const struct src_set *s,
			struct diag_loc loc)
{
	const char *name = src_name(s, loc.src);

	return json_object_set_new(o, "file", jstr(name)) |
	       json_object_set_new(o, "line", jpos(name ? loc.line : 0)) |
	       json_object_set_new(o, "column",
				   jpos(name && loc.line > 0 ? loc.col : 0));
}

static json_t *json_diag(const struct src_set *s, const struct diag *d)
{
	json_t *o = json_object(), *notes = json_array();
	int err = json_object_set_new(o, "notes", notes);

	for (size_t i = 0; i < d->n_notes; i++) {
		json_t *n = json_object();

		err |= json_array_append_new(notes, n);
		err |= json_set_loc(n, s, d->notes[i].loc);
		err |= json_object_set_new(n, "message", jstr(d->notes[i].msg));
	}
	err |= json_object_set_new(o, "code", jstr(diag_code(d)));
	err |= json_object_set_new(o, "name", jstr(d->rule ? d->rule->name : NULL));
	err |= json_object_set_new(o, "severity",
				   json_string(diag_severity_name(d->severity)));
	err |= json_set_loc(o, s, d->loc);
	err |= json_object_set_new(o, "path", jstr(d->path));
	err |= json_object_set_new(o, "message", jstr(d->msg));
	err |= json_object_set_new(o, "hint", jstr(d->hint));
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Dumps root to f with sorted keys and a final newline, and frees it. */
static int json_finish(FILE *f, json_t *root, int err)
{
	if (!err && root)
		err = json_dumpf(root, f, JSON_SORT_KEYS | JSON_INDENT(2)) ||
		      fputc('\n', f) == EOF;
	json_decref(root);
	return err || ferror(f) ? -1 : 0;
}

int diag_print_json(FILE *f, const struct diag_list *l)
{
	json_t *root = json_object(), *list = json_array();
	int err = json_object_set_new(root, "diagnostics", list);

	for (size_t i = 0; i < l->n; i++)
		err |= json_array_append_new(list, json_diag(l->srcs, &l->v[i]));
	err |= json_object_set_new(root, "format",
				   json_string("gtplan-diagnostics/1"));
	err |= json_object_set_new(root, "tool",
				   json_pack("{s:s, s:s}", "name", "gtplan",
					     "version", GTPLAN_VERSION));
	err |= json_object_set_new(
		root, "summary",
		json_pack("{s:I, s:I, s:I, s:I}",
			  "errors", (json_int_t)diag_count(l, DIAG_ERROR),
			  "warnings", (json_int_t)diag_count(l, DIAG_WARNING),
			  "notes", (json_int_t)diag_count(l, DIAG_NOTE),
			  "dropped", (json_int_t)l->n_dropped));
	return json_finish(f, root, err);
}

/* A relative URI reference for a file name: leading "./" dropped, every
 * byte but unreserved characters and '/' percent-encoded (so a ':' in the
 * first segment cannot read as a scheme). */
static json_t *sarif_uri(const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	char *u, *o;
	json_t *j;

	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (!(u = o = malloc(3 * strlen(name) + 1)))
		return NULL;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p)) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	j = json_string(u);
	free(u);
	return j;
}

/* A SARIF location: its message (when msg) and, when loc is in a real file,
 * its physicalLocation. */
static json_t *sarif_loc(const struct src_set *s, struct diag_loc loc,
			 const char *msg)
{
	json_t *o = json_object(), *phys, *region;
	int err = 0;

	if (msg)
		err |= json_object_set_new(o, "message",
					   jwrap("text", jstr(msg)));
	if (src_is_file(s, loc.src)) {
		phys = json_object();
		err |= json_object_set_new(o, "physicalLocation", phys);
		err |= json_object_set_new(
			phys, "artifactLocation",
			jwrap("uri", sarif_uri(src_name(s, loc.src))));
		if (loc.line > 0) {
			region = json_pack("{s:i}", "startLine", loc.line);
			err |= json_object_set_new(phys, "region", region);
			if (loc.col > 0)
				err |= json_object_set_new(region, "startColumn",
							   json_integer(loc.col));
		}
	}
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *sarif_result(const struct src_set *s, const struct diag *d)
{
	json_t *o = json_object(), *v;
	char *text = d->hint ? diag_fmt("%s Hint: %s", d->msg, d->hint) : NULL;
	int err = d->hint && !text;

	err |= json_object_set_new(o, "ruleId", jstr(diag_code(d)));
	if (d->rule)
		err |= json_object_set_new(o, "ruleIndex",
					   json_integer(d->rule - rules));
	err |= json_object_set_new(o, "level",
				   json_string(diag_severity_name(d->severity)));
	err |= json_object_set_new(o, "message",
				   jwrap("text", jstr(text ? text : d->msg)));
	free(text);
	if (src_is_file(s, d->loc.src)) {
		v = json_array();
		err |= json_object_set_new(o, "locations", v);
		err |= json_array_append_new(v, sarif_loc(s, d->loc, NULL));
	}
	if (d->n_notes) {
		v = json_array();
		err |= json_object_set_new(o, "relatedLocations", v);
		for (size_t i = 0; i < d->n_notes; i++)
			err |= json_array_append_new(
				v, sarif_loc(s, d->notes[i].loc, d->notes[i].msg));
	}
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int diag_print_sarif(FILE *f, const struct diag_list *l)
{
	json_t *root = json_object(), *runs = json_array(), *run = json_object();
	json_t *list = json_array();
	json_t *driver = json_pack("{s:s, s:s}", "name", "gtplan", "version",
				   GTPLAN_VERSION);
	json_t *rv = json_array();
	int err = json_object_set_new(driver, "rules", rv);

	err |= json_object_set_new(run, "tool", jwrap("driver", driver));
	err |= json_object_set_new(run, "columnKind",
				   json_string("unicodeCodePoints"));
	err |= json_object_set_new(run, "results", list);
	err |= json_object_set_new(root, "runs", runs);
	err |= json_array_append_new(runs, run);
	err |= json_object_set_new(root, "$schema",
				   json_string(SARIF_SCHEMA));
	err |= json_object_set_new(root, "version", json_string("2.1.0"));

	for (size_t i = 0; i < diag_rule_count(); i++) {
		const struct diag_rule *r = &rules[i];

		err |= json_array_append_new(
			rv, json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}",
				      "id", r->code, "name", r->name,
				      "shortDescription", "text", r->summary,
				      "fullDescription", "text", r->summary,
				      "help", "text", r->explanation,
				      "defaultConfiguration", "level",
				      diag_severity_name(r->severity)));
	}
	for (size_t i = 0; i < l->n; i++)
		err |= json_array_append_new(list, sarif_result(l->srcs, &l->v[i]));
	return json_finish(f, root, err);
}
