/*
 * Tests for launch (`gtplan run`'s launcher): run's option parsing and
 * the runtime options it passes on, the argument vector, shell quoting,
 * finding mpirun and gtplan-run, and launch_plan end to end against a
 * fake mpirun (a shell script that records what it was given): exit
 * statuses, hints, the temporary plan removed on every path, --dry-run,
 * -o, and SIGTERM forwarded to the child.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "launch.h"

static char dir[64];   /* this test's folder */
static char path[256]; /* scratch path */
static char made[4][64];
static int n_made;

/* Removes the test's folders when its process exits (Check forks each
 * test, and a failed check exits the fork too). */
static void remove_dirs(void)
{
	char cmd[128];

	for (int i = 0; i < n_made; i++) {
		snprintf(cmd, sizeof(cmd), "/bin/rm -rf '%s'", made[i]);
		if (system(cmd) != 0)
			fprintf(stderr, "test_launch: cannot remove %s\n",
				made[i]);
	}
}

/* A fresh folder for this test. */
static const char *mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_launch.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_lt(n_made, 4);
	if (n_made == 0)
		atexit(remove_dirs);
	snprintf(made[n_made++], sizeof(made[0]), "%s", dir);
	return dir;
}

static const char *in_dir(const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* Writes text to dir/name with the given mode; returns its path. */
static const char *put(const char *name, const char *text, mode_t mode)
{
	const char *p = in_dir(name);
	FILE *f = fopen(p, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(p, mode), 0);
	return p;
}

/* The whole of dir/name as a fresh string, or NULL when it is absent. */
static char *slurp(const char *name)
{
	FILE *f = fopen(in_dir(name), "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc((size_t)n + 1, 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), n);
	fclose(f);
	return buf;
}

/* Files in folder d other than the test's own (names not starting with
 * "own-"). */
static int foreign_files(const char *d)
{
	char cmd[256];
	FILE *p;
	int n = 0, c;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -v '^own-'", d);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while ((c = fgetc(p)) != EOF)
		n += c == '\n';
	pclose(p);
	return n;
}

static int parse(struct launch_opts *o, int argc, char **argv, char *err)
{
	int took = 0;

	for (int i = 0; i < argc; i++) {
		int rc = launch_parse_option(o, argc, argv, &i, err, 128);

		if (rc < 0)
			return -1;
		took += rc;
	}
	return took;
}

START_TEST(options_are_taken_and_passed_on)
{
	char *argv[] = {
		"--steps", "2", "--lr=0.5", "--oversubscribe", "--mpirun",
		"/opt/mpi/bin/mpirun", "--gtplan-run=/x/gtplan-run",
		"--dry-run", "--force", "--allow-run-as-root", "--log",
		"a b.jsonl", "--device", "cpu", "--", "--save", "DIR",
		"--steps", "x=y",
	};
	struct launch_opts o = { 0 };
	char err[128];
	const char *want[] = {
		"--steps", "2", "--lr", "0.5", "--log", "a b.jsonl",
		"--device", "cpu", "--save", "DIR", "--steps", "x=y",
	};

	ck_assert_int_eq(parse(&o, 19, argv, err), 11);
	ck_assert_str_eq(o.mpirun, "/opt/mpi/bin/mpirun");
	ck_assert_str_eq(o.runner, "/x/gtplan-run");
	ck_assert(o.oversubscribe && o.dry_run && o.force && o.allow_root);
	ck_assert_uint_eq(o.n_args, 12);
	for (size_t k = 0; k < 12; k++)
		ck_assert_str_eq(o.args[k], want[k]);
	launch_opts_release(&o);
	ck_assert_ptr_null(o.args);
}
END_TEST

START_TEST(options_not_ours_are_left)
{
	char *argv[] = {
		"cfg.yaml", "a.b=1", "--format", "--strict", "-o", "--stepsx",
		"--no-such-option",
	};
	struct launch_opts o = { 0 };
	char err[128];

	for (int i = 0; i < 7; i++) {
		int j = i;

		ck_assert_int_eq(launch_parse_option(&o, 7, argv, &j, err,
						     sizeof(err)), 0);
		ck_assert_int_eq(j, i);
	}
	ck_assert_uint_eq(o.n_args, 0);
}
END_TEST

START_TEST(options_without_values)
{
	char *a1[] = { "--steps" }, *a2[] = { "--mpirun" },
	     *a3[] = { "--gtplan-run" };
	struct launch_opts o = { 0 };
	char err[128];
	int i = 0;

	ck_assert_int_eq(launch_parse_option(&o, 1, a1, &i, err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "--steps needs a value");
	i = 0;
	ck_assert_int_eq(launch_parse_option(&o, 1, a2, &i, err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "--mpirun needs a path");
	i = 0;
	ck_assert_int_eq(launch_parse_option(&o, 1, a3, &i, err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "--gtplan-run needs a path");
	/* a lone `--` passes nothing and is fine */
	char *a4[] = { "--" };
	i = 0;
	ck_assert_int_eq(launch_parse_option(&o, 1, a4, &i, err, sizeof(err)),
			 1);
	ck_assert_uint_eq(o.n_args, 0);
	launch_opts_release(&o);
}
END_TEST

/* The command's words joined by '|'. */
static char *words(const struct launch_cmd *c)
{
	static char buf[1024];

	buf[0] = '\0';
	for (size_t k = 0; k < c->argc; k++) {
		if (k)
			strcat(buf, "|");
		strcat(buf, c->argv[k]);
	}
	ck_assert_ptr_null(c->argv[c->argc]);
	return buf;
}

START_TEST(argv_for_options)
{
	const char *args[] = { "--steps", "2", "--save", "d" };
	struct launch_opts o = { 0 };
	struct launch_cmd c;

	ck_assert_int_eq(launch_cmd_build(&c, &o, "mpirun", "gtplan-run",
					  "p.json", 6), 0);
	ck_assert_str_eq(words(&c), "mpirun|-np|6|gtplan-run|p.json");
	launch_cmd_release(&c);

	o.oversubscribe = o.allow_root = o.force = 1;
	o.args = args;
	o.n_args = 4;
	ck_assert_int_eq(launch_cmd_build(&c, &o, "/usr/bin/mpirun",
					  "/b/gtplan-run", "/tmp/x", 65536), 0);
	ck_assert_str_eq(words(&c), "/usr/bin/mpirun|--allow-run-as-root|"
			 "--oversubscribe|--bind-to|none|-np|65536|"
			 "/b/gtplan-run|/tmp/x|--force|--steps|2|--save|d");
	ck_assert_uint_eq(c.argc, 14);
	launch_cmd_release(&c);
	ck_assert_ptr_null(c.argv);
}
END_TEST

static char *quoted(const char *s)
{
	static char buf[256];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(launch_quote(f, s), 0);
	fclose(f);
	return buf;
}

START_TEST(quoting)
{
	ck_assert_str_eq(quoted("plain/path-1.json"), "plain/path-1.json");
	ck_assert_str_eq(quoted("a=b,c:d@e%f+g_h"), "a=b,c:d@e%f+g_h");
	ck_assert_str_eq(quoted(""), "''");
	ck_assert_str_eq(quoted("a b"), "'a b'");
	ck_assert_str_eq(quoted("it's"), "'it'\\''s'");
	ck_assert_str_eq(quoted("$HOME"), "'$HOME'");
	ck_assert_str_eq(quoted("`x`;rm *"), "'`x`;rm *'");
	ck_assert_str_eq(quoted("a\nb"), "'a\nb'");
	ck_assert_str_eq(quoted("~user"), "'~user'");
	ck_assert_str_eq(quoted("'"), "''\\'''");
}
END_TEST

START_TEST(print_line)
{
	const char *args[] = { "--log", "my log", "--lr", "1e-3" };
	struct launch_opts o = { 0 };
	struct launch_cmd c;
	char buf[256];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	o.args = args;
	o.n_args = 4;
	ck_assert_int_eq(launch_cmd_build(&c, &o, "mpirun", "/a b/gtplan-run",
					  "PLAN.json", 2), 0);
	ck_assert_int_eq(launch_cmd_print(f, &c), 0);
	fclose(f);
	ck_assert_str_eq(buf, "mpirun -np 2 '/a b/gtplan-run' PLAN.json "
			 "--log 'my log' --lr 1e-3\n");
	launch_cmd_release(&c);
	/* a full stream is a write error */
	f = fmemopen(buf, 8, "w");
	setvbuf(f, NULL, _IONBF, 0);
	ck_assert_int_eq(launch_cmd_build(&c, &o, "mpirun", "x", "y", 2), 0);
	ck_assert_int_eq(launch_cmd_print(f, &c), -1);
	fclose(f);
	launch_cmd_release(&c);
}
END_TEST

START_TEST(which_finds_executables)
{
	char out[256], want[256];

	mkdir_tmp();
	put("tool", "#!/bin/sh\n", 0755);
	put("data", "x\n", 0644);
	ck_assert_int_eq(mkdir(in_dir("sub"), 0755), 0);
	ck_assert_int_eq(launch_which(in_dir("tool"), out, sizeof(out)), 0);
	ck_assert_str_eq(out, in_dir("tool"));
	ck_assert_int_eq(launch_which(in_dir("data"), out, sizeof(out)), -1);
	ck_assert_int_eq(launch_which(in_dir("sub"), out, sizeof(out)), -1);
	ck_assert_int_eq(launch_which(in_dir("none"), out, sizeof(out)), -1);
	/* PATH: the first folder that holds it; a folder is not a match */
	snprintf(want, sizeof(want), "/nonexistent:%s/sub:%s", dir, dir);
	setenv("PATH", want, 1);
	ck_assert_int_eq(launch_which("tool", out, sizeof(out)), 0);
	ck_assert_str_eq(out, in_dir("tool"));
	ck_assert_int_eq(launch_which("data", out, sizeof(out)), -1);
	ck_assert_int_eq(launch_which("sub", out, sizeof(out)), -1);
	ck_assert_int_eq(launch_which("", out, sizeof(out)), -1);
	/* too small a buffer is "not found", never a cut path */
	ck_assert_int_eq(launch_which("tool", out, 8), -1);
	/* an empty PATH entry is the current folder */
	ck_assert_int_eq(chdir(dir), 0);
	setenv("PATH", "/nonexistent:", 1);
	ck_assert_int_eq(launch_which("tool", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "tool");
}
END_TEST

START_TEST(runner_next_to_the_binary_then_path)
{
	char out[256], exe[256], other[64];

	mkdir_tmp();
	snprintf(exe, sizeof(exe), "%s/gtplan", dir);
	put("gtplan-run", "#!/bin/sh\n", 0755);
	ck_assert_int_eq(launch_find_runner(exe, out, sizeof(out)), 0);
	ck_assert_str_eq(out, in_dir("gtplan-run"));
	/* not next to it: the one on PATH */
	snprintf(other, sizeof(other), "%s", dir);
	mkdir_tmp();
	snprintf(exe, sizeof(exe), "%s/gtplan", dir);
	setenv("PATH", other, 1);
	ck_assert_int_eq(launch_find_runner(exe, out, sizeof(out)), 0);
	snprintf(exe, sizeof(exe), "%s/gtplan-run", other);
	ck_assert_str_eq(out, exe);
	/* neither */
	setenv("PATH", "/nonexistent", 1);
	snprintf(exe, sizeof(exe), "%s/gtplan", dir);
	ck_assert_int_eq(launch_find_runner(exe, out, sizeof(out)), -1);
}
END_TEST

START_TEST(mpirun_name_order)
{
	struct launch_opts o = { 0 };

	unsetenv("GTPLAN_MPIRUN");
	ck_assert_str_eq(launch_mpirun_name(&o), "mpirun");
	setenv("GTPLAN_MPIRUN", "", 1);
	ck_assert_str_eq(launch_mpirun_name(&o), "mpirun");
	setenv("GTPLAN_MPIRUN", "/opt/x/mpiexec", 1);
	ck_assert_str_eq(launch_mpirun_name(&o), "/opt/x/mpiexec");
	o.mpirun = "./my-mpirun";
	ck_assert_str_eq(launch_mpirun_name(&o), "./my-mpirun");
}
END_TEST

START_TEST(spawn_exit_status_and_missing_binary)
{
	char *ok[] = { "sh", "-c", "exit 3", NULL };
	char *missing[] = { "/nonexistent/mpirun", NULL };
	char *notexec[] = { NULL, NULL };
	char err[256];
	int ws, sig;

	ck_assert_int_eq(launch_spawn_wait(ok, &ws, &sig, err, sizeof(err)), 0);
	ck_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 3);
	ck_assert_int_eq(sig, 0);
	ck_assert_int_eq(launch_spawn_wait(missing, &ws, &sig, err,
					   sizeof(err)), -1);
	ck_assert_str_eq(err, "cannot run '/nonexistent/mpirun': No such file "
			 "or directory");
	mkdir_tmp();
	notexec[0] = (char *)put("own-data", "x\n", 0644);
	ck_assert_int_eq(launch_spawn_wait(notexec, &ws, &sig, err,
					   sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "Permission denied"));
}
END_TEST

/* ---- launch_plan against a fake mpirun -------------------------------- */

/* Records its arguments (one a line) in own-argv and a copy of the plan
 * file (the word after gtplan-run) in own-plan, then exits $FAKE_EXIT. */
static const char fake_mpirun[] =
	"#!/bin/sh\n"
	"d=$(dirname \"$0\")\n"
	"for a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$d/own-argv\"\n"
	"next=0\n"
	"for a in \"$@\"; do\n"
	"  [ $next = 1 ] && { cat \"$a\" > \"$d/own-plan\"; next=2; }\n"
	"  case \"$a\" in */own-gtplan-run) next=1;; esac\n"
	"done\n"
	"exit ${FAKE_EXIT:-0}\n";

static int plan_writes;

static int write_plan(FILE *f, void *arg)
{
	plan_writes++;
	return fputs(arg, f) < 0 ? -1 : 0;
}

static int write_fails(FILE *f, void *arg)
{
	(void)f;
	(void)arg;
	errno = ENOSPC;
	return -1;
}

/* A launch_opts with a fake mpirun and runner in a fresh folder that is
 * also TMPDIR. */
static void fake_setup(struct launch_opts *o, const char *mpirun)
{
	static char m[256], r[256];

	memset(o, 0, sizeof(*o));
	mkdir_tmp();
	snprintf(m, sizeof(m), "%s", put("own-mpirun", mpirun, 0755));
	snprintf(r, sizeof(r), "%s", put("own-gtplan-run", "#!/bin/sh\n",
					 0755));
	o->mpirun = m;
	o->runner = r;
	setenv("TMPDIR", dir, 1);
	unsetenv("OMPI_ALLOW_RUN_AS_ROOT");
	plan_writes = 0;
}

START_TEST(plan_runs_and_temporary_file_goes)
{
	const char *args[] = { "--steps", "2" };
	struct launch_opts o;
	char err[512], want[512], *got;

	fake_setup(&o, fake_mpirun);
	o.args = args;
	o.n_args = 2;
	ck_assert_int_eq(launch_plan(&o, 4, write_plan, "{\"plan\": 1}\n",
				     stdout, err, sizeof(err)), LAUNCH_OK);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(plan_writes, 1);
	got = slurp("own-plan");
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, "{\"plan\": 1}\n");
	free(got);
	got = slurp("own-argv");
	ck_assert_ptr_nonnull(got);
	/* the plan was dir/gtplan-plan-XXXXXX; it is gone now */
	snprintf(want, sizeof(want), "-np\n4\n%s\n%s/gtplan-plan-", o.runner,
		 dir);
	ck_assert_ptr_nonnull(strstr(got, want));
	ck_assert_ptr_nonnull(strstr(got, "\n--steps\n2\n"));
	free(got);
	ck_assert_int_eq(foreign_files(dir), 0);
}
END_TEST

START_TEST(plan_exit_statuses_and_hints)
{
	struct launch_opts o;
	char err[1024];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	fake_setup(&o, fake_mpirun);
	setenv("FAKE_EXIT", "3", 1);
	ck_assert_int_eq(launch_plan(&o, cores + 1, write_plan, "{}", stdout,
				     err, sizeof(err)), LAUNCH_FAILED);
	ck_assert_ptr_nonnull(strstr(err, "the run failed: '"));
	ck_assert_ptr_nonnull(strstr(err, "own-mpirun' exited with status 3"));
	ck_assert_ptr_nonnull(strstr(err, "hint: "));
	ck_assert_ptr_nonnull(strstr(err, "on one machine, pass "
				     "--oversubscribe"));
	ck_assert(!!strstr(err, "running as root") == (geteuid() == 0));
	ck_assert_int_eq(foreign_files(dir), 0);
	/* asked for both: no hint */
	o.oversubscribe = o.allow_root = 1;
	ck_assert_int_eq(launch_plan(&o, cores + 1, write_plan, "{}", stdout,
				     err, sizeof(err)), LAUNCH_FAILED);
	ck_assert_ptr_null(strstr(err, "hint:"));
	/* gtplan-run's own usage/I/O error */
	setenv("FAKE_EXIT", "2", 1);
	ck_assert_int_eq(launch_plan(&o, 1, write_plan, "{}", stdout, err,
				     sizeof(err)), LAUNCH_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "exited with status 2"));
	ck_assert_int_eq(foreign_files(dir), 0);
}
END_TEST

START_TEST(plan_missing_programs)
{
	struct launch_opts o;
	char err[1024];

	fake_setup(&o, fake_mpirun);
	o.mpirun = "no-such-mpirun-here";
	ck_assert_int_eq(launch_plan(&o, 2, write_plan, "{}", stdout, err,
				     sizeof(err)), LAUNCH_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "cannot find 'no-such-mpirun-here'"
				     " on PATH\nhint: install Open MPI"));
	o.mpirun = "/nonexistent/mpirun";
	ck_assert_int_eq(launch_plan(&o, 2, write_plan, "{}", stdout, err,
				     sizeof(err)), LAUNCH_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "cannot find '/nonexistent/mpirun'"
				     "\nhint: install Open MPI"));
	o.runner = "/nonexistent/gtplan-run";
	ck_assert_int_eq(launch_plan(&o, 2, write_plan, "{}", stdout, err,
				     sizeof(err)), LAUNCH_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "cannot find '/nonexistent/"
				     "gtplan-run'\nhint: build it"));
	ck_assert_int_eq(plan_writes, 0);
	ck_assert_int_eq(launch_plan(&o, 0, write_plan, "{}", stdout, err,
				     sizeof(err)), LAUNCH_USAGE);
	ck_assert_int_eq(foreign_files(dir), 0);
}
END_TEST

