/*
 * gtplan: the command-line front end. Parses arguments, runs the loading
 * pipeline (cfg_load -> cfg_override -> cfg_resolve -> schema -> plan) and
 * prints. Data goes to stdout, diagnostics to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfg.h"
#include "diag.h"
#include "launch.h"
#include "layout.h"
#include "plan.h"
#include "render.h"
#include "calls.h"
#include "schema.h"
#include "predict.h"
#include "simulate.h"
#include "reshard.h"
#include "stack.h"
#include "trace.h"
#include "version.h"

/* Exit codes (DESIGN.md 4). */
enum exit_code { EXIT_CLEAN = 0, EXIT_FINDINGS = 1, EXIT_USAGE = 2 };

enum fmt { FMT_TEXT, FMT_JSON, FMT_SARIF };

struct opts {
	const char *cmd;
	const char **configs;
	size_t n_configs;
	char **overrides;
	int n_overrides;
	enum fmt format;
	int strict;
	int color; /* -1 auto */
	const char *out;
	int summary;
	long long rank;
	int have_rank;
	const char *call;   /* sim --call NAME */
	const char *trace;  /* sim --trace FILE */
	int list_calls;     /* sim --list-calls */
	const char *predict; /* sim --predict-record PREFIX */
	long long steps;    /* sim --steps N (0: not given) */
	int no_sim;         /* plan --no-sim */
	const char *render_format; /* render --format svg|png|dot|text */
	const char *render_color;  /* render --color lane|gtp|tp|... */
	const char *render_groups; /* render --groups gtp,tp */
	char layout_override[48];  /* render --layout 4d|5d, as an override */
	struct launch_opts run;    /* run's own and gtplan-run's options */
};

static const char usage_text[] =
"usage: gtplan <command> [options]\n"
"\n"
"Plans and checks Megatron / NeMo-RL parallel layouts with Generalized\n"
"Tensor Parallelism (GTP), before anyone books the GPUs.\n"
"\n"
"commands:\n"
"  lint CONFIG... [OVERRIDE...]   check configs; exit 1 on errors\n"
"  plan CONFIG [OVERRIDE...]      write the plan JSON (ranks, groups, sizes)\n"
"  sim CONFIG [OVERRIDE...]       dry-run every driver call; exit 1 on a hang\n"
"  explain CODE                   the long story of a diagnostic code\n"
"  explain CONFIG --rank N        rank N's node, coordinates, lane, groups\n"
"  explain --list                 every diagnostic code, one line each\n"
"  explain preset NAME            what a gtplan.stack preset sets, and why\n"
"  config CONFIG [OVERRIDE...]    print the loaded, resolved config as JSON\n"
"  render CONFIG [OVERRIDE...]    draw the rank grid (svg, png, dot, text)\n"
"  ckpt SAVED LOADED [OVERRIDE...]  can a checkpoint reshard between them\n"
"  run CONFIG [OVERRIDE...]       plan, then mpirun -np W gtplan-run on it\n"
"\n"
"CONFIG is a NeMo-RL YAML file (defaults: inheritance and ${...}\n"
"interpolation included). OVERRIDE is Hydra's: key=value, +key=value (add),\n"
"~key (delete), e.g. policy.megatron_cfg.tensor_model_parallel_size=4.\n"
"\n"
"options:\n"
"  --format text|json|sarif   how findings are printed (default text)\n"
"  --strict                   warnings count as findings (exit 1)\n"
"  --color auto|always|never  colour text diagnostics (default auto)\n"
"  -o FILE                    plan: write the plan to FILE ('-': stdout)\n"
"  --summary                  plan: print a short summary, not JSON\n"
"  --rank N                   explain: the rank to explain\n"
"  --call NAME                sim: simulate only this call\n"
"  --list-calls               sim: print the call table and exit\n"
"  --trace FILE               sim: write a Chrome trace of every call\n"
"  --predict-record PREFIX    sim: write gtplan-run's predicted --record of\n"
"                             the train call to PREFIX.<rank>\n"
"  --steps N                  sim --predict-record: N train steps (default 1)\n"
"  --no-sim                   plan: leave the calls out (faster)\n"
"  --color, --groups, --layout, --format, --call, -o\n"
"                             render: see `gtplan help render`\n"
"  --dry-run, --force, --steps N, --oversubscribe, ...\n"
"                             run: see `gtplan help run`\n"
"  -h, --help                 this help; `gtplan help COMMAND` for one\n"
"  --version                  print the version\n"
"\n"
"exit status: 0 clean, 1 findings, 2 usage or I/O error.\n";

