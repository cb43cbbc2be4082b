/*
 * kern_gemm_lt: kernels/kern_gemm_lt.h on cuBLASLt.
 *
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so a call
 * hands cuBLASLt B as its first operand and A as its second, each with its
 * own transpose flag, and C as a column-major [n, m] matrix: no data moves.
 *
 * Plans (descriptors and the chosen algorithm) live in a small array per
 * handle, searched linearly: a model has a few dozen GEMM shapes.
 *
 * Errors are values: a CUDA or cuBLASLt failure's message, with its
 * file:line, is kept for the caller to print (kern_set_error, kern.h).
 */
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "kern_cuda.h"

extern "C" {
#include "kern_gemm_lt.h"
}

#define LT_WORKSPACE (32u << 20) /* NVIDIA's advice for Hopper */
#define LT_CANDIDATES 8
#define LT_TIMED_RUNS 3

struct lt_key {
	int ta, tb, ctype, bias, beta0;
	long long m, n, kd, lda, ldb, ldc;
	int align_a, align_b, align_c; /* bytes, powers of 2 up to 256 */
};

struct lt_plan {
	struct lt_key key;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc; /* cuBLASLt's A (our B), B, C */
	cublasLtMatmulAlgo_t algo;
};

struct kern_lt {
	cublasLtHandle_t h;
	cudaStream_t stream;
	void *ws;
	int tune, n, cap;
	struct lt_plan *plans;
};

static int lt_blas_fail(cublasStatus_t s, const char *what, int line)
{
	int rc = s == CUBLAS_STATUS_ALLOC_FAILED ? KERN_ENOMEM :
		 s == CUBLAS_STATUS_NOT_SUPPORTED ||
		 s == CUBLAS_STATUS_INVALID_VALUE ? KERN_EINVAL : KERN_EDEVICE;

	return kern_set_error(rc, "%s:%d: %s: %s", __FILE__, line, what,
			      cublasGetStatusString(s));
}

#define LT_BLAS(cmd)                                                   \
	do {                                                           \
		cublasStatus_t s_ = (cmd);                             \
		if (s_ != CUBLAS_STATUS_SUCCESS)                       \
			return lt_blas_fail(s_, #cmd, __LINE__);       \
	} while (0)

extern "C" int kern_lt_new(void *stream, int tune, struct kern_lt **out)
{
	struct kern_lt *lt = (struct kern_lt *)calloc(1, sizeof(*lt));
	cublasStatus_t s;
	cudaError_t e;

	*out = NULL;
	if (!lt)
		return KERN_ENOMEM;
	lt->stream = (cudaStream_t)stream;
	lt->tune = tune;
	s = cublasLtCreate(&lt->h);
	if (s != CUBLAS_STATUS_SUCCESS) {
		free(lt);
		return lt_blas_fail(s, "cublasLtCreate", __LINE__);
	}
	e = cudaMalloc(&lt->ws, LT_WORKSPACE);
	if (e != cudaSuccess) {
		cublasLtDestroy(lt->h);
		free(lt);
		return cuda_fail(e, "cudaMalloc(workspace)", __FILE__, __LINE__);
	}
	*out = lt;
	return 0;
}

static void lt_plan_release(struct lt_plan *p)
{
	if (p->desc)
		cublasLtMatmulDescDestroy(p->desc);
	if (p->la)
		cublasLtMatrixLayoutDestroy(p->la);
	if (p->lb)
		cublasLtMatrixLayoutDestroy(p->lb);
	if (p->lc)
		cublasLtMatrixLayoutDestroy(p->lc);
	memset(p, 0, sizeof(*p));
}

extern "C" void kern_lt_free(struct kern_lt *lt)
{
	if (!lt)
		return;
	for (int i = 0; i < lt->n; i++)
		lt_plan_release(&lt->plans[i]);
	free(lt->plans);
	cudaFree(lt->ws);
	cublasLtDestroy(lt->h);
	free(lt);
}

extern "C" int kern_lt_plans(const struct kern_lt *lt)
{
	return lt ? lt->n : 0;
}

static int lt_align(const void *p)
{
	uintptr_t v = (uintptr_t)p;
	int a = 2;

	while (a < 256 && !(v & (uintptr_t)a))
		a <<= 1;
	return a;
}

/* Descriptors of a plan; cuBLASLt's A is our B. */
static int lt_describe(struct lt_plan *p)
{
	const struct lt_key *k = &p->key;
	cublasOperation_t opa = k->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t opb = k->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	cudaDataType_t ct = k->ctype == KERN_LT_BF16 ? CUDA_R_16BF : CUDA_R_32F;

	LT_BLAS(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F,
					 CUDA_R_32F));
	LT_BLAS(cublasLtMatmulDescSetAttribute(
		p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
	LT_BLAS(cublasLtMatmulDescSetAttribute(
		p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
	if (k->bias) {
		cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_BIAS;

		LT_BLAS(cublasLtMatmulDescSetAttribute(
			p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof(ep)));
		LT_BLAS(cublasLtMatmulDescSetAttribute(
			p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &ct,
			sizeof(ct)));
	}
	/* column-major views: our B is [n, kd] (or [kd, n] transposed) */
	LT_BLAS(cublasLtMatrixLayoutCreate(&p->la, CUDA_R_16BF,
					   (uint64_t)(k->tb ? k->kd : k->n),
					   (uint64_t)(k->tb ? k->n : k->kd),
					   k->ldb));
	LT_BLAS(cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_16BF,
					   (uint64_t)(k->ta ? k->m : k->kd),
					   (uint64_t)(k->ta ? k->kd : k->m),
					   k->lda));
	LT_BLAS(cublasLtMatrixLayoutCreate(&p->lc, ct, (uint64_t)k->n,
					   (uint64_t)k->m, k->ldc));
	return 0;
}

static int lt_heuristic(struct kern_lt *lt, struct lt_plan *p,
			cublasLtMatmulHeuristicResult_t *res, int *count)
{
	cublasLtMatmulPreference_t pref;
	uint64_t ws = LT_WORKSPACE;
	uint32_t al[3] = { (uint32_t)p->key.align_b, (uint32_t)p->key.align_a,
			   (uint32_t)p->key.align_c };
	cublasStatus_t s;

	LT_BLAS(cublasLtMatmulPreferenceCreate(&pref));
	s = cublasLtMatmulPreferenceSetAttribute(
		pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
	if (s == CUBLAS_STATUS_SUCCESS)
		s = cublasLtMatmulPreferenceSetAttribute(
			pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0],
			sizeof(al[0]));
	if (s == CUBLAS_STATUS_SUCCESS)
		s = cublasLtMatmulPreferenceSetAttribute(
			pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1],
			sizeof(al[1]));
	if (s == CUBLAS_STATUS_SUCCESS)
		s = cublasLtMatmulPreferenceSetAttribute(
			pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2],
			sizeof(al[2]));
	if (s == CUBLAS_STATUS_SUCCESS)
		s = cublasLtMatmulPreferenceSetAttribute(
			pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2],
			sizeof(al[2]));
	if (s == CUBLAS_STATUS_SUCCESS)
		s = cublasLtMatmulAlgoGetHeuristic(lt->h, p->desc, p->la, p->lb,
						   p->lc, p->lc, pref,
						   LT_CANDIDATES, res, count);
	cublasLtMatmulPreferenceDestroy(pref);
	if (s != CUBLAS_STATUS_SUCCESS)
		return lt_blas_fail(s, "cublasLtMatmulAlgoGetHeuristic", __LINE__);
	if (*count < 1)
		return kern_set_error(KERN_EINVAL, "kern_gemm_lt: no cuBLASLt "
				      "algorithm for %lld x %lld x %lld",
				      p->key.m, p->key.n, p->key.kd);
	return 0;
}

