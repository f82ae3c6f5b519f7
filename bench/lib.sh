# shellcheck shell=bash
# Sourced by bench/run.sh, bench/cost.sh and bench/sample_error.sh once they
# have set WAIT_NAME (their name in messages) and MT.

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
# shellcheck disable=SC2034 # TOOL_DESC is for the scripts that source this
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
