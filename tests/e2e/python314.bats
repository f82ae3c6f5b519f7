#!/usr/bin/env bats
# Today's Debian Pythons and PyTorch, from the roots scripts/debian-root.sh
# builds once per machine: trixie (CPython 3.13, torch 2.6) and sid (CPython
# 3.14 with torch 2.14, and a bare 3.15). Each target runs in a container
# as runtimes make one (its own mount namespace, the root bound and made /
# with pivot_root, /proc mounted, the old root unmounted) and is attached
# from the host with -p. 3.15 has no torch: ctypes calls into the real
# libcudart, as python.bats does for 3.10-3.13.

load helpers

setup_file() {
	SID=$("$ROOT/scripts/debian-root.sh" sid)
	TRIXIE=$("$ROOT/scripts/debian-root.sh" trixie)
	CTR=$BATS_FILE_TMPDIR/container.sh
	# container.sh ROOT CMD...: CMD in a container of ROOT; the fixtures
	# are at /mnt/fixtures, the CUDA libraries at /mnt/cuda, and the test's
	# folder at its own path (MT_GO and MT_HOLD name files there). The
	# root has no umount: its own Python unmounts the old root, then
	# becomes CMD, so that the process keeps its pid.
	cat >"$CTR" <<'EOF'
#!/bin/bash
set -e
root=$1
shift
exec unshare -m --propagation private /bin/bash -c '
set -e
root=$1 dir=$2 fixtures=$3 cuda=$4
shift 4
new=$(mktemp -d "$dir/.root.XXXXXX")
mount --bind "$root" "$new"
mount -t tmpfs none "$new/tmp"
mount -t tmpfs none "$new/mnt"
mkdir -p "$new$dir" "$new/tmp/.old" "$new/mnt/fixtures" "$new/mnt/cuda"
mount --bind "$dir" "$new$dir"
mount --bind "$fixtures" "$new/mnt/fixtures"
mount --bind "$cuda" "$new/mnt/cuda"
mount -t proc proc "$new/proc"
cd "$new"
pivot_root . tmp/.old
cd /
exec "$1" -c "import ctypes, os, sys
if ctypes.CDLL(None).umount2(b\"/tmp/.old\", 2):
    sys.exit(\"container: umount /tmp/.old failed\")
os.execv(sys.argv[1], sys.argv[1:])" "$@"
' container "$root" "$BATS_TEST_TMPDIR" "$FIXTURES" "$CUDA_LIB" "$@"
EOF
	chmod +x "$CTR"
	export SID TRIXIE CTR
}

FIXPY=/mnt/fixtures/ctypes_cudart.py

# ctr ROOT CMD...: the command line of CMD in a container of ROOT
ctr() {
	echo env BATS_TEST_TMPDIR="$BATS_TEST_TMPDIR" FIXTURES="$ROOT/tests/fixtures" \
		CUDA_LIB="$CUDA_HOME/lib64" "$CTR" "$@"
}

line_of() {
	grep -n -- "$2" "$ROOT/tests/fixtures/$1" | head -1 | cut -d: -f1
}

# the stack lines under the first cudaMalloc event of size $1, as
# "function file:line" (the qualname's last part)
stack_of() {
	awk -v size="$1" '
		!found && /^[^#\t].*: cudart:cudaMalloc: / && index($0, " size=" size " ") { found = 1; next }
		found && /^\t/ { sub(/^\t/, ""); print; next }
		found { exit }' "$TRACE" |
		sed -E 's/^([^ ]*\.)?([^. ]+) \((.*):([0-9]+)\)$/\2 \3:\4/'
}

# held_trace N ROOT PY ARGS...: ctypes_cudart.py ARGS under PY in a
# container of ROOT, traced with -p, kept alive until N allocations of
# 1310723 bytes are in the trace
held_trace() {
	local n=$1 root=$2 py=$3
	shift 3
	# shellcheck disable=SC2046
	HELD=1 fixture fx $(ctr "$root") "$py" "$FIXPY" "$@" /mnt/cuda/libcudart.so.13 1310723
	trace 1 -p "$fx_PID"
	release fx
	unhold fx "$n" ': cudart:cudaMalloc: size=1310723 '
	finish
	[ "$MT_STATUS" -eq 0 ]
	! grep -q 'not supported' "$BATS_TEST_TMPDIR/trace.err"
}

# check_stacks ROOT PY MINOR: lines, generator, threads with the GIL released
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
	check_stacks "$SID" /usr/bin/python3.15 15
}

@test "CPython 3.14 in a container: exact lines, a generator, threads with the GIL released" {
	check_stacks "$SID" /usr/bin/python3.14 14
}

@test "CPython 3.13 (trixie) in a container: exact lines, a generator, threads with the GIL released" {
	check_stacks "$TRIXIE" /usr/bin/python3.13 13
}

# check_raise ROOT PY: --trace-exceptions under PY in a container of ROOT.
# Debian's 3.13 and 3.14 name no _PyErr_SetObject: it is found through the
# PyErr_SetObject that jumps to it; 3.15 exports it.
check_raise() {
	local root=$1 py=$2 line
	# shellcheck disable=SC2046
	HELD=1 fixture fx $(ctr "$root") "$py" /mnt/fixtures/raise_exc.py
	trace 0 -p "$fx_PID" --trace-exceptions ValueError,KeyError
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
	grep -qF "	raise_it (/mnt/fixtures/raise_exc.py:$line)" "$TRACE"
}

@test "--trace-exceptions on CPython 3.15 in a container: the type and the line of the raise" {
	check_raise "$SID" /usr/bin/python3.15
}

@test "--trace-exceptions on CPython 3.14 in a container: found through PyErr_SetObject" {
	check_raise "$SID" /usr/bin/python3.14
}

@test "--trace-exceptions on CPython 3.13 (trixie) in a container: found through PyErr_SetObject" {
	check_raise "$TRIXIE" /usr/bin/python3.13
}

# check_model ROOT VERSION: attrib_model.py under ROOT's python3 and torch,
# as attrib.bats asserts it on Debian 12's 3.11 and torch 1.13
check_model() {
	local root=$1 minor=$2 mline
	# shellcheck disable=SC2046
	HELD=1 fixture fx $(ctr "$root") /usr/bin/python3 /mnt/fixtures/attrib_model.py --steps 2
	trace 1 -p "$fx_PID"
	release fx
	settle fx '^root '
	finish
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
	grep -q "^# python pid=$fx_PID version=3\\.$minor$" "$TRACE"
	sized() { grep -E "^[^#	].* size=$1 " "$TRACE" | grep ': c10:cpu_alloc: ' || true; }
	# forward activations: every one named by its Linear's module path
	while read -r _ name bytes; do
		lines=$(sized "$bytes" | grep ' phase=forward ')
		echo "act $name: $lines"
		grep -q " module=$name\$" <<<"$lines"
		# the rest is the ReLU's output, of the same size
		[ "$(grep -v -e " module=$name\$" -e ' module=[^ ]*\.act$' <<<"$lines" | grep -c .)" -eq 0 ]
	done < <(grep '^act ' "$MODEL")
	# weight gradients: backward, on the module whose forward made the node
	while read -r _ name bytes; do
		line=$(sized "$bytes" | grep ' phase=backward ' | head -1)
		echo "grad $name: $line"
		[[ "$line" == *" module=$name node=AddmmBackward0" ]]
		[ "$(sized "$bytes" | grep -c ' phase=optimizer ')" -ge 2 ]
	done < <(grep '^weight ' "$MODEL")
	# the file and line that made a tensor
	read -r _ mline bytes < <(grep '^mark ' "$MODEL")
	grep -A1 -E "^[^#	].*: c10:cpu_alloc: .* size=$bytes " "$TRACE" |
		grep -qxF "	make_mark (/mnt/fixtures/attrib_model.py:$mline)"
}

@test "torch 2.14 on CPython 3.14 in a container: module paths, phases, backward -> module, lines" {
	check_model "$SID" 14
}

@test "torch 2.6 on CPython 3.13 (trixie) in a container: module paths, phases, backward -> module, lines" {
	check_model "$TRIXIE" 13
}
