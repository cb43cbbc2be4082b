/*
 * Checkpoint resharding (sim/reshard.h): NeMo-RL PR #4512's layouts (TP 2,
 * G 3 on 6 GPUs; TP 4, G 3 on 24), a shrink to TP 2, G 2, a PP change, exact
 * coverage (model weights, norms, the padded vocabulary, experts, and the
 * example weights without a shape), the 4d -> 5d warning GT731, the
 * optimizer formats (GT733 note, GT734, GT735), GT732 from stacks that
 * elect no writer or several, the model mismatch GT730, and a randomized
 * property test over pairs of valid layouts of the same model.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
#include "grid_yaml.h"
#include "harness.h"
#include "plan.h"
#include "reshard.h"

struct side {
	struct cfg_node *root;
	struct plan plan;
};

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct side s, l;
	struct reshard_report r;
};

/* TP tp, G g, PP pp, D d; `layers` layers (0: no model); `extra` more
 * gtplan lines. */
static char *yaml(long long tp, long long g, long long pp, long long d,
		  long long layers, const char *extra)
{
	static char bufs[2][2048], tails[2][1024];
	static int which;
	char *buf = bufs[which & 1], *tail = tails[which++ & 1];
	struct grid_yaml y = {
		.head = "checkpointing:\n  enabled: true\n", .batch = g * d * 4,
		.tp = tp, .pp = pp, .shards = tp * g, .layers = layers,
		.tail = extra,
	};

	if (!layers) { /* gtplan's lines with no model */
		snprintf(tail, 1024, "gtplan:\n%s", extra);
		y.tail = tail;
	}
	grid_yaml_nodes(&y, tp * g * pp * d);
	return grid_yaml_text(buf, 2048, &y);
}

static void side(struct fx *f, struct side *s, const char *name,
		 const char *text)
{
	char *t = strdup(text);

	ck_assert_ptr_nonnull(t);
	plan_init(&s->plan);
	ck_assert_int_eq(cfg_parse_text(name, t, strlen(text), &f->srcs,
					&f->diags, &s->root), 0);
	ck_assert_int_eq(plan_build(&s->plan, s->root, name, &f->diags), 0);
	ck_assert_int_eq(s->plan.grid_ok, 1);
}

static void run(struct fx *f, const char *saved, const char *loaded)
{
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	side(f, &f->s, "saved.yaml", saved);
	side(f, &f->l, "loaded.yaml", loaded);
	ck_assert_int_eq(reshard_check(&f->s.plan, f->s.root, &f->l.plan,
				       f->l.root, &f->r, &f->diags), 0);
}

