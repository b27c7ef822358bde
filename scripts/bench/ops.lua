-- scripts/bench/ops.lua — ember's side of the benchmark table.
-- Usage: ember scripts/bench/ops.lua        prints "name value unit" lines
-- Each figure is the best of several repeats (least disturbed by the rest
-- of the machine), the same rule the PyTorch side uses.
local ember = require "ember"

local best = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua").best

local results = {}
local function report(name, value, unit)
  results[#results + 1] = string.format("%s %.6g %s", name, value, unit)
end

-- per-op overhead: a + b on 16-element float32 tensors
do
  local a, b = ember.randn(16), ember.randn(16)
  local n = 200000
  local function loop() local c for _ = 1, n do c = a + b end return c end
  loop()
  local t = best(5, loop)
  report("op_overhead_us", t / n * 1e6, "us/op")
end

-- per-op overhead with autograd recording: a * b, 16 elements, requires_grad
do
  local a = ember.randn(16, {requires_grad = true})
  local b = ember.randn(16, {requires_grad = true})
  local n = 200000
  local function loop() local c for _ = 1, n do c = a * b end return c end
  loop()
  local t = best(5, loop)
  report("op_autograd_us", t / n * 1e6, "us/op")
end

-- float32 matmul 1024 x 1024
do
  local a, b = ember.randn(1024, 1024), ember.randn(1024, 1024)
  a:matmul(b)
  local t = best(20, function() return a:matmul(b) end)
  report("matmul1024_gflops", 2 * 1024 ^ 3 / t / 1e9, "GFLOP/s")
end

-- elementwise add on 16M floats: reads two arrays, writes one
do
  local n = 16 * 1024 * 1024
  local a, b = ember.randn(n), ember.randn(n)
  local c = a + b
  c = nil
  collectgarbage()
  local t = best(10, function() local r = a + b; return r end)
  report("add16m_gbps", 3 * 4 * n / t / 1e9, "GB/s")
end

-- conv2d forward + backward (input, weight and bias gradients) on [128, 32, 14, 14] -> 64
-- channels, 3x3, padding 1: the second layer of the Fashion-MNIST CNN
do
  local x = ember.randn(128, 32, 14, 14, {requires_grad = true})
  local w = ember.randn(64, 32, 3, 3, {requires_grad = true})
  local b = ember.randn(64, {requires_grad = true})
  local gy = ember.randn(128, 64, 14, 14)
  local function step()
    x.grad, w.grad, b.grad = nil, nil, nil
    ember.conv2d(x, w, b, 1, 1):backward(gy)
  end
  step()
  local t = best(10, step)
  report("conv2d_fb_ms", t * 1e3, "ms")
end

-- sum over a short last dim: [65536, 3] -> [65536] (per-row work, not bandwidth)
do
  local x = ember.randn(65536, 3)
  x:sum(-1)
  report("sum_rows3_us", best(20, function() return x:sum(-1) end) * 1e6, "us")
end

-- a transposed [1024, 1024] float32 matrix made contiguous (x:t():contiguous())
do
  local xt = ember.randn(1024, 1024):t()
  xt:contiguous()
  report("transpose_copy_ms", best(20, function() return xt:contiguous() end) * 1e3, "ms")
end

-- normal draws: randn(1024, 1024) in float32 (Box-Muller over Philox lanes)
do
  ember.randn(1024, 1024)
  report("randn_ms", best(20, function() return ember.randn(1024, 1024) end) * 1e3, "ms")
end

-- ReLU and clamp, forward and backward on [1024, 1024] through a sum (whose gradient
-- reaches them as an expanded 0-d tensor)
for _, row in ipairs({{"relu_fb_ms", function(w) return w:relu() end},
                      {"clamp_fb_ms", function(w) return w:clamp(-0.5, 0.5) end}}) do
  local w = ember.randn(1024, 1024, {requires_grad = true})
  local function step() w.grad = nil; row[2](w):sum():backward() end
  step()
  report(row[1], best(10, step) * 1e3, "ms")
end

for _, line in ipairs(results) do print(line) end
