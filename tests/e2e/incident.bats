#!/usr/bin/env bats
# Incident analyses: the peak and what filled it, leaks, OOM capture,
# --watch's time to OOM, operators. Real PyTorch on the CPU (Debian's
# python3 and torch), the real libcudart failing, the stand-in libcudart.

load helpers

MODEL_PY=$ROOT/tests/fixtures/incident_model.py

# trace incident_model.py ARGS... with memtrace-bpf -q -p; sets TRACE, MODEL
trace_model() {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" "$@"
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID" ${MTARGS:-}
	release fx
	settle fx '^spike '
	finish
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
}

# section FILE START: the lines from the first matching START on, while
# they are the section's ("#\t" stack lines or "#   " group lines)
section() {
	awk -v start="$2" '
		!on && $0 ~ start { on = 1; print; next }
		on && /^#(\t|   )/ { print; next }
		on { exit }' "$1"
}

@test "a planted leak is reported at its line with its growth per step" {
	trace_model --leak --steps 8
	read -r _ line bytes < <(grep '^leak ' "$MODEL")
	leak=$(section "$TRACE" '^# leak pid=')
	echo "$leak"
	grep -q "^# leak pid=$fx_PID growth=+1.00/step bytes_growth=+$bytes/step " <<<"$leak"
	grep -q "event=c10:cpu_alloc " <<<"$leak"
	grep -qF "main ($MODEL_PY:$line)" <<<"$leak"
	# one leak only: the model's own state settles after the first step
	[ "$(grep -c '^# leak pid=' "$TRACE")" -eq 1 ]
}

@test "a clean loop of the same model reports no leak" {
	trace_model --steps 8
	grep '^# leak' "$TRACE" || true
	grep -q '^# leaks verdict=none boundaries=8$' "$TRACE"
}

@test "the peak view sums to the peak and names its largest allocation's owner" {
	trace_model --steps 3
	read -r _ line bytes < <(grep '^spike ' "$MODEL")
	peak=$(section "$TRACE" "^# peak pid=$fx_PID cpu allocated: ")
	echo "$peak"
	title=$(head -1 <<<"$peak")
	total=$(sed -nE 's/.* at [0-9.]+ s \(event [0-9]+\) bytes=([0-9]+) .*/\1/p' <<<"$title")
	[ -n "$total" ]
	# the group lines (top ones and the rest) add up to the peak exactly
	sum=$(grep -E '^#   ' <<<"$peak" | sed -nE 's/.* bytes=([0-9]+) count=.*/\1/p' | paste -sd+ | bc)
	[ "$sum" -eq "$total" ]
	grep -q " sum=$total\$" <<<"$title"
	# the spike is the largest group, with its module, phase and line
	first=$(grep -E '^#   ' <<<"$peak" | head -1)
	grep -q " bytes=$bytes count=1 event=c10:cpu_alloc module=spike phase=forward " <<<"$first"
	grep -qF "#	Spike.forward ($MODEL_PY:$line)" <<<"$peak"
	# it is the peak: nothing else comes close
	[ "$total" -ge "$bytes" ]
}

@test "operators: the call sites that allocate most, Python frames and autograd nodes" {
	trace_model --steps 3
	grep '^# op' "$TRACE"
	grep -q "^# operators pid=$fx_PID (top 20 call sites by bytes allocated)$" "$TRACE"
	grep -qE '^# op bytes=[0-9]+ \(.*\) allocs=[0-9]+ autograd node: AddmmBackward0$' "$TRACE"
	grep -qF "python: Spike.forward ($MODEL_PY:" "$TRACE"
	[ "$(grep -c '^# op bytes=' "$TRACE")" -le 20 ]
}

