/*
 * rt_bench: gtplan-run --bench-comm, the GTP collectives of the model's
 * own weights timed on the NCCL path (docs/design.md §5.3).
 *
 * Ownership: borrows the model and the log stream; frees its own buffers
 * before it returns.
 */
#ifndef GTPLAN_RT_BENCH_H
#define GTPLAN_RT_BENCH_H

#include <stdio.h>

#include "rt_model.h"

/* For each distinct weight (the embedding, one layer's fc1 and fc2): the
 * GTP all-gather of its shard and the reduce-scatter of its gradient,
 * `iters` times after a warm-up, through the runtime's collectives and as
 * plain NCCL calls on the same communicator (coll_bench_run). World rank 0
 * prints a table with nccl-tests' bus bandwidth (bytes x (n-1)/n over the
 * time, bytes being the gathered tensor) and writes one JSON line per
 * measurement to log when it is not NULL. Collective over the world. */
int rt_bench_comm(struct rt_model *m, int iters, FILE *log);

#endif
