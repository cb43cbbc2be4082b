/*
 * gtplan-run: executes a verified plan with the runtime model.
 *
 *   mpirun -np W gtplan-run PLAN.json [options]
 *
 * Every rank reads the plan, checks that MPI started the plan's world,
 * refuses sizes past what it can survive (rt_limits.h) before it allocates
 * anything, builds one communicator per group kind from the plan's groups
 * (checked against its coordinates), refuses sizes the layout cannot
 * split, then trains the model for the plan's steps on its lane's
 * micro-batches; a loss that is not finite stops every rank at its step.
 * Failures every rank sees alike stop all ranks together (coll_mpi_agree);
 * a failure during training, which other ranks may not see, aborts the job
 * so that no rank is left waiting in a collective.
 *
 * Exit: 0 done, 1 the run failed, diverged or was refused, 2 usage or I/O
 * error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "coll.h"
#include "kern.h"
#include "rt_bench.h"
#include "rt_ckpt.h"
#include "rt_device.h"
#include "rt_err.h"
#include "rt_export.h"
#include "rt_infer.h"
#include "rt_limits.h"
#include "rt_model.h"
#include "rt_opts.h"
#include "rt_plan.h"
#include "rt_text.h"

enum { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void describe(const struct rt_plan *p, const struct rt_model *m,
		     const struct kern_ctx *k, const struct rt_device *dev,
		     long long steps, int nccl)
{
	int gpu_count = dev->gpu_count, host_ranks = dev->host_ranks;
	const struct rt_shape *s = &m->s;
	char pp[24] = "";

	if (s->pp > 1)
		snprintf(pp, sizeof(pp), " x PP %d", s->pp);

	if (k->device == KERN_CUDA && nccl)
		rt_note("device cuda: one GPU per rank (%d on this host): "
			"%s, one communicator per group kind split from the "
			"world (ncclCommSplit); %d ranks = TP %d x CP %d x GTP "
			"%d x DP %d%s, %d lanes", gpu_count, coll_nccl_library(),
			p->world, s->tp, s->cp, s->g, p->size[RT_DP], pp,
			s->lanes);
	else if (k->device == KERN_CUDA)
		rt_note("device cuda: %d ranks share %d GPU%s on this host: "
			"MPI collectives with host staging (%s); %d ranks = "
			"TP %d x CP %d x GTP %d x DP %d%s, %d lanes", host_ranks,
			gpu_count, gpu_count == 1 ? "" : "s",
			coll_mpi_version(), p->world, s->tp, s->cp, s->g,
			p->size[RT_DP], pp, s->lanes);
	else
		rt_note("device %s: OpenBLAS and MPI collectives (%s); %d ranks "
			"= TP %d x CP %d x GTP %d x DP %d%s, %d lanes",
			kern_device_name(k), coll_mpi_version(), p->world, s->tp,
			s->cp, s->g, p->size[RT_DP], pp, s->lanes);
	rt_note("model %s: hidden %lld, ffn %lld, %lld layers, %lld heads, "
		"%lld query groups, head_dim %lld, vocab %lld (padded %lld), "
		"%s%s%s%sseq_len %lld; batch %lld = %d lanes x %lld "
		"micro-batches of %lld", p->rt.model_name, s->h, s->ffn,
		s->layers_all, s->heads, s->kv_heads, s->hd, s->vocab, s->vp,
		s->tie ? "tied, " : "", s->qkv_bias ? "qkv bias, " : "",
		s->qk_norm ? "qk norm, " : "", s->sp ? "SP, " : "", s->seq_len,
		s->global_batch, s->lanes, s->micro_batches, s->micro);
	if (s->pp > 1)
		rt_note("pipeline: %s schedule; stage %d (this rank) holds %lld "
			"of the %lld layers in %d chunk%s", s->vpp > 1 ?
			"interleaved" : "1F1B", s->p, s->layers, s->layers_all,
			s->vpp, s->vpp > 1 ? "s" : "");
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
 * progress line rewritten in place. A loss that is not finite is JSON's
 * null in the log (JSON has no NaN), with "diverged": true. The plan's
 * estimate of the step (predicted, seconds; < 0: none) goes next to the
 * measured time. */
