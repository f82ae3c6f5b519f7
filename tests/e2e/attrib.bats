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

@test "weight gradients carry phase=backward, the layer and its autograd node" {
	trace_model --steps 2
	while read -r _ name bytes; do
		line=$(sized "$bytes" | grep ': c10:cpu_alloc: ' | grep ' phase=backward ' | head -1)
		echo "grad $name: $line"
		[[ "$line" == *" module=$name node=AddmmBackward0" ]]
	done < <(grep '^weight ' "$MODEL" | grep -v ' head ')
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

@test "--module-log: one record per module per stage per step" {
	MTARGS="--module-log $BATS_TEST_TMPDIR/mem_{pid}_rank{rank}.log --log-time" \
		trace_model --steps 3
	log=$BATS_TEST_TMPDIR/mem_${fx_PID}_rank0.log
	[ -s "$log" ]
	modules="Net encoder encoder.0 encoder.0.proj encoder.0.act encoder.1 encoder.1.proj
		encoder.1.act encoder.2 encoder.2.proj encoder.2.act mid mid.proj mid.act head"
	for step in 0 1 2; do
		for m in $modules; do
			for stage in pre_forward post_forward pre_backward post_backward; do
				n=$(grep -c "^step=$step module=$m stage=$stage allocated=[0-9.]* reserved=[0-9.]* max_allocated=[0-9.]* max_reserved=[0-9.]* time=[0-9]*\.[0-9]\{6\}$" "$log")
				[ "$n" -eq 1 ] || { echo "step $step $m $stage: $n records"; false; }
			done
		done
		grep -q "^step=$step module=optimizer stage=pre_step " "$log"
		grep -q "^step=$step module=optimizer stage=post_step " "$log"
	done
	# nothing else: 15 modules x 4 stages + the optimizer's two, per step
	[ "$(wc -l <"$log")" -eq $((3 * 62)) ]
	# Adam's state arrives in the first step
	pre=$(awk '/^step=0 module=optimizer stage=pre_step /{sub("allocated=", "", $4); print $4}' "$log")
	post=$(awk '/^step=0 module=optimizer stage=post_step /{sub("allocated=", "", $4); print $4}' "$log")
	awk -v a="$pre" -v b="$post" 'BEGIN { exit !(b > a) }'
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
