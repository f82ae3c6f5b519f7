"""What the reporters of bench/ share: reading the files their scripts
write, and writing the tables and figures of bench/RESULTS.md.

A reporter is run as a script from bench/, so `import lib` finds this
file; bench/lib.sh is its counterpart for the shell scripts.
"""

import csv
import json
import os
import statistics


def read_meta(path):
    """META: its key=value lines as a dict (the value may hold '=')."""
    with open(path) as f:
        return dict(line.rstrip("\n").split("=", 1) for line in f
                    if "=" in line)


def read_tsv(path):
    """A tab-separated table under a header line: a dict a row.  Quotes
    are kept as they are: the scripts write no quoting."""
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t",
                                   quoting=csv.QUOTE_NONE))


def by_mode_rep(rows):
    """Rows with a mode and a repetition as {mode: {rep: row}}."""
    runs = {}
    for row in rows:
        runs.setdefault(row["mode"], {})[int(row["rep"])] = row
    return runs


def med_range(vs, fmt, unit="", sep=" to "):
    """The median of vs, then its min and max in brackets, each through
    fmt; unit after the median."""
    return (f"{fmt(statistics.median(vs))}{unit} "
            f"({fmt(min(vs))}{sep}{fmt(max(vs))})")


def duration(secs):
    """Whole seconds as minutes and seconds: '3 min 7 s'."""
    return f"{secs // 60} min {secs % 60} s"


def row(cells):
    """A row of a Markdown table."""
    return "| " + " | ".join(cells) + " |"


def head(*titles):
    """The first two lines of a Markdown table: its titles and the line
    under them, as one string."""
    return row(titles) + "\n|" + "---|" * len(titles)


def _progs(path):
    """{name: (type, run_cnt, run_time_ns)} of bpftool's JSON, a line a
    program"""
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                p = json.loads(line)
                out[p["name"]] = (p["type"], p.get("run_cnt", 0),
                                  p.get("run_time_ns", 0))
    return out


def bpf_runs(folder):
    """What the tracer's BPF programs did between progs0.json and
    progs1.json in folder (bench/lib.sh's prog_stats, bpf_stats on):
    traps (uprobe programs' runs but mt_exit's), rets (mt_exit's: return
    probes), bpf_ns (every program's own time) and by (runs by program)."""
    p0 = _progs(os.path.join(folder, "progs0.json"))
    p1 = _progs(os.path.join(folder, "progs1.json"))
    d = {n: (t, c - p0.get(n, (t, 0, 0))[1], ns - p0.get(n, (t, 0, 0))[2])
         for n, (t, c, ns) in p1.items()}
    return {
        "traps": sum(c for n, (t, c, _) in d.items()
                     if t == "kprobe" and n != "mt_exit"),
        "rets": d.get("mt_exit", ("kprobe", 0, 0))[1],
        "bpf_ns": sum(ns for _, _, ns in d.values()),
        "by": {n: c for n, (_, c, _) in d.items() if c},
    }

