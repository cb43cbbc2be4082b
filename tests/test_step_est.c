/*
 * gtplan-run's step estimate (sim/step_est.h) and the hardware profiles
 * (planner/hardware.h): the GEMM and attention FLOPs of a small decoder
 * against formulas by hand, class times from the profile's figures, a
 * profile edited in data/hardware.yaml's text changing the estimate, a
 * layer's memory-bound kernels and attention's zeroing by hand, a second
 * profile, the parser's refusals and limits, GTP prefetch hiding
 * gathers, the plan JSON's field.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grid_yaml.h"
#include "hardware.h"
#include "jsonw.h"
#include "report.h"
#include "simulate.h"
#include "step_est.h"
#include "harness.h"
#include "sim_fixture.h"

/* gtplan.runtime's own decoder (no model named): `hidden`, ffn 128,
 * `layers`, 4 heads of hidden / 4 (PLAN_RT_HEADS = PLAN_RT_KV_HEADS = 4),
 * vocab 256, seq_len 32, 2 micro-batches of 1 on 1 GPU (or GTP `shards`
 * over as many GPUs, prefetch as given). */
static char *cfg_h(int hidden, int layers, const char *dtype, int shards,
		   int prefetch)
{
	static char buf[1024];
	char runtime[512];
	struct grid_yaml y = {
		.batch = 2 * shards, .tp = 1, .shards = shards, .nodes = 1,
		.gpus = shards, .tail = runtime,
	};

	snprintf(runtime, sizeof(runtime),
		 "gtplan:\n"
		 "  runtime:\n"
		 "    hidden: %d\n"
		 "    ffn: 128\n"
		 "    layers: %d\n"
		 "    seq_len: 32\n"
		 "    vocab: 256\n"
		 "    dtype: %s\n"
		 "    prefetch: %s\n",
		 hidden, layers, dtype, prefetch ? "true" : "false");
	return grid_yaml_text(buf, sizeof(buf), &y);
}

/* The same at hidden 64: heads of 16, which have no flash kernels. */
static char *cfg(int layers, const char *dtype, int shards, int prefetch)
{
	return cfg_h(64, layers, dtype, shards, prefetch);
}

static void run(struct sim_fx *f, const char *yaml)
{
	ck_assert_int_eq(sim_fx_run(f, yaml), 0);
	ck_assert(f->sim.ran);
}

#define CLOSE(a, b) ck_assert_msg(fabs((double)(a) - (double)(b)) <= \
	1e-9 * fabs((double)(b)), "%.6g != %.6g", (double)(a), (double)(b))

START_TEST(gemm_and_attention_flops_by_hand)
{
	struct sim_fx f;
	const double h = 64, fl = 128, L = 3, v = 256, N = 32, mbs = 2;
	const double heads = 4, kv = 4, d = 16;
	double qkv = (heads + 2 * kv) * d * h, proj = h * heads * d;
	/* 2 m n k per GEMM; forward 1, backward 2 per weight and token */
	double gemm = mbs * 6 * N * (L * (qkv + proj + 2 * fl * h + h * fl) +
				     v * h);
	/* causal halved: forward 4 b h s^2 d / 2 a layer, backward 2.5x */
	double attn = mbs * L * 4 * heads * d * N * N / 2;
	const struct step_estimate *e;
	const struct hw_profile *hw;

	run(&f, cfg((int)L, "bf16", 1, 0));
	e = &f.sim.step;
	hw = &e->hw;
	ck_assert_msg(e->valid, "%s", e->why);
	CLOSE(e->w.work[STEP_GEMM], gemm);
	/* per layer: qkv (one GEMM for every query group), proj, fc1, fc2
	 * once forward, twice backward; the output layer */
	ck_assert_int_eq(e->w.calls[STEP_GEMM],
			 (long long)(mbs * (L * 12 + 3)));
	CLOSE(e->w.work[STEP_ATTN_FWD], attn);
	CLOSE(e->w.work[STEP_ATTN_BWD], 2.5 * attn);
	CLOSE(e->w.us[STEP_GEMM], gemm / (hw->bf16_tflops * 1e6 *
					  hw->gemm_efficiency) +
	      (double)e->w.calls[STEP_GEMM] * hw->gemm_call_us);
	CLOSE(e->w.us[STEP_ATTN_FWD], attn / (hw_attn_at(hw, 16)->fwd_tflops *
					      1e6));
	/* Adam writing the weights' bf16 copy: 30 bytes a parameter, one
	 * launch */
	CLOSE(e->w.work[STEP_OPTIMIZER], 30.0 * (L * (qkv + proj + 3 * fl * h) +
						 2 * v * h + (2 * L + 1) * h));
	ck_assert_int_eq(e->w.calls[STEP_OPTIMIZER], 1);
	/* one GPU: nothing to communicate */
	ck_assert(e->w.us[STEP_COMM] == 0);
	double sum = 0;
	for (int c = 0; c < STEP_CLASSES; c++)
		sum += e->w.us[c];
	CLOSE(e->total_us, sum);
	sim_fx_release(&f);
}
END_TEST