START_TEST(plan_file_errors)
{
	struct launch_opts o;
	char err[1024];

	fake_setup(&o, fake_mpirun);
	ck_assert_int_eq(launch_plan(&o, 2, write_fails, NULL, stdout, err,
				     sizeof(err)), LAUNCH_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "error writing the plan '"));
	ck_assert_ptr_nonnull(strstr(err, "No space left on device"));
	ck_assert_int_eq(foreign_files(dir), 0); /* removed */
	ck_assert_ptr_null(slurp("own-argv"));   /* nothing ran */
	setenv("TMPDIR", "/nonexistent", 1);
	ck_assert_int_eq(launch_plan(&o, 2, write_plan, "{}", stdout, err,
				     sizeof(err)), LAUNCH_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "cannot create a temporary plan in "
				     "'/nonexistent'"));
	ck_assert_ptr_nonnull(strstr(err, "hint: set TMPDIR"));
	o.plan_out = "/nonexistent/plan.json";
	ck_assert_int_eq(launch_plan(&o, 2, write_plan, "{}", stdout, err,
				     sizeof(err)), LAUNCH_USAGE);
	ck_assert_ptr_nonnull(strstr(err, "cannot write '/nonexistent/"
				     "plan.json'"));
	ck_assert_ptr_null(slurp("own-argv"));
}
END_TEST

