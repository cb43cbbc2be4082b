/*
 * test_flash_ws_gpu: the warp-specialized flash forward's machinery alone
 * (kern_flash_ws_probe, kernels/kern_flash.h; the kernel is
 * kernels/kern_flash_ws.cu), before the whole forward meets the float64
 * reference in test_flash_gpu.c:
 *  - the TMA tile: a tile of rows of one head loaded by TMA with the
 *    128-byte swizzle must be the image, byte for byte, that
 *    wg_load_tile's cp.async copies write (the layout the wgmma
 *    descriptors expect), and both must hold x[1][r0 + r][head][c] at
 *    the swizzled offset of (r, c) (kernels/flash_wgmma.cuh's wg_off),
 *    zeros for rows past the tensor (TMA's out-of-bounds fill, whose bytes
 *    must still complete the barrier). Tiles at hd 128 (128 rows: K, V
 *    and Q of the hd-128 kernel) and hd 64 (128 rows: K, V; 192: Q of the
 *    three-consumer kernel), one inside the tensor and one across its end.
 *  - the mbarrier ring: 37 tiles through 2 and 4 stages from a producer
 *    thread to two consumer warpgroups that copy them out; every value
 *    must arrive at its place (a stale or overwritten stage shows as a
 *    wrong tile), and no barrier wait may give up (a deadlock or a lost
 *    arrival: the probe's waits time out after about a second and say so
 *    instead of hanging).
 * Values are compared exactly (copies only). The first wrong element is
 * printed with its place, expected and found bits.
 *  - then the whole forward on long sequences against the wgp kernel
 *    (pair_long: rings that wrap many times, at both head dims), and the
 *    calls it hands to wgp (fallback).
 *
 * Prints one line per probe and `RESULT passed failed`; exits 1 on a
 * failure or after 300 s without a result (a watchdog: a hung kernel
 * fails the test instead of holding the GPU), 77 without a GPU; on a GPU of another compute capability than
 * 9.0 (the probes need sm_90a) it says so and passes nothing.
 */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_host.h"
#include "kern_flash.h"

static struct kern_ctx G;
static int n_pass, n_fail;

static void check(int ok, const char *name, const char *why)
{
	printf("%-4s %s%s%s\n", ok ? "ok" : "FAIL", name, ok ? "" : ": ",
	       ok ? "" : why);
	ok ? n_pass++ : n_fail++;
}

/* Byte offset of (r, c) in a swizzled tile of R rows (wg_off's layout). */
static size_t swz(int R, int r, int c)
{
	return (size_t)(c >> 6) * R * 128 + (size_t)r * 128 +
	       (size_t)((((c >> 3) & 7) ^ (r & 7)) << 4) + (size_t)(c & 7) * 2;
}

/* The probe's status word and its output (bytes) from the device. */
static int run_probe(int op, int hd, int rows, int n, int heads, int head,
		     int r0, const uint16_t *dx, void *out, size_t nout)
{
	void *dout = gh_dev(&G, NULL, nout);
	int *dst = gh_dev(&G, NULL, sizeof(int)), st = 0;
	int rc = kern_flash_ws_probe(kern_stream(&G), op, hd, rows, n, heads,
				     head, r0, dx, dout, dst);

	if (rc == KERN_ENODEV) { /* not compute capability 9.0: nothing runs */
		printf("skip: %s\nRESULT 0 0\n", kern_error_text(rc));
		exit(0);
	}
	if (rc)
		gh_die(rc, "kern_flash_ws_probe");
	gh_down(&G, out, dout, nout);
	gh_down(&G, &st, dst, sizeof(int));
	kern_free(&G, dout);
	kern_free(&G, dst);
	return st;
}

