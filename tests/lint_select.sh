#!/usr/bin/env bash
# Which findings gtplan reports (cli/project.h, base/select.h), and the
# formats CI systems read (base/diag_ci.c):
#   --ignore, --select, --min-severity, -q; inline `# gtplan: ignore[...]`;
#   gtplan.ignore; .gtplan.yaml and pyproject.toml's [tool.gtplan] found
#   above the config (up to .git), --config, --no-config; unused (GT001)
#   and unknown (GT002) suppressions, bad project settings (GT003);
#   --format concise|github|junit; colour from NO_COLOR, FORCE_COLOR, TERM;
#   explain by rule name; -V; hardware defaults in project files.
# Each case builds its own folder (with a .git marker, so that no project
# file above the test's folder is read). Prints "RESULT passed failed skipped".
set -u
cd "$(dirname "$0")/.."
GTPLAN=$(realpath "${GTPLAN:-build/asan/gtplan}")
PY=/usr/bin/python3
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
unset NO_COLOR FORCE_COLOR
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# run WANT_RC CMD...: runs CMD in $tmp/p, stdout to $tmp/out, stderr to $tmp/err
run() {
	local want=$1; shift
	(cd "$tmp/p" && "$@") >"$tmp/out" 2>"$tmp/err"; local rc=$?
	if [ "$rc" -eq "$want" ]; then ok; else
		bad "'$*': exit $rc, want $want"; sed 's/^/    /' "$tmp/err" | head -20; fi
}
has() { # FILE TEXT
	if grep -qF -- "$2" "$1"; then ok; else bad "'$2' not in $(basename "$1")"; sed 's/^/    /' "$1" | head -20; fi
}
hasnt() { # FILE TEXT
	if grep -qF -- "$2" "$1"; then bad "'$2' in $(basename "$1")"; sed 's/^/    /' "$1" | head -20; else ok; fi
}
# where the findings point: file:line:col: severity[CODE], one a line
where() { grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning|note)\[GT[0-9]+\]: ' "$tmp/err" |
	sed -E 's/^(.*: (error|warning|note)\[GT[0-9]+\]): .*/\1/'; }
same() { # NAME WANT-TEXT: where the findings point, exactly
	if [ "$(where)" == "$2" ]; then ok; else bad "$1: got"; where | sed 's/^/    /'; echo "    want"; echo "$2" | sed 's/^/    /'; fi
}
fresh() { rm -rf "$tmp/p"; mkdir -p "$tmp/p/.git" "$tmp/p/cfg"; }

# A config with a warning (GT632: 4 micro-batches over 8 stages) and a
# note (GT605: the padded vocabulary) on known lines.
warn_cfg() {
	cat >"$tmp/p/cfg/$1" <<EOF
policy:
  model_name: meta-llama/Llama-3.2-1B-Instruct
  train_global_batch_size: 4$2
  train_micro_batch_size: 1
  megatron_cfg:
    enabled: true
    pipeline_model_parallel_size: 8
cluster:
  num_nodes: 1
  gpus_per_node: 8
EOF
}

# ---- command-line selection ----------------------------------------------
fresh; warn_cfg w.yaml ""
run 0 "$GTPLAN" lint cfg/w.yaml --color never
same "plain" "cfg/w.yaml:3:28: warning[GT632]"
has "$tmp/err" "gtplan: 0 errors, 1 warning, 0 notes"
run 1 "$GTPLAN" lint cfg/w.yaml --strict --color never
run 0 "$GTPLAN" lint cfg/w.yaml --strict --ignore GT632 --color never
has "$tmp/err" "gtplan: no findings (1 suppressed)"
run 0 "$GTPLAN" lint cfg/w.yaml --strict --ignore=microbatches-below-pp
has "$tmp/err" "(1 suppressed)"
run 0 "$GTPLAN" lint cfg/w.yaml --strict --ignore GT6
run 0 "$GTPLAN" lint cfg/w.yaml --strict --select GT3,GT4
has "$tmp/err" "gtplan: no findings"
run 1 "$GTPLAN" lint cfg/w.yaml --strict --select GT632
run 0 "$GTPLAN" lint cfg/w.yaml --strict --min-severity error
has "$tmp/err" "gtplan: no findings"
run 0 "$GTPLAN" lint cfg/w.yaml -q --color never
same "quiet keeps findings" "cfg/w.yaml:3:28: warning[GT632]"
hasnt "$tmp/err" "gtplan: 0 errors"
run 0 "$GTPLAN" lint cfg/w.yaml --quiet --ignore GT632
if [ ! -s "$tmp/err" ] && [ ! -s "$tmp/out" ]; then ok; else bad "-q on a clean config printed something"; fi
run 2 "$GTPLAN" lint cfg/w.yaml --ignore GT6320
has "$tmp/err" "no rule 'GT6320'"
run 2 "$GTPLAN" lint cfg/w.yaml --select microbatch-below-pp
has "$tmp/err" "did you mean GT632?"
run 2 "$GTPLAN" lint cfg/w.yaml --min-severity loud
has "$tmp/err" "unknown severity 'loud'"
run 2 "$GTPLAN" lint cfg/w.yaml --ignore
has "$tmp/err" "--ignore needs a value"