static int report_step(FILE *log, long long step, long long steps,
		       double loss, long long tokens, double secs, double lr,
		       double predicted)
{
	double tps = secs > 0 ? (double)tokens / secs : 0;
	char num[32], pred[48] = "";

	snprintf(num, sizeof(num), "%.9g", loss);
	if (predicted >= 0)
		snprintf(pred, sizeof(pred), "\"predicted_step_s\":%.6f,",
			 predicted);
	if (log) {
		fprintf(log, "{%s\"loss\":%s,\"lr\":%.9g,%s\"step\":%lld,"
			"\"step_time_s\":%.6f,\"tokens\":%lld,"
			"\"tokens_per_s\":%.1f}\n", isfinite(loss) ? "" :
			"\"diverged\":true,", isfinite(loss) ? num : "null",
			lr, pred, step, secs, tokens, tps);
		if (fflush(log) || ferror(log))
			return rt_error(RT_EIO, "--log: write error");
	}
	if (isatty(STDERR_FILENO) && isfinite(loss)) {
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

/* --export FILE.safetensors writes the file alone; any other path is a
 * directory for the file and config.json. */
static int export_is_file(const char *path)
{
	size_t n = strlen(path), k = strlen(".safetensors");

	return n >= k && !strcmp(path + n - k, ".safetensors");
}

static int open_outputs(const struct rt_opts *o, int root, struct outputs *out)
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
	if (o->export && !export_is_file(o->export)) {
		/* a Hugging Face model directory */
		char path[4096];

		if (mkdir(o->export, 0777) && errno != EEXIST)
			return rt_error(RT_EIO, "--export: cannot write '%s': "
					"%s", o->export, strerror(errno));
		snprintf(path, sizeof(path), "%s/model.safetensors",
			 o->export);
		if (!(out->export = fopen(path, "wb")))
			return rt_error(RT_EIO, "--export: cannot write '%s'",
					path);
	} else if (o->export && !(out->export = fopen(o->export, "wb"))) {
		return rt_error(RT_EIO, "--export: cannot write '%s'",
				o->export);
	}
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

/* A loss that is not finite stops every rank at this step, before a save
 * could replace the last good checkpoint. Every rank holds the same loss
 * (rt_model_train_step sums it over DP_CP and PP; TP ranks compute it
 * from the same all-reduced statistics, and a sum with a NaN or an
 * infinity in it is not finite), so each decides alone: no collective. */
static int check_loss(const struct rt_model *m, long long step, double loss)
{
	if (isfinite(loss))
		return 0;
	return rt_error_once(RT_EDIVERGED, "step %lld: the loss is %s: the "
			     "training diverged (lr %g, %s); nothing of this "
			     "step is saved: lower the learning rate "
			     "(gtplan.runtime.lr or --lr) and start again, or "
			     "from the last checkpoint", step, isnan(loss) ?
			     "NaN" : "infinite", m->lr, m->sgd ? "SGD" : "Adam");
}

/* The plan's estimate next to the measured mean step (steps after the
 * first, which warms up; the first when it is the only one). */
static void report_estimate(const struct rt_estimate *e, double mean_s)
{
	printf("gtplan-run: step %.1f ms measured, %.1f ms estimated by the "
	       "plan (", mean_s * 1e3, e->step_s * 1e3);
	for (int i = 0; i < e->n; i++)
		printf("%s%s %.1f", i ? ", " : "", e->name[i], e->s[i] * 1e3);
	printf(" ms)\n");
}

/* Steps m->step + 1 .. steps (after --load, m->step is the checkpoint's). */
static int train(struct rt_model *m, const struct rt_plan *p,
		 const struct rt_opts *o, long long steps, int root, FILE *log)
{
	double first = 0, loss = 0, t_all = 0, t_rest = 0;
	long long tokens = 0, start = m->step + 1;
	/* the estimate is the plan's batch's (no --global-batch or
	 * --micro-batch override) */
	double predicted = p->est.valid && !o->global_batch &&
			   !o->micro_batch ? p->est.step_s : -1;
	int rc = 0;

	for (long long step = start; step <= steps && !rc; step++) {
		double t0 = now_s(), secs;

		rc = rt_model_train_step(m, step, &loss, &tokens);
		secs = now_s() - t0;
		if (!rc && step == start && (rc = kern_prof_reset(m->k)))
			rc = rt_error(RT_EKERNEL, "profile: %s", /* from step 2 */
				      kern_error_text(rc));
		t_all += secs;
		if (step > start)
			t_rest += secs;
		if (step == start)
			first = loss;
		if (!rc && root)
			rc = report_step(log, step, steps, loss, tokens, secs,
					 m->lr, predicted);
		if (!rc)
			rc = check_loss(m, step, loss);
		if (!rc && o->save_every && step % o->save_every == 0 &&
		    step < steps)
			rc = rt_ckpt_save(m, p, o->save, (int)o->keep);
	}
	if (!rc && root && steps >= start)
		printf("gtplan-run: %lld steps, loss %.6f -> %.6f, %.0f tokens/s"
		       "\n", steps - start + 1, first, loss, t_all > 0 ?
		       (double)(tokens * (steps - start + 1)) / t_all : 0);
	if (!rc && root && steps >= start && predicted >= 0)
		report_estimate(&p->est, steps > start ?
				t_rest / (double)(steps - start) : t_all);
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

/* Over 80 lines on purpose: the run's phases in order (options, MPI, plan,
 * data, communicators, kernels, model, checkpoint, outputs, then the
 * work), each followed by the agreement every rank must reach before the
 * next. */
int main(int argc, char **argv)
{
	struct rt_opts o;
	struct rt_device dev = { 0, 0 };
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
	rc = rt_opts_parse(&o, argc, argv);
	if (!rc && o.help) {
		if (rank == 0)
			rt_opts_usage(stdout);
		coll_mpi_finalize();
		return EXIT_OK;
	}
	if (!rc)
		rc = rt_plan_load(&plan, o.plan, rank, size);
	plan.forced = o.force;
	if (!(rc = agree(rc)))
		rc = rt_device_preflight(&o, &plan);
	if (!(rc = agree(rc)))
		rc = rt_text_load(&text, o.data, rank);
	if (!rc && (o.refit_gather || plan.refit_gather[0]))
		rt_gather_parse(o.refit_gather ? o.refit_gather :
				plan.refit_gather, &gather);
	if (!rc)
		rc = rt_limits_plan(&plan, o.global_batch, o.micro_batch);
	if (!rc)
		rc = rt_model_shape(&shape, &plan, o.global_batch,
				    o.micro_batch);
	if (!(rc = agree(rc)))
		rc = rt_limits_memory(&shape, &plan, &o);
	if (!(rc = agree(rc))) {
		co.timeout_s = o.timeout_s;
		co.record_path = o.record;
		rc = coll_new(&c, &plan, &co);
	}
	if (!(rc = agree(rc))) {
		/* ranks are the parallelism: one BLAS thread each unless the
		 * environment says otherwise */
		int cuda = !strcmp(o.device, "cuda");

		rc = cuda ? rt_device_select_gpu(&dev, &plan, &shape,
						  o.force) : 0;
		if (!rc) {
			rc = kern_init(&kern, cuda ? KERN_CUDA : KERN_CPU,
				       threads ? 0 : 1);
			kern_up = !rc;
			if (rc)
				rc = rt_error(RT_EKERNEL, "%s",
					      kern_error_text(rc));
		}
	}
	if (!(rc = agree(rc)) && !strcmp(o.device, "cuda")) {
		/* NCCL with a GPU per rank; else MPI (no device-aware MPI
		 * assumed) staging device buffers through the host */
		rc = rt_device_pick_comm(&dev, o.comm, &nccl);
		if (!(rc = agree(rc)) && nccl)
			rc = coll_use_nccl(c, &kern);
		else if (!rc)
			coll_set_staging(c, &kern);
	}
	if (!(rc = agree(rc))) {
		rc = rt_model_init(&model, &plan, &shape, &kern, c);
		/* the optimizer before --load, which checks the checkpoint's */
		model.sgd = !strcmp(o.optimizer, "sgd");
	}
	if (!(rc = agree(rc)) && o.load)
		rc = rt_ckpt_load(&model, &plan, o.load);
	if (!(rc = agree(rc)))
		rc = open_outputs(&o, rank == 0, &out);
	rc = agree(rc);
	if (rc == RT_EPEER)
		rt_error_once(rc, "stopped: %s", rt_strerror(rc));
	if (!rc) {
		long long steps = o.steps >= 0 ? o.steps : plan.rt.steps;

		if (o.lr > 0)
			model.lr = o.lr;
		model.text = &text;
		/* --bench-comm trains nothing: no steps line */
		describe(&plan, &model, &kern, &dev,
			 o.bench_iters ? -1 : steps, nccl);
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
				rc = rt_ckpt_save(&model, &plan, o.save,
						  (int)o.keep);
			if (!rc && o.dump)
				rc = rt_model_dump(&model, out.dump);
			if (!rc && o.logprobs)
				rc = rt_infer_logprobs(&model, &plan,
						       model.step + 1,
						       out.logprobs);
			if (!rc && o.export)
				rc = rt_export_write(&model, gather,
						     out.export,
						     export_is_file(o.export) ?
						     NULL : o.export);
			if (!rc)
				rc = coll_finish(c);
		}
		rc = close_outputs(&out, rc);
		if (rc && rc != RT_EDIVERGED) {
			/* other ranks may wait in a collective forever (a
			 * divergence stops every rank at the same step) */
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
