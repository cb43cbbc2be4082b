/*
 * cli: the usage error and the findings report every command ends with
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

static int use_color(const struct cli_opts *o)
{
	if (o->color >= 0)
		return o->color;
	return isatty(STDERR_FILENO) && !getenv("NO_COLOR");
}

int cli_report(const struct cli_opts *o, struct diag_list *diags, FILE *f)
{
	diag_sort(diags);
	if (o->format == CLI_FMT_TEXT && !diags->n && !diags->n_dropped &&
	    strcmp(o->cmd, "lint") != 0)
		;
	else if (o->format == CLI_FMT_JSON)
		diag_print_json(f, diags);
	else if (o->format == CLI_FMT_SARIF)
		diag_print_sarif(f, diags);
	else
		diag_print_text(f, diags, use_color(o));
	if (diag_count(diags, DIAG_ERROR) ||
	    (o->strict && diag_count(diags, DIAG_WARNING)))
		return CLI_EXIT_FINDINGS;
	return CLI_EXIT_CLEAN;
}