static const struct {
	const char *name;
	const char *help;
} command_help[] = {
	{ "ckpt",
	  "usage: gtplan ckpt SAVED LOADED [OVERRIDE...] [--format text|json|sarif]\n"
	  "\n"
	  "Plans both configs (overrides apply to both; same model required)\n"
	  "and checks that a checkpoint saved under SAVED's layout loads under\n"
	  "LOADED's: each loading rank's logical reads are covered exactly once\n"
	  "by the saved main-replica pieces (padding excluded), for every\n"
	  "tensor kind: layer weights and norms, experts (EP, ETP, EG), the\n"
	  "vocab-parallel embedding and output layer, the final norm. Prints,\n"
	  "per kind, the saved and loaded pieces and the most saved pieces one\n"
	  "loading rank reads, the optimizer format the change needs\n"
	  "(gtplan.stack.optimizer_ckpt_format) and whether the stack can write\n"
	  "it, then 'reshardable' or the findings (GT730-GT735). Exit 0\n"
	  "reshardable, 1 findings, 2 usage.\n" },
	{ "run", launch_help },
	{ "lint",
	  "usage: gtplan lint CONFIG... [OVERRIDE...] [--format text|json|sarif]\n"
	  "                  [--strict] [--color auto|always|never]\n"
	  "\n"
	  "Loads each config as NeMo-RL would, checks it against\n"
	  "schemas/config.schema.json and the planning rules (GTP size, world\n"
	  "size, expert grid, batch split, rank order, resources), simulates\n"
	  "every driver call (see `gtplan help sim`), and prints\n"
	  "every finding with its file:line:col, a source excerpt and a hint.\n"
	  "Overrides apply to every config. Exit 1 when an error was found\n"
	  "(or a warning, with --strict).\n" },
	{ "plan",
	  "usage: gtplan plan CONFIG [OVERRIDE...] [-o FILE] [--summary] [--no-sim]\n"
	  "\n"
	  "Writes the plan JSON (format gtplan-plan/1, schemas/plan.schema.json):\n"
	  "sizes, resources, every rank's node and coordinates, every process\n"
	  "group in Megatron's enumeration order, the simulator's result for\n"
	  "every call (--no-sim leaves them out), and the diagnostics. Same\n"
	  "input, byte-identical output. --summary prints a short human summary\n"
	  "instead. Diagnostics also go to stderr. Exit 1 when the config has\n"
	  "errors (the plan is still written).\n" },
	{ "sim",
	  "usage: gtplan sim CONFIG [OVERRIDE...] [--call NAME] [--list-calls]\n"
	  "                 [--trace FILE] [--format text|json|sarif]\n"
	  "                 [--predict-record PREFIX [--steps N]]\n"
	  "\n"
	  "Dry-runs the driver's dispatch of every call type (train,\n"
	  "get_logprobs, refit, save_checkpoint, ...) on the plan's ranks, checks\n"
	  "where each call's data lands (every lane its own shard, a lane's\n"
	  "TP/CP/PP peers the same one), then plays the collectives each called\n"
	  "rank issues with NCCL semantics. Each call comes out ok, hang,\n"
	  "mismatch or error; every finding names the collective, who arrived,\n"
	  "who is missing and why. Exit 1 when a call is not ok. The call table\n"
	  "is calls.md's; gtplan.calls in the config adds or overrides rows.\n"
	  "\n"
	  "Then it estimates each call's time (alpha-beta collectives over\n"
	  "NVLink inside a node, the network across; compute at a fraction of\n"
	  "the peak; GTP gathers hidden behind the previous layer's compute)\n"
	  "and what one GPU holds while training, per pipeline stage (GT530,\n"
	  "GT532), and warns about TP/GTP groups that span nodes (GT531);\n"
	  "gtplan.interconnect, gtplan.hardware and gtplan.gpu_memory_gb set the\n"
	  "hardware. --trace FILE writes the simulated timelines as a Chrome\n"
	  "trace (chrome://tracing, ui.perfetto.dev): one process per call, one\n"
	  "track per rank, or per pipeline stage with the ranks it stands for.\n"
	  "\n"
	  "When the config names no model (no policy.model_name, no\n"
	  "gtplan.model), the model is gtplan-run's (gtplan.runtime): train and\n"
	  "the forward-only calls play exactly the collectives gtplan-run\n"
	  "issues. --predict-record PREFIX then writes, for every rank r,\n"
	  "PREFIX.r: the train call's collectives as gtplan-run --record writes\n"
	  "them (every key predicted; --steps N steps, default 1; a rank the\n"
	  "driver never calls gets an empty file, a rank left blocked stops at\n"
	  "the collective it waits in). tests/runtime_predict.py compares them\n"
	  "with a run. Refused (exit 2) when the config names a model, the\n"
	  "runtime cannot run the layout (PP > 1, EP > 1, sizes it cannot\n"
	  "split, a batch it refuses) or the world has more than 4096 ranks.\n" },
	{ "explain",
	  "usage: gtplan explain CODE\n"
	  "       gtplan explain CONFIG [OVERRIDE...] --rank N\n"
	  "       gtplan explain --list\n"
	  "       gtplan explain preset NAME\n"
	  "\n"
	  "With a code (GT303), prints what the rule checks and why. With a\n"
	  "config and a rank, prints that rank's node, local GPU, coordinates\n"
	  "(t, c, g, d, p), lane and every process group it belongs to. With\n"
	  "preset NAME, lists what that gtplan.stack preset sets and why.\n" },
	{ "config",
	  "usage: gtplan config CONFIG [OVERRIDE...]\n"
	  "\n"
	  "Prints the config as NeMo-RL would see it: defaults: merged,\n"
	  "overrides applied and interpolations resolved, as JSON in document\n"
	  "order. Findings go to stderr.\n" },
	{ "render",
	  "usage: gtplan render CONFIG [OVERRIDE...] [-o FILE] [--format FMT]\n"
	  "                    [--color KEY] [--groups KINDS] [--call NAME]\n"
	  "                    [--layout 4d|5d]\n"
	  "\n"
	  "Draws the training GPUs the plan describes: one box per GPU (rank,\n"
	  "node and local GPU, Megatron's (t, c, g, d, p) and the lane), in a\n"
	  "cluster per node and per NVLink segment (cluster.segment_size), in\n"
	  "rank order. Above 256 ranks, one box per node with a summary.\n"
	  "\n"
	  "  -o FILE         write to FILE; its extension picks the format\n"
	  "  --format FMT    svg, png, dot (the graph, before layout) or text\n"
	  "                  (a grid for the terminal; the default on stdout)\n"
	  "  --color KEY     colour boxes by lane (default), gtp, tp, cp, dp,\n"
	  "                  pp or node, or by call (the call's view)\n"
	  "  --groups KINDS  link the members of each group of these kinds,\n"
	  "                  e.g. gtp,tp (any of `gtplan explain --rank`'s)\n"
	  "  --call NAME     lay the simulated call over the grid: who is\n"
	  "                  called with which shard, who never is, who is\n"
	  "                  stuck and in which collective (colour: call)\n"
	  "  --layout 4d|5d  the driver layout (gtplan.driver_layout); 5d\n"
	  "                  is the GTP PR's, e.g. --layout 5d --call\n"
	  "                  get_logprobs shows its hang\n"
	  "\n"
	  "Graphviz's libraries lay out and draw the picture; nothing is run.\n"
	  "Same input, byte-identical DOT and text. Findings go to stderr;\n"
	  "exit 1 when the config has errors (the picture is still drawn when\n"
	  "there is a rank grid).\n" },
};

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "gtplan: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'gtplan --help'.\n");
	return EXIT_USAGE;
}

