/*
 * launch: `gtplan run`'s launcher. Starts gtplan-run on a plan under
 * mpirun, one rank per GPU of the plan's training world:
 *
 *   mpirun [--allow-run-as-root] [--oversubscribe --bind-to none]
 *          -np W GTPLAN-RUN PLAN.json [--force] [RUNTIME OPTION...]
 *
 * It parses run's own options and the runtime options it passes through,
 * builds that argument vector, prints it shell-quoted (--dry-run) or runs
 * it with fork + execvp (no shell) and waits, forwarding SIGINT and
 * SIGTERM to mpirun. The plan travels in a file: -o FILE (kept) or a
 * mkstemp file in $TMPDIR or /tmp, removed before launch_plan returns on
 * every path.
 *
 * Errors are values: a launch_status and a message (a line, then
 * "hint: ..." lines) in the caller's buffer. Nothing here exits; only
 * --dry-run's command line is printed, to the stream the caller names.
 * Ownership: a launch_opts owns its args array, not the strings in it
 * (they are argv's); a launch_cmd owns its vector and -np's digits only.
 */
#ifndef GTPLAN_LAUNCH_H
#define GTPLAN_LAUNCH_H

#include <stddef.h>
#include <stdio.h>

/* The same numbers as gtplan's exit codes (docs/design.md §4.1). */
enum launch_status {
	LAUNCH_OK = 0,     /* ran (or printed) and the run succeeded */
	LAUNCH_FAILED = 1, /* mpirun or a rank failed, or a signal stopped it */
	LAUNCH_USAGE = 2   /* bad option, a program not found, file I/O,
			    * or gtplan-run's own usage/I/O error (its 2) */
};

struct launch_opts {
	const char *mpirun;     /* --mpirun; NULL: $GTPLAN_MPIRUN or mpirun */
	const char *runner;     /* --gtplan-run; NULL: launch_find_runner */
	const char *plan_out;   /* -o FILE: the plan, kept; NULL: temporary */
	int oversubscribe;      /* --oversubscribe: also --bind-to none */
	int allow_root;         /* --allow-run-as-root, passed to mpirun */
	int dry_run;            /* print the command, run nothing */
	int force;              /* run a plan with errors; gtplan-run --force */
	const char **args;      /* gtplan-run's options, in command-line order */
	size_t n_args;
	const char *launcher;   /* --launcher: NULL (mpirun), "srun", "sbatch" */
	const char *hosts;      /* --hosts H1,H2,...: mpirun's hostfile */
	const char *hostfile;   /* --hostfile FILE: where it goes (kept) */
	const char *script;     /* --script FILE: sbatch's script (kept) */
	long long nodes;        /* the plan's training nodes and GPUs per */
	long long per_node;     /* node (cmd_run sets them; 0: one node) */
};

/* `gtplan help run`. */
extern const char launch_help[];

/* A zeroed launch_opts is ready to use; release frees args. */
void launch_opts_release(struct launch_opts *o);

/* Takes argv[*i] (and its value, advancing *i) when it is one of run's
 * options: --mpirun, --gtplan-run, --oversubscribe, --allow-run-as-root,
 * --dry-run, --force, a runtime option gtplan-run takes (--steps N or
 * --steps=N, ...), or `--`, after which every word is gtplan-run's, as is.
 * Returns 1 when it took it, 0 when argv[*i] is none of them, -1 with the
 * reason in err (an option without its value, out of memory). */
int launch_parse_option(struct launch_opts *o, int argc, char **argv,
			int *i, char *err, size_t errlen);

/* The mpirun to start: o->mpirun, else $GTPLAN_MPIRUN when set and not
 * empty, else "mpirun". Never NULL. */
const char *launch_mpirun_name(const struct launch_opts *o);

/* Where name runs from: name itself when it holds a '/' and is an
 * executable file, else the first PATH entry (empty entry: the current
 * folder; no PATH: /usr/bin:/bin) that holds it as one. Returns 0 with
 * the path in out, -1 when none (or out is too small). */
int launch_which(const char *name, char *out, size_t outlen);

/* The default gtplan-run: the one in the folder of exe (this binary, from
 * /proc/self/exe when exe is NULL), else the one on PATH. Returns 0 with
 * its path in out, -1 when neither exists. */
int launch_find_runner(const char *exe, char *out, size_t outlen);

/* The command line. argv points into o, the arguments and c->np: build
 * the command where it stays, and keep them alive while it is used. */
struct launch_cmd {
	const char **argv;      /* NULL-terminated */
	size_t argc;
	char np[24];            /* W, in digits */
	char words[4][48];      /* srun's --nodes=N, ... */
};

