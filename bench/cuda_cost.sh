#!/usr/bin/env bash
# What tracing costs a CUDA training step on the stand-in (issue 25): the
# step loop of bench/cuda_step.py, run in the CUDA PyTorch root on the
# stand-ins (scripts/cuda-standin.sh: PyTorch 2.6's real caching allocator,
# a runtime that runs no kernel), so the CPU launches every kernel with no
# GPU to wait for, the worst case for any tracer of the allocator. One
# interleaved run; writes the section "Cost on a CUDA training step
# (stand-in)" of bench/RESULTS.md. Run as root (make bench runs it),
# about 4 minutes with the defaults.
#
# Modes, order rotated by one place each repetition:
#   bare   no tracer
#   mtq    memtrace-bpf -q -p PID (every Python stack walked)
#   mtn    memtrace-bpf -q --no-python
#   mts    memtrace-bpf -q --sample-bytes 512K
#   flt    memtrace-bpf record --flight 10m -o DIR --flight-at-end: the
#          flight recorder with its defaults (stacks sampled by bytes,
#          512 KiB), its window longer than the run; the dump at the end
#          gives the events and the c10 counts
#   hist   no tracer; the step script's --history: PyTorch's own in-process
#          recorder, torch.cuda.memory._record_memory_history(stacks=
#          "python"), the tool people use instead
# Run it alone: another tracer's probes on the root's libraries (e.g. a
# memtrace-bpf --children or --all of the e2e tests) put int3s in every
# process, which the bare run's check finds (it then stops), and other
# work on the 2 cores moves the bare runs, the recorder's overhead most.
# The loop runs on the last CPU, the tracer on the others (taskset). Each
# repetition's overheads (ms a step / the same repetition's bare ms a step
# - 1) give its ratios; medians with their min-max over the repetitions.
# Each repetition also measures a trap (bench/traps.sh, on the loop's
# CPU). After the repetitions, one more run of each memtrace-bpf mode
# counts, with kernel.bpf_stats_enabled on (put back after), each BPF
# program's runs and time over the timed steps: traps and return probes
# an event, the BPF time, and what that leaves of the time added (issue
# 38, items 2 and 3). Those runs are not timed.
#
# Environment knobs: REPS (4), STEPS (timed steps of a traced run, 400),
# BARE_STEPS (of a run without memtrace-bpf, bare and hist, 1200: their
# steps are quicker and their difference the smallest measured), OUT
# (bench/RESULTS.md), MT (another memtrace-bpf binary), KEEP=1 keeps the
# work directory.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
WAIT_NAME=cuda_cost
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
MT=${MT:-$ROOT/memtrace-bpf}
REPS=${REPS:-4}
STEPS=${STEPS:-400}
BARE_STEPS=${BARE_STEPS:-1200}
OUT=${OUT:-$ROOT/bench/RESULTS.md}
MODES=(bare mtq mtn mts flt hist)
STANDIN=$ROOT/scripts/cuda-standin.sh

need_root "uprobes and the root's chroot need it"
whole_numbers REPS STEPS BARE_STEPS
[ -x "$MT" ] || die "$MT missing: make memtrace-bpf"
[ -x "$STANDIN" ] || die "$STANDIN missing"
# the root (built on first use, minutes) and the stand-ins in it
CROOT=$("$STANDIN" --root) || die "no CUDA PyTorch root (scripts/cuda-standin.sh --root)"
SLIB=$("$STANDIN" --lib) || die "the stand-ins did not build (make standin)"
# the probes checked for int3, as check_probes does for the CPU benches:
# the two c10 reporters memtrace-bpf probes in the root's libc10, which
# the caching allocator calls at each block it hands out or takes back
LIB=$(readlink -f "$CROOT/usr/lib/python3/dist-packages/torch/lib/libc10.so") ||
	die "no libc10 in $CROOT"
