# The conformance corpus (tests/conformance/corpus.py): models nobody
# here wrote, each run once on the CUDA stand-in and traced by four
# tracers at once, every mode's figures against PyTorch's own in the same
# process. Loaded by tests/e2e/corpus.bats after helpers and cuda_checks.
#
# Each check appends a line to $RESULTS, "MODEL|MODE|OURS|TORCH|VERDICT"
# (scripts/corpus-table.sh makes the table of docs/TESTS.md from it), and
# returns 1 when memtrace-bpf and PyTorch differ.

STANDIN=$ROOT/scripts/cuda-standin.sh
CORPUS_PY=$ROOT/tests/conformance/corpus.py

# the short set `make test` runs; MT_CORPUS=all (make conformance) or a
# list of names runs those
CORPUS_SHORT="vit resnet18"

corpus_models() {
	case ${MT_CORPUS:-} in
	"") echo "$CORPUS_SHORT" ;;
	all) "$TORCH_PY" "$CORPUS_PY" --list 2>/dev/null ||
		sed -nE 's/^    "([a-z0-9_]+)": \(.*/\1/p' "$CORPUS_PY" ;;
	*) echo "$MT_CORPUS" ;;
	esac
}

# res MODEL MODE OURS TORCH OK: one line of the table; OK 0 is "equal"
res() {
	local verdict=${6:-equal}
	[ "$5" -eq 0 ] || verdict=DIFFERENT
	echo "$1|$2|$3|$4|$verdict" >>"$RESULTS"
	echo "corpus: $1 $2: ours $3, PyTorch $4: $verdict" >&2
	return "$5"
}

# corpus_stage: corpus.py with what it imports, staged in the CUDA root
corpus_stage() {
	root_stage "$ROOT_CUDA" "$CORPUS_PY" "$ROOT/tests/fixtures/cuda_model.py" \
		"$ROOT/tests/fixtures/memviz_compare.py" \
		"$ROOT/.output/static/memtrace-bpf"
}

# corpus_dry MODEL: estimate --dry-run of corpus.py MODEL in the root (a
# privileged container, the static binary alone, as dryrun.bats runs it)
corpus_dry() {
	local m=$1 alloc res_ ok=0
	corpus_stage
	in_root "$ROOT_CUDA" privileged
	run "${IN_ROOT[@]}" "$STAGE/memtrace-bpf" estimate --dry-run -- \
		/usr/bin/python3 "$STAGE/corpus.py" "$m"
	root_unstage
	[ "$status" -eq 0 ] || { echo "$output" | tail -20 >&2; ok=1; }
	read -r alloc res_ < <(sed -nE 's/^torch dev=cuda:0 .*allocated_peak=([0-9]+) reserved=[0-9]+ reserved_peak=([0-9]+) .*/\1 \2/p' <<<"$output")
	[ -n "$alloc" ] && [ "$(dry_key peak_allocated)" = "$alloc" ] &&
		[ "$(dry_key peak_reserved)" = "$res_" ] || ok=1
	res "$m" "estimate --dry-run: peak allocated/reserved" \
		"$(dry_key peak_allocated)/$(dry_key peak_reserved)" "$alloc/$res_" $ok
}

# wait_any PATTERN FILE...: until a line of one of FILEs matches
wait_any() {
	local pat=$1 i f
	shift
	for ((i = 0; i < 1200; i++)); do
		for f in "$@"; do
			grep -qE -- "$pat" "$f" 2>/dev/null && return 0
		done
		sleep 0.05
	done
	echo "timed out waiting for /$pat/ in $*" >&2
	return 1
}

# alive_for FILE PATTERN SECS: wait_for, failing at once when the model
# (PID) ended
alive_for() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	grep -qE -- "$2" "$1" 2>/dev/null && return 0
	echo "the model ended or timed out before /$2/ in $1" >&2
	return 1
}

