#!/usr/bin/python3
"""Turn the raw tables of bench/run.sh into bench/RESULTS.md (on stdout).

Usage: report.py META RUNS LOSS [RECORD RSS]
       report.py --splice RESULTS META RECORD RSS

META is key=value lines about the machine and the run; RUNS and LOSS are
the tab-separated tables run.sh wrote (one line per run); RECORD is the
key=value figures of its record part and RSS the tool's memory samples
(tab-separated), for the "Record and report" section.  --splice prints the
file RESULTS with that section and its rows of the Goals table replaced
(run.sh's ONLY=record).
"""

import statistics
import sys

import lib

MODE_NAMES = {
    "bare": "bare",
    "empty": "empty uprobe (bpftrace `{ }`)",
    "mtq": "memtrace-bpf -q",
    "mtn": "memtrace-bpf -q --no-python",
    "mto": "memtrace-bpf -o FILE",
}
WORKLOADS = {
    "W1": "W1, compute-bound",
    "W2": "W2, launch-bound (allocator-heavy)",
}
GOAL_RATIO = 1.20       # tool cost per event vs the empty probe's
GOAL_W1_OVERHEAD = 1.0  # percent
GOAL_RATE = 1e6         # events/s below which nothing may be lost
GOAL_PY_RATIO = 0.30    # Python walk, module and phase vs the probe cost
GOAL_W1_PY = 1.5        # percent, compute-bound loop with everything on
TRACED = ("mtq", "mtn", "mto")


def num(x):
    return None if x in (None, "", "NA") else float(x)


def med(xs):
    return statistics.median(xs)


def fmt_int(x):
    return f"{x:,.0f}"


def fmt_rate(x):
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def pct(x):
    return f"{x:+.1f} %"


class Workload:
    def __init__(self, name, rows):
        self.name = name
        self.by_mode = {m: [r for r in rows if r["mode"] == m]
                        for m in MODE_NAMES}
        self.check = next((r for r in rows if r["mode"] == "check"), None)
        bare = [num(r["loop_s"]) for r in self.by_mode["bare"]]
        self.bare_med = med(bare)
        self.bare_min, self.bare_max = min(bare), max(bare)
        self.noise = (self.bare_max - self.bare_min) / self.bare_med * 100
        self.iters = int(self.by_mode["bare"][0]["iters"])
        c = self.check
        # New + Delete, counted by bpftrace: what the empty uprobes hit
        self.nd_hits = int(c["hits_new"]) + int(c["hits_del"])
        self.hits_per_iter = self.nd_hits / int(c["iters"])
        # every run of memtrace-bpf's BPF programs: all its probe hits
        self.tool_runs = int(c["tool_runs"])
        self.tool_run_ns = int(c["tool_run_ns"])
        self.bt_runs = int(c["bt_runs"])
        self.bt_run_ns = int(c["bt_run_ns"])
        self.printed = int(c["printed"])
        self.check_events = int(c["events"])
        self.hits_per_event = self.tool_runs / self.printed
        self.stats = {}
        for m, rs in self.by_mode.items():
            loops = [num(r["loop_s"]) for r in rs]
            s = {
                "n": len(rs),
                "med": med(loops),
                "min": min(loops),
                "max": max(loops),
                "it_s": med([int(r["iters"]) / num(r["loop_s"]) for r in rs]),
                "cpu_ratio": med([num(r["cpu_s"]) / num(r["loop_s"])
                                  for r in rs]),
            }
            s["ovh"] = (s["med"] / self.bare_med - 1) * 100
            if m in TRACED:
                ev = [int(r["events"]) for r in rs]
                s["events"] = med(ev)
                s["ev_min"], s["ev_max"] = min(ev), max(ev)
                s["eps"] = med([int(r["events"]) / num(r["loop_s"])
                                for r in rs])
                s["tool_eps"] = med([num(r["tool_eps"]) for r in rs])
                s["lost"] = sum(int(r["lost"]) for r in rs)
                s["tracer_cpu"] = med([num(r["tracer_cpu_s"]) for r in rs])
                s["units"] = s["events"]
            if m == "mto":
                s["printed_ok"] = all(int(r["printed"]) == int(r["events"])
                                      for r in rs)
            if m == "empty":
                # hits are deterministic per iteration (checked in the
                # check run); an empty action cannot count them itself
                s["units"] = self.hits_per_iter * self.iters
                s["eps"] = med([self.hits_per_iter * int(r["iters"]) /
                                num(r["loop_s"]) for r in rs])
            if m != "bare":
                u = s["units"]
                s["ns"] = (s["med"] - self.bare_med) / u * 1e9
                s["ns_lo"] = (s["min"] - self.bare_med) / u * 1e9
                s["ns_hi"] = (s["max"] - self.bare_med) / u * 1e9
            self.stats[m] = s
        e = self.stats["empty"]
        b = self.stats["bare"]
        # the autograd probes (set_gradient_edge, evaluate_function) make
        # no events: their hits are the tool's runs beyond New + Delete
        self.autograd_per_iter = ((self.tool_runs - self.nd_hits) /
                                  int(c["iters"]))
        for m in TRACED:
            s = self.stats[m]
            # --no-python attaches no autograd probe: one hit per event
            hpe = 1.0 if m == "mtn" else self.hits_per_event
            s["ratio"] = s["ns"] / (e["ns"] * hpe)
            # pessimistic/optimistic pairing of the traced runs
            s["ratio_lo"] = s["ns_lo"] / (e["ns_hi"] * hpe)
            s["ratio_hi"] = s["ns_hi"] / (e["ns_lo"] * hpe)
            # a ratio of two differences is meaningless once either
            # difference can be zero or negative within the runs
            s["resolvable"] = e["ns_lo"] > 0 and s["ns_lo"] > 0
        for m, s in self.stats.items():
            rs = self.by_mode[m]
            s["cpu_med"] = med([num(r["cpu_s"]) for r in rs])
            s["off_med"] = med([num(r["loop_s"]) - num(r["cpu_s"])
                                for r in rs])
            if m != "bare":
                u = s["units"]
                s["ns_cpu"] = (s["cpu_med"] - b["cpu_med"]) / u * 1e9
                s["ns_off"] = (s["off_med"] - b["off_med"]) / u * 1e9
                if m in TRACED:
                    s["ns_tracer"] = s["tracer_cpu"] / u * 1e9


