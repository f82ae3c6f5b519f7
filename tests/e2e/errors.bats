#!/usr/bin/env bats
# Every bad input is one line on stderr with the way out, and exit code 2.

load helpers
bats_require_minimum_version 1.5.0

@test "not root: says to use sudo" {
	command -v setpriv >/dev/null || skip "setpriv missing"
	run setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$MT" -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: needs root, or CAP_BPF and CAP_PERFMON: run it with sudo" ]
}

@test "no such pid" {
	run "$MT" -p 99999999
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: no such process: 99999999 (check the pid with ps)" ]
}



@test "a thread id or a kernel thread: says what -p takes" {
	"$TORCH_PY" -c 'import threading, time
t = threading.Thread(target=time.sleep, args=(30,))
t.start()
print("READY", flush=True)
t.join()' >"$BATS_TEST_TMPDIR/py.out" &
	local py=$! tid
	wait_for "$BATS_TEST_TMPDIR/py.out" '^READY'
	tid=$(ls "/proc/$py/task" | grep -vx "$py" | head -1)
	run "$MT" -p "$tid"
	kill "$py"
	[ "$status" -eq 2 ]
	[[ "$output" == "memtrace-bpf: $tid is a thread of process $py: trace -p $py" ]]
	run "$MT" -p 2
	[ "$status" -eq 2 ]
	[[ "$output" == "memtrace-bpf: pid 2 (kthreadd) is a kernel thread: it has no libraries to trace" ]]
}

@test "a process with none of the libraries: names them and --wait" {
	sleep 30 &
	pid=$!
	run --separate-stderr "$MT" -p "$pid"
	kill "$pid"
	[ "$status" -eq 2 ]
	[ "$stderr" = "memtrace-bpf: pid $pid (sleep) maps none of libcudart, libcuda, libc10; use --wait to wait for them" ]
}

@test "bad options are named, exit 2" {
	run "$MT" -p abc
	[ "$status" -eq 2 ]
	[[ "$output" == "memtrace-bpf: invalid pid: 'abc' (see --help)" ]]
	run "$MT" -p 0
	[ "$status" -eq 2 ]
	run "$MT" -p 1 -d -3
	[ "$status" -eq 2 ]
	[[ "$output" == "memtrace-bpf: invalid duration: '-3' (see --help)" ]]
	# past what the end's nanoseconds hold: once wrapped to a 10 ms trace
	for d in inf 2e10 nan; do
		run "$MT" -p 1 -d "$d"
		[ "$status" -eq 2 ]
		[[ "$output" == "memtrace-bpf: invalid duration: '$d' (see --help)" ]]
	done
	run "$MT" -p 1 --min-size 12k
	[ "$status" -eq 2 ]
	run "$MT" -p 1 --ringbuf-mb 3
	[ "$status" -eq 2 ]
	run "$MT"
	[ "$status" -eq 2 ]
	[[ "$output" == "memtrace-bpf: give one of -p PID, --children PID, --all or -- COMMAND (see --help)" ]]
	run "$MT" -p 1 -- true
	[ "$status" -eq 2 ]
	run "$MT" --no-cpu --no-cuda -p 1
	[ "$status" -eq 2 ]
	run "$MT" -p 1 --bogus
	[ "$status" -eq 2 ]
}

@test "--help has examples, --version the version" {
	run "$MT" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"EXAMPLES:"* ]]
	[[ "$output" == *"memtrace-bpf -p 4121,4122 -d 30"* ]]
	run "$MT" --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^memtrace-bpf\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "-o into a directory that does not exist" {
	run "$MT" -p 1 -o /nonexistent/dir/out.txt
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: cannot write /nonexistent/dir/out.txt: No such file or directory" ]
}

@test "each mode's --help lists its own options; another mode's is refused by name" {
	run "$MT" report --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--input=FILE"* ]]
	[[ "$output" == *"--export=KIND"* ]]
	[[ "$output" != *"--pid"* ]]
	[[ "$output" != *"--expandable-segments"* ]]
	run "$MT" estimate --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--scale=PATTERN=FACTOR"* ]]
	[[ "$output" != *"--export"* ]]
	run "$MT" report -i x.mtb -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: -p/--pid is for trace and record, not for report (see --help)" ]
	run "$MT" record -o x.mtb --export json -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --export is for trace, report and script, not for record (see --help)" ]
}
