/*
 * Tests for kernels (kern.h) on the CPU: every kernel against a naive
 * double-precision reference written here; backward kernels against
 * central finite differences of that reference; the argument checks.
 * The CUDA twin will be compared with the CPU one by its own suite.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kern.h"
#include "kern_fixture.h"
#include "harness.h"

/* ---- helpers ---------------------------------------------------------- */

static struct kern_ctx K;

static void setup(void)
{
	ck_assert_int_eq(kern_init(&K, KERN_CPU, 1), 0);
}

static void teardown(void)
{
	kern_release(&K);
}

/* ---- memory ----------------------------------------------------------- */

START_TEST(memory_ops)
{
	float *a, *b, host[5] = { 1, 2, 3, 4, 5 }, back[5];

	ck_assert_int_eq(kern_alloc(&K, 5 * sizeof(float), (void **)&a), 0);
	ck_assert_int_eq(kern_alloc(&K, 5 * sizeof(float), (void **)&b), 0);
	ck_assert_int_eq((uintptr_t)a % 64, 0);
	for (int i = 0; i < 5; i++)
		ck_assert(a[i] == 0.0f); /* zeroed */
	ck_assert_int_eq(kern_upload(&K, a, host, sizeof(host)), 0);
	ck_assert_int_eq(kern_copy(&K, b, a, sizeof(host)), 0);
	ck_assert_int_eq(kern_zero(&K, a, 2 * sizeof(float)), 0);
	ck_assert_int_eq(kern_download(&K, back, b, sizeof(back)), 0);
	ck_assert(memcmp(back, host, sizeof(host)) == 0);
	ck_assert(a[0] == 0 && a[1] == 0 && a[2] == 3);
	ck_assert_int_eq(kern_sync(&K), 0);
	kern_free(&K, a);
	kern_free(&K, b);
	kern_free(&K, NULL);
	ck_assert_str_eq(kern_device_name(&K), "cpu");
}
END_TEST

START_TEST(errors)
{
	struct kern_ctx cuda;
	float x[4] = { 0 }, y[4] = { 0 };
	int32_t t[1] = { 0 };

	ck_assert_int_eq(kern_init(&cuda, KERN_CUDA, 0), KERN_ENODEV);
	ck_assert_str_eq(kern_strerror(KERN_ENODEV),
			 "device not available in this build");
	ck_assert_str_eq(kern_strerror(KERN_OK), "ok");
	/* lda shorter than a row, nvalid past cols, step 0, NULL data */
	ck_assert_int_eq(kern_gemm(&K, 0, 0, 2, 2, 2, 1, x, 1, x, 2, 0, x, 2),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_gemm(&K, 0, 1, 2, 2, 2, 1, x, 2, x, 1, 0, x, 2),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_ce_max(&K, 1, 2, 3, x, x), KERN_EINVAL);
	ck_assert_int_eq(kern_adam(&K, 1, 1, 0.9f, 0.99f, 1e-8f, 0, x, x, x, x),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_adam(&K, 1, 1, 1.0f, 0.99f, 1e-8f, 1, x, x, x, x),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_axpy(&K, 3, 1, NULL, x), KERN_EINVAL);
	ck_assert_int_eq(kern_embed_fwd(&K, 1, 0, 0, 1, x, t, x), KERN_EINVAL);
	ck_assert_int_eq(kern_rmsnorm_fwd(&K, 1, 4, -1.0f, x, x, x, x),
			 KERN_EINVAL);
	/* C aliasing A or B (kern.h: outputs never alias inputs) */
	ck_assert_int_eq(kern_gemm(&K, 0, 0, 2, 2, 2, 1, x, 2, y, 2, 0, x, 2),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_gemm(&K, 0, 0, 2, 2, 2, 1, x, 2, y, 2, 0, y, 2),
			 KERN_EINVAL);
	/* empty work is fine and touches nothing */
	ck_assert_int_eq(kern_gemm(&K, 0, 0, 0, 3, 3, 1, NULL, 3, NULL, 3, 0,
				   NULL, 3), 0);
	ck_assert_int_eq(kern_axpy(&K, 0, 1, NULL, NULL), 0);
}
END_TEST

