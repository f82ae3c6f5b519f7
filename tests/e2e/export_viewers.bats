#!/usr/bin/env bats
# The exports opened where people open them, drawn by Debian's Chromium
# (headless, driven by playwright-core) from pages served on 127.0.0.1,
# each screenshotted and its DOM read back once it shows our data:
# --export memviz through the pages that torch.cuda._memory_viz's
# trace_plot() and segment_plot() of torch 2.6 (trixie) and 2.14 (sid)
# write, drawn by MemoryViz.js; --export speedscope in speedscope's own app
# (npm); --export perfetto against the rules of Chrome's trace-event
# format; all three of a flight recorder's dump too (stacks sampled).
# Real PyTorch on the CPU (Debian's python3 and torch).
#
# The memory_viz pages import MemoryViz.js from PyTorch's main branch on a
# CDN, and it imports d3 5 from another; this machine reaches neither. An
# import map put into the page's head points those addresses at
# MemoryViz.js from Debian's pytorch source (scripts/memoryviz-js.sh) and
# at npm's d3 5 as one ES module (scripts/npm-tools.sh); the rest of the
# page is as torch wrote it.

load helpers

MODEL_PY=$ROOT/tests/fixtures/incident_model.py
NPM=$ROOT/.output/npm
WWW=$BATS_FILE_TMPDIR/www

setup_file() {
	need_roots trixie sid
	[ -x /usr/bin/chromium ] || {
		echo "no /usr/bin/chromium: run scripts/setup.sh" >&2
		return 1
	}
	[ -s "$NPM/d3.mjs" ] && [ -e "$NPM/node_modules/playwright-core" ] || {
		echo "no $NPM/d3.mjs or playwright-core: make npm-tools" >&2
		return 1
	}
	mkdir -p "$WWW"
	js=$("$ROOT/scripts/memoryviz-js.sh")
	cp "$js" "$NPM/d3.mjs" "$WWW/"
	# the browser asks for one; a 404 would be logged as an error
	: >"$WWW/favicon.ico"
	ln -s "$NPM/node_modules/speedscope/dist/release" "$WWW/speedscope"
	"$MT" record -o "$BATS_FILE_TMPDIR/t.mtb" -- "$TORCH_PY" "$MODEL_PY" \
		--steps 3 >/dev/null 2>"$BATS_FILE_TMPDIR/rec.err"
	"$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" >"$BATS_FILE_TMPDIR/report.out"
	# port 0: the kernel picks a free one, and the server prints it
	"$TORCH_PY" -u -m http.server 0 -b 127.0.0.1 -d "$WWW" \
		>"$BATS_FILE_TMPDIR/http.log" 2>&1 &
	echo $! >"$BATS_FILE_TMPDIR/http.pid"
	wait_for "$BATS_FILE_TMPDIR/http.log" '^Serving HTTP on 127\.0\.0\.1 port [0-9]+ '
}

teardown_file() {
	if [ -s "$BATS_FILE_TMPDIR/http.pid" ]; then
		kill "$(cat "$BATS_FILE_TMPDIR/http.pid")"
	fi
}

teardown() {
	root_unstage
}

# the server's address
url() {
	local port
	port=$(sed -nE 's/^Serving HTTP on 127\.0\.0\.1 port ([0-9]+) .*/\1/p' "$BATS_FILE_TMPDIR/http.log")
	echo "http://127.0.0.1:$port/$1"
}

# browse URL UNTIL NAME: Chromium opens URL, waits until the JavaScript
# expression UNTIL is true in the page, and writes its screenshot
# (1400x900) to $BATS_TEST_TMPDIR/NAME.png and its DOM to NAME.dom; it
# fails when the page threw, logged an error or failed to load a file
# (tests/e2e/browse.js)
browse() {
	timeout 90 node "$ROOT/tests/e2e/browse.js" "$1" "$2" "$BATS_TEST_TMPDIR/$3"
}

