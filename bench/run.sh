#!/usr/bin/env bash
# Benchmark memtrace-bpf on CPU PyTorch training loops; writes bench/RESULTS.md.
#
# Run as root from anywhere, after `make memtrace-bpf fixtures` (or `make bench`,
# which does setup and the build first).  Takes about 8-10 minutes.
#
# Workloads (bench/workload_train.py, Debian's python3 + python3-torch 1.13):
#   W1 compute-bound: batch 16, seq 128, d_model 256, ff 1024, 4 layers, Adam
#   W2 launch-bound:  batch 2, seq 16, d_model 64, ff 256, 4 layers, Adam
# Modes, interleaved, order rotated each repetition:
#   bare   no tracer
#   empty  bpftrace, empty action, on the two symbols memtrace-bpf hits for
#          CPU tensors (ProfiledCPUMemoryReporter::New / ::Delete)
#   mtq    memtrace-bpf -q (Python stacks, modules and phases on)
#   mtn    memtrace-bpf -q --no-python (the same without them)
#   mto    memtrace-bpf -o FILE (every event line written)
# plus one check run per workload (bpftrace count() and memtrace-bpf -o on
# the same process, with kernel.bpf_stats_enabled=1 for the loop so that
# the kernel counts the runs of every BPF program of both) for probe hits
# per event, and a lost-event test: the c10_report fixture in a tight loop,
# several copies under one memtrace-bpf.
#
# Environment knobs: REPS (3), W1_ITERS (12), W2_ITERS (700), LOSS_ROUNDS
# (40000), OUT (bench/RESULTS.md), KEEP=1 keeps the work directory,
# MT / FIX: another memtrace-bpf / c10_report binary than this tree's, and
# MT_DESC: what to call it in RESULTS.md (e.g. the commit it was built from).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
PY=/usr/bin/python3
MT=${MT:-$ROOT/memtrace-bpf}
FIX=${FIX:-$ROOT/.output/fixtures/c10_report}
LIB=/usr/lib/x86_64-linux-gnu/libc10.so.1.13.0
SYM_NEW=_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm
SYM_DEL=_ZN3c1025ProfiledCPUMemoryReporter6DeleteEPv
BLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-serial
REPS=${REPS:-3}
W1_ITERS=${W1_ITERS:-12}
W2_ITERS=${W2_ITERS:-700}
LOSS_ROUNDS=${LOSS_ROUNDS:-40000}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
MODES=(bare empty mtq mtn mto)

declare -A WARGS=(
	[W1]="--batch 16 --seq 128 --d-model 256 --ff 1024 --layers 4 --iters $W1_ITERS"
	[W2]="--batch 2 --seq 16 --d-model 64 --ff 256 --layers 4 --iters $W2_ITERS"
)

