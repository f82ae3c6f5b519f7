#!/usr/bin/python3
"""The section of bench/RESULTS.md that bench/dryrun.sh writes.

Usage: dryrun_report.py META RUNS

META: key=value lines (title, date, cores, cpu, kernel, pinning, load,
tool, torch, blas, reps, steps, cpu_steps, steps_model, secs, model_wall;
dry_line, the dry run's '# dryrun' line of cuda_model.py, dry_head its
first line, torch_dry and torch_bare the model's 'torch dev=cuda:0' line
in the dry run and untraced on the stand-in; est_when, est_torch, est_cpu,
est_err: the date and the rows of bench/estimate_cuda.sh's section, empty
where it has none). RUNS: tab-separated mode (cpu, dry, bare), rep,
loop_s, steps, cpu_s, wall_s, events, lost (NA where a mode has none).
Ratios are taken in each repetition from its own runs; medians with their
min to max over the repetitions.
"""

import re
import statistics
import sys

import lib


def kv(line, key):
    m = re.search(r"(?:^| )" + re.escape(key) + r"=(\S+)", line)
    return int(m.group(1)) if m else None


def mib(b):
    return f"{b} ({b / 1048576:.1f} MiB)"


def err(e, t):
    return f"{e - t:+d} ({100 * (e - t) / t:+.1f} %)" if t else "–"


def cells(row):
    """The cells of a Markdown table row, stripped of bold."""
    return [c.strip().replace("**", "") for c in row.strip().strip("|").split("|")]


