/*
 * The runtime decoder's programs (sim/program_rt.c): the collectives
 * gtplan-run issues per call, their counts, shard sizes with the GTP
 * padding, sequence parallelism, one-rank groups left out, the record
 * lines and the labels.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "program.h"
#include "program_rt.h"
#include "harness.h"
#include "plan_fixture.h"

/* TP x CP x G x PP x D ranks (mkplan: PP 1) with the decoder of
 * tests/runtime/parity.yaml (hidden 40, ffn 96, 2 layers, 4 heads of
 * head_dim 10, vocab 255, untied, seq_len 32), its 4 heads in 2 query
 * groups here. */
static void mkplan_pp(struct plan *p, long long tp, long long cp,
		      long long g, long long pp, long long d, long long gbs,
		      long long mbs)
{
	struct plan_rt_model *m = &p->runtime.model;

	plan_by_hand(p, tp, cp, g, pp, d, gbs, mbs, "4d");
	p->runtime.seq_len = 32;
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "gtplan.runtime");
	m->hidden = 40;
	m->ffn = 96;
	m->layers = 2;
	m->heads = 4;
	m->kv_heads = 2;
	m->head_dim = 10;
	m->vocab = 255;
	m->rope_theta = 10000;
	m->norm_eps = 1e-5;
	snprintf(m->cp_comm_type, sizeof(m->cp_comm_type), "p2p");
}

static void mkplan(struct plan *p, long long tp, long long cp, long long g,
		   long long d, long long gbs, long long mbs)
{
	mkplan_pp(p, tp, cp, g, 1, d, gbs, mbs);
}

/* Ops of `kind` on group `name` ("world": the world). */
static size_t count(const struct prog *pg, unsigned kind, const char *name)
{
	unsigned g = strcmp(name, "world") ? prog_kind(name) : PROG_GK_WORLD;
	size_t n = 0;

	for (size_t i = 0; i < pg->n; i++)
		n += pg->ops[i].kind == kind && pg->ops[i].group == g;
	return n;
}

static const char *what(const struct prog *pg, size_t i, char *buf)
{
	return prog_rt_what(pg, &pg->ops[i], buf, 64);
}

/* Per micro-batch (TP 2, untied, no SP): GTP all-gathers 2 + 4 a layer in
 * the forward, 1 + 4 a layer in the backward; GTP reduce-scatters 2 + 4 a
 * layer; TP all-reduces 1 + 2 a layer + 3 CE statistics in the forward,
 * 1 + 2 a layer in the backward; per step one gradient all-reduce over
 * dp_cp_replicate, three over dp_cp, one barrier (no TP sum without SP or
 * QK-norm). */
