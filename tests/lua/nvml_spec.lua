-- nvml_spec.lua — GPU monitoring (ember.cuda.utilization and friends, NVML)
-- without a GPU: the values come from a fake NVML (tests/nvml/fake_nvml.c,
-- built by make test as <build>/testlib/libfake_nvml.so) that child ember
-- processes open through EMBER_NVML_LIBRARY, with the CUDA backend pointed
-- away (EMBER_CUDA_LIB) so that devices are numbered in NVML's order on
-- every machine. The expected values are the fake's constants.
local ember = require "ember"

local root = assert(io.popen("pwd")):read("l")
local build = os.getenv("EMBER_BUILD") or "build"
local exe = os.getenv("EMBER") or (root .. "/build/ember")
local build_dir = build:sub(1, 1) == "/" and build or root .. "/" .. build   -- tests/run.sh: absolute
local fake = build_dir .. "/testlib/libfake_nvml.so"
local no_cuda = "EMBER_CUDA_LIB=/nonexistent/libember_cuda.so"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

-- Runs Lua code in a child ember with NVML library `lib`; returns its
-- output (stdout and stderr) and whether it exited with status 0.
local function run(code, lib)
  local file = os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(code)
  f:close()
  local p = assert(io.popen(string.format("EMBER_NVML_LIBRARY='%s' %s '%s' '%s' 2>&1", lib, no_cuda, exe, file)))
  local out = p:read("a")
  local ok = p:close()
  os.remove(file)
  return out, ok == true
end

local function with_fake(code)
  assert(exists(fake), "no " .. fake .. " (make test builds it; or make " .. build .. "/testlib/libfake_nvml.so)")
  local out, ok = run(code, fake)
  assert(ok, "the child failed:\n" .. out)
  return out
end

