/*
 * project: which findings a command reports, and the defaults a project
 * sets for gtplan.
 *
 * The sources of a selection, strongest first:
 *   the command line   --ignore SEL,..., --select SEL,..., --min-severity
 *                      note|warning|error, -q/--quiet, --config FILE,
 *                      --no-config;
 *   a project file     the first `.gtplan.yaml`, or `pyproject.toml` with
 *                      a [tool.gtplan] table, in the config's folder or
 *                      above it, up to the folder that holds .git (or the
 *                      file --config names): keys ignore, select,
 *                      min-severity, strict, format, and the hardware
 *                      defaults hardware, interconnect, gpu_memory_gb
 *                      (the keys of gtplan.hardware, gtplan.interconnect
 *                      and gtplan.gpu_memory_gb; GT003 otherwise);
 *   the config         gtplan.ignore: a list of selectors;
 *   the YAML line      `# gtplan: ignore[SEL, ...] reason` (select.h).
 * Suppressions (ignore lists, inline comments) add up; --select and
 * --min-severity replace the project file's. Selectors are select.h's.
 * A project file's strict and format are command-wide: main takes them
 * from the project file of the first config (proj_defaults), and the
 * command line wins over them.
 *
 * Ownership: proj_opts owns its lists (their strings included); a
 * proj_state borrows its proj_opts and owns the project files it read and
 * the suppressions. The sources it registers belong to the command's
 * src_set, whose ids it keeps: one proj_state serves one src_set.
 */
#ifndef GTPLAN_PROJECT_H
#define GTPLAN_PROJECT_H

#include <stddef.h>

#include "cfg.h"
#include "diag.h"
#include "select.h"

/* The project file names looked for, in each folder, in this order. */
#define PROJ_YAML ".gtplan.yaml"
#define PROJ_TOML "pyproject.toml"

struct proj_opts {
	char **ignore;      /* --ignore, split at commas */
	size_t n_ignore;
	char **select;      /* --select, split at commas */
	size_t n_select;
	int select_given;
	int min_severity;   /* -1: not given */
	int quiet;          /* -q: findings without the summary line */
	const char *config; /* --config FILE */
	int no_config;      /* --no-config: read no project file */
};

/* Takes argv[*i] (and its value, advancing *i) when it is one of the
 * options above (--opt VALUE or --opt=VALUE). Returns 1 when it took it,
 * 0 when it is none of them, -1 with the reason in err (no value, an
 * unknown selector or severity, out of memory). */
int proj_parse_option(struct proj_opts *o, int argc, char **argv, int *i,
		      char *err, size_t errlen);
void proj_opts_release(struct proj_opts *o);

/* One project file, read. */
struct proj_file {
	char *real;          /* its real path: the cache key */
	int scope;           /* the scope of its ignore list (select.h) */
	char **select;       /* its select list (when have_select) */
	size_t n_select;
	int have_select;
	int min_severity;    /* -1: not set */
	int strict;          /* -1: not set */
	char *format;        /* NULL: not set */
	/* hardware defaults: a map of hardware, interconnect and
	 * gpu_memory_gb as written (NULL: none) */
	struct cfg_node *defaults;
};

struct proj_state {
	const struct proj_opts *opts;
	struct sel_set sel;
	struct proj_file *files;
	size_t n_files;
	int first;           /* the first job's project file (-1: none) */
	int next_scope;
	int started;         /* the command line's suppressions added */
	int finished;        /* proj_finish has run */
};

void proj_state_init(struct proj_state *ps, const struct proj_opts *opts);
void proj_state_release(struct proj_state *ps);

/* The selection for one job's findings, diags->v[from..]: reads the
 * config's project file (once per command; its findings go to diags),
 * its gtplan.ignore (root may be NULL) and the inline comments of every
 * source read so far, then removes what they suppress and what the
 * selection leaves out. Returns 0, or -1 when out of memory. */
int proj_filter_job(struct proj_state *ps, const char *config,
		    const struct cfg_node *root, struct src_set *srcs,
		    struct diag_list *diags, size_t from);

/* Reads the project file of the config at `config` (once per command;
 * its findings go to diags). Returns 0, or -1 when out of memory. */
int proj_read(struct proj_state *ps, const char *config, struct src_set *srcs,
	      struct diag_list *diags);

/* The project file's hardware defaults into the config `root`: every key
 * of gtplan.hardware and gtplan.interconnect, and gtplan.gpu_memory_gb,
 * that the config (overrides included) does not set, with its place in
 * the project file. So the config wins over the project file, which wins
 * over gtplan's built-in defaults (cost.h), and the schema checks the
 * values where they are written. Returns 0, or -1 when out of memory. */
int proj_apply_defaults(struct proj_state *ps, const char *config,
			struct cfg_node *root, struct src_set *srcs,
			struct diag_list *diags);

/* At the end of a command: the unused suppressions (GT001), selected as
 * the first job's findings were. Returns 0, or -1 when out of memory. */
int proj_finish(struct proj_state *ps, struct diag_list *diags);

/* The command-wide defaults of the project file that `config` (NULL: the
 * current folder) would use: *strict (-1 unset) and *format (a copy to
 * free, NULL unset). A file that does not read gives no defaults: its
 * findings come with the command's own. */
void proj_defaults(const struct proj_opts *opts, const char *config,
		   int *strict, char **format);

/* Reads the [tool.gtplan] table of the TOML text registered as source id
 * into a map of cfg nodes (strings, booleans, integers and arrays of
 * them, with their places); *out is NULL when there is no such table.
 * Returns 0, or -1 after a GT003 finding (a line it cannot read). */
int proj_toml_table(const struct src_set *srcs, int id,
		    struct diag_list *diags, struct cfg_node **out);

#endif
