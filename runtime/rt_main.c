/*
 * gtplan-run: executes a verified plan with the runtime model.
 *
 *   mpirun -np W gtplan-run PLAN.json [options]
 *
 * Every rank reads the plan, checks that MPI started the plan's world,
 * builds one communicator per group kind from the plan's groups (checked
 * against its coordinates), refuses sizes the layout cannot split, then
 * trains the model for the plan's steps on its lane's micro-batches.
 * Failures every rank sees alike stop all ranks together (coll_mpi_agree);
 * a failure during training, which other ranks may not see, aborts the job
 * so that no rank is left waiting in a collective.
 *
 * Exit: 0 done, 1 the run failed or was refused, 2 usage or I/O error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll.h"
#include "kern.h"
#include "rt_bench.h"
#include "rt_ckpt.h"
#include "rt_err.h"
#include "rt_export.h"
#include "rt_infer.h"
#include "rt_model.h"
#include "rt_plan.h"
#include "rt_text.h"

enum { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };

struct opts {
	const char *plan, *device, *log, *record, *dump, *optimizer, *comm;
	const char *data, *logprobs, *export, *refit_gather; /* NULL: default */
	long long steps, global_batch, micro_batch; /* steps -1: the plan's */
	long long bench_iters; /* --bench-comm N: 0 = no bench */
	double timeout_s, lr; /* lr 0: the plan's */
	int force, help;
	const char *save, *load; /* checkpoint directories */
	long long save_every;    /* 0: save after the last step only */
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: mpirun -np W gtplan-run PLAN.json [options]\n"
"  --device cpu|cuda     where the math runs (default cpu)\n"
"  --steps N             train steps (default: the plan's runtime.steps);\n"
"                        0 trains nothing (--dump-weights then dumps the\n"
"                        initial weights)\n"
"  --global-batch N      samples per step (default: the plan's batch.global)\n"
"  --micro-batch N       samples per micro-batch (default: batch.micro, or 1)\n"
"  --log FILE            per-step metrics as JSON lines (rank 0)\n"
"  --record FILE         each rank writes its collectives, one JSON line\n"
"                        each, to FILE.<rank> ({rank} in FILE is replaced)\n"
"  --dump-weights FILE   the final full weights, gathered, as JSON (rank 0)\n"
"  --data FILE|synthetic the text to train on, its bytes the tokens (mod\n"
"                        vocab); sample i starts at a seed-hashed offset\n"
"                        (default " RT_TEXT_DEFAULT " when it\n"
"                        exists, else the synthetic text)\n"
"  --logprobs FILE       after training, get_logprobs on the global batch of\n"
"                        the next step (step N+1; --steps 0: step 1): per\n"
"                        token log p(target), forward only, as JSON (rank 0)\n"
"  --export FILE         after training, the refit export: the full weights\n"
"                        gathered in the --refit-gather order, written as\n"
"                        safetensors with Hugging Face names (rank 0)\n"
"  --refit-gather ORDER  gtp_then_tp (correct), tp_then_gtp or tp_only\n"
"                        (default: the plan's stack.refit_gather, else\n"
"                        gtp_then_tp)\n"
"  --optimizer adam|sgd  the update of the local shards (default adam)\n"
"  --lr X                learning rate (default: the plan's runtime.lr)\n"
"  --comm auto|nccl|mpi  --device cuda's collectives: NCCL (one GPU per\n"
"                        rank), or MPI with host staging (ranks sharing\n"
"                        GPUs); auto (default) picks NCCL where every rank\n"
"                        has a GPU of its own\n"
"  --bench-comm N        instead of training, time N GTP all-gathers and\n"
"                        reduce-scatters of each weight on the NCCL path\n"
"                        against plain NCCL calls (bus bandwidth)\n"
"  --timeout S           stop when a collective waits longer than S seconds\n"
"                        and report where every member of its group is\n"
"  --save DIR            after the last step, write a sharded checkpoint\n"
"                        to DIR: one file per writing rank and rank 0's\n"
"                        metadata.json (weights, Adam state, step)\n"
"  --save-every N        with --save: also after every N-th step (each\n"
"                        save replaces the one before in DIR)\n"
"  --load DIR            start from the checkpoint in DIR, saved under any\n"
"                        layout of the same model, seed and batch; --steps\n"
"                        is then the last step, not the number to train\n"
"  --force               run a plan that has error diagnostics, or whose\n"
"                        memory estimate exceeds the GPU's free memory\n"
"  -h, --help            this text\n");
}

