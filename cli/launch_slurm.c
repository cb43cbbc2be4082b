/*
 * launch_slurm: gtplan run's launchers beyond one mpirun (launch.h):
 * srun inside a Slurm allocation, an sbatch script, mpirun's hostfile.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

static long long per_node(const struct launch_opts *o, long long world)
{
	return o->per_node > 0 ? o->per_node : world;
}

static long long nodes(const struct launch_opts *o, long long world)
{
	long long p = per_node(o, world);

	return o->nodes > 0 ? o->nodes : (world + p - 1) / p;
}

/* 1 when gtplan-run gets --device cuda (then srun asks for GPUs). */
static int on_gpus(const struct launch_opts *o)
{
	for (size_t k = 0; k + 1 < o->n_args; k++)
		if (!strcmp(o->args[k], "--device") &&
		    !strcmp(o->args[k + 1], "cuda"))
			return 1;
	for (size_t k = 0; k < o->n_args; k++)
		if (!strcmp(o->args[k], "--device=cuda"))
			return 1;
	return 0;
}

int launch_srun_build(struct launch_cmd *c, const struct launch_opts *o,
		      const char *srun, const char *runner, const char *plan,
		      long long world)
{
	size_t n = 0, cap = 12 + o->n_args;
	long long p = per_node(o, world);

	c->argc = 0;
	c->argv = calloc(cap, sizeof(*c->argv));
	if (!c->argv)
		return -1;
	snprintf(c->np, sizeof(c->np), "%lld", world);
	snprintf(c->words[0], sizeof(c->words[0]), "--nodes=%lld",
		 nodes(o, world));
	snprintf(c->words[1], sizeof(c->words[1]), "--ntasks=%lld", world);
	snprintf(c->words[2], sizeof(c->words[2]), "--ntasks-per-node=%lld", p);
	snprintf(c->words[3], sizeof(c->words[3]), "--gpus-per-node=%lld", p);
	c->argv[n++] = srun;
	c->argv[n++] = "--mpi=pmix";
	for (int k = 0; k < 3; k++)
		c->argv[n++] = c->words[k];
	if (on_gpus(o))
		c->argv[n++] = c->words[3];
	launch_cmd_finish(c, n, o, runner, plan);
	return 0;
}

int launch_sbatch_write(FILE *f, const struct launch_opts *o,
			const char *runner, const char *plan, long long world)
{
	struct launch_cmd c = { NULL, 0, "", { "" } };
	long long p = per_node(o, world);
	int rc;

	if (launch_srun_build(&c, o, "srun", runner, plan, world))
		return -1;
	fprintf(f, "#!/bin/bash\n"
		"# gtplan run --launcher sbatch: %lld ranks of gtplan-run, "
		"%lld node%s x %lld\n"
		"#SBATCH --job-name=gtplan-run\n"
		"#SBATCH --nodes=%lld\n"
		"#SBATCH --ntasks-per-node=%lld\n", world, nodes(o, world),
		nodes(o, world) == 1 ? "" : "s", p, nodes(o, world), p);
	if (on_gpus(o))
		fprintf(f, "#SBATCH --gpus-per-node=%lld\n", p);
	fputs("set -eu\n", f);
	rc = launch_cmd_print(f, &c);
	launch_cmd_release(&c);
	return rc || ferror(f) ? -1 : 0;
}

/* The hostfile's text: one line `H slots=P` per host of --hosts, which
 * must name one host per node of the plan. 0, or -1 (a write error, or
 * with err: a host count that is not the plan's nodes). */
static int hostfile_write(FILE *f, const struct launch_opts *o, char *err,
			  size_t errlen)
{
	long long want = o->nodes > 0 ? o->nodes : 1, n = 0;
	const char *h = o->hosts;

	for (const char *p = h; *p; p += strcspn(p, ","), p += *p == ',')
		n += strcspn(p, ",") > 0;
	if (n != want) {
		snprintf(err, errlen, "--hosts names %lld host%s but the plan "
			 "trains on %lld node%s\nhint: name one host per node, "
			 "in node order: --hosts H0,H1,...", n, n == 1 ? "" : "s",
			 want, want == 1 ? "" : "s");
		return -1;
	}
	for (const char *p = h; *p; p += strcspn(p, ","), p += *p == ',') {
		int len = (int)strcspn(p, ",");

		if (len)
			fprintf(f, "%.*s slots=%lld\n", len, p,
				o->per_node > 0 ? o->per_node : 1);
	}
	return ferror(f) ? -1 : 0;
}

int launch_check_launcher(const struct launch_opts *o, char *err,
			  size_t errlen)
{
	if (o->launcher && o->oversubscribe) {
		snprintf(err, errlen, "--oversubscribe is mpirun's: with srun, "
			 "the allocation places the ranks");
		return -1;
	}
	if (o->launcher && o->allow_root) {
		snprintf(err, errlen, "--allow-run-as-root is mpirun's: srun "
			 "starts ranks as root without it");
		return -1;
	}
	if (o->launcher && !strcmp(o->launcher, "sbatch") && !o->plan_out &&
	    !o->dry_run) {
		snprintf(err, errlen, "--launcher sbatch runs the plan later: "
			 "keep it with -o FILE (on a file system the nodes "
			 "share)");
		return -1;
	}
	if (o->hosts && (o->launcher || !o->hostfile)) {
		snprintf(err, errlen, "--hosts writes mpirun's hostfile: name it "
			 "with --hostfile FILE (srun and sbatch take the hosts "
			 "from Slurm)");
		return -1;
	}
	return 0;
}

int launch_write_kept(const char *path, const struct launch_opts *o,
		      const char *runner, const char *plan, long long world,
		      char *err, size_t errlen)
{
	FILE *f = fopen(path, "w");
	int rc;

	err[0] = '\0';
	if (!f) {
		snprintf(err, errlen, "cannot write '%s': %s", path,
			 strerror(errno));
		return LAUNCH_USAGE;
	}
	rc = o->hosts && !o->launcher ?
	     hostfile_write(f, o, err, errlen) :
	     launch_sbatch_write(f, o, runner, plan, world);
	if (fclose(f) && !rc)
		rc = -1;
	if (rc && !*err)
		snprintf(err, errlen, "error writing '%s': %s", path,
			 strerror(errno));
	return rc ? LAUNCH_USAGE : 0;
}

void launch_srun_hint(const struct launch_opts *o, long long world,
		      char *err, size_t errlen)
{
	const char *job = getenv("SLURM_JOB_ID");
	size_t n = strlen(err);
	long long p = per_node(o, world), m = nodes(o, world);

	if (!job || !*job || n >= errlen)
		return;
	snprintf(err + n, errlen - n, "\nhint: inside Slurm job %s: its "
		 "allocation must hold the plan's %lld rank%s, %lld node%s x "
		 "%lld (salloc --nodes=%lld --ntasks-per-node=%lld)", job,
		 world, world == 1 ? "" : "s", m, m == 1 ? "" : "s", p, m, p);
}
