/*
 * plan_json: the plan as JSON ("gtplan-plan/1", schemas/plan.schema.json).
 *
 * Keys are sorted at every level. The top-level structure is indented by two
 * spaces; each rank object and each group is one compact line, so a
 * 1M-rank plan (~300 MB) is streamed in about a second with constant memory.
 * Ranks and groups are computed on the fly from the grids (layout.h); the
 * hot loops use odometers instead of divisions.
 */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "jsonw.h"

#define AXIS_BIT(a) (1u << (unsigned)(a))

/* Sizes that were not derived are 0 in the plan and null in the JSON. */
static void size_or_null(struct jw *w, const char *key, long long v)
{
	jw_key(w, key);
	if (v > 0)
		jw_int(w, v);
	else
		jw_null(w);
}

static void write_gpus(struct jw *w, const char *key, const struct plan_gpus *g)
{
	jw_key(w, key);
	jw_obj_begin(w, 0);
	jw_key(w, "gpus_per_node");
	jw_int(w, g->gpus_per_node);
	jw_key(w, "nodes");
	jw_int(w, g->nodes);
	jw_obj_end(w);
}

static void write_resources(struct jw *w, const struct plan *p)
{
	jw_key(w, "resources");
	jw_obj_begin(w, 0);
	write_gpus(w, "cluster", &p->cluster);
	jw_key(w, "colocated");
	jw_bool(w, p->colocated);
	write_gpus(w, "inference", &p->inference);
	write_gpus(w, "reward_model", &p->reward);
	write_gpus(w, "teachers", &p->teachers);
	write_gpus(w, "train", &p->train);
	jw_obj_end(w);
}

static void write_batch(struct jw *w, const struct plan *p)
{
	long long per_lane = 0, micro_batches = 0;

	if (p->grid_ok && p->lanes > 0 && p->global_batch > 0 &&
	    p->global_batch % p->lanes == 0) {
		per_lane = p->global_batch / p->lanes;
		if (p->micro_batch > 0 && per_lane % p->micro_batch == 0)
			micro_batches = per_lane / p->micro_batch;
	}
	jw_key(w, "batch");
	jw_obj_begin(w, 0);
	size_or_null(w, "global", p->global_batch);
	size_or_null(w, "micro", p->micro_batch);
	size_or_null(w, "micro_batches_per_lane", micro_batches);
	size_or_null(w, "per_lane", per_lane);
	jw_obj_end(w);
}

/* A real with 9 significant digits. */
static void write_double(struct jw *w, const char *key, double v)
{
	jw_key(w, key);
	jw_real_g(w, v, 9);
}

/* runtime.model: the decoder gtplan-run trains (struct plan_rt_model). */
static void write_runtime_model(struct jw *w, const struct plan_rt_model *m)
{
	jw_key(w, "model");
	jw_obj_begin(w, 0);
	jw_key(w, "cp_comm_type");
	jw_str(w, m->cp_comm_type);
	size_or_null(w, "ffn", m->ffn);
	size_or_null(w, "head_dim", m->head_dim);
	size_or_null(w, "heads", m->heads);
	size_or_null(w, "hidden", m->hidden);
	size_or_null(w, "kv_heads", m->kv_heads);
	size_or_null(w, "layers", m->layers);
	jw_key(w, "moe");
	jw_bool(w, m->moe);
	jw_key(w, "name");
	jw_str(w, m->name);
	write_double(w, "norm_eps", m->norm_eps);
	size_or_null(w, "pp_first_layers", m->first_stage_layers);
	size_or_null(w, "pp_last_layers", m->last_stage_layers);
	size_or_null(w, "pp_virtual_stages", m->virtual_stages);
	jw_key(w, "qk_norm");
	jw_bool(w, m->qk_norm);
	jw_key(w, "qkv_bias");
	jw_bool(w, m->qkv_bias);
	write_double(w, "rope_theta", m->rope_theta);
	jw_key(w, "sequence_parallel");
	jw_bool(w, m->sequence_parallel);
	jw_key(w, "tie_embeddings");
	jw_bool(w, m->tie_embeddings);
	size_or_null(w, "vocab", m->vocab);
	jw_obj_end(w);
}

