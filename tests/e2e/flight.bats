#!/usr/bin/env bats
# record --flight: the flight recorder. Real processes and allocators:
# Debian's CUDA PyTorch on the CUDA stand-in with a small device (the
# runtime is a stand-in, user/standin; the caching allocator and its OOM
# path are PyTorch's), Debian 12's CPU PyTorch in a memory cgroup the
# kernel's OOM killer acts in, CPU jobs dumped on SIGUSR1, and CPU jobs
# that die (a signal, an uncaught exception, an exit status).

load helpers

STANDIN=$ROOT/scripts/cuda-standin.sh

setup_file() {
	echo "# the CUDA runtime here is a stand-in (user/standin); the allocator is PyTorch's" >&3
	need_roots cuda
	"$STANDIN" --lib >/dev/null
}

teardown() {
	root_unstage
	[ -n "${MT_PID:-}" ] && kill "$MT_PID" 2>/dev/null || true
	[ -n "${FL_PID:-}" ] && kill "$FL_PID" 2>/dev/null || true
	[ -n "${CG:-}" ] && rmdir "$CG" 2>/dev/null || true
	[ -n "${LOOP_PID:-}" ] && kill "$LOOP_PID" 2>/dev/null || true
	[ -n "${FORKER_PID:-}" ] && kill "$FORKER_PID" 2>/dev/null || true
	[ -n "${SMALL:-}" ] && umount "$SMALL" 2>/dev/null || true
}

# the event lines of script -i FILE as "ts pid/tid event first-field size"
lines_of() {
	"$MT" script -i "$1" | awk '/^[^#\t]/ { print $4 + 0, $2, $5, $6, $7 }'
}

# flight_p OUT CMD...: CMD, a Python that prints its pid first, in the
# background with its output in OUT; once it has, a flight recorder (10 s,
# dumps in $DIR) attached to it with -p, its lines in fl.out. Sets pid,
# LOOP_PID (for teardown, should the test fail) and FL_PID.
flight_p() {
	local out=$1
	shift
	# emptied here: the redirections below run in the background, and an
	# earlier round's lines, read before them, gave a later round the pid
	# of the first (once under load: "invalid pid list: ''")
	: >"$out"
	: >"$BATS_TEST_TMPDIR/fl.out"
	"$@" >"$out" &
	LOOP_PID=$!
	wait_for "$out" '^[0-9]+$' 60
	pid=$(head -1 "$out")
	"$MT" record --flight 10s -o "$DIR" -p "$pid" >"$BATS_TEST_TMPDIR/fl.out" 2>&1 &
	FL_PID=$!
	wait_for "$BATS_TEST_TMPDIR/fl.out" '^# python pid=' 60
}

# the one dump in $DIR whose name ends in -TAG.mtb
dump_of() {
	local f
	f=$(ls "$DIR"/flight-*-"$1".mtb)
	[ "$(wc -l <<<"$f")" -eq 1 ]
	echo "$f"
}

@test "flight: an OOM on the stand-in: the dump holds it and its line, what was alive long before, and the window's events as a full record has them" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	root_stage "$ROOT_CUDA" "$ROOT/tests/fixtures/cuda_model.py"
	HELD=1 fixture_in_root fx "$STANDIN" --device-mem 256MiB -- /usr/bin/python3 \
		"$STAGE/cuda_model.py" --steps 40 --oom --wait 1.5
	# the flight recorder and, beside it, a full record of the same run
	"$MT" record --flight 1s -o "$DIR" -p "$fx_PID" \
		>"$BATS_TEST_TMPDIR/flight.out" 2>"$BATS_TEST_TMPDIR/flight.err" &
	FL_PID=$!
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 0 record -o "$BATS_TEST_TMPDIR/full.mtb" -p "$fx_PID"
	wait_for "$BATS_TEST_TMPDIR/flight.err" '^# python pid=' 60
	wait_for "$BATS_TEST_TMPDIR/trace.err" '^# python pid=' 60
	release fx
	wait_for "$BATS_TEST_TMPDIR/fx.out" '^weight head ' 120
	touch "$BATS_TEST_TMPDIR/fx.hold"
	finish
	wait "$FL_PID"
	FL_PID=
	cat "$BATS_TEST_TMPDIR/flight.err"
	read -r size line < <(sed -nE 's/^oom size=([0-9]+) line=([0-9]+)$/\1 \2/p' "$BATS_TEST_TMPDIR/fx.out")
	dump=$(dump_of oom)
	[[ $dump == */flight-*-by[0-9]*-[0-9][0-9][0-9][0-9]-pid$fx_PID-rank0-oom.mtb ]]
	grep -q "^memtrace-bpf: flight: dumped $dump: out of memory in pid $fx_PID (rank 0)" "$BATS_TEST_TMPDIR/flight.err"
	run "$MT" report -i "$dump"
	echo "$output"
	[ "$status" -eq 0 ]
	# its reason and window first, then the OOM: the request, the line
	[[ ${lines[0]} == "# record dump: out of memory in pid $fx_PID (rank 0) at "* ]]
	[[ ${lines[1]} == "# record window: the last 1.000 s of events (--flight): "* ]]
	grep -qE "^# OOM pid=$fx_PID .*: c10:oom size=$size " <<<"$output"
	grep -A20 ": c10:oom size=$size " <<<"$output" | grep -q "cuda_model.py:$line)"
	# the window's events are the full record's over the same span, in
	# each thread (each tracer stamps an event at its own probe: their
	# times differ by microseconds, and two threads' events as close as
	# that may interleave differently)
	read -r from to < <(sed -nE 's/.* events from ([0-9.]+) to ([0-9.]+) s .*/\1 \2/p' <<<"${lines[1]}")
	lines_of "$dump" | awk -v f="$from" '$1 >= f { $1 = ""; print }' >"$BATS_TEST_TMPDIR/window"
	lines_of "$BATS_TEST_TMPDIR/full.mtb" | awk -v f="$from" -v t="$to" '$1 >= f - 0.001 && $1 <= t + 0.001 { $1 = ""; print }' >"$BATS_TEST_TMPDIR/full"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/window")" -gt 100 ]
	python3 -c 'import sys
