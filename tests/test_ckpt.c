/*
 * The checkpoint plan (sim/ckpt.h): GTP piece offsets on the layouts of
 * NeMo-RL PR #4512's pages (TP 2, G 3: chunk t*3 + g; TP 4, G 3, 24
 * GPUs), column and row placements, padding outside logical coordinates,
 * the default stack clean on random valid layouts (CP, PP, DP), GT710 /
 * GT712 from the settings of NeMo-RL PR #4512's stack, and GT711 from a
 * writer election over the GTP-inclusive group; the experts of MoE layers
 * (keys, pieces, bytes, optimizer state) by hand and on random MoE
 * layouts, GT711 for them under that election and GT710 for their biases
 * without expert GTP in the replica id.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "ckpt.h"
#include "diag.h"
#include "plan.h"
#include "simulate.h"
#include "sim_fixture.h"
#include "stack.h"
#include "harness.h"

static char buf[4096];

#define MODEL "gtplan:\n" \
	"  model:\n" \
	"    num_layers: %lld\n" \
	"    hidden_size: 768\n" \
	"    ffn_hidden_size: 3072\n" \
	"    num_attention_heads: 12\n" \
	"    vocab_size: 32000\n"

/* TP tp, CP cp, G g, PP pp, D d (one GPU per rank), a small model, then
 * `extra` (more gtplan.stack lines). */
static const char *yaml(long long tp, long long cp, long long g, long long pp,
			long long d, const char *extra)
{
	long long gpus = tp * cp * g * pp * d;

	snprintf(buf, sizeof(buf),
		 "checkpointing:\n"
		 "  enabled: true\n"
		 "policy:\n"
		 "  train_global_batch_size: %lld\n"
		 "  train_micro_batch_size: 1\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "    tensor_model_parallel_size: %lld\n"
		 "    context_parallel_size: %lld\n"
		 "    pipeline_model_parallel_size: %lld\n"
		 "    tensor_parallel_num_weight_shards: %lld\n"
		 "cluster:\n"
		 "  num_nodes: %lld\n"
		 "  gpus_per_node: %lld\n"
		 MODEL "%s",
		 g * d * 4, tp, cp, pp, tp * g, gpus % 8 ? 1 : gpus / 8,
		 gpus % 8 ? gpus : 8, pp * 2, extra);
	return buf;
}

/* The same model as MoE: 8 experts of moe_ffn 512 (gated: one expert's
 * fc1 [1024, 768], fc2 [768, 512]) on EP ep, ETP etp, expert GTP eg, CP
 * 1, `layers` layers; `extra` closes gtplan (model or stack lines). */
static const char *moe_yaml(long long tp, long long g, long long pp,
			    long long d, long long ep, long long etp,
			    long long eg, long long layers, const char *extra)
{
	long long gpus = tp * g * pp * d;

	snprintf(buf, sizeof(buf),
		 "checkpointing:\n"
		 "  enabled: true\n"
		 "policy:\n"
		 "  train_global_batch_size: %lld\n"
		 "  train_micro_batch_size: 1\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "    tensor_model_parallel_size: %lld\n"
		 "    pipeline_model_parallel_size: %lld\n"
		 "    tensor_parallel_num_weight_shards: %lld\n"
		 "    expert_model_parallel_size: %lld\n"
		 "    expert_tensor_parallel_size: %lld\n"
		 "    expert_tensor_parallel_num_weight_shards: %lld\n"
		 "    sequence_parallel: true\n"
		 "cluster:\n"
		 "  num_nodes: %lld\n"
		 "  gpus_per_node: %lld\n"
		 MODEL
		 "    num_moe_experts: 8\n"
		 "    moe_ffn_hidden_size: 512\n%s",
		 g * d * 4, tp, pp, tp * g, ep, etp, etp * eg,
		 gpus % 8 ? 1 : gpus / 8, gpus % 8 ? gpus : 8, layers, extra);
	return buf;
}

static void lint(struct sim_fx *f, const char *text)
{
	int rc = sim_fx_run(f, text);

	ck_assert_int_eq(f->plan.grid_ok, 1);
	ck_assert_int_ge(rc, 0);
}

