#!/usr/bin/env bats
# The CUDA runtime layer: the real libcudart (no GPU, so every allocation
# fails: the out-of-memory path for real) and the stand-in libcudart that
# serves allocations from host memory (the only stand-in: no GPU here).

load helpers

@test "real libcudart: failed cudaMalloc shows size, ret and error name" {
	fixture fx "$FIX/cudart_calls" malloc 1048576 malloc 3333 host 4096
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	mapfile -t lines < <(events cudart:cudaMalloc)
	[ "${#lines[@]}" -eq 2 ]
	# attached to a running process: its current device is not known
	[[ "${lines[0]}" == *" size=1048576 dev=cuda:? ret=35 err=cudaErrorInsufficientDriver "* ]]
	[[ "${lines[1]}" == *" size=3333 "*" ret=35 err=cudaErrorInsufficientDriver "* ]]
	[[ "${lines[0]}" == *" caller=cudart_calls" ]]
	# perf script order: comm pid/tid [cpu] secs.usecs: event: keys
	[[ "${lines[0]}" =~ ^cudart_calls\ $fx_PID/$fx_PID\ \[[0-9]{3}\]\ [0-9]+\.[0-9]{6}:\ cudart:cudaMalloc:\  ]]
	host=$(events cudart:cudaMallocHost)
	[[ "$host" == *" size=4096 dev=host ret=35 err=cudaErrorInsufficientDriver "* ]]
	grep -q '^# failed event=cudart:cudaMalloc ret=35 err=cudaErrorInsufficientDriver count=2 bytes=1051909$' "$TRACE"
	# no driver is no shortage of memory: failed calls, not OOMs
	[ "$(grep -c '^# OOM' "$TRACE")" -eq 0 ]
	grep -q '^# oom failed_allocations=0 ' "$TRACE"
	grep -q '^# live allocations=0 ' "$TRACE"
}

@test "stand-in libcudart: exact pointers, sizes, pairing, streams, leak" {
	LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" setdevice 0 \
		malloc 1048576 malloc 2000000 mallocasync 524288 0x5a5a \
		host 8192 managed 65536 free 0 freeasync 2 0x5a5a freehost 3 \
		setdevice 1 malloc 4608 free 5
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q "lib=$FIX/fake/libcudart.so.13" "$TRACE"
	p0=$(awk '/^op=malloc size=1048576 /{print $3}' "$BATS_TEST_TMPDIR/fx.out")
	p1=$(awk '/^op=malloc size=2000000 /{print $3}' "$BATS_TEST_TMPDIR/fx.out")
	p2=$(awk '/^op=mallocasync /{print $3}' "$BATS_TEST_TMPDIR/fx.out")
	p3=$(awk '/^op=host /{print $3}' "$BATS_TEST_TMPDIR/fx.out")
	[ -n "$p0" ] && [ -n "$p1" ] && [ -n "$p2" ] && [ -n "$p3" ]
	events cudart:cudaMalloc | grep -q " $p0 size=1048576 dev=cuda:0 ret=0 caller=cudart_calls$"
	events cudart:cudaMalloc | grep -q " $p1 size=2000000 dev=cuda:0 ret=0 caller=cudart_calls$"
	events cudart:cudaMallocAsync | grep -q " $p2 size=524288 dev=cuda:0 ret=0 stream=0x5a5a caller="
	events cudart:cudaMallocHost | grep -q " $p3 size=8192 dev=host ret=0 "
	events cudart:cudaMallocManaged | grep -q " size=65536 dev=cuda:0 ret=0 "
	# frees carry the size of what they freed
	events cudart:cudaFree | grep -q " $p0 size=1048576 dev=cuda:0 ret=0 "
	events cudart:cudaFreeAsync | grep -q " $p2 size=524288 dev=cuda:0 ret=0 stream=0x5a5a "
	events cudart:cudaFreeHost | grep -q " $p3 size=8192 dev=host ret=0 "
	# the thread's device follows cudaSetDevice
	events cudart:cudaMalloc | grep -q " size=4608 dev=cuda:1 ret=0 "
	events cudart:cudaFree | grep -q " size=4608 dev=cuda:1 ret=0 "
	# the planted leaks: p1 and the managed block, never freed
	grep -q '^# live allocations=2 ' "$TRACE"
	grep -q '^# live pid='"$fx_PID"' event=cudart:cudaMalloc size=2000000 dev=cuda:0 caller=cudart_calls count=1 bytes=2000000$' "$TRACE"
	grep -q '^# live pid='"$fx_PID"' event=cudart:cudaMallocManaged size=65536 ' "$TRACE"
	grep -q '^# device pid='"$fx_PID"' dev=cuda:0 source=cudart current=2065536 peak=3638400$' "$TRACE"
	grep -q '^# event cudart:cudaMalloc count=3 bytes=3053184$' "$TRACE"
}

@test "stand-in libcudart: injected out-of-memory is reported with its error" {
	LD_LIBRARY_PATH=$FIX/fake FAKE_CUDART_FAIL_SIZE=1000000 \
		fixture fx "$FIX/cudart_calls" setdevice 0 malloc 4096 malloc 5000000
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	events cudart:cudaMalloc | grep -q " size=5000000 dev=cuda:0 ret=2 err=cudaErrorMemoryAllocation "
	grep -q '^# failed event=cudart:cudaMalloc ret=2 err=cudaErrorMemoryAllocation count=1 bytes=5000000$' "$TRACE"
	# cudaErrorMemoryAllocation is an OOM: its block and its count
	grep -qE "^# OOM pid=$fx_PID tid=$fx_PID dev=cuda:0 at [0-9.]+ s: cudart:cudaMalloc size=5000000 \\(4.77 MiB\\) failed: cudaErrorMemoryAllocation \\(2\\)$" "$TRACE"
	grep -q '^# oom failed_allocations=1 ' "$TRACE"
}

@test "a free of an allocation made before the attach shows size=?" {
	LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" \
		malloc 777 sleep 5000 free 0
	# let the first malloc happen before attaching (the tracer has 5 s to
	# attach before the free: its start, the BPF verifier's work above
	# all, took more than 1.5 s on a loaded 2-core CI)
	release fx
	wait_for "$BATS_TEST_TMPDIR/fx.out" '^op=malloc '
	trace 1 --keys -p "$fx_PID"
	finish
	events cudart:cudaFree | grep -q " size=? dev=cuda:? ret=0 "
	[ -z "$(events cudart:cudaMalloc)" ]
}

@test "-q prints the summary only, -o writes to a file, --min-size filters" {
	LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" \
		malloc 100 malloc 200000 free 0 free 1
	MT_LOG=$BATS_TEST_TMPDIR/out.txt trace 1 --keys -p "$fx_PID" --min-size 1000 \
		-o "$BATS_TEST_TMPDIR/out.txt"
	release fx
	finish
	TRACE=$BATS_TEST_TMPDIR/out.txt
	[ ! -s "$BATS_TEST_TMPDIR/trace.out" ]
	[ "$(events cudart:cudaMalloc | wc -l)" -eq 1 ]
	events cudart:cudaMalloc | grep -q " size=200000 "
	# filtered lines are still counted
	grep -q '^# event cudart:cudaMalloc count=2 bytes=200100$' "$TRACE"

	LD_LIBRARY_PATH=$FIX/fake fixture fy "$FIX/cudart_calls" malloc 100
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fy_PID"
	release fy
	finish
	[ -z "$(grep -v '^#' "$TRACE")" ]
	grep -q '^# event cudart:cudaMalloc count=1 bytes=100$' "$TRACE"
}
