#!/usr/bin/env bats
# Every bad input is one line on stderr with the way out, and exit code 2.

load helpers
bats_require_minimum_version 1.5.0

NEEDS="memtrace-bpf: needs root, or CAP_SYS_ADMIN (and CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH for another user's process): run it with sudo"

# as_nobody CAPS CMD...: CMD as nobody with exactly the capabilities CAPS
# (+a,+b: ambient, so that they survive the exec), and no other even in
# its bounding set
as_nobody() {
	local caps=$1
	shift
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all,"$caps" --ambient-caps=-all,"$caps" \
		--bounding-set=-all,"$caps" "$@"
}

@test "not root: says to use sudo" {
	command -v setpriv >/dev/null || skip "setpriv missing"
	run setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$MT" -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "$NEEDS" ]
}

@test "not root with CAP_BPF and CAP_PERFMON only: the hint, not a denied map_files" {
	# the set the hint named before: the uprobes and /proc/PID/map_files
	# need CAP_SYS_ADMIN
	LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" malloc 4096 free 0
	run as_nobody +bpf,+perfmon "$MT" -p "$fx_PID"
	release fx
	[ "$status" -eq 2 ]
	[ "$output" = "$NEEDS" ]
}

@test "not root with exactly the hint's capabilities: root's processes are traced, Python stacks too" {
	local caps=+sys_admin,+sys_ptrace,+dac_read_search
	LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" malloc 4096 free 0
	as_nobody "$caps" "$MT" -p "$fx_PID" >"$BATS_TEST_TMPDIR/trace.out" \
		2>"$BATS_TEST_TMPDIR/trace.err" &
	MT_PID=$!
	wait_for "$BATS_TEST_TMPDIR/trace.out" '^# attach .*libcudart'
	release fx
	finish
	cat "$BATS_TEST_TMPDIR/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	[ "$(events cudart:cudaMalloc | grep -c ' size=4096 ')" -eq 1 ]

	# a Python stack is read from the target's memory (CAP_SYS_PTRACE)
	fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/cpu_model.py" --steps 1
	as_nobody "$caps" "$MT" -p "$fx_PID" >"$BATS_TEST_TMPDIR/trace.out" \
		2>"$BATS_TEST_TMPDIR/trace.err" &
	MT_PID=$!
	wait_for "$BATS_TEST_TMPDIR/trace.out" '^# attach .*libc10'
	release fx
	finish
	cat "$BATS_TEST_TMPDIR/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	grep -q "^# python pid=$fx_PID version=" "$TRACE"
	grep -qE '^	.*cpu_model\.py:[0-9]+\)$' "$TRACE"

	# without the two for another user's process: the open says so
	LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" malloc 4096 free 0
	run --separate-stderr as_nobody +sys_admin "$MT" -p "$fx_PID"
	release fx
	echo "$stderr"
	[ "$status" -eq 2 ]
	[[ "$stderr" == "memtrace-bpf: pid $fx_PID: open "*"/map_files/"*": Permission denied (another user's process needs root, or CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH besides CAP_SYS_ADMIN)" ]]
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

@test "a process with none of the libraries: names them and --wait, and prints nothing before" {
	sleep 30 &
	pid=$!
	run --separate-stderr "$MT" -p "$pid"
	kill "$pid"
	[ "$status" -eq 2 ]
	[ "$stderr" = "memtrace-bpf: pid $pid (sleep) maps none of libcudart, libcuda, libc10; use --wait to wait for them" ]
	# no header, no '# attach' of the loader on stdout before the error
	echo "stdout: $output"
	[ -z "$output" ]
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
	# -p picks processes of the record there, as perf report --pid
	[[ "$output" == *"--pid=PID"* ]]
	[[ "$output" != *"--expandable-segments"* ]]
	run "$MT" estimate --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--scale=PATTERN=FACTOR"* ]]
	[[ "$output" != *"--export"* ]]
	run "$MT" estimate -i x.mtb -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: -p/--pid is for trace, record, report, script and top, not for estimate (see --help)" ]
	run "$MT" record -o x.mtb --export json -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --export is for trace, report and script, not for record (see --help)" ]
}

# accepted OPTION... : the options parse, and the run goes on to the pid
accepted() {
	run "$MT" -p 99999999 "$@"
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: no such process: 99999999 (check the pid with ps)" ]
}

# refused WHAT OPTION VALUE [OPTION...]: one line naming the value, exit 2
refused() {
	local what=$1 opt=$2 val=$3
	shift 3
	run "$MT" -p 99999999 "$@" "$opt" "$val"
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: invalid $what: '$val' (see --help)" ]
}

@test "sizes: one grammar for every size option, bytes or a unit" {
	local v
	for v in 4096 0 1k 12K 1KB 1KiB 1M 1MiB 1.5M 80GiB 1g 2T 1b 1e3; do
		accepted --min-size "$v"
	done
	for v in 1 1k 1M 80GiB 1.5G 2tib; do
		accepted --watch 1 --device-mem "$v"
	done
	# named in MB: a bare number is MiB, a unit says otherwise
	for v in 1 16 64 64M 64MiB 1G 1GiB 1024; do
		accepted --ringbuf-mb "$v"
	done
	for v in 1.3 -1 12x 1MB2 " 1M" 1M\  inf nan 0x10 1Ki 1KiBB 1iB 99999999999T; do
		refused size --min-size "$v"
	done
	for v in 0 0k 0.5 1Q; do
		refused size --device-mem "$v" --watch 1
	done
	run "$MT" -p 99999999 --min-size 1M --min-size 1.3
	[ "$output" = "memtrace-bpf: invalid size: '1.3' (see --help)" ]
	for v in 3 3M 512K 1.5 2G 0; do
		run "$MT" -p 99999999 --ringbuf-mb "$v"
		[ "$status" -eq 2 ]
		[[ "$output" == "memtrace-bpf: invalid ring buffer size"*": '$v' (see --help)" ]]
	done
	# estimate's: --device-mem and --max-split-size-mb (MiB when bare)
	for v in 21 21M 1GiB 20.5M; do
		run "$MT" estimate -i /nonexistent --max-split-size-mb "$v" --device-mem 80GiB
		[ "$status" -eq 2 ]
		[ "$output" = "memtrace-bpf: cannot read /nonexistent: No such file or directory" ]
	done
	for v in 20 20M 1k; do
		run "$MT" estimate -i /nonexistent --max-split-size-mb "$v"
		[ "$status" -eq 2 ]
		[ "$output" = "memtrace-bpf: invalid max split size (> 20 MiB): '$v' (see --help)" ]
	done
}

@test "durations: one grammar for -d, --watch, --watch-window and --leak-age" {
	local v
	for v in 2 2s 0.5 500ms 1m 1.5m 1h 1us 1e-6 100000000 2.5s; do
		accepted -d "$v"
	done
	for v in 1 1s 0.5 500ms 10ms 1m 2.5s 1h; do
		accepted --watch "$v"
	done
	for v in 1 30 30s 500ms 2m; do
		accepted --watch 1 --watch-window "$v"
	done
	# a bare number is steps; with a unit, a time
	for v in 2 5s 500ms 1m 1h 0.5s; do
		accepted --leak-age "$v"
	done
	# -d's bounds: 1 us to 1e8 s; inf, nan and the like refused
	for v in 0 0s 0.5us 2e10 1e9s 2000000m inf nan -3 +3 2x 2S 2sec "2 s" "" 0x10 1e400; do
		refused duration -d "$v"
	done
	for v in 0 5ms 2x 1e7m; do
		refused interval --watch "$v"
	done
	for v in 5ms 1e9 2y; do
		refused window --watch-window "$v" --watch 1
	done
	for v in 0 2.5 0s 0.5ms 5x -1; do
		refused "leak age" --leak-age "$v"
	done
}

@test "a mistyped mode is not run as a command; the program goes after --" {
	run "$MT" reprot -i x.mtb
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: 'reprot' is not a command (trace, record, report, script, estimate, top; a program to trace goes after --)" ]
	run "$MT" -q python3 train.py
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: 'python3' is not a command (trace, record, report, script, estimate, top; a program to trace goes after --)" ]
	# trace is the default mode's name too
	run "$MT" trace -p 99999999
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: no such process: 99999999 (check the pid with ps)" ]
	run "$MT" trace --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--pid=PID"* ]]
	# after --, a word is the program
	run "$MT" -p 1 -- true
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: give one of -p PID, --children PID, --all or -- COMMAND (see --help)" ]
}

@test "a record named without -i: the error says how to read it" {
	cd "$BATS_TEST_TMPDIR"
	: >r.mtb
	for mode in report script estimate; do
		run "$MT" "$mode" r.mtb
		[ "$status" -eq 2 ]
		[ "$output" = "memtrace-bpf: 'r.mtb' is not a command; to read it: memtrace-bpf $mode -i r.mtb" ]
	done
	run "$MT" r.mtb
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: 'r.mtb' is not a command; to read a record: memtrace-bpf report -i r.mtb (a program to trace goes after --)" ]
	# no such file: a mistyped mode, as before
	run "$MT" report s.mtb
	[ "$status" -eq 2 ]
	[[ "$output" == "memtrace-bpf: 's.mtb' is not a command (trace, "* ]]
}

@test "--export twice is refused with both named" {
	run "$MT" -p 99999999 --export json --export perfetto -o x
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --export given twice ('json', then 'perfetto'): give one" ]
	run "$MT" report -i x.mtb --export folded -o x --export folded
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --export given twice ('folded', then 'folded'): give one" ]
}

@test "a chroot without /proc or /sys: says which is missing, not 'not root' or 'no uprobe support'" {
	# issue 34: inside a chroot without /sys the tool blamed the kernel
	local r=$BATS_TEST_TMPDIR/bare
	mkdir -p "$r/bin" "$r/proc" "$r/sys"
	cp "$ROOT/.output/static/memtrace-bpf" "$r/bin/"
	run chroot "$r" /bin/memtrace-bpf -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: no procfs at /proc (a chroot or a container without it): the processes are read there; mount it (mount -t proc proc /proc) or run memtrace-bpf outside" ]
	mount -t proc proc "$r/proc"
	run chroot "$r" /bin/memtrace-bpf -p 1
	umount "$r/proc"
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: no sysfs at /sys (a chroot or a container without it): the uprobes and the kernel's BTF are found there; mount it (mount -t sysfs sysfs /sys) or run memtrace-bpf outside" ]
}

@test "record --flight: a bad window, no -o, an -o no file can be made in, a bad pid: each one line naming what it wants" {
	WANTS="--flight TIME|SIZE (a time of 1 s to 1e8 s: 600s, 10m, 1h; or a size of 1 MiB or more: 512MiB, 2G)"
	# no size (nor time) unit; a time too long; too short; a size too small
	for w in 10x 1e99 0 0.5 512KiB; do
		run "$MT" record --flight "$w" -o "$BATS_TEST_TMPDIR" -- /bin/true
		[ "$status" -eq 2 ]
		[ "$output" = "memtrace-bpf: invalid $WANTS: '$w' (see --help)" ]
	done
	# the folder the dumps go in, not a FILE
	run "$MT" record --flight 10m -- /bin/true
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: record --flight needs -o DIR, the folder its dumps are written in" ]
	run "$MT" record -- /bin/true
	[ "$output" = "memtrace-bpf: record needs -o FILE" ]
	# a folder that takes no file: why, not ENOENT alone
	run "$MT" record --flight 10m -o /proc -- /bin/true
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --flight: cannot write in -o /proc: no file can be made there (No such file or directory); -o DIR wants a folder the dumps can be written in" ]
	# no "0 dumps written" after the error: the trace never ran
	run "$MT" record --flight 10m -o "$BATS_TEST_TMPDIR" -p 99999999
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: no such process: 99999999 (check the pid with ps)" ]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR")" ]
}
