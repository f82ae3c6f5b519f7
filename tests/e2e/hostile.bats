#!/usr/bin/env bats
# Faults and hostile input: whatever happens to the tracer, the target is
# never harmed.

load helpers

teardown() {
	[ -n "${MT_PID:-}" ] && kill -9 "$MT_PID" 2>/dev/null || true
	[ -n "${REC_PID:-}" ] && kill -9 "$REC_PID" 2>/dev/null || true
	[ -n "${CMD_PID:-}" ] && kill -9 "$CMD_PID" 2>/dev/null || true
	[ -n "${SLOW_PID:-}" ] && kill "$SLOW_PID" 2>/dev/null || true
	[ -n "${fx_PID:-}" ] && kill -9 "$fx_PID" 2>/dev/null || true
	[ -n "${SUDO_DIR:-}" ] && rm -rf "$SUDO_DIR" || true
}

# state PID: the one-letter state of PID (R, S, T...), empty once it is gone
state() {
	awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true
}

# child_pid PARENT NAME: CMD_PID, the pid of PARENT's child NAME once it
# is there (5 s at most)
child_pid() {
	local i
	for ((i = 0; i < 500; i++)); do
		CMD_PID=$(pgrep -P "$1" -x "$2" || true)
		[ -n "$CMD_PID" ] && return 0
		sleep 0.01
	done
	return 1
}

@test "-- COMMAND: a tracer killed with SIGKILL never leaves its command stopped" {
	local try delay i s killed=0
	# import torch maps dozens of libraries: the command is stopped at
	# each load until the tracer attaches, so a kill falls inside a stop
	for try in 1 2 3 4 5; do
		delay=$(awk -v t="$try" 'BEGIN { printf "%.2f", t * 0.1 }')
		"$MT" --keys -q -- "$TORCH_PY" -c 'import torch; print("DONE")' \
			>"$BATS_TEST_TMPDIR/cmd.out" 2>"$BATS_TEST_TMPDIR/trace.err" &
		MT_PID=$!
		child_pid "$MT_PID" python3
		sleep "$delay"
		# a tracer done already (it traces the import in well under a
		# second) is no kill: counted, and most tries must kill
		! kill -9 "$MT_PID" 2>/dev/null || killed=$((killed + 1))
		wait "$MT_PID" 2>/dev/null || true
		# the command goes on and finishes
		for ((i = 0; i < 600; i++)); do
			s=$(state "$CMD_PID")
			[ -z "$s" ] || [ "$s" = Z ] && break
			sleep 0.05
		done
		echo "try $try (kill after $delay s): state '$s'"
		[ -z "$s" ] || [ "$s" = Z ]
		grep -qx DONE "$BATS_TEST_TMPDIR/cmd.out"
		CMD_PID=
	done
	echo "$killed of 5 tries killed a running tracer"
	[ "$killed" -ge 3 ]
}

# A command that says READY, then at the file "load" dlopens the library
# argv[2] and says how long that took, at "call" makes one cudaMalloc of
# 4242 bytes, then says DONE; its lines go to argv[1]/cmd.out. A file that
# does not come within 60 s ends it (status 3).
LATE_LOAD='
import ctypes, os, sys, time
d, lib = sys.argv[1], sys.argv[2]
out = open(os.path.join(d, "cmd.out"), "w", buffering=1)
def wait(name):
    end = time.monotonic() + 60
    while not os.path.exists(os.path.join(d, name)):
        if time.monotonic() > end:
            sys.exit(3)
        time.sleep(0.02)
out.write("READY %d\n" % os.getpid())
wait("load")
t = time.monotonic()
cudart = ctypes.CDLL(lib)
out.write("loaded %.3f\n" % (time.monotonic() - t))
wait("call")
p = ctypes.c_void_p()
cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4242))
out.write("DONE\n")
'

@test "-- COMMAND: a stopped tracer holds a library load 2 s at most, then catches up" {
	local d=$BATS_TEST_TMPDIR secs
	"$MT" --keys -- "$TORCH_PY" -c "$LATE_LOAD" "$d" "$FIX/fake/libcudart.so.13" \
		>"$d/trace.out" 2>"$d/trace.err" &
	MT_PID=$!
	wait_for "$d/cmd.out" '^READY ' 30
	CMD_PID=$(awk '/^READY /{print $2}' "$d/cmd.out")
	kill -STOP "$MT_PID"
	touch "$d/load"
	# README, Safety: its guard continues a load held 2 s; a tenth to see it
	wait_for "$d/cmd.out" '^loaded ' 10
	secs=$(awk '/^loaded /{print $2}' "$d/cmd.out")
	echo "dlopen under a stopped tracer: $secs s"
	awk -v s="$secs" 'BEGIN { exit !(s >= 1.9 && s < 4) }'
	# the tracer, continued, attaches the library and says what it missed
	kill -CONT "$MT_PID"
	wait_for "$d/trace.out" '^# attach .*lib=.*/libcudart\.so\.13 ' 10
	touch "$d/call"
	wait_for "$d/cmd.out" '^DONE$' 10
	finish
	cat "$d/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	grep -qx "memtrace-bpf: pid [0-9]* (python3) waited 2.0 s at a library load: its guard let it go on before the tracer had attached the library (the tracer was stopped or too slow); calls made meanwhile were not traced" "$d/trace.err"
	events cudart:cudaMalloc | grep -q " size=4242 "
}

# probed_bytes PID LIB: the bytes of the code of LIB (a file name) mapped
# in PID that differ from the file's: a uprobe placed there is one (its
# breakpoint), so 0 once every probe is gone
probed_bytes() {
	python3 - "$1" "$2" <<'PY'
import sys
pid, lib = sys.argv[1], sys.argv[2]
n = 0
with open("/proc/%s/mem" % pid, "rb", 0) as mem:
    for line in open("/proc/%s/maps" % pid):
        f = line.split()
        if len(f) < 6 or "x" not in f[1] or not f[5].endswith("/" + lib):
            continue
        start, end = (int(x, 16) for x in f[0].split("-"))
        mem.seek(start)
        got = mem.read(end - start)
        with open(f[5], "rb") as lf:
            lf.seek(int(f[2], 16))
            want = lf.read(end - start)
        for i in range(0, min(len(got), len(want)), 4096):
            g, w = got[i:i + 4096], want[i:i + 4096]
            if g != w:
                n += sum(a != b for a, b in zip(g, w))
print(n)
PY
}

# probed_all PID LIB: LIB in PID holds its probes, their count unchanged
# for 0.3 s (the attach placed them all), within 20 s
probed_all() {
	local i n last=0
	for ((i = 0; i < 100; i++)); do
		n=$(probed_bytes "$1" "$2")
		[ "$n" -gt 0 ] && [ "$n" = "$last" ] && return 0
		last=$n
		sleep 0.3
	done
	echo "$2 in pid $1: probes never settled" >&2
	return 1
}

