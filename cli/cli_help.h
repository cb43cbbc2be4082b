/*
 * cli_help: gtplan's help texts: the top-level usage and one page per
 * command (run's is launch.h's launch_help). Keep them true when a
 * command's behaviour changes.
 *
 * Ownership: static texts, printed to the caller's stream.
 */
#ifndef GTPLAN_CLI_HELP_H
#define GTPLAN_CLI_HELP_H

#include <stdio.h>

/* Writes the help of `command` to f, or the top-level usage when command
 * is NULL. Returns 0, or -1 (nothing written) when there is no such
 * command. */
int cli_help_print(FILE *f, const char *command);

#endif
