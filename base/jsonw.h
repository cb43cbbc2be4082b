/*
 * jsonw: a small streaming JSON writer for large, deterministic output.
 *
 * The plan of a 1M-rank world is ~300 MB of JSON; building it as a Jansson
 * tree would take gigabytes. A `struct jw` writes straight into a buffer and
 * flushes it to a FILE, so memory stays constant.
 *
 * Layout: a container opened with compact = 0 is "pretty" (one item per
 * line, two spaces of indent per level, `"key": value`); one opened with
 * compact = 1, and everything inside it, is written on one line without
 * spaces (`{"a":1,"b":[2,3]}`). Empty containers are `{}` and `[]`.
 *
 * Keys are the caller's to sort: jw_key() refuses a key that is not greater
 * than the previous key of the same object, so an unsorted writer fails its
 * tests instead of producing unstable output. A key must stay valid until
 * the next key of its object (string literals and static tables do).
 *
 * Errors are sticky: after a write error or a misuse (unsorted key, value
 * without key, unbalanced end, nesting past JW_MAX_DEPTH) every call does
 * nothing, and jw_finish() returns -1.
 *
 * Ownership: a struct jw is the caller's (and large: ~64 KiB) with no
 * heap inside; it writes to the caller's stream, which jw_finish flushes
 * but does not close. Values are copied out as they are written; a key is
 * borrowed until the next key of its object (see above).
 */
#ifndef GTPLAN_JSONW_H
#define GTPLAN_JSONW_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define JW_MAX_DEPTH 64 /* as deep as a config may nest (CFG_MAX_DEPTH) */
#define JW_BUF_SIZE  (1u << 16)

enum jw_error { JW_OK = 0, JW_EIO = 1, JW_EMISUSE = 2 };

struct jw {
	FILE *f;
	enum jw_error err;
	int depth;     /* open containers */
	int after_key; /* a key was written; its value comes next */
	unsigned char is_obj[JW_MAX_DEPTH + 1];
	unsigned char compact[JW_MAX_DEPTH + 1];
	unsigned char has_items[JW_MAX_DEPTH + 1];
	const char *last_key[JW_MAX_DEPTH + 1];
	size_t len;
	char buf[JW_BUF_SIZE];
};

/* Starts a document on f. A struct jw is ~64 KiB: keep it off small stacks. */
void jw_init(struct jw *w, FILE *f);
/* Ends the document: checks that every container was closed, writes the
 * final newline, flushes the buffer and f. Returns 0, or -1 after any write
 * error or misuse. */
int jw_finish(struct jw *w);

void jw_obj_begin(struct jw *w, int compact);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w, int compact);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *key);
/* A key in the caller's (document) order: no sorted-keys check. For
 * documents that mirror an input, such as `gtplan config`. */
void jw_key_in_order(struct jw *w, const char *key);

void jw_int(struct jw *w, long long v);
/* A string with JSON escapes; invalid UTF-8 becomes U+FFFD. NULL: null. */
void jw_str(struct jw *w, const char *s);
void jw_bool(struct jw *w, int b);
void jw_null(struct jw *w);
/* A finite real as printf's "%.*f" (decimals after the point) or "%.*g"
 * (significant digits) writes it: a fixed precision, so the same value
 * gives the same bytes. */
void jw_real_f(struct jw *w, double v, int decimals);
void jw_real_g(struct jw *w, double v, int digits);

/* Fast path for hot loops. jw_item() writes the separator and indent that
 * the next item of the current container needs (like any value would);
 * the caller then writes the item itself, complete and valid, with jw_raw()
 * and jw_raw_int(), which add nothing around what they write. */
void jw_item(struct jw *w);
void jw_raw_int(struct jw *w, long long v);
void jw_raw_slow(struct jw *w, const char *s, size_t n);

/* Inline so that short constant pieces (jw_lit) become plain stores. */
static inline void jw_raw(struct jw *w, const char *s, size_t n)
{
	if (w->len + n <= JW_BUF_SIZE) {
		memcpy(w->buf + w->len, s, n);
		w->len += n;
	} else {
		jw_raw_slow(w, s, n);
	}
}

#define jw_lit(w, lit) jw_raw((w), "" lit, sizeof(lit) - 1)

#endif
