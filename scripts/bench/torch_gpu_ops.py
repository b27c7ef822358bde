"""scripts/bench/torch_gpu_ops.py — PyTorch's side of the GPU benchmark
table, measured the same way as scripts/bench/gpu_ops.lua (CUDA events for
GPU time, the wall clock for launch overhead). Prints "name value unit"."""
import time

import torch


def gpu_ms(n, repeats, fn):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            fn()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / n)
    return best


def main():
    a, b = torch.randn(16, device="cuda"), torch.randn(16, device="cuda")
    n, best = 20000, float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            c = a + b
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / n)
    print("gpu_add_launch_us %.6g us/op" % (best * 1e6))
    for size in (4096, 8192):
        a, b = torch.randn(size, size, device="cuda"), torch.randn(size, size, device="cuda")
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            ms = gpu_ms(10 if size == 4096 else 3, 3, lambda: a @ b)
            print("matmul%d_%s_tflops %.6g TFLOP/s" % (size, "tf32" if tf32 else "fp32", 2 * size ** 3 / (ms * 1e-3) / 1e12))
        torch.backends.cuda.matmul.allow_tf32 = False
    n = 256 * 1024 * 1024
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    add_ms = gpu_ms(5, 3, lambda: a + b)
    copy_ms = gpu_ms(5, 3, lambda: out.copy_(a))
    add_gbps, copy_gbps = 3 * 4 * n / (add_ms * 1e-3) / 1e9, 2 * 4 * n / (copy_ms * 1e-3) / 1e9
    print("gpu_add256m_gbps %.6g GB/s" % add_gbps)
    print("gpu_copy256m_gbps %.6g GB/s" % copy_gbps)
    print("gpu_add_vs_copy %.6g x" % (add_gbps / copy_gbps))


if __name__ == "__main__":
    main()
