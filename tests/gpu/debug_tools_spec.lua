-- debug_tools_spec.lua (GPU) — the debugging tools on the device under test: anomaly
-- mode's NaN check (it reads the device's answer back), ember.memory's tracking of device
-- storages, ember.profiler with synchronize, with CUDA events and as NVTX ranges; and
-- gradients meeting in one buffer there
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

describe("stop_on_nan on " .. DEV .. ": the device's checks read at a synchronisation", function()
  local cuda_it = g.cuda_it(it, pending)
  -- the stop as an error: under the ember executable (the sanitizer runs) the shell's
  -- debugger would take it (registry["ember.debug_stop"])
  local registry, saved = debug.getregistry(), nil
  before_each(function()
    saved = registry["ember.debug_stop"]
    registry["ember.debug_stop"] = nil
  end)
  after_each(function()
    ember.debug.stop_on_nan(false)
    registry["ember.debug_stop"] = saved
  end)
  local SRC = debug.getinfo(1, "S").short_src
  local function line() return debug.getinfo(2, "l").currentline end

  cuda_it("names the op that made the NaN and its line, at the line that waited", function()
    ember.debug.stop_on_nan(true)
    local x = ember.tensor({1.0, -1.0, 4.0}, {device = DEV})
    local y = x:sqrt(); local at = line()
    local z = (y * 2 + 1):exp()          -- carries it: not named
    local ok, err = pcall(function() return z:sum():item() end); local waited = line()
    assert.is_false(ok)
    assert.matches(string.format("%s:%d: sqrt made a NaN or an infinity (result [3]) at %s:%d, found on the device",
                                 SRC, waited, SRC, at), err, 1, true)
    assert.matches("inputs: [3] float32", err, 1, true)
    -- read once: the session goes on, and finite work does not stop
    assert.are.equal(9, (x:abs() + 1):sum():item())   -- 2 + 2 + 5
  end)

  cuda_it("tolist, printing and cuda.synchronize read the checks too; off drops them", function()
    ember.debug.stop_on_nan(true)
    local x = ember.tensor({0.0}, {device = DEV})
    local _ = x:log(); local at = line()
    local ok, err = pcall(function() return (x + 1):tolist() end)
    assert.is_false(ok)
    assert.matches("log made a NaN or an infinity (result [1]) at " .. SRC .. ":" .. at, err, 1, true)
    local _ = x:reciprocal()
    ok, err = pcall(ember.cuda.synchronize)
    assert.is_false(ok)
    assert.matches("reciprocal made a NaN or an infinity", err, 1, true)
    local _ = x:log()
    ok, err = pcall(tostring, x + 1)
    assert.is_false(ok)
    assert.matches("log made", err, 1, true)
    local _ = x:log()
    ember.debug.stop_on_nan(false)
    ember.debug.stop_on_nan(true)
    assert.are.same({1}, (x + 1):tolist())
  end)

  cuda_it("reads what is queued after many ops without a synchronisation", function()
    ember.debug.stop_on_nan(true)
    local x = ember.tensor({-1.0}, {device = DEV})
    local ok, err = pcall(function()
      local y = x:sqrt(); local _ = y   -- the first
      for _ = 1, 600 do y = x * 2 end   -- no synchronisation: the queue is read when full
      return "not stopped"
    end)
    assert.is_false(ok, err)
    assert.matches("sqrt made a NaN or an infinity", err, 1, true)
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
    assert.are.equal(g.on_cpu and "cpu" or "cuda", found.device)
    assert.are.equal(1000000, found.bytes)
    assert.is_true((g.on_cpu and s.tracked.cpu or s.tracked.cuda) >= 1000000)
    -- the timeline by line counts the device's bytes too
    local by = ember.memory.history_by_line()
    assert.is_true(by[1].site:match(":" .. at .. "$") ~= nil, by[1].site)
    assert.are.equal(1000000, by[1].peak)
    local h = ember.memory.history()
    local held = g.on_cpu and h.cpu or h.cuda
    assert.are.equal(1000000, held[#held] - held[1] + h.delta[1])
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

  local cuda_it = g.cuda_it(it, pending)

  cuda_it("times each op on the device with CUDA events (activities cuda)", function()
    local a = ember.randn(256, 256, {device = DEV})
    local prof = ember.profiler.profile({activities = {"cpu", "cuda"}}, function()
      local c = a
      for _ = 1, 4 do c = c:matmul(a) / 16 end
      return c:sum():item()
    end)
    local rows = {}
    for _, r in ipairs(prof:key_averages():rows_list()) do rows[r.name] = r end
    assert.are.equal(4, rows.matmul.calls)
    assert.is_true(rows.matmul.cuda > 0, "matmul's device time")
    -- every op's device span lies within the profile: none longer than the wall time
    local total = 0
    for _, e in ipairs(prof:events()) do
      if e.cuda then
        assert.is_true(e.cuda >= 0 and e.cuda_t0 >= 0, e.name)
        total = total + e.cuda
      end
    end
    assert.is_true(total > 0 and total <= prof:wall_time() + 1e-3, string.format("%g s of %g s", total, prof:wall_time()))
    local text = prof:key_averages():table({sort_by = "cuda_time_total"})
    assert.matches("CUDA total", text, 1, true)
    assert.matches("CUDA time total", text, 1, true)
    local path = os.tmpname()
    prof:export_chrome_trace(path)
    local f = assert(io.open(path))
    local trace = f:read("a")
    f:close()
    os.remove(path)
    assert.matches('"name": "cuda stream"', trace, 1, true)
    assert.matches('"name": "matmul", "cat": "cuda"', trace, 1, true)
  end)

  cuda_it("marks each op as an NVTX range for Nsight Systems", function()
    -- tests/gpu/nvtx_tool.c stands in for nsys: it injects itself as nsys does and logs
    -- the ranges; compiled here, in a process of its own (NVTX reads its variable once)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local src = (debug.getinfo(1, "S").source:match("^@(.*/)") or "tests/gpu/") .. "nvtx_tool.c"
    local cuda_home = os.getenv("CUDA_HOME") or "/usr/local/cuda"
    local built = os.execute(string.format("cc -shared -fPIC -I%s/include %s -o %s/tool.so 2>%s/cc.log",
                                           cuda_home, src, dir, dir))
    if not built then
      os.execute("rm -rf " .. dir)
      pending("no C compiler or NVTX headers to build the stand-in tool")
      return
    end
    local code = "local a = ember.ones(8, 8, {device = '" .. DEV .. "'}); "
                 .. "ember.profiler.profile(function() local b = a:matmul(a); b:sum():item() end)"
    local cmd = string.format("NVTX_INJECTION64_PATH=%s/tool.so NVTX_TOOL_LOG=%s/log %s -e %q 2>&1",
                              dir, dir, os.getenv("EMBER") or "build/ember", code)
    local p = io.popen(cmd)
    local out = p:read("a")
    local ok = p:close()
    local f = io.open(dir .. "/log")
    local log = f and f:read("a") or ""
    if f then f:close() end
    os.execute("rm -rf " .. dir)
    assert.is_true(ok, out)
    assert.matches("attached\n", log, 1, true)
    -- every range closed, and the ops' in order (method lookups, "index", between them)
    local pushes, pops, ops = 0, 0, {}
    for line in log:gmatch("[^\n]+") do
      local name = line:match("^push (.+)$")
      if name then
        pushes = pushes + 1
        if name ~= "index" then ops[#ops + 1] = name end
      elseif line == "pop" then
        pops = pops + 1
      end
    end
    assert.are.equal(pushes, pops)
    assert.are.same({"matmul", "sum", "item"}, ops)
  end)
end)
