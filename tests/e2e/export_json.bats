#!/usr/bin/env bats
# The JSON exports: json lines against the event lines of the same events,
# perfetto's counters against the summary, speedscope against speedscope's
# own schema (ajv) and the summary's bytes. Real PyTorch on the CPU
# (Debian's python3 and torch), real libc10 block reports (c10_report),
# the stand-in libcudart; live with --export and from a record.

load helpers

MODEL_PY=$ROOT/tests/fixtures/incident_model.py

# one record of the model for the tests that read it back
setup_file() {
	"$MT" record -o "$BATS_FILE_TMPDIR/t.mtb" -- "$TORCH_PY" "$MODEL_PY" \
		--steps 3 >/dev/null 2>"$BATS_FILE_TMPDIR/rec.err"
	"$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" >"$BATS_FILE_TMPDIR/report.out"
}

# same_events TEXT JSONL MIN: every event line of TEXT (with its stack) has
# its JSON line, in order, with the same keys and values; MIN lines at least
same_events() {
	"$TORCH_PY" - "$1" "$2" "$3" <<'EOF'
import json, re, sys

LINE = re.compile(r'^(\S+) (\d+)/(\d+) \[(\d+)\] (\d+\.\d{6}): (\S+):(.*)$')
text = []
for raw in open(sys.argv[1]):
    raw = raw.rstrip('\n')
    if raw.startswith('\t['):
        text[-1]['truncated'] = 'True'
    elif raw.startswith('\t'):
        text[-1]['stack'].append(raw[1:])
    elif not raw.startswith('#') and LINE.match(raw):
        comm, pid, tid, cpu, ts, event, rest = LINE.match(raw).groups()
        ev = dict(comm=comm, pid=pid, tid=tid, cpu=str(int(cpu)), ts=ts,
                  event=event, stack=[])
        ev.update(kv.split('=', 1) for kv in rest.split())
        text.append(ev)
objs = [json.loads(line) for line in open(sys.argv[2])]
print(f'{len(text)} event lines, {len(objs)} json lines')
assert len(text) == len(objs) >= int(sys.argv[3]), (len(text), len(objs))
for t, o in zip(text, objs):
    for k, v in t.items():
        got = o[k]
        if k == 'ts':
            got = f'{got:.6f}'
        elif k == 'comm':
            got = got.replace(' ', '_')
        elif k == 'size' and v == '?':
            # not known: null, never a string
            assert got is None, o
            got = v
        elif k != 'stack':
            got = str(got)
        assert got == v, (k, v, o)
    assert set(o) - set(t) <= {'ts_ns', 'recompute'}, (o, t)
    assert o['ts_ns'] // 1000 == round(o['ts'] * 1e6), o
EOF
}

@test "json, live: a line per event with the keys and values of its event line" {
	# -p, not --: the model's own output stays out of the trace
	HELD=1 fixture fx "$TORCH_PY" "$MODEL_PY" --steps 2
	trace 1 --keys -p "$fx_PID" --export json -o "$BATS_TEST_TMPDIR/t.jsonl"
	release fx
	settle fx '^spike '
	finish
	[ "$MT_STATUS" -eq 0 ]
	cp "$TRACE" "$BATS_TEST_TMPDIR/live.out"
	events=$(sed -nE 's/^# summary .* events=([0-9]+) .*/\1/p' "$BATS_TEST_TMPDIR/live.out")
	[ "$(wc -l <"$BATS_TEST_TMPDIR/t.jsonl")" -eq "$events" ]
	same_events "$BATS_TEST_TMPDIR/live.out" "$BATS_TEST_TMPDIR/t.jsonl" 100
	grep -q '"stack":\["Spike.forward (' "$BATS_TEST_TMPDIR/t.jsonl"
}

@test "json from a record: what script prints, one object a line" {
	"$MT" script -i "$BATS_FILE_TMPDIR/t.mtb" >"$BATS_TEST_TMPDIR/script.out"
	run "$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" --export json \
		-o "$BATS_TEST_TMPDIR/t.jsonl"
	[ "$status" -eq 0 ]
	same_events "$BATS_TEST_TMPDIR/script.out" "$BATS_TEST_TMPDIR/t.jsonl" 100
	# the report itself is still printed
	grep -q '^# summary ' <<<"$output"
}

