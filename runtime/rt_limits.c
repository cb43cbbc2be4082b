/*
 * rt_limits: the refusals before any allocation (see rt_limits.h).
 */
#include "rt_limits.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ckmath.h"
#include "coll.h"
#include "rt_err.h"

#define GIB 1073741824.0

int rt_limits_plan(const struct rt_plan *p, long long global_batch,
		   long long micro_batch)
{
	const struct rt_settings *r = &p->rt;
	long long gb = global_batch > 0 ? global_batch : p->global_batch;
	long long mb = micro_batch > 0 ? micro_batch :
		       p->micro_batch > 0 ? p->micro_batch : 1;
	double h = (double)r->hidden, L = (double)r->layers, F = (double)r->ffn;
	double q = (double)r->heads * (double)r->head_dim;
	double kv = (double)r->kv_heads * (double)r->head_dim;
	double V = (double)r->vocab, w, a;

	if (gb > RT_MAX_GLOBAL_BATCH)
		return rt_error_once(RT_EPLAN, "the global batch of %lld "
				     "samples is more than the %lld a step of "
				     "gtplan-run runs (each step loops over "
				     "its micro-batches): use a global batch "
				     "of at most %lld", gb, RT_MAX_GLOBAL_BATCH,
				     RT_MAX_GLOBAL_BATCH);
	/* the logical weights, and a bound on one micro-batch's activations
	 * per token: every buffer of rt_model.c's tables is at most a few
	 * of these terms */
	w = V * h * (r->tie ? 1 : 2) + L * (h * (q + 2 * kv) + h * q +
					    3 * F * h + 2 * h + q + 2 * kv);
	a = (double)(mb < gb || gb < 1 ? mb : gb) * (double)r->seq_len *
	    (L * (h + q + 2 * kv + 2 * F + (double)r->heads) + V + h);
	if (w + a > (double)RT_MAX_ELEMS)
		return rt_error_once(RT_EPLAN, "the plan's sizes need about "
				     "%.3g elements (weights %.3g, one micro-"
				     "batch of %lld x %lld tokens %.3g), more "
				     "than gtplan-run's limit of 2^50 (4 PiB "
				     "of float32): plan a smaller model, "
				     "seq_len or micro batch", w + a, w, mb,
				     r->seq_len, a);
	return 0;
}

void rt_limits_need(const struct rt_shape *s, const struct rt_plan *p,
		    struct rt_need *n)
{
	long long io = s->local * s->h, k = (long long)s->slots * s->vpp;

	rt_model_mem(s, p->rt.bf16, p->rt.prefetch, &n->mm);
	n->pp = 0;
	/* saturated: slots may be every micro-batch of the step */
	if (s->pp > 1)
		n->pp = ck_add_sat(ck_mul_sat(s->slots - 1, n->mm.acts),
				   ck_mul_sat(4 * (io > 0 ? io : 1), 1 + k));
	n->total = ck_add_sat(n->mm.total, n->pp);
}

/* The host's memory, or its cgroup's limit (cgroup v2) when lower. */
static double host_bytes(void)
{
	double b = (double)sysconf(_SC_PHYS_PAGES) *
		   (double)sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
	double lim;

	if (f && fscanf(f, "%lf", &lim) == 1 && lim > 0 && lim < b)
		b = lim;
	if (f)
		fclose(f);
	return b;
}

/* The parts of a rank's bytes, for messages: ", weights, gradients and
 * Adam state S, ..." */
static void parts(char *buf, size_t len, const struct rt_shape *s,
		  const struct rt_need *n)
{
	int k = snprintf(buf, len, "weights, gradients and Adam state %lld, "
			 "gathered-weight buffers %lld, activations of one "
			 "micro-batch %lld, of which the logits of %lld tokens "
			 "x %lld vocabulary rows %lld", n->mm.state,
			 n->mm.scratch, n->mm.acts, s->tokens, s->z.vl,
			 n->mm.logits);

	if (n->pp && k > 0 && (size_t)k < len)
		snprintf(buf + k, len - (size_t)k, ", pipeline slots and "
			 "buffers %lld", n->pp);
}

