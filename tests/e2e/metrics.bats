#!/usr/bin/env bats
# Fleet metrics: a real Prometheus (Debian's prometheus, on loopback)
# scrapes --metrics-addr while real CPU PyTorch trains (Debian's python3
# and torch), and what it stores is what the summary prints; promtool
# accepts /metrics and the --metrics-file textfile.

load helpers

MODEL_PY=$ROOT/tests/fixtures/incident_model.py

teardown() {
	[ -n "${PROM_PID:-}" ] && kill "$PROM_PID" 2>/dev/null
	[ -n "${PROM_PID:-}" ] && wait "$PROM_PID" 2>/dev/null
	# never leave the held workload or the tracer behind
	touch "$BATS_TEST_TMPDIR/fx.go" "$BATS_TEST_TMPDIR/fx.hold"
	[ -n "${MT_PID:-}" ] && kill -INT "$MT_PID" 2>/dev/null
	return 0
}

# a TCP port free on loopback now
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# scrape: our /metrics, as Prometheus gets it
scrape() {
	curl -sf "http://127.0.0.1:$MPORT/metrics"
}

# prom_query QUERY: the value of its one sample in Prometheus (none: empty)
prom_query() {
	curl -sfG "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
		python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
assert len(r) <= 1, r
print(r[0]["value"][1] if r else "")'
}

# sample TEXT NAME LABELS: the value of NAME{LABELS} in a metrics text
sample() {
	awk -v want="$2{$3}" '$1 == want { print $2 }' <<<"$1"
}

start_prometheus() {
	mkdir -p "$BATS_TEST_TMPDIR/prom"
	cat >"$BATS_TEST_TMPDIR/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: memtrace
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
EOF
	prometheus --config.file="$BATS_TEST_TMPDIR/prom/prometheus.yml" \
		--storage.tsdb.path="$BATS_TEST_TMPDIR/prom/data" \
		--web.listen-address="127.0.0.1:$PPORT" \
		>"$BATS_TEST_TMPDIR/prom/log" 2>&1 &
	PROM_PID=$!
}