SYM_NEW=$(nm -D --defined-only "$LIB" | awk '/ _ZN3c1027reportMemoryUsageToProfiler/ { s = $3 } END { print s }')
SYM_DEL=$(nm -D --defined-only "$LIB" | awk '/ _ZN3c1027reportOutOfMemoryToProfiler/ { s = $3 } END { print s }')
if [ -z "$SYM_NEW" ] || [ -z "$SYM_DEL" ]; then
	die "$LIB: no c10 reporter symbols"
fi
# the probed function's first instruction: the trap's cost depends on it
# (uprobes emulate a push, but single-step most others, endbr64 among them:
# memtrace-bpf probes the instruction after a leading endbr64)
A=$(nm -D --defined-only "$LIB" | awk -v s="$SYM_NEW" '$3 == s { print $1 }')
FIRST_INSN=$(objdump -d --no-show-raw-insn --start-address=0x"$A" --stop-address=$((0x$A + 16)) "$LIB" |
	awk -F'\t' '/^ *[0-9a-f]+:/ { print $2; exit }' | tr -s ' ' || true)
# probed_insn SYMBOL: the instruction memtrace-bpf probes in SYMBOL of
# $LIB, the one after a leading endbr64
probed_insn() {
	local a
	a=$(nm -D --defined-only "$LIB" | awk -v s="$1" '$3 == s { print $1 }')
	[ -n "$a" ] || return 0
	objdump -d --no-show-raw-insn --start-address=0x"$a" --stop-address=$((0x$a + 16)) "$LIB" |
		awk -F'\t' '/^ *[0-9a-f]+:/ { if ($2 ~ /^endbr64/) next; print $2; exit }' | tr -s ' '
}
PROBED_INSNS=""
for s in "$SYM_NEW" _ZN3c1025ProfiledCPUMemoryReporter3NewEPvm _ZN3c1025ProfiledCPUMemoryReporter6DeleteEPv; do
	PROBED_INSNS+="${PROBED_INSNS:+; }\`$s\`: \`$(probed_insn "$s" || true)\`"
done
TORCH_VER=$(dpkg-query --admindir="$CROOT/var/lib/dpkg" -W -f '${Version}' python3-torch-cuda 2>/dev/null || echo '?')
PY_VER=$(chroot "$CROOT" /usr/bin/python3 -c 'import platform; print(platform.python_version())' 2>/dev/null || echo '?')

pin_cpus

