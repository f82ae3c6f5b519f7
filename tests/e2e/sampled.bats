#!/usr/bin/env bats
# Sampled records are records: one made with --sample-bytes and a flight
# recorder's dump (which always samples stacks) exported in every format
# and read by estimate. One run of a real PyTorch training loop on the CPU
# (Debian's python3 and torch, incident_model.py), traced by three
# recorders at once: a full record, a --sample-bytes 64K record and
# record --flight, dumped on SIGUSR1 once the loop is done; the process is
# then killed, so that all three hold the same events. Every export of a
# sampled record is checked by its consumer and against the full record's
# totals: sizes and times are exact, only stacks are sampled.

load helpers
bats_require_minimum_version 1.5.0

MODEL_PY=$ROOT/tests/fixtures/incident_model.py

setup_file() {
	# the helpers keep their files in BATS_TEST_TMPDIR: here, the file's
	local BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR rec fl
	mkdir "$BATS_FILE_TMPDIR/dumps"
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 3
	"$MT" record --sample-bytes 64K -o "$BATS_FILE_TMPDIR/s.mtb" \
		-p "$fx_PID" >/dev/null 2>"$BATS_FILE_TMPDIR/s.err" &
	rec=$!
	"$MT" record --flight 60s -o "$BATS_FILE_TMPDIR/dumps" -p "$fx_PID" \
		>/dev/null 2>"$BATS_FILE_TMPDIR/flight.err" &
	fl=$!
	MT_LOG=$BATS_FILE_TMPDIR/trace.err trace 1 record \
		-o "$BATS_FILE_TMPDIR/f.mtb" -p "$fx_PID"
	wait_for "$BATS_FILE_TMPDIR/s.err" '^# attach .*libc10'
	wait_for "$BATS_FILE_TMPDIR/flight.err" '^# attach .*libc10'
	release fx
	wait_for "$BATS_FILE_TMPDIR/fx.out" '^spike ' 120
	# the last events through every tracer's ring buffer and order
	sleep 1
	kill -USR1 "$fl"
	wait_for "$BATS_FILE_TMPDIR/flight.err" '^memtrace-bpf: flight: dumped .*-asked\.mtb: '
	# no exit: nothing after the dump in the full record either
	kill -KILL "$fx_PID"
	finish
	wait "$rec"
	wait "$fl" || true
	cat "$BATS_FILE_TMPDIR/s.err" "$BATS_FILE_TMPDIR/flight.err" >&3
	for r in f s; do
		"$MT" report --keys -i "$BATS_FILE_TMPDIR/$r.mtb" \
			>"$BATS_FILE_TMPDIR/$r.keys"
	done
}

# the dump SIGUSR1 asked for
dump() {
	ls "$BATS_FILE_TMPDIR"/dumps/flight-*-asked.mtb
}

# totals KEYS: the exact figures of a report --keys, without the pid
totals() {
	grep -E '^# (event|device) ' "$1" | sed -E 's/ pid=[0-9]+//'
}

# bytes KEYS EVENT: the bytes of the summary's "# event EVENT" line
bytes() {
	sed -nE "s/^# event $2 count=[0-9]+ bytes=([0-9]+)$/\\1/p" "$1"
}

# peak KEYS: the CPU's peak bytes
peak() {
	sed -nE 's/^# device pid=[0-9]+ dev=cpu source=cpu current=[0-9]+ peak=([0-9]+)$/\1/p' "$1"
}

