"""PyTorch's side of scripts/bench/checkpoint_memory.lua: the same training step (a stack
of nn.TransformerEncoderLayer, MSE to a random target, AdamW) without and with each layer
checkpointed (torch.utils.checkpoint, use_reentrant=False), each in a process of its own,
printing the peak memory of the timed steps (after one warm-up step) and the best step
time, in the same lines as ember's script.

    scripts/bench/torch-python scripts/bench/checkpoint_memory_torch.py [--device cpu|cuda]
        [--layers 12] [--batch 8] [--seq 128] [--d-model 256] [--heads 4] [--ff 1024] [--steps 3]
"""
import argparse
import subprocess
import sys
import time

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def side(a, mode):
    cuda = a.device != "cpu"
    torch.manual_seed(0)
    layers = [nn.TransformerEncoderLayer(a.d_model, a.heads, dim_feedforward=a.ff, dropout=0.1,
                                         batch_first=True) for _ in range(a.layers)]
    model = nn.Sequential(*layers).to(a.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(a.batch, a.seq, a.d_model, device=a.device)
    target = torch.randn(a.batch, a.seq, a.d_model, device=a.device)

    def step():
        opt.zero_grad()
        h = x
        for layer in layers:
            h = checkpoint(layer, h, use_reentrant=False) if mode == "checkpoint" else layer(h)
        loss = (h - target).pow(2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    loss = step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() / 2**20
    else:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = status_kb("VmRSS") / 1024
    best = float("inf")
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    peak = torch.cuda.max_memory_allocated() / 2**20 if cuda else status_kb("VmHWM") / 1024
    print(f"{mode:<10s} peak_mb={peak:.1f} before_step_mb={base:.1f} step_ms={best * 1000:.1f} loss={loss:.6f}",
          flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--d-model", dest="d_model", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=1024)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--mode", default=None)
    a = p.parse_args()
    if a.mode:
        side(a, a.mode)
        return
    print(f"checkpoint_memory_torch (PyTorch {torch.__version__}, {torch.get_num_threads()} threads): "
          f"{a.layers} x TransformerEncoderLayer(d_model {a.d_model}, {a.heads} heads, ff {a.ff}, dropout 0.1), "
          f"batch {a.batch} x seq {a.seq}, AdamW, device {a.device}; peak memory "
          f"{'VmHWM' if a.device == 'cpu' else 'max_memory_allocated'}", flush=True)
    peaks, times = {}, {}
    for mode in ("plain", "checkpoint"):
        args = [sys.executable, sys.argv[0]] + [s for s in sys.argv[1:]] + ["--mode", mode]
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
        sys.stdout.write(out)
        peaks[mode] = float(out.split("peak_mb=")[1].split()[0])
        times[mode] = float(out.split("step_ms=")[1].split()[0])
    print(f"checkpointed / plain: peak {peaks['checkpoint'] / peaks['plain']:.2f}, "
          f"step time {times['checkpoint'] / times['plain']:.2f}")


if __name__ == "__main__":
    main()
