/*
 * rt_infer: get_logprobs (see rt_infer.h).
 */
#include "rt_infer.h"

#include <stdlib.h>
#include <string.h>

#include "rt_err.h"
#include "rt_pp.h"
#include "rt_text.h"

/* Rank 0 places each rank's values: ranks with TP coordinate 0 (on the
 * last pipeline stage) hold their lane's samples at their CP chunks' positions (TP peers hold copies).
 * Every (sample, position) must be written exactly once. */
static int place(const struct rt_model *m, const struct rt_plan *p,
		 const float *all, long long per_rank, float *out,
		 unsigned char *seen)
{
	const struct rt_shape *s = &m->s;
	long long T = s->tokens, ls = s->local_seq;
	long long chunk = s->seq_len / (2 * s->cp);

	for (int r = 0; r < p->world; r++) {
		const struct rt_rank *rk = &p->ranks[r];
		const float *v = all + (long long)r * per_rank;
		int c = rk->c[RT_CP];

		/* the loss is the last pipeline stage's */
		if (rk->c[RT_TP] || rk->c[RT_PP] != p->size[RT_PP] - 1)
			continue;
		for (long long i = 0; i < per_rank; i++) {
			long long mb = i / T, j = i % T / ls, q = i % ls;
			long long part = s->cp > 1 ? q / chunk : 0;
			long long cc = part ? 2 * s->cp - 1 - c : c;
			long long pos = s->cp > 1 ? cc * chunk + q % chunk : q;
			long long smp = (long long)rk->lane * s->per_lane +
					mb * s->micro + j;
			long long at = smp * s->seq_len + pos;

			if (seen[at]++)
				return rt_error(RT_EPLAN, "get_logprobs: sample "
						"%lld position %lld comes from "
						"two ranks", smp, pos);
			out[at] = v[i];
		}
	}
	for (long long at = 0; at < s->global_batch * s->seq_len; at++)
		if (!seen[at])
			return rt_error(RT_EPLAN, "get_logprobs: no rank holds "
					"sample %lld position %lld",
					at / s->seq_len, at % s->seq_len);
	return 0;
}

/* The values, and each sample's seq_len + 1 token ids ("input_ids"):
 * logprobs[i][j] = log p(input_ids[i][j + 1] | input_ids[i][0..j]). */
static int write_json(FILE *f, const struct rt_model *m, long long step,
		      const float *v)
{
	const struct rt_shape *s = &m->s;
	long long first = (step - 1) * s->global_batch;

	fprintf(f, "{\"first_sample\": %lld, \"format\": \"gtplan-logprobs/2\","
		" \"input_ids\": [", first);
	for (long long i = 0; i < s->global_batch; i++) {
		rt_text_sample(m->text, m->seed, first + i, s->seq_len,
			       s->vocab, m->sample);
		fprintf(f, "%s\n  [", i ? "," : "");
		for (long long j = 0; j <= s->seq_len; j++)
			fprintf(f, "%s%d", j ? (j % 16 ? ", " : ",\n   ") : "",
				(int)m->sample[j]);
		fputc(']', f);
	}
	fprintf(f, "\n], \"logprobs\": [");
	for (long long i = 0; i < s->global_batch; i++) {
		fprintf(f, "%s\n  [", i ? "," : "");
		for (long long j = 0; j < s->seq_len; j++)
			fprintf(f, "%s%.9g", j ? (j % 8 ? ", " : ",\n   ") :
				"", (double)v[i * s->seq_len + j]);
		fputc(']', f);
	}
	fprintf(f, "\n], \"samples\": %lld, \"seq_len\": %lld, \"step\": %lld}"
		"\n", s->global_batch, s->seq_len, step);
	if (fflush(f) || ferror(f))
		return rt_error(RT_EIO, "--logprobs: write error");
	return 0;
}

/* The call's forward passes over this rank's micro-batches: mine[mb
 * tokens + i] = the log-probability of micro-batch mb's token i; its
 * collectives waited for under the watchdog (before kern_alloc's device
 * wait). */
static int forward_all(struct rt_model *m, long long step, float *mine)
{
	const struct rt_shape *s = &m->s;
	double unused = 0;
	int rc;

	coll_set_call(m->c, "get_logprobs", step);
	rc = rt_weights_refresh(m);
	for (long long mb = 0; !rc && mb < s->micro_batches; mb++) {
		if (s->pp > 1) {
			rc = rt_pp_forward_only(m, step, mb);
		} else {
			rc = rt_load_micro_batch(m, step, mb);
			if (!rc)
				rc = rt_forward(m, &unused);
		}
		/* the last stage's losses; the others' are never read
		 * (rt_infer_logprobs places the last stage's rows) */
		for (long long i = 0; !rc && i < s->tokens; i++)
			mine[mb * s->tokens + i] = s->post ? -m->h_loss[i] : 0;
	}
	return rc ? rc : coll_wait_last(m->c);
}

int rt_infer_logprobs(struct rt_model *m, const struct rt_plan *p,
		      long long step, FILE *f)
{
	const struct rt_shape *s = &m->s;
	long long n = s->micro_batches * s->tokens; /* this rank's values */
	int root = coll_rank(m->c, RT_K_WORLD) == 0;
	float *mine = malloc((size_t)n * sizeof(float));
	float *dsend = NULL, *drecv = NULL, *all = NULL, *out = NULL;
	unsigned char *seen = NULL;
	int rc = 0, krc;

	if (!mine) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = forward_all(m, step, mine)))
		goto out;
	/* The driver collects results from the workers (Ray); here a gather
	 * to world rank 0 stands in for it, recorded under its own call name
	 * so that get_logprobs' record is the call's own collectives. The
	 * buffers are the device's: the float collectives take device
	 * pointers under --device cuda. */
	coll_set_call(m->c, "get_logprobs.results", step);
	krc = kern_alloc(m->k, (size_t)n * sizeof(float), (void **)&dsend);
	if (!krc)
		krc = kern_alloc(m->k, (size_t)(root ? n * p->world : 1) *
				 sizeof(float), (void **)&drecv);
	if (!krc)
		krc = kern_upload(m->k, dsend, mine, (size_t)n * sizeof(float));
	if (krc) {
		rc = rt_kcheck(krc, "kern_alloc/upload", __FILE__, __LINE__);
		goto out;
	}
	rc = coll_gather(m->c, RT_K_WORLD, "logprobs", dsend, drecv, n, 0);
	if (!rc) /* under the watchdog, not in the download's or kern_free's
		    device wait */
		rc = coll_wait_last(m->c);
	if (rc || !root)
		goto out;
	all = malloc((size_t)(n * p->world) * sizeof(float));
	out = malloc((size_t)(s->global_batch * s->seq_len) * sizeof(float));
	seen = calloc((size_t)(s->global_batch * s->seq_len), 1);
	if (!all || !out || !seen) {
		rc = rt_error(RT_ENOMEM, "out of memory");
		goto out;
	}
	krc = kern_download(m->k, all, drecv, (size_t)(n * p->world) *
			    sizeof(float));
	if (krc) {
		rc = rt_kcheck(krc, "kern_download", __FILE__, __LINE__);
		goto out;
	}
	rc = place(m, p, all, n, out, seen);
	if (!rc)
		rc = write_json(f, m, step, out);
out:
	if (dsend)
		kern_free(m->k, dsend);
	if (drecv)
		kern_free(m->k, drecv);
	free(mine);
	free(all);
	free(out);
	free(seen);
	return rc;
}
