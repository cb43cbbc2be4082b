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
 *
 * Prints one line per probe and `RESULT passed failed`; exits 1 on a
 * failure, 77 without a GPU; on a GPU of another compute capability than
 * 9.0 (the probes need sm_90a) it says so and passes nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
	int n = 200, heads = 3, nr = 37 * 64;
	uint16_t *x128 = gh_rand_bf16(2LL * n * heads * 128, 1.0f, NULL);
	uint16_t *x64 = gh_rand_bf16(2LL * n * heads * 64, 1.0f, NULL);
	uint16_t *xr = gh_rand_bf16(2LL * nr * 2 * 64, 1.0f, NULL);
	uint16_t *d128, *d64, *dr;

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
	kern_free(&G, d128);
	kern_free(&G, d64);
	kern_free(&G, dr);
	kern_release(&G);
	free(x128); free(x64); free(xr);
	printf("RESULT %d %d\n", n_pass, n_fail);
	return n_fail ? 1 : 0;
}