@test "OOM through the stand-in libcudart: a block with the request, stack and state" {
	LD_LIBRARY_PATH=$FIX/fake FAKE_CUDART_FAIL_SIZE=4000000 \
		HELD=1 fixture fx python3 "$ROOT/tests/fixtures/ctypes_cudart.py" \
		--depth 2 "$FIX/fake/libcudart.so.13" 1000003 5000011
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID"
	release fx
	settle fx '^op=free '
	finish
	oom=$(section "$TRACE" '^# OOM pid=')
	echo "$oom"
	grep -qE "^# OOM pid=$fx_PID tid=$fx_PID dev=cuda:\\? at [0-9.]+ s: cudart:cudaMalloc size=5000011 \\(4.77 MiB\\) failed: cudaErrorMemoryAllocation \\(2\\)$" <<<"$oom"
	grep -q '^#   module=- phase=other$' <<<"$oom"
	grep -q '^#   state cuda:? cudart: live=977 KiB peak=977 KiB$' <<<"$oom"
	grep -q '^#	do_calls (.*ctypes_cudart.py:[0-9]*)$' <<<"$oom"
	grep -q '^#	mt_frame (.*ctypes_cudart.py:[0-9]*)$' <<<"$oom"
	grep -q '^#     977 KiB in 1 allocations: cudart:cudaMalloc module=- phase=other at do_calls ' <<<"$oom"
	grep -q '^# oom failed_allocations=1 num_alloc_retries=0 allocator_gave_up=0 exceptions=0 out_of_memory_errors=0$' "$TRACE"
}

@test "the real libcudart without a GPU: a failed call with its error, not an OOM" {
	HELD=1 fixture fx python3 "$ROOT/tests/fixtures/ctypes_cudart.py" "$CUDART" 1310723
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID"
	release fx
	settle fx '^op=malloc '
	finish
	# cudaErrorInsufficientDriver is no shortage of memory
	[ "$(grep -c '^# OOM' "$TRACE")" -eq 0 ]
	grep -q '^# failed event=cudart:cudaMalloc ret=35 err=cudaErrorInsufficientDriver count=1 bytes=1310723$' "$TRACE"
	grep -q '^# oom failed_allocations=0 num_alloc_retries=0 allocator_gave_up=0 exceptions=0 out_of_memory_errors=0$' "$TRACE"
}

@test "--watch predicts the time to OOM of a steady growth within 20 %" {
	local size=$((16 << 20)) n=200
	LD_LIBRARY_PATH=$FIX/fake FAKE_CUDART_CAPACITY=$((size * n)) \
		run "$MT" --keys -q --watch 0.25 --watch-window 2 --device-mem $((size * n)) \
		-- python3 "$ROOT/tests/fixtures/grow_cudart.py" \
		"$FIX/fake/libcudart.so.13" $size 0.02
	echo "$output" | grep -E '^# watch|^oom ' || true
	[ "$status" -eq 0 ]
	t_oom=$(sed -nE 's/^oom t=([0-9.]+) .*/\1/p' <<<"$output")
	[ -n "$t_oom" ]
	# every prediction made 1 to 3 s before the OOM
	checked=0
	while read -r at eta; do
		err=$(bc -l <<<"e = ($at + $eta - $t_oom) / ($t_oom - $at); if (e < 0) -e else e")
		echo "at=$at predicted=$(bc -l <<<"$at + $eta") actual=$t_oom error=$err"
		[ "$(bc -l <<<"$err <= 0.2")" -eq 1 ]
		checked=$((checked + 1))
	done < <(sed -nE 's/^# watch [0-9.]+s at=([0-9.]+) .* oom_in=([0-9.]+)s .*/\1 \2/p' <<<"$output" |
		awk -v t="$t_oom" '{ d = t - $1 } d >= 1 && d <= 3')
	[ "$checked" -ge 4 ]
}

