/*
 * The checkpoint plan (sim/ckpt.h): GTP piece offsets on the layouts of
 * NeMo-RL PR #4512's pages (TP 2, G 3: chunk t*3 + g; TP 4, G 3, 24
 * GPUs), column and row placements, padding outside logical coordinates,
 * the default stack clean on random valid layouts (CP, PP, DP, and MoE
 * layouts). The findings of the replica groups are test_ckpt_groups.c's,
 * the optimizer state's formats test_ckpt_optimizer.c's and the experts
 * by hand test_ckpt_experts.c's; ckpt_fixture.h holds what they share.
 */
#include <check.h>

#include "ckpt_fixture.h"
#include "harness.h"

/* TP 2, G 3 (docs/design.md §2.6): GPU r = t + 2g holds column chunk
 * t*3 + g of 6. */
START_TEST(seed_000_column_chunks)
{
	struct sim_fx f;
	struct stack s;
	struct ckpt_entry e;

	lint(&f, yaml(2, 1, 3, 1, 1, ""));
	stack_init(&s);
	for (long long r = 0; r < 6; r++) {
		long long t = r % 2, g = r / 2;

		entry(&f, &s, r, CKPT_COLUMN, 12, 4, 1, &e);
		ck_assert_int_eq(e.frag[0], 6);
		ck_assert_int_eq(e.frag[1], 1);
		ck_assert_int_eq(e.chunk[0], t * 3 + g);
		ck_assert_int_eq(e.global[0], 12);
		ck_assert_int_eq(e.local[0], 2);
		ck_assert_int_eq(e.local[1], 4);
		ck_assert_int_eq(e.first_row, (t * 3 + g) * 2);
		ck_assert_int_eq(e.main, 1); /* one copy: every piece is main */
		/* row-parallel: (g of G) on axis 0, (t of TP) on axis 1 */
		entry(&f, &s, r, CKPT_ROW, 12, 8, 1, &e);
		ck_assert_int_eq(e.frag[0], 3);
		ck_assert_int_eq(e.frag[1], 2);
		ck_assert_int_eq(e.chunk[0], g);
		ck_assert_int_eq(e.chunk[1], t);
		ck_assert_int_eq(e.local[0], 4);
		ck_assert_int_eq(e.local[1], 4);
		/* norms: only rank 0 is the main replica */
		entry(&f, &s, r, CKPT_NORM, 768, 1, 1, &e);
		ck_assert_int_eq(e.main, r == 0);
		ck_assert_int_eq(e.replica[1], t * 3 + g);
	}
	ck_assert_uint_eq(count71(&f), 0);
	ck_assert_int_eq(f.sim.ckpt.valid, 1);
	ck_assert_int_gt(f.sim.ckpt.keys, 0);
	ck_assert_int_eq(f.sim.ckpt.writers, 6);
	sim_fx_release(&f);
}
END_TEST

/* docs/notes/megatron-semantics.md §2.3: out 1000, TP 4, G 3, pad 16:
 * S = 96; (t 1, g 2)
 * is chunk 5 and holds logical rows [442, 500) (38 padding rows left
 * out). Row-parallel out 1000, G 3, pad 16: S = 336. Two copies: only
 * dp 0 writes. */
START_TEST(padding_outside_logical_rows)
{
	struct sim_fx f;
	struct stack s;
	struct ckpt_entry e;
	long long c[LAY_NAXES] = { 0 };

	lint(&f, yaml(4, 1, 3, 1, 2, ""));
	stack_init(&s);
	c[LAY_TP] = 1;
	c[LAY_GTP] = 2;
	ckpt_entry_of(&f.plan, &s, CKPT_COLUMN, 1000, 64, 16, c, &e);
	ck_assert_int_eq(e.chunk[0], 5);
	ck_assert_int_eq(e.frag[0], 12);
	ck_assert_int_eq(e.local[0], 96);
	ck_assert_int_eq(e.first_row, 442);
	ck_assert_int_eq(e.real_rows, 58);
	ck_assert_int_eq(e.global[0], 1000); /* logical, unpadded */
	ck_assert_int_eq(e.main, 1);
	c[LAY_GTP] = 0;
	ckpt_entry_of(&f.plan, &s, CKPT_COLUMN, 1000, 64, 16, c, &e);
	ck_assert_int_eq(e.real_rows, 96);
	ck_assert_int_eq(e.first_row, 250);
	ckpt_entry_of(&f.plan, &s, CKPT_ROW, 1000, 64, 16, c, &e);
	ck_assert_int_eq(e.local[0], 336);
	ck_assert_int_eq(e.local[1], 16);
	c[LAY_GTP] = 2;
	ckpt_entry_of(&f.plan, &s, CKPT_ROW, 1000, 64, 16, c, &e);
	ck_assert_int_eq(e.first_row, 672);
	ck_assert_int_eq(e.real_rows, 328);
	c[LAY_DP] = 1; /* the second copy is not a main replica */
	ckpt_entry_of(&f.plan, &s, CKPT_ROW, 1000, 64, 16, c, &e);
	ck_assert_int_eq(e.main, 0);
	ck_assert_int_eq(e.replica[2], 1);
	ck_assert_uint_eq(count71(&f), 0);
	/* every rank writes its dp_reshardable optimizer range */
	ck_assert_int_eq(f.sim.ckpt.writers, 24);
	sim_fx_release(&f);
}
END_TEST

