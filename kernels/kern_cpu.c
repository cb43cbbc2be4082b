/*
 * kern_cpu: the CPU twin of every kernel (kern.h): OpenBLAS for GEMM and
 * AXPY, plain loops for the rest. Arguments were checked by kern.c.
 * Loops run in a fixed order, so a result depends only on the inputs, and
 * row statistics accumulate in fp32 as the CUDA twin's do; sums over many
 * rows (bias_grad) and attention's sums (kern_cpu_attn.c) accumulate in
 * double, since these are the references the CUDA kernels are tested
 * against.
 */
#include "kern.h"
#include "kern_cpu.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Alignment of kern_alloc's blocks: a cache line, enough for AVX-512. */
#define KERN_CPU_ALIGN 64

static int cpu_init(struct kern_ctx *k, int threads)
{
	(void)k;
	if (threads > 0)
		openblas_set_num_threads(threads);
	return 0;
}

static void cpu_release(struct kern_ctx *k)
{
	(void)k;
}

static int cpu_alloc(struct kern_ctx *k, size_t bytes, void **out)
{
	size_t n = (bytes + KERN_CPU_ALIGN - 1) / KERN_CPU_ALIGN * KERN_CPU_ALIGN;

	(void)k;
	*out = aligned_alloc(KERN_CPU_ALIGN, n ? n : KERN_CPU_ALIGN);
	if (!*out)
		return KERN_ENOMEM;
	memset(*out, 0, n ? n : KERN_CPU_ALIGN);
	return 0;
}

static void cpu_free(struct kern_ctx *k, void *p)
{
	(void)k;
	free(p);
}

static int cpu_copy(struct kern_ctx *k, void *dst, const void *src, size_t n)
{
	(void)k;
	memmove(dst, src, n);
	return 0;
}

static int cpu_zero(struct kern_ctx *k, void *p, size_t bytes)
{
	(void)k;
	memset(p, 0, bytes);
	return 0;
}

static int cpu_sync(struct kern_ctx *k)
{
	(void)k;
	return 0;
}

/* OpenBLAS takes int sizes. */
static int fits_int(long long v)
{
	return v >= 0 && v <= 0x7fffffffLL;
}

static int cpu_gemm(struct kern_ctx *k, int ta, int tb, long long m,
		    long long n, long long kd, float alpha, const float *a,
		    long long lda, const float *b, long long ldb, float beta,
		    float *c, long long ldc)
{
	(void)k;
	if (!fits_int(m) || !fits_int(n) || !fits_int(kd) || !fits_int(lda) ||
	    !fits_int(ldb) || !fits_int(ldc))
		return KERN_EINVAL;
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
		    tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)kd,
		    alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
	return 0;
}

static int cpu_axpy(struct kern_ctx *k, long long n, float alpha,
		    const float *x, float *y)
{
	(void)k;
	if (!fits_int(n))
		return KERN_EINVAL;
	cblas_saxpy((int)n, alpha, x, 1, y, 1);
	return 0;
}

static int cpu_rmsnorm_fwd(struct kern_ctx *k, long long rows, long long h,
			   float eps, const float *x, const float *g, float *y,
			   float *rstd)
{
	(void)k;
	for (long long r = 0; r < rows; r++) {
		const float *xr = x + r * h;
		float *yr = y + r * h, ss = 0, s;

		for (long long i = 0; i < h; i++)
			ss += xr[i] * xr[i];
		s = 1.0f / sqrtf(ss / (float)h + eps);
		rstd[r] = s;
		for (long long i = 0; i < h; i++)
			yr[i] = xr[i] * s * g[i];
	}
	return 0;
}

/* y_i = x_i s g_i with s = (mean(x^2) + eps)^-1/2 gives
 * dx_i = s (g_i dy_i - x_i s^2 mean_j(g_j dy_j x_j)). */
