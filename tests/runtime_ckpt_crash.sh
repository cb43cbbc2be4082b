# Sourced by tests/runtime_ckpt.sh (its helpers, plans and checkpoints):
# (e) step directories and kill -9 during saves, (f) divergence and the
# refusals before any allocation. Its header lists what each part proves.

ckstep() { # DIR: the step `latest` names, 0 without one
	local n
	n=$(cat "$1/latest" 2>/dev/null) || { echo 0; return; }
	n=${n#iter_}
	echo $((10#${n%.1}))
}
same_ckpt() { # DIR REF: the same files, byte for byte
	[ "$(ls "$1")" = "$(ls "$2")" ] || return 1
	local f
	for f in "$1"/*; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done
}
resumed() { # LOG STEP: LOG starts at STEP with the uninterrupted run's loss
	"$PY" -c 'import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
ref = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[3]))}
assert rows and rows[0]["step"] == int(sys.argv[2]), rows[:1]
assert rows[0]["loss"] == ref[rows[0]["step"]], (rows[0], ref)' "$1" "$2" "$tmp/kref.log"
}

# ---- (e) step directories ---------------------------------------------------
check "keep 1" mpi 1 "$tmp/ref.json" --steps 3 --save "$tmp/k1" --save-every 1 --keep 1
if [ "$(ls "$tmp/k1" | tr '\n' ' ')" = "iter_0000003 latest " ]; then ok; else
	bad "--keep 1 left: $(ls "$tmp/k1" | tr '\n' ' ')"; fi
cp -r "$tmp/k1/iter_0000003" "$tmp/k1.orig"
# a leftover of a crashed save, which the next save removes
mkdir "$tmp/k1/iter_0000009.tmp"; : >"$tmp/k1/iter_0000009.tmp/shard-00000.bin"
for want in iter_0000003.1 iter_0000003; do
	check "re-save of latest's step ($want)" mpi 1 "$tmp/ref.json" --load "$tmp/k1" --steps 3 \
		--save "$tmp/k1" --keep 1
	if [ "$(ls "$tmp/k1" | tr '\n' ' ')" = "$want latest " ] && [ "$(cat "$tmp/k1/latest")" = "$want" ] &&
		same_ckpt "$tmp/k1/$want" "$tmp/k1.orig"; then ok; else
		bad "re-save: want only $want, named by latest, equal to the first save; have" \
			"$(ls "$tmp/k1" | tr '\n' ' ')"; fi
done

# ---- (e) kill -9 during saves -------------------------------------------------
# The uninterrupted run keeps every step (--keep 0); each killed run resumes
# from `latest` and logs 1 to 3 more steps (the first run 2 to 4, so that
# one save is complete) before its kill: kills 3 and 6 0 to 60 ms after
# that step's log line, the others as soon as the next step's .tmp
# directory is seen (polled every ms: inside its save, or just after it,
# since a kill leaves a .tmp that the next save of its step replaces); 36
# steps leave room for the steps a fast machine adds meanwhile. Odd kills
# end the whole job (mpirun and every rank), even ones one rank.
K=36
check "kill: uninterrupted run" mpi 2 "$tmp/tp2sp.json" --steps $K --save "$tmp/kref" --save-every 1 \
	--keep 0 --log "$tmp/kref.log"
if [ "$(ls -d "$tmp"/kref/iter_* | wc -l)" -eq $K ]; then ok; else bad "--keep 0 did not keep all $K steps"; fi
RANDOM=17 # the same kill plan on every run (the moments still vary)
D=$tmp/kills interrupted=0
for i in 1 2 3 4 5 6; do
	s0=$(ckstep "$D") load=()
	[ "$s0" -gt 0 ] && load=(--load "$D")
	target=$((s0 + 1 + (s0 == 0) + RANDOM % 3)) delay_ms=$((RANDOM % 61)) pick=$((RANDOM % 2 + 1))
	in_save=$((i % 3 != 0))
	[ $in_save -eq 1 ] && delay_ms=0
	rm -f "$tmp/kill.log"
	mpirun --oversubscribe --bind-to none -np 2 "$RUN" "$tmp/tp2sp.json" "${load[@]}" --steps $K \
		--save "$D" --save-every 1 --log "$tmp/kill.log" >"$tmp/kill.out" 2>&1 &
	job=$!
	for ((w = 0; w < 100 * LIMIT; w++)); do
		[ "$(cat "$tmp/kill.log" 2>/dev/null | wc -l)" -ge $((target - s0)) ] && break
		kill -0 "$job" 2>/dev/null || break
		sleep 0.01
	done
	# both ranks, once mpirun has started them (a loaded machine starts
	# them late; a kill of an empty list would kill nothing)
	ranks=$(pgrep -P "$job")
	for ((w = 0; w < 3000 && $(echo "$ranks" | grep -c .) < 2; w++)); do
		kill -0 "$job" 2>/dev/null || break
		sleep 0.01
		ranks=$(pgrep -P "$job")
	done
	# the save of the step after: its .tmp cannot be a leftover of a kill;
	# a poll that misses it (a loaded machine) stops at the published
	# directory, or at `latest` past the target (the run's default --keep
	# may have removed that directory already), just after the save, not
	# after the run has ended
	next=$D/$(printf 'iter_%07d.tmp' $((target + 1)))
	for ((w = 0; in_save && w < 5000; w++)); do
		{ [ -d "$next" ] || [ -d "${next%.tmp}" ] ||
			[ "$(ckstep "$D")" -gt "$target" ]; } && break
		sleep 0.001
	done
	[ "$delay_ms" -gt 0 ] && sleep "$(printf '0.%03d' "$delay_ms")"
	victim="one rank"
	[ $((i % 2)) -eq 1 ] && victim="the job"
	{ # (bash's "Killed" notices go to /dev/null)
		if [ "$victim" = "the job" ]; then kill -9 "$job" $ranks
		else kill -9 "$(echo "$ranks" | sed -n "${pick}p")"; fi
		# mpirun ends the job when a rank dies; anything left is ended here
		for ((w = 0; w < 3000; w++)); do kill -0 "$job" || break; sleep 0.01; done
		kill -9 "$job" $ranks
		wait "$job"
	} 2>/dev/null
	s=$(ckstep "$D")
	# a save stopped part-way leaves its .tmp directory, or its published
	# directory that `latest` does not name yet
	if compgen -G "$D/iter_*.tmp" >/dev/null || [ -d "$D/$(printf 'iter_%07d' $((s + 1)))" ]; then
		interrupted=$((interrupted + 1)); fi
	when="step $target's line"
	[ $in_save -eq 1 ] && when="iter_$(printf '%07d' $((target + 1))).tmp appeared"
	echo "    kill $i: $victim, ${delay_ms} ms after $when: latest is step $s$(ls "$D" |
		grep -v "^latest$\|^$(cat "$D/latest")$" | sed 's/^/, /' | tr -d '\n')"
	# the run resumed where `latest` said, bit-identical to the uninterrupted run
	if resumed "$tmp/kill.log" $((s0 + 1)) >/dev/null 2>&1; then ok; else
		bad "kill $i: the run from step $s0 did not resume with the uninterrupted run's step $((s0 + 1))"; fi
	if [ "$s" -ge 1 ] && same_ckpt "$(stepdir "$D")" "$tmp/kref/$(printf 'iter_%07d' "$s")"; then ok; else
		bad "kill $i: latest ($(cat "$D/latest" 2>/dev/null)) is not the uninterrupted run's step $s"
		ls -R "$D" | head -20; fi
done
# the states a kill inside a save leaves, made on purpose: the next step's
# directory published but not yet named by latest (here holding step 1's
# files), and a .tmp directory with one piece file; the resumed run
# replaces the one and removes the other
s0=$(ckstep "$D") F=$(($(ckstep "$D") + 2))
cp -r "$tmp/kref/iter_0000001" "$D/$(printf 'iter_%07d' $((s0 + 1)))"
mkdir "$D/$(printf 'iter_%07d.tmp' $F)"
cp "$tmp/kref/iter_0000001/shard-00000.bin" "$D/$(printf 'iter_%07d.tmp' $F)/"
check "kill: resume" mpi 2 "$tmp/tp2sp.json" --load "$D" --steps $F --save "$D" --save-every 1 \
	--log "$tmp/kill.log"
if resumed "$tmp/kill.log" $((s0 + 1)) && same_ckpt "$(stepdir "$D")" "$tmp/kref/$(printf 'iter_%07d' $F)" &&
	same_ckpt "$D/$(printf 'iter_%07d' $((F - 1)))" "$tmp/kref/$(printf 'iter_%07d' $((F - 1)))"; then ok; else
	bad "kill: the resumed run's checkpoints differ from the uninterrupted run's"; fi
if [ "$(ls "$D" | tr '\n' ' ')" = "$(printf 'iter_%07d iter_%07d latest ' $((F - 1)) $F)" ]; then ok; else
	bad "kill: after the last save, want the 2 newest steps and latest; have $(ls "$D" | tr '\n' ' ')"; fi
echo "    $interrupted of 6 kills stopped a save part-way"

# ---- (f) divergence -------------------------------------------------------------
# Adam's first step moves every weight by about lr: the logits of step 2
# overflow float32 and the loss is NaN
plan div 1 gtplan.runtime.lr=1e20
refuse "divergence" "the training diverged" mpi 1 "$tmp/div.json" --steps 6 --save "$tmp/dv" \
	--save-every 1 --log "$tmp/div.log"
cp "$tmp/out" "$tmp/div.out"
grep "error" "$tmp/div.out" | sed 's/^/    /'
check "divergence: exit 1" test "$(mpi 1 "$tmp/div.json" --steps 6 >/dev/null 2>&1; echo $?)" -eq 1
check "divergence: the log is JSON, the step named, latest before it" "$PY" - "$tmp/div.log" \
	"$tmp/div.out" "$(ckstep "$tmp/dv")" <<'EOF'
import json, sys
def no_constant(name):
    raise ValueError("bare " + name + " in the log")
rows = [json.loads(line, parse_constant=no_constant) for line in open(sys.argv[1])]
last = rows[-1]
assert last["loss"] is None and last["diverged"] is True, last
assert all(r["loss"] is not None and "diverged" not in r for r in rows[:-1]), rows
assert "step %d: the loss is " % last["step"] in open(sys.argv[2]).read()
assert int(sys.argv[3]) == last["step"] - 1, (sys.argv[3], last["step"])
EOF
# over several ranks: every rank holds the same loss (summed over DP x CP
# and PP, equal over TP) and stops at that step on its own (rt_main.c's
# check_loss); nothing of the step is saved
plan divw 4 gtplan.runtime.lr=1e20 gtplan.runtime.layers=4 \
	$M.pipeline_model_parallel_size=2 $M.tensor_model_parallel_size=2
refuse "divergence over PP 2 x TP 2" "step 2: the loss is NaN" mpi 4 "$tmp/divw.json" \
	--steps 6 --save "$tmp/dvw" --save-every 1
check "divergence over PP 2 x TP 2: the last checkpoint is step 1" \
	test "$(ckstep "$tmp/dvw")" -eq 1

# ---- (f) refusals before any allocation ---------------------------------------
"$PY" - "$tmp/ref.json" "$tmp" <<'EOF'
import json, sys
base = json.load(open(sys.argv[1]))
def write(name, edit):
    p = json.loads(json.dumps(base))
    edit(p)
    json.dump(p, open(sys.argv[2] + "/" + name + ".json", "w"))
write("hgb", lambda p: p["batch"].update({"global": 1 << 40}))
def logits(p):
    p["runtime"]["seq_len"] = 1 << 22
    p["runtime"]["vocab"] = p["runtime"]["model"]["vocab"] = 1 << 24
write("hlogits", logits)
write("hsizes", lambda p: p["runtime"]["model"].update(
    heads=65536, kv_heads=65536, head_dim=65536, hidden=1 << 20, layers=4096))
EOF
refuse "global batch limit" "the global batch of 2000000 samples is more than the 1048576" \
	mpi 1 "$tmp/ref.json" --global-batch 2000000
refuse "hostile plan: global batch" "the global batch of 1099511627776 samples" mpi 1 "$tmp/hgb.json"
refuse "hostile plan: sizes" "more than gtplan-run's limit of 2^50" mpi 1 "$tmp/hsizes.json"
# 4194304 tokens x 16777216 vocabulary rows x 4 bytes: 2^48 bytes of logits
refuse "hostile plan: logits" "of which the logits of 4194304 tokens x 16777216 vocabulary rows 281474976710656" \
	mpi 1 "$tmp/hlogits.json"
refuse "memory budget" "more than its budget of 1074 bytes" mpi 1 "$tmp/ref.json" --mem-budget 1e-6
need=$(sed -n 's/.*this rank needs \([0-9]*\) bytes.*/\1/p' "$tmp/out")
at=$("$PY" -c "import sys; print(repr(int(sys.argv[1]) / 2**30))" "${need:-0}")
below=$("$PY" -c "import sys; print(repr((int(sys.argv[1]) - 1) / 2**30))" "${need:-0}")
check "memory budget: exactly the bytes needed" mpi 1 "$tmp/ref.json" --steps 0 --mem-budget "$at"
refuse "memory budget: one byte less" "this rank needs $need bytes" \
	mpi 1 "$tmp/ref.json" --steps 0 --mem-budget "$below"
