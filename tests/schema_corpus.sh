#!/usr/bin/env bash
# The editor schema on real recipes: every NeMo-RL example config
# (the corpus corpus.sh reads, or $GTPLAN_CORPUS; examples/configs/**/*.yaml), as an
# editor sees it (unresolved: `defaults:` children without cluster keys,
# `${...}` where a number goes), passes schemas/config.schema.json under an
# independent validator, ajv-cli (npm, installed once under build/npm);
# and ajv refuses what the schema forbids, so the check can fail.
# Skips (exit 0) when npm is absent or offline, or the corpus is.
# Prints "RESULT passed failed skipped".
set -u
cd "$(dirname "$0")/.."
corpus=${GTPLAN_CORPUS:-../shared/corpus}
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ajv=build/npm/node_modules/.bin/ajv

if [ ! -x "$ajv" ] && command -v npm >/dev/null; then
	npm install --silent --no-audit --no-fund --prefix build/npm ajv-cli@5.0.0 >/dev/null 2>&1
fi
if [ ! -x "$ajv" ]; then
	echo "schema_corpus: skipped: no ajv-cli (npm absent or offline)"
	echo "RESULT 0 0 1"; exit 0
fi
# validate FILE...: ajv's "FILE valid|invalid" lines in $tmp/out
validate() {
	local args=() f
	for f in "$@"; do args+=(-d "$f"); done
	"$ajv" validate --spec=draft2020 --strict=false --all-errors \
		-s schemas/config.schema.json "${args[@]}" >"$tmp/out" 2>&1
}

# ajv can fail: a closed gtplan section and a size that is no number; an
# integer is JSON Schema's, as gtplan reads it (TP 4.0 yes, 4.5 no: GT206
# and GT200, tests/lint_select.sh)
printf 'cluster:\n  num_nodes: two\n  gpus_per_node: 8\ngtplan:\n  rank_ordr: x\n' >"$tmp/bad.yaml"
printf 'defaults: base.yaml\npolicy:\n  train_global_batch_size: ${mul:${.x}, 2}\n' >"$tmp/child.yaml"
for v in 4.0 4.5; do
	printf 'policy:\n  megatron_cfg:\n    tensor_model_parallel_size: %s\ncluster:\n  num_nodes: 1\n  gpus_per_node: 8\n' "$v" >"$tmp/tp$v.yaml"
done
validate "$tmp/bad.yaml" "$tmp/child.yaml" examples/default.yaml "$tmp/tp4.0.yaml" "$tmp/tp4.5.yaml"
if grep -q "bad.yaml invalid" "$tmp/out" && grep -q "child.yaml valid" "$tmp/out" &&
	grep -q "default.yaml valid" "$tmp/out" && grep -q "tp4.0.yaml valid" "$tmp/out" &&
	grep -q "tp4.5.yaml invalid" "$tmp/out"; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "FAIL: ajv on the schema's own cases:"; sed 's/^/    /' "$tmp/out" | head -30; fi

if [ ! -d "$corpus/nemo-rl/examples/configs" ]; then
	echo "schema_corpus: corpus skipped: $corpus/nemo-rl/examples/configs not found"
	skip=$((skip + 1))
else
	mapfile -t files < <(find "$corpus/nemo-rl/examples/configs" -name '*.yaml' | LC_ALL=C sort)
	validate "${files[@]}"
	n_valid=$(grep -c ' valid$' "$tmp/out")
	if [ "$n_valid" -eq "${#files[@]}" ] && ! grep -q ' invalid$' "$tmp/out"; then
		pass=$((pass + 1)); echo "schema_corpus: $n_valid of ${#files[@]} corpus configs valid"
	else
		fail=$((fail + 1)); echo "FAIL: $n_valid of ${#files[@]} corpus configs valid under ajv:"
		grep -A12 ' invalid$' "$tmp/out" | head -60 | sed 's/^/    /'
	fi
fi
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