/* A device's message travels with its code to the one caller that prints
 * it, once; without one, the code's text. */
START_TEST(error_text_is_read_once)
{
	ck_assert_str_eq(kern_error_text(KERN_EDEVICE), "device error");
	ck_assert_int_eq(kern_set_error(KERN_EDEVICE, "f.cu:%d: %s", 7,
					"launch failed"), KERN_EDEVICE);
	/* another code: not this message */
	ck_assert_str_eq(kern_error_text(KERN_ENOMEM), "out of device memory");
	ck_assert_str_eq(kern_error_text(KERN_EDEVICE),
			 "device error: f.cu:7: launch failed");
	ck_assert_str_eq(kern_error_text(KERN_EDEVICE), "device error");
	ck_assert_str_eq(kern_error_text(KERN_OK), "ok");
}
END_TEST

/* ---- BLAS ------------------------------------------------------------- */

START_TEST(gemm_all_transposes)
{
	enum { M = 5, N = 7, KD = 6, LD = 9 };
	float a[LD * LD], b[LD * LD], c[M * LD], c0[M * LD];
	double want[M * N];

	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			fill(a, LD * LD, 1 + ta, 1);
			fill(b, LD * LD, 3 + tb, 1);
			fill(c0, M * LD, 5, 1);
			memcpy(c, c0, sizeof(c));
			for (int i = 0; i < M; i++)
				for (int j = 0; j < N; j++) {
					double s = 0;

					for (int k = 0; k < KD; k++)
						s += (double)(ta ? a[k * LD + i] :
							a[i * LD + k]) *
						     (tb ? b[j * LD + k] :
							b[k * LD + j]);
					want[i * N + j] = 0.5 * s -
						2.0 * c0[i * LD + j];
				}
			ck_assert_int_eq(kern_gemm(&K, ta, tb, M, N, KD, 0.5f,
						   a, LD, b, LD, -2.0f, c, LD),
					 0);
			for (int i = 0; i < M; i++) {
				near(c + i * LD, want + i * N, N, 1e-5, "gemm");
				/* past n, the row is left alone */
				for (int j = N; j < LD; j++)
					ck_assert(c[i * LD + j] ==
						  c0[i * LD + j]);
			}
		}
}
END_TEST

START_TEST(axpy)
{
	float x[9], y[9], y0[9];
	double want[9];

	fill(x, 9, 1, 2);
	fill(y0, 9, 2, 2);
	memcpy(y, y0, sizeof(y));
	for (int i = 0; i < 9; i++)
		want[i] = y0[i] + 1.5 * x[i];
	ck_assert_int_eq(kern_axpy(&K, 9, 1.5f, x, y), 0);
	near(y, want, 9, 1e-6, "axpy");
}
END_TEST

/* ---- RMSNorm ----------------------------------------------------------- */

enum { R = 3, H = 8 };

/* Double RMSNorm of one row: y and the rstd. */
static double rms_ref(const double *x, const double *g, double *y, int h)
{
	double ss = 0, s;

	for (int i = 0; i < h; i++)
		ss += x[i] * x[i];
	s = 1.0 / sqrt(ss / h + 1e-5);
	for (int i = 0; y && i < h; i++)
		y[i] = x[i] * s * g[i];
	return s;
}

START_TEST(rmsnorm_forward)
{
	float x[R * H], g[H], y[R * H], rstd[R];
	double xd[H], gd[H], want[R * H], wr[R];

	fill(x, R * H, 7, 3);
	fill(g, H, 8, 1);
	for (int i = 0; i < H; i++)
		gd[i] = g[i];
	for (int r = 0; r < R; r++) {
		for (int i = 0; i < H; i++)
			xd[i] = x[r * H + i];
		wr[r] = rms_ref(xd, gd, want + r * H, H);
	}
	ck_assert_int_eq(kern_rmsnorm_fwd(&K, R, H, 1e-5f, x, g, y, rstd), 0);
	near(y, want, R * H, 1e-5, "rmsnorm y");
	near(rstd, wr, R, 1e-5, "rmsnorm rstd");
}
END_TEST

