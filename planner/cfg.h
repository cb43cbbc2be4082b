/*
 * cfg: the config tree, loaded the way NeMo-RL loads its YAML.
 *
 * A config is a tree of `struct cfg_node`s. Every node remembers where its
 * value was written (file:line:col) and, for map entries, where its key was,
 * so any later pass can point a diagnostic at the exact place, even when the
 * value came from a parent file through `defaults:` or from a command-line
 * override.
 *
 * Loading follows NeMo-RL's `load_config_with_inheritance` + Hydra overrides +
 * OmegaConf resolution:
 *   cfg_load()      YAML (libyaml) + `defaults:` inheritance + `_override_`
 *   cfg_override()  `key=value`, `+key=value`, `~key` from the command line
 *   cfg_resolve()   `${a.b}`, `${.rel}`, `${..rel}`, `${add|mul|div|max:x,y}`,
 *                   `${oc.env:VAR[,default]}`
 *
 * Ownership: a node owns its key, its text and its children. cfg_free() frees
 * a whole subtree. Lookups return borrowed pointers into the tree.
 * Errors are reported into a diag_list and returned as -1; nothing exits.
 */
#ifndef GTPLAN_CFG_H
#define GTPLAN_CFG_H

#include <stddef.h>
#include <stdio.h>

#include "diag.h"

enum cfg_kind {
	CFG_NULL,
	CFG_BOOL,
	CFG_INT,
	CFG_FLOAT,
	CFG_STR,
	CFG_MAP,
	CFG_SEQ,
};

struct cfg_node {
	enum cfg_kind kind;
	struct diag_loc loc;     /* where the value starts */
	struct diag_loc key_loc; /* where the key is (map entries); else = loc */
	char *key;               /* map entries only; NULL otherwise */
	char *text;              /* scalars: the text as written (CFG_STR: the
				    string value); NULL for maps and sequences */
	union {
		int b;
		long long i;
		double f;
	} v;
	/* A scalar string holding `${...}` that cfg_resolve() has not replaced
	 * yet (or could not). */
	unsigned interp : 1;
	/* Set on nodes produced by resolution: `origin` is where the value
	 * that the interpolation pointed at was written. */
	unsigned resolved : 1;
	struct diag_loc origin;
	struct cfg_node **kids;  /* map entries (in order) / sequence items */
	size_t n, cap;
};

/* ---- hostile-input limits (each has a test) ------------------------- */
#define CFG_MAX_FILE_BYTES   (16u << 20) /* one YAML file */
#define CFG_MAX_DEPTH        64          /* nesting of maps and sequences */
#define CFG_MAX_NODES        2000000     /* nodes in one loaded file, aliases
					    expanded */
#define CFG_MAX_ALIAS_EXPAND 100000      /* nodes copied through aliases */
#define CFG_MAX_INCLUDE_DEPTH 32         /* `defaults:` chain length */
#define CFG_MAX_INCLUDES     1000        /* `defaults:` entries followed in
					    one load (a file included again
					    is read once and copied) */
#define CFG_MAX_LOAD_BYTES   (64u << 20) /* bytes of all files one load
					    reads */
#define CFG_MAX_INTERP_DEPTH 64          /* nested `${...}` resolution */
#define CFG_MAX_INTERP_TEXT  (1u << 20)  /* one string built by resolution */
#define CFG_MAX_INTERP_TOTAL (64u << 20) /* bytes of all the strings that
					    resolution builds or copies */

/* ---- tree ----------------------------------------------------------- */

/* A fresh node of `kind` at `loc` (key_loc = loc); NULL when out of memory. */
struct cfg_node *cfg_new(enum cfg_kind kind, struct diag_loc loc);
/* A scalar string node; takes a copy of `s`. */
struct cfg_node *cfg_new_str(const char *s, struct diag_loc loc);
void cfg_free(struct cfg_node *n);
/* Nodes in the subtree at n (n included). */
size_t cfg_count(const struct cfg_node *n);
/* Deep copy, marks included; NULL when out of memory. */
struct cfg_node *cfg_clone(const struct cfg_node *n);

/* Appends `kid` to a map (kid->key must be set) or a sequence; takes
 * ownership. Returns 0, or -1 when out of memory (kid is freed). */
int cfg_append(struct cfg_node *parent, struct cfg_node *kid);
/* Sets map[key] = val, replacing (and freeing) an existing entry in place;
 * takes ownership of val and sets val->key. Returns 0 or -1 (val freed). */
