#!/usr/bin/env bash
# Benchmark the exports: the time `report -i --export KIND` takes per
# million events (goal: under 2 s) and the file size per million events,
# on a record of the W2 training loop. Replaces the "## Exports" section
# of bench/RESULTS.md; make bench runs it after bench/run.sh. As root,
# after `make memtrace-bpf`.
#
# Knobs: ITERS (W2 iterations recorded, 700: about 1.4 M events), REPS
# (3), OUT (bench/RESULTS.md).
set -euo pipefail
. "$(dirname "$0")/section.sh"

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=exports
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
ITERS=${ITERS:-700}
REPS=${REPS:-3}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
KINDS=(memviz perfetto speedscope folded json svg)

need_root "uprobes need it"
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"

make_work exports || die "cannot make a work directory"

# the record: W2, held at its end until the recorder stopped
# shellcheck disable=SC2086
MT_GO=$WORK/go MT_HOLD=$WORK/hold LD_LIBRARY_PATH=$BLAS_DIR \
	$PY bench/workload_train.py $W2_SHAPE --iters "$ITERS" >"$WORK/w.out" 2>&1 &
wpid=$!
until grep -q '^READY' "$WORK/w.out"; do sleep 0.1; done
"$MT" record -o "$WORK/t.mtb" -p "$wpid" 2>"$WORK/rec.err" &
rpid=$!
until grep -q '^# attach .*libc10' "$WORK/rec.err"; do
	kill -0 $rpid || die "record: $(cat "$WORK/rec.err")"
	sleep 0.1
done
sleep 0.5
touch "$WORK/go"
until grep -q '^RESULT' "$WORK/w.out"; do sleep 0.2; done
kill -INT $rpid
wait $rpid || true
touch "$WORK/hold"
wait $wpid || true
events=$(sed -nE 's/^memtrace-bpf: recorded ([0-9]+) events.*/\1/p' "$WORK/rec.err")
[ -n "$events" ] || die "no record: $(cat "$WORK/rec.err")"

secs() { /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1; }
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

rows=$WORK/rows
: >"$rows"
base=$(for r in $(seq "$REPS"); do secs "$MT" report -i "$WORK/t.mtb"; done | median)
for k in "${KINDS[@]}"; do
	t=$(for r in $(seq "$REPS"); do
		secs "$MT" report -i "$WORK/t.mtb" --export "$k" -o "$WORK/x.$k"
	done | median)
	size=$(stat -c %s "$WORK/x.$k")
	awk -v k="$k" -v t="$t" -v b="$base" -v s="$size" -v e="$events" 'BEGIN {
		m = e / 1e6
		printf "| %s | %.2f | %.2f | %.2f | %s | %.1f |\n", k, t, t / m,
			(t - b) / m, s, s / m / 1048576
	}' >>"$rows"
	echo "bench/exports: $k: $t s, $size bytes" >&2
done

section=$(mktemp)
{
	echo "## Exports"
	echo
	echo "Measured $(date -u) by \`bench/exports.sh\` on the machine above: a record"
	echo "of W2 ($ITERS iterations, $events events, Python stacks on), exported with"
	echo "\`memtrace-bpf report -i t.mtb --export KIND -o FILE\`, wall time, median of"
	echo "$REPS. \`report\` alone (reading and analysing, no export) took $base s."
	echo "Goal: under 2 s per million events."
	echo
	echo "| export | s | s per M events | s per M events above report | file bytes | MiB per M events |"
	echo "|---|---|---|---|---|---|"
	cat "$rows"
} >"$section"
put_section "$OUT" "Exports" "$section"
rm -f "$section"
echo "bench/exports: wrote the Exports section of $OUT" >&2
