#!/usr/bin/env bash
# End-to-end tests of the gtplan CLI (the sanitizer build).
#   tests/e2e.sh            run all; prints "RESULT passed failed skipped"
# Data-driven part: every tests/configs/{good,bad}/NAME.yaml is linted; a
# good config must give no finding; a bad one must give exactly the
# `file:line:col: severity[CODE]` lines (and `file:line:col: note` lines)
# of NAME.expect (overrides, if any, on the first line of NAME.args).
set -u
cd "$(dirname "$0")/.."
GTPLAN=$(realpath "${GTPLAN:-build/asan/gtplan}")
PY=/usr/bin/python3
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect_rc NAME WANT CMD...: runs CMD, stdout to $tmp/out, stderr to $tmp/err
expect_rc() {
	local name=$1 want=$2; shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
	if [ "$rc" -eq "$want" ]; then ok; else
		bad "$name: exit $rc, want $want"; sed 's/^/    /' "$tmp/err" | head -20; fi
}
contains() { # NAME FILE TEXT
	if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in $2 output"; sed 's/^/    /' "$2" | head -20; fi
}

# ---- data-driven configs ------------------------------------------------
for f in tests/configs/good/*.yaml; do
	[ -e "$f" ] || continue
	expect_rc "good $f" 0 "$GTPLAN" lint --strict "$f" --color never
done
for f in tests/configs/bad/*.yaml; do
	[ -e "$f" ] || continue
	base=${f%.yaml}
	args=()
	[ -f "$base.args" ] && read -r -a args <"$base.args"
	# run from the config's folder, so the expected names are bare
	(cd "$(dirname "$f")" && "$GTPLAN" lint "$(basename "$f")" "${args[@]}" --color never) >"$tmp/out" 2>"$tmp/err"; rc=$?
	# findings and their notes: where each one points
	grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning|note)(\[GT[0-9]+\])?: ' "$tmp/err" |
		sed -E 's/^(.*:[0-9]+:[0-9]+: (error|warning|note)(\[GT[0-9]+\])?): .*/\1/' >"$tmp/got"
	if [ ! -f "$base.expect" ]; then bad "$f: no $base.expect"; continue; fi
	if diff -u "$base.expect" "$tmp/got" >"$tmp/diff"; then ok; else
		bad "$f: diagnostics differ"; sed 's/^/    /' "$tmp/diff" | head -20; fi
	if grep -q 'error\[' "$base.expect"; then want=1; else want=0; fi
	if [ "$rc" -eq "$want" ]; then ok; else bad "$f: exit $rc, want $want"; fi
	# every finding has a hint
	n_find=$(grep -cE '^[^ ].*: (error|warning)\[GT' "$tmp/err")
	n_hint=$(grep -cE '^ *= hint: ' "$tmp/err")
	if [ "$n_hint" -ge "$n_find" ]; then ok; else bad "$f: $n_find findings but $n_hint hints"; fi
done

# ---- the default example ------------------------------------------------
D=examples/default.yaml
expect_rc "lint default" 0 "$GTPLAN" lint "$D" --strict
# clean: no error or warning (the padded vocabulary is a GT605 note)
contains "lint default says clean" "$tmp/err" "gtplan: 0 errors, 0 warnings"
expect_rc "plan summary" 0 "$GTPLAN" plan "$D" --summary
contains "summary copies" "$tmp/out" "2 model copies (D) x GTP 3 = 6 data lanes (L)"
contains "summary model" "$tmp/out" "TP 4 x CP 1 x GTP 3 x PP 1 = 12 GPUs"
contains "summary batch" "$tmp/out" "480 = 6 lanes x 80 samples = 20 micro-batches of 4 per lane"

