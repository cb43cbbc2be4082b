#!/usr/bin/env bash
# Hostile inputs (gtplan's side of its reliability audit): each one is
# generated here, not committed, and must end in seconds with a coded
# diagnostic, bounded memory and an honest exit status.
#   tests/hostile.sh   prints "RESULT passed failed skipped"
# The sanitizer build (build/asan/gtplan: ASan + UBSan, aborting on any
# signed overflow) runs the arithmetic cases; the release build
# (build/gtplan) runs the bounded-work cases under a 1 GiB address-space
# limit (ulimit -v; ASan reserves more than that up front) and a time
# limit.
set -u
cd "$(dirname "$0")/.."
SAN=$(realpath "${GTPLAN:-build/asan/gtplan}")
REL=$(realpath "${GTPLAN_REL:-build/gtplan}")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
D=examples/default.yaml
M=policy.megatron_cfg

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect NAME WANT_RC CMD...: stdout to $tmp/out, stderr to $tmp/err
expect() {
	local name=$1 want=$2; shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
	if [ "$rc" -eq "$want" ]; then ok; else
		bad "$name: exit $rc, want $want"; sed 's/^/    /' "$tmp/err" | head -12; fi
}
has() { # NAME FILE TEXT
	if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in $(basename "$2")"; sed 's/^/    /' "$2" | head -12; fi
}
# bounded NAME WANT_RC SECONDS CMD...: the release build under 1 GiB of
# address space and a time limit (timeout's 124 is a failure)
bounded() {
	local name=$1 want=$2 secs=$3; shift 3
	expect "$name" "$want" bash -c 'ulimit -v 1048576; exec timeout "$0" "$@"' "$secs" "$@"
}

# ---- arithmetic: sizes past the world limit are GT201 at their own key --
for ov in "$M.context_parallel_size=4611686018427387904" "cluster.num_nodes=2305843009213693952" \
	"$M.tensor_model_parallel_size=4294967297" "$M.pipeline_model_parallel_size=4294967297" \
	"policy.generation.vllm_cfg.tensor_parallel_size=4294967297" "cluster.gpus_per_node=1048577" \
	"+gtplan.model.num_layers=2147483648" "+gtplan.model.vocab_size=4611686018427387904"; do
	expect "limit $ov" 1 "$SAN" lint "$D" "$ov" --color never
	has "limit $ov is GT201 on the command line" "$tmp/err" "command line:1:"
	has "limit $ov names the limit" "$tmp/err" "error[GT201]: must be at most 1048576"
	if grep -q "training GPUs\|valid" "$tmp/err"; then bad "limit $ov: planned anyway"; else ok; fi
done
# every size at the limit at once: no overflow anywhere (UBSan aborts)
X=1048576
mkdir -p "$tmp/max"
cat >"$tmp/max/c.yaml" <<YAML
policy:
  train_global_batch_size: $X
  train_micro_batch_size: $X
  max_total_sequence_length: $X
  megatron_cfg: {enabled: true, tensor_model_parallel_size: 1}
cluster: {num_nodes: 1, gpus_per_node: 1}
gtplan:
  gpu_memory_gb: 1.0e300
  model: {num_layers: 1, hidden_size: $X, ffn_hidden_size: $X, vocab_size: $X,
          num_attention_heads: $X, num_query_groups: $X, kv_channels: $X,
          num_moe_experts: $X, moe_ffn_hidden_size: $X, moe_router_topk: $X}
YAML
"$SAN" lint "$tmp/max/c.yaml" --color never >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" -le 1 ]; then ok; else bad "every size at the limit: exit $rc"; grep -m3 "runtime error\|ERROR" "$tmp/err"; fi
for ov in "+gtplan.model.num_moe_experts=1" "policy.train_micro_batch_size=1" "+gtplan.model.num_layers=$X"; do
	"$SAN" lint "$tmp/max/c.yaml" "$ov" --color never >"$tmp/out" 2>"$tmp/err"; rc=$?
	if [ "$rc" -le 1 ]; then ok; else bad "sizes at the limit, $ov: exit $rc"; grep -m3 "runtime error\|ERROR" "$tmp/err"; fi
done

# ---- bounded work ----------------------------------------------------------
bounded "global batch 2^20" 0 20 "$REL" lint "$D" policy.train_global_batch_size=1048560 --color never
has "global batch: GT505" "$tmp/err" "warning[GT505]: train was not simulated"
bounded "num_layers 2^20" 1 20 "$REL" lint "$D" +gtplan.model.num_layers=1048576 --color never
# a world at the limit, 2^20 ranks (scripts/bench.sh's layout with CP 2,
# among the slowest measured), lints in seconds; one past it is GT308 at
# once, without simulating
for drv in 4d 5d; do
	bounded "world 2^20, CP 2, $drv" "$([ $drv = 4d ] && echo 0 || echo 1)" 30 "$REL" lint "$D" \
		cluster.num_nodes=131072 $M.context_parallel_size=2 \
		$M.tensor_parallel_num_weight_shards=16 gtplan.driver_layout=$drv \
		policy.train_global_batch_size=262144 policy.train_micro_batch_size=1 \
		policy.logprob_batch_size=1 grpo.num_prompts_per_step=32768 --color never
