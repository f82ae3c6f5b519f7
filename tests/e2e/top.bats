#!/usr/bin/env bats
# memtrace-bpf top: the live view drawn in a terminal (tmux, read back with
# capture-pane), its frames in a row when stdout is no terminal, its
# errors; and --watch's lines for a CPU job. Real PyTorch on the CPU
# (Debian's python3 and torch).

load helpers

MODEL=$ROOT/tests/fixtures/attrib_model.py

setup() {
	# a tmux server of this test's own, never the user's
	SOCK=mt-top-$$-$BATS_TEST_NUMBER
	D=$BATS_TEST_TMPDIR
}

teardown() {
	tmux -L "$SOCK" kill-server 2>/dev/null || true
	[ -z "${MT_PID:-}" ] || kill "$MT_PID" 2>/dev/null || true
	[ -z "${fx_PID:-}" ] || kill "$fx_PID" 2>/dev/null || true
}

# in_tmux ARGS...: memtrace-bpf ARGS in a 120x40 terminal, its exit status
# written to $D/rc and the terminal's mode (stty -g) to $D/before and
# $D/after; the pane stays when it ends
in_tmux() {
	printf 'stty -g >%q/before\n%q' "$D" "$MT" >"$D/run.sh"
	printf ' %q' "$@" >>"$D/run.sh"
	printf '\necho $? >%q/rc\nstty -g >%q/after\nsleep 600\n' "$D" "$D" >>"$D/run.sh"
	tmux -L "$SOCK" new-session -d -s top -x 120 -y 40 "sh $D/run.sh"
}

pane() {
	tmux -L "$SOCK" capture-pane -p -t top
}

# the pane with what scrolled off it
pane_all() {
	tmux -L "$SOCK" capture-pane -p -S - -t top
}

# wait_pane PATTERN: until a line of the pane matches PATTERN (60 s)
wait_pane() {
	local i
	for ((i = 0; i < 1200; i++)); do
		pane | grep -qE -- "$1" && return 0
		sleep 0.05
	done
	echo "the pane never showed /$1/:" >&2
	pane >&2
	return 1
}

# wait_rc: until the command in tmux ended (60 s)
wait_rc() {
	local i
	for ((i = 0; i < 1200; i++)); do
		[ -s "$D/rc" ] && return 0
		sleep 0.05
	done
	echo "memtrace-bpf did not end:" >&2
	pane >&2
	return 1
}

# the STEP column of the pid's cpu row on the pane ('' if none)
step_of() {
	pane | awk -v pid="$1" '$1 == pid && $2 == "cpu" { print $(NF - 1); exit }'
}

@test "top draws its screen in a terminal: CPU now and peak, modules, lines, refreshed; q restores the terminal" {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL" --steps 1000000
	in_tmux top -p "$fx_PID"
	# the first frame comes once the probes are in: only then go
	wait_pane "^memtrace-bpf top: pid $fx_PID python3 .*\(q quits\)\$"
	release fx
	wait_pane "^ +$fx_PID +cpu .* [1-9][0-9]* +cpu\$"
	wait_pane '  encoder\.2\.proj$'
	# by kind once a step has ended: Adam's state, made after the attach
	wait_pane "^ +$fx_PID +cpu  now by kind: .*optimizer_state [0-9.]+ (KiB|MiB)"
	pane >"$D/first"
	cat "$D/first"
	# the screen is drawn in place from its first line, nothing over it
	head -1 "$D/first" | grep -q "^memtrace-bpf top: pid $fx_PID "
	! grep -q '^# attach' "$D/first"
	grep -qE '^ +PID +DEVICE +CURRENT +PEAK +RESERVED +GROWTH/STEP +STEP +SOURCE$' "$D/first"
	# the CPU's current and peak in human units
	grep -qE "^ +$fx_PID +cpu +[0-9.]+ (B|KiB|MiB|GiB) +[0-9.]+ (KiB|MiB|GiB) +- +[-+][0-9.]+ (B|KiB|MiB|GiB) +[0-9]+ +cpu\$" "$D/first"
	# a module of the model (its gradients, alive between steps) and a line
	grep -qE '^ +cpu +[0-9.]+ (KiB|MiB) +[0-9.]+ +[0-9]+  encoder\.2\.proj$' "$D/first"
	grep -qE '^ +DEVICE +NOW +% +COUNT +LINE \(alive now\)$' "$D/first"
	grep -qF "(${MODEL}:" "$D/first"
	# under the table, its pid and device in its columns, largest first:
	# Adam's state (twice the gradients), cut at the terminal's width; the
	# model made before the attach is not seen, so no parameters
	line=$(grep -E "^ +$fx_PID +cpu  now by kind: " "$D/first")
	echo "$line" | grep -qE "^ +$fx_PID +cpu  now by kind: optimizer_state [0-9.]+ MiB  ([a-z]+ [0-9.]+ (B|KiB|MiB)  )?gradients [0-9.]+ MiB  "
	! echo "$line" | grep -q parameters
	[ "$(grep -n 'now by kind:' "$D/first" | cut -d: -f1)" -eq $(($(grep -nE "^ +$fx_PID +cpu .* cpu\$" "$D/first" | cut -d: -f1) + 1)) ]
	# no line wider than the terminal
	[ "$(awk '{ if (length($0) > n) n = length($0) } END { print n }' "$D/first")" -le 120 ]
	# a later frame: the step counter went on
	step1=$(step_of "$fx_PID")
	[ -n "$step1" ]
	for ((i = 0; i < 600; i++)); do
		step2=$(step_of "$fx_PID")
		[ -n "$step2" ] && [ "$step2" -gt "$step1" ] && break
		sleep 0.1
	done
	echo "steps $step1 then $step2"
	[ "$step2" -gt "$step1" ]
	tmux -L "$SOCK" send-keys -t top q
	wait_rc
	pane_all >"$D/after.pane"
	cat "$D/after.pane"
	[ "$(cat "$D/rc")" -eq 0 ]
	# the terminal's mode as it was, the last frame left on it, then the
	# notes kept aside while the screen was up
	cmp "$D/before" "$D/after"
	grep -q "^memtrace-bpf top: pid $fx_PID " "$D/after.pane"
	grep -q "^# attach pid=$fx_PID lib=.*libc10" "$D/after.pane"
	# the process goes on without us
	kill -0 "$fx_PID"
}

