/*
 * project: the selection of findings from the command line, project files,
 * gtplan.ignore and inline comments (project.h).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argopt.h"
#include "errmsg.h"
#include "levenshtein.h"
#include "project.h"

/* ---- the command line ----------------------------------------------- */

/* -1 when s is not a severity's name. */
static int severity_of(const char *s)
{
	for (int k = DIAG_NOTE; k <= DIAG_ERROR; k++)
		if (!strcmp(s, diag_severity_name((enum diag_severity)k)))
			return k;
	return -1;
}

/* Appends the comma-separated selectors of v to *list. */
static int push_selectors(char ***list, size_t *n, const char *v, char *err,
			  size_t errlen)
{
	for (const char *p = v, *q; *p; p = *q ? q + 1 : q) {
		char **nl, *s;

		q = p + strcspn(p, ",");
		if (q == p)
			continue;
		if (!(s = strndup(p, (size_t)(q - p))) ||
		    !(nl = realloc(*list, (*n + 1) * sizeof(*nl)))) {
			free(s);
			return errmsg_set(-1, err, errlen, "out of memory");
		}
		*list = nl;
		nl[(*n)++] = s;
		if (!sel_valid(s)) {
			const struct diag_rule *r = sel_closest(s);

			return errmsg_set(-1, err, errlen, "no rule '%s'%s%s%s",
					  s, r ? " (did you mean " : "",
					  r ? r->code : "", r ? "?)" : "");
		}
	}
	return 0;
}

int proj_parse_option(struct proj_opts *o, int argc, char **argv, int *i,
		      char *err, size_t errlen)
{
	static const char *const valued[] = {
		"--ignore", "--select", "--min-severity", "--config",
	};
	const char *a = argv[*i], *v = NULL;
	size_t k;

	if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
		return o->quiet = 1;
	if (!strcmp(a, "--no-config"))
		return o->no_config = 1;
	for (k = 0; k < sizeof(valued) / sizeof(*valued); k++)
		if (argopt_take(valued[k], argc, argv, i, &v))
			break;
	if (k == sizeof(valued) / sizeof(*valued))
		return 0;
	if (!v)
		return errmsg_set(-1, err, errlen, "%s needs a value", a);
	switch (k) {
	case 0:
		return push_selectors(&o->ignore, &o->n_ignore, v, err,
				      errlen) ? -1 : 1;
	case 1:
		o->select_given = 1;
		return push_selectors(&o->select, &o->n_select, v, err,
				      errlen) ? -1 : 1;
	case 2:
		if ((o->min_severity = severity_of(v)) < 0)
			return errmsg_set(-1, err, errlen, "unknown severity "
					  "'%s' (use note, warning or error)",
					  v);
		return 1;
	default:
		o->config = v;
		return 1;
	}
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void proj_opts_release(struct proj_opts *o)
{
	free_list(o->ignore, o->n_ignore);
	free_list(o->select, o->n_select);
	o->ignore = o->select = NULL;
	o->n_ignore = o->n_select = 0;
}

/* ---- finding a project file ----------------------------------------- */

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* 1 when the file at path holds a [tool.gtplan] header line. */
static int has_our_table(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f))
		found = !strncmp(line, "[tool.gtplan]", 13) ||
			!strncmp(line, "[tool.gtplan.", 13);
	if (f)
		fclose(f);
	return found;
}

/* The real path of the project file for a config at `config` (NULL or
 * "-": the current folder), or NULL when there is none. */
static char *find_project(const char *config)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], *slash;
	const char *from = config && strcmp(config, "-") ? config : ".";

	if (!realpath(from, dir))
		return NULL;
	if (is_file(dir) && (slash = strrchr(dir, '/')))
		*(slash == dir ? slash + 1 : slash) = '\0';
	for (;;) {
		snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") ? dir : "",
			 PROJ_YAML);
		if (is_file(path))
			return strdup(path);
		snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") ? dir : "",
			 PROJ_TOML);
		if (is_file(path) && has_our_table(path))
			return strdup(path);
		snprintf(path, sizeof(path), "%s/.git", strcmp(dir, "/") ? dir : "");
		if (!strcmp(dir, "/") || access(path, F_OK) == 0)
			return NULL;
		slash = strrchr(dir, '/');
		*(slash == dir ? slash + 1 : slash) = '\0';
	}
}

