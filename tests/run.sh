#!/usr/bin/env bash
# Runs every test suite and prints one closing summary line.
#   tests/run.sh build/asan/tests/test_* ...
# 1. each Check suite binary (built with ASan + UBSan);
# 2. tests/layers.sh: the layers' order (scripts/check_layers.sh) and its
#    guards, then tests/e2e.sh: the CLI end-to-end tests (build/asan/gtplan),
#    tests/lint_select.sh: rule selection, project files and CI formats,
#    tests/docs.sh: the documents written from gtplan's output,
#    tests/schema_corpus.sh: the editor schema on the corpus under ajv,
#    tests/install.sh: make install/uninstall, man page, completions,
#    tests/precommit.sh: the pre-commit hook and the GitHub Action,
#    tests/launch_slurm.sh: gtplan run --launcher srun|sbatch, hostfiles,
#    tests/launch_slurm_real.sh: the same launchers on a one-node Slurm;
# 3. tests/corpus.sh: every NeMo-RL corpus config against OmegaConf;
# 4. tests/runtime_parity.sh, tests/runtime_calls.sh, tests/runtime_ckpt.sh,
#    tests/runtime_pp.sh: gtplan-run under mpirun (parity of layouts;
#    get_logprobs and refit export; sharded checkpoints; pipeline
#    parallelism);
# 5. tests/citations.py: every document, section and repo file the comments
#    and docs name exists (with a self-check that breaks each kind);
# 6. tests/hostile.sh: the hostile inputs (limits, bounded work, files that
#    are not configs, YAML tags, exit codes on failed writes), then
#    tests/fuzz.sh: 60 s of libFuzzer over the loader and the lint path
#    (skipped, saying so, without clang).
# Each part prints "RESULT <passed> <failed> <skipped>" as its last line.
set -u
cd "$(dirname "$0")/.."
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# gtplan reads a hub id's config.json from the local Hugging Face cache
# (planner/model_hf.c): the tests' findings must not depend on what this
# machine has cached, so they see an empty one (test_model_hf.c sets its
# own fixture cache).
export HF_HUB_CACHE="$PWD/tests/configs/hf/no-cache"
passed=0 failed=0 skipped=0 broken=()

add() { # name rc output-file
	local name=$1 rc=$2 out=$3 line p f s
	line=$(grep -E '^RESULT [0-9]+ [0-9]+ [0-9]+$' "$out" | tail -n 1)
	if [ -z "$line" ]; then
		echo "run: $name printed no RESULT line (exit $rc)"; failed=$((failed + 1)); broken+=("$name"); return
	fi
	read -r _ p f s <<<"$line"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	if [ "$f" -ne 0 ] || [ "$rc" -ne 0 ]; then
		broken+=("$name")
		[ "$f" -eq 0 ] && failed=$((failed + 1))
	fi
}

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for bin in "$@"; do
	name=$(basename "$bin")
	"$bin" >"$tmp/$name.out" 2>&1; rc=$?
	cat "$tmp/$name.out"
	# Check prints "NN%: Checks: N, Failures: F, Errors: E".
	sum=$(grep -E '^[0-9]+%: Checks: ' "$tmp/$name.out" | tail -n 1)
	if [ -n "$sum" ]; then
		n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$sum")
		fl=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$sum")
		er=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$sum")
		echo "RESULT $((n - fl - er)) $((fl + er)) 0" >>"$tmp/$name.out"
	fi
	add "$name" "$rc" "$tmp/$name.out"
done
for script in tests/layers.sh tests/e2e.sh tests/lint_select.sh tests/docs.sh tests/schema_corpus.sh tests/install.sh tests/precommit.sh tests/launch_slurm.sh tests/launch_slurm_real.sh tests/render_e2e.sh tests/corpus.sh tests/runtime_parity.sh \
	tests/runtime_calls.sh tests/runtime_ckpt.sh tests/runtime_pp.sh tests/citations.py tests/hostile.sh tests/fuzz.sh; do
	if [ ! -x "$script" ]; then # a part that cannot run has failed
		echo "run: $script is missing or not executable"
		failed=$((failed + 1)); broken+=("$script"); continue
	fi
	"$script" 2>&1 | tee "$tmp/part.out"; rc=${PIPESTATUS[0]}
	add "$script" "$rc" "$tmp/part.out"
done
echo
[ ${#broken[@]} -gt 0 ] && echo "failing: ${broken[*]}"
echo "summary: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
