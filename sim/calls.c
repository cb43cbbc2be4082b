/*
 * calls: the driver's call table (docs/calls.md §2) as one static table,
 * and the `gtplan.calls` rows a config adds or overrides, validated the way
 * NeMo-RL's run_all_workers_sharded_data validates its arguments (unknown
 * axis, axis both sharded and replicated) and beyond it (output and
 * rank-0-only axes it never checks, malformed entries).
 */
#include "calls.h"

#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "levenshtein.h"

#define B(a) AX_BIT(AX_##a)
#define CTP_PP (B(CP) | B(TP) | B(PP))
#define NOLOC_INIT { -1, 0, 0 }

/* A built-in row. `gtp_too`: in the GTP PR's 5-D layout the call also
 * shards gtp_weight_remat, after data_parallel (sft_v2_train). */
struct builtin {
	struct call_def def;
	int gtp_too;
};

#define SHARDED(nm, rep, out, prog, train, gtp)                              \
	{ { .name = nm, .dispatch = CALL_SHARDED, .sharded = { AX_DP },      \
	    .n_sharded = 1, .replicated = (rep), .output = (out),           \
	    .program = (prog), .moves_data = 1, .uses_train_batch = (train), \
	    .loc = NOLOC_INIT }, (gtp) }
#define EVERY(nm, disp, prog)                                                \
	{ { .name = nm, .dispatch = (disp), .program = (prog),               \
	    .loc = NOLOC_INIT }, 0 }

/* The policy call table of docs/calls.md §2, in its order. */
static const struct builtin builtins[] = {
	SHARDED("train", CTP_PP, CTP_PP, PROG_TRAIN, 1, 0),
	SHARDED("get_logprobs", CTP_PP, CTP_PP, PROG_FORWARD, 0, 0),
	SHARDED("get_reference_policy_logprobs", CTP_PP, CTP_PP,
		PROG_FORWARD, 0, 0),
	SHARDED("get_topk_logits", CTP_PP, CTP_PP, PROG_FORWARD, 0, 0),
	SHARDED("get_full_logits_ipc", CTP_PP, B(PP), PROG_FORWARD, 0, 0),
	SHARDED("score", CTP_PP, CTP_PP, PROG_FORWARD, 0, 0),
	/* megatron backend: context_parallel is free */
	SHARDED("generate", B(TP) | B(PP), B(TP) | B(PP), PROG_FORWARD, 0, 0),
	SHARDED("calibrate_qkv_fp8_scales", CTP_PP, CTP_PP, PROG_FORWARD, 0,
		0),
	SHARDED("sft_v2_train", CTP_PP, CTP_PP, PROG_TRAIN, 1, 1),
	EVERY("prepare_refit_info", CALL_SINGLE, PROG_NONE),
	EVERY("stream_weights_via_ipc", CALL_SINGLE, PROG_REFIT_IPC),
	EVERY("broadcast_weights_for_collective", CALL_SINGLE,
	      PROG_REFIT_BROADCAST),
	EVERY("nccl_reshard_refit", CALL_SINGLE, PROG_REFIT_RESHARD),
	EVERY("save_checkpoint", CALL_SINGLE, PROG_SAVE),
	EVERY("load_checkpoint", CALL_SINGLE, PROG_LOAD),
	EVERY("offload_before_refit", CALL_SINGLE, PROG_NONE),
	EVERY("offload_after_refit", CALL_SINGLE, PROG_NONE),
	EVERY("prepare_for_training", CALL_SINGLE, PROG_NONE),
	EVERY("init_nccl_reshard_comm_group", CALL_MULTIPLE, PROG_GROUP_INIT),
};

#define N_BUILTIN (sizeof(builtins) / sizeof(*builtins))

size_t calls_builtin_count(void)
{
	return N_BUILTIN;
}

const struct call_def *calls_builtin_at(size_t i)
{
	return i < N_BUILTIN ? &builtins[i].def : NULL;
}

