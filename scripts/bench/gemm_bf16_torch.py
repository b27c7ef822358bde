"""scripts/bench/gemm_bf16_torch.py — PyTorch's side of scripts/bench/gemm_bf16.lua
(the same shapes, best of 20 calls after a warm-up, PyTorch's default CPU threads):
matmul [512,1024] @ [1024,1024] in bfloat16, float16 and float32, and a bfloat16
linear layer's forward and backward at x [4096,128], W [512,128], bias (the
gradients of x, W and bias from a given output gradient)."""
import time

import torch
import torch.nn.functional as F


def ms(f):
    f()
    best = float("inf")
    for _ in range(20):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main():
    torch.manual_seed(0)
    for name, dt in (("bfloat16", torch.bfloat16), ("float16", torch.float16), ("float32", torch.float32)):
        a, b = torch.randn(512, 1024).to(dt), torch.randn(1024, 1024).to(dt)
        try:
            print("matmul_512x1024x1024_%s_ms %.4g ms" % (name, ms(lambda: a @ b)))
        except RuntimeError as e:   # float16 matmul on the CPU: not in PyTorch 1.13
            print("matmul_512x1024x1024_%s_ms n/a (%s)" % (name, str(e).split("\n")[0]))
    x = torch.randn(4096, 128, dtype=torch.bfloat16, requires_grad=True)
    w = (torch.randn(512, 128) / 128 ** 0.5).to(torch.bfloat16).requires_grad_()
    bias = torch.zeros(512, dtype=torch.bfloat16, requires_grad=True)
    gy = torch.randn(4096, 512, dtype=torch.bfloat16)

    def step():
        return torch.autograd.grad(F.linear(x, w, bias), (x, w, bias), gy)

    print("linear_4096x128x512_bf16_fwd_bwd_ms %.4g ms" % ms(step))


if __name__ == "__main__":
    main()
