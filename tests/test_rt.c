/*
 * gtplan-run's parts that need no MPI: reading the plan (rt_plan.c) that
 * gtplan writes, the command line (rt_opts.c) and the deterministic data
 * (rt_data.c), and the GPU memory check's arithmetic (rt_limits.c) with
 * the free memory given. The plans come from build/gtplan ($GTPLAN), so these tests
 * also hold the planner and the runtime to one plan format.
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rt_data.h"
#include "rt_err.h"
#include "rt_limits.h"
#include "rt_model.h"
#include "rt_opts.h"
#include "rt_plan.h"

#define CFG "tests/runtime/parity.yaml"
#define M "policy.megatron_cfg."

static char dir[64];

static void setup(void)
{
	strcpy(dir, "/tmp/gtplan-rt-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Plans CFG on 12 GPUs with TP 2 and 6 weight shards (GTP 3, D 2) into
 * dir/name; returns the path (static). */
static const char *plan_12(const char *name, const char *more)
{
	static char path[128];
	char cmd[512];
	const char *g = getenv("GTPLAN");
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(cmd, sizeof(cmd), "%s plan " CFG " cluster.gpus_per_node=12 "
		 M "tensor_model_parallel_size=2 "
		 M "tensor_parallel_num_weight_shards=6 %s -o %s 2>/dev/null",
		 g ? g : "build/gtplan", more, path);
	rc = system(cmd);
	/* exit 1: the plan has findings, and is written all the same */
	ck_assert(WIFEXITED(rc) && WEXITSTATUS(rc) <= 1);
	ck_assert_int_eq(access(path, R_OK), 0);
	return path;
}

/* Rewrites the plan at path with ranks[rank][key] = v. */
static void tamper(const char *path, size_t rank, const char *key, int v)
{
	json_t *root = json_load_file(path, 0, NULL);
	json_t *r = json_array_get(json_object_get(root, "ranks"), rank);

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(json_object_set_new(r, key, json_integer(v)), 0);
	ck_assert_int_eq(json_dump_file(root, path, JSON_SORT_KEYS), 0);
	json_decref(root);
}

static void assert_members(const struct rt_group *g, const int *want,
			   int n, int pos)
{
	ck_assert_int_eq(g->n, n);
	ck_assert_int_eq(g->pos, pos);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(g->members[i], want[i]);
}

/* rank_order tp-cp-gtp-ep-dp-pp: rank = tp + 2 (gtp + 3 dp), so rank 7 is
 * tp 1, gtp 0, dp 1. */
START_TEST(plan_groups_of_one_rank)
{
	static const int tp[] = { 6, 7 }, gtp[] = { 7, 9, 11 };
	static const int lane[] = { 1, 3, 5, 7, 9, 11 }, rep[] = { 1, 7 };
	struct rt_plan p;

	rt_plan_init(&p);
	ck_assert_int_eq(rt_plan_load(&p, plan_12("p.json", ""), 7, 12), 0);
	ck_assert_int_eq(p.world, 12);
	ck_assert_int_eq(p.size[RT_TP], 2);
	ck_assert_int_eq(p.size[RT_GTP], 3);
	ck_assert_int_eq(p.size[RT_DP], 2);
	ck_assert_int_eq(p.lanes, 6);
	ck_assert_int_eq(p.ranks[7].c[RT_TP], 1);
	ck_assert_int_eq(p.ranks[7].c[RT_GTP], 0);
	ck_assert_int_eq(p.ranks[7].c[RT_DP], 1);
	assert_members(&p.group[RT_K_TP], tp, 2, 1);
	assert_members(&p.group[RT_K_GTP], gtp, 3, 0);
	assert_members(&p.group[RT_K_DP], lane, 6, 3);
	assert_members(&p.group[RT_K_DP_CP_REPLICATE], rep, 2, 1);
	ck_assert_int_eq(p.group[RT_K_WORLD].n, 12);
	ck_assert_int_eq(p.rt.hidden, 40);
	ck_assert_int_eq(p.rt.vocab, 255);
	ck_assert_int_eq(p.global_batch, 12);
	ck_assert_int_eq(p.n_errors, 0);
	rt_plan_release(&p);
	ck_assert_ptr_null(p.ranks);
}
END_TEST