/* data/hardware.yaml as in the repository (tests run from its root). */
static char *read_data(size_t *len)
{
	FILE *fp = fopen("data/hardware.yaml", "rb");
	char *buf = calloc(1, 1 << 16);

	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(buf);
	*len = fread(buf, 1, (1 << 16) - 1, fp);
	fclose(fp);
	return buf;
}

/* The line of text that starts with `from`, or NULL. */
static const char *line_of(const char *text, const char *from)
{
	char pat[128];
	const char *at;

	if (!strncmp(text, from, strlen(from)))
		return text;
	snprintf(pat, sizeof(pat), "\n%s", from);
	at = strstr(text, pat);
	return at ? at + 1 : NULL;
}

/* text with the line that starts with `from` replaced by `to` (lines,
 * newline-terminated but the last); a new string. */
static char *edit(const char *text, const char *from, const char *to)
{
	const char *at = line_of(text, from), *nl;
	char *out = calloc(1, strlen(text) + strlen(to) + 2);

	ck_assert_msg(at != NULL, "no line '%s'", from);
	ck_assert_ptr_nonnull(out);
	nl = strchr(at, '\n');
	memcpy(out, text, (size_t)(at - text));
	strcat(out, to);
	strcat(out, nl ? nl : "\n");
	return out;
}

/* "data/hardware.yaml:LINE:COL:" of column col of the line of text that
 * starts with `from`. */
static void place(const char *text, const char *from, int col, char *out,
		  size_t n)
{
	const char *at = line_of(text, from);
	int line = 1;

	ck_assert_ptr_nonnull(at);
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	snprintf(out, n, "data/hardware.yaml:%d:%d:", line, col);
}

START_TEST(profile_is_the_data_file)
{
	struct sim_fx f;
	struct hw_profile file, twice;
	struct step_estimate e2;
	size_t len;
	char err[256], *text = read_data(&len), *t2, *t3;
	const struct step_estimate *e;

	/* the embedded profile is the file's, its first the default */
	ck_assert_int_eq(hw_profile_parse(text, len, "h200", &file, err,
					  sizeof(err)), 0);
	ck_assert_int_eq(hw_profile_parse(text, len, NULL, &twice, err,
					  sizeof(err)), 0);
	ck_assert_str_eq(twice.name, hw_profile_default_name());
	run(&f, cfg(2, "bf16", 1, 0));
	e = &f.sim.step;
	ck_assert_str_eq(file.name, e->hw.name);
	ck_assert_str_eq(file.description, e->hw.description);
	ck_assert_str_eq(file.measured, e->hw.measured);
	ck_assert(file.bf16_tflops == e->hw.bf16_tflops &&
		  file.gemm_efficiency == e->hw.gemm_efficiency &&
		  file.gemm_call_us == e->hw.gemm_call_us &&
		  file.hbm_gbps == e->hw.hbm_gbps &&
		  file.launch_us == e->hw.launch_us &&
		  file.n_attn == e->hw.n_attn);
	for (int c = 0; c < HW_MEM_CLASSES; c++)
		ck_assert(file.mem_efficiency[c] == e->hw.mem_efficiency[c] &&
			  file.mem_call_us[c] == e->hw.mem_call_us[c]);
	for (size_t i = 0; i < file.n_attn; i++)
		ck_assert(file.attn[i].head_dim == e->hw.attn[i].head_dim &&
			  file.attn[i].fwd_tflops == e->hw.attn[i].fwd_tflops &&
			  file.attn[i].bwd_tflops == e->hw.attn[i].bwd_tflops);
	/* GEMMs twice as efficient: their FLOP time halves */
	t2 = edit(text, "  gemm_efficiency:", "  gemm_efficiency: 0.9");
	ck_assert_int_eq(hw_profile_parse(t2, strlen(t2), "h200", &twice,
					  err, sizeof(err)), 0);
	ck_assert(twice.gemm_efficiency == 0.9);
	ck_assert_int_eq(step_estimate(&f.plan, &f.sim.cost, &twice, &e2), 0);
	double fixed = (double)e->w.calls[STEP_GEMM] * file.gemm_call_us;
	CLOSE(e2.w.us[STEP_GEMM] - fixed, (e->w.us[STEP_GEMM] - fixed) *
	      file.gemm_efficiency / 0.9);
	CLOSE(e2.w.us[STEP_ELEMENTWISE], e->w.us[STEP_ELEMENTWISE]);
	/* a far slower attention at head dim 16's nearest row: this model's
	 * step is host-bound at the profile's speeds (its kernels' launch
	 * time exceeds their device time), so only an attention slow enough
	 * to make the device the bottleneck moves the step's total */
	t3 = edit(text, "    - {head_dim: 64,", "    - {head_dim: 64, "
		  "fwd_tflops: 0.00001, bwd_tflops: 0.00001}");
	ck_assert_int_eq(hw_profile_parse(t3, strlen(t3), "h200", &twice,
					  err, sizeof(err)), 0);
	ck_assert_int_eq(step_estimate(&f.plan, &f.sim.cost, &twice, &e2), 0);
	CLOSE(e2.w.us[STEP_ATTN_FWD], e->w.work[STEP_ATTN_FWD] / 0.00001e6);
	ck_assert(e2.total_us > e->total_us);
	free(t2);
	free(t3);
	free(text);
	sim_fx_release(&f);
}
END_TEST

