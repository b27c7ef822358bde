-- profiler_spec.lua — ember.profiler: which ops ran, how often, on which Lua line, with
-- what shapes and memory; self and total time consistent; backward split into its nodes;
-- the Chrome trace readable; hooks and errors left as they were. Counts and names by hand.
local ember = require "ember"
local profiler = ember.profiler

local function line() return debug.getinfo(2, "l").currentline end

local function row(tab, name)
  for _, r in ipairs(tab:rows_list()) do if r.name == name then return r end end
  return nil
end

describe("ember.profiler", function()
  it("counts each op by name, operators and methods alike", function()
    local a, b = ember.ones(4, 4), ember.ones(4, 4)
    local prof = profiler.profile(function()
      local c = a + b
      c = c + a
      c = c:add(b)
      local d = a:matmul(b)
      d = ember.matmul(d, b)
      return d:sum()
    end)
    local avg = prof:key_averages()
    assert.are.equal(3, row(avg, "add").calls)
    assert.are.equal(2, row(avg, "matmul").calls)
    assert.are.equal(1, row(avg, "sum").calls)
    assert.is_nil(row(avg, "pairs"))
  end)

  it("returns fn's results after the profile", function()
    local prof, x, y = profiler.profile(function(p, q) return p + q, "k" end, 2, 3)
    assert.are.equal("ember.profiler.Profile", getmetatable(prof).__name)
    assert.are.equal(5, x)
    assert.are.equal("k", y)
  end)

  it("charges ops to the first line outside ember's library", function()
    local model = ember.nn.Linear(3, 2)
    local x = ember.ones(5, 3)
    local at
    local prof = profiler.profile(function()
      local y = model(x); at = line()
      return y
    end)
    local lines = prof:lines()
    local mine = row(lines, debug.getinfo(1, "S").short_src .. ":" .. at)
    assert.is_not_nil(mine, lines:table())
    local total = 0
    for _, r in ipairs(lines:rows_list()) do total = total + r.calls end
    assert.are.equal(total, mine.calls)     -- nn.Linear's own calls count at that line
  end)

  it("keeps self time = total time less the ops inside, and the rows add up to the wall time", function()
    local a = ember.randn(64, 64)
    local prof = profiler.profile(function()
      profiler.record_function("outer", function()
        for _ = 1, 3 do a = a:matmul(a) / 64 end
      end)
    end)
    local ev = prof:events()
    local outer
    local inside = 0
    for _, e in ipairs(ev) do
      if e.name == "outer" then outer = e end
    end
    for _, e in ipairs(ev) do
      if e ~= outer and e.t0 >= outer.t0 and e.t1 <= outer.t1 then inside = inside + e.self end
    end
    assert.is_true(math.abs(outer.dur - (outer.self + inside)) < 1e-9)
    local sum = 0
    for _, e in ipairs(ev) do sum = sum + e.self end
    local avg = prof:key_averages()
    assert.is_true(sum <= prof:wall_time() + 1e-9)
    assert.is_true(avg.lua_time >= 0)
    assert.is_true(math.abs(sum + avg.lua_time - prof:wall_time()) < 1e-9)
    assert.are.equal(3, row(avg, "matmul").calls)
    assert.are.equal(1, row(avg, "outer").calls)
  end)

  it("splits a backward pass into its nodes", function()
    local x = ember.ones(3):requires_grad_()
    local prof = profiler.profile(function()
      local y = (x * 2):exp():sum()
      y:backward()
    end)
    local avg = prof:key_averages()
    for _, n in ipairs({"MulBackward", "ExpBackward", "SumBackward", "backward"}) do
      assert.is_not_nil(row(avg, n), n .. "\n" .. avg:table())
      assert.are.equal(1, row(avg, n).calls)
    end
    local bw = row(avg, "backward")
    assert.is_true(bw.total >= row(avg, "MulBackward").total)
  end)

  it("records shapes and memory when asked", function()
    local a, b = ember.ones(2, 3), ember.ones(3, 4)
    local prof = profiler.profile({record_shapes = true, profile_memory = true}, function()
      local c = a:matmul(b)
      local z = ember.zeros(1000)
      return c, z
    end)
    local avg = prof:key_averages({group_by_input_shape = true})
    assert.are.equal("[[2, 3], [3, 4]]", row(avg, "matmul").shapes)
    local z = row(prof:key_averages(), "zeros")
    assert.is_true(z.mem >= 4000, tostring(z.mem))
    assert.matches("Input Shapes", avg:table(), 1, true)
    assert.matches("CPU Mem", avg:table(), 1, true)
  end)

  it("counts the ops of coroutines started while profiling", function()
    local a = ember.ones(2)
    local prof = profiler.profile(function()
      local co = coroutine.wrap(function() coroutine.yield(a + a); return a * a end)
      co(); co()
    end)
    local avg = prof:key_averages()
    assert.are.equal(1, row(avg, "add").calls)
    assert.are.equal(1, row(avg, "mul").calls)
  end)

  it("writes a Chrome trace", function()
    local a = ember.ones(2)
    local prof = profiler.profile(function() return a + a end)
    local path = os.tmpname()
    prof:export_chrome_trace(path)
    local f = assert(io.open(path))
    local text = f:read("a")
    f:close()
    os.remove(path)
    local doc = require("ember.serialize")._json_decode(text)
    local n = 0
    for _, e in ipairs(doc.traceEvents) do
      if e.ph == "X" then
        n = n + 1
        assert.are.equal("add", e.name)
        assert.is_true(e.dur >= 0)
        assert.matches("profiler_spec.lua:%d+", e.args["Lua line"])
      end
    end
    assert.are.equal(1, n)
  end)

  it("leaves the debug hook as it was, also after an error in fn", function()
    local function h() end
    debug.sethook(h, "c")
    local ok, err = pcall(profiler.profile, function() error("boom") end)
    local got = debug.gethook()
    debug.sethook()
    assert.is_false(ok)
    assert.matches("boom", err)
    assert.are.equal(h, got)
    -- and another profile can start
    local prof = profiler.profile(function() return ember.ones(1) end)
    assert.are.equal(1, row(prof:key_averages(), "ones").calls)
  end)

  it("starts and stops as an object, and as a <close> guard", function()
    local prof = profiler.profile({})
    prof:start()
    local _ = ember.ones(2) + 1
    prof:stop()
    assert.are.equal(1, row(prof:key_averages(), "ones").calls)
    local p2
    do
      local p <close> = profiler.profile():start()
      p2 = p
      local _ = ember.zeros(2)
    end
    assert.are.equal(1, row(p2:key_averages(), "zeros").calls)
    assert.is_nil(debug.gethook())
  end)

  it("names its mistakes", function()
    local ok, err = pcall(profiler.profile, {record_shape = true}, function() end)
    assert.is_false(ok)
    assert.matches("unknown option 'record_shape'", err, 1, true)
    ok, err = pcall(profiler.profile, {activities = {"cpu", "tpu"}}, function() end)
    assert.is_false(ok)
    assert.matches('unknown activity tpu (expected "cpu" or "cuda")', err, 1, true)
    -- the CUDA activity without a device (as PyTorch): nothing to time, no CUDA columns
    if not ember.cuda.is_available() then
      local p = profiler.profile({activities = {"cpu", "cuda"}}, function() return ember.ones(3):sum() end)
      assert.is_nil(p:key_averages():table():find("CUDA", 1, true))
    end
    ok, err = pcall(profiler.profile, {record_shapes = 1}, function() end)
    assert.is_false(ok)
    assert.matches("record_shapes must be a boolean", err, 1, true)
    local prof = profiler.profile(function() end)
    ok, err = pcall(prof.key_averages, prof, {group_by_input_shape = true})
    assert.is_false(ok)
    assert.matches("needs a profile made with record_shapes", err, 1, true)
    ok, err = pcall(function() prof:key_averages():table({sort_by = "speed"}) end)
    assert.is_false(ok)
    assert.matches("cannot sort by 'speed'", err, 1, true)
    ok, err = pcall(prof.export_chrome_trace, prof, 5)
    assert.is_false(ok)
    assert.matches("export_chrome_trace: path must be a string, got number", err, 1, true)
    local outer = profiler.profile():start()
    ok, err = pcall(function() profiler.profile():start() end)
    outer:stop()
    assert.is_false(ok)
    assert.matches("already recording", err, 1, true)
  end)
end)