static void release(struct fx *f)
{
	plan_release(&f->s.plan);
	plan_release(&f->l.plan);
	cfg_free(f->s.root);
	cfg_free(f->l.root);
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

static size_t count(const struct fx *f, const char *code)
{
	size_t n = 0;

	for (size_t i = 0; i < f->diags.n; i++)
		n += strcmp(diag_code(&f->diags.v[i]), code) == 0;
	return n;
}

static const struct diag *first(const struct fx *f, const char *code)
{
	for (size_t i = 0; i < f->diags.n; i++)
		if (strcmp(diag_code(&f->diags.v[i]), code) == 0)
			return &f->diags.v[i];
	return NULL;
}

/* The test model's kinds: 4 layer weights, 2 layer norms, embedding,
 * output layer, final norm. */
static void all_covered(const struct fx *f)
{
	ck_assert_uint_eq(f->r.n, 9);
	for (size_t i = 0; i < f->r.n; i++) {
		ck_assert_int_eq(f->r.w[i].covered, 1);
		ck_assert_int_eq(f->r.w[i].gaps, 0);
		ck_assert_int_eq(f->r.w[i].overlaps, 0);
	}
	ck_assert_int_eq(f->r.reshardable, 1);
	ck_assert_uint_eq(count(f, "GT730") + count(f, "GT732"), 0);
}

/* TP 2, G 3 on 6 GPUs -> TP 4, G 3 on 24: 6 column chunks of qkv become
 * 12, each loading piece inside one saved piece. */
START_TEST(tp2_g3_to_tp4_g3)
{
	struct fx f;

	run(&f, yaml(2, 3, 1, 1, 4, ""), yaml(4, 3, 1, 2, 4, ""));
	all_covered(&f);
	ck_assert_str_eq(f.r.w[0].name, "linear_qkv");
	ck_assert_int_eq(f.r.w[0].saved_pieces, 6);
	ck_assert_int_eq(f.r.w[0].loaded_pieces, 12);
	ck_assert_int_eq(f.r.w[0].max_reads, 1);
	ck_assert_uint_eq(count(&f, "GT733"), 1);
	ck_assert_uint_eq(count(&f, "GT731"), 0);
	/* the unset format is Megatron's dp_reshardable: the weights reshard,
	 * the optimizer state does not (a warning, not a note) */
	ck_assert_int_eq(f.r.opt_assumed, 1);
	ck_assert_int_eq(f.r.reshardable, 1);
	for (size_t i = 0; i < f.diags.n; i++)
		if (!strcmp(diag_code(&f.diags.v[i]), "GT733")) {
			ck_assert_int_eq(f.diags.v[i].severity, DIAG_WARNING);
			ck_assert_ptr_nonnull(strstr(f.diags.v[i].msg,
						     "TP 2 -> 4"));
		}
	release(&f);
}
END_TEST

/* Shrinking: TP 4, G 3, D 2 -> TP 2, G 2, D 2: a loading rank reads
 * several saved pieces. */
START_TEST(tp4_g3_d2_to_tp2_g2)
{
	struct fx f;

	run(&f, yaml(4, 3, 1, 2, 4, ""), yaml(2, 2, 1, 2, 4, ""));
	all_covered(&f);
	ck_assert_int_eq(f.r.w[0].saved_pieces, 12);
	ck_assert_int_eq(f.r.w[0].loaded_pieces, 4);
	ck_assert_int_ge(f.r.w[0].max_reads, 3);
	ck_assert_int_ge(f.r.w[1].max_reads, 2); /* row: G and TP both */
	ck_assert_uint_eq(count(&f, "GT733"), 1);
	release(&f);
}
END_TEST

START_TEST(pp_change)
{
	struct fx f;

	run(&f, yaml(2, 3, 1, 1, 4, ""), yaml(2, 3, 2, 1, 4, ""));
	all_covered(&f);
	ck_assert_int_eq(f.r.layers, 4);
	ck_assert_int_eq(f.r.layout_change, 1);
	ck_assert_uint_eq(count(&f, "GT733"), 1);
	release(&f);
}
END_TEST

/* Same layout: nothing to say; no model: example weights, still
 * covered exactly once (1000 rows: padding stays out). */
START_TEST(coverage_proven)
{
	struct fx f;

	run(&f, yaml(2, 3, 1, 1, 4, ""), yaml(2, 3, 1, 1, 4, ""));
	all_covered(&f);
	ck_assert_int_eq(f.r.layout_change, 0);
	ck_assert_uint_eq(f.diags.n - count(&f, "GT605"), 0);
	release(&f);

	run(&f, yaml(4, 3, 1, 2, 0, ""), yaml(2, 2, 1, 1, 0, ""));
	ck_assert_int_eq(f.r.example, 1);
	ck_assert_uint_eq(f.r.n, 2);
	for (size_t i = 0; i < f.r.n; i++) {
		ck_assert_int_eq(f.r.w[i].rows, 1000);
		ck_assert_int_eq(f.r.w[i].covered, 1);
	}
	ck_assert_int_eq(f.r.reshardable, 1);
	release(&f);
}
END_TEST

START_TEST(layout_4d_to_5d_warns)
{
	struct fx f;
	const struct diag *d;

	run(&f, yaml(2, 3, 1, 1, 4, ""),
	    yaml(2, 3, 1, 1, 4, "  driver_layout: 5d\n"));
	all_covered(&f);
	ck_assert_uint_eq(count(&f, "GT731"), 1);
	d = first(&f, "GT731");
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	ck_assert_ptr_nonnull(strstr(d->msg, "a 4-D save does not resume "
				     "under 5-D"));
	ck_assert_uint_eq(count(&f, "GT733"), 0);
	release(&f);
}
END_TEST

START_TEST(model_mismatch)
{
	struct fx f;
	const struct diag *d;

	run(&f, yaml(2, 3, 1, 1, 4, ""), yaml(2, 3, 1, 1, 6, ""));
	ck_assert_uint_eq(count(&f, "GT730"), 1);
	d = first(&f, "GT730");
	ck_assert_int_eq(d->severity, DIAG_ERROR);
	ck_assert_ptr_nonnull(strstr(d->msg, "num_layers is 4 when saved, 6 "
				     "when loaded"));
	ck_assert_int_eq(f.r.reshardable, 0);
	release(&f);
}
END_TEST

/* ---- the full layout: CP and the expert grid too ------------------- */

struct lay {
	long long tp, cp, g, pp, d, ep, etp, eg;
};

enum { DENSE, DENSE_TIED_ODD_VOCAB, MOE, N_MODELS };

/* A config of layout l and model `model` (DENSE: gated, untied, vocab
 * 32000; DENSE_TIED_ODD_VOCAB: not gated, tied, vocab 32001; MOE: 8
 * gated experts of 512), then `extra` gtplan lines. */
static char *yaml_full(const struct lay *l, int model, const char *extra)
{
	static char bufs[2][4096];
	static int which;
	struct grid_yaml y = {
		.head = "checkpointing:\n  enabled: true\n",
		.batch = l->g * l->d * 4, .tp = l->tp, .cp = l->cp, .pp = l->pp,
		.shards = l->tp * l->g, .ep = l->ep, .etp = l->etp,
		.eshards = l->etp * l->eg, .layers = 4,
		.vocab = model == DENSE_TIED_ODD_VOCAB ? 32001 : 32000,
		.model = model == DENSE_TIED_ODD_VOCAB ?
			"    gated_linear_unit: false\n"
			"    share_embeddings_and_output_weights: true\n" :
			model == MOE ? "    num_moe_experts: 8\n"
			"    moe_ffn_hidden_size: 512\n" : "",
		.tail = extra,
	};

	grid_yaml_nodes(&y, l->tp * l->cp * l->g * l->pp * l->d);
	return grid_yaml_text(bufs[which++ & 1], 4096, &y);
}

static unsigned rng_state;

static long long pick(const long long *v, size_t n)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return v[rng_state / 65536 % n];
}

