/*
 * Matching: each finding kind on small hand-made layouts, the 5-D layout
 * hang, the 4-D layout with every call ok, and random valid layouts that
 * never hang.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calls.h"
#include "classes.h"
#include "dispatch.h"
#include "match.h"
#include "plan.h"
#include "program.h"
#include "harness.h"
#include "plan_fixture.h"

/* ---- hand-made programs ---------------------------------------------- */

static void op(struct prog *pg, unsigned kind, unsigned group,
	       unsigned flags, long long amount)
{
	struct prog_op o = {
		.kind = (uint8_t)kind, .group = (uint8_t)group,
		.phase = PH_FWD, .flags = (uint8_t)flags, .weight = -1,
		.what = W_ACT, .layer = 0, .mb = 0, .root = -1,
		.amount = amount,
	};

	ck_assert_int_eq(prog_push(pg, &o), 0);
}

/* rank -> program id (-1: not called), from a table. */
struct table {
	const int *id;
};

static int by_table(void *ctx, long long rank, struct disp_rank *dr)
{
	const struct table *t = ctx;

	dr->called = t->id[rank] >= 0;
	dr->returned = dr->called;
	return t->id[rank];
}

struct fx {
	struct src_set srcs;
	struct diag_list diags;
	struct sim_call_result res;
};

static void fx_init(struct fx *f)
{
	src_set_init(&f->srcs);
	diag_list_init(&f->diags, &f->srcs);
	memset(&f->res, 0, sizeof(f->res));
}

static void fx_release(struct fx *f)
{
	diag_list_release(&f->diags);
	src_set_release(&f->srcs);
}

static size_t n_code(const struct fx *f, const char *code)
{
	size_t n = 0;

	for (size_t i = f->res.first_diag; i < f->diags.n; i++)
		n += f->diags.v[i].rule &&
		     !strcmp(f->diags.v[i].rule->code, code);
	return n;
}

static const struct diag *first_code(const struct fx *f, const char *code)
{
	for (size_t i = f->res.first_diag; i < f->diags.n; i++)
		if (f->diags.v[i].rule && !strcmp(f->diags.v[i].rule->code, code))
			return &f->diags.v[i];
	return NULL;
}

static int any_has(const struct fx *f, const char *code, const char *text)
{
	for (size_t i = f->res.first_diag; i < f->diags.n; i++) {
		const struct diag *d = &f->diags.v[i];

		if (!d->rule || strcmp(d->rule->code, code))
			continue;
		if (strstr(d->msg, text))
			return 1;
		for (size_t j = 0; j < d->n_notes; j++)
			if (strstr(d->notes[j].msg, text))
				return 1;
	}
	return 0;
}

static void run(struct fx *f, const struct plan *p, struct prog *progs,
		size_t n, const int *ids)
{
	struct table t = { ids };
	struct match_setup s = {
		.p = p, .call = "test", .loc = DIAG_NOLOC, .progs = progs,
		.n_progs = n, .rank_prog = by_table, .ctx = &t, .dl = NULL,
	};

	ck_assert_int_eq(match_run(&s, &f->res, &f->diags), 0);
}

/* ---- the 5-D layout -------------------------------------------------- */

/* g != 0 workers are never called: the first GTP all-gather waits. */
static int called_g0(void *ctx, long long rank, struct disp_rank *dr)
{
	const struct plan *p = ctx;
	long long c[LAY_NAXES];

	lay_coords(&p->dense, rank, c);
	dr->called = c[LAY_GTP] == 0;
	dr->left_out_by = dr->called ? AX_N : AX_GTP;
	return dr->called ? (int)c[LAY_PP] : -1;
}

START_TEST(five_d_never_called_members)
{
	struct plan p;
	struct prog pg;
	struct fx f;
	struct match_setup s = { .call = "get_logprobs", .loc = DIAG_NOLOC,
				 .n_progs = 1, .rank_prog = called_g0 };
	const struct diag *d;

	plan_by_hand(&p, 4, 1, 3, 1, 2, 48, 4, "5d");
	ck_assert_int_eq(prog_build(&pg, &p, NULL, PROG_FORWARD, 0, NULL), 0);
	fx_init(&f);
	s.p = &p;
	s.progs = &pg;
	s.ctx = &p;
	ck_assert_int_eq(match_run(&s, &f.res, &f.diags), 0);
	ck_assert_int_eq(f.res.status, SIM_HANG);
	ck_assert_int_eq(f.res.invoked, 8);
	ck_assert_uint_eq(f.res.n_diags, 1);
	d = first_code(&f, "GT500");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "op #0, the GTP all-gather of "
				     "layer 0's linear_qkv weight (forward, "
				     "micro-batch 0)"));
	ck_assert_ptr_nonnull(strstr(d->msg, "gtp groups such as [0, 4, 8]"));
	ck_assert_ptr_nonnull(strstr(d->msg, "8 of their 24 ranks arrived"));
	ck_assert_ptr_nonnull(strstr(d->msg, "16 were never called"));
	ck_assert_ptr_nonnull(strstr(d->msg, "rank 4 (t0 c0 g1 d0 p0)"));
	ck_assert_ptr_nonnull(d->hint);
	prog_release(&pg);
	fx_release(&f);
	plan_release(&p);
}
END_TEST

