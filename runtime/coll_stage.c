/*
 * coll_stage: the collectives on device buffers (--device cuda, see
 * coll.h): over NCCL where each rank has a GPU of its own (coll_nccl.c),
 * else through host buffers around the MPI collectives of coll_host.c (no
 * device-aware MPI assumed); the all-gathers started ahead (prefetch
 * slots); and the --bench-comm measurement of the NCCL path.
 */
#include "coll.h"
#include "coll_int.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "rt_err.h"

#define RCHECK_COLL(cmd)              \
	do {                          \
		int rcc_ = (cmd);     \
		if (rcc_)             \
			return rcc_;  \
	} while (0)

/* ---- host staging for device buffers (--device cuda) --------------------- */

void coll_set_staging(struct coll *c, struct kern_ctx *dev)
{
	c->dev = dev;
}

int coll_use_nccl(struct coll *c, struct kern_ctx *dev)
{
	int rc;

	c->dev = dev;
	rc = coll_nccl_new(c, dev);
	if (rc)
		coll_nccl_free(c);
	return rc;
}

int coll_bench_run(struct coll *c, enum rt_kind k, int reduce_scatter,
		   long long count, float *send, float *recv, int iters,
		   struct coll_bench *out)
{
	double t0, secs;
	int rc;

	if (!c->nccl)
		return rt_error(RT_EDEVICE, "--bench-comm measures the NCCL "
				"path: run with --device cuda and one GPU per "
				"rank");
	if (iters < 1)
		return rt_error(RT_EUSAGE, "--bench-comm needs 1 or more "
				"iterations");
	t0 = coll_now();
	for (int i = 0; i < iters; i++) {
		rc = reduce_scatter ?
		     coll_reduce_scatter(c, k, "bench", send, recv, count) :
		     coll_all_gather(c, k, "bench", send, recv, count);
		if (rc)
			return rc;
	}
	/* the queued ones too: all have completed, as the plain ones */
	RCHECK_COLL(coll_wait_last(c));
	out->runtime_s = (coll_now() - t0) / iters;
	RCHECK_COLL(coll_nccl_plain(c, k, reduce_scatter, count, send, recv,
				    iters, 1, &secs));
	out->plain_s = secs / iters;
	RCHECK_COLL(coll_nccl_plain(c, k, reduce_scatter, count, send, recv,
				    iters, 0, &secs));
	out->pipelined_s = secs / iters;
	return 0;
}

/* c->hbuf with room for n floats. */
static int host_room(struct coll *c, size_t n)
{
	float *p;

	if (n <= c->hcap)
		return 0;
	p = realloc(c->hbuf, n * sizeof(float));
	if (!p)
		return rt_error(RT_ENOMEM, "out of memory for host staging "
				"(%zu floats)", n);
	c->hbuf = p;
	c->hcap = n;
	return 0;
}

static int kern_fail(int krc, const char *what)
{
	return rt_error(RT_EKERNEL, "host staging of %s: %s", what,
			kern_error_text(krc));
}

#define SKCHECK(cmd, what)                        \
	do {                                      \
		int skc_ = (cmd);                 \
		if (skc_)                         \
			return kern_fail(skc_, what); \
	} while (0)

/* A group of one: a device copy (memmove semantics are not needed: the
 * runtime never passes overlapping distinct buffers). */
static int dev_copy(struct coll *c, const char *what, float *dst,
		    const float *src, long long count)
{
	if (dst != src && count > 0)
		SKCHECK(kern_copy(c->dev, dst, src,
				  (size_t)count * sizeof(float)), what);
	return 0;
}

