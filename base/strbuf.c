/*
 * strbuf: a growing, NUL-terminated string (see strbuf.h for the contract).
 */
#include "strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(struct strbuf *sb, size_t max)
{
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	sb->max = max;
	sb->bad = STRBUF_OK;
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	strbuf_init(sb, sb->max);
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

char *strbuf_detach(struct strbuf *sb)
{
	char *s = sb->buf;

	if (sb->bad) {
		free(s);
		s = NULL;
	} else if (!s) {
		s = calloc(1, 1);
	}
	sb->buf = NULL;
	strbuf_release(sb);
	return s;
}

const char *strbuf_str(const struct strbuf *sb)
{
	if (sb->bad)
		return NULL;
	return sb->buf ? sb->buf : "";
}

/* Room for n more bytes and the NUL; 0, or -1 with `bad` set. */
static int grow(struct strbuf *sb, size_t n)
{
	size_t alloc;
	char *p;

	if (sb->bad)
		return -1;
	if (n > (size_t)-1 / 2 - sb->len ||
	    (sb->max && sb->len + n > sb->max)) {
		sb->bad = n > (size_t)-1 / 2 - sb->len ? STRBUF_NOMEM :
							 STRBUF_TOOLONG;
		return -1;
	}
	if (sb->len + n + 1 <= sb->alloc)
		return 0;
	alloc = sb->alloc ? sb->alloc : 64;
	while (alloc < sb->len + n + 1)
		alloc *= 2;
	p = realloc(sb->buf, alloc);
	if (!p) {
		sb->bad = STRBUF_NOMEM;
		return -1;
	}
	sb->buf = p;
	sb->alloc = alloc;
	return 0;
}

void strbuf_add(struct strbuf *sb, const void *data, size_t n)
{
	if (grow(sb, n))
		return;
	memcpy(sb->buf + sb->len, data, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void strbuf_addstr(struct strbuf *sb, const char *s)
{
	strbuf_add(sb, s, strlen(s));
}

void strbuf_addch(struct strbuf *sb, char c)
{
	strbuf_add(sb, &c, 1);
}

void strbuf_addchars(struct strbuf *sb, char c, size_t n)
{
	if (grow(sb, n))
		return;
	memset(sb->buf + sb->len, c, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

/* As git's strbuf_vaddf: print into the room there is, and again after
 * growing when the text did not fit. */
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	size_t room = sb->alloc > sb->len ? sb->alloc - sb->len : 0;
	va_list cp;
	int w;

	if (sb->bad)
		return;
	va_copy(cp, ap);
	w = vsnprintf(room ? sb->buf + sb->len : NULL, room, fmt, cp);
	va_end(cp);
	if (w < 0) {
		sb->bad = STRBUF_NOMEM;
		return;
	}
	if ((size_t)w >= room) {
		if (grow(sb, (size_t)w)) {
			if (sb->buf)
				sb->buf[sb->len] = '\0';
			return;
		}
		vsnprintf(sb->buf + sb->len, (size_t)w + 1, fmt, ap);
	} else if (sb->max && sb->len + (size_t)w > sb->max) {
		sb->buf[sb->len] = '\0';
		sb->bad = STRBUF_TOOLONG;
		return;
	}
	sb->len += (size_t)w;
}

void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
}
