/*
 * launch: builds, prints and runs `gtplan run`'s mpirun command
 * (launch.h states the contracts).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "argopt.h"
#include "errmsg.h"
#include "launch.h"

const char launch_help[] =
"usage: gtplan run CONFIG [OVERRIDE...] [RUNTIME OPTION...] [run options]\n"
"                 [-- GTPLAN-RUN OPTION...]\n"
"\n"
"Plans CONFIG with every check `gtplan plan` makes, prints the findings\n"
"as plan does, and starts the plan's training world under MPI:\n"
"\n"
"  mpirun -np W gtplan-run PLAN.json [RUNTIME OPTION...]\n"
"\n"
"W is the plan's world size (the GPUs that train). A plan with errors\n"
"(or warnings, with --strict) is refused unless --force, which gtplan-run\n"
"then gets too. PLAN.json is a temporary file ($TMPDIR or /tmp), removed\n"
"afterwards, unless -o FILE names one to keep.\n"
"\n"
"runtime options, passed to gtplan-run (see gtplan-run --help):\n"
"  --device cpu|cuda  --steps N  --global-batch N  --micro-batch N\n"
"  --log FILE  --record FILE  --dump-weights FILE  --optimizer adam|sgd\n"
"  --lr X  --timeout S  --comm auto|nccl|mpi  --bench-comm N\n"
"  --data FILE  --logprobs FILE  --export FILE  --refit-gather ORDER\n"
"  --save DIR  --save-every N  --keep N  --load DIR  --mem-budget GIB\n"
"  -- OPTION...       every word after -- goes to gtplan-run as is, for\n"
"                     options a newer gtplan-run has\n"
"\n"
"run options:\n"
"  --mpirun PATH      the launcher (default: $GTPLAN_MPIRUN, else mpirun\n"
"                     on PATH; Open MPI's or a compatible one)\n"
"  --gtplan-run PATH  the runtime (default: gtplan-run next to this\n"
"                     gtplan, else on PATH)\n"
"  --oversubscribe    start more ranks than this machine has cores\n"
"                     (mpirun --oversubscribe --bind-to none); never\n"
"                     added on its own: on a cluster, too few slots is a\n"
"                     mistake to see, not to hide; mpirun only\n"
"  --allow-run-as-root  pass mpirun --allow-run-as-root (Open MPI refuses\n"
"                     root otherwise, unless OMPI_ALLOW_RUN_AS_ROOT=1 and\n"
"                     OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set); gtplan\n"
"                     never sets them for you; mpirun only (srun starts\n"
"                     ranks as root without it)\n"
"  --dry-run          print the mpirun command, shell-quoted, and exit 0\n"
"                     without running it (PLAN.json stands for the\n"
"                     temporary plan; with -o FILE the plan is written)\n"
"  --launcher mpirun|srun|sbatch  how the ranks start: mpirun (default);\n"
"                     srun --mpi=pmix inside a Slurm allocation (outside\n"
"                     one, srun asks Slurm for its own), with --nodes,\n"
"                     --ntasks, --ntasks-per-node (and, with --device\n"
"                     cuda, --gpus-per-node) from the plan's training\n"
"                     nodes; sbatch: a batch script of that srun line,\n"
"                     written to --script FILE (default: the -o plan's\n"
"                     name + .sbatch; -o is needed) and submitted;\n"
"                     --dry-run prints the whole script\n"
"  --hosts H0,H1,...  with mpirun: write --hostfile FILE, one line 'H\n"
"                     slots=P' per plan node (P GPUs each), and pass it\n"
"  --hostfile FILE    mpirun's hostfile (written when --hosts is given)\n"
"  -o FILE            write the plan to FILE and keep it\n"
"  --format, --strict, --color  as for gtplan plan\n"
"\n"
"mpirun (or srun) runs without a shell; ^C or SIGTERM stops the ranks\n"
"through it.\n"
"Exit 0 the run succeeded, 1 the plan was refused or the run failed\n"
"(mpirun or a rank exited non-zero, or a signal stopped it), 2 usage or\n"
"I/O: a bad option, mpirun or gtplan-run not found, the plan file not\n"
"written, or gtplan-run's own usage or I/O error (its exit status 2).\n";

/* gtplan-run's options that take a value (runtime/rt_opts.c). */
static const char *const runtime_valued[] = {
	"--device", "--steps", "--global-batch", "--micro-batch", "--log",
	"--record", "--dump-weights", "--optimizer", "--lr", "--timeout",
	"--comm", "--bench-comm", "--data", "--logprobs", "--export",
	"--refit-gather", "--save", "--save-every", "--load", "--keep",
	"--mem-budget",
};

