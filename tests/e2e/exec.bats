#!/usr/bin/env bats
# A traced process that execs into another program is followed: a line says
# so, the new image's CPython is read with its own layout, and what the old
# image held is freed, live and in a record read back. pyenv's CPython 3.11
# and 3.12 through ctypes on the fake libcudart.

load helpers
bats_require_minimum_version 1.5.0

FIXPY=$ROOT/tests/fixtures/exec_python.py
PY311=/root/.pyenv/versions/3.11.7/bin/python3
PY312=/root/.pyenv/versions/3.12.1/bin/python3

setup() {
	local py
	for py in "$PY311" "$PY312"; do
		[ -x "$py" ] || {
			echo "no $py (pyenv)" >&2
			return 1
		}
	done
}

teardown() {
	if [ -n "${fx_PID:-}" ]; then
		kill "$fx_PID" 2>/dev/null || true
	fi
}

line_of() {
	grep -n -- "$1" "$FIXPY" | head -1 | cut -d: -f1
}

# the line of the fixture's Nth cudaMalloc call
malloc_line() {
	grep -n 'ret = lib.cudaMalloc(' "$FIXPY" | sed -n "$1p" | cut -d: -f1
}

minor() {
	"$1" -c 'import sys; print(sys.version_info.minor)'
}

# a table of the report in file $1: the lines under its title $2
table() {
	awk -v t="$2" 'index($0, t) == 1 { on = 1; next }
		on && /^$/ { exit } on' "$1"
}

# exec_run FROM TO MODE [ARGS...]: the fixture under FROM allocates 1000003
# bytes (977 KiB) from before_exec and keeps them, then execs TO, which
# allocates 2000003 from after_exec; traced by memtrace-bpf ARGS... MODE
# PID (-p, --children), or ARGS... -- the fixture (MODE --). With REC=1 a
# recorder follows it too (-p), into t.mtb. Each image goes on once its
# allocation is in the trace with its stack (the recorder's too): an event
# still on its way when its image goes cannot be named (README, Known limits), and the
# image after is what this is about.
exec_run() {
	local from=$1 to=$2 mode=$3
	local -a cmd=("$from" "$FIXPY" "$FIX/fake/libcudart.so.13" 1000003 "$to" 2000003)
	shift 3
	export MT_EXEC_GO=$BATS_TEST_TMPDIR/exec.go
	export MT_AFTER_GO=$BATS_TEST_TMPDIR/after.go
	rm -f "$MT_EXEC_GO" "$MT_AFTER_GO" "$BATS_TEST_TMPDIR/fx.hold"
	if [ "$mode" = -- ]; then
		export MT_HOLD=$BATS_TEST_TMPDIR/fx.hold
		trace 0 "$@" -- "${cmd[@]}"
		wait_for "$BATS_TEST_TMPDIR/trace.out" '^# memtrace-bpf '
		fx_PID=$(sed -nE 's/^# memtrace-bpf [^:]*: pid=([0-9]+).*/\1/p' "$BATS_TEST_TMPDIR/trace.out")
	else
		HELD=1 fixture fx "${cmd[@]}"
		if [ -n "${REC:-}" ]; then
			"$MT" record -o "$BATS_TEST_TMPDIR/t.mtb" -p "$fx_PID" \
				>"$BATS_TEST_TMPDIR/rec.out" 2>"$BATS_TEST_TMPDIR/rec.err" &
			rec=$!
			wait_for "$BATS_TEST_TMPDIR/rec.err" '^# attach .*cudart'
		fi
		trace 1 "$@" "$mode" "$fx_PID"
		release fx
	fi
	wait_for "$BATS_TEST_TMPDIR/trace.out" '^	before_exec '
	[ -z "${REC:-}" ] || recorded '^	before_exec '
	touch "$MT_EXEC_GO"
	# (the tracer's errors, if it never comes)
	wait_for "$BATS_TEST_TMPDIR/trace.out" "^# python pid=$fx_PID version=3\\.$(minor "$to")\$" ||
		{ cat "$BATS_TEST_TMPDIR/trace.err" >&2 && false; }
	[ -z "${REC:-}" ] ||
		wait_for "$BATS_TEST_TMPDIR/rec.err" "^# python pid=$fx_PID version=3\\.$(minor "$to")\$"
	touch "$MT_AFTER_GO"
	wait_for "$BATS_TEST_TMPDIR/trace.out" '^	after_exec '
	[ -z "${REC:-}" ] || recorded '^	after_exec '
	touch "$BATS_TEST_TMPDIR/fx.hold"
	finish
	cat "$TRACE" "$BATS_TEST_TMPDIR/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	if [ -n "${REC:-}" ]; then
		wait "$rec"
	fi
	grep -q "^# python pid=$fx_PID version=3\\.$(minor "$from")\$" "$TRACE"
	grep -q "^# python pid=$fx_PID version=3\\.$(minor "$to")\$" "$TRACE"
}

