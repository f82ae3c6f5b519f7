#!/usr/bin/env bats
# Python stacks, nn.Module names and phases, with a real PyTorch model
# trained on the CPU (Debian's python3 and torch): each layer has sizes no
# other tensor has, so the owner of each allocation is known from its size.

load helpers

# trace attrib_model.py ARGS... with memtrace-bpf -p MTARGS; sets TRACE,
# MODEL. The model is kept alive until its events are read: the names of a
# stack are read from the living process.
trace_model() {
	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/attrib_model.py" "$@"
	trace 1 --keys -p "$fx_PID" ${MTARGS:-}
	release fx
	settle fx '^root '
	finish
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
	grep -q '^mark ' "$MODEL"
}

# event lines (no stack lines) with this exact size
sized() {
	grep -E "^[^#	].* size=$1 " "$TRACE" || true
}

@test "forward activations carry their layer's full name and phase=forward" {
	trace_model --steps 2
	while read -r _ name bytes; do
		lines=$(sized "$bytes" | grep ': c10:cpu_alloc: ' | grep ' phase=forward ')
		echo "act $name ($bytes B): $(wc -l <<<"$lines") forward allocations"
		grep -q " module=$name\$" <<<"$lines" || { echo "$lines"; false; }
	done < <(grep '^act ' "$MODEL")
	# the ReLU after encoder.1.proj is named too
	sized "$(awk '$2=="encoder.1.proj"{print $3}' "$MODEL" | head -1)" |
		grep ' phase=forward ' | grep -q ' module=encoder.1.act$'
}

# each weight's gradient carries its layer and the Node its forward made
assert_grads() {
	while read -r _ name bytes; do
		line=$(sized "$bytes" | grep ': c10:cpu_alloc: ' | grep ' phase=backward ' | head -1)
		echo "grad $name: $line"
		[[ "$line" == *" module=$name node=AddmmBackward0" ]]
	done < <(grep '^weight ' "$MODEL" | grep -v ' head ')
}

@test "weight gradients carry phase=backward, the layer and its autograd node" {
	trace_model --steps 2
	assert_grads
}

@test "Adam's state carries phase=optimizer" {
	trace_model --steps 2
	while read -r _ name bytes; do
		n=$(sized "$bytes" | grep ': c10:cpu_alloc: ' | grep -c ' phase=optimizer ')
		echo "$name: $n optimizer allocations of $bytes B"
		# exp_avg and exp_avg_sq, made at the first step
		[ "$n" -ge 2 ]
	done < <(grep '^weight ' "$MODEL")
}

@test "phase and module coverage of the bytes allocated in the steps" {
	trace_model --steps 3
	read -r total other < <(awk '/^# module /{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		t += f["bytes_allocated"]; if (f["phase"] == "other") o += f["bytes_allocated"]
	} END { print t, o }' "$TRACE")
	read -r back backmod < <(awk '/^# module .* phase=backward /{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		b += f["bytes_allocated"]; if (f["module"] != "-") m += f["bytes_allocated"]
	} END { print b, m }' "$TRACE")
	# the marker tensor is made outside any phase on purpose: not counted
	mark=$(awk '$1=="mark"{print $3}' "$MODEL")
	total=$((total - 3 * mark))
	other=$((other - 3 * mark))
	phased=$(((total - other) * 1000 / total))
	moduled=$((backmod * 1000 / back))
	echo "# bytes with a phase other than 'other': $((phased / 10)).$((phased % 10)) % of $total" >&3
	echo "# backward bytes with a module: $((moduled / 10)).$((moduled % 10)) % of $back" >&3
	[ "$phased" -ge 950 ]
	[ "$moduled" -ge 900 ]
}

@test "the stack shows the file and line that made a tensor" {
	trace_model --steps 1
	read -r _ line bytes < <(grep '^mark ' "$MODEL")
	grep -A1 -E "^[^#	].*: c10:cpu_alloc: .* size=$bytes " "$TRACE" |
		grep -q "^	make_mark (.*tests/fixtures/attrib_model.py:$line)$"
	# the frames below it, innermost first
	grep -A2 -E "^[^#	].*: c10:cpu_alloc: .* size=$bytes " "$TRACE" |
		grep -q "^	main (.*tests/fixtures/attrib_model.py:[0-9]*)$"
}

