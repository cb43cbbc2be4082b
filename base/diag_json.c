/*
 * diag_json: diagnostics as JSON for tools, written by the streaming JSON
 * writer (jsonw.h; diag_write_json is also the plan JSON's writer of
 * findings), and as SARIF 2.1.0 for code scanning, built with Jansson
 * (formats in diag.h).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "diag.h"

#include <ctype.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "version.h"

#define SARIF_SCHEMA "https://json.schemastore.org/sarif-2.1.0.json"

/* ---- Jansson helpers (SARIF) ---------------------------------------- */

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

/* The configs d was found for, as an array of strings. */
static json_t *json_configs(const struct diag *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < d->n_configs; i++)
		if (json_array_append_new(a, jstr(d->configs[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
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

/* ---- JSON: the one writer of findings ------------------------------- */

/* An integer, or null when not positive (no line, no column). */
static void write_pos(struct jw *w, const char *key, int v)
{
	jw_key(w, key);
	if (v > 0)
		jw_int(w, v);
	else
		jw_null(w);
}

/* Where a finding or a note is: file, line and column, null without a
 * source; a column only with a line. */
struct jloc {
	const char *file;
	int line, col;
};

static struct jloc jloc_of(const struct src_set *s, struct diag_loc loc)
{
	struct jloc j = { src_name(s, loc.src), 0, 0 };

	if (j.file) {
		j.line = loc.line;
		j.col = loc.line > 0 ? loc.col : 0;
	}
	return j;
}

void diag_write_json(struct jw *w, const struct diag_list *l,
		     const struct diag *d, int with_configs)
{
	struct jloc at = jloc_of(l->srcs, d->loc);

	jw_obj_begin(w, 0);
	jw_key(w, "code");
	jw_str(w, diag_code(d));
	write_pos(w, "column", at.col);
	if (with_configs) {
		jw_key(w, "configs");
		jw_arr_begin(w, 0);
		for (size_t i = 0; i < d->n_configs; i++)
			jw_str(w, d->configs[i]);
		jw_arr_end(w);
	}
	jw_key(w, "file");
	jw_str(w, at.file);
	jw_key(w, "hint");
	jw_str(w, d->hint);
	write_pos(w, "line", at.line);
	jw_key(w, "message");
	jw_str(w, d->msg);
	jw_key(w, "name");
	jw_str(w, d->rule ? d->rule->name : NULL);
	jw_key(w, "notes");
	jw_arr_begin(w, 0);
	for (size_t i = 0; i < d->n_notes; i++) {
		struct jloc n = jloc_of(l->srcs, d->notes[i].loc);

		jw_obj_begin(w, 0);
		write_pos(w, "column", n.col);
		jw_key(w, "file");
		jw_str(w, n.file);
		write_pos(w, "line", n.line);
		jw_key(w, "message");
		jw_str(w, d->notes[i].msg);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "path");
	jw_str(w, d->path);
	jw_key(w, "severity");
	jw_str(w, diag_severity_name(d->severity));
	jw_obj_end(w);
}

static void write_count(struct jw *w, const char *key, size_t n)
{
	jw_key(w, key);
	jw_int(w, (long long)n);
}

int diag_print_json(FILE *f, const struct diag_list *l)
{
	struct jw *w = malloc(sizeof(*w));
	int rc;

	if (!w)
		return -1;
	jw_init(w, f);
	jw_obj_begin(w, 0);
	jw_key(w, "diagnostics");
	jw_arr_begin(w, 0);
	for (size_t i = 0; i < l->n; i++)
		diag_write_json(w, l, &l->v[i], 1);
	jw_arr_end(w);
	jw_key(w, "format");
	jw_str(w, "gtplan-diagnostics/1");
	jw_key(w, "summary");
	jw_obj_begin(w, 0);
	write_count(w, "dropped", l->n_dropped);
	write_count(w, "errors", diag_count(l, DIAG_ERROR));
	write_count(w, "notes", diag_count(l, DIAG_NOTE));
	write_count(w, "suppressed", l->n_suppressed);
	write_count(w, "warnings", diag_count(l, DIAG_WARNING));
	jw_obj_end(w);
	jw_key(w, "tool");
	jw_obj_begin(w, 0);
	jw_key(w, "name");
	jw_str(w, "gtplan");
	jw_key(w, "version");
	jw_str(w, GTPLAN_VERSION);
	jw_obj_end(w);
	jw_obj_end(w);
	rc = jw_finish(w);
	free(w);
	return rc || ferror(f) ? -1 : 0;
}

/* ---- SARIF ---------------------------------------------------------- */

/* A URI for a file name: a relative reference, normalised (path_normal),
 * every byte but unreserved characters and '/' percent-encoded (so a ':'
 * in the first segment cannot read as a scheme). An absolute name, or one
 * that still climbs out of the current folder ("../x", made absolute when
 * it exists), becomes a file:// URI. */
static json_t *sarif_uri(const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	char *norm = src_path_normal(name), *u, *o, real[PATH_MAX];
	const char *path = norm;
	json_t *j;

	if (!norm)
		return NULL;
	if (!strncmp(norm, "../", 3) && realpath(name, real))
		path = real;
	if (!(u = o = malloc(3 * strlen(path) + 8))) {
		free(norm);
		return NULL;
	}
	if (path[0] == '/')
		o += sprintf(o, "file://");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (isalnum(*p) || strchr("-._~/", *p)) {
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
	free(norm);
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

/* A physicalLocation at the first line of file `name`. */
static json_t *sarif_file_loc(const char *name)
{
	json_t *phys = json_object(), *o = jwrap("physicalLocation", phys);
	int err = !o || json_object_set_new(phys, "artifactLocation",
					    jwrap("uri", sarif_uri(name))) ||
		  json_object_set_new(phys, "region",
				      json_pack("{s:i}", "startLine", 1));

	if (err) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A finding SARIF cannot place in a file: none of its own, and no config
 * to show it on (or the config itself does not read: GT104). Such ones are
 * the invocation's toolExecutionNotifications instead of results. */
static int sarif_unplaced(const struct src_set *s, const struct diag *d)
{
	if (src_is_file(s, d->loc.src))
		return 0;
	return !d->n_configs || !strcmp(d->configs[0], "-") ||
	       (d->loc.src < 0 && !strcmp(diag_code(d), "GT104"));
}

/* The message: a finding on the command line starts with its place and
 * the command line's text, since SARIF shows it on its config's line 1. */
static char *sarif_text(const struct src_set *s, const struct diag *d)
{
	const char *line = "";
	size_t len = 0;

	if (src_is_file(s, d->loc.src) || !src_name(s, d->loc.src))
		return d->hint ? diag_fmt("%s Hint: %s", d->msg, d->hint) :
				 diag_fmt("%s", d->msg);
	src_line(s, d->loc.src, d->loc.line > 0 ? d->loc.line : 1, &line, &len);
	return diag_fmt("%s:%d:%d ('%.*s'): %s%s%s", src_name(s, d->loc.src),
			d->loc.line, d->loc.col, (int)len, line, d->msg,
			d->hint ? " Hint: " : "", d->hint ? d->hint : "");
}

static json_t *sarif_result(const struct src_set *s, const struct diag *d)
{
	json_t *o = json_object(), *v;
	char *text = sarif_text(s, d);
	int err = !text;

	err |= json_object_set_new(o, "ruleId", jstr(diag_code(d)));
	if (d->rule)
		err |= json_object_set_new(o, "ruleIndex",
					   json_integer(d->rule -
							diag_rule_at(0)));
	err |= json_object_set_new(o, "level",
				   json_string(diag_severity_name(d->severity)));
	err |= json_object_set_new(o, "message", jwrap("text", jstr(text)));
	free(text);
	v = json_array();
	err |= json_object_set_new(o, "locations", v);
	err |= json_array_append_new(v, src_is_file(s, d->loc.src) ?
					sarif_loc(s, d->loc, NULL) :
					sarif_file_loc(d->configs[0]));
	if (d->n_configs)
		err |= json_object_set_new(o, "properties",
					   jwrap("configs", json_configs(d)));
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

/* The one invocation: whether gtplan could read everything, and what it
 * could not place (sarif_unplaced) as notifications. */
static json_t *sarif_invocation(const struct diag_list *l)
{
	json_t *inv = json_object(), *notes = json_array();
	int ok = 1, err = json_object_set_new(inv, "toolExecutionNotifications",
					      notes);

	for (size_t i = 0; i < l->n; i++) {
		const struct diag *d = &l->v[i];
		char *text;

		if (!sarif_unplaced(l->srcs, d))
			continue;
		ok &= d->severity != DIAG_ERROR;
		text = sarif_text(l->srcs, d);
		err |= !text || json_array_append_new(notes, json_pack(
			"{s:s, s:{s:o}, s:{s:s}}", "level",
			diag_severity_name(d->severity), "message", "text",
			jstr(text), "descriptor", "id", diag_code(d)));
		free(text);
	}
	err |= json_object_set_new(inv, "executionSuccessful", json_boolean(ok));
	if (err) {
		json_decref(inv);
		return NULL;
	}
	return inv;
}

/* The configs linted, as the run's analysis targets. */
static json_t *sarif_artifacts(const struct diag_list *l)
{
	json_t *a = json_array();
	int err = !a;

	for (size_t i = 0; !err && i < l->n_targets; i++)
		err |= json_array_append_new(a, json_pack(
			"{s:{s:o}, s:[s]}", "location", "uri",
			sarif_uri(l->targets[i]), "roles", "analysisTarget"));
	if (err) {
		json_decref(a);
		return NULL;
	}
	return a;
}

/* rules[]: every row of the table, with its documentation page. */
static int sarif_rules(json_t *rv)
{
	int err = 0;

	for (size_t i = 0; i < diag_rule_count(); i++) {
		const struct diag_rule *r = diag_rule_at(i);
		char *help = diag_fmt("%s#%c%c%s", GTPLAN_RULES_URL,
				      tolower((unsigned char)r->code[0]),
				      tolower((unsigned char)r->code[1]),
				      r->code + 2);

		err |= !help || json_array_append_new(
			rv, json_pack("{s:s, s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}}",
				      "id", r->code, "name", r->name,
				      "helpUri", help,
				      "shortDescription", "text", r->summary,
				      "fullDescription", "text", r->summary,
				      "help", "text", r->explanation,
				      "defaultConfiguration", "level",
				      diag_severity_name(r->severity)));
		free(help);
	}
	return err;
}

int diag_print_sarif(FILE *f, const struct diag_list *l)
{
	json_t *root = json_object(), *runs = json_array(), *run = json_object();
	json_t *list = json_array();
	json_t *driver = json_pack("{s:s, s:s, s:s}", "name", "gtplan",
				   "version", GTPLAN_VERSION, "informationUri",
				   GTPLAN_HOME_URL);
	json_t *rv = json_array();
	int err = json_object_set_new(driver, "rules", rv);

	err |= json_object_set_new(run, "tool", jwrap("driver", driver));
	err |= json_object_set_new(run, "columnKind",
				   json_string("unicodeCodePoints"));
	err |= json_object_set_new(run, "results", list);
	err |= json_object_set_new(run, "invocations",
				   json_pack("[o]", sarif_invocation(l)));
	if (l->n_targets)
		err |= json_object_set_new(run, "artifacts", sarif_artifacts(l));
	err |= json_object_set_new(root, "runs", runs);
	err |= json_array_append_new(runs, run);
	err |= json_object_set_new(root, "$schema",
				   json_string(SARIF_SCHEMA));
	err |= json_object_set_new(root, "version", json_string("2.1.0"));
	err |= sarif_rules(rv);
	for (size_t i = 0; i < l->n; i++)
		if (!sarif_unplaced(l->srcs, &l->v[i]))
			err |= json_array_append_new(list,
						     sarif_result(l->srcs, &l->v[i]));
	return json_finish(f, root, err);
}
