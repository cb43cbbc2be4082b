/*
 * hardware: data/hardware.yaml's profiles (hardware.h).
 *
 * The file is a YAML list of profiles, each a mapping (yaml_doc.h loads
 * it, as model_catalog_load.c loads data/models.yaml):
 *   gpu: NAME                  the profile's name
 *   description, measured      text
 *   source                     a list of text (not kept)
 *   FIELD: X                   the numbers of keys[] below
 *   attention                  a list of {head_dim, fwd_tflops,
 *                              bwd_tflops}, attention's TFLOP/s
 * Numbers are plain scalars as YAML's core schema types them. gpu, every
 * number and at least one attention row are required; any other key, a
 * key twice, a head dim twice and a gpu named twice are refused. Every
 * profile is checked, not only the one asked for.
 */
#include "hardware.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yaml_doc.h"

/* data/hardware.yaml, embedded at build time (scripts/embed.sh). */
extern const char gtplan_hardware_yaml[];
extern const unsigned long gtplan_hardware_yaml_len;

#define HW_FILE "data/hardware.yaml"
#define OFF(f) offsetof(struct hw_profile, f)
#define SIZE(f) sizeof(((struct hw_profile *)0)->f)

enum key_kind { KEY_NUMBER, KEY_TEXT, KEY_SOURCE, KEY_ATTENTION };

/* The keys of a profile: kind, place in the profile (text: the array's
 * size; numbers: the largest value that makes sense, efficiencies being
 * fractions), whether a profile needs it (a required text is not
 * empty). */