static int is_override(const char *a)
{
	return a[0] == '~' || a[0] == '+' || strchr(a, '=') != NULL;
}

/* render's own --format, --color and --layout values, and --groups.
 * Returns 1 when it took argv[*i] (and its value), 0 when argv[*i] is none
 * of them, -1 on a usage error (printed). */
static int render_option(int argc, char **argv, int *i, struct opts *o)
{
	static const char *const names[] = {
		"--format", "--color", "--groups", "--layout",
	};
	const char *a = argv[*i], *v;

	for (size_t k = 0; k < sizeof(names) / sizeof(*names); k++) {
		size_t n = strlen(names[k]);

		if (strncmp(a, names[k], n) != 0 || (a[n] && a[n] != '='))
			continue;
		if (a[n] == '=')
			v = a + n + 1;
		else if (*i + 1 < argc)
			v = argv[++*i];
		else {
			usage_error("%s needs a value", a);
			return -1;
		}
		if (k == 0)
			o->render_format = v;
		else if (k == 1)
			o->render_color = v;
		else if (k == 2)
			o->render_groups = v;
		else if (strcmp(v, "4d") && strcmp(v, "5d")) {
			usage_error("unknown --layout '%s' (use 4d or 5d)", v);
			return -1;
		} else {
			snprintf(o->layout_override, sizeof(o->layout_override),
				 "++gtplan.driver_layout=%s", v);
			o->overrides[o->n_overrides++] = o->layout_override;
		}
		return 1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	o->configs = calloc((size_t)argc, sizeof(*o->configs));
	o->overrides = calloc((size_t)argc, sizeof(*o->overrides));
	o->color = -1;
	if (!o->configs || !o->overrides)
		return usage_error("%s", "out of memory");
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		int ro = strcmp(o->cmd, "render") == 0 ?
			 render_option(argc, argv, &i, o) : 0;
		char err[128];

		if (!strcmp(o->cmd, "run") && (ro = launch_parse_option(
				&o->run, argc, argv, &i, err, sizeof(err))) < 0)
			return usage_error("%s", err);
		if (ro < 0)
			return EXIT_USAGE;
		if (ro > 0)
			continue;
		if (strcmp(a, "--format") == 0 || strncmp(a, "--format=", 9) == 0) {
			const char *v = a[8] == '=' ? a + 9 :
					(i + 1 < argc ? argv[++i] : "");
			if (strcmp(v, "text") == 0)
				o->format = FMT_TEXT;
			else if (strcmp(v, "json") == 0)
				o->format = FMT_JSON;
			else if (strcmp(v, "sarif") == 0)
				o->format = FMT_SARIF;
			else
				return usage_error("unknown format '%s' (use "
						   "text, json or sarif)", v);
		} else if (strcmp(a, "--strict") == 0) {
			o->strict = 1;
		} else if (strcmp(a, "--color") == 0 ||
			   strncmp(a, "--color=", 8) == 0) {
			const char *v = a[7] == '=' ? a + 8 :
					(i + 1 < argc ? argv[++i] : "");
			if (strcmp(v, "auto") == 0)
				o->color = -1;
			else if (strcmp(v, "always") == 0)
				o->color = 1;
			else if (strcmp(v, "never") == 0)
				o->color = 0;
			else
				return usage_error("unknown --color value '%s'",
						   v);
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (i + 1 >= argc)
				return usage_error("%s needs a file name", a);
			o->out = argv[++i];
		} else if (strcmp(a, "--summary") == 0) {
			o->summary = 1;
		} else if (strcmp(a, "--call") == 0) {
			if (i + 1 >= argc)
				return usage_error("%s needs a call name", a);
			o->call = argv[++i];
		} else if (strcmp(a, "--trace") == 0) {
			if (i + 1 >= argc)
				return usage_error("%s needs a file name", a);
			o->trace = argv[++i];
		} else if (strcmp(a, "--predict-record") == 0) {
			if (i + 1 >= argc)
				return usage_error("%s needs a file prefix", a);
			o->predict = argv[++i];
		} else if (strcmp(a, "--steps") == 0) {
			char *end;

			if (i + 1 >= argc)
				return usage_error("%s needs a number", a);
			errno = 0;
			o->steps = strtoll(argv[++i], &end, 10);
			if (errno || *end || o->steps < 1)
				return usage_error("--steps needs a number of "
						   "steps >= 1, not '%s'",
						   argv[i]);
		} else if (strcmp(a, "--list-calls") == 0) {
			o->list_calls = 1;
		} else if (strcmp(a, "--no-sim") == 0) {
			o->no_sim = 1;
		} else if (strcmp(a, "--rank") == 0) {
			char *end;

			if (i + 1 >= argc)
				return usage_error("%s needs a number", a);
			errno = 0;
			o->rank = strtoll(argv[++i], &end, 10);
			if (errno || *end || o->rank < 0)
				return usage_error("--rank needs a rank number, "
						   "not '%s'", argv[i]);
			o->have_rank = 1;
		} else if (strcmp(a, "--list") == 0 && strcmp(o->cmd, "explain") == 0) {
			o->summary = 1; /* explain --list */
		} else if (a[0] == '-' && a[1] == '-' && strchr(a, '=') == NULL) {
			return usage_error("unknown option '%s'", a);
		} else if (a[0] == '-' && a[1] && a[1] != '-') {
			return usage_error("unknown option '%s'", a);
		} else if (is_override(a)) {
			o->overrides[o->n_overrides++] = argv[i];
		} else {
			o->configs[o->n_configs++] = a;
		}
	}
	if ((o->predict || o->steps) && strcmp(o->cmd, "sim") != 0)
		return usage_error("%s goes with sim only", o->predict ?
				   "--predict-record" : "--steps");
	return 0;
}