#define PICK(a) pick(a, sizeof(a) / sizeof(*(a)))

/* A random valid layout: the expert grid must divide W / PP. */
static void random_lay(struct lay *l, int moe)
{
	static const long long tps[] = { 1, 2, 4 }, cps[] = { 1, 2 },
		gs[] = { 1, 2, 3 }, pps[] = { 1, 2, 4 }, ds[] = { 1, 2, 3 },
		eps[] = { 1, 2, 4, 8 }, etps[] = { 1, 2 }, egs[] = { 1, 2 };

	for (;;) {
		l->tp = PICK(tps);
		l->cp = PICK(cps);
		l->g = PICK(gs);
		l->pp = PICK(pps);
		l->d = PICK(ds);
		l->ep = moe ? PICK(eps) : 1;
		l->etp = moe ? PICK(etps) : l->tp;
		l->eg = moe ? PICK(egs) : 1;
		if ((l->tp * l->cp * l->g * l->d) % (l->ep * l->etp * l->eg) == 0)
			return;
	}
}

static int same_except_d(const struct lay *a, const struct lay *b)
{
	return a->tp == b->tp && a->cp == b->cp && a->g == b->g &&
	       a->pp == b->pp && a->ep == b->ep && a->etp == b->etp &&
	       a->eg == b->eg;
}

static int lay_equal(const struct lay *a, const struct lay *b)
{
	return same_except_d(a, b) && a->d == b->d;
}

static size_t errors(const struct fx *f)
{
	return diag_count(&f->diags, DIAG_ERROR);
}

/* Default stack: every pair of random valid layouts of the same model
 * reshards, every tensor kind covered exactly once; a driver-layout
 * change adds exactly GT731; an optimizer format set in gtplan.stack
 * gives GT734 exactly when it does not survive the change, and
 * fully_reshardable GT735 exactly when GTP meets the gated fc1. */
