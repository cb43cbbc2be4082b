#!/usr/bin/env bash
# The gtplan-lint hook of .pre-commit-hooks.yaml: `gtplan lint FILE...`
# with the hook's args, run in the user's repository. Uses the gtplan on
# PATH, else this checkout's build/gtplan, built on first use.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
if command -v gtplan >/dev/null 2>&1; then
	exec gtplan lint "$@"
fi
if [ ! -x "$here/build/gtplan" ]; then
	echo "gtplan-lint: building gtplan in $here (once)" >&2
	# the user's compiler may warn where Debian's does not: not fatal here
	make -s -C "$here" build/gtplan CFLAGS=-Wno-error >&2
fi
exec "$here/build/gtplan" lint "$@"