# ---- inline suppressions ---------------------------------------------------
fresh; warn_cfg w.yaml "  # gtplan: ignore[GT632] 4 micro-batches on purpose"
run 0 "$GTPLAN" lint cfg/w.yaml --strict --color never
has "$tmp/err" "gtplan: no findings (1 suppressed)"
# a rule name works too, and a list; the one that matches nothing is GT001
fresh; warn_cfg w.yaml "  # gtplan: ignore[microbatches-below-pp, GT605]"
run 1 "$GTPLAN" lint cfg/w.yaml --strict --color never
same "inline unused" "cfg/w.yaml:3:71: warning[GT001]"
has "$tmp/err" "the inline suppression of GT605 matches no finding on this line"
run 0 "$GTPLAN" lint cfg/w.yaml --strict --ignore GT001
# on another line it suppresses nothing; an unknown code is GT002
fresh; warn_cfg w.yaml ""
sed -i 's/^  num_nodes: 1$/  num_nodes: 1 # gtplan: ignore[GT632, GT63x]/' "$tmp/p/cfg/w.yaml"
run 1 "$GTPLAN" lint cfg/w.yaml --color never
same "inline elsewhere" "cfg/w.yaml:3:28: warning[GT632]
cfg/w.yaml:9:33: warning[GT001]
cfg/w.yaml:9:40: error[GT002]"
# a '#' inside a value is not a comment
fresh; warn_cfg w.yaml ' # x#gtplan: ignore[GT632]'
run 0 "$GTPLAN" lint cfg/w.yaml --color never
same "hash in a comment's word" "cfg/w.yaml:3:28: warning[GT632]"

# ---- gtplan.ignore, and a parent shared by two configs --------------------
fresh; warn_cfg base.yaml ""
cat >>"$tmp/p/cfg/base.yaml" <<'EOF'
gtplan:
  ignore: [GT632, GT303]
EOF
printf 'defaults: base.yaml\n' >"$tmp/p/cfg/a.yaml"
printf 'defaults: base.yaml\ncluster:\n  num_nodes: 2\n' >"$tmp/p/cfg/b.yaml"
run 0 "$GTPLAN" lint cfg/base.yaml --strict --color never --ignore GT001
has "$tmp/err" "gtplan: no findings ("
# GT303 suppresses nothing in either config: reported once, at the parent
run 0 "$GTPLAN" lint cfg/a.yaml cfg/b.yaml --color never
same "shared parent unused once" "cfg/base.yaml:12:19: warning[GT001]"
has "$tmp/err" "gtplan.ignore suppresses GT303, but no such finding was reported"
# used by one child only: not reported
printf 'defaults: base.yaml\ncluster:\n  num_nodes: 1\n  gpus_per_node: 6\n' >"$tmp/p/cfg/c.yaml"
run 0 "$GTPLAN" lint cfg/a.yaml cfg/c.yaml --color never
hasnt "$tmp/err" "GT001"
has "$tmp/err" "(2 suppressed)"
# the schema knows the key: a number there is GT2xx, not a crash
printf 'defaults: base.yaml\ngtplan:\n  ignore: 5\n' >"$tmp/p/cfg/d.yaml"
run 1 "$GTPLAN" lint cfg/d.yaml --color never
has "$tmp/err" "cfg/d.yaml:3:11: error[GT200]"

