#!/usr/bin/env bash
# gtplan run's launchers beyond one mpirun (cli/launch_slurm.c): srun
# inside an allocation, an sbatch script (printed by --dry-run, written and
# submitted otherwise), mpirun's hostfile from --hosts; nodes, tasks per
# node and GPUs per node come from the plan's training pool. Here a fake
# srun/sbatch on PATH records what it was given; tests/launch_slurm_real.sh
# runs the same launchers against a real one-node Slurm.
# Prints "RESULT passed failed skipped".
set -u
cd "$(dirname "$0")/.."
GTPLAN=$(realpath "${GTPLAN:-build/asan/gtplan}")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
pass=0 fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
R=tests/runtime/parity.yaml
two=(cluster.num_nodes=2 cluster.gpus_per_node=3)   # 6 ranks, 2 nodes of 3
run() { "$GTPLAN" run "$R" "${two[@]}" --gtplan-run /bin/true "$@" >"$tmp/out" 2>"$tmp/err"; }
want() { # NAME TEXT: $tmp/out is exactly TEXT
	if [ "$(cat "$tmp/out")" == "$2" ]; then ok; else bad "$1: got"; sed 's/^/    /' "$tmp/out" "$tmp/err"; fi
}

run --launcher srun --dry-run --steps 2
want "srun" "srun --mpi=pmix --nodes=2 --ntasks=6 --ntasks-per-node=3 /bin/true PLAN.json --steps 2"
run --launcher srun --dry-run --device cuda
want "srun on GPUs" "srun --mpi=pmix --nodes=2 --ntasks=6 --ntasks-per-node=3 --gpus-per-node=3 /bin/true PLAN.json --device cuda"
run --launcher sbatch --dry-run --device cuda -o "$tmp/plan.json"
want "sbatch script" "#!/bin/bash
# gtplan run --launcher sbatch: 6 ranks of gtplan-run, 2 nodes x 3
#SBATCH --job-name=gtplan-run
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=3
#SBATCH --gpus-per-node=3
set -eu
srun --mpi=pmix --nodes=2 --ntasks=6 --ntasks-per-node=3 --gpus-per-node=3 /bin/true $tmp/plan.json --device cuda"
bash -n "$tmp/out" && ok || bad "the sbatch script does not parse"
# submitted: the script written next to the plan, sbatch given its path
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "$0 $*" >"%s/called"\ncp "$1" "%s/submitted"\necho "Submitted batch job 7"\n' "$tmp" "$tmp" >"$tmp/bin/sbatch"
chmod +x "$tmp/bin/sbatch"
PATH="$tmp/bin:$PATH" run --launcher sbatch -o "$tmp/plan.json"
if [ $? -eq 0 ] && grep -q "sbatch $tmp/plan.json.sbatch" "$tmp/called" &&
	grep -q '^#SBATCH --nodes=2$' "$tmp/submitted" && [ -s "$tmp/plan.json" ]; then ok; else
	bad "sbatch submission"; cat "$tmp/err"; fi
run --launcher sbatch --script "$tmp/job.sh" --dry-run -o "$tmp/plan.json"
want "sbatch --script" "sbatch $tmp/job.sh"
grep -q "^srun --mpi=pmix --nodes=2 " "$tmp/job.sh" && ok || bad "--script not written"
# sbatch runs later: the plan must be kept
run --launcher sbatch
[ $? -eq 2 ] && grep -q 'keep it with -o FILE' "$tmp/err" && ok || bad "sbatch without -o"
# srun for real: a fake srun gets the plan while it exists
printf '#!/bin/sh\necho "$*" >"%s/srun-args"\nfor a; do case $a in *.json|*plan-*) [ -s "$a" ] && echo ok >"%s/had-plan";; esac; done\n' "$tmp" "$tmp" >"$tmp/bin/srun"
chmod +x "$tmp/bin/srun"
PATH="$tmp/bin:$PATH" run --launcher srun --steps 1
if [ $? -eq 0 ] && grep -q -- '--ntasks-per-node=3 /bin/true ' "$tmp/srun-args" && [ -s "$tmp/had-plan" ]; then ok; else
	bad "srun run"; cat "$tmp/err"; fi
# a failed srun inside an allocation: the hint is about the allocation,
# not mpirun's flags
printf '#!/bin/sh\nexit 1\n' >"$tmp/bin/srun"
SLURM_JOB_ID=42 PATH="$tmp/bin:$PATH" run --launcher srun
if [ $? -eq 1 ] && grep -q "the run failed: 'srun' exited with status 1" "$tmp/err" &&
	grep -q "inside Slurm job 42: its allocation must hold the plan's 6 ranks, 2 nodes x 3 (salloc --nodes=2 --ntasks-per-node=3)" "$tmp/err" &&
	! grep -q -e --allow-run-as-root -e --oversubscribe "$tmp/err"; then ok; else bad "srun failure hint"; cat "$tmp/err"; fi
# mpirun's own flags are refused with Slurm
run --launcher srun --oversubscribe --dry-run
[ $? -eq 2 ] && grep -q "\-\-oversubscribe is mpirun's" "$tmp/err" && ok || bad "srun --oversubscribe"
run --launcher sbatch --allow-run-as-root --dry-run
[ $? -eq 2 ] && grep -q "\-\-allow-run-as-root is mpirun's" "$tmp/err" && ok || bad "sbatch --allow-run-as-root"
# mpirun with a hostfile from the plan's nodes
run --hosts n0,n1 --hostfile "$tmp/hosts" --dry-run
want "mpirun hostfile" "mpirun --hostfile $tmp/hosts -np 6 /bin/true PLAN.json"
[ "$(cat "$tmp/hosts")" == "n0 slots=3
n1 slots=3" ] && ok || { bad "hostfile"; cat "$tmp/hosts"; }
run --hosts n0 --hostfile "$tmp/hosts" --dry-run
[ $? -eq 2 ] && grep -q 'names 1 host but the plan trains on 2 nodes' "$tmp/err" && ok || bad "--hosts count"
run --hosts n0,n1 --dry-run
[ $? -eq 2 ] && grep -q 'name it with --hostfile FILE' "$tmp/err" && ok || bad "--hosts without --hostfile"
run --launcher pbs --dry-run
[ $? -eq 2 ] && grep -q "unknown --launcher 'pbs'" "$tmp/err" && ok || bad "unknown launcher"
echo "RESULT $pass $fail 0"
[ "$fail" -eq 0 ]
