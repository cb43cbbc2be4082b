/*
 * test_kernels_qkv_gpu: linear_qkv's columns fused with RoPE and the bf16
 * copies on the device (kernels/kern_cuda_qkv_rope.cu: kern_qkv_rope_bf and
 * its backward kern_qkv_merge_rope_bf) against the CPU twin and against
 * the device's own unfused sequence (kern_qkv_split, kern_rope,
 * kern_round_bf16_copy; backward kern_rope inverse, kern_round_bf16,
 * kern_qkv_merge, kern_round_bf16_copy), on random shapes: query groups
 * of 1, 4 and 8 query heads, head dims 64 and 128 (the 16-byte kernel)
 * and 6 (the scalar one), odd row counts, arrays one float off 16-byte
 * alignment (the scalar kernel again), positions up to 128k with Llama
 * 3's theta. Then the context's RoPE table (kern_cuda_qkv_rope.cu
 * rope_table) through stages on one context (tstages): made, grown by
 * more rows, remade for another theta and head dim, with rows at
 * positions inside it, past it and negative (the kernels' fallback).
 * Then a context-parallel rank's rows, fewer than their positions, with
 * and without the bound kern_qkv's pos_end puts on them (on a context of
 * its own: the table grown by the bound, not the rows). Linked into
 * test_kernels_gpu (tests/gpu/test_kernels_gpu.c, whose top
 * says how kernels are judged).
 *
 * Tolerances and why:
 *  - qkv_rope_bf 2^-7 (TOL_QKV_BF) against the CPU twin: RoPE's cos and
 *    sin come from the device's pow, cos and sin (kern_rope's own test,
 *    TOL_ELEM in test_kernels_llm_gpu.c, allows their ulps) and ptxas may
 *    contract a product into an FMA, so an fp32 value may sit an ulp away
 *    and its bf16 rounding one bf16 ulp away: 2^-7 of a value at the
 *    bottom of its binade (bf16 keeps 8 significant bits), so up to 2^-7
 *    of the largest value in the normwise measure (4e-3 held until the
 *    table's test drew other random inputs for the tests after it: one
 *    such value then came out 5.5e-3 away on an H200).
 *  - qkv_rope_bits 0: every copy holds the bits of the fp32 value the
 *    same call wrote (kern_to_bf16 of it on the CPU), and leaving the
 *    fp32 outputs out (NULL) changes no copy.
 *  - qkv_rope_unfused 2^-7 (TOL_QKV_BF) against the device's unfused
 *    sequence: the same cos, sin and PTX for the turn
 *    (kernels/qkv_rope.cuh rope_cs, rope_turn), so equal unless ptxas
 *    contracts y1 = x1 c - x2 s differently in the two kernels; the
 *    number of values that differ is printed.
 *  - qkv_rope_table 2^-7 (TOL_QKV_BF) against the CPU twin, as
 *    qkv_rope_bf: a table of the wrong theta or head dim is far off.
 *  - qkv_rope_table_bits 0: a row's outputs are the same bits whether its
 *    cos and sin came from the table or from the fallback (the same
 *    rope_cs and the same turn), and the copies are their fp32 values'
 *    rounding.
 *  - qkv_rope_pos_end 2^-7 (TOL_QKV_BF) against the CPU twin, as
 *    qkv_rope_bf; qkv_rope_pos_end_bits 0: the rows past a table of
 *    max(rows, 4096) positions give the same bits from the fallback
 *    (pos_end 0) as from the table pos_end grows, where a table filled
 *    only up to the rows, or from a wrong row, would be far off.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_gpu_fixture.h"

#define TOL_QKV_BF 7.8125e-3 /* 2^-7: one bf16 ulp, above */

/* One shape (rows, groups, query heads a group, key heads a group, hd)
 * and whether the device arrays start one float off alignment. */
struct qshape {
	long long rows, groups, qh, kh, hd;
	int skew;
};

/* 4099 rows: more blocks of kern_cuda_qkv_rope.cu's qkv_rope8_k than an H200
 * holds at once; hd 1024: past its QR_MAX_HD, qkv_rope_k. */