/* One tile: both images against the expected values. */
static void probe_tile(const uint16_t *x, const uint16_t *dx, int n,
		       int heads, int head, int hd, int rows, int r0)
{
	size_t img = (size_t)rows * hd * 2;
	unsigned char *out = gh_malloc(2 * img);
	int st = run_probe(0, hd, rows, n, heads, head, r0, dx, out, 2 * img);
	static const char *who[2] = { "tma", "cp.async" };
	char name[96], why[160];

	snprintf(name, sizeof(name), "tma-tile hd%d rows%d r0 %d (n %d)", hd,
		 rows, r0, n);
	check(st == 0, name, "the TMA's barrier never completed");
	for (int im = 0; im < 2; im++) {
		long long bad = 0;

		why[0] = 0;
		for (int r = 0; r < rows; r++)
			for (int c = 0; c < hd; c++) {
				uint16_t want = r0 + r < n ?
					x[(((size_t)n + r0 + r) * heads + head) * hd + c] : 0;
				uint16_t got;

				memcpy(&got, out + im * img + swz(rows, r, c), 2);
				if (got != want && !bad++)
					snprintf(why, sizeof(why),
						 "%s image (row %d, col %d): want "
						 "0x%04x, got 0x%04x", who[im], r,
						 c, want, got);
			}
		snprintf(name, sizeof(name), "tma-tile hd%d rows%d r0 %d %s", hd,
			 rows, r0, who[im]);
		if (bad)
			snprintf(why + strlen(why), sizeof(why) - strlen(why),
				 " (%lld of %d wrong)", bad, rows * hd);
		check(!bad, name, why);
	}
	check(!memcmp(out, out + img, img), name,
	      "the TMA and cp.async images differ");
	free(out);
}

/* The ring: tile i (rows 64 i ..) of head `head` of batch entry 1. */
static void probe_ring(const uint16_t *x, const uint16_t *dx, int n,
		       int heads, int head, int stages)
{
	size_t nout = (size_t)n * 64 * 2;
	uint16_t *out = gh_malloc(nout);
	int st = run_probe(1, 64, stages, n, heads, head, 0, dx, out, nout);
	long long bad = 0;
	char name[64], why[160] = "";

	snprintf(name, sizeof(name), "mbarrier-ring %d tiles, %d stages",
		 n / 64, stages);
	check(st == 0, name, "a barrier wait gave up (deadlock or lost "
	      "arrival)");
	for (int r = 0; r < n; r++)
		for (int c = 0; c < 64; c++) {
			uint16_t want = x[(((size_t)n + r) * heads + head) * 64 + c];

			if (out[(size_t)r * 64 + c] != want && !bad++)
				snprintf(why, sizeof(why),
					 "tile %d row %d col %d: want 0x%04x, "
					 "got 0x%04x", r / 64, r % 64, c, want,
					 out[(size_t)r * 64 + c]);
		}
	check(!bad, name, why);
	free(out);
}

/* kern_flash_fwd_ws against kern_flash_fwd_wgp (which test_flash_gpu.c
 * holds to the float64 reference) on sequences long enough that the K / V
 * rings wrap many times (test_flash_gpu.c's cases use at most 8 key tiles
 * of 128, fewer than hd 64's 4 stages wrap): whole causal sequences, NULL
 * positions. o normwise within 5e-3 and lse within 1e-5 max(1, |lse|),
 * test_flash_gpu.c's ws~wgp tolerances: the same tiles, products and row
 * maxima, but ws computes P's exponent s scale log2(e) - m in one FFMA
 * (one rounding less), so a P near a bf16 rounding boundary may round the
 * other way (2^-8 relative, few elements) and the softmax sums differ by
 * fp32 roundings (~1e-6 relative in lse). Bit-identical o elements are
 * counted and printed. */
