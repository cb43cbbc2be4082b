/*
 * trace_shape: the model shape a trace plays the calls with (trace_int.h).
 *
 * The simulator estimates a call only when the model's shape is known
 * (cost.h); a trace still draws a timeline when it is not, with the best
 * shape the plan has, and says in its otherData which one and whether
 * its sizes are estimates. The order of the collectives does not depend
 * on the sizes (program.h), only their byte counts and the compute do.
 */
#include <stdio.h>
#include <string.h>

#include "program.h"
#include "trace_int.h"

/* gtplan-run's decoder (runtime.model): its programs (program_rt.h) are
 * exact; they hold no compute, so the timeline is the collectives'. */
static void runtime_shape(const struct plan *p, struct model_shape *m)
{
	const struct plan_rt_model *rt = &p->runtime.model;

	prog_default_shape(m);
	snprintf(m->name, sizeof(m->name), "%s", "runtime.model");
	if (rt->layers > 0)
		m->num_layers = rt->layers;
	if (rt->hidden > 0)
		m->hidden_size = rt->hidden;
	if (rt->ffn > 0)
		m->ffn_hidden_size = rt->ffn;
	if (rt->heads > 0)
		m->num_attention_heads = rt->heads;
	if (rt->kv_heads > 0)
		m->num_query_groups = rt->kv_heads;
	m->kv_channels = rt->head_dim > 0 ? rt->head_dim :
			 m->hidden_size / m->num_attention_heads;
	if (rt->vocab > 0)
		m->vocab_size = rt->vocab;
	m->share_embeddings_and_output_weights = rt->tie_embeddings;
	m->add_qkv_bias = rt->qkv_bias;
}

/* The catalog's or gtplan.model's sizes of a model whose layers are not
 * uniform transformer layers, taken as uniform layers (as cost_mem.c's
 * memory estimate takes them). 0 when the sizes do not suffice. */
static int approx_shape(const struct model_shape *src, struct model_shape *m)
{
	if (!src->shape_known ||
	    (src->ffn_hidden_size <= 0 && src->moe_ffn_hidden_size <= 0))
		return 0;
	*m = *src;
	m->known = 1;
	if (!m->ffn_hidden_size)
		m->ffn_hidden_size = m->moe_ffn_hidden_size;
	if (m->num_moe_experts && !m->moe_ffn_hidden_size)
		m->moe_ffn_hidden_size = m->ffn_hidden_size;
	if (m->num_moe_experts && !m->moe_router_topk)
		m->moe_router_topk = 2;
	if (!m->num_query_groups)
		m->num_query_groups = m->num_attention_heads;
	if (!m->kv_channels)
		m->kv_channels = model_head_dim(src);
	/* Mamba and attention layers alike count as transformer layers */
	m->hybrid_layer_pattern[0] = '\0';
	m->multi_latent_attention = 0;
	return 1;
}

/* gtplan's default shape with the dense sizes gtplan.model gives: the
 * number of layers, the widths, the heads and the vocabulary. */
static void default_shape(const struct model_shape *src, struct model_shape *m)
{
	prog_default_shape(m);
	if (src->num_layers > 0)
		m->num_layers = src->num_layers;
	if (src->hidden_size > 0) {
		m->hidden_size = src->hidden_size;
		m->ffn_hidden_size = 4 * src->hidden_size;
	}
	if (src->ffn_hidden_size > 0)
		m->ffn_hidden_size = src->ffn_hidden_size;
	if (src->num_attention_heads > 0) {
		m->num_attention_heads = src->num_attention_heads;
		m->num_query_groups = src->num_attention_heads;
	}
	if (src->num_query_groups > 0 &&
	    m->num_attention_heads % src->num_query_groups == 0)
		m->num_query_groups = src->num_query_groups;
	if (m->num_attention_heads % m->num_query_groups)
		m->num_query_groups = m->num_attention_heads;
	m->kv_channels = src->kv_channels > 0 ? src->kv_channels :
			 m->hidden_size / m->num_attention_heads > 0 ?
			 m->hidden_size / m->num_attention_heads : 1;
	if (src->vocab_size > 0)
		m->vocab_size = src->vocab_size;
}

void trace_shape_pick(const struct plan *p, const struct sim_report *r,
		      struct trace_shape *ts)
{
	memset(ts, 0, sizeof(*ts));
	if (r->cost.known) {
		ts->m = r->cost.m;
		ts->source = "the config's model";
		ts->approximate = r->model.approximate;
	} else if (r->cost.o.runtime_model) {
		runtime_shape(p, &ts->m);
		ts->source = "runtime.model (gtplan-run's decoder; its programs "
			     "hold collectives only, no compute)";
	} else if (approx_shape(&r->model, &ts->m)) {
		ts->source = "the model's sizes as uniform transformer layers";
		ts->approximate = 1;
	} else {
		default_shape(&r->model, &ts->m);
		ts->source = "gtplan's default shape (4 layers, hidden 1024), "
			     "with the sizes gtplan.model gives";
		ts->approximate = 1;
	}
	ts->m.known = 1;
}

void trace_shape_write(struct jw *w, const struct trace_shape *ts)
{
	const struct model_shape *m = &ts->m;

	jw_obj_begin(w, 0);
	jw_key(w, "approximate");
	jw_bool(w, ts->approximate);
	jw_key(w, "ffn_hidden_size");
	jw_int(w, m->ffn_hidden_size);
	jw_key(w, "hidden_size");
	jw_int(w, m->hidden_size);
	jw_key(w, "num_attention_heads");
	jw_int(w, m->num_attention_heads);
	jw_key(w, "num_layers");
	jw_int(w, m->num_layers);
	jw_key(w, "num_moe_experts");
	jw_int(w, m->num_moe_experts);
	jw_key(w, "source");
	jw_str(w, ts->source);
	jw_key(w, "vocab_size");
	jw_int(w, m->vocab_size);
	jw_obj_end(w);
}
