#!/usr/bin/env bats
# record, report, script: a binary record read back gives what the live run
# printed; cut or corrupt records give clean errors. Real PyTorch on the
# CPU (Debian's python3 and torch) and the stand-in libcudart.

load helpers
bats_require_minimum_version 1.5.0

MODEL_PY=$ROOT/tests/fixtures/incident_model.py

# the analyses and summary of an output, without what differs between two
# tracers of the same events: the run's length and rate, the record's
# notes, and times (each tracer's probe reads the clock a little apart)
analyses() {
	grep -E '^#' "$1" | grep -vE '^# (summary|record|attach|python|autograd|LOST|memtrace-bpf) ' |
		sed -E 's/ time=[0-9.]+s / time=- /; s/ at [0-9.]+ s / at - s /'
}

# event lines without their times
lines() {
	grep -vE '^#' | sed -E 's/^([^ ]+ [0-9]+\/[0-9]+ \[[0-9]+\]) [0-9.]+: /\1 -: /'
}

@test "record -> report and script print what a live run printed for the same events" {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --leak --steps 6
	# two tracers on the same process see the same events
	"$MT" record -o "$BATS_TEST_TMPDIR/t.mtb" -p "$fx_PID" \
		>"$BATS_TEST_TMPDIR/rec.out" 2>"$BATS_TEST_TMPDIR/rec.err" &
	rec=$!
	trace 1 --keys -p "$fx_PID"
	wait_for "$BATS_TEST_TMPDIR/rec.err" '^# attach .*libc10'
	sleep 0.5
	release fx
	settle fx '^spike '
	finish
	wait "$rec"
	cat "$BATS_TEST_TMPDIR/rec.err"
	grep -qE '^memtrace-bpf: recorded [0-9]+ events in [0-9.]+ s to .*t.mtb: [0-9]+ bytes, [0-9.]+ bytes per event, lost 0$' "$BATS_TEST_TMPDIR/rec.err"
	live_events=$(sed -nE 's/^# summary .* events=([0-9]+) .*/\1/p' "$TRACE")
	[ "$live_events" -gt 1000 ]

	run "$MT" report --keys -i "$BATS_TEST_TMPDIR/t.mtb"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/report.out"
	grep -q "^# record target: pid=$fx_PID comm=python3 cmdline=$TORCH_PY $MODEL_PY --leak --steps 6$" "$BATS_TEST_TMPDIR/report.out"
	grep -q '^# record tool: memtrace-bpf ' "$BATS_TEST_TMPDIR/report.out"
	grep -q "^# record python: pid=$fx_PID version=3.11$" "$BATS_TEST_TMPDIR/report.out"
	grep -q "^# record torch: pid=$fx_PID version=1.13.0$" "$BATS_TEST_TMPDIR/report.out"
	grep -q "^# record library: pid=$fx_PID path=.*libc10.so.* probes=" "$BATS_TEST_TMPDIR/report.out"
	grep -q "^# summary .* events=$live_events " "$BATS_TEST_TMPDIR/report.out"
	diff <(analyses "$TRACE") <(analyses "$BATS_TEST_TMPDIR/report.out")
	grep -q '^# leak pid=' "$BATS_TEST_TMPDIR/report.out"

	run "$MT" script -i "$BATS_TEST_TMPDIR/t.mtb"
	[ "$status" -eq 0 ]
	diff <(lines <"$TRACE") <(lines <<<"$output")
}

# record the stand-in libcudart fixture into t.mtb
record_small() {
	LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" \
		malloc 4096 malloc 8192 free 0 malloc 100000 free 2 free 1
	"$MT" record -o "$BATS_TEST_TMPDIR/t.mtb" -p "$fx_PID" \
		>"$BATS_TEST_TMPDIR/rec.out" 2>"$BATS_TEST_TMPDIR/rec.err" &
	rec=$!
	wait_for "$BATS_TEST_TMPDIR/rec.err" '^# attach .*cudart'
	release fx
	wait "$rec"
	run "$MT" script -i "$BATS_TEST_TMPDIR/t.mtb"
	[ "$status" -eq 0 ]
	[ "$(grep -c ': cudart:cudaMalloc: ' <<<"$output")" -eq 3 ]
}

@test "a truncated record reads up to its last whole block, with a warning" {
	record_small
	size=$(stat -c %s "$BATS_TEST_TMPDIR/t.mtb")
	for cut in 0 7 20 $((size / 2)) $((size - 1)); do
		head -c "$cut" "$BATS_TEST_TMPDIR/t.mtb" >"$BATS_TEST_TMPDIR/cut.mtb"
		run "$MT" report --keys -i "$BATS_TEST_TMPDIR/cut.mtb"
		echo "cut at $cut: status $status"
		echo "$output" | grep -E '^memtrace-bpf' || true
		# never a crash: a clean error (2) or what came before (0)
		[ "$status" -eq 0 ] || [ "$status" -eq 2 ]
		[ "$(grep -c '^memtrace-bpf: ' <<<"$output")" -le 1 ]
		if [ "$status" -eq 2 ]; then
			grep -qE "^memtrace-bpf: .*cut.mtb: " <<<"$output"
		else
			grep -q '^memtrace-bpf: .*cut.mtb: cut short' <<<"$output"
		fi
	done
	# an empty file is no record
	: >"$BATS_TEST_TMPDIR/empty.mtb"
	run "$MT" report --keys -i "$BATS_TEST_TMPDIR/empty.mtb"
	[ "$status" -eq 2 ]
}

