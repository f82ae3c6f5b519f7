#!/usr/bin/env bats
# The report for people, printed by default at the end of a trace and by
# report: its headline, the module tree, its percentages, its width and
# colour, the cut of --percent-limit, and what could not be seen.

load helpers

ATTRIB_PY=$ROOT/tests/fixtures/attrib_model.py
INCIDENT_PY=$ROOT/tests/fixtures/incident_model.py

# record FIXTURE_PY SETTLE ARGS...: record the held fixture into $REC
record_model() {
	local py=$1 last=$2
	shift 2
	REC=$BATS_TEST_TMPDIR/t.mtb
	HELD=1 fixture fx "$TORCH_PY" "$py" "$@"
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 record -o "$REC" -p "$fx_PID"
	release fx
	settle fx "$last"
	finish
	[ "$MT_STATUS" -eq 0 ]
	MODEL=$BATS_TEST_TMPDIR/fx.out
}

# report ARGS...: the report of $REC (its record lines left out) into $OUT
report() {
	OUT=$BATS_TEST_TMPDIR/report.out
	"$MT" report -i "$REC" "$@" | grep -v '^# record ' >"$OUT"
}

# table FILE TITLE: the lines of the table under the line TITLE starts
table() {
	awk -v t="$2" 'index($0, t) == 1 { on = 1; next }
		on && /^$/ { exit } on' "$1"
}

# the module tree's parents against their children, and the top level's
# percentages against 100 (python: the human units are parsed)
check_tree() {
	python3 - "$1" <<'PY'
import re, sys
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
def size(s):
    n, u = s.split()
    return float(n) * UNITS[u]
rows = []
for line in open(sys.argv[1]).read().splitlines()[1:]:
    depth = (len(line) - len(line.lstrip(" "))) // 2
    cells = re.split(r" {2,}", line.strip())
    more = cells[0].startswith("... ")
    rows.append((depth, cells[0], size(cells[1]), float(cells[2][:-1]),
                 0 if more else size(cells[3])))
parents = 0
for i, (d, name, incl, _, own) in enumerate(rows):
    kids = []
    for d2, _, incl2, _, _ in rows[i + 1:]:
        if d2 <= d:
            break
        if d2 == d + 1:
            kids.append(incl2)
    if not kids:
        continue
    parents += 1
    total = own + sum(kids)
    print(f"{name}: {incl:.0f} vs self + children {total:.0f}")
    assert abs(incl - total) <= 0.01 * incl + 1024, name
assert parents >= 3, "too few parents to check"
top = [p for d, _, _, p, _ in rows if d == 0]
print(f"top-level percentages: {sum(top):.1f}")
assert abs(sum(top) - 100) <= 0.1 * len(top) + 0.1
PY
}

@test "the headline names the peak's module and line, as the '#' peak lines do" {
	record_model "$ATTRIB_PY" '^root ' --steps 4
	COLUMNS=200 report
	"$MT" report --keys -i "$REC" >"$BATS_TEST_TMPDIR/keys.out"
	cat "$OUT"
	# from the keys: the (module, first frame outside torch) holding most
	want=$(awk '
		/^# peak pid=.* cpu allocated: / { on = 1; next }
		on && /^#   [0-9]/ { for (i = 2; i <= NF; i++) { split($i, kv, "=")
				if (kv[1] == "bytes") b = kv[2]; if (kv[1] == "module") m = kv[2] }
			g = 1; next }
		on && g && /^#\t/ { f = substr($0, 3); file = f; sub(/.*\(/, "", file)
			if (file ~ /(^|\/)torch\// || file ~ /^</) next
			sum[m "|" f] += b; g = 0; next }
		on && !/^#/ { on = 0 }
		END { for (k in sum) if (sum[k] > best) { best = sum[k]; bk = k } print bk }' \
		"$BATS_TEST_TMPDIR/keys.out")
	echo "from --keys: $want"
	module=${want%%|*}
	[ "$module" = - ] && module="(no module)"
	line=${want#*|}
	grep -qF "  most held by $module: " "$OUT"
	grep -qF "  at $line" "$OUT"
	# the planted fact: Adam's state, made at the line of opt.step()
	step=$(grep -n 'opt.step()' "$ATTRIB_PY" | cut -d: -f1)
	grep -qF "  at main ($ATTRIB_PY:$step)" "$OUT"
	grep -qE '^Peak +cpu: [0-9.]+ [KMG]iB at [0-9.]+ s, step [0-9]+, optimizer$' "$OUT"
	grep -qE '^Leaks +none: ' "$OUT"
	grep -qE '^OOMs +none$' "$OUT"
}