# corpus_trace MODEL: one run of corpus.py MODEL, traced from its READY
# (before its first CUDA allocation) by memtrace-bpf --keys with
# --module-log, by record and by record --flight, and from its MID (after
# its first step) by -q; the flight recorder dumped on SIGUSR1 at the
# end. Sets D (the files) and MODEL, PID for cuda_checks.
corpus_trace() {
	local m=$1 t1 t2 t3 t4 size i ok=0
	D=$BATS_TEST_TMPDIR/$m
	mkdir -p "$D/flight"
	corpus_stage
	HELD=1 fixture_in_root fx env MT_GO2="$STAGE/fx.go2" "$STANDIN" -- \
		/usr/bin/python3 "$STAGE/corpus.py" "$m" \
		--history "$STAGE/torch.pickle" --modlog "$STAGE/hooks.log"
	PID=$fx_PID
	MODEL=$BATS_TEST_TMPDIR/fx.out
	"$MT" --keys --top-live 100000 -p "$PID" --module-log "$D/mod.log" \
		>"$D/live.out" 2>"$D/live.err" &
	t1=$!
	"$MT" record -o "$D/t.mtb" -p "$PID" >/dev/null 2>"$D/rec.err" &
	t2=$!
	"$MT" record --flight 10m -o "$D/flight" -p "$PID" >/dev/null \
		2>"$D/fl.err" &
	t3=$!
	wait_any '^# python pid=' "$D/live.out" "$D/live.err"
	wait_for "$D/rec.err" '^# python pid=' 60
	wait_for "$D/fl.err" '^# python pid=' 60
	release fx
	alive_for "$MODEL" '^MID ' 120 || ok=1
	"$MT" -q --keys --no-cpu -p "$PID" >"$D/mid.out" 2>"$D/mid.err" &
	t4=$!
	wait_any '^# python pid=' "$D/mid.out" "$D/mid.err" || ok=1
	touch "$ROOT_CUDA$STAGE/fx.go2"
	alive_for "$MODEL" '^done ' 300 || ok=1
	# the last events through the ring buffers
	size=-1
	for ((i = 0; i < 100; i++)); do
		sleep 0.1
		[ "$(stat -c %s "$D/live.out")" = "$size" ] && break
		size=$(stat -c %s "$D/live.out")
	done
	kill -USR1 "$t3" 2>/dev/null || ok=1
	wait_for "$D/fl.err" '^memtrace-bpf: flight: dumped .*-asked\.mtb: ' 30 || ok=1
	kill -INT "$t1" "$t2" "$t3" "$t4" 2>/dev/null || ok=1
	MT_STATUS=0
	for i in "$t1" "$t2" "$t3" "$t4"; do
		wait "$i" || MT_STATUS=$?
	done
	touch "$BATS_TEST_TMPDIR/fx.hold"
	for ((i = 0; i < 200; i++)); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	cp "$ROOT_CUDA$STAGE/torch.pickle" "$D/" || ok=1
	cp "$ROOT_CUDA$STAGE/hooks.log" "$D/" 2>/dev/null || : >"$D/hooks.log"
	cp "$MODEL" "$D/torch.out"
	MODEL=$D/torch.out
	root_unstage
	cat "$D/live.err" "$D/rec.err" "$D/fl.err" "$D/mid.err" \
		"$BATS_TEST_TMPDIR/fx.err" >&2
	[ "$MT_STATUS" -eq 0 ] && [ "$ok" -eq 0 ]
}

# mt_field FILE PATTERN KEY: KEY of the first line of FILE matching
mt_field() {
	ck_field "$(grep -m1 -E -- "$2" "$1")" "$3"
}