START_TEST(plan_dry_run_and_kept_plan)
{
	struct launch_opts o;
	char err[512], out[1024], want[1024], kept[256], *got;
	FILE *f;

	fake_setup(&o, fake_mpirun);
	o.dry_run = 1;
	o.mpirun = "no-such-mpirun"; /* a dry run needs no MPI */
	f = fmemopen(out, sizeof(out), "w");
	ck_assert_int_eq(launch_plan(&o, 3, write_plan, "{}", f, err,
				     sizeof(err)), LAUNCH_OK);
	fclose(f);
	snprintf(want, sizeof(want), "no-such-mpirun -np 3 %s PLAN.json\n",
		 o.runner);
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(plan_writes, 0);
	ck_assert_int_eq(foreign_files(dir), 0);
	/* -o: written, named, kept */
	snprintf(kept, sizeof(kept), "%s", in_dir("own-kept plan.json"));
	o.plan_out = kept;
	f = fmemopen(out, sizeof(out), "w");
	ck_assert_int_eq(launch_plan(&o, 3, write_plan, "{\"k\": 1}", f, err,
				     sizeof(err)), LAUNCH_OK);
	fclose(f);
	snprintf(want, sizeof(want), "no-such-mpirun -np 3 %s '%s'\n",
		 o.runner, kept);
	ck_assert_str_eq(out, want);
	got = slurp("own-kept plan.json");
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, "{\"k\": 1}");
	free(got);
	/* and a real run with -o keeps it too */
	o.dry_run = 0;
	o.mpirun = in_dir("own-mpirun");
	ck_assert_int_eq(launch_plan(&o, 3, write_plan, "{\"k\": 2}", stdout,
				     err, sizeof(err)), LAUNCH_OK);
	got = slurp("own-plan");
	ck_assert_str_eq(got, "{\"k\": 2}");
	free(got);
	got = slurp("own-kept plan.json");
	ck_assert_str_eq(got, "{\"k\": 2}");
	free(got);
}
END_TEST

