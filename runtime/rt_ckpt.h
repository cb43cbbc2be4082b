/*
 * rt_ckpt: sharded checkpoints of the runtime model (--save, --load), with
 * Megatron dist_checkpointing's semantics (docs/design.md §2.6, §4.5).
 *
 * --save DIR keeps one step directory per save (rt_ckpt_dir.h: published
 * by a rename, named by DIR/latest, written last); a step directory holds:
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
 * Every file is fsynced before the step directory is published, so a
 * save that stops part-way (a crash, kill -9 of any rank or of the job)
 * leaves the previous checkpoint as DIR/latest names it. Before writing
 * the metadata, rank 0 proves that the pieces cover every element of
 * every tensor exactly once (as dist_checkpointing's
 * validate_sharding_integrity does); --load proves the same of the
 * metadata it reads. rt_ckpt_index holds the index in memory and reads
 * and writes metadata.json.
 *
 * Ownership: save and load borrow the model and plan, allocate only for
 * the call and free it on every path; nothing is handed to the caller.
 */
#ifndef GTPLAN_RT_CKPT_H
#define GTPLAN_RT_CKPT_H

#include "rt_model.h"
#include "rt_plan.h"

/* Saves m (weights, Adam's m and v, the step) to a new step directory of
 * `dir` (created when missing; its parent must exist), publishes it as
 * DIR/latest and then keeps the newest `keep` checkpoints (0: all; see
 * rt_ckpt_dir_publish). Collective over the world; every rank returns the
 * same status (RT_EIO: cannot write; RT_ECKPT: the pieces fail
 * validation); on failure DIR/latest still names the previous save. */
int rt_ckpt_save(struct rt_model *m, const struct rt_plan *p,
		 const char *dir, int keep);

/* Loads the checkpoint in `dir` (the step directory DIR/latest names, or
 * dir itself when it holds no `latest`) into m, an initialised model of
 * any layout of the same sizes with m->sgd set: each rank reads the
 * logical region of every tensor it holds from the pieces that overlap
 * it, and sets m->step. Refuses (one message with the fix) a missing or
 * damaged metadata file or `latest`, another format, another model size,
 * another seed, seq_len or global batch (the data would not continue
 * where it stopped), another optimizer or an optimizer block that
 * disagrees with the step, a missing, truncated, corrupt or non-regular
 * piece file. Collective; every rank returns the same status. */
int rt_ckpt_load(struct rt_model *m, const struct rt_plan *p,
		 const char *dir);

#endif