# corpus_c10 MODEL: the trace from READY (every event): the caching
# allocator's totals, peaks, events, live blocks and segments
corpus_c10() {
	local m=$1 ok=0 dev
	TRACE=$D/live.out
	dev="^# device pid=$PID dev=cuda:0 source=c10 "
	{ ck_c10 cuda:0 && ck_c10_bytes cuda:0; } || ok=1
	res "$m" "-p from READY: allocated/peak/reserved/peak" \
		"$(mt_field "$TRACE" "$dev" allocated)/$(mt_field "$TRACE" "$dev" allocated_peak)/$(mt_field "$TRACE" "$dev" reserved)/$(mt_field "$TRACE" "$dev" reserved_peak)" \
		"$(ck_torch cuda:0 allocated)/$(ck_torch cuda:0 allocated_peak)/$(ck_torch cuda:0 reserved)/$(ck_torch cuda:0 reserved_peak)" $ok || true
	res "$m" "-p from READY: c10 allocs/frees" \
		"$(grep -cE '^[^#].*: c10:alloc: .* dev=cuda:0 ' "$TRACE")/$(grep -cE '^[^#].*: c10:free: .* dev=cuda:0 ' "$TRACE")" \
		"$(ck_torch cuda:0 allocs)/$(ck_torch cuda:0 frees)" $ok || true
	ok=0
	ck_blocks cuda:0 || ok=1
	res "$m" "-p from READY: live blocks at the end" \
		"$(ck_live c10:alloc | wc -l)" "$(ck_torch cuda:0 active_blocks)" $ok || true
	ok=0
	ck_segments cuda:0 || ok=1
	res "$m" "-p from READY: segments (cudaMalloc of libc10_cuda)" \
		"$(ck_live cudart:cudaMalloc libc10_cuda | wc -l)" "$(ck_torch cuda:0 segments)" $ok || true
}

# corpus_mid MODEL: -q --keys attached at MID: totals, peaks since, what
# the allocator held before it, events since; phases of the bytes
corpus_mid() {
	local m=$1 ok=0 mid since ours want dev total other pct
	TRACE=$D/mid.out
	mid=$(grep '^mid dev=cuda:0 ' "$MODEL")
	since=$(grep '^since dev=cuda:0 ' "$MODEL")
	dev=$(grep -m1 "^# device pid=$PID dev=cuda:0 source=c10 " "$TRACE")
	ours="$(ck_field "$dev" allocated)/$(ck_field "$dev" allocated_peak)/$(ck_field "$dev" reserved)/$(ck_field "$dev" reserved_peak) before $(ck_field "$dev" before_allocated)/$(ck_field "$dev" before_reserved)"
	want="$(ck_torch cuda:0 allocated)/$(ck_field "$since" allocated_peak)/$(ck_torch cuda:0 reserved)/$(ck_field "$since" reserved_peak) before $(ck_field "$mid" allocated)/$(ck_field "$mid" reserved)"
	[ "$ours" = "$want" ] || ok=1
	res "$m" "-q -p at MID: allocated/peak/reserved/peak since, before" \
		"$ours" "$want" $ok || true
	ok=0
	ours=$(sed -nE 's/^# event c10:alloc count=([0-9]+) bytes=([0-9]+)$/\1 \2/p' "$TRACE")/$(sed -nE 's/^# event c10:free count=([0-9]+) bytes=([0-9]+)$/\1 \2/p' "$TRACE")
	want="$(($(ck_torch cuda:0 allocs) - $(ck_field "$mid" allocs))) $(($(ck_torch cuda:0 alloc_bytes) - $(ck_field "$mid" alloc_bytes)))/$(($(ck_torch cuda:0 frees) - $(ck_field "$mid" frees))) $(($(ck_torch cuda:0 free_bytes) - $(ck_field "$mid" free_bytes)))"
	[ "$ours" = "$want" ] || ok=1
	res "$m" "-q -p at MID: c10 allocs bytes/frees bytes since" "$ours" "$want" $ok || true
	# the step's bytes with a phase (of the CUDA events: --no-cpu)
	read -r total other < <(awk '/^# module /{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		t += f["bytes_allocated"]; if (f["phase"] == "other") o += f["bytes_allocated"]
	} END { print t + 0, o + 0 }' "$TRACE")
	ok=0
	[ "$total" -gt 0 ] && pct=$(((total - other) * 1000 / total)) || pct=0
	[ "$pct" -ge 990 ] || ok=1
	res "$m" "-q -p at MID: bytes with a phase" \
		"$((pct / 10)).$((pct % 10)) % of $total" ">= 99 %" $ok || true
}

