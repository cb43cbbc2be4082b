#!/usr/bin/env bash
# gtplan run --launcher srun|sbatch (cli/launch_slurm.c) against a real
# Slurm: a one-node cluster (munged, slurmctld, slurmd of Debian's
# slurm-wlm) started in a temporary folder with its own slurm.conf, munge
# key and free ports; no systemd, no cgroups (proctrack/linuxproc,
# task/none). It checks
# 1. srun inside `salloc`: a 2-rank TP2 run of tests/runtime/parity.yaml
#    under srun --mpi=pmix trains, its per-step losses the same digits as
#    the same plan under mpirun;
# 2. sbatch: the script written next to the plan, submitted for real, the
#    job COMPLETED with exit 0, its output and losses those of mpirun's;
# 3. an allocation smaller than the plan (salloc -n1): exit 1, srun's own
#    error, and gtplan's hint about the allocation (not mpirun's flags);
# 4. SIGTERM to gtplan while srun runs the ranks (srun making its own
#    allocation): gtplan says so, exits 1, and the job is gone.
# Every wait is bounded; the daemons are stopped by their PIDs on every
# path. Skipped (saying why) where the daemons cannot start: not root
# (slurmd starts jobs as their users), Slurm or munge not installed, or
# the node never idle. Prints "RESULT passed failed skipped".
set -u
cd "$(dirname "$0")/.."
GTPLAN=$(realpath "${GTPLAN:-build/asan/gtplan}")
RUN=$(realpath "${GTPLAN_RUN:-build/gtplan-run}")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
skip() { echo "launch_slurm_real: skipped: $*"; echo "RESULT 0 0 1"; exit 0; }

[ "$(id -u)" -eq 0 ] || skip "not root (slurmd starts jobs as their users)"
for b in munged slurmctld slurmd salloc srun sbatch squeue scontrol sinfo mpirun; do
	command -v "$b" >/dev/null || skip "$b is not installed (scripts/deps.sh test installs it)"
done
for b in "$GTPLAN" "$RUN"; do
	[ -x "$b" ] || { echo "FAIL: $b is not built"; echo "RESULT 0 1 0"; exit 1; }
done
# an outer Slurm job's settings must not reach this cluster's commands
for v in $(compgen -e | grep -E '^(SLURM|SALLOC|SBATCH|SRUN)_'); do unset "$v"; done