done
bounded "world 2^20 + 8" 1 5 "$REL" lint "$D" cluster.num_nodes=131073 --color never
has "world past the limit: GT308" "$tmp/err" "error[GT308]: 1048584 training GPUs exceed gtplan's limit of 1048576"
cat >"$tmp/pp.yaml" <<YAML
policy:
  train_global_batch_size: 1
  train_micro_batch_size: 1
  max_total_sequence_length: 8
  megatron_cfg: {enabled: true, tensor_model_parallel_size: 1, pipeline_model_parallel_size: 4096}
cluster: {num_nodes: 1, gpus_per_node: 4096}
gtplan:
  model: {num_layers: 4096, hidden_size: 64, ffn_hidden_size: 64, vocab_size: 64, num_attention_heads: 1}
YAML
# one program per stage, each stage checked against the others (GT680)
bounded "PP 4096 x 4096 layers" 0 30 "$REL" lint "$tmp/pp.yaml" --color never
# a defaults: diamond of 21 files, each including the next one twice:
# 2^20 loads before; each file is read once now
mkdir -p "$tmp/diamond"
for i in $(seq 0 19); do
	printf 'defaults: [f%d.yaml, f%d.yaml]\nk%d: %d\n' $((i + 1)) $((i + 1)) "$i" "$i" >"$tmp/diamond/f$i.yaml"
done
printf 'k20: 20\n' >"$tmp/diamond/f20.yaml"
# (exit 1: the files name no cluster, GT204)
bounded "defaults diamond" 1 10 "$REL" config "$tmp/diamond/f0.yaml"
has "diamond: every file merged" "$tmp/out" '"k20": 20'
# 100,000 includes of one file: GT103 names the limit
mkdir -p "$tmp/many"
printf 'a: 1\n' >"$tmp/many/one.yaml"
{ printf 'defaults:\n'; for _ in $(seq 100000); do printf -- '- one.yaml\n'; done; } >"$tmp/many/c.yaml"
bounded "100,000 includes" 1 10 "$REL" config "$tmp/many/c.yaml" --color never
has "includes: GT103" "$tmp/err" "error[GT103]: the config and its defaults: files pass the limit of 1000 defaults: entries"
# an 85 KB config of references to a 1 MiB string
python3 - "$tmp/interp.yaml" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write('big: "' + "x" * ((1 << 20) - 16) + '"\n')
    for i in range(8000):
        f.write("k%d: ${big}\n" % i)
PY
bounded "interpolation bomb" 1 20 "$REL" config "$tmp/interp.yaml" --color never
has "interpolation: GT103" "$tmp/err" "error[GT103]: interpolations build more than 67108864 bytes of text in all"
# 50,000 keys and a duplicate: hashed, not quadratic
python3 -c '
for i in range(50000): print("k%d: %d" % (i, i))
print("k7: 1")' >"$tmp/keys.yaml"
bounded "50,000 keys" 1 10 "$REL" config "$tmp/keys.yaml" --color never
has "duplicate key found" "$tmp/err" "error[GT101]: duplicate key 'k7'"

