/*
 * cli: the errors and the findings report every command ends with
 * (cli.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gtplan: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'gtplan --help'.\n");
	return CLI_EXIT_USAGE;
}

int cli_error(int rc, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gtplan: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return rc;
}

int cli_format_parse(const char *s)
{
	static const char *const names[] = {
		[CLI_FMT_TEXT] = "text", [CLI_FMT_JSON] = "json",
		[CLI_FMT_SARIF] = "sarif", [CLI_FMT_GITHUB] = "github",
		[CLI_FMT_CONCISE] = "concise", [CLI_FMT_JUNIT] = "junit",
	};

	for (size_t i = 0; s && i < sizeof(names) / sizeof(*names); i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

/* --color auto: colour on a terminal, unless NO_COLOR is set and not
 * empty (no-color.org) or TERM is dumb; FORCE_COLOR set and not empty
 * (force-color.org) colours anywhere. --color always|never wins. */
static int use_color(const struct cli_opts *o)
{
	const char *no = getenv("NO_COLOR"), *force = getenv("FORCE_COLOR");
	const char *term = getenv("TERM");

	if (o->color >= 0)
		return o->color;
	if (no && *no)
		return 0;
	if (force && *force)
		return 1;
	return isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
}

/* The findings in o's format. */
static int print_findings(const struct cli_opts *o, struct diag_list *diags,
			  FILE *f)
{
	switch (o->format) {
	case CLI_FMT_JSON:
		return diag_print_json(f, diags);
	case CLI_FMT_SARIF:
		return diag_print_sarif(f, diags);
	case CLI_FMT_GITHUB:
		return diag_print_github(f, diags);
	case CLI_FMT_CONCISE:
		return diag_print_concise(f, diags);
	case CLI_FMT_JUNIT:
		return diag_print_junit(f, diags);
	default:
		if (o->sel.quiet)
			return diag_print_text_findings(f, diags, use_color(o));
		return diag_print_text(f, diags, use_color(o));
	}
}

int cli_report(const struct cli_opts *o, struct diag_list *diags, FILE *f)
{
	if (o->proj && proj_finish(o->proj, diags))
		fprintf(stderr, "gtplan: out of memory while selecting "
			"findings\n");
	diag_sort(diags);
	diag_merge_same(diags);
	if (!diags->n_targets) { /* lint sets them: folders walked */
		diags->targets = o->configs;
		diags->n_targets = o->n_configs;
	}
	/* text says nothing when there is nothing to say, but for lint */
	if (o->format != CLI_FMT_TEXT || diags->n || diags->n_dropped ||
	    strcmp(o->cmd, "lint") == 0)
		print_findings(o, diags, f);
	if (diag_count(diags, DIAG_ERROR) ||
	    (o->strict && diag_count(diags, DIAG_WARNING)))
		return CLI_EXIT_FINDINGS;
	return CLI_EXIT_CLEAN;
}