# probed PID LIB: LIB in PID holds a probe, within 20 s
probed() {
	local i
	for ((i = 0; i < 400; i++)); do
		[ "$(probed_bytes "$1" "$2")" -gt 0 ] && return 0
		sleep 0.05
	done
	echo "$2 in pid $1: never probed" >&2
	return 1
}

# unprobed PID LIB: LIB in PID holds no probe, within a second
unprobed() {
	local i n
	for ((i = 0; i < 20; i++)); do
		n=$(probed_bytes "$1" "$2")
		[ "$n" -eq 0 ] && return 0
		sleep 0.05
	done
	echo "$2 in pid $1: $n bytes still probed" >&2
	return 1
}

# c10_fixture: c10_report held before its first call (fixture fx), on a
# copy of Debian's libc10 of its own: no tracer of another test (--all)
# probes that file
c10_fixture() {
	mkdir -p "$BATS_TEST_TMPDIR/lib"
	cp /usr/lib/x86_64-linux-gnu/libc10.so.1.13.0 "$BATS_TEST_TMPDIR/lib/libc10.so.1.13"
	LD_LIBRARY_PATH=$BATS_TEST_TMPDIR/lib fixture fx "$FIX/c10_report"
}

@test "-p on an idle target piped into head: the tracer ends when head does, and its probes go" {
	local d=$BATS_TEST_TMPDIR i t0 t1
	c10_fixture
	mkfifo "$d/pipe"
	head -3 <"$d/pipe" >"$d/head.out" &
	SLOW_PID=$!
	"$MT" --keys -p "$fx_PID" >"$d/pipe" 2>"$d/trace.err" &
	MT_PID=$!
	# the header and the two attach lines: then the target makes no event
	wait "$SLOW_PID"
	SLOW_PID=
	t0=$(date +%s%N)
	for ((i = 0; i < 200; i++)); do
		kill -0 "$MT_PID" 2>/dev/null || break
		sleep 0.05
	done
	t1=$(date +%s%N)
	MT_STATUS=0
	wait "$MT_PID" || MT_STATUS=$?
	MT_PID=
	cat "$d/head.out" "$d/trace.err"
	echo "the tracer ended $(((t1 - t0) / 1000000)) ms after head, status $MT_STATUS"
	grep -q "^# attach pid=$fx_PID lib=$d/lib/libc10\.so\.1\.13 probes=" "$d/head.out"
	# a pipeline's writer that lost its reader: SIGPIPE
	[ "$MT_STATUS" -eq 141 ]
	[ $(((t1 - t0) / 1000000)) -lt 2000 ]
	unprobed "$fx_PID" libc10.so.1.13
	# the target goes on as if never traced
	release fx
	wait "$fx_PID"
	grep -q '^done rounds=1 ' "$d/fx.out"
}

# private_cudart: a copy of the stand-in libcudart of this test's own in
# $BATS_TEST_TMPDIR/lib, whose code no tracer of another test (--all)
# probes
private_cudart() {
	mkdir -p "$BATS_TEST_TMPDIR/lib"
	cp "$FIX/fake/libcudart.so.13" "$BATS_TEST_TMPDIR/lib/"
}

# count_lines FILE PATTERN N [SECS]: until N lines of FILE match PATTERN
count_lines() {
	local i
	for ((i = 0; i < ${4:-10} * 20; i++)); do
		[ "$(grep -cE -- "$2" "$1")" -ge "$3" ] && return 0
		sleep 0.05
	done
	echo "fewer than $3 lines /$2/ in $1:" >&2
	cat "$1" >&2
	return 1
}

# A target of two tracers: Python reporting made-up CUDA blocks to libc10's
# profiler hook, as the caching allocator does (the library only reads
# them), through argv[1] (a copy of libc10). READY; at the file "go" in
# argv[2], blocks of 1001 and 1002 bytes; at "more", one of 1003 and the
# three freed, then DONE; it exits at "end". Its lines go to argv[2]/py.out.
TWO_TRACERS='
import ctypes, os, sys, time
lib, d = ctypes.CDLL(sys.argv[1]), sys.argv[2]
out = open(os.path.join(d, "py.out"), "w", buffering=1)
report = lib._ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE
# c10::Device {int8 type, int8 index} by value: one register; cuda:0
report.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_long,
                   ctypes.c_long, ctypes.c_uint16]
def wait(name):
    end = time.monotonic() + 60
    while not os.path.exists(os.path.join(d, name)):
        if time.monotonic() > end:
            sys.exit(3)
        time.sleep(0.02)
out.write("READY %d\n" % os.getpid())
wait("go")
total = 0
def block(ptr, size):
    global total
    total += size
    report(ptr, size, total, 1 << 21, 1)
block(0x10000, 1001)
block(0x20000, 1002)
wait("more")
block(0x30000, 1003)
for ptr, size in (0x10000, 1001), (0x20000, 1002), (0x30000, 1003):
    block(ptr, -size)
out.write("DONE\n")
wait("end")
'

@test "two tracers on one target: both see every event, and either can die" {
	local d=$BATS_TEST_TMPDIR dead live i size
	mkdir -p "$d/lib"
	cp /usr/lib/x86_64-linux-gnu/libc10.so.1.13.0 "$d/lib/libc10.so.1.13"
	for dead in first second; do
		live=first
		[ "$dead" = first ] && live=second
		rm -f "$d/go" "$d/more" "$d/end" "$d/py.out"
		"$TORCH_PY" -c "$TWO_TRACERS" "$d/lib/libc10.so.1.13" "$d" &
		fx_PID=$!
		wait_for "$d/py.out" '^READY ' 30
		"$MT" --keys -p "$fx_PID" >"$d/first.out" 2>"$d/first.err" &
		MT_PID=$!
		wait_for "$d/first.out" '^# attach .*/libc10\.so\.1\.13 ' 20
		"$MT" --keys -p "$fx_PID" >"$d/second.out" 2>"$d/second.err" &
		CMD_PID=$!
		wait_for "$d/second.out" '^# attach .*/libc10\.so\.1\.13 ' 20
		[ "$(probed_bytes "$fx_PID" libc10.so.1.13)" -gt 0 ]
		touch "$d/go"
		wait_for "$d/first.out" ': c10:alloc: .* size=1002 ' 10
		wait_for "$d/second.out" ': c10:alloc: .* size=1002 ' 10
		# the one that dies, as hard as it can; MT_PID the other
		if [ "$dead" = first ]; then
			i=$MT_PID
			MT_PID=$CMD_PID
			CMD_PID=$i
		fi
		kill -9 "$CMD_PID"
		wait "$CMD_PID" 2>/dev/null || true
		CMD_PID=
		touch "$d/more"
		wait_for "$d/py.out" '^DONE$' 10
		count_lines "$d/$live.out" ': c10:free: ' 3
		kill -INT "$MT_PID"
		finish
		echo "$dead died, $live: status $MT_STATUS"
		cat "$d/$live.err"
		[ "$MT_STATUS" -eq 0 ]
		[ ! -s "$d/$live.err" ]
		for size in 1001 1002 1003; do
			[ "$(grep -c ": c10:alloc: .* size=$size " "$d/$live.out")" -eq 1 ]
			[ "$(grep -c ": c10:free: .* size=$size " "$d/$live.out")" -eq 1 ]
		done
		grep -q ': c10:alloc: .* size=1001 ' "$d/$dead.out"
		unprobed "$fx_PID" libc10.so.1.13
		touch "$d/end"
		wait "$fx_PID"
		fx_PID=
	done
}

