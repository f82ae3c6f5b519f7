#!/usr/bin/env bats
# Many processes: --children follows a launcher and every worker it starts,
# also after the attach; ranks from the environment on every line and in
# the per-rank table; --all finds a process started after the attach.
# Real CPU PyTorch workers (Debian's python3 and torch).

load helpers

# launch 3 workers under memtrace-bpf ARGS... --children; sets TRACE
trace_launcher() {
	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/launcher.py" 3
	for ((i = 0; i < 600; i++)); do
		n=0
		for c in $(pgrep -P "$fx_PID"); do
			grep -q libc10 "/proc/$c/maps" 2>/dev/null && n=$((n + 1))
		done
		[ "$n" -ge 2 ] && break
		sleep 0.1
	done
	trace 1 "$@" --keys --children "$fx_PID"
	release fx
	settle fx '^done '
	finish
	[ "$MT_STATUS" -eq 0 ]
}

@test "--children: every worker of a launcher, one started after the attach, with its rank" {
	trace_launcher
	grep -q '^done failed=0$' "$BATS_TEST_TMPDIR/fx.out"
	[ "$(grep -c '^worker ' "$BATS_TEST_TMPDIR/fx.out")" -eq 3 ]
	while read -r _ rank pid bytes line; do
		rank=${rank#rank=} pid=${pid#pid=} bytes=${bytes#bytes=} line=${line#line=}
		echo "# rank $rank: pid $pid, $bytes bytes"
		# the rank's three tensors, on its pid, with rank= on each line
		[ "$(events c10:cpu_alloc | grep -c "^python3 $pid/$pid .* size=$bytes .* rank=$rank\$")" -eq 3 ]
		# every line of that pid carries its rank
		! events 'c10:cpu_[a-z]+' | grep "^python3 $pid/" | grep -v " rank=$rank\$"
		grep -qE "^# rank rank=$rank pid=$pid peak=[0-9]+ current=[0-9]+ peak_vs_median=[-+0-9.]+% allocs=[0-9]+ failed=0 live=[0-9]+ leaks=0\$" "$TRACE"
	done < <(grep '^worker ' "$BATS_TEST_TMPDIR/fx.out")
	# the last worker came after the attach: followed from its fork
	late=$(sed -nE 's/^worker rank=2 pid=([0-9]+) .*/\1/p' "$BATS_TEST_TMPDIR/fx.out")
	grep -q "^# follow pid=$late comm=.* (forked)\$" "$TRACE"
	# the launcher itself runs no torch: no lines of its own
	! events 'c10:cpu_[a-z]+' | grep -q "^python3 $fx_PID/"
}

@test "--all: a process started after the attach is traced" {
	trace 0 --keys --all -d 600
	wait_for "$BATS_TEST_TMPDIR/trace.out" '^# memtrace-bpf ' 30
	# started after the attach; it allocates once the go file is there
	RANK=5 MT_GO=$BATS_TEST_TMPDIR/fx.go "$TORCH_PY" \
		"$ROOT/tests/fixtures/rank_worker.py" >"$BATS_TEST_TMPDIR/fx.out" &
	wpid=$!
	wait_for "$BATS_TEST_TMPDIR/trace.out" "^# follow pid=$wpid " 60
	touch "$BATS_TEST_TMPDIR/fx.go"
	wait "$wpid"
	read -r _ _ _ bytes _ <"$BATS_TEST_TMPDIR/fx.out"
	bytes=${bytes#bytes=}
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c " size=$bytes .* rank=5\$" "$BATS_TEST_TMPDIR/trace.out")" -ge 3 ] && break
		sleep 0.1
	done
	# --all waits for new processes: it must still run (a fresh-clone
	# run once found it gone here, with nothing said)
	if ! kill -INT "$MT_PID"; then
		wait "$MT_PID" || echo "memtrace-bpf ended early: status $?" >&2
		cat "$BATS_TEST_TMPDIR/trace.err" >&2
		false
	fi
	finish
	[ "$(events c10:cpu_alloc | grep -c "^python3 $wpid/.* size=$bytes .* rank=5\$")" -eq 3 ]
}

@test "-o 'trace_rank{rank}.log': one file per rank, each with its own lines and summary" {
	trace_launcher -o "$BATS_TEST_TMPDIR/trace_rank{rank}.log"
	while read -r _ rank pid bytes _; do
		rank=${rank#rank=} pid=${pid#pid=} bytes=${bytes#bytes=}
		f=$BATS_TEST_TMPDIR/trace_rank$rank.log
		echo "# $f"
		[ -s "$f" ]
		head -1 "$f" | grep -q "^# memtrace-bpf .*: pid=$pid("
		[ "$(grep -c "^python3 $pid/$pid .*: c10:cpu_alloc: .* size=$bytes .* rank=$rank\$" "$f")" -eq 3 ]
		# only its own events
		! grep -E '^[^#]' "$f" | grep -v '^	' | grep -vq "^python3 $pid/"
		grep -q "^# rank rank=$rank pid=$pid " "$f"
		grep -q '^# summary ' "$f"
	done < <(grep '^worker ' "$BATS_TEST_TMPDIR/fx.out")
}

@test "record -o 'r{rank}.mtb': one record per rank, each reporting its own events" {
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace_launcher record -o "$BATS_TEST_TMPDIR/r{rank}.mtb"
	while read -r _ rank pid bytes _; do
		rank=${rank#rank=} pid=${pid#pid=} bytes=${bytes#bytes=}
		run "$MT" script -i "$BATS_TEST_TMPDIR/r$rank.mtb"
		[ "$status" -eq 0 ]
		[ "$(grep -c "^python3 $pid/$pid .*: c10:cpu_alloc: .* size=$bytes .* rank=$rank\$" <<<"$output")" -eq 3 ]
		run "$MT" report --keys -i "$BATS_TEST_TMPDIR/r$rank.mtb"
		grep -q "^# record target: pid=$pid " <<<"$output"
		grep -q "^# record rank: pid=$pid rank=$rank local_rank=$rank world_size=3\$" <<<"$output"
	done < <(grep '^worker ' "$BATS_TEST_TMPDIR/fx.out")
}

@test "NCCL: ncclMemAlloc and the runtime calls NCCL makes are NCCL's own" {
	# the real ncclMemAlloc needs a GPU: the stand-in passes it to the
	# stand-in runtime's cudaMalloc, as NCCL goes through CUDA
	LD_LIBRARY_PATH=$FIX/fake HELD=1 fixture fx python3 \
		"$ROOT/tests/fixtures/nccl_calls.py" "$FIX/fake/libnccl.so.2" 2097152 4194304
	trace 1 --keys -p "$fx_PID"
	wait_for "$BATS_TEST_TMPDIR/trace.out" '^# attach .*libnccl' 30
	release fx
	settle fx '^done'
	finish
	events 'nccl:ncclMemAlloc'
	[ "$(events nccl:ncclMemAlloc | grep -c ' size=2097152 .*ret=0 .*module=\[nccl\]')" -eq 1 ]
	[ "$(events nccl:ncclMemFree | grep -c 'ret=0 .*module=\[nccl\]')" -eq 2 ]
	# the cudaMalloc under it: caller libnccl, owner [nccl]
	events cudart:cudaMalloc | grep -q ' size=4194304 .* caller=libnccl.so.2 phase=other module=\[nccl\]$'
	grep -q "^# device pid=$fx_PID dev=cuda:? source=nccl current=0 peak=6291456\$" "$TRACE"
	grep -q "^# module pid=$fx_PID phase=other module=\[nccl\] allocs=4 " "$TRACE"
}
