"""The loop of bench/versions.sh: small CPU tensor additions, timed here.

Usage: versions_loop.py ITERS

2,000 untimed iterations, then ITERS timed; prints us_per_iter=<µs>.
Each iteration allocates the sum's tensor and frees the last one.
"""

import sys
import time

import torch

torch.set_num_threads(1)
x = torch.ones(16)
for _ in range(2000):
    y = x + 1
n = int(sys.argv[1])
t = time.perf_counter()
for _ in range(n):
    y = x + 1
print(f"us_per_iter={(time.perf_counter() - t) / n * 1e6:.3f}", flush=True)