def by_thread(path):
    t = {}
    for line in open(path).read().splitlines():
        t.setdefault(line.split()[0], []).append(line)
    return t
w, f = (by_thread(p) for p in sys.argv[1:])
for k, v in w.items():
    fv = f.get(k, [])
    i = fv.index(v[0]) if v[0] in fv else len(fv)
    n = min(len(v), len(fv) - i)
    # where the full record stops first, its last events may be missing;
    # an event a tracer handled late (its CPU preempted) is out of order
    if n < 0.95 * len(v) or sorted(fv[i:i + n]) != sorted(v[:n]):
        sys.exit(f"thread {k}: {n} of the window {len(v)} events in order")' \
		"$BATS_TEST_TMPDIR/window" "$BATS_TEST_TMPDIR/full"
	# before the window only allocations still alive at its start: the
	# weights among them (made 1.5 s before training began), some with
	# their stack
	lines_of "$dump" | awk -v f="$from" '$1 < f' >"$BATS_TEST_TMPDIR/old"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/old")" -ge 10 ]
	! grep -vE ' (c10:alloc|cudart:cudaMalloc|c10:cpu_alloc|cudart:cudaHostAlloc):' "$BATS_TEST_TMPDIR/old"
	"$MT" script -i "$dump" | awk -v f="$from" '/^[^#\t]/ { old = $4 + 0 < f } old && /^\t.*cuda_model\.py:/' | grep -q .
}

@test "flight: a process the kernel's OOM killer takes: the dump says so, its headline's OOMs too" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	# a memory cgroup of 300 MiB, v1 or v2, whichever this host has
	if [ -d /sys/fs/cgroup/memory ]; then
		CG=/sys/fs/cgroup/memory/mt-e2e-flight-$$
		mkdir "$CG"
		echo 300M >"$CG/memory.limit_in_bytes"
	else
		CG=/sys/fs/cgroup/mt-e2e-flight-$$
		mkdir "$CG"
		echo 300M >"$CG/memory.max"
	fi
	cat >"$BATS_TEST_TMPDIR/hog.py" <<-'EOF'
		import torch
		keep = []
		for i in range(400):
		    keep.append(torch.ones(1 << 20))
		print("survived", flush=True)
	EOF
	run "$MT" record --flight 10s -o "$DIR" -- sh -c \
		"echo \$\$ >$CG/cgroup.procs && exec $TORCH_PY $BATS_TEST_TMPDIR/hog.py"
	echo "$output"
	[ "$status" -eq 0 ]
	! grep -q survived <<<"$output"
	dump=$(dump_of oomkill)
	run "$MT" report -i "$dump"
	echo "$output"
	[[ ${lines[0]} == "# record dump: pid "*" (rank 0) ended as the kernel's OOM killer acted in its cgroup ("*"oom_kill 0 -> 1), killed by SIGKILL" ]]
	grep -qE "^OOMs       pid [0-9]+: the kernel's OOM killer took it \(its memory cgroup's oom_kill rose\), killed by SIGKILL$" <<<"$output"
	! grep -q '^OOMs .* none' <<<"$output"
	grep -qE '^Peak       cpu: [0-9.]+ MiB' <<<"$output"
	grep -q 'hog.py:4)' <<<"$output"
}

