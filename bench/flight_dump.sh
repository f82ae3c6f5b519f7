#!/usr/bin/env bash
# What a flight recorder's dump costs in events: bench/flight_churn.py at
# its full rate under `record --flight 5s` with a 1 MiB BPF ring buffer
# (a tracer that stops reading for a few ms loses events there), DUMPS
# dumps asked for with SIGUSR1 two seconds apart, against the same run with
# none; writes the section "Flight recorder: events lost around a dump" of
# bench/RESULTS.md. Run as root (make bench runs it), about 2 minutes with
# the defaults.
#
# Each repetition runs, in an order rotated by one place a repetition, the
# tool with dumps and without, and with BASE_MT set (an older build, named
# by BASE_DESC) that build too. The figure is the events the tracer said
# it lost ('# LOST' lines) over the whole run, median and min-max.
#
# Environment knobs: REPS (3), DUMPS (3), SECONDS_RUN (16), RINGBUF_MB (1),
# OUT (bench/RESULTS.md), MT and MT_DESC, BASE_MT and BASE_DESC, KEEP=1.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=flight_dump
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
REPS=${REPS:-3}
DUMPS=${DUMPS:-3}
SECONDS_RUN=${SECONDS_RUN:-16}
RINGBUF_MB=${RINGBUF_MB:-1}
OUT=${OUT:-$ROOT/bench/RESULTS.md}

need_root "uprobes need it"
whole_numbers REPS DUMPS SECONDS_RUN RINGBUF_MB
[ "$SECONDS_RUN" -ge $((2 * DUMPS + 8)) ] || die "SECONDS_RUN=$SECONDS_RUN: at least 2 x DUMPS + 8"
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
[ -z "${BASE_MT:-}" ] || [ -x "$BASE_MT" ] || die "BASE_MT=$BASE_MT is no program"

make_work flight-dump || die "cannot make a work directory"
take_binary || die "cannot copy $MT"
RES=$WORK/lost.tsv
: >"$RES"
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
TOOLS=(new)
[ -z "${BASE_MT:-}" ] || TOOLS+=(base)

# one_run TOOL DUMPS: the churn under TOOL's flight recorder; a line of $RES
one_run() {
	local tool=$1 n=$2 d=$WORK/run-$1-$2 mt=$MT wl pid tp lost k
	[ "$tool" = new ] || mt=$BASE_MT
	mkdir -p "$d/dumps"
	rm -f "$WORK/go"
	MT_GO=$WORK/go "$PY" "$ROOT/bench/flight_churn.py" --seconds "$SECONDS_RUN" \
		--every 1000 >"$d/wl.out" 2>"$d/wl.err" &
	wl=$!
	KIDS+=("$wl")
	wait_for "$d/wl.out" '^READY ' 120 "$wl" || die "fixture did not start"
	pid=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")
	"$mt" record --flight 5s --ringbuf-mb "$RINGBUF_MB" -o "$d/dumps" -p "$pid" \
		>"$d/mt.out" 2>"$d/mt.err" &
	tp=$!
	KIDS+=("$tp")
	wait_for "$d/mt.err" '^# python pid=' 60 "$tp" || die "memtrace-bpf did not attach"
	touch "$WORK/go"
	# the window full first, then the dumps
	sleep 6
	for ((k = 0; k < n; k++)); do
		kill -USR1 "$tp"
		sleep 2
	done
	wait "$wl" || die "the fixture failed: $(tail -3 "$d/wl.err")"
	stop_tracer "$tp" "$tool"
	wait "$tp" || true
	k=$(find "$d/dumps" -name 'flight-*.mtb' | wc -l)
	[ "$k" -eq "$n" ] ||
		die "$tool: $k dumps written, $n asked for: $(tail -3 "$d/mt.err")"
	lost=$(awk '/^# LOST [0-9]+ events/ { n += $3 } END { print n + 0 }' "$d/mt.out" "$d/mt.err")
	printf '%s\t%s\t%s\n' "$tool" "$n" "$lost" >>"$RES"
	echo "flight_dump: $tool, $n dumps: $lost events lost"
	rm -rf "$d"
}

MODES=()
for t in "${TOOLS[@]}"; do
	MODES+=("$t 0" "$t $DUMPS")
done
for ((r = 0; r < REPS; r++)); do
	for ((i = 0; i < ${#MODES[@]}; i++)); do
		# shellcheck disable=SC2086
		one_run ${MODES[(i + r) % ${#MODES[@]}]}
	done
done
T_END=$(date +%s)

# median and min-max of the lost counts of TOOL with N dumps
stats() {
	awk -v t="$1" -v n="$2" '$1 == t && $2 == n { print $3 }' "$RES" | sort -n |
		awk '{ v[NR] = $1 } END {
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%d (%d to %d)", m, v[1], v[NR] }'
}

{
	echo "## Flight recorder: events lost around a dump"
	echo
	echo "Measured $(date -d "@$T_START") by \`bench/flight_dump.sh\` ($REPS repetitions, $((T_END - T_START)) s; load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end) on $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | awk '{print $1, $2}'), $(nproc) cores, kernel $(uname -r); $TOOL_DESC${BASE_MT:+, against ${BASE_DESC:-$BASE_MT}}."
	echo
	echo "\`bench/flight_churn.py\` at its full rate (small CPU tensors made and freed as fast as the interpreter can: hundreds of thousands of events a second) for $SECONDS_RUN s under \`memtrace-bpf record --flight 5s --ringbuf-mb $RINGBUF_MB -p PID\`: a ring buffer that small loses events whenever the tracer stops reading for a few milliseconds, so the count shows a stall. $DUMPS dumps asked for with SIGUSR1, two seconds apart once the window is full, against the same run with none; each repetition runs every mode once, the order rotated. Events lost over the whole run (the tracer's \`# LOST\` lines), median (min to max):"
	echo
	echo "| tool | no dump | $DUMPS dumps |"
	echo "|---|---|---|"
	echo "| this tree (a child process writes each dump) | $(stats new 0) | $(stats new "$DUMPS") |"
	[ -z "${BASE_MT:-}" ] ||
		echo "| ${BASE_DESC:-$BASE_MT} | $(stats base 0) | $(stats base "$DUMPS") |"
	echo
	echo "Command (as root, in the tree): \`${BASE_MT:+BASE_MT=... BASE_DESC='...' }bench/flight_dump.sh\`."
} >"$WORK/section.md"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
put_section "$OUT" "Flight recorder: events lost around a dump" "$WORK/section.md"
cat "$WORK/section.md"