def table(w, out):
    st = w.stats
    out.append(lib.head("mode", "runs", "loop s, median (min–max)",
                        "workload CPU s in the loop, median", "it/s",
                        "overhead vs bare median", "events/s in the loop",
                        "lost", "ns per event (range)", "vs empty uprobe",
                        "tracer CPU s"))
    for m in MODE_NAMES:
        s = st[m]
        row = [MODE_NAMES[m], str(s["n"]),
               f"{s['med']:.3f} ({s['min']:.3f}–{s['max']:.3f})",
               f"{s['cpu_med']:.3f}",
               f"{s['it_s']:.2f}"]
        if m == "bare":
            row += [f"– (spread {w.noise:.1f} %)", "–", "–", "–", "–", "–"]
        else:
            row.append(pct(s["ovh"]))
            if m == "empty":
                row += [f"{fmt_rate(s['eps'])} hits/s *", "–",
                        f"{s['ns']:,.0f} per hit ({s['ns_lo']:,.0f} to "
                        f"{s['ns_hi']:,.0f})", "1 (baseline)", "–"]
            else:
                row += [fmt_rate(s["eps"]), fmt_int(s["lost"]),
                        f"{s['ns']:,.0f} ({s['ns_lo']:,.0f} to "
                        f"{s['ns_hi']:,.0f})",
                        (f"×{s['ratio']:.2f} ({s['ratio_lo']:.2f}–"
                         f"{s['ratio_hi']:.2f})" if s["resolvable"] else
                         f"not resolvable (×{s['ratio']:.2f} on the medians)"),
                        f"{s['tracer_cpu']:.2f}"]
        out.append(lib.row(row))


# --- record and report (bench/run.sh's record part) ---

GOAL_REPORT_S_PER_M = 1.0   # report -i, seconds per million events
GOAL_RSS_GROWTH = 0.10      # RSS at the end vs at 1 min, long trace
GOAL_RSS_SECONDS = 600      # the trace the RSS goal asks for
REC_GOALS = ("| `memtrace-bpf report` under 1 s",
             "| memtrace-bpf's own RSS bounded")


def mib(kb):
    return f"{float(kb) / 1024:.1f} MiB"


def per_m(s, events):
    return s / (events / 1e6)


