/*
 * ckpt_tensor: the tensors of a Megatron checkpoint of one model (see
 * ckpt.h), as Megatron's GPTModel names them in its sharded state dict
 * (megatron/core/transformer/transformer_layer.py, mlp.py,
 * megatron/core/models/gpt/gpt_model.py).
 */
#include "ckpt.h"

#include <stdio.h>
#include <string.h>

static void put(struct ckpt_tensor *v, size_t *n, enum ckpt_part part,
		enum ckpt_kind kind, const char *name, const char *key_fmt,
		long long rows, long long cols)
{
	struct ckpt_tensor *t = &v[(*n)++];

	t->part = part;
	t->kind = kind;
	t->name = name;
	snprintf(t->key, sizeof(t->key), key_fmt, name);
	t->rows = rows;
	t->cols = cols;
}

static enum ckpt_kind kind_of(const struct model_weight *w)
{
	return w->split == SPLIT_COLUMN ? CKPT_COLUMN : CKPT_ROW;
}

size_t ckpt_tensors(const struct model_shape *m, int experts,
		    struct ckpt_tensor *v)
{
	struct model_weight w[MODEL_MAX_WEIGHTS];
	size_t nw = model_layer_weights(m, w, MODEL_MAX_WEIGHTS), n = 0;
	long long h = m->hidden_size;

	if (!nw)
		return 0;
	for (size_t i = 0; i < nw; i++)
		if (w[i].split != SPLIT_NONE)
			put(v, &n, CKPT_PART_LINEAR, kind_of(&w[i]), w[i].name,
			    strcmp(w[i].name, "linear_qkv") == 0 ||
			    strcmp(w[i].name, "linear_proj") == 0 ?
			    "self_attention.%s.weight" : "mlp.%s.weight",
			    w[i].rows, w[i].cols);
	put(v, &n, CKPT_PART_NORM, CKPT_NORM, "input_layernorm", "%s.weight",
	    h, 1);
	put(v, &n, CKPT_PART_NORM, CKPT_NORM, "pre_mlp_layernorm",
	    "%s.weight", h, 1);
	nw = experts ? model_expert_weights(m, w, MODEL_MAX_WEIGHTS) : 0;
	for (size_t i = 0; i < nw; i++)
		if (w[i].split != SPLIT_NONE)
			put(v, &n, CKPT_PART_EXPERT, kind_of(&w[i]), w[i].name,
			    "mlp.%s.weight", w[i].rows, w[i].cols);
	if (nw && m->add_bias_linear)
		put(v, &n, CKPT_PART_EXPERT_BIAS, CKPT_NORM,
		    "experts.linear_fc2.bias", "mlp.%s", h, 1);
	put(v, &n, CKPT_PART_FIRST, CKPT_VOCAB, "embedding.word_embeddings",
	    "%s.weight", m->vocab_size, h);
	if (!m->share_embeddings_and_output_weights)
		put(v, &n, CKPT_PART_LAST, CKPT_VOCAB, "output_layer",
		    "%s.weight", m->vocab_size, h);
	put(v, &n, CKPT_PART_LAST, CKPT_NORM, "decoder.final_layernorm",
	    "%s.weight", h, 1);
	return n;
}
