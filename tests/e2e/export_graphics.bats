#!/usr/bin/env bats
# --export folded and svg: folded stacks that flamegraph.pl turns into a
# flame graph, and the memory plot, rendered to PNG by rsvg-convert. Real
# PyTorch on the CPU (Debian's python3 and torch). flamegraph.pl: on PATH,
# or the copy Debian's libdevel-nytprof-perl ships. (stackvis reads the
# older comma-separated stacks, so it is no judge of these.)

load helpers

MODEL_PY=$ROOT/tests/fixtures/incident_model.py

# flamegraph.pl FOLDED > SVG, bytes as its count
flamegraph() {
	[ -r "$FLAMEGRAPH" ] || {
		echo "no flamegraph.pl: apt-get install libdevel-nytprof-perl" >&2
		return 1
	}
	perl "$FLAMEGRAPH" --countname bytes --title memory "$1"
}

# run incident_model.py ARGS... under memtrace-bpf MT_ARGS... -p PID (its
# attach lines on stderr: -q, or record); sets TRACE, MODEL
run_model() {
	local -a args=("$@")
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 3
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 "${args[@]}" --keys -p "$fx_PID"
	release fx
	settle fx '^spike '
	finish
	cat "$BATS_TEST_TMPDIR/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
}

# the width and height of a PNG, from its IHDR chunk
png_size() {
	python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read(24)
assert d[:8] == b"\x89PNG\r\n\x1a\n" and d[12:16] == b"IHDR", "not a PNG"
print(*struct.unpack(">II", d[16:24]))' "$1"
}