/* How outputs name the project file at real path `real`: relative to the
 * current folder when it is under it (so that outputs do not depend on
 * where the checkout is), else the real path. */
static const char *display_name(const char *real)
{
	static char cwd[PATH_MAX];
	size_t n;

	if (!getcwd(cwd, sizeof(cwd)))
		return real;
	n = strlen(cwd);
	if (!strncmp(real, cwd, n) && real[n] == '/')
		return real + n + 1;
	return real;
}

/* ---- reading one ---------------------------------------------------- */

static int is_toml(const char *path)
{
	size_t n = strlen(path);

	return n >= 5 && !strcmp(path + n - 5, ".toml");
}

/* Registers the TOML file at name as a source and reads its table. */
static int read_toml(const char *name, struct src_set *srcs,
		     struct diag_list *diags, struct cfg_node **out)
{
	FILE *f = fopen(name, "rb");
	char *text = malloc(CFG_MAX_FILE_BYTES + 1);
	size_t len = 0;
	int id;

	*out = NULL;
	if (f && text)
		len = fread(text, 1, CFG_MAX_FILE_BYTES, f);
	if (!f || !text || ferror(f)) {
		diag_add(diags, "GT104", DIAG_NOLOC, NULL, "cannot read "
			 "project file '%s': %s", name,
			 strerror(f ? EIO : errno));
		free(text);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	text[len] = '\0';
	if ((id = src_add(srcs, name, text, len)) < 0)
		return -1;
	return proj_toml_table(srcs, id, diags, out);
}

static const char *const proj_keys[] = {
	"ignore", "select", "min-severity", "strict", "format",
	"hardware", "interconnect", "gpu_memory_gb",
};
static const char *const formats[] = {
	"text", "json", "sarif", "github", "concise", "junit",
};

static void bad_value(struct diag_list *diags, const struct cfg_node *n,
		      const char *want)
{
	struct diag *d = diag_add(diags, "GT003", n->loc, n->key,
				  "project setting '%s' must be %s", n->key,
				  want);

	diag_hint(d, "`gtplan explain GT003` lists the keys and values");
}

static int one_of(const char *s, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s, v[i]))
			return 1;
	return 0;
}

/* A list of selectors: each item a string naming a rule (GT002 else). */
static int read_selectors(struct diag_list *diags, const struct cfg_node *n)
{
	if (n->kind != CFG_SEQ) {
		bad_value(diags, n, "a list of rule selectors");
		return -1;
	}
	for (size_t i = 0; i < n->n; i++) {
		const struct cfg_node *k = n->kids[i];

		if (k->kind != CFG_STR) {
			bad_value(diags, n, "a list of rule selectors");
			return -1;
		}
		if (!sel_valid(k->text))
			sel_say_unknown(diags, k->loc, NULL, n->key, k->text);
	}
	return 0;
}

static void unknown_key(struct diag_list *diags, const struct cfg_node *n)
{
	long k = lev_suggest(n->key, proj_keys,
			     sizeof(proj_keys) / sizeof(*proj_keys), NULL);
	struct diag *d = diag_add(diags, "GT003", n->key_loc, n->key,
				  "unknown project setting '%s'", n->key);

	if (k >= 0)
		diag_hint(d, "did you mean '%s'?", proj_keys[k]);
	else
		diag_hint(d, "the keys are ignore, select, min-severity, "
			  "strict, format, hardware, interconnect and "
			  "gpu_memory_gb");
}

/* A hardware default (gtplan.hardware, gtplan.interconnect: maps of the
 * config's keys; gtplan.gpu_memory_gb: a number) into pf->defaults, with
 * its places in the project file. Its keys and values are checked as the
 * config's own once they are in a config (proj_apply_defaults). */