die() {
	echo "bench: $*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "run as root (uprobes need it)"
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
[ -x "$FIX" ] || die "$FIX missing: make fixtures"
[ -r "$LIB" ] || die "$LIB missing (python3-torch)"
command -v bpftrace >/dev/null || die "bpftrace missing"
$PY -c 'import torch' 2>/dev/null || die "$PY cannot import torch"

if [ -e "$BLAS_DIR/libblas.so.3" ]; then
	BLAS_LD=$BLAS_DIR
	BLAS_NOTE="yes: LD_LIBRARY_PATH=$BLAS_DIR (libopenblas0-serial $(dpkg-query -W -f='${Version}' libopenblas0-serial 2>/dev/null || echo '?')) for the workload process only"
else
	BLAS_LD=
	BLAS_NOTE="no: $BLAS_DIR missing, the system BLAS was used (W1 is then much slower)"
	echo "bench: warning: $BLAS_DIR missing; using the system BLAS" >&2
fi

WORK=$(mktemp -d /tmp/memtrace-bench.XXXXXX)
KIDS=()
STATS0=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
cleanup() {
	local p
	sysctl -qw kernel.bpf_stats_enabled="$STATS0" 2>/dev/null || true
	for p in "${KIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	touch "$WORK/go" "$WORK/hold" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then
		echo "bench: work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
RUNS=$WORK/runs.tsv
LOSS=$WORK/loss.tsv
printf 'workload\tmode\trep\titers\tloop_s\tcpu_s\tevents\tlost\ttool_eps\tprinted\thits_new\thits_del\ttracer_cpu_s\tprobe_bytes\tsteal_s\ttool_runs\ttool_run_ns\tbt_runs\tbt_run_ns\n' >"$RUNS"
printf 'procs\tringbuf_mb\trounds\texpected\tevents\tlost\tload_s\ttool_eps\ttool_s\ttool_runs\ttool_run_ns\n' >"$LOSS"

T_START=$(date +%s)
# what is measured: this binary, from this tree state (others may rebuild it
# while the bench runs; that is reported)
MT_SUM0=$(sha256sum "$MT" | cut -c1-16)
if [ -n "${MT_DESC:-}" ]; then
	TOOL_DESC="$("$MT" --version | head -1), $MT_DESC"
else
	TOOL_DESC="$("$MT" --version | head -1), built in this tree at git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- user bpf 2>/dev/null || echo ' with uncommitted changes in user/ or bpf/')"
fi

# wait_for FILE REGEX SECONDS [PID]: until a line of FILE matches REGEX
wait_for() {
	local file=$1 re=$2 secs=$3 pid=${4:-} i
	for ((i = 0; i < secs * 20; i++)); do
		if [ -f "$file" ] && grep -Eq -- "$re" "$file"; then
			return 0
		fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		sleep 0.05
	done
	echo "bench: no /$re/ in $file after ${secs}s; it holds:" >&2
	cat "$file" >&2 2>/dev/null || true
	return 1
}

# stop_tracer PID NAME: SIGINT, and wait for it; a tracer that ignores it
# for 20 s is reported (with its state) and killed
stop_tracer() {
	local p=$1 name=$2 i
	kill -INT "$p" 2>/dev/null || true
	for ((i = 0; i < 400; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$p" 2>/dev/null; then
		echo "bench: $name (pid $p) still running 20 s after SIGINT:" >&2
		grep -E '^(State|SigBlk|SigIgn|SigCgt|SigPnd|ShdPnd)' "/proc/$p/status" >&2 || true
		cat "/proc/$p/wchan" >&2 2>/dev/null && echo >&2
		kill -TERM "$p" 2>/dev/null || true
		sleep 2
		kill -KILL "$p" 2>/dev/null || true
		STUCK=$((STUCK + 1))
	fi
}
STUCK=0

# steal time of all CPUs so far, in clock ticks
steal_ticks() {
	awk '$1 == "cpu" { print $9; exit }' /proc/stat
}

# CPU seconds a process has used so far
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo NA
}

# first bytes of the probed functions in PID, as "0xNN/0xNN"
probe_bytes() {
	$PY "$ROOT/bench/probecheck.py" "$1" "$LIB" "$SYM_NEW" "$SYM_DEL" |
		sed -n 's/.* byte=\(0x..\).*/\1/p' | paste -sd/
}

# one run: workload W, mode M, repetition R; appends a line to $RUNS
run_one() {
	local w=$1 m=$2 r=$3
	local d=$WORK/$w-$m-$r
	local wl tp="" bp="" pid pb tcpu=NA
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
		bpftrace -p "$pid" -e "BEGIN { printf(\"ATTACHED\\n\"); }
			uprobe:$LIB:$SYM_NEW { }
			uprobe:$LIB:$SYM_DEL { }" >"$d/bt.out" 2>"$d/bt.err" &
		bp=$!
		wait_for "$d/bt.out" '^ATTACHED' 60 "$bp" || die "bpftrace did not attach"
		;;
	mtq | mtn)
		"$MT" -q -p "$pid" $([ "$m" = mtn ] && echo --no-python) \
			>"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		wait_for "$d/mt.err" "^# attach pid=$pid lib=.*libc10" 60 "$tp" ||
			die "memtrace-bpf -q did not attach"
		;;
	mto | check)
		"$MT" -o "$d/trace.txt" -p "$pid" >"$d/mt.out" 2>"$d/mt.err" &
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
	pb=$(probe_bytes "$pid")
	if [ "$m" = bare ]; then
		[ "$pb" != "0xcc/0xcc" ] || die "$w bare: a uprobe is still attached ($pb)"
	else
		[ "$pb" = "0xcc/0xcc" ] || die "$w $m: probes not in place ($pb)"
	fi

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
		"$printed" "$hnew" "$hdel" "$tcpu" "$pb" \
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
	"$MT" -q --ringbuf-mb "$mb" -p "$(
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

echo "bench: work directory $WORK; $REPS repetitions x ${#MODES[@]} modes x 2 workloads"

# warm-up, not recorded: the first runs after a quiet spell were the slowest
# in trials (page cache, memory, the host)
# shellcheck disable=SC2086
for w in W1 W2; do
	LD_LIBRARY_PATH=$BLAS_LD $PY "$ROOT/bench/workload_train.py" \
		${WARGS[$w]% --iters *} --iters 2 >/dev/null ||
		die "$w: warm-up run failed"
done
echo "bench: warm-up done ($(($(date +%s) - T_START))s)"

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
	if [ "$(sha256sum "$MT" | cut -c1-16)" != "$MT_SUM0" ]; then
		echo "tool_changed=$MT was rebuilt while the bench ran (sha256 now $(sha256sum "$MT" | cut -c1-16)…): later runs may have used the new binary"
	fi
	echo "blas=$BLAS_NOTE"
	echo "reps=$REPS"
	echo "w1_args=${WARGS[W1]}"
	echo "w2_args=${WARGS[W2]}"
	echo "loss_rounds=$LOSS_ROUNDS"
	echo "bench_s=$((T_END - T_START))"
	echo "stuck_tracers=$STUCK"
	local_cmd="bench/run.sh"
	[ -z "${MAKELEVEL:-}" ] || local_cmd="make bench"
	for v in REPS W1_ITERS W2_ITERS LOSS_ROUNDS MT FIX MT_DESC; do
		[ -n "${!v+x}" ] && [ -n "$(printenv "$v")" ] &&
			local_cmd="$v=$(printf '%q' "${!v}") $local_cmd"
	done
	echo "cmd=$local_cmd"
	for w in W1 W2; do
		[ -f "$WORK/$w-sample.txt" ] && sed "s/^/sample_$w=/" "$WORK/$w-sample.txt"
		[ -f "$WORK/$w-links.txt" ] && cat "$WORK/$w-links.txt"
	done
} >"$WORK/meta.txt"

$PY "$ROOT/bench/report.py" "$WORK/meta.txt" "$RUNS" "$LOSS" >"$OUT"
echo "bench: wrote $OUT in $((T_END - T_START)) s"