@test "the spike's module and line head the report of the incident model" {
	record_model "$INCIDENT_PY" '^spike ' --steps 6
	COLUMNS=200 report
	cat "$OUT"
	read -r _ line bytes < <(grep '^spike ' "$MODEL")
	grep -qE '^Peak +cpu: .*, forward$' "$OUT"
	grep -qF "  most held by spike: " "$OUT"
	grep -qF "  at Spike.forward ($INCIDENT_PY:$line)" "$OUT"
	table "$OUT" 'Alive at the peak, by module and line' | sed -n 2p |
		grep -qE "^spike +Spike.forward \($INCIDENT_PY:$line\) "
}

@test "the module tree's parents sum their children, its percentages add up" {
	record_model "$ATTRIB_PY" '^root ' --steps 3
	COLUMNS=200 report --percent-limit 0
	table "$OUT" 'By module' >"$BATS_TEST_TMPDIR/tree"
	cat "$BATS_TEST_TMPDIR/tree"
	head -1 "$BATS_TEST_TMPDIR/tree" | grep -qE '^module +at peak +% +self +own peak +at end +allocated$'
	# the names nest: encoder > encoder.0 > encoder.0.proj
	grep -qE '^encoder  ' "$BATS_TEST_TMPDIR/tree"
	grep -qE '^  encoder\.0  ' "$BATS_TEST_TMPDIR/tree"
	grep -qE '^    encoder\.0\.proj  ' "$BATS_TEST_TMPDIR/tree"
	check_tree "$BATS_TEST_TMPDIR/tree"
	# the same with rows cut: their "... N more" rows keep the sums
	COLUMNS=200 report --percent-limit 5
	table "$OUT" 'By module' >"$BATS_TEST_TMPDIR/tree"
	grep -q '\.\.\. [0-9]* more' "$BATS_TEST_TMPDIR/tree"
	check_tree "$BATS_TEST_TMPDIR/tree"
	# the lines alive at the peak add up to it too
	table "$OUT" 'Alive at the peak' | awk 'NR > 1 { sub("%", "", $(NF - 1)); s += $(NF - 1); n++ }
		END { print s; exit !(s > 99.9 - 0.1 * n && s < 100.1 + 0.1 * n) }'
}

@test "--percent-limit cuts rows into one '... N more' row; with --keys it is an error" {
	record_model "$ATTRIB_PY" '^root ' --steps 2
	report --percent-limit 0
	all=$(table "$OUT" 'Top call sites' | wc -l)
	report --percent-limit 10
	cut=$(table "$OUT" 'Top call sites' | wc -l)
	table "$OUT" 'Top call sites'
	echo "rows: $all, cut: $cut"
	[ "$cut" -lt "$all" ]
	table "$OUT" 'Top call sites' | tail -1 | grep -qE '^\.\.\. [0-9]+ more '
	# every row left holds at least 10 %
	table "$OUT" 'Top call sites' | sed '1d;$d' | awk '{ sub("%", "", $(NF - 1)); if ($(NF - 1) < 10) exit 1 }'
	run "$MT" report --keys --percent-limit 5 -i "$REC"
	[ "$status" -eq 2 ]
	[[ "$output" == "memtrace-bpf: --percent-limit cuts the report's rows; --keys prints every figure"* ]]
	run "$MT" report --percent-limit 101 -i "$REC"
	[ "$status" -eq 2 ]
}

