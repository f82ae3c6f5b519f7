#!/usr/bin/env bats
# estimate: a record replayed through the caching allocator model. A real
# CPU PyTorch run (Debian's torch) recorded once; the c10_report fixture
# for records that carry the allocator's own totals.

load helpers

MODEL_PY=$ROOT/tests/fixtures/incident_model.py

# the record of 3 training steps of the incident model, made once
setup_file() {
	local BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 3
	"$MT" record -o "$BATS_FILE_TMPDIR/t.mtb" -p "$fx_PID" \
		>"$BATS_FILE_TMPDIR/rec.out" 2>"$BATS_FILE_TMPDIR/rec.err" &
	rec=$!
	wait_for "$BATS_FILE_TMPDIR/rec.err" '^# attach .*libc10'
	sleep 0.5
	release fx
	wait_for "$BATS_FILE_TMPDIR/fx.out" '^spike ' 120
	# the names of the last stacks are read while the model lives
	sleep 1
	touch "$BATS_FILE_TMPDIR/fx.hold"
	wait "$rec" || { cat "$BATS_TEST_TMPDIR/rec.err" >&2; return 1; }
	"$MT" script -i "$BATS_FILE_TMPDIR/t.mtb" >"$BATS_FILE_TMPDIR/script.out"
}

# peaks of the live CPU tensor bytes in script lines: raw, and each size
# rounded as the allocator rounds (512 B, at least 512)
cpu_peaks() {
	python3 -c '
import re, sys
live = {}
raw = rnd = praw = prnd = 0
for line in sys.stdin:
    m = re.search(r": c10:cpu_(alloc|free): ptr=(0x[0-9a-f]+) size=(\d+)", line)
    if not m:
        continue
    op, ptr, size = m.group(1), m.group(2), int(m.group(3))
    if ptr in live:  # a free, or a pointer whose free was not seen
        a, b = live.pop(ptr)
        raw -= a
        rnd -= b
    if op == "alloc":
        r = max(512, (size + 511) // 512 * 512)
        live[ptr] = (size, r)
        raw += size
        rnd += r
        praw = max(praw, raw)
        prnd = max(prnd, rnd)
print(praw, prnd)' <"$1"
}

# the value of key=value in the line of the estimate that matches PATTERN
est_field() {
	grep -E -- "$2" <<<"$1" | head -1 | sed -nE "s/.* $3=([^ ]+).*/\1/p"
}

@test "estimate: the peak allocated of a CPU run is its live tensor peak, rounded to 512 B" {
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^# estimate model: PyTorch 2.x native CUDACachingAllocator' <<<"$output"
	grep -q '^# estimate config: device_mem=0 expandable_segments=false ' <<<"$output"
	read -r raw rounded < <(cpu_peaks "$BATS_FILE_TMPDIR/script.out")
	peak=$(est_field "$output" '^# estimate cpu peak_allocated=' peak_allocated)
	reserved=$(est_field "$output" '^# estimate cpu peak_allocated=' peak_reserved)
	echo "script: raw peak $raw, rounded $rounded; model: $peak allocated, $reserved reserved"
	[ "$raw" -gt 33554432 ]
	[ "$peak" -ge "$raw" ]
	[ "$peak" -eq "$rounded" ]
	# every segment is a 2 MiB or 20 MiB one, or a large request in 2 MiB
	[ "$reserved" -ge "$peak" ]
	[ $((reserved % 2097152)) -eq 0 ]
	grep -qE '^# estimate cpu phase=forward allocs=[1-9]' <<<"$output"
	grep -qE '^# estimate cpu module=spike allocs=[1-9].* peak_allocated='"$peak"' ' <<<"$output"
	grep -q ' retries=0 ooms=0 ' <<<"$output"
}

@test "estimate --device-mem: the first allocation that does not fit, with its stack and module" {
	read -r _ line bytes < <(grep '^spike ' "$BATS_FILE_TMPDIR/fx.out")
	# room for everything but the spike
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb" --device-mem 40MiB
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE "^# estimate cpu oom: [0-9]+ allocations would fail; the first, event [0-9]+ at [0-9.]+ s: size=$bytes rounded=$(((bytes + 511) / 512 * 512)) .* device_mem=41943040 phase=forward module=spike " <<<"$output"
	# its stack follows, the spike's line innermost
	grep -A1 '^# estimate cpu oom: ' <<<"$output" | tail -1 |
		grep -qE "^#	.*forward \(.*incident_model.py:$line\)$"
	grep -qE '^# estimate cpu module=spike .* ooms=[1-9]' <<<"$output"
	grep -qE ' retries=[1-9][0-9]* ooms=[1-9]' <<<"$output"
	# with room enough, no oom
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb" --device-mem 1GiB
	[ "$status" -eq 0 ]
	grep -q '^# estimate cpu fits in 1.00 GiB' <<<"$output"
	! grep -q ' oom: ' <<<"$output"
}

@test "estimate --scale: the matching allocations grow, the peak by as much" {
	read -r _ line bytes < <(grep '^spike ' "$BATS_FILE_TMPDIR/fx.out")
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb"
	peak1=$(est_field "$output" '^# estimate cpu peak_allocated=' peak_allocated)
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb" --scale "incident_model.py:$line)=2"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q "^# estimate scale: incident_model.py:$line) x2$" <<<"$output"
	# one spike per step
	grep -qE '^# estimate cpu source=.* scaled=3$' <<<"$output"
	peak2=$(est_field "$output" '^# estimate cpu peak_allocated=' peak_allocated)
	r1=$(((bytes + 511) / 512 * 512))
	r2=$(((2 * bytes + 511) / 512 * 512))
	echo "peak $peak1 -> $peak2; spike $r1 -> $r2"
	[ "$peak2" -eq $((peak1 - r1 + r2)) ]
	# a pattern nothing matches changes nothing
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb" --scale 'no_such_frame=4'
	grep -qE ' scaled=0$' <<<"$output"
	[ "$(est_field "$output" '^# estimate cpu peak_allocated=' peak_allocated)" -eq "$peak1" ]
}

