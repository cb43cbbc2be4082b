/*
 * gtplan-run's step estimate (sim/step_est.h) and the hardware profiles
 * (planner/hardware.h): the GEMM and attention FLOPs of a small decoder
 * against formulas by hand, class times from the profile's figures, a
 * profile edited in data/hardware.txt's text changing the estimate, the
 * parser's refusals, GTP prefetch hiding gathers, the plan JSON's field.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hardware.h"
#include "jsonw.h"
#include "report.h"
#include "simulate.h"
#include "step_est.h"
#include "harness.h"
#include "sim_fixture.h"

/* gtplan.runtime's own decoder (no model named): hidden 64, ffn 128,
 * `layers`, 4 heads of 16 (PLAN_RT_HEADS = PLAN_RT_KV_HEADS = 4), vocab
 * 256, seq_len 32, 2 micro-batches of 1 on 1 GPU (or GTP `shards` over as
 * many GPUs, prefetch as given). */
static char *cfg(int layers, const char *dtype, int shards, int prefetch)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "policy:\n"
		 "  train_global_batch_size: %d\n"
		 "  train_micro_batch_size: 1\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "    tensor_model_parallel_size: 1\n"
		 "    tensor_parallel_num_weight_shards: %d\n"
		 "cluster:\n"
		 "  num_nodes: 1\n"
		 "  gpus_per_node: %d\n"
		 "gtplan:\n"
		 "  runtime:\n"
		 "    hidden: 64\n"
		 "    ffn: 128\n"
		 "    layers: %d\n"
		 "    seq_len: 32\n"
		 "    vocab: 256\n"
		 "    dtype: %s\n"
		 "    prefetch: %s\n",
		 2 * shards, shards, shards, layers, dtype,
		 prefetch ? "true" : "false");
	return buf;
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

/* data/hardware.txt as in the repository (tests run from its root). */
static char *read_data(size_t *len)
{
	FILE *fp = fopen("data/hardware.txt", "rb");
	char *buf = calloc(1, 1 << 16);

	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(buf);
	*len = fread(buf, 1, (1 << 16) - 1, fp);
	fclose(fp);
	return buf;
}

/* text with the line that starts with `key ` replaced by `line`. */
static char *edit(const char *text, const char *key, const char *line)
{
	char *out = calloc(1, strlen(text) + strlen(line) + 2), *at;
	const char *p = text;
	char pat[64];

	ck_assert_ptr_nonnull(out);
	snprintf(pat, sizeof(pat), "\n%s ", key);
	at = strstr(p, pat);
	ck_assert_ptr_nonnull(at);
	memcpy(out, text, (size_t)(at - text) + 1);
	strcat(out, line);
	strcat(out, strchr(at + 1, '\n'));
	return out;
}