static const struct qshape qshapes[] = {
	{ 1, 1, 1, 1, 64, 0 }, { 33, 2, 4, 1, 64, 0 }, { 257, 1, 8, 1, 128, 0 },
	{ 129, 3, 1, 2, 128, 0 }, { 7, 2, 8, 1, 64, 1 }, { 5, 2, 3, 1, 6, 0 },
	{ 1001, 4, 4, 1, 64, 0 }, { 4099, 2, 4, 1, 128, 0 },
	{ 3, 1, 1, 1, 1024, 0 },
};
#define NQSHAPE (sizeof(qshapes) / sizeof(qshapes[0]))

/* A device array of n floats (n bf16 values: half) holding h (or
 * zeros), starting `skew` floats into its block; *base is the block. */
static void *dev_at(const void *h, long long n, size_t el, int skew,
		    void **base)
{
	size_t off = (size_t)skew * 4, bytes = (size_t)n * el + off;
	char *d = NULL;
	int rc = kern_alloc(&G, bytes ? bytes : 1, (void **)&d);

	if (!rc && h)
		rc = kern_upload(&G, d + off, h, (size_t)n * el);
	if (rc) {
		fprintf(stderr, "test_kernels_gpu: qkv: %s\n",
			kern_error_text(rc));
		exit(1);
	}
	*base = d;
	return d + off;
}

/* Device floats and bf16 bits against the host's: values by relerr into
 * v; bits into vb (0 when h16 is the rounding of the device's floats,
 * INFINITY else); *ndiff counts the values that differ from want. */
static void judge(struct verdict *v, struct verdict *vb, const float *d,
		  const uint16_t *d16, const float *want, long long n,
		  long long *ndiff)
{
	float *x = xmalloc((size_t)n * 4);
	uint16_t *b = xmalloc((size_t)n * 2), *w = xmalloc((size_t)n * 2);

	see_rc(v, down(x, d, (size_t)n * 4));
	see_rc(v, down(b, d16, (size_t)n * 2));
	see(v, relerr(x, want, n));
	see_rc(vb, kern_to_bf16(&C, n, x, w));
	see(vb, memcmp(b, w, (size_t)n * 2) ? INFINITY : 0);
	for (long long i = 0; i < n && ndiff; i++)
		*ndiff += x[i] != want[i];
	free(x);
	free(b);
	free(w);
}

/* The verdicts: against the CPU, the copies' bits, against the device's
 * unfused sequence (and the count of differing values). */
struct qverdicts {
	struct verdict cpu, bits, unf;
	long long ndiff, n;
};

