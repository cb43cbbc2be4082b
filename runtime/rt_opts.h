/*
 * rt_opts: gtplan-run's command line: the options, their defaults and
 * their checks, and the --help text.
 *
 * Ownership: a struct rt_opts is the caller's value; its strings point
 * into argv (no release).
 */
#ifndef GTPLAN_RT_OPTS_H
#define GTPLAN_RT_OPTS_H

#include <stdio.h>

/* The options as given; strings point into argv. */
struct rt_opts {
	const char *plan, *device, *log, *record, *dump, *optimizer, *comm;
	const char *data, *logprobs, *export, *refit_gather; /* NULL: default */
	long long steps, global_batch, micro_batch; /* steps -1: the plan's */
	long long bench_iters; /* --bench-comm N: 0 = no bench */
	double timeout_s, lr; /* lr 0: the plan's */
	int force, help;
	const char *save, *load; /* checkpoint directories */
	long long save_every;    /* 0: save after the last step only */
	long long keep;          /* --keep: checkpoints kept, 0 all */
	double mem_budget;       /* --mem-budget GiB: 0 the host's share */
};


/* The --help text, to f. */
void rt_opts_usage(FILE *f);

/* Fills o from argv (defaults for what is not given) and checks the
 * options alone and together: RT_EUSAGE, said once (rt_error_once), for
 * an unknown option, a missing or bad value, no plan or two plans, or
 * options that do not go together. With -h/--help, o->help is set and the
 * other checks are skipped. */
int rt_opts_parse(struct rt_opts *o, int argc, char **argv);

#endif
