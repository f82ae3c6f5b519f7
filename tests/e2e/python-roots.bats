#!/usr/bin/env bats
# Today's Debian Pythons without PyTorch, from the roots scripts/debian-root.sh
# builds once per machine: trixie's CPython 3.13, sid's 3.14 and bare 3.15.
# Each target runs in a container of its root (helpers.bash's in_root) and
# is attached from the host with -p: ctypes calls into the real libcudart,
# staged into the root with the fixtures, as python.bats does for
# 3.10-3.13 on the host; and --trace-exceptions. torch in these roots:
# roots.bats.

load helpers

setup_file() {
	need_roots trixie sid
}

teardown() {
	root_unstage
	[ -n "${MT_PID:-}" ] && kill "$MT_PID" 2>/dev/null || true
}

line_of() {
	grep -n -- "$2" "$ROOT/tests/fixtures/$1" | head -1 | cut -d: -f1
}

# stage ROOTDIR FIXTURE...: the fixtures and the toolkit's libcudart in a
# stage of ROOTDIR, entered as a container; sets FIXPY to ctypes_cudart.py
# there
stage() {
	local root=$1 f
	local -a files=("$CUDART")
	shift
	for f in "$@"; do
		files+=("$ROOT/tests/fixtures/$f")
	done
	root_stage "$root" "${files[@]}"
	in_root "$root" container
	FIXPY=$STAGE/ctypes_cudart.py
}

# held_trace N ROOTDIR PY ARGS...: ctypes_cudart.py ARGS under PY in a
# container of ROOTDIR, traced with -p, kept alive until N allocations of
# 1310723 bytes are in the trace
held_trace() {
	local n=$1 root=$2 py=$3
	shift 3
	root_unstage
	stage "$root" ctypes_cudart.py
	HELD=1 fixture_in_root fx "${IN_ROOT[@]}" "$py" "$FIXPY" "$@" \
		"$STAGE/libcudart.so.13" 1310723
	trace 1 --keys -p "$fx_PID"
	release fx
	unhold fx "$n" ': cudart:cudaMalloc: size=1310723 '
	finish
	[ "$MT_STATUS" -eq 0 ]
	! grep -q 'not supported' "$BATS_TEST_TMPDIR/trace.err"
}

# check_stacks ROOTDIR PY MINOR: lines, generator, threads with the GIL
# released
check_stacks() {
	local root=$1 py=$2 minor=$3 malloc_line
	malloc_line=$(line_of ctypes_cudart.py 'ret = lib.cudaMalloc(')
	echo "# $py ($root)" >&3

	held_trace 1 "$root" "$py" --depth 2
	stack_of 1310723 >"$BATS_TEST_TMPDIR/stack"
	cat "$BATS_TEST_TMPDIR/stack"
	grep -q "^# python pid=$fx_PID version=3\\.$minor$" "$TRACE"
	[ "$(sed -n 1p "$BATS_TEST_TMPDIR/stack")" = "do_calls $FIXPY:$malloc_line" ]
	[ "$(sed -n 2p "$BATS_TEST_TMPDIR/stack")" = "innermost $FIXPY:$(line_of ctypes_cudart.py '^        do_calls(lib, sizes)')" ]
	[ "$(sed -n 3p "$BATS_TEST_TMPDIR/stack" | cut -d' ' -f1)" = mt_frame ]
	[ "$(sed -n 4p "$BATS_TEST_TMPDIR/stack" | cut -d' ' -f1)" = mt_frame ]
	[ "$(sed -n 5p "$BATS_TEST_TMPDIR/stack" | cut -d' ' -f1)" = calls ]
	[ "$(tail -1 "$BATS_TEST_TMPDIR/stack")" = "<module> $FIXPY:$(line_of ctypes_cudart.py '^    main()')" ]
	events cudart:cudaMalloc | grep -q ' phase=other module=-$'

	held_trace 1 "$root" "$py" --generator
	[ "$(stack_of 1310723 | cut -d' ' -f1 | head -3 | paste -sd' ')" = "do_calls gen_calls innermost" ]

	# a thread that released the GIL, then exited, then the main thread;
	# 3.14 calls run through Context.run: a shim frame mid-stack
	held_trace 2 "$root" "$py" --thread --after-thread
	[ "$(events cudart:cudaMalloc | grep -c ' size=1310723 ')" -eq 2 ]
	[ "$(stack_of 1310723 | cut -d' ' -f1 | paste -sd' ')" = "do_calls innermost calls run _bootstrap_inner _bootstrap" ]
	awk '/^[^#\t].* size=1310723 /{getline; print}' "$TRACE" >"$BATS_TEST_TMPDIR/tops"
	[ "$(grep -c "^	do_calls ($FIXPY:$malloc_line)$" "$BATS_TEST_TMPDIR/tops")" -eq 2 ]
	grep -A9 ' size=1310723 ' "$TRACE" | grep -q '^	<module> '
}