static const struct hw_key {
	const char *key;
	enum key_kind kind;
	size_t off, size;
	double max;
	int required;
} keys[] = {
	{ "gpu", KEY_TEXT, OFF(name), SIZE(name), 0, 1 },
	{ "description", KEY_TEXT, OFF(description), SIZE(description), 0, 0 },
	{ "measured", KEY_TEXT, OFF(measured), SIZE(measured), 0, 0 },
	{ "source", KEY_SOURCE, 0, 0, 0, 0 },
#define NUM(k, f, max) { k, KEY_NUMBER, OFF(f), 0, max, 1 }
	NUM("bf16_tflops", bf16_tflops, 1e6),
	NUM("gemm_efficiency", gemm_efficiency, 1),
	NUM("gemm_call_us", gemm_call_us, 1e6),
	NUM("hbm_gbps", hbm_gbps, 1e6),
	NUM("elementwise_efficiency", mem_efficiency[HW_MEM_ELEMENTWISE], 1),
	NUM("elementwise_call_us", mem_call_us[HW_MEM_ELEMENTWISE], 1e6),
	NUM("copy_efficiency", mem_efficiency[HW_MEM_COPY], 1),
	NUM("copy_call_us", mem_call_us[HW_MEM_COPY], 1e6),
	NUM("optimizer_efficiency", mem_efficiency[HW_MEM_OPTIMIZER], 1),
	NUM("optimizer_call_us", mem_call_us[HW_MEM_OPTIMIZER], 1e6),
	NUM("launch_us", launch_us, 1e6),
#undef NUM
	{ "attention", KEY_ATTENTION, 0, 0, 0, 1 },
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static int failf(struct ydoc *d, const yaml_node_t *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ydoc_fail with a formatted message; returns -1. */
static int failf(struct ydoc *d, const yaml_node_t *n, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return ydoc_fail(d, n, what, NULL);
}

static size_t count(const yaml_node_t *n)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return (size_t)(n->data.sequence.items.top -
				 n->data.sequence.items.start);
	if (n->type == YAML_MAPPING_NODE)
		return (size_t)(n->data.mapping.pairs.top -
				n->data.mapping.pairs.start);
	return 0;
}

/* A plain number in [0, max] at n. */
static int number(const yaml_node_t *n, double max, double *v)
{
	json_t *j;
	int ok;

	if (!n || n->type != YAML_SCALAR_NODE)
		return -1;
	j = ydoc_scalar(n);
	ok = json_is_number(j);
	*v = ok ? json_number_value(j) : 0;
	json_decref(j);
	return ok && isfinite(*v) && *v >= 0 && *v <= max ? 0 : -1;
}

/* One row {head_dim, fwd_tflops, bwd_tflops}, all positive. */
static int attention_row(struct ydoc *d, const yaml_node_t *row,
			 struct hw_attn *a)
{
	double hd, f, w;

	if (row->type != YAML_MAPPING_NODE || count(row) != 3 ||
	    number(ydoc_child(d, row, "head_dim"), 1 << 20, &hd) ||
	    number(ydoc_child(d, row, "fwd_tflops"), 1e6, &f) ||
	    number(ydoc_child(d, row, "bwd_tflops"), 1e6, &w) ||
	    hd < 1 || hd != floor(hd) || f <= 0 || w <= 0)
		return failf(d, row, "an attention row is {head_dim: HD, "
			     "fwd_tflops: FWD, bwd_tflops: BWD}, all positive, "
			     "HD whole");
	*a = (struct hw_attn){ (long long)hd, f, w };
	return 0;
}

static int attention(struct ydoc *d, const yaml_node_t *n,
		     struct hw_profile *hw)
{
	yaml_node_item_t *it;

	if (n->type != YAML_SEQUENCE_NODE || !count(n))
		return failf(d, n, "attention is a list of rows {head_dim, "
			     "fwd_tflops, bwd_tflops}, at least one");
	for (it = n->data.sequence.items.start;
	     it < n->data.sequence.items.top; it++) {
		yaml_node_t *row = ydoc_node(d, *it);
		struct hw_attn *a = &hw->attn[hw->n_attn];

		if (hw->n_attn == HW_MAX_ATTN)
			return failf(d, row, "too many attention rows (at "
				     "most %d)", HW_MAX_ATTN);
		if (attention_row(d, row, a))
			return -1;
		for (size_t i = 0; i < hw->n_attn; i++)
			if (hw->attn[i].head_dim == a->head_dim)
				return failf(d, row, "attention lists head "
					     "dim %lld twice", a->head_dim);
		hw->n_attn++;
	}
	return 0;
}

static int text(struct ydoc *d, const yaml_node_t *n, const struct hw_key *k,
		char *dst)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE)
		return failf(d, n, "%s is text", k->key);
	s = (const char *)n->data.scalar.value;
	if (strlen(s) >= k->size || (k->required && !*s))
		return failf(d, n, "%s wants %s%zu characters", k->key,
			     k->required ? "1 to " : "at most ", k->size - 1);
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static int sources(struct ydoc *d, const yaml_node_t *n)
{
	yaml_node_item_t *it;

	if (n->type != YAML_SEQUENCE_NODE)
		return failf(d, n, "source is a list of text");
	for (it = n->data.sequence.items.start;
	     it < n->data.sequence.items.top; it++)
		if (ydoc_node(d, *it)->type != YAML_SCALAR_NODE)
			return failf(d, n, "source is a list of text");
	return 0;
}

/* keys[i]'s value v into hw. */
static int value(struct ydoc *d, const struct hw_key *k, const yaml_node_t *v,
		 struct hw_profile *hw)
{
	char *at = (char *)hw + k->off;

	switch (k->kind) {
	case KEY_TEXT:
		return text(d, v, k, at);
	case KEY_SOURCE:
		return sources(d, v);
	case KEY_ATTENTION:
		return attention(d, v, hw);
	case KEY_NUMBER:
		break;
	}
	if (number(v, k->max, (double *)(void *)at))
		return failf(d, v, "bad value of '%s': a plain number from 0 "
			     "to %g", k->key, k->max);
	return 0;
}

/* The figures the estimate divides by are positive. */
static int positive(struct ydoc *d, const yaml_node_t *m,
		    const struct hw_profile *hw)
{
	if (hw->bf16_tflops <= 0 || hw->gemm_efficiency <= 0 ||
	    hw->hbm_gbps <= 0)
		return failf(d, m, "profile '%s' needs a positive peak, GEMM "
			     "efficiency and bandwidth", hw->name);
	for (int c = 0; c < HW_MEM_CLASSES; c++)
		if (hw->mem_efficiency[c] <= 0)
			return failf(d, m, "profile '%s' has an efficiency "
				     "of 0", hw->name);
	return 0;
}

