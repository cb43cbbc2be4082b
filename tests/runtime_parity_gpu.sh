#!/usr/bin/env bash
# gtplan-run --device cuda on the GPUs of this host (docs/design.md §5.3):
#   tests/runtime_parity_gpu.sh     prints "RESULT passed failed skipped" last
#   tests/runtime_parity_gpu.sh --plans-only   makes the plans and stops
# The single-rank CPU run is the reference; the single-rank CUDA run and the
# 6-rank TP2xG3 CUDA run (ranks share the GPUs: MPI collectives with host
# staging) must give its per-step losses and final gathered weights within
# 1e-5 relative (fp32, Adam: normwise, tests/runtime_compare.py), and so
# must their get_logprobs values and refit exports (tests/runtime_calls.py;
# the CUDA export also exactly its own dump). With two GPUs or more, NCCL
# (one GPU per rank): every layout of the matrix that has a GPU per rank on
# this host against the reference, each rank's recorded collectives equal
# to the CPU run's of the same plan (with GTPLAN_WATCH=queue, the pending
# queue, and on g2 also with sync, the host waiting for each collective),
# --comm nccl refused where ranks share a
# GPU, and the forced 5-D layout's hang reported by the watchdog over
# NCCL. Logs go to $OUT when it is set (else a temporary folder), step
# times are printed.
# Plans: made with $GTPLAN when it runs here, else read from $GPU_PLANS
# (made where gtplan runs, by this script with --plans-only).
set -u
cd "$(dirname "$0")/.." || exit 2
GTPLAN=${GTPLAN:-build/gtplan}
RUN=$(realpath "${GTPLAN_RUN_GPU:-build/gpu/gtplan-run}")
PLANS=${GPU_PLANS:-build/gpu/plans}
PY=${PY:-python3}
CFG=tests/runtime/parity.yaml
TOL=1e-5
LIMIT=300
M=policy.megatron_cfg
pass=0 fail=0 skip=0
logs=${OUT:-$(mktemp -d)}
mkdir -p "$logs"
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() { echo "RESULT $pass $fail $skip"; exit $((fail > 0)); }
[ -x "$RUN" ] || { bad "$RUN is not built (make build/gpu/gtplan-run)"; finish; }
export OPENBLAS_NUM_THREADS=1
# NVLink multicast stays off on shared GPU hosts (it can take the GPUs out
# of service); NCCL does not need it here
export NCCL_NVLS_ENABLE=0
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p "$PLANS"
if [ -x "$GTPLAN" ] && "$GTPLAN" plan "$CFG" cluster.gpus_per_node=1 -o "$PLANS/ref.json" >/dev/null 2>&1; then
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=6 $M.tensor_model_parallel_size=2 \
		$M.tensor_parallel_num_weight_shards=6 -o "$PLANS/tp2g3.json" || bad "plan tp2g3"
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=2 $M.tensor_model_parallel_size=2 \
		-o "$PLANS/tp2.json" || bad "plan tp2"
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=2 $M.tensor_parallel_num_weight_shards=2 \
		-o "$PLANS/g2.json" || bad "plan g2"
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=8 $M.tensor_model_parallel_size=2 \
		$M.tensor_parallel_num_weight_shards=4 -o "$PLANS/tp2g2d2.json" || bad "plan tp2g2d2"
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=8 $M.tensor_parallel_num_weight_shards=8 \
		policy.train_global_batch_size=16 -o "$PLANS/tp1g8.json" || bad "plan tp1g8"
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=1 gtplan.runtime.dtype=bf16 \
		-o "$PLANS/bfref.json" || bad "plan bfref"
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=2 $M.tensor_parallel_num_weight_shards=2 \
		gtplan.runtime.dtype=bf16 -o "$PLANS/bfg2.json" || bad "plan bfg2"
	# context parallelism: 2 ranks on the GPUs at hand (host staging where
	# they share one), fp32 and bf16
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=2 $M.context_parallel_size=2 \
		policy.sequence_packing.enabled=true -o "$PLANS/cp2.json" || bad "plan cp2"
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=2 $M.context_parallel_size=2 \
		policy.sequence_packing.enabled=true gtplan.runtime.dtype=bf16 \
		-o "$PLANS/bfcp2.json" || bad "plan bfcp2"
	# the 5-D layout has errors (the hang): the plan is still written
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=2 $M.tensor_parallel_num_weight_shards=2 \
		+gtplan.driver_layout=5d -o "$PLANS/g2-5d.json" >/dev/null 2>&1
	# GTP prefetch (gtplan.runtime.prefetch)
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=6 $M.tensor_model_parallel_size=2 \
		$M.tensor_parallel_num_weight_shards=6 +gtplan.runtime.prefetch=true \
		-o "$PLANS/tp2g3-pf.json" || bad "plan tp2g3-pf"
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=2 $M.tensor_parallel_num_weight_shards=2 \
		+gtplan.runtime.prefetch=true -o "$PLANS/g2-pf.json" || bad "plan g2-pf"
	# scripts/bench_gpu.sh: --bench-comm with the weights of a 4096 x 14336
	# MLP and a 32000-entry vocabulary, GTP over 2, 4 and 8 GPUs; and train
	# steps of 1024 tokens a lane (GEMMs longer than the gathers) with and
	# without prefetch
	for g in 2 4 8; do
		"$GTPLAN" plan "$CFG" cluster.gpus_per_node=$g $M.tensor_parallel_num_weight_shards=$g \
			gtplan.runtime.hidden=4096 gtplan.runtime.ffn=14336 gtplan.runtime.layers=1 \
			gtplan.runtime.vocab=32000 gtplan.runtime.seq_len=128 \
			policy.train_global_batch_size=$g -o "$PLANS/bench-g$g.json" || bad "plan bench-g$g"
		for pf in false true; do
			"$GTPLAN" plan "$CFG" cluster.gpus_per_node=$g $M.tensor_parallel_num_weight_shards=$g \
				gtplan.runtime.hidden=4096 gtplan.runtime.ffn=14336 gtplan.runtime.layers=4 \
				gtplan.runtime.vocab=32000 gtplan.runtime.seq_len=1024 gtplan.runtime.lr=0.0001 \
				+gtplan.runtime.prefetch=$pf policy.train_global_batch_size=$g \
				-o "$PLANS/step-g$g-$pf.json" || bad "plan step-g$g-$pf"
		done
	done
