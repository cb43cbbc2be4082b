/*
 * gtplan: the command-line front end. Parses the arguments into a
 * cli_opts (cli.h), hands them to the command (cmd.h) and returns its
 * exit code; help and --version are answered here. Every exit() of the
 * program is main's return, and no command exits 0 (or 1) when a write to
 * stdout failed (a full disk, `> /dev/full`): that is exit 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argopt.h"
#include "cli.h"
#include "cli_help.h"
#include "cmd.h"
#include "launch.h"
#include "outfile.h"
#include "version.h"

/* Each command's name and its implementation (cmd.h). */
static const struct {
	const char *name;
	int (*run)(const struct cli_opts *o);
} commands[] = {
	{ "lint", cmd_lint },
	{ "plan", cmd_plan },
	{ "explain", cmd_explain },
	{ "config", cmd_config },
	{ "sim", cmd_sim },
	{ "render", cmd_render },
	{ "ckpt", cmd_ckpt },
	{ "run", cmd_run },
	{ "completion", cmd_completion },
};

static int run_command(const struct cli_opts *o);

static int is_override(const char *a)
{
	return a[0] == '~' || a[0] == '+' || strchr(a, '=') != NULL;
}

/* render's own --format, --color and --layout values, --groups and
 * --nodes.
 * Returns 1 when it took argv[*i] (and its value), 0 when argv[*i] is none
 * of them, -1 on a usage error (printed). */
static int render_option(int argc, char **argv, int *i, struct cli_opts *o)
{
	static const char *const names[] = {
		"--format", "--color", "--groups", "--layout", "--nodes",
	};
	const char *a = argv[*i], *v;

	for (size_t k = 0; k < sizeof(names) / sizeof(*names); k++) {
		if (!argopt_take(names[k], argc, argv, i, &v))
			continue;
		if (!v) {
			cli_usage_error("%s needs a value", a);
			return -1;
		}
		if (k == 0)
			o->render_format = v;
		else if (k == 1)
			o->render_color = v;
		else if (k == 2)
			o->render_groups = v;
		else if (k == 4)
			o->render_nodes = v;
		else if (strcmp(v, "4d") && strcmp(v, "5d")) {
			cli_usage_error("unknown --layout '%s' (use 4d or 5d)",
					v);
			return -1;
		} else {
			snprintf(o->layout_override, sizeof(o->layout_override),
				 "++gtplan.driver_layout=%s", v);
			o->overrides[o->n_overrides++] = o->layout_override;
		}
		return 1;
	}
	return 0;
}

/* Fills o from argv[2..]: options, overrides (is_override) and configs.
 * Returns 0, or CLI_EXIT_USAGE after saying why on stderr. Over 80 lines
 * on purpose: one flat branch per option, in the order of the help text,
 * read as a table. */
