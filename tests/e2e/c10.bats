#!/usr/bin/env bats
# The PyTorch layer with Debian's real libc10: the caching allocator's
# block reports and OOM report (replayed by a program, there being no GPU),
# and CPU tensor storage from a real model trained on the CPU.

load helpers

# the fixture's own account of each call, in our line format
expected_c10() {
	awk '
	/^op=(alloc|free) / {
		split($0, f, /[ =]/)
		# f: op alloc ptr P size S allocated A reserved R dev D
		size = f[6]; ev = "alloc"
		if (size < 0) { size = -size; ev = "free" }
		printf "c10:%s: ptr=%s size=%d dev=%s allocated=%s reserved=%s\n", ev, f[4], size, f[12], f[8], f[10]
	}
	/^op=oom / {
		split($0, f, /[ =]/)
		printf "c10:oom: size=%s dev=%s allocated=%s reserved=%s\n", f[6], f[12], f[8], f[10]
	}' "$1"
}

@test "c10 block reports: every alloc, free and oom with ptr, size, device and totals" {
	fixture fx "$FIX/c10_report"
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	expected_c10 "$BATS_TEST_TMPDIR/fx.out" >"$BATS_TEST_TMPDIR/want"
	grep -E ': c10:(alloc|free|oom): ' "$TRACE" |
		sed -E 's/^.*: (c10:[a-z]+: )/\1/; s/ caller=c10_report$//' >"$BATS_TEST_TMPDIR/got"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/want")" -ge 10 ]
	grep -q ' dev=cuda:1 ' "$BATS_TEST_TMPDIR/want"
	grep -q '^c10:free: ' "$BATS_TEST_TMPDIR/want"
	diff -u "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"

	# the summary's per-device totals are the last and the highest seen
	for dev in 0 1; do
		last=$(grep " dev=cuda:$dev " "$BATS_TEST_TMPDIR/want" | grep -v '^c10:oom' | tail -1)
		a=$(field "$last" allocated)
		r=$(field "$last" reserved)
		apeak=$(grep " dev=cuda:$dev " "$BATS_TEST_TMPDIR/want" | sed -E 's/.* allocated=([0-9]+).*/\1/' | sort -n | tail -1)
		grep -q "^# device pid=$fx_PID dev=cuda:$dev source=c10 allocated=$a allocated_peak=$apeak reserved=$r " "$TRACE"
	done
	grep -q '^# event c10:oom count=1 ' "$TRACE"
}

