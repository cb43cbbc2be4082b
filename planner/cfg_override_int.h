/*
 * cfg_override_int: internal, not part of the public API. What the two
 * parts of cfg_override() share:
 *   cfg_override_parse.c  Hydra's override grammar: keys and values
 *   cfg_override.c        applying each override to the config
 */
#ifndef GTPLAN_CFG_OVERRIDE_INT_H
#define GTPLAN_CFG_OVERRIDE_INT_H

#include <stddef.h>

#include "cfg.h"

/* The override being applied, and where its parts are on the command
 * line (the source cfg_override() registers). */
struct octx {
	struct diag_list *diags;
	int src;
	const char *arg;     /* the override being applied */
	size_t col0;         /* its column (code points) on the command line */
	struct diag_loc key; /* where its key starts */
	struct diag_loc val; /* where its value starts */
	int failed;
};

/* Where p (a pointer into the current argument) is on the command line. */
struct diag_loc override_loc(const struct octx *o, const char *p);
/* Reports a finding about the current override and marks it failed. */
struct diag *override_error(struct octx *o, const char *code,
			    struct diag_loc at, const char *path,
			    const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* A dotted key, split into its parts. */
struct key {
	char **part;
	const char **at; /* where each part starts in the argument */
	size_t n;
};

/* Hydra's key: parts of letters, digits, '_' and '$' (not starting with a
 * digit) or list indices, joined by dots. Splits s[0..len) into *k, which
 * the caller releases either way. Returns 0, or -1 when the key is
 * malformed (reported) or memory runs out. */
int override_parse_key(struct octx *o, const char *s, size_t len,
		       struct key *k);
void override_key_release(struct key *k);
/* The dotted path of the first n parts; NULL when out of memory. */
char *override_key_path(const struct key *k, size_t n);

/* The value after '=' (blanks after it skipped): one element, or "" when
 * there is none. NULL after reporting. */
struct cfg_node *override_parse_value(struct octx *o, const char *s);

#endif
