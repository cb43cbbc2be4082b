/*
 * diag_json: diagnostics as JSON for tools and as SARIF 2.1.0 for code
 * scanning (formats in diag.h), built with Jansson.
 */
#include "diag.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

#define SARIF_SCHEMA "https://json.schemastore.org/sarif-2.1.0.json"

/* ---- JSON and SARIF ------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (NUL-terminated), 0 if invalid. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		n = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		n = 3, lo = p[0] == 0xE0 ? 0xA0 : lo, hi = p[0] == 0xED ? 0x9F : hi;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		n = 4, lo = p[0] == 0xF0 ? 0x90 : lo, hi = p[0] == 0xF4 ? 0x8F : hi;
	else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xC0) != 0x80)
			return 0;
	return n;
}

/* A JSON string of s (null for NULL). Invalid UTF-8, as a file name or an
 * override from argv may hold, becomes U+FFFD: Jansson refuses it. */
static json_t *jstr(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	json_t *j;
	char *fix, *o;

	if (!s)
		return json_null();
	if ((j = json_string(s)))
		return j;
	if (!(fix = o = malloc(3 * strlen(s) + 1)))
		return NULL;
	while (*p) {
		size_t k = utf8_len(p);

		if (k) {
			memcpy(o, p, k);
			o += k;
			p += k;
		} else {
			memcpy(o, "\xEF\xBF\xBD", 3);
			o += 3;
			p++;
		}
	}
	*o = '\0';
	j = json_string(fix);
	free(fix);
	return j;
}

/* {key: v}, taking v; NULL when v is NULL or out of memory. (json_pack's
 * "o" would leak v on failure in some Jansson versions.) */
