/*
 * cli: what gtplan's commands share: the parsed command line (main.c
 * fills it, the commands of cmd.h read it), the exit codes, and how
 * findings are printed for the options given, and errors. Data goes to
 * stdout (or -o FILE, through outfile.h), diagnostics to stderr.
 *
 * Ownership: see struct cli_opts.
 */
#ifndef GTPLAN_CLI_H
#define GTPLAN_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "diag.h"
#include "launch.h"
#include "project.h"

/* Exit codes (docs/design.md §4.1). */
enum cli_exit { CLI_EXIT_CLEAN = 0, CLI_EXIT_FINDINGS = 1, CLI_EXIT_USAGE = 2 };

enum cli_format {
	CLI_FMT_TEXT, CLI_FMT_JSON, CLI_FMT_SARIF, CLI_FMT_GITHUB,
	CLI_FMT_CONCISE, CLI_FMT_JUNIT,
};

/* The format named s ("text", "json", "sarif", "github", "concise",
 * "junit"), or -1. */
int cli_format_parse(const char *s);

/* The command line, parsed. Borrows argv's strings; owns the configs and
 * overrides arrays and run's launch_opts (main releases them). */
struct cli_opts {
	const char *cmd;
	const char **configs;
	size_t n_configs;
	char **overrides;
	int n_overrides;
	enum cli_format format;
	int format_given;   /* --format on the command line */
	int strict;
	int color; /* -1 auto */
	const char *out;
	int summary;        /* plan --summary; explain --list (bit 2: --markdown) */
	long long rank;
	int have_rank;
	const char *call;   /* sim --call NAME */
	const char *trace;  /* sim --trace FILE */
	int list_calls;     /* sim --list-calls */
	const char *predict; /* sim --predict-record PREFIX */
	long long steps;    /* sim --steps N (0: not given) */
	int no_sim;         /* plan --no-sim */
	const char *render_format; /* render --format svg|png|dot|text */
	const char *render_color;  /* render --color lane|gtp|tp|... */
	const char *render_groups; /* render --groups gtp,tp */
	const char *render_nodes;  /* render --nodes A-B */
	char layout_override[48];  /* render --layout 4d|5d, as an override */
	/* --model-config PATH, as the override ++gtplan.model.hf_config */
	char model_config_override[1100];
	struct launch_opts run;    /* run's own and gtplan-run's options */
	struct proj_opts sel;      /* --ignore, --select, ... (project.h) */
	struct proj_state *proj;   /* the selection state; NULL: keep all */
};

/* Prints "gtplan: " fmt (with arg) and the --help hint to stderr;
 * returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* Prints "gtplan: " fmt (with arg) and a newline to stderr; returns rc,
 * so that a command says why and fails in one statement. */
int cli_error(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Adds the unused suppressions (proj_finish), sorts the findings and
 * prints them to f in o's format (text without its summary line under
 * -q; SARIF's artifacts are o's configs unless diags names targets);
 * returns the exit code they mean (findings: errors, or warnings
 * with --strict). Only lint says "no findings" in text: other commands
 * print data. */
int cli_report(const struct cli_opts *o, struct diag_list *diags, FILE *f);

#endif
