#!/usr/bin/python3
"""The blocks live at one trace's peak and not at the other's.

Usage: peak_diff.py NAME_A SCRIPT_A KIND_A NAME_B SCRIPT_B KIND_B

SCRIPT_x is `memtrace-bpf script -i FILE --no-stack` output, KIND_x the
allocating event replayed from it (c10:alloc or c10:cpu_alloc; its free
is the same name with "free"). Each allocation is rounded up to 512
bytes as the caching allocator rounds it (a size of 0 takes nothing);
the peak is the first moment the rounded live bytes reach their maximum,
as `memtrace-bpf estimate` reports peak_allocated. Prints the two peaks
and then, as rows of a Markdown table, the blocks (rounded size, phase,
module) live at one peak and not at the other, with their count and
bytes: "| only at A's peak | n | size | phase | module | bytes |".
"""

import collections
import re
import sys

EVENT = re.compile(r" (c10:\w+): ptr=(\S+) size=(\d+) .*?phase=(\S+) module=(\S+)")


def peak(path, kind):
    free = kind.replace("alloc", "free")
    live, cur, best, at_best = {}, 0, -1, {}
    with open(path) as f:
        for line in f:
            m = EVENT.search(line)
            if not m:
                continue
            ev, ptr, size, phase, module = m.groups()
            size = int(size)
            if ev == kind and size:
                size = (size + 511) // 512 * 512
                live[ptr] = (size, phase, module)
                cur += size
                if cur > best:
                    best, at_best = cur, dict(live)
            elif ev == free and ptr in live:
                cur -= live.pop(ptr)[0]
    return best, collections.Counter(at_best.values())


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__.split("\n\n")[1])
    name_a, path_a, kind_a, name_b, path_b, kind_b = sys.argv[1:]
    peak_a, live_a = peak(path_a, kind_a)
    peak_b, live_b = peak(path_b, kind_b)
    print(f"peak {name_a}={peak_a} {name_b}={peak_b}")
    for name, only in ((name_a, live_a - live_b), (name_b, live_b - live_a)):
        for (size, phase, module), n in sorted(only.items()):
            print(f"| only at {name}'s peak | {n} | {size} | {phase} | "
                  f"{module} | {n * size} |")


if __name__ == "__main__":
    main()