# The command of the dlopen cycles: five times, dlopen the library
# argv[1], cudaMalloc 3000+i bytes, say where cudaMalloc was, dlclose it
# and take the address range it had, so that the next dlopen maps it
# elsewhere. Its lines go to argv[2].
CYCLES='
import ctypes, sys
lib_path, out = sys.argv[1], open(sys.argv[2], "w", buffering=1)
libc = ctypes.CDLL(None, use_errno=True)
libc.dlclose.argtypes = [ctypes.c_void_p]
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
MAP_PRIVATE, MAP_ANONYMOUS, MAP_FIXED_NOREPLACE = 0x02, 0x20, 0x100000
def ranges():
    with open("/proc/self/maps") as maps:
        return [[int(x, 16) for x in l.split()[0].split("-")]
                for l in maps if l.rstrip().endswith("/libcudart.so.13")]
for i in range(5):
    lib = ctypes.CDLL(lib_path)
    p = ctypes.c_void_p()
    ret = lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(3000 + i))
    out.write("cycle %d cudaMalloc=0x%x ret=%d\n"
              % (i, ctypes.cast(lib.cudaMalloc, ctypes.c_void_p).value, ret))
    held, handle = ranges(), lib._handle
    del lib
    if libc.dlclose(handle) or ranges():
        sys.exit("the library stayed mapped")
    for start, end in held:
        if libc.mmap(start, end - start, 0, MAP_PRIVATE | MAP_ANONYMOUS |
                     MAP_FIXED_NOREPLACE, -1, 0) != start:
            sys.exit("mmap: errno %d" % ctypes.get_errno())
out.write("DONE\n")
'

@test "-- COMMAND: a library dlopen()ed and dlclose()d five times, at a new address each time: every call seen" {
	local d=$BATS_TEST_TMPDIR
	private_cudart
	run "$MT" --keys -- "$TORCH_PY" -c "$CYCLES" "$d/lib/libcudart.so.13" "$d/cycles.out"
	echo "status $status"
	cat "$d/cycles.out"
	[ "$status" -eq 0 ]
	grep -qx DONE "$d/cycles.out"
	[ "$(grep -c ' ret=0$' "$d/cycles.out")" -eq 5 ]
	[ "$(sed -n 's/.* cudaMalloc=\(0x[0-9a-f]*\) .*/\1/p' "$d/cycles.out" | sort -u | wc -l)" -eq 5 ]
	[ "$(grep -c ': cudart:cudaMalloc: ' <<<"$output")" -eq 5 ]
	for i in 0 1 2 3 4; do
		grep -q ": cudart:cudaMalloc: .* size=300$i .* ret=0 " <<<"$output"
	done
	grep -q '^# summary .* lost=0$' <<<"$output"
}

# The command of the threads test: 64 threads released together, each
# making cudaMalloc and cudaFree through argv[1] every 10 ms for 2 s, then
# "TID N" a thread, N its pairs of calls, into argv[2].
THREADS='
import ctypes, sys, threading, time
lib, counts = ctypes.CDLL(sys.argv[1]), {}
go = threading.Barrier(64)
def work():
    p, n = ctypes.c_void_p(), 0
    go.wait()
    end = time.monotonic() + 2
    while time.monotonic() < end:
        if lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096)) or lib.cudaFree(p):
            sys.exit("a call failed")
        n += 1
        time.sleep(0.01)
    counts[threading.get_native_id()] = n
threads = [threading.Thread(target=work) for _ in range(64)]
for t in threads: t.start()
for t in threads: t.join()
with open(sys.argv[2], "w") as out:
    for tid in sorted(counts): out.write("%d %d\n" % (tid, counts[tid]))
'

@test "-- COMMAND: 64 threads for 2 s: each thread's events are its own calls, none lost" {
	local d=$BATS_TEST_TMPDIR
	private_cudart
	"$MT" --keys --no-stack -- "$TORCH_PY" -c "$THREADS" "$d/lib/libcudart.so.13" "$d/counts" \
		>"$d/trace.out" 2>"$d/trace.err"
	cat "$d/trace.err"
	[ "$(wc -l <"$d/counts")" -eq 64 ]
	# per thread: "TID MALLOCS FREES" from the trace, "TID N N" from the script
	awk '$5 == "cudart:cudaMalloc:" || $5 == "cudart:cudaFree:" {
		split($2, id, "/"); n[id[2], $5]++; tids[id[2]] = 1 }
		END { for (t in tids) print t, n[t, "cudart:cudaMalloc:"] + 0, n[t, "cudart:cudaFree:"] + 0 }' \
		"$d/trace.out" | sort >"$d/seen"
	awk '{ print $1, $2, $2 }' "$d/counts" | sort >"$d/made"
	echo "pairs of calls: $(awk '{ s += $2 } END { print s }' "$d/counts")"
	diff "$d/made" "$d/seen"
	grep -q '^# summary .* lost=0$' "$d/trace.out"
}

@test "-p on a busy target piped into head: SIGPIPE ends the tracer, its probes go, the target goes on" {
	local d=$BATS_TEST_TMPDIR i ops=()
	private_cudart
	for i in $(seq 1 40); do
		ops+=(malloc $((5000 + i)) sleep 50)
	done
	HELD=1 LD_LIBRARY_PATH=$d/lib fixture fx "$FIX/cudart_calls" "${ops[@]}"
	mkfifo "$d/pipe"
	head -4 <"$d/pipe" >"$d/head.out" &
	SLOW_PID=$!
	"$MT" --keys -p "$fx_PID" >"$d/pipe" 2>"$d/trace.err" &
	MT_PID=$!
	# head writes its file at its exit: the probes tell of the attach,
	# once all placed (the first one placed is not yet cudaMalloc's)
	probed_all "$fx_PID" libcudart.so.13
	release fx
	wait "$SLOW_PID"
	SLOW_PID=
	finish
	cat "$d/head.out" "$d/trace.err"
	[ "$MT_STATUS" -eq 141 ]
	grep -qx "memtrace-bpf: SIGPIPE (the output's reader is gone): the trace ended there" "$d/trace.err"
	grep -q ': cudart:cudaMalloc: .* size=5001 .* ret=0 ' "$d/head.out"
	unprobed "$fx_PID" libcudart.so.13
	# every call made and answered, and the target exits as it would
	count_lines "$d/fx.out" '^op=sleep ' 40 20
	[ "$(grep -c '^op=malloc .* ret=0$' "$d/fx.out")" -eq 40 ]
	touch "$d/fx.hold"
	wait "$fx_PID"
	fx_PID=
}