struct lt_call {
	float alpha, beta;
	const void *a, *b, *bias;
	void *c;
};

static cublasStatus_t lt_run(struct kern_lt *lt, struct lt_plan *p,
			     const cublasLtMatmulAlgo_t *algo,
			     const struct lt_call *c)
{
	if (p->key.bias) {
		cublasStatus_t s = cublasLtMatmulDescSetAttribute(
			p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c->bias,
			sizeof(c->bias));

		if (s != CUBLAS_STATUS_SUCCESS)
			return s;
	}
	return cublasLtMatmul(lt->h, p->desc, &c->alpha, c->b, p->la, c->a,
			      p->lb, &c->beta, c->c, p->lc, c->c, p->lc, algo,
			      lt->ws, LT_WORKSPACE, lt->stream);
}

/* Milliseconds of LT_TIMED_RUNS runs of one candidate into scratch C;
 * a negative value when the candidate fails. */
static float lt_time(struct kern_lt *lt, struct lt_plan *p,
		     const cublasLtMatmulAlgo_t *algo, struct lt_call *c,
		     cudaEvent_t ev[2])
{
	float ms = -1.0f;

	if (lt_run(lt, p, algo, c) != CUBLAS_STATUS_SUCCESS)
		return -1.0f;
	if (cudaEventRecord(ev[0], lt->stream) != cudaSuccess)
		return -1.0f;
	for (int i = 0; i < LT_TIMED_RUNS; i++)
		if (lt_run(lt, p, algo, c) != CUBLAS_STATUS_SUCCESS)
			return -1.0f;
	if (cudaEventRecord(ev[1], lt->stream) != cudaSuccess ||
	    cudaEventSynchronize(ev[1]) != cudaSuccess ||
	    cudaEventElapsedTime(&ms, ev[0], ev[1]) != cudaSuccess)
		return -1.0f;
	return ms;
}