@test "json, stand-in libcudart: failures, streams, no stack" {
	LD_LIBRARY_PATH=$FIX/fake FAKE_CUDART_FAIL_SIZE=1000000 \
		fixture fx "$FIX/cudart_calls" setdevice 0 malloc 4096 \
		mallocasync 524288 0x5a5a freeasync 1 0x5a5a malloc 5000000
	trace 1 --keys -p "$fx_PID" --export json -o "$BATS_TEST_TMPDIR/t.jsonl"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	same_events "$TRACE" "$BATS_TEST_TMPDIR/t.jsonl" 4
	grep -q '"event":"cudart:cudaMalloc","size":5000000,"dev":"cuda:0","ret":2,"err":"cudaErrorMemoryAllocation","caller":"cudart_calls","stack":\[\]}$' "$BATS_TEST_TMPDIR/t.jsonl"
	grep -q '"event":"cudart:cudaFreeAsync","ptr":"0x[0-9a-f]*","size":524288,"dev":"cuda:0","ret":0,"stream":"0x5a5a",' "$BATS_TEST_TMPDIR/t.jsonl"
}

@test "json: the size of a free of memory allocated before the attach is null" {
	LD_LIBRARY_PATH=$FIX/fake fixture fx "$FIX/cudart_calls" \
		malloc 777 sleep 5000 free 0
	# let the first malloc happen before attaching (the tracer has 5 s to
	# attach before the free: its start, the BPF verifier's work above
	# all, took more than 1.5 s on a loaded 2-core CI)
	release fx
	wait_for "$BATS_TEST_TMPDIR/fx.out" '^op=malloc '
	trace 1 --keys -p "$fx_PID" --export json -o "$BATS_TEST_TMPDIR/t.jsonl"
	finish
	[ "$MT_STATUS" -eq 0 ]
	events cudart:cudaFree | grep -q " size=? "
	grep -q '"event":"cudart:cudaFree","ptr":"0x[0-9a-f]*","size":null,' "$BATS_TEST_TMPDIR/t.jsonl"
	# no value is a string of a number or a "?"
	[ -z "$(grep -E '":"\?"|"(size|ret|pid|tid|cpu)":"' "$BATS_TEST_TMPDIR/t.jsonl")" ]
	same_events "$TRACE" "$BATS_TEST_TMPDIR/t.jsonl" 1
}

# check_perfetto FILE SUMMARY: the trace loads; its counters end and peak
# where the summary's accounts do; slices pair up and nest per thread
check_perfetto() {
	"$TORCH_PY" - "$1" "$2" <<'EOF'
import json, re, sys
from collections import defaultdict

trace = json.load(open(sys.argv[1]))
ev = trace['traceEvents']
series = defaultdict(list)
for e in ev:
    if e['ph'] == 'C' and 'bytes' in e['args']:
        series[(e['pid'], e['name'])].append((e['ts'], e['args']['bytes']))
checked = 0
for line in open(sys.argv[2]):
    m = re.match(r'# device pid=(\d+) dev=(\S+) source=(\S+) (.*)', line)
    if not m:
        continue
    pid, dev, source, rest = m.groups()
    kv = dict(x.split('=') for x in rest.split())
    if source == 'c10':
        want = {'allocated': (kv['allocated'], kv['allocated_peak']),
                'reserved': (kv['reserved'], kv['reserved_peak'])}
    else:
        what = {'cpu': 'allocated', 'pinned': 'page-locked (pinned)'}.get(
            source, f'reserved ({source})')
        want = {what: (kv['current'], kv['peak'])}
    for what, (cur, peak) in want.items():
        s = series[(int(pid), f'{dev} {what}')]
        vals = [v for _, v in s]
        print(f'{pid} {dev} {what}: {len(vals)} values, last {vals[-1]} '
              f'(summary {cur}), max {max(vals)} (summary {peak})')
        assert vals[-1] == int(cur) and max(vals) == int(peak)
        assert [t for t, _ in s] == sorted(t for t, _ in s)
        checked += 1
assert checked, 'no account of the summary found'
stacks = defaultdict(list)
for e in ev:
    key = (e['pid'], e['tid'])
    if e['ph'] == 'B':
        # a module runs inside a phase, never the other way round
        assert not stacks[key] or e['cat'] == 'module', e
        stacks[key].append(e)
    elif e['ph'] == 'E':
        b = stacks[key].pop()
        assert (b['name'], b['cat']) == (e['name'], e['cat']) and \
            b['ts'] <= e['ts'], (b, e)
assert not any(stacks.values()), stacks
names = {(e['name'], e['pid'], e['tid']) for e in ev if e['ph'] == 'M'}
assert {n for n, _, _ in names} >= {'process_name', 'thread_name'}, names
EOF
}

