/*
 * rt_bench: the GTP collectives of the model's weights, timed (see
 * rt_bench.h).
 */
#include "rt_bench.h"

#include <stdio.h>

#include "coll.h"
#include "rt_err.h"

#define BENCH_WARMUP 3

/* nccl-tests' bus bandwidth of an all-gather or reduce-scatter over n
 * ranks moving `bytes` in all (the gathered tensor), in GB/s. */
static double busbw(double bytes, int n, double secs)
{
	return secs > 0 ? bytes * (n - 1) / n / secs / 1e9 : 0;
}

static int bench_one(struct rt_model *m, const struct rt_weight *w, int rs,
		     int iters, int root, FILE *log)
{
	const struct rt_shape *s = &m->s;
	long long count = w->shard * w->d1;
	double bytes = (double)count * s->g * sizeof(float);
	struct coll_bench warm, b;
	float *send = rs ? m->gfull : m->param + w->off;
	float *recv = rs ? m->gshard : m->full;

	RCHECK(coll_bench_run(m->c, RT_K_GTP, rs, count, send, recv,
			      BENCH_WARMUP, &warm));
	RCHECK(coll_bench_run(m->c, RT_K_GTP, rs, count, send, recv, iters,
			      &b));
	if (!root)
		return 0;
	printf("%-16s %-14s %10.2f %10.1f %8.1f %10.1f %8.1f %10.1f %8.1f "
	       "%6.1f%%\n", w->name, rs ? "reduce-scatter" : "all-gather",
	       bytes / 1048576.0, b.runtime_s * 1e6,
	       busbw(bytes, s->g, b.runtime_s), b.plain_s * 1e6,
	       busbw(bytes, s->g, b.plain_s), b.pipelined_s * 1e6,
	       busbw(bytes, s->g, b.pipelined_s),
	       b.runtime_s > 0 ? 100.0 * b.plain_s / b.runtime_s : 0);
	if (log) {
		fprintf(log, "{\"bytes\":%.0f,\"coll\":\"%s\",\"gtp\":%d,"
			"\"iters\":%d,\"pipelined_busbw_gbs\":%.3f,"
			"\"pipelined_s\":%.9f,\"plain_busbw_gbs\":%.3f,"
			"\"plain_s\":%.9f,\"runtime_busbw_gbs\":%.3f,"
			"\"runtime_s\":%.9f,\"weight\":\"%s\"}\n", bytes,
			rs ? "reduce-scatter" : "all-gather", s->g, iters,
			busbw(bytes, s->g, b.pipelined_s), b.pipelined_s,
			busbw(bytes, s->g, b.plain_s), b.plain_s,
			busbw(bytes, s->g, b.runtime_s), b.runtime_s, w->name);
		if (ferror(log))
			return rt_error(RT_EIO, "--log: write error");
	}
	return 0;
}

int rt_bench_comm(struct rt_model *m, int iters, FILE *log)
{
	const struct rt_weight *ws[3] = { m->emb ? m->emb : m->out,
					  m->layer[0].fc1, m->layer[0].fc2 };
	int root = coll_rank(m->c, RT_K_WORLD) == 0;

	if (m->s.pp > 1)
		return rt_error_once(RT_EUSAGE, "--bench-comm times one "
				     "stage's GTP collectives: plan it with PP "
				     "1");
	if (m->s.g < 2)
		return rt_error_once(RT_EUSAGE, "--bench-comm times the GTP "
				     "collectives: the plan has GTP 1 (set "
				     "tensor_parallel_num_weight_shards to a "
				     "multiple of TP above it)");
	coll_set_call(m->c, "bench-comm", 0);
	if (root) {
		printf("bench-comm: GTP groups of %d ranks, fp32, %d "
		       "iterations after %d warm-up; time per collective "
		       "(us) and bus bandwidth (GB/s, nccl-tests: bytes x "
		       "(n-1)/n / time, bytes = the gathered tensor)\n",
		       m->s.g, iters, BENCH_WARMUP);
		printf("%-16s %-14s %10s %10s %8s %10s %8s %10s %8s %7s\n",
		       "weight", "collective", "MiB", "runtime", "busbw",
		       "plain", "busbw", "pipelined", "busbw", "ratio");
	}
	for (int i = 0; i < 3; i++)
		for (int rs = 0; rs < 2; rs++)
			RCHECK(bench_one(m, ws[i], rs, iters, root, log));
	if (root)
		printf("ratio: the plain synchronised NCCL call's time over "
		       "the runtime's (100%% = no overhead)\n");
	return 0;
}