fi
[ "${1:-}" = --plans-only ] && finish
for f in ref tp2g3 tp2 g2 tp2g2d2 tp1g8 g2-5d bfref bfg2 tp2g3-pf g2-pf cp2 bfcp2; do
	[ -s "$PLANS/$f.json" ] || { bad "no plan $PLANS/$f.json (build/gtplan cannot run here)"; finish; }
done
# run NAME NP DEVICE PLAN [ARGS...]
run() {
	local name=$1 np=$2 dev=$3 plan=$4; shift 4
	local t0; t0=$(date +%s.%N)
	if timeout "$LIMIT" mpirun --oversubscribe --bind-to none -np "$np" "$RUN" \
		"$PLANS/$plan.json" --device "$dev" --log "$logs/$name.log" \
		--dump-weights "$logs/$name.w" --logprobs "$logs/$name.lp" \
		--export "$logs/$name.safetensors" "$@" >"$logs/$name.out" 2>&1; then ok; else
		bad "run $name"; tail -15 "$logs/$name.out" | sed 's/^/    /'; fi
	echo "$name: $(grep -m1 "device " "$logs/$name.out" | sed 's/^[^:]*: //') ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s wall)"
}
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
run cpu1 1 cpu ref
run cuda1 1 cuda ref
run cuda6 6 cuda tp2g3
# CP 2 (runtime/rt_cp.c: the K/V exchange, attention on the chunks'
# positions, RoPE past a rank's own rows; kern_qkv's pos_end)
run cuda-cp2 2 cuda cp2
# prefetch through host staging (the async MPI path)
run cuda6pf 6 cuda tp2g3-pf --timeout 120
nccl_runs=
if [ "$ngpu" -ge 2 ]; then
	# the matrix with the pending queue (runtime/coll_queue.h; the
	# runtime's default is still a wait for each collective until it has
	# run here)
	export GTPLAN_WATCH=queue
	# TP1xG8 runs 16 samples a step (2 per lane): its own reference
	[ "$ngpu" -ge 8 ] && run cpu1b16 1 cpu ref --global-batch 16
	# the NCCL matrix: every layout with a GPU per rank on this host
	for pn in tp2:2 g2:2 tp2g3:6 tp2g2d2:8 tp1g8:8; do
		p=${pn%:*} np=${pn#*:}
		if [ "$np" -gt "$ngpu" ]; then
			echo "SKIP: NCCL $p ($np GPUs; this host has $ngpu)"; skip=$((skip + 1)); continue
		fi
		run "cpu-$p" "$np" cpu "$p" --record "$logs/cpu-$p.rec"
		run "nccl-$p" "$np" cuda "$p" --comm nccl --record "$logs/nccl-$p.rec"
		if grep -q "NCCL 2" "$logs/nccl-$p.out"; then ok; else bad "nccl-$p: the start-up line does not name NCCL"; fi
		for r in $(seq 0 $((np - 1))); do
			if cmp -s "$logs/cpu-$p.rec.$r" "$logs/nccl-$p.rec.$r"; then ok; else
				bad "nccl-$p rank $r: recorded collectives differ from the CPU run's"
				diff "$logs/cpu-$p.rec.$r" "$logs/nccl-$p.rec.$r" | head -4 | sed 's/^/    /'; fi
		done
		nccl_runs="$nccl_runs nccl-$p"
	done
	# prefetch over NCCL: the GTP gathers on their own stream
	run "cpu-g2pf" 2 cpu g2-pf --record "$logs/cpu-g2pf.rec"
	run "nccl-g2pf" 2 cuda g2-pf --comm nccl --record "$logs/nccl-g2pf.rec" --timeout 120
	for r in 0 1; do
		if cmp -s "$logs/cpu-g2pf.rec.$r" "$logs/nccl-g2pf.rec.$r"; then ok; else
			bad "nccl-g2pf rank $r: recorded collectives differ from the CPU run's"; fi
	done
	nccl_runs="$nccl_runs nccl-g2pf"
	# the former host wait after each collective (GTPLAN_WATCH=sync,
	# runtime/coll_queue.h) on g2: the same records and parity, and its
	# step times next to the queued runs' in the summary
	export GTPLAN_WATCH=sync
	run "nccl-g2sync" 2 cuda g2 --comm nccl --record "$logs/nccl-g2sync.rec" --timeout 120
	export GTPLAN_WATCH=queue
	for r in 0 1; do
		if cmp -s "$logs/cpu-g2.rec.$r" "$logs/nccl-g2sync.rec.$r"; then ok; else
			bad "nccl-g2sync rank $r: recorded collectives differ from the CPU run's"; fi
	done
	nccl_runs="$nccl_runs nccl-g2sync"
	# NCCL refuses two ranks of one communicator on one GPU: said up front
	timeout "$LIMIT" mpirun --oversubscribe --bind-to none -np 6 "$RUN" "$PLANS/tp2g3.json" \
		--device cuda --comm nccl >"$logs/nccl-shared.out" 2>&1
	if [ $? -ne 0 ] && grep -q "NCCL refuses two ranks" "$logs/nccl-shared.out"; then ok; else
		bad "--comm nccl with shared GPUs: want a refusal"; tail -5 "$logs/nccl-shared.out" | sed 's/^/    /'; fi
	# the 5-D layout: rank 1 is never called; rank 0's watchdog says so
	timeout "$LIMIT" mpirun --oversubscribe --bind-to none -np 2 "$RUN" "$PLANS/g2-5d.json" \
		--device cuda --comm nccl --force --timeout 5 >"$logs/nccl-5d.out" 2>&1
	if [ $? -ne 0 ] && grep -q "rank 1: NOT ARRIVED.*never called" "$logs/nccl-5d.out"; then ok; else
		bad "5-D over NCCL: want the watchdog's report"; tail -8 "$logs/nccl-5d.out" | sed 's/^/    /'; fi
	grep -m2 "did not complete\|NOT ARRIVED" "$logs/nccl-5d.out" | sed 's/^/    watchdog: /'
else
	echo "SKIP: NCCL runs (one GPU on this host)"; skip=$((skip + 1))
fi
for name in cuda1 cuda6 cuda6pf cuda-cp2 $nccl_runs; do
	case $name in nccl-tp1g8) ref=cpu1b16 ;; *) ref=cpu1 ;; esac
	if "$PY" tests/runtime_compare.py "$TOL" norm "$logs/$ref.log" "$logs/$ref.w" \
		"$logs/$name.log" "$logs/$name.w" >"$logs/$name.cmp" 2>&1; then ok; else bad "parity $name"; fi
	sed "s/^/    $name vs $ref: /" "$logs/$name.cmp"
	for what in "logprobs $TOL $logs/$ref.lp $logs/$name.lp" \
		"export $TOL $logs/$ref.safetensors $logs/$name.safetensors" \
		"dump $PLANS/ref.json $logs/$name.safetensors $logs/$name.w"; do
		# shellcheck disable=SC2086 # the words are the arguments
		if "$PY" tests/runtime_calls.py $what >"$logs/$name.cmp" 2>&1; then ok; else
			bad "${what%% *} $name"; fi
		sed "s/^/    $name vs $ref: /" "$logs/$name.cmp"
	done
