#!/usr/bin/env bats
# --export memviz: a PyTorch memory snapshot pickle. Python's pickle loads
# it, Debian's torch 1.13 _memory_viz functions run on its 'segments', a
# replay like memory_viz's finds every block inside a segment, and its
# totals equal the summary's. Real PyTorch on the CPU, the real libc10
# replaying CUDA reports, the stand-in libcudart.

load helpers

MODEL_PY=$ROOT/tests/fixtures/incident_model.py

# check PICKLE: load it, run the checks, print "key value" totals
check() {
	"$TORCH_PY" - "$1" <<'PY'
import pickle, sys
import torch.cuda._memory_viz as mv

snap = pickle.load(open(sys.argv[1], "rb"))
assert set(snap) == {"segments", "device_traces"}, snap.keys()
segs, traces = snap["segments"], snap["device_traces"]

# torch 1.13 takes the bare list of segments (its _snapshot() returned one)
st = mv.stats(segs)
ident = lambda s: s
flame = mv.segments(segs, format_flamegraph=ident)
mem = mv.memory(segs, format_flamegraph=ident)
mv.compare(segs, segs, format_flamegraph=ident)
for seg in segs:
    at = seg["address"]
    for b in seg["blocks"]:
        assert b["address"] == at, (seg, b)
        at += b["size"]
    assert at == seg["address"] + seg["total_size"]

# memory_viz replays each device's trace back from 'segments': every block
# live at any step must lie inside a segment live then
def replay(dev, trace):
    seg = {s["address"]: s["total_size"] for s in segs if s["device"] == dev}
    live = {}
    for s in segs:
        if s["device"] == dev:
            for b in s["blocks"]:
                if b["state"] == "active_allocated":
                    live[b["address"]] = b["size"]
    def inside(a, n):
        return any(g <= a and a + max(n, 1) <= g + z for g, z in seg.items())
    for e in reversed(trace):
        a = e["action"]
        if a == "free_completed":
            assert inside(e["addr"], e["size"]), (dev, e)
            live[e["addr"]] = e["size"]
        elif a == "alloc":
            live.pop(e["addr"], None)
        elif a in ("segment_free", "segment_unmap"):
            seg[e["addr"]] = e["size"]
        elif a in ("segment_alloc", "segment_map"):
            assert inside(e["addr"], e["size"]), (dev, e)
            seg.pop(e["addr"], None)
    for f in (e.get("frames", []) for e in trace):
        for fr in f:
            assert set(fr) == {"filename", "line", "name"}, fr
            assert isinstance(fr["line"], int)

print("devices", len(traces))
for dev, trace in enumerate(traces):
    replay(dev, trace)
    n = lambda a: sum(1 for e in trace if e["action"] == a)
    nb = lambda a: sum(e["size"] for e in trace if e["action"] == a)
    live = [b for s in segs if s["device"] == dev for b in s["blocks"]
            if b["state"] == "active_allocated"]
    reserved = sum(s["total_size"] for s in segs if s["device"] == dev)
    print(dev, "alloc", n("alloc"), nb("alloc"), "free", n("free_requested"),
          n("free_completed"), nb("free_completed"), "segment_alloc",
          n("segment_alloc"),
          nb("segment_alloc"), "segment_free", n("segment_free"),
          "oom", n("oom"), nb("oom"), "live", len(live),
          sum(b["size"] for b in live), "segments",
          sum(1 for s in segs if s["device"] == dev))
print("total_size", st["total_size"].value)
PY
}

# field of the check's line for device DEV: the value after KEY (+N)
dev_val() {
	awk -v d="$2" -v k="$3" -v o="${4:-1}" '$1 == d { for (i = 2; i <= NF; i++) if ($i == k) print $(i + o) }' "$1"
}

# count, bytes of the summary's "# event EVENT" line
summary_event() {
	sed -nE "s/^# event $2 count=([0-9]+) bytes=([0-9]+)$/\1 \2/p" "$1"
}

