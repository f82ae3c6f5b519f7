#!/usr/bin/env bash
# Benchmark memtrace-bpf on CPU PyTorch training loops; writes bench/RESULTS.md.
#
# Run as root from anywhere, after `make memtrace-bpf fixtures` (or `make bench`,
# which does setup and the build first).  Takes about 30 minutes: 8-10 for
# the training-loop runs, 2 x RSS_SECONDS (10 min each) for the long traces
# of the record part.
#
# Workloads (bench/workload_train.py, Debian's python3 + python3-torch 1.13):
#   W1 compute-bound: batch 16, seq 128, d_model 256, ff 1024, 4 layers, Adam
#   W2 launch-bound:  batch 2, seq 16, d_model 64, ff 256, 4 layers, Adam
# Modes, interleaved, order rotated each repetition:
#   bare   no tracer
#   empty  bench/anchor_empty.bt: bpftrace, empty action, on the two
#          symbols memtrace-bpf hits for CPU tensors
#          (ProfiledCPUMemoryReporter::New / ::Delete)
#   mtq    memtrace-bpf -q (Python stacks, modules and phases on)
#   mtn    memtrace-bpf -q --no-python (the same without them)
#   mto    memtrace-bpf -o FILE (every event line written)
# plus one check run per workload (bpftrace count() and memtrace-bpf -o on
# the same process, with kernel.bpf_stats_enabled=1 for the loop so that
# the kernel counts the runs of every BPF program of both) for probe hits
# per event, and a lost-event test: the c10_report fixture in a tight loop,
# several copies under one memtrace-bpf.
# Record and report (last): `memtrace-bpf record` of W2 (same handshake) for
# the bytes per event; `report -i` and `script -i` of that record, timed, 3
# runs each (on a longer record of the same loop if W2's holds fewer than
# REC_MIN_EVENTS events); and a steady W2-like loop traced for RSS_SECONDS
# by `memtrace-bpf -q`, then again by `memtrace-bpf record`, with the
# tool's VmRSS / VmHWM sampled every RSS_EVERY seconds.
#
# Environment knobs: REPS (3), W1_ITERS (12), W2_ITERS (700), LOSS_ROUNDS
# (40000), OUT (bench/RESULTS.md), KEEP=1 keeps the work directory,
# MT / FIX: another memtrace-bpf / c10_report binary than this tree's, and
# MT_DESC: what to call it in RESULTS.md (e.g. the commit it was built from).
# Record part: REC_MIN_EVENTS (1000000), RSS_SECONDS (600; 0 skips the long
# traces, 60 makes a quick run), RSS_EVERY (5).  ONLY=record runs the record
# part alone and puts its section (and its rows of the Goals table) into the
# existing $OUT in place of the old ones, the rest of the file unchanged:
#   ONLY=record bench/run.sh                  # after a full run
#   ONLY=record RSS_SECONDS=60 bench/run.sh   # a quick check of that part
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=bench
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
FIX=${FIX:-$ROOT/.output/fixtures/c10_report}
REPS=${REPS:-3}
W1_ITERS=${W1_ITERS:-12}
W2_ITERS=${W2_ITERS:-700}
LOSS_ROUNDS=${LOSS_ROUNDS:-40000}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
REC_MIN_EVENTS=${REC_MIN_EVENTS:-1000000}
RSS_SECONDS=${RSS_SECONDS:-600}
RSS_EVERY=${RSS_EVERY:-5}
ONLY=${ONLY:-}
MODES=(bare empty mtq mtn mto)

declare -A WARGS=(
	[W1]="$W1_SHAPE --iters $W1_ITERS"
	[W2]="$W2_SHAPE --iters $W2_ITERS"
)

need_root "uprobes need it"
case $ONLY in
"") ;;
record) grep -q '^## Goals' "$OUT" 2>/dev/null ||
	die "ONLY=record puts its section into an existing $OUT: none there, run it whole first" ;;
*) die "ONLY=$ONLY: only ONLY=record is known" ;;
esac
whole_numbers_or_0 RSS_SECONDS
whole_numbers RSS_EVERY REC_MIN_EVENTS
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
[ -x "$FIX" ] || die "$FIX missing: make fixtures"
[ -r "$LIB" ] || die "$LIB missing (python3-torch)"
command -v bpftrace >/dev/null || die "bpftrace missing"
$PY -c 'import torch' 2>/dev/null || die "$PY cannot import torch"

