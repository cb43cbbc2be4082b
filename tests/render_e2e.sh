#!/usr/bin/env bash
# End-to-end tests of `gtplan render` (the sanitizer build).
#   tests/render_e2e.sh     run all; prints "RESULT passed failed skipped"
# The CLI's DOT equals the golden files test_render.c checks; the SVG of
# the default example is well-formed (xmllint), names every rank, and
# headless Chromium draws it as a picture that is not blank. Chromium that
# cannot start is a skip, not a failure.
set -u
cd "$(dirname "$0")/.."
GTPLAN=$(realpath "${GTPLAN:-build/asan/gtplan}")
PY=/usr/bin/python3
pass=0 fail=0 skip=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# Graphviz 2.42, pango and fontconfig keep caches they never free; nothing
# of gtplan or libcgraph is suppressed.
cat >"$tmp/lsan.supp" <<'EOF'
leak:libgvc.so
leak:libgvplugin_
leak:libfontconfig.so
leak:libpango
leak:libglib-2.0.so
leak:libgobject-2.0.so
leak:libcairo.so
leak:libharfbuzz.so
leak:libfreetype.so
EOF
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export LSAN_OPTIONS="suppressions=$tmp/lsan.supp:print_suppressions=0"

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
skipped() { skip=$((skip + 1)); echo "SKIP: $*"; }
# expect_rc NAME WANT CMD...: runs CMD, stdout to $tmp/out, stderr to $tmp/err
expect_rc() {
	local name=$1 want=$2; shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
	if [ "$rc" -eq "$want" ]; then ok; else
		bad "$name: exit $rc, want $want"; sed 's/^/    /' "$tmp/err" | head -20; fi
}
contains() { # NAME FILE TEXT
	if grep -qF -- "$3" "$2"; then ok; else bad "$1: '$3' not in $2"; sed 's/^/    /' "$2" | head -20; fi
}
same() { # NAME WANT GOT
	if cmp -s "$2" "$3"; then ok; else bad "$1: $3 differs from $2"; diff "$2" "$3" | head -10 | sed 's/^/    /'; fi
}

D=examples/default.yaml
G=tests/golden

# ---- the CLI gives the golden DOT and text ------------------------------
expect_rc "dot tp2-g3" 0 "$GTPLAN" render $G/tp2-g3-6gpu.yaml --groups gtp,tp -o "$tmp/a.dot"
same "dot tp2-g3" $G/tp2-g3-6gpu.dot "$tmp/a.dot"
expect_rc "dot tp4-g3" 0 "$GTPLAN" render $G/tp4-g3-24gpu.yaml --groups=gtp --format dot
same "dot tp4-g3 (stdout)" $G/tp4-g3-24gpu.dot "$tmp/out"
expect_rc "text tp4-g3" 0 "$GTPLAN" render $G/tp4-g3-24gpu.yaml --groups gtp,tp
same "text tp4-g3" $G/tp4-g3-24gpu.txt "$tmp/out"
# the 5-D hang: findings, so exit 1, and the picture anyway
expect_rc "dot 5d" 1 "$GTPLAN" render $G/tp4-g3-24gpu-5d.yaml --call get_logprobs --groups gtp -o "$tmp/h.dot"
same "dot 5d" $G/tp4-g3-24gpu-5d-get_logprobs.dot "$tmp/h.dot"
contains "5d findings on stderr" "$tmp/err" "error[GT500]"
expect_rc "text 5d" 1 "$GTPLAN" render $G/tp4-g3-24gpu-5d.yaml --call get_logprobs --format text
same "text 5d" $G/tp4-g3-24gpu-5d-get_logprobs.txt "$tmp/out"
# --layout 5d is the override gtplan.driver_layout=5d
expect_rc "layout 5d" 1 "$GTPLAN" render $G/tp4-g3-24gpu.yaml --layout 5d --call get_logprobs
contains "layout 5d hangs" "$tmp/out" "hang · 8 of 24 ranks called"
expect_rc "layout 4d" 0 "$GTPLAN" render $G/tp4-g3-24gpu-5d.yaml --layout=4d --call get_logprobs
contains "layout 4d completes" "$tmp/out" "ok · 24 of 24 ranks called, 6 shards"

