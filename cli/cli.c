/*
 * cli: the errors, the output files and the findings report every command
 * ends with (cli.h).
 */
#include <errno.h>
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

FILE *cli_open_out(const char *path)
{
	FILE *f;

	if (!path || strcmp(path, "-") == 0)
		return stdout;
	if (!(f = fopen(path, "w")))
		cli_error(0, "cannot write '%s': %s", path, strerror(errno));
	return f;
}

int cli_close_out(FILE *f, const char *path)
{
	if (f == stdout)
		return 0;
	if (fclose(f))
		return cli_error(-1, "error writing '%s': %s", path,
				 strerror(errno));
	return 0;
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