# a training loop of $1 steps keeping $2 bytes a step, ended as $3 says:
# "raise" (an uncaught ValueError), or an exit status
loop_py() {
	cat >"$BATS_TEST_TMPDIR/loop.py" <<-'EOF'
		import sys, time, torch
		torch.set_num_threads(1)
		steps, leak, end = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
		model = torch.nn.Linear(64, 64)
		opt = torch.optim.SGD(model.parameters(), lr=0.01)
		x = torch.randn(32, 64)
		keep = []
		def check(i):
		    raise ValueError(f"step {i}: loss is nan")
		for i in range(steps):
		    opt.zero_grad()
		    model(x).sum().backward()
		    opt.step()
		    if leak:
		        keep.append(torch.ones(leak // 4))
		    time.sleep(0.004)
		if end == "raise":
		    check(i)
		sys.exit(int(end))
	EOF
}

@test "flight: a loop leaking 256 KiB a step dies of an uncaught exception: its dump names the leak's line, the exit status and the exception" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	loop_py
	run "$MT" record --flight 1s --trace-exceptions ValueError -o "$DIR" -- \
		"$TORCH_PY" "$BATS_TEST_TMPDIR/loop.py" 300 262144 raise
	echo "$output"
	[ "$status" -eq 0 ]
	dump=$(dump_of exit)
	grep -qx "memtrace-bpf: flight: dumped $dump: pid [0-9]* (rank 0) exited with status 1; the last exception it raised (--trace-exceptions): ValueError at check ($BATS_TEST_TMPDIR/loop.py:9)" <<<"$output"
	run "$MT" report -i "$dump"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE '^Leaks      1 allocation group \(call and size, every allocation counted\) kept memory from each of 3 slices in a row of' <<<"$output"
	# (wrapped at the width: its words are checked, not its lines)
	grep -qE '^Died       pid [0-9]+: exited with status 1; the last exception it raised: ValueError at check' <<<"$output"
	grep -A1 '^Died ' <<<"$output" | tr -s ' \n' ' ' | grep -qF "ValueError at check ($BATS_TEST_TMPDIR/loop.py:9)"
	# the suspect: the kept tensors' line, every one of them counted,
	# growing a slice of the window (an eighth of its span: 1 s or, where
	# its events span a little less, that)
	slice=$(awk '/^# record window_ns: /{ printf "%.3g", ($5 - $4) / 8e9; exit }' <<<"$output")
	echo "slice: $slice s"
	[ -n "$slice" ]
	grep -A2 '^Leak suspects: allocations of one call and size' <<<"$output" |
		grep -qE "<module> \($BATS_TEST_TMPDIR/loop.py:15\) +[0-9.]+ MiB +[0-9]+ +\+[0-9.]+ MiB/${slice//./\\.} s$"
	# the dump's steps began with its window: a lower bound
	! grep -qE '^Peak .*, step [0-9]' <<<"$output"
	run "$MT" report --keys -i "$dump"
	grep -qE '^# leaks verdict=growing sites=1 boundaries=8 window=[01]\.[0-9]{3}s$' <<<"$output"
	grep -qE '^# leak pid=[0-9]+ .* counts=- size=262144 call=c10:cpu_alloc stack=sampled ' <<<"$output"
	grep -qE '^# ended pid=[0-9]+ how=exit code=1 raised=ValueError\\x20at\\x20check' <<<"$output"
}

@test "flight: the same loop without the leak, exiting 2, is dumped and not accused; exceptions untraced are said so" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	loop_py
	run "$MT" record --flight 1s -o "$DIR" -- "$TORCH_PY" "$BATS_TEST_TMPDIR/loop.py" 300 0 2
	echo "$output"
	[ "$status" -eq 0 ]
	dump=$(dump_of exit)
	grep -qx "memtrace-bpf: flight: dumped $dump: pid [0-9]* (rank 0) exited with status 2; exceptions not traced (--trace-exceptions TYPE names the one it died of)" <<<"$output"
	run "$MT" report -i "$dump"
	echo "$output"
	# the window its events span: 1 s, or under load a little less
	# (0.883 s once, the interpreter's exit slow to come)
	win=$(awk '/^# record window_ns: /{ printf "%.3g", ($5 - $4) / 1e9; exit }' <<<"$output")
	echo "window: $win s"
	[ -n "$win" ]
	grep -qE "^Leaks      none in the dump's ${win//./\\.} s window: no allocation group kept memory from its slices" <<<"$output"
	grep -qE '^Died       pid [0-9]+: exited with status 2$' <<<"$output"
	! grep -q '^Leak suspects' <<<"$output"
}

