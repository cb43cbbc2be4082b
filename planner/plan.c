/*
 * plan: sizes, rank order and the planning rules (docs/design.md §2.1-2.2).
 * The resources split is in resources.c, the JSON in plan_json.c.
 */
#include "plan.h"
#include "cfg_keys.h"
#include "ckmath.h"
#include "framework.h"
#include "model.h"
#include "schema.h"
#include "strbuf.h"

/* The schema's limit on every size is the world limit (schema.h). */
_Static_assert(SCHEMA_MAX_SIZE == PLAN_MAX_WORLD,
	       "schemas/config.schema.json's size maximum is the world limit");

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void plan_init(struct plan *p)
{
	memset(p, 0, sizeof(*p));
	settings_init(&p->set);
}

void plan_release(struct plan *p)
{
	free(p->config_name);
	free(p->driver_layout);
	settings_release(&p->set);
	plan_init(p);
}

/* A positive size at `path`, or `dflt` when absent or null. Wrong types and
 * ranges are the schema's findings; here they fall back to the default and
 * make the plan incomplete through *ok. */
static long long size_at(const struct cfg_node *root, const char *path,
			 long long dflt, int *ok)
{
	long long v;
	int rc = cfg_int(root, path, &v);

	if (rc == 0)
		return dflt;
	if (rc < 0 || v < 1) {
		*ok = 0;
		return dflt;
	}
	return v;
}

/* 1 when the schema refuses one of the parallel sizes (a string, a float
 * with a fractional part, below 1; 4.0 is settled to 4 before planning,
 * schema.h): the sizes then hold a default in its place, and no rule may
 * judge a layout the user did not write ("TP is 1" after TP: -4). */
static int sizes_refused(const struct cfg_node *root, int megatron)
{
	static const char *const meg[] = {
		KEY_TP, KEY_MEG "context_parallel_size", KEY_PP, KEY_EP,
		KEY_ETP, KEY_SHARDS, KEY_EXPERT_SHARDS,
	};
	static const char *const dt[] = {
		KEY_DTENSOR ".tensor_parallel_size",
		KEY_DTENSOR ".context_parallel_size",
	};
	const char *const *keys = megatron ? meg : dt;
	size_t n = megatron ? sizeof(meg) / sizeof(meg[0])
			    : sizeof(dt) / sizeof(dt[0]);
	long long v;

	for (size_t i = 0; i < n; i++) {
		int rc = cfg_int(root, keys[i], &v);

		if (rc < 0 || (rc == 1 && v < 1))
			return 1;
	}
	return 0;
}

/* Every key named gtp_weight_remat_size (or its expert twin), anywhere. */
static void find_remat_keys(const struct cfg_node *n, char *path, size_t len,
			    size_t used, struct diag_list *diags)
{
	for (size_t i = 0; i < n->n; i++) {
		const struct cfg_node *k = n->kids[i];
		size_t add;

		if (n->kind == CFG_MAP)
			add = (size_t)snprintf(path + used, len - used, "%s%s",
					       used ? "." : "", k->key);
		else
			add = (size_t)snprintf(path + used, len - used, "%s%zu",
					       used ? "." : "", i);
		if (used + add >= len)
			continue;
		if (n->kind == CFG_MAP &&
		    (strcmp(k->key, "gtp_weight_remat_size") == 0 ||
		     strcmp(k->key, "expert_gtp_weight_remat_size") == 0)) {
			int expert = k->key[0] == 'e';
			struct diag *d = diag_add(diags, "GT300", k->key_loc,
				path, "'%s' is derived by Megatron-Bridge and "
				"cannot be set", k->key);
			diag_hint(d, "remove it and set policy.megatron_cfg.%s "
				  "= %s x the GTP size you want",
				  expert ? "expert_tensor_parallel_num_weight_shards"
					 : "tensor_parallel_num_weight_shards",
				  expert ? "ETP" : "TP");
		}
		find_remat_keys(k, path, len, used + add, diags);
		path[used] = '\0';
	}
}

