#!/usr/bin/env bash
# e2e-lanes.sh [BATS_FILE...]: the end-to-end tests in two lanes side by
# side, then the ones that must run alone. Most of a test's time is spent
# waiting (for a process to start, a signal, a deadline), so two lanes on
# CI's two cores take a little over half the time of one.
#
# What shares something with another test runs in the same lane, one file
# after another:
#   lane a: every dry run (dryrun.bats and hostile.bats look for the dry
#           run's folder in /tmp and in the CUDA root's /tmp), and the
#           other users of the CUDA root;
#   alone:  ranks.bats (--all traces every process that maps our
#           libraries, another test's too).
# Lane b takes the rest, golden.bats among them (it reads a committed
# record and shares nothing). The lanes are balanced by the files' times
# in docs/TESTS.md; a file not named below goes to lane b.
#
# Each line is printed as it comes, after its lane's name; a lane's
# failures are printed whole (bats --print-output-on-failure). Exit 0 when
# every test passed.
set -uo pipefail

cd "$(dirname "$0")/.."
dir=tests/e2e
lane_a=(cuda dryrun hostile flight corpus python modes)
alone=(ranks)

in_list() {
	local f=$1 x
	shift
	for x in "$@"; do
		[ "$x" = "$f" ] && return 0
	done
	return 1
}

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
	files=("$dir"/*.bats)
fi
a=() b=() c=()
for f in "${files[@]}"; do
	name=$(basename "$f" .bats)
	if in_list "$name" "${alone[@]}"; then
		c+=("$f")
	elif in_list "$name" "${lane_a[@]}"; then
		a+=("$f")
	else
		b+=("$f")
	fi
done

# run LANE FILE...: bats on the files, each line after the lane's name
run() {
	local lane=$1
	shift
	[ $# -gt 0 ] || return 0
	bats --timing --print-output-on-failure "$@" 2>&1 |
		sed -u "s/^/[$lane] /"
	return "${PIPESTATUS[0]}"
}

run a "${a[@]}" &
pa=$!
run b "${b[@]}" &
pb=$!
rc=0
wait "$pa" || rc=1
wait "$pb" || rc=1
run alone "${c[@]}" || rc=1
if [ "$rc" -ne 0 ]; then
	echo "e2e-lanes.sh: some tests failed: the lines 'not ok' above say which" >&2
fi
exit "$rc"
