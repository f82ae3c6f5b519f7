#!/usr/bin/env bash
# The flight recorder's overhead on W1 and W2 beside -q's, in one
# interleaved run (issue 26, item 3); writes the section "Flight recorder:
# overhead on W1 and W2" of bench/RESULTS.md. Run as root (make bench runs
# it), about 15 minutes with the defaults.
#
# Modes, for W1 then W2 in each repetition, order rotated by one place a
# repetition:
#   bare   no tracer
#   mtq    memtrace-bpf -q (every event's Python stack, full attribution)
#   fl     memtrace-bpf record --flight 10m -o DIR --flight-at-end: the
#          flight recorder as it would be left on (stacks sampled by bytes,
#          --sample-bytes 512K, its default); the window outlasts the loop,
#          and the dump at the end (after the loop, not timed) says how
#          many events it held
#   fls    memtrace-bpf record --flight 1s -o DIR: the same with a window
#          full from the first second, events leaving it (and the
#          allocations older than it copied aside) all the loop long
# The loop runs on the last CPU, the tracers on the others (taskset).
# Overhead = loop s / the same repetition's bare loop s - 1; a ratio
# (flight / -q) is taken in each repetition from its own overheads; both
# are reported as the median with their min-max over the repetitions.
# The tracer's CPU seconds (user + system, attach to SIGINT) and its
# high-water RSS are read from /proc before it is stopped.
#
# Environment knobs: REPS (5), W1_ITERS (12), W2_ITERS (400), MODES
# ("bare mtq fl fls"), OUT (bench/RESULTS.md), MT (another memtrace-bpf
# binary) and MT_DESC (what to call it), KEEP=1 keeps the work directory.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=flight
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
REPS=${REPS:-5}
W1_ITERS=${W1_ITERS:-12}
W2_ITERS=${W2_ITERS:-400}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
read -r -a MODES <<<"${MODES:-bare mtq fl fls}"
declare -A WARGS=(
	[W1]="$W1_SHAPE --iters $W1_ITERS"
	[W2]="$W2_SHAPE --iters $W2_ITERS"
)

need_root "uprobes need it"
whole_numbers REPS W1_ITERS W2_ITERS
[ "${MODES[0]:-}" = bare ] || die "MODES=${MODES[*]}: bare first (the overheads are against it)"
for m in "${MODES[@]}"; do
	case $m in bare | mtq | fl | fls) ;; *) die "MODES: $m: one of bare mtq fl fls" ;; esac
done
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
[ -r "$LIB" ] || die "$LIB missing (python3-torch)"
pin_cpus

make_work flight || die "cannot make a work directory"
take_binary || die "cannot copy $MT"
RUNS=$WORK/runs.tsv
printf 'workload\tmode\trep\tloop_s\tevents\tlost\ttool_cpu_s\ttool_hwm_kb\tload1\n' >"$RUNS"
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# cpu_s PID: its user + system CPU seconds so far
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}

