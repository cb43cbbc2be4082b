#!/usr/bin/env bash
# Times `gtplan plan CFG -o /dev/null` (the plan with every call simulated)
# and `gtplan sim CFG` (every call of the driver's table) on worlds of 1024,
# 65536 and 1048576 ranks and prints wall time and peak memory per size.
#
#   scripts/bench.sh [WORLD ...]        (default: 1024 65536 1048576)
#   GTPLAN=build/gtplan                 the binary to time
#   BENCH_STRICT=1                      exit 1 when 1M ranks miss the targets
#
# Each config is TP 8, 32 weight shards (GTP 4), CP 1, PP 1, 8 GPUs per node,
# num_nodes = W / 8, colocated generation; so D = W / 32 copies and
# L = W / 8 lanes, and the batch is 2 samples per lane in micro-batches of 1.
# Targets: a 1M-rank plan in under 2 s and under 1 GiB; a 1M-rank
# simulation of every call in under 5 s.
set -euo pipefail
cd "$(dirname "$0")/.."

gtplan=${GTPLAN:-build/gtplan}
worlds=("$@")
[ ${#worlds[@]} -eq 0 ] && worlds=(1024 65536 1048576)
target_world=1048576 target_s=2 target_sim_s=5 target_kib=$((1024 * 1024))

if [ ! -x "$gtplan" ]; then
	echo "bench: $gtplan is not built (run: make build/gtplan)" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

write_config() { # world file
	local w=$1 lanes=$(($1 / 8))
	cat >"$2" <<EOF
# gtplan benchmark: $w ranks.
policy:
  model_name: "meta-llama/Llama-3.1-8B-Instruct"
  train_global_batch_size: $((lanes * 2))
  train_micro_batch_size: 1
  logprob_batch_size: 1
  max_total_sequence_length: 4096
  dtensor_cfg:
    enabled: false
  megatron_cfg:
    enabled: true
    tensor_model_parallel_size: 8
    tensor_parallel_num_weight_shards: 32
    context_parallel_size: 1
    pipeline_model_parallel_size: 1
    expert_model_parallel_size: 1
    expert_tensor_parallel_size: null
    sequence_parallel: true
    optimizer:
      use_distributed_optimizer: true
    distributed_data_parallel_config:
      num_distributed_optimizer_instances: 1
  generation:
    backend: "vllm"
    colocated:
      enabled: true
    vllm_cfg:
      tensor_parallel_size: 8
      pipeline_parallel_size: 1
grpo:
  num_prompts_per_step: $((lanes / 4))
  num_generations_per_prompt: 8
cluster:
  num_nodes: $((w / 8))
  gpus_per_node: 8
gtplan:
  rank_order: "tp-cp-gtp-ep-dp-pp"
  driver_layout: "4d"
EOF
}

# Runs "$@", writes "<seconds> <max RSS KiB> <exit status>" to $tmp/m.
measure() {
	local rc=0
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%e %M' -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || rc=$?
		echo "$(tail -n 1 "$tmp/t") $rc" >"$tmp/m"
	else
		# No GNU time: the child's peak RSS from getrusage(RUSAGE_CHILDREN);
		# it includes the ~10 MiB the child had as a fork of Python.
		/usr/bin/python3 - "$@" >"$tmp/m" 2>"$tmp/err" <<'EOF'
import resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.monotonic() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
print(f"{wall:.2f} {rss} {rc}")
EOF
	fi
}

printf '%-6s %-10s %10s %10s %12s  %s\n' cmd ranks nodes "wall (s)" "max RSS MiB" status
failed=0 missed=0
for cmd in plan sim; do
	if [ "$cmd" = plan ]; then limit_s=$target_s; else limit_s=$target_sim_s; fi
	for w in "${worlds[@]}"; do
		if [ $((w % 32)) -ne 0 ] || [ "$w" -lt 32 ]; then
			echo "bench: $w is not a positive multiple of 32 (TP 8 x GTP 4)" >&2
			exit 2
		fi
		write_config "$w" "$tmp/w$w.yaml"
		if [ "$cmd" = plan ]; then
			measure "$gtplan" plan "$tmp/w$w.yaml" -o /dev/null
		else
			measure "$gtplan" sim "$tmp/w$w.yaml"
		fi
		read -r secs kib rc <"$tmp/m"
		status=ok
		if [ "$rc" -ge 2 ]; then
			status="gtplan exited $rc: $(head -n 1 "$tmp/err")"
			failed=1
		elif [ "$w" -eq "$target_world" ]; then
			if awk -v s="$secs" -v t="$limit_s" 'BEGIN { exit !(s < t) }' &&
				[ "$kib" -lt "$target_kib" ]; then
				status="ok (meets < ${limit_s} s, < 1 GiB)"
			else
				status="MISSES the targets (< ${limit_s} s, < 1 GiB)"
				missed=1
			fi
		fi
		[ "$rc" -eq 1 ] && status="$status, with findings"
		printf '%-6s %-10s %10s %10s %12s  %s\n' "$cmd" "$w" $((w / 8)) "$secs" \
			"$(awk -v k="$kib" 'BEGIN { printf "%.1f", k / 1024 }')" "$status"
	done
done
echo "targets: $target_world ranks: plan in < ${target_s} s, sim of every call in < ${target_sim_s} s, both < 1 GiB max RSS"
[ "$failed" -eq 0 ] || exit 1
[ "$missed" -eq 0 ] || [ "${BENCH_STRICT:-0}" != 1 ] || exit 1
exit 0