int cfg_map_set(struct cfg_node *map, const char *key, struct cfg_node *val);
/* Removes and frees map[key]; returns 1 if it was there, else 0. */
int cfg_map_del(struct cfg_node *map, const char *key);

/* A hash index of a map's keys, for maps too big to search key by key
 * (duplicate keys, merges). It holds positions in map->kids; the map must
 * not lose or reorder entries while the index is used (replacing an entry
 * in place and appending through cfg_keyidx_add are fine). */
struct cfg_keyidx {
	size_t *slot; /* position + 1; 0 is empty */
	size_t cap, n;
};

/* Indexes every key of map (an empty index for anything else). Returns 0
 * or -1 (out of memory). */
int cfg_keyidx_build(struct cfg_keyidx *x, const struct cfg_node *map);
/* The position of key in map, or -1. */
long cfg_keyidx_find(const struct cfg_keyidx *x, const struct cfg_node *map,
		     const char *key);
/* Indexes map->kids[pos] (a key not indexed yet). Returns 0 or -1. */
int cfg_keyidx_add(struct cfg_keyidx *x, const struct cfg_node *map,
		   size_t pos);
void cfg_keyidx_release(struct cfg_keyidx *x);
/* map[key] = val through the index: replaces in place or appends (and
 * indexes); takes ownership of val. Returns 0 or -1 (val freed). */
int cfg_keyidx_set(struct cfg_keyidx *x, struct cfg_node *map,
		   const char *key, struct cfg_node *val);

/* map[key], or NULL (also when `map` is NULL or not a map). */
struct cfg_node *cfg_get(const struct cfg_node *map, const char *key);
/* Dotted lookup from the root: "policy.megatron_cfg.tensor_model_parallel_size".
 * Sequence items may be addressed by index ("a.b.0.c"). NULL when absent. */
struct cfg_node *cfg_path(const struct cfg_node *root, const char *dotted);
/* Where `dotted` is set in the config, for a diagnostic: the node's
 * position, or DIAG_NOLOC when absent (or when dotted is NULL). */
struct diag_loc cfg_loc(const struct cfg_node *root, const char *dotted);
/* Where `dotted` is set; when it is absent, the key of its nearest set
 * ancestor ("a.b" for a missing "a.b.c"), so that a finding about a
 * missing value points where it belongs. DIAG_NOLOC when none is set. */
struct diag_loc cfg_loc_near(const struct cfg_node *root, const char *dotted);
/* Python's truthiness of a value (None, False, 0, "" and empty containers
 * are false); `dflt` when n is NULL (absent). */
int cfg_truthy(const struct cfg_node *n, int dflt);
/* The first of `paths` (NULL-terminated, at least one) that the config
 * sets, else the last: the key a finding about them points at. */
const char *cfg_first_set(const struct cfg_node *root,
			  const char *const *paths);

/* Typed reads. Each returns 1 and sets *out when the node exists and has
 * that type (an integral float does not count as an int), 0 when it is absent
 * or null, -1 when it exists with another type. */
int cfg_int(const struct cfg_node *root, const char *dotted, long long *out);
int cfg_bool(const struct cfg_node *root, const char *dotted, int *out);
int cfg_str(const struct cfg_node *root, const char *dotted, const char **out);
/* A number: an int or a float, as a double. */
int cfg_num(const struct cfg_node *root, const char *dotted, double *out);

/* Human name of a kind ("integer", "map", ...). */
const char *cfg_kind_name(enum cfg_kind k);

/* Resolves a plain (unquoted) YAML scalar as OmegaConf's loader does:
 * PyYAML's SafeLoader implicit types (YAML 1.1: null/~, true/false/yes/no/
 * on/off in three cases, ints in decimal, 0b, 0x, 0-prefixed octal, with _)
 * plus OmegaConf's float resolver (1e-5, 1e5, .inf, .nan); else a string.
 * Fills kind and v. */
void cfg_scalar_type(struct cfg_node *n, const char *text);

/* ---- loading -------------------------------------------------------- */

/* Parses one YAML file (no `defaults:` processing) into *out (a map, or NULL
 * for an empty file); path "-" reads stdin (cfg_load too: its parents are
 * then relative to the current folder). Reports syntax errors, duplicate
 * keys (both places), alias cycles and expansion limits; a directory, a
 * loop of symbolic links and a file over CFG_MAX_FILE_BYTES (with its real
 * size) are GT104/GT103. The file may be a pipe (`<(...)`), read up to the
 * size limit, as is stdin. Returns 0 or -1. */
