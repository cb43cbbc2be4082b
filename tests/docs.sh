#!/usr/bin/env bash
# The documents written from gtplan's own output (scripts/docs.sh) match
# what the binary prints now; and the check can fail (a binary that prints
# something else is caught). Prints "RESULT passed failed skipped".
set -u
cd "$(dirname "$0")/.."
GTPLAN=$(realpath "${GTPLAN:-build/asan/gtplan}")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
pass=0 fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

if scripts/docs.sh --check "$GTPLAN" >"$tmp/out" 2>&1; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "FAIL: documents differ from the binary's output:"; sed 's/^/    /' "$tmp/out" | head -40; fi
# every rule has its heading, so SARIF's helpUri anchors exist
n_rules=$("$GTPLAN" explain --list | wc -l)
n_heads=$(grep -cE '^## GT[0-9]{3}$' docs/rules.md)
if [ "$n_rules" -eq "$n_heads" ] && [ "$n_rules" -gt 0 ]; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "FAIL: $n_rules rules, $n_heads headings in docs/rules.md"; fi
# --markdown in either place of --list
if "$GTPLAN" explain --markdown --list | cmp -s - docs/rules.md; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "FAIL: explain --markdown --list is not docs/rules.md"; fi
# the check fails on a binary that prints something else
printf '#!/bin/sh\n"%s" "$@" | sed "s/error/mistake/"\n' "$GTPLAN" >"$tmp/fake"
chmod +x "$tmp/fake"
if scripts/docs.sh --check "$tmp/fake" >/dev/null 2>&1; then
	fail=$((fail + 1)); echo "FAIL: scripts/docs.sh --check took a different output"; else pass=$((pass + 1)); fi
echo "RESULT $pass $fail 0"
[ "$fail" -eq 0 ]
