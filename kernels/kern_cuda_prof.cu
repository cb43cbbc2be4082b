/*
 * kern_cuda_prof: kern_prof_start/kern_prof_read (kernels/kern.h) on the
 * CUDA twin. Every kernel call of the context is bracketed by two events on
 * its stream (kernels/kern.c's RUN); a pool of PROF_PAIRS event pairs is
 * drained (stream synchronised, elapsed times summed per class) when it is
 * full and at each read, so a long run profiles with a fixed set of events.
 * The device time between an end event and the next start event (host
 * launch gaps, other streams' or libraries' work) is in no class.
 *
 * mark cannot return an error (kern.c ignores it): a failed event record is
 * remembered and kern_prof_read reports it. Brackets nest (the fast
 * path's casts inside a GEMM, kern_cuda_prof_note); the pool drains only
 * between outermost brackets, so a bracket that is never closed stops the
 * profile when the pool is full (KERN_EINVAL at kern_prof_read) rather
 * than overrunning it.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern_cuda.h"

#define PROF_PAIRS 4096
#define PROF_DEPTH 4 /* brackets open at once (a call and its casts) */
#define PROF_OPS 48 /* more than kern_ops has members */
#define PROF_GEMMS 64 /* GEMM shapes a profile tells apart (a decoder
		       * step has ~16: 4 linear layers and the output
		       * layer, forward, dX and dW each) */

/* One GEMM shape of the profile (kern_cuda_prof_gemm): C = op(A) op(B),
 * m x n x kd, C in fp32 or bf16, beta 0 or not. */
struct prof_gemm {
	int ta, tb, c32, acc;
	long long m, n, kd;
	double ms;
	long long calls;
};

struct kern_prof {
	cudaEvent_t ev[2 * PROF_PAIRS];
	int cls[PROF_PAIRS], op[PROF_PAIRS], parent[PROF_PAIRS];
	int n; /* pairs begun, not yet drained */
	int stack[PROF_DEPTH], depth; /* the open brackets */
	int err; /* the first failure, as a KERN_E* code */
	double ms[KERN_PROF_CLASSES];
	long long calls[KERN_PROF_CLASSES];
	/* per op: its name (a string literal of kern.c, compared by
	 * address), time and calls */
	const char *op_name[PROF_OPS];
	double op_ms[PROF_OPS];
	long long op_calls[PROF_OPS];
	int n_ops;
	/* per GEMM shape: the pair's shape slot (-1: none), the shapes */
	int gemm[PROF_PAIRS];
	struct prof_gemm gemms[PROF_GEMMS];
	int n_gemms;
};

/* The op's slot, added at its first call; PROF_OPS - 1 collects any
 * overflow. */
static int prof_op(struct kern_prof *p, const char *op)
{
	for (int i = 0; i < p->n_ops; i++)
		if (p->op_name[i] == op)
			return i;
	if (p->n_ops == PROF_OPS - 1) {
		p->op_name[PROF_OPS - 1] = "other";
		return PROF_OPS - 1;
	}
	p->op_name[p->n_ops] = op;
	return p->n_ops++;
}

static struct cuda_impl *impl_of(struct kern_ctx *k)
{
	return (struct cuda_impl *)k->impl;
}

void kern_cuda_prof_free(struct kern_prof *p)
{
	if (!p)
		return;
	for (int i = 0; i < 2 * PROF_PAIRS; i++)
		if (p->ev[i])
			cudaEventDestroy(p->ev[i]);
	free(p);
}

int kern_cuda_prof_start(struct kern_ctx *k)
{
	struct cuda_impl *c = impl_of(k);
	struct kern_prof *p = c->prof;

	if (!p) {
		p = (struct kern_prof *)calloc(1, sizeof(*p));
		if (!p)
			return KERN_ENOMEM;
		c->prof = p;
		for (int i = 0; i < 2 * PROF_PAIRS; i++)
			CUDACHECK(cudaEventCreate(&p->ev[i]));
	}
	CUDACHECK(cudaStreamSynchronize(c->stream));
	p->n = 0;
	p->depth = 0;
	p->err = 0;
	memset(p->ms, 0, sizeof(p->ms));
	memset(p->calls, 0, sizeof(p->calls));
	memset(p->op_ms, 0, sizeof(p->op_ms));
	memset(p->op_calls, 0, sizeof(p->op_calls));
	p->n_gemms = 0;
	return 0;
}

/* Sums the recorded pairs into the classes and ops and frees the pool. A
 * call nested in another (kernels/kern_cuda_fast.cu's casts inside a GEMM)
 * counts for itself and is taken out of its parent: the classes add up to
 * the bracketed time. Runs only with no bracket open. */
static int prof_drain(struct cuda_impl *c, struct kern_prof *p)
{
	float t;

	CUDACHECK(cudaStreamSynchronize(c->stream));
	for (int i = 0; i < p->n; i++) {
		int up = p->parent[i];

		CUDACHECK(cudaEventElapsedTime(&t, p->ev[2 * i],
					       p->ev[2 * i + 1]));
		p->ms[p->cls[i]] += t;
		p->calls[p->cls[i]]++;
		p->op_ms[p->op[i]] += t;
		p->op_calls[p->op[i]]++;
		if (p->gemm[i] >= 0) {
			p->gemms[p->gemm[i]].ms += t;
			p->gemms[p->gemm[i]].calls++;
		}
		if (up >= 0) {
			p->ms[p->cls[up]] -= t;
			p->op_ms[p->op[up]] -= t;
			if (p->gemm[up] >= 0)
				p->gemms[p->gemm[up]].ms -= t;
		}
	}
	p->n = 0;
	return 0;
}

