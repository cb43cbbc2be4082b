#!/usr/bin/env bash
# Writes the documents that are gtplan's own output, so that they cannot
# drift from what the binary does:
#   docs/rules.md   every rule (`gtplan explain --list --markdown`), the
#                   page each rule's SARIF helpUri points at;
#   docs/gtplan.1   the manual page: `gtplan help` and each command's
#                   `gtplan help CMD`, one section each (make install
#                   installs it);
#   README.md       the command blocks marked `<!-- docs.sh: CMD -->`
#                   (scripts/readme_blocks.py runs them).
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

# roff: backslashes escaped, a line starting with . or ' protected
roff() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }
{
	version=$("$GTPLAN" --version | cut -d' ' -f2)
	printf '.TH GTPLAN 1 "" "gtplan %s" "User Commands"\n' "$version"
	printf '.SH NAME\ngtplan \\- plan, check, draw and run GTP layouts for Megatron / NeMo-RL\n'
	printf '.SH SYNOPSIS\n.B gtplan\n.I command\n[options] [CONFIG...] [OVERRIDE...]\n'
	printf '.SH DESCRIPTION\n.nf\n'
	"$GTPLAN" help | roff
	printf '.fi\n.SH COMMANDS\n'
	for c in lint plan sim explain config render ckpt run; do
		printf '.SS %s\n.nf\n' "$c"
		"$GTPLAN" help "$c" | roff
		printf '.fi\n'
	done
	printf '.SH FILES\n.TP\n.B .gtplan.yaml, pyproject.toml [tool.gtplan]\n'
	printf 'project settings, found in the config'"'"'s folder or above (see lint)\n'
	printf '.SH SEE ALSO\nhttps://github.com/gtplan/gtplan, docs/rules.md (every rule)\n'
} >"$tmp/new" || exit 2
update docs/gtplan.1

/usr/bin/python3 scripts/readme_blocks.py "$GTPLAN" README.md "$tmp/new" || exit 2
update README.md
exit "$rc"