static void pair_long(long long batch, long long s, long long nh,
		      long long nkv, long long hd)
{
	struct kern_attn a = { batch, s, s, nh, nkv, hd,
			       (float)(1.0 / sqrt((double)hd)) };
	long long nq = batch * s * nh * hd, nk = batch * s * nkv * hd;
	long long nl = batch * nh * s, same = 0;
	uint16_t *q = gh_rand_bf16(nq, 1.7f, NULL), *k = gh_rand_bf16(nk, 1.7f, NULL);
	uint16_t *v = gh_rand_bf16(nk, 1.7f, NULL), *o[2];
	float *lse[2];
	void *dq = gh_dev(&G, q, (size_t)nq * 2), *dk = gh_dev(&G, k, (size_t)nk * 2);
	void *dv = gh_dev(&G, v, (size_t)nk * 2), *dout, *dl;
	double num = 0.0, den = 0.0, lerr = 0.0;
	char name[96], why[96];

	for (int i = 0; i < 2; i++) {
		int rc;

		o[i] = gh_malloc((size_t)nq * 2);
		lse[i] = gh_malloc((size_t)nl * 4);
		dout = gh_dev(&G, NULL, (size_t)nq * 2);
		dl = gh_dev(&G, NULL, (size_t)nl * 4);
		rc = (i ? kern_flash_fwd_wgp : kern_flash_fwd_ws)(
			kern_stream(&G), &a, dq, dk, dv, NULL, NULL, dout, dl);
		if (rc)
			gh_die(rc, i ? "kern_flash_fwd_wgp" : "kern_flash_fwd_ws");
		gh_down(&G, o[i], dout, (size_t)nq * 2);
		gh_down(&G, lse[i], dl, (size_t)nl * 4);
		kern_free(&G, dout);
		kern_free(&G, dl);
	}
	for (long long i = 0; i < nq; i++) {
		double x = gh_from_bf16(o[0][i]), y = gh_from_bf16(o[1][i]);

		num += (x - y) * (x - y);
		den += y * y;
		same += o[0][i] == o[1][i];
	}
	for (long long i = 0; i < nl; i++) {
		double e = fabs((double)lse[0][i] - lse[1][i]) /
			   fmax(1.0, fabs(lse[1][i]));

		if (!(e <= lerr))
			lerr = isnan(e) ? INFINITY : e;
	}
	snprintf(name, sizeof(name), "ws~wgp b%lld s%lld h%lld/%lld hd%lld "
		 "(%lld of %lld o bits equal)", batch, s, nh, nkv, hd, same, nq);
	snprintf(why, sizeof(why), "o normwise %.3e (tol 5e-3)",
		 den > 0.0 ? sqrt(num / den) : sqrt(num));
	check(den > 0.0 && sqrt(num / den) <= 5e-3, name, why);
	snprintf(why, sizeof(why), "lse %.3e (tol 1e-5)", lerr);
	check(lerr <= 1e-5, name, why);
	kern_free(&G, dq); kern_free(&G, dk); kern_free(&G, dv);
	free(q); free(k); free(v);
	for (int i = 0; i < 2; i++) {
		free(o[i]);
		free(lse[i]);
	}
}

/* Where the TMA kernel does not apply, kern_flash_fwd_ws runs wgp
 * (kern_flash_ws.cu's fl_ws_run): with a negative scale (ws_softmax needs
 * scale > 0) o and lse must be wgp's bits; with no key at all (no tensor
 * map of zero rows) every o is 0 and every lse -inf, the contract's empty
 * rows, over NaN-poisoned outputs. */