if [ -n "$BLAS_LD" ]; then
	BLAS_NOTE="yes: LD_LIBRARY_PATH=$BLAS_DIR (libopenblas0-serial $(dpkg-query -W -f='${Version}' libopenblas0-serial 2>/dev/null || echo '?')) for the workload process only"
else
	BLAS_NOTE="no: $BLAS_DIR missing, the system BLAS was used (W1 is then much slower)"
	echo "bench: warning: $BLAS_DIR missing; using the system BLAS" >&2
fi

STATS0=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
# the run statistics as they were before the bench
on_exit() {
	sysctl -qw kernel.bpf_stats_enabled="$STATS0" 2>/dev/null || true
}
make_work bench || die "cannot make a work directory"
RUNS=$WORK/runs.tsv
LOSS=$WORK/loss.tsv
printf 'workload\tmode\trep\titers\tloop_s\tcpu_s\tevents\tlost\ttool_eps\tprinted\thits_new\thits_del\ttracer_cpu_s\tprobe_bytes\tsteal_s\ttool_runs\ttool_run_ns\tbt_runs\tbt_run_ns\n' >"$RUNS"
printf 'procs\tringbuf_mb\trounds\texpected\tevents\tlost\tload_s\ttool_eps\ttool_s\ttool_runs\ttool_run_ns\n' >"$LOSS"
# the record part: key=value figures, and the tool's memory over time
REC=$WORK/record.txt
RSS=$WORK/rss.tsv
: >"$REC"
printf 'mode\tt_s\trss_kb\thwm_kb\tfile_bytes\n' >"$RSS"

T_START=$(date +%s)

# what is measured: this binary, from this tree state, copied now so that
# every run uses the same one (others may rebuild or remove the tree's while
# the bench runs; that is reported)
MT_SRC=$MT
take_binary || die "cannot copy $MT_SRC"
MT_SUM0=$(sha256sum "$MT" | cut -c1-16)

# steal time of all CPUs so far, in clock ticks
steal_ticks() {
	awk '$1 == "cpu" { print $9; exit }' /proc/stat
}

# CPU seconds a process has used so far
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo NA
}