@test "--trace-exceptions: torch's OutOfMemoryError printed with its stack when raised" {
	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/raise_exc.py" --torch
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID" --trace-exceptions OutOfMemoryError
	release fx
	settle fx '^raise '
	finish
	read -r _ line < <(grep '^raise ' "$BATS_TEST_TMPDIR/fx.out")
	grep -E '^# (EXCEPTION|oom)' "$TRACE"
	[ "$(grep -c "^# EXCEPTION pid=$fx_PID tid=$fx_PID at [0-9.]* s: OutOfMemoryError raised module=- phase=other$" "$TRACE")" -eq 3 ]
	grep -qF "#	raise_it ($ROOT/tests/fixtures/raise_exc.py:$line)" "$TRACE"
	# the KeyError was not asked for
	! grep -q 'KeyError' "$TRACE"
	grep -q ' exceptions=3 out_of_memory_errors=3$' "$TRACE"
}

@test "--trace-exceptions on every CPython 3.10-3.13: the type and the line of the raise" {
	local n=0
	for py in /root/.pyenv/versions/3.1[0-3].*/bin/python3 /usr/bin/python3; do
		[ -x "$py" ] || continue
		HELD=1 fixture fx "$py" "$ROOT/tests/fixtures/raise_exc.py"
		trace 0 --keys -p "$fx_PID" --trace-exceptions ValueError,KeyError
		# no allocator library here: wait for the raise probe instead
		wait_for "$BATS_TEST_TMPDIR/trace.out" '^# attach .*python.* probes=[1-9]' 30
		release fx
		settle fx '^raise '
		finish
		read -r _ line < <(grep '^raise ' "$BATS_TEST_TMPDIR/fx.out")
		echo "# $py: $(grep -c ': python:raise: ' "$TRACE") raises"
		[ "$(grep -c ': python:raise: type=ValueError ' "$TRACE")" -eq 3 ]
		# 3.13 sets dict's KeyError without _PyErr_SetObject
		case $("$py" -c 'import sys; print(sys.version_info[1])') in
		13) ;;
		*) [ "$(grep -c ': python:raise: type=KeyError ' "$TRACE")" -eq 1 ] ;;
		esac
		grep -qF "	raise_it ($ROOT/tests/fixtures/raise_exc.py:$line)" "$TRACE"
		n=$((n + 1))
	done
	[ "$n" -ge 2 ]
}

# the peak title of process $fx_PID's CPU account in $TRACE
peak_title() {
	grep "^# peak pid=$fx_PID cpu allocated: " "$TRACE"
}

@test "--max-live overflow marks the peak incomplete and advises a size that holds it" {
	trace_model --steps 3
	full=$(peak_title | sed -nE 's/.* bytes=([0-9]+) groups=.*/\1/p')
	[ -n "$full" ]
	! grep -q 'incomplete=' "$TRACE"

	MTARGS="--max-live 10" trace_model --steps 3
	title=$(peak_title)
	echo "$title"
	grep -qE ' incomplete=live_table untracked_allocs=[1-9][0-9]* untracked_bytes=[1-9][0-9]* advise_max_live=[0-9]+$' <<<"$title"
	advise=$(sed -nE 's/.* advise_max_live=([0-9]+)$/\1/p' <<<"$title")
	[ "$advise" -gt 10 ]
	# the low peak is no longer silent anywhere it is used
	grep -qE "^# device pid=$fx_PID dev=cpu source=cpu .* incomplete=live_table .* advise_max_live=$advise\$" "$TRACE"
	grep -qE '^# event c10:cpu_free count=[0-9]+ bytes=[0-9]+ incomplete=live_table unpaired=[1-9]' "$TRACE"
	grep -qE "^# live allocations=[0-9]+ groups=[0-9]+ incomplete=live_table .* advise_max_live=$advise\$" "$TRACE"
	grep -qE "^# untracked stats=[0-9]+ live_table_full=[1-9][0-9]* max_live=10 live_high=[0-9]+ advise_max_live=$advise\$" "$TRACE"

	MTARGS="--max-live $advise" trace_model --steps 3
	peak_title
	! grep 'incomplete=' "$TRACE"
	! grep -q '^# untracked' "$TRACE"
	peak_title | grep -q " bytes=$full groups="
}