/* Everything one config needs on its way through the pipeline. */
struct job {
	struct cfg_node *root;
	struct plan plan;
	struct sim_report sim;
	struct plan_call *calls;
	struct plan_memory mem;
	struct plan_memory_stage *mem_stages;
};

static void job_init(struct job *j)
{
	j->root = NULL;
	plan_init(&j->plan);
	sim_report_init(&j->sim);
	j->calls = NULL;
	j->mem_stages = NULL;
}

static void job_release(struct job *j)
{
	plan_release(&j->plan);
	sim_report_release(&j->sim);
	free(j->calls);
	free(j->mem_stages);
	cfg_free(j->root);
	j->root = NULL;
}

enum stage { UPTO_CONFIG, UPTO_PLAN, UPTO_SIM };

/* The train call's memory estimate, as plain numbers for the plan. */
static int job_fill_memory(struct job *j)
{
	const struct cost_memory *m = &j->sim.mem;

	if (!j->sim.ran)
		return 0;
	j->mem.status = cost_mem_status_name(m->status);
	j->mem.skipped = m->status == MEM_SKIPPED ? m->skipped : NULL;
	j->mem.capacity = (long long)m->capacity;
	if (m->n_stages) {
		j->mem_stages = calloc(m->n_stages, sizeof(*j->mem_stages));
		if (!j->mem_stages)
			return -1;
	}
	for (size_t i = 0; i < m->n_stages; i++) {
		const struct cost_mem_stage *s = &m->stages[i];
		struct plan_memory_stage *d = &j->mem_stages[i];

		d->stage = s->stage;
		d->layers = s->layers;
		d->in_flight = s->in_flight;
		d->params = s->params;
		d->weights = (long long)s->item[MEM_WEIGHTS];
		d->gathered_weights = (long long)s->item[MEM_GATHERED];
		d->gradients = (long long)s->item[MEM_GRADS];
		d->optimizer = (long long)s->item[MEM_OPTIMIZER];
		d->activations = (long long)s->item[MEM_ACTIVATIONS];
		d->logits = (long long)s->item[MEM_LOGITS];
		d->total = (long long)s->total;
		d->optimistic = (long long)s->optimistic;
	}
	j->mem.stages = j->mem_stages;
	j->mem.n_stages = m->n_stages;
	j->plan.memory = &j->mem;
	return 0;
}

/* Hands the simulator's results to the plan, for its JSON. */
static int job_fill_calls(struct job *j)
{
	const struct sim_report *r = &j->sim;

	if (job_fill_memory(j))
		return -1;
	if (!r->n_res)
		return 0;
	j->calls = calloc(r->n_res, sizeof(*j->calls));
	if (!j->calls)
		return -1;
	for (size_t i = 0; i < r->n_res; i++) {
		const struct sim_call_result *x = &r->res[i];
		struct plan_call *c = &j->calls[i];

		c->name = x->call->name;
		c->dispatch = calls_dispatch_name(x->call->dispatch);
		c->program = calls_program_name(x->call->program);
		c->status = sim_status_name(x->status);
		c->invoked = x->invoked;
		c->with_data = x->with_data;
		c->returned = x->returned;
		c->shards = x->shards;
		c->collectives = x->n_ops;
		c->has_called_when = x->called_when_ok;
		c->called_when = x->called_when;
		c->first_seq = x->first_diag;
		c->n_seq = x->n_diags;
		c->has_estimate = r->est && r->est[i].valid;
		c->estimate_ms = c->has_estimate ? r->est[i].total_us / 1e3 : 0;
	}
	j->plan.calls = j->calls;
	j->plan.n_calls = r->n_res;
	j->plan.has_checkpoint = r->ckpt.valid;
	j->plan.ckpt_keys = r->ckpt.keys;
	j->plan.ckpt_shards = r->ckpt.shards;
	j->plan.ckpt_writers = r->ckpt.writers;
	j->plan.ckpt_max_rank_bytes = r->ckpt.max_rank_bytes;
	j->plan.ckpt_opt_format = r->ckpt.opt_format;
	j->plan.ckpt_opt_assumed = !r->ckpt.opt_format_set;
	j->plan.ckpt_opt_keys = r->ckpt.opt_keys;
	j->plan.ckpt_opt_shards = r->ckpt.opt_shards;
	j->plan.ckpt_opt_max_rank_bytes = r->ckpt.max_rank_opt_bytes;
	j->plan.stack_preset = r->stack.preset;
	j->plan.stack_refit_gather = stack_gather_name(r->stack.refit_gather);
	return 0;
}