START_TEST(train_counts_per_collective)
{
	struct plan p;
	struct prog pg;

	mkplan(&p, 2, 1, 3, 2, 24, 2); /* L 6: 24 / 6 / 2 = 2 micro-batches */
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_int_eq(pg.microbatches, 2);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 2 * 19);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "gtp"), 2 * 10);
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "tp"), 2 * 13);
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "dp_cp_replicate"), 1);
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "dp_cp"), 3);
	ck_assert_uint_eq(count(&pg, OP_BARRIER, "world"), 1);
	ck_assert_uint_eq(pg.n, 2 * 42 + 5);
	ck_assert_str_eq(pg.rt_call, "train");
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* The order of rt_train.c: tokens first; per micro-batch the forward
 * (embedding, its TP all-reduce, per layer qkv, proj, proj's TP
 * all-reduce, fc1, fc2, fc2's TP all-reduce, the output layer, the CE
 * statistics), the backward (the output layer and its scatter, last layer
 * first: fc2, fc1, proj, qkv, the embedding's scatter last); then grads,
 * replicated_grads, loss and the barrier. */
START_TEST(train_order_and_labels)
{
	static const char *const want[] = {
		"tokens", "embedding", "embedding.out", "layers.0.qkv",
		"layers.0.proj", "layers.0.proj.out", "layers.0.fc1",
		"layers.0.fc2", "layers.0.fc2.out", "output", "ce.max",
		"ce.target", "ce.sumexp", "output", "output.dgrad", "output",
		"layers.0.fc2", "layers.0.fc2", "layers.0.fc1",
		"layers.0.fc1.dgrad", "layers.0.fc1", "layers.0.proj",
		"layers.0.proj", "layers.0.qkv", "layers.0.qkv.dgrad",
		"layers.0.qkv", "embedding", "grads", "replicated_grads",
		"loss", "step",
	};
	enum { AR = OP_ALL_REDUCE, AG = OP_ALL_GATHER, RS = OP_REDUCE_SCATTER };
	static const unsigned kinds[] = {
		AR, AG, AR, AG, AG, AR, AG, AG, AR, AG, AR, AR, AR, AG, AR, RS,
		AG, RS, AG, AR, RS, AG, RS, AG, AR, RS, RS, AR, AR, AR,
		OP_BARRIER,
	};
	struct plan p;
	struct prog pg;
	char buf[64];

	mkplan(&p, 2, 1, 2, 2, 4, 1); /* L 4: one micro-batch */
	p.runtime.model.layers = 1;
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_uint_eq(pg.n, sizeof(want) / sizeof(*want));
	for (size_t i = 0; i < pg.n; i++) {
		ck_assert_str_eq(what(&pg, i, buf), want[i]);
		ck_assert_uint_eq(pg.ops[i].kind, kinds[i]);
	}
	ck_assert_str_eq(prog_rt_op_name(&pg.ops[10]), "max");
	ck_assert_str_eq(prog_rt_op_name(&pg.ops[11]), "sum");
	ck_assert_ptr_null(prog_rt_op_name(&pg.ops[1]));
	ck_assert_str_eq(prog_rt_dtype_name(&pg.ops[0]), "fp64");
	ck_assert_str_eq(prog_rt_dtype_name(&pg.ops[1]), "fp32");
	ck_assert_str_eq(prog_rt_dtype_name(&pg.ops[pg.n - 1]), "none");
	ck_assert_str_eq(prog_rt_group_name(&pg.ops[0]), "dp_cp");
	ck_assert_str_eq(prog_rt_group_name(&pg.ops[27]), "dp_cp_replicate");
	ck_assert_str_eq(prog_rt_group_name(&pg.ops[pg.n - 1]), "world");
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* TP 2, G 3: the TP-local embedding has 128 rows (vocab 255 padded to
 * 256), padded to 144 (a multiple of 16 x 3): 48 rows x 40; qkv's
 * (2 + 2 x 1) x 10 = 40 rows pad to 48: 16 x 40; proj's 40 rows of 20
 * columns: 16 x 20; fc1's [gate_t; up_t] 96 rows need no padding: 32 x 40;
 * fc2's 40 rows pad to 48: 16 x 48. G 1 pads nothing. */
START_TEST(shard_sizes_with_padding)
{
	struct plan p;
	struct prog_rt_shape s;
	struct prog pg;

	ck_assert_int_eq(dsz_shard(128, 40, 3), 48 * 40);
	ck_assert_int_eq(dsz_shard(96, 40, 3), 32 * 40);
	ck_assert_int_eq(dsz_shard(40, 48, 3), 16 * 48);
	ck_assert_int_eq(dsz_shard(40, 48, 1), 40 * 48);
	ck_assert_int_eq(dsz_shard(40, 48, 2), 64 / 2 * 48); /* 16 x 2 */
	mkplan(&p, 2, 1, 3, 1, 12, 1);
	prog_rt_shape(&p, &s);
	ck_assert_int_eq(s.z.vl, 128);
	ck_assert_int_eq(s.z.shard_emb, 48 * 40);
	ck_assert_int_eq(s.z.shard[DSZ_QKV], 16 * 40);
	ck_assert_int_eq(s.z.shard[DSZ_PROJ], 16 * 20);
	ck_assert_int_eq(s.z.shard[DSZ_FC1], 32 * 40);
	ck_assert_int_eq(s.z.shard[DSZ_FC2], 16 * 48);
	ck_assert_int_eq(s.z.n_shard, 2 * 48 * 40 + 2 * (640 + 320 + 1280 +
							 768));
	ck_assert_int_eq(s.z.n_rep, 5 * 40);
	ck_assert_int_eq(s.z.tp_sum, 0);
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	/* ops 1, 3, 4, 6, 7: the gathers of the embedding, layer 0's qkv,
	 * proj, fc1, fc2 */
	ck_assert_int_eq(prog_rt_count(&pg.ops[1]), 48 * 40);
	ck_assert_int_eq(pg.ops[1].amount, 48 * 40 * 4);
	ck_assert_int_eq(prog_rt_count(&pg.ops[3]), 16 * 40);
	ck_assert_int_eq(prog_rt_count(&pg.ops[4]), 16 * 20);
	ck_assert_int_eq(prog_rt_count(&pg.ops[6]), 32 * 40);
	ck_assert_int_eq(prog_rt_count(&pg.ops[7]), 16 * 48);
	/* the TP all-reduce of N x h: micro 1 x seq_len 32 x 40 */
	ck_assert_int_eq(prog_rt_count(&pg.ops[2]), 32 * 40);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* dtype bf16: the weight gathers move bf16 (2 bytes an element), the
 * gradient reduce-scatters stay fp32 (grad_reduce_in_fp32). */
START_TEST(bf16_gathers)
{
	struct plan p;
	struct prog pg;
	size_t gathers = 0, scatters = 0;

	mkplan(&p, 2, 1, 3, 1, 12, 1);
	p.runtime.dtype = "bf16";
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	for (size_t i = 0; i < pg.n; i++) {
		const struct prog_op *op = &pg.ops[i];

		if (op->kind == OP_ALL_GATHER) {
			gathers++;
			ck_assert_str_eq(prog_rt_dtype_name(op), "bf16");
			ck_assert_int_eq(op->amount, 2 * prog_rt_count(op));
		} else if (op->kind == OP_REDUCE_SCATTER) {
			scatters++;
			ck_assert_str_eq(prog_rt_dtype_name(op), "fp32");
		}
	}
	/* 4 micro-batches a lane */
	ck_assert_uint_eq(gathers, 4 * 19);
	ck_assert_uint_eq(scatters, 4 * 10);
	ck_assert_int_eq(pg.ops[1].amount, 48 * 40 * 2);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* runtime.prefetch: a pass's first gather opens it, and each later gather
 * is issued when the weight before it is used: layer 0's qkv before the
 * embedding's TP all-reduce, proj right after qkv's. Counts are
 * unchanged. */
START_TEST(prefetch_order)
{
	struct plan p;
	struct prog jit, pf;
	char buf[64];

	mkplan(&p, 2, 1, 3, 1, 12, 1);
	ck_assert_int_eq(prog_rt_build(&jit, &p, PROG_TRAIN, "train"), 0);
	p.runtime.prefetch = 1;
	ck_assert_int_eq(prog_rt_build(&pf, &p, PROG_TRAIN, "train"), 0);
	ck_assert_uint_eq(pf.n, jit.n);
	ck_assert_uint_eq(count(&pf, OP_ALL_GATHER, "gtp"),
			  count(&jit, OP_ALL_GATHER, "gtp"));
	/* just in time: tokens, gather emb, TP embedding.out, gather qkv */
	ck_assert_int_eq(jit.ops[2].kind, OP_ALL_REDUCE);
	ck_assert_int_eq(jit.ops[3].kind, OP_ALL_GATHER);
	/* prefetch: tokens, gather emb, gather qkv, TP embedding.out,
	 * gather proj */
	ck_assert_int_eq(pf.ops[1].kind, OP_ALL_GATHER);
	ck_assert_int_eq(pf.ops[2].kind, OP_ALL_GATHER);
	ck_assert_str_eq(what(&pf, 2, buf), "layers.0.qkv");
	ck_assert_int_eq(pf.ops[3].kind, OP_ALL_REDUCE);
	ck_assert_str_eq(what(&pf, 3, buf), "embedding.out");
	ck_assert_str_eq(what(&pf, 4, buf), "layers.0.proj");
	prog_release(&jit);
	prog_release(&pf);
	plan_release(&p);
}
END_TEST

/* Sequence parallelism: the residual stream is N/T rows; the TP
 * all-reduces become reduce-scatters, each column-parallel linear's input
 * and each row-parallel linear's output gradient is all-gathered, and the
 * norm gradients are summed over TP after the data-parallel ones. */
START_TEST(sequence_parallel)
{
	struct plan p;
	struct prog pg;
	char buf[64];

	mkplan(&p, 2, 1, 1, 1, 4, 1);
	p.runtime.model.sequence_parallel = 1;
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	/* a micro-batch: RS embedding.out, 2 a layer, output.dgrad, 2 a
	 * layer; AG 2 a layer and output.in, 2 a layer and embedding.dout;
	 * AR the 3 CE statistics; a step: tp_grads */
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "tp"), 4 * 10);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "tp"), 4 * 10);
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "tp"), 4 * 3 + 1);
	/* one lane: no tokens, grads or loss all-reduce */
	ck_assert_str_eq(what(&pg, 0, buf), "embedding.out");
	ck_assert_int_eq(prog_rt_count(&pg.ops[0]), 16 * 40);
	ck_assert_str_eq(what(&pg, 1, buf), "layers.0.qkv.in");
	ck_assert_int_eq(prog_rt_count(&pg.ops[1]), 16 * 40);
	ck_assert_str_eq(what(&pg, pg.n - 2, buf), "tp_grads");
	ck_assert_int_eq(prog_rt_count(&pg.ops[pg.n - 2]), 5 * 40);
	prog_release(&pg);
	/* QK-norm: its weights' gradients are summed over TP even without
	 * SP (each TP rank sees other heads) */
	p.runtime.model.sequence_parallel = 0;
	p.runtime.model.qk_norm = 1;
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_str_eq(what(&pg, pg.n - 2, buf), "tp_grads");
	ck_assert_int_eq(prog_rt_count(&pg.ops[pg.n - 2]), 2 * 2 * 10);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* CP 2, cp_comm_type all_gather: a rank holds 16 of each sample's 32
 * tokens; per layer its keys and values are all-gathered over CP in the
 * forward (after qkv's gather) and their gradients reduce-scattered in the
 * backward (before it). */
START_TEST(context_parallel)
{
	struct plan p;
	struct prog_rt_shape s;
	struct prog pg;
	char buf[64];
	size_t i = 0;

	mkplan(&p, 2, 2, 1, 1, 4, 1); /* 4 micro-batches of 1 */
	snprintf(p.runtime.model.cp_comm_type,
		 sizeof(p.runtime.model.cp_comm_type), "all_gather");
	prog_rt_shape(&p, &s);
	ck_assert_int_eq(s.z.tokens, 16);
	ck_assert_int_eq(s.z.keys, 32);
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "cp"), 4 * 2 * 2);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "cp"), 4 * 2 * 2);
	while (i < pg.n && strcmp(what(&pg, i, buf), "layers.0.qkv.k"))
		i++;
	ck_assert_uint_lt(i, pg.n);
	/* 16 rows x 1 KV head of 10 on a TP rank (2 query groups / TP 2) */
	ck_assert_int_eq(prog_rt_count(&pg.ops[i]), 16 * 10);
	ck_assert_str_eq(prog_rt_group_name(&pg.ops[i]), "cp");
	ck_assert_str_eq(what(&pg, i + 1, buf), "layers.0.qkv.v");
	/* the TP all-reduces move this rank's 16 rows */
	ck_assert_str_eq(what(&pg, 1, buf), "embedding.out");
	ck_assert_int_eq(prog_rt_count(&pg.ops[1]), 16 * 40);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* CP 4, cp_comm_type p2p (rt_cp.c's ring): per micro-batch and layer 3
 * forward steps of keys and values (8 rows x 1 KV head of 10, twice) to
 * the next CP rank, before proj's TP all-reduce; 4 backward steps to the
 * previous one, before qkv's: keys and values, then with them a gradient
 * (twice as many), the last a gradient alone. No CP all-gather. Rank 2
 * (CP place 1) records each step as a send and a receive, forward to 2
 * and from 0, backward the other way. */
START_TEST(context_parallel_ring)
{
	struct plan p;
	struct prog pg;
	char buf[64], *rec = NULL;
	size_t i = 0, len = 0;
	long long seq = 0, counts[4] = { 160, 320, 320, 160 };
	FILE *f;

	mkplan(&p, 2, 4, 1, 1, 2, 1);
	ck_assert_int_eq(prog_rt_applies(&p, buf, sizeof(buf)), 1);
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_uint_eq(count(&pg, OP_SEND_RECV, "cp"), 2 * 2 * (3 + 4));
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "cp"), 0);
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "cp"), 0);
	while (i < pg.n && strcmp(what(&pg, i, buf), "layers.0.qkv.kv"))
		i++;
	ck_assert_uint_lt(i + 3, pg.n);
	for (int k = 0; k < 3; k++) {
		ck_assert_str_eq(what(&pg, i + k, buf), "layers.0.qkv.kv");
		ck_assert_int_eq(prog_rt_count(&pg.ops[i + k]), 160);
		ck_assert_uint_eq(pg.ops[i + k].flags,
				  PROG_SEND_FWD | PROG_RECV_FWD);
	}
	ck_assert_str_eq(what(&pg, i + 3, buf), "layers.0.proj.out");
	while (i < pg.n && strcmp(what(&pg, i, buf), "layers.1.qkv.dkv"))
		i++;
	ck_assert_uint_lt(i + 4, pg.n);
	ck_assert_str_eq(what(&pg, i - 1, buf), "layers.1.fc1.dgrad");
	for (int k = 0; k < 4; k++) {
		ck_assert_str_eq(what(&pg, i + k, buf), "layers.1.qkv.dkv");
		ck_assert_int_eq(prog_rt_count(&pg.ops[i + k]), counts[k]);
		ck_assert_uint_eq(pg.ops[i + k].flags,
				  PROG_SEND_BWD | PROG_RECV_BWD);
	}
	ck_assert_str_eq(what(&pg, i + 4, buf), "layers.1.qkv.dgrad");
	f = open_memstream(&rec, &len);
	ck_assert_ptr_nonnull(f);
	/* rank 2 = t0 c1 (TP fastest) */
	ck_assert_int_eq(prog_rt_write_record(f, &p, &pg, i + 1, 2, "train",
					      1, &seq), 0);
	fclose(f);
	/* each step: a send to one neighbour, a receive from the other */
	ck_assert_ptr_nonnull(strstr(rec, "\"coll\":\"send\",\"count\":160,"
				     "\"dtype\":\"fp32\",\"group\":\"cp\","
				     "\"group_index\":0,\"op\":null,\"peer\":2,"
				     "\"rank\":2,\"seq\":"));
	ck_assert_ptr_nonnull(strstr(rec, "\"coll\":\"recv\",\"count\":160,"
				     "\"dtype\":\"fp32\",\"group\":\"cp\","
				     "\"group_index\":0,\"op\":null,\"peer\":0,"
				     "\"rank\":2,\"seq\":"));
	ck_assert_ptr_nonnull(strstr(rec, "\"coll\":\"send\",\"count\":160,"
				     "\"dtype\":\"fp32\",\"group\":\"cp\","
				     "\"group_index\":0,\"op\":null,\"peer\":0,"
				     "\"rank\":2,\"seq\":"));
	/* two lines a step */
	ck_assert_int_eq(seq, prog_rt_line(&pg, i + 1));
	ck_assert_int_eq(prog_rt_line(&pg, i + 1) - prog_rt_line(&pg, i), 2);
	free(rec);
	snprintf(p.runtime.model.cp_comm_type,
		 sizeof(p.runtime.model.cp_comm_type), "a2a");
	ck_assert_int_eq(prog_rt_applies(&p, buf, sizeof(buf)), 0);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* Groups of one rank issue nothing: one rank runs no collective at all;
 * TP 1 has no TP ops, D 1 no gradient all-reduce over dp_cp_replicate. */
