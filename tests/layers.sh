#!/usr/bin/env bash
# The layers' order holds, and each guard of it catches a back-edge:
#   tests/layers.sh     prints "RESULT passed failed skipped"
# 1. scripts/check_layers.sh passes on this tree;
# 2. it fails, naming the file and line, on copies of the sources with one
#    include against the order planted (planner -> sim, base -> cli,
#    report -> cli, sim -> runtime, runtime -> planner, kernels -> runtime,
#    base -> runtime), a header name held by two folders, and an include by
#    path; it passes runtime and kernels including base/, which they share;
# 3. the build refuses them too (needs build/rel from `make`, else
#    skipped): in a copy of the tree and its objects, planner/plan.c
#    including sim's simulate.h does not compile, and a planner function
#    calling sim_not_ok() fails the planner's link check
#    (build/rel/layer-planner.ok), while the unchanged copy passes it.
set -u
cd "$(dirname "$0")/.." || exit 2
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
SRC=(base planner sim report cli runtime kernels)

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# A fresh copy of the sources at $tmp/NAME (mtimes kept).
copy() {
	rm -rf "${tmp:?}/$1"; mkdir -p "$tmp/$1"
	cp -a "${SRC[@]}" "$tmp/$1/"
}

# plant NAME FILE LINE: appends LINE to FILE of copy NAME.
plant() { printf '%s\n' "$3" >>"$tmp/$1/$2"; }

# expect_caught NAME WANT: the check fails on copy NAME and says WANT.
expect_caught() {
	if scripts/check_layers.sh "$tmp/$1" >"$tmp/out" 2>&1; then
		bad "$1: check_layers passed a planted back-edge"; return
	fi
	if grep -qF -- "$2" "$tmp/out"; then ok; else
		bad "$1: check_layers did not say '$2'"; sed 's/^/    /' "$tmp/out"; fi
}

# ---- 1. this tree --------------------------------------------------------
if scripts/check_layers.sh >"$tmp/out" 2>&1; then ok; else
	bad "this tree breaks the layers:"; sed 's/^/    /' "$tmp/out"; fi

# ---- 2. planted back-edges -----------------------------------------------
n=$(($(wc -l <planner/plan.c) + 1))
copy up1; plant up1 planner/plan.c '#include "simulate.h"'
expect_caught up1 "planner/plan.c:$n: includes \"simulate.h\" (sim/), a layer above planner/"
copy up2; plant up2 base/diag.h '#include "cli.h"'
expect_caught up2 "(cli/), a layer above base/"
copy up3; plant up3 report/render.c '#include "cmd.h"'
expect_caught up3 "(cli/), a layer above report/"
copy apart1; plant apart1 sim/match.c '#include "coll.h"'
expect_caught apart1 "sim/ and runtime/ stay apart"
copy apart2; plant apart2 runtime/rt_plan.c '#include "plan.h"'
expect_caught apart2 "runtime/ and planner/ stay apart"
copy up4; plant up4 kernels/kern.c '#include "rt_plan.h"'
expect_caught up4 "(runtime/), a layer above kernels/"
copy apart3; plant apart3 base/jsonw.c '#include "kern.h"'
expect_caught apart3 "base/ and kernels/ stay apart"
copy shared; plant shared runtime/rt_plan.c '#include "jsonw.h"'
plant shared kernels/kern.c '#include "levenshtein.h"'
if scripts/check_layers.sh "$tmp/shared" >"$tmp/out" 2>&1; then ok; else
	bad "runtime/ and kernels/ may include base/"; sed 's/^/    /' "$tmp/out"; fi
copy twice; cp "$tmp/twice/planner/plan.h" "$tmp/twice/sim/plan.h"
expect_caught twice "is in planner/ too: an include of it is ambiguous"
copy path; plant path cli/main.c '#include "../sim/simulate.h"'
expect_caught path "includes \"../sim/simulate.h\" by path"

# ---- 3. the build --------------------------------------------------------
if [ ! -f build/rel/libplanner.a ] || [ ! -f build/rel/layer-planner.ok ]; then
	echo "SKIP: the build's guards (no build/rel: run make first)"
	skip=$((skip + 3))
else
	b=$tmp/build
	copy build
	cp -a Makefile scripts schemas data "$b/"
	mkdir -p "$b/build/rel"
	cp -a build/gen "$b/build/"
	cp -a build/rel/base build/rel/planner build/rel/gen build/rel/libbase.a \
		build/rel/libplanner.a build/rel/layer-base.ok \
		build/rel/layer-planner.ok "$b/build/rel/"
	if make -C "$b" --no-print-directory build/rel/layer-planner.ok \
		>"$tmp/out" 2>&1; then ok; else
		bad "the unchanged copy fails the planner's link check"
		sed 's/^/    /' "$tmp/out" | tail -20; fi

	cp -a planner/plan.c "$tmp/plan.c"
	plant build planner/plan.c '#include "simulate.h"'
	if make -C "$b" --no-print-directory build/rel/planner/plan.o \
		>"$tmp/out" 2>&1; then
		bad "planner/plan.c compiled with sim's simulate.h included"
	elif grep -qF 'simulate.h: No such file' "$tmp/out"; then ok; else
		bad "planner/plan.c failed for another reason"
		sed 's/^/    /' "$tmp/out" | tail -20; fi

	cp "$tmp/plan.c" "$b/planner/plan.c"
	plant build planner/plan.c "$(printf '%s\n' \
		'size_t sim_not_ok(const void *r);' \
		'size_t layers_probe(const void *r);' \
		'size_t layers_probe(const void *r) { return sim_not_ok(r); }')"
	if make -C "$b" --no-print-directory build/rel/layer-planner.ok \
		>"$tmp/out" 2>&1; then
		bad "the planner's link check passed a call into sim/"
	elif grep -qF "undefined reference to \`sim_not_ok'" "$tmp/out"; then ok; else
		bad "the planner's link check failed for another reason"
		sed 's/^/    /' "$tmp/out" | tail -20; fi
fi

echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