@test "flight: -p: a process a signal kills is dumped, the signal named; one that ends by itself is not" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	# allocates until the file stop is there, then exits 0
	cat >"$BATS_TEST_TMPDIR/loop.py" <<-'EOF'
		import os, sys, time, torch
		print(os.getpid(), flush=True)
		while not os.path.exists(sys.argv[1]):
		    torch.ones(1 << 16)
		    time.sleep(0.001)
	EOF
	for how in TERM itself; do
		# the loop runs forever: teardown ends it if the round fails
		flight_p "$BATS_TEST_TMPDIR/loop.out" "$TORCH_PY" \
			"$BATS_TEST_TMPDIR/loop.py" "$BATS_TEST_TMPDIR/stop"
		if [ "$how" = TERM ]; then
			kill -TERM "$pid"
		else
			touch "$BATS_TEST_TMPDIR/stop"
		fi
		wait "$FL_PID"
		FL_PID=
		cat "$BATS_TEST_TMPDIR/fl.out"
		[ "$how" = TERM ] || break
		dump=$(dump_of signal)
		[[ $dump == */flight-*-pid$pid-rank0-signal.mtb ]]
		grep -qx "memtrace-bpf: flight: dumped $dump: pid $pid (rank 0) was killed by SIGTERM (Terminated)" "$BATS_TEST_TMPDIR/fl.out"
		run "$MT" report -i "$dump"
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "# record dump: pid $pid (rank 0) was killed by SIGTERM (Terminated)" ]
		grep -qx "Died       pid $pid: killed by SIGTERM (Terminated)" <<<"$output"
		rm "$dump"
	done
	[ -z "$(ls "$DIR")" ]
	! grep -q 'flight: dumped' "$BATS_TEST_TMPDIR/fl.out"
}

@test "flight: a process killed before any event is dumped, and its dump's report says how it died" {
	local pid
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	# torch imported, then nothing allocated: a window with no event
	flight_p "$BATS_TEST_TMPDIR/idle.out" "$TORCH_PY" -c \
		'import os, time, torch; print(os.getpid(), flush=True); time.sleep(600)'
	kill -TERM "$pid"
	wait "$FL_PID"
	FL_PID=
	cat "$BATS_TEST_TMPDIR/fl.out"
	run "$MT" report -i "$(dump_of signal)"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^memtrace-bpf report: [0-9.]* s traced, 0 events, 0 lost$' <<<"$output"
	grep -qx "Died       pid $pid: killed by SIGTERM (Terminated)" <<<"$output"
}

@test "flight: --trace-exceptions: a raised OutOfMemoryError dumps a second later, naming its line" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/raise_exc.py" --torch
	"$MT" record --flight 10s -o "$DIR" -p "$fx_PID" --trace-exceptions OutOfMemoryError \
		>"$BATS_TEST_TMPDIR/fl.out" 2>&1 &
	FL_PID=$!
	wait_for "$BATS_TEST_TMPDIR/fl.out" '^# python pid=' 60
	release fx
	# armed at the raise, dumped a second later: the process still runs
	wait_for "$BATS_TEST_TMPDIR/fl.out" 'flight: dumped ' 30
	touch "$BATS_TEST_TMPDIR/fx.hold"
	wait "$FL_PID"
	FL_PID=
	cat "$BATS_TEST_TMPDIR/fl.out"
	read -r _ line < <(grep '^raise ' "$BATS_TEST_TMPDIR/fx.out")
	dump=$(dump_of oom)
	grep -qE "^memtrace-bpf: flight: dumped $dump: out of memory in pid $fx_PID \(rank 0\) at [0-9.]+ s: python:raise .* at raise_it \(.*/raise_exc\.py:$line\)$" "$BATS_TEST_TMPDIR/fl.out"
	run "$MT" report -i "$dump"
	[ "$status" -eq 0 ]
	[[ ${lines[0]} == "# record dump: out of memory in pid $fx_PID (rank 0) at "* ]]
	# the headline's OOMs: the error raised, not "none"
	grep -qE "^OOMs +3 OutOfMemoryErrors raised, no allocation seen failing$" <<<"$output"
	grep -qE "^ +at raise_it \(.*/raise_exc\.py:$line\)$" <<<"$output"
	"$MT" report -i "$dump" --keys | grep -q '^# oom .* exceptions=3 out_of_memory_errors=3$'
}

