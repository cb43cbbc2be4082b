/*
 * rt_ckpt_index: a checkpoint's index in memory (rt_ckpt.h describes the
 * format): the model's tensors with this rank's region of each, the pieces
 * and files of a save, the proof that the pieces cover every element
 * exactly once, and metadata.json written from and read into it.
 *
 * Ownership: a struct rt_ckpt_index owns its tensor, piece and file
 * arrays; rt_ckpt_index_release() frees them and is safe on a zeroed
 * index or one whose init or load failed. It keeps no pointer to the
 * model or plan. rt_ckpt_index_path's string is the caller's to free();
 * other strings returned are static or the caller's buffer.
 */
#ifndef GTPLAN_RT_CKPT_INDEX_H
#define GTPLAN_RT_CKPT_INDEX_H

#include <stdint.h>
#include <stdio.h>

#include "rt_model.h"
#include "rt_plan.h"

#define RT_CKPT_FORMAT "gtplan-ckpt/1"
#define RT_CKPT_META "metadata.json"
/* Hostile-input limit: the largest metadata.json --load reads. */
#define RT_CKPT_MAX_META_BYTES (64LL << 20)
/* Room for one reason in a message. */
#define RT_CKPT_WHY 512

/* The arrays a checkpoint holds: the weights, Adam's m and v. */
enum { RT_CKPT_PARAM, RT_CKPT_EXP_AVG, RT_CKPT_EXP_AVG_SQ, RT_CKPT_NGROUPS };

/* One logical tensor and this rank's region of it; 1-D tensors have one
 * row. nr = 0: the rank holds no real element of it. */
struct rt_ckpt_tensor {
	char key[128];
	int ndim, group, writer;
	long long rows, cols;
	long long r0, c0, nr, nc;
	long long off; /* the region's first element in the group's array */
};

struct rt_ckpt_piece {
	int tensor, file;
	long long r0, c0, nr, nc, byte_off;
	uint64_t hash; /* FNV-1a 64 of its bytes */
};

struct rt_ckpt_file {
	char name[32];
	int rank;
	long long bytes;
};

/* The tensors (model order; for each group: embedding, per layer its
 * tensors (rt_ckpt.h), the final norm, the output layer), their pieces
 * grouped by tensor in rank order, the files. Owns its arrays. */
struct rt_ckpt_index {
	struct rt_ckpt_tensor *t;
	int nt, nf;
	long long np;
	struct rt_ckpt_piece *pc;
	struct rt_ckpt_file *f;
};

/* x = m's tensors with this rank's (p->me's) region of each, no pieces.
 * writer: the main replica (dp_replicate and cp 0) of each shard; for the
 * norms the rank whose coordinates are all 0; for the TP-split qkv bias
 * the main replicas with gtp 0. */
int rt_ckpt_index_init(struct rt_ckpt_index *x, const struct rt_model *m,
		       const struct rt_plan *p);
void rt_ckpt_index_release(struct rt_ckpt_index *x);

/* Proves that the pieces cover every element of every tensor exactly
 * once, as dist_checkpointing's validate_sharding_integrity does: each
 * piece inside its tensor, no element in two pieces, none in none
 * (rt_ckpt_cover.c). Time and memory grow with the pieces, not with the
 * tensors' elements. Returns 0, or -1 with the first finding in why
 * (RT_CKPT_WHY bytes). */
int rt_ckpt_index_validate(const struct rt_ckpt_index *x, char *why);

/* Writes metadata.json's JSON (keys sorted) for m's state to f. 0, or -1
 * when out of memory or on a write error. */
int rt_ckpt_index_dump(const struct rt_ckpt_index *x, const struct rt_model *m,
		       const struct rt_plan *p, FILE *f);

/* Reads dir/metadata.json into x (from rt_ckpt_index_init: its tensors
 * are matched by key), checks it against m (format, byte order, sizes,
 * seed and data settings, the optimizer block: m->sgd's optimizer and the
 * step, shapes, coverage) and sets *step. Refusals are
 * reported once (every rank reads the same file): RT_EIO when there is no
 * metadata, RT_ECKPT when it cannot be used. */
int rt_ckpt_index_load(struct rt_ckpt_index *x, const struct rt_model *m,
		       const char *dir, long long *step);

/* "dir/name", malloc'd; NULL when out of memory. */
char *rt_ckpt_index_path(const char *dir, const char *name);
/* "[i, j]" (or "[j]" for a 1-D tensor) in buf. */
const char *rt_ckpt_index_at(const struct rt_ckpt_tensor *t, long long i,
			     long long j, char *buf, size_t cap);
/* "little" or "big": the host's, as recorded in the metadata. */
const char *rt_ckpt_index_byte_order(void);

#endif