/* The gradients of L = sum(w . y) against central finite differences of
 * the double forward: dx per element, dg accumulated over rows onto a
 * non-zero start. */
START_TEST(rmsnorm_backward)
{
	float x[R * H], g[H], w[R * H], y[R * H], rstd[R], dx[R * H], dg[H];
	double xd[H], gd[H], yd[H], want_dx[R * H], want_dg[H];
	const double eps = 1e-6;

	fill(x, R * H, 9, 2);
	fill(g, H, 10, 1);
	fill(w, R * H, 11, 1);
	for (int i = 0; i < H; i++) {
		dg[i] = 0.25f;
		want_dg[i] = 0.25;
		gd[i] = g[i];
	}
	for (int r = 0; r < R; r++) {
		for (int i = 0; i < H; i++)
			xd[i] = x[r * H + i];
		for (int i = 0; i < H; i++) {
			double up = 0, down = 0, keep = xd[i], kg = gd[i];

			xd[i] = keep + eps;
			rms_ref(xd, gd, yd, H);
			for (int j = 0; j < H; j++)
				up += w[r * H + j] * yd[j];
			xd[i] = keep - eps;
			rms_ref(xd, gd, yd, H);
			for (int j = 0; j < H; j++)
				down += w[r * H + j] * yd[j];
			xd[i] = keep;
			want_dx[r * H + i] = (up - down) / (2 * eps);
			gd[i] = kg + eps;
			rms_ref(xd, gd, yd, H);
			up = w[r * H + i] * yd[i];
			gd[i] = kg - eps;
			rms_ref(xd, gd, yd, H);
			down = w[r * H + i] * yd[i];
			gd[i] = kg;
			want_dg[i] += (up - down) / (2 * eps);
		}
	}
	ck_assert_int_eq(kern_rmsnorm_fwd(&K, R, H, 1e-5f, x, g, y, rstd), 0);
	ck_assert_int_eq(kern_rmsnorm_bwd(&K, R, H, x, g, rstd, w, dx, dg), 0);
	near(dx, want_dx, R * H, 1e-4, "rmsnorm dx");
	near(dg, want_dg, H, 1e-4, "rmsnorm dg");
	/* dx may not alias dy or x (kern.h: outputs never alias inputs) */
	ck_assert_int_eq(kern_rmsnorm_bwd(&K, R, H, x, g, rstd, w, w, dg),
			 KERN_EINVAL);
	ck_assert_int_eq(kern_rmsnorm_bwd(&K, R, H, x, g, rstd, w, x, dg),
			 KERN_EINVAL);
}
END_TEST

/* ---- cross-entropy ------------------------------------------------------ */

enum { CR = 4, CV = 11, CVALID = 9 }; /* 2 padded columns per row */

/* logits of CR rows over CV ids; the padded ids get huge values, which
 * must not count. Targets cover the first, middle and last real ids. */
static void ce_data(float *l, int32_t *t)
{
	fill(l, CR * CV, 13, 4);
	for (int r = 0; r < CR; r++)
		for (int j = CVALID; j < CV; j++)
			l[r * CV + j] = 1e3f;
	t[0] = 0;
	t[1] = 4;
	t[2] = CVALID - 1;
	t[3] = 4;
}

