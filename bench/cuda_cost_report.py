#!/usr/bin/python3
"""The section of bench/RESULTS.md that bench/cuda_cost.sh writes.

Usage: cuda_cost_report.py META RUNS TRAPS COUNT_RUNS WORK

META: key=value lines (date, cores, cpu, kernel, pinning, load, tool,
torch, standin, probed, first_insn, reps, steps, bare_steps, secs).  RUNS: tab-separated mode, rep,
loop_s, steps, allocs, frees, history, events, c10, lost (NA where a mode
has none), minflt (the loop's minor faults over the timed steps).  A
mode's overhead in a repetition is its time a step over that repetition's
bare time a step, less one; ratios are taken per repetition, from its own
overheads.  TRAPS: rep, then bench/traps.sh's ns a call (bare, push,
nop5, nop1, ret, sstep; read: ns a read).  COUNT_RUNS: the rows of RUNS's form of the counting
runs (rep "count"), whose folders WORK/MODE-count hold progs0.json and
progs1.json, the tracer's BPF programs (bpftool's JSON, a line each)
before and after the timed steps.
"""

import os
import statistics
import sys

import lib

TITLE = "Cost on a CUDA training step (stand-in)"
NAMES = {
    "bare": "bare",
    "mtq": "memtrace-bpf -q -p PID",
    "mtn": "memtrace-bpf -q --no-python",
    "mts": "memtrace-bpf -q --sample-bytes 512K",
    "flt": "memtrace-bpf record --flight 10m (the flight recorder's "
           "defaults: stacks sampled by bytes, 512 KiB)",
    "hist": "PyTorch's recorder, `_record_memory_history(stacks=\"python\")`",
}
MT = ("mtq", "mtn", "mts", "flt")


def pct(x):
    return f"{100 * x:+.1f}"


def times(x):
    return f"{x:.2f}"


def counted(work, m, row):
    """a counting run's figures a step: events, traps (uprobe entries),
    return probes, BPF µs, minor faults; runs a step by program"""
    b = lib.bpf_runs(os.path.join(work, f"{m}-count"))
    steps = int(row["steps"])
    return {
        "events": int(row["events"]) / steps,
        "traps": b["traps"] / steps,
        "rets": b["rets"] / steps,
        "bpf_us": b["bpf_ns"] / steps / 1e3,
        "minflt": int(row["minflt"]) / steps,
        "by": {n: c / steps for n, c in b["by"].items()},
    }


def trap_lines(put, traps):
    """the trap table; returns the median µs of a push trap and of a
    return probe's extra"""
    col = {k: [(float(t[k]) - float(t["bare"])) / 1e3 for t in traps]
           for k in ("push", "nop5", "nop1", "ret", "sstep")}
    extra = [(float(t["ret"]) - float(t["push"])) / 1e3 for t in traps]
    us = lambda x: f"{x:.2f}"  # noqa: E731
    put("A trap here, measured in each repetition by `bench/traps.sh` (the "
        "loop's CPU; a function called 1 M times under an empty bpftrace "
        "probe, timed in the process, less the bare call of "
        + lib.med_range([float(t["bare"]) for t in traps],
                        lambda x: f"{x:.1f}", " ns") + "), µs a hit, median "
        "(min to max):")
    put("")
    put(lib.head("probed instruction", "µs a hit"))
    put(lib.row(["`push` after `endbr64` (as in c10's reporters; emulated)",
                 lib.med_range(col["push"], us)]))
    put(lib.row(["5-byte nop (the optimized path)",
                 lib.med_range(col["nop5"], us)]))
    put(lib.row(["1-byte nop (a USDT site, as PyTorch's `pytorch:malloc`)",
                 lib.med_range(col["nop1"], us)]))
    put(lib.row(["a return probe, beyond its entry's trap",
                 lib.med_range(extra, us)]))
    put(lib.row(["`endbr64` (single-stepped out of line)",
                 lib.med_range(col["sstep"], us)]))
    put(lib.row(["a read of 8 bytes of user memory in the probe's program "
                 "(`bpf_probe_read_user`, as each read of the Python walk), "
                 "beyond its trap",
                 lib.med_range([float(t["read"]) / 1e3 for t in traps],
                               us)]))
    put("")
    return statistics.median(col["push"]), statistics.median(extra)


