/*
 * resources_teachers: the non-colocated on-policy-distillation teachers
 * of resources.c's split (its top comment says NeMo-RL's rules): the whole
 * nodes they reserve, one group per checkpoint (or per alias), each
 * checked against the cluster's GPUs per node (models/policy/
 * teacher_worker_group.py create_teacher_configs_from_opd_config).
 */
#include "resources_int.h"

#include <stdlib.h>
#include <string.h>

/* A teacher field: teacher_overrides.<alias> over default_teacher_cfg
 * (algorithms/opd.py _opd_cfg dumps overrides with exclude_unset). NULL
 * means TeacherResourceConfig's built-in default. */
static const struct cfg_node *teacher_field(const struct cfg_node *dflt,
					    const struct cfg_node *ov,
					    const char *key)
{
	const struct cfg_node *v = cfg_get(ov, key);

	return v ? v : cfg_get(dflt, key);
}

/* Checkpoints compare as Python values: by type, then text. */
static int model_cmp(const struct cfg_node *a, const struct cfg_node *b)
{
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return strcmp(a->text ? a->text : "", b->text ? b->text : "");
}

static const struct cfg_node *sort_map; /* for by_model; qsort has no ctx */

static int by_model(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;
	int c = model_cmp(sort_map->kids[a], sort_map->kids[b]);

	return c ? c : (a > b) - (a < b);
}

/* first[i] = 1 when alias i is the first (in document order) to name its
 * checkpoint. Sorting keeps this O(n log n) on hostile maps. */
static int find_firsts(const struct cfg_node *map, unsigned char *first)
{
	size_t n = map->n, *order = malloc(n * sizeof(*order));

	if (!order)
		return -1;
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	sort_map = map;
	qsort(order, n, sizeof(*order), by_model);
	for (size_t i = 0; i < n; i++)
		first[order[i]] = !i || model_cmp(map->kids[order[i - 1]],
						  map->kids[order[i]]) != 0;
	free(order);
	return 0;
}

/* One teacher group: its nodes, checked against the cluster's GPUs per
 * node. Returns 0 or -1 (reported). */
static int add_teacher(const struct cfg_node *root, const struct cfg_node *alias,
		       const struct cfg_node *dflt, const struct cfg_node *ov,
		       long long gpus_per_node, struct teachers *t,
		       struct diag_list *diags)
{
	const struct cfg_node *nn = teacher_field(dflt, ov, "num_nodes");
	const struct cfg_node *gn = teacher_field(dflt, ov, "gpus_per_node");
	long long nodes = 1, gpus = 8;
	struct diag *d;

	if ((nn && nn->kind != CFG_INT) || (gn && gn->kind != CFG_INT)) {
		const struct cfg_node *bad = nn && nn->kind != CFG_INT ? nn : gn;

		d = diag_add(diags, "GT310", bad->loc, NCT "default_teacher_cfg",
			     "teacher '%s': num_nodes and gpus_per_node must be "
			     "integers", alias->key);
		diag_hint(d, "write whole numbers without quotes");
		return -1;
	}
	if (nn)
		nodes = nn->v.i;
	if (gn)
		gpus = gn->v.i;
	if (gpus > gpus_per_node) {
		d = diag_add(diags, "GT310",
			     gn ? gn->loc :
			     cfg_loc_near(root, NCT "default_teacher_cfg"),
			     NCT "default_teacher_cfg.gpus_per_node",
			     "teacher '%s' asks for %lld GPUs per node, but "
			     "cluster nodes have %lld", alias->key, gpus,
			     gpus_per_node);
		diag_hint(d, "each teacher's placement group must fit on one "
			  "node: use gpus_per_node <= %lld (and more num_nodes)",
			  gpus_per_node);
		diag_note(d, cfg_loc_near(root, "cluster.gpus_per_node"),
			  "cluster.gpus_per_node is %lld here", gpus_per_node);
		return -1;
	}
	t->nodes += nodes;
	t->count++;
	return 0;
}

int res_read_teachers(const struct cfg_node *root, long long gpus_per_node,
			 struct teachers *t, struct diag_list *diags)
{
	const struct cfg_node *map = cfg_path(root, OPD "teacher_model_by_agent_name");
	const struct cfg_node *dflt = cfg_path(root, NCT "default_teacher_cfg");
	const struct cfg_node *ovs = cfg_path(root, NCT "teacher_overrides");
	int dedup = cfg_truthy(cfg_path(root, OPD
			"deduplicate_shared_teacher_checkpoints"), 1);
	size_t n = map && map->kind == CFG_MAP ? map->n : 0;
	unsigned char *first;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	if (!cfg_truthy(cfg_path(root, OPD "enabled"), 0) ||
	    !cfg_truthy(cfg_path(root, NCT "enabled"), 0) || !n)
		return 0;
	first = malloc(n);
	if (!first || find_firsts(map, first)) {
		free(first);
		return -2;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct cfg_node *alias = map->kids[i];

		if (dedup && !first[i])
			continue;
		rc = add_teacher(root, alias, dflt, cfg_get(ovs, alias->key),
				 gpus_per_node, t, diags);
	}
	free(first);
	return rc;
}