/* The forward of one shape on random packed columns. */
static void qkv_fwd_case(const struct kern_qkv *a, const int32_t *pos,
			 const int32_t *dpos, int skew, struct qverdicts *q)
{
	long long n[3] = { a->rows * a->groups * a->nq, a->rows * a->groups *
			   a->nk, a->rows * a->groups * a->nk };
	long long np = n[0] + n[1] + n[2], heads[2] = { a->groups * a->nq /
		a->hd, a->groups * a->nk / a->hd };
	float *p = rnd(np, 3), *cf[3], *uf[3], *df[3], *dp;
	uint16_t *ch[3], *dh[3], *dh2[3], *uh[3];
	void *blk[14];
	int nb = 0;

	dp = dev_at(p, np, 4, skew, &blk[nb++]);
	for (int i = 0; i < 3; i++) {
		cf[i] = xmalloc((size_t)n[i] * 4);
		ch[i] = xmalloc((size_t)n[i] * 2);
		df[i] = dev_at(NULL, n[i], 4, skew, &blk[nb++]);
		uf[i] = dev_at(NULL, n[i], 4, skew, &blk[nb++]);
		dh[i] = dev_at(NULL, n[i], 2, skew, &blk[nb++]);
		dh2[i] = dev_at(NULL, n[i], 2, 0, &blk[nb++]);
	}
	see_rc(&q->cpu, kern_qkv_rope_bf(&C, a, pos, p, cf[0], cf[1], cf[2],
					 ch[0], ch[1], ch[2]));
	see_rc(&q->cpu, kern_qkv_rope_bf(&G, a, dpos, dp, df[0], df[1], df[2],
					 dh[0], dh[1], dh[2]));
	see_rc(&q->bits, kern_qkv_rope_bf(&G, a, dpos, dp, NULL, NULL, NULL,
					  dh2[0], dh2[1], dh2[2]));
	for (int i = 0; i < 3; i++) {
		judge(&q->cpu, &q->bits, df[i], dh[i], cf[i], n[i], NULL);
		see(&q->bits, same_bits(&q->bits, dh[i], dh2[i],
					       (size_t)n[i] * 2));
		uh[i] = dh2[i]; /* checked: now the unfused copies' place */
	}
	/* the device's unfused sequence, into uf and uh */
	see_rc(&q->unf, kern_qkv_split(&G, a->rows, a->groups, a->nq, a->nk,
				       dp, uf[0], uf[1], uf[2]));
	for (int i = 0; i < 2; i++)
		see_rc(&q->unf, kern_rope(&G, a->rows, heads[i], a->hd,
					  a->theta, dpos, 0, uf[i]));
	for (int i = 0; i < 3; i++) {
		float *u = xmalloc((size_t)n[i] * 4);

		see_rc(&q->unf, kern_round_bf16_copy(&G, n[i], uf[i], uh[i]));
		see_rc(&q->unf, down(u, uf[i], (size_t)n[i] * 4));
		judge(&q->unf, &q->bits, df[i], dh[i], u, n[i], &q->ndiff);
		judge(&q->unf, &q->bits, uf[i], uh[i], u, n[i], NULL);
		q->n += n[i];
		free(u);
	}
	for (int i = 0; i < nb; i++)
		kern_free(&G, blk[i]);
	for (int i = 0; i < 3; i++) {
		free(cf[i]);
		free(ch[i]);
	}
	free(p);
}

/* The backward of one shape on random dq, dk, dv. */
static void qkv_bwd_case(const struct kern_qkv *a, const int32_t *pos,
			 const int32_t *dpos, int skew, struct qverdicts *q)
{
	long long n[3] = { a->rows * a->groups * a->nq, a->rows * a->groups *
			   a->nk, a->rows * a->groups * a->nk };
	long long np = n[0] + n[1] + n[2], heads[2] = { a->groups * a->nq /
		a->hd, a->groups * a->nk / a->hd };
	float *h[3], *dd[3], *cp = xmalloc((size_t)np * 4), *dp, *up_, *u;
	uint16_t *c16 = xmalloc((size_t)np * 2), *d16, *d16b, *u16;
	void *blk[10];
	int nb = 0;

	for (int i = 0; i < 3; i++) {
		h[i] = rnd(n[i], 0.5f);
		dd[i] = dev_at(h[i], n[i], 4, skew, &blk[nb++]);
	}
	dp = dev_at(NULL, np, 4, skew, &blk[nb++]);
	up_ = dev_at(NULL, np, 4, skew, &blk[nb++]);
	d16 = dev_at(NULL, np, 2, skew, &blk[nb++]);
	d16b = dev_at(NULL, np, 2, 0, &blk[nb++]);
	u16 = dev_at(NULL, np, 2, 0, &blk[nb++]);
	see_rc(&q->cpu, kern_qkv_merge_rope_bf(&C, a, pos, h[0], h[1], h[2],
					       cp, c16));
	see_rc(&q->cpu, kern_qkv_merge_rope_bf(&G, a, dpos, dd[0], dd[1],
					       dd[2], dp, d16));
	see_rc(&q->bits, kern_qkv_merge_rope_bf(&G, a, dpos, dd[0], dd[1],
						dd[2], NULL, d16b));
	judge(&q->cpu, &q->bits, dp, d16, cp, np, NULL);
	see(&q->bits, same_bits(&q->bits, d16, d16b, (size_t)np * 2));
	/* the device's unfused sequence, on dq, dk, dv in place */
	for (int i = 0; i < 2; i++)
		see_rc(&q->unf, kern_rope(&G, a->rows, heads[i], a->hd,
					  a->theta, dpos, 1, dd[i]));
	for (int i = 0; i < 3; i++)
		see_rc(&q->unf, kern_round_bf16(&G, n[i], dd[i]));
	see_rc(&q->unf, kern_qkv_merge(&G, a->rows, a->groups, a->nq, a->nk,
				       dd[0], dd[1], dd[2], up_));
	see_rc(&q->unf, kern_round_bf16_copy(&G, np, up_, u16));
	u = xmalloc((size_t)np * 4);
	see_rc(&q->unf, down(u, up_, (size_t)np * 4));
	judge(&q->unf, &q->bits, dp, d16, u, np, &q->ndiff);
	judge(&q->unf, &q->bits, up_, u16, u, np, NULL);
	q->n += np;
	for (int i = 0; i < nb; i++)
		kern_free(&G, blk[i]);
	for (int i = 0; i < 3; i++)
		free(h[i]);
	free(cp); free(c16); free(u);
}

