/*
 * rules_batch: couplings between parallel settings (GT620-GT624) and the
 * batch arithmetic of each call (GT630-GT633, notes on GT400/GT401).
 *
 * Sources:
 *  - Megatron-core model_parallel_config.py ModelParallelConfig: "Cannot use
 *    sequence parallelism without tensor parallelism"; "When using expert
 *    parallelism and tensor parallelism, sequence parallelism must be used"
 *    (a ValueError in Megatron-core until 2026, a warning since; Megatron-
 *    LM's argument checks assert it). Megatron-LM arguments.py: interleaved
 *    schedules need pipeline-model-parallel size > 1.
 *  - NeMo-RL models/megatron/setup.py: "Sequence Packing must be enabled to
 *    use Context Parallelism with MCore". NeMo-RL nemo_rl/models/megatron/
 *    data.py _get_pack_sequence_parameters_for_megatron: packed sequences
 *    are padded to make_sequence_length_divisible_by, which must be a
 *    multiple of minimum_pad_factor (2 x CP with CP, x TP with sequence
 *    parallel): "make_sequence_length_divisible_by (M) is not a multiple
 *    of minimum_pad_factor (F)". Unpacked batches are padded to
 *    make_sequence_length_divisible_by (dynamic batching:
 *    sequence_length_round), and Megatron splits every sequence over TP
 *    with sequence parallel and into 2 x CP chunks with context parallel.
 *  - NeMo-RL models/megatron/data.py get_microbatch_iterator: an unpacked
 *    batch runs data.size // micro_batch_size micro-batches, so a remainder
 *    is never computed; log-prob calls use logprob_batch_size.
 *  - NeMo-RL algorithms/dpo.py (and rm.py): train(gbs = 2 x
 *    train_global_batch_size, mbs = 2 x train_micro_batch_size), chosen
 *    and rejected responses in one micro-batch; validate() the same with
 *    val_global_batch_size and val_micro_batch_size (sft.py: not doubled);
 *    the reference log-probs with mbs = 2 x train_micro_batch_size.
 *  - NeMo-RL distributed/batched_data_dict.py shard_by_batch_size: "Batch
 *    size (B) is not a multiple of shards (S)".
 *  - Megatron-core pipeline_parallel/schedules.py: the interleaved schedule
 *    raises "number of microbatches (N) is not divisible by
 *    pipeline-model-parallel-size (P) when using interleaved schedule";
 *    1F1B with fewer micro-batches than stages runs, with idle stages.
 */
#include "framework.h"

#include <stdio.h>
#include <string.h>

static int packing(const struct fw *f)
{
	return f->p->set.sequence_packing;
}

static int dynamic(const struct fw *f)
{
	return f->p->set.dynamic_batching;
}

static long long round_up(long long v, long long m)
{
	return m > 0 ? (v + m - 1) / m * m : v;
}

/* ---- couplings ---------------------------------------------------------- */

static void sp_rules(struct fw *f)
{
	const struct plan *p = f->p;
	const char *sp = KEY_SEQ_PARALLEL;
	struct diag *d;

	if (f->sequence_parallel && p->tp == 1) {
		d = diag_add(f->diags, "GT621", fw_loc(f, sp), sp,
			     "sequence_parallel needs TP > 1, and TP is 1 "
			     "(Megatron-core: cannot use sequence parallelism "
			     "without tensor parallelism)");
		diag_hint(d, "set sequence_parallel: false, or TP 2 or more");
		if (cfg_path(f->root, KEY_TP))
			diag_note(d, fw_loc(f, KEY_MEG
					    "tensor_model_parallel_size"),
				  "TP is 1 here");
	}
	/* NeMo-RL reads the key; a config without it is not complete */
	if (p->ep > 1 && p->tp > 1 && !f->sequence_parallel &&
	    cfg_bool(f->root, sp, &(int){ 0 }) == 1) {
		d = diag_add(f->diags, "GT620", fw_loc(f, sp), sp,
			     "EP %lld with TP %lld needs sequence_parallel: "
			     "true (Megatron: when using expert parallelism and "
			     "tensor parallelism, sequence parallelism must be "
			     "used)", p->ep, p->tp);
		diag_hint(d, "set policy.megatron_cfg.sequence_parallel: "
			  "true, or use TP 1 with EP %lld", p->ep);
	}
}