/* The fastest of the candidates on the call's operands, into scratch C. */
static int lt_tune(struct kern_lt *lt, struct lt_plan *p,
		   const cublasLtMatmulHeuristicResult_t *res, int count,
		   const struct lt_call *call)
{
	size_t esz = p->key.ctype == KERN_LT_BF16 ? 2 : 4;
	size_t bytes = (size_t)p->key.ldc * (size_t)(p->key.m - 1) * esz +
		       (size_t)p->key.n * esz;
	struct lt_call c = *call;
	cudaEvent_t ev[2] = { NULL, NULL };
	float best = -1.0f;
	int rc = 0;

	CUDACHECK(cudaMalloc(&c.c, bytes));
	if (cudaMemsetAsync(c.c, 0, bytes, lt->stream) != cudaSuccess ||
	    cudaEventCreate(&ev[0]) != cudaSuccess ||
	    cudaEventCreate(&ev[1]) != cudaSuccess) {
		rc = cuda_fail(cudaGetLastError(), "tuning setup", __FILE__,
			       __LINE__);
		goto out;
	}
	for (int i = 0; i < count; i++) {
		float ms = lt_time(lt, p, &res[i].algo, &c, ev);

		if (ms >= 0.0f && (best < 0.0f || ms < best)) {
			best = ms;
			p->algo = res[i].algo;
		}
	}
	(void)cudaGetLastError();
out:
	if (ev[0])
		cudaEventDestroy(ev[0]);
	if (ev[1])
		cudaEventDestroy(ev[1]);
	if (cudaStreamSynchronize(lt->stream) != cudaSuccess && !rc)
		rc = cuda_fail(cudaGetLastError(), "tuning", __FILE__,
			       __LINE__);
	cudaFree(c.c);
	return rc;
}

static struct lt_plan *lt_find(struct kern_lt *lt, const struct lt_key *k)
{
	for (int i = 0; i < lt->n; i++)
		if (!memcmp(&lt->plans[i].key, k, sizeof(*k)))
			return &lt->plans[i];
	return NULL;
}

static int lt_plan_new(struct kern_lt *lt, const struct lt_key *k,
		       const struct lt_call *call, struct lt_plan **out)
{
	cublasLtMatmulHeuristicResult_t res[LT_CANDIDATES];
	struct lt_plan p;
	int count = 0, rc;

	memset(&p, 0, sizeof(p));
	p.key = *k;
	rc = lt_describe(&p);
	if (!rc)
		rc = lt_heuristic(lt, &p, res, &count);
	if (!rc) {
		p.algo = res[0].algo;
		if (lt->tune && count > 1)
			rc = lt_tune(lt, &p, res, count, call);
	}
	if (!rc && lt->n == lt->cap) {
		int cap = lt->cap ? 2 * lt->cap : 16;
		struct lt_plan *np = (struct lt_plan *)realloc(
			lt->plans, (size_t)cap * sizeof(*np));

		if (!np)
			rc = KERN_ENOMEM;
		else {
			lt->plans = np;
			lt->cap = cap;
		}
	}
	if (rc) {
		lt_plan_release(&p);
		return rc;
	}
	lt->plans[lt->n] = p;
	*out = &lt->plans[lt->n++];
	return 0;
}

static int lt_args_ok(int ta, int tb, long long m, long long n, long long kd,
		      long long lda, long long ldb, long long ldc)
{
	return m >= 1 && n >= 1 && kd >= 1 && lda >= (ta ? m : kd) &&
	       ldb >= (tb ? kd : n) && ldc >= n;
}

extern "C" int kern_lt_gemm(struct kern_lt *lt, int ta, int tb, long long m,
			    long long n, long long kd, float alpha,
			    const uint16_t *a, long long lda, const uint16_t *b,
			    long long ldb, float beta, void *c,
			    enum kern_lt_type ctype, long long ldc,
			    const void *bias)
{
	struct lt_call call = { alpha, beta, a, b, bias, c };
	struct lt_plan *p;
	struct lt_key k;
	cublasStatus_t s;
	int rc;

	if (!lt || !a || !b || !c || (ctype != KERN_LT_F32 && ctype != KERN_LT_BF16) ||
	    !lt_args_ok(ta, tb, m, n, kd, lda, ldb, ldc))
		return kern_set_error(KERN_EINVAL, "kern_gemm_lt: %lld x %lld "
				      "x %lld, ld %lld %lld %lld", m, n, kd,
				      lda, ldb, ldc);
	memset(&k, 0, sizeof(k));
	k.ta = !!ta;
	k.tb = !!tb;
	k.ctype = ctype;
	k.bias = bias != NULL;
	k.beta0 = beta == 0.0f;
	k.m = m;
	k.n = n;
	k.kd = kd;
	k.lda = lda;
	k.ldb = ldb;
	k.ldc = ldc;
	k.align_a = lt_align(a);
	k.align_b = lt_align(b);
	k.align_c = lt_align(c);
	p = lt_find(lt, &k);
	if (!p && (rc = lt_plan_new(lt, &k, &call, &p)))
		return rc;
	s = lt_run(lt, p, &p->algo, &call);
	if (s != CUBLAS_STATUS_SUCCESS)
		return lt_blas_fail(s, "cublasLtMatmul", __LINE__);
	return 0;
}