cpu_checks() {
	local out=$1 summary=$2
	cat "$out"
	# no CUDA here: the CPU's list is the first
	grep -qx 'devices 1' "$out"
	read -r count bytes < <(summary_event "$summary" c10:cpu_alloc)
	[ "$(dev_val "$out" 0 alloc)" -eq "$count" ]
	[ "$(dev_val "$out" 0 alloc 2)" -eq "$bytes" ]
	current=$(sed -nE 's/^# device pid=[0-9]+ dev=cpu source=cpu current=([0-9]+) .*/\1/p' "$summary")
	[ "$(dev_val "$out" 0 live 2)" -eq "$current" ]
	live=$(sed -nE 's/^# live allocations=([0-9]+) .*/\1/p' "$summary")
	[ "$(dev_val "$out" 0 live)" -eq "$live" ]
	# the free of every allocation seen and gone, with its bytes; a
	# free of a block allocated before the attach has no size and is
	# left out (in memory_viz no segment could hold it)
	read -r fcount fbytes < <(summary_event "$summary" c10:cpu_free)
	[ "$(dev_val "$out" 0 free)" -eq $((count - live)) ]
	[ "$(dev_val "$out" 0 free)" -le "$fcount" ]
	[ "$(dev_val "$out" 0 free 2)" -eq $((count - live)) ]
	[ "$(dev_val "$out" 0 free 3)" -eq "$fbytes" ]
	# a segment per block held, each block its segment's from
	# segment_alloc to segment_free
	[ "$(dev_val "$out" 0 segments)" -eq "$live" ]
	[ "$(dev_val "$out" 0 segment_alloc)" -eq "$count" ]
	[ "$(dev_val "$out" 0 segment_alloc 2)" -eq "$bytes" ]
	[ "$(dev_val "$out" 0 segment_free)" -eq $((count - live)) ]
	[ "$(grep '^total_size ' "$out")" = "total_size $current" ]
}

@test "memviz live from a CPU training loop: loads, 1.13 functions run, totals equal ours" {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 3
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID" \
		--export memviz -o "$BATS_TEST_TMPDIR/x.pickle"
	release fx
	settle fx '^spike '
	finish
	[ "$MT_STATUS" -eq 0 ]
	check "$BATS_TEST_TMPDIR/x.pickle" >"$BATS_TEST_TMPDIR/check.out"
	cpu_checks "$BATS_TEST_TMPDIR/check.out" "$TRACE"
	# the spike's stack, parsed into frames
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/x.pickle" "$MODEL_PY" <<'PY'
import pickle, sys
snap = pickle.load(open(sys.argv[1], "rb"))
fr = [f for e in snap["device_traces"][0] for f in e["frames"]]
assert any(f["name"] == "Spike.forward" and f["filename"] == sys.argv[2]
           and f["line"] > 0 for f in fr), fr[:10]
assert any(f["name"] == "c10:cpu_alloc" for f in fr)
PY
	# each alloc's kind as its category, where torch's own snapshot of a
	# profile puts the profiler's: replayed to the CPU's peak, the blocks
	# alive then add up by category to the report's '# kinds' there
	grep '^# kinds pid=[0-9]* dev=cpu space=cpu ' "$TRACE" >"$BATS_TEST_TMPDIR/kinds"
	cat "$BATS_TEST_TMPDIR/kinds"
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/x.pickle" "$BATS_TEST_TMPDIR/kinds" <<'PY'
import pickle, sys
from collections import Counter
snap = pickle.load(open(sys.argv[1], "rb"))
want = dict(kv.split("=") for kv in open(sys.argv[2]).read().split()[2:])
peak = int(want.pop("peak"))
for k in ("pid", "dev", "space"):
    want.pop(k)
trace = snap["device_traces"][0]
allocs = [e for e in trace if e["action"] == "alloc"]
assert allocs and all(e["category"] in want for e in allocs), allocs[:3]
print(Counter(e["category"] for e in allocs))
live, cur, at_peak = {}, 0, None
for e in trace:
    if e["action"] == "alloc":
        live[e["addr"]] = e
        cur += e["size"]
    elif e["action"] == "free_completed":
        cur -= live.pop(e["addr"])["size"]
    if cur == peak and at_peak is None:
        at_peak = Counter()
        for a in live.values():
            at_peak[a["category"]] += a["size"]
print("peak", peak, dict(at_peak), "want", want, file=sys.stderr)
assert at_peak is not None
assert all(at_peak[k] == int(v) for k, v in want.items())
assert at_peak["optimizer_state"] > 0 and at_peak["gradients"] > 0
PY
}

@test "memviz from a record equals memviz live" {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 2
	"$MT" record -o "$BATS_TEST_TMPDIR/t.mtb" -p "$fx_PID" \
		>"$BATS_TEST_TMPDIR/rec.out" 2>"$BATS_TEST_TMPDIR/rec.err" &
	rec=$!
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID" \
		--export memviz -o "$BATS_TEST_TMPDIR/live.pickle"
	wait_for "$BATS_TEST_TMPDIR/rec.err" '^# attach .*libc10'
	sleep 0.5
	release fx
	settle fx '^spike '
	finish
	wait "$rec"
	"$MT" report --keys -q -i "$BATS_TEST_TMPDIR/t.mtb" --export memviz \
		-o "$BATS_TEST_TMPDIR/rep.pickle" >"$BATS_TEST_TMPDIR/report.out"
	check "$BATS_TEST_TMPDIR/rep.pickle" >"$BATS_TEST_TMPDIR/rep.check"
	cpu_checks "$BATS_TEST_TMPDIR/rep.check" "$BATS_TEST_TMPDIR/report.out"
	check "$BATS_TEST_TMPDIR/live.pickle" >"$BATS_TEST_TMPDIR/live.check"
	diff "$BATS_TEST_TMPDIR/live.check" "$BATS_TEST_TMPDIR/rep.check"
}