static void vpp_rule(struct fw *f)
{
	const char *at = KEY_MEG "virtual_pipeline_model_parallel_size";
	struct diag *d;

	if (!f->vpp || f->p->pp > 1)
		return;
	d = diag_add(f->diags, "GT622", fw_loc(f, at), at,
		     "virtual pipeline size %lld needs PP > 1, and PP is 1 "
		     "(Megatron: the interleaved schedule needs more than one "
		     "pipeline stage)", f->vpp);
	diag_hint(d, "remove virtual_pipeline_model_parallel_size (null), or "
		  "use PP 2 or more");
}

/* The sequence-length multiple Megatron needs: TP with sequence
 * parallel, 2 x CP with context parallel, their product with both. */
static long long seq_factor(const struct fw *f, char *why, size_t len)
{
	const struct plan *p = f->p;
	long long tp = f->sequence_parallel && p->tp > 1 ? p->tp : 1;
	long long cp = p->cp > 1 ? 2 * p->cp : 1;

	if (tp > 1 && cp > 1)
		snprintf(why, len, "2 x CP %lld x TP %lld (context and "
			 "sequence parallel)", p->cp, p->tp);
	else if (tp > 1)
		snprintf(why, len, "TP %lld (sequence parallel)", p->tp);
	else
		snprintf(why, len, "2 x CP %lld (context parallel)", p->cp);
	return tp * cp;
}

/* Packed sequences (GT625, GT623). NeMo-RL pads each sequence to a
 * multiple of make_sequence_length_divisible_by and asserts that it is a
 * multiple of the minimum pad factor (`need`); the longest sequence,
 * padded, must still fit a *_mb_tokens bin. */
static void packed_rules(struct fw *f, long long need, const char *why)
{
	const char *mk = "policy.make_sequence_length_divisible_by";
	long long m = need, len, cap;
	int rc = fw_int(f, mk, &m);
	struct diag *d;

	if (rc < 0 || m < 1)
		return;  /* the schema's finding */
	/* a fragment without the key is not judged: NeMo-RL reads it */
	if (rc == 1 && need > 1 && m % need) {
		d = diag_add(f->diags, "GT625", fw_loc(f, mk), mk,
			     "make_sequence_length_divisible_by (%lld) is not "
			     "a multiple of minimum_pad_factor (%lld = %s): "
			     "NeMo-RL's packed-sequence setup asserts it", m,
			     need, why);
		diag_hint(d, "set policy.make_sequence_length_divisible_by "
			  "to %lld (a multiple of %lld)", round_up(m, need),
			  need);
		return;
	}
	if (rc == 0)
		m = need;
	if (fw_int(f, "policy.max_total_sequence_length", &len) != 1 ||
	    len < 1 || m <= 1)
		return;
	for (int i = 0; i < 2; i++) {
		const char *at = i ? "policy.sequence_packing.logprob_mb_tokens"
				   : "policy.sequence_packing.train_mb_tokens";

		if (fw_int(f, at, &cap) != 1 || cap < len ||
		    round_up(len, m) <= cap)
			continue;
		d = diag_add(f->diags, "GT623", fw_loc(f, at), at,
			     "a sequence of max_total_sequence_length %lld "
			     "tokens is padded to %lld (a multiple of %s%lld), "
			     "more than the %lld-token bins of %s", len,
			     round_up(len, m), rc == 1 ?
			     "make_sequence_length_divisible_by " :
			     "the minimum pad factor ", m, cap,
			     strrchr(at, '.') + 1);
		diag_hint(d, "set %s to %lld, or max_total_sequence_length "
			  "to %lld", strrchr(at, '.') + 1, round_up(len, m),
			  len / m * m);
	}
}

static void seq_rules(struct fw *f)
{
	const struct plan *p = f->p;
	char why[96];
	long long need = seq_factor(f, why, sizeof(why)), m;
	const char *at = dynamic(f) ?
		"policy.dynamic_batching.sequence_length_round" :
		"policy.make_sequence_length_divisible_by";
	struct diag *d;

	/* only when the config says packing is off: NeMo-RL reads the key */
	if (p->cp > 1 && cfg_bool(f->root, "policy.sequence_packing.enabled",
				  &(int){ 0 }) == 1 && !packing(f)) {
		const char *cp = KEY_MEG "context_parallel_size";

		d = diag_add(f->diags, "GT624", fw_loc(f, cp), cp,
			     "context parallel size %lld needs sequence packing "
			     "(NeMo-RL: Sequence Packing must be enabled to use "
			     "Context Parallelism with MCore)", p->cp);
		diag_hint(d, "set policy.sequence_packing.enabled: true, or "
			  "context_parallel_size: 1");
		diag_note(d, fw_loc(f, "policy.sequence_packing.enabled"),
			  "sequence packing is off here");
		return;
	}
	if (packing(f)) {
		packed_rules(f, need, why);
		return;
	}
	/* unpacked: batches are padded to the multiple, Megatron splits */
	if (need == 1 || fw_int(f, at, &m) != 1 || m < 1 || m % need == 0)
		return;
	d = diag_add(f->diags, "GT623", fw_loc(f, at), at,
		     "batches are padded to a multiple of %lld token%s, but "
		     "Megatron splits each sequence by %s = %lld: a batch "
		     "whose longest sequence is not a multiple of %lld fails "
		     "in the split", m, m == 1 ? "" : "s", why, need, need);
	diag_hint(d, "set %s to %lld (or a multiple of it)",
		  strrchr(at, '.') + 1, round_up(m, need));
}

