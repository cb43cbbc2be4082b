/*
 * ckpt_fixture: what the checkpoint plan's suites (test_ckpt.c: pieces and
 * random layouts; test_ckpt_groups.c: the replica groups' findings;
 * test_ckpt_optimizer.c: the optimizer state's formats; test_ckpt_experts.c:
 * the experts of MoE layers) share: the dense and MoE configs they lint,
 * the lint itself, the count of checkpoint findings (GT71x) and one
 * rank's entry of a tensor.
 */
#ifndef GTPLAN_TEST_CKPT_FIXTURE_H
#define GTPLAN_TEST_CKPT_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "ckpt.h"
#include "diag.h"
#include "grid_yaml.h"
#include "plan.h"
#include "sim_fixture.h"
#include "stack.h"

/* The text yaml() and moe_yaml() return: one config at a time. */
static char buf[4096];

#define CKPT_ON "checkpointing:\n  enabled: true\n"

/* TP tp, CP cp, G g, PP pp, D d (one GPU per rank), a small model of 2 pp
 * layers, then `extra` (more gtplan.stack lines). */
static inline const char *yaml(long long tp, long long cp, long long g,
				long long pp, long long d, const char *extra)
{
	struct grid_yaml y = {
		.head = CKPT_ON, .batch = g * d * 4, .tp = tp, .cp = cp,
		.pp = pp, .shards = tp * g, .layers = pp * 2, .tail = extra,
	};

	grid_yaml_nodes(&y, tp * cp * g * pp * d);
	return grid_yaml_text(buf, sizeof(buf), &y);
}

/* The same model as MoE: 8 experts of moe_ffn 512 (gated: one expert's
 * fc1 [1024, 768], fc2 [768, 512]) on EP ep, ETP etp, expert GTP eg, CP
 * 1, `layers` layers; `extra` closes gtplan (model or stack lines). */
static inline const char *moe_yaml(long long tp, long long g, long long pp,
				    long long d, long long ep, long long etp,
				    long long eg, long long layers,
				    const char *extra)
{
	struct grid_yaml y = {
		.head = CKPT_ON, .batch = g * d * 4, .tp = tp, .pp = pp,
		.shards = tp * g, .ep = ep, .etp = etp, .eshards = etp * eg,
		.megatron = "    sequence_parallel: true\n", .layers = layers,
		.model = "    num_moe_experts: 8\n"
			 "    moe_ffn_hidden_size: 512\n",
		.tail = extra,
	};

	grid_yaml_nodes(&y, tp * g * pp * d);
	return grid_yaml_text(buf, sizeof(buf), &y);
}

/* Lints text (sim_fx_run); its grid must be valid. */
static inline void lint(struct sim_fx *f, const char *text)
{
	int rc = sim_fx_run(f, text);

	ck_assert_int_eq(f->plan.grid_ok, 1);
	ck_assert_int_ge(rc, 0);
}

/* The checkpoint findings: GT710 to GT719. */
static inline size_t count71(const struct sim_fx *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strncmp(diag_code(&f->diags.v[i]), "GT71", 4) == 0;
	return n;
}

/* Rank rank's entry of a rows x cols tensor of kind k on the dense grid. */
static inline void entry(const struct sim_fx *f, const struct stack *s,
			 long long rank, enum ckpt_kind k, long long rows,
			 long long cols, long long pad, struct ckpt_entry *e)
{
	long long c[LAY_NAXES];

	lay_coords(&f->plan.dense, rank, c);
	ckpt_entry_of(&f->plan, s, k, rows, cols, pad, c, e);
}

#endif