# one run: workload W, mode M, repetition R; appends a line to $RUNS
run_one() {
	local w=$1 m=$2 r=$3
	local d=$WORK/$w-$m-$r
	local wl tp="" bp="" pid tcpu=NA
	local events=NA lost=NA eps=NA printed=NA hnew=NA hdel=NA
	local truns=NA tns=NA bruns=NA bns=NA
	mkdir -p "$d"
	rm -f "$WORK/go" "$WORK/hold"
	# shellcheck disable=SC2086
	MT_GO=$WORK/go MT_HOLD=$WORK/hold LD_LIBRARY_PATH=$BLAS_LD \
		$PY "$ROOT/bench/workload_train.py" ${WARGS[$w]} \
		>"$d/wl.out" 2>"$d/wl.err" &
	wl=$!
	KIDS+=("$wl")
	wait_for "$d/wl.out" '^READY ' 120 "$wl" || die "$w: workload did not start"
	pid=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")

	case $m in
	bare) ;;
	empty)
		bpftrace "$ROOT/bench/anchor_empty.bt" >"$d/bt.out" 2>"$d/bt.err" &
		bp=$!
		wait_for "$d/bt.out" '^ATTACHED' 60 "$bp" || die "bpftrace did not attach"
		;;
	mtq | mtn)
		# shellcheck disable=SC2046
		"$MT" --keys -q -p "$pid" $([ "$m" = mtn ] && echo --no-python) \
			>"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		wait_for "$d/mt.err" "^# attach pid=$pid lib=.*libc10" 60 "$tp" ||
			die "memtrace-bpf -q did not attach"
		;;
	mto | check)
		"$MT" --keys -o "$d/trace.txt" -p "$pid" >"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		wait_for "$d/trace.txt" "^# attach pid=$pid lib=.*libc10" 60 "$tp" ||
			die "memtrace-bpf -o did not attach"
		if [ "$m" = check ]; then
			# bpftrace 0.17's -p does not limit uprobes to that
			# process: the predicate does
			bpftrace -p "$pid" -e "BEGIN { printf(\"ATTACHED\\n\"); }
				uprobe:$LIB:$SYM_NEW /pid == $pid/ { @new = count(); }
				uprobe:$LIB:$SYM_DEL /pid == $pid/ { @del = count(); }" >"$d/bt.out" 2>"$d/bt.err" &
			bp=$!
			wait_for "$d/bt.out" '^ATTACHED' 60 "$bp" || die "bpftrace did not attach"
		fi
		;;
	esac
	if [ -n "$tp" ]; then KIDS+=("$tp"); fi
	if [ -n "$bp" ]; then KIDS+=("$bp"); fi

	# the int3 path: 0xcc at both functions when traced, their own byte when not
	check_probes "$w $m" "$pid" "$([ "$m" = bare ] && echo no || echo yes)"

	sleep 0.5
	local st0 st1
	st0=$(steal_ticks)
	# the kernel counts program runs and their time only while this is 1
	[ "$m" = check ] && sysctl -qw kernel.bpf_stats_enabled=1
	touch "$WORK/go"
	wait_for "$d/wl.out" '^RESULT ' 600 "$wl" || die "$w $m: workload failed: $(cat "$d/wl.err")"
	st1=$(steal_ticks)
	if [ "$m" = check ]; then
		$PY "$ROOT/bench/bpfstats.py" "$tp" >"$d/tool.stats"
		$PY "$ROOT/bench/bpfstats.py" "$bp" >"$d/bt.stats"
		sysctl -qw kernel.bpf_stats_enabled="$STATS0"
		truns=$(sed -n 's/^total .* run_cnt=\([0-9]*\) .*/\1/p' "$d/tool.stats")
		tns=$(sed -n 's/^total .* run_time_ns=\([0-9]*\)$/\1/p' "$d/tool.stats")
		bruns=$(sed -n 's/^total .* run_cnt=\([0-9]*\) .*/\1/p' "$d/bt.stats")
		bns=$(sed -n 's/^total .* run_time_ns=\([0-9]*\)$/\1/p' "$d/bt.stats")
		sed -n "s/^link /links_$w=/p" "$d/tool.stats" >"$WORK/$w-links.txt"
	fi

	# stop the tracers while the workload still holds, then let it exit
	if [ -n "$tp" ]; then
		tcpu=$(cpu_s "$tp")
		stop_tracer "$tp" memtrace-bpf
		wait "$tp" || die "$w $m: memtrace-bpf exited with $?: $(cat "$d/mt.err")"
	fi
	if [ -n "$bp" ]; then
		stop_tracer "$bp" bpftrace
		wait "$bp" || true # bpftrace 0.17 exits 1 on a tracefs detach warning
	fi
	touch "$WORK/hold"
	wait "$wl" || die "$w $m: workload exited with $?"

	local res iters loop cpu
	res=$(grep '^RESULT ' "$d/wl.out")
	iters=$(sed -n 's/.* iters=\([0-9]*\).*/\1/p' <<<"$res")
	loop=$(sed -n 's/.* loop_s=\([0-9.]*\).*/\1/p' <<<"$res")
	cpu=$(sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p' <<<"$res")

	local sumfile=""
	case $m in
	mtq | mtn) sumfile=$d/mt.out ;;
	mto | check) sumfile=$d/trace.txt ;;
	esac
	if [ -n "$sumfile" ]; then
		local s
		s=$(grep '^# summary ' "$sumfile") || die "$w $m: no summary line in $sumfile"
		events=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$s")
		eps=$(sed -n 's/.* events_per_sec=\([0-9.]*\).*/\1/p' <<<"$s")
		lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$s")
	fi
	if [ "$m" = mto ] || [ "$m" = check ]; then
		# event lines; '#' lines are the tool's own, indented ones are
		# the Python stack under an event
		printed=$(LC_ALL=C grep -c '^[^#[:space:]]' "$d/trace.txt" || true)
		if [ "$m" = check ]; then
			# the first event, with its stack lines, for the report
			LC_ALL=C awk '/^#/ { next } /^[^[:space:]]/ { if (n++) exit } n { print }' \
				"$d/trace.txt" | head -20 >"$WORK/$w-sample.txt" || true
		fi
		rm -f "$d/trace.txt"
	fi
	if [ "$m" = check ]; then
		hnew=$(sed -n 's/^@new: \([0-9]*\)/\1/p' "$d/bt.out")
		hdel=$(sed -n 's/^@del: \([0-9]*\)/\1/p' "$d/bt.out")
		if [ -z "$hnew" ] || [ -z "$hdel" ]; then
			die "$w check: no counts from bpftrace"
		fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$w" "$m" "$r" "$iters" "$loop" "$cpu" "$events" "$lost" "$eps" \
		"$printed" "$hnew" "$hdel" "$tcpu" "$PROBE_BYTES" \
		"$(awk -v a="$st0" -v b="$st1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')" \
		"$truns" "$tns" "$bruns" "$bns" >>"$RUNS"
	printf 'bench: %-2s %-5s rep %s  loop %6ss  iters %s  events %s  lost %s  (%ds)\n' \
		"$w" "$m" "$r" "$loop" "$iters" "$events" "$lost" $(($(date +%s) - T_START))
}