@test "a checkpointed block's recomputation shows in backward under its name" {
	trace_model --steps 2 --checkpoint
	bytes=$(awk '$1=="act" && $2=="mid.proj"{print $3}' "$MODEL")
	sized "$bytes" | grep ': c10:cpu_alloc: ' | grep ' phase=backward ' | grep -q ' module=mid.proj'
	grep -q '^# module pid=[0-9]* phase=backward module=mid.proj .* recompute_bytes=[1-9]' "$TRACE"
}

@test "--no-stack drops the stack lines, --max-depth cuts them, --root-name names the root" {
	MTARGS=--no-stack trace_model --steps 1
	[ -z "$(grep -P '^\t' "$TRACE")" ]
	grep -q ' phase=forward module=encoder.0.proj$' "$TRACE"

	MTARGS="--max-depth 2" trace_model --steps 1
	grep -q '^	\[truncated at 2 frames\]$' "$TRACE"
	# never more than two frames under an event
	awk '/^\t\[truncated/ { next } /^\t/ { if (++n > 2) bad = 1; next } { n = 0 }
		END { exit bad }' "$TRACE"
}

@test "the root module is named by its class, or by --root-name" {
	trace_model --steps 1
	bytes=$(awk '$1=="root"{print $2}' "$MODEL")
	sized "$bytes" | grep ': c10:cpu_alloc: ' | grep -q ' phase=forward module=Net$'

	MTARGS="--root-name net" trace_model --steps 1
	sized "$bytes" | grep ': c10:cpu_alloc: ' | grep -q ' phase=forward module=net$'
}

@test "--module-log: each module call's records nest in its parent's, every step whole, units named" {
	MTARGS="--module-log $BATS_TEST_TMPDIR/mem_{pid}_rank{rank}.log --log-time" \
		trace_model --steps 3
	log=$BATS_TEST_TMPDIR/mem_${fx_PID}_rank0.log
	cat "$log"
	modlog_check "$log" 3
	grep -q ' time=[0-9]*\.[0-9]\{6\} parameters_mib=' "$log"
	# nothing else: 14 modules x 4 stages + the optimizer's two a step
	[ "$(grep -c '^step=' "$log")" -eq $((3 * 58)) ]
	[ "$(grep -c '^#' "$log")" -eq 1 ]
	# the trace saw step 0 begin: its first record is the root's call
	[ "$(grep -m1 '^step=' "$log" | cut -d' ' -f1-3)" = "step=0 module=Net stage=pre_forward" ]
	# Adam's state arrives in the first step
	pre=$(awk '/^step=0 module=optimizer stage=pre_step /{sub("allocated_mib=", "", $4); print $4}' "$log")
	post=$(awk '/^step=0 module=optimizer stage=post_step /{sub("allocated_mib=", "", $4); print $4}' "$log")
	awk -v a="$pre" -v b="$post" 'BEGIN { exit !(b > a) }'
	# by kind: CPU tensors traced, so the kinds hold all of allocated_mib
	# (8 roundings). What the phase running at a record made is unknown
	# until it ends: Adam's state, made in step 0's optimizer step, is
	# told at step 1's first event (its pre_forward has the figures from
	# before it): after step 1's forward it is twice the gradients (and
	# its step counts); the model, made before the attach, is unseen
	awk '/^step=/ { split($4, a, "="); k = 0
		for (i = NF - 6; i <= NF; i++) { split($i, v, "="); k += v[2] }
		d = k - a[2]; if (d < -0.004 || d > 0.004) { print "off: " $0; bad = 1 } }
		END { exit bad }' "$log"
	awk '/^step=1 module=Net stage=post_forward / { for (i = 1; i <= NF; i++) {
		split($i, v, "="); f[v[1]] = v[2] }
		exit !(f["gradients_mib"] > 1 && f["parameters_mib"] == 0 &&
			f["optimizer_state_mib"] - 2 * f["gradients_mib"] < 0.01 &&
			f["optimizer_state_mib"] - 2 * f["gradients_mib"] >= 0) }' "$log"
	# a Linear's forward holds its output: more after it than before
	pre=$(awk '/^step=1 module=encoder.2.proj stage=pre_forward /{sub("allocated_mib=", "", $4); print $4}' "$log")
	post=$(awk '/^step=1 module=encoder.2.proj stage=post_forward /{sub("allocated_mib=", "", $4); print $4}' "$log")
	awk -v a="$pre" -v b="$post" 'BEGIN { exit !(b > a) }'
}

