/*
 * cfg_override: command-line overrides, applied as NeMo-RL's
 * parse_hydra_overrides() applies them (nemo_rl/utils/config.py): the config
 * is put in struct mode, Hydra's OverridesParser reads each override, and
 * ConfigLoaderImpl._apply_overrides_to_config() applies them in order:
 *
 *   key=v    changes a key that exists (struct mode: a missing key, or one
 *            below a scalar, is an error); a {map} merges into a map, where
 *            new keys are errors too; a [list] replaces a list
 *   +key=v   adds a key, creating the sections on the way (a scalar in the
 *            way becomes a map); an error when the key exists and is not
 *            null, unless v is a map or list, which then merges
 *   ++key=v  adds or changes, merging maps without the struct check
 *   ~key     deletes a key; an error when it is missing or null
 *   ~key=v   deletes it only if its value equals v (1 == 1.0 == true)
 *
 * Values follow Hydra's override grammar (OverrideLexer/Parser.g4): ints,
 * floats, true/false and null in any case, 'quoted' and "quoted" strings,
 * [lists], {dicts}, and unquoted strings that may hold `${...}`; those stay
 * interpolations for cfg_resolve(), which NeMo-RL also runs afterwards.
 *
 * Deliberate differences from Hydra: sweeps (a,b), functions (choice(...),
 * int(...)), config groups (a/b) and packages (key@pkg) are reported as
 * malformed (NeMo-RL has no use for them; Hydra either rejects them there or
 * would add a key literally named "a/b"); ~key=v does not compare against a
 * value that is still an interpolation; deleting through an interpolated
 * section is reported as a missing key.
 *
 * The grammar of keys and values is in cfg_override_parse.c.
 */
#include "cfg_override_int.h"
#include "cfg_interp_lex_int.h"
#include "cfg_interp_pyops_int.h"

#include <stdlib.h>
#include <string.h>

enum op { OP_CHANGE, OP_ADD, OP_FORCE, OP_DEL };

struct diag_loc override_loc(const struct octx *o, const char *p)
{
	struct diag_loc at = { o->src, 1, (int)o->col0 };

	for (const char *q = o->arg; q < p; q++)
		if (((unsigned char)*q & 0xc0) != 0x80)
			at.col++;
	return at;
}

struct diag *override_error(struct octx *o, const char *code,
			    struct diag_loc at, const char *path,
			    const char *fmt, ...)
{
	struct diag *d;
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = diag_vfmt(fmt, ap);
	va_end(ap);
	d = diag_add(o->diags, code, at, path, "%s",
		     msg ? msg : "out of memory");
	free(msg);
	o->failed = 1;
	return d;
}

/* ---- applying ------------------------------------------------------------ */

/* parent[part] (a map key or a list index); NULL when absent. */
static struct cfg_node *child(const struct cfg_node *parent, const char *part,
			      size_t *idx)
{
	if (parent->kind == CFG_MAP)
		return cfg_get(parent, part);
	if (parent->kind == CFG_SEQ && part[0] >= '0' && part[0] <= '9') {
		char *end;
		unsigned long i = strtoul(part, &end, 10);

		if (!*end && i < parent->n) {
			*idx = i;
			return parent->kids[i];
		}
	}
	return NULL;
}

static int is_container(const struct cfg_node *n)
{
	return n && (n->kind == CFG_MAP || n->kind == CFG_SEQ);
}

/* OmegaConf's merge of src into dst (both containers), consuming src's
 * entries: maps merge key by key, anything else replaces. In struct mode a
 * key dst does not have is an error. */
static int merge(struct octx *o, struct cfg_node *dst, struct cfg_node *src,
		 const char *path, int strict)
{
	if (dst->kind != src->kind) {
		struct diag *d = override_error(o, "GT120", o->val, path,
						"override '%s' merges a %s "
						"into the %s '%s'", o->arg,
						cfg_kind_name(src->kind),
						cfg_kind_name(dst->kind), path);

		diag_hint(d, "delete it first (~%s) and add it again (+%s=...)",
			  path, path);
		return -1;
	}
	if (dst->kind == CFG_SEQ) { /* a list replaces the list */
		for (size_t i = 0; i < dst->n; i++)
			cfg_free(dst->kids[i]);
		free(dst->kids);
		dst->kids = src->kids;
		dst->n = src->n;
		dst->cap = src->cap;
		src->kids = NULL;
		src->n = src->cap = 0;
		dst->loc = src->loc;
		return 0;
	}
	for (size_t i = 0; i < src->n; i++) {
		struct cfg_node *s = src->kids[i], *d = cfg_get(dst, s->key);
		char *sub = diag_fmt("%s.%s", path, s->key);
		int rc = 0;

		if (!sub)
			return -1;
		if (!d && strict) {
			struct diag *e = override_error(o, "GT121", o->val, sub,
							"override '%s' adds "
							"'%s', which is not in "
							"the config", o->arg,
							sub);
			const char *close = cfg_closest_key(dst, s->key);

			if (close)
				diag_hint(e, "did you mean '%s.%s'? (++%s adds "
					  "new keys)", path, close,
					  o->arg[0] == '+' ? o->arg + 1 : o->arg);
			else
				diag_hint(e, "use ++%s to add new keys",
					  o->arg[0] == '+' ? o->arg + 1 : o->arg);
			rc = -1;
		} else if (is_container(d) && is_container(s)) {
			rc = merge(o, d, s, sub, strict);
		} else {
			src->kids[i] = NULL;
			rc = cfg_map_set(dst, s->key, s);
		}
		free(sub);
		if (rc)
			return -1;
	}
	return 0;
}