# K copies of the c10_report fixture under one memtrace-bpf -q
loss_one() {
	local k=$1 mb=$2
	local d=$WORK/loss-$k-$mb pids=() i p tp t0 t1 s runs=NA rns=NA
	mkdir -p "$d"
	rm -f "$WORK/go" "$WORK/hold"
	for ((i = 0; i < k; i++)); do
		MT_GO=$WORK/go MT_HOLD=$WORK/hold "$FIX" --loop "$LOSS_ROUNDS" --quiet >"$d/fx$i.out" 2>&1 &
		pids+=($!)
		KIDS+=($!)
	done
	for ((i = 0; i < k; i++)); do
		wait_for "$d/fx$i.out" '^READY ' 30 "${pids[$i]}" || die "c10_report did not start"
	done
	"$MT" --keys -q --ringbuf-mb "$mb" -p "$(
		IFS=,
		echo "${pids[*]}"
	)" >"$d/mt.out" 2>"$d/mt.err" &
	tp=$!
	KIDS+=("$tp")
	for p in "${pids[@]}"; do
		wait_for "$d/mt.err" "^# attach pid=$p lib=.*libc10" 30 "$tp" || die "memtrace-bpf did not attach"
	done
	sleep 0.5
	sysctl -qw kernel.bpf_stats_enabled=1
	t0=$(date +%s.%N)
	touch "$WORK/go"
	for ((i = 0; i < k; i++)); do
		wait_for "$d/fx$i.out" '^done ' 300 "${pids[$i]}" || die "c10_report failed"
	done
	t1=$(date +%s.%N)
	$PY "$ROOT/bench/bpfstats.py" "$tp" >"$d/tool.stats"
	sysctl -qw kernel.bpf_stats_enabled="$STATS0"
	runs=$(sed -n 's/^total .* run_cnt=\([0-9]*\) .*/\1/p' "$d/tool.stats")
	rns=$(sed -n 's/^total .* run_time_ns=\([0-9]*\)$/\1/p' "$d/tool.stats")
	# the copies hold until now; memtrace-bpf ends when the last one exits
	touch "$WORK/hold"
	for p in "${pids[@]}"; do
		wait "$p" || die "c10_report exited with $?"
	done
	wait "$tp" || die "memtrace-bpf exited with $?: $(cat "$d/mt.err")"
	s=$(grep '^# summary ' "$d/mt.out") || die "no summary from memtrace-bpf"
	local events lost eps dur expected=0 c
	events=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$s")
	lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$s")
	eps=$(sed -n 's/.* events_per_sec=\([0-9.]*\).*/\1/p' <<<"$s")
	dur=$(sed -n 's/.* duration=\([0-9.]*\)s.*/\1/p' <<<"$s")
	# every round makes 20 reportMemoryUsageToProfiler calls and one
	# reportOutOfMemoryToProfiler call, the first round 6 fewer frees
	for ((i = 0; i < k; i++)); do
		c=$(sed -n 's/^done rounds=\([0-9]*\) .*/\1/p' "$d/fx$i.out")
		expected=$((expected + 21 * c - 6))
	done
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$mb" "$LOSS_ROUNDS" \
		"$expected" "$events" "$lost" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')" \
		"$eps" "$dur" "$runs" "$rns" >>"$LOSS"
	printf 'bench: loss %d procs ringbuf %2d MiB: events %s lost %s expected %s  (%ds)\n' \
		"$k" "$mb" "$events" "$lost" "$expected" $(($(date +%s) - T_START))
}

# --- record and report ---

# start_workload DIR ARG...: bench/workload_train.py with ARGs, as run_one
# starts it, up to its READY line; sets WL (the process) and WPID (the pid
# it printed)
start_workload() {
	local d=$1
	shift
	rm -f "$WORK/go" "$WORK/hold"
	MT_GO=$WORK/go MT_HOLD=$WORK/hold LD_LIBRARY_PATH=$BLAS_LD \
		$PY "$ROOT/bench/workload_train.py" "$@" >"$d/wl.out" 2>"$d/wl.err" &
	WL=$!
	KIDS+=("$WL")
	wait_for "$d/wl.out" '^READY ' 120 "$WL" || die "workload did not start: $(cat "$d/wl.err")"
	WPID=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")
}

