/*
 * rt_ckpt_dir: step directories, the `latest` pointer, fsync and the
 * removal of old checkpoints (see rt_ckpt_dir.h).
 */
#include "rt_ckpt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_ckpt_index.h"
#include "rt_err.h"

/* "iter_" and at least 7 digits: a step directory's name. */
#define ITER "iter_"
#define NAME_CAP 48

enum { K_PLAIN, K_ALT, K_TMP, K_OTHER };

/* The kind of directory name s is (K_OTHER: none of ours); *step its step. */
static int name_kind(const char *s, long long *step)
{
	const char *d;
	char *end;

	if (strncmp(s, ITER, strlen(ITER)))
		return K_OTHER;
	d = s + strlen(ITER);
	if (strspn(d, "0123456789") < 7 || strspn(d, "0123456789") > 18)
		return K_OTHER;
	*step = strtoll(d, &end, 10);
	if (!*end)
		return K_PLAIN;
	if (!strcmp(end, ".1"))
		return K_ALT;
	return strcmp(end, ".tmp") ? K_OTHER : K_TMP;
}

static void step_name(char *buf, long long step, int kind)
{
	snprintf(buf, NAME_CAP, ITER "%07lld%s", step,
		 kind == K_ALT ? ".1" : kind == K_TMP ? ".tmp" : "");
}

char *rt_ckpt_dir_tmp(const char *dir, long long step)
{
	char name[NAME_CAP];

	step_name(name, step, K_TMP);
	return rt_ckpt_index_path(dir, name);
}

FILE *rt_ckpt_dir_open_regular(const char *path, char *why, size_t cap)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		snprintf(why, cap, "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st)) { /* st is unset: say fstat's reason */
		snprintf(why, cap, "%s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, cap, "%s", S_ISDIR(st.st_mode) ?
			 "is a directory" : "is not a regular file");
		close(fd);
		return NULL;
	}
	if (!(f = fdopen(fd, "rb"))) {
		snprintf(why, cap, "%s", strerror(errno));
		close(fd);
	}
	return f;
}

int rt_ckpt_dir_fsync_file(FILE *f)
{
	return fflush(f) || fsync(fileno(f)) ? -1 : 0;
}

int rt_ckpt_dir_fsync(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY), rc;

	if (fd < 0)
		return -1;
	/* a file system that cannot sync a directory says EINVAL */
	rc = fsync(fd) && errno != EINVAL ? -1 : 0;
	close(fd);
	return rc;
}

/* A name a checkpoint directory holds (rt_ckpt.h): metadata.json,
 * shard-RRRRR.bin, or either's .tmp (written by earlier gtplan-runs). */
static int ours(const char *s)
{
	size_t n;

	if (!strcmp(s, RT_CKPT_META) || !strcmp(s, RT_CKPT_META ".tmp"))
		return 1;
	if (strncmp(s, "shard-", 6))
		return 0;
	n = strspn(s + 6, "0123456789");
	return n >= 5 && (!strcmp(s + 6 + n, ".bin") ||
			  !strcmp(s + 6 + n, ".bin.tmp"));
}

/* Removes checkpoint directory `path`: metadata.json first (so that a
 * removal stopped part-way leaves no checkpoint), then the shard files,
 * then the directory, which fails (-1, errno) if it holds anything else.
 * A symbolic link is not followed (ENOTDIR). */
static int remove_ckpt(const char *path)
{
	char *meta = rt_ckpt_index_path(path, RT_CKPT_META);
	struct stat st;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (meta && (lstat(path, &st) || !S_ISDIR(st.st_mode))) {
		free(meta);
		errno = ENOTDIR;
		return -1;
	}
	if (!meta || (unlink(meta) && errno != ENOENT)) {
		free(meta);
		return -1;
	}
	free(meta);
	if (!(d = opendir(path)))
		return -1;
	while (!rc && (e = readdir(d))) {
		char *p;

		if (!ours(e->d_name))
			continue;
		p = rt_ckpt_index_path(path, e->d_name);
		rc = !p || unlink(p) ? -1 : 0;
		free(p);
	}
	closedir(d);
	return rc ? -1 : rmdir(path);
}

int rt_ckpt_dir_begin(const char *dir, long long step)
{
	char *tmp = rt_ckpt_dir_tmp(dir, step);
	struct stat st;
	int rc = 0;

	if (!tmp)
		return rt_error(RT_ENOMEM, "out of memory");
	if (mkdir(dir, 0777) && errno != EEXIST)
		rc = rt_error(RT_EIO, "--save: cannot create directory '%s': "
			      "%s", dir, strerror(errno));
	else if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		rc = rt_error(RT_EIO, "--save: '%s' is not a directory", dir);
	else if (!lstat(tmp, &st) && !S_ISDIR(st.st_mode))
		rc = rt_error(RT_EIO, "--save: '%s' exists and is not a "
			      "directory: remove it", tmp);
	else if (!lstat(tmp, &st) && remove_ckpt(tmp))
		rc = rt_error(RT_EIO, "--save: cannot remove '%s', a save that "
			      "stopped part-way: %s (a file that is not a "
			      "checkpoint's is left there?)", tmp,
			      strerror(errno));
	else if (mkdir(tmp, 0777))
		rc = rt_error(RT_EIO, "--save: cannot create directory '%s': "
			      "%s", tmp, strerror(errno));
	free(tmp);
	return rc;
}

/* DIR/latest's directory name in name (NAME_CAP): 0; 1 when there is no
 * `latest`; -1 with why when it is damaged. */
