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
 * little-endian data in the header's (sorted name) order. Names are Hugging
 * Face Llama-like: model.embed_tokens.weight [V, h],
 * model.layers.L.post_attention_layernorm.weight [h] (the norm before the
 * MLP), model.layers.L.mlp.up_proj.weight [ffn, h] (fc1),
 * model.layers.L.mlp.down_proj.weight [h, ffn] (fc2), model.norm.weight
 * [h]; the output layer is tied to the embedding (no lm_head.weight).
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
 * safetensors file to f (binary; NULL on other ranks). Collective. */
int rt_export_write(struct rt_model *m, enum rt_gather how, FILE *f);

#endif
