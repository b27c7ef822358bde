-- checkpoint_helpers.lua — what the activation checkpointing specs (tests/lua and
-- tests/gpu activation_checkpoint_spec.lua) share: the gradients a training step gives
-- a model's parameters and its input, and bit-for-bit comparisons of them. Busted's
-- globals do not reach a required module: luassert is required by name.
local ember = require "ember"
local assert = require "luassert"

local M = {}

--- same_bits(a, b): a and b have one shape, one dtype and equal values
function M.same_bits(a, b)
  assert.are.same(a.shape, b.shape)
  assert.equal(a.dtype, b.dtype)
  assert.is_true(a:eq(b):all():item(), "max difference " .. tostring((a - b):abs():max():item()))
end

--- gradients(model, x, seed, step) -> {x = x's gradient, [i] = parameter i's}, loss: runs
--- step(x) (the loss) from the seed and a backward, fresh gradients each time
function M.gradients(model, x, seed, step)
  for _, p in ipairs(model:parameters()) do p.grad = nil end
  x.grad = nil
  ember.manual_seed(seed)
  local loss = step(x)
  loss:backward()
  local out = {x = x.grad:clone()}
  for i, p in ipairs(model:parameters()) do out[i] = p.grad:clone() end
  return out, loss
end

--- assert_same(a, b): two results of gradients() agree bit for bit
function M.assert_same(a, b)
  M.same_bits(a.x, b.x)
  assert.is_true(#a > 0)
  assert.equal(#a, #b)
  for i = 1, #a do M.same_bits(a[i], b[i]) end
end

--- differs(a, b) -> whether any gradient of two results of gradients() differs
function M.differs(a, b)
  if not a.x:eq(b.x):all():item() then return true end
  for i = 1, #a do
    if not a[i]:eq(b[i]):all():item() then return true end
  end
  return false
end

return M
