/*
 * cfg_defaults: NeMo-RL's `defaults:` inheritance and OmegaConf.merge.
 *
 * nemo_rl/utils/config.py load_config_with_inheritance(): load the file,
 * pop `defaults` (a path or a list of paths), resolve each path against the
 * including file's folder (absolute paths as they are), load each parent the
 * same way (depth-first), merge the parents in order into an empty config,
 * then merge the file itself on top. merge_with_override(): a top-level
 * section whose map carries a truthy `_override_` drops the inherited
 * section first, so it replaces instead of merging (and moves to the end of
 * the config); the marker is removed. Deeper markers do nothing there.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "cfg.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A parent loaded cleanly once: every later inclusion gets a copy, so a
 * "diamond" of files that include each other twice loads each file once. */
struct loaded {
	char *real;            /* realpath */
	struct cfg_node *tree; /* the file with its own defaults merged */
};

/* One cfg_load(): what it has read so far, against the limits. */
struct loader {
	struct src_set *srcs;
	struct diag_list *diags;
	struct loaded *done;
	size_t n_done, cap_done;
	size_t bytes;    /* of every file read, against CFG_MAX_LOAD_BYTES */
	size_t includes; /* defaults: entries followed, CFG_MAX_INCLUDES */
	size_t copied;   /* nodes copied from done[], CFG_MAX_NODES */
	int limit_hit;   /* a load limit was reported: stop loading */
};

/* One file on the current inheritance chain. */
struct chain {
	const char *shown;    /* path as built from the user's paths */
	char *real;           /* realpath, for cycle detection */
	const struct chain *up;
	struct diag_loc at;   /* the defaults: entry that included it */
};

/* Python truthiness of the marker, as NeMo-RL's `.get("_override_", False)`
 * sees it; a marker that is not a boolean is a warning. */
static int marker_truthy(const struct cfg_node *m, struct diag_list *diags)
{
	switch (m->kind) {
	case CFG_BOOL: return m->v.b;
	case CFG_NULL: return 0;
	default: break;
	}
	int truth = cfg_truthy(m, 0);
	struct diag *d = diag_add(diags, "GT108", m->loc, NULL,
		"'_override_' is %s %s%s%s, which NeMo-RL reads as %s",
		cfg_kind_name(m->kind), m->text ? "'" : "",
		m->text ? m->text : "", m->text ? "'" : "",
		truth ? "true" : "false");
	diag_hint(d, "write '_override_: true' to replace the inherited "
		  "section, or remove the marker");
	return truth;
}

/* NeMo-RL honours `_override_` only on the top-level sections of a file;
 * deeper down it is an ordinary key and the section merges. Say so. */
static void warn_nested_markers(const struct cfg_node *n, int depth,
				struct diag_list *diags)
{
	if (n->kind != CFG_MAP)
		return;
	for (size_t i = 0; i < n->n; i++) {
		const struct cfg_node *k = n->kids[i];

		if (depth >= 2 && strcmp(k->key, "_override_") == 0) {
			struct diag *d = diag_add(diags, "GT109", k->key_loc,
				NULL, "'_override_' below a top-level section "
				"has no effect in NeMo-RL: '%s' is merged, and "
				"'_override_' stays in it as a plain key",
				n->key ? n->key : "");
			diag_hint(d, "move the marker to the top-level section, "
				  "or override the keys one by one");
		}
		warn_nested_markers(k, depth + 1, diags);
	}
}

/* OmegaConf.merge(dst, src) in place, consuming src: maps merge key by
 * key, anything else replaces; a key new to dst goes to the end. dst's
 * keys are hashed, so a merge costs the size of both maps. */
