#!/usr/bin/python3
"""BPF programs and uprobe links a process holds, with their run statistics.

Usage: bpfstats.py PID

Reads /proc/PID/fdinfo: every BPF program fd (prog_id, run_cnt and
run_time_ns, which the kernel counts only while the sysctl
kernel.bpf_stats_enabled is 1) and every perf link fd (the uprobe it
attached: file and offset, resolved to a dynamic symbol where one starts
there).  Output:

    prog id=<id> run_cnt=<n> run_time_ns=<ns>        one per program
    total progs=<n> run_cnt=<n> run_time_ns=<ns>
    link file=<path> offset=0x<hex> symbol=<name or ?> type=<uprobe|...>
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probecheck  # noqa: E402


def fdinfo(pid):
    d = f"/proc/{pid}/fdinfo"
    for fd in sorted(os.listdir(d), key=int):
        try:
            with open(os.path.join(d, fd)) as f:
                text = f.read()
        except OSError:
            continue
        yield dict(re.findall(r"^(\w+):\s*(.*)$", text, re.M))


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    progs, links = {}, []
    for info in fdinfo(sys.argv[1]):
        if "link_type" in info:
            links.append(info)
        elif "prog_tag" in info and "prog_id" in info:
            progs[info["prog_id"]] = info
    cnt = ns = 0
    for pid_, p in sorted(progs.items(), key=lambda kv: int(kv[0])):
        c, t = int(p.get("run_cnt", 0)), int(p.get("run_time_ns", 0))
        cnt, ns = cnt + c, ns + t
        print(f"prog id={pid_} run_cnt={c} run_time_ns={t}")
    print(f"total progs={len(progs)} run_cnt={cnt} run_time_ns={ns}")
    syms = {}
    for link in links:
        name = re.sub(r"^/proc/\d+/root", "", link.get("name", "?"))
        off = int(link.get("offset", "0"), 16)
        if name not in syms:
            try:
                syms[name] = probecheck.dynsym_offsets(name)
            except (OSError, ValueError, IndexError):
                syms[name] = {}
        print(f"link file={name} offset=0x{off:x} "
              f"symbol={syms[name].get(off, '?')} "
              f"type={link.get('event_type', link.get('link_type'))}")


if __name__ == "__main__":
    main()