# recorded_line FILE VAR: from the recorder's closing line in FILE ("...:
# recorded N events in S s to F: B bytes, X bytes per event, lost L"), the
# figure VAR (events, secs, bytes, bpe or lost)
recorded_line() {
	local line
	line=$(grep -E 'recorded [0-9]+ events in ' "$1" | tail -1) ||
		die "no 'recorded N events' line in $1: $(cat "$1")"
	case $2 in
	events) sed -E 's/.*recorded ([0-9]+) events in .*/\1/' <<<"$line" ;;
	secs) sed -E 's/.* events in ([0-9.]+) s to .*/\1/' <<<"$line" ;;
	bytes) sed -E 's/.*: ([0-9]+) bytes, .*/\1/' <<<"$line" ;;
	bpe) sed -E 's/.* ([0-9.]+) bytes per event.*/\1/' <<<"$line" ;;
	lost) sed -E 's/.*, lost ([0-9]+).*/\1/' <<<"$line" ;;
	esac
}

# record_w2 NAME ITERS: `memtrace-bpf record` of W2's loop with ITERS timed
# iterations, with run_one's handshake (attached, int3 checked, go; stopped
# while the workload holds); NAME_* figures into $REC; sets REC_FILE and
# REC_EVENTS
record_w2() {
	local name=$1 iters=$2 d=$WORK/rec-$1 tp tcpu res events bytes
	mkdir -p "$d"
	# shellcheck disable=SC2086
	start_workload "$d" $W2_SHAPE --iters "$iters"
	"$MT" record -o "$d/rec.mtb" -p "$WPID" >"$d/mt.out" 2>"$d/mt.err" &
	tp=$!
	KIDS+=("$tp")
	wait_for "$d/mt.err" "^# attach pid=$WPID lib=.*libc10" 60 "$tp" ||
		die "memtrace-bpf record did not attach"
	check_probes "record $name" "$WPID" yes
	sleep 0.5
	touch "$WORK/go"
	wait_for "$d/wl.out" '^RESULT ' 600 "$WL" || die "record $name: workload failed: $(cat "$d/wl.err")"
	tcpu=$(cpu_s "$tp")
	stop_tracer "$tp" "memtrace-bpf record"
	wait "$tp" || die "record $name: memtrace-bpf record exited with $?: $(cat "$d/mt.err")"
	touch "$WORK/hold"
	wait "$WL" || die "record $name: workload exited with $?"
	res=$(grep '^RESULT ' "$d/wl.out")
	events=$(recorded_line "$d/mt.err" events)
	bytes=$(stat -c %s "$d/rec.mtb")
	[ "$events" -gt 0 ] || die "record $name: no events recorded"
	{
		echo "${name}_iters=$iters"
		echo "${name}_loop_s=$(sed -n 's/.* loop_s=\([0-9.]*\).*/\1/p' <<<"$res")"
		echo "${name}_events=$events"
		echo "${name}_lost=$(recorded_line "$d/mt.err" lost)"
		echo "${name}_secs=$(recorded_line "$d/mt.err" secs)"
		echo "${name}_bytes=$bytes"
		echo "${name}_said_bytes=$(recorded_line "$d/mt.err" bytes)"
		echo "${name}_said_bpe=$(recorded_line "$d/mt.err" bpe)"
		echo "${name}_tool_cpu_s=$tcpu"
	} >>"$REC"
	REC_FILE=$d/rec.mtb
	REC_EVENTS=$events
	printf 'bench: record %-3s iters %s  events %s  %s bytes  lost %s  (%ds)\n' \
		"$name" "$iters" "$events" "$bytes" "$(recorded_line "$d/mt.err" lost)" \
		$(($(date +%s) - T_START))
}

# timed FILE CMD...: CMD through bench/timecmd.py, stdout to FILE; prints
# "WALL_S MAXRSS_KB"; a failing CMD ends the bench
timed() {
	local f=$1 r
	shift
	r=$($PY "$ROOT/bench/timecmd.py" -o "$f" -- "$@")
	[[ $r == *" rc=0" ]] || die "$* failed: $r"
	sed -E 's/^wall_s=([0-9.]+) maxrss_kb=([^ ]+) .*/\1 \2/' <<<"$r"
}