@test "real model on the CPU: c10:cpu_alloc lines match the tensors it makes on purpose" {
	fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/cpu_model.py" --steps 2
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q '^done steps=2' "$BATS_TEST_TMPDIR/fx.out"
	n=0
	while read -r _ sz cnt; do
		size=${sz#size=}
		count=${cnt#count=}
		got=$(events c10:cpu_alloc | grep -c " size=$size dev=cpu ")
		freed=$(events c10:cpu_free | grep -c " size=$size dev=cpu ")
		echo "marker $size: made $count, traced $got allocs, $freed frees"
		[ "$got" -eq "$count" ]
		[ "$freed" -eq "$count" ]
		n=$((n + 1))
	done < <(grep '^marker ' "$BATS_TEST_TMPDIR/fx.out")
	[ "$n" -ge 2 ]
	# the model's own tensors are there too, and everything is accounted
	[ "$(events c10:cpu_alloc | wc -l)" -gt 100 ]
	allocs=$(events c10:cpu_alloc | wc -l)
	grep -q "^# event c10:cpu_alloc count=$allocs " "$TRACE"
	grep -q "^# device pid=$fx_PID dev=cpu source=cpu current=[0-9]* peak=[1-9]" "$TRACE"
}

@test "--no-cpu leaves CPU tensors out" {
	fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/cpu_model.py" --steps 1
	trace 1 --keys -p "$fx_PID" --no-cpu
	release fx
	finish
	grep -q "^# attach pid=$fx_PID lib=.*libc10.* probes=2$" "$TRACE"
	[ -z "$(events c10:cpu_alloc)" ]
}

@test "a tensor made on one CPU and freed on another: each free finds its allocation" {
	[ "$(nproc)" -ge 2 ] || skip "needs two CPUs"
	fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/cross_cpu.py" --n 2000
	trace 1 --keys -p "$fx_PID"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q '^done n=2000$' "$BATS_TEST_TMPDIR/fx.out"
	# each CPU sends its events in batches: handled out of time order, a
	# free would come before its allocation and carry no size
	[ "$(events c10:cpu_alloc | grep -c ' size=7919 ')" -eq 2000 ]
	[ "$(events c10:cpu_free | grep -c ' size=7919 ')" -eq 2000 ]
	[ -z "$(events c10:cpu_free | grep ' size=?')" ]
	! grep -q '^# unseen frees_before_attach=' "$TRACE"
	! grep -q 'came after later ones' "$BATS_TEST_TMPDIR/trace.err"
}

# uprobe_links PID: "TYPE COUNT" of each uprobe link the tracer PID holds
# (its fdinfo): uprobe_multi with its offsets' count, perf with 1
uprobe_links() {
	local f
	for f in /proc/"$1"/fdinfo/*; do
		awk '
			/^link_type:/ { type = $2 }
			/^uprobe_cnt:/ { cnt = $2 }
			/^event_type:/ { event = $2 }
			END {
				if (type == "uprobe_multi") print type " " cnt
				else if (type == "perf" && (event == "uprobe" || event == "uretprobe")) print type " 1"
			}' "$f" 2>/dev/null
	done
}

@test "uprobe_multi links (kernel 6.12+): a link per program holds a file's probes; other threads' events as perf uprobes see them" {
	[ "$(nproc)" -ge 2 ] || skip "needs two CPUs"
	local major minor want got tid ftid probes
	IFS=. read -r major minor _ <<<"$(uname -r)"
	# before 6.12 a pid's probes stay perf uprobes (user/trace/umulti.c)
	want=perf
	if [ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 12 ]; }; then
		want=uprobe_multi
	fi
	for multi in 1 0; do
		[ "$multi" = 0 ] && want=perf
		fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/cross_cpu.py" --n 500
		MEMTRACE_BPF_UPROBE_MULTI=$multi trace 1 --keys -p "$fx_PID"
		# the loader is attached last: every link is made by then
		wait_for "$BATS_TEST_TMPDIR/trace.out" '^# attach .*lib=.*/ld-linux[^/]* probes='
		probes=$(sed -nE 's/^# attach .* probes=([0-9]+)$/\1/p' "$BATS_TEST_TMPDIR/trace.out" | awk '{ n += $1 } END { print n + 0 }')
		uprobe_links "$MT_PID" >"$BATS_TEST_TMPDIR/links.$multi"
		release fx
		finish
		[ "$MT_STATUS" -eq 0 ]
		grep -q '^done n=500$' "$BATS_TEST_TMPDIR/fx.out"
		echo "MEMTRACE_BPF_UPROBE_MULTI=$multi: probes=$probes in all, want $want links:"
		cat "$BATS_TEST_TMPDIR/links.$multi"
		# every link of the wanted type, and together they hold the probes
		[ "$probes" -ge 3 ]
		[ -z "$(grep -v "^$want " "$BATS_TEST_TMPDIR/links.$multi")" ]
		[ "$(awk '{ n += $2 } END { print n + 0 }' "$BATS_TEST_TMPDIR/links.$multi")" -eq "$probes" ]
		if [ "$want" = uprobe_multi ]; then
			[ "$(wc -l <"$BATS_TEST_TMPDIR/links.$multi")" -lt "$probes" ]
		fi
		# the tensors are made on one thread and freed on another, neither
		# the process's main thread: each event carries its own tid
		events c10:cpu_alloc | grep ' size=7919 ' | awk '{ print $2 }' | sort | uniq -c >"$BATS_TEST_TMPDIR/alloc.$multi"
		events c10:cpu_free | grep ' size=7919 ' | awk '{ print $2 }' | sort | uniq -c >"$BATS_TEST_TMPDIR/free.$multi"
		cat "$BATS_TEST_TMPDIR/alloc.$multi" "$BATS_TEST_TMPDIR/free.$multi"
		read -r got tid <"$BATS_TEST_TMPDIR/alloc.$multi"
		[ "$got" -eq 500 ] && [ "$tid" != "$fx_PID/$fx_PID" ]
		read -r got ftid <"$BATS_TEST_TMPDIR/free.$multi"
		[ "$got" -eq 500 ] && [ "$ftid" != "$fx_PID/$fx_PID" ] && [ "$ftid" != "$tid" ]
		# the model's other tensors: as many either way
		events c10:cpu_alloc | grep -vc ' size=7919 ' >"$BATS_TEST_TMPDIR/others.$multi" || true
	done
	diff "$BATS_TEST_TMPDIR/others.1" "$BATS_TEST_TMPDIR/others.0"
}
