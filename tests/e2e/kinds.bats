#!/usr/bin/env bats
# What kind of memory each byte at a peak is (analysis/memkind.h): told
# from the phases each allocation lived through, checked against what
# PyTorch holds in the same process (Debian's torch 1.13, on the CPU).

load helpers

# kinds FIXTURE: traced from its start, the key lines in $KEYS, its
# output in $MODEL, the report in $REPORT
kinds() {
	KEYS=$BATS_TEST_TMPDIR/keys.out
	MODEL=$BATS_TEST_TMPDIR/model.out
	REPORT=$BATS_TEST_TMPDIR/report.out
	"$MT" -q --keys -o "$KEYS" -- "$TORCH_PY" "$ROOT/tests/fixtures/$1" >"$MODEL"
	"$MT" -q -o "$REPORT" -- "$TORCH_PY" "$ROOT/tests/fixtures/$1" >/dev/null
	cat "$MODEL"
	grep -E '^# (peak pid|kinds)' "$KEYS"
	sed -n "/^Peak/,/^Leaks/p; /^By kind:/,/^$/p" "$REPORT"
}

# kinds_in_root ROOT FIXTURE: FIXTURE (which imports kinds_adam.py's
# model) run in the Debian root ROOT, traced from its start: the key
# lines in $KEYS, its output in $MODEL
kinds_in_root() {
	root_stage "$1" "$ROOT/tests/fixtures/$2" "$ROOT/tests/fixtures/kinds_adam.py"
	KEYS=$BATS_TEST_TMPDIR/keys.out
	MODEL=$BATS_TEST_TMPDIR/model.out
	# the root's /proc for torch, in a mount namespace of the command's
	"$MT" -q --keys -o "$KEYS" -- unshare -m sh -c \
		'mount -t proc proc "$1/proc" && exec chroot "$1" python3 "$2"' \
		sh "$1" "$STAGE/$2" >"$MODEL"
	root_unstage
}

# field LINE KEY: the value of KEY= in LINE
field() {
	sed -nE "s/.* $2=([^ ]*).*/\\1/p" <<<"$1"
}

# the kinds of the one CPU account add up to its peak
ck_sum() {
	local line=$1 sum=0 k
	for k in parameters inputs activations gradients optimizer_state temporaries unknown; do
		sum=$((sum + $(field "$line" $k)))
	done
	[ "$sum" -eq "$(field "$line" peak)" ]
}

@test "kinds: at an Adam step's peak, parameters, gradients and optimizer state are PyTorch's to the byte" {
	kinds kinds_adam.py
	local line torch
	line=$(grep '^# kinds pid=[0-9]* dev=cpu space=cpu ' "$KEYS")
	torch=$(grep '^torch ' "$MODEL")
	ck_sum "$line"
	[ "$(field "$line" parameters)" -eq "$(field "$torch" parameters)" ]
	[ "$(field "$line" gradients)" -eq "$(field "$torch" gradients)" ]
	[ "$(field "$line" optimizer_state)" -eq "$(field "$torch" optimizer_state)" ]
	# Adam's own temporaries, the first batch; nothing unknown
	[ "$(field "$line" temporaries)" -gt 0 ]
	[ "$(field "$line" inputs)" -gt 0 ]
	[ "$(field "$line" unknown)" -eq 0 ]
	# the report: the kinds, largest first, and what helps the largest
	grep -qE '^ +kinds: optimizer_state [0-9.]+%, ' "$REPORT"
	grep -qE '^ +for optimizer_state: a sharded optimizer \(ZeRO, FSDP\)$' "$REPORT"
	# the table beside by module and by phase, its first row the largest
	sed -n '/^By kind:$/,/^$/p' "$REPORT" | sed -n 3p |
		grep -qE '^optimizer_state +12\.1 MiB +37\.4%  a sharded optimizer \(ZeRO, FSDP\)$'
}

@test "kinds: with SGD the peak is in backward: activations saved for it, gradients, no optimizer state" {
	kinds kinds_sgd.py
	local line torch acts
	line=$(grep '^# kinds pid=[0-9]* dev=cpu space=cpu ' "$KEYS")
	torch=$(grep '^torch ' "$MODEL")
	ck_sum "$line"
	grep -qE '^Peak +cpu: .*, backward$' "$REPORT"
	[ "$(field "$line" parameters)" -eq "$(field "$torch" parameters)" ]
	[ "$(field "$line" optimizer_state)" -eq 0 ]
	[ "$(field "$line" gradients)" -gt 0 ]
	[ "$(field "$line" gradients)" -le "$(field "$torch" parameters)" ]
	# what forward made and backward still needs: no more than autograd
	# saved and the model's output
	acts=$(field "$line" activations)
	[ "$acts" -gt 0 ]
	[ "$acts" -le $(($(field "$torch" saved) + $(field "$torch" out))) ]
	grep -qE '^ +kinds: parameters [0-9.]+%, .*activations' "$REPORT"
}