# A directory like /tmp (sticky, writable by all) where another user,
# "nobody", planted a link at the output's path to a file of ours outside:
# the stand-in for /etc/shadow. Also a real record to report on.
spool() {
	SPOOL=$BATS_TEST_TMPDIR/spool
	VICTIM=$BATS_TEST_TMPDIR/victim
	mkdir -m 1777 "$SPOOL"
	echo 'root:$6$secret:19000::::::' >"$VICTIM"
}

# plant NAME: $SPOOL/NAME, a link to $VICTIM owned by nobody
plant() {
	ln -s "$VICTIM" "$SPOOL/$1"
	chown -h nobody "$SPOOL/$1"
}

# refused PATH WHY: the run ended with exit 2 and one line saying why it
# refused PATH, and the victim is untouched
refused() {
	echo "status $status: $output"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "memtrace-bpf: "*"$1: $2; refusing to "*" (remove it or choose another path)" ]]
	[ "$(cat "$VICTIM")" = 'root:$6$secret:19000::::::' ]
}

@test "output paths: a link planted in a sticky directory is never followed" {
	spool
	plant out.txt
	run "$MT" --keys -q -d 2 -o "$SPOOL/out.txt" -- sleep 0.2
	refused "$SPOOL/out.txt" "is a symbolic link"

	plant t.mtb
	run "$MT" record -q -d 2 -o "$SPOOL/t.mtb" -- sleep 0.2
	refused "$SPOOL/t.mtb" "is a symbolic link"

	"$MT" record -q -d 2 -o "$BATS_TEST_TMPDIR/r.mtb" -- sleep 0.2
	plant report.txt
	run "$MT" report --keys -i "$BATS_TEST_TMPDIR/r.mtb" -o "$SPOOL/report.txt"
	refused "$SPOOL/report.txt" "is a symbolic link"

	plant t.json
	run "$MT" --keys -q -d 2 --export json -o "$SPOOL/t.json" -- sleep 0.2
	refused "$SPOOL/t.json" "is a symbolic link"

	plant mod.log
	run "$MT" --keys -q -d 20 --module-log "$SPOOL/mod.log" -- "$TORCH_PY" -c 'import torch'
	refused "$SPOOL/mod.log" "is a symbolic link"

	# the file is written as PATH.tmp, then renamed over PATH
	plant m.prom.tmp
	run "$MT" --keys -q -d 2 --metrics-file "$SPOOL/m.prom" -- sleep 0.2
	refused "$SPOOL/m.prom.tmp" "is a symbolic link"
	# a link at PATH itself is replaced by the rename, not written through
	rm "$SPOOL/m.prom.tmp"
	plant m.prom
	run "$MT" --keys -q -d 2 --metrics-file "$SPOOL/m.prom" -- sleep 0.2
	[ "$status" -eq 0 ]
	[ ! -L "$SPOOL/m.prom" ]
	grep -q '^memtrace_lost_events_total 0$' "$SPOOL/m.prom"
	[ "$(cat "$VICTIM")" = 'root:$6$secret:19000::::::' ]
}

@test "output paths: another user's file or a hard link in a sticky directory is not emptied" {
	spool
	echo theirs >"$SPOOL/theirs.txt"
	chown nobody "$SPOOL/theirs.txt"
	run "$MT" --keys -q -d 2 -o "$SPOOL/theirs.txt" -- sleep 0.2
	refused "$SPOOL/theirs.txt" "belongs to another user in a world-writable sticky directory"
	[ "$(cat "$SPOOL/theirs.txt")" = theirs ]

	# a hard link to a file of ours is ours too: the link count tells
	ln "$VICTIM" "$SPOOL/hard.mtb"
	run "$MT" record -q -d 2 -o "$SPOOL/hard.mtb" -- sleep 0.2
	refused "$SPOOL/hard.mtb" "has other hard links in a world-writable sticky directory"

	# a file of our own there is written over, as before
	echo old >"$SPOOL/mine.txt"
	"$MT" --keys -q -d 2 -o "$SPOOL/mine.txt" -- sleep 0.2
	grep -q '^# summary ' "$SPOOL/mine.txt"
}

@test "records, outputs and logs are created for their owner only; the metrics file for node_exporter too" {
	local d=$BATS_TEST_TMPDIR
	"$MT" --keys -q -d 2 -o "$d/out.txt" -- sleep 0.2
	"$MT" record -q -d 2 -o "$d/t.mtb" -- sleep 0.2
	"$MT" report --keys -i "$d/t.mtb" -o "$d/report.txt"
	"$MT" --keys -q -d 2 --export json -o "$d/t.json" -- sleep 0.2
	"$MT" --keys -q -d 20 --module-log "$d/mod.log" -- "$TORCH_PY" -c 'import torch'
	"$MT" --keys -q -d 2 --metrics-file "$d/m.prom" -- sleep 0.2
	for f in out.txt t.mtb report.txt t.json mod.log; do
		echo "$f: $(stat -c %a "$d/$f")"
		[ "$(stat -c %a "$d/$f")" = 600 ]
	done
	[ "$(stat -c %a "$d/m.prom")" = 644 ]
}

@test "under sudo, records and outputs are the user's who ran it: report reads them without root" {
	# the bats run's folders are root's alone: a sticky one nobody reaches
	SUDO_DIR=$(mktemp -d /tmp/memtrace-sudo.XXXXXX)
	chmod 1777 "$SUDO_DIR"
	local d=$SUDO_DIR
	local -a sudo_env=(env SUDO_USER=nobody SUDO_UID=65534 SUDO_GID=65534)
	"${sudo_env[@]}" "$MT" record -q -d 2 -o "$d/t.mtb" -- sleep 0.2
	"${sudo_env[@]}" "$MT" --keys -q -d 2 -o "$d/out.txt" -- sleep 0.2
	"${sudo_env[@]}" "$MT" --keys -q -d 2 --export json -o "$d/t.json" -- sleep 0.2
	"${sudo_env[@]}" "$MT" report --keys -i "$d/t.mtb" -o "$d/report.txt"
	"${sudo_env[@]}" "$MT" --keys -q -d 2 --metrics-file "$d/m.prom" -- sleep 0.2
	for f in t.mtb out.txt t.json report.txt; do
		echo "$f: $(stat -c %u:%g:%a "$d/$f")"
		[ "$(stat -c %u:%g:%a "$d/$f")" = 65534:65534:600 ]
	done
	[ "$(stat -c %u:%g:%a "$d/m.prom")" = 65534:65534:644 ]
	# as the user, with no capability: the README's "no root needed"
	run setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$MT" report -i "$d/t.mtb"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^memtrace-bpf report: 0.[0-9]* s traced, ' <<<"$output"
	# their file, made for them before, is written over under sudo again
	"${sudo_env[@]}" "$MT" --keys -q -d 2 -o "$d/out.txt" -- sleep 0.2
	grep -q '^# summary ' "$d/out.txt"
	# and a link they plant is still refused
	ln -s /etc/shadow "$d/planted.mtb"
	chown -h nobody "$d/planted.mtb"
	run "${sudo_env[@]}" "$MT" record -q -d 2 -o "$d/planted.mtb" -- sleep 0.2
	[ "$status" -eq 2 ]
	[[ "$output" == *"planted.mtb: is a symbolic link; refusing to follow it"* ]]
	# without sudo's variables, root's as before
	"$MT" record -q -d 2 -o "$d/root.mtb" -- sleep 0.2
	[ "$(stat -c %u "$d/root.mtb")" = 0 ]
}