/* Multiples of m nearest to w (below and above), for hints. */
static void nearest_multiples(long long w, long long m, long long *lo,
			      long long *hi)
{
	*lo = w / m * m;
	*hi = *lo + m;
	if (*lo == 0)
		*lo = m;
}

/* S (or ES) against TP (or ETP): a positive multiple, null meaning TP.
 * Sets *shards and *g; reports `code` otherwise. */
static void check_shards(const struct cfg_node *root, const char *key,
			 long long tp, const char *tp_name, const char *tp_path,
			 const char *code,
			 long long *shards, long long *g, int *ok,
			 struct diag_list *diags)
{
	char path[128];
	long long s, lo, hi;
	int rc;
	struct diag *d;

	snprintf(path, sizeof(path), KEY_MEG "%s", key);
	rc = cfg_int(root, path, &s);
	*shards = tp;
	*g = 1;
	if (rc == 0)
		return;
	if (rc < 0) {
		*ok = 0;
		return;
	}
	if (s >= tp && s % tp == 0) {
		*shards = s;
		*g = s / tp;
		return;
	}
	*ok = 0;
	nearest_multiples(s, tp, &lo, &hi);
	d = diag_add(diags, code, cfg_loc(root, path), path,
		     "%s is %lld, which is not a positive multiple of %s %lld",
		     key, s, tp_name, tp);
	if (cfg_path(root, tp_path))
		diag_note(d, cfg_loc(root, tp_path), "%s is %lld here", tp_name,
			  tp);
	if (lo == hi || lo == s)
		diag_hint(d, "use %lld (GTP %lld), or null to turn GTP off",
			  hi, hi / tp);
	else
		diag_hint(d, "use %lld (GTP %lld) or %lld (GTP %lld): the GTP "
			  "size is %s / %s", lo, lo / tp, hi, hi / tp, key,
			  tp_name);
}

struct factor {
	const char *name;
	const char *path; /* where it is set; NULL when derived */
	long long v;
	const char *how;  /* how v follows from the value there, or NULL */
};

/* The world is not a multiple of the product of `f`: one error at the
 * cluster size, with a note at each factor's own place. */
static void report_world(const struct plan *p, const struct cfg_node *root,
			 const char *code, const struct factor *f, size_t n,
			 struct diag_list *diags)
{
	struct strbuf sb = STRBUF_INIT;
	const char *prod;
	char mtext[32];
	long long m = 1, lo, hi;
	struct diag *d;
	const char *at = cfg_path(root, "cluster.num_nodes") ?
		"cluster.num_nodes" : "cluster.gpus_per_node";

