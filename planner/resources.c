/*
 * resources: which GPUs train, as NeMo-RL's entry points split the cluster.
 *
 * NeMo-RL builds its Ray clusters in each algorithm's setup(); the training
 * world W is the policy's cluster, nodes x GPUs per node. The rules below
 * are NeMo-RL's (NVIDIA-NeMo/RL, the tree the corpus comes from); the
 * research notes with file references are docs/notes/nemo-rl-loader-and-
 * resources.md.
 *
 * Which setup() runs is not written in a config; it follows from the
 * top-level sections (the entry point rejects the others):
 *   async_rl + grpo|ppo  single_controller_utils/setup.py _build_clusters()
 *   grpo                 algorithms/grpo.py setup(), "Cluster" block
 *   ppo                  algorithms/ppo.py setup(): GRPO's rules, no teachers,
 *                        and non-colocated generation must be vllm
 *   distillation         algorithms/distillation.py setup(); with a top-level
 *                        `teachers` list it is off_policy_distillation.py,
 *                        which trains on the whole cluster
 *   sft, dpo, rm, other  the whole cluster (sft.py, dpo.py, rm.py); a config
 *                        with none of these but a policy.generation map is
 *                        taken as GRPO
 *
 * GRPO and PPO (N = cluster.num_nodes, G = cluster.gpus_per_node):
 *   - A reward model runs when "reward_model" is the env_name of data.train,
 *     data.validation or data.default (a map or a list of maps; data/utils.py
 *     extract_necessary_env_names). It takes env.reward_model.resources
 *     {num_nodes, gpus_per_node}.
 *   - N == 1: the policy keeps the node. N > 1: policy_nodes = N - rm nodes,
 *     which must be > 0.
 *   - GRPO only: non-colocated on-policy-distillation teachers
 *     (on_policy_distillation.enabled and .non_colocated_teachers.enabled)
 *     take whole nodes: one teacher group per alias of
 *     teacher_model_by_agent_name, or with deduplicate_shared_teacher_
 *     checkpoints (default true) per checkpoint, made by its first alias;
 *     num_nodes and gpus_per_node come from teacher_overrides.<alias> over
 *     default_teacher_cfg (defaults 1 and 8; models/policy/
 *     teacher_worker_group.py create_teacher_configs_from_opd_config). Each
 *     gpus_per_node must be <= G; policy_nodes -= the teachers' nodes and
 *     must stay > 0. (NeMo-RL also requires async GRPO for them; that is not
 *     a resource check and is not reported here.)
 *   - Colocated generation: the policy trains on policy_nodes x G, or on one
 *     node of G - rm GPUs when N == 1 (must be > 0).
 *   - Non-colocated, policy_nodes == 1: generation takes
 *     policy.generation.colocated.resources.gpus_per_node (set, > 0) GPUs of
 *     that node, its num_nodes must be null or 1, and the reward model's GPUs
 *     are taken too when N == 1; what is left (> 0) trains.
 *   - Non-colocated, policy_nodes > 1: generation takes resources.num_nodes
 *     (> 0) whole nodes, and resources.gpus_per_node must equal G; the rest
 *     (> 0) train.
 * Distillation: no reward model, no teachers of its own (the teacher shares
 * the student's cluster); colocated trains on N x G; non-colocated is GRPO's
 * split decided on N instead of policy_nodes, and refuses the Megatron
 * generation backend.
 * SingleController: no reward model; teachers as in GRPO; colocated trains
 * on policy_nodes x G; non-colocated needs resources.gpus_per_node, takes
 * resources.num_nodes (null or 0 meaning 1), splits GPUs on one policy node
 * and nodes otherwise, without GRPO's other checks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_keys.h"
#include "plan.h"
#include "resources_int.h"

enum algo {
	ALGO_WHOLE,   /* sft, dpo, rm, off-policy distillation */
	ALGO_GRPO,
	ALGO_PPO,
	ALGO_DISTILL,
	ALGO_SC,      /* SingleController */
};

#define RES KEY_GEN "colocated.resources."

static int is_map(const struct cfg_node *n)
{
	return n && n->kind == CFG_MAP;
}

static enum algo detect(const struct cfg_node *root)
{
	int grpo = is_map(cfg_get(root, "grpo"));
	int ppo = is_map(cfg_get(root, "ppo"));
	const struct cfg_node *t;

