/*
 * framework_fixture: how the framework rules' suites (test_framework.c,
 * test_framework_train.c) lint a config and check a finding: a GRPO config
 * built from parts (cfg), linted as `gtplan lint` does (lint), a finding
 * expected at the value of a key (expect), and a bad/good pair (pair).
 */
#ifndef GTPLAN_TEST_FRAMEWORK_FIXTURE_H
#define GTPLAN_TEST_FRAMEWORK_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "sim_fixture.h"

/* Lints a YAML text as `gtplan lint` does: plan, then the simulation. */
static inline void lint(struct sim_fx *f, const char *yaml)
{
	ck_assert_int_ge(sim_fx_run(f, yaml), 0);
}

/* Line and column (1-based) of the value after the first `at` ("key: ")
 * in yaml. */
static inline void where(const char *yaml, const char *at, int *line,
			 int *col)
{
	const char *hit = strstr(yaml, at), *sol = yaml;

	ck_assert_msg(hit != NULL, "'%s' not in the config", at);
	*line = 1;
	for (const char *c = yaml; c < hit; c++)
		if (*c == '\n') {
			(*line)++;
			sol = c + 1;
		}
	hit = strchr(hit, ':') + 1;
	hit += strspn(hit, " ");
	*col = (int)(hit - sol) + 1;
}

/* The finding `code` at the value of `at` in its source's text, whose
 * message and hint contain the given texts (NULL: not checked). */
static inline const struct diag *expect(const struct sim_fx *f,
					const char *code, const char *at,
					const char *msg, const char *hint)
{
	const struct diag *d = sim_fx_first(f, code);
	int line, col;

	ck_assert_msg(d != NULL, "no %s", code);
	ck_assert_int_ge(d->loc.src, 0);
	where(f->srcs.v[d->loc.src].text, at, &line, &col);
	ck_assert_int_eq(d->loc.line, line);
	ck_assert_int_eq(d->loc.col, col);
	if (msg)
		ck_assert_msg(strstr(d->msg, msg), "%s: '%s' not in '%s'", code,
			      msg, d->msg);
	if (hint)
		ck_assert_msg(d->hint && strstr(d->hint, hint),
			      "%s: '%s' not in hint '%s'", code, hint,
			      d->hint ? d->hint : "(none)");
	return d;
}

/* Lints `bad` expecting `code` at the value of `at`, then `good`
 * expecting no `code` (and no error at all). */
static inline void pair(const char *bad, const char *good, const char *code,
			const char *at, const char *msg, const char *hint)
{
	struct sim_fx f;

	lint(&f, bad);
	expect(&f, code, at, msg, hint);
	sim_fx_release(&f);
	lint(&f, good);
	ck_assert_msg(sim_fx_count(&f, code) == 0, "%s on the good config: %s",
		      code, sim_fx_first(&f, code)->msg);
	ck_assert_msg(diag_count(&f.diags, DIAG_ERROR) == 0,
		      "error on the good config: %s", f.diags.v[0].msg);
	sim_fx_release(&f);
}

/* Builds a config: a GRPO section, a policy with a model and extra lines
 * under policy (p) and megatron_cfg (m), a cluster, and extra top-level
 * text (t). The global batch, 168, splits over 1-8, 12 and 14 lanes. */
static inline const char *cfg(const char *model, const char *p, const char *m,
			      int nodes, int gpn, const char *t)
{
	static char buf[4][4096];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]),
		 "grpo:\n"
		 "  num_prompts_per_step: 8\n"
		 "  num_generations_per_prompt: 8\n"
		 "policy:\n"
		 "  model_name: %s\n"
		 "  train_global_batch_size: 168\n"
		 "  train_micro_batch_size: 1\n"
		 "%s"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "%s"
		 "cluster:\n"
		 "  num_nodes: %d\n"
		 "  gpus_per_node: %d\n"
		 "%s", model, p, m, nodes, gpn, t);
	return buf[k];
}

#define QWEN7 "Qwen/Qwen2.5-7B-Instruct"  /* 28 layers, 28/4 heads */
#define QWEN1 "Qwen/Qwen2.5-1.5B-Instruct" /* 28 layers, 12/2 heads */
#define LLAMA1 "meta-llama/Llama-3.2-1B-Instruct" /* 16 layers, 32/8 */

/* policy lines: vLLM generation with tensor parallelism tp */
#define VLLM(tp, extra) "  generation:\n    backend: vllm\n" \
	"    vllm_cfg:\n      tensor_parallel_size: " #tp "\n" extra

#endif
