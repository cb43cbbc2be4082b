/*
 * cmd: gtplan's commands, one function each; main.c parses the command
 * line and calls one. Each takes the parsed options, prints its data to
 * stdout and its findings to stderr (or, for lint and sim's machine
 * formats, to stdout), and returns the exit code (cli.h's cli_exit).
 * Usage errors are said on stderr and returned as CLI_EXIT_USAGE; nothing
 * here exits.
 *
 *   cmd_plan.c     lint, plan, config
 *   cmd_sim.c      sim (--list-calls, --trace, --predict-record)
 *   cmd_explain.c  explain CODE | --list | preset NAME | CONFIG --rank N
 *   cmd_render.c   render
 *   cmd_ckpt.c     ckpt
 *   cmd_run.c      run
 *   cmd_completion.c  completion bash|zsh|fish
 *
 * Ownership: each command reads the options (cli.h: main owns them) and
 * frees all it allocates before it returns the exit code.
 */
#ifndef GTPLAN_CMD_H
#define GTPLAN_CMD_H

#include "cli.h"

int cmd_lint(const struct cli_opts *o);
int cmd_plan(const struct cli_opts *o);
int cmd_config(const struct cli_opts *o);
int cmd_sim(const struct cli_opts *o);
int cmd_explain(const struct cli_opts *o);
int cmd_render(const struct cli_opts *o);
int cmd_ckpt(const struct cli_opts *o);
int cmd_run(const struct cli_opts *o);
int cmd_completion(const struct cli_opts *o);

#endif
