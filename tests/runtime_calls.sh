#!/usr/bin/env bash
# gtplan-run's calls beyond train, on CPU under `mpirun --oversubscribe`:
#   tests/runtime_calls.sh     prints "RESULT passed failed skipped" last
# 1. get_logprobs (--logprobs) and the refit export (--export DIR: a Hugging
#    Face model directory) after two Adam steps on the default --data:
#    TP2xG3 (6 ranks), TP1xG2xD2 (4), TP2xG2xD2 (8), TP2xCP2xG2 (8) and TP2
#    with sequence parallelism (2) against the single-rank run, and
#    decoder.yaml's
#    model (tied, qkv bias, QK-norm) on TP2xG3: logprobs within 1e-5
#    relative, exports normwise within 1e-5, each export exactly its own
#    run's --dump-weights in Hugging Face's names and row order, the
#    export's logprobs recomputed in float64 from model.safetensors and
#    config.json alone (tests/runtime_decoder.py; transformers too where it
#    imports) on the logged input_ids, get_logprobs' records exactly
#    train's forward (tests/runtime_calls.py) and the plan's groups
#    (runtime_records.py);
# 2. the wrong refit gather orders (docs/design.md §2.5) on TP2xG3's initial weights:
#    tp_only (--refit-gather) gives R/G rows, tp_then_gtp (the plan's
#    stack.refit_gather) the interleaved rows, both exactly as predicted;
# 3. float64 (tests/runtime_decoder.py): the single-rank logprobs of the
#    step after the last, on the default text after one SGD step and on the
#    synthetic text with --steps 0;
# 4. --data: the start-up note names the text; missing, empty and too large
#    files and bad orders are refused with exit 2;
# 5. the plan's step estimate (runtime_estimate, sim/step_est.h): a bf16
#    plan's step_s is every --log line's predicted_step_s and the summary
#    shows it; an fp32 plan (no estimate) and a --global-batch override
#    (another batch than the plan's) log none.
# Every mpirun runs under `timeout`, so a hang fails instead of blocking.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/runtime_lib.sh
GPL=/usr/share/common-licenses/GPL-3
DATA=$GPL # gtplan-run's default --data
[ -r "$DATA" ] || DATA=synthetic
# show PREFIX: the last check's output, indented
show() { sed "s/^/    $1: /" "$tmp/out"; }
# refuse NAME RC TEXT CMD...: CMD must exit RC, saying TEXT (runtime_lib.sh's
# refuse, with the exit status wanted)
refuse() {
	local name=$1 want=$2 text=$3; shift 3
	"$@" >"$tmp/out" 2>&1; local rc=$?
	if [ "$rc" -eq "$want" ] && grep -qF -- "$text" "$tmp/out"; then ok; else
		bad "$name: exit $rc, want $want saying '$text'"; sed 's/^/    /' "$tmp/out" | tail -10; fi
}
plan() { # NAME NP OVERRIDE...
	local name=$1 np=$2; shift 2
	check "plan $name" "$GTPLAN" plan "$CFG" cluster.gpus_per_node="$np" "$@" -o "$tmp/$name.json"
}
calls() { "$PY" tests/runtime_calls.py "$@"; }

start=$(date +%s)

# ---- 1. get_logprobs and the export across layouts ------------------------
# name ranks micro-batches-per-lane overrides
# name ranks micro-batches-per-lane reference overrides
layouts=(
	"ref 1 12 ref"
	"tp2g3 6 4 ref $M.tensor_model_parallel_size=2 $M.tensor_parallel_num_weight_shards=6"
	"tp1g2d2 4 3 ref $M.tensor_parallel_num_weight_shards=2"
	"tp2g2d2 8 3 ref $M.tensor_model_parallel_size=2 $M.tensor_parallel_num_weight_shards=4"
	"tp2cp2g2 8 6 ref $M.tensor_model_parallel_size=2 $M.tensor_parallel_num_weight_shards=4 $M.context_parallel_size=2 policy.sequence_packing.enabled=true"
	"tp2sp 2 12 ref $M.tensor_model_parallel_size=2 +$M.sequence_parallel=true"
	"dref 1 12 dref"
	"dtp2g3 6 4 dref $M.tensor_model_parallel_size=2 $M.tensor_parallel_num_weight_shards=6"
)
for row in "${layouts[@]}"; do
	read -r name np mbs base overrides <<<"$row"
	case $name in d*) cfg=tests/runtime/decoder.yaml ;; *) cfg=$CFG ;; esac
	# shellcheck disable=SC2086 # the overrides are words
	CFG=$cfg plan "$name" "$np" $overrides
	check "run $name" mpi "$np" "$tmp/$name.json" --steps 2 --logprobs "$tmp/$name.lp" \
		--export "$tmp/$name.hf" --dump-weights "$tmp/$name.w" --record "$tmp/$name.rec"
	[ "$name" = ref ] && grep -q "note: data: " "$tmp/out" && sed -n 's/.*note: data: /    data: /p' "$tmp/out"
	check "export = dump $name" calls dump "$tmp/$name.json" "$tmp/$name.hf/model.safetensors" "$tmp/$name.w"
	check "export's logprobs $name" calls hf "$tmp/$name.hf" "$tmp/$name.lp"
	show "$name"
	check "records $name" "$PY" tests/runtime_records.py "$tmp/$name.json" "$tmp/$name.rec" "$mbs"
	check "get_logprobs records $name" calls records "$tmp/$name.json" "$tmp/$name.rec"
	[ "$name" = "$base" ] && continue
	show "$name records"
	check "logprobs $name" calls logprobs "$TOL" "$tmp/$base.lp" "$tmp/$name.lp"
	show "$name"
	check "export $name" calls export "$TOL" "$tmp/$base.hf/model.safetensors" "$tmp/$name.hf/model.safetensors"
	show "$name"