START_TEST(plan_refuses_another_world)
{
	struct rt_plan p;

	rt_plan_init(&p);
	ck_assert_int_eq(rt_plan_load(&p, plan_12("p.json", ""), 0, 8),
			 RT_EWORLD);
	rt_plan_release(&p);
}
END_TEST

START_TEST(plan_refuses_unreadable_files)
{
	struct rt_plan p;
	char path[96];
	FILE *f;

	rt_plan_init(&p);
	snprintf(path, sizeof(path), "%s/none.json", dir);
	ck_assert_int_eq(rt_plan_load(&p, path, 0, 1), RT_EIO);
	snprintf(path, sizeof(path), "%s/bad.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"format\": ", f);
	fclose(f);
	ck_assert_int_eq(rt_plan_load(&p, path, 0, 1), RT_EIO);
	rt_plan_release(&p);
}
END_TEST

/* A rank whose coordinates do not give its rank, and a plan without its
 * runtime settings, are RT_EPLAN before anything runs. */
START_TEST(plan_refuses_inconsistent_plans)
{
	struct rt_plan p;
	const char *path = plan_12("p.json", "");
	json_t *root;

	rt_plan_init(&p);
	tamper(path, 5, "tp", 0);
	ck_assert_int_eq(rt_plan_load(&p, path, 0, 12), RT_EPLAN);
	rt_plan_release(&p);
	path = plan_12("q.json", "");
	root = json_load_file(path, 0, NULL);
	ck_assert_int_eq(json_object_del(root, "runtime"), 0);
	ck_assert_int_eq(json_dump_file(root, path, 0), 0);
	json_decref(root);
	ck_assert_int_eq(rt_plan_load(&p, path, 0, 12), RT_EPLAN);
	rt_plan_release(&p);
	/* sizes each in range whose product is past any world (and past
	 * 64 bits: 65536^5 = 2^80; UBSan stops a wrapped product) */
	path = plan_12("r.json", "");
	root = json_load_file(path, 0, NULL);
	ck_assert_ptr_nonnull(root);
	for (int a = 0; a < 5; a++)
		ck_assert_int_eq(json_object_set_new(json_object_get(root,
				 "sizes"), (const char *[]){ "tp", "cp", "gtp",
				 "dp_replicate", "pp" }[a],
				 json_integer(RT_MAX_WORLD)), 0);
	ck_assert_int_eq(json_object_set_new(json_object_get(root, "sizes"),
					     "dp", json_integer(RT_MAX_WORLD)),
			 0);
	ck_assert_int_eq(json_dump_file(root, path, 0), 0);
	json_decref(root);
	ck_assert_int_eq(rt_plan_load(&p, path, 0, 12), RT_EPLAN);
	rt_plan_release(&p);
}
END_TEST

/* A plan with errors still loads: it says how many and the first. */
START_TEST(plan_counts_its_errors)
{
	struct rt_plan p;

	rt_plan_init(&p);
	ck_assert_int_eq(rt_plan_load(&p, plan_12("p.json",
			 "policy.train_global_batch_size=7"), 0, 12), 0);
	ck_assert_int_gt(p.n_errors, 0);
	ck_assert_ptr_nonnull(strstr(p.first_error, "GT"));
	rt_plan_release(&p);
}
END_TEST

/* Parses "gtplan-run LINE"; o's strings point into a static copy. */
static int parse(struct rt_opts *o, const char *line)
{
	static char buf[512];
	char *argv[32];
	int argc = 0;

	snprintf(buf, sizeof(buf), "gtplan-run %s", line);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	argv[argc] = NULL;
	return rt_opts_parse(o, argc, argv);
}