# memviz PICKLE: loaded, torch's _memory_viz (1.13) run on it; prints per
# device each action's count and bytes, the live blocks and the segments,
# then "unsampled N FILE" (the entries whose frames say so) and the
# snapshot's 'memtrace_sample', if any
memviz() {
	"$TORCH_PY" - "$1" <<'PY'
import pickle, sys
from collections import Counter
import torch.cuda._memory_viz as mv

snap = pickle.load(open(sys.argv[1], "rb"))
segs, traces = snap["segments"], snap["device_traces"]
ident = lambda s: s
mv.stats(segs)
mv.segments(segs, format_flamegraph=ident)
mv.memory(segs, format_flamegraph=ident)
for dev, trace in enumerate(traces):
    n, b = Counter(), Counter()
    for e in trace:
        n[e["action"]] += 1
        b[e["action"]] += e["size"]
    live = [x["size"] for s in segs if s["device"] == dev for x in s["blocks"]
            if x["state"] == "active_allocated"]
    print(dev, " ".join(f"{a} {n[a]} {b[a]}" for a in sorted(n)), "live",
          len(live), sum(live), "segments",
          sum(s["total_size"] for s in segs if s["device"] == dev))
bare = [f for t in traces for e in t for f in e["frames"]
        if f["name"] == "stack not sampled"]
print("unsampled", len(bare), *sorted({f["filename"] for f in bare}))
print("sample", snap.get("memtrace_sample"))
PY
}

@test "memviz of a sampled record: torch's _memory_viz reads it, the full record's blocks and bytes, unsampled frames and the snapshot say so" {
	memviz "$(export_of "$BATS_FILE_TMPDIR/f.mtb" memviz)" >"$BATS_TEST_TMPDIR/f.out"
	memviz "$(export_of "$BATS_FILE_TMPDIR/s.mtb" memviz)" >"$BATS_TEST_TMPDIR/s.out"
	cat "$BATS_TEST_TMPDIR/s.out"
	# the same allocations, frees and blocks, to the byte
	diff <(grep '^0 ' "$BATS_TEST_TMPDIR/f.out") <(grep '^0 ' "$BATS_TEST_TMPDIR/s.out")
	grep -qE "^0 alloc [0-9]+ $(bytes "$BATS_FILE_TMPDIR/f.keys" c10:cpu_alloc) " "$BATS_TEST_TMPDIR/s.out"
	grep -qx 'unsampled 0' "$BATS_TEST_TMPDIR/f.out"
	grep -qx 'sample None' "$BATS_TEST_TMPDIR/f.out"
	# most entries have no stack, and say so with the rate
	n=$(sed -nE 's/^unsampled ([0-9]+) memtrace-bpf --sample-bytes 65536$/\1/p' "$BATS_TEST_TMPDIR/s.out")
	[ "$n" -gt 100 ]
	read -r allocs sampled < <(sed -nE 's/^# sample bytes=65536 allocs=([0-9]+) sampled=([0-9]+) .*/\1 \2/p' "$BATS_FILE_TMPDIR/s.keys")
	grep -qF "sample {'sample_bytes': 65536, 'allocations': $allocs, 'sampled': $sampled, 'note': 'stacks for 1 allocation in " "$BATS_TEST_TMPDIR/s.out"
	grep -qF "(by bytes, R=64.0 KiB), --sample-bytes 65536: every size, time and total exact; an event without a stack is drawn as \"stack not sampled\"'}" "$BATS_TEST_TMPDIR/s.out"
}

@test "perfetto of a sampled record: the full record's counters, slices that nest in time, otherData says how it was sampled" {
	"$TORCH_PY" - "$(export_of "$BATS_FILE_TMPDIR/s.mtb" perfetto)" \
		"$(export_of "$BATS_FILE_TMPDIR/f.mtb" perfetto)" <<'PY'
import json, sys
from collections import defaultdict

def load(path):
    trace = json.load(open(path))
    counters, slices, stacks = defaultdict(list), set(), defaultdict(list)
    last = {}
    for e in trace["traceEvents"]:
        # on each track, time never goes back
        if e["ph"] != "M":
            track = (e["pid"], e["tid"])
            assert e["ts"] >= last.get(track, 0), (e, last[track])
            last[track] = e["ts"]
        # a counter by kind: its kinds add up to the account's bytes, exact
        # (which kind is told from the stacks: unsampled ones are unknown)
        if e["ph"] == "C":
            counters[e["name"]].append(sum(e["args"].values()))
        elif e["ph"] == "B":
            slices.add((e["cat"], e["name"]))
            stacks[e["tid"]].append(e)
        elif e["ph"] == "E":
            b = stacks[e["tid"]].pop()
            assert (b["name"], b["cat"]) == (e["name"], e["cat"]), (b, e)
    assert not any(stacks.values()), stacks
    return trace, {k: (v[-1], max(v)) for k, v in counters.items()}, slices

s, sc, ss = load(sys.argv[1])
f, fc, fs = load(sys.argv[2])
print("counters (last, max):", sc, "slices:", sorted(ss))
assert sc == fc, (sc, fc)
# the phases, from the sampled events
assert {("phase", p) for p in ("forward", "backward", "optimizer")} <= ss
other = s["otherData"]
print(other)
assert other["sample_bytes"] == 65536
assert other["stacks"].startswith("stacks for 1 allocation in ")
assert "sample_bytes" not in f["otherData"]
PY
}