done
check "config.json" "$PY" - "$tmp/ref.hf/config.json" "$tmp/dref.hf/config.json" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["architectures"] == ["LlamaForCausalLM"] and not a["tie_word_embeddings"], a
assert (a["hidden_size"], a["intermediate_size"], a["num_attention_heads"],
        a["num_key_value_heads"], a["head_dim"], a["vocab_size"]) == (40, 96, 4, 4, 10, 255), a
assert b["architectures"] == ["Qwen3ForCausalLM"] and b["tie_word_embeddings"], b
assert (b["num_key_value_heads"], b["head_dim"], b["rope_theta"], b["rms_norm_eps"],
        b["num_hidden_layers"]) == (2, 8, 500000, 1e-6, 2), b
EOF

# ---- 2. the wrong refit gather orders (docs/design.md §2.5) ---------------
check "export ref, initial" mpi 1 "$tmp/ref.json" --steps 0 --export "$tmp/good.safetensors"
check "export tp_only" mpi 6 "$tmp/tp2g3.json" --steps 0 --refit-gather tp_only --export "$tmp/tponly.safetensors"
check "order tp_only" calls order tp_only "$tmp/tp2g3.json" "$tmp/good.safetensors" "$tmp/tponly.safetensors"
show "tp2g3"
# the order from the config: gtplan.stack.refit_gather reaches gtplan-run
# through the plan's "stack" (the plan has GT702, the same trap, and is
# still written)
plan_stack() {
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=6 $M.tensor_model_parallel_size=2 \
		$M.tensor_parallel_num_weight_shards=6 +gtplan.stack.refit_gather=tp_then_gtp \
		-o "$tmp/tpg.json" >"$tmp/tpg.diag" 2>&1
	# GT702 names the rows gtplan-run's export returns (checked below)
	[ $? -eq 1 ] && grep -q "error\[GT702\].*layers.0.fc1 (gtplan-run's model) comes back with rows 0-31, 96-127, 32-63, 128-159," "$tmp/tpg.diag" &&
		grep -q '"refit_gather": "tp_then_gtp"' "$tmp/tpg.json"
}
check "plan with gtplan.stack.refit_gather" plan_stack
check "export tp_then_gtp" mpi 6 "$tmp/tpg.json" --force --steps 0 --export "$tmp/tpg.safetensors"
check "order tp_then_gtp" calls order tp_then_gtp "$tmp/tp2g3.json" "$tmp/good.safetensors" "$tmp/tpg.safetensors"
show "tp2g3"
# the option overrides the plan's order
check "export --refit-gather over the plan" mpi 6 "$tmp/tpg.json" --force --steps 0 --refit-gather gtp_then_tp --export "$tmp/tpg2.safetensors"
check "gtp_then_tp = single rank" calls export 0 "$tmp/good.safetensors" "$tmp/tpg2.safetensors"

# ---- 3. float64 logprobs ---------------------------------------------------
plan fd 1 gtplan.runtime.hidden=16 gtplan.runtime.ffn=32 gtplan.runtime.seq_len=16 \
	gtplan.runtime.lr=10 policy.train_global_batch_size=2