START_TEST(ce_single_rank)
{
	float l[CR * CV], mx[CR], sum[CR], tg[CR], loss[CR], d[CR * CV];
	int32_t t[CR];
	double want_loss[CR], want_d[CR * CV];

	ce_data(l, t);
	for (int r = 0; r < CR; r++) {
		double m = -DBL_MAX, s = 0;

		for (int j = 0; j < CVALID; j++)
			m = fmax(m, l[r * CV + j]);
		for (int j = 0; j < CVALID; j++)
			s += exp(l[r * CV + j] - m);
		want_loss[r] = log(s) + m - l[r * CV + t[r]];
		for (int j = 0; j < CV; j++)
			want_d[r * CV + j] = j >= CVALID ? 0 : 0.5 *
				(exp(l[r * CV + j] - m) / s - (j == t[r]));
	}
	ck_assert_int_eq(kern_ce_max(&K, CR, CV, CVALID, l, mx), 0);
	ck_assert_int_eq(kern_ce_target(&K, CR, CV, 0, t, l, tg), 0);
	ck_assert_int_eq(kern_ce_sumexp(&K, CR, CV, CVALID, l, mx, sum), 0);
	ck_assert_int_eq(kern_ce_loss(&K, CR, mx, sum, tg, loss), 0);
	near(loss, want_loss, CR, 1e-5, "ce loss");
	ck_assert_int_eq(kern_ce_bwd(&K, CR, CV, CVALID, 0, t, mx, sum, 0.5f, l,
				     d), 0);
	near(d, want_d, CR * CV, 1e-6, "ce grad");
	/* in place */
	ck_assert_int_eq(kern_ce_bwd(&K, CR, CV, CVALID, 0, t, mx, sum, 0.5f, l,
				     l), 0);
	near(l, want_d, CR * CV, 1e-6, "ce grad in place");
}
END_TEST

/* The same rows split over two vocab-parallel ranks (ids [0, 6) and
 * [6, 11), the second with 3 real ids), combined as the TP reductions do,
 * give the single-rank loss and gradient. */
START_TEST(ce_vocab_parallel)
{
	enum { V0 = 6, V1 = CV - V0, VAL1 = CVALID - V0 };
	float l[CR * CV], part[2][CR * V0], mx[2][CR], sum[2][CR], tg[2][CR];
	float m[CR], s[CR], tt[CR], loss[CR], d[2][CR * V0];
	float one_mx[CR], one_sum[CR], one_tg[CR], one_loss[CR], one_d[CR * CV];
	int32_t t[CR];
	double want[CR], want_d[CR * CV];

	ce_data(l, t);
	for (int r = 0; r < CR; r++) {
		memcpy(part[0] + r * V0, l + r * CV, V0 * sizeof(float));
		memcpy(part[1] + r * V1, l + r * CV + V0, V1 * sizeof(float));
	}
	kern_ce_max(&K, CR, CV, CVALID, l, one_mx);
	kern_ce_target(&K, CR, CV, 0, t, l, one_tg);
	kern_ce_sumexp(&K, CR, CV, CVALID, l, one_mx, one_sum);
	kern_ce_loss(&K, CR, one_mx, one_sum, one_tg, one_loss);
	kern_ce_bwd(&K, CR, CV, CVALID, 0, t, one_mx, one_sum, 1.0f, l, one_d);
	for (int r = 0; r < CR; r++)
		want[r] = one_loss[r];
	for (int i = 0; i < CR * CV; i++)
		want_d[i] = one_d[i];

	ck_assert_int_eq(kern_ce_max(&K, CR, V0, V0, part[0], mx[0]), 0);
	ck_assert_int_eq(kern_ce_max(&K, CR, V1, VAL1, part[1], mx[1]), 0);
	for (int r = 0; r < CR; r++)
		m[r] = fmaxf(mx[0][r], mx[1][r]); /* all-reduce MAX */
	ck_assert_int_eq(kern_ce_target(&K, CR, V0, 0, t, part[0], tg[0]), 0);
	ck_assert_int_eq(kern_ce_target(&K, CR, V1, V0, t, part[1], tg[1]), 0);
	ck_assert_int_eq(kern_ce_sumexp(&K, CR, V0, V0, part[0], m, sum[0]), 0);
	ck_assert_int_eq(kern_ce_sumexp(&K, CR, V1, VAL1, part[1], m, sum[1]),
			 0);
	for (int r = 0; r < CR; r++) { /* all-reduce SUM */
		s[r] = sum[0][r] + sum[1][r];
		tt[r] = tg[0][r] + tg[1][r];
	}
	ck_assert_int_eq(kern_ce_loss(&K, CR, m, s, tt, loss), 0);
	near(loss, want, CR, 1e-6, "vocab-parallel loss");
	ck_assert_int_eq(kern_ce_bwd(&K, CR, V0, V0, 0, t, m, s, 1.0f, part[0],
				     d[0]), 0);
	ck_assert_int_eq(kern_ce_bwd(&K, CR, V1, VAL1, V0, t, m, s, 1.0f,
				     part[1], d[1]), 0);
	for (int r = 0; r < CR; r++) {
		near(d[0] + r * V0, want_d + r * CV, V0, 1e-6, "rank 0 grad");
		near(d[1] + r * V1, want_d + r * CV + V0, V1, 1e-6,
		     "rank 1 grad");
	}
	/* a rank without real ids: max -FLT_MAX, sum 0 */
	ck_assert_int_eq(kern_ce_max(&K, 1, V1, 0, part[1], mx[1]), 0);
	ck_assert(mx[1][0] == -FLT_MAX);
	ck_assert_int_eq(kern_ce_sumexp(&K, 1, V1, 0, part[1], m, sum[1]), 0);
	ck_assert(sum[1][0] == 0.0f);
}
END_TEST