describe("ember.cuda monitoring through NVML (a fake NVML)", function()
  it("utilization per device, given as nil, an index or a device string", function()
    local out = with_fake([[
      local c = ember.cuda
      print(c.utilization(), c.utilization(0), c.utilization(1), c.utilization("cuda"), c.utilization("cuda:1"))
      print(math.type(c.utilization()))
    ]])
    assert.equal("37\t37\t12\t37\t12\ninteger\n", out)
  end)

  it("memory_usage, temperature and power_draw (milliwatts)", function()
    local out = with_fake([[
      local c = ember.cuda
      print(c.memory_usage(0), c.memory_usage(1), c.temperature(), c.temperature(1), c.power_draw(0), c.power_draw(1))
    ]])
    assert.equal("21\t3\t45\t61\t123456\t98765\n", out)
  end)

  it("gpu_status lists every GPU with what it reports", function()
    local out = with_fake([[
      local s = ember.cuda.gpu_status()
      print(s.driver_version, #s)
      for _, g in ipairs(s) do
        print(g.index, g.name, g.uuid, g.pci_bus_id, g.cuda, g.utilization, g.memory_usage, g.memory_used,
              g.memory_total, g.temperature, g.power_draw, g.power_limit)
      end
    ]])
    assert.equal(table.concat({
      "535.999.01\t2",
      "0\tFake GPU A100\tGPU-00000000-1111-2222-3333-444444444444\t0000:17:00.0\tnil\t37\t21\t1073741824\t"
        .. "42949672960\t45\t123456\t400000",
      -- the second fake GPU reports no power limit: the field is absent
      "1\tFake GPU H100\tGPU-55555555-6666-7777-8888-999999999999\t0000:65:00.0\tnil\t12\t3\t3221225472\t"
        .. "85899345920\t61\t98765\tnil",
    }, "\n") .. "\n", out)
  end)

  it("a device NVML does not have: an error naming the function and the device", function()
    local out = with_fake([[
      for _, f in ipairs({"utilization", "memory_usage", "temperature", "power_draw"}) do
        print(select(2, pcall(ember.cuda[f], 2)))
      end
      print(select(2, pcall(ember.cuda.utilization, "cuda:7")))
    ]])
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal(5, #lines, out)
    for i, f in ipairs({"utilization", "memory_usage", "temperature", "power_draw"}) do
      assert.matches("ember%.cuda%." .. f .. ": cuda:2: no such device %(NVML reports 2 GPUs", lines[i])
    end
    assert.matches("ember%.cuda%.utilization: cuda:7: no such device", lines[5])
    assert.matches("numbered as nvidia%-smi does, since ember's CUDA backend has none", lines[5])
  end)

  it("an error points at the caller's line", function()
    local out = with_fake("local ok, e = pcall(function()\n  local u = ember.cuda.temperature(5); return u\nend)\nprint(e)\n")
    assert.matches(":2: ember%.cuda%.temperature: cuda:5: no such device", out)
  end)
end)

describe("ember.cuda monitoring without NVML", function()
  it("each function says NVML is not available and why", function()
    local missing = root .. "/nonexistent/libnvidia-ml.so.1"
    local out, ok = run([[
      for _, f in ipairs({"utilization", "memory_usage", "temperature", "power_draw", "gpu_status"}) do
        print(select(2, pcall(ember.cuda[f])))
      end
    ]], missing)
    assert.is_true(ok, out)
    local n = 0
    for l in out:gmatch("[^\n]+") do
      n = n + 1
      local f = ({"utilization", "memory_usage", "temperature", "power_draw", "gpu_status"})[n]
      local want = "ember.cuda." .. f .. ": NVML is not available (" .. missing .. " not found: "
      assert.equal(want, l:sub(1, #want))
    end
    assert.equal(5, n, out)
  end)

  it("a library that is not NVML: the missing entry point is named", function()
    local out, ok = run("print(select(2, pcall(ember.cuda.utilization)))", "libz.so.1")
    assert.is_true(ok, out)
    assert.equal("ember.cuda.utilization: NVML is not available (libz.so.1 has no nvmlInit_v2)\n", out)
  end)

  it("a failure is kept: the second call gives the same reason", function()
    local out = run("print(select(2, pcall(ember.cuda.power_draw)))\nprint(select(2, pcall(ember.cuda.power_draw)))",
                    "/nonexistent/x.so")
    local a, b = out:match("^([^\n]+)\n([^\n]+)\n$")
    assert.is_truthy(a, out)
    assert.equal(a, b)
  end)
end)

describe("ember.cuda monitoring: arguments", function()
  -- argument errors come before NVML is opened, so these run in this process
  local function err(f, ...)
    local args = table.pack(...)
    local ok, e = pcall(function() local v = ember.cuda[f](table.unpack(args, 1, args.n)); return v end)
    assert.is_false(ok)
    return e
  end

  it("a device of the wrong kind or type", function()
    for _, f in ipairs({"utilization", "memory_usage", "temperature", "power_draw", "mem_get_info"}) do
      assert.matches("ember%.cuda%." .. f .. ": argument 1: expected a CUDA device %(\"cuda\" or \"cuda:N\"%), got 'cpu'",
                     err(f, "cpu"))
      assert.matches("ember%.cuda%." .. f .. ": argument 1: expected a CUDA device %(\"cuda\" or \"cuda:N\"%), got 'gpu:0'",
                     err(f, "gpu:0"))
      assert.matches("ember%.cuda%." .. f .. ": argument 1: expected a CUDA device index or \"cuda:N\", got table",
                     err(f, {}))
      assert.matches("ember%.cuda%." .. f .. ": argument 1: cuda:%-1: no such device", err(f, -1))
      assert.matches("ember%.cuda%." .. f .. ": argument 1: expected an integer", err(f, 1.5))
    end
  end)

  it("the error points at the caller's line", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, e = pcall(function() local v = ember.cuda.utilization("cpu"); return v end)
    assert.is_false(ok)
    assert.matches("nvml_spec%.lua:" .. line .. ": ember%.cuda%.utilization", e)
  end)

  it("mem_get_info without a GPU names itself and the reason", function()
    if ember.cuda.is_available() then return end    -- tests/gpu/nvml_spec.lua checks its values
    local ok, e = pcall(function() local f, t = ember.cuda.mem_get_info(); return f, t end)
    assert.is_false(ok)
    assert.matches("ember%.cuda%.mem_get_info: no CUDA device", e)
  end)
end)

describe("start-up", function()
  it("does not load NVML until asked", function()
    local out = with_fake([[
      local function loaded()
        for l in io.lines("/proc/self/maps") do if l:find("libfake_nvml", 1, true) then return true end end
        return false
      end
      print(loaded())
      ember.cuda.utilization()
      print(loaded())
    ]])
    assert.equal("false\ntrue\n", out)
  end)
end)
