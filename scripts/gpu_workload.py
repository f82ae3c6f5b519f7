#!/usr/bin/env python3
"""A small CUDA PyTorch training job for scripts/gpu-check.sh.

Trains an MLP for a few steps on cuda:0 and prints the caching allocator's
own figures at the end, so the trace can be compared with them:

    torch allocated=<bytes> reserved=<bytes> max_allocated=<bytes>

--oom then asks for far more memory than the GPU has and prints
"oom caught". Follows the MT_GO / MT_HOLD protocol of tests/fixtures.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests",
                                "fixtures"))
import mt_sync  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--oom", action="store_true")
    args = ap.parse_args()

    mt_sync.start()
    dev = torch.device("cuda:0")
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        x = torch.randn(256, 1024, device=dev)
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        mt_sync.emit(f"step={step} loss={loss.item():.4f}")
    torch.cuda.synchronize()
    mt_sync.emit(f"torch allocated={torch.cuda.memory_allocated()} "
                 f"reserved={torch.cuda.memory_reserved()} "
                 f"max_allocated={torch.cuda.max_memory_allocated()}")
    if args.oom:
        try:
            torch.empty(1 << 44, dtype=torch.uint8, device=dev)
        except torch.OutOfMemoryError:
            mt_sync.emit("oom caught")
    mt_sync.finish()


if __name__ == "__main__":
    main()
