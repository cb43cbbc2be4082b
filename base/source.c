/*
 * source: the texts locations point into (src_* in diag.h), with their
 * lines indexed so that an excerpt of any line is quick to find.
 */
#include "diag.h"

#include <stdlib.h>
#include <string.h>

/* Every SRC_LINE_STRIDE-th line start is remembered (see src_file). */
#define SRC_LINE_STRIDE 64

/* ---- sources -------------------------------------------------------- */

void src_set_init(struct src_set *s)
{
	memset(s, 0, sizeof(*s));
}

void src_set_release(struct src_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].name);
		free(s->v[i].text);
		free(s->v[i].line_marks);
	}
	free(s->v);
	src_set_init(s);
}

/* Length of the line break at p, 0 when there is none. The breaks are
 * libyaml's, since the locations we show come from its marks. */
static size_t brk_len(const unsigned char *p, const unsigned char *end)
{
	size_t left = (size_t)(end - p);

	if (p[0] == '\n')
		return 1;
	if (p[0] == '\r')
		return left > 1 && p[1] == '\n' ? 2 : 1;
	if (p[0] == 0xC2 && left > 1 && p[1] == 0x85)
		return 2; /* NEL */
	if (p[0] == 0xE2 && left > 2 && p[1] == 0x80 &&
	    (p[2] == 0xA8 || p[2] == 0xA9))
		return 3; /* LS, PS */
	return 0;
}

/* The first line break at or after p (end when none); its length in *k. */
static const unsigned char *next_brk(const unsigned char *p,
				     const unsigned char *end, size_t *k)
{
	for (; p < end; p++)
		if ((*k = brk_len(p, end)))
			return p;
	*k = 0;
	return end;
}

/* Counts the lines of f and remembers where every SRC_LINE_STRIDE-th one
 * starts. Returns 0, or -1 when out of memory. */
static int src_index(struct src_file *f)
{
	const unsigned char *t = (const unsigned char *)f->text, *p = t, *end;
	size_t n = 0, cap = 0, k;
	size_t *v;

	if (!t)
		return 0;
	end = t + f->len;
	for (;;) {
		if (f->n_lines % SRC_LINE_STRIDE == 0) {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				v = realloc(f->line_marks, cap * sizeof(*v));
				if (!v)
					return -1;
				f->line_marks = v;
			}
			f->line_marks[n++] = (size_t)(p - t);
		}
		f->n_lines++;
		p = next_brk(p, end, &k);
		if (p == end)
			return 0;
		p += k;
	}
}

int src_add(struct src_set *s, const char *name, char *text, size_t len)
{
	struct src_file *f;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct src_file *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			goto fail;
		s->v = v;
		s->cap = cap;
	}
	f = &s->v[s->n];
	memset(f, 0, sizeof(*f));
	f->text = text;
	f->len = text ? len : 0;
	f->name = strdup(name ? name : "");
	if (!f->name || src_index(f) < 0) {
		free(f->name);
		free(f->line_marks);
		goto fail;
	}
	return (int)s->n++;
fail:
	free(text);
	return -1;
}

const char *src_name(const struct src_set *s, int id)
{
	if (!s || id < 0 || (size_t)id >= s->n)
		return NULL;
	return s->v[id].name;
}

int src_is_file(const struct src_set *s, int id)
{
	const char *name = src_name(s, id);

	return name && name[0] && name[0] != '<' && strcmp(name, SRC_CMDLINE) &&
	       strcmp(name, "-");
}

int src_line(const struct src_set *s, int id, int line, const char **start,
	     size_t *len)
{
	const struct src_file *f;
	const unsigned char *t, *p, *q, *end;
	size_t k, skip;

	if (!src_name(s, id) || line < 1)
		return -1;
	f = &s->v[id];
	if (!f->text || (size_t)line > f->n_lines)
		return -1;
	t = (const unsigned char *)f->text;
	end = t + f->len;
	p = t + f->line_marks[(size_t)(line - 1) / SRC_LINE_STRIDE];
	for (skip = (size_t)(line - 1) % SRC_LINE_STRIDE; skip; skip--)
		p = next_brk(p, end, &k) + k;
	q = next_brk(p, end, &k);
	if (line == 1 && q - p >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
		p += 3;
	*start = (const char *)p;
	*len = (size_t)(q - p);
	return 0;
}

char *src_path_normal(const char *name)
{
	size_t n = strlen(name), o = 0, keep = 0; /* keep: leading ".."s */
	char *out = malloc(n + 2);
	int abs = name[0] == '/';

	if (!out)
		return NULL;
	for (const char *p = name, *q; *p; p = *q ? q + 1 : q) {
		size_t k;

		q = p + strcspn(p, "/");
		k = (size_t)(q - p);
		if (!k || (k == 1 && p[0] == '.') ||
		    (abs && o == keep && k == 2 && p[0] == '.' && p[1] == '.'))
			continue; /* "/.." is "/" */
		if (k == 2 && p[0] == '.' && p[1] == '.' && o > keep) {
			while (o > keep && out[o - 1] != '/')
				o--;
			o -= o > keep; /* the '/' before the dropped segment */
			continue;
		}
		if (o || abs)
			out[o++] = '/';
		memcpy(out + o, p, k);
		o += k;
		if (k == 2 && p[0] == '.' && p[1] == '.')
			keep = o;
	}
	if (!o && abs)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}
