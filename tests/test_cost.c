/*
 * The cost model: memory per rank against hand computations, collective
 * times (monotonic in bytes, slower across nodes, ring vs tree), call
 * estimates, and the hardware findings GT530, GT531, GT532.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "cost.h"
#include "diag.h"
#include "plan.h"
#include "program.h"
#include "simulate.h"
#include "harness.h"
#include "sim_fixture.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* A Megatron config: model, TP, weight shards S (0: null), PP, nodes x
 * GPUs, batches, sequence length, and extra YAML under policy.megatron_cfg
 * (indented 4) and at the top level. */
static char *cfg(const char *model, int tp, int shards, int pp, int nodes,
		 int gpn, int gbs, int mbs, int seq, const char *meg,
		 const char *top)
{
	static char buf[4096];
	char s[32];

	if (shards)
		snprintf(s, sizeof(s), "%d", shards);
	else
		snprintf(s, sizeof(s), "null");
	snprintf(buf, sizeof(buf),
		 "policy:\n"
		 "  model_name: \"%s\"\n"
		 "  train_global_batch_size: %d\n"
		 "  train_micro_batch_size: %d\n"
		 "  max_total_sequence_length: %d\n"
		 "  megatron_cfg:\n"
		 "    enabled: true\n"
		 "    tensor_model_parallel_size: %d\n"
		 "    tensor_parallel_num_weight_shards: %s\n"
		 "    pipeline_model_parallel_size: %d\n"
		 "    sequence_parallel: true\n"
		 "%s"
		 "cluster:\n"
		 "  num_nodes: %d\n"
		 "  gpus_per_node: %d\n"
		 "%s",
		 model, gbs, mbs, seq, tp, s, pp, meg ? meg : "", nodes, gpn,
		 top ? top : "");
	return buf;
}

/* Parses, plans and simulates every call. */
static void run(struct sim_fx *f, const char *yaml)
{
	ck_assert_int_eq(sim_fx_run(f, yaml), 0);
	ck_assert(f->plan.grid_ok);
	ck_assert(f->sim.ran);
}

static const struct cost_call *est_of(const struct sim_fx *f, const char *call)
{
	for (size_t i = 0; i < f->sim.n_res; i++)
		if (strcmp(f->sim.res[i].call->name, call) == 0)
			return &f->sim.est[i];
	ck_abort_msg("no call %s", call);
	return NULL;
}

#define NEAR(a, b) ck_assert_msg(fabs((double)(a) - (double)(b)) <= \
	1e-9 * fabs((double)(b)) + 1, "%.1f != %.1f", (double)(a), (double)(b))

#define LLAMA8 "meta-llama/Llama-3.1-8B-Instruct"
#define LLAMA70 "meta-llama/Llama-3.1-70B-Instruct"

/* Llama-3.1-8B (32 layers, hidden 4096, FFN 14336 SwiGLU, 32 heads, 8 KV
 * heads of 128, vocab 128256 untied), TP 4, G 3, D 2 on 3 nodes x 8. */