# pixels PNG X0 Y0 X1 Y1: "WIDTH HEIGHT SHARE COLOURS" of the screenshot:
# its size; in the box, the share (in %) of pixels in colour (not white,
# grey or black: what the viewers fill data with; but d3's Tableau 10,
# MemoryViz's palette, has a grey of its own, #bab0ab, which a segment
# plot drew its largest blocks in now and then) and how many colours
# cover at least 0.1 % of it
pixels() {
	"$TORCH_PY" - "$@" <<'PY'
import sys
from collections import Counter
from PIL import Image

img = Image.open(sys.argv[1]).convert("RGB")
box = img.crop(tuple(int(v) for v in sys.argv[2:6]))
n = box.width * box.height
tableau_grey = (0xba, 0xb0, 0xab)
inked = Counter(p for p in box.getdata()
                if max(p) - min(p) > 20 or p == tableau_grey)
many = sum(1 for c in inked.values() if c * 1000 >= n)
print(img.width, img.height, 100 * sum(inked.values()) // n, many)
PY
}

# page HTML NAME PICKLE: HTML as torch wrote it, served as NAME.html with
# an import map that points the CDN addresses of MemoryViz.js and of its d3
# imports at the copies served here (any other address fails). The
# snapshot it carries must be PICKLE's. torch 2.14 on Python 3.14 pickles
# it anew with protocol 5, Python 3.14's default, which MemoryViz.js
# refuses ("Unhandled version 5", PyTorch issue 183842; any snapshot, its
# own too): such a page carries PICKLE's own bytes instead (protocol 2),
# what memory_viz reads when the file is dropped on it.
page() {
	"$TORCH_PY" - "$1" "$WWW/$2.html" "$WWW/MemoryViz.js" "$3" <<'PY'
import base64, json, pickle, re, sys

html = open(sys.argv[1]).read()
js = open(sys.argv[3]).read()
ours = open(sys.argv[4], "rb").read()
urls = re.findall(r'from "(https://[^"]+)"', html)
assert len(urls) == 1 and urls[0].endswith("/torch/utils/viz/MemoryViz.js"), urls
imports = {urls[0]: "/MemoryViz.js"}
for u in re.findall(r'^import .* from "(https?://[^"]+)";$', js, re.M):
    assert re.fullmatch(r"https://cdn\.skypack\.dev/d3(-[a-z]+)?@[0-9]+", u), u
    imports[u] = "/d3.mjs"
assert len(imports) > 1 and html.count("<head>") == 1
files = re.findall(r"^const local_files = (.*)$", html, re.M)
assert len(files) == 1, files
carried = base64.b64decode(json.loads(files[0])[0]["base64"])
assert pickle.loads(carried) == pickle.loads(ours)
if carried[:2] == b"\x80\x05":
    print("the page's snapshot is pickled with protocol 5: given the file's own bytes")
    padded = ours + b"\x00" * (3 - len(ours) % 3)
    swapped = json.dumps([{"name": "snapshot.pickle",
                           "base64": base64.b64encode(padded).decode()}])
    html = html.replace(files[0], swapped)
tag = '<script type="importmap">%s</script>' % json.dumps({"imports": imports})
open(sys.argv[2], "w").write(html.replace("<head>", "<head>\n" + tag))
PY
}

# viz_root SUITE PICKLE: in SUITE's root, torch's _memory_viz reads the
# snapshot: prints "torch VERSION segments N total_size BYTES active BYTES
# inactive BYTES reserved TEXT allocated TEXT" (the sizes of the segments,
# of the blocks memory()'s flame graph calls active_allocated and inactive,
# and segsum()'s totals), and writes trace_plot()'s and segment_plot()'s
# pages into $BATS_TEST_TMPDIR/SUITE-trace.html and SUITE-segment.html
viz_root() {
	local root="ROOT_${1^^}"
	root_stage "${!root}" "$2"
	in_root "${!root}" chroot
	"${IN_ROOT[@]}" /usr/bin/python3 - "$STAGE" "${2##*/}" <<'PY'
import pickle, re, sys
from collections import Counter
import torch
import torch.cuda._memory_viz as mv

stage, name = sys.argv[1:]
snap = pickle.load(open(f"{stage}/{name}", "rb"))
segs = snap["segments"]
by_state = Counter()
for line in mv.memory(snap, format_flamegraph=lambda s: s).splitlines():
    stack, size = line.rsplit(" ", 1)
    by_state[stack.split(";")[1]] += int(size)
summary = dict(re.findall(r"^(total_reserved|total_allocated): (\S+)$",
                          mv.segsum(snap), re.M))
print("torch", torch.__version__, "segments", len(segs), "total_size",
      sum(s["total_size"] for s in segs), "active",
      by_state["active_allocated"], "inactive", by_state["inactive"],
      "reserved", summary["total_reserved"], "allocated",
      summary["total_allocated"])
open(f"{stage}/trace.html", "w").write(mv.trace_plot(snap))
open(f"{stage}/segment.html", "w").write(mv.segment_plot(snap))
PY
	cp "${!root}$STAGE/trace.html" "$BATS_TEST_TMPDIR/$1-trace.html"
	cp "${!root}$STAGE/segment.html" "$BATS_TEST_TMPDIR/$1-segment.html"
	root_unstage
}

# value KEY LINE: the word after KEY in LINE
value() {
	awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' <<<"$2"
}

# memviz_pages PICKLE LIVE CURRENT PEAK [KIND]: torch 2.6's and 2.14's
# _memory_viz read PICKLE (LIVE blocks of CURRENT bytes at its end, PEAK
# bytes at its peak): their figures, and their trace_plot() and
# segment_plot() pages drawn by MemoryViz.js in Chromium with ours; the
# Active Memory Timeline's legend names the kinds of memory, KIND among
# them
memviz_pages() {
	local pickle=$1 live=$2 current=$3 peak=$4 kind=${5:-unknown} suite out w h share colours
	for suite in trixie sid; do
		out=$(viz_root "$suite" "$pickle")
		echo "$out"
		# what the CPU held, not the span of its addresses (127.6 TiB
		# inactive in one segment before)
		[ "$(value segments "$out")" -eq "$live" ]
		[ "$(value total_size "$out")" -eq "$current" ]
		[ "$(value active "$out")" -eq "$current" ]
		[ "$(value inactive "$out")" -eq 0 ]
		[ "$(value reserved "$out")" = "$(value allocated "$out")" ]

		# Allocator State History at its last event: MemoryViz's own
		# sums of the blocks and segments it drew
		page "$BATS_TEST_TMPDIR/$suite-segment.html" "$suite-segment" \
			"$pickle"
		browse "$(url "$suite-segment.html")" \
			'document.body.innerText.includes(" reserved)")' "$suite-segment"
		grep -qE "\\([0-9.]+[KMGT]?iB \\($current bytes\\) allocated / [0-9.]+[KMGT]?iB \\($current bytes\\) reserved\\)" \
			"$BATS_TEST_TMPDIR/$suite-segment.dom"
		# the segments, drawn on the right: each filled by its block
		read -r w h share colours < <(pixels "$BATS_TEST_TMPDIR/$suite-segment.png" 470 30 1400 600)
		echo "$suite segment_plot: ${w}x$h, ${share}% in colour, $colours colours"
		[ "$w" -eq 1400 ]
		[ "$h" -eq 900 ]
		[ "$share" -ge 30 ]
		[ "$colours" -ge 3 ]

		# Active Memory Timeline: the y axis goes up to our peak
		page "$BATS_TEST_TMPDIR/$suite-trace.html" "$suite-trace" \
			"$pickle"
		browse "$(url "$suite-trace.html")" \
			'document.querySelectorAll("polygon").length > 10' "$suite-trace"
		"$TORCH_PY" - "$BATS_TEST_TMPDIR/$suite-trace.dom" "$peak" <<'PY'
import re, sys

dom, peak = open(sys.argv[1]).read(), int(sys.argv[2])
scale = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}
ticks = [float(v) * scale[u] for v, u in
         re.findall(r'<text fill="currentColor" x="-9" dy="0.32em">([0-9.]+)([kMG]?)</text>', dom)]
print("y ticks", ticks, "peak", peak)
assert len(ticks) > 2 and ticks[-1] <= peak < ticks[-1] + ticks[1] - ticks[0]
assert dom.count("<polygon") > 10
PY
		# coloured by kind, as a profile's snapshot by the profiler's
		# categories: the legend's text, "unknown" always among them
		grep -qF ">$kind</text>" "$BATS_TEST_TMPDIR/$suite-trace.dom"
		grep -qF '>unknown</text>' "$BATS_TEST_TMPDIR/$suite-trace.dom"
		read -r w h share colours < <(pixels "$BATS_TEST_TMPDIR/$suite-trace.png" 110 50 1400 500)
		echo "$suite trace_plot: ${w}x$h, ${share}% in colour, $colours colours"
		[ "$share" -ge 10 ]
		[ "$colours" -ge 5 ]
	done
}