@test "perfetto from a record: counters match the summary, phases and modules as slices" {
	run "$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" --export perfetto \
		-o "$BATS_TEST_TMPDIR/t.json"
	[ "$status" -eq 0 ]
	check_perfetto "$BATS_TEST_TMPDIR/t.json" "$BATS_FILE_TMPDIR/report.out"
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/t.json" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
slices = {(e['cat'], e['name']) for e in ev if e['ph'] == 'B'}
print(sorted(slices))
assert {('phase', p) for p in ('forward', 'backward', 'optimizer')} <= slices
assert ('module', 'spike') in slices
EOF
	# a counter of the CPU tensors by kind, all seven kinds at each value,
	# adding up to the CPU's allocated counter at that moment; the model's
	# parameters, Adam's state and a forward's activations among them
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/t.json" <<'EOF'
import bisect, json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
kinds = ['parameters', 'inputs', 'activations', 'gradients',
         'optimizer_state', 'temporaries', 'unknown']
alloc = [(e['ts'], e['args']['bytes']) for e in ev
         if e['ph'] == 'C' and e['name'] == 'cpu allocated']
by = [e for e in ev if e['ph'] == 'C' and e['name'] == 'cpu by kind']
print(f'{len(by)} by kind, {len(alloc)} allocated; last {by[-1]["args"]}')
assert by and alloc
ts = [t for t, _ in alloc]
most = dict.fromkeys(kinds, 0)
for e in by:
    assert list(e['args']) == kinds, e
    i = bisect.bisect_right(ts, e['ts']) - 1
    assert i >= 0 and sum(e['args'].values()) == alloc[i][1], (e, alloc[i])
    for k in kinds:
        most[k] = max(most[k], e['args'][k])
print(most)
assert all(most[k] > 0 for k in ('parameters', 'activations', 'gradients',
                                 'optimizer_state'))
assert most['temporaries'] == 0
EOF
}

@test "perfetto, live: c10's allocated and reserved per CUDA device, OOM as an instant" {
	fixture fx "$FIX/c10_report"
	trace 1 --keys -p "$fx_PID" --export perfetto -o "$BATS_TEST_TMPDIR/t.json"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	check_perfetto "$BATS_TEST_TMPDIR/t.json" "$TRACE"
	size=$(sed -nE 's/.*: c10:oom: size=([0-9]+) .*/\1/p' "$TRACE")
	[ -n "$size" ]
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/t.json" "$size" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
ooms = [e for e in ev if e['ph'] == 'i']
print(ooms)
assert len(ooms) == 1 and ooms[0]['name'] == 'OOM c10:oom'
assert ooms[0]['args']['size'] == int(sys.argv[2])
# the caching allocator's blocks by kind too: no Python, no phase, so
# all unknown
assert {e['name'] for e in ev if e['ph'] == 'C'} == {
    f'cuda:{d} {w}' for d in (0, 1)
    for w in ('allocated', 'reserved', 'by kind')}
assert all(sum(e['args'].values()) == e['args']['unknown']
           for e in ev if e['name'].endswith(' by kind'))
EOF
}

@test "perfetto, stand-in libcudart: the runtime's live bytes per device, a failure as an instant" {
	LD_LIBRARY_PATH=$FIX/fake FAKE_CUDART_FAIL_SIZE=1000000 \
		fixture fx "$FIX/cudart_calls" setdevice 0 malloc 4096 \
		host 8192 malloc 65536 free 0 setdevice 1 malloc 4608 \
		malloc 5000000
	trace 1 --keys -p "$fx_PID" --export perfetto -o "$BATS_TEST_TMPDIR/t.json"
	release fx
	finish
	[ "$MT_STATUS" -eq 0 ]
	check_perfetto "$BATS_TEST_TMPDIR/t.json" "$TRACE"
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/t.json" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))['traceEvents']
names = {e['name'] for e in ev if e['ph'] == 'C'}
print(names)
assert names == {'cuda:0 reserved (cudart)', 'cuda:1 reserved (cudart)',
                 'host page-locked (pinned)'}
ooms = [e for e in ev if e['ph'] == 'i']
print(ooms)
assert len(ooms) == 1 and ooms[0]['name'] == 'OOM cudart:cudaMalloc'
assert ooms[0]['args'] == {'size': 5000000, 'dev': 'cuda:1',
                           'err': 'cudaErrorMemoryAllocation'}
EOF
}

# speedscope FILE: its weights per profile, "name<TAB>total" lines
weights() {
	"$TORCH_PY" - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d['profiles']:
    assert len(p['samples']) == len(p['weights'])
    assert sum(p['weights']) == p['endValue'] and p['startValue'] == 0
    print(f"{p['name']}\t{sum(p['weights'])}")
EOF
}