/* The pipeline: load, override, resolve, schema, then (stage) the plan and
 * the simulation of every call (or of `only`). Returns 0 when it got as far
 * as asked (findings may exist), 1 when the config could not get there,
 * 2 on an I/O problem with the config file itself or an unknown call. */
static int job_run(struct job *j, const char *path, const struct opts *o,
		   enum stage upto, const char *only, struct src_set *srcs,
		   struct diag_list *diags)
{
	size_t before = diags->n;

	if (cfg_load(path, srcs, diags, &j->root)) {
		for (size_t i = before; i < diags->n; i++)
			if (diags->v[i].rule &&
			    strcmp(diags->v[i].rule->code, "GT104") == 0 &&
			    diags->v[i].loc.src < 0)
				return 2;
		return 1;
	}
	if (o->n_overrides &&
	    cfg_override(j->root, o->n_overrides, o->overrides, srcs, diags))
		return 1;
	if (cfg_resolve(j->root, srcs, diags))
		return 1;
	if (schema_check_config(j->root, diags) < 0)
		return 1;
	if (upto == UPTO_CONFIG)
		return 0;
	if (plan_build(&j->plan, j->root, path, diags))
		return 1;
	if (upto == UPTO_PLAN)
		return 0;
	/* Seq numbers are positions in the list until it is sorted. */
	switch (sim_run(&j->plan, j->root, only, &j->sim, diags)) {
	case 0:
		break;
	case -2:
		fprintf(stderr, "gtplan: no call '%s' in the call table\n"
			"hint: `gtplan sim CONFIG --list-calls` lists them\n",
			only);
		return 2;
	default:
		fprintf(stderr, "gtplan: out of memory while simulating\n");
		return 2;
	}
	return job_fill_calls(j) ? 2 : 0;
}

static int use_color(const struct opts *o)
{
	if (o->color >= 0)
		return o->color;
	return isatty(STDERR_FILENO) && !getenv("NO_COLOR");
}

/* Prints findings in the chosen format; returns the exit code they mean.
 * Only lint says "no findings" in text: other commands print data. */
static int report(const struct opts *o, struct diag_list *diags, FILE *f)
{
	diag_sort(diags);
	if (o->format == FMT_TEXT && !diags->n && !diags->n_dropped &&
	    strcmp(o->cmd, "lint") != 0)
		;
	else if (o->format == FMT_JSON)
		diag_print_json(f, diags);
	else if (o->format == FMT_SARIF)
		diag_print_sarif(f, diags);
	else
		diag_print_text(f, diags, use_color(o));
	if (diag_count(diags, DIAG_ERROR) ||
	    (o->strict && diag_count(diags, DIAG_WARNING)))
		return EXIT_FINDINGS;
	return EXIT_CLEAN;
}

static int cmd_lint(const struct opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	int io = 0, rc;

	if (!o->n_configs)
		return usage_error("%s", "lint needs at least one CONFIG");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	for (size_t i = 0; i < o->n_configs; i++) {
		struct job j;

		job_init(&j);
		if (job_run(&j, o->configs[i], o, UPTO_SIM, NULL, &srcs,
			    &diags) == 2)
			io = 1;
		job_release(&j);
	}
	/* Machine formats go to stdout (they are the data); text to stderr. */
	rc = report(o, &diags, o->format == FMT_TEXT ? stderr : stdout);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return io ? EXIT_USAGE : rc;
}

static int cmd_plan(const struct opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	const struct plan *p = &j.plan;
	FILE *out = stdout;
	int rc, lrc;

	if (o->n_configs != 1)
		return usage_error("%s", "plan needs exactly one CONFIG");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j);
	lrc = job_run(&j, o->configs[0], o, o->no_sim ? UPTO_PLAN : UPTO_SIM,
		      NULL, &srcs, &diags);
	if (lrc == 2) {
		report(o, &diags, stderr);
		rc = EXIT_USAGE;
		goto out;
	}
	diag_sort(&diags);
	if (o->out && strcmp(o->out, "-") != 0) {
		out = fopen(o->out, "w");
		if (!out) {
			fprintf(stderr, "gtplan: cannot write '%s': %s\n", o->out,
				strerror(errno));
			rc = EXIT_USAGE;
			goto out;
		}
	}
	rc = report(o, &diags, stderr);
	if (lrc == 0 && o->summary)
		plan_print_summary(out, p);
	else if (lrc == 0 && plan_write_json(out, p, &diags)) {
		fprintf(stderr, "gtplan: error writing the plan: %s\n",
			strerror(errno));
		rc = EXIT_USAGE;
	}
	if (out != stdout && fclose(out)) {
		fprintf(stderr, "gtplan: error writing '%s': %s\n", o->out,
			strerror(errno));
		rc = EXIT_USAGE;
	}
	if (lrc == 1)
		rc = EXIT_FINDINGS;