/* Sends SIGTERM to its parent (the launcher, by kill: a forwarded one)
 * and waits; the forwarded SIGTERM ends it through the trap. */
static const char fake_signalled[] =
	"#!/bin/sh\n"
	"d=$(dirname \"$0\")\n"
	"trap 'echo forwarded > \"$d/own-sig\"; exit 7' TERM\n"
	"for a in \"$@\"; do case \"$a\" in */gtplan-plan-*) "
	"[ -f \"$a\" ] && echo yes > \"$d/own-had-plan\";; esac; done\n"
	"kill -TERM $PPID\n"
	"i=0; while [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done\n"
	"exit 9\n";

START_TEST(plan_sigterm_is_forwarded)
{
	struct launch_opts o;
	struct sigaction before, after;
	char err[512], *got;

	fake_setup(&o, fake_signalled);
	sigaction(SIGTERM, NULL, &before);
	ck_assert_int_eq(launch_plan(&o, 2, write_plan, "{}", stdout, err,
				     sizeof(err)), LAUNCH_FAILED);
	ck_assert_str_eq(err, "the run was stopped by SIGTERM");
	got = slurp("own-sig");
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, "forwarded\n");
	free(got);
	got = slurp("own-had-plan");
	ck_assert_ptr_nonnull(got);
	free(got);
	ck_assert_int_eq(foreign_files(dir), 0);
	/* the handlers are given back */
	sigaction(SIGTERM, NULL, &after);
	ck_assert_ptr_eq((void *)after.sa_handler, (void *)before.sa_handler);
}
END_TEST

int main(void)
{
	const struct test_case cases[] = {
		{ "options", options_are_taken_and_passed_on },
		{ "options_not_ours", options_not_ours_are_left },
		{ "options_without_values", options_without_values },
		{ "argv", argv_for_options },
		{ "quoting", quoting },
		{ "print", print_line },
		{ "which", which_finds_executables },
		{ "runner", runner_next_to_the_binary_then_path },
		{ "mpirun_name", mpirun_name_order },
		{ "spawn", spawn_exit_status_and_missing_binary },
		{ "plan_run", plan_runs_and_temporary_file_goes },
		{ "plan_exit", plan_exit_statuses_and_hints },
		{ "plan_missing", plan_missing_programs },
		{ "plan_file_errors", plan_file_errors },
		{ "plan_dry_run", plan_dry_run_and_kept_plan },
		{ "plan_sigterm", plan_sigterm_is_forwarded },
	};

	return RUN_CASES("launch", cases, 10);
}