@test "--module-log: a trace that begins inside a step leaves that step out and says so" {
	MTARGS="--module-log $BATS_TEST_TMPDIR/mod.log" \
		trace_model --steps 3 --start-inside
	log=$BATS_TEST_TMPDIR/mod.log
	cat "$log"
	grep -q '^# the trace began inside a step: its records are left out, step=0 is the first whole step$' "$log"
	# the model's second and third steps, numbered 0 and 1
	modlog_check "$log" 2
	[ "$(grep -m1 '^step=' "$log" | cut -d' ' -f1-3)" = "step=0 module=Net stage=pre_forward" ]
}

@test "--module-log: a loss called outside the model, a Sequential and a TransformerEncoder nest as called" {
	# held at its exit until the trace is read: names are read from the
	# living process
	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/cpu_model.py" --steps 2
	trace 1 -p "$fx_PID" --module-log "$BATS_TEST_TMPDIR/mod.log"
	release fx
	settle fx '^done '
	finish
	[ "$MT_STATUS" -eq 0 ]
	cat "$BATS_TEST_TMPDIR/mod.log"
	# the layers' dropouts (p=0) make no autograd Node: no backward
	local modules="Net stem stem.fc_in stem.act_in stem.fc_mid stem.act_mid
		encoder head" noback="" l x
	for l in 0 1; do
		modules+=" encoder.layers.$l"
		for x in self_attn dropout1 norm1 linear1 dropout linear2 dropout2 norm2; do
			modules+=" encoder.layers.$l.$x"
		done
		noback+=" encoder.layers.$l.dropout encoder.layers.$l.dropout1 encoder.layers.$l.dropout2"
	done
	awk -v root=Net -v steps=2 -v modules="$modules" -v outside=MSELoss \
		-v noback="$noback" -f "$ROOT/tests/e2e/modlog_check.awk" \
		"$BATS_TEST_TMPDIR/mod.log"
}

@test "--phase NAME=QUALNAME names a phase after a function" {
	MTARGS="--phase marking=make_mark" trace_model --steps 1
	read -r _ _ bytes < <(grep '^mark ' "$MODEL")
	sized "$bytes" | grep ': c10:cpu_alloc: ' | grep -q ' phase=marking module=-$'
	grep -q '^# phase pid=[0-9]* phase=marking peak=' "$TRACE"
	# the other phases are untouched
	sized "$(awk '$2=="encoder.0.proj" && $1=="act"{print $3}' "$MODEL")" |
		grep -q ' phase=forward module=encoder.0.proj$'
}

# the (size, module) of each backward allocation of the trace, sorted
backward_modules() {
	grep -E '^[^#	].*: c10:cpu_alloc: .* phase=backward ' "$TRACE" |
		sed -E 's/.* size=([0-9]+) .* (module=[^ ]*).*/\1 \2/' | sort -u
}