static size_t count71(const struct sim_fx *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strncmp(diag_code(&f->diags.v[i]), "GT71", 4) == 0;
	return n;
}

static void entry(const struct sim_fx *f, const struct stack *s, long long rank,
		  enum ckpt_kind k, long long rows, long long cols,
		  long long pad, struct ckpt_entry *e)
{
	long long c[LAY_NAXES];

	lay_coords(&f->plan.dense, rank, c);
	ckpt_entry_of(&f->plan, s, k, rows, cols, pad, c, e);
}

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

/* The experts by hand. Dense part: TP 2, G 1, D 4, 2 layers (16 keys, 23
 * main entries: per layer qkv 2 + proj 2 + 2 norms, embedding 2, output
 * 2, final norm 1, rng 2, loader 4; 6 optimizer keys, 24 shards); rank
 * 0's pieces hold `local` elements (qkv 1152 x 768, proj 768 x 384, two
 * norms per layer; embedding and output 16000 x 768; final norm) and it
 * writes 2 bytes each plus 12 per element of its quarter (F = 4).
 * Experts on EP 2 (4 local experts), ETP etp, expert GTP eg, EDP
 * 8 / (2 etp eg): one key per weight and MoE layer, [8, rows, cols];
 * 8 x etp x eg chunks each; a piece of one expert holds fc1 1024 / (etp
 * eg) x 768 and fc2 768 / eg x 512 / etp; rank 0 (edp 0) is their main
 * replica and writes 2 bytes per element plus 12 per element of its
 * 1 / EDP range of its expert buffer. */
START_TEST(experts_by_hand)
{
	const long long layer = 1152 * 768 + 768 * 384 + 2 * 768,
		local = 2 * layer + 2 * 16000 * 768 + 768;
	static const long long cases[][2] = { { 1, 2 }, { 2, 1 }, { 2, 2 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		long long etp = cases[i][0], eg = cases[i][1];
		long long edp = 8 / (2 * etp * eg);
		long long pe = 1024 / (etp * eg) * 768 + 768 / eg * (512 / etp);
		long long xe = 4 * 2 * pe; /* 4 local experts, 2 layers */
		struct sim_fx f;

		lint(&f, moe_yaml(2, 1, 1, 4, 2, etp, eg, 2, ""));
		ck_assert_uint_eq(count71(&f), 0);
		ck_assert_int_eq(f.sim.ckpt.valid, 1);
		ck_assert_int_eq(f.plan.expert.size[LAY_DP], edp);
		ck_assert_int_eq(f.sim.ckpt.keys, 16 + 2 * 2);
		ck_assert_int_eq(f.sim.ckpt.shards,
				 23 + 2 * 2 * 8 * etp * eg);
		/* dp_reshardable: a flat expert key per (etp, ep, egtp) */
		ck_assert_int_eq(f.sim.ckpt.opt_keys, 6 + 3 * etp * 2 * eg);
		ck_assert_int_eq(f.sim.ckpt.opt_shards,
				 24 + 3 * etp * 2 * eg * edp);
		ck_assert_int_eq(f.sim.ckpt.max_rank_weight_bytes,
				 2 * local + 2 * xe);
		ck_assert_int_eq(f.sim.ckpt.max_rank_bytes,
				 2 * local + 12 * local / 4 +
				 2 * xe + 12 * xe / edp);
		ck_assert_int_eq(f.sim.ckpt.writers, 8);
		sim_fx_release(&f);
	}

	/* offsets on ETP 2, EG 2: expert-grid rank 5 is (etp 1, ep 0, egtp
	 * 1): fc1 chunk 1 * 2 + 1 of 4, rows [768, 1024) of each of experts
	 * 0-3; fc2 chunk (egtp 1, etp 1) of (2, 2), a 384 x 256 piece */
	struct sim_fx f;
	struct stack s;
	struct ckpt_entry e;
	long long c[LAY_NAXES];

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 2, 2, 2, ""));
	stack_init(&s);
	lay_coords(&f.plan.expert, 5, c);
	ck_assert_int_eq(c[LAY_TP], 1);
	ck_assert_int_eq(c[LAY_EP], 0);
	ck_assert_int_eq(c[LAY_GTP], 1);
	ckpt_expert_entry_of(&f.plan, &s, CKPT_COLUMN, 1024, 768, 1, c, &e);
	ck_assert_int_eq(e.frag[0], 4);
	ck_assert_int_eq(e.chunk[0], 3);
	ck_assert_int_eq(e.local[0], 256);
	ck_assert_int_eq(e.first_row, 768);
	ck_assert_int_eq(e.main, 1);
	ckpt_expert_entry_of(&f.plan, &s, CKPT_ROW, 768, 512, 1, c, &e);
	ck_assert_int_eq(e.chunk[0], 1);
	ck_assert_int_eq(e.chunk[1], 1);
	ck_assert_int_eq(e.local[0], 384);
	ck_assert_int_eq(e.local[1], 256);
	sim_fx_release(&f);

	/* fully_reshardable on ETP 1, EG 2: the optimizer state takes the
	 * weights' chunks (11 dense keys and 17 chunks, 4 expert keys and 64
	 * chunks, 3 states each); rank 0 is main for all of its state.
	 * Writers: the dense mains (ranks 0, 1), the loader's lanes (ranks
	 * 0, 2, 4, 6) and the expert mains (edp 0: ranks 0-3). */
	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2, "  stack:\n"
			  "    optimizer_ckpt_format: fully_reshardable\n"));
	ck_assert_uint_eq(count71(&f), 0);
	ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * (11 + 4));
	ck_assert_int_eq(f.sim.ckpt.opt_shards, 3 * (17 + 64));
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes,
			 12 * (local + 4 * 2 * (512 * 768 + 384 * 512)));
	ck_assert_int_eq(f.sim.ckpt.writers, 6);
	sim_fx_release(&f);
}
END_TEST