static int cpu_rmsnorm_bwd(struct kern_ctx *k, long long rows, long long h,
			   const float *x, const float *g, const float *rstd,
			   const float *dy, float *dx, float *dg)
{
	(void)k;
	for (long long r = 0; r < rows; r++) {
		const float *xr = x + r * h, *dyr = dy + r * h;
		float *dxr = dx + r * h, s = rstd[r], dot = 0, c;

		for (long long i = 0; i < h; i++) {
			dot += g[i] * dyr[i] * xr[i];
			dg[i] += dyr[i] * xr[i] * s;
		}
		c = s * s * dot / (float)h;
		for (long long i = 0; i < h; i++)
			dxr[i] = s * (g[i] * dyr[i] - xr[i] * c);
	}
	return 0;
}

static int cpu_ce_max(struct kern_ctx *k, long long rows, long long cols,
		      long long nvalid, const float *logits, float *max)
{
	(void)k;
	for (long long r = 0; r < rows; r++) {
		const float *l = logits + r * cols;
		float m = -FLT_MAX;

		for (long long j = 0; j < nvalid; j++)
			if (l[j] > m)
				m = l[j];
		max[r] = m;
	}
	return 0;
}

static int cpu_ce_sumexp(struct kern_ctx *k, long long rows, long long cols,
			 long long nvalid, const float *logits,
			 const float *max, float *sum)
{
	(void)k;
	for (long long r = 0; r < rows; r++) {
		const float *l = logits + r * cols;
		float s = 0;

		for (long long j = 0; j < nvalid; j++)
			s += expf(l[j] - max[r]);
		sum[r] = s;
	}
	return 0;
}

static int cpu_ce_target(struct kern_ctx *k, long long rows, long long cols,
			 long long first, const int32_t *targets,
			 const float *logits, float *target)
{
	(void)k;
	for (long long r = 0; r < rows; r++) {
		long long j = (long long)targets[r] - first;

		target[r] = j >= 0 && j < cols ? logits[r * cols + j] : 0.0f;
	}
	return 0;
}

static int cpu_ce_loss(struct kern_ctx *k, long long rows, const float *max,
		       const float *sum, const float *target, float *loss)
{
	(void)k;
	for (long long r = 0; r < rows; r++)
		loss[r] = logf(sum[r]) + max[r] - target[r];
	return 0;
}

static int cpu_ce_bwd(struct kern_ctx *k, long long rows, long long cols,
		      long long nvalid, long long first,
		      const int32_t *targets, const float *max,
		      const float *sum, float scale, const float *logits,
		      float *dlogits)
{
	(void)k;
	for (long long r = 0; r < rows; r++) {
		const float *l = logits + r * cols;
		float *d = dlogits + r * cols, inv = 1.0f / sum[r];
		long long t = (long long)targets[r] - first;

		for (long long j = 0; j < nvalid; j++) {
			float p = expf(l[j] - max[r]) * inv;

			d[j] = scale * (j == t ? p - 1.0f : p);
		}
		for (long long j = nvalid; j < cols; j++)
			d[j] = 0.0f;
	}
	return 0;
}

static int cpu_embed_fwd(struct kern_ctx *k, long long n, long long h,
			 long long first, long long rows, const float *table,
			 const int32_t *tokens, float *out)
{
	(void)k;
	for (long long i = 0; i < n; i++) {
		long long row = (long long)tokens[i] - first;

		if (row >= 0 && row < rows)
			memcpy(out + i * h, table + row * h,
			       (size_t)h * sizeof(float));
		else
			memset(out + i * h, 0, (size_t)h * sizeof(float));
	}
	return 0;
}

static int cpu_embed_bwd(struct kern_ctx *k, long long n, long long h,
			 long long first, long long rows, const float *dout,
			 const int32_t *tokens, float *dtable)
{
	(void)k;
	for (long long i = 0; i < n; i++) {
		long long row = (long long)tokens[i] - first;

		if (row < 0 || row >= rows)
			continue;
		for (long long j = 0; j < h; j++)
			dtable[row * h + j] += dout[i * h + j];
	}
	return 0;
}

static int cpu_adam(struct kern_ctx *k, long long n, float lr, float beta1,
		    float beta2, float eps, long long step, float *p,
		    const float *g, float *m, float *v)
{
	float bc1 = (float)(1.0 - pow(beta1, (double)step));
	float bc2 = (float)(1.0 - pow(beta2, (double)step));

	(void)k;
	for (long long i = 0; i < n; i++) {
		m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
		v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
		p[i] -= lr * (m[i] / bc1) / (sqrtf(v[i] / bc2) + eps);
	}
	return 0;
}

