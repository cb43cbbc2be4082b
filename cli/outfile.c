/*
 * outfile: -o PATH through a temporary file and a rename (outfile.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

/* PATH.XXXXXX next to PATH, so the rename stays on one file system;
 * `mode`: the replaced file's permissions, or -1 for a new file's. */
static int open_temp(struct outfile *o, int mode)
{
	size_t n = strlen(o->path);
	mode_t um;
	int fd;

	o->tmp = malloc(n + 8);
	if (!o->tmp)
		return -1;
	memcpy(o->tmp, o->path, n);
	memcpy(o->tmp + n, ".XXXXXX", 8);
	fd = mkstemp(o->tmp);
	if (fd < 0)
		goto fail;
	/* mkstemp makes it 0600; a published file keeps the permissions of
	 * the one it replaces, or gets 0666 less the umask, as fopen would
	 * have made it. */
	um = umask(0);
	umask(um);
	if (fchmod(fd, mode >= 0 ? (mode_t)mode : 0666 & ~um) ||
	    !(o->f = fdopen(fd, "wb"))) {
		int e = errno;

		close(fd);
		unlink(o->tmp);
		errno = e;
		goto fail;
	}
	return 0;
fail:
	free(o->tmp);
	o->tmp = NULL;
	return -1;
}

int outfile_open(struct outfile *o, const char *path)
{
	struct stat st;

	o->f = stdout;
	o->path = NULL;
	o->tmp = NULL;
	if (!path || strcmp(path, "-") == 0)
		return 0;
	o->path = path;
	if (lstat(path, &st) != 0)
		st.st_mode = 0;
	if (st.st_mode && !S_ISREG(st.st_mode))
		o->f = fopen(path, "wb"); /* a device, FIFO or link: in place */
	else if (open_temp(o, st.st_mode ? (int)(st.st_mode & 07777) : -1))
		o->f = NULL;
	if (!o->f) {
		fprintf(stderr, "gtplan: cannot write '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

int outfile_commit(struct outfile *o)
{
	int bad, e;

	if (!o->path)
		return outfile_check_stdout();
	bad = ferror(o->f);
	e = bad ? EIO : 0;
	if (fflush(o->f) && !e)
		e = errno;
	if (fclose(o->f) && !e)
		e = errno;
	o->f = NULL;
	if (!e && o->tmp && rename(o->tmp, o->path))
		e = errno;
	if (e) {
		fprintf(stderr, "gtplan: error writing '%s': %s\n", o->path,
			strerror(e));
		if (o->tmp)
			unlink(o->tmp);
	}
	free(o->tmp);
	o->tmp = NULL;
	return e ? -1 : 0;
}

void outfile_abort(struct outfile *o)
{
	if (o->path && o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	o->f = NULL;
}

int outfile_check_stdout(void)
{
	static int failed; /* said once; stays failed */
	int e = fflush(stdout) ? errno : 0;

	if (failed || (!e && !ferror(stdout)))
		return failed ? -1 : 0;
	failed = 1;
	fprintf(stderr, "gtplan: error writing to standard output%s%s\n",
		e ? ": " : "", e ? strerror(e) : "");
	return -1;
}
