"""scripts/bench/attention_torch.py — PyTorch's side of the attention rows
(scripts/bench/attention.lua): causal self-attention on one sequence of T
tokens, forward + backward, best of 3, and the growth of the process's peak
RSS. PyTorch 1.13 has no scaled_dot_product_attention, so its side is the
composed math (softmax of masked q k^T / sqrt(D), times v), which holds the
T x T matrices; a PyTorch 2.x runs its fused op instead.
Arguments: T, D. Prints "sdpa<T>_fb_ms <ms> ms" and "sdpa<T>_peak_mb <MB> MB"."""
import math
import sys
import time

import torch

T = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
D = int(sys.argv[2]) if len(sys.argv) > 2 else 64


def peak_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])


def attention(q, k, v):
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    return torch.softmax(s.masked_fill(mask, float("-inf")), -1) @ v


def main():
    q, k, v = (torch.randn(1, 1, T, D, requires_grad=True) for _ in range(3))
    g = torch.randn(1, 1, T, D)
    before = peak_kb()
    best = float("inf")
    for _ in range(3):
        q.grad = k.grad = v.grad = None
        t0 = time.perf_counter()
        attention(q, k, v).backward(g)
        best = min(best, time.perf_counter() - t0)
    print("sdpa%d_fb_ms %.6g ms" % (T, best * 1e3))
    print("sdpa%d_peak_mb %.6g MB" % (T, (peak_kb() - before) / 1024))


if __name__ == "__main__":
    main()
