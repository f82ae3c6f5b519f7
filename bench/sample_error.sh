#!/usr/bin/env bash
# --sample-bytes' error against full attribution on W1 and W2 (bench/run.sh
# defines them): each workload runs once per repetition with two tracers
# attached to it at once, memtrace-bpf -q --keys and the same with
# --sample-bytes R, so that both see the very same allocations. Per module,
# the bytes allocated (its `# module` lines added over phases) of the
# sampled trace against the full one; the totals must agree exactly.
# Writes the section "Sampling error (W1, W2)" of bench/RESULTS.md. Run as
# root, a few minutes with the defaults.
#
# Environment knobs: REPS (3), SAMPLE (512K), W1_ITERS (12), W2_ITERS (400),
# OUT (bench/RESULTS.md), MT (another memtrace-bpf binary), KEEP=1 keeps
# the work directory.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=sample_error
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
REPS=${REPS:-3}
SAMPLE=${SAMPLE:-512K}
W1_ITERS=${W1_ITERS:-12}
W2_ITERS=${W2_ITERS:-400}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
declare -A WARGS=(
	[W1]="$W1_SHAPE --iters $W1_ITERS"
	[W2]="$W2_SHAPE --iters $W2_ITERS"
)

need_root "uprobes need it"
whole_numbers REPS
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"

make_work sample || die "cannot make a work directory"
T_START=$(date +%s)

take_binary || die "cannot copy $MT"

# run_one W REP: W once, traced in full and sampled at once
run_one() {
	local w=$1 r=$2 d=$WORK/$1-$2 wl pid full smp
	mkdir -p "$d"
	rm -f "$WORK/go" "$WORK/hold"
	# shellcheck disable=SC2086
	MT_GO=$WORK/go MT_HOLD=$WORK/hold LD_LIBRARY_PATH=$BLAS_LD \
		$PY "$ROOT/bench/workload_train.py" ${WARGS[$w]} >"$d/wl.out" 2>"$d/wl.err" &
	wl=$!
	KIDS+=("$wl")
	wait_for "$d/wl.out" '^READY ' 120 "$wl" || die "workload did not start"
	pid=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")
	"$MT" -q -p "$pid" --keys >"$d/full.keys" 2>"$d/full.err" &
	full=$!
	"$MT" -q -p "$pid" --keys --sample-bytes "$SAMPLE" >"$d/sampled.keys" 2>"$d/sampled.err" &
	smp=$!
	KIDS+=("$full" "$smp")
	wait_for "$d/full.err" "^# attach pid=$pid lib=.*libc10" 60 "$full" || die "full trace did not attach"
	wait_for "$d/sampled.err" "^# attach pid=$pid lib=.*libc10" 60 "$smp" || die "sampled trace did not attach"
	sleep 0.5
	touch "$WORK/go"
	wait_for "$d/wl.out" '^RESULT ' 900 "$wl" || die "$w: workload failed: $(cat "$d/wl.err")"
	stop_tracer "$full" "memtrace-bpf -q"
	stop_tracer "$smp" "memtrace-bpf --sample-bytes"
	wait "$full" || die "$w: full trace failed: $(cat "$d/full.err")"
	wait "$smp" || die "$w: sampled trace failed: $(cat "$d/sampled.err")"
	touch "$WORK/hold"
	wait "$wl" || die "$w: workload exited with $?"
	printf '%s\t%s\t%s\t%s\n' "$w" "$r" "$d/full.keys" "$d/sampled.keys" >>"$WORK/runs.tsv"
	echo "sample_error: $w rep $r done ($(($(date +%s) - T_START))s)"
}

: >"$WORK/runs.tsv"
for ((r = 1; r <= REPS; r++)); do
	for w in W1 W2; do
		run_one "$w" "$r"
	done
done
{
	echo "date=$(date)"
	echo "cores=$(nproc)"
	echo "tool=$TOOL_DESC"
	echo "reps=$REPS"
	echo "sample=$SAMPLE"
	echo "w1_args=${WARGS[W1]}"
	echo "w2_args=${WARGS[W2]}"
	echo "secs=$(($(date +%s) - T_START))"
} >"$WORK/meta.txt"
$PY "$ROOT/bench/sample_error.py" "$WORK/meta.txt" "$WORK/runs.tsv" >"$WORK/section.md"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
put_section "$OUT" "Sampling error (W1, W2)" "$WORK/section.md"
cat "$WORK/section.md"