/* Builds the vector above. Returns 0, or -1 when out of memory (c is then
 * released). */
int launch_cmd_build(struct launch_cmd *c, const struct launch_opts *o,
		     const char *mpirun, const char *runner, const char *plan,
		     long long world);
void launch_cmd_release(struct launch_cmd *c);
/* Ends c->argv after its first n words (the launcher's own) with what
 * every launcher runs: RUNNER PLAN [--force] ARGS..., then NULL; sets
 * c->argc. The vector must have room for 3 + o->n_args more. */
void launch_cmd_finish(struct launch_cmd *c, size_t n,
		       const struct launch_opts *o, const char *runner,
		       const char *plan);

/* launch_slurm.c: other launchers than mpirun.
 *   srun    srun --mpi=pmix --nodes=N --ntasks=W --ntasks-per-node=P
 *           [--gpus-per-node=P with --device cuda] RUNNER PLAN [ARGS],
 *           inside an allocation (salloc, or an sbatch script);
 *   sbatch  a batch script (#SBATCH --nodes, --ntasks-per-node,
 *           --gpus-per-node, then that srun line) written to --script FILE
 *           (default: the plan's -o FILE with .sbatch added) and submitted
 *           with `sbatch FILE`; the plan must outlive gtplan (-o FILE);
 *   mpirun  with --hosts H1,...,HN (N: the plan's nodes): a hostfile, one
 *           line `H slots=P` per node, passed as --hostfile, so that rank r
 *           lands on node r / P as the plan places it.
 * launch_srun_build fills c like launch_cmd_build; launch_sbatch_write
 * writes the script's text. Each returns 0, or -1 (out of memory or a
 * write error). */
int launch_srun_build(struct launch_cmd *c, const struct launch_opts *o,
		      const char *srun, const char *runner, const char *plan,
		      long long world);
int launch_sbatch_write(FILE *f, const struct launch_opts *o,
			const char *runner, const char *plan, long long world);
/* The launcher options that do not go together (sbatch without -o, --hosts
 * without --hostfile or with Slurm, mpirun's --oversubscribe and
 * --allow-run-as-root with Slurm): 0, or -1 with the reason in err. */
int launch_check_launcher(const struct launch_opts *o, char *err,
			  size_t errlen);
/* After a failed srun inside an allocation ($SLURM_JOB_ID set): appends
 * to err a hint that the allocation must hold the plan's nodes and ranks
 * (srun's own error names what it lacked). */
void launch_srun_hint(const struct launch_opts *o, long long world,
		      char *err, size_t errlen);
/* Writes the hostfile (--hosts, mpirun) or else the sbatch script to
 * path, kept. Returns 0, or LAUNCH_USAGE with the reason in err. */
int launch_write_kept(const char *path, const struct launch_opts *o,
		      const char *runner, const char *plan, long long world,
		      char *err, size_t errlen);

/* Writes s as one POSIX shell word: as is when it is made only of
 * characters no shell treats specially, else in single quotes ('\''
 * for a quote). Returns 0, or -1 on a write error. */
int launch_quote(FILE *f, const char *s);

/* The command as one line of shell words. Returns 0, or -1 on a write
 * error. */
int launch_cmd_print(FILE *f, const struct launch_cmd *c);

/* Runs argv[0] (execvp: PATH-searched) with argv, no shell, in this
 * process group, and waits for it. SIGINT and SIGTERM sent to this
 * process by kill(2) are forwarded to the child; the terminal's own ^C
 * already reaches the child, which shares the foreground group, and is
 * not sent twice. On return *wstatus is waitpid's status and *signalled
 * the forwarded or received signal (0: none). Returns 0 when the child
 * ran (whatever its status), -1 with the reason in err when it could not
 * be started (fork failed, or execvp did: not found, not executable). */
int launch_spawn_wait(char *const argv[], int *wstatus, int *signalled,
		      char *err, size_t errlen);

/* The whole launch of a `world`-rank plan: write_plan(f, arg) writes the
 * plan JSON into o->plan_out or a temporary file ($TMPDIR or /tmp,
 * removed before return on every path), then the command is printed to
 * out (o->dry_run: with PLAN.json standing for the plan unless -o named
 * it; nothing runs) or run and waited for. write_plan returns 0, or -1
 * with errno set. Returns a launch_status; when not LAUNCH_OK, err holds
 * what went wrong and a hint (mpirun not found: install Open MPI; a run
 * that failed as root without Open MPI's consent, or with more ranks
 * than this machine's processors: what to pass). */
int launch_plan(const struct launch_opts *o, long long world,
		int (*write_plan)(FILE *f, void *arg), void *arg, FILE *out,
		char *err, size_t errlen);

#endif
