"""scripts/bench/linear_gelu_torch.py — PyTorch's side of the bench-gpu row
linear_gelu_bf16_ms, measured as scripts/bench/linear_gelu_gpu.lua measures
ember's: F.gelu(F.linear(x, W, b), approximate="tanh") forward and backward in
bfloat16 at x [8192, 4096], W [4096, 4096], the gradients of x, W and b from a
given output gradient; CUDA events, best of 5 rounds of 10 steps after a
warm-up. Eager PyTorch (what a user writes), no torch.compile."""
import torch
import torch.nn.functional as F

M, K, N = 8192, 4096, 4096


def main():
    dev, dt = "cuda", torch.bfloat16
    x = torch.randn(M, K, device=dev, dtype=dt, requires_grad=True)
    w = (torch.randn(N, K, device=dev, dtype=dt) / K ** 0.5).requires_grad_()
    b = torch.randn(N, device=dev, dtype=dt, requires_grad=True)
    gy = torch.randn(M, N, device=dev, dtype=dt)

    def step():
        y = F.gelu(F.linear(x, w, b), approximate="tanh")
        return torch.autograd.grad((y,), (x, w, b), grad_outputs=(gy,))

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            step()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e) / 10)
    print("linear_gelu_bf16_ms %.6g ms" % best)
    print("linear_gelu_bf16_tflops %.6g TFLOP/s" % (3 * 2 * M * N * K / (best * 1e-3) / 1e12))


if __name__ == "__main__":
    main()
