/*
 * stack: gtplan.stack and the refit checks (see stack.h). Sources: the
 * review of NeMo-RL PR #4512 (refit gathers TP only, the RNG key) and its
 * description (TE floor 2.19, Megatron-LM PR #6940, the silent refit skip);
 * docs/design.md §2.9.
 */
#include "stack.h"

#include <stdlib.h>
#include <string.h>

#include "model.h"

void stack_init(struct stack *s)
{
	memset(s, 0, sizeof(*s));
	s->refit_gather = STACK_GATHER_GTP_THEN_TP;
	s->mcore_gtp_fixes = 1;
	s->mlm_7162 = 1;
	for (int i = 0; i < STACK_NKEYS; i++)
		s->loc[i] = DIAG_NOLOC;
}

const char *stack_opt_format_name(enum stack_opt_format f)
{
	switch (f) {
	case STACK_OPT_FULLY_RESHARDABLE:
		return "fully_reshardable";
	case STACK_OPT_FULLY_SHARDED_MODEL_SPACE:
		return "fully_sharded_model_space";
	default:
		return "dp_reshardable";
	}
}

/* ---- presets ----------------------------------------------------------- */

struct preset {
	const char *name, *what;
	const char *lines[10]; /* "key: value  -- why", NULL-ended */
};

static const struct preset presets[] = {
	{ "nemo-rl-pr4512",
	  "NeMo-RL PR #4512 at its pins (NeMo-RL e3248a60, Megatron-Bridge "
	  "ec835530, Megatron-LM b4d72b79)",
	  { "refit_gather: tp_only  -- Bridge's export gathers TP only "
	    "(param_mapping.py:1331): [R/G, k] instead of [R, k] (NeMo-RL PR #4512 review)",
	    "rng_state_group: dp_cp  -- get_rng_state keys the RNG state by "
	    "dp_cp, without GTP: G peers claim one key (NeMo-RL PR #4512 review)",
	    "replica_group: dp_cp  -- Bridge derives replica_id from dp_cp: "
	    "G main replicas of norms and biases (NeMo-RL PR #4512)",
	    "inference_layout_compare: without_shards  -- "
	    "dedicated_inference_megatron_cfg compares TP, PP, EP, ETP, CP but "
	    "not the shard counts (NeMo-RL PR #4512)",
	    "transformer_engine: 2.14.1  -- NeMo-RL pins TE v2.14.1; GTP needs "
	    "2.19 (NeMo-RL PR #4512)",
	    "megatron_core_gtp_fixes: false  -- Megatron-LM PR #6940 (bias "
	    "sizing, tied embeddings, inference groups) is not in the pin "
	    "(NeMo-RL PR #4512)",
	    "driver_layout: 5d  -- the PR adds a fifth driver axis for GTP; "
	    "a preset cannot change the plan's layout: set "
	    "gtplan.driver_layout: 5d (or --layout 5d) to plan it",
	    NULL } },
};

#define N_PRESETS (sizeof(presets) / sizeof(*presets))

size_t stack_preset_count(void)
{
	return N_PRESETS;
}

const char *stack_preset_name(size_t i)
{
	return i < N_PRESETS ? presets[i].name : NULL;
}

static const struct preset *find_preset(const char *name)
{
	for (size_t i = 0; i < N_PRESETS; i++)
		if (strcmp(presets[i].name, name) == 0)
			return &presets[i];
	return NULL;
}

int stack_apply_preset(struct stack *s, const char *name, struct diag_loc loc)
{
	if (!find_preset(name))
		return -1;
	/* nemo-rl-pr4512, the only one */
	s->refit_gather = STACK_GATHER_TP_ONLY;
	s->rng_dp_cp = 1;
	s->replica_dp_cp = 1;
	s->compare_without_shards = 1;
	s->transformer_engine = "2.14.1";
	s->mcore_gtp_fixes = 0;
	s->preset = find_preset(name)->name;
	/* the keys it sets */
	for (int i = 0; i <= STACK_FIXES; i++)
		if (i != STACK_BATCH)
			s->loc[i] = loc;
	return 0;
}

int stack_explain_preset(FILE *f, const char *name)
{
	const struct preset *p = find_preset(name);

	if (!p)
		return -1;
	fprintf(f, "preset %s: %s\nsets (gtplan.stack; single keys override "
		"it):\n", p->name, p->what);
	for (size_t i = 0; p->lines[i]; i++)
		fprintf(f, "  %s\n", p->lines[i]);
	return 0;
}

