# shellcheck shell=bash
# shellcheck disable=SC2034 # its variables are for the scripts sourcing it
# Sourced by the bench scripts once they have set ROOT and WAIT_NAME (their
# name in messages); its functions use MT.

# What the benches run: Debian's python3 with python3-torch 1.13, the two
# functions memtrace-bpf probes for CPU tensors (the anchors probe them
# too), and the serial OpenBLAS for the workload alone where it is there.
PY=/usr/bin/python3
LIB=/usr/lib/x86_64-linux-gnu/libc10.so.1.13.0
SYM_NEW=_ZN3c1025ProfiledCPUMemoryReporter3NewEPvm
SYM_DEL=_ZN3c1025ProfiledCPUMemoryReporter6DeleteEPv
BLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-serial
BLAS_LD=
[ ! -e "$BLAS_DIR/libblas.so.3" ] || BLAS_LD=$BLAS_DIR
# the workloads of bench/workload_train.py, less their --iters: W1
# compute-bound, W2 launch-bound (bench/run.sh says more)
W1_SHAPE="--batch 16 --seq 128 --d-model 256 --ff 1024 --layers 4"
W2_SHAPE="--batch 2 --seq 16 --d-model 64 --ff 256 --layers 4"

# die MESSAGE: the script's name and MESSAGE on stderr, exit 1
die() {
	echo "$WAIT_NAME: $*" >&2
	exit 1
}

# need_root WHY: die unless root, saying WHY root is needed
need_root() {
	[ "$(id -u)" -eq 0 ] || die "run as root ($1)"
}

# whole_numbers VAR...: die unless each VAR holds a whole number above 0
whole_numbers() {
	local v
	for v in "$@"; do
		[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v=${!v}: a whole number above 0"
	done
}

# whole_numbers_or_0 VAR...: die unless each VAR holds one or more whole
# numbers, 0 allowed, separated by spaces: the knobs whose 0 means none,
# or as fast as it can
whole_numbers_or_0() {
	local v re='^ *[0-9]+( +[0-9]+)* *$'
	for v in "$@"; do
		[[ ${!v} =~ $re ]] || die "$v=${!v}: whole numbers, 0 or above"
	done
}

# pin_cpus: PIN_WL, the words that run the workload on the last CPU, and
# PIN_TOOL, those that run a tracer on the others, so that neither takes
# the other's CPU and the workload does not move between CPUs; both empty
# on one CPU or without taskset. With PIN_ROOT set the workload runs in
# that root, with the root's own taskset, which it must have. NCPU: the
# CPUs there are.
pin_cpus() {
	PIN_WL=()
	PIN_TOOL=()
	NCPU=$(nproc)
	if [ "$NCPU" -lt 2 ] || ! command -v taskset >/dev/null; then
		return 0
	fi
	if [ -z "${PIN_ROOT:-}" ]; then
		PIN_WL=(taskset -c $((NCPU - 1)))
	elif [ -x "$PIN_ROOT/usr/bin/taskset" ]; then
		PIN_WL=(/usr/bin/taskset -c $((NCPU - 1)))
	else
		return 0
	fi
	PIN_TOOL=(taskset -c 0-$((NCPU - 2)))
}

# probe_bytes PID: the probed bytes of the probed functions in PID, as
# "0xNN/0xNN"
probe_bytes() {
	$PY "$ROOT/bench/probecheck.py" "$1" "$LIB" "$SYM_NEW" "$SYM_DEL" |
		sed -n 's/.* byte=\(0x..\).*/\1/p' | paste -sd/
}

# check_probes LABEL PID TRACED: PROBE_BYTES, probe_bytes PID, must be
# int3 at both functions (TRACED=yes) or at neither (no), else the script
# dies saying so under LABEL
check_probes() {
	PROBE_BYTES=$(probe_bytes "$2")
	if [ "$3" = yes ]; then
		[ "$PROBE_BYTES" = "0xcc/0xcc" ] ||
			die "$1: probes not in place ($PROBE_BYTES)"
	else
		[ "$PROBE_BYTES" != "0xcc/0xcc" ] ||
			die "$1: a uprobe is still attached ($PROBE_BYTES)"
	fi
}

# make_work NAME: WORK, a fresh directory /tmp/memtrace-NAME.XXXXXX, and
# KIDS, the processes to kill on exit. On exit the script's on_exit runs
# first if it defines one, then the children are killed, the go and hold
# files released and WORK removed (KEEP=1 keeps it).
make_work() {
	WORK=$(mktemp -d "/tmp/memtrace-$1.XXXXXX") || return 1
	KIDS=()
	trap cleanup EXIT
}

cleanup() {
	local p
	if declare -F on_exit >/dev/null; then
		on_exit
	fi
	for p in "${KIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	touch "$WORK/go" "$WORK/hold" 2>/dev/null || true
	if [ "${KEEP:-0}" = 1 ]; then
		echo "$WAIT_NAME: work directory kept: $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}

# take_binary: copy $MT into $WORK, so that a rebuild of the tree while the
# bench runs changes nothing measured, and point MT at the copy. TOOL_DESC
# says what it is: its version and $MT_DESC where set (e.g. the commit it
# was built from), else the tree's commit and whether user/ or bpf/ had
# uncommitted changes.
take_binary() {
	cp "$MT" "$WORK/memtrace-bpf" || return 1
	MT=$WORK/memtrace-bpf
	if [ -n "${MT_DESC:-}" ]; then
		TOOL_DESC="$("$MT" --version | head -1), $MT_DESC"
	else
		TOOL_DESC="$("$MT" --version | head -1), built in this tree at git $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- user bpf 2>/dev/null || echo ' with uncommitted changes in user/ or bpf/')"
	fi
}

# stop_tracer PID NAME: SIGINT, and wait for it; a tracer that ignores it
# for 20 s is reported (with its state) and killed, and counted in STUCK
STUCK=0
stop_tracer() {
	local p=$1 name=$2 i
	kill -INT "$p" 2>/dev/null || true
	for ((i = 0; i < 400; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$p" 2>/dev/null; then
		echo "$WAIT_NAME: $name (pid $p) still running 20 s after SIGINT:" >&2
		grep -E '^(State|SigBlk|SigIgn|SigCgt|SigPnd|ShdPnd)' "/proc/$p/status" >&2 || true
		cat "/proc/$p/wchan" >&2 2>/dev/null && echo >&2
		kill -TERM "$p" 2>/dev/null || true
		sleep 2
		kill -KILL "$p" 2>/dev/null || true
		STUCK=$((STUCK + 1))
	fi
}

# wait_for FILE REGEX SECONDS [PID]: until a line of FILE matches REGEX;
# gives up early when PID (the process that should write it) is gone, and
# then prints what FILE holds, its messages prefixed with the script's name.
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
	echo "$WAIT_NAME: no /$re/ in $file after ${secs}s; it holds:" >&2
	cat "$file" >&2 2>/dev/null || true
	return 1
}

# minflt PID: the process's minor page faults so far
minflt() {
	awk '{ sub(/^.*\) /, ""); print $8 }' "/proc/$1/stat"
}

# prog_stats TRACER FILE: each BPF program TRACER holds, as bpftool's JSON,
# a line each (run_cnt and run_time_ns count while bpf_stats is on)
prog_stats() {
	local id
	$PY "$ROOT/bench/bpfstats.py" "$1" | sed -n 's/^prog id=\([0-9]*\) .*/\1/p' |
		while read -r id; do
			bpftool -j prog show id "$id" && echo
		done >"$2"
}