static int read_hardware(struct proj_file *pf, struct diag_list *diags,
			 const struct cfg_node *n)
{
	int map = strcmp(n->key, "gpu_memory_gb") != 0;
	struct cfg_node *c;

	if (map ? n->kind != CFG_MAP :
		  n->kind != CFG_INT && n->kind != CFG_FLOAT) {
		bad_value(diags, n, map ? "a map of the keys the config's "
			  "gtplan section has there" : "a number (GiB)");
		return 0;
	}
	if (!pf->defaults && !(pf->defaults = cfg_new(CFG_MAP, n->loc)))
		return -1;
	if (!(c = cfg_clone(n)))
		return -1;
	return cfg_map_set(pf->defaults, n->key, c);
}

/* One key of a project file's map into pf (and ignore into sel). */
static int read_key(struct proj_state *ps, struct proj_file *pf,
		    struct diag_list *diags, const struct cfg_node *n,
		    const char *origin)
{
	if (!strcmp(n->key, "ignore") || !strcmp(n->key, "select")) {
		int ign = n->key[0] == 'i';

		if (read_selectors(diags, n))
			return 0;
		for (size_t i = 0; i < n->n; i++) {
			const struct cfg_node *k = n->kids[i];
			char **v;

			if (!sel_valid(k->text))
				continue; /* GT002, said */
			if (ign) {
				if (sel_add(&ps->sel, k->text, k->loc, pf->scope,
					    origin, 1))
					return -1;
				continue;
			}
			if (!(v = realloc(pf->select, (pf->n_select + 1) *
					  sizeof(*v))) ||
			    !(v[pf->n_select] = strdup(k->text)))
				return -1;
			pf->select = v;
			pf->n_select++;
		}
		pf->have_select |= !ign;
	} else if (!strcmp(n->key, "min-severity")) {
		if (n->kind != CFG_STR || (pf->min_severity =
					   severity_of(n->text)) < 0)
			bad_value(diags, n, "note, warning or error");
	} else if (!strcmp(n->key, "strict")) {
		if (n->kind != CFG_BOOL)
			bad_value(diags, n, "true or false");
		else
			pf->strict = n->v.b;
	} else if (!strcmp(n->key, "hardware") ||
		   !strcmp(n->key, "interconnect") ||
		   !strcmp(n->key, "gpu_memory_gb")) {
		return read_hardware(pf, diags, n);
	} else if (!strcmp(n->key, "format")) {
		if (n->kind != CFG_STR || !one_of(n->text, formats,
						  sizeof(formats) / sizeof(*formats)))
			bad_value(diags, n, "text, json, sarif, github, concise "
				  "or junit");
		else if (!(pf->format = strdup(n->text)))
			return -1;
	} else {
		unknown_key(diags, n);
	}
	return 0;
}

/* Reads the project file at real path into pf (its findings to diags). */
static int read_project(struct proj_state *ps, struct proj_file *pf,
			struct src_set *srcs, struct diag_list *diags)
{
	const char *name = display_name(pf->real);
	int toml = is_toml(name);
	struct cfg_node *root = NULL;
	int rc = 0;

	if (toml ? read_toml(name, srcs, diags, &root) :
		   cfg_parse_file(name, srcs, diags, &root))
		return 0; /* said; the file sets nothing */
	if (root && root->kind != CFG_MAP) {
		struct diag *d = diag_add(diags, "GT003", root->loc, NULL,
					  "a project file holds a map of "
					  "settings");
		diag_hint(d, "write `ignore: [GT670]`, `strict: true`, ...");
	}
	for (size_t i = 0; root && root->kind == CFG_MAP && !rc &&
			   i < root->n; i++)
		rc = read_key(ps, pf, diags, root->kids[i],
			      toml ? "[tool.gtplan] ignore" :
				     PROJ_YAML " ignore");
	cfg_free(root);
	return rc;
}

