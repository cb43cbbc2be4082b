#!/usr/bin/env bash
# make bench-gpu: the GTP collectives of real weight sizes on this host's
# GPUs (gtplan-run --bench-comm; docs/design.md §5.3): for G = 2, 4
# and 8 GPUs where the host has them, the all-gather and reduce-scatter of
# a 4096 x 14336 MLP's weights and a 32000 x 4096 embedding through the
# runtime's NCCL path next to plain NCCL calls on the same communicator.
#   scripts/bench_gpu.sh [ITERS]     (default 20)
# Plans come from tests/runtime_parity_gpu.sh --plans-only (made where
# gtplan runs; $GPU_PLANS, default build/gpu/plans). Prints the tables and
# writes JSON lines to $OUT (or a temporary folder).
set -u
cd "$(dirname "$0")/.." || exit 2
RUN=${GTPLAN_RUN_GPU:-build/gpu/gtplan-run}
PLANS=${GPU_PLANS:-build/gpu/plans}
ITERS=${1:-20}
logs=${OUT:-$(mktemp -d)}
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
[ -x "$RUN" ] || { echo "bench-gpu: $RUN is not built (make build/gpu/gtplan-run)"; exit 2; }
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 2 ] || { echo "bench-gpu: needs 2 GPUs or more (found $ngpu)"; exit 77; }
for g in 2 4 8; do
	[ "$g" -le "$ngpu" ] || { echo "bench-gpu: G=$g skipped ($ngpu GPUs)"; continue; }
	[ -s "$PLANS/bench-g$g.json" ] || { echo "bench-gpu: no $PLANS/bench-g$g.json (tests/runtime_parity_gpu.sh --plans-only)"; exit 2; }
	echo "== G=$g"
	mpirun --bind-to none -np "$g" "$RUN" "$PLANS/bench-g$g.json" --device cuda \
		--comm nccl --bench-comm "$ITERS" --log "$logs/bench-g$g.jsonl" 2>&1
	# step time, weights gathered just in time vs prefetched (4 layers of
	# a 4096 x 14336 MLP, 1024 tokens a lane: the GEMMs outlast the
	# gathers); the median of steps 2-8
	for pf in false true; do
		mpirun --bind-to none -np "$g" "$RUN" "$PLANS/step-g$g-$pf.json" --device cuda \
			--comm nccl --steps 8 --data synthetic --log "$logs/step-g$g-$pf.jsonl" \
			>"$logs/step-g$g-$pf.out" 2>&1 || { echo "bench-gpu: step-g$g-$pf failed"; tail -5 "$logs/step-g$g-$pf.out"; }
	done
	python3 - "$logs/step-g$g-false.jsonl" "$logs/step-g$g-true.jsonl" <<'EOF'
import json, statistics, sys
med = []
for f in sys.argv[1:]:
    t = [json.loads(l)["step_time_s"] for l in open(f)][1:]
    med.append(statistics.median(t))
print("step time (median of steps 2-8): just in time %.2f ms, prefetch %.2f ms, "
      "prefetch / just in time %.3f" % (med[0] * 1e3, med[1] * 1e3, med[1] / med[0]))
EOF
done
