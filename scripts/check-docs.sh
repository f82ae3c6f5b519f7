#!/bin/sh
# check-docs.sh [BINARY]: every option a command's --help lists appears
# on its page under docs/ (issue 36, item 3); prints each one missing
# and exits 1 if any is.
set -eu
cd "$(dirname "$0")/.."
mt=${1:-./memtrace-bpf}
fail=0
for mode in trace top record report script estimate; do
	if [ "$mode" = trace ]; then
		page=docs/memtrace-bpf.md help=$("$mt" --help)
	else
		page=docs/memtrace-bpf-$mode.md help=$("$mt" "$mode" --help)
	fi
	[ -f "$page" ] || { echo "missing page: $page"; fail=1; continue; }
	# the option column of argp's help: "  -x, --long=ARG" or "      --long"
	opts=$(printf '%s\n' "$help" |
		sed -n 's/^ \{2,6\}\(-[^ ,]\)\{0,1\}\(, \)\{0,1\}\(--[a-z0-9-]*\).*/\1 \3/p')
	for o in $opts; do
		grep -Eq -- "(^|[\` ,(])$o([\` =,|)]|$)" "$page" ||
			{ echo "$page: $o (from $mode --help) is not on it"; fail=1; }
	done
done
exit $fail