/* ---- the context's RoPE table (kern_cuda_qkv_rope.cu rope_table) ------- */

/* The positions of every stage's first TN rows: inside any table (0, 1,
 * 4095), past one of 4096 positions but inside one of 8192 (4096, 5000,
 * 8191), past both or negative (the fallback, rope_cs in the kernel). */
static const int32_t tpos[] = { 0, 1, 4095, 4096, 5000, 8191, 131071, -1,
				-4096, INT32_MAX, INT32_MIN };
#define TN ((long long)(sizeof(tpos) / sizeof(tpos[0])))
/* A stage's rows when it grows the table (to 8192 positions; TN rows
 * make or keep one of 4096); rows past TN at positions in [0, 8192). */
#define TBIG 5000

/* One forward and one backward on G at (theta, hd, rows), with 2 query
 * groups of 4 query heads and 1 key head. The first TN rows' outputs
 * (every fp32 and bf16 array of both) are kept in slot `keep`, must be
 * bit for bit slot `same`'s (the same inputs, the same bits whether a
 * row's cos and sin came from the table or the fallback, from a table
 * made, grown or remade) and must differ from slot `differ`'s (another
 * theta: a stale table would repeat them); -1: none. */
struct tstage {
	double theta;
	long long hd, rows;
	int keep, same, differ;
};

static const struct tstage tstages[] = {
	{ 1e4, 64, TN, 0, -1, -1 },	/* made for 4096 positions */
	{ 1e4, 64, TBIG, -1, 0, -1 },	/* grown: rows 3 .. 5 now in it */
	{ 5e5, 64, TN, 1, -1, 0 },	/* another theta: remade */
	{ 5e5, 64, TBIG, -1, 1, -1 },
	{ 5e5, 128, TN, 2, -1, -1 },	/* another hd: remade */
	{ 5e5, 128, TBIG, -1, 2, -1 },
	{ 5e5, 6, TN, 3, -1, -1 },	/* qkv_rope_k's scalar variant */
	{ 5e5, 6, TBIG, -1, 3, -1 },
	{ 1e4, 64, TN, -1, 0, -1 },	/* the first table again */
};
#define NTSTAGE (sizeof(tstages) / sizeof(tstages[0]))
#define NSLOT 4

/* n values in [-scale, scale) from their own seed s: the same for every
 * stage of a head dim, a TBIG stage's first rows a TN stage's. */
static float *rnd_at(unsigned s, long long n, float scale)
{
	unsigned keep = seed;
	float *v;

	seed = s;
	v = rnd(n, scale);
	seed = keep;
	return v;
}

/* n values at device d, then their bf16 copies at d16, appended at *at
 * (the first TN rows are what the stages compare). */
