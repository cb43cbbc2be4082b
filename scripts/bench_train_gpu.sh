#!/usr/bin/env bash
# make bench-train-gpu: gtplan-run training on ONE GPU in bf16 (tensor-core
# GEMMs and flash attention, kernels/kern_cuda_fast.cu), per configuration:
# step time, tokens/s, MFU and the device time per kernel class.
#   scripts/bench_train_gpu.sh [STEPS]      (default 6)
#   scripts/bench_train_gpu.sh --plans-only  makes the plans and stops
# Configurations (sequence 4096, one sample a step unless named -gb8):
#   1b   Llama-3.2-1B's shape, all 16 layers (tied embedding)
#   3b   Llama-3.2-3B's shape, all 28 layers (tied; head dim 128): the
#        simulator's estimate is calibrated on 1b and 8b, so this one
#        checks it (docs/runtime-gpu.md, "The simulator's step time")
#   8b   Llama-3.1-8B's layer shape cut to 20 layers: each layer holds
#        ~3.5 GB of fp32 weights, gradients and Adam moments and ~1.3 GB of
#        fp32 activations at 4096 tokens, next to ~27 GB for the 128256 x
#        4096 embedding and output layer, their logits and gathered copies,
#        in the H200's 141 GB; where that fails, 16, 8, then 4 layers
#   1b-gb8, 8b-20-gb8  the same with 8 samples a step (global batch 8,
#        micro-batch 1: 8 forward/backward passes accumulate their gradients,
#        then one Adam step), as training runs count MFU: the optimizer's
#        pass over the weights is paid once per 32768 tokens, not per 4096
#        (llm.c's and Megatron-LM's published MFU use 0.5M-token and larger
#        global batches)
# MFU convention (Megatron-LM's and llm.c's): FLOPs a token = 6 N +
# 6 L (H d) T with the attention's score and value products counted
# causal-halved (12 L (H d) T un-halved, also printed); N counts the
# weights that enter a GEMM (every layer's qkv, proj, fc1, fc2 and the
# output layer; not the input embedding's lookup unless tied, where the
# one matrix is the output layer); peak 989.5 TFLOP/s (H100/H200 SXM bf16
# dense). Step time: the median of steps 2..STEPS.
# Breakdown: GTPLAN_KERN_PROFILE=1 brackets every kern_* call with CUDA
# events (kernels/kern_cuda_prof.cu) from step 2 on; per step: GEMM,
# attention (the bf16 casts of their operands are bracketed inside them
# and counted as memory-bound, not in them), memory-bound kernels, copies;
# communication is none on one GPU (every group has one rank); host gaps =
# mean step time - the classes' sum, floored at 0
# (scripts/bench_train_report.py); then each GEMM shape's calls, time and
# TFLOP/s in the runs (kernels/kern_cuda_prof.cu's per-shape sums).
# Plans: made with $GTPLAN when it runs here, else read from $GPU_PLANS.
# Logs and bench.jsonl go to $OUT (or a temporary folder).
set -u
cd "$(dirname "$0")/.." || exit 2
GTPLAN=${GTPLAN:-build/gtplan}
RUN=${GTPLAN_RUN_GPU:-build/gpu/gtplan-run}
PLANS=${GPU_PLANS:-build/gpu/plans}
STEPS=6
[ "${1:-}" != --plans-only ] && [ -n "${1:-}" ] && STEPS=$1
CFG=tests/runtime/parity.yaml
logs=${OUT:-$(mktemp -d)}
mkdir -p "$logs" "$PLANS"
plan() { # NAME MODEL LAYERS [SAMPLES a step] [LR]
	"$GTPLAN" plan "$CFG" +policy.model_name="$2" gtplan.runtime.layers="$3" \
		gtplan.runtime.seq_len=4096 gtplan.runtime.dtype=bf16 \
		gtplan.runtime.lr="${5:-0.0001}" \
		policy.train_global_batch_size="${4:-1}" \
		-o "$PLANS/train-$1.json" >/dev/null || { echo "bench-train-gpu: plan $1"; exit 2; }
}
if [ -x "$GTPLAN" ]; then
	plan 1b meta-llama/Llama-3.2-1B 16
	plan 1b-gb8 meta-llama/Llama-3.2-1B 16 8
	plan 3b meta-llama/Llama-3.2-3B 28
	# lr 1e-5 at the 8B width: Adam without warm-up moves every weight
	# by about lr in its first steps, and at lr 1e-4 the 8-layer slice's
	# loss swung 12.9, 11.4, 20.3, 11.0, 17.9 where at 1e-5 it fell
	# 12.9, 7.6, 6.2, 5.8, 4.9, 4.1 (H200, 8 samples a step; the speed is
	# the same)
	for l in 20 16 8 4; do
		plan "8b-$l" meta-llama/Llama-3.1-8B "$l" 1 0.00001 2>/dev/null
		plan "8b-$l-gb8" meta-llama/Llama-3.1-8B "$l" 8 0.00001 \
			2>/dev/null
	done
fi
[ "${1:-}" = --plans-only ] && exit 0
[ -x "$RUN" ] || { echo "bench-train-gpu: $RUN is not built (make build/gpu/gtplan-run)"; exit 2; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
	{ echo "bench-train-gpu: no GPU"; exit 77; }
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# kernels load at start-up, not inside the first profiled step
export CUDA_MODULE_LOADING=EAGER GTPLAN_KERN_PROFILE=1
: >"$logs/bench.jsonl"
ran8=
for c in 1b 1b-gb8 3b 8b-20 8b-16 8b-8 8b-4 8b-gb8; do
	# the 8B slice: the most layers that run, then that slice with 8 samples
	case $c in
	8b-20) ;;
	8b-gb8) [ -n "$ran8" ] || continue; c=$ran8-gb8 ;;
	8b-*) [ -n "$ran8" ] && continue ;;
	esac
	[ -s "$PLANS/train-$c.json" ] || { echo "bench-train-gpu: no $PLANS/train-$c.json (--plans-only where gtplan runs)"; exit 2; }
	# no --force: gtplan-run checks its own buffers for the slice against
	# the GPU's free memory (runtime/rt_limits.c), and a slice that does
	# not fit is refused at once, so the next smaller one runs
	mpirun --bind-to none -np 1 "$RUN" "$PLANS/train-$c.json" --device cuda \
		--steps "$STEPS" --data synthetic --log "$logs/$c.log" \
		>"$logs/$c.out" 2>&1 || { echo "bench-train-gpu: $c failed"; grep -v '^\[' "$logs/$c.out" | head -8; continue; }
	case $c in 8b-*-gb8) ;; 8b-*) ran8=$c ;; esac
	python3 scripts/bench_train_report.py "$c" "$PLANS/train-$c.json" "$logs/$c.log" \
		"$logs/$c.out" | tee -a "$logs/bench.jsonl"
done
python3 scripts/bench_train_report.py --table "$logs/bench.jsonl"
echo
echo "Each GEMM shape in the runs (profiled, steps 2..$STEPS):"
echo
python3 scripts/bench_train_report.py --gemms "$logs/bench.jsonl"