	for (size_t i = 0; i < n; i++) {
		m = ck_mul_sat(m, f[i].v);
		strbuf_addf(&sb, "%s%s %lld", i ? " x " : "", f[i].name,
			    f[i].v);
	}
	prod = strbuf_str(&sb) ? strbuf_str(&sb) : "";
	if (m == CK_SAT)
		snprintf(mtext, sizeof(mtext), "more than %lld", CK_SAT);
	else
		snprintf(mtext, sizeof(mtext), "%lld", m);
	if (p->world < m)
		d = diag_add(diags, code, cfg_loc(root, at), at,
			     "%lld training GPUs are fewer than one model "
			     "copy needs: %s = %s", p->world, prod, mtext);
	else
		d = diag_add(diags, code, cfg_loc(root, at), at,
			     "%lld training GPUs are not divisible by %s = "
			     "%lld (%lld / %lld = %.3f copies)", p->world,
			     prod, m, p->world, m, (double)p->world / (double)m);
	if (m > PLAN_MAX_WORLD) {
		/* no world gtplan plans holds one copy: no node count to
		 * suggest */
		diag_hint(d, "change %s: one model copy must fit in the %lld "
			  "GPUs of the largest world gtplan plans",
			  f[0].name[0] == 'E' ? "ETP, EP, EG or PP" :
			  "TP, CP, G or PP", PLAN_MAX_WORLD);
	} else if (p->colocated && p->world == p->cluster.nodes *
	    p->cluster.gpus_per_node && p->cluster.gpus_per_node > 0) {
		/* Whole nodes: the node counts whose GPUs are a multiple of m. */
		long long a = m, b = p->cluster.gpus_per_node, step;

		while (b) {
			long long t = a % b;

			a = b;
			b = t;
		}
		step = m / a; /* nodes per multiple of lcm(m, gpus_per_node) */
		nearest_multiples(p->cluster.nodes, step, &lo, &hi);
		if (lo == p->cluster.nodes || p->world < m)
			lo = hi;
		if (lo == hi)
			diag_hint(d, "use %lld nodes (%lld GPUs, a multiple of "
				  "%lld), or change %s so that the product "
				  "divides %lld", hi, hi * p->cluster.gpus_per_node,
				  m, f[0].name[0] == 'E' ? "ETP, EP, EG or PP" :
				  "TP, CP, G or PP", p->world);
		else
			diag_hint(d, "use %lld or %lld nodes (%lld or %lld GPUs, "
				  "multiples of %lld), or change %s so that the "
				  "product divides %lld", lo, hi,
				  lo * p->cluster.gpus_per_node,
				  hi * p->cluster.gpus_per_node, m,
				  f[0].name[0] == 'E' ? "ETP, EP, EG or PP" :
				  "TP, CP, G or PP", p->world);
	} else {
		nearest_multiples(p->world, m, &lo, &hi);
		if (lo == p->world || p->world < m)
			lo = hi;
		diag_hint(d, "train on %lld%s%lld GPUs (multiples of %lld), or "
			  "change a factor so that the product divides %lld",
			  lo, lo == hi ? "" : " or ", lo == hi ? 0 : hi, m,
			  p->world);
	}
	for (size_t i = 0; i < n; i++) {
		struct diag_loc l = f[i].path ? cfg_loc(root, f[i].path) :
						DIAG_NOLOC;

		if (l.src >= 0 && f[i].v > 1)
			diag_note(d, l, "%s is %lld%s%s", f[i].name, f[i].v,
				  f[i].how ? " " : " here", f[i].how ? f[i].how : "");
	}
	/* nodes and GPUs per node are at most 2^20 each (schema.h) */
	if (p->world != p->cluster.nodes * p->cluster.gpus_per_node)
		diag_note(d, DIAG_NOLOC, "the cluster has %lld GPUs; %lld train "
			  "(the rest serve generation, rewards or teachers)",
			  p->cluster.nodes * p->cluster.gpus_per_node, p->world);
	strbuf_release(&sb);
}

static void check_batches(struct plan *p, const struct cfg_node *root,
			  struct diag_list *diags)
{
	const char *gpath = "policy.train_global_batch_size";
	const char *mpath = "policy.train_micro_batch_size";
	/* With sequence packing or dynamic batching, NeMo-RL builds
	 * micro-batches from a token budget; train_micro_batch_size is not
	 * what splits a lane's samples. */
	int packing = p->set.sequence_packing;
	int dynamic = p->set.dynamic_batching;
	struct diag *d;

	if (!p->grid_ok || !p->global_batch)
		return;
	if (p->global_batch % p->lanes) {
		long long lo, hi;

		nearest_multiples(p->global_batch, p->lanes, &lo, &hi);
		d = diag_add(diags, "GT400", cfg_loc(root, gpath), gpath,
			     "global batch %lld does not split over %lld data "
			     "lanes (L = D %lld x G %lld)", p->global_batch,
			     p->lanes, p->dp_replicate, p->gtp);
		diag_hint(d, "use a global batch of %lld or %lld (multiples of "
			  "%lld lanes)", lo, hi, p->lanes);
		return;
	}
	if (p->micro_batch && !packing && !dynamic &&
	    (p->global_batch / p->lanes) % p->micro_batch) {
		long long step = p->lanes * p->micro_batch, lo, hi;

		nearest_multiples(p->global_batch, step, &lo, &hi);
		d = diag_add(diags, "GT401", cfg_loc(root, gpath), gpath,
			     "each of the %lld lanes gets %lld samples, not a "
			     "multiple of the micro batch %lld",
			     p->lanes, p->global_batch / p->lanes,
			     p->micro_batch);
		diag_hint(d, "use a global batch of %lld or %lld (multiples of "
			  "L %lld x micro batch %lld)", lo, hi, p->lanes,
			  p->micro_batch);
		diag_note(d, cfg_loc(root, mpath), "the micro batch is %lld here",
			  p->micro_batch);
	}
}

