-- scripts/bench/attention.lua — ember's side of the attention rows: causal
-- self-attention on one long sequence, forward + backward, with the
-- process's peak memory growth (VmHWM) over the run. The fused op keeps
-- O(T) memory; the T x T score matrix alone would be 4 T^2 bytes (256 MB
-- at T = 8192). Run in its own process (the peak is per process).
-- Usage: ember scripts/bench/attention.lua [T [D]]   prints
--   sdpa<T>_fb_ms <best of 3> ms       sdpa<T>_peak_mb <growth of the peak RSS> MB
local ember = require "ember"

local best = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua").best
local T, D = tonumber(arg[1]) or 8192, tonumber(arg[2]) or 64

local function peak_kb()
  for line in io.lines("/proc/self/status") do
    local v = line:match("^VmHWM:%s+(%d+)")
    if v then return tonumber(v) end
  end
end

local q = ember.randn(1, 1, T, D, {requires_grad = true})
local k = ember.randn(1, 1, T, D, {requires_grad = true})
local v = ember.randn(1, 1, T, D, {requires_grad = true})
local g = ember.randn(1, 1, T, D)
collectgarbage()
local before = peak_kb()
local function step()
  q.grad, k.grad, v.grad = nil, nil, nil
  ember.scaled_dot_product_attention(q, k, v, {is_causal = true}):backward(g)
end
local t = best(3, step)
print(string.format("sdpa%d_fb_ms %.6g ms", T, t * 1e3))
print(string.format("sdpa%d_peak_mb %.6g MB", T, (peak_kb() - before) / 1024))
