"""scripts/bench/torch_ops.py — PyTorch's side of the benchmark table.

Runs the same measurements as ops.lua, the same way (best of several
repeats), and prints "name value unit" lines."""
import time

import torch


def best(repeats, fn):
    b = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t0)
    return b


def main():
    a, b = torch.randn(16), torch.randn(16)
    n = 200000

    def loop():
        c = None
        for _ in range(n):
            c = a + b
        return c

    loop()
    print("op_overhead_us %.6g us/op" % (best(5, loop) / n * 1e6))

    a = torch.randn(16, requires_grad=True)
    b = torch.randn(16, requires_grad=True)

    def loop_grad():
        c = None
        for _ in range(n):
            c = a * b
        return c

    loop_grad()
    print("op_autograd_us %.6g us/op" % (best(5, loop_grad) / n * 1e6))

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    a.matmul(b)
    t = best(20, lambda: a.matmul(b))
    print("matmul1024_gflops %.6g GFLOP/s" % (2 * 1024 ** 3 / t / 1e9))

    n = 16 * 1024 * 1024
    a, b = torch.randn(n), torch.randn(n)
    a + b
    t = best(10, lambda: a + b)
    print("add16m_gbps %.6g GB/s" % (3 * 4 * n / t / 1e9))

    # conv2d forward + backward on [128, 32, 14, 14] -> 64 channels, 3x3, padding 1
    x = torch.randn(128, 32, 14, 14, requires_grad=True)
    w = torch.randn(64, 32, 3, 3, requires_grad=True)
    bias = torch.randn(64, requires_grad=True)
    gy = torch.randn(128, 64, 14, 14)

    def step():
        x.grad = w.grad = bias.grad = None
        torch.nn.functional.conv2d(x, w, bias, 1, 1).backward(gy)

    step()
    print("conv2d_fb_ms %.6g ms" % (best(10, step) * 1e3))

    # sum over a short last dim: [65536, 3] -> [65536]
    x = torch.randn(65536, 3)
    x.sum(-1)
    print("sum_rows3_us %.6g us" % (best(20, lambda: x.sum(-1)) * 1e6))

    # a transposed [1024, 1024] float32 matrix made contiguous
    xt = torch.randn(1024, 1024).t()
    xt.contiguous()
    print("transpose_copy_ms %.6g ms" % (best(20, lambda: xt.contiguous()) * 1e3))

    # normal draws: randn(1024, 1024) in float32
    torch.randn(1024, 1024)
    print("randn_ms %.6g ms" % (best(20, lambda: torch.randn(1024, 1024)) * 1e3))

    # ReLU and clamp, forward and backward on [1024, 1024] through a sum
    for name, fn in (("relu_fb_ms", lambda w: w.relu()), ("clamp_fb_ms", lambda w: w.clamp(-0.5, 0.5))):
        w = torch.randn(1024, 1024, requires_grad=True)

        def fb():
            w.grad = None
            fn(w).sum().backward()

        fb()
        print("%s %.6g ms" % (name, best(10, fb) * 1e3))


if __name__ == "__main__":
    main()
