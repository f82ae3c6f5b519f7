#!/usr/bin/env bats
# Faults and hostile input: whatever happens to the tracer, the target is
# never harmed.

load helpers

teardown() {
	[ -n "${MT_PID:-}" ] && kill -9 "$MT_PID" 2>/dev/null || true
	[ -n "${CMD_PID:-}" ] && kill -9 "$CMD_PID" 2>/dev/null || true
}

# state PID: the one-letter state of PID (R, S, T...), empty once it is gone
state() {
	awk '{print $3}' "/proc/$1/stat" 2>/dev/null || true
}

@test "-- COMMAND: a tracer killed with SIGKILL never leaves its command stopped" {
	local try delay i s
	# import torch maps dozens of libraries: the command is stopped at
	# each load until the tracer attaches, so a kill falls inside a stop
	for try in 1 2 3 4 5; do
		delay=$(awk -v t="$try" 'BEGIN { printf "%.2f", 0.3 + t * 0.25 }')
		"$MT" -q -- "$TORCH_PY" -c 'import torch; print("DONE")' \
			>"$BATS_TEST_TMPDIR/cmd.out" 2>"$BATS_TEST_TMPDIR/trace.err" &
		MT_PID=$!
		for ((i = 0; i < 100; i++)); do
			CMD_PID=$(pgrep -P "$MT_PID" -x python3 || true)
			[ -n "$CMD_PID" ] && break
			sleep 0.01
		done
		[ -n "$CMD_PID" ]
		sleep "$delay"
		kill -9 "$MT_PID"
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
}