# time_reads NAME FILE EVENTS: `report -i FILE` and `script -i FILE`, 3 runs
# each, alternating, stdout to /dev/null; their wall times and peak RSS into
# $REC; then, untimed, the events each says it read
time_reads() {
	local name=$1 f=$2 events=$3 i r rs=() ss=() rm=0 sm=0
	cat "$f" >/dev/null # in the page cache, as right after recording
	for ((i = 0; i < 3; i++)); do
		r=$(timed /dev/null "$MT" report --keys -i "$f")
		rs+=("${r% *}")
		rm=${r#* }
		r=$(timed /dev/null "$MT" script -i "$f")
		ss+=("${r% *}")
		sm=${r#* }
	done
	{
		echo "${name}_report_s=${rs[*]}"
		echo "${name}_report_rss_kb=$rm"
		echo "${name}_script_s=${ss[*]}"
		echo "${name}_script_rss_kb=$sm"
		echo "${name}_report_events=$("$MT" report --keys -i "$f" |
			sed -n 's/^# summary .* events=\([0-9]*\).*/\1/p')"
		echo "${name}_script_lines=$("$MT" script -i "$f" |
			LC_ALL=C grep -c '^[^#[:space:]]' || true)"
	} >>"$REC"
	printf 'bench: %s: report -i %s s, script -i %s s for %s events  (%ds)\n' \
		"$name" "${rs[*]}" "${ss[*]}" "$events" $(($(date +%s) - T_START))
}

# sleep_until T0 S: sleep until S seconds after the time T0 (date +%s.%N)
sleep_until() {
	sleep "$(awk -v t0="$1" -v s="$2" -v now="$(date +%s.%N)" \
		'BEGIN { d = t0 + s - now; printf "%.3f", (d > 0 ? d : 0) }')"
}

# rss_sample PID T0 MODE [FILE]: a line of $RSS: MODE, seconds since T0,
# VmRSS and VmHWM of PID (kB), FILE's size; fails when PID has none
rss_sample() {
	local p=$1 t0=$2 m=$3 f=${4:-} st t sz=NA
	st=$(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 }
		END { if (r != "") print r "\t" h }' "/proc/$p/status" 2>/dev/null) || true
	[ -n "$st" ] || return 1
	t=$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - t0 }')
	[ -z "$f" ] || sz=$(stat -c %s "$f")
	printf '%s\t%s\t%s\t%s\n' "$m" "$t" "$st" "$sz" >>"$RSS"
}

