"""half_ops_torch.py — scripts/bench/half_ops.lua in PyTorch (CPU, 2 threads, as ember's pool
on this machine): bfloat16 [4096, 512], best of 20, one "name ms" line each."""
import time

import torch

torch.set_num_threads(2)
torch.manual_seed(1)
x = torch.randn(4096, 512).bfloat16()
y = torch.randn(4096, 512).bfloat16()


def best(f):
    b = 1e9
    for _ in range(20):
        t0 = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t0)
    return b * 1e3


for name, f in [("mul", lambda: x * y), ("add", lambda: x + y), ("relu", lambda: x.relu()), ("neg", lambda: -x),
                ("tanh", lambda: x.tanh()), ("exp", lambda: x.exp()),
                ("sum_last_dim", lambda: x.sum(1)), ("sum_first_dim", lambda: x.sum(0))]:
    print("bf16_%s_ms %.3f" % (name, best(f)))