# ---- project files ---------------------------------------------------------
fresh; mkdir -p "$tmp/p/cfg/deep"; warn_cfg deep/w.yaml ""
printf 'ignore: [GT632]\n' >"$tmp/p/.gtplan.yaml"
run 0 "$GTPLAN" lint cfg/deep/w.yaml --strict --color never
has "$tmp/err" "gtplan: no findings (1 suppressed)"
run 1 "$GTPLAN" lint cfg/deep/w.yaml --strict --no-config
# strict and format from the project file; the command line wins
printf 'strict: true\nformat: concise\nmin-severity: warning\n' >"$tmp/p/.gtplan.yaml"
run 1 "$GTPLAN" lint cfg/deep/w.yaml
if [ "$(cat "$tmp/out")" == "cfg/deep/w.yaml:3:28: warning[GT632] 4 micro-batches per step are fewer than the 8 pipeline stages" ] ||
	grep -qE '^cfg/deep/w.yaml:3:28: warning\[GT632\] ' "$tmp/out"; then ok; else bad "project format concise"; cat "$tmp/out"; fi
run 1 "$GTPLAN" lint cfg/deep/w.yaml --format json
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["summary"]["warnings"] == 1, d' "$tmp/out" && ok || bad "project json"
# a bad project file: GT003 at its key, and a did-you-mean
printf 'ignroe: [GT632]\nstrict: yes please\n' >"$tmp/p/.gtplan.yaml"
run 1 "$GTPLAN" lint cfg/deep/w.yaml --color never
same "bad project" ".gtplan.yaml:1:1: error[GT003]
.gtplan.yaml:2:9: error[GT003]
cfg/deep/w.yaml:3:28: warning[GT632]"
has "$tmp/err" "did you mean 'ignore'?"
# discovery stops at the folder that holds .git
rm "$tmp/p/.gtplan.yaml"; mkdir -p "$tmp/p/cfg/deep/.git"
printf 'ignore: [GT632]\n' >"$tmp/p/.gtplan.yaml"
run 0 "$GTPLAN" lint cfg/deep/w.yaml --color never
same "stops at .git" "cfg/deep/w.yaml:3:28: warning[GT632]"
rmdir "$tmp/p/cfg/deep/.git"
# --config names the file
printf 'ignore: [GT6]\n' >"$tmp/p/other.yaml"
run 0 "$GTPLAN" lint cfg/deep/w.yaml --strict --config other.yaml
run 2 "$GTPLAN" lint cfg/deep/w.yaml --config missing.yaml
# pyproject.toml's [tool.gtplan]; another tool's table is skipped
rm "$tmp/p/.gtplan.yaml"
cat >"$tmp/p/pyproject.toml" <<'EOF'
[project]
name = "recipes"
dependencies = [
  "nemo-rl",
]

[tool.gtplan]
# stale entries are reported
ignore = [
  "GT632",  # 4 micro-batches on purpose
  'GT605',
]
strict = true

[tool.ruff]
line-length = 100
EOF
run 1 "$GTPLAN" lint cfg/deep/w.yaml --color never
same "pyproject" "pyproject.toml:11:3: warning[GT001]"
has "$tmp/err" "[tool.gtplan] ignore suppresses GT605"
printf '[tool.gtplan]\nstrict = 3.5\n' >"$tmp/p/pyproject.toml"
run 1 "$GTPLAN" lint cfg/deep/w.yaml --color never
same "pyproject float" "cfg/deep/w.yaml:3:28: warning[GT632]
pyproject.toml:2:10: error[GT003]"
# a pyproject.toml without the table is not a project file
printf '[project]\nname = "x"\n' >"$tmp/p/pyproject.toml"
printf 'ignore: [GT632]\n' >"$tmp/.gtplan.yaml"
run 0 "$GTPLAN" lint cfg/deep/w.yaml --strict --color never --ignore GT632
hasnt "$tmp/err" "GT003"
rm -f "$tmp/.gtplan.yaml"

# ---- formats for CI --------------------------------------------------------
fresh; warn_cfg w.yaml ""
run 1 "$GTPLAN" lint cfg/w.yaml policy.megatron_cfg.pipeline_model_parallel_size=3 --format concise
if grep -qE '^command line:1:50: error\[GT600\] [^ ]' "$tmp/out" &&
	grep -qE '^cfg/w.yaml:9:14: error\[GT303\] [^ ]' "$tmp/out" &&
	[ "$(wc -l <"$tmp/out")" -eq 2 ]; then ok; else bad "concise"; cat "$tmp/out"; fi
