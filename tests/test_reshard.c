/*
 * Checkpoint resharding (sim/reshard.h): the seeds' layouts (TP 2, G 3 on
 * 6 GPUs; TP 4, G 3 on 24), a shrink to TP 2, G 2, a PP change, exact
 * coverage (model weights and the example weights without a shape), the
 * 4d -> 5d warning GT731, the optimizer-format note GT733 and the model
 * mismatch GT730.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "diag.h"
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
	static char bufs[2][2048];
	static int which;
	char *buf = bufs[which++ & 1];
	long long gpus = tp * g * pp * d;
	char model[512] = "";

	if (layers)
		snprintf(model, sizeof(model),
			 "  model:\n"
			 "    num_layers: %lld\n"
			 "    hidden_size: 768\n"
			 "    ffn_hidden_size: 3072\n"
			 "    num_attention_heads: 12\n"
			 "    vocab_size: 32000\n", layers);
	snprintf(buf, 2048,
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
		 "cluster:\n"
		 "  num_nodes: %lld\n"
		 "  gpus_per_node: %lld\n"
		 "gtplan:\n%s%s",
		 g * d * 4, tp, pp, tp * g, gpus % 8 ? 1 : gpus / 8,
		 gpus % 8 ? gpus : 8, model, extra);
	return buf;
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

static void all_covered(const struct fx *f)
{
	ck_assert_uint_eq(f->r.n, 4);
	for (size_t i = 0; i < f->r.n; i++) {
		ck_assert_int_eq(f->r.w[i].covered, 1);
		ck_assert_int_eq(f->r.w[i].gaps, 0);
		ck_assert_int_eq(f->r.w[i].overlaps, 0);
	}
	ck_assert_int_eq(f->r.reshardable, 1);
	ck_assert_uint_eq(count(f, "GT730") + count(f, "GT732"), 0);
}

/* Seed 000 -> seed 004's 24 GPUs: 6 column chunks of qkv become 12, each
 * loading piece inside one saved piece. */
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

int main(void)
{
	const struct test_case cases[] = {
		{ "tp2_g3_to_tp4_g3", tp2_g3_to_tp4_g3 },
		{ "tp4_g3_d2_to_tp2_g2", tp4_g3_d2_to_tp2_g2 },
		{ "pp_change", pp_change },
		{ "coverage_proven", coverage_proven },
		{ "layout_4d_to_5d_warns", layout_4d_to_5d_warns },
		{ "model_mismatch", model_mismatch },
	};

	return RUN_CASES("reshard", cases, 0);
}