START_TEST(memory_llama8b_tp4_g3_by_hand)
{
	struct sim_fx f;
	const struct cost_mem_stage *m;
	/* GTP shard of each TP-local weight: rows padded to a multiple of
	 * pad x G = 48, split in 3 */
	double qkv = 1536.0 / 3 * 4096;           /* 6144/4 rows, no pad */
	double proj = 4128.0 / 3 * (4096 / 4);    /* 4096 rows -> 4128 */
	double fc1 = 7200.0 / 3 * 4096;           /* 28672/4 = 7168 -> 7200 */
	double fc2 = 4128.0 / 3 * (14336 / 4);
	double shard = qkv + proj + fc1 + fc2, repl = 2 * 4096;
	/* vocab padded to a multiple of 128 x TP = 512: 128512 */
	double emb = 128512.0 / 4 * 4096;
	double params = 32 * (shard + repl) + 2 * emb + 4096;
	double tokens = 4 * 4096, th = tokens * 4096;

	run(&f, cfg(LLAMA8, 4, 12, 1, 3, 8, 480, 4, 4096, NULL, NULL));
	ck_assert_int_eq(f.sim.mem.status, MEM_FITS);
	ck_assert_uint_eq(f.sim.mem.n_stages, 1);
	m = &f.sim.mem.stages[0];
	ck_assert_int_eq(m->layers, 32);
	ck_assert_int_eq(m->in_flight, 1);
	NEAR(m->params, params);
	NEAR(m->item[MEM_WEIGHTS], 2 * params);
	/* roughly 2 B x 8.03e9 / 12 for the layers, the embedding and
	 * output layer split over TP only */
	ck_assert(m->item[MEM_WEIGHTS] > 2 * 8.03e9 / 12);
	ck_assert(m->item[MEM_WEIGHTS] < 2 * 8.03e9 / 12 + 2 * 2 * emb);
	NEAR(m->item[MEM_GATHERED], 2 * 2 * 3 * shard);
	NEAR(m->item[MEM_GRADS], 4 * params);
	NEAR(m->item[MEM_OPTIMIZER], 12 * params / 2); /* D x CP = 2 */
	/* Korthikanti, SP: (10 + 8 + (2 x 28672 + 2 x 14336) / 4096) / TP */
	NEAR(m->item[MEM_ACTIVATIONS], 32 * th * (10.0 + 8 + 21) / 4);
	/* the logits path: bf16 logits, their fp32 copy and the fp32
	 * softmax (reused as its gradient), 10 B per element of the TP
	 * slice (cost_mem.c) */
	NEAR(m->item[MEM_LOGITS], tokens * 128512 / 4 * 10);
	NEAR(m->optimistic, m->total - m->item[MEM_ACTIVATIONS] +
	     32 * 2 * th / 4);
	ck_assert(m->total < 141 * GIB);
	ck_assert_uint_eq(sim_fx_count(&f, "GT530") + sim_fx_count(&f, "GT532"),
			  0);
	sim_fx_release(&f);
}
END_TEST

START_TEST(memory_pipeline_stages_and_options)
{
	struct sim_fx f;
	const struct cost_mem_stage *s0, *s3;
	double th = 4096.0 * 4096;

	/* PP 4 over 32 GPUs, D 2: 60 micro-batches per lane */
	run(&f, cfg(LLAMA8, 4, 0, 4, 4, 8, 480, 4, 4096,
		    "    activation_checkpointing: true\n"
		    "    optimizer:\n"
		    "      use_distributed_optimizer: false\n", NULL));
	ck_assert_uint_eq(f.sim.mem.n_stages, 4);
	s0 = &f.sim.mem.stages[0];
	s3 = &f.sim.mem.stages[3];
	ck_assert_int_eq(s0->layers, 8);
	ck_assert_int_eq(s0->in_flight, 4);
	ck_assert_int_eq(s3->in_flight, 1);
	/* no GTP: no gather buffers; logits only on the last stage */
	ck_assert(s0->item[MEM_GATHERED] == 0);
	ck_assert(s0->item[MEM_LOGITS] == 0 && s3->item[MEM_LOGITS] > 0);
	/* not distributed: the whole Adam state, 12 B/param */
	NEAR(s0->item[MEM_OPTIMIZER], 12.0 * (double)s0->params);
	/* full recompute: layer inputs of 4 micro-batches, one layer's full
	 * activations */
	NEAR(s0->item[MEM_ACTIVATIONS], 8 * 4 * (2 * 4 * th / 4) +
	     4 * th * 39.0 / 4);
	sim_fx_release(&f);
}
END_TEST

/* GT530 only when even the optimistic estimate does not fit. */
START_TEST(gt530_70b_without_and_with_gtp)
{
	struct sim_fx f;
	const struct diag *d;

	run(&f, cfg(LLAMA70, 8, 0, 1, 1, 8, 32, 1, 4096, NULL, NULL));
	ck_assert_int_eq(f.sim.mem.status, MEM_EXCEEDS);
	d = sim_fx_first(&f, "GT530");
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(strstr(d->msg, "optimizer"));
	ck_assert_ptr_nonnull(d->hint);
	ck_assert_ptr_nonnull(strstr(d->hint, "tensor_parallel_num_weight_shards"));
	sim_fx_release(&f);

	/* 64 GPUs, each weight in 64 shards (G 8) */
	run(&f, cfg(LLAMA70, 8, 64, 1, 8, 8, 64, 1, 4096, NULL, NULL));
	ck_assert_int_eq(f.sim.mem.status, MEM_FITS);
	ck_assert_uint_eq(sim_fx_count(&f, "GT530"), 0);
	sim_fx_release(&f);

	/* a smaller GPU makes the same layout not fit */
	run(&f, cfg(LLAMA70, 8, 64, 1, 8, 8, 64, 1, 4096, NULL,
		    "gtplan:\n  gpu_memory_gb: 8\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT530"), 1);
	sim_fx_release(&f);
}
END_TEST