static int read_order(struct plan *p, const struct cfg_node *root,
		      struct diag_list *diags)
{
	const char *order = LAY_DEFAULT_ORDER, *layout = "4d";
	char err[256];

	if (cfg_str(root, "gtplan.rank_order", &order) < 0)
		order = LAY_DEFAULT_ORDER;
	if (lay_order_parse(order, &p->order, err, sizeof(err))) {
		struct diag *d = diag_add(diags, "GT307",
			cfg_loc(root, "gtplan.rank_order"), "gtplan.rank_order",
			"rank order '%s': %s", order, err);
		diag_hint(d, "use tp-cp-gtp-ep-dp-pp (Megatron-LM today) or "
			  "tp-gtp-cp-ep-dp-pp (GTP as first merged)");
		lay_order_parse(LAY_DEFAULT_ORDER, &p->order, err, sizeof(err));
	}
	if (cfg_str(root, "gtplan.driver_layout", &layout) < 0 ||
	    (strcmp(layout, "4d") && strcmp(layout, "5d")))
		layout = "4d"; /* the schema reports a bad value */
	p->driver_layout = strdup(layout);
	return p->driver_layout ? 0 : -1;
}

/* The batch sizes as set (0 when unset), whatever else fails. */
static void read_batches(struct plan *p, const struct cfg_node *root)
{
	long long g = 0, m = 0;

	if (cfg_int(root, "policy.train_global_batch_size", &g) == 1 && g > 0)
		p->global_batch = g;
	if (cfg_int(root, "policy.train_micro_batch_size", &m) == 1 && m > 0)
		p->micro_batch = m;
}

/* gtplan.runtime with its defaults. A wrong type or range is the schema's
 * finding; the default stands in for it here. */
static void read_runtime(struct plan *p, const struct cfg_node *root)
{
	static const struct {
		const char *key;
		size_t off;
		long long dflt, min;
	} ints[] = {
#define RT_INT(k, d, m) { "gtplan.runtime." #k, \
		offsetof(struct plan_runtime, k), d, m }
		RT_INT(hidden, PLAN_RT_HIDDEN, 1),
		RT_INT(ffn, PLAN_RT_FFN, 1),
		RT_INT(layers, PLAN_RT_LAYERS, 1),
		RT_INT(seq_len, PLAN_RT_SEQ_LEN, 1),
		RT_INT(vocab, PLAN_RT_VOCAB, 1),
		RT_INT(seed, PLAN_RT_SEED, 0),
		RT_INT(steps, PLAN_RT_STEPS, 1),
#undef RT_INT
	};
	struct plan_runtime *rt = &p->runtime;
	const struct cfg_node *lr = cfg_path(root, "gtplan.runtime.lr");
	const char *dtype = "fp32";

	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		long long v;
		long long *dst = (long long *)((char *)rt + ints[i].off);

		if (cfg_int(root, ints[i].key, &v) == 1 && v >= ints[i].min)
			*dst = v;
		else
			*dst = ints[i].dflt;
	}
	rt->lr = PLAN_RT_LR;
	if (lr && lr->kind == CFG_FLOAT && lr->v.f > 0 && lr->v.f < 1e30)
		rt->lr = lr->v.f;
	else if (lr && lr->kind == CFG_INT && lr->v.i > 0)
		rt->lr = (double)lr->v.i;
	if (cfg_str(root, "gtplan.runtime.dtype", &dtype) < 1 ||
	    (strcmp(dtype, "fp32") && strcmp(dtype, "bf16")))
		dtype = "fp32";
	rt->dtype = strcmp(dtype, "bf16") ? "fp32" : "bf16";
	if (cfg_bool(root, "gtplan.runtime.prefetch", &rt->prefetch) != 1)
		rt->prefetch = 0;
}

