/*
 * diag_ci: diagnostics in the formats CI systems read (diag.h): one line
 * per finding (concise), GitHub Actions workflow commands (github), and
 * JUnit XML for test dashboards (junit).
 */
#include "diag.h"

#include <stdlib.h>
#include <string.h>

/* file:line:col as the text format writes it: parts that are 0 left out,
 * "gtplan" without a location. */
static void put_where(FILE *f, const struct src_set *s, struct diag_loc loc)
{
	const char *name = src_name(s, loc.src);

	if (!name) {
		fputs("gtplan", f);
		return;
	}
	fputs(name, f);
	if (loc.line > 0)
		fprintf(f, ":%d", loc.line);
	if (loc.line > 0 && loc.col > 0)
		fprintf(f, ":%d", loc.col);
}

/* s with line breaks and other control characters as spaces. */
static void put_line(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
}

int diag_print_concise(FILE *f, const struct diag_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct diag *d = &l->v[i];

		put_where(f, l->srcs, d->loc);
		fprintf(f, ": %s[%s] ", diag_severity_name(d->severity),
			diag_code(d));
		put_line(f, d->msg);
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}

/* ---- GitHub workflow commands --------------------------------------- */

/* Escapes of workflow commands (actions/toolkit, packages/core/src/
 * command.ts): data escapes %, CR and LF; properties also ':' and ','. */
static void put_gh(FILE *f, const char *s, int property)
{
	for (; *s; s++) {
		if (*s == '%')
			fputs("%25", f);
		else if (*s == '\r')
			fputs("%0D", f);
		else if (*s == '\n')
			fputs("%0A", f);
		else if (property && *s == ':')
			fputs("%3A", f);
		else if (property && *s == ',')
			fputs("%2C", f);
		else
			fputc(*s, f);
	}
}

static const char *gh_level(enum diag_severity sev)
{
	return sev == DIAG_ERROR ? "error" :
	       sev == DIAG_WARNING ? "warning" : "notice";
}

static void put_gh_diag(FILE *f, const struct src_set *s, const struct diag *d)
{
	const char *name = src_name(s, d->loc.src);
	char *title = diag_fmt("%s %s", diag_code(d),
			       d->rule ? d->rule->name : "unknown-rule");
	char *body;

	fprintf(f, "::%s ", gh_level(d->severity));
	if (src_is_file(s, d->loc.src)) {
		fputs("file=", f);
		put_gh(f, name, 1);
		if (d->loc.line > 0)
			fprintf(f, ",line=%d", d->loc.line);
		if (d->loc.line > 0 && d->loc.col > 0)
			fprintf(f, ",col=%d", d->loc.col);
		fputc(',', f);
	}
	fputs("title=", f);
	put_gh(f, title ? title : diag_code(d), 1);
	fputs("::", f);
	/* A finding on the command line says where, since it has no file. */
	if (name && !src_is_file(s, d->loc.src)) {
		put_where(f, s, d->loc);
		fputs(": ", f);
	}
	body = d->hint ? diag_fmt("%s\nhint: %s", d->msg, d->hint) : NULL;
	put_gh(f, body ? body : d->msg, 0);
	fputc('\n', f);
	free(body);
	free(title);
}

int diag_print_github(FILE *f, const struct diag_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		put_gh_diag(f, l->srcs, &l->v[i]);
	return ferror(f) ? -1 : 0;
}

/* ---- JUnit XML ------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p, 0 when invalid (overlongs and
 * surrogates included). */
static size_t utf8_seq(const unsigned char *p)
{
	size_t n = p[0] < 0x80 ? 1 : p[0] >= 0xC2 && p[0] <= 0xDF ? 2 :
		   p[0] >= 0xE0 && p[0] <= 0xEF ? 3 :
		   p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;

	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	if ((n == 3 && p[0] == 0xE0 && p[1] < 0xA0) ||
	    (n == 3 && p[0] == 0xED && p[1] > 0x9F) ||
	    (n == 4 && p[0] == 0xF0 && p[1] < 0x90) ||
	    (n == 4 && p[0] == 0xF4 && p[1] > 0x8F))
		return 0;
	return n;
}

/* XML character data or attribute text: markup escaped, characters XML
 * 1.0 forbids (controls, invalid UTF-8) as U+FFFD. */
static void put_xml(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq(p);

		if (!n || (*p < 0x20 && *p != '\t' && *p != '\n')) {
			fputs("\xEF\xBF\xBD", f);
			p++;
			continue;
		}
		if (*p == '&')
			fputs("&amp;", f);
		else if (*p == '<')
			fputs("&lt;", f);
		else if (*p == '>')
			fputs("&gt;", f);
		else if (*p == '"')
			fputs("&quot;", f);
		else if (*p == '\n')
			fputs("&#10;", f);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
}

static void put_junit_case(FILE *f, const struct src_set *s,
			   const struct diag *d)
{
	const char *name = src_name(s, d->loc.src);

	fputs("    <testcase classname=\"", f);
	put_xml(f, name ? name : "gtplan");
	fprintf(f, "\" name=\"%s ", diag_code(d));
	put_where(f, s, d->loc);
	fputs("\">\n", f);
	if (d->severity == DIAG_NOTE)
		fputs("      <system-out>", f);
	else
		fprintf(f, "      <failure type=\"%s\" message=\"",
			diag_severity_name(d->severity));
	if (d->severity != DIAG_NOTE) {
		put_xml(f, d->msg);
		fputs("\">", f);
	}
	put_where(f, s, d->loc);
	fprintf(f, ": %s[%s]: ", diag_severity_name(d->severity), diag_code(d));
	put_xml(f, d->msg);
	if (d->hint) {
		fputs("&#10;hint: ", f);
		put_xml(f, d->hint);
	}
	fputs(d->severity == DIAG_NOTE ? "</system-out>\n" : "</failure>\n", f);
	fputs("    </testcase>\n", f);
}

int diag_print_junit(FILE *f, const struct diag_list *l)
{
	size_t fails = 0;

	for (size_t i = 0; i < l->n; i++)
		fails += l->v[i].severity != DIAG_NOTE;

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<testsuites name=\"gtplan\" tests=\"%zu\" failures=\"%zu\">\n",
		l->n ? l->n : 1, fails);
	fprintf(f, "  <testsuite name=\"gtplan lint\" tests=\"%zu\" "
		"failures=\"%zu\" errors=\"0\" skipped=\"0\">\n",
		l->n ? l->n : 1, fails);
	if (!l->n)
		fputs("    <testcase classname=\"gtplan\" name=\"no findings\"/>\n",
		      f);
	for (size_t i = 0; i < l->n; i++)
		put_junit_case(f, l->srcs, &l->v[i]);
	fputs("  </testsuite>\n</testsuites>\n", f);
	return ferror(f) ? -1 : 0;
}
