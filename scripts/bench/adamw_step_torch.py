"""scripts/bench/adamw_step_torch.py — PyTorch's side of scripts/bench/adamw_step.lua:
one torch.optim.AdamW step over GPT-2 small's parameter list on the GPU, fused and
foreach, timed the same way (wall time of n steps, synchronised at the end, best of 5).
Prints "name value unit"."""
import time

import torch


def gpt2_shapes():
    d, v, ctx, layers = 768, 50257, 1024, 12
    s = [(v, d), (ctx, d)]
    for _ in range(layers):
        s += [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]
    s += [(d,), (d,)]
    return s


def step_ms(**kind):
    torch.manual_seed(0)
    ps = []
    for shape in gpt2_shapes():
        p = (torch.randn(shape, device="cuda") * 0.02).requires_grad_()
        p.grad = torch.randn(shape, device="cuda") * 1e-3
        ps.append(p)
    opt = torch.optim.AdamW(ps, lr=3e-4, weight_decay=0.1, **kind)
    for _ in range(3):
        opt.step()
    torch.cuda.synchronize()
    n, best = 20, float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            opt.step()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e3


def main():
    print(f"adamw_step_gpu_ms {step_ms(fused=True):.6g} ms")
    print(f"adamw_step_foreach_gpu_ms {step_ms(foreach=True):.6g} ms")
    print(f"adamw_step_per_param_gpu_ms {step_ms(foreach=False):.6g} ms")


if __name__ == "__main__":
    main()