# a TCP port free on loopback now
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# serve_metrics ADDR: a tracer serving ADDR for up to 60 s, once it listens
serve_metrics() {
	local i
	"$MT" --keys -q -d 60 --metrics-addr "$1" -- sleep 60 \
		>"$BATS_TEST_TMPDIR/trace.out" 2>"$BATS_TEST_TMPDIR/trace.err" &
	MT_PID=$!
	for ((i = 0; i < 100; i++)); do
		curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$PORT/metrics" && return 0
		sleep 0.1
	done
	cat "$BATS_TEST_TMPDIR/trace.err" >&2
	return 1
}

# slow_clients PORT N [K]: N connections to loopback PORT, from K addresses
# of loopback (127.0.0.1 to 127.0.0.K, default 1), each sending a request
# line and then one header line every 2 s, never the end of it; for at most
# 20 s. Says how many the server ended and the longest one held.
slow_clients() {
	python3 - "$1" "$2" "${3:-1}" <<'PY'
import socket, sys, time
port, n, k = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=2,
                                 source_address=("127.0.0.%d" % (1 + i % k), 0))
    s.sendall(b"GET /metrics HTTP/1.1\r\n")
    s.setblocking(False)
    conns.append({"s": s, "t0": time.monotonic(), "next": time.monotonic() + 2, "held": None})
start = time.monotonic()
while time.monotonic() - start < 20 and any(c["held"] is None for c in conns):
    now = time.monotonic()
    for c in conns:
        if c["held"] is not None:
            continue
        try:
            if c["s"].recv(4096) == b"":
                c["held"] = now - c["t0"]
                continue
        except BlockingIOError:
            pass
        except OSError:
            c["held"] = now - c["t0"]
            continue
        if now >= c["next"]:
            c["next"] = now + 2
            try:
                c["s"].sendall(b"X-Slow: 1\r\n")
            except OSError:
                c["held"] = now - c["t0"]
    time.sleep(0.05)
ended = [c["held"] for c in conns if c["held"] is not None]
print("ended %d of %d, longest %.1f s" % (len(ended), n, max(ended, default=0)))
PY
}

@test "--metrics-addr: 16 slow clients neither starve a scrape nor stay" {
	local t0 t1
	PORT=$(free_port)
	serve_metrics ":$PORT"
	slow_clients "$PORT" 16 >"$BATS_TEST_TMPDIR/slow.out" &
	SLOW_PID=$!
	sleep 1
	# a scraper at another address gets in while they hold their share
	t0=$(date +%s%N)
	curl -sf --max-time 3 --interface 127.0.0.2 "http://127.0.0.1:$PORT/metrics" |
		grep -q '^memtrace_lost_events_total 0$'
	t1=$(date +%s%N)
	echo "scrape from elsewhere: $(((t1 - t0) / 1000000)) ms"
	[ $(((t1 - t0) / 1000000)) -lt 2000 ]
	# and at theirs once their 5 s are up
	curl -sf --max-time 3 --retry 10 --retry-delay 1 --retry-all-errors \
		"http://127.0.0.1:$PORT/metrics" | grep -q '^memtrace_lost_events_total 0$'
	t1=$(date +%s%N)
	echo "scrape from their address: $(((t1 - t0) / 1000000)) ms"
	[ $(((t1 - t0) / 1000000)) -lt 8000 ]
	wait "$SLOW_PID"
	cat "$BATS_TEST_TMPDIR/slow.out"
	read -r _ ended _ n _ longest _ < <(tr -d , <"$BATS_TEST_TMPDIR/slow.out")
	[ "$ended" -eq 16 ] && [ "$n" -eq 16 ]
	awk -v l="$longest" 'BEGIN { exit !(l < 7) }'
	grep -q '^memtrace_lost_events_total 0$' <(curl -sf --max-time 3 "http://127.0.0.1:$PORT/metrics")
	kill -INT "$MT_PID"
	wait "$MT_PID"
}

# half_requests PORT N close|reset: N connections to loopback PORT, each
# sending a request line and no more, then closed (a FIN) or reset (an
# RST); 16 every 20 ms, which the tracer accepts as they come (MHD takes
# 10 a poll): faster, they would wait in the listening queue and then
# for the kernel's retries, which is no test of ours
half_requests() {
	python3 - "$@" <<'PY'
import socket, struct, sys, time
port, n, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.1\r\n")
    if how == "reset":
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    if i % 16 == 15:
        time.sleep(0.02)
PY
}

# our sockets on PORT whose client closed them: each still holds a slot
close_waits() {
	ss -Htn state close-wait "( sport = :$1 )" | wc -l
}

@test "--metrics-addr: requests cut short by a close or a reset free their connections at once" {
	local i
	PORT=$(free_port)
	serve_metrics ":$PORT"
	for how in "4 close" "500 close" "200 reset"; do
		set -- $how
		half_requests "$PORT" "$1" "$2"
		echo "$1 half requests, then $2: scrape"
		curl -sf --max-time 1 "http://127.0.0.1:$PORT/metrics" |
			grep -q '^memtrace_lost_events_total 0$'
		for ((i = 0; i < 20; i++)); do
			[ "$(close_waits "$PORT")" -eq 0 ] && break
			sleep 0.05
		done
		echo "closed by their clients and still here: $(close_waits "$PORT")"
		[ "$(close_waits "$PORT")" -eq 0 ]
	done
	kill -INT "$MT_PID"
	wait "$MT_PID"
}

@test "--metrics-addr: slow clients holding every connection, from 8 addresses, do not keep a scrape out" {
	PORT=$(free_port)
	serve_metrics ":$PORT"
	slow_clients "$PORT" 32 8 >"$BATS_TEST_TMPDIR/slow.out" &
	SLOW_PID=$!
	sleep 1
	curl -sf --max-time 1 "http://127.0.0.1:$PORT/metrics" |
		grep -q '^memtrace_lost_events_total 0$'
	wait "$SLOW_PID"
	cat "$BATS_TEST_TMPDIR/slow.out"
	read -r _ ended _ n _ longest _ < <(tr -d , <"$BATS_TEST_TMPDIR/slow.out")
	[ "$ended" -eq 32 ] && [ "$n" -eq 32 ]
	awk -v l="$longest" 'BEGIN { exit !(l < 7) }'
	kill -INT "$MT_PID"
	wait "$MT_PID"
}