START_TEST(one_rank_groups_are_skipped)
{
	struct plan p;
	struct prog pg;

	mkplan(&p, 1, 1, 1, 1, 4, 1);
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_uint_eq(pg.n, 0);
	prog_release(&pg);
	plan_release(&p);

	mkplan(&p, 1, 1, 2, 1, 4, 1); /* 2 lanes, 2 micro-batches */
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "tp"), 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "dp_cp_replicate"), 0);
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "dp_cp"), 3);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 2 * 19);
	ck_assert_uint_eq(pg.n, 2 * 29 + 3 + 1);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* Forward only: the forward of every micro-batch, no tokens, gradients,
 * loss or barrier. */
START_TEST(forward_is_the_forward_part)
{
	struct plan p;
	struct prog pg;
	char buf[64];

	mkplan(&p, 2, 1, 3, 1, 12, 2); /* 2 micro-batches */
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_FORWARD, "get_logprobs"),
			 0);
	ck_assert_uint_eq(pg.n, 2 * (10 + 8));
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "gtp"), 0);
	ck_assert_uint_eq(count(&pg, OP_BARRIER, "world"), 0);
	ck_assert_str_eq(what(&pg, 0, buf), "embedding");
	ck_assert_str_eq(what(&pg, pg.n - 1, buf), "ce.sumexp");
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* prog_build gives the runtime programs for train and forward calls when
 * the options ask for the runtime model, and labels name its collective. */
