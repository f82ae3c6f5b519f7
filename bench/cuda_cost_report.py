#!/usr/bin/python3
"""The section of bench/RESULTS.md that bench/cuda_cost.sh writes.

Usage: cuda_cost_report.py META RUNS

META: key=value lines (date, cores, cpu, kernel, pinning, load, tool,
torch, standin, probed, first_insn, reps, steps, bare_steps, secs).  RUNS: tab-separated mode, rep,
loop_s, steps, allocs, frees, history, events, c10, lost (NA where a mode
has none).  A mode's overhead in a repetition is its time a step over that
repetition's bare time a step, less one; ratios are taken per repetition,
from its own overheads.
"""

import statistics
import sys

import lib

TITLE = "Cost on a CUDA training step (stand-in)"
NAMES = {
    "bare": "bare",
    "mtq": "memtrace-bpf -q -p PID",
    "mtn": "memtrace-bpf -q --no-python",
    "mts": "memtrace-bpf -q --sample-bytes 512K",
    "hist": "PyTorch's recorder, `_record_memory_history(stacks=\"python\")`",
}
MT = ("mtq", "mtn", "mts")


def pct(x):
    return f"{100 * x:+.1f}"


def times(x):
    return f"{x:.2f}"


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    meta = lib.read_meta(sys.argv[1])
    runs = lib.by_mode_rep(lib.read_tsv(sys.argv[2]))
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
    for m in ("bare", "mtq", "mtn", "mts", "hist"):
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
        "hand).")
    put("")
    put("Command (as root, in the tree): `bench/cuda_cost.sh` "
        f"(REPS={meta['reps']}, STEPS={meta['steps']}, "
        f"BARE_STEPS={meta['bare_steps']}).")
    print("\n".join(out))


if __name__ == "__main__":
    main()