/* The index of the project file for `config` in ps->files (read on first
 * use), or -1 when there is none. -2 when out of memory. */
static int project_for(struct proj_state *ps, const char *config,
		       struct src_set *srcs, struct diag_list *diags)
{
	char *real = NULL;
	struct proj_file *v, *pf;

	if (ps->opts->no_config)
		return -1;
	if (ps->opts->config)
		real = realpath(ps->opts->config, NULL);
	else
		real = find_project(config);
	if (!real && ps->opts->config) {
		diag_add(diags, "GT104", DIAG_NOLOC, NULL, "cannot read project "
			 "file '%s': %s", ps->opts->config, strerror(errno));
		return -1;
	}
	if (!real)
		return -1;
	for (size_t i = 0; i < ps->n_files; i++)
		if (!strcmp(ps->files[i].real, real)) {
			free(real);
			return (int)i;
		}
	if (!(v = realloc(ps->files, (ps->n_files + 1) * sizeof(*v)))) {
		free(real);
		return -2;
	}
	ps->files = v;
	pf = &v[ps->n_files];
	memset(pf, 0, sizeof(*pf));
	pf->real = real;
	pf->scope = ps->next_scope++;
	pf->min_severity = pf->strict = -1;
	ps->n_files++;
	if (read_project(ps, pf, srcs, diags))
		return -2;
	return (int)(ps->n_files - 1);
}

/* ---- selecting ------------------------------------------------------ */

void proj_state_init(struct proj_state *ps, const struct proj_opts *opts)
{
	memset(ps, 0, sizeof(*ps));
	ps->opts = opts;
	ps->first = -1;
	sel_set_init(&ps->sel);
}

void proj_state_release(struct proj_state *ps)
{
	for (size_t i = 0; i < ps->n_files; i++) {
		free(ps->files[i].real);
		free_list(ps->files[i].select, ps->files[i].n_select);
		free(ps->files[i].format);
		cfg_free(ps->files[i].defaults);
	}
	free(ps->files);
	sel_set_release(&ps->sel);
	proj_state_init(ps, ps->opts);
}

/* gtplan.ignore of a job's config, in `scope`. */
static int read_config_ignore(struct proj_state *ps, const struct cfg_node *root,
			      struct diag_list *diags, int scope)
{
	const struct cfg_node *n = cfg_path(root, "gtplan.ignore");

	if (!n || n->kind != CFG_SEQ)
		return 0; /* the schema says what is wrong with it */
	for (size_t i = 0; i < n->n; i++) {
		const struct cfg_node *k = n->kids[i];

		if (k->kind != CFG_STR)
			continue;
		if (!sel_valid(k->text)) {
			sel_say_unknown(diags, k->loc, "gtplan.ignore",
					"gtplan.ignore", k->text);
			continue;
		}
		if (sel_add(&ps->sel, k->text, k->loc, scope, "gtplan.ignore", 1))
			return -1;
	}
	return 0;
}

/* The selection in force for project file pf (-1: none). */
static void selection(const struct proj_state *ps, int pf, char *const **sel,
		      size_t *n, enum diag_severity *min)
{
	const struct proj_opts *o = ps->opts;
	const struct proj_file *f = pf >= 0 ? &ps->files[pf] : NULL;

	*sel = o->select;
	*n = o->n_select;
	if (!o->select_given && f && f->have_select) {
		*sel = f->select;
		*n = f->n_select;
	}
	*min = DIAG_NOTE;
	if (o->min_severity >= 0)
		*min = (enum diag_severity)o->min_severity;
	else if (f && f->min_severity >= 0)
		*min = (enum diag_severity)f->min_severity;
}

int proj_filter_job(struct proj_state *ps, const char *config,
		    const struct cfg_node *root, struct src_set *srcs,
		    struct diag_list *diags, size_t from)
{
	int scopes[2] = { ps->next_scope++, -1 };
	int pf = project_for(ps, config, srcs, diags);
	char *const *sel;
	enum diag_severity min;
	size_t n;

