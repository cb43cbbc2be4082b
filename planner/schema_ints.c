/*
 * schema_ints: floats the schema takes as integers (GT206).
 *
 * JSON Schema 2020-12 defines "integer" as any number with a zero
 * fractional part, so `tensor_model_parallel_size: 2.0` is valid for
 * python-jsonschema, ajv and yaml-language-server, and gtplan agrees: no
 * GT200. The spellings are every scalar gtplan reads as a float, as
 * OmegaConf's loader does (cfg_scalar_type: 2.0, 2., +2.0, 2e0, 20e-1,
 * 1_0.0, .2e1, or a Hydra override or an interpolation that yields a
 * float), whose value is a whole number of magnitude at most 2^53: past it
 * a double no longer holds every integer, so the integer meant is not
 * known, and 1e20 stays a float (GT200).
 *
 * YAML still reads 2.0 as a float and OmegaConf keeps it one, so NeMo-RL's
 * Python code gets 2.0. The validator notes each such value (once it has
 * passed every other check of its schema); sch_ints_report() gives one
 * GT206 per value: an error for the sizes that reach Megatron-core's
 * parallel state, a warning for the other keys NeMo-RL reads, a note for
 * gtplan's own keys. sch_ints_settle() then makes each noted node the
 * integer node `2` would have given, so that the plan and every other rule
 * see exactly what they see for `2`.
 */
#include "schema_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"

/* Floats above this no longer hold every integer (53-bit mantissa). */
#define EXACT_MAX 9007199254740992.0 /* 2^53 */

struct sch_int_seen {
	const struct cfg_node *n;
	char *path; /* the dotted config path, or NULL at the root */
	size_t seq; /* order of noting, for deterministic reports */
};

int sch_integral_float(const struct cfg_node *n)
{
	return n->kind == CFG_FLOAT && isfinite(n->v.f) &&
	       n->v.f == floor(n->v.f) && fabs(n->v.f) <= EXACT_MAX;
}

void sch_ints_note(struct ctx *c, const struct cfg_node *n)
{
	struct sch_ints *x = c->ints;
	struct sch_int_seen *e;

	if (!x || !c->diags || x->oom)
		return;
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 8;
		struct sch_int_seen *v = realloc(x->v, cap * sizeof(*v));

		if (!v) {
			x->oom = 1;
			return;
		}
		x->v = v;
		x->cap = cap;
	}
	e = &x->v[x->n];
	e->n = n;
	e->seq = x->n;
	e->path = c->plen ? strdup(c->path) : NULL;
	if (c->plen && !e->path) {
		x->oom = 1;
		return;
	}
	x->n++;
}

void sch_ints_release(struct sch_ints *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->v[i].path);
	free(x->v);
	memset(x, 0, sizeof(*x));
}

/* ---- once per value ---------------------------------------------------- */