/* The default stack saves a valid checkpoint on random valid layouts. */
START_TEST(default_stack_clean_on_random_layouts)
{
	static const long long tps[] = { 1, 2, 4 }, gs[] = { 1, 2, 3 },
		cps[] = { 1, 2 }, pps[] = { 1, 2, 4 }, ds[] = { 1, 2, 3 };
	unsigned seed = 12345;

	for (int i = 0; i < 40; i++) {
		struct sim_fx f;
		long long tp, g, cp, pp, d;

#define PICK(a) a[(seed = seed * 1103515245u + 12345u) / 65536 % \
		      (sizeof(a) / sizeof(*a))]
		tp = PICK(tps);
		g = PICK(gs);
		cp = PICK(cps);
		pp = PICK(pps);
		d = PICK(ds);
		lint(&f, yaml(tp, cp, g, pp, d, ""));
		ck_assert_msg(count71(&f) == 0, "TP %lld CP %lld G %lld PP "
			      "%lld D %lld: checkpoint findings", tp, cp, g,
			      pp, d);
		ck_assert_int_eq(f.sim.ckpt.valid, 1);
		/* the default optimizer layout, dp_reshardable: every rank
		 * saves its range of its flat buffer */
		ck_assert_int_eq(f.sim.ckpt.writers, tp * cp * g * pp * d);
		/* 6 per layer, the embedding, output layer and final
		 * norm, rng_state, a data-loader state per lane */
		ck_assert_int_eq(f.sim.ckpt.keys,
				 2 * pp * 6 + 3 + 1 + g * d);
		ck_assert_int_gt(f.sim.ckpt.max_rank_bytes, 0);
		ck_assert_str_eq(f.sim.ckpt.opt_format, "dp_reshardable");
		ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * tp * g * pp);
		ck_assert_int_eq(f.sim.ckpt.opt_shards, 3 * tp * g * pp * cp * d);
		sim_fx_release(&f);
		/* fully_reshardable: one main replica per chunk: the
		 * TP * G * PP ranks of the first copy and CP rank, plus the
		 * first rank of every lane of the other copies (data-loader
		 * state); every chunk's optimizer state exactly once */
		lint(&f, yaml(tp, cp, g, pp, d, "  stack:\n"
			      "    optimizer_ckpt_format: fully_reshardable\n"));
		ck_assert_uint_eq(count71(&f), 0);
		ck_assert_int_eq(f.sim.ckpt.writers, tp * g * pp + g * (d - 1));
		ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * (2 * pp * 6 + 3));
		ck_assert_int_eq(f.sim.ckpt.opt_shards,
				 3 * (2 * pp * (4 * tp * g + 2) + 2 * tp * g + 1));
		sim_fx_release(&f);
	}

	/* random MoE layouts (8 experts, every layer MoE): the experts
	 * add one key per weight and layer, 8 x ETP x EG main entries
	 * each, and a flat optimizer key per (etp, ep, egtp, pp) cut in
	 * EDP ranges; fully_reshardable keeps every expert chunk once */
	static const long long eps[] = { 1, 2, 4 }, etps[] = { 1, 2 },
		egs[] = { 1, 2 };
	int done = 0;

	for (int i = 0; i < 400 && done < 30; i++) {
		struct sim_fx f;
		long long tp = PICK(tps), g = PICK(gs), pp = PICK(pps);
		long long d = PICK(ds), ep = PICK(eps), etp = PICK(etps);
		long long eg = PICK(egs), w = tp * g * pp * d, tg = tp * g;
		long long model, experts = 2 * pp * 2 * 8 * etp * eg;

		if (w % (ep * etp * eg * pp))
			continue;
		done++;
		lint(&f, moe_yaml(tp, g, pp, d, ep, etp, eg, 2 * pp, ""));
		ck_assert_msg(count71(&f) == 0, "TP %lld G %lld PP %lld D %lld "
			      "EP %lld ETP %lld EG %lld: checkpoint findings",
			      tp, g, pp, d, ep, etp, eg);
		ck_assert_int_eq(f.sim.ckpt.valid, 1);
		ck_assert_int_eq(f.sim.ckpt.keys,
				 2 * pp * (4 + 2) + 3 + 1 + g * d);
		/* per layer qkv and proj T x G each and 2 norms; embedding
		 * and output T x G, the final norm; rng (pp, tp); lanes */
		model = 2 * pp * (2 * tg + 2) + 2 * tg + 1;
		ck_assert_int_eq(f.sim.ckpt.shards,
				 model + pp * tp + g * d + experts);
		ck_assert_int_eq(f.sim.ckpt.opt_keys,
				 3 * (tg * pp + etp * ep * eg * pp));
		ck_assert_int_eq(f.sim.ckpt.opt_shards, 3 * (w + w));
		ck_assert_int_eq(f.sim.ckpt.writers, w);
		sim_fx_release(&f);
		lint(&f, moe_yaml(tp, g, pp, d, ep, etp, eg, 2 * pp,
				  "  stack:\n    optimizer_ckpt_format: "
				  "fully_reshardable\n"));
		ck_assert_uint_eq(count71(&f), 0);
		ck_assert_int_eq(f.sim.ckpt.opt_shards,
				 3 * (model + experts));
		sim_fx_release(&f);
	}
	ck_assert_int_ge(done, 30);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "seed_000", seed_000_column_chunks },
		{ "padding", padding_outside_logical_rows },
		{ "random", default_stack_clean_on_random_layouts },
	};

	return RUN_CASES("ckpt", cases, 120);
}