void launch_opts_release(struct launch_opts *o)
{
	free(o->args);
	o->args = NULL;
	o->n_args = 0;
}

static int push_arg(struct launch_opts *o, const char *a)
{
	const char **v = realloc(o->args, (o->n_args + 1) * sizeof(*v));

	if (!v)
		return -1;
	o->args = v;
	o->args[o->n_args++] = a;
	return 0;
}

int launch_parse_option(struct launch_opts *o, int argc, char **argv,
			int *i, char *err, size_t errlen)
{
	const struct {
		const char *name;
		int *flag;
	} flags[] = {
		{ "--oversubscribe", &o->oversubscribe },
		{ "--allow-run-as-root", &o->allow_root },
		{ "--dry-run", &o->dry_run },
		{ "--force", &o->force },
	};
	const char *a = argv[*i], *v;

	if (!strcmp(a, "--")) {
		while (++*i < argc)
			if (push_arg(o, argv[*i]))
				return errmsg_set(-1, err, errlen,
						  "out of memory");
		*i = argc - 1;
		return 1;
	}
	for (size_t k = 0; k < sizeof(flags) / sizeof(*flags); k++)
		if (!strcmp(a, flags[k].name)) {
			*flags[k].flag = 1;
			return 1;
		}
	if (argopt_take("--launcher", argc, argv, i, &v)) {
		if (!v)
			return errmsg_set(-1, err, errlen, "--launcher needs "
					  "mpirun, srun or sbatch");
		if (strcmp(v, "mpirun") && strcmp(v, "srun") &&
		    strcmp(v, "sbatch"))
			return errmsg_set(-1, err, errlen, "unknown --launcher "
					  "'%s' (use mpirun, srun or sbatch)",
					  v);
		o->launcher = strcmp(v, "mpirun") ? v : NULL;
		return 1;
	}
	for (size_t k = 0; k < 5; k++) {
		static const char *const names[] = { "--hosts", "--hostfile",
			"--script", "--mpirun", "--gtplan-run" };
		const char **dst[] = { &o->hosts, &o->hostfile, &o->script,
				       &o->mpirun, &o->runner };

		if (!argopt_take(names[k], argc, argv, i, &v))
			continue;
		if (!v)
			return errmsg_set(-1, err, errlen, "%s needs a %s",
					  names[k], k < 3 ? "value" : "path");
		*dst[k] = v;
		return 1;
	}
	for (size_t k = 0; k < sizeof(runtime_valued) /
			       sizeof(*runtime_valued); k++) {
		const char *name = runtime_valued[k];

		if (!argopt_take(name, argc, argv, i, &v))
			continue;
		if (!v)
			return errmsg_set(-1, err, errlen, "%s needs a value",
					  name);
		if (push_arg(o, name) || push_arg(o, v))
			return errmsg_set(-1, err, errlen, "out of memory");
		return 1;
	}
	return 0;
}

const char *launch_mpirun_name(const struct launch_opts *o)
{
	const char *env = getenv("GTPLAN_MPIRUN");

	if (o->mpirun)
		return o->mpirun;
	return env && *env ? env : "mpirun";
}

/* 1 when path is a regular file this process may execute. */
static int executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