@test "memviz of a CPU training loop: a segment per block held; torch 2.6 and 2.14 _memory_viz pages drawn by Chromium with our figures" {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 3
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID" \
		--export memviz -o "$BATS_TEST_TMPDIR/x.pickle"
	release fx
	# the trace ends at the spike, with the model, its gradients and
	# Adam's state live
	settle fx '^spike ' stop
	[ "$MT_STATUS" -eq 0 ]
	read -r current peak < <(sed -nE 's/^# device pid=[0-9]+ dev=cpu source=cpu current=([0-9]+) peak=([0-9]+)$/\1 \2/p' "$TRACE")
	live=$(sed -nE 's/^# live allocations=([0-9]+) .*/\1/p' "$TRACE")
	echo "live: $live blocks, $current bytes; peak $peak"
	[ "$current" -gt 1000000 ]
	memviz_pages "$BATS_TEST_TMPDIR/x.pickle" "$live" "$current" "$peak" \
		optimizer_state
}

# speedscope_app FILE TITLE BYTES ROW...: speedscope's own app opens
# $WWW/FILE: the file's name, TITLE, in the page's title, its first
# profile's name above the flame chart, which WebGL draws in colour; in the
# sandwich view, a table, every stack ends in c10:cpu_alloc, whose total
# is BYTES in speedscope's units, and each ROW has a line
speedscope_app() {
	local file=$1 title=$2 bytes=$3 name w h share colours
	shift 3
	name=$("$TORCH_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["profiles"][0]["name"])' "$WWW/$file")
	browse "$(url "speedscope/index.html#profileURL=%2F$file")" \
		'document.title.endsWith(" - speedscope")' flame
	grep -qF "<title>$title - speedscope</title>" "$BATS_TEST_TMPDIR/flame.dom"
	grep -qF ">$name<" "$BATS_TEST_TMPDIR/flame.dom"
	read -r w h share colours < <(pixels "$BATS_TEST_TMPDIR/flame.png" 0 140 1400 300)
	echo "flame chart: ${w}x$h, ${share}% in colour, $colours colours"
	[ "$w" -eq 1400 ]
	[ "$h" -eq 900 ]
	[ "$share" -ge 30 ]
	[ "$colours" -ge 5 ]

	browse "$(url "speedscope/index.html#profileURL=%2F$file&view=sandwich")" \
		'document.querySelectorAll("tr").length > 2' sandwich
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/sandwich.dom" "$bytes" "$@" <<'PY'
import re, sys
from decimal import ROUND_HALF_UP, Decimal

dom, total = open(sys.argv[1]).read(), int(sys.argv[2])
rows = {}
for tr in re.findall(r"<tr.*?</tr>", dom):
    cells = re.findall(r"<td[^>]*>(.*?)</td>", tr)
    if len(cells) == 3:
        name = re.sub(r"<[^>]*>", "", cells[2])
        rows[name] = [re.match(r"[^<]*", c).group(0) for c in cells[:2]]
# speedscope's bytes: two decimals of MB = 1024 * 1024 B, rounded half up
mb = (Decimal(total) / 1048576).quantize(Decimal("0.01"), ROUND_HALF_UP)
print(len(rows), "rows; c10:cpu_alloc", rows.get("c10:cpu_alloc"), "want", mb)
assert rows["c10:cpu_alloc"] == [f"{mb} MB (100%)", f"{mb} MB (100%)"]
assert all(r in rows for r in sys.argv[3:]), sorted(rows)
PY
}

@test "speedscope's own app opens --export speedscope: its name, the flame chart drawn, the sandwich table's totals" {
	"$MT" report -q -i "$BATS_FILE_TMPDIR/t.mtb" --export speedscope \
		-o "$WWW/ss.json" >/dev/null
	bytes=$(sed -nE 's/^# event c10:cpu_alloc count=[0-9]+ bytes=([0-9]+)$/\1/p' "$BATS_FILE_TMPDIR/report.out")
	name=$("$TORCH_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["profiles"][0]["name"])' "$WWW/ss.json")
	[[ "$name" == "pid "*" cpu: bytes allocated" ]]
	speedscope_app ss.json "memtrace-bpf: bytes allocated" "$bytes" \
		Spike.forward Adam.step
}

# trace_rules FILE: FILE follows the trace-event format (the JSON Object
# Format of Chrome's "Trace Event Format" document, which Perfetto's JSON
# importer reads): known phases and keys, the fields each phase needs with
# their types, numeric counters, metadata names; per thread, times never go
# back and B/E slices nest and close; per counter track, times never go
# back; every pid and thread used is named
trace_rules() {
	"$TORCH_PY" - "$1" <<'PY'
import json, math, sys
from collections import Counter, defaultdict

trace = json.load(open(sys.argv[1]))
assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
assert trace.get("displayTimeUnit", "ms") in ("ms", "ns"), trace
phases = set("BEXiICbneSTpFstfPNODMVvRc()")
keys = {"name", "cat", "ph", "ts", "tts", "pid", "tid", "args", "dur",
        "tdur", "s", "id", "id2", "bp", "scope", "cname", "sf", "stack",
        "esf", "estack", "bind_id", "flow_in", "flow_out"}
meta = {"process_name": str, "thread_name": str, "process_labels": str,
        "process_sort_index": int, "thread_sort_index": int}
is_int = lambda v: isinstance(v, int) and not isinstance(v, bool)
is_num = lambda v: (is_int(v) or isinstance(v, float)) and math.isfinite(v)
last_ts, open_slices, counters = {}, defaultdict(list), {}
named_pids, named_threads, used = set(), set(), Counter()
for e in trace["traceEvents"]:
    assert isinstance(e, dict) and set(e) <= keys, e
    ph = e["ph"]
    assert ph in phases and is_int(e["pid"]) and is_int(e["tid"]), e
    assert isinstance(e.get("name", ""), str) and isinstance(e.get("cat", ""), str), e
    assert isinstance(e.get("args", {}), dict), e
    used[ph] += 1
    if ph == "M":
        assert meta[e["name"]] is type(e["args"]["name" if e["name"].endswith("name") else "sort_index"]), e
        (named_pids if e["name"].startswith("process") else named_threads).add(
            e["pid"] if e["name"].startswith("process") else (e["pid"], e["tid"]))
        continue
    assert is_num(e["ts"]) and e["ts"] >= 0, e
    thread = (e["pid"], e["tid"])
    assert e["ts"] >= last_ts.get(thread, 0), (e, last_ts[thread])
    last_ts[thread] = e["ts"]
    if ph != "E":
        assert e["name"], e
    if ph == "B":
        open_slices[thread].append(e)
    elif ph == "E":
        b = open_slices[thread].pop()
        assert all(e[k] == b[k] for k in ("name", "cat") if k in e), (b, e)
    elif ph == "X":
        assert is_num(e["dur"]) and e["dur"] >= 0, e
    elif ph in "iI":
        assert e.get("s", "t") in ("g", "p", "t"), e
    elif ph == "C":
        assert e["args"] and all(is_num(v) for v in e["args"].values()), e
        track = (e["pid"], e["name"], e.get("id"))
        assert e["ts"] >= counters.get(track, 0), e
        counters[track] = e["ts"]
assert not any(open_slices.values()), open_slices
assert {p for p, _ in last_ts} <= named_pids, (last_ts.keys(), named_pids)
assert set(last_ts) <= named_threads, (last_ts.keys(), named_threads)
print(dict(used), len(counters), "counter tracks,", len(last_ts), "threads")
PY
}

@test "perfetto by the rules of the trace-event format: a CPU training loop's phases and modules, CUDA reports with an OOM" {
	"$MT" report -q -i "$BATS_FILE_TMPDIR/t.mtb" --export perfetto \
		-o "$BATS_TEST_TMPDIR/cpu.json" >/dev/null
	run trace_rules "$BATS_TEST_TMPDIR/cpu.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"'B': "*"'C': "* ]]

	fixture fx "$FIX/c10_report"
	trace 1 --keys -p "$fx_PID" --export perfetto -o "$BATS_TEST_TMPDIR/cuda.json"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	run trace_rules "$BATS_TEST_TMPDIR/cuda.json"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"'i': 1"* ]]
	# allocated, reserved and by kind, for each of two devices
	[[ "$output" == *" 6 counter tracks,"* ]]
}