static int merge_maps(struct cfg_node *dst, struct cfg_node *src)
{
	struct cfg_keyidx x;
	int rc = 0;

	if (cfg_keyidx_build(&x, dst))
		return -1;
	for (size_t i = 0; i < src->n && !rc; i++) {
		struct cfg_node *s = src->kids[i];
		long at = cfg_keyidx_find(&x, dst, s->key);
		struct cfg_node *d = at >= 0 ? dst->kids[at] : NULL;

		src->kids[i] = NULL;
		if (d && d->kind == CFG_MAP && s->kind == CFG_MAP) {
			rc = merge_maps(d, s);
			cfg_free(s);
			continue;
		}
		if (cfg_keyidx_set(&x, dst, s->key, s))
			rc = -1;
	}
	cfg_keyidx_release(&x);
	return rc;
}

/* nemo_rl/utils/config.py merge_with_override(): for each top-level
 * section of src that is a map with a truthy `_override_`, pop the marker
 * and drop dst's section (so the section replaces, and moves to the end),
 * then OmegaConf.merge. */
static int merge_with_override(struct cfg_node *dst, struct cfg_node *src,
			       struct diag_list *diags)
{
	for (size_t i = 0; i < src->n; i++) {
		struct cfg_node *s = src->kids[i];
		const struct cfg_node *m;

		if (s->kind != CFG_MAP || !(m = cfg_get(s, "_override_")))
			continue;
		if (marker_truthy(m, diags)) {
			cfg_map_del(s, "_override_");
			cfg_map_del(dst, s->key);
		}
	}
	return merge_maps(dst, src);
}

int cfg_merge(struct cfg_node *dst, struct cfg_node *src)
{
	int rc = merge_maps(dst, src);

	cfg_free(src);
	return rc;
}

/* path (taken), lexically normalised ("a/b/../c" is "a/c") when that is
 * the same file, so that a parent reached from several folders has one
 * name in every output. */
static char *shown_path(char *path)
{
	char *norm = path ? src_path_normal(path) : NULL, *r1, *r2;

	if (!norm || !strcmp(norm, path)) {
		free(norm);
		return path;
	}
	r1 = realpath(path, NULL);
	r2 = realpath(norm, NULL);
	if (r1 && r2 && !strcmp(r1, r2)) {
		free(path);
		path = norm;
		norm = NULL;
	}
	free(r1);
	free(r2);
	free(norm);
	return path;
}

static char *join_path(const char *including, const char *rel)
{
	const char *slash = strrchr(including, '/');
	size_t dlen = slash ? (size_t)(slash - including) : 0;
	char *out;

	if (rel[0] == '/' || !slash)
		return strdup(rel);
	out = malloc(dlen + 1 + strlen(rel) + 1);
	if (!out)
		return NULL;
	memcpy(out, including, dlen);
	out[dlen] = '/';
	strcpy(out + dlen + 1, rel);
	return shown_path(out);
}

static void note_chain(struct diag *d, const struct chain *c)
{
	for (; c && c->at.src >= 0; c = c->up)
		diag_note(d, c->at, "'%s' is included from here", c->shown);
}

static int load_rec(struct loader *L, const char *path,
		    const struct chain *up, struct diag_loc at, int depth,
		    struct cfg_node **out);

/* A load limit was passed at `at`: said once, and loading stops. */
static void limit_hit(struct loader *L, struct diag_loc at,
		      const struct chain *up, const char *what,
		      unsigned long long limit)
{
	struct diag *d;

	if (L->limit_hit)
		return;
	L->limit_hit = 1;
	d = diag_add(L->diags, "GT103", at, "defaults", "the config and its "
		     "defaults: files pass the limit of %llu %s", limit, what);
	diag_hint(d, "a training config includes a few files; check the "
		  "defaults: entries for a file included over and over");
	note_chain(d, up);
}