@test "speedscope from a record: valid by speedscope's schema, weights sum to the bytes allocated" {
	run "$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" --export speedscope \
		-o "$BATS_TEST_TMPDIR/ss.json"
	[ "$status" -eq 0 ]
	"$AJV" validate -s "$SCHEMA" -d "$BATS_TEST_TMPDIR/ss.json"
	w=$(weights "$BATS_TEST_TMPDIR/ss.json")
	echo "$w"
	[ "$(wc -l <<<"$w")" -eq 1 ]
	bytes=$(sed -nE 's/^# event c10:cpu_alloc count=[0-9]+ bytes=([0-9]+)$/\1/p' "$BATS_FILE_TMPDIR/report.out")
	[ "$(cut -f2 <<<"$w")" -eq "$bytes" ]
	[[ "$w" == "pid "*" cpu: bytes allocated	"* ]]
	# frames by name, file and line, outermost first
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/ss.json" "$MODEL_PY" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
frames = d['shared']['frames']
spike = {i for i, f in enumerate(frames)
         if f['name'] == 'Spike.forward' and f.get('file') == sys.argv[2]
         and f.get('line', 0) > 0}
assert spike, frames
p = d['profiles'][0]
hits = [s for s in p['samples'] if spike & set(s)]
assert hits and all(frames[s[0]]['name'] == '<module>' for s in hits)
assert all(frames[s[-1]]['name'] == 'c10:cpu_alloc' for s in p['samples'])
EOF
}

@test "speedscope --at peak: weights sum to the peak, the spike the heaviest" {
	run "$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" --export speedscope \
		--at peak --folded-prefix -o "$BATS_TEST_TMPDIR/ss.json"
	[ "$status" -eq 0 ]
	"$AJV" validate -s "$SCHEMA" -d "$BATS_TEST_TMPDIR/ss.json"
	w=$(weights "$BATS_TEST_TMPDIR/ss.json")
	echo "$w"
	peak=$(sed -nE 's/^# device pid=[0-9]+ dev=cpu source=cpu current=[0-9]+ peak=([0-9]+)$/\1/p' "$BATS_FILE_TMPDIR/report.out")
	[ "$(cut -f2 <<<"$w")" -eq "$peak" ]
	# the peak view of the report: the same bytes
	grep -qE "^# peak pid=[0-9]+ cpu allocated: .* bytes=$peak " "$BATS_FILE_TMPDIR/report.out"
	"$TORCH_PY" - "$BATS_TEST_TMPDIR/ss.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
frames, p = d['shared']['frames'], d['profiles'][0]
top = max(zip(p['weights'], p['samples']))[1]
names = [frames[i]['name'] for i in top]
print(names)
assert names[:2] == ['phase=forward', 'module=spike'], names
assert 'Spike.forward' in names
EOF
}

@test "speedscope, live: one profile per CUDA device, at the peak too" {
	for at in "" peak; do
		fixture fx "$FIX/c10_report"
		trace 1 --keys -p "$fx_PID" --export speedscope ${at:+--at $at} \
			-o "$BATS_TEST_TMPDIR/ss.json"
		release fx
		finish
		[ "$MT_STATUS" -eq 0 ]
		"$AJV" validate -s "$SCHEMA" -d "$BATS_TEST_TMPDIR/ss.json"
		w=$(weights "$BATS_TEST_TMPDIR/ss.json")
		echo "$w"
		[ "$(wc -l <<<"$w")" -eq 2 ]
		grep -q "^pid $fx_PID cuda:0 c10: " <<<"$w"
		grep -q "^pid $fx_PID cuda:1 c10: " <<<"$w"
		total=$(cut -f2 <<<"$w" | paste -sd+ | bc)
		if [ -z "$at" ]; then
			bytes=$(sed -nE 's/^# event c10:alloc count=[0-9]+ bytes=([0-9]+)$/\1/p' "$TRACE")
			[ "$total" -eq "$bytes" ]
		else
			# what the peak view of each device says
			peaks=$(sed -nE "s/^# peak pid=$fx_PID cuda:[01] c10 allocated: .* bytes=([0-9]+) .*/\1/p" "$TRACE")
			[ "$(wc -l <<<"$peaks")" -eq 2 ]
			[ "$total" -eq "$(paste -sd+ <<<"$peaks" | bc)" ]
		fi
	done
}

@test "an export that cannot be written is an error, exit 2" {
	run "$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" --export json \
		-o /nonexistent/t.jsonl
	[ "$status" -eq 2 ]
	[[ "$output" == *"cannot write /nonexistent/t.jsonl"* ]]
	run "$MT" report --keys -i "$BATS_FILE_TMPDIR/t.mtb" --export perfetto -o /dev/full
	[ "$status" -eq 2 ]
	[[ "$output" == *"export"*"No space left on device"* ]]
}