/* ---- embedding ---------------------------------------------------------- */

START_TEST(embedding_both)
{
	enum { ROWS = 4, EH = 3, N = 6, FIRST = 10 };
	float table[ROWS * EH], out[N * EH], dout[N * EH], dt[ROWS * EH];
	int32_t tok[N] = { 10, 13, 9, 14, 11, 10 }; /* 9 and 14: not ours */
	double want[N * EH], want_dt[ROWS * EH];

	fill(table, ROWS * EH, 14, 1);
	fill(dout, N * EH, 15, 1);
	fill(out, N * EH, 16, 1); /* stale values must be overwritten */
	for (int i = 0; i < ROWS * EH; i++) {
		dt[i] = 1.0f;
		want_dt[i] = 1.0;
	}
	for (int i = 0; i < N; i++) {
		int row = tok[i] - FIRST, ours = row >= 0 && row < ROWS;

		for (int j = 0; j < EH; j++) {
			want[i * EH + j] = ours ? table[row * EH + j] : 0;
			if (ours)
				want_dt[row * EH + j] += dout[i * EH + j];
		}
	}
	ck_assert_int_eq(kern_embed_fwd(&K, N, EH, FIRST, ROWS, table, tok,
					out), 0);
	near(out, want, N * EH, 0, "embedding out");
	ck_assert_int_eq(kern_embed_bwd(&K, N, EH, FIRST, ROWS, dout, tok, dt),
			 0);
	near(dt, want_dt, ROWS * EH, 1e-6, "embedding grad");
}
END_TEST

/* ---- optimizers --------------------------------------------------------- */

START_TEST(adam_three_steps)
{
	enum { N = 7 };
	float p[N], g[N], m[N] = { 0 }, v[N] = { 0 };
	double pd[N], md[N] = { 0 }, vd[N] = { 0 };
	const double b1 = 0.9, b2 = 0.999, eps = 1e-8, lr = 0.01;

	fill(p, N, 17, 1);
	for (int i = 0; i < N; i++)
		pd[i] = p[i];
	for (long long step = 1; step <= 3; step++) {
		fill(g, N, 18 + (unsigned)step, 0.1f);
		g[0] = 0.0f; /* a zero gradient leaves the weight alone */
		for (int i = 0; i < N; i++) {
			md[i] = b1 * md[i] + (1 - b1) * g[i];
			vd[i] = b2 * vd[i] + (1 - b2) * (double)g[i] * g[i];
			pd[i] -= lr * (md[i] / (1 - pow(b1, (double)step))) /
				 (sqrt(vd[i] / (1 - pow(b2, (double)step))) +
				  eps);
		}
		ck_assert_int_eq(kern_adam(&K, N, (float)lr, (float)b1,
					   (float)b2, (float)eps, step, p, g,
					   m, v), 0);
		near(p, pd, N, 1e-6, "adam");
	}
}
END_TEST