static int by_node(const void *a, const void *b)
{
	const struct sch_int_seen *x = a, *y = b;
	uintptr_t p = (uintptr_t)x->n, q = (uintptr_t)y->n;

	if (p != q)
		return (p > q) - (p < q);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int by_seq(const void *a, const void *b)
{
	const struct sch_int_seen *x = a, *y = b;

	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* A value checked against several schemas (allOf, properties and
 * patternProperties) is noted once per schema: keep its first note, in
 * the order the values were seen. */
static void dedupe(struct sch_ints *x)
{
	size_t k = 0;

	if (!x->n)
		return;
	qsort(x->v, x->n, sizeof(*x->v), by_node);
	for (size_t i = 0; i < x->n; i++) {
		if (k && x->v[k - 1].n == x->v[i].n) {
			free(x->v[i].path);
			continue;
		}
		x->v[k++] = x->v[i];
	}
	x->n = k;
	qsort(x->v, x->n, sizeof(*x->v), by_seq);
}

/* ---- the finding --------------------------------------------------------- */

/* The sizes Megatron-core's initialize_model_parallel() takes (TP, PP, CP,
 * EP, ETP, VPP, the distributed optimizer's instances), the GTP shard
 * counts beside them, and the Megatron generation backend's own sizes. */
static const char *const megatron_sizes[] = {
	KEY_TP, KEY_PP, KEY_MEG "context_parallel_size", KEY_EP, KEY_ETP,
	KEY_MEG "virtual_pipeline_model_parallel_size", KEY_SHARDS,
	KEY_EXPERT_SHARDS,
	KEY_MEG "distributed_data_parallel_config."
		"num_distributed_optimizer_instances",
	KEY_GEN "mcore_generation_config.tensor_model_parallel_size",
	KEY_GEN "mcore_generation_config.pipeline_model_parallel_size",
	KEY_GEN "mcore_generation_config.expert_model_parallel_size",
};

enum reader { READ_MEGATRON, READ_VLLM, READ_NEMO_RL, READ_GTPLAN };

static enum reader reader_of(const char *path)
{
	if (!path)
		return READ_NEMO_RL;
	for (size_t i = 0; i < sizeof(megatron_sizes) / sizeof(*megatron_sizes);
	     i++)
		if (!strcmp(path, megatron_sizes[i]))
			return READ_MEGATRON;
	if (!strncmp(path, KEY_GEN "vllm_cfg.", strlen(KEY_GEN "vllm_cfg.")))
		return READ_VLLM;
	if (!strncmp(path, KEY_GTPLAN, strlen(KEY_GTPLAN)))
		return READ_GTPLAN;
	return READ_NEMO_RL;
}

static void report_one(const struct sch_int_seen *e, struct diag_list *diags)
{
	static const enum diag_severity sev[] = {
		[READ_MEGATRON] = DIAG_ERROR, [READ_VLLM] = DIAG_WARNING,
		[READ_NEMO_RL] = DIAG_WARNING, [READ_GTPLAN] = DIAG_NOTE,
	};
	const struct cfg_node *n = e->n;
	enum reader r = reader_of(e->path);
	long long v = (long long)n->v.f;
	char got[WORDS];
	struct diag *d;

	sch_show_value(got, sizeof(got), n);
	if (r == READ_MEGATRON)
		d = diag_add_sev(diags, sev[r], "GT206", n->loc, e->path,
				 "%s is a float: gtplan plans with %lld, but "
				 "Megatron-core gets %lld.0 and needs an "
				 "integer", got, v, v);
	else if (r == READ_GTPLAN)
		d = diag_add_sev(diags, sev[r], "GT206", n->loc, e->path,
				 "%s is a float: gtplan reads it as the integer "
				 "%lld", got, v);
	else
		d = diag_add_sev(diags, sev[r], "GT206", n->loc, e->path,
				 "%s is a float: gtplan reads it as %lld, but "
				 "NeMo-RL's Python code gets %lld.0", got, v, v);
	switch (r) {
	case READ_MEGATRON:
		diag_hint(d, "write %lld: YAML reads %s as a float and OmegaConf "
			  "keeps it one; Megatron-core builds its rank groups "
			  "with range() over the parallel sizes "
			  "(megatron/core/parallel_state.py), and range() raises "
			  "TypeError on a float", v, got);
		break;
	case READ_VLLM:
		diag_hint(d, "write %lld: YAML reads %s as a float and "
			  "OmegaConf keeps it one; vLLM's pydantic config "
			  "converts it to %lld, but NeMo-RL's own code reads it "
			  "first", v, got, v);
		break;
	case READ_NEMO_RL:
		diag_hint(d, "write %lld: YAML reads %s as a float and "
			  "OmegaConf keeps it one; used as a count (range(), "
			  "slicing, a tensor's shape) a float raises TypeError, "
			  "in arithmetic it passes", v, got);
		break;
	case READ_GTPLAN:
		diag_hint(d, "write %lld: YAML reads %s as a float, and only "
			  "gtplan reads this key", v, got);
		break;
	}
	if (n->resolved && n->origin.src >= 0 &&
	    memcmp(&n->origin, &n->loc, sizeof(n->loc)))
		diag_note(d, n->origin, "the value comes from here");
}

int sch_ints_report(struct sch_ints *x, struct diag_list *diags)
{
	if (x->oom)
		return -1;
	dedupe(x);
	for (size_t i = 0; i < x->n; i++)
		report_one(&x->v[i], diags);
	return 0;
}

/* ---- settling ------------------------------------------------------------ */

static int by_ptr(const void *a, const void *b)
{
	uintptr_t p = (uintptr_t)((const struct sch_int_seen *)a)->n;
	uintptr_t q = (uintptr_t)((const struct sch_int_seen *)b)->n;

	return (p > q) - (p < q);
}

/* Makes n the node YAML's integer spelling gives: kind, value and text. */
static int settle_node(struct cfg_node *n)
{
	char buf[32];
	char *text;

	snprintf(buf, sizeof(buf), "%lld", (long long)n->v.f);
	text = strdup(buf);
	if (!text)
		return -1;
	free(n->text);
	n->text = text;
	n->v.i = (long long)n->v.f;
	n->kind = CFG_INT;
	return 0;
}

/* Recursive: the loader bounds the depth (CFG_MAX_DEPTH). */
static int settle_walk(const struct sch_ints *x, struct cfg_node *n)
{
	struct sch_int_seen key = { .n = n };

	if (n->kind == CFG_FLOAT)
		return bsearch(&key, x->v, x->n, sizeof(*x->v), by_ptr) ?
		       settle_node(n) : 0;
	for (size_t i = 0; i < n->n; i++)
		if (settle_walk(x, n->kids[i]))
			return -1;
	return 0;
}

int sch_ints_settle(struct sch_ints *x, struct cfg_node *root)
{
	if (!root || !x->n)
		return 0;
	qsort(x->v, x->n, sizeof(*x->v), by_ptr);
	return settle_walk(x, root);
}
