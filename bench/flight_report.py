#!/usr/bin/python3
"""The sections of bench/RESULTS.md that bench/flight.sh and
bench/flight_rss.sh write.

Usage: flight_report.py overhead META RUNS
       flight_report.py rss META RSS

META: key=value lines.  overhead: RUNS is tab-separated workload, mode,
rep, loop_s, events, lost, tool_cpu_s, tool_hwm_kb, load1; a mode's overhead
in a repetition is its loop time over that repetition's bare loop time
(same workload), less one; the ratio flight / -q is taken per repetition
from its own overheads.  rss: RSS is tab-separated rate, t_s, rss_kb,
hwm_kb (the tracer's VmRSS and VmHWM every few seconds).
"""

import re
import statistics
import sys

import lib

NAMES = {
    "mtq": "`memtrace-bpf -q` (every event's Python stack)",
    "fl": "`memtrace-bpf record --flight 10m -o DIR` (stacks sampled "
          "by bytes, 512 KiB)",
    "fls": "`memtrace-bpf record --flight 1s -o DIR` (the same, its "
           "window full)",
}


def pct(v):
    return f"{v * 100:+.1f} %"


def overhead(meta, runs_path):
    rows = {}
    with open(runs_path) as f:
        next(f)
        for line in f:
            w, m, r, loop, ev, lo, cpu, hwm, load = \
                line.rstrip("\n").split("\t")
            rows[(w, m, int(r))] = dict(
                loop=float(loop), events=None if ev == "NA" else int(ev),
                lost=None if lo == "NA" else int(lo),
                cpu=None if cpu == "NA" else float(cpu),
                hwm=None if hwm == "NA" else int(hwm), load=float(load))
    out = []
    put = out.append
    secs = int(meta["secs"])
    put("## Flight recorder: overhead on W1 and W2")
    put("")
    put(f"Measured {meta['date']} by `bench/flight.sh` ({meta['reps']} "
        f"repetitions, {lib.duration(secs)} in all; load "
        f"average {meta['load_start']} at the start, {meta['load_end']} at "
        "the end: other engineers' builds and tests ran on the same "
        f"2 cores meanwhile) on {meta['cpu']}, {meta['cores']} cores, "
        f"kernel {meta['kernel']}; CPUs: {meta['pinning']}; "
        f"{meta['tool']}. W1 = `{meta['w1_args']}`, W2 = "
        f"`{meta['w2_args']}` (`bench/workload_train.py`, as in the "
        "sections above: the handshake of `bench/cost.sh`, attach "
        "confirmed and int3 read at both allocator functions before the "
        "go, the tracer stopped while the workload holds after its "
        "loop). Each repetition runs every mode of W1, then of W2, in an "
        "order rotated by one place a repetition. Overhead = loop s / the "
        "same repetition's bare loop s − 1; the ratio flight / -q is "
        "taken in each repetition from its own overheads; both are given "
        "as the median with the min–max over the repetitions. Tracer CPU "
        "s: its user + system time from attach to the end of the loop; "
        "peak RSS: its VmHWM then.")
    put("")
    put(lib.head("workload", "mode", "loop s, median (min–max)",
                 "overhead, median (min–max)",
                 "flight / -q overhead, median (min–max)", "events", "lost",
                 "tracer CPU s, median", "tracer peak RSS, MiB, median"))
    summary = {}
    for w in ("W1", "W2"):
        reps = sorted(r for (ww, m, r) in rows if ww == w and m == "bare")
        bare = [rows[(w, "bare", r)]["loop"] for r in reps]
        put(f"| {w} | bare | "
            f"{lib.med_range(bare, lambda v: f'{v:.3f}', sep='–')} "
            "| – | – | – | – | – | – |")
        over = {}
        for m in ("mtq", "fl", "fls"):
            rs = [r for r in reps if (w, m, r) in rows]
            if not rs:
                continue
            over[m] = {r: rows[(w, m, r)]["loop"] /
                       rows[(w, "bare", r)]["loop"] - 1 for r in rs}
        for m in ("mtq", "fl", "fls"):
            if m not in over:
                continue
            rs = sorted(over[m])
            loops = [rows[(w, m, r)]["loop"] for r in rs]
            o = [over[m][r] for r in rs]
            ratio = "–"
            if m != "mtq" and "mtq" in over:
                q = [over[m][r] / over["mtq"][r] for r in rs
                     if r in over["mtq"] and over["mtq"][r] > 0]
                if q:
                    ratio = lib.med_range(q, lambda v: f"×{v:.2f}")
                    summary[(w, m)] = (q, statistics.median(o),
                                       statistics.median(
                                           over["mtq"].values()))
                else:
                    ratio = "no repetition with a positive -q overhead"
            ev = [rows[(w, m, r)]["events"] for r in rs
                  if rows[(w, m, r)]["events"] is not None]
            lo = [rows[(w, m, r)]["lost"] for r in rs
                  if rows[(w, m, r)]["lost"] is not None]
            cpu = [rows[(w, m, r)]["cpu"] for r in rs
                   if rows[(w, m, r)]["cpu"] is not None]
            hwm = [rows[(w, m, r)]["hwm"] for r in rs
                   if rows[(w, m, r)]["hwm"] is not None]
            put(f"| {w} | {NAMES[m]} | "
                f"{lib.med_range(loops, lambda v: f'{v:.3f}', sep='–')} "
                f"| {lib.med_range(o, pct)} | {ratio} | "
                f"{f'{min(ev):,}–{max(ev):,}' if ev else '– (a 1 s window)'}"
                f" | {max(lo) if lo else '–'} | "
                f"{statistics.median(cpu):.2f} | "
                f"{statistics.median(hwm) / 1024:.1f} |")
    put("")
    put("Load average (1 min) at the start of each run, min–max: " +
        ", ".join(
            f"{w} {min(v['load'] for (ww, _, _), v in rows.items() if ww == w):.2f}"
            f"–{max(v['load'] for (ww, _, _), v in rows.items() if ww == w):.2f}"
            for w in ("W1", "W2")) + ".")
    put("")
    for (w, m), (q, om, qm) in sorted(summary.items()):
        put(f"- {w}, {NAMES[m]}: {pct(om)} against -q's {pct(qm)} "
            f"(medians{f'; their ratio ×{om / qm:.2f}' if qm > 0 else ''})"
            f"; a repetition's own "
            f"ratio: median ×{statistics.median(q):.2f}, ×{min(q):.2f} to "
            f"×{max(q):.2f} over the {len(q)} with a positive -q "
            "overhead.")
    put("")
    put(f"Command (as root, in the tree): `bench/flight.sh` "
        f"(REPS={meta['reps']}, W1_ITERS={meta['w1_args'].split()[-1]}, "
        f"W2_ITERS={meta['w2_args'].split()[-1]}).")
    print("\n".join(out))


