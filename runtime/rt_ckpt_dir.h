/*
 * rt_ckpt_dir: where a checkpoint lives, so that a crash (kill -9 of a rank
 * or of the whole job) at any moment of a save leaves the previous complete
 * checkpoint loadable.
 *
 * --save DIR keeps one step directory per save, as Megatron's
 * megatron/training/checkpointing.py keeps iter_NNNNNNN directories and a
 * tracker file written after them:
 *   DIR/iter_NNNNNNN/     a complete checkpoint of step N (rt_ckpt.h:
 *                         metadata.json and the shard files); a re-save
 *                         of the step that `latest` names goes to
 *                         iter_NNNNNNN.1 (and the next one back), so that
 *                         the published directory is never touched;
 *   DIR/iter_NNNNNNN.tmp/ a save in progress: every rank writes its shard
 *                         file there and fsyncs it, rank 0 then writes and
 *                         fsyncs metadata.json and the directory;
 *   DIR/latest            the name of the newest complete step directory
 *                         and a newline, written last (tmp, fsync, rename,
 *                         fsync of DIR).
 * Publishing renames the .tmp directory to its final name, fsyncs DIR and
 * only then rewrites `latest`; older step directories are removed after
 * that (--keep). A crash before the rename leaves a .tmp directory that
 * nothing names (the next save removes it); a crash between the rename and
 * `latest` leaves `latest` naming the previous checkpoint, still whole.
 * Removal takes metadata.json first, so a directory whose removal stopped
 * part-way holds no checkpoint; it deletes only the names a checkpoint has
 * (metadata.json, shard-RRRRR.bin, their .tmp), never a foreign file.
 * One job saves to DIR at a time.
 */
#ifndef GTPLAN_RT_CKPT_DIR_H
#define GTPLAN_RT_CKPT_DIR_H

#include <stdio.h>

#define RT_CKPT_LATEST "latest"
/* The default of --keep: the newest checkpoint and the one before it. */
#define RT_CKPT_KEEP_DEFAULT 2

/* The directory a save of `step` writes into before it is published:
 * "DIR/iter_NNNNNNN.tmp", malloc'd (NULL when out of memory). */
char *rt_ckpt_dir_tmp(const char *dir, long long step);

/* Rank 0, before any rank writes: DIR exists (created when missing) and
 * the save's .tmp directory is new and empty (a leftover of a crashed
 * save is removed). RT_EIO with the path on failure. */
int rt_ckpt_dir_begin(const char *dir, long long step);

/* Rank 0, once the .tmp directory holds the whole checkpoint, fsynced:
 * renames it to its final name, fsyncs DIR, points `latest` at it, then
 * removes leftovers and all but the newest `keep` checkpoints of steps up
 * to `step` (keep 0: none; later steps of an earlier run are left alone).
 * Sets *final to the published directory (malloc'd). RT_EIO when it cannot
 * publish; a step directory that cannot be removed is a note only. */
int rt_ckpt_dir_publish(const char *dir, long long step, int keep,
			char **final);

/* --load P: the step directory to read, malloc'd in *path: P/latest's
 * directory when P holds `latest`, else P itself (a step directory, or a
 * checkpoint of an earlier gtplan-run). RT_ECKPT when `latest` is damaged
 * or not a regular file, RT_ENOMEM. */
int rt_ckpt_dir_resolve(const char *dir, char **path);

/* Opens an existing regular file for reading without blocking on a FIFO
 * or a device: NULL with the reason in why (cap bytes) otherwise. */
FILE *rt_ckpt_dir_open_regular(const char *path, char *why, size_t cap);

/* Flushes f and fsyncs it to its disk; -1 with errno on failure. */
int rt_ckpt_dir_fsync_file(FILE *f);
/* fsyncs directory `path` (its entries: created, renamed); -1 with errno. */
int rt_ckpt_dir_fsync(const char *path);

#endif
