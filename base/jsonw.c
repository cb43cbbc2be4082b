/*
 * jsonw: a small streaming JSON writer (see jsonw.h for the contract).
 */
#include "jsonw.h"

#include <string.h>

void jw_init(struct jw *w, FILE *f)
{
	w->f = f;
	w->err = JW_OK;
	w->depth = 0;
	w->after_key = 0;
	w->is_obj[0] = 0;
	w->compact[0] = 0;
	w->has_items[0] = 0;
	w->last_key[0] = NULL;
	w->len = 0;
}

static void flush_buf(struct jw *w)
{
	if (w->len && !w->err &&
	    (fwrite(w->buf, 1, w->len, w->f) != w->len || ferror(w->f)))
		w->err = JW_EIO;
	w->len = 0;
}

/* After an error the buffer keeps filling and is dropped at each flush. */
void jw_raw_slow(struct jw *w, const char *s, size_t n)
{
	flush_buf(w);
	if (n > JW_BUF_SIZE) {
		if (!w->err && fwrite(s, 1, n, w->f) != n)
			w->err = JW_EIO;
		return;
	}
	memcpy(w->buf, s, n);
	w->len = n;
}

static void raw_char(struct jw *w, char c)
{
	if (w->len == JW_BUF_SIZE)
		flush_buf(w);
	w->buf[w->len++] = c;
}

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233"
	"34353637383940414243444546474849505152535455565758596061626364656667"
	"6869707172737475767778798081828384858687888990919293949596979899";

static int digits10(unsigned long long u)
{
	int n = 1;

	while (u >= 10000) {
		u /= 10000;
		n += 4;
	}
	return n + (u >= 10) + (u >= 100) + (u >= 1000);
}

/* Writes the n digits of u ending at end, two per step; 32-bit arithmetic
 * (cheaper) once the value fits, which every rank number does. */
static void put_digits(char *end, unsigned long long u)
{
	unsigned v;

	while (u > 0xffffffffull) {
		unsigned d = (unsigned)(u % 100) * 2;

		u /= 100;
		*--end = digit_pairs[d + 1];
		*--end = digit_pairs[d];
	}
	v = (unsigned)u;
	while (v >= 100) {
		unsigned d = (v % 100) * 2;

		v /= 100;
		*--end = digit_pairs[d + 1];
		*--end = digit_pairs[d];
	}
	if (v >= 10) {
		*--end = digit_pairs[v * 2 + 1];
		*--end = digit_pairs[v * 2];
	} else {
		*--end = (char)('0' + v);
	}
}

/* Formats straight into the buffer. */
void jw_raw_int(struct jw *w, long long v)
{
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v :
				       (unsigned long long)v;
	size_t n = (size_t)digits10(u) + (v < 0);

	if (w->len + 24 > JW_BUF_SIZE)
		flush_buf(w);
	if (v < 0)
		w->buf[w->len] = '-';
	put_digits(w->buf + w->len + n, u);
	w->len += n;
}

static void misuse(struct jw *w)
{
	if (!w->err)
		w->err = JW_EMISUSE;
}

static void newline_indent(struct jw *w, int depth)
{
	static const char spaces[] = "                                ";
	size_t n = (size_t)depth * 2, max = sizeof(spaces) - 1;

	raw_char(w, '\n');
	while (n > 0) {
		size_t k = n > max ? max : n;

		jw_raw(w, spaces, k);
		n -= k;
	}
}

/* The separator before an item (key or array value) of the open container. */
static void separate(struct jw *w)
{
	int d = w->depth;

	if (w->has_items[d])
		raw_char(w, ',');
	if (d > 0 && !w->compact[d])
		newline_indent(w, d);
	w->has_items[d] = 1;
}

