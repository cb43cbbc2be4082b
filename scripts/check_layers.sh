#!/usr/bin/env bash
# check_layers.sh: every include in gtplan's sources points down its layers.
#   scripts/check_layers.sh [ROOT]    check the tree at ROOT (default: this
#                                     repository); exit 0 clean, 1 otherwise
#
# gtplan's layers, bottom to top (README.md, "Layout of the repository"):
#   base -> planner -> sim -> report -> cli
# A file may include headers of its own folder and of the layers below it.
# The runtime (gtplan-run) stands apart with its kernels below it:
#   kernels -> runtime
# and neither side includes the other's headers, but for base/: the one
# folder both may include (code that knows no config and no plan, such as
# sizes both compute). A quoted include resolves
# the way the compiler resolves it here: the including file's folder first,
# then the one folder that holds a header of that name; a name held by two
# folders, an include by path or a name no folder holds is an error too,
# since the answer would depend on the order of -I flags. tests/ may
# include anything. The Makefile enforces the same order with include
# paths (LAYER_INC) and link checks (build/rel/layer-X.ok); this script
# says it about the sources, with file and line, without building.
set -u
root=${1:-"$(dirname "$0")/.."}
cd "$root" || { echo "check_layers: no such tree '$root'" >&2; exit 2; }

folders=(base planner sim report cli kernels runtime)
# rank within its stack; the stack is "g" (gtplan) or "r" (the runtime)
declare -A rank=([base]=0 [planner]=1 [sim]=2 [report]=3 [cli]=4
		 [kernels]=0 [runtime]=1)
declare -A stack=([base]=g [planner]=g [sim]=g [report]=g [cli]=g
		  [kernels]=r [runtime]=r)
declare -A owner=()
bad=0 files=0 includes=0

complain() { echo "$*"; bad=$((bad + 1)); }

for d in "${folders[@]}"; do
	[ -d "$d" ] || { complain "$d/: missing folder"; continue; }
	for f in "$d"/*.h "$d"/*.def; do
		[ -e "$f" ] || continue
		n=${f##*/}
		if [ -n "${owner[$n]:-}" ]; then
			complain "$f: '$n' is in ${owner[$n]}/ too: an include of it is ambiguous"
		else
			owner[$n]=$d
		fi
	done
done

# check_file FOLDER FILE
check_file() {
	local d=$1 f=$2 line no name o
	while IFS= read -r line; do
		no=${line%%:*}
		name=${line#*\"}
		name=${name%%\"*}
		includes=$((includes + 1))
		if [[ $name == */* ]]; then
			complain "$f:$no: includes \"$name\" by path: name the header alone"
			continue
		fi
		[ -e "$d/$name" ] && continue
		o=${owner[$name]:-}
		if [ -z "$o" ]; then
			complain "$f:$no: includes \"$name\", which no layer holds"
		elif [ "$o" = base ]; then
			continue
		elif [ "${stack[$o]}" != "${stack[$d]}" ]; then
			complain "$f:$no: includes \"$name\" ($o/): $d/ and $o/ stay apart (gtplan and gtplan-run share base/ only)"
		elif [ "${rank[$o]}" -gt "${rank[$d]}" ]; then
			complain "$f:$no: includes \"$name\" ($o/), a layer above $d/"
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
}

for d in "${folders[@]}"; do
	[ -d "$d" ] || continue
	for f in "$d"/*.c "$d"/*.h "$d"/*.def "$d"/*.cu; do
		[ -e "$f" ] || continue
		files=$((files + 1))
		check_file "$d" "$f"
	done
done

echo "check_layers: $files files, $includes includes, $bad against the layers"
[ "$bad" -eq 0 ]