expect_rc "plan json" 0 "$GTPLAN" plan "$D" -o "$tmp/plan1.json"
expect_rc "plan json again" 0 "$GTPLAN" plan "$D" -o "$tmp/plan2.json"
if cmp -s "$tmp/plan1.json" "$tmp/plan2.json"; then ok; else bad "plan JSON is not deterministic"; fi
expect_rc "plan schema" 0 "$PY" tests/check_plan_schema.py schemas/plan.schema.json "$tmp/plan1.json"
# gtplan-run's step estimate (sim/step_est.h): a bf16 run of its model has
# one, deterministic and valid against the schema
expect_rc "plan estimate" 0 "$GTPLAN" plan tests/runtime/parity.yaml gtplan.runtime.dtype=bf16 -o "$tmp/est1.json"
expect_rc "plan estimate again" 0 "$GTPLAN" plan tests/runtime/parity.yaml gtplan.runtime.dtype=bf16 -o "$tmp/est2.json"
if cmp -s "$tmp/est1.json" "$tmp/est2.json"; then ok; else bad "the estimate is not deterministic"; fi
expect_rc "plan estimate schema" 0 "$PY" tests/check_plan_schema.py schemas/plan.schema.json "$tmp/est1.json"
expect_rc "plan estimate step" 0 "$PY" -c 'import json, sys
e = json.load(open(sys.argv[1]))["runtime_estimate"]
sys.exit(not (e["step_s"] > 0 and e["why"] is None and e["gpu"] == "h200"))' "$tmp/est1.json"
expect_rc "plan content" 0 "$PY" - "$tmp/plan1.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "gtplan-plan/1"
assert p["world_size"] == 24
s = p["sizes"]
assert (s["tp"], s["gtp"], s["dp_replicate"], s["dp"], s["cp"], s["pp"]) == (4, 3, 2, 6, 1, 1), s
assert p["groups"]["gtp"][:4] == [[0, 4, 8], [1, 5, 9], [2, 6, 10], [3, 7, 11]]
assert p["groups"]["dp"][0] == [0, 4, 8, 12, 16, 20]
assert p["groups"]["dp_replicate"][0] == [0, 12]
r = p["ranks"][13]
assert (r["rank"], r["node"], r["local_rank"], r["tp"], r["gtp"], r["dp_replicate"], r["lane"]) == (13, 1, 5, 1, 0, 1, 3), r
EOF

# ---- sim: every call on the default layout, the 5-D hang (docs/calls.md §3)
expect_rc "sim default" 0 "$GTPLAN" sim "$D"
contains "sim all calls complete" "$tmp/out" "calls complete"
contains "sim train row" "$tmp/out" "train "
expect_rc "sim one call" 0 "$GTPLAN" sim "$D" --call save_checkpoint
if grep -q "get_logprobs" "$tmp/out"; then bad "sim --call shows other calls"; else ok; fi
expect_rc "sim unknown call" 2 "$GTPLAN" sim "$D" --call no_such_call
expect_rc "sim list calls" 0 "$GTPLAN" sim "$D" --list-calls
for c in train get_logprobs sft_v2_train broadcast_weights_for_collective save_checkpoint init_nccl_reshard_comm_group; do
	contains "list-calls has $c" "$tmp/out" "$c"
done
F5=tests/configs/bad/driver-layout-5d.yaml
expect_rc "sim 5-D" 1 "$GTPLAN" sim "$F5" --color never
contains "sim 5-D train hangs" "$tmp/out" "hang"
expect_rc "plan 5-D" 1 "$GTPLAN" plan "$F5" -o "$tmp/plan5.json"
expect_rc "plan 5-D schema" 0 "$PY" tests/check_plan_schema.py schemas/plan.schema.json "$tmp/plan5.json"
expect_rc "plan 5-D calls" 0 "$PY" - "$tmp/plan5.json" <<'EOF2'
import json, sys
calls = {c["name"]: c for c in json.load(open(sys.argv[1]))["calls"]}
def codes(c): return [f["code"] for f in calls[c]["findings"]]
# NeMo-RL PR #4512's 5-D layout: every call that shards data_parallel only
# reaches the g = 0 GPUs (docs/calls.md §3)
for name in ("train", "get_logprobs"):
    c = calls[name]
    assert c["status"] == "hang", (name, c["status"])
    assert c["invoked"] == 8 and c["shards"] == 2, c
    assert "GT500" in codes(name), codes(name)