# ---- files that are not config files ---------------------------------------
mkdir -p "$tmp/inc/dir.yaml"
mkfifo "$tmp/inc/fifo.yaml"
ln -s loop2.yaml "$tmp/inc/loop1.yaml"; ln -s loop1.yaml "$tmp/inc/loop2.yaml"
head -c $((17 << 20)) /dev/zero | tr '\0' '#' >"$tmp/inc/big.yaml"
for t in "fifo.yaml|it is a FIFO, device or socket, not a regular file" "dir.yaml|it is a directory" \
	"loop1.yaml|a loop of symbolic links" "big.yaml|'big.yaml' is 17825792 bytes, more than the 16777216-byte limit"; do
	f=${t%%|*} msg=${t#*|}
	printf 'defaults: %s\na: 1\n' "$f" >"$tmp/inc/use.yaml"
	(cd "$tmp/inc" && exec timeout 10 "$SAN" config use.yaml --color never) >"$tmp/out" 2>"$tmp/err"; rc=$?
	if [ "$rc" -eq 1 ]; then ok; else bad "include $f: exit $rc, want 1"; fi
	has "include $f" "$tmp/err" "$msg"
done
expect "top-level directory" 2 "$SAN" config "$tmp/inc/dir.yaml"
has "top-level directory says so" "$tmp/err" "it is a directory"
# lint takes a folder as the configs under it (lint_files.h)
expect "lint of a folder with no configs" 2 "$SAN" lint "$tmp/inc/dir.yaml"
has "lint of a folder with no configs says so" "$tmp/err" "no YAML file"
expect "top-level oversize" 1 "$SAN" lint "$tmp/inc/big.yaml"
has "top-level oversize: real size" "$tmp/err" "is 17825792 bytes"
expect "a pipe as the config" 0 bash -c "\"$SAN\" config <(cat \"$D\")"

# ---- YAML tags and NUL (exit 1 with a good file: it names no cluster) -- -----------------------------------------------------
printf 'a: !!python/object/apply:os.system [ls]\n' >"$tmp/tag1.yaml"
expect "tag on a list" 1 "$SAN" config "$tmp/tag1.yaml" --color never
has "tag on a list: GT100" "$tmp/err" "unsupported YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' on a list"
printf 'a: !!python/object/new:x\n  k: v\n' >"$tmp/tag2.yaml"
expect "tag on a map" 1 "$SAN" config "$tmp/tag2.yaml" --color never
has "tag on a map: GT100" "$tmp/err" "on a map"
printf 'a: !!float 3\nb: !!int "12"\n' >"$tmp/tag3.yaml"
expect "!!float 3" 1 "$SAN" config "$tmp/tag3.yaml"
has "!!float 3 is 3.0" "$tmp/out" '"a": 3.0'
has "!!int \"12\" is 12" "$tmp/out" '"b": 12'
printf 'a: !!int 3.5\n' >"$tmp/tag4.yaml"
expect "!!int 3.5" 1 "$SAN" config "$tmp/tag4.yaml" --color never
has "!!int 3.5 refused" "$tmp/err" "'3.5' is not an integer"
printf 'a: "x\\0y"\n' >"$tmp/nul.yaml"
expect "NUL in a string" 1 "$SAN" config "$tmp/nul.yaml" --color never
has "NUL refused" "$tmp/err" "a NUL character"

# ---- honest exit codes -----------------------------------------------------
for cmd in "lint $D --format json" "lint $D --format sarif" "config $D" "sim $D" \
	"render $D --format text" "plan $D --summary" "plan $D" "explain GT400" \
	"explain $D --rank 3" "--version" "help"; do
	# shellcheck disable=SC2086 # the command is words
	"$SAN" $cmd >/dev/full 2>"$tmp/err"; rc=$?
	if [ "$rc" -eq 2 ]; then ok; else bad "'$cmd' > /dev/full: exit $rc, want 2"; fi
	has "'$cmd' > /dev/full says so" "$tmp/err" "error writing to standard output"
done
expect "config -o" 0 "$SAN" config "$D" -o "$tmp/config.json"
"$SAN" config "$D" >"$tmp/config-stdout.json" 2>/dev/null
if cmp -s "$tmp/config.json" "$tmp/config-stdout.json"; then ok; else bad "config -o differs from stdout"; fi
# -o writes through a temporary file: nothing else is left, and a device
# is written in place, never replaced or removed
mkdir -p "$tmp/o"
echo old >"$tmp/o/grid.svg"
expect "render -o over a file" 0 "$SAN" render "$D" -o "$tmp/o/grid.svg" --format text
if [ "$(ls "$tmp/o")" = grid.svg ] && ! grep -qx old "$tmp/o/grid.svg"; then ok; else bad "render -o left $(ls "$tmp/o")"; fi
# a picture that fails (Graphviz without its plugins) leaves the old file
mkdir -p "$tmp/noplugins"
echo old >"$tmp/o/keep.svg"
expect "render fails" 2 env GVBINDIR="$tmp/noplugins" "$REL" render "$D" -o "$tmp/o/keep.svg"
if [ "$(cat "$tmp/o/keep.svg")" = old ] && [ "$(ls "$tmp/o" | wc -l)" -eq 2 ]; then ok; else
	bad "a failed render changed keep.svg or left a file: $(ls "$tmp/o")"; fi
expect "sim --trace /dev/full" 2 "$SAN" sim "$D" --trace /dev/full
expect "render -o /dev/full" 2 "$SAN" render "$D" -o /dev/full --format text
if [ -c /dev/full ]; then ok; else bad "render -o /dev/full: /dev/full is gone"; fi
expect "plan -o /dev/full" 2 "$SAN" plan "$D" -o /dev/full
expect "config -o /dev/full" 2 "$SAN" config "$D" -o /dev/full
expect "plan -o into a missing folder" 2 "$SAN" plan "$D" -o "$tmp/none/plan.json"
if [ -e "$tmp/none" ]; then bad "plan -o made a folder"; else ok; fi

echo "hostile: $pass passed, $fail failed"
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