static void fallback(void)
{
	struct kern_attn a = { 1, 150, 150, 4, 2, 64, -0.125f };
	long long nq = 150 * 4 * 64, nk = 150 * 2 * 64, nl = 4 * 150, bad = 0;
	uint16_t *q = gh_rand_bf16(nq, 1.7f, NULL), *k = gh_rand_bf16(nk, 1.7f, NULL);
	uint16_t *v = gh_rand_bf16(nk, 1.7f, NULL), *o[2];
	void *dq = gh_dev(&G, q, (size_t)nq * 2), *dk = gh_dev(&G, k, (size_t)nk * 2);
	void *dv = gh_dev(&G, v, (size_t)nk * 2);
	float *lse[2];

	for (int i = 0; i < 3; i++) {
		void *dout, *dl;
		int rc;

		if (i < 2) {
			o[i] = gh_malloc((size_t)nq * 2);
			lse[i] = gh_malloc((size_t)nl * 4);
		}
		memset(o[i & 1], 0xff, (size_t)nq * 2);
		memset(lse[i & 1], 0xff, (size_t)nl * 4);
		dout = gh_dev(&G, o[i & 1], (size_t)nq * 2);
		dl = gh_dev(&G, lse[i & 1], (size_t)nl * 4);
		a.sk = i == 2 ? 0 : 150;
		rc = (i == 1 ? kern_flash_fwd_wgp : kern_flash_fwd_ws)(
			kern_stream(&G), &a, dq, dk, dv, NULL, NULL, dout, dl);
		if (rc)
			gh_die(rc, "fallback forward");
		gh_down(&G, o[i & 1], dout, (size_t)nq * 2);
		gh_down(&G, lse[i & 1], dl, (size_t)nl * 4);
		kern_free(&G, dout);
		kern_free(&G, dl);
		if (i == 1)
			check(!memcmp(o[0], o[1], (size_t)nq * 2) &&
			      !memcmp(lse[0], lse[1], (size_t)nl * 4),
			      "fallback scale < 0: ws gives wgp's bits",
			      "o or lse differ");
	}
	for (long long i = 0; i < nq; i++)
		bad += o[0][i] != 0;
	for (long long i = 0; i < nl; i++)
		bad += !(isinf(lse[0][i]) && lse[0][i] < 0.0f);
	check(!bad, "fallback sk 0: o = 0, lse = -inf",
	      "an element was not written as an empty row");
	kern_free(&G, dq); kern_free(&G, dk); kern_free(&G, dv);
	free(q); free(k); free(v);
	for (int i = 0; i < 2; i++) {
		free(o[i]);
		free(lse[i]);
	}
}

/* A protocol mistake in the whole kernel (not the probes, whose waits
 * time out) would hang the GPU; exiting tears the context down. */
#define WATCHDOG_S 300

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL watchdog: no result within 300 s "
				  "(a hung kernel?)\nRESULT 0 1\n";

	(void)sig;
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

int main(void)
{
	int n = 200, heads = 3, nr = 37 * 64;
	uint16_t *x128 = gh_rand_bf16(2LL * n * heads * 128, 1.0f, NULL);
	uint16_t *x64 = gh_rand_bf16(2LL * n * heads * 64, 1.0f, NULL);
	uint16_t *xr = gh_rand_bf16(2LL * nr * 2 * 64, 1.0f, NULL);
	uint16_t *d128, *d64, *dr;

	setvbuf(stdout, NULL, _IOLBF, 0); /* lines out before a watchdog exit */
	signal(SIGALRM, on_alarm);
	alarm(WATCHDOG_S);
	gh_init(&G);
	d128 = gh_dev(&G, x128, 2ULL * n * heads * 128 * 2);
	d64 = gh_dev(&G, x64, 2ULL * n * heads * 64 * 2);
	dr = gh_dev(&G, xr, 2ULL * nr * 2 * 64 * 2);
	probe_tile(x128, d128, n, heads, 2, 128, 128, 0);
	probe_tile(x128, d128, n, heads, 1, 128, 128, 128);
	probe_tile(x64, d64, n, heads, 2, 64, 128, 64);
	probe_tile(x64, d64, n, heads, 0, 64, 192, 0);
	probe_tile(x64, d64, n, heads, 1, 64, 192, 64);
	probe_ring(xr, dr, nr, 2, 1, 2);
	probe_ring(xr, dr, nr, 2, 1, 4);
	pair_long(2, 1537, 6, 2, 64);
	pair_long(1, 2100, 4, 1, 128);
	fallback();
	kern_free(&G, d128);
	kern_free(&G, d64);
	kern_free(&G, dr);
	kern_release(&G);
	free(x128); free(x64); free(xr);
	printf("RESULT %d %d\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