/* Built-in row i as the given layout sees it. */
static void builtin_row(size_t i, int five_d, struct call_def *out)
{
	*out = builtins[i].def;
	if (five_d && builtins[i].gtp_too)
		out->sharded[out->n_sharded++] = AX_GTP;
}

static const char *const dispatch_names[] = {
	[CALL_SHARDED] = "sharded",
	[CALL_SINGLE] = "single",
	[CALL_MULTIPLE] = "multiple",
};

static const char *const program_names[PROG_COUNT] = {
	[PROG_NONE] = "none",
	[PROG_TRAIN] = "train",
	[PROG_FORWARD] = "forward",
	[PROG_REFIT_IPC] = "refit_ipc",
	[PROG_REFIT_BROADCAST] = "refit_broadcast",
	[PROG_REFIT_RESHARD] = "refit_reshard",
	[PROG_SAVE] = "save",
	[PROG_LOAD] = "load",
	[PROG_GROUP_INIT] = "group_init",
};

const char *calls_program_name(enum call_program p)
{
	return (unsigned)p < PROG_COUNT ? program_names[p] : "?";
}

const char *calls_dispatch_name(enum call_dispatch d)
{
	return (unsigned)d <= CALL_MULTIPLE ? dispatch_names[d] : "?";
}

const struct call_def *calls_find(const struct call_def *v, size_t n,
				  const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

/* ---- gtplan.calls ----------------------------------------------------- */

/* One entry being read. */
struct entry {
	const struct set_call *e;
	char path[48];      /* "gtplan.calls.3" */
	const char *name;
	int five_d;
	int errors;
	struct diag_list *diags;
};

/* The axes of one list field, as given. */
struct axes {
	int given;
	int n;                               /* known, distinct axes */
	enum drv_axis ax[AX_N];
	const struct set_value *item[AX_N];
	unsigned mask;
};

static void sub_path(const struct entry *x, const char *key, char *buf,
		     size_t len)
{
	snprintf(buf, len, "%s.%s", x->path, key);
}

/* "an integer", "a list", ...: a value's kind in a finding. */
static const char *article(const struct set_value *v)
{
	return v->kind == CFG_INT ? "an" : "a";
}

/* "pipeline_parallel, data_parallel, ..." for the layout. */
static const char *axis_list(int five_d, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int a = 0; a < AX_N && used < len; a++)
		if (a != AX_GTP || five_d)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? ", " : "",
						 drv_axis_name((enum drv_axis)a));
	return buf;
}

/* " did you mean 'x'?" or "". */
static const char *did_you_mean(const char *typed, const char *const *cands,
				size_t n, char *buf, size_t len)
{
	long i = lev_suggest(typed, cands, n, NULL);

	buf[0] = '\0';
	if (i >= 0)
		snprintf(buf, len, "did you mean '%s'? ", cands[i]);
	return buf;
}

static void bad_type(struct entry *x, const struct set_value *v,
		     const char *key, const char *want, const char *example)
{
	char path[96];
	struct diag *d;

	sub_path(x, key, path, sizeof(path));
	d = diag_add(x->diags, "GT520", v->loc, path,
		     "call '%s': %s is %s %s, not %s", x->name, key,
		     article(v), v->kind_name, want);
	diag_hint(d, "write it as %s", example);
	x->errors++;
}

/* An enum-valued string field. Returns 1 and sets *out, 0 when absent,
 * -1 on an error (reported). */