static int load_parents(struct loader *L, const char *path,
			const struct chain *self, struct cfg_node *defaults,
			int depth, struct cfg_node *base, int *bad)
{
	struct cfg_node *one[1] = { defaults };
	struct cfg_node **items = one;
	size_t n = 1;

	if (defaults->kind == CFG_SEQ) {
		items = defaults->kids;
		n = defaults->n;
	} else if (defaults->kind != CFG_STR) {
		struct diag *d = diag_add(L->diags, "GT107", defaults->loc,
			"defaults", "'defaults' must be a path or a list of "
			"paths, not a %s", cfg_kind_name(defaults->kind));
		diag_hint(d, "write 'defaults: parent.yaml' or a list of "
			  "paths, merged in order (later wins)");
		return 1;
	}
	for (size_t i = 0; i < n && !L->limit_hit; i++) {
		const struct cfg_node *it = items[i];
		struct cfg_node *parent = NULL;
		char *ppath;
		int rc;

		if (it->kind == CFG_MAP || it->kind == CFG_SEQ ||
		    it->kind == CFG_NULL) {
			struct diag *d = diag_add(L->diags, "GT107", it->loc,
				"defaults", "a 'defaults' entry must be a path, "
				"not a %s", cfg_kind_name(it->kind));
			diag_hint(d, "NeMo-RL's defaults are file paths; "
				  "Hydra group entries ('- group: option') "
				  "are not supported");
			*bad = 1;
			continue;
		}
		if (++L->includes > CFG_MAX_INCLUDES) {
			limit_hit(L, it->loc, self, "defaults: entries",
				  CFG_MAX_INCLUDES);
			*bad = 1;
			break;
		}
		ppath = join_path(path, it->text);
		if (!ppath)
			return -1;
		rc = load_rec(L, ppath, self, it->loc, depth + 1, &parent);
		free(ppath);
		if (rc < 0 && !parent)
			return -1;
		if (rc)
			*bad = 1;
		if (parent && merge_with_override(base, parent, L->diags)) {
			cfg_free(parent);
			return -1;
		}
		cfg_free(parent);
	}
	return 0;
}

/* A copy of the file at `real` if it was loaded cleanly before: 1 (and
 * *out), 0 when it was not, -1 out of memory. */
static int reuse(struct loader *L, const char *real, struct diag_loc at,
		 const struct chain *up, struct cfg_node **out)
{
	for (size_t i = 0; i < L->n_done; i++) {
		size_t k;

		if (strcmp(L->done[i].real, real) != 0)
			continue;
		k = cfg_count(L->done[i].tree);
		if (L->copied + k > CFG_MAX_NODES) {
			limit_hit(L, at, up, "nodes copied by inclusion",
				  CFG_MAX_NODES);
			return 0;
		}
		L->copied += k;
		*out = cfg_clone(L->done[i].tree);
		return *out ? 1 : -1;
	}
	return 0;
}

/* Remembers a cleanly loaded file (a copy of tree). Returns 0 or -1. */
static int remember(struct loader *L, const char *real,
		    const struct cfg_node *tree)
{
	struct loaded *v;

	if (L->n_done == L->cap_done) {
		size_t cap = L->cap_done ? 2 * L->cap_done : 8;

		v = realloc(L->done, cap * sizeof(*v));
		if (!v)
			return -1;
		L->done = v;
		L->cap_done = cap;
	}
	v = &L->done[L->n_done];
	v->real = strdup(real);
	v->tree = cfg_clone(tree);
	if (!v->real || !v->tree) {
		free(v->real);
		cfg_free(v->tree);
		return -1;
	}
	L->n_done++;
	return 0;
}

/* realpath() failed for a parent: missing (GT105), or unreadable for
 * another reason, said in words (GT104). Returns 1. */
static int report_unreachable(struct loader *L, const char *path, int err,
			      struct diag_loc at, const struct chain *up)
{
	struct diag *d;

	if (err == ENOENT || err == ENOTDIR) {
		d = diag_add(L->diags, "GT105", at, "defaults",
			     "defaults: '%s' does not exist", path);
		diag_hint(d, "paths in defaults: are relative to the folder "
			  "of the file that names them");
	} else {
		d = diag_add(L->diags, "GT104", at, "defaults",
			     "defaults: cannot read '%s': %s", path,
			     err == ELOOP ? "a loop of symbolic links" :
			     strerror(err));
		diag_hint(d, "check the path and its permissions");
	}
	note_chain(d, up);
	return 1;
}

/* Reads and parses one file, counting its bytes against the limit.
 * Returns 0, or -1 (reported). */
