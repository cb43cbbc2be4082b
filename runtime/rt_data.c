/*
 * rt_data: counter-based random numbers and the synthetic text.
 */
#include "rt_data.h"

#include <math.h>
#include <string.h>

/* Data and weights draw from disjoint streams. */
#define RT_DATA_STREAM 0xda7a000000000000ULL

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t rt_rand_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
	return mix(mix(mix(seed) ^ stream) ^ index);
}

/* (0, 1], never 0, so that log() is finite. */
static double unit(uint64_t u)
{
	return ((double)(u >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

double rt_rand_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
	double u1 = unit(rt_rand_u64(seed, stream, 2 * index));
	double u2 = unit(rt_rand_u64(seed, stream, 2 * index + 1));

	return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static const char *const words[] = {
	"the", "of", "and", "to", "a", "in", "is", "that", "for", "it",
	"as", "was", "with", "be", "by", "on", "not", "he", "this", "are",
	"or", "his", "from", "at", "which", "but", "have", "an", "had",
	"they", "you", "were", "their", "one", "all", "we", "can", "her",
	"has", "there", "been", "if", "more", "when", "will", "would", "who",
	"so", "no", "program", "software", "license", "free", "copy",
	"source", "code", "work", "rights", "terms", "covered", "version",
	"public", "general", "distribute", "modify", "conditions", "object",
	"permission", "author", "patent", "user", "product", "network",
	"layer", "weight", "shard", "gradient", "tensor", "parallel", "rank",
};

#define N_WORDS (sizeof(words) / sizeof(words[0]))

void rt_data_sample(uint64_t seed, long long index, long long seq_len,
		    long long vocab, int32_t *tokens)
{
	uint64_t stream = RT_DATA_STREAM ^ (uint64_t)index, k = 0;
	long long n = 0, want = seq_len + 1;
	int start = 1, in_sentence = 0;

	while (n < want) {
		uint64_t r = rt_rand_u64(seed, stream, k++);
		/* squaring a uniform index favours the first (common) words */
		double u = unit(r);
		const char *w = words[(size_t)(u * u * (double)N_WORDS) %
				      N_WORDS];
		size_t len = strlen(w);

		for (size_t i = 0; i < len && n < want; i++) {
			int ch = (unsigned char)w[i];

			if (start && i == 0 && ch >= 'a' && ch <= 'z')
				ch -= 'a' - 'A';
			tokens[n++] = (int32_t)(ch % vocab);
		}
		start = 0;
		in_sentence++;
		/* after 4 words a sentence ends (or takes a comma) with a
		 * chance that grows with its length */
		if (in_sentence >= 4 && (r >> 60) < (uint64_t)in_sentence - 2) {
			if (n < want)
				tokens[n++] = (int32_t)(((r >> 8) & 3 ? '.' :
							 ',') % vocab);
			start = ((r >> 8) & 3) != 0;
			in_sentence = start ? 0 : in_sentence;
		}
		if (n < want)
			tokens[n++] = (int32_t)(' ' % vocab);
	}
}