@test "folded: stacks add up to the bytes allocated and flamegraph.pl draws them" {
	F=$BATS_TEST_TMPDIR/x.folded
	run_model -q --export folded -o "$F"
	head -5 "$F"
	read -r _ _ _ count bytes < <(grep '^# event c10:cpu_alloc ' "$TRACE")
	bytes=${bytes#bytes=}
	[ "$bytes" -gt 0 ]
	# every line: frames, a space, an integer; the sum is the summary's
	! grep -vE '^[^ ;][^;]*(;[^;]+)* [0-9]+$' "$F"
	[ "$(awk '{ s += $NF } END { print s }' "$F")" -eq "$bytes" ]
	# outermost first, the allocating call innermost
	! grep -v '^<module> (' "$F"
	! grep -vE ';c10:cpu_alloc [0-9]+$' "$F"
	read -r _ line spike < <(grep '^spike ' "$MODEL")
	grep -qF "Spike.forward ($MODEL_PY:$line);c10:cpu_alloc " "$F"
	# merged: no stack twice
	[ -z "$(sed -E 's/ [0-9]+$//' "$F" | sort | uniq -d)" ]

	flamegraph "$F" >"$BATS_TEST_TMPDIR/flame.svg"
	grep -q '<svg' "$BATS_TEST_TMPDIR/flame.svg"
	# its root is the total; the frames are split at the ';'
	commas=$(python3 -c 'import sys; print(f"{int(sys.argv[1]):,}")' "$bytes")
	grep -qF "<title>all ($commas bytes, 100%)</title>" "$BATS_TEST_TMPDIR/flame.svg"
	grep -qF "<title>Spike.forward ($MODEL_PY:$line) (" "$BATS_TEST_TMPDIR/flame.svg"
	# (it writes <module> as (module))
	grep -qF '<title>(module) (' "$BATS_TEST_TMPDIR/flame.svg"
	rsvg-convert "$BATS_TEST_TMPDIR/flame.svg" -o "$BATS_TEST_TMPDIR/flame.png"
	[ -s "$BATS_TEST_TMPDIR/flame.png" ]
}

@test "folded --folded-prefix: module and phase are the outermost frames" {
	F=$BATS_TEST_TMPDIR/x.folded
	run_model -q --export folded --folded-prefix -o "$F"
	read -r _ _ _ count bytes < <(grep '^# event c10:cpu_alloc ' "$TRACE")
	[ "$(awk '{ s += $NF } END { print s }' "$F")" -eq "${bytes#bytes=}" ]
	# module; phase; then the Python stack from its outermost frame
	! grep -vE '^[^;]+;(forward|backward|optimizer|other|\[no phase\]);<module> \(' "$F"
	read -r _ line spike < <(grep '^spike ' "$MODEL")
	grep '^spike;forward;<module> (' "$F" |
		grep -qF "Spike.forward ($MODEL_PY:$line);c10:cpu_alloc "
	[ "$(grep '^spike;forward;' "$F" | awk '{ s += $NF } END { print s }')" -ge "$spike" ]
	grep -qE '^(stem|wide|head);backward;' "$F"
	flamegraph "$F" >"$BATS_TEST_TMPDIR/flame.svg"
	grep -qE '<title>spike \([0-9,]+ bytes, [0-9.]+%\)</title>' "$BATS_TEST_TMPDIR/flame.svg"
}

@test "svg from a record: renders to a PNG of its size, the peak named with its owner" {
	run_model record -o "$BATS_TEST_TMPDIR/t.mtb"
	S=$BATS_TEST_TMPDIR/x.svg
	run "$MT" report --keys -i "$BATS_TEST_TMPDIR/t.mtb" --export svg -o "$S"
	echo "$output"
	[ "$status" -eq 0 ]
	read -r _ line spike < <(grep '^spike ' "$MODEL")

	rsvg-convert "$S" -o "$BATS_TEST_TMPDIR/x.png"
	# one plot: the process's CPU tensors
	[ "$(png_size "$BATS_TEST_TMPDIR/x.png")" = "1000 378" ]
	grep -q '<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="378"' "$S"
	grep -q "pid $fx_PID (python3) cpu: allocated peak " "$S"
	# the peak is in the spike: its module, phase and frame (the line after
	# the spike's own: its sum, made while the spike lives, tops it)
	grep -o "<tspan class=\"pbig\">.*" "$S"
	grep -qE '<tspan class="pbig">peak [0-9.]+ MiB at [0-9.]+ s</tspan>' "$S"
	grep -q '>spike, forward</tspan>' "$S"
	grep -qF ">Spike.forward ($MODEL_PY:$((line + 1)))</tspan>" "$S"
	# phase bands, steps, axes
	grep -q '>step 2</text>' "$S"
	grep -q 'class="bwd"' "$S"
	grep -qE '>[0-9.]+ MiB</text>' "$S"
	grep -q '>seconds since the first event</text>' "$S"
}

@test "svg: a phase's band ends at its last event, not across a sleep to the next step" {
	"$MT" record -q -o "$BATS_TEST_TMPDIR/t.mtb" -- "$TORCH_PY" "$MODEL_PY" \
		--steps 3 --sleep 1 >/dev/null
	S=$BATS_TEST_TMPDIR/x.svg
	run "$MT" report --keys -i "$BATS_TEST_TMPDIR/t.mtb" --export svg -o "$S"
	[ "$status" -eq 0 ]
	python3 - "$S" <<'PY'
import re, sys
svg = open(sys.argv[1]).read()
# the plot's forward markers (the legend's is shorter) and phase bands
fwd = sorted(float(x) for x, y1, y2 in re.findall(
    r'<line x1="([0-9.]+)" y1="([0-9.]+)" x2="[0-9.]+" y2="([0-9.]+)" '
    r'class="fwd"/>', svg) if float(y2) - float(y1) > 100)
bands = [(float(x), float(x) + float(w), c) for x, w, c in re.findall(
    r'<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="220" '
    r'fill="(#[0-9a-f]+)"/>', svg) if c != "#fff"]
print("forward markers", fwd)
print("bands", bands)
assert len(fwd) == 3, fwd
# each step's forward band begins at its marker
for f in fwd:
    assert any(c == "#dbeafe" and abs(x0 - f) <= 1 for x0, x1, c in bands), f
# between two steps, a second of sleep: bands cover under half of it
for a, b in zip(fwd, fwd[1:]):
    covered = sum(max(0, min(x1, b) - max(x0, a)) for x0, x1, c in bands)
    print("between %.1f and %.1f: %.1f px of bands" % (a, b, covered))
    assert covered < (b - a) / 2, (a, b, covered)
PY
}

@test "svg live: the plot's peak is the summary's, and it renders at its size" {
	S=$BATS_TEST_TMPDIR/x.svg
	run_model -q --export svg -o "$S"
	peak=$(sed -nE 's/^# device pid=[0-9]+ dev=cpu source=cpu current=[0-9]+ peak=([0-9]+)$/\1/p' "$TRACE")
	[ -n "$peak" ]
	# the plot's peak is the summary's
	python3 -c '
import sys
def fmt(b):
    v, u = float(b), 0
    while v >= 1024 and u < 5:
        v /= 1024; u += 1
    if b < 1024:
        return "%d B" % b
    # three significant digits at most, as mt_format_bytes
    digits = 0 if v >= 99.95 else 1 if v >= 9.995 else 2
    return "%.*f %s" % (digits, v, ["B", "KiB", "MiB", "GiB", "TiB", "PiB"][u])
print(fmt(int(sys.argv[1])))' "$peak" >"$BATS_TEST_TMPDIR/peak"
	grep -qF "allocated peak $(cat "$BATS_TEST_TMPDIR/peak")," "$S"
	rsvg-convert "$S" -o "$BATS_TEST_TMPDIR/x.png"
	[ "$(png_size "$BATS_TEST_TMPDIR/x.png")" = "1000 378" ]
}
