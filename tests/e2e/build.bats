#!/usr/bin/env bats
# The build itself: what `make` with no goal does (README, Install).

load helpers

@test "make with no goal builds ./memtrace-bpf, not the test fixtures" {
	# an included makefile's first target must not become the default
	run make -C "$ROOT" -pn --no-print-directory
	[ "$status" -eq 0 ]
	grep -qx '.DEFAULT_GOAL := all' <<<"$output"
	# what a fresh clone's `make` would run: the link of the tool, and
	# no test fixture
	run make -C "$ROOT" -nB --no-print-directory
	[ "$status" -eq 0 ]
	grep -qE -- '-o memtrace-bpf$' <<<"$output"
	[ -z "$(grep -F 'tests/fixtures/' <<<"$output")" ]
}