static int parse_num(const char *opt, const char *s, double min, double *out)
{
	char *end;

	errno = 0;
	*out = s ? strtod(s, &end) : 0;
	if (!s || errno || end == s || *end || !(*out >= min))
		return rt_error_once(RT_EUSAGE, "%s wants a number >= %g, not "
				     "'%s'", opt, min, s ? s : "");
	return 0;
}

/* A whole number >= min. */
static int parse_count(const char *opt, const char *s, long long min,
		       long long *out)
{
	double v;

	RCHECK(parse_num(opt, s, (double)min, &v));
	if (v != (double)(long long)v || v > 1e15)
		return rt_error_once(RT_EUSAGE, "%s wants a whole number, not "
				     "'%s'", opt, s);
	*out = (long long)v;
	return 0;
}

/* The options that take a value. */
static int valued(const char *a)
{
	static const char *const names[] = {
		"--device", "--steps", "--global-batch", "--micro-batch",
		"--log", "--record", "--dump-weights", "--optimizer",
		"--timeout", "--lr", "--comm", "--bench-comm", "--data",
		"--logprobs", "--export", "--refit-gather", "--save",
		"--save-every", "--load",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(a, names[i]))
			return 1;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->device = "cpu";
	o->optimizer = "adam";
	o->comm = "auto";
	o->steps = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = 1;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->help = 1;
			takes = 0;
		} else if (!strcmp(a, "--force")) {
			o->force = 1;
			takes = 0;
		} else if (a[0] == '-' && !valued(a)) {
			return rt_error_once(RT_EUSAGE, "unknown option '%s' "
					     "(see --help)", a);
		} else if (a[0] == '-' && !v) {
			return rt_error_once(RT_EUSAGE, "%s wants a value", a);
		} else if (!strcmp(a, "--device")) {
			o->device = v;
		} else if (!strcmp(a, "--comm")) {
			o->comm = v;
		} else if (!strcmp(a, "--optimizer")) {
			o->optimizer = v;
		} else if (!strcmp(a, "--log")) {
			o->log = v;
		} else if (!strcmp(a, "--record")) {
			o->record = v;
		} else if (!strcmp(a, "--dump-weights")) {
			o->dump = v;
		} else if (!strcmp(a, "--data")) {
			o->data = v;
		} else if (!strcmp(a, "--logprobs")) {
			o->logprobs = v;
		} else if (!strcmp(a, "--export")) {
			o->export = v;
		} else if (!strcmp(a, "--refit-gather")) {
			o->refit_gather = v;
		} else if (!strcmp(a, "--steps")) {
			RCHECK(parse_count(a, v, 0, &o->steps));
		} else if (!strcmp(a, "--global-batch")) {
			RCHECK(parse_count(a, v, 1, &o->global_batch));
		} else if (!strcmp(a, "--bench-comm")) {
			RCHECK(parse_count(a, v, 1, &o->bench_iters));
		} else if (!strcmp(a, "--micro-batch")) {
			RCHECK(parse_count(a, v, 1, &o->micro_batch));
		} else if (!strcmp(a, "--timeout")) {
			RCHECK(parse_num(a, v, 0, &o->timeout_s));
		} else if (!strcmp(a, "--lr")) {
			RCHECK(parse_num(a, v, 1e-30, &o->lr));
		} else if (!strcmp(a, "--save")) {
			o->save = v;
		} else if (!strcmp(a, "--load")) {
			o->load = v;
		} else if (!strcmp(a, "--save-every")) {
			RCHECK(parse_count(a, v, 1, &o->save_every));
		} else if (!o->plan) {
			o->plan = a;
			takes = 0;
		} else {
			return rt_error_once(RT_EUSAGE, "one plan only; '%s' is "
					     "a second", a);
		}
		i += takes;
	}
	if (o->help)
		return 0;
	if (!o->plan)
		return rt_error_once(RT_EUSAGE, "no plan given (see --help)");
	if (strcmp(o->device, "cpu") && strcmp(o->device, "cuda"))
		return rt_error_once(RT_EUSAGE, "--device is cpu or cuda, not "
				     "'%s'", o->device);
	if (strcmp(o->comm, "auto") && strcmp(o->comm, "nccl") &&
	    strcmp(o->comm, "mpi"))
		return rt_error_once(RT_EUSAGE, "--comm is auto, nccl or mpi, "
				     "not '%s'", o->comm);
	if (strcmp(o->comm, "auto") && strcmp(o->device, "cuda"))
		return rt_error_once(RT_EUSAGE, "--comm %s is for --device "
				     "cuda; the CPU path uses MPI", o->comm);
	if (o->bench_iters && strcmp(o->device, "cuda"))
		return rt_error_once(RT_EUSAGE, "--bench-comm times the NCCL "
				     "path: run it with --device cuda, one GPU "
				     "per rank");
	if (o->bench_iters > 100000)
		return rt_error_once(RT_EUSAGE, "--bench-comm: at most 100000 "
				     "iterations, not %lld", o->bench_iters);
	if (strcmp(o->optimizer, "adam") && strcmp(o->optimizer, "sgd"))
		return rt_error_once(RT_EUSAGE, "--optimizer is adam or sgd, "
				     "not '%s'", o->optimizer);
	if (o->refit_gather && rt_gather_parse(o->refit_gather, &(enum
					       rt_gather){ 0 }))
		return rt_error_once(RT_EUSAGE, "--refit-gather is gtp_then_tp,"
				     " tp_then_gtp or tp_only, not '%s'",
				     o->refit_gather);
	if (o->save_every && !o->save)
		return rt_error_once(RT_EUSAGE, "--save-every wants --save DIR "
				     "(where to save)");
	return 0;
}