run 0 "$GTPLAN" lint cfg/w.yaml --format github
has "$tmp/out" "::warning file=cfg/w.yaml,line=3,col=28,title=GT632 microbatches-below-pp::each lane"
has "$tmp/out" "%0Ahint: "
# the command line has no file: its place starts the message; % escaped
run 0 "$GTPLAN" lint cfg/w.yaml policy.train_global_batch_size=6 cluster.num_nodes=3 --format github
has "$tmp/out" "::warning title=GT632 microbatches-below-pp::command line:1:32: "
has "$tmp/out" "idle 78%25 of the step"
if [ "$(grep -c '^::' "$tmp/out")" -eq "$(wc -l <"$tmp/out")" ]; then ok; else bad "github: a line that is not a command"; fi
run 1 "$GTPLAN" lint cfg/w.yaml policy.megatron_cfg.pipeline_model_parallel_size=3 --format junit
"$PY" - "$tmp/out" <<'EOF' && ok || bad "junit"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suite = root.find("testsuite")
cases = suite.findall("testcase")
assert root.tag == "testsuites" and len(cases) == int(suite.get("tests")), root.attrib
fails = [c for c in cases if c.find("failure") is not None]
assert len(fails) == int(suite.get("failures")) >= 2, suite.attrib
assert any(c.get("name") == "GT600 command line:1:50" for c in cases), [c.attrib for c in cases]
EOF
run 0 "$GTPLAN" lint cfg/w.yaml --format junit --ignore GT632
has "$tmp/out" '<testcase classname="gtplan" name="no findings"/>'

# ---- many configs: attribution, shared parents, schema, SARIF ---------------
fresh; warn_cfg base.yaml ""
printf 'defaults: base.yaml\n' >"$tmp/p/cfg/a.yaml"
printf 'defaults: base.yaml\ncluster:\n  num_nodes: 1\n' >"$tmp/p/cfg/a2.yaml"
mkdir -p "$tmp/p/cfg/deep"
run 0 "$GTPLAN" lint cfg/a.yaml cfg/a2.yaml --color never
same "shared parent once" "cfg/base.yaml:3:28: warning[GT632]"
has "$tmp/err" "= note: found for cfg/a.yaml, cfg/a2.yaml"
has "$tmp/err" "gtplan: 0 errors, 1 warning, 0 notes"
# a finding in the config's own file names no config
run 0 "$GTPLAN" lint cfg/base.yaml cfg/a.yaml --color never
same "own and parent" "cfg/base.yaml:3:28: warning[GT632]"
has "$tmp/err" "= note: found for cfg/base.yaml, cfg/a.yaml"
run 0 "$GTPLAN" lint cfg/base.yaml --color never
hasnt "$tmp/err" "found for"
run 0 "$GTPLAN" lint cfg/a.yaml cfg/a2.yaml --format json
cp "$tmp/out" "$tmp/diags.json"
if [ -x "$PY" ] && "$PY" -c 'import jsonschema' 2>/dev/null; then
	"$PY" tests/check_plan_schema.py schemas/diagnostics.schema.json "$tmp/diags.json" >/dev/null && ok || bad "diagnostics schema"
	# the schema can fail: a finding without its configs is refused
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["diagnostics"][0]["configs"]; json.dump(d, open(sys.argv[1] + ".bad", "w"))' "$tmp/diags.json"
	"$PY" tests/check_plan_schema.py schemas/diagnostics.schema.json "$tmp/diags.json.bad" 2>/dev/null && bad "schema took a finding without configs" || ok
else
	skip=$((skip + 2)); echo "lint_select: no python3 jsonschema: the diagnostics schema checks skipped"
fi
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); c=[x["configs"] for x in d["diagnostics"]]; assert c == [["cfg/a.yaml", "cfg/a2.yaml"]], c' "$tmp/diags.json" && ok || bad "json configs"
# SARIF: every result placed (the command line's on its config's first
# line), URIs normalised, each rule's help page, the configs linted;
# unreadable configs are the invocation's notifications
run 2 "$GTPLAN" lint cfg/./a.yaml cfg/deep/../a2.yaml cfg/missing.yaml policy.train_global_batch_size=6 --format sarif
cp "$tmp/out" "$tmp/lint.sarif"
"$PY" - "$tmp/lint.sarif" <<'EOF' && ok || bad "sarif for code scanning"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["runs"]) == 1
run = d["runs"][0]
drv = run["tool"]["driver"]
assert drv["informationUri"].startswith("https://"), drv
for r in drv["rules"]:
    assert r["helpUri"].endswith("/docs/rules.md#" + r["id"].lower()), r["helpUri"]