static void keep_rows(struct verdict *v, unsigned char **at, const float *d,
		      const uint16_t *d16, long long n)
{
	see_rc(v, down(*at, d, (size_t)n * 4));
	*at += n * 4;
	see_rc(v, down(*at, d16, (size_t)n * 2));
	*at += n * 2;
}

/* What table_stage and pe_case run one forward and one backward on:
 * packed columns p of seed ps and dq, dk, dv h[i] of seeds hs + i
 * (rnd_at: the global seed is not drawn), the CPU twin's outputs and the
 * device's inputs and outputs on G, all aligned. */
struct qbufs {
	long long w[3], wp, np, n[3];
	float *p, *h[3], *cf[3], *cp;
	uint16_t *ch[3], *c16;
	float *dpk, *df[3], *dd[3], *dp;	/* device */
	uint16_t *dh[3], *d16;			/* device */
	void *blk[12];
	int nb;
};

static void qbufs_init(struct qbufs *q, const struct kern_qkv *a,
		       unsigned ps, unsigned hs)
{
	q->w[0] = a->groups * a->nq;
	q->w[1] = q->w[2] = a->groups * a->nk;
	q->wp = q->w[0] + q->w[1] + q->w[2];
	q->np = a->rows * q->wp;
	q->nb = 0;
	q->p = rnd_at(ps, q->np, 3);
	q->cp = xmalloc((size_t)q->np * 4);
	q->c16 = xmalloc((size_t)q->np * 2);
	q->dpk = dev_at(q->p, q->np, 4, 0, &q->blk[q->nb++]);
	for (int i = 0; i < 3; i++) {
		long long n = q->n[i] = a->rows * q->w[i];

		q->h[i] = rnd_at(hs + (unsigned)i, n, 0.5f);
		q->cf[i] = xmalloc((size_t)n * 4);
		q->ch[i] = xmalloc((size_t)n * 2);
		q->df[i] = dev_at(NULL, n, 4, 0, &q->blk[q->nb++]);
		q->dh[i] = dev_at(NULL, n, 2, 0, &q->blk[q->nb++]);
		q->dd[i] = dev_at(q->h[i], n, 4, 0, &q->blk[q->nb++]);
	}
	q->dp = dev_at(NULL, q->np, 4, 0, &q->blk[q->nb++]);
	q->d16 = dev_at(NULL, q->np, 2, 0, &q->blk[q->nb++]);
}

/* The CPU twin's forward and backward at positions pos. */
static void qbufs_cpu(struct qbufs *q, const struct kern_qkv *a,
		      const int32_t *pos, struct verdict *cpu)
{
	see_rc(cpu, kern_qkv_rope_bf(&C, a, pos, q->p, q->cf[0], q->cf[1],
				     q->cf[2], q->ch[0], q->ch[1], q->ch[2]));
	see_rc(cpu, kern_qkv_merge_rope_bf(&C, a, pos, q->h[0], q->h[1],
					   q->h[2], q->cp, q->c16));
}

/* The device's outputs against the CPU twin's (judge), and their first
 * `rows` rows appended at *at (keep_rows). */
static void qbufs_judge(struct qbufs *q, struct verdict *cpu,
			struct verdict *bits, unsigned char **at,
			long long rows)
{
	for (int i = 0; i < 3; i++) {
		judge(cpu, bits, q->df[i], q->dh[i], q->cf[i], q->n[i], NULL);
		keep_rows(bits, at, q->df[i], q->dh[i], rows * q->w[i]);
	}
	judge(cpu, bits, q->dp, q->d16, q->cp, q->np, NULL);
	keep_rows(bits, at, q->dp, q->d16, rows * q->wp);
}

static void qbufs_release(struct qbufs *q)
{
	for (int i = 0; i < q->nb; i++)
		kern_free(&G, q->blk[i]);
	for (int i = 0; i < 3; i++) {
		free(q->h[i]);
		free(q->cf[i]);
		free(q->ch[i]);
	}
	free(q->p);
	free(q->cp);
	free(q->c16);
}

