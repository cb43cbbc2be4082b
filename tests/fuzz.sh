#!/usr/bin/env bash
# The fuzzers (tests/fuzz/fuzz_*.c, libFuzzer with ASan + UBSan) for a
# fixed time: first every saved crash input (tests/fuzz/regress/, each a
# regression test that must now pass), then each harness for half of
# FUZZ_SECONDS (default 60: make test; make fuzz runs longer), seeded with
# the config corpus (tests/configs) and the schema's keys as a dictionary.
# Prints "RESULT passed failed skipped"; without clang it skips, saying so.
# A crash leaves its input in $FUZZ_ARTIFACTS (default build/fuzz/crashes):
# add it to tests/fuzz/regress/ with the fix.
set -u
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
art=${FUZZ_ARTIFACTS:-build/fuzz/crashes}
pass=0 fail=0 skip=0
if ! command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1; then
	echo "SKIP: fuzz: clang not found (scripts/deps.sh test installs it)"
	echo "RESULT 0 0 2"; exit 0
fi
if ! make --no-print-directory fuzz-build >/dev/null; then
	echo "FAIL: fuzz: the harnesses do not build (make fuzz-build)"
	echo "RESULT 0 1 0"; exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$art" "$tmp/tmpdir"
export TMPDIR="$tmp/tmpdir" # fuzz_load's input files
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
opts=(-timeout=20 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=0)
for h in fuzz_lint fuzz_load; do
	bin=build/fuzz/$h
	# the saved crash inputs: each must run clean now
	regress=(tests/fuzz/regress/*)
	if [ -e "${regress[0]}" ]; then
		if "$bin" "${opts[@]}" "${regress[@]}" >"$tmp/$h.regress" 2>&1; then
			pass=$((pass + 1))
		else
			fail=$((fail + 1)); echo "FAIL: $h on tests/fuzz/regress"
			tail -30 "$tmp/$h.regress"
		fi
	fi
	mkdir -p "$tmp/corpus-$h"
	cp tests/configs/*/*.yaml examples/*.yaml "$tmp/corpus-$h/"
	"$bin" "${opts[@]}" -dict=build/fuzz/config.dict -max_total_time=$((secs / 2)) \
		-artifact_prefix="$art/$h-" "$tmp/corpus-$h" >"$tmp/$h.log" 2>&1; rc=$?
	runs=$(grep -oE 'Done [0-9]+ runs' "$tmp/$h.log" | grep -oE '[0-9]+')
	if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
		pass=$((pass + 1)); echo "fuzz: $h: $runs runs in $((secs / 2)) s, no crash"
	else
		fail=$((fail + 1)); echo "FAIL: $h (exit $rc): the input is in $art/"
		grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$tmp/$h.log" | head -20
	fi
done
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
