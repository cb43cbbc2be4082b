/*
 * diag_text: diagnostics as text for people, with the source line and a
 * caret under the column (format in diag.h).
 */
#include "diag.h"

#include <string.h>

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

/* Hostile-input limit: a merged finding names at most this many configs
 * in text, then how many more. */
#define DIAG_TEXT_CONFIGS 8

/* "= note: found for a.yaml, b.yaml": when several configs were linted
 * and d is not simply in its one config's own file. */
static void put_configs(FILE *f, const struct src_set *s, const struct diag *d,
			int w, int color)
{
	const char *name = src_name(s, d->loc.src);

	if (!d->n_configs || (d->n_configs == 1 && name &&
			      !strcmp(name, d->configs[0])))
		return;
	fprintf(f, "%*s= %snote%s: found for ", w + 2, "",
		color ? sev_color(DIAG_NOTE, color) : "", color ? ANSI_RESET : "");
	for (size_t i = 0; i < d->n_configs && i < DIAG_TEXT_CONFIGS; i++) {
		fputs(i ? ", " : "", f);
		put_clean(f, d->configs[i], strlen(d->configs[i]), 1);
	}
	if (d->n_configs > DIAG_TEXT_CONFIGS)
		fprintf(f, " and %zu more", d->n_configs - DIAG_TEXT_CONFIGS);
	fputc('\n', f);
}

static void put_diag(FILE *f, const struct src_set *s, const struct diag *d,
		     int color, int show_configs)
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
	if (show_configs)
		put_configs(f, s, d, w, color);
}

static void put_count(FILE *f, const char *sep, size_t n, const char *what)
{
	fprintf(f, "%s%zu %s%s", sep, n, what, n == 1 ? "" : "s");
}

int diag_print_text_findings(FILE *f, const struct diag_list *l, int color)
{
	for (size_t i = 0; i < l->n; i++)
		put_diag(f, l->srcs, &l->v[i], color, l->show_configs);
	return ferror(f) ? -1 : 0;
}

int diag_print_text(FILE *f, const struct diag_list *l, int color)
{
	size_t e = diag_count(l, DIAG_ERROR), w = diag_count(l, DIAG_WARNING);
	size_t n = diag_count(l, DIAG_NOTE);

	diag_print_text_findings(f, l, color);
	if (!e && !w && !n) {
		fputs("gtplan: no findings", f);
	} else {
		put_count(f, "gtplan: ", e, "error");
		put_count(f, ", ", w, "warning");
		put_count(f, ", ", n, "note");
		if (l->n_dropped)
			fprintf(f, " (%zu more diagnostic%s dropped)",
				l->n_dropped, l->n_dropped == 1 ? "" : "s");
	}
	if (l->n_suppressed)
		fprintf(f, " (%zu suppressed)", l->n_suppressed);
	fputc('\n', f);
	return ferror(f) ? -1 : 0;
}
