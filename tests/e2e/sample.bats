#!/usr/bin/env bats
# --sample-bytes: stacks for a sample of the allocations chosen by bytes,
# every total exact, module and line figures estimates that say so. A real
# PyTorch workload on the CPU (Debian's python3 and torch) whose allocations
# are the same every run: one module allocates a large block a call, another
# many small ones (tests/fixtures/sample_model.py).

bats_require_minimum_version 1.5.0

load helpers

SAMPLE_PY=$ROOT/tests/fixtures/sample_model.py

# trace_model ARGS...: trace sample_model.py with memtrace-bpf ARGS -p PID;
# sets TRACE and MODEL (what the fixture printed)
trace_model() {
	HELD=1 fixture fx "$TORCH_PY" "$SAMPLE_PY" --steps 5
	trace 1 "$@" -p "$fx_PID"
	release fx
	settle fx '^small '
	finish
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
}

# keys_of NAME ARGS...: trace_model with -q ARGS --keys, the output kept as
# $BATS_TEST_TMPDIR/NAME.keys
keys_of() {
	local name=$1
	shift
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace_model -q "$@" --keys
	cp "$TRACE" "$BATS_TEST_TMPDIR/$name.keys"
}

# totals FILE: the exact figures, without the pid: events, bytes, peaks
totals() {
	grep -E '^# (event|device) ' "$1" | sed -E 's/ pid=[0-9]+//'
	sed -nE 's/^# summary .* (events=[0-9]+) .* (lost=[0-9]+)$/# summary \1 \2/p' "$1"
}

# module_bytes FILE MODULE: bytes_allocated of MODULE over its phases
module_bytes() {
	awk -v m="$2" '/^# module /{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		if (f["module"] == m) { b += f["bytes_allocated"]; n += f["allocs"] }
	} END { print b + 0, n + 0 }' "$1"
}

# kept_model STEPS ARGS...: memtrace-bpf ARGS -p on sample_model.py
# --steps STEPS --keep, stopped as Ctrl-C stops it while the last call's
# blocks are alive; sets MODEL
kept_model() {
	HELD=1 fixture fx "$TORCH_PY" "$SAMPLE_PY" --steps "$1" --keep
	shift
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 "$@" -p "$fx_PID"
	release fx
	wait_for "$BATS_TEST_TMPDIR/fx.out" '^small '
	kill -INT "$MT_PID"
	finish
	touch "$BATS_TEST_TMPDIR/fx.hold"
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
}

# top_model ARGS...: memtrace-bpf top ARGS, as kept_model runs it; sets
# LAST (its last frame) and MODEL
top_model() {
	kept_model 5 top "$@"
	LAST=$BATS_TEST_TMPDIR/last.frame
	tail -n +"$(grep -n '^memtrace-bpf top: ' "$TRACE" | tail -1 | cut -d: -f1)" "$TRACE" >"$LAST"
}

# frame_totals FRAME: what top shows exact, without the pid: the events,
# the CPU's memory held now and its peak
frame_totals() {
	sed -nE 's/^memtrace-bpf top: .*  (events [0-9]+  lost [0-9]+).*/\1/p' "$1"
	awk '$2 == "cpu" && $NF == "cpu" { print $3, $4, $5, $6 }' "$1"
}

@test "every total is the same with and without --sample-bytes" {
	keys_of full
	keys_of sampled --sample-bytes 512K
	totals "$BATS_TEST_TMPDIR/full.keys" >"$BATS_TEST_TMPDIR/full.totals"
	totals "$BATS_TEST_TMPDIR/sampled.keys" >"$BATS_TEST_TMPDIR/sampled.totals"
	cat "$BATS_TEST_TMPDIR/sampled.totals"
	# allocations, frees, their bytes, the peak and current per device
	grep -q '^# event c10:cpu_alloc count=[1-9]' "$BATS_TEST_TMPDIR/full.totals"
	grep -q '^# device dev=cpu source=cpu current=[0-9]* peak=[1-9]' "$BATS_TEST_TMPDIR/full.totals"
	diff "$BATS_TEST_TMPDIR/full.totals" "$BATS_TEST_TMPDIR/sampled.totals"
	# a sample: some allocations walked, not all
	read -r allocs sampled < <(sed -nE 's/^# sample bytes=524288 allocs=([0-9]+) sampled=([0-9]+) .*/\1 \2/p' \
		"$BATS_TEST_TMPDIR/sampled.keys")
	echo "sampled $sampled of $allocs allocations"
	[ "$sampled" -ge 5 ] && [ "$sampled" -lt $((allocs / 4)) ]
	! grep -q '^# sample ' "$BATS_TEST_TMPDIR/full.keys"
}