uris = []
for res in run["results"]:
    loc = res["locations"][0]["physicalLocation"]
    assert loc["region"]["startLine"] >= 1, res
    uris.append(loc["artifactLocation"]["uri"])
    assert res["properties"]["configs"], res
uris += [a["location"]["uri"] for a in run["artifacts"]]
for u in uris:
    assert "/../" not in u and not u.startswith("../") and "/./" not in u and not u.startswith("./"), u
assert [a["location"]["uri"] for a in run["artifacts"]] == ["cfg/a.yaml", "cfg/a2.yaml", "cfg/missing.yaml"], run["artifacts"]
cl = [r for r in run["results"] if r["message"]["text"].startswith("command line:1:32 ('policy.train_global_batch_size=6'): ")]
assert cl and cl[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "cfg/a.yaml", run["results"]
inv = run["invocations"][0]
assert inv["executionSuccessful"] is False, inv
assert [n["descriptor"]["id"] for n in inv["toolExecutionNotifications"]] == ["GT104"], inv
EOF
# a config above the current folder: an absolute file URI, no ".."
(cd "$tmp/p/cfg/deep" && "$GTPLAN" lint ../a.yaml --format sarif) >"$tmp/up.sarif" 2>/dev/null
"$PY" -c 'import json,sys; u=json.load(open(sys.argv[1]))["runs"][0]["artifacts"][0]["location"]["uri"]; assert u.startswith("file:///") and u.endswith("/cfg/a.yaml") and ".." not in u, u' "$tmp/up.sarif" && ok || bad "sarif uri above the folder"
# Microsoft's SARIF multitool with GitHub's ingestion rules (npm's
# @microsoft/sarif-multitool, installed once under build/npm), when npm is here
sarif_validate() { # FILE: no error or warning from the SARIF and GitHub rules
	local mt=build/npm/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
	if [ ! -f "$mt" ] && command -v npm >/dev/null; then
		npm install --silent --no-audit --no-fund --prefix build/npm @microsoft/sarif-multitool@5.7.0 >/dev/null 2>&1
	fi
	[ -f "$mt" ] || return 77
	chmod u+x "$mt"
	rm -f "$tmp/val.sarif"
	"$mt" validate --rule-kind "Gh;Sarif" --level "Error;Warning" -o "$tmp/val.sarif" "$1" >"$tmp/val.txt" 2>&1
	grep -q 'Analysis completed successfully' "$tmp/val.txt" || { cat "$tmp/val.txt"; return 1; }
	if grep -E ': (error|warning) ' "$tmp/val.txt"; then return 1; fi
	return 0
}
sarif_validate "$tmp/lint.sarif"; rc=$?
if [ "$rc" -eq 77 ]; then
	skip=$((skip + 2)); echo "lint_select: no SARIF multitool (npm absent or offline): skipped"
else
	[ "$rc" -eq 0 ] && ok || bad "SARIF multitool on gtplan's SARIF"
	# the validator can fail: a result without a location is refused
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["runs"][0]["results"][0]["locations"]; json.dump(d, open(sys.argv[2], "w"))' "$tmp/lint.sarif" "$tmp/bad.sarif"
	sarif_validate "$tmp/bad.sarif" >/dev/null && bad "SARIF multitool took a result without a location" || ok
fi

# ---- a folder: every YAML file under it, in path order ---------------------
fresh; warn_cfg base.yaml ""
mkdir -p "$tmp/p/cfg/sub" "$tmp/p/cfg/.hidden" "$tmp/p/empty"
printf 'defaults: ../base.yaml\n' >"$tmp/p/cfg/sub/z.yml"
printf 'defaults: base.yaml\ncluster:\n  num_nodes: 2\n' >"$tmp/p/cfg/b.yaml"
printf 'not: [yaml\n' >"$tmp/p/cfg/.hidden/x.yaml"
printf 'x\n' >"$tmp/p/cfg/notes.txt"
run 0 "$GTPLAN" lint cfg --format sarif
"$PY" -c 'import json,sys; a=[x["location"]["uri"] for x in json.load(open(sys.argv[1]))["runs"][0]["artifacts"]]; assert a == ["cfg/b.yaml", "cfg/base.yaml", "cfg/sub/z.yml"], a' "$tmp/out" && ok || bad "folder: the files"
run 0 "$GTPLAN" lint cfg/ --color never
has "$tmp/err" "= note: found for cfg/base.yaml, cfg/sub/z.yml"
run 2 "$GTPLAN" lint empty
has "$tmp/err" "no YAML file (*.yaml, *.yml) under 'empty'"

# ---- stdin ------------------------------------------------------------------
fresh; warn_cfg base.yaml ""
(cd "$tmp/p" && printf 'defaults: cfg/base.yaml\ncluster:\n  num_nodes: 1\n' | "$GTPLAN" lint - --color never) >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] && ok || bad "lint - exit"
same "stdin's parent, relative to the current folder" "cfg/base.yaml:3:28: warning[GT632]"
(cd "$tmp/p" && printf 'cluster:\n  num_nodes: x\n' | "$GTPLAN" lint - --format concise) >"$tmp/out" 2>"$tmp/err"
grep -q '^-:2:14: error\[GT200\] ' "$tmp/out" && ok || { bad "stdin's own place"; cat "$tmp/out" "$tmp/err"; }
(cd "$tmp/p" && printf 'a: [\n' | "$GTPLAN" lint - --format sarif) >"$tmp/out" 2>"$tmp/err"
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; n=r["invocations"][0]["toolExecutionNotifications"]; assert not r["results"] and n[0]["descriptor"]["id"] == "GT100" and n[0]["message"]["text"].startswith("-:2:1 "), n' "$tmp/out" && ok || bad "stdin in SARIF"
run 2 "$GTPLAN" lint - cfg/base.yaml -
has "$tmp/err" "'-' (stdin) can be read once"