@test "flight: SIGUSR1 dumps; the folder keeps --flight-dumps, the oldest removed and said" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	cat >"$BATS_TEST_TMPDIR/churn.py" <<-'EOF'
		import time, torch
		keep = torch.ones(1 << 20)
		for i in range(80):
		    x = torch.ones(1 << 16)
		    time.sleep(0.05)
	EOF
	"$MT" record --flight 1s --flight-dumps 3 -o "$DIR" -- "$TORCH_PY" "$BATS_TEST_TMPDIR/churn.py" \
		>"$BATS_TEST_TMPDIR/flight.out" 2>"$BATS_TEST_TMPDIR/flight.err" &
	FL_PID=$!
	wait_for "$BATS_TEST_TMPDIR/flight.err" '^# python pid=' 60
	sleep 1.5
	for i in 1 2 3 4 5; do
		kill -USR1 "$FL_PID"
		sleep 0.3
	done
	wait "$FL_PID"
	FL_PID=
	cat "$BATS_TEST_TMPDIR/flight.err"
	[ "$(grep -c '^memtrace-bpf: flight: dumped .*-asked\.mtb: asked for: SIGUSR1 to the tracer$' "$BATS_TEST_TMPDIR/flight.err")" -eq 5 ]
	[ "$(grep -c '^memtrace-bpf: flight: removed .*, the oldest asked dump (end dumps go first, oom last): 4 dumps and [0-9]* bytes are over --flight-dumps 3 ' "$BATS_TEST_TMPDIR/flight.err")" -eq 2 ]
	[ "$(ls "$DIR" | wc -l)" -eq 3 ]
	ls "$DIR" | grep -q -- '-0005-'
	! ls "$DIR" | grep -q -- '-0001-'
	# the tensor made before any window is in each
	for f in "$DIR"/*.mtb; do
		"$MT" script -i "$f" | grep -q 'size=4194304 '
	done
}

@test "flight: bad input is one line and exit 2; a full disk fails a dump, never the command" {
	run "$MT" record --flight 0 -o "$BATS_TEST_TMPDIR" -- /bin/true
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: invalid --flight TIME|SIZE (a time of 1 s to 1e8 s: 600s, 10m, 1h; or a size of 1 MiB or more: 512MiB, 2G): '0' (see --help)" ]
	run "$MT" record --flight 10m -o /nonexistent -- /bin/true
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --flight: -o /nonexistent is no folder (No such file or directory)" ]
	run "$MT" record --flight 10m -o /proc -- /bin/true
	[ "$status" -eq 2 ]
	[[ $output == "memtrace-bpf: --flight: cannot write in -o /proc: "* ]]
	run "$MT" record --flight 10m --flight-dumps 0 -o "$BATS_TEST_TMPDIR" -- /bin/true
	[ "$status" -eq 2 ]
	run "$MT" record --flight 10m --flight-total 4K -o "$BATS_TEST_TMPDIR" -- /bin/true
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: invalid size of the dumps (at least 1 MiB): '4K' (see --help)" ]
	run "$MT" record --flight-dumps 3 -o "$BATS_TEST_TMPDIR/x" -- /bin/true
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --flight-dumps, --flight-total, --flight-at-end and --flight-together go with --flight" ]
	# a disk of 16 KiB: the dump does not fit
	mkdir "$BATS_TEST_TMPDIR/small"
	mount -t tmpfs -o size=16k tmpfs "$BATS_TEST_TMPDIR/small"
	cat >"$BATS_TEST_TMPDIR/many.py" <<-'EOF'
		import torch
		for i in range(3000):
		    x = torch.ones(1 << 10)
		print("done", flush=True)
	EOF
	run "$MT" record --flight 1h --flight-at-end -o "$BATS_TEST_TMPDIR/small" -- "$TORCH_PY" "$BATS_TEST_TMPDIR/many.py"
	# nothing left there, not even the partial dump under its hidden name
	left=$(ls -A "$BATS_TEST_TMPDIR/small")
	umount "$BATS_TEST_TMPDIR/small"
	[ -z "$left" ]
	echo "$output"
	[ "$status" -eq 2 ]
	grep -qx done <<<"$output"
	grep -qE '^memtrace-bpf: flight: write .*/small/flight-.*-end\.mtb: No space left on device: the partial dump removed; the next trigger dumps again$' <<<"$output"
	grep -qx "memtrace-bpf: flight: 0 dumps written in $BATS_TEST_TMPDIR/small; 1 failed (above)" <<<"$output"
}

# two gloo ranks launched as cuda.bats launches them (Debian's torchrun
# cannot start): rank 1 runs out of memory, rank 0 does not
@test "flight: --children: a window a rank; one rank's OOM dumps that rank only, named by its rank" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	root_stage "$ROOT_CUDA" "$ROOT/tests/fixtures/cuda_model.py"
	dir=$ROOT_CUDA$STAGE
	MT_GO=$STAGE/go MT_HOLD=$STAGE/hold USE_LIBUV=0 WORLD_SIZE=2 \
		MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 20000)) \
		"$STANDIN" --devices 2 -- /bin/sh -c 'for r in 0 1; do
			oom=; [ $r = 1 ] && oom=--oom
			RANK=$r LOCAL_RANK=$r /usr/bin/python3 "$0/cuda_model.py" \
				--rank --steps 2 $oom >"$0/rank$r.out" &
		done; wait' "$STAGE" 2>"$BATS_TEST_TMPDIR/run.err" &
	launcher=$!
	wait_for "$dir/rank0.out" '^READY ' 120
	wait_for "$dir/rank1.out" '^READY ' 120
	"$MT" record --flight 30s -o "$DIR" --children "$launcher" \
		>"$BATS_TEST_TMPDIR/flight.out" 2>"$BATS_TEST_TMPDIR/flight.err" &
	FL_PID=$!
	for ((i = 0; i < 1200; i++)); do
		[ "$(grep -c '^# python pid=' "$BATS_TEST_TMPDIR/flight.err")" -ge 2 ] && break
		sleep 0.1
	done
	touch "$dir/go"
	wait_for "$dir/rank0.out" '^weight head ' 120
	wait_for "$dir/rank1.out" '^weight head ' 120
	touch "$dir/hold"
	wait "$launcher"
	wait "$FL_PID"
	FL_PID=
	cat "$BATS_TEST_TMPDIR/flight.err"
	grep -q '^oom size=' "$dir/rank1.out"
	[ "$(ls "$DIR" | wc -l)" -eq 1 ]
	dump=$(dump_of oom)
	[[ $dump == */flight-*-rank1-oom.mtb ]]
	run "$MT" report --keys -i "$dump"
	[[ ${lines[0]} == "# record dump: out of memory in pid "*" (rank 1) at "* ]]
	grep -q '^# record rank: pid=[0-9]* rank=1 local_rank=1 world_size=2$' <<<"$output"
	grep -q '^# oom failed_allocations=1 ' <<<"$output"
	# its rank's device only
	grep -q '^# device .* dev=cuda:1 source=c10 ' <<<"$output"
	! grep -q '^# device .* dev=cuda:0 source=c10 ' <<<"$output"
}

