#!/usr/bin/python3
"""Time inside memtrace-bpf's BPF programs per run, on W2's loop.

Usage: bpfcost.py [--reps N] [--iters N] [--mt PATH]... [-- TOOL-ARGS...]

Runs bench/workload_train.py with W2's model (bench/run.sh) N times; each
time memtrace-bpf TOOL-ARGS (default: -q) is attached after the warm-up,
the kernel's BPF run statistics are switched on for the timed loop only
(BPF_ENABLE_STATS: an fd held by this script, so that another user of the
sysctl kernel.bpf_stats_enabled cannot switch them off meanwhile), and the
run_cnt and run_time_ns of each of the tool's programs are read from its
/proc/PID/fdinfo before it is stopped.  These figures count the programs
alone (not the trap or the uprobe dispatch), so they hardly move with the
load of a shared machine.  Several --mt binaries (a change's before and
after) run interleaved, one of each a repetition.  Output, one line a program and repetition,
then per program the median and the spread:

    mt=<path> rep=<r> prog=<name> run_cnt=<n> ns_per_run=<ns>
    mt=<path> prog=<name> ns_per_run median=<ns> min=<ns> max=<ns> runs=<n>
"""

import argparse
import ctypes
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W2 = ["--batch", "2", "--seq", "16", "--d-model", "64", "--ff", "256",
      "--layers", "4"]
BLAS = "/usr/lib/x86_64-linux-gnu/openblas-serial"
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0


def enable_stats():
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(16)  # union bpf_attr: u32 type
    fd = libc.syscall(321, BPF_ENABLE_STATS, attr, 16)  # __NR_bpf
    if fd < 0:
        raise SystemExit("bpfcost: BPF_ENABLE_STATS: "
                         + os.strerror(ctypes.get_errno()))
    return fd


def wait_line(path, regex, secs, proc=None):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                for line in f:
                    m = re.search(regex, line)
                    if m:
                        return m
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"bpfcost: no /{regex}/ in {path} after {secs} s")


def prog_stats(pid):
    out = {}
    d = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                info = dict(re.findall(r"^(\w+):\s*(.*)$", f.read(), re.M))
        except OSError:
            continue
        if "run_cnt" in info and "prog_id" in info:
            out[info["prog_id"]] = (int(info.get("run_cnt", 0)),
                                    int(info.get("run_time_ns", 0)))
    return out


def prog_name(pid_):
    r = subprocess.run(["bpftool", "-j", "prog", "show", "id", pid_],
                       capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["name"]
    except (ValueError, KeyError):
        return "id" + pid_


def one(tool, a, work, py):
    go, hold = os.path.join(work, "go"), os.path.join(work, "hold")
    for p in (go, hold):
        if os.path.exists(p):
            os.unlink(p)
    env = dict(os.environ, MT_GO=go, MT_HOLD=hold, LD_LIBRARY_PATH=BLAS)
    wl_out = os.path.join(work, "wl.out")
    with open(wl_out, "w") as o:
        wl = subprocess.Popen([py, os.path.join(ROOT, "bench",
                                                "workload_train.py")] + W2
                              + ["--iters", str(a.iters)], stdout=o,
                              stderr=subprocess.DEVNULL, env=env)
    pid = wait_line(wl_out, r"^READY (\d+)", 120, wl).group(1)
    mt_err = os.path.join(work, "mt.err")
    with open(mt_err, "w") as e:
        mt = subprocess.Popen([tool] + a.args + ["-p", pid],
                              stdout=subprocess.DEVNULL, stderr=e)
    wait_line(mt_err, rf"^# attach pid={pid} lib=.*libc10", 60, mt)
    time.sleep(0.5)
    before = prog_stats(mt.pid)
    open(go, "w").close()
    wait_line(wl_out, r"^RESULT ", 600, wl)
    after = prog_stats(mt.pid)
    names = {p: prog_name(p) for p in after}
    mt.send_signal(signal.SIGINT)
    if mt.wait(60) != 0:
        raise SystemExit(f"bpfcost: memtrace-bpf exited {mt.returncode}")
    open(hold, "w").close()
    wl.wait(60)
    res = {}
    for pid_, (c, t) in after.items():
        c0, t0 = before.get(pid_, (0, 0))
        if c - c0 > 0:
            res[names[pid_]] = (c - c0, t - t0)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--mt", action="append")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    a.args = a.args or ["-q"]
    a.mt = a.mt or [os.path.join(ROOT, "memtrace-bpf")]
    fd = enable_stats()
    per = {}
    with tempfile.TemporaryDirectory(prefix="bpfcost.") as work:
        for r in range(1, a.reps + 1):
            for tool in a.mt:
                res = one(tool, a, work, "/usr/bin/python3")
                for name, (c, t) in sorted(res.items()):
                    print(f"mt={tool} rep={r} prog={name} run_cnt={c} "
                          f"ns_per_run={t / c:.0f}", flush=True)
                    per.setdefault((tool, name), []).append((c, t / c))
    os.close(fd)
    for (tool, name), v in per.items():
        ns = [x[1] for x in v]
        print(f"mt={tool} prog={name} ns_per_run "
              f"median={statistics.median(ns):.0f} min={min(ns):.0f} "
              f"max={max(ns):.0f} runs={v[0][0]}")


if __name__ == "__main__":
    sys.exit(main())
