#!/usr/bin/env bats
# The pages under docs/ (issue 36, item 3): each command's page names
# every option its --help lists, and the check says so when one is not.

load helpers

@test "every option of each command's --help is on its page under docs/" {
	run "$ROOT/scripts/check-docs.sh" "$MT"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "the docs check fails when a page lacks an option" {
	tmp=$(mktemp -d)
	cp -a "$ROOT/scripts" "$ROOT/docs" "$tmp/"
	# drop every mention of --top-ops from the report's page
	sed -i 's/--top-ops/--top-xx/g' "$tmp/docs/memtrace-bpf-report.md"
	run "$tmp/scripts/check-docs.sh" "$MT"
	rm -rf "$tmp"
	echo "$output"
	[ "$status" -eq 1 ]
	grep -q 'memtrace-bpf-report.md: --top-ops' <<<"$output"
}

@test "README stays under 400 lines and links each command's page" {
	[ "$(wc -l <"$ROOT/README.md")" -le 400 ]
	for p in memtrace-bpf memtrace-bpf-top memtrace-bpf-record \
		memtrace-bpf-report memtrace-bpf-script memtrace-bpf-estimate; do
		grep -q "(docs/$p.md" "$ROOT/README.md"
		[ -f "$ROOT/docs/$p.md" ]
	done
	grep -q 'make demo' "$ROOT/README.md"
	grep -q 'make test' "$ROOT/README.md"
	grep -q 'make roots' "$ROOT/README.md"
}
