-- debug_tools_spec.lua (GPU) — the debugging tools on the device under test: anomaly
-- mode's NaN check (it reads the device's answer back), ember.memory's tracking of device
-- storages, ember.profiler with synchronize; and gradients meeting in one buffer there
-- (split's pieces added into their part in place). Values by hand.
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

describe("ember.memory on " .. DEV, function()
  after_each(function() ember.memory.record_history(false) end)

  it("tracks device storages by line", function()
    ember.memory.record_history(true)
    local a = ember.zeros(1000, 250, {device = DEV}); local at = debug.getinfo(1, "l").currentline
    local s = ember.memory.snapshot()
    local found
    for _, g in ipairs(s.groups) do
      if g.site:match(":" .. at .. "$") then found = g end
    end
    assert.is_not_nil(found)
    assert.are.equal("cuda", found.device)
    assert.are.equal(1000000, found.bytes)
    assert.is_true(s.tracked.cuda >= 1000000)
    -- the timeline by line counts the device's bytes too
    local by = ember.memory.history_by_line()
    assert.is_true(by[1].site:match(":" .. at .. "$") ~= nil, by[1].site)
    assert.are.equal(1000000, by[1].peak)
    local h = ember.memory.history()
    assert.are.equal(1000000, h.cuda[#h.cuda] - h.cuda[1] + h.delta[1])
    local _ = a
  end)
end)

describe("ember.profiler on " .. DEV, function()
  it("counts device ops, waiting for each with synchronize", function()
    local a = ember.ones(64, 64, {device = DEV})
    local prof = ember.profiler.profile({synchronize = true}, function()
      return (a:matmul(a) + 1):sum():item()
    end)
    local calls = {}
    for _, r in ipairs(prof:key_averages():rows_list()) do calls[r.name] = r.calls end
    assert.are.equal(1, calls.matmul)
    assert.are.equal(1, calls.add)
    assert.are.equal(1, calls.item)
  end)
end)