/* gtplan.runtime as read (defaults filled in). lr is written with 15
 * significant digits, enough to give back the value as typed. */
static void write_runtime(struct jw *w, const struct plan *p)
{
	const struct plan_runtime *rt = &p->runtime;

	jw_key(w, "runtime");
	jw_obj_begin(w, 0);
	jw_key(w, "dtype");
	jw_str(w, rt->dtype ? rt->dtype : "fp32");
	size_or_null(w, "ffn", rt->ffn);
	size_or_null(w, "hidden", rt->hidden);
	size_or_null(w, "layers", rt->layers);
	jw_key(w, "lr");
	jw_real_g(w, rt->lr > 0 ? rt->lr : PLAN_RT_LR, 15);
	write_runtime_model(w, &rt->model);
	jw_key(w, "prefetch");
	jw_bool(w, rt->prefetch);
	jw_key(w, "seed");
	jw_int(w, rt->seed);
	size_or_null(w, "seq_len", rt->seq_len);
	size_or_null(w, "steps", rt->steps);
	size_or_null(w, "vocab", rt->vocab);
	jw_obj_end(w);
}

static void write_sizes(struct jw *w, const struct plan *p)
{
	jw_key(w, "sizes");
	jw_obj_begin(w, 0);
	size_or_null(w, "cp", p->cp);
	size_or_null(w, "dp", p->grid_ok ? p->lanes : 0);
	size_or_null(w, "dp_replicate", p->grid_ok ? p->dp_replicate : 0);
	size_or_null(w, "edp", p->expert_grid_ok ? p->edp : 0);
	size_or_null(w, "egtp", p->egtp);
	size_or_null(w, "ep", p->ep);
	size_or_null(w, "etp", p->etp);
	size_or_null(w, "expert_shards", p->expert_shards);
	size_or_null(w, "gtp", p->gtp);
	size_or_null(w, "model_size", p->model_size);
	size_or_null(w, "pp", p->pp);
	size_or_null(w, "shards", p->shards);
	size_or_null(w, "tp", p->tp);
	jw_obj_end(w);
}

static void write_order(struct jw *w, const char *key,
			const struct lay_order *o)
{
	char buf[64];

	jw_key(w, key);
	if (lay_order_valid(o))
		jw_str(w, lay_order_str(o, buf, sizeof(buf)));
	else
		jw_null(w);
}

/* ---- ranks ------------------------------------------------------------ */

static void raw_field(struct jw *w, const char *lit, size_t n, long long v)
{
	jw_raw(w, lit, n);
	jw_raw_int(w, v);
}

#define FIELD(w, lit, v) raw_field((w), "" lit, sizeof(lit) - 1, (v))

static void write_ranks(struct jw *w, const struct plan *p)
{
	const unsigned lane_axes = AXIS_BIT(LAY_GTP) | AXIS_BIT(LAY_DP);
	long long r, c[LAY_NAXES], e[LAY_NAXES], node, local, lane;
	int expert = p->expert_grid_ok && p->expert.world == p->dense.world;

	jw_key(w, "ranks");
	jw_arr_begin(w, 0);
	for (r = 0; p->grid_ok && r < p->dense.world && !w->err; r++) {
		lay_coords(&p->dense, r, c);
		lay_group_of_coords(&p->dense, lane_axes, c, NULL, &lane);
		plan_rank_place(p, r, &node, &local);
		jw_item(w);
		FIELD(w, "{\"cp\":", c[LAY_CP]);
		FIELD(w, ",\"dp_replicate\":", c[LAY_DP]);
		if (expert) {
			lay_coords(&p->expert, r, e);
			FIELD(w, ",\"edp\":", e[LAY_DP]);
			FIELD(w, ",\"egtp\":", e[LAY_GTP]);
			FIELD(w, ",\"ep\":", e[LAY_EP]);
			FIELD(w, ",\"etp\":", e[LAY_TP]);
		} else {
			jw_lit(w, ",\"edp\":null,\"egtp\":null,\"ep\":null,"
				  "\"etp\":null");
		}
		FIELD(w, ",\"gtp\":", c[LAY_GTP]);
		FIELD(w, ",\"lane\":", lane);
		FIELD(w, ",\"local_rank\":", local);
		FIELD(w, ",\"node\":", node);
		FIELD(w, ",\"pp\":", c[LAY_PP]);
		FIELD(w, ",\"rank\":", r);
		FIELD(w, ",\"tp\":", c[LAY_TP]);
		jw_lit(w, "}");
	}
	jw_arr_end(w);
}