@test "--metrics-addr: no host is loopback; every interface is asked for, and warned of" {
	PORT=$(free_port)
	serve_metrics ":$PORT"
	ss -ltnH "sport = :$PORT" | awk '{print $4}' >"$BATS_TEST_TMPDIR/ss.out"
	cat "$BATS_TEST_TMPDIR/ss.out"
	[ "$(cat "$BATS_TEST_TMPDIR/ss.out")" = "127.0.0.1:$PORT" ]
	[ ! -s "$BATS_TEST_TMPDIR/trace.err" ]
	kill -INT "$MT_PID"
	wait "$MT_PID"

	PORT=$(free_port)
	serve_metrics "0.0.0.0:$PORT"
	[ "$(ss -ltnH "sport = :$PORT" | awk '{print $4}')" = "0.0.0.0:$PORT" ]
	cat "$BATS_TEST_TMPDIR/trace.err"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/trace.err")" -eq 1 ]
	grep -qx "memtrace-bpf: metrics: 0.0.0.0:$PORT serves every interface, without authentication: anyone who reaches this host reads /metrics (give 127.0.0.1:PORT or filter the port)" "$BATS_TEST_TMPDIR/trace.err"
	kill -INT "$MT_PID"
	wait "$MT_PID"
}

@test "a container that swaps a mapped library for a link to a host library: the mapped file is probed" {
	ns=$BATS_TEST_TMPDIR/nslib
	mkdir -p "$ns"
	# the library on a tmpfs of the target's own mount namespace
	fixture fx unshare -m --propagation private sh -c "
		mount -t tmpfs none '$ns' && cp '$FIX/fake/libcudart.so.13' '$ns/' &&
		LD_LIBRARY_PATH='$ns' exec '$FIX/cudart_calls' malloc 3434"
	# inside its namespace, the path now points at the host's libc
	nsenter -t "$fx_PID" -m sh -c "rm '$ns/libcudart.so.13' &&
		ln -s /lib/x86_64-linux-gnu/libc.so.6 '$ns/libcudart.so.13'"
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	cat "$BATS_TEST_TMPDIR/trace.err"
	grep -q "^# attach pid=$fx_PID lib=$ns/libcudart\.so\.13\\\\x20(deleted) probes=" "$TRACE"
	! grep -q "^# attach .*libc\.so" "$TRACE"
	# the probes are in the file it mapped: its calls are seen
	events cudart:cudaMalloc | grep -q " size=3434 dev=cuda:? ret=0 "
}

@test "a FIFO put at a mapped library's path neither hangs the tracer nor is opened" {
	dir=$BATS_TEST_TMPDIR/lib
	mkdir -p "$dir"
	cp "$FIX/fake/libcudart.so.13" "$dir/"
	LD_LIBRARY_PATH=$dir fixture fx "$FIX/cudart_calls" malloc 3535
	rm "$dir/libcudart.so.13"
	mkfifo "$dir/libcudart.so.13"
	# bounded: an open of the FIFO would block until the kill
	MT_OUT=$BATS_TEST_TMPDIR/trace.out
	timeout -s KILL 30 "$MT" --keys -p "$fx_PID" >"$MT_OUT" 2>"$BATS_TEST_TMPDIR/trace.err" &
	MT_PID=$!
	wait_for "$MT_OUT" "^# attach pid=$fx_PID lib=.*libcudart" 20
	release fx
	finish
	cat "$BATS_TEST_TMPDIR/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	events cudart:cudaMalloc | grep -q " size=3535 dev=cuda:? ret=0 "
}

# exit_at BREAK REAP: attach to a held target, and when memtrace-bpf reaches
# BREAK (stopped there by gdb) kill the target, reaped (REAP=1: its parent
# is this shell) or left a zombie (REAP=0: its parent never waits); then let
# memtrace-bpf go on. Sets MT_STATUS; its stdout and stderr in trace.out/err.
exit_at() {
	local bp=$1 reap=$2 out=$BATS_TEST_TMPDIR/trace.out err=$BATS_TEST_TMPDIR/trace.err
	if [ "$reap" = 1 ]; then
		LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" malloc 1
	else
		LD_LIBRARY_PATH=$FIX/fake fixture fx sh -c \
			"'$FIX/cudart_calls' malloc 1 & exec sleep 600"
	fi
	SLOW_PID=$(ps -o ppid= -p "$fx_PID" | tr -d ' ')
	[ "$reap" = 1 ] && SLOW_PID=
	run timeout 120 gdb -q -batch -ex "break $bp" \
		-ex "run -q --keys -p $fx_PID >$out 2>$err" \
		-ex "shell kill -9 $fx_PID; until [ ! -d /proc/$fx_PID ] || grep -q '^State:.Z' /proc/$fx_PID/status; do sleep 0.05; done" \
		-ex delete -ex continue -ex 'quit $_exitcode' --args "$MT"
	MT_STATUS=$status
}

@test "a target that exits in any step of the attach: one line, exit 0 (reaped or a zombie)" {
	local bps=(mt_attach_scan mt_elf_resolve_fd bpf_program__attach_uprobe_opts procs.c:find_python)
	# a kernel whose uprobe_multi links serve one process (6.12 on) takes
	# them: their link is made at mt_umulti_link; the perf uprobes then
	# only with MEMTRACE_BPF_UPROBE_MULTI=0
	if awk -F. '{ exit !($1 > 6 || ($1 == 6 && $2 >= 12)) }' <<<"$(uname -r)"; then
		bps+=(mt_umulti_link)
	fi
	for bp in "${bps[@]}"; do
		for reap in 1 0; do
			if [ "$bp" = bpf_program__attach_uprobe_opts ]; then
				MEMTRACE_BPF_UPROBE_MULTI=0 exit_at "$bp" "$reap"
			else
				exit_at "$bp" "$reap"
			fi
			echo "--- at $bp, reaped=$reap: status $MT_STATUS" >&2
			cat "$BATS_TEST_TMPDIR/trace.err" >&2
			[ "$MT_STATUS" -eq 0 ]
			# at most the one line that says what happened, nothing else
			! grep -v "^memtrace-bpf: pid $fx_PID (cudart_calls) exited while it was being attached; nothing of it was traced\$" \
				"$BATS_TEST_TMPDIR/trace.err"
			grep -q '^# summary .* events=0 ' "$BATS_TEST_TMPDIR/trace.out"
			[ -n "$SLOW_PID" ] && kill "$SLOW_PID"
			SLOW_PID=
		done
	done
}

# A scratch folder of another user's, as a shared TMPDIR or one kept by
# sudo -E is: writable by its owner, "nobody", and not sticky
others_tmp() {
	OTHERS=$BATS_TEST_TMPDIR/others
	mkdir -m 0755 "$OTHERS"
	chown nobody "$OTHERS"
}

