/*
 * cfg_interp_pyops: internal, not part of the public API. Strings built by
 * resolution, and Python's semantics on config values: str() and repr(),
 * ==, and (in cfg_interp_pyops.c) the arithmetic of NeMo-RL's resolvers.
 * cfg_override.c uses py_equal() for `~key=value`.
 */
#ifndef GTPLAN_CFG_INTERP_PYOPS_H
#define GTPLAN_CFG_INTERP_PYOPS_H

#include <stddef.h>

#include "cfg.h"

/* A growing string; `bad` is set (and further appends ignored) when memory
 * runs out (1) or the text passes CFG_MAX_INTERP_TEXT (2). */
struct sbuf {
	char *s;
	size_t n, cap;
	int bad;
};

void sb_addn(struct sbuf *b, const char *s, size_t n);
void sb_add(struct sbuf *b, const char *s);
void sb_addc(struct sbuf *b, char c);
void sb_repeat(struct sbuf *b, char c, size_t n);
/* Hands the text over (never NULL unless bad); the buffer is empty after. */
char *sb_take(struct sbuf *b);
void sb_release(struct sbuf *b);

/* Python's str() of a value (repr() inside lists and dicts). */
void py_str(struct sbuf *b, const struct cfg_node *n, int repr);
/* Python's == between a parsed value and a config value. */
int py_equal(const struct cfg_node *a, const struct cfg_node *b);

#endif
