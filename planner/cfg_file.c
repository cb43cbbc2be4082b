/*
 * cfg_file: a config file from disk into cfg_parse_text (cfg_yaml.c),
 * refusing what is not a config file before reading it: a directory, a
 * loop of symbolic links, a file over CFG_MAX_FILE_BYTES (said with its
 * real size) and, for a `defaults:` parent, anything but a regular file (a
 * FIFO would be read forever). The top-level path "-" is stdin. See cfg.h's cfg_parse_file and
 * cfg_parse_parent.
 */
#include "cfg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Our own errno-like code for "not a regular file" (no errno says it). */
#define EFTYPE_FIFO (-1)

/* Why a file cannot be read, for the message: errno's words, and plain
 * ones for what errno says badly. */
static const char *read_problem(int err)
{
	switch (err) {
	case ELOOP: return "a loop of symbolic links";
	case EISDIR: return "it is a directory";
	case EFTYPE_FIFO: return "it is a FIFO, device or socket, not a "
				 "regular file";
	default: return strerror(err);
	}
}

/* Opens path for reading. Only a regular file may be a `defaults:`
 * parent: O_NONBLOCK keeps the open of a FIFO from waiting for a writer,
 * and fstat refuses it. The top-level config may be a pipe
 * (`<(...)`, /dev/stdin), read up to the size limit; its path "-" is
 * stdin (a duplicate of its descriptor, so that the FILE we close is
 * ours). Sets *size to a regular file's size (else -1). */
static FILE *open_config(const char *path, int regular_only, long long *size,
			 int *err)
{
	int fd = !regular_only && !strcmp(path, "-")
			 ? fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
			 : open(path, O_RDONLY | O_CLOEXEC |
				(regular_only ? O_NONBLOCK : 0));
	struct stat st;
	FILE *f;

	*size = -1;
	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	if (fstat(fd, &st)) {
		*err = errno;
	} else if (S_ISDIR(st.st_mode)) {
		*err = EISDIR;
	} else if (!S_ISREG(st.st_mode) && regular_only) {
		*err = EFTYPE_FIFO;
	} else if ((f = fdopen(fd, "rb"))) {
		if (S_ISREG(st.st_mode))
			*size = (long long)st.st_size;
		return f;
	} else {
		*err = errno;
	}
	close(fd);
	return NULL;
}

/* Reads at most CFG_MAX_FILE_BYTES + 1 bytes, so an oversized file is
 * reported by cfg_parse_text without reading all of it. */
static int read_all(FILE *f, char **text, size_t *len, int *err)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);

	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap || n > CFG_MAX_FILE_BYTES)
			break;
		char *nb = realloc(buf, 2 * cap + 1);
		if (!nb) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = nb;
		cap *= 2;
	}
	if (!buf || ferror(f)) {
		*err = buf ? (errno ? errno : EIO) : ENOMEM;
		free(buf);
		return -1;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

static int parse_path(const char *path, int regular_only,
		      struct src_set *srcs, struct diag_list *diags,
		      struct cfg_node **out)
{
	long long size;
	char *text = NULL;
	size_t len = 0;
	int err = 0;
	FILE *f;

	*out = NULL;
	f = open_config(path, regular_only, &size, &err);
	if (f && size > (long long)CFG_MAX_FILE_BYTES) {
		struct diag *d = diag_add(diags, "GT103", DIAG_NOLOC, path,
			"'%s' is %lld bytes, more than the %u-byte limit",
			path, size, CFG_MAX_FILE_BYTES);
		diag_hint(d, "check that this is a config file");
		fclose(f);
		return -1;
	}
	errno = 0;
	if (!f || read_all(f, &text, &len, &err)) {
		struct diag *d = diag_add(diags, "GT104", DIAG_NOLOC, path,
					  "cannot read '%s': %s", path,
					  read_problem(err));
		diag_hint(d, err == EFTYPE_FIFO ? "a defaults: parent must be "
			  "a regular file; a FIFO or device would be read "
			  "forever" : "check the path and its permissions");
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return cfg_parse_text(path, text, len, srcs, diags, out);
}

int cfg_parse_file(const char *path, struct src_set *srcs,
		   struct diag_list *diags, struct cfg_node **out)
{
	return parse_path(path, 0, srcs, diags, out);
}

int cfg_parse_parent(const char *path, struct src_set *srcs,
		     struct diag_list *diags, struct cfg_node **out)
{
	return parse_path(path, 1, srcs, diags, out);
}