@test "backward's Node read from libtorch_cpu's TLS: no autograd probe, each module as the probes name it" {
	trace_model --steps 2
	grep '^# autograd ' "$TRACE"
	grep -q "^# autograd pid=$fx_PID mode=tls\$" "$TRACE"
	# set_gradient_edge and evaluate_function unprobed: no trap at a Node
	grep -q "^# attach pid=$fx_PID lib=.*/libtorch_cpu\.so\.[0-9.]* probes=0\$" "$TRACE"
	assert_grads
	backward_modules >"$BATS_TEST_TMPDIR/tls.modules"

	MEMTRACE_BPF_AUTOGRAD=probes trace_model --steps 2
	grep -q "^# autograd pid=$fx_PID mode=probes why=MEMTRACE_BPF_AUTOGRAD=probes\$" "$TRACE"
	grep -q "^# attach pid=$fx_PID lib=.*/libtorch_cpu\.so\.[0-9.]* probes=2\$" "$TRACE"
	assert_grads
	backward_modules | diff - "$BATS_TEST_TMPDIR/tls.modules"
}

@test "a record keeps how backward's Nodes were named, and its report says it" {
	local d=$BATS_TEST_TMPDIR
	"$MT" record -o "$d/r.mtb" -- "$TORCH_PY" "$ROOT/tests/fixtures/attrib_model.py" \
		--steps 1 >"$d/fx.out" 2>"$d/rec.err"
	cat "$d/rec.err"
	pid=$(sed -n 's/^# autograd pid=\([0-9]*\) mode=tls$/\1/p' "$d/rec.err")
	[ -n "$pid" ]
	"$MT" report -i "$d/r.mtb" >"$d/report.out"
	grep '^# record autograd: ' "$d/report.out"
	grep -q "^# record autograd: pid=$pid mode=tls\$" "$d/report.out"
}

@test "forward on several threads: each Node is matched to its own thread's forward, replicas on new threads too" {
	local d=$BATS_TEST_TMPDIR mode
	# two threads training at once number their Nodes from 0 each
	# (before, the second thread's gradients took the first's layers);
	# replicas, as DataParallel runs them: a new thread per model a step
	for mode in two replicas; do
		"$MT" --keys -o "$d/$mode.trace" -- "$TORCH_PY" "$ROOT/tests/fixtures/forward_threads.py" "$mode" 4 >"$d/$mode.out" 2>"$d/$mode.err"
		cat "$d/$mode.err"
		grep -q '^done' "$d/$mode.out"
		grep -q '^# autograd pid=[0-9]* mode=tls$' "$d/$mode.trace"
		thread_grads "$d/$mode.trace" "$d/$mode.out"
	done
}

@test "-p on replicas: threads made after the attach, more than a process keeps, each named" {
	replicas_p "$TORCH_PY" "$ROOT/tests/fixtures/forward_threads.py"
}

@test "--children: backward's Node read from TLS too, the file probed for every process without the autograd probes" {
	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/attrib_model.py" --steps 2
	trace 1 --keys --children "$fx_PID"
	release fx
	settle fx '^root '
	finish
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
	grep -E '^# (autograd|attach .*libtorch_cpu)' "$TRACE"
	grep -q "^# autograd pid=$fx_PID mode=tls\$" "$TRACE"
	grep -q "^# attach pid=$fx_PID lib=.*/libtorch_cpu\.so\.[0-9.]* probes=0\$" "$TRACE"
	assert_grads
}