/* GT532: fits with recompute, not with the activations as configured. */
START_TEST(gt532_activations_too_large)
{
	struct sim_fx f;

	run(&f, cfg(LLAMA8, 1, 0, 1, 1, 8, 16, 2, 16384, NULL, NULL));
	ck_assert_int_eq(f.sim.mem.status, MEM_TIGHT);
	ck_assert_uint_eq(sim_fx_count(&f, "GT532"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT530"), 0);
	ck_assert_ptr_nonnull(strstr(sim_fx_first(&f, "GT532")->msg,
				     "activations"));
	sim_fx_release(&f);

	run(&f, cfg(LLAMA8, 1, 0, 1, 1, 8, 16, 2, 16384,
		    "    activation_checkpointing: true\n", NULL));
	ck_assert_uint_eq(sim_fx_count(&f, "GT532"), 0);
	sim_fx_release(&f);
}
END_TEST

START_TEST(memory_skipped_without_a_shape)
{
	struct sim_fx f;

	run(&f, cfg("some/unknown-model", 4, 12, 1, 3, 8, 480, 4, 4096, NULL,
		    NULL));
	ck_assert_int_eq(f.sim.mem.status, MEM_SKIPPED);
	ck_assert_ptr_nonnull(strstr(f.sim.mem.skipped, "unknown"));
	ck_assert(!est_of(&f, "train")->valid);
	ck_assert_uint_eq(sim_fx_count(&f, "GT530") + sim_fx_count(&f, "GT532"),
			  0);
	sim_fx_release(&f);
}
END_TEST

/* No model named: the memory is gtplan-run's own allocation (fp32),
 * here for tests/runtime/parity.yaml's decoder (4 heads of 10, 4 query
 * groups, untied) on TP 2, G 3: GTP shards of 48 x 40 (embedding and
 * output: 128 vocabulary rows padded to 144), 32 x 40 (qkv: 60 rows
 * padded to 96), 16 x 20 (proj: 40 rows padded to 48), 32 x 40 (fc1's
 * 96 rows) and 16 x 48 (fc2); N = 32 tokens. */
START_TEST(memory_of_the_runtime_model)
{
	static const char yaml[] =
		"policy:\n"
		"  train_global_batch_size: 12\n"
		"  train_micro_batch_size: 1\n"
		"  megatron_cfg:\n"
		"    enabled: true\n"
		"    tensor_model_parallel_size: 2\n"
		"    tensor_parallel_num_weight_shards: 6\n"
		"cluster:\n"
		"  num_nodes: 1\n"
		"  gpus_per_node: 6\n"
		"gtplan:\n"
		"  runtime: {hidden: 40, ffn: 96, layers: 2, seq_len: 32, "
		"vocab: 255}\n";
	struct sim_fx f;
	const struct cost_mem_stage *m;
	double n = 2 * 48 * 40 + 2 * (32 * 40 + 16 * 20 + 32 * 40 + 16 * 48) +
		   5 * 40;
	/* a layer: x, n1, xm, n2, two rstd; q, k, v, o; lse; fc1's output
	 * (2 x 48) and SwiGLU's; the rest: xL, z and three gradients of
	 * 32 x 40, rstdf, full_h, the 4 CE statistics, the attention
	 * gradients, du and dsw */
	double layer = 4 * 32 * 40 + 2 * 32 + 2 * 32 * (20 + 20) + 2 * 32 +
		       3 * 32 * 48;
	double acts = 2 * layer + 5 * 32 * 40 + 32 + 32 * 40 + 4 * 32 +
		      2 * 32 * (20 + 20) + 3 * 32 * 48;

	run(&f, yaml);
	ck_assert_int_eq(f.sim.mem.status, MEM_FITS);
	ck_assert_uint_eq(f.sim.mem.n_stages, 1);
	m = &f.sim.mem.stages[0];
	ck_assert_int_eq(m->params, (long long)n);
	ck_assert_int_eq(m->layers, 2);
	NEAR(m->item[MEM_WEIGHTS], 4 * n);
	NEAR(m->item[MEM_GRADS], 4 * n);
	NEAR(m->item[MEM_OPTIMIZER], 8 * n);
	/* full and its gradient (144 x 40), one shard, the embedding's
	 * gradient */
	NEAR(m->item[MEM_GATHERED], 4.0 * (2 * 144 * 40 + 48 * 40 + 144 * 40));
	/* and the token ids: tokens, targets, positions */
	NEAR(m->item[MEM_ACTIVATIONS], 4 * acts + 4 * 3 * 32);
	NEAR(m->item[MEM_LOGITS], 4.0 * 32 * 128);
	sim_fx_release(&f);
}
END_TEST

/* ---- time ------------------------------------------------------------- */

START_TEST(collective_time_monotonic)
{
	struct cost_settings s;
	unsigned kinds[] = { OP_ALL_GATHER, OP_REDUCE_SCATTER, OP_ALL_REDUCE,
			     OP_BROADCAST, OP_ALL_TO_ALL, OP_P2P };

	cost_settings_init(&s);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
		double prev = -1;

		for (long long b = 1; b <= (1LL << 34); b *= 8) {
			double in = cost_coll_us(&s, kinds[k], 8, b, 0);
			double out = cost_coll_us(&s, kinds[k], 8, b, 1);

			ck_assert(in > prev);
			ck_assert(out > in);
			prev = in;
		}
	}
	/* a group of one does nothing */
	ck_assert(cost_coll_us(&s, OP_ALL_REDUCE, 1, 1 << 20, 0) == 0);
	/* nccl-tests: all-gather of a 1 GB array over 8 at 370 GB/s busbw */
	NEAR(cost_coll_us(&s, OP_ALL_GATHER, 8, 1000000000 / 8, 0),
	     7 * 1.5 + 1e9 * 7 / 8 / 370e3);
	/* all-reduce: ring for big buffers, tree for small ones on many */
	NEAR(cost_coll_us(&s, OP_ALL_REDUCE, 8, 1LL << 30, 0),
	     14 * 1.5 + 2.0 * 7 / 8 * (1LL << 30) / 370e3);
	NEAR(cost_coll_us(&s, OP_ALL_REDUCE, 1024, 8, 1),
	     2 * 10 * 5.0 + 2.0 * 8 / 48e3);
	/* compute: 989 TFLOP/s x 45% */
	NEAR(cost_compute_us(&s, 989e12 * 0.45), 1e6);
}
END_TEST

START_TEST(train_estimate_parts)
{
	struct sim_fx f;
	const struct cost_call *t, *lp;

	run(&f, cfg(LLAMA8, 4, 12, 1, 3, 8, 480, 4, 4096, NULL, NULL));
	t = est_of(&f, "train");
	lp = est_of(&f, "get_logprobs");
	ck_assert(t->valid && lp->valid);
	/* 6 flops per parameter and token in all (2 forward, 4 backward):
	 * 480 x 4096 tokens, 8.03e9 params, over 24 GPUs at 445 TFLOP/s */
	ck_assert(t->compute_us > 0.9 * 6 * 8.03e9 * 480 * 4096 / 24 /
		  (989e12 * 0.45) * 1e6);
	ck_assert(t->compute_us < 1.1 * 6 * 8.03e9 * 480 * 4096 / 24 /
		  (989e12 * 0.45) * 1e6);
	NEAR(t->total_us, t->compute_us + t->comm_us + t->wait_us);
	ck_assert(lp->total_us < t->total_us);
	/* GTP gathers cross nodes (12 GPUs a copy, nodes of 8) but hide */
	ck_assert(t->gtp_us > 0);
	ck_assert(t->gtp_exposed_us < 0.05 * t->total_us);
	ck_assert(t->hidden_us > 0);
	ck_assert(est_of(&f, "sft_v2_train")->total_us == t->total_us);
	sim_fx_release(&f);
}
END_TEST

START_TEST(time_grows_with_bytes_and_across_nodes)
{
	struct sim_fx a, b, c, d;

	/* longer sequences: more bytes and flops */
	run(&a, cfg(LLAMA8, 16, 0, 1, 2, 8, 32, 1, 2048, NULL, NULL));
	run(&b, cfg(LLAMA8, 16, 0, 1, 2, 8, 32, 1, 8192, NULL, NULL));
	ck_assert(est_of(&b, "train")->comm_us > est_of(&a, "train")->comm_us);
	/* the same TP 16 inside one NVLink domain of 2 nodes */
	run(&c, cfg(LLAMA8, 16, 0, 1, 2, 8, 32, 1, 2048, NULL,
		    "gtplan:\n  interconnect:\n    nvlink_domain_size: 16\n"));
	ck_assert(est_of(&c, "train")->comm_us < est_of(&a, "train")->comm_us);
	ck_assert(est_of(&a, "train")->top_spans);
	/* no overlap: GTP traffic on the critical path */
	run(&d, cfg(LLAMA8, 4, 12, 1, 3, 8, 480, 4, 4096, NULL,
		    "gtplan:\n  hardware:\n    overlap: none\n"));
	ck_assert(est_of(&d, "train")->hidden_us == 0);
	ck_assert(est_of(&d, "train")->comm_us >
		  est_of(&d, "train")->gtp_us);
	sim_fx_release(&a);
	sim_fx_release(&b);
	sim_fx_release(&c);
	sim_fx_release(&d);
}
END_TEST

/* PP stages wait for each other: the pipeline bubble. */
START_TEST(pipeline_bubble_waits)
{
	struct sim_fx f;
	const struct cost_call *t;

	run(&f, cfg(LLAMA8, 4, 0, 4, 2, 8, 32, 1, 4096, NULL, NULL));
	t = est_of(&f, "train");
	ck_assert(t->valid);
	ck_assert(t->wait_us > 0);
	ck_assert(t->stage >= 0 && t->stage < 4);
	sim_fx_release(&f);
}
END_TEST

/* ---- GT531 ------------------------------------------------------------ */

START_TEST(gt531_tp_across_nodes)
{
	struct sim_fx f;
	const struct diag *d;

	run(&f, cfg(LLAMA8, 16, 0, 1, 2, 8, 32, 1, 4096, NULL, NULL));
	d = sim_fx_first(&f, "GT531");
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(d->severity, DIAG_WARNING);
	ck_assert_ptr_nonnull(strstr(d->msg, "TP group 0 is ranks 0-15 on "
				     "nodes 0, 1"));
	ck_assert_ptr_nonnull(d->hint);
	sim_fx_release(&f);

	run(&f, cfg(LLAMA8, 8, 0, 1, 2, 8, 32, 1, 4096, NULL, NULL));
	ck_assert_uint_eq(sim_fx_count(&f, "GT531"), 0);
	sim_fx_release(&f);

	/* cluster.segment_size: two nodes share one NVLink domain */
	run(&f, cfg(LLAMA8, 16, 0, 1, 2, 8, 32, 1, 4096, NULL,
		    "  segment_size: 2\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT531"), 0);
	sim_fx_release(&f);
}
END_TEST

START_TEST(gt531_gtp_only_when_exposed)
{
	struct sim_fx f;
	long long ex;

	/* GTP groups span nodes (ranks 0, 4, 8) but compute hides them */
	run(&f, cfg(LLAMA8, 4, 12, 1, 3, 8, 480, 4, 4096, NULL, NULL));
	ck_assert(cost_group_spans(&f.sim.cost, prog_kind("gtp"), &ex));
	ck_assert_int_eq(ex, 0);
	ck_assert(!cost_group_spans(&f.sim.cost, prog_kind("tp"), NULL));
	ck_assert_uint_eq(sim_fx_count(&f, "GT531"), 0);
	/* ... and says so, as a note */
	ck_assert_uint_eq(sim_fx_count(&f, "GT533"), 1);
	ck_assert_ptr_nonnull(strstr(sim_fx_first(&f, "GT533")->msg,
				     "hidden behind compute by prefetch"));
	sim_fx_release(&f);

	/* GTP within a node: no finding at all (TP 2 x G 4 = 8 GPUs) */
	run(&f, cfg(LLAMA8, 2, 8, 1, 3, 8, 480, 4, 4096, NULL, NULL));
	ck_assert(!cost_group_spans(&f.sim.cost, prog_kind("gtp"), NULL));
	ck_assert_uint_eq(sim_fx_count(&f, "GT531") + sim_fx_count(&f, "GT533"), 0);
	sim_fx_release(&f);

	/* a slow network and short micro-batches expose them */
	run(&f, cfg(LLAMA8, 4, 12, 1, 3, 8, 24, 1, 512, NULL,
		    "gtplan:\n  interconnect:\n    inter_node_gbps: 5\n"));
	ck_assert_uint_eq(sim_fx_count(&f, "GT531"), 1);
	ck_assert_uint_eq(sim_fx_count(&f, "GT533"), 0);
	ck_assert_ptr_nonnull(strstr(sim_fx_first(&f, "GT531")->msg,
				     "GTP group 0 is ranks 0, 4, 8 on nodes 0, 1"));
	sim_fx_release(&f);
}
END_TEST

/* The config's hardware and Megatron settings over the defaults. */
START_TEST(settings_from_config)
{
	struct sim_fx f;
	const struct cost_settings *s;

	run(&f, cfg(LLAMA8, 4, 12, 1, 3, 8, 480, 4, 4096,
		    "    make_vocab_size_divisible_by: 64\n"
		    "    attention_backend: unfused\n"
		    "    distributed_data_parallel_config:\n"
		    "      grad_reduce_in_fp32: false\n"
		    "    optimizer:\n"
		    "      use_precision_aware_optimizer: true\n"
		    "      exp_avg_dtype: torch.bfloat16\n"
		    "      exp_avg_sq_dtype: torch.bfloat16\n"
		    "      optimizer_cpu_offload: true\n"
		    "      optimizer_offload_fraction: 0.75\n",
		    "  segment_size: 2\n"
		    "gtplan:\n"
		    "  gpu_memory_gb: 80\n"
		    "  interconnect:\n"
		    "    intra_node_gbps: 700\n"
		    "    inter_node_gbps: 25.5\n"
		    "    intra_node_latency_us: 2\n"
		    "    inter_node_latency_us: 8\n"
		    "  hardware:\n"
		    "    peak_tflops: 2250\n"
		    "    compute_efficiency: 0.5\n"
		    "    overlap: none\n"));
	s = &f.sim.cost.s;
	ck_assert(s->intra_gbps == 700 && s->inter_gbps == 25.5);
	ck_assert(s->intra_lat_us == 2 && s->inter_lat_us == 8);
	ck_assert_int_eq(s->domain, 16);
	ck_assert(s->peak_tflops == 2250 && s->efficiency == 0.5);
	ck_assert_int_eq(s->overlap, COST_OVERLAP_NONE);
	ck_assert(s->gpu_memory_gb == 80);
	ck_assert_int_eq(s->vocab_divisor, 64);
	ck_assert(s->unfused_attention);
	ck_assert_int_eq(s->grad_bytes, 2);
	ck_assert_int_eq(s->optim_bytes, 8);
	ck_assert(s->optim_on_gpu == 0.25);
	NEAR(f.sim.mem.capacity, 80 * GIB);
	/* unfused attention keeps 5 a s / h more per token x hidden */
	NEAR(f.sim.mem.stages[0].item[MEM_ACTIVATIONS],
	     32 * 4 * 4096.0 * 4096 * (10.0 + 8 + 5.0 * 32 * 4096 / 4096 + 21) / 4);
	NEAR(f.sim.mem.stages[0].item[MEM_OPTIMIZER],
	     8 * 0.25 * (double)f.sim.mem.stages[0].params / 2);
	sim_fx_release(&f);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "memory_by_hand", memory_llama8b_tp4_g3_by_hand },
		{ "memory_stages", memory_pipeline_stages_and_options },
		{ "gt530", gt530_70b_without_and_with_gtp },
		{ "gt532", gt532_activations_too_large },
		{ "memory_skipped", memory_skipped_without_a_shape },
		{ "memory_runtime", memory_of_the_runtime_model },
		{ "coll_time", collective_time_monotonic },
		{ "train_estimate", train_estimate_parts },
		{ "time_monotonic", time_grows_with_bytes_and_across_nodes },
		{ "bubble", pipeline_bubble_waits },
		{ "gt531_tp", gt531_tp_across_nodes },
		{ "gt531_gtp", gt531_gtp_only_when_exposed },
		{ "settings", settings_from_config },
	};

	return RUN_CASES("cost", cases, 60);
}
