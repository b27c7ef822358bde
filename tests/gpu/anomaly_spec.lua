-- anomaly_spec.lua (GPU) — anomaly mode's NaN check on the device under test (the
-- check reads the device's answer back), and gradients meeting in one buffer there
-- (split's pieces added into their part in place), against hand values.
local ember = require "ember"
local g = require "gpu_helpers"

local skip = g.skip_reason()
if skip then pending(skip) return end

local DEV = g.DEV

describe("anomaly mode on " .. DEV, function()
  after_each(function() ember.autograd.set_detect_anomaly(false) end)

  it("names the node that returned a NaN", function()
    local x = ember.tensor({1.0, -1.0}, {device = DEV}):requires_grad_()
    local ok, err = pcall(ember.autograd.detect_anomaly, function() x:sqrt():sum():backward() end)
    assert.is_false(ok)
    assert.matches("Function 'SqrtBackward' returned nan values", err, 1, true)
    assert.matches("Traceback of forward call that caused the error:", err, 1, true)
  end)

  it("lets finite gradients through", function()
    local x = ember.tensor({1.0, 4.0}, {device = DEV}):requires_grad_()
    ember.autograd.detect_anomaly(function() x:sqrt():sum():backward() end)
    assert.are.same({0.5, 0.25}, x.grad:cpu():tolist())
  end)
end)

describe("gradients meeting in one tensor on " .. DEV, function()
  it("adds split's pieces into their parts", function()
    local x = ember.zeros(2, 6, {device = DEV}):requires_grad_()
    local a, b, c = x:split(2, 2)
    local s = (a * 1):sum() + (b * 2):sum() + (c * 3):sum()
    s:backward()
    assert.are.same({{1, 1, 2, 2, 3, 3}, {1, 1, 2, 2, 3, 3}}, x.grad:cpu():tolist())
  end)
end)