	if (pf == -2)
		return -1;
	if (ps->first < 0 && !ps->started)
		ps->first = pf;
	for (size_t i = 0; !ps->started && i < ps->opts->n_ignore; i++)
		if (sel_add(&ps->sel, ps->opts->ignore[i], DIAG_NOLOC, -1,
			    "--ignore", 0))
			return -1;
	ps->started = 1;
	if (pf >= 0)
		scopes[1] = ps->files[pf].scope;
	if ((root && read_config_ignore(ps, root, diags, scopes[0])) ||
	    sel_scan(&ps->sel, srcs, diags))
		return -1;
	sel_suppress(&ps->sel, diags, from, scopes, pf >= 0 ? 2 : 1);
	selection(ps, pf, &sel, &n, &min);
	sel_filter(diags, from, sel, n, min);
	return 0;
}

int proj_finish(struct proj_state *ps, struct diag_list *diags)
{
	size_t from = diags->n;
	int scope = ps->first >= 0 ? ps->files[ps->first].scope : -1;
	char *const *sel;
	enum diag_severity min;
	size_t n;

	if (ps->finished)
		return 0;
	ps->finished = 1;
	if (sel_report_unused(&ps->sel, diags))
		return -1;
	/* GT001 findings can be suppressed like any other, but only by the
	 * command line and the first project file: they outlive the jobs. */
	sel_suppress(&ps->sel, diags, from, &scope, 1);
	selection(ps, ps->first, &sel, &n, &min);
	sel_filter(diags, from, sel, n, min);
	return 0;
}

void proj_defaults(const struct proj_opts *opts, const char *config,
		   int *strict, char **format)
{
	struct proj_state ps;
	struct src_set srcs;
	struct diag_list diags;
	int pf;

	*strict = -1;
	*format = NULL;
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	proj_state_init(&ps, opts);
	pf = project_for(&ps, config, &srcs, &diags);
	if (pf >= 0 && !diags.n) {
		*strict = ps.files[pf].strict;
		*format = ps.files[pf].format;
		ps.files[pf].format = NULL;
	}
	proj_state_release(&ps);
	diag_list_release(&diags);
	src_set_release(&srcs);
}

int proj_read(struct proj_state *ps, const char *config, struct src_set *srcs,
	      struct diag_list *diags)
{
	return project_for(ps, config, srcs, diags) == -2 ? -1 : 0;
}

/* Copies what `from` (a map) has and `into` (a map) lacks, one level of
 * maps deep; a key `into` holds as another kind stays (the config's). */
static int fill_missing(struct cfg_node *into, const struct cfg_node *from,
			int depth)
{
	for (size_t i = 0; i < from->n; i++) {
		const struct cfg_node *k = from->kids[i];
		struct cfg_node *have = cfg_get(into, k->key), *c;

		if (have && have->kind == CFG_MAP && k->kind == CFG_MAP &&
		    depth == 0) {
			if (fill_missing(have, k, depth + 1))
				return -1;
			continue;
		}
		if (have)
			continue;
		if (!(c = cfg_clone(k)) || cfg_map_set(into, k->key, c))
			return -1;
	}
	return 0;
}

int proj_apply_defaults(struct proj_state *ps, const char *config,
			struct cfg_node *root, struct src_set *srcs,
			struct diag_list *diags)
{
	int pf = project_for(ps, config, srcs, diags);
	const struct cfg_node *d;
	struct cfg_node *gt;

	if (pf == -2)
		return -1;
	if (pf < 0 || !root || root->kind != CFG_MAP ||
	    !(d = ps->files[pf].defaults))
		return 0;
	gt = cfg_get(root, "gtplan");
	if (!gt) {
		struct cfg_node *m = cfg_new(CFG_MAP, d->loc);

		if (!m || cfg_map_set(root, "gtplan", m))
			return -1;
		gt = cfg_get(root, "gtplan");
	}
	if (gt->kind != CFG_MAP)
		return 0; /* the schema says what is wrong with it */
	return fill_missing(gt, d, 0);
}