@test "CPython 3.15 in a container: exact lines, a generator, threads with the GIL released" {
	check_stacks "$ROOT_SID" /usr/bin/python3.15 15
}

@test "CPython 3.14 in a container: exact lines, a generator, threads with the GIL released" {
	check_stacks "$ROOT_SID" /usr/bin/python3.14 14
}

@test "CPython 3.13 (trixie) in a container: exact lines, a generator, threads with the GIL released" {
	check_stacks "$ROOT_TRIXIE" /usr/bin/python3.13 13
}

# check_raise ROOTDIR PY: --trace-exceptions under PY in a container of
# ROOTDIR. Debian's 3.13 and 3.14 name no _PyErr_SetObject: it is found
# through the PyErr_SetObject that jumps to it; 3.15 exports it.
check_raise() {
	local root=$1 py=$2 line
	stage "$root" raise_exc.py
	HELD=1 fixture_in_root fx "${IN_ROOT[@]}" "$py" "$STAGE/raise_exc.py"
	trace 0 --keys -p "$fx_PID" --trace-exceptions ValueError,KeyError
	wait_for "$BATS_TEST_TMPDIR/trace.out" '^# attach .*python.* probes=[1-9]' 30
	release fx
	settle fx '^raise '
	finish
	cat "$BATS_TEST_TMPDIR/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	! grep -q 'not probed' "$BATS_TEST_TMPDIR/trace.err"
	read -r _ line < <(grep '^raise ' "$BATS_TEST_TMPDIR/fx.out")
	[ "$(grep -c ': python:raise: type=ValueError ' "$TRACE")" -eq 3 ]
	[ "$(grep -c ': python:raise: type=KeyError ' "$TRACE")" -eq 1 ]
	grep -qF "	raise_it ($STAGE/raise_exc.py:$line)" "$TRACE"
}

@test "--trace-exceptions on CPython 3.15 in a container: the type and the line of the raise" {
	check_raise "$ROOT_SID" /usr/bin/python3.15
}

@test "--trace-exceptions on CPython 3.14 in a container: found through PyErr_SetObject" {
	check_raise "$ROOT_SID" /usr/bin/python3.14
}

@test "--trace-exceptions on CPython 3.13 (trixie) in a container: found through PyErr_SetObject" {
	check_raise "$ROOT_TRIXIE" /usr/bin/python3.13
}

# check_module_line ROOTDIR PY: a script as people write them, its loop at
# the top level right after `import torch`, ends before the tracer handles
# its last events: its <module> code object is freed as its top-level
# code ends. Every allocation of the loop has the loop's line, two runs
# in a row (issue 34: 3.13 read <module> (t.py:-1), 3.14 [unknown] in some
# runs).
check_module_line() {
	local root=$1 py=$2 run n
	echo "# $py ($root)" >&3
	root_stage "$root"
	printf '%s\n' 'import torch' 'for i in range(5):' \
		'    x = torch.empty(327685 + i)' >"$root$STAGE/toplevel.py"
	in_root "$root" privileged
	for run in 1 2; do
		"$MT" --keys -- "${IN_ROOT[@]}" "$py" "$STAGE/toplevel.py" \
			>"$BATS_TEST_TMPDIR/trace.out" 2>"$BATS_TEST_TMPDIR/trace.err"
		grep -A1 -E ': c10:cpu_alloc: .* size=13107[45][0-9] ' "$BATS_TEST_TMPDIR/trace.out" |
			grep -v -- '^--' | grep -v ': c10:cpu_alloc: ' >"$BATS_TEST_TMPDIR/tops"
		cat "$BATS_TEST_TMPDIR/tops"
		n=$(grep -cx "	<module> ($STAGE/toplevel.py:3)" "$BATS_TEST_TMPDIR/tops")
		[ "$n" -eq 5 ] || { echo "run $run: $n of 5 with the loop's line"; return 1; }
	done
}

@test "module-level code on CPython 3.13 (trixie): a short script's top-level loop has its line, run after run" {
	check_module_line "$ROOT_TRIXIE" /usr/bin/python3.13
}

@test "module-level code on CPython 3.14 (sid): a short script's top-level loop has its line, run after run" {
	check_module_line "$ROOT_SID" /usr/bin/python3.14
}