# recorded PATTERN: until a line of the record so far matches (a record
# being written reads up to its last whole block)
recorded() {
	local i
	for ((i = 0; i < 1200; i++)); do
		"$MT" script -i "$BATS_TEST_TMPDIR/t.mtb" 2>/dev/null | grep -q -- "$1" && return 0
		sleep 0.05
	done
	echo "no /$1/ in the record" >&2
	return 1
}

# exec_line TO OUT: OUT says that the fixture exec'd TO, freeing 977 KiB
exec_line() {
	grep -qE "^# exec pid=$fx_PID: now python3 \\(/.*/python3\\.$(minor "$1")\\): what it held before is freed: allocs=1 bytes=1000003\$" "$2"
}

# check_lines TO OUT: the event lines of a trace (or script) OUT of the run
# into TO
check_lines() {
	local to=$1 out=$2 n_old n_exec n_new
	# the line, between the old image's event and the new one's
	exec_line "$to" "$out"
	n_old=$(grep -n ': cudart:cudaMalloc: .* size=1000003 ' "$out" | cut -d: -f1)
	n_exec=$(grep -n "^# exec pid=$fx_PID:" "$out" | cut -d: -f1)
	n_new=$(grep -n ': cudart:cudaMalloc: .* size=2000003 ' "$out" | cut -d: -f1)
	[ "$n_old" -lt "$n_exec" ]
	[ "$n_exec" -lt "$n_new" ]
	# both images' stacks, each read with its own layout
	TRACE=$out
	stack_of 1000003 >"$BATS_TEST_TMPDIR/stack"
	[ "$(sed -n 1p "$BATS_TEST_TMPDIR/stack")" = "before_exec $FIXPY:$(malloc_line 1)" ]
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/stack")" = "main $FIXPY:$(line_of '^        before_exec(lib, size)')" ]
	stack_of 2000003 >"$BATS_TEST_TMPDIR/stack"
	[ "$(sed -n 1p "$BATS_TEST_TMPDIR/stack")" = "after_exec $FIXPY:$(malloc_line 2)" ]
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/stack")" = "main $FIXPY:$(line_of '^    after_exec(lib, size)')" ]
	[ "$(sed -n 3p "$BATS_TEST_TMPDIR/stack")" = "<module> $FIXPY:$(line_of '^    main()')" ]
	! grep -q 'unknown' "$out"
}

# check_alive OUT: the report in OUT lists what the new image holds as
# alive at the end, not what the old image held
check_alive() {
	table "$1" 'Still alive when the trace ended' >"$BATS_TEST_TMPDIR/alive"
	cat "$BATS_TEST_TMPDIR/alive"
	grep -q 'after_exec' "$BATS_TEST_TMPDIR/alive"
	! grep -qE 'before_exec|977 KiB' "$BATS_TEST_TMPDIR/alive"
}