# corpus_backward MODEL: the gradient of each of the 8 largest weights
# is made on pt_autograd_0, in backward, named with its module. Its
# block is found by the last step's gradient's address, not by its size:
# the caching allocator hands a request a cached block up to 1 MiB larger
# without splitting it (resnet18's layer3.0.conv1: 1.1 MiB in 2 MiB).
# AccumulateGrad (a Node of no module) keeps a copy of a gradient whose
# strides are not its weight's (PyTorch's layout contract: convnext's
# downsampling convolutions, whose channels_last input makes their weight
# gradient channels_last): then the module's Node must have made one of
# that size in backward, and the verdict names the weight
corpus_backward() {
	local m=$1 ok=0 n=0 good=0 name bytes ptr bad= copied= last
	TRACE=$D/live.out
	while read -r _ name bytes ptr; do
		n=$((n + 1))
		last=$(grep -E "^[^#].*: c10:alloc: ptr=$ptr " "$TRACE" | tail -1 |
			grep -E "^pt_autograd_0 $PID/[0-9]+ .* phase=backward ")
		if grep -qE " module=$name node=[A-Za-z0-9]*Backward[0-9]*\$" <<<"$last"; then
			good=$((good + 1))
		elif grep -qE " module=- node=AccumulateGrad\$" <<<"$last" &&
			grep -qE "^pt_autograd_0 $PID/[0-9]+ .*: c10:alloc: .* size=$bytes .* phase=backward module=$name node=[A-Za-z0-9]*Backward[0-9]*\$" "$TRACE"; then
			good=$((good + 1))
			copied+=" $name"
		else
			bad+=" $name"
		fi
		[ "$n" -ge 8 ] && break
	done < <(grep '^grad ' "$MODEL")
	if [ "$n" -eq 0 ]; then
		res "$m" "-p: weight gradients on pt_autograd_0 named with their module" \
			"none" "none" 0 "not compared: the model has no weight"
		return 0
	fi
	[ "$good" -eq "$n" ] || ok=1
	[ -z "$bad" ] || echo "corpus: $m: no gradient on pt_autograd_0 in backward of:$bad" >&2
	res "$m" "-p: weight gradients on pt_autograd_0 named with their module" \
		"$good of $n" "$n of $n" $ok \
		"equal${copied:+; AccumulateGrad (module=-) copied the gradient its module made, whose strides are not the weight strides:$copied}" || true
}

# corpus_modlog MODEL: --module-log against the in-process hooks
corpus_modlog() {
	local m=$1 ok=0 why
	why=$(sed -n 's/^nohooks [^:]*: //p' "$MODEL")
	if [ -n "$why" ]; then
		res "$m" "--module-log: records equal to in-process hooks" \
			"$(grep -c '^step=' "$D/mod.log") records" "none" 0 \
			"not compared: $why"
		return 0
	fi
	ck_modlog "$D/mod.log" "$D/hooks.log" 2>"$D/modlog.diff" || ok=1
	head -40 "$D/modlog.diff" >&2
	res "$m" "--module-log: records equal to in-process hooks" \
		"$(grep -c '^step=' "$D/mod.log") records, $(grep -c '^[-+][^-+]' "$D/modlog.diff") lines differ" \
		"$(wc -l <"$D/hooks.log") records" $ok || true
}