static int refuse(const struct rt_shape *s, const struct rt_need *n,
		  long long ckpt, long long need, double budget,
		  const char *whose)
{
	char extra[80] = "", what[512];

	if (ckpt)
		snprintf(extra, sizeof(extra), ", the checkpoint's host copy "
			 "%lld", ckpt);
	parts(what, sizeof(what), s, n);
	return rt_error(RT_EPLAN, "this rank needs %lld bytes (%.3f GiB) on "
			"--device cpu, more than its budget of %.0f bytes "
			"(%.3f GiB, %s): %s%s: use a smaller micro batch, "
			"seq_len or model, more TP, CP or GTP ranks, or "
			"--mem-budget GIB", need, need / GIB, budget,
			budget / GIB, whose, what, extra);
}

int rt_limits_memory(const struct rt_shape *s, const struct rt_plan *p,
		     const struct rt_opts *o)
{
	struct rt_need n;
	long long ckpt = 0, need;
	double budget;
	char whose[96];
	int local = 0, nlocal = 1, over, first, rc;

	if (strcmp(o->device, "cpu"))
		return 0;
	if ((rc = coll_local_rank(&local, &nlocal)))
		return rc;
	rt_limits_need(s, p, &n);
	if (o->save || o->load)
		ckpt = 3 * 4 * (s->z.n_shard + s->z.n_rep);
	need = n.total + ckpt;
	if (o->mem_budget > 0) {
		budget = o->mem_budget * GIB;
		snprintf(whose, sizeof(whose), "--mem-budget");
	} else {
		budget = RT_HOST_SHARE * host_bytes() / nlocal;
		snprintf(whose, sizeof(whose), "%.0f%% of the host's %.1f GiB "
			 "over its %d rank%s", 100 * RT_HOST_SHARE,
			 host_bytes() / GIB, nlocal, nlocal > 1 ? "s" : "");
	}
	over = (double)need > budget;
	/* the lowest rank over its budget says why */
	first = coll_mpi_agree(over ? p->me - (RT_MAX_WORLD + 1) : 0);
	if (first < 0 && p->me == first + RT_MAX_WORLD + 1)
		return refuse(s, &n, ckpt, need, budget, whose);
	if (first < 0)
		return RT_EPLAN;
	rt_note("memory: %.3f GiB per rank (weights and optimizer %.3f, "
		"activations %.3f) within %.3f GiB (%s)", need / GIB,
		n.mm.state / GIB, n.mm.acts / GIB, budget / GIB, whose);
	return 0;
}

int rt_limits_gpu(const struct rt_shape *s, const struct rt_plan *p,
		  int force, int dev, const char *name, double free_b,
		  int share)
{
	struct rt_need n;
	char what[512];
	double avail = free_b / (share > 0 ? share : 1);
	long long need;

	rt_limits_need(s, p, &n);
	need = ck_add_sat(n.total, RT_GPU_RESERVE);
	if ((double)need <= avail) {
		rt_note("GPU %d: %.3f GiB per rank (weights and optimizer "
			"%.3f, activations %.3f, reserve %.3f) within %.3f GiB "
			"free per rank", dev, need / GIB, n.mm.state / GIB,
			n.mm.acts / GIB, RT_GPU_RESERVE / GIB, avail / GIB);
		return 0;
	}
	if (force) {
		rt_note("GPU %d: this rank needs %.3f GiB, more than the %.3f "
			"GiB free per rank (--force)", dev, need / GIB,
			avail / GIB);
		return 0;
	}
	parts(what, sizeof(what), s, &n);
	return rt_error(RT_EDEVICE, "GPU %d (%s) has %.0f bytes (%.3f GiB) "
			"free for %d rank%s, %.0f each; this rank needs %lld "
			"bytes (%.3f GiB): %s, and %lld kept for cuBLASLt, "
			"NCCL and kernel scratch: use fewer layers, a shorter "
			"sequence or a smaller micro batch, more GPUs (TP, CP, "
			"GTP or PP), or --force", dev, name, free_b,
			free_b / GIB, share, share > 1 ? "s" : "", avail, need,
			need / GIB, what, RT_GPU_RESERVE);
}