START_TEST(property_random_pairs)
{
	rng_state = 20261129;
	for (int i = 0; i < 72; i++) {
		int model = i % N_MODELS;
		struct lay a, b;
		struct fx f;
		char extra[128];
		int change, gated = model != DENSE_TIED_ODD_VOCAB;
		size_t kinds = model == DENSE ? 9 : model == MOE ? 9 : 8;

		random_lay(&a, model == MOE);
		random_lay(&b, model == MOE);
		change = !lay_equal(&a, &b);
		run(&f, yaml_full(&a, model, ""), yaml_full(&b, model, ""));
		ck_assert_msg(f.r.reshardable == 1 && errors(&f) == 0,
			      "pair %d (model %d): TP %lld CP %lld G %lld PP "
			      "%lld D %lld EP %lld ETP %lld EG %lld -> TP %lld "
			      "CP %lld G %lld PP %lld D %lld EP %lld ETP %lld "
			      "EG %lld not reshardable", i, model, a.tp, a.cp,
			      a.g, a.pp, a.d, a.ep, a.etp, a.eg, b.tp, b.cp,
			      b.g, b.pp, b.d, b.ep, b.etp, b.eg);
		/* MoE: qkv, proj, 2 experts, 2 norms, embedding, output,
		 * final norm; tied: no output layer */
		ck_assert_uint_eq(f.r.n, kinds);
		for (size_t k = 0; k < f.r.n; k++) {
			const struct reshard_weight *w = &f.r.w[k];

			ck_assert_msg(w->covered && !w->gaps && !w->overlaps,
				      "pair %d: %s not covered", i, w->name);
			ck_assert_int_ge(w->max_reads, 1);
			ck_assert_int_eq(w->experts, model == MOE &&
					 strncmp(w->name, "experts.", 8) == 0 ?
					 8 : 0);
			/* one main piece per (TP, G) chunk of each expert;
			 * vocab pieces may be all padding */
			if (w->kind == CKPT_COLUMN || w->kind == CKPT_ROW)
				ck_assert_int_eq(w->saved_pieces,
					(w->experts ? 8 * a.etp * a.eg :
					 a.tp * a.g));
			if (w->kind == CKPT_NORM)
				ck_assert_int_eq(w->saved_pieces, 1);
		}
		ck_assert_int_eq(f.r.layout_change, change);
		/* the unset format is Megatron's default, dp_reshardable:
		 * a change of D alone survives it */
		ck_assert_uint_eq(count(&f, "GT733"),
				  change && !same_except_d(&a, &b));
		ck_assert_uint_eq(count(&f, "GT731"), 0);
		release(&f);

		/* 4-D save, 5-D load: the warning, coverage unchanged */
		run(&f, yaml_full(&a, model, ""),
		    yaml_full(&b, model, "  driver_layout: 5d\n"));
		ck_assert_uint_eq(count(&f, "GT731"), 1);
		ck_assert_int_eq(f.r.reshardable, 1);
		release(&f);

		/* dp_reshardable survives a change of D alone */
		snprintf(extra, sizeof(extra), "  stack:\n"
			 "    optimizer_ckpt_format: dp_reshardable\n");
		run(&f, yaml_full(&a, model, extra), yaml_full(&b, model, ""));
		ck_assert_uint_eq(count(&f, "GT734"),
				  !same_except_d(&a, &b));
		ck_assert_uint_eq(count(&f, "GT733"), 0);
		ck_assert_int_eq(f.r.reshardable, same_except_d(&a, &b));
		release(&f);

		/* fully_sharded_model_space survives no change */
		snprintf(extra, sizeof(extra), "  stack:\n"
			 "    optimizer_ckpt_format: fully_sharded_model_space\n");
		run(&f, yaml_full(&a, model, extra), yaml_full(&b, model, ""));
		ck_assert_uint_eq(count(&f, "GT734"), change);
		release(&f);

		/* fully_reshardable survives every change, where the stack
		 * can write it: not under GTP with the gated fc1 */
		snprintf(extra, sizeof(extra), "  stack:\n"
			 "    optimizer_ckpt_format: fully_reshardable\n");
		run(&f, yaml_full(&a, model, extra), yaml_full(&b, model, ""));
		ck_assert_uint_eq(count(&f, "GT734"), 0);
		ck_assert_uint_eq(count(&f, "GT735"), gated &&
				  (a.g > 1 || b.g > 1 || a.eg > 1 || b.eg > 1));
		release(&f);
	}
}
END_TEST