# ---- colour ----------------------------------------------------------------
fresh; warn_cfg w.yaml ""
esc=$(printf '\033[')
run 0 env FORCE_COLOR=1 "$GTPLAN" lint cfg/w.yaml
has "$tmp/err" "$esc"
run 0 env FORCE_COLOR=1 NO_COLOR=1 "$GTPLAN" lint cfg/w.yaml
hasnt "$tmp/err" "$esc"
run 0 env FORCE_COLOR=1 NO_COLOR= "$GTPLAN" lint cfg/w.yaml
has "$tmp/err" "$esc"
run 0 env FORCE_COLOR=1 "$GTPLAN" lint cfg/w.yaml --color never
hasnt "$tmp/err" "$esc"
if command -v script >/dev/null; then
	(cd "$tmp/p" && TERM=dumb script -qec "$GTPLAN lint cfg/w.yaml" /dev/null) >"$tmp/err" 2>&1
	hasnt "$tmp/err" "$esc"
	(cd "$tmp/p" && TERM=xterm script -qec "$GTPLAN lint cfg/w.yaml" /dev/null) >"$tmp/err" 2>&1
	has "$tmp/err" "$esc"
fi

# ---- hardware defaults in project files ------------------------------------
# The config wins over the project file, which wins over the built-in
# defaults (989 TFLOP/s at 45%, 48 GB/s across nodes: sim/cost.h).
hw_cfg() {
	cat >"$tmp/p/cfg/h.yaml" <<EOF
policy:
  model_name: meta-llama/Llama-3.2-1B-Instruct
  train_global_batch_size: 16
  train_micro_batch_size: 1
  megatron_cfg:
    enabled: true
    tensor_model_parallel_size: 2
cluster:
  num_nodes: 2
  gpus_per_node: 8
$1
EOF
}
fresh; hw_cfg ""
run 0 "$GTPLAN" sim cfg/h.yaml
has "$tmp/out" "compute at 45% of 989 TFLOP/s"
has "$tmp/out" "48.0 GB/s across"
printf 'hardware:\n  peak_tflops: 500\n  compute_efficiency: 0.5\ninterconnect:\n  inter_node_gbps: 10\ngpu_memory_gb: 80\n' >"$tmp/p/.gtplan.yaml"
run 0 "$GTPLAN" sim cfg/h.yaml
has "$tmp/out" "compute at 50% of 500 TFLOP/s"
has "$tmp/out" "10.0 GB/s across"
has "$tmp/out" "in the 80 GiB of a GPU"
run 0 "$GTPLAN" sim cfg/h.yaml --no-config
has "$tmp/out" "compute at 45% of 989 TFLOP/s"
# the config's own value, and an override, win key by key
hw_cfg "gtplan:
  hardware:
    peak_tflops: 700"