/* ---- reading ----------------------------------------------------------- */

/* A string key: *out = (it is `word`), *loc its place. Other kinds leave
 * both as they were (the schema reports them). */
static void is(const struct set_value *v, const char *word, int *out,
	       struct diag_loc *loc)
{
	if (v->kind != CFG_STR)
		return;
	*out = strcmp(v->text, word) == 0;
	*loc = v->loc;
}

/* A boolean key: *out its value, *loc its place. */
static void flag(const struct set_value *v, int *out, struct diag_loc *loc)
{
	if (v->kind != CFG_BOOL)
		return;
	*out = v->b;
	*loc = v->loc;
}

static char *presets_list(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < N_PRESETS && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 i ? ", " : "", presets[i].name);
	return buf;
}

int stack_read(const struct set_stack *in, struct stack *s,
	       struct diag_list *diags)
{
	const char *t;
	int rc = 0;

	stack_init(s);
	if (in->preset.kind == CFG_STR &&
	    stack_apply_preset(s, in->preset.text, in->preset.loc) < 0) {
		char list[256];
		struct diag *d = diag_add(diags, "GT700", in->preset.loc,
			"gtplan.stack.preset", "unknown stack preset '%s'",
			in->preset.text);

		diag_hint(d, "known presets: %s (`gtplan explain preset "
			  "NAME` lists what one sets)",
			  presets_list(list, sizeof(list)));
		rc = -1;
	}
	is(&in->rng_state_group, "dp_cp", &s->rng_dp_cp, &s->loc[STACK_RNG]);
	is(&in->replica_group, "dp_cp", &s->replica_dp_cp,
	   &s->loc[STACK_REPLICA]);
	is(&in->inference_layout_compare, "without_shards",
	   &s->compare_without_shards, &s->loc[STACK_COMPARE]);
	is(&in->batch_split, "copies", &s->batch_copies, &s->loc[STACK_BATCH]);
	if (in->refit_gather.kind == CFG_STR) {
		t = in->refit_gather.text;
		s->refit_gather = strcmp(t, "tp_only") == 0 ?
			STACK_GATHER_TP_ONLY : strcmp(t, "tp_then_gtp") == 0 ?
			STACK_GATHER_TP_THEN_GTP : STACK_GATHER_GTP_THEN_TP;
		s->loc[STACK_GATHER] = in->refit_gather.loc;
	}
	if (in->transformer_engine.given) {
		s->loc[STACK_TE] = in->transformer_engine.loc;
		s->transformer_engine = in->transformer_engine.text;
	}
	is(&in->sharded_replica_group, "dp_cp_gtp", &s->writer_dp_cp_gtp,
	   &s->loc[STACK_WRITER]);
	if (in->optimizer_ckpt_format.kind == CFG_STR) {
		t = in->optimizer_ckpt_format.text;
		s->opt_format = strcmp(t, "fully_reshardable") == 0 ?
			STACK_OPT_FULLY_RESHARDABLE :
			strcmp(t, "fully_sharded_model_space") == 0 ?
			STACK_OPT_FULLY_SHARDED_MODEL_SPACE :
			STACK_OPT_DP_RESHARDABLE;
		s->loc[STACK_OPT_FORMAT] = in->optimizer_ckpt_format.loc;
	}
	flag(&in->megatron_lm_7162, &s->mlm_7162, &s->loc[STACK_7162]);
	flag(&in->megatron_core_gtp_fixes, &s->mcore_gtp_fixes,
	     &s->loc[STACK_FIXES]);
	return rc;
}

/* ---- refit rows -------------------------------------------------------- */

long long stack_refit_rows(enum stack_gather how, long long tp, long long g,
			   long long rows, long long *out, long long max)
{
	long long c = rows / (tp * g); /* rows per piece t*G + g */
	long long n = how == STACK_GATHER_TP_ONLY ? rows / g : rows;

	for (long long i = 0; i < n && i < max; i++) {
		long long j = i / c, off = i % c, piece;

		if (how == STACK_GATHER_GTP_THEN_TP)
			piece = j;
		else if (how == STACK_GATHER_TP_ONLY)
			piece = j * g;              /* t = j, g = 0 */
		else
			piece = (j % tp) * g + j / tp; /* for g: for t */
		out[i] = piece * c + off;
	}
	return n;
}

