#!/usr/bin/env bash
# What memtrace-bpf adds to an allocator event on each torch Debian ships
# (issue 38): a loop of small CPU tensor operations (bench/versions_loop.py,
# timed in the process) under Debian's torch 1.13 on the host's python3,
# 2.6 on trixie's 3.13 and 2.14 on sid's 3.14 (the roots of
# scripts/debian-root.sh, run as in a chroot), bare, with `-q` and with
# `-q --no-python`; with BASE set, BASE's binary too, in turn. Each
# repetition runs every stack and mode once; µs an event = (µs an
# iteration - the same repetition's bare) / events an iteration (the
# tool's `# summary` over all the loop's iterations, the untimed too; the
# import's few hundred events count in it). Prints a Markdown table. Run as root, alone; about
# a minute a repetition.
#
# Environment: REPS (3), ITERS (50000), MT (./memtrace-bpf), BASE (none),
# MT_ROOTS (the roots' folder).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
MT=${MT:-$ROOT/memtrace-bpf}
BASE=${BASE:-}
REPS=${REPS:-3}
ITERS=${ITERS:-50000}
ROOTS=${MT_ROOTS:-/var/cache/memtrace-bpf/roots}
[ "$(id -u)" -eq 0 ] || {
	echo "versions: run as root (uprobes, chroot)" >&2
	exit 1
}
W=$(mktemp -d)
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$W"; rm -f "${STAGED[@]}"' EXIT
STAGED=()

# stacks: name, root (empty: the host), python
STACKS=("1.13/3.11||/usr/bin/python3")
for r in trixie sid; do
	d=$(find "$ROOTS" -maxdepth 1 -name "$r-*" -type d | head -1)
	[ -n "$d" ] || continue
	py=$([ "$r" = sid ] && echo python3.14 || echo python3)
	v=$(unshare -m sh -c "mount -t proc proc '$d/proc' && exec chroot '$d' $py -c 'import torch, platform; print(torch.__version__.split(\"+\")[0] + \"/\" + platform.python_version())'" 2>/dev/null | tail -1) || continue
	STACKS+=("$v|$d|$py")
	cp bench/versions_loop.py "$d/tmp/mt-versions-loop.py"
	STAGED+=("$d/tmp/mt-versions-loop.py")
done

# one STACK MODE: "us_per_iter events" of one run
one() {
	local root py tool=() out ev
	IFS='|' read -r _ root py <<<"$1"
	case $2 in
	q) tool=("$MT" -q --keys --) ;;
	n) tool=("$MT" -q --keys --no-python --) ;;
	bq) tool=("$BASE" -q --keys --) ;;
	bn) tool=("$BASE" -q --keys --no-python --) ;;
	esac
	if [ -z "$root" ]; then
		out=$("${tool[@]}" "$py" bench/versions_loop.py "$ITERS" 2>&1)
	else
		out=$("${tool[@]}" unshare -m sh -c \
			"mount -t proc proc '$root/proc' && exec chroot '$root' $py /tmp/mt-versions-loop.py $ITERS" 2>&1)
	fi
	ev=$(sed -n 's/^# summary .* events=\([0-9]*\) .*/\1/p' <<<"$out")
	echo "$(sed -n 's/^us_per_iter=//p' <<<"$out") ${ev:-0}"
}

MODES=(bare q n)
[ -z "$BASE" ] || MODES+=(bq bn)
for ((r = 1; r <= REPS; r++)); do
	for s in "${STACKS[@]}"; do
		for m in "${MODES[@]}"; do
			echo "$r|${s%%|*}|$m|$(one "$s" "$m")" >>"$W/runs"
		done
	done
	echo "versions: repetition $r of $REPS done" >&2
done
python3 - "$W/runs" "$ITERS" <<'EOF'
import statistics, sys
# the events of the 2,000 untimed iterations are in the count
runs, iters = {}, int(sys.argv[2]) + 2000
for line in open(sys.argv[1]):
    r, s, m, v = line.strip().split("|")
    us, ev = v.split()
    runs[(r, s, m)] = (float(us), int(ev))
names = {"q": "-q", "n": "-q --no-python", "bq": "BASE -q", "bn": "BASE -q --no-python"}
stacks = list(dict.fromkeys(s for _, s, _ in runs))
modes = [m for m in ("q", "n", "bq", "bn") if any(k[2] == m for k in runs)]
print("| torch/CPython | bare µs an iteration | events an iteration | " +
      " | ".join(f"{names[m]}: µs added an event" for m in modes) + " |")
print("|---" * (3 + len(modes)) + "|")
for s in stacks:
    reps = sorted({r for r, s2, _ in runs if s2 == s})
    bare = [runs[(r, s, "bare")][0] for r in reps]
    evs = [runs[(r, s, "q")][1] / iters for r in reps]
    cells = []
    for m in modes:
        per = [(runs[(r, s, m)][0] - runs[(r, s, "bare")][0]) /
               (runs[(r, s, m)][1] / iters) for r in reps]
        cells.append(f"{statistics.median(per):.2f} ({min(per):.2f} to {max(per):.2f})")
    print(f"| {s} | {statistics.median(bare):.2f} | {statistics.median(evs):.1f} | " +
          " | ".join(cells) + " |")
EOF
