/*
 * rt_data: gtplan-run's deterministic randomness: the synthetic byte text
 * the model trains on and the normal deviates its weights start from.
 *
 * Both are counter-based: a value depends only on (seed, stream, index),
 * never on which rank asks or in which order, so every layout sees the
 * same dataset and the same initial logical weights, and a single-rank run
 * is the reference for every layout.
 *
 * Ownership: pure functions; rt_data_sample writes into the caller's
 * arrays.
 */
#ifndef GTPLAN_RT_DATA_H
#define GTPLAN_RT_DATA_H

#include <stdint.h>

/* A uniform 64-bit hash of (seed, stream, index) (splitmix64 finaliser). */
uint64_t rt_rand_u64(uint64_t seed, uint64_t stream, uint64_t index);
/* A standard normal deviate for (seed, stream, index) (Box-Muller). */
double rt_rand_normal(uint64_t seed, uint64_t stream, uint64_t index);

/* Writes the seq_len + 1 tokens of sample `index` of the dataset: English-
 * like sentences (words drawn with Zipf-like frequencies, capitalised,
 * ended with punctuation) as bytes, each reduced modulo `vocab`. Inputs
 * are tokens [0, seq_len), targets [1, seq_len]. */
void rt_data_sample(uint64_t seed, long long index, long long seq_len,
		    long long vocab, int32_t *tokens);

#endif