@test "top -- COMMAND: ends with the command, its output printed after the last frame" {
	in_tmux top --interval 200ms -- "$TORCH_PY" "$ROOT/tests/fixtures/cpu_model.py" --steps 20
	wait_rc
	pane_all >"$D/end"
	cat "$D/end"
	[ "$(cat "$D/rc")" -eq 0 ]
	cmp "$D/before" "$D/after"
	grep -qE '^memtrace-bpf top: pid [0-9]+ python3 \(exited\) ' "$D/end"
	grep -qE '^ +[0-9]+ +cpu +[0-9.]+ (B|KiB|MiB|GiB) +[0-9.]+ (KiB|MiB|GiB) .* 20 +cpu$' "$D/end"
	# the model's own lines, kept aside while the screen was up
	grep -q '^done steps=20$' "$D/end"
	# after the frame, not under it
	[ "$(grep -n '^done steps=20$' "$D/end" | cut -d: -f1)" -gt "$(grep -n '^memtrace-bpf top:' "$D/end" | cut -d: -f1)" ]
}

@test "top without a terminal: frames one after another below a line of dashes, no escapes" {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL" --steps 1000000
	MT_LOG=$D/trace.err trace 1 top -p "$fx_PID" --interval 300ms -d 3
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	frames=$(grep -c '^memtrace-bpf top: ' "$TRACE")
	echo "frames=$frames"
	[ "$frames" -ge 2 ]
	[ "$(grep -c '^--------$' "$TRACE")" -eq $((frames - 1)) ]
	# every frame starts right after a dashes line
	[ "$(grep -A1 '^--------$' "$TRACE" | grep -c '^memtrace-bpf top: ')" -eq $((frames - 1)) ]
	! grep -q $'\033' "$TRACE"
	# the last frame: the CPU, a module of the model; the interval said
	tail -n +"$(grep -n '^memtrace-bpf top: ' "$TRACE" | tail -1 | cut -d: -f1)" "$TRACE" >"$D/last"
	cat "$D/last"
	grep -q ' every 0.3s ' "$D/last"
	grep -qE "^ +$fx_PID +cpu +[0-9.]+ (B|KiB|MiB|GiB) +[0-9.]+ (KiB|MiB|GiB) " "$D/last"
	grep -qE '  encoder\.2\.proj$' "$D/last"
	# no summary: top's last frame is its end
	! grep -q '^# summary' "$TRACE"
}

@test "top: a bad pid is one line and exit 2, in a terminal too" {
	run "$MT" top -p 999999999
	echo "$output"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "memtrace-bpf: no such process: 999999999"* ]]
	in_tmux top -p 999999999
	wait_rc
	pane >"$D/end"
	cat "$D/end"
	[ "$(cat "$D/rc")" -eq 2 ]
	cmp "$D/before" "$D/after"
	[ "$(grep -c . "$D/end")" -eq 1 ]
	grep -q '^memtrace-bpf: no such process: 999999999' "$D/end"
}

@test "top --interval: the one duration grammar; options top cannot honour are refused" {
	for bad in 2x 0 50ms -1 1e400 ''; do
		run "$MT" top -p 1 --interval "$bad"
		echo "$bad: $output"
		[ "$status" -eq 2 ]
		[ "${#lines[@]}" -eq 1 ]
		[ "$output" = "memtrace-bpf: invalid interval: '$bad' (see --help)" ]
	done
	# good ones get past the options to the pid
	for good in 1 1s 500ms 0.25 2m; do
		run "$MT" top -p 999999999 --interval "$good"
		echo "$good: $output"
		[ "$status" -eq 2 ]
		[[ "$output" == "memtrace-bpf: no such process: 999999999"* ]]
	done
	for opt in -q --watch=1 -o=x --keys --export=json; do
		run "$MT" top -p 1 "$opt"
		echo "$opt: $output"
		[ "$status" -eq 2 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == *", not for top (see --help)" ]]
	done
	run "$MT" --interval 1 -p 1
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: --interval is for top, not for trace (see --help)" ]
}

@test "--watch prints its figures for a CPU job" {
	HELD=1 fixture fx "$TORCH_PY" "$MODEL" --steps 1000000
	MT_LOG=$D/trace.err trace 1 -p "$fx_PID" -q --keys --watch 1 -d 3.5
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	grep '^# watch' "$TRACE"
	[ "$(grep -cE "^# watch [0-9.]+s at=[0-9.]+ pid=$fx_PID cpu used=[0-9.]+ (B|KiB|MiB|GiB) of [0-9.]+ (MiB|GiB|TiB) \([0-9.]+ %\) rate=[-+][0-9.]+ (B|KiB|MiB|GiB)/s oom_in=[^ ]+ confidence=[a-z]+\(r2=[0-9.]+,n=[0-9]+\) risk=[a-z]+\$" "$TRACE")" -ge 2 ]
	# the CPU has a size: no note that the device's is unknown
	! grep -q 'size unknown' "$TRACE"
}
