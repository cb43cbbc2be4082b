#!/usr/bin/env bash
# gtplan-run's sharded checkpoints (--save, --load) on CPU under mpirun:
#   tests/runtime_ckpt.sh     prints "RESULT passed failed skipped" last
# (a) 4 steps = 2 steps, --save, --load, 2 more under the same layout
#     (TP2xG3, 6 ranks; and in bf16 on one rank and TP2xG3): every step's
#     loss and the final weights equal;
# (b) that TP2xG3 checkpoint resumed under TP1xG2xD2 (4 ranks), TP2 with
#     sequence parallelism (2 ranks), TP1xCP2 (2 ranks; only cp 0 writes)
#     and on one rank, and a TP1xCP2 checkpoint (the p2p ring) resumed on
#     one rank (CP 1): losses and final
#     weights against the uninterrupted single-rank run within 1e-5
#     (tests/runtime_compare.py); --save-every; decoder.yaml's model (tied,
#     qkv bias, QK-norm) saved under TP2xG3 and resumed under TP1xG2xD2;
# (c) refusals: another model size, another seed, no checkpoint,
#     truncated metadata, another format version, a missing, truncated,
#     corrupt or non-regular (FIFO) piece file, pieces that leave an element
#     uncovered or cover one twice (dropped, repeated, moved by a row, a row
#     short), a piece outside its tensor or at an offset of 2^63 - 8
#     (offset + shape would wrap), an optimizer block that is missing,
#     counts another step or names another optimizer, a damaged `latest`,
#     --save-every or --keep without --save; a save that fails before it
#     publishes leaves `latest` and a foreign file as they were;
# (e) step directories: `latest`, --keep, a re-save of the latest step,
#     leftovers of a crashed save removed; then 6 kill -9 at random moments
#     (the whole job, or one rank) while --save-every 1 runs, each resumed
#     from `latest`: its step directory byte-identical to an uninterrupted
#     run's of that step, the next step's loss bit-identical;
# (f) divergence (an enormous gtplan.runtime.lr): exit 1 naming the step,
#     the log valid JSON (the loss null), `latest` the last finite step;
#     refusals before any allocation: a global batch past the limit, sizes
#     past 2^50 elements, logits past the host's memory, --mem-budget at
#     exactly the bytes the rank needs and one byte less;
# (d) tests/runtime_ckpt_check.py on a TP2xG3, a TP1xG2xD2 (D = 2: only
#     replica 0 writes), a TP2 SP and decoder.yaml's checkpoints: keys,
#     coverage exactly once, the main replicas' pieces, checksums, values
#     equal to --dump-weights; their metadata against schemas/ckpt.schema.json.
# Every mpirun runs under `timeout`.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/runtime_lib.sh
plan() { # NAME NP OVERRIDE...
	local name=$1 np=$2; shift 2
	check "plan $name" "$GTPLAN" plan "$CFG" cluster.gpus_per_node="$np" "$@" -o "$tmp/$name.json"
}
stepdir() { echo "$1/$(cat "$1/latest")"; } # --save DIR's latest checkpoint
losses_equal() { # LOG LOG: the same steps and bit-identical losses
	"$PY" -c 'import json, sys
a, b = ([(r["step"], r["loss"]) for r in map(json.loads, open(f))] for f in sys.argv[1:])
assert a == b and len(a) == 4, (a, b)' "$1" "$2"
}

start=$(date +%s)
plan ref 1
plan tp2g3 6 $M.tensor_model_parallel_size=2 $M.tensor_parallel_num_weight_shards=6
plan tp1g2d2 4 $M.tensor_parallel_num_weight_shards=2
plan tp2sp 2 $M.tensor_model_parallel_size=2 +$M.sequence_parallel=true
plan cp2 2 $M.context_parallel_size=2 policy.sequence_packing.enabled=true

# ---- (a) the same layout: exactly the uninterrupted run -------------------
check "tp2g3 4 steps" mpi 6 "$tmp/tp2g3.json" --log "$tmp/full.log" --dump-weights "$tmp/full.w"
check "tp2g3 2 steps, save" mpi 6 "$tmp/tp2g3.json" --steps 2 --save "$tmp/ck6" \
	--log "$tmp/a1.log" --dump-weights "$tmp/a1.w"
check "tp2g3 load, 2 more" mpi 6 "$tmp/tp2g3.json" --load "$tmp/ck6" \
	--log "$tmp/a2.log" --dump-weights "$tmp/a2.w"