def first_int(cell):
    m = re.match(r"[-+]?\d+", cell)
    return int(m.group(0)) if m else None


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    meta = lib.read_meta(sys.argv[1])
    runs = lib.by_mode_rep(lib.read_tsv(sys.argv[2]))
    reps = sorted(runs["cpu"])
    ms = {m: {r: 1e3 * float(v["loop_s"]) / int(v["steps"])
              for r, v in rows.items()} for m, rows in runs.items()}
    cpu_ms = {m: {r: 1e3 * float(v["cpu_s"]) / int(v["steps"])
                  for r, v in rows.items()} for m, rows in runs.items()}
    wall = {m: [float(v["wall_s"]) for v in rows.values()]
            for m, rows in runs.items()}
    f2 = lambda x: f"{x:.2f}"  # noqa: E731
    f1 = lambda x: f"{x:.1f}"  # noqa: E731

    out = []
    put = out.append
    secs = int(meta["secs"])
    put(f"## {meta['title']}")
    put("")
    put(f"Measured {meta['date']} by `bench/dryrun.sh` ({meta['reps']} "
        f"repetitions, {lib.duration(secs)} in all; load average "
        f"{meta['load']}: other engineers' tests ran on the same 2 cores "
        f"meanwhile) on {meta['cpu']}, {meta['cores']} cores, kernel "
        f"{meta['kernel']}; CPUs: {meta['pinning']}; {meta['tool']}; "
        f"{meta['torch']} in the root of `scripts/debian-root.sh cuda`, "
        f"whose BLAS, which a Linear on the CPU calls, is "
        f"`{meta['blas']}` (Debian's reference BLAS, not OpenBLAS or MKL).")
    put("")
    put(f"The step: `bench/cuda_step.py` (the model of \"Cost on a CUDA "
        "training step\": embed Linear, 2 Blocks of LayerNorm, "
        "MultiheadAttention, LayerNorm, Linear, GELU, Linear, a head "
        "Linear; dim 128, batch 8, seq 32; MSE, zero_grad, backward, Adam; "
        "one intra-op thread; 5 warm-up steps, then the timed steps between "
        "two `perf_counter()`s, in the process), run three ways, each "
        "repetition running each once in an order rotated by one place:")
    put("")
    put(f"- **CPU**: `scripts/cuda-standin.sh -- python3 cuda_step.py "
        f"--device cpu --steps {meta['cpu_steps']}`: the same model and "
        "batches computed on the CPU, `torch.cuda` untouched (the root's "
        "torch needs a `libcudart` to import, hence the stand-in; Adam is "
        "the for-loop one there, the foreach one on \"cuda\").")
    put(f"- **dry run**: `memtrace-bpf estimate --dry-run -- python3 "
        f"cuda_step.py --steps {meta['steps']}`, the static binary copied "
        "into the root and run there in a privileged container (as "
        "`tests/e2e/dryrun.bats`): the stand-in it carries, an H100-80GB "
        "by default, traced from the start.")
    put(f"- **stand-in, untraced**: `scripts/cuda-standin.sh -- python3 "
        f"cuda_step.py --steps {meta['steps']}`: the dry run less its "
        "tracing.")
    put("")
    put(lib.head("mode", "ms a step, median (min to max)",
                 "process CPU ms a step, median",
                 "whole run, s, median (start, import, warm-up, report)",
                 "events traced, median (lost)"))
    names = {"cpu": "CPU", "dry": "dry run",
             "bare": "stand-in, untraced"}
    for m in ("cpu", "dry", "bare"):
        if m not in runs:
            continue
        ev = "–"
        if m == "dry":
            e = [int(v["events"]) for v in runs[m].values()]
            lost = sum(int(v["lost"]) for v in runs[m].values())
            ev = f"{statistics.median(e):,.0f} ({lost})"
        put(f"| {names[m]} | {lib.med_range(list(ms[m].values()), f2)} | "
            f"{statistics.median(cpu_ms[m].values()):.2f} | "
            f"{statistics.median(wall[m]):.1f} | {ev} |")
    put("")
    put("A step's ms above its process CPU ms is time the python waited "
        "for its core (the load above).")
    put("")
    ratio = [ms["dry"][r] / ms["cpu"][r] for r in reps]
    trace = [ms["dry"][r] - ms["bare"][r] for r in reps]
    share = [(ms["dry"][r] - ms["bare"][r]) / ms["dry"][r] for r in reps]
    over = [ms["dry"][r] / ms["bare"][r] - 1 for r in reps]
    put("- dry run / CPU, ms a step: "
        f"×{lib.med_range(ratio, lambda x: f'{x:.4f}')}"
        f": a step of the dry run takes 1/{1 / statistics.median(ratio):.0f} "
        "of the CPU's. The CPU computes every kernel (with this root's "
        "reference BLAS, slowly); the stand-in runs none, so a dry run's "
        "step costs the kernel launches and the allocator, whatever the "
        "model's arithmetic, while the CPU's grows with it.")
    put(f"- the tracing's own share: dry run − untraced stand-in = "
        f"{lib.med_range(trace, f2)} ms a step, "
        f"{lib.med_range(over, lambda x: f'{100 * x:+.0f}', ' %')} on the "
        "untraced step, "
        f"{lib.med_range(share, lambda x: f'{100 * x:.0f}', ' %')} "
        "of the dry run's step (every Python stack walked at each of the "
        "allocator's block events, as `-q` does; \"Cost on a CUDA training "
        "step\" measures `-q -p PID` the same way).")
    put("")

    dry = meta["dry_line"]
    tdry = meta["torch_dry"]
    tbare = meta["torch_bare"]
    da, dr = kv(dry, "peak_allocated"), kv(dry, "peak_reserved")
    ta, tr = kv(tdry, "allocated_peak"), kv(tdry, "reserved_peak")
    ba, br = kv(tbare, "allocated_peak"), kv(tbare, "reserved_peak")
    dev_mem = kv(dry, "device_mem")
    put(f"The peaks: `tests/fixtures/cuda_model.py --steps "
        f"{meta['steps_model']}` (the model of \"Estimate from a CPU trace "
        f"against PyTorch on CUDA (stand-in)\") under `memtrace-bpf estimate "
        f"--dry-run --` ({meta['model_wall']} s, start to report; device "
        f"{dev_mem} bytes, compute capability 9.0), and untraced on the "
        "stand-in (`scripts/cuda-standin.sh -- python3 cuda_model.py`: 16 "
        "GiB, compute capability 9.0); the model prints PyTorch's own "
        "`max_memory_allocated()` and `max_memory_reserved()` "
        "(`memory_stats()`) in both.")
    put("")
    put("| | peak allocated, bytes | peak reserved, bytes | against PyTorch's "
        "in the same run |")
    put("|---|---|---|---|")
    put(f"| PyTorch in the dry run | {mib(ta)} | {mib(tr)} | – |")
    put(f"| **`estimate --dry-run`** (its `# dryrun` line) | **{mib(da)}** | "
        f"**{mib(dr)}** | **{err(da, ta)}, {err(dr, tr)}** |")
    put(f"| PyTorch on the stand-in, untraced | {mib(ba)} | {mib(br)} | – |")
    est_cpu = cells(meta["est_cpu"]) if meta.get("est_cpu") else None
    est_err = cells(meta["est_err"]) if meta.get("est_err") else None
    est_torch = cells(meta["est_torch"]) if meta.get("est_torch") else None
    if est_cpu and est_err and est_torch:
        ea, er = first_int(est_cpu[1]), first_int(est_cpu[2])
        put(f"| `estimate -i` of a CPU trace (`bench/estimate_cuda.sh`, "
            f"quoted from its section, measured {meta['est_when']}) | "
            f"{mib(ea)} | {mib(er)} | {est_err[1]}, {est_err[2]} (its "
            f"PyTorch figures: {first_int(est_torch[1])}, "
            f"{first_int(est_torch[2])}) |")
    put("")
    if (da, dr) == (ta, tr):
        put(f"**The dry run's peaks are PyTorch's own, to the byte** "
            f"({da} and {dr})"
            + (", and those of the untraced run" if (ba, br) == (ta, tr)
               else f"; the untraced run's differ ({ba}, {br})") + ".")
    else:
        put(f"**The dry run's peaks are not PyTorch's**: {da} and {dr} "
            f"against {ta} and {tr}.")
    if est_cpu and est_err and est_torch:
        same = (first_int(est_torch[1]), first_int(est_torch[2])) == (ta, tr)
        put(f"The CPU-trace estimate's error on the same model is "
            f"{est_err[1]} allocated and {est_err[2]} reserved (the cuBLAS "
            "and cuBLASLt workspaces a CPU run never asks for, and two "
            "kernels' choices: that section says which)"
            + (", against the same PyTorch figures as here" if same else
               f"; against this run's PyTorch figures it would be "
               f"{err(first_int(est_cpu[1]), ta)} and "
               f"{err(first_int(est_cpu[2]), tr)}")
            + ". The dry run has no such error to correct: it runs "
            "PyTorch's allocator and the libraries' workspace requests "
            "for the device named, and models nothing.")
    else:
        put("The CPU-trace estimate's error: not measured here (no section "
            "of `bench/estimate_cuda.sh` in this file).")
    put("")
    put(f"Command (as root, in the tree, after `make static`): "
        f"`bench/dryrun.sh` (REPS={meta['reps']}, STEPS={meta['steps']}, "
        f"CPU_STEPS={meta['cpu_steps']}, STEPS_MODEL={meta['steps_model']}).")
    print("\n".join(out))


if __name__ == "__main__":
    main()