static int copy_path(char *out, size_t outlen, const char *dir, size_t n,
		     const char *name)
{
	int len;

	if (n == 0) /* an empty PATH entry is the current folder */
		len = snprintf(out, outlen, "%s", name);
	else
		len = snprintf(out, outlen, "%.*s/%s", (int)n, dir, name);
	return len < 0 || (size_t)len >= outlen ? -1 : 0;
}

int launch_which(const char *name, char *out, size_t outlen)
{
	const char *path = getenv("PATH"), *p;

	if (!name || !*name)
		return -1;
	if (strchr(name, '/')) {
		if (!executable(name) ||
		    copy_path(out, outlen, NULL, 0, name))
			return -1;
		return 0;
	}
	if (!path)
		path = "/usr/bin:/bin";
	for (p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (copy_path(out, outlen, p, n, name) == 0 && executable(out))
			return 0;
		if (!end)
			break;
		p = end;
	}
	return -1;
}

int launch_find_runner(const char *exe, char *out, size_t outlen)
{
	char self[4096];
	const char *slash;

	if (!exe) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n > 0) {
			self[n] = '\0';
			exe = self;
		}
	}
	slash = exe ? strrchr(exe, '/') : NULL;
	if (slash && copy_path(out, outlen, exe, (size_t)(slash - exe),
			       "gtplan-run") == 0 && executable(out))
		return 0;
	return launch_which("gtplan-run", out, outlen);
}

void launch_cmd_release(struct launch_cmd *c)
{
	free(c->argv);
	c->argv = NULL;
	c->argc = 0;
}

int launch_cmd_build(struct launch_cmd *c, const struct launch_opts *o,
		     const char *mpirun, const char *runner, const char *plan,
		     long long world)
{
	size_t n = 0, cap = 14 + o->n_args;

	c->argc = 0;
	c->argv = calloc(cap, sizeof(*c->argv));
	if (!c->argv)
		return -1;
	snprintf(c->np, sizeof(c->np), "%lld", world);
	c->argv[n++] = mpirun;
	if (o->allow_root)
		c->argv[n++] = "--allow-run-as-root";
	if (o->oversubscribe) {
		/* more ranks than cores: pinning them would stack them */
		c->argv[n++] = "--oversubscribe";
		c->argv[n++] = "--bind-to";
		c->argv[n++] = "none";
	}
	if (o->hostfile) {
		c->argv[n++] = "--hostfile";
		c->argv[n++] = o->hostfile;
	}
	c->argv[n++] = "-np";
	c->argv[n++] = c->np;
	launch_cmd_finish(c, n, o, runner, plan);
	return 0;
}

void launch_cmd_finish(struct launch_cmd *c, size_t n,
		       const struct launch_opts *o, const char *runner,
		       const char *plan)
{
	c->argv[n++] = runner;
	c->argv[n++] = plan;
	if (o->force)
		c->argv[n++] = "--force";
	for (size_t k = 0; k < o->n_args; k++)
		c->argv[n++] = o->args[k];
	c->argv[n] = NULL;
	c->argc = n;
}

int launch_quote(FILE *f, const char *s)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyz"
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
				   "_@%+=:,./-";

	if (*s && strspn(s, safe) == strlen(s))
		return fputs(s, f) < 0 ? -1 : 0;
	if (fputc('\'', f) == EOF)
		return -1;
	for (; *s; s++)
		if ((*s == '\'' ? fputs("'\\''", f) : fputc(*s, f)) == EOF)
			return -1;
	return fputc('\'', f) == EOF ? -1 : 0;
}

int launch_cmd_print(FILE *f, const struct launch_cmd *c)
{
	for (size_t k = 0; k < c->argc; k++)
		if ((k && fputc(' ', f) == EOF) || launch_quote(f, c->argv[k]))
			return -1;
	return fputc('\n', f) == EOF || fflush(f) ? -1 : 0;
}

