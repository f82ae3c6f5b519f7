#!/usr/bin/env bash
# memtrace-bpf's overhead on W2 against bpftrace anchors, in one interleaved
# run; writes the section "Cost against bpftrace anchors (W2)" of
# bench/RESULTS.md (issue 18). Run as root after bench/run.sh (make bench
# runs it), about 11 minutes with the defaults.
#
# Modes, order rotated by one place each repetition:
#   bare     no tracer
#   empty    bench/anchor_empty.bt: empty action on New / Delete
#   counter  bench/anchor_count.bt: count() at New entry and return, Delete
#   memleak  bench/anchor_memleak.bt: memleak's logic (size at entry, the
#            pointer and the native stack on return, deleted on free)
#   mtq      memtrace-bpf -q
#   mtn      memtrace-bpf -q --no-python
#   mts      memtrace-bpf -q --sample-bytes 512K (stacks for a sample)
#   rec      memtrace-bpf record -o FILE
# The loop runs on the last CPU, the tracers on the others (taskset). Each
# repetition's own overheads (loop s / bare loop s - 1, the same
# repetition's bare run) give its ratios; the ratios are reported as the
# median with their min-max over the repetitions, and a goal is met when
# every repetition meets it, not met when none does, else not resolved.
# After the repetitions, one untimed run of each memtrace-bpf mode counts
# with kernel.bpf_stats_enabled on (put back after) its BPF programs' runs
# and time over the timed iterations (issue 38, item 2), set against the
# empty anchor's trap.
#
# Environment knobs: REPS (9), ITERS (400 timed W2 iterations), OUT
# (bench/RESULTS.md), MT (another memtrace-bpf binary), KEEP=1 keeps the
# work directory.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=cost
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
REPS=${REPS:-9}
ITERS=${ITERS:-400}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
MODES=(bare empty counter memleak mtq mtn mts rec)
W2="$W2_SHAPE --iters $ITERS"

need_root "uprobes need it"
whole_numbers REPS ITERS
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
[ -r "$LIB" ] || die "$LIB missing (python3-torch)"
command -v bpftrace >/dev/null || die "bpftrace missing"
pin_cpus

make_work cost || die "cannot make a work directory"
RUNS=$WORK/runs.tsv
printf 'mode\trep\tloop_s\tevents\tlost\n' >"$RUNS"
CRUNS=$WORK/count-runs.tsv
printf 'mode\trep\tloop_s\tevents\tlost\n' >"$CRUNS"
STATS_OLD=$(sysctl -n kernel.bpf_stats_enabled)
on_exit() {
	sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD" || true
}
T_START=$(date +%s)

take_binary || die "cannot copy $MT"

