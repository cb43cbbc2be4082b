/*
 * flash_probe_gpu: the parts of the flash kernels that
 * tests/gpu/test_flash_gpu.c checks alone, before the attention cases, so
 * that a layout or protocol mistake shows where it is; and the tally of
 * pass/fail lines that test prints.
 *
 *  - The wgmma forward's two products (kern_flash_wg_probe: one m64n64k16
 *    with both operands from swizzled shared memory, one with A from
 *    registers and B MN-major, then the sizes the kernel uses), then the
 *    wgmma backward's (kern_flash_wg_bwd_probe, dQ's M-major A first),
 *    against a float64 product: every element within 1e-4 of sum |a b|
 *    over its dot product (fp32 sums of at most 128 exact products err by
 *    ~1e-5 of it; a wrong layout errs by the order of the sum itself).
 *  - The ws backward's machinery (kernels/kern_flash_ws_bwd.cu), bit for
 *    bit: the TMA ring (kern_flash_ws_bwd_probe_tma: six tiles through
 *    the two stages, both slots, rows past the tensor zero) and the dQ
 *    bulk reduction (kern_flash_ws_bwd_probe_dq: known values onto random
 *    dq, sums exact in fp32); a barrier wait that
 *    gave up is a failure.
 * The first wrong element is printed with its place, expected and
 * computed values.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flash_probe_gpu.h"
#include "gpu_host.h"
#include "kern_flash.h"

#define TOL_PROBE 1e-4

int tf_pass, tf_fail;

void tf_check(const char *what, const char *name, double err, double tol)
{
	int ok = err <= tol; /* NaN fails */

	printf("%-4s %-34s %-4s err %.3e (tol %.0e)\n", ok ? "ok" : "FAIL",
	       name, what, err, tol);
	ok ? tf_pass++ : tf_fail++;
}

/* d [64 x n] = a [64 x k] b through kern_flash_wg_probe against float64
 * (b is [n][k] for op 0, [k][n] for op 1); returns the probe's code. */
typedef int (*probe_fn)(void *, int, int, int, const uint16_t *,
			const uint16_t *, float *);

static int probe_one(struct kern_ctx *g, probe_fn fn, const char *label,
		     int op, int n, int k)
{
	long long na = 64LL * k, nb = (long long)n * k, bad = 0, fr = 0;
	long long fc = 0;
	size_t nd = (size_t)(64 * n) * sizeof(float);
	float *fa, *fb, *got = gh_malloc(nd);
	uint16_t *a = gh_rand_bf16(na, 1.0f, &fa);
	uint16_t *b = gh_rand_bf16(nb, 1.0f, &fb);
	uint16_t *da = gh_dev(g, a, (size_t)na * 2);
	uint16_t *db = gh_dev(g, b, (size_t)nb * 2);
	float *dd = gh_dev(g, NULL, nd);
	double worst = 0.0, fwant = 0.0;
	int rc = fn(kern_stream(g), op, n, k, da, db, dd);
	char name[64];

	if (!rc)
		gh_down(g, got, dd, nd);
	for (int r = 0; r < 64 && !rc; r++)
		for (int c = 0; c < n; c++) {
			double want = 0.0, mag = 0.0, e;

			for (int x = 0; x < k; x++) {
				double t = (double)fa[r * k + x] *
					   (op ? fb[x * n + c] : fb[c * k + x]);

				want += t;
				mag += fabs(t);
			}
			e = fabs(got[r * n + c] - want) /
			    (mag > 0.0 ? mag : 1.0);
			if (!(e <= worst))
				worst = isnan(e) ? INFINITY : e;
			if (!(e <= TOL_PROBE) && !bad++) {
				fr = r;
				fc = c;
				fwant = want;
			}
		}
	snprintf(name, sizeof(name), "%s %s n%d k%d", label,
		 op >= 2 ? "ss-transAB" : op ? "rs-transB" : "ss", n, k);
	if (!rc)
		tf_check("d", name, worst, TOL_PROBE);
	if (bad)
		printf("     first wrong d[%lld][%lld]: want %.6g, got %.6g "
		       "(%lld of %d wrong)\n", fr, fc, fwant,
		       (double)got[fr * n + fc], bad, 64 * n);
	kern_free(g, da);
	kern_free(g, db);
	kern_free(g, dd);
	free(a); free(b); free(fa); free(fb); free(got);
	return rc;
}