/* Expert GTP and a writer election over the GTP-inclusive group: only
 * the egtp = 0 pieces of each expert have a main replica: GT711 for
 * fc1 and fc2 naming the key, the experts and the ranks that hold the
 * lost piece; the optimizer's model-space state alike. */
START_TEST(GT711_experts)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2, "  stack:\n"
			  "    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 2);
	ck_assert_uint_eq(sim_fx_count(&f, "GT710") + sim_fx_count(&f, "GT712"), 0);
	d = sim_fx_first(&f, "GT711");
	ck_assert_ptr_nonnull(strstr(d->msg, "checkpoint chunk (0-3, 1) of "
				     "(8, 2) of decoder.layers.0.mlp.experts."
				     "linear_fc1.weight is never written"));
	ck_assert_ptr_nonnull(strstr(d->msg, "rank 2 (etp 0, ep 0, egtp 1, "
				     "edp 0, pp 0), rank 6 (etp 0, ep 0, egtp "
				     "1, edp 1, pp 0) hold it"));
	ck_assert_ptr_nonnull(strstr(d->msg, "(2 of the 4 (EP rank, piece) "
				     "pairs have none)"));
	ck_assert_ptr_nonnull(strstr(d->hint, "sharded_replica_group: dp_cp"));
	ck_assert_int_ge(d->loc.src, 0);
	ck_assert_int_eq(f.sim.ckpt.shards, 23 + 2 * 2 * 8 * 1);
	sim_fx_release(&f);

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2, "  stack:\n"
			  "    sharded_replica_group: dp_cp_gtp\n"
			  "    optimizer_ckpt_format: fully_reshardable\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 4);
	int opt = 0;

	for (size_t i = 0; i < f.diags.n; i++)
		opt += strstr(f.diags.v[i].msg, "optimizer checkpoint chunk 1 "
			      "of 16 of optimizer.state.fp32_param.decoder."
			      "layers.0.mlp.experts.linear_fc1.weight is "
			      "never written") != NULL;
	ck_assert_int_eq(opt, 1);
	sim_fx_release(&f);

	/* without expert GTP the two groups coincide */
	lint(&f, moe_yaml(2, 1, 1, 4, 2, 2, 1, 2, "  stack:\n"
			  "    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);
}
END_TEST

/* The experts' fc2 bias is whole on every expert GTP peer: elected over
 * a group without expert GTP (replica_group: dp_cp) its EG = 2 peers
 * both save it: GT710 naming the key and both ranks (the framework's
 * GT641 says the same before launch). With the default stack it is one
 * more valid key per MoE layer. */
START_TEST(GT710_expert_bias)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2,
			  "    add_bias_linear: true\n"
			  "  stack:\n    replica_group: dp_cp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT710"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT711") + sim_fx_count(&f, "GT712"), 0);
	ck_assert_uint_eq(sim_fx_count(&f, "GT641"), 1);
	d = sim_fx_first(&f, "GT710");
	ck_assert_ptr_nonnull(strstr(d->msg, "checkpoint chunk (0-3, 0) of "
				     "(8, 1) of decoder.layers.0.mlp.experts."
				     "linear_fc2.bias claimed 2 times by main "
				     "replicas (rank 0 (etp 0, ep 0, egtp 0, "
				     "edp 0, pp 0), rank 2 (etp 0, ep 0, egtp "
				     "1, edp 0, pp 0))"));
	ck_assert_ptr_nonnull(strstr(d->msg, "replica_group: dp_cp"));
	ck_assert_ptr_nonnull(strstr(d->hint, "replica_group: dp_cp_gtp"));
	sim_fx_release(&f);

	lint(&f, moe_yaml(2, 1, 1, 4, 2, 1, 2, 2,
			  "    add_bias_linear: true\n"));
	ck_assert_uint_eq(count71(&f), 0);
	ck_assert_int_eq(f.sim.ckpt.keys, 16 + 2 * 3);
	/* 8 experts x 1 chunk per layer */
	ck_assert_int_eq(f.sim.ckpt.shards, 23 + 2 * (2 * 8 * 2 + 8));
	sim_fx_release(&f);
}
END_TEST