# ---- determinism ----------------------------------------------------------
expect_rc "dot again" 0 "$GTPLAN" render $D --groups gtp,tp,dp --color gtp -o "$tmp/d1.dot"
expect_rc "dot again 2" 0 "$GTPLAN" render $D --groups gtp,tp,dp --color gtp -o "$tmp/d2.dot"
same "DOT is deterministic" "$tmp/d1.dot" "$tmp/d2.dot"
# The release build too: it once read cgraph's string header before names
# it did not intern, and the DOT changed from run to run there while the
# sanitizer build's stayed the same.
REL=build/gtplan
if [ -x "$REL" ]; then
	for i in 1 2 3 4 5; do
		"$REL" render $D --groups gtp,tp,dp --color gtp -o "$tmp/r$i.dot" >/dev/null 2>&1
	done
	for i in 2 3 4 5; do same "release DOT is deterministic ($i)" "$tmp/r1.dot" "$tmp/r$i.dot"; done
	same "release DOT equals the sanitizer build's" "$tmp/d1.dot" "$tmp/r1.dot"
else
	skipped "build/gtplan is not built"
fi

# ---- SVG of the default example ---------------------------------------------
expect_rc "svg default" 0 "$GTPLAN" render $D --color lane --groups gtp -o "$tmp/grid.svg"
expect_rc "svg again" 0 "$GTPLAN" render $D --color lane --groups gtp -o "$tmp/grid2.svg"
same "SVG is deterministic" "$tmp/grid.svg" "$tmp/grid2.svg"
if command -v xmllint >/dev/null 2>&1; then
	expect_rc "svg is well-formed" 0 xmllint --noout "$tmp/grid.svg"
else
	skipped "xmllint is not installed (scripts/deps.sh test installs libxml2-utils)"
fi
missing=""
for r in $(seq 0 23); do
	grep -qF "<title>r$r</title>" "$tmp/grid.svg" || missing="$missing r$r"
	grep -qE ">$r</text>" "$tmp/grid.svg" || missing="$missing $r"
done
if [ -z "$missing" ]; then ok; else bad "svg lacks ranks:$missing"; fi
contains "svg title" "$tmp/grid.svg" "default.yaml: 24 GPUs, 3 nodes x 8"
if grep -qE '/work|/tmp|/home' "$tmp/grid.svg"; then bad "svg names a path"; else ok; fi