int stack_te_supports_gtp(const char *v)
{
	char *end;
	long major, minor;

	if (!v)
		return -1;
	major = strtol(v, &end, 10);
	if (end == v || *end != '.')
		return -1;
	v = end + 1;
	minor = strtol(v, &end, 10);
	if (end == v)
		return -1;
	return major > 2 || (major == 2 && minor >= 19);
}

/* "0-3, 12-15, 4-7, 16-19, ..." from the first rows of an order. */
static void runs_text(const long long *r, long long n, long long total,
		      char *buf, size_t len)
{
	size_t used = 0;
	long long i = 0;
	int k = 0;

	buf[0] = '\0';
	while (i < n && k < 4 && used < len) {
		long long j = i;

		while (j + 1 < n && r[j + 1] == r[j] + 1)
			j++;
		used += (size_t)snprintf(buf + used, len - used, "%s%lld-%lld",
					 k ? ", " : "", r[i], r[j]);
		i = j + 1;
		k++;
	}
	if (i < total && used < len)
		snprintf(buf + used, len - used, ", ...");
}

#define SHOW_ROWS 4096

static void check_gather(const struct plan *p, const struct stack *s,
			 const struct model_shape *m, struct diag_list *diags)
{
	struct model_weight w[MODEL_MAX_WEIGHTS];
	size_t n = model_layer_weights(m, w, MODEL_MAX_WEIGHTS);
	long long tp = p->tp, g = p->gtp, rows, got, order[SHOW_ROWS];
	const char *name = "a column-parallel weight (example)";
	char text[160];
	struct diag *d;

	/* with TP 1 the two orders coincide (one TP slice) */
	if (s->refit_gather == STACK_GATHER_GTP_THEN_TP ||
	    (s->refit_gather == STACK_GATHER_TP_THEN_GTP && tp == 1))
		return;
	rows = tp * g * 4;
	/* no model named: gtplan-run's decoder is the model (its linear_fc1
	 * is [2 ffn, hidden], column-parallel), so the rows shown are the
	 * ones its --export returns before splitting gate and up */
	if (!m->known && p->runtime.model.ffn > 0 &&
	    2 * p->runtime.model.ffn % (tp * g) == 0) {
		rows = 2 * p->runtime.model.ffn;
		name = "layers.0.fc1 (gtplan-run's model)";
	}
	for (size_t i = 0; i < n; i++)
		if (w[i].split == SPLIT_COLUMN && w[i].rows % (tp * g) == 0) {
			rows = w[i].rows;
			name = w[i].name;
			break;
		}
	got = stack_refit_rows(s->refit_gather, tp, g, rows, order, SHOW_ROWS);
	/* a run of rows per piece: enough to show 4 runs */
	runs_text(order, got < SHOW_ROWS ? got : SHOW_ROWS, got, text,
		  sizeof(text));
	if (s->refit_gather == STACK_GATHER_TP_ONLY) {
		d = diag_add(diags, "GT701", s->loc[STACK_GATHER],
			     "gtplan.stack.refit_gather",
			     "refit gathers TP only under GTP %lld: %s comes "
			     "back [%lld, k] (rows %s) instead of [%lld, k]",
			     g, name, got, text, rows);
	} else {
		d = diag_add(diags, "GT702", s->loc[STACK_GATHER],
			     "gtplan.stack.refit_gather",
			     "refit gathers TP then GTP: %s comes back with "
			     "rows %s instead of 0-%lld in order", name, text,
			     rows - 1);
	}
	diag_hint(d, "gather the GTP group first (rebuilding the TP slice, "
		  "padding stripped), then TP: gtplan.stack.refit_gather: "
		  "gtp_then_tp (the Megatron-Bridge export fix proposed on "
		  "NeMo-RL PR #4512)");
}

/* GT720: the driver splits the global batch over the D copies instead of
 * the L = D x G lanes (docs/design.md §2.1). The loss trap of the same
 * mistake, a token count or gradient average over the copies, has no knob
 * of its own (gtplan.stack is closed): it is a note on this finding. */
static void check_batch_split(const struct plan *p, const struct stack *s,
			      struct diag_list *diags)
{
	long long d_ = p->dp_replicate, g = p->gtp, l = p->lanes;
	long long gbs = p->global_batch;
	struct diag *d;

