-- stop_on_nan_spec.lua — ember.debug.stop_on_nan: the first op that makes a NaN or an
-- infinity from finite inputs calls the debugger's stop (registry["ember.debug_stop"],
-- replaced here by a recorder) with the op and shapes, later ops fed by that value do
-- not; without a debugger it is an error at the caller's line. The shell's own stop is
-- checked by tests/shell/session_test.py.
local ember = require "ember"

local registry = debug.getregistry()

describe("ember.debug.stop_on_nan", function()
  local saved
  before_each(function() saved = registry["ember.debug_stop"] end)
  after_each(function()
    ember.debug.stop_on_nan(false)
    registry["ember.debug_stop"] = saved
  end)

  it("stops at the op where the first NaN or infinity appears, once", function()
    local stops = {}
    registry["ember.debug_stop"] = function(reason)
      stops[#stops + 1] = {reason = reason, line = debug.getinfo(3, "l").currentline}
    end
    ember.debug.stop_on_nan(true)
    local x = ember.tensor({1.0, 0.0, 4.0})
    local y = x:log(); local at = debug.getinfo(1, "l").currentline
    local z = (y * 2):exp()            -- fed by -inf: no second stop
    assert.are.equal(1, #stops)
    assert.are.equal("log made a NaN or an infinity (result [3]); inputs: [3] float32", stops[1].reason)
    assert.are.equal(at, stops[1].line)
    -- the op went on: its result is there
    assert.are.equal(-math.huge, y:tolist()[2])
    assert.are.equal(0, z:tolist()[2])
  end)

  it("names the inputs, and stops at a creation from data holding one", function()
    local reasons = {}
    registry["ember.debug_stop"] = function(reason) reasons[#reasons + 1] = reason end
    ember.debug.stop_on_nan(true)
    local a, b = ember.ones(2, 3), ember.zeros(2, 3)
    local q = a / b
    assert.are.equal("div made a NaN or an infinity (result [2,3]); inputs: [2,3] float32, [2,3] float32",
                     reasons[1])
    local t = ember.tensor({0 / 0})
    assert.matches("^tensor made a NaN or an infinity %(result %[1%]%); inputs: none", reasons[2])
    local _ = q, t
  end)

  it("checks nothing when off, and integer results never", function()
    local n = 0
    registry["ember.debug_stop"] = function() n = n + 1 end
    local _ = ember.tensor({0.0}):log()
    ember.debug.stop_on_nan(true)
    local _ = ember.tensor({1, 2}) // ember.tensor({1, 1})
    assert.are.equal(0, n)
  end)

  it("is an error at the caller's line without a debugger", function()
    registry["ember.debug_stop"] = nil
    ember.debug.stop_on_nan(true)
    local ok, err = pcall(function() return ember.tensor({-1.0}):sqrt() end)
    assert.is_false(ok)
    assert.matches("stop_on_nan_spec.lua:%d+: sqrt made a NaN or an infinity", err)
  end)

  it("turns anomaly mode on with it, and back", function()
    assert.is_false(ember.autograd.is_anomaly_enabled())
    ember.debug.stop_on_nan(true)
    assert.is_true(ember.autograd.is_anomaly_enabled())
    assert.is_true(ember.debug.is_stopping_on_nan())
    ember.debug.stop_on_nan(false)
    assert.is_false(ember.autograd.is_anomaly_enabled())
    assert.has_error(function() ember.debug.stop_on_nan("on") end,
      "debug.stop_on_nan: on must be a boolean, got string")
  end)
end)