cat "$tmp/a1.log" "$tmp/a2.log" >"$tmp/a.log"
check "same layout: losses equal" losses_equal "$tmp/full.log" "$tmp/a.log"
if cmp -s "$tmp/full.w" "$tmp/a2.w"; then ok; else bad "same layout: final weights differ"; fi
check "same layout within 1e-6" "$PY" tests/runtime_compare.py 1e-6 max \
	"$tmp/full.log" "$tmp/full.w" "$tmp/a.log" "$tmp/a2.w"
# bf16 (one rank and TP2xG3): the weights' bf16 copy, which Adam keeps
# up to date, is made again from the loaded weights (rt_weights_refresh):
# the resumed run equals the uninterrupted one bit for bit
for bl in "bf1 1" "bftp2g3 6 $M.tensor_model_parallel_size=2 $M.tensor_parallel_num_weight_shards=6"; do
	read -r bn bnp bov <<<"$bl"
	# shellcheck disable=SC2086 # the overrides are words
	plan "$bn" "$bnp" gtplan.runtime.dtype=bf16 $bov
	check "$bn 4 steps" mpi "$bnp" "$tmp/$bn.json" --log "$tmp/$bn.full.log" \
		--dump-weights "$tmp/$bn.full.w"
	check "$bn 2 steps, save" mpi "$bnp" "$tmp/$bn.json" --steps 2 --save "$tmp/$bn.ck" \
		--log "$tmp/$bn.a1.log"
	check "$bn load, 2 more" mpi "$bnp" "$tmp/$bn.json" --load "$tmp/$bn.ck" \
		--log "$tmp/$bn.a2.log" --dump-weights "$tmp/$bn.a2.w"
	cat "$tmp/$bn.a1.log" "$tmp/$bn.a2.log" >"$tmp/$bn.a.log"
	check "$bn resumed: losses equal" losses_equal "$tmp/$bn.full.log" "$tmp/$bn.a.log"
	if cmp -s "$tmp/$bn.full.w" "$tmp/$bn.a2.w"; then ok; else
		bad "$bn resumed: final weights differ"; fi
done

# ---- (b) resharded: TP2xG3 -> TP1xG2xD2, -> 1 rank ------------------------
check "single rank 4 steps" mpi 1 "$tmp/ref.json" --log "$tmp/ref.log" --dump-weights "$tmp/ref.w"
check "tp1g2d2 load" mpi 4 "$tmp/tp1g2d2.json" --load "$tmp/ck6" --log "$tmp/b4.log" \
	--dump-weights "$tmp/b4.w" --save "$tmp/ck4" --save-every 1
for s in 3 4; do
	if grep -q "checkpoint of step $s saved to $tmp/ck4" "$tmp/out"; then ok; else
		bad "--save-every 1: no save after step $s"; fi
done
cat "$tmp/a1.log" "$tmp/b4.log" >"$tmp/b4all.log"
check "tp2g3 -> tp1g2d2 parity" "$PY" tests/runtime_compare.py "$TOL" norm \
	"$tmp/ref.log" "$tmp/ref.w" "$tmp/b4all.log" "$tmp/b4.w"
sed 's/^/    tp2g3 -> tp1g2d2: /' "$tmp/out"
check "1 rank load" mpi 1 "$tmp/ref.json" --load "$tmp/ck6" --log "$tmp/b1.log" --dump-weights "$tmp/b1.w"
cat "$tmp/a1.log" "$tmp/b1.log" >"$tmp/b1all.log"
check "tp2g3 -> 1 rank parity" "$PY" tests/runtime_compare.py "$TOL" norm \
	"$tmp/ref.log" "$tmp/ref.w" "$tmp/b1all.log" "$tmp/b1.w"
sed 's/^/    tp2g3 -> 1 rank: /' "$tmp/out"
# sequence parallelism: TP 2 with its norm gradients summed over TP
check "tp2sp load" mpi 2 "$tmp/tp2sp.json" --load "$tmp/ck6" --log "$tmp/cp.log" \
	--dump-weights "$tmp/cp.w" --save "$tmp/ckcp"
cat "$tmp/a1.log" "$tmp/cp.log" >"$tmp/cpall.log"
check "tp2g3 -> tp2sp parity" "$PY" tests/runtime_compare.py "$TOL" norm \
	"$tmp/ref.log" "$tmp/ref.w" "$tmp/cpall.log" "$tmp/cp.w"
sed 's/^/    tp2g3 -> tp2sp: /' "$tmp/out"
# CP changes too: TP1xCP2 (2 ranks), whose cp-1 rank must not write
check "cp2 load" mpi 2 "$tmp/cp2.json" --load "$tmp/ck6" --log "$tmp/cp2.log" \
	--dump-weights "$tmp/cp2.w" --save "$tmp/ckcp2"
