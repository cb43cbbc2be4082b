#!/usr/bin/env bash
# make install / uninstall with DESTDIR and PREFIX, and what they install:
# the binary, the man page (docs/gtplan.1, which `man` renders), the
# completion scripts (`gtplan completion SHELL`: bash completes commands
# and rule codes; zsh and fish parse them when installed) and the schemas.
# Prints "RESULT passed failed skipped".
set -u
cd "$(dirname "$0")/.."
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

d=$tmp/root
if make -s --no-print-directory install DESTDIR="$d" PREFIX=/opt/gt >"$tmp/out" 2>&1; then ok; else bad "make install"; cat "$tmp/out"; fi
for f in bin/gtplan share/man/man1/gtplan.1 share/bash-completion/completions/gtplan \
	share/zsh/site-functions/_gtplan share/fish/vendor_completions.d/gtplan.fish \
	share/gtplan/schemas/config.schema.json share/gtplan/schemas/diagnostics.schema.json; do
	[ -s "$d/opt/gt/$f" ] && ok || bad "not installed: $f"
done
if [ -x build/gtplan-run ]; then [ -x "$d/opt/gt/bin/gtplan-run" ] && ok || bad "gtplan-run not installed"; fi
"$d/opt/gt/bin/gtplan" -V | grep -q '^gtplan [0-9]' && ok || bad "installed gtplan -V"
if command -v man >/dev/null; then
	MANWIDTH=80 man -l "$d/opt/gt/share/man/man1/gtplan.1" 2>&1 | grep -q 'make_sequence\|--ignore SEL' && ok || bad "man page does not render the options"
else skip=$((skip + 1)); echo "install: man not installed (scripts/deps.sh test installs man-db): man page not rendered"; fi
# bash: commands, and rule codes from the installed binary
PATH="$d/opt/gt/bin:$PATH" bash -c '
	source "$1"
	COMP_WORDS=(gtplan li); COMP_CWORD=1; _gtplan; [ "${COMPREPLY[*]}" = lint ] || exit 1
	COMP_WORDS=(gtplan lint --ignore GT00); COMP_CWORD=3; _gtplan; [ "${COMPREPLY[*]}" = "GT001 GT002 GT003" ] || exit 2
	COMP_WORDS=(gtplan lint --format g); COMP_CWORD=3; _gtplan; [ "${COMPREPLY[*]}" = github ] || exit 3
	COMP_WORDS=(gtplan run --hostf); COMP_CWORD=2; _gtplan; [ "${COMPREPLY[*]}" = --hostfile ] || exit 4
' _ "$d/opt/gt/share/bash-completion/completions/gtplan" && ok || bad "bash completion"
for sh in zsh fish; do
	if command -v $sh >/dev/null; then
		$sh -n "$d/opt/gt/share/"*/*/"$( [ $sh = zsh ] && echo _gtplan || echo gtplan.fish)" && ok || bad "$sh completion does not parse"
	else skip=$((skip + 1)); echo "install: $sh not installed (scripts/deps.sh test installs it): its completion not parsed"; fi
done
build/gtplan completion tcsh >/dev/null 2>&1 && bad "completion took tcsh" || ok
if make -s --no-print-directory uninstall DESTDIR="$d" PREFIX=/opt/gt >"$tmp/out" 2>&1; then ok; else bad "make uninstall"; cat "$tmp/out"; fi
left=$(find "$d" -type f | wc -l)
[ "$left" -eq 0 ] && ok || { bad "uninstall left $left files"; find "$d" -type f; }
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