/* text with its profile h200 appended again, named `name`
 * (gemm_efficiency 0.5); a new string. */
static char *add_profile(const char *text, const char *name)
{
	const char *from = line_of(text, "- gpu: h200"), *to;
	char *copy, *named, *out, line[64];

	ck_assert_ptr_nonnull(from);
	to = strstr(from, "\n- ");
	copy = strndup(from, to ? (size_t)(to + 1 - from) : strlen(from));
	ck_assert_ptr_nonnull(copy);
	snprintf(line, sizeof(line), "- gpu: %s", name);
	named = edit(copy, "- gpu: h200", line);
	free(copy);
	copy = named;
	named = edit(copy, "  gemm_efficiency:", "  gemm_efficiency: 0.5");
	out = calloc(1, strlen(text) + strlen(named) + 1);
	ck_assert_ptr_nonnull(out);
	strcat(strcat(out, text), named);
	free(copy);
	free(named);
	return out;
}

START_TEST(second_profile)
{
	struct hw_profile hw;
	char err[256];
	size_t len;
	char *text = read_data(&len), *two = add_profile(text, "b200");

	ck_assert_msg(hw_profile_parse(two, strlen(two), "b200", &hw, err,
				       sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(hw.name, "b200");
	ck_assert(hw.gemm_efficiency == 0.5);
	ck_assert_int_eq(hw_profile_parse(two, strlen(two), NULL, &hw, err,
					  sizeof(err)), 0);
	ck_assert_str_eq(hw.name, "h200");
	ck_assert(hw.gemm_efficiency != 0.5);
	free(two);
	free(text);
}
END_TEST

/* Breakages of the file: a line replaced, the message wanted, and where
 * (column col of the line of the file that starts with `at`; not checked
 * when at is NULL). */
static const struct breakage {
	const char *from, *to, *want, *at;
	int col;
} breakages[] = {
	{ "  gemm_efficiency:", "  gemm_efficiency: 1.5",
	  "bad value of 'gemm_efficiency'", "  gemm_efficiency:", 20 },
	{ "  gemm_efficiency:", "  gemm_efficiency: fast",
	  "bad value of 'gemm_efficiency'", "  gemm_efficiency:", 20 },
	{ "  gemm_efficiency:", "  gemm_efficiency: \"0.7\"",
	  "bad value of 'gemm_efficiency'", "  gemm_efficiency:", 20 },
	{ "  bf16_tflops:", "  bf16_tflops: [989.5]",
	  "bad value of 'bf16_tflops'", "  bf16_tflops:", 16 },
	{ "  launch_us:", "  launch_us: -1", "bad value of 'launch_us'",
	  "  launch_us:", 14 },
	{ "  hbm_gbps:", "  # hbm_gbps dropped", "profile 'h200' lacks hbm_gbps",
	  "- gpu: h200", 3 },
	{ "- gpu: h200", "-", "profile '?' lacks gpu", "  description:", 3 },
	{ "  launch_us:", "  launch_usec: 4", "unknown field 'launch_usec'",
	  "  launch_us", 3 },
	{ "  launch_us:", "  launch_us: 4\n  launch_us: 5",
	  "duplicate key 'launch_us'", NULL, 0 },
	{ "  attention:", "  attention: 64\n  rows:",
	  "attention is a list of rows", "  attention:", 14 },
	{ "    - {head_dim: 64,", "    - {head_dim: 64.5, fwd_tflops: 1, "
	  "bwd_tflops: 1}", "an attention row is", "    - {head_dim: 64,", 7 },
	{ "    - {head_dim: 64,", "    - {head_dim: 64, fwd_tflops: 1}",
	  "an attention row is", "    - {head_dim: 64,", 7 },
	{ "    - {head_dim: 64,", "    - {head_dim: 128, fwd_tflops: 1, "
	  "bwd_tflops: 1}", "attention lists head dim 128 twice", NULL, 0 },
	{ "  source:", "  source: a datasheet\n  sources:",
	  "source is a list of text", "  source:", 11 },
	{ "  description:", "  description: [a, b]", "description is text",
	  "  description:", 16 },
	{ "  copy_efficiency:", "  copy_efficiency: 0",
	  "profile 'h200' has an efficiency of 0", "- gpu: h200", 3 },
	{ "  hbm_gbps:", "  hbm_gbps: 0", "needs a positive peak",
	  "- gpu: h200", 3 },
	{ "- gpu: h200", "- gpu: [h200]", "gpu is text", "- gpu: h200", 8 },
	{ "- gpu: h200", "- gpu: \"\"", "gpu wants 1 to 31 characters",
	  "- gpu: h200", 8 },
	{ "- gpu: h200", "- 7\n- gpu: h200", "a profile is a mapping",
	  "- gpu: h200", 3 },
	{ "- gpu: h200", "gpu: h200", "mapping values are not allowed", NULL,
	  0 },
	{ "- gpu: h200", "profiles:\n- gpu: h200",
	  "the file is a list of GPU profiles", NULL, 0 },
};

START_TEST(parser_refuses_bad_profiles)
{
	struct hw_profile hw;
	char err[256], where[64];
	size_t len;
	char *text = read_data(&len), *bad;

	ck_assert_int_ne(hw_profile_parse(text, len, "b999", &hw, err,
					  sizeof(err)), 0);
	ck_assert_str_eq(err, "data/hardware.yaml has no profile 'b999'");
	for (size_t i = 0; i < sizeof(breakages) / sizeof(breakages[0]); i++) {
		const struct breakage *b = &breakages[i];

		bad = edit(text, b->from, b->to);
		ck_assert_int_ne(hw_profile_parse(bad, strlen(bad), "h200", &hw,
						  err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, b->want) &&
			      !strncmp(err, "data/hardware.yaml:", 19),
			      "case %zu: got '%s', want '%s'", i, err, b->want);
		if (b->at) {
			place(text, b->at, b->col, where, sizeof(where));
			ck_assert_msg(!strncmp(err, where, strlen(where)),
				      "case %zu: got '%s', want at %s", i, err,
				      where);
		}
		free(bad);
	}
	/* a gpu named twice: refused at the second's name */
	bad = add_profile(text, "h200");
	ck_assert_int_ne(hw_profile_parse(bad, strlen(bad), "h200", &hw, err,
					  sizeof(err)), 0);
	place(bad + len, "- gpu: h200", 8, where, sizeof(where));
	ck_assert_msg(strstr(err, "duplicate gpu 'h200'"), "%s", err);
	{
		int line_in_copy, line_in_text = 0;

		sscanf(where, "data/hardware.yaml:%d", &line_in_copy);
		for (const char *p = text; *p; p++)
			line_in_text += *p == '\n';
		snprintf(where, sizeof(where), "data/hardware.yaml:%d:8:",
			 line_in_text + line_in_copy);
		ck_assert_msg(!strncmp(err, where, strlen(where)),
			      "got '%s', want at %s", err, where);
	}
	free(bad);
	free(text);
}
END_TEST

/* The parser's limits: the text fields' sizes, HW_MAX_ATTN,
 * HW_MAX_PROFILES. */
START_TEST(parser_limits)
{
	struct hw_profile hw;
	char err[256], line[sizeof(hw.description) + 32];
	size_t len;
	char *text = read_data(&len), *bad, *more;
	int n;

	/* the longest description fits, one character more is refused */
	n = snprintf(line, sizeof(line), "  description: ");
	memset(line + n, 'x', sizeof(hw.description) - 1);
	line[n + sizeof(hw.description) - 1] = '\0';
	bad = edit(text, "  description:", line);
	ck_assert_int_eq(hw_profile_parse(bad, strlen(bad), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_uint_eq(strlen(hw.description), sizeof(hw.description) - 1);
	free(bad);
	strcat(line, "x");
	bad = edit(text, "  description:", line);
	ck_assert_int_ne(hw_profile_parse(bad, strlen(bad), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "description wants at most 127 "
				     "characters"));
	free(bad);
	/* HW_MAX_ATTN rows parse, one more is refused */
	more = calloc(1, len + 64 * (HW_MAX_ATTN + 1));
	ck_assert_ptr_nonnull(more);
	memcpy(more, text, len);
	for (int i = 2; i < HW_MAX_ATTN; i++)
		sprintf(more + strlen(more), "    - {head_dim: %d, fwd_tflops: "
			"100, bwd_tflops: 100}\n", 16 * i + 8);
	ck_assert_msg(hw_profile_parse(more, strlen(more), "h200", &hw, err,
				       sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq((int)hw.n_attn, HW_MAX_ATTN);
	strcat(more, "    - {head_dim: 999, fwd_tflops: 100, bwd_tflops: 100}\n");
	ck_assert_int_ne(hw_profile_parse(more, strlen(more), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "too many attention rows"));
	free(more);
	/* HW_MAX_PROFILES profiles parse, one more is refused */
	more = strdup(text);
	ck_assert_ptr_nonnull(more);
	for (int i = 1; i <= HW_MAX_PROFILES; i++) {
		char name[16], *next;

		snprintf(name, sizeof(name), "gpu%d", i);
		next = add_profile(more, name);
		free(more);
		more = next;
		ck_assert_int_eq(hw_profile_parse(more, strlen(more), name,
						  &hw, err, sizeof(err)),
				 i < HW_MAX_PROFILES ? 0 : -1);
	}
	snprintf(line, sizeof(line), "more than %d profiles", HW_MAX_PROFILES);
	ck_assert_ptr_nonnull(strstr(err, line));
	free(more);
	free(text);
}
END_TEST

/* One layer's memory-bound kernels (3 layers less 2) against
 * runtime/rt_train.c's calls by hand, bytes as sim/step_ops.c counts
 * them: bf16 without QK-norm or bias takes linear_qkv's columns, RoPE and
 * the bf16 copies in one pass each way (kern_qkv_rope_bf and
 * kern_qkv_merge_rope_bf, 6 bytes a value: fp32 in, bf16 out); head dim
 * 16 has no flash kernels, so attention widens its copies (from_bf16)
 * and rounds o after. SwiGLU reads and writes bf16 alone
 * (swiglu_*_b16: 6 and 10 bytes an F value), the forward norms write y's
 * copy alone (14: x, r in, sum, y16 out), and the backward norms write
 * dx's bits beside it (18), which the next block's GEMMs read as they are.
 * Per micro-batch: forward two norms with the residual add, qkv_rope_bf,
 * from_bf16, o's round_bf16_copy, swiglu_fwd_b16; backward
 * swiglu_bwd_b16, its norm's rmsnorm_bwd_add, two from_bf16,
 * qkv_merge_rope_bf, rmsnorm_bwd_add. */
START_TEST(layer_elementwise_by_hand)
{
	struct sim_fx a, b;
	const double N = 32, h = 64, ql = 64, qkvl = 192, fl = 128, mbs = 2;
	double fwd = 2 * 14 * N * h + 6 * N * qkvl + 6 * N * qkvl +
		     10 * N * ql + 6 * N * fl;
	double bwd = 10 * N * fl + 18 * N * h + 6 * N * qkvl + 6 * N * ql +
		     6 * N * qkvl + 18 * N * h;

	run(&a, cfg(3, "bf16", 1, 0));
	run(&b, cfg(2, "bf16", 1, 0));
	ck_assert(a.sim.step.valid && b.sim.step.valid);
	CLOSE(a.sim.step.w.work[STEP_ELEMENTWISE] -
	      b.sim.step.w.work[STEP_ELEMENTWISE], mbs * (fwd + bwd));
	ck_assert_int_eq(a.sim.step.w.calls[STEP_ELEMENTWISE] -
			 b.sim.step.w.calls[STEP_ELEMENTWISE],
			 (long long)mbs * 12);
	sim_fx_release(&a);
	sim_fx_release(&b);
}
END_TEST

/* One layer's zeroing (3 layers less 2): attention's backward writes dq,
 * dk and dv without CP (kern_attn's overwrite). At head dim 16 the
 * reference kernels run after three zeroing calls (dq [N, ql], dk and dv
 * [N, kvl], 4 bytes a value); at head dim 64 the flash backward clears
 * them in its dsum pass, attention's time: no call. Either way the step's
 * start zeroes the layer's two norm weights' gradients (replicated
 * parameters, one GTP rank: 2 h floats, in the same one call). */
START_TEST(attn_grads_zeroed_by_hand)
{
	static const int hidden[2] = { 64, 256 };
	const double N = 32, mbs = 2;

	for (int i = 0; i < 2; i++) {
		struct sim_fx a, b;
		double h = hidden[i], ql = h, kvl = h; /* 4 heads, 4 kv heads */
		int apart = i == 0;

		run(&a, cfg_h(hidden[i], 3, "bf16", 1, 0));
		run(&b, cfg_h(hidden[i], 2, "bf16", 1, 0));
		ck_assert(a.sim.step.valid && b.sim.step.valid);
		CLOSE(a.sim.step.w.work[STEP_COPY] -
		      b.sim.step.w.work[STEP_COPY],
		      apart * mbs * (4 * N * ql + 2 * 4 * N * kvl) + 4 * 2 * h);
		ck_assert_int_eq(a.sim.step.w.calls[STEP_COPY] -
				 b.sim.step.w.calls[STEP_COPY],
				 (long long)(apart * mbs * 3));
		sim_fx_release(&a);
		sim_fx_release(&b);
	}
}
END_TEST

START_TEST(no_estimate_for_fp32)
{
	struct sim_fx f;

	run(&f, cfg(2, "fp32", 1, 0));
	ck_assert(!f.sim.step.valid);
	ck_assert_ptr_nonnull(strstr(f.sim.step.why, "fp32"));
	sim_fx_release(&f);
}
END_TEST

/* GTP 2: each weight is gathered; with prefetch the gathers after the
 * first of a pass hide behind the compute since the previous weight. */
START_TEST(prefetch_hides_gathers)
{
	struct sim_fx a, b;

	run(&a, cfg(2, "bf16", 2, 0));
	run(&b, cfg(2, "bf16", 2, 1));
	ck_assert(a.sim.step.valid && b.sim.step.valid);
	ck_assert(a.sim.step.comm_hidden_us == 0);
	ck_assert(b.sim.step.comm_hidden_us > 0);
	CLOSE(b.sim.step.w.us[STEP_COMM] + b.sim.step.comm_hidden_us,
	      a.sim.step.w.us[STEP_COMM]);
	ck_assert(b.sim.step.total_us < a.sim.step.total_us);
	CLOSE(b.sim.step.w.us[STEP_GEMM], a.sim.step.w.us[STEP_GEMM]);
	sim_fx_release(&a);
	sim_fx_release(&b);
}
END_TEST

START_TEST(plan_json_carries_it)
{
	struct sim_fx f;
	char *buf = NULL, *at, want[64];
	size_t len = 0;
	FILE *mem;

	run(&f, cfg(2, "bf16", 1, 0));
	mem = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(mem);
	ck_assert_int_eq(plan_write_json(mem, &f.plan, &f.sim, &f.diags), 0);
	fclose(mem);
	at = strstr(buf, "\"runtime_estimate\": {");
	ck_assert_ptr_nonnull(at);
	snprintf(want, sizeof(want), "\"step_s\": %.9g",
		 f.sim.step.total_us / 1e6);
	ck_assert_ptr_nonnull(strstr(at, want));
	ck_assert_ptr_nonnull(strstr(at, "\"gpu\": \"h200\""));
	free(buf);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "flops_by_hand", gemm_and_attention_flops_by_hand },
		{ "profile_data", profile_is_the_data_file },
		{ "second_profile", second_profile },
		{ "parser", parser_refuses_bad_profiles },
		{ "parser_limits", parser_limits },
		{ "layer_elementwise", layer_elementwise_by_hand },
		{ "attn_grads_zeroed", attn_grads_zeroed_by_hand },
		{ "fp32", no_estimate_for_fp32 },
		{ "prefetch", prefetch_hides_gathers },
		{ "plan_json", plan_json_carries_it },
	};

	return RUN_CASES("step_est", cases, 60);
}