done
# bf16 (mixed precision, rt_bf16): CUDA against the CPU's bf16 run; over
# NCCL the GTP gathers move bf16. With SGD: the flash kernels round P and
# dS to bf16 where the CPU twin does not, and their atomics sum in another
# order each run, so some roundings of near-zero gradients flip, which Adam
# turns into updates of up to lr (two runs of one H200 at 5c58608: 6.5e-4
# and 4.5e-3 normwise after 4 steps); SGD's update is lr times the
# gradient: 6.0e-7 (one rank) and 3.5e-7 (CP 2) there, against 2.65e-5
# between the CPU's bf16 and fp32 runs. BTOL = 1e-5.
BTOL=1e-5
run cpu-bf1 1 cpu bfref --optimizer sgd
run cuda-bf1 1 cuda bfref --optimizer sgd
bf_runs=cuda-bf1
if [ "$ngpu" -ge 2 ]; then
	run nccl-bfg2 2 cuda bfg2 --comm nccl --record "$logs/nccl-bfg2.rec" --optimizer sgd
	bf_runs="$bf_runs nccl-bfg2"
	if grep -q '"all-gather","count":[0-9]*,"dtype":"bf16","group":"gtp"' "$logs/nccl-bfg2.rec.0"; then ok; else
		bad "nccl-bfg2: no bf16 GTP all-gather recorded"; fi
