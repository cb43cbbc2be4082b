/*
 * outfile: where a command writes its data (`-o PATH`), so that a failed
 * write never leaves half a file and never removes a file gtplan did not
 * create.
 *
 * A regular file (or a new one) is written through a temporary file of our
 * own in the same folder (PATH.XXXXXX, from mkstemp) and renamed over PATH
 * when every byte is out; on failure only that temporary file is removed,
 * and PATH stays as it was. Anything else that exists at PATH (a device
 * such as /dev/null, a FIFO, a symbolic link) is opened and written in
 * place, and is never removed. No PATH, or "-", is stdout.
 *
 * Ownership: outfile_open fills a caller-owned struct; exactly one of
 * outfile_commit or outfile_abort ends it.
 */
#ifndef GTPLAN_OUTFILE_H
#define GTPLAN_OUTFILE_H

#include <stdio.h>

struct outfile {
	FILE *f;          /* where to write */
	const char *path; /* borrowed; NULL for stdout */
	char *tmp;        /* our temporary file, or NULL when writing in place */
};

/* Opens PATH (NULL or "-": stdout) for writing. Returns 0, or -1 after
 * saying why on stderr ("gtplan: cannot write 'PATH': ..."). */
int outfile_open(struct outfile *o, const char *path);
/* Flushes and closes; renames the temporary file over PATH. Stdout is
 * flushed and checked, not closed. Returns 0, or -1 after saying why on
 * stderr (the temporary file is removed then). */
int outfile_commit(struct outfile *o);
/* Closes without publishing: removes our temporary file only. */
void outfile_abort(struct outfile *o);

/* Flushes stdout and checks that every write to it succeeded. Returns 0,
 * or -1 after saying why on stderr (a full disk, a closed pipe). */
int outfile_check_stdout(void);

#endif
