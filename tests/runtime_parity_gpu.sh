#!/usr/bin/env bash
# gtplan-run --device cuda on the GPUs of this host (issue #7's GPU proof):
#   tests/runtime_parity_gpu.sh     prints "RESULT passed failed skipped" last
# The single-rank CPU run is the reference; the single-rank CUDA run and the
# 6-rank TP2xG3 CUDA run (ranks share the GPUs: MPI collectives with host
# staging) must give its per-step losses and final gathered weights within
# 1e-5 relative (fp32, Adam: normwise, tests/runtime_compare.py), and so
# must their get_logprobs values and refit exports (tests/runtime_calls.py;
# the CUDA export also exactly its own dump). Logs go
# to $OUT when it is set (else a temporary folder), step times are printed.
# Plans: made with $GTPLAN when it runs here, else read from $GPU_PLANS
# (ref.json, tp2g3.json: made where gtplan runs, by this script itself).
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
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mkdir -p "$PLANS"
if [ -x "$GTPLAN" ] && "$GTPLAN" plan "$CFG" cluster.gpus_per_node=1 -o "$PLANS/ref.json" >/dev/null 2>&1; then
	"$GTPLAN" plan "$CFG" cluster.gpus_per_node=6 $M.tensor_model_parallel_size=2 \
		$M.tensor_parallel_num_weight_shards=6 -o "$PLANS/tp2g3.json" || bad "plan tp2g3"
fi
for f in ref tp2g3; do
	[ -s "$PLANS/$f.json" ] || { bad "no plan $PLANS/$f.json (build/gtplan cannot run here)"; finish; }
done
# run NAME NP DEVICE PLAN
run() {
	local name=$1 np=$2 dev=$3 plan=$4
	local t0; t0=$(date +%s.%N)
	if timeout "$LIMIT" mpirun --oversubscribe --bind-to none -np "$np" "$RUN" \
		"$PLANS/$plan.json" --device "$dev" --log "$logs/$name.log" \
		--dump-weights "$logs/$name.w" --logprobs "$logs/$name.lp" \
		--export "$logs/$name.st" >"$logs/$name.out" 2>&1; then ok; else
		bad "run $name"; tail -15 "$logs/$name.out" | sed 's/^/    /'; fi
	echo "$name: $(grep -m1 "device " "$logs/$name.out" | sed 's/^[^:]*: //') ($(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s wall)"
}
run cpu1 1 cpu ref
run cuda1 1 cuda ref
run cuda6 6 cuda tp2g3
for name in cuda1 cuda6; do
	if "$PY" tests/runtime_compare.py "$TOL" norm "$logs/cpu1.log" "$logs/cpu1.w" \
		"$logs/$name.log" "$logs/$name.w" >"$logs/$name.cmp" 2>&1; then ok; else bad "parity $name"; fi
	sed "s/^/    $name vs cpu1: /" "$logs/$name.cmp"
	for what in "logprobs $TOL $logs/cpu1.lp $logs/$name.lp" \
		"export $TOL $logs/cpu1.st $logs/$name.st" "dump $logs/$name.st $logs/$name.w"; do
		# shellcheck disable=SC2086 # the words are the arguments
		if "$PY" tests/runtime_calls.py $what >"$logs/$name.cmp" 2>&1; then ok; else
			bad "${what%% *} $name"; fi
		sed "s/^/    $name vs cpu1: /" "$logs/$name.cmp"
	done
done
# per-step losses and step times, side by side
"$PY" - "$logs"/cpu1.log "$logs"/cuda1.log "$logs"/cuda6.log <<'PYEOF' | tee "$logs/summary.txt"
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