@test "a block far larger than R is always sampled: its module's figure is the full trace's" {
	keys_of full
	keys_of sampled --sample-bytes 256K
	big=$(awk '$1=="big"{print $2}' "$MODEL")
	read -r full n_full < <(module_bytes "$BATS_TEST_TMPDIR/full.keys" big)
	read -r est n_est < <(module_bytes "$BATS_TEST_TMPDIR/sampled.keys" big)
	echo "big: full $full B in $n_full, sampled $est B in $n_est"
	[ "$full" -eq $((5 * big)) ]
	[ "$n_est" -eq 5 ]
	# p = 1 - exp(-32): each stands for itself, to the byte
	[ $((est > full ? est - full : full - est)) -le 5 ]
}

@test "R of one byte samples every allocation: the module figures are the full trace's" {
	keys_of full
	keys_of sampled --sample-bytes 1
	for m in big small; do
		read -r full n_full < <(module_bytes "$BATS_TEST_TMPDIR/full.keys" $m)
		read -r est n_est < <(module_bytes "$BATS_TEST_TMPDIR/sampled.keys" $m)
		echo "$m: full $full B in $n_full, sampled $est B in $n_est"
		[ "$full" -gt 0 ]
		[ "$est" -eq "$full" ] && [ "$n_est" -eq "$n_full" ]
	done
	small=$(module_bytes "$BATS_TEST_TMPDIR/full.keys" small | cut -d' ' -f1)
	read -r bytes n < <(awk '$1=="small"{print $2, $3}' "$MODEL")
	[ "$small" -eq $((5 * n * bytes)) ]
}

@test "the report and the keys say which figures are estimates" {
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace_model -q --sample-bytes 512K
	cat "$TRACE"
	grep -qE '^Sampled +stacks for 1 allocation in [0-9]+ \(by bytes, R=512 KiB\); module and line figures \(~\) are estimates, totals exact$' "$TRACE"
	grep -qE '^module +~at peak +% +~self +~own peak +~at end +~allocated$' "$TRACE"
	grep -qE '^module +line +~allocated +% +~allocations$' "$TRACE"
	# a full trace says nothing of it
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace_model -q
	! grep -qE '^Sampled|~' "$TRACE"
}

@test "the metrics: bytes per phase under an estimate's name, beside R; the totals as ever" {
	PROM=$BATS_TEST_TMPDIR/m.prom
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace_model -q --sample-bytes 512K --metrics-file "$PROM"
	cat "$PROM"
	grep -q '^memtrace_sample_bytes 524288$' "$PROM"
	grep -qE '^memtrace_phase_allocated_bytes_estimate_total\{pid="[0-9]+",rank="",phase="[a-z]+"\} [1-9][0-9]*$' "$PROM"
	! grep -q '^memtrace_phase_allocated_bytes_total' "$PROM"
	# every allocation counted: 5 steps of one big and 256 small blocks
	n=$(sed -nE 's/^memtrace_allocations_total\{pid="[0-9]+",rank=""\} ([0-9]+)$/\1/p' "$PROM")
	[ "$n" -ge $((5 * 257)) ]
}

