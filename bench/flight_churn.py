#!/usr/bin/python3
"""A high event rate for bench/flight_rss.sh: small CPU tensors made and
freed as fast as the interpreter can, beside a few long-lived ones.

Usage: flight_churn.py [--seconds S] [--every E] [--keep K] [--rate R]

Debian's python3 with torch 1.13, one compute thread.  The start
handshake of tests/fixtures/mt_sync.py first (with MT_GO set: print
"READY <pid>", wait for the file $MT_GO); then K long-lived tensors
(1 MiB each, alive to the end) are made, and, for S seconds (0: until
killed), a loop of torch.empty() of 4 to 64 floats, each freed at once:
one allocation and
one free (two allocator events, c10's New and Delete) an iteration, a
quarter of them kept one iteration longer so that frees do not always
follow their allocation.  With R > 0, the loop sleeps between batches of
1,024 allocations so as to make about R events a second (R / 2
allocations).  Every E seconds a line

    RATE t_s=<s since go> allocs=<since go> allocs_per_s=<over the last E s>

and at the end "DONE allocs=<N> secs=<s>".
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "fixtures"))
import mt_sync  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--every", type=float, default=10)
    ap.add_argument("--keep", type=int, default=4)
    ap.add_argument("--rate", type=float, default=0)
    a = ap.parse_args()
    torch.set_num_threads(1)
    sizes = [4, 8, 16, 32, 64, 24, 12, 48]
    mt_sync.start()
    # made after the go, so that the tracer sees them made
    kept = [torch.ones(1 << 18) for _ in range(a.keep)]  # noqa: F841
    t0 = last_t = time.monotonic()
    n = last_n = 0
    prev = None
    empty = torch.empty
    while True:
        # 1,024 allocations between clock reads
        for i in range(1024):
            x = empty(sizes[i & 7])
            if i & 3 == 0:
                prev = x  # the previous one kept goes now
            del x
        n += 1024
        now = time.monotonic()
        if a.rate > 0:
            ahead = t0 + n / (a.rate / 2) - now
            if ahead > 0:
                time.sleep(ahead)
                now = time.monotonic()
        if now - last_t >= a.every:
            mt_sync.emit(f"RATE t_s={now - t0:.1f} allocs={n} "
                         f"allocs_per_s={(n - last_n) / (now - last_t):.0f}")
            last_t, last_n = now, n
        if a.seconds and now - t0 >= a.seconds:
            break
    del prev
    mt_sync.emit(f"DONE allocs={n} secs={time.monotonic() - t0:.3f}")
    mt_sync.finish()


if __name__ == "__main__":
    main()
