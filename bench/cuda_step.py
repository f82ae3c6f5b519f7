#!/usr/bin/python3
"""A small CUDA training step, timed in the process, for bench/cuda_cost.sh.

Usage: cuda_step.py [--steps N] [--warmup W] [--blocks B] [--dim D]
                    [--batch B] [--seq S] [--history] [--device cpu]

Made for the CUDA stand-in (scripts/cuda-standin.sh): PyTorch's CUDA
build with its caching allocator, on a runtime that runs no kernel, so a
step costs what the CPU spends launching it, with no GPU to wait for:
the worst case for a tracer of the allocator. Net = embed (Linear),
B Blocks (LayerNorm, MultiheadAttention, LayerNorm, Linear up, GELU,
Linear down) and head (Linear); each step: forward, MSE loss, zero_grad,
backward, Adam (PyTorch's default, the foreach one on CUDA), on fixed
batches already on the device. W warm-up steps run first; then the start
handshake of tests/fixtures/mt_sync.py (with MT_GO set: "READY <pid>" and
wait for the file $MT_GO), so that a tracer attaches after warm-up and
before the timed steps; then N timed steps between two
torch.cuda.synchronize(). Output after them, one line:

    RESULT steps=<N> loop_s=<wall s> cpu_s=<process CPU s>
           ms_per_step= steps_per_s= allocs= frees= history=

allocs and frees: the caching allocator's own count over the timed steps
(memory_stats' allocation.all.allocated and .freed). --history turns on
PyTorch's in-process recorder, torch.cuda.memory._record_memory_history(
stacks="python"), before the warm-up; history= is then the number of
entries its trace gained over the timed steps (- without it). With MT_HOLD
set it then waits for the file $MT_HOLD before exiting, so that a tracer
can be stopped before the interpreter tears down.

--device cpu runs the same model, optimizer and batches on the CPU (one
intra-op thread, as on "cuda", the default), torch.cuda untouched, for
bench/dryrun.sh to set a dry run's step against; the RESULT line is the
same, with allocs=- frees=- (no caching allocator to count) and --history
refused.
"""

import argparse
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "fixtures"))
import mt_sync  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.down(self.act(self.up(self.norm2(x))))


class Net(nn.Module):
    def __init__(self, dim, heads, blocks, n_in, n_out):
        super().__init__()
        self.embed = nn.Linear(n_in, dim)
        self.stack = nn.ModuleList(Block(dim, heads) for _ in range(blocks))
        self.head = nn.Linear(dim, n_out)

    def forward(self, x):
        x = self.embed(x)
        for block in self.stack:
            x = block(x)
        return self.head(x)


def history_len():
    snap = torch.cuda.memory._snapshot()
    return sum(len(t) for t in snap["device_traces"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--history", action="store_true")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    a = ap.parse_args()
    cuda = a.device == "cuda"
    if a.history and not cuda:
        sys.exit("cuda_step.py: --history records the CUDA allocator only")

    torch.manual_seed(0)
    torch.set_num_threads(1)
    if cuda and not torch.cuda.is_available():
        sys.exit("cuda_step.py: no CUDA device")
    dev = torch.device("cuda", 0) if cuda else torch.device("cpu")
    # a no-op on the CPU, whose kernels return when done
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if a.history:
        torch.cuda.memory._record_memory_history(stacks="python")
    model = Net(a.dim, a.heads, a.blocks, 96, 40).to(dev)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    batches = [(torch.randn(a.batch, a.seq, 96, device=dev),
                torch.randn(a.batch, a.seq, 40, device=dev))
               for _ in range(4)]

    def step(i):
        x, y = batches[i % len(batches)]
        loss = (model(x) - y).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    for i in range(a.warmup):
        step(i)
    sync()

    h0 = history_len() if a.history else None
    s0 = torch.cuda.memory_stats(dev) if cuda else None
    mt_sync.start()
    c0 = time.process_time()
    t0 = time.perf_counter()
    for i in range(a.steps):
        step(i)
    sync()
    t1 = time.perf_counter()
    c1 = time.process_time()
    h1 = history_len() if a.history else None
    allocs = frees = "-"
    if cuda:
        s1 = torch.cuda.memory_stats(dev)
        allocs = (s1["allocation.all.allocated"] -
                  s0["allocation.all.allocated"])
        frees = s1["allocation.all.freed"] - s0["allocation.all.freed"]
    mt_sync.emit(f"RESULT steps={a.steps} loop_s={t1 - t0:.4f} "
                 f"cpu_s={c1 - c0:.4f} "
                 f"ms_per_step={1e3 * (t1 - t0) / a.steps:.3f} "
                 f"steps_per_s={a.steps / (t1 - t0):.2f} "
                 f"allocs={allocs} frees={frees} "
                 f"history={'-' if h0 is None else h1 - h0}")
    mt_sync.finish()


if __name__ == "__main__":
    main()
