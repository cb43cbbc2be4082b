#!/usr/bin/env bash
# Installs what gtplan's build, demo and tests need on Debian 12, once.
# Idempotent: packages already present are skipped, and apt-get runs only
# when something is missing. Usage: scripts/deps.sh build|test
set -euo pipefail

want=(build-essential pkg-config libyaml-dev libjansson-dev
      libgraphviz-dev) # gtplan render: libcgraph + libgvc, no `dot` needed
if [ "${1:-build}" = test ]; then
	want+=(check python3 python3-omegaconf python3-jsonschema python3-yaml valgrind
	       libopenmpi-dev openmpi-bin libopenblas-dev)
	# tests/fuzz.sh: libFuzzer with ASan + UBSan; their runtimes
	# (libclang_rt.fuzzer, .asan, .ubsan) are in libclang-rt-dev, which
	# clang only recommends and --no-install-recommends leaves out
	want+=(clang libclang-rt-dev)
	# tests/install.sh: man renders the man page, zsh and fish parse
	# their completions
	want+=(man-db zsh fish)
	# tests/launch_slurm_real.sh: a one-node Slurm (its own slurm.conf,
	# munge key and ports in a temporary folder) for gtplan run
	# --launcher srun|sbatch; the packages' services stay down without
	# /etc/slurm/slurm.conf
	want+=(slurmctld slurmd slurm-client munge)
	# tests/precommit.sh: pre-commit try-repo runs the hook for real
	want+=(pre-commit)
	# tests/render_e2e.sh: xmllint checks the SVG, Chromium draws it
	want+=(libxml2-utils chromium)
	# tests/lint_select.sh and tests/schema_corpus.sh: npm installs
	# Microsoft's SARIF multitool and ajv-cli under build/npm; a Node.js
	# that brings its own npm (NodeSource's) is enough
	command -v npm >/dev/null 2>&1 || want+=(npm)
fi

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then sudo=sudo; else
		echo "deps: missing packages: ${missing[*]}" >&2
		echo "deps: hint: run as root, or install them with apt-get" >&2
		exit 2
	fi
else
	sudo=
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# No service of a package starts on install (munge, slurmctld, slurmd: the
# tests run their own): where the machine has no policy-rc.d (Docker's
# images have one that says the same), one that refuses every start stands
# in for the install's length (invoke-rc.d's exit 101: action forbidden).
rcd=/usr/sbin/policy-rc.d
if [ ! -e "$rcd" ]; then
	trap '$sudo rm -f "$rcd"' EXIT
	printf '#!/bin/sh\nexit 101\n' | $sudo tee "$rcd" >/dev/null
	$sudo chmod 755 "$rcd"
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
