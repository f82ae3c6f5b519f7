#!/usr/bin/python3
"""The tracer's start and end on a torch process, per BPF program.

Usage: start.py [--reps N] [--base BINARY] [--mt BINARY]

A process of Debian's python3 that imported torch (1.13) and sleeps is
the target. Each repetition runs `MT -q -p PID -d 10ms` once per binary
(--base first, then --mt, alternating) three ways:

- under `strace -f -ttt -T -e trace=execve,bpf,perf_event_open,exit_group`:
  the verifier's time for each program (its BPF_PROG_LOAD), the time from
  the exec to the last probe attached (the start: its perf_event_open, or
  its uprobe_multi link's BPF_LINK_CREATE) and from there to the exit
  (10 ms of tracing, the report, removing the probes);
- plain: the wall time of the whole run.

strace slows the syscalls it stops at, not the verifier's work inside one.
Prints Markdown tables for bench/RESULTS.md: medians with min to max.
Run as root, alone (about 2 s a run).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# a uprobe_multi link made (attach type 48, which strace may not name)
UPROBE_MULTI = re.compile(
    r"bpf\(BPF_LINK_CREATE, .*attach_type=(0x30|BPF_TRACE_UPROBE_MULTI)\b.*\) = \d")
TARGET = "import torch, time; x = torch.ones(10); print('up', flush=True); time.sleep(3600)"


def traced_run(mt, pid):
    """(program load seconds by name, start s, end s) of one run under strace"""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        subprocess.run(
            ["strace", "-f", "-ttt", "-T", "-o", log.name,
             "-e", "trace=execve,bpf,perf_event_open,exit_group",
             mt, "-q", "-p", str(pid), "-d", "10ms"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        loads, t0, attached, end = {}, None, None, None
        for line in log:
            m = re.match(r"\d+\s+([\d.]+) (\w+)\(", line)
            if not m:
                continue
            t, call = float(m.group(1)), m.group(2)
            if call == "execve" and t0 is None:
                t0 = t
            elif call == "perf_event_open" or UPROBE_MULTI.search(line):
                attached = t
            elif call == "exit_group":
                end = t
            elif call == "bpf" and "BPF_PROG_LOAD" in line:
                name = re.search(r'prog_name="([^"]*)"', line)
                took = re.search(r"<([\d.]+)>$", line.strip())
                if name and name.group(1).startswith("mt_") and took:
                    loads[name.group(1)] = float(took.group(1))
        if None in (t0, attached, end):
            raise SystemExit(f"{mt}: no exec, attach or exit in its strace")
        return loads, attached - t0, end - attached


def plain_run(mt, pid):
    t = time.monotonic()
    subprocess.run([mt, "-q", "-p", str(pid), "-d", "10ms"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    return time.monotonic() - t


def med(v):
    if not v:
        return "not loaded"
    return f"{statistics.median(v):.3f} ({min(v):.3f} to {max(v):.3f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mt", default=os.path.join(HERE, "..", "memtrace-bpf"))
    ap.add_argument("--base", help="another binary, measured in turn")
    a = ap.parse_args()
    bins = ([("base", a.base)] if a.base else []) + [("this", a.mt)]
    target = subprocess.Popen(["/usr/bin/python3", "-c", TARGET],
                              stdout=subprocess.PIPE, text=True)
    try:
        if target.stdout.readline().strip() != "up":
            raise SystemExit("the torch process did not start")
        res = {b: {"loads": {}, "start": [], "end": [], "wall": []}
               for b, _ in bins}
        for _ in range(a.reps):
            for b, mt in bins:
                loads, start, end = traced_run(mt, target.pid)
                for name, s in loads.items():
                    res[b]["loads"].setdefault(name, []).append(s)
                res[b]["start"].append(start)
                res[b]["end"].append(end)
                res[b]["wall"].append(plain_run(mt, target.pid))
    finally:
        target.kill()
    cols = [b for b, _ in bins]
    print("| s, median (min to max) | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    rows = [("start: exec to the last probe attached (strace)", "start"),
            ("end: 10 ms traced, the report, the probes removed (strace)", "end"),
            ("the whole run, plain", "wall")]
    for label, key in rows:
        print(f"| {label} | " + " | ".join(med(res[b][key]) for b in cols) + " |")
    names = sorted({n for b in cols for n in res[b]["loads"]},
                   key=lambda n: -max(statistics.median(res[b]["loads"].get(n, [0]))
                                      for b in cols))
    for b in cols:
        total = [sum(v) for v in zip(*res[b]["loads"].values())]
        res[b]["loads"]["all programs"] = total
    print()
    print("| the verifier's time, s (BPF_PROG_LOAD) | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for n in names + ["all programs"]:
        print(f"| {n} | " + " | ".join(med(res[b]["loads"].get(n, [])) for b in cols) + " |")


if __name__ == "__main__":
    sys.exit(main())