@test "a width of 80 is kept, from COLUMNS or a terminal; colour only on a terminal, never with NO_COLOR" {
	record_model "$ATTRIB_PY" '^root ' --steps 2
	COLUMNS=80 report
	cat "$OUT"
	! awk 'length($0) > 80 { print "too wide: " $0; bad = 1 } END { exit bad }' "$OUT" | grep .
	# long lines elided from the left: the file and line stay
	grep -qE '^\(no module\) +\.\.\..*attrib_model\.py:[0-9]+\) ' "$OUT"
	! grep -q $'\033' "$OUT"
	# a terminal of 80 columns: its width, and colour
	script -qc "stty cols 80; unset COLUMNS; '$MT' report -i '$REC'" /dev/null |
		tr -d '\r' | grep -v '^# record ' >"$BATS_TEST_TMPDIR/tty.out"
	grep -q $'\033\\[1m' "$BATS_TEST_TMPDIR/tty.out"
	sed 's/\x1b\[[0-9;]*m//g' "$BATS_TEST_TMPDIR/tty.out" |
		awk 'length($0) > 80 { print "too wide: " $0; bad = 1 } END { exit bad }'
	grep -q '^Peak' <(sed 's/\x1b\[[0-9;]*m//g' "$BATS_TEST_TMPDIR/tty.out")
	script -qc "NO_COLOR=1 '$MT' report -i '$REC'" /dev/null >"$BATS_TEST_TMPDIR/tty.out"
	grep -q 'Peak' "$BATS_TEST_TMPDIR/tty.out"
	! grep -q $'\033' "$BATS_TEST_TMPDIR/tty.out"
}

@test "-p: frees of memory allocated before the attach are counted and shown" {
	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/early_free.py" --count 5
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 -q -p "$fx_PID"
	release fx
	settle fx '^late '
	finish
	[ "$MT_STATUS" -eq 0 ]
	cat "$TRACE"
	# CPU frees carry no size: all five of unknown size
	grep -qE '^Unseen +5 frees of memory allocated before the attach, 5 of unknown size$' "$TRACE"

	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/early_free.py" --count 3
	trace 1 --keys -p "$fx_PID"
	release fx
	settle fx '^late '
	finish
	grep -q '^# unseen frees_before_attach=3 bytes=0 unsized=3$' "$TRACE"
	# the late tensor was seen whole: not one of them
	grep -qE ': c10:cpu_free: .* size=700001 ' "$TRACE"
	[ "$(grep -cE ': c10:cpu_free: .* size=\? ' "$TRACE")" -eq 3 ]
}

@test "-p amid a step: the peak is since the attach; backward allocations whose forward ran before it are counted with their cause; none when every step is seen whole" {
	MID=$ROOT/tests/fixtures/mid_step.py
	record_model "$MID" '^done'
	COLUMNS=200 report
	cat "$OUT"
	grep -qE '^ +since the attach: what it held before is not in this peak \([0-9]+ frees of it seen\)$' "$OUT"
	grep -qE '^(Unseen)? +[0-9]+ backward allocations \([0-9.]+ [KMG]?i?B\) have no module: the forward that made their autograd Node ran before the attach$' "$OUT"
	n=$("$MT" report --keys -i "$REC" | sed -nE 's/^# unseen backward_forward_before_attach=([0-9]+) bytes=[0-9]+$/\1/p')
	# they are the first backward's allocations (a leaf's AccumulateGrad
	# has no forward: never counted), and none after; each backward()
	# begins with an allocation of its own, under no Node
	"$MT" script -i "$REC" | awk '/^[^#\t]/ && / c10:cpu_alloc: / && /phase=backward/' >"$BATS_TEST_TMPDIR/bwd"
	first=$(awk '!/ node=/ && ++k == 2 { print NR; exit }' "$BATS_TEST_TMPDIR/bwd")
	echo "counted $n; the first backward's allocations end at $first"
	[ "$n" -ge 10 ]
	[ "$n" -eq "$(head -n "$first" "$BATS_TEST_TMPDIR/bwd" | grep ' node=' | grep -vc ' node=AccumulateGrad')" ]
	# the second step's Linear layers have their modules back
	tail -n +"$first" "$BATS_TEST_TMPDIR/bwd" | grep ' node=AddmmBackward0' | grep -q ' module=0 '

	record_model "$MID" '^done' --whole
	"$MT" report --keys -i "$REC" >"$BATS_TEST_TMPDIR/keys"
	grep -q ' phase=backward module=0 ' <("$MT" script -i "$REC")
	! grep '^# unseen \(backward\|stacks\)' "$BATS_TEST_TMPDIR/keys"
	COLUMNS=200 report
	! grep -E 'have no module|before the tracer' "$OUT"

	# traced from its start, nothing is said to come before
	run "$MT" -q -- "$TORCH_PY" "$MID" --whole
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^Peak ' <<<"$output"
	! grep -E 'since the attach|before the attach|have no module' <<<"$output"
}

