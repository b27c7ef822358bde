"""scripts/bench/fashion_mnist_torch.py — PyTorch's side of the epoch-time
benchmarks: the same models, AdamW (lr 1e-3, cosine schedule), batch 128, the
same normalisation and data files as scripts/fashion_mnist_mlp.lua ("mlp": the
784-256-128-10 MLP) and scripts/fashion_mnist_cnn.lua ("cnn": two
Conv-BatchNorm-ReLU-MaxPool blocks, Linear 3136-128-10 with Dropout 0.25).
Prints "fm_epoch_s <best epoch seconds> s" (training only) and the test
accuracy it reached. Arguments: data folder, epochs, device ("cpu" or
"cuda"), model ("mlp" or "cnn"), autocast dtype ("none", "bfloat16" or
"float16": the forward and loss under torch.autocast, float16 with a
GradScaler on cuda, as the ember scripts' --amp), and "compile" to run the
model through torch.compile (the first epoch then includes compiling: ask for
two and the best is the second)."""
import gzip
import sys
import time

import numpy as np
import torch

ROOT = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
EPOCHS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
DEVICE = sys.argv[3] if len(sys.argv) > 3 else "cpu"
MODEL = sys.argv[4] if len(sys.argv) > 4 else "mlp"
AMP = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] != "none" else None
COMPILE = len(sys.argv) > 6 and sys.argv[6] == "compile"
nn = torch.nn


def idx(name):
    with gzip.open(f"{ROOT}/{name}", "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4)
    return torch.from_numpy(np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims).copy())


def prepare(images):
    x = (images.float() / 255 - 0.2860) / 0.3530
    return x.view(-1, 784) if MODEL == "mlp" else x.view(-1, 1, 28, 28)


def make_model():
    if MODEL == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))


def main():
    torch.manual_seed(1)
    xtr, ytr = idx("train-images-idx3-ubyte.gz"), idx("train-labels-idx1-ubyte.gz").long()
    xte, yte = idx("t10k-images-idx3-ubyte.gz"), idx("t10k-labels-idx1-ubyte.gz").long()
    model = make_model().to(DEVICE)
    fwd = torch.compile(model) if COMPILE else model
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    device_type = torch.device(DEVICE).type
    amp_dtype = getattr(torch, AMP) if AMP else torch.bfloat16
    scaler = torch.cuda.amp.GradScaler() if AMP == "float16" and device_type == "cuda" else None
    best = float("inf")
    for _ in range(EPOCHS):
        model.train()
        t0 = time.perf_counter()
        perm = torch.randperm(xtr.shape[0])
        for s in range(0, xtr.shape[0], 128):
            ix = perm[s:s + 128]
            x, y = prepare(xtr.index_select(0, ix)).to(DEVICE), ytr.index_select(0, ix).to(DEVICE)
            with torch.autocast(device_type, dtype=amp_dtype, enabled=AMP is not None):
                loss = crit(fwd(x), y)
            opt.zero_grad()
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
        if DEVICE != "cpu":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
        sched.step()
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(prepare(xte[s:s + 1000]).to(DEVICE)).argmax(1).cpu() for s in range(0, len(xte), 1000)])
        acc = (pred == yte).float().mean().item()
    print("fm_epoch_s %.4f s" % best)
    print("fm_acc_%d %.4f" % (EPOCHS, acc))


if __name__ == "__main__":
    main()