check "fd after a step" mpi 1 "$tmp/fd.json" --steps 1 --optimizer sgd --dump-weights "$tmp/fd1.w" --logprobs "$tmp/fd1.lp"
check "float64 logprobs, $DATA" calls float64 "$tmp/fd.json" "$tmp/fd1.w" "$tmp/fd1.lp"
show "reference"
check "fd synthetic, logprobs alone" mpi 1 "$tmp/fd.json" --data synthetic --steps 0 --dump-weights "$tmp/fd0.w" --logprobs "$tmp/fd0.lp"
if grep -q "note: data: the synthetic text" "$tmp/out"; then ok; else bad "--data synthetic: no note naming it"; fi
check "float64 logprobs, synthetic" calls float64 "$tmp/fd.json" "$tmp/fd0.w" "$tmp/fd0.lp"
show "reference"
# a file of our own: the samples are its bytes
printf 'abcdefghij' >"$tmp/ten.txt"
check "fd on a 10-byte file" mpi 1 "$tmp/fd.json" --data "$tmp/ten.txt" --steps 0 --dump-weights "$tmp/ften.w" --logprobs "$tmp/ften.lp"
check "float64 logprobs, 10-byte file" calls float64 "$tmp/fd.json" "$tmp/ften.w" "$tmp/ften.lp"
check "input_ids of the 10-byte file" "$PY" -c 'import json, sys
ids = json.load(open(sys.argv[1]))["input_ids"]
assert all(set(r) <= set(b"abcdefghij") for r in ids), ids' "$tmp/ften.lp"

# ---- 4. refusals -------------------------------------------------------------
refuse "missing --data" 2 "--data: cannot read '$tmp/none.txt'" mpi 1 "$tmp/ref.json" --data "$tmp/none.txt"
refuse "missing --data, 4 ranks" 2 "--data: cannot read '$tmp/none.txt'" mpi 4 "$tmp/tp1g2d2.json" --data "$tmp/none.txt"
n=$(grep -c "cannot read" "$tmp/out")
if [ "$n" -eq 1 ]; then ok; else bad "missing --data on 4 ranks: reported $n times, want once (by rank 0)"; fi
refuse "directory as --data" 2 "is not a regular file" mpi 1 "$tmp/ref.json" --data "$tmp"
: >"$tmp/empty.txt"
refuse "empty --data" 2 "is empty" mpi 1 "$tmp/ref.json" --data "$tmp/empty.txt"
truncate -s $((64 * 1024 * 1024 + 1)) "$tmp/big.txt"
refuse "--data too large" 2 "has 67108865 bytes, more than the limit of 67108864" mpi 1 "$tmp/ref.json" --data "$tmp/big.txt"
rm -f "$tmp/big.txt"
refuse "bad --refit-gather" 2 "--refit-gather is gtp_then_tp, tp_then_gtp or tp_only, not 'gtp_first'" \
	mpi 1 "$tmp/ref.json" --refit-gather gtp_first
"$PY" -c 'import json, sys
p = json.load(open(sys.argv[1])); p["stack"] = {"refit_gather": "tp_last"}
json.dump(p, open(sys.argv[2], "w"))' "$tmp/ref.json" "$tmp/badstack.json"
refuse "bad stack.refit_gather" 1 "plan: stack.refit_gather must be" mpi 1 "$tmp/badstack.json"
refuse "unwritable --export" 2 "--export: cannot write" mpi 1 "$tmp/ref.json" --steps 0 --export "$tmp/no/such/dir.st"

# 5. the estimate next to the measured step
"$GTPLAN" plan "$CFG" gtplan.runtime.dtype=bf16 -o "$tmp/est.json" >/dev/null 2>&1
check "estimate: 2 bf16 steps" mpi 1 "$tmp/est.json" --steps 2 --log "$tmp/est.log"
grep -q "estimated by the plan (attention_bwd" "$tmp/out" && ok || bad "estimate: the summary names no estimate"
"$PY" -c 'import json, sys
want = round(json.load(open(sys.argv[1]))["runtime_estimate"]["step_s"], 6)
got = [json.loads(x)["predicted_step_s"] for x in open(sys.argv[2])]
sys.exit(not (want > 0 and got == [want, want]))' "$tmp/est.json" "$tmp/est.log" &&
	ok || bad "estimate: --log's predicted_step_s is not the plan's step_s"
check "estimate: fp32" mpi 1 "$tmp/ref.json" --steps 1 --log "$tmp/est32.log"
check "estimate: batch override" mpi 1 "$tmp/est.json" --steps 1 --global-batch 1 --log "$tmp/estgb.log"
if grep -q predicted_step_s "$tmp/est32.log" "$tmp/estgb.log"; then
	bad "estimate: a log without the plan's estimate has predicted_step_s"; else ok; fi

echo "runtime calls: $(($(date +%s) - start)) s"
finish
