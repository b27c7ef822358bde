-- embedding_bag_spec.lua (GPU) — F.embedding_bag on the device under test against the CPU
-- on the same inputs, every mode, with padding_idx, per_sample_weights and empty bags: the
-- result stays on the device, and the weight's gradient comes back to the device leaf.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local dev, close = g.dev, g.close
local F = ember.nn.functional

describe("embedding_bag on the device", function()
  it("sum, mean, max; padding_idx, per_sample_weights, empty bags; gradients", function()
    ember.manual_seed(7)
    local idx = ember.tensor({2, 3, 5, 6, 5, 4, 3, 1, 7})
    local offsets = ember.tensor({1, 3, 3, 6})
    local psw = ember.randn(9, {dtype = "float64"})
    for _, c in ipairs({{mode = "sum"}, {mode = "mean"}, {mode = "max"}, {mode = "mean", padding_idx = 5},
                        {mode = "max", padding_idx = 3}, {mode = "sum", per_sample_weights = true}}) do
      local w = ember.randn(7, 3, {dtype = "float64"})
      local wc, wd = w:clone():requires_grad_(), dev(w):requires_grad_()
      local oc = {mode = c.mode, padding_idx = c.padding_idx, per_sample_weights = c.per_sample_weights and psw}
      local od = {mode = c.mode, padding_idx = c.padding_idx, per_sample_weights = c.per_sample_weights and dev(psw)}
      local yc = F.embedding_bag(idx, wc, offsets, oc)
      local yd = F.embedding_bag(dev(idx), wd, dev(offsets), od)
      close(yd, yc, {what = c.mode})
      yc:sum():backward()
      yd:sum():backward()
      close(wd.grad, wc.grad, {what = c.mode .. " gradient"})
    end
  end)
end)