@test "speedscope of a sampled record: valid by its schema, each profile the full record's bytes, --at peak the peak, its name says how it was sampled" {
	for r in f s; do
		"$AJV" validate -s "$SCHEMA" -d "$(export_of "$BATS_FILE_TMPDIR/$r.mtb" speedscope)"
	done
	P=$(export_of "$BATS_FILE_TMPDIR/s.mtb" speedscope --at peak)
	"$AJV" validate -s "$SCHEMA" -d "$P"
	"$TORCH_PY" - "$BATS_TEST_TMPDIR"/{s,f}-speedscope.json \
		"$(bytes "$BATS_FILE_TMPDIR/f.keys" c10:cpu_alloc)" \
		"$(peak "$BATS_FILE_TMPDIR/f.keys")" <<'PY'
import json, sys

def totals(path):
    d = json.load(open(path))
    return d, {p["name"]: sum(p["weights"]) for p in d["profiles"]}

s, st = totals(sys.argv[1])
f, ft = totals(sys.argv[2])
print(s["name"], st)
assert st == ft and list(st.values()) == [int(sys.argv[3])], (st, ft)
assert s["name"].startswith("memtrace-bpf: bytes allocated; stacks for 1 allocation in ")
assert s["name"].endswith('an event without a stack is drawn as "stack not sampled"')
assert f["name"] == "memtrace-bpf: bytes allocated"
names = [fr["name"] for fr in s["shared"]["frames"]]
assert "[stack not sampled]" in names and "Spike.forward" in names, names
PY
	# --at peak: the peak, by exact bytes
	"$TORCH_PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
w = [sum(p["weights"]) for p in d["profiles"]]
print(d["profiles"][0]["name"], w)
assert w == [int(sys.argv[2])], w' "$P" "$(peak "$BATS_FILE_TMPDIR/f.keys")"
}

@test "folded of a sampled record: flamegraph.pl draws it, the full record's bytes per call, --at peak the peak" {
	[ -r "$FLAMEGRAPH" ]
	S=$(export_of "$BATS_FILE_TMPDIR/s.mtb" folded)
	F=$(export_of "$BATS_FILE_TMPDIR/f.mtb" folded)
	perl "$FLAMEGRAPH" --countname bytes --title memory "$S" >"$BATS_TEST_TMPDIR/s.svg"
	grep -q '<svg' "$BATS_TEST_TMPDIR/s.svg"
	# every line: frames, a space, an integer; bytes per innermost frame
	# (the call) as the full record's
	! grep -vE '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$S"
	per_call() {
		awk '{ b = $NF; sub(/ [0-9]+$/, ""); n = split($0, f, ";"); s[f[n]] += b }
			END { for (k in s) print k, s[k] }' "$1" | sort
	}
	diff <(per_call "$F") <(per_call "$S")
	[ "$(awk '{ s += $NF } END { print s }' "$S")" -eq "$(bytes "$BATS_FILE_TMPDIR/f.keys" c10:cpu_alloc)" ]
	# what had no stack: under the frame that says so, with the rate
	grep -qE '^\[stack not sampled \(--sample-bytes 65536\)\];libc10\.so[^;]*;c10:cpu_alloc [0-9]+$' "$S"
	grep -q 'Spike.forward (' "$S"
	# --at peak, by exact bytes
	P=$(export_of "$BATS_FILE_TMPDIR/s.mtb" folded --at peak)
	head -3 "$P"
	[ "$(awk '{ s += $NF } END { print s }' "$P")" -eq "$(peak "$BATS_FILE_TMPDIR/f.keys")" ]
}