run 0 "$GTPLAN" sim cfg/h.yaml
has "$tmp/out" "compute at 50% of 700 TFLOP/s"
run 0 "$GTPLAN" sim cfg/h.yaml ++gtplan.hardware.compute_efficiency=0.4
has "$tmp/out" "compute at 40% of 700 TFLOP/s"
# `gtplan config` shows the config as written
run 0 "$GTPLAN" config cfg/h.yaml
hasnt "$tmp/out" "compute_efficiency"
# the schema checks the project file's values where they are written
printf 'hardware:\n  peek_tflops: 500\ninterconnect:\n  inter_node_gbps: -1\ngpu_memory_gb: "x"\n' >"$tmp/p/.gtplan.yaml"
run 1 "$GTPLAN" lint cfg/h.yaml
same "bad hardware" ".gtplan.yaml:2:3: error[GT205]
.gtplan.yaml:4:20: error[GT201]
.gtplan.yaml:5:16: error[GT003]"
has "$tmp/err" "did you mean 'peak_tflops'?"
printf 'hardware: 3\n' >"$tmp/p/.gtplan.yaml"
run 1 "$GTPLAN" lint cfg/h.yaml
has "$tmp/err" "project setting 'hardware' must be a map"
# pyproject.toml: a [tool.gtplan.hardware] table, dotted keys, floats
rm "$tmp/p/.gtplan.yaml"; hw_cfg ""
printf '[tool.gtplan.hardware]\npeak_tflops = 400.0\n[tool.other]\nx = 1\n[tool.gtplan]\ninterconnect.inter_node_gbps = 12.5\nhardware.compute_efficiency = 5e-1\n' >"$tmp/p/pyproject.toml"
run 0 "$GTPLAN" sim cfg/h.yaml
has "$tmp/out" "compute at 50% of 400 TFLOP/s"
has "$tmp/out" "12.5 GB/s across"
printf '[tool.gtplan]\nhardware.peak_tflops = 400\nhardware.peak_tflops = 500\n' >"$tmp/p/pyproject.toml"
run 1 "$GTPLAN" lint cfg/h.yaml
same "pyproject twice" "pyproject.toml:3:1: error[GT003]"