def main():
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    meta = lib.read_meta(sys.argv[1])
    runs = lib.by_mode_rep(lib.read_tsv(sys.argv[2]))
    traps = lib.read_tsv(sys.argv[3])
    crows = {r["mode"]: r for r in lib.read_tsv(sys.argv[4])}
    work = sys.argv[5]
    reps = sorted(runs["bare"])
    ms = {m: {r: 1e3 * float(row["loop_s"]) / int(row["steps"])
              for r, row in v.items()} for m, v in runs.items()}
    over = {m: {r: ms[m][r] / ms["bare"][r] - 1 for r in reps if r in ms[m]}
            for m in ms if m != "bare"}
    # the allocator's own count a step (every run's: the same model)
    allocs = [(int(row["allocs"]) + int(row["frees"])) / int(row["steps"])
              for v in runs.values() for row in v.values()]

    out = []
    put = out.append
    secs = int(meta["secs"])
    put(f"## {TITLE}")
    put("")
    put(f"Measured {meta['date']} by `bench/cuda_cost.sh` ({meta['reps']} "
        f"repetitions, {lib.duration(secs)}; load average "
        f"{meta['load']}) on {meta['cpu']}, {meta['cores']} cores, "
        f"kernel {meta['kernel']}; CPUs: {meta['pinning']}; {meta['tool']}; "
        f"{meta['torch']} in the root of `scripts/debian-root.sh cuda` on "
        f"the stand-ins of `user/standin` (sha256 of the libraries, "
        f"combined: {meta['standin']}). Step script: `bench/cuda_step.py "
        f"--steps {meta['steps']}` under memtrace-bpf, `--steps "
        f"{meta['bare_steps']}` bare and with the recorder (embed Linear, 2 Blocks of LayerNorm, "
        "MultiheadAttention, LayerNorm, Linear, GELU, Linear, a head "
        "Linear; dim 128, batch 8, seq 32; MSE, zero_grad, backward, "
        "Adam; 5 warm-up steps), run through `scripts/cuda-standin.sh`: "
        "PyTorch's own caching allocator on a runtime that runs no "
        "kernel, so the CPU launches every kernel with nothing to wait "
        "for, the worst case for a tracer. The time a step is measured "
        "inside the process (perf_counter around the timed steps and a "
        "synchronize; the tracer attached after warm-up and stopped "
        "before the interpreter's exit). Every repetition runs each mode "
        "once, in an order rotated by one place a repetition. Overhead = "
        "ms a step / the same repetition's bare ms a step − 1; a ratio is "
        "taken in each repetition from its own overheads; medians with "
        "their min to max over the repetitions.")
    put("")
    put(lib.head("mode", "ms a step, median (min to max)",
                 "overhead, median (min to max)",
                 "ratio to the recorder's overhead", "events a step",
                 "µs added an event, median", "lost"))
    for m in ("bare",) + MT + ("hist",):
        if m not in runs:
            continue
        row = [NAMES[m],
               lib.med_range(list(ms[m].values()), lambda x: f"{x:.2f}")]
        if m == "bare":
            row += ["–", "–", f"{statistics.median(allocs):,.1f} "
                    "(the allocator's own allocations and frees)", "–", "–"]
            put(lib.row(row))
            continue
        row.append(lib.med_range(list(over[m].values()), pct, " %"))
        if m in MT and "hist" in over:
            rat = [over[m][r] / over["hist"][r] for r in reps
                   if r in over[m] and r in over["hist"]
                   and over["hist"][r] > 0]
            skipped = sum(1 for r in reps if r in over[m]
                          and r in over["hist"] and over["hist"][r] <= 0)
            hm = statistics.median(over["hist"].values())
            cell = "×" + lib.med_range(rat, times) if rat else "–"
            if hm > 0:
                cell += (f"; of the medians ×"
                         f"{statistics.median(over[m].values()) / hm:.2f}")
            if skipped:
                cell += (f"; {skipped} repetition(s) without a ratio, the "
                         "recorder's overhead not above 0")
            row.append(cell)
        else:
            row.append("1 (baseline)" if m == "hist" else "–")
        if m == "hist":
            # the same allocator calls memtrace-bpf's c10 events are
            ev = {r: (int(v["allocs"]) + int(v["frees"])) / int(v["steps"])
                  for r, v in runs[m].items()}
            ent = [int(v["history"]) / int(v["steps"])
                   for v in runs[m].values() if v["history"] not in ("-", "")]
        else:
            ev = {r: int(v["events"]) / int(v["steps"])
                  for r, v in runs[m].items() if v["events"] != "NA"}
        if ev:
            e = statistics.median(ev.values())
            what = ""
            if m == "hist":
                what = " (allocations and frees" + (
                    f"; its trace gained {statistics.median(ent):,.1f} "
                    "entries a step" if ent else "") + ")"
            row.append(f"{e:,.1f}{what}")
            per = [1e3 * (ms[m][r] - ms["bare"][r]) / ev[r]
                   for r in reps if r in ev and r in ms[m]]
            row.append(f"{statistics.median(per):.1f}" if per else "–")
        else:
            row += ["–", "–"]
        lost = [int(v["lost"]) for v in runs[m].values()
                if v["lost"] not in ("NA", "")]
        row.append(f"{sum(lost):,}" if lost else "–")
        put(lib.row(row))
    put("")
    # the c10 events memtrace-bpf saw against the allocator's own count
    bad = []
    for m in MT:
        for r, v in runs.get(m, {}).items():
            if v["c10"] == "NA":
                continue
            want = int(v["allocs"]) + int(v["frees"])
            if int(v["c10"]) != want:
                bad.append(f"{NAMES[m]} rep {r}: {v['c10']} c10 events, "
                           f"the allocator counted {want}")
    put("Events a step: memtrace-bpf's `# summary` events= over the "
        "timed steps (every probe's events: c10's block events, CPU "
        "tensors', the runtime's), from attach to stop; the recorder's, "
        "the allocator's allocations and frees over the timed steps "
        "(memory_stats), which it records as alloc, free_requested and "
        "free_completed entries. µs added an event = (ms a step − the "
        "same repetition's bare ms a step) / events a step. "
        + ("memtrace-bpf's `c10:alloc` + `c10:free` counts equal the "
           "allocator's own (memory_stats' allocations and frees over the "
           "timed steps) in every run."
           if not bad else "c10 events against the allocator's own count "
           "differ: " + "; ".join(bad) + "."))
    if "then" in meta["standin"]:
        put("")
        put("**The stand-in libraries changed during the run**: the modes "
            "did not all run on the same ones.")
    put("")
    put(f"The c10 reporter memtrace-bpf probes for each block event, "
        f"`{meta.get('probed', '?')}`, begins with "
        f"`{meta.get('first_insn', '?')}` in this libc10. What a trap "
        "costs depends on the probed instruction: the kernel's uprobes "
        "emulate a push, but single-step most others out of line, "
        "endbr64 among them, so memtrace-bpf probes the instruction after "
        "a leading endbr64 (README's Benchmark section has a check by "
        "hand). The instructions probed in c10's reporters: "
        f"{meta.get('probed_insns', '?')}.")
    put("")
    push, extra = trap_lines(put, traps)
    added = {m: {r: 1e3 * (ms[m][r] - ms["bare"][r]) for r in reps
                 if r in ms[m]} for m in MT if m in ms}
    bare_flt = statistics.median(int(v["minflt"]) / int(v["steps"])
                                 for v in runs["bare"].values())
    cnt = {m: counted(work, m, crows[m]) for m in MT if m in crows}
    put("Where the time goes: one more run of each mode, untimed, with "
        "`kernel.bpf_stats_enabled` on, counts each of the tracer's BPF "
        "programs' runs and time over the timed steps. A uprobe program's "
        "run is a trap (`mt_exit`'s, a return probe's); every probe that "
        "fires in these steps is on a push (the instructions above), so "
        "none is single-stepped. Traps and return probes are priced at "
        "this run's median trap; BPF is the programs' own time; the rest "
        "is what the time added a step (the timed repetitions' median) "
        "leaves: the ring buffer's reader on the other CPU, caches, the "
        "tracer's wake-ups.")
    put("")
    put(lib.head("mode", "events a step", "traps a step (an event)",
                 "return probes a step", "µs added a step",
                 "traps × trap", "return probes × extra",
                 "BPF (an event)", "the rest (an event)",
                 "minor faults a step beyond bare"))
    for m, c in cnt.items():
        a = statistics.median(added[m].values())
        t_us, r_us = c["traps"] * push, c["rets"] * extra
        rest = a - t_us - r_us - c["bpf_us"]
        put(lib.row([
            NAMES[m], f"{c['events']:.1f}",
            f"{c['traps']:.1f} ({c['traps'] / c['events']:.2f})",
            f"{c['rets']:.1f}", f"{a:.0f}", f"{t_us:.0f}", f"{r_us:.0f}",
            f"{c['bpf_us']:.0f} ({c['bpf_us'] / c['events']:.2f})",
            f"{rest:.0f} ({rest / c['events']:.2f})",
            f"{c['minflt'] - bare_flt:+.1f}"]))
    put("")
    put("Runs a step by program: " + "; ".join(
        f"{NAMES[m]}: " + ", ".join(f"{n} {v:.1f}" for n, v in
                                   sorted(c["by"].items()))
        for m, c in cnt.items()) + ".")
    put("")
    # the goals of issue 38, item 3
    per = {m: statistics.median(
        1e3 * (ms[m][r] - ms["bare"][r]) /
        (int(runs[m][r]["events"]) / int(runs[m][r]["steps"]))
        for r in reps if r in ms[m] and runs[m][r]["events"] != "NA")
        for m in MT if m in runs}
    put(lib.head("goal (issue 38)", "measured", "met"))
    if "mtq" in cnt:
        tpe = cnt["mtq"]["traps"] / cnt["mtq"]["events"]
        put(lib.row(["1.0 trap an allocator event (`-q`)", f"{tpe:.2f}",
                     "met" if tpe <= 1.005 else "missed"]))
    for m, slack in (("mtq", 1.0), ("mtn", 0.3)):
        if m in per:
            goal = push + slack
            put(lib.row([f"{NAMES[m]}: ≤ one trap + {slack} µs an event "
                         f"= {goal:.2f} µs", f"{per[m]:.2f} µs",
                         "met" if per[m] <= goal else "missed"]))
    for m, what in (("mts", "`--sample-bytes`"),
                    ("flt", "the flight recorder's default")):
        if all(k in per for k in ("mtn", m, "mtq")):
            between = per["mtn"] <= per[m] <= per["mtq"]
            put(lib.row([f"{what} between `--no-python` and `-q`",
                         f"{per['mtn']:.2f} ≤ {per[m]:.2f} ≤ "
                         f"{per['mtq']:.2f} µs",
                         "met" if between else "missed"]))
    if "hist" in over and "mtq" in over:
        hm = statistics.median(over["hist"].values())
        if hm > 0:
            put(lib.row(["`-q` ≤ 1.2× the recorder where a trap costs ≤ "
                         "1.4 µs", f"×{statistics.median(over['mtq'].values()) / hm:.2f}"
                         f" with a trap of {push:.2f} µs",
                         ("met" if statistics.median(over['mtq'].values()) / hm <= 1.2
                          else "missed") if push <= 1.4 else
                         "no goal: the trap costs more here"]))
    put("")
    put("Command (as root, in the tree): `bench/cuda_cost.sh` "
        f"(REPS={meta['reps']}, STEPS={meta['steps']}, "
        f"BARE_STEPS={meta['bare_steps']}).")
    print("\n".join(out))


if __name__ == "__main__":
    main()