static void table_stage(const struct tstage *t, unsigned char **slot,
			struct verdict *cpu, struct verdict *bits)
{
	struct kern_qkv a = { t->rows, 2, 4 * t->hd, t->hd, t->hd, t->theta,
			      0 };
	struct qbufs q;
	size_t bytes;
	unsigned char *blob, *at;
	int32_t *pos = rnd_ids(t->rows, 0, 8192), *dpos;

	memcpy(pos, tpos, sizeof(tpos));
	dpos = up(pos, (size_t)t->rows * 4);
	qbufs_init(&q, &a, 7 + (unsigned)t->hd, 100 + 4 * (unsigned)t->hd);
	bytes = (size_t)(TN * q.wp * 6 * 2);
	blob = at = xmalloc(bytes);
	qbufs_cpu(&q, &a, pos, cpu);
	see_rc(cpu, kern_qkv_rope_bf(&G, &a, dpos, q.dpk, q.df[0], q.df[1],
				     q.df[2], q.dh[0], q.dh[1], q.dh[2]));
	see_rc(cpu, kern_qkv_merge_rope_bf(&G, &a, dpos, q.dd[0], q.dd[1],
					   q.dd[2], q.dp, q.d16));
	qbufs_judge(&q, cpu, bits, &at, TN);
	if (t->same >= 0)
		see(bits, memcmp(blob, slot[t->same], bytes) ? INFINITY : 0);
	if (t->differ >= 0)
		see(bits, memcmp(blob, slot[t->differ], bytes) ? 0 : INFINITY);
	if (t->keep >= 0) {
		free(slot[t->keep]);
		slot[t->keep] = blob;
	} else {
		free(blob);
	}
	qbufs_release(&q);
	kern_free(&G, dpos);
	free(pos);
}

/* The stages in order on one context: the table made, grown, remade for
 * another theta and hd, and rows past it or negative. */
static void test_qkv_table(void)
{
	struct verdict cpu, bits;
	unsigned char *slot[NSLOT] = { NULL };

	memset(&cpu, 0, sizeof(cpu));
	memset(&bits, 0, sizeof(bits));
	for (size_t i = 0; i < NTSTAGE; i++)
		table_stage(&tstages[i], slot, &cpu, &bits);
	for (int i = 0; i < NSLOT; i++)
		free(slot[i]);
	report("qkv_rope_table", &cpu, TOL_QKV_BF);
	report("qkv_rope_table_bits", &bits, 0);
}

/* ---- a bound on the positions (kern_qkv's pos_end) ---------------------- */

/* A context-parallel rank's rows: fewer (PE_ROWS) than their positions,
 * 5000 .. 5060 past the table their count would make (4096 positions),
 * then 4096 and 8191 (the first past that table, the last in one of
 * PE_END) and 8192 (past the bound: the fallback still). */
#define PE_ROWS 64
#define PE_END 8192

static void pe_positions(int32_t *pos)
{
	for (int r = 0; r < PE_ROWS; r++)
		pos[r] = 5000 + r;
	pos[PE_ROWS - 3] = 4096;
	pos[PE_ROWS - 2] = PE_END - 1;
	pos[PE_ROWS - 1] = PE_END;
}

/* One forward and one backward at head dim hd on context x, whose table
 * of (theta, hd) is new: without the bound (its rows from the fallback),
 * then with it (from the table it grows to PE_END positions). Both
 * against the CPU twin, and every output of both the same bits (the
 * outputs cleared between them, so the second must write its own). x
 * computes on G's arrays: each context's queue is waited for before the
 * other's reads. */
static void pe_case(struct kern_ctx *x, long long hd, struct verdict *cpu,
		    struct verdict *bits)
{
	struct kern_qkv a = { PE_ROWS, 2, 4 * hd, hd, hd, 5e5, 0 };
	struct qbufs q;
	size_t bytes;
	unsigned char *blob[2], *at;
	int32_t pos[PE_ROWS], *dpos;