	if (is_map(cfg_get(root, "async_rl")) && (grpo || ppo))
		return ALGO_SC;
	if (grpo)
		return ALGO_GRPO;
	if (ppo)
		return ALGO_PPO;
	if (is_map(cfg_get(root, "distillation"))) {
		t = cfg_get(root, "teachers");
		return t && t->kind == CFG_SEQ ? ALGO_WHOLE : ALGO_DISTILL;
	}
	if (is_map(cfg_get(root, "sft")) || is_map(cfg_get(root, "dpo")) ||
	    is_map(cfg_get(root, "rm")))
		return ALGO_WHOLE;
	return is_map(cfg_path(root, "policy.generation")) ? ALGO_GRPO :
							      ALGO_WHOLE;
}

static int env_name_is_rm(const struct cfg_node *item)
{
	const char *s = NULL;

	return is_map(item) && cfg_str(item, "env_name", &s) == 1 &&
	       strcmp(s, "reward_model") == 0;
}

/* The data entry naming the reward_model environment, or NULL. */
static const struct cfg_node *rm_env_user(const struct cfg_node *root)
{
	static const char *const keys[] = { "train", "validation", "default" };
	const struct cfg_node *data = cfg_get(root, "data");

	for (size_t k = 0; is_map(data) && k < 3; k++) {
		const struct cfg_node *v = cfg_get(data, keys[k]);

		if (env_name_is_rm(v))
			return cfg_get(v, "env_name");
		for (size_t i = 0; v && v->kind == CFG_SEQ && i < v->n; i++)
			if (env_name_is_rm(v->kids[i]))
				return cfg_get(v->kids[i], "env_name");
	}
	return NULL;
}

/* An integer NeMo-RL computes with. Returns 1 (set), 0 (absent or null), or
 * -1 after reporting GT310 when it has another type. */
static int need_int(const struct cfg_node *root, const char *path,
		    long long *out, struct diag_list *diags)
{
	int rc = cfg_int(root, path, out);
	struct diag *d;

	if (rc >= 0)
		return rc;
	d = diag_add(diags, "GT310", cfg_loc_near(root, path), path,
		     "%s must be an integer; NeMo-RL computes the resource "
		     "split with it", path);
	diag_hint(d, "write a whole number without quotes");
	return -1;
}

/* policy.generation.colocated.resources.<key>: 1 (set), 0 (absent or
 * null), or -1 when it is not a positive integer. The schema types these
 * keys (positive integer or null) and reports that; nothing is added here. */
static int gen_int(const struct cfg_node *root, const char *key,
		   long long *out)
{
	char path[128];
	int rc;

	snprintf(path, sizeof(path), RES "%s", key);
	rc = cfg_int(root, path, out);
	return rc == 1 && *out < 1 ? -1 : rc;
}

/* Generation's resources.gpus_per_node (*ig, read as *rg) and num_nodes
 * (*in, *rn), as gen_int reads them (0 when unset). -1 when either is
 * reported. */
static int gen_res(const struct cfg_node *root, long long *ig, int *rg,
		   long long *in, int *rn)
{
	*ig = *in = 0;
	*rg = gen_int(root, "gpus_per_node", ig);
	*rn = gen_int(root, "num_nodes", in);
	return *rg < 0 || *rn < 0 ? -1 : 0;
}

/* ---- the split ----------------------------------------------------- */

static void set_gpus(struct plan_gpus *g, long long nodes, long long gpus)
{
	g->nodes = nodes;
	g->gpus_per_node = gpus;
}