@test "exec from CPython 3.11 into 3.12: followed, read with 3.12's layout, the old image's memory freed; a record read back agrees" {
	REC=1 exec_run "$PY311" "$PY312" -p
	check_lines "$PY312" "$TRACE"
	check_alive "$TRACE"
	live=$TRACE
	run --separate-stderr "$MT" script -i "$BATS_TEST_TMPDIR/t.mtb"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/script.out"
	check_lines "$PY312" "$BATS_TEST_TMPDIR/script.out"
	run --separate-stderr "$MT" report -i "$BATS_TEST_TMPDIR/t.mtb"
	[ "$status" -eq 0 ]
	echo "$output" >"$BATS_TEST_TMPDIR/report.out"
	grep -q "^# record python: pid=$fx_PID version=3.11\$" "$BATS_TEST_TMPDIR/report.out"
	grep -q "^# record python: pid=$fx_PID version=3.12\$" "$BATS_TEST_TMPDIR/report.out"
	exec_line "$PY312" "$BATS_TEST_TMPDIR/report.out"
	check_alive "$BATS_TEST_TMPDIR/report.out"
	diff <(table "$live" 'Still alive when the trace ended') \
		<(table "$BATS_TEST_TMPDIR/report.out" 'Still alive when the trace ended')
}

@test "exec from CPython 3.12 into 3.11: followed, read with 3.11's layout; the figures lose what the old image held" {
	exec_run "$PY312" "$PY311" -p --keys
	check_lines "$PY311" "$TRACE"
	# what is alive, and the account's current bytes and peak: the old
	# image's 1000003 bytes are in none
	grep -qE "^# device pid=$fx_PID dev=cuda:\\? source=cudart current=2000003 peak=2000003\$" "$TRACE"
	grep -q '^# live allocations=1 ' "$TRACE"
	grep -qE "^# live pid=$fx_PID event=cudart:cudaMalloc size=2000003 " "$TRACE"
	! grep -qE '^# live .*size=1000003' "$TRACE"
}

@test "--children: the launcher's exec into another CPython is followed" {
	exec_run "$PY311" "$PY312" --children
	grep -q "^# follow pid=$fx_PID comm=python3 (launcher)\$" "$TRACE"
	check_lines "$PY312" "$TRACE"
	check_alive "$TRACE"
}

@test "-- COMMAND: the command's exec into another CPython is followed, not the one that started it" {
	exec_run "$PY311" "$PY312" --
	[ "$(grep -c '^# exec ' "$TRACE")" -eq 1 ]
	check_lines "$PY312" "$TRACE"
	check_alive "$TRACE"
}

@test "--children: a child that execs at once is followed under the name it forked with, then its exec" {
	# CI saw "comm=python3 (forked)" for a bash child that had run
	# execve before the tracer read its name from /proc
	# it waits on a fifo: a polling loop's own sleeps would be children
	mkfifo "$BATS_TEST_TMPDIR/go"
	cat >"$BATS_TEST_TMPDIR/launcher.sh" <<-EOF
		read -r _ <"$BATS_TEST_TMPDIR/go"
		for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		        /bin/sleep 1 &
		done
		wait
	EOF
	bash "$BATS_TEST_TMPDIR/launcher.sh" &
	fx_PID=$!
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 0 --children "$fx_PID" -q
	wait_for "$BATS_TEST_TMPDIR/trace.err" "^# follow pid=$fx_PID comm=bash \\(launcher\\)\$" 60
	echo go >"$BATS_TEST_TMPDIR/go"
	wait "$fx_PID"
	fx_PID=
	finish
	cat "$BATS_TEST_TMPDIR/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	# every sleep: forked as bash, then its exec, in that order
	local pids pid
	pids=$(sed -nE 's/^# exec pid=([0-9]+): now sleep \(\/usr\/bin\/sleep\): .*/\1/p' "$BATS_TEST_TMPDIR/trace.err")
	[ "$(wc -w <<<"$pids")" -eq 20 ]
	for pid in $pids; do
		grep -E "^# (follow|exec) pid=$pid[: ]" "$BATS_TEST_TMPDIR/trace.err" | head -1 |
			grep -qx "# follow pid=$pid comm=bash (forked)"
	done
	! grep -q 'comm=sleep (forked)' "$BATS_TEST_TMPDIR/trace.err"
}
