#!/usr/bin/env bash
# What one uprobe trap costs on this machine, by the instruction it is put
# on (issue 38, item 3): bench/traps.c, built here, called CALLS times bare
# and under empty bpftrace probes, so that the only cost added is the
# kernel's. Prints one line of nanoseconds a call:
#
#   bare=NS push=NS nop5=NS nop1=NS ret=NS sstep=NS read=NS
#
#   bare   no probe
#   push   a uprobe on a push after endbr64, where memtrace-bpf probes
#          c10's reporters: the kernel emulates the push
#   nop5   a uprobe on a 5-byte nop: the kernel's optimized path, where it
#          has one (6.18)
#   nop1   a uprobe on a 1-byte nop, a USDT site (pytorch:malloc)
#   ret    push, and a uretprobe at the same place
#   sstep  a uprobe on the endbr64: single-stepped out of line
#   read   push, its program reading 8 bytes of the caller's stack 8
#          times (bpf_probe_read_user, what each read of memtrace-bpf's
#          Python walk is); the figure is one read's, less push, over 8
#
# A trap is the traced figure less bare. bench/cuda_cost.sh runs it in
# each repetition. Usage: bench/traps.sh [DIR] (DIR: where to build, a
# temporary folder by default). Environment: CALLS (1000000; bare 10x,
# sstep a fifth), PIN (words put before each run, e.g. "taskset -c 1").
# Run as root.
set -euo pipefail

cd "$(dirname "$0")/.."
CALLS=${CALLS:-1000000}
[[ $CALLS =~ ^[1-9][0-9]*$ ]] || {
	echo "traps: CALLS=$CALLS: a whole number above 0" >&2
	exit 1
}
read -r -a PIN <<<"${PIN:-}"
DIR=${1:-}
if [ -z "$DIR" ]; then
	DIR=$(mktemp -d)
	trap 'rm -rf "$DIR"' EXIT
fi
command -v bpftrace >/dev/null || {
	echo "traps: bpftrace missing (scripts/setup.sh installs it)" >&2
	exit 1
}
BIN=$DIR/traps
cc -O2 -Wall -Wextra -o "$BIN" bench/traps.c

# under PROBES CALLS FUNCTION: ns a call with the bpftrace probes PROBES
# (none: bare), the program's one line of output
under() {
	local probes=$1 n=$2 fn=$3 out
	if [ -z "$probes" ]; then
		out=$("${PIN[@]}" "$BIN" "$fn" "$n")
	else
		out=$("${PIN[@]}" bpftrace -e "$probes" -c "$BIN $fn $n" 2>/dev/null |
			grep -E '^[0-9.]+$' || true)
	fi
	[ -n "$out" ] || {
		echo "traps: no figure from $fn under '${probes:-no probe}'" >&2
		exit 1
	}
	echo "$out"
}

# eight reads, summed and used, so that none is left out; the $ are
# bpftrace's variables, not the shell's
# shellcheck disable=SC2016
reads='$s = reg("sp"); $t = 0;'
for i in 0 1 2 3 4 5 6 7; do
	reads+=" \$t = \$t + *(uint64 *)uptr(\$s + $((i * 8)));"
done
# shellcheck disable=SC2016
reads+=' if ($t == 1) { printf("\n"); }'
push=$(under "uprobe:$BIN:tb_push_insn { }" "$CALLS" push)
read8=$(under "uprobe:$BIN:tb_push_insn { $reads }" "$CALLS" push)

echo "bare=$(under "" $((CALLS * 10)) push)" \
	"push=$push" \
	"nop5=$(under "uprobe:$BIN:tb_nop5 { }" "$CALLS" nop5)" \
	"nop1=$(under "uprobe:$BIN:tb_nop1 { }" "$CALLS" nop1)" \
	"ret=$(under "uprobe:$BIN:tb_push_insn { } uretprobe:$BIN:tb_push_insn { }" "$CALLS" push)" \
	"sstep=$(under "uprobe:$BIN:tb_push { }" $((CALLS / 5)) push)" \
	"read=$(awk -v a="$read8" -v b="$push" 'BEGIN { printf "%.1f", (a - b) / 8 }')"