static int read_latest(const char *dir, char *name, char *why, size_t cap)
{
	char *path = rt_ckpt_index_path(dir, RT_CKPT_LATEST);
	struct stat st;
	long long step;
	FILE *f;
	size_t n;

	name[0] = 0;
	if (!path)
		return snprintf(why, cap, "out of memory"), -1;
	if (lstat(path, &st) && errno == ENOENT) {
		free(path);
		return 1;
	}
	f = rt_ckpt_dir_open_regular(path, why, cap);
	free(path);
	if (!f)
		return -1;
	n = fread(name, 1, NAME_CAP - 1, f);
	fclose(f);
	name[n] = 0;
	if (n && name[n - 1] == '\n')
		name[n - 1] = 0;
	if (name_kind(name, &step) > K_ALT) {
		snprintf(why, cap, "it does not name a step directory "
			 "(iter_NNNNNNN)");
		name[0] = 0;
		return -1;
	}
	return 0;
}

int rt_ckpt_dir_resolve(const char *dir, char **path)
{
	char name[NAME_CAP], why[256];
	int rc = read_latest(dir, name, why, sizeof(why));

	*path = NULL;
	if (rc < 0)
		return rt_error_once(RT_ECKPT, "--load %s: %s/%s: %s; load a "
				     "step directory (%s/iter_NNNNNNN) instead",
				     dir, dir, RT_CKPT_LATEST, why, dir);
	*path = rc ? strdup(dir) : rt_ckpt_index_path(dir, name);
	return *path ? 0 : rt_error(RT_ENOMEM, "out of memory");
}

/* DIR/latest = name, atomically and durably. */
static int write_latest(const char *dir, const char *name)
{
	char *path = rt_ckpt_index_path(dir, RT_CKPT_LATEST);
	char *tmp = rt_ckpt_index_path(dir, RT_CKPT_LATEST ".tmp");
	FILE *f = NULL;
	int rc = -1;

	if (path && tmp && (f = fopen(tmp, "w")) &&
	    fprintf(f, "%s\n", name) > 0 && !rt_ckpt_dir_fsync_file(f)) {
		rc = fclose(f);
		f = NULL;
		if (!rc)
			rc = rename(tmp, path) || rt_ckpt_dir_fsync(dir);
	}
	if (f)
		fclose(f);
	if (rc)
		rc = rt_error(RT_EIO, "--save: cannot write '%s/%s': %s", dir,
			      RT_CKPT_LATEST, strerror(errno));
	free(path);
	free(tmp);
	return rc;
}

struct old {
	long long step;
	char name[NAME_CAP];
};

/* Newest first; for one step the name last (iter_N.1 before iter_N). */
static int newer_first(const void *a, const void *b)
{
	const struct old *x = a, *y = b;

	if (x->step != y->step)
		return x->step < y->step ? 1 : -1;
	return -strcmp(x->name, y->name);
}

static void drop(const char *dir, const char *name)
{
	char *p = rt_ckpt_index_path(dir, name);

	if (!p || remove_ckpt(p))
		rt_note("--save: cannot remove the old checkpoint %s/%s: %s; "
			"it is left as it is", dir, name, strerror(errno));
	free(p);
}

/* After `latest` names `keep_name` (step `step`): removes .tmp leftovers,
 * the superseded directory of the same step, and the checkpoints of
 * earlier steps but the newest keep - 1 (keep 0: none). */
static void clean(const char *dir, long long step, int keep,
		  const char *keep_name)
{
	struct old *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		long long s;
		int kind = name_kind(e->d_name, &s);

		if (kind == K_OTHER || !strcmp(e->d_name, keep_name) ||
		    (kind != K_TMP && s > step) ||
		    strlen(e->d_name) >= NAME_CAP)
			continue;
		if (n == cap) {
			struct old *w = realloc(v, (cap = 2 * cap + 8) *
						sizeof(*v));

			if (!w)
				break;
			v = w;
		}
		v[n].step = kind == K_TMP || s == step ? -1 : s;
		memcpy(v[n++].name, e->d_name, strlen(e->d_name) + 1);
	}
	if (d)
		closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), newer_first);
	for (size_t i = 0; i < n; i++)
		if (v[i].step < 0 || (keep > 0 && i + 1 >= (size_t)keep))
			drop(dir, v[i].name);
	free(v);
}

int rt_ckpt_dir_publish(const char *dir, long long step, int keep,
			char **final)
{
	char name[NAME_CAP], latest[NAME_CAP], why[256];
	char *tmp = rt_ckpt_dir_tmp(dir, step);
	struct stat st;
	int rc = 0;

	*final = NULL;
	read_latest(dir, latest, why, sizeof(why));
	/* never the directory `latest` names: it stays whole until the new
	 * one is in place */
	step_name(name, step, K_PLAIN);
	if (!strcmp(name, latest))
		step_name(name, step, K_ALT);
	*final = rt_ckpt_index_path(dir, name);
	if (!tmp || !*final) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	if (!lstat(*final, &st) && remove_ckpt(*final)) {
		rc = rt_error(RT_EIO, "--save: cannot replace '%s' (an earlier "
			      "save of step %lld): %s", *final, step,
			      strerror(errno));
		goto out;
	}
	if (rt_ckpt_dir_fsync(tmp) || rename(tmp, *final) ||
	    rt_ckpt_dir_fsync(dir)) {
		rc = rt_error(RT_EIO, "--save: cannot publish '%s' as '%s': %s",
			      tmp, *final, strerror(errno));
		goto out;
	}
	rc = write_latest(dir, name);
	if (!rc)
		clean(dir, step, keep, name);
out:
	free(tmp);
	return rc;
}