/* The two products of the wgmma forward alone: one instruction each
 * first, then the kernel's sizes (hd 64 and 128); then the backward's
 * (kern_flash_wg_bwd_probe: the new form, A M-major from shared memory,
 * first: ops 2 and 3, dQ at hd 64 and 128), at the sizes of its kernel. */
int tf_probe_wg(struct kern_ctx *g)
{
	static const int cfg[][3] = { { 0, 64, 16 }, { 1, 64, 16 },
				      { 0, 128, 64 }, { 0, 128, 128 },
				      { 1, 64, 128 }, { 1, 128, 128 } };
	static const int bcfg[][3] = { { 2, 64, 64 }, { 3, 64, 128 },
				       { 0, 64, 64 }, { 0, 64, 128 },
				       { 1, 64, 64 }, { 1, 128, 64 } };

	for (size_t i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
		int rc = probe_one(g, kern_flash_wg_probe, "wgmma-probe",
				   cfg[i][0], cfg[i][1], cfg[i][2]);

		if (rc == KERN_ENODEV && i == 0) {
			printf("skip wgmma kernel: %s\n", kern_error_text(rc));
			return 0;
		}
		if (rc)
			gh_die(rc, "kern_flash_wg_probe");
	}
	for (size_t i = 0; i < sizeof(bcfg) / sizeof(bcfg[0]); i++) {
		int rc = probe_one(g, kern_flash_wg_bwd_probe, "wgmma-bwd-probe",
				   bcfg[i][0], bcfg[i][1], bcfg[i][2]);

		if (rc)
			gh_die(rc, "kern_flash_wg_bwd_probe");
	}
	return 1;
}

/* The ws ring alone (kern_flash_ws_bwd_probe_tma): six tiles of BM rows
 * (128 at hd 64, 64 at hd 128) of a random [2][rows][nh][hd] tensor, the
 * last of each batch cut by `rows`, through the TMA loads and the
 * two-stage ring, each copied out of both of its slots, must be the
 * tensor's rows bit for bit (zeros past `rows`). Returns the number of
 * wrong values. */
static long long probe_ws_tma(struct kern_ctx *g, int hd)
{
	const int bm = hd == 64 ? 128 : 64, rows = 2 * bm + 22, nh = 3, h = 1;
	long long n = 2LL * rows * nh * hd, no = 6LL * 2 * bm * hd, bad = 0;
	float *fs;
	uint16_t *src = gh_rand_bf16(n, 1.0f, &fs);
	uint16_t *got = gh_malloc((size_t)no * 2);
	uint16_t *ds = gh_dev(g, src, (size_t)n * 2);
	uint16_t *dout = gh_dev(g, NULL, (size_t)no * 2);
	int rc = kern_flash_ws_bwd_probe_tma(kern_stream(g), hd, rows, nh, h,
					     ds, dout);
	char name[64];

	snprintf(name, sizeof(name), "ws-probe tma-ring hd%d", hd);
	if (rc) {
		printf("     %s\n", kern_error_text(rc));
		tf_check("run", name, 1.0, 0.0);
		bad = 1;
		goto out;
	}
	gh_down(g, got, dout, (size_t)no * 2);
	for (long long i = 0; i < no; i++) {
		long long it = i / (2LL * bm * hd), r = i / hd % bm, c = i % hd;
		long long row = bm * (it / 2) + r, b = it % 2;
		uint16_t want = row < rows ?
			src[((b * rows + row) * nh + h) * hd + c] : 0;

		if (got[i] != want && !bad++)
			printf("     first wrong: item %lld slot %lld row %lld "
			       "col %lld: want 0x%04x, got 0x%04x\n", it,
			       i / ((long long)bm * hd) % 2, r, c, want,
			       got[i]);
	}
	tf_check("bits", name, bad ? (double)bad : 0.0, 0.0);
out:
	kern_free(g, ds);
	kern_free(g, dout);
	free(src); free(fs); free(got);
	return bad;
}

