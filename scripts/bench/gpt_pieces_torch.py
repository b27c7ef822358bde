"""gpt_pieces_torch.py — PyTorch's side of gpt_pieces.lua: the char GPT
step's elementwise pieces on the step's shapes, best of 30, the same
"name ms" lines (token ids 0-based here, 1-based in ember)."""
import time

import torch
import torch.nn.functional as F


def best(n, f):
    b = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t)
    return b


torch.manual_seed(1)
x = torch.randn(32, 128, 512)
g = torch.randn(32, 128, 512)
xr = x.clone().requires_grad_()
W = torch.randn(65, 128, requires_grad=True)
idx = torch.randint(0, 65, (32, 128))
gy = torch.randn(32, 128, 128)


def gelu_fwd():
    with torch.no_grad():
        F.gelu(x)


def gelu_fwd_bwd():
    F.gelu(xr).backward(g)
    xr.grad = None


def gelu_tanh_fwd():
    with torch.no_grad():
        F.gelu(x, approximate="tanh")


def gelu_tanh_fwd_bwd():
    F.gelu(xr, approximate="tanh").backward(g)
    xr.grad = None


def embedding_fwd_bwd():
    F.embedding(idx, W).backward(gy)
    W.grad = None


for name, f in (("gelu_fwd", gelu_fwd), ("gelu_fwd_bwd", gelu_fwd_bwd), ("gelu_tanh_fwd", gelu_tanh_fwd),
                ("gelu_tanh_fwd_bwd", gelu_tanh_fwd_bwd), ("embedding_fwd_bwd", embedding_fwd_bwd)):
    print("%s_ms %.3f" % (name, best(30, f) * 1e3))
