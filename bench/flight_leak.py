#!/usr/bin/python3
"""A training loop for bench/flight_leaks.sh: Linear + SGD on the CPU,
one step every --step-ms, keeping --leak bytes a step (0: none).

Usage: flight_leak.py --seconds S [--step-ms MS] [--leak BYTES]

Debian's python3 with torch 1.13, one compute thread.  The start
handshake of tests/fixtures/mt_sync.py first (with MT_GO set: print
"READY <pid>", wait for the file $MT_GO); then steps for S seconds, and
"DONE steps=<N> kept=<bytes>" at the end.  The line that keeps is
marked "# the leak".
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
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--step-ms", type=float, default=20)
    ap.add_argument("--leak", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 64))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)
    keep = []
    mt_sync.start()
    steps = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        if args.leak:
            keep.append(torch.ones(args.leak // 4))  # the leak
        steps += 1
        time.sleep(args.step_ms / 1000)
    print(f"DONE steps={steps} kept={len(keep) * args.leak}", flush=True)


if __name__ == "__main__":
    main()
