#!/usr/bin/env bash
# Corpus test: every NeMo-RL example config, gtplan against NeMo-RL's loader.
#
#   tests/corpus.sh            (from anywhere; runs in the repo root)
#
# The corpus is ../shared/corpus (or $GTPLAN_CORPUS). For each of its
# examples/**/*.yaml and *.yaml.disabled files it runs build/asan/gtplan
# `config`, `plan -o -` and `lint --format json`, while one Python process
# (tests/corpus_ref.py, Debian's /usr/bin/python3 with OmegaConf) loads them
# all the way NeMo-RL does; tests/corpus_compare.py then checks the resolved
# config, the derived sizes and resources, and that lint reports no errors
# except those in tests/corpus_expected_errors.txt. See corpus_compare.py for
# what each check means.
#
# Last line: RESULT <passed> <failed> <skipped>. Exit 1 on any failure.
set -u
cd "$(dirname "$0")/.."

corpus=${GTPLAN_CORPUS:-../shared/corpus}
bin=${GTPLAN_BIN:-build/asan/gtplan}
py=${GTPLAN_PYTHON:-/usr/bin/python3}

if [ ! -d "$corpus" ]; then
	echo "corpus: skipped: ${GTPLAN_CORPUS:-../shared/corpus} not found"
	echo "RESULT 0 0 1"
	exit 0
fi
if [ ! -x "$bin" ]; then
	echo "corpus: $bin is missing (make $bin)"
	echo "RESULT 0 1 0"
	exit 1
fi
if ! "$py" -c 'import omegaconf, yaml' 2>/dev/null; then
	echo "corpus: $py lacks omegaconf/yaml (apt-get install python3-omegaconf)"
	echo "RESULT 0 1 0"
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
mkdir -p "$out"
# A private copy, so a rebuild during the run cannot pull it away.
cp "$bin" "$tmp/gtplan" && bin=$tmp/gtplan

# The reference runs in the background, in one process, while gtplan runs.
"$py" tests/corpus_ref.py --root "$corpus" >"$tmp/ref.jsonl" 2>"$tmp/ref.err" &
ref_pid=$!

"$py" tests/corpus_ref.py --root "$corpus" --list >"$out/files.txt" || {
	echo "corpus: cannot list $corpus"; echo "RESULT 0 1 0"; exit 1; }
if [ ! -s "$out/files.txt" ]; then
	echo "corpus: no examples/**/*.yaml under $corpus"
	echo "RESULT 0 0 1"
	exit 0
fi

# ASan's leak check stays on (tests/run.sh exports the options).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One job per file, by its index in files.txt; results land in
# $out/<index>.<command>.{out,err,rc}.
run_one() {
	local i=$1 f
	f=$(sed -n "$((i + 1))p" "$CORPUS_OUT/files.txt")
	"$CORPUS_BIN" config "$CORPUS_DIR/$f" \
		>"$CORPUS_OUT/$i.config.out" 2>"$CORPUS_OUT/$i.config.err"
	echo $? >"$CORPUS_OUT/$i.config.rc"
	"$CORPUS_BIN" plan "$CORPUS_DIR/$f" -o - \
		>"$CORPUS_OUT/$i.plan.out" 2>"$CORPUS_OUT/$i.plan.err"
	echo $? >"$CORPUS_OUT/$i.plan.rc"
	"$CORPUS_BIN" lint "$CORPUS_DIR/$f" --format json \
		>"$CORPUS_OUT/$i.lint.out" 2>"$CORPUS_OUT/$i.lint.err"
	echo $? >"$CORPUS_OUT/$i.lint.rc"
}
export -f run_one
export CORPUS_BIN=$bin CORPUS_DIR=$corpus CORPUS_OUT=$out
n=$(wc -l <"$out/files.txt")
seq 0 $((n - 1)) | xargs -P "$(nproc 2>/dev/null || echo 2)" -n 1 \
	bash -c 'run_one "$1"' _

if ! wait "$ref_pid"; then
	echo "corpus: tests/corpus_ref.py failed:"
	tail -n 20 "$tmp/ref.err"
	echo "RESULT 0 1 0"
	exit 1
fi

"$py" tests/corpus_compare.py --ref "$tmp/ref.jsonl" --out "$out" \
	--expected tests/corpus_expected_errors.txt