# record the c10_report fixture (the allocator's reports with their
# totals), given ARGS
record_c10() {
	fixture fx "$FIX/c10_report" "$@"
	# emptied here: the redirection below runs in the background, and the
	# last call's '# attach' line, read before it, released the fixture
	# before this record attached ("no such process", once under load)
	: >"$BATS_TEST_TMPDIR/rec.err"
	"$MT" record -o "$BATS_TEST_TMPDIR/c10.mtb" -p "$fx_PID" \
		>"$BATS_TEST_TMPDIR/rec.out" 2>"$BATS_TEST_TMPDIR/rec.err" &
	rec=$!
	if ! wait_for "$BATS_TEST_TMPDIR/rec.err" '^# attach .*libc10' ||
		! release fx || ! wait "$rec"; then
		echo "record -p $fx_PID failed; its err, the fixture's out and err:" >&2
		cat "$BATS_TEST_TMPDIR/rec.err" "$BATS_TEST_TMPDIR/fx.out" \
			"$BATS_TEST_TMPDIR/fx.err" >&2
		ps -o pid,stat,etime,args -p "$fx_PID" >&2 || true
		return 1
	fi
}

@test "estimate --check: reserved as the allocator reported it, and the first mismatch" {
	record_c10
	run "$MT" estimate -i "$BATS_TEST_TMPDIR/c10.mtb" --check
	echo "$output"
	[ "$status" -eq 0 ]
	n0=$(grep -cE '^op=(alloc|free) .* dev=cuda:0$' "$BATS_TEST_TMPDIR/fx.out")
	n1=$(grep -cE '^op=(alloc|free) .* dev=cuda:1$' "$BATS_TEST_TMPDIR/fx.out")
	grep -q "^# estimate cuda:0 check: ok: the model's reserved equals the recorded reserved at all $n0 events$" <<<"$output"
	grep -q "^# estimate cuda:1 check: ok: the model's reserved equals the recorded reserved at all $n1 events$" <<<"$output"
	# the peak reserved is the fixture's: a 2 MiB and a 20 MiB segment
	grep -q '^# estimate cuda:0 peak_allocated=[0-9]* peak_reserved=23068672 ' <<<"$output"

	# a device too small for the first large block: the model differs there
	first_large=$(grep -m1 -E '^op=alloc .* size=[0-9]{7,} .* dev=cuda:0$' "$BATS_TEST_TMPDIR/fx.out")
	ptr=$(field "$first_large" ptr)
	size=$(field "$first_large" size)
	reserved=$(field "$first_large" reserved)
	run "$MT" estimate -i "$BATS_TEST_TMPDIR/c10.mtb" --check --device-mem 4MiB
	echo "$output"
	[ "$status" -eq 1 ]
	grep -qE "^# estimate cuda:0 check: MISMATCH at event [0-9]+ \([0-9.]+ s, c10:alloc ptr=$ptr size=$size\): model reserved=2097152, recorded reserved=$reserved " <<<"$output"

	# a CPU record has no totals to check
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb" --check
	[ "$status" -eq 1 ]
	grep -q '^# estimate check: nothing to check: ' <<<"$output"
}