@test "json of a sampled record: the full record's events, each line with sample_bytes and stack_sampled" {
	"$TORCH_PY" - "$(export_of "$BATS_FILE_TMPDIR/s.mtb" json)" \
		"$(export_of "$BATS_FILE_TMPDIR/f.mtb" json)" <<'PY'
import json, sys
from collections import Counter

s = [json.loads(l) for l in open(sys.argv[1])]
f = [json.loads(l) for l in open(sys.argv[2])]
key = lambda o: (o["event"], o.get("ptr"), o.get("size"))
print(len(s), "lines,", sum(not o["stack_sampled"] for o in s), "without a stack")
assert Counter(map(key, s)) == Counter(map(key, f))
assert all(o["sample_bytes"] == 65536 for o in s)
assert not any("sample_bytes" in o or "stack_sampled" in o for o in f)
for o in s:
    if not o["stack_sampled"]:
        assert o["stack"] == [] and "module" not in o and "phase" not in o, o
assert any(o["stack_sampled"] and o["stack"] for o in s)
assert all(not o["stack_sampled"] for o in s if o["event"] == "c10:cpu_free")
PY
}

@test "svg of a sampled record: rsvg-convert draws it, the full record's peaks, the title and desc say how it was sampled" {
	S=$(export_of "$BATS_FILE_TMPDIR/s.mtb" svg)
	F=$(export_of "$BATS_FILE_TMPDIR/f.mtb" svg)
	rsvg-convert "$S" -o "$BATS_TEST_TMPDIR/s.png"
	[ -s "$BATS_TEST_TMPDIR/s.png" ]
	peaks() {
		grep -oE 'allocated peak [^<]*, reserved peak [^<]*' "$1"
	}
	peaks "$S"
	[ -n "$(peaks "$S")" ]
	[ "$(peaks "$S")" = "$(peaks "$F")" ]
	grep -qE '<text x="[0-9]+" y="24" text-anchor="end">stacks for 1 allocation in [0-9]+ \(by bytes, R=64\.0 KiB\), totals exact</text>' "$S"
	grep -q '<desc>stacks for 1 allocation in .*, --sample-bytes 65536: every size, time and total exact; an event without a stack is drawn as &quot;stack not sampled&quot;</desc>' "$S"
	! grep -q '<desc>' "$F"
}

# estimate's figures that do not depend on the tracer's clock
model() {
	"$MT" estimate -i "$@" | grep -E '^# estimate cpu (source|peak_allocated|oom|fits)' |
		sed -E 's/ event [0-9]+ at [0-9.]+ s:/:/'
}

@test "estimate of a sampled record: the full record's peaks, segments and OOMs" {
	model "$BATS_FILE_TMPDIR/f.mtb" >"$BATS_TEST_TMPDIR/f.est"
	model "$BATS_FILE_TMPDIR/s.mtb" >"$BATS_TEST_TMPDIR/s.est"
	cat "$BATS_TEST_TMPDIR/s.est"
	grep -q '^# estimate cpu peak_allocated=[1-9]' "$BATS_TEST_TMPDIR/s.est"
	diff "$BATS_TEST_TMPDIR/f.est" "$BATS_TEST_TMPDIR/s.est"
	# a device too small: the same allocations fail
	model "$BATS_FILE_TMPDIR/f.mtb" --device-mem 40MiB >"$BATS_TEST_TMPDIR/f.oom"
	model "$BATS_FILE_TMPDIR/s.mtb" --device-mem 40MiB >"$BATS_TEST_TMPDIR/s.oom"
	grep -q ' oom: [1-9][0-9]* allocations would fail' "$BATS_TEST_TMPDIR/s.oom"
	diff "$BATS_TEST_TMPDIR/f.oom" "$BATS_TEST_TMPDIR/s.oom"
	# the header says so; the phase lines count every allocation
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/s.mtb"
	[ "$status" -eq 0 ]
	grep -q '^# estimate sample: bytes=65536: ' <<<"$output"
	allocs=$(sed -nE 's/^# estimate cpu source=.* allocs=([0-9]+) .*/\1/p' <<<"$output")
	[ "$(sed -nE 's/^# estimate cpu phase=.* allocs=([0-9]+) .*/\1/p' <<<"$output" | awk '{ s += $1 } END { print s }')" -eq "$allocs" ]
	grep -qE '^# estimate cpu phase=\[stack_not_sampled\] allocs=[1-9]' <<<"$output"
}