void kern_cuda_prof_note(struct cuda_impl *c, int cls, const char *op,
			 int end)
{
	struct kern_prof *p = c->prof;
	int rc = 0, i;

	if (!p || p->err || cls < 0 || cls >= KERN_PROF_CLASSES)
		return;
	if (!end) {
		if (p->depth == PROF_DEPTH)
			rc = KERN_EINVAL;
		else if (p->depth == 0 && p->n > PROF_PAIRS - PROF_DEPTH)
			rc = prof_drain(c, p);
		else if (p->n == PROF_PAIRS)
			rc = KERN_EINVAL; /* full inside a bracket left open */
		if (rc)
			goto out;
		i = p->n++;
		p->cls[i] = cls;
		p->op[i] = prof_op(p, op);
		p->gemm[i] = -1;
		p->parent[i] = p->depth ? p->stack[p->depth - 1] : -1;
		p->stack[p->depth++] = i;
		if (cudaEventRecord(p->ev[2 * i], c->stream) != cudaSuccess)
			rc = KERN_EDEVICE;
	} else if (p->depth) {
		i = p->stack[--p->depth];
		if (cudaEventRecord(p->ev[2 * i + 1], c->stream) != cudaSuccess)
			rc = KERN_EDEVICE;
	}
out:
	p->err = rc;
}

void kern_cuda_prof_gemm(struct cuda_impl *c, int ta, int tb, long long m,
			 long long n, long long kd, int c32, int acc)
{
	struct kern_prof *p = c->prof;
	struct prof_gemm *g;
	int s;

	if (!p || p->err || !p->depth)
		return;
	for (s = 0; s < p->n_gemms; s++) {
		g = &p->gemms[s];
		if (g->ta == ta && g->tb == tb && g->m == m && g->n == n &&
		    g->kd == kd && g->c32 == c32 && g->acc == acc)
			break;
	}
	if (s == p->n_gemms) {
		if (s == PROF_GEMMS)
			return; /* the shapes past the table go unnamed */
		g = &p->gemms[p->n_gemms++];
		*g = (struct prof_gemm){ ta, tb, c32, acc, m, n, kd, 0.0, 0 };
	}
	p->gemm[p->stack[p->depth - 1]] = s;
}

void kern_cuda_prof_mark(struct kern_ctx *k, int cls, const char *op,
			 int end)
{
	kern_cuda_prof_note(impl_of(k), cls, op, end);
}

int kern_cuda_prof_read(struct kern_ctx *k, double *ms, long long *calls)
{
	struct cuda_impl *c = impl_of(k);
	struct kern_prof *p = c->prof;

	if (!p)
		return KERN_EINVAL;
	if (p->err)
		return p->err;
	if (p->depth)
		return KERN_EINVAL;
	KERN_TRY(prof_drain(c, p));
	for (int i = 0; i < KERN_PROF_CLASSES; i++) {
		ms[i] = p->ms[i];
		calls[i] = p->calls[i];
	}
	return 0;
}

/* After kern_cuda_prof_read: ops by time, largest first. */
void kern_cuda_prof_ops(struct kern_ctx *k, void *file)
{
	struct kern_prof *p = impl_of(k)->prof;
	FILE *f = (FILE *)file;
	int idx[PROF_OPS], n = p ? p->n_ops + (p->op_calls[PROF_OPS - 1] > 0) :
				   0;

	for (int i = 0; i < n; i++)
		idx[i] = i < p->n_ops ? i : PROF_OPS - 1;
	for (int i = 1; i < n; i++) /* insertion sort: a few dozen ops */
		for (int j = i;
		     j > 0 && p->op_ms[idx[j]] > p->op_ms[idx[j - 1]]; j--) {
			int t = idx[j];

			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	fprintf(f, "kern profile ops:");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s %s %.3f ms %lld calls", i ? ";" : "",
			p->op_name[idx[i]], p->op_ms[idx[i]],
			p->op_calls[idx[i]]);
	fputc('\n', f);
	if (!p || !p->n_gemms)
		return;
	/* m n k as cuBLAS's column-major call sees them would confuse: the
	 * shape is kern.h's row-major C[m x n] = op(A) op(B), k deep */
	fprintf(f, "kern profile gemms:");
	for (int i = 0; i < p->n_gemms; i++) {
		const struct prof_gemm *g = &p->gemms[i];

		fprintf(f, "%s %c%c %lldx%lldx%lld %s%s %.3f ms %lld calls",
			i ? ";" : "", g->ta ? 'T' : 'N', g->tb ? 'T' : 'N',
			g->m, g->n, g->kd, g->c32 ? "f32" : "bf16",
			g->acc ? "+=" : "", g->ms, g->calls);
	}
	fputc('\n', f);
}