@test "kinds against torch.profiler's memory timeline (torch 2.14, sid): the same peak and parameters to the byte" {
	need_roots sid
	kinds_in_root "$ROOT_SID" kinds_profiler.py
	local line torch
	torch=$(grep '^profiler peak=' "$MODEL")
	line=$(grep '^# kinds pid=[0-9]* dev=cpu space=cpu ' "$KEYS")
	echo "PyTorch: $torch"
	echo "ours:    $line"
	ck_sum "$line"
	[ "$(field "$line" peak)" -eq "$(field "$torch" peak)" ]
	[ "$(field "$line" parameters)" -eq "$(field "$torch" parameter)" ]
	# the rest differ by definition (docs/TESTS.md): at the first step's
	# peak the profiler has no optimizer state yet, and calls the state
	# being made temporary
	[ "$(field "$torch" optimizer_state)" -eq 0 ]
	[ "$(field "$line" optimizer_state)" -eq "$(field "$torch" temporary)" ]
}

@test "kinds against MemTracker (torch 2.6, trixie): parameters, gradients to the byte; the rest by its definitions" {
	need_roots trixie
	kinds_in_root "$ROOT_TRIXIE" kinds_memtracker.py
	local line torch diff
	torch=$(grep '^memtracker peak=' "$MODEL")
	line=$(grep '^# kinds pid=[0-9]* dev=cpu space=cpu ' "$KEYS")
	echo "PyTorch: $torch"
	echo "ours:    $line"
	ck_sum "$line"
	[ "$(field "$line" parameters)" -eq "$(field "$torch" param)" ]
	[ "$(field "$line" gradients)" -eq "$(field "$torch" grad)" ]
	# its definitions (docs/TESTS.md): a tensor made in its context is an
	# activation unless made in the optimizer's step, where every tensor
	# is optimizer state; it has no inputs and no temporaries there
	[ "$(field "$line" inputs)" -eq "$(field "$torch" act)" ]
	[ "$(field "$line" activations)" -eq 0 ]
	diff=$(($(field "$line" optimizer_state) + $(field "$line" temporaries) -
		$(field "$torch" opt)))
	echo "optimizer state and temporaries less its optimizer state: $diff"
	# the same peak but for a few bytes of the step it does not count
	[ "$diff" -ge 0 ] && [ "$diff" -le 64 ]
	[ $(($(field "$line" peak) - $(field "$torch" peak))) -eq "$diff" ]
}

@test "report --kind: a record read twice, each figure of the kinds asked alone, PyTorch's to the byte" {
	local rec=$BATS_TEST_TMPDIR/adam.mtb torch line
	"$MT" record -o "$rec" -- "$TORCH_PY" "$ROOT/tests/fixtures/kinds_adam.py" >"$BATS_TEST_TMPDIR/model.out"
	torch=$(grep '^torch ' "$BATS_TEST_TMPDIR/model.out")
	run "$MT" report --keys --kind optimizer_state -i "$rec"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE '^# filter kind=optimizer_state passed=[1-9][0-9]* ' <<<"$output"
	line=$(grep '^# kinds pid=[0-9]* dev=cpu space=cpu ' <<<"$output")
	# Adam's state, alive from the first step to the end, is the peak
	[ "$(field "$line" peak)" -eq "$(field "$torch" optimizer_state)" ]
	[ "$(field "$line" optimizer_state)" -eq "$(field "$torch" optimizer_state)" ]
	run "$MT" report --keys --kind gradients,parameters -i "$rec"
	line=$(grep '^# kinds pid=[0-9]* dev=cpu space=cpu ' <<<"$output")
	[ "$(field "$line" parameters)" -eq "$(field "$torch" parameters)" ]
	[ "$(field "$line" gradients)" -eq "$(field "$torch" gradients)" ]
	[ "$(field "$line" peak)" -eq $(($(field "$torch" parameters) + $(field "$torch" gradients))) ]
	[ "$(field "$line" optimizer_state)" -eq 0 ]
	# script: the lines of those allocations and their frees alone
	run "$MT" script --kind optimizer_state -i "$rec"
	[ "$status" -eq 0 ]
	[ "$(grep -c ' c10:cpu_alloc: ' <<<"$output")" -gt 0 ]
	! grep ' c10:cpu_alloc: ' <<<"$output" | grep -qv 'phase=optimizer'
	# a name that is no kind lists the kinds; a live trace cannot know them
	run "$MT" report --kind activation -i "$rec"
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --kind activation: no such kind of memory (there are: parameters, inputs, activations, gradients, optimizer_state, temporaries, unknown)" ]
	run "$MT" --kind activations -- "$TORCH_PY" -c 1
	[ "$status" -eq 2 ]
	[[ "$output" == "memtrace-bpf: --kind tells an allocation by its whole life"* ]]
	# a kind the record has none of: said, with those it has
	run "$MT" report --kind unknown -i "$rec"
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --kind unknown: no event has it; the trace's kinds of memory: parameters, inputs, activations, gradients, optimizer_state, temporaries" ]
}