/* Puts val at parent[part] (slot idx for a list), merging into an existing
 * map or list. Takes ownership of val. */
static int put(struct octx *o, struct cfg_node *parent, const char *part,
	       size_t idx, struct cfg_node *val, const char *path, int strict)
{
	struct cfg_node *old = parent->kind == CFG_SEQ ? parent->kids[idx]
			       : cfg_get(parent, part);
	int rc;

	if (is_container(old) && is_container(val)) {
		rc = merge(o, old, val, path, strict);
		cfg_free(val);
		return rc;
	}
	if (parent->kind == CFG_SEQ) {
		cfg_free(parent->kids[idx]);
		parent->kids[idx] = val;
		return 0;
	}
	return cfg_map_set(parent, part, val);
}

static void missing(struct octx *o, const struct key *k, size_t i,
		    const struct cfg_node *parent, const char *code,
		    const char *fmt)
{
	char *path = override_key_path(k, i + 1);
	char *sec = override_key_path(k, i);
	const char *close = cfg_closest_key(parent, k->part[i]);
	struct diag *d;

	d = override_error(o, code, o->key, path, fmt, o->arg,
			   path ? path : "");
	if (close && strcmp(code, "GT121") == 0)
		diag_hint(d, "did you mean '%s%s%s'? (or +%s to add a new key)",
			  sec && *sec ? sec : "", sec && *sec ? "." : "",
			  close, o->arg);
	else if (close)
		diag_hint(d, "did you mean '%s%s%s'?", sec && *sec ? sec : "",
			  sec && *sec ? "." : "", close);
	else if (parent->kind == CFG_SEQ)
		diag_hint(d, "the list has %zu items; an override can change "
			  "one, not add one", parent->n);
	else if (strcmp(code, "GT121") == 0)
		diag_hint(d, "+%s adds it; check the spelling if it should "
			  "already be there", o->arg);
	else
		diag_hint(d, "there is nothing to delete; `gtplan config "
			  "CONFIG` prints the keys the config has");
	free(path);
	free(sec);
}

/* Walks to the parent of k's last part, creating sections for + and ++
 * (replacing a scalar). Returns 0 with *parent set, 1 after reporting,
 * -1 when out of memory. */
static int walk(struct octx *o, struct cfg_node *root, enum op op,
		const struct key *k, const char *path,
		struct cfg_node **parent)
{
	size_t idx = 0, last = k->n - 1;

	*parent = root;
	for (size_t i = 0; i < last; i++) {
		struct cfg_node *next = child(*parent, k->part[i], &idx);

		if (is_container(next)) {
			*parent = next;
			continue;
		}
		if (next && (op == OP_CHANGE || op == OP_DEL)) {
			char *sec = override_key_path(k, i + 1);

			override_error(o, op == OP_DEL ? "GT123" : "GT121",
				       o->key, path, "override '%s' %s '%s', "
				       "but '%s' is %s %s, not a map", o->arg,
				       op == OP_DEL ? "deletes" : "changes",
				       path, sec ? sec : "",
				       next->kind == CFG_INT ? "an" : "a",
				       cfg_kind_name(next->kind));
			free(sec);
			return 1;
		}
		if (op == OP_CHANGE || op == OP_DEL ||
		    (*parent)->kind != CFG_MAP) {
			missing(o, k, next ? i + 1 : i, next ? next : *parent,
				op == OP_DEL ? "GT123" : "GT121",
				op == OP_DEL ? "override '%s' deletes '%s', which "
					       "does not exist"
					     : "override '%s' changes '%s', which "
					       "is not in the config");
			return 1;
		}
		/* + and ++ create the section (replacing a scalar) */
		next = cfg_new(CFG_MAP, override_loc(o, k->at[i]));
		if (!next || cfg_map_set(*parent, k->part[i], next))
			return -1;
		*parent = next;
	}
	return 0;
}

/* ~key (or ~key=value) on an existing `old`: Hydra deletes a key that is
 * not null (and equals value when one is given), never a list item. */
