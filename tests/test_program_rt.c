/*
 * The runtime model's programs (sim/program_rt.c): the collectives
 * gtplan-run issues per call, their counts, shard sizes with the GTP
 * padding, one-rank groups left out, the record lines and the labels.
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

/* TP x CP x G x D ranks (PP 1) with the runtime model of
 * tests/runtime/parity.yaml: hidden 40, ffn 96, 2 layers, vocab 255,
 * seq_len 32. */
static void mkplan(struct plan *p, long long tp, long long cp, long long g,
		   long long d, long long gbs, long long mbs)
{
	plan_by_hand(p, tp, cp, g, 1, d, gbs, mbs, "4d");
	p->runtime.hidden = 40;
	p->runtime.ffn = 96;
	p->runtime.layers = 2;
	p->runtime.vocab = 255;
	p->runtime.seq_len = 32;
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

/* Per micro-batch: GTP all-gathers 3 + 4 layers, GTP reduce-scatters
 * 1 + 2 layers, TP all-reduces 5 + 2 layers; per step one gradient
 * all-reduce over dp_cp_replicate, three over dp_cp, one barrier. */
START_TEST(train_counts_per_collective)
{
	struct plan p;
	struct prog pg;

	mkplan(&p, 2, 1, 3, 2, 24, 2); /* L 6: 24 / 6 / 2 = 2 micro-batches */
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_int_eq(pg.microbatches, 2);
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 2 * (3 + 4 * 2));
	ck_assert_uint_eq(count(&pg, OP_REDUCE_SCATTER, "gtp"), 2 * (1 + 2 * 2));
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "tp"), 2 * (5 + 2 * 2));
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "dp_cp_replicate"), 1);
	ck_assert_uint_eq(count(&pg, OP_ALL_REDUCE, "dp_cp"), 3);
	ck_assert_uint_eq(count(&pg, OP_BARRIER, "world"), 1);
	ck_assert_uint_eq(pg.n, 2 * (11 + 5 + 9) + 5);
	ck_assert_str_eq(pg.rt_call, "train");
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* The order of rt_train.c: tokens first; per micro-batch the forward
 * (embedding, its TP all-reduce, fc1, fc2, fc2's TP all-reduce per layer,
 * the output layer, the CE statistics), the backward (last layer first,
 * fc2 then fc1, the embedding's scatter last); then grads, norm_grads,
 * loss and the barrier. */
START_TEST(train_order_and_labels)
{
	static const char *const want[] = {
		"tokens", "embedding", "embedding.out", "layers.0.fc1",
		"layers.0.fc2", "layers.0.fc2", "embedding", "ce.max",
		"ce.target", "ce.sumexp", "embedding", "output.dgrad",
		"layers.0.fc2", "layers.0.fc2", "layers.0.fc1", "layers.0.fc1",
		"layers.0.fc1", "embedding", "grads", "norm_grads", "loss",
		"step",
	};
	static const unsigned kinds[] = {
		OP_ALL_REDUCE, OP_ALL_GATHER, OP_ALL_REDUCE, OP_ALL_GATHER,
		OP_ALL_GATHER, OP_ALL_REDUCE, OP_ALL_GATHER, OP_ALL_REDUCE,
		OP_ALL_REDUCE, OP_ALL_REDUCE, OP_ALL_GATHER, OP_ALL_REDUCE,
		OP_ALL_GATHER, OP_REDUCE_SCATTER, OP_ALL_GATHER, OP_ALL_REDUCE,
		OP_REDUCE_SCATTER, OP_REDUCE_SCATTER, OP_ALL_REDUCE,
		OP_ALL_REDUCE, OP_ALL_REDUCE, OP_BARRIER,
	};
	struct plan p;
	struct prog pg;
	char buf[64];

	mkplan(&p, 2, 1, 2, 2, 4, 1); /* L 4: one micro-batch */
	p.runtime.layers = 1;
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	ck_assert_uint_eq(pg.n, sizeof(want) / sizeof(*want));
	for (size_t i = 0; i < pg.n; i++) {
		ck_assert_str_eq(what(&pg, i, buf), want[i]);
		ck_assert_uint_eq(pg.ops[i].kind, kinds[i]);
	}
	ck_assert_str_eq(prog_rt_op_name(&pg.ops[7]), "max");
	ck_assert_str_eq(prog_rt_op_name(&pg.ops[8]), "sum");
	ck_assert_ptr_null(prog_rt_op_name(&pg.ops[1]));
	ck_assert_str_eq(prog_rt_dtype_name(&pg.ops[0]), "fp64");
	ck_assert_str_eq(prog_rt_dtype_name(&pg.ops[1]), "fp32");
	ck_assert_str_eq(prog_rt_dtype_name(&pg.ops[pg.n - 1]), "none");
	ck_assert_str_eq(prog_rt_group_name(&pg.ops[0]), "dp_cp");
	ck_assert_str_eq(prog_rt_group_name(&pg.ops[18]), "dp_cp_replicate");
	ck_assert_str_eq(prog_rt_group_name(&pg.ops[pg.n - 1]), "world");
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* TP 2, G 3: the TP-local embedding has 128 rows (vocab 255 padded to
 * 256), padded to 144 (a multiple of 16 x 3): 48 rows x 40; fc1's 48 rows
 * need no padding: 16 x 40; fc2's 40 rows pad to 48: 16 x 48. G 1 pads
 * nothing. */
START_TEST(shard_sizes_with_padding)
{
	struct plan p;
	struct prog_rt_shape s;
	struct prog pg;

	ck_assert_int_eq(prog_rt_shard(128, 40, 3), 48 * 40);
	ck_assert_int_eq(prog_rt_shard(48, 40, 3), 16 * 40);
	ck_assert_int_eq(prog_rt_shard(40, 48, 3), 16 * 48);
	ck_assert_int_eq(prog_rt_shard(40, 48, 1), 40 * 48);
	ck_assert_int_eq(prog_rt_shard(40, 48, 2), 64 / 2 * 48); /* 16 x 2 */
	mkplan(&p, 2, 1, 3, 1, 12, 1);
	prog_rt_shape(&p, &s);
	ck_assert_int_eq(s.vl, 128);
	ck_assert_int_eq(s.shard_emb, 48 * 40);
	ck_assert_int_eq(s.shard_fc1, 16 * 40);
	ck_assert_int_eq(s.shard_fc2, 16 * 48);
	ck_assert_int_eq(s.n_shard, 48 * 40 + 2 * (16 * 40 + 16 * 48));
	ck_assert_int_eq(s.n_rep, 3 * 40);
	ck_assert_int_eq(prog_rt_build(&pg, &p, PROG_TRAIN, "train"), 0);
	/* op 1: the embedding's gather; op 3: layer 0's fc1; op 4: fc2 */
	ck_assert_int_eq(prog_rt_count(&pg.ops[1]), 48 * 40);
	ck_assert_int_eq(pg.ops[1].amount, 48 * 40 * 4);
	ck_assert_int_eq(prog_rt_count(&pg.ops[3]), 16 * 40);
	ck_assert_int_eq(prog_rt_count(&pg.ops[4]), 16 * 48);
	/* the TP all-reduce of T x h: micro 1 x seq_len 32 x 40 */
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
	/* 4 micro-batches a lane; each gathers 3 + 4 x 2 layers and
	 * reduce-scatters 1 + 2 x 2 */
	ck_assert_uint_eq(gathers, 4 * 11);
	ck_assert_uint_eq(scatters, 4 * 5);
	ck_assert_int_eq(pg.ops[1].amount, 48 * 40 * 2);
	prog_release(&pg);
	plan_release(&p);
}
END_TEST

/* runtime.prefetch: a pass's first gather opens it, and each later gather
 * is issued when the weight before it is used: layer 0's fc1 before the
 * embedding's TP all-reduce, fc2 right after fc1's. Counts are unchanged. */
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
	/* just in time: tokens, gather emb, TP embedding.out, gather fc1 */
	ck_assert_int_eq(jit.ops[2].kind, OP_ALL_REDUCE);
	ck_assert_int_eq(jit.ops[3].kind, OP_ALL_GATHER);
	/* prefetch: tokens, gather emb, gather fc1, TP embedding.out,
	 * gather fc2 */
	ck_assert_int_eq(pf.ops[1].kind, OP_ALL_GATHER);
	ck_assert_int_eq(pf.ops[2].kind, OP_ALL_GATHER);
	ck_assert_str_eq(what(&pf, 2, buf), "layers.0.fc1");
	ck_assert_int_eq(pf.ops[3].kind, OP_ALL_REDUCE);
	ck_assert_str_eq(what(&pf, 3, buf), "embedding.out");
	ck_assert_str_eq(what(&pf, 4, buf), "layers.0.fc2");
	prog_release(&jit);
	prog_release(&pf);
	plan_release(&p);
}
END_TEST

/* CP 2 halves the tokens of a micro-batch on each rank. */
START_TEST(cp_halves_the_tokens)
{
	struct plan p;
	struct prog_rt_shape s;

	mkplan(&p, 2, 2, 2, 1, 12, 3);
	prog_rt_shape(&p, &s);
	ck_assert_int_eq(s.local_seq, 16);
	ck_assert_int_eq(s.tokens, 3 * 16);
	ck_assert_int_eq(s.micro_batches, 12 / 2 / 3);
	plan_release(&p);
}
END_TEST

/* Groups of one rank issue nothing: one rank runs no collective at all;
 * TP 1 has no TP ops, D 1 and CP 1 no gradient all-reduce over
 * dp_cp_replicate. */
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
	ck_assert_uint_eq(count(&pg, OP_ALL_GATHER, "gtp"), 2 * 11);
	ck_assert_uint_eq(pg.n, 2 * 16 + 3 + 1);
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
	ck_assert_uint_eq(pg.n, 2 * (2 + 3 * 2 + 4));
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
	p.runtime.ffn = 97;
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "ffn 97 is not divisible by TP 2"));
	p.runtime.ffn = 96;
	p.pp = 2;
	ck_assert_int_eq(prog_rt_applies(&p, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "PP 2"));
	p.pp = 1;
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
		{ "cp_tokens", cp_halves_the_tokens },
		{ "one_rank_groups", one_rank_groups_are_skipped },
		{ "forward", forward_is_the_forward_part },
		{ "prog_build", prog_build_switches_and_labels },
		{ "record", record_lines },
		{ "bf16", bf16_gathers },
		{ "prefetch", prefetch_order },
		{ "applies", applies_only_where_the_runtime_runs },
	};

	return RUN_CASES("program_rt", cases, 0);
}