static int cpu_sgd(struct kern_ctx *k, long long n, float lr, float *p,
		   const float *g)
{
	(void)k;
	for (long long i = 0; i < n; i++)
		p[i] -= lr * g[i];
	return 0;
}

static int cpu_bias_add(struct kern_ctx *k, long long rows, long long cols,
			const float *b, float *y)
{
	(void)k;
	for (long long r = 0; r < rows; r++)
		for (long long c = 0; c < cols; c++)
			y[r * cols + c] += b[c];
	return 0;
}

/* Column by column, so each sum runs over the rows in order, in double:
 * rows is batch x sequence (thousands), where an fp32 sum would drift. */
static int cpu_bias_grad(struct kern_ctx *k, long long rows, long long cols,
			 const float *dy, float *db)
{
	(void)k;
	for (long long c = 0; c < cols; c++) {
		double s = 0;

		for (long long r = 0; r < rows; r++)
			s += dy[r * cols + c];
		db[c] += (float)s;
	}
	return 0;
}

/* The logistic function; exp overflows to inf for a < -88, giving 0. */
static float sigmoid(float a)
{
	return 1.0f / (1.0f + expf(-a));
}

static int cpu_swiglu_fwd(struct kern_ctx *k, long long rows, long long f,
			  const float *x, float *y)
{
	(void)k;
	for (long long r = 0; r < rows; r++) {
		const float *gate = x + r * 2 * f, *up = gate + f;

		for (long long i = 0; i < f; i++)
			y[r * f + i] = gate[i] * sigmoid(gate[i]) * up[i];
	}
	return 0;
}

/* silu(a) = a s(a) with s the logistic function, so
 * silu'(a) = s(a) (1 + a (1 - s(a))). */
static int cpu_swiglu_bwd(struct kern_ctx *k, long long rows, long long f,
			  const float *x, const float *dy, float *dx)
{
	(void)k;
	for (long long r = 0; r < rows; r++) {
		const float *gate = x + r * 2 * f, *up = gate + f;
		const float *d = dy + r * f;
		float *dgate = dx + r * 2 * f, *dup = dgate + f;

		for (long long i = 0; i < f; i++) {
			float a = gate[i], s = sigmoid(a);

			dgate[i] = d[i] * up[i] * s * (1.0f + a * (1.0f - s));
			dup[i] = d[i] * a * s;
		}
	}
	return 0;
}

/* Row r's columns of group j: packed + r W + j (nq + 2 nk), W the packed
 * row's length; merge copies the other way (kern.h). */
static void qkv_move(long long rows, long long groups, long long nq,
		     long long nk, float *packed, float *q, float *kk,
		     float *v, int merge)
{
	long long gw = nq + 2 * nk;
	size_t bq = (size_t)nq * sizeof(float), bk = (size_t)nk * sizeof(float);

	for (long long r = 0; r < rows; r++)
		for (long long j = 0; j < groups; j++) {
			float *p = packed + (r * groups + j) * gw;
			float *pq = q + (r * groups + j) * nq;
			float *pk = kk + (r * groups + j) * nk;
			float *pv = v + (r * groups + j) * nk;

			memcpy(merge ? p : pq, merge ? pq : p, bq);
			memcpy(merge ? p + nq : pk, merge ? pk : p + nq, bk);
			memcpy(merge ? p + nq + nk : pv,
			       merge ? pv : p + nq + nk, bk);
		}
}

static int cpu_qkv_split(struct kern_ctx *k, long long rows,
			 long long groups, long long nq, long long nk,
			 const float *packed, float *q, float *kk, float *v)
{
	(void)k;
	qkv_move(rows, groups, nq, nk, (float *)packed, q, kk, v, 0);
	return 0;
}