/* What the plan and the options allow before any work starts. */
static int preflight(const struct opts *o, const struct rt_plan *p)
{
	if (p->n_errors && !o->force)
		return rt_error_once(RT_EPLAN, "the plan has %d error%s (first: "
				     "%s); fix the config, or pass --force to "
				     "run it anyway", p->n_errors,
				     p->n_errors > 1 ? "s" : "", p->first_error);
#ifndef KERN_WITH_CUDA
	if (!strcmp(o->device, "cuda"))
		return rt_error_once(RT_EDEVICE, "--device cuda: this build of "
				     "gtplan-run has no CUDA path (make "
				     "build/gpu/gtplan-run builds one); run "
				     "with --device cpu");
#endif
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --device cuda on this rank's host: its GPUs and the ranks sharing
 * them (set by select_gpu). */
static int gpu_count, host_ranks;

#ifdef KERN_WITH_CUDA
#include <cuda_runtime.h>

/* This build's device code: sm_90 and compute_90 PTX (Makefile GENCODE). */
#define BUILD_CC_MAJOR 9

/* Binds this rank to GPU local_rank % device_count, before kern_init, and
 * checks what the GPU must offer: the build's compute capability and,
 * unless forced, the plan's memory estimate within the free memory this
 * rank's share of the GPU has. */
static int select_gpu(const struct rt_plan *p, int force)
{
	int local = 0, nlocal = 1, n = 0, dev, share, rc;
	struct cudaDeviceProp prop;
	size_t free_b = 0, total_b = 0;
	cudaError_t e;

	if ((rc = coll_local_rank(&local, &nlocal)))
		return rc;
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n < 1)
		return rt_error(RT_EDEVICE, "--device cuda: no CUDA device "
				"(%s)", e != cudaSuccess ? cudaGetErrorString(e)
				: "device count 0");
	dev = local % n;
	e = cudaSetDevice(dev);
	if (e != cudaSuccess)
		return rt_error(RT_EDEVICE, "--device cuda: cudaSetDevice(%d): "
				"%s", dev, cudaGetErrorString(e));
	gpu_count = n;
	host_ranks = nlocal;
	e = cudaGetDeviceProperties(&prop, dev);
	if (e != cudaSuccess)
		return rt_error(RT_EDEVICE, "--device cuda: GPU %d: %s", dev,
				cudaGetErrorString(e));
	if (prop.major < BUILD_CC_MAJOR)
		return rt_error(RT_EDEVICE, "GPU %d (%s) has compute capability "
				"%d.%d; this build carries code for %d.0 and "
				"newer only: rebuild with make build/gpu/gtplan-"
				"run GENCODE='-gencode arch=compute_%d%d,code="
				"sm_%d%d'", dev, prop.name, prop.major,
				prop.minor, BUILD_CC_MAJOR, prop.major,
				prop.minor, prop.major, prop.minor);
	e = cudaMemGetInfo(&free_b, &total_b);
	if (e != cudaSuccess)
		return rt_error(RT_EDEVICE, "--device cuda: GPU %d: %s", dev,
				cudaGetErrorString(e));
	/* ranks on this host that share GPU dev */
	share = nlocal / n + (dev < nlocal % n);
	if (p->mem_per_rank > 0 &&
	    (double)p->mem_per_rank > (double)free_b / share) {
		if (!force)
			return rt_error(RT_EDEVICE, "GPU %d (%s) has %.1f GiB "
					"free for %d rank%s; the plan estimates "
					"%.1f GiB per rank: use more GPUs, a "
					"smaller layout or model, or --force",
					dev, prop.name, free_b / 1073741824.0,
					share, share > 1 ? "s" : "",
					p->mem_per_rank / 1073741824.0);
		rt_note("GPU %d: the plan's %.1f GiB per rank exceeds the free "
			"%.1f GiB per rank (--force)", dev,
			p->mem_per_rank / 1073741824.0,
			free_b / 1073741824.0 / share);
	}
	return 0;
}
#else
static int select_gpu(const struct rt_plan *p, int force)
{
	(void)p;
	(void)force;
	return rt_error(RT_EDEVICE, "--device cuda: no CUDA path in this "
			"build");
}
#endif

