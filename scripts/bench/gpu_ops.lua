-- scripts/bench/gpu_ops.lua — ember's side of the GPU benchmark table.
-- Usage: ember scripts/bench/gpu_ops.lua      prints "name value unit" lines
-- GPU work is timed with CUDA events around the queued ops (after a warm-up
-- that fills the allocator's cache); launch overhead with the wall clock,
-- since it is the host-side cost of queuing an op.
local ember = require "ember"
local cuda = ember.cuda
assert(cuda.is_available(), "no GPU")

local function report(name, value, unit) print(string.format("%s %.6g %s", name, value, unit)) end

-- GPU milliseconds of fn() run n times, best of `repeats`
local function gpu_ms(n, repeats, fn)
  fn(); cuda.synchronize()
  local best = math.huge
  for _ = 1, repeats do
    local s, e = cuda.Event(), cuda.Event()
    s:record()
    for _ = 1, n do fn() end
    e:record()
    local ms = s:elapsed_time(e) / n
    if ms < best then best = ms end
  end
  return best
end

-- per-op launch overhead: a + b on 16-element float32 tensors, host time per op
do
  local a, b = ember.randn(16, {device = "cuda"}), ember.randn(16, {device = "cuda"})
  local n = 20000
  local best = math.huge
  for _ = 1, 5 do
    cuda.synchronize()
    local t0 = ember.wall_time()
    local c
    for _ = 1, n do c = a + b end
    cuda.synchronize()
    local dt = (ember.wall_time() - t0) / n
    if dt < best then best = dt end
  end
  report("gpu_add_launch_us", best * 1e6, "us/op")
end

-- matmul float32 (exact and TF32) TFLOP/s
for _, n in ipairs({4096, 8192}) do
  local a, b = ember.randn(n, n, {device = "cuda"}), ember.randn(n, n, {device = "cuda"})
  for _, tf32 in ipairs({false, true}) do
    ember.backends.cuda.matmul.allow_tf32 = tf32
    local ms = gpu_ms(n == 4096 and 10 or 3, 3, function() return a:matmul(b) end)
    report(string.format("matmul%d_%s_tflops", n, tf32 and "tf32" or "fp32"), 2 * n ^ 3 / (ms * 1e-3) / 1e12, "TFLOP/s")
  end
  ember.backends.cuda.matmul.allow_tf32 = false
  a, b = nil, nil
  collectgarbage()
end

-- elementwise bandwidth on 256M floats: a + b (3 x 1 GiB moved) beside a
-- device-to-device copy (2 x 1 GiB)
do
  local n = 256 * 1024 * 1024
  local a, b = ember.randn(n, {device = "cuda"}), ember.randn(n, {device = "cuda"})
  local out = ember.empty(n, {device = "cuda"})
  local add_ms = gpu_ms(5, 3, function() return a + b end)
  local copy_ms = gpu_ms(5, 3, function() out:copy_(a) end)
  local add_gbps = 3 * 4 * n / (add_ms * 1e-3) / 1e9
  local copy_gbps = 2 * 4 * n / (copy_ms * 1e-3) / 1e9
  report("gpu_add256m_gbps", add_gbps, "GB/s")
  report("gpu_copy256m_gbps", copy_gbps, "GB/s")
  report("gpu_add_vs_copy", add_gbps / copy_gbps, "x")
end