@test "a flight dump in the viewers: its memviz in torch 2.6's and 2.14's _memory_viz pages, its speedscope in speedscope's app, its perfetto by the trace-event rules" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 3
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 record --flight 60s -o "$DIR" -p "$fx_PID"
	release fx
	wait_for "$BATS_TEST_TMPDIR/fx.out" '^spike ' 120
	# the last events through the tracer, then a dump of the process as
	# it is: the model, its gradients and Adam's state alive
	sleep 1
	kill -USR1 "$MT_PID"
	wait_for "$BATS_TEST_TMPDIR/trace.err" '^memtrace-bpf: flight: dumped .*-asked\.mtb: '
	touch "$BATS_TEST_TMPDIR/fx.hold"
	finish
	[ "$MT_STATUS" -eq 0 ]
	dump=$(ls "$DIR"/flight-*-asked.mtb)
	"$MT" report --keys -i "$dump" >"$BATS_TEST_TMPDIR/dump.keys"
	# stacks sampled, as a flight recorder always does
	grep -qx '# record sample_bytes: 524288' "$BATS_TEST_TMPDIR/dump.keys"
	read -r current peak < <(sed -nE 's/^# device pid=[0-9]+ dev=cpu source=cpu current=([0-9]+) peak=([0-9]+)$/\1 \2/p' "$BATS_TEST_TMPDIR/dump.keys")
	live=$(sed -nE 's/^# live allocations=([0-9]+) .*/\1/p' "$BATS_TEST_TMPDIR/dump.keys")
	echo "live: $live blocks, $current bytes; peak $peak"
	[ "$current" -gt 1000000 ]
	"$MT" report -q -i "$dump" --export memviz -o "$BATS_TEST_TMPDIR/d.pickle" >/dev/null
	memviz_pages "$BATS_TEST_TMPDIR/d.pickle" "$live" "$current" "$peak"

	"$MT" report -q -i "$dump" --export speedscope -o "$WWW/dump.json" >/dev/null
	title=$("$TORCH_PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["name"])' "$WWW/dump.json")
	[[ "$title" == "memtrace-bpf: bytes allocated; stacks for 1 allocation in "*" --sample-bytes 524288: "* ]]
	bytes=$(sed -nE 's/^# event c10:cpu_alloc count=[0-9]+ bytes=([0-9]+)$/\1/p' "$BATS_TEST_TMPDIR/dump.keys")
	speedscope_app dump.json "$title" "$bytes" "[stack not sampled]" Spike.forward

	"$MT" report -q -i "$dump" --export perfetto -o "$BATS_TEST_TMPDIR/d.json" >/dev/null
	run trace_rules "$BATS_TEST_TMPDIR/d.json"
	echo "$output"
	[ "$status" -eq 0 ]
	# slices from the sampled events, counters from all
	[[ "$output" == *"'B': "* && "$output" == *"'C': "* ]]
}
