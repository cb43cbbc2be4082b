/*
 * strbuf: a growing, NUL-terminated string, after git's strbuf.h.
 *
 * Ownership: a struct strbuf is the caller's (on the stack or inside
 * another struct); its text is the buffer's until strbuf_detach() hands it
 * over (the caller then free()s it) and is freed by strbuf_release().
 * STRBUF_INIT (or zeroing) makes an empty buffer that owns nothing.
 *
 * Errors are sticky instead of returned by every append: when memory runs
 * out (STRBUF_NOMEM) or the text would pass `max` (STRBUF_TOOLONG, a
 * hostile-input limit; 0 means none) `bad` is set and further appends do
 * nothing, so a writer appends freely and checks once at the end.
 */
#ifndef GTPLAN_STRBUF_H
#define GTPLAN_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

enum strbuf_error { STRBUF_OK = 0, STRBUF_NOMEM = 1, STRBUF_TOOLONG = 2 };

struct strbuf {
	char *buf;    /* the text, NUL-terminated; NULL until the first append */
	size_t len;   /* bytes of text, without the NUL */
	size_t alloc; /* bytes allocated at buf */
	size_t max;   /* longest text allowed; 0: no limit */
	int bad;      /* enum strbuf_error: appends stopped */
};

#define STRBUF_INIT { NULL, 0, 0, 0, 0 }
/* An empty buffer whose text may not pass `max` bytes. */
#define STRBUF_INIT_MAX(max) { NULL, 0, 0, (max), 0 }

void strbuf_init(struct strbuf *sb, size_t max);
/* Frees the text; the buffer is empty (and good) again, `max` kept. */
void strbuf_release(struct strbuf *sb);
/* Empties the text but keeps its memory (and `bad`). */
void strbuf_reset(struct strbuf *sb);
/* Hands the text over: never NULL unless bad (an empty text is ""); the
 * buffer is empty after, as strbuf_release leaves it. */
char *strbuf_detach(struct strbuf *sb);
/* The text ("" when nothing was added), or NULL when bad. Valid until the
 * next append or release. */
const char *strbuf_str(const struct strbuf *sb);

void strbuf_add(struct strbuf *sb, const void *data, size_t n);
void strbuf_addstr(struct strbuf *sb, const char *s);
void strbuf_addch(struct strbuf *sb, char c);
/* n copies of c. */
void strbuf_addchars(struct strbuf *sb, char c, size_t n);
void strbuf_addf(struct strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#endif
