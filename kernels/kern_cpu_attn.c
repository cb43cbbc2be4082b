/*
 * kern_cpu_attn: the CPU twin of causal grouped-query attention (kern.h's
 * kern_attn_fwd, kern_attn_merge, kern_attn_bwd): the formulas evaluated
 * row by row, every sum (q.k, the softmax's denominator, P v, and the
 * gradients' sums over keys and queries) in double, so that these are the
 * references the CUDA kernels are held to. K and V are read in place by
 * every query head of their group (head h reads key/value head
 * h / (nh / nkv)), never copied.
 *
 * Layouts (kern.h): q, o, dout [batch, sq, nh, hd]; k, v [batch, sk, nkv,
 * hd]; lse [batch, nh, sq].
 */
#include "kern_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Position i of pos; NULL: i (kernels/kern.h, kern_attn_fwd). */
static int32_t pos_at(const int32_t *pos, long long i)
{
	return pos ? pos[i] : (int32_t)i;
}

/* Where query row i of head h of sequence b starts in q, o, dout. */
static long long qoff(const struct kern_attn *a, long long b, long long i,
		      long long h)
{
	return ((b * a->sq + i) * a->nh + h) * a->hd;
}

/* Where key row s of key/value head g of sequence b starts in k, v. */
static long long koff(const struct kern_attn *a, long long b, long long s,
		      long long g)
{
	return ((b * a->sk + s) * a->nkv + g) * a->hd;
}

static double dot(const float *x, const float *y, long long n)
{
	double s = 0;

	for (long long d = 0; d < n; d++)
		s += (double)x[d] * y[d];
	return s;
}

/* One query row of the forward: sc [sk] and acc [hd] are scratch. Writes
 * the row of o and returns its lse (-INFINITY, o = 0 when no key is
 * attended). */
static float fwd_row(const struct kern_attn *a, const float *q,
		     const float *kk, const float *v, const int32_t *kpos,
		     int32_t qp, long long b, long long g, float *o, double *sc,
		     double *acc)
{
	double m = -INFINITY, sum = 0;
	long long hd = a->hd;

	for (long long s = 0; s < a->sk; s++) {
		sc[s] = -INFINITY;
		if (pos_at(kpos, s) <= qp)
			sc[s] = a->scale * dot(q, kk + koff(a, b, s, g), hd);
		if (sc[s] > m)
			m = sc[s];
	}
	for (long long d = 0; d < hd; d++)
		acc[d] = 0;
	for (long long s = 0; m > -INFINITY && s < a->sk; s++) {
		const float *vs = v + koff(a, b, s, g);
		double p;

		if (sc[s] == -INFINITY)
			continue;
		p = exp(sc[s] - m);
		sum += p;
		for (long long d = 0; d < hd; d++)
			acc[d] += p * vs[d];
	}
	for (long long d = 0; d < hd; d++)
		o[d] = sum > 0 ? (float)(acc[d] / sum) : 0.0f;
	return sum > 0 ? (float)(m + log(sum)) : -INFINITY;
}

int kern_cpu_attn_fwd(struct kern_ctx *k, const struct kern_attn *a,
		      const float *q, const float *kk, const float *v,
		      const int32_t *qpos, const int32_t *kpos, float *o,
		      float *lse)
{
	long long group = a->nh / a->nkv;
	double *sc = malloc((size_t)(a->sk + a->hd) * sizeof(*sc));

	(void)k;
	if (!sc)
		return KERN_ENOMEM;
	for (long long b = 0; b < a->batch; b++)
		for (long long h = 0; h < a->nh; h++)
			for (long long i = 0; i < a->sq; i++)
				lse[(b * a->nh + h) * a->sq + i] = fwd_row(
					a, q + qoff(a, b, i, h), kk, v, kpos,
					pos_at(qpos, i), b, h / group,
					o + qoff(a, b, i, h), sc, sc + a->sk);
	free(sc);
	return 0;
}

/* lse' = log(exp(l1) + exp(l2)) as max + log1p(exp(min - max)), in
 * double; a -INFINITY side contributes nothing. */
int kern_cpu_attn_merge(struct kern_ctx *k, const struct kern_attn *a,
			float *o, float *lse, const float *o2,
			const float *lse2)
{
	(void)k;
	for (long long b = 0; b < a->batch; b++)
		for (long long h = 0; h < a->nh; h++)
			for (long long i = 0; i < a->sq; i++) {
				long long li = (b * a->nh + h) * a->sq + i;
				float *x = o + qoff(a, b, i, h);
				const float *y = o2 + qoff(a, b, i, h);
				double l1 = lse[li], l2 = lse2[li], hi, l, w1,
				       w2;

				if (l2 == -INFINITY)
					continue;
				hi = l1 > l2 ? l1 : l2;
				l = hi + log1p(exp((l1 > l2 ? l2 : l1) - hi));
				w1 = exp(l1 - l);
				w2 = exp(l2 - l);
				for (long long d = 0; d < a->hd; d++)
					x[d] = (float)(w1 * x[d] + w2 * y[d]);
				lse[li] = (float)l;
			}
	return 0;
}

