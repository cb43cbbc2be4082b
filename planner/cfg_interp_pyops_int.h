/*
 * cfg_interp_pyops_int: internal, not part of the public API. Python's
 * semantics on config values: str() and repr() (into a strbuf), ==, and
 * (in cfg_interp_pyops.c) the arithmetic of NeMo-RL's resolvers.
 * cfg_override.c uses py_equal() for `~key=value`.
 */
#ifndef GTPLAN_CFG_INTERP_PYOPS_INT_H
#define GTPLAN_CFG_INTERP_PYOPS_INT_H

#include <stddef.h>

#include "cfg.h"
#include "strbuf.h"

/* The strings resolution builds stop at CFG_MAX_INTERP_TEXT (bad is then
 * STRBUF_TOOLONG). */
#define INTERP_TEXT_INIT STRBUF_INIT_MAX(CFG_MAX_INTERP_TEXT)

/* Python's str() of a value (repr() inside lists and dicts). */
void py_str(struct strbuf *b, const struct cfg_node *n, int repr);
/* Python's == between a parsed value and a config value. */
int py_equal(const struct cfg_node *a, const struct cfg_node *b);

#endif