# ---- formats, options, errors -----------------------------------------------
expect_rc "png" 0 "$GTPLAN" render $D -o "$tmp/grid.png"
if head -c 8 "$tmp/grid.png" | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'; then ok; else bad "grid.png is not a PNG"; fi
expect_rc "help render" 0 "$GTPLAN" help render
contains "help render" "$tmp/out" "--groups KINDS"
expect_rc "unknown extension" 2 "$GTPLAN" render $D -o "$tmp/grid.pdf"
contains "unknown extension says" "$tmp/err" "cannot tell the format"
if [ -e "$tmp/grid.pdf" ]; then bad "a file was written for a bad format"; else ok; fi
expect_rc "bad --format" 2 "$GTPLAN" render $D --format jpeg
expect_rc "bad --color" 2 "$GTPLAN" render $D --color always
contains "bad --color names the keys" "$tmp/err" "lane, gtp, tp"
expect_rc "bad --groups" 2 "$GTPLAN" render $D --groups gtp,lanes
expect_rc "bad --layout" 2 "$GTPLAN" render $D --layout 3d
expect_rc "unknown call" 2 "$GTPLAN" render $D --call nope
expect_rc "color call without call" 2 "$GTPLAN" render $D --color call
expect_rc "no grid" 1 "$GTPLAN" render $D cluster.num_nodes=1 policy.megatron_cfg.tensor_parallel_num_weight_shards=24
contains "no grid says" "$tmp/err" "nothing to draw"
expect_rc "two configs" 2 "$GTPLAN" render $D $D
# --nodes: the nodes drawn; a bad range or one past the plan is a usage
# error (exit 2) with a hint, and no file is written
expect_rc "--nodes 1" 0 "$GTPLAN" render $D --nodes 1 --format text
contains "--nodes 1 draws node 1" "$tmp/out" "drawn: node 1 (ranks 8-15)"
if grep -q "^node [02] " "$tmp/out"; then bad "--nodes 1 drew another node"; else ok; fi
expect_rc "bad --nodes" 2 "$GTPLAN" render $D --nodes 2-1
contains "bad --nodes hints" "$tmp/err" "hint: --nodes A-B"
expect_rc "--nodes past the plan" 2 "$GTPLAN" render $D --nodes 1-7 -o "$tmp/past.svg"
contains "--nodes past the plan says" "$tmp/err" "the plan has 3 nodes (0-2)"
contains "--nodes past the plan hints" "$tmp/err" "hint: choose nodes between 0 and 2"
if [ -e "$tmp/past.svg" ]; then bad "a file was written for --nodes past the plan"; else ok; fi
# --groups with nothing to link are said on stderr
expect_rc "--groups pp" 0 "$GTPLAN" render $D --groups gtp,pp --format dot
contains "--groups pp says" "$tmp/err" "note: --groups pp: no link to draw"
# Graphviz without its plugins (no config6a): a clear error, no file; DOT
# needs no plugin
mkdir -p "$tmp/noplugins"
GVBINDIR="$tmp/noplugins" expect_rc "no plugins" 2 "$GTPLAN" render $D -o "$tmp/np.svg"
contains "no plugins says" "$tmp/err" "run \`dot -c\` as root"
if [ -e "$tmp/np.svg" ]; then bad "a half-written SVG was left"; else ok; fi
GVBINDIR="$tmp/noplugins" expect_rc "no plugins, DOT" 0 "$GTPLAN" render $D -o "$tmp/np.dot"

# ---- headless Chromium draws the SVG ---------------------------------------
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
	skipped "chromium is not installed (scripts/deps.sh test installs it): SVG not opened in a browser"
else
	profile=$(mktemp -d -p "$tmp")
	timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --user-data-dir="$profile" --hide-scrollbars \
		--screenshot="$tmp/shot.png" --window-size=1300,700 "file://$tmp/grid.svg" \
		>"$tmp/chrome.log" 2>&1
	if [ ! -s "$tmp/shot.png" ]; then
		skipped "chromium could not start or draw (see below): SVG not opened in a browser"
		tail -n 3 "$tmp/chrome.log" | sed 's/^/    /'
	else
		# Decodes the PNG by hand (zlib is all it needs) and counts pixels
		# that are not white: the boxes, their text and the links.
		"$PY" - "$tmp/shot.png" >"$tmp/pixels" 2>&1 <<'EOF'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and lace == 0, (depth, ctype, lace)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride, prev, dark, colour = zlib.decompress(idat), w * bpp, None, 0, 0
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i] if prev is not None else 0
        c = prev[i - bpp] if prev is not None and i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        r, g, bl = line[x], line[x + 1], line[x + 2]
        if min(r, g, bl) < 200: dark += 1
        if max(r, g, bl) - min(r, g, bl) > 40: colour += 1
    prev = line
print(w, h, dark, colour)
EOF
		read -r sw sh dark colour <"$tmp/pixels" 2>/dev/null
		if [ -n "${colour:-}" ] && [ "$dark" -gt 2000 ] && [ "$colour" -gt 20000 ]; then ok; else
			bad "the Chromium screenshot looks blank: $(cat "$tmp/pixels")"; fi
	fi
fi

echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