@test "dry run: a TMPDIR another user can change is passed over: the stand-in goes where only root writes" {
	# hostile round four: that user swapped the dry run's fresh folder for
	# one of theirs, and root's command loaded their libcudart.so.12
	others_tmp
	TMPDIR=$OTHERS run "$MT" estimate --dry-run -- sh -c 'echo "LLP=$LD_LIBRARY_PATH"'
	echo "$output"
	[ "$status" -eq 2 ]
	grep -qx "memtrace-bpf: estimate --dry-run: TMPDIR passed over: $OTHERS belongs to uid $(id -u nobody)" <<<"$output"
	grep -qE '^LLP=/tmp/memtrace-dryrun\.[A-Za-z0-9]{6}$' <<<"$output"
	[ -z "$(ls -A "$OTHERS")" ]
	# writable by all and not sticky; a ':' the loader would split at; a
	# file: each passed over, said, for /tmp
	chmod 0777 "$OTHERS"
	chown root "$OTHERS"
	TMPDIR=$OTHERS run "$MT" estimate --dry-run -- sh -c 'echo "LLP=$LD_LIBRARY_PATH"'
	grep -qx "memtrace-bpf: estimate --dry-run: TMPDIR passed over: $OTHERS is writable by other users and not sticky" <<<"$output"
	grep -qE '^LLP=/tmp/memtrace-dryrun\.[A-Za-z0-9]{6}$' <<<"$output"
	mkdir "$BATS_TEST_TMPDIR/a:b"
	TMPDIR=$BATS_TEST_TMPDIR/a:b run "$MT" estimate --dry-run -- sh -c 'echo "LLP=$LD_LIBRARY_PATH"'
	grep -qx "memtrace-bpf: estimate --dry-run: TMPDIR passed over: $BATS_TEST_TMPDIR/a:b holds ':', ';' or '\$', which the loader would not read as one folder" <<<"$output"
	grep -qE '^LLP=/tmp/memtrace-dryrun\.[A-Za-z0-9]{6}$' <<<"$output"
	TMPDIR=/etc/passwd run "$MT" estimate --dry-run -- sh -c 'echo "LLP=$LD_LIBRARY_PATH"'
	grep -qx "memtrace-bpf: estimate --dry-run: TMPDIR passed over: /etc/passwd is not a folder" <<<"$output"
	grep -qE '^LLP=/tmp/memtrace-dryrun\.[A-Za-z0-9]{6}$' <<<"$output"
	# a folder of root's own is used as it is
	mkdir -m 0700 "$BATS_TEST_TMPDIR/mine"
	TMPDIR=$BATS_TEST_TMPDIR/mine run "$MT" estimate --dry-run -- sh -c 'echo "LLP=$LD_LIBRARY_PATH"'
	grep -qE "^LLP=$BATS_TEST_TMPDIR/mine/memtrace-dryrun\.[A-Za-z0-9]{6}\$" <<<"$output"
	! grep -q 'passed over' <<<"$output"
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/mine")" ]
}

@test "--user: the command runs as that user, the dry run's stand-in readable by it and by none to change" {
	run "$MT" -q --user nobody -- sh -c 'echo "id=$(id -u):$(id -g) home=$HOME user=$USER"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "id=$(id -u nobody):$(id -g nobody) home=$(getent passwd nobody | cut -d: -f6) user=nobody" <<<"$output"
	run "$MT" -q --user 4242 -- sh -c 'echo "id=$(id -u):$(id -g) home=${HOME-unset}"'
	grep -qx "id=4242:4242 home=unset" <<<"$output"
	run "$MT" estimate --dry-run --user nobody -- sh -c 'd=${LD_LIBRARY_PATH%%:*}; echo "uid=$(id -u)"; head -c4 "$d/libcudart.so.12" | od -An -c; touch "$d/x" 2>/dev/null || echo "cannot write"'
	echo "$output"
	grep -qx "uid=$(id -u nobody)" <<<"$output"
	grep -q '177   E   L   F' <<<"$output"
	grep -qx "cannot write" <<<"$output"
	run "$MT" -q --user no-such-user -- true
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --user: no user 'no-such-user' in /etc/passwd (a uid in digits needs none)" ]
	run "$MT" -q --user nobody -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --user is whom -- COMMAND runs as: give a command (-p and --children trace processes as they run)" ]
}

@test "SIGHUP and SIGTERM end the trace in order: the command told, a dry run's folder removed, no verdict" {
	local d=$BATS_TEST_TMPDIR i
	"$MT" estimate --dry-run -- sleep 60 >"$d/out" 2>&1 &
	MT_PID=$!
	child_pid "$MT_PID" sleep
	dir=$(ls -d /tmp/memtrace-dryrun.* | head -1)
	sleep 1
	kill -HUP "$MT_PID"
	MT_STATUS=0
	wait "$MT_PID" || MT_STATUS=$?
	MT_PID=
	cat "$d/out"
	[ "$MT_STATUS" -eq 2 ]
	grep -qx "memtrace-bpf: SIGHUP (the terminal or session is gone): the trace ended there" "$d/out"
	grep -qx "memtrace-bpf: SIGHUP passed on to the command (pid $CMD_PID)" "$d/out"
	grep -qx "memtrace-bpf: estimate --dry-run: the trace was ended by SIGHUP before sleep 60 ended: no estimate" "$d/out"
	! grep -q '^Fits' "$d/out"
	[ ! -e "$dir" ]
	for ((i = 0; i < 100; i++)); do
		kill -0 "$CMD_PID" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$CMD_PID" 2>/dev/null
	CMD_PID=
	# a trace's command, told of a SIGTERM sent to the tracer alone
	"$MT" -q -- sleep 60 >"$d/out" 2>&1 &
	MT_PID=$!
	child_pid "$MT_PID" sleep
	sleep 1
	kill -TERM "$MT_PID"
	wait "$MT_PID" || true
	MT_PID=
	cat "$d/out"
	grep -qx "memtrace-bpf: SIGTERM passed on to the command (pid $CMD_PID)" "$d/out"
	grep -q '^memtrace-bpf report: ' "$d/out"
}

# a name with newlines, escape sequences (a screen clear, a window title)
# and forged '#' lines, and a non-ASCII letter that must stay readable
EVIL=$'x.py\n# OOM pid=1 tid=1 dev=cuda:0 at 0.0 s: forged \xc3\xa9\x1b[2J\x1b]0;pwned\x07\n# record dump: forged'

# no_injection FILE...: no raw escape reached FILE, no line the target forged
no_injection() {
	local f
	for f in "$@"; do
		if grep -q $'\x1b' "$f"; then
			echo "a raw ESC in $f" >&2
			return 1
		fi
		if grep -E '^# (OOM pid=1 |record dump: forged)' "$f"; then
			echo "a forged line in $f" >&2
			return 1
		fi
	done
}