# rss_run MODE: a steady W2 loop traced for RSS_SECONDS from go by
# `memtrace-bpf -q` (MODE q) or `memtrace-bpf record` (MODE rec), its VmRSS
# sampled every RSS_EVERY s into $RSS; its figures (events, live
# allocations at the end, peak RSS) into $REC as rss_MODE_*
rss_run() {
	local m=$1 d=$WORK/rss-$1 f="" tp t0 next tcpu hwm h i s r events live
	mkdir -p "$d"
	# W2's model with more iterations than the loop can run in RSS_SECONDS
	# (W2 bare runs ~160-250 it/s on the development VM); it is still in
	# its loop when the tracer stops, and killed then
	# shellcheck disable=SC2086
	start_workload "$d" $W2_SHAPE --iters $((RSS_SECONDS * 1000 + 1000))
	case $m in
	q) "$MT" --keys -q -p "$WPID" >"$d/mt.out" 2>"$d/mt.err" & ;;
	rec)
		f=$d/rec.mtb
		"$MT" record -o "$f" -p "$WPID" >"$d/mt.out" 2>"$d/mt.err" &
		;;
	esac
	tp=$!
	KIDS+=("$tp")
	wait_for "$d/mt.err" "^# attach pid=$WPID lib=.*libc10" 60 "$tp" ||
		die "rss $m: memtrace-bpf did not attach"
	sleep 0.5
	touch "$WORK/go"
	t0=$(date +%s.%N)
	rss_sample "$tp" "$t0" "$m" "$f" || die "rss $m: no VmRSS for memtrace-bpf"
	for ((next = RSS_EVERY; next < RSS_SECONDS; next += RSS_EVERY)); do
		sleep_until "$t0" "$next"
		rss_sample "$tp" "$t0" "$m" "$f" ||
			die "rss $m: memtrace-bpf exited after ${next}s: $(tail -5 "$d/mt.err")"
		if grep -q '^RESULT ' "$d/wl.out"; then
			die "rss $m: the workload ended its loop before ${RSS_SECONDS}s: more iterations"
		fi
	done
	sleep_until "$t0" "$RSS_SECONDS"
	rss_sample "$tp" "$t0" "$m" "$f" || die "rss $m: memtrace-bpf exited early"
	tcpu=$(cpu_s "$tp")
	# SIGINT, reading its high-water mark until it has exited (a zombie
	# has no VmHWM), so that the peak covers the summary or the record's
	# end too; the highest read counts (the kernel updates the mark
	# lazily: it can read lower while the process unmaps its memory)
	kill -INT "$tp"
	hwm=$(awk -v m="$m" '$1 == m && $4 > h { h = $4 } END { print h + 0 }' "$RSS")
	for ((i = 0; i < 400; i++)); do
		h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$tp/status" 2>/dev/null) || true
		[ -n "$h" ] || break
		[ "$h" -le "$hwm" ] || hwm=$h
		sleep 0.05
	done
	if kill -0 "$tp" 2>/dev/null && [ -n "$h" ]; then
		stop_tracer "$tp" memtrace-bpf
	fi
	wait "$tp" || die "rss $m: memtrace-bpf exited with $?: $(tail -5 "$d/mt.err")"
	kill "$WL" 2>/dev/null || true
	wait "$WL" || true # killed in its loop
	if [ "$m" = q ]; then
		s=$(grep '^# summary ' "$d/mt.out") || die "rss q: no summary line"
		events=$(sed -n 's/.* events=\([0-9]*\).*/\1/p' <<<"$s")
		{
			echo "rss_q_events=$events"
			echo "rss_q_lost=$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$s")"
			echo "rss_q_secs=$(sed -n 's/.* duration=\([0-9.]*\)s.*/\1/p' <<<"$s")"
		} >>"$REC"
		live=$(sed -n 's/^# live allocations=\([0-9]*\).*/\1/p' "$d/mt.out")
	else
		events=$(recorded_line "$d/mt.err" events)
		# the live allocations at the end, and one more read time: report
		# -i on this long record, 3 runs
		s=$(timed "$d/report.txt" "$MT" report --keys -i "$f")
		r=("${s% *}")
		for ((i = 0; i < 2; i++)); do
			r+=("$(timed /dev/null "$MT" report --keys -i "$f" | cut -d' ' -f1)")
		done
		{
			echo "rss_rec_events=$events"
			echo "rss_rec_lost=$(recorded_line "$d/mt.err" lost)"
			echo "rss_rec_secs=$(recorded_line "$d/mt.err" secs)"
			echo "rss_rec_bytes=$(stat -c %s "$f")"
			echo "rss_rec_report_s=${r[*]}"
			echo "rss_rec_report_rss_kb=${s#* }"
			echo "rss_rec_report_events=$(sed -n 's/^# summary .* events=\([0-9]*\).*/\1/p' "$d/report.txt")"
		} >>"$REC"
		live=$(sed -n 's/^# live allocations=\([0-9]*\).*/\1/p' "$d/report.txt")
		rm -f "$f"
	fi
	{
		echo "rss_${m}_live=${live:-NA}"
		echo "rss_${m}_hwm_kb=$hwm"
		echo "rss_${m}_tool_cpu_s=$tcpu"
	} >>"$REC"
	printf 'bench: rss %-3s %ss: events %s  live %s  peak %s kB  (%ds)\n' \
		"$m" "$RSS_SECONDS" "$events" "${live:-NA}" "$hwm" $(($(date +%s) - T_START))
}

# the whole record part
record_part() {
	local big=w2 iters
	{
		echo "rec_min_events=$REC_MIN_EVENTS"
		echo "rss_seconds=$RSS_SECONDS"
		echo "rss_every=$RSS_EVERY"
	} >>"$REC"
	record_w2 w2 "$W2_ITERS"
	if [ "$REC_EVENTS" -lt "$REC_MIN_EVENTS" ]; then
		# a longer record of the same loop, 20 % over the minimum
		iters=$((W2_ITERS * REC_MIN_EVENTS * 12 / 10 / REC_EVENTS + 1))
		record_w2 big "$iters"
		big=big
	fi
	echo "reads_on=$big" >>"$REC"
	time_reads "$big" "$REC_FILE" "$REC_EVENTS"
	if [ "$RSS_SECONDS" -gt 0 ]; then
		rss_run q
		rss_run rec
	fi
}

if [ "$ONLY" = record ]; then
	echo "bench: work directory $WORK; the record part only (ONLY=record)"
else
	echo "bench: work directory $WORK; $REPS repetitions x ${#MODES[@]} modes x 2 workloads, then the record part"
fi