START_TEST(opts_defaults_and_values)
{
	struct rt_opts o;

	ck_assert_int_eq(parse(&o, "plan.json"), 0);
	ck_assert_str_eq(o.device, "cpu");
	ck_assert_str_eq(o.optimizer, "adam");
	ck_assert_str_eq(o.comm, "auto");
	ck_assert_int_eq(o.steps, -1);
	ck_assert_ptr_null(o.save);
	ck_assert_int_eq(parse(&o, "--steps 3 --global-batch 8 --lr 1e-3 "
			       "--device cuda --comm nccl --force --save d "
			       "--save-every 2 plan.json"), 0);
	ck_assert_str_eq(o.plan, "plan.json");
	ck_assert_int_eq(o.steps, 3);
	ck_assert_int_eq(o.global_batch, 8);
	ck_assert(fabs(o.lr - 1e-3) < 1e-15);
	ck_assert_str_eq(o.comm, "nccl");
	ck_assert_int_eq(o.force, 1);
	ck_assert_int_eq(o.save_every, 2);
	ck_assert_int_eq(parse(&o, "--help"), 0); /* no plan needed */
	ck_assert_int_eq(o.help, 1);
}
END_TEST

START_TEST(opts_refuse_bad_lines)
{
	static const char *const bad[] = {
		"", "a.json b.json", "--bogus a.json", "a.json --steps",
		"--steps 1.5 a.json", "--steps -1 a.json",
		"--micro-batch 0 a.json", "--device tpu a.json",
		"--comm nccl a.json", "--bench-comm 3 a.json",
		"--optimizer lion a.json", "--refit-gather all a.json",
		"--save-every 2 a.json", "--lr 0 a.json",
		"--steps 1e300 a.json", "--steps inf a.json",
	};
	struct rt_opts o;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(parse(&o, bad[i]) == RT_EUSAGE, "accepted '%s'",
			      bad[i]);
}
END_TEST

/* splitmix64's finaliser (Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators", OOPSLA 2014), written out again. */
static uint64_t splitmix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

START_TEST(data_is_counter_based)
{
	double sum = 0, sq = 0;
	int n = 20000;

	/* splitmix64 of 0 is its first output from state 0 */
	ck_assert_uint_eq(splitmix(0), 0xe220a8397b1dcdafULL);
	ck_assert_uint_eq(rt_rand_u64(1, 2, 3),
			  splitmix(splitmix(splitmix(1) ^ 2) ^ 3));
	ck_assert_uint_ne(rt_rand_u64(1, 2, 3), rt_rand_u64(1, 2, 4));
	for (int i = 0; i < n; i++) {
		double x = rt_rand_normal(7, 1, (uint64_t)i);

		ck_assert(isfinite(x));
		sum += x;
		sq += x * x;
	}
	/* mean and variance of 20000 normal deviates: within 5 standard
	 * errors (1/sqrt(n) = 0.007 for the mean, sqrt(2/n) = 0.01 for the
	 * variance) */
	ck_assert(fabs(sum / n) < 0.036);
	ck_assert(fabs(sq / n - 1) < 0.05);
}
END_TEST

START_TEST(data_samples_are_text)
{
	int32_t a[65], b[65], c[65];
	int letters = 0;

	rt_data_sample(7, 3, 64, 256, a);
	rt_data_sample(7, 3, 64, 256, b);
	rt_data_sample(7, 4, 64, 256, c);
	ck_assert_mem_eq(a, b, sizeof(a)); /* same (seed, index): same text */
	ck_assert(memcmp(a, c, sizeof(a)) != 0);
	ck_assert(a[0] >= 'A' && a[0] <= 'Z'); /* a sentence starts */
	for (int i = 0; i < 65; i++) {
		ck_assert(a[i] == ' ' || a[i] == '.' || a[i] == ',' ||
			  (a[i] >= 'a' && a[i] <= 'z') ||
			  (a[i] >= 'A' && a[i] <= 'Z'));
		letters += a[i] >= 'a' && a[i] <= 'z';
	}
	ck_assert_int_gt(letters, 32);
	rt_data_sample(7, 3, 64, 40, c); /* ids reduced modulo the vocab */
	for (int i = 0; i < 65; i++)
		ck_assert_int_eq(c[i], a[i] % 40);
}
END_TEST

