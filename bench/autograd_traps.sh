#!/usr/bin/env bash
# Traps per allocator event with backward's Nodes read from libtorch_cpu's
# TLS, against the two autograd probes (issue 38, item 2), on the CPU
# attrib model (tests/fixtures/attrib_model.py, Debian's torch on the
# host's python3): the run count of each of the tracer's BPF programs
# (kernel.bpf_stats_enabled, set for the run and put back), read while the
# model is held at its exit. A uprobe program's run is one trap. Prints a
# Markdown table for bench/RESULTS.md. Run as root, alone (another
# tracer's probes would count too); about 30 s.
#
# Environment knobs: STEPS (training steps, 5), PY (the python with torch,
# /usr/bin/python3), MT (another binary).
set -euo pipefail

cd "$(dirname "$0")/.."
MT=${MT:-$PWD/memtrace-bpf}
STEPS=${STEPS:-5}
PY=${PY:-/usr/bin/python3}
W=$(mktemp -d)
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled="$old"; rm -rf "$W"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1

# run MODE (tls or probes): W/MODE.progs holds "type name run_cnt" lines
run() {
	local mode=$1 pid i
	MEMTRACE_BPF_AUTOGRAD=$mode MT_HOLD="$W/$mode.hold" "$MT" --keys \
		-o "$W/$mode.trace" -- "$PY" tests/fixtures/attrib_model.py \
		--steps "$STEPS" >"$W/$mode.model" 2>"$W/$mode.err" &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		grep -q '^root ' "$W/$mode.model" && break
		sleep 0.2
	done
	# the tracer reads what is on the way at its 10-ms turns
	sleep 1
	python3 bench/bpfstats.py "$pid" | awk '/^prog /{ sub("id=", "", $2); print $2 }' |
		while read -r id; do
			bpftool prog show id "$id" |
				awk 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "run_cnt") c = $(i + 1) } print $2, n, c + 0 }'
		done >"$W/$mode.progs"
	touch "$W/$mode.hold"
	wait "$pid"
}

count() { # TRACE EVENT: its count in the --keys summary
	awk -v e="$2" '$1 == "#" && $2 == "event" && $3 == e { sub("count=", "", $4); print $4 }' "$1"
}

run probes
run tls
echo "| mode | allocator events (c10:cpu_alloc + c10:cpu_free) | traps (uprobe program runs) | traps an allocator event | runs by program |"
echo "|---|---|---|---|---|"
for mode in probes tls; do
	ev=$(($(count "$W/$mode.trace" c10:cpu_alloc) + $(count "$W/$mode.trace" c10:cpu_free)))
	traps=$(awk '$1 == "kprobe:" || $1 == "kprobe" { n += $3 } END { print n + 0 }' "$W/$mode.progs")
	by=$(awk '($1 == "kprobe:" || $1 == "kprobe") && $3 { printf "%s%s %d", s, $2, $3; s = ", " }' "$W/$mode.progs")
	awk -v m="$mode" -v e="$ev" -v t="$traps" -v b="$by" \
		'BEGIN { printf "| %s | %d | %d | %.2f | %s |\n", m, e, t, t / e, b }'
done