static int read_enum(struct entry *x, const char *key,
		     const struct set_value *v, const char *const *names,
		     size_t n, const char *example, int *out)
{
	char path[96], dym[96], all[160];
	size_t used = 0;
	struct diag *d;

	if (!v->given)
		return 0;
	if (v->kind != CFG_STR) {
		bad_type(x, v, key, "a string", example);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(v->text, names[i]) == 0) {
			*out = (int)i;
			return 1;
		}
	for (size_t i = 0; i < n && used < sizeof(all); i++)
		used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s",
					 i ? (i + 1 == n ? " or " : ", ") : "",
					 names[i]);
	sub_path(x, key, path, sizeof(path));
	d = diag_add(x->diags, "GT520", v->loc, path,
		     "call '%s': unknown %s '%s'", x->name, key, v->text);
	diag_hint(d, "%suse %s", did_you_mean(v->text, names, n, dym,
					      sizeof(dym)), all);
	x->errors++;
	return -1;
}

static int read_bool(struct entry *x, const char *key,
		     const struct set_value *v, int *out, int *given)
{
	*given = 0;
	if (!v->given)
		return 0;
	if (v->kind != CFG_BOOL) {
		bad_type(x, v, key, "a boolean", "true or false");
		return -1;
	}
	*out = v->b;
	*given = 1;
	return 0;
}

/* `code` (GT521: an error; else a warning NeMo-RL ignores) for item `it`
 * of a list of axes, which names no axis of the layout (a: the axis it names
 * in the other layout, or AX_N). */
static void unknown_axis(struct entry *x, const struct set_value *it,
			 enum drv_axis a, const char *path, const char *code,
			 const char *what, const char *const *names)
{
	int error = strcmp(code, "GT521") == 0;
	char dym[96], all[160];
	struct diag *d;

	d = diag_add(x->diags, code, it->loc, path, "call '%s': %s axis '%s' "
		     "is not an axis of the %s driver layout%s", x->name, what,
		     it->text, x->five_d ? "5-D" : "4-D", error ? "" :
		     "; NeMo-RL does not check these names and ignores it");
	if (a == AX_GTP)
		diag_hint(d, "gtp_weight_remat exists only in the GTP PR's "
			  "5-D layout (gtplan.driver_layout: 5d); the axes "
			  "here are %s", axis_list(0, all, sizeof(all)));
	else
		diag_hint(d, "%sthe axes are %s%s", did_you_mean(it->text,
			  names, AX_N, dym, sizeof(dym)),
			  axis_list(x->five_d, all, sizeof(all)), error ?
			  " (NeMo-RL raises \"Axis not found in sharding "
			  "annotations\")" : "");
	x->errors += error;
}

/* An axis list. Unknown names are reported with `code` (GT521 for the
 * axes NeMo-RL checks, the GT523 warning for those it ignores); they are
 * left out of the result, as NeMo-RL ignores them. A null list is empty,
 * as NeMo-RL's None. */
static void read_axes(struct entry *x, const char *key,
		      const struct set_list *v, const char *code,
		      const char *what, struct axes *out)
{
	const char *names[AX_N];
	char path[96], all[160];

	memset(out, 0, sizeof(*out));
	if (!v->v.given)
		return;
	out->given = 1;
	if (v->v.kind == CFG_NULL)
		return;
	if (v->v.kind != CFG_SEQ) {
		bad_type(x, &v->v, key, "a list of axis names",
			 "a list, e.g. [data_parallel]");
		return;
	}
	for (int a = 0; a < AX_N; a++)
		names[a] = a != AX_GTP || x->five_d ?
			   drv_axis_name((enum drv_axis)a) : NULL;
	for (size_t i = 0; i < v->n; i++) {
		const struct set_value *it = &v->items[i];
		enum drv_axis a;
		struct diag *d;

		snprintf(path, sizeof(path), "%s.%s.%zu", x->path, key, i);
		if (it->kind != CFG_STR) {
			d = diag_add(x->diags, "GT520", it->loc, path,
				     "call '%s': %s item %zu is %s %s, not an "
				     "axis name", x->name, key, i,
				     article(it), it->kind_name);
			diag_hint(d, "the axes are %s",
				  axis_list(x->five_d, all, sizeof(all)));
			x->errors++;
			continue;
		}
		a = drv_axis_parse(it->text);
		if (a == AX_N || (a == AX_GTP && !x->five_d)) {
			unknown_axis(x, it, a, path, code, what, names);
			continue;
		}
		if (out->mask & AX_BIT(a)) {
			if (strcmp(key, "sharded") == 0) {
				d = diag_add(x->diags, "GT520", it->loc, path,
					     "call '%s': axis '%s' is sharded "
					     "twice", x->name, it->text);
				diag_hint(d, "list each axis once: the data "
					  "nests one level per sharded axis");
				x->errors++;
			}
			continue;
		}
		out->mask |= AX_BIT(a);
		out->item[out->n] = it;
		out->ax[out->n++] = a;
	}
}