START_TEST(sgd_step)
{
	float p[5], g[5];
	double want[5];

	fill(p, 5, 21, 1);
	fill(g, 5, 22, 1);
	for (int i = 0; i < 5; i++)
		want[i] = p[i] - 0.25 * g[i];
	ck_assert_int_eq(kern_sgd(&K, 5, 0.25f, p, g), 0);
	near(p, want, 5, 1e-7, "sgd");
}
END_TEST

/* bf16 rounding on known bit patterns: exact values, ties to even both
 * ways, a carry into the exponent, the largest finite float (which rounds
 * to infinity, as IEEE round-to-nearest does), infinities and NaN. */
START_TEST(bf16_bits)
{
	static const uint32_t in[] = {
		0x3f800000u, /* 1.0: exact */
		0x3f808000u, /* 1 + 2^-8: a tie, even below -> 0x3f80 */
		0x3f818000u, /* a tie, odd below -> up to 0x3f82 */
		0x3f808001u, /* just above the tie -> 0x3f81 */
		0x3fffffffu, /* carries into the exponent -> 0x4000 */
		0x7f7fffffu, /* FLT_MAX -> +inf */
		0xff800000u, /* -inf */
		0x7fc00001u, /* a NaN stays NaN */
		0x7f800001u, /* a signalling NaN becomes quiet */
		0x80000000u, /* -0 */
	};
	static const uint16_t want[] = {
		0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x4000, 0x7f80, 0xff80, 0x7fc0,
		0x7fc0, 0x8000,
	};
	enum { N = sizeof(in) / sizeof(in[0]) };
	float x[N], back[N], r[N];
	uint16_t y[N];

	memcpy(x, in, sizeof(x));
	memcpy(r, in, sizeof(r));
	ck_assert_int_eq(kern_to_bf16(&K, N, x, y), 0);
	ck_assert_int_eq(kern_from_bf16(&K, N, y, back), 0);
	ck_assert_int_eq(kern_round_bf16(&K, N, r), 0);
	for (int i = 0; i < N; i++) {
		uint32_t b, rb;

		ck_assert_msg(y[i] == want[i], "bf16 of 0x%08x: 0x%04x, want "
			      "0x%04x", in[i], y[i], want[i]);
		memcpy(&b, &back[i], sizeof(b));
		memcpy(&rb, &r[i], sizeof(rb));
		ck_assert_uint_eq(b, (uint32_t)want[i] << 16);
		ck_assert_uint_eq(rb, b);
	}
	ck_assert_int_eq(kern_to_bf16(&K, 3, NULL, y), KERN_EINVAL);
	ck_assert_int_eq(kern_round_bf16(&K, 0, NULL), 0);
}
END_TEST

/* ---- suite -------------------------------------------------------------- */

int main(void)
{
	const struct test_case cases[] = {
		{ "memory_ops", memory_ops },
		{ "errors", errors },
		{ "error_text", error_text_is_read_once },
		{ "bf16_bits", bf16_bits },
		{ "gemm_all_transposes", gemm_all_transposes },
		{ "axpy", axpy },
		{ "rmsnorm_forward", rmsnorm_forward },
		{ "rmsnorm_backward", rmsnorm_backward },
		{ "ce_single_rank", ce_single_rank },
		{ "ce_vocab_parallel", ce_vocab_parallel },
		{ "embedding_both", embedding_both },
		{ "adam_three_steps", adam_three_steps },
		{ "sgd_step", sgd_step },
	};

	return RUN_CASES_FIXTURE("kernels", cases, 0, setup, teardown);
}
