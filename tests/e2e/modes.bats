#!/usr/bin/env bats
# How targets are found and followed: a started command, libraries loaded
# late, several processes, another mount namespace, a target that dies.

load helpers

# a fixture a failed test left running (the busy one runs for hours)
teardown() {
	if [ -n "${fx_PID:-}" ]; then
		kill "$fx_PID" 2>/dev/null || true
	fi
}

@test "-- COMMAND: traced from its first call, device 0 by default" {
	run env LD_LIBRARY_PATH="$FIX/fake" "$MT" --keys -- "$FIX/cudart_calls" malloc 4096 free 0
	[ "$status" -eq 0 ]
	TRACE=$BATS_TEST_TMPDIR/run.out
	printf '%s\n' "$output" >"$TRACE"
	events cudart:cudaMalloc | grep -q " size=4096 dev=cuda:0 ret=0 "
	events cudart:cudaFree | grep -q " size=4096 dev=cuda:0 ret=0 "
	grep -q '^# live allocations=0 ' "$TRACE"
}

@test "-- COMMAND: a library dlopen()ed later is attached before its first call" {
	run "$MT" --keys -- "$FIX/cudart_calls_dl" sleep 200 dlopen "$FIX/fake/libcudart.so.13" \
		malloc 12345 free 0
	[ "$status" -eq 0 ]
	TRACE=$BATS_TEST_TMPDIR/run.out
	printf '%s\n' "$output" >"$TRACE"
	grep -q "^# attach pid=[0-9]* lib=$FIX/fake/libcudart.so.13 " "$TRACE"
	# the very first call after dlopen returns is there
	events cudart:cudaMalloc | grep -q " size=12345 dev=cuda:0 ret=0 "
	events cudart:cudaFree | grep -q " size=12345 "
}