static int all_gather(struct coll *c, enum rt_kind k, const char *what,
		      const void *send, void *recv, long long count, int elem)
{
	size_t n = (size_t)count * (size_t)elem, g = (size_t)c->size[k];
	char *hs, *hr;

	if (!c->dev)
		return coll_host_all_gather(c, k, what, send, recv, count, elem);
	if (g == 1) {
		if (recv != send && n > 0)
			SKCHECK(kern_copy(c->dev, recv, send, n), what);
		return 0;
	}
	if (c->nccl) {
		struct call_desc d = { "all-gather", what,
				       elem == 2 ? "bf16" : "fp32", k, count,
				       elem, 0, COLL_SUM };

		RCHECK_COLL(coll_begin(c, &d));
		return coll_nccl_all_gather(c, &d, send, recv);
	}
	/* host_room counts floats */
	RCHECK_COLL(host_room(c, (n + g * n + sizeof(float) - 1) /
				 sizeof(float)));
	hs = (char *)c->hbuf;
	hr = hs + n;
	SKCHECK(kern_download(c->dev, hs, send, n), what);
	RCHECK_COLL(coll_host_all_gather(c, k, what, hs, hr, count, elem));
	SKCHECK(kern_upload(c->dev, recv, hr, g * n), what);
	return 0;
}

int coll_all_gather(struct coll *c, enum rt_kind k, const char *what,
		    const float *send, float *recv, long long count)
{
	return all_gather(c, k, what, send, recv, count, 4);
}

int coll_all_gather_start(struct coll *c, int slot, enum rt_kind k,
			  const char *what, const void *send, void *recv,
			  long long count, int elem)
{
	struct coll_pending *q;
	size_t n = (size_t)count * (size_t)elem, g;
	MPI_Datatype t = elem == 2 ? MPI_UINT16_T : MPI_FLOAT;
	const void *sb = send;
	void *rb = recv;

	if (slot < 0 || slot >= COLL_SLOTS || c->pend[slot].active ||
	    (elem != 2 && elem != 4))
		return rt_error(RT_EUSAGE, "all-gather of %s: slot %d busy or "
				"out of range, or element size %d not 2 or 4",
				what, slot, elem);
	q = &c->pend[slot];
	g = (size_t)c->size[k];
	q->d = (struct call_desc){ "all-gather", what,
				   elem == 2 ? "bf16" : "fp32", k, count, elem,
				   0, COLL_SUM };
	q->recv = NULL;
	if (g == 1) { /* nothing to wait for, nothing recorded */
		if (recv != send && n > 0 && c->dev)
			SKCHECK(kern_copy(c->dev, recv, send, n), what);
		else if (recv != send && n > 0)
			memmove(recv, send, n);
		return 0;
	}
	if (!c->nccl)
		RCHECK_COLL(coll_mpi_count(c, &q->d, count));
	RCHECK_COLL(coll_begin(c, &q->d));
	if (c->nccl) {
		q->active = q->nccl = 1;
		return coll_nccl_all_gather_start(c, &q->d, send, recv, slot);
	}
	if (c->dev) { /* staged through this slot's own host buffers */
		if (q->hcap < n + g * n) {
			char *p = realloc(q->hbuf, n + g * n);

			if (!p)
				return rt_error(RT_ENOMEM, "out of memory for "
						"host staging");
			q->hbuf = p;
			q->hcap = n + g * n;
		}
		SKCHECK(kern_download(c->dev, q->hbuf, send, n), what);
		sb = q->hbuf;
		rb = q->hbuf + n;
		q->recv = recv;
	}
	MPICHECK(MPI_Iallgather(sb, (int)count, t, rb, (int)count, t,
				c->comm[k], &q->req));
	q->active = 1;
	q->nccl = 0;
	return 0;
}