static json_t *jwrap(const char *key, json_t *v)
{
	json_t *o = json_object();

	if (json_object_set_new(o, key, v)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *jpos(int v)
{
	return v > 0 ? json_integer(v) : json_null();
}

/* Sets file, line and column of o from loc; all null without a location.
 * Like every json_object_set_new, returns nonzero on failure. */
static int json_set_loc(json_t *o, const struct src_set *s,
			struct diag_loc loc)
{
	const char *name = src_name(s, loc.src);

	return json_object_set_new(o, "file", jstr(name)) |
	       json_object_set_new(o, "line", jpos(name ? loc.line : 0)) |
	       json_object_set_new(o, "column",
				   jpos(name && loc.line > 0 ? loc.col : 0));
}

static json_t *json_diag(const struct src_set *s, const struct diag *d)
{
	json_t *o = json_object(), *notes = json_array();
	int err = json_object_set_new(o, "notes", notes);

	for (size_t i = 0; i < d->n_notes; i++) {
		json_t *n = json_object();

		err |= json_array_append_new(notes, n);
		err |= json_set_loc(n, s, d->notes[i].loc);
		err |= json_object_set_new(n, "message", jstr(d->notes[i].msg));
	}
	err |= json_object_set_new(o, "code", jstr(diag_code(d)));
	err |= json_object_set_new(o, "name", jstr(d->rule ? d->rule->name : NULL));
	err |= json_object_set_new(o, "severity",
				   json_string(diag_severity_name(d->severity)));
	err |= json_set_loc(o, s, d->loc);
	err |= json_object_set_new(o, "path", jstr(d->path));
	err |= json_object_set_new(o, "message", jstr(d->msg));
	err |= json_object_set_new(o, "hint", jstr(d->hint));
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* Dumps root to f with sorted keys and a final newline, and frees it. */
static int json_finish(FILE *f, json_t *root, int err)
{
	if (!err && root)
		err = json_dumpf(root, f, JSON_SORT_KEYS | JSON_INDENT(2)) ||
		      fputc('\n', f) == EOF;
	json_decref(root);
	return err || ferror(f) ? -1 : 0;
}

int diag_print_json(FILE *f, const struct diag_list *l)
{
	json_t *root = json_object(), *list = json_array();
	int err = json_object_set_new(root, "diagnostics", list);

	for (size_t i = 0; i < l->n; i++)
		err |= json_array_append_new(list, json_diag(l->srcs, &l->v[i]));
	err |= json_object_set_new(root, "format",
				   json_string("gtplan-diagnostics/1"));
	err |= json_object_set_new(root, "tool",
				   json_pack("{s:s, s:s}", "name", "gtplan",
					     "version", GTPLAN_VERSION));
	err |= json_object_set_new(
		root, "summary",
		json_pack("{s:I, s:I, s:I, s:I, s:I}",
			  "errors", (json_int_t)diag_count(l, DIAG_ERROR),
			  "warnings", (json_int_t)diag_count(l, DIAG_WARNING),
			  "notes", (json_int_t)diag_count(l, DIAG_NOTE),
			  "dropped", (json_int_t)l->n_dropped,
			  "suppressed", (json_int_t)l->n_suppressed));
	return json_finish(f, root, err);
}

/* A relative URI reference for a file name: leading "./" dropped, every
 * byte but unreserved characters and '/' percent-encoded (so a ':' in the
 * first segment cannot read as a scheme). */
static json_t *sarif_uri(const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	char *u, *o;
	json_t *j;

	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (!(u = o = malloc(3 * strlen(name) + 1)))
		return NULL;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p)) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	j = json_string(u);
	free(u);
	return j;
}

/* A SARIF location: its message (when msg) and, when loc is in a real file,
 * its physicalLocation. */
static json_t *sarif_loc(const struct src_set *s, struct diag_loc loc,
			 const char *msg)
{
	json_t *o = json_object(), *phys, *region;
	int err = 0;

	if (msg)
		err |= json_object_set_new(o, "message",
					   jwrap("text", jstr(msg)));
	if (src_is_file(s, loc.src)) {
		phys = json_object();
		err |= json_object_set_new(o, "physicalLocation", phys);
		err |= json_object_set_new(
			phys, "artifactLocation",
			jwrap("uri", sarif_uri(src_name(s, loc.src))));
		if (loc.line > 0) {
			region = json_pack("{s:i}", "startLine", loc.line);
			err |= json_object_set_new(phys, "region", region);
			if (loc.col > 0)
				err |= json_object_set_new(region, "startColumn",
							   json_integer(loc.col));
		}
	}
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *sarif_result(const struct src_set *s, const struct diag *d)
{
	json_t *o = json_object(), *v;
	char *text = d->hint ? diag_fmt("%s Hint: %s", d->msg, d->hint) : NULL;
	int err = d->hint && !text;

	err |= json_object_set_new(o, "ruleId", jstr(diag_code(d)));
	if (d->rule)
		err |= json_object_set_new(o, "ruleIndex",
					   json_integer(d->rule -
							diag_rule_at(0)));
	err |= json_object_set_new(o, "level",
				   json_string(diag_severity_name(d->severity)));
	err |= json_object_set_new(o, "message",
				   jwrap("text", jstr(text ? text : d->msg)));
	free(text);
	if (src_is_file(s, d->loc.src)) {
		v = json_array();
		err |= json_object_set_new(o, "locations", v);
		err |= json_array_append_new(v, sarif_loc(s, d->loc, NULL));
	}
	if (d->n_notes) {
		v = json_array();
		err |= json_object_set_new(o, "relatedLocations", v);
		for (size_t i = 0; i < d->n_notes; i++)
			err |= json_array_append_new(
				v, sarif_loc(s, d->notes[i].loc, d->notes[i].msg));
	}
	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int diag_print_sarif(FILE *f, const struct diag_list *l)
{
	json_t *root = json_object(), *runs = json_array(), *run = json_object();
	json_t *list = json_array();
	json_t *driver = json_pack("{s:s, s:s}", "name", "gtplan", "version",
				   GTPLAN_VERSION);
	json_t *rv = json_array();
	int err = json_object_set_new(driver, "rules", rv);

	err |= json_object_set_new(run, "tool", jwrap("driver", driver));
	err |= json_object_set_new(run, "columnKind",
				   json_string("unicodeCodePoints"));
	err |= json_object_set_new(run, "results", list);
	err |= json_object_set_new(root, "runs", runs);
	err |= json_array_append_new(runs, run);
	err |= json_object_set_new(root, "$schema",
				   json_string(SARIF_SCHEMA));
	err |= json_object_set_new(root, "version", json_string("2.1.0"));

	for (size_t i = 0; i < diag_rule_count(); i++) {
		const struct diag_rule *r = diag_rule_at(i);

		err |= json_array_append_new(
			rv, json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}",
				      "id", r->code, "name", r->name,
				      "shortDescription", "text", r->summary,
				      "fullDescription", "text", r->summary,
				      "help", "text", r->explanation,
				      "defaultConfiguration", "level",
				      diag_severity_name(r->severity)));
	}
	for (size_t i = 0; i < l->n; i++)
		err |= json_array_append_new(list, sarif_result(l->srcs, &l->v[i]));
	return json_finish(f, root, err);
}