/* Experts: EP 2 -> EP 4 with ETP and EG changing: whole experts move
 * between EP ranks, each split TP x G; stacked rows 8 x 1024. */
START_TEST(experts_reshard)
{
	struct lay a = { 2, 1, 2, 1, 2, 2, 2, 2 }, b = { 1, 1, 3, 2, 4, 4, 1, 3 };
	struct fx f;
	const struct reshard_weight *fc1 = NULL, *fc2 = NULL;

	run(&f, yaml_full(&a, MOE, ""), yaml_full(&b, MOE, ""));
	ck_assert_int_eq(f.s.plan.expert_grid_ok, 1);
	ck_assert_int_eq(f.l.plan.expert_grid_ok, 1);
	for (size_t i = 0; i < f.r.n; i++) {
		if (strcmp(f.r.w[i].name, "experts.linear_fc1") == 0)
			fc1 = &f.r.w[i];
		if (strcmp(f.r.w[i].name, "experts.linear_fc2") == 0)
			fc2 = &f.r.w[i];
	}
	ck_assert_ptr_nonnull(fc1);
	ck_assert_ptr_nonnull(fc2);
	ck_assert_int_eq(fc1->experts, 8);
	ck_assert_int_eq(fc1->rows, 1024); /* gated: 2 x 512 */
	ck_assert_int_eq(fc1->saved_pieces, 8 * 2 * 2);
	ck_assert_int_eq(fc1->loaded_pieces, 8 * 1 * 3);
	ck_assert_int_eq(fc2->saved_pieces, 8 * 2 * 2);
	ck_assert_int_eq(fc1->covered, 1);
	ck_assert_int_eq(fc2->covered, 1);
	/* a loading rank holds 2 experts, each a G 3 piece of ETP 1: it
	 * reads across the saved (ETP 2 x EG 2) pieces of both */
	ck_assert_int_ge(fc1->max_reads, 2);
	ck_assert_int_eq(f.r.reshardable, 1);
	release(&f);
}
END_TEST

/* The vocabulary: 32001 rows padded to a multiple of 128 x TP; padding
 * stays outside the logical rows, so TP 3 -> TP 2 still covers exactly
 * once, and a loading rank reads across saved TP slices. */
START_TEST(vocab_padding_outside)
{
	struct lay a = { 3, 1, 2, 1, 1, 1, 3, 1 }, b = { 2, 1, 1, 1, 3, 1, 2, 1 };
	struct fx f;

	run(&f, yaml_full(&a, DENSE_TIED_ODD_VOCAB, ""),
	    yaml_full(&b, DENSE_TIED_ODD_VOCAB, ""));
	ck_assert_uint_eq(f.r.n, 8); /* tied: no output_layer */
	for (size_t i = 0; i < f.r.n; i++)
		if (f.r.w[i].kind == CKPT_VOCAB) {
			ck_assert_str_eq(f.r.w[i].name,
					 "embedding.word_embeddings");
			ck_assert_int_eq(f.r.w[i].rows, 32001);
			ck_assert_int_eq(f.r.w[i].covered, 1);
			ck_assert_int_eq(f.r.w[i].saved_pieces, 6);
			ck_assert_int_ge(f.r.w[i].max_reads, 2);
		}
	ck_assert_int_eq(f.r.reshardable, 1);
	release(&f);
}
END_TEST

/* GT732: a stack that elects the writers of GTP-sharded pieces over
 * dp_cp_gtp saves only the g = 0 pieces; one that elects norms over
 * dp_cp saves G of each. The same pair under the default stack is
 * clean (coverage_proven). */