# run_one MODE REP [count]: one W2 run; a line of $RUNS, or with count of
# $CRUNS, and the tracer's BPF programs' statistics before and after the
# timed iterations in the run's folder
run_one() {
	local m=$1 r=$2 count=${3:-} d=$WORK/$1-$2 wl pid tp="" events=NA lost=NA s loop
	mkdir -p "$d"
	rm -f "$WORK/go" "$WORK/hold"
	# shellcheck disable=SC2086
	MT_GO=$WORK/go MT_HOLD=$WORK/hold LD_LIBRARY_PATH=$BLAS_LD \
		"${PIN_WL[@]}" $PY "$ROOT/bench/workload_train.py" $W2 >"$d/wl.out" 2>"$d/wl.err" &
	wl=$!
	KIDS+=("$wl")
	wait_for "$d/wl.out" '^READY ' 120 "$wl" || die "workload did not start"
	pid=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")
	case $m in
	bare) ;;
	empty | counter | memleak)
		"${PIN_TOOL[@]}" bpftrace "$ROOT/bench/anchor_$([ "$m" = counter ] && echo count || echo "$m").bt" \
			"$pid" >"$d/bt.out" 2>"$d/bt.err" &
		tp=$!
		wait_for "$d/bt.out" '^ATTACHED' 60 "$tp" || die "bpftrace $m did not attach"
		;;
	mtq | mtn | mts)
		# shellcheck disable=SC2046
		"${PIN_TOOL[@]}" "$MT" --keys -q -p "$pid" $([ "$m" = mtn ] && echo --no-python) \
			$([ "$m" = mts ] && echo --sample-bytes 512K) \
			>"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		wait_for "$d/mt.err" "^# attach pid=$pid lib=.*libc10" 60 "$tp" ||
			die "memtrace-bpf did not attach"
		;;
	rec)
		"${PIN_TOOL[@]}" "$MT" record -o "$d/rec.mtb" -p "$pid" >"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		wait_for "$d/mt.err" "^# attach pid=$pid lib=.*libc10" 60 "$tp" ||
			die "memtrace-bpf record did not attach"
		;;
	esac
	[ -z "$tp" ] || KIDS+=("$tp")
	check_probes "$m" "$pid" "$([ "$m" = bare ] && echo no || echo yes)"
	sleep 0.5
	[ -z "$count" ] || prog_stats "$tp" "$d/progs0.json"
	touch "$WORK/go"
	wait_for "$d/wl.out" '^RESULT ' 600 "$wl" || die "$m: workload failed: $(cat "$d/wl.err")"
	[ -z "$count" ] || prog_stats "$tp" "$d/progs1.json"
	if [ -n "$tp" ]; then
		stop_tracer "$tp" "$m"
		# bpftrace 0.17 exits 1 on a tracefs detach warning
		wait "$tp" || case $m in mtq | mtn | mts | rec) die "$m: memtrace-bpf failed: $(cat "$d/mt.err")" ;; esac
	fi
	touch "$WORK/hold"
	wait "$wl" || die "$m: workload exited with $?"
	loop=$(sed -n 's/^RESULT .* loop_s=\([0-9.]*\).*/\1/p' "$d/wl.out")
	case $m in
	mtq | mtn | mts)
		s=$(grep '^# summary ' "$d/mt.out") || die "$m: no summary line"
		events=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$s")
		lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$s")
		;;
	rec)
		s=$(grep -E 'recorded [0-9]+ events in ' "$d/mt.err" | tail -1) ||
			die "rec: no 'recorded N events' line"
		events=$(sed -E 's/.*recorded ([0-9]+) events in .*/\1/' <<<"$s")
		lost=$(sed -E 's/.*, lost ([0-9]+).*/\1/' <<<"$s")
		rm -f "$d/rec.mtb"
		;;
	esac
	printf '%s\t%s\t%s\t%s\t%s\n' "$m" "$r" "$loop" "$events" "$lost" \
		>>"$([ -n "$count" ] && echo "$CRUNS" || echo "$RUNS")"
	printf 'cost: %-7s rep %s  loop %6ss  events %s  lost %s  (%ds)\n' \
		"$m" "$r" "$loop" "$events" "$lost" $(($(date +%s) - T_START))
}

echo "cost: work directory $WORK; $REPS repetitions x ${#MODES[@]} modes, W2 $ITERS iterations"
# shellcheck disable=SC2086
LD_LIBRARY_PATH=$BLAS_LD $PY "$ROOT/bench/workload_train.py" $W2_SHAPE --iters 2 >/dev/null ||
	die "warm-up run failed"
for ((r = 1; r <= REPS; r++)); do
	for ((j = 0; j < ${#MODES[@]}; j++)); do
		run_one "${MODES[$(((j + r - 1) % ${#MODES[@]}))]}" "$r"
	done
done
sysctl -qw kernel.bpf_stats_enabled=1
for m in mtq mtn mts; do
	run_one "$m" count count
done
sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD"
T_END=$(date +%s)

{
	echo "date=$(date)"
	echo "cores=$(nproc)"
	echo "pinning=${PIN_WL[*]:-none} (loop), ${PIN_TOOL[*]:-none} (tracers)"
	echo "load=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "tool=$TOOL_DESC"
	echo "bpftrace=$(bpftrace --version)"
	echo "reps=$REPS"
	echo "w2_args=$W2"
	echo "secs=$((T_END - T_START))"
} >"$WORK/meta.txt"
$PY "$ROOT/bench/cost_report.py" "$WORK/meta.txt" "$RUNS" "$CRUNS" "$WORK" >"$WORK/section.md"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
put_section "$OUT" "Cost against bpftrace anchors (W2)" "$WORK/section.md"
cat "$WORK/section.md"
echo "cost: wrote its section of $OUT in $((T_END - T_START)) s"