/* The ws dQ bulk reduction alone (kern_flash_ws_bwd_probe_dq): two items
 * of known values added to a random dq must give init + scale v exactly
 * where kern_flash.h says, init elsewhere: init is a multiple of 2^-10
 * below 4 in magnitude and scale v = v / 2 an integer or half, so every
 * sum is exact in fp32, whatever the rounding. Returns the number of
 * wrong values. */
static long long probe_ws_dq(struct kern_ctx *g, int hd)
{
	const int sq = 100, nh = 2, h = 1, c0 = hd == 128 ? 64 : 0;
	const float scale = 0.5f;
	long long n = (long long)sq * nh * hd, bad = 0;
	float *init = gh_malloc((size_t)n * 4), *got = gh_malloc((size_t)n * 4);
	float *dd;
	int rc;
	char name[64];

	for (long long i = 0; i < n; i++)
		init[i] = roundf(gh_uniform() * 4096.0f) / 1024.0f;
	dd = gh_dev(g, init, (size_t)n * 4);
	rc = kern_flash_ws_bwd_probe_dq(kern_stream(g), hd, sq, nh, h, scale,
					dd);
	snprintf(name, sizeof(name), "ws-probe dq-reduce hd%d", hd);
	if (rc) {
		printf("     %s\n", kern_error_text(rc));
		tf_check("run", name, 1.0, 0.0);
		bad = 1;
		goto out;
	}
	gh_down(g, got, dd, (size_t)n * 4);
	for (long long i = 0; i < n; i++) {
		long long r = i / (nh * hd), hh = i / hd % nh, c = i % hd - c0;
		float want = init[i];

		if (hh == h && c >= 0 && c < 64 && r < 128)
			want = init[i] +
			       scale * (float)((7 * r + 13 * c) % 29 - 14);
		if (got[i] != want && !bad++)
			printf("     first wrong: row %lld head %lld col %lld: "
			       "want %.9g, got %.9g\n", r, hh, i % hd,
			       (double)want, (double)got[i]);
	}
	tf_check("bits", name, bad ? (double)bad : 0.0, 0.0);
out:
	kern_free(g, dd);
	free(init); free(got);
	return bad;
}

int tf_probe_ws(struct kern_ctx *g)
{
	long long bad = 0;

	for (int hd = 64; hd <= 128; hd *= 2)
		bad += probe_ws_tma(g, hd) + probe_ws_dq(g, hd);
	if (bad)
		printf("skip ws backward: its probes failed\n");
	return !bad;
}

int tf_ws_broken;

/* After a ws backward that returned rc: kern_flash_ws_bwd_check; a
 * barrier wait that gave up (or an error it met) is printed and counted
 * as a failure, and sets tf_ws_broken, but returns 0 so that the test
 * goes on (its gradients then fail their checks too). */
static int ws_checked(void *st, int rc, const char *who)
{
	if (rc)
		return rc;
	rc = kern_flash_ws_bwd_check(st);
	if (rc) {
		printf("     %s\n", kern_error_text(rc));
		tf_check("wait", who, 1.0, 0.0);
		tf_ws_broken = 1;
	}
	return 0;
}

int tf_bwd(enum kern_flash_kind kind, void *st, const struct kern_attn *a,
	   const uint16_t *q, const uint16_t *k, const uint16_t *v,
	   const uint16_t *o, const float *lse, const uint16_t *dout,
	   const int32_t *qpos, const int32_t *kpos, float *dsum, float *dq,
	   float *dk, float *dv)
{
	const char *e = getenv("GTPLAN_FLASH_BWD");
	int rc = kern_flash_bwd_with(kind, st, a, q, k, v, o, lse, dout, qpos,
				     kpos, dsum, dq, dk, dv);

	if (kind == KERN_FLASH_WS)
		return ws_checked(st, rc, "kern_flash_bwd_with(ws)");
	if (kind == KERN_FLASH_AUTO && e && !strcmp(e, "ws"))
		return ws_checked(st, rc, "kern_flash_bwd (ws)");
	return rc;
}