# corpus_record MODEL REC WHAT: a record (or a flight dump) read back by
# report -i: the caching allocator's figures PyTorch's, and every export
# valid; memviz the _snapshot()'s segments, blocks and history
corpus_record() {
	local m=$1 rec=$2 what=$3 ok=0 keys dev ours want x
	keys=$D/$what.keys
	"$MT" report --keys -i "$rec" >"$keys" || ok=1
	dev="^# device pid=$PID dev=cuda:0 source=c10 "
	ours="$(mt_field "$keys" "$dev" allocated)/$(mt_field "$keys" "$dev" allocated_peak)/$(mt_field "$keys" "$dev" reserved)/$(mt_field "$keys" "$dev" reserved_peak) $(sed -nE 's/^# event c10:alloc count=([0-9]+) bytes=([0-9]+)$/\1 \2/p' "$keys")"
	want="$(ck_torch cuda:0 allocated)/$(ck_torch cuda:0 allocated_peak)/$(ck_torch cuda:0 reserved)/$(ck_torch cuda:0 reserved_peak) $(ck_torch cuda:0 allocs) $(ck_torch cuda:0 alloc_bytes)"
	[ "$ours" = "$want" ] || ok=1
	res "$m" "$what -> report -i: allocated/peak/reserved/peak allocs bytes" \
		"$ours" "$want" $ok || true
	# memviz against torch's own snapshot, in the root's CUDA torch
	ok=0
	x=$(export_of "$rec" memviz)
	corpus_stage
	cp "$x" "$ROOT_CUDA$STAGE/mt.pickle"
	cp "$D/torch.pickle" "$ROOT_CUDA$STAGE/torch.pickle"
	"$STANDIN" -- /usr/bin/python3 "$STAGE/memviz_compare.py" \
		"$STAGE/torch.pickle" "$STAGE/mt.pickle" >"$D/$what.memviz" 2>&1 || ok=1
	root_unstage
	cat "$D/$what.memviz" >&2
	res "$m" "$what --export memviz: segments/blocks/history vs _snapshot()" \
		"$(sed -nE 's/^cuda:0 (segments|active blocks|block history|segment history): torch [0-9]+, ours ([0-9]+)$/\2/p' "$D/$what.memviz" | paste -sd/)" \
		"$(sed -nE 's/^cuda:0 (segments|active blocks|block history|segment history): torch ([0-9]+), ours [0-9]+$/\2/p' "$D/$what.memviz" | paste -sd/)" $ok || true
	# the others, by their consumers and against the summary
	ok=0
	"$AJV" validate -s "$SCHEMA" -d "$(export_of "$rec" speedscope)" >&2 || ok=1
	perl "$FLAMEGRAPH" --countname bytes "$(export_of "$rec" folded)" >"$D/$what.fg.svg" || ok=1
	rsvg-convert "$(export_of "$rec" svg)" -o "$D/$what.png" || ok=1
	"$TORCH_PY" - "$(export_of "$rec" perfetto)" "$(export_of "$rec" json)" \
		"$(sed -nE 's/^# summary .* events=([0-9]+) .*/\1/p' "$keys")" \
		"$(ck_torch cuda:0 allocated_peak)" >&2 <<-'PY' || ok=1
		import json, sys
		from collections import defaultdict
		trace = json.load(open(sys.argv[1]))
		last, stacks, counters = {}, defaultdict(list), defaultdict(list)
		for e in trace["traceEvents"]:
		    if e["ph"] != "M":
		        track = (e["pid"], e["tid"])
		        assert e["ts"] >= last.get(track, 0), e
		        last[track] = e["ts"]
		    # the memory counters (those by kind have an arg a kind)
		    if e["ph"] == "C" and "bytes" in e["args"]:
		        counters[e["name"]].append(e["args"]["bytes"])
		    elif e["ph"] == "B":
		        stacks[e["tid"]].append(e)
		    elif e["ph"] == "E":
		        b = stacks[e["tid"]].pop()
		        assert (b["name"], b["cat"]) == (e["name"], e["cat"]), (b, e)
		assert not any(stacks.values())
		peaks = {k: max(v) for k, v in counters.items()}
		print("perfetto counters' highest:", peaks)
		assert int(sys.argv[4]) in peaks.values(), "no counter peaks at max_memory_allocated"
		lines = [json.loads(l) for l in open(sys.argv[2])]
		assert len(lines) == int(sys.argv[3]), (len(lines), sys.argv[3])
		print("json:", len(lines), "events")
	PY
	res "$m" "$what --export speedscope/folded/svg/perfetto/json valid" \
		"$( ((ok)) && echo invalid || echo valid)" valid $ok || true
}