@test "a flight dump (SIGUSR1) is a whole record: every export reads it with its exact totals, estimate with the full record's peaks" {
	D=$(dump)
	"$MT" report --keys -i "$D" >"$BATS_TEST_TMPDIR/d.keys"
	head -3 "$BATS_TEST_TMPDIR/d.keys"
	grep -qx '# record dump: asked for: SIGUSR1 to the tracer' "$BATS_TEST_TMPDIR/d.keys"
	grep -qx '# record sample_bytes: 524288' "$BATS_TEST_TMPDIR/d.keys"
	# the whole run: the full record's totals
	diff <(totals "$BATS_FILE_TMPDIR/f.keys") <(totals "$BATS_TEST_TMPDIR/d.keys")
	alloc=$(bytes "$BATS_TEST_TMPDIR/d.keys" c10:cpu_alloc)
	[ "$alloc" -gt 0 ]

	memviz "$(export_of "$D" memviz)" >"$BATS_TEST_TMPDIR/d.memviz.out"
	cat "$BATS_TEST_TMPDIR/d.memviz.out"
	grep -qE "^0 alloc [0-9]+ $alloc " "$BATS_TEST_TMPDIR/d.memviz.out"
	grep -qE '^unsampled [1-9][0-9]* memtrace-bpf --sample-bytes 524288$' "$BATS_TEST_TMPDIR/d.memviz.out"
	grep -qF "sample {'sample_bytes': 524288, " "$BATS_TEST_TMPDIR/d.memviz.out"

	"$AJV" validate -s "$SCHEMA" -d "$(export_of "$D" speedscope)"
	perl "$FLAMEGRAPH" --countname bytes "$(export_of "$D" folded)" >"$BATS_TEST_TMPDIR/d.svg"
	rsvg-convert "$(export_of "$D" svg)" -o "$BATS_TEST_TMPDIR/d.png"
	export_of "$D" perfetto
	export_of "$D" json
	"$TORCH_PY" - "$BATS_TEST_TMPDIR" "$(basename "$D" .mtb)" "$alloc" \
		"$(sed -nE 's/^# summary .* events=([0-9]+) .*/\1/p' "$BATS_TEST_TMPDIR/d.keys")" <<'PY'
import json, sys

d, name, alloc, events = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ss = json.load(open(f"{d}/{name}-speedscope.json"))
assert [sum(p["weights"]) for p in ss["profiles"]] == [alloc], ss["profiles"]
assert "--sample-bytes 524288" in ss["name"], ss["name"]
folded = sum(int(l.rsplit(" ", 1)[1]) for l in open(f"{d}/{name}-folded.folded"))
assert folded == alloc, (folded, alloc)
pf = json.load(open(f"{d}/{name}-perfetto.json"))
assert pf["otherData"]["sample_bytes"] == 524288
lines = [json.loads(l) for l in open(f"{d}/{name}-json.json")]
assert len(lines) == events and all(o["sample_bytes"] == 524288 for o in lines)
print("speedscope, folded:", alloc, "bytes; json:", len(lines), "lines")
PY
	model "$BATS_FILE_TMPDIR/f.mtb" >"$BATS_TEST_TMPDIR/f.est"
	model "$D" >"$BATS_TEST_TMPDIR/d.est"
	cat "$BATS_TEST_TMPDIR/d.est"
	diff "$BATS_TEST_TMPDIR/f.est" "$BATS_TEST_TMPDIR/d.est"
}