void fw_coupling_rules(struct fw *f)
{
	if (!f->megatron)
		return;
	sp_rules(f);
	vpp_rule(f);
	seq_rules(f);
}

/* ---- batch arithmetic ---------------------------------------------------- */

/* The log-prob calls of the algorithms that generate (GRPO, PPO,
 * distillation): the rollout batch over the lanes, in micro-batches of
 * logprob_batch_size (GT630). The reference policy's log-probs take the
 * same batch and micro-batch. */
static void logprob_rule(struct fw *f)
{
	const struct plan *p = f->p;
	const char *at = "policy.logprob_batch_size";
	long long prompts, gens, lb, b, per;
	char kp[64], kg[64];
	struct diag *d;

	if (!fw_generates(f))
		return;
	snprintf(kp, sizeof(kp), "%s.num_prompts_per_step", f->algorithm);
	snprintf(kg, sizeof(kg), "%s.num_generations_per_prompt",
		 f->algorithm);
	if (!f->megatron || packing(f) ||
	    dynamic(f) || !p->grid_ok || p->lanes < 1 ||
	    fw_int(f, kp, &prompts) != 1 || fw_int(f, kg, &gens) != 1 ||
	    fw_int(f, at, &lb) != 1 || prompts < 1 || gens < 1 || lb < 1)
		return;
	b = prompts * gens;
	if (b % p->lanes) {
		d = diag_add(f->diags, "GT630", fw_loc(f, kp), kp,
			     "the rollout batch of %lld prompts x %lld "
			     "generations = %lld samples does not split over "
			     "the %lld data lanes of get_logprobs (NeMo-RL's "
			     "shard_by_batch_size)", prompts, gens, b, p->lanes);
		diag_hint(d, "make num_prompts_per_step x "
			  "num_generations_per_prompt a multiple of %lld",
			  p->lanes);
		return;
	}
	per = b / p->lanes;
	if (per % lb == 0)
		return;
	d = diag_add(f->diags, "GT630", fw_loc(f, at), at,
		     "each lane computes log-probs of %lld samples in "
		     "micro-batches of %lld: Megatron runs %lld // %lld = %lld "
		     "micro-batches and never computes the last %lld "
		     "sample%s (NeMo-RL's get_microbatch_iterator)", per, lb,
		     per, lb, per / lb, per % lb, per % lb == 1 ? "" : "s");
	diag_hint(d, "use a logprob_batch_size that divides %lld (e.g. %lld), "
		  "or a rollout batch that is a multiple of %lld lanes x %lld",
		  per, per % 2 == 0 && lb > 2 ? 2LL : 1LL, p->lanes, lb);
}

/* Validation of SFT, DPO and reward models: policy.train(eval_mode)
 * over the lanes with the validation batch and micro-batch, both doubled
 * for preference pairs (GT631). */
