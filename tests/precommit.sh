#!/usr/bin/env bash
# The integrations, run as their hosts would run them:
# - .pre-commit-hooks.yaml's gtplan-lint hook: its `files` pattern picks
#   the configs of a commit, its entry lints them (exit 1 on a bad one);
#   with pre-commit installed, `pre-commit try-repo` runs it for real;
# - action.yml's composite steps (build, lint) with the inputs of
#   .github/workflows/gtplan.yml, then with a bad config: annotations,
#   gtplan.sarif and the exit-code output.
# Prints "RESULT passed failed skipped".
set -u
cd "$(dirname "$0")/.."
repo=$(pwd)
PY=/usr/bin/python3
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
[ -x build/gtplan ] || make -s build/gtplan

# ---- pre-commit ------------------------------------------------------------
u=$tmp/user; mkdir -p "$u/examples/configs/sub" "$u/docs"
cp tests/configs/good/gtp-off.yaml "$u/examples/configs/good.yaml"
cp tests/configs/bad/world-not-divisible.yaml "$u/examples/configs/sub/bad.yaml"
cp tests/configs/bad/world-not-divisible.yaml "$u/docs/not-a-config.yaml"
(cd "$u" && find . -type f | sed 's|^\./||' | sort) >"$tmp/all"
"$PY" - .pre-commit-hooks.yaml "$tmp/all" >"$tmp/picked" <<'PYEOF'
import re, sys, yaml
hooks = yaml.safe_load(open(sys.argv[1]))
h = [x for x in hooks if x["id"] == "gtplan-lint"][0]
assert h["language"] == "script" and h["entry"] == "scripts/pre-commit.sh", h
for f in open(sys.argv[2]).read().split():
    if re.search(h["files"], f):
        print(f)
PYEOF
if [ "$(cat "$tmp/picked")" == "examples/configs/good.yaml
examples/configs/sub/bad.yaml" ]; then ok; else bad "hook's files picked:"; cat "$tmp/picked"; fi
(cd "$u" && PATH=/usr/bin:/bin "$repo/scripts/pre-commit.sh" examples/configs/good.yaml) >"$tmp/out" 2>&1 && ok || { bad "hook on a good config"; cat "$tmp/out"; }
(cd "$u" && PATH=/usr/bin:/bin "$repo/scripts/pre-commit.sh" $(cat "$tmp/picked")) >"$tmp/out" 2>&1
if [ $? -eq 1 ] && grep -q 'sub/bad.yaml:.*error\[GT303\]' "$tmp/out"; then ok; else bad "hook on a bad config"; cat "$tmp/out"; fi
if command -v pre-commit >/dev/null && command -v git >/dev/null; then
	(cd "$u" && git init -q && git add -A && PATH="$repo/build:$PATH" pre-commit try-repo "$repo" gtplan-lint --all-files) >"$tmp/out" 2>&1
	# failed on the bad config, for its finding (not for a hook that did not run)
	grep -q '^gtplan lint\.*Failed$' "$tmp/out" && grep -q 'sub/bad.yaml:.*error\[GT303\]' "$tmp/out" &&
		ok || { bad "pre-commit try-repo"; tail -20 "$tmp/out"; }
else
	skip=$((skip + 1)); echo "precommit: pre-commit not installed: try-repo skipped"
fi

# ---- the GitHub Action, with the example workflow's inputs ---------------
# action STEPS_FILE INPUTS_JSON: runs the composite's run: steps in $tmp/ws
action() {
	rm -rf "$tmp/ws"; mkdir -p "$tmp/ws/tests"
	# the workspace: a checkout of this repository's configs
	cp -r examples "$tmp/ws/"; cp -r tests/configs "$tmp/ws/tests/"
	: >"$tmp/ws/.path"; : >"$tmp/ws/.output"
	"$PY" - action.yml "$1" >"$tmp/steps.sh" <<'PYEOF'
import json, re, sys, yaml
a = yaml.safe_load(open(sys.argv[1]))
assert a["runs"]["using"] == "composite"
inputs = {k: v.get("default", "") for k, v in a["inputs"].items()}
inputs.update(json.loads(sys.argv[2]))
for k, v in a["inputs"].items():
    assert not v.get("required") or inputs.get(k), "required input " + k
for s in a["runs"]["steps"]:
    if "run" not in s:
        continue
    body = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], s["run"])
    assert "${{" not in body, body
    print("( # step " + s["id"] + "\n" + body + "\n) || exit $?")
    print('export PATH="$(cat "$GITHUB_PATH" | tr "\\n" ":")$PATH"')
PYEOF
	(cd "$tmp/ws" && GITHUB_ACTION_PATH=$repo GITHUB_PATH=$tmp/ws/.path \
		GITHUB_OUTPUT=$tmp/ws/.output PATH=/usr/bin:/bin bash "$tmp/steps.sh") >"$tmp/out" 2>&1
}
with=$("$PY" -c '
import json, sys, yaml
w = yaml.safe_load(open(".github/workflows/gtplan.yml"))
step = [s for s in w["jobs"]["lint"]["steps"] if s.get("uses") == "./"][0]
print(json.dumps(step["with"]))')
action "$with"
if [ $? -eq 0 ] && grep -qx 'exit-code=0' "$tmp/ws/.output" && [ -s "$tmp/ws/gtplan.sarif" ]; then ok; else
	bad "action on the example workflow's configs"; tail -20 "$tmp/out"; cat "$tmp/ws/.output"; fi
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["version"] == "2.1.0" and len(d["runs"][0]["artifacts"]) >= 2' "$tmp/ws/gtplan.sarif" && ok || bad "action's SARIF"
action "{\"paths\": \"$repo/tests/configs/bad/world-not-divisible.yaml\"}"
if grep -qx 'exit-code=1' "$tmp/ws/.output" && grep -q '^::error file=.*world-not-divisible.yaml,line=' "$tmp/out"; then ok; else
	bad "action on a bad config"; tail -20 "$tmp/out"; fi

echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