static int cpu_qkv_merge(struct kern_ctx *k, long long rows,
			 long long groups, long long nq, long long nk,
			 const float *q, const float *kk, const float *v,
			 float *packed)
{
	(void)k;
	qkv_move(rows, groups, nq, nk, packed, (float *)q, (float *)kk,
		 (float *)v, 1);
	return 0;
}

/* Rotate-half RoPE's cos and sin for pair i of a row at position p
 * (kern.h): the angle pos * theta^(-2i/hd) and its cos and sin in double,
 * rounded to fp32 before the multiply as Megatron's and Hugging Face's
 * cos/sin tables are; the sin negated for the inverse. */
static void rope_cs(int32_t p, long long i, long long hd, double theta,
		    int inverse, float *c, float *s)
{
	double a = (double)p * pow(theta, -2.0 * (double)i / (double)hd);

	*c = (float)cos(a);
	*s = (float)sin(a);
	if (inverse)
		*s = -*s;
}

/* The pair (x1, x2) turned by the angle whose cos and sin are c, s. */
static void rope_turn(float *x1, float *x2, float c, float s)
{
	float a = *x1, b = *x2;

	*x1 = a * c - b * s;
	*x2 = b * c + a * s;
}

static int cpu_rope(struct kern_ctx *k, long long rows, long long heads,
		    long long hd, double theta, const int32_t *pos,
		    int inverse, float *x)
{
	long long half = hd / 2;

	(void)k;
	for (long long r = 0; r < rows; r++)
		for (long long i = 0; i < half; i++) {
			float c, s;

			rope_cs(pos[r], i, hd, theta, inverse, &c, &s);
			for (long long h = 0; h < heads; h++) {
				float *v = x + (r * heads + h) * hd;

				rope_turn(&v[i], &v[i + half], c, s);
			}
		}
	return 0;
}

/* Round to nearest even on the bits, so that the CUDA twin (the same
 * integer arithmetic) agrees bit for bit. */
