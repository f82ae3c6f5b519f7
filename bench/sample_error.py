#!/usr/bin/python3
"""The section of bench/RESULTS.md that bench/sample_error.sh writes.

Usage: sample_error.py META RUNS

META: key=value lines (date, cores, tool, reps, sample, w1_args, w2_args,
secs).  RUNS: tab-separated workload, rep, the full trace's --keys output,
the sampled trace's (both of the same run).  Per module, the bytes
allocated (its `# module` lines added over phases); the error of the
sampled estimate against the full figure, over the modules holding more
than 1 % of the bytes; and whether the totals (`# event`, `# device`
lines) agree to the byte.
"""

import statistics
import sys

import lib

SHARE = 0.01  # modules below this share of the bytes are not judged


def keys(path):
    """per-module bytes allocated, the exact totals, the '# sample' line"""
    mods, totals, sample = {}, [], {}
    for line in open(path):
        if line.startswith("# module "):
            f = dict(kv.split("=", 1) for kv in line.split()[2:]
                     if "=" in kv)
            mods[f["module"]] = (mods.get(f["module"], 0)
                                 + int(f["bytes_allocated"]))
        elif line.startswith(("# event ", "# device ")):
            totals.append(" ".join(w for w in line.split()
                                   if not w.startswith("pid=")))
        elif line.startswith("# sample "):
            sample = dict(kv.split("=", 1) for kv in line.split()[2:])
    return mods, sorted(totals), sample


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    meta = lib.read_meta(sys.argv[1])
    rows = {}
    for line in open(sys.argv[2]):
        w, r, full, smp = line.rstrip("\n").split("\t")
        fm, ft, _ = keys(full)
        sm, st, ss = keys(smp)
        total = sum(fm.values())
        errs = {m: (sm.get(m, 0) - b) / b for m, b in fm.items()
                if total and b > SHARE * total}
        rows.setdefault(w, []).append({
            "errs": errs, "same": ft == st and bool(ft),
            "allocs": int(ss.get("allocs", 0)),
            "sampled": int(ss.get("sampled", 0)),
            "judged": sum(fm[m] for m in errs) / total if total else 0,
            "nmods": len(errs)})

    out = []
    put = out.append
    put("## Sampling error (W1, W2)")
    put("")
    put(f"Measured {meta['date']} by `bench/sample_error.sh` "
        f"({meta['reps']} repetitions a workload, "
        f"{lib.duration(int(meta['secs']))}, "
        f"{meta['cores']} cores); {meta['tool']}. Each run is traced twice "
        "at once, `-q --keys` and `-q --keys --sample-bytes "
        f"{meta['sample']}`, so that both see the same allocations. Error: "
        "a module's bytes allocated (its `# module` lines over its phases) "
        "in the sampled trace against the full one, over the modules "
        f"holding more than {SHARE:.0%} of the bytes. W1 = "
        f"`{meta['w1_args']}`, W2 = `{meta['w2_args']}`.")
    put("")
    put(lib.head("workload", "stacks walked",
                 "modules judged (their share of the bytes)",
                 "max \\|error\\| per run, median (min–max)",
                 "mean \\|error\\|", "totals equal"))
    for w in sorted(rows):
        v = rows[w]
        mx = [max((abs(e) for e in x["errs"].values()), default=0)
              for x in v]
        mean = statistics.mean(abs(e) for x in v
                               for e in x["errs"].values()) if any(
            x["errs"] for x in v) else 0
        walked = ", ".join(f"{x['sampled']:,} of {x['allocs']:,}"
                           for x in v)
        nm = ", ".join(f"{x['nmods']} ({x['judged']:.0%})" for x in v)
        put(f"| {w} | {walked} | {nm} | {statistics.median(mx):.1%} "
            f"({min(mx):.1%}–{max(mx):.1%}) | {mean:.1%} | "
            f"{'yes' if all(x['same'] for x in v) else 'NO'} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
