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
	trace 1 -p "$fx_PID"
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

@test "ctypes from a second Python thread: its own tid" {
	check_python "$TORCH_PY" --thread
	[ "$tid" != "$fx_PID" ]
}

@test "driver layer: the toolkit's stub libcuda fails each call, reported with CUresult names" {
	stub=$CUDA_HOME/lib64/stubs/libcuda.so
	[ -e "$stub" ] || skip "no $stub"
	fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/ctypes_cuda_driver.py" "$stub"
	trace 1 -p "$fx_PID"
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