START_TEST(profile_is_the_data_file)
{
	struct sim_fx f;
	struct hw_profile file, twice;
	struct step_estimate e2;
	size_t len;
	char err[256], *text = read_data(&len), *t2, *t3;
	const struct step_estimate *e;

	/* the embedded profile is the file's */
	ck_assert_int_eq(hw_profile_parse(text, len, "h200", &file, err,
					  sizeof(err)), 0);
	run(&f, cfg(2, "bf16", 1, 0));
	e = &f.sim.step;
	ck_assert_str_eq(file.name, e->hw.name);
	ck_assert_str_eq(file.measured, e->hw.measured);
	ck_assert(file.gemm_efficiency == e->hw.gemm_efficiency &&
		  file.gemm_call_us == e->hw.gemm_call_us &&
		  file.hbm_gbps == e->hw.hbm_gbps &&
		  file.launch_us == e->hw.launch_us &&
		  file.n_attn == e->hw.n_attn);
	for (int c = 0; c < HW_MEM_CLASSES; c++)
		ck_assert(file.mem_efficiency[c] == e->hw.mem_efficiency[c] &&
			  file.mem_call_us[c] == e->hw.mem_call_us[c]);
	/* GEMMs twice as efficient: their FLOP time halves */
	t2 = edit(text, "gemm_efficiency", "gemm_efficiency 0.9");
	ck_assert_int_eq(hw_profile_parse(t2, strlen(t2), "h200", &twice,
					  err, sizeof(err)), 0);
	ck_assert(twice.gemm_efficiency == 0.9);
	ck_assert_int_eq(step_estimate(&f.plan, &f.sim.cost, &twice, &e2), 0);
	double fixed = (double)e->w.calls[STEP_GEMM] * file.gemm_call_us;
	CLOSE(e2.w.us[STEP_GEMM] - fixed, (e->w.us[STEP_GEMM] - fixed) *
	      file.gemm_efficiency / 0.9);
	CLOSE(e2.w.us[STEP_ELEMENTWISE], e->w.us[STEP_ELEMENTWISE]);
	/* a slower forward attention at head dim 16's nearest row */
	t3 = edit(text, "attention 64", "attention 64 10 10");
	ck_assert_int_eq(hw_profile_parse(t3, strlen(t3), "h200", &twice,
					  err, sizeof(err)), 0);
	ck_assert_int_eq(step_estimate(&f.plan, &f.sim.cost, &twice, &e2), 0);
	CLOSE(e2.w.us[STEP_ATTN_FWD], e->w.work[STEP_ATTN_FWD] / 10e6);
	ck_assert(e2.total_us > e->total_us);
	free(t2);
	free(t3);
	free(text);
	sim_fx_release(&f);
}
END_TEST

START_TEST(parser_refuses_bad_profiles)
{
	struct hw_profile hw;
	char err[256];
	size_t len;
	char *text = read_data(&len), *bad;

	ck_assert_int_ne(hw_profile_parse(text, len, "b999", &hw, err,
					  sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "no profile 'b999'"));
	bad = edit(text, "gemm_efficiency", "gemm_efficiency 1.5");
	ck_assert_int_ne(hw_profile_parse(bad, strlen(bad), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "bad value of 'gemm_efficiency'"));
	free(bad);
	bad = edit(text, "hbm_gbps", "# hbm_gbps dropped");
	ck_assert_int_ne(hw_profile_parse(bad, strlen(bad), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "lacks hbm_gbps"));
	free(bad);
	bad = edit(text, "launch_us", "launch_usec 4");
	ck_assert_int_ne(hw_profile_parse(bad, strlen(bad), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "unknown field 'launch_usec'"));
	ck_assert_ptr_nonnull(strstr(err, "data/hardware.txt:"));
	free(bad);
	free(text);
}
END_TEST

/* The parser's limits: HW_LINE_MAX, HW_MAX_ATTN. */
START_TEST(parser_limits)
{
	struct hw_profile hw;
	char err[256], line[HW_LINE_MAX + 16];
	size_t len;
	char *text = read_data(&len), *bad, *more;

	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	memcpy(line, "description ", 12);
	bad = edit(text, "description", line);
	ck_assert_int_ne(hw_profile_parse(bad, strlen(bad), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "line too long"));
	free(bad);
	/* HW_MAX_ATTN rows parse, one more is refused */
	more = calloc(1, len + 64 * (HW_MAX_ATTN + 1));
	ck_assert_ptr_nonnull(more);
	memcpy(more, text, len);
	for (int i = 2; i < HW_MAX_ATTN; i++)
		sprintf(more + strlen(more), "attention %d 100 100\n", 16 * i);
	ck_assert_int_eq(hw_profile_parse(more, strlen(more), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_int_eq((int)hw.n_attn, HW_MAX_ATTN);
	strcat(more, "attention 999 100 100\n");
	ck_assert_int_ne(hw_profile_parse(more, strlen(more), "h200", &hw, err,
					  sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "too many attention rows"));
	free(more);
	free(text);
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
		{ "parser", parser_refuses_bad_profiles },
		{ "parser_limits", parser_limits },
		{ "fp32", no_estimate_for_fp32 },
		{ "prefetch", prefetch_hides_gathers },
		{ "plan_json", plan_json_carries_it },
	};

	return RUN_CASES("step_est", cases, 60);
}
