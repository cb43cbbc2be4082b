/*
 * lint_files: arguments to files, folders walked (lint_files.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errmsg.h"
#include "lint_files.h"

/* Takes path (a fresh string) into lf. */
static int push(struct lint_files *lf, char *path)
{
	if (!path)
		return -1;
	if (lf->n == lf->cap) {
		size_t cap = lf->cap ? 2 * lf->cap : 16;
		char **v = realloc(lf->v, cap * sizeof(*v));

		if (!v) {
			free(path);
			return -1;
		}
		lf->v = v;
		lf->cap = cap;
	}
	lf->v[lf->n++] = path;
	return 0;
}

static int is_yaml(const char *name)
{
	size_t n = strlen(name);

	return (n > 5 && !strcmp(name + n - 5, ".yaml")) ||
	       (n > 4 && !strcmp(name + n - 4, ".yml"));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in folder dir that are YAML files or folders, sorted. */
static int list_dir(const char *dir, char ***names, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t cap = 0;

	*names = NULL;
	*n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char **v;

		if (e->d_name[0] == '.')
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			if (!(v = realloc(*names, cap * sizeof(*v))))
				break;
			*names = v;
		}
		if (!((*names)[*n] = strdup(e->d_name)))
			break;
		(*n)++;
	}
	closedir(d);
	if (e) { /* out of memory: nothing half-listed is kept */
		while (*n)
			free((*names)[--*n]);
		free(*names);
		*names = NULL;
		errno = ENOMEM;
		return -1;
	}
	if (*n)
		qsort(*names, *n, sizeof(**names), by_name);
	return 0;
}

static int walk(struct lint_files *lf, const char *dir, int depth, char *err,
		size_t errlen)
{
	char **names;
	size_t n;
	int rc = 0;

	if (depth > LINT_FILES_DEPTH)
		return errmsg_set(-1, err, errlen,
				  "'%s': folders nest deeper than %d", dir,
				  LINT_FILES_DEPTH);
	if (list_dir(dir, &names, &n))
		return errmsg_set(-1, err, errlen,
				  "cannot read folder '%s': %s", dir,
				  strerror(errno));
	for (size_t i = 0; i < n && !rc; i++) {
		size_t len = strlen(dir);
		char *path = malloc(len + strlen(names[i]) + 2);
		struct stat st;

		if (!path) {
			rc = errmsg_set(-1, err, errlen, "out of memory");
			break;
		}
		sprintf(path, "%s%s%s", dir, len && dir[len - 1] == '/' ? "" : "/",
			names[i]);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			rc = walk(lf, path, depth + 1, err, errlen);
			free(path);
		} else if (is_yaml(names[i]) && stat(path, &st) == 0 &&
			   S_ISREG(st.st_mode)) {
			if (lf->n >= LINT_FILES_MAX)
				rc = errmsg_set(-1, err, errlen,
						"more than %d files under '%s'",
						LINT_FILES_MAX, dir);
			else if (push(lf, path))
				rc = errmsg_set(-1, err, errlen,
						"out of memory");
			if (rc)
				free(path);
		} else {
			free(path);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

static int lint_files_has_stdin(const struct lint_files *lf)
{
	for (size_t i = 0; i < lf->n; i++)
		if (!strcmp(lf->v[i], "-"))
			return 1;
	return 0;
}

int lint_files_add(struct lint_files *lf, const char *const *args, size_t n,
		   char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(args[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			size_t before = lf->n;

			if (walk(lf, args[i], 0, err, errlen))
				return -1;
			if (lf->n == before)
				return errmsg_set(-1, err, errlen, "no YAML "
						  "file (*.yaml, *.yml) under "
						  "'%s'", args[i]);
		} else if (!strcmp(args[i], "-") && lf->n &&
			   lint_files_has_stdin(lf)) {
			return errmsg_set(-1, err, errlen,
					  "'-' (stdin) can be read once");
		} else if (push(lf, strdup(args[i]))) {
			return errmsg_set(-1, err, errlen, "out of memory");
		}
	}
	return 0;
}

void lint_files_release(struct lint_files *lf)
{
	for (size_t i = 0; i < lf->n; i++)
		free(lf->v[i]);
	free(lf->v);
	memset(lf, 0, sizeof(*lf));
}