START_TEST(prog_build_switches_and_labels)
{
	struct plan p;
	struct prog pg;
	struct prog_opts o;
	char lab[256];

	mkplan(&p, 2, 1, 3, 1, 12, 1);
	prog_opts_init(&o);
	o.runtime_model = 1;
	ck_assert_int_eq(prog_build(&pg, &p, NULL, PROG_TRAIN, 0, &o), 0);
	ck_assert_ptr_nonnull(pg.rt_call);
	prog_op_label(&pg, &pg.ops[1], lab, sizeof(lab));
	ck_assert_str_eq(lab, "the GTP all-gather \"embedding\" (forward, "
			 "micro-batch 0; gtplan-run's collective #1 of train)");
	prog_op_label(&pg, &pg.ops[0], lab, sizeof(lab));
	ck_assert_str_eq(lab, "the dp_cp all-reduce \"tokens\" (step; "
			 "gtplan-run's collective #0 of train)");
	prog_release(&pg);
	/* refit keeps the Megatron program */
	ck_assert_int_eq(prog_build(&pg, &p, NULL, PROG_REFIT_IPC, 0, &o), 0);
	ck_assert_ptr_null(pg.rt_call);
	prog_release(&pg);
	o.runtime_model = 0;
	ck_assert_int_eq(prog_build(&pg, &p, NULL, PROG_TRAIN, 0, &o), 0);
	ck_assert_ptr_null(pg.rt_call);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* Record lines are coll.c's, byte for byte. */
START_TEST(record_lines)
{
	struct plan p;
	struct prog pg;
	char *buf = NULL;
	size_t len = 0;
	long long seq = 7;
	FILE *f;

	mkplan(&p, 2, 1, 3, 1, 12, 1);
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	/* rank 3 = t1 g1: tp group 1, gtp group 1, dp_cp group 1 */
	ck_assert_int_eq(prog_rt_write_record(f, &p, &pg, 2, 3, "train", 2,
					      &seq), 0);
	fclose(f);
	ck_assert_str_eq(buf,
		"{\"bytes\":8,\"call\":\"train\",\"coll\":\"all-reduce\","
		"\"count\":1,\"dtype\":\"fp64\",\"group\":\"dp_cp\","
		"\"group_index\":1,\"op\":\"sum\",\"rank\":3,\"seq\":7,"
		"\"step\":2,\"what\":\"tokens\"}\n"
		"{\"bytes\":7680,\"call\":\"train\",\"coll\":\"all-gather\","
		"\"count\":1920,\"dtype\":\"fp32\",\"group\":\"gtp\","
		"\"group_index\":1,\"op\":null,\"rank\":3,\"seq\":8,"
		"\"step\":2,\"what\":\"embedding\"}\n");
	ck_assert_int_eq(seq, 9);
	free(buf);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* PP 2 (1 rank a stage, untied, 2 layers, 3 micro-batches): stage 0 has
 * the embedding and layer 0, stage 1 layer 1 and the head; the exchanges
 * follow 1F1B (stage 0: W = 1 warm-up forward) and pair: each stage's
 * sends are the other's receives, in order; the loss reaches stage 0 by
 * loss.pp; their record lines are send/recv with the peer's place. */
START_TEST(pipeline_stages)
{
	struct plan p;
	struct prog pg[2];
	const char *want0[] = { "act.mb0", "act.mb1,grad.mb0",
				"act.mb2,grad.mb1", "grad.mb2" };
	char lab[64], *buf = NULL;
	size_t len = 0, nx[2] = { 0, 0 };
	long long seq = 0;
	FILE *f;

	mkplan_pp(&p, 1, 1, 1, 2, 1, 3, 1);
	for (int st = 0; st < 2; st++) {
		ck_assert_int_eq(prog_rt_build_stage(&pg[st], &p, PROG_TRAIN,
						     "train", st), 0);
		ck_assert_int_eq(pg[st].first_layer, st);
		for (size_t i = 0; i < pg[st].n; i++) {
			const struct prog_op *op = &pg[st].ops[i];

			if (op->kind != OP_P2P)
				continue;
			prog_rt_what(&pg[st], op, lab, sizeof(lab));
			if (st == 0)
				ck_assert_str_eq(lab, want0[nx[0]]);
			/* stage 0 faces the next stage only, 1 the previous */
			ck_assert_int_eq(!(op->flags & PROG_TO_NEXT), st);
			nx[st]++;
		}
	}
	ck_assert_uint_eq(nx[0], 4);
	ck_assert_uint_eq(nx[1], 4);
	/* the output layer only on the last stage, the embedding on the
	 * first: their GTP groups are of one rank here, so count the TP-free
	 * loss.pp all-reduce instead, on both */
	ck_assert_uint_eq(count(&pg[0], OP_ALL_REDUCE, "pp"), 1);
	ck_assert_uint_eq(count(&pg[1], OP_ALL_REDUCE, "pp"), 1);
	f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	for (size_t i = 0; i < pg[1].n; i++)
		if (pg[1].ops[i].kind == OP_P2P) {
			ck_assert_int_eq(prog_rt_write_record(f, &p, &pg[1], i + 1,
							      1, "train", 1,
							      &seq), 0);
			break;
		}
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf,
		"{\"bytes\":5120,\"call\":\"train\",\"coll\":\"recv\","
		"\"count\":1280,\"dtype\":\"fp32\",\"group\":\"pp\","
		"\"group_index\":0,\"op\":null,\"peer\":0,\"rank\":1,"));
	free(buf);
	prog_release(&pg[0]);
	prog_release(&pg[1]);
	plan_release(&p);
}
END_TEST

