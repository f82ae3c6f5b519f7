#!/usr/bin/env bats
# The filters of report, script and the exports (--time, --steps, -p,
# --tid, --comm, --module, --phase, --event, --size) and --at: one record
# of the demo model (Debian's python3 and torch on the CPU), each filter
# narrowing report's counts, script's lines and the json export the same
# way, and the bad combinations refused in one line.

load helpers

DEMO_PY=$ROOT/scripts/demo_train.py

setup_file() {
	"$MT" record -o "$BATS_FILE_TMPDIR/t.mtb" -- "$TORCH_PY" "$DEMO_PY" \
		--steps 6 >/dev/null 2>"$BATS_FILE_TMPDIR/rec.err"
	"$MT" script -i "$BATS_FILE_TMPDIR/t.mtb" --no-stack \
		>"$BATS_FILE_TMPDIR/all.script"
}

# same_counts REPORT SCRIPT JSONL: per event kind, the count and bytes of
# report's '# event' lines, of script's event lines and of the json lines
# agree; prints the total count
same_counts() {
	"$TORCH_PY" - "$@" <<'EOF'
import collections, json, re, sys

rep, scr, jl = (collections.Counter(), collections.Counter()), \
    (collections.Counter(), collections.Counter()), \
    (collections.Counter(), collections.Counter())
for line in open(sys.argv[1]):
    m = re.match(r'^# event (\S+) count=(\d+) bytes=(\d+)$', line)
    if m:
        rep[0][m[1]] += int(m[2])
        rep[1][m[1]] += int(m[3])
for line in open(sys.argv[2]):
    m = re.match(r'^\S+ \d+/\d+ \[\d+\] \d+\.\d+: (\S+): .*\bsize=(\d+)', line)
    if m:
        scr[0][m[1]] += 1
        scr[1][m[1]] += int(m[2])
for line in open(sys.argv[3]):
    o = json.loads(line)
    jl[0][o['event']] += 1
    jl[1][o['event']] += o['size'] or 0
assert rep == scr == jl, (rep, scr, jl)
print(sum(rep[0].values()))
EOF
}

# narrow ARGS...: report --keys, script and --export json with ARGS; the
# events they count must agree; the count in $count
narrow() {
	local d=$BATS_TEST_TMPDIR
	"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys "$@" >"$d/r.out"
	"$MT" script -i "$BATS_FILE_TMPDIR/t.mtb" --no-stack "$@" >"$d/s.out"
	"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" "$@" --export json \
		-o "$d/j.jsonl" >/dev/null
	count=$(same_counts "$d/r.out" "$d/s.out" "$d/j.jsonl")
	# the filter says what it let through, beside the summary
	grep -q "^# filter .* passed=$count " "$d/r.out"
}