def record_section(meta, rec, rss_rows, spliced=False, w2=None):
    """The "Record and report" section and its rows of the Goals table."""
    o, goals = [], []
    big = rec["reads_on"]
    ev = {n: int(rec[f"{n}_events"]) for n in ("w2", big)}
    o.append("## Record and report")
    o.append("")
    if spliced:
        o.append(f"Measured {meta['date']} on its own, by `{meta['cmd']}` "
                 f"(whole part {lib.duration(int(meta['bench_s']))}), with "
                 f"{meta['tool']}; "
                 "the sections above come from an earlier whole run.")
        o.append("")
    o.append(f"`memtrace-bpf record -o FILE -p PID` on W2's loop "
             f"(`{meta['w2_args']}`), with the handshake of the runs above "
             "(attach confirmed, int3 bytes checked, go; stopped by SIGINT "
             "while the workload holds after its loop). Bytes per event = "
             "the file's size (`stat`) / the events the recorder says it "
             "wrote (its closing line on stderr); its own bytes-per-event "
             "figure is beside it. The record format is `docs/FORMAT.md`.")
    if big != "w2":
        o.append("")
        o.append(f"W2's record holds fewer than {int(rec['rec_min_events']):,} "
                 "events, so a longer record of the same loop "
                 f"({int(rec['big_iters']):,} iterations) was made for the "
                 "read times.")
    o.append("")
    o.append(lib.head("record", "timed iterations", "loop s", "events",
                      "lost", "file bytes", "bytes per event",
                      "recorder's own figure",
                      "recorder CPU s (attach included)",
                      "recorder CPU ns per event"))
    names = [("w2", "W2")] + ([("big", "W2, longer")] if big != "w2" else [])
    for n, label in names:
        e = int(rec[f"{n}_events"])
        b = int(rec[f"{n}_bytes"])
        cpu = num(rec[f"{n}_tool_cpu_s"])
        o.append(f"| {label} | {int(rec[f'{n}_iters']):,} | "
                 f"{rec[f'{n}_loop_s']} | {e:,} | {int(rec[f'{n}_lost']):,} | "
                 f"{b:,} | **{b / e:.2f}** | {rec[f'{n}_said_bpe']} | "
                 f"{cpu:.2f} | {cpu / e * 1e9:,.0f} |")
    rss_s = int(rec["rss_seconds"])
    if rss_s > 0:
        e = int(rec["rss_rec_events"])
        b = int(rec["rss_rec_bytes"])
        cpu = num(rec["rss_rec_tool_cpu_s"])
        o.append(f"| steady W2 loop, {rss_s} s (below) | – | – | {e:,} | "
                 f"{int(rec['rss_rec_lost']):,} | {b:,} | **{b / e:.2f}** | "
                 f"– | {cpu:.2f} | {cpu / e * 1e9:,.0f} |")
    o.append("")
    if w2 is not None:
        o.append("For comparison, memtrace-bpf's CPU per event in W2's runs "
                 "above (tracer CPU s / events, medians): -q "
                 f"{w2.stats['mtq']['ns_tracer']:,.0f} ns, -o FILE (text "
                 f"lines) {w2.stats['mto']['ns_tracer']:,.0f} ns; W2's bare "
                 f"loop took {w2.bare_med:.3f} s (median).")
        o.append("")

    # read times
    rs = [float(x) for x in rec[f"{big}_report_s"].split()]
    ss = [float(x) for x in rec[f"{big}_script_s"].split()]
    e = ev[big]
    rep_m, scr_m = med(rs), med(ss)
    o.append("Read times: `memtrace-bpf report -i FILE >/dev/null` and "
             "`memtrace-bpf script -i FILE >/dev/null`, "
             f"{len(rs)} runs each, alternating, the file in the page cache; "
             "wall time and peak RSS from `bench/timecmd.py` (peak RSS: "
             + ("GNU time's `%M`" if meta.get("gnu_time") == "yes" else
                "wait4's ru_maxrss, which can start from the forking "
                "Python's ~7 MB: install the `time` package for GNU "
                "time's `%M`") + "). Per M events = median s / "
             "(events / 10^6).")
    o.append("")
    o.append(lib.head("command", "record", "events", "wall s, each run",
                      "median s", "**s per M events**", "peak RSS"))
    label = "W2" if big == "w2" else "W2, longer"
    o.append(f"| `report -i` | {label} | {e:,} | "
             f"{', '.join(f'{x:.3f}' for x in rs)} | {rep_m:.3f} | "
             f"**{per_m(rep_m, e):.3f}** | "
             f"{mib(rec[f'{big}_report_rss_kb'].split('(')[0])} |")
    o.append(f"| `script -i` | {label} | {e:,} | "
             f"{', '.join(f'{x:.3f}' for x in ss)} | {scr_m:.3f} | "
             f"**{per_m(scr_m, e):.3f}** | "
             f"{mib(rec[f'{big}_script_rss_kb'].split('(')[0])} |")
    long_rep = None
    if rss_s > 0:
        le = int(rec["rss_rec_events"])
        lrs = [float(x) for x in rec["rss_rec_report_s"].split()]
        lr = med(lrs)
        long_rep = (per_m(lr, le), le)
        o.append(f"| `report -i` | steady W2 loop, {rss_s} s | {le:,} | "
                 f"{', '.join(f'{x:.3f}' for x in lrs)} | {lr:.3f} | "
                 f"**{long_rep[0]:.3f}** | "
                 f"{mib(rec['rss_rec_report_rss_kb'].split('(')[0])} (first "
                 "run) |")
    o.append("")
    checks = [("`report`'s summary `events=`", int(rec[f"{big}_report_events"]), e),
              ("`script`'s event lines", int(rec[f"{big}_script_lines"]), e)]
    if rss_s > 0:
        checks.append((f"`report`'s `events=` on the {rss_s}-s record",
                       int(rec["rss_rec_report_events"]), le))
    bad = [f"{what} {got:,} (recorded {want:,})"
           for what, got, want in checks if got != want]
    if bad:
        o.append("**Mismatch:** " + "; ".join(bad) + ".")
    else:
        o.append("Checks: " + ", ".join(what for what, _, _ in checks) +
                 " equal the events the recorder wrote.")
    o.append("")
    note = ""
    if e < 1e6:
        note = f" (on {e:,} events: fewer than the 1 M the goal asks for)"
    res = (f"{per_m(rep_m, e):.3f} s per M events: median {rep_m:.3f} s "
           f"over {e:,} events{note}")
    if long_rep:
        res += (f"; {long_rep[0]:.3f} s per M events on the {rss_s}-s "
                f"record ({long_rep[1]:,} events)")
    res += f". `script -i`: {per_m(scr_m, e):.3f} s per M events"
    worst = max([per_m(rep_m, e)] + ([long_rep[0]] if long_rep else []))
    goals.append(f"{REC_GOALS[0]} per million recorded events | {res} | "
                 f"{'met' if worst < GOAL_REPORT_S_PER_M else 'not met'} |")

    # the tool's memory over a long trace
    o.append(f"### memtrace-bpf's memory over a {rss_s}-s trace")
    o.append("")
    if rss_s == 0:
        o.append("Not measured in this run (`RSS_SECONDS=0`).")
        o.append("")
        goals.append(f"{REC_GOALS[1]} by live allocations, not by events "
                     "(10-minute trace) | not measured (`RSS_SECONDS=0`) | "
                     "– |")
        return o, goals
    every = int(rec["rss_every"])
    o.append(f"W2's model in a loop with more iterations than it can run in "
             f"{rss_s} s, traced from go for {rss_s} s by `memtrace-bpf -q "
             "-p PID` (Python attribution on), and in a second run by "
             "`memtrace-bpf record -o FILE -p PID`; then the tool is stopped "
             "(SIGINT) and the workload killed. The tool's `VmRSS` is read "
             f"from `/proc/PID/status` every {every} s; peak = the highest "
             "`VmHWM` read, at those samples and every 50 ms after the "
             "SIGINT until it exited (so it covers the summary or the "
             "record's end). Live "
             "allocations at the end: the summary's `# live allocations=N` "
             "(-q's own; for the record, `report -i` on it). Events/s = "
             "events / the tool's own duration (attach to stop).")
    o.append("")
    o.append(lib.head("tool", "events", "events/s", "lost",
                      "live allocations at the end", "RSS at go",
                      "RSS at 1 min", "RSS at the end", "peak (VmHWM)",
                      "RSS change, 1 min → end", "tool CPU s"))
    samples = {m: [r for r in rss_rows if r["mode"] == m] for m in ("q", "rec")}

    def near(rows, t):
        return min(rows, key=lambda r: abs(float(r["t_s"]) - t))

    verdicts = []
    summary = []
    for m, label in (("q", "`memtrace-bpf -q`"), ("rec", "`memtrace-bpf record`")):
        rows = samples[m]
        first, last = rows[0], rows[-1]
        one = near(rows, 60)
        ev_m = int(rec[f"rss_{m}_events"])
        secs = float(rec[f"rss_{m}_secs"])
        r1, r_end = int(one["rss_kb"]), int(last["rss_kb"])
        growth = (r_end - r1) / r1
        # events after the 1-min sample, at the loop's steady rate
        t_end = float(last["t_s"])
        ev_after = ev_m * max(t_end - float(one["t_s"]), 0) / max(t_end, 1)
        per = (f", {(r_end - r1) / (ev_after / 1e6):+,.0f} KiB per M events"
               if ev_after >= 1e5 else "")
        hwm = rec[f"rss_{m}_hwm_kb"]
        o.append(f"| {label} | {ev_m:,} | {fmt_rate(ev_m / secs)} | "
                 f"{int(rec[f'rss_{m}_lost']):,} | {rec[f'rss_{m}_live']} | "
                 f"{mib(first['rss_kb'])} | {mib(r1)} (at "
                 f"{float(one['t_s']):.0f} s) | {mib(r_end)} | "
                 f"{mib(hwm) if hwm != 'NA' else '?'} | "
                 f"{(r_end - r1) / 1024:+.1f} MiB ({growth * 100:+.1f} %{per}) | "
                 f"{num(rec[f'rss_{m}_tool_cpu_s']):.2f} |")
        verdicts.append(growth <= GOAL_RSS_GROWTH)
        summary.append(f"{label.strip('`').replace('memtrace-bpf ', '')}: "
                       f"{mib(r1)} at {float(one['t_s']):.0f} s, "
                       f"{mib(r_end)} at {t_end:.0f} s, peak "
                       f"{mib(hwm) if hwm != 'NA' else '?'}; "
                       f"{ev_m:,} events, live allocations at the end "
                       f"{rec[f'rss_{m}_live']}")
    o.append("")
    # RSS over time, about ten rows
    step = max(every, round(rss_s / 10 / every) * every)
    o.append("RSS over the trace (the samples nearest each time):")
    o.append("")
    o.append(lib.head("s from go", "-q RSS", "record RSS", "record file"))
    t = 0
    while t <= rss_s:
        q, r = near(samples["q"], t), near(samples["rec"], t)
        fb = r["file_bytes"]
        o.append(f"| {t} | {mib(q['rss_kb'])} | {mib(r['rss_kb'])} | "
                 f"{int(fb) / 1e6:,.1f} MB |" if fb != "NA" else
                 f"| {t} | {mib(q['rss_kb'])} | {mib(r['rss_kb'])} | – |")
        t += step
    o.append("")
    if rss_s < 120:
        verdict = (f"not measured: a {rss_s}-s trace (`RSS_SECONDS`) is too "
                   "short to tell growth")
    else:
        verdict = ("met" if all(verdicts) else "not met")
        verdict += (f" (RSS at the end within {GOAL_RSS_GROWTH * 100:.0f} % "
                    "of its 1-minute figure" if all(verdicts) else
                    f" (RSS grew more than {GOAL_RSS_GROWTH * 100:.0f} % "
                    "after the first minute")
        if rss_s < GOAL_RSS_SECONDS:
            verdict += f"; over {rss_s} s, not 10 min"
        verdict += ")"
    goals.append(f"{REC_GOALS[1]} by live allocations, not by events "
                 f"(10-minute trace) | {rss_s}-s traces of a steady W2 loop: "
                 + "; ".join(summary) + f" | {verdict} |")
    return o, goals


