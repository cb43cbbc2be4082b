/*
 * lint_files: the files `gtplan lint` reads for its arguments: a file as
 * it is named; a folder, every YAML file under it (*.yaml and *.yml, at
 * any depth, in byte order of their paths; names starting with '.' and
 * symbolic links to folders are left out, so no walk loops); "-" is
 * stdin, once.
 *
 * Ownership: a lint_files owns its paths; lint_files_release frees them.
 */
#ifndef GTPLAN_LINT_FILES_H
#define GTPLAN_LINT_FILES_H

#include <stddef.h>

/* Hostile-input limits: at most this many files from folders, and this
 * many nested folders below an argument. */
#define LINT_FILES_MAX   100000
#define LINT_FILES_DEPTH 64

struct lint_files {
	char **v;
	size_t n, cap;
};

/* Appends the files of args[0..n) to lf. Returns 0, or -1 with the reason
 * in err (a folder that cannot be read, a limit, out of memory). */
int lint_files_add(struct lint_files *lf, const char *const *args, size_t n,
		   char *err, size_t errlen);
void lint_files_release(struct lint_files *lf);

#endif
