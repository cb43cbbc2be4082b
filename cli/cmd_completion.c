/*
 * cmd_completion: `gtplan completion bash|zsh|fish` (cmd.h) prints a
 * completion script for the shell: commands, options and their values,
 * rule codes for --ignore and --select (from `gtplan explain --list` at
 * completion time, so they follow the binary), YAML files for configs.
 * `make install` installs the three where the shells look for them.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static const char bash_script[] =
"# bash completion for gtplan (gtplan completion bash)\n"
"_gtplan() {\n"
"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
"\tlocal cmds='lint plan sim explain config render ckpt run completion help'\n"
"\tlocal opts='--format --strict --color --ignore --select --min-severity\n"
"\t\t-q --quiet --config --no-config -o --output --summary --rank --call\n"
"\t\t--list-calls --trace --predict-record --steps --no-sim --groups --nodes\n"
"\t\t--layout --list --markdown --dry-run --force --oversubscribe\n"
"\t\t--allow-run-as-root --mpirun --gtplan-run --launcher --hosts\n"
"\t\t--hostfile --script --model-config --help'\n"
"\tCOMPREPLY=()\n"
"\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
"\t\tCOMPREPLY=($(compgen -W \"$cmds -V --version --help\" -- \"$cur\"))\n"
"\t\treturn\n"
"\tfi\n"
"\tcase $prev in\n"
"\t--format) COMPREPLY=($(compgen -W 'text json sarif github concise junit svg png dot' -- \"$cur\")); return ;;\n"
"\t--color) COMPREPLY=($(compgen -W 'auto always never lane gtp tp cp dp pp node call' -- \"$cur\")); return ;;\n"
"\t--min-severity) COMPREPLY=($(compgen -W 'note warning error' -- \"$cur\")); return ;;\n"
"\t--layout) COMPREPLY=($(compgen -W '4d 5d' -- \"$cur\")); return ;;\n"
"\t--launcher) COMPREPLY=($(compgen -W 'mpirun srun sbatch' -- \"$cur\")); return ;;\n"
"\t--ignore|--select) COMPREPLY=($(compgen -W \"$(gtplan explain --list 2>/dev/null | cut -d' ' -f1)\" -- \"$cur\")); return ;;\n"
"\t-o|--output|--trace|--config|--mpirun|--gtplan-run|--hostfile|--script|--model-config) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
"\tesac\n"
"\tif [ \"${COMP_WORDS[1]}\" = completion ]; then\n"
"\t\tCOMPREPLY=($(compgen -W 'bash zsh fish' -- \"$cur\"))\n"
"\telif [ \"${COMP_WORDS[1]}\" = help ]; then\n"
"\t\tCOMPREPLY=($(compgen -W \"$cmds\" -- \"$cur\"))\n"
"\telif [[ $cur == -* ]]; then\n"
"\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
"\telse\n"
"\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
"\tfi\n"
"}\n"
"complete -o filenames -F _gtplan gtplan\n";

static const char zsh_script[] =
"#compdef gtplan\n"
"# zsh completion for gtplan (gtplan completion zsh)\n"
"_gtplan() {\n"
"\tlocal -a cmds rules\n"
"\tcmds=(lint:'check configs' plan:'write the plan JSON'\n"
"\t\tsim:'dry-run every driver call' explain:'a rule, a rank or a preset'\n"
"\t\tconfig:'the resolved config as JSON' render:'draw the rank grid'\n"
"\t\tckpt:'can a checkpoint reshard' run:'plan, then launch gtplan-run'\n"
"\t\tcompletion:'print a completion script' help:'help on a command')\n"
"\tif (( CURRENT == 2 )); then\n"
"\t\t_describe command cmds\n"
"\t\treturn\n"
"\tfi\n"
"\trules=(${(f)\"$(gtplan explain --list 2>/dev/null | cut -d' ' -f1)\"})\n"
"\t_arguments -s \\\n"
"\t\t'--format[output format]:format:(text json sarif github concise junit svg png dot)' \\\n"
"\t\t'--strict[warnings count as findings]' \\\n"
"\t\t'--color[colour]:when:(auto always never lane gtp tp cp dp pp node call)' \\\n"
"\t\t'*--ignore[do not report these rules]:rule:($rules)' \\\n"
"\t\t'*--select[report only these rules]:rule:($rules)' \\\n"
"\t\t'--min-severity[lowest severity reported]:severity:(note warning error)' \\\n"
"\t\t'(-q --quiet)'{-q,--quiet}'[findings only, no summary]' \\\n"
"\t\t'--config[project file]:file:_files' \\\n"
"\t\t'--no-config[read no project file]' \\\n"
"\t\t'-o[output file]:file:_files' \\\n"
"\t\t'--launcher[how run starts the ranks]:launcher:(mpirun srun sbatch)' \\\n"
"\t\t'--dry-run[print the command, run nothing]' \\\n"
"\t\t'*:config:_files -g \"*.(yaml|yml)\"'\n"
"}\n"
"_gtplan \"$@\"\n";

static const char fish_script[] =
"# fish completion for gtplan (gtplan completion fish)\n"
"set -l cmds lint plan sim explain config render ckpt run completion help\n"
"complete -c gtplan -f\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a lint -d 'check configs'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a plan -d 'write the plan JSON'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a sim -d 'dry-run every driver call'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a explain -d 'a rule, a rank or a preset'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a config -d 'the resolved config as JSON'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a render -d 'draw the rank grid'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a ckpt -d 'can a checkpoint reshard'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a run -d 'plan, then launch gtplan-run'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a completion -d 'print a completion script'\n"
"complete -c gtplan -n \"not __fish_seen_subcommand_from $cmds\" -a help -d 'help on a command'\n"
"complete -c gtplan -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'\n"
"complete -c gtplan -l format -x -a 'text json sarif github concise junit svg png dot'\n"
"complete -c gtplan -l strict -d 'warnings count as findings'\n"
"complete -c gtplan -l color -x -a 'auto always never lane gtp tp cp dp pp node call'\n"
"complete -c gtplan -l ignore -x -a '(gtplan explain --list 2>/dev/null | string split -f1 \" \")'\n"
"complete -c gtplan -l select -x -a '(gtplan explain --list 2>/dev/null | string split -f1 \" \")'\n"
"complete -c gtplan -l min-severity -x -a 'note warning error'\n"
"complete -c gtplan -s q -l quiet -d 'findings only, no summary'\n"
"complete -c gtplan -l config -r -F -d 'project file'\n"
"complete -c gtplan -l no-config -d 'read no project file'\n"
"complete -c gtplan -l launcher -x -a 'mpirun srun sbatch'\n"
"complete -c gtplan -l dry-run -d 'print the command, run nothing'\n"
"complete -c gtplan -s o -r -F\n"
"complete -c gtplan -n \"__fish_seen_subcommand_from lint plan sim config render ckpt run\" -a '(__fish_complete_suffix .yaml)'\n";

int cmd_completion(const struct cli_opts *o)
{
	static const struct {
		const char *shell, *script;
	} scripts[] = {
		{ "bash", bash_script },
		{ "zsh", zsh_script },
		{ "fish", fish_script },
	};

	for (size_t i = 0; o->n_configs == 1 &&
			   i < sizeof(scripts) / sizeof(*scripts); i++)
		if (!strcmp(o->configs[0], scripts[i].shell)) {
			fputs(scripts[i].script, stdout);
			return ferror(stdout) ? CLI_EXIT_USAGE : CLI_EXIT_CLEAN;
		}
	return cli_usage_error("%s", "completion needs one shell: bash, zsh "
			       "or fish");
}
