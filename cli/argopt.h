/*
 * argopt: one option of gtplan's command line that takes a value, as
 * `--name VALUE` or `--name=VALUE`. main.c (render's options), launch.c
 * (run's) and project.c (the rule selection's) read theirs through it.
 * Header-only: a function of a few lines, no state.
 *
 * Ownership: the value it hands out points into argv; nothing to free.
 */
#ifndef GTPLAN_ARGOPT_H
#define GTPLAN_ARGOPT_H

#include <string.h>

/* 0 when argv[*i] is not the option `name`; else 1, with *v its value
 * (advancing *i past a separate one), or NULL when `name` is the last
 * word and has none. */
static inline int argopt_take(const char *name, int argc, char **argv,
			      int *i, const char **v)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, name, n) != 0 || (a[n] && a[n] != '='))
		return 0;
	if (a[n] == '=')
		*v = a + n + 1;
	else
		*v = *i + 1 < argc ? argv[++*i] : NULL;
	return 1;
}

#endif