int coll_all_gather_wait(struct coll *c, int slot)
{
	struct coll_pending *q;
	size_t n;

	if (slot < 0 || slot >= COLL_SLOTS)
		return rt_error(RT_EUSAGE, "all-gather slot %d is out of range",
				slot);
	q = &c->pend[slot];
	if (!q->active)
		return 0;
	q->active = 0;
	if (q->nccl)
		return coll_nccl_wait(c, &q->d, slot);
	if (c->timeout_s > 0) {
		RCHECK_COLL(coll_host_wait(c, &q->d, &q->req));
	} else {
		c->state = COLL_WAITING;
		c->cur = &q->d;
		MPICHECK(MPI_Wait(&q->req, MPI_STATUS_IGNORE));
		c->state = COLL_RUNNING;
		c->cur = NULL;
	}
	n = (size_t)q->d.count * (size_t)q->d.elem;
	if (q->recv)
		SKCHECK(kern_upload(c->dev, q->recv, q->hbuf + n,
				    (size_t)c->size[q->d.k] * n), q->d.what);
	return 0;
}

int coll_all_gather_bf16(struct coll *c, enum rt_kind k, const char *what,
			 const uint16_t *send, uint16_t *recv,
			 long long count)
{
	return all_gather(c, k, what, send, recv, count, 2);
}

int coll_reduce_scatter(struct coll *c, enum rt_kind k, const char *what,
			const float *send, float *recv, long long count)
{
	size_t n = (size_t)count, g = (size_t)c->size[k];
	float *hs, *hr;

	if (!c->dev)
		return coll_host_reduce_scatter(c, k, what, send, recv, count);
	if (g == 1)
		return dev_copy(c, what, recv, send, count);
	if (c->nccl) {
		struct call_desc d = { "reduce-scatter", what, "fp32", k, count,
				       4, 1, COLL_SUM };

		RCHECK_COLL(coll_begin(c, &d));
		return coll_nccl_reduce_scatter(c, &d, send, recv);
	}
	RCHECK_COLL(host_room(c, g * n + n));
	hs = c->hbuf;
	hr = c->hbuf + g * n;
	SKCHECK(kern_download(c->dev, hs, send, g * n * sizeof(float)), what);
	RCHECK_COLL(coll_host_reduce_scatter(c, k, what, hs, hr, count));
	SKCHECK(kern_upload(c->dev, recv, hr, n * sizeof(float)), what);
	return 0;
}

int coll_all_reduce(struct coll *c, enum rt_kind k, const char *what,
		    float *buf, long long count, enum coll_op op)
{
	size_t n = (size_t)count;

	if (!c->dev || c->size[k] == 1)
		return coll_host_all_reduce_f(c, k, what, buf, count, op);
	if (c->nccl) {
		struct call_desc d = { "all-reduce", what, "fp32", k, count, 4,
				       1, op };

		RCHECK_COLL(coll_begin(c, &d));
		return coll_nccl_all_reduce(c, &d, buf);
	}
	RCHECK_COLL(host_room(c, n));
	SKCHECK(kern_download(c->dev, c->hbuf, buf, n * sizeof(float)), what);
	RCHECK_COLL(coll_host_all_reduce_f(c, k, what, c->hbuf, count, op));
	SKCHECK(kern_upload(c->dev, buf, c->hbuf, n * sizeof(float)), what);
	return 0;
}

int coll_gather(struct coll *c, enum rt_kind k, const char *what,
		const float *send, float *recv, long long count, int root)
{
	size_t n = (size_t)count, g = (size_t)c->size[k];
	float *hs, *hr;

	if (!c->dev)
		return coll_host_gather(c, k, what, send, recv, count, root);
	if (g == 1)
		return dev_copy(c, what, recv, send, count);
	if (c->nccl) {
		struct call_desc d = { "gather", what, "fp32", k, count, 4, 0,
				       COLL_SUM };

		RCHECK_COLL(coll_begin(c, &d));
		return coll_nccl_gather(c, &d, send, recv, root);
	}
	RCHECK_COLL(host_room(c, n + g * n));
	hs = c->hbuf;
	hr = c->hbuf + n;
	SKCHECK(kern_download(c->dev, hs, send, n * sizeof(float)), what);
	RCHECK_COLL(coll_host_gather(c, k, what, hs, hr, count, root));
	if (c->rank[k] == root)
		SKCHECK(kern_upload(c->dev, recv, hr, g * n * sizeof(float)),
			what);
	return 0;
}