@test "-p on a process that allocates as it is attached: its first event has its stack" {
	HELD=1 fixture fx "$TORCH_PY" "$ROOT/tests/fixtures/mid_step.py" --spin
	REC=$BATS_TEST_TMPDIR/t.mtb
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 record -o "$REC" -p "$fx_PID"
	release fx
	settle fx '^done'
	finish
	[ "$MT_STATUS" -eq 0 ]
	"$MT" script -i "$REC" | grep -v '^#' | head -3 >"$BATS_TEST_TMPDIR/first"
	cat "$BATS_TEST_TMPDIR/first"
	# the first event (a tensor made or freed as the tracer attached) has
	# its stack, as every one after it
	grep -qE ': c10:cpu_(alloc|free): ' <(head -1 "$BATS_TEST_TMPDIR/first")
	grep -qE $'^\tspin_until_go \(.*mid_step\.py:[0-9]+\)$' <(sed -n 2p "$BATS_TEST_TMPDIR/first")
	! "$MT" report --keys -i "$REC" | grep -E '^# (unseen stacks|lost python)'
}

@test "what lives at the end is called still alive, apart from the leak suspects" {
	HELD=1 fixture fx "$TORCH_PY" "$INCIDENT_PY" --steps 8 --leak
	MT_LOG=$BATS_TEST_TMPDIR/trace.err trace 1 -q -p "$fx_PID"
	release fx
	# stopped while the model still holds its tensors
	wait_for "$BATS_TEST_TMPDIR/fx.out" '^spike '
	kill -INT "$MT_PID"
	finish
	touch "$BATS_TEST_TMPDIR/fx.hold"
	[ "$MT_STATUS" -eq 0 ]
	OUT=$TRACE
	cat "$OUT"
	read -r _ line bytes < <(grep '^leak ' "$BATS_TEST_TMPDIR/fx.out")
	grep -qE '^Leaks +1 call site grew at each of the last 3 boundaries' "$OUT"
	table "$OUT" 'Leak suspects' | grep -qF "main ($INCIDENT_PY:$line)"
	table "$OUT" 'Still alive when the trace ended' >"$BATS_TEST_TMPDIR/alive"
	grep -q '^(not leaks: the leak check is the headline' "$BATS_TEST_TMPDIR/alive"
	# the leak and the model's own state: alive, only one a suspect
	grep -qF "main ($INCIDENT_PY:$line)" "$BATS_TEST_TMPDIR/alive"
	[ "$(grep -c '^[a-z(]' "$BATS_TEST_TMPDIR/alive")" -ge 3 ]
	! grep -qi 'never freed' "$OUT"
}

@test "--keys prints the '#' lines and no report; the default prints no '#' summary line" {
	record_model "$ATTRIB_PY" '^root ' --steps 2
	report
	! grep -qE '^# (summary|module|peak|leaks|lost) ' "$OUT"
	grep -q '^memtrace-bpf report: ' "$OUT"
	report --keys
	grep -q '^# summary duration=' "$OUT"
	grep -qE '^# module pid=[0-9]+ phase=forward module=encoder.0.proj .* peak=[0-9]+ .*live=[0-9]+ process_peak=[0-9]+' "$OUT"
	! grep -q '^memtrace-bpf report: ' "$OUT"
	! grep -q 'time=0.000000s' "$OUT"
}

@test "a live run whose event lines pass a screen says that -q prints the report alone; -q and a short run do not" {
	run "$MT" -- "$TORCH_PY" -c 'import torch
for i in range(30): torch.ones(1 << 12)'
	[ "$status" -eq 0 ]
	n=$(grep -cE '^[^#	].*: c10:cpu_(alloc|free): ' <<<"$output")
	[ "$n" -gt 50 ]
	grep -qE "^# memtrace-bpf printed [0-9]+ events above; -q prints the report below alone\$" <<<"$output"
	# the line comes right before the report
	grep -A1 'events above; -q' <<<"$output" | grep -q '^memtrace-bpf report: '
	run "$MT" -q -- "$TORCH_PY" -c 'import torch
for i in range(30): torch.ones(1 << 12)'
	! grep -q 'events above' <<<"$output"
	run "$MT" -- "$TORCH_PY" -c 'pass'
	! grep -q 'events above' <<<"$output"
}
