-- anomaly_spec.lua — ember.autograd.detect_anomaly / set_detect_anomaly, PyTorch's
-- anomaly mode: a backward node that fails, or returns a gradient holding a NaN, stops
-- the pass with an error naming the node and the traceback of the forward call that
-- made it; off, nothing is checked.
local ember = require "ember"
local autograd = ember.autograd

local function line() return debug.getinfo(2, "l").currentline end

describe("anomaly mode", function()
  after_each(function() autograd.set_detect_anomaly(false) end)

  it("names the backward node that returned a NaN, and where its forward ran", function()
    local x = ember.tensor({1.0, -1.0, 4.0}):requires_grad_()
    local y, at
    autograd.detect_anomaly(function()
      y = x:sqrt(); at = line()
    end)
    -- made under anomaly mode: the node holds its traceback; checked at backward in the mode
    local ok, err = pcall(function()
      autograd.detect_anomaly(function() (y * 2):sum():backward() end)
    end)
    assert.is_false(ok)
    assert.matches("Function 'SqrtBackward' returned nan values in its 1st output", err, 1, true)
    assert.matches("Traceback of forward call that caused the error:", err, 1, true)
    assert.matches("anomaly_spec.lua:" .. at .. ":", err, 1, true)
  end)

  it("lets the NaN through when off, and with check_nan = false", function()
    local x = ember.tensor({1.0, -1.0}):requires_grad_()
    x:sqrt():sum():backward()
    assert.is_true(x.grad:isnan():tolist()[2])
    x.grad = nil
    autograd.detect_anomaly(function() x:sqrt():sum():backward() end, {check_nan = false})
    assert.is_true(x.grad:isnan():tolist()[2])
  end)

  it("adds the node and the forward's traceback to a backward's own error", function()
    local x = ember.tensor({1.0, 2.0}):requires_grad_()
    local _ <close> = autograd.detect_anomaly()
    local w = x:exp(); local at = line()
    ember.no_grad(function() w:add_(1) end)
    local ok, err = pcall(function() w:sum():backward() end)
    assert.is_false(ok)
    assert.matches("Error detected in ExpBackward: backward: ExpBackward: a tensor it saved was modified", err, 1, true)
    assert.matches("anomaly_spec.lua:" .. at .. ":", err, 1, true)
  end)

  it("reports through autograd.grad too", function()
    local x = ember.tensor({-4.0}):requires_grad_()
    autograd.set_detect_anomaly(true)
    local y = x:log()
    local ok, err = pcall(autograd.grad, y:sum(), x)
    assert.is_true(ok)          -- d/dx log(x) = 1/x: finite at -4 (the value itself is NaN)
    y = x:sqrt()
    ok, err = pcall(autograd.grad, y:sum(), x)
    assert.is_false(ok)
    assert.matches("SqrtBackward", err, 1, true)
  end)

  it("is a guard that puts the mode back, and nests", function()
    assert.is_false(autograd.is_anomaly_enabled())
    do
      local _ <close> = autograd.detect_anomaly({check_nan = false})
      assert.is_true(autograd.is_anomaly_enabled())
      assert.is_false(autograd.is_anomaly_check_nan_enabled())
      do
        local _ <close> = autograd.detect_anomaly()
        assert.is_true(autograd.is_anomaly_check_nan_enabled())
      end
      assert.is_false(autograd.is_anomaly_check_nan_enabled())
    end
    assert.is_false(autograd.is_anomaly_enabled())
    -- an error inside fn still puts it back
    pcall(autograd.detect_anomaly, function() error("boom") end)
    assert.is_false(autograd.is_anomaly_enabled())
    assert.are.same({1, 2}, {autograd.detect_anomaly(function(a, b) return a, b end, 1, 2)})
  end)

  it("records nothing while off", function()
    local x = ember.tensor({1.0, -1.0}):requires_grad_()
    local y = x:sqrt()                       -- made with the mode off: no traceback kept
    local ok, err = pcall(function()
      autograd.detect_anomaly(function() y:sum():backward() end)
    end)
    assert.is_false(ok)
    assert.matches("SqrtBackward", err, 1, true)
    assert.is_nil(err:find("Traceback of forward call", 1, true))
  end)

  it("names bad arguments", function()
    assert.has_error(function() autograd.set_detect_anomaly("yes") end,
      "set_detect_anomaly: mode must be a boolean, got string")
    local ok, err = pcall(autograd.detect_anomaly, {check = true})
    assert.is_false(ok)
    assert.matches("detect_anomaly: unknown option 'check'", err, 1, true)
    ok, err = pcall(autograd.detect_anomaly, 5)
    assert.is_false(ok)
    assert.matches("expected a function or an options table, got number", err, 1, true)
  end)
end)