/* Fields that only one kind of dispatch takes, given to the other kind. */
static void wrong_dispatch(struct entry *x, const char *key,
			   const struct set_value *v, int given, int matters,
			   const char *only)
{
	char path[96];
	struct diag *d;

	if (!given || !matters || !v->given)
		return;
	sub_path(x, key, path, sizeof(path));
	d = diag_add(x->diags, "GT520", v->key_loc, path,
		     "call '%s': %s applies to %s calls only", x->name, key,
		     only);
	diag_hint(d, "remove %s, or use dispatch: %s", key,
		  strcmp(only, "sharded") == 0 ? "sharded" : "single");
	x->errors++;
}

/* An axis in both sharded and replicated: GT522 at the replicated item
 * (or the sharded one when only that list was given here). */
static void check_both(struct entry *x, const struct call_def *row,
		       const struct axes *sh, const struct axes *rep)
{
	for (int i = 0; i < row->n_sharded; i++) {
		enum drv_axis a = row->sharded[i];
		const struct set_value *s_item = NULL, *r_item = NULL, *at;
		char path[96];
		struct diag *d;

		if (!(row->replicated & AX_BIT(a)))
			continue;
		for (int k = 0; k < rep->n; k++)
			if (rep->ax[k] == a)
				r_item = rep->item[k];
		for (int k = 0; k < sh->n; k++)
			if (sh->ax[k] == a)
				s_item = sh->item[k];
		at = r_item ? r_item : s_item;
		sub_path(x, r_item ? "replicated" : "sharded", path,
			 sizeof(path));
		d = diag_add(x->diags, "GT522", at ? at->loc : x->e->entry.loc,
			     path, "call '%s': axis '%s' is both sharded and "
			     "replicated", x->name, drv_axis_name(a));
		diag_hint(d, "list it in sharded or in replicated, not both "
			  "(NeMo-RL raises \"Axes cannot be both sharded and "
			  "replicated\")");
		if (r_item && s_item)
			diag_note(d, s_item->loc, "'%s' is sharded here",
				  drv_axis_name(a));
		else
			diag_note(d, DIAG_NOLOC, "the built-in %s %s '%s'",
				  x->name, r_item ? "shards" : "replicates",
				  drv_axis_name(a));
		x->errors++;
	}
}

/* Reads one entry into *row (starting from the built-in row of the same
 * name, or an empty one). Returns 0 when the entry is valid. */
static int read_entry(struct entry *x, const struct call_def *base,
		      struct call_def *row)
{
	const struct set_call *e = x->e;
	struct axes sh, rep, out, r0;
	int disp = -1, prog = -1, dummy = 0, moves = 0, has_dummy, has_moves;
	int rc_d, rc_p;

	if (base)
		*row = *base;
	else
		memset(row, 0, sizeof(*row));
	snprintf(row->name, sizeof(row->name), "%s", x->name);
	row->loc = e->entry.loc;

