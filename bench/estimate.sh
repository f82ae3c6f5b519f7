#!/usr/bin/env bash
# Replay speed of `memtrace-bpf estimate`: record a long CPU training run
# of tests/fixtures/incident_model.py (Debian's python3 and torch), then
# time `estimate -i` on it (best of RUNS) and print events per second,
# next to `script -i >/dev/null` (the record reader alone) for scale;
# and how many events of real allocators' block sequences
# (tests/fixtures/snapshots) the model's reserved matches.
#
# Replaces the "## Estimate" section of bench/RESULTS.md (OUT); make bench
# runs it after bench/run.sh. Run as root after `make memtrace-bpf fixtures`.
# Knobs: STEPS (1500), RUNS (5), MT (another memtrace-bpf), OUT, KEEP=1
# keeps the work directory.
set -euo pipefail
. "$(dirname "$0")/section.sh"

cd "$(dirname "$0")/.."
ROOT=$PWD
MT=${MT:-$ROOT/memtrace-bpf}
STEPS=${STEPS:-1500}
RUNS=${RUNS:-5}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
WORK=$(mktemp -d /tmp/mt-estimate-bench.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT

# seconds of the fastest of RUNS runs of a command (output discarded)
best_of() {
	local best=0 t0 t1 ns
	for ((i = 0; i < RUNS; i++)); do
		t0=$(date +%s%N)
		"$@" >/dev/null
		t1=$(date +%s%N)
		ns=$((t1 - t0))
		if [ "$best" -eq 0 ] || [ "$ns" -lt "$best" ]; then
			best=$ns
		fi
	done
	awk -v n="$best" 'BEGIN { printf "%.4f", n / 1e9 }'
}

PYTHONPATH=$ROOT/tests/fixtures "$MT" record -o "$WORK/t.mtb" -- \
	/usr/bin/python3 "$ROOT/tests/fixtures/incident_model.py" --steps "$STEPS" \
	>"$WORK/rec.out" 2>"$WORK/rec.err"
events=$(sed -nE 's/^memtrace-bpf: recorded ([0-9]+) events .*/\1/p' "$WORK/rec.err")
[ -n "$events" ] || { cat "$WORK/rec.err" >&2; exit 1; }
allocs=$("$MT" estimate -i "$WORK/t.mtb" | sed -nE 's/^# estimate cpu source=.* allocs=([0-9]+) frees=([0-9]+) .*/\1 \2/p')

# reserved as real allocators reported it (tests/fixtures/snapshots):
# how many events the model matches; the limit of an allocator that ran
# out of memory is given as --device-mem
exact=0 total=0
for gz in "$ROOT"/tests/fixtures/snapshots/*.blocks.gz; do
	blocks=$WORK/$(basename "$gz" .gz)
	zcat "$gz" >"$blocks"
	"$MT" record -o "$WORK/s.mtb" -- "$ROOT/.output/fixtures/c10_report" \
		--blocks "$blocks" >/dev/null 2>&1
	flags=()
	grep -q 'expandable_segments=true' "$blocks" && flags+=(--expandable-segments)
	limit=$(sed -nE 's/^# device [0-9]+:.* limit=([0-9]+).*/\1/p' "$blocks" | head -1)
	[ -n "$limit" ] && flags+=(--device-mem "$limit")
	while read -r n ok; do
		total=$((total + n))
		[ "$ok" = ok ] && exact=$((exact + n))
	done < <("$MT" estimate -i "$WORK/s.mtb" --check "${flags[@]}" |
		sed -nE 's/^# estimate cuda:[0-9]+ check: ok: .* at all ([0-9]+) events$/\1 ok/p;
			s/^# estimate cuda:[0-9]+ check: MISMATCH .*; [0-9]+ of ([0-9]+) events differ$/\1 bad/p')
done

t_est=$(best_of "$MT" estimate -i "$WORK/t.mtb")
t_scr=$(best_of "$MT" script -i "$WORK/t.mtb")
section=$WORK/section
{
	echo "## Estimate"
	echo
	echo "Measured $(date -u) by \`bench/estimate.sh\` on the machine above: a record of"
	echo "\`tests/fixtures/incident_model.py --steps $STEPS\` ($events events, $allocs"
	echo "allocations/frees, $(stat -c %s "$WORK/t.mtb") bytes), fastest of $RUNS runs, wall time"
	echo "including the process start and reading the record. Goal: 10 M events/s."
	echo
	echo "| command | s | M events/s |"
	echo "|---|---|---|"
	awk -v e="$events" -v t="$t_est" 'BEGIN { printf "| estimate -i | %.3f | %.2f |\n", t, (t > 0 ? e / t / 1e6 : 0) }'
	awk -v e="$events" -v t="$t_scr" 'BEGIN { printf "| script -i >/dev/null (the reader and formatting, for scale) | %.3f | %.2f |\n", t, (t > 0 ? e / t / 1e6 : 0) }'
	echo
	echo "Exactness: on the block sequences real allocators reported on GPUs"
	echo "(\`tests/fixtures/snapshots/\`, replayed through the real libc10 and"
	echo "recorded), the model's reserved equals the allocator's at $exact of $total events."
	echo "Prediction error of a CPU trace against PyTorch's own peaks (goal: within"
	echo "5 %): on the CUDA stand-in, the section \"Estimate from a CPU trace against"
	echo "PyTorch on CUDA (stand-in)\" (\`bench/estimate_cuda.sh\`); on a real GPU not"
	echo "measured, no GPU run exists yet (\`docs/gpu-validation.md\`)."
} >"$section"
cat "$section"
put_section "$OUT" "Estimate" "$section"
