#!/usr/bin/env bash
# Benchmark memtrace-bpf over many processes: the overhead of tracing 8
# copies of the W2 training loop on this machine against 1, and the cost
# of a Prometheus scrape of 8 traced processes. Appends (replaces) the
# "## Many processes" section of bench/RESULTS.md; run after bench/run.sh
# (make bench runs both). As root, after `make memtrace-bpf`.
#
# Knobs: ITERS (W2 iterations per process, 150), REPS (2), SCRAPES (50),
# OUT (bench/RESULTS.md).
set -euo pipefail
. "$(dirname "$0")/section.sh"

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=multi
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
ITERS=${ITERS:-150}
REPS=${REPS:-2}
SCRAPES=${SCRAPES:-50}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
W2="$W2_SHAPE --iters $ITERS"
PORT=19411

need_root "uprobes need it"
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
command -v curl >/dev/null || die "curl missing"

make_work multi || die "cannot make a work directory"

# run N workloads, traced by MODE (bare | mt); prints the median loop s
# and, for mt, the tool's events; the scrape timing when SCRAPE=1
run() {
	local n=$1 mode=$2 d i pids=() mtpid=
	d=$(mktemp -d "$WORK/run.XXXXXX")
	for ((i = 0; i < n; i++)); do
		MT_GO=$d/go MT_HOLD=$d/hold LD_LIBRARY_PATH=$BLAS_DIR \
			$PY bench/workload_train.py $W2 >"$d/w$i.out" 2>&1 &
		pids+=($!)
	done
	KIDS+=("${pids[@]}")
	for ((i = 0; i < n; i++)); do
		until grep -q '^READY' "$d/w$i.out"; do sleep 0.1; done
	done
	if [ "$mode" = mt ]; then
		: >"$d/mt.err" # there before the tracer opens it: polled below
		"$MT" --keys -q -p "$(IFS=,; echo "${pids[*]}")" \
			--metrics-addr 127.0.0.1:$PORT >"$d/mt.out" 2>"$d/mt.err" &
		mtpid=$!
		until [ "$(grep -c '^# attach .*libc10' "$d/mt.err")" -ge "$n" ]; do
			kill -0 $mtpid || die "memtrace-bpf: $(cat "$d/mt.err")"
			sleep 0.1
		done
		sleep 0.5
	fi
	touch "$d/go"
	if [ "$mode" = mt ] && [ "${SCRAPE:-0}" = 1 ]; then
		sleep 1
		for ((i = 0; i < SCRAPES; i++)); do
			curl -s -o /dev/null -w '%{time_total}\n' \
				"http://127.0.0.1:$PORT/metrics"
		done >"$d/scrapes"
		curl -s "http://127.0.0.1:$PORT/metrics" | wc -c >"$d/scrape_bytes"
	fi
	for ((i = 0; i < n; i++)); do
		until grep -q '^RESULT' "$d/w$i.out"; do sleep 0.1; done
	done
	if [ -n "$mtpid" ]; then
		kill -INT $mtpid
		wait $mtpid || true
	fi
	touch "$d/hold"
	wait "${pids[@]}" 2>/dev/null || true
	sed -nE 's/^RESULT .* loop_s=([0-9.]+) .*/\1/p' "$d"/w*.out |
		sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}' >"$d/median"
	echo "$d"
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

declare -A LOOP
for rep in $(seq "$REPS"); do
	for n in 1 8; do
		for mode in bare mt; do
			d=$(SCRAPE=$([ "$n" = 8 ] && [ "$mode" = mt ] && echo 1 || echo 0) run "$n" "$mode")
			LOOP[$n.$mode]+="$(cat "$d/median") "
			[ -e "$d/scrapes" ] && cp "$d/scrapes" "$WORK/scrapes.$rep" &&
				cp "$d/scrape_bytes" "$WORK/scrape_bytes"
			[ "$mode" = mt ] && grep '^# summary' "$d/mt.out" >"$WORK/summary.$n"
			echo "bench/multi: rep $rep procs $n $mode loop $(cat "$d/median") s" >&2
		done
	done
done

m() { tr ' ' '\n' <<<"${LOOP[$1]}" | grep . | median; }
b1=$(m 1.bare) t1=$(m 1.mt) b8=$(m 8.bare) t8=$(m 8.mt)
ov() { awk -v b="$1" -v t="$2" 'BEGIN { printf "%+.1f %%", (t / b - 1) * 100 }'; }
scr=$(cat "$WORK"/scrapes.* | median)
scr_max=$(cat "$WORK"/scrapes.* | sort -n | tail -1)

section=$(mktemp)
{
	echo "## Many processes"
	echo
	echo "Measured $(date -u) by \`bench/multi.sh\` on the machine above ($(nproc) cores):"
	echo "N copies of W2 ($ITERS iterations each) start together; the median of the"
	echo "processes' timed loops, bare and under one \`memtrace-bpf -q -p PID,...\` with"
	echo "Python stacks on and \`--metrics-addr\` serving; median of $REPS repetitions."
	echo
	echo "| processes | bare loop s | traced loop s | overhead |"
	echo "|---|---|---|---|"
	echo "| 1 | $b1 | $t1 | $(ov "$b1" "$t1") |"
	echo "| 8 | $b8 | $t8 | $(ov "$b8" "$t8") |"
	echo
	echo "With 8 processes on $(nproc) cores the workloads already share the CPUs"
	echo "four to one; the tracer's own work competes with them as well."
	echo "Tool summary (8 processes, last run): \`$(cat "$WORK/summary.8")\`."
	echo
	echo "Scrape of \`/metrics\` with 8 traced processes ($(cat "$WORK/scrape_bytes") bytes):"
	echo "median ${scr} s, max ${scr_max} s over $SCRAPES scrapes a repetition (curl's"
	echo "time_total; the reply waits for the trace loop's next 10 ms poll)."
} >"$section"
put_section "$OUT" "Many processes" "$section"
rm -f "$section"
echo "bench/multi: wrote the Many processes section of $OUT" >&2