static void validation_rule(struct fw *f)
{
	const struct plan *p = f->p;
	int pairs = !strcmp(f->algorithm, "dpo") || !strcmp(f->algorithm, "rm");
	long long k = pairs ? 2 : 1, gb, mb, per;
	char kg[64], km[64];
	struct diag *d;

	if ((!pairs && strcmp(f->algorithm, "sft")) || !p->grid_ok ||
	    p->lanes < 1 || packing(f) || dynamic(f))
		return;
	snprintf(kg, sizeof(kg), "%s.val_global_batch_size", f->algorithm);
	snprintf(km, sizeof(km), "%s.val_micro_batch_size", f->algorithm);
	if (fw_int(f, kg, &gb) != 1 || fw_int(f, km, &mb) != 1 || gb < 1 ||
	    mb < 1)
		return;
	if ((k * gb) % p->lanes) {
		d = diag_add(f->diags, "GT631", fw_loc(f, kg), kg,
			     "the validation batch of %s%lld sequences does not "
			     "split over the %lld data lanes (NeMo-RL: Batch "
			     "size (%lld) is not a multiple of shards (%lld))",
			     pairs ? "2 x " : "", k * gb, p->lanes, k * gb,
			     p->lanes);
		diag_hint(d, "use a val_global_batch_size that is a multiple "
			  "of %lld", p->lanes / (p->lanes % 2 == 0 && pairs ?
						 2 : 1));
		return;
	}
	per = k * gb / p->lanes;
	if (per % (k * mb) == 0)
		return;
	d = diag_add(f->diags, "GT631", fw_loc(f, km), km,
		     "each lane evaluates %lld validation sequences in "
		     "micro-batches of %lld%s: NeMo-RL runs %lld // %lld = %lld "
		     "micro-batch%s and never evaluates the last %lld", per,
		     k * mb, pairs ? " (2 x val_micro_batch_size)" : "", per,
		     k * mb, per / (k * mb), per / (k * mb) == 1 ? "" : "es",
		     per % (k * mb));
	diag_hint(d, "use a val_micro_batch_size that divides %lld, or a "
		  "val_global_batch_size that is a multiple of %lld lanes x "
		  "%lld", per / k, p->lanes, mb);
}

/* DPO and reward-model training double the batch (GT400/GT401 notes). */
static void pairs_note(struct fw *f)
{
	const struct plan *p = f->p;

	if (strcmp(f->algorithm, "dpo") && strcmp(f->algorithm, "rm"))
		return;
	for (size_t i = 0; i < f->diags->n; i++) {
		struct diag *d = &f->diags->v[i];
		const char *c = diag_code(d);

		if (strcmp(c, "GT400") && strcmp(c, "GT401"))
			continue;
		diag_note(d, DIAG_NOLOC, "%s trains each preference pair's "
			  "chosen and rejected responses in one micro-batch: "
			  "NeMo-RL splits 2 x %lld = %lld sequences over the "
			  "lanes in micro-batches of 2 x %lld = %lld, which "
			  "needs the same divisibility", f->algorithm[0] == 'd'
			  ? "DPO" : "reward-model training", p->global_batch,
			  2 * p->global_batch, p->micro_batch,
			  2 * p->micro_batch);
	}
}

/* Micro-batches per step against the pipeline (GT632, GT633). */
static void pipeline_rule(struct fw *f)
{
	const struct plan *p = f->p;
	const char *at = "policy.train_global_batch_size";
	long long nm;
	struct diag *d;

	if (!f->megatron || p->pp < 2 || !p->grid_ok || !p->global_batch ||
	    !p->micro_batch || packing(f) || dynamic(f) ||
	    p->global_batch % (p->lanes * p->micro_batch))
		return;
	nm = p->global_batch / (p->lanes * p->micro_batch);
	if (f->vpp && nm % p->pp) {
		long long step = p->lanes * p->micro_batch * p->pp;

		d = diag_add(f->diags, "GT633", fw_loc(f, at), at,
			     "the interleaved schedule needs the %lld "
			     "micro-batches per step to be a multiple of PP "
			     "%lld (Megatron-core: number of microbatches is not "
			     "divisible by pipeline-model-parallel-size when "
			     "using interleaved schedule)", nm, p->pp);
		diag_hint(d, "use a global batch of %lld or %lld (multiples of "
			  "L %lld x micro batch %lld x PP %lld)",
			  p->global_batch / step * step > 0 ?
			  p->global_batch / step * step : step,
			  (p->global_batch / step + 1) * step, p->lanes,
			  p->micro_batch, p->pp);
		return;
	}
	if (nm >= p->pp)
		return;
	d = diag_add(f->diags, "GT632", fw_loc(f, at), at,
		     "each lane runs %lld micro-batch%s per step over PP %lld "
		     "stages: Megatron's 1F1B schedule never fills the pipeline "
		     "and stages idle %.0f%% of the step", nm, nm == 1 ? "" :
		     "es", p->pp, 100.0 * (double)(p->pp - 1) /
		     (double)(nm + p->pp - 1));
	diag_hint(d, "use a global batch of at least %lld (L %lld x micro "
		  "batch %lld x PP %lld), or a smaller PP",
		  p->lanes * p->micro_batch * p->pp, p->lanes, p->micro_batch,
		  p->pp);
}

void fw_batch_rules(struct fw *f)
{
	logprob_rule(f);
	validation_rule(f);
	pairs_note(f);
	pipeline_rule(f);
}
