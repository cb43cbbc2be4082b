# Sourced by the gtplan-run test scripts (runtime_parity.sh, runtime_calls.sh,
# runtime_ckpt.sh, runtime_pp.sh) from the repository's root: the binaries, the base config,
# the counters and the helpers they share. Every script ends with `finish`,
# which prints "RESULT passed failed skipped" (tests/run.sh reads it).
GTPLAN=$(realpath "${GTPLAN:-build/gtplan}")
RUN=$(realpath "${GTPLAN_RUN:-build/gtplan-run}")
PY=/usr/bin/python3
CFG=tests/runtime/parity.yaml
TOL=1e-5
LIMIT=120 # seconds for one mpirun
M=policy.megatron_cfg
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
finish() { echo "RESULT $pass $fail $skip"; exit $((fail > 0)); }

if ! command -v mpirun >/dev/null 2>&1; then
	echo "SKIP: mpirun not found (make deps-test installs Open MPI)"
	skip=1; finish
fi
for b in "$GTPLAN" "$RUN"; do
	[ -x "$b" ] || { bad "$b is not built (make build/gtplan build/gtplan-run)"; finish; }
done
# ranks are the parallelism here: one BLAS thread each
export OPENBLAS_NUM_THREADS=1
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# check NAME CMD...: CMD must exit 0 (its output is shown when not)
check() {
	local name=$1; shift
	if "$@" >"$tmp/out" 2>&1; then ok; else
		bad "$name"; sed 's/^/    /' "$tmp/out" | tail -15; fi
}
# refuse NAME TEXT CMD...: CMD must fail (not by the timeout), saying TEXT
refuse() {
	local name=$1 text=$2; shift 2
	"$@" >"$tmp/out" 2>&1; local rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qF -- "$text" "$tmp/out"; then ok; else
		bad "$name: exit $rc, want a failure saying '$text'"; sed 's/^/    /' "$tmp/out" | tail -10; fi
}
# mpi NP ARGS...: gtplan-run on NP ranks, under the timeout
mpi() {
	local np=$1; shift
	timeout "$LIMIT" mpirun --oversubscribe --bind-to none -np "$np" "$RUN" "$@"
}