int cfg_parse_file(const char *path, struct src_set *srcs,
		   struct diag_list *diags, struct cfg_node **out);
/* The same for a `defaults:` parent, which must be a regular file: a FIFO,
 * device or socket is refused (GT104) without waiting on it. */
int cfg_parse_parent(const char *path, struct src_set *srcs,
		     struct diag_list *diags, struct cfg_node **out);
/* The same for an in-memory text registered under `name`. Takes ownership of
 * `text`. */
int cfg_parse_text(const char *name, char *text, size_t len,
		   struct src_set *srcs, struct diag_list *diags,
		   struct cfg_node **out);

/* Loads `path` with NeMo-RL's `defaults:` inheritance: a path or a list of
 * paths, relative to the including file's folder, loaded depth-first, merged
 * in order (later wins) and then the file itself merged on top; maps merge,
 * other values replace; a map carrying `_override_: true` replaces the
 * inherited map instead of merging. Include cycles and missing files are
 * errors naming the chain. Returns 0 or -1; *out is a map. */
int cfg_load(const char *path, struct src_set *srcs, struct diag_list *diags,
	     struct cfg_node **out);

/* OmegaConf.merge of `src` into `dst` (both maps), consuming `src`. */
int cfg_merge(struct cfg_node *dst, struct cfg_node *src);

/* Applies Hydra overrides in order, as NeMo-RL's parse_hydra_overrides()
 * does on its struct-mode config: `a.b=v` changes an existing key, `+a.b=v`
 * adds one (creating sections), `++a.b=v` adds or changes, `~a.b` deletes,
 * `~a.b=v` deletes if equal. Values follow Hydra's grammar; `${...}` stays
 * for cfg_resolve(). Registers one source, SRC_CMDLINE (argv joined by
 * spaces; none when argc is 0); each finding points at its override's key
 * or value there, and new or changed nodes are located there. Every
 * override is tried; returns 0, or -1 when any was refused. */
int cfg_override(struct cfg_node *root, int argc, char *const argv[],
		 struct src_set *srcs, struct diag_list *diags);

/* Resolves every interpolation in the tree in place, as
 * OmegaConf.to_container(resolve=True) would with NeMo-RL's resolvers (add,
 * sub, mul, div, max) and oc.env. A value that is one `${...}` takes the
 * referenced node's type and a copy of its structure; the node keeps its
 * key and locations, gets resolved = 1 and origin = where the value was
 * written. Unresolvable references and cycles are errors naming the chain,
 * and such nodes keep their text (interp = 1); `${oc.env:X}` with X unset
 * and no default is left as it is with a note (GT113), as is anything that
 * depends on it. Returns 0, or -1 when an error was reported. */
int cfg_resolve(struct cfg_node *root, struct src_set *srcs,
		struct diag_list *diags);

/* ---- shared by cfg_interp.c and cfg_override.c ---------------------- */

/* OmegaConf's interpolation grammar and Hydra's override grammar lex values
 * with the same word rules: FLOAT, INT, BOOL, NULL and ID (letters, digits,
 * '_' and '-', not starting with a digit or '-'). */
enum cfg_word { CFG_WORD_NONE, CFG_WORD_FLOAT, CFG_WORD_INT, CFG_WORD_BOOL,
		CFG_WORD_NULL, CFG_WORD_ID };

/* Length of the longest such word at `s` (ANTLR's rule: the longest match
 * wins, ties go to the order above), and its kind in *w; 0 and
 * CFG_WORD_NONE when none starts there. */
size_t cfg_lex_word(const char *s, enum cfg_word *w);
/* Makes `n` the typed scalar that the word s[0..len) of kind w stands for,
 * as Python's int()/float() would read it (`1_000`, `-inf`, `TRUE`). An ID
 * becomes a string. Returns 0, or -1 when an integer does not fit in 64
 * bits or memory runs out. */
int cfg_word_value(struct cfg_node *n, enum cfg_word w, const char *s,
		   size_t len);
/* The key of `map` that `key` is likely a typo of (lev_suggest), or NULL.
 * Borrowed. */
const char *cfg_closest_key(const struct cfg_node *map, const char *key);

/* Writes the tree as JSON (sorted keys? no: document order, like OmegaConf)
 * to `f`, for `gtplan config`. Returns 0 or -1. */
int cfg_write_json(FILE *f, const struct cfg_node *root);

#endif
