/*
 * cli_help: the help texts (cli_help.h).
 */
#include <stdio.h>
#include <string.h>

#include "cli_help.h"
#include "launch.h"

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
"  -o FILE                    plan, config: write to FILE ('-': stdout),\n"
"                             through a temporary file renamed into place\n"
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
"exit status: 0 clean, 1 findings, 2 usage or I/O error (a failed write\n"
"to stdout or to FILE included).\n";

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

int cli_help_print(FILE *f, const char *command)
{
	if (!command) {
		fputs(usage_text, f);
		return 0;
	}
	for (size_t i = 0; i < sizeof(command_help) / sizeof(*command_help); i++)
		if (strcmp(command, command_help[i].name) == 0) {
			fputs(command_help[i].help, f);
			return 0;
		}
	return -1;
}