/* Scratch of the backward: the group's dk and dv [sk, hd] and one query
 * row's dq [hd], in double. */
struct bwd_acc {
	double *dk, *dv, *dq;
};

/* One query row (b, i, head h of key/value head g) against every attended
 * key of the block: adds its dq into acc->dq and its dk, dv into the
 * group's acc->dk, acc->dv. */
static void bwd_row(const struct kern_attn *a, const float *q,
		    const float *kk, const float *v, const float *o,
		    const float *dout, const int32_t *kpos, int32_t qp,
		    double lse, long long b, long long g, struct bwd_acc *acc)
{
	long long hd = a->hd;
	double dsum = dot(dout, o, hd);

	for (long long s = 0; s < a->sk; s++) {
		const float *ks = kk + koff(a, b, s, g);
		const float *vs = v + koff(a, b, s, g);
		double p, ds;

		if (pos_at(kpos, s) > qp)
			continue;
		p = exp(a->scale * dot(q, ks, hd) - lse);
		ds = p * (dot(dout, vs, hd) - dsum);
		for (long long d = 0; d < hd; d++) {
			acc->dv[s * hd + d] += p * dout[d];
			acc->dk[s * hd + d] += a->scale * ds * q[d];
			acc->dq[d] += a->scale * ds * ks[d];
		}
	}
}

/* The rows of key/value head g of sequence b: every query head of the
 * group, every query row with a finite lse (a row that attended nothing
 * has no gradient). */
static void bwd_group(const struct kern_attn *a, const float *q,
		      const float *kk, const float *v, const float *o,
		      const float *lse, const float *dout, const int32_t *qpos,
		      const int32_t *kpos, long long b, long long g, float *dq,
		      struct bwd_acc *acc)
{
	long long group = a->nh / a->nkv, hd = a->hd;

	for (long long h = g * group; h < (g + 1) * group; h++)
		for (long long i = 0; i < a->sq; i++) {
			double l = lse[(b * a->nh + h) * a->sq + i];
			long long at = qoff(a, b, i, h);

			if (l == -INFINITY)
				continue;
			for (long long d = 0; d < hd; d++)
				acc->dq[d] = 0;
			bwd_row(a, q + at, kk, v, o + at, dout + at, kpos,
				pos_at(qpos, i), l, b, g, acc);
			for (long long d = 0; d < hd; d++)
				dq[at + d] += (float)acc->dq[d];
		}
}

int kern_cpu_attn_bwd(struct kern_ctx *k, const struct kern_attn *a,
		      const float *q, const float *kk, const float *v,
		      const float *o, const float *lse, const float *dout,
		      const int32_t *qpos, const int32_t *kpos, float *dq,
		      float *dk, float *dv)
{
	long long n = a->sk * a->hd;
	double *buf = malloc((size_t)(2 * n + a->hd) * sizeof(*buf));
	struct bwd_acc acc = { buf, buf + n, buf + 2 * n };

	(void)k;
	if (!buf)
		return KERN_ENOMEM;
	if (a->overwrite) { /* zeroed, then the same sums: 0 + x is x */
		size_t nk = (size_t)(a->batch * a->sk * a->nkv * a->hd);

		memset(dq, 0, (size_t)(a->batch * a->sq * a->nh * a->hd) *
				      sizeof(*dq));
		memset(dk, 0, nk * sizeof(*dk));
		memset(dv, 0, nk * sizeof(*dv));
	}
	for (long long b = 0; b < a->batch; b++)
		for (long long g = 0; g < a->nkv; g++) {
			for (long long j = 0; j < 2 * n; j++)
				buf[j] = 0;
			bwd_group(a, q, kk, v, o, lse, dout, qpos, kpos, b, g,
				  dq, &acc);
			for (long long s = 0; s < a->sk; s++) {
				float *dks = dk + koff(a, b, s, g);
				float *dvs = dv + koff(a, b, s, g);

				for (long long d = 0; d < a->hd; d++) {
					dks[d] += (float)acc.dk[s * a->hd + d];
					dvs[d] += (float)acc.dv[s * a->hd + d];
				}
			}
		}
	free(buf);
	return 0;
}