WIN_RE = re.compile(
    r"(?P<n>\d+) events from (?P<a>[0-9.]+) to (?P<b>[0-9.]+) s .*?"
    r"and (?P<p>\d+) allocations older than it")


def lsq_slope(ts, vs):
    """least squares, units of v per unit of t"""
    if len(ts) < 2:
        return 0.0
    mt, mv = statistics.fmean(ts), statistics.fmean(vs)
    den = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (v - mv) for t, v in zip(ts, vs)) / den if den \
        else 0.0


def rss(meta, rss_path):
    samples = {}
    with open(rss_path) as f:
        next(f)
        for line in f:
            r, t, kb, hwm, lost = line.rstrip("\n").split("\t")
            samples.setdefault(r, []).append((float(t), int(kb), int(hwm),
                                              int(lost)))
    win_s = int(meta["window_s"])
    dur = int(meta["duration"])
    secs = int(meta["secs"])
    out = []
    put = out.append
    put("## Flight recorder: the tracer's memory over 10 minutes")
    put("")
    put(f"Measured {meta['date']} by `bench/flight_rss.sh` "
        f"({lib.duration(secs)} in all; load average {meta['load_start']} at "
        f"the start, {meta['load_end']} at the end: other engineers' builds "
        f"and tests ran on the same 2 cores meanwhile) on {meta['cpu']}, "
        f"{meta['cores']} cores, kernel {meta['kernel']}; CPUs: "
        f"{meta['pinning']}; {meta['tool']}.")
    put("")
    put(f"The fixture: `bench/flight_churn.py` (Debian's python3 and torch "
        "1.13, one thread): a loop of `torch.empty()` of 4 to 64 floats, "
        "each freed at once (a quarter of them one iteration later), two "
        "allocator events an iteration, beside 4 tensors of 1 MiB alive "
        f"all along; traced for {dur} s by `memtrace-bpf record --flight "
        f"{win_s}s -o DIR -p PID` (stacks sampled by bytes, 512 KiB), its "
        f"VmRSS and VmHWM read from `/proc/PID/status` every "
        f"{meta['every']} s from the go. Then a SIGUSR1 dump says what the "
        "window holds (its `# record window:` line), and SIGINT. Events/s: "
        "the fixture's own count (allocations since the go × 2 / its "
        "seconds) and the dump's (events in the window / their span). "
        f"'After the window filled': the samples from {2 * win_s} s on "
        "(twice the window). A rise of VmRSS between two samples there is "
        "put to a stall when events were lost from the interval before it "
        "to the one after (the '# LOST' line comes a little after the "
        "stall; the tracer fell behind the BPF ring buffer: the events "
        "then waiting to be put in time order, `lib/reorder.c`, grow its "
        "buffer to a new high-water mark, 2^18 events at most, about "
        "38 MiB, which it keeps); other growth an hour: VmRSS's change "
        "from the first sample after the window filled to the last, less "
        "the stalls' steps, an hour's worth; flat: that growth "
        "and the spread less the stalls' steps within 1 % or 3 of the "
        "window's blocks (7.9 MiB), by which its memory comes and goes.")
    put("")
    put(lib.head("rate asked", "events/s (fixture)",
                 "the window at the end (dump)", "VmRSS first",
                 "at the window's end", "last", "max", "VmHWM (peak)",
                 "after the window filled: min–max",
                 "steps at a stall (events lost)",
                 "other growth after it, an hour", "flat?"))
    rates = meta["rates"].split()
    verdicts = []
    for r in rates:
        s = samples.get(r)
        if not s:
            continue
        mib = lambda kb: f"{kb / 1024:.1f} MiB"  # noqa: E731
        first = s[0][1]
        at_win = next((kb for t, kb, _, _ in s if t >= win_s), s[-1][1])
        last = s[-1][1]
        mx = max(kb for _, kb, _, _ in s)
        hwm = max(int(meta.get(f"rate{r}_hwm_kb", 0)),
                  max(h for _, _, h, _ in s))
        i0 = next((i for i, x in enumerate(s) if x[0] >= 2 * win_s), None)
        if i0 is not None and len(s) - i0 >= 2:
            after = s[i0:]
            amin = min(x[1] for x in after)
            amax = max(x[1] for x in after)
            stalls = []
            for i in range(i0 + 1, len(s)):
                d = s[i][1] - s[i - 1][1]
                # the '# LOST' line comes after the stall it counts
                lo = s[min(i + 1, len(s) - 1)][3] - s[max(i - 2, 0)][3]
                if d > 0 and lo > 0:
                    stalls.append((s[i][0], d, lo))
            span = after[-1][0] - after[0][0]
            other = after[-1][1] - after[0][1] - sum(d for _, d, _ in stalls)
            hourly = other / span * 3600 / 1024 if span > 0 else 0.0
            spread = amax - amin - sum(d for _, d, _ in stalls)
            # the ring's blocks come and go by 2.6 MiB: 3 of them, or 1 %
            tol = max(8064, 0.01 * amax)
            flat = other <= tol and spread <= tol
            verdict = (("flat" if flat else "not flat") +
                       (" but for the stalls' steps" if flat and stalls
                        else "") +
                       f" (spread less the steps {max(spread, 0) / 1024:.1f}"
                       f" MiB)")
            plateau = f"{mib(amin)}–{mib(amax)}"
            steps = ", ".join(f"+{d / 1024:.1f} MiB by {t:.0f} s "
                              f"({lo:,})" for t, d, lo in stalls) or "none"
            growth = f"{hourly:+.1f} MiB"
            verdicts.append((r, flat, amin, amax, hourly))
        else:
            plateau = growth = steps = "–"
            verdict = f"not resolved (a run under {2 * win_s} s)"
        fx = meta.get(f"rate{r}_fixture", "")
        m = re.search(r"t_s=([0-9.]+) allocs=(\d+)", fx)
        eps = f"{2 * int(m.group(2)) / float(m.group(1)):,.0f}" if m else "–"
        w = meta.get(f"rate{r}_window", "")
        wm = WIN_RE.search(w)
        if wm:
            n, a, b = int(wm.group("n")), float(wm.group("a")), \
                float(wm.group("b"))
            cut = "memory cap cut it" in w
            win = (f"{n:,} events over {b - a:.1f} s ({n / (b - a):,.0f}/s)"
                   f"{', cut by the 1 GiB memory cap' if cut else ''}; "
                   f"{int(wm.group('p')):,} older allocations kept")
        else:
            win = "–"
        put(f"| {'as fast as it can' if r == '0' else f'{int(r):,}/s'} | "
            f"{eps} | {win} | {mib(first)} | {mib(at_win)} | {mib(last)} | "
            f"{mib(mx)} | {mib(hwm)} | {plateau} | {steps} | {growth} | "
            f"{verdict} |")
    put("")
    put("What the memory is: the window's events (`user/record/flight.c`: "
        "each as the BPF ring buffer gave it, 144 bytes, with its site and "
        "allocation key, 168 bytes an event) are kept in blocks of 16,384 "
        "(2.6 MiB), mapped as the window fills and unmapped as their events "
        "leave it, up to the memory cap of a time window (1 GiB: 6,391,320 "
        "events); the live table and the allocations older than the window "
        "(4 here) take a few kB. So the tracer's VmRSS is its start plus "
        "about 168 bytes × the events the window holds now: it rises while "
        "the window fills, then holds.")
    put("")
    # the series, a column a rate, a row a minute
    put("VmRSS, MiB, a minute apart, and the events lost so far (the "
        "tracer's `# LOST` lines):")
    put("")
    put(lib.head("s", *("as fast as it can" if r == "0" else
                        f"{int(r):,}/s" for r in rates)))
    for minute in range(0, dur // 60 + 1):
        t0 = minute * 60
        cells = []
        for r in rates:
            s = samples.get(r, [])
            near = min(s, key=lambda x: abs(x[0] - t0)) if s else None
            cells.append(f"{near[1] / 1024:.1f} ({near[3]:,} lost)"
                         if near and abs(near[0] - t0) <= float(meta["every"])
                         else "–")
        put(lib.row([str(t0)] + cells))
    put("")
    for r in rates:
        cpu = meta.get(f"rate{r}_tool_cpu_s")
        summ = meta.get(f"rate{r}_summary", "")
        lost = re.search(r"lost=(\d+)", summ)
        fx = re.search(r"allocs=(\d+)", meta.get(f"rate{r}_fixture", ""))
        made = 2 * int(fx.group(1)) if fx else 0
        if cpu:
            share = (f" ({int(lost.group(1)) / made * 100:.2f} % of the "
                     f"{made:,} the fixture made)" if lost and made else "")
            sm = samples.get(r, [])
            fill = next((x[3] for x in sm if x[0] >= win_s), None)
            when = (f": {fill:,} by {win_s} s (while the window filled), "
                    f"{sm[-1][3] - fill:,} after it, to {dur} s"
                    if sm and fill is not None else "")
            put(f"- {'as fast as it can' if r == '0' else f'{int(r):,}/s'}: "
                f"the tracer's CPU {cpu} s over the {dur} s "
                f"({float(cpu) / dur * 100:.0f} % of a core); events lost "
                f"over the run (the tracer's count, in the dump's summary): "
                f"{f'{int(lost.group(1)):,}' if lost else '–'}{share}"
                f"{when}; the "
                f"SIGUSR1 dump "
                f"{int(meta.get(f'rate{r}_dump_bytes', 0)):,} bytes, VmHWM "
                f"after it "
                f"{int(meta.get(f'rate{r}_hwm_dump_kb', 0)) / 1024:.1f} MiB.")
    put("")
    put(f"Command (as root, in the tree): `bench/flight_rss.sh` "
        f"(DURATION={dur}, EVERY={meta['every']}, WINDOW_S={win_s}, "
        f"RATES=\"{meta['rates']}\").")
    print("\n".join(out))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("overhead", "rss"):
        raise SystemExit(__doc__)
    meta = lib.read_meta(sys.argv[2])
    if sys.argv[1] == "overhead":
        overhead(meta, sys.argv[3])
    else:
        rss(meta, sys.argv[3])


if __name__ == "__main__":
    main()