def splice(path, section, goal_rows):
    """The file at path with section and goal_rows in place of old ones."""
    with open(path) as f:
        lines = f.read().rstrip("\n").split("\n")
    if "## Record and report" in lines:
        i = lines.index("## Record and report")
        j = next((k for k in range(i + 1, len(lines))
                  if lines[k].startswith("## ")), len(lines))
        del lines[i:j]
    lines = [x for x in lines if not x.startswith(REC_GOALS)]
    if "## Goals" in lines:
        k = lines.index("## Goals") + 1
        while k < len(lines) and not lines[k].startswith("|"):
            k += 1
        while k < len(lines) and lines[k].startswith("|"):
            k += 1
        lines[k:k] = goal_rows
    k = (lines.index("## Notes on noise") if "## Notes on noise" in lines
         else len(lines))
    lines[k:k] = section
    return "\n".join(lines)


def main():
    if sys.argv[1] == "--splice":
        meta = lib.read_meta(sys.argv[3])
        section, goal_rows = record_section(meta,
                                            lib.read_meta(sys.argv[4]),
                                            lib.read_tsv(sys.argv[5]),
                                            spliced=True)
        print(splice(sys.argv[2], section, goal_rows))
        return
    meta = {}
    samples = {}
    links = {}
    with open(sys.argv[1]) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            if k.startswith("sample_"):
                samples.setdefault(k[7:], []).append(v)
            elif k.startswith("links_"):
                links.setdefault(k[6:], []).append(v)
            else:
                meta[k] = v
    runs = lib.read_tsv(sys.argv[2])
    loss = lib.read_tsv(sys.argv[3])
    ws = {n: Workload(n, [r for r in runs if r["workload"] == n])
          for n in WORKLOADS}
    w1, w2 = ws["W1"], ws["W2"]
    rec_section, rec_goals = [], []
    if len(sys.argv) > 5:
        rec_section, rec_goals = record_section(
            meta, lib.read_meta(sys.argv[4]), lib.read_tsv(sys.argv[5]),
            w2=w2)
    o = []
    o.append("# memtrace-bpf benchmark: CPU PyTorch training loops")
    o.append("")
    o.append(f"Measured {meta['date']} by `bench/run.sh` (whole run "
             f"{lib.duration(int(meta['bench_s']))}). "
             "Reproduce with `make bench` (as root; it runs "
             "`scripts/setup.sh`, builds `memtrace-bpf fixtures`, then "
             "`bench/run.sh`, which rewrites this file). This file came "
             f"from: `{meta.get('cmd', 'bench/run.sh')}`.")
    o.append("")
    o.append("What: the wall time of the timed loop of a small transformer LM "
             "trained with Adam on the CPU (`bench/workload_train.py`), bare "
             "and traced, and the cost per traced event, beside the cost of "
             "an empty uprobe on the same functions. memtrace-bpf's events for "
             "CPU tensor storage come from one uprobe each on "
             "`c10::ProfiledCPUMemoryReporter::New` and `::Delete` in "
             "`libc10.so.1.13.0` (events `c10:cpu_alloc` / `c10:cpu_free`; "
             "the other functions it probes are listed per workload below); "
             "the empty-uprobe mode is bpftrace with an empty action on "
             "exactly New and Delete. Both start with `push %r14` / "
             "`push %r15`; `bench/probecheck.py` read `0xcc` (int3) at both "
             "functions in the target for every traced run and the original "
             "byte for every bare run, so all traced modes take the same "
             "int3 + emulation path.")
    if rec_section:
        o.append("")
        o.append("Last, *Record and report*: the bytes per event of "
                 "`memtrace-bpf record`'s binary file, the time `report` and "
                 "`script` take per million recorded events, and "
                 "memtrace-bpf's own memory over a long trace.")
    o.append("")
    if meta.get("tool_changed"):
        o.append(f"**Warning:** {meta['tool_changed']}.")
        o.append("")
    o.append("## Machine")
    o.append("")
    o.append("| | |")
    o.append("|---|---|")
    for k, label in (("cpu", "CPU"), ("cores", "cores (nproc)"),
                     ("virt", "hypervisor"), ("mem", "memory"),
                     ("kernel", "kernel"), ("os", "OS"),
                     ("meltdown", "meltdown mitigation"),
                     ("python", "python"), ("torch", "torch"),
                     ("blas", "OpenBLAS serial used"),
                     ("bpftrace", "bpftrace"), ("tool", "memtrace-bpf")):
        o.append(f"| {label} | {meta.get(k, '?')} |")
    o.append("")
    o.append("## How")
    o.append("")
    o.append(f"- Workloads: W1 = `{meta['w1_args']}`, W2 = `{meta['w2_args']}` "
             "(both: 4 heads, vocab 1000, dropout 0.1, Adam lr 1e-4, "
             "`torch.set_num_threads(1)`, 3 warm-up iterations). The loop "
             "time is measured inside the workload (`time.perf_counter` "
             "around the timed iterations only: no import, model build, "
             "warm-up, attach or teardown).")
    o.append("- Per run: the workload warms up, prints `READY <pid>` and "
             "waits for a go file (`tests/fixtures/mt_sync.py`); the tracer "
             "is attached and confirmed (bpftrace's `BEGIN` line, or "
             "memtrace-bpf's `# attach ... libc10` line), the int3 bytes "
             "checked, 0.5 s later the go file is created. After the loop "
             "the workload waits for a hold file, so the tracer is stopped "
             "(SIGINT) before the interpreter tears down: the event counts "
             "cover the timed loop only.")
    o.append(f"- Modes: bare, empty uprobe, memtrace-bpf -q, memtrace-bpf "
             f"-o FILE (every event line written to a file on disk). "
             f"{meta['reps']} repetitions; in each repetition every mode of "
             "W1 then W2 runs once, and the mode order is rotated by one "
             "place per repetition. Medians are reported.")
    o.append("- ns per event = (median traced loop s − median bare loop s) / "
             "events in the loop (memtrace-bpf's summary `events=`); for the "
             "empty uprobe, per hit with hits = New+Delete hits per "
             "iteration (check run) × iterations. The range uses the fastest and slowest "
             "traced run against the bare median. \"vs empty uprobe\" = "
             "ns per event / (ns per empty hit × hits per event); its range "
             "pairs the extremes of both.")
    o.append("- Events/s in the loop = events / loop s of the same run. "
             "memtrace-bpf's own `events_per_sec` divides by its whole run "
             "time (attach to SIGINT, so it includes the 0.5 s before go and "
             "the stop), hence it is lower; it is listed below too.")
    o.append("- Probe hits per event: one extra check run per workload "
             "with bpftrace `count()` on New/Delete (with a `pid ==` "
             "predicate: bpftrace 0.17's `-p` does not limit uprobes to "
             "that process, so the empty-uprobe mode traps in every process "
             "that maps libc10) and memtrace-bpf -o "
             "attached to the same process at the same time, and "
             "`kernel.bpf_stats_enabled=1` during its loop (restored "
             "after). Hits = `run_cnt` of memtrace-bpf's BPF programs, read "
             "from its `/proc/PID/fdinfo` (`bench/bpfstats.py`): every probe "
             "hit of the tool, on any function, entry or return; events = "
             "event lines printed (not its `#` lines, not the indented "
             "Python stack lines). The same fdinfo gives `run_time_ns`, the "
             "time spent inside the BPF programs.")
    o.append("")

    for n, w in ws.items():
        st = w.stats
        o.append(f"## {WORKLOADS[n]}")
        o.append("")
        o.append(f"{w.iters} timed iterations per run. Check run "
                 f"({w.check['iters']} iterations): bpftrace counted New "
                 f"{int(w.check['hits_new']):,} + Delete "
                 f"{int(w.check['hits_del']):,} = {w.nd_hits:,} hits "
                 f"({w.hits_per_iter:,.1f} per iteration; the empty "
                 f"uprobe's hits); the kernel counted {w.tool_runs:,} runs "
                 f"of memtrace-bpf's BPF programs (all its probe hits, entry "
                 f"and return), and memtrace-bpf printed {w.printed:,} event "
                 f"lines (summary: {w.check_events:,} events, lost "
                 f"{w.check['lost']}): **{w.hits_per_event:.4f} probe hits "
                 f"per event** ({w.nd_hits / w.printed:.4f} of them on "
                 f"New/Delete). Time inside the BPF programs "
                 f"(`run_time_ns`, check run): memtrace-bpf "
                 f"**{w.tool_run_ns / max(w.tool_runs, 1):,.0f} ns per run**, "
                 f"bpftrace `count()` "
                 f"{w.bt_run_ns / max(w.bt_runs, 1):,.0f} ns per run.")
        o.append("")
        if n in links:
            o.append("memtrace-bpf's uprobes in this run (from its link "
                     "fds): " + "; ".join(
                         "`{}` in {}".format(
                             dict(x.split("=", 1) for x in l.split())
                             .get("symbol", "?"),
                             dict(x.split("=", 1) for x in l.split())
                             .get("file", "?").rsplit("/", 1)[-1])
                         for l in links[n]) + ".")
            o.append("")
        table(w, o)
        o.append("")
        o.append("\\* empty uprobe: hits/s computed from the hits per "
                 "iteration of the check run, not counted in these runs.")
        o.append("")
        mq, mo = st["mtq"], st["mto"]
        o.append(f"memtrace-bpf's own summary figure `events_per_sec` "
                 f"(median): -q {mq['tool_eps']:,.0f}, -o "
                 f"{mo['tool_eps']:,.0f}. Events per run: -q "
                 f"{mq['ev_min']:,}–{mq['ev_max']:,}, -o "
                 f"{mo['ev_min']:,}–{mo['ev_max']:,}. -o: lines in the file "
                 f"{'equal' if mo['printed_ok'] else 'DO NOT equal'} the "
                 f"summary's events in every run. Workload CPU time / wall "
                 f"time (median, bare): {st['bare']['cpu_ratio']:.3f}.")
        o.append("")
        if n == "W2":
            o.append("Where the extra time per event goes (W2, medians "
                     "against bare): in the workload's thread = extra "
                     "process CPU time (trap, BPF program, ring buffer "
                     "commit); off-CPU = extra time the workload was "
                     "runnable or waiting but not on a CPU (loop s − CPU s); "
                     "tracer = memtrace-bpf's own CPU time (user + kernel) "
                     "per event, spent beside the workload.")
            o.append("")
            o.append(lib.head("mode", "wall ns/event",
                              "in the workload's thread ns/event",
                              "off-CPU ns/event", "tracer CPU ns/event"))
            for m in ("empty",) + TRACED:
                s = st[m]
                o.append(f"| {MODE_NAMES[m]} | {s['ns'] + 0.0:,.0f} | "
                         f"{round(s['ns_cpu']) + 0:,} | {round(s['ns_off']) + 0:,} | "
                         f"{s.get('ns_tracer') and format(s['ns_tracer'], ',.0f') or '–'} |")
            o.append("")
        if n in samples:
            o.append("Event lines look like:")
            o.append("")
            o.append("```")
            o.extend(samples[n])
            o.append("```")
            o.append("")

    # goals
    o.append("## Goals")
    o.append("")
    o.append(lib.head("goal", "result", "met?"))
    for m in ("mtn", "mtq", "mto"):
        s = w2.stats[m]
        ok = s["ratio"] <= GOAL_RATIO
        sure = s["ratio_hi"] <= GOAL_RATIO or s["ratio_lo"] > GOAL_RATIO
        resolvable = s["resolvable"]
        o.append(f"| tool adds at most 20 % to the bare probe cost per event "
                 f"({MODE_NAMES[m]}, W2) | {s['ns']:,.0f} ns/event vs "
                 f"{w2.stats['empty']['ns']:,.0f} ns per empty hit × "
                 f"{1.0 if m == 'mtn' else w2.hits_per_event:.3f} "
                 f"hits/event = ×{s['ratio']:.2f} "
                 f"(range {s['ratio_lo']:.2f}–{s['ratio_hi']:.2f}) | "
                 + ("not resolvable (a traced run was not slower than "
                    "the bare median)" if not resolvable else
                    f"{'met' if ok else 'not met'}"
                    f"{'' if sure else ' (on the medians; the range straddles 1.20)'}")
                 + " |")
    # the Python attribution: -q against -q --no-python
    s_on, s_off, e2 = w2.stats["mtq"], w2.stats["mtn"], w2.stats["empty"]
    py_ns = s_on["ns"] - s_off["ns"]
    py_ratio = py_ns / e2["ns"]
    o.append(f"| Python walk, module and phase add at most 30 % to the bare "
             f"probe cost per event (W2: -q against -q --no-python) | "
             f"{s_on['ns']:,.0f} − {s_off['ns']:,.0f} = {py_ns:,.0f} ns per "
             f"event, against {e2['ns']:,.0f} ns per empty hit: "
             f"{py_ratio * 100:.0f} % (the autograd probes' "
             f"{w2.autograd_per_iter:,.0f} hits per step included) | "
             f"{'met' if py_ratio <= GOAL_PY_RATIO else 'not met'} |")
    s1 = w1.stats["mtq"]
    o.append(f"| compute-bound loop (W1) under 1.5 % with everything on "
             f"(memtrace-bpf -q) | measured {pct(s1['ovh'])} (bare runs "
             f"spread {w1.noise:.1f} %) | "
             f"{'met' if s1['ovh'] < GOAL_W1_PY else 'not met'}"
             f"{' (within the noise)' if abs(s1['ovh']) <= w1.noise else ''} |")
    o.append(f"| extra probe hits of the autograd probes per training step "
             f"| W1 {w1.autograd_per_iter:,.0f}, W2 "
             f"{w2.autograd_per_iter:,.0f} (beside "
             f"{w1.hits_per_iter:,.0f} and {w2.hits_per_iter:,.0f} "
             f"allocator events per step) | (measured) |")
    # W1's noise: the spread of its bare runs, and how far the empty
    # uprobe's measured overhead is from what its per-hit cost (from W2)
    # predicts, whichever is larger
    e1 = w1.stats["empty"]
    e_pred = w2.stats["empty"]["ns"] * 1e-9 * e1["eps"] * 100
    noise1 = max(w1.noise, abs(e1["ovh"] - e_pred))
    for m in ("mtn", "mtq", "mto"):
        s = w1.stats[m]
        pm = w2.stats[m]["ns"] * 1e-9 * s["eps"] * 100
        within = abs(s["ovh"]) <= noise1
        note = (f"measured {pct(s['ovh'])} (median vs median). Noise: bare "
                f"runs spread {w1.noise:.1f} %, and the empty uprobe "
                f"measured {pct(e1['ovh'])} where its per-hit cost predicts "
                f"{e_pred:+.2f} %. Predicted from W2's "
                f"{w2.stats[m]['ns']:,.0f} ns per event × W1's "
                f"{fmt_rate(s['eps'])} events/s: {pm:+.2f} %")
        if within:
            verdict = ("not resolvable by measurement (within the noise); "
                       "by the prediction: "
                       f"{'met' if pm < GOAL_W1_OVERHEAD else 'not met'}")
        else:
            verdict = "met" if s["ovh"] < GOAL_W1_OVERHEAD else "not met"
            if (pm < GOAL_W1_OVERHEAD) != (s["ovh"] < GOAL_W1_OVERHEAD):
                verdict += (" as measured; the prediction says "
                            f"{'met' if pm < GOAL_W1_OVERHEAD else 'not met'}")
        o.append(f"| compute-bound loop (W1) overhead under 1 % "
                 f"({MODE_NAMES[m]}) | {note} | {verdict} |")
    # loss
    rates = []
    for r in loss:
        load = float(r["load_s"])
        rates.append(((int(r["events"]) + int(r["lost"])) / load, r))
    train_lost = sum(w.stats[m]["lost"] for w in ws.values()
                     for m in ("mtq", "mto"))
    for mb, label in (("16", "nothing lost below 1 M events/s (default "
                             "16 MiB ring buffer)"),
                      ("1", "same, 1 MiB ring buffer (`--ringbuf-mb 1`)")):
        rows = [(x, r) for x, r in rates if r["ringbuf_mb"] == mb]
        lossy = [(x, r) for x, r in rows if int(r["lost"]) > 0]
        res = ("fixture runs: " + "; ".join(
            f"{r['procs']} cop{'y' if r['procs'] == '1' else 'ies'} "
            f"{fmt_rate(x)}events/s, lost {int(r['lost']):,}"
            for x, r in rows))
        if mb == "16":
            res += (f". Training runs (-q and -o, up to "
                    f"{fmt_rate(max(w2.stats['mtq']['eps'], w2.stats['mto']['eps']))}"
                    f"events/s): lost {train_lost}")
        if any(x < GOAL_RATE for x, _ in lossy):
            verdict = "not met"
        elif lossy:
            verdict = ("met (losses only at ≥ 1 M events/s, averaged over "
                       "the run)")
        else:
            verdict = f"met up to {fmt_rate(max(x for x, _ in rows))}events/s"
            if max(x for x, _ in rows) < GOAL_RATE:
                verdict += " (1 M/s was not reached on this machine)"
        o.append(f"| {label} | {res} | {verdict} |")
    o.extend(rec_goals)
    o.append("")

    o.append("## Lost events at high rates")
    o.append("")
    o.append(f"K copies of `.output/fixtures/c10_report --loop "
             f"{meta['loss_rounds']} --quiet` (each round: 20 "
             "`reportMemoryUsageToProfiler` calls and 1 "
             "`reportOutOfMemoryToProfiler` call, all traced, plus 4 "
             "untraced `alloc_cpu`/`free_cpu` calls) start together on a go "
             "file, under one `memtrace-bpf -q -p PID,...`. Rate = (events + "
             "lost) / seconds from go until the last copy printed `done` "
             "(50 ms polling). Expected = 21 × rounds − 6 per copy. "
             "`kernel.bpf_stats_enabled=1` during the load (BPF ns per run "
             "= `run_time_ns` / `run_cnt` of memtrace-bpf's programs; no "
             "Python frames to walk in this C++ fixture).")
    o.append("")
    o.append(lib.head("copies", "--ringbuf-mb", "events", "lost",
                      "events + lost = expected?", "load s",
                      "events/s reached", "tool's events_per_sec",
                      "BPF ns per run"))
    for x, r in rates:
        tot = int(r["events"]) + int(r["lost"])
        o.append(f"| {r['procs']} | {r['ringbuf_mb']} | "
                 f"{int(r['events']):,} | {int(r['lost']):,} | "
                 f"{'yes' if tot == int(r['expected']) else 'NO: ' + format(tot, ',') + ' vs ' + format(int(r['expected']), ',')} | "
                 f"{float(r['load_s']):.2f} | {fmt_rate(x)} | "
                 f"{float(r['tool_eps']):,.0f} | "
                 f"{int(r['tool_run_ns']) / max(int(r['tool_runs']), 1):,.0f} |")
    o.append("")
    o.append(f"With {meta['cores']} vCPUs the traced copies and memtrace-bpf's "
             "consumer share two cores; more copies than cores add no rate. "
             "The rate per copy is bounded by what each event costs the "
             "producer's thread (trap plus BPF program).")
    o.append("")

    o.extend(rec_section)
    o.append("## Notes on noise")
    o.append("")
    o.append(f"- Bare runs spread {w1.noise:.1f} % (W1) and {w2.noise:.1f} % "
             "(W2) between the fastest and slowest run "
             f"({meta['reps']} runs each). An overhead or a difference "
             "between modes smaller than that is not resolved by this run. "
             f"In W1 the empty uprobe measured {pct(e1['ovh'])} although "
             f"its per-hit cost accounts for only {e_pred:+.2f} %: a gauge "
             "of the drift between runs in W1.")
    o.append("- W1 makes too few events per second for its overhead to rise "
             "above the noise; its \"ns per event\" is therefore not "
             "meaningful (it can even be negative). W2 is where the cost per "
             "event is measured.")
    o.append("- The machine is a shared 2-vCPU VM with no PMU; other work on "
             "the host (or in this VM: other sessions build and test in the "
             "same tree) changes speed between runs. Runs are interleaved and "
             "rotated so that drift spreads over all modes.")
    steal = sum(float(r["steal_s"]) for r in runs)
    loops = sum(float(r["loop_s"]) for r in runs)
    o.append(f"- Steal time during the timed loops: {steal:.2f} s in "
             f"{loops:.0f} s of loops (all CPUs; per run in the last table).")
    if meta.get("stuck_tracers", "0") != "0":
        o.append(f"- {meta['stuck_tracers']} tracer(s) did not exit within "
                 "20 s of SIGINT and were killed (run.sh printed their "
                 "state on stderr).")
    worst = max(runs, key=lambda r: num(r["loop_s"]) - num(r["cpu_s"])
                if r["mode"] == "bare" else -1)
    o.append("- The workload is single-threaded, so loop s − CPU s is time "
             "it spent off a CPU. In bare runs that is other load on the "
             f"machine (largest: {worst['workload']} bare rep {worst['rep']}, "
             f"{num(worst['loop_s']) - num(worst['cpu_s']):.2f} s of "
             f"{num(worst['loop_s']):.2f} s); in traced runs it also "
             "includes time the tracer's user space took the workload's "
             "core (2 vCPUs only).")
    o.append("")
    o.append("## All runs")
    o.append("")
    o.append("Runs in the order they ran. cpu s = the workload's process "
             "CPU time in the loop; steal s = steal time of all CPUs during "
             "the loop; first bytes = the first byte of New/Delete in the "
             "target just before go.")
    o.append("")
    o.append(lib.head("workload", "mode", "rep", "iters", "loop s", "cpu s",
                      "events", "lost", "printed", "hits New+Delete",
                      "tracer CPU s", "first bytes", "steal s"))
    for r in runs:
        hits = ("" if r["hits_new"] in ("", "NA")
                else f"{int(r['hits_new']):,}+{int(r['hits_del']):,}")
        o.append(f"| {r['workload']} | {r['mode']} | {r['rep']} | "
                 f"{r['iters']} | {r['loop_s']} | {r['cpu_s']} | "
                 f"{r['events']} | {r['lost']} | {r['printed']} | {hits} | "
                 f"{r['tracer_cpu_s']} | {r['probe_bytes']} | "
                 f"{r['steal_s']} |")
    o.append("")
    print("\n".join(o))


if __name__ == "__main__":
    main()