@test "flight: usage crossing --alert-pct of --device-mem dumps once a crossing" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	cat >"$BATS_TEST_TMPDIR/grow.py" <<-'EOF'
		import time, torch
		for rnd in range(2):
		    keep = [torch.ones(1 << 20) for _ in range(12)]  # 48 MiB
		    time.sleep(0.2)
		    del keep
		    time.sleep(0.2)
	EOF
	run "$MT" record --flight 10s --alert-pct 50 --device-mem 64MiB -o "$DIR" -- \
		"$TORCH_PY" "$BATS_TEST_TMPDIR/grow.py"
	echo "$output"
	[ "$status" -eq 0 ]
	# two rounds up past 32 MiB and back: two crossings
	[ "$(grep -c '^memtrace-bpf: flight: dumped .*-usage\.mtb: usage crossed --alert-pct 50\.0% in pid [0-9]* (rank 0): [0-9]* bytes reserved of --device-mem 67108864$' <<<"$output")" -eq 2 ]
	run "$MT" record --flight 10s --alert-pct 50 -o "$DIR" -- /bin/true
	[ "$status" -eq 2 ]
	[[ $output == "memtrace-bpf: --flight --alert-pct PCT dumps when a process's reserved memory crosses PCT % of --device-mem: give both" ]]
}

# a CPU job that allocates until the file stop is there; its pid first
loop_job() {
	cat >"$BATS_TEST_TMPDIR/loop.py" <<-'EOF'
		import os, sys, time, torch
		print(os.getpid(), flush=True)
		while not os.path.exists(sys.argv[1]):
		    torch.ones(1 << 16)
		    time.sleep(0.001)
	EOF
	"$TORCH_PY" "$BATS_TEST_TMPDIR/loop.py" "$BATS_TEST_TMPDIR/stop" >"$BATS_TEST_TMPDIR/loop.out" &
	wait_for "$BATS_TEST_TMPDIR/loop.out" '^[0-9]+$' 60
	LOOP_PID=$(head -1 "$BATS_TEST_TMPDIR/loop.out")
}