@test "a sampled record: report and script read it as sampled; unsampled events show no stack" {
	REC=$BATS_TEST_TMPDIR/s.mtb
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace_model record -o "$REC" --sample-bytes 512K
	"$MT" report -i "$REC" >"$BATS_TEST_TMPDIR/report.out"
	grep -qE '^Sampled +stacks for 1 allocation in [0-9]+ \(by bytes, R=512 KiB\)' "$BATS_TEST_TMPDIR/report.out"
	"$MT" report -i "$REC" --keys >"$BATS_TEST_TMPDIR/keys.out"
	grep -qE '^# sample bytes=524288 allocs=[0-9]+ sampled=[1-9][0-9]* estimates=module,' "$BATS_TEST_TMPDIR/keys.out"
	"$MT" script -i "$REC" >"$BATS_TEST_TMPDIR/script.out"
	big=$(awk '$1=="big"{print $2}' "$MODEL")
	read -r small _ < <(awk '$1=="small"{print $2, $3}' "$MODEL")
	# the large blocks: each with its module and stack
	[ "$(grep -cE "^[^#	].*: c10:cpu_alloc: .* size=$big .*module=big\$" "$BATS_TEST_TMPDIR/script.out")" -eq 5 ]
	[ "$(grep -A1 -E "^[^#	].*: c10:cpu_alloc: .* size=$big " "$BATS_TEST_TMPDIR/script.out" | grep -c '^	')" -eq 5 ]
	# most small ones: neither module nor stack; the next line is an event
	unsampled=$(awk -v s="$small" 'prev { if (!/^\t/) n++; prev = 0 }
		/^[^#\t].*: c10:cpu_alloc: / && index($0, " size=" s " ") && !/ module=/ { prev = 1 }
		END { print n + 0 }' "$BATS_TEST_TMPDIR/script.out")
	echo "small allocations without a stack: $unsampled"
	[ "$unsampled" -ge 1000 ]
	# an old reader would have mixed them: the record says version 2
	[ "$(od -An -tu2 -j8 -N2 "$REC" | tr -d ' ')" -eq 2 ]
}

@test "top: the memory exact, what modules and lines hold marked as estimates" {
	top_model
	cp "$LAST" "$BATS_TEST_TMPDIR/full.frame"
	top_model --sample-bytes 512K
	cat "$LAST"
	grep -qE '^Sampled \(R=512 KiB\): ~ figures are estimates, totals exact; stacks for 1 allocation in [0-9]+$' "$LAST"
	grep -qE '^ +PID +DEVICE +CURRENT +PEAK +RESERVED +~GROWTH/STEP +~STEP +SOURCE$' "$LAST"
	grep -qE '^ +DEVICE +~NOW +~% +~COUNT +MODULE \(alive now\)$' "$LAST"
	grep -qE '^ +DEVICE +~NOW +~% +~COUNT +LINE \(alive now\)$' "$LAST"
	# the events and the memory: the full trace's
	frame_totals "$BATS_TEST_TMPDIR/full.frame" >"$BATS_TEST_TMPDIR/full.totals"
	frame_totals "$LAST" >"$BATS_TEST_TMPDIR/sampled.totals"
	cat "$BATS_TEST_TMPDIR/sampled.totals"
	grep -qE '^[0-9.]+ MiB [0-9.]+ MiB$' "$BATS_TEST_TMPDIR/full.totals"
	diff "$BATS_TEST_TMPDIR/full.totals" "$BATS_TEST_TMPDIR/sampled.totals"
	# the last block far larger than R: always sampled, itself, as in full
	big=$(awk '$1=="big"{print $2}' "$MODEL")
	[ "$big" -eq $((8 * 1024 * 1024 + 4096)) ]
	grep -qE '^ +cpu +8\.00 MiB +[0-9.]+ +1  big$' "$BATS_TEST_TMPDIR/full.frame"
	grep -qE '^ +cpu +8\.00 MiB +[0-9.]+ +1  big$' "$LAST"
	# the full trace's frame says nothing of it
	! grep -qE '^Sampled|~' "$BATS_TEST_TMPDIR/full.frame"
}

# rows TABLE: a table of the report (from its header to its blank line)
# as "MODULE LINE COUNT" lines, blanks squeezed, sorted
rows() {
	awk 'NR > 1 && NF > 4 { k = $1; for (i = 2; i <= NF - 4; i++) k = k " " $i; print k, $NF }' | sort
}

@test "sampled counts agree: the same allocations count the same at the peak, at the end and allocated, and never add up past the exact count" {
	REC=$BATS_TEST_TMPDIR/s.mtb
	# one call, its 257 blocks kept: alive at the peak and at the end
	kept_model 1 record -o "$REC" --sample-bytes 64K
	read -r _ n < <(awk '$1=="small"{print $2, $3}' "$BATS_TEST_TMPDIR/fx.out")
	all=$((n + 1))
	COLUMNS=300 "$MT" report -i "$REC" >"$BATS_TEST_TMPDIR/report.out"
	cat "$BATS_TEST_TMPDIR/report.out"
	grep -qE "^cpu: [0-9.]+ [KMG]iB in $all allocations at the peak, " "$BATS_TEST_TMPDIR/report.out"
	awk '/^Alive at the peak, by module and line:$/ { on = 1; next }
		on && /^$/ { exit } on' "$BATS_TEST_TMPDIR/report.out" | rows >"$BATS_TEST_TMPDIR/peak.rows"
	awk '/^\(not leaks: / { on = 1; next }
		on && /^$/ { exit } on' "$BATS_TEST_TMPDIR/report.out" | rows >"$BATS_TEST_TMPDIR/end.rows"
	awk '/^Top call sites, by bytes allocated$/ { on = 1; next }
		on && /^$/ { exit } on' "$BATS_TEST_TMPDIR/report.out" | rows >"$BATS_TEST_TMPDIR/alloc.rows"
	cat "$BATS_TEST_TMPDIR/peak.rows"
	# the small blocks, most of them not walked, and the big one
	[ "$(wc -l <"$BATS_TEST_TMPDIR/peak.rows")" -eq 2 ]
	[ "$(awk '{ s += $NF } END { print s }' "$BATS_TEST_TMPDIR/peak.rows")" -le "$all" ]
	grep -q '^big .* 1$' "$BATS_TEST_TMPDIR/peak.rows"
	diff "$BATS_TEST_TMPDIR/peak.rows" "$BATS_TEST_TMPDIR/end.rows"
	# every allocation made is alive: as many allocated
	diff "$BATS_TEST_TMPDIR/peak.rows" "$BATS_TEST_TMPDIR/alloc.rows"
	# the keys: the exact count, and the groups' counts never past it
	"$MT" report --keys -i "$REC" >"$BATS_TEST_TMPDIR/keys.out"
	grep -qE "^# peak pid=[0-9]+ cpu allocated: .* allocs=$all sum=[0-9]+ \(estimate\)\$" "$BATS_TEST_TMPDIR/keys.out"
	[ "$(sed -nE 's/^#   .* count=([0-9]+) .*/\1/p' "$BATS_TEST_TMPDIR/keys.out" | paste -sd+ | bc)" -le "$all" ]
	# allocated over the trace, by module and by call site: no more
	[ "$(sed -nE 's/^# module .* allocs=([0-9]+) .*/\1/p' "$BATS_TEST_TMPDIR/keys.out" | paste -sd+ | bc)" -le "$all" ]
	[ "$(sed -nE 's/^# op .* allocs=([0-9]+) .*/\1/p' "$BATS_TEST_TMPDIR/keys.out" | paste -sd+ | bc)" -le "$all" ]
}

@test "what reads every stack refuses a sampled trace, in one line" {
	run -2 "$MT" -q --sample-bytes 512K --no-python -p 1
	[ "$output" = "memtrace-bpf: --sample-bytes samples the Python stacks that --no-python turns off: give one of them" ]
	run -2 "$MT" -q --sample-bytes 512K --module-log "$BATS_TEST_TMPDIR/m.log" -p 1
	[ "$output" = "memtrace-bpf: --module-log reads the phase of every event, and --sample-bytes walks the stacks of a sample only: give one of them" ]
	for f in "--module encoder" "--phase forward" "--steps 1,2"; do
		run -2 "$MT" -q --sample-bytes 512K $f -p 1
		[ "$output" = "memtrace-bpf: ${f% *} selects events by their stack, and this trace has stacks for a sample of its allocations only (--sample-bytes 524288): filter a trace made without --sample-bytes" ]
	done
	run -2 "$MT" -q --sample-bytes 0 -p 1
	[ "$output" = "memtrace-bpf: invalid sample size: '0' (see --help)" ]

	# a sampled record: a filter by stack, refused before an export starts,
	# and estimate --scale
	REC=$BATS_TEST_TMPDIR/s.mtb
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace_model record -o "$REC" --sample-bytes 512K
	run -2 "$MT" report -i "$REC" --module big --export folded -o "$BATS_TEST_TMPDIR/f.txt"
	[ "$output" = "memtrace-bpf: --module selects events by their stack, and this trace has stacks for a sample of its allocations only (--sample-bytes 524288): filter a trace made without --sample-bytes" ]
	# refused before the export's file is made
	[ ! -e "$BATS_TEST_TMPDIR/f.txt" ]
	# estimate reads it; --scale, which matches stacks, is refused
	run -2 "$MT" estimate -i "$REC" --scale Big.forward=2
	[ "$output" = "memtrace-bpf: --scale matches stacks, and $REC has stacks for a sample of its allocations only (--sample-bytes 524288): scale a record made without --sample-bytes" ]
}