lp = [f["message"] for f in calls["get_logprobs"]["findings"] if f["code"] == "GT500"][0]
assert "GTP all-gather" in lp and "never called" in lp, lp
tr = [f["message"] for f in calls["train"]["findings"] if f["code"] == "GT500"][0]
assert "never called" in tr and "gtp_weight_remat" in tr, tr
# no model named: the model is gtplan-run's, and the hang names the
# runtime's first collective the g != 0 ranks never issue
assert 'op #0, the dp_cp all-reduce "tokens"' in tr, tr
assert "gtplan-run's collective #0 of train" in tr, tr
assert 'the GTP all-gather "embedding"' in lp, lp
sft = calls["sft_v2_train"]
assert sft["status"] == "ok" and sft["invoked"] == 24 and sft["shards"] == 6, sft
# who the driver calls: only g = 0 for calls that shard data_parallel only
assert calls["train"]["called_when"] == {"gtp": 0}, calls["train"]
assert calls["get_logprobs"]["called_when"] == {"gtp": 0}
assert sft["called_when"] == {} and calls["save_checkpoint"]["called_when"] == {}
assert calls["save_checkpoint"]["status"] == "ok"
EOF2
expect_rc "plan default calls" 0 "$PY" - "$tmp/plan1.json" <<'EOF2'
import json, sys
calls = json.load(open(sys.argv[1]))["calls"]
assert calls and all(c["status"] == "ok" for c in calls), [(c["name"], c["status"]) for c in calls]
assert all(c["invoked"] == 24 for c in calls)
assert all(c["called_when"] == {} for c in calls), [c["called_when"] for c in calls]
EOF2

# ---- sim --predict-record: gtplan-run's record, as the simulator plays it --
R=tests/runtime/parity.yaml
RO="cluster.gpus_per_node=6 policy.megatron_cfg.tensor_model_parallel_size=2 policy.megatron_cfg.tensor_parallel_num_weight_shards=6"
# shellcheck disable=SC2086 # the overrides are words
expect_rc "predict runtime" 0 "$GTPLAN" sim $R $RO --predict-record "$tmp/pr" --steps 2
contains "predict: the runtime model" "$tmp/out" "model gtplan-run's (gtplan.runtime: hidden 40"
# shellcheck disable=SC2086
expect_rc "predict again" 0 "$GTPLAN" sim $R $RO --predict-record "$tmp/pr2" --steps 2
for r in 0 5; do
	if cmp -s "$tmp/pr.$r" "$tmp/pr2.$r"; then ok; else bad "predict: rank $r differs between two runs"; fi
done
expect_rc "predict content" 0 "$PY" - "$tmp/pr" <<'EOF2'
import json, sys
KEYS = ["bytes", "call", "coll", "count", "dtype", "group", "group_index",
        "op", "rank", "seq", "step", "what"]
for r in range(6):
    lines = [json.loads(l) for l in open(f"{sys.argv[1]}.{r}")]
    assert all(list(d) == KEYS and d["rank"] == r for d in lines), lines[0]
    assert [d["seq"] for d in lines] == list(range(len(lines)))
    half = len(lines) // 2
    assert [d["step"] for d in lines] == [1] * half + [2] * half
    first = [(d["what"], d["group"]) for d in lines[:3]]
    assert first == [("tokens", "dp_cp"), ("embedding", "gtp"),
                     ("embedding.out", "tp")], first
    assert lines[half - 1]["coll"] == "barrier" and lines[half - 1]["what"] == "step"