/* The whole call table through the driver's 5-D dispatch. */
START_TEST(five_d_call_table)
{
	struct plan p;
	struct drv_layout dl;
	struct call_def *calls;
	size_t n;
	struct fx f;

	plan_by_hand(&p, 4, 1, 3, 1, 2, 48, 4, "5d");
	drv_layout_init(&dl, &p);
	fx_init(&f);
	ck_assert_int_eq(calls_table(NULL, 1, &calls, &n, &f.diags), 0);
	for (size_t i = 0; i < n; i++) {
		const struct call_def *c = &calls[i];
		int sharded = c->dispatch == CALL_SHARDED;
		int all = !sharded || !strcmp(c->name, "sft_v2_train");

		ck_assert_int_eq(match_call(&p, NULL, &dl, c, NULL, &f.res,
					    &f.diags), 0);
		if (all) {
			ck_assert_msg(f.res.status == SIM_OK, "%s", c->name);
			continue;
		}
		ck_assert_msg(f.res.status == SIM_HANG, "%s", c->name);
		ck_assert_uint_eq(n_code(&f, "GT500"), 1);
		if (!strcmp(c->name, "train")) {
			/* NeMo-RL's first collective is the data size over
			 * the lanes; the GTP all-gather would wait too */
			ck_assert(any_has(&f, "GT500", "op #0, the dp "
					  "all-reduce of the data size"));
			ck_assert(any_has(&f, "GT500", "the GTP all-gather of "
					  "layer 0's linear_qkv weight"));
		} else {
			ck_assert_msg(any_has(&f, "GT500", "op #0, the GTP "
					      "all-gather of layer 0's "
					      "linear_qkv"), "%s", c->name);
		}
		ck_assert(any_has(&f, "GT500", "'gtp_weight_remat'"));
	}
	free(calls);
	fx_release(&f);
	plan_release(&p);
}
END_TEST

/* ---- stuck earlier: a chain through the pipeline ----------------------- */

START_TEST(stuck_earlier_chain)
{
	struct plan p;
	struct prog pg[3];
	struct fx f;
	/* TP 2 x PP 3: rank 1 (stage 0) is never called */
	static const int ids[6] = { 0, -1, 1, 1, 2, 2 };
	unsigned tp = prog_kind("tp"), pp = prog_kind("pp");

	plan_by_hand(&p, 2, 1, 1, 3, 1, 1, 1, "4d");
	for (int i = 0; i < 3; i++)
		prog_init(&pg[i]);
	op(&pg[0], OP_ALL_REDUCE, tp, 0, 8);
	op(&pg[0], OP_P2P, pp, PROG_SEND_FWD, 64);
	op(&pg[1], OP_P2P, pp, PROG_RECV_FWD, 64);
	op(&pg[1], OP_P2P, pp, PROG_SEND_FWD, 64);
	op(&pg[2], OP_P2P, pp, PROG_RECV_FWD, 64);
	fx_init(&f);
	run(&f, &p, pg, 3, ids);
	ck_assert_int_eq(f.res.status, SIM_HANG);
	ck_assert_uint_eq(n_code(&f, "GT500"), 2); /* rank 0's AR, rank 3's recv */
	ck_assert_uint_eq(n_code(&f, "GT501"), MATCH_MAX_DERIVED);
	ck_assert(any_has(&f, "GT501", "the chain ends at rank 0 "
			  "(t0 c0 g0 d0 p0) at op #0"));
	ck_assert(any_has(&f, "GT501", "more op waits behind"));
	for (int i = 0; i < 3; i++)
		prog_release(&pg[i]);
	fx_release(&f);
	plan_release(&p);
}
END_TEST

/* ---- mismatch ---------------------------------------------------------- */

