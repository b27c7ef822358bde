"""debug_tools_torch.py [steps] — PyTorch's side of scripts/bench/debug_tools.lua: the same
TransformerEncoderLayer step plain and under torch.autograd.detect_anomaly, best of 3
rounds, the modes taking turns."""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
torch.manual_seed(0)
d, T, B = 128, 64, 16
layer = nn.TransformerEncoderLayer(d, 4, 4 * d, 0.0, batch_first=True)
head = nn.Linear(d, 65)
opt = torch.optim.AdamW(list(layer.parameters()) + list(head.parameters()), 1e-3)
x = torch.randn(B, T, d)
y = torch.randint(0, 65, (B * T,))


def step():
    opt.zero_grad()
    loss = F.cross_entropy(head(layer(x)).reshape(B * T, 65), y)
    loss.backward()
    opt.step()


for _ in range(3):
    step()
best = {}
for _ in range(3):
    for mode in ("plain", "detect_anomaly"):
        torch.autograd.set_detect_anomaly(mode == "detect_anomaly")
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        dt = (time.perf_counter() - t0) / steps
        torch.autograd.set_detect_anomaly(False)
        best[mode] = min(best.get(mode, 1e9), dt)
for mode in ("plain", "detect_anomaly"):
    print("debug_step_ms %-15s %8.3f  (%.2f x plain)" % (mode, best[mode] * 1e3, best[mode] / best["plain"]))