EOF2
# the 5-D layout: g = 0 ranks stop in the token count, the others never start
expect_rc "predict 5-D hang" 1 "$GTPLAN" sim "$F5" --call train --predict-record "$tmp/p5"
expect_rc "predict 5-D content" 0 "$PY" - "$tmp/p5" <<'EOF2'
import json, sys
for r in range(24):
    lines = [json.loads(l) for l in open(f"{sys.argv[1]}.{r}")]
    g = (r // 4) % 3
    if g:
        assert lines == [], (r, lines)
    else:
        assert len(lines) == 1 and lines[0]["what"] == "tokens", (r, lines)
EOF2
# a named model is the decoder gtplan-run trains (the plan's runtime.model)
expect_rc "predict a named model" 0 "$GTPLAN" sim tests/runtime/decoder.yaml cluster.gpus_per_node=2 \
	policy.megatron_cfg.tensor_model_parallel_size=2 --predict-record "$tmp/pd" --steps 1
if [ -s "$tmp/pd.0" ]; then ok; else bad "predict wrote nothing for a named model"; fi
expect_rc "predict refuses an MoE model" 2 "$GTPLAN" sim $R +policy.model_name=Qwen/Qwen3-30B-A3B --predict-record "$tmp/pd"
contains "predict: MoE" "$tmp/err" "is a mixture-of-experts model; gtplan-run's decoder is dense"
expect_rc "predict world limit" 2 "$GTPLAN" sim $R cluster.gpus_per_node=4097 --predict-record "$tmp/pd"
contains "predict: world limit" "$tmp/err" "4097 ranks are more than the 4096 files"
expect_rc "predict world at the limit" 0 "$GTPLAN" sim $R cluster.gpus_per_node=4096 policy.train_global_batch_size=4096 --predict-record "$tmp/pl"
if [ -e "$tmp/pl.4095" ]; then ok; else bad "predict: no file for rank 4095"; fi
expect_rc "predict refuses a PP split" 2 "$GTPLAN" sim $R cluster.gpus_per_node=2 policy.megatron_cfg.pipeline_model_parallel_size=2 gtplan.runtime.layers=3 --predict-record "$tmp/pd"
contains "predict: PP split" "$tmp/err" "GT600: 3 layers do not split over PP 2"
expect_rc "predict refuses a batch" 2 "$GTPLAN" sim $R cluster.gpus_per_node=5 --predict-record "$tmp/pd"
contains "predict: batch" "$tmp/err" "gtplan-run refuses this batch"
expect_rc "steps without predict" 2 "$GTPLAN" sim $R --steps 2
expect_rc "predict with plan" 2 "$GTPLAN" plan $R --predict-record "$tmp/pd"
contains "predict: sim only" "$tmp/err" "--predict-record goes with sim only"
expect_rc "steps 0" 2 "$GTPLAN" sim $R --predict-record "$tmp/pd" --steps 0
expect_rc "steps over the limit" 2 "$GTPLAN" sim $R --predict-record "$tmp/pd" --steps 1001
contains "predict: steps limit" "$tmp/err" "--steps 1001 is outside [1, 1000]"
expect_rc "predict unwritable" 2 "$GTPLAN" sim $R --predict-record "$tmp/no/such/dir/p"
contains "predict: unwritable" "$tmp/err" "cannot write"

# ---- NeMo-RL PR #4512's stack: every trap of its pins, through the preset --
expect_rc "pr4512 example" 1 "$GTPLAN" lint examples/pr4512.yaml --color never
for code in GT500 GT701 GT703 GT704 GT705; do
	contains "pr4512 reports $code" "$tmp/err" "error[$code]"
done
expect_rc "explain preset" 0 "$GTPLAN" explain preset nemo-rl-pr4512
contains "explain preset refit" "$tmp/out" "refit_gather"
expect_rc "explain unknown preset" 2 "$GTPLAN" explain preset no-such-stack

# ---- ckpt: reshard a checkpoint between two layouts ----------------------
expect_rc "ckpt reshard" 0 "$GTPLAN" ckpt tests/configs/ckpt/saved.yaml tests/configs/ckpt/loaded.yaml
contains "ckpt reshardable" "$tmp/out" "reshardable"
contains "ckpt optimizer format unset" "$tmp/err" "warning[GT733]"
contains "ckpt GT733 lists EP/ETP changes" "$tmp/err" "ETP 2 -> 4"
contains "ckpt verdict says what reshards" "$tmp/out" "weights reshardable; optimizer state not reshardable in Megatron's default format"
expect_rc "ckpt default format --strict" 1 "$GTPLAN" ckpt tests/configs/ckpt/saved.yaml tests/configs/ckpt/loaded.yaml --strict
contains "ckpt embedding covered" "$tmp/out" "embedding.word_embeddings"
# saved TP 2, G 3, 4 layers: rank 0 holds 4 x 1574400 layer elements, two
# vocab pieces of 5334 x 768 and the final norm (14491392) and writes all
# of them in bf16 plus 12 bytes of optimizer state each: 14 x 14491392
contains "ckpt bytes per rank" "$tmp/out" "saved checkpoint: 31 keys + 18 optimizer keys (dp_reshardable), 6 writers; one rank writes at most 202879488 bytes"
contains "ckpt read bytes" "$tmp/out" "loading: one rank reads at most"
expect_rc "ckpt needs two configs" 2 "$GTPLAN" ckpt tests/configs/ckpt/saved.yaml
# writers of GTP-sharded pieces elected over dp_cp_gtp: the save is
# invalid (GT711) and cannot be resharded (GT732)
expect_rc "ckpt gtp writers" 1 "$GTPLAN" ckpt tests/configs/ckpt/saved_gtp_writers.yaml tests/configs/ckpt/loaded.yaml --color never
contains "ckpt gtp writers GT732" "$tmp/err" "error[GT732]"
contains "ckpt gtp writers not covered" "$tmp/out" "NOT covered"
expect_rc "lint gtp writers" 1 "$GTPLAN" lint tests/configs/ckpt/saved_gtp_writers.yaml --color never
contains "lint gtp writers GT711" "$tmp/err" "error[GT711]"
expect_rc "lint ckpt saved clean" 0 "$GTPLAN" lint --strict tests/configs/ckpt/saved.yaml --color never
# dp_reshardable does not survive a TP change
expect_rc "ckpt dp_reshardable" 1 "$GTPLAN" ckpt tests/configs/ckpt/saved_dp_reshardable.yaml tests/configs/ckpt/loaded.yaml --color never
contains "ckpt dp_reshardable GT734" "$tmp/err" "error[GT734]"
contains "ckpt dp_reshardable verdict" "$tmp/out" "not reshardable: optimizer state"

# ---- explain -------------------------------------------------------------
expect_rc "explain code" 0 "$GTPLAN" explain GT303
contains "explain text" "$tmp/out" "TP x CP x G x PP"
expect_rc "explain code lower-case" 0 "$GTPLAN" explain gt300
expect_rc "explain unknown code" 2 "$GTPLAN" explain GT999
expect_rc "explain list" 0 "$GTPLAN" explain --list
contains "explain list has GT101" "$tmp/out" "GT101"
expect_rc "explain rank" 0 "$GTPLAN" explain "$D" --rank 13
contains "rank node" "$tmp/out" "node 1, local GPU 5"
contains "rank coords" "$tmp/out" "tp 1, cp 0, gtp 0, dp_replicate 1, pp 0"
contains "rank lane" "$tmp/out" "lane 3 of 6"
contains "rank gtp group" "$tmp/out" "[13, 17, 21]"
expect_rc "explain rank out of range" 2 "$GTPLAN" explain "$D" --rank 24

# ---- overrides point at the command line ---------------------------------
expect_rc "override world" 1 "$GTPLAN" lint "$D" cluster.num_nodes=2 --color never
contains "override GT303" "$tmp/err" "error[GT303]"
contains "override location" "$tmp/err" "command line:1:19: error[GT303]"
expect_rc "override missing key" 1 "$GTPLAN" lint "$D" cluster.num_nodez=2 --color never
contains "override GT121" "$tmp/err" "error[GT121]"
expect_rc "override fixes" 0 "$GTPLAN" lint "$D" policy.train_global_batch_size=960

# ---- formats ---------------------------------------------------------------
expect_rc "json format" 1 "$GTPLAN" lint "$D" cluster.num_nodes=2 --format json
cp "$tmp/out" "$tmp/saved"
expect_rc "json parses" 0 "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "gtplan-diagnostics/1"
codes = [x["code"] for x in d["diagnostics"]]
assert "GT303" in codes, codes
assert d["summary"]["errors"] >= 1' "$tmp/saved"
expect_rc "sarif format" 1 "$GTPLAN" lint tests/configs/bad/world-not-divisible.yaml --format sarif
cp "$tmp/out" "$tmp/saved"
expect_rc "sarif shape" 0 "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["version"] == "2.1.0"
run = d["runs"][0]
ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
res = run["results"]
assert res and all(r["ruleId"] in ids for r in res)
loc = res[0]["locations"][0]["physicalLocation"]
assert loc["artifactLocation"]["uri"].endswith("world-not-divisible.yaml")
assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1
for r in run["tool"]["driver"]["rules"]:
    assert r["help"]["text"] and r["shortDescription"]["text"]' "$tmp/saved"

# ---- warnings count with --strict ----------------------------------------
W=tests/configs/bad/unknown-key-typo.yaml
expect_rc "warning only" 0 "$GTPLAN" lint "$W"
expect_rc "warning with --strict" 1 "$GTPLAN" lint "$W" --strict

# ---- valgrind: the release binary, leak- and error-free -------------------
if command -v valgrind >/dev/null && [ -x build/gtplan ]; then
	for run in "1 lint $D cluster.num_nodes=2" "0 plan $D -o /dev/null" \
		"1 lint tests/configs/bad/inherited-world.yaml --format sarif"; do
		want=${run%% *} args=${run#* }
		# shellcheck disable=SC2086
		expect_rc "valgrind $args" "$want" valgrind -q --leak-check=full \
			--errors-for-leak-kinds=all --error-exitcode=99 build/gtplan $args
		[ "$(grep -c '==[0-9]*==' "$tmp/err")" -eq 0 ] && ok || bad "valgrind $args: reports"
	done
else
	skip=$((skip + 3)); echo "e2e: valgrind or build/gtplan missing: skipped"
fi

# ---- run: plan, then mpirun -np W gtplan-run --------------------------------
R=tests/runtime/parity.yaml
M=policy.megatron_cfg
fake="$tmp/bin dir"; mkdir -p "$fake"
printf '#!/bin/sh\n' >"$fake/gtplan-run"
# a fake mpirun that records that it ran
printf '#!/bin/sh\necho ran >"%s/mpirun-ran"\n' "$tmp" >"$fake/mpirun"
chmod +x "$fake/gtplan-run" "$fake/mpirun"
expect_rc "run dry-run" 0 "$GTPLAN" run "$R" cluster.gpus_per_node=6 $M.tensor_model_parallel_size=2 \
	$M.tensor_parallel_num_weight_shards=6 --steps 2 --log "my log.jsonl" --dry-run \
	--gtplan-run "$fake/gtplan-run" -- --save "it's here"
want="mpirun -np 6 '$fake/gtplan-run' PLAN.json --steps 2 --log 'my log.jsonl' --save 'it'\\''s here'"
if [ "$(cat "$tmp/out")" = "$want" ]; then ok; else bad "run dry-run: got '$(cat "$tmp/out")', want '$want'"; fi
expect_rc "run dry-run options" 0 env GTPLAN_MPIRUN=/opt/mpi/bin/mpirun "$GTPLAN" run "$R" \
	cluster.gpus_per_node=2 $M.tensor_parallel_num_weight_shards=2 --oversubscribe --allow-run-as-root \
	--gtplan-run "$fake/gtplan-run" --dry-run -o "$tmp/kept.json" --device=cpu
want="/opt/mpi/bin/mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 '$fake/gtplan-run' $tmp/kept.json --device cpu"
if [ "$(cat "$tmp/out")" = "$want" ]; then ok; else bad "run dry-run options: got '$(cat "$tmp/out")', want '$want'"; fi
expect_rc "run -o plan schema" 0 "$PY" tests/check_plan_schema.py schemas/plan.schema.json "$tmp/kept.json"
# a plan with errors (12 samples over 5 lanes) is refused, mpirun never starts
expect_rc "run refuses errors" 1 "$GTPLAN" run "$R" cluster.gpus_per_node=5 --mpirun "$fake/mpirun" \
	--gtplan-run "$fake/gtplan-run" --color never
contains "run refusal finding" "$tmp/err" "error[GT400]"
contains "run refusal says --force" "$tmp/err" "the plan has 1 error; fix the config, or pass --force to run it anyway"
if [ -e "$tmp/mpirun-ran" ]; then bad "run refused but mpirun ran"; else ok; fi
expect_rc "run --force" 0 "$GTPLAN" run "$R" cluster.gpus_per_node=5 --mpirun "$fake/mpirun" \
	--gtplan-run "$fake/gtplan-run" --force --color never
if [ -e "$tmp/mpirun-ran" ]; then ok; else bad "run --force did not start mpirun"; fi
expect_rc "run no grid" 1 "$GTPLAN" run tests/configs/bad/world-not-divisible.yaml --dry-run --gtplan-run "$fake/gtplan-run"
contains "run no grid says so" "$tmp/err" "nothing to run"
expect_rc "run no mpirun" 2 "$GTPLAN" run "$R" --mpirun /nonexistent/mpirun --gtplan-run "$fake/gtplan-run"
contains "run no mpirun hint" "$tmp/err" "hint: install Open MPI"
expect_rc "run no mpirun (env)" 2 env GTPLAN_MPIRUN=no-such-mpirun "$GTPLAN" run "$R" --gtplan-run "$fake/gtplan-run"
contains "run no mpirun (env) names it" "$tmp/err" "cannot find 'no-such-mpirun' on PATH"
expect_rc "run no gtplan-run" 2 "$GTPLAN" run "$R" --gtplan-run /nonexistent/gtplan-run --dry-run
contains "run no gtplan-run hint" "$tmp/err" "hint: build it (make build/gtplan-run)"
expect_rc "run needs a config" 2 "$GTPLAN" run --steps 2
expect_rc "run option without value" 2 "$GTPLAN" run "$R" --steps
expect_rc "run -o stdout" 2 "$GTPLAN" run "$R" -o -
expect_rc "run help" 0 "$GTPLAN" help run
contains "run help usage" "$tmp/out" "usage: gtplan run CONFIG"
# the real thing: 2 CPU ranks (TP 1 x GTP 2), 2 steps, under Open MPI
RUN_BIN=$(realpath "${GTPLAN_RUN:-build/gtplan-run}" 2>/dev/null)
if ! command -v mpirun >/dev/null 2>&1; then
	echo "SKIP: gtplan run under mpirun: mpirun not found (make deps-test installs Open MPI)"; skip=$((skip + 4))
elif [ ! -x "$RUN_BIN" ]; then
	echo "SKIP: gtplan run under mpirun: build/gtplan-run not built (make build/gtplan-run)"; skip=$((skip + 4))
else
	if [ "$(id -u)" -eq 0 ]; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	fi
	mkdir -p "$tmp/tmpdir"
	expect_rc "run 2 ranks" 0 env TMPDIR="$tmp/tmpdir" OPENBLAS_NUM_THREADS=1 timeout 120 "$GTPLAN" run "$R" \
		cluster.gpus_per_node=2 $M.tensor_parallel_num_weight_shards=2 --steps 2 --oversubscribe \
		--gtplan-run "$RUN_BIN" --log "$tmp/run.log"
	contains "run 2 ranks trained" "$tmp/out" "gtplan-run: 2 steps, loss"
	if [ "$(wc -l <"$tmp/run.log")" -eq 2 ]; then ok; else bad "run 2 ranks: --log has $(wc -l <"$tmp/run.log") lines, want 2"; fi
	if ls "$tmp/tmpdir" | grep -q gtplan-plan; then bad "run left its temporary plan"; else ok; fi
	# gtplan-run's own usage error comes back as 2
	expect_rc "run gtplan-run usage error" 2 env OPENBLAS_NUM_THREADS=1 timeout 120 "$GTPLAN" run "$R" \
		--gtplan-run "$RUN_BIN" -- --bogus x
fi

# ---- exit codes and usage ---------------------------------------------------
expect_rc "missing file" 2 "$GTPLAN" lint /nonexistent.yaml
contains "missing file message" "$tmp/err" "cannot read '/nonexistent.yaml'"
expect_rc "no command" 2 "$GTPLAN"
expect_rc "unknown command" 2 "$GTPLAN" frobnicate
expect_rc "unknown option" 2 "$GTPLAN" lint "$D" --frob
expect_rc "bad format" 2 "$GTPLAN" lint "$D" --format xml
expect_rc "help" 0 "$GTPLAN" --help
contains "help lists lint" "$tmp/out" "lint CONFIG"
contains "help lists run" "$tmp/out" "run CONFIG"
expect_rc "command help" 0 "$GTPLAN" plan --help
contains "plan help" "$tmp/out" "usage: gtplan plan"
expect_rc "version" 0 "$GTPLAN" --version
expect_rc "config json" 0 "$GTPLAN" config "$D"
cp "$tmp/out" "$tmp/saved"
expect_rc "config json parses" 0 "$PY" -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert c["policy"]["megatron_cfg"]["tensor_parallel_num_weight_shards"] == 12' "$tmp/saved"
# invalid UTF-8 from an override still gives valid JSON (U+FFFD)
expect_rc "config invalid utf-8" 0 "$GTPLAN" config "$D" "+gtplan_note='a$(printf '\377')b'"
cp "$tmp/out" "$tmp/saved"
expect_rc "config invalid utf-8 is JSON" 0 "$PY" -c '
import json, sys
assert json.load(open(sys.argv[1], encoding="utf-8"))["gtplan_note"] == "a\ufffdb"' "$tmp/saved"

echo "e2e: $pass passed, $fail failed"
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
