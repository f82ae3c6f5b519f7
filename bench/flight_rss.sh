#!/usr/bin/env bash
# The flight recorder's own memory over a long run at a high event rate
# (issue 26, item 3): `memtrace-bpf record --flight WINDOW -o DIR -p PID`
# on bench/flight_churn.py (small CPU tensors made and freed in a tight
# Python loop, a few long-lived ones beside them) for DURATION seconds,
# the tracer's VmRSS and VmHWM read from /proc/PID/status every EVERY s,
# with the events lost so far (its '# LOST' lines).
# At the end a SIGUSR1 dump says what the window held (its events, their
# span, the allocations older than it), then SIGINT. Writes the section
# "Flight recorder: the tracer's memory over 10 minutes" of
# bench/RESULTS.md. Run as root (make bench runs it); DURATION + about
# 1 min for each rate.
#
# Rates (RATES, events a second; 0: as fast as the loop can): by default
# one run as fast as it can (on the development VM, 360 to 600 k
# events/s traced: more than the 1 GiB memory cap of a time window holds in
# a minute, so the window is cut by the cap) and one at 50,000 events/s
# (a minute of events fits: the window is the time given).
# The fixture runs on the last CPU, the tracer on the others (taskset).
#
# Environment knobs: DURATION (600 s a run), EVERY (10 s), WINDOW_S (60:
# --flight 60s), RATES ("0 50000"), OUT (bench/RESULTS.md), MT (another
# memtrace-bpf binary) and MT_DESC (what to call it), KEEP=1 keeps the
# work directory.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=flight_rss
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
DURATION=${DURATION:-600}
EVERY=${EVERY:-10}
WINDOW_S=${WINDOW_S:-60}
RATES=${RATES:-0 50000}
OUT=${OUT:-$ROOT/bench/RESULTS.md}

need_root "uprobes need it"
whole_numbers DURATION EVERY WINDOW_S
whole_numbers_or_0 RATES
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
[ -r "$LIB" ] || die "$LIB missing (python3-torch)"
pin_cpus

make_work flight-rss || die "cannot make a work directory"
take_binary || die "cannot copy $MT"
RSS=$WORK/rss.tsv
RES=$WORK/results.txt
printf 'rate\tt_s\trss_kb\thwm_kb\tlost\n' >"$RSS"
: >"$RES"
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# sleep_until T0 S: until S seconds after T0 (date +%s.%N)
sleep_until() {
	sleep "$(awk -v t0="$1" -v s="$2" -v now="$(date +%s.%N)" \
		'BEGIN { d = t0 + s - now; printf "%.3f", (d > 0 ? d : 0) }')"
}

# rss_sample PID T0 RATE OUT: a line of $RSS, with the events lost so far
# (the tracer's '# LOST N events' lines in OUT); fails when PID has no VmRSS
rss_sample() {
	local st t lost
	st=$(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 }
		END { if (r != "") print r "\t" h }' "/proc/$1/status" 2>/dev/null) || true
	[ -n "$st" ] || return 1
	t=$(awk -v t0="$2" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - t0 }')
	lost=$(awk '/^# LOST [0-9]+ events/ { n += $3 } END { print n + 0 }' "$4")
	printf '%s\t%s\t%s\t%s\n' "$3" "$t" "$st" "$lost" >>"$RSS"
}

# cpu_s PID: its user + system CPU seconds so far
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}