# run_one W MODE REP: one run of workload W; a line of $RUNS
run_one() {
	local w=$1 m=$2 r=$3 d=$WORK/$1-$2-$3 wl pid tp="" events=NA lost=NA
	local s loop tcpu=NA hwm=NA load dump
	mkdir -p "$d/dumps"
	rm -f "$WORK/go" "$WORK/hold"
	load=$(cut -d' ' -f1 /proc/loadavg)
	# shellcheck disable=SC2086
	MT_GO=$WORK/go MT_HOLD=$WORK/hold LD_LIBRARY_PATH=$BLAS_LD \
		"${PIN_WL[@]}" $PY "$ROOT/bench/workload_train.py" ${WARGS[$w]} >"$d/wl.out" 2>"$d/wl.err" &
	wl=$!
	KIDS+=("$wl")
	wait_for "$d/wl.out" '^READY ' 120 "$wl" || die "workload did not start"
	pid=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")
	case $m in
	bare) ;;
	mtq)
		"${PIN_TOOL[@]}" "$MT" --keys -q -p "$pid" >"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		;;
	fl)
		"${PIN_TOOL[@]}" "$MT" record --flight 10m -o "$d/dumps" --flight-at-end \
			-p "$pid" >"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		;;
	fls)
		"${PIN_TOOL[@]}" "$MT" record --flight 1s -o "$d/dumps" \
			-p "$pid" >"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		;;
	esac
	if [ -n "$tp" ]; then
		KIDS+=("$tp")
		wait_for "$d/mt.err" "^# attach pid=$pid lib=.*libc10" 60 "$tp" ||
			die "$m: memtrace-bpf did not attach"
	fi
	check_probes "$w $m" "$pid" "$([ "$m" = bare ] && echo no || echo yes)"
	sleep 0.5
	touch "$WORK/go"
	wait_for "$d/wl.out" '^RESULT ' 900 "$wl" || die "$w $m: workload failed: $(cat "$d/wl.err")"
	if [ -n "$tp" ]; then
		tcpu=$(cpu_s "$tp")
		hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$tp/status")
		stop_tracer "$tp" "$m"
		wait "$tp" || die "$w $m: memtrace-bpf failed: $(tail -5 "$d/mt.err")"
	fi
	touch "$WORK/hold"
	wait "$wl" || die "$w $m: workload exited with $?"
	loop=$(sed -n 's/^RESULT .* loop_s=\([0-9.]*\).*/\1/p' "$d/wl.out")
	case $m in
	mtq)
		s=$(grep '^# summary ' "$d/mt.out") || die "$w $m: no summary line"
		events=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$s")
		lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$s")
		;;
	fl)
		# the window outlasted the loop: its dump at the end holds every
		# event of the run (a few before go and after the loop too)
		dump=$(ls "$d"/dumps/flight-*-end.mtb) || die "$w $m: no dump at the end: $(tail -5 "$d/mt.err")"
		s=$("$MT" report --keys -i "$dump" | grep '^# summary ') ||
			die "$w $m: no summary line in the dump's report"
		events=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$s")
		lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$s")
		;;
	fls)
		# lost events are said on stderr as they happen
		lost=$(awk '/^# LOST [0-9]+ events/ { n += $3 } END { print n + 0 }' "$d/mt.err" "$d/mt.out")
		;;
	esac
	rm -rf "$d/dumps"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$m" "$r" "$loop" "$events" "$lost" \
		"$tcpu" "$hwm" "$load" >>"$RUNS"
	printf 'flight: %s %-4s rep %s  loop %7ss  events %s  lost %s  tracer CPU %s s  RSS peak %s kB  load %s  (%ds)\n' \
		"$w" "$m" "$r" "$loop" "$events" "$lost" "$tcpu" "$hwm" "$load" $(($(date +%s) - T_START))
}

echo "flight: work directory $WORK; $REPS repetitions x ${#MODES[@]} modes x W1, W2; load $LOAD_START"
# shellcheck disable=SC2086
LD_LIBRARY_PATH=$BLAS_LD $PY "$ROOT/bench/workload_train.py" $W2_SHAPE --iters 2 >/dev/null ||
	die "warm-up run failed"
for ((r = 1; r <= REPS; r++)); do
	for w in W1 W2; do
		for ((j = 0; j < ${#MODES[@]}; j++)); do
			run_one "$w" "${MODES[$(((j + r - 1) % ${#MODES[@]}))]}" "$r"
		done
	done
done
T_END=$(date +%s)

{
	echo "date=$(date -d "@$T_START")"
	echo "cores=$(nproc)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "kernel=$(uname -r)"
	echo "pinning=${PIN_WL[*]:-none} (loop), ${PIN_TOOL[*]:-none} (tracers)"
	echo "load_start=$LOAD_START"
	echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "tool=$TOOL_DESC"
	echo "reps=$REPS"
	echo "w1_args=${WARGS[W1]}"
	echo "w2_args=${WARGS[W2]}"
	echo "secs=$((T_END - T_START))"
} >"$WORK/meta.txt"
$PY "$ROOT/bench/flight_report.py" overhead "$WORK/meta.txt" "$RUNS" >"$WORK/section.md"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
put_section "$OUT" "Flight recorder: overhead on W1 and W2" "$WORK/section.md"
cat "$WORK/section.md"
echo "flight: wrote its section of $OUT in $((T_END - T_START)) s"
