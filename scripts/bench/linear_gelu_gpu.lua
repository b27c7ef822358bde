-- scripts/bench/linear_gelu_gpu.lua — ember's side of the bench-gpu row
-- linear_gelu_bf16_ms: Linear + GELU (tanh form) forward and backward in bfloat16,
-- x [8192, 4096] @ W [4096, 4096]^T + b, the gradients of x, W and b from a given
-- output gradient. Timed with CUDA events around the queued work, best of 5
-- rounds of 10 steps after a warm-up (which also fills the allocator's cache and
-- cuBLASLt's heuristic cache). scripts/bench/linear_gelu_torch.py is PyTorch's side,
-- measured the same way. Prints "linear_gelu_bf16_ms <ms> ms" (and TFLOP/s).
local ember = require "ember"
local cuda = ember.cuda
assert(cuda.is_available(), "no GPU")
local F = ember.nn.functional

local M, K, N = 8192, 4096, 4096
local opts = {device = "cuda", dtype = "bfloat16"}
local x = (ember.randn(M, K, opts)):requires_grad_()
local w = (ember.randn(N, K, opts) * (1 / math.sqrt(K))):detach():requires_grad_()
local b = ember.randn(N, opts):requires_grad_()
local gy = ember.randn(M, N, opts)

local function step()
  local y = F.linear(x, w, b, {activation = "gelu_tanh"})
  return ember.autograd.grad({y}, {x, w, b}, {grad_outputs = {gy}})
end

for _ = 1, 3 do step() end
cuda.synchronize()
local best = math.huge
for _ = 1, 5 do
  local s, e = cuda.Event(), cuda.Event()
  s:record()
  for _ = 1, 10 do step() end
  e:record()
  local ms = s:elapsed_time(e) / 10
  if ms < best then best = ms end
end
-- three GEMMs of 2 M N K flops each (forward, grad x, grad W)
print(string.format("linear_gelu_bf16_ms %.6g ms", best))
print(string.format("linear_gelu_bf16_tflops %.6g TFLOP/s", 3 * 2 * M * N * K / (best * 1e-3) / 1e12))