START_TEST(mismatch_in_size_and_kind)
{
	struct plan p;
	struct prog pg[2];
	struct fx f;
	static const int ids[4] = { 0, 0, 0, 1 };
	unsigned tp = prog_kind("tp");

	plan_by_hand(&p, 4, 1, 1, 1, 1, 1, 1, "4d");
	prog_init(&pg[0]);
	prog_init(&pg[1]);
	op(&pg[0], OP_ALL_REDUCE, tp, 0, 100);
	op(&pg[1], OP_ALL_REDUCE, tp, 0, 200);
	fx_init(&f);
	run(&f, &p, pg, 2, ids);
	ck_assert_int_eq(f.res.status, SIM_MISMATCH);
	ck_assert_uint_ge(n_code(&f, "GT502"), 1);
	ck_assert(any_has(&f, "GT502", "200 bytes per rank"));
	ck_assert(any_has(&f, "GT502", "rank 3 (t3 c0 g0 d0 p0)"));
	fx_release(&f);

	/* same size, another kind */
	pg[1].ops[0].kind = OP_ALL_GATHER;
	pg[1].ops[0].amount = 100;
	fx_init(&f);
	run(&f, &p, pg, 2, ids);
	ck_assert_int_eq(f.res.status, SIM_MISMATCH);
	ck_assert(any_has(&f, "GT502", "all-gather"));
	prog_release(&pg[0]);
	prog_release(&pg[1]);
	fx_release(&f);
	plan_release(&p);
}
END_TEST

/* ---- finished early ---------------------------------------------------- */

START_TEST(finished_early)
{
	struct plan p, q;
	struct prog pg[2];
	struct fx f;
	static const int ids[2] = { 0, 1 };

	/* collectives: one member has one all-reduce fewer */
	plan_by_hand(&p, 2, 1, 1, 1, 1, 1, 1, "4d");
	prog_init(&pg[0]);
	prog_init(&pg[1]);
	op(&pg[0], OP_ALL_REDUCE, prog_kind("tp"), 0, 8);
	op(&pg[0], OP_ALL_REDUCE, prog_kind("tp"), 0, 8);
	op(&pg[1], OP_ALL_REDUCE, prog_kind("tp"), 0, 8);
	fx_init(&f);
	run(&f, &p, pg, 2, ids);
	ck_assert_int_eq(f.res.status, SIM_HANG);
	ck_assert_uint_eq(n_code(&f, "GT504"), 1);
	ck_assert(any_has(&f, "GT504", "op #1"));
	ck_assert(any_has(&f, "GT504", "already finished the call"));
	prog_release(&pg[0]);
	prog_release(&pg[1]);
	fx_release(&f);
	plan_release(&p);

	/* a stage with fewer micro-batches: stage 0 sends 2, stage 1 takes 1 */
	plan_by_hand(&p, 1, 1, 1, 2, 1, 2, 1, "4d");
	plan_by_hand(&q, 1, 1, 1, 2, 1, 1, 1, "4d");
	ck_assert_int_eq(prog_build(&pg[0], &p, NULL, PROG_FORWARD, 0, NULL), 0);
	ck_assert_int_eq(prog_build(&pg[1], &q, NULL, PROG_FORWARD, 1, NULL), 0);
	fx_init(&f);
	run(&f, &p, pg, 2, ids);
	ck_assert_int_eq(f.res.status, SIM_HANG);
	ck_assert_uint_eq(n_code(&f, "GT504"), 1);
	ck_assert(any_has(&f, "GT504", "p2p exchange with the next stage "
			  "(send activation; forward, micro-batch 1)"));
	prog_release(&pg[0]);
	prog_release(&pg[1]);
	fx_release(&f);
	plan_release(&p);
	plan_release(&q);
}
END_TEST

/* ---- wait-for cycle ---------------------------------------------------- */