/* --comm: NCCL where every rank of every host has a GPU of its own (all
 * ranks must agree: the NCCL set-up is collective), else MPI with host
 * staging. Sets *nccl. */
static int pick_comm(const char *want, int *nccl)
{
	int own = host_ranks <= gpu_count;
	int all_own = coll_mpi_agree(own ? 0 : -1) == 0;
	int built = strcmp(coll_nccl_library(), "no NCCL") != 0;

	*nccl = 0;
	if (!strcmp(want, "mpi"))
		return 0;
	if (!strcmp(want, "nccl") && !built)
		return rt_error_once(RT_EDEVICE, "--comm nccl: this build has "
				     "no NCCL (make build/gpu/gtplan-run)");
	if (!strcmp(want, "nccl") && !all_own)
		return rt_error(RT_EDEVICE, "--comm nccl: %d ranks share %d "
				"GPU%s on this host, and NCCL refuses two ranks "
				"of one communicator on one GPU; start at most "
				"%d ranks per host, or use --comm mpi",
				host_ranks, gpu_count, gpu_count > 1 ? "s" : "",
				gpu_count);
	*nccl = built && all_own;
	return 0;
}

static void describe(const struct rt_plan *p, const struct rt_model *m,
		     const struct kern_ctx *k, long long steps, int nccl)
{
	const struct rt_shape *s = &m->s;

	if (k->device == KERN_CUDA && nccl)
		rt_note("device cuda: one GPU per rank (%d on this host): "
			"%s, one communicator per group kind split from the "
			"world (ncclCommSplit); %d ranks = TP %d x CP %d x GTP "
			"%d x DP %d, %d lanes", gpu_count, coll_nccl_library(),
			p->world, s->tp, s->cp, s->g, p->size[RT_DP], s->lanes);
	else if (k->device == KERN_CUDA)
		rt_note("device cuda: %d ranks share %d GPU%s on this host: "
			"MPI collectives with host staging (%s); %d ranks = "
			"TP %d x CP %d x GTP %d x DP %d, %d lanes", host_ranks,
			gpu_count, gpu_count == 1 ? "" : "s",
			coll_mpi_version(), p->world, s->tp, s->cp, s->g,
			p->size[RT_DP], s->lanes);
	else
		rt_note("device %s: OpenBLAS and MPI collectives (%s); %d ranks "
			"= TP %d x CP %d x GTP %d x DP %d, %d lanes",
			kern_device_name(k), coll_mpi_version(), p->world, s->tp,
			s->cp, s->g, p->size[RT_DP], s->lanes);
	rt_note("model: hidden %lld, ffn %lld, %lld layers, vocab %lld "
		"(padded %lld), seq_len %lld; batch %lld = %d lanes x %lld "
		"micro-batches of %lld", s->h, s->ffn, s->layers, s->vocab,
		s->vp, s->seq_len, s->global_batch, s->lanes, s->micro_batches,
		s->micro);
	if (steps >= 0)
		rt_note("%lld steps of %s, lr %g, seed %lld", steps,
			m->sgd ? "SGD" : "Adam", m->lr, p->rt.seed);
}