fi
for name in $bf_runs; do
	if "$PY" tests/runtime_compare.py "$BTOL" norm "$logs/cpu-bf1.log" "$logs/cpu-bf1.w" \
		"$logs/$name.log" "$logs/$name.w" >"$logs/$name.cmp" 2>&1; then ok; else bad "bf16 parity $name"; fi
	sed "s/^/    $name vs cpu-bf1: /" "$logs/$name.cmp"
done
# bf16 under CP against the CPU's run of the same layout: CP sums each
# row's attention over key chunks in another order before o is rounded
# (tests/runtime_parity.sh, bf16 CP), so the reference is the CPU twin of
# the same layout
run cpu-bfcp2 2 cpu bfcp2 --optimizer sgd
run cuda-bfcp2 2 cuda bfcp2 --optimizer sgd
if "$PY" tests/runtime_compare.py "$BTOL" norm "$logs/cpu-bfcp2.log" "$logs/cpu-bfcp2.w" \
	"$logs/cuda-bfcp2.log" "$logs/cuda-bfcp2.w" >"$logs/cuda-bfcp2.cmp" 2>&1; then ok; else
	bad "bf16 parity cuda-bfcp2"; fi
sed "s/^/    cuda-bfcp2 vs cpu-bfcp2: /" "$logs/cuda-bfcp2.cmp"
# per-step losses and step times, side by side
"$PY" - "$logs"/cpu1.log "$logs"/cuda1.log "$logs"/cuda6.log $(for n in $nccl_runs; do echo "$logs/$n.log"; done) <<'PYEOF' | tee "$logs/summary.txt"
import json, sys
runs = [[json.loads(l) for l in open(f)] for f in sys.argv[1:]]
names = [f.split("/")[-1][:-4] for f in sys.argv[1:]]
keys = [k for k in runs[0][0] if k.endswith("_s") or "time" in k]
for i, rows in enumerate(zip(*runs)):
    ref = rows[0]["loss"]
    print("step %d: " % rows[0]["step"] + "  ".join(
        "%s loss %.9g (rel %.2e)%s" % (n, r["loss"], abs(r["loss"] - ref) / abs(ref),
        "".join(" %s %.4g" % (k, r[k]) for k in keys if k in r))
        for n, r in zip(names, rows)))
PYEOF
finish