/* ---- groups ----------------------------------------------------------- */

/* Counts through the coordinates of a set of axes, earliest axis in the
 * order fastest, keeping the rank offset sum(coord * stride) up to date. */
struct odometer {
	int n;
	long long size[LAY_NAXES], stride[LAY_NAXES], digit[LAY_NAXES];
	long long off;
};

static void odo_init(struct odometer *o, const struct lay_grid *g,
		     unsigned axes)
{
	int k;

	memset(o, 0, sizeof(*o));
	for (k = 0; k < LAY_NAXES; k++) {
		enum lay_axis a = g->order.axis[k];

		if ((axes & AXIS_BIT(a)) && g->size[a] > 1) {
			o->size[o->n] = g->size[a];
			o->stride[o->n] = g->stride[a];
			o->n++;
		}
	}
}

static void odo_next(struct odometer *o)
{
	int k;

	for (k = 0; k < o->n; k++) {
		o->off += o->stride[k];
		if (++o->digit[k] < o->size[k])
			return;
		o->off -= o->size[k] * o->stride[k];
		o->digit[k] = 0;
	}
}

static void write_group_kind(struct jw *w, const struct lay_grid *g,
			     const struct lay_group_kind *kind)
{
	unsigned all = AXIS_BIT(LAY_NAXES) - 1;
	long long n = lay_group_count(g, kind->axes);
	long long size = lay_group_size(g, kind->axes);
	long long idx, i;
	struct odometer groups, first, members;

	/* Group `idx` starts at the offset of its outside-axes digits;
	 * members add the offsets of the inside-axes digits. */
	odo_init(&groups, g, all & ~kind->axes);
	odo_init(&first, g, kind->axes);
	jw_key(w, kind->name);
	jw_arr_begin(w, 0);
	for (idx = 0; idx < n && !w->err; idx++, odo_next(&groups)) {
		members = first;
		jw_item(w);
		jw_lit(w, "[");
		for (i = 0; i < size; i++, odo_next(&members)) {
			if (i)
				jw_lit(w, ",");
			jw_raw_int(w, groups.off + members.off);
		}
		jw_lit(w, "]");
	}
	jw_arr_end(w);
}

static int kind_name_cmp(const void *a, const void *b)
{
	const struct lay_group_kind *const *x = a, *const *y = b;

	return strcmp((*x)->name, (*y)->name);
}

static void write_groups(struct jw *w, const struct plan *p)
{
	const struct lay_group_kind *sorted[32];
	size_t i, n = 0;

	for (i = 0; i < lay_group_kind_count() && n < 32; i++) {
		const struct lay_group_kind *k = lay_group_kind_at(i);

		if (k->expert ? p->grid_ok && p->expert_grid_ok : p->grid_ok)
			sorted[n++] = k;
	}
	qsort(sorted, n, sizeof(sorted[0]), kind_name_cmp);
	jw_key(w, "groups");
	jw_obj_begin(w, 0);
	for (i = 0; i < n; i++)
		write_group_kind(w, sorted[i]->expert ? &p->expert : &p->dense,
				 sorted[i]);
	jw_obj_end(w);
}

/* ---- diagnostics ------------------------------------------------------ */

/* The findings as `gtplan lint --format json` writes them, without
 * "configs" (base/diag_json.c). */
static void write_diags(struct jw *w, const struct diag_list *l)
{
	size_t i;

	jw_key(w, "diagnostics");
	jw_arr_begin(w, 0);
	for (i = 0; l && i < l->n; i++)
		diag_write_json(w, l, &l->v[i], 0);
	jw_arr_end(w);
}

/* ---- the simulated calls ------------------------------------------------ */