cat "$tmp/a1.log" "$tmp/cp2.log" >"$tmp/cp2all.log"
check "tp2g3 -> cp2 parity" "$PY" tests/runtime_compare.py "$TOL" norm \
	"$tmp/ref.log" "$tmp/ref.w" "$tmp/cp2all.log" "$tmp/cp2.w"
sed 's/^/    tp2g3 -> cp2: /' "$tmp/out"
check "check ckcp2" "$PY" tests/runtime_ckpt_check.py "$tmp/ckcp2" "$tmp/cp2.json" "$tmp/cp2.w"
sed 's/^/    cp2: /' "$tmp/out"
# and back: 2 steps under TP1xCP2, saved, 2 more on one rank (CP 1)
check "cp2 2 steps, save" mpi 2 "$tmp/cp2.json" --steps 2 --save "$tmp/ckc2" --log "$tmp/c1.log"
check "cp2 -> 1 rank load" mpi 1 "$tmp/ref.json" --load "$tmp/ckc2" --log "$tmp/c2.log" \
	--dump-weights "$tmp/c2.w"
cat "$tmp/c1.log" "$tmp/c2.log" >"$tmp/c2all.log"
check "cp2 -> 1 rank parity" "$PY" tests/runtime_compare.py "$TOL" norm \
	"$tmp/ref.log" "$tmp/ref.w" "$tmp/c2all.log" "$tmp/c2.w"
sed 's/^/    cp2 -> 1 rank: /' "$tmp/out"
# decoder.yaml: tied output, qkv bias (TP-split, GTP-replicated), QK norms;
# SGD, element by element (Adam amplifies one near-zero gradient: see
# tests/runtime_parity.sh)
D=tests/runtime/decoder.yaml
CFG=$D plan dref 1
CFG=$D plan dtp2g3 6 $M.tensor_model_parallel_size=2 $M.tensor_parallel_num_weight_shards=6
CFG=$D plan dtp1g2d2 4 $M.tensor_parallel_num_weight_shards=2
check "decoder 3 steps" mpi 1 "$tmp/dref.json" --optimizer sgd --lr 1 --log "$tmp/dref.log" --dump-weights "$tmp/dref.w"
check "decoder tp2g3 1 step, save" mpi 6 "$tmp/dtp2g3.json" --optimizer sgd --lr 1 --steps 1 \
	--save "$tmp/ckd" --log "$tmp/d1.log" --dump-weights "$tmp/d1.w"
check "decoder tp1g2d2 load" mpi 4 "$tmp/dtp1g2d2.json" --optimizer sgd --lr 1 --load "$tmp/ckd" \
	--log "$tmp/d2.log" --dump-weights "$tmp/d2.w"
cat "$tmp/d1.log" "$tmp/d2.log" >"$tmp/dall.log"
check "decoder tp2g3 -> tp1g2d2 parity" "$PY" tests/runtime_compare.py "$TOL" max \
	"$tmp/dref.log" "$tmp/dref.w" "$tmp/dall.log" "$tmp/d2.w"
sed 's/^/    decoder tp2g3 -> tp1g2d2: /' "$tmp/out"
check "check ckd" "$PY" tests/runtime_ckpt_check.py "$tmp/ckd" "$tmp/dtp2g3.json" "$tmp/d1.w"
sed 's/^/    decoder tp2g3: /' "$tmp/out"

# ---- (d) the checkpoints on their own -------------------------------------
check "check ck6" "$PY" tests/runtime_ckpt_check.py "$tmp/ck6" "$tmp/tp2g3.json" "$tmp/a1.w"
sed 's/^/    tp2g3: /' "$tmp/out"
check "check ckcp" "$PY" tests/runtime_ckpt_check.py "$tmp/ckcp" "$tmp/tp2sp.json" "$tmp/cp.w"
sed 's/^/    tp2sp: /' "$tmp/out"
check "check ck4" "$PY" tests/runtime_ckpt_check.py "$tmp/ck4" "$tmp/tp1g2d2.json" "$tmp/b4.w"
sed 's/^/    tp1g2d2: /' "$tmp/out"
for d in ck6 ck4 ckcp ckcp2 ckc2 ckd; do
	check "schema $d" "$PY" tests/check_plan_schema.py schemas/ckpt.schema.json "$(stepdir "$tmp/$d")/metadata.json"
done
# the checker fails on a checkpoint that is not the plan's
refuse "checker: wrong plan" "want the main replicas'" \
	"$PY" tests/runtime_ckpt_check.py "$tmp/ck4" "$tmp/tp2g3.json"