/* The parallel sizes: Megatron's (with the weight shards, GT301/GT302),
 * or DTensor's mesh dp x cp x tp (no PP, no GTP). *ok = 0 when one is
 * unusable. */
static void read_sizes(struct plan *p, const struct cfg_node *root,
		       int *ok, struct diag_list *diags)
{
	if (p->set.megatron) {
		p->tp = size_at(root, KEY_TP, 1, ok);
		p->cp = size_at(root, KEY_MEG "context_parallel_size", 1, ok);
		p->pp = size_at(root, KEY_PP, 1, ok);
		p->ep = size_at(root, KEY_EP, 1, ok);
		p->etp = size_at(root, KEY_ETP, p->tp,
				 ok);
		check_shards(root, "tensor_parallel_num_weight_shards", p->tp,
			     "TP", KEY_TP, "GT301",
			     &p->shards, &p->gtp, ok, diags);
		check_shards(root, "expert_tensor_parallel_num_weight_shards",
			     p->etp, "ETP",
			     cfg_path(root, KEY_ETP) &&
			     cfg_path(root, KEY_ETP)->kind
			     == CFG_INT ? KEY_ETP :
			     KEY_TP, "GT302",
			     &p->expert_shards, &p->egtp, ok, diags);
	} else {
		/* DTensor: no PP, no GTP; the mesh is dp x cp x tp. */
		p->tp = size_at(root, "policy.dtensor_cfg.tensor_parallel_size",
				1, ok);
		p->cp = size_at(root, "policy.dtensor_cfg.context_parallel_size",
				1, ok);
		p->pp = p->ep = 1;
		p->etp = p->tp;
		p->shards = p->tp;
		p->expert_shards = p->etp;
		p->gtp = p->egtp = 1;
	}
}

/* GT306: weight shards set while the Megatron backend is turned off. */
static void check_gtp_off(const struct cfg_node *root,
			  struct diag_list *diags)
{
	if (cfg_path(root, KEY_SHARDS)) {
		long long s;
		const char *sp = KEY_SHARDS;

		if (cfg_int(root, sp, &s) == 1 &&
		    cfg_path(root, KEY_MEG_ENABLED)) {
			long long mtp = 1;

			cfg_int(root, KEY_TP, &mtp);
			if (s != mtp) {
				struct diag *d = diag_add(diags, "GT306",
					cfg_loc(root, sp), sp,
					"GTP is configured (%lld weight shards) "
					"but policy.megatron_cfg.enabled is "
					"false", s);
				diag_hint(d, "set policy.megatron_cfg.enabled: "
					  "true (the DTensor path has no GTP), "
					  "or remove the shard count");
				diag_note(d, cfg_loc(root, KEY_MEG_ENABLED),
					  "the Megatron backend is turned off "
					  "here");
			}
		}
	}
}

/* GT305: GTP needs one distributed-optimizer instance. */
static void check_optimizer_instances(const struct plan *p,
				      const struct cfg_node *root,
				      struct diag_list *diags)
{
	long long instances = 1;

	if (p->gtp > 1 &&
	    cfg_int(root, KEY_MEG "distributed_data_parallel_config."
		    "num_distributed_optimizer_instances", &instances) == 1 &&
	    instances > 1) {
		const char *ip = KEY_MEG "distributed_data_parallel_config."
				 "num_distributed_optimizer_instances";
		struct diag *d = diag_add(diags, "GT305", cfg_loc(root, ip), ip,
			"GTP %lld needs one distributed-optimizer instance, "
			"not %lld", p->gtp, instances);
		diag_hint(d, "set num_distributed_optimizer_instances: 1, or "
			  "turn GTP off");
	}
}

/* The dense rank grid, and the expert grid where ETP x EP x EG x PP
 * divides the world (else GT304). */
