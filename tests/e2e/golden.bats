#!/usr/bin/env bats
# Golden outputs (issue 36): every mode that reads a record, run on one
# committed record of the demo, prints byte for byte what is kept under
# tests/golden/. The refactors of issue 36 promise that behaviour does not
# change; the other tests check what an output means, this one that not
# one byte of it moved.
#
# A change to an expected file must be deliberate: a commit that means to
# change an output writes them anew and says why in its message. To write
# them from the binary as built, then read the change with git diff:
#
#   make memtrace-bpf && MT_GOLDEN_UPDATE=1 bats tests/e2e/golden.bats
#
# The record, tests/golden/demo.mtb, is the demo for one step, made once
# as root from a copy of the script in /tmp/demo, so that no checkout's
# path is in it:
#
#   mkdir -p /tmp/demo && cp scripts/demo_train.py /tmp/demo/
#   ./memtrace-bpf record -o tests/golden/demo.mtb -- \
#           /usr/bin/python3 /tmp/demo/demo_train.py --steps 1
#
# A new record changes every expected file: make one only when the old
# one can no longer be read.

load helpers

GOLDEN=$ROOT/tests/golden
REC=$GOLDEN/demo.mtb

# the report's width and colour come from the terminal or the
# environment: fixed here, as a terminal would otherwise decide them
export COLUMNS=120 NO_COLOR=1 LC_ALL=C

# check NAME FILE: FILE is byte for byte tests/golden/NAME, or becomes it
# under MT_GOLDEN_UPDATE=1
check() {
	if [ -n "${MT_GOLDEN_UPDATE:-}" ]; then
		cat "$2" >"$GOLDEN/$1"
		return 0
	fi
	if ! cmp -s "$GOLDEN/$1" "$2"; then
		echo "tests/golden/$1 differs from this binary's output" \
			"(if that is meant: MT_GOLDEN_UPDATE=1 bats $BATS_TEST_FILENAME):"
		diff -u "$GOLDEN/$1" "$2" | head -60
		return 1
	fi
}

# run_mt ARGS...: memtrace-bpf ARGS into $OUT; it must exit 0 and say
# nothing on stderr
run_mt() {
	OUT=$BATS_TEST_TMPDIR/out
	local err=$BATS_TEST_TMPDIR/err st=0
	"$MT" "$@" >"$OUT" 2>"$err" || st=$?
	if [ "$st" -ne 0 ] || [ -s "$err" ]; then
		echo "memtrace-bpf $*: exit $st, stderr:"
		cat "$err"
		return 1
	fi
}

# golden NAME ARGS...: the stdout of memtrace-bpf ARGS is tests/golden/NAME
golden() {
	local name=$1
	shift
	run_mt "$@"
	check "$name" "$OUT"
}

# export_golden NAME REPORT KIND ARGS...: report --export KIND (with
# ARGS) writes tests/golden/NAME, and prints the report kept as
# tests/golden/REPORT. perfetto and speedscope name the binary's version
# as their exporter, which no option sets: it is replaced by VERSION, so
# that a new version changes no file here.
export_golden() {
	local name=$1 report=$2 kind=$3 file=$BATS_TEST_TMPDIR/export
	shift 3
	run_mt report -i "$REC" --export "$kind" -o "$file" "$@"
	sed -i 's/"exporter":"memtrace-bpf [^"]*"/"exporter":"memtrace-bpf VERSION"/' "$file"
	check "$name" "$file"
	[ -n "${MT_GOLDEN_UPDATE:-}" ] || check "$report" "$OUT"
}

@test "golden: report" {
	golden report.txt report -i "$REC"
}

@test "golden: report --keys" {
	golden report-keys.txt report -i "$REC" --keys
}

# time boundaries before the first step, then a step's: the headline
# counts those of the kind judged, as '# leaks' does (it said "5 seen, 4
# needed" and not judged)
@test "golden: report --leak-age 0.3s" {
	golden report-leak-age.txt report -i "$REC" --leak-age 0.3s
	grep -q '^Leaks      not judged: 1 boundary seen, 4 needed ' "$OUT"
}

@test "golden: report --at peak" {
	golden report-at-peak.txt report -i "$REC" --at peak
}

@test "golden: report --at 1 --keys" {
	golden report-at-1-keys.txt report -i "$REC" --at 1 --keys
}

@test "golden: report --keys with filters" {
	golden report-filtered-keys.txt report -i "$REC" --keys \
		--phase backward --size 1M
}

@test "golden: script" {
	golden script.txt script -i "$REC"
}

@test "golden: script with filters" {
	golden script-filtered.txt script -i "$REC" --no-stack \
		--time ,0.7 --event c10:cpu_alloc
}

@test "golden: estimate" {
	golden estimate.txt estimate -i "$REC"
}

@test "golden: estimate --device-mem (allocations that would fail)" {
	golden estimate-device-mem.txt estimate -i "$REC" --device-mem 200MiB
}

@test "golden: --export memviz" {
	export_golden export-memviz.pickle report.txt memviz
}

@test "golden: --export perfetto" {
	export_golden export-perfetto.json report.txt perfetto
}

@test "golden: --export speedscope" {
	export_golden export-speedscope.json report.txt speedscope
}

@test "golden: --export speedscope --at peak" {
	export_golden export-speedscope-at-peak.json report-at-peak.txt \
		speedscope --at peak
}

@test "golden: --export folded" {
	export_golden export-folded.txt report.txt folded
}

@test "golden: --export folded --at peak --folded-prefix" {
	export_golden export-folded-at-peak-prefix.txt report-at-peak.txt \
		folded --at peak --folded-prefix
}

@test "golden: --export json" {
	export_golden export-json.jsonl report.txt json
}

@test "golden: --export svg" {
	export_golden export-svg.svg report.txt svg
}
