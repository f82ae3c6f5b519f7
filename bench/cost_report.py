#!/usr/bin/python3
"""The section of bench/RESULTS.md that bench/cost.sh writes.

Usage: cost_report.py META RUNS COUNT_RUNS WORK

META: key=value lines (date, cores, pinning, load, tool, bpftrace, reps,
w2_args, secs).  RUNS: tab-separated mode, rep, loop_s, events, lost.  A mode's
overhead in a repetition is its loop time over that repetition's bare loop
time, less one; a ratio is taken per repetition, from its own overheads.
COUNT_RUNS: the rows of RUNS's form of the counting runs (rep "count"),
whose folders WORK/MODE-count hold the tracer's BPF programs before and
after the timed iterations (lib.bpf_runs).
"""

import os
import statistics
import sys

import lib

NAMES = {
    "empty": "bpftrace: empty action on New/Delete (`bench/anchor_empty.bt`)",
    "counter": "bpftrace: count New entry + return and Delete "
               "(`bench/anchor_count.bt`)",
    "memleak": "bpftrace: memleak-style, size at entry, pointer + native "
               "stack on return, delete on free (`bench/anchor_memleak.bt`)",
    "mtq": "memtrace-bpf -q",
    "mtn": "memtrace-bpf -q --no-python",
    "mts": "memtrace-bpf -q --sample-bytes 512K",
    "rec": "memtrace-bpf record -o FILE",
}
# (ours, anchor, goal): ours' overhead at most goal x the anchor's
GOALS = [
    ("mtq", "empty", 1.3),
    ("mtq", "counter", 0.8),
    ("mtq", "memleak", 0.6),
    ("mtn", "empty", 1.1),
    ("rec", "mtq", 1.05),
]


