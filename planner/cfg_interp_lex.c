/*
 * cfg_interp_lex: the words OmegaConf's interpolation grammar and Hydra's
 * override grammar share (OmegaConfGrammarLexer.g4, OverrideLexer.g4):
 * FLOAT, INT, BOOL, NULL and ID, read as Python reads them, and the "did
 * you mean" pick among a map's keys that both report with.
 */
#include "cfg.h"
#include "cfg_interp_lex_int.h"
#include "levenshtein.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* DIGIT ('_'? DIGIT)* */
static size_t lex_digits(const char *s)
{
	size_t i;

	if (!is_digit(s[0]))
		return 0;
	for (i = 1;;) {
		if (is_digit(s[i]))
			i++;
		else if (s[i] == '_' && is_digit(s[i + 1]))
			i += 2;
		else
			return i;
	}
}

/* INT_UNSIGNED: '0' | [1-9] ('_'? DIGIT)* */
static size_t lex_uint(const char *s)
{
	if (s[0] == '0')
		return 1;
	return s[0] >= '1' && s[0] <= '9' ? lex_digits(s) : 0;
}

static size_t lex_exponent(const char *s)
{
	size_t i = 1, d;

	if (s[0] != 'e' && s[0] != 'E')
		return 0;
	if (s[i] == '+' || s[i] == '-')
		i++;
	d = lex_digits(s + i);
	return d ? i + d : 0;
}

static int word_is(const char *s, const char *w)
{
	for (; *w; s++, w++)
		if ((*s | 0x20) != *w)
			return 0;
	return 1;
}

static size_t lex_float(const char *s)
{
	size_t i = (s[0] == '+' || s[0] == '-'), u, point = 0, mant, e;

	if (word_is(s + i, "inf") || word_is(s + i, "nan"))
		return i + 3;
	u = lex_uint(s + i);
	if (u && s[i + u] == '.')
		point = u + 1 + lex_digits(s + i + u + 1);
	else if (!u && s[i] == '.' && lex_digits(s + i + 1))
		point = 1 + lex_digits(s + i + 1);
	mant = point ? point : u;
	e = mant ? lex_exponent(s + i + mant) : 0;
	if (e)
		return i + mant + e;
	return point ? i + point : 0;
}

size_t cfg_lex_word(const char *s, enum cfg_word *w)
{
	size_t sign = (s[0] == '+' || s[0] == '-'), len[6] = { 0 }, best = 0;

	len[CFG_WORD_FLOAT] = lex_float(s);
	if (lex_uint(s + sign))
		len[CFG_WORD_INT] = sign + lex_uint(s + sign);
	if (word_is(s, "true"))
		len[CFG_WORD_BOOL] = 4;
	else if (word_is(s, "false"))
		len[CFG_WORD_BOOL] = 5;
	if (word_is(s, "null"))
		len[CFG_WORD_NULL] = 4;
	if (is_alpha(s[0]) || s[0] == '_') {
		size_t i = 1;

		while (is_alpha(s[i]) || is_digit(s[i]) || s[i] == '_' ||
		       s[i] == '-')
			i++;
		len[CFG_WORD_ID] = i;
	}
	*w = CFG_WORD_NONE;
	for (int k = CFG_WORD_FLOAT; k <= CFG_WORD_ID; k++)
		if (len[k] > best) {
			best = len[k];
			*w = (enum cfg_word)k;
		}
	return best;
}

int cfg_word_value(struct cfg_node *n, enum cfg_word w, const char *s,
		   size_t len)
{
	char *text = strndup(s, len), *num, *end;
	size_t j = 0;
	int rc = 0;

	if (!text)
		return -1;
	free(n->text);
	n->text = text;
	n->interp = 0;
	switch (w) {
	case CFG_WORD_INT:
	case CFG_WORD_FLOAT:
		num = malloc(len + 1);
		if (!num)
			return -1;
		for (size_t i = 0; i < len; i++)
			if (s[i] != '_')
				num[j++] = s[i];
		num[j] = '\0';
		errno = 0;
		if (w == CFG_WORD_INT) {
			n->kind = CFG_INT;
			n->v.i = strtoll(num, &end, 10);
			rc = errno ? -1 : 0;
		} else {
			n->kind = CFG_FLOAT;
			n->v.f = strtod(num, &end);
		}
		free(num);
		return rc;
	case CFG_WORD_BOOL:
		n->kind = CFG_BOOL;
		n->v.b = (s[0] | 0x20) == 't';
		return 0;
	case CFG_WORD_NULL:
		n->kind = CFG_NULL;
		return 0;
	default:
		n->kind = CFG_STR;
		return 0;
	}
}

const char *cfg_closest_key(const struct cfg_node *map, const char *key)
{
	const char **keys;
	long best;

	if (!map || map->kind != CFG_MAP || !map->n)
		return NULL;
	keys = malloc(map->n * sizeof(*keys));
	if (!keys)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		keys[i] = map->kids[i]->key;
	best = lev_suggest(key, keys, map->n, NULL);
	free(keys);
	return best < 0 ? NULL : map->kids[best]->key;
}