/* Rank 0's shape of plan `path` (12 ranks) and its bytes. */
static void shape_of(const char *path, struct rt_plan *p, struct rt_shape *s,
		     struct rt_need *n)
{
	rt_plan_init(p);
	ck_assert_int_eq(rt_plan_load(p, path, 0, 12), 0);
	ck_assert_int_eq(rt_model_shape(s, p, 0, 0), 0);
	rt_limits_need(s, p, n);
}

/* rt_limits_gpu on GPU 3 "Fake GPU" with free_b bytes free over `share`
 * ranks; returns its code, and what it printed in said. */
static int gpu_check(const struct rt_plan *p, const struct rt_shape *s,
		     int force, double free_b, int share, char *said,
		     size_t len)
{
	char log[128];
	int fd, keep, rc;
	FILE *f;
	size_t got;

	snprintf(log, sizeof(log), "%s/stderr", dir);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	keep = dup(2);
	ck_assert_int_eq(dup2(fd, 2), 2);
	rc = rt_limits_gpu(s, p, force, 3, "Fake GPU", free_b, share);
	fflush(stderr);
	dup2(keep, 2);
	close(keep);
	close(fd);
	f = fopen(log, "r");
	ck_assert_ptr_nonnull(f);
	got = fread(said, 1, len - 1, f);
	said[got] = '\0';
	fclose(f);
	return rc;
}

/* The CUDA path's check before allocating: the runtime's own bytes (every
 * buffer rt_model_init allocates, the pipeline's slots, a reserve) within
 * a rank's share of the free memory (given here, as cudaMemGetInfo would);
 * refused with the sizes, or noted with --force. */
START_TEST(gpu_memory_check)
{
	struct rt_plan p;
	struct rt_shape s;
	struct rt_need n;
	char said[2048], want[160];
	double exact;

	shape_of(plan_12("p.json", ""), &p, &s, &n);
	ck_assert_int_eq(n.pp, 0);
	ck_assert_int_eq(n.total, n.mm.total);
	ck_assert_int_gt(n.mm.state, 0);
	ck_assert_int_gt(n.mm.logits, 0);
	/* exactly the bytes needed, for 2 ranks sharing the GPU: fits */
	exact = (double)(n.total + RT_GPU_RESERVE) * 2;
	ck_assert_int_eq(gpu_check(&p, &s, 0, exact, 2, said, sizeof(said)),
			 0);
	ck_assert_ptr_nonnull(strstr(said, "within"));
	/* two bytes less over 2 ranks: one byte short each */
	ck_assert_int_eq(gpu_check(&p, &s, 0, exact - 2, 2, said,
				   sizeof(said)), RT_EDEVICE);
	snprintf(want, sizeof(want), "GPU 3 (Fake GPU) has %.0f bytes",
		 exact - 2);
	ck_assert_ptr_nonnull(strstr(said, want));
	snprintf(want, sizeof(want), "this rank needs %lld bytes",
		 n.total + RT_GPU_RESERVE);
	ck_assert_ptr_nonnull(strstr(said, want));
	snprintf(want, sizeof(want), "weights, gradients and Adam state %lld",
		 n.mm.state);
	ck_assert_ptr_nonnull(strstr(said, want));
	ck_assert_ptr_nonnull(strstr(said, "fewer layers, a shorter sequence"));
	ck_assert_ptr_nonnull(strstr(said, "or --force"));
	/* --force: noted, not refused */
	ck_assert_int_eq(gpu_check(&p, &s, 1, exact - 2, 2, said,
				   sizeof(said)), 0);
	ck_assert_ptr_nonnull(strstr(said, "(--force)"));
	rt_plan_release(&p);
	/* a pipeline keeps more micro-batches: its slots and buffers count */
	shape_of(plan_12("pp.json", M "tensor_parallel_num_weight_shards=2 "
			 M "pipeline_model_parallel_size=3 "
			 "+" M "virtual_pipeline_model_parallel_size=2 "
			 "gtplan.runtime.layers=6"), &p, &s, &n);
	ck_assert_int_gt(s.slots, 1);
	ck_assert_int_gt(n.pp, n.mm.acts);
	ck_assert_int_eq(n.total, n.mm.total + n.pp);
	ck_assert_int_eq(gpu_check(&p, &s, 0, 1e6, 1, said, sizeof(said)),
			 RT_EDEVICE);
	snprintf(want, sizeof(want), "pipeline slots and buffers %lld", n.pp);
	ck_assert_ptr_nonnull(strstr(said, want));
	rt_plan_release(&p);
}
END_TEST