@test "-- sh -c 'cd DIR && python3 job.py': the job is a child, counted in Unseen; -f follows it" {
	# as people start a job: a shell that changes directory first, then
	# forks python3; traced alone, the shell allocates nothing
	local job=$BATS_TEST_TMPDIR/job.py
	printf '%s\n' 'import torch' 'x = torch.zeros(1 << 20)' \
		'print(f"torch bytes={x.numel() * x.element_size()}")' >"$job"
	run "$MT" -q --keys -- sh -c "cd $BATS_TEST_TMPDIR && $TORCH_PY job.py"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^torch bytes=4194304$' <<<"$output"
	grep -qE '^# summary .* events=0 ' <<<"$output"
	grep -qE '^# unseen children_not_followed=1 first_pid=[0-9]+$' <<<"$output"
	COLUMNS=300 run "$MT" -q -- sh -c "cd $BATS_TEST_TMPDIR && $TORCH_PY job.py"
	grep -qE "^Unseen +the command started 1 process \(the first: pid [0-9]+\), not traced: -- traces the command's own process, -f what it starts too$" <<<"$output"
	# -f: the job's tensor is there, and nothing is unseen
	run "$MT" -q --keys -f -- sh -c "cd $BATS_TEST_TMPDIR && $TORCH_PY job.py"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE '^# follow pid=[0-9]+ comm=sh \(forked\)$' <<<"$output"
	grep -qE '^# device pid=[0-9]+ dev=cpu source=cpu current=[0-9]+ peak=([4-9][0-9]{6}|[0-9]{8,})$' <<<"$output"
	! grep -q '^# unseen children_not_followed' <<<"$output"
	# -f is for -- COMMAND
	run "$MT" -f -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: -f follows the processes -- COMMAND starts: give a command (--children PID follows a running launcher's)" ]
}

@test "-- COMMAND that cannot run is a one-line error, exit 2" {
	run "$MT" --keys -- /nonexistent/prog
	[ "$status" -eq 2 ]
	[[ "$output" == *"memtrace-bpf: cannot run '/nonexistent/prog': No such file or directory"* ]]
}

@test "-p: a library the running process loads later is picked up" {
	fixture fx "$FIX/cudart_calls_dl" sleep 300 dlopen "$FIX/fake/libcudart.so.13" \
		sleep 1000 malloc 2222 free 0
	trace 0 --keys -p "$fx_PID" --wait
	wait_for "$BATS_TEST_TMPDIR/trace.out" '^# memtrace-bpf '
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q "^# attach pid=$fx_PID lib=$FIX/fake/libcudart.so.13 " "$TRACE"
	events cudart:cudaMalloc | grep -q " size=2222 "
}

@test "-p PID,PID: two processes, each line with its own pid" {
	LD_LIBRARY_PATH=$FIX/fake fixture fa "$FIX/cudart_calls" malloc 1111
	LD_LIBRARY_PATH=$FIX/fake fixture fb "$FIX/cudart_calls" malloc 2222
	trace 2 --keys -p "$fa_PID,$fb_PID"
	release fa
	release fb
	finish
	[ "$MT_STATUS" -eq 0 ]
	events cudart:cudaMalloc | grep -q "^cudart_calls $fa_PID/$fa_PID .* size=1111 "
	events cudart:cudaMalloc | grep -q "^cudart_calls $fb_PID/$fb_PID .* size=2222 "
	grep -q "^# live pid=$fa_PID event=cudart:cudaMalloc size=1111 " "$TRACE"
	grep -q "^# live pid=$fb_PID event=cudart:cudaMalloc size=2222 " "$TRACE"
}

@test "a process in its own mount namespace, library at a path the host lacks" {
	command -v unshare >/dev/null || skip "unshare missing"
	ns=$BATS_TEST_TMPDIR/nslib
	mkdir -p "$ns"
	# the library lives on a tmpfs mounted inside the namespace only
	fixture fx unshare -m --propagation private sh -c "
		mount -t tmpfs none '$ns' && cp '$FIX/fake/libcudart.so.13' '$ns/' &&
		LD_LIBRARY_PATH='$ns' exec '$FIX/cudart_calls' malloc 3333"
	[ ! -e "$ns/libcudart.so.13" ]
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q "^# attach pid=$fx_PID lib=$ns/libcudart.so.13 " "$TRACE"
	events cudart:cudaMalloc | grep -q " size=3333 dev=cuda:? ret=0 "
}

@test "target killed mid-trace: summary and exit 0" {
	LD_LIBRARY_PATH=$FIX/fake MT_HOLD=$BATS_TEST_TMPDIR/never \
		fixture fx "$FIX/cudart_calls" malloc 4444
	trace 1 --keys -p "$fx_PID"
	release fx
	wait_for "$BATS_TEST_TMPDIR/trace.out" 'size=4444'
	kill -9 "$fx_PID"
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q '^# summary ' "$TRACE"
	grep -q "^# live pid=$fx_PID event=cudart:cudaMalloc size=4444 " "$TRACE"
}

@test "-d SECS stops a trace of a process that keeps running" {
	LD_LIBRARY_PATH=$FIX/fake MT_HOLD=$BATS_TEST_TMPDIR/never \
		fixture fx "$FIX/cudart_calls" malloc 10
	trace 1 --keys -p "$fx_PID" -d 1
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	kill -0 "$fx_PID"
	grep -q '^# summary duration=1\.[0-9]*s ' "$TRACE"
	kill "$fx_PID"
}

@test "SIGINT ends the trace with the summary" {
	LD_LIBRARY_PATH=$FIX/fake MT_HOLD=$BATS_TEST_TMPDIR/never \
		fixture fx "$FIX/cudart_calls" malloc 10
	trace 1 --keys -p "$fx_PID"
	release fx
	wait_for "$BATS_TEST_TMPDIR/trace.out" 'size=10 '
	kill -INT "$MT_PID"
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q '^# event cudart:cudaMalloc count=1 bytes=10$' "$TRACE"
	kill "$fx_PID"
}

# stop_busy_trace I ARGS...: a trace of the busy fixture fx, stopped by -d
# (odd I: 17 to 262 ms) or Ctrl-C (even I: 5 to 95 ms after the attach)
stop_busy_trace() {
	local i=$1
	shift
	if ((i % 2)); then
		trace 0 -q -p "$fx_PID" -d "$((10 + i * 7))ms" "$@"
	else
		MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 -q -p "$fx_PID" "$@"
		sleep "0.0$((i % 10))5"
		kill -INT "$MT_PID"
	fi
	finish
}

@test "a trace stopped at any moment of a busy target loses nothing" {
	# c10 calls as fast as the fixture can make them, ~1 M events/s, in a
	# ring buffer that holds a second of them: any loss is a false one
	fixture fx "$FIX/c10_report" --loop 2000000000 --quiet
	release fx
	for i in $(seq 1 36); do
		stop_busy_trace "$i" --ringbuf-mb 256
		[ "$MT_STATUS" -eq 0 ]
		grep -qE '^memtrace-bpf report: [0-9.]+ s traced, [0-9]+ events, 0 lost$' "$TRACE"
		if grep -E '^# LOST |[0-9]+ events lost|of the events lost' \
			"$TRACE" "$BATS_TEST_TMPDIR/trace.err"; then
			echo "trace $i lost events" >&2
			return 1
		fi
	done
}