def account(put, loops, events, crows, work):
    """Where an event's added time goes, from the counting runs: the
    empty anchor's µs added an event is the trap"""
    reps = sorted(loops["bare"])
    ev = statistics.median(events["mtq"])

    def added(m):
        """µs added an event, median over the repetitions"""
        return statistics.median(1e6 * (loops[m][r] - loops["bare"][r]) / ev
                                 for r in reps if r in loops[m])

    trap = added("empty")
    put("")
    put("Where an event's time goes: one more run of each memtrace-bpf "
        "mode, untimed, with `kernel.bpf_stats_enabled` on, counts its BPF "
        "programs' runs and time over the timed iterations. A uprobe "
        "program's run is a trap (`mt_exit`'s, a return probe's; W2's "
        "probes, on New and Delete, are all on pushes, none single-"
        f"stepped). The trap is the empty anchor's µs added an event in "
        f"the timed repetitions, {trap:.2f} µs (its BPF program is empty); "
        "the rest is what the mode's added time (the same repetitions' "
        "median) leaves.")
    put("")
    put(lib.head("mode", "traps an event", "return probes an event",
                 "µs added an event", "traps × trap", "BPF", "the rest"))
    for row in crows:
        m = row["mode"]
        b = lib.bpf_runs(os.path.join(work, f"{m}-count"))
        n = int(row["events"])
        a = added(m)
        t = b["traps"] / n * trap
        bpf = b["bpf_ns"] / n / 1e3
        put(lib.row([NAMES[m], f"{b['traps'] / n:.2f}",
                     f"{b['rets'] / n:.2f}", f"{a:.2f}", f"{t:.2f}",
                     f"{bpf:.2f}", f"{a - t - bpf:.2f}"]))


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    meta = lib.read_meta(sys.argv[1])
    loops, events, lost = {}, {}, {}
    with open(sys.argv[2]) as f:
        next(f)
        for line in f:
            m, r, loop, ev, lo = line.rstrip("\n").split("\t")
            loops.setdefault(m, {})[int(r)] = float(loop)
            if ev != "NA":
                events.setdefault(m, []).append(int(ev))
                lost.setdefault(m, []).append(int(lo))
    reps = sorted(loops["bare"])
    over = {m: {r: v[r] / loops["bare"][r] - 1 for r in reps if r in v}
            for m, v in loops.items() if m != "bare"}

    out = []
    put = out.append
    put("## Cost against bpftrace anchors (W2)")
    put("")
    put(f"Measured {meta['date']} by `bench/cost.sh` ({meta['reps']} "
        f"repetitions, {lib.duration(int(meta['secs']))}; load average at "
        f"the end {meta['load']}, {meta['cores']} "
        f"cores; CPUs: {meta.get('pinning', 'not pinned')}); "
        f"{meta['tool']}; {meta['bpftrace']}. W2 = "
        f"`{meta['w2_args']}`. Every repetition runs each mode once, in an "
        "order rotated by one place a repetition. Overhead = loop s / the "
        "same repetition's bare loop s − 1; a ratio is taken in each "
        "repetition from its own overheads, and given as the median with "
        "its min–max over the repetitions. A goal is met when every "
        "repetition meets it, not met when none does, not resolved when the "
        "spread straddles it.")
    put("")
    put(lib.head("mode", "loop s, median (min–max)",
                 "overhead, median (min–max)", "events", "lost"))
    b = list(loops["bare"].values())
    put(f"| bare | {statistics.median(b):.3f} ({min(b):.3f}–{max(b):.3f}) "
        "| – | – | – |")
    for m in ("empty", "counter", "memleak", "mtq", "mtn", "mts", "rec"):
        if m not in loops:
            continue
        v = list(loops[m].values())
        o = list(over[m].values())
        ev = events.get(m)
        put(f"| {NAMES[m]} | {statistics.median(v):.3f} ({min(v):.3f}–"
            f"{max(v):.3f}) | {statistics.median(o) * 100:+.1f} % "
            f"({min(o) * 100:+.1f} to {max(o) * 100:+.1f}) | "
            f"{f'{min(ev):,}–{max(ev):,}' if ev else '–'} | "
            f"{max(lost[m]) if ev else '–'} |")
    put("")
    put(lib.head("goal",
                 "ratio of overheads, median (min–max over repetitions)",
                 "met?"))
    def ratios(ours, anchor):
        """each repetition's overhead of ours over anchor's, if positive"""
        if ours not in over or anchor not in over:
            return None
        return [over[ours][r] / over[anchor][r] for r in reps
                if r in over[ours] and r in over[anchor]
                and over[anchor][r] > 0]

    def spread(rs):
        return (f"×{statistics.median(rs):.2f} "
                f"({min(rs):.2f}–{max(rs):.2f})")

    for ours, anchor, goal in GOALS:
        rs = ratios(ours, anchor)
        if rs is None:
            continue
        if not rs:
            put(f"| {NAMES[ours]} ≤ {goal}× {NAMES[anchor]} | no repetition "
                "with a positive anchor overhead | not resolved |")
            continue
        if max(rs) <= goal:
            verdict = "met"
        elif min(rs) > goal:
            verdict = "not met"
        else:
            verdict = "not resolved (the spread straddles the goal)"
        put(f"| {NAMES[ours]}: overhead ≤ {goal}× that of "
            f"{NAMES[anchor]} | {spread(rs)} | {verdict} |")
    # the production mode is no goal of its own (the goals ask full
    # attribution): its overhead against -q's and the anchors', for scale
    rows = [(a, ratios("mts", a)) for a in ("mtq", "empty", "counter",
                                             "memleak")]
    rows = [(a, rs) for a, rs in rows if rs]
    if rows:
        put("")
        put(f"{NAMES['mts']}, the production mode (stacks for a sample of "
            "the allocations: no goal of its own, the goals ask full "
            "attribution); its errors against full attribution: "
            "`bench/sample_error.sh`.")
        put("")
        put(lib.head("its overhead against that of",
                     "ratio, median (min–max)"))
        for a, rs in rows:
            put(f"| {NAMES[a]} | {spread(rs)} |")
    account(put, loops, events, lib.read_tsv(sys.argv[3]), sys.argv[4])
    lost_any = sum(sum(v) for v in lost.values())
    put("")
    put(f"Events lost by memtrace-bpf over all its runs: {lost_any}.")
    print("\n".join(out))


if __name__ == "__main__":
    main()