/* The running child and the signal that came in, for the handler. */
static volatile sig_atomic_t child_pid, caught;

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	caught = sig;
	/* kill(2) from someone: pass it on. The terminal's ^C came from
	 * the kernel and already reached mpirun in our process group; a
	 * second SIGINT would make Open MPI's mpirun give up its cleanup. */
	if (child_pid > 0 && si &&
	    (si->si_code == SI_USER || si->si_code == SI_QUEUE))
		kill((pid_t)child_pid, sig);
}

struct saved_signals {
	struct sigaction intr, term;
};

static void catch_signals(struct saved_signals *s)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid sees EINTR */
	sigemptyset(&sa.sa_mask);
	caught = 0;
	child_pid = 0;
	sigaction(SIGINT, &sa, &s->intr);
	sigaction(SIGTERM, &sa, &s->term);
}

static void restore_signals(const struct saved_signals *s)
{
	sigaction(SIGINT, &s->intr, NULL);
	sigaction(SIGTERM, &s->term, NULL);
	child_pid = 0;
}

/* fork + execvp; an execvp failure comes back through a close-on-exec
 * pipe as its errno. Returns the child, or -1 with err set. */
static pid_t spawn(char *const argv[], char *err, size_t errlen)
{
	int fds[2], e = 0;
	pid_t pid;
	ssize_t n;

	if (pipe(fds))
		return errmsg_set(-1, err, errlen,
				  "cannot start '%s': pipe: %s", argv[0],
				  strerror(errno));
	if (fcntl(fds[1], F_SETFD, FD_CLOEXEC)) {
		e = errno;
		close(fds[0]);
		close(fds[1]);
		return errmsg_set(-1, err, errlen, "cannot start '%s': %s",
				  argv[0], strerror(e));
	}
	fflush(NULL); /* nothing buffered twice, nothing lost */
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		execvp(argv[0], argv);
		e = errno;
		n = write(fds[1], &e, sizeof(e));
		_exit(n < 0 ? 126 : 127);
	}
	e = errno;
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return errmsg_set(-1, err, errlen,
				  "cannot start '%s': fork: %s", argv[0],
				  strerror(e));
	}
	child_pid = pid;
	if (caught) /* came before child_pid was set */
		kill(pid, caught);
	do
		n = read(fds[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n == (ssize_t)sizeof(e)) { /* exec failed: reap the child */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		child_pid = 0;
		return errmsg_set(-1, err, errlen, "cannot run '%s': %s",
				  argv[0], strerror(e));
	}
	return pid;
}

/* Starts argv and waits for it (signals as caught by catch_signals).
 * Returns 0 with *wstatus set, or -1 with err set. */
static int wait_child(char *const argv[], int *wstatus, char *err,
		      size_t errlen)
{
	pid_t pid = spawn(argv, err, errlen);

	if (pid < 0)
		return -1;
	while (waitpid(pid, wstatus, 0) < 0)
		if (errno != EINTR) {
			child_pid = 0;
			return errmsg_set(-1, err, errlen,
					  "waiting for '%s': %s", argv[0],
					  strerror(errno));
		}
	child_pid = 0;
	return 0;
}

int launch_spawn_wait(char *const argv[], int *wstatus, int *signalled,
		      char *err, size_t errlen)
{
	struct saved_signals saved;
	int rc;

	*wstatus = 0;
	catch_signals(&saved);
	rc = wait_child(argv, wstatus, err, errlen);
	*signalled = caught;
	restore_signals(&saved);
	return rc;
}

/* Opens the plan file: -o FILE, or a fresh temporary one (its name in
 * tmp, made = 1). Returns the stream, or NULL with err set. */
