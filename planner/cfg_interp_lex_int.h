/*
 * cfg_interp_lex_int: internal, not part of the public API. The character
 * classes of OmegaConf's interpolation grammar, which Hydra's override
 * grammar (cfg_override_parse.c) shares; the word rules themselves are
 * cfg_lex_word() and cfg_word_value() in cfg.h.
 */
#ifndef GTPLAN_CFG_INTERP_LEX_INT_H
#define GTPLAN_CFG_INTERP_LEX_INT_H

#include <string.h>

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* p after any blanks (spaces and tabs). */
static inline const char *past_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A character that a backslash escapes in an unquoted value. */
static inline int is_escapable(char c)
{
	return c && strchr("\\()[]{}:=, \t", c) != NULL;
}

#endif