out:
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

static int explain_code(const char *code)
{
	const struct diag_rule *r = diag_rule_find(code);

	if (!r) {
		fprintf(stderr, "gtplan: no diagnostic code '%s'\n"
			"hint: `gtplan explain --list` lists every code\n", code);
		return EXIT_USAGE;
	}
	printf("%s %s (%s)\n\n%s\n\n%s\n", r->code, r->name,
	       r->severity == DIAG_ERROR ? "error" :
	       r->severity == DIAG_WARNING ? "warning" : "note",
	       r->summary, r->explanation);
	return EXIT_CLEAN;
}

static void print_group(const struct lay_grid *g, const struct lay_group_kind *k,
			long long rank)
{
	long long idx, pos, n = lay_group_size(g, k->axes);

	lay_group_of(g, k->axes, rank, &idx, &pos);
	printf("  %-16s #%-6lld rank %lld of %lld: [", k->name, idx, pos, n);
	for (long long i = 0; i < n; i++) {
		if (i == 12 && n > 16) {
			printf(", ... %lld more", n - 13);
			i = n - 1;
		}
		printf("%s%lld", i ? ", " : "",
		       lay_group_member(g, k->axes, idx, i));
	}
	printf("]\n");
}

static int explain_rank(const struct opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	const struct plan *pp = &j.plan;
	int rc, lrc;

	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j);
	lrc = job_run(&j, o->configs[0], o, UPTO_PLAN, NULL, &srcs, &diags);
	rc = report(o, &diags, stderr);
	if (lrc || !pp->grid_ok) {
		fprintf(stderr, "gtplan: no rank grid for '%s'\n", o->configs[0]);
		rc = lrc == 2 ? EXIT_USAGE : EXIT_FINDINGS;
		goto out;
	}
	if (o->rank >= pp->world) {
		fprintf(stderr, "gtplan: rank %lld does not exist: the world has "
			"%lld ranks (0-%lld)\n", o->rank, pp->world, pp->world - 1);
		rc = EXIT_USAGE;
		goto out;
	}
	long long c[LAY_NAXES], node, local, idx, lane;
	lay_coords(&pp->dense, o->rank, c);
	plan_rank_place(pp, o->rank, &node, &local);
	lay_group_of(&pp->dense, (1u << LAY_GTP) | (1u << LAY_DP), o->rank, &idx,
		     &lane);
	printf("rank %lld of %lld (%s)\n", o->rank, pp->world, pp->config_name);
	printf("  node %lld, local GPU %lld\n", node, local);
	printf("  tp %lld, cp %lld, gtp %lld, dp_replicate %lld, pp %lld\n",
	       c[LAY_TP], c[LAY_CP], c[LAY_GTP], c[LAY_DP], c[LAY_PP]);
	printf("  lane %lld of %lld (data_parallel index on the driver)\n", lane,
	       pp->lanes);
	if (pp->expert_grid_ok) {
		long long e[LAY_NAXES];

		lay_coords(&pp->expert, o->rank, e);
		printf("  expert grid: etp %lld, ep %lld, egtp %lld, edp %lld\n",
		       e[LAY_TP], e[LAY_EP], e[LAY_GTP], e[LAY_DP]);
	}
	printf("groups (kind, index, rank in group, members):\n");
	for (size_t i = 0; i < lay_group_kind_count(); i++) {
		const struct lay_group_kind *k = lay_group_kind_at(i);

		if (k->expert && !pp->expert_grid_ok)
			continue;
		print_group(k->expert ? &pp->expert : &pp->dense, k, o->rank);
	}
out:
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

static int cmd_explain(const struct opts *o)
{
	if (o->summary && !o->n_configs) { /* --list */
		for (size_t i = 0; i < diag_rule_count(); i++) {
			const struct diag_rule *r = diag_rule_at(i);

			printf("%s  %-30s %s\n", r->code, r->name, r->summary);
		}
		return EXIT_CLEAN;
	}
	if (o->have_rank) {
		if (o->n_configs != 1)
			return usage_error("%s", "explain --rank needs one CONFIG");
		return explain_rank(o);
	}
	if (o->n_configs == 2 && strcmp(o->configs[0], "preset") == 0) {
		if (stack_explain_preset(stdout, o->configs[1]) == 0)
			return EXIT_CLEAN;
		for (size_t i = 0; i < stack_preset_count(); i++)
			fprintf(stderr, "%s%s", i ? ", " : "gtplan: presets: ",
				stack_preset_name(i));
		fprintf(stderr, "\n");
		return usage_error("unknown stack preset '%s'", o->configs[1]);
	}
	if (o->n_configs != 1 || o->n_overrides)
		return usage_error("%s", "explain needs a CODE, or a CONFIG "
				   "with --rank N");
	return explain_code(o->configs[0]);
}

static int cmd_config(const struct opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	int lrc, rc;

	if (o->n_configs != 1)
		return usage_error("%s", "config needs exactly one CONFIG");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j);
	lrc = job_run(&j, o->configs[0], o, UPTO_CONFIG, NULL, &srcs, &diags);
	rc = report(o, &diags, stderr);
	if (j.root && lrc != 2)
		cfg_write_json(stdout, j.root);
	if (lrc)
		rc = lrc == 2 ? EXIT_USAGE : EXIT_FINDINGS;
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

