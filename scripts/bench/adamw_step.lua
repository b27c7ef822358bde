-- scripts/bench/adamw_step.lua — one AdamW step over a GPT-2-small-sized list of
-- parameters (124M values in 148 tensors) on the GPU: ember's multi-tensor step (the
-- default) and the per-parameter step (foreach = false). The twin of
-- adamw_step_torch.py, measured the same way: the wall time of n steps queued back to
-- back, synchronised at the end (so both the host's cost per step and the kernels'
-- count), best of 5. Usage: ember scripts/bench/adamw_step.lua -> "name value unit" lines
local ember = require "ember"
local optim = require "ember.optim"
assert(ember.cuda.is_available(), "no GPU")

-- GPT-2 small: token and position embeddings, 12 blocks, the final norm
local function gpt2_shapes()
  local d, v, ctx, layers = 768, 50257, 1024, 12
  local s = {{v, d}, {ctx, d}}
  for _ = 1, layers do
    for _, shape in ipairs({{d}, {d}, {3 * d, d}, {3 * d}, {d, d}, {d}, {d}, {d}, {4 * d, d}, {4 * d}, {d, 4 * d},
                            {d}}) do
      s[#s + 1] = shape
    end
  end
  s[#s + 1], s[#s + 1] = {d}, {d}
  return s
end

local function step_ms(foreach)
  ember.manual_seed(0)
  local ps = {}
  for i, shape in ipairs(gpt2_shapes()) do
    ps[i] = (ember.randn(shape, {device = "cuda"}) * 0.02):requires_grad_()
    ps[i].grad = ember.randn(shape, {device = "cuda"}) * 1e-3
  end
  local opt = optim.AdamW(ps, {lr = 3e-4, weight_decay = 0.1, foreach = foreach})
  for _ = 1, 3 do opt:step() end                 -- the state exists, the allocator is warm
  ember.cuda.synchronize()
  local n, best = 20, math.huge
  for _ = 1, 5 do
    local t0 = ember.wall_time()
    for _ = 1, n do opt:step() end
    ember.cuda.synchronize()
    best = math.min(best, (ember.wall_time() - t0) / n)
  end
  return best * 1e3
end

print(string.format("adamw_step_gpu_ms %.6g ms", step_ms(nil)))
print(string.format("adamw_step_per_param_gpu_ms %.6g ms", step_ms(false)))