START_TEST(pipeline_cycle_when_both_send_first)
{
	struct plan p;
	struct prog pg[2];
	struct fx f;
	static const int ids[2] = { 0, 1 };
	unsigned pp = prog_kind("pp");

	plan_by_hand(&p, 1, 1, 1, 2, 1, 1, 1, "4d");
	prog_init(&pg[0]);
	prog_init(&pg[1]);
	/* plain blocking sends, each before its receive */
	op(&pg[0], OP_P2P, pp, PROG_SEND_FWD, 64);
	op(&pg[0], OP_P2P, pp, PROG_RECV_BWD, 64);
	op(&pg[1], OP_P2P, pp, PROG_SEND_BWD, 64);
	op(&pg[1], OP_P2P, pp, PROG_RECV_FWD, 64);
	fx_init(&f);
	run(&f, &p, pg, 2, ids);
	ck_assert_int_eq(f.res.status, SIM_HANG);
	ck_assert_uint_eq(n_code(&f, "GT503"), 1);
	ck_assert_uint_eq(f.res.n_diags, 1);
	ck_assert(any_has(&f, "GT503", "rank 0 (t0 c0 g0 d0 p0) at op #0"));
	ck_assert(any_has(&f, "GT503", "which waits for rank 1"));
	fx_release(&f);

	/* the same exchanges in a matching order complete */
	pg[1].ops[0].flags = PROG_RECV_FWD;
	pg[1].ops[1].flags = PROG_SEND_BWD;
	fx_init(&f);
	run(&f, &p, pg, 2, ids);
	ck_assert_int_eq(f.res.status, SIM_OK);
	ck_assert_uint_eq(f.res.n_diags, 0);
	prog_release(&pg[0]);
	prog_release(&pg[1]);
	fx_release(&f);
	plan_release(&p);
}
END_TEST

/* ---- the 4-D layout ---------------------------------------------------- */

/* Every call ok; `generate` leaves context_parallel free, so with CP > 1
 * it must hang (docs/calls.md §2). */
static void check_table(struct plan *p, const struct prog_opts *o)
{
	struct drv_layout dl;
	struct call_def *calls;
	size_t n;
	struct fx f;

	drv_layout_init(&dl, p);
	fx_init(&f);
	ck_assert_int_eq(calls_table(NULL, 0, &calls, &n, &f.diags), 0);
	for (size_t i = 0; i < n; i++) {
		int gen = !strcmp(calls[i].name, "generate");

		ck_assert_int_eq(match_call(p, NULL, &dl, &calls[i], o, &f.res,
					    &f.diags), 0);
		if (gen && p->cp > 1)
			ck_assert_int_eq(f.res.status, SIM_HANG);
		else
			ck_assert_msg(f.res.status == SIM_OK && !f.res.n_diags,
				      "%s: TP %lld CP %lld G %lld PP %lld D %lld "
				      "mb %lld", calls[i].name, p->tp, p->cp,
				      p->gtp, p->pp, p->dp_replicate,
				      prog_microbatches(p, 0));
		ck_assert_int_eq(f.res.invoked, gen && p->cp > 1 ?
				 p->world / p->cp : p->world);
	}
	free(calls);
	fx_release(&f);
}

START_TEST(four_d_every_call_ok)
{
	struct plan p;

	/* the example of docs/design.md §2.1 */
	plan_by_hand(&p, 4, 1, 3, 1, 2, 48, 4, "4d");
	check_table(&p, NULL);
	plan_release(&p);
	plan_by_hand(&p, 2, 2, 2, 2, 2, 64, 2, "4d");
	check_table(&p, NULL);
	plan_release(&p);
}
END_TEST

START_TEST(random_four_d_layouts_never_hang)
{
	static const long long tps[] = { 1, 2, 4 }, cps[] = { 1, 2 };
	static const long long gs[] = { 1, 2, 3 }, pps[] = { 1, 2, 3, 4 };
	unsigned seed = 12345;

	for (int it = 0; it < 40; it++) {
		struct plan p;
		struct prog_opts o;
		long long tp, cp, g, pp, d, mbs, gbs;

		seed = seed * 1103515245u + 12345u;
		tp = tps[(seed >> 8) % 3];
		cp = cps[(seed >> 12) % 2];
		g = gs[(seed >> 14) % 3];
		pp = pps[(seed >> 17) % 4];
		d = 1 + (seed >> 20) % 3;
		mbs = 1 + (seed >> 23) % 2;
		gbs = d * g * mbs * (1 + (seed >> 25) % 6);
		plan_by_hand(&p, tp, cp, g, pp, d, gbs, mbs, "4d");
		prog_opts_init(&o);
		o.sequence_parallel = (seed >> 29) & 1;
		check_table(&p, &o);
		plan_release(&p);
	}
}
END_TEST

