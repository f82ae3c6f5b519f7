#!/usr/bin/python3
"""Demo workload for `make demo`: train a tiny language model on the CPU.

Usage: demo_train.py [--steps N]      (Debian's python3 with torch 1.13)

An embedding, a two-layer nn.TransformerEncoder (d_model 64) and a linear
LM head, trained with Adam to predict the next token of random sequences,
for N steps (default 20), on one thread.  Prints "step=<i> loss=<float>"
after each step and "done steps=<N>" at the end.
"""

import argparse
import time

import torch
from torch import nn

VOCAB = 2000
D_MODEL = 64
N_HEADS = 4
FF_DIM = 256
N_LAYERS = 2
BATCH = 32
SEQ = 192


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        layer = nn.TransformerEncoderLayer(D_MODEL, N_HEADS, FF_DIM,
                                           dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=N_LAYERS)
        self.lm_head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens, mask):
        return self.lm_head(self.encoder(self.embed(tokens), mask=mask))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    if args.steps < 0:
        ap.error("--steps must be >= 0")

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    loss_fn = nn.CrossEntropyLoss()
    # Causal: each position may only attend to itself and earlier ones.
    mask = torch.triu(torch.full((SEQ, SEQ), float("-inf")), diagonal=1)

    start = time.monotonic()
    for step in range(args.steps):
        tokens = torch.randint(VOCAB, (BATCH, SEQ + 1))
        logits = model(tokens[:, :-1], mask)
        loss = loss_fn(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step={step} loss={loss.item():.4f} "
              f"elapsed={time.monotonic() - start:.2f}s", flush=True)
    print(f"done steps={args.steps}", flush=True)


if __name__ == "__main__":
    main()