@test "memviz of CUDA caching-allocator reports: per-device lists, oom, CPU last" {
	fixture fx "$FIX/c10_report"
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID" \
		--export memviz -o "$BATS_TEST_TMPDIR/x.pickle"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	out=$BATS_TEST_TMPDIR/check.out
	check "$BATS_TEST_TMPDIR/x.pickle" >"$out"
	cat "$out"
	# cuda:0, cuda:1, then the CPU if its reporter saw alloc_cpu
	ncpu=$(summary_event "$TRACE" c10:cpu_alloc | cut -d" " -f1)
	grep -qx "devices $((2 + (${ncpu:-0} > 0)))" "$out"
	for dev in 0 1; do
		want=$(grep -c "^op=alloc .* dev=cuda:$dev\$" "$BATS_TEST_TMPDIR/fx.out")
		[ "$(dev_val "$out" $dev alloc)" -eq "$want" ]
		want=$(grep -c "^op=free .* dev=cuda:$dev\$" "$BATS_TEST_TMPDIR/fx.out")
		[ "$(dev_val "$out" $dev free)" -eq "$want" ]
		allocated=$(sed -nE "s/^# device pid=[0-9]+ dev=cuda:$dev source=c10 allocated=([0-9]+) .*/\\1/p" "$TRACE")
		[ "$(dev_val "$out" $dev live 2)" -eq "$allocated" ]
	done
	oom=$(awk '/^op=oom /{ sub("size=", "", $3); print $3 }' "$BATS_TEST_TMPDIR/fx.out")
	[ "$(dev_val "$out" 0 oom)" -eq 1 ]
	[ "$(dev_val "$out" 0 oom 2)" -eq "$oom" ]
	if [ "${ncpu:-0}" -gt 0 ]; then
		[ "$(dev_val "$out" 2 alloc)" -eq "$ncpu" ]
		[ "$(dev_val "$out" 2 live)" -eq 0 ]
	fi
}

@test "memviz through the stand-in libcudart: segment_alloc, segment_free, oom" {
	LD_LIBRARY_PATH=$FIX/fake FAKE_CUDART_FAIL_SIZE=4000000 \
		fixture fx "$FIX/cudart_calls" setdevice 0 malloc 1048576 \
		malloc 2000000 mallocasync 524288 0x5a5a free 0 \
		freeasync 2 0x5a5a malloc 5000000 setdevice 1 malloc 4608
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID" \
		--export memviz -o "$BATS_TEST_TMPDIR/x.pickle"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	out=$BATS_TEST_TMPDIR/check.out
	check "$BATS_TEST_TMPDIR/x.pickle" >"$out"
	cat "$out"
	grep -qx 'devices 2' "$out"
	[ "$(dev_val "$out" 0 segment_alloc)" -eq 3 ]
	[ "$(dev_val "$out" 0 segment_alloc 2)" -eq $((1048576 + 2000000 + 524288)) ]
	[ "$(dev_val "$out" 0 segment_free)" -eq 2 ]
	[ "$(dev_val "$out" 0 oom)" -eq 1 ]
	[ "$(dev_val "$out" 0 oom 2)" -eq 5000000 ]
	[ "$(dev_val "$out" 0 segments)" -eq 1 ]
	[ "$(dev_val "$out" 1 segment_alloc)" -eq 1 ]
	[ "$(dev_val "$out" 1 segments)" -eq 1 ]
	# what the segments hold equals the summary's current bytes
	for dev in 0 1; do
		current=$(sed -nE "s/^# device pid=[0-9]+ dev=cuda:$dev source=cudart current=([0-9]+) .*/\\1/p" "$TRACE")
		"$TORCH_PY" -c '
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))["segments"]
assert sum(g["total_size"] for g in s if g["device"] == int(sys.argv[2])) == int(sys.argv[3])
' "$BATS_TEST_TMPDIR/x.pickle" "$dev" "$current"
	done
	# the stream of the async one
	"$TORCH_PY" -c '
import pickle, sys
t = pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]
assert [e["stream"] for e in t if e["action"] == "segment_alloc"] == [0, 0, 0x5a5a]
' "$BATS_TEST_TMPDIR/x.pickle"
}