@test "a bit-flipped record gives a clean error, never a crash" {
	record_small
	size=$(stat -c %s "$BATS_TEST_TMPDIR/t.mtb")
	errors=0
	for off in $(seq 0 7 $((size - 1))); do
		python3 - "$BATS_TEST_TMPDIR/t.mtb" "$BATS_TEST_TMPDIR/flip.mtb" "$off" <<-'PY'
			import sys
			data = bytearray(open(sys.argv[1], "rb").read())
			data[int(sys.argv[3])] ^= 0x10
			open(sys.argv[2], "wb").write(data)
		PY
		run "$MT" report --keys -i "$BATS_TEST_TMPDIR/flip.mtb"
		[ "$status" -eq 0 ] || [ "$status" -eq 2 ]
		if [ "$status" -eq 2 ]; then
			errors=$((errors + 1))
			[ "$(grep -c '^memtrace-bpf: ' <<<"$output")" -eq 1 ]
		fi
	done
	echo "flips that gave an error: $errors of $((size / 7 + 1))"
	# the checksums catch (nearly) every flip
	[ "$errors" -ge $((size / 7)) ]
	python3 - "$BATS_TEST_TMPDIR/t.mtb" "$BATS_TEST_TMPDIR/flip.mtb" <<-'PY'
		import sys
		data = bytearray(open(sys.argv[1], "rb").read())
		data[len(data) // 2] ^= 0x01
		open(sys.argv[2], "wb").write(data)
	PY
	run "$MT" report --keys -i "$BATS_TEST_TMPDIR/flip.mtb"
	echo "$output"
	[ "$status" -eq 2 ]
	grep -qE '^memtrace-bpf: .*flip.mtb: .*(checksum|corrupt)' <<<"$output"
}

teardown() {
	if [ -n "${SMALL:-}" ] && mountpoint -q "$SMALL"; then
		umount "$SMALL"
	fi
}

@test "a record cut short by a full disk says so where its figures are; a failed export leaves no partial file" {
	SMALL=$BATS_TEST_TMPDIR/small
	mkdir "$SMALL"
	mount -t tmpfs -o size=32k tmpfs "$SMALL"
	run --separate-stderr "$MT" record -o "$SMALL/t.mtb" -- \
		"$TORCH_PY" "$MODEL_PY" --steps 30
	echo "$stderr" | grep '^memtrace-bpf'
	[ "$status" -eq 2 ]
	grep -qx "memtrace-bpf: write $SMALL/t.mtb: No space left on device" <<<"$stderr"
	# the target ran to its end
	grep -q '^spike ' <<<"$output"

	run --separate-stderr "$MT" report -i "$SMALL/t.mtb"
	echo "$output" | head -20
	[ "$status" -eq 0 ]
	grep -qE '^memtrace-bpf report: [0-9.]+ s traced, [1-9][0-9]* events, then cut short: the rest is missing$' <<<"$output"
	grep -qE '^Unseen +the record was cut short at [0-9.]+ s \(its recorder killed, or its disk full\): what came after is missing' <<<"$output"
	[ -z "$(grep -E ' lost$|no event lost' <<<"$output")" ]
	grep -q 'cut short (its recorder killed, or its disk full)' <<<"$stderr"
	run --separate-stderr "$MT" report --keys -i "$SMALL/t.mtb"
	[ "$status" -eq 0 ]
	grep -qE '^# summary duration=[0-9.]+s events=[1-9][0-9]* events_per_sec=[0-9.]+ lost=0 cut_short=1$' <<<"$output"

	# the disk is still full: an export into it fails, and is removed
	for kind in json memviz; do
		run --separate-stderr "$MT" report -q -i "$SMALL/t.mtb" \
			--export "$kind" -o "$SMALL/t.$kind"
		echo "$kind: $status: $stderr"
		[ "$status" -eq 2 ]
		grep -qE "^memtrace-bpf: export: .*\(the partial $SMALL/t.$kind removed\)$" <<<"$stderr"
		[ ! -e "$SMALL/t.$kind" ]
	done
}

# end_block SRC DST SECONDS LOST STACKS_LOST: SRC with its end block
# rewritten to say these, checksums and all
end_block() {
	python3 - "$@" <<-'PY'
		import struct, sys, zlib
		src, dst, secs, lost, stacks = sys.argv[1:]
		data = open(src, "rb").read()
		off = 16
		while data[off] != 5:
		    off += 13 + struct.unpack_from("<I", data, off + 1)[0]
		def varint(v):
		    out = b""
		    while True:
		        b, v = v & 0x7F, v >> 7
		        out += bytes([b | (0x80 if v else 0)])
		        if not v:
		            return out
		payload = (b"\x01" + struct.pack("<d", float(secs)) +
		       varint(int(lost)) + varint(int(stacks)))
		hdr = bytes([5]) + struct.pack("<II", len(payload), zlib.crc32(payload))
		hdr += struct.pack("<I", zlib.crc32(hdr))
		open(dst, "wb").write(data[:off] + hdr + payload)
	PY
}

@test "a record whose end block cannot be (NaN or negative seconds, 2^64-1 lost) is refused with one line" {
	record_small
	end_block "$BATS_TEST_TMPDIR/t.mtb" "$BATS_TEST_TMPDIR/same.mtb" 1.5 0 0
	run "$MT" report --keys -i "$BATS_TEST_TMPDIR/same.mtb"
	[ "$status" -eq 0 ]
	grep -q '^# summary duration=1.500s events=6 ' <<<"$output"
	for bad in "nan 12 0" "-5 0 0" "3.445 18446744073709551615 0"; do
		# shellcheck disable=SC2086
		end_block "$BATS_TEST_TMPDIR/t.mtb" "$BATS_TEST_TMPDIR/bad.mtb" $bad
		for mode in report script; do
			run "$MT" "$mode" -i "$BATS_TEST_TMPDIR/bad.mtb"
			echo "$bad, $mode: $status: $output"
			[ "$status" -eq 2 ]
			[ "$(grep -c '^memtrace-bpf: ' <<<"$output")" -eq 1 ]
			grep -qE "^memtrace-bpf: .*/bad.mtb: block [0-9]+ at byte [0-9]+: end block: " <<<"$output"
			[ -z "$(grep -E '^(memtrace-bpf report|# summary)' <<<"$output")" ]
		done
	done
	run "$MT" report -i "$BATS_TEST_TMPDIR/bad.mtb"
	grep -q ': end block: 18446744073709551615 events lost, 0 + 0 without their stack, 0 without their forward in 3.445 s traced: more than one a nanosecond$' <<<"$output"
}

@test "a record whose events name no call site (the format allows it) is reported, never a crash" {
	# the fuzzer's seed writer makes such records, as a crafted file can
	mkdir "$BATS_TEST_TMPDIR/seeds"
	"$ROOT/.output/fuzz/seeds" "$BATS_TEST_TMPDIR/seeds" >/dev/null
	for f in one small larger; do
		run "$MT" report --keys -i "$BATS_TEST_TMPDIR/seeds/$f.mtb"
		echo "$f: $status"
		[ "$status" -eq 0 ]
		grep -q '^# summary ' <<<"$output"
		run "$MT" script -i "$BATS_TEST_TMPDIR/seeds/$f.mtb"
		[ "$status" -eq 0 ]
	done
}

@test "a recorder killed with SIGKILL leaves a record readable up to its last block" {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 400
	"$MT" record -o "$BATS_TEST_TMPDIR/t.mtb" -p "$fx_PID" \
		>"$BATS_TEST_TMPDIR/rec.out" 2>"$BATS_TEST_TMPDIR/rec.err" &
	rec=$!
	wait_for "$BATS_TEST_TMPDIR/rec.err" '^# attach .*libc10'
	release fx
	# some blocks on disk, the model still running
	for ((i = 0; i < 600; i++)); do
		[ "$(stat -c %s "$BATS_TEST_TMPDIR/t.mtb")" -gt 20000 ] && break
		sleep 0.05
	done
	kill -9 "$rec"
	wait "$rec" || true
	touch "$BATS_TEST_TMPDIR/fx.hold"
	run "$MT" report --keys -i "$BATS_TEST_TMPDIR/t.mtb"
	echo "$output" | grep -E '^memtrace-bpf|^# summary'
	[ "$status" -eq 0 ]
	grep -q 'cut short' <<<"$output"
	events=$(sed -nE 's/^# summary .* events=([0-9]+) .*/\1/p' <<<"$output")
	[ "$events" -gt 100 ]
}

@test "report and script need -i; record needs -o" {
	run "$MT" report
	[ "$status" -eq 2 ]
	grep -q '^memtrace-bpf: report needs -i FILE' <<<"$output"
	run "$MT" record -p 1
	[ "$status" -eq 2 ]
	grep -q '^memtrace-bpf: record needs -o FILE' <<<"$output"
	run "$MT" report --keys -i /nonexistent.mtb
	[ "$status" -eq 2 ]
	grep -q '^memtrace-bpf: cannot read /nonexistent.mtb: No such file or directory$' <<<"$output"
	echo "not a record" >"$BATS_TEST_TMPDIR/x.mtb"
	run "$MT" script -i "$BATS_TEST_TMPDIR/x.mtb"
	[ "$status" -eq 2 ]
	grep -q 'not a memtrace-bpf record' <<<"$output"
}