# ---- an integer written as a float (GT206) ---------------------------------
# JSON Schema 2020-12's integer: TP 4.0 is valid for gtplan as for
# python-jsonschema, planned as TP 4 (the same plan JSON), with one finding
# about the spelling, which every output and every selector takes.
fresh
tp_cfg() { # FILE TP [GLOBAL-BATCH]
	printf 'policy:\n  model_name: meta-llama/Llama-3.1-8B-Instruct\n  train_global_batch_size: %s\n  train_micro_batch_size: 1\n  megatron_cfg:\n    enabled: true\n    tensor_model_parallel_size: %s\n    sequence_parallel: true\n    make_vocab_size_divisible_by: 64\ncluster:\n  num_nodes: 1\n  gpus_per_node: 8\n' "${3:-64}" "$2" >"$tmp/p/cfg/$1"
}
tp_cfg f.yaml 4.0; tp_cfg i.yaml 4; tp_cfg b.yaml 4 64.0
run 1 "$GTPLAN" lint cfg/f.yaml --color never
same "tp 4.0: one finding" "cfg/f.yaml:7:33: error[GT206]"
has "$tmp/err" "gtplan: 1 error, 0 warnings, 0 notes"
run 0 "$GTPLAN" lint cfg/i.yaml --color never
same "tp 4: no finding" ""
run 1 "$GTPLAN" plan cfg/f.yaml --format json; cp "$tmp/out" "$tmp/pf.json"
run 0 "$GTPLAN" plan cfg/i.yaml --format json; cp "$tmp/out" "$tmp/pi.json"
"$PY" - "$tmp/pf.json" "$tmp/pi.json" <<'EOF' && ok || bad "tp 4.0 is not planned as tp 4"
import json, sys
f, i = (json.load(open(p)) for p in sys.argv[1:])
assert [d["code"] for d in f.pop("diagnostics")] == ["GT206"]
assert i.pop("diagnostics") == []
assert (f.pop("config"), i.pop("config")) == ("cfg/f.yaml", "cfg/i.yaml")
assert f == i and f["sizes"]["tp"] == 4, f["sizes"]
EOF
run 1 "$GTPLAN" lint cfg/f.yaml --format concise
has "$tmp/out" "cfg/f.yaml:7:33: error[GT206] 4.0 is a float: gtplan plans with 4"
run 1 "$GTPLAN" lint cfg/f.yaml --format github
has "$tmp/out" "::error file=cfg/f.yaml,line=7,col=33,title=GT206 integer-as-float::"
run 1 "$GTPLAN" lint cfg/f.yaml --format json
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))["diagnostics"]; assert [(x["code"], x["name"], x["severity"], x["path"]) for x in d] == [("GT206", "integer-as-float", "error", "policy.megatron_cfg.tensor_model_parallel_size")], d' "$tmp/out" && ok || bad "GT206 in json"
run 1 "$GTPLAN" lint cfg/f.yaml --format sarif
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]; assert [(x["ruleId"], x["level"]) for x in r["results"]] == [("GT206", "error")], r["results"]; assert [x["helpUri"] for x in r["tool"]["driver"]["rules"] if x["id"] == "GT206"][0].endswith("rules.md#gt206")' "$tmp/out" && ok || bad "GT206 in sarif"
run 0 "$GTPLAN" lint cfg/f.yaml --ignore GT206
run 0 "$GTPLAN" lint cfg/f.yaml --ignore integer-as-float
run 0 "$GTPLAN" lint cfg/f.yaml --select GT3
sed -i 's/^    tensor_model_parallel_size: 4.0$/&  # gtplan: ignore[GT206] checked by our launcher/' "$tmp/p/cfg/f.yaml"
run 0 "$GTPLAN" lint cfg/f.yaml --strict --color never
same "suppressed inline" ""
# `gtplan config` prints the value as written (a float, as OmegaConf has it)
run 0 "$GTPLAN" config cfg/f.yaml
has "$tmp/out" '"tensor_model_parallel_size": 4.0,'
# elsewhere a warning: --strict fails on it
run 0 "$GTPLAN" lint cfg/b.yaml --color never
same "batch 64.0: a warning" "cfg/b.yaml:3:28: warning[GT206]"
run 1 "$GTPLAN" lint cfg/b.yaml --strict
run 0 "$GTPLAN" lint cfg/b.yaml --strict --min-severity error
# python-jsonschema takes TP 4.0 as an integer too, and refuses 4.5
for v in 4.0 4.5; do
	printf '{"policy": {"megatron_cfg": {"tensor_model_parallel_size": %s}}, "cluster": {"num_nodes": 1, "gpus_per_node": 8}}\n' "$v" >"$tmp/p/cfg/tp$v.json"
done
if [ -x "$PY" ] && "$PY" -c 'import jsonschema' 2>/dev/null; then
	"$PY" tests/check_plan_schema.py schemas/config.schema.json "$tmp/p/cfg/tp4.0.json" >/dev/null && ok || bad "jsonschema refuses TP 4.0"
	"$PY" tests/check_plan_schema.py schemas/config.schema.json "$tmp/p/cfg/tp4.5.json" 2>/dev/null && bad "jsonschema takes TP 4.5" || ok
else
	skip=$((skip + 2)); echo "lint_select: no python3 jsonschema: the integer agreement checks skipped"
fi
run 1 "$GTPLAN" lint cfg/tp4.0.json --format concise
has "$tmp/out" "cfg/tp4.0.json:1:60: error[GT206]"
hasnt "$tmp/out" "GT200"
run 1 "$GTPLAN" lint cfg/tp4.5.json --format concise
has "$tmp/out" "cfg/tp4.5.json:1:60: error[GT200] expected a positive integer, got number 4.5"

# ---- explain by name, -V ---------------------------------------------------
run 0 "$GTPLAN" explain microbatches-below-pp
has "$tmp/out" "GT632 microbatches-below-pp"
run 2 "$GTPLAN" explain microbatch-below-pp
has "$tmp/err" "did you mean GT632 (microbatches-below-pp)?"
run 0 "$GTPLAN" -V
has "$tmp/out" "gtplan "

echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