/* MoE: expert groups cross the dense ones; every call still completes. */
START_TEST(experts_complete)
{
	struct plan p;
	struct drv_layout dl;
	struct model_shape m;
	struct lay_order eo;
	long long size[LAY_NAXES] = { 0 };
	struct fx f;
	static const enum call_program kinds[] = {
		PROG_TRAIN, PROG_FORWARD, PROG_REFIT_IPC, PROG_REFIT_BROADCAST,
	};

	plan_by_hand(&p, 2, 1, 2, 2, 2, 16, 1, "4d"); /* 16 ranks */
	p.ep = 2;
	p.etp = 2;
	p.egtp = 2;
	p.edp = 1;
	lay_order_expert(&p.order, &eo);
	size[LAY_TP] = 2;
	size[LAY_CP] = 1;
	size[LAY_EP] = 2;
	size[LAY_GTP] = 2;
	size[LAY_DP] = 1;
	size[LAY_PP] = 2;
	lay_grid_init(&p.expert, &eo, size);
	prog_default_shape(&m);
	m.num_moe_experts = 4;
	m.moe_ffn_hidden_size = 512;
	m.moe_router_topk = 2;
	drv_layout_init(&dl, &p);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++) {
		struct call_def c = *calls_builtin_at(0);

		c.program = kinds[i];
		fx_init(&f);
		ck_assert_int_eq(match_call(&p, &m, &dl, &c, NULL, &f.res,
					    &f.diags), 0);
		ck_assert_int_eq(f.res.status, SIM_OK);
		ck_assert_int_gt(f.res.n_ops, 0);
		fx_release(&f);
	}
	plan_release(&p);
}
END_TEST

/* ---- classes ----------------------------------------------------------- */

START_TEST(classes_fold_symmetric_ranks)
{
	struct plan p;
	struct cls_part cp;
	long long c[LAY_NAXES];
	uint64_t kinds = (1ull << prog_kind("gtp")) | (1ull << prog_kind("dp")) |
			 (1ull << prog_kind("tp"));

	plan_by_hand(&p, 4, 1, 3, 1, 2, 48, 4, "5d");
	ck_assert_int_eq(cls_init(&cp, p.world), 0);
	for (long long r = 0; r < p.world; r++) {
		lay_coords(&p.dense, r, c);
		cp.colour[r] = c[LAY_GTP] == 0;
	}
	ck_assert_int_eq(cls_refine(&cp, &p, kinds), 0);
	ck_assert_uint_eq(cp.n, 2);
	ck_assert_int_eq(cp.count[cp.colour[0]], 8);
	ck_assert_int_eq(cp.count[cp.colour[4]], 16);
	ck_assert_int_eq(cp.colour[4], cp.colour[8]);
	cls_release(&cp);
	plan_release(&p);

	/* pipeline stages are told apart by their place in the pp group */
	plan_by_hand(&p, 2, 1, 1, 2, 1, 1, 1, "4d");
	ck_assert_int_eq(cls_init(&cp, p.world), 0);
	ck_assert_int_eq(cls_refine(&cp, &p, 1ull << prog_kind("pp")), 0);
	ck_assert_uint_eq(cp.n, 2);
	ck_assert_int_ne(cp.colour[0], cp.colour[2]);
	ck_assert_int_eq(cp.colour[0], cp.colour[1]);
	cls_release(&cp);
	plan_release(&p);
}
END_TEST

/* A large world folds into a handful of classes. */
START_TEST(large_world_folds)
{
	struct plan p;
	struct drv_layout dl;
	struct fx f;
	const struct call_def *train = NULL;

	for (size_t i = 0; i < calls_builtin_count(); i++)
		if (!strcmp(calls_builtin_at(i)->name, "train"))
			train = calls_builtin_at(i);
	ck_assert_ptr_nonnull(train);
	plan_by_hand(&p, 8, 1, 4, 2, 2048, 0, 0, "4d"); /* 131072 ranks */
	drv_layout_init(&dl, &p);
	fx_init(&f);
	ck_assert_int_eq(match_call(&p, NULL, &dl, train, NULL, &f.res,
				    &f.diags), 0);
	ck_assert_int_eq(f.res.status, SIM_OK);
	ck_assert_int_eq(f.res.invoked, 131072);
	fx_release(&f);
	plan_release(&p);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "GT500_5d", five_d_never_called_members },
		{ "5d_table", five_d_call_table },
		{ "GT501", stuck_earlier_chain },
		{ "GT502", mismatch_in_size_and_kind },
		{ "GT504", finished_early },
		{ "GT503", pipeline_cycle_when_both_send_first },
		{ "4d_ok", four_d_every_call_ok },
		{ "4d_random", random_four_d_layouts_never_hang },
		{ "experts", experts_complete },
		{ "classes", classes_fold_symmetric_ranks },
		{ "large", large_world_folds },
	};

	return RUN_CASES("match", cases, 60);
}