static uint16_t bf16_of(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static float float_of(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static int cpu_to_bf16(struct kern_ctx *k, long long n, const float *x,
		       uint16_t *y)
{
	(void)k;
	for (long long i = 0; i < n; i++)
		y[i] = bf16_of(x[i]);
	return 0;
}

static int cpu_from_bf16(struct kern_ctx *k, long long n, const uint16_t *x,
			 float *y)
{
	(void)k;
	for (long long i = 0; i < n; i++)
		y[i] = float_of(x[i]);
	return 0;
}

static int cpu_round_bf16(struct kern_ctx *k, long long n, float *x)
{
	(void)k;
	for (long long i = 0; i < n; i++)
		x[i] = float_of(bf16_of(x[i]));
	return 0;
}

static int cpu_round_bf16_copy(struct kern_ctx *k, long long n, float *x,
			       uint16_t *y)
{
	(void)k;
	for (long long i = 0; i < n; i++) {
		y[i] = bf16_of(x[i]);
		x[i] = float_of(y[i]);
	}
	return 0;
}

/* One head of hd values from src into dst16 and, when set, dst: turned
 * by RoPE's table cs of the row (cos in [0, hd/2), sin after; rope_cs)
 * when cs is set, each value rounded to bf16 (cpu_round_bf16_copy's
 * arithmetic). */
static void head_bf(const float *src, long long hd, const float *cs,
		    float *dst, uint16_t *dst16)
{
	long long half = hd / 2;

	for (long long i = 0; i < half; i++) {
		float x1 = src[i], x2 = src[i + half];

		if (cs)
			rope_turn(&x1, &x2, cs[i], cs[half + i]);
		dst16[i] = bf16_of(x1);
		dst16[i + half] = bf16_of(x2);
		if (dst) {
			dst[i] = float_of(dst16[i]);
			dst[i + half] = float_of(dst16[i + half]);
		}
	}
}

/* kern_qkv_rope_bf (merge 0: packed to the parts q, k, v and their copies)
 * and kern_qkv_merge_rope_bf (merge 1: the parts to packed and its copy),
 * head by head in the packed order; the same float operations as the
 * unfused ops, so the same bits (kern.h). */
static int qkv_rope(const struct kern_qkv *a, const int32_t *pos, int merge,
		    float *packed, uint16_t *packed16, float *const part[3],
		    uint16_t *const part16[3])
{
	long long hd = a->hd, half = hd / 2, qh = a->nq / hd, kh = a->nk / hd;
	long long hpg = qh + 2 * kh;
	float *cs = malloc((size_t)hd * sizeof(float));

	if (!cs)
		return KERN_ENOMEM;
	for (long long r = 0; r < a->rows; r++) {
		for (long long i = 0; i < half; i++)
			rope_cs(pos[r], i, hd, a->theta, merge, &cs[i],
				&cs[half + i]);
		for (long long j = 0; j < a->groups; j++)
			for (long long h = 0; h < hpg; h++) {
				int p = h < qh ? 0 : h < qh + kh ? 1 : 2;
				long long per = p ? kh : qh;
				long long lh = h - (p ? qh + (p - 1) * kh : 0);
				long long rj = r * a->groups + j;
				long long off = (rj * per + lh) * hd;
				long long po = (rj * hpg + h) * hd;
				const float *t = p < 2 ? cs : NULL;

				if (merge)
					head_bf(part[p] + off, hd, t,
						packed ? packed + po : NULL,
						packed16 + po);
				else
					head_bf(packed + po, hd, t,
						part[p] ? part[p] + off : NULL,
						part16[p] + off);
			}
	}
	free(cs);
	return 0;
}

static int cpu_qkv_rope_bf(struct kern_ctx *k, const struct kern_qkv *a,
			   const int32_t *pos, const float *packed, float *q,
			   float *kk, float *v, uint16_t *q16, uint16_t *k16,
			   uint16_t *v16)
{
	float *part[3] = { q, kk, v };
	uint16_t *part16[3] = { q16, k16, v16 };

	(void)k;
	return qkv_rope(a, pos, 0, (float *)packed, NULL, part, part16);
}

static int cpu_qkv_merge_rope_bf(struct kern_ctx *k, const struct kern_qkv *a,
				 const int32_t *pos, const float *dq,
				 const float *dk, const float *dv,
				 float *packed, uint16_t *packed16)
{
	float *part[3] = { (float *)dq, (float *)dk, (float *)dv };
	uint16_t *part16[3] = { NULL, NULL, NULL };

	(void)k;
	return qkv_rope(a, pos, 1, packed, packed16, part, part16);
}

const struct kern_ops kern_cpu_ops = {
	.name = "cpu",
	.init = cpu_init,
	.release = cpu_release,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.upload = cpu_copy,
	.download = cpu_copy,
	.copy = cpu_copy,
	.zero = cpu_zero,
	.sync = cpu_sync,
	.gemm = cpu_gemm,
	.axpy = cpu_axpy,
	.rmsnorm_fwd = cpu_rmsnorm_fwd,
	.rmsnorm_bwd = cpu_rmsnorm_bwd,
	.ce_max = cpu_ce_max,
	.ce_sumexp = cpu_ce_sumexp,
	.ce_target = cpu_ce_target,
	.ce_loss = cpu_ce_loss,
	.ce_bwd = cpu_ce_bwd,
	.embed_fwd = cpu_embed_fwd,
	.embed_bwd = cpu_embed_bwd,
	.adam = cpu_adam,
	.sgd = cpu_sgd,
	.to_bf16 = cpu_to_bf16,
	.from_bf16 = cpu_from_bf16,
	.round_bf16 = cpu_round_bf16,
	.round_bf16_copy = cpu_round_bf16_copy,
	.bias_add = cpu_bias_add,
	.bias_grad = cpu_bias_grad,
	.qkv_split = cpu_qkv_split,
	.qkv_merge = cpu_qkv_merge,
	.qkv_rope_bf = cpu_qkv_rope_bf,
	.qkv_merge_rope_bf = cpu_qkv_merge_rope_bf,
	.swiglu_fwd = cpu_swiglu_fwd,
	.swiglu_bwd = cpu_swiglu_bwd,
	.rope = cpu_rope,
	.attn_fwd = kern_cpu_attn_fwd,
	.attn_merge = kern_cpu_attn_merge,
	.attn_bwd = kern_cpu_attn_bwd,
};
