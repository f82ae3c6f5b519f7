#!/usr/bin/env bash
# The leak check of a flight recorder's dump against an unsampled trace of
# the same run: bench/flight_leak.py (a training loop, one step every
# STEP_MS, keeping LEAK bytes a step, then the same loop keeping none)
# traced at once by `record -p` (no sampling: every stack) and by
# `record --flight W` for each W of WINDOWS (stacks sampled, 512 KiB),
# each dumped with SIGUSR1 two seconds before the loop ends; writes the
# section "Flight recorder: the leak check of a dump" of bench/RESULTS.md
# with each one's verdict. Run as root (make bench runs it), about
# 2 x (SECONDS_RUN + 15) s.
#
# Environment knobs: WINDOWS ("5s 30s"; "5s 30s 5m" with SECONDS_RUN=330),
# SECONDS_RUN (40), STEP_MS (20), LEAK (262144), OUT (bench/RESULTS.md),
# MT and MT_DESC, KEEP=1.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=flight_leaks
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
PY=${PY:-/usr/bin/python3}
WINDOWS=${WINDOWS:-5s 30s}
SECONDS_RUN=${SECONDS_RUN:-40}
STEP_MS=${STEP_MS:-20}
LEAK=${LEAK:-262144}
OUT=${OUT:-$ROOT/bench/RESULTS.md}

need_root "uprobes need it"
whole_numbers SECONDS_RUN STEP_MS LEAK
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"

make_work flight-leaks || die "cannot make a work directory"
take_binary || die "cannot copy $MT"
T_START=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
LEAK_LINE=$(grep -n '# the leak$' "$ROOT/bench/flight_leak.py" | cut -d: -f1)

# verdict FILE: the leak check's verdict and its first suspect, one line
verdict() {
	"$MT" report -i "$1" | awk '
		/^Leaks / { sub(/^Leaks +/, ""); v = $0; inl = 1; next }
		inl && /^           [^ ]/ { sub(/^ +/, ""); v = v " " $0; next }
		{ inl = 0 }
		/^Leak suspects/ { getline; getline; s = $0 }
		END { gsub(/ +/, " ", s); print v (s ? "; first suspect: " s : "") }' |
		sed "s|$ROOT/||g"
}

# one_run NAME LEAK: the loop under the unsampled tracer and one flight
# recorder a window; a line of $WORK/verdicts.tsv per tracer
one_run() {
	local name=$1 leak=$2 d=$WORK/$1 wl pid tp w i=0 f
	local -a fl=()
	mkdir -p "$d"
	rm -f "$WORK/go"
	MT_GO=$WORK/go "$PY" "$ROOT/bench/flight_leak.py" --seconds "$SECONDS_RUN" \
		--step-ms "$STEP_MS" --leak "$leak" >"$d/wl.out" 2>"$d/wl.err" &
	wl=$!
	KIDS+=("$wl")
	wait_for "$d/wl.out" '^READY ' 120 "$wl" || die "the loop did not start"
	pid=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")
	"$MT" record -o "$d/full.mtb" -p "$pid" >"$d/full.out" 2>"$d/full.err" &
	tp=$!
	KIDS+=("$tp")
	for w in $WINDOWS; do
		mkdir -p "$d/dumps-$w"
		"$MT" record --flight "$w" -o "$d/dumps-$w" -p "$pid" \
			>"$d/fl-$w.out" 2>"$d/fl-$w.err" &
		fl+=($!)
		KIDS+=($!)
	done
	wait_for "$d/full.err" '^# python pid=' 60 "$tp" || die "the full trace did not attach"
	for w in $WINDOWS; do
		wait_for "$d/fl-$w.err" '^# python pid=' 60 "${fl[i]}" || die "--flight $w did not attach"
		i=$((i + 1))
	done
	touch "$WORK/go"
	sleep $((SECONDS_RUN - 2))
	for f in "${fl[@]}"; do
		kill -USR1 "$f"
	done
	wait "$wl" || die "the loop failed: $(tail -3 "$d/wl.err")"
	stop_tracer "$tp" full
	wait "$tp" || true
	i=0
	for w in $WINDOWS; do
		stop_tracer "${fl[i]}" "flight $w"
		wait "${fl[i]}" || true
		i=$((i + 1))
	done
	printf '%s\t%s\t%s\n' "$name" "unsampled trace ($SECONDS_RUN s)" \
		"$(verdict "$d/full.mtb")" >>"$WORK/verdicts.tsv"
	for w in $WINDOWS; do
		f=$(find "$d/dumps-$w" -name 'flight-*-asked.mtb' | head -1)
		[ -n "$f" ] || die "--flight $w wrote no dump: $(tail -3 "$d/fl-$w.err")"
		printf '%s\t%s\t%s\n' "$name" "--flight $w dump" "$(verdict "$f")" \
			>>"$WORK/verdicts.tsv"
	done
	echo "flight_leaks: $name: $(grep '^DONE' "$d/wl.out")"
	[ "${KEEP:-0}" = 1 ] || rm -rf "$d"
}

: >"$WORK/verdicts.tsv"
one_run "keeps $LEAK bytes a step" "$LEAK"
one_run "keeps nothing" 0
T_END=$(date +%s)

{
	echo "## Flight recorder: the leak check of a dump"
	echo
	echo "Measured $(date -d "@$T_START") by \`bench/flight_leaks.sh\` ($((T_END - T_START)) s; load average $LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end) on $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | awk '{print $1, $2}'), $(nproc) cores, kernel $(uname -r); $TOOL_DESC."
	echo
	echo "\`bench/flight_leak.py\` (Linear, ReLU, Linear and SGD on the CPU, a step every $STEP_MS ms, line $LEAK_LINE keeping $LEAK bytes a step; then the same loop keeping nothing) for $SECONDS_RUN s, traced at once by \`record -p PID\` (no sampling) and by \`record --flight W -p PID\` for W in $WINDOWS (stacks sampled at 512 KiB), each dumped by SIGUSR1 two seconds before the loop's end. Each report's Leaks verdict, and its first suspect (module, line, alive, count, growth):"
	echo
	echo "| loop | record | Leaks |"
	echo "|---|---|---|"
	awk -F'\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }' "$WORK/verdicts.tsv"
	echo
	echo "Command (as root, in the tree): \`WINDOWS='$WINDOWS' SECONDS_RUN=$SECONDS_RUN STEP_MS=$STEP_MS LEAK=$LEAK bench/flight_leaks.sh\`."
} >"$WORK/section.md"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
put_section "$OUT" "Flight recorder: the leak check of a dump" "$WORK/section.md"
cat "$WORK/section.md"