# ---- (c) refusals ---------------------------------------------------------
# damaged copies of ck4 (2 files), loaded on one rank, which reads them all
damaged() { # NAME: a fresh copy of ck4's step directory at $tmp/NAME
	rm -rf "${tmp:?}/$1"; cp -r "$(stepdir "$tmp/ck4")" "$tmp/$1"
}
load1() { mpi 1 "$tmp/ref.json" --steps 4 --load "$@"; }
plan h48 1 gtplan.runtime.hidden=48
refuse "model size" "the checkpoint's model is hidden 40, ffn 96, 2 layers, vocab 255; the plan's is hidden 48" \
	mpi 1 "$tmp/h48.json" --load "$tmp/ck4"
plan seed8 1 gtplan.runtime.seed=8
refuse "seed" "trained with seed 7, seq_len 32, global batch 12; this run has seed 8" \
	mpi 1 "$tmp/seed8.json" --load "$tmp/ck4"
refuse "global batch" "global batch 12; this run has seed 7, seq_len 32, global batch 6" \
	load1 "$tmp/ck4" --global-batch 6
refuse "no checkpoint" "no checkpoint there" load1 "$tmp/nothing"
damaged trunc
head -c 2000 "$(stepdir "$tmp/ck4")/metadata.json" >"$tmp/trunc/metadata.json"
refuse "truncated metadata" "not valid JSON" load1 "$tmp/trunc"
damaged fmt
sed -i 's#"gtplan-ckpt/1"#"gtplan-ckpt/2"#' "$tmp/fmt/metadata.json"
refuse "format version" "format 'gtplan-ckpt/2'; this gtplan-run reads gtplan-ckpt/1 only" load1 "$tmp/fmt"
refuse "schema: format version" "'gtplan-ckpt/1' was expected" \
	"$PY" tests/check_plan_schema.py schemas/ckpt.schema.json "$tmp/fmt/metadata.json"
damaged gone
rm "$tmp/gone/shard-00001.bin"
refuse "missing piece file" "piece file shard-00001.bin: No such file or directory" load1 "$tmp/gone"
damaged short
truncate -s -4 "$tmp/short/shard-00000.bin"
refuse "truncated piece file" "piece file shard-00000.bin is" load1 "$tmp/short"
damaged flip
"$PY" - "$tmp/flip/shard-00001.bin" <<'EOF'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(1000); b = f.read(1); f.seek(1000); f.write(bytes([b[0] ^ 0x40]))
EOF
refuse "corrupt piece file" "the file is corrupt" load1 "$tmp/flip"
# pieces that break the exactly-once cover: one removed, one added twice
damaged gap
damaged twice
"$PY" - "$tmp/gap/metadata.json" "$tmp/twice/metadata.json" <<'EOF'
import json, sys
for path, edit in zip(sys.argv[1:], ("drop", "dup")):
    m = json.load(open(path))
    t = next(t for t in m["tensors"] if t["key"] == "decoder.layers.1.mlp.linear_fc1.gate.weight")
    if edit == "drop":
        t["pieces"].pop()
    else:
        t["pieces"].append(dict(t["pieces"][0]))
    json.dump(m, open(path, "w"))
EOF
refuse "coverage gap" "of decoder.layers.1.mlp.linear_fc1.gate.weight is saved by no rank" load1 "$tmp/gap"
refuse "covered twice" "of decoder.layers.1.mlp.linear_fc1.gate.weight is saved twice, by ranks 0 and 0" load1 "$tmp/twice"
# qkv's second piece (rows [64, 120) of 120, rank 1) moved up a row, down a
# row, a row short, and to an offset where offset + shape passes 2^63
for d in shift outside short1 far; do damaged "$d"; done
"$PY" - "$tmp" <<'EOF3'
import json, sys
for name, row, rows in (("shift", 63, 56), ("outside", 65, 56), ("short1", 64, 55),
                        ("far", 2**63 - 8, 56)):
    path = f"{sys.argv[1]}/{name}/metadata.json"
    m = json.load(open(path))
    t = next(t for t in m["tensors"] if t["key"] == "decoder.layers.1.self_attention.linear_qkv.weight")
    assert [p["offset"] for p in t["pieces"]] == [[0, 0], [64, 0]], t["pieces"]
    t["pieces"][1]["offset"][0] = row
    t["pieces"][1]["shape"][0] = rows
    json.dump(m, open(path, "w"))