	pe_positions(pos);
	dpos = up(pos, sizeof(pos));
	qbufs_init(&q, &a, 300 + (unsigned)hd, 400 + 4 * (unsigned)hd);
	bytes = (size_t)q.np * 6 * 2;
	blob[0] = xmalloc(bytes);
	blob[1] = xmalloc(bytes);
	qbufs_cpu(&q, &a, pos, cpu);
	for (int e = 0; e < 2; e++) {
		a.pos_end = e ? PE_END : 0;
		for (int i = 0; i < 3; i++) {
			see_rc(bits, kern_zero(&G, q.df[i],
					       (size_t)q.n[i] * 4));
			see_rc(bits, kern_zero(&G, q.dh[i],
					       (size_t)q.n[i] * 2));
		}
		see_rc(bits, kern_zero(&G, q.dp, (size_t)q.np * 4));
		see_rc(bits, kern_zero(&G, q.d16, (size_t)q.np * 2));
		see_rc(bits, kern_sync(&G));
		see_rc(cpu, kern_qkv_rope_bf(x, &a, dpos, q.dpk, q.df[0],
					     q.df[1], q.df[2], q.dh[0],
					     q.dh[1], q.dh[2]));
		see_rc(cpu, kern_qkv_merge_rope_bf(x, &a, dpos, q.dd[0],
						   q.dd[1], q.dd[2], q.dp,
						   q.d16));
		see_rc(cpu, kern_sync(x));
		at = blob[e];
		qbufs_judge(&q, cpu, bits, &at, PE_ROWS);
	}
	see(bits, memcmp(blob[0], blob[1], bytes) ? INFINITY : 0);
	qbufs_release(&q);
	kern_free(&G, dpos);
	free(blob[0]);
	free(blob[1]);
}

/* On a context of its own, whose table starts empty: head dims 64 and 128
 * (qkv_rope8_k) and 6 (qkv_rope_k's scalar variant), each remaking the
 * table without the bound first. */
static void test_qkv_pos_end(void)
{
	static const long long hd[] = { 64, 128, 6 };
	struct verdict cpu, bits;
	struct kern_ctx x;
	int rc = kern_init(&x, KERN_CUDA, 0);

	memset(&cpu, 0, sizeof(cpu));
	memset(&bits, 0, sizeof(bits));
	see_rc(&cpu, rc);
	for (size_t i = 0; !rc && i < sizeof(hd) / sizeof(hd[0]); i++)
		pe_case(&x, hd[i], &cpu, &bits);
	if (!rc)
		kern_release(&x);
	report("qkv_rope_pos_end", &cpu, TOL_QKV_BF);
	report("qkv_rope_pos_end_bits", &bits, 0);
}

void test_qkv_kernels(void)
{
	struct qverdicts f, b;

	memset(&f, 0, sizeof(f));
	memset(&b, 0, sizeof(b));
	for (size_t t = 0; t < NQSHAPE; t++) {
		const struct qshape *s = &qshapes[t];
		struct kern_qkv a = { s->rows, s->groups, s->qh * s->hd,
				      s->kh * s->hd, s->hd, 500000.0, 0 };
		int32_t *pos = rnd_ids(s->rows, 0, 131072);
		int32_t *dpos = up(pos, (size_t)s->rows * 4);

		qkv_fwd_case(&a, pos, dpos, s->skew, &f);
		qkv_bwd_case(&a, pos, dpos, s->skew, &b);
		kern_free(&G, dpos);
		free(pos);
	}
	printf("qkv_rope_bf: forward %lld of %lld values, backward %lld of "
	       "%lld differ from the device's unfused sequence\n", f.ndiff,
	       f.n, b.ndiff, b.n);
	report("qkv_rope_bf", &f.cpu, TOL_QKV_BF);
	report("qkv_rope_bits", &f.bits, 0);
	report("qkv_rope_unfused", &f.unf, TOL_QKV_BF);
	report("qkv_merge_rope_bf", &b.cpu, TOL_QKV_BF);
	report("qkv_merge_rope_bits", &b.bits, 0);
	report("qkv_merge_rope_unfused", &b.unf, TOL_QKV_BF);
	test_qkv_table();
	test_qkv_pos_end();
}