# Under /tmp, not $TMPDIR: munge's and slurmd's Unix sockets live here,
# and a socket's path is limited to 107 bytes.
tmp=$(mktemp -d /tmp/gtplan-slurm.XXXXXX)
pids=()
# drain: every job cancelled, then a bounded wait for the queue to empty
# and for each step's slurmstepd (it outlives slurmd) to remove its socket
# from the spool; 0 when all are gone
drain() {
	local i
	timeout 10 scancel --quiet $(timeout 5 squeue -h -o %i 2>/dev/null) 2>/dev/null
	for i in $(seq 50); do
		[ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] &&
			[ -z "$(find "$tmp/spool" -type s)" ] && return 0
		sleep 0.2
	done
	return 1
}
# stop: drained, then each daemon by its PID in turn, TERM and then KILL
# after 10 s, and the folder removed
stop() {
	local p i
	[ ${#pids[@]} -gt 0 ] && drain
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
		for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 130' INT TERM

node=$(hostname -s)
read -r cport dport < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
mkdir -p "$tmp/munge" "$tmp/state" "$tmp/spool" "$tmp/job"
chmod 700 "$tmp/munge"
head -c 1024 /dev/urandom >"$tmp/munge/key" && chmod 400 "$tmp/munge/key"
: >"$tmp/plugstack.conf"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=gtplantest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$cport
SlurmdPort=$dport
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
PlugStackConfig=$tmp/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
# the node's 2 CPUs as written, whatever this machine has
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=5 State=UP
EOF
export SLURM_CONF=$tmp/slurm.conf

munged -F -f --key-file="$tmp/munge/key" --socket="$tmp/munge/socket" \
	--pid-file="$tmp/munge/pid" --seed-file="$tmp/munge/seed" \
	--log-file="$tmp/munge/log" >"$tmp/munged.out" 2>&1 &
pids+=($!)
for i in $(seq 50); do [ -S "$tmp/munge/socket" ] && break; sleep 0.1; done
slurmctld -D -i >"$tmp/slurmctld.out" 2>&1 &
pids=("$!" "${pids[@]}")
slurmd -D -N "$node" >"$tmp/slurmd.out" 2>&1 &
pids=("$!" "${pids[@]}") # slurmd, slurmctld, munged: stopped in that order
for i in $(seq 150); do
	[ "$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null)" = idle ] && break
	sleep 0.2
done
if [ "$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null)" != idle ]; then
	tail -n 3 "$tmp"/*.out "$tmp"/*.log 2>/dev/null | sed 's/^/    /'
	skip "the one-node Slurm did not come up within 30 s (logs above)"
fi

R=$PWD/tests/runtime/parity.yaml
world=(cluster.gpus_per_node=2 policy.megatron_cfg.tensor_model_parallel_size=2)
gt=("$GTPLAN" run "$R" "${world[@]}" --gtplan-run "$RUN" --data synthetic)
losses() { grep -o '"loss":[^,]*' "$1" | cut -d: -f2 | tr '\n' ' '; }
# the reference: the same plan under mpirun
if timeout 60 "${gt[@]}" --steps 3 --allow-run-as-root --oversubscribe --log "$tmp/ref.log" >/dev/null 2>"$tmp/err" &&
	[ "$(grep -c '"loss"' "$tmp/ref.log")" -eq 3 ]; then ok; else bad "mpirun reference"; cat "$tmp/err"; fi
ref=$(losses "$tmp/ref.log")

# 1. srun inside an allocation of the plan's size
timeout 60 salloc --nodes=1 --ntasks=2 --time=2 "${gt[@]}" --steps 3 --launcher srun \
	--log "$tmp/srun.log" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && grep -q '2 ranks = TP 2 x CP 1 x GTP 1 x DP 1' "$tmp/err" &&
	[ -n "$ref" ] && [ "$(losses "$tmp/srun.log")" = "$ref" ]; then ok; else
	bad "srun in salloc: losses '$(losses "$tmp/srun.log")', mpirun's '$ref'"; cat "$tmp/out" "$tmp/err"; fi

# 2. sbatch: written, submitted, run; output where the job ran (job/)
(cd "$tmp/job" && timeout 30 "${gt[@]}" --steps 3 --launcher sbatch -o plan.json \
	--log sbatch.log) >"$tmp/out" 2>"$tmp/err"
rc=$? job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$tmp/out")
state=
if [ $rc -eq 0 ] && [ -n "$job" ] && grep -q '^srun --mpi=pmix --nodes=1 --ntasks=2 ' "$tmp/job/plan.json.sbatch"; then
	for i in $(seq 150); do
		state=$(timeout 5 scontrol -o show job "$job" 2>/dev/null |
			grep -o -e 'JobState=[A-Z_]*' -e ' ExitCode=[0-9:]*' | tr -d '\n')
		case $state in JobState=PENDING*|JobState=RUNNING*|JobState=COMPLETING*|"") sleep 0.2 ;; *) break ;; esac
	done
	out=$tmp/job/slurm-$job.out
	if [ "$state" = "JobState=COMPLETED ExitCode=0:0" ] &&
		grep -q '^gtplan-run: 3 steps, loss ' "$out" &&
		[ "$(losses "$tmp/job/sbatch.log")" = "$ref" ]; then ok; else
		bad "sbatch job $job: '$state', losses '$(losses "$tmp/job/sbatch.log")'"; cat "$out"; fi
else
	bad "sbatch submission (exit $rc)"; cat "$tmp/out" "$tmp/err"
fi

# 3. an allocation smaller than the plan
timeout 60 salloc --ntasks=1 --time=2 "${gt[@]}" --launcher srun >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 1 ] && grep -q '^srun: error: ' "$tmp/err" &&
	grep -q "the run failed: 'srun' exited with status 1" "$tmp/err" &&
	grep -q "^hint: inside Slurm job [0-9]*: its allocation must hold the plan's 2 ranks, 1 node x 2 (salloc --nodes=1 --ntasks-per-node=2)" "$tmp/err" &&
	! grep -q -e --allow-run-as-root -e --oversubscribe "$tmp/err"; then ok; else
	bad "srun in a small allocation"; cat "$tmp/err"; fi

# 4. SIGTERM while the ranks train: srun makes its own allocation
"${gt[@]}" --steps 1000000 --launcher srun --log "$tmp/long.log" >"$tmp/out" 2>"$tmp/err" &
g=$!
for i in $(seq 150); do [ -s "$tmp/long.log" ] && break; sleep 0.2; done
kill -TERM "$g"
for i in $(seq 100); do kill -0 "$g" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$g" 2>/dev/null
wait "$g"; rc=$?
for i in $(seq 50); do [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
if [ $rc -eq 1 ] && [ -s "$tmp/long.log" ] && grep -q 'the run was stopped by SIGTERM' "$tmp/err" &&
	[ -z "$(timeout 5 squeue -h -o %i)" ]; then ok; else
	bad "SIGTERM under srun (exit $rc)"; cat "$tmp/err"; timeout 5 squeue; fi
# no job, and no step's slurmstepd, outlived the runs
drain && ok || { bad "steps left: $(find "$tmp/spool" -type s)"; timeout 5 squeue; }

echo "RESULT $pass $fail 0"
[ "$fail" -eq 0 ]