/* Called before every value. */
void jw_item(struct jw *w)
{
	if (w->err)
		return;
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (w->is_obj[w->depth] || (w->depth == 0 && w->has_items[0])) {
		misuse(w); /* a value without a key, or a second document */
		return;
	}
	separate(w);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];

	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned lo = c == 0xe0 ? 0xa0 : 0x80;
		unsigned hi = c == 0xed ? 0x9f : 0xbf;

		return s[1] >= lo && s[1] <= hi &&
		       (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned lo = c == 0xf0 ? 0x90 : 0x80;
		unsigned hi = c == 0xf4 ? 0x8f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
		       (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

static void write_string(struct jw *w, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;

	raw_char(w, '"');
	while (*s) {
		const unsigned char *run = s;
		size_t n;

		while (*s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\')
			s++;
		jw_raw(w, (const char *)run, (size_t)(s - run));
		if (!*s)
			break;
		if (*s >= 0x80) {
			n = utf8_len(s); /* stops at a NUL, never past it */
			if (n) {
				jw_raw(w, (const char *)s, n);
				s += n;
			} else {
				jw_lit(w, "\\ufffd");
				s++;
			}
			continue;
		}
		switch (*s) {
		case '"': jw_lit(w, "\\\""); break;
		case '\\': jw_lit(w, "\\\\"); break;
		case '\n': jw_lit(w, "\\n"); break;
		case '\r': jw_lit(w, "\\r"); break;
		case '\t': jw_lit(w, "\\t"); break;
		case '\b': jw_lit(w, "\\b"); break;
		case '\f': jw_lit(w, "\\f"); break;
		default: {
			char u[6] = { '\\', 'u', '0', '0', hex[*s >> 4],
				      hex[*s & 15] };

			jw_raw(w, u, sizeof(u));
		}
		}
		s++;
	}
	raw_char(w, '"');
}

void jw_str(struct jw *w, const char *s)
{
	if (!s) {
		jw_null(w);
		return;
	}
	jw_item(w);
	write_string(w, s);
}

static void put_key(struct jw *w, const char *key, int sorted)
{
	int d = w->depth;

	if (w->err)
		return;
	if (!w->is_obj[d] || w->after_key ||
	    (sorted && w->last_key[d] && strcmp(w->last_key[d], key) >= 0)) {
		misuse(w);
		return;
	}
	w->last_key[d] = key;
	separate(w);
	write_string(w, key);
	if (w->compact[d])
		raw_char(w, ':');
	else
		jw_lit(w, ": ");
	w->after_key = 1;
}

void jw_key(struct jw *w, const char *key)
{
	put_key(w, key, 1);
}

void jw_key_in_order(struct jw *w, const char *key)
{
	put_key(w, key, 0);
}

static void open_container(struct jw *w, int obj, int compact)
{
	int d;

	jw_item(w);
	if (w->err)
		return;
	if (w->depth == JW_MAX_DEPTH) {
		misuse(w);
		return;
	}
	d = ++w->depth;
	w->is_obj[d] = (unsigned char)obj;
	w->compact[d] = (unsigned char)(compact || w->compact[d - 1]);
	w->has_items[d] = 0;
	w->last_key[d] = NULL;
	raw_char(w, obj ? '{' : '[');
}

static void close_container(struct jw *w, int obj)
{
	int d = w->depth;

	if (w->err)
		return;
	if (d == 0 || w->is_obj[d] != obj || w->after_key) {
		misuse(w);
		return;
	}
	if (w->has_items[d] && !w->compact[d])
		newline_indent(w, d - 1);
	raw_char(w, obj ? '}' : ']');
	w->depth--;
}

void jw_obj_begin(struct jw *w, int compact)
{
	open_container(w, 1, compact);
}

void jw_obj_end(struct jw *w)
{
	close_container(w, 1);
}

void jw_arr_begin(struct jw *w, int compact)
{
	open_container(w, 0, compact);
}

void jw_arr_end(struct jw *w)
{
	close_container(w, 0);
}

void jw_int(struct jw *w, long long v)
{
	jw_item(w);
	jw_raw_int(w, v);
}

void jw_bool(struct jw *w, int b)
{
	jw_item(w);
	if (b)
		jw_lit(w, "true");
	else
		jw_lit(w, "false");
}

void jw_null(struct jw *w)
{
	jw_item(w);
	jw_lit(w, "null");
}

/* num as snprintf wrote it into size bytes (n: what it returned). */
static void real(struct jw *w, const char *num, size_t size, int n)
{
	jw_item(w);
	if (n > 0)
		jw_raw(w, num, (size_t)n < size ? (size_t)n : size - 1);
}

void jw_real_f(struct jw *w, double v, int decimals)
{
	char num[352]; /* DBL_MAX has 309 digits before the point */

	real(w, num, sizeof(num),
	     snprintf(num, sizeof(num), "%.*f", decimals, v));
}

void jw_real_g(struct jw *w, double v, int digits)
{
	char num[64];

	real(w, num, sizeof(num),
	     snprintf(num, sizeof(num), "%.*g", digits, v));
}

int jw_finish(struct jw *w)
{
	if (!w->err && (w->depth != 0 || w->after_key || !w->has_items[0]))
		misuse(w);
	if (!w->err)
		raw_char(w, '\n');
	flush_buf(w);
	if (!w->err && (fflush(w->f) != 0 || ferror(w->f)))
		w->err = JW_EIO;
	return w->err ? -1 : 0;
}