# one_run RATE: the fixture at RATE under the flight recorder for DURATION
one_run() {
	local rate=$1 d=$WORK/rate-$1 wl pid tp t0 next hwm h i tcpu dump win
	local lines rargs=()
	mkdir -p "$d/dumps"
	rm -f "$WORK/go"
	[ "$rate" -eq 0 ] || rargs=(--rate "$rate")
	MT_GO=$WORK/go "${PIN_WL[@]}" "$PY" "$ROOT/bench/flight_churn.py" \
		--every "$EVERY" "${rargs[@]}" >"$d/wl.out" 2>"$d/wl.err" &
	wl=$!
	KIDS+=("$wl")
	wait_for "$d/wl.out" '^READY ' 120 "$wl" || die "fixture did not start"
	pid=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")
	"${PIN_TOOL[@]}" "$MT" record --flight "${WINDOW_S}s" -o "$d/dumps" -p "$pid" \
		>"$d/mt.out" 2>"$d/mt.err" &
	tp=$!
	KIDS+=("$tp")
	wait_for "$d/mt.err" "^# attach pid=$pid lib=.*libc10" 60 "$tp" ||
		die "memtrace-bpf did not attach"
	check_probes "rate $rate" "$pid" yes
	sleep 0.5
	touch "$WORK/go"
	t0=$(date +%s.%N)
	rss_sample "$tp" "$t0" "$rate" "$d/mt.out" || die "no VmRSS for memtrace-bpf"
	echo "flight_rss: rate $rate: fixture $pid, tracer $tp; $DURATION s from $(date)"
	for ((next = EVERY; next < DURATION; next += EVERY)); do
		sleep_until "$t0" "$next"
		rss_sample "$tp" "$t0" "$rate" "$d/mt.out" ||
			die "memtrace-bpf exited after ${next}s: $(tail -5 "$d/mt.err")"
		kill -0 "$wl" 2>/dev/null || die "the fixture ended after ${next}s: $(tail -5 "$d/wl.err")"
		if ((next % 60 == 0)); then
			printf 'flight_rss: rate %s  %4ss  VmRSS %s kB  (load %s)\n' "$rate" "$next" \
				"$(tail -1 "$RSS" | cut -f3)" "$(cut -d' ' -f1-3 /proc/loadavg)"
		fi
	done
	sleep_until "$t0" "$DURATION"
	rss_sample "$tp" "$t0" "$rate" "$d/mt.out" || die "memtrace-bpf exited early"
	tcpu=$(cpu_s "$tp")
	hwm=$(awk -v r="$rate" '$1 == r && $4 > h { h = $4 } END { print h + 0 }' "$RSS")
	# what the window holds now: a dump on SIGUSR1 (its high-water mark
	# read apart: writing a dump is not the steady state)
	kill -USR1 "$tp"
	for ((i = 0; i < 2400; i++)); do
		grep -q '^memtrace-bpf: flight: dumped ' "$d/mt.err" && break
		kill -0 "$tp" 2>/dev/null || break
		sleep 0.05
	done
	grep -q '^memtrace-bpf: flight: dumped ' "$d/mt.err" ||
		die "no dump 120 s after SIGUSR1: $(tail -5 "$d/mt.err")"
	h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$tp/status")
	kill -INT "$tp"
	wait "$tp" || die "memtrace-bpf exited with $?: $(tail -5 "$d/mt.err")"
	kill "$wl" 2>/dev/null || true
	wait "$wl" || true # killed in its loop
	dump=$(ls "$d"/dumps/flight-*-asked.mtb)
	lines=$("$MT" report --keys -i "$dump")
	win=$(grep -m1 '^# record window: ' <<<"$lines") || die "no window line in $dump"
	{
		echo "rate${rate}_requested=$rate"
		echo "rate${rate}_pid=$pid"
		echo "rate${rate}_tool_cpu_s=$tcpu"
		echo "rate${rate}_hwm_kb=$hwm"
		echo "rate${rate}_hwm_dump_kb=$h"
		echo "rate${rate}_fixture=$(grep '^RATE ' "$d/wl.out" | tail -1)"
		echo "rate${rate}_window=${win#\# record window: }"
		echo "rate${rate}_summary=$(grep -m1 '^# summary ' <<<"$lines" || true)"
		echo "rate${rate}_dump_bytes=$(stat -c %s "$dump")"
	} >>"$RES"
	grep '^RATE ' "$d/wl.out" | sed "s/^/rate${rate}_rateline=/" >>"$RES"
	rm -f "$dump"
	printf 'flight_rss: rate %s done: peak %s kB, tracer CPU %s s; %s\n' \
		"$rate" "$hwm" "$tcpu" "${win#\# record window: }"
}

echo "flight_rss: work directory $WORK; rates ($RATES) x $DURATION s, --flight ${WINDOW_S}s, a sample every $EVERY s; load $LOAD_START"
for r in $RATES; do
	one_run "$r"
done
T_END=$(date +%s)
{
	echo "date=$(date -d "@$T_START")"
	echo "cores=$(nproc)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "kernel=$(uname -r)"
	echo "pinning=${PIN_WL[*]:-none} (fixture), ${PIN_TOOL[*]:-none} (tracer)"
	echo "load_start=$LOAD_START"
	echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "tool=$TOOL_DESC"
	echo "duration=$DURATION"
	echo "every=$EVERY"
	echo "window_s=$WINDOW_S"
	echo "rates=$RATES"
	echo "secs=$((T_END - T_START))"
	cat "$RES"
} >"$WORK/meta.txt"
$PY "$ROOT/bench/flight_report.py" rss "$WORK/meta.txt" "$RSS" >"$WORK/section.md"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
put_section "$OUT" "Flight recorder: the tracer's memory over $((DURATION / 60)) minutes" "$WORK/section.md"
cat "$WORK/section.md"
echo "flight_rss: wrote its section of $OUT in $((T_END - T_START)) s"