static void make_grids(struct plan *p, const struct cfg_node *root,
		       struct diag_list *diags)
{
	long long size[LAY_NAXES];

	p->dp_replicate = p->world / p->model_size;
	p->lanes = p->dp_replicate * p->gtp;
	size[LAY_TP] = p->tp;
	size[LAY_CP] = p->cp;
	size[LAY_GTP] = p->gtp;
	size[LAY_EP] = 1;
	size[LAY_DP] = p->dp_replicate;
	size[LAY_PP] = p->pp;
	lay_grid_init(&p->dense, &p->order, size);
	p->grid_ok = 1;

	long long ef[] = { p->etp, p->ep, p->egtp, p->pp };
	long long em = ck_prod_sat(ef, 4);
	if (p->world % em) {
		struct factor f[] = {
			{ "ETP", KEY_ETP, p->etp, NULL },
			{ "EP", KEY_EP, p->ep, NULL },
			{ "EG", KEY_EXPERT_SHARDS,
			  p->egtp, "(the expert weight shards here / ETP)" },
			{ "PP", KEY_PP, p->pp, NULL },
		};
		report_world(p, root, "GT304", f, 4, diags);
	} else {
		struct lay_order eo;

		p->edp = p->world / em;
		lay_order_expert(&p->order, &eo);
		size[LAY_TP] = p->etp;
		size[LAY_CP] = 1;
		size[LAY_GTP] = p->egtp;
		size[LAY_EP] = p->ep;
		size[LAY_DP] = p->edp;
		lay_grid_init(&p->expert, &eo, size);
		p->expert_grid_ok = 1;
	}
}

/* The pipeline split gtplan-run follows (0: unset, as Megatron's null). */
static void read_pipeline_split(struct plan *p, const struct cfg_node *root)
{
	struct plan_rt_model *m = &p->runtime.model;
	long long v = 0;

	m->first_stage_layers = p->set.first_stage_layers;
	m->last_stage_layers = p->set.last_stage_layers;
	m->virtual_stages = cfg_int(root, KEY_MEG
			"virtual_pipeline_model_parallel_size", &v) == 1 &&
			v > 0 ? v : 0;
}

/* The decoder gtplan-run trains (struct plan_rt_model): the named model's
 * shape (p->model) when it is known, gtplan.runtime's otherwise. */
static void read_runtime_model(struct plan *p, const struct cfg_node *root)
{
	struct plan_rt_model *m = &p->runtime.model;
	const struct plan_runtime *rt = &p->runtime;
	const struct model_shape *ms = &p->model;
	long long layers = 0;
	const char *cp_comm = NULL;
	int b;

	memset(m, 0, sizeof(*m));
	m->rope_theta = PLAN_RT_ROPE_THETA;
	m->norm_eps = PLAN_RT_NORM_EPS;
	m->sequence_parallel = p->set.sequence_parallel;
	/* Megatron's TransformerConfig.cp_comm_type defaults to "p2p" */
	b = cfg_str(root, KEY_MEG "cp_comm_type", &cp_comm);
	if (b == 0)
		cp_comm = "p2p";
	else if (b < 0) /* Megatron's per-layer list (hierarchical CP) */
		cp_comm = "per-layer";
	snprintf(m->cp_comm_type, sizeof(m->cp_comm_type), "%s", cp_comm);
	read_pipeline_split(p, root);
	if (!ms->known) {
		snprintf(m->name, sizeof(m->name), "gtplan.runtime");
		m->hidden = rt->hidden;
		m->ffn = rt->ffn;
		m->layers = rt->layers;
		m->vocab = rt->vocab;
		m->heads = PLAN_RT_HEADS;
		m->kv_heads = PLAN_RT_KV_HEADS;
		m->head_dim = rt->hidden / PLAN_RT_HEADS;
		return;
	}
	snprintf(m->name, sizeof(m->name), "%s", ms->name);
	m->hidden = ms->hidden_size;
	m->ffn = ms->ffn_hidden_size;
	m->layers = ms->num_layers;
	/* gtplan.runtime.layers cuts the model */
	if (cfg_int(root, "gtplan.runtime.layers", &layers) == 1 &&
	    layers > 0 && layers < m->layers)
		m->layers = layers;
	m->vocab = ms->vocab_size;
	m->heads = ms->num_attention_heads;
	m->kv_heads = model_kv_heads(ms);
	m->head_dim = model_head_dim(ms);
	m->tie_embeddings = ms->share_embeddings_and_output_weights;
	m->qkv_bias = ms->add_qkv_bias || ms->add_bias_linear;
	m->qk_norm = ms->qk_layernorm;
	if (ms->rotary_base > 0)
		m->rope_theta = (double)ms->rotary_base;
	if (ms->layernorm_epsilon > 0)
		m->norm_eps = ms->layernorm_epsilon;
	m->moe = ms->num_moe_experts > 0;
}