	if (gbs)
		d = diag_add(diags, "GT720", s->loc[STACK_BATCH],
			     "gtplan.stack.batch_split",
			     "the global batch is split over the D = %lld copies "
			     "instead of the L = %lld lanes (D %lld x G %lld): "
			     "each lane trains %lld / %lld = %lld samples instead "
			     "of %lld / %lld = %lld, %lld times the intended "
			     "batch", d_, l, d_, g, gbs, d_, gbs / d_, gbs, l,
			     gbs / l, g);
	else
		d = diag_add(diags, "GT720", s->loc[STACK_BATCH],
			     "gtplan.stack.batch_split",
			     "the global batch is split over the D = %lld copies "
			     "instead of the L = %lld lanes (D %lld x G %lld): "
			     "each lane trains gbs/%lld samples instead of "
			     "gbs/%lld, %lld times the intended batch", d_, l, d_,
			     g, d_, l, g);
	diag_note(d, DIAG_NOLOC, "a loss token count or gradient average "
		  "over the %lld copies instead of the %lld lanes makes each "
		  "gradient %lld times too large (Megatron sums over all lanes "
		  "and divides by their token count)", d_, l, g);
	diag_hint(d, "split the batch and count tokens over the L = %lld "
		  "lanes (Megatron's get_data_parallel_world_size(), GTP "
		  "included): keep the driver's data_parallel axis at %lld, "
		  "gtplan.stack.batch_split: lanes", l, l);
}

const char *stack_gather_name(enum stack_gather g)
{
	return g == STACK_GATHER_TP_ONLY ? "tp_only" :
	       g == STACK_GATHER_TP_THEN_GTP ? "tp_then_gtp" : "gtp_then_tp";
}

int stack_check(const struct plan *p, const struct model_shape *m,
		struct diag_list *diags)
{
	struct stack s;
	struct diag *d;

	stack_read(&p->set.sim.stack, &s, diags);
	if (p->gtp <= 1)
		return 0;
	check_gather(p, &s, m, diags);
	if (s.batch_copies && p->grid_ok)
		check_batch_split(p, &s, diags);
	if (s.compare_without_shards &&
	    p->set.megatron_generation) {
		d = diag_add(diags, "GT703", s.loc[STACK_COMPARE],
			     "gtplan.stack.inference_layout_compare",
			     "refit is silently skipped: the dedicated-inference-"
			     "model test compares TP, PP, EP, ETP and CP but not "
			     "the shard counts, so TP %lld x GTP %lld equals an "
			     "inference model of TP %lld", p->tp, p->gtp, p->tp);
		diag_hint(d, "compare tensor_parallel_num_weight_shards and "
			  "expert_tensor_parallel_num_weight_shards too, null "
			  "normalised to the TP (ETP) degree: "
			  "gtplan.stack.inference_layout_compare: with_shards");
	}
	if (s.transformer_engine &&
	    stack_te_supports_gtp(s.transformer_engine) == 0) {
		d = diag_add(diags, "GT704", s.loc[STACK_TE],
			     "gtplan.stack.transformer_engine",
			     "TransformerEngine %s is too old for GTP (needs "
			     "2.19 or newer): Megatron-core stubs TE out and the "
			     "run dies with an unrelated TypeError",
			     s.transformer_engine);
		diag_hint(d, "install TransformerEngine 2.19 or newer, or run "
			  "without GTP (tensor_parallel_num_weight_shards: "
			  "null)");
	}
	if (!s.mcore_gtp_fixes && (m->add_bias_linear || m->add_qkv_bias ||
				   m->share_embeddings_and_output_weights)) {
		const char *why = m->add_bias_linear ? "add_bias_linear" :
			m->add_qkv_bias ? "add_qkv_bias" :
			"share_embeddings_and_output_weights";

		d = diag_add(diags, "GT705", s.loc[STACK_FIXES],
			     "gtplan.stack.megatron_core_gtp_fixes",
			     "this Megatron-core lacks the GTP fixes the model "
			     "needs (%s): %s", why,
			     m->share_embeddings_and_output_weights &&
			     !m->add_bias_linear && !m->add_qkv_bias ?
			     "the output layer's shape guard rejects the tied "
			     "embedding's GTP shard" :
			     "TE sizes the bias 1/G too small");
		diag_hint(d, "use a Megatron-LM with PR #6940 (GTP bias sizing, "
			  "tied embeddings, inference process groups), or "
			  "turn the model's biases / tied embeddings off");
	}
	return 0;
}