static FILE *open_plan(const struct launch_opts *o, char *tmp, size_t tmplen,
		       int *made, char *err, size_t errlen)
{
	const char *dir = getenv("TMPDIR");
	FILE *f;
	int fd, e;

	*made = 0;
	if (o->plan_out) {
		if (!(f = fopen(o->plan_out, "w")))
			errmsg_set(0, err, errlen, "cannot write '%s': %s",
				   o->plan_out, strerror(errno));
		return f;
	}
	if (!dir || !*dir)
		dir = "/tmp";
	if (snprintf(tmp, tmplen, "%s/gtplan-plan-XXXXXX", dir) >= (int)tmplen) {
		errmsg_set(0, err, errlen, "TMPDIR '%s' is too long", dir);
		return NULL;
	}
	if ((fd = mkstemp(tmp)) < 0) {
		errmsg_set(0, err, errlen, "cannot create a temporary plan in "
			   "'%s': %s\nhint: set TMPDIR to a writable folder, "
			   "or pass -o FILE", dir, strerror(errno));
		return NULL;
	}
	*made = 1;
	if (!(f = fdopen(fd, "w"))) {
		e = errno;
		close(fd);
		errmsg_set(0, err, errlen, "cannot write '%s': %s", tmp,
			   strerror(e));
	}
	return f;
}

/* After a failed run: the hints that may explain it (mpirun's are
 * mpirun's: srun needs neither flag). */