# one_line_each FILE: every line a '#' line, a stack's frame or an event line
one_line_each() {
	if grep -vE $'^(#|\t|[^ ]+ [0-9]+/[0-9]+ \\[[0-9]{3}\\] [0-9]+\\.[0-9]{6}: )' "$1"; then
		echo "lines of $1 above are none of these" >&2
		return 1
	fi
}

@test "a target's names cannot write into the output: newlines, escapes and forged lines escaped, live, in a record and its exports" {
	local lib=$BATS_TEST_TMPDIR/$'lib \x1b[31m probes=9' bin=$BATS_TEST_TMPDIR/$'bin\x1b[2J\n# OOM x'
	local rec=$BATS_TEST_TMPDIR/t.mtb out mode kind
	mkdir -p "$lib" "$bin"
	cp "$FIX/fake/libcudart.so.13" "$lib/"
	# the program it execs lives a second, so that its path is read
	# before it is gone ('(?)' else, as for any program that quick)
	cp /bin/sleep "$bin/"$'t\x1b[2J'
	FAKE_CUDART_FAIL_SIZE=4000000 HELD=1 fixture fx "$TORCH_PY" \
		"$ROOT/tests/fixtures/hostile_names.py" "$lib/libcudart.so.13" \
		"$EVIL" "$bin/"$'t\x1b[2J' 1
	"$MT" record -o "$rec" -p "$fx_PID" --trace-exceptions "$EVIL" \
		>"$BATS_TEST_TMPDIR/rec.out" 2>"$BATS_TEST_TMPDIR/rec.err" &
	REC_PID=$!
	trace 2 --keys -p "$fx_PID" --trace-exceptions "$EVIL"
	wait_for "$BATS_TEST_TMPDIR/rec.err" '^# attach .*cudart'
	release fx
	settle fx '^DONE$'
	finish
	wait "$REC_PID"
	cat -v "$TRACE"
	[ "$MT_STATUS" -eq 0 ]
	no_injection "$TRACE" "$BATS_TEST_TMPDIR/trace.err" "$BATS_TEST_TMPDIR/rec.err"
	one_line_each "$TRACE"
	# each name escaped in its place: the comm (blanks as '_'), a library's
	# path and the module as fields, a frame as text, the type as a field
	grep -qF " pid=$fx_PID("'\x1b[2J\n#_OOM_é)' "$TRACE"
	grep -qF 'lib\x20\x1b[31m\x20probes\x3d9/libcudart.so.13 probes=' "$TRACE"
	[ "$(events cudart:cudaMalloc | grep -c '^\\x1b\[2J\\n#_OOM_é ')" -eq 2 ]
	events c10:cpu_alloc | grep -qF ' phase=forward module=x_py\n#\x20OOM\x20pid\x3d1\x20tid\x3d1\x20dev\x3dcuda:0\x20at\x200_0\x20s:\x20forged\x20é\x1b[2J\x1b]0;pwned\x07\n#\x20record\x20dump:\x20forged'
	grep -qF $'\t''x.py\n# OOM pid=1 tid=1 dev=cuda:0 at 0.0 s: forged é\x1b[2J\x1b]0;pwned\x07\n# record dump: forged (x.py\n# OOM pid=1' "$TRACE"
	grep -qE "^# OOM pid=$fx_PID tid=[0-9]+ dev=cuda:\\? at [0-9.]+ s: cudart:cudaMalloc size=5000011 " "$TRACE"
	grep -qF $'#\t''x.py\n# OOM pid=1 tid=1' "$TRACE"
	grep "^# EXCEPTION pid=$fx_PID " "$TRACE" | grep -qF ' s: x.py\n#\x20OOM\x20pid\x3d1\x20tid\x3d1'
	grep "^# exec pid=$fx_PID: now " "$TRACE" | grep -qF ': now t\x1b[2J ('
	grep "^# exec pid=$fx_PID: now " "$TRACE" | grep -qF '/bin\x1b[2J\n#\x20OOM\x20x/t\x1b[2J): what it held'
	grep '^# module ' "$TRACE" | grep -qF ' module=x_py\n#\x20OOM\x20pid\x3d1'

	# a record keeps them raw: report and script escape them as the trace
	for mode in report "report --keys" script; do
		out=$BATS_TEST_TMPDIR/${mode// /_}.out
		# shellcheck disable=SC2086 # the mode's words
		"$MT" $mode -i "$rec" >"$out" 2>"$out.err"
		no_injection "$out" "$out.err"
		grep -qF 'x_py\n#' "$out"
	done
	cat -v "$BATS_TEST_TMPDIR/report.out"
	# the report for people: its tables' cells escaped as text
	grep -qF 'x_py\n# OOM pid=1' "$BATS_TEST_TMPDIR/report.out"
	one_line_each "$BATS_TEST_TMPDIR/report_--keys.out"
	one_line_each "$BATS_TEST_TMPDIR/script.out"
	grep -qF "# record target: pid=$fx_PID "'comm=\x1b[2J\n# OOM é cmdline=' "$BATS_TEST_TMPDIR/report_--keys.out"
	grep -qF 'probes=9/libcudart.so.13 x.py\n# OOM pid=1 tid=1' "$BATS_TEST_TMPDIR/report_--keys.out"
	[ "$(grep -c '^\\x1b\[2J\\n#_OOM_é [0-9/]* \[[0-9]*\] [0-9.]*: cudart:cudaMalloc: ' "$BATS_TEST_TMPDIR/script.out")" -eq 2 ]

	# the exports hold the names raw, each in its own encoding
	for kind in json perfetto speedscope memviz svg folded; do
		"$MT" report -i "$rec" --export "$kind" -o "$BATS_TEST_TMPDIR/x.$kind" >/dev/null
	done
	"$TORCH_PY" - "$BATS_TEST_TMPDIR" "$EVIL" <<'PY'
import json, pickle, sys, xml.etree.ElementTree as ET
d, evil = sys.argv[1], sys.argv[2]

def strings(o):
    if isinstance(o, str):
        yield o
    elif isinstance(o, dict):
        for k, v in o.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(o, (list, tuple)):
        for v in o:
            yield from strings(v)

def has_evil(o):
    return any(evil in s for s in strings(o))

lines = [json.loads(l) for l in open(f"{d}/x.json", encoding="utf-8")]
assert any(l.get("comm") == "\x1b[2J\n# OOM \u00e9" for l in lines)
assert any(has_evil(l) for l in lines)
for k in ("perfetto", "speedscope"):
    assert has_evil(json.load(open(f"{d}/x.{k}", encoding="utf-8"))), k
assert has_evil(pickle.load(open(f"{d}/x.memviz", "rb")))
svg = ET.parse(f"{d}/x.svg")
assert any("# OOM pid=1" in (t.text or "") for t in svg.iter()), "svg"
folded = open(f"{d}/x.folded", encoding="utf-8").read()
assert "\x1b" not in folded and "\n# OOM" not in folded
print("exports ok")
PY
}