static void describe_data(const struct rt_text *t, const char *spec)
{
	char buf[256];

	rt_note("data: %s", rt_text_describe(t, spec, buf, sizeof(buf)));
}

/* Rank 0's per-step output: the log line and, on a terminal, one
 * progress line rewritten in place. */
static int report_step(FILE *log, long long step, long long steps,
		       double loss, long long tokens, double secs, double lr)
{
	double tps = secs > 0 ? (double)tokens / secs : 0;

	if (log) {
		fprintf(log, "{\"loss\":%.9g,\"lr\":%.9g,\"step\":%lld,"
			"\"step_time_s\":%.6f,\"tokens\":%lld,"
			"\"tokens_per_s\":%.1f}\n", loss, lr, step, secs,
			tokens, tps);
		if (fflush(log) || ferror(log))
			return rt_error(RT_EIO, "--log: write error");
	}
	if (isatty(STDERR_FILENO)) {
		int done = (int)(20 * step / steps);

		fprintf(stderr, "\r[%-20.*s] step %lld/%lld  loss %.4f  %.0f "
			"tok/s", done, "####################", step, steps,
			loss, tps);
		if (step == steps)
			fputc('\n', stderr);
	}
	return 0;
}

/* Rank 0's output files, opened before any work so that a bad path stops
 * every rank at once instead of after the training. */
struct outputs {
	FILE *log, *dump, *logprobs, *export;
};

static int open_outputs(const struct opts *o, int root, struct outputs *out)
{
	memset(out, 0, sizeof(*out));
	if (!root)
		return 0;
	if (o->log && !(out->log = fopen(o->log, "w")))
		return rt_error(RT_EIO, "--log: cannot write '%s'", o->log);
	if (o->dump && !(out->dump = fopen(o->dump, "w")))
		return rt_error(RT_EIO, "--dump-weights: cannot write '%s'",
				o->dump);
	if (o->logprobs && !(out->logprobs = fopen(o->logprobs, "w")))
		return rt_error(RT_EIO, "--logprobs: cannot write '%s'",
				o->logprobs);
	if (o->export && !(out->export = fopen(o->export, "wb")))
		return rt_error(RT_EIO, "--export: cannot write '%s'",
				o->export);
	return 0;
}