/* GT309 at `path`, with a note at the cluster size `cluster_key`. */
static struct diag *no_training(const struct cfg_node *root, const char *path,
				const char *cluster_key, long long cluster_v,
				struct diag_list *diags, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static struct diag *no_training(const struct cfg_node *root, const char *path,
				const char *cluster_key, long long cluster_v,
				struct diag_list *diags, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	struct diag *d;

	va_start(ap, fmt);
	msg = diag_vfmt(fmt, ap);
	va_end(ap);
	d = diag_add(diags, "GT309", cfg_loc_near(root, path), path, "%s",
		     msg ? msg : "no GPUs are left for training");
	free(msg);
	diag_note(d, cfg_loc_near(root, cluster_key), "%s is %lld here",
		  cluster_key, cluster_v);
	return d;
}

/* Non-colocated generation on the GPUs of one node (policy_nodes == 1).
 * `rm_gpus` are the reward model's GPUs on that node (0 if elsewhere). */
static int split_one_node(struct plan *p, const struct cfg_node *root,
			  long long rm_gpus, struct diag_list *diags)
{
	long long ig, in, g = p->cluster.gpus_per_node, left;
	int rg, rn;
	struct diag *d;

	if (gen_res(root, &ig, &rg, &in, &rn))
		return -1;
	if (rg == 0) {
		d = diag_add(diags, "GT310", cfg_loc_near(root, RES "gpus_per_node"),
			     RES "gpus_per_node", "non-colocated generation on a "
			     "single policy node needs " RES "gpus_per_node set");
		diag_hint(d, "set it to the GPUs of the node that serve "
			  "generation (1..%lld), or enable "
			  KEY_GEN "colocated", g - 1);
		return -1;
	}
	if (rn == 1 && in != 1) {
		d = diag_add(diags, "GT310", cfg_loc_near(root, RES "num_nodes"),
			     RES "num_nodes", "non-colocated generation on a "
			     "single policy node must use that node, but "
			     "num_nodes is %lld", in);
		diag_hint(d, "set " RES "num_nodes to 1 or null, or give the "
			  "cluster more nodes (generation then takes whole "
			  "nodes)");
		return -1;
	}
	left = g - ig - rm_gpus;
	if (left <= 0) {
		if (rm_gpus)
			d = no_training(root, RES "gpus_per_node",
				"cluster.gpus_per_node", g, diags,
				"no GPUs left for training: %lld per node - %lld "
				"for generation - %lld for the reward model",
				g, ig, rm_gpus);
		else
			d = no_training(root, RES "gpus_per_node",
				"cluster.gpus_per_node", g, diags,
				"no GPUs left for training: %lld per node - %lld "
				"for generation", g, ig);
		diag_hint(d, "give generation fewer than %lld GPUs, or the "
			  "cluster more nodes", g - rm_gpus);
		return -1;
	}
	set_gpus(&p->inference, 1, ig);
	set_gpus(&p->train, 1, left);
	return 0;
}

/* Non-colocated generation on whole nodes (policy_nodes > 1). `strict`:
 * GRPO's and distillation's checks; SingleController only needs
 * gpus_per_node and reads a null or 0 num_nodes as 1. */
static int split_nodes(struct plan *p, const struct cfg_node *root,
		       long long policy_nodes, int strict,
		       struct diag_list *diags)
{
	long long ig, in, g = p->cluster.gpus_per_node;
	int rg, rn;
	struct diag *d;

	if (gen_res(root, &ig, &rg, &in, &rn))
		return -1;
	if (!strict && rn == 0)
		in = 1;
	if (strict && rn == 0) {
		d = diag_add(diags, "GT310", cfg_loc_near(root, RES "num_nodes"),
			     RES "num_nodes", "non-colocated generation on a "
			     "%lld-node cluster takes whole nodes, but num_nodes "
			     "is not set", p->cluster.nodes);
		diag_hint(d, "set " RES "num_nodes to the nodes that serve "
			  "generation (1..%lld)", policy_nodes - 1);
		return -1;
	}
	if (strict && (rg == 0 || ig != g)) {
		d = diag_add(diags, "GT310", cfg_loc_near(root, RES "gpus_per_node"),
			     RES "gpus_per_node", "non-colocated generation on "
			     "several nodes uses whole nodes, so gpus_per_node "
			     "must equal cluster.gpus_per_node %lld%s", g,
			     rg == 0 ? " (it is not set)" : "");
		diag_hint(d, "set " RES "gpus_per_node: %lld", g);
		diag_note(d, cfg_loc_near(root, "cluster.gpus_per_node"),
			  "cluster.gpus_per_node is %lld here", g);
		return -1;
	}
	if (!strict && rg == 0) {
		d = diag_add(diags, "GT310", cfg_loc_near(root, RES "gpus_per_node"),
			     RES "gpus_per_node", "non-colocated generation "
			     "needs %s set", RES "gpus_per_node");
		diag_hint(d, "set it to the GPUs per node that serve "
			  "generation");
		return -1;
	}
	if (policy_nodes - in <= 0) {
		d = no_training(root, RES "num_nodes", "cluster.num_nodes",
			p->cluster.nodes, diags, "no nodes left for training: "
			"%lld policy nodes - %lld for generation = %lld",
			policy_nodes, in, policy_nodes - in);
		diag_hint(d, "give generation fewer than %lld nodes, or the "
			  "cluster more", policy_nodes);
		return -1;
	}
	set_gpus(&p->inference, in, ig);
	set_gpus(&p->train, policy_nodes - in, g);
	return 0;
}

/* SingleController, one policy node: only the GPU count is checked. */
static int split_sc_one_node(struct plan *p, const struct cfg_node *root,
			     struct diag_list *diags)
{
	long long ig = 0, in = 0, g = p->cluster.gpus_per_node;
	int rg = gen_int(root, "gpus_per_node", &ig);
	int rn = gen_int(root, "num_nodes", &in);
	struct diag *d;

	if (rg < 0 || rn < 0)
		return -1;
	if (rg == 0) {
		d = diag_add(diags, "GT310", cfg_loc_near(root, RES "gpus_per_node"),
			     RES "gpus_per_node", "non-colocated generation "
			     "needs %s set", RES "gpus_per_node");
		diag_hint(d, "set it to the GPUs of the node that serve "
			  "generation (1..%lld)", g - 1);
		return -1;
	}
	if (g - ig <= 0) {
		d = no_training(root, RES "gpus_per_node", "cluster.gpus_per_node",
			g, diags, "no GPUs left for training: %lld per node - "
			"%lld for generation", g, ig);
		diag_hint(d, "give generation fewer than %lld GPUs, or the "
			  "cluster more nodes", g);
		return -1;
	}
	set_gpus(&p->inference, rn == 1 && in ? in : 1, ig);
	set_gpus(&p->train, 1, g - ig);
	return 0;
}

/* The reward model's resources when its environment is used. Returns 1
 * (used), 0 (not), -1 (reported). */
static int read_rm(const struct cfg_node *root, long long *nodes,
		   long long *gpus, struct diag_list *diags)
{
	const struct cfg_node *user = rm_env_user(root);
	const char *rn = "env.reward_model.resources.num_nodes";
	const char *rg = "env.reward_model.resources.gpus_per_node";
	int a, b;

	*nodes = *gpus = 0;
	if (!user)
		return 0;
	a = need_int(root, rn, nodes, diags);
	b = need_int(root, rg, gpus, diags);
	if (a < 0 || b < 0)
		return -1;
	if (a == 0 || b == 0) {
		struct diag *d = diag_add(diags, "GT310",
			cfg_loc_near(root, "env.reward_model.resources"),
			"env.reward_model.resources", "the reward_model "
			"environment is used, but env.reward_model.resources "
			"does not set %s", a == 0 ? "num_nodes" : "gpus_per_node");
		diag_hint(d, "set env.reward_model.resources.{num_nodes, "
			  "gpus_per_node}");
		diag_note(d, user->loc, "the reward_model environment is "
			  "used here");
		return -1;
	}
	return 1;
}

static int split_grpo(struct plan *p, const struct cfg_node *root,
		      enum algo algo, struct diag_list *diags)
{
	long long n = p->cluster.nodes, g = p->cluster.gpus_per_node;
	long long rm_n, rm_g, policy_nodes = n;
	struct teachers t = { 0, 0 };
	struct diag *d;
	int rm = read_rm(root, &rm_n, &rm_g, diags), rc;

	if (rm < 0)
		return -1;
	if (algo == ALGO_PPO && !p->colocated) {
		const char *backend = NULL;

		if (cfg_str(root, KEY_GEN_BACKEND, &backend) == 1 &&
		    strcmp(backend, "vllm")) {
			d = diag_add(diags, "GT310",
				     cfg_loc_near(root, KEY_GEN_BACKEND),
				     KEY_GEN_BACKEND, "non-colocated PPO "
				     "generation supports only the vllm "
				     "backend, not '%s'",
				     backend);
			diag_hint(d, "use backend: vllm, or enable "
				  KEY_GEN "colocated");
			return -1;
		}
	}
	if (rm)
		set_gpus(&p->reward, rm_n, rm_g);
	if (n > 1) {
		policy_nodes = n - rm_n;
		if (policy_nodes <= 0) {
			d = no_training(root, "env.reward_model.resources.num_nodes",
				"cluster.num_nodes", n, diags, "no nodes left for "
				"the policy: %lld nodes - %lld for the reward model "
				"= %lld", n, rm_n, policy_nodes);
			diag_hint(d, "give the reward model fewer than %lld "
				  "nodes, or the cluster more", n);
			return -1;
		}
	}
	if (algo == ALGO_GRPO) {
		rc = res_read_teachers(root, g, &t, diags);
		if (rc)
			return rc == -2 ? -2 : -1;
		if (t.count) {
			set_gpus(&p->teachers, t.nodes, g);
			policy_nodes -= t.nodes;
			if (policy_nodes <= 0) {
				d = no_training(root, NCT "default_teacher_cfg.num_nodes",
					"cluster.num_nodes", n, diags, "no nodes left "
					"for the policy: %lld nodes - %lld for the reward "
					"model - %lld for teachers", n, rm_n, t.nodes);
				diag_hint(d, "non-colocated teachers take whole "
					  "nodes: give them fewer, or the cluster "
					  "more than %lld", n - policy_nodes);
				return -1;
			}
		}
	}
	if (p->colocated) {
		long long gpn = n == 1 ? g - rm_g : g;

		if (gpn <= 0) {
			d = no_training(root, "env.reward_model.resources.gpus_per_node",
				"cluster.gpus_per_node", g, diags, "no GPUs left "
				"for the policy: %lld per node - %lld for the "
				"reward model", g, rm_g);
			diag_hint(d, "give the reward model fewer than %lld GPUs",
				  g);
			return -1;
		}
		set_gpus(&p->train, policy_nodes, gpn);
		return 0;
	}
	if (policy_nodes == 1)
		return split_one_node(p, root, n == 1 && rm ? rm_g : 0, diags);
	return split_nodes(p, root, policy_nodes, 1, diags);
}

static int split_sc(struct plan *p, const struct cfg_node *root,
		    struct diag_list *diags)
{
	long long n = p->cluster.nodes, policy_nodes;
	struct teachers t;
	int rc = res_read_teachers(root, p->cluster.gpus_per_node, &t, diags);

	if (rc)
		return rc == -2 ? -2 : -1;
	if (t.count)
		set_gpus(&p->teachers, t.nodes, p->cluster.gpus_per_node);
	policy_nodes = n - t.nodes;
	if (policy_nodes <= 0) {
		struct diag *d = no_training(root, NCT "default_teacher_cfg.num_nodes",
			"cluster.num_nodes", n, diags, "no nodes left for the "
			"student: %lld nodes - %lld for teachers = %lld", n,
			t.nodes, policy_nodes);
		diag_hint(d, "non-colocated teachers take whole nodes: give "
			  "them fewer, or the cluster more than %lld", t.nodes);
		return -1;
	}
	if (p->colocated) {
		set_gpus(&p->train, policy_nodes, p->cluster.gpus_per_node);
		return 0;
	}
	if (policy_nodes == 1)
		return split_sc_one_node(p, root, diags);
	return split_nodes(p, root, policy_nodes, 0, diags);
}

static int split_distill(struct plan *p, const struct cfg_node *root,
			 struct diag_list *diags)
{
	const char *backend = NULL;

	if (p->colocated) {
		p->train = p->cluster;
		return 0;
	}
	if (cfg_str(root, KEY_GEN_BACKEND, &backend) == 1 &&
	    strcmp(backend, "megatron") == 0) {
		struct diag *d = diag_add(diags, "GT310",
			cfg_loc_near(root, KEY_GEN_BACKEND), KEY_GEN_BACKEND,
			"distillation cannot run Megatron generation on "
			"separate GPUs");
		diag_hint(d, "use the vllm backend for non-colocated "
			  "generation, or enable " KEY_GEN "colocated");
		return -1;
	}
	if (p->cluster.nodes == 1)
		return split_one_node(p, root, 0, diags);
	return split_nodes(p, root, p->cluster.nodes, 1, diags);
}

int plan_derive_resources(struct plan *p, const struct cfg_node *root,
			  struct diag_list *diags)
{
	long long n, g;
	enum algo algo = detect(root);
	int rc;

	memset(&p->train, 0, sizeof(p->train));
	memset(&p->inference, 0, sizeof(p->inference));
	memset(&p->reward, 0, sizeof(p->reward));
	memset(&p->teachers, 0, sizeof(p->teachers));
	p->world = 0;
	p->colocated = 1;
	/* Missing, mistyped or non-positive: the schema check reports it. */
	if (cfg_int(root, "cluster.num_nodes", &n) != 1 ||
	    cfg_int(root, "cluster.gpus_per_node", &g) != 1 || n < 1 || g < 1)
		return -1;
	set_gpus(&p->cluster, n, g);
	if (algo != ALGO_WHOLE)
		p->colocated =
			cfg_truthy(cfg_path(root, KEY_GEN "colocated.enabled"), 1);

	switch (algo) {
	case ALGO_GRPO:
	case ALGO_PPO:
		rc = split_grpo(p, root, algo, diags);
		break;
	case ALGO_SC:
		rc = split_sc(p, root, diags);
		break;
	case ALGO_DISTILL:
		rc = split_distill(p, root, diags);
		break;
	default:
		p->train = p->cluster;
		rc = 0;
		break;
	}
	if (rc)
		return -1;
	p->world = p->train.nodes * p->train.gpus_per_node;
	return 0;
}
