/*
 * rt_export: refit export (gtplan-run --export): the training ranks
 * rebuild every full logical weight, as NeMo-RL's refit exports Hugging
 * Face weights to the inference engine, and world rank 0 writes them as a
 * safetensors file.
 *
 * The gather order is gtplan.stack.refit_gather (docs/design.md §2.5):
 *   gtp_then_tp  GTP all-gather first (the TP slice, padding stripped),
 *                then TP: the correct weights (what rt_model_dump writes);
 *   tp_then_gtp  TP first, then GTP: a column-parallel or vocab weight comes
 *                back with all rows in the wrong order (pieces g-major:
 *                TP=2, G=3, 24 rows: 0-3, 12-15, 4-7, 16-19, ...); a
 *                row-parallel one (TP splits its columns) comes back right;
 *   tp_only      TP only (Bridge's export today): each weight is the TP
 *                gather of the GTP shards of rank 0's GTP coordinate:
 *                [R/G, k] instead of [R, k] (column-parallel), [S, k]
 *                rows of a row-parallel one.
 * In every order the GTP padding and the vocabulary padding are dropped
 * (each shard knows which of its rows are logical), so the wrong orders
 * give the logical rows they reach, in the order they reach them.
 *
 * The file: an 8-byte little-endian header length, the JSON header (keys
 * sorted: "__metadata__" {"format": "pt", "gtplan.refit_gather": ORDER},
 * then per tensor {"data_offsets": [begin, end], "dtype": "F32", "shape"}),
 * padded with spaces to a multiple of 8 bytes, then the tensors' fp32
 * little-endian data in the header's (sorted name) order. Names and row
 * orders are Hugging Face Llama's (Megatron-Bridge's LlamaBridge mapping):
 * model.embed_tokens.weight, per layer input_layernorm,
 * self_attn.{q,k,v}_proj (the interleaved linear_qkv split back by query
 * group; biases likewise), self_attn.{q,k}_norm (QK-norm),
 * self_attn.o_proj, post_attention_layernorm, mlp.{gate,up}_proj (the TP
 * shards' [gate_t; up_t] reassembled), mlp.down_proj, then
 * model.norm.weight and lm_head.weight unless tied. A gather order that
 * does not rebuild every row (tp_only) keeps linear_qkv and linear_fc1
 * fused, as self_attn.qkv_proj and mlp.gate_up_proj (vLLM's names).
 * With a directory (--export DIR), the file is DIR/model.safetensors and
 * DIR/config.json describes the model for transformers
 * (LlamaForCausalLM; Qwen2ForCausalLM with a qkv bias, Qwen3ForCausalLM
 * with QK-norm; transformers has no class with both, which a note says).
 *
 * Ownership: rt_export_write borrows the model and the caller's FILE
 * (which it neither closes nor owns), allocates only for the call and
 * frees it on every path; rt_gather_name's strings are static.
 */
#ifndef GTPLAN_RT_EXPORT_H
#define GTPLAN_RT_EXPORT_H

#include <stdio.h>

#include "rt_model.h"

enum rt_gather { RT_GATHER_GTP_THEN_TP, RT_GATHER_TP_THEN_GTP,
		 RT_GATHER_TP_ONLY };

/* "gtp_then_tp", "tp_then_gtp", "tp_only" <-> the enum; -1 when unknown. */
int rt_gather_parse(const char *name, enum rt_gather *out);
const char *rt_gather_name(enum rt_gather g);

/* Gathers every weight in order `how` and, on world rank 0, writes the
 * safetensors file to f (binary; NULL on other ranks) and, when dir is not
 * NULL, dir/config.json. Collective. */
int rt_export_write(struct rt_model *m, enum rt_gather how, FILE *f,
		    const char *dir);

#endif