# warm-up, not recorded: the first runs after a quiet spell were the slowest
# in trials (page cache, memory, the host)
# shellcheck disable=SC2086
for w in W1 W2; do
	[ "$ONLY" != record ] || [ "$w" = W2 ] || continue
	LD_LIBRARY_PATH=$BLAS_LD $PY "$ROOT/bench/workload_train.py" \
		${WARGS[$w]% --iters *} --iters 2 >/dev/null ||
		die "$w: warm-up run failed"
done
echo "bench: warm-up done ($(($(date +%s) - T_START))s)"

if [ "$ONLY" != record ]; then
	# interleaved: each repetition runs every mode of both workloads, in an
	# order rotated by one place per repetition
	for ((r = 1; r <= REPS; r++)); do
		for w in W1 W2; do
			for ((j = 0; j < ${#MODES[@]}; j++)); do
				run_one "$w" "${MODES[$(((j + r - 1) % ${#MODES[@]}))]}" "$r"
			done
		done
	done
	# probe hits per event: bpftrace count() beside memtrace-bpf -o, same process
	for w in W1 W2; do
		run_one "$w" check 1
	done
	# lost events at high rates
	for k in 1 2 4; do
		for mb in 1 16; do
			loss_one "$k" "$mb"
		done
	done
fi
# record: bytes per event, report / script time, the tool's memory
record_part

T_END=$(date +%s)

{
	echo "date=$(date)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "cores=$(nproc)"
	echo "virt=$(lscpu | sed -n 's/^Hypervisor vendor:[[:space:]]*//p')"
	echo "mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "kernel=$(uname -r)"
	# shellcheck source=/dev/null
	echo "os=$(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "meltdown=$(cat /sys/devices/system/cpu/vulnerabilities/meltdown 2>/dev/null || echo '?')"
	echo "python=$($PY -c 'import platform; print(platform.python_version())')"
	echo "torch=$($PY -c 'import torch; print(torch.__version__)') (python3-torch $(dpkg-query -W -f='${Version}' python3-torch))"
	echo "bpftrace=$(bpftrace --version)"
	echo "tool=$TOOL_DESC; sha256 $MT_SUM0…"
	if [ "$(sha256sum "$MT_SRC" 2>/dev/null | cut -c1-16)" != "$MT_SUM0" ]; then
		echo "tool_changed=$MT_SRC was rebuilt or removed while the bench ran (sha256 now $(sha256sum "$MT_SRC" 2>/dev/null | cut -c1-16 || echo 'none')…); every run used the copy taken at the start"
	fi
	echo "blas=$BLAS_NOTE"
	echo "reps=$REPS"
	echo "w1_args=${WARGS[W1]}"
	echo "w2_args=${WARGS[W2]}"
	echo "loss_rounds=$LOSS_ROUNDS"
	echo "gnu_time=$([ -x /usr/bin/time ] && echo yes || echo no)"
	echo "bench_s=$((T_END - T_START))"
	echo "stuck_tracers=$STUCK"
	local_cmd="bench/run.sh"
	[ -z "${MAKELEVEL:-}" ] || local_cmd="make bench"
	for v in REPS W1_ITERS W2_ITERS LOSS_ROUNDS REC_MIN_EVENTS RSS_SECONDS RSS_EVERY ONLY MT FIX MT_DESC; do
		val=${!v-}
		[ "$v" != MT ] || val=$MT_SRC
		[ -n "${!v+x}" ] && [ -n "$(printenv "$v")" ] &&
			local_cmd="$v=$(printf '%q' "$val") $local_cmd"
	done
	echo "cmd=$local_cmd"
	for w in W1 W2; do
		[ -f "$WORK/$w-sample.txt" ] && sed "s/^/sample_$w=/" "$WORK/$w-sample.txt"
		[ -f "$WORK/$w-links.txt" ] && cat "$WORK/$w-links.txt"
	done
} >"$WORK/meta.txt"

if [ "$ONLY" = record ]; then
	# the new section and goal rows in place of the old ones
	$PY "$ROOT/bench/report.py" --splice "$OUT" "$WORK/meta.txt" "$REC" "$RSS" >"$WORK/out.md"
	cat "$WORK/out.md" >"$OUT"
	echo "bench: replaced the record section of $OUT in $((T_END - T_START)) s"
else
	$PY "$ROOT/bench/report.py" "$WORK/meta.txt" "$RUNS" "$LOSS" "$REC" "$RSS" >"$OUT"
	echo "bench: wrote $OUT in $((T_END - T_START)) s"
fi