static void delete_key(struct octx *o, struct cfg_node *parent,
		       const char *name, const struct cfg_node *old,
		       const struct cfg_node *val, const char *path)
{
	struct diag *d;

	if (old->kind == CFG_NULL) {
		d = override_error(o, "GT123", o->key, path, "override "
				   "'%s' deletes '%s', which is null "
				   "(Hydra treats it as missing)",
				   o->arg, path);
		diag_hint(d, "drop the override: a null key is as good "
			  "as absent");
	} else if (val && val->kind != CFG_NULL && !old->interp &&
		   !py_equal(val, old)) {
		d = override_error(o, "GT123", o->val, path, "override "
				   "'%s' deletes '%s' only if it is "
				   "'%s', but it is %s", o->arg, path,
				   strchr(o->arg, '=') + 1,
				   old->text ? old->text
				   : cfg_kind_name(old->kind));
		diag_hint(d, "write ~%s without a value to delete it "
			  "whatever it is", path);
	} else if (parent->kind == CFG_SEQ) {
		d = override_error(o, "GT123", o->key, path, "override "
				   "'%s' deletes a list item; Hydra "
				   "can only delete keys", o->arg);
		diag_hint(d, "set the whole list instead: %.*s=[...]",
			  (int)(strrchr(path, '.') ? strrchr(path, '.') -
				path : (long)strlen(path)), path);
	} else {
		cfg_map_del(parent, name);
	}
}

static void apply(struct octx *o, struct cfg_node *root, enum op op,
		  const struct key *k, struct cfg_node *val)
{
	struct cfg_node *parent = root, *old;
	char *path = override_key_path(k, k->n);
	size_t idx = 0, last = k->n - 1;
	struct diag *d;

	switch (walk(o, root, op, k, path, &parent)) {
	case 0: break;
	case 1: goto out;
	default: goto oom;
	}
	old = child(parent, k->part[last], &idx);
	if (!old && (op == OP_CHANGE || op == OP_DEL || parent->kind == CFG_SEQ)) {
		missing(o, k, last, parent, op == OP_DEL ? "GT123" : "GT121",
			op == OP_DEL ? "override '%s' deletes '%s', which does "
				       "not exist"
			: parent->kind == CFG_SEQ
			? "override '%s' sets '%s', which is not an item of "
			  "the list"
			: "override '%s' changes '%s', which is not in the "
			  "config");
		goto out;
	}
	switch (op) {
	case OP_DEL:
		delete_key(o, parent, k->part[last], old, val, path);
		goto out;
	case OP_ADD:
		if (old && old->kind != CFG_NULL && !is_container(val)) {
			d = override_error(o, "GT122", o->key, path, "override "
					   "'%s' adds '%s', which already "
					   "exists", o->arg, path);
			diag_hint(d, "drop the '+' to change it (%s), or use "
				  "++ to add or change", o->arg + 1);
			goto out;
		}
		break;
	default:
		break;
	}
	val->key_loc = o->key;
	if (put(o, parent, k->part[last], idx, val, path ? path : "",
		op == OP_CHANGE) && !o->failed)
		goto oom;
	val = NULL;
	goto out;
oom:
	override_error(o, "GT103", o->key, path, "out of memory");
out:
	cfg_free(val);
	free(path);
}

/* One override: [~|+|++]key[=value]. */
static void override_one(struct octx *o, struct cfg_node *root)
{
	const char *s = o->arg, *eq, *v;
	enum op op = OP_CHANGE;
	struct cfg_node *val = NULL;
	struct key k;

	if (s[0] == '~')
		op = OP_DEL, s++;
	else if (s[0] == '+' && s[1] == '+')
		op = OP_FORCE, s += 2;
	else if (s[0] == '+')
		op = OP_ADD, s++;
	eq = strchr(s, '=');
	if (!eq && op != OP_DEL) {
		struct diag *d = override_error(o, "GT120",
						override_loc(o, o->arg), NULL,
						"override '%s' has no '='",
						o->arg);

		diag_hint(d, "write key=value to change a key, +key=value to "
			  "add one, ~key to delete one");
		return;
	}
	o->key = override_loc(o, s);
	if (override_parse_key(o, s, eq ? (size_t)(eq - s) : strlen(s), &k))
		goto out;
	if (eq) {
		v = past_ws(eq + 1);
		o->val = override_loc(o, v);
		if (!(val = override_parse_value(o, v)))
			goto out;
	}
	apply(o, root, op, &k, val);
	val = NULL;
out:
	cfg_free(val);
	override_key_release(&k);
}

int cfg_override(struct cfg_node *root, int argc, char *const argv[],
		 struct src_set *srcs, struct diag_list *diags)
{
	struct octx o = { diags, -1, NULL, 1, DIAG_NOLOC, DIAG_NOLOC, 0 };
	size_t len = 0;
	char *line;
	int any = 0;

	if (argc <= 0)
		return 0;
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (!(line = malloc(len)))
		return -1;
	len = 0;
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		if (i)
			line[len++] = ' ';
		memcpy(line + len, argv[i], n);
		for (size_t j = len; j < len + n; j++)
			if (line[j] == '\n' || line[j] == '\r')
				line[j] = ' '; /* keep it one line */
		len += n;
	}
	line[len] = '\0';
	if ((o.src = src_add(srcs, SRC_CMDLINE, line, len)) < 0)
		return -1;
	for (int i = 0; i < argc; i++) {
		o.arg = argv[i];
		o.failed = 0;
		override_one(&o, root);
		any |= o.failed;
		o.col0 += 1; /* the joining space */
		for (const char *p = argv[i]; *p; p++)
			if (((unsigned char)*p & 0xc0) != 0x80)
				o.col0++;
	}
	return any ? -1 : 0;
}
