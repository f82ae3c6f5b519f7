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

@test "make install puts the binary and a man page a command; help COMMAND shows it" {
	dest=$BATS_TEST_TMPDIR/dest
	run make -C "$ROOT" --no-print-directory install DESTDIR="$dest" PREFIX=/usr
	echo "$output"
	[ "$status" -eq 0 ]
	[ -x "$dest/usr/sbin/memtrace-bpf" ]
	for p in memtrace-bpf memtrace-bpf-top memtrace-bpf-record \
		memtrace-bpf-report memtrace-bpf-script memtrace-bpf-estimate; do
		head -3 "$dest/usr/share/man/man8/$p.8" | grep -qx ".TH \"$p\" \"8\" \"\" \"memtrace-bpf\" \"memtrace-bpf\""
	done
	# man renders the page the tool asks for
	run env MANPATH="$dest/usr/share/man" MANPAGER=cat MANWIDTH=80 "$MT" help record
	[ "$status" -eq 0 ]
	grep -qE '^ +memtrace-bpf-record +— +trace +into +a +binary +record' <<<"$output"
	grep -qE '^OPTIONS$' <<<"$output"
	run env MANPATH="$dest/usr/share/man" MANPAGER=cat "$MT" help
	[ "$status" -eq 0 ]
	grep -qE '^ +memtrace-bpf — ' <<<"$output"
}

@test "help: an unknown command, no page installed, no man: one line each, exit 2" {
	run "$MT" help nope
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: help nope: no such command (memtrace-bpf help COMMAND: record, report, script, estimate, top; none for the live trace)" ]
	run env MANPATH="$BATS_TEST_TMPDIR" "$MT" help top
	[ "$status" -eq 2 ]
	grep -qx 'memtrace-bpf: help: no manual page memtrace-bpf-top installed: make install puts them in place, or read docs/memtrace-bpf-top.md' <<<"$output"
	run env PATH=/nonexistent "$MT" help
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: help: run man: No such file or directory: read docs/memtrace-bpf.md, or install man-db" ]
}