/* One layer's saved activations, in bytes (rt_model_mem's difference
 * between two layers and one). */
static long long layer_bytes(struct rt_shape *s, int bf16)
{
	struct rt_model_mem a, b;

	s->layers = 1;
	rt_model_mem(s, bf16, 0, &a);
	s->layers = 2;
	rt_model_mem(s, bf16, 0, &b);
	return b.acts - a.acts;
}

/* A layer's activations in bf16 runs as runtime/rt_model.c's table
 * allocates them: without SP the norms' outputs, q, k, v, o, fc1's and
 * SwiGLU's outputs are held in bf16 alone (no fp32 n1, n2, q, k, v, o);
 * with SP the norms' fp32 outputs come back (the all-gather moves fp32)
 * with their gathered copies in both types. */
START_TEST(bf16_layer_activations)
{
	struct rt_plan p;
	struct rt_shape s;
	struct rt_need n;
	long long Nl, N, h, lse, alone;

	shape_of(plan_12("p.json", ""), &p, &s, &n);
	ck_assert(!s.qk_norm && s.cp == 1);
	Nl = s.local;
	N = s.tokens;
	h = s.h;
	lse = s.micro * s.z.hl * s.local_seq;
	/* x, xm; rstd1, rstd2; n1_16, n2_16; q16, k16, v16; o16; lse; u16,
	 * sw16 */
	alone = 4 * 2 * Nl * h + 4 * 2 * Nl + 2 * 2 * Nl * h +
		2 * N * s.z.qkv_l + 2 * N * s.z.q_l + 4 * lse +
		2 * 3 * N * s.z.fl;
	s.sp = 0;
	ck_assert_int_eq(layer_bytes(&s, 1), alone);
	s.sp = 1;
	ck_assert_int_eq(layer_bytes(&s, 1),
			 alone + 4 * 2 * Nl * h + (4 + 2) * 2 * N * h);
	rt_plan_release(&p);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "plan_groups", plan_groups_of_one_rank },
		{ "plan_world", plan_refuses_another_world },
		{ "plan_unreadable", plan_refuses_unreadable_files },
		{ "plan_inconsistent", plan_refuses_inconsistent_plans },
		{ "plan_errors", plan_counts_its_errors },
		{ "opts", opts_defaults_and_values },
		{ "opts_bad", opts_refuse_bad_lines },
		{ "data_random", data_is_counter_based },
		{ "data_text", data_samples_are_text },
		{ "gpu_memory", gpu_memory_check },
		{ "bf16_acts", bf16_layer_activations },
	};

	return RUN_CASES_FIXTURE("rt", cases, 60, setup, teardown);
}