static void failure_hints(const struct launch_opts *o, long long world,
			  char *err, size_t errlen)
{
	size_t n = strlen(err);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (o->launcher) {
		if (!strcmp(o->launcher, "srun"))
			launch_srun_hint(o, world, err, errlen);
		return;
	}
	if (geteuid() == 0 && !o->allow_root &&
	    !getenv("OMPI_ALLOW_RUN_AS_ROOT") && n < errlen)
		n += (size_t)snprintf(err + n, errlen - n, "\nhint: running as "
			"root: Open MPI refuses unless you pass "
			"--allow-run-as-root or set OMPI_ALLOW_RUN_AS_ROOT=1 "
			"and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
	if (!o->oversubscribe && cores > 0 && world > cores && n < errlen)
		snprintf(err + n, errlen - n, "\nhint: %lld ranks on %ld "
			 "processors: on one machine, pass --oversubscribe",
			 world, cores);
}

/* Runs the command (signals already caught) and says how it went. */
static int run_cmd(const struct launch_opts *o, const struct launch_cmd *c,
		   const char *name, long long world, char *err, size_t errlen)
{
	int ws = 0, code;

	if (!caught && wait_child((char *const *)c->argv, &ws, err, errlen))
		return LAUNCH_USAGE;
	if (caught)
		return errmsg_set(LAUNCH_FAILED, err, errlen,
				  "the run was stopped by %s",
				  caught == SIGINT ? "SIGINT" : "SIGTERM");
	if (WIFSIGNALED(ws))
		return errmsg_set(LAUNCH_FAILED, err, errlen, "the run failed: "
				  "'%s' was killed by signal %d", name,
				  WTERMSIG(ws));
	code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
	if (code == 0)
		return LAUNCH_OK;
	errmsg_set(LAUNCH_FAILED, err, errlen,
		   "the run failed: '%s' exited with status %d", name, code);
	if (code == 2) /* gtplan-run's usage or I/O error, said above */
		return LAUNCH_USAGE;
	failure_hints(o, world, err, errlen);
	return LAUNCH_FAILED;
}

/* --launcher sbatch: the script printed (--dry-run) or written to
 * --script FILE (else PLAN.sbatch) and submitted. */
static int submit(const struct launch_opts *o, const char *sbatch,
		  const char *runner, const char *plan, long long world,
		  FILE *out, char *err, size_t errlen)
{
	char path[4096];
	const char *argv[3] = { sbatch, path, NULL };
	struct launch_cmd c = { argv, 2, "", { "" } };
	int rc;

	if (o->dry_run && !o->script)
		return launch_sbatch_write(out, o, runner, plan, world) ?
		       errmsg_set(LAUNCH_USAGE, err, errlen,
				  "error writing the script: %s",
				  strerror(errno)) : LAUNCH_OK;
	if (snprintf(path, sizeof(path), "%s%s", o->script ? o->script : plan,
		     o->script ? "" : ".sbatch") >= (int)sizeof(path))
		return errmsg_set(LAUNCH_USAGE, err, errlen,
				  "the script's path is too long");
	if ((rc = launch_write_kept(path, o, runner, plan, world, err, errlen)))
		return rc;
	if (o->dry_run)
		return launch_cmd_print(out, &c) ? LAUNCH_USAGE : LAUNCH_OK;
	return run_cmd(o, &c, sbatch, world, err, errlen);
}

int launch_plan(const struct launch_opts *o, long long world,
		int (*write_plan)(FILE *f, void *arg), void *arg, FILE *out,
		char *err, size_t errlen)
{
	char runner[4096], mpirun[4096], tmp[4096] = "";
	const char *plan = o->plan_out ? o->plan_out : "PLAN.json";
	const char *mpi = o->launcher && !o->mpirun ? o->launcher :
			  launch_mpirun_name(o);
	struct launch_cmd c = { NULL, 0, "", { "" } };
	struct saved_signals saved;
	FILE *f = NULL;
	int made = 0, rc, e;

	err[0] = '\0';
	if (world < 1 || launch_check_launcher(o, err, errlen))
		return *err ? LAUNCH_USAGE :
		       errmsg_set(LAUNCH_USAGE, err, errlen,
				  "a world of %lld ranks cannot run", world);
	if (o->runner ? launch_which(o->runner, runner, sizeof(runner)) :
	    launch_find_runner(NULL, runner, sizeof(runner)))
		return errmsg_set(LAUNCH_USAGE, err, errlen, "cannot find "
				  "%s%s%s\nhint: build it (make "
				  "build/gtplan-run), or name it with "
				  "--gtplan-run PATH", o->runner ? "'" :
				  "gtplan-run next to gtplan or on PATH",
				  o->runner ? o->runner : "",
				  o->runner ? "'" : "");
	if (!o->dry_run && launch_which(mpi, mpirun, sizeof(mpirun)))
		return errmsg_set(LAUNCH_USAGE, err, errlen, "cannot find "
				  "'%s'%s\nhint: install Open MPI (Debian: "
				  "apt-get install openmpi-bin), or name the "
				  "launcher with --mpirun PATH or "
				  "GTPLAN_MPIRUN", mpi,
				  strchr(mpi, '/') ? "" : " on PATH");
	catch_signals(&saved); /* from here, a signal ends in the cleanup */
	if (!o->dry_run || o->plan_out) {
		f = open_plan(o, tmp, sizeof(tmp), &made, err, errlen);
		if (!f) {
			rc = LAUNCH_USAGE;
			goto out;
		}
		if (made)
			plan = tmp;
		rc = write_plan(f, arg);
		e = errno;
		if (fclose(f) && !rc) {
			rc = -1;
			e = errno;
		}
		if (rc) {
			rc = errmsg_set(LAUNCH_USAGE, err, errlen,
					"error writing the plan '%s': %s", plan,
					strerror(e));
			goto out;
		}
	}
	if (o->launcher && !strcmp(o->launcher, "sbatch")) {
		rc = submit(o, o->dry_run ? mpi : mpirun, runner, plan, world,
			    out, err, errlen);
		goto out;
	}
	if (o->hosts && (rc = launch_write_kept(o->hostfile, o, runner, plan,
						world, err, errlen)))
		goto out;
	if (o->launcher ? launch_srun_build(&c, o, o->dry_run ? mpi : mpirun,
					    runner, plan, world) :
	    launch_cmd_build(&c, o, o->dry_run ? mpi : mpirun, runner, plan,
			     world)) {
		rc = errmsg_set(LAUNCH_USAGE, err, errlen, "out of memory");
		goto out;
	}
	if (o->dry_run)
		rc = launch_cmd_print(out, &c) ?
		     errmsg_set(LAUNCH_USAGE, err, errlen,
				"error writing the command line: %s",
				strerror(errno)) : LAUNCH_OK;
	else
		rc = run_cmd(o, &c, mpi, world, err, errlen);
out:
	launch_cmd_release(&c);
	if (made)
		unlink(tmp);
	restore_signals(&saved);
	return rc;
}
