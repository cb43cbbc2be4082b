/*
 * rt_opts: gtplan-run's command line (see rt_opts.h).
 */
#include "rt_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt_dir.h"
#include "rt_err.h"
#include "rt_export.h"
#include "rt_model.h" /* RCHECK */
#include "rt_text.h"

void rt_opts_usage(FILE *f)
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
"                        to a new step directory DIR/iter_NNNNNNN: one\n"
"                        file per writing rank and rank 0's metadata.json\n"
"                        (weights, Adam state, step), fsynced, then named\n"
"                        by DIR/latest; a crash during a save leaves the\n"
"                        one before loadable\n"
"  --save-every N        with --save: also after every N-th step\n"
"  --keep N              with --save: keep the newest N checkpoints in DIR\n"
"                        (default %d; 0 keeps all)\n"
"  --load DIR            start from the checkpoint DIR/latest names (or\n"
"                        the step directory DIR), saved under any layout\n"
"                        of the same model, seed, batch and optimizer;\n"
"                        --steps is then the last step, not the number\n"
"                        to train\n"
"  --mem-budget GIB      the memory one rank may use on --device cpu\n"
"                        (default: 90%% of the host's memory, or of its\n"
"                        cgroup's limit, over the ranks on the host); a\n"
"                        plan that needs more is refused before any\n"
"                        allocation\n"
"  --force               run a plan that has error diagnostics, or whose\n"
"                        buffers exceed the GPU's free memory\n"
"  -h, --help            this text\n", RT_CKPT_KEEP_DEFAULT);
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
	/* the bound first: (long long)v is undefined past its range */
	if (v > 1e15 || v != (double)(long long)v)
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
		"--save-every", "--load", "--keep", "--mem-budget",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(a, names[i]))
			return 1;
	return 0;
}

/* Over 80 lines on purpose: one flat branch per option, then one check per
 * rule of rt_opts.h, read as a table in the order of the help text. */
int rt_opts_parse(struct rt_opts *o, int argc, char **argv)
{
	int keep = 0; /* --keep given */

	memset(o, 0, sizeof(*o));
	o->device = "cpu";
	o->optimizer = "adam";
	o->comm = "auto";
	o->steps = -1;
	o->keep = RT_CKPT_KEEP_DEFAULT;
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
		} else if (!strcmp(a, "--keep")) {
			RCHECK(parse_count(a, v, 0, &o->keep));
			keep = 1;
		} else if (!strcmp(a, "--mem-budget")) {
			RCHECK(parse_num(a, v, 1e-9, &o->mem_budget));
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
	if ((o->save_every || keep) && !o->save)
		return rt_error_once(RT_EUSAGE, "%s wants --save DIR (where to "
				     "save)", keep ? "--keep" : "--save-every");
	if (o->keep > 1000000)
		return rt_error_once(RT_EUSAGE, "--keep: at most 1000000 "
				     "checkpoints, not %lld (0 keeps all)",
				     o->keep);
	return 0;
}
