/*
 * rt_text: the dataset of a gtplan-run (see rt_text.h).
 */
#include "rt_text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coll.h"
#include "rt_data.h"
#include "rt_err.h"

void rt_text_init(struct rt_text *t)
{
	memset(t, 0, sizeof(*t));
}

void rt_text_release(struct rt_text *t)
{
	free(t->bytes);
	rt_text_init(t);
}


/* The whole file, at most RT_TEXT_MAX_BYTES, at least one byte. */
static int read_file(struct rt_text *t, const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	long long size;
	int rc = 0;

	if (!f)
		return rt_error(RT_EIO, "--data: cannot read '%s': %s", path,
				strerror(errno));
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		rc = rt_error(RT_EIO, "--data: '%s' is not a regular file; "
			      "give a text file", path);
		goto out;
	}
	size = (long long)st.st_size;
	if (size == 0) {
		rc = rt_error(RT_EIO, "--data: '%s' is empty; give a text "
			      "with at least one byte", path);
		goto out;
	}
	if (size > RT_TEXT_MAX_BYTES) {
		rc = rt_error(RT_EIO, "--data: '%s' has %lld bytes, more than "
			      "the limit of %lld; cut the text to at most %lld "
			      "bytes", path, size, RT_TEXT_MAX_BYTES,
			      RT_TEXT_MAX_BYTES);
		goto out;
	}
	t->bytes = malloc((size_t)size);
	if (!t->bytes) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	if (fread(t->bytes, 1, (size_t)size, f) != (size_t)size) {
		rc = rt_error(RT_EIO, "--data: cannot read '%s': %s", path,
			      ferror(f) ? strerror(errno) : "short read");
		free(t->bytes);
		t->bytes = NULL;
		goto out;
	}
	t->n = size;
out:
	fclose(f);
	return rc;
}

/* World rank 0's part: the text of `spec`, reported there. */
static int load_root(struct rt_text *t, const char *spec)
{
	FILE *f;

	if (spec && !strcmp(spec, RT_TEXT_SYNTHETIC))
		return 0;
	if (spec)
		return read_file(t, spec);
	/* the default: the GPL when this system has it */
	f = fopen(RT_TEXT_DEFAULT, "rb");
	if (!f) {
		t->fell_back = 1;
		return 0;
	}
	fclose(f);
	return read_file(t, RT_TEXT_DEFAULT);
}

int rt_text_load(struct rt_text *t, const char *spec, int rank)
{
	long long head[2];
	int rc = 0;

	rt_text_init(t);
	if (rank == 0)
		rc = load_root(t, spec);
	/* every rank stops with rank 0's status */
	if ((rc = coll_mpi_agree(rc)))
		goto fail;
	head[0] = t->n;
	head[1] = t->fell_back;
	if ((rc = coll_mpi_bcast(head, (long long)sizeof(head))))
		goto fail;
	if (rank != 0 && head[0] > 0 &&
	    !(t->bytes = malloc((size_t)head[0])))
		rc = rt_error(RT_ENOMEM, "out of memory");
	if ((rc = coll_mpi_agree(rc)))
		goto fail;
	t->n = head[0];
	t->fell_back = (int)head[1];
	if (t->n > 0 && (rc = coll_mpi_bcast(t->bytes, t->n)))
		goto fail;
	return 0;
fail:
	rt_text_release(t);
	return rc;
}

const char *rt_text_describe(const struct rt_text *t, const char *spec,
			     char *buf, size_t len)
{
	if (!t->bytes)
		snprintf(buf, len, "the synthetic text%s", t->fell_back ?
			 " (" RT_TEXT_DEFAULT " is missing; --data FILE "
			 "trains on a file)" : "");
	else
		snprintf(buf, len, "%s (%lld bytes)", spec ? spec :
			 RT_TEXT_DEFAULT, t->n);
	return buf;
}

void rt_text_sample(const struct rt_text *t, uint64_t seed, long long index,
		    long long seq_len, long long vocab, int32_t *tokens)
{
	uint64_t at;

	if (!t || !t->bytes) {
		rt_data_sample(seed, index, seq_len, vocab, tokens);
		return;
	}
	at = rt_rand_u64(seed, RT_TEXT_STREAM, (uint64_t)index) %
	     (uint64_t)t->n;
	for (long long i = 0; i <= seq_len; i++) {
		tokens[i] = (int32_t)(t->bytes[at] % vocab);
		if (++at == (uint64_t)t->n)
			at = 0;
	}
}