static int close_outputs(struct outputs *out, int rc)
{
	if (out->log && fclose(out->log) && !rc)
		rc = rt_error(RT_EIO, "--log: write error");
	if (out->dump && fclose(out->dump) && !rc)
		rc = rt_error(RT_EIO, "--dump-weights: write error");
	if (out->logprobs && fclose(out->logprobs) && !rc)
		rc = rt_error(RT_EIO, "--logprobs: write error");
	if (out->export && fclose(out->export) && !rc)
		rc = rt_error(RT_EIO, "--export: write error");
	memset(out, 0, sizeof(*out));
	return rc;
}

/* Steps m->step + 1 .. steps (after --load, m->step is the checkpoint's). */
static int train(struct rt_model *m, const struct rt_plan *p,
		 const struct opts *o, long long steps, int root, FILE *log)
{
	double first = 0, loss = 0, t_all = 0;
	long long tokens = 0, start = m->step + 1;
	int rc = 0;

	for (long long step = start; step <= steps && !rc; step++) {
		double t0 = now_s(), secs;

		rc = rt_model_train_step(m, step, &loss, &tokens);
		secs = now_s() - t0;
		t_all += secs;
		if (step == start)
			first = loss;
		if (!rc && root)
			rc = report_step(log, step, steps, loss, tokens, secs,
					 m->lr);
		if (!rc && o->save_every && step % o->save_every == 0 &&
		    step < steps)
			rc = rt_ckpt_save(m, p, o->save);
	}
	if (!rc && root && steps >= start)
		printf("gtplan-run: %lld steps, loss %.6f -> %.6f, %.0f tokens/s"
		       "\n", steps - start + 1, first, loss, t_all > 0 ?
		       (double)(tokens * (steps - start + 1)) / t_all : 0);
	return rc;
}

/* Agree on a status; a rank that is fine but learns of another's failure
 * gets RT_EPEER (the failing rank printed why). */
static int agree(int rc)
{
	int all = coll_mpi_agree(rc);

	return rc ? rc : all ? RT_EPEER : 0;
}

