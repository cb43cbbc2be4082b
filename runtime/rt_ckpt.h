/*
 * rt_ckpt: sharded checkpoints of the runtime model (--save, --load), with
 * Megatron dist_checkpointing's semantics (docs/design.md §2.6, §4.5).
 *
 * A checkpoint is a directory:
 *   shard-RRRRR.bin  one per writing world rank R: its pieces, raw float32
 *                    in the host's byte order (recorded), row-major;
 *   metadata.json    written by world rank 0 after every piece file is
 *                    in place ("gtplan-ckpt/1", keys sorted): step, seed,
 *                    model sizes, the data settings (seq_len,
 *                    global_batch), the layout it was saved under, the
 *                    optimizer (name, step), the files (name, rank, bytes)
 *                    and every tensor: key, logical shape, dtype, pieces.
 * A piece is the logical region one rank's shard covers: its TP slice
 * (row0, col0) and GTP rows [g S, (g+1) S) of it, clipped to the real rows
 * (padding is never saved), with its offset in the logical tensor, its
 * shape, file, byte offset and FNV-1a 64 checksum. Only the main replica
 * writes: for the sharded weights the rank with dp_replicate and cp
 * coordinates 0, for the replicated norms the rank whose coordinates are
 * all 0, for the TP-split qkv bias the ranks with gtp 0. Keys are
 * Megatron's TE-spec names ("embedding.word_embeddings.weight",
 * "decoder.layers.L.self_attention.linear_qkv.weight", ...,
 * "decoder.layers.L.mlp.linear_fc1.layer_norm_weight",
 * "decoder.final_layernorm.weight", "output_layer.weight"), except that
 * linear_fc1 is two keys, "....linear_fc1.gate.weight" and
 * "....linear_fc1.up.weight" (rt_ckpt_index.c says why); Adam's m and v
 * are the tensors
 * "optimizer.state.exp_avg.KEY" and "optimizer.state.exp_avg_sq.KEY" with
 * the same pieces.
 *
 * Every piece file is written to NAME.tmp and renamed; rank 0 removes an
 * old metadata.json before any rank writes and writes the new one (tmp +
 * rename) last, so a save that stops part-way leaves no checkpoint that
 * --load accepts. Before writing it, rank 0 proves that the pieces cover
 * every element of every tensor exactly once (as dist_checkpointing's
 * validate_sharding_integrity does); --load proves the same of the
 * metadata it reads. rt_ckpt_index holds the index in memory and reads
 * and writes metadata.json.
 */
#ifndef GTPLAN_RT_CKPT_H
#define GTPLAN_RT_CKPT_H

#include "rt_model.h"
#include "rt_plan.h"

/* Saves m (weights, Adam's m and v, the step) to `dir`, created when
 * missing (its parent must exist); files of an earlier save there are
 * replaced. Collective over the world; every rank returns the same
 * status (RT_EIO: cannot write; RT_ECKPT: the pieces fail validation). */
int rt_ckpt_save(struct rt_model *m, const struct rt_plan *p,
		 const char *dir);

/* Loads the checkpoint in `dir` into m, an initialised model of any layout
 * of the same sizes: each rank reads the logical region of every tensor
 * it holds from the pieces that overlap it, and sets m->step. Refuses (one
 * message with the fix) a missing or damaged metadata file, another
 * format, another model size, another seed, seq_len or global batch (the
 * data would not continue where it stopped), a missing, truncated or
 * corrupt piece file. Collective; every rank returns the same status. */
int rt_ckpt_load(struct rt_model *m, const struct rt_plan *p,
		 const char *dir);

#endif