EOF3
Q=decoder.layers.1.self_attention.linear_qkv.weight
refuse "pieces overlap" "element [63, 0] of $Q is saved twice, by ranks 0 and 1" load1 "$tmp/shift"
refuse "piece outside" "the piece of $Q at [65, 0] of shape [56, 40] (rank 1) is empty or lies outside the tensor's shape [120, 40]" \
	load1 "$tmp/outside"
refuse "piece a row short" "element [119, 0] of $Q is saved by no rank (4760 of 4800 elements covered)" load1 "$tmp/short1"
refuse "piece offset near 2^63" "a piece of $Q in shard-00001.bin has offset [9223372036854775800, 0], outside the tensor's shape [120, 40]" \
	load1 "$tmp/far"
# a piece file that is a FIFO is refused, not read forever
damaged fifo
rm "$tmp/fifo/shard-00001.bin"; mkfifo "$tmp/fifo/shard-00001.bin"
refuse "FIFO piece file" "piece file shard-00001.bin: is not a regular file" load1 "$tmp/fifo"
# the optimizer block: missing, another step, another optimizer
damaged nopt
damaged optstep
damaged optsgd
"$PY" - "$tmp"/nopt/metadata.json "$tmp"/optstep/metadata.json "$tmp"/optsgd/metadata.json <<'EOF2'
import json, sys
for path, edit in zip(sys.argv[1:], ("drop", "step", "sgd")):
    m = json.load(open(path))
    if edit == "drop":
        del m["optimizer"]
    elif edit == "step":
        m["optimizer"]["step"] = 3
    else:
        m["optimizer"]["name"] = "sgd"
    json.dump(m, open(path, "w"))
EOF2
refuse "optimizer block missing" "metadata.json: the optimizer block is missing" load1 "$tmp/nopt"
refuse "schema: optimizer block missing" "'optimizer' is a required property" \
	"$PY" tests/check_plan_schema.py schemas/ckpt.schema.json "$tmp/nopt/metadata.json"
refuse "optimizer step" "the optimizer block counts 3 steps, the checkpoint is of step 4" load1 "$tmp/optstep"
refuse "optimizer kind" "the checkpoint's optimizer is sgd, this run's is adam: " load1 "$tmp/optsgd"
check "optimizer kind: --optimizer sgd loads it" load1 "$tmp/optsgd" --optimizer sgd
# `latest`: naming no step directory, or not a regular file
rm -rf "$tmp/lat"; mkdir "$tmp/lat"; echo "../ck4" >"$tmp/lat/latest"
refuse "latest outside" "lat/latest: it does not name a step directory" load1 "$tmp/lat"
rm "$tmp/lat/latest"; mkfifo "$tmp/lat/latest"
refuse "latest FIFO" "lat/latest: is not a regular file" load1 "$tmp/lat"
# a save that fails after its pieces are written (it cannot replace a
# directory that holds a foreign file) publishes nothing: `latest` still
# names step 4, which loads, and the foreign file is kept
rm -rf "$tmp/part"; cp -r "$tmp/ck4" "$tmp/part"
mkdir "$tmp/part/iter_0000005"; echo mine >"$tmp/part/iter_0000005/notes.txt"
refuse "save that cannot publish" "cannot replace '$tmp/part/iter_0000005'" \
	mpi 1 "$tmp/ref.json" --load "$tmp/part" --steps 5 --save "$tmp/part"
if [ "$(cat "$tmp/part/latest")" = iter_0000004 ] && [ -f "$tmp/part/iter_0000005/notes.txt" ]; then ok; else
	bad "a failed save changed latest ($(cat "$tmp/part/latest")) or removed a foreign file"; fi
check "load after a failed save" load1 "$tmp/part"
if grep -qF -- "--load $tmp/part/iter_0000004: step 4" "$tmp/out"; then ok; else bad "load after a failed save: not step 4"; fi
# hostile input: a metadata file larger than any checkpoint needs
damaged huge
truncate -s 65M "$tmp/huge/metadata.json"
refuse "metadata size limit" "more than the 67108864 a checkpoint of gtplan-run needs" load1 "$tmp/huge"
refuse "--save-every alone" "--save-every wants --save DIR" mpi 1 "$tmp/ref.json" --save-every 2
refuse "--keep alone" "--keep wants --save DIR" mpi 1 "$tmp/ref.json" --keep 2
check "help" mpi 1 --help
for o in "--load DIR" "--save-every N" "--keep N" "--mem-budget GIB"; do
	if grep -q -- "$o" "$tmp/out"; then ok; else bad "--help does not document $o"; fi
done

. tests/runtime_ckpt_crash.sh
echo "runtime checkpoints: $(($(date +%s) - start)) s"
finish
