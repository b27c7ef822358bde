"""scripts/bench/fashion_mnist_torch.py — PyTorch's side of the epoch-time
benchmark: the same 784-256-128-10 MLP, AdamW (lr 1e-3), batch 128, the same
normalisation and data files as scripts/fashion_mnist_mlp.lua. Prints
"fm_epoch_s <best epoch seconds> s" and the test accuracy it reached.
Arguments: data folder, epochs, device ("cpu" or "cuda")."""
import gzip
import sys
import time

import numpy as np
import torch

ROOT = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
EPOCHS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
DEVICE = sys.argv[3] if len(sys.argv) > 3 else "cpu"


def idx(name):
    with gzip.open(f"{ROOT}/{name}", "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4)
    return torch.from_numpy(np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims).copy())


def prepare(images):
    return ((images.float() / 255 - 0.2860) / 0.3530).view(-1, 784)


def main():
    torch.manual_seed(1)
    xtr, ytr = idx("train-images-idx3-ubyte.gz"), idx("train-labels-idx1-ubyte.gz").long()
    xte, yte = idx("t10k-images-idx3-ubyte.gz"), idx("t10k-labels-idx1-ubyte.gz").long()
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(DEVICE)
    crit = torch.nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    best = float("inf")
    for _ in range(EPOCHS):
        t0 = time.perf_counter()
        perm = torch.randperm(xtr.shape[0])
        for s in range(0, xtr.shape[0], 128):
            ix = perm[s:s + 128]
            x, y = prepare(xtr.index_select(0, ix)).to(DEVICE), ytr.index_select(0, ix).to(DEVICE)
            loss = crit(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if DEVICE != "cpu":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
        sched.step()
    with torch.no_grad():
        acc = (model(prepare(xte).to(DEVICE)).argmax(1).cpu() == yte).float().mean().item()
    print("fm_epoch_s %.4f s" % best)
    print("fm_acc_%d %.4f" % (EPOCHS, acc))


if __name__ == "__main__":
    main()
