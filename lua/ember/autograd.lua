-- ember.autograd — gradients on demand and numerical gradient checks.
--   ember.autograd.grad(outputs, inputs, {grad_outputs=, retain_graph=,
--                       create_graph=, allow_unused=})  -> one gradient per input
--   ember.autograd.gradcheck(fn, inputs, {eps=, atol=, rtol=})  -> true, or false and a report
--   ember.autograd.gradgradcheck(fn, inputs, {eps=, atol=, rtol=}) -> the same for second derivatives
local ember = require "ember"

local M = {}

M.grad = ember._autograd_grad

local function as_list(x)
  if ember.is_tensor(x) then return {x} end
  return x
end

-- The sum of every output weighted by fixed random numbers: one scalar whose
-- gradient checks all outputs at once.
local function scalarize(outs, weights)
  local total = nil
  for i, o in ipairs(outs) do
    local term = (o * weights[i]):sum()
    total = total and total + term or term
  end
  return total
end

-- fresh float64 leaves that require grad, one per input (a tensor or a list)
local function float64_leaves(inputs, who)
  local xs = {}
  for i, x in ipairs(as_list(inputs)) do
    assert(ember.is_tensor(x), who .. ": input " .. i .. " is not a tensor")
    xs[i] = x:detach():to("float64"):clone():requires_grad_()
  end
  return xs
end

-- Compares autograd's gradient with central finite differences, in float64.
-- fn takes the inputs (tensors) and returns a tensor or a list of tensors.
function M.gradcheck(fn, inputs, opts)
  opts = opts or {}
  local eps, atol, rtol = opts.eps or 1e-6, opts.atol or 1e-5, opts.rtol or 1e-3
  local xs = float64_leaves(inputs, "gradcheck")
  local outs = as_list(fn(table.unpack(xs)))
  local weights = {}
  for i, o in ipairs(outs) do
    weights[i] = ember.randn(o.shape, {dtype = "float64"})
  end
  local analytic = {M.grad({scalarize(outs, weights)}, xs, {allow_unused = true})}
  for i, x in ipairs(xs) do
    local n = x:numel()
    local flat = x:detach():reshape(-1)   -- shares memory with x
    local got = analytic[i] and analytic[i]:reshape(-1) or ember.zeros(n, {dtype = "float64"})
    for k = 1, n do
      local orig = flat[k]
      local f = function(v)
        flat[k] = v
        local r = ember.no_grad(function() return scalarize(as_list(fn(table.unpack(xs))), weights):item() end)
        flat[k] = orig
        return r
      end
      local numeric = (f(orig + eps) - f(orig - eps)) / (2 * eps)
      local a = got[k]
      if math.abs(a - numeric) > atol + rtol * math.abs(numeric) then
        return false, string.format("gradcheck: input %d, element %d: autograd %.10g, finite differences %.10g",
                                    i, k, a, numeric)
      end
    end
  end
  return true
end

-- Second derivatives against finite differences of the first gradient, in
-- float64: with s(x) the outputs weighted by fixed random numbers and w_i
-- fixed random directions, phi(x) = sum_i <grad_i s(x), w_i>; its gradient by
-- double backward (create_graph) is compared with central differences of
-- phi, each computed from a fresh first-order backward.
function M.gradgradcheck(fn, inputs, opts)
  opts = opts or {}
  local eps, atol, rtol = opts.eps or 1e-6, opts.atol or 1e-5, opts.rtol or 1e-3
  local xs = float64_leaves(inputs, "gradgradcheck")
  local weights
  local function grads(create)
    local outs = as_list(fn(table.unpack(xs)))
    if not weights then
      weights = {}
      for i, o in ipairs(outs) do weights[i] = ember.randn(o.shape, {dtype = "float64"}) end
    end
    return {M.grad({scalarize(outs, weights)}, xs, {create_graph = create, allow_unused = true})}
  end
  local ws = {}
  for i, x in ipairs(xs) do ws[i] = ember.randn(x.shape, {dtype = "float64"}) end
  local function phi(gs)
    local total = nil
    for i = 1, #xs do
      if gs[i] then
        local term = (gs[i] * ws[i]):sum()
        total = total and total + term or term
      end
    end
    return total
  end
  local total = phi(grads(true))
  if not total or not total.requires_grad then return false, "gradgradcheck: the first gradient does not require grad" end
  local analytic = {M.grad({total}, xs, {allow_unused = true})}
  for i, x in ipairs(xs) do
    local n = x:numel()
    local flat = x:detach():reshape(-1)
    local got = analytic[i] and analytic[i]:reshape(-1) or ember.zeros(n, {dtype = "float64"})
    for k = 1, n do
      local orig = flat[k]
      local function at(v)
        flat[k] = v
        local r = phi(grads(false)):item()
        flat[k] = orig
        return r
      end
      local numeric = (at(orig + eps) - at(orig - eps)) / (2 * eps)
      if math.abs(got[k] - numeric) > atol + rtol * math.abs(numeric) then
        return false, string.format("gradgradcheck: input %d, element %d: autograd %.10g, finite differences %.10g",
                                    i, k, got[k], numeric)
      end
    end
  end
  return true
end

return M