	rc_d = read_enum(x, "dispatch", &e->dispatch, dispatch_names, 3,
			 "sharded, single or multiple", &disp);
	rc_p = read_enum(x, "program", &e->program, program_names, PROG_COUNT,
			 "train, forward, refit_ipc, ... or none", &prog);
	read_axes(x, "sharded", &e->sharded, "GT521", "sharded", &sh);
	read_axes(x, "replicated", &e->replicated, "GT521", "replicated",
		  &rep);
	read_axes(x, "output", &e->output, "GT523", "output", &out);
	read_axes(x, "rank0_only", &e->rank0_only, "GT523", "rank0_only", &r0);
	read_bool(x, "dummy", &e->dummy, &dummy, &has_dummy);
	read_bool(x, "moves_data", &e->moves_data, &moves, &has_moves);

	if (!base && (rc_d == 0 || rc_p == 0)) {
		struct diag *d = diag_add(x->diags, "GT520", e->name.loc,
			x->path, "call '%s' is not a built-in call and has no %s",
			x->name, rc_d == 0 && rc_p == 0 ? "dispatch and no "
			"program" : rc_d == 0 ? "dispatch" : "program");
		diag_hint(d, "a new call needs dispatch (sharded, single or "
			  "multiple) and program (train, forward, refit_ipc, "
			  "refit_broadcast, refit_reshard, save, load, "
			  "group_init or none); a built-in name (train, "
			  "get_logprobs, ...) overrides that row instead");
		x->errors++;
	}
	if (rc_d == 1)
		row->dispatch = (enum call_dispatch)disp;
	if (rc_p == 1)
		row->program = (enum call_program)prog;

	if (row->dispatch != CALL_SHARDED) {
		wrong_dispatch(x, "sharded", &e->sharded.v, sh.given, sh.n > 0,
			       "sharded");
		wrong_dispatch(x, "replicated", &e->replicated.v, rep.given,
			       rep.n > 0, "sharded");
		wrong_dispatch(x, "output", &e->output.v, out.given, out.n > 0,
			       "sharded");
		wrong_dispatch(x, "dummy", &e->dummy, has_dummy, dummy,
			       "sharded");
		wrong_dispatch(x, "moves_data", &e->moves_data, has_moves, moves,
			       "sharded");
		row->n_sharded = 0;
		row->replicated = row->output = 0;
		row->dummy = row->moves_data = row->uses_train_batch = 0;
		if (r0.given)
			row->rank0_only = r0.mask;
	} else {
		wrong_dispatch(x, "rank0_only", &e->rank0_only.v, r0.given,
			       r0.n > 0, "single and multiple");
		row->rank0_only = 0;
		if (sh.given) {
			row->n_sharded = sh.n;
			memcpy(row->sharded, sh.ax, sizeof(sh.ax));
		}
		if (rep.given)
			row->replicated = rep.mask;
		if (out.given)
			row->output = out.mask;
		if (has_dummy)
			row->dummy = dummy;
		if (has_moves)
			row->moves_data = moves;
		else if (!base || base->dispatch != CALL_SHARDED)
			row->moves_data = 1;
		if (!base || rc_p == 1)
			row->uses_train_batch = row->program == PROG_TRAIN;
		check_both(x, row, &sh, &rep);
	}
	return x->errors ? -1 : 0;
}

/* The entry's name, or NULL (reported) when it has none usable. */
static const char *entry_name(struct entry *x)
{
	const struct set_value *n = &x->e->name;
	char path[96];
	struct diag *d;

	sub_path(x, "name", path, sizeof(path));
	if (!n->given) {
		d = diag_add(x->diags, "GT520", x->e->entry.loc, x->path,
			     "%s has no name", x->path);
		diag_hint(d, "add name: a built-in call (train, get_logprobs, "
			  "...) to override its row, or a new name to add "
			  "one");
		return NULL;
	}
	if (n->kind != CFG_STR) {
		d = diag_add(x->diags, "GT520", n->loc, path,
			     "the call name is %s %s, not a string",
			     article(n), n->kind_name);
		diag_hint(d, "name the call as the driver does, e.g. "
			  "get_logprobs");
		return NULL;
	}
	if (!n->text[0] || strlen(n->text) >= CALL_NAME_MAX) {
		d = diag_add(x->diags, "GT520", n->loc, path,
			     "the call name must be 1 to %d characters long",
			     CALL_NAME_MAX - 1);
		diag_hint(d, "name the call as the driver does, e.g. "
			  "get_logprobs");
		return NULL;
	}
	return n->text;
}

