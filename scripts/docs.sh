#!/usr/bin/env bash
# Writes the documents that are gtplan's own output, so that they cannot
# drift from what the binary does:
#   docs/rules.md   every rule (`gtplan explain --list --markdown`), the
#                   page each rule's SARIF helpUri points at.
#   scripts/docs.sh [--check] [GTPLAN]
# --check writes nothing and exits 1 when a document differs from what
# GTPLAN (default build/gtplan) prints, naming it.
set -u
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
GTPLAN=${1:-build/gtplan}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
rc=0

# update DOC: $tmp/new holds what DOC must be
update() {
	if cmp -s "$tmp/new" "$1"; then return; fi
	if [ "$check" -eq 1 ]; then
		echo "docs: $1 differs from what $GTPLAN prints (run scripts/docs.sh)"
		diff -u "$1" "$tmp/new" | head -20
		rc=1
	else
		cp "$tmp/new" "$1"; echo "docs: wrote $1"
	fi
}

"$GTPLAN" explain --list --markdown >"$tmp/new" || exit 2
update docs/rules.md
exit "$rc"