static int exit_code(int rc)
{
	if (!rc)
		return EXIT_OK;
	return rc == RT_EUSAGE || rc == RT_EIO ? EXIT_USAGE : EXIT_RUN;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct rt_plan plan;
	struct rt_shape shape;
	struct rt_model model;
	struct kern_ctx kern;
	struct coll *c = NULL;
	struct coll_opts co;
	struct outputs out = { NULL, NULL, NULL, NULL };
	struct rt_text text;
	enum rt_gather gather = RT_GATHER_GTP_THEN_TP;
	const char *threads = getenv("OPENBLAS_NUM_THREADS");
	int rank = 0, size = 0, rc, kern_up = 0, nccl = 0;

	if (coll_mpi_init(&argc, &argv, &rank, &size))
		return EXIT_RUN;
	rt_err_set_rank(rank);
	rt_plan_init(&plan);
	rt_text_init(&text);
	memset(&model, 0, sizeof(model));
	rc = parse_args(argc, argv, &o);
	if (!rc && o.help) {
		if (rank == 0)
			usage(stdout);
		coll_mpi_finalize();
		return EXIT_OK;
	}
	if (!rc)
		rc = rt_plan_load(&plan, o.plan, rank, size);
	if (!(rc = agree(rc)))
		rc = preflight(&o, &plan);
	if (!(rc = agree(rc)))
		rc = rt_text_load(&text, o.data, rank);
	if (!rc && (o.refit_gather || plan.refit_gather[0]))
		rt_gather_parse(o.refit_gather ? o.refit_gather :
				plan.refit_gather, &gather);
	if (!rc)
		rc = rt_model_shape(&shape, &plan, o.global_batch,
				    o.micro_batch);
	if (!(rc = agree(rc))) {
		co.timeout_s = o.timeout_s;
		co.record_path = o.record;
		rc = coll_new(&c, &plan, &co);
	}
	if (!(rc = agree(rc))) {
		/* ranks are the parallelism: one BLAS thread each unless the
		 * environment says otherwise */
		int cuda = !strcmp(o.device, "cuda");

		rc = cuda ? select_gpu(&plan, o.force) : 0;
		if (!rc) {
			rc = kern_init(&kern, cuda ? KERN_CUDA : KERN_CPU,
				       threads ? 0 : 1);
			kern_up = !rc;
			if (rc)
				rc = rt_error(RT_EKERNEL, "%s",
					      kern_strerror(rc));
		}
	}
	if (!(rc = agree(rc)) && !strcmp(o.device, "cuda")) {
		/* NCCL with a GPU per rank; else MPI (no device-aware MPI
		 * assumed) staging device buffers through the host */
		rc = pick_comm(o.comm, &nccl);
		if (!(rc = agree(rc)) && nccl)
			rc = coll_use_nccl(c, &kern);
		else if (!rc)
			coll_set_staging(c, &kern);
	}
	if (!(rc = agree(rc)))
		rc = rt_model_init(&model, &plan, &shape, &kern, c);
	if (!(rc = agree(rc)) && o.load)
		rc = rt_ckpt_load(&model, &plan, o.load);
	if (!(rc = agree(rc)))
		rc = open_outputs(&o, rank == 0, &out);
	rc = agree(rc);
	if (rc == RT_EPEER)
		rt_error_once(rc, "stopped: %s", rt_strerror(rc));
	if (!rc) {
		long long steps = o.steps >= 0 ? o.steps : plan.rt.steps;

		model.sgd = !strcmp(o.optimizer, "sgd");
		if (o.lr > 0)
			model.lr = o.lr;
		model.text = &text;
		/* --bench-comm trains nothing: no steps line */
		describe(&plan, &model, &kern, o.bench_iters ? -1 : steps,
			 nccl);
		describe_data(&text, o.data);
		if (!plan.train_called) {
			/* the driver never calls this rank (5-D layout):
			 * it waits as the real worker would, and tells the
			 * watchdog of its peers why */
			rt_error(RT_EPLAN, "not called: %s", plan.train_why);
			rc = coll_idle(c, plan.train_why);
		} else if (o.bench_iters) {
			rc = rt_bench_comm(&model, (int)o.bench_iters,
					   out.log);
			if (!rc)
				rc = coll_finish(c);
		} else {
			rc = train(&model, &plan, &o, steps, rank == 0,
				   out.log);
			if (!rc && o.save)
				rc = rt_ckpt_save(&model, &plan, o.save);
			if (!rc && o.dump)
				rc = rt_model_dump(&model, out.dump);
			if (!rc && o.logprobs)
				rc = rt_infer_logprobs(&model, &plan,
						       model.step + 1,
						       out.logprobs);
			if (!rc && o.export)
				rc = rt_export_write(&model, gather,
						     out.export);
			if (!rc)
				rc = coll_finish(c);
		}
		rc = close_outputs(&out, rc);
		if (rc) {
			/* other ranks may wait in a collective forever */
			fflush(NULL);
			coll_mpi_abort(exit_code(rc));
		}
	}
	close_outputs(&out, rc);
	rt_model_release(&model);
	rt_text_release(&text);
	if (kern_up)
		kern_release(&kern);
	coll_free(c);
	rt_plan_release(&plan);
	coll_mpi_finalize();
	return exit_code(rc);
}
