-- memory_debug_spec.lua — ember.memory: live storages grouped by the Lua line that made
-- them (a backward pass's by node, at the backward() line), the history of bytes held,
-- and the out-of-memory message that names the lines holding the most. Byte counts by hand.
local ember = require "ember"
local memory = ember.memory

local function line() return debug.getinfo(2, "l").currentline end
local SRC = debug.getinfo(1, "S").short_src

local function group(s, at, node)
  for _, g in ipairs(s.groups) do
    if g.site == SRC .. ":" .. at and g.node == node then return g end
  end
  return nil
end

describe("ember.memory", function()
  after_each(function() memory.record_history(false) end)

  it("groups live storages by the line that made them, largest first", function()
    local before = ember.zeros(1000)            -- made before recording: not tracked
    memory.record_history(true)
    local a = ember.zeros(1000, 1000); local at_a = line()
    local b = ember.zeros(250, 1000); local at_b = line()
    local c = ember.ones(250, 1000); local at_c = line()
    local s = memory.snapshot()
    assert.are.same({count = 1, bytes = 4000000}, {count = group(s, at_a).count, bytes = group(s, at_a).bytes})
    assert.are.equal(1000000, group(s, at_b).bytes)
    assert.are.equal(1000000, group(s, at_c).bytes)
    assert.are.equal(4000000, s.groups[1].bytes)
    assert.is_true(s.tracked.cpu >= 6000000 and s.tracked.cpu < 6000000 + 65536)
    assert.is_true(s.in_use.cpu >= s.tracked.cpu + 4000)
    local _ = before, a, b, c
  end)

  it("forgets storages once freed", function()
    memory.record_history(true)
    local a = ember.zeros(1000, 1000); local at = line()
    assert.is_not_nil(group(memory.snapshot(), at))
    a = nil
    assert.is_nil(group(memory.snapshot(), at))
    assert.is_nil(a)
  end)

  it("charges a layer's weights to the line that built it, and a backward's to its line and node", function()
    memory.record_history(true)
    local m = ember.nn.Linear(1000, 500); local at_m = line()
    local x = ember.randn(8, 1000):requires_grad_()
    local y = m(x):sum()
    y:backward(); local at_bw = line()
    local s = memory.snapshot()
    -- weight 500 x 1000 and bias 500, float32
    assert.are.equal(4 * (500 * 1000 + 500), group(s, at_m).bytes)
    local g = group(s, at_bw, "LinearBackward")
    assert.is_not_nil(g, memory.top(20))
    -- the weight's and bias's gradients (and the input's) live on as .grad
    assert.is_true(g.bytes >= 4 * (500 * 1000 + 500 + 8 * 1000))
    local _ = y
  end)

  it("keeps the history of bytes held", function()
    memory.record_history(true)
    local a = ember.zeros(1000)
    local b = ember.zeros(2000)
    a = nil
    collectgarbage()
    local h = memory.history()
    assert.are.equal(3, #h.t)
    assert.are.same({4000, 12000, 8000}, h.cpu)
    assert.are.equal(0, h.t[1])
    assert.is_true(h.t[3] >= h.t[2])
    local _ = b, a
    memory.record_history(true, {max_entries = 1})
    local c, d = ember.zeros(10), ember.zeros(10)
    assert.are.equal(1, #memory.history().t)
    local _ = c, d
  end)

  it("keeps the history by line: each change's bytes and line, and each line's bytes over time", function()
    memory.record_history(true)
    local a = ember.zeros(1000); local la = SRC .. ":" .. line()
    local b = ember.zeros(2000); local lb = SRC .. ":" .. line()
    a = nil
    collectgarbage()
    local h = memory.history()
    assert.are.same({4000, 8000, -4000}, h.delta)
    assert.are.same({la, lb, la}, h.site)
    local by = memory.history_by_line()
    assert.are.equal(2, #by)
    assert.are.same({site = lb, peak = 8000, bytes = {8000}}, {site = by[1].site, peak = by[1].peak, bytes = by[1].bytes})
    assert.are.same({site = la, peak = 4000, bytes = {4000, 0}}, {site = by[2].site, peak = by[2].peak, bytes = by[2].bytes})
    assert.are.same({h.t[1], h.t[3]}, by[2].t)
    -- one line kept: the rest together
    by = memory.history_by_line(1)
    assert.are.same({"(other lines)", 4000, {4000, 0}}, {by[2].site, by[2].peak, by[2].bytes})
    -- a storage never seen from Lua (an op's temporary) and a backward pass's
    memory.record_history(true)
    local x = ember.ones(100, {requires_grad = true})
    local y = (x * 2):sum(); local ly = SRC .. ":" .. line()
    y:backward(); local lback = SRC .. ":" .. line()
    local sites = {}
    for _, s in ipairs(memory.history().site) do sites[s] = true end
    assert.is_true(sites[ly], "the forward's line")
    assert.is_true(sites[lback .. " (backward)"], "the backward() line, marked")
    local _ = b, x
  end)

  it("draws the history by line and by device", function()
    memory.record_history(true)
    local a = ember.zeros(3000); local la = SRC .. ":" .. line()
    local b = ember.zeros(1000)
    local path = os.tmpname() .. ".txt"
    memory.record_history(true)   -- only what follows
    a, b = ember.zeros(3000), ember.zeros(1000); la = SRC .. ":" .. line()
    local fig = memory.plot_history(path, {top = 3})
    assert.is_not_nil(fig)
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    os.remove(path)
    assert.matches(la:match("[^/]+$"), text, 1, true)
    assert.matches("total", text, 1, true)
    memory.plot_history(path, {by = "device"})
    f = assert(io.open(path))
    text = f:read("a")
    f:close()
    os.remove(path)
    assert.matches("cpu", text, 1, true)
    local _ = a, b
    local ok, err = pcall(memory.plot_history, path, {by = "size"})
    assert.is_false(ok)
    assert.matches('plot_history: by must be "line" or "device", got size', err, 1, true)
    ok, err = pcall(memory.plot_history, {tops = 2})
    assert.is_false(ok)
    assert.matches("plot_history: unknown option 'tops' (expected by, top)", err, 1, true)
    ok, err = pcall(memory.history_by_line, 0)
    assert.is_false(ok)
    assert.matches("history_by_line: n must be a positive integer, got 0", err, 1, true)
  end)

  it("names the lines holding the most in an out-of-memory error, and the session goes on", function()
    memory.record_history(true)
    local big = ember.zeros(1000, 1000); local at = line()
    local ok, err = pcall(function() return ember.empty(2 ^ 45) end)
    assert.is_false(ok)
    assert.matches("out of memory", err, 1, true)
    assert.matches("available", err, 1, true)
    assert.matches("the lines holding the most memory: " .. SRC .. ":" .. at .. " 4.0 MB", err, 1, true)
    assert.are.equal(1000000, big:numel())
    assert.are.equal(3, (ember.ones(3)):sum():item())
  end)

  it("says how to get the lines when not recording", function()
    local ok, err = pcall(function() return ember.empty(2 ^ 45) end)
    assert.is_false(ok)
    assert.matches("record_history(true) names the lines", err, 1, true)
  end)

  it("prints the top lines", function()
    memory.record_history(true)
    local a = ember.zeros(1000, 1000); local at = line()
    local text = memory.top(3)
    assert.matches(SRC .. ":" .. at, text, 1, true)
    assert.matches("4.00 MB", text, 1, true)
    assert.matches("tracked: ", text, 1, true)
    local _ = a
  end)

  it("names its mistakes", function()
    assert.has_error(function() memory.snapshot() end,
      "memory.snapshot: nothing recorded (call ember.memory.record_history(true) first)")
    local ok, err = pcall(memory.record_history, "on")
    assert.is_false(ok)
    assert.matches("enabled must be a boolean, got string", err, 1, true)
    ok, err = pcall(memory.record_history, true, {entries = 5})
    assert.is_false(ok)
    assert.matches("unknown option 'entries'", err, 1, true)
    memory.record_history(true)
    ok, err = pcall(memory.plot_history, 5)
    assert.is_false(ok)
    assert.matches("plot_history: path must be a string, got number", err, 1, true)
    ok, err = pcall(memory.top, 0)
    assert.is_false(ok)
    assert.matches("n must be a positive integer", err, 1, true)
  end)
end)