/* An earlier entry's name that equals `name`, or NULL. */
static const struct set_value *earlier(const struct set_calls *in, size_t i,
				       const char *name)
{
	for (size_t k = 0; k < i; k++) {
		const struct set_value *n = &in->v[k].name;

		if (n->kind == CFG_STR && strcmp(n->text, name) == 0)
			return n;
	}
	return NULL;
}

/* The config's rows over the built-in ones in v (*n rows, room for
 * in->n more). */
static void config_rows(const struct set_calls *in, int five_d,
			struct call_def *v, size_t *n, struct diag_list *diags)
{
	struct diag *d;

	for (size_t i = 0; i < in->n; i++) {
		struct entry x = { .e = &in->v[i], .five_d = five_d,
				   .diags = diags };
		const struct set_value *prev;
		struct call_def row, *slot;

		snprintf(x.path, sizeof(x.path), "gtplan.calls.%zu", i);
		if (x.e->entry.kind != CFG_MAP) {
			d = diag_add(diags, "GT520", x.e->entry.loc, x.path,
				     "gtplan.calls entry %zu is %s %s, not a "
				     "map", i, article(&x.e->entry),
				     x.e->entry.kind_name);
			diag_hint(d, "write each call as a map: {name: ..., "
				  "dispatch: ..., sharded: [...], ...}");
			continue;
		}
		if (!(x.name = entry_name(&x)))
			continue;
		if ((prev = earlier(in, i, x.name))) {
			d = diag_add(diags, "GT520", x.e->name.loc, x.path,
				     "call '%s' is defined twice in "
				     "gtplan.calls", x.name);
			diag_hint(d, "merge the two entries; this one is "
				  "ignored");
			diag_note(d, prev->loc, "first defined here");
			continue;
		}
		slot = (struct call_def *)calls_find(v, *n, x.name);
		if (read_entry(&x, slot, &row))
			continue;
		if (!slot)
			slot = &v[(*n)++];
		*slot = row;
	}
}

int calls_table(const struct set_calls *in, int five_d,
		struct call_def **out, size_t *n, struct diag_list *diags)
{
	const struct set_value *list = in ? &in->list : NULL;
	struct call_def *v;
	struct diag *d;

	v = calloc(N_BUILTIN + (in ? in->n : 0), sizeof(*v));
	*out = v;
	*n = 0;
	if (!v || (in && in->nomem))
		return -1;
	for (size_t i = 0; i < N_BUILTIN; i++)
		builtin_row(i, five_d, &v[(*n)++]);
	if (!list || !list->given || list->kind == CFG_NULL)
		return 0;
	if (list->kind != CFG_SEQ) {
		d = diag_add(diags, "GT520", list->loc, "gtplan.calls",
			     "gtplan.calls is %s %s, not a list",
			     article(list), list->kind_name);
		diag_hint(d, "write a list of calls, e.g. [{name: generate, "
			  "replicated: [context_parallel, tensor_parallel, "
			  "pipeline_parallel]}]");
		return 0;
	}
	if (in->n_given > CALLS_MAX_ROWS) {
		d = diag_add(diags, "GT520", in->unread, "gtplan.calls",
			     "gtplan.calls has %zu entries; gtplan reads the "
			     "first %d", in->n_given, CALLS_MAX_ROWS);
		diag_hint(d, "keep the call table under %d rows",
			  CALLS_MAX_ROWS);
	}
	config_rows(in, five_d, v, n, diags);
	return 0;
}