/* sim --trace FILE ('-': stdout). Returns 0, or -1 after saying why. */
static int write_trace(const char *path, struct job *j)
{
	FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
	int rc;

	if (!f) {
		fprintf(stderr, "gtplan: cannot write '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	rc = trace_write(f, &j->plan, &j->sim, NULL);
	if (f != stdout && fclose(f))
		rc = -1;
	if (rc)
		fprintf(stderr, "gtplan: error writing the trace '%s'%s%s\n",
			path, errno ? ": " : "", errno ? strerror(errno) : "");
	return rc;
}

static int cmd_sim(const struct opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	int rc, lrc;

	if (o->n_configs != 1)
		return usage_error("%s", "sim needs exactly one CONFIG");
	if (o->steps && !o->predict)
		return usage_error("%s", "--steps goes with --predict-record");
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j);
	if (o->list_calls) {
		/* the table as this config makes it (gtplan.calls included) */
		lrc = job_run(&j, o->configs[0], o, UPTO_PLAN, NULL, &srcs,
			      &diags);
		struct call_def *v = NULL;
		size_t n = 0;
		int five = j.plan.driver_layout &&
			   strcmp(j.plan.driver_layout, "5d") == 0;

		rc = report(o, &diags, stderr);
		if (lrc != 2 && j.root &&
		    calls_table(j.root, five, &v, &n, &diags) == 0)
			calls_print(stdout, v, n, five);
		free(v);
		rc = lrc == 2 ? EXIT_USAGE : rc;
		goto out;
	}
	lrc = job_run(&j, o->configs[0], o, UPTO_SIM, o->call, &srcs, &diags);
	if (lrc == 0 && o->predict) {
		char err[512];
		int prc = pred_write_records(&j.plan, j.root, &j.sim,
					     o->predict, o->steps ? o->steps : 1,
					     err, sizeof(err));

		if (prc) {
			fprintf(stderr, "gtplan: --predict-record: %s\n", err);
			if (prc == -2)
				fprintf(stderr, "Try 'gtplan help sim'.\n");
			rc = EXIT_USAGE;
			goto out;
		}
	}
	/* the trace on stdout is the data then */
	if (lrc == 0 && o->format == FMT_TEXT &&
	    !(o->trace && strcmp(o->trace, "-") == 0))
		sim_print_text(stdout, &j.plan, &j.sim);
	rc = report(o, &diags, o->format == FMT_TEXT ? stderr : stdout);
	if (lrc)
		rc = lrc == 2 ? EXIT_USAGE : EXIT_FINDINGS;
	else if (sim_not_ok(&j.sim) || !j.sim.ran)
		rc = EXIT_FINDINGS;
	if (lrc == 0 && o->trace && write_trace(o->trace, &j))
		rc = EXIT_USAGE;
out:
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

/* gtplan render: the plan, and the simulator's view of one call, as a
 * picture (render.h draws it). */
static int cmd_render(const struct opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	struct render_opts ro;
	char err[512];
	const char *path = o->out && strcmp(o->out, "-") != 0 ? o->out : NULL;
	FILE *out = stdout;
	int rc, lrc;

	if (o->n_configs != 1)
		return usage_error("%s", "render needs exactly one CONFIG");
	render_opts_init(&ro);
	ro.call = o->call;
	if (o->render_format ? render_format_parse(o->render_format, &ro.format,
						   err, sizeof(err)) :
	    path ? render_format_from_path(path, &ro.format, err,
					   sizeof(err)) : 0)
		return usage_error("%s", err);
	if (o->render_color && render_color_parse(o->render_color, &ro.color,
						  err, sizeof(err)))
		return usage_error("%s", err);
	if (o->render_groups && render_groups_parse(o->render_groups,
						    &ro.groups, err,
						    sizeof(err)))
		return usage_error("%s", err);
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j);
	lrc = job_run(&j, o->configs[0], o, UPTO_SIM, o->call, &srcs, &diags);
	rc = report(o, &diags, stderr);
	if (lrc == 2) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (lrc || !j.plan.grid_ok) {
		fprintf(stderr, "gtplan: no rank grid for '%s': nothing to "
			"draw\n", o->configs[0]);
		rc = EXIT_FINDINGS;
		goto out;
	}
	/* the simulator's program settings and NVLink domain (cost.h:
	 * cluster.segment_size nodes, gtplan.interconnect.nvlink_domain_size
	 * GPUs; one node unless set) */
	ro.prog = &j.sim.cost.o;
	ro.segment_size = j.sim.cost.s.domain;
	if (path && !(out = fopen(path, "wb"))) {
		fprintf(stderr, "gtplan: cannot write '%s': %s\n", path,
			strerror(errno));
		rc = EXIT_USAGE;
		goto out;
	}
	if (render_run(&ro, &j.plan, &j.sim, out, err, sizeof(err))) {
		fprintf(stderr, "gtplan: %s\n", err);
		rc = EXIT_USAGE;
	}
	if (path && fclose(out)) {
		fprintf(stderr, "gtplan: error writing '%s': %s\n", path,
			strerror(errno));
		rc = EXIT_USAGE;
	}
	if (path && rc == EXIT_USAGE)
		remove(path); /* no half-written picture */
out:
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

/* gtplan ckpt SAVED LOADED: the reshard report (sim/reshard.h). */
static int cmd_ckpt(const struct opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job js, jl;
	struct reshard_report r;
	int rc, ls, ll, err = 0;

	if (o->n_configs != 2)
		return usage_error("%s", "ckpt needs SAVED and LOADED configs");
	memset(&r, 0, sizeof(r));
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&js);
	job_init(&jl);
	ls = job_run(&js, o->configs[0], o, UPTO_PLAN, NULL, &srcs, &diags);
	ll = job_run(&jl, o->configs[1], o, UPTO_PLAN, NULL, &srcs, &diags);
	if (!ls && !ll && js.plan.grid_ok && jl.plan.grid_ok)
		err = reshard_check(&js.plan, js.root, &jl.plan, jl.root, &r,
				    &diags);
	rc = report(o, &diags, stderr);
	if (ls == 2 || ll == 2 || err) {
		if (err)
			fprintf(stderr, "gtplan: out of memory\n");
		rc = EXIT_USAGE;
	} else if (ls || ll || !js.plan.grid_ok || !jl.plan.grid_ok) {
		fprintf(stderr, "gtplan: no rank grid for '%s'\n",
			o->configs[ls || !js.plan.grid_ok ? 0 : 1]);
		rc = EXIT_FINDINGS;
	} else {
		reshard_print(stdout, &js.plan, &jl.plan, &r);
		if (!r.reshardable)
			rc = EXIT_FINDINGS;
	}
	job_release(&js);
	job_release(&jl);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

/* gtplan run's plan file, written by launch_plan. */
struct run_plan {
	const struct plan *plan;
	const struct diag_list *diags;
};

static int write_run_plan(FILE *f, void *arg)
{
	const struct run_plan *r = arg;

	return plan_write_json(f, r->plan, r->diags);
}

/* gtplan run: plans as `gtplan plan` does, then launches (launch.h). */
static int cmd_run(const struct opts *o)
{
	struct src_set srcs;
	struct diag_list diags;
	struct job j;
	struct run_plan rp = { &j.plan, &diags };
	struct launch_opts lo = o->run;
	size_t n_err;
	char err[1024];
	int rc, lrc;

	if (o->n_configs != 1)
		return usage_error("%s", "run needs exactly one CONFIG");
	if (o->out && !strcmp(o->out, "-"))
		return usage_error("%s", "run -o needs a file name");
	lo.plan_out = o->out;
	src_set_init(&srcs);
	diag_list_init(&diags, &srcs);
	job_init(&j);
	lrc = job_run(&j, o->configs[0], o, UPTO_SIM, NULL, &srcs, &diags);
	rc = report(o, &diags, stderr);
	n_err = diag_count(&diags, DIAG_ERROR);
	if (lrc == 2) {
		rc = EXIT_USAGE;
	} else if (lrc || !j.plan.grid_ok) {
		fprintf(stderr, "gtplan: no rank grid for '%s': nothing to "
			"run\n", o->configs[0]);
		rc = EXIT_FINDINGS;
	} else if (rc && !lo.force) {
		fprintf(stderr, "gtplan: not running '%s': the plan has %zu "
			"error%s%s; fix the config, or pass --force to run it "
			"anyway\n", o->configs[0], n_err, n_err == 1 ? "" : "s",
			n_err ? "" : " and warnings count (--strict)");
	} else if ((rc = launch_plan(&lo, j.plan.world, write_run_plan, &rp,
				     stdout, err, sizeof(err)))) {
		fprintf(stderr, "gtplan: %s\n", err);
	}
	job_release(&j);
	diag_list_release(&diags);
	src_set_release(&srcs);
	return rc;
}

static int cmd_help(const char *what)
{
	for (size_t i = 0; i < sizeof(command_help) / sizeof(*command_help); i++)
		if (what && strcmp(what, command_help[i].name) == 0) {
			fputs(command_help[i].help, stdout);
			return EXIT_CLEAN;
		}
	if (what)
		return usage_error("no command '%s'", what);
	fputs(usage_text, stdout);
	return EXIT_CLEAN;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	int rc;

	if (argc < 2)
		return usage_error("%s", "no command given");
	o.cmd = argv[1];
	if (!strcmp(o.cmd, "-h") || !strcmp(o.cmd, "--help") ||
	    !strcmp(o.cmd, "help"))
		return cmd_help(argc > 2 ? argv[2] : NULL);
	if (!strcmp(o.cmd, "--version")) {
		printf("gtplan %s\n", GTPLAN_VERSION);
		return EXIT_CLEAN;
	}
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return cmd_help(o.cmd);
	rc = parse_args(argc, argv, &o);
	if (rc == 0) {
		if (!strcmp(o.cmd, "lint"))
			rc = cmd_lint(&o);
		else if (!strcmp(o.cmd, "plan"))
			rc = cmd_plan(&o);
		else if (!strcmp(o.cmd, "explain"))
			rc = cmd_explain(&o);
		else if (!strcmp(o.cmd, "config"))
			rc = cmd_config(&o);
		else if (!strcmp(o.cmd, "sim"))
			rc = cmd_sim(&o);
		else if (!strcmp(o.cmd, "render"))
			rc = cmd_render(&o);
		else if (!strcmp(o.cmd, "ckpt"))
			rc = cmd_ckpt(&o);
		else if (!strcmp(o.cmd, "run"))
			rc = cmd_run(&o);
		else
			rc = usage_error("unknown command '%s'", o.cmd);
	}
	free(o.configs);
	free(o.overrides);
	launch_opts_release(&o.run);
	return rc;
}