# the value of key=value in the "# device N:" header line of a blocks file
dev_field() {
	sed -nE "s/^# device $2:.* $3=([^ ]+).*/\1/p" "$1"
}

# Real allocators' block sequences, from PyTorch memory snapshots recorded
# on real GPUs (tests/fixtures/snapshots/README.md): c10_report makes the
# calls each allocator made, with the totals it had, through the real
# libc10; the model must reserve what the allocator reserved, every time.
@test "estimate --check: the model reserves what real allocators reserved, at every event" {
	local gz blocks n flags limit
	for gz in "$ROOT"/tests/fixtures/snapshots/*.blocks.gz; do
		blocks=$BATS_TEST_TMPDIR/$(basename "$gz" .gz)
		zcat "$gz" >"$blocks"
		record_c10 --blocks "$blocks"
		grep -q '^done blocks=' "$BATS_TEST_TMPDIR/fx.out"
		flags=()
		grep -q 'expandable_segments=true' "$blocks" &&
			flags+=(--expandable-segments)
		run "$MT" estimate -i "$BATS_TEST_TMPDIR/c10.mtb" --check "${flags[@]}"
		echo "$blocks: $output"
		for dev in $(sed -nE 's/^# device ([0-9]+): .*/\1/p' "$blocks"); do
			n=$(dev_field "$blocks" "$dev" events)
			limit=$(dev_field "$blocks" "$dev" limit)
			if [ -z "$limit" ]; then
				grep -q "^# estimate cuda:$dev check: ok: the model's reserved equals the recorded reserved at all $n events$" <<<"$output"
				grep -q "^# estimate cuda:$dev peak_allocated=[0-9]* peak_reserved=$(dev_field "$blocks" "$dev" peak_reserved) " <<<"$output"
				continue
			fi
			# this allocator ran out of memory: without the limit
			# the model keeps the blocks the allocator released
			grep -qE "^# estimate cuda:$dev check: MISMATCH at event [0-9]+ " <<<"$output"
			# with it, the model releases and retries as it did
			run "$MT" estimate -i "$BATS_TEST_TMPDIR/c10.mtb" --check "${flags[@]}" --device-mem "$limit"
			echo "$output"
			grep -q "^# estimate cuda:$dev check: ok: the model's reserved equals the recorded reserved at all $n events$" <<<"$output"
			grep -qE "^# estimate cuda:$dev peak_allocated=.* segment_frees=[1-9][0-9]* retries=[1-9]" <<<"$output"
		done
	done
}

@test "estimate: usage errors" {
	run "$MT" estimate
	[ "$status" -eq 2 ]
	grep -q '^memtrace-bpf: estimate needs -i FILE' <<<"$output"
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb" --scale nofactor
	[ "$status" -eq 2 ]
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb" --roundup-power2-divisions 3
	[ "$status" -eq 2 ]
	run "$MT" estimate -i "$BATS_FILE_TMPDIR/t.mtb" --gc-threshold 0.5
	[ "$status" -eq 2 ]
	grep -q 'give both' <<<"$output"
	run "$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" --expandable-segments
	[ "$status" -eq 2 ]
	grep -q 'is for estimate, not for report' <<<"$output"
}