/* Which ranks the driver calls: {axis: 0} for each rank coordinate that
 * must be 0 (keys sorted; "dp" is the rank's dp_replicate coordinate),
 * {} when every rank is called, null when no set of axes says it. */
static void write_called_when(struct jw *w, const struct sim_call_result *x)
{
	static const struct {
		const char *key;
		enum lay_axis a;
	} axes[] = {
		{ "cp", LAY_CP }, { "dp", LAY_DP }, { "gtp", LAY_GTP },
		{ "pp", LAY_PP }, { "tp", LAY_TP },
	};

	if (!x->called_when_ok) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w, 1);
	for (size_t i = 0; i < sizeof(axes) / sizeof(axes[0]); i++) {
		if (!(x->called_when & (1u << axes[i].a)))
			continue;
		jw_key(w, axes[i].key);
		jw_int(w, 0);
	}
	jw_obj_end(w);
}

/* A call's findings: the diagnostics whose seq is in [first_diag,
 * first_diag + n_diags) (seq numbers are the positions sim_run gave them),
 * as code and message, in the diagnostics' order. */
static void write_call_findings(struct jw *w, const struct sim_call_result *x,
				const struct diag_list *l)
{
	jw_key(w, "findings");
	jw_arr_begin(w, 0);
	for (size_t k = 0; l && k < l->n; k++) {
		const struct diag *d = &l->v[k];

		if (d->seq < x->first_diag ||
		    d->seq >= x->first_diag + x->n_diags)
			continue;
		jw_obj_begin(w, 1);
		jw_key(w, "code");
		jw_str(w, d->rule ? d->rule->code : "?");
		jw_key(w, "message");
		jw_str(w, d->msg);
		jw_key(w, "severity");
		jw_str(w, diag_severity_name(d->severity));
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* Each call with its dispatch counts, estimate, status and findings. */
static void write_calls(struct jw *w, const struct sim_report *r,
			const struct diag_list *l)
{
	jw_key(w, "calls");
	jw_arr_begin(w, 0);
	for (size_t i = 0; r && i < r->n_res; i++) {
		const struct sim_call_result *x = &r->res[i];

		jw_obj_begin(w, 0);
		jw_key(w, "called_when");
		write_called_when(w, x);
		jw_key(w, "collectives");
		jw_int(w, x->n_ops);
		jw_key(w, "dispatch");
		jw_str(w, calls_dispatch_name(x->call->dispatch));
		jw_key(w, "estimate_ms");
		if (r->est && r->est[i].valid)
			jw_real_f(w, r->est[i].total_us / 1e3, 3);
		else
			jw_null(w);
		write_call_findings(w, x, l);
		jw_key(w, "invoked");
		jw_int(w, x->invoked);
		jw_key(w, "name");
		jw_str(w, x->call->name);
		jw_key(w, "program");
		jw_str(w, calls_program_name(x->call->program));
		jw_key(w, "returned");
		jw_int(w, x->returned);
		jw_key(w, "shards");
		jw_int(w, x->shards);
		jw_key(w, "status");
		jw_str(w, sim_status_name(x->status));
		jw_key(w, "with_data");
		jw_int(w, x->with_data);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/* The checkpoint and stack summaries come with the calls: null when the
 * simulator ran none. */
static int has_calls(const struct sim_report *r)
{
	return r && r->n_res;
}

/* ---- the checkpoint plan ------------------------------------------------- */

static void write_checkpoint(struct jw *w, const struct sim_report *r)
{
	const struct ckpt_summary *c = r ? &r->ckpt : NULL;

	jw_key(w, "checkpoint");
	if (!has_calls(r) || !c->valid) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w, 0);
	jw_key(w, "keys");
	jw_int(w, c->keys);
	jw_key(w, "max_rank_bytes");
	jw_int(w, c->max_rank_bytes);
	jw_key(w, "optimizer");
	jw_obj_begin(w, 0);
	jw_key(w, "assumed");
	jw_bool(w, !c->opt_format_set);
	jw_key(w, "format");
	jw_str(w, c->opt_format ? c->opt_format : "dp_reshardable");
	jw_key(w, "keys");
	jw_int(w, c->opt_keys);
	jw_key(w, "max_rank_bytes");
	jw_int(w, c->max_rank_opt_bytes);
	jw_key(w, "shards");
	jw_int(w, c->opt_shards);
	jw_obj_end(w);
	jw_key(w, "shards");
	jw_int(w, c->shards);
	jw_key(w, "writers");
	jw_int(w, c->writers);
	jw_obj_end(w);
}

/* ---- the train call's memory -------------------------------------------- */

static void write_memory_stage(struct jw *w, const struct cost_mem_stage *s)
{
	static const char *const keys[] = {
		"activations", "gathered_weights", "gradients", "in_flight",
		"layers", "logits", "optimistic", "optimizer", "params",
		"stage", "total", "weights",
	};
	const long long v[] = {
		(long long)s->item[MEM_ACTIVATIONS],
		(long long)s->item[MEM_GATHERED],
		(long long)s->item[MEM_GRADS], s->in_flight, s->layers,
		(long long)s->item[MEM_LOGITS], (long long)s->optimistic,
		(long long)s->item[MEM_OPTIMIZER], s->params, s->stage,
		(long long)s->total, (long long)s->item[MEM_WEIGHTS],
	};

	jw_obj_begin(w, 1);
	for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++) {
		jw_key(w, keys[k]);
		jw_int(w, v[k]);
	}
	jw_obj_end(w);
}

/* Bytes per rank per pipeline stage, as the cost model estimates them;
 * null when the simulator did not run. */
static void write_memory(struct jw *w, const struct sim_report *r)
{
	const struct cost_memory *m = r ? &r->mem : NULL;

	jw_key(w, "memory");
	if (!r || !r->ran) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w, 0);
	jw_key(w, "capacity");
	jw_int(w, (long long)m->capacity);
	jw_key(w, "skipped");
	jw_str(w, m->status == MEM_SKIPPED ? m->skipped : NULL);
	jw_key(w, "stages");
	jw_arr_begin(w, 0);
	for (size_t i = 0; i < m->n_stages; i++)
		write_memory_stage(w, &m->stages[i]);
	jw_arr_end(w);
	jw_key(w, "status");
	jw_str(w, cost_mem_status_name(m->status));
	jw_obj_end(w);
}

/* ---- the document ----------------------------------------------------- */

/* What gtplan-run takes from gtplan.stack: the refit gather order of
 * --export (it reproduces the export bugs of NeMo-RL PR #4512's stack
 * when asked to; docs/design.md §2.5). */
static void write_stack(struct jw *w, const struct sim_report *r)
{
	const char *gather = has_calls(r) ?
			     stack_gather_name(r->stack.refit_gather) : NULL;

	jw_key(w, "stack");
	if (!gather) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w, 0);
	jw_key(w, "preset");
	if (r->stack.preset)
		jw_str(w, r->stack.preset);
	else
		jw_null(w);
	jw_key(w, "refit_gather");
	jw_str(w, gather);
	jw_obj_end(w);
}

int plan_write_json(FILE *f, const struct plan *p, const struct sim_report *sim,
		    const struct diag_list *diags)
{
	struct lay_order expert_order;
	struct jw *w = malloc(sizeof(*w));
	int rc;

	if (!w)
		return -1;
	jw_init(w, f);
	lay_order_expert(&p->order, &expert_order);

	jw_obj_begin(w, 0);
	write_batch(w, p);
	write_calls(w, sim, diags);
	write_checkpoint(w, sim);
	jw_key(w, "config");
	jw_str(w, p->config_name);
	write_diags(w, diags);
	jw_key(w, "driver_layout");
	jw_str(w, p->driver_layout);
	write_order(w, "expert_rank_order", &expert_order);
	jw_key(w, "format");
	jw_str(w, "gtplan-plan/1");
	write_groups(w, p);
	write_memory(w, sim);
	write_order(w, "rank_order", &p->order);
	write_ranks(w, p);
	write_resources(w, p);
	write_runtime(w, p);
	step_write_json(w, sim);
	write_sizes(w, p);
	write_stack(w, sim);
	size_or_null(w, "world_size", p->world);
	jw_obj_end(w);

	rc = jw_finish(w);
	free(w);
	return rc;
}