make_work cuda-cost || die "cannot make a work directory"
# the step script and the handshake files lie in the root's /tmp (STAGE,
# its path inside the root)
SDIR=$(mktemp -d "$CROOT/tmp/memtrace-cuda-cost.XXXXXX") || die "cannot stage in $CROOT/tmp"
STAGE=${SDIR#"$CROOT"}
on_exit() {
	touch "$SDIR/go" "$SDIR/hold" 2>/dev/null || true
	sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD" || true
	[ "${KEEP:-0}" = 1 ] || rm -rf "$SDIR"
}
cp "$ROOT/bench/cuda_step.py" "$ROOT/tests/fixtures/mt_sync.py" "$SDIR/"
RUNS=$WORK/runs.tsv
HEAD='mode\trep\tloop_s\tsteps\tallocs\tfrees\thistory\tevents\tc10\tlost\tminflt\n'
# shellcheck disable=SC2059 # the format is ours
printf "$HEAD" >"$RUNS"
# the counting runs' rows, apart from the timed ones
CRUNS=$WORK/count-runs.tsv
# shellcheck disable=SC2059
printf "$HEAD" >"$CRUNS"
TRAPS=$WORK/traps.tsv
printf 'rep\tbare\tpush\tnop5\tnop1\tret\tsstep\tread\n' >"$TRAPS"
STATS_OLD=$(sysctl -n kernel.bpf_stats_enabled)
T_START=$(date +%s)

take_binary || die "cannot copy $MT"
# the stand-ins in use: a rebuild of them during the run is reported
standin_sum() { sha256sum "$CROOT$SLIB"/*.so* | sha256sum | cut -c1-12; }
SUM0=$(standin_sum)

# field LINE KEY: the value of KEY= in LINE
field() {
	sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"
}

# run_one MODE REP [count]: one run of the step loop; a line of $RUNS, or
# with count of $CRUNS, and the tracer's BPF programs' statistics before
# and after the timed steps in the run's folder
run_one() {
	local m=$1 r=$2 count=${3:-} d=$WORK/$1-$2 wl pid tp="" events=NA c10=NA lost=NA s res a f lib f0 f1
	local -a args=(--steps "$STEPS")
	case $m in
	bare) args=(--steps "$BARE_STEPS") ;;
	hist) args=(--steps "$BARE_STEPS" --history) ;;
	esac
	mkdir -p "$d"
	rm -f "$SDIR/go" "$SDIR/hold"
	MT_GO=$STAGE/go MT_HOLD=$STAGE/hold "${PIN_WL[@]}" "$STANDIN" -- \
		/usr/bin/python3 "$STAGE/cuda_step.py" "${args[@]}" >"$d/wl.out" 2>"$d/wl.err" &
	wl=$!
	KIDS+=("$wl")
	wait_for "$d/wl.out" '^READY ' 120 "$wl" || die "$m: the step script did not start: $(cat "$d/wl.err")"
	pid=$(awk '/^READY /{ print $2; exit }' "$d/wl.out")
	case $m in
	mtq | mtn | mts)
		# shellcheck disable=SC2046
		"${PIN_TOOL[@]}" "$MT" --keys -q -p "$pid" $([ "$m" = mtn ] && echo --no-python) \
			$([ "$m" = mts ] && echo --sample-bytes 512K) \
			>"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		KIDS+=("$tp")
		# c10's reporters (the allocator's block events) and the runtime;
		# the tool attaches every library in one pass before it traces
		;;
	flt)
		mkdir -p "$d/dumps"
		"${PIN_TOOL[@]}" "$MT" record --flight 10m -o "$d/dumps" --flight-at-end \
			-p "$pid" >"$d/mt.out" 2>"$d/mt.err" &
		tp=$!
		KIDS+=("$tp")
		;;
	esac
	if [ -n "$tp" ]; then
		for lib in libc10 libcudart; do
			wait_for "$d/mt.err" "^# attach pid=$pid lib=.*/$lib\.so" 60 "$tp" ||
				die "$m: memtrace-bpf did not attach to $lib"
		done
	fi
	check_probes "$m" "$pid" "$([ -n "$tp" ] && echo yes || echo no)"
	sleep 0.5
	[ -z "$count" ] || prog_stats "$tp" "$d/progs0.json"
	f0=$(minflt "$pid")
	touch "$SDIR/go"
	wait_for "$d/wl.out" '^RESULT ' 600 "$wl" || die "$m: the step script failed: $(cat "$d/wl.err")"
	f1=$(minflt "$pid")
	[ -z "$count" ] || prog_stats "$tp" "$d/progs1.json"
	if [ -n "$tp" ]; then
		stop_tracer "$tp" "$m"
		wait "$tp" || die "$m: memtrace-bpf failed: $(cat "$d/mt.err")"
		if [ "$m" = flt ]; then
			# the window outlasted the run: its dump at the end holds
			# every event from attach to stop, as -q's summary counts
			s=$(ls "$d"/dumps/flight-*-end.mtb) || die "$m: no dump at the end: $(tail -5 "$d/mt.err")"
			"$MT" report --keys -i "$s" >"$d/mt.out" || die "$m: the dump's report failed"
		fi
		s=$(grep '^# summary ' "$d/mt.out") || die "$m: no summary line"
		events=$(field "$s" events)
		lost=$(field "$s" lost)
		a=$(field "$(grep '^# event c10:alloc ' "$d/mt.out")" count)
		f=$(field "$(grep '^# event c10:free ' "$d/mt.out")" count)
		c10=$((${a:-0} + ${f:-0}))
	fi
	touch "$SDIR/hold"
	wait "$wl" || die "$m: the step script exited with $?: $(cat "$d/wl.err")"
	res=$(grep '^RESULT ' "$d/wl.out")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$r" \
		"$(field "$res" loop_s)" "$(field "$res" steps)" "$(field "$res" allocs)" \
		"$(field "$res" frees)" "$(field "$res" history)" "$events" "$c10" "$lost" \
		$((f1 - f0)) >>"$([ -n "$count" ] && echo "$CRUNS" || echo "$RUNS")"
	printf 'cuda_cost: %-4s rep %s  %s ms/step  events %s  lost %s  (%ds)\n' \
		"$m" "$r" "$(field "$res" ms_per_step)" "$events" "$lost" $(($(date +%s) - T_START))
}

echo "cuda_cost: work directory $WORK; $REPS repetitions x ${#MODES[@]} modes, $STEPS steps a traced run, $BARE_STEPS the others"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
# a first run, unmeasured: the page cache, and a check that the root runs
"${PIN_WL[@]}" "$STANDIN" -- /usr/bin/python3 "$STAGE/cuda_step.py" --steps 2 \
	>"$WORK/warm.out" 2>&1 || die "warm-up run failed: $(cat "$WORK/warm.out")"
for ((r = 1; r <= REPS; r++)); do
	for ((j = 0; j < ${#MODES[@]}; j++)); do
		run_one "${MODES[$(((j + r - 1) % ${#MODES[@]}))]}" "$r"
	done
	t=$(PIN="${PIN_WL[*]}" "$ROOT/bench/traps.sh" "$WORK") || die "bench/traps.sh failed"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$(field "$t" bare)" "$(field "$t" push)" \
		"$(field "$t" nop5)" "$(field "$t" nop1)" "$(field "$t" ret)" "$(field "$t" sstep)" \
		"$(field "$t" read)" >>"$TRAPS"
	echo "cuda_cost: traps rep $r: $t ns a call"
done
sysctl -qw kernel.bpf_stats_enabled=1
for m in mtq mtn mts flt; do
	run_one "$m" count count
done
sysctl -qw kernel.bpf_stats_enabled="$STATS_OLD"
T_END=$(date +%s)
SUM1=$(standin_sum)

{
	echo "date=$(date)"
	echo "cores=$(nproc)"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "kernel=$(uname -r)"
	echo "pinning=${PIN_WL[*]:-none} (loop), ${PIN_TOOL[*]:-none} (tracer)"
	echo "load=$LOAD0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	echo "tool=$TOOL_DESC"
	echo "torch=python3-torch-cuda $TORCH_VER, Python $PY_VER"
	echo "standin=$SUM0$([ "$SUM0" = "$SUM1" ] || echo " then $SUM1: the stand-ins changed during the run")"
	echo "probed=$SYM_NEW"
	echo "first_insn=${FIRST_INSN:-?}"
	echo "probed_insns=$PROBED_INSNS"
	echo "reps=$REPS"
	echo "steps=$STEPS"
	echo "bare_steps=$BARE_STEPS"
	echo "secs=$((T_END - T_START))"
} >"$WORK/meta.txt"
$PY "$ROOT/bench/cuda_cost_report.py" "$WORK/meta.txt" "$RUNS" "$TRAPS" "$CRUNS" "$WORK" >"$WORK/section.md"
# shellcheck source=bench/section.sh
. "$ROOT/bench/section.sh"
put_section "$OUT" "Cost on a CUDA training step (stand-in)" "$WORK/section.md"
cat "$WORK/section.md"
echo "cuda_cost: wrote its section of $OUT in $((T_END - T_START)) s"