@test "flight: two recorders on one process, SIGUSR1 to both in the same second: six whole dumps, each under a name of its own" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	loop_job
	"$MT" record --flight 10s -o "$DIR" -p "$LOOP_PID" >"$BATS_TEST_TMPDIR/a.out" 2>&1 &
	FL_PID=$!
	"$MT" record --flight 10s -o "$DIR" -p "$LOOP_PID" >"$BATS_TEST_TMPDIR/b.out" 2>&1 &
	MT_PID=$!
	wait_for "$BATS_TEST_TMPDIR/a.out" '^# python pid=' 60
	wait_for "$BATS_TEST_TMPDIR/b.out" '^# python pid=' 60
	sleep 1
	for i in 1 2 3; do
		kill -USR1 "$FL_PID" "$MT_PID"
		sleep 0.2
	done
	for f in a b; do
		for ((i = 0; i < 600; i++)); do
			[ "$(grep -c 'flight: dumped ' "$BATS_TEST_TMPDIR/$f.out")" -ge 3 ] && break
			sleep 0.05
		done
	done
	touch "$BATS_TEST_TMPDIR/stop"
	a=$FL_PID b=$MT_PID
	wait "$FL_PID"
	FL_PID=
	wait "$MT_PID"
	MT_PID=
	cat "$BATS_TEST_TMPDIR/a.out" "$BATS_TEST_TMPDIR/b.out"
	[ "$(grep -c "^memtrace-bpf: flight: dumped $DIR/flight-.*-asked\.mtb: asked for: SIGUSR1 to the tracer$" "$BATS_TEST_TMPDIR/a.out")" -eq 3 ]
	[ "$(grep -c "^memtrace-bpf: flight: dumped $DIR/flight-.*-asked\.mtb: asked for: SIGUSR1 to the tracer$" "$BATS_TEST_TMPDIR/b.out")" -eq 3 ]
	[ "$(ls -A "$DIR" | wc -l)" -eq 6 ]
	# each tracer's names carry its pid; each dump reads whole
	[ "$(ls "$DIR" | grep -c -- "-by$a-")" -eq 3 ]
	[ "$(ls "$DIR" | grep -c -- "-by$b-")" -eq 3 ]
	for f in "$DIR"/*.mtb; do
		run "$MT" report -i "$f"
		[ "$status" -eq 0 ]
		[[ ${lines[0]} == "# record dump: asked for: SIGUSR1 to the tracer" ]]
		! grep -qi 'warning\|error\|end block' <<<"$output"
	done
}

@test "flight: a SIGUSR1 as soon as the tracer takes it is said or dumped, never dropped" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	"$MT" record --flight 10s -o "$DIR" -- "$TORCH_PY" -c 'import torch' >"$BATS_TEST_TMPDIR/fl.out" 2>&1 &
	FL_PID=$!
	# as soon as it takes SIGUSR1 (SigCgt bit 10): long before the
	# command has loaded PyTorch
	for ((i = 0; i < 200; i++)); do
		mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$FL_PID/status" 2>/dev/null || true)
		[ -n "$mask" ] && (((0x$mask >> 9) & 1)) && break
		sleep 0.01
	done
	kill -USR1 "$FL_PID"
	wait "$FL_PID"
	FL_PID=
	cat "$BATS_TEST_TMPDIR/fl.out"
	said=$(grep -cx 'memtrace-bpf: flight: SIGUSR1: no process followed has a window yet (none attached, or every one gone and dumped): nothing to dump' "$BATS_TEST_TMPDIR/fl.out" || true)
	dumped=$(grep -c '^memtrace-bpf: flight: dumped .*-asked\.mtb: asked for: SIGUSR1 to the tracer$' "$BATS_TEST_TMPDIR/fl.out" || true)
	# the line, as a rule; the dump of the window made at the command's
	# first library load when the tracer's first turn came after it (a
	# loaded machine: seen once)
	echo "said $said, dumped $dumped"
	[ "$((said + dumped))" -eq 1 ]
	[ "$(ls -A "$DIR" | wc -l)" -eq "$dumped" ]
}

@test "flight: a moment of full disk fails one dump; the next trigger dumps" {
	DIR=$BATS_TEST_TMPDIR/small
	mkdir "$DIR"
	mount -t tmpfs -o size=4m tmpfs "$DIR"
	SMALL=$DIR
	# the disk full, as another writer fills it
	dd if=/dev/zero of="$DIR/filler" bs=64k 2>/dev/null || true
	loop_job
	"$MT" record --flight 1s -o "$DIR" -p "$LOOP_PID" >"$BATS_TEST_TMPDIR/fl.out" 2>&1 &
	FL_PID=$!
	wait_for "$BATS_TEST_TMPDIR/fl.out" '^# python pid=' 60
	sleep 1
	kill -USR1 "$FL_PID"
	wait_for "$BATS_TEST_TMPDIR/fl.out" 'flight: write ' 30
	# the room back
	rm "$DIR/filler"
	kill -USR1 "$FL_PID"
	wait_for "$BATS_TEST_TMPDIR/fl.out" 'flight: dumped ' 30
	touch "$BATS_TEST_TMPDIR/stop"
	status=0
	wait "$FL_PID" || status=$?
	FL_PID=
	left=$(ls -A "$DIR")
	umount "$DIR"
	SMALL=
	cat "$BATS_TEST_TMPDIR/fl.out"
	[ "$status" -eq 2 ]
	grep -qE "^memtrace-bpf: flight: write $DIR/flight-.*-asked\.mtb: No space left on device: the partial dump removed; the next trigger dumps again$" "$BATS_TEST_TMPDIR/fl.out"
	grep -qE "^memtrace-bpf: flight: dumped $DIR/flight-.*-asked\.mtb: asked for: SIGUSR1 to the tracer$" "$BATS_TEST_TMPDIR/fl.out"
	grep -qx "memtrace-bpf: flight: 1 dump written in $DIR; 1 failed (above)" "$BATS_TEST_TMPDIR/fl.out"
	[ "$(wc -w <<<"$left")" -eq 1 ]
	[[ $left == flight-*-asked.mtb ]]
}

# a parent that forks its children one after another once the file go is
# there: argument N children, each allocating; the last one SIGKILLs itself
forker() {
	cat >"$BATS_TEST_TMPDIR/forker.py" <<-'EOF'
		import os, signal, sys, time, torch
		go, n, events = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
		print(os.getpid(), flush=True)
		while not os.path.exists(go):
		    time.sleep(0.01)
		for i in range(n):
		    pid = os.fork()
		    if pid == 0:
		        for j in range(events // 2):
		            torch.ones(16)
		        time.sleep(0.03)
		        if i == n - 1:
		            keep = torch.ones(1 << 12)
		            time.sleep(0.2)
		            os.kill(os.getpid(), signal.SIGKILL)
		        os._exit(0)
		    os.waitpid(pid, 0)
		    print("child", i, pid, flush=True)
		    if len(sys.argv) > 4:
		        time.sleep(float(sys.argv[4]))
		print("all done", flush=True)
	EOF
}

@test "flight: --children follows a parent's 300 children one after another (slots of the gone reused): the 300th, killed, is dumped" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	forker
	"$TORCH_PY" "$BATS_TEST_TMPDIR/forker.py" "$BATS_TEST_TMPDIR/go" 300 2 >"$BATS_TEST_TMPDIR/forker.out" &
	FORKER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/forker.out" '^[0-9]+$' 60
	parent=$(head -1 "$BATS_TEST_TMPDIR/forker.out")
	"$MT" record --flight 10s -o "$DIR" --children "$parent" >"$BATS_TEST_TMPDIR/fl.out" 2>"$BATS_TEST_TMPDIR/fl.err" &
	FL_PID=$!
	wait_for "$BATS_TEST_TMPDIR/fl.err" "^# python pid=$parent " 60
	touch "$BATS_TEST_TMPDIR/go"
	wait_for "$BATS_TEST_TMPDIR/forker.out" '^all done$' 300
	wait "$FL_PID"
	FL_PID=
	cat "$BATS_TEST_TMPDIR/fl.out"
	grep -v '^# \(follow\|attach\|python\)' "$BATS_TEST_TMPDIR/fl.err" || true
	last=$(awk '$1 == "child" && $2 == 299 { print $3 }' "$BATS_TEST_TMPDIR/forker.out")
	[ -n "$last" ]
	# every child followed (one gone before the tracer saw its fork is
	# not: a loaded machine's margin)
	n=$(grep -c '^# follow pid=[0-9]* comm=.* (forked)$' "$BATS_TEST_TMPDIR/fl.err")
	echo "children followed: $n of 300"
	[ "$n" -ge 295 ]
	grep -q "^# follow pid=$last comm=.* (forked)$" "$BATS_TEST_TMPDIR/fl.err"
	! grep -q '^# lost processes=' "$BATS_TEST_TMPDIR/fl.out"
	dump=$(dump_of signal)
	[[ $dump == */flight-*-pid$last-rank0-signal.mtb ]]
	grep -qx "memtrace-bpf: flight: dumped $dump: pid $last (rank 0) was killed by SIGKILL (Killed)" "$BATS_TEST_TMPDIR/fl.err"
	[ "$(ls "$DIR" | wc -l)" -eq 1 ]
}