@test "every filter narrows report, script and the json export the same way" {
	total=$(grep -c '^python3 ' "$BATS_FILE_TMPDIR/all.script")
	pid=$(awk 'NR == 1 { split($2, a, "/"); print a[1] }' \
		"$BATS_FILE_TMPDIR/all.script")
	[ "$total" -gt 1000 ]
	for f in "--time 1,2" "--time 2," "--time ,0.5" "--steps 2,3" \
		"--steps 4," "--module encoder.layers.1" "--module encoder" \
		"--phase forward" "--phase optimizer" "--size 1M" \
		"--size 1k,64k" "--tid $pid,1" "--comm python3,x" \
		"--module encoder --phase backward --size 4k"; do
		# shellcheck disable=SC2086
		narrow $f
		echo "$f: $count of $total"
		[ "$count" -gt 0 ]
		[ "$count" -lt "$total" ] || [[ "$f" == --tid* || "$f" == --comm* ]]
	done
	# a process, a thread name or a kind the record lacks: an error
	# naming what it has (below), in each of the three alike
	for f in "-p 1" "--comm nobody" "--event cudart:cudaMalloc"; do
		for mode in "report --keys" "script --no-stack" \
			"report --export json -o $BATS_TEST_TMPDIR/j.jsonl"; do
			# shellcheck disable=SC2086
			run "$MT" ${mode%% *} -i "$BATS_FILE_TMPDIR/t.mtb" \
				${mode#* } $f
			echo "$mode $f -> $status: $output"
			[ "$status" -eq 2 ]
			[[ "$output" == "memtrace-bpf: $f: no event has it; "* ]]
		done
	done
	narrow -p "$pid"
	[ "$count" -eq "$total" ]
	narrow --event c10:cpu_alloc
	[ "$count" -eq "$total" ]
}

@test "a module prefix takes its children, never a sibling that shares its letters" {
	"$MT" script -i "$BATS_FILE_TMPDIR/t.mtb" --no-stack \
		--module encoder.layers.1 >"$BATS_TEST_TMPDIR/s.out"
	grep -q 'module=encoder.layers.1.self_attn' "$BATS_TEST_TMPDIR/s.out"
	! grep -E '^python3 ' "$BATS_TEST_TMPDIR/s.out" |
		grep -vE 'module=encoder\.layers\.1( |\.|$)' | grep -v 'c10:cpu_free'
}

@test "a free goes with its allocation: a filtered report never frees what it did not count" {
	for f in "--phase forward" "--module encoder" "--size 1M" "--time 1,2" \
		"--steps 2,3"; do
		# shellcheck disable=SC2086
		"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys $f \
			>"$BATS_TEST_TMPDIR/r.out"
		"$TORCH_PY" - "$BATS_TEST_TMPDIR/r.out" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
a = int(re.search(r'^# event c10:cpu_alloc count=\d+ bytes=(\d+)$', t, re.M)[1])
f = int(re.search(r'^# event c10:cpu_free count=\d+ bytes=(\d+)$', t, re.M)[1])
cur = int(re.search(r'^# device pid=\d+ dev=cpu source=cpu current=(\d+) ', t, re.M)[1])
assert a - f == cur, (a, f, cur)
EOF
	done
}

@test "--size MIN,MAX keeps both bounds, 0 like any other size" {
	# exactly one size: the first allocation's, and 0 (c10's CPU allocator
	# is asked for empty tensors: ptr=0x0 size=0), as script shows them
	first=$(sed -nE 's/.*: c10:cpu_alloc: .* size=([0-9]+) .*/\1/p' \
		"$BATS_FILE_TMPDIR/all.script" | head -1)
	for size in "$first" 0; do
		n=$(grep -cE ": c10:cpu_alloc: .* size=$size " "$BATS_FILE_TMPDIR/all.script")
		[ "$n" -gt 0 ]
		run "$MT" script -i "$BATS_FILE_TMPDIR/t.mtb" --no-stack --size "$size,$size"
		echo "--size $size,$size: $status, ${#lines[@]} lines, $n wanted"
		[ "$status" -eq 0 ]
		[ "$(grep -c ': c10:cpu_alloc: ' <<<"$output")" -eq "$n" ]
		! grep ': c10:cpu_alloc: ' <<<"$output" | grep -v " size=$size "
	done
	run "$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys --size 0,0
	[ "$status" -eq 0 ]
	grep -qE '^# filter size=0,0 passed=[1-9]' <<<"$output"
}

@test "a filter naming what no event has says what the trace has; exit 2 when it has none of it" {
	local R=$BATS_FILE_TMPDIR/t.mtb o=$BATS_TEST_TMPDIR/o e=$BATS_TEST_TMPDIR/e
	# fatal ARGS... WANT: nothing on stdout, one line WANT on stderr, exit 2
	fatal() {
		local want=${*: -1} st=0
		"$MT" "${@:1:$#-1}" >"$o" 2>"$e" || st=$?
		echo "${*:1:$#-1} -> $st: $(cat "$e")"
		[ "$st" -eq 2 ]
		[ ! -s "$o" ]
		[ "$(wc -l <"$e")" -eq 1 ]
		[[ "$(cat "$e")" == "memtrace-bpf: $want"* ]]
	}
	fatal report -i "$R" --phase backwards \
		"--phase backwards: no event has it; the trace's phases: "
	grep -qE "phases: .*forward" "$e"
	grep -q optimizer "$e"
	fatal report -i "$R" --module layer9 \
		"--module layer9: no event has it; the trace's modules: "
	grep -qE "modules: .*encoder" "$e"
	! grep -q 'encoder\.' "$e"
	fatal script -i "$R" --module encoder.layers.9 \
		"--module encoder.layers.9: no event has it; the trace's modules under encoder.layers: encoder.layers.0, encoder.layers.1"
	fatal report -i "$R" --comm nope,none \
		"--comm nope,none: no event has any of them; the trace's comms: python3"
	fatal report -i "$R" --event cudart:cudaMalloc \
		"--event cudart:cudaMalloc: no event has it; the trace's kinds: c10:cpu_alloc"
	# some of a list: a warning, and the others counted
	"$MT" report --keys -i "$R" --comm python3,nope >"$o" 2>"$e"
	cat "$e"
	[ "$(cat "$e")" = "memtrace-bpf: --comm: no event has comm nope (the trace's comms: python3); the others are counted" ]
	grep -qE '^# filter comm=python3,nope passed=[1-9]' "$o"
}

@test "a window counts what was made before it and freed inside it, by name" {
	run "$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys --time 1,2
	[ "$status" -eq 0 ]
	line=$(grep '^# filter ' <<<"$output")
	[[ "$line" =~ freed_before_window=([0-9]+)\ freed_before_window_bytes=([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -gt 0 ]
	[ "${BASH_REMATCH[2]}" -gt 0 ]
	# and the same for a step range
	run "$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys --steps 2,3
	grep -qE '^# filter steps=2,3 .* freed_before_window=[1-9]' <<<"$output"
}

@test "--at is what was alive then, in report, speedscope and folded alike" {
	local d=$BATS_TEST_TMPDIR
	"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys --at 1.5 >"$d/r.out"
	bytes=$(sed -nE 's/^# at pid=[0-9]+ cpu allocated: .* bytes=([0-9]+) .*/\1/p' "$d/r.out")
	[ "$bytes" -gt 0 ]
	"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --at 1.5 --export folded \
		-o "$d/f.txt" >/dev/null
	[ "$(awk '{ s += $NF } END { print s }' "$d/f.txt")" -eq "$bytes" ]
	"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --at 1.5 --export speedscope \
		-o "$d/s.json" >/dev/null
	"$TORCH_PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert sum(sum(p["weights"]) for p in d["profiles"]) == int(sys.argv[2])
assert d["profiles"][0]["name"].endswith("live at 1.500 s"), d["profiles"][0]["name"]
' "$d/s.json" "$bytes"
	# --at peak: the bytes of the device's peak
	"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys >"$d/all.out"
	peak=$(sed -nE 's/^# device pid=[0-9]+ dev=cpu source=cpu current=[0-9]+ peak=([0-9]+)$/\1/p' "$d/all.out")
	"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --at peak --export folded \
		-o "$d/p.txt" >/dev/null
	[ "$(awk '{ s += $NF } END { print s }' "$d/p.txt")" -eq "$peak" ]
	run "$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys --at peak
	[ "$status" -eq 0 ]
	grep -qE "^# peak pid=[0-9]+ cpu allocated: .* bytes=$peak " <<<"$output"
}

@test "--at keeps the report's tables, of that moment; --keys gives the '#' lines" {
	local d=$BATS_TEST_TMPDIR
	for at in 1.5 peak; do
		"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --keys --at "$at" >"$d/k.out"
		size=$(sed -nE 's/^# (at|peak) pid=[0-9]+ cpu allocated: ([0-9.]+ [KMGT]?i?B) at .*/\2/p' "$d/k.out")
		[ -n "$size" ]
		n=$(sed -nE 's/^# (at|peak) pid=[0-9]+ cpu allocated: .* allocs=([0-9]+) .*/\2/p' "$d/k.out")
		[ -n "$n" ]
		"$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --at "$at" >"$d/h.out"
		sed -n '/^memtrace-bpf report/,$p' "$d/h.out"
		! grep -E '^# (at|peak) ' "$d/h.out"
		if [ "$at" = peak ]; then
			grep -q '^memtrace-bpf report: what was alive at each peak, ' "$d/h.out"
			grep -qE "^cpu: $size in $n allocations at the peak, [0-9.]+ s$" "$d/h.out"
			col="at peak" when="the peak"
		else
			grep -q '^memtrace-bpf report: what was alive 1.500 s after the first event, ' "$d/h.out"
			grep -qx "cpu: $size in $n allocations alive at 1.500 s" "$d/h.out"
			col=alive when="1.500 s"
		fi
		grep -qE "^module +$col +% +self$" "$d/h.out"
		grep -qE "^phase +$col +% +count$" "$d/h.out"
		grep -qx "Alive at $when, by module and line:" "$d/h.out"
	done
}

@test "--at past the end of the trace is an error naming its length" {
	run "$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --at 1e9
	[ "$status" -eq 2 ]
	[[ "$output" =~ ^memtrace-bpf:\ --at\ 1e\+09\ is\ past\ the\ end\ of\ the\ trace\ \([0-9.]+\ s\ from\ its\ first\ event\ to\ its\ last\)$ ]]
	run "$MT" report -i "$BATS_FILE_TMPDIR/t.mtb" --at 1e9 \
		--export speedscope -o "$BATS_TEST_TMPDIR/s.json"
	[ "$status" -eq 2 ]
}

@test "a bad combination is one line and exit 2" {
	local R=$BATS_FILE_TMPDIR/t.mtb
	check() {
		local want=$1
		shift
		run "$MT" "$@"
		echo "$* -> $output"
		[ "$status" -eq 2 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "memtrace-bpf: $want"* ]]
	}
	check "--time 5,2: the start is after the end" report -i "$R" --time 5,2
	check "--steps 3,1: the first step" script -i "$R" --steps 3,1
	check "--size 2M,1M: MIN is above MAX" report -i "$R" --size 2M,1M
	check "invalid time window" report -i "$R" --time 5
	check "--time given twice" report -i "$R" --time 1,2 --time 2,3
	check "-q: script prints only event lines" script -i "$R" -q
	check "--keys shapes the summary" script -i "$R" --keys
	check "--top-live shapes the summary" script -i "$R" --top-live 3
	check "--at shows what was alive" script -i "$R" --at 1
	check "--min-size: report prints no event lines" report -i "$R" \
		--min-size 1M
	check "-d/--duration is for trace, record and top" script -i "$R" -d 1
	check "--max-depth is for trace, record and top" script -i "$R" --max-depth 3
	check "--no-python is for trace, record and top" script -i "$R" --no-python
	check "--export json cannot show what was alive at one time" \
		report -i "$R" --export json --at 1 -o "$BATS_TEST_TMPDIR/j"
	check "--export memviz cannot show what was alive at the peak" \
		report -i "$R" --export memviz --at peak -o "$BATS_TEST_TMPDIR/m"
	check "--event c10:cpu_free: a free goes with its allocation" \
		report -i "$R" --event c10:cpu_free
	check "--event nope: no such event kind" script -i "$R" --event nope
	check "--phase a=b names a phase while tracing" report -i "$R" \
		--phase a=b
	check "--phase fwd: a record keeps every event" record -o \
		"$BATS_TEST_TMPDIR/x.mtb" --phase fwd -p 1
	check "--time is for trace, report and script" record -o \
		"$BATS_TEST_TMPDIR/x.mtb" --time 1,2 -p 1
	check "--module is for trace, report and script" estimate -i "$R" \
		--module encoder
}

@test "live: the filters narrow the trace's own lines and summary" {
	run "$MT" --keys --phase forward --size 1M --no-stack -- "$TORCH_PY" \
		"$DEMO_PY" --steps 2
	[ "$status" -eq 0 ]
	grep -qE '^# filter phase=forward size=1048576, passed=[1-9][0-9]* ' <<<"$output"
	n=$(grep -cE '^python3 .* c10:cpu_alloc: ' <<<"$output")
	[ "$n" -gt 0 ]
	# every allocation printed is of the phase and the size asked for
	! grep -E '^python3 .* c10:cpu_alloc: ' <<<"$output" | grep -v 'phase=forward'
	! grep -E '^python3 .* c10:cpu_alloc: ' <<<"$output" |
		grep -E ' size=[0-9]{1,6} '
}