@test "Prometheus scrapes --metrics-addr: its figures are the summary's, rank and all" {
	command -v prometheus promtool curl
	MPORT=$(free_port) PPORT=$(free_port)
	[ "$MPORT" != "$PPORT" ]
	HELD=1 fixture fx RANK=3 "$TORCH_PY" "$MODEL_PY" --steps 3
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 --keys -q -p "$fx_PID" \
		--metrics-addr "127.0.0.1:$MPORT" \
		--metrics-file "$BATS_TEST_TMPDIR/m.prom"
	start_prometheus
	release fx
	wait_for "$BATS_TEST_TMPDIR/fx.out" '^spike ' 120
	# the steps are done: wait until a scrape sees no more events
	last=
	for ((i = 0; i < 100; i++)); do
		now=$(scrape | grep '^memtrace_allocations_total{' || true)
		[ -n "$now" ] && [ "$now" = "$last" ] && break
		last=$now
		sleep 1
	done
	text=$(scrape)
	echo "$text"
	promtool check metrics <<<"$text"
	labels="pid=\"$fx_PID\",rank=\"3\""
	allocs=$(sample "$text" memtrace_allocations_total "$labels")
	[ "$allocs" -gt 0 ]
	# Prometheus has scraped that figure
	for ((i = 0; i < 120; i++)); do
		[ "$(prom_query "memtrace_allocations_total{rank=\"3\"}")" = "$allocs" ] && break
		sleep 0.5
	done
	q_allocs=$(prom_query "memtrace_allocations_total{rank=\"3\",pid=\"$fx_PID\"}")
	q_failed=$(prom_query "memtrace_failed_allocations_total{rank=\"3\"}")
	q_peak=$(prom_query "memtrace_peak_allocated_bytes{rank=\"3\",device=\"cpu\",source=\"cpu\"}")
	q_fwd=$(prom_query "memtrace_phase_allocated_bytes_total{rank=\"3\",phase=\"forward\"}")
	q_lost=$(prom_query 'memtrace_lost_events_total{job="memtrace"}')
	echo "# prometheus: allocs=$q_allocs failed=$q_failed peak=$q_peak forward=$q_fwd lost=$q_lost"
	[ "$q_allocs" = "$allocs" ]

	touch "$BATS_TEST_TMPDIR/fx.hold"
	finish
	[ "$MT_STATUS" -eq 0 ]
	# the summary, the held workload's figures unchanged since the query
	grep -E '^# (event|device|rank|lost events)' "$TRACE"
	s_allocs=$(sed -nE 's/^# event c10:cpu_alloc count=([0-9]+) .*/\1/p' "$TRACE")
	s_peak=$(sed -nE "s/^# device pid=$fx_PID dev=cpu source=cpu current=[0-9]+ peak=([0-9]+)\$/\1/p" "$TRACE")
	s_fwd=$(sed -nE "s/^# module pid=$fx_PID phase=forward .* bytes_allocated=([0-9]+) .*/\1/p" "$TRACE" | paste -sd+ | bc)
	s_lost=$(sed -nE 's/^# lost events=([0-9]+)$/\1/p' "$TRACE")
	[ "$q_allocs" = "$s_allocs" ]
	[ "$q_failed" = 0 ]
	[ "$q_peak" = "$s_peak" ]
	[ "$q_fwd" = "$s_fwd" ]
	[ "$q_lost" = "$s_lost" ]
	grep -qE "^# rank rank=3 pid=$fx_PID .* allocs=$q_allocs failed=0 " "$TRACE"

	# the textfile, written a last time at the end: every figure
	promtool check metrics <"$BATS_TEST_TMPDIR/m.prom"
	[ ! -e "$BATS_TEST_TMPDIR/m.prom.tmp" ]
	file=$(cat "$BATS_TEST_TMPDIR/m.prom")
	read -r s_cur s_peak < <(sed -nE "s/^# device pid=$fx_PID dev=cpu source=cpu current=([0-9]+) peak=([0-9]+)\$/\1 \2/p" "$TRACE")
	dev="$labels,device=\"cpu\",source=\"cpu\""
	[ "$(sample "$file" memtrace_allocated_bytes "$dev")" = "$s_cur" ]
	[ "$(sample "$file" memtrace_reserved_bytes "$dev")" = "$s_cur" ]
	[ "$(sample "$file" memtrace_peak_allocated_bytes "$dev")" = "$s_peak" ]
	[ "$(sample "$file" memtrace_allocations_total "$labels")" = "$s_allocs" ]
	s_frees=$(sed -nE 's/^# event c10:cpu_free count=([0-9]+) .*/\1/p' "$TRACE")
	[ "$(sample "$file" memtrace_frees_total "$labels")" = "$s_frees" ]
	s_live=$(sed -nE 's/^# live allocations=([0-9]+) .*/\1/p' "$TRACE")
	[ "$(sample "$file" memtrace_live_allocations "$labels")" = "$s_live" ]
	grep -qx "memtrace_lost_events_total $s_lost" "$BATS_TEST_TMPDIR/m.prom"
	# what is alive now by kind adds up to what is allocated now
	local kinds=0 k
	for k in parameters inputs activations gradients optimizer_state temporaries unknown; do
		kinds=$((kinds + $(sample "$file" memtrace_kind_bytes "$dev,kind=\"$k\"")))
	done
	[ "$kinds" = "$s_cur" ]
}

@test "--metrics-addr on a port in use: the reason, and no trace" {
	MPORT=$(free_port)
	python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
print("listening", flush=True); time.sleep(60)' "$MPORT" >"$BATS_TEST_TMPDIR/busy.out" &
	busy=$!
	wait_for "$BATS_TEST_TMPDIR/busy.out" '^listening' 30
	run "$MT" --keys -q -p $$ --metrics-addr "127.0.0.1:$MPORT"
	kill "$busy"
	echo "$output"
	[ "$status" -eq 2 ]
	grep -qx "memtrace-bpf: metrics: listen on 127.0.0.1:$MPORT: Address already in use" <<<"$output"
}

# The GPU host where the static binary died of SIGFPE loading NVML
# (glibc 2.39 there, the build's 2.36): --metrics-addr's libmicrohttpd
# would do the same. Here the static binary runs in the CUDA root, whose
# glibc is trixie's, with a libmicrohttpd.so.12 made on this host (any
# library that needs libc.so.6 brings the root's).
@test "--metrics-addr in the static binary where the system's glibc is not the build's: one line, no crash" {
	need_roots cuda
	root_stage "$ROOT_CUDA" "$ROOT/.output/static/memtrace-bpf"
	printf '#include <stdio.h>\nint mt_stub(void) { return puts("x"); }\n' >"$BATS_TEST_TMPDIR/stub.c"
	gcc -shared -fPIC -Wl,-soname,libmicrohttpd.so.12 -o "$ROOT_CUDA$STAGE/libmicrohttpd.so.12" \
		"$BATS_TEST_TMPDIR/stub.c"
	run env LD_LIBRARY_PATH="$STAGE" "$ROOT/scripts/cuda-standin.sh" --lib-last --bind /sys -- \
		"$STAGE/memtrace-bpf" -q -p 1 --metrics-addr 127.0.0.1:1
	root_unstage
	echo "$output"
	[ "$status" -eq 2 ]
	[ "$output" = "memtrace-bpf: metrics: --metrics-addr: loading libmicrohttpd.so.12 killed by SIGFPE in a helper process: a static memtrace-bpf (glibc $(getconf GNU_LIBC_VERSION | cut -d' ' -f2)) cannot load this system's libraries (--metrics-file needs none, or use the dynamic build)" ]
}