@test "-f: two processes mapping the same libtorch_cpu, each reads its own TLS and names its own backward" {
	local d=$BATS_TEST_TMPDIR pid n=0 i
	TRACE=$d/trace.out
	# both held at their exit, so that their frames are named while they
	# live (names are read from the process after the event)
	MT_HOLD=$d/hold "$MT" --keys -f -o "$TRACE" -- sh -c "
		'$TORCH_PY' '$ROOT/tests/fixtures/attrib_model.py' --steps 2 >'$d/a.out' &
		'$TORCH_PY' '$ROOT/tests/fixtures/attrib_model.py' --steps 2 >'$d/b.out'
		wait" 2>"$d/trace.err" &
	MT_PID=$!
	wait_for "$d/a.out" '^root ' 120
	wait_for "$d/b.out" '^root ' 120
	for ((i = 0; i < 50; i++)); do
		n=$(wc -c <"$TRACE")
		sleep 0.2
		[ "$(wc -c <"$TRACE")" -ne "$n" ] || break
	done
	touch "$d/hold"
	wait "$MT_PID"
	grep -E '^# (autograd|attach .*libtorch_cpu)' "$TRACE"
	# the file attached once, for both, without the autograd probes
	[ "$(grep -c '^# attach pid=[0-9]* lib=.*/libtorch_cpu\.so\.[0-9.]* probes=0$' "$TRACE")" -eq 1 ]
	[ "$(grep -c '^# autograd pid=[0-9]* mode=tls$' "$TRACE")" -eq 2 ]
	! grep -q '^# autograd pid=[0-9]* mode=probes' "$TRACE"
	n=0
	for pid in $(sed -n 's/^# autograd pid=\([0-9]*\) mode=tls$/\1/p' "$TRACE"); do
		while read -r _ name bytes; do
			line=$(grep -E "^[^#	]* $pid/[0-9]+ .*: c10:cpu_alloc: .* size=$bytes .* phase=backward " "$TRACE" | head -1)
			echo "pid $pid grad $name: $line"
			[[ "$line" == *" module=$name node=AddmmBackward0" ]]
			n=$((n + 1))
		done < <(grep '^weight ' "$d/a.out" | grep -v ' head ')
	done
	[ "$n" -ge 4 ]
}

@test "a libtorch_cpu whose TLS cannot be read after all gets the autograd probes late, and names backward with them" {
	rm -f "$BATS_TEST_TMPDIR/fx.hold"
	: >"$BATS_TEST_TMPDIR/trace.out"
	MEMTRACE_BPF_AUTOGRAD=late-probes MT_HOLD="$BATS_TEST_TMPDIR/fx.hold" \
		"$MT" --keys -o "$BATS_TEST_TMPDIR/trace.out" -- "$TORCH_PY" \
		"$ROOT/tests/fixtures/attrib_model.py" --steps 2 \
		>"$BATS_TEST_TMPDIR/fx.out" 2>"$BATS_TEST_TMPDIR/trace.err" &
	MT_PID=$!
	settle fx '^root '
	finish
	cat "$BATS_TEST_TMPDIR/trace.err"
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
	grep -E '^# (autograd|attach .*libtorch_cpu)' "$TRACE"
	# attached without them, then the fallback
	grep -A100000 '^# attach pid=[0-9]* lib=.*/libtorch_cpu\.so\.[0-9.]* probes=0$' "$TRACE" |
		grep -q '^# autograd pid=[0-9]* mode=probes why=MEMTRACE_BPF_AUTOGRAD=late-probes$'
	! grep -q ' mode=tls$' "$TRACE"
	assert_grads
}

@test "--sample-bytes reads backward's Node from TLS too: the unsampled first allocation of each op is walked to name its Node" {
	# most activations (2 to 28 KiB) unsampled, the gradients (91 KiB
	# and up) sampled at nearly every step
	MTARGS="--sample-bytes 32K" trace_model --steps 4
	grep -q "^# autograd pid=$fx_PID mode=tls\$" "$TRACE"
	grep -q "^# attach pid=$fx_PID lib=.*/libtorch_cpu\.so\.[0-9.]* probes=0\$" "$TRACE"
	assert_grads
}

@test "a process gone before the tracer names its frames: its events are counted as unread, not left unnamed without a word" {
	fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/attrib_model.py" --steps 2
	trace 1 -p "$fx_PID"
	# the tracer paused while the model runs and exits: the names it reads
	# from the process afterwards are gone with it
	kill -STOP "$MT_PID"
	release fx
	wait_for "$BATS_TEST_TMPDIR/fx.out" '^root ' 120
	while kill -0 "$fx_PID" 2>/dev/null; do sleep 0.05; done
	kill -CONT "$MT_PID"
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep -q '^python3 .* phase=other module=-$' "$TRACE"
	grep -qE "^(Unseen    |          ) [0-9]+ events' Python stacks could not all be read when named \\(their process had exited, or the code was freed\\)" "$TRACE"
	! grep -q '^Unseen     nothing' "$TRACE"
}