START_TEST(GT732_saved_stack)
{
	struct fx f;
	const struct diag *d;
	const struct reshard_weight *proj = NULL, *norm = NULL;

	run(&f, yaml(2, 3, 1, 1, 4,
		     "  stack:\n    sharded_replica_group: dp_cp_gtp\n"),
	    yaml(4, 3, 1, 2, 4, ""));
	ck_assert_int_eq(f.r.reshardable, 0);
	/* qkv, proj, fc1, fc2, embedding, output layer */
	ck_assert_uint_eq(count(&f, "GT732"), 6);
	for (size_t i = 0; i < f.r.n; i++)
		if (strcmp(f.r.w[i].name, "linear_proj") == 0)
			proj = &f.r.w[i];
	ck_assert_ptr_nonnull(proj);
	/* row-parallel [768, 768], G 3: rows 256-767 never written */
	ck_assert_int_eq(proj->gaps, 512 * 768);
	ck_assert_int_eq(proj->overlaps, 0);
	ck_assert_int_eq(proj->saved_pieces, 2);
	d = first(&f, "GT732");
	ck_assert_str_eq(d->loc.src >= 0 ? "located" : "unlocated", "located");
	ck_assert_ptr_nonnull(strstr(d->msg, "linear_qkv [2304, 768] cannot "
				     "be resharded"));
	/* 4 of the 6 pieces of 384 rows x 768 */
	ck_assert_ptr_nonnull(strstr(d->msg, "leave 1179648 logical "
				     "elements uncovered and hold 0 more"));
	release(&f);

	run(&f, yaml(2, 3, 1, 1, 4, "  stack:\n    replica_group: dp_cp\n"),
	    yaml(2, 3, 1, 1, 4, ""));
	ck_assert_uint_eq(count(&f, "GT732"), 3); /* the three norms */
	for (size_t i = 0; i < f.r.n; i++)
		if (strcmp(f.r.w[i].name, "input_layernorm") == 0)
			norm = &f.r.w[i];
	ck_assert_ptr_nonnull(norm);
	ck_assert_int_eq(norm->overlaps, 768); /* 3 main replicas */
	ck_assert_int_eq(norm->gaps, 0);
	d = first(&f, "GT732");
	ck_assert_ptr_nonnull(strstr(d->hint, "replica_group: dp_cp_gtp"));
	release(&f);
}
END_TEST

/* GT735: fully_reshardable under GTP: without Megatron-LM PR #7162
 * neither written nor read; with it refused for the gated fc1 and for
 * native FP8; a non-gated model with the PR can use it. */
START_TEST(GT735_fully_reshardable_stack)
{
	struct lay a = { 2, 1, 3, 1, 1, 1, 2, 1 }, b = { 4, 1, 3, 1, 2, 1, 4, 1 };
	struct fx f;
	const struct diag *d;

	run(&f, yaml_full(&a, DENSE_TIED_ODD_VOCAB,
			  "  stack:\n    optimizer_ckpt_format: "
			  "fully_reshardable\n    megatron_lm_7162: false\n"),
	    yaml_full(&b, DENSE_TIED_ODD_VOCAB, ""));
	ck_assert_uint_eq(count(&f, "GT735"), 1);
	d = first(&f, "GT735");
	ck_assert_ptr_nonnull(strstr(d->msg, "without PR #7162 can neither "
				     "write nor read it"));
	ck_assert_int_eq(f.r.reshardable, 0);
	release(&f);

	run(&f, yaml_full(&a, DENSE, "  stack:\n    optimizer_ckpt_format: "
			  "fully_reshardable\n"), yaml_full(&b, DENSE, ""));
	ck_assert_uint_eq(count(&f, "GT735"), 1);
	ck_assert_ptr_nonnull(strstr(first(&f, "GT735")->msg,
				     "gated linear_fc1"));
	release(&f);

	run(&f, yaml_full(&a, DENSE_TIED_ODD_VOCAB,
			  "  stack:\n    optimizer_ckpt_format: "
			  "fully_reshardable\n"),
	    yaml_full(&b, DENSE_TIED_ODD_VOCAB, ""));
	ck_assert_uint_eq(errors(&f), 0);
	ck_assert_int_eq(f.r.reshardable, 1);
	release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "tp2_g3_to_tp4_g3", tp2_g3_to_tp4_g3 },
		{ "tp4_g3_d2_to_tp2_g2", tp4_g3_d2_to_tp2_g2 },
		{ "pp_change", pp_change },
		{ "coverage_proven", coverage_proven },
		{ "layout_4d_to_5d_warns", layout_4d_to_5d_warns },
		{ "model_mismatch", model_mismatch },
		{ "property_random_pairs", property_random_pairs },
		{ "experts_reshard", experts_reshard },
		{ "vocab_padding_outside", vocab_padding_outside },
		{ "GT732_saved_stack", GT732_saved_stack },
		{ "GT735_fully_reshardable_stack",
		  GT735_fully_reshardable_stack },
	};

	return RUN_CASES("reshard", cases, 120);
}