static int read_one(struct loader *L, const char *path, struct diag_loc at,
		    const struct chain *up, struct cfg_node **root)
{
	size_t before = L->srcs->n;
	int rc = at.src < 0 ? cfg_parse_file(path, L->srcs, L->diags, root) :
		 cfg_parse_parent(path, L->srcs, L->diags, root);

	if (L->srcs->n > before)
		L->bytes += L->srcs->v[before].len;
	if (!rc && L->bytes > CFG_MAX_LOAD_BYTES) {
		limit_hit(L, at.src < 0 ? (struct diag_loc){ before, 1, 1 } :
			  at, up, "bytes read", CFG_MAX_LOAD_BYTES);
		cfg_free(*root);
		*root = NULL;
		return -1;
	}
	return rc;
}

/* Returns 0 ok, 1 findings (a partial tree is returned), -1 fatal. */
static int load_rec(struct loader *L, const char *path,
		    const struct chain *up, struct diag_loc at, int depth,
		    struct cfg_node **out)
{
	struct chain self = { path, NULL, up, at };
	struct cfg_node *root = NULL, *defaults, *base = NULL;
	int bad = 0, rc = 0;

	*out = NULL;
	if (depth > CFG_MAX_INCLUDE_DEPTH) {
		struct diag *d = diag_add(L->diags, "GT103", at, "defaults",
			"the defaults: chain is longer than %d files",
			CFG_MAX_INCLUDE_DEPTH);
		note_chain(d, up);
		return 1;
	}
	/* "-" is stdin (cfg_parse_file), a file no other can include */
	self.real = strcmp(path, "-") ? realpath(path, NULL) : strdup("-");
	if (!self.real) {
		if (at.src < 0)
			return read_one(L, path, at, up, out) ? -1 : 0;
		return report_unreachable(L, path, errno, at, up);
	}
	for (const struct chain *c = up; c; c = c->up) {
		if (strcmp(c->real, self.real) == 0) {
			struct diag *d = diag_add(L->diags, "GT106", at,
				"defaults", "defaults: cycle: '%s' includes "
				"itself", path);
			diag_hint(d, "remove one defaults: entry of the cycle");
			note_chain(d, up);
			free(self.real);
			return 1;
		}
	}
	rc = reuse(L, self.real, at, up, out);
	if (rc || L->limit_hit) {
		free(self.real);
		return rc < 0 ? -1 : L->limit_hit ? 1 : 0;
	}
	if (read_one(L, path, at, up, &root)) {
		free(self.real);
		return at.src < 0 ? -1 : 1;
	}
	warn_nested_markers(root, 0, L->diags);
	defaults = cfg_get(root, "defaults");
	if (!defaults)
		goto done;
	base = cfg_new(CFG_MAP, root->loc);
	if (!base) {
		rc = -1;
		goto done;
	}
	rc = load_parents(L, path, &self, defaults, depth, base, &bad);
	cfg_map_del(root, "defaults");
	if (rc)
		goto done;
	if (merge_with_override(base, root, L->diags)) {
		rc = -1;
		goto done;
	}
	cfg_free(root);
	root = base;
	base = NULL;
done:
	cfg_free(base);
	if (!rc && !bad && at.src >= 0 && remember(L, self.real, root))
		rc = -1;
	free(self.real);
	if (rc < 0) {
		cfg_free(root);
		return -1;
	}
	*out = root;
	return rc || bad ? 1 : 0;
}

int cfg_load(const char *path, struct src_set *srcs, struct diag_list *diags,
	     struct cfg_node **out)
{
	struct loader L = { .srcs = srcs, .diags = diags };
	int rc = load_rec(&L, path, NULL, DIAG_NOLOC, 0, out);

	for (size_t i = 0; i < L.n_done; i++) {
		free(L.done[i].real);
		cfg_free(L.done[i].tree);
	}
	free(L.done);
	if (rc >= 0 && *out)
		return 0; /* findings reported; the tree is still usable */
	return -1;
}