static int build(struct plan *p, const struct cfg_node *root,
		 const char *config_name, struct diag_list *diags)
{
	char path[1024] = "";
	int ok = 1, megatron = 0;

	p->config_name = strdup(config_name);
	if (!p->config_name || read_order(p, root, diags))
		return -1;
	find_remat_keys(root, path, sizeof(path), 0, diags);
	read_batches(p, root);
	read_runtime(p, root);

	if (cfg_bool(root, KEY_MEG_ENABLED, &megatron) < 0)
		megatron = 0;
	read_sizes(p, root, &ok, diags);
	p->sizes_refused = sizes_refused(root, p->set.megatron);
	if (!megatron)
		check_gtp_off(root, diags);
	check_optimizer_instances(p, root, diags);

	if (plan_derive_resources(p, root, diags))
		return ok ? -1 : 0;
	if (p->world > PLAN_MAX_WORLD) {
		struct diag *d = diag_add(diags, "GT308",
			cfg_loc(root, "cluster.num_nodes"), "cluster.num_nodes",
			"%lld training GPUs exceed gtplan's limit of %lld",
			p->world, PLAN_MAX_WORLD);
		diag_hint(d, "check cluster.num_nodes and "
			  "cluster.gpus_per_node; the largest world gtplan "
			  "plans is %lld GPUs", PLAN_MAX_WORLD);
		return 0;
	}
	/* four sizes of up to 2^20 each: saturated, never wrapped (a wrapped
	 * product once divided by zero) */
	{
		long long f[] = { p->tp, p->cp, p->gtp, p->pp };

		p->model_size = ck_prod_sat(f, 4);
	}
	if (ok && p->world % p->model_size) {
		struct factor f[] = {
			{ "TP", KEY_TP, p->tp, NULL },
			{ "CP", KEY_MEG "context_parallel_size", p->cp, NULL },
			{ "G", KEY_SHARDS, p->gtp,
			  "(the weight shards here / TP)" },
			{ "PP", KEY_PP, p->pp, NULL },
		};
		report_world(p, root, "GT303", f, 4, diags);
		ok = 0;
	}
	if (!ok)
		return 0;
	make_grids(p, root, diags);
	check_batches(p, root, diags);
	return 0;
}

/* The sizes and planning rules, then the model (its findings are the
 * framework rules', reported here in their place) and the framework rules
 * (framework.h). */
int plan_build(struct plan *p, const struct cfg_node *root,
	       const char *config_name, struct diag_list *diags)
{
	int rc;

	settings_read(&p->set, root);
	/* before the layout: without its sizes build() stops early */
	fw_launch_notes(root, p->set.megatron, fw_algorithm(root), diags);
	rc = build(p, root, config_name, diags);
	if (rc)
		return rc;
	p->model_rc = model_resolve(root, &p->model, diags);
	read_runtime_model(p, root);
	framework_check(p, root, diags);
	return 0;
}

void plan_rank_place(const struct plan *p, long long r, long long *node,
		     long long *local)
{
	long long g = p->train.gpus_per_node;

	/* Without a GPU count per node every rank is on one node. */
	if (g < 1) {
		*node = 0;
		*local = r;
		return;
	}
	*node = r / g;
	*local = r % g;
}
