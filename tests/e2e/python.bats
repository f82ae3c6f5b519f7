#!/usr/bin/env bats
# Python calling the real libcudart through ctypes, which releases the GIL
# around the call as PyTorch does, on every CPython at hand.

load helpers

pythons() {
	ls -d /root/.pyenv/versions/3.1[0-3].*/bin/python3 2>/dev/null
	echo "$TORCH_PY"
}

check_python() {
	local py=$1
	shift
	fixture fx "$py" "$ROOT/tests/fixtures/ctypes_cudart.py" "$@" "$CUDART" 1310723 524309
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	tid=$(awk '/^op=malloc /{sub("tid=", "", $5); print $5; exit}' "$BATS_TEST_TMPDIR/fx.out")
	for size in 1310723 524309; do
		events cudart:cudaMalloc | grep -q "^[^ ]* $fx_PID/$tid .* size=$size dev=cuda:? ret=35 err=cudaErrorInsufficientDriver "
	done
}

@test "ctypes -> real libcudart: events on every CPython 3.10-3.13 and Debian's" {
	n=0
	while read -r py; do
		echo "# $py: $("$py" -V 2>&1)" >&3
		check_python "$py"
		n=$((n + 1))
	done < <(pythons)
	[ "$n" -ge 1 ]
}

FIXPY=$ROOT/tests/fixtures/ctypes_cudart.py

# held_trace N PY ARGS...: trace ctypes_cudart.py ARGS under PY, keeping it
# alive until N allocations of 1310723 bytes are in the trace
held_trace() {
	local n=$1 py=$2
	shift 2
	HELD=1 fixture fx "$py" "$FIXPY" "$@" "$CUDART" 1310723
	trace 1 --keys -p "$fx_PID"
	release fx
	unhold fx "$n" ': cudart:cudaMalloc: size=1310723 '
	finish
	[ "$MT_STATUS" -eq 0 ]
}

line_of() {
	grep -n -- "$1" "$FIXPY" | head -1 | cut -d: -f1
}

@test "Python stacks with the GIL released, on every CPython: frames, lines, generator, thread" {
	malloc_line=$(line_of 'ret = lib.cudaMalloc(')
	while read -r py; do
		echo "# $py" >&3
		held_trace 1 "$py" --depth 2
		stack_of 1310723 >"$BATS_TEST_TMPDIR/stack"
		cat "$BATS_TEST_TMPDIR/stack"
		grep -q "^# python pid=$fx_PID version=3\\.1[0-3]$" "$TRACE"
		[ "$(sed -n 1p "$BATS_TEST_TMPDIR/stack")" = "do_calls $FIXPY:$malloc_line" ]
		[ "$(sed -n 2p "$BATS_TEST_TMPDIR/stack" | cut -d' ' -f1)" = innermost ]
		[ "$(sed -n 3p "$BATS_TEST_TMPDIR/stack" | cut -d' ' -f1)" = mt_frame ]
		[ "$(sed -n 4p "$BATS_TEST_TMPDIR/stack" | cut -d' ' -f1)" = mt_frame ]
		[ "$(sed -n 5p "$BATS_TEST_TMPDIR/stack" | cut -d' ' -f1)" = calls ]
		[ "$(tail -1 "$BATS_TEST_TMPDIR/stack")" = "<module> $FIXPY:$(line_of '^    main()')" ]
		events cudart:cudaMalloc | grep -q ' phase=other module=-$'

		held_trace 1 "$py" --generator
		[ "$(stack_of 1310723 | cut -d' ' -f1 | head -3 | paste -sd' ')" = "do_calls gen_calls innermost" ]

		# a thread that released the GIL, then exited, then the main thread
		held_trace 2 "$py" --thread --after-thread
		[ "$(events cudart:cudaMalloc | grep -c ' size=1310723 ')" -eq 2 ]
		stack_of 1310723 | cut -d' ' -f1 | grep -q '_bootstrap'
		awk '/^[^#\t].* size=1310723 /{getline; print}' "$TRACE" >"$BATS_TEST_TMPDIR/tops"
		[ "$(grep -c '^	do_calls ' "$BATS_TEST_TMPDIR/tops")" -eq 2 ]
		grep -A9 ' size=1310723 ' "$TRACE" | grep -q '^	<module> '
	done < <(pythons)
}

@test "a stack deeper than the cap is cut and marked" {
	held_trace 1 "$TORCH_PY" --depth 100
	[ "$(stack_of 1310723 | grep -vc truncated)" -eq 64 ]
	stack_of 1310723 | grep -q '^\[truncated at 64 frames\]$'
}

@test "ctypes from a second Python thread: its own tid" {
	check_python "$TORCH_PY" --thread
	[ "$tid" != "$fx_PID" ]
}

@test "driver layer: the toolkit's stub libcuda fails each call, reported with CUresult names" {
	stub=$CUDA_HOME/lib64/stubs/libcuda.so
	[ -e "$stub" ] || skip "no $stub"
	fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/ctypes_cuda_driver.py" "$stub"
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	ret=$(awk '/^op=cuMemAlloc_v2 /{sub("ret=", "", $3); print $3}' "$BATS_TEST_TMPDIR/fx.out")
	[ "$ret" -ne 0 ]
	events cuda:cuMemAlloc_v2 | grep -q " size=7340033 dev=cuda:? ret=$ret err=CUDA_ERROR_STUB_LIBRARY "
	events cuda:cuMemFree_v2 | grep -q " ptr=0xdead000 size=? dev=cuda:? ret=$ret err=CUDA_ERROR_STUB_LIBRARY "
	# the device comes from CUmemAllocationProp.location.id
	events cuda:cuMemCreate | grep -q " size=2097152 dev=cuda:1 ret=$ret err=CUDA_ERROR_STUB_LIBRARY "
	events cuda:cuMemMap | grep -q " ptr=0x7f0000000000 size=2097152 ret=$ret err=CUDA_ERROR_STUB_LIBRARY handle=0x1234 "
}
