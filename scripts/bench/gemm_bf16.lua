-- scripts/bench/gemm_bf16.lua — CPU bfloat16 GEMM figures beside
-- scripts/bench/gemm_bf16_torch.py (the same shapes and rule: best of 20
-- calls after a warm-up): matmul [512,1024] @ [1024,1024] in bfloat16, float16
-- and float32, and a bfloat16 linear layer's forward and backward at the
-- char-GPT's widest shape (x [4096,128], W [512,128], bias; the gradients of
-- x, W and bias from a given output gradient).
-- Usage: ember scripts/bench/gemm_bf16.lua      prints "name value unit" lines
local ember = require "ember"
local F = ember.nn.functional

local best = dofile((arg[0]:match("^(.*/)") or "./") .. "timing.lua").best

local function ms(f)
  f()
  return best(20, f) * 1e3
end

ember.manual_seed(0)
for _, dt in ipairs({"bfloat16", "float16", "float32"}) do
  local a, b = ember.randn(512, 1024):to(dt), ember.randn(1024, 1024):to(dt)
  print(string.format("matmul_512x1024x1024_%s_ms %.4g ms", dt, ms(function() return ember.matmul(a, b) end)))
end

local x = ember.randn(4096, 128, {dtype = "bfloat16"}):requires_grad_()
local w = (ember.randn(512, 128) / 128 ^ 0.5):to("bfloat16"):requires_grad_()
local bias = ember.zeros(512, {dtype = "bfloat16"}):requires_grad_()
local gy = ember.randn(4096, 512, {dtype = "bfloat16"})
print(string.format("linear_4096x128x512_bf16_fwd_bwd_ms %.4g ms", ms(function()
  return ember.autograd.grad(F.linear(x, w, bias), {x, w, bias}, {grad_outputs = {gy}})
end)))