/* TP 2, G 3 with rng_state_group: dp_cp: the 3 GTP peers of each TP rank
 * claim one rng_state key. */
START_TEST(GT712_rng_state_group)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, yaml(2, 1, 3, 1, 1,
		      "  stack:\n    rng_state_group: dp_cp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT712"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT710"), 0);
	d = sim_fx_first(&f, "GT712");
	ck_assert_ptr_nonnull(strstr(d->msg, "rng_state/shard_0.0_1.2"));
	ck_assert_ptr_nonnull(strstr(d->msg, "3 main replicas"));
	ck_assert_ptr_nonnull(strstr(d->msg, "rank 2 (tp 0, cp 0, gtp 1"));
	ck_assert_ptr_nonnull(strstr(d->msg, "rank 4 (tp 0, cp 0, gtp 2"));
	ck_assert_ptr_nonnull(strstr(d->msg, "dp_cp group"));
	sim_fx_release(&f);
	/* no checkpoints saved: nothing to report, the summary stays */
	lint(&f, strstr(yaml(2, 1, 3, 1, 1,
			     "  stack:\n    rng_state_group: dp_cp\n"),
			"policy:"));
	ck_assert_uint_eq(count71(&f), 0);
	ck_assert_int_eq(f.sim.ckpt.valid, 1);
	sim_fx_release(&f);
	/* GTP off: no collision */
	lint(&f, yaml(2, 1, 1, 1, 3,
		      "  stack:\n    rng_state_group: dp_cp\n"));
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);
}
END_TEST

/* replica_group: dp_cp: G main replicas for each norm. */
START_TEST(GT710_replica_group)
{
	struct sim_fx f;
	const struct diag *d;
	struct stack s;
	struct ckpt_entry e;
	int mains = 0;

	lint(&f, yaml(2, 1, 3, 1, 1, "  stack:\n    replica_group: dp_cp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT710"), 3); /* the three norms */
	ck_assert_uint_eq(sim_fx_count(&f, "GT712"), 0);
	d = sim_fx_first(&f, "GT710");
	ck_assert_ptr_nonnull(strstr(d->msg,
				     "decoder.layers.0.input_layernorm.weight"));
	ck_assert_ptr_nonnull(strstr(d->msg, "claimed 3 times"));
	ck_assert_ptr_nonnull(strstr(d->msg, "replica_group: dp_cp"));
	stack_init(&s);
	s.replica_dp_cp = 1;
	for (long long r = 0; r < 6; r++) {
		entry(&f, &s, r, CKPT_NORM, 768, 1, 1, &e);
		mains += e.main;
	}
	ck_assert_int_eq(mains, 3);
	/* sharded weights are unaffected */
	entry(&f, &s, 5, CKPT_COLUMN, 12, 4, 1, &e);
	ck_assert_int_eq(e.main, 1);
	sim_fx_release(&f);
}
END_TEST

