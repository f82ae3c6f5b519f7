#!/usr/bin/python3
"""Small transformer language model trained on the CPU, for bench/run.sh.

Usage: workload_train.py [--batch B] [--seq S] [--d-model D] [--heads H]
                         [--ff F] [--layers L] [--vocab V]
                         [--warmup W] [--iters N]

Debian's python3 with torch 1.13.  The model is an embedding, an
nn.TransformerEncoder of L layers (batch_first, dropout 0.1), a LayerNorm
and a V-way head, trained with cross-entropy and Adam on random tokens
(seeded), one compute thread.  W warm-up iterations run first; then the
start handshake of tests/fixtures/mt_sync.py (with MT_GO set: print
"READY <pid>" and wait for the file $MT_GO), so that a tracer attaches
after warm-up and before the timed loop; then N timed iterations.  Output
after the loop, one line:

    RESULT iters=<N> loop_s=<wall s> cpu_s=<process CPU s> it_per_s=<N/loop_s>

and then, with MT_HOLD set, it waits for the file $MT_HOLD before exiting,
so that the tracer can be stopped before the interpreter tears down.
"""

import argparse
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "fixtures"))
import mt_sync  # noqa: E402


class TinyLM(nn.Module):
    def __init__(self, vocab, d_model, heads, ff, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1,
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, x):
        return self.head(self.norm(self.enc(self.emb(x))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=12)
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyLM(a.vocab, a.d_model, a.heads, a.ff, a.layers)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    # a few fixed batches, cycled: no data loading inside the loop
    batches = [(torch.randint(0, a.vocab, (a.batch, a.seq)),
                torch.randint(0, a.vocab, (a.batch, a.seq)))
               for _ in range(4)]

    def step(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad()
        out = model(x)
        loss = loss_fn(out.reshape(-1, a.vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    for i in range(a.warmup):
        step(i)

    mt_sync.start()
    c0 = time.process_time()
    t0 = time.perf_counter()
    for i in range(a.iters):
        loss = step(i)
    t1 = time.perf_counter()
    c1 = time.process_time()
    mt_sync.emit(f"RESULT iters={a.iters} loop_s={t1 - t0:.4f} "
                 f"cpu_s={c1 - c0:.4f} it_per_s={a.iters / (t1 - t0):.3f} "
                 f"loss={float(loss):.4f} threads={torch.get_num_threads()}")
    mt_sync.finish()


if __name__ == "__main__":
    main()