static int parse_args(int argc, char **argv, struct cli_opts *o)
{
	o->configs = calloc((size_t)argc, sizeof(*o->configs));
	o->overrides = calloc((size_t)argc, sizeof(*o->overrides));
	o->color = -1;
	if (!o->configs || !o->overrides)
		return cli_usage_error("%s", "out of memory");
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		int ro = strcmp(o->cmd, "render") == 0 ?
			 render_option(argc, argv, &i, o) : 0;
		char err[128];

		if (!strcmp(o->cmd, "run") && (ro = launch_parse_option(
				&o->run, argc, argv, &i, err, sizeof(err))) < 0)
			return cli_usage_error("%s", err);
		if (!ro && (ro = proj_parse_option(&o->sel, argc, argv, &i, err,
						   sizeof(err))) < 0)
			return cli_usage_error("%s", err);
		if (ro < 0)
			return CLI_EXIT_USAGE;
		if (ro > 0)
			continue;
		if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0) {
			const char *v = a[8] == '=' ? a + 9 :
					(i + 1 < argc ? argv[++i] : "");
			int k = cli_format_parse(v);

			if (k < 0)
				return cli_usage_error(
					"unknown format '%s' (use text, json, "
					"sarif, github, concise or junit)", v);
			o->format = (enum cli_format)k;
			o->format_given = 1;
		} else if (strcmp(a, "--strict") == 0) {
			o->strict = 1;
		} else if (strcmp(a, "--color") == 0 ||
			   strncmp(a, "--color=", 8) == 0) {
			const char *v = a[7] == '=' ? a + 8 :
					(i + 1 < argc ? argv[++i] : "");
			if (strcmp(v, "auto") == 0)
				o->color = -1;
			else if (strcmp(v, "always") == 0)
				o->color = 1;
			else if (strcmp(v, "never") == 0)
				o->color = 0;
			else
				return cli_usage_error(
					"unknown --color value '%s'", v);
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (i + 1 >= argc)
				return cli_usage_error("%s needs a file name",
						       a);
			o->out = argv[++i];
		} else if (strcmp(a, "--summary") == 0) {
			o->summary = 1;
		} else if (strcmp(a, "--call") == 0) {
			if (i + 1 >= argc)
				return cli_usage_error("%s needs a call name",
						       a);
			o->call = argv[++i];
		} else if (strcmp(a, "--trace") == 0) {
			if (i + 1 >= argc)
				return cli_usage_error("%s needs a file name",
						       a);
			o->trace = argv[++i];
		} else if (strcmp(a, "--predict-record") == 0) {
			if (i + 1 >= argc)
				return cli_usage_error("%s needs a file prefix",
						       a);
			o->predict = argv[++i];
		} else if (strcmp(a, "--steps") == 0) {
			char *end;

			if (i + 1 >= argc)
				return cli_usage_error("%s needs a number", a);
			errno = 0;
			o->steps = strtoll(argv[++i], &end, 10);
			if (errno || *end || o->steps < 1)
				return cli_usage_error(
					"--steps needs a number of steps >= 1, "
					"not '%s'", argv[i]);
		} else if (strcmp(a, "--list-calls") == 0) {
			o->list_calls = 1;
		} else if (strcmp(a, "--no-sim") == 0) {
			o->no_sim = 1;
		} else if (strcmp(a, "--rank") == 0) {
			char *end;

			if (i + 1 >= argc)
				return cli_usage_error("%s needs a number", a);
			errno = 0;
			o->rank = strtoll(argv[++i], &end, 10);
			if (errno || *end || o->rank < 0)
				return cli_usage_error(
					"--rank needs a rank number, not '%s'",
					argv[i]);
			o->have_rank = 1;
		} else if (strcmp(a, "--model-config") == 0) {
			int n;

			if (i + 1 >= argc)
				return cli_usage_error("%s needs a config.json "
						       "or its folder", a);
			n = snprintf(o->model_config_override,
				     sizeof(o->model_config_override),
				     "++gtplan.model.hf_config='%s'", argv[++i]);
			if (n < 0 || (size_t)n >= sizeof(o->model_config_override)
			    || strchr(argv[i], '\''))
				return cli_usage_error("--model-config: '%s' is "
						       "too long or has a quote",
						       argv[i]);
			o->overrides[o->n_overrides++] =
				o->model_config_override;
		} else if (strcmp(a, "--list") == 0 && strcmp(o->cmd, "explain") == 0) {
			o->summary |= 1; /* explain --list */
		} else if (strcmp(a, "--markdown") == 0 &&
			   strcmp(o->cmd, "explain") == 0) {
			o->summary |= 2; /* explain --list --markdown */
		} else if (a[0] == '-' && a[1] == '-' && strchr(a, '=') == NULL) {
			return cli_usage_error("unknown option '%s'", a);
		} else if (a[0] == '-' && a[1] && a[1] != '-') {
			return cli_usage_error("unknown option '%s'", a);
		} else if (is_override(a)) {
			o->overrides[o->n_overrides++] = argv[i];
		} else {
			o->configs[o->n_configs++] = a;
		}
	}
	if ((o->predict || o->steps) && strcmp(o->cmd, "sim") != 0)
		return cli_usage_error("%s goes with sim only", o->predict ?
				       "--predict-record" : "--steps");
	return 0;
}

/* The project file's defaults for what the command line left unset
 * (project.h), then the selection state the command's jobs use. */
static int run_selected(struct cli_opts *o)
{
	struct proj_state ps;
	char *format = NULL;
	int strict, rc;

	if (o->sel.config && access(o->sel.config, R_OK))
		return cli_usage_error("cannot read project file '%s': %s",
				       o->sel.config, strerror(errno));
	if (!o->sel.no_config && (!o->format_given || !o->strict)) {
		proj_defaults(&o->sel, o->n_configs ? o->configs[0] : NULL,
			      &strict, &format);
		if (!o->format_given && cli_format_parse(format) >= 0)
			o->format = (enum cli_format)cli_format_parse(format);
		if (!o->strict && strict > 0)
			o->strict = 1;
		free(format);
	}
	proj_state_init(&ps, &o->sel);
	o->proj = &ps;
	rc = run_command(o);
	o->proj = NULL;
	proj_state_release(&ps);
	return rc;
}

static int run_command(const struct cli_opts *o)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		if (!strcmp(o->cmd, commands[i].name))
			return commands[i].run(o);
	return cli_usage_error("unknown command '%s'", o->cmd);
}

static int cmd_help(const char *what)
{
	if (cli_help_print(stdout, what))
		return cli_usage_error("no command '%s'", what);
	return CLI_EXIT_CLEAN;
}

static int run_main(int argc, char **argv)
{
	struct cli_opts o = { 0 };
	int rc;

	if (argc < 2)
		return cli_usage_error("%s", "no command given");
	o.cmd = argv[1];
	if (!strcmp(o.cmd, "-h") || !strcmp(o.cmd, "--help") ||
	    !strcmp(o.cmd, "help"))
		return cmd_help(argc > 2 ? argv[2] : NULL);
	if (!strcmp(o.cmd, "--version") || !strcmp(o.cmd, "-V")) {
		printf("gtplan %s\n", GTPLAN_VERSION);
		return CLI_EXIT_CLEAN;
	}
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return cmd_help(o.cmd);
	rc = parse_args(argc, argv, &o);
	if (rc == 0)
		rc = run_selected(&o);
	free(o.configs);
	proj_opts_release(&o.sel);
	free(o.overrides);
	launch_opts_release(&o.run);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = run_main(argc, argv);

	if (outfile_check_stdout())
		rc = CLI_EXIT_USAGE;
	return rc;
}