@test "flight: a child's window is freed once it is gone and dumped (--flight-at-end: at its end): six children one after another" {
	DIR=$BATS_TEST_TMPDIR/dumps
	mkdir "$DIR"
	forker
	# 60 k events each, 2 s apart: a child's window is freed a second
	# after it is seen gone
	"$TORCH_PY" "$BATS_TEST_TMPDIR/forker.py" "$BATS_TEST_TMPDIR/go" 6 60000 2 >"$BATS_TEST_TMPDIR/forker.out" &
	FORKER_PID=$!
	wait_for "$BATS_TEST_TMPDIR/forker.out" '^[0-9]+$' 60
	parent=$(head -1 "$BATS_TEST_TMPDIR/forker.out")
	"$MT" record --flight 1h --flight-at-end -o "$DIR" --children "$parent" >"$BATS_TEST_TMPDIR/fl.out" 2>"$BATS_TEST_TMPDIR/fl.err" &
	FL_PID=$!
	wait_for "$BATS_TEST_TMPDIR/fl.err" "^# python pid=$parent " 60
	touch "$BATS_TEST_TMPDIR/go"
	# the tracer's memory 2 s after the first child and after the last
	wait_for "$BATS_TEST_TMPDIR/forker.out" '^child 0 ' 120
	sleep 2
	rss1=$(awk '/^VmRSS:/ { print $2 }' "/proc/$FL_PID/status")
	wait_for "$BATS_TEST_TMPDIR/forker.out" '^child 5 ' 300
	sleep 2
	rss6=$(awk '/^VmRSS:/ { print $2 }' "/proc/$FL_PID/status")
	wait "$FL_PID"
	FL_PID=
	cat "$BATS_TEST_TMPDIR/fl.err"
	echo "VmRSS after the first child: $rss1 KiB; after the sixth: $rss6 KiB"
	# a window of 60 k events is 9.6 MiB (168 bytes an event): five
	# more kept would be 48 MiB more
	[ "$((rss6 - rss1))" -lt 16384 ]
	# each process's end dump at its end, the parent's too; the last
	# child, killed, has its signal dump instead
	for pid in $parent $(awk '$1 == "child" && $2 < 5 { print $3 }' "$BATS_TEST_TMPDIR/forker.out"); do
		grep -qE "^memtrace-bpf: flight: dumped $DIR/flight-.*-pid$pid-rank0-end\.mtb: pid $pid \(rank 0\) ended \(--flight-at-end\)$" "$BATS_TEST_TMPDIR/fl.err"
	done
	dump_of signal
	[ "$(ls "$DIR" | wc -l)" -eq 7 ]
}