/* The layouts gtplan-run refuses. */
START_TEST(applies_only_where_the_runtime_runs)
{
	struct plan p;
	char why[256];

	mkplan(&p, 2, 2, 2, 1, 12, 1);
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 1);
	p.runtime.seq_len = 30;
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "2 x CP = 4 chunks"));
	p.runtime.seq_len = 32;
	p.runtime.model.ffn = 97;
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "MLP size 97"));
	p.runtime.model.ffn = 96;
	p.tp = 4; /* above the 2 query groups */
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "2 query groups"));
	p.tp = 2;
	p.runtime.model.moe = 1;
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "mixture-of-experts"));
	p.runtime.model.moe = 0;
	p.pp = 2; /* 2 layers split over 2 stages; 3 do not (GT600) */
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 1);
	p.runtime.model.layers = 3;
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "GT600: 3 layers do not split "
				     "over PP 2"));
	p.runtime.model.layers = 2;
	p.pp = 1;
	p.runtime.model.virtual_stages = 2;
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "GT622"));
	p.runtime.model.virtual_stages = 0;
	p.ep = 2;
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "EP 2"));
	plan_release(&p);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "train_counts", train_counts_per_collective },
		{ "train_order", train_order_and_labels },
		{ "shards", shard_sizes_with_padding },
		{ "sequence_parallel", sequence_parallel },
		{ "context_parallel", context_parallel },
		{ "context_parallel_ring", context_parallel_ring },
		{ "one_rank_groups", one_rank_groups_are_skipped },
		{ "forward", forward_is_the_forward_part },
		{ "prog_build", prog_build_switches_and_labels },
		{ "record", record_lines },
		{ "bf16", bf16_gathers },
		{ "prefetch", prefetch_order },
		{ "applies", applies_only_where_the_runtime_runs },
		{ "pipeline", pipeline_stages },
	};

	return RUN_CASES("program_rt", cases, 0);
}