/* One profile, the mapping m, into *hw. */
static int profile(struct ydoc *d, const yaml_node_t *m,
		   struct hw_profile *hw)
{
	unsigned long seen = 0;
	yaml_node_pair_t *p;

	memset(hw, 0, sizeof(*hw));
	if (m->type != YAML_MAPPING_NODE)
		return failf(d, m, "a profile is a mapping (gpu: NAME, ...)");
	for (p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = ydoc_node(d, p->key);
		const char *key;
		size_t i = 0;

		if (!k || k->type != YAML_SCALAR_NODE)
			return failf(d, k ? k : m, "a key is text");
		key = (const char *)k->data.scalar.value;
		while (i < N_KEYS && strcmp(keys[i].key, key))
			i++;
		if (i == N_KEYS)
			return failf(d, k, "unknown field '%.40s'", key);
		if (seen & (1ul << i))
			return failf(d, k, "duplicate key '%s'", key);
		seen |= 1ul << i;
		if (value(d, &keys[i], ydoc_node(d, p->value), hw))
			return -1;
	}
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].required && !(seen & (1ul << i)))
			return failf(d, m, "profile '%s' lacks %s",
				     hw->name[0] ? hw->name : "?", keys[i].key);
	return positive(d, m, hw);
}

/* The name of a profile that profile() took. */
static const char *gpu_of(struct ydoc *d, const yaml_node_t *m)
{
	return (const char *)ydoc_child(d, m, "gpu")->data.scalar.value;
}

/* Every profile checked; *out the one named want (the first when want is
 * NULL). */
static int profiles(struct ydoc *d, const char *want, struct hw_profile *out)
{
	yaml_node_t *root = yaml_document_get_root_node(&d->doc);
	yaml_node_item_t *it, *prev;
	struct hw_profile hw;
	int found = 0;

	if (!root || root->type != YAML_SEQUENCE_NODE || !count(root))
		return ydoc_fail(d, root, "the file is a list of GPU profiles",
				 NULL);
	if (count(root) > HW_MAX_PROFILES)
		return failf(d, root, "more than %d profiles",
			     HW_MAX_PROFILES);
	for (it = root->data.sequence.items.start;
	     it < root->data.sequence.items.top; it++) {
		yaml_node_t *m = ydoc_node(d, *it);

		if (profile(d, m, &hw))
			return -1;
		for (prev = root->data.sequence.items.start; prev < it; prev++)
			if (!strcmp(hw.name, gpu_of(d, ydoc_node(d, *prev))))
				return failf(d, ydoc_child(d, m, "gpu"),
					     "duplicate gpu '%s'", hw.name);
		if (!found && (!want || !strcmp(hw.name, want))) {
			*out = hw;
			found = 1;
		}
	}
	if (!found) {
		snprintf(d->err, d->elen, HW_FILE " has no profile '%s'", want);
		return -1;
	}
	return 0;
}

int hw_profile_parse(const char *text, size_t len, const char *name,
		     struct hw_profile *out, char *err, size_t errlen)
{
	struct ydoc d;
	int rc;

	if (ydoc_load(&d, HW_FILE, text, len, err, errlen))
		return -1;
	rc = profiles(&d, name, out);
	ydoc_release(&d);
	return rc;
}

int hw_profile_builtin(const char *name, struct hw_profile *out, char *err,
		       size_t errlen)
{
	return hw_profile_parse(gtplan_hardware_yaml, gtplan_hardware_yaml_len,
				name, out, err, errlen);
}

const char *hw_profile_default_name(void)
{
	static char name[SIZE(name)];
	struct hw_profile hw;
	char err[256];

	if (!name[0] && !hw_profile_builtin(NULL, &hw, err, sizeof(err)))
		memcpy(name, hw.name, sizeof(name));
	return name;
}

const struct hw_attn *hw_attn_at(const struct hw_profile *hw, long long hd)
{
	const struct hw_attn *best = &hw->attn[0];

	for (size_t i = 1; i < hw->n_attn; i++) {
		const struct hw_attn *a = &hw->attn[i];
		long long da = llabs(a->head_dim - hd);
		long long db = llabs(best->head_dim - hd);

		if (da < db || (da == db && a->head_dim < best->head_dim))
			best = a;
	}
	return best;
}