/* sharded_replica_group: dp_cp_gtp: the writers of GTP-sharded pieces
 * are elected over the GTP-inclusive group, so only g = 0 pieces have a
 * main replica (docs/notes/megatron-semantics.md §2.4): GT711 for each of
 * the 6 sharded weights.
 * Without GTP the two groups coincide: nothing to report. */
START_TEST(GT711_sharded_replica_group)
{
	struct sim_fx f;
	const struct diag *d;

	lint(&f, yaml(2, 1, 3, 1, 2,
		      "  stack:\n    sharded_replica_group: dp_cp_gtp\n"));
	/* 4 layer weights, the embedding and the output layer */
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 6);
	ck_assert_uint_eq(sim_fx_count(&f, "GT710") + sim_fx_count(&f, "GT712"), 0);
	d = sim_fx_first(&f, "GT711");
	ck_assert_ptr_nonnull(strstr(d->msg, "checkpoint chunk (1) of (6) of "
				     "decoder.layers.0.self_attention."
				     "linear_qkv.weight is never written"));
	ck_assert_ptr_nonnull(strstr(d->msg, "(4 of the 6 chunks have none)"));
	ck_assert_ptr_nonnull(strstr(d->msg, "sharded_replica_group: "
				     "dp_cp_gtp"));
	ck_assert_int_ge(d->loc.src, 0); /* at the stack key */
	ck_assert_ptr_nonnull(strstr(d->hint, "sharded_replica_group: dp_cp"));
	/* row-parallel: the first chunk with g > 0 is (1, 0) of (3, 2) */
	int row = 0;

	for (size_t i = 0; i < f.diags.n; i++)
		row += strcmp(diag_code(&f.diags.v[i]), "GT711") == 0 &&
		       strstr(f.diags.v[i].msg, "chunk (1, 0) of (3, 2) of "
			      "decoder.layers.0.self_attention.linear_proj") &&
		       strstr(f.diags.v[i].msg, "(4 of the 6 chunks");
	ck_assert_int_eq(row, 1);
	sim_fx_release(&f);

	lint(&f, yaml(2, 1, 1, 1, 3,
		      "  stack:\n    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);
}
END_TEST

/* The optimizer state per format, on TP 2, G 3, D 2 (F = CP x D = 2
 * ranges), 2 layers. Per layer a rank's pieces hold qkv 384 x 768, proj
 * 256 x 384, fc1 1024 x 768, fc2 256 x 1536 and the two norms 768 each;
 * the embedding and the output layer a piece of 5334 x 768 each (32000
 * rows in TP slices of 16000, padded to 16002 for G 3), the final norm
 * 768; 3 fp32 states, 12 bytes per element. */
START_TEST(optimizer_formats)
{
	const long long layer = 384 * 768 + 256 * 384 + 1024 * 768 +
		256 * 1536 + 2 * 768, local = 2 * layer + 2 * 5334 * 768 + 768;
	struct sim_fx f;

	/* dp_reshardable (assumed when unset): a flat key per (t, g) and
	 * state, F chunks; each rank writes half its buffer */
	lint(&f, yaml(2, 1, 3, 1, 2, ""));
	ck_assert_str_eq(f.sim.ckpt.opt_format, "dp_reshardable");
	ck_assert_int_eq(f.sim.ckpt.opt_format_set, 0);
	ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * 6);
	ck_assert_int_eq(f.sim.ckpt.opt_shards, 3 * 6 * 2);
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes, 12 * local / 2);
	ck_assert_int_eq(f.sim.ckpt.writers, 12);
	/* rank 0 also writes its bf16 pieces and the norms */
	ck_assert_int_eq(f.sim.ckpt.max_rank_bytes,
			 12 * local / 2 + 2 * local);
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);

	/* fully_reshardable: the weights' chunks and writers (copy 0) */
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_reshardable\n"));
	ck_assert_str_eq(f.sim.ckpt.opt_format, "fully_reshardable");
	ck_assert_int_eq(f.sim.ckpt.opt_format_set, 1);
	ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * (2 * 6 + 3));
	ck_assert_int_eq(f.sim.ckpt.opt_shards,
			 3 * (2 * (4 * 6 + 2) + 2 * 6 + 1));
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes, 12 * local);
	ck_assert_int_eq(f.sim.ckpt.writers, 6 + 3);
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);

	/* without the distributed optimizer: the same model-space layout */
	const char *y = yaml(2, 1, 3, 1, 2, ""), *at;
	char text[sizeof(buf)];

	at = strstr(y, "  megatron_cfg:\n");
	ck_assert_ptr_nonnull(at);
	snprintf(text, sizeof(text), "%.*s  megatron_cfg:\n    optimizer:\n"
		 "      use_distributed_optimizer: false\n%s", (int)(at - y), y,
		 at + strlen("  megatron_cfg:\n"));
	lint(&f, text);
	ck_assert_str_eq(f.sim.ckpt.opt_format, "not_distributed");
	ck_assert_int_eq(f.sim.ckpt.opt_shards,
			 3 * (2 * (4 * 6 + 2) + 2 * 6 + 1));
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes, 12 * local);
	sim_fx_release(&f);

	/* fully_sharded_model_space: each piece cut in F ranges; norms
	 * written by the (t 0, g 0) ranks of both copies */
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_sharded_model_space\n"));
	ck_assert_str_eq(f.sim.ckpt.opt_format, "fully_sharded_model_space");
	ck_assert_int_eq(f.sim.ckpt.opt_keys, 3 * (2 * 6 + 3));
	ck_assert_int_eq(f.sim.ckpt.opt_shards,
			 3 * (2 * (4 * 6 * 2 + 2 * 2) + 2 * 6 * 2 + 2));
	ck_assert_int_eq(f.sim.ckpt.max_rank_opt_bytes, 12 * local / 2);
	ck_assert_int_eq(f.sim.ckpt.writers, 12);
	ck_assert_uint_eq(count71(&f), 0);
	sim_fx_release(&f);

	/* validated like the weights: writers elected over dp_cp_gtp leave
	 * the g > 0 chunks of the model-space state unwritten too (one
	 * GT711 per weight and one per its optimizer state), while the
	 * range-cut format does not use the election */
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_reshardable\n"
		      "    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 12);
	ck_assert_ptr_nonnull(strstr(sim_fx_first(&f, "GT711")->msg,
				     "chunk (1) of (6) of decoder.layers.0."
				     "self_attention.linear_qkv.weight"));
	sim_fx_release(&f);
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_sharded_model_space\n"
		      "    sharded_replica_group: dp_cp_gtp\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT711"), 6);
	sim_fx_release(&f);

	/* the gated fc1 (the test model) is fine for fully_reshardable
	 * without GTP; without Megatron-LM PR #7162 under GTP the save
	 * aborts: GT735 */
	lint(&f, yaml(2, 1, 1, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_reshardable\n"
		      "    megatron_lm_7162: false\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT735"), 0);
	sim_fx_release(&f);
	lint(&f, yaml(2, 1, 3, 1, 2, "  stack:\n"
		      "    optimizer_ckpt_format: fully_reshardable\n"
		      "    megatron_lm_7162: false\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT735"), 1);
	ck_assert_ptr_nonnull(strstr(sim_fx_first(&f, "GT735")->msg,
				     "without PR #7162 can neither write nor "
				     "read it"));
	/* at the format: line 23 of the config */
	ck_assert_int_eq(sim_fx_first(&f, "GT735")->loc.line, 23);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "seed_000", seed_000_column_chunks },
		{ "padding", padding_outside_logical_rows },
		{ "random", default_stack_clean_on_random_layouts },
		{ "GT712", GT712_rng_state_group },
		{ "GT710", GT710_replica_group },
		{ "GT711", GT711_sharded_replica_group },
		{ "optimizer", optimizer_formats },
		{ "experts", experts_by_hand },
		{ "GT711_experts", GT711_experts },
		{ "GT710_experts", GT710_expert_bias },
	};

	return RUN_CASES("ckpt", cases, 120);
}
