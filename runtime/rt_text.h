/*
 * rt_text: the dataset gtplan-run trains on (--data): a text file whose
 * bytes are the tokens, or the synthetic text of rt_data.
 *
 * Sample `index` of a file dataset is the seq_len + 1 bytes starting at
 * offset rt_rand_u64(seed, RT_TEXT_STREAM, index) mod n, wrapping around
 * the end of the text, each reduced modulo the vocabulary. It depends only
 * on (seed, index) and the file, never on the rank or the layout, so every
 * layout trains on the same samples and the single-rank run stays the
 * reference (tests/runtime_reference.py rebuilds them the same way).
 *
 * World rank 0 reads the file and broadcasts it: only the launching host
 * needs it, as only NeMo-RL's driver needs the dataset.
 *
 * Ownership: a struct rt_text owns its bytes; rt_text_release() frees them.
 */
#ifndef GTPLAN_RT_TEXT_H
#define GTPLAN_RT_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The text used when --data is not given, where it exists. */
#define RT_TEXT_DEFAULT "/usr/share/common-licenses/GPL-3"
/* --data's name for the synthetic generator (rt_data_sample). */
#define RT_TEXT_SYNTHETIC "synthetic"
/* Hostile-input limit: the largest --data file read (bytes). */
#define RT_TEXT_MAX_BYTES (64LL << 20)
/* Offsets and weights/synthetic data draw from disjoint streams. */
#define RT_TEXT_STREAM 0x7e47000000000000ULL

struct rt_text {
	unsigned char *bytes;  /* NULL: the synthetic text */
	long long n;           /* bytes of the file */
	int fell_back;         /* 1: no --data, the default file is missing */
};

void rt_text_init(struct rt_text *t);
void rt_text_release(struct rt_text *t);

/* Loads --data `spec`: NULL for the default (RT_TEXT_DEFAULT when it
 * exists on world rank 0, else the synthetic text with t->fell_back set),
 * "synthetic", or a file path. World rank 0 reads it and reports a
 * missing, unreadable, irregular, empty or too large file (RT_EIO); every
 * rank then returns its status or gets the bytes. `rank`: this rank in the world.
 * Returns 0 or a negative RT_E* code. Collective over the MPI world. */
int rt_text_load(struct rt_text *t, const char *spec, int rank);

/* "synthetic" or "FILE (N bytes)" for the start-up note; buf of len. */
const char *rt_text_describe(const struct rt_text *t, const char *spec,
			     char *buf, size_t len);

/* Writes the seq_len + 1 tokens of sample `index` (see the top of this
 * file; rt_data_sample when t is NULL or synthetic). Inputs are tokens
 * [0, seq_len), targets [1, seq_len]. */
void rt_text_sample(const struct rt_text *t, uint64_t seed, long long index,
		    long long seq_len, long long vocab, int32_t *tokens);

#endif
